"""webapp.settings: environment readers and the production configuration."""

import os
import secrets
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.samples import PROJECT_ROOT
from webapp.settings import database_from_url, env_bool, env_seconds


def test_database_url_for_postgres():
    db = database_from_url("postgres://u:p%40ss@db.example:6543/runs?sslmode=require")
    assert db["ENGINE"] == "django.db.backends.postgresql" and db["NAME"] == "runs"
    assert (db["USER"], db["PASSWORD"], db["HOST"], str(db["PORT"])) == ("u", "p@ss", "db.example", "6543")
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_database_url_for_sqlite_relative_and_absolute():
    assert database_from_url("sqlite:////tmp/x.db")["NAME"] == "/tmp/x.db"
    assert database_from_url("sqlite:///var/x.db")["NAME"].endswith("/var/x.db")


def test_database_url_with_a_socket_directory_is_unquoted():
    db = database_from_url("postgres://postgres@%2Fvar%2Frun%2Fpostgresql/test")
    assert db["HOST"] == "/var/run/postgresql" and db["NAME"] == "test"


def test_unknown_database_scheme_fails_loudly():
    with pytest.raises(ImproperlyConfigured, match="mysql"):
        database_from_url("mysql://x/y")


def test_claim_timings_take_fractions_of_a_second_and_refuse_garbage(monkeypatch):
    monkeypatch.setenv("X_SECONDS", "0.5")
    assert env_seconds("X_SECONDS", 10) == 0.5
    monkeypatch.delenv("X_SECONDS")
    assert env_seconds("X_SECONDS", 10) == 10.0
    for garbage in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("X_SECONDS", garbage)
        with pytest.raises(ImproperlyConfigured, match="X_SECONDS"):
            env_seconds("X_SECONDS", 10)


def test_env_bool_refuses_garbage(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", False)


def test_celery_is_configured_for_reliability(settings):
    assert settings.CELERY_ACCEPT_CONTENT == ["json"] and settings.CELERY_TASK_SERIALIZER == "json"
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > settings.CELERY_TASK_TIME_LIMIT
    assert settings.CELERY_TASK_TIME_LIMIT > settings.CELERY_TASK_SOFT_TIME_LIMIT


def test_production_claim_timings_recover_a_dead_worker_within_3_minutes(settings):
    """RELIABILITY C2's promise: a claim is stale CLAIM_STALE after its last heartbeat and the next
    reconcile (every RECONCILE_EVERY) queues it again; a minute is left for a worker's boot and the
    parse. test_e2e_worker.py proves the mechanism with the same timings scaled down."""
    assert settings.HEARTBEAT_SECONDS * 3 <= settings.CLAIM_STALE_SECONDS  # a late beat or two is no death
    assert settings.CLAIM_STALE_SECONDS + settings.RECONCILE_EVERY_SECONDS <= 180 - 60


def test_the_celery_app_really_uses_the_visibility_timeout():
    """celery#7651: the setting can silently not take effect; read it back from the app."""
    from django.conf import settings

    from webapp.celery import app

    assert app.conf.broker_transport_options["visibility_timeout"] == settings.VISIBILITY_TIMEOUT
    assert app.conf.task_acks_late and app.conf.accept_content == ["json"]


def test_production_settings_pass_the_deploy_check(tmp_path):
    """RELIABILITY A7: `check --deploy` with production settings has nothing to say."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}  # set by browser tests
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), RUNLENS_DATA_DIR=str(tmp_path),
               ALLOWED_HOSTS="runlens.example")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr + result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": "", "RUNLENS_DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT_ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr


def test_runserver_keeps_no_database_connection_between_requests():
    """runserver's thread per request must not keep a PostgreSQL connection each."""
    code = ("import sys; sys.argv = ['manage.py', {cmd!r}]; from webapp import settings; "
            "print(settings.DATABASES['default']['CONN_MAX_AGE'])")
    env = {**os.environ, "DATABASE_URL": "postgres://u@db.example/runs"}
    ages = [subprocess.run([sys.executable, "-c", code.format(cmd=cmd)], cwd=PROJECT_ROOT, env=env,
                           capture_output=True, text=True, check=True).stdout.strip() for cmd in ("runserver", "migrate")]
    assert ages == ["0", "60"]
