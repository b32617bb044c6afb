"""The trend: commit order, the noise rule against the previous run, annotations, the headline."""

from datetime import UTC, datetime, timedelta

import pytest

from runs.trend import TrendPoint, ordered, trend

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def point(i: int, value: float, commit: str = "", noise: float = 0.0, **kw) -> TrendPoint:
    windows = tuple(value + noise * (k - 3.5) / 2 for k in range(8))
    return TrendPoint(id=i, name=f"run{i}", created_at=T0 + timedelta(hours=i), value=value, windows=windows,
                      commit=commit, **kw)


def test_runs_of_one_commit_stay_together_in_commit_order():
    runs = [point(1, 500, "aaa"), point(2, 510, "bbb"), point(3, 505, "aaa"), point(4, 520)]
    assert [p.id for p in ordered(runs)] == [1, 3, 2, 4]


def test_drop_beyond_the_noise_is_flagged_as_regression():
    out = trend([point(1, 500, noise=4), point(2, 450, noise=4), point(3, 452, noise=4)], "throughput_tok_s")
    assert [p["flag"] for p in out["points"]] == [None, "regression", None]
    assert out["regressions"] == [2]
    assert out["headline"] == ("Throughput over 3 runs: 500.0 → 452.0 tok/s; 1 regression beyond the noise, "
                               "the largest at run2 (-10.0%).")


def test_drop_inside_the_noise_is_not_flagged():
    out = trend([point(1, 500, noise=60), point(2, 480, noise=60)], "throughput_tok_s")
    assert out["points"][1]["flag"] is None and out["regressions"] == []


def test_lower_is_better_for_cycle_time():
    out = trend([point(1, 4.0), point(2, 4.5), point(3, 4.0)], "cycle_ms")
    assert [p["flag"] for p in out["points"]] == [None, "regression", "improvement"]


def test_annotations_ride_along_and_points_without_the_figure_are_left_out():
    note = (T0, "note", "driver upgrade")
    out = trend([point(1, 500, annotations=(note,)), TrendPoint(2, "empty", T0, None)], "throughput_tok_s")
    assert [p["run_id"] for p in out["points"]] == [1]
    assert out["points"][0]["annotations"] == [{"at": T0.isoformat(), "kind": "note", "body": "driver upgrade"}]


def test_commit_gives_the_axis_label():
    out = trend([point(1, 500, "0123456789abcdef"), point(2, 501)], "throughput_tok_s")
    assert [p["label"] for p in out["points"]] == ["01234567", "run2"]


def test_unknown_metric_is_refused():
    with pytest.raises(ValueError):
        trend([], "bogus")
