"""The chunked engine (parse_stream's default) gives the records of the line-at-a-time one
(engine="lines"), whatever the mix of logs, the read sizes and the damage to the bytes."""

import io
from contextlib import ExitStack
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import ParseError, parse_stream, text
from tests.samples import PROJECT_ROOT, SHARED_SAMPLES

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _samples() -> list[bytes]:
    paths = sorted((SHARED_SAMPLES / "public").iterdir()) + sorted((PROJECT_ROOT / "samples").glob("*.log"))
    assert len(paths) > 20, "set RUNLENS_SHARED_SAMPLES to the folder holding public/"
    return [p.read_bytes() for p in paths]


SAMPLES = _samples()
LINES = [line for sample in SAMPLES for line in sample.split(b"\n")]
# What copies of logs do to lines: colours, tqdm's \r, CRLF, NULs, MPI tags, quotes, relays.
DAMAGE = [
    lambda b: b"\x1b[1;36m" + b + b"\x1b[0m",
    lambda b: b"[1;36m" + b,
    lambda b: b"^[[0m" + b,
    lambda b: b + b"\r",
    lambda b: b"progress 10%\r" + b,
    lambda b: b + b"^M",
    lambda b: b[: len(b) // 2] + b"\x00\x00" + b[len(b) // 2:],
    lambda b: b"[1,0]<stdout>:" + b,
    lambda b: b"> " + b,
    lambda b: b + b" [repeated 3x across cluster]",
    lambda b: b"[INFO ] PyProcess - W-210-model-stdout: " + b,
    lambda b: b + b"\xe2\x82",  # a multi-byte character cut before the newline
    lambda b: b"#033[32m" + b,
    lambda b: b * 40,  # long enough to be cut under a small MAX_LINE_BYTES
]


@st.composite
def logs(draw) -> bytes:
    """Whole samples and single lines, some damaged, with or without a final newline."""
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(SAMPLES)).rstrip(b"\n"))
        else:
            line = draw(st.sampled_from(LINES))
            for damage in draw(st.lists(st.sampled_from(DAMAGE), max_size=2)):
                line = damage(line)
            parts.append(line)
    data = b"\n".join(parts)
    return data + draw(st.sampled_from([b"\n", b"", b"\r\n", b"\n\n"]))


def _parse(data: bytes, engine: str, formats=None):
    """Result, rows handed to a sink (in order) and the error, for one engine."""
    taken: list = []
    try:
        result = parse_stream(io.BytesIO(data), formats, sink=lambda r: taken.append(r.take_rows()), engine=engine)
    except ParseError as e:
        return ("ParseError", e.line, e.message)
    return result, taken


@SETTINGS
@given(logs(), st.integers(1, 3000), st.integers(1, 300), st.integers(40, 2000), st.integers(1, 50),
       st.integers(1, 40))
def test_chunks_give_the_records_lines_give(data, batch, chunk, max_line, spill_at, spill_every):
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(text, "MAX_LINE_BYTES", max_line))
        stack.enter_context(mock.patch.object(parsers, "SPILL_AT", spill_at))
        stack.enter_context(mock.patch.object(parsers, "SPILL_EVERY", spill_every))
        stack.enter_context(mock.patch.object(text, "CHUNK", chunk))
        lines = _parse(data, "lines")
        stack.enter_context(mock.patch.object(text, "BATCH", batch))
        chunks = _parse(data, "chunks")
    if "ParseError" in (lines[0], chunks[0]):
        assert chunks == lines
        return
    assert chunks[1] == lines[1]  # the sink took the same rows in the same batches
    assert chunks[0] == lines[0]
    assert list(chunks[0].processes) == list(lines[0].processes)  # the order pages list them in


@SETTINGS
@given(logs(), st.integers(1, 3000))
def test_chunks_give_the_records_lines_give_for_one_format(data, batch):
    for formats in (["sglang"], ["nccl_debug", "launch_env"], ["eagle_profile"]):
        with mock.patch.object(text, "BATCH", batch):
            chunks = _parse(data, "chunks", formats)
        assert chunks == _parse(data, "lines", formats)


def test_a_line_over_a_mib_is_cut_alike_in_both_engines():
    head = SAMPLES[0]
    data = head + b"INFO " + b"a" * (3 << 20) + b"\n" + head + b"x" * (text.MAX_LINE_BYTES + 5)
    chunks, lines = _parse(data, "chunks"), _parse(data, "lines")
    assert chunks == lines
    assert [w.message for w in chunks[0].warnings][:1] == [f"line longer than {text.MAX_LINE_BYTES} bytes was cut"]
