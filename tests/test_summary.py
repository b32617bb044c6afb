"""runs/summary.py: figures described a figure at a time, equal to the statistics module's."""

from __future__ import annotations

import math
import random
from statistics import median

import pytest

from runs.summary import describe, spread


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
