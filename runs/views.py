"""Pages: run list, run detail, live status. Thin: fetch what the user may see, call pure code."""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs import charts, specdecode
from runs.compare import RunInput, compare, downsample, to_csv_rows
from runs.models import (
    CollectiveResult,
    LogFile,
    MetricSample,
    NcclSetting,
    PhaseSample,
    Run,
    Status,
    visible_runs,
)
from runs.summary import source_rank

SORTS = {
    "date": "created_at", "name": "name", "tok_s": "throughput_tok_s", "tpc": "tokens_per_cycle",
    "cycle": "cycle_ms", "verify": "verify_ms", "steps": "steps", "status": "status",
}


def _is_int(text: str | None) -> bool:
    """ASCII digits only, and a size the database takes (`"²".isdigit()` is True; int() refuses it)."""
    return bool(text) and text.isascii() and text.isdecimal() and len(text) <= 18


def _get_run_for_user(request: HttpRequest, pk: int) -> Run:
    run = visible_runs(request.user).filter(pk=pk).select_related("project").first()
    if run is None:
        raise Http404("no such run")
    return run


def filtered_runs(request: HttpRequest) -> tuple[QuerySet[Run], dict]:
    """The run list's queryset from its query string (shared by the page and its live updates)."""
    q = request.GET
    runs = visible_runs(request.user).select_related("project").prefetch_related("tags")
    if q.get("q"):
        runs = runs.filter(name__icontains=q["q"])
    if q.get("status") in Status.values:
        runs = runs.filter(status=q["status"])
    if q.get("tag"):
        runs = runs.filter(tags__name=q["tag"])
    if q.get("engine"):
        runs = runs.filter(engine=q["engine"])
    if _is_int(q.get("steps", "")):
        runs = runs.filter(steps=int(q["steps"]))
    if q.get("nccl_status") in ("ok", "drift", "unknown"):
        runs = runs.filter(nccl_status=q["nccl_status"])
    key, sep, value = q.get("nccl", "").partition("=")
    if sep and key.strip():
        # What the workers really had, not what the launcher said.
        runs = runs.filter(id__in=NcclSetting.objects.filter(
            kind=NcclSetting.Kind.EFFECTIVE, key=key.strip().upper(), value__iexact=value.strip(),
        ).values("run_id"))
    sort = q.get("sort", "-date")
    field = SORTS.get(sort.lstrip("-"), "created_at")
    order = f"-{field}" if sort.startswith("-") else field
    runs = runs.order_by(order if not order.endswith("created_at") else order, "-id")
    filters = {k: q.get(k, "") for k in ("q", "status", "tag", "engine", "steps", "nccl", "nccl_status")}
    return runs, {**filters, "sort": sort}


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    runs, filters = filtered_runs(request)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    busy = [r.id for r in page if r.is_busy]
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("sort", None)
    return render(request, "runs/run_list.html", {
        "page": page, "filters": filters, "busy_ids": busy, "statuses": Status.values,
        "query": query.urlencode(), "nccl_statuses": ["ok", "drift", "unknown"],
        "engines": sorted(set(visible_runs(request.user).exclude(engine="").values_list("engine", flat=True))),
        "sort_columns": [
            ("name", "Run"), ("status", "Status"), ("steps", "Steps"), ("tok_s", "tok/s"),
            ("tpc", "tokens/cycle"), ("cycle", "cycle ms"), ("verify", "verify ms"), ("date", "Date"),
        ],
    })


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk)
    logfiles = list(run.logfiles.annotate(phase_rows=Count("phasesample")))
    phases = list(PhaseSample.objects.filter(run=run).order_by("logfile_id", "window", "id")
                  .only("name", "window", "ms", "line", "logfile_id"))
    chart = charts.phase_timeline(phases) if phases else None
    collectives = list(CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line").values(
        "op", "size_bytes", "busbw_gbs", "in_place"))
    collectives_chart = charts.collectives([(run.name, collectives)]) if collectives else None
    parsed = run.parsed or {}
    nccl = parsed.get("nccl") or {}
    baseline_id = request.GET.get("baseline", "")
    baseline = (
        visible_runs(request.user).filter(pk=int(baseline_id)).first() if _is_int(baseline_id)
        else suggested_baseline(request.user, run)
    )
    target = _float(request.GET.get("target"))
    analysis, curve = None, None
    if run.tokens_per_cycle:
        analysis = specdecode.analysis(
            {"throughput_tok_s": run.throughput_tok_s, "tokens_per_cycle": run.tokens_per_cycle,
             "cycle_ms": run.cycle_ms, "verify_ms": run.verify_ms, "steps": run.steps},
            {"throughput_tok_s": baseline.throughput_tok_s} if baseline else None, target_tok_s=target,
        )
        if analysis["curve"].get("series"):
            curve = charts.acceptance_curve(run.name, analysis["curve"])
    return render(request, "runs/run_detail.html", {
        "run": run, "logfiles": logfiles, "parsed": parsed, "phases": parsed.get("phases", []),
        "chart": chart, "nccl": nccl, "nccl_sentence": nccl_sentence(nccl), "first_line": _first_lines(run),
        "warnings": parsed.get("warnings", []), "annotations": run.annotations.select_related("author"),
        "baseline": baseline, "analysis": analysis, "curve": curve, "target": target,
        "collectives_chart": collectives_chart, "serving": sorted((parsed.get("serving") or {}).items()),
        "baseline_choices": visible_runs(request.user).filter(status=Status.READY, project=run.project)
        .exclude(pk=run.pk).exclude(throughput_tok_s=None).only("id", "name")[:100],
    })


def suggested_baseline(user, run: Run) -> Run | None:
    """The newest ready run without speculation in the same project (same model and TP size
    when the logs say them), as the baseline a speculative run must beat."""
    if not run.tokens_per_cycle:
        return None
    candidates = list(
        visible_runs(user).filter(project=run.project, status=Status.READY, spec_algorithm="", steps=None)
        .exclude(pk=run.pk).exclude(throughput_tok_s=None).order_by("-created_at", "-id")[:20]
    )
    if not candidates:
        return None
    wanted = _model_and_tp(run)
    for c in candidates:
        found = _model_and_tp(c)
        if all(w is None or f is None or str(w) == str(f) for w, f in zip(wanted, found, strict=True)):
            return c
    return None


def _model_and_tp(run: Run) -> tuple:
    settings: dict = {}
    for lf in run.logfiles.filter(status=Status.READY).only("settings"):
        for key in ("model", "tp_size"):
            if key in (lf.settings or {}):
                settings.setdefault(key, lf.settings[key]["value"])
    return settings.get("model"), settings.get("tp_size")


def nccl_sentence(nccl: dict) -> str:
    """The NCCL verdict in one sentence a person can act on."""
    status = nccl.get("status")
    drift = nccl.get("drift", [])
    if status == "drift":
        missing = [d for d in drift if d.get("effective") is None]
        changed = [d for d in drift if d.get("effective") is not None]
        parts = []
        if missing:
            parts.append(f"{len(missing)} NCCL variable{'s' if len(missing) != 1 else ''} declared in the launcher "
                         f"never reached the workers ({', '.join(d['key'] for d in missing)})")
        if changed:
            parts.append(", ".join(f"{d['key']} was {d['declared']} in the launcher but {d['effective']} in the workers"
                                   for d in changed))
        return "; ".join(parts) + "."
    if status == "ok":
        if not nccl.get("declared"):
            count = len(nccl.get("effective") or {})
            return (f"No launcher declaration in the logs; the workers report {count} NCCL "
                    f"variable{'s' if count != 1 else ''} set by environment.")
        return "Every NCCL variable the launcher declared reached every worker."
    return "No log shows what the workers actually used (no NCCL echo lines or worker environment dumps)."


CARD_METRICS = {"throughput_tok_s": "throughput_tok_s", "gen_throughput_tok_s": "throughput_tok_s",
                "tokens_per_cycle": "tokens_per_cycle", "cycle_ms": "cycle_ms"}


def _first_lines(run: Run) -> dict[str, dict]:
    """For each phase name and metric, the first log line it was read from (provenance links)."""
    out: dict[str, dict] = {}
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


@login_required
@require_GET
def run_status(request: HttpRequest) -> JsonResponse:
    """Statuses of the runs named in ?ids=1,2,3 (the list and detail pages poll this)."""
    try:
        ids = [int(i) for i in request.GET.get("ids", "").split(",") if i][:200]
    except ValueError:
        return JsonResponse({"error": {"code": "bad_ids", "message": "ids must be integers"}}, status=400)
    runs = visible_runs(request.user).filter(id__in=ids).prefetch_related(
        Prefetch("logfiles", queryset=LogFile.objects.only("id", "run_id", "status", "error"))
    )
    return JsonResponse({"runs": [
        {
            "id": r.id, "status": r.status, "busy": r.is_busy, "error": r.error,
            "throughput_tok_s": r.throughput_tok_s, "tokens_per_cycle": r.tokens_per_cycle,
            "verify_ms": r.verify_ms, "steps": r.steps,
            "logfiles": [{"id": lf.id, "status": lf.status, "error": lf.error} for lf in r.logfiles.all()],
        }
        for r in runs
    ]})


# Per-window series on the comparison page, and which parse source to believe first for each.
SERIES = {"throughput_tok_s": "tok/s", "tokens_per_cycle": "tokens/cycle", "verify_ms": "ms/cyc"}
# Metric rows that feed each series (SGLang's decode line calls throughput "gen throughput").
SERIES_METRICS = {"throughput_tok_s": "throughput_tok_s", "gen_throughput_tok_s": "throughput_tok_s",
                  "tokens_per_cycle": "tokens_per_cycle"}


def parse_ids(raw: str, limit: int = 12) -> list[int]:
    ids = []
    for part in raw.split(","):
        part = part.strip()
        if _is_int(part) and int(part) not in ids:
            ids.append(int(part))
    return ids[:limit]


def comparison_inputs(user, ids: list[int]) -> list[RunInput]:
    """Everything the comparison needs for the runs the user may see, in five queries."""
    runs = {r.id: r for r in visible_runs(user).filter(id__in=ids)}
    ids = [i for i in ids if i in runs]
    inputs = {i: RunInput(id=i, name=runs[i].name, parsed=runs[i].parsed or {}, steps=runs[i].steps) for i in ids}
    names: dict[int, str] = {}
    for lf in LogFile.objects.filter(run_id__in=ids, status=Status.READY).order_by("id").values(
        "id", "run_id", "original_name", "settings"
    ):
        names[lf["id"]] = lf["original_name"]
        for key, s in (lf["settings"] or {}).items():
            if not key.startswith(("serving.", "nccl_tests.")):
                inputs[lf["run_id"]].config.setdefault(
                    key, {"value": s["value"], "source": f"{lf['original_name']} line {s['line']}",
                          "logfile": lf["id"], "line": s["line"]})
    for i in ids:
        run, cfg = runs[i], inputs[i].config
        if run.steps is not None and run.steps_source.startswith("set by"):
            cfg["spec.steps"] = {"value": run.steps, "source": run.steps_source}
        nccl = (run.parsed or {}).get("nccl") or {}
        sources = nccl.get("sources") or {}
        for key, value in nccl.get("declared", {}).items():
            cfg[f"{key} (declared)"] = _sourced(value, (sources.get("declared") or {}).get(key), "launcher")
        first_rank = next(iter((sources.get("effective") or {}).values()), {})
        for key, value in nccl.get("effective", {}).items():
            cfg[f"{key} (effective)"] = _sourced(value, first_rank.get(key), "workers")
    picked: dict[tuple[int, str], str] = {}
    rows = MetricSample.objects.filter(run_id__in=ids, name__in=list(SERIES_METRICS)).order_by(
        "logfile_id", "window", "id").values_list("run_id", "name", "source", "value", "line")
    for run_id, metric, source, value, line in rows:
        name = SERIES_METRICS[metric]
        best = picked.get((run_id, name))
        if best is None or source_rank(source) < source_rank(best):
            picked[(run_id, name)] = source
            inputs[run_id].series[name] = []
        if picked[(run_id, name)] == source:
            series = inputs[run_id].series[name]
            series.append((len(series) + 1, value, line))
    for run_id, ms, line in PhaseSample.objects.filter(
        run_id__in=ids, name__icontains="verify"
    ).order_by("logfile_id", "window", "id").values_list("run_id", "ms", "line"):
        series = inputs[run_id].series.setdefault("verify_ms", [])
        series.append((len(series) + 1, ms, line))
    for c in CollectiveResult.objects.filter(run_id__in=ids).order_by("logfile_id", "line").values(
        "run_id", "op", "size_bytes", "busbw_gbs", "algbw_gbs", "time_us", "in_place", "line"
    ):
        inputs[c.pop("run_id")].collectives.append(c)
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


@login_required
@require_GET
def compare_view(request: HttpRequest) -> HttpResponse:
    # ?runs=3,7,9 (shareable) or ?run=3&run=7 (the run list's checkboxes without JavaScript)
    ids = parse_ids(",".join([request.GET.get("runs", ""), *request.GET.getlist("run")]))
    baseline = request.GET.get("baseline")
    inputs, result = comparison_for(request.user, ids, int(baseline) if _is_int(baseline) else None)
    fmt = request.GET.get("format")
    if fmt == "json":
        response = JsonResponse(result)
        response["Content-Disposition"] = 'attachment; filename="runlens-compare.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="runlens-compare.csv"'
        csv.writer(response).writerows(to_csv_rows(result))
        return response
    chart_data = {}
    if len(inputs) >= 1 and result["phases"]:
        chart_data["chart-breakdown"] = charts.cycle_breakdown(result)
        if len(inputs) >= 2:
            chart_data["chart-deltas"] = charts.phase_deltas(result)
    for key, unit in SERIES.items():
        traces = [(r.name, downsample(r.series.get(key, []))) for r in _ordered(inputs, result)]
        if any(points for _, points in traces):
            chart_data[f"chart-{key}"] = charts.over_the_run(traces, key, _series_title(key), unit)
    target = _float(request.GET.get("target"))
    analyses = spec_analyses(result, target)
    for a in analyses:
        if a["analysis"]["curve"].get("series"):
            chart_data[f"chart-curve-{a['id']}"] = charts.acceptance_curve(a["name"], a["analysis"]["curve"])
    coll = [(r.name, r.collectives) for r in _ordered(inputs, result) if r.collectives]
    if coll:
        chart_data["chart-collectives"] = charts.collectives(coll)
    return render(request, "runs/compare.html", {
        "result": result, "inputs": inputs, "charts": chart_data, "ids": ",".join(map(str, ids)),
        "show_all": request.GET.get("all") == "1", "analyses": analyses, "target": target,
    })


def _float(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < 1e7 else None


def spec_analyses(result: dict, target: float | None) -> list[dict]:
    """The speculative-decoding arithmetic of each speculative run against the baseline."""
    runs = result["runs"]
    if not runs:
        return []
    base = runs[0]
    verifies = [r["verify_ms"] for r in runs if r["verify_ms"]]
    best_verify = min(verifies) if verifies else None
    out = []
    for r in runs:
        if not r["tokens_per_cycle"] or r["id"] == base["id"]:
            continue
        summary = {k: r[k] for k in ("throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms")}
        out.append({"id": r["id"], "name": r["name"], "analysis": specdecode.analysis(
            {**summary, "steps": r["steps"]}, base, target_tok_s=target, best_verify_ms=best_verify)})
    return out


def _ordered(inputs: list[RunInput], result: dict) -> list[RunInput]:
    by_id = {r.id: r for r in inputs}
    return [by_id[r["id"]] for r in result["runs"]]


def _series_title(key: str) -> str:
    return {"throughput_tok_s": "Throughput over the run", "tokens_per_cycle": "Tokens per cycle over the run",
            "verify_ms": "Target verify ms/cycle over the run"}[key]


def sweep_for(user, query) -> tuple[dict, dict]:
    """The sweep a query string asks for (?runs=, ?run= or ?project=&tag=) and its selection."""
    from runs import sweep as sweep_analysis
    from runs.reads import MAX_SWEEP_RUNS, sweep_inputs, sweep_runs

    ids = parse_ids(",".join([query.get("runs", ""), *query.getlist("run")]), limit=MAX_SWEEP_RUNS)
    project, tag = query.get("project", "").strip(), query.get("tag", "").strip()
    runs = list(sweep_runs(user, ids, project, tag))
    if ids:
        missing = sorted(set(ids) - {r.id for r in runs})
        if missing:
            raise Http404(f"no ready run {', '.join(map(str, missing))} in your projects")
    selection = {"runs": ",".join(str(r.id) for r in runs), "project": "" if ids else project,
                 "tag": "" if ids else tag}
    return sweep_analysis.sweep(sweep_inputs(runs)), selection


@login_required
@require_GET
def sweep_view(request: HttpRequest) -> HttpResponse:
    from django.utils.http import urlencode

    from runs.sweep import to_csv_rows as sweep_csv_rows

    result, selection = sweep_for(request.user, request.GET)
    fmt = request.GET.get("format")
    if fmt == "json":
        response = JsonResponse(result)
        response["Content-Disposition"] = 'attachment; filename="runlens-sweep.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="runlens-sweep.csv"'
        csv.writer(response).writerows(sweep_csv_rows(result))
        return response
    chart_data = {}
    if result["groups"]:
        for key in charts.SWEEP_METRICS:
            if any(p[key] is not None for g in result["groups"] for p in g["points"]):
                chart_data[f"chart-sweep-{key}"] = charts.sweep_chart(result, key)
    share = {"runs": selection["runs"]} if not selection["project"] else {
        k: selection[k] for k in ("project", "tag") if selection[k]}
    return render(request, "runs/sweep.html", {
        "result": result, "charts": chart_data, "selection": selection, "share": urlencode(share),
    })


@login_required
@require_GET
def trend_view(request: HttpRequest) -> HttpResponse:
    from runs.reads import trend_points
    from runs.trend import METRIC_INFO, trend

    q = request.GET
    metric = q.get("metric") if q.get("metric") in METRIC_INFO else "throughput_tok_s"
    filters = {k: q.get(k, "").strip() for k in ("project", "branch", "tag", "nccl_status")}
    projects = list(visible_runs(request.user).order_by().values_list("project__name", flat=True).distinct())
    if not filters["project"] and len(projects) == 1:
        filters["project"] = projects[0]
    result = trend(trend_points(request.user, filters["project"], metric, filters["branch"], filters["tag"],
                                filters["nccl_status"]), metric) if filters["project"] else None
    if result is not None and q.get("format") == "json":
        return JsonResponse(result)
    chart = charts.trend_chart(result) if result and result["points"] else None
    return render(request, "runs/trend.html", {
        "result": result, "chart": chart, "filters": filters, "metric": metric, "projects": sorted(projects),
        "metrics": [(k, v[0]) for k, v in METRIC_INFO.items()], "nccl_statuses": ["ok", "drift", "unknown"],
    })
