"""runs/trace_views.py and the pages' trace parts: the run page's phases by kernel class beside
the log's times, the cycle timeline, the mapping form, the CSV; the comparison's trace section."""

from __future__ import annotations

import csv
import io
import json

import pytest

from runs.models import Run, RunEdit

pytestmark = pytest.mark.django_db

TRACE = "traces/trace_spec_k2_3cycles.json.gz"


@pytest.fixture
def traced(alice, upload_run):
    return upload_run(alice, TRACE)


def _figure(html: str, figure_id: str) -> dict:
    start = html.index(f'id="{figure_id}"')
    body = html[html.index(">", start) + 1:html.index("</script>", start)]
    return json.loads(body)


def test_run_page_shows_phases_by_class_idle_and_a_cycle_timeline(client, alice, traced):
    client.force_login(alice)
    html = client.get(f"/runs/{traced.id}/").content.decode()
    assert 'id="trace"' in html and 'id="trace-phases"' in html
    assert "Target verify is 82% idle: launch-bound; CUDA graphs would help" in html
    bars = _figure(html, "chart-trace-classes")
    assert [t["name"] for t in bars["data"]][-1] == "GPU idle"
    assert bars["data"][0]["x"] == ["Draft", "Target verify", "Accept"]
    timeline = _figure(html, "chart-trace-timeline")
    lanes = {y for t in timeline["data"] for y in t["y"]}
    assert lanes == {"stream 7", "ranges"}
    assert "Cycle 7" in timeline["layout"]["title"]["text"]  # the kept cycle of median length
    html5 = client.get(f"/runs/{traced.id}/?cycle=5").content.decode()
    assert "Cycle 5" in _figure(html5, "chart-trace-timeline")["layout"]["title"]["text"]


def test_run_page_says_when_trace_and_log_disagree(client, alice, upload_run):
    # The k=2 sample's trace beside the log of another run (a 2-step EAGLE-3 on 2 GPUs): verify differs.
    run = upload_run(alice, TRACE, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    html = client.get(f"/runs/{run.id}/").content.decode()
    assert "more than the profiler&#x27;s overhead" in html or "more than the profiler's overhead" in html


def test_mapping_form_records_an_edit_and_redraws(client, alice, traced):
    client.force_login(alice)
    r = client.post(f"/runs/{traced.id}/trace/phases",
                    {"range": ["accept", "draft", "target_verify"], "phase": ["", "Draft", "Target verify"]})
    assert r.status_code == 302 and r["Location"].endswith(f"/runs/{traced.id}/#trace")
    run = Run.objects.get(id=traced.id)
    assert run.trace_phases == {"accept": ""}  # what runlens guessed anyway is not kept as a person's word
    assert RunEdit.objects.get(run=run).what == "trace_phases"
    assert [p["name"] for p in run.parsed["trace"]["ranks"][0]["phases"]] == ["Draft", "Target verify"]
    html = client.get(f"/runs/{traced.id}/").content.decode()
    assert "accept=" in html[html.index('id="trace-phase-history"'):]
    assert 'id="tag-history"' not in html  # a mapping is not a tag change


def test_a_viewer_cannot_post_the_mapping(client, vic, traced):
    client.force_login(vic)
    assert client.post(f"/runs/{traced.id}/trace/phases", {"range": ["accept"], "phase": [""]}).status_code == 403


def test_trace_csv_page_export(client, alice, eve, traced):
    client.force_login(alice)
    rows = list(csv.reader(io.StringIO(client.get(f"/runs/{traced.id}/trace.csv").content.decode())))
    assert rows[0][3] == "phase" and len(rows) == 10
    client.force_login(eve)
    assert client.get(f"/runs/{traced.id}/trace.csv").status_code == 404


def test_compare_page_names_the_class_that_explains_a_phase(client, alice, upload_run):
    k2 = upload_run(alice, "traces/trace_tp1_flash_rank0.json.gz", "traces/trace_tp1_flash.log")
    k4 = upload_run(alice, "traces/trace_tp1_flash_k4_rank0.json.gz", "traces/trace_tp1_flash_k4.log")
    client.force_login(alice)
    html = client.get(f"/compare/?runs={k2.id},{k4.id}&baseline={k2.id}").content.decode()
    assert 'id="trace-deltas"' in html
    # recorded on an H200: with k=4 verify runs the same kernels but waits 2 ms longer for them
    assert "Target verify +2.0 ms: GPU idle +1.9 ms" in html
    assert "chart-trace-deltas" in html
