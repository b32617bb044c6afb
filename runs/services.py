"""Writes that edit runs and their summaries (STYLE 4): tags, annotations, a person's values,
and the run summary recomputed from stored rows.

Getting logs in (register, store, parse, reconcile) lives in ingest/services.py, which calls
`refresh_run` when a parse ends; this module never touches stored files or the queue.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from itertools import islice

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from ingest.parsers import parse_lines
from ingest.parsers import records as rec
from runs import columns, digest, queries, traces
from runs.layout import ROLES
from runs.models import (
    Annotation,
    AnnotationEdit,
    CollectiveIsland,
    CollectiveResult,
    Invitation,
    LogFile,
    Membership,
    NcclSetting,
    Project,
    Run,
    RunEdit,
    Status,
    Tag,
    collective_values,
)
from runs.nccl import NCCL_KEY, PERSON, is_documented
from runs.permissions import Role, has_role, require_role
from runs.queries import trace_of
from runs.series import SERIES_VERSION, fresh_series
from runs.summary import BLOCKS_KEY, DRAFT_TYPES_KEY, OMITTED_KEY, person_vs_logs, renew_nccl, summarize_run


def content_sha256(file_shas: Iterable[str]) -> str:
    """The identity of a run's content: sha256 over its files' sha256 digests, sorted."""
    return hashlib.sha256("\n".join(sorted(file_shas)).encode()).hexdigest()


class ServiceError(Exception):
    """A request a service refuses: `code` is stable for the API, `status` is its HTTP answer."""

    def __init__(self, status: int, code: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.line = line


# Settings whose disagreement between two files of one run mean they are not one experiment.
CONFLICT_KEYS = frozenset({"spec.steps", "spec.algorithm", "model", "tp_size", "engine", "gpu"})


def declare_values(run: Run, user: User, steps: int | None, nccl_env: Mapping[str, str | int] | None,
             how: str) -> None:
    """Values a person gave for a new run (upload metadata, registration): its step count and its
    declared NCCL settings."""
    now = timezone.now().isoformat(timespec="seconds")
    if steps is not None:
        run.steps = steps
        run.steps_source = f"set by {user.get_username()} at {now} ({how})"[:300]
        run.steps_by_person = True
        run.save(update_fields=["steps", "steps_source", "steps_by_person"])
    if nccl_env:
        _declare_nccl(run, nccl_env, how)


def _declare_nccl(run: Run, pairs: Mapping[str, str | int], source: str) -> None:
    for key in pairs:
        if not NCCL_KEY.match(key):
            raise ServiceError(422, "bad_nccl_key", f"{key!r} is not an NCCL variable name (NCCL_...)")
    NcclSetting.objects.bulk_create(
        NcclSetting(run=run, logfile=None, line=None, key=key, value=str(value)[:512],
                    kind=NcclSetting.Kind.DECLARED, source=source[:200])
        for key, value in pairs.items()
    )


def can_pin(user: User, run: Run) -> bool:
    """Project admins and superusers choose the project's pinned baseline."""
    return user.is_superuser or Membership.objects.filter(
        project_id=run.project_id, user=user, role=Membership.Role.ADMIN).exists()


def pin_baseline(user: User, run: Run, pinned: bool = True) -> Project:
    """Make the run its project's pinned baseline (CI verdicts compare against it), or unpin it.

    Project admins (or superusers) only: it changes every later CI verdict of the project.
    """
    if not can_pin(user, run):
        raise ServiceError(403, "not_allowed", "only a project admin may pin the project's baseline")
    if pinned and run.status != Status.READY:
        raise ServiceError(409, "not_ready", f"run {run.id} is {run.status}: only a ready run can be the baseline")
    # The project row read afresh and locked: `run.project` may be older than a pin made since,
    # and unpinning a run that is not the pinned one must leave that pin alone.
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=run.project_id)
        if pinned:
            project.pinned_baseline = run
        elif project.pinned_baseline_id == run.id:
            project.pinned_baseline = None
        else:
            return project
        project.save(update_fields=["pinned_baseline"])
    return project


# Draft steps per cycle a person may set: speculative decoding runs 1 to a handful; 16 is generous.
MIN_STEPS, MAX_STEPS = 1, 16


def add_annotation(user: User, run: Run, kind: str, body: str, *, parent: int | None = None,
                   window_from: int | None = None, window_to: int | None = None, phase: str = "") -> Annotation:
    """Annotate a run. `nccl`: KEY=VALUE lines (`env | grep NCCL`) become declared NCCL settings;
    `steps`: an integer becomes the run's step count. Both win over what the logs say, so they
    need the editor role; a note (markdown, maybe a reply, maybe anchored to windows) a viewer's.
    """
    require_role(user, run.project_id, Role.VIEWER if kind == Annotation.Kind.NOTE else Role.EDITOR)
    anchor = _anchor(window_from, window_to)
    if parent is not None and not Annotation.objects.filter(id=parent, run=run).exists():
        raise ServiceError(422, "bad_parent", f"annotation {parent} is not on run {run.id}")
    nccl: dict[str, str] = {}
    steps = None
    if kind == Annotation.Kind.NCCL:
        nccl = parse_nccl_lines(body)
    elif kind == Annotation.Kind.STEPS:
        try:
            steps = int(body.strip())
        except ValueError:
            raise ServiceError(422, "bad_steps", "a steps annotation is one integer, e.g. 3") from None
        if not MIN_STEPS <= steps <= MAX_STEPS:
            raise ServiceError(422, "bad_steps", f"steps must be between {MIN_STEPS} and {MAX_STEPS} draft steps")
    elif kind != Annotation.Kind.NOTE:
        raise ServiceError(422, "bad_kind", f"kind must be one of {', '.join(Annotation.Kind.values)}")
    with transaction.atomic():
        annotation = Annotation.objects.create(run=run, author=user, kind=kind, body=body, parent_id=parent,
                                               window_from=anchor[0], window_to=anchor[1], phase=phase[:100])
        who = f"{user.get_username()} at {annotation.created_at.isoformat(timespec='seconds')}"
        if nccl:
            _declare_nccl(run, nccl, f"annotation by {who}")
            refresh_nccl(run.id)
        if steps is not None:
            Run.objects.filter(id=run.id).update(
                steps=steps, steps_source=f"set by {who}"[:300], steps_by_person=True,
                person_conflict=bool(person_vs_logs(run.parsed or {}, steps, True)))
    # Not refused (NCCL grows new knobs), but said: a misspelt name tunes nothing.
    annotation.warnings = [
        f"{key} is not an NCCL parameter runlens knows: kept as declared, but check its spelling"
        for key in nccl if not is_documented(key)
    ]
    return annotation


def _anchor(window_from: int | None, window_to: int | None) -> tuple[int | None, int | None]:
    """A window range in order; one end alone anchors to that one window."""
    if window_from is None and window_to is None:
        return None, None
    low = window_from if window_from is not None else window_to
    high = window_to if window_to is not None else window_from
    assert low is not None and high is not None
    if low < 0 or high < 0 or max(low, high) > 10_000_000:
        raise ServiceError(422, "bad_window", "windows are numbers from 0 to 10,000,000")
    return min(low, high), max(low, high)


def _may_change(user: User, annotation: Annotation) -> None:
    """The author (still in the project) or a project admin may edit or delete an annotation."""
    if annotation.author_id == user.pk and has_role(user, annotation.run.project_id, Role.VIEWER):
        return
    if not has_role(user, annotation.run.project_id, Role.ADMIN):
        raise ServiceError(403, "not_author", "only its author or a project admin may change an annotation")


def edit_annotation(user: User, annotation: Annotation, body: str) -> Annotation:
    """Replace a note's text, keeping the old text in its history. NCCL and steps annotations
    were applied to the run when made: they are not edited (add a new one)."""
    _may_change(user, annotation)
    if annotation.kind != Annotation.Kind.NOTE or annotation.deleted_at:
        raise ServiceError(422, "not_editable", "only notes that are not deleted can be edited")
    if body != annotation.body:
        with transaction.atomic():
            AnnotationEdit.objects.create(annotation=annotation, body=annotation.body, edited_by=user)
            annotation.body = body
            annotation.edited_at = timezone.now()
            annotation.save(update_fields=["body", "edited_at"])
    return annotation


def delete_annotation(user: User, annotation: Annotation) -> None:
    """Delete an annotation. One that has replies keeps its place in the thread, text gone."""
    _may_change(user, annotation)
    if annotation.replies.exists():
        with transaction.atomic():
            AnnotationEdit.objects.create(annotation=annotation, body=annotation.body, edited_by=user)
            annotation.body = ""
            annotation.deleted_at = timezone.now()
            annotation.save(update_fields=["body", "deleted_at"])
    else:
        annotation.delete()


def invitee_of(identifier: str) -> str:
    """How an invitation keeps whom it is for: a username as typed, an e-mail address in lower case."""
    ident = identifier.strip()
    return ident.lower() if "@" in ident else ident


def _valid_role(role: str) -> str:
    if role not in Role.values:
        raise ServiceError(422, "bad_role", f"role must be one of {', '.join(Role.values)}")
    return role


def invite(actor: User, project: Project, identifier: str, role: str) -> Invitation:
    """A project admin invites a username or e-mail address with a role; they join when they accept.

    The answer is the same whether or not such an account exists: nothing is looked up but the
    project's own members (whom the admin sees anyway), so inviting neither confirms an account nor
    shows its e-mail, and puts nobody in a project without their consent."""
    require_role(actor, project, Role.ADMIN)
    _valid_role(role)
    invitee = invitee_of(identifier)
    if not invitee:
        raise ServiceError(422, "bad_invitee", "name a username or an e-mail address")
    members = Membership.objects.filter(project=project)
    if members.filter(Q(user__username=invitee) | Q(user__email__iexact=invitee) if "@" in invitee
                      else Q(user__username=invitee)).exists():
        raise ServiceError(409, "already_member", f"{invitee} is already in {project.name}")
    invitation, created = Invitation.objects.get_or_create(project=project, invitee=invitee,
                                                           defaults={"role": role, "invited_by": actor})
    if not created:
        raise ServiceError(409, "already_invited", f"{invitee} is already invited to {project.name}")
    return invitation


def _my_invitation(user: User, invitation_id: int) -> Invitation:
    invitation = queries.invitations_for(user).select_for_update(of=("self",)).filter(id=invitation_id).first()
    if invitation is None:
        raise ServiceError(404, "no_such_invitation", f"no invitation {invitation_id} for you")
    return invitation


def accept_invitation(user: User, invitation_id: int) -> Membership:
    """The invitee joins the project with the invitation's role (a member already keeps their role)."""
    with transaction.atomic():
        invitation = _my_invitation(user, invitation_id)
        membership, _ = Membership.objects.get_or_create(project=invitation.project, user=user,
                                                         defaults={"role": invitation.role})
        invitation.delete()
    return membership


def decline_invitation(user: User, invitation_id: int) -> None:
    with transaction.atomic():
        _my_invitation(user, invitation_id).delete()


def withdraw_invitation(actor: User, project: Project, invitation_id: int) -> None:
    """A project admin takes back a pending invitation."""
    require_role(actor, project, Role.ADMIN)
    deleted, _ = Invitation.objects.filter(project=project, id=invitation_id).delete()
    if not deleted:
        raise ServiceError(404, "no_such_invitation", f"no pending invitation {invitation_id} in {project.name}")


def set_role(actor: User, project: Project, username: str, role: str) -> Membership:
    """An admin changes a member's role; the project keeps at least one admin."""
    require_role(actor, project, Role.ADMIN)
    _valid_role(role)
    with transaction.atomic():
        membership = _membership(project, username)
        if membership.role == Role.ADMIN and role != Role.ADMIN:
            _keep_an_admin(project)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def remove_member(actor: User, project: Project, username: str) -> None:
    """An admin removes a member (any member may leave); the project keeps at least one admin."""
    if actor.get_username() != username:
        require_role(actor, project, Role.ADMIN)
    with transaction.atomic():
        membership = _membership(project, username)
        if membership.role == Role.ADMIN:
            _keep_an_admin(project)
        membership.delete()


def _membership(project: Project, username: str) -> Membership:
    membership = (Membership.objects.select_for_update().select_related("user")
                  .filter(project=project, user__username=username).first())
    if membership is None:
        raise ServiceError(404, "not_a_member", f"{username!r} is not in {project.name}")
    return membership


def _keep_an_admin(project: Project) -> None:
    admins = Membership.objects.select_for_update().filter(project=project, role=Role.ADMIN)
    if len(admins) <= 1:
        raise ServiceError(409, "last_admin", "a project keeps at least one admin: make someone else admin first")


def parse_nccl_lines(text: str) -> dict[str, str]:
    """`env | grep NCCL` output or KEY=VALUE lines -> {NCCL_X: value}, read by the launch_env
    parser (so a pasted `export NCCL_X=Y` means what it means in a launch log).

    Blank lines and `#` comments are skipped, and so are other variables that grep let through
    (`LD_LIBRARY_PATH=/opt/nccl/lib`); a line that is not an assignment is an error with its number.
    """
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line and not line.startswith("#") and "=" not in line:
            raise ServiceError(422, "bad_nccl_line",
                               f"line {number}: expected NCCL_NAME=value, got {line[:80]!r}", line=number)
    pairs = {v.key: v.value for v in parse_lines(lines, formats=["launch_env"]).nccl if v.kind == "declared"}
    for key in pairs:
        if not NCCL_KEY.match(key):
            raise ServiceError(422, "bad_nccl_key", f"{key!r} is not an NCCL variable name (NCCL_...)")
    if not pairs:
        raise ServiceError(422, "no_nccl_values", "no NCCL_NAME=value line found")
    return pairs


def set_tags(run: Run, tags: Iterable[str]) -> list[str]:
    """Give a new run its tags (upload, registration, split); returns them sorted. A person
    replacing the tags of an existing run goes through `replace_tags`."""
    names = sorted({t.strip()[:64] for t in tags if t and t.strip()})
    run.tags.set([Tag.objects.get_or_create(name=n)[0] for n in names])
    return names


def replace_tags(user: User, run: Run, tags: Iterable[str]) -> RunEdit | None:
    """Replace all of a run's tags (editors and admins: PermissionDenied otherwise), recording
    who changed them from what to what; None when nothing changed (nothing recorded)."""
    require_role(user, run.project_id, Role.EDITOR)
    with transaction.atomic():
        Run.objects.select_for_update().filter(id=run.id).first()  # two editors: one after the other
        before = sorted(run.tags.values_list("name", flat=True))
        after = set_tags(run, tags)
        if before == after:
            return None
        return RunEdit.objects.create(run=run, what=RunEdit.What.TAGS, before=before, after=after, edited_by=user)


def _run_header(run: Run, files: list[LogFile]) -> rec.ParseResult:
    """A run's formats, per-file process tables and settings, and warnings: all but its rows."""
    result = rec.ParseResult()
    result_blocks: list[dict] = []
    omitted: dict = {}
    draft_types: dict[str, dict] = {}
    for lf in files:
        for f in lf.formats:
            result.add_format(f)
        result.files[lf.id] = {
            "name": lf.original_name, "role": lf.role, **(lf.processes or {}),
            "settings": {k: s["value"] for k, s in lf.settings.items()},
        }
        for key, s in lf.settings.items():
            if key == BLOCKS_KEY:  # every file's result blocks, each with the file it is in
                result_blocks += [{**b, "logfile": lf.id} for b in s["value"]]
                continue
            if key == OMITTED_KEY:  # blocks counted, not listed: the run's count is the files' sum
                omitted = {"count": omitted.get("count", 0) + s["value"]["count"],
                           "first_line": omitted.get("first_line", s["value"]["first_line"])}
                continue
            if key == DRAFT_TYPES_KEY:  # counters of separate servers add up (pooled by totals)
                for name, row in s["value"].items():
                    mine = draft_types.setdefault(name, {"type": name})
                    for field, value in row.items():
                        if isinstance(value, int | float) and not isinstance(value, bool):
                            mine[field] = round(mine.get(field, 0) + value, 6)
                continue
            seen = result.settings.get(key)
            if seen is not None and str(seen.value) != str(s["value"]) and key in CONFLICT_KEYS:
                result.warnings.append(rec.Issue(s["line"], (
                    f"{lf.original_name}: {key} is {s['value']} here but {seen.value} in an earlier file "
                    f"(line {seen.line}); the run uses {seen.value}")))
            result.set(key, s["value"], s["line"], s["source"])
        for w in lf.warnings:
            result.warnings.append(rec.Issue(w["line"], f"{lf.original_name}: {w['message']}"))
    if result_blocks:
        result.set(BLOCKS_KEY, result_blocks, result_blocks[0]["line"], "runs")
    if omitted:
        result.set(OMITTED_KEY, omitted, omitted["first_line"], "runs")
    if draft_types:
        result.set(DRAFT_TYPES_KEY, draft_types, 0, "runs")
    return result


def _ready_files(run: Run) -> list[LogFile]:
    # Profiler traces have no rows or digest: their breakdown is `parsed["trace"]` (trace_of).
    return list(run.logfiles.filter(status=Status.READY, kind=LogFile.Kind.LOG).order_by("id"))


def set_trace_phases(user: User, run: Run, mapping: Mapping[str, str]) -> RunEdit | None:
    """A person's word on which trace ranges are which phases ({range name: phase, "" = not a
    phase}; names left out go back to runlens's own guess). Editors and admins; recorded as a
    RunEdit, None when nothing changed. The breakdown is redone from the stored traces, not reread."""
    require_role(user, run.project_id, Role.EDITOR)
    for name, phase in mapping.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise ServiceError(422, "bad_trace_phases", f"range name {name!r}: 1-200 characters")
        if not isinstance(phase, str) or len(phase) > 100:
            raise ServiceError(422, "bad_trace_phases", f"phase of {name!r}: a name of at most 100 characters, "
                               "or \"\" for a range that is no phase")
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)
        old = dict(locked.trace_phases or {})
        new = {k: v.strip() for k, v in mapping.items()}
        if old == new:
            return None
        locked.trace_phases = new
        # As the edit history shows them (RunEditOut: lists of text): "range=phase", "range=" for none.
        before, after = (sorted(f"{k}={v}" for k, v in m.items()) for m in (old, new))
        trace = trace_of(locked)
        if trace is not None and locked.parsed:
            locked.parsed = {**locked.parsed, "trace": traces.summary(trace)}
        locked.save(update_fields=["trace_phases", "parsed", "updated_at"])
        run.trace_phases, run.parsed = locked.trace_phases, locked.parsed
        return RunEdit.objects.create(run=run, what=RunEdit.What.TRACE_PHASES, before=before, after=after,
                                      edited_by=user)


BATCH_ROWS = 10_000  # rows a database read fetches at a time where it reads them all


def _add_nccl(run: Run, result: rec.ParseResult) -> None:
    # NCCL values include annotations (no log file): the analysis sees every declaration.
    # Rows without a log file (annotations, upload metadata) last on every database: the last
    # declaration wins in the analysis, and a person's word wins over the logs.
    # Tuples read a batch at a time, not model instances all cached by the queryset: a 128 MB
    # log of NCCL start-up lines has millions of these rows (the worker's refresh peaked on them).
    found = NcclSetting.objects.filter(run=run).order_by(F("logfile_id").asc(nulls_last=True), "line", "id")
    # Their texts repeat (a few keys, values and processes): one string object each, not one a row.
    texts: dict[str, str] = {}
    one = texts.setdefault
    for key, value, kind, line, source, rank, logfile_id, process in found.values_list(
            "key", "value", "kind", "line", "source", "rank", "logfile_id", "process").iterator(chunk_size=BATCH_ROWS):
        # A person's values (no log file) count for every launch of the run (runs.nccl).
        result.nccl.append(rec.NcclValue(one(key, key), one(value, value), one(kind, kind), line or 0,
                                         one(source, source), one(rank, rank), logfile_id,
                                         one(process, process) if logfile_id else PERSON))


# A collective record's fields (rec.Collective's, the log file's id for its logfile).
RECORD_FIELDS = ("op", "size_bytes", "count", "dtype", "redop", "root", "time_us", "algbw_gbs", "busbw_gbs", "wrong",
                 "in_place", "line", "process", "logfile_id")


def run_result(run: Run) -> rec.ParseResult:
    """Rebuild one ParseResult from all of a run's stored rows (windows of later files follow on).

    Every row as an object: for tests and tools only. Summaries read the stored columns a
    block at a time (run_rows); this is the reference they are checked against.
    """
    files = _ready_files(run)
    result = _run_header(run, files)
    offset = 0
    for lf in files:
        last = offset
        # Parsed rows always have a line (only annotation NCCL rows lack one); 0 is "no line".
        for name, ms, pct, window, line, source, process in columns.file_rows(lf, columns.PHASE).select(
                "name", "ms", "pct", "window", "line", "source", "process").iter_rows():
            result.phases.append(rec.Phase(name, ms, pct, window + offset, line or 0, source, process, lf.id))
            last = max(last, window + offset)
        for name, value, window, line, source, rank, process in columns.file_rows(lf, columns.METRIC).select(
                "name", "value", "window", "line", "source", "rank", "process").iter_rows():
            result.metrics.append(rec.Metric(name, value, window + offset, line or 0, source, rank, process, lf.id))
            last = max(last, window + offset)
        offset = last
    _add_nccl(run, result)
    for c in collective_values(CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line", "id"),
                               *RECORD_FIELDS):
        result.collectives.append(rec.Collective(
            c["op"], c["size_bytes"], c["count"], c["dtype"], c["redop"], c["root"], c["time_us"], c["algbw_gbs"],
            c["busbw_gbs"], c["wrong"], c["in_place"], c["line"] or 0, c["process"], c["logfile_id"]))
    return result


def run_rows(run: Run, files: list[LogFile]) -> digest.Rows:
    """The bulky rows of a run's ready files as the summary reads them: the stored columns
    regrouped into a spill on disk (the summary loads one group's columns at a time), windows of
    later files following on, and the collectives as a few aggregates and the first
    COLLECTIVES_KEPT rows (SQL)."""
    spool = settings.DATA_DIR / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    rows = columns.summary_rows(files, digest.Spill(spool))
    collectives = CollectiveResult.objects.filter(run=run)
    # A stored row holds up to two sides: the first COLLECTIVES_KEPT rows hold the sides kept.
    kept = collectives.order_by("logfile_id", "line", "id")[:digest.COLLECTIVES_KEPT]
    rows.collectives = [digest.collective_dict(*c.values()) for c in islice(collective_values(
        kept, "op", "size_bytes", "time_us", "algbw_gbs", "busbw_gbs", "in_place"), digest.COLLECTIVES_KEPT)]
    rows.collectives_total = collectives.aggregate(
        n=Count("id") + Count("id", filter=Q(sides=CollectiveResult.OUT_OF_PLACE | CollectiveResult.IN_PLACE)))["n"]
    # Busbw keeps runs of adjacent lines, not a line (millions in a long run): the worker found
    # them as it stored the rows (CollectiveIsland), a row a run. Processes in bytewise order, as
    # SQL found them before: any order does (Busbw keeps each apart), and PostgreSQL's sort by
    # the database's collation (strcoll a comparison) costs. (SQLite compares bytewise already.)
    table = connection.ops.quote_name(CollectiveIsland._meta.db_table)
    bytewise = 'process COLLATE "C"' if connection.vendor == "postgresql" else "process"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT logfile_id, process, first_line, last_line, rows, peak_busbw_gbs FROM {table} "
            f"WHERE run_id = %s ORDER BY logfile_id, {bytewise}, first_line", [run.id])
        for lf_id, process, first, last, n, peak in cursor:
            rows.busbw.add_run(lf_id, process, first, last, n, peak)
    return rows


def _run_status(run: Run) -> tuple[str, str, set[str]]:
    statuses = list(run.logfiles.values_list("status", "error"))
    codes = {s for s, _ in statuses}
    if not statuses or codes == {Status.FAILED}:
        status = Status.FAILED
    elif Status.PARSING in codes:
        status = Status.PARSING
    elif Status.QUEUED in codes:
        status = Status.QUEUED
    else:
        status = Status.READY
    return status, "\n".join(e for s, e in statuses if s == Status.FAILED and e), codes


def refresh_run(run_id: int) -> None:
    """Recompute a run's status and summary figures from its log files, their stored columns
    (a block at a time, regrouped on disk: run_rows) and its NCCL rows."""
    run = Run.objects.select_for_update().get(id=run_id)
    run.status, run.error, codes = _run_status(run)
    run.failed_files = min(run.logfiles.filter(status=Status.FAILED).count(), 32767)
    parsed: dict = {}
    state: dict = {}
    if Status.READY in codes:
        files = _ready_files(run)
        result = _run_header(run, files)
        _add_nccl(run, result)
        parsed, figured = summarize_run(result, run_rows(run, files))
        state = {"figured": figured}
        trace = trace_of(run)
        if trace is not None:
            parsed["trace"] = traces.summary(trace)
    run.parsed = parsed
    run.summary_state = state
    summary = parsed.get("summary", {})
    verify = _phase(parsed, "verify")
    spec = parsed.get("spec", {})
    run.throughput_tok_s = summary.get("throughput_tok_s")
    run.tokens_per_cycle = summary.get("tokens_per_cycle")
    run.cycle_ms = summary.get("cycle_ms")
    run.windows = summary.get("windows")
    run.verify_ms = verify["ms"] if verify else None
    run.verify_pct = verify["pct"] if verify else None
    run.engine = (parsed.get("engine") or "")[:32]
    run.spec_algorithm = (spec.get("algorithm") or "")[:32]
    if not run.steps_by_person:
        # A person's value wins over the logs; otherwise the logs say, with their line.
        run.steps = spec.get("steps")
        run.steps_source = _steps_source(run) if run.steps is not None else ""
    run.nccl_status = (parsed.get("nccl") or {}).get("status", "")
    run.launches_count = min(parsed.get("launches_count") or 0, 32767)
    run.person_conflict = bool(person_vs_logs(parsed, run.steps, run.steps_by_person))
    run.series = fresh_series(run)
    run.save()
    mark_nccl_roles(run, parsed.get("processes") or [])


def runs_without_series() -> list[int]:
    """Ids of the runs whose pages would compute their series on every request: stored before
    `Run.series` existed (or in an older shape), and not parsing now (refresh_run stores theirs)."""
    lacking = Run.objects.filter(Q(series__isnull=True) | ~Q(series__v=SERIES_VERSION))
    return list(lacking.exclude(status__in=(Status.QUEUED, Status.PARSING)).order_by("id")
                .values_list("id", flat=True))


def backfill_series(run_id: int) -> bool:
    """Compute and store one run's series (runs/series.py) if it lacks them; True if it stored.
    Locked as refresh_run locks: a parse that ends meanwhile waits, then stores its own."""
    with transaction.atomic():
        run = Run.objects.select_for_update().only("id", "status", "series").filter(id=run_id).first()
        if run is None or run.is_busy or (isinstance(run.series, dict) and run.series.get("v") == SERIES_VERSION):
            return False
        run.series = fresh_series(run)
        run.save(update_fields=["series"])
    return True


def refresh_nccl(run_id: int) -> None:
    """After a person declared NCCL values: the run's NCCL verdicts again, from its files' process
    tables and its NCCL rows (few), in time and memory that do not grow with the run's windows.
    The run's status, figures and every other part of `parsed` stay as refresh_run left them."""
    run = Run.objects.select_for_update().only(
        "id", "parsed", "summary_state", "steps", "steps_by_person", "nccl_status", "person_conflict").get(id=run_id)
    if not run.parsed or "figured" not in (run.summary_state or {}):
        refresh_run(run_id)  # no summary yet, or one written before partial refreshes existed
        return
    result = _run_header(run, _ready_files(run))
    _add_nccl(run, result)
    run.parsed = renew_nccl(run.parsed, result, run.summary_state["figured"])
    run.nccl_status = run.parsed["nccl"].get("status", "")
    run.person_conflict = bool(person_vs_logs(run.parsed, run.steps, run.steps_by_person))
    run.save(update_fields=["parsed", "nccl_status", "person_conflict", "updated_at"])


def mark_nccl_roles(run: Run, processes: list[dict]) -> None:
    """Write each NCCL row's process role (the run list's KEY=VALUE filter reads it)."""
    rows = NcclSetting.objects.filter(run=run, logfile__isnull=False)
    roles = {(p["logfile"], tag): p["role"] for p in processes if p.get("logfile") and p["role"] != "unknown"
             for tag in (p["tag"], *p["aliases"])}
    if connection.vendor == "postgresql":
        # One statement, each row joined to its process's role: an UPDATE a process scanned the
        # run's rows once each (53 processes of 512 MB of NCCL start-up: a second each).
        table = connection.ops.quote_name(NcclSetting._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} AS n SET role = COALESCE(r.role, '') FROM {table} AS o "
                "LEFT JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS r(logfile_id, process, role) "
                "ON r.logfile_id = o.logfile_id AND r.process = o.process "
                "WHERE n.id = o.id AND o.run_id = %s AND o.logfile_id IS NOT NULL "
                "AND o.role IS DISTINCT FROM COALESCE(r.role, '')",
                [[lf for lf, _ in roles], [tag for _, tag in roles], list(roles.values()), run.id])
        return
    rows.exclude(role="").update(role="")
    for (logfile, tag), role in roles.items():
        rows.filter(logfile_id=logfile, process=tag).update(role=role)


def _phase(parsed: dict, word: str) -> dict | None:
    return next((p for p in parsed.get("phases", []) if word in p["name"].lower()), None)


def _steps_source(run: Run) -> str:
    for lf in run.logfiles.filter(status=Status.READY).order_by("id"):
        s = lf.settings.get("spec.steps")
        if s:
            return f"{lf.original_name} line {s['line']} ({s['source']})"
    return ""


# The run's figures a role correction can change, as the run page's cards and list show them.
ROLE_EDIT_FIGURES = ("throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms", "windows", "nccl_status",
                     "launches_count")


def _figures(run: Run) -> dict:
    return {key: getattr(run, key) for key in ROLE_EDIT_FIGURES}


def set_file_roles(user: User, run: Run, roles: Mapping[str, str]) -> RunEdit | None:
    """Correct the role of some of a run's log files ({log file id or name: role, "" = detected})
    and recompute the run's verdicts. Editors and admins (PermissionDenied otherwise): the roles
    decide which lines count as the workers', so they change the run's figures and NCCL verdict.
    Recorded as a RunEdit: the files' roles and the figures that moved, before and after; None
    when no role changed."""
    require_role(user, run.project_id, Role.EDITOR)
    files = list(run.logfiles.all())
    changes = {}
    for key, role in roles.items():
        lf = next((f for f in files if str(f.id) == str(key) or f.original_name == key), None)
        if lf is None:
            raise ServiceError(400, "unknown_file", f"{key!r} is not a log file of this run")
        if role and role not in ROLES:
            raise ServiceError(422, "bad_roles", f"{role!r} is not a role ({', '.join(ROLES)})")
        changes[lf.id] = role
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)  # two editors: one after the other
        old = dict(LogFile.objects.filter(id__in=changes).values_list("id", "role"))
        changed = {lf_id: role for lf_id, role in changes.items() if old.get(lf_id) != role}
        if not changed:
            return None
        figures_before = _figures(locked)
        for lf_id, role in changed.items():
            LogFile.objects.filter(id=lf_id).update(role=role)
        refresh_run(run.id)
        figures_after = _figures(Run.objects.get(id=run.id))
        names = {f.id: f.original_name for f in files}
        moved = [k for k in ROLE_EDIT_FIGURES if figures_before[k] != figures_after[k]]
        return RunEdit.objects.create(
            run=run, what=RunEdit.What.ROLES, edited_by=user,
            before={"roles": {names[i]: old.get(i) or "" for i in changed},
                    "figures": {k: figures_before[k] for k in moved}},
            after={"roles": {names[i]: r for i, r in changed.items()},
                   "figures": {k: figures_after[k] for k in moved}},
        )


def split_run(user: User, run: Run) -> list[Run]:
    """One run per serving launch: the run keeps its first launch, each other launch's log files
    (with their rows) move to a new run of the same project. Files of no launch (nccl-tests,
    a benchmark client's log) stay. Returns the new runs. A project admin or the creator may.

    Refused when launches share a log file (a server restarted inside one log): a file is not
    cut in two.
    """
    admins = Membership.objects.filter(project_id=run.project_id, role=Membership.Role.ADMIN)
    if not (user.is_superuser or run.created_by_id == user.pk or admins.filter(user=user).exists()):
        raise ServiceError(403, "not_allowed", "only a project admin or the run's creator may split it")
    if run.is_busy:
        raise ServiceError(409, "run_busy", "the run is still being parsed; split it when it is ready")
    launches = (run.parsed or {}).get("launches") or []
    if len(launches) < 2:
        raise ServiceError(409, "one_launch", "this run holds a single serving launch: nothing to split")
    owner: dict[int, int] = {}
    for launch in launches:
        for lf in launch["logfiles"]:
            if owner.setdefault(lf, launch["id"]) != launch["id"]:
                raise ServiceError(409, "launches_share_a_file", (
                    f"launches {owner[lf]} and {launch['id']} are in the same log file; "
                    "split the file itself and upload the parts"))
    new_runs = []
    with transaction.atomic():
        Run.objects.select_for_update().get(id=run.id)
        person = list(NcclSetting.objects.filter(run=run, logfile__isnull=True))
        tags = [t.name for t in run.tags.all()]
        for launch in launches[1:]:
            files = list(run.logfiles.filter(id__in=launch["logfiles"]))
            new = Run.objects.create(
                project=run.project, name=f"{run.name} · launch {launch['id']}"[:200], created_by=user,
                notes=run.notes, status=run.status,
                meta={**{k: v for k, v in run.meta.items() if k not in ("idempotency_key", "content_sha256")},
                      "split_from": run.id, "content_sha256": content_sha256(f.sha256 for f in files)},
            )
            if run.steps_source.startswith("set by"):
                Run.objects.filter(id=new.id).update(steps=run.steps, steps_source=run.steps_source)
            set_tags(new, tags)
            ids = [f.id for f in files]
            LogFile.objects.filter(id__in=ids).update(run=new)
            columns.move(ids, new)
            for model in (NcclSetting, CollectiveResult, CollectiveIsland):
                model.objects.filter(logfile_id__in=ids).update(run=new)
            NcclSetting.objects.bulk_create(
                NcclSetting(run=new, logfile=None, line=None, key=n.key, value=n.value, kind=n.kind,
                            source=n.source, process=n.process) for n in person)
            new_runs.append(new)
        kept = run.logfiles.values_list("sha256", flat=True)
        run.meta = {**run.meta, "content_sha256": content_sha256(kept),
                    "split_into": [r.id for r in new_runs]}
        run.save(update_fields=["meta"])
        for r in [run, *new_runs]:
            refresh_run(r.id)
    return [Run.objects.get(id=r.id) for r in new_runs]
