"""Log parsers: pure streaming functions, no Django, no I/O beyond the stream they are given.

A real server log mixes formats (SGLang lines, NCCL INFO lines, profile blocks), so one pass
hands every line to each format's parser; each does a cheap substring check first.
parse_stream reads the file a chunk at a time (text.read_chunks); engine="lines" keeps the
line-at-a-time reader the chunked one is proven equal to (tests/test_parsers_engine.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from typing import BinaryIO, Literal

from . import eagle_profile, launch_env, llamacpp, nccl_debug, nccl_tests, processes, sglang, vllm
from .records import ParseError, ParseResult
from .records import Parser as FormatParser
from .text import MpiLine, number_lines, read_chunks, read_lines

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
SPILL_AT = 20_000  # rows held before a sink takes them: memory stays flat on a 1 GB log
SPILL_EVERY = 1024  # lines between two looks at the rows held


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
    for lineno, line in numbered:
        result.lines = lineno
        tag(lineno, line)
        for feed in feeds:
            feed(lineno, line)
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
    """
    parsers = [PARSERS[name](result) for name in (formats or PARSERS)]
    tagger = processes.Tagger(result)
    readers: list[processes.Tagger | FormatParser] = [tagger, *parsers]
    for first, lines in chunks:
        text = "\n" + "\n".join(lines)
        # starts[i]: the newline in `text` before line i; a match at p is on line bisect(starts, p) - 1.
        starts = [0, *accumulate(len(line) + 1 for line in lines[:-1])]
        found: dict[str, set[int]] = {}
        wants: dict[int, list] = {}
        for reader in readers:
            lines_of = set()
            for trigger in reader.TRIGGERS:
                if trigger not in found:
                    found[trigger] = _lines_with(text, trigger, starts)
                lines_of |= found[trigger]
            if reader.STARTS is not None:
                lines_of.update(bisect_right(starts, m.start()) - 1 for m in reader.STARTS.finditer(text))
            if reader is tagger:
                # An MPI tag names the line's process, but clean() took it off the text searched here.
                lines_of.update(i for i, line in enumerate(lines) if type(line) is MpiLine)
            for i in lines_of:
                wants.setdefault(i, []).append(reader)
        # The benchmark client's process is made when its first record is stamped: stamped right
        # after the line that emitted it, it comes among the processes where parse_numbered puts it.
        bench = {p for p in parsers if p.name in ("sglang", "vllm")}
        order = sorted(wants)
        lo = 0
        while lo < len(lines):
            # Up to the next line number divisible by SPILL_EVERY, where parse_numbered offers the
            # sink its rows: the sink gets the same batches from both engines.
            spill = (first + lo + SPILL_EVERY - 1) // SPILL_EVERY * SPILL_EVERY
            hi = min(len(lines), spill - first + 1)
            stamp_after = set() if processes.BENCH_TAG in result.processes else bench
            _feed(lines, first, readers, wants, order, lo, hi, stamp_after, tagger.stamp)
            tagger.stamp()
            result.lines = first + hi - 1
            if sink is not None and result.lines == spill and result.pending >= SPILL_AT:
                sink(result)
            lo = hi
    for p in parsers:
        p.finish()
    tagger.finish()


def _lines_with(text: str, literal: str, starts: list[int]) -> set[int]:
    """The lines of a chunk (as `text` and `starts` of _parse_chunks) that hold `literal`."""
    out = set()
    p = text.find(literal)
    while p >= 0:
        i = bisect_right(starts, p) - 1
        out.add(i)
        p = text.find(literal, starts[i + 1]) if i + 1 < len(starts) else -1
    return out


def _feed(lines: list[str], first: int, readers: list, wants: dict[int, list], order: list[int], lo: int,
          hi: int, stamp_after: set, stamp: Callable[[], None]) -> None:
    """Feed lines lo..hi-1 of a chunk: each wanted line (`order`: the wanted ones sorted) to the
    readers that want it, in line order and readers' order, and every line to a reader that is
    busy() after it was fed, until it is not; stamp() after a line fed to one of `stamp_after`."""
    held: list = [r for r in readers if r.busy()]
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
        elif chosen is None or chosen == held:
            fed = held
        else:
            fed = [r for r in readers if r in held or r in chosen]
        line, lineno = lines[i], first + i
        for reader in fed:
            reader.feed(lineno, line)
        if stamp_after and not stamp_after.isdisjoint(fed):
            stamp()
        held = [r for r in fed if r.busy()]


def parse_lines(lines: Iterable[str], formats: Iterable[str] | None = None) -> ParseResult:
    """Parse decoded text lines (tests, in-memory callers)."""
    return parse_numbered(number_lines(lines), formats)


def parse_stream(stream: BinaryIO, formats: Iterable[str] | None = None, sink: Sink | None = None,
                 engine: Literal["chunks", "lines"] = "chunks") -> ParseResult:
    """Parse a binary stream. Raises ParseError when nothing in it is a log runlens knows."""
    result = ParseResult()
    if engine == "lines":
        parse_numbered(read_lines(stream, result.warnings), formats, result, sink)
    else:
        _parse_chunks(read_chunks(stream, result.warnings), formats, result, sink)
    if not result.formats:
        raise ParseError(
            0,
            f"none of the {result.lines} lines is in a format runlens reads "
            f"({', '.join(PARSERS)})",
        )
    return result
