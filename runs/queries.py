"""Reads: what pages and the API fetch, in one place (as codespeed keeps views_data.py apart).

Every function takes the user and returns only what that user may see; pages and API operations
call the same functions, so a filter or a lookup cannot differ between them. Pure analysis is
elsewhere (compare.py, nccl.py, specdecode.py, summary.py): these only assemble its inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, overload

import polars as pl
from django.db.models import F, Prefetch, Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.http import Http404

from runs import columns, display, traces
from runs import series as stored
from runs.compare import RunInput, compare
from runs.models import (
    Annotation,
    CollectiveResult,
    Invitation,
    LogFile,
    Membership,
    Project,
    Run,
    RunEdit,
    Status,
    collective_values,
    visible_runs,
)
from runs.schemas import RunFilters
from runs.summary import person_vs_logs
from runs.sweep import CONFIG_KEYS, SweepRun, sweep
from runs.trend import TrendPoint
from runs.verdict import verdict

MAX_COMPARED = 20  # a comparison stays readable up to here; past it the page says what it left out

# Sort keys of the run list (page and query string) and the column each one orders by.
SORTS = {
    "date": "created_at", "name": "name", "tok_s": "throughput_tok_s", "tpc": "tokens_per_cycle",
    "cycle": "cycle_ms", "verify": "verify_ms", "steps": "steps", "status": "status",
}
# The run page's summary cards and the metric rows each is read from.
CARD_METRICS = {"throughput_tok_s": "throughput_tok_s", "gen_throughput_tok_s": "throughput_tok_s",
                "tokens_per_cycle": "tokens_per_cycle", "cycle_ms": "cycle_ms"}


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


def invitations_for(user) -> QuerySet[Invitation]:
    """The invitations someone may accept: to their username, or to their e-mail address."""
    mine = Q(invitee=user.get_username())
    if user.email:
        mine |= Q(invitee=user.email.strip().lower())
    return Invitation.objects.filter(mine).select_related("project", "invited_by").order_by("created_at", "id")


def project_invitations(project: Project) -> list[Invitation]:
    """A project's pending invitations, as its admins typed them."""
    return list(Invitation.objects.filter(project=project).select_related("project", "invited_by")
                .order_by("created_at", "id"))


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


def run_edits(run: Run, what: str | None = None) -> list[dict]:
    """Changes people made to the run after its upload (tags replaced, roles corrected), oldest
    first; only those of one kind with `what`. `changes` says each in words."""
    edits = run.edits.select_related("edited_by")
    if what:
        edits = edits.filter(what=what)
    return [{"what": e.what, "before": e.before, "after": e.after, "at": e.edited_at,
             "by": e.edited_by.get_username() if e.edited_by else None, "changes": edit_changes(e)}
            for e in edits]


# How a role edit names the figures it moved (the run page's card labels).
EDITED_FIGURES = {"throughput_tok_s": ("throughput", " tok/s"), "tokens_per_cycle": ("tokens/cycle", ""),
                  "cycle_ms": ("cycle", " ms"), "verify_ms": ("verify", " ms"), "windows": ("windows", ""),
                  "nccl_status": ("NCCL", ""), "launches_count": ("serving launches", "")}


def edit_changes(edit: RunEdit) -> list[str]:
    """A recorded edit in words, one phrase a change: `tags a → b`; `bench.log: detected →
    benchmark client`, `throughput 472.8 → — tok/s`, `NCCL drift → unknown`."""
    if edit.what in (RunEdit.What.TAGS, RunEdit.What.TRACE_PHASES):
        label = "tags" if edit.what == RunEdit.What.TAGS else "trace phases"
        return [f"{label} {', '.join(edit.before) or '(none)'} → {', '.join(edit.after) or '(none)'}"]
    before, after = edit.before or {}, edit.after or {}
    phrases = [f"{name}: {before.get('roles', {}).get(name) or 'detected'} → {role or 'detected'}"
               for name, role in (after.get("roles") or {}).items()]
    moved = after.get("figures") or {}
    # In the cards' order (PostgreSQL's jsonb keeps no key order).
    order = list(EDITED_FIGURES)
    for key in sorted(moved, key=lambda k: order.index(k) if k in order else len(order)):
        label, unit = EDITED_FIGURES.get(key, (key, ""))
        new, old = moved[key], (before.get("figures") or {}).get(key)
        if key in display.KINDS:
            phrases.append(f"{label} {display.figure(old, key)} → {display.figure(new, key)}{unit}")
        else:
            phrases.append(f"{label} {old if old not in (None, '') else display.DASH} → "
                           f"{new if new not in (None, '') else display.DASH}")
    return phrases


def activity(user, limit: int = 15) -> list[dict]:
    """The newest events of the user's projects (new runs, failed parses, new notes, tags replaced),
    newest first."""
    runs = visible_runs(user).select_related("project", "created_by").order_by("-created_at")
    events: list[dict[str, Any]] = [
        {"at": r.created_at, "kind": "run", "run": r, "who": r.created_by, "text": r.name}
        for r in runs.only("id", "name", "created_at", "project__name", "created_by__username")[:limit]
    ]
    events += [
        {"at": r.updated_at, "kind": "failed", "run": r, "who": None, "text": (r.error or "")[:200]}
        for r in runs.filter(status=Status.FAILED).defer(*LIST_DEFERRED).order_by("-updated_at")[:limit]
    ]
    notes = (Annotation.objects.filter(run__in=visible_runs(user), deleted_at=None)
             .select_related("run", "run__project", "author").defer(*(f"run__{f}" for f in LIST_DEFERRED))
             .order_by("-created_at")[:limit])
    events += [{"at": a.created_at, "kind": "note", "run": a.run, "who": a.author, "annotation": a,
                "text": a.body[:200]} for a in notes]
    edits = (RunEdit.objects.filter(run__in=visible_runs(user)).select_related("run", "run__project", "edited_by")
             .defer(*(f"run__{f}" for f in LIST_DEFERRED)).order_by("-edited_at")[:limit])
    events += [{"at": e.edited_at, "kind": e.what, "run": e.run, "who": e.edited_by,
                "text": "; ".join(edit_changes(e))} for e in edits]
    return sorted(events, key=lambda e: e["at"], reverse=True)[:limit]


# What lists never show and never load: the run's whole parse (tens of MB on a large run).
LIST_DEFERRED = ("parsed", "summary_state", "series")


def _list_columns(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Lists load no `parsed`; the one thing they show from it, the DP scope, comes out in SQL."""
    return runs.defer(*LIST_DEFERRED).annotate(
        throughput_scope=KeyTransform("throughput_scope", KeyTransform("summary", "parsed")))


def filtered_runs(user, filters: RunFilters, sort: str = "-date") -> QuerySet[Run]:
    """Runs of the user's projects matching the filters, in the chosen order (page and API)."""
    runs = (filters.filter(visible_runs(user)).select_related("project", "created_by")
            .prefetch_related("tags").defer(*LIST_DEFERRED))
    field = SORTS.get(sort.lstrip("-"), "created_at")
    expression = F(field).desc(nulls_last=True) if sort.startswith("-") else F(field).asc(nulls_last=True)
    return runs.order_by(expression, "-id")


class RunPages:
    """Filtered runs a page at a time, as Django's Paginator and the API's pagination read them:
    count() over every match, and a slice in two queries: the page's ids in order (a sort of
    narrow rows, whatever the page's depth), then the columns of those runs only, with the DP
    scope taken out of their `parsed` (taken in the sort, it would read the stored parse of every
    run before the page)."""

    def __init__(self, runs: QuerySet[Run]) -> None:
        self.runs = runs

    def count(self) -> int:
        return self.runs.count()

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[Run]:
        return iter(_list_columns(self.runs))

    @overload
    def __getitem__(self, index: int) -> Run: ...

    @overload
    def __getitem__(self, index: slice) -> list[Run]: ...

    def __getitem__(self, index: int | slice) -> Run | list[Run]:
        if isinstance(index, int):
            return self[index:index + 1][0]
        ids = list(self.runs.values_list("id", flat=True)[index])
        return list(_list_columns(self.runs.filter(id__in=ids))) if ids else []


def run_pages(user, filters: RunFilters, sort: str = "-date") -> RunPages:
    return RunPages(filtered_runs(user, filters, sort))


def engines(user) -> list[str]:
    """Engines of the user's runs, for the list's filter (distinct in SQL: one row each, not one a run)."""
    return sorted(visible_runs(user).exclude(engine="").order_by().values_list("engine", flat=True).distinct())


def run_statuses(user, ids: list[int]) -> list[Run]:
    """The runs named by id that the user may see, with their log files' statuses (live polling)."""
    return list(_list_columns(visible_runs(user).filter(id__in=ids)).prefetch_related(
        Prefetch("logfiles", queryset=LogFile.objects.only("id", "run_id", "status", "error"))
    ))


def run_logfiles(run: Run) -> list[LogFile]:
    """The run's log files as its page lists them: their columns only, no count over their rows
    (a 100k-window run has millions). Their process tables are in `Run.parsed`."""
    return list(run.logfiles.defer("processes"))


class ChartRow(NamedTuple):
    """One phase sample as the run page's chart draws it (charts.PhaseRow)."""
    logfile_id: int | None
    window: int
    name: str
    ms: float
    line: int | None


def chart_phase_rows(run: Run, zoom: tuple[int, int] | None = None) -> tuple[list[ChartRow], dict]:
    """The rows the run page's phase chart draws: the stored thinned series (bounded whatever the
    run's size), or every row of a zoomed window range (capped). Also the stored series."""
    kept = stored.run_series(run)
    phases = kept["phases"]
    rows = stored.phase_rows_between(run.id, *zoom) if zoom else phases["rows"]
    order = {name: i for i, name in enumerate(phases["names"])}
    # Traces in the order the phases first appear in the run, whatever rows a thinning kept.
    rows = sorted(rows, key=lambda r: order.get(r[2], len(order)))
    return [ChartRow(*r) for r in rows], kept


def collective_rows(run: Run) -> list[dict[str, Any]]:
    # dict(): the stubs type .values() rows as TypedDicts, which are not plain dicts to mypy.
    return list(collective_values(CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line", "id"),
                                  "op", "size_bytes", "busbw_gbs", "in_place"))


def baseline_choices(user, run: Run) -> QuerySet[Run]:
    """Runs of the same project a person may pick as the baseline of the run page's analysis."""
    return (visible_runs(user).filter(status=Status.READY, project=run.project)
            .exclude(pk=run.pk).exclude(throughput_tok_s=None).only("id", "name")[:100])


def chosen_or_suggested_baseline(user, run: Run, chosen: int | None) -> tuple[Run | None, str]:
    """The baseline a person picked, else the suggested one: (run, "") or (None, why there is none)."""
    if chosen is not None:
        picked = visible_runs(user).filter(pk=chosen).defer(*LIST_DEFERRED).first()
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
        .defer(*LIST_DEFERRED).exclude(pk=run.pk).exclude(throughput_tok_s=None)
        .order_by("-created_at", "-id")[:BASELINE_CANDIDATES]
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


def first_lines(run: Run, kept: dict | None = None,
                logfiles: list[LogFile] | None = None) -> dict[str, Mapping[str, Any]]:
    """For each phase name and metric, the first log line it was read from (provenance links),
    from the run's stored series (`kept`, read if not given) and its log files' settings
    (`logfiles`, read if not given): no row is read."""
    kept = kept if kept is not None else stored.run_series(run)
    out: dict[str, Mapping[str, Any]] = {}
    for name, (logfile_id, line) in kept["phases"]["first"].items():
        out[f"phase:{name}"] = {"name": name, "logfile_id": logfile_id, "line": line}
    # The first window of each summary figure, from the source the summary believes first.
    for key in set(CARD_METRICS.values()):
        figure = kept["figures"].get(key)
        if figure and figure["points"]:
            _, _, line, logfile_id, _ = figure["points"][0]
            out[f"metric:{key}"] = {"source": figure["source"], "logfile_id": logfile_id, "line": line}
    for lf in logfiles if logfiles is not None else run.logfiles.all():
        for key, s in (lf.settings or {}).items():
            out.setdefault(f"setting:{key}", {"logfile_id": lf.id, "line": s["line"]})
    return out


FIGURE_LINES_SHOWN = 200  # lines listed in the source panel for one figure (the middle ones always among them)


def figure_windows(run: Run, key: str, limit: int = FIGURE_LINES_SHOWN) -> dict | None:
    """The windows behind one of the run page's median figures (`phase:Target verify`,
    `metric:throughput_tok_s`), in every log file behind it, as the summary takes them (files in
    order, windows in order): the first `limit` windows' (log file, window, value, line), their
    total, the card's figure, and the window or windows in the middle of a stable sort by value
    (ties by file, window, then order in the file): one for an odd count, the two whose mean is
    the median for an even one. None for an unknown key or no rows. Reads only that figure's blocks."""
    kind, _, name = key.partition(":")
    parsed = run.parsed or {}
    source = None
    if kind == columns.PHASE:
        names = [name]
        card = next((p.get("ms") for p in parsed.get("phases", []) if p.get("name") == name), None)
    elif kind == columns.METRIC and name in set(CARD_METRICS.values()):
        names = [m for m, figure in CARD_METRICS.items() if figure == name]
        source = stored.best_source(run.id, names)  # the source the summary believes first
        if source is None:
            return None
        # Within the source, the first of the names it reports, as summary.series takes it.
        reported = columns.names(run.id, kind, names, source)
        names = [next(n for n in names if n in reported)]
        card = (parsed.get("summary") or {}).get(name)
    else:
        return None
    rows = columns.frame(run.id, kind, [columns.VALUE[kind], "line"], names=names, source=source).rename(
        {columns.VALUE[kind]: "value"})
    total = rows.height
    if not total:
        return None
    ordered = rows.sort(["value", "logfile", "window", "i"], maintain_order=True)
    middle = [ordered.row(at, named=True) for at in sorted({(total - 1) // 2, total // 2})]
    median = sum(m["value"] for m in middle) / len(middle)
    files = dict(LogFile.objects.filter(id__in=rows.get_column("logfile").unique().to_list())
                 .values_list("id", "original_name"))

    def window(row: dict) -> dict:
        return {"logfile": row["logfile"], "window": row["window"], "value": row["value"], "line": row["line"]}

    shown = [window(r) for r in rows.head(limit).iter_rows(named=True)]
    for m in middle:
        if (m["logfile"], m["line"]) not in {(w["logfile"], w["line"]) for w in shown}:
            shown.append(window(m))
    return {"figure": card if card is not None else round(median, 4), "median_value": round(median, 4),
            "total": total, "middle": [window(m) for m in middle], "windows": shown,
            "files": [{"logfile": lf, "name": files.get(lf, "")} for lf in rows.get_column("logfile").unique(
                maintain_order=True).to_list()]}


def comparison_inputs(user, ids: list[int], points: bool = True,
                      zoom: tuple[int, int] | None = None) -> list[RunInput]:
    """Everything the comparison needs for the runs the user may see, in five queries: the
    per-window series are the stored thinned ones (`points`; only their noise without), or
    every row of positions `zoom` (from, to; capped) of each run."""
    runs = {r.id: r for r in visible_runs(user).filter(id__in=ids).defer("series")}
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
            # Result blocks and draft-type counters are tables of their own, not one configuration value.
            if not key.startswith(("serving.", "serving_blocks", "nccl_tests.", "llamacpp.draft_types")):
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
    _stored_series(inputs, points, zoom)
    for row in collective_values(CollectiveResult.objects.filter(run_id__in=ids).order_by("logfile_id", "line", "id"),
                                 "run_id", "op", "size_bytes", "busbw_gbs", "algbw_gbs", "time_us", "in_place", "line"):
        inputs[row.pop("run_id")].collectives.append(row)
    return [inputs[i] for i in ids]


COMPARED_SERIES = ("throughput_tok_s", "tokens_per_cycle", "verify_ms")  # charts.SERIES


def _stored_series(inputs: dict[int, RunInput], points: bool, zoom: tuple[int, int] | None) -> None:
    """Each run's compared series and their noise from `Run.series` (one query reading only those
    keys; a run parsed before series were kept has them computed from its rows)."""
    # One JSON path a row: PostgreSQL unpacks the stored document once for each path it reads.
    field = "series__figures" if points else "series__spread"
    for run_id, version, figures in Run.objects.filter(id__in=list(inputs)).values_list("id", "series__v", field):
        if version != stored.SERIES_VERSION:
            kept = stored.compute_series(run_id)
            figures = kept["figures"] if points else kept["spread"]
        run = inputs[run_id]
        for key in COMPARED_SERIES:
            figure = (figures or {}).get(key)
            if not points:
                if figure is not None:
                    run.spreads[key] = figure
            elif figure:
                if figure["spread"] is not None:
                    run.spreads[key] = figure["spread"]
                shown: list = (stored.figure_rows_between(run_id, key, figure["source"], *zoom) if zoom
                               else figure["points"])
                run.series[key] = shown


def _sourced(value: object, where: list | None, fallback: str) -> dict:
    """A config cell with the log line it came from ([logfile, line, source] from runs.nccl)."""
    if where and where[0] and where[1]:
        return {"value": value, "source": where[2], "logfile": where[0], "line": where[1]}
    return {"value": value, "source": (where[2] if where else fallback)}


def comparison_for(user, ids: list[int], baseline: int | None, points: bool = True,
                   zoom: tuple[int, int] | None = None) -> tuple[list[RunInput], dict]:
    """The comparison of runs the user may see; Http404 naming any id they may not (A2).
    `points`: with the per-window series the page charts (the API's result has none)."""
    inputs = comparison_inputs(user, ids, points, zoom)
    missing = sorted(set(ids) - {r.id for r in inputs})
    if missing:
        raise Http404(f"no run {', '.join(map(str, missing))} in your projects")
    result = compare(inputs, baseline)
    trace = traces.compare_runs([(r.id, r.name, r.parsed.get("trace")) for r in in_result_order(inputs, result)],
                                result["baseline"] or 0)
    if trace is not None:
        result["trace"] = trace
        result["headline"] = result["headline"] + trace["headline"]
    return inputs, result


def trace_files(run: Run) -> list[dict]:
    """The run's ready profiler-trace files as runs/traces.py takes them: {logfile, name, trace}."""
    return [{"logfile": lf_id, "name": name, "trace": trace} for lf_id, name, trace in run.logfiles.filter(
        kind=LogFile.Kind.TRACE, status=Status.READY, trace__isnull=False).order_by("id")
        .values_list("id", "original_name", "trace")]


def trace_of(run: Run) -> dict | None:
    """The run's profiler-trace breakdown (runs/traces.py) with the run's own range-to-phase
    mapping; None when it has no parsed trace."""
    files = trace_files(run)
    return traces.run_trace(files, run.trace_phases) if files else None


def in_result_order(inputs: list[RunInput], result: dict) -> list[RunInput]:
    """The inputs in the comparison's order (the baseline first)."""
    by_id = {r.id: r for r in inputs}
    return [by_id[r["id"]] for r in result["runs"]]


# Sweep, CI verdict and trend.

MAX_SWEEP_RUNS = 200


def sweep_runs(user, ids: list[int] | None = None, project: str = "", tag: str = "") -> QuerySet[Run]:
    """The ready runs of a sweep: the ids given, or a project's runs (with a tag, if given)."""
    runs = visible_runs(user).filter(status=Status.READY).defer("series")
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
    same_project = Run.objects.filter(project_id=run.project_id).exclude(pk=run.pk).defer("series")
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
            result.update(verdict="pending", headline=f"{run.name}: no verdict yet: {reason}.",
                          title="runlens: pending")
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

    runs = (visible_runs(user).filter(status=Status.READY, project__name=project).defer("series")
            .exclude(**{metric: None}))
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
        kind, names, name_has = columns.METRIC, TREND_SERIES[metric], ""
    elif metric == "verify_ms":
        kind, names, name_has = columns.PHASE, None, "verify"
    if metric in TREND_SERIES or metric == "verify_ms":
        # Every run's rows of the figure in one query (a few blocks a run).
        for run_id, rows in columns.frames_by_run(ids, kind, [columns.VALUE[kind]], names=names,
                                                  name_has=name_has).items():
            if kind == columns.METRIC:  # the source the summary believes first, in the run's order
                rows = rows.filter(pl.col("source") == stored.first_best(rows.get_column("source")))
            windows[run_id] = rows.get_column(columns.VALUE[kind]).to_list()
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


def sweep_for(user, ids: list[int], project: str = "", tag: str = "") -> tuple[dict, dict]:
    """The sweep of these runs (`ids`), or of a project's ready runs (with `tag`), and its selection."""
    ids = ids[:MAX_SWEEP_RUNS]
    runs = list(sweep_runs(user, ids, project, tag))
    if ids:
        missing = sorted(set(ids) - {r.id for r in runs})
        if missing:
            raise Http404(f"no ready run {', '.join(map(str, missing))} in your projects")
    selection = {"runs": ",".join(str(r.id) for r in runs), "project": "" if ids else project,
                 "tag": "" if ids else tag}
    return sweep(sweep_inputs(runs)), selection
