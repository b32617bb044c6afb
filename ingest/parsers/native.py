"""The native engine: a C scanner reads the lines it can read exactly, Python the rest.

`_scan.Scanner.scan` walks a chunk's lines and does, for each, what feeding it to the Tagger and
every parser would do — or stops and hands the line back (the shapes it takes are listed at the
top of _scan.c). The line handed back is fed here to the readers whose TRIGGERS or STARTS it
holds (the scanner says which) and to every busy one, then stamped, exactly as the line engine
would; while a reader other than eagle_profile is busy (a multi-line block of its own), lines
are fed here one by one. So the records are the line engine's, in its order, with a C loop in
place of Python on the bulk of a serving log (tests/test_parsers_native.py proves them equal).

The scanner's records wait in its own column buffers and join the result as frames: before the
scanner adds records while Python-fed ones are pending, when a sink takes rows, and at the end
(so a frame always holds records older than the ones in the result's lists). A chunk comes as
lines (text.Lines: the scanner reads the str objects) or as one text (text.Text: read in place).
"""

from __future__ import annotations

import dis
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any

import polars as pl

from . import (
    context,
    eagle_profile,
    launch_env,
    llamacpp,
    nccl_debug,
    nccl_tests,
    processes,
    records,
    serving,
    sglang,
    text,
    vllm,
)
from .records import Grouped, ParseResult

try:
    from . import _scan
except ImportError:  # not built (a checkout used without `pip install -e .`): the reference engine reads
    _scan = None  # type: ignore[assignment]

# The STARTS the C scanner reads by hand (starts_of in _scan.c), pattern for pattern: a parser
# whose STARTS changes must change the scanner too, or the native engine is off (and a test fails).
C_STARTS = {
    "Tagger": r"\n[(\[#$+]",
    "launch_env": r"\n(?:[$+][^\S\n]|(?:\((?:[^()\n]|\([^()\n]*\))*\)[^\S\n]*)+(?:\[|[$+][^\S\n]|[\w.-]+@)"
                  r"|[A-Z\x80-\U0010ffff][\w.-]*[=@]|export(?:[^\S\n]|[\w.-]*[=@])|env "
                  r"|(?=[$+(A-Z\x80-\U0010ffff]|export|env )(?=[^\n]*(?i:throughput|accept|bandwidth|specdecod"
                  r"|environment|cl version|statistics|speculative|nccl_)))",
    "nccl_tests": r"\n(?:[ \t][^\S\n]*)?[#0-9\x80-\U0010ffff]",
    "serving": r"\n[^\S\n]*(?:Successful requests|Benchmark duration \(s\)|Request throughput \(req/s\)"
               r"|Output token throughput \(tok/s\)):",
}
# The reader order the scanner's bits follow (enum in _scan.c): the Tagger, then PARSERS.
C_READERS = ("tagger", "eagle_profile", "sglang", "vllm", "llamacpp", "nccl_debug", "nccl_tests", "launch_env")

_FLAGS = (  # settings the scanner must find set (first records are Python's): bit, formats, settings
    (1, "eagle_profile", None), (2, None, "spec.algorithm"), (4, None, "spec.steps"),
    (8, "sglang_decode", None), (16, "sglang_prefill", None), (32, None, "engine"),
    (8192, "vllm_engine", None), (16384, "vllm_spec", None),  # F_VLLM_ENGINE, F_VLLM_SPEC (_scan_vllm.h)
    (1 << 20, "vllm_stage_times", None),  # F_VLLM_STAGES (_scan_vllm.h)
)

Sink = Callable[[ParseResult], None]


def available() -> str | None:
    """None when the native engine can run, else why not."""
    if _scan is None:
        return "the native scanner (ingest/parsers/_scan.c) is not built (no C compiler at install?): pip install -e ."
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


def notice() -> str | None:
    """One line for an operator when the native engine cannot run (parselog, `make run`, /health):
    the reference engine reads then, right but several times slower. None when it runs."""
    why = available()
    return None if why is None else f"{why}; logs are read by the reference engine (several times slower)"


def hold_heap() -> bool:
    """Have glibc keep a parse's freed chunks for the next ones instead of mapping each afresh (see
    _scan.c): for a process that parses one log and exits (parselog). A worker does not: its fold
    thread's arena would keep as much again, doubling its peak memory."""
    return _scan is not None and _scan.hold_heap()


def trim_heap() -> bool:
    """Give the memory glibc holds free back to the system (malloc_trim): between a parse and what
    comes after it in a long-lived process (the Celery worker's summary, ingest.services)."""
    return _scan is not None and _scan.trim_heap()


def scanner(readers: list) -> _scan.Scanner:
    literals = [(t, bit) for bit, reader in enumerate(readers) for t in reader.TRIGGERS]
    scan = _scan.Scanner(literals, dict(sglang._DECODE_METRICS), dict(sglang._PREFILL_METRICS))
    tests = [r for r in readers if isinstance(r, nccl_tests.Parser)]
    if tests:  # (a scanner without the reader leaves every nccl-tests line to Python)
        # The type and op names a table row's cells may hold where the scanner reads it (any other
        # word is Python's: one the context watcher could take for a format's words, say).
        scan.watch_tests(tests[0], tests[0].result, sorted(nccl_tests._DTYPES | nccl_tests._REDOPS))
    return scan


F_MAIN = 64  # the Tagger has its "main" process (processes.MAIN): its busy() is over
# Only the two bench readers are busy, each in an open result block whose rows the scanner reads
# (_scan_vllm.h; the blocks' lists are handed to it by Scanner.bench).
F_BENCH = 4096


def standalone(parsers: dict) -> tuple[_scan.Scanner, tuple]:
    """A scanner over fresh readers of `parsers` (PARSERS), and the readers' state its scan() and
    scan_text() take after (first, ...) and before flags: for direct calls (tests, the fuzz corpus)."""
    result = ParseResult()
    formats = [p(result) for p in parsers.values()]
    tagger = processes.Tagger(result)
    by_name = {p.name: p for p in formats}
    return scanner([tagger, *formats]), (by_name["eagle_profile"], by_name["sglang"], tagger.sglang_labels,
                                         tagger.nccl_lines, by_name[nccl_debug.NAME].channel_lines)


def _plain_init(cls: type) -> tuple[str, ...] | None:
    """The names cls.__init__ stores its arguments in, in order, where that is all it does (a slots
    dataclass's own __init__: `self.key = key` a field, then nothing): the scanner then makes such a
    record as object.__new__ and that __init__ would (nccl_value in _scan_nccl.h). None: it calls cls."""
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or code.co_kwonlyargcount or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    self, *args = code.co_varnames[:code.co_argcount]
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in ("RESUME", "CACHE", "NOP")]
    stores = [op for a in args for op in (("LOAD_FAST", a), ("LOAD_FAST", self), ("STORE_ATTR", a))]
    if ops[:len(stores)] != stores or ops[len(stores):] not in ([("LOAD_CONST", None), ("RETURN_VALUE", None)],
                                                                [("RETURN_CONST", None)]):
        return None
    return tuple(args)


# serving.Block's fields as the scanner makes a title's block (bench_block_new in _scan_vllm.h): name, default,
# default factory.
_BLOCK_FIELDS = (("first_line", MISSING, MISSING), ("titled", False, MISSING), ("tool", None, MISSING),
                 ("rows", MISSING, list), ("sections", MISSING, list), ("prefix", "", MISSING),
                 ("client", MISSING, dict))


def _block_plain(cls: type) -> type | None:
    """cls where its __init__ is the one @dataclass wrote over _BLOCK_FIELDS (it stores each field in
    order and does nothing more: no __post_init__, no __new__ of its own) and its attributes are read and
    written as object's (the scanner holds the lists it stored instead of reading them back): the scanner
    then makes a title's block as object.__new__ and that __init__ would. None: open_title is called."""
    init = cls.__dict__.get("__init__")
    if not is_dataclass(cls) or hasattr(cls, "__post_init__") or cls.__new__ is not object.__new__ \
            or cls.__getattribute__ is not object.__getattribute__ or cls.__setattr__ is not object.__setattr__ \
            or hasattr(cls, "__getattr__") \
            or getattr(getattr(init, "__code__", None), "co_filename", None) != "<string>":
        return None
    got = tuple((f.name, f.default, f.default_factory) for f in fields(cls))
    return cls if got == _BLOCK_FIELDS else None


def _flags(result: ParseResult) -> int:
    formats, settings = result.formats, result.settings
    return sum(bit for bit, fmt, key in _FLAGS if (fmt in formats if fmt else key in settings)) \
        | (F_MAIN if processes.MAIN in result.processes else 0)


def _flush(scan: _scan.Scanner, result: ParseResult, grouped: bool = False) -> None:
    """The scanner's records into the result's frames (after those already there). They come as
    Arrow arrays whose buffers polars takes over (the Arrow C data interface): no copy, no Python
    object a value. `grouped`: as Grouped batches instead (records.py), for a sink that folds
    them by group (runs.digest.ParseDigest): no string column a record, no group_by."""
    if not scan.pending:
        return
    collectives = scan.take_collectives()
    if collectives is not None:
        result.collective_frames.append(pl.Series(collectives).struct.unnest())
    if grouped:
        for kind, frames in zip(scan.take_groups(), (result.phase_frames, result.metric_frames), strict=True):
            if kind is not None:
                frames.append(Grouped(frames is result.phase_frames, *kind))
        return
    phases, metrics = scan.take()
    if phases is not None:
        result.phase_frames.append(pl.Series(phases).struct.unnest())
    if metrics is not None:
        result.metric_frames.append(pl.Series(metrics).struct.unnest())


def _never_busy(reader: Any) -> bool:
    """Whether the reader's busy() is `return False`, its code read (launch_env, llamacpp, nccl_tests):
    ready() and feed() do not ask it at each of a log's many stops. A busy() with any more code is asked."""
    code, idle = type(reader).busy.__code__, _idle.__code__
    return code.co_code == idle.co_code and code.co_consts == idle.co_consts and code.co_names == idle.co_names


def _idle(self: Any) -> bool:
    return False


@dataclass
class _Parse:
    """What a chunk's reading needs: the scanner, the readers and the state the scanner moves on."""

    scan: _scan.Scanner
    result: ParseResult
    readers: list
    # The readers whose blocks are read in Python, line by line: all but eagle_profile, the Tagger and
    # those never busy (_never_busy),
    # whose busy() (no "main" process yet) the scanner reads from a flag (F_MAIN): a log of tagged
    # lines only (every line `[date TPn]`, or blank) never has one, and was read in Python a line each.
    others: list
    eagle: Any
    sglang: Any
    vllm: Any
    nccl_tests: Any
    labels: set[str]
    nccl_lines: dict[str, str]
    channel_lines: set[str]
    grouped: bool  # the sink takes the scanner's records as Grouped batches
    by_mask: dict[int, list] = field(default_factory=dict)  # feed_stopped's readers past the first two
    # feed()'s readers: (bit, reader, whether it can be busy: _never_busy() is not asked it)
    fed: list[tuple[int, Any, bool]] = field(default_factory=list)
    # _flags(result) and what it was read at: formats, settings and processes only grow (no reader
    # takes one away), so the flags change only with their sizes, not at each of a log's many stops.
    flags_at: tuple[int, int, int] = (-1, -1, -1)
    flags: int = 0

    def ready(self) -> int:
        """Whether the scanner may read on: 0 when a reader but eagle_profile is in a block of its
        own, else 1, or F_BENCH when the only ones are the two bench readers in result blocks the
        scanner reads rows of (bench_open). The records Python fed since the scanner's join its
        columns first, after its own (in order)."""
        mode = 1
        for r in self.others:
            if r.busy():
                if r is not self.sglang and r is not self.vllm or not self.bench_open():
                    return 0
                mode = F_BENCH
        result = self.result
        if result.phases or result.metrics:
            try:
                self.scan.add_records(result.phases, result.metrics)
            except (TypeError, OverflowError, ValueError):  # a field no column holds: frames, in order
                _flush(self.scan, result, self.grouped)
                result.freeze()
            else:
                result.phases, result.metrics = [], []  # new lists, as take_rows() gives (Tagger.stamp)
        # nccl-tests rows Python read join the scanner's columns too, once no name can come for
        # them any more: the op of the table being read is named (a late name renames the table's
        # rows in place, the objects themselves; nccl_tests.Parser._comment).
        if result.collectives and self.nccl_tests.op != "unknown":
            self.scan.add_collectives(result.collectives)
            result.collectives = []  # a new list, as take_rows() gives (Tagger.stamp)
        return mode

    def bench_open(self) -> bool:
        """Both bench readers (SGLang's and vLLM's, fed the same lines) hold an open block that the
        scanner can read rows into as BlockReader would (the same prefix, tool and subsection: they
        were fed the same lines), and SGLang is not joining a ServerArgs repr or a launch command."""
        sg, vl = self.sglang, self.vllm
        a, b = sg.bench, vl.bench
        x, y = a.block, b.block
        return (x is not None and y is not None and sg.args is None and sg.launch is None and x.prefix == y.prefix
                and x.tool == y.tool and a.subsection == b.subsection)

    def arm(self, mode: int) -> int:
        """The flags of a scan in `mode` (ready()); with F_BENCH, the blocks handed to the scanner (and
        the blocks themselves while their tool is unknown: the scanner calls their note_row)."""
        if mode == F_BENCH:
            x, y = self.sglang.bench.block, self.vllm.bench.block
            self.scan.bench(x.rows, x.sections, y.rows, y.sections, serving.Row, serving.KEYS, self.result.offer,
                            x.prefix, not self.nccl_tests.held, None if x.tool is not None else (x, y),
                            bool(self.sglang.bench.subsection), (self.sglang.bench, self.vllm.bench))
        r = self.result
        at = (len(r.formats), len(r.settings), len(r.processes))
        if at != self.flags_at:
            self.flags, self.flags_at = _flags(r), at
        return self.flags | (mode & F_BENCH)

    def bench_close(self, lineno: int, line: str) -> int:
        """A line that closes the open bench blocks (their footer, a title), which the scanner reads where
        it concerns no reader but the two busy bench ones (_scan_vllm.h bench_close) and does not close
        them itself (bench_close_here, _scan_bench.h): fed to those (the blocks' records written), stamped
        and handed to the scanner as before a scan (ready()); the flags it reads on with (arm()). The
        Watcher's offer is the scanner's."""
        self.sglang.feed(lineno, line)
        self.vllm.feed(lineno, line)
        self.readers[0].stamp()  # the Tagger
        mode = self.ready()
        if not mode:  # neither reader starts anything else on such a line (no literal of theirs is on it)
            raise RuntimeError(f"line {lineno}: a reader is busy after the bench blocks closed")
        return self.arm(mode)

    def feed(self, line: str, lineno: int, mask: int) -> None:
        """A line Python reads, as the line engine does: to the readers it concerns and the busy ones."""
        for bit, reader, may_be_busy in self.fed:
            if mask >> bit & 1 or may_be_busy and reader.busy():
                reader.feed(lineno, line)
        if self.result.offer is not None:
            self.result.offer(lineno, line)  # context.Watcher: lines no reader used
        self.readers[0].stamp()  # the Tagger

    def feed_stopped(self, line: str, lineno: int, mask: int) -> None:
        """feed() of a line the scanner stopped at: no reader but the Tagger and eagle_profile can be
        busy there (ready() said so), so the others fed are the mask's, found once a mask."""
        tagger, eagle = self.readers[0], self.readers[1]
        if mask & 1 or tagger.busy():
            tagger.feed(lineno, line)
        if mask & 2 or eagle.busy():
            eagle.feed(lineno, line)
        rest = self.by_mask.get(mask >> 2)
        if rest is None:
            rest = self.by_mask[mask >> 2] = [r for bit, r in enumerate(self.readers[2:]) if mask >> (bit + 2) & 1]
        for reader in rest:
            reader.feed(lineno, line)
        if self.result.offer is not None:
            self.result.offer(lineno, line)  # context.Watcher: lines no reader used
        tagger.stamp()

    def lines(self, lines: list[str], first: int) -> None:
        """A chunk cut into lines (text.Lines): the scanner reads the str objects."""
        i, n = 0, len(lines)
        while i < n:
            if mode := self.ready():
                i, mask = self.scan.scan(lines, i, first, self.eagle, self.sglang, self.labels, self.nccl_lines,
                                         self.channel_lines, self.arm(mode))
                if mode == 1 and self.sglang.bench.block is not None:
                    mode = F_BENCH  # the scanner opened both blocks at a title (bench_title): they are busy
                if mode == F_BENCH:
                    self.scan.bench(None)
                if i == n:
                    break
            else:
                mask = self.scan.mask(lines[i])
            (self.feed_stopped if mode == 1 else self.feed)(lines[i], first + i, mask)
            i += 1

    def text(self, chunk: text.Text, first: int) -> None:
        """A chunk kept as its text (text.Text): the scanner reads it in place; a line is cut out (and
        cleaned, if it is one of the chunk's dirty lines) only where Python feeds it."""
        body, wide, dirty = chunk.text, chunk.wide, chunk.dirty
        i, n, pos, d = 0, len(chunk), 0, 0  # d: the first dirty line not behind line i
        while i < n:
            while d < len(dirty) and dirty[d] < i:  # past the dirty line fed last: the scan stops at the next
                d += 1
            if mode := self.ready():
                i, pos, end, mask = self.scan.scan_text(
                    body, pos, i, n, first, self.eagle, self.sglang, self.labels, self.nccl_lines,
                    self.channel_lines, self.arm(mode), dirty[d] if d < len(dirty) else -1, wide, dirty, d, text.clean)
                if mode == 1 and self.sglang.bench.block is not None:
                    mode = F_BENCH  # the scanner opened both blocks at a title (bench_title): they are busy
                if mode == F_BENCH:
                    self.scan.bench(None)
                if i == n:
                    break
            else:
                end = body.find("\n", pos)
                end, mask = (len(body) if end < 0 else end), -1
            while d < len(dirty) and dirty[d] < i:
                d += 1
            if d < len(dirty) and dirty[d] == i:
                # Cleaned as the line engine cleans every line (the scanner cleaned it too, and read it
                # if it could: its mask is the cleaned line's), the decoded line where it is not ASCII: a
                # non-ASCII character is a "?" in the scanner's image.
                line = text.clean(wide[i] if i in wide else body[pos:end])
                if mask < 0:
                    mask = ~0  # every reader, as the line engine feeds a cleaned line
            else:
                line = body[pos:end]
                if line[:1] == "[" and "]<std" in line:  # an MPI-tagged line the scanner took its tag off
                    line, mask = text.clean(line), ~0  # (no other line but a dirty one holds "]<std")
                elif mask < 0:
                    mask = self.scan.mask(line)
            (self.feed_stopped if mode == 1 else self.feed)(line, first + i, mask)
            i, pos = i + 1, end + 1


def _watcher(result: ParseResult, parsers: dict) -> context.Watcher | None:
    """The Watcher whose offer() is result.offer, where it wants what every reader of `parsers` wants (the
    lines the scanner's masks name: what _scan_context.h takes for its `wanted`), else None."""
    from . import _wanted  # (the package imports this module)

    offer = result.offer
    watcher = getattr(offer, "__self__", None)
    if (isinstance(watcher, context.Watcher) and getattr(offer, "__func__", None) is context.Watcher.offer
            and watcher.wanted is _wanted(tuple(parsers))):
        return watcher
    return None


def parse_chunks(chunks: Iterator[tuple[int, list[str] | text.Text]], parsers: dict, result: ParseResult,
                 sink: Sink | None, spill_at: int) -> None:
    """The records of `chunks` ((number of the first line, lines or a text.Text)) into `result`, as
    parse_numbered gives them; `parsers` is PARSERS (every format: the scanner stands in for all)."""
    formats = [p(result) for p in parsers.values()]
    tagger = processes.Tagger(result)
    readers = [tagger, *formats]
    by_name = {p.name: p for p in formats}
    assert tuple(["tagger", *by_name]) == C_READERS, "the scanner's reader bits follow PARSERS' order"
    eagle, nccl = by_name["eagle_profile"], by_name[nccl_debug.NAME]
    scan = scanner(readers)
    # NCCL INFO lines of processes both readers know are read in C (_scan_nccl.h) against their state.
    scan.nccl_bind(result, nccl, processes.REPEATS, nccl_debug.REPEATS, records.NcclValue, nccl_debug.SOURCE,
                   _plain_init(records.NcclValue))
    # Env dumps, launch commands and the lines no reader acts on (_scan_env.h), offered to the Watcher in C
    # where result.offer is the parse's own Watcher's (_scan_context.h), else by calling result.offer;
    # SGLang's launch commands where the settings _resolve_flag names are held.
    scan.env_bind(tagger, _watcher(result, parsers), context.MAX_CANDIDATES, (processes.LAUNCHER, processes.WORKER),
                  processes.MAIN, launch_env.NAME, sglang._resolve_flag)
    # vLLM's process tags and engine lines (_scan_vllm.h): the state those lines move on
    scan.vllm_arm(by_name["vllm"], tagger.launch_lines, result.processes, dict(vllm._ENGINE_FIELDS),
                  dict(vllm._SPEC_KEYS), processes._VLLM_LAUNCHERS, processes._VLLM_WORKERS,
                  (processes.LAUNCHER, processes.WORKER), result.offer)
    scan.llamacpp_arm(by_name[llamacpp.NAME])  # llama.cpp's timing and slot lines (_scan_llamacpp.h)
    scan.vllm_args_arm({f: key for f, (key, _) in vllm._ARGS.items()})  # `non-default args` (_scan_vllm_args.h)
    others = [r for r in readers if r is not eagle and r is not tagger and not _never_busy(r)]
    parse = _Parse(scan, result, readers, others, eagle, by_name["sglang"], by_name["vllm"], by_name["nccl_tests"],
                   tagger.sglang_labels, tagger.nccl_lines, nccl.channel_lines,
                   bool(getattr(sink, "takes_groups", False)),
                   fed=[(bit, r, not _never_busy(r)) for bit, r in enumerate(readers)])
    # The bench readers whose blocks the scanner opens at a title while no reader is busy (bench_title),
    # what reads a line that closes them (bench_close), what Block.note_row names a block's tool by (the
    # scanner keeps its answer per label) and the Block a title opens (made as open_title makes it); let
    # go at the end (the parse holds the scanner).
    scan.bench_readers(parse.sglang.bench, parse.vllm.bench, serving.Row, serving.KEYS, parse.bench_close,
                       serving._row_tool, _block_plain(serving.Block))
    # What a block the scanner closes itself writes its records with (_scan_bench.h): the owner's
    # _bench_emit where nothing it does can change the scan's flags, else bench_close does it in Python.
    scan.bench_emit(parse.sglang, parse.vllm, result, tagger.recent, records.Setting, serving.add_block,
                    serving.BLOCKS_KEY, serving.OMITTED_KEY, serving.BLOCKS_KEPT, processes.BENCH_TAG, processes.RECENT)
    try:
        for first, lines in chunks:
            if isinstance(lines, text.Text):
                parse.text(lines, first)
            else:
                parse.lines(lines, first)
            result.lines = first + len(lines) - 1
            # The scanner's records join the result when a sink takes them (a few chunks' worth: polars'
            # cost per frame is paid less often), or at the end.
            if sink is not None and result.pending + scan.pending >= spill_at:
                _flush(scan, result, parse.grouped)
                nccl.settle()  # echoes of a known rank go ranked, and are not held to the end
                sink(result)
    finally:
        scan.bench_readers(None)
        scan.bench_emit(None)
    _flush(scan, result, parse.grouped)
    for p in formats:
        p.finish()
    tagger.finish()
