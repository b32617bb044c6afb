"""The runs router of /api/v1/: upload or register runs, list, read, watch, delete, re-parse,
tag and annotate them, compare them.

A run of a project the user is not in does not exist for them (404, RELIABILITY A2). Writes go
through named services (STYLE 4): runs.services for run edits, ingest.services for what touches
stored files or the queue. Auth is set once on the NinjaAPI (webapp/api.py).

No `from __future__ import annotations` here: ninja's @paginate wrapper resolves the wrapped
operation's annotations in its own module, where string annotations name nothing.
"""

from pathlib import Path as PathLib
from typing import Annotated, BinaryIO, cast

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import File, Form, Header, Path, Query, Router
from ninja.files import UploadedFile
from ninja.pagination import paginate
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from ingest import client as ingest_client
from ingest import registration, storage
from ingest import services as ingest_services
from ingest.parsers.trace import TraceError
from runs import forms, queries, services, traces
from runs.http import ApiRequest
from runs.models import Run, RunEdit
from runs.models import Status as RunStatus
from runs.permissions import Role, require_role
from runs.schemas import (
    MAX_ID,
    AnnotationIn,
    AnnotationOut,
    AnnotationPatchIn,
    BadJson,
    CompareQuery,
    DeletedOut,
    ErrorOut,
    InvitationOut,
    MemberIn,
    MemberOut,
    PinIn,
    PinOut,
    ProjectOut,
    RefreshOut,
    RefreshQuery,
    RegisterIn,
    RoleIn,
    RolesIn,
    RunCreatedOut,
    RunDetailOut,
    RunFilters,
    RunMetaIn,
    RunOut,
    RunPagination,
    RunStatusOut,
    SplitOut,
    SweepQuery,
    TagsIn,
    TagsOut,
    TracePhasesIn,
    VerdictOut,
    VerdictQuery,
    errors,
    read_json,
)
from runs.services import ServiceError
from runs.trace_views import trace_csv_response
from runs.verdict import gate

router = Router()

RunId = Path(..., ge=1, le=MAX_ID, description="the run's id")


@router.get("/runs", response={200: list[RunOut], errors(422): ErrorOut})
@paginate(RunPagination)
def list_runs(request: ApiRequest, filters: Query[RunFilters]) -> queries.RunPages:
    """Runs of your projects, newest first, filtered and a page at a time."""
    return queries.run_pages(request.auth, filters)


@router.get("/runs/{int:run_id}", response={200: RunDetailOut, errors(404, 422): ErrorOut})
def get_run(request: ApiRequest, run_id: int = RunId) -> Run:
    """One run: summary figures, tags, log files with their parse status, and `parsed`, the
    whole parse in the DESIGN "Contract" shape."""
    return queries.visible_run(request.auth, run_id)


@router.get("/runs/{int:run_id}/status", response={200: RunStatusOut, errors(404, 422): ErrorOut})
def run_status(request: ApiRequest, run_id: int = RunId) -> Run:
    """Poll this while a run parses: `queued`, `parsing`, then `ready` or `failed` (with `error`).
    Once ready, `verdict` is the run against its baseline (GET /runs/{id}/verdict)."""
    run = queries.visible_run(request.auth, run_id)
    if run.status == RunStatus.READY:
        run.verdict = queries.verdict_for(request.auth, run)
    return run


@router.delete("/runs/{int:run_id}", response={200: DeletedOut, errors(403, 404, 422): ErrorOut})
def delete_run(request: ApiRequest, run_id: int = RunId) -> dict:
    """Delete a run, its parsed rows and its stored files. A project admin or the run's creator may."""
    registration.delete_run(request.auth, queries.visible_run(request.auth, run_id))
    return {"id": run_id, "deleted": True}


@router.post("/runs/{int:run_id}/reparse", response={202: RunStatusOut, errors(403, 404, 422): ErrorOut})
def reparse_run(request: ApiRequest, run_id: int = RunId) -> Status:
    """Parse every log file of the run again (after a parser upgrade); rows are replaced atomically.
    Editors and admins of its project."""
    run = queries.visible_run(request.auth, run_id)
    ingest_services.reparse_run(request.auth, run)
    run.refresh_from_db()
    return Status(202, run)


@router.post("/runs/{int:run_id}/split", response={200: SplitOut, errors(403, 404, 409, 422): ErrorOut})
def split_run(request: ApiRequest, run_id: int = RunId) -> dict:
    """One run per serving launch: the run keeps its first launch; each other launch's log files
    and rows move to a new run. 409 when the run has one launch or launches share a log file."""
    run = queries.visible_run(request.auth, run_id)
    return {"id": run.id, "runs": services.split_run(request.auth, run)}


@router.post("/runs/{int:run_id}/roles", response={200: RunDetailOut, errors(400, 403, 404, 415, 422): ErrorOut})
def set_roles(request: ApiRequest, payload: RolesIn, run_id: int = RunId) -> Run:
    """Correct who wrote a log file (its processes' role); the run's figures and verdicts are
    computed again. Editors and admins; recorded in the run's `edits` (who, when, the roles and
    the figures it moved, before and after)."""
    run = queries.visible_run(request.auth, run_id)
    services.set_file_roles(request.auth, run, payload.roles)
    return queries.visible_run(request.auth, run_id)


@router.put("/runs/{int:run_id}/tags", response={200: TagsOut, errors(400, 403, 404, 415, 422): ErrorOut})
def set_tags(request: ApiRequest, payload: TagsIn, run_id: int = RunId) -> dict:
    """Replace the run's tags (editors and admins). Each change is recorded: `history` lists who
    replaced which tags with which, oldest first (also on the run page and in the activity feed)."""
    run = queries.visible_run(request.auth, run_id)
    services.replace_tags(request.auth, run, payload.tags)
    return {"id": run.id, "tags": sorted(t.name for t in run.tags.all()),
            "history": queries.run_edits(run, RunEdit.What.TAGS)}


def _trace(run: Run) -> dict:
    trace = queries.trace_of(run)
    if trace is None:
        raise ServiceError(404, "no_trace", f"run {run.id} has no parsed profiler trace: attach a torch.profiler "
                           "trace (.json or .json.gz) to the run, or see its files' status and errors")
    return {"run": run.id, "phase_map": run.trace_phases, **trace}


@router.get("/runs/{int:run_id}/trace", response={200: dict, errors(404, 422): ErrorOut})
def run_trace(request: ApiRequest, run_id: int = RunId) -> dict:
    """The run's profiler traces by phase and cycle: per traced GPU (`ranks`, one file per rank),
    each phase's wall, GPU busy, idle share, kernel and launch counts, time by kernel class and top
    kernels, over cycles and per cycle (`per_cycle`). Every figure names its range or kernel:
    `event` (index in the file's traceEvents) and `ts_us`. docs/traces.md says how each is made."""
    return _trace(queries.visible_run(request.auth, run_id))


@router.get("/runs/{int:run_id}/trace.csv", response={200: None, errors(404, 422): ErrorOut})
def run_trace_csv(request: ApiRequest, run_id: int = RunId) -> HttpResponse:
    """The per-phase, per-cycle trace breakdown as CSV: a row per GPU, phase and cycle, a column per kernel class."""
    return trace_csv_response(_trace(queries.visible_run(request.auth, run_id)), run_id)


@router.get("/runs/{int:run_id}/trace/timeline", response={200: dict, errors(404, 422): ErrorOut})
def run_trace_timeline(request: ApiRequest, run_id: int = RunId, rank: int = 0, cycle: int | None = None) -> dict:
    """One kept cycle of one traced GPU: its kernels (start, duration, stream, name, class, event) and
    ranges. Kept: up to 12 cycles spread over the trace (`cycles`); none asked: the median one."""
    run = queries.visible_run(request.auth, run_id)
    found = traces.timeline(queries.trace_files(run), rank, cycle, run.trace_phases)
    if found is None:
        raise ServiceError(404, "no_trace", f"run {run_id} has no parsed profiler trace with cycles for GPU #{rank}")
    return found


@router.get("/runs/{int:run_id}/trace/events/{int:logfile_id}/{int:index}",
            response={200: dict, errors(404, 422): ErrorOut})
def trace_event(request: ApiRequest, run_id: int = RunId, logfile_id: int = Path(..., ge=1, le=MAX_ID),
                index: int = Path(..., ge=0, le=MAX_ID)) -> dict:
    """The trace event a figure names (`event`, the index in the file's traceEvents), as the file
    has it: the range or kernel behind a number. Read from the stored file up to it."""
    run = queries.visible_run(request.auth, run_id)
    lf = run.logfiles.filter(id=logfile_id, kind="trace").defer("trace").first()
    found = None
    if lf is not None:
        try:
            found = ingest_services.trace_event(lf, index)
        except (OSError, storage.StorageError, TraceError) as e:
            raise ServiceError(404, "no_trace_event", f"event #{index} of {lf.original_name}: {e}") from None
    if found is None:
        raise ServiceError(404, "no_trace_event",
                           f"run {run_id} has no trace file #{logfile_id} with an event #{index}")
    return {"logfile": logfile_id, "index": index, "event": found}


@router.put("/runs/{int:run_id}/trace/phases", response={200: dict, errors(400, 403, 404, 415, 422): ErrorOut})
def set_trace_phases(request: ApiRequest, payload: TracePhasesIn, run_id: int = RunId) -> dict:
    """Say which trace ranges are which phases (editors and admins); recorded as a run edit. The
    breakdown is redone from the stored per-range figures at once (the trace is not read again)."""
    run = queries.visible_run(request.auth, run_id)
    _trace(run)  # a run without a trace: 404 before anything is recorded
    services.set_trace_phases(request.auth, run, payload.phases)
    return _trace(queries.visible_run(request.auth, run_id))


@router.get("/runs/{int:run_id}/annotations", response={200: list[AnnotationOut], errors(404, 422): ErrorOut})
def list_annotations(request: ApiRequest, run_id: int = RunId) -> list:
    """The run's annotations, oldest first: replies name their `parent`, anchored ones their
    windows; `body_html` is the markdown rendered and sanitised."""
    return queries.run_annotations(queries.visible_run(request.auth, run_id))


@router.post("/runs/{int:run_id}/annotations",
             response={201: AnnotationOut, errors(400, 403, 404, 415, 422): ErrorOut})
def add_annotation(request: ApiRequest, payload: AnnotationIn, run_id: int = RunId) -> Status:
    """Annotate a run. `note`: markdown (any member, viewers too), maybe a reply (`parent`) or
    anchored to windows `window_from`..`window_to` and a `phase`. `nccl`: paste `env | grep NCCL`
    from the launching shell: they become the run's declared NCCL settings and its drift is
    computed again. `steps`: the draft step count. Both of those need the editor role."""
    run = queries.visible_run(request.auth, run_id)
    return Status(201, services.add_annotation(
        request.auth, run, payload.kind, payload.body, parent=payload.parent,
        window_from=payload.window_from, window_to=payload.window_to, phase=payload.phase,
    ))


AnnotationId = Path(..., ge=1, le=MAX_ID, description="the annotation's id")


@router.patch("/annotations/{int:annotation_id}",
              response={200: AnnotationOut, errors(400, 403, 404, 415, 422): ErrorOut})
def edit_annotation(request: ApiRequest, payload: AnnotationPatchIn, annotation_id: int = AnnotationId):
    """Replace a note's text (its author or a project admin); the old text is kept in its history."""
    annotation = queries.visible_annotation(request.auth, annotation_id)
    return services.edit_annotation(request.auth, annotation, payload.body)


@router.delete("/annotations/{int:annotation_id}", response={200: DeletedOut, errors(403, 404, 422): ErrorOut})
def delete_annotation(request: ApiRequest, annotation_id: int = AnnotationId) -> dict:
    """Delete an annotation (its author or a project admin). One with replies stays as "deleted"."""
    services.delete_annotation(request.auth, queries.visible_annotation(request.auth, annotation_id))
    return {"id": annotation_id, "deleted": True}


@router.get("/compare", response={200: dict, errors(404, 422): ErrorOut})
def compare_runs(request: ApiRequest, query: Query[CompareQuery]) -> dict:
    """Runs against a baseline, as on /compare/: per-phase and per-metric deltas with their noise,
    the configuration diff and comparability verdict, NCCL status and the headline sentences."""
    # No per-window points: the result has none (only their noise, kept with the stored series).
    _, result = queries.comparison_for(request.auth, forms.parse_ids(query.runs), query.baseline, points=False)
    return result

SIZE_CODES = {"too_large", "decompressed_too_large"}
META_HELP = (
    'JSON object: {"name", "project", "tags": [...], "steps", "nccl_env": {"NCCL_X": "value"}, "notes", '
    '"ci": {"commit", "branch", "url"}, "baseline": run id | "pinned" | {"branch": "main"}, "create_project": bool}'
)


def _meta_in_openapi() -> dict:
    """`meta` is a JSON text in the form; say so in the schema, with its fields (OpenAPI encoding)."""
    schema = RunMetaIn.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)  # CiIn is in the components already (RegisterIn uses it)
    schema.update(default={}, description=META_HELP)
    return {"requestBody": {"content": {"multipart/form-data": {
        "schema": {"properties": {"meta": schema}, "additionalProperties": False},
        "encoding": {"meta": {"contentType": "application/json"}},
    }}}}


def _created(request: HttpRequest, run: Run, created: bool) -> Status:
    url = request.build_absolute_uri(reverse("run_detail", args=[run.id]))
    return Status(202 if created else 200, {"id": run.id, "status": run.status, "url": url, "created": created})


def _meta(text: str) -> RunMetaIn:
    """The upload's `meta` form field, with a message that names what is wrong with it."""
    try:
        data = read_json(text or "{}")
    except BadJson as e:
        raise ServiceError(422, "bad_meta", f"meta is {e}", line=e.line) from None
    if not isinstance(data, dict):
        raise ServiceError(422, "bad_meta", f"meta must be a JSON object, not {type(data).__name__}")
    try:
        return RunMetaIn.model_validate(data)
    except PydanticValidationError as e:
        problems = "; ".join(
            f"meta.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors(include_url=False)
        )
        raise ServiceError(422, "bad_meta", problems) from None


def _refused(e: storage.StorageError, size_status: int = 413) -> ServiceError:
    return ServiceError(size_status if e.code in SIZE_CODES else 400, e.code, e.message)


@router.post(
    "/runs",
    response={202: RunCreatedOut, 200: RunCreatedOut, errors(400, 403, 404, 409, 413, 415, 422): ErrorOut},
    openapi_extra=_meta_in_openapi(),
)
def upload(
    request: ApiRequest,
    files: Annotated[list[UploadedFile], File(min_length=1, description="the run's log files")],
    meta: Annotated[str, Form(description=META_HELP)] = "{}",
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", pattern=r"^[\x21-\x7e]{1,200}$",
        description="a retry with the same key gives back the run of the first try",
    )] = None,
) -> Status:
    """Upload the log files of one run (multipart: `files`, one or more, `.gz` is fine; `meta`).

    202 with the new run, queued for parsing. The same content (every file's sha256) or the same
    `Idempotency-Key` in the same project answers 200 with the existing run (as the upload page
    does). `meta.project` not one of your projects: 404 `unknown_project`, the same answer whether
    or not someone else has that name; `meta.create_project: true` creates it. Over
    RUNLENS_MAX_UPLOAD_BYTES: 413, nothing stored.
    """
    refused = getattr(request, "upload_refused", None)
    if refused:
        raise ServiceError(413, "upload_too_large", refused)
    unexpected = sorted((set(request.POST) - {"meta"}) | (set(request.FILES) - {"files"}))
    if unexpected:
        raise ServiceError(422, "unexpected_fields",
                                    f"unexpected form fields {unexpected}: send `files` and `meta` only")
    info = _meta(meta)
    try:
        run, created = registration.register_upload(
            # An uploaded file reads like a binary stream (Django's FileProxyMixin), and Django's upload
            # handlers always set its size: the stubs say neither.
            request.auth, [registration.IncomingFile(f.name or "upload.log", cast(BinaryIO, f), cast(int, f.size))
                           for f in files],
            name=info.name, project=info.project, tags=info.tags, notes=info.notes,
            meta=info.stored(),
            steps=info.steps, nccl_env=info.nccl_env, idempotency_key=idempotency_key or "",
            roles=info.roles, create_project=info.create_project,
        )
    except storage.StorageError as e:
        raise _refused(e) from None
    return _created(request, run, created)


@router.post(
    "/runs/register",
    response={202: RunCreatedOut, 200: RunCreatedOut, errors(400, 403, 404, 409, 415, 422): ErrorOut},
)
def register(request: ApiRequest, payload: RegisterIn) -> Status:
    """Create a run from a log file on the server, read in place (project admins only).

    The path must resolve, symlinks followed, to a regular file under one of RUNLENS_LOG_ROOTS;
    otherwise 400 with a stable code (`path_outside_allowed_roots`, `path_not_readable`,
    `not_a_regular_file`, `hard_linked`, `too_large`, `registration_disabled`). The same path again gives back
    its run (200).
    """
    try:
        run, created = registration.register_path(
            request.auth, payload.path, name=payload.name, project=payload.project, tags=payload.tags,
            notes=payload.notes, meta=payload.stored(),
            steps=payload.steps, nccl_env=payload.nccl_env, roles=payload.roles,
            create_project=payload.create_project,
        )
    except storage.StorageError as e:
        raise _refused(e, size_status=400) from None
    return _created(request, run, created)


@router.post("/runs/{int:run_id}/refresh", response={200: RefreshOut, errors(400, 403, 404, 422): ErrorOut})
def refresh(request: ApiRequest, query: Query[RefreshQuery], run_id: int = RunId) -> dict:
    """Read a registered log again (it has grown): if it grew, the run is parsed again (editors and
    admins). A log that was rotated or truncated since (it shrank, or bytes it had changed) is not
    read: its old rows are kept, `kept` says why (and the log file's `refresh_warning`, on the run
    page too), until `?replace=true` reads it as it is now."""
    run = queries.visible_run(request.auth, run_id)
    try:
        done = registration.refresh_registered(request.auth, run, replace=query.replace)
    except storage.StorageError as e:
        raise _refused(e, size_status=400) from None
    run.refresh_from_db()
    return {"id": run.id, "status": run.status, "changed": done.changed, "kept": done.kept}


@router.get("/sweep", response={200: dict, errors(404, 422): ErrorOut})
def sweep_runs(request: ApiRequest, query: Query[SweepQuery]) -> dict:
    """A step-count sweep, as on /sweep/: `runs` (ids) or `project` (and `tag`). Runs grouped by
    model, TP size, GPU, engine and effective NCCL settings; per group the measured `points`,
    the `best`, the no-speculation `baseline`, the model `fit` (acceptance p, cost per draft
    step, predicted curve for 1-8 steps with its band, predicted best) and a `headline`."""
    ids = forms.parse_ids(query.runs) if query.runs else []
    result, _ = queries.sweep_for(request.auth, ids, (query.project or "").strip(), (query.tag or "").strip())
    return result


@router.get("/runs/{int:run_id}/verdict", response={200: VerdictOut, errors(404, 422): ErrorOut})
def run_verdict(request: ApiRequest, query: Query[VerdictQuery], run_id: int = RunId) -> dict:
    """The run against the baseline its upload named (`meta.baseline`: a run id, "pinned" or
    {"branch": "main"}; the project's pinned baseline when none): per figure (throughput, tokens
    per cycle, cycle, verify, each phase) the delta, the noise, whether it is outside the noise,
    and the overall `verdict`: `regression`, `improvement`, `no change`, `not comparable` (with
    `reasons`) or `pending` while it parses. `nccl`: the run's NCCL status, the variables that
    drifted, and the effective settings that differ from the baseline's (those make the runs not
    comparable); a drift opens the `headline` and ends the `title`. Each figure's `text` holds its
    numbers as the pages write them. `compare_url` opens the comparison page; with
    `fail_on_regression`, `gate` says whether `metric` got worse by more than that % beyond the noise."""
    run = queries.visible_run(request.auth, run_id)
    result = queries.verdict_for(request.auth, run)
    result["compare_url"] = None
    if result["baseline"]:
        base = result["baseline"]["id"]
        result["compare_url"] = request.build_absolute_uri(f"{reverse('compare')}?runs={base},{run.id}&baseline={base}")
    result["run_url"] = request.build_absolute_uri(reverse("run_detail", args=[run.id]))
    if query.fail_on_regression is not None:
        result["gate"] = gate(result, query.metric, query.fail_on_regression)
    return result


@router.put("/runs/{int:run_id}/pinned", response={200: PinOut, errors(400, 403, 404, 409, 415, 422): ErrorOut})
def pin_run(request: ApiRequest, payload: PinIn, run_id: int = RunId) -> dict:
    """Pin the run as its project's baseline (CI uploads with `meta.baseline` "pinned", or none,
    are judged against it), or unpin it. Project admins only; the run must be ready."""
    project = services.pin_baseline(request.auth, queries.visible_run(request.auth, run_id), payload.pinned)
    return {"project": project.name, "pinned_baseline": project.pinned_baseline_id}


CLIENT = PathLib(ingest_client.__file__)


# The response is described once, by openapi_extra under the same int key ninja uses for its
# `response` codes: a "200" string key beside ninja's 200 prints two "200" keys in openapi.json.
@router.get("/client/runlens-upload.py", auth=None, response={200: None},
            openapi_extra={"responses": {200: {"description": "the client, a Python 3 script",
                                                 "content": {"text/x-python": {"schema": {"type": "string"}}}}}})
def client_script(request: HttpRequest) -> HttpResponse:
    """runlens-upload, the one-file standard-library CI client, so a runner needs only Python and
    curl: `curl -fsS $RUNLENS_URL/api/v1/client/runlens-upload.py -o runlens-upload.py`. No token:
    the client holds no secret, and CI fetches it before it has one in hand."""
    response = HttpResponse(CLIENT.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="runlens-upload.py"'
    return response
projects_router = Router()
ProjectId = Path(..., ge=1, le=MAX_ID, description="the project's id")
Username = Path(..., min_length=1, max_length=150, pattern=r"^[^\x00]*$", description="the member's username")
InvitationId = Path(..., ge=1, le=MAX_ID, description="the invitation's id")


@projects_router.get("/projects", response={200: list[ProjectOut], errors(): ErrorOut})
def list_projects(request: ApiRequest) -> list[dict]:
    """Your projects with your role in each."""
    return [{"id": m.project.id, "name": m.project.name, "role": m.role, "created_at": m.project.created_at}
            for m in queries.my_memberships(request.auth)]


@projects_router.get("/projects/{int:project_id}/members", response={200: list[MemberOut], errors(404, 422): ErrorOut})
def list_members(request: ApiRequest, project_id: int = ProjectId) -> list:
    """Members of a project of yours with their roles."""
    return queries.project_members(queries.visible_project(request.auth, project_id))


@projects_router.post("/projects/{int:project_id}/members",
                      response={202: InvitationOut, errors(400, 403, 404, 409, 415, 422): ErrorOut})
def add_member(request: ApiRequest, payload: MemberIn, project_id: int = ProjectId) -> Status:
    """Invite a username or e-mail address with a role (project admins). 202: the invitation is
    pending; they become a member when they accept it (POST /invitations/{id}/accept). The answer is
    the same whether or not such an account exists, and names no account or e-mail. 409
    `already_member` or `already_invited`."""
    project = queries.visible_project(request.auth, project_id)
    return Status(202, services.invite(request.auth, project, payload.username, payload.role))


@projects_router.get("/projects/{int:project_id}/invitations",
                     response={200: list[InvitationOut], errors(403, 404, 422): ErrorOut})
def list_project_invitations(request: ApiRequest, project_id: int = ProjectId) -> list:
    """The project's pending invitations (project admins)."""
    project = queries.visible_project(request.auth, project_id)
    require_role(request.auth, project, Role.ADMIN)
    return queries.project_invitations(project)


@projects_router.delete("/projects/{int:project_id}/invitations/{int:invitation_id}",
                        response={200: DeletedOut, errors(403, 404, 422): ErrorOut})
def withdraw_invitation(request: ApiRequest, project_id: int = ProjectId,
                        invitation_id: int = InvitationId) -> dict:
    """Take back a pending invitation (project admins)."""
    services.withdraw_invitation(request.auth, queries.visible_project(request.auth, project_id), invitation_id)
    return {"id": invitation_id, "deleted": True}


@projects_router.get("/invitations", response={200: list[InvitationOut], errors(): ErrorOut})
def my_invitations(request: ApiRequest) -> list:
    """Invitations to your username or e-mail address, waiting for you to accept or decline them.
    A CI bot accepts with its token: `GET /invitations`, then `POST /invitations/{id}/accept`."""
    return list(queries.invitations_for(request.auth))


@projects_router.post("/invitations/{int:invitation_id}/accept",
                      response={200: ProjectOut, errors(404, 422): ErrorOut})
def accept_invitation(request: ApiRequest, invitation_id: int = InvitationId) -> dict:
    """Join the project with the invitation's role."""
    membership = services.accept_invitation(request.auth, invitation_id)
    project = membership.project
    return {"id": project.id, "name": project.name, "role": membership.role, "created_at": project.created_at}


@projects_router.post("/invitations/{int:invitation_id}/decline",
                      response={200: DeletedOut, errors(404, 422): ErrorOut})
def decline_invitation(request: ApiRequest, invitation_id: int = InvitationId) -> dict:
    """Turn the invitation down; the project's admins see it gone."""
    services.decline_invitation(request.auth, invitation_id)
    return {"id": invitation_id, "deleted": True}


@projects_router.patch("/projects/{int:project_id}/members/{username}",
                       response={200: MemberOut, errors(400, 403, 404, 409, 415, 422): ErrorOut})
def set_role(request: ApiRequest, payload: RoleIn, project_id: int = ProjectId, username: str = Username):
    """Change a member's role (project admins); the project keeps at least one admin (409)."""
    project = queries.visible_project(request.auth, project_id)
    return services.set_role(request.auth, project, username, payload.role)


@projects_router.delete("/projects/{int:project_id}/members/{username}",
                        response={200: DeletedOut, errors(403, 404, 409, 422): ErrorOut})
def remove_member(request: ApiRequest, project_id: int = ProjectId, username: str = Username) -> dict:
    """Remove a member (project admins; anyone may remove themselves)."""
    project = queries.visible_project(request.auth, project_id)
    services.remove_member(request.auth, project, username)
    return {"id": project.id, "deleted": True}
