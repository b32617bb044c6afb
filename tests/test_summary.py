"""runs/summary.py: figures described a figure at a time, equal to the statistics module's.

A file of thousands of nccl-tests tests lists its first runs.summary.NCCL_TESTS_KEPT - 1 panels
and its last (which shows the file's NCCL table), the rest counted in a warning: each panel
carries the file's NCCL verdict, and 512 MB of nccl-tests outputs made a run's JSON the ingest
worker died saving."""

from __future__ import annotations

import io
import math
import random
from array import array
from statistics import median
from unittest import mock

import pytest

from ingest.parsers import parse_lines, parse_stream
from runs import summary
from runs.digest import Group, ParseDigest
from runs.layout import Launch, Layout
from runs.summary import _split, describe, spread, summarize
from tests.samples import PROJECT_ROOT


def reference(values: list[float]) -> tuple[float | None, float | None, int]:
    """What the summary computed before `describe`: statistics' median and quantiles, each sorting."""
    return (round(median(values), 4) if values else None), spread(values), len(values)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 101, 1000])
def test_describe_gives_the_median_and_spread_of_the_statistics_module(n):
    rng = random.Random(n)
    values = [rng.choice([rng.random() * 10, rng.randint(0, 5) / 4]) for _ in range(n)]
    got = describe(values)
    assert (got.median, got.spread, got.count) == reference(values)


def test_describe_agrees_where_values_hold_nan():
    # NaN makes a sort's result depend on the input order: describe sorts the same list once.
    rng = random.Random(7)
    for _ in range(200):
        values = [math.nan if rng.random() < 0.2 else rng.random() for _ in range(rng.randint(4, 30))]
        got = describe(values)
        want = reference(values)
        assert [str(x) for x in (got.median, got.spread, got.count)] == [str(x) for x in want]


@pytest.mark.parametrize("special", [None, math.nan, -0.0, 0.0, math.inf])
def test_describe_of_a_large_array_sorted_by_polars_agrees_with_the_list(special):
    from array import array

    rng = random.Random(3)
    values = [rng.choice([0.0, 1.5, 2.0, -1.0, rng.random()]) for _ in range(5001)]
    if special is not None:
        values[2500:2510] = [special] * 10  # at the middle: where the median is taken
    got, want = describe(array("d", values)), reference(values)
    assert [str(x) for x in (got.median, got.spread, got.count)] == [str(x) for x in want]


def _cycle_by_tuples(phases) -> list[float]:
    """The per-window cycle sums as they were first computed: every row a tuple, sorted."""
    from collections import defaultdict
    from operator import itemgetter

    from runs.summary import PARTIAL_PHASE_SOURCES

    rows = []
    for g in sorted(phases, key=lambda g: -1 if g.logfile is None else g.logfile):
        if g.source not in PARTIAL_PHASE_SOURCES:
            rows.extend((w, line, g.name, ms) for w, line, ms in zip(g.windows, g.lines, g.values, strict=True))
    rows.sort(key=itemgetter(0, 1, 2))
    per_window: dict[int, float] = defaultdict(float)
    for w, _, _, ms in rows:
        per_window[w] += ms
    return list(per_window.values())


@pytest.mark.parametrize("seed", range(20))
def test_cycle_sums_from_phases_are_the_sums_of_the_rows_sorted_as_tuples(seed):
    from array import array

    from runs.digest import Group
    from runs.summary import _cycle_from_phases

    rng = random.Random(seed)
    phases = []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(0, 60)
        windows = [rng.randint(1, 12) for _ in range(n)]  # out of order, repeated: ties on window and line
        lines = [rng.choice([5, 7, 2**40]) for _ in range(n)]
        values = [rng.choice([0.1, 0.2, 0.3, 1e16, -0.0, rng.random()]) for _ in range(n)]
        phases.append(Group(rng.choice([None, 1, 2]), "main", rng.choice(["eagle_profile", "llamacpp", "vllm_spec"]),
                            rng.choice(["Draft", "Verify", "draft", "Ä"]), "", array("i", windows),
                            array("q", lines), array("d", values), array("i", range(n)), array("d", [0.0] * n)))
    assert [str(x) for x in _cycle_from_phases(phases)] == [str(x) for x in _cycle_by_tuples(phases)]


def _groups(rng: random.Random, labels: list[str], ranked: bool) -> list:
    from array import array

    from runs.digest import Group

    out = []
    for _ in range(rng.randint(1, 5)):
        n = rng.randint(0, 40)
        out.append(Group(rng.choice([None, 1, 2]), "TP0", "sglang_decode", "gen_throughput_tok_s",
                         rng.choice(labels) if ranked else "", array("i", [rng.randint(1, 9) for _ in range(n)]),
                         array("i", [rng.choice([3, 4]) for _ in range(n)]),
                         array("d", [rng.choice([1.0, 2.5, rng.random()]) for _ in range(n)]), array("i", range(n))))
    return sorted(out, key=lambda g: -1 if g.logfile is None else g.logfile)


def _by_tuples(groups) -> list[tuple]:
    from operator import itemgetter

    rows = [(w, line, g.rank, v) for g in groups for w, line, v in zip(g.windows, g.lines, g.values, strict=True)]
    rows.sort(key=itemgetter(0, 1, 2))
    return [(w, rank, v) for w, _, rank, v in rows]


@pytest.mark.parametrize("seed", range(20))
def test_rows_out_of_window_order_come_back_as_a_sort_of_tuples_gives(seed):
    from runs.summary import _by_window_line, metric_values

    rng = random.Random(seed)
    ranked = _groups(rng, ["DP0", "DP1", "", "dp1"], ranked=True)
    assert _by_window_line(ranked) == _by_tuples(ranked)
    one_writer = _groups(rng, [""], ranked=False)
    got = metric_values(one_writer, "gen_throughput_tok_s")
    assert list(got) == [v for _, _, v in _by_tuples(one_writer)]


@pytest.mark.parametrize("seed", range(30))
def test_ranks_throughputs_summed_a_window_at_a_time_are_the_sums_of_their_sorted_rows(seed):
    """Throughput of several ranks: each window's sum, one addition at a time in the rows' order (signed
    zeros, infinities, NaN, values whose sum depends on the order among them), as sum() of the sorted
    tuples gives it."""
    from runs.summary import _combine_ranks

    rng = random.Random(seed)
    ranked = _groups(rng, ["DP0", "DP1", "", "dp1", "DP2"], ranked=True)
    odd = [-0.0, 1e16, 1.0, -1e16, 0.1, 0.2, 0.3, float("inf"), float("nan"), 3.5]
    for g in ranked:
        for i in range(len(g)):
            if rng.random() < 0.5:
                g.values[i] = rng.choice(odd)
    per_window: dict[int, list[float]] = {}
    for w, _, v in _by_tuples(ranked):
        per_window.setdefault(w, []).append(v)
    want = [sum(values) for _, values in sorted(per_window.items())]
    got = _combine_ranks(ranked, ranked, "sglang_decode", "gen_throughput_tok_s")
    assert [repr(x) for x in got] == [repr(x) for x in want]


def test_a_group_split_over_launches_gives_each_row_the_launch_its_line_falls_in():
    # Rows of "main" in a file cut into launches: each row's launch found for all rows at once.
    lay = Layout(processes=[], launches=[Launch(1), Launch(2), Launch(3)], by_tag={(None, "main"): "p"},
                 roles={"p": "serving launcher"}, launch_of_process={},
                 segments={None: [(10, 0), (50, 1), (100, 2), (120, 0)]})
    lines = [3, 10, 11, 49, 50, 99, 100, 119, 120, 500, 60, 12]
    n = len(lines)
    g = Group(None, "main", "sglang_decode", "throughput_tok_s", "", array("i", range(n)), array("i", lines),
              array("d", [float(x) for x in lines]), array("i", range(n)))
    want: dict[int, list[int]] = {}
    for line in lines:
        want.setdefault(lay.launch_index(None, "main", line), []).append(line)
    got = _split(lay, g)
    assert [(i, list(part.lines)) for i, part in got] == list(want.items())
    assert [list(part.values) for _, part in got] == [[float(x) for x in v] for v in want.values()]


# -- result blocks, acceptance, SGLang's first decode line ------------------------------------

def _sglang_block(rate: str, output: str, accept: str | None = None) -> list[str]:
    rows = [("Backend:", "sglang"), ("Traffic request rate:", rate), ("Successful requests:", "100"),
            ("Benchmark duration (s):", "10.00"), ("Output token throughput (tok/s):", output)]
    if accept:
        rows.append(("Accept length:", accept))
    return (["============ Serving Benchmark Result ============"]
            + [f"{label:<40} {value:<10}" for label, value in rows] + ["=" * 50, ""])


def _parse(lines: list[str]) -> dict:
    return summarize(parse_lines(lines=lines))


def test_result_blocks_of_different_settings_are_never_blended():
    parsed = _parse(_sglang_block("2.0", "800.00") + _sglang_block("8.0", "900.00"))
    assert [(b["request_rate"], b["output_throughput_tok_s"]) for b in parsed["serving_blocks"]] == [
        (2.0, 800.0), (8.0, 900.0)]
    assert parsed["serving"] == {"result_blocks": 2}  # no figure taken from one block or blended from both
    assert parsed["summary"]["throughput_tok_s"] is None  # not the median across request rates
    assert any("2 result blocks with different settings" in w["message"] for w in parsed["warnings"])


def test_speculative_decoding_off_and_on_are_two_configurations():
    parsed = _parse(_sglang_block("inf", "800.00") + _sglang_block("inf", "1200.00", accept="2.80"))
    assert parsed["serving"] == {"result_blocks": 2} and parsed["summary"]["tokens_per_cycle"] is None


def test_repeats_of_one_configuration_give_the_median_of_each_figure():
    parsed = _parse(_sglang_block("4.0", "800.00") + _sglang_block("4.0", "900.00") + _sglang_block("4.0", "700.00"))
    assert parsed["serving"]["output_throughput_tok_s"] == 800.0 and parsed["serving"]["result_blocks"] == 3
    assert parsed["summary"]["throughput_tok_s"] == 800.0
    # Said all the same: the blocks cannot tell a repeat from another dtype or build.
    assert any("3 result blocks with the same printed settings" in w["message"] for w in parsed["warnings"])


def test_a_sweep_past_the_listed_blocks_counts_the_rest_and_says_so(monkeypatch):
    from ingest.parsers import serving
    monkeypatch.setattr(serving, "BLOCKS_KEPT", 3)
    rates = ["2.0", "8.0", "2.0", "8.0", "2.0"]
    parsed = _parse([line for i, rate in enumerate(rates) for line in _sglang_block(rate, f"{800 + i}.00")])
    # The first three are rows of the table, as printed; the other two are counted, not listed.
    assert [(b["request_rate"], b["output_throughput_tok_s"]) for b in parsed["serving_blocks"]] == [
        (2.0, 800.0), (8.0, 801.0), (2.0, 802.0)]
    assert parsed["serving"] == {"result_blocks": 5} and parsed["summary"]["throughput_tok_s"] is None
    messages = [w["message"] for w in parsed["warnings"]]
    assert any(m.startswith("5 result blocks with different settings") and "2 more not listed" in m for m in messages)
    assert any("lists 3 of the 5 result blocks" in m and "the other 2 are counted only" in m for m in messages)


def test_repeats_past_the_listed_blocks_are_all_kept_for_their_median(monkeypatch):
    from ingest.parsers import serving
    monkeypatch.setattr(serving, "BLOCKS_KEPT", 2)
    parsed = _parse(_sglang_block("4.0", "700.00") + _sglang_block("4.0", "800.00") + _sglang_block("4.0", "900.00")
                    + _sglang_block("4.0", "950.00"))
    assert len(parsed["serving_blocks"]) == 4  # every repeat counts in the median
    assert parsed["serving"]["output_throughput_tok_s"] == 850.0 and parsed["serving"]["result_blocks"] == 4


def test_a_first_listed_configuration_then_another_is_never_blended(monkeypatch):
    from ingest.parsers import serving
    monkeypatch.setattr(serving, "BLOCKS_KEPT", 2)
    parsed = _parse(_sglang_block("4.0", "700.00") + _sglang_block("4.0", "800.00") + _sglang_block("9.0", "900.00"))
    # The two listed blocks share settings, but the omitted one does not: no median of the run.
    assert len(parsed["serving_blocks"]) == 2
    assert parsed["serving"] == {"result_blocks": 3} and parsed["summary"]["throughput_tok_s"] is None


def test_one_block_keeps_the_serving_object_as_printed():
    parsed = _parse(_sglang_block("4.0", "800.00"))
    assert parsed["serving"]["output_throughput_tok_s"] == 800.0 and "result_blocks" not in parsed["serving"]


def _decode(ts: str, tput: str) -> str:
    return (f"[2025-12-26 06:08:{ts} TP0] Decode batch, #running-req: 1, #token: 51, token usage: 0.00, "
            f"cuda graph: True, gen throughput (token/s): {tput}, #queue-req: 0, ")


def test_sglang_first_decode_line_after_idle_is_dropped_even_with_one_line_after_it():
    parsed = _parse([_decode("28", "0.59"), _decode("29", "112.51")])
    assert parsed["summary"]["throughput_tok_s"] == 112.51 and parsed["summary"]["windows"] == 1


def test_a_throughput_from_a_single_sglang_decode_line_is_flagged():
    parsed = _parse([_decode("28", "0.59")])
    assert parsed["summary"]["throughput_tok_s"] == 0.59
    assert any("single SGLang decode interval" in w["message"] for w in parsed["warnings"])


def test_vllm_acceptance_rate_and_per_position_rates_have_their_place():
    line = ("(APIServer pid=1) INFO 05-06 06:11:23 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.37, "
            "Accepted throughput: 8.90 tokens/s, Drafted throughput: 97.50 tokens/s, Accepted: 89 tokens, Drafted: 975 "
            "tokens, Per-position acceptance rate: 0.600, 0.385, 0.215, Avg Draft acceptance rate: 9.1%")
    parsed = _parse([line])
    assert parsed["acceptance"] == {"rate": 0.091, "positions": [0.6, 0.385, 0.215], "windows": 1,
                                    "source": "vllm_spec"}


def test_a_log_without_acceptance_figures_has_no_acceptance_key():
    assert "acceptance" not in _parse([_decode("28", "100.0"), _decode("29", "101.0")])


def _nccl_test(k: int) -> list[str]:
    """One all_reduce test whose figures say which test it is: busbw k.1/k.2 (out-of-place) and
    k.3/k.4 (in-place) on two rows, an average of k.5 in its footer."""
    return [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        f"           8             2     float     sum      -1    15.78    0.00    {k}.1       0    13.87    0.00    {k}.3       0",
        f"          16             4     float     sum      -1    15.80    0.00    {k}.2       0    13.90    0.00    {k}.4       0",
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {k}.5 ",
        "#",
    ]


def test_a_file_of_many_nccl_tests_gives_each_test_its_own_rows_and_figures(monkeypatch):
    monkeypatch.setattr(summary, "NCCL_TESTS_KEPT", 1000)  # every test listed (a file's cap: the tests at the end of this module)
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20"]
    for k in range(1, 301):
        lines += _nccl_test(k)
    # A test cut short after the last footer: its rows alone, no average.
    lines += _nccl_test(301)[:3]
    panels = summarize(parse_lines(lines))["nccl_tests"]
    assert [p["test"] for p in panels] == list(range(1, 302))
    assert {p["tests"] for p in panels} == {301}
    for k, panel in enumerate(panels[:300], 1):
        assert panel["avg_busbw_gbs"] == float(f"{k}.5")
        assert panel["peak_busbw_gbs"] == float(f"{k}.4")
        assert panel["rows"] == 4
    assert panels[-1]["avg_busbw_gbs"] is None
    assert panels[-1]["peak_busbw_gbs"] == 301.3 and panels[-1]["rows"] == 2
    assert all(p["processes"] == panels[0]["processes"] and p["processes"] for p in panels)


# A file's nccl-tests panels past NCCL_TESTS_KEPT.

LOG = (PROJECT_ROOT / "samples" / "nccl-tests_all_reduce_default.log").read_bytes()


def _parsed(data: bytes) -> dict:
    digest = ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=digest)
    return summary.summarize(result, digest.rows(result))


def test_a_file_of_many_tests_lists_its_first_and_its_last_and_counts_the_rest():
    data = LOG * 12
    full = _parsed(data)
    assert [p["test"] for p in full["nccl_tests"]] == list(range(1, 13))
    with mock.patch.object(summary, "NCCL_TESTS_KEPT", 5):
        capped = _parsed(data)
    assert [p["test"] for p in capped["nccl_tests"]] == [1, 2, 3, 4, 12]
    assert capped["nccl_tests"] == [p for p in full["nccl_tests"] if p["test"] in (1, 2, 3, 4, 12)]
    assert capped["nccl_tests"][-1]["tests"] == 12
    assert capped["warnings"] == [*full["warnings"], {"line": None, "message": (
        "the nccl-tests panels list 5 of the 12 tests: a file lists its first 4 tests and its last one, "
        "the other 7 are counted only")}]


def test_a_real_output_is_not_capped():
    parsed = _parsed(LOG)
    assert len(parsed["nccl_tests"]) == 1 and not [w for w in parsed["warnings"] if "nccl-tests panels" in w["message"]]


def _scrambled_partition(a, kth):
    """np.partition's contract and no more: the values at `kth` in place, those between two of them in
    any order (reversed here; numpy's own leaves a kth's neighbours sorted, mostly)."""
    import numpy as np

    out = np.sort(a)
    cuts = [-1, *sorted(np.atleast_1d(kth).tolist()), len(out)]
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        out[lo + 1:hi] = out[lo + 1:hi][::-1].copy()
    return out


@pytest.mark.parametrize("n", [1001, 1002, 1003, 1004, 1005, 4096, 20_001, 20_002])
@pytest.mark.parametrize("shape", ["random", "few", "sorted", "reversed", "inf"])
def test_describe_of_a_large_array_puts_in_place_the_values_the_statistics_module_reads(n, shape, monkeypatch):
    """A partition puts only the quartiles' and the median's values in place: each count modulo 4 and
    2 (the positions and their weights), ties, ordered input and infinities (inf * 0 is NaN)."""
    import numpy as np

    monkeypatch.setattr(np, "partition", _scrambled_partition)
    rng = random.Random(n)
    values = [rng.choice([rng.random() * 10, rng.randint(0, 5) / 4]) for _ in range(n)]
    if shape == "few":
        values = [float(rng.randint(0, 2)) for _ in range(n)]
    elif shape in ("sorted", "reversed"):
        values.sort(reverse=shape == "reversed")
    elif shape == "inf":
        values[: n // 3] = [math.inf] * (n // 3)
        values[-n // 3:] = [-math.inf] * (n // 3)
    got, want = describe(array("d", values)), reference(values)
    assert [str(x) for x in (got.median, got.spread, got.count)] == [str(x) for x in want]


@pytest.mark.parametrize("rest", [20_000, 20_001])
def test_a_large_log_drops_its_first_decode_line_by_the_median_of_the_others(rest, monkeypatch):
    # The others all differ, shuffled: a first rate just under a quarter of their median is dropped, one
    # just over it is not; a median taken at a neighbouring place (of a partition, not sorted) says otherwise.
    import numpy as np

    monkeypatch.setattr(np, "partition", _scrambled_partition)
    rng = random.Random(rest)
    others = [100 + k / 100 for k in range(rest)]
    rng.shuffle(others)
    quarter = median(others) / 4
    for first, dropped in ((f"{quarter - 0.005:.2f}", True), (f"{quarter + 0.005:.2f}", False)):
        lines = [_decode(f"{k % 60:02d}", tput) for k, tput in enumerate([first, *(f"{v:.2f}" for v in others)])]
        assert _parse(lines)["summary"]["windows"] == rest + (not dropped)


@pytest.mark.parametrize("zeros", [[0.0], [-0.0], [0.0, -0.0], [-0.0, 0.0]])
@pytest.mark.parametrize("infs", [[], [math.inf], [math.inf, -math.inf]])
def test_describe_of_a_large_array_whose_median_and_quartiles_are_zeros_of_either_sign(zeros, infs):
    """A partition may put -0.0 and 0.0 in another order than sorted() (equal to it): where a read
    position holds a zero, the zeros' signs decide; an inf and a -inf sum to NaN as a NaN does."""
    from array import array

    rng = random.Random(len(zeros) * 10 + len(infs))
    values = [rng.choice([*zeros, rng.random() - 2, rng.random() + 1]) for _ in range(4001)]
    values[::97] = [rng.choice(zeros) for _ in values[::97]]
    values[5:5 + len(infs)] = infs
    values[1000:3000] = [rng.choice(zeros) for _ in range(2000)]  # the median and both quartiles among them
    got, want = describe(array("d", values)), reference(values)
    assert [str(x) for x in (got.median, got.spread, got.count)] == [str(x) for x in want]


@pytest.mark.parametrize("special", [None, math.nan, -0.0])
def test_sorted_from_a_start_reads_the_slice_without_copying_it(special):
    """_sorted(values, at, start) is _sorted(values[start:], at): the SGLang first-window check reads
    the rest of a figure's values so, not through a copy of them."""
    from array import array

    from runs.summary import _middle, _sorted

    rng = random.Random(5)
    values = array("d", [rng.choice([0.0, 2.0, rng.random()]) for _ in range(3001)])
    if special is not None:
        values[1500:1600] = array("d", [special] * 100)
    rest = len(values) - 1
    at = [rest // 2 - 1, rest // 2]
    got, want = _sorted(values, at, start=1), _sorted(values[1:], at)
    assert len(got) == len(want) == rest and str(_middle(got)) == str(_middle(want)) == str(median(values[1:]))
