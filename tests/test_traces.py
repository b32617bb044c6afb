"""runs/traces.py and runs/trace_charts.py: range names to phases, per-phase figures over cycles,
agreement with the log, deltas by class and the headline, the CSV. Pure: no database."""

from __future__ import annotations

import pytest

from runs import trace_charts, traces


def _rank(phases: dict[str, list[tuple[int, float, float, dict]]]) -> dict:
    """A stored rank of ranges {name: [(cycle, wall, busy, by_class)]}, ranges one after another."""
    ranges = {}
    for k, (name, cycles) in enumerate(phases.items()):
        ranges[name] = {"cycles": [
            {"cycle": c, "cycle_from": "cycle", "event": 100 * c + k, "ts_us": 1e6 * c + 1e3 * k, "wall_ms": w,
             "busy_ms": b, "kernels": 10, "launches": 10, "by_class": by, "top": []} for c, w, b, by in cycles],
            "top": [{"kernel": 0, "ms": 1.0, "count": 2, "event": 7, "ts_us": 1.5}]}
    return {"device": 0, "ranges_from": "gpu", "cycles_from": "cycle", "kernels": 10, "launches": 10, "streams": [7],
            "span_ms": 100.0, "busy_ms": 20.0, "kernel_ms": 20.0, "outside_ranges_ms": 0.0, "by_class": {},
            "ranges": ranges, "timelines": {}}


def _trace(rank: dict, mapping=None) -> dict:
    return traces.run_trace([{"logfile": 1, "name": "t.json", "trace": {"ranks": [rank], "kernel_names": ["k0"],
                                                                         "warnings": []}}], mapping)


@pytest.mark.parametrize(("name", "phase"), [
    ("draft", "Draft"), ("Draft Forward", "Draft"), ("eagle_draft", "Draft"), ("draft_extend", "Draft extend"),
    ("target_verify", "Target verify"), ("verify", "Target verify"), ("forward_target_verify", "Target verify"),
    ("accept", "Accept"), ("rejection_sampling", "Accept"), ("decode_forward", "Target forward"),
    ("cycle_3", None), ("ProfilerStep#4", None), ("layer_12", None),
])
def test_range_names_that_are_phases(name, phase):
    assert traces.phase_of(name) == phase


def test_a_persons_mapping_wins_and_blank_means_not_a_phase():
    assert traces.phase_of("big_forward", {"big_forward": "Target verify"}) == "Target verify"
    assert traces.phase_of("draft", {"draft": ""}) is None


def test_phase_figures_are_means_per_cycle_and_idle_over_all_cycles():
    t = _trace(_rank({"draft": [(1, 10.0, 2.0, {"GEMM": 1.5, "Other": 0.5}), (2, 30.0, 4.0, {"GEMM": 4.0})]}))
    p = t["ranks"][0]["phases"][0]
    assert (p["wall_ms"], p["busy_ms"], p["wall_median_ms"]) == (20.0, 3.0, 20.0)
    assert p["idle_share"] == pytest.approx(1 - 6 / 40)
    assert p["by_class"] == {"GEMM": 2.75, "Other": 0.25}
    assert [c["idle_share"] for c in p["per_cycle"]] == [0.8, pytest.approx(0.8667, abs=1e-4)]


def test_two_range_names_mapped_to_one_phase_add_up_per_cycle():
    rank = _rank({"verify_a": [(1, 5.0, 1.0, {"GEMM": 1.0})], "verify_b": [(1, 3.0, 2.0, {"NCCL AllReduce RING_LL": 2.0})]})
    t = _trace(rank, {"verify_a": "Target verify", "verify_b": "Target verify"})
    p = t["ranks"][0]["phases"][0]
    assert (p["name"], p["ranges"], p["wall_ms"], p["busy_ms"]) == ("Target verify", ["verify_a", "verify_b"], 8.0, 3.0)
    assert p["by_class"] == {"NCCL AllReduce RING_LL": 2.0, "GEMM": 1.0}


def test_phases_are_in_the_order_a_cycle_runs_them():
    t = _trace(_rank({"accept": [(1, 1.0, 0.1, {})], "draft": [(1, 1.0, 0.1, {})]}))
    # _rank places ranges in the order given: accept first in each cycle here
    assert [p["name"] for p in t["ranks"][0]["phases"]] == ["Accept", "Draft"]


def test_unmapped_ranges_are_listed_with_a_message():
    t = _trace(_rank({"layer_0": [(1, 1.0, 0.5, {})]}))
    assert t["ranks"][0]["phases"] == [] and t["ranks"][0]["unmapped"][0]["name"] == "layer_0"
    assert "map them to phases on the run page" in t["messages"][0]


def test_agreement_within_the_profilers_overhead():
    phases = [{"name": "Target verify", "wall_median_ms": 20.0}, {"name": "Draft", "wall_median_ms": 5.0}]
    got = traces.agreement(phases, [{"name": "Target verify", "ms": 19.0}, {"name": "Draft", "ms": 3.0}])
    assert [(a["phase"], a["agree"]) for a in got] == [("Target verify", True), ("Draft", False)]
    assert "more than the profiler's overhead" in got[1]["note"]


def _summary(verify_wall: float, verify_busy: float, by_class: dict) -> dict:
    return {"ranks": [{"phases": [{"name": "Target verify", "wall_ms": verify_wall, "busy_ms": verify_busy,
                                   "idle_share": 1 - verify_busy / verify_wall, "by_class": by_class,
                                   "event": 1, "ts_us": 2.0}]}]}


def test_one_class_explaining_a_phase_change_makes_the_headline():
    base = _summary(19.1, 15.0, {"NCCL AllReduce NVLS_SIMPLE": 4.0, "GEMM": 10.0})
    run = _summary(30.0, 25.9, {"NCCL AllReduce RING_LL": 9.8, "NCCL AllReduce NVLS_SIMPLE": 4.0, "GEMM": 11.1})
    deltas = traces.compare(run, base)
    assert deltas[0]["explained_by"] == {"class": "NCCL AllReduce RING_LL", "ms": 9.8}
    assert traces.headline(deltas) == ["Target verify +10.9 ms: NCCL AllReduce RING_LL +9.8 ms"]


def test_a_change_no_class_explains_but_idle_does_says_gpu_idle():
    deltas = traces.compare(_summary(12.0, 3.0, {"GEMM": 3.0}), _summary(8.0, 3.0, {"GEMM": 3.0}))
    assert traces.headline(deltas) == ["Target verify +4.0 ms: GPU idle +4.0 ms"]


def test_a_spread_out_change_names_no_class():
    deltas = traces.compare(_summary(14.0, 14.0, {"GEMM": 7.0, "Attention": 7.0}),
                            _summary(10.0, 10.0, {"GEMM": 5.0, "Attention": 5.0}))
    assert deltas[0]["explained_by"] is None and traces.headline(deltas) == []


def test_idle_notes_name_launch_bound_phases():
    rank = {"phases": [{"name": "Target verify", "idle_share": 0.8, "wall_ms": 20.0},
                       {"name": "Draft", "idle_share": 0.3, "wall_ms": 5.0},
                       {"name": "Accept", "idle_share": 0.9, "wall_ms": 0.5}]}
    assert traces.idle_notes(rank) == ["Target verify is 80% idle: launch-bound; CUDA graphs would help"]


def test_csv_has_a_row_per_phase_and_cycle():
    t = _trace(_rank({"draft": [(1, 10.0, 2.0, {"GEMM": 2.0}), (2, 10.0, 1.0, {"Other": 1.0})]}))
    header, rows = traces.csv_rows(t)
    assert header[-2:] == ["GEMM ms", "Other ms"]
    assert [r[5] for r in rows] == [1, 2] and rows[0][-2:] == [2.0, 0.0]


def test_stacked_bar_adds_up_to_the_wall_time():
    t = _trace(_rank({"draft": [(1, 10.0, 2.0, {"GEMM": 1.5, "Other": 0.5})]}))
    fig = trace_charts.phase_classes(t["ranks"][0], [{"phase": "Draft", "log_ms": 9.5}])
    bars = [d for d in fig["data"] if d["type"] == "bar"]
    assert sum(d["y"][0] for d in bars) == pytest.approx(10.0)
    assert fig["data"][-1]["y"] == [9.5]
