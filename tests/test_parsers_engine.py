"""The native engine (parse_stream's default) gives the records of the line-at-a-time reference
(engine="lines"), whatever the mix of logs, the read sizes and the damage to the bytes; without the
scanner the reference reads. The strategies here (damaged samples, serving windows) feed
tests/test_parsers_native.py too."""

import io
from contextlib import ExitStack
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import ParseError, native, parse_stream, text
from tests.samples import PROJECT_ROOT, public_excerpts

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _samples() -> list[bytes]:
    paths = public_excerpts() + sorted((PROJECT_ROOT / "samples").glob("*.log"))
    assert len(paths) > 20
    return [p.read_bytes() for p in paths]


SAMPLES = _samples()
LINES = [line for sample in SAMPLES for line in sample.split(b"\n")]
# What copies of logs do to lines: colours, tqdm's \r, CRLF, NULs, MPI tags, quotes, relays, broken UTF-8.
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
    lambda b: b" 40%|\xe2\x96\x88\xe2\x96\x88 | " + b,  # a progress bar's blocks
    lambda b: b + b" \xff\xc0\xaf\xed\xa0\x80\xf0\x9f",  # invalid UTF-8: a U+FFFD each maximal invalid part
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


@SETTINGS
@given(logs(), st.integers(1, 3000), st.integers(1, 300), st.integers(40, 2000), st.integers(1, 50))
def test_native_gives_the_records_lines_give_at_any_read_size_and_line_cut(data, batch, chunk, max_line, spill_at):
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(text, "MAX_LINE_BYTES", max_line))
        stack.enter_context(mock.patch.object(parsers, "SPILL_AT", spill_at))
        stack.enter_context(mock.patch.object(text, "CHUNK", chunk))
        lines = _parse_whole(data, "lines")
        stack.enter_context(mock.patch.object(text, "BATCH", batch))
        stack.enter_context(mock.patch.object(text, "FIRST_BATCH", batch))
        got = _parse_whole(data, "native")
    if "ParseError" in (lines[0], got[0]):
        assert got == lines
        return
    assert got[1] == lines[1]  # every row, in order, however a sink took them
    assert got[0] == lines[0]
    assert list(got[0].processes) == list(lines[0].processes)  # the order pages list them in


def test_a_line_over_a_mib_is_cut_alike_in_both_engines():
    head = SAMPLES[0]
    data = head + b"INFO " + b"a" * (3 << 20) + b"\n" + head + b"x" * (text.MAX_LINE_BYTES + 5)
    got, lines = _parse_whole(data, "native"), _parse_whole(data, "lines")
    assert got == lines
    assert [w.message for w in got[0].warnings][:1] == [f"line longer than {text.MAX_LINE_BYTES} bytes was cut"]


def test_without_the_native_scanner_the_reference_engine_reads(monkeypatch):
    data = b"\n".join(SAMPLES[:6]) + b"\n"
    want = _parse_whole(data, "native")
    monkeypatch.setattr(native, "available", lambda: "the native scanner (ingest/parsers/_scan.c) is not built")
    default = parse_stream(io.BytesIO(data))
    assert default == parse_stream(io.BytesIO(data), engine="lines")
    assert _parse_whole(data, "lines") == want


def test_a_subset_of_formats_is_read_by_the_reference_engine():
    data = b"\n".join(SAMPLES) + b"\n"
    for formats in (["sglang"], ["nccl_debug", "launch_env"], ["eagle_profile"]):
        try:
            got = parse_stream(io.BytesIO(data), formats)
        except ParseError:
            continue
        assert got == parse_stream(io.BytesIO(data), formats, engine="lines")


# -- generated serving windows and their odd variants (the native engine's tests draw from these) --

def _window_lines() -> list[bytes]:
    """Lines of generated serving windows (bench/loggen.py) and variants of them the scanner must
    read exactly, or hand to Python: DP tags, other fields, odd numbers, blocks cut, headerless phases."""
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
    """Result and every phase and metric, however the sink took them (the engines batch apart)."""
    taken: list = []
    try:
        result = parse_stream(io.BytesIO(data), sink=lambda r: taken.append(r.take_rows()), engine=engine)
    except ParseError as e:
        return ("ParseError", e.line, e.message)
    taken.append(result.take_rows())
    return result, [[row for batch in taken for row in batch[kind]] for kind in range(4)]
