"""The chunked engine (parse_stream's default) gives the records of the line-at-a-time one
(engine="lines"), whatever the mix of logs, the read sizes and the damage to the bytes."""

import io
from contextlib import ExitStack
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import ParseError, parse_stream, text
from tests.samples import PROJECT_ROOT, public_excerpts

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _samples() -> list[bytes]:
    paths = public_excerpts() + sorted((PROJECT_ROOT / "samples").glob("*.log"))
    assert len(paths) > 20
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


# -- the chunk lanes (columns.py): columns that must be the records feeding gives ------------------

def _window_lines() -> list[bytes]:
    """Lines of generated serving windows (bench/loggen.py) and variants of them a lane must
    read exactly, or decline: DP tags, other fields, odd numbers, blocks cut, headerless phases."""
    from bench.loggen import windows_text

    lines = windows_text(40, seed=7).encode().split(b"\n")
    return lines + [
        b"[2026-11-29 21:06:12 DP1 TP1] Decode batch. #running-req: 3, #token: 77, token usage: 0.01, "
        b"accept len: 2.50, cuda graph: True, gen throughput (token/s): 120.5, #queue-req: 0, ",
        b"[2026-11-29 21:06:12 DP0 TP0] Decode batch, #running-req: 1, cpu graph: False, gen throughput (token/s): 7",
        b"[2026-11-29 21:06:12 TP0] Decode batch. #running-req: 1, accept len: 1.5",  # no throughput: not a window
        b"[2026-11-29 21:06:12 TP0] Decode batch. #running-req: 1, #running-req: 2, gen throughput (token/s): 3",
        b"[2026-11-29 21:06:12 TP0] Decode batch. #running-req: 1, Token Usage: 0.5, gen throughput (token/s): 1e3",
        b"[2026-11-29 21:06:12 TP0] Decode batch. accept rate: 50%, cuda graph: 1, gen throughput (token/s): 9.0",
        b"[2026-11-29 21:06:12] Decode batch. #running-req: 1, gen throughput (token/s): 42.00",
        b"[2026-11-29 21:06:12 TP0] Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00",
        b"[EAGLE3_PROFILE] window=100 cycles, steps=3",
        b"[MTP_PROFILE] window=7 window=9",
        b"  Accept len:          1.2345678",
        b"  Accept length:       0.5",
        b"  Throughput:         99 tok/s",
        b"  Cycle:               5.00 ms/cyc",
        b"  Draft:               0.50 ms/step",
        b"  NCCL allreduce:      0.10 ms/cyc  (2.0%)",
        b"  Verify \xc2\xb5:            1.00 ms/cyc",
        b"Target forward: 4.09 ms/step",
        b"accept 2 of 5          257 iters   1.992 tok/iter    5.420 ms/iter",
        b"",
    ]


WINDOW_LINES = _window_lines()


@st.composite
def serving_logs(draw) -> bytes:
    """Generated windows, whole samples and single lines (some damaged) in any order."""
    parts = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            parts.append(draw(st.sampled_from(SAMPLES)).rstrip(b"\n"))
        elif kind == 1:
            start = draw(st.integers(0, len(WINDOW_LINES) - 1))
            parts.extend(WINDOW_LINES[start:start + draw(st.integers(1, 60))])
        else:
            line = draw(st.sampled_from(WINDOW_LINES if kind == 2 else LINES))
            for damage in draw(st.lists(st.sampled_from(DAMAGE[:-1]), max_size=1)):
                line = damage(line)
            parts.append(line)
    return b"\n".join(parts) + b"\n"


def _parse_whole(data: bytes, engine: str):
    """Result and every phase and metric, however the sink took them (lanes batch per chunk)."""
    taken: list = []
    try:
        result = parse_stream(io.BytesIO(data), sink=lambda r: taken.append(r.take_rows()), engine=engine)
    except ParseError as e:
        return ("ParseError", e.line, e.message)
    taken.append(result.take_rows())
    return result, [[row for batch in taken for row in batch[kind]] for kind in range(4)]


def _lanes_taken(monkeypatch_target) -> list:
    """(lane, the chunk's line numbers) of every chunk a lane took (it returns None to decline)."""
    took: list = []
    for module in (parsers.eagle_profile, parsers.sglang):
        original = module.Parser.lane

        def lane(self, chunk, rdr, original=original, name=module.NAME):
            rows = original(self, chunk, rdr)
            if rows is not None:
                took.append((name, range(chunk.first, chunk.first + len(chunk.lines))))
            return rows
        monkeypatch_target.enter_context(mock.patch.object(module.Parser, "lane", lane))
    return took


@SETTINGS
@given(serving_logs(), st.integers(200, 4000), st.integers(1, 300), st.integers(1, 60))
def test_lanes_give_the_records_feeding_gives(data, batch, chunk, spill_at):
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(parsers, "SPILL_AT", spill_at))
        stack.enter_context(mock.patch.object(text, "CHUNK", chunk))
        lines = _parse_whole(data, "lines")
        stack.enter_context(mock.patch.object(parsers, "LANE_MIN_LINES", 1))
        stack.enter_context(mock.patch.object(text, "BATCH", batch))
        stack.enter_context(mock.patch.object(text, "FIRST_BATCH", batch))
        chunks = _parse_whole(data, "chunks")
    if "ParseError" in (lines[0], chunks[0]):
        assert chunks == lines
        return
    assert chunks[1] == lines[1]
    assert chunks[0] == lines[0]
    assert list(chunks[0].processes) == list(lines[0].processes)


def test_lanes_take_a_serving_log_and_give_its_records():
    from bench.loggen import HEAD_SAMPLE, windows_text

    data = HEAD_SAMPLE.read_bytes() + windows_text(3000, seed=3).encode()
    with ExitStack() as stack:
        took = _lanes_taken(stack)
        stack.enter_context(mock.patch.object(text, "BATCH", 64 << 10))
        chunks = _parse_whole(data, "chunks")
    names = [name for name, _ in took]
    assert names.count("eagle_profile") > 20 and names.count("sglang") > 20
    lines = _parse_whole(data, "lines")
    assert chunks[1] == lines[1]
    assert chunks[0] == lines[0]
    head = parse_stream(io.BytesIO(HEAD_SAMPLE.read_bytes()))
    assert len(chunks[1][0]) == 3 * 3000 + len(head.phases)  # Draft, Target verify, Accept a window


def test_a_lane_declines_a_chunk_it_cannot_read_exactly():
    from bench.loggen import HEAD_SAMPLE, windows_text

    odd = b"[2026-11-29 21:06:12 TP0] Decode batch. #running-req: 1, gen throughput (token/s): 1e3\n"
    data = HEAD_SAMPLE.read_bytes() + windows_text(200, seed=3).encode() + odd + windows_text(200, seed=4).encode()
    with ExitStack() as stack:
        took = _lanes_taken(stack)
        stack.enter_context(mock.patch.object(text, "BATCH", 1 << 14))
        stack.enter_context(mock.patch.object(parsers, "LANE_MIN_LINES", 1))
        chunks = _parse_whole(data, "chunks")
    at = data[:data.index(odd)].count(b"\n") + 1
    assert any(name == "sglang" for name, _ in took)
    assert [name for name, lines in took if at in lines] == ["eagle_profile"]  # sglang declined that chunk
    assert chunks == _parse_whole(data, "lines")


@pytest.mark.parametrize("name", ["spec_eagle3_tuned_2step.log", "spec_baseline_nospec.log"])
def test_lanes_take_a_recorded_log_grown_long_and_give_its_records(name):
    """This project's recordings (EAGLE-3 profile blocks; headerless `Target forward` phases
    without speculation), their serving part repeated: both lanes take chunks, records equal."""
    lines = (PROJECT_ROOT / "samples" / name).read_bytes().split(b"\n")
    data = b"\n".join(lines + lines[len(lines) * 4 // 10:] * 30) + b"\n"
    with ExitStack() as stack:
        took = _lanes_taken(stack)
        stack.enter_context(mock.patch.object(text, "BATCH", 1 << 15))
        stack.enter_context(mock.patch.object(parsers, "LANE_MIN_LINES", 1))
        chunks = _parse_whole(data, "chunks")
    assert {"eagle_profile", "sglang"} <= {lane for lane, _ in took}
    assert chunks == _parse_whole(data, "lines")
