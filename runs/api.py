"""The runs router of /api/v1/: list, read, watch, delete, re-parse, tag and annotate runs.

A run of a project the user is not in does not exist for them (404, RELIABILITY A2). Writes go
through ingest.services (STYLE 4); auth is set once on the NinjaAPI (webapp/api.py).
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Path, Query, Router
from ninja.errors import HttpError
from ninja.responses import Status

from ingest import services
from runs.models import Run, visible_runs
from runs.schemas import (
    MAX_ID,
    AnnotationIn,
    AnnotationOut,
    CompareQuery,
    DeletedOut,
    ErrorOut,
    PinIn,
    PinOut,
    RunDetailOut,
    RunFilters,
    RunPageOut,
    RunStatusOut,
    SweepQuery,
    TagsIn,
    TagsOut,
    VerdictQuery,
    errors,
)

router = Router()

RunId = Path(..., ge=1, le=MAX_ID, description="the run's id")


def get_run_for_user(request: HttpRequest, run_id: int) -> Run:
    run = (
        visible_runs(request.auth).filter(pk=run_id)
        .select_related("project", "created_by").prefetch_related("tags").first()
    )
    if run is None:
        raise HttpError(404, f"no run {run_id} in your projects")
    return run


@router.get("/runs", response={200: RunPageOut, errors(422): ErrorOut})
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> dict:
    """Runs of your projects, newest first, filtered and a page at a time."""
    runs = visible_runs(request.auth).select_related("project", "created_by").prefetch_related("tags")
    if filters.tag:
        runs = runs.filter(tags__name=filters.tag)
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.engine:
        runs = runs.filter(engine=filters.engine)
    if filters.steps is not None:
        runs = runs.filter(steps=filters.steps)
    if filters.q:
        runs = runs.filter(name__icontains=filters.q)
    if filters.project:
        runs = runs.filter(project__name=filters.project)
    runs = runs.order_by("-created_at", "-id")
    start = (filters.page - 1) * filters.page_size
    return {
        "items": list(runs[start:start + filters.page_size]), "total": runs.count(),
        "page": filters.page, "page_size": filters.page_size,
    }


@router.get("/runs/{int:run_id}", response={200: RunDetailOut, errors(404, 422): ErrorOut})
def get_run(request: HttpRequest, run_id: int = RunId) -> Run:
    """One run: summary figures, tags, log files with their parse status, and `parsed`, the
    whole parse in the DESIGN "Contract" shape."""
    return get_run_for_user(request, run_id)


@router.get("/runs/{int:run_id}/status", response={200: RunStatusOut, errors(404, 422): ErrorOut})
def run_status(request: HttpRequest, run_id: int = RunId) -> Run:
    """Poll this while a run parses: `queued`, `parsing`, then `ready` or `failed` (with `error`).
    Once ready, `verdict` is the run against its baseline (GET /runs/{id}/verdict)."""
    run = get_run_for_user(request, run_id)
    if run.status == "ready":
        from runs.reads import verdict_for

        run.verdict = verdict_for(request.auth, run)
    return run


@router.delete("/runs/{int:run_id}", response={200: DeletedOut, errors(403, 404, 422): ErrorOut})
def delete_run(request: HttpRequest, run_id: int = RunId) -> dict:
    """Delete a run, its parsed rows and its stored files. A project admin or the run's creator may."""
    services.delete_run(request.auth, get_run_for_user(request, run_id))
    return {"id": run_id, "deleted": True}


@router.post("/runs/{int:run_id}/reparse", response={202: RunStatusOut, errors(404, 422): ErrorOut})
def reparse_run(request: HttpRequest, run_id: int = RunId) -> Status:
    """Parse every log file of the run again (after a parser upgrade); rows are replaced atomically."""
    run = get_run_for_user(request, run_id)
    services.reparse_run(run)
    run.refresh_from_db()
    return Status(202, run)


@router.put("/runs/{int:run_id}/tags", response={200: TagsOut, errors(400, 404, 415, 422): ErrorOut})
def set_tags(request: HttpRequest, payload: TagsIn, run_id: int = RunId) -> dict:
    """Replace the run's tags."""
    run = get_run_for_user(request, run_id)
    services.set_tags(run, payload.tags)
    return {"id": run.id, "tags": sorted(t.name for t in run.tags.all())}


@router.get("/runs/{int:run_id}/annotations", response={200: list[AnnotationOut], errors(404, 422): ErrorOut})
def list_annotations(request: HttpRequest, run_id: int = RunId) -> list:
    """The run's annotations, oldest first."""
    return list(get_run_for_user(request, run_id).annotations.select_related("author"))


@router.post("/runs/{int:run_id}/annotations", response={201: AnnotationOut, errors(400, 404, 415, 422): ErrorOut})
def add_annotation(request: HttpRequest, payload: AnnotationIn, run_id: int = RunId) -> Status:
    """Annotate a run. `nccl`: paste `env | grep NCCL` (or NCCL_X=value lines) from the launching
    shell: they become the run's declared NCCL settings and its drift is computed again.
    `steps`: the draft step count, when the logs do not say it. `note`: free text."""
    run = get_run_for_user(request, run_id)
    return Status(201, services.add_annotation(request.auth, run, payload.kind, payload.body))


@router.get("/compare", response={200: dict, errors(404, 422): ErrorOut})
def compare_runs(request: HttpRequest, query: Query[CompareQuery]) -> dict:
    """Runs against a baseline, as on /compare/: per-phase and per-metric deltas with their noise,
    the configuration diff and comparability verdict, NCCL status and the headline sentences."""
    from django.http import Http404

    from runs.views import comparison_for, parse_ids

    try:
        _, result = comparison_for(request.auth, parse_ids(query.runs), query.baseline)
    except Http404 as e:
        raise HttpError(404, str(e)) from None
    return result


@router.get("/sweep", response={200: dict, errors(404, 422): ErrorOut})
def sweep_runs(request: HttpRequest, query: Query[SweepQuery]) -> dict:
    """A step-count sweep, as on /sweep/: `runs` (ids) or `project` (and `tag`). Runs grouped by
    model, TP size, GPU, engine and effective NCCL settings; per group the measured `points`,
    the `best`, the no-speculation `baseline`, the model `fit` (acceptance p, cost per draft
    step, predicted curve for 1-8 steps with its band, predicted best) and a `headline`."""
    from django.http import Http404, QueryDict

    from runs.views import sweep_for

    params = QueryDict(mutable=True)
    for key in ("runs", "project", "tag"):
        if getattr(query, key):
            params[key] = getattr(query, key)
    try:
        result, _ = sweep_for(request.auth, params)
    except Http404 as e:
        raise HttpError(404, str(e)) from None
    return result


@router.get("/runs/{int:run_id}/verdict", response={200: dict, errors(404, 422): ErrorOut})
def run_verdict(request: HttpRequest, query: Query[VerdictQuery], run_id: int = RunId) -> dict:
    """The run against the baseline its upload named (`meta.baseline`: a run id, "pinned" or
    {"branch": "main"}; the project's pinned baseline when none): per figure (throughput, tokens
    per cycle, cycle, verify, each phase) the delta, the noise, whether it is outside the noise,
    and the overall `verdict`: `regression`, `improvement`, `no change`, `not comparable` (with
    `reasons`) or `pending` while it parses. `compare_url` opens the comparison page."""
    from django.urls import reverse

    from runs.reads import verdict_for
    from runs.verdict import gate

    run = get_run_for_user(request, run_id)
    result = verdict_for(request.auth, run)
    result["compare_url"] = None
    if result["baseline"]:
        base = result["baseline"]["id"]
        result["compare_url"] = request.build_absolute_uri(f"{reverse('compare')}?runs={base},{run.id}&baseline={base}")
    result["run_url"] = request.build_absolute_uri(reverse("run_detail", args=[run.id]))
    if query.fail_on_regression is not None:
        result["gate"] = gate(result, query.metric, query.fail_on_regression)
    return result


@router.put("/runs/{int:run_id}/pinned", response={200: PinOut, errors(400, 403, 404, 409, 415, 422): ErrorOut})
def pin_run(request: HttpRequest, payload: PinIn, run_id: int = RunId) -> dict:
    """Pin the run as its project's baseline (CI uploads with `meta.baseline` "pinned", or none,
    are judged against it), or unpin it. Project admins only; the run must be ready."""
    project = services.pin_baseline(request.auth, get_run_for_user(request, run_id), payload.pinned)
    return {"project": project.name, "pinned_baseline": project.pinned_baseline_id}
