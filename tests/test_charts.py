"""runs.charts without a database: figure dicts with the right traces and provenance."""

from types import SimpleNamespace

from runs import charts
from runs.compare import RunInput, compare


def _run(id, name, verify):
    return RunInput(id=id, name=name, parsed={
        "summary": {"throughput_tok_s": 100.0, "tokens_per_cycle": 2.0, "cycle_ms": 20.0},
        "phases": [{"name": "Draft", "ms": 1.0, "pct": 5.0}, {"name": "Target verify", "ms": verify, "pct": 95.0}],
        "nccl": {"status": "ok", "drift": []}})


def test_phase_timeline_stacks_phases_and_carries_line_numbers():
    rows = [SimpleNamespace(logfile_id=7, name="Draft", window=1, ms=0.5, line=10),
            SimpleNamespace(logfile_id=7, name="Target verify", window=1, ms=4.0, line=11)]
    fig = charts.phase_timeline(rows)
    assert [t["name"] for t in fig["data"]] == ["Draft", "Target verify"]
    # [log file, line]: what a click on the point opens in the source panel.
    assert fig["data"][1]["customdata"] == [[7, 11]] and fig["data"][1]["stackgroup"] == "phases"


def test_cycle_breakdown_has_one_bar_per_run_with_baseline_first():
    result = compare([_run(1, "a", 19.1), _run(2, "b", 30.0)], baseline_id=2)
    fig = charts.cycle_breakdown(result)
    verify = next(t for t in fig["data"] if t["name"] == "Target verify")
    assert list(verify["y"]) == ["b (baseline)", "a"] and list(verify["x"]) == [30.0, 19.1]
    assert verify["text"][0] == "30.00 ms · 95.0%"


def test_phase_deltas_colour_slower_phases_red():
    fig = charts.phase_deltas(compare([_run(1, "a", 19.1), _run(2, "b", 30.0)], baseline_id=1))
    trace = fig["data"][0]
    assert trace["name"] == "b" and trace["text"][1] == "+10.90 ms/cyc" and trace["marker"]["color"][1] == "#c53030"


def test_collectives_use_a_log_size_axis_and_split_sides():
    rows = [{"size_bytes": 8, "busbw_gbs": 0.1, "in_place": False},
            {"size_bytes": 8, "busbw_gbs": 0.2, "in_place": True}]
    fig = charts.collectives([("run", rows)])
    assert fig["layout"]["xaxis"]["type"] == "log" and len(fig["data"]) == 2


def test_names_are_data_not_markup():
    fig = charts.over_the_run([("<img src=x onerror=alert(1)>", [(1, 2.0, 5)])], "k", "t", "ms")
    assert fig["data"][0]["name"] == "<img src=x onerror=alert(1)>"


def test_twenty_runs_get_twenty_distinct_lines():
    from runs.charts import run_line

    lines = {(run_line(i)["color"], run_line(i)["dash"]) for i in range(20)}
    assert len(lines) == 20




def test_over_the_run_legend_sits_above_the_plot_with_room_for_every_row():
    from runs.charts import over_the_run

    fig = over_the_run([(f"run {i}", [(1, 1.0, 10)]) for i in range(20)], "throughput_tok_s", "t", "tok/s")
    assert fig["layout"]["legend"]["yanchor"] == "bottom" and fig["layout"]["margin"]["t"] >= 50 + 22 * 5
def test_notes_are_drawn_as_bands_with_escaped_hover_text():
    from types import SimpleNamespace

    from runs.charts import with_notes

    note = SimpleNamespace(id=7, window_from=3, window_to=5, phase="verify", body="<b onmouseover=x>hi</b>")
    fig = with_notes({"data": [], "layout": {}}, [note], {7: "alice"})
    (shape,) = fig["layout"]["shapes"]
    assert (shape["x0"], shape["x1"]) == (2.5, 5.5)
    marker = fig["data"][-1]
    assert marker["customdata"] == [7] and "&lt;b onmouseover" in marker["hovertext"][0]
    assert "<b " not in marker["hovertext"][0] and fig["layout"]["dragmode"] == "select"
