"""Reads: what pages and the API fetch, in one place (as codespeed keeps views_data.py apart).

Every function takes the user and returns only what that user may see; pages and API operations
call the same functions, so a filter or a lookup cannot differ between them. Pure analysis is
elsewhere (compare.py, nccl.py, specdecode.py, summary.py): these only assemble its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from django.db.models import Count, F, Prefetch, QuerySet
from django.http import Http404, QueryDict
from pydantic import ValidationError

from runs.compare import RunInput, compare
from runs.models import (
    Annotation,
    CollectiveResult,
    LogFile,
    Membership,
    MetricSample,
    PhaseSample,
    Project,
    Run,
    Status,
    visible_runs,
)
from runs.schemas import RunFilters
from runs.summary import person_vs_logs, source_rank
from runs.sweep import CONFIG_KEYS, SweepRun, sweep
from runs.trend import TrendPoint
from runs.verdict import verdict

MAX_COMPARED = 20  # a comparison stays readable up to here; past it the page says what it left out

# Sort keys of the run list (page and query string) and the column each one orders by.
SORTS = {
    "date": "created_at", "name": "name", "tok_s": "throughput_tok_s", "tpc": "tokens_per_cycle",
    "cycle": "cycle_ms", "verify": "verify_ms", "steps": "steps", "status": "status",
}
# Metric rows that feed each per-window series (SGLang's decode line calls throughput "gen throughput").
SERIES_METRICS = {"throughput_tok_s": "throughput_tok_s", "gen_throughput_tok_s": "throughput_tok_s",
                  "tokens_per_cycle": "tokens_per_cycle"}
# The run page's summary cards and the metric rows each is read from.
CARD_METRICS = {"throughput_tok_s": "throughput_tok_s", "gen_throughput_tok_s": "throughput_tok_s",
                "tokens_per_cycle": "tokens_per_cycle", "cycle_ms": "cycle_ms"}


def is_int(text: str | None) -> TypeGuard[str]:
    """ASCII digits only, and a size the database takes (`"²".isdigit()` is True; int() refuses it)."""
    return text is not None and text.isascii() and text.isdecimal() and len(text) <= 18


def positive_float(raw: str | None) -> float | None:
    """A positive number from a query string, or None (a form field left empty or mistyped)."""
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < 1e7 else None


def visible_run(user, pk: int) -> Run:
    """The run if it is in one of the user's projects; Http404 otherwise (RELIABILITY A2)."""
    run = (
        visible_runs(user).filter(pk=pk)
        .select_related("project", "created_by").prefetch_related("tags").first()
    )
    if run is None:
        raise Http404(f"no run {pk} in your projects")
    return run


def my_memberships(user) -> list[Membership]:
    """The user's projects with their role in each, by project name."""
    return list(Membership.objects.filter(user=user).select_related("project").order_by("project__name"))


def visible_project(user, pk: int) -> Project:
    """A project the user is in (any, for superusers); Http404 otherwise, as for runs (A2)."""
    projects = Project.objects.all()
    if not user.is_superuser:
        projects = projects.filter(membership__user=user)
    project = projects.filter(pk=pk).first()
    if project is None:
        raise Http404(f"no project {pk} among yours")
    return project


def project_members(project: Project) -> list[Membership]:
    return list(Membership.objects.filter(project=project).select_related("user").order_by("user__username"))


def visible_annotation(user, pk: int) -> Annotation:
    """An annotation on a run the user may see; Http404 otherwise."""
    annotation = (Annotation.objects.filter(pk=pk, run__in=visible_runs(user))
                  .select_related("run", "run__project", "author").first())
    if annotation is None:
        raise Http404(f"no annotation {pk} on your runs")
    return annotation


def run_annotations(run: Run) -> list[Annotation]:
    """The run's annotations, oldest first, without the deleted ones nobody replied to."""
    return list(run.annotations.select_related("author").prefetch_related("edits"))


def anchored_notes(run_ids: list[int]) -> list[Annotation]:
    """Live notes anchored to windows on these runs (the caller has checked it may see them)."""
    return list(Annotation.objects.filter(run_id__in=run_ids, window_from__isnull=False, deleted_at=None)
                .select_related("author", "run").order_by("created_at", "id"))


def activity(user, limit: int = 15) -> list[dict]:
    """The newest events of the user's projects (new runs, failed parses, new notes), newest first."""
    runs = visible_runs(user).select_related("project", "created_by").order_by("-created_at")
    events: list[dict[str, Any]] = [
        {"at": r.created_at, "kind": "run", "run": r, "who": r.created_by, "text": r.name}
        for r in runs.only("id", "name", "created_at", "project__name", "created_by__username")[:limit]
    ]
    events += [
        {"at": r.updated_at, "kind": "failed", "run": r, "who": None, "text": (r.error or "")[:200]}
        for r in runs.filter(status=Status.FAILED).order_by("-updated_at")[:limit]
    ]
    notes = (Annotation.objects.filter(run__in=visible_runs(user), deleted_at=None)
             .select_related("run", "run__project", "author").order_by("-created_at")[:limit])
    events += [{"at": a.created_at, "kind": "note", "run": a.run, "who": a.author, "annotation": a,
                "text": a.body[:200]} for a in notes]
    return sorted(events, key=lambda e: e["at"], reverse=True)[:limit]


def filters_from_query(query: QueryDict) -> RunFilters:
    """The run list page's filters from its query string, with the API's schema. A page is
    lenient where the API is strict: a field that does not validate is left out, not an error."""
    data: dict[str, Any] = {k: v for k, v in query.items() if k in RunFilters.model_fields and v != ""}
    while True:
        try:
            return RunFilters(**data)
        except ValidationError as e:
            bad = {str(err["loc"][0]) for err in e.errors() if err.get("loc")}
            if not bad & set(data):
                return RunFilters()
            for key in bad:
                data.pop(key, None)


def filtered_runs(user, filters: RunFilters, sort: str = "-date") -> QuerySet[Run]:
    """Runs of the user's projects matching the filters, in the chosen order (page and API)."""
    runs = filters.filter(visible_runs(user)).select_related("project", "created_by").prefetch_related("tags")
    field = SORTS.get(sort.lstrip("-"), "created_at")
    expression = F(field).desc(nulls_last=True) if sort.startswith("-") else F(field).asc(nulls_last=True)
    return runs.order_by(expression, "-id")


def engines(user) -> list[str]:
    return sorted(set(visible_runs(user).exclude(engine="").values_list("engine", flat=True)))


def run_statuses(user, ids: list[int]) -> list[Run]:
    """The runs named by id that the user may see, with their log files' statuses (live polling)."""
    return list(visible_runs(user).filter(id__in=ids).prefetch_related(
        Prefetch("logfiles", queryset=LogFile.objects.only("id", "run_id", "status", "error"))
    ))


def logfiles_with_counts(run: Run) -> list[LogFile]:
    return list(run.logfiles.annotate(phase_rows=Count("phasesample")))


def phase_rows(run: Run) -> list[PhaseSample]:
    return list(PhaseSample.objects.filter(run=run).order_by("logfile_id", "window", "id")
                .only("name", "window", "ms", "line", "logfile_id"))


def collective_rows(run: Run) -> list[dict[str, Any]]:
    # dict(): the stubs type .values() rows as TypedDicts, which are not plain dicts to mypy.
    return [dict(row) for row in CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line").values(
        "op", "size_bytes", "busbw_gbs", "in_place")]


def baseline_choices(user, run: Run) -> QuerySet[Run]:
    """Runs of the same project a person may pick as the baseline of the run page's analysis."""
    return (visible_runs(user).filter(status=Status.READY, project=run.project)
            .exclude(pk=run.pk).exclude(throughput_tok_s=None).only("id", "name")[:100])


def chosen_or_suggested_baseline(user, run: Run, chosen: str | None) -> tuple[Run | None, str]:
    """The baseline a person picked, else the suggested one: (run, "") or (None, why there is none)."""
    if is_int(chosen):
        picked = visible_runs(user).filter(pk=int(chosen)).first()
        return picked, "" if picked else f"run {chosen} is not in your projects"
    return baseline_suggestion(user, run)


def suggested_baseline(user, run: Run) -> Run | None:
    return baseline_suggestion(user, run)[0]


BASELINE_CANDIDATES = 50  # newest no-speculation runs looked at for a comparable one
BASELINE_KEY_LABELS = {"model": "model", "tp_size": "TP", "gpu": "GPU", "engine": "engine"}


def baseline_suggestion(user, run: Run) -> tuple[Run | None, str]:
    """The newest ready run without speculation in the same project that is comparable: the same
    model, TP size, GPU and engine as the logs say them (unknown only matches unknown: a baseline
    on other hardware would make the break-even arithmetic meaningless). (run, "") or (None, why)."""
    if not run.tokens_per_cycle:
        return None, ""
    candidates = list(
        visible_runs(user).filter(project=run.project, status=Status.READY, spec_algorithm="", steps=None)
        .exclude(pk=run.pk).exclude(throughput_tok_s=None).order_by("-created_at", "-id")[:BASELINE_CANDIDATES]
    )
    wanted = run_configs([run])[run.pk]
    if not candidates:
        return None, f"no run without speculation in project {run.project.name} yet"
    configs = run_configs(candidates)
    for c in candidates:
        if not _config_differences(wanted, configs[c.pk]):
            return c, ""
    nearest = min(candidates, key=lambda c: len(_config_differences(wanted, configs[c.pk])))
    differs = "; ".join(f"{BASELINE_KEY_LABELS[k]} {_shown(configs[nearest.pk].get(k))} vs {_shown(wanted.get(k))}"
                        for k in _config_differences(wanted, configs[nearest.pk]))
    return None, (f"no run without speculation in project {run.project.name} with the same "
                  f"{describe_config(wanted)} (the newest closest, {nearest.name}, differs: {differs})")


def describe_config(config: dict) -> str:
    """`model meta-llama/Llama-3.1-8B, TP 8, GPU H200, engine sglang` (unknown ones say so)."""
    return ", ".join(f"{BASELINE_KEY_LABELS[k]} {_shown(config.get(k))}" for k in CONFIG_KEYS)


def _shown(value: object) -> str:
    return "unknown" if value is None or value == "" else str(value)


def _config_differences(wanted: dict, found: dict) -> list[str]:
    def norm(value: object) -> str | None:
        return None if value is None or value == "" else str(value).strip().lower()
    return [k for k in CONFIG_KEYS if norm(wanted.get(k)) != norm(found.get(k))]


def run_configs(runs: list[Run]) -> dict[int, dict]:
    """Model, TP size, GPU and engine of each run as its logs say them (one query): the keys a
    sweep groups by and a suggested baseline must share."""
    config: dict[int, dict] = {r.id: ({"engine": r.engine} if r.engine else {}) for r in runs}
    for lf in LogFile.objects.filter(run_id__in=list(config), status=Status.READY).order_by("id").values(
        "run_id", "settings"
    ):
        settings = lf["settings"] or {}
        for key in CONFIG_KEYS:
            source = "nccl_tests.gpu" if key == "gpu" and "gpu" not in settings else key
            if source in settings:
                config[lf["run_id"]].setdefault(key, settings[source]["value"])
    return config


def first_lines(run: Run) -> dict[str, Mapping[str, Any]]:
    """For each phase name and metric, the first log line it was read from (provenance links)."""
    out: dict[str, Mapping[str, Any]] = {}
    for row in PhaseSample.objects.filter(run=run).order_by("logfile_id", "window").values(
        "name", "logfile_id", "line"
    ):
        out.setdefault(f"phase:{row['name']}", row)
    # The first window of each summary figure, from the source the summary believes first.
    best: dict[str, int] = {}
    for row in MetricSample.objects.filter(run=run, name__in=list(CARD_METRICS)).order_by(
        "logfile_id", "window", "id"
    ).values("name", "source", "logfile_id", "line"):
        key = CARD_METRICS[row["name"]]
        rank = source_rank(row["source"])
        if key not in best or rank < best[key]:
            best[key] = rank
            out[f"metric:{key}"] = row
    for lf in run.logfiles.all():
        for key, s in (lf.settings or {}).items():
            out.setdefault(f"setting:{key}", {"logfile_id": lf.id, "line": s["line"]})
    return out


FIGURE_LINES_SHOWN = 200  # lines listed in the source panel for one figure (the median's always among them)


def figure_windows(run: Run, key: str) -> dict | None:
    """Every window behind one of the run page's median figures (`phase:Target verify`,
    `metric:throughput_tok_s`): the log file, each window's (window, value, line) in order, and
    the line of the window whose value is the median. None for an unknown key or no rows."""
    kind, _, name = key.partition(":")
    rows: list[tuple[int, int, float, int | None]]
    if kind == "phase":
        rows = list(PhaseSample.objects.filter(run=run, name=name).order_by("logfile_id", "window", "id")
                    .values_list("logfile_id", "window", "ms", "line"))
    elif kind == "metric" and name in set(CARD_METRICS.values()):
        names = [m for m, figure in CARD_METRICS.items() if figure == name]
        found = list(MetricSample.objects.filter(run=run, name__in=names).order_by("logfile_id", "window", "id")
                     .values_list("source", "logfile_id", "window", "value", "line"))
        if not found:
            return None
        best = min({f[0] for f in found}, key=source_rank)  # the source the summary believes first
        rows = [(lf, w, v, line) for source, lf, w, v, line in found if source == best]
    else:
        return None
    if not rows:
        return None
    logfile = rows[0][0]
    rows = [r for r in rows if r[0] == logfile]
    ordered = sorted(rows, key=lambda r: r[2])
    median_row = ordered[(len(ordered) - 1) // 2]
    return {"logfile": logfile, "median_line": median_row[3], "median_value": median_row[2],
            "windows": [{"window": w, "value": v, "line": line} for _, w, v, line in rows]}


def parse_ids(raw: str) -> list[int]:
    """Run ids from `3,7,9`, in order, once each (not cut: callers say when there are too many)."""
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if is_int(part) and int(part) not in ids:
            ids.append(int(part))
    return ids


def comparison_inputs(user, ids: list[int]) -> list[RunInput]:
    """Everything the comparison needs for the runs the user may see, in five queries."""
    runs = {r.id: r for r in visible_runs(user).filter(id__in=ids)}
    ids = [i for i in ids if i in runs]
    inputs = {i: RunInput(id=i, name=runs[i].name, parsed=runs[i].parsed or {}, steps=runs[i].steps,
                          person_conflicts=person_vs_logs(runs[i].parsed or {}, runs[i].steps, runs[i].steps_by_person))
              for i in ids}
    for lf in LogFile.objects.filter(run_id__in=ids, status=Status.READY).order_by("id").values(
        "id", "run_id", "original_name", "settings"
    ):
        for key, s in (lf["settings"] or {}).items():
            # The GPU nccl-tests ran on is the run's GPU when no other log names one (as for a sweep).
            key = "gpu" if key == "nccl_tests.gpu" else key
            if not key.startswith(("serving.", "nccl_tests.")):
                inputs[lf["run_id"]].config.setdefault(
                    key, {"value": s["value"], "source": f"{lf['original_name']} line {s['line']}",
                          "logfile": lf["id"], "line": s["line"]})
    for i in ids:
        run, cfg = runs[i], inputs[i].config
        if run.steps is not None and run.steps_by_person:
            cfg["spec.steps"] = {"value": run.steps, "source": run.steps_source}
        nccl = (run.parsed or {}).get("nccl") or {}
        sources = nccl.get("sources") or {}
        for key, value in nccl.get("declared", {}).items():
            cfg[f"{key} (declared)"] = _sourced(value, (sources.get("declared") or {}).get(key), "launcher")
        first_rank: dict = next(iter((sources.get("effective") or {}).values()), {})
        for key, value in nccl.get("effective", {}).items():
            cfg[f"{key} (effective)"] = _sourced(value, first_rank.get(key), "workers")
    picked: dict[tuple[int, str], str] = {}
    rows = MetricSample.objects.filter(run_id__in=ids, name__in=list(SERIES_METRICS)).order_by(
        "logfile_id", "window", "id").values_list("run_id", "name", "source", "value", "line", "logfile_id")
    for run_id, metric, source, value, line, logfile_id in rows:
        name = SERIES_METRICS[metric]
        best = picked.get((run_id, name))
        if best is None or source_rank(source) < source_rank(best):
            picked[(run_id, name)] = source
            inputs[run_id].series[name] = []
        if picked[(run_id, name)] == source:
            series = inputs[run_id].series[name]
            series.append((len(series) + 1, value, line, logfile_id))
    for run_id, ms, line, logfile_id in PhaseSample.objects.filter(
        run_id__in=ids, name__icontains="verify"
    ).order_by("logfile_id", "window", "id").values_list("run_id", "ms", "line", "logfile_id"):
        series = inputs[run_id].series.setdefault("verify_ms", [])
        series.append((len(series) + 1, ms, line, logfile_id))
    for c in CollectiveResult.objects.filter(run_id__in=ids).order_by("logfile_id", "line").values(
        "run_id", "op", "size_bytes", "busbw_gbs", "algbw_gbs", "time_us", "in_place", "line"
    ):
        row: dict[str, Any] = dict(c)  # a plain dict: the TypedDict the stubs give cannot drop a key
        inputs[row.pop("run_id")].collectives.append(row)
    return [inputs[i] for i in ids]


def _sourced(value: object, where: list | None, fallback: str) -> dict:
    """A config cell with the log line it came from ([logfile, line, source] from runs.nccl)."""
    if where and where[0] and where[1]:
        return {"value": value, "source": where[2], "logfile": where[0], "line": where[1]}
    return {"value": value, "source": (where[2] if where else fallback)}


def comparison_for(user, ids: list[int], baseline: int | None) -> tuple[list[RunInput], dict]:
    """The comparison of runs the user may see; Http404 naming any id they may not (A2)."""
    inputs = comparison_inputs(user, ids)
    missing = sorted(set(ids) - {r.id for r in inputs})
    if missing:
        raise Http404(f"no run {', '.join(map(str, missing))} in your projects")
    return inputs, compare(inputs, baseline)


def in_result_order(inputs: list[RunInput], result: dict) -> list[RunInput]:
    """The inputs in the comparison's order (the baseline first)."""
    by_id = {r.id: r for r in inputs}
    return [by_id[r["id"]] for r in result["runs"]]


# Sweep, CI verdict and trend.

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
    config = run_configs(runs)
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

    if run.status != Status.READY:
        reason = "the parse failed" if run.status == Status.FAILED else f"the run is still {run.status}"
        result = verdict(RunInput(id=run.id, name=run.name, parsed={}), None, missing_reason=reason)
        if run.is_busy:
            result.update(verdict="pending", headline=f"{run.name}: no verdict yet: {reason}.")
        return result
    base, how, why = resolve_baseline(run)
    if base is not None and base.status != Status.READY:
        why = f"the baseline {base.name} (#{base.pk}) is {base.status}"
        base = None
    ids = [base.id, run.id] if base else [run.id]
    inputs = {r.id: r for r in comparison_inputs(user, ids)}
    if run.id not in inputs:
        raise Run.DoesNotExist(run.id)
    if base is not None and base.id not in inputs:
        why = f"the baseline #{base.pk} is not visible to you"
        base = None
    return verdict(inputs[run.id], inputs[base.id] if base else None, how, why)


MAX_TREND_RUNS = 300
TREND_SERIES = {"throughput_tok_s": ("throughput_tok_s", "gen_throughput_tok_s"),
                "tokens_per_cycle": ("tokens_per_cycle",)}


def project_names(user) -> list[str]:
    """Names of the projects the user has runs in (the trend page's project picker)."""
    return sorted(set(visible_runs(user).order_by().values_list("project__name", flat=True)))


def _stored_spread(run: Run, metric: str) -> float | None:
    """The noise the parse summary kept for this figure (None for runs parsed before it did)."""
    parsed = run.parsed or {}
    if metric == "verify_ms":
        verify = next((p for p in parsed.get("phases", []) if "verify" in p["name"].lower()), None)
        return (verify or {}).get("spread")
    return ((parsed.get("summary") or {}).get("spread") or {}).get(metric)


def trend_points(user, project: str, metric: str, branch: str = "", tag: str = "",
                 nccl_status: str = "") -> list:
    """The ready runs of a project (filtered) as TrendPoints, in four queries whatever their number."""

    runs = visible_runs(user).filter(status=Status.READY, project__name=project).exclude(**{metric: None})
    if branch:
        runs = runs.filter(meta__ci__branch=branch)
    if tag:
        runs = runs.filter(tags__name=tag)
    if nccl_status in ("ok", "drift", "unknown"):
        runs = runs.filter(nccl_status=nccl_status)
    ready = list(runs.order_by("-created_at", "-id")[:MAX_TREND_RUNS])
    ids = [r.id for r in ready]
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
    for r in ready:
        ci = (r.meta or {}).get("ci") or {}
        points.append(TrendPoint(
            id=r.id, name=r.name, created_at=r.created_at, value=getattr(r, metric), noise=_stored_spread(r, metric),
            windows=tuple(windows.get(r.id, ())), commit=str(ci.get("commit", "")), branch=str(ci.get("branch", "")),
            nccl_status=r.nccl_status or "unknown", annotations=tuple(notes.get(r.id, ())),
        ))
    return points


def sweep_for(user, query) -> tuple[dict, dict]:
    """The sweep a query string asks for (?runs=, ?run= or ?project=&tag=) and its selection."""
    ids = parse_ids(",".join([query.get("runs", ""), *query.getlist("run")]))[:MAX_SWEEP_RUNS]
    project, tag = query.get("project", "").strip(), query.get("tag", "").strip()
    runs = list(sweep_runs(user, ids, project, tag))
    if ids:
        missing = sorted(set(ids) - {r.id for r in runs})
        if missing:
            raise Http404(f"no ready run {', '.join(map(str, missing))} in your projects")
    selection = {"runs": ",".join(str(r.id) for r in runs), "project": "" if ids else project,
                 "tag": "" if ids else tag}
    return sweep(sweep_inputs(runs)), selection
