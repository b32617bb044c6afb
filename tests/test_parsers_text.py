"""ingest/parsers/text.py: reading log bytes as numbered lines, whatever their length."""

from __future__ import annotations

import io

from ingest.parsers import parse_stream
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
