"""Profiler traces through ingest.services and runs.services: recognised as traces whatever their
name, read by the trace reader (never the log parsers), stored on their file, summarised into the
run's `parsed["trace"]`; mapped to phases by a person (a RunEdit); every bad trace a clear failure."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from django.core.exceptions import PermissionDenied

from ingest import registration, services
from runs import services as run_services
from runs.models import LogFile, RunEdit, Status
from tests.samples import PROJECT_ROOT, upload_bytes

pytestmark = pytest.mark.django_db

TRACE = "traces/trace_spec_k2_3cycles.json.gz"
RAW = gzip.decompress((PROJECT_ROOT / "samples" / TRACE).read_bytes())


def _parse(run):
    for lf in run.logfiles.all():
        services.parse_logfile(lf.id)
    run.refresh_from_db()
    return run


def test_a_trace_uploaded_with_a_log_is_read_as_a_trace(alice, upload_run):
    run = upload_run(alice, TRACE, "spec_eagle3_tuned_2step.log")
    kinds = dict(run.logfiles.values_list("original_name", "kind"))
    assert kinds == {"trace_spec_k2_3cycles.json.gz": "trace", "spec_eagle3_tuned_2step.log": "log"}
    assert run.status == Status.READY
    assert run.throughput_tok_s is not None  # the log's figures are still the log's
    phases = {p["name"]: p for p in run.parsed["trace"]["ranks"][0]["phases"]}
    assert list(phases) == ["Draft", "Target verify", "Accept"]
    assert phases["Target verify"]["cycles"] == 3
    assert phases["Target verify"]["idle_share"] > 0.5
    assert "per_cycle" not in phases["Draft"]  # the run keeps the summary; the API serves the cycles


def test_a_trace_named_like_a_log_is_still_a_trace(alice):
    run = _parse(upload_bytes(alice, "profile.txt", RAW))
    assert run.logfiles.get().kind == LogFile.Kind.TRACE
    assert run.parsed["trace"]["ranks"][0]["kernels"] > 0


def test_a_cpu_only_trace_fails_with_why(alice):
    doc = json.loads(RAW)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    run = _parse(upload_bytes(alice, "cpu.json", json.dumps(doc).encode()))
    lf = run.logfiles.get()
    assert lf.status == Status.FAILED
    assert "no GPU events" in lf.error and "CPU-only" in lf.error
    assert run.status == Status.FAILED and "cpu.json" in run.error


def test_a_truncated_trace_fails_and_keeps_nothing(alice):
    run = _parse(upload_bytes(alice, "cut.json", RAW[: len(RAW) // 3]))
    lf = run.logfiles.get()
    assert lf.status == Status.FAILED and "cut short" in lf.error
    assert lf.trace is None


def test_a_truncated_gz_trace_is_refused_at_upload(alice):
    gz = (PROJECT_ROOT / "samples" / TRACE).read_bytes()
    with pytest.raises(services.storage.StorageError, match="cut short"):
        upload_bytes(alice, "cut.json.gz", gz[: len(gz) // 2])


def test_ranges_named_like_no_phase_say_so_and_a_person_maps_them(alice, bob):
    doc = json.loads(RAW)
    for e in doc["traceEvents"]:
        if e.get("name") == "target_verify":
            e["name"] = "big_forward"
    run = _parse(upload_bytes(alice, "renamed.json", json.dumps(doc).encode()))
    rank = run.parsed["trace"]["ranks"][0]
    assert [p["name"] for p in rank["phases"]] == ["Draft", "Accept"]
    assert [u["name"] for u in rank["unmapped"]] == ["big_forward"]
    edit = run_services.set_trace_phases(bob, run, {"big_forward": "Target verify"})
    assert edit is not None and edit.what == RunEdit.What.TRACE_PHASES and edit.edited_by == bob
    assert edit.after == ["big_forward=Target verify"]
    run.refresh_from_db()
    assert [p["name"] for p in run.parsed["trace"]["ranks"][0]["phases"]] == ["Draft", "Target verify", "Accept"]
    assert run_services.set_trace_phases(bob, run, {"big_forward": "Target verify"}) is None  # nothing changed


def test_no_range_named_like_a_phase_is_never_a_silent_empty_breakdown(alice):
    doc = json.loads(RAW)
    for e in doc["traceEvents"]:
        if e.get("cat") in ("gpu_user_annotation", "user_annotation") and not e["name"].startswith(("cycle", "Profiler")):
            e["name"] = "region_" + e["name"]
    run = _parse(upload_bytes(alice, "regions.json", json.dumps(doc).encode()))
    t = run.parsed["trace"]
    assert t["ranks"][0]["phases"] == []
    assert any("is named like a phase" in m and "map them to phases" in m for m in t["messages"])
    assert t["ranks"][0]["busy_ms"] > 0  # whole-trace figures are still there


def test_a_viewer_may_not_map_phases(alice, vic, upload_run):
    run = upload_run(alice, TRACE)
    with pytest.raises(PermissionDenied):
        run_services.set_trace_phases(vic, run, {"draft": "Accept"})


def test_two_rank_files_are_two_entries_and_the_page_note_says_so(alice):
    doc = json.loads(RAW)
    # Kineto writes distributedInfo before traceEvents
    a = {"distributedInfo": {"rank": 0, "world_size": 2}, **doc}
    b = {"distributedInfo": {"rank": 1, "world_size": 2}, **doc}
    run, _ = registration.register_upload(alice, [
        registration.IncomingFile(n, io.BytesIO(d), len(d)) for n, d in
        (("rank0.json", json.dumps(a).encode()), ("rank1.json", json.dumps(b).encode()))], project="team")
    run = _parse(run)
    t = run.parsed["trace"]
    assert [(r["file"], r["rank"]) for r in t["ranks"]] == [("rank0.json", 0), ("rank1.json", 1)]
    assert any("2 traced GPUs" in m for m in t["messages"])


def test_a_gzipped_trace_registered_by_path_is_read_in_place(alice, settings, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    path = root / "rank0.pt.trace.json.gz"
    path.write_bytes((PROJECT_ROOT / "samples" / TRACE).read_bytes())
    settings.LOG_ROOTS = [root.resolve()]
    run, created = registration.register_path(alice, str(path), project="team")
    lf = run.logfiles.get()
    assert created and lf.kind == LogFile.Kind.TRACE and lf.registered
    run = _parse(run)
    assert run.status == Status.READY
    assert run.parsed["trace"]["ranks"][0]["phases"][1]["name"] == "Target verify"


def test_a_registered_gz_trace_cut_short_fails_with_truncated(alice, settings, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    gz = (PROJECT_ROOT / "samples" / TRACE).read_bytes()
    (root / "cut.json.gz").write_bytes(gz[: len(gz) // 2])
    settings.LOG_ROOTS = [root.resolve()]
    run, _ = registration.register_path(alice, str(root / "cut.json.gz"), project="team")
    run = _parse(run)
    lf = run.logfiles.get()
    assert lf.kind == LogFile.Kind.TRACE and lf.status == Status.FAILED
    assert "truncated" in lf.error and "no breakdown is kept" in lf.error
