"""runs.compare without a database: deltas, noise, config diff, comparability, headline."""

from decimal import Decimal

from runs.compare import RunInput, compare, config_diff, spread, to_csv_rows


def _run(id, name, tput, tpc, cycle, verify, *, series=None, config=None, nccl=None, phases=None):
    return RunInput(
        id=id, name=name,
        parsed={
            "summary": {"throughput_tok_s": tput, "tokens_per_cycle": tpc, "cycle_ms": cycle, "windows": 6},
            "phases": phases if phases is not None else [
                {"name": "Draft", "ms": 0.2, "pct": 4.0, "windows": 6},
                {"name": "Target verify", "ms": verify, "pct": 95.0, "windows": 6},
            ],
            "nccl": nccl or {"status": "ok", "drift": []},
        },
        series=series or {}, config=config or {},
    )


STORY_A = _run(1, "2-step", 94.0, 1.92, 20.4, 19.14)
STORY_B = _run(2, "3-step", 61.7, 1.97, 31.9, 30.0, nccl={"status": "drift", "drift": [
    {"key": k}
    for k in ["NCCL_PROTO", "NCCL_ALGO", "NCCL_P2P_LEVEL", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS"]
]})


def test_story_verify_delta_and_throughput_drop():
    result = compare([STORY_A, STORY_B], baseline_id=1)
    verify = next(p for p in result["phases"] if p["name"] == "Target verify")
    assert verify["runs"][2]["delta_ms"] == 10.86
    tput = next(m for m in result["metrics"] if m["key"] == "throughput_tok_s")
    assert tput["runs"][2]["delta_pct"] == -34.36 and tput["runs"][2]["verdict"] == "worse"


def test_headline_tells_the_story_in_order():
    texts = [h["text"] for h in compare([STORY_A, STORY_B], 1)["headline"]]
    assert texts[0] == "3-step is 34.4% slower than 2-step (61.7 vs 94.0 tok/s)."
    assert texts[1].startswith("Target verify +10.86 ms/cyc in 3-step (19.14 → 30.00, 95.0% of the cycle)")
    assert "never got 6 NCCL variables" in texts[2] and "NCCL_PROTO" in texts[2]


def test_baseline_comes_first_whatever_the_order_given():
    result = compare([STORY_A, STORY_B], baseline_id=2)
    assert [r["id"] for r in result["runs"]] == [2, 1] and result["baseline"] == 2


def test_change_inside_the_noise_is_not_a_regression():
    noisy = {"throughput_tok_s": [(i, v, i) for i, v in enumerate([90, 100, 95, 105, 92, 99, 101, 94])]}
    a = _run(1, "a", 96.0, 2.0, 20, 19, series=noisy)
    b = _run(2, "b", 94.5, 2.0, 20, 19, series=noisy)
    cell = next(m for m in compare([a, b], 1)["metrics"] if m["key"] == "throughput_tok_s")["runs"][2]
    assert cell["noise"] > 1.5 and not cell["significant"] and cell["verdict"] is None


def test_verify_of_a_speculative_run_is_compared_with_the_baselines_target_forward():
    base = _run(1, "no spec", 243.8, None, 4.1, None, phases=[{"name": "Target forward", "ms": 4.10, "pct": 100.0}])
    spec = _run(2, "eagle", 472.8, 2.2, 4.6, 4.08)
    verify = next(p for p in compare([base, spec], 1)["phases"] if p["name"] == "Target verify")
    assert verify["runs"][2]["delta_ms"] == -0.02 and verify["baseline_as"] == "Target forward"


def test_config_diff_marks_only_differing_keys():
    a = _run(1, "a", 1, 1, 1, 1, config={"spec.steps": {"value": 2}, "tp_size": {"value": 2}})
    b = _run(2, "b", 1, 1, 1, 1, config={"spec.steps": {"value": 3}, "tp_size": {"value": 2}})
    rows = {r["key"]: r["differs"] for r in config_diff([a, b])}
    assert rows == {"spec.steps": True, "tp_size": False}


def test_different_steps_make_runs_not_comparable():
    a = _run(1, "a", 1, 1, 1, 1, config={"spec.steps": {"value": 2}})
    b = _run(2, "b", 1, 1, 1, 1, config={"spec.steps": {"value": 3}})
    verdict = compare([a, b], 1)["comparable"]
    assert not verdict["ok"] and verdict["differences"][0]["text"] == "steps differ: 2 vs 3"


def test_spread_is_half_the_interquartile_range():
    assert spread([1, 2, 3]) is None
    # Quartiles interpolated between windows (statistics.quantiles, inclusive): 27.5 and 62.5.
    assert spread([10, 20, 30, 40, 50, 60, 70, 80]) == 17.5


def test_csv_has_one_row_per_run_and_figure():
    rows = to_csv_rows(compare([STORY_A, STORY_B], 1))
    assert rows[0][:4] == ["run_id", "run", "baseline", "metric"]
    assert len(rows) == 1 + 2 * 4 + 2 * 2
    # Numbers with the places the pages show (runs/display.py): tok/s 1 decimal, % 1.
    assert [2, "3-step", False, "throughput_tok_s", "61.7", "tok/s", "-32.3", "-34.4"] == \
        [c if not isinstance(c, Decimal) else str(c) for c in rows[2][:8]]


def test_no_runs_gives_an_empty_comparison():
    assert compare([], None)["runs"] == []


TUNED = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_DEBUG": "INFO", "NCCL_NVLS_ENABLE": "0"}


def _nccl(effective: dict | None, status: str = "ok") -> dict:
    return {"status": status if effective is not None else "unknown", "drift": [], "effective": effective or {}}


def test_workers_with_different_nccl_settings_make_runs_not_comparable():
    dropped = {"NCCL_DEBUG": "INFO", "NCCL_NVLS_ENABLE": "0", "NCCL_CUMEM_ENABLE": "0"}
    a = _run(1, "tuned", 522.7, 2.2, 4.26, 3.78, nccl=_nccl(TUNED))
    b = _run(2, "dropped", 489.6, 2.2, 4.45, 4.05, nccl=_nccl(dropped, "drift"))
    verdict = compare([b, a], 1)["comparable"]
    assert not verdict["ok"]
    [diff] = verdict["differences"]
    assert diff["key"] == "nccl.effective"
    assert diff["values"] == [{"key": "NCCL_ALGO", "values": ["Ring", None]},
                              {"key": "NCCL_CUMEM_ENABLE", "values": [None, "0"]},
                              {"key": "NCCL_PROTO", "values": ["LL", None]}]
    assert diff["text"] == ("effective NCCL settings differ: NCCL_ALGO Ring vs unset, NCCL_CUMEM_ENABLE unset vs 0, "
                            "NCCL_PROTO LL vs unset")


def test_nccl_settings_spelled_differently_or_only_logging_are_the_same():
    a = _run(1, "a", 1, 1, 1, 1, nccl=_nccl({**TUNED, "NCCL_P2P_LEVEL": "SYS", "NCCL_PROTO": "ll"}))
    b = _run(2, "b", 1, 1, 1, 1, nccl=_nccl({**TUNED, "NCCL_P2P_LEVEL": "5", "NCCL_DEBUG": "WARN"}))
    assert compare([a, b], 1)["comparable"] == {"ok": True, "differences": []}


def test_runs_whose_nccl_settings_no_log_shows_are_no_nccl_difference():
    a = _run(1, "a", 1, 1, 1, 1, nccl=_nccl(TUNED))
    b = _run(2, "b", 1, 1, 1, 1, nccl=_nccl(None))
    assert compare([a, b], 1)["comparable"]["ok"] is True


def test_a_variable_nccl_never_echoes_differs_only_where_both_runs_show_it():
    a = _run(1, "a", 1, 1, 1, 1, nccl=_nccl({**TUNED, "NCCL_SOCKET_IFNAME": "eth0"}))
    b = _run(2, "b", 1, 1, 1, 1, nccl=_nccl(TUNED))  # echo lines only: they never show the interface
    c = _run(3, "c", 1, 1, 1, 1, nccl=_nccl({**TUNED, "NCCL_SOCKET_IFNAME": "ib0"}))
    assert compare([a, b], 1)["comparable"]["ok"] is True
    assert compare([a, c], 1)["comparable"]["differences"][0]["text"] == \
        "effective NCCL settings differ: NCCL_SOCKET_IFNAME eth0 vs ib0"
