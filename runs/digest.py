"""The bulky rows of a parse as compact columns: what the run summary needs of them.

A log file's phases and metrics are grouped by (process, source, name, rank), each group four
arrays (window, line, value, order) instead of one object per row. A stored run's rows are
regrouped so from its stored column blocks (`Regrouper`, fed by runs.columns.summary_rows); a
lone parse (parselog, tests) goes through the same columns (`FileDigest` as a parse's sink,
`rows_from_result`), so both paths give the same figures by construction. This module stores
nothing: the one stored form of the rows is the blocks (runs/columns.py).

Memory follows one group, not the file: columns being gathered are parked in a `Spill` (an
anonymous temporary file) every FLUSH_ROWS rows, and a group read from a spill loads its
columns from disk each time they are asked for, so the summary holds the columns of the figure
it is computing and no other.

Pure: no Django (the summary is tested without a database).
"""

from __future__ import annotations

import math
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import IO, TYPE_CHECKING

import numpy as np
import polars as pl

from runs.layout import ROLES, layout

if TYPE_CHECKING:  # the parsers' record shapes; runs never loads ingest at run time
    from ingest.parsers.records import Grouped, ParseResult

# Collectives kept in a run's `parsed` (the rows stay in their table; pages read them there).
COLLECTIVES_KEPT = 200
NAN = math.nan
# Rows of columns being gathered held in memory before they go to its spill: ~7 MB of columns.
FLUSH_ROWS = 256 * 1024


def ints(values: Iterable[int]) -> array:
    """4 bytes a number when they fit (they do for windows and line numbers), else 8."""
    values = list(values) if not isinstance(values, (list, array)) else values
    try:
        return array("i", values)
    except OverflowError:
        return array("q", values)


Piece = tuple[int, int, str]  # (byte offset in a spill, numbers, typecode)


class Spill:
    """Columns parked in an anonymous temporary file (gone with its process, even after SIGKILL),
    read back a column at a time: what lets a 512 MB log's columns (~220 MB) be gathered
    and summarised in the memory of its largest group."""

    # The file is made longer ahead of the writes (sparse: no disk until written), GROW at least:
    # a write past a file's end costs ext4 several times one inside it.
    GROW = 64 << 20
    WRITE = 1 << 20

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = directory
        self._file: IO[bytes] | None = None  # opened at the first put: a small parse never spills
        self._end = 0
        self._size = 0  # the file's length, ahead of _end

    def put(self, column: array) -> Piece:
        return self.put_many([column])[0]

    def put_many(self, columns: Sequence[array]) -> list[Piece]:
        """Park several columns with one write: a flush of many small groups (a profile of
        thousands of distinct phase names) costs a system call, not one a column."""
        pieces: list[Piece] = []
        parts = []
        end = self._end
        for column in columns:
            if column.typecode == "q":
                column = _narrow(column)  # widened beside another column: back to 4 bytes if they fit
            pieces.append((end, len(column), column.typecode))
            parts.append(column)
            end += len(column) * column.itemsize
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self.directory)
        if end > self._size:
            self._size = max(end, 2 * self._size, self.GROW)
            os.ftruncate(self._file.fileno(), self._size)
        # Small columns joined into writes of about WRITE bytes, a large one written as it is
        # (a copy of it would double the memory of a large group's flush).
        at, held = self._end, 0
        small: list[memoryview] = []
        for column in parts:
            view = memoryview(column).cast("B")
            if len(view) >= self.WRITE:
                at = self._write(at, b"".join(small))
                at = self._write(at, view)
                small, held = [], 0
                continue
            small.append(view)
            held += len(view)
            if held >= self.WRITE:
                at = self._write(at, b"".join(small))
                small, held = [], 0
        at = self._write(at, b"".join(small))
        assert at == end
        self._end = end
        return pieces

    def _write(self, at: int, data: bytes | memoryview) -> int:
        """`data` written at `at`; where the next bytes go."""
        assert self._file is not None
        written = 0
        while written < len(data):  # a regular file writes all at once; a short write is resumed
            written += os.pwrite(self._file.fileno(), data[written:], at + written)
        return at + written

    def take(self, pieces: Sequence[Piece], typecode: str) -> array:
        """The pieces' numbers in order, as one array of `typecode` (4-byte pieces widen to 8).
        One pread a piece (not seek and read). Not a map of the file: the pages a map touches
        count in the process's RSS, and a summary reads the whole spill, once a launch."""
        assert self._file is not None
        fd = self._file.fileno()
        out = array(typecode)
        for offset, n, code in pieces:
            part = array(code)
            part.frombytes(os.pread(fd, n * part.itemsize, offset))
            if len(pieces) == 1 and code == typecode:
                return part
            out.extend(part if code == typecode else array(typecode, part))
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


@dataclass(frozen=True, slots=True)
class Parked:
    """A column of a group held in a spill: the numbers of its pieces, in order."""

    spill: Spill
    pieces: tuple[Piece, ...]
    typecode: str
    n: int  # the numbers of all the pieces

    @classmethod
    def of(cls, spill: Spill, pieces: Sequence[Piece]) -> Parked:
        if len(pieces) == 1:  # the most (a group of a few rows), without a set
            return cls(spill, tuple(pieces), pieces[0][2], pieces[0][1])
        codes = {code for _, _, code in pieces}
        return cls(spill, tuple(pieces), "q" if "q" in codes else (codes.pop() if codes else "i"),
                   sum(n for _, n, _ in pieces))

    def load(self) -> array:
        return self.spill.take(self.pieces, self.typecode)


Column = array | Parked


def _load(column: Column) -> array:
    return column.load() if isinstance(column, Parked) else column


class Group:
    """Rows of one (log file, process, source, name, rank): phases carry `pcts` (NaN = none printed).

    `order` is each row's position among its file's rows (stored runs, read back in window
    order, then that position) or in the parse (a lone parse): the order the records had.

    A column is an array or Parked in a spill; a parked one is read from disk on each use (it is
    not kept), so callers take a column once per use, into a local name.
    """

    __slots__ = ("logfile", "process", "source", "name", "rank", "_n", "_columns")

    def __init__(self, logfile: int | None, process: str, source: str, name: str, rank: str, windows: Column,
                 lines: Column, values: Column, order: Column, pcts: Column | None = None) -> None:
        self.logfile, self.process, self.source, self.name, self.rank = logfile, process, source, name, rank
        self._columns = (windows, lines, values, order, pcts)
        self._n = len(windows) if isinstance(windows, array) else windows.n

    def __len__(self) -> int:
        return self._n

    @property
    def windows(self) -> array:
        return _load(self._columns[0])

    @property
    def lines(self) -> array:
        return _load(self._columns[1])

    @property
    def values(self) -> array:
        return _load(self._columns[2])

    @property
    def order(self) -> array:
        return _load(self._columns[3])

    @property
    def pcts(self) -> array | None:
        pcts = self._columns[4]
        return None if pcts is None else _load(pcts)

    def typecodes(self) -> tuple[str, str, str]:
        """The typecodes of windows, lines and order, without loading them."""
        windows, lines, _, order, _ = self._columns
        return windows.typecode, lines.typecode, order.typecode

    def part(self, keep: list[int] | np.ndarray) -> Group:
        """The rows at the indices `keep` (a launch's share of a file shared by launches), taken
        by numpy, not a Python step a row."""
        at = np.asarray(keep, dtype=np.intp)
        if len(at) and at[-1] - at[0] + 1 == len(at) and (len(at) == 1 or bool((np.diff(at) == 1).all())):
            return self._between(int(at[0]), int(at[-1]) + 1)

        def take(column: array) -> array:
            out = array(column.typecode)
            out.frombytes(np.frombuffer(column, dtype=np.dtype(column.typecode))[at].tobytes())
            return out

        first = self._columns[0]
        spill = first.spill if isinstance(first, Parked) else None
        columns: list[Column | None] = []
        for column in self._columns:
            if column is None:
                columns.append(None)
                continue
            part = take(_load(column))
            # Parked again, as the group was, a column at a time: a run of several launches
            # splits every group, and shares held in memory were all its rows at once (a 512 MB
            # log: +600 MB); a large group's five columns at once were twice the largest column.
            columns.append(part if spill is None else Parked.of(spill, spill.put_many([part])))
        windows, lines, values, order, pcts = columns
        assert windows is not None and lines is not None and values is not None and order is not None
        return Group(self.logfile, self.process, self.source, self.name, self.rank, windows, lines, values, order, pcts)

    def _between(self, start: int, stop: int) -> Group:
        """part() of the rows start..stop-1 (a launch's share is such a run where the launches follow
        each other in the file, as they mostly do): each column sliced, a parked one as the part of its
        pieces it is, neither read nor written again (a decode log's summary wrote 15 MB of shares)."""
        def between(column: Column) -> Column:
            if isinstance(column, array):
                return column[start:stop]
            pieces: list[Piece] = []
            at = 0
            for offset, n, code in column.pieces:
                lo, hi = max(start, at), min(stop, at + n)
                if lo < hi:
                    pieces.append((offset + (lo - at) * array(code).itemsize, hi - lo, code))
                at += n
            return Parked.of(column.spill, pieces)

        windows, lines, values, order, pcts = self._columns
        return Group(self.logfile, self.process, self.source, self.name, self.rank, between(windows), between(lines),
                     between(values), between(order), None if pcts is None else between(pcts))


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
    # The rows with a bus bandwidth, per log file and process: the nccl-tests panels, which split a
    # file's lines into its tests at their footers.
    busbw: Busbw = field(default_factory=lambda: Busbw())

    def first_key(self, group: Group) -> tuple:
        """Where the group's first row stood in the original order (phase tables list names so)."""
        file_key = -1 if group.logfile is None else group.logfile
        order = _numbers(group.order)  # numpy over the arrays' buffers: a group may hold millions
        if not self.by_window:
            return (file_key, int(order.min()))
        windows = _numbers(group.windows)
        low = int(windows.min())
        return (file_key, low, int(order[windows == low].min()))

    def in_order(self, groups: list[Group]) -> Iterator[tuple[Group, int, float]]:
        """(group, window, value) of every row in the records' original order (rare paths: small
        or tie-breaking)."""
        keyed = []
        for g in groups:
            file_key = -1 if g.logfile is None else g.logfile
            windows, order, values = g.windows, g.order, g.values
            for w, o, v in zip(windows, order, values, strict=True):
                keyed.append(((file_key, w, o) if self.by_window else (file_key, o), id(g), g, w, v))
        keyed.sort(key=lambda k: (k[0], k[1]))
        for _, _, g, w, v in keyed:
            yield g, w, v


class Busbw:
    """Per (log file, process), its nccl-tests rows with a bus bandwidth as runs of adjacent lines:
    the last line, the rows and the highest bus bandwidth of each. The panels split a file's rows
    into tests at footer lines, and a footer line is never a row line, so a run of adjacent row
    lines falls in one test whole: a table is a run, whatever its rows. (A dict entry a line was
    ~100 bytes that stayed to the end: 1 GB of nccl-tests outputs held ~5M, parselog peaked at
    1.2 GB; then a list a run, ~300k of them; now three arrays, 24 bytes a run.) Fed in line order
    (a parse, SQL ordered by line); a line out of order starts a run of its own."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: dict[tuple[int | None, str], tuple[array, array, array]] = {}

    def add(self, logfile: int | None, process: str, line: int, n: int, peak: float) -> None:
        self.add_run(logfile, process, line, line, n, peak)

    def add_run(self, logfile: int | None, process: str, first: int, last: int, n: int, peak: float) -> None:
        """Lines `first`..`last`, all of them, at once (SQL finds such runs): as add() of each."""
        runs = self._runs.get((logfile, process))
        if runs is None:
            runs = self._runs[(logfile, process)] = (array("q"), array("q"), array("d"))
        lasts, rows, top = runs
        if lasts and lasts[-1] <= first <= lasts[-1] + 1:
            lasts[-1], rows[-1], top[-1] = last, rows[-1] + n, max(top[-1], peak)
            return
        lasts.append(last)
        rows.append(n)
        top.append(peak)

    def add_lines(self, logfile: int | None, process: str, lines: np.ndarray, ns: np.ndarray,
                  peaks: np.ndarray) -> None:
        """add() of each line in turn, `lines` ascending and each once: its runs found by numpy
        (a parse's batch of nccl-tests rows holds tens of thousands of lines, a few hundred runs)."""
        if not len(lines):
            return
        # A run ends where the next line is not the line after it.
        at = np.concatenate(([0], np.flatnonzero(np.diff(lines) != 1) + 1))
        self._add_runs(logfile, process, lines, at, np.add.reduceat(ns, at), np.maximum.reduceat(peaks, at))

    def add_rows(self, logfile: int | None, process: str, lines: np.ndarray, peaks: np.ndarray) -> None:
        """add_lines() of rows (a line's rows adjacent, `lines` ascending): each line's rows counted
        and their highest taken with its run's, in one pass (a reduction a line was half the time)."""
        if not len(lines):
            return
        step = np.diff(lines)
        at = np.concatenate(([0], np.flatnonzero((step != 0) & (step != 1)) + 1))
        self._add_runs(logfile, process, lines, at, np.diff(np.append(at, len(lines))), np.maximum.reduceat(peaks, at))

    def _add_runs(self, logfile: int | None, process: str, lines: np.ndarray, at: np.ndarray, rows: np.ndarray,
                  tops: np.ndarray) -> None:
        """The runs that start at lines[at], with their rows and highest bus bandwidth."""
        firsts, lasts = lines[at], lines[np.append(at[1:] - 1, len(lines) - 1)]
        runs = self._runs.get((logfile, process))
        if runs is None:
            runs = self._runs[(logfile, process)] = (array("q"), array("q"), array("d"))
        last, held, top = runs
        if last and last[-1] <= firsts[0] <= last[-1] + 1:  # the first run goes on from the last one held
            last[-1], held[-1], top[-1] = int(lasts[0]), held[-1] + int(rows[0]), max(top[-1], float(tops[0]))
            lasts, rows, tops = lasts[1:], rows[1:], tops[1:]
        last.frombytes(lasts.astype(np.int64).tobytes())
        held.frombytes(rows.astype(np.int64).tobytes())
        top.frombytes(tops.astype(np.float64).tobytes())

    def runs(self) -> Iterator[tuple[int | None, str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """(log file, process, (its runs' last lines, rows, peaks) in the order they came)."""
        for (logfile, process), (last, rows, top) in self._runs.items():
            yield logfile, process, (_numbers(last), _numbers(rows), _numbers(top))


class BusbwIslands:
    """A parse's nccl-tests rows with a bus bandwidth, per process, as islands of adjacent lines
    (first line, last line, rows, highest bus bandwidth): what the worker stores beside the rows
    (runs.models.CollectiveIsland) so that a refresh reads a row an island, not the run's rows
    (finding them in SQL at each refresh was ~4.8 s of PostgreSQL's CPU on 512 MB of nccl-tests
    outputs). The same islands as SQL finds among the stored rows: processes cut to the column's
    64 characters, a missing line read as 0, the lines of every batch of a process taken together
    whatever order the batches come in (a line's rows in two batches, a batch of earlier lines)."""

    __slots__ = ("_parts",)

    PROCESS_CHARS = 64  # CollectiveResult.process (the rows' column, cut to it when stored)

    def __init__(self) -> None:
        # Per process: a batch's islands each, (firsts, lasts, rows, peaks) in line order.
        self._parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = {}

    def add_frame(self, frame: pl.DataFrame | None) -> None:
        """One batch of collectives (records.COLLECTIVE_SCHEMA's process, line, busbw_gbs)."""
        if frame is None or not frame.height:
            return
        rows = frame.select(pl.col("process").str.slice(0, self.PROCESS_CHARS),
                            pl.col("line").fill_null(0).cast(pl.Int64), pl.col("busbw_gbs").cast(pl.Float64)
                            ).filter(pl.col("busbw_gbs").is_not_null())
        if not rows.height:
            return
        # Most batches are one process's: no partition (as CollectiveTally.add_frame).
        parts = [rows] if rows.get_column("process").n_unique() == 1 else \
            rows.partition_by("process", maintain_order=True)
        for part in parts:
            lines = part.get_column("line").to_numpy()
            peaks = part.get_column("busbw_gbs").to_numpy()
            if (lines[1:] < lines[:-1]).any():
                order = np.argsort(lines, kind="stable")
                lines, peaks = lines[order], peaks[order]
            # Per line (a row's two sides share it): its rows and highest bus bandwidth; then islands.
            starts = np.flatnonzero(np.concatenate(([True], lines[1:] != lines[:-1])))
            ns = np.diff(np.append(starts, len(lines)))
            peaks, lines = np.maximum.reduceat(peaks, starts), lines[starts]
            at = np.concatenate(([0], np.flatnonzero(np.diff(lines) != 1) + 1))  # where an island starts
            ends = np.append(at[1:] - 1, len(lines) - 1)
            self._parts.setdefault(part.get_column("process")[0], []).append((
                lines[at], lines[ends], np.add.reduceat(ns, at), np.maximum.reduceat(peaks, at)))

    def islands(self) -> Iterator[tuple[str, int, int, int, float]]:
        """(process, first line, last line, rows, peak) of every island, by process (bytewise,
        as Python orders text) and first line; the batches' islands that touch or overlap joined."""
        for process in sorted(self._parts):
            parts = self._parts[process]
            firsts, lasts, ns, peaks = (np.concatenate([p[k] for p in parts]) for k in range(4))
            order = np.argsort(firsts, kind="stable")
            firsts, lasts, ns, peaks = firsts[order], lasts[order], ns[order], peaks[order]
            reach = np.maximum.accumulate(lasts)  # the last line covered so far
            at = np.concatenate(([0], np.flatnonzero(firsts[1:] > reach[:-1] + 1) + 1))
            ends = np.append(at[1:], len(firsts)) - 1
            for first, last, n, peak in zip(firsts[at].tolist(), reach[ends].tolist(),
                                            np.add.reduceat(ns, at).tolist(),
                                            np.maximum.reduceat(peaks, at).tolist(), strict=True):
                yield process, first, last, n, peak


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
    return rows


class CollectiveTally:
    """What the summary keeps of a parse's collectives, fed batch by batch in bounded memory: the
    first COLLECTIVES_KEPT, how many there are, and per (log file, process, line) the rows with a
    bus bandwidth and the highest (what refresh_run asks SQL for on a stored run)."""

    def __init__(self) -> None:
        # The records themselves until the end: nccl-tests names the op of a table's rows at its
        # "Collective test concluded" line, after a sink may have taken them.
        self.kept: list = []
        self.total = 0
        self.busbw = Busbw()

    def add(self, collectives: Iterable) -> None:
        for c in collectives:
            if len(self.kept) < COLLECTIVES_KEPT:
                self.kept.append(c)
            self.total += 1
            if c.busbw_gbs is not None:
                self.busbw.add(c.logfile, c.process, c.line, 1, c.busbw_gbs)

    def add_frame(self, frame: pl.DataFrame) -> None:
        """add() of collectives held as columns (records.COLLECTIVE_SCHEMA, the native scanner's:
        no logfile yet), counted per line and run by numpy, not a record at a time."""
        if not frame.height:
            return
        room = COLLECTIVES_KEPT - len(self.kept)
        if room > 0:
            # Rows a name can no longer come for (the scanner reads only rows of a named op): plain
            # values, not records (runs does not load ingest).
            self.kept.extend(SimpleNamespace(**row) for row in frame.head(room).iter_rows(named=True))
        self.total += frame.height
        process = frame.get_column("process")
        # Most batches are one process's (the scanner's "main"): numpy's arrays of the frame's columns,
        # no query (polars' select and filter cost more than the rest). Else a part a process, its rows in
        # their order, the parts by name (not the rows: a sort of them all was half of this).
        if (process == process[0]).all():
            parts = [frame]
        else:
            rows = frame.select("process", "line", "busbw_gbs")
            parts = sorted(rows.partition_by("process", maintain_order=True), key=lambda p: p.get_column("process")[0])
        for part in parts:
            busbw = part.get_column("busbw_gbs")
            some = busbw.is_not_null().to_numpy()
            lines, peaks = part.get_column("line").to_numpy()[some], busbw.to_numpy()[some]
            if (lines[1:] < lines[:-1]).any():  # (rows come in line order: a guard, not a path)
                order = np.argsort(lines, kind="stable")
                lines, peaks = lines[order], peaks[order]
            self.busbw.add_rows(None, part.get_column("process")[0], lines, peaks)

    def into(self, rows: Rows) -> None:
        rows.collectives = [collective_dict(c.op, c.size_bytes, c.time_us, c.algbw_gbs, c.busbw_gbs, c.in_place)
                            for c in self.kept]
        rows.collectives_total, rows.busbw = self.total, self.busbw


class NcclFold:
    """A parse's NCCL values in memory that follows their distinct values, not their lines.

    What reads them (runs.nccl.launch_verdicts, analyze, person_conflicts) takes, per group of
    values (a launch's, a test file's, the rest), the last value of each variable: an earlier
    value of a group is never seen when a later one of the same (log file, process, kind, key,
    rank, source, value) is in the same group. A process's values fall in one group but for the
    line's launch segment (runs.layout: a segment starts at a launch line or at a launcher's or
    worker's first line, known once the parse ends). So each value is kept as a number (its
    identity's) and its line, and at the end only the last of each identity in each segment
    becomes a value again, in the order the values came: the verdicts, their lines and sources
    are those of every value. An echo whose rank is still empty is the nccl_debug parser's, which
    sets the rank at its end: kept as the object itself and folded then.
    """

    def __init__(self) -> None:
        self._ids: dict[tuple, int] = {}
        self._first: list = []  # an identity's first value: the others are copies of it, their line apart
        self._loose: list = []  # echoes whose rank is set at the parse's end
        self._which = array("i")  # per value: its identity, or -1 - its index in _loose
        # Each value's line, 32 bits while they fit (2.5M values in a 1 GB start-up log), else 64.
        self._lines = array("i")

    def add(self, values: Iterable) -> None:
        ids, which, lines = self._ids, self._which, self._lines
        for v in values:
            if v.kind == "effective" and not v.rank:
                which.append(-1 - len(self._loose))
                self._loose.append(v)
            else:
                key = (v.logfile, v.process, v.kind, v.key, v.rank, v.source, v.value)
                i = ids.get(key)
                if i is None:
                    i = ids[key] = len(self._first)
                    self._first.append(v)
                which.append(i)
            try:
                lines.append(v.line)
            except OverflowError:  # a line past 2**31: 64 bits from here on
                self._lines = lines = array("q", lines)
                lines.append(v.line)

    def values(self, result: ParseResult) -> list:
        """The values after the parse (its processes and launch lines known), folded."""
        files: dict[int | None, dict] = {lf: info for lf, info in result.files.items()} or {None: {
            "name": None, "role": "", "processes": result.processes, "launch_lines": result.launch_lines,
            "settings": {}}}  # a lone parse's one file, as runs.summary.process_files gives it
        starts = {lf: [start for start, _ in segs] for lf, segs in layout(files).segments.items()}
        return self._fold(starts, by_line=False)

    def stored(self, result: ParseResult) -> list:
        """The values a store keeps of one log file's parse: the last of each identity between
        any two lines where a launch segment starts under any role a person may give the file
        afterwards (runs.layout: a file's segments follow from its own processes, launch lines
        and role alone; merging launches across files only joins segments). Each segment of the
        run's layout is then a run of these pieces, so the last of an identity in a segment is
        the last in its last piece: kept. "Last" as the store reads its rows back: by line, then
        in the order written (runs.services._add_nccl), the order kept."""
        cuts: set[int] = set()
        for role in ("", *ROLES):
            lay = layout({None: {"name": None, "role": role, "processes": result.processes,
                                 "launch_lines": result.launch_lines}})
            cuts.update(start for segs in lay.segments.values() for start, _ in segs)
        return self._fold({lf: sorted(cuts) for lf in {v.logfile for v in self._first + self._loose}}, by_line=True)

    def _fold(self, starts: dict[int | None, list[int]], by_line: bool) -> list:
        """The last value of each (identity, segment), segments starting at `starts` (per log
        file): last as the values came, or `by_line`: by line, then as they came."""
        lines = np.frombuffer(self._lines, dtype=np.int32 if self._lines.typecode == "i" else np.int64) \
            if len(self._lines) else np.zeros(0, np.int64)
        # A loose echo's identity, its rank now set: numbered after the others.
        ids = dict(self._ids)
        first = list(self._first)
        renumbered = {}
        for at in np.flatnonzero(np.frombuffer(self._which, dtype=np.int32) < 0).tolist():
            v = self._loose[-1 - self._which[at]]
            key = (v.logfile, v.process, v.kind, v.key, v.rank, v.source, v.value)
            i = ids.get(key)
            if i is None:
                i = ids[key] = len(first)
                first.append(v)
            renumbered[at] = i
        # Millions of values after a large log: no array more than needed, each as narrow as it can
        # be, each let go once used, the per-value steps a chunk at a time -- this is parselog's peak.
        # Each value's key: its identity times `span`, plus its segment (after how many of its log
        # file's segment starts it comes); its identity is the key over `span`.
        span = 1 + max((len(cuts) for cuts in starts.values()), default=0)
        narrow = np.dtype(np.int32 if len(first) * span < 2**31 else np.int64)
        where = np.array(self._which, dtype=narrow)
        if renumbered:
            where[np.fromiter(renumbered, np.int64, len(renumbered))] = np.fromiter(renumbered.values(), narrow)
        where *= span
        lone = len(starts) == 1 and all(v.logfile in starts for v in first)  # a lone parse: one file
        mine = None
        for lf, cuts in starts.items():
            bounds = np.array(cuts, dtype=np.int64)
            if not lone:
                mine = np.array([v.logfile == lf for v in first], dtype=bool)
            for at in range(0, len(where), _FOLD_CHUNK):
                part, at_lines = where[at:at + _FOLD_CHUNK], lines[at:at + _FOLD_CHUNK]  # views
                if mine is None:
                    part += np.searchsorted(bounds, at_lines, side="right").astype(narrow, copy=False)
                else:
                    of = mine[part // span]
                    part[of] += np.searchsorted(bounds, at_lines[of], side="right").astype(narrow, copy=False)
        kept = _last_of_each(where, lines if by_line else None)
        del where
        out = []
        for at, i in kept:
            v = first[i // span]
            line = int(lines[at])
            out.append(v if v.line == line else replace(v, line=line))
        return out


_FOLD_CHUNK = 1 << 18  # values a step of NcclFold._fold takes at a time


def _last_of_each(keys: np.ndarray, lines: np.ndarray | None) -> list[tuple[int, int]]:
    """(place, key) of the last value of each key, in the values' order; last as they came, or by
    `lines` (then as they came) where given."""
    n = len(keys)
    if lines is None and keys.dtype == np.int32 and n < 2**32:
        # Each key and its place in one 64-bit number, sorted in place: no index array, no stable
        # sort's buffer (the places are distinct). A key's last value ends its run. The keys a range
        # at a time, about _FOLD_CHUNK values a range where they spread so: no copy of them all.
        low, high = (int(keys.min()), int(keys.max()) + 1) if n else (0, 0)
        step = max(1, -(-(high - low) * _FOLD_CHUNK // max(n, 1)))
        last = []
        for first in range(low, high, step):
            at = np.flatnonzero((keys >= first) & (keys < first + step))
            if not len(at):
                continue
            packed = keys[at].astype(np.int64)
            packed <<= 32
            packed |= at
            del at
            packed.sort()
            ends = np.append((packed[1:] >> 32) != (packed[:-1] >> 32), True)
            last.append(packed[ends])
            del packed, ends
        found = np.concatenate(last) if last else np.zeros(0, np.int64)
        places, found = found & 0xFFFFFFFF, found >> 32
    else:
        # A stable sort keeps each key's values in their order (by line: by line, those of one line
        # in their order): a run's end is its key's last value.
        order = np.lexsort((lines, keys)) if lines is not None else np.argsort(keys, kind="stable")
        ends = keys[order]
        ends = np.append(ends[1:] != ends[:-1], True) if n else np.zeros(0, dtype=bool)
        places = order[ends]
        del order, ends
        found = keys[places]
    order = np.argsort(places, kind="stable")
    return list(zip(places[order].tolist(), found[order].tolist(), strict=True))


class ParseDigest:
    """A parse_stream sink for a lone parse (parselog): each batch of rows folded into a
    FileDigest's columns (parked in its spill as they come: memory does not grow with the log)
    and a CollectiveTally. NCCL values are few and the summary reads them from the result: they
    are kept as they come and handed back by `rows()`.

    NCCL values repeat: a log of many restarts echoes the same variables each time (1 GB of them
    held ~2M objects, parselog peaked at 1.1 GB), so they are kept folded (NcclFold).

    summarize(result, digest.rows(result)) gives what summarize(result) gives without a sink.
    The native engine hands it the scanner's records already grouped (`takes_groups`).
    """

    takes_groups = True

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.digest = FileDigest(directory)
        self.collectives = CollectiveTally()
        self.nccl = NcclFold()

    def __call__(self, result: ParseResult) -> None:
        phases, metrics, collectives, nccl = result.take_batches()
        # Each kind keeps its own order (a shared sequence numbers both: same order within a kind).
        for batch in phases:
            self.digest.phase_batch(batch)
        for batch in metrics:
            self.digest.metric_batch(batch)
        for held in collectives:
            if isinstance(held, pl.DataFrame):
                self.collectives.add_frame(held)
            else:
                self.collectives.add(held)
        self.nccl.add(nccl)

    def rows(self, result: ParseResult) -> Rows:
        """After the parse: take the rows still pending, put the NCCL values back in `result`."""
        self(result)
        result.nccl = self.nccl.values(result)
        rows = self.digest.rows()
        self.collectives.into(rows)
        return rows


def _numbers(column: array) -> np.ndarray:
    """An int array's numbers as a numpy view (no copy)."""
    return np.frombuffer(column, dtype=column.typecode)


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


KEYS = ["process", "source", "name", "rank"]  # a group of rows (with the kind and the log file)


def _append_ints(cols: list[array], i: int, column: pl.Series) -> None:
    """Append an int column to cols[i]: 4 bytes a number while every one fits, else 8 (the column
    widened first, so no number is appended twice)."""
    if cols[i].typecode == "i":
        if column.min() >= -(1 << 31) and column.max() < 1 << 31:  # type: ignore[operator]
            cols[i].frombytes(_buffer(column.cast(pl.Int32)))
            return
        cols[i] = array("q", cols[i])
    cols[i].frombytes(_buffer(column.cast(pl.Int64)))


def _append_array(cols: list[array], i: int, column: np.ndarray) -> None:
    """_append_ints of a numpy column."""
    if cols[i].typecode == "i":
        if not len(column) or (column.min() >= -(1 << 31) and column.max() < 1 << 31):
            cols[i].frombytes(_view(column.astype(np.int32, copy=False)))
            return
        cols[i] = array("q", cols[i])
    cols[i].frombytes(_view(column.astype(np.int64, copy=False)))


def _view(column: np.ndarray) -> memoryview:
    return memoryview(column).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer


def _buffer(column: pl.Series) -> memoryview:
    """A numeric column's values as bytes, through numpy's read-only view of polars' buffer."""
    return memoryview(column.to_numpy()).cast("B")  # type: ignore[arg-type]  # ndarray is a buffer


def _columns() -> list[array]:
    # Arrays, not lists: a million rows of a file cost 20 bytes each here (28 a phase), not ~100.
    # Window, line and order take 4 bytes until one does not fit (then 8: _widen).
    return [array("i"), array("i"), array("d"), array("i"), array("d")]


class _Grouper:
    """Rows grouped by (kind, log file, process, source, name, rank) as columns. With a spill,
    the columns held go to it once FLUSH_ROWS rows are held (memory stays flat whatever the file)."""

    def __init__(self, spill: Spill | None = None) -> None:
        self.spill = spill
        self._groups: dict[tuple, list[array]] = {}
        # Per group, a tuple of its five columns' pieces a flush (one container a group, not
        # five: a profile of a million distinct names makes a million groups for the GC to walk).
        self._parked: dict[tuple, list[tuple[Piece | None, ...]]] = {}
        self._held = 0

    def _cols(self, key: tuple) -> list[array]:
        cols = self._groups.get(key)
        if cols is None:
            cols = self._groups[key] = _columns()
        return cols

    def add(self, phase: bool, logfile: int | None, process: str, source: str, name: str, rank: str,
            window: int, line: int, value: float, order: int, pct: float) -> None:
        cols = self._cols((phase, logfile, process, source, name, rank))
        try:
            cols[0].append(window)
            cols[1].append(line)
            cols[3].append(order)
        except OverflowError:
            _widen(cols, window, line, order)
        cols[2].append(value)
        if phase:  # a metric has no pct: its column stays empty
            cols[4].append(pct)
        self.added(1)

    def add_frame(self, phase: bool, logfile: int | None, frame: pl.DataFrame, order: int) -> None:
        """Rows as columns (ingest.parsers.records' PHASE_SCHEMA or METRIC_SCHEMA), numbered from
        `order`: what add() would make of them one by one, a group at a time."""
        value = "ms" if phase else "value"
        frame = frame.with_columns(order=pl.int_range(order, order + frame.height, dtype=pl.Int64))
        if phase:
            frame = frame.with_columns(rank=pl.lit(""), pct=pl.col("pct").fill_null(NAN))
        # One pass gathers each group's columns as lists (the key columns are not gathered again).
        wanted = ["window", "line", value, "order", *(["pct"] if phase else [])]
        grouped = frame.group_by(KEYS, maintain_order=True).agg(wanted)
        columns = [grouped.get_column(c) for c in wanted]
        for row, key in enumerate(grouped.select(KEYS).iter_rows()):
            self.add_columns((phase, logfile, *key), *(c[row] for c in columns))
        self.added(frame.height)

    def add_columns(self, key: tuple, windows: pl.Series, lines: pl.Series, values: pl.Series, order: pl.Series,
                    pcts: pl.Series | None = None) -> None:
        """One group's rows as polars columns (key: phase, log file, process, source, name, rank)."""
        cols = self._cols(key)
        for i, column in ((0, windows), (1, lines), (3, order)):
            _append_ints(cols, i, column)
        # Each column's buffer copied as it is (numpy views it): no Python float a value.
        cols[2].frombytes(_buffer(values.cast(pl.Float64)))
        if pcts is not None:
            cols[4].frombytes(_buffer(pcts))

    def added(self, rows: int) -> None:
        """Count rows just added: past FLUSH_ROWS held, they go to the spill."""
        self._held += rows
        if self._held >= FLUSH_ROWS:
            self.flush()

    def add_grouped(self, logfile: int | None, batch: Grouped, order: int) -> None:
        """add_frame() of the native scanner's grouped records (ingest.parsers.records.Grouped):
        their columns appended as they come, a group at a time, no group_by."""
        # Per group only what a group needs: a profile of many distinct phase names hands
        # batches of thousands of one-row groups. 4-byte windows and lines (batch.wide) fit as
        # they are; the places fit 4 bytes when the batch's last one does.
        narrow_order = order + batch.height < 1 << 31
        wide, phase = batch.wide, batch.phase
        # Every group's places moved on by `order` in one numpy call (a decode batch holds ~50
        # groups, a numpy call costs a microsecond or so), each group's then a slice of them.
        moved = _view(np.frombuffer(b"".join(g[7] for g in batch.groups), np.int32) + np.int32(order)) \
            if narrow_order else None
        at = 0
        for name, source, process, rank, windows, lines, values, places, pcts in batch.groups:
            cols = self._cols((phase, logfile, process, source, name, rank))
            for i, column, wide_i in ((0, windows, wide & 1), (1, lines, wide & 2)):
                if not wide_i and cols[i].typecode == "i":
                    cols[i].frombytes(column)
                else:
                    _append_array(cols, i, np.frombuffer(column, np.int64 if wide_i else np.int32))
            if moved is not None and cols[3].typecode == "i":
                cols[3].frombytes(moved[at:at + len(places)])
            else:
                _append_array(cols, 3, np.frombuffer(places, np.int32).astype(np.int64) + order)
            at += len(places)
            cols[2].frombytes(values)
            if pcts is not None:
                cols[4].frombytes(pcts)
        self.added(batch.height)

    def flush(self) -> None:
        """The columns held, to the spill (none: they stay in memory)."""
        if self.spill is None:
            return
        held = [(key, cols) for key, cols in self._groups.items() if len(cols[2])]
        # One write for all of them (Spill.put_many); the emptied groups are dropped, not kept
        # as empty columns (made again at their next row): a flush costs the groups it holds.
        pieces = iter(self.spill.put_many([column for _, cols in held for column in cols if len(column)]))
        for key, cols in held:
            flushed = tuple(next(pieces) if len(column) else None for column in cols)
            parked = self._parked.get(key)
            if parked is None:
                self._parked[key] = [flushed]
            else:
                parked.append(flushed)
        self._groups = {}
        self._held = 0

    def groups(self, phase: bool) -> list[Group]:
        if self.spill is None:
            return [Group(k[1], k[2], k[3], k[4], k[5], _narrow(c[0]), _narrow(c[1]), c[2], _narrow(c[3]),
                          c[4] if phase else None)
                    for k, c in self._groups.items() if k[0] == phase]
        self.flush()
        spill = self.spill

        def column(parked: list[tuple[Piece | None, ...]], i: int) -> Parked:
            return Parked.of(spill, [f[i] for f in parked if f[i] is not None])  # type: ignore[misc]

        return [Group(k[1], k[2], k[3], k[4], k[5], column(parked, 0), column(parked, 1), column(parked, 2),
                      column(parked, 3), column(parked, 4) if phase else None)
                for k, parked in self._parked.items() if k[0] == phase]


class FileDigest:
    """One lone parse's phases and metrics as columns (ParseDigest's), built a frame or a row at
    a time. Its columns wait in a Spill under `directory` (the system's temporary dir by default)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._grouper = _Grouper(Spill(directory))
        self.seq = 0

    def phase(self, process: str, source: str, name: str, window: int, line: int, ms: float,
              pct: float | None) -> None:
        self._grouper.add(True, None, process, source, name, "", window, line, ms, self.seq,
                          NAN if pct is None else pct)
        self.seq += 1

    def metric(self, process: str, source: str, name: str, rank: str, window: int, line: int, value: float) -> None:
        self._grouper.add(False, None, process, source, name, rank, window, line, value, self.seq, NAN)
        self.seq += 1

    def phase_frame(self, frame: pl.DataFrame) -> None:
        """phase() of every row of a frame (PHASE_SCHEMA), in its order."""
        self._grouper.add_frame(True, None, frame, self.seq)
        self.seq += frame.height

    def metric_frame(self, frame: pl.DataFrame) -> None:
        """metric() of every row of a frame (METRIC_SCHEMA), in its order."""
        self._grouper.add_frame(False, None, frame, self.seq)
        self.seq += frame.height

    def phase_batch(self, batch: pl.DataFrame | Grouped) -> None:
        """phase_frame() of a frame or of the native scanner's grouped records."""
        if isinstance(batch, pl.DataFrame):
            self.phase_frame(batch)
            return
        self._grouped(batch)

    def metric_batch(self, batch: pl.DataFrame | Grouped) -> None:
        """metric_frame() of a frame or of the native scanner's grouped records."""
        if isinstance(batch, pl.DataFrame):
            self.metric_frame(batch)
            return
        self._grouped(batch)

    def _grouped(self, batch: Grouped) -> None:
        self._grouper.add_grouped(None, batch, self.seq)
        self.seq += batch.height

    def rows(self) -> Rows:
        """The digest as a lone parse's rows (no log file id, the records' own order)."""
        return Rows(metrics=self._grouper.groups(False), phases=self._grouper.groups(True), by_window=False)


class Regrouper:
    """A run's stored rows (runs.columns) regrouped as the summary reads them: fed a block at a
    time (rows of one log file, name and source, in the file's order `order`), kept per (log
    file, process, source, name, rank) in columns parked in `spill` as they fill. `rows()`
    lists each file's groups in the order of their first row, as a parse of the file lists
    them (FileDigest): ties between groups fall the same way whichever path summarised."""

    def __init__(self, spill: Spill) -> None:
        self._grouper = _Grouper(spill)
        self._first: dict[tuple, int] = {}

    def add(self, phase: bool, logfile: int, name: str, source: str, frame: pl.DataFrame) -> None:
        """Rows with columns process, rank, window, line, value, order and (phases) pct."""
        if not frame.height:
            return
        wanted = ["window", "line", "value", "order", *(["pct"] if phase else [])]
        # Most blocks hold one writer's rows: told by comparing with the first row's tags (a
        # third of the time of hashing them: unique()), appended without a group_by.
        if frame.select(pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).first()).all() for c in ("process", "rank"))
                        ).item():
            parts = [(frame.select("process", "rank").row(0), [frame.get_column(c) for c in wanted])]
        else:
            grouped = frame.group_by(["process", "rank"], maintain_order=True).agg(wanted)
            columns = [grouped.get_column(c) for c in wanted]
            tagged = grouped.select("process", "rank").iter_rows()
            parts = [(tag, [c[row] for c in columns]) for row, tag in enumerate(tagged)]
        for (process, rank), cols in parts:
            key = (phase, logfile, process, source, name, rank)
            first = int(cols[3].min())  # type: ignore[arg-type]
            self._first[key] = min(self._first.get(key, first), first)
            self._grouper.add_columns(key, *cols)
        self._grouper.added(frame.height)

    def rows(self) -> Rows:
        def first(phase: bool) -> Callable[[Group], tuple]:
            return lambda g: (g.logfile, self._first[(phase, g.logfile, g.process, g.source, g.name, g.rank)])

        return Rows(metrics=sorted(self._grouper.groups(False), key=first(False)),
                    phases=sorted(self._grouper.groups(True), key=first(True)), by_window=True)
