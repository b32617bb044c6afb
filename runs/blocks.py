"""A log file's phase and metric rows as column blocks, not one database row per value.

A 512 MB serving log holds ~9.5M phase and metric values. As rows, PostgreSQL took them at
~235k rows/s through COPY (40 s, three indexes each), while pages read only per-run series and
digests, and rows serve zooms, a figure's source panel and traceability. So a file's rows are
kept as blocks: up to BLOCK_ROWS rows of ONE kind, name and source (a figure's values are a
few blocks, read without the others), compressed Arrow IPC columns:

    phase:  i, window, line, process, ms, pct
    metric: i, window, line, process, value, rank

`i` is the row's place among the file's rows of its kind, in the order the parser emitted them:
what the row tables' ids were, so "window, then i" is the order every reader used ("window, id").
Name and source are the block's (SampleBlock columns), as are its window range (zooms skip
blocks outside theirs) and row count.

Pure: no database here. `BlockWriter` cuts frames into blocks and hands each to a callback;
`frame` reads blocks back. runs/columns.py is their one user: it stores and fetches the blocks
and every other module goes through it.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import polars as pl

PHASE, METRIC = "phase", "metric"
BLOCK_ROWS = 65_536  # rows per block: a figure of a 100k-window file is two blocks
HELD_ROWS = 8 * BLOCK_ROWS  # rows held unwritten across names before the largest is cut early
COLUMNS = {
    PHASE: pl.Schema({"i": pl.Int64, "window": pl.Int64, "line": pl.Int64, "process": pl.String,
                      "ms": pl.Float64, "pct": pl.Float64}),
    METRIC: pl.Schema({"i": pl.Int64, "window": pl.Int64, "line": pl.Int64, "process": pl.String,
                       "value": pl.Float64, "rank": pl.String}),
}
VALUE = {PHASE: "ms", METRIC: "value"}


@dataclass(frozen=True)
class Block:
    """One block as the database keeps it (SampleBlock)."""

    kind: str
    name: str
    source: str
    seq: int  # the order the file's blocks were cut in
    rows: int
    window_lo: int
    window_hi: int
    data: bytes


def encode(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_ipc(out, compression="zstd")
    return out.getvalue()


def decode(data: bytes | memoryview, columns: Iterable[str] | None = None) -> pl.DataFrame:
    return pl.read_ipc(io.BytesIO(bytes(data)), columns=None if columns is None else list(columns))


def _owned(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows in buffers of their own, the same values to the bit (x * 1 is x, a NaN, a -0.0
    and a null too): a slice or a group_by's part shares its parent's buffers (strings too:
    views), and keeps all of them alive for as long as it is kept."""
    return rows.with_columns([
        pl.col(c).cast(pl.Categorical).cast(pl.String) if t == pl.String else (pl.col(c) * 1).cast(t)
        for c, t in rows.schema.items()])


class BlockWriter:
    """A file's rows, fed as parser frames (records.PHASE_SCHEMA / METRIC_SCHEMA, in emission
    order), cut into blocks of one (kind, name, source). Rows of a key wait until BLOCK_ROWS of
    them are there; past HELD_ROWS held in all, the key holding most is cut early (a log with
    many names holds a bounded number of rows). `finish()` writes what is left."""

    def __init__(self, save: Callable[[Block], None]) -> None:
        self.save = save
        self.seq = 0
        self.count = {PHASE: 0, METRIC: 0}  # rows of each kind seen: the next row's `i`
        self.held: dict[tuple[str, str, str], list[pl.DataFrame]] = {}
        self.held_rows: dict[tuple[str, str, str], int] = {}

    def add(self, kind: str, frame: pl.DataFrame | None) -> None:
        if frame is None or not frame.height:
            return
        start = self.count[kind]
        self.count[kind] += frame.height
        frame = frame.with_columns(i=pl.int_range(start, start + frame.height, dtype=pl.Int64))
        for (name, source), part in frame.group_by(["name", "source"], maintain_order=True):
            key = (kind, str(name), str(source))
            part = part.select(list(COLUMNS[kind]))
            self.held_rows[key] = self.held_rows.get(key, 0) + part.height
            # A part that waits is copied (_owned): the parts of a group_by are slices of the whole
            # batch, so a rare name's rows kept every batch alive (a 128 MB log's fold: +350 MB).
            self.held.setdefault(key, []).append(part if self.held_rows[key] >= BLOCK_ROWS else _owned(part))
            if self.held_rows[key] >= BLOCK_ROWS:
                self._cut(key, whole_only=True)
        while sum(self.held_rows.values()) > HELD_ROWS:
            self._cut(max(self.held_rows, key=self.held_rows.__getitem__))

    def finish(self) -> None:
        for key in list(self.held):
            self._cut(key)

    def _cut(self, key: tuple[str, str, str], whole_only: bool = False) -> None:
        rows = pl.concat(self.held.pop(key), rechunk=True)
        del self.held_rows[key]
        while rows.height and (rows.height >= BLOCK_ROWS or not whole_only):
            block, rows = rows.head(BLOCK_ROWS), rows.slice(BLOCK_ROWS)
            self._write(key, block)
        if rows.height:  # a slice of the concatenation: copied, as it waits
            self.held[key], self.held_rows[key] = [_owned(rows)], rows.height

    def _write(self, key: tuple[str, str, str], block: pl.DataFrame) -> None:
        kind, name, source = key
        lo, hi = block.select(lo=pl.col("window").min(), hi=pl.col("window").max()).row(0)
        self.save(Block(kind, name, source, self.seq, block.height, lo, hi, encode(block)))
        self.seq += 1


def frame(kind: str, blocks: Iterable[tuple[int, str, str, bytes | memoryview]],
          columns: Iterable[str] | None = None, labels: bool = True) -> pl.DataFrame:
    """Rows of (logfile, name, source, data) blocks as one frame in the order the rows were
    read before blocks (logfile, window, i), with a `logfile` column and, with `labels`, `name`
    and `source` ones (32 bytes a row: a figure's ~900k rows of a 512 MB log go without them)."""
    wanted = list(COLUMNS[kind]) if columns is None else list(dict.fromkeys(["i", "window", *columns]))
    tags = {"logfile": pl.Int64, **({"name": pl.String, "source": pl.String} if labels else {})}
    parts = [decode(data, wanted).with_columns(
                 logfile=pl.lit(logfile, pl.Int64),
                 **({"name": pl.lit(name, pl.String), "source": pl.lit(source, pl.String)} if labels else {}))
             for logfile, name, source, data in blocks]
    if not parts:
        return pl.DataFrame(schema={**{c: COLUMNS[kind][c] for c in wanted}, **tags})
    return pl.concat(parts).sort(["logfile", "window", "i"])
