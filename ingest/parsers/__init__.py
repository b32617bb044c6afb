"""Log parsers: pure streaming functions, no Django, no I/O beyond the stream they are given.

A real server log mixes formats (SGLang lines, NCCL INFO lines, profile blocks), so one pass
hands every line to each format's parser; each does a cheap substring check first.
parse_stream reads the file a chunk at a time (text.read_chunks) through the native scanner;
engine="lines" is the line-at-a-time reference it is proven equal to (tests/test_parsers_native.py),
and what reads where the scanner is not built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any, BinaryIO, Literal

from . import (
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
from .text import Text, clean, number_lines, read_chunks, read_lines

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
    settle = [p.settle for p in parsers if isinstance(p, nccl_debug.Parser)]
    for lineno, line in numbered:
        result.lines = lineno
        tag(lineno, line)
        for feed in feeds:
            feed(lineno, line)
        if offer is not None:
            offer(lineno, line)
        stamp()
        if sink is not None and not lineno % SPILL_EVERY and result.pending >= SPILL_AT:
            for echoes in settle:
                echoes()  # echoes of a known rank go ranked, and are not held to the end
            sink(result)
    for p in parsers:
        p.finish()
    tagger.finish()
    return result


def parse_lines(lines: Iterable[str], formats: Iterable[str] | None = None) -> ParseResult:
    """Parse decoded text lines (tests, in-memory callers)."""
    return parse_numbered(number_lines(lines), formats)


Engine = Literal["native", "lines"]


@cache
def _wanted(names: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a line holds one of these format readers' triggers or starts like their STARTS:
    the lines every engine hands them (context.Watcher.offer)."""
    literals = sorted({t for n in names for t in PARSERS[n].TRIGGERS}, key=lambda t: (-len(t), t))
    # The readers' own STARTS, compiled already: one pattern of them all cost 11 ms to compile (their
    # Unicode ranges), a parse's most for a few hundred calls, none at all where the scanner decides the
    # offers (a decode log). A STARTS is a newline and what follows it (records.Parser): the line is
    # matched after one, as a chunk's search finds it.
    starts = [s.match for s in dict.fromkeys(PARSERS[n].STARTS for n in names) if s is not None]
    search: Callable[[str], re.Match | None] | None = None  # the triggers, compiled at the first call

    def wanted(line: str) -> bool:
        nonlocal search
        if search is None:
            # One search for every literal: a line of the Watcher's is looked at once.
            search = re.compile("|".join(map(re.escape, literals)) or "(?!)").search
        if search(line) is not None:
            return True
        if starts:
            after = "\n" + line
            return any(match(after) is not None for match in starts)
        return False
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
            if first <= context.HEAD_SCAN_LINES:  # (text() reads the head alone; raw is made anew)
                watcher.text(first, chunk.raw, chunk.dirty, clean, len(chunk))
        else:
            watcher.chunk(first, chunk)
        yield first, chunk


def parse_stream(stream: BinaryIO, formats: Iterable[str] | None = None, sink: Sink | None = None,
                 engine: Engine | None = None) -> ParseResult:
    """Parse a binary stream. Raises ParseError only for a file that is not text (empty, binary):
    text in no known format is kept as context (context.py).

    Two engines read the one grammar (the readers' own code): "native" (the default: the C scanner
    reads the lines it can read exactly, the readers the rest; native.py) where it is built and
    every format is read, else "lines", the reference it is proven equal to (a line at a time
    through every reader; tests/test_parsers_native.py).
    """
    result = ParseResult()
    watcher = context.Watcher(_wanted(tuple(formats or PARSERS)))
    result.offer = watcher.offer
    if sink is not None:
        sink = _harvesting(sink, watcher)
    if engine is None:
        engine = "native" if formats is None and native.available() is None else "lines"
    if engine == "lines":
        parse_numbered(watcher.lines(read_lines(stream, result.warnings)), formats, result, sink)
    else:
        if formats is not None or (why := native.available()) is not None:
            raise ValueError(f"the native engine reads every format and must be built: {why or formats}")
        chunks = _watched(read_chunks(stream, result.warnings, texts=True), watcher)
        native.parse_chunks(chunks, PARSERS, result, sink, SPILL_AT)
        if sink is None:
            result.thaw()  # every record as an object, as engine="lines" gives them
    # Topology, versions, unread lines; a file in no log format is kept as context, not failed.
    watcher.finish(result)
    return result
