"""Reads for the sweep and trend pages and their API (moves into runs/queries.py once it lands).

Each function takes the user and what they asked for, and returns the pure modules' inputs in
a fixed number of queries; pages and API call the same functions.
"""

from __future__ import annotations

from django.db.models import QuerySet

from runs.models import LogFile, PhaseSample, Run, Status, visible_runs
from runs.sweep import CONFIG_KEYS, SweepRun

MAX_SWEEP_RUNS = 200


def sweep_runs(user, ids: list[int] | None = None, project: str = "", tag: str = "") -> QuerySet[Run]:
    """The ready runs of a sweep: the ids given, or a project's runs (with a tag, if given)."""
    runs = visible_runs(user).filter(status=Status.READY)
    if ids:
        runs = runs.filter(id__in=ids)
    elif project:
        runs = runs.filter(project__name=project)
        if tag:
            runs = runs.filter(tags__name=tag)
    else:
        return runs.none()
    return runs.order_by("steps", "id")[:MAX_SWEEP_RUNS]


def sweep_inputs(runs: QuerySet[Run] | list[Run]) -> list[SweepRun]:
    """SweepRuns for these runs, with model, TP size and GPU from their logs (two queries)."""
    runs = list(runs)
    config: dict[int, dict] = {r.id: ({"engine": r.engine} if r.engine else {}) for r in runs}
    for lf in LogFile.objects.filter(run_id__in=list(config), status=Status.READY).order_by("id").values(
        "run_id", "settings"
    ):
        settings = lf["settings"] or {}
        for key in CONFIG_KEYS:
            source = "nccl_tests.gpu" if key == "gpu" and "gpu" not in settings else key
            if source in settings:
                config[lf["run_id"]].setdefault(key, settings[source]["value"])
    out = []
    for r in runs:
        nccl = (r.parsed or {}).get("nccl") or {}
        out.append(SweepRun(
            id=r.id, name=r.name, steps=r.steps, throughput_tok_s=r.throughput_tok_s,
            tokens_per_cycle=r.tokens_per_cycle, cycle_ms=r.cycle_ms, verify_ms=r.verify_ms,
            config=config[r.id], nccl_effective=nccl.get("effective") or {}, nccl_status=r.nccl_status or "unknown",
        ))
    return out


def resolve_baseline(run: Run) -> tuple[Run | None, str, str]:
    """The baseline the run asked for in `meta.baseline`: (run or None, how it was chosen, why none).

    A run id (same project), "pinned" (the project's pinned baseline; also when nothing is named),
    or {"branch": B}: the latest ready run of branch B in the project uploaded before this one,
    so a verdict read again later still compares with the same run.
    """
    asked = (run.meta or {}).get("baseline", "pinned")
    same_project = Run.objects.filter(project_id=run.project_id).exclude(pk=run.pk)
    if isinstance(asked, int) and not isinstance(asked, bool):
        found = same_project.filter(pk=asked).first()
        return found, f"run {asked}", "" if found else f"baseline run {asked} is not in project {run.project}"
    if isinstance(asked, dict) and asked.get("branch"):
        branch = str(asked["branch"])
        found = (same_project.filter(status=Status.READY, meta__ci__branch=branch, id__lt=run.id)
                 .order_by("-created_at", "-id").first())
        return found, f"latest of branch {branch}", "" if found else (
            f"no ready run of branch {branch} in project {run.project} before this one")
    pinned = run.project.pinned_baseline
    if pinned is None or pinned.pk == run.pk:
        named = "meta.baseline is \"pinned\"" if asked == "pinned" and "baseline" in (run.meta or {}) else \
            "no meta.baseline given"
        return None, "pinned", f"{named} and project {run.project} has no pinned baseline"
    return pinned, "pinned", ""


def verdict_for(user, run: Run) -> dict:
    """The run's verdict against the baseline it asked for (runs/verdict.py), in a fixed number of queries."""
    from runs.compare import RunInput
    from runs.verdict import verdict
    from runs.views import comparison_inputs

    if run.status != Status.READY:
        reason = "the parse failed" if run.status == Status.FAILED else f"the run is still {run.status}"
        result = verdict(RunInput(id=run.id, name=run.name, parsed={}), None, missing_reason=reason)
        if run.is_busy:
            result.update(verdict="pending", headline=f"{run.name}: no verdict yet: {reason}.")
        return result
    base, how, why = resolve_baseline(run)
    if base is not None and base.status != Status.READY:
        base, why = None, f"the baseline {base.name} (#{base.pk}) is {base.status}"
    ids = [base.id, run.id] if base else [run.id]
    inputs = {r.id: r for r in comparison_inputs(user, ids)}
    if run.id not in inputs:
        raise Run.DoesNotExist(run.id)
    if base is not None and base.id not in inputs:
        base, why = None, f"the baseline #{base.pk} is not visible to you"
    for row in PhaseSample.objects.filter(run_id__in=ids).order_by("logfile_id", "window", "id").values_list(
        "run_id", "name", "ms", "line"
    ):
        series = inputs[row[0]].series.setdefault(f"phase:{row[1]}", [])
        series.append((len(series) + 1, row[2], row[3]))
    return verdict(inputs[run.id], inputs[base.id] if base else None, how, why)


MAX_TREND_RUNS = 300
TREND_SERIES = {"throughput_tok_s": ("throughput_tok_s", "gen_throughput_tok_s"),
                "tokens_per_cycle": ("tokens_per_cycle",)}


def trend_points(user, project: str, metric: str, branch: str = "", tag: str = "",
                 nccl_status: str = "") -> list:
    """The ready runs of a project (filtered) as TrendPoints, in four queries whatever their number."""
    from runs.models import Annotation, MetricSample
    from runs.summary import source_rank
    from runs.trend import TrendPoint

    runs = visible_runs(user).filter(status=Status.READY, project__name=project).exclude(**{metric: None})
    if branch:
        runs = runs.filter(meta__ci__branch=branch)
    if tag:
        runs = runs.filter(tags__name=tag)
    if nccl_status in ("ok", "drift", "unknown"):
        runs = runs.filter(nccl_status=nccl_status)
    runs = list(runs.order_by("-created_at", "-id")[:MAX_TREND_RUNS])
    ids = [r.id for r in runs]
    windows: dict[int, list[float]] = {}
    if metric in TREND_SERIES:
        best: dict[int, str] = {}
        for run_id, source, value in MetricSample.objects.filter(
            run_id__in=ids, name__in=TREND_SERIES[metric]
        ).order_by("logfile_id", "window", "id").values_list("run_id", "source", "value"):
            if run_id not in best or source_rank(source) < source_rank(best[run_id]):
                best[run_id], windows[run_id] = source, []
            if best[run_id] == source:
                windows[run_id].append(value)
    elif metric == "verify_ms":
        for run_id, ms in PhaseSample.objects.filter(run_id__in=ids, name__icontains="verify").values_list(
            "run_id", "ms"
        ):
            windows.setdefault(run_id, []).append(ms)
    notes: dict[int, list] = {}
    for a in Annotation.objects.filter(run_id__in=ids).order_by("created_at", "id").values(
        "run_id", "created_at", "kind", "body"
    ):
        notes.setdefault(a["run_id"], []).append((a["created_at"], a["kind"], a["body"]))
    points = []
    for r in runs:
        ci = (r.meta or {}).get("ci") or {}
        points.append(TrendPoint(
            id=r.id, name=r.name, created_at=r.created_at, value=getattr(r, metric),
            windows=tuple(windows.get(r.id, ())), commit=str(ci.get("commit", "")), branch=str(ci.get("branch", "")),
            nccl_status=r.nccl_status or "unknown", annotations=tuple(notes.get(r.id, ())),
        ))
    return points
