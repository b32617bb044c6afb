"""Log parsers: pure streaming functions, no Django, no I/O beyond the stream they are given.

A real server log mixes formats (SGLang lines, NCCL INFO lines, profile blocks), so one pass
hands every line to each format's parser; each does a cheap substring check first.
parse_stream reads the file a chunk at a time (text.read_chunks); engine="lines" keeps the
line-at-a-time reader the chunked one is proven equal to (tests/test_parsers_engine.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Literal

from . import eagle_profile, launch_env, llamacpp, nccl_debug, nccl_tests, processes, sglang, vllm
from .records import ParseError, ParseResult
from .records import Parser as FormatParser
from .text import number_lines, read_chunks, read_lines

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
        if sink is not None and not lineno & 1023 and result.pending >= SPILL_AT:
            sink(result)
    for p in parsers:
        p.finish()
    tagger.finish()
    return result


def _parse_chunks(chunks: Iterator[tuple[int, list[str]]], formats: Iterable[str] | None,
                  result: ParseResult, sink: Sink | None) -> None:
    """parse_numbered over (number of the first line, lines) chunks, the same records."""
    parsers = [PARSERS[name](result) for name in (formats or PARSERS)]
    feeds = [p.feed for p in parsers]
    tagger = processes.Tagger(result)
    tag, stamp = tagger.feed, tagger.stamp
    for first, lines in chunks:
        for lineno, line in enumerate(lines, first):
            tag(lineno, line)
            for feed in feeds:
                feed(lineno, line)
            stamp()
        result.lines = first + len(lines) - 1
        if sink is not None and result.pending >= SPILL_AT:
            sink(result)
    for p in parsers:
        p.finish()
    tagger.finish()


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
