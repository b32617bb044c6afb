"""The native engine (issue 10): a C scanner reads the lines it can read exactly, Python the rest.

`_scan.Scanner.scan` walks a chunk's lines and does, for each, what feeding it to the Tagger and
every parser would do — or stops and hands the line back (the shapes it takes are listed at the
top of _scan.c). The line handed back is fed here to the readers whose TRIGGERS or STARTS it
holds (the scanner says which) and to every busy one, then stamped, exactly as the line engine
would; while a reader other than eagle_profile is busy (a multi-line block of its own), lines
are fed here one by one. So the records are the line engine's, in its order, with a C loop in
place of Python on the bulk of a serving log (tests/test_parsers_native.py proves them equal).

The scanner's records wait in its own column buffers and join the result as frames: before the
scanner adds records while Python-fed ones are pending, and at the end of every chunk (so a
frame always holds records older than the ones in the result's lists).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import polars as pl

from . import eagle_profile, launch_env, llamacpp, nccl_debug, nccl_tests, processes, serving, sglang
from .records import ParseResult

try:
    from . import _scan
except ImportError:  # not built (a checkout used without `pip install -e .`): the chunk engine reads
    _scan = None  # type: ignore[assignment]

# The STARTS the C scanner reads by hand (starts_of in _scan.c), pattern for pattern: a parser
# whose STARTS changes must change the scanner too, or the native engine is off (and a test fails).
C_STARTS = {
    "Tagger": r"\n[(\[#$+]",
    "launch_env": r"\n(?:[$+(A-Z\x80-\U0010ffff]|export|env )",
    "nccl_tests": r"\n(?:[ \t][^\S\n]*)?[#0-9\x80-\U0010ffff]",
    "serving": r"\n[^\S\n]*(?:Successful requests|Benchmark duration \(s\)|Request throughput \(req/s\)"
               r"|Output token throughput \(tok/s\)):",
}
# The reader order the scanner's bits follow (enum in _scan.c): the Tagger, then PARSERS.
C_READERS = ("tagger", "eagle_profile", "sglang", "vllm", "llamacpp", "nccl_debug", "nccl_tests", "launch_env")

_FLAGS = (  # settings the scanner must find set (first records are Python's): bit, formats, settings
    (1, "eagle_profile", None), (2, None, "spec.algorithm"), (4, None, "spec.steps"),
    (8, "sglang_decode", None), (16, "sglang_prefill", None), (32, None, "engine"),
)

Sink = Callable[[ParseResult], None]


def available() -> str | None:
    """None when the native engine can run, else why not."""
    if _scan is None:
        return "the native scanner (ingest/parsers/_scan.c) is not built: pip install -e ."
    patterns: dict[str, re.Pattern | None] = {
        "Tagger": processes.Tagger.STARTS, "launch_env": launch_env.Parser.STARTS,
        "nccl_tests": nccl_tests.Parser.STARTS, "serving": serving.BlockReader.STARTS,
    }
    if any(p.STARTS is not None for p in (eagle_profile.Parser, llamacpp.Parser, nccl_debug.Parser)):
        return "a parser without STARTS in _scan.c has one now: read it in starts_of()"
    for name, pattern in patterns.items():
        if pattern is None or pattern.pattern != C_STARTS[name]:
            return f"{name}.STARTS is not the pattern _scan.c reads: change starts_of() with it"
    if sglang.Parser.STARTS is not serving.BlockReader.STARTS:
        return "sglang.Parser.STARTS is not BlockReader.STARTS, which _scan.c reads"
    return None


def scanner(readers: list) -> _scan.Scanner:
    literals = [(t, bit) for bit, reader in enumerate(readers) for t in reader.TRIGGERS]
    return _scan.Scanner(literals, dict(sglang._DECODE_METRICS), dict(sglang._PREFILL_METRICS))


def _flags(result: ParseResult) -> int:
    formats, settings = result.formats, result.settings
    return sum(bit for bit, fmt, key in _FLAGS if (fmt in formats if fmt else key in settings))


def _flush(scan: _scan.Scanner, result: ParseResult) -> None:
    """The scanner's records into the result's frames (after those already there). They come as
    Arrow arrays whose buffers polars takes over (the Arrow C data interface): no copy, no Python
    object a value."""
    if not scan.pending:
        return
    phases, metrics = scan.take()
    if phases is not None:
        result.phase_frames.append(pl.Series(phases).struct.unnest())
    if metrics is not None:
        result.metric_frames.append(pl.Series(metrics).struct.unnest())


def parse_chunks(chunks: Iterator[tuple[int, list[str]]], parsers: dict, result: ParseResult,
                 sink: Sink | None, spill_at: int) -> None:
    """The records of `chunks` ((number of the first line, lines)) into `result`, as parse_numbered
    gives them; `parsers` is PARSERS (every format: the scanner stands in for all of them)."""
    formats = [p(result) for p in parsers.values()]
    tagger = processes.Tagger(result)
    readers = [tagger, *formats]
    by_name = {p.name: p for p in formats}
    assert tuple(["tagger", *by_name]) == C_READERS, "the scanner's reader bits follow PARSERS' order"
    eagle, sglang_parser, nccl = by_name["eagle_profile"], by_name["sglang"], by_name[nccl_debug.NAME]
    others = [r for r in readers if r is not eagle]  # their blocks are read in Python, line by line
    scan = scanner(readers)
    labels, nccl_lines, channel_lines = tagger.sglang_labels, tagger.nccl_lines, nccl.channel_lines
    for first, lines in chunks:
        i, n = 0, len(lines)
        while i < n:
            if not any(r.busy() for r in others):
                if result.phases or result.metrics:
                    _flush(scan, result)  # the scanner's records are older than these
                    result.freeze()
                i, mask = scan.scan(lines, i, first, eagle, sglang_parser, labels, nccl_lines, channel_lines,
                                    _flags(result))
                if i == n:
                    break
            else:
                mask = scan.mask(lines[i])
            line, lineno = lines[i], first + i
            for bit, reader in enumerate(readers):
                if mask >> bit & 1 or reader.busy():
                    reader.feed(lineno, line)
            tagger.stamp()
            i += 1
        result.lines = first + n - 1
        # The scanner's records join the result when a sink takes them (a few chunks' worth: polars'
        # cost per frame is paid less often), or at the end.
        if sink is not None and result.pending + scan.pending >= spill_at:
            _flush(scan, result)
            sink(result)
    _flush(scan, result)
    for p in formats:
        p.finish()
    tagger.finish()
