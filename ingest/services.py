"""The parse pipeline: queue, claim, parse, store, re-parse, reconcile (STYLE 4: every such write
is a function here). Registering uploads and paths, and project access, are ingest/registration.py's.

Views, API operations, management commands and Celery tasks call these; log file status changes
happen only here and in ingest/registration.py. Edits of runs and their summaries are in
runs/services.py. The database is the source of truth: a task is only a doorbell with an id.
"""

from __future__ import annotations

import io
import logging
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from typing import Any, BinaryIO, cast

import polars as pl
from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from ingest import storage
from ingest.parsers import ParseError, ParseResult, native, parse_stream
from ingest.parsers import records as rec
from ingest.parsers import trace as trace_parser
from runs import columns
from runs.digest import BusbwIslands, NcclFold
from runs.models import (
    CollectiveIsland,
    CollectiveResult,
    LogFile,
    NcclSetting,
    Run,
    Status,
)
from runs.permissions import Role, require_role
from runs.services import refresh_run

log = logging.getLogger(__name__)

BATCH = 2000
BATCH_ROWS = 64_000  # NCCL rows built for one COPY at a time


def enqueue_run(run: Run) -> None:
    """Queue every queued log file of the run, once the surrounding transaction commits."""
    for lf_id in run.logfiles.filter(status=Status.QUEUED).values_list("id", flat=True):
        transaction.on_commit(partial(send_parse, lf_id))


PARSE_TASK = "ingest.tasks.parse_logfile"


def send_parse(logfile_id: int) -> bool:
    """Ring the worker's doorbell for one log file; False if the broker could not be reached.

    The database already says `queued`, so a broker that is down loses nothing: the file is
    marked queued since long ago and the reconciler's next pass (every minute) sends it again.
    Never raises: the caller's rows are committed and its answer is "accepted".
    """
    if current_app.conf.task_always_eager:
        # CELERY_TASK_ALWAYS_EAGER: parse here, in this process (a demo or a script without a
        # worker). send_task by name would still post to the broker, eager or not.
        parse_logfile(logfile_id)
        return True
    try:
        # By name: tasks.py imports this module, so importing it back would be a cycle.
        current_app.send_task(PARSE_TASK, args=[logfile_id])
        return True
    except Exception as e:
        log.warning("logfile %s: queue unreachable (%s); the reconciler will send it", logfile_id, e)
    overdue = timezone.now() - timedelta(seconds=settings.RECONCILE_AFTER_SECONDS + 1)
    try:
        LogFile.objects.filter(id=logfile_id, status=Status.QUEUED).update(updated_at=overdue)
    except Exception:
        log.exception("logfile %s: could not mark it for the reconciler", logfile_id)
    return False


def _stale_claim(now) -> Q:
    """A parsing claim whose worker stopped proving it is alive (killed, frozen, machine gone)."""
    silent_since = now - timedelta(seconds=settings.CLAIM_STALE_SECONDS)
    return Q(status=Status.PARSING) & (
        Q(heartbeat_at__lt=silent_since) | Q(heartbeat_at__isnull=True, claimed_at__lt=silent_since)
    )


def claim(logfile_id: int, token: str = "") -> bool:
    """Take a log file for parsing with one conditional UPDATE; False if someone else has it.

    Taken over: a claim whose heartbeat went stale (its worker died or hung), and a claim with
    this very token (the same task redelivered because its worker process was killed).
    """
    now = timezone.now()
    claimable = Q(status=Status.QUEUED) | _stale_claim(now)
    if token:
        claimable |= Q(status=Status.PARSING, claim_token=token)
    taken = LogFile.objects.filter(claimable, id=logfile_id).update(
        status=Status.PARSING, claimed_at=now, heartbeat_at=now, claim_token=token, attempts=F("attempts") + 1,
        updated_at=now,
    )
    if taken:
        Run.objects.filter(logfiles__id=logfile_id, status=Status.QUEUED).update(status=Status.PARSING)
    return bool(taken)


class _StoreError(Exception):
    """Writing rows failed (not the log's fault): roll back, hand the file back, re-raise."""


class _ClaimLost(Exception):
    """The run was deleted, or the file given to another worker, while this one parsed."""


# How long a heartbeat waits for the log file's row (ms), and PostgreSQL's code for giving up.
HEARTBEAT_LOCK_TIMEOUT_MS = 1000
LOCK_NOT_AVAILABLE = "55P03"


class Heartbeat:
    """Proves to the reconciler that this worker still parses `lf` (a thread with its own
    database connection), and notices when the claim is gone (the run was deleted): `lost`."""

    def __init__(self, lf: LogFile) -> None:
        self.mine = LogFile.objects.filter(id=lf.id, status=Status.PARSING, claimed_at=lf.claimed_at)
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{lf.id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        # Inside a caller's transaction (tests, eager tasks) the claim is not committed: another
        # connection could neither see nor update it, so there is nobody to prove anything to.
        if not transaction.get_connection().in_atomic_block:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def beat(self) -> bool | None:
        """One beat: True written, False the claim is gone (`lost` set), None not written now.

        Never waits on the log file's row for long: a store finishing this very parse holds it
        (its last statements: the file marked ready, the run's summary) and commits soon; the
        beat is skipped then (the row lock itself proves the worker alive: reconcile() skips a
        locked row). Waiting there was a beat stuck behind its own worker's COMMIT."""
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(f"SET LOCAL lock_timeout = {HEARTBEAT_LOCK_TIMEOUT_MS}")
                if not self.mine.update(heartbeat_at=timezone.now()):
                    self.lost.set()
                    return False
            return True
        except OperationalError as e:
            if getattr(e.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                log.debug("heartbeat skipped: the log file's row is held by its store")
            else:  # a busy database: try again at the next beat
                log.warning("heartbeat not written: %s", e)
            return None

    def _beat(self) -> None:
        try:
            while not self._stop.wait(settings.HEARTBEAT_SECONDS):
                if self.beat() is False:
                    return
        finally:
            connection.close()


class _Watched:
    """The stored log as the parsers read it, a chunk at a time: a read after the heartbeat found
    the claim gone (the run deleted, the file re-queued) stops the parse there. The sink's own
    check comes only every SPILL_AT rows, and a log of lines that give no rows never reaches it."""

    def __init__(self, stream: BinaryIO, lost: threading.Event) -> None:
        self.stream = stream
        self.lost = lost

    def read(self, size: int = -1) -> bytes:
        if self.lost.is_set():
            raise _ClaimLost()
        return self.stream.read(size)


def parse_logfile(logfile_id: int, token: str = "") -> str:
    """Parse one log file into rows: claim, stream through the parsers, replace rows atomically.

    The parse holds no transaction and no lock (SQLite serves other writers meanwhile, a DELETE
    of the run does not wait): rows stream to a spool file on disk (memory stays flat on a 1 GB
    log), then one short transaction checks the claim is still ours, deletes the old rows and
    inserts the new ones: readers see the old rows or the new ones, never a mix. A heartbeat
    keeps the claim alive meanwhile. Returns the final status; a re-delivered task finds no
    claim to take, a parse whose run was deleted returns "cancelled".
    """
    if not claim(logfile_id, token):
        log.info("logfile %s: not claimable (gone, parsed, or being parsed)", logfile_id)
        return "skipped"
    lf = LogFile.objects.select_related("run").get(id=logfile_id)
    if lf.attempts > settings.MAX_PARSE_ATTEMPTS:
        # Poison-message stop: this log has killed its worker (memory?) attempt after attempt.
        return _fail(lf, f"{lf.original_name}: gave up after {lf.attempts - 1} attempts "
                         "(the worker died while parsing it)", None)

    if lf.kind == LogFile.Kind.TRACE:
        return _parse_trace(lf)
    try:
        with Heartbeat(lf) as heartbeat, _spool_file() as spool, _spool_file() as block_spool, \
                _Folder(block_spool) as folder:
            # NCCL values repeat (a log of restarts echoes the same variables each time: 512 MB
            # of NCCL start-up lines gave millions of rows): kept folded, only the last of each
            # identity between two possible launch starts stored (NcclFold.stored).
            nccl = NcclFold()
            # NCCL echoes whose rank the nccl_debug parser learns only at its end (it holds
            # them itself until then): folded once the parse has finished, with their rank.
            unranked: list[rec.NcclValue] = []
            # The nccl-tests rows' islands of adjacent lines, found here rather than by each refresh.
            islands = BusbwIslands()

            def spill(result: ParseResult) -> None:
                if heartbeat.lost.is_set():
                    raise _ClaimLost()
                phases, metrics, collectives, values = result.take_columns()
                unranked.extend(n for n in values if _rank_pending(n))
                nccl.add(n for n in values if not _rank_pending(n))
                folder.add(phases, metrics)
                islands.add_frame(collectives)
                _spool_rows(spool, collectives)

            with storage.open_log(lf.path, lf.registered) as stream:
                # A reader of `read` alone is all the parsers ask of a stream.
                result = parse_stream(cast(BinaryIO, _Watched(stream, heartbeat.lost)), sink=spill)
            spill(result)
            cut = folder.finish()
            nccl.add(unranked)
            unranked.clear()
            try:
                _store_rows(lf, spool, cut, nccl.stored(result), result, islands)
            except (OperationalError, _ClaimLost):
                raise
            except Exception as e:
                raise _StoreError() from e
    except _ClaimLost:
        log.info("logfile %s: claim lost while parsing (run deleted or file re-queued)", logfile_id)
        return "cancelled"
    except ParseError as e:
        return _fail(lf, f"{lf.original_name}: {e.message}", e.line or None)
    except storage.StorageError as e:
        return _fail(lf, f"{lf.original_name}: {e.message}", None)
    except OSError as e:
        return _fail(lf, f"{lf.original_name}: cannot read the stored file ({e.strerror})", None)
    except OperationalError:
        # The database blinked (lock timeout, dropped connection): not the log's fault, retry.
        _hand_back(lf)
        raise
    except SoftTimeLimitExceeded:
        return _fail(lf, f"{lf.original_name}: parsing took longer than {settings.PARSE_SOFT_TIME_LIMIT} s "
                         "(RUNLENS_PARSE_SOFT_SECONDS)", None)
    except _StoreError as e:
        # The transaction rolled back (old rows intact). Hand the file back: the task's retry
        # or the reconciler takes it again, and MAX_PARSE_ATTEMPTS stops a hopeless loop.
        _hand_back(lf)
        assert e.__cause__ is not None  # _StoreError is only raised `from` the error that broke the write
        raise e.__cause__ from None
    except Exception as e:  # a parser bug must not leave the file "parsing" forever
        log.exception("logfile %s: parser crashed", lf.id)
        return _fail(lf, f"{lf.original_name}: internal error while parsing ({type(e).__name__}: {e})", None)
    return Status.READY


def _spool_file() -> BinaryIO:
    """An anonymous file under the data dir (gone with its process, even after SIGKILL)."""
    spool_dir = settings.DATA_DIR / "spool"
    spool_dir.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryFile(dir=spool_dir)


def _rank_pending(value: rec.NcclValue) -> bool:
    return value.kind == "effective" and not value.rank


class _Folder:
    """The parse's phases and metrics cut into the file's stored columns (runs.columns.Cutter),
    out of any transaction, on a thread of its own while the parse goes on: polars and zstd
    release the GIL, so the cutting runs on another core. Batches are cut in their order, at most
    IN_FLIGHT of them waiting (2 peaked the worker 30 MB higher for no time); the blocks wait
    compressed in `spool`."""

    IN_FLIGHT = 1

    def __init__(self, spool: BinaryIO) -> None:
        self.cut = columns.Cutter(spool)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="runlens-fold")
        self.pending: deque[Future] = deque()

    def __enter__(self) -> _Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)  # a failed parse: the batch being cut ends

    def add(self, phases: pl.DataFrame | None, metrics: pl.DataFrame | None) -> None:
        self.pending.append(self.pool.submit(self.cut.add, phases, metrics))
        while len(self.pending) > self.IN_FLIGHT:
            self.pending.popleft().result()  # a cut's error is raised here, in the parse

    def finish(self) -> columns.Cutter:
        while self.pending:
            self.pending.popleft().result()
        self.cut.finish()
        return self.cut


def _spool_rows(spool: BinaryIO, collectives: pl.DataFrame | None) -> None:
    """One batch of collectives (COLLECTIVE_SCHEMA): its length, then its columns as an Arrow IPC
    stream (written and read back in native code: a JSON row each was two thirds of the worker's
    time past the parse on 512 MB of nccl-tests outputs)."""
    if collectives is None or not collectives.height:
        return
    blob = io.BytesIO()
    collectives.write_ipc_stream(blob)
    spool.write(len(blob.getbuffer()).to_bytes(8, "little"))
    spool.write(blob.getbuffer())


def _unspool(spool: BinaryIO) -> Iterator[pl.DataFrame]:
    """What was spooled, in order: batches of collectives."""
    spool.seek(0)
    while size := spool.read(8):
        yield pl.read_ipc_stream(io.BytesIO(spool.read(int.from_bytes(size, "little"))))


def _store_rows(lf: LogFile, spool: BinaryIO, cut: columns.Cutter, nccl: list[rec.NcclValue],
                result: ParseResult, islands: BusbwIslands) -> None:
    """Replace the file's rows with the spooled ones, if the claim is still this parse's.

    Phases and metrics were cut into the file's stored columns while parsing (parse_logfile's
    spill): here they are written as they are (runs.columns.write), collectives and the folded
    NCCL values as rows (COPY on PostgreSQL), and the collectives' islands of adjacent lines found
    while spooling them (runs.digest.BusbwIslands: a refresh reads these, not the rows).

    The log file's row is left alone until the end (_finish_logfile marks it ready if the claim
    is still this parse's, else the whole store rolls back): the heartbeat keeps updating it
    while the rows are written (minutes for a 512 MB log), and a run deleted meanwhile is
    deleted at once, its file's claim gone at the end.
    """
    with transaction.atomic():
        # Serialise with any other writer of this file (a stale claim's worker still storing):
        # its rows are replaced, never doubled. A lock of its own, not the row's (see above).
        _lock_store(lf)
        if not LogFile.objects.filter(id=lf.id, status=Status.PARSING, claimed_at=lf.claimed_at).exists():
            raise _ClaimLost()
        _delete_rows(lf)
        columns.write(lf, cut)
        if connection.vendor == "postgresql":
            # Foreign keys (the NCCL rows') checked as each COPY ends, not all at the COMMIT: the
            # COMMIT comes after the log file's row is taken (_finish_logfile), and a heartbeat
            # waits behind it (1.4M NCCL rows, before they were folded: a COMMIT of 27 s).
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for frame in _unspool(spool):
            _insert_collectives(lf, frame)
        _insert_islands(lf, islands)
        for at in range(0, len(nccl), BATCH_ROWS):
            _insert_nccl(lf, nccl[at:at + BATCH_ROWS])
        _finish_logfile(lf, result)


# The first key of the store's advisory lock (the second is the log file's id): "runlens store".
STORE_LOCK = 0x726C7374


def _lock_store(lf: LogFile) -> None:
    lock_stores([lf.id])


def lock_stores(logfile_ids: list[int]) -> None:
    """Wait for any other transaction storing these log files' rows, and keep them from starting
    until this one ends (PostgreSQL; SQLite has one writer at a time anyway). Taken first, in id
    order, by whoever deletes or replaces a file's rows: no two such writers wait on each other."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for logfile_id in sorted(logfile_ids):
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [STORE_LOCK, logfile_id % (1 << 31)])


def _parse_trace(lf: LogFile) -> str:
    """A profiler trace: read streaming (memory grows with its kernels, not its JSON), its
    breakdown stored on the file; the run's summary takes it up (runs.services.refresh_run)."""
    try:
        with Heartbeat(lf) as heartbeat, storage.open_log(lf.path, lf.registered) as stream:
            result = trace_parser.parse(stream)
            if heartbeat.lost.is_set():
                raise _ClaimLost()
    except _ClaimLost:
        return "cancelled"
    except trace_parser.TraceError as e:
        where = f" (event #{e.event})" if e.event is not None else ""
        return _fail(lf, f"{lf.original_name}: {e.message}{where}", None)
    except OSError as e:
        return _fail(lf, f"{lf.original_name}: cannot read the stored file ({e.strerror})", None)
    except SoftTimeLimitExceeded:
        return _fail(lf, f"{lf.original_name}: reading the trace took longer than {settings.PARSE_SOFT_TIME_LIMIT} s "
                         "(RUNLENS_PARSE_SOFT_SECONDS)", None)
    except Exception as e:  # a reader bug must not leave the file "parsing" forever
        log.exception("logfile %s: trace reader crashed", lf.id)
        return _fail(lf, f"{lf.original_name}: internal error while reading the trace ({type(e).__name__}: {e})", None)
    with transaction.atomic():
        if not LogFile.objects.filter(id=lf.id, status=Status.PARSING).update(
            status=Status.READY, error="", error_line=None, parsed_at=timezone.now(), trace=result,
            formats=["kineto_trace"], warnings=[{"line": None, "message": w["message"]} for w in result["warnings"]],
        ):
            return "cancelled"
        refresh_run(lf.run_id)
    return Status.READY


def trace_event(lf: LogFile, index: int) -> dict | None:
    """Event `index` of a stored trace file, as the file has it (None past its end)."""
    with storage.open_log(lf.path, lf.registered) as stream:
        return trace_parser.event_at(stream, index)


def _hand_back(lf: LogFile) -> None:
    LogFile.objects.filter(id=lf.id, status=Status.PARSING).update(
        status=Status.QUEUED, claimed_at=None, updated_at=timezone.now())


def _fail(lf: LogFile, message: str, line: int | None) -> str:
    with transaction.atomic():
        if not LogFile.objects.filter(id=lf.id).update(
            status=Status.FAILED, error=message, error_line=line, parsed_at=timezone.now(),
            formats=[], settings={}, warnings=[], trace=None,
        ):
            return "cancelled"  # the run was deleted meanwhile
        _delete_rows(lf)
        refresh_run(lf.run_id)
    return Status.FAILED


def _delete_rows(lf: LogFile) -> None:
    columns.delete(lf)
    for model in (NcclSetting, CollectiveResult, CollectiveIsland):
        model.objects.filter(logfile=lf).delete()


# Columns written per row, in the order _insert_rows builds them (field names; COPY uses their columns).
COLLECTIVE_FIELDS = ("run", "logfile", "line", "process", "op", "size_bytes", "count", "dtype", "redop", "root",
                     "time_us", "algbw_gbs", "busbw_gbs", "wrong", "ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs",
                     "ip_wrong", "sides")
ISLAND_FIELDS = ("run", "logfile", "process", "first_line", "last_line", "rows", "peak_busbw_gbs")
NCCL_FIELDS = ("run", "logfile", "line", "process", "key", "value", "kind", "rank", "source", "role")


# What a table line's two sides share: a row a side (COLLECTIVE_SCHEMA) next to another with all
# of these equal, out-of-place then in-place, is that line's other side.
LINE_FIELDS = ("line", "process", "op", "size_bytes", "count", "dtype", "redop", "root")


def paired_sides(frame: pl.DataFrame) -> pl.DataFrame:
    """Collectives a row a side (COLLECTIVE_SCHEMA, in the parser's order) as CollectiveResult
    stores them: a row a line, its out-of-place side then its in-place one (`sides` says which it
    holds; the side it lacks is null). A side without its other one next to it (a batch cut
    between them, a line of one side) is a row alone: readers see the same rows either way."""
    inside = pl.col("in_place")
    same = [pl.col(f).eq_missing(pl.col(f).shift(-1)) for f in LINE_FIELDS]
    first = (~inside & inside.shift(-1).fill_null(False)).and_(*same)
    paired = frame.with_columns(first=first).with_columns(second=pl.col("first").shift(1).fill_null(False))
    side_fields = CollectiveResult.SIDE_FIELDS
    return paired.with_columns(
        sides=pl.when("first").then(CollectiveResult.OUT_OF_PLACE | CollectiveResult.IN_PLACE)
        .when(inside).then(CollectiveResult.IN_PLACE).otherwise(CollectiveResult.OUT_OF_PLACE).cast(pl.Int16),
        **{ip: pl.when("first").then(pl.col(out).shift(-1)).when(inside).then(out) for out, ip in side_fields},
    ).with_columns(
        **{out: pl.when(inside).then(None).otherwise(out) for out, _ in side_fields},
    ).filter(~pl.col("second")).drop("first", "second", "in_place")


def _insert_collectives(lf: LogFile, frame: pl.DataFrame) -> None:
    """Insert one spooled batch of collectives, a row a line (paired_sides), cut to the columns'
    sizes: on PostgreSQL as CSV written by polars (COPY), on SQLite as instances."""
    rows = paired_sides(frame).select(
        pl.lit(lf.run_id, pl.Int64).alias("run"), pl.lit(lf.id, pl.Int64).alias("logfile"), "line",
        pl.col("process").str.slice(0, 64), "op", "size_bytes", "count", pl.col("dtype").str.slice(0, 16),
        pl.col("redop").str.slice(0, 16), "root", *COLLECTIVE_FIELDS[10:])
    if connection.vendor != "postgresql":
        _bulk_create(CollectiveResult, COLLECTIVE_FIELDS, rows.iter_rows())
        return
    # Every text quoted, so that no text reads as the NULL mark (\N), which only a missing number is.
    csv = rows.write_csv(include_header=False, null_value="\\N", quote_style="non_numeric").encode()
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"{_copy_into(CollectiveResult, COLLECTIVE_FIELDS)} WITH (FORMAT csv, NULL '\\N')") as copy:
        copy.write(csv)


def _insert_islands(lf: LogFile, islands: BusbwIslands) -> None:
    """Insert the file's islands of nccl-tests row lines (tens of thousands at most: a table each)."""
    write = _copy if connection.vendor == "postgresql" else _bulk_create
    write(CollectiveIsland, ISLAND_FIELDS, [(lf.run_id, lf.id, *island) for island in islands.islands()])


def _insert_nccl(lf: LogFile, nccl: list[rec.NcclValue]) -> None:
    """Insert NCCL values, cut to the columns' sizes."""
    write = _copy if connection.vendor == "postgresql" else _bulk_create
    write(NcclSetting, NCCL_FIELDS, [
        (lf.run_id, lf.id, n.line, n.process[:64], n.key[:64], n.value[:512], n.kind, n.rank[:32], n.source[:200], "")
        for n in nccl])


def _copy(model: Any, fields: tuple[str, ...], rows: list[tuple]) -> None:
    """PostgreSQL COPY into the model's table, on the transaction's own connection: several
    times faster than bulk_create's INSERTs for the same rows."""
    if not rows:
        return
    with connection.cursor() as cursor, cursor.cursor.copy(_copy_into(model, fields)) as copy:
        for row in rows:
            copy.write_row(row)


def _copy_into(model: Any, fields: tuple[str, ...]) -> str:
    """`COPY table (columns) FROM STDIN` of these fields of the model."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(model._meta.get_field(f).column) for f in fields)
    return f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"


def _bulk_create(model: Any, fields: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """SQLite's way: the same rows as model instances."""
    names = _attnames(fields)
    model.objects.bulk_create((model(**dict(zip(names, row, strict=True))) for row in rows), batch_size=BATCH)


def _attnames(fields: tuple[str, ...]) -> list[str]:
    return [f"{f}_id" if f in ("run", "logfile") else f for f in fields]


def _finish_logfile(lf: LogFile, result: ParseResult) -> None:
    # The parse's freed memory back to the system before the summary's own peak (glibc keeps it
    # in its arenas otherwise): the 512 MB ingest's worker peaked at 468-518 MB, 418-431 now.
    native.trim_heap()
    # Conditional on the claim: a file re-queued or a run deleted while the rows were written
    # rolls the store back (_store_rows locked nothing of the file's row before this).
    if not LogFile.objects.filter(id=lf.id, status=Status.PARSING, claimed_at=lf.claimed_at).update(
        status=Status.READY, error="", error_line=None, parsed_at=timezone.now(), lines=result.lines,
        formats=result.formats,
        processes={"processes": result.processes, "launch_lines": result.launch_lines[:1000]},
        settings={k: {"value": s.value, "line": s.line, "source": s.source} for k, s in result.settings.items()},
        warnings=[{"line": w.line, "message": w.message} for w in result.warnings][:200],
    ):
        raise _ClaimLost()
    refresh_run(lf.run_id)


def reparse_run(user: User, run: Run) -> None:
    """Parse all of a run's files again, for an editor of its project (a parser upgrade)."""
    require_role(user, run.project_id, Role.EDITOR)
    requeue_run(run)


def requeue_run(run: Run) -> None:
    """Queue all of a run's files for a new parse; rows are replaced when each parse commits."""
    with transaction.atomic():
        # updated_at by hand: update() skips auto_now, and the reconciler reads it as "queued since".
        run.logfiles.update(status=Status.QUEUED, attempts=0, error="", error_line=None, claimed_at=None,
                            claim_token="", updated_at=timezone.now())
        refresh_run(run.id)
        enqueue_run(run)


def reconcile(now=None) -> int:
    """Queue again log files stuck in queued/parsing (lost message, dead worker). Returns how many."""
    now = now or timezone.now()
    stuck_before = now - timedelta(seconds=settings.RECONCILE_AFTER_SECONDS)
    stuck = LogFile.objects.filter(Q(status=Status.QUEUED, updated_at__lt=stuck_before) | _stale_claim(now))
    count = 0
    for lf in stuck:
        # Conditional on what was read: a worker that claimed, finished or beat meanwhile wins.
        unchanged = LogFile.objects.filter(id=lf.id, status=lf.status, updated_at=lf.updated_at,
                                           heartbeat_at=lf.heartbeat_at)
        with transaction.atomic():
            # A row held by another transaction is a live worker's store finishing (its heartbeat
            # skipped meanwhile: Heartbeat.beat): left alone, not waited for.
            if not unchanged.select_for_update(skip_locked=True).values_list("id", flat=True):
                continue
            if lf.attempts >= settings.MAX_PARSE_ATTEMPTS:
                if not unchanged.update(
                    status=Status.FAILED, updated_at=now,
                    error=f"{lf.original_name}: gave up after {lf.attempts} attempts (the worker died or hung)",
                ):
                    continue
                _delete_rows(lf)
                refresh_run(lf.run_id)
            else:
                if not unchanged.update(status=Status.QUEUED, claimed_at=None, claim_token="", updated_at=now):
                    continue
                transaction.on_commit(partial(send_parse, lf.id))
        count += 1
    return count
