"""The comparison page: content, exports, permissions and a fixed number of queries."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.samples import parsed_upload, with_server_args

pytestmark = pytest.mark.django_db


@pytest.fixture
def story(alice, upload_run):
    base = upload_run(alice, "spec_baseline_nospec.log", name="baseline")
    tuned = upload_run(alice, "spec_eagle3_tuned_2step.log", name="tuned 2-step")
    dropped = upload_run(alice, "sweep/sweep_dropped_2step.log", name="dropped 2-step")
    return base, tuned, dropped


def test_comparison_page_shows_breakdown_deltas_and_drift(client, alice, story):
    base, tuned, dropped = story
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{tuned.id},{dropped.id}&baseline={base.id}").content.decode()
    for anchor in ('id="chart-breakdown"', 'id="chart-deltas"', 'id="chart-verify_ms"', 'id="headline"'):
        assert anchor in body
    assert "dropped 2-step: the workers never got 6 NCCL variables" in body
    assert "NCCL_PROTO" in body and "Target verify" in body


def test_the_url_reproduces_the_view_with_another_baseline(client, alice, story):
    base, tuned, _ = story
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{tuned.id}&baseline={tuned.id}").content.decode()
    assert f'<option value="{tuned.id}" selected>' in body
    assert body.index("tuned 2-step · baseline</a>") < body.index(">baseline</a>")


def test_csv_and_json_downloads(client, alice, story):
    base, tuned, _ = story
    client.force_login(alice)
    url = f"/compare/?runs={base.id},{tuned.id}&baseline={base.id}"
    response = client.get(url + "&format=csv")
    assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    tput = next(r for r in rows if r[0] == str(tuned.id) and r[3] == "throughput_tok_s")
    # Numbers with the places the pages show: tok/s 1 decimal, % 1.
    assert (tput[4], tput[6], tput[7]) == ("472.8", "229.0", "93.9")
    data = client.get(url + "&format=json").json()
    assert data["baseline"] == base.id and [r["id"] for r in data["runs"]] == [base.id, tuned.id]


def test_csv_cells_that_a_spreadsheet_would_run_as_formulas_are_neutralised(client, alice, upload_run):
    evil = upload_run(alice, "spec_eagle3_tuned_2step.log", name='=HYPERLINK("http://x.example","hi")')
    plus = upload_run(alice, "spec_baseline_nospec.log", name="+1+cmd|' /C calc'!A0")
    client.force_login(alice)
    response = client.get(f"/compare/?runs={plus.id},{evil.id}&baseline={plus.id}&format=csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))[1:]
    names = {r[1] for r in rows}
    assert names == {"'=HYPERLINK(\"http://x.example\",\"hi\")", "'+1+cmd|' /C calc'!A0"}
    assert any(float(r[6]) < 0 for r in rows if r[6])  # negative numbers stay numbers


def test_runs_of_other_teams_are_not_found_even_mixed_with_own(client, alice, eve, story, upload_run):
    base, tuned, _ = story
    own = upload_run(eve, "spec_baseline_nospec.log", project="eve-lab", create_project=True)
    client.force_login(eve)
    response = client.get(f"/compare/?runs={own.id},{tuned.id}&format=json")
    # Nothing of the other team's runs leaks into the answer (ids are short digits: check names).
    assert response.status_code == 404 and tuned.name not in response.content.decode()
    assert base.name not in response.content.decode()
    assert client.get(f"/compare/?runs={own.id}&format=json").json()["runs"][0]["id"] == own.id


def test_query_count_does_not_grow_with_the_number_of_runs(client, alice, story, upload_run):
    client.force_login(alice)
    ids = ",".join(str(r.id) for r in story)
    with CaptureQueriesContext(connection) as three:
        client.get(f"/compare/?runs={ids}")
    more = [upload_run(alice, "sweep/sweep_tuned_3step.log").id, upload_run(alice, "sweep/sweep_default_1step.log").id]
    with CaptureQueriesContext(connection) as five:
        client.get(f"/compare/?runs={ids},{more[0]},{more[1]}")
    assert len(three) == len(five) <= 10


def test_run_list_checkboxes_compare_without_javascript(client, alice, story):
    base, tuned, _ = story
    client.force_login(alice)
    body = client.get(f"/compare/?run={base.id}&run={tuned.id}&format=json").json()
    assert [r["id"] for r in body["runs"]] == [base.id, tuned.id]


def test_analysis_panel_gives_break_even_and_required_acceptance(client, alice, story):
    base, tuned, _ = story
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{tuned.id}&baseline={base.id}&target=600").content.decode()
    assert 'id="analysis"' in body and 'id="chart-curve-' in body
    # 243.83 tok/s x 4.6 ms = 1.12 tokens/cycle to break even; 600 tok/s x 4.6 ms = 2.76 -> p = 0.92
    assert "1.12" in body and "0.92" in body and "above the break-even" in body


def test_config_diff_links_declared_and_effective_nccl_values_to_their_lines(client, alice, story):
    _, tuned, dropped = story
    client.force_login(alice)
    data = client.get(f"/compare/?runs={tuned.id},{dropped.id}&format=json").json()
    rows = {r["key"]: r for r in data["config"]}
    declared = rows["NCCL_PROTO (declared)"]["runs"][str(dropped.id)]
    assert declared["value"] == "LL" and declared["line"] == 2 and declared["logfile"]
    effective = rows["NCCL_PROTO (effective)"]["runs"]
    assert effective[str(tuned.id)]["value"] == "LL" and effective[str(tuned.id)]["line"]
    assert effective[str(dropped.id)] is None and rows["NCCL_PROTO (effective)"]["differs"]


def test_runs_past_the_limit_are_named_not_silently_dropped(client, alice):
    from runs.models import Project, Run

    project = Project.objects.get(name="team")
    ids = [Run.objects.create(project=project, name=f"r{i}").id for i in range(23)]
    client.force_login(alice)
    response = client.get(f"/compare/?runs={','.join(map(str, ids))}")
    body = response.content.decode()
    assert response.status_code == 200 and "these 3 were left out" in body
    assert all(f"#{i}" in body for i in ids[20:])
    data = client.get(f"/compare/?runs={','.join(map(str, ids))}&format=json").json()
    assert len(data["runs"]) == 20 and data["left_out"] == ids[20:]


def test_the_api_refuses_more_than_twenty_runs_with_a_reason(client, alice, bearer):
    response = client.get("/api/v1/compare?runs=" + ",".join(str(i) for i in range(1, 22)), headers=bearer(alice))
    assert response.status_code == 422 and "runs" in response.json()["error"]["message"]


def test_the_headline_says_when_a_persons_step_count_contradicts_the_log(client, alice, story):
    from runs import services

    base, tuned, _ = story
    services.add_annotation(alice, tuned, "steps", "5")
    client.force_login(alice)
    data = client.get(f"/compare/?runs={base.id},{tuned.id}&format=json").json()
    texts = [h["text"] for h in data["headline"]]
    assert any("steps set to 5 by a person, but the log says 2" in t for t in texts)
    body = client.get(f"/runs/{tuned.id}/").content.decode()
    assert "value disagrees with the logs" in body and "the log says 2" in body
    assert "person ≠ log" in client.get("/").content.decode()
def test_anchored_notes_are_drawn_on_the_comparison_series(client, alice, upload_run):
    from runs import services

    a = upload_run(alice, "spec_baseline_nospec.log", name="base")
    b = upload_run(alice, "spec_eagle3_tuned_2step.log", name="tuned")
    note = services.add_annotation(alice, b, "note", "rebuild <here>", window_from=2, window_to=3)
    client.force_login(alice)
    charts = client.get(f"/compare/?runs={a.id},{b.id}").context["charts"]
    series = [fig for key, fig in charts.items() if key.startswith("chart-") and fig["layout"].get("shapes")]
    assert series, "no over-the-run chart carries the note"
    marker = series[0]["data"][-1]
    assert marker["customdata"] == [note.id] and "tuned · alice: rebuild &lt;here&gt;" in marker["hovertext"][0]


def _points(charts: dict, key: str) -> list[list]:
    return [list(zip(t["x"], t["y"], strict=True)) for t in charts[key]["data"] if t.get("meta") != "notes"]


def test_comparing_runs_of_many_windows_is_bounded_and_keeps_figures_noise_and_spikes(client, alice, big_run):
    from runs.series import FIGURE_POINTS
    from runs.summary import spread
    from tests import synthetic

    # Fifteen times the points a trace may have: thinning must happen, and keep each run's dip
    # (100k-window timings are make bench's, not a test's).
    windows = 15 * FIGURE_POINTS
    a, b = big_run(windows, "a", spike=2_222), big_run(windows, "b", spike=4_444)
    client.force_login(alice)
    response = client.get(f"/compare/?runs={a.id},{b.id}&baseline={a.id}")
    assert response.status_code == 200 and len(response.content) < 2_000_000
    charts = response.context["charts"]
    for key in ("chart-throughput_tok_s", "chart-tokens_per_cycle", "chart-verify_ms"):
        assert all(0 < len(trace) <= FIGURE_POINTS for trace in _points(charts, key)), key
    dips = [min(trace, key=lambda p: p[1]) for trace in _points(charts, "chart-throughput_tok_s")]
    assert dips == [(2_222, synthetic.values(2_222, 2_222)[2]), (4_444, synthetic.values(4_444, 4_444)[2])]
    result = response.context["result"]
    tput = next(m for m in result["metrics"] if m["key"] == "throughput_tok_s")
    assert tput["runs"][b.id]["value"] == b.throughput_tok_s
    # The noise is the whole series' (these runs' summaries keep none), not the thinned points'.
    whole = [spread([synthetic.values(w, s)[2] for w in range(1, windows + 1)]) for s in (2_222, 4_444)]
    assert tput["runs"][b.id]["noise"] == max(whole)
    api = client.get(f"/api/v1/compare?runs={a.id},{b.id}&baseline={a.id}").json()
    assert api == json.loads(json.dumps(result))  # the API's figures and noise are the page's


def test_a_zoomed_comparison_charts_the_exact_rows(client, alice, big_run):
    from tests import synthetic

    a, b = big_run(3000, "a"), big_run(3000, "b")
    client.force_login(alice)
    response = client.get(f"/compare/?runs={a.id},{b.id}&from=2000&to=2004")
    exact = [(w, synthetic.values(w, 1500)[1]) for w in range(2000, 2005)]
    assert _points(response.context["charts"], "chart-verify_ms") == [exact, exact]
    assert "Every row of windows 2000–2004" in response.content.decode()


def test_analysis_against_a_baseline_on_other_hardware_warns(client, alice):
    base = parsed_upload(alice, "tp8.log", with_server_args("spec_baseline_nospec.log", tp_size=8))
    tuned = parsed_upload(alice, "tp2.log", with_server_args("spec_eagle3_tuned_2step.log", tp_size=2))
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{tuned.id}&baseline={base.id}").content.decode()
    assert 'id="analysis-not-comparable"' in body and "TP size differ: 8 vs 2" in body


def test_the_gpu_nccl_tests_ran_on_is_the_runs_gpu_in_the_configuration(client, alice, upload_run):
    base = upload_run(alice, "spec_baseline_nospec.log", "nccl-tests_all_reduce_default.log", name="h200 base")
    tuned = upload_run(alice, "spec_eagle3_tuned_2step.log", name="tuned 2-step")
    client.force_login(alice)
    result = client.get(f"/compare/?runs={base.id},{tuned.id}&format=json").json()
    gpu = next(row for row in result["config"] if row["key"] == "gpu")
    assert gpu["runs"][str(base.id)]["value"] == "NVIDIA H200" and gpu["runs"][str(tuned.id)] is None


def test_analysis_against_a_comparable_baseline_has_no_warning(client, alice, upload_run):
    # Both untuned: the same NCCL settings reached both runs' workers.
    base = upload_run(alice, "sweep/sweep_baseline_nospec.log")
    spec = upload_run(alice, "sweep/sweep_default_2step.log")
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{spec.id}&baseline={base.id}").content.decode()
    assert 'id="analysis"' in body and 'id="analysis-not-comparable"' not in body
    assert "Comparable: no difference in model" in body


def test_workers_with_other_nccl_settings_make_the_baseline_not_comparable(client, alice, story):
    base, tuned, _ = story
    client.force_login(alice)
    body = client.get(f"/compare/?runs={base.id},{tuned.id}&baseline={base.id}").content.decode()
    assert "Not directly comparable: effective NCCL settings differ: NCCL_ALGO unset vs Ring, " in body
    assert 'id="analysis-not-comparable"' in body
