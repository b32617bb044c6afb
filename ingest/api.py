"""The ingest router of /api/v1/: upload logs (CI), register logs by server path, refresh them.

Writes go through ingest.services; storage refusals keep their stable codes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import File, Form, Header, Router
from ninja.files import UploadedFile
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from ingest import services, storage
from ingest.schemas import RefreshOut, RegisterIn, RunCreatedOut, RunMetaIn
from runs.api import RunId, get_run_for_user
from runs.models import Run
from runs.schemas import ErrorOut, errors

router = Router()
CLIENT = Path(__file__).with_name("client.py")

SIZE_CODES = {"too_large", "decompressed_too_large"}
META_HELP = (
    'JSON object: {"name", "project", "tags": [...], "steps", "nccl_env": {"NCCL_X": "value"}, "notes", '
    '"ci": {"commit", "branch", "url"}, "baseline": run id | "pinned" | {"branch": "main"}}'
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
        data = json.loads(text or "{}")
    except json.JSONDecodeError as e:
        raise services.ServiceError(422, "bad_meta", f"meta is not valid JSON: {e.msg} (line {e.lineno}, "
                                    f"column {e.colno})", line=e.lineno) from None
    if not isinstance(data, dict):
        raise services.ServiceError(422, "bad_meta", f"meta must be a JSON object, not {type(data).__name__}")
    try:
        return RunMetaIn.model_validate(data)
    except PydanticValidationError as e:
        problems = "; ".join(
            f"meta.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors(include_url=False)
        )
        raise services.ServiceError(422, "bad_meta", problems) from None


def _refused(e: storage.StorageError, size_status: int = 413) -> services.ServiceError:
    return services.ServiceError(size_status if e.code in SIZE_CODES else 400, e.code, e.message)


@router.post(
    "/runs",
    response={202: RunCreatedOut, 200: RunCreatedOut, errors(400, 403, 413, 415, 422): ErrorOut},
    openapi_extra=_meta_in_openapi(),
)
def upload(
    request: HttpRequest,
    files: Annotated[list[UploadedFile], File(min_length=1, description="the run's log files")],
    meta: Annotated[str, Form(description=META_HELP)] = "{}",
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", pattern=r"^[\x21-\x7e]{1,200}$",
        description="a retry with the same key gives back the run of the first try",
    )] = None,
) -> Status:
    """Upload the log files of one run (multipart: `files`, one or more, `.gz` is fine; `meta`).

    202 with the new run, queued for parsing. The same content (every file's sha256) or the same
    `Idempotency-Key` in the same project answers 200 with the existing run. Over
    RUNLENS_MAX_UPLOAD_BYTES: 413, nothing stored.
    """
    refused = getattr(request, "upload_refused", None)
    if refused:
        raise services.ServiceError(413, "upload_too_large", refused)
    unexpected = sorted((set(request.POST) - {"meta"}) | (set(request.FILES) - {"files"}))
    if unexpected:
        raise services.ServiceError(422, "unexpected_fields",
                                    f"unexpected form fields {unexpected}: send `files` and `meta` only")
    info = _meta(meta)
    try:
        run, created = services.register_upload(
            request.auth, [services.IncomingFile(f.name or "upload.log", f, f.size) for f in files],
            name=info.name, project=info.project, tags=info.tags, notes=info.notes,
            meta=info.stored(),
            steps=info.steps, nccl_env=info.nccl_env, idempotency_key=idempotency_key or "", dedupe=True,
        )
    except storage.StorageError as e:
        raise _refused(e) from None
    return _created(request, run, created)


@router.post(
    "/runs/register",
    response={202: RunCreatedOut, 200: RunCreatedOut, errors(400, 403, 415, 422): ErrorOut},
)
def register(request: HttpRequest, payload: RegisterIn) -> Status:
    """Create a run from a log file on the server, read in place (project admins only).

    The path must resolve, symlinks followed, to a regular file under one of RUNLENS_LOG_ROOTS;
    otherwise 400 with a stable code (`path_outside_allowed_roots`, `path_not_readable`,
    `not_a_regular_file`, `too_large`, `registration_disabled`). The same path again gives back
    its run (200).
    """
    try:
        run, created = services.register_path(
            request.auth, payload.path, name=payload.name, project=payload.project, tags=payload.tags,
            notes=payload.notes, meta=payload.stored(),
            steps=payload.steps, nccl_env=payload.nccl_env,
        )
    except storage.StorageError as e:
        raise _refused(e, size_status=400) from None
    return _created(request, run, created)


@router.post("/runs/{int:run_id}/refresh", response={200: RefreshOut, errors(400, 404, 422): ErrorOut})
def refresh(request: HttpRequest, run_id: int = RunId) -> dict:
    """Read a registered log again (it has grown): if its content changed, the run is parsed again."""
    run = get_run_for_user(request, run_id)
    try:
        changed = services.refresh_registered(run)
    except storage.StorageError as e:
        raise _refused(e, size_status=400) from None
    run.refresh_from_db()
    return {"id": run.id, "status": run.status, "changed": changed}


@router.get("/client/runlens-upload.py", auth=None, response={200: None},
            openapi_extra={"responses": {"200": {"description": "the client, a Python 3 script",
                                                 "content": {"text/x-python": {"schema": {"type": "string"}}}}}})
def client_script(request: HttpRequest) -> HttpResponse:
    """runlens-upload, the one-file standard-library CI client, so a runner needs only Python and
    curl: `curl -fsS $RUNLENS_URL/api/v1/client/runlens-upload.py -o runlens-upload.py`. No token:
    the client holds no secret, and CI fetches it before it has one in hand."""
    response = HttpResponse(CLIENT.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="runlens-upload.py"'
    return response
