"""/api/v1/runs...: list, detail, status, delete, reparse, tags, annotations (runs/api.py)."""

from pathlib import Path

import pytest

from ingest import registration, services
from runs.models import Annotation, LogFile, NcclSetting, Run, Status
from tests.samples import parsed_upload, upload_bytes

pytestmark = pytest.mark.django_db

TUNED = "spec_eagle3_tuned_2step.log"
BASELINE = "spec_baseline_nospec.log"


def test_list_shows_only_runs_of_my_projects(client, alice, eve, bearer, upload_run):
    mine = upload_run(alice, TUNED, parse=False)
    upload_run(eve, TUNED, parse=False, project="eve-lab", create_project=True)
    body = client.get("/api/v1/runs", headers=bearer(alice)).json()
    assert [r["id"] for r in body["items"]] == [mine.id] and body["total"] == 1
    assert body["items"][0]["project"] == "team" and body["items"][0]["url"].endswith(f"/runs/{mine.id}/")


def test_list_filters_by_tag_status_engine_steps_name_and_project(client, alice, bearer, upload_run):
    tuned = upload_run(alice, TUNED, tags=["h200"], name="tuned 2-step")
    baseline = upload_run(alice, BASELINE, name="baseline")
    queued = upload_run(alice, TUNED, parse=False, name="queued one", project="other", create_project=True)
    headers = bearer(alice)

    def ids(query: str) -> list[int]:
        return [r["id"] for r in client.get(f"/api/v1/runs?{query}", headers=headers).json()["items"]]

    assert ids("tag=h200") == [tuned.id]
    assert ids("status=queued") == [queued.id]
    assert ids(f"engine={tuned.engine}&steps=2") == [tuned.id]
    assert ids("q=BASE") == [baseline.id]
    assert ids("project=other") == [queued.id]


def test_list_pages_with_total(client, alice, bearer, upload_run):
    runs = [upload_bytes(alice, f"r{i}.log", f"line {i}\n".encode()) for i in range(5)]
    body = client.get("/api/v1/runs?page=2&page_size=2", headers=bearer(alice)).json()
    assert body["total"] == 5 and body["page"] == 2 and body["page_size"] == 2
    assert [r["id"] for r in body["items"]] == [runs[2].id, runs[1].id]  # newest first


def test_detail_has_parsed_contract_summary_tags_and_logfiles(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, tags=["eagle3"])
    body = client.get(f"/api/v1/runs/{run.id}", headers=bearer(alice)).json()
    assert body["parsed"] == run.parsed and body["parsed"]["spec"]["steps"] == 2
    assert body["throughput_tok_s"] == run.throughput_tok_s and body["steps"] == 2
    assert body["tags"] == ["eagle3"] and body["status"] == "ready"
    lf = run.logfiles.get()
    assert body["logfiles"] == [{
        "id": lf.id, "name": TUNED, "status": "ready", "error": "", "error_line": None, "partial": None,
        "refresh_warning": "", "kind": "log", "size": lf.size,
        "sha256": lf.sha256, "registered": False, "formats": lf.formats, "lines": lf.lines,
        "parsed_at": body["logfiles"][0]["parsed_at"], "warnings": lf.warnings,
    }]


def test_status_of_a_failed_run_gives_the_reason(client, alice, bearer):
    run = upload_bytes(alice, "empty.log", b"")
    services.parse_logfile(run.logfiles.get().id)
    body = client.get(f"/api/v1/runs/{run.id}/status", headers=bearer(alice)).json()
    assert body["status"] == "failed" and "empty.log" in body["error"] and "empty" in body["error"]
    assert body["logfiles"][0]["status"] == "failed" and body["logfiles"][0]["name"] == "empty.log"


@pytest.mark.parametrize(("method", "suffix", "data"), [
    ("get", "", None),
    ("get", "/status", None),
    ("delete", "", None),
    ("post", "/reparse", None),
    ("put", "/tags", {"tags": ["x"]}),
    ("get", "/annotations", None),
    ("post", "/annotations", {"kind": "note", "body": "mine now"}),
])
def test_runs_of_other_projects_do_not_exist_for_me(client, alice, eve, bearer, upload_run, method, suffix, data):
    run = upload_run(alice, TUNED, parse=False)
    kwargs = {"data": data, "content_type": "application/json"} if data else {}
    response = getattr(client, method)(f"/api/v1/runs/{run.id}{suffix}", headers=bearer(eve), **kwargs)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert Run.objects.filter(id=run.id, status=Status.QUEUED).exists()
    assert not Annotation.objects.exists() and not run.tags.exists()


def test_creator_deletes_run_with_its_rows_and_stored_files(client, alice, bearer, upload_run, data_dir,
                                                             django_capture_on_commit_callbacks):
    run = upload_run(alice, TUNED)
    stored = data_dir / run.logfiles.get().path
    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete(f"/api/v1/runs/{run.id}", headers=bearer(alice))
    assert response.status_code == 200 and response.json() == {"id": run.id, "deleted": True}
    assert not Run.objects.exists() and not LogFile.objects.exists() and not stored.exists()


def test_team_member_cannot_delete_someone_elses_run(client, alice, bob, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    response = client.delete(f"/api/v1/runs/{run.id}", headers=bearer(bob))
    assert response.status_code == 403 and response.json()["error"]["code"] == "not_allowed"
    assert Run.objects.filter(id=run.id).exists()


def test_project_admin_deletes_a_members_run(client, alice, bob, bearer, upload_run):
    run = upload_run(bob, TUNED, parse=False)
    assert client.delete(f"/api/v1/runs/{run.id}", headers=bearer(alice)).status_code == 200
    assert not Run.objects.exists()


def test_reparse_queues_every_file_again(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED)
    response = client.post(f"/api/v1/runs/{run.id}/reparse", headers=bearer(alice))
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert run.logfiles.get().status == Status.QUEUED


def test_put_tags_replaces_the_tags(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False, tags=["old"])
    response = client.put(f"/api/v1/runs/{run.id}/tags", {"tags": ["new", " ci ", ""]},
                          content_type="application/json", headers=bearer(alice))
    body = response.json()
    assert body["tags"] == ["ci", "new"]
    assert sorted(run.tags.values_list("name", flat=True)) == ["ci", "new"]
    assert [(h["by"], h["before"], h["after"]) for h in body["history"]] == [("alice", ["old"], ["ci", "new"])]


def test_a_viewer_cannot_replace_tags_and_nothing_is_recorded(client, alice, vic, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False, tags=["old"])
    response = client.put(f"/api/v1/runs/{run.id}/tags", {"tags": ["vandal"]},
                          content_type="application/json", headers=bearer(vic))
    assert response.status_code == 403 and response.json()["error"]["code"] == "role_required"
    assert list(run.tags.values_list("name", flat=True)) == ["old"] and not run.edits.exists()


def test_every_tag_replacement_is_recorded_in_order_and_a_no_op_is_not(client, alice, bob, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False, tags=["a"])
    for who, tags in ((alice, ["b"]), (bob, ["b"]), (bob, ["c", "b"])):
        client.put(f"/api/v1/runs/{run.id}/tags", {"tags": tags}, content_type="application/json",
                   headers=bearer(who))
    history = client.put(f"/api/v1/runs/{run.id}/tags", {"tags": []}, content_type="application/json",
                         headers=bearer(alice)).json()["history"]
    assert [(h["by"], h["before"], h["after"]) for h in history] == [
        ("alice", ["a"], ["b"]), ("bob", ["b"], ["b", "c"]), ("alice", ["b", "c"], [])]


def test_note_annotation_is_stored_and_listed(client, alice, bob, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    created = client.post(f"/api/v1/runs/{run.id}/annotations", {"body": "verify is 95% of the cycle"},
                          content_type="application/json", headers=bearer(bob))
    assert created.status_code == 201 and created.json()["author"] == "bob" and created.json()["kind"] == "note"
    listed = client.get(f"/api/v1/runs/{run.id}/annotations", headers=bearer(alice)).json()
    assert [(a["kind"], a["body"]) for a in listed] == [("note", "verify is 95% of the cycle")]
    assert Annotation.objects.get().author == bob


def test_nccl_annotation_declares_settings_and_refreshes_the_summary(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED)
    env = "NCCL_PROTO=LL\nNCCL_ALGO=Ring\nLD_LIBRARY_PATH=/opt/nccl/lib\nexport NCCL_MAX_NCHANNELS='16'\n"
    response = client.post(f"/api/v1/runs/{run.id}/annotations", {"kind": "nccl", "body": env},
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 201
    rows = NcclSetting.objects.filter(run=run, logfile=None)
    assert {(r.key, r.value, r.kind) for r in rows} == {
        ("NCCL_PROTO", "LL", "declared"), ("NCCL_ALGO", "Ring", "declared"), ("NCCL_MAX_NCHANNELS", "16", "declared"),
    }
    assert all(r.source.startswith("annotation by alice at 20") for r in rows)
    run.refresh_from_db()
    assert run.parsed["nccl"]["declared"]["NCCL_PROTO"] == "LL"


def test_nccl_annotation_with_a_bad_line_names_the_line_and_stores_nothing(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    response = client.post(f"/api/v1/runs/{run.id}/annotations", {"kind": "nccl", "body": "NCCL_PROTO=LL\noops\n"},
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "bad_nccl_line", "message": "line 2: expected NCCL_NAME=value, got 'oops'", "line": 2,
    }
    assert not Annotation.objects.exists() and not NcclSetting.objects.filter(run=run).exists()


def test_steps_annotation_sets_steps_and_survives_a_reparse(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED)
    response = client.post(f"/api/v1/runs/{run.id}/annotations", {"kind": "steps", "body": " 3 "},
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 201
    run.refresh_from_db()
    assert run.steps == 3 and run.steps_source.startswith("set by alice at ")
    services.requeue_run(run)
    services.parse_logfile(run.logfiles.get().id)
    run.refresh_from_db()
    assert run.steps == 3 and run.steps_source.startswith("set by alice at ")


def test_steps_annotation_that_is_not_a_number_is_refused(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    response = client.post(f"/api/v1/runs/{run.id}/annotations", {"kind": "steps", "body": "three"},
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_steps"
    assert not Annotation.objects.exists()


def test_id_beyond_bigint_is_a_validation_error_not_a_crash(client, alice, bearer):
    response = client.get("/api/v1/runs/99999999999999999999999", headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "validation_error"


def test_json_body_sent_as_text_plain_is_refused(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    response = client.put(f"/api/v1/runs/{run.id}/tags", '{"tags": ["x"]}', content_type="text/plain",
                          headers=bearer(alice))
    assert response.status_code == 415 and response.json()["error"]["code"] == "unsupported_media_type"
    assert not run.tags.exists()


@pytest.mark.parametrize(("method", "url"), [("get", "/api/v1/runs/-1"), ("delete", "/api/v1/runs/abc"),
                                             ("post", "/api/v1/nothing-here")])
def test_urls_no_operation_matches_answer_json_404(client, alice, bearer, method, url):
    response = getattr(client, method)(url, headers=bearer(alice))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_compare_gives_the_comparison_json_of_the_page(client, alice, upload_run):
    from webapp.auth import create_token

    base = upload_run(alice, "spec_baseline_nospec.log", name="base")
    dropped = upload_run(alice, "sweep/sweep_dropped_2step.log", name="dropped")
    token = create_token(alice)
    response = client.get(f"/api/v1/compare?runs={base.id},{dropped.id}&baseline={base.id}",
                          HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    body = response.json()
    assert body["baseline"] == base.id and [r["id"] for r in body["runs"]] == [base.id, dropped.id]
    assert body["runs"][1]["nccl"]["status"] == "drift"
    assert any("never got 6 NCCL variables" in h["text"] for h in body["headline"])


def test_compare_with_a_run_of_another_team_is_404(client, alice, eve, upload_run):
    from webapp.auth import create_token

    theirs = upload_run(alice, "spec_baseline_nospec.log")
    mine = upload_run(eve, "spec_baseline_nospec.log", project="eve-lab", create_project=True)
    response = client.get(f"/api/v1/compare?runs={mine.id},{theirs.id}",
                          HTTP_AUTHORIZATION=f"Bearer {create_token(eve)}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_compare_of_large_runs_reads_their_stored_series_not_their_rows(client, alice, bearer, big_run):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    a, b = big_run(5000, "a"), big_run(5000, "b")  # rows enough for a heavy answer, were they read
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/api/v1/compare?runs={a.id},{b.id}", headers=bearer(alice))
    assert response.status_code == 200 and len(response.content) < 20_000
    assert not [q for q in queries.captured_queries if "runs_sampleblock" in q["sql"]]
    body = response.json()
    assert set(body) >= {"baseline", "runs", "metrics", "phases", "config", "comparable", "headline"}
    assert next(m for m in body["metrics"] if m["key"] == "verify_ms")["runs"][str(b.id)]["noise"] is not None


def test_status_of_a_ready_run_counts_its_failed_files(client, alice, bearer):
    import io

    from ingest import services
    from tests.samples import log_path

    tuned = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    dump = b"\x00\x01binary\n"
    run, _ = registration.register_upload(alice, [registration.IncomingFile("server.log", io.BytesIO(tuned), len(tuned)),
                                              registration.IncomingFile("core.bin", io.BytesIO(dump), len(dump))],
                                      project="team")
    for lf in run.logfiles.all():
        services.parse_logfile(lf.id)
    body = client.get(f"/api/v1/runs/{run.id}/status", headers=bearer(alice)).json()
    assert body["status"] == "ready" and body["failed_files"] == 1 and "core.bin" in body["error"]
    listed = client.get("/api/v1/runs", headers=bearer(alice)).json()
    assert [r["failed_files"] for r in listed["items"] if r["id"] == run.id] == [1]


def test_run_detail_lists_each_result_block_with_its_settings(client, alice, bearer):
    sweep = Path(__file__).parent / "corpus" / "serving" / "sglang_bench_serving_rate_sweep_dlora.md"
    run = parsed_upload(alice, sweep.name, sweep.read_bytes())
    parsed = client.get(f"/api/v1/runs/{run.id}", headers=bearer(alice)).json()["parsed"]
    blocks = parsed["serving_blocks"]
    assert [b["request_rate"] for b in blocks] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert [b["output_throughput_tok_s"] for b in blocks][:2] == [825.94, 839.01]
    assert all(b["logfile"] == blocks[0]["logfile"] is not None for b in blocks)
    assert parsed["serving"] == {"result_blocks": 6} and parsed["summary"]["throughput_tok_s"] is None


def test_detail_says_which_lines_no_reader_used_and_the_gpu_topology(client, alice, bearer, upload_run):
    from tests.samples import parsed_upload

    run = parsed_upload(alice, "notes.log", b"a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
                                            b"Speculative decoding: reworded by a wrapper\n")
    parsed = client.get(f"/api/v1/runs/{run.id}", headers=bearer(alice)).json()["parsed"]
    assert parsed["unread"]["count"] == 1 and parsed["unread"]["files"][0]["lines"] == [2]
    topo = upload_run(alice, "../tests/corpus/nccl/nvidia_smi_topo_all_sys_4090_gpuallocator_issue17.txt")
    parsed = client.get(f"/api/v1/runs/{topo.id}", headers=bearer(alice)).json()["parsed"]
    assert parsed["topology"]["links"] == ["SYS"] and parsed["topology"]["gpus"] == 8


@pytest.mark.parametrize("query", ["tag=a&tag=b", "steps=1&steps=2", "status=ready&status=queued"])
def test_list_refuses_a_single_value_filter_given_twice(client, alice, bearer, upload_run, query):
    upload_run(alice, TUNED, tags=["a"], parse=False)
    response = client.get(f"/api/v1/runs?{query}", headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "validation_error"
