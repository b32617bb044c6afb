"""Records the parsers emit. Plain dataclasses: no Django, no I/O.

Every record carries the 1-based number of the log line it came from, so any figure on screen
can be traced back to its source line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import polars as pl


class ParseError(Exception):
    """A log that cannot be read at all (binary, empty, nothing recognised)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.message = message


@dataclass(slots=True)
class Phase:
    """One phase of a cycle in one window: `Target verify: 4.02 ms/cyc (83.6%)`."""

    name: str
    ms: float
    pct: float | None
    window: int
    line: int
    source: str
    process: str = ""  # the writer's tag in its log file (processes.py): "pid 1573", "TP0", "main"
    logfile: int | None = None  # set when rebuilt from stored rows


@dataclass(slots=True)
class Metric:
    """One number for one window: throughput, tokens per cycle, cycle time, ..."""

    name: str
    value: float
    window: int
    line: int
    source: str
    rank: str = ""
    process: str = ""
    logfile: int | None = None


@dataclass(slots=True)
class NcclValue:
    """An NCCL parameter as declared by a launcher or as effective in a worker."""

    key: str
    value: str
    kind: str  # "declared" or "effective"
    line: int
    source: str  # e.g. "launch prefix", "export", "launcher env dump", "worker env dump", "nccl echo"
    rank: str = ""
    logfile: int | None = None  # set when rebuilt from stored rows (provenance across files)
    process: str = ""


@dataclass(slots=True)
class Collective:
    """One nccl-tests table row, one side (out-of-place or in-place)."""

    op: str
    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    time_us: float | None
    algbw_gbs: float | None
    busbw_gbs: float | None
    wrong: int | None
    in_place: bool
    line: int
    process: str = ""
    logfile: int | None = None


@dataclass(slots=True)
class Setting:
    """A configuration fact with its source: `spec.steps = 2` from `steps=2` on line 12."""

    key: str
    value: object
    line: int
    source: str


@dataclass(slots=True)
class Issue:
    line: int
    message: str


# A field read as an integer (steps, pids, ranks, MPI tags, nccl-tests sizes and counts) holds at
# most this many digits: every such figure fits a signed 64-bit column, and Python's int() refuses
# strings of more than 4,300 digits with an error that would end the parse (and a parselog of
# several files with it). A longer one is left out with a warning (ParseResult.read_int).
MAX_INT_DIGITS = 18


# Phases and metrics as columns (the native scanner's output; what a sink may take).
PHASE_SCHEMA = pl.Schema({"name": pl.String, "ms": pl.Float64, "pct": pl.Float64, "window": pl.Int64,
                          "line": pl.Int64, "source": pl.String, "process": pl.String})
METRIC_SCHEMA = pl.Schema({"name": pl.String, "value": pl.Float64, "window": pl.Int64, "line": pl.Int64,
                           "source": pl.String, "rank": pl.String, "process": pl.String})


# nccl-tests rows as columns (the native scanner's): Collective's fields but logfile (none at parse time).
COLLECTIVE_SCHEMA = pl.Schema({"op": pl.String, "size_bytes": pl.Int64, "count": pl.Int64, "dtype": pl.String,
                               "redop": pl.String, "root": pl.Int64, "time_us": pl.Float64, "algbw_gbs": pl.Float64,
                               "busbw_gbs": pl.Float64, "wrong": pl.Int64, "in_place": pl.Boolean,
                               "line": pl.Int64, "process": pl.String})


def collectives_of(frames: list[pl.DataFrame]) -> list[Collective]:
    """Collectives held as columns, as records (in their order)."""
    return [Collective(*row) for f in frames for row in f.iter_rows()]


def collectives_frame(collectives: list[Collective]) -> pl.DataFrame:
    """Collectives held as records, as columns (collectives_of's inverse; `logfile` is not a column)."""
    return pl.DataFrame([(c.op, c.size_bytes, c.count, c.dtype, c.redop, c.root, c.time_us, c.algbw_gbs, c.busbw_gbs,
                          c.wrong, c.in_place, c.line, c.process) for c in collectives],
                        schema=COLLECTIVE_SCHEMA, orient="row", strict=False)


def phases_frame(phases: list[Phase]) -> pl.DataFrame:
    return pl.DataFrame([(p.name, p.ms, p.pct, p.window, p.line, p.source, p.process) for p in phases],
                        schema=PHASE_SCHEMA, orient="row")


def metrics_frame(metrics: list[Metric]) -> pl.DataFrame:
    return pl.DataFrame([(m.name, m.value, m.window, m.line, m.source, m.rank, m.process) for m in metrics],
                        schema=METRIC_SCHEMA, orient="row")


Group = tuple[str, str, str, str, bytes, bytes, bytes, bytes, "bytes | None"]


@dataclass(slots=True)
class Grouped:
    """One kind's records from the native scanner already grouped as a digest keeps them
    (`_scan.Scanner.take_groups`): per (name, source, process, rank), in the order the groups
    first appear, the group's windows, lines, values, its records' places among the batch's
    (emission order) and, for phases, percentages (NaN: none printed). A digest folds these
    without a group_by over strings (runs/digest.py); `frame()` is the batch as take() gives it."""

    phase: bool
    height: int
    wide: int  # bit 0: windows are int64 (else int32), bit 1: lines the same
    groups: list[Group]

    def arrays(self, group: Group) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """windows, lines, values, order (places in the batch), pcts (None for metrics), as numpy views."""
        _, _, _, _, windows, lines, values, order, pcts = group
        return (np.frombuffer(windows, np.int64 if self.wide & 1 else np.int32),
                np.frombuffer(lines, np.int64 if self.wide & 2 else np.int32),
                np.frombuffer(values, np.float64), np.frombuffer(order, np.int32),
                None if pcts is None else np.frombuffer(pcts, np.float64))

    def frame(self) -> pl.DataFrame:
        """The records as one frame (PHASE_SCHEMA or METRIC_SCHEMA), in their emission order."""
        schema = PHASE_SCHEMA if self.phase else METRIC_SCHEMA
        parts = []
        for group in self.groups:
            name, source, process, rank = group[:4]
            windows, lines, values, order, pcts = self.arrays(group)
            columns = {"window": windows, "line": lines, "_at": order,
                       **({"ms": values, "pct": pcts} if self.phase else {"value": values})}
            part = pl.DataFrame(columns).with_columns(
                name=pl.lit(name), source=pl.lit(source), process=pl.lit(process),
                **({"pct": pl.col("pct").fill_nan(None)} if self.phase else {"rank": pl.lit(rank)}))
            parts.append(part)
        out = pl.concat(parts).sort("_at") if parts else pl.DataFrame(schema=schema)
        return out.select([pl.col(c).cast(t) for c, t in schema.items()])


Batch = pl.DataFrame | Grouped


def _frame(batch: Batch) -> pl.DataFrame:
    return batch.frame() if isinstance(batch, Grouped) else batch


def _one(batches: Sequence[Batch]) -> pl.DataFrame | None:
    frames = [_frame(f) for f in batches if f.height]
    return None if not frames else frames[0] if len(frames) == 1 else pl.concat(frames)


@dataclass
class ParseResult:
    formats: list[str] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    nccl: list[NcclValue] = field(default_factory=list)
    collectives: list[Collective] = field(default_factory=list)
    settings: dict[str, Setting] = field(default_factory=dict)
    # Who wrote the lines (processes.py): {tag: {pid, host, rank, label, first_line, role, ...}}.
    processes: dict[str, dict] = field(default_factory=dict)
    # Built from stored rows (a run of several files): {logfile id: {name, role, processes}}.
    files: dict[int, dict] = field(default_factory=dict)
    launch_lines: list[int] = field(default_factory=list)  # lines that start a serving engine
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    lines: int = 0
    spilled: int = 0  # rows already handed to a sink
    # Lines a reader took whole without a record of their own (a table header, a launch command's
    # continuation lines): not `unread` (context.py).
    used: set[int] = field(default_factory=set, compare=False, repr=False)
    # Called with every line an engine hands a reader (context.Watcher.offer: unread lines).
    offer: Callable[[int, str], None] | None = field(default=None, compare=False, repr=False)
    # Rows held as columns (the native scanner's): all before the rows in `phases` /
    # `metrics`. Grouped where the native engine's sink takes them so (`takes_groups`).
    phase_frames: list[Batch] = field(default_factory=list, compare=False, repr=False)
    metric_frames: list[Batch] = field(default_factory=list, compare=False, repr=False)
    # nccl-tests rows held as columns (COLLECTIVE_SCHEMA, the native scanner's): all before `collectives`.
    collective_frames: list[pl.DataFrame] = field(default_factory=list, compare=False, repr=False)
    # Fields over MAX_INT_DIGITS: {what: [its warning, lines after the first]} (read_int()).
    _bounded: dict[str, list] = field(default_factory=dict, compare=False, repr=False)

    def add_format(self, name: str) -> None:
        if name not in self.formats:
            self.formats.append(name)

    def set(self, key: str, value: object, line: int, source: str, *, overwrite: bool = False) -> None:
        """Record a setting; the first source wins unless `overwrite` (a more direct source)."""
        if value is None:
            return
        if overwrite or key not in self.settings:
            self.settings[key] = Setting(key, value, line, source)

    def read_int(self, text: str, lineno: int, what: str) -> int | None:
        """`int(text)` for a field of a log line, or None with a warning when it has more than
        MAX_INT_DIGITS digits. One warning per field; further lines over the bound are counted in it."""
        if len(text) <= MAX_INT_DIGITS or len(text.strip().lstrip("+-").lstrip("0")) <= MAX_INT_DIGITS:
            return int(text)
        seen = self._bounded.get(what)
        if seen is None:
            issue = Issue(lineno, f"{what} has {len(text.strip())} digits, more than {MAX_INT_DIGITS}: left out")
            self._bounded[what] = [issue, 0]
            self.warnings.append(issue)
        else:
            seen[1] += 1
            seen[0].message = (f"{what} has more than {MAX_INT_DIGITS} digits: left out "
                               f"(on this line and {seen[1]} other(s))")
        return None

    def take_rows(self) -> tuple[list[Phase], list[Metric], list[Collective], list[NcclValue]]:
        """Hand over the rows parsed so far and start new lists (see parse_numbered's sink).

        NCCL values go too: a sink spools them like the other rows instead of holding them to the end.
        Rows held as columns come as records (take_columns() keeps them columns).
        """
        self.thaw()
        rows = (self.phases, self.metrics, self.collectives, self.nccl)
        self.phases, self.metrics, self.collectives, self.nccl = [], [], [], []
        self.spilled += sum(len(r) for r in rows)
        return rows

    def take_columns(self) -> tuple[pl.DataFrame | None, pl.DataFrame | None, pl.DataFrame | None, list[NcclValue]]:
        """take_rows() with phases, metrics and collectives (COLLECTIVE_SCHEMA) as one frame each
        (None: none), in their order: nccl-tests rows held as columns stay columns (a record each
        was a third of a 512 MB nccl-tests ingest)."""
        self.freeze()
        if self.collectives:
            self.collective_frames.append(collectives_frame(self.collectives))
            self.collectives = []
        phases, metrics, collectives = _one(self.phase_frames), _one(self.metric_frames), _one(self.collective_frames)
        nccl = self.nccl
        self.phase_frames, self.metric_frames, self.collective_frames, self.nccl = [], [], [], []
        self.spilled += sum(0 if f is None else f.height for f in (phases, metrics, collectives)) + len(nccl)
        return phases, metrics, collectives, nccl

    def take_batches(self) -> tuple[list[Batch], list[Batch], list[pl.DataFrame | list[Collective]],
                                    list[NcclValue]]:
        """take_columns() with phases and metrics as the batches held, in their order: frames, and
        the native scanner's Grouped as they came (for a sink with `takes_groups`); collectives as
        their frames (COLLECTIVE_SCHEMA), then the list of records, in their order."""
        self.freeze()
        phases, metrics, nccl = self.phase_frames, self.metric_frames, self.nccl
        collectives: list[pl.DataFrame | list[Collective]] = [*self.collective_frames, self.collectives]
        held = sum(f.height for f in self.collective_frames) + len(self.collectives)
        self.phase_frames, self.metric_frames, self.collective_frames, self.collectives, self.nccl = [], [], [], [], []
        self.spilled += sum(f.height for f in (*phases, *metrics)) + held + len(nccl)
        return phases, metrics, collectives, nccl

    def freeze(self) -> None:
        """Move the phases and metrics held as records after those held as columns."""
        if self.phases:
            self.phase_frames.append(phases_frame(self.phases))
            self.phases = []
        if self.metrics:
            self.metric_frames.append(metrics_frame(self.metrics))
            self.metrics = []

    def thaw_collectives(self) -> None:
        """The collectives held as columns back in front of `collectives`, as records."""
        if self.collective_frames:
            self.collectives = collectives_of(self.collective_frames) + self.collectives
            self.collective_frames = []

    def thaw(self) -> None:
        """The rows held as columns back in front of `phases` / `metrics` / `collectives`, as records."""
        self.thaw_collectives()
        if self.phase_frames:
            self.phases = [Phase(*row) for f in self.phase_frames for row in _frame(f).iter_rows()] + self.phases
            self.phase_frames = []
        if self.metric_frames:
            self.metrics = [Metric(*row) for f in self.metric_frames for row in _frame(f).iter_rows()] + self.metrics
            self.metric_frames = []

    @property
    def pending(self) -> int:
        return (len(self.phases) + len(self.metrics) + len(self.collectives) + len(self.nccl)
                + sum(f.height for f in self.phase_frames) + sum(f.height for f in self.metric_frames)
                + sum(f.height for f in self.collective_frames))

    @property
    def record_count(self) -> int:
        return self.spilled + self.pending + len(self.nccl) + len(self.settings)


class Parser(Protocol):
    """What every format module's `Parser` class is: built on the shared result, fed each
    numbered line once, finished at the end of the stream (multi-line blocks flush there).

    The chunked engine feeds a parser only the lines that hold one of its TRIGGERS or that
    STARTS (a pattern for a newline and what follows it) finds, and every line while busy():
    feed() must do nothing on any other line.
    """

    name: str
    TRIGGERS: tuple[str, ...]
    STARTS: re.Pattern | None

    def __init__(self, result: ParseResult) -> None: ...

    def busy(self) -> bool: ...

    def feed(self, lineno: int, line: str) -> None: ...

    def finish(self) -> None: ...
