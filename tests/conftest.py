"""Shared fixtures: golden files, sample paths, personas (alice administers the team, bob edits in it,
vic views it, eve is outside it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from urllib.parse import quote

import pytest
from hypothesis import settings as hypothesis_settings

from tests.samples import DATA, PROJECT_ROOT

# Hypothesis: `ci` (the default) draws the same examples on every run, so a red build is the code's
# doing and reruns the same; derandomize=True rules out an example database (Hypothesis forbids
# both), so an example a random run finds is pinned in its test with @example, reviewable in the
# diff. `random` (HYPOTHESIS_PROFILE=random, a second pass of `make check`) explores new examples,
# keeps failing ones in the local .hypothesis/ and prints the blob that reproduces a failure.
hypothesis_settings.register_profile("ci", derandomize=True)
hypothesis_settings.register_profile("random", derandomize=False, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# What a test starts beyond the database, by fixture: `make test-fast` leaves these markers out. A
# browser test always has a live server, so `browser` stands for `live` too.
_NEEDS_MARKER = {"live_server": ("live", "browser"), "web_server": ("live",), "browser": ("browser",),
                 "page": ("browser",), "worker": ("e2e",), "worker_queue": ("e2e",)}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true",
        help="rewrite tests/data/golden/*.json from the current parser output (then review the diff)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that starts a server, a browser or a worker without its marker would slow down
    `make test-fast` unseen: refuse to run until it is marked."""
    unmarked = sorted(
        f"{item.nodeid} (uses {fixture}: mark it {markers[0]})"
        for item in items
        for fixture, markers in _NEEDS_MARKER.items()
        if fixture in getattr(item, "fixturenames", ())
        and not any(item.get_closest_marker(marker) for marker in markers)
    )
    if unmarked:
        raise pytest.UsageError("tests without the marker of what they start:\n  " + "\n  ".join(unmarked))


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare a JSON-able value with tests/data/golden/<name>.json (or rewrite it with --regen-golden)."""

    def check(name: str, value: object) -> None:
        path = DATA / "golden" / f"{name}.json"
        text = json.dumps(value, indent=1, sort_keys=True) + "\n"
        if request.config.getoption("--regen-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists():
            # A missing golden file must not pass by writing itself: say how to make it, then review it.
            pytest.fail(f"no golden file {path.relative_to(PROJECT_ROOT)}: create it with "
                        f"`.venv/bin/python -m pytest {request.node.nodeid} --regen-golden` and review it",
                        pytrace=False)
        assert json.loads(text) == json.loads(path.read_text()), f"differs from {path}"

    return check


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Each test stores logs in its own data dir, and counts throttling in a cache of its own
    (the real one is Redis, shared by all web processes: counts would leak between tests), and
    hashes passwords cheaply."""
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()
    # Every persona's password is hashed when made and checked at each login: PBKDF2's 10^6 rounds
    # cost half a second each on this machine, MD5 nothing. No test is about the hash's strength;
    # PBKDF2 stays second so a password hashed outside the test (a subprocess) still checks.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                                 "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters (the API throttle) start at zero in every test."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def bearer(db):
    """`bearer(user)` -> request headers with a new API token of that user."""
    from webapp.auth import create_token

    def make(user) -> dict[str, str]:
        return {"Authorization": f"Bearer {create_token(user)}"}

    return make


def _user(django_user_model, name: str):
    return django_user_model.objects.create_user(username=name, password=f"{name}-pw")


@pytest.fixture
def alice(db, django_user_model):
    """Owns the project `team`, and may register logs by server path."""
    from django.contrib.auth.models import Permission

    from runs.models import Membership, Project

    user = _user(django_user_model, "alice")
    user.user_permissions.add(Permission.objects.get(codename="register_path"))
    project = Project.objects.create(name="team")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def bob(alice, django_user_model):
    """An editor in alice's project."""
    from runs.models import Membership, Project

    user = _user(django_user_model, "bob")
    Membership.objects.create(project=Project.objects.get(name="team"), user=user)
    return user


@pytest.fixture
def vic(alice, django_user_model):
    """A viewer in alice's project: reads and annotates, changes nothing else."""
    from runs.models import Membership, Project

    user = _user(django_user_model, "vic")
    Membership.objects.create(project=Project.objects.get(name="team"), user=user, role=Membership.Role.VIEWER)
    return user


@pytest.fixture
def eve(db, django_user_model):
    """Outside the team: must never see its runs."""
    return _user(django_user_model, "eve")


@pytest.fixture
def upload_run(data_dir):
    """Register a run from sample logs as `user` (parse it too unless parse=False)."""
    from ingest import registration, services

    def make(user, *names: str, parse: bool = True, project: str | None = "team", **kw):
        from tests.samples import log_path

        handles = [open(log_path(n), "rb") for n in names]
        try:
            run, _ = registration.register_upload(
                user, [registration.IncomingFile(n.split("/")[-1], h, log_path(n).stat().st_size)
                       for n, h in zip(names, handles, strict=True)],
                project=project, **kw,
            )
        finally:
            for h in handles:
                h.close()
        if parse:
            for lf in run.logfiles.all():
                services.parse_logfile(lf.id)
            run.refresh_from_db()
        return run

    return make



@pytest.fixture
def big_run(alice):
    """`big_run(windows, name)`: a ready run of that many windows, its rows written straight into
    the tables (tests/synthetic.py), its stored series computed as refresh_run does."""
    from runs.series import fresh_series
    from tests import synthetic

    def make(windows: int = 100_000, name: str = "big", spike: int | None = None):
        run = synthetic.make_run(alice.projects.get(), alice, windows, name=name, spike=spike)
        run.series = fresh_series(run)
        run.save(update_fields=["series"])
        return run

    return make


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker_queue(transactional_db, data_dir):
    """`start()` launches a Celery worker process on a queue of this test's own, reading the test
    database; stopped at the end. `.queue` names the queue (tasks this test sends go there)."""
    from django.conf import settings

    from webapp.celery import app as celery_app

    class Workers:
        queue = f"runlens-test-{uuid.uuid4().hex[:8]}"
        procs: list[subprocess.Popen] = []

        def start(self, redis_url: str | None = None, beat: bool = False, **extra_env: str) -> subprocess.Popen:
            """`beat`: run the beat scheduler too (the reconciler); `extra_env`: more settings."""
            env = {**os.environ, "DATABASE_URL": _database_url(), "RUNLENS_DATA_DIR": str(data_dir),
                   "RUNLENS_QUEUE": self.queue, "REDIS_URL": redis_url or settings.REDIS_URL,
                   "REMAP_SIGTERM": "SIGQUIT", **extra_env}  # as in Procfile and scripts/run.sh
            more = ["--beat", "--schedule", str(data_dir / f"beat-{len(self.procs)}")] if beat else []
            proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", self.queue, "-c", "1",
                 "--without-heartbeat", "--without-gossip", "--without-mingle",
                 "-n", f"{self.queue}-{len(self.procs)}@%h", "--loglevel", "WARNING", *more],
                cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True,  # its own process group: a test may SIGKILL the whole worker
            )
            self.procs.append(proc)
            return proc

    workers = Workers()
    old_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = workers.queue
    yield workers
    celery_app.conf.task_default_queue = old_queue
    for proc in workers.procs:
        _stop(proc)
    from django.db import connection

    connection.close()


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process this test started, and its children (its own process group)."""
    import signal

    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # pool children left behind by a killed parent
    except (ProcessLookupError, PermissionError):
        pass


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    """A redis-server of this test's own on its own port, to stop and start for outages (never
    the machine's shared Redis). No persistence: a stop loses every queued message."""

    def __init__(self, tmp: str) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.tmp = tmp
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        import time

        import redis

        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", self.tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except redis.exceptions.ConnectionError:
                assert time.monotonic() < deadline, "private redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(str(tmp_path))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def web_server(transactional_db, data_dir):
    """`start(redis_url, **env)` runs gunicorn (the production server) against the test database
    and returns its base URL; stopped at the end."""
    import time
    import urllib.error
    import urllib.request

    procs: list[subprocess.Popen] = []

    def start(redis_url: str, queue: str = "runlens-test-none", **extra_env: str) -> str:
        port = _free_port()
        env = {**os.environ, "DATABASE_URL": _database_url(), "RUNLENS_DATA_DIR": str(data_dir),
               "RUNLENS_QUEUE": queue, "REDIS_URL": redis_url, "DEBUG": "1", **extra_env}
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "webapp.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
             "--threads", "4", "--log-level", "warning"],
            cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/v1/health", timeout=5).read()
                return base
            except urllib.error.HTTPError:
                return base  # answering (503 health is an answer too)
            except OSError:
                assert proc.poll() is None, f"gunicorn exited:\n{proc.stdout.read()}"
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)

    start.procs = procs  # a test may kill a server it started
    yield start
    for proc in procs:
        _stop(proc)
    from django.db import connection

    connection.close()


@pytest.fixture
def worker(worker_queue):
    """A running Celery worker process (see worker_queue)."""
    return worker_queue.start()


@pytest.fixture
def private_queue(settings):
    """Parse tasks go to a queue of this test's own that no worker reads (deleted afterwards): a test
    that commits (live_server, transaction=True) must not hand its ids to someone's real worker."""
    import redis

    from webapp.celery import app as celery_app

    queue = f"runlens-test-{uuid.uuid4().hex[:8]}"
    old_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    yield queue
    celery_app.conf.task_default_queue = old_queue
    redis.Redis.from_url(settings.REDIS_URL).delete(
        queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}",
    )
