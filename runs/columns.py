"""The stored columns: a log file's phase and metric rows, written and read here and nowhere else.

Every writer (the parse's store step, tools, tests) and every reader (the summary, the charted
series and their zooms, a figure's source panel, the trend page, the reference `run_result`)
goes through the functions below; no other module touches `SampleBlock` or its bytes.

One format on disk: column blocks (runs/blocks.py), up to BLOCK_ROWS rows of one kind, name and
source as zstd Arrow IPC, each `SampleBlock` row keeping its name, source, window range and row
count in SQL. Blocks serve both kinds of reader:
- a chart, a zoom or a trend wants one figure, sometimes of one window range, of one or many
  runs: SQL picks that figure's few blocks (by name, source and window range) and nothing else
  is read or inflated;
- the summary wants every row of every ready file, grouped per (process, source, name, rank):
  it reads the file's blocks in order, one at a time, and regroups them into the digest's
  columns parked on disk (`summary_rows`), so memory holds a block and one group, not the file.
A second form for the summary (a compressed stream per file) would store every value twice and
could not serve the first kind without inflating a whole file for one figure.

`i` in a block is the row's place among its file's rows of its kind in the order the parser
emitted them: "window, then i" is the order every reader gives.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import groupby
from typing import Any, BinaryIO

import polars as pl
from django.db import connection
from django.db.models import QuerySet, Sum

from runs import blocks, digest
from runs.models import LogFile, Run, SampleBlock

PHASE, METRIC = blocks.PHASE, blocks.METRIC
VALUE = blocks.VALUE  # the value column of each kind: "ms" or "value"

# Columns of a block's database row, in the order `write` gives them (COPY uses their columns).
FIELDS = ("run", "logfile", "kind", "name", "source", "seq", "rows", "window_lo", "window_hi", "data")
TYPES = ("int8", "int8", "text", "text", "text", "int4", "int4", "int4", "int4", "bytea")


# ---- writing ----------------------------------------------------------------------------------

class Cutter:
    """A log file's parsed phases and metrics (records.PHASE_SCHEMA / METRIC_SCHEMA frames, in
    emission order), cut to the columns' sizes and into blocks as they come, out of any
    transaction; each block waits compressed in `spool` (a sixth of the rows' size) until
    `write` stores them all in the store's short transaction."""

    def __init__(self, spool: BinaryIO) -> None:
        self.spool = spool
        self.writer = blocks.BlockWriter(self._park)

    def add(self, phases: pl.DataFrame | None = None, metrics: pl.DataFrame | None = None) -> None:
        if phases is not None:
            self.writer.add(PHASE, phases.with_columns(
                pl.col("name").str.slice(0, 100), pl.col("process").str.slice(0, 64),
                pl.col("source").str.slice(0, 32)))
        if metrics is not None:
            self.writer.add(METRIC, metrics.with_columns(
                pl.col("name").str.slice(0, 64), pl.col("rank").str.slice(0, 32),
                pl.col("process").str.slice(0, 64), pl.col("source").str.slice(0, 32)))

    def finish(self) -> None:
        """Cut what is still held (once the parse has handed over its last rows)."""
        self.writer.finish()

    def _park(self, block: blocks.Block) -> None:
        head = [block.kind, block.name, block.source, block.seq, block.rows, block.window_lo, block.window_hi,
                len(block.data)]
        self.spool.write(json.dumps(head).encode() + b"\n")
        self.spool.write(block.data)

    def blocks(self) -> Iterator[blocks.Block]:
        self.spool.seek(0)
        while raw := self.spool.readline():
            kind, name, source, seq, rows, lo, hi, size = json.loads(raw)
            yield blocks.Block(kind, name, source, seq, rows, lo, hi, self.spool.read(size))


def write(lf: LogFile, cut: Cutter) -> None:
    """Store the cut blocks as `lf`'s, in the caller's transaction (the store holds the file's
    row locked and has deleted its old columns). On PostgreSQL one binary COPY: bytea goes as
    bytes, not as the driver's hex text at twice the size, in one statement."""
    with _binary_copy() as copy:
        for b in cut.blocks():
            row = (lf.run_id, lf.id, b.kind, b.name, b.source, b.seq, b.rows, b.window_lo, b.window_hi, b.data)
            if copy is not None:
                copy.write_row(row)
            else:  # one at a time: a block is up to a few MB
                SampleBlock.objects.create(**dict(zip(_attnames(FIELDS), row, strict=True)))


def store(lf: LogFile, phases: pl.DataFrame | None = None, metrics: pl.DataFrame | None = None) -> None:
    """A whole file's rows at once (tools and tests; a parse cuts as it goes: Cutter, write)."""
    with io.BytesIO() as spool:
        cut = Cutter(spool)
        cut.add(phases, metrics)
        cut.finish()
        write(lf, cut)


def delete(lf: LogFile) -> None:
    """Forget a log file's stored columns (a parse replacing them, a file given up on)."""
    SampleBlock.objects.filter(logfile=lf).delete()


def move(logfile_ids: Iterable[int], run: Run) -> None:
    """The columns of these log files now belong to `run` (a run split by launch)."""
    SampleBlock.objects.filter(logfile_id__in=list(logfile_ids)).update(run=run)


@contextmanager
def _binary_copy() -> Iterator[Any]:
    """A binary COPY into the blocks' table on the transaction's connection (None but on PostgreSQL)."""
    if connection.vendor != "postgresql":
        yield None
        return
    quote = connection.ops.quote_name
    column = {f.name: f.column or f.attname for f in SampleBlock._meta.concrete_fields}
    columns = ", ".join(quote(column[f]) for f in FIELDS)
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {quote(SampleBlock._meta.db_table)} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(list(TYPES))
        yield copy


def _attnames(fields: tuple[str, ...]) -> list[str]:
    return [f"{f}_id" if f in ("run", "logfile") else f for f in fields]


# ---- reading ----------------------------------------------------------------------------------

def _found(kind: str, *, run_id: int | None = None, run_ids: Iterable[int] | None = None,
           logfile: int | None = None, names: Iterable[str] | None = None, name_has: str = "",
           source: str | None = None, sources: Iterable[str] | None = None,
           windows: tuple[int, int] | None = None) -> QuerySet:
    found = SampleBlock.objects.filter(kind=kind)
    if run_id is not None:
        found = found.filter(run_id=run_id)
    if run_ids is not None:
        found = found.filter(run_id__in=list(run_ids))
    if logfile is not None:
        found = found.filter(logfile_id=logfile)
    if names is not None:
        found = found.filter(name__in=list(names))
    if name_has:
        found = found.filter(name__icontains=name_has)
    if source is not None:
        found = found.filter(source=source)
    if sources is not None:
        found = found.filter(source__in=list(sources))
    if windows is not None:  # the blocks whose window range meets the zoom's
        found = found.filter(window_lo__lte=windows[1], window_hi__gte=windows[0])
    return found


def frame(run_id: int | None, kind: str, columns: Iterable[str] | None = None, *, labels: bool = True,
          logfile: int | None = None, names: Iterable[str] | None = None, name_has: str = "",
          source: str | None = None, sources: Iterable[str] | None = None,
          windows: tuple[int, int] | None = None) -> pl.DataFrame:
    """A run's rows of one kind (every run's with None: tools and tests) as one frame in the
    run's order (logfile, window, i): `columns` (every one by default) with `i`, `window` and
    `logfile`, and with `labels` `name` and `source`. Only the blocks that can hold a match are
    read: of these names (exactly, or containing `name_has`, case-insensitive), sources, log
    file, and meeting `windows` (lo, hi; the rows outside it are the caller's to drop)."""
    found = _found(kind, run_id=run_id, logfile=logfile, names=names, name_has=name_has, source=source,
                   sources=sources, windows=windows)
    return blocks.frame(kind, found.order_by("logfile_id", "seq").values_list("logfile_id", "name", "source", "data"),
                        columns, labels=labels)


def frames_by_run(run_ids: Iterable[int], kind: str, columns: Iterable[str], *,
                  names: Iterable[str] | None = None, name_has: str = "") -> dict[int, pl.DataFrame]:
    """`frame` of many runs in one query (a figure is a few blocks a run), by run id; a run
    without such rows is not in the answer."""
    found = _found(kind, run_ids=run_ids, names=names, name_has=name_has)
    by_run: dict[int, list] = {}
    for run_id, *block in found.order_by("run_id", "logfile_id", "seq").values_list(
            "run_id", "logfile_id", "name", "source", "data"):
        by_run.setdefault(run_id, []).append(block)
    return {run_id: blocks.frame(kind, found_blocks, columns) for run_id, found_blocks in by_run.items()}


def sources(run_id: int, kind: str, names: Iterable[str]) -> set[str]:
    """The sources of a run's rows of these names (from the blocks' rows in SQL, no block read)."""
    return set(_found(kind, run_id=run_id, names=names).values_list("source", flat=True).distinct())


def names(run_id: int, kind: str, names: Iterable[str], source: str | None = None) -> set[str]:
    """Which of these names a run's rows (of `source`) have (from the blocks' rows in SQL)."""
    return set(_found(kind, run_id=run_id, names=names, source=source).values_list("name", flat=True).distinct())


def row_count(run_id: int) -> int:
    """A run's phase and metric rows, counted from the blocks' rows in SQL."""
    return SampleBlock.objects.filter(run_id=run_id).aggregate(n=Sum("rows"))["n"] or 0


def file_rows(lf: LogFile, kind: str, order: tuple[str, ...] = ("window", "i")) -> pl.DataFrame:
    """Every row and column of one kind of a log file, in `order` (every row at once: tools and
    the reference `run_result` only)."""
    return frame(lf.run_id, kind, logfile=lf.id).sort(list(order))


def phase_slices(run_id: int) -> Iterator[pl.DataFrame]:
    """A run's phase rows (logfile, window, name, ms, line, i) in the run's order (logfile,
    window, i), a slice at a time: memory holds the blocks open at one window (about one per
    phase name), not the run's rows (millions on a large log).

    Blocks of a file are opened in order of their lowest window; once every block starting
    below window `cut` is open, the rows below `cut` are all there: they go out sorted, the
    rest wait for the next cut. A window's rows never straddle two slices."""
    found = _found(PHASE, run_id=run_id)
    metas = list(found.order_by("logfile_id", "window_lo", "seq").values_list("id", "logfile_id", "name", "window_lo"))
    for logfile, group in groupby(metas, key=lambda m: m[1]):
        pending = list(group)
        waiting: list[pl.DataFrame] = []
        while pending or waiting:
            start = pending[0][3] if pending else None
            opened = [m for m in pending if m[3] == start]
            pending = pending[len(opened):]
            data = dict(found.filter(id__in=[m[0] for m in opened]).values_list("id", "data")) if opened else {}
            waiting += [blocks.decode(data.pop(m[0]), ["i", "window", "ms", "line"])
                        .with_columns(name=pl.lit(m[2], pl.String)) for m in opened]
            cut = pending[0][3] if pending else None
            rows = pl.concat(waiting) if waiting else None
            if rows is None:
                continue
            if cut is None:
                ready, waiting = rows, []
            else:
                ready = rows.filter(pl.col("window") < cut)
                waiting = [rows.filter(pl.col("window") >= cut)] if ready.height < rows.height else []
            if ready.height:
                yield ready.sort(["window", "i"]).select(
                    logfile=pl.lit(logfile, pl.Int64), window="window", name="name", ms="ms", line="line", i="i")


def phase_blocks(run_id: int) -> Iterator[tuple[int, str, pl.DataFrame]]:
    """A run's phase blocks one at a time, in (logfile, seq) order: (logfile, name, its rows'
    i, window, ms and line), in the block's order, not the run's. For readers that need no order
    across blocks (a count, a lowest per bucket): no slice is cut, concatenated or sorted."""
    found = _found(PHASE, run_id=run_id).order_by("logfile_id", "seq")
    for logfile, name, data in found.values_list("logfile_id", "name", "data").iterator(chunk_size=4):
        yield logfile, name, blocks.decode(data, ["i", "window", "ms", "line"])


def summary_rows(files: list[LogFile], spill: digest.Spill) -> digest.Rows:
    """The phases and metrics of a run's ready `files` (in id order) as the summary reads them:
    groups per (log file, process, source, name, rank) whose columns are parked in `spill` (the
    summary loads one group at a time), windows of later files following on from the earlier
    ones' (as run_result numbers them). The blocks are read
    one at a time in one query; a group's rows keep their file order (`i`), groups come in the
    order of their first row, as the records had them."""
    groups = digest.Regrouper(spill)
    offset = file_id = highest = 0
    found = SampleBlock.objects.filter(logfile_id__in=[lf.id for lf in files])
    for logfile, kind, name, source, window_hi, data in found.order_by("logfile_id", "seq").values_list(
            "logfile_id", "kind", "name", "source", "window_hi", "data").iterator(chunk_size=4):
        if logfile != file_id:
            offset, file_id, highest = offset + highest, logfile, 0
        highest = max(highest, window_hi)
        rows = blocks.decode(data)
        phase = kind == PHASE
        groups.add(phase, logfile, name, source, rows.select(
            "process", rank=pl.lit("", pl.String) if phase else "rank", window=pl.col("window") + offset,
            line=pl.col("line").fill_null(0), value=VALUE[kind], order="i",
            **({"pct": pl.col("pct").fill_null(digest.NAN)} if phase else {})))
    return groups.rows()
