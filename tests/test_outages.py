"""Outages with real parts: a private redis-server stopped and started, gunicorn, a real
Celery worker with the beat scheduler (the reconciler), the test database. Runs lost: 0."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from ingest.client import Multipart
from runs.models import LogFile, Run, Status
from tests.samples import log_path
from tests.synthetic import stored_rows

pytestmark = [pytest.mark.e2e, pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _call(method: str, url: str, token: str, body: Multipart | None = None,
          headers: dict | None = None) -> tuple[int, dict, dict]:
    head = {"Authorization": f"Bearer {token}", "Accept": "application/json", **(headers or {})}
    data = None
    if body is not None:
        head.update({"Content-Type": body.content_type, "Content-Length": str(len(body))})
        data = b"".join(body)
    req = urllib.request.Request(url, data=data, headers=head, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), dict(e.headers)


def _wait_all_done(ids: list[int], timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not Run.objects.filter(id__in=ids).exclude(status__in=[Status.READY, Status.FAILED]).exists():
            return time.monotonic() - start
        time.sleep(0.5)
    pytest.fail(f"runs not done after {timeout}s: {list(Run.objects.filter(id__in=ids).values_list('status'))}")


def test_uploads_while_redis_is_down_are_kept_and_parsed_when_it_returns(
        alice, private_redis, worker_queue, web_server, tmp_path, data_dir):
    """Broker down: every upload answers 202 (never 500), keeps its stored file, reads and /health
    keep answering; Redis back, the reconciler sends the runs and each is parsed once."""
    from webapp.auth import create_token

    token = create_token(alice)
    base = web_server(private_redis.url, queue=worker_queue.queue)
    private_redis.stop()
    sample = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    ids = []
    for i in range(5):
        path = tmp_path / f"outage-{i}.log"
        path.write_bytes(sample + f"# upload {i}\n".encode())  # distinct content: five runs
        status, body, _ = _call("POST", f"{base}/api/v1/runs", token,
                                Multipart({"meta": json.dumps({"name": f"outage {i}"})}, [path]))
        assert status == 202, body
        ids.append(body["id"])
    runs = Run.objects.filter(id__in=ids)
    assert runs.count() == 5 and set(runs.values_list("status", flat=True)) == {Status.QUEUED}
    for lf in LogFile.objects.filter(run_id__in=ids):
        assert (data_dir / lf.path).is_file(), "a committed run lost its stored file"
    status, listing, _ = _call("GET", f"{base}/api/v1/runs", token)
    assert status == 200 and {r["id"] for r in listing["items"]} >= set(ids)
    status, health, _ = _call("GET", f"{base}/api/v1/health", token)
    assert (status, health) == (200, {"status": "degraded", "database": "ok", "redis": "down", "parser": "native"})

    private_redis.start()  # empty: the messages never reached it
    worker_queue.start(redis_url=private_redis.url, beat=True, RUNLENS_RECONCILE_EVERY_SECONDS="5")
    took = _wait_all_done(ids, timeout=150)
    print(f"\n5 runs uploaded while Redis was down: all parsed {took:.0f} s after it came back")
    assert set(runs.values_list("status", flat=True)) == {Status.READY}
    for run_id in ids:
        assert stored_rows("phase", run_id=run_id, name="Target verify").height == 6  # no duplicates
    assert _call("GET", f"{base}/api/v1/health", token)[1]["status"] == "ok"


def test_web_server_killed_mid_upload_leaves_a_temp_file_that_cleanup_removes(alice, web_server, data_dir):
    """SIGKILL gunicorn while a large upload streams in: Django's spooled `*.upload.*` file stays
    behind (nothing else is committed); `manage.py cleanup` removes it once old enough."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from tests.samples import PROJECT_ROOT
    from webapp.auth import create_token

    token = create_token(alice)
    uploads = data_dir / "uploads"
    base = web_server("redis://127.0.0.1:1/0", RUNLENS_UPLOADS_DIR=str(uploads))
    port = int(base.rsplit(":", 1)[1])
    boundary = "killme"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.log\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall((f"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      f"Content-Length: {100 << 20}\r\n\r\n").encode() + head)
        for _ in range(8):
            sock.sendall(b"x" * (1 << 20))  # 8 MiB of 100: past the in-memory limit, spooled to disk
        deadline = time.monotonic() + 20
        while not list(uploads.glob("*.upload*")):
            assert time.monotonic() < deadline, "no spooled upload appeared"
            time.sleep(0.1)
        os.killpg(web_server.procs[-1].pid, signal.SIGKILL)  # gunicorn and its worker
    leftovers = list(uploads.glob("*.upload*"))
    assert leftovers and not Run.objects.exists()
    env = {**os.environ, "RUNLENS_DATA_DIR": str(data_dir), "RUNLENS_UPLOADS_DIR": str(uploads)}
    done = subprocess.run([sys.executable, "manage.py", "cleanup", "--older-than", "0"], cwd=PROJECT_ROOT,
                          env=env, capture_output=True, text=True, check=True)
    assert str(leftovers[0]) in done.stdout and not list(uploads.glob("*.upload*"))


def test_database_unreachable_is_503_with_retry_after_and_health_says_so(web_server, private_redis):
    """PostgreSQL away: every request is a 503 with Retry-After (never a 500), /health says what is down."""
    base = web_server(private_redis.url, DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere")
    status, health, _ = _call("GET", f"{base}/api/v1/health", "x")
    assert (status, health) == (503, {"status": "down", "database": "down", "redis": "ok", "parser": "native"})
    status, body, headers = _call("GET", f"{base}/api/v1/runs", "rlt_abc_def")
    assert status == 503 and body["error"]["code"] == "unavailable" and headers["Retry-After"] == "5"
    req = urllib.request.Request(f"{base}/", headers={"Cookie": "sessionid=" + "a1" * 16})
    with pytest.raises(urllib.error.HTTPError) as page:
        urllib.request.urlopen(req, timeout=30)
    assert page.value.code == 503 and page.value.headers["Retry-After"] == "5"
