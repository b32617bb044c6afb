"""The bulky rows of a parse as compact columns: what the run summary needs of them (issue 10).

A log file's phases and metrics are grouped by (process, source, name, rank), each group four
arrays (window, line, value, order) instead of one object per row. ingest.services builds one
digest per file while it stores the rows (they pass through its spool anyway) and refresh_run
combines the files' digests: the summary never reloads every row through the ORM. A lone parse
(parselog, tests) goes through the same columns (`rows_from_result`), so both paths give the
same figures by construction.

Pure: no Django (the summary is tested without a database).
"""

from __future__ import annotations

import json
import math
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # the parsers' record shapes; runs never loads ingest at run time
    from ingest.parsers.records import ParseResult

# Collectives kept in a run's `parsed` (the rows stay in their table; pages read them there).
COLLECTIVES_KEPT = 200
NAN = math.nan
VERSION = 1


def ints(values: Iterable[int]) -> array:
    """4 bytes a number when they fit (they do for windows and line numbers), else 8."""
    values = list(values) if not isinstance(values, (list, array)) else values
    try:
        return array("i", values)
    except OverflowError:
        return array("q", values)


@dataclass(slots=True)
class Group:
    """Rows of one (log file, process, source, name, rank): phases carry `pcts` (NaN = none printed).

    `order` is each row's position among its file's rows (stored runs, read back in window
    order, then that position) or in the parse (a lone parse): the order the records had.
    """

    logfile: int | None
    process: str
    source: str
    name: str
    rank: str
    windows: array
    lines: array
    values: array
    order: array
    pcts: array | None = None

    def __len__(self) -> int:
        return len(self.windows)

    def part(self, keep: list[int]) -> Group:
        """The rows at the indices `keep` (a launch's share of a file shared by launches)."""
        return Group(self.logfile, self.process, self.source, self.name, self.rank,
                     ints(self.windows[i] for i in keep), ints(self.lines[i] for i in keep),
                     array("d", (self.values[i] for i in keep)), ints(self.order[i] for i in keep),
                     None if self.pcts is None else array("d", (self.pcts[i] for i in keep)))


@dataclass
class Rows:
    """What the summary reads of a run's (or a lone parse's) bulky rows."""

    metrics: list[Group] = field(default_factory=list)
    phases: list[Group] = field(default_factory=list)
    # Stored rows are read back per file in window order: (log file, window, order) is their
    # original order. A lone parse's order is its list order alone.
    by_window: bool = False
    collectives: list[dict] = field(default_factory=list)  # the first COLLECTIVES_KEPT
    collectives_total: int = 0
    # (log file, process) -> (rows with a bus bandwidth, the highest): the nccl-tests panels.
    busbw: dict[tuple[int | None, str], tuple[int, float]] = field(default_factory=dict)
    # log file -> its last `avg_busbw_gbs` (nccl-tests' "Avg bus bandwidth" line).
    last_avg_busbw: dict[int | None, float] = field(default_factory=dict)

    def first_key(self, group: Group) -> tuple:
        """Where the group's first row stood in the original order (phase tables list names so)."""
        file_key = -1 if group.logfile is None else group.logfile
        if not self.by_window:
            return (file_key, min(group.order))
        low = min(group.windows)
        return (file_key, low, min(o for w, o in zip(group.windows, group.order, strict=True) if w == low))

    def ordered(self, groups: list[Group]) -> Iterator[tuple[Group, int]]:
        """(group, row index) in the records' original order (rare paths: small or tie-breaking)."""
        keyed = []
        for g in groups:
            file_key = -1 if g.logfile is None else g.logfile
            for i in range(len(g)):
                keyed.append(((file_key, g.windows[i], g.order[i]) if self.by_window else (file_key, g.order[i]),
                              id(g), g, i))
        keyed.sort(key=lambda k: (k[0], k[1]))
        for _, _, g, i in keyed:
            yield g, i


def collective_dict(op: str, size_bytes: int, time_us: float | None, algbw: float | None, busbw: float | None,
                    in_place: bool) -> dict:
    return {"op": op, "size_bytes": size_bytes, "time_us": time_us, "algbw_gbs": algbw, "busbw_gbs": busbw,
            "in_place": in_place}


def rows_from_result(result: ParseResult) -> Rows:
    """A lone parse's records as columns (every record's logfile as the parser or run_result set it)."""
    builder = _Grouper()
    for i, m in enumerate(result.metrics):
        builder.add(False, m.logfile, m.process, m.source, m.name, m.rank, m.window, m.line, m.value, i, NAN)
    for i, p in enumerate(result.phases):
        builder.add(True, p.logfile, p.process, p.source, p.name, "", p.window, p.line, p.ms, i,
                    NAN if p.pct is None else p.pct)
    rows = Rows(metrics=builder.groups(False), phases=builder.groups(True), by_window=False)
    tally = CollectiveTally()
    tally.add(result.collectives)
    tally.into(rows)
    for m in result.metrics:
        if m.name == "avg_busbw_gbs":
            rows.last_avg_busbw[m.logfile] = m.value
    return rows


class CollectiveTally:
    """What the summary keeps of a parse's collectives, fed batch by batch in bounded memory: the
    first COLLECTIVES_KEPT, how many there are, and per (log file, process) the rows with a bus
    bandwidth and the highest (what refresh_run asks SQL for on a stored run)."""

    def __init__(self) -> None:
        # The records themselves until the end: nccl-tests names the op of a table's rows at its
        # "Collective test concluded" line, after a sink may have taken them.
        self.kept: list = []
        self.total = 0
        self.busbw: dict[tuple[int | None, str], tuple[int, float]] = {}

    def add(self, collectives: Iterable) -> None:
        for c in collectives:
            if len(self.kept) < COLLECTIVES_KEPT:
                self.kept.append(c)
            self.total += 1
            if c.busbw_gbs is not None:
                n, peak = self.busbw.get((c.logfile, c.process), (0, c.busbw_gbs))
                self.busbw[(c.logfile, c.process)] = (n + 1, max(peak, c.busbw_gbs))

    def into(self, rows: Rows) -> None:
        rows.collectives = [collective_dict(c.op, c.size_bytes, c.time_us, c.algbw_gbs, c.busbw_gbs, c.in_place)
                            for c in self.kept]
        rows.collectives_total, rows.busbw = self.total, self.busbw


class ParseDigest:
    """A parse_stream sink for a lone parse (parselog): each batch of rows folded into a
    FileDigest's columns and a CollectiveTally as the parse goes: parselog peaks at ~40 bytes a
    phase or metric instead of ~250 with record objects (measured, issue 10). NCCL values are few and the summary
    reads them from the result: they are kept as they come and handed back by `rows()`.

    summarize(result, digest.rows(result)) gives what summarize(result) gives without a sink.
    """

    def __init__(self) -> None:
        self.digest = FileDigest()
        self.collectives = CollectiveTally()
        self.nccl: list = []

    def __call__(self, result: ParseResult) -> None:
        phases, metrics, collectives, nccl = result.take_columns()
        # Each kind keeps its own order (a shared sequence numbers both: same order within a kind).
        if phases is not None:
            self.digest.phase_frame(phases)
        if metrics is not None:
            self.digest.metric_frame(metrics)
        self.collectives.add(collectives)
        # The same objects: the nccl_debug parser sets a held echo's rank at its end.
        self.nccl.extend(nccl)

    def rows(self, result: ParseResult) -> Rows:
        """After the parse: take the rows still pending, put the NCCL values back in `result`."""
        self(result)
        result.nccl = self.nccl
        rows = self.digest.rows()
        self.collectives.into(rows)
        return rows


def _narrow(column: array) -> array:
    """The column itself when already 4 bytes a number (no copy of a large file's rows), else ints()."""
    return column if column.typecode == "i" else ints(column)


def _widen(cols: list[array], window: int, line: int, order: int) -> None:
    """Make the int columns 8 bytes a number and append the row's ints (those not appended yet)."""
    n = len(cols[2])  # rows before this one: the value is appended after the ints
    for i, x in ((0, window), (1, line), (3, order)):
        cols[i] = array("q", cols[i])
        if len(cols[i]) == n:
            cols[i].append(x)


class _Grouper:
    def __init__(self) -> None:
        self._groups: dict[tuple, list] = {}

    def add(self, phase: bool, logfile: int | None, process: str, source: str, name: str, rank: str,
            window: int, line: int, value: float, order: int, pct: float) -> None:
        key = (phase, logfile, process, source, name, rank)
        cols = self._groups.get(key)
        if cols is None:
            # Arrays, not lists: a million rows of a file cost 20 bytes each here (28 a phase), not
            # ~100. Window, line and order take 4 bytes until one does not fit (then 8: _widen).
            cols = self._groups[key] = [array("i"), array("i"), array("d"), array("i"), array("d")]
        try:
            cols[0].append(window)
            cols[1].append(line)
            cols[3].append(order)
        except OverflowError:
            _widen(cols, window, line, order)
        cols[2].append(value)
        if phase:  # a metric has no pct: its column stays empty
            cols[4].append(pct)

    def add_frame(self, phase: bool, logfile: int | None, frame: pl.DataFrame, order: int) -> None:
        """Rows as columns (ingest.parsers.records' PHASE_SCHEMA or METRIC_SCHEMA), numbered from
        `order`: what add() would make of them one by one, a group at a time."""
        value = "ms" if phase else "value"
        frame = frame.with_columns(order=pl.int_range(order, order + frame.height, dtype=pl.Int64))
        if phase:
            frame = frame.with_columns(rank=pl.lit(""), pct=pl.col("pct").fill_null(NAN))
        for (process, source, name, rank), part in frame.group_by(
                ["process", "source", "name", "rank"], maintain_order=True):
            key = (phase, logfile, process, source, name, rank)
            cols = self._groups.get(key)
            if cols is None:
                cols = self._groups[key] = [array("i"), array("i"), array("d"), array("i"), array("d")]
            for i, column in ((0, "window"), (1, "line"), (3, "order")):
                values = part.get_column(column).to_list()
                try:
                    cols[i].extend(values)
                except OverflowError:
                    cols[i] = array("q", cols[i])
                    cols[i].extend(values)
            cols[2].extend(part.get_column(value).to_list())
            if phase:
                cols[4].extend(part.get_column("pct").to_list())

    def groups(self, phase: bool) -> list[Group]:
        return [Group(k[1], k[2], k[3], k[4], k[5], _narrow(c[0]), _narrow(c[1]), c[2], _narrow(c[3]),
                      c[4] if phase else None)
                for k, c in self._groups.items() if k[0] == phase]


class FileDigest:
    """One log file's phases and metrics as they are stored (same truncations), built row by row
    while ingest.services writes them; `encode()` is what LogFile's digest row keeps."""

    def __init__(self) -> None:
        self._grouper = _Grouper()
        self.seq = 0
        self.max_window = 0
        self._avg: tuple[int, int, float] | None = None  # (window, order, value) of the last avg_busbw_gbs

    def phase(self, process: str, source: str, name: str, window: int, line: int, ms: float,
              pct: float | None) -> None:
        self._grouper.add(True, None, process, source, name, "", window, line, ms, self.seq,
                          NAN if pct is None else pct)
        self.seq += 1
        if window > self.max_window:
            self.max_window = window

    def metric(self, process: str, source: str, name: str, rank: str, window: int, line: int, value: float) -> None:
        self._grouper.add(False, None, process, source, name, rank, window, line, value, self.seq, NAN)
        if name == "avg_busbw_gbs" and (self._avg is None or (window, self.seq) >= self._avg[:2]):
            self._avg = (window, self.seq, value)
        self.seq += 1
        if window > self.max_window:
            self.max_window = window

    def phase_frame(self, frame: pl.DataFrame) -> None:
        """phase() of every row of a frame (PHASE_SCHEMA), in its order."""
        self._grouper.add_frame(True, None, frame, self.seq)
        self.seq += frame.height
        self.max_window = max(self.max_window, int(frame.get_column("window").max() or 0))  # type: ignore[arg-type]

    def metric_frame(self, frame: pl.DataFrame) -> None:
        """metric() of every row of a frame (METRIC_SCHEMA), in its order."""
        avg = frame.with_row_index("order", offset=self.seq).filter(pl.col("name") == "avg_busbw_gbs")
        if avg.height:
            last = avg.sort(["window", "order"]).row(-1, named=True)
            if self._avg is None or (last["window"], last["order"]) >= self._avg[:2]:
                self._avg = (last["window"], last["order"], last["value"])
        self._grouper.add_frame(False, None, frame, self.seq)
        self.seq += frame.height
        self.max_window = max(self.max_window, int(frame.get_column("window").max() or 0))  # type: ignore[arg-type]

    def rows(self) -> Rows:
        """The digest as a lone parse's rows (no log file id, the records' own order)."""
        rows = Rows(metrics=self._grouper.groups(False), phases=self._grouper.groups(True), by_window=False)
        if self._avg is not None:
            # The nccl-tests parser numbers its tables upward: the highest (window, order) is the last row.
            rows.last_avg_busbw[None] = self._avg[2]
        return rows

    def encode(self) -> bytes:
        """The digest's bytes (zlib), compressed a column at a time: never all the raw columns at
        once beside the arrays (a 512 MB log's digest is ~400 MB of them, issue 10)."""
        groups = [(True, g) for g in self._grouper.groups(True)] + [(False, g) for g in self._grouper.groups(False)]
        header = {
            "v": VERSION, "byteorder": sys.byteorder, "max_window": self.max_window,
            "last_avg_busbw": None if self._avg is None else self._avg[2],
            "groups": [[phase, g.process, g.source, g.name, g.rank, len(g),
                        g.windows.typecode, g.lines.typecode, g.order.typecode] for phase, g in groups],
        }
        head = json.dumps(header).encode()
        z = zlib.compressobj(1)
        out = [z.compress(struct.pack("<I", len(head))), z.compress(head)]
        for phase, g in groups:
            columns = [g.windows, g.lines, g.values, g.order]
            if phase:
                assert g.pcts is not None
                columns.append(g.pcts)
            out += [z.compress(memoryview(c).cast("B")) for c in columns]
        out.append(z.flush())
        return b"".join(out)

    def drop(self) -> None:
        """Forget the rows (once encoded): the store's refresh then runs without them in memory."""
        self._grouper = _Grouper()


class _Inflater:
    """A zlib stream read a piece at a time: a digest's columns come out one by one, never the
    whole raw digest at once."""

    STEP = 1 << 20

    def __init__(self, blob: bytes | memoryview) -> None:
        self.blob, self.pos = memoryview(blob), 0
        self.z = zlib.decompressobj()
        self.buf = bytearray()

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            if self.z.unconsumed_tail:
                more = self.z.decompress(self.z.unconsumed_tail, max(n - len(self.buf), self.STEP))
            elif self.pos < len(self.blob):
                more = self.z.decompress(self.blob[self.pos:self.pos + self.STEP], max(n - len(self.buf), self.STEP))
                self.pos += self.STEP
            else:
                more = self.z.flush()
                if not more:
                    raise ValueError("digest cut short")
            self.buf += more
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


@dataclass
class Decoded:
    max_window: int
    last_avg_busbw: float | None
    phases: list[Group]
    metrics: list[Group]


def decode(blob: bytes | memoryview, logfile: int, offset: int) -> Decoded:
    """A FileDigest's bytes back as groups of `logfile`, windows moved on by `offset` (a run's
    later files follow on from the earlier ones, as run_result numbers them)."""
    stream = _Inflater(blob)
    (size,) = struct.unpack("<I", stream.read(4))
    header = json.loads(stream.read(size))
    if header["v"] != VERSION:
        raise ValueError(f"digest version {header['v']} (this code reads {VERSION})")
    swap = header["byteorder"] != sys.byteorder
    out = Decoded(header["max_window"], header["last_avg_busbw"], [], [])

    def take(typecode: str, n: int) -> array:
        a = array(typecode)
        a.frombytes(stream.read(n * a.itemsize))
        if swap:
            a.byteswap()
        return a

    for phase, process, source, name, rank, n, wcode, lcode, ocode in header["groups"]:
        windows = take(wcode, n)
        if offset:
            windows = ints(w + offset for w in windows)
        lines, values, order = take(lcode, n), take("d", n), take(ocode, n)
        pcts = take("d", n) if phase else None
        (out.phases if phase else out.metrics).append(
            Group(logfile, process, source, name, rank, windows, lines, values, order, pcts))
    return out
