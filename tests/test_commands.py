"""Management commands: parselog (no database), createtoken, ingest."""

import hashlib
import json
from io import StringIO
from unittest import mock

import pytest
from django.core.management import CommandError, call_command

import ingest.parsers as parsers
from ingest.parsers import native, parse_stream
from runs.models import ApiToken, Run
from runs.summary import summarize
from tests.samples import DATA, PROJECT_ROOT, PUBLIC_SAMPLES, log_path


def _parselog(*paths):
    out = StringIO()
    call_command("parselog", *map(str, paths), "--json", stdout=out)
    return out.getvalue().splitlines()


def test_parselog_prints_one_json_object_per_file_in_the_contract_shape():
    lines = _parselog(log_path("spec_eagle3_tuned_2step.log"), log_path("spec_baseline_nospec.log"))
    assert len(lines) == 2
    tuned, base = map(json.loads, lines)
    for key in ("formats", "engine", "spec", "summary", "phases", "nccl", "collectives", "serving", "errors"):
        assert key in tuned and key in base
    assert tuned["spec"]["steps"] == 2 and tuned["summary"]["cycle_ms"] == 4.6
    verify = next(p for p in tuned["phases"] if p["name"] == "Target verify")
    assert (verify["ms"], verify["pct"], verify["windows"]) == (4.08, 91.0, 6) and verify["spread"] > 0
    assert base["summary"]["throughput_tok_s"] == 243.83


def test_parselog_needs_no_database(django_assert_num_queries, db):
    with django_assert_num_queries(0):
        _parselog(log_path("spec_eagle3_tuned_2step.log"))


def _every_sample(tmp_path):
    # One file holding two serving launches and an nccl-tests run, as a shell session's log would.
    mixed = tmp_path / "two_launches_and_nccl_tests.log"
    mixed.write_bytes(b"".join(log_path(name).read_bytes() for name in (
        "spec_eagle3_tuned_2step.log", "sweep/sweep_default_2step.log", "nccl-tests_all_reduce_default.log")))
    paths = [mixed] + [p for root in (PROJECT_ROOT / "samples", DATA, PUBLIC_SAMPLES) for p in sorted(root.rglob("*"))
             if p.is_file() and p.suffix in (".log", ".txt", ".sh")
             and "traces" not in p.parts]  # profiler traces' own cycle logs: a format no log reader has
    assert len(paths) > 40
    return paths


@pytest.mark.parametrize("spill_at, spill_every", [(1, 1), (40, 7), (parsers.SPILL_AT, parsers.SPILL_EVERY)])
def test_parselog_folding_rows_as_they_come_prints_what_summarizing_every_record_does(spill_at, spill_every,
                                                                                    tmp_path):
    paths = _every_sample(tmp_path)
    with mock.patch.object(parsers, "SPILL_AT", spill_at), mock.patch.object(parsers, "SPILL_EVERY", spill_every):
        printed = _parselog(*paths)
    expected = []
    for path in paths:
        with open(path, "rb") as f:
            expected.append(json.dumps({"file": str(path), **summarize(parse_stream(f))}, separators=(",", ":"),
                                       default=str))
    assert printed == expected
    outs = [json.loads(line) for line in printed]
    # The mix covers what the sink must keep apart: several launches, nccl-tests tables, NCCL values.
    assert any(o["launches_count"] > 1 for o in outs)
    assert any(o["nccl_tests"] for o in outs) and any(o.get("collectives") for o in outs)
    assert any(o["nccl"]["status"] != "unknown" for o in outs)


def test_parselog_reports_a_bad_file_and_keeps_going(tmp_path):
    bad = tmp_path / "empty.log"
    bad.write_bytes(b"")
    lines = _parselog(bad, log_path("spec_eagle3_tuned_2step.log"))
    assert json.loads(lines[0])["error"]["message"] == "the file is empty"
    assert json.loads(lines[1])["summary"]["windows"] == 6


def test_parselog_prints_a_traces_breakdown_and_a_bad_traces_reason(tmp_path):
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                        '"pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0}]}')
    trace, bad = map(json.loads, _parselog(log_path("traces/trace_tp1_flash_k4_rank0.json.gz"), cpu_only))
    assert trace["formats"] == ["kineto_trace"]
    assert [p["name"] for p in trace["trace"]["ranks"][0]["phases"]] == ["Draft", "Target verify", "Accept"]
    assert "no GPU events" in bad["error"]["message"]


def test_parselog_fails_when_no_file_parses(tmp_path):
    bad = tmp_path / "x.log"
    bad.write_bytes(b"\x00\x00")
    with pytest.raises(CommandError):
        _parselog(bad)


@pytest.mark.django_db
def test_createtoken_prints_the_token_last_and_stores_only_its_hash(alice):
    out = StringIO()
    call_command("createtoken", "alice", stdout=out, stderr=StringIO())
    token = out.getvalue().strip().splitlines()[-1]
    assert token.startswith("rlt_") and len(token) > 40
    row = ApiToken.objects.get(user=alice)
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in json.dumps(list(ApiToken.objects.values()), default=str)


@pytest.mark.django_db
def test_createtoken_for_unknown_user_fails():
    with pytest.raises(CommandError, match="no user named"):
        call_command("createtoken", "nobody", stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_ingest_creates_a_queued_run_with_tags(alice):
    out = StringIO()
    call_command("ingest", str(log_path("spec_eagle3_tuned_2step.log")), "--name", "ci run",
                 "--tag", "nightly", "--user", "alice", "--project", "team", stdout=out)
    run = Run.objects.get()
    assert run.name == "ci run" and [t.name for t in run.tags.all()] == ["nightly"]
    assert f"run {run.id} queued" in out.getvalue()


@pytest.fixture
def eager_celery():
    """CELERY_TASK_ALWAYS_EAGER=1, as a demo without a worker sets it."""
    from webapp.celery import app as celery_app

    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.mark.django_db(transaction=True)
def test_ingest_wait_parses_in_this_process_when_celery_is_eager(alice, private_queue, eager_celery, settings):
    import redis

    out = StringIO()
    call_command("ingest", str(log_path("spec_eagle3_tuned_2step.log")), "--wait", "--timeout", "5", stdout=out)
    run = Run.objects.get()
    assert run.status == "ready" and run.steps == 2
    assert out.getvalue().splitlines()[-1].startswith(f"run {run.id} ready: ")
    # Nothing was left in the broker for a worker to parse a second time.
    assert redis.Redis.from_url(settings.REDIS_URL).llen(private_queue) == 0


@pytest.mark.django_db
def test_demo_creates_the_demo_user_and_runs_once(settings):
    settings.DEBUG = True
    call_command("demo", stdout=StringIO())
    call_command("demo", stdout=StringIO())
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    # django-axes counts attempts per request: authenticate() is given one, as the login view does.
    assert authenticate(RequestFactory().post("/accounts/login/"), username="demo", password="demo") is not None
    assert Run.objects.filter(project__name="demo").count() == 15


@pytest.mark.django_db
def test_demo_loads_the_sweep_samples_as_a_ready_sweep(settings, data_dir):
    from django.contrib.auth import get_user_model

    from ingest import services
    from runs.models import LogFile
    from runs.queries import sweep_for

    settings.DEBUG = True
    out = StringIO()
    call_command("demo", stdout=out)
    assert "/sweep/?project=demo&tag=sweep" in out.getvalue()
    for lf in LogFile.objects.filter(run__project__name="demo"):
        services.parse_logfile(lf.id)
    result, _ = sweep_for(get_user_model().objects.get(username="demo"), [], "demo", "sweep")
    assert [len(g["points"]) for g in result["groups"]] == [5, 1, 5]
    assert result["headline"] == [
        "Tuned NCCL wins at 1–2 steps, default NCCL from 3; best overall default NCCL 5-step, 692.4 tok/s."]


@pytest.mark.django_db
def test_demo_is_refused_without_debug(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError):
        call_command("demo", stdout=StringIO())


def test_cleanup_removes_only_old_orphans_and_dry_run_removes_nothing(settings, data_dir, tmp_path):
    import os
    import time

    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "uploads")
    os.mkdir(settings.FILE_UPLOAD_TEMP_DIR)
    logs = data_dir / "logs"
    logs.mkdir()
    old_upload = tmp_path / "uploads" / "tmpab12.upload.log"
    old_part, fresh_part, stored = logs / "a.part", logs / "b.part", logs / "c.log"
    for path in (old_upload, old_part, fresh_part, stored):
        path.write_bytes(b"x")
    day_ago = time.time() - 86400
    for path in (old_upload, old_part, stored):
        os.utime(path, (day_ago, day_ago))
    out = StringIO()
    call_command("cleanup", "--older-than", "3600", "--dry-run", stdout=out, stderr=StringIO())
    assert sorted(out.getvalue().split()) == sorted([str(old_upload), str(old_part)])
    assert old_upload.exists() and old_part.exists()
    call_command("cleanup", "--older-than", "3600", stdout=StringIO(), stderr=StringIO())
    assert not old_upload.exists() and not old_part.exists()
    assert fresh_part.exists() and stored.exists()  # too young, and a run's log: kept


def test_backfill_series_stores_the_series_of_runs_that_lack_them_once(alice, upload_run):
    from runs.series import SERIES_VERSION, compute_series

    old = upload_run(alice, "spec_eagle3_tuned_2step.log", name="stored before series")
    older = upload_run(alice, "spec_baseline_nospec.log", name="an older shape")
    kept = upload_run(alice, "sweep/sweep_default_2step.log", name="has its series")
    busy = upload_run(alice, "nccl-tests_all_reduce_default.log", name="still queued", parse=False)
    Run.objects.filter(id=old.id).update(series=None)
    Run.objects.filter(id=older.id).update(series={"v": SERIES_VERSION - 1})
    Run.objects.filter(id=kept.id).update(series={**kept.series, "marker": "untouched"})
    out, err = StringIO(), StringIO()
    call_command("backfill_series", stdout=out, stderr=err)
    assert "filled 2 run(s)" in err.getvalue()
    for run in (old, older):
        run.refresh_from_db()
        assert run.series["v"] == SERIES_VERSION
        assert run.series["phases"] == compute_series(run.id)["phases"] and run.series["files"]
    assert Run.objects.get(id=kept.id).series["marker"] == "untouched"
    assert Run.objects.get(id=busy.id).series is None  # its parse stores them
    err = StringIO()
    call_command("backfill_series", stdout=StringIO(), stderr=err)
    assert "filled 0 run(s)" in err.getvalue()


def test_backfill_series_of_one_run_leaves_the_others(alice, upload_run):
    one = upload_run(alice, "spec_eagle3_tuned_2step.log")
    other = upload_run(alice, "spec_baseline_nospec.log")
    Run.objects.filter(id__in=[one.id, other.id]).update(series=None)
    err = StringIO()
    call_command("backfill_series", "--run", str(one.id), stdout=StringIO(), stderr=err)
    assert "filled 1 run(s)" in err.getvalue()
    assert Run.objects.get(id=one.id).series and Run.objects.get(id=other.id).series is None
    with pytest.raises(CommandError, match="no run"):
        call_command("backfill_series", "--run", "999999")


def test_parselog_says_in_one_line_that_the_native_scanner_is_not_built_and_reads_all_the_same(monkeypatch):
    want = _parselog(log_path("spec_eagle3_tuned_2step.log"))
    monkeypatch.setattr(native, "_scan", None)
    out, err = StringIO(), StringIO()
    call_command("parselog", str(log_path("spec_eagle3_tuned_2step.log")), "--json", stdout=out, stderr=err)
    assert err.getvalue().count("\n") == 1 and "native scanner" in err.getvalue() and "reference engine" in err.getvalue()
    assert out.getvalue().splitlines() == want


def test_parselog_reads_a_file_with_an_endless_number_and_the_files_after_it(tmp_path):
    hostile = tmp_path / "steps.log"
    hostile.write_text(log_path("spec_eagle3_tuned_2step.log").read_text()
                       .replace("steps=2", "steps=" + "9" * 5000, 1))
    lines = _parselog(hostile, log_path("spec_eagle3_tuned_2step.log"))
    first, second = json.loads(lines[0]), json.loads(lines[1])
    assert "error" not in first and first["summary"]["windows"] == 6
    assert any("digits" in w["message"] for w in first["warnings"])
    assert second["summary"]["windows"] == 6
