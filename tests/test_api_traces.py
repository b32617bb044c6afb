"""/api/v1/ and profiler traces: POST /runs takes a trace beside a log and knows it for a trace;
GET /runs/{id} carries the breakdown; /runs/{id}/trace (per cycle), trace.csv, trace/timeline,
PUT trace/phases; /compare's JSON has the per-class deltas and the idle notes."""

from __future__ import annotations

import csv
import gzip
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingest import services
from tests.samples import PROJECT_ROOT, log_path

pytestmark = pytest.mark.django_db

TRACE = PROJECT_ROOT / "samples" / "traces" / "trace_spec_k2_3cycles.json.gz"


def _upload(client, headers, *files):
    r = client.post("/api/v1/runs", {"files": list(files), "meta": json.dumps({"project": "team"})}, headers=headers)
    assert r.status_code == 202, r.content
    run_id = r.json()["id"]
    from runs.models import LogFile

    for lf in LogFile.objects.filter(run_id=run_id):
        services.parse_logfile(lf.id)
    return run_id


def test_upload_a_trace_and_a_log_then_read_the_breakdown(client, alice, bearer):
    h = bearer(alice)
    run_id = _upload(client, h, SimpleUploadedFile("trace.json.gz", TRACE.read_bytes()),
                     SimpleUploadedFile("spec.log", log_path("spec_eagle3_tuned_2step.log").read_bytes()))
    detail = client.get(f"/api/v1/runs/{run_id}", headers=h).json()
    assert {f["name"]: f["kind"] for f in detail["logfiles"]} == {"trace.json.gz": "trace", "spec.log": "log"}
    verify = next(p for p in detail["parsed"]["trace"]["ranks"][0]["phases"] if p["name"] == "Target verify")
    assert set(verify) >= {"wall_ms", "busy_ms", "idle_share", "by_class", "top", "event", "ts_us", "kernels", "launches"}
    assert verify["top"][0]["event"] >= 0 and verify["top"][0]["ts_us"] > 0

    full = client.get(f"/api/v1/runs/{run_id}/trace", headers=h).json()
    cycles = full["ranks"][0]["phases"][1]["per_cycle"]
    assert [c["cycle"] for c in cycles] == [5, 6, 7]
    assert all(c["event"] >= 0 and c["ts_us"] > 0 for c in cycles)

    tl = client.get(f"/api/v1/runs/{run_id}/trace/timeline?cycle=6", headers=h).json()
    assert tl["cycle"] == 6 and tl["cycles"] == [5, 6, 7]
    assert len(tl["kernels"]["start_ms"]) == len(tl["kernels"]["event"]) > 1000
    assert [r["phase"] for r in tl["ranges"]] == ["Draft", "Target verify", "Accept"]


def test_trace_csv_has_a_row_per_phase_and_cycle_with_class_columns(client, alice, bearer):
    h = bearer(alice)
    run_id = _upload(client, h, SimpleUploadedFile("trace.json.gz", TRACE.read_bytes()))
    r = client.get(f"/api/v1/runs/{run_id}/trace.csv", headers=h)
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.content.decode())))
    assert rows[0][:9] == ["file", "device", "rank", "phase", "ranges", "cycle", "event", "ts_us", "wall_ms"]
    assert "GEMM ms" in rows[0]
    assert len(rows) == 1 + 3 * 3
    assert {(row[3], row[5]) for row in rows[1:]} == {(p, c) for p in ("Draft", "Target verify", "Accept") for c in "567"}


def test_put_trace_phases_maps_ranges_and_a_viewer_may_not(client, alice, vic, bearer):
    h = bearer(alice)
    run_id = _upload(client, h, SimpleUploadedFile("trace.json.gz", TRACE.read_bytes()))
    r = client.put(f"/api/v1/runs/{run_id}/trace/phases", {"phases": {"accept": "", "draft": "Draft extend"}},
                   content_type="application/json", headers=h)
    assert r.status_code == 200
    assert [p["name"] for p in r.json()["ranks"][0]["phases"]] == ["Draft extend", "Target verify"]
    assert r.json()["phase_map"] == {"accept": "", "draft": "Draft extend"}
    denied = client.put(f"/api/v1/runs/{run_id}/trace/phases", {"phases": {}}, content_type="application/json",
                        headers=bearer(vic))
    assert denied.status_code == 403


def test_trace_of_a_run_outside_your_projects_is_404_and_a_run_without_one_says_so(client, alice, eve, bearer):
    h = bearer(alice)
    run_id = _upload(client, h, SimpleUploadedFile("trace.json.gz", TRACE.read_bytes()))
    assert client.get(f"/api/v1/runs/{run_id}/trace", headers=bearer(eve)).status_code == 404
    log_run = _upload(client, h, SimpleUploadedFile("spec.log", log_path("spec_baseline_nospec.log").read_bytes()))
    r = client.get(f"/api/v1/runs/{log_run}/trace", headers=h)
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_trace"


def test_compare_json_has_per_class_deltas_and_idle_notes(client, alice, bearer):
    h = bearer(alice)
    raw = gzip.decompress(TRACE.read_bytes())
    doc = json.loads(raw)
    # The second run's verify GEMMs take 1 ms longer each cycle: kernels and the range grow together.
    verify = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == "target_verify"]
    for v in verify:
        v["dur"] += 1000.0
        gemm = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel" and v["ts"] <= e["ts"] < v["ts"] + v["dur"]
                    and e["name"].startswith("nvjet"))
        gemm["dur"] += 1000.0
    a = _upload(client, h, SimpleUploadedFile("a.json", raw))
    b = _upload(client, h, SimpleUploadedFile("b.json", json.dumps(doc).encode()))
    result = client.get(f"/api/v1/compare?runs={a},{b}&baseline={a}", headers=h).json()
    run_b = next(r for r in result["trace"]["runs"] if r["id"] == b)
    delta = next(d for d in run_b["deltas"] if d["phase"] == "Target verify")
    assert delta["wall_ms"] == pytest.approx(1.0, abs=0.01)
    assert delta["explained_by"]["class"] == "GEMM"
    assert delta["by_class"]["GEMM"] == pytest.approx(1.0, abs=0.05)
    texts = [h["text"] for h in result["headline"]]
    assert any("Target verify +1.0 ms: GEMM +1.0 ms" in t for t in texts)
    assert any("idle: launch-bound" in t for t in texts)


def test_a_figures_event_index_opens_that_event_of_the_file(client, alice, eve, bearer):
    h = bearer(alice)
    run_id = _upload(client, h, SimpleUploadedFile("trace.json.gz", TRACE.read_bytes()))
    full = client.get(f"/api/v1/runs/{run_id}/trace", headers=h).json()
    rank = full["ranks"][0]
    verify = next(p for p in rank["phases"] if p["name"] == "Target verify")
    got = client.get(f"/api/v1/runs/{run_id}/trace/events/{rank['logfile']}/{verify['event']}", headers=h).json()
    assert got["event"]["cat"] == "gpu_user_annotation" and got["event"]["name"] == "target_verify"
    assert got["event"]["ts"] == verify["ts_us"]
    top = verify["top"][0]
    kernel = client.get(f"/api/v1/runs/{run_id}/trace/events/{rank['logfile']}/{top['event']}", headers=h).json()
    assert kernel["event"]["name"] == top["kernel"] and kernel["event"]["ts"] == top["ts_us"]
    missing = client.get(f"/api/v1/runs/{run_id}/trace/events/{rank['logfile']}/99999999", headers=h)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_trace_event"
    assert client.get(f"/api/v1/runs/{run_id}/trace/events/{rank['logfile']}/0", headers=bearer(eve)).status_code == 404
