"""Outages with real parts (issue 14): a private redis-server stopped and started, gunicorn, a real
Celery worker with the beat scheduler (the reconciler), the test database. Runs lost: 0."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from ingest.client import Multipart
from runs.models import LogFile, PhaseSample, Run, Status
from tests.samples import log_path

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


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
    assert (status, health) == (200, {"status": "degraded", "database": "ok", "redis": "down"})

    private_redis.start()  # empty: the messages never reached it
    worker_queue.start(redis_url=private_redis.url, beat=True, RUNLENS_RECONCILE_EVERY_SECONDS="5")
    _wait_all_done(ids, timeout=150)
    assert set(runs.values_list("status", flat=True)) == {Status.READY}
    for run_id in ids:
        assert PhaseSample.objects.filter(run_id=run_id, name="Target verify").count() == 6  # no duplicates
    assert _call("GET", f"{base}/api/v1/health", token)[1]["status"] == "ok"
