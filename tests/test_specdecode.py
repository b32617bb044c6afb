"""Speculative-decoding arithmetic: the story's worked example, edge cases, properties, analysis()."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.specdecode import (
    acceptance_curve,
    analysis,
    break_even_tokens_per_cycle,
    can_beat_baseline,
    expected_tokens_per_cycle,
    implied_acceptance,
    margin,
    projected_throughput,
    required_acceptance,
    throughput_tok_s,
    verdict,
)

# Medians of the recorded GPU samples spec_eagle3_tuned_2step.log and spec_baseline_nospec.log.
TUNED_2STEP = {"throughput_tok_s": 472.8, "tokens_per_cycle": 2.2, "cycle_ms": 4.6, "verify_ms": 4.08,
               "steps": 2}
BASELINE = {"throughput_tok_s": 243.83, "cycle_ms": 4.095}

acceptances = st.floats(min_value=0.0, max_value=1.0)
step_counts = st.integers(min_value=0, max_value=12)


# The story's worked example

def test_story_three_steps_at_19ms_need_acceptance_078_for_150_tok_s():
    p = required_acceptance(150, steps=3, cycle_ms=19.15)
    assert p == pytest.approx(0.78, abs=0.005)
    # 1 + p + p^2 + p^3 = 150 * 0.01915 = 2.8725
    assert 1 + p + p**2 + p**3 == pytest.approx(2.8725, abs=1e-9)


def test_story_baseline_88_8_at_27_7ms_breaks_even_at_2_46_tokens():
    assert break_even_tokens_per_cycle(88.8, 27.7) == pytest.approx(2.46, abs=0.005)


# Plain formulas

def test_throughput_is_tokens_per_cycle_over_cycle_seconds():
    assert throughput_tok_s(2.2, 4.6) == pytest.approx(478.26, abs=0.01)


@pytest.mark.parametrize("cycle_ms", [0.0, -1.0])
def test_throughput_rejects_non_positive_cycle(cycle_ms):
    with pytest.raises(ValueError):
        throughput_tok_s(2.0, cycle_ms)


def test_zero_baseline_breaks_even_at_zero_tokens():
    assert break_even_tokens_per_cycle(0.0, 4.6) == 0.0
    assert can_beat_baseline(0.0, steps=1, cycle_ms=4.6)


def test_expected_tokens_matches_closed_form():
    p, k = 0.7, 3
    assert expected_tokens_per_cycle(p, k) == pytest.approx((1 - p ** (k + 1)) / (1 - p))


def test_expected_tokens_at_full_acceptance_is_steps_plus_one():
    assert expected_tokens_per_cycle(1.0, 3) == 4.0


def test_expected_tokens_is_continuous_as_acceptance_nears_one():
    assert expected_tokens_per_cycle(1 - 1e-12, 5) == pytest.approx(6.0, abs=1e-9)


def test_expected_tokens_at_zero_acceptance_is_the_bonus_token():
    assert expected_tokens_per_cycle(0.0, 4) == 1.0


@pytest.mark.parametrize("p", [-0.01, 1.01, math.nan])
def test_expected_tokens_rejects_acceptance_outside_unit_interval(p):
    with pytest.raises(ValueError):
        expected_tokens_per_cycle(p, 2)


def test_projection_swaps_verify_time_in_the_cycle():
    # T' = 4.6 - 4.08 + 3.6 = 4.12 ms -> 2.2 / 0.00412 s
    assert projected_throughput(2.2, 4.6, 4.08, 3.6) == pytest.approx(533.98, abs=0.01)


def test_projection_rejects_a_verify_that_leaves_no_cycle():
    with pytest.raises(ValueError):
        projected_throughput(2.2, 4.6, 4.08, -0.52)


def test_margin_is_absolute_and_percent_of_break_even():
    m = margin(2.2, 243.83, 4.6)
    assert m["break_even"] == pytest.approx(1.121618)
    assert m["tokens_per_cycle"] == pytest.approx(1.078382)
    assert m["pct"] == pytest.approx(96.145, abs=0.001)


def test_margin_has_no_percentage_against_a_zero_baseline():
    assert margin(2.2, 0.0, 4.6)["pct"] is None


# required_acceptance edges

def test_target_beyond_steps_plus_one_tokens_is_impossible():
    # 2 steps give at most 3 tokens/cycle = 652 tok/s at 4.6 ms
    assert required_acceptance(700, steps=2, cycle_ms=4.6) is None


def test_target_within_one_token_per_cycle_needs_zero_acceptance():
    assert required_acceptance(1000 / 4.6, steps=2, cycle_ms=4.6) == 0.0
    assert required_acceptance(100, steps=2, cycle_ms=4.6) == 0.0


def test_target_at_exactly_steps_plus_one_needs_full_acceptance():
    assert required_acceptance(3 / 0.0046, steps=2, cycle_ms=4.6) == pytest.approx(1.0)


def test_required_acceptance_rejects_zero_cycle():
    with pytest.raises(ValueError):
        required_acceptance(150, steps=3, cycle_ms=0.0)


def test_zero_steps_can_only_reach_one_token_per_cycle():
    assert implied_acceptance(1.0, 0) == 0.0
    assert implied_acceptance(1.5, 0) is None


def test_run_cannot_beat_baseline_when_full_acceptance_is_below_break_even():
    # break-even 88 * 0.0460 = 4.05 tokens; 3 steps give at most 4
    assert not can_beat_baseline(88.0, steps=3, cycle_ms=46.0)
    assert can_beat_baseline(88.0, steps=4, cycle_ms=46.0)


# Properties

@given(acceptances, acceptances, step_counts)
def test_expected_tokens_grows_with_acceptance(p1, p2, k):
    lo, hi = sorted((p1, p2))
    assert expected_tokens_per_cycle(lo, k) <= expected_tokens_per_cycle(hi, k)


@given(acceptances, step_counts)
def test_expected_tokens_grows_with_steps(p, k):
    assert expected_tokens_per_cycle(p, k) <= expected_tokens_per_cycle(p, k + 1)


@given(acceptances, st.integers(min_value=1, max_value=8), st.floats(min_value=0.5, max_value=100.0))
def test_required_acceptance_round_trips_to_the_target_tokens(p, k, cycle_ms):
    target = expected_tokens_per_cycle(p, k) / (cycle_ms / 1000)
    solved = required_acceptance(target, k, cycle_ms)
    assert solved is not None
    assert expected_tokens_per_cycle(solved, k) == pytest.approx(target * cycle_ms / 1000, abs=1e-8)


@given(st.floats(min_value=0.0, max_value=2000.0), st.floats(min_value=0.0, max_value=2000.0),
       st.integers(min_value=1, max_value=6), st.floats(min_value=0.5, max_value=50.0))
def test_required_acceptance_grows_with_target(r1, r2, k, cycle_ms):
    lo, hi = sorted((r1, r2))
    p_lo, p_hi = required_acceptance(lo, k, cycle_ms), required_acceptance(hi, k, cycle_ms)
    if p_lo is None:  # impossible stays impossible for a higher target
        assert p_hi is None
    elif p_hi is not None:
        assert p_lo <= p_hi


# Curve

def test_curve_has_one_series_per_step_count_at_the_cycle_time():
    series = acceptance_curve(4.6, p_values=[0.0, 0.5, 1.0])
    assert [s["steps"] for s in series] == [1, 2, 3, 4, 5]
    five = series[-1]
    assert five["p"] == [0.0, 0.5, 1.0]
    assert five["tokens_per_cycle"] == [1.0, pytest.approx(1.96875), 6.0]
    assert five["throughput_tok_s"][-1] == pytest.approx(6 / 0.0046)


# Verdict sentences

def test_verdict_says_when_no_acceptance_can_beat_the_baseline():
    assert "cannot beat its baseline at any acceptance" in verdict(3.5, 3, 46.0, 88.0)


def test_verdict_below_break_even_names_the_acceptance_to_match():
    sentence = verdict(1.92, 3, 27.7, 88.8)
    assert "below the break-even 2.46" in sentence
    assert "acceptance of 0.68 with 3 steps" in sentence  # 1 + p + p^2 + p^3 = 2.46 at p ~= 0.681


# analysis() with the GPU sample's 2-step tuned run and its baseline

@pytest.fixture
def tuned_analysis():
    return analysis(TUNED_2STEP, BASELINE, target_tok_s=600, best_verify_ms=3.6)


def test_analysis_places_the_run_at_its_implied_acceptance(tuned_analysis):
    run = tuned_analysis["run"]
    # 2.2 / 4.6 ms; 1 + p + p^2 = 2.2 -> p = (sqrt(5.8) - 1) / 2
    assert run["modelled_tok_s"] == pytest.approx(478.26, abs=0.01)
    assert run["implied_acceptance"] == pytest.approx((math.sqrt(5.8) - 1) / 2, abs=1e-9)


def test_analysis_break_even_against_the_baseline(tuned_analysis):
    be = tuned_analysis["break_even"]
    # 243.83 tok/s * 4.6 ms = 1.1216 tokens/cycle; 1 + p + p^2 = 1.1216 -> p ~= 0.1096
    assert be["tokens_per_cycle"] == pytest.approx(1.121618)
    assert be["acceptance"] == pytest.approx((math.sqrt(1 + 4 * 0.121618) - 1) / 2, abs=1e-9)
    assert be["can_beat"] is True


def test_analysis_margin_is_almost_double_break_even(tuned_analysis):
    assert tuned_analysis["margin"]["tokens_per_cycle"] == pytest.approx(1.078382)
    assert tuned_analysis["margin"]["pct"] == pytest.approx(96.15, abs=0.01)


def test_analysis_required_acceptance_for_600_tok_s(tuned_analysis):
    req = tuned_analysis["required_acceptance"]
    # 600 * 4.6 ms = 2.76 tokens; 1 + p + p^2 = 2.76 -> p = (sqrt(8.04) - 1) / 2 ~= 0.918
    assert req["tokens_per_cycle"] == pytest.approx(2.76)
    assert req["acceptance"] == pytest.approx((math.sqrt(8.04) - 1) / 2, abs=1e-9)


def test_analysis_projects_a_faster_verify(tuned_analysis):
    proj = tuned_analysis["projection"]
    assert proj["new_cycle_ms"] == pytest.approx(4.12)
    assert proj["throughput_tok_s"] == pytest.approx(533.98, abs=0.01)
    assert proj["change_pct"] == pytest.approx(11.65, abs=0.01)  # 4.6 / 4.12 - 1


def test_analysis_curve_marks_the_run_and_the_baseline(tuned_analysis):
    curve = tuned_analysis["curve"]
    assert len(curve["series"]) == 5
    assert curve["baseline_tok_s"] == 243.83
    assert curve["run_point"]["steps"] == 2


def test_analysis_verdict_reports_the_margin(tuned_analysis):
    assert tuned_analysis["verdict"] == (
        "This run makes 2.20 tokens/cycle, 1.08 above the break-even 1.12 (+96%) "
        "against a 243.8 tok/s baseline at 4.60 ms/cycle."
    )


def test_analysis_out_of_reach_target_is_none_with_reason():
    req = analysis(TUNED_2STEP, BASELINE, target_tok_s=700)["required_acceptance"]
    assert req["acceptance"] is None
    assert "at most 3" in req["reason"]


def test_analysis_without_baseline_leaves_break_even_empty_with_reason():
    result = analysis(TUNED_2STEP, None)
    assert result["break_even"]["tokens_per_cycle"] is None
    assert result["break_even"]["reason"] == "no baseline run"
    assert result["margin"]["pct"] is None
    assert result["verdict"] == "No break-even verdict: no baseline run."


def test_analysis_against_zero_baseline_has_margin_but_no_percentage():
    m = analysis(TUNED_2STEP, {"throughput_tok_s": 0.0})["margin"]
    assert m["tokens_per_cycle"] == pytest.approx(2.2)
    assert m["pct"] is None and m["reason"]


@pytest.mark.parametrize("cycle_ms", [None, 0.0])
def test_analysis_without_cycle_time_gives_reasons_not_errors(cycle_ms):
    result = analysis({**TUNED_2STEP, "cycle_ms": cycle_ms}, BASELINE, target_tok_s=600, best_verify_ms=3.6)
    for section in ("break_even", "margin", "required_acceptance", "projection", "curve"):
        assert result[section]["reason"], section
    assert result["run"]["modelled_tok_s"] is None
    assert result["curve"]["series"] == []
    # acceptance implied by tokens per cycle and steps does not need a cycle time
    assert result["run"]["implied_acceptance"] == pytest.approx(0.704, abs=0.001)


def test_analysis_of_an_empty_summary_raises_nothing():
    result = analysis({}, {}, target_tok_s=None, best_verify_ms=None)
    assert result["run"]["modelled_tok_s"] is None
    assert result["break_even"]["reason"] == "the baseline run has no throughput"
    assert result["projection"]["reason"]


def test_no_verify_projection_for_the_run_whose_verify_is_already_the_fastest():
    result = analysis(TUNED_2STEP, BASELINE, best_verify_ms=TUNED_2STEP["verify_ms"])
    assert result["projection"]["throughput_tok_s"] is None
    assert result["projection"]["reason"] == "verify is already the fastest compared"
