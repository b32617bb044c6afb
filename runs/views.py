"""Pages: run list, run detail, live status. Thin: fetch what the user may see, call pure code."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs import charts
from runs.models import LogFile, PhaseSample, Run, Status, visible_runs

SORTS = {
    "date": "created_at", "name": "name", "tok_s": "throughput_tok_s", "tpc": "tokens_per_cycle",
    "cycle": "cycle_ms", "verify": "verify_ms", "steps": "steps", "status": "status",
}


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
    sort = q.get("sort", "-date")
    field = SORTS.get(sort.lstrip("-"), "created_at")
    order = f"-{field}" if sort.startswith("-") else field
    runs = runs.order_by(order if not order.endswith("created_at") else order, "-id")
    return runs, {"q": q.get("q", ""), "status": q.get("status", ""), "tag": q.get("tag", ""), "sort": sort}


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    runs, filters = filtered_runs(request)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    busy = [r.id for r in page if r.is_busy]
    return render(request, "runs/run_list.html", {
        "page": page, "filters": filters, "busy_ids": busy, "statuses": Status.values,
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
    parsed = run.parsed or {}
    first_line = _first_lines(run)
    return render(request, "runs/run_detail.html", {
        "run": run, "logfiles": logfiles, "parsed": parsed, "phases": parsed.get("phases", []),
        "chart": chart, "nccl": parsed.get("nccl") or {}, "first_line": first_line,
        "warnings": parsed.get("warnings", []),
    })


def _first_lines(run: Run) -> dict[str, dict]:
    """For each phase name and metric, the first log line it was read from (provenance links)."""
    out: dict[str, dict] = {}
    for row in PhaseSample.objects.filter(run=run).order_by("logfile_id", "window").values(
        "name", "logfile_id", "line"
    ):
        out.setdefault(f"phase:{row['name']}", row)
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
