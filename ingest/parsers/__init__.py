"""Log parsers: pure streaming functions, no Django, no I/O beyond the stream they are given.

A real server log mixes formats (SGLang lines, NCCL INFO lines, profile blocks), so one pass
hands every line to each format's parser; each does a cheap substring check first.
parse_stream reads the file a chunk at a time (text.read_chunks); engine="lines" keeps the
line-at-a-time reader the chunked one is proven equal to (tests/test_parsers_engine.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any, BinaryIO, Literal

from . import (
    columns,
    context,
    eagle_profile,
    launch_env,
    llamacpp,
    native,
    nccl_debug,
    nccl_tests,
    processes,
    sglang,
    vllm,
)
from .records import ParseError, ParseResult
from .records import Parser as FormatParser
from .text import MpiLine, Text, clean, number_lines, read_chunks, read_lines

# Written out in full: the one place that says which formats runlens reads.
PARSERS: dict[str, type[FormatParser]] = {
    "eagle_profile": eagle_profile.Parser,
    "sglang": sglang.Parser,
    "vllm": vllm.Parser,
    "llamacpp": llamacpp.Parser,
    "nccl_debug": nccl_debug.Parser,
    "nccl_tests": nccl_tests.Parser,
    "launch_env": launch_env.Parser,
}

__all__ = [
    "PARSERS", "ParseError", "ParseResult", "parse_lines", "parse_numbered",
    "parse_stream",
]


Sink = Callable[[ParseResult], None]
# Rows held before a sink takes them: memory stays flat on a 1 GB log (about 5 MB of them as
# columns), and a sink's cost per call (polars per frame, spool writes) is paid every few chunks.
# More rows a batch buy no speed and cost the worker's peak memory (bench/run.py shows both).
SPILL_AT = 1 << 16
SPILL_EVERY = 1024  # lines between two looks at the rows held
LANE_MIN_LINES = 512  # a smaller chunk is read line by line: the lanes' fixed cost would not pay


def parse_numbered(numbered: Iterator[tuple[int, str]], formats: Iterable[str] | None = None,
                   result: ParseResult | None = None, sink: Sink | None = None) -> ParseResult:
    """Run the chosen parsers (all by default) over (line number, text) pairs in one pass.

    With a `sink`, every SPILL_AT rows it is called to take them (`result.take_rows()`), e.g.
    to insert them into the database inside the caller's transaction; the rows still pending
    at the end stay in `result` for the caller.
    """
    result = result or ParseResult()
    parsers = [PARSERS[name](result) for name in (formats or PARSERS)]
    feeds = [p.feed for p in parsers]
    # Every record learns the process that wrote its line (processes.py): tagged before the
    # format parsers see the line, stamped after them.
    tagger = processes.Tagger(result)
    tag, stamp = tagger.feed, tagger.stamp
    offer = result.offer
    for lineno, line in numbered:
        result.lines = lineno
        tag(lineno, line)
        for feed in feeds:
            feed(lineno, line)
        if offer is not None:
            offer(lineno, line)
        stamp()
        if sink is not None and not lineno % SPILL_EVERY and result.pending >= SPILL_AT:
            sink(result)
    for p in parsers:
        p.finish()
    tagger.finish()
    return result


def _parse_chunks(chunks: Iterator[tuple[int, list[str]]], formats: Iterable[str] | None,
                  result: ParseResult, sink: Sink | None) -> None:
    """parse_numbered's records from (number of the first line, lines) chunks.

    Each parser (and the Tagger, first, as in parse_numbered) is fed only its candidate lines,
    found by one C-level search per trigger over the chunk, and every line while it is busy();
    lines no one wants are never looked at in Python. Records are stamped every SPILL_EVERY lines (and
    after sglang/vllm lines until the benchmark process exists, see below).

    A parser with a `lane()` may take a chunk's lines as columns instead (columns.py): its
    records join the others' at the end of the chunk, in the order feeding would give them,
    and the chunk's rows are offered to the sink there (not every SPILL_EVERY lines).
    """
    parsers = [PARSERS[name](result) for name in (formats or PARSERS)]
    tagger = processes.Tagger(result)
    readers: list[processes.Tagger | FormatParser] = [tagger, *parsers]
    for first, lines in chunks:
        chunk = columns.Chunk(lines, first)
        found = chunk.found
        # The lines holding each trigger, and each STARTS, found by polars over the chunk's lines;
        # a trigger not in the chunk at all (most, most of the time) costs one str.find.
        text = "\n".join(lines)
        present = columns.present(text, _triggers(readers))
        for reader in readers:
            for trigger in reader.TRIGGERS:
                if trigger not in found:
                    found[trigger] = set() if trigger not in present else set(
                        chunk.series.str.contains(trigger, literal=True).arg_true().to_list())
        chunk.plain = columns.plain(text)
        mpi = getattr(lines, "mpi", None)  # text.Lines knows them; other callers' lists are looked through
        if mpi is None:
            mpi = [i for i, line in enumerate(lines) if type(line) is MpiLine]
        lanes = _lanes(readers, chunk) if len(lines) >= LANE_MIN_LINES and not mpi else {}
        fed = [r for r in readers if r not in lanes or lanes[r].consumed is not None]
        wanted: list[set[int]] = []
        for reader in fed:
            lines_of = set()
            for trigger in reader.TRIGGERS:
                lines_of |= found[trigger]
            if reader.STARTS is not None:
                lines_of.update(chunk.series.str.contains(_line_pattern(reader.STARTS)).arg_true().to_list())
            if reader is tagger:
                # An MPI tag names the line's process, but clean() took it off the text searched here.
                lines_of.update(mpi)
            if reader in lanes:
                lines_of -= lanes[reader].consumed or set()  # None: not fed at all (filtered out above)
            if lanes and reader is not tagger and hasattr(reader, "quiet"):
                lines_of -= reader.quiet(chunk, lines_of)
            wanted.append(lines_of)
        # Lines only the Tagger wants, on which it would change nothing, are not fed to it either;
        # it is still fed one if a busy parser is (see _feed: a record may be of that line).
        quiet: set[int] = set()
        if lanes:
            others = set().union(*wanted[1:])
            quiet = tagger.quiet(chunk, wanted[0] - others)
            wanted[0] -= quiet
        wants: dict[int, list] = {}
        for reader, lines_of in zip(fed, wanted, strict=True):
            for i in lines_of:
                wants.setdefault(i, []).append(reader)
        # The benchmark client's process is made when its first record is stamped: stamped right
        # after the line that emitted it, it comes among the processes where parse_numbered puts it.
        bench = {p for p in parsers if p.name in ("sglang", "vllm")}
        order = sorted(wants)
        track: list[tuple[int, int, int, int, int, int]] | None = [] if lanes else None
        if lanes:
            result.freeze()  # the rows before this chunk stay before its lanes' rows
        lo = 0
        while lo < len(lines):
            # Up to the next line number divisible by SPILL_EVERY, where parse_numbered offers the
            # sink its rows: the sink gets the same batches from both engines.
            spill = (first + lo + SPILL_EVERY - 1) // SPILL_EVERY * SPILL_EVERY
            hi = min(len(lines), spill - first + 1)
            stamp_after = set() if processes.BENCH_TAG in result.processes else bench
            _feed(lines, first, fed, wants, order, lo, hi, stamp_after, tagger.stamp, track, readers, quiet)
            tagger.stamp()
            result.lines = first + hi - 1
            if sink is not None and not lanes and result.lines == spill and result.pending >= SPILL_AT:
                sink(result)
            lo = hi
        if lanes:
            _join_lanes(result, lanes.values(), track)  # type: ignore[arg-type]  # a list when lanes
            if sink is not None and result.pending >= SPILL_AT:
                sink(result)
    for p in parsers:
        p.finish()
    tagger.finish()


def _lanes(readers: list, chunk: columns.Chunk) -> dict:
    """The lanes that take this chunk: {reader: LaneRows}."""
    out = {}
    for rdr, reader in enumerate(readers):
        lane = getattr(reader, "lane", None)
        if lane is not None and (rows := lane(chunk, rdr)) is not None:
            out[reader] = rows
    return out


def _triggers(readers: list) -> tuple[str, ...]:
    return tuple(sorted({t for r in readers for t in r.TRIGGERS}))


@cache
def _line_pattern(starts: re.Pattern) -> str:
    """A parser's STARTS (a newline, then how a line starts) as a polars pattern on one line.

    Rust's \\s is Unicode White_Space; Python's also takes \\x1c-\\x1f: added, so that the lines
    found are those Python finds (a parser fed a line it does not want does nothing with it).
    """
    pattern = starts.pattern
    assert pattern.startswith("\\n"), pattern
    return ("^" + pattern[2:]).replace("\\U0010ffff", "\\x{10FFFF}").replace("[^\\S\\n]", "[[\\s\\x1c-\\x1f]&&[^\\n]]")


def _join_lanes(result: ParseResult, lanes: Iterable[columns.LaneRows],
                track: list[tuple[int, int, int, int, int, int]]) -> None:
    """The chunk's rows as one frame per kind: the lanes' and the fed parsers' (result's lists,
    placed by `track`: (line, reader, first phase, end, first metric, end)), in feeding order."""
    phase_keys: tuple[list[int], list[int], list[int]] = ([], [], [])
    metric_keys: tuple[list[int], list[int], list[int]] = ([], [], [])
    for pos, rdr, p0, p1, m0, m1 in track:
        for keys, a, b in ((phase_keys, p0, p1), (metric_keys, m0, m1)):
            keys[0].extend([pos] * (b - a))
            keys[1].extend([rdr] * (b - a))
            keys[2].extend(range(b - a))
    phases, metrics = result.phases, result.metrics
    assert len(phases) == len(phase_keys[0]) and len(metrics) == len(metric_keys[0])
    result.phases, result.metrics = [], []
    lanes = list(lanes)
    ph = columns.merge([columns.keyed(columns.phases_frame(phases), *phase_keys),
                        *(lane.phases for lane in lanes if lane.phases is not None)], columns.PHASE_SCHEMA)
    me = columns.merge([columns.keyed(columns.metrics_frame(metrics), *metric_keys),
                        *(lane.metrics for lane in lanes if lane.metrics is not None)], columns.METRIC_SCHEMA)
    if ph is not None:
        result.phase_frames.append(ph)
    if me is not None:
        result.metric_frames.append(me)


def _feed(lines: list[str], first: int, readers: list, wants: dict[int, list], order: list[int], lo: int,
          hi: int, stamp_after: set, stamp: Callable[[], None], track: list | None = None,
          everyone: list | None = None, quiet: set[int] | None = None) -> None:
    """Feed lines lo..hi-1 of a chunk: each wanted line (`order`: the wanted ones sorted) to the
    readers that want it, in line order and readers' order, and every line to a reader that is
    busy() after it was fed, until it is not; stamp() after a line fed to one of `stamp_after`.
    With `track`, note (line, reader's place in `everyone`, phases and metrics it added) per feed."""
    held: list = [r for r in readers if r.busy()]
    offer = readers[0].result.offer if readers else None
    k = 0
    i = lo - 1
    while True:
        if held:
            i += 1
        else:
            k = bisect_right(order, i, k)
            if k == len(order):
                return
            i = order[k]
        if i >= hi:
            return
        chosen = wants.get(i)
        if not held:
            fed = chosen or []
        elif quiet and i in quiet:
            fed = [readers[0], *(r for r in held if r is not readers[0])]  # the Tagger first, as ever
        elif chosen is None or chosen == held:
            fed = held
        else:
            fed = [r for r in readers if r in held or r in chosen]
        line, lineno = lines[i], first + i
        if track is None:
            for reader in fed:
                reader.feed(lineno, line)
        else:
            result = readers[0].result
            for reader in fed:
                p0, m0 = len(result.phases), len(result.metrics)
                reader.feed(lineno, line)
                p1, m1 = len(result.phases), len(result.metrics)
                if p1 != p0 or m1 != m0:
                    track.append((i, everyone.index(reader), p0, p1, m0, m1))  # type: ignore[union-attr]
        if offer is not None and fed:
            offer(lineno, line)
        if stamp_after and not stamp_after.isdisjoint(fed):
            stamp()
        held = [r for r in fed if r.busy()]


def parse_lines(lines: Iterable[str], formats: Iterable[str] | None = None) -> ParseResult:
    """Parse decoded text lines (tests, in-memory callers)."""
    return parse_numbered(number_lines(lines), formats)


Engine = Literal["native", "chunks", "lines"]


@cache
def _wanted(names: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a line holds one of these format readers' triggers or starts like their STARTS:
    the lines every engine hands them (context.Watcher.offer)."""
    literals = tuple(sorted({t for n in names for t in PARSERS[n].TRIGGERS}))
    starts = [re.compile("^" + starts.pattern[2:]) for n in names if (starts := PARSERS[n].STARTS) is not None]

    def wanted(line: str) -> bool:
        return any(t in line for t in literals) or any(p.match(line) for p in starts)
    return wanted


def _harvesting(sink: Sink, watcher: context.Watcher) -> Sink:
    """`sink`, after the watcher has struck off the lines of the rows it is about to take."""
    def take(result: ParseResult) -> None:
        watcher.harvest(result)
        sink(result)
    take.takes_groups = getattr(sink, "takes_groups", False)  # type: ignore[attr-defined]  # read by native.py
    return take


def _watched(chunks: Iterator[tuple[int, Any]], watcher: context.Watcher) -> Iterator[tuple[int, Any]]:
    """The chunks, each shown to the context watcher before an engine reads it."""
    for first, chunk in chunks:
        if isinstance(chunk, Text):
            watcher.text(first, chunk.text, chunk.dirty, clean)
        else:
            watcher.chunk(first, chunk)
        yield first, chunk


def parse_stream(stream: BinaryIO, formats: Iterable[str] | None = None, sink: Sink | None = None,
                 engine: Engine | None = None) -> ParseResult:
    """Parse a binary stream. Raises ParseError only for a file that is not text (empty, binary):
    text in no known format is kept as context (context.py).

    `engine`: "native" (the default: the C scanner, native.py) where it is built and every format
    is read, else "chunks" (polars lanes); "lines" is the reference both are proven equal to.
    """
    result = ParseResult()
    watcher = context.Watcher(_wanted(tuple(formats or PARSERS)))
    result.offer = watcher.offer
    if sink is not None:
        sink = _harvesting(sink, watcher)
    if engine is None:
        engine = "native" if formats is None and native.available() is None else "chunks"
    if engine == "lines":
        parse_numbered(watcher.lines(read_lines(stream, result.warnings)), formats, result, sink)
    else:
        if engine == "native":
            if formats is not None or (why := native.available()) is not None:
                raise ValueError(f"the native engine reads every format and must be built: {why or formats}")
            chunks = _watched(read_chunks(stream, result.warnings, texts=True), watcher)
            native.parse_chunks(chunks, PARSERS, result, sink, SPILL_AT)
        else:
            _parse_chunks(_watched(read_chunks(stream, result.warnings), watcher), formats, result, sink)
        if sink is None:
            result.thaw()  # every record as an object, as engine="lines" gives them
    # Topology, versions, unread lines; a file in no log format is kept as context, not failed.
    watcher.finish(result)
    return result
