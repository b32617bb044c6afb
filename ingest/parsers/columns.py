"""Records as columns: the vectorised lanes' output and what the engine hands a sink.

The high-volume kinds (profile phases, SGLang decode metrics) are extracted a chunk at a time
with polars (Rust regexes over an Arrow array of lines) by a parser's `lane()`, instead of one
Python call and one dataclass per record. Their records leave as DataFrames of these schemas;
the per-line Python parsers' records join them at the end of the chunk, merged in the order the
line-at-a-time engine emits them: by the line being fed (`pos`), the reader fed it (`rdr`, in
readers' order), then the order the reader emitted them on that line (`k`).

A lane works only where its result is provably what the Python parser would give: every line it
reads is printable ASCII (Python's `re` and Rust's regex agree there: `` classes), and any
line it is not sure of makes it decline the chunk (the parser then reads the chunk in Python).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from .records import METRIC_SCHEMA, PHASE_SCHEMA, metrics_frame, phases_frame

__all__ = [
    "METRIC_SCHEMA", "PHASE_SCHEMA", "Chunk", "LaneRows", "NOT_PLAIN", "PLAIN", "keyed", "marked", "merge",
    "metrics_frame", "phases_frame", "plain", "plain_lines", "present", "untagged",
]

ORDER = ["pos", "rdr", "k"]  # the merge keys of a chunk's records (dropped after the merge)
KEYED = {"pos": pl.Int64, "rdr": pl.Int64, "k": pl.Int64}
# Lines a lane reads must be printable ASCII (tab allowed): no Unicode class or control
# character on which Python's `re` (Unicode \s, \d, \w) and a `` Rust regex could differ.
PLAIN = r"^[\t\x20-\x7e]*$"
NOT_PLAIN = r"[^\t\x20-\x7e]"
MAIN = "main"  # processes.MAIN: the file's untagged stream
_SGLANG_PREFIX = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: (?:DP|TP|EP|PP)\d+)+\]"


_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n"


def plain(text: str) -> bool:
    """Whether text (lines joined by newlines) is printable ASCII, tabs and newlines."""
    return text.isascii() and not text.encode("ascii").translate(None, _PRINTABLE)


def present(text: str, literals: tuple[str, ...]) -> set[str]:
    """The literals found in text: one Aho-Corasick pass (polars) instead of one search each."""
    return set(pl.Series([text]).str.extract_many(list(literals), overlapping=True).explode().drop_nulls()
               .unique().to_list())


def plain_lines(chunk: Chunk, rows: pl.Series | None = None) -> bool:
    """Whether the chunk's lines (those at `rows`, or all) are printable ASCII (tabs allowed)."""
    if chunk.plain:
        return True
    lines = chunk.series if rows is None else chunk.series.gather(rows)
    return not lines.str.contains(NOT_PLAIN).any()


def marked(line: pl.Expr) -> pl.Expr:
    """Lines holding a literal processes.Tagger tags by, wherever it is in the line."""
    return line.str.contains_any(["NCCL", "environ", "ServerArgs("])


def untagged(line: pl.Expr) -> pl.Expr:
    """Lines processes.Tagger surely tags "main" (its tag tests never fire on them); a lane's
    records on them are of that process. Other lines make a lane decline its chunk."""
    return ~(line.str.contains("NCCL", literal=True) | line.str.contains("environ", literal=True)
             | line.str.contains("ServerArgs(", literal=True) | line.str.contains(r"^[(#$+]")
             | line.str.contains(_SGLANG_PREFIX))


@dataclass
class Chunk:
    """One chunk as the engine holds it: its lines, the number of the first, the polars view."""

    lines: list[str]
    first: int
    found: dict[str, set[int]] = field(default_factory=dict)  # trigger -> the lines holding it
    plain: bool = False  # every line printable ASCII (then a lane need not look line by line)
    _series: pl.Series | None = None

    @property
    def series(self) -> pl.Series:
        if self._series is None:
            self._series = pl.Series("l", self.lines, dtype=pl.String)
        return self._series


@dataclass
class LaneRows:
    """What a lane took from a chunk: the chunk's line indices it read in place of the parser
    (None: every line, the parser is not fed this chunk at all) and its records, keyed (ORDER)."""

    consumed: set[int] | None
    phases: pl.DataFrame | None = None
    metrics: pl.DataFrame | None = None


def keyed(frame: pl.DataFrame, pos: list[int], rdr: list[int], k: list[int]) -> pl.DataFrame:
    return frame.with_columns(pl.Series("pos", pos, dtype=pl.Int64), pl.Series("rdr", rdr, dtype=pl.Int64),
                              pl.Series("k", k, dtype=pl.Int64))


def merge(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame | None:
    """Keyed frames of one kind as one frame in emission order (keys dropped)."""
    frames = [f for f in frames if f.height]
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0].sort(ORDER, maintain_order=True).select(list(schema))
    return pl.concat([f.select([*schema, *ORDER]) for f in frames]).sort(ORDER, maintain_order=True).select(
        list(schema))
