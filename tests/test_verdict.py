"""A run's verdict against its baseline: per-figure deltas, the noise rule, the overall word, the gate."""

from __future__ import annotations

import pytest

from runs.compare import RunInput, judge
from runs.verdict import gate, verdict, worse_beyond_noise_pct


def run(rid: int, tput: float, cycle: float = 4.5, verify: float = 4.0, noise: float = 0.0,
        config: dict | None = None, phases: list | None = None) -> RunInput:
    parsed = {"summary": {"throughput_tok_s": tput, "tokens_per_cycle": 2.2, "cycle_ms": cycle},
              "phases": phases if phases is not None else [{"name": "Target verify", "ms": verify, "pct": 88.0}]}
    # Eight windows spread evenly around the median: half the IQR is about `noise`.
    series = {"throughput_tok_s": [(i + 1, tput + noise * (i - 3.5) / 2, None) for i in range(8)]}
    return RunInput(id=rid, name=f"run{rid}", parsed=parsed, series=series,
                    config={k: {"value": v, "source": "x"} for k, v in (config or {}).items()})


def test_slower_run_beyond_the_noise_is_a_regression():
    out = verdict(run(2, 450.0), run(1, 500.0, noise=2.0))
    assert out["verdict"] == "regression"
    tput = out["figures"][0]
    assert tput["key"] == "throughput_tok_s" and tput["delta_pct"] == -10.0 and tput["direction"] == "worse"
    assert out["headline"].startswith("Regression: run2 is slower than run1 (450.0 vs 500.0 tok/s, -10.0%")
    assert any(r.startswith("Throughput worse") for r in out["reasons"])


def test_faster_run_is_an_improvement():
    assert verdict(run(2, 540.0), run(1, 500.0))["verdict"] == "improvement"


def test_change_inside_the_noise_is_no_change():
    out = verdict(run(2, 495.0, noise=40.0), run(1, 500.0, noise=40.0))
    assert out["verdict"] == "no change"
    assert out["figures"][0]["significant"] is False and out["figures"][0]["noise"] > 5


def test_change_under_one_percent_is_no_change_even_without_noise():
    assert verdict(run(2, 497.0), run(1, 500.0))["verdict"] == "no change"


def test_different_models_are_not_comparable_with_the_reason():
    out = verdict(run(2, 450.0, config={"model": "qwen"}), run(1, 500.0, config={"model": "llama"}))
    assert out["verdict"] == "not comparable"
    assert out["reasons"] == ["model differ: llama vs qwen"]


def test_missing_baseline_is_not_comparable_with_why():
    out = verdict(run(2, 450.0), None, "pinned", "project team has no pinned baseline")
    assert out["verdict"] == "not comparable" and out["reasons"] == ["project team has no pinned baseline"]


def test_each_phase_gets_its_delta_and_verify_appears_once():
    phases = [{"name": "Draft", "ms": 0.2, "pct": 4.0}, {"name": "Target verify", "ms": 4.4, "pct": 90.0}]
    base_phases = [{"name": "Draft", "ms": 0.2, "pct": 4.0}, {"name": "Target verify", "ms": 4.0, "pct": 89.0}]
    out = verdict(run(2, 450.0, phases=phases), run(1, 500.0, phases=base_phases))
    rows = {f["key"]: f for f in out["figures"]}
    assert rows["verify_ms"]["delta"] == pytest.approx(0.4) and rows["verify_ms"]["direction"] == "worse"
    assert rows["phase:Draft"]["delta"] == 0 and rows["phase:Draft"]["significant"] is False
    assert "phase:Target verify" not in rows  # verify_ms already is that phase


def test_worse_beyond_noise_subtracts_the_noise():
    assert worse_beyond_noise_pct(judge(450.0, 500.0, 10.0, 4.0, "higher"), 500.0) == pytest.approx(8.0)
    assert worse_beyond_noise_pct(judge(4.0, 4.5, 0.0, 0.0, "lower"), 4.5) == 0.0  # better, not worse


@pytest.mark.parametrize(("tput", "fails"), [(450.0, True), (490.0, False), (540.0, False)])
def test_gate_fails_only_past_the_threshold_beyond_noise(tput, fails):
    out = verdict(run(2, tput), run(1, 500.0))
    assert gate(out, "throughput_tok_s", 3)["fail"] is fails


def test_gate_on_an_unknown_metric_says_so_and_passes():
    g = gate(verdict(run(2, 450.0), run(1, 500.0)), "nope", 3)
    assert g["fail"] is False and "no figure 'nope'" in g["text"]


TUNED = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}
DRIFT = [{"key": "NCCL_ALGO", "declared": "Ring", "effective": None, "ranks": ["0", "1"], "declared_line": 1},
         {"key": "NCCL_PROTO", "declared": "LL", "effective": "Simple", "ranks": ["1"], "declared_line": 1}]


def with_nccl(r: RunInput, effective: dict | None, drift: list | None = None) -> RunInput:
    status = "unknown" if effective is None else "drift" if drift else "ok"
    r.parsed["nccl"] = {"status": status, "effective": effective or {}, "drift": drift or []}
    return r


def test_drifted_run_is_never_a_plain_improvement():
    # The baseline's workers had what this run's had, so the figures compare; the drift is still said first.
    out = verdict(with_nccl(run(2, 540.0), {}, DRIFT), with_nccl(run(1, 500.0), {}))
    assert out["verdict"] == "improvement"
    assert out["nccl"]["alarm"] is True and out["nccl"]["status"] == "drift" and out["nccl"]["differs"] == []
    assert out["nccl"]["drift"] == [{**{k: d[k] for k in ("key", "declared", "effective", "ranks")}, "launch": None}
                                    for d in DRIFT]
    assert out["headline"].startswith(
        "NCCL drift in run2: the workers never got 1 NCCL variable the launcher declared (NCCL_ALGO); "
        "1 reached them with another value (NCCL_PROTO LL → Simple). Improvement: run2 is faster than run1")
    assert out["title"] == "runlens: improvement · NCCL drift: 2 declared variables did not reach the workers as declared"


def test_different_effective_nccl_settings_are_not_comparable_with_each_variable():
    out = verdict(with_nccl(run(2, 540.0), {"NCCL_ALGO": "Tree"}), with_nccl(run(1, 500.0), TUNED))
    assert out["verdict"] == "not comparable"
    assert out["reasons"] == ["effective NCCL settings differ: NCCL_ALGO Ring vs Tree, NCCL_PROTO LL vs unset"]
    assert out["nccl"]["differs"] == [{"key": "NCCL_ALGO", "run": "Tree", "baseline": "Ring"},
                                      {"key": "NCCL_PROTO", "run": None, "baseline": "LL"}]
    assert out["nccl"]["alarm"] is False
    assert out["title"] == "runlens: not comparable · NCCL settings differ from the baseline's (2 variables)"


def test_unknown_nccl_settings_say_nothing_about_differences():
    out = verdict(with_nccl(run(2, 540.0), None), with_nccl(run(1, 500.0), TUNED))
    assert out["verdict"] == "improvement" and out["title"] == "runlens: improvement"
    assert out["nccl"] == {"status": "unknown", "baseline_status": "ok", "drift": [], "differs": None,
                           "alarm": False, "short": "", "sentence": ""}


def test_a_drifted_run_without_baseline_still_says_so():
    out = verdict(with_nccl(run(2, 540.0), {}, DRIFT), None, "pinned", "no pinned baseline")
    assert out["nccl"]["differs"] is None and out["nccl"]["baseline_status"] is None
    assert out["headline"].startswith("NCCL drift in run2: ") and out["headline"].endswith(
        "run2: not comparable: no pinned baseline.")


def test_every_figure_carries_the_text_the_pages_show():
    # 4.255 and 3.775 are stored as 4.25499... and 3.77499...: formatting the binary value said 4.25 / 3.77.
    out = verdict(run(2, 489.55, cycle=4.45, verify=4.05), run(1, 522.7, cycle=4.255, verify=3.775))
    rows = {f["key"]: f["text"] for f in out["figures"]}
    assert rows["throughput_tok_s"] == {"value": "489.6", "baseline": "522.7", "delta": "-33.2", "delta_pct": "-6.3",
                                        "noise": "0.0", "worse_beyond_noise_pct": "6.3"}
    assert rows["cycle_ms"]["baseline"] == "4.26" and rows["verify_ms"]["baseline"] == "3.78"
    assert gate(out, "throughput_tok_s", 3)["text"] == "Throughput 6.3% worse beyond the noise (over the 3% limit)"
