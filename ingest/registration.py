"""Getting logs in, and who may: register uploads and server paths, refresh a registered log,
delete a run, find or create the project an upload names (STYLE 4: every such write is a
function here). The parse itself, once a log file is queued, is ingest/services.py's.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from ingest import storage
from ingest.parsers import trace as trace_parser
from ingest.services import enqueue_run, lock_stores, requeue_run
from runs.layout import ROLES
from runs.models import LogFile, Membership, Project, Run, Status
from runs.names import clean_name, name_key
from runs.permissions import Role, has_role, require_role, role_in
from runs.services import ServiceError, content_sha256, declare_values, set_tags


@dataclass
class IncomingFile:
    name: str
    stream: BinaryIO
    size: int




PROJECT_NAME_MAX = 100  # Project.name's max_length


def project_for(user: User, name: str | None, create: bool = False) -> Project:
    """The project an upload goes to: the named one, if the user may upload to it (editor or admin).

    A name that is not one of the user's projects is 404 `unknown_project`, with the same status
    and message whether someone else has that name or nobody does (names are not probed). With
    `create`, a name nobody has becomes a new project, the user its admin; a name someone else has
    is 409 (creating reveals a taken name, as any sign-up with unique names does). With no name:
    the user's first project they may upload to; none is an error (no silent private project).
    """
    if not name:
        membership = (Membership.objects.filter(user=user, role__in=[Role.EDITOR, Role.ADMIN])
                      .select_related("project").order_by("id").first())
        if membership:
            return membership.project
        raise ServiceError(400, "no_project", "you are in no project you may upload to: name one "
                           "(--project NAME --create-project, or meta.project and meta.create_project: true)")
    # Names are matched by their look (runs/names.py): `Team-B-Private` is the project `team-b-private`,
    # and creating `team-b-privatе` (Cyrillic е) beside it is the same 409 as creating it again.
    key = name_key(name)
    project = Project.objects.filter(name_key=key).first()
    role = role_in(user, project) if project else None
    if project is None or role is None:
        if not create:
            raise ServiceError(404, "unknown_project", f"you are in no project named {name!r}: check the name, "
                               "or create it (--create-project, meta.create_project: true)")
        clean = clean_name(name)
        if not 1 <= len(clean) <= PROJECT_NAME_MAX:
            raise ServiceError(422, "bad_project_name", f"a project name has 1 to 100 characters once "
                               f"normalised (NFKC, spaces trimmed): {clean!r}")
        with transaction.atomic():
            project, created = Project.objects.get_or_create(name_key=key, defaults={"name": clean})
            if not created and role_in(user, project) is None:
                raise ServiceError(409, "project_name_taken",
                                   f"a project named {name!r}, or one that looks the same, exists and you are "
                                   "not in it: choose another name, or ask its admin to invite you")
            if created:
                Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
        return project
    require_role(user, project, Role.EDITOR)  # viewers read and annotate, they do not upload
    return project


def register_upload(
    user: User,
    files: Iterable[IncomingFile],
    *,
    name: str = "",
    project: str | None = None,
    tags: Iterable[str] = (),
    notes: str = "",
    meta: dict | None = None,
    steps: int | None = None,
    nccl_env: Mapping[str, str | int] | None = None,
    idempotency_key: str = "",
    roles: Mapping[str, str] | None = None,
    create_project: bool = False,
) -> tuple[Run, bool]:
    """Store uploaded files under the data dir and create a queued run that will parse them.

    Returns (run, created). Every caller (browser, API, CI client, `ingest` command) dedupes the
    same way: an upload whose content (the sha256 of every file) or Idempotency-Key matches a run
    of the same project that did not fail gives back that run, stores nothing and `created` is
    False. `nccl_env` becomes declared NCCL settings of the run and `steps` a step count set by
    the uploader; `roles` ({file name: role}) corrects who wrote a file. `project`, `create_project`:
    see `project_for`.
    """
    files = list(files)
    if not files:
        raise ValueError("no files given")
    file_roles(roles, [f.name for f in files])
    proj = project_for(user, project, create_project)
    if idempotency_key:
        existing = _retryable(Run.objects.filter(project=proj, meta__idempotency_key=idempotency_key)).first()
        if existing:
            return existing, False
    stored = []
    committed = False
    try:
        for f in files:
            try:
                rel, sha, size = storage.store_upload(f.stream, f.size)
            except storage.StorageError as e:
                raise storage.StorageError(e.code, f"{f.name}: {e.message}") from None
            stored.append((f.name, rel, sha, size))
        content = content_sha256(sha for _, _, sha, _ in stored)
        with transaction.atomic():
            # One upload per project at a time decides "new or seen before" (RELIABILITY U8).
            Project.objects.select_for_update().get(id=proj.id)
            existing = _same_upload(proj, content, idempotency_key)
            if existing is None:
                run_meta = {**(meta or {}), "content_sha256": content}
                if idempotency_key:
                    run_meta["idempotency_key"] = idempotency_key
                run = Run.objects.create(
                    project=proj, name=(name or files[0].name)[:200], created_by=user, notes=notes,
                    meta=run_meta,
                )
                set_tags(run, tags)
                roles = roles or {}
                LogFile.objects.bulk_create(
                    LogFile(run=run, original_name=original[:255], path=rel, sha256=sha, size=size,
                            role=roles.get(original, ""), kind=file_kind(rel, False))
                    for original, rel, sha, size in stored
                )
                declare_values(run, user, steps, nccl_env, "upload metadata")
                enqueue_run(run)
        committed = True
    except BaseException:
        # Nothing half-written: no stored bytes without the rows that point at them. Once the
        # rows are committed the files are the run's, whatever happens after.
        if not committed:
            _discard(stored)
        raise
    if existing is not None:
        _discard(stored)
        return existing, False
    return run, True


def file_kind(path: str, registered: bool) -> str:
    """A profiler trace or a log, by the file's first bytes, whatever its name says (a trace is
    read by ingest/parsers/trace.py, never by the log parsers)."""
    with storage.open_log(path, registered) as f:
        head = f.read(trace_parser.HEAD_BYTES)
    if head[:2] == b"\x1f\x8b":  # a registered .gz (uploads are stored decompressed)
        try:
            head = zlib.decompressobj(31).decompress(head, trace_parser.HEAD_BYTES)
        except zlib.error:
            return LogFile.Kind.LOG  # the log parse says what is wrong with it
    return LogFile.Kind.TRACE if trace_parser.is_trace(head) else LogFile.Kind.LOG


def file_roles(roles: Mapping[str, str] | None, names: list[str]) -> None:
    """Check `roles` {file name: role}, a person's word on who wrote a file (runs/layout.py ROLES)."""
    for name, role in (roles or {}).items():
        if name not in names:
            raise ServiceError(400, "unknown_file", f"roles names {name!r}, which is not one of the uploaded files")
        if role not in ROLES:
            raise ServiceError(422, "bad_roles", f"{role!r} is not a role ({', '.join(ROLES)})")


def _discard(stored: list[tuple[str, str, str, int]]) -> None:
    for _, rel, _, _ in stored:
        (settings.DATA_DIR / rel).unlink(missing_ok=True)


def _retryable(runs):
    """Runs an upload retry may be answered with: a failed run does not swallow a new try of
    the same content (its stored file may be what failed)."""
    return runs.exclude(status=Status.FAILED)


def _same_upload(project: Project, content: str, idempotency_key: str) -> Run | None:
    runs = _retryable(Run.objects.filter(project=project))
    if idempotency_key:
        found = runs.filter(meta__idempotency_key=idempotency_key).first()
        if found:
            return found
    return runs.filter(meta__content_sha256=content).order_by("id").first()








def register_path(
    user: User,
    path: str,
    *,
    name: str = "",
    project: str | None = None,
    tags: Iterable[str] = (),
    notes: str = "",
    meta: dict | None = None,
    steps: int | None = None,
    nccl_env: Mapping[str, str | int] | None = None,
    roles: Mapping[str, str] | None = None,
    create_project: bool = False,
) -> tuple[Run, bool]:
    """Create a run from a log file on the server, left where it is (RELIABILITY 2.1).

    Only project admins (or superusers) may, and only under settings.LOG_ROOTS. The same file
    registered again in the same project gives back its run. Returns (run, created).
    """
    proj = _admin_project(user, project, create_project)
    real = storage.resolve_registered(path)
    file_roles(roles, [real.name])
    digest = storage.registered_digest(str(real))
    with transaction.atomic():
        Project.objects.select_for_update().get(id=proj.id)
        seen = LogFile.objects.filter(run__project=proj, registered=True, path=str(real)).first()
        if seen:
            return seen.run, False
        run = Run.objects.create(
            project=proj, name=(name or real.name)[:200], created_by=user, notes=notes,
            meta={**(meta or {}), "registered_path": str(real)},
        )
        set_tags(run, tags)
        LogFile.objects.create(run=run, original_name=real.name[:255], path=str(real), registered=True,
                               sha256=digest.sha256, size=digest.size, head_sha256=digest.head_sha256,
                               kind=file_kind(str(real), True),
                               role=(roles or {}).get(real.name, ""))
        declare_values(run, user, steps, nccl_env, "registration")
        enqueue_run(run)
    return run, True


def _admin_project(user: User, name: str | None, create: bool = False) -> Project:
    """The project a user may register paths in: one they administer (any, for superusers).

    Needs the `runs.register_path` permission too (RELIABILITY R8: an explicit grant).
    """
    if not user.has_perm("runs.register_path"):
        raise ServiceError(403, "not_allowed_to_register",
                           "registering server paths needs the 'register_path' permission (ask an admin)")
    admin = Membership.objects.filter(user=user, role=Membership.Role.ADMIN).select_related("project")
    if name:
        project = Project.objects.filter(name_key=name_key(name)).first()
        if project and (user.is_superuser or admin.filter(project=project).exists()):
            return project
        if project is None and user.is_superuser:
            return project_for(user, name, create)
        raise ServiceError(403, "not_project_admin",
                           f"registering paths in project {name!r} needs its admin role")
    first = admin.order_by("id").first()
    if first:
        return first.project
    if user.is_superuser:
        return project_for(user, None)
    raise ServiceError(403, "not_project_admin", "registering paths needs the admin role in a project")


@dataclass
class Refresh:
    changed: bool  # a file grew (or `replace` was asked): the run is parsed again
    kept: list[str]  # why files were not read again (rotated or truncated): their old rows stay


def refresh_registered(user: User, run: Run, replace: bool = False) -> Refresh:
    """Re-read a run's registered logs for an editor of its project; if one has grown, parse the
    run again.

    A log that was rotated or truncated since (it shrank, or bytes it had changed: its first ones
    or any before its old end) is not read again: replacing the rows would lose the windows it
    had. Its old rows stay and `LogFile.refresh_warning` says why (run page, API), until a refresh
    with `replace` reads the file as it is now. The file goes through the same checks as at
    registration.
    """
    require_role(user, run.project_id, Role.EDITOR)
    logfiles = list(run.logfiles.filter(registered=True))
    if not logfiles:
        raise ServiceError(400, "not_registered", "this run has no registered log files (it was uploaded)")
    changed = False
    kept = []
    for lf in logfiles:
        digest = storage.registered_digest(lf.path, prefix=lf.size)
        if digest.sha256 == lf.sha256 and digest.size == lf.size:
            continue
        why = None if replace else _not_just_grown(lf, digest)
        if why:
            kept.append(why)
            LogFile.objects.filter(id=lf.id).update(refresh_warning=why)
            continue
        LogFile.objects.filter(id=lf.id).update(sha256=digest.sha256, size=digest.size,
                                                head_sha256=digest.head_sha256, refresh_warning="")
        changed = True
    if changed:
        requeue_run(run)
    return Refresh(changed, kept)


def _not_just_grown(lf: LogFile, now: storage.Digest) -> str | None:
    """Why a registered log is no longer its old self plus new lines, or None if it only grew."""
    when = timezone.now().strftime("%Y-%m-%d %H:%M UTC")
    keep = "the rows read before are kept; refresh with replace to read the file as it is now"
    if now.size < lf.size:
        return (f"{lf.original_name}: at {when} the file was {now.size} bytes, smaller than the {lf.size} "
                f"read before (truncated or rotated): {keep}")
    if now.prefix_sha256 == lf.sha256:
        return None
    if lf.head_sha256 and now.old_head_sha256 != lf.head_sha256:
        return (f"{lf.original_name}: at {when} its first bytes were not the ones read before "
                f"(rotated or replaced): {keep}")
    return f"{lf.original_name}: at {when} bytes it had before were changed (replaced or rewritten in place): {keep}"


def delete_run(user: User, run: Run) -> None:
    """Delete a run with its rows and its stored files (registered files are not ours: kept).

    Allowed to a project admin, or the run's creator while an editor of the project.
    """
    own = run.created_by_id == user.pk and has_role(user, run.project_id, Role.EDITOR)
    if not (own or has_role(user, run.project_id, Role.ADMIN)):
        raise ServiceError(403, "not_allowed", "only a project admin, or its creator as an editor, may delete a run")
    stored = list(run.logfiles.filter(registered=False).values_list("path", flat=True))
    with transaction.atomic():
        # A parse storing rows holds its log file's store lock (ingest.services.lock_stores, not
        # the row, which its heartbeat updates): wait for it, then its rows are deleted too (the
        # bulk row tables have no database FK to refuse them, see runs.models).
        lock_stores(list(LogFile.objects.filter(run=run).values_list("id", flat=True)))
        list(LogFile.objects.select_for_update().filter(run=run).values_list("id", flat=True))
        run.delete()
        transaction.on_commit(lambda: storage.remove_stored(stored))
