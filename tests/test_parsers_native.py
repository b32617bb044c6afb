"""The native engine (parse_stream's default, ingest/parsers/native.py and _scan.c) gives the
records of the line-at-a-time one, whatever the mix of logs, the chunk sizes and the damage, and
its C scanner does read the bulk of a serving log itself."""

import io
import random
import re
import time
from contextlib import ExitStack
from unittest import mock

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import PARSERS, _scan, native, parse_stream, processes, records, text
from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import DAMAGE, LINES, SAMPLES, SETTINGS, WINDOW_LINES, logs, serving_logs


class _Sink:
    """Takes rows as records; `takes_groups`: the scanner's come as Grouped batches first
    (what runs.digest.ParseDigest takes), made records here by Grouped.frame()."""

    def __init__(self, taken: list, grouped: bool) -> None:
        self.taken, self.takes_groups = taken, grouped

    def __call__(self, result) -> None:
        self.taken.append(result.take_rows())


def _parse(data: bytes, engine: str, grouped: bool = False):
    """Result and every phase, metric, collective and NCCL value however the sink took them."""
    taken: list = []
    try:
        result = parse_stream(io.BytesIO(data), sink=_Sink(taken, grouped), engine=engine)
    except parsers.ParseError as e:
        return ("ParseError", e.line, e.message)
    taken.append(result.take_rows())
    return result, [[row for batch in taken for row in batch[kind]] for kind in range(4)]


def _same(data: bytes, batch: int = 1 << 21, first: int = 1 << 16, spill_at: int = parsers.SPILL_AT,
          grouped: bool = False, vector: bool = True) -> None:
    """Native equals lines; `vector`: with the scanner's AVX2 line search where the CPU has it, else
    its scalar one (both are built on x86-64)."""
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(parsers, "SPILL_AT", spill_at))
        lines = _parse(data, "lines")
        stack.enter_context(mock.patch.object(text, "BATCH", batch))
        stack.enter_context(mock.patch.object(text, "FIRST_BATCH", first))
        was = _scan.vector()
        stack.callback(_scan.vector, was)
        _scan.vector(vector and was)
        got = _parse(data, "native", grouped)
    if "ParseError" in (lines[0], got[0]):
        assert got == lines
        return
    assert got[1] == lines[1]
    assert got[0] == lines[0]
    assert list(got[0].processes) == list(lines[0].processes)


def test_the_native_engine_is_built_and_reads_what_the_parsers_declare():
    assert native.available() is None
    assert parsers.parse_stream.__defaults__[-1] is None  # the default engine: native where it is built


@SETTINGS
@given(logs(), st.integers(1, 3000), st.integers(1, 50), st.booleans(), st.booleans())
def test_native_gives_the_records_lines_give(data, batch, spill_at, grouped, vector):
    _same(data, batch, batch, spill_at, grouped, vector)


@SETTINGS
@given(serving_logs(), st.integers(200, 4000), st.integers(1, 60), st.booleans(), st.booleans())
def test_native_gives_the_records_lines_give_on_serving_windows(data, batch, spill_at, grouped, vector):
    _same(data, batch, batch, spill_at, grouped, vector)


def test_the_vector_line_search_runs_where_the_cpu_has_avx2_and_can_be_turned_off():
    import platform

    cpu = open("/proc/cpuinfo").read() if platform.system() == "Linux" else ""
    was = _scan.vector()
    try:
        assert was == (platform.machine() == "x86_64" and " avx2" in cpu)
        assert _scan.vector(False) is False and _scan.vector() is False
        assert _scan.vector(True) is was
    finally:
        _scan.vector(was)


def test_grouped_records_are_the_scanners_frames_grouped_by_what_a_digest_keeps():
    from bench.loggen import HEAD_SAMPLE, windows_text

    data = HEAD_SAMPLE.read_bytes() + windows_text(500, seed=5).encode()
    frames, groups = _parse(data, "native", grouped=False), _parse(data, "native", grouped=True)
    assert groups[1] == frames[1] and groups[0] == frames[0]
    result = parse_stream(io.BytesIO(data), sink=_Sink([], grouped=True))  # the rows stay pending: too few
    grouped = [b for b in result.take_batches()[1] if isinstance(b, records.Grouped)]
    assert grouped and sum(b.height for b in grouped) > 5000
    for batch in grouped:
        frame = batch.frame()
        keys = frame.select("name", "source", "process", "rank").unique(maintain_order=True).rows()
        assert [g[:4] for g in batch.groups] == [(n, s, p, r) for n, s, p, r in keys]  # first seen, first
        for group in batch.groups:
            windows, lines, values, order, pcts = batch.arrays(group)
            assert pcts is None
            part = frame.with_row_index("at").filter(name=group[0], source=group[1], process=group[2], rank=group[3])
            assert order.tolist() == part["at"].to_list() and windows.tolist() == part["window"].to_list()
            assert lines.tolist() == part["line"].to_list() and values.tolist() == part["value"].to_list()


_DECIMAL = st.builds(lambda i, f: f"{i}.{f}" if f else str(i), st.integers(0, 10**17),
                     st.sampled_from(["", "0", "5", "25", "125", "1234567", "999999999999", "12345678901234567890"]))


@SETTINGS
@given(st.lists(st.tuples(_DECIMAL, _DECIMAL, _DECIMAL, _DECIMAL), min_size=1, max_size=30))
def test_numbers_are_read_as_python_reads_them(values):
    """Every digit count (the fast exact path and strtod), accept lengths rounded to 6 places."""
    head = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_bytes()
    body = "".join(
        f"[2026-11-29 21:06:00 TP0] Decode batch. #running-req: 1, token usage: {a}, accept len: {b}, "
        f"gen throughput (token/s): {c}, #queue-req: 0\n"
        f"[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Draft:       {a} ms/cyc  ({d}%)\n"
        f"  Target verify: {c} ms/cyc\n  Cycle total:  {b} ms/cyc\n  Accept len:   {d}\n  Throughput:   {c} tok/s\n"
        for a, b, c, d in values)
    _same(head + body.encode(), 1 << 12, 1 << 12)


def _fed_by_python(data: bytes) -> int:
    """Lines the Tagger was fed in Python (it sees every line handed back by the scanner)."""
    with mock.patch.object(processes.Tagger, "feed", autospec=True, side_effect=processes.Tagger.feed) as feed:
        parse_stream(io.BytesIO(data), engine="native")
    return feed.call_count


def test_the_scanner_reads_a_serving_log_itself():
    from bench.loggen import HEAD_SAMPLE, windows_text

    head = HEAD_SAMPLE.read_bytes()
    data = head + windows_text(3000, seed=3).encode()
    python = _fed_by_python(data)
    assert python < head.count(b"\n") + 50  # the start-up, and a few first records; 33,000 lines in C
    _same(data)


def test_a_line_the_scanner_cannot_read_exactly_goes_to_python_and_the_records_stay_equal():
    from bench.loggen import HEAD_SAMPLE, windows_text

    odd = b"[2026-11-29 21:06:12 TP0] Decode batch. #running-req: 1, gen throughput (token/s): 1e3\n"
    plain = HEAD_SAMPLE.read_bytes() + windows_text(400, seed=3).encode()
    data = plain + odd + windows_text(400, seed=4).encode()
    assert _fed_by_python(data) == _fed_by_python(plain) + 1
    _same(data, 1 << 14, 1 << 14)


def test_recorded_logs_grown_long_give_their_records():
    for name in ("spec_eagle3_tuned_2step.log", "spec_baseline_nospec.log", "nccl-tests_all_reduce_default.log"):
        lines = (PROJECT_ROOT / "samples" / name).read_bytes().split(b"\n")
        _same(b"\n".join(lines + lines[len(lines) * 4 // 10:] * 30) + b"\n", 1 << 15, 1 << 15)


def _expected_mask(line: str) -> int:
    readers = [processes.Tagger, *PARSERS.values()]
    bits = 0
    for bit, reader in enumerate(readers):
        if any(t in line for t in reader.TRIGGERS) or (reader.STARTS and reader.STARTS.match("\n" + line)):
            bits |= 1 << bit
    return bits


_ASCII_LINE = st.text(st.characters(min_codepoint=0x09, max_codepoint=0x7e, exclude_characters="\n\r"), max_size=60)


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(LINES), st.sampled_from(WINDOW_LINES)), max_size=20),
       st.lists(_ASCII_LINE, max_size=20))
def test_the_scanner_finds_the_lines_each_reader_wants_as_python_does(recorded, made):
    """Its trigger literals and STARTS are the readers' own: read on every line alike."""
    scan = native.scanner([processes.Tagger(parsers.ParseResult()), *(p(parsers.ParseResult()) for p in PARSERS.values())])
    for raw in recorded:
        line = raw.decode("utf-8", "replace")
        if line.isascii():
            assert scan.mask(line) == _expected_mask(line), line
    for line in made:
        for text_ in (line, "  " + line, "[" + line, "Successful requests:" + line):
            assert scan.mask(text_) == _expected_mask(text_), text_


_LITERAL_BITS = st.lists(st.sampled_from(sorted({t for r in [processes.Tagger, *PARSERS.values()] for t in r.TRIGGERS})
                                         + ["\n", " ", "x", "Decode", "NCC", "ms", "---\n"]), max_size=12)


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(LINES).map(lambda b: b.decode("utf-8", "replace")), _ASCII_LINE,
                          _LITERAL_BITS.map("".join)), max_size=40), st.booleans())
def test_the_scanners_text_search_finds_each_lines_literals_as_python_does(lines, vector):
    """scan_text's line search (AVX2 where the CPU has it, or the scalar one): literals anywhere on a
    line, across its end, at the text's end (where the vector search reads a padded copy)."""
    text_ = "\n".join(line for line in lines if line.isascii())
    scan = native.scanner([processes.Tagger(parsers.ParseResult()), *(p(parsers.ParseResult()) for p in PARSERS.values())])
    was = _scan.vector()
    try:
        _scan.vector(vector and was)
        assert scan.masks(text_) == [_expected_mask(line) for line in text_.split("\n")]
    finally:
        _scan.vector(was)


# MPI tags clean() takes off alone, with more to clean, past its bounds, or not tags at all
_MPI_BITS = ["[1,0]<stdout>:", "[12,345]<stderr>:", "[1,0]<stdout>:>", "[1234567,123456]<stdout>:",
             "[1,123456789012]<stdout>:", "[1,0]<stdin>:", "[1,]<stdout>:", "x[1,0]<stdout>:", "[1,0]<stdout>:[1,0]<std"]


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(LINES), _ASCII_LINE.map(str.encode)), max_size=30),
       st.lists(st.sampled_from(DAMAGE[:-2]), max_size=3), st.lists(st.sampled_from(_MPI_BITS), max_size=30))
def test_the_lines_clean_may_change_are_found_as_the_polars_search_finds_them(lines, damage, tags):
    lines = [tag.encode() + line for tag, line in zip(tags, lines, strict=False)] + lines[len(tags):]
    block = b"\n".join(lines)
    for hurt in damage:
        block = hurt(block)
    native_lines = text._decode_block(block)
    with mock.patch.object(text, "_scan", None):
        python_lines = text._decode_block(block)
    assert list(native_lines) == list(python_lines)
    assert native_lines.mpi == python_lines.mpi
    assert _scan.longest_line(block) == max(map(len, block.split(b"\n")))


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(LINES), _ASCII_LINE.map(str.encode)), max_size=30),
       st.lists(st.sampled_from(_MPI_BITS), max_size=30))
def test_a_text_chunk_cut_and_cleaned_where_python_feeds_it_gives_the_lines_python_gives(lines, tags):
    """A Text's lines as native.py cuts them (the dirty and the MPI-tagged cleaned) are _decode_block's;
    an MPI-tagged line not among the dirty loses its tag alone (what the scanner takes off)."""
    block = b"\n".join([tag.encode() + line for tag, line in zip(tags, lines, strict=False)] + lines[len(tags):])
    chunk = text._decode_block(block, texts=True)
    with mock.patch.object(text, "_scan", None):
        python_lines = text._decode_block(block)
    if not isinstance(chunk, text.Text):
        return
    dirty = set(chunk.dirty)
    got = [text.clean(line) if i in dirty or line[:1] == "[" and "]<std" in line else line
           for i, line in enumerate(chunk.text.split("\n"))]
    assert got == list(python_lines)
    assert [type(line) for line in got] == [type(line) for line in python_lines]
    for i, line in enumerate(chunk.text.split("\n")):
        if i not in dirty and "]<std" in line:
            cleaned = text.clean(line)
            assert isinstance(cleaned, text.MpiLine) and line.endswith(cleaned) and len(line) - len(cleaned) <= 24


_DIRTY_BITS = st.lists(st.sampled_from([*(d for d in text._DIRTY if d.isascii()), "\x1b[31m", "[1;2m", "[12", "\n>", ">", "\n", "a", "P", "#0",
                                        "]", "[", "^", "x" * 31, *_MPI_BITS, *("\n" + t for t in _MPI_BITS)]),
                       max_size=16)


@SETTINGS
@given(st.lists(st.one_of(_DIRTY_BITS.map("".join), _ASCII_LINE), max_size=30))
def test_the_vector_search_for_lines_to_clean_finds_what_the_scalar_one_does(parts):
    """dirty_lines and longest_line with AVX2 (where the CPU has it) and without give one answer."""
    text_ = "".join(parts)
    was = _scan.vector()
    try:
        answers = []
        for on in (True, False):
            _scan.vector(on and was)
            answers.append((_scan.dirty_lines(text_), _scan.longest_line(text_.encode())))
    finally:
        _scan.vector(was)
    assert answers[0] == answers[1]
    count, dirty, mpi = answers[0][0]
    assert count == text_.count("\n") + 1 and dirty == sorted(set(dirty)) and mpi == sorted(set(mpi))
    assert not set(dirty) & set(mpi)
    assert answers[0][1] == max(map(len, text_.split("\n")))


def test_a_stars_pattern_the_scanner_does_not_read_turns_the_native_engine_off():
    with mock.patch.object(processes.Tagger, "STARTS", re.compile(r"\n[(\[#$+<]")):
        assert "Tagger.STARTS" in (native.available() or "")
        assert parse_stream(io.BytesIO(SAMPLES[0])).formats  # the chunk engine reads it


def test_a_repeated_nccl_line_is_read_in_c_only_while_both_readers_hold_it():
    """The scanner remembers NCCL lines the Tagger and nccl_debug have both read, for those two
    collections only: handed other ones, it asks them again."""
    result = parsers.ParseResult()
    formats = [p(result) for p in PARSERS.values()]
    scan = native.scanner([processes.Tagger(result), *formats])
    by = {p.name: p for p in formats}
    line = "vm:1560:1560 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"

    def read(channel_lines: set, nccl_lines: dict) -> int:
        """How many of the one-line text's lines the scanner read itself (1, or 0: Python's)."""
        return scan.scan_text(line, 0, 0, 1, 1, by["eagle_profile"], by["sglang"], set(), nccl_lines,
                              channel_lines, 0, -1)[0]

    held = ({line}, {line: "pid 1560"})
    assert read(*held) == 1 and read(*held) == 1
    assert read(set(), {}) == 0 and read({line}, {}) == 0 and read(set(), {line: "pid 1560"}) == 0
    assert read(*held) == 1


def test_window_counters_of_more_dp_ranks_than_the_scanner_holds_at_once_stay_equal():
    from bench.loggen import HEAD_SAMPLE

    lines = [f"[2026-11-29 21:06:{w % 60:02d} DP{r} TP{r}] Decode batch. #running-req: 1, accept len: 2.{w % 10}0, "
             f"gen throughput (token/s): {100 + r}.{w % 7}, #queue-req: 0"
             for w in range(40) for r in range(24)]
    _same(HEAD_SAMPLE.read_bytes() + "\n".join(lines).encode() + b"\n", 1 << 14, 1 << 14)


def test_decode_lines_whose_keys_change_from_line_to_line_give_the_records_lines_give():
    """The scanner splits a decode line by the last one's keys when they are the same: keys that
    change, pieces without a ':', capitals, a ':' or ', ' in a value, a repeated key, a trailing
    ', ' are split as sglang.split_fields splits them."""
    from bench.loggen import HEAD_SAMPLE

    prefix = "[2026-11-29 21:06:12 TP0] Decode batch. "
    bodies = [
        "#running-req: 1, #token: 7, accept len: 2.10, gen throughput (token/s): 90.5, #queue-req: 0",
        "#running-req: 2, #token: 8, accept len: 2.20, gen throughput (token/s): 91.5, #queue-req: 0",
        "#running-req: 2, #token: 8, accept len: 2.20, gen throughput (token/s): 91.5, #queue-req: 0, ",
        "#running-req: 2, #Token: 9, accept len: 2.30, gen throughput (token/s): 92.5, #queue-req: 0",
        "#running-req: 2, #token: 9, accept len: 2.30, cuda graph: True, gen throughput (token/s): 93.5",
        "#running-req: 3, #token: 9, accept len: 2.30, cuda graph: True, gen throughput (token/s): 93.5, note",
        "#running-req: 3, #token: 9:1, accept len: 2.40, cuda graph: False, gen throughput (token/s): 94.5",
        "#running-req: 3, #token: 9, 1, accept len: 2.40, cuda graph: False, gen throughput (token/s): 95.5",
        "#running-req: 4, #token: 9, accept len: 2.50, #token: 3, gen throughput (token/s): 96.5",
        "#running-req:4,#token: 9, accept len : 2.60,  gen throughput (token/s): 97.5",
        "#running-req: 4, #token: 9, accept len: 2.60, gen throughput (token/s): 97.5",
    ]
    lines = [prefix + bodies[i % len(bodies)] for i in range(3 * len(bodies))]
    lines += [prefix + bodies[0]] * 5 + [prefix + b for b in bodies[::-1]]
    _same(HEAD_SAMPLE.read_bytes() + "\n".join(lines).encode() + b"\n", 1 << 12, 1 << 12)


def test_decode_lines_behind_any_prefix_give_the_records_lines_give_and_are_read_in_c():
    """Real decode lines of other shapes than `[date TPn]`: newer SGLang's `date LEVEL pid
    [file:line]` prefix with a trailing ', ' (fastrl PR 4), a bare `Decode batch.` (issue 938), and
    prefixes whose text could name a rank (`DPn TPn`, a `[date ...]` after other text), which
    sglang._rank reads and so go to Python. Each shape is read by the scanner from its second line."""
    corpus = PROJECT_ROOT / "tests" / "corpus"
    real = [line for name in ("shared/sglang_decode_altlogfmt_fastrl_pr4.log", "serving/sglang_decode_2024_a100_issue938.log")
            for line in (corpus / name).read_text().splitlines() if "Decode batch" in line or "Prefill batch" in line]
    assert len(real) >= 4
    body = "#running-req: 48, #token: 3894, token usage: 0.00, gen throughput (token/s): 5452.63, #queue-req: 0, "
    made = [f"scheduler: Decode batch. {body}", f"x DP3 TP3 Decode batch. {body}",
            f"x [2026-11-29 21:06:21 DP1 TP1] Decode batch. {body}", f"  Decode batch. {body}",
            "[EAGLE3_PROFILE] window=100 cycles, steps=2", "  Draft: 1.0 ms/cyc (10%)", "  Accept len: 2.0",
            f"info 151 [s.py:1] Decode batch [3], {body}", "z Prefill batch. #new-seq: 1, #new-token: 158, token usage: 0.08"]
    for seed in range(40):
        rng = random.Random(seed)
        lines = [rng.choice(real + made) for _ in range(rng.randint(1, 80))]
        _same("\n".join(lines).encode(), 1 << 10, 1 << 10)
    stopped: list[str] = []
    feed = native._Parse.feed_stopped
    with mock.patch.object(native._Parse, "feed_stopped",
                           lambda self, line, *a: (stopped.append(line), feed(self, line, *a))):
        parse_stream(io.BytesIO("\n".join(["scheduler: " + body.join(("Decode batch. ", ""))] * 50).encode()))
    assert len(stopped) == 1, stopped[:3]


def test_every_line_to_clean_in_a_text_chunk_is_cleaned_before_it_is_read():
    """A chunk kept as text with a few coloured lines (under 1%): each is cut out and cleaned. The
    one after a coloured line Python fed was once read raw by the scanner, which no reader wants
    (an ESC first): an nccl-tests header was lost, and the next table's values numbered as its."""
    from bench.loggen import HEAD_SAMPLE, windows_text

    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    row = "     8388608       2097152     float     sum      -1    49.43  169.70  169.70       0    48.84  171.74  171.74       0"
    lines = windows_text(80, seed=9).splitlines()
    lines[100] = f"\x1b[1;36m{lines[100]}\x1b[0m"
    lines[101:101] = [f"\x1b[1;36m{header}\x1b[0m", row, header, row, "# Out of bounds values : 0 OK"]
    data = HEAD_SAMPLE.read_bytes() + "\n".join(lines).encode() + b"\n"
    chunk = text._decode_block(data.rstrip(b"\n"), texts=True)
    assert isinstance(chunk, text.Text) and len(chunk.dirty) == 2
    _same(data)



def test_a_chunk_with_some_non_ascii_or_coloured_lines_is_read_as_text_and_gives_the_records_lines_give():
    """Real logs with a progress bar's blocks (vllm bench serve), a U+FFFD of a broken byte and coloured
    vLLM worker lines, 2% of a chunk's lines: once the whole chunk went line by line (a chunk
    with over 1% to clean, or one non-ASCII character); now it is read as text, each such line
    cleaned and read alone, the scanner taking the coloured ones it can read."""
    corpus = PROJECT_ROOT / "tests" / "corpus"
    bench = (corpus / "serving" / "vllm_bench_serve_two_runs_commented_vllm_fork.sh").read_bytes()
    coloured = (corpus / "shared" / "vllm_ansi_escape_variants.log").read_bytes()
    assert b"\xe2\x96\x88" in bench  # the progress bar's blocks
    decode = "".join(DECODE.format(i % 60) for i in range(400)).encode()
    data = (bench + coloured + decode + b"broken \xff byte in SpecDecoding metrics\n") * 12
    chunk = text._decode_block(data.rstrip(b"\n"), texts=True)
    assert isinstance(chunk, text.Text)
    assert 0.01 < len(chunk.dirty) / len(chunk) < text.TEXT_DIRTY_SHARE
    assert chunk.text.isascii() and chunk.raw == data.rstrip(b"\n").decode("utf-8", "replace")
    lines = chunk.raw.split("\n")
    assert [lines[i] for i in chunk.dirty] == [line for line in lines if not line.isascii() or text.clean(line) != line]
    _same(data)
    _same(data, 1 << 12, 1 << 10)


def test_a_coloured_line_the_scanner_reads_is_not_fed_to_python():
    """Each cleaned line of a text chunk goes to the scanner first: SGLang decode lines coloured
    every 25th are read in C, not handed to the readers one by one."""
    lines = [DECODE.format(i % 60).rstrip("\n") for i in range(3000)]
    for i in range(0, len(lines), 25):
        lines[i] = f"\x1b[32m{lines[i]}\x1b[0m"
    data = ("\n".join(lines) + "\n").encode()
    assert isinstance(text._decode_block(data.rstrip(b"\n"), texts=True), text.Text)
    assert _fed_by_python(data) <= 3
    _same(data)

# ---- no speed cliffs on odd input: the records stay equal, and Python is not fed a line each ----

DECODE = ("[2026-11-29 21:06:{:02d} TP0] Decode batch. #running-req: 1, #token: 224, token usage: 0.00, "
          "accept len: 2.24, cuda graph: False, gen throughput (token/s): 466.32, #queue-req: 0\n")


def test_blank_lines_after_tagged_ones_are_read_in_c():
    # No line is tagged "main": the Tagger stays busy() (it would make "main" of the next plain
    # line), and every line went through Python (10M blank lines: 57 s).
    data = (DECODE.format(1) + "\n" * 20000 + "  \t\n" * 5000).encode()
    assert _fed_by_python(data) <= 2
    _same(data, 1 << 12, 1 << 12)
    _same(data + b"now a plain line makes main\n" + b"\n" * 100, 1 << 12, 1 << 12)


def test_blank_lines_between_every_line_of_blocks_give_the_records_lines_give():
    # A blank line outside any block is skipped by the scanner without a read; inside an EAGLE profile
    # block or a bench result block it is read (it may end the block).
    from bench.loggen import windows_text

    bench = (PROJECT_ROOT / "tests" / "corpus" / "serving" / "sglang_bench_serving_dsv3_v0.4.1_pr2643.txt").read_text()
    for body in (windows_text(60, seed=5), bench * 3):
        lines = body.splitlines()
        _same(("\n\n".join(lines) + "\n").encode(), 1 << 12, 1 << 12)
        _same(("\n".join(line + "\n" * (i % 3) for i, line in enumerate(lines)) + "\n").encode(), 1 << 12, 1 << 12)


def test_decode_lines_all_tagged_by_their_rank_are_read_in_c():
    # Every line `[date TPn]`: no "main" process ever; 200k such lines took 13.9 s (5.4 s without C).
    data = "".join(DECODE.format(i % 60) for i in range(5000)).encode()
    assert _fed_by_python(data) <= 3  # the first record of a format is set in Python
    _same(data, 1 << 14, 1 << 14)



def test_decode_lines_of_no_prefix_are_read_in_c():
    """SGLang's decode lines of 2024 have no prefix: `Decode batch. ...` starts with a capital and holds
    `throughput`, which launch_env's STARTS takes (for the unread count), so every one went to Python
    (a whole log at Python's pace). launch_env does nothing with such a line: the scanner reads it
    where it makes records (one cut before its throughput stays Python's, as do assignments)."""
    bare = (PROJECT_ROOT / "tests" / "corpus" / "serving" / "sglang_decode_2024_a100_issue938.log").read_text()
    assert bare.startswith("Decode batch. ") and "throughput" in bare
    data = (bare.rstrip("\n") + "\n").encode() * 3000
    assert _fed_by_python(data) <= 2
    _same(data, 1 << 14, 1 << 12)
    cut = b"Decode batch. #running-req: 3, #token: 9, token usage: 0.01, accept len: 2.5\n"  # no throughput
    assignment = b"MODE=Decode batch. gen throughput (token/s): 9.0\n"  # an assignment launch_env reads
    line = (bare.rstrip("\n") + "\n").encode()
    mixed = line * 40 + cut + line * 20 + assignment + line * 30 + cut
    _same(mixed, 1 << 12, 1 << 10)
    assert parse_stream(io.BytesIO(mixed), engine="native").settings["env.MODE"].value == "Decode"

def test_records_of_lines_python_reads_join_the_scanners_columns_in_order():
    # A vLLM log: every metric line is read in Python, between lines the scanner reads. They join
    # the scanner's own columns (add_records): no frame a line (14 MB: 63 s and 406 MB before).
    vllm = ("INFO 09-09 11:51:35 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 88.8%, "
            "Mean acceptance length: 5.44, Accepted: 262 tokens, Drafted: 295 tokens\n"
            "INFO 09-09 11:51:35 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: 43.1 tokens/s, Running: 1 reqs\n")
    data = (vllm * 300 + DECODE.format(3) * 50 + "[EAGLE3_PROFILE] window=100 cycles, steps=2\n"
            "  Draft: 0.56 ms/cyc  ( 11.8%)\n" + vllm * 50).encode()
    for grouped in (False, True):
        _same(data, 1 << 12, 1 << 12, spill_at=1000, grouped=grouped)
    result = parse_stream(io.BytesIO(vllm.encode() * 2000), engine="native", sink=lambda r: None)
    assert len(result.metric_frames) <= 2  # the scanner's columns, taken at the end


def test_add_records_takes_every_field_or_none():
    scan = native.scanner([processes.Tagger(records.ParseResult())])
    good = records.Metric("m", 1.5, 1, 2, "src", "DP1", "pid 3")
    bad = records.Metric("m", "x", 1, 2, "src")  # type: ignore[arg-type]
    try:
        scan.add_records([], [good, bad])
    except TypeError:
        pass
    else:
        raise AssertionError("a value that is not a number was taken")
    assert scan.pending == 0
    scan.add_records([records.Phase("Draft", 0.5, None, 1, 7, "eagle_profile", "TP0")], [good])
    phases, metrics = scan.take()
    assert pl.Series(phases).struct.unnest().row(0) == ("Draft", 0.5, None, 1, 7, "eagle_profile", "TP0")
    assert pl.Series(metrics).struct.unnest().row(0) == ("m", 1.5, 1, 2, "src", "DP1", "pid 3")


def test_many_distinct_names_are_found_in_a_table_that_grows():
    # 160k distinct phase names took 26 s (a linear search past 3,072 strings); linear time now.
    scan = native.scanner([processes.Tagger(records.ParseResult())])
    names = [records.Phase(f"phase {i}", 1.0, None, 1, i, "eagle_profile", "main") for i in range(60000)]
    start = time.process_time()
    scan.add_records(names, [])
    scan.add_records(names[:1000], [])
    took = time.process_time() - start
    phases, _ = scan.take()
    got = pl.Series(phases).struct.unnest()
    assert got.height == 61000 and got["name"][59999] == "phase 59999" and got["name"][60000] == "phase 0"
    assert took < 5  # quadratic, it was minutes


# ---- numbers a log may hold in any length: bounded, with a warning, the same in every engine ----

BIG = "9" * 5000  # past Python's 4,300-digit limit of int(): the parse ended in every engine


def _hostile_logs() -> dict[str, bytes]:
    eagle = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_text()
    tests = (PROJECT_ROOT / "samples" / "nccl-tests_all_reduce_default.log").read_text()
    row = "           8             2     float     sum      -1    15.78    0.00    0.00       0    13.87    0.00    0.00       0"
    return {
        "steps first": f"[EAGLE3_PROFILE] window=100 cycles, steps={BIG}\n  Draft:  0.56 ms/cyc  ( 11.8%)\n" + eagle,
        "steps again": eagle + f"[EAGLE3_PROFILE] window=100 cycles, steps={BIG}\n  Draft:  0.56 ms/cyc  ( 11.8%)\n",
        "pid": eagle.replace("vm:1560:1560 [0] NCCL INFO NCCL version", f"vm:{BIG}:1560 [0] NCCL INFO NCCL version", 1),
        "dump pid": eagle.replace("[TP1] pid=1561 environ", f"[TP1] pid={BIG} environ"),
        "nranks": eagle + f"vm:1560:1560 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks {BIG} cudaDev 0\n",
        "size": tests.replace(row, row.replace("           8 ", f" {BIG} ", 1) + "\n" + row),
        "count": tests.replace(row, row.replace("     2     float", f" {BIG}     float", 1)),
        "tests pid": tests.replace("Pid   1377 on", f"Pid   {BIG} on", 1),
        "mpi tag": f"[1,{BIG}]<stdout>:vm:1560:1560 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n" + eagle,
    }


def test_an_integer_of_any_length_is_left_out_with_a_warning_and_the_engines_agree():
    for name, log in _hostile_logs().items():
        data = log.encode()
        _same(data, 1 << 12, 1 << 12)
        result = parse_stream(io.BytesIO(data), engine="native")
        assert result.formats, name
        if name not in ("mpi tag", "steps again"):  # a tag MPI never prints; steps= is read once
            assert any("digits" in w.message for w in result.warnings), name


def test_a_repeated_steps_is_read_alike_by_every_engine():
    eagle = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_text()
    data = (eagle + "[EAGLE3_PROFILE] window=100 cycles, steps=7\n  Draft:  0.56 ms/cyc  ( 11.8%)\n").encode()
    _same(data)
    assert parse_stream(io.BytesIO(data), engine="native").settings["spec.steps"].value == 2


# ---- the C API reads untrusted arguments: each checked, never trusted ----

def test_a_scanner_made_without_init_refuses_every_call():
    bare = _scan.Scanner.__new__(_scan.Scanner)
    for call in (bare.take, bare.take_groups, lambda: bare.mask("x"), lambda: bare.masks("x"),
                 lambda: bare.add_records([], [])):
        with pytest.raises(RuntimeError, match="not initialised"):
            call()


def test_scan_arguments_outside_the_chunk_are_refused():
    scan, readers = native.standalone(PARSERS)
    state = (*readers, native.F_MAIN)
    with pytest.raises(IndexError):
        scan.scan(["a", "b"], -1, 1, *state)
    with pytest.raises(IndexError):
        scan.scan(["a", "b"], 3, 1, *state)
    text_ = "plain line\nanother\n"
    with pytest.raises(ValueError, match="more than the text's lines"):
        scan.scan_text(text_, 0, 0, 50, 1, *state, -1)  # the text has 3 lines, not 50
    for index, count, stop_at in ((-1, 3, -1), (2, 1, -1), (0, 3, -5)):
        with pytest.raises(IndexError):
            scan.scan_text(text_, 0, index, count, 1, *state, stop_at)
    assert scan.scan_text(text_, 0, 0, 3, 1, *state, -1) == (3, len(text_), len(text_), 0)
    # A text's dirty lines: a place in the list, a callable clean, its decoded wide lines strs.
    for d, clean in ((2, text.clean), (-1, text.clean), (0, None)):
        with pytest.raises(ValueError, match="d is one of dirty's places"):
            scan.scan_text(text_, 0, 0, 3, 1, *state, 1, {}, [1], d, clean)
    with pytest.raises(TypeError):
        scan.scan_text(text_, 0, 0, 3, 1, *state, 1, "not a dict", [1], 0, text.clean)
    with pytest.raises(TypeError, match="a wide line is a str"):
        scan.scan_text(text_, 0, 0, 3, 1, *state, 1, {1: b"another"}, [1], 0, text.clean)
    cleaned: list[str] = []
    assert scan.scan_text(text_, 0, 0, 3, 1, *state, 1, {}, [1], 0,
                          lambda line: cleaned.append(line) or line) == (3, len(text_), len(text_), 0)
    assert cleaned == []  # the dirty line, cut out, cleaned as clean() cleans it (_scan_clean.h) and read
    quoted = "plain line\n> another\n"  # one the scanner leaves to clean(): a markdown quote
    assert scan.scan_text(quoted, 0, 0, 3, 1, *state, 1, {}, [1], 0,
                          lambda line: cleaned.append(line) or line) == (3, len(quoted), len(quoted), 0)
    assert cleaned == ["> another"]
    # A non-ASCII dirty line is cleaned from its decoded text, not the image's, and left to Python
    imaged = "plain line\n> ?nother\n"
    assert scan.scan_text(imaged, 0, 0, 3, 1, *state, 1, {1: "> ánother"}, [1], 0,
                          lambda line: cleaned.append(line) or line) == (1, 11, 20, 0xffffffff)
    assert cleaned == ["> another", "> ánother"]


def test_only_readers_whose_busy_is_return_false_are_left_unasked():
    class Idle:
        def busy(self) -> bool:
            return False  # a comment changes no code

    class Flagged:
        def busy(self) -> bool:
            return self.in_block  # type: ignore[attr-defined]

    class Documented:
        def busy(self) -> bool:
            """Never busy, said in a docstring: asked all the same (a constant more)."""
            return False

    class Other:
        def busy(self) -> bool:
            return True

    assert native._never_busy(Idle())
    assert not any(native._never_busy(r) for r in (Flagged(), Documented(), Other()))
    result = records.ParseResult()
    never = [r for r in (p(result) for p in PARSERS.values()) if native._never_busy(r)]
    assert "launch_env" in {r.name for r in never} and not any(r.busy() for r in never)


@pytest.mark.parametrize("vector", [True, False], ids=["vector", "plain"])
def test_the_scanners_find_finds_what_str_find_does_at_every_place(vector):
    """find(), every reader's substring search (32 places a step with AVX2 on a line long enough, the
    plain loop for the rest): each literal at every place of lines up to 100 bytes, near misses of its
    first or last byte around it, and real lines' own words."""
    was = _scan.vector()
    try:
        _scan.vector(vector and was)
        for literal in ("ab", "NCCL ", "busbw", "Collective test", "x" * 40):
            for size in (0, 1, 31, 32, 33, 40, 63, 64, 65, 100):
                for at in range(size + 1):
                    half = len(literal) // 2
                    for form in (literal, literal[:-1] + "#", "#" + literal[1:], literal[:-1],
                                 literal[:half] + "#" + literal[half + 1:]):
                        line = ("." * at + form + literal[0] * size)[:max(size, at + len(form))]
                        assert _scan.find(line, literal) == line.find(literal), (line, literal)
        lines = [line.decode() for line in LINES if line.isascii()]
        assert len(lines) > 1000
        for line in lines:
            for word in {w for w in line.split()[:6] if w.isascii()}:
                assert _scan.find(line, word) == line.find(word)
        with pytest.raises(ValueError):
            _scan.find("x", "")
    finally:
        _scan.vector(was)


def _real_files() -> list[bytes]:
    """Every file of the repository's samples and corpus (the shared public samples verbatim)."""
    roots = [PROJECT_ROOT / "samples", PROJECT_ROOT / "tests" / "corpus"]
    return [p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()]


def test_every_real_line_has_the_literals_python_finds_with_and_without_the_vector_search():
    """line_avx2's buckets (their literals cut by prefix, _scan.c's fingerprint) only filter: every
    line of every real file, its ASCII image, holds the readers' literals and STARTS str finds."""
    lines = [line.decode("utf-8", "replace") for data in _real_files() for line in data.split(b"\n")]
    text_ = "\n".join(line if line.isascii() else line.encode("ascii", "replace").decode() for line in lines)
    expected = [_expected_mask(line) for line in text_.split("\n")]
    assert len(expected) > 30_000
    scan = native.scanner([processes.Tagger(parsers.ParseResult()), *(p(parsers.ParseResult()) for p in PARSERS.values())])
    was = _scan.vector()
    try:
        for vector in (True, False):
            _scan.vector(vector and was)
            assert scan.masks(text_) == expected, vector
    finally:
        _scan.vector(was)
