"""runlens settings: one file, every knob from the environment, defaults that run from a fresh
checkout (SQLite under var/, Redis on localhost). Test-only tweaks live in tests/conftest.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_seconds(name: str, default: float) -> float:
    """A duration in seconds, fractions allowed (tests scale the claim timings down below 1 s)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return float(default)
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a positive number of seconds")
    return value


def database_from_url(url: str) -> dict:
    """`postgres://user:pass@host:5432/name` (a socket dir as `%2Fvar%2Frun%2Fpostgresql`) or
    `sqlite:///path` -> a DATABASES entry, by dj-database-url. Only the two engines runlens runs on."""
    scheme = url.partition("://")[0]
    if scheme not in ("sqlite", "postgres", "postgresql", "pgsql"):
        raise ImproperlyConfigured(f"DATABASE_URL scheme {scheme!r} is not supported (postgres or sqlite)")
    db: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True))
    if db["ENGINE"].endswith("sqlite3"):
        # sqlite:///var/x.db is relative to the project (not to the current directory), sqlite:////abs/x.db absolute.
        db["NAME"] = str(BASE_DIR / db["NAME"])
        db.pop("CONN_MAX_AGE", None)
        db.pop("CONN_HEALTH_CHECKS", None)
    return db


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env("SECRET_KEY") or ("dev-only-insecure-key-set-SECRET_KEY-in-production" if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
ALLOWED_HOSTS = [h for h in env("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env("CSRF_TRUSTED_ORIGINS").split(",") if o]

DATA_DIR = Path(env("RUNLENS_DATA_DIR", str(BASE_DIR / "var"))).resolve()  # created by RunsConfig.ready()
LOG_ROOTS = [Path(p).resolve() for p in env("RUNLENS_LOG_ROOTS").split(os.pathsep) if p]

DATABASES = {"default": database_from_url(env("DATABASE_URL", f"sqlite:///{DATA_DIR / 'runlens.sqlite3'}"))}
if "runserver" in sys.argv[1:2] and "CONN_MAX_AGE" in DATABASES["default"]:
    # runserver serves each request on a new thread: a connection kept per thread piles up to
    # "too many clients" under a burst. `make run` uses gunicorn's fixed thread pool.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # One writer at a time, so: WAL (readers never wait for the writer), a busy timeout (a writer
    # waits for the lock, then the request answers 503), and IMMEDIATE transactions (the write
    # lock is taken at BEGIN, so no read-then-write upgrade fails with "database is locked").
    DATABASES["default"]["OPTIONS"] = {
        "timeout": env_int("RUNLENS_SQLITE_BUSY_SECONDS", 20),
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not :memory:, so a real worker process can see the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-runlens.sqlite3")}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",  # login attempts limited (AXES_* below)
    "ninja",  # its static Swagger UI for /api/v1/docs: no CDN (air-gapped clusters)
    "runs",
    "ingest",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (our JS/CSS, ninja's Swagger UI) from gunicorn too, without a separate server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webapp.middleware.SecurityHeadersMiddleware",
    "webapp.middleware.ServiceUnavailableMiddleware",
    "webapp.middleware.RejectNulQueryMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes documents
]

# Guessing passwords: after RUNLENS_LOGIN_FAILURES wrong ones for a username from one address, that
# pair is locked out for RUNLENS_LOGIN_COOLOFF_MINUTES (django-axes, counts in the database). The
# one login limit: counted in the database it holds while Redis is down, only failures
# count, and a guesser elsewhere cannot lock a user out of their own address (docs/reliability.md).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("RUNLENS_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = env_int("RUNLENS_LOGIN_COOLOFF_MINUTES", 15) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# ...and a cap per username across addresses, its owner's included (webapp/logins.py says why).
LOGIN_FAILURES_PER_USERNAME = env_int("RUNLENS_LOGIN_FAILURES_PER_USERNAME", 20)
AXES_HANDLER = "webapp.logins.LoginLimits"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "webapp.logins.locked_out"
# The address as the API throttles see it (RUNLENS_TRUSTED_PROXIES): a forged X-Forwarded-For moves
# neither count.
AXES_CLIENT_IP_CALLABLE = "webapp.auth.client_address"

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "runs.context_processors.invitations",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "webapp" / "static"]
STATIC_ROOT = Path(env("STATIC_ROOT", str(DATA_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise looks there first (after collectstatic)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve straight from the app directories: no collectstatic step needed to run.
WHITENOISE_USE_FINDERS = True

# Uploads: Django's own limits do not cover file data, so the upload handler enforces the cap
# while streaming (ingest/storage.py); larger-than-memory files spool to disk.
MAX_UPLOAD_BYTES = env_int("RUNLENS_MAX_UPLOAD_BYTES", 2 * 1024**3)
MAX_DECOMPRESSED_BYTES = env_int("RUNLENS_MAX_DECOMPRESSED_BYTES", 8 * 1024**3)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024**2
# Our own directory, so `cleanup` can remove what a killed web server left there (*.upload.*).
FILE_UPLOAD_TEMP_DIR = env("RUNLENS_UPLOADS_DIR", str(DATA_DIR / "uploads"))  # created by RunsConfig.ready()
FILE_UPLOAD_HANDLERS = [
    "ingest.storage.CappedUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
DATA_UPLOAD_MAX_NUMBER_FILES = 100

# REST API (webapp/api.py): requests per authenticated user (or per address without one).
API_RATE = env("RUNLENS_API_RATE", "600/m")
# Wrong tokens per address: guessing them gets 429 (RELIABILITY A6).
API_FAILED_AUTH_RATE = env("RUNLENS_API_FAILED_AUTH_RATE", "30/m")

# Celery (RELIABILITY §3): the database is the source of truth, the queue only a doorbell.
REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
# Shared by every web process (API throttling counts must not be per process).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("RUNLENS_CACHE_URL", REDIS_URL),
        "KEY_PREFIX": "runlens",
        "TIMEOUT": 300,
        # Redis away must not hang requests: the throttle fails open after a second.
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}
# The client address for throttling is REMOTE_ADDR; behind N proxies that append to
# X-Forwarded-For set RUNLENS_TRUSTED_PROXIES=N (a spoofed header is otherwise ignored).
NINJA_NUM_PROXIES = env_int("RUNLENS_TRUSTED_PROXIES", 0)
PARSE_SOFT_TIME_LIMIT = env_int("RUNLENS_PARSE_SOFT_SECONDS", 30 * 60)
PARSE_TIME_LIMIT = env_int("RUNLENS_PARSE_HARD_SECONDS", 35 * 60)
VISIBILITY_TIMEOUT = env_int("RUNLENS_VISIBILITY_TIMEOUT", 2 * 60 * 60)
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": VISIBILITY_TIMEOUT}
CELERY_TASK_SOFT_TIME_LIMIT = PARSE_SOFT_TIME_LIMIT
CELERY_TASK_TIME_LIMIT = PARSE_TIME_LIMIT
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env("RUNLENS_QUEUE", "runlens")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# A run stuck in queued/parsing longer than this is queued again by the reconciler.
RECONCILE_AFTER_SECONDS = env_int("RUNLENS_RECONCILE_AFTER_SECONDS", 10 * 60)
MAX_PARSE_ATTEMPTS = env_int("RUNLENS_MAX_PARSE_ATTEMPTS", 3)
# A parsing worker proves it is alive this often; a claim silent for CLAIM_STALE_SECONDS is a dead
# worker's and is queued again (recovery within CLAIM_STALE + RECONCILE_EVERY seconds).
HEARTBEAT_SECONDS = env_seconds("RUNLENS_HEARTBEAT_SECONDS", 10)
CLAIM_STALE_SECONDS = env_seconds("RUNLENS_CLAIM_STALE_SECONDS", 60)
# SIGTERM (a deploy): running parses get this long, then they are cancelled and their messages
# go back to the queue (acks_late), to be taken over by the next worker.
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = float(env_int("RUNLENS_SOFT_SHUTDOWN_SECONDS", 20))
# Orphans (a web server killed mid-upload) older than this are removed by `cleanup` and the reconciler.
ORPHAN_AGE_SECONDS = env_int("RUNLENS_ORPHAN_AGE_SECONDS", 6 * 60 * 60)
RECONCILE_EVERY_SECONDS = env_int("RUNLENS_RECONCILE_EVERY_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    "reconcile-stuck-logfiles": {"task": "ingest.tasks.reconcile", "schedule": float(RECONCILE_EVERY_SECONDS)},
}

SESSION_COOKIE_HTTPONLY = True
# Production is HTTPS unless the operator says otherwise (RUNLENS_HTTPS=0 for a plain-HTTP
# cluster-internal deployment): secure cookies, redirect to HTTPS, HSTS.
HTTPS = env_bool("RUNLENS_HTTPS", not DEBUG)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# runlens is one host on a team's internal domain: forcing HSTS on every sibling host, or asking
# browsers to preload it, is the domain owner's call, not ours (opt in with the two settings above).
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("RUNLENS_BEHIND_PROXY", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if HTTPS and not env("RUNLENS_HTTPS"):
    # DEBUG=0 alone turns on the redirect to https: say so once at start-up, so a plain-HTTP
    # deployment that answers everything with 301 is not a mystery (webapp/apps.py logs it).
    HTTPS_IMPLIED_BY_DEBUG = True
else:
    HTTPS_IMPLIED_BY_DEBUG = False
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
}
