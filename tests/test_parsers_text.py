"""ingest/parsers/text.py: reading log bytes as numbered lines, whatever their length."""

from __future__ import annotations

import io
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from ingest.parsers import parse_stream, text
from ingest.parsers.text import MAX_LINE_BYTES, read_lines
from tests.samples import PROJECT_ROOT, log_path

LINES = [b"line %d\n" % i for i in range(12)]


def _read(data: bytes) -> tuple[list[tuple[int, str]], list[str]]:
    warnings: list = []
    return list(read_lines(io.BytesIO(data), warnings)), [w.message for w in warnings]


def test_lines_after_an_over_long_line_are_kept_when_the_rest_fits_in_one_read():
    data = b"".join(LINES[:3]) + b"x" * (2 * MAX_LINE_BYTES) + b"\n" + b"".join(LINES[3:])
    lines, warnings = _read(data)
    assert [text for _, text in lines[4:]] == [f"line {i}" for i in range(3, 12)]
    assert lines[3] == (4, "x" * MAX_LINE_BYTES)
    assert warnings == [f"line longer than {MAX_LINE_BYTES} bytes was cut"]


def test_an_over_long_line_that_ends_within_the_buffer_is_cut_too():
    data = b"y" * (MAX_LINE_BYTES + 10) + b"\n" + b"".join(LINES)
    lines, warnings = _read(data)
    assert len(lines[0][1]) == MAX_LINE_BYTES and len(lines) == 13
    assert lines[-1] == (13, "line 11") and len(warnings) == 1


def test_a_50_mb_line_does_not_fail_the_log():
    rows = log_path("spec_eagle3_tuned_2step.log").read_bytes().split(b"\n")
    whole = parse_stream(io.BytesIO(b"\n".join(rows)))
    with_monster = parse_stream(io.BytesIO(b"\n".join([*rows[:20], b"INFO " + b"a" * (50 << 20), *rows[20:]])))
    assert len(with_monster.phases) == len(whole.phases) > 0
    assert [p.ms for p in with_monster.phases] == [p.ms for p in whole.phases]
    assert [w.message for w in with_monster.warnings] == [f"line longer than {MAX_LINE_BYTES} bytes was cut"]


def test_a_file_cut_mid_line_still_warns_and_skips_only_that_line():
    lines, warnings = _read(b"".join(LINES) + b"half a li")
    assert len(lines) == 12 and warnings == ["the file ends mid-line (truncated?); that last line was skipped"]


def test_a_chunk_with_a_few_non_ascii_lines_is_kept_as_text_with_those_lines_to_clean():
    # A progress bar's blocks, a U+FFFD of a broken byte: the scanner reads the ASCII image (each
    # other character a "?", every line where it was), the lines holding them are cut from the text.
    lines = [f"INFO 09-01 10:00:{i % 60:02d} plain line {i}" for i in range(200)]
    lines[7] = " 40%|████      | 4/10 [00:01<00:02]"
    lines[150] = "broken \ufffd byte and \x1b[32mcolour\x1b[0m"
    lines[151] = "\x1b[32mcoloured only\x1b[0m"
    chunk = text._decode_block("\n".join(lines).encode())
    assert isinstance(chunk, list)  # without texts=True: lines, as ever
    chunk = text._decode_block("\n".join(lines).encode(), texts=True)
    assert isinstance(chunk, text.Text) and len(chunk) == 200
    assert chunk.dirty == [7, 150, 151] and chunk.raw == "\n".join(lines)
    assert chunk.text.isascii() and chunk.text.split("\n")[7] == " 40%|????      | 4/10 [00:01<00:02]"
    assert [len(a) for a in chunk.text.split("\n")] == [len(a) for a in lines]


def test_a_chunk_with_many_non_ascii_lines_is_cut_into_lines():
    lines = [f"line {i} ✓" if i % 10 == 0 else f"line {i}" for i in range(200)]  # 10%: over TEXT_DIRTY_SHARE
    chunk = text._decode_block("\n".join(lines).encode(), texts=True)
    assert not isinstance(chunk, text.Text) and chunk == lines


def _image_by_python(data: bytes, share: float = 1.0) -> tuple[str, int, dict[int, str]] | None:
    """What _scan.utf8_image stands in for: the decoded text, str.encode's "?" a character, and its lines
    holding one, decoded; None where those are more than `share` of the lines."""
    decoded = str(data, "utf-8", errors="replace")
    lines = decoded.split("\n")
    wide = {i: line for i, line in enumerate(lines) if not line.isascii()}
    if len(wide) > share * len(lines):
        return None
    return decoded.encode("ascii", errors="replace").decode("ascii"), len(lines), wide


def _both_images(data: bytes, share: float = 1.0) -> list:
    """utf8_image with AVX2 (where the CPU has it) and without."""
    from ingest.parsers import _scan

    was = _scan.vector()
    try:
        answers = []
        for on in (True, False):
            _scan.vector(on and was)
            answers.append(_scan.utf8_image(data, share))
    finally:
        _scan.vector(was)
    return answers


def test_the_utf8_image_is_the_decoded_texts_image_and_its_non_ascii_lines_decoded():
    """Real non-ASCII lines (a progress bar's blocks, a `×` of a README), with an emoji (4 bytes), broken
    bytes (U+FFFD a maximal invalid part, as CPython's decoder replaces them), CJK, CRLF ends, sequences cut
    by a newline or the end, NULs, and such characters first, last and alone on a line, among ASCII lines:
    what the line engine decodes, with and without AVX2, from bytes and from a memoryview."""
    corpus = PROJECT_ROOT / "tests" / "corpus" / "serving" / "vllm_bench_serve_two_runs_commented_vllm_fork.sh"
    real = [line for line in corpus.read_bytes().split(b"\n") if not line.isascii()]
    real += [line for line in (PROJECT_ROOT / "samples" / "README.md").read_bytes().split(b"\n") if not line.isascii()]
    assert any("█".encode() in line for line in real) and any("×".encode() in line for line in real)
    odd = ["é".encode(), "x\U0001f600".encode(), "日本語のログ\r".encode(), b"", b"\x7f\x80", b"tail \xc3\xa9\r",
           b"broken \xff\xfe byte", b"cut \xe2\x96", b"\xe2\x96\n\x88", b"\xf0\x9f\x98", b"\xed\xa0\x80 surrogate",
           b"\xe0\x80\xaf overlong", b"\xc0\xaf", b"\xf4\x90\x80\x80 past", b"\xf5", b"\x00\xc3\x00\xa9", b"\x1b[32m\xe2\x9c\x93\x1b[0m"]
    plain = [b"INFO 09-01 10:00:00 plain line", b"", b"\r", b"x" * 70]
    for extra in ([], odd[:1], odd[1:2], odd[2:3]):
        lines = plain + real + plain + extra + plain
        for data in (b"\n".join(lines), b"\n".join(lines) + b"\n", b"\n" + b"\n".join(lines)):
            assert _both_images(data) == [_image_by_python(data)] * 2
            assert _both_images(memoryview(data)) == [_image_by_python(data)] * 2
    for line in odd:
        for data in (line, line + b"\n", b"\n" + line, b"\n".join([line] * 3), b"x" * 31 + line, b"x" * 33 + line):
            assert _both_images(data) == [_image_by_python(data)] * 2
    assert _both_images(b"") == [("", 1, {})] * 2 and _both_images(b"ascii\nonly") == [("ascii\nonly", 2, {})] * 2


# Pieces of UTF-8, whole, cut and broken (lone continuation bytes, overlong forms, surrogates, past U+10FFFF),
# with runs of ASCII past the vector path's 32 bytes a step and other bytes at any place in a step.
_PIECES = st.sampled_from([b"a", b"\n", b"\r", b"\x00", "é".encode(), b"\xc3", b"\xa9", b"\xff", "█".encode(), b"\xe2\x96",
                           "日".encode(), "\U0001f600".encode(), b"\xf0\x9f", b"\xf0\x9f\x98", b"\x80", b"\xbf", b"\xc0\xaf",
                           b"\xe0\x80", b"\xe0\xa0", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90",
                           b"\xf5\x80", b"x" * 31, b"INFO plain " * 3])


@given(st.lists(_PIECES, max_size=60), st.sampled_from([0.0, 0.05, 0.2, 1.0]))
def test_the_vector_utf8_image_is_the_byte_at_a_time_one_and_the_decoders(pieces, share):
    """utf8_image with AVX2 and without: one answer, what str(..., "utf-8", errors="replace") decodes, None
    where more than `share` of the lines are not ASCII."""
    data = b"".join(pieces)
    assert _both_images(data, share) == [_image_by_python(data, share)] * 2


def _chunk_lines(chunk: text.Text | text.Lines) -> list[str]:
    """A chunk's lines as the native engine cuts a Text's (native._Parse.text): a dirty line cleaned from its
    decoded text where it is not ASCII, from the image where it is; an MPI-tagged one cleaned; the rest as
    they are in the image."""
    if not isinstance(chunk, text.Text):
        return list(chunk)
    dirty = set(chunk.dirty)
    out = []
    for i, line in enumerate(chunk.text.split("\n")):
        if i in dirty:
            line = text.clean(chunk.wide[i] if i in chunk.wide else line)
        elif line[:1] == "[" and "]<std" in line:
            line = text.clean(line)
        out.append(line)
    assert len(out) == len(chunk)
    return out


# Lines of UTF-8 damaged as copies of logs are (broken and cut sequences, CRLF, tqdm's \r, NULs, colours, MPI
# tags), a few of them among many ASCII ones, so that chunks are kept as Text, after a head of plain lines (a
# NUL in the first 8 KiB makes a binary file).
_WIDE_BITS = [b"\xe2\x96\x88", b"\xe2\x96", b"\xff", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xf0\x9f", b"\xed\xa0\x80",
              b"\xc0\xaf", b"\x80", b"\r", b"\x00", b"\x1b[32m", b"[1;36m", b"[1,0]<stdout>:", b"> ", b"^M", b"|", b"text "]
_PLAIN = [b"INFO 09-01 10:00:00 plain line", b"", b"x" * 70, b"(VllmWorker pid=1) INFO ready"]
_HEAD = [b"INFO plain head line %d" % i + b"." * 60 for i in range(110)]


@st.composite
def _damaged_lines(draw) -> list[bytes]:
    lines = draw(st.lists(st.sampled_from(_PLAIN), max_size=300))
    for _ in range(draw(st.integers(0, 12))) if lines else ():
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(st.lists(st.sampled_from([*_WIDE_BITS, *_PLAIN]), min_size=1, max_size=8).map(b"".join))
    return _HEAD + lines


@given(_damaged_lines(), st.integers(1, 3000), st.integers(30, 200), st.sampled_from([b"\n", b"", b"\r\n"]))
def test_read_chunks_texts_give_the_line_engines_lines_on_broken_utf8(lines, batch, max_line, end):
    """read_chunks(texts=True), each Text cut as the native engine cuts it, gives read_lines' lines (the
    line engine: each line decoded alone, errors="replace"), and the same warnings: invalid UTF-8, \r,
    NULs, colours, MPI tags and lines over MAX_LINE_BYTES, at any read size."""
    data = b"\n".join(lines) + end
    with mock.patch.object(text, "MAX_LINE_BYTES", max_line), mock.patch.object(text, "CHUNK", batch):
        want = _read(data)
        with mock.patch.object(text, "BATCH", batch), mock.patch.object(text, "FIRST_BATCH", batch):
            warnings: list = []
            got, texts = [], 0
            for first, chunk in text.read_chunks(io.BytesIO(data), warnings, texts=True):
                assert first == len(got) + 1
                texts += isinstance(chunk, text.Text)
                if isinstance(chunk, text.Text):
                    assert chunk.raw == "\n".join(chunk.wide.get(i, line) for i, line in enumerate(chunk.text.split("\n")))
                got.extend(_chunk_lines(chunk))
    assert (list(enumerate(got, 1)), [w.message for w in warnings]) == want


def test_a_text_is_kept_while_its_lines_to_clean_and_non_ascii_lines_together_are_within_the_share():
    lines = [f"INFO 09-01 10:00:{i % 60:02d} plain line {i}" for i in range(100)]  # 5% of 100: 5 lines
    for i in (3, 40, 41, 77, 99):
        lines[i] += " ✓"

    def chunk(lines: list[str]) -> text.Text | text.Lines:
        return text._decode_block("\n".join(lines).encode(), texts=True)

    assert chunk(lines).dirty == [3, 40, 41, 77, 99]
    coloured = list(lines)
    coloured[3] = "\x1b[32m" + coloured[3]  # a coloured line already non-ASCII: still 5
    assert chunk(coloured).dirty == [3, 40, 41, 77, 99]
    coloured[4] = "\x1b[32m" + coloured[4]  # a sixth line: over the share
    assert not isinstance(chunk(coloured), text.Text)
    assert not isinstance(chunk([*lines[:99], lines[99] + " ✓", "é"]), text.Text)


# Pieces of the dirty lines clean() meets, whole and broken: escapes of every spelling, colour codes without
# their escape (and followed by `]`), tqdm's rewrites, DJL's relay prefix, MPI tags, markdown quotes, Ray's
# suffix, and near misses of each.
_DIRTY_PIECES = [
    "\x1b[1;36m", "^[[0;0m", "#033[1;36m", "\x1b[?25l", "^[[K", "#033[0m", "\x1b[", "^[[", "#033[", "^[", "#03",
    "[1m", "[1;36m", "[0;0m]", "[33m]", "[1;m", "[;1m", "[12", ";3", "[", "]", "1", ";", "?", "m", "K", "x", " ",
    "^M", "^^M", "^", "M", "\r", "\r\r", ">", ">:", "-", "_", ",", "[1,0]<stdout>:", "[12,3]<stderr>:", "[7]",
    "INFO ] PyProcess - W-210-model-stdout: ", "[WARN  ] PyProcess - W-a-b-stderr: ", "[INFO ] PyProcess - W-",
    "PyProcess", "-stdout: ", "-stdout:", "-stderr: x", "W-", "W-a_b-9", "] PyProcess - W-", "INFO", "[INFO",
    "across cluster]", " [repeated 3x across cluster]", "cluster]",
    "(VllmWorkerProcess pid=176029)", "[multiproc_worker_utils.py:238]", "INFO 04-17 15:30:42 ",
    "# 100%|\u2588\u2588\u2588\u2588| 32/32 [02:30<00:00, 4.71s/it]", "\u2588", "caf\u00e9", "\ufffd[1m", "\ufffd",
]


def _dirty_lines_of(paths) -> list[str]:
    out = []
    for path in paths:
        for raw in path.read_bytes().decode("utf-8", "replace").split("\n"):
            if any(d in raw for d in text._DIRTY) or raw.startswith((">", "[")) or text._COLOUR.search(raw):
                out.append(raw)
    return out


def test_the_scanners_clean_is_clean_on_real_dirty_lines_and_generated_ones():
    """_scan.clean_line (_scan_clean.h), which cleans the dirty lines of a chunk the scanner reads, gives
    what text.clean gives, or None where it leaves the line to it: on the real escape variants, MPI-tagged
    and quoted logs, and on lines made of dirty pieces (every one of which clean() is tried on)."""
    import random

    from ingest.parsers import _scan

    corpus = PROJECT_ROOT / "tests" / "corpus"
    real = _dirty_lines_of(sorted(p for p in corpus.rglob("*") if p.suffix in (".log", ".txt", ".out")))
    rng = random.Random(24)
    made = ["".join(rng.choice(_DIRTY_PIECES) for _ in range(rng.randint(0, 7))) for _ in range(60000)]
    taken = 0
    for raw in real + made:
        got = _scan.clean_line(raw)
        if got is not None:
            want = text.clean(raw)
            assert got == want and type(want) is str, raw
            taken += 1
    # the escape variants' lines are all taken (vLLM's colours with and without their escape, ^M, DJL's relay)
    variants = (corpus / "shared" / "vllm_ansi_escape_variants.log").read_text().split("\n")
    assert all(_scan.clean_line(line) == text.clean(line) for line in variants if line)
    assert taken > len(made) // 2
    # declined: an MPI tag, a quote, Ray's suffix, a line that is not ASCII
    for line in ("[1,0]<stdout>:NCCL INFO", "> quoted", "x [repeated 2x across cluster]", "^[[1m caf\u00e9",
                 "\u2588 [1m", "\u2588 PyProcess", "\u2588\r"):
        assert _scan.clean_line(line) is None
    # a line of other characters that clean() leaves as it is (a progress bar copied with its block) is kept
    bar = "# 100%|\u2588\u2588\u2588| 32/32 [02:30<00:00, 4.71s/it]"
    assert _scan.clean_line(bar) == text.clean(bar) == bar


@given(st.lists(st.integers(0, 40), min_size=1, max_size=12), st.integers(0, 5), st.integers(5, 30))
def test_long_line_finds_a_line_over_the_limit_by_its_probes_as_a_full_measure_would(lengths, lead, limit):
    """_long_line measures only the lines at every MAX_LINE_BYTES-th byte: never a different answer."""
    block = b"\n".join(b"x" * n for n in lengths)
    buf = bytearray(b"y\n" * lead + block + b"\nzz")
    with mock.patch.object(text, "MAX_LINE_BYTES", limit):
        assert text._long_line(buf, 2 * lead, 2 * lead + len(block)) == (max(lengths) > limit)


class _ReadOnly(io.RawIOBase):
    """A stream without readinto (read_chunks reads it by read())."""

    def __init__(self, data: bytes) -> None:
        self.f = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self.f.read(min(size, 7) if size > 0 else size)

    def __getattribute__(self, name: str):
        if name == "readinto":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_read_chunks_gives_the_same_lines_from_a_stream_without_readinto():
    # (NULs past the sniffed head only, where they are dropped)
    data = b"".join(b"line %d \x1b[1mbold\x1b[0m%s \xe2\x82\xac\n" % (i, b"\x00" * (i > 1000)) for i in range(3000))
    data = data[:5000] + b"long" * 50 + data[5000:] + b"cut"  # a line cut at MAX_LINE_BYTES
    with mock.patch.object(text, "BATCH", 100), mock.patch.object(text, "MAX_LINE_BYTES", 60):
        want: list = []
        got: list = []
        chunks = [line for _, chunk in text.read_chunks(io.BytesIO(data), want) for line in chunk]
        slow = [line for _, chunk in text.read_chunks(_ReadOnly(data), got) for line in chunk]
        lines = [line for _, line in text.read_lines(io.BytesIO(data))]
    assert chunks == slow == lines and len(lines) == 3000 and len(want) == 2
    assert [w.message for w in got] == [w.message for w in want] and want
