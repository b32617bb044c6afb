"""Properties every parser keeps, whatever the input: only ParseError escapes, chunk boundaries
do not matter, a cut-off file parses to a prefix of the whole file's records, and the summary
does not depend on the order of the records."""

import io
import random
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseError, parse_stream, text
from runs.summary import summarize
from tests.samples import log_path, public_excerpts

FORMATS = ("eagle_profile", "sglang", "vllm", "llamacpp")
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Whole logs as they occur (multi-line constructs intact), recombined by the strategies below.
_HAND = [
    "[2025-05-08 10:00:00 DP0 TP0] Decode batch. #running-req: 8, #token: 900, token usage: 0.05, "
    "accept len: 3.00, gen throughput (token/s): 300.00, #queue-req: 0, \n"
    "[2025-05-08 10:00:01 DP1 TP1] Decode batch. #running-req: 8, #token: 900, token usage: 0.05, "
    "accept len: 2.00, gen throughput (token/s): 100.00, #queue-req: 0, \n",
    "[2025-11-06 01:22:00] server_args=ServerArgs(model_path='m', tp_size=2, speculative_algorithm='EAG\n"
    "LE3', speculative_num_steps=3, cfg=C(d=P(bs=[1, 2])))\n",
    "python -m sglang.launch_server --model m \\\n  --tp 2 --speculative-num-steps=3\n",
    "Warmup ...\nPrefill. latency: 0.46 s, throughput:   9316.59 token/s\nBenchmark ...\n"
    "Decode 1. Batch size: 4, latency: 0.01225 s, throughput:    326.46 token/s\n",
    "SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=3.57 scoring_time_ms=94.42 "
    "verification_time_ms=1.32\n",
    "[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Draft:               0.56 ms/cyc  ( 11.8%)\n"
    "  Target verify:       4.02 ms/cyc  ( 83.6%)\n  Accept len:          1.24\n",
]


def _logs() -> list[str]:
    logs = list(_HAND)
    for path in public_excerpts():
        if path.name.startswith(("sglang", "vllm", "llamacpp", "spec_")):
            logs.append(path.read_text(errors="replace"))
    logs.append(log_path("spec_eagle3_tuned_2step.log").read_text())
    return logs


LOGS = _logs()
LINES = [line for log in LOGS for line in log.splitlines()]

whole_logs = st.lists(st.sampled_from(LOGS), min_size=1, max_size=4).map(
    lambda parts: "".join(p if p.endswith("\n") else p + "\n" for p in parts).encode()
)


@st.composite
def mangled_logs(draw) -> bytes:
    """Real lines, shuffled, cut, and salted with junk (a torn copy of a torn log)."""
    lines = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=30))
    out = []
    for line in lines:
        cut = draw(st.integers(0, len(line)))
        junk = draw(st.text(max_size=6))
        out.append(line[:cut] + junk + line[cut:] if draw(st.booleans()) else line)
    return ("\n".join(out) + draw(st.sampled_from(["\n", "", "\r\n"]))).encode("utf-8", "surrogatepass")


def parse(data: bytes):
    """The parse result, or the ParseError it raised (compared like a result)."""
    try:
        return parse_stream(io.BytesIO(data), formats=FORMATS)
    except ParseError as e:
        return ("ParseError", e.line, e.message)


@FAST
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_raise_nothing_but_parse_error(data):
    try:
        parse_stream(io.BytesIO(data))
    except ParseError:
        pass


@FAST
@given(mangled_logs())
def test_torn_log_lines_raise_nothing_but_parse_error(data):
    try:
        summarize(parse_stream(io.BytesIO(data)))
    except ParseError:
        pass


@FAST
@given(st.one_of(whole_logs, mangled_logs()), st.integers(1, 97))
def test_chunked_reading_equals_whole_file_reading(data, chunk):
    whole = parse(data)
    with mock.patch.object(text, "CHUNK", chunk):
        assert parse(data) == whole


@FAST
@given(whole_logs, st.data())
def test_truncated_file_yields_a_prefix_of_the_records(data, draw):
    full = parse(data)
    cut = draw.draw(st.integers(0, len(data)))
    part = parse(data[:cut])
    if isinstance(part, tuple):
        return  # nothing readable before the cut
    # Records only. A benchmark block cut before any label that names its tool goes to the log's
    # engine, a guess the rest of the block may overturn: its format name and serving settings
    # then differ (and its records too, if its throughput row came before any such label; real
    # blocks name their tool in the first row, see serving.py).
    # The records of the lines read, not a prefix in emission order: a block's records come when
    # it closes, and the line that closes it in the whole file may emit its own first (a profile
    # header after a benchmark block: eagle_profile is fed before sglang), while the cut file
    # closes the block at its end.
    assert _of_lines(part.metrics, part.lines) == _of_lines(full.metrics, part.lines)
    assert _of_lines(part.phases, part.lines) == _of_lines(full.phases, part.lines)
    assert all(r.line <= part.lines for r in [*part.metrics, *part.phases])


def _of_lines(records: list, last: int) -> list:
    """The records of lines 1..last, in line order (emission order within a line and source)."""
    return sorted((r for r in records if r.line <= last), key=lambda r: (r.line, r.source))


@FAST
@given(whole_logs, st.randoms(use_true_random=False))
def test_summary_does_not_depend_on_record_order(data, rnd: random.Random):
    result = parse(data)
    if isinstance(result, tuple):
        return
    before = summarize(result)
    rnd.shuffle(result.metrics)
    rnd.shuffle(result.phases)
    after = summarize(result)
    assert after["summary"] == before["summary"]
    assert sorted(after["phases"], key=lambda p: p["name"]) == sorted(before["phases"], key=lambda p: p["name"])
