"""runs/summary.py: figures described a figure at a time, equal to the statistics module's."""

from __future__ import annotations

import math
import random
from statistics import median, quantiles

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


def test_describe_takes_an_array_as_a_list():
    from array import array

    values = [0.25 * i for i in range(17)]
    assert describe(array("d", values)) == describe(values)
