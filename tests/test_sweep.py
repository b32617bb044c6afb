"""The sweep analysis on the project's own sweep samples (golden figures) and on synthetic sweeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.parsers import parse_stream
from runs.specdecode import expected_tokens_per_cycle
from runs.summary import summarize
from runs.sweep import SweepRun, fit, fit_acceptance, fit_cycle, sweep, to_csv_rows

SWEEP_DIR = Path(__file__).parent.parent / "samples" / "sweep"


def sample_runs() -> list[SweepRun]:
    """The recorded sweep as the page would fetch it: one run per log, ids in file order."""
    runs = []
    for i, path in enumerate(sorted(SWEEP_DIR.glob("*.log")), 1):
        with open(path, "rb") as f:
            d = summarize(parse_stream(f))
        s = d["summary"]
        verify = next((p["ms"] for p in d["phases"] if "verify" in p["name"].lower()), None)
        runs.append(SweepRun(i, path.stem, d["spec"]["steps"], s["throughput_tok_s"], s["tokens_per_cycle"],
                             s["cycle_ms"], verify, {"engine": d["engine"]}, d["nccl"]["effective"],
                             d["nccl"]["status"]))
    return runs


@pytest.fixture(scope="module")
def result() -> dict:
    return sweep(sample_runs())


def group(result: dict, label: str) -> dict:
    return next(g for g in result["groups"] if g["label"] == label)


def test_samples_split_into_default_tuned_and_dropped_groups(result):
    labels = [g["label"] for g in result["groups"]]
    assert labels == ["default NCCL", "NCCL_CUMEM_ENABLE=0", "tuned NCCL"]
    assert [p["steps"] for p in group(result, "default NCCL")["points"]] == [1, 2, 3, 4, 5]
    assert [p["steps"] for p in group(result, "tuned NCCL")["points"]] == [1, 2, 3, 4, 5]
    assert group(result, "NCCL_CUMEM_ENABLE=0")["points"][0]["name"] == "sweep_dropped_2step"


def test_nccl_debug_does_not_split_groups():
    a = SweepRun(1, "a", 1, 100.0, 1.5, 4.0, nccl_effective={"NCCL_DEBUG": "INFO"}, nccl_status="ok")
    b = SweepRun(2, "b", 2, 110.0, 2.0, 4.1, nccl_effective={"NCCL_DEBUG": "WARN"}, nccl_status="ok")
    assert len(sweep([a, b])["groups"]) == 1


def test_best_points_are_default_5_step_and_tuned_5_step(result):
    assert group(result, "default NCCL")["best"]["name"] == "sweep_default_5step"
    assert group(result, "default NCCL")["best"]["throughput_tok_s"] == pytest.approx(692.35)
    assert group(result, "tuned NCCL")["best"]["name"] == "sweep_tuned_5step"
    assert group(result, "tuned NCCL")["best"]["throughput_tok_s"] == pytest.approx(646.3)


def test_no_speculation_run_is_every_groups_baseline(result):
    for g in result["groups"]:
        assert g["baseline"]["name"] == "sweep_baseline_nospec"
    assert group(result, "default NCCL")["baseline"]["same_nccl"] is True
    assert group(result, "tuned NCCL")["baseline"]["same_nccl"] is False


def test_headline_says_tuned_wins_early_and_default_wins_overall(result):
    assert result["headline"] == [
        "Tuned NCCL wins at 1–2 steps, default NCCL from 3; best overall default NCCL 5-step, 692.4 tok/s."
    ]


def test_group_headline_names_best_gain_and_prediction(result):
    text = group(result, "tuned NCCL")["headline"]
    assert text.startswith("tuned NCCL: best 5-step, 646.3 tok/s (+150% over no speculation, 259.0 tok/s)")
    assert "predicted best: 8 steps, +3% over 5, untested" in text


def test_dropped_run_is_flagged_and_not_fitted(result):
    g = group(result, "NCCL_CUMEM_ENABLE=0")
    assert g["drift"] == [g["points"][0]["run_id"]]
    assert g["fit"]["curve"] == [] and "one step count" in g["fit"]["reason"]
    assert "NCCL drift" in g["headline"]


def test_fit_on_samples_recovers_the_recorded_acceptance(result):
    # The recorder drew acceptance at random per position with p = 0.7 (samples/README.md).
    for label in ("default NCCL", "tuned NCCL"):
        f = group(result, label)["fit"]
        assert f["p"] == pytest.approx(0.70, abs=0.01)
        assert f["p_low"] <= f["p"] <= f["p_high"]


def test_tuned_fit_has_positive_step_cost_and_band_around_curve(result):
    f = group(result, "tuned NCCL")["fit"]
    assert f["cost_per_step_ms"] == pytest.approx(0.0825, abs=1e-3)
    assert [c["steps"] for c in f["curve"]] == list(range(1, 9))
    assert all(c["low_tok_s"] <= c["throughput_tok_s"] <= c["high_tok_s"] for c in f["curve"])
    assert [c["tested"] for c in f["curve"]] == [True] * 5 + [False] * 3


def test_falling_cycle_time_is_noise_and_cost_is_clamped_to_zero(result):
    f = group(result, "default NCCL")["fit"]
    assert f["cost_per_step_ms"] == 0.0
    assert "cycle time fell" in f["notes"][0]


def synthetic(p: float, t0: float, cost: float, steps=(1, 2, 3, 4)) -> list[SweepRun]:
    runs = []
    for k in steps:
        tau = expected_tokens_per_cycle(p, k)
        cycle = t0 + cost * k
        runs.append(SweepRun(k, f"s{k}", k, 1000 * tau / cycle, tau, cycle))
    return runs


def test_fit_recovers_exact_acceptance_and_cost():
    f = fit(synthetic(0.6, 4.0, 0.5))
    assert f["p"] == pytest.approx(0.6, abs=1e-4)
    assert f["cost_per_step_ms"] == pytest.approx(0.5, abs=1e-4)
    assert f["base_cycle_ms"] == pytest.approx(4.0, abs=1e-4)


def test_expensive_steps_predict_a_tested_peak():
    # p = 0.6 and 1 ms per step: throughput peaks at 2 steps, which was measured.
    f = fit(synthetic(0.6, 4.0, 1.0))
    assert f["predicted_best"]["steps"] == 2 and f["predicted_best"]["tested"]
    assert f["predicted_best"]["text"] == "the model agrees: 2 steps is best"


def test_cheap_steps_predict_an_untested_step_count_with_its_gain():
    f = fit(synthetic(0.85, 4.0, 0.1, steps=(1, 2, 3)))
    pb = f["predicted_best"]
    assert not pb["tested"] and pb["steps"] > 3 and pb["vs_steps"] == 3
    at = {c["steps"]: c["throughput_tok_s"] for c in f["curve"]}
    assert pb["gain_pct"] == pytest.approx(100 * (at[pb["steps"]] / at[3] - 1), abs=0.05)


def test_fit_acceptance_finds_least_squares_p():
    assert fit_acceptance([(1, 1.5), (3, expected_tokens_per_cycle(0.5, 3))]) == pytest.approx(0.5, abs=1e-6)
    assert fit_acceptance([(2, 3.0)]) == pytest.approx(1.0, abs=1e-6)


def test_fit_cycle_refuses_a_single_step_count():
    with pytest.raises(ValueError):
        fit_cycle([(2, 4.0), (2, 4.2)])


def test_runs_without_figures_are_skipped_with_a_reason():
    runs = [SweepRun(1, "no tput", 2, None, 2.0, 4.0), SweepRun(2, "no steps", None, 300.0, 2.0, 4.0)]
    out = sweep(runs)
    assert out["groups"] == []
    assert [s["reason"] for s in out["skipped"]] == [
        "no throughput in its logs", "tokens per cycle but no draft step count (set it on the run page)"]


def test_different_models_never_share_a_group_or_a_baseline():
    a = SweepRun(1, "a", 2, 500.0, 2.2, 4.4, config={"model": "llama"})
    b = SweepRun(2, "b", 2, 400.0, 2.2, 4.4, config={"model": "qwen"})
    base = SweepRun(3, "base", None, 250.0, None, 4.0, config={"model": "qwen"})
    out = sweep([a, b, base])
    assert len(out["groups"]) == 2
    by_name = {g["points"][0]["name"]: g for g in out["groups"]}
    assert by_name["a"]["baseline"] is None
    assert by_name["b"]["baseline"]["name"] == "base"


def test_csv_has_measured_predicted_and_baseline_rows(result):
    rows = to_csv_rows(result)
    kinds = [r[1] for r in rows[1:]]
    assert kinds.count("measured") == 11 and kinds.count("predicted") == 16 and kinds.count("baseline") == 1
