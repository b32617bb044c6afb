"""The processes the benchmark drives: its own PostgreSQL database and Redis db, gunicorn and
Celery workers started as scripts/run.sh starts them, `manage.py` commands, and an HTTP client
(session cookie for pages, an API token for /api/v1). Everything started here is stopped by
Stack.close(), which run.py calls on success, failure and Ctrl-C alike.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ingest import client as upload_client  # noqa: E402  (the CI client: standard library only)

VENV_BIN = ROOT / ".venv" / "bin"
PY = str(VENV_BIN / "python")
PASSWORD = "bench-password-not-secret"


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc, no dependency)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def status_kb(pid: int, field: str) -> int:
    """VmRSS / VmHWM of a process in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Timed:
    status: int
    body: bytes
    seconds: float


class Stack:
    def __init__(self, *, db_url: str, redis_url: str, timeout: int, log=print) -> None:
        self.admin_url = db_url
        base, _, name = db_url.rpartition("/")
        self.db_name = name
        self.db_url = db_url
        self.postgres_url = f"{base}/postgres"
        self.redis_url = redis_url
        self.tmp = Path(tempfile.mkdtemp(prefix="runlens-bench-"))
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.timeout = timeout
        self.log = log
        self.procs: dict[str, subprocess.Popen] = {}
        self.token = ""
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.env = {
            **os.environ,
            "DATABASE_URL": db_url, "REDIS_URL": redis_url, "RUNLENS_CACHE_URL": redis_url,
            "RUNLENS_DATA_DIR": str(self.tmp / "data"), "STATIC_ROOT": str(self.tmp / "static"),
            "RUNLENS_QUEUE": "runlens_bench", "DEBUG": "0", "SECRET_KEY": "runlens-bench-not-secret",
            "RUNLENS_HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING",
            # The bench sends thousands of API requests from one user within a minute.
            "RUNLENS_API_RATE": "1000000/m", "RUNLENS_LOGIN_RATE": "1000/m", "CELERY_TASK_ALWAYS_EAGER": "0",
            # One parse may take minutes on slow code; the reconciler must not re-queue it meanwhile.
            "RUNLENS_RECONCILE_AFTER_SECONDS": "7200",
        }
        self._sql: psycopg.Connection | None = None
        self.database_cpu: dict[int, float] = {}  # wait_ready's samples: {backend pid: CPU seconds}
        # wait_ready's longest look at a parsing file whose heartbeat was this many seconds old (the
        # reconciler takes a claim silent for RUNLENS_CLAIM_STALE_SECONDS, 60 by default, as dead).
        self.heartbeat_silence = 0.0

    # -- the database and Redis ---------------------------------------------------------------------

    def create(self) -> None:
        self.drop_database()
        with psycopg.connect(self.postgres_url, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{self.db_name}"')
        self.flush_redis()
        self.manage("migrate", "--noinput")
        out = self.manage("createtoken", "bench", "--create-user", "--name", "bench")
        self.token = out.strip().splitlines()[-1]
        # Pages need a session: give the token's user a password (a normal project member, not staff).
        self.manage("shell", "-c", "from django.contrib.auth import get_user_model as g; "
                    f"u = g().objects.get(username='bench'); u.set_password({PASSWORD!r}); u.save()")

    def pg_version(self) -> str:
        with psycopg.connect(self.postgres_url, autocommit=True) as c:
            row = c.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"

    def drop_database(self) -> None:
        with psycopg.connect(self.postgres_url, autocommit=True) as c:
            c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                      "pg_backend_pid()", (self.db_name,))
            c.execute(f'DROP DATABASE IF EXISTS "{self.db_name}"')

    def flush_redis(self) -> None:
        import redis  # celery's dependency, installed with runlens

        redis.Redis.from_url(self.redis_url).flushdb()

    @property
    def sql(self) -> psycopg.Connection:
        if self._sql is None or self._sql.closed:
            self._sql = psycopg.connect(self.db_url, autocommit=True)
        return self._sql

    def run_count(self) -> int:
        row = self.sql.execute("SELECT count(*) FROM runs_run").fetchone()
        return int(row[0]) if row else 0

    def heartbeat_age(self, run_ids: list[int]) -> float:
        """Seconds since the oldest heartbeat of these runs' parsing files (0 when none parses).
        A plain read: it waits for no lock, and sees the last beat committed."""
        row = self.sql.execute(
            "SELECT EXTRACT(EPOCH FROM MAX(clock_timestamp() - COALESCE(heartbeat_at, claimed_at))) FROM runs_logfile "
            "WHERE run_id = ANY(%s) AND status = 'parsing'", (run_ids,)).fetchone()
        return float(row[0]) if row and row[0] is not None else 0.0

    def run_status(self, run_ids: list[int]) -> dict[int, str]:
        rows = self.sql.execute("SELECT id, status FROM runs_run WHERE id = ANY(%s)", (run_ids,)).fetchall()
        return {r[0]: r[1] for r in rows}

    # -- processes ----------------------------------------------------------------------------------

    def manage(self, *args: str) -> str:
        done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args[:2])} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    def _start(self, name: str, argv: list[str], extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        logf = open(self.tmp / f"{name}.log", "ab")
        # A session of its own: stop() signals the whole group (gunicorn's and celery's children too).
        p = subprocess.Popen(argv, cwd=ROOT, env={**self.env, **(extra_env or {})}, stdout=logf,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = p
        return p

    def start_web(self) -> None:
        # As scripts/run.sh runs it, with a longer --timeout: a slow page is measured, not killed at 30 s.
        self._start("web", [str(VENV_BIN / "gunicorn"), "webapp.wsgi", "--bind", f"127.0.0.1:{self.port}",
                            "--workers", "2", "--threads", "4", "--backlog", "2048", "--graceful-timeout", "20",
                            "--timeout", str(self.timeout)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self._alive("web")
            try:
                with urllib.request.urlopen(self.base + "/api/v1/health", timeout=5):
                    pass
                if len(self.web_workers()) == 2:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer in 60 s; see {self.tmp / 'web.log'}")

    def web_workers(self) -> list[int]:
        p = self.procs.get("web")
        return descendants(p.pid) if p else []

    def start_worker(self, concurrency: int, wait: bool = True) -> subprocess.Popen:
        """A Celery worker as scripts/run.sh starts one (without beat); by default, once it is ready."""
        name = f"worker{concurrency}"
        logfile = self.tmp / f"{name}.log"
        seen = logfile.stat().st_size if logfile.exists() else 0
        p = self._start(name, [
            str(VENV_BIN / "celery"), "-A", "webapp", "worker", "--loglevel", "INFO",
            "--concurrency", str(concurrency), "--hostname", f"bench{concurrency}-{os.getpid()}@%h",
        ], {"REMAP_SIGTERM": "SIGQUIT"})
        deadline = time.monotonic() + 120
        while wait and time.monotonic() < deadline:
            self._alive(name)
            with open(logfile, "rb") as f:
                f.seek(seen)
                if b" ready." in f.read():
                    return p
            time.sleep(0.2)
        if wait:
            raise RuntimeError(f"{name} not ready after 120 s; see {logfile}")
        return p

    def worker_peak_rss(self, concurrency: int) -> int:
        p = self.procs[f"worker{concurrency}"]
        return max([status_kb(pid, "VmHWM") for pid in [p.pid, *descendants(p.pid)]] or [0])

    def worker_cpu_seconds(self, concurrency: int) -> float:
        """CPU seconds (user + system) the worker and its children have used so far."""
        p = self.procs[f"worker{concurrency}"]
        return sum(cpu_seconds(pid) for pid in [p.pid, *descendants(p.pid)])

    def database_cpu_seconds(self) -> dict[int, float]:
        """CPU seconds so far of each live PostgreSQL backend serving the bench's database (the
        worker's COPY and queries run there): {pid: seconds}. A backend's seconds are lost when it
        exits, so callers sample this as they poll and keep each pid's largest figure."""
        mark = f" {self.db_name} ".encode()
        out = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    title = f.read()
            except OSError:
                continue
            if title.startswith(b"postgres: ") and mark in title:
                out[int(entry)] = cpu_seconds(int(entry))
        return out

    def check_alive(self) -> None:
        for name in list(self.procs):
            self._alive(name)

    def _alive(self, name: str) -> None:
        p = self.procs[name]
        if p.poll() is not None:
            tail = (self.tmp / f"{name}.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{name} exited with {p.returncode}:\n{tail}")

    def stop(self, name: str, grace: float = 15) -> None:
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        except ProcessLookupError:
            pass

    def close(self, keep_db: bool = False) -> None:
        for name in list(self.procs):
            self.stop(name, grace=10)
        if self._sql is not None:
            self._sql.close()
        try:
            if not keep_db:
                self.drop_database()
            self.flush_redis()
        except Exception as e:  # cleanup must finish: say what was left behind
            self.log(f"cleanup: {e}")
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- HTTP ---------------------------------------------------------------------------------------

    def login(self) -> None:
        page = self.get("/accounts/login/", api=False).body.decode()
        m = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if not m:
            raise RuntimeError("no CSRF token on the login page")
        form = urllib.parse.urlencode({"username": "bench", "password": PASSWORD,
                                       "csrfmiddlewaretoken": m.group(1), "next": "/"}).encode()
        self.get("/accounts/login/", api=False, data=form,
                 headers={"Content-Type": "application/x-www-form-urlencoded", "Referer": self.base + "/"})
        if not any(c.name == "sessionid" for c in self.jar):
            raise RuntimeError("login failed")

    def get(self, path: str, *, api: bool = True, data: bytes | None = None,
            headers: dict[str, str] | None = None, method: str | None = None) -> Timed:
        """One request, timed from sending to the last byte read (server time on localhost)."""
        h = {"Authorization": f"Bearer {self.token}"} if api else {}
        req = urllib.request.Request(self.base + path, data=data, headers={**h, **(headers or {})}, method=method)
        start = time.perf_counter()
        try:
            with self.opener.open(req, timeout=self.timeout + 30) as r:
                body, status, url = r.read(), r.status, r.url
        except urllib.error.HTTPError as e:
            body, status, url = e.read(), e.code, path
        seconds = time.perf_counter() - start
        if "/accounts/login/" in url and "/accounts/login/" not in path:
            raise RuntimeError(f"GET {path}: redirected to the login page")
        return Timed(status, body, seconds)

    def ok(self, path: str, **kwargs) -> Timed:
        t = self.get(path, **kwargs)
        if t.status >= 400:
            raise RuntimeError(f"{path}: HTTP {t.status}: {t.body[:300]!r}")
        return t

    def post_json(self, path: str, payload: dict) -> Timed:
        return self.ok(path, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})

    def upload(self, paths: list[Path], name: str, project: str = "bench") -> tuple[int, float]:
        """POST /api/v1/runs with the CI client's streaming multipart body: (run id, seconds to 202)."""
        meta = {"name": name, "project": project, "create_project": True}  # made on the first upload
        body = upload_client.Multipart({"meta": json.dumps(meta)}, paths)
        start = time.perf_counter()
        out = upload_client.request("POST", self.base + "/api/v1/runs", self.token, body, timeout=self.timeout + 600)
        return int(out["id"]), time.perf_counter() - start

    def wait_ready(self, run_ids: list[int], timeout: float, poll: float = 0.1) -> float:
        """Seconds until every run is ready (polled in the database); a failed run is an error."""
        start = time.perf_counter()
        left = set(run_ids)
        self.database_cpu = {}
        self.heartbeat_silence = 0.0
        while left:
            for pid, seconds in self.database_cpu_seconds().items():
                self.database_cpu[pid] = max(seconds, self.database_cpu.get(pid, 0.0))
            self.heartbeat_silence = max(self.heartbeat_silence, self.heartbeat_age(list(left)))
            for rid, status in self.run_status(list(left)).items():
                if status == "ready":
                    left.discard(rid)
                elif status == "failed":
                    err = self.sql.execute("SELECT error FROM runs_run WHERE id = %s", (rid,)).fetchone()
                    raise RuntimeError(f"run {rid} failed: {err[0] if err else '?'}")
            if left:
                if time.perf_counter() - start > timeout:
                    raise RuntimeError(f"{len(left)} run(s) not ready after {timeout:.0f} s")
                self.check_alive()
                time.sleep(poll)
        return time.perf_counter() - start
