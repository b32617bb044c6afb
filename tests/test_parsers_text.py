"""ingest/parsers/text.py: reading log bytes as numbered lines, whatever their length."""

from __future__ import annotations

import io

from ingest.parsers import parse_stream, text
from ingest.parsers.text import MAX_LINE_BYTES, read_lines
from tests.samples import log_path

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
