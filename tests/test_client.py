"""runlens-upload (ingest/client.py) against a live server, and curl the way CI and the newcomer check do.

No worker runs here: parse tasks go to a queue of the test's own, and a background thread parses
the queued files through ingest.services, as a worker would, while the client polls /status.
"""

import gzip
import json
import shutil
import subprocess
import threading
import time

import pytest
from django.db import connection

from ingest import client, services
from runs.models import LogFile, NcclSetting, Run, Status
from tests.samples import log_path
from webapp.auth import create_token

pytestmark = pytest.mark.django_db(transaction=True)

TUNED = "spec_eagle3_tuned_2step.log"


@pytest.fixture
def parser_thread(transactional_db, private_queue):
    """Parse every log file that is queued, until `files` of them are done (a stand-in worker)."""
    threads = []

    def start(files: int) -> None:
        def work() -> None:
            done: set[int] = set()
            try:
                deadline = time.monotonic() + 30
                while len(done) < files and time.monotonic() < deadline:
                    for lf_id in LogFile.objects.filter(status=Status.QUEUED).values_list("id", flat=True):
                        services.parse_logfile(lf_id)
                        done.add(lf_id)
                    time.sleep(0.05)
            finally:
                connection.close()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    for thread in threads:
        thread.join(timeout=35)


@pytest.fixture
def token(alice):
    return create_token(alice)


@pytest.mark.live
def test_upload_two_files_and_wait_until_ready(live_server, alice, token, parser_thread, tmp_path, capsys):
    gz = tmp_path / "baseline.log.gz"
    gz.write_bytes(gzip.compress(log_path("spec_baseline_nospec.log").read_bytes()))
    parser_thread(files=2)
    code = client.main(["--url", live_server.url, "--token", token, "--project", "team", "--name", "ci run",
                        "--tag", "ci", "--tag", "h200", "--wait", "--timeout", "30", str(log_path(TUNED)), str(gz)])
    out = capsys.readouterr().out
    run = Run.objects.get()
    assert code == 0, out
    assert out.splitlines() == [f"run {run.id}: {live_server.url}/runs/{run.id}/ (queued)", f"run {run.id}: ready"]
    assert run.status == Status.READY and run.name == "ci run"
    assert sorted(run.tags.values_list("name", flat=True)) == ["ci", "h200"]
    assert [lf.original_name for lf in run.logfiles.all()] == [TUNED, "baseline.log.gz"]


@pytest.mark.live
def test_wait_reports_a_failed_parse_and_exits_1(live_server, token, parser_thread, tmp_path, capsys):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    parser_thread(files=1)
    code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "30", str(empty)])
    out = capsys.readouterr().out
    assert code == 1 and "failed: empty.log: the file is empty" in out
    assert Run.objects.get().status == Status.FAILED


@pytest.mark.live
def test_a_truncated_gz_is_an_error_naming_the_file_whatever_allow_partial_says(
        live_server, token, private_queue, tmp_path, capsys):
    whole = gzip.compress(log_path(TUNED).read_bytes())
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    for extra in ([], ["--allow-partial"]):
        code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "30", *extra,
                            str(log_path(TUNED)), str(cut)])
        err = capsys.readouterr().err
        assert code == 3 and "truncated_gzip: cut.log.gz: " in err and "no end-of-stream marker" in err
    assert not Run.objects.exists()


def _cut_mid_line(tmp_path):
    raw = log_path(TUNED).read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(raw[: raw.rindex(b"\n", 0, len(raw) - 200) + 40])  # 40 bytes into a line
    return cut


@pytest.mark.live
def test_wait_exits_7_on_a_log_that_ends_mid_line_and_names_it(live_server, token, parser_thread, tmp_path, capsys):
    parser_thread(files=1)
    code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "30",
                        str(_cut_mid_line(tmp_path))])
    out = capsys.readouterr().out
    run = Run.objects.get()
    assert code == 7, out
    assert f"run {run.id}: partial: cut.log: line " in out and "ends mid-line" in out
    assert run.status == Status.READY and "--allow-partial" in out.splitlines()[-1]


@pytest.mark.live
def test_allow_partial_accepts_the_partial_log_and_still_prints_the_warning(
        live_server, token, parser_thread, tmp_path, capsys):
    parser_thread(files=1)
    code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "30", "--allow-partial",
                        str(_cut_mid_line(tmp_path))])
    out = capsys.readouterr().out
    run = Run.objects.get()
    assert code == 0, out
    assert out.splitlines()[-2:] == [f"run {run.id}: partial: {out.split('partial: ')[1].splitlines()[0]}",
                                     f"run {run.id}: ready"]
    assert "ends mid-line" in out


@pytest.mark.live
def test_wait_exits_1_when_one_file_failed_while_the_others_parsed(
        live_server, token, parser_thread, tmp_path, capsys):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    parser_thread(files=2)
    code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "30",
                        str(log_path(TUNED)), str(empty)])
    out = capsys.readouterr().out
    assert code == 1 and "failed: empty.log: " in out and Run.objects.get().status == Status.READY


@pytest.mark.live
def test_an_unknown_project_is_exit_3_with_the_servers_message_and_create_project_makes_it(
        live_server, token, private_queue, capsys):
    args = ["--url", live_server.url, "--token", token, "--project", "nightly-h200", str(log_path(TUNED))]
    assert client.main(args) == 3 and not Run.objects.exists()
    assert "HTTP 404 unknown_project: you are in no project named 'nightly-h200'" in capsys.readouterr().err
    assert client.main([*args, "--create-project"]) == 0
    assert Run.objects.get().project.name == "nightly-h200"
    assert client.main(["--url", live_server.url, "--token", token, "--create-project", str(log_path(TUNED))]) == 2


@pytest.mark.live
def test_token_from_environment_meta_json_and_ci_details(live_server, alice, token, private_queue, tmp_path,
                                                        monkeypatch, capsys):
    monkeypatch.setenv("RUNLENS_TOKEN", token)
    for name, value in {"GITHUB_SHA": "abc123", "GITHUB_REF_NAME": "main", "GITHUB_REPOSITORY": "team/serve",
                        "GITHUB_RUN_ID": "77", "GITHUB_SERVER_URL": "https://github.com"}.items():
        monkeypatch.setenv(name, value)
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"steps": 3, "nccl_env": {"NCCL_PROTO": "LL"}, "notes": "from CI", "tags": ["a"]}))
    assert client.main(["--url", live_server.url + "/", "--meta-json", str(meta), "--tag", "b",
                        str(log_path(TUNED))]) == 0
    run = Run.objects.get()
    assert run.notes == "from CI" and run.steps == 3 and sorted(run.tags.values_list("name", flat=True)) == ["a", "b"]
    assert run.meta["ci"] == {"commit": "abc123", "branch": "main",
                              "url": "https://github.com/team/serve/actions/runs/77"}
    assert NcclSetting.objects.get().key == "NCCL_PROTO"
    assert "(queued)" in capsys.readouterr().out


@pytest.mark.live
def test_second_upload_of_the_same_files_says_so(live_server, token, private_queue, capsys):
    args = ["--url", live_server.url, "--token", token, str(log_path(TUNED))]
    assert client.main(args) == 0 and client.main(args) == 0
    assert Run.objects.count() == 1 and "uploaded before" in capsys.readouterr().out.splitlines()[-1]


@pytest.mark.live
def test_server_refusal_is_a_clear_message_and_exit_3(live_server, alice, capsys):
    code = client.main(["--url", live_server.url, "--token", "rlt_bad_token", str(log_path(TUNED))])
    assert code == 3 and not Run.objects.exists()
    assert "HTTP 401 unauthenticated: authentication required" in capsys.readouterr().err


def test_unreachable_server_exit_3(capsys, tmp_path):
    log = tmp_path / "x.log"
    log.write_text("x\n")
    assert client.main(["--url", "http://127.0.0.1:9", "--token", "t", str(log)]) == 3
    assert "cannot reach http://127.0.0.1:9/api/v1/runs" in capsys.readouterr().err


def test_missing_token_or_file_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("RUNLENS_TOKEN", raising=False)
    assert client.main(["--url", "http://x", str(log_path(TUNED))]) == 2
    assert client.main(["--url", "http://x", "--token", "t", str(tmp_path / "missing.log")]) == 2
    err = capsys.readouterr().err
    assert "no token: pass --token or set RUNLENS_TOKEN" in err and "missing.log: not a readable file" in err


@pytest.mark.live
def test_wait_gives_up_after_the_timeout_exit_4(live_server, token, private_queue, capsys):
    code = client.main(["--url", live_server.url, "--token", token, "--wait", "--timeout", "1", str(log_path(TUNED))])
    assert code == 4 and "still queued after 1 s" in capsys.readouterr().err


def test_multipart_body_streams_files_in_chunks_with_an_exact_length(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "CHUNK", 1000)
    big = tmp_path / 'a "quoted".log'
    big.write_bytes(b"x" * 4500)
    body = client.Multipart({"meta": "{}"}, [big])
    chunks = list(body)
    assert sum(map(len, chunks)) == len(body) and max(map(len, chunks)) == 1000
    assert b'filename="a %22quoted%22.log"' in b"".join(chunks)


@pytest.mark.live
@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_curl_upload_and_status_as_the_readme_and_newcomer_check_do(live_server, token, private_queue):
    meta = json.dumps({"name": TUNED, "tags": ["newcomer"]})
    out = subprocess.run(
        ["curl", "-s", "-H", f"Authorization: Bearer {token}", "-F", f"files=@{log_path(TUNED)}", "-F",
         f"meta={meta}", f"{live_server.url}/api/v1/runs"], capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    run_id = json.loads(out)["id"]
    status = subprocess.run(
        ["curl", "-s", "-H", f"Authorization: Bearer {token}", f"{live_server.url}/api/v1/runs/{run_id}/status"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert json.loads(status)["status"] == "queued"
    run = Run.objects.get(id=run_id)
    assert run.name == TUNED and list(run.tags.values_list("name", flat=True)) == ["newcomer"]


def test_503_is_retried_with_bounded_backoff_honouring_retry_after():
    answers = [client.ClientError("HTTP 503", status=503, retry_after=3),
               client.ClientError("HTTP 503", status=503), client.ClientError("HTTP 503", status=503), {"id": 7}]
    slept: list[float] = []

    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert client.with_retries(call, max_delay=3, sleep=slept.append, say=lambda *a, **k: None) == {"id": 7}
    assert slept == [3, 2, 3]  # Retry-After, then 2 s, then 4 s capped at 3


def test_503_gives_up_after_the_last_attempt_and_other_errors_are_not_retried():
    calls = []

    def busy():
        calls.append(1)
        raise client.ClientError("HTTP 503", status=503)

    with pytest.raises(client.ClientError):
        client.with_retries(busy, attempts=3, sleep=lambda s: None, say=lambda *a, **k: None)
    assert len(calls) == 3

    def refused():
        calls.append(1)
        raise client.ClientError("HTTP 403", status=403)

    with pytest.raises(client.ClientError):
        client.with_retries(refused, sleep=lambda s: None, say=lambda *a, **k: None)
    assert len(calls) == 4


@pytest.mark.live
def test_a_profiler_trace_goes_up_beside_a_log_and_is_read_as_a_trace(live_server, alice, token, parser_thread,
                                                                      capsys):
    trace = log_path("traces/trace_tp1_flash_rank0.json.gz")
    parser_thread(files=2)
    code = client.main(["--url", live_server.url, "--token", token, "--project", "team", "--wait", "--timeout", "30",
                        str(log_path(TUNED)), str(trace)])
    out = capsys.readouterr().out
    assert code == 0, out
    run = Run.objects.get()
    assert dict(run.logfiles.values_list("original_name", "kind")) == {TUNED: "log", trace.name: "trace"}
    assert run.parsed["trace"]["ranks"][0]["phases"][0]["name"] == "Draft"
