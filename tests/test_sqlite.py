"""The embedded default (SQLite, `make run` without DATABASE_URL) under concurrent writes, with real
parts: gunicorn, a Celery worker, a private redis-server, a SQLite file of the test's own.

A parse holds no write transaction while it reads the log (rows spool to disk, then one short
transaction), the database is in WAL mode with a busy timeout and IMMEDIATE transactions, so
uploads made while a 40 MB log parses are all accepted (none answers 500)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import pytest

from ingest.client import Multipart
from tests.conftest import _free_port, _stop
from tests.samples import PROJECT_ROOT, log_path

pytestmark = pytest.mark.e2e

# A log that takes seconds to parse: lines of one NCCL process that the native scanner hands to
# Python one by one (a non-ASCII character on each; about 30 us a line here). Plain NCCL lines of a
# known process are read in C at over 100 MB/s, and were parsed before the test could act.
NOISE = "".join(f"vm:1560:1560 [0] NCCL INFO Channel {i}/0 : 0[0] -> 1[1] via P2P/CUMEM \u00b7\n"
                for i in range(400_000)).encode()
SETUP = """
from django.contrib.auth.models import User
from runs.models import Membership, Project
from webapp.auth import create_token
user = User.objects.create_user("ci", password="ci-pw")
Membership.objects.create(project=Project.objects.create(name="team"), user=user, role="admin")
print(create_token(user))
"""


def _post(base: str, token: str, path, name: str) -> int:
    body = Multipart({"meta": json.dumps({"name": name})}, [path])
    req = urllib.request.Request(f"{base}/api/v1/runs", data=b"".join(body), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": body.content_type, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _runs(db: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute("SELECT name, status FROM runs_run ORDER BY id").fetchall()


def test_uploads_while_a_big_log_parses_on_sqlite_are_all_accepted(private_redis, tmp_path):
    db = tmp_path / "runlens.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "RUNLENS_DATA_DIR": str(tmp_path / "data"),
           "REDIS_URL": private_redis.url, "RUNLENS_QUEUE": f"runlens-test-{uuid.uuid4().hex[:8]}",
           "REMAP_SIGTERM": "SIGQUIT", "RUNLENS_API_RATE": "10000/m"}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=PROJECT_ROOT, env=env, check=True, capture_output=True)
    token = subprocess.run([*manage, "shell", "-c", SETUP], cwd=PROJECT_ROOT, env=env, check=True,
                           capture_output=True, text=True).stdout.split()[-1]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    port = _free_port()
    procs = [
        subprocess.Popen([sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", env["RUNLENS_QUEUE"],
                          "-c", "1", "--without-heartbeat", "--without-gossip", "--without-mingle",
                          "--loglevel", "WARNING"], cwd=PROJECT_ROOT, env=env, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "gunicorn", "webapp.wsgi", "--bind", f"127.0.0.1:{port}",
                          "--workers", "2", "--threads", "4", "--log-level", "warning"], cwd=PROJECT_ROOT,
                         env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/v1/health", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        tail = log_path("spec_eagle3_tuned_2step.log").read_bytes()
        big = tmp_path / "big.log"
        big.write_bytes(NOISE + tail)
        assert _post(base, token, big, "big") == 202
        deadline = time.monotonic() + 60
        while _runs(db)[0][1] != "parsing":
            assert time.monotonic() < deadline, "the big log never started parsing"
            time.sleep(0.2)
        statuses: list[int] = []
        files = []
        for i in range(12):
            files.append(tmp_path / f"ci-{i}.log")
            files[-1].write_bytes(tail + f"# ci upload {i}\n".encode())
        threads = [threading.Thread(target=lambda i=i: statuses.append(_post(base, token, files[i], f"ci {i}")))
                   for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert _runs(db)[0][1] == "parsing", "the uploads did not overlap the parse"
        assert statuses == [202] * 12
        deadline = time.monotonic() + 240
        while any(status not in ("ready", "failed") for _, status in _runs(db)):
            assert time.monotonic() < deadline, f"not all parsed: {_runs(db)}"
            time.sleep(1)
        assert {status for _, status in _runs(db)} == {"ready"} and len(_runs(db)) == 13
        with sqlite3.connect(db) as conn:
            per_run = conn.execute("SELECT run_id, SUM(rows) FROM runs_sampleblock WHERE name = 'Target verify' "
                                   "GROUP BY run_id").fetchall()
        assert len(per_run) == 13 and {count for _, count in per_run} == {6}  # no row twice
    finally:
        for proc in procs:
            _stop(proc)
