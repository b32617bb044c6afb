"""Every important write of runlens goes through a function here (STYLE 4).

Views, API operations, management commands and Celery tasks call these; status changes happen
only here. The database is the source of truth: a task is only a doorbell with an id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from ingest import storage
from ingest.parsers import ParseError, ParseResult, parse_stream, summarize
from ingest.parsers import records as rec
from runs.models import (
    CollectiveResult,
    LogFile,
    Membership,
    MetricSample,
    NcclSetting,
    PhaseSample,
    Project,
    Run,
    Status,
    Tag,
)

log = logging.getLogger(__name__)

BATCH = 2000


@dataclass
class IncomingFile:
    name: str
    stream: BinaryIO
    size: int


def project_for(user: AbstractBaseUser, name: str | None) -> Project:
    """The named project if the user belongs to it; a new one (user as admin) if none has the name.

    With no name: the user's first project, or a personal one named after the user.
    """
    if not name:
        membership = Membership.objects.filter(user=user).select_related("project").order_by("id").first()
        if membership:
            return membership.project
        name = user.get_username()
    project, created = Project.objects.get_or_create(name=name)
    if created:
        Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    elif not user.is_superuser and not Membership.objects.filter(project=project, user=user).exists():
        raise PermissionError(f"you are not a member of project {name!r}")
    return project


def register_upload(
    user: AbstractBaseUser,
    files: Iterable[IncomingFile],
    *,
    name: str = "",
    project: str | None = None,
    tags: Iterable[str] = (),
    notes: str = "",
    meta: dict | None = None,
) -> Run:
    """Store uploaded files under the data dir and create a queued run that will parse them."""
    files = list(files)
    if not files:
        raise ValueError("no files given")
    proj = project_for(user, project)
    stored = []
    try:
        for f in files:
            rel, sha, size = storage.store_upload(f.stream, f.size)
            stored.append((f.name, rel, sha, size))
        with transaction.atomic():
            run = Run.objects.create(
                project=proj, name=(name or files[0].name)[:200], created_by=user, notes=notes,
                meta=meta or {},
            )
            set_tags(run, tags)
            LogFile.objects.bulk_create(
                LogFile(run=run, original_name=original[:255], path=rel, sha256=sha, size=size)
                for original, rel, sha, size in stored
            )
            enqueue_run(run)
    except BaseException:
        # Nothing half-written: no stored bytes without the rows that point at them.
        for _, rel, _, _ in stored:
            (settings.DATA_DIR / rel).unlink(missing_ok=True)
        raise
    return run


def set_tags(run: Run, tags: Iterable[str]) -> None:
    names = sorted({t.strip()[:64] for t in tags if t and t.strip()})
    run.tags.set([Tag.objects.get_or_create(name=n)[0] for n in names])


def enqueue_run(run: Run) -> None:
    """Queue every queued log file of the run, once the surrounding transaction commits."""
    from ingest.tasks import parse_logfile as task

    for lf_id in run.logfiles.filter(status=Status.QUEUED).values_list("id", flat=True):
        transaction.on_commit(lambda i=lf_id: task.delay(i))


def claim(logfile_id: int) -> bool:
    """Take a log file for parsing with one conditional UPDATE; False if someone else has it.

    A claim older than the hard time limit belongs to a worker that died: it may be taken over.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PARSE_TIME_LIMIT)
    taken = LogFile.objects.filter(
        Q(status=Status.QUEUED) | Q(status=Status.PARSING, claimed_at__lt=stale), id=logfile_id,
    ).update(status=Status.PARSING, claimed_at=now, attempts=F("attempts") + 1, updated_at=now)
    if taken:
        Run.objects.filter(logfiles__id=logfile_id, status=Status.QUEUED).update(status=Status.PARSING)
    return bool(taken)


def parse_logfile(logfile_id: int) -> str:
    """Parse one log file into rows: claim, stream through the parsers, replace rows atomically.

    Returns the final status. A re-delivered task finds no claim to take and does nothing.
    """
    if not claim(logfile_id):
        log.info("logfile %s: not claimable (gone, parsed, or being parsed)", logfile_id)
        return "skipped"
    lf = LogFile.objects.select_related("run").get(id=logfile_id)
    try:
        with storage.open_log(lf.path, lf.registered) as stream:
            result = parse_stream(stream)
    except ParseError as e:
        return _fail(lf, f"{lf.original_name}: {e.message}", e.line or None)
    except storage.StorageError as e:
        return _fail(lf, f"{lf.original_name}: {e.message}", None)
    except OSError as e:
        return _fail(lf, f"{lf.original_name}: cannot read the stored file ({e.strerror})", None)
    except Exception as e:  # a parser bug must not leave the file "parsing" forever
        log.exception("logfile %s: parser crashed", lf.id)
        return _fail(lf, f"{lf.original_name}: internal error while parsing ({type(e).__name__}: {e})", None)
    try:
        _store_result(lf, result)
    except OperationalError:
        # The database blinked: hand the file back so the task's retry can claim it again.
        LogFile.objects.filter(id=lf.id, status=Status.PARSING).update(status=Status.QUEUED, claimed_at=None)
        raise
    return Status.READY


def _fail(lf: LogFile, message: str, line: int | None) -> str:
    with transaction.atomic():
        _delete_rows(lf)
        LogFile.objects.filter(id=lf.id).update(
            status=Status.FAILED, error=message, error_line=line, parsed_at=timezone.now(),
            formats=[], settings={}, warnings=[],
        )
        refresh_run(lf.run_id)
    return Status.FAILED


def _delete_rows(lf: LogFile) -> None:
    for model in (PhaseSample, MetricSample, NcclSetting, CollectiveResult):
        model.objects.filter(logfile=lf).delete()


def _store_result(lf: LogFile, result: ParseResult) -> None:
    run_id = lf.run_id
    with transaction.atomic():
        _delete_rows(lf)
        PhaseSample.objects.bulk_create(
            (PhaseSample(run_id=run_id, logfile=lf, line=p.line, name=p.name[:100], window=p.window,
                         ms=p.ms, pct=p.pct, source=p.source) for p in result.phases),
            batch_size=BATCH,
        )
        MetricSample.objects.bulk_create(
            (MetricSample(run_id=run_id, logfile=lf, line=m.line, name=m.name, window=m.window,
                          value=m.value, rank=m.rank[:32], source=m.source) for m in result.metrics),
            batch_size=BATCH,
        )
        NcclSetting.objects.bulk_create(
            (NcclSetting(run_id=run_id, logfile=lf, line=n.line, key=n.key[:64], value=n.value[:512],
                         kind=n.kind, rank=n.rank[:32], source=n.source) for n in result.nccl),
            batch_size=BATCH,
        )
        CollectiveResult.objects.bulk_create(
            (CollectiveResult(run_id=run_id, logfile=lf, line=c.line, op=c.op, size_bytes=c.size_bytes,
                              count=c.count, dtype=c.dtype[:16], redop=c.redop[:16], root=c.root,
                              time_us=c.time_us, algbw_gbs=c.algbw_gbs, busbw_gbs=c.busbw_gbs,
                              wrong=c.wrong, in_place=c.in_place) for c in result.collectives),
            batch_size=BATCH,
        )
        LogFile.objects.filter(id=lf.id).update(
            status=Status.READY, error="", error_line=None, parsed_at=timezone.now(), lines=result.lines,
            formats=result.formats,
            settings={k: {"value": s.value, "line": s.line, "source": s.source} for k, s in result.settings.items()},
            warnings=[{"line": w.line, "message": w.message} for w in result.warnings][:200],
        )
        refresh_run(run_id)


def run_result(run: Run) -> ParseResult:
    """Rebuild one ParseResult from all of a run's stored rows (windows of later files follow on)."""
    result = ParseResult()
    offset = 0
    files = list(run.logfiles.filter(status=Status.READY).order_by("id"))
    for lf in files:
        for f in lf.formats:
            result.add_format(f)
        for key, s in lf.settings.items():
            result.set(key, s["value"], s["line"], s["source"])
        last = offset
        for p in PhaseSample.objects.filter(logfile=lf).order_by("window", "id"):
            result.phases.append(rec.Phase(p.name, p.ms, p.pct, p.window + offset, p.line, p.source))
            last = max(last, p.window + offset)
        for m in MetricSample.objects.filter(logfile=lf).order_by("window", "id"):
            result.metrics.append(rec.Metric(m.name, m.value, m.window + offset, m.line, m.source, m.rank))
            last = max(last, m.window + offset)
        offset = last
        for w in lf.warnings:
            result.warnings.append(rec.Issue(w["line"], f"{lf.original_name}: {w['message']}"))
    # NCCL values include annotations (no log file): the analysis sees every declaration.
    for n in NcclSetting.objects.filter(run=run).order_by("logfile_id", "line", "id"):
        result.nccl.append(rec.NcclValue(n.key, n.value, n.kind, n.line or 0, n.source, n.rank))
    for c in CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line", "in_place"):
        result.collectives.append(rec.Collective(
            c.op, c.size_bytes, c.count, c.dtype, c.redop, c.root, c.time_us, c.algbw_gbs, c.busbw_gbs,
            c.wrong, c.in_place, c.line or 0,
        ))
    return result


def refresh_run(run_id: int) -> None:
    """Recompute a run's status and summary figures from its log files and rows."""
    run = Run.objects.select_for_update().get(id=run_id)
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
    run.status = status
    run.error = "\n".join(e for s, e in statuses if s == Status.FAILED and e)
    parsed = summarize(run_result(run)) if Status.READY in codes else {}
    run.parsed = parsed
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
    if not run.steps_source.startswith("set by"):
        # A person's value wins over the logs; otherwise the logs say, with their line.
        run.steps = spec.get("steps")
        run.steps_source = _steps_source(run) if run.steps is not None else ""
    run.nccl_status = (parsed.get("nccl") or {}).get("status", "")
    run.save()


def _phase(parsed: dict, word: str) -> dict | None:
    return next((p for p in parsed.get("phases", []) if word in p["name"].lower()), None)


def _steps_source(run: Run) -> str:
    for lf in run.logfiles.filter(status=Status.READY).order_by("id"):
        s = lf.settings.get("spec.steps")
        if s:
            return f"{lf.original_name} line {s['line']} ({s['source']})"
    return ""


def reparse_run(run: Run) -> None:
    """Parse all of a run's files again; rows are replaced when each parse commits."""
    with transaction.atomic():
        run.logfiles.update(status=Status.QUEUED, attempts=0, error="", error_line=None, claimed_at=None)
        refresh_run(run.id)
        enqueue_run(run)


def reconcile(now=None) -> int:
    """Queue again log files stuck in queued/parsing (lost message, dead worker). Returns how many."""
    now = now or timezone.now()
    stuck_before = now - timedelta(seconds=settings.RECONCILE_AFTER_SECONDS)
    stale_claim = now - timedelta(seconds=settings.PARSE_TIME_LIMIT)
    stuck = LogFile.objects.filter(
        Q(status=Status.QUEUED, updated_at__lt=stuck_before) | Q(status=Status.PARSING, claimed_at__lt=stale_claim)
    )
    count = 0
    for lf in stuck:
        with transaction.atomic():
            if lf.attempts >= settings.MAX_PARSE_ATTEMPTS:
                LogFile.objects.filter(id=lf.id).update(
                    status=Status.FAILED, updated_at=now,
                    error=f"{lf.original_name}: gave up after {lf.attempts} attempts (the worker died or hung)",
                )
                refresh_run(lf.run_id)
            else:
                LogFile.objects.filter(id=lf.id).update(status=Status.QUEUED, claimed_at=None, updated_at=now)
                from ingest.tasks import parse_logfile as task

                transaction.on_commit(lambda i=lf.id: task.delay(i))
        count += 1
    return count
