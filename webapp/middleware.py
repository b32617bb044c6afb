"""Cross-cutting answers: headers every response carries (RELIABILITY X3, a CSP without inline
scripts), 503 when a backing service is down, 400 for input no database column can hold.

`X-Content-Type-Options: nosniff` comes from Django's SecurityMiddleware (SECURE_CONTENT_TYPE_NOSNIFF).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu.exceptions import OperationalError as QueueDown
from redis.exceptions import ConnectionError as RedisDown
from redis.exceptions import TimeoutError as RedisTimeout

log = logging.getLogger(__name__)

# Pages load scripts only from our own static files; chart data travels in json_script tags.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "frame-ancestors 'none'; form-action 'self'"
)


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # The API docs page (Swagger UI) ships its own inline bootstrap script.
        if not request.path.startswith("/api/v1/docs"):
            response.headers.setdefault("Content-Security-Policy", CSP)
        return response


# Seconds a client is told to wait when a backing service is busy or away.
RETRY_AFTER = 5


SERVICE_DOWN: tuple[type[Exception], ...] = (OperationalError, InterfaceError, RedisDown, RedisTimeout, QueueDown)


def unavailable(exc: BaseException) -> str | None:
    """Which backing service an exception says is busy or unreachable, or None."""
    if not isinstance(exc, SERVICE_DOWN):
        return None
    return "database" if isinstance(exc, DatabaseError) else "redis"


def health_of() -> dict[str, str]:
    """{"database": ok|down, "redis": ok|down}, each checked with a short timeout."""
    parts = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        parts["database"] = "ok"
    except Exception:
        parts["database"] = "down"
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1).ping()
        parts["redis"] = "ok"
    except Exception:
        parts["redis"] = "down"
    return parts


class ServiceUnavailableMiddleware:
    """Pages (not the API, which has its own handler) answer 503 with Retry-After when the
    database is locked or unreachable, or Redis is down, instead of a 500: the client is told to retry,
    and nothing was saved."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        what = unavailable(exc)
        if what is None:
            return None
        log.warning("%s %s: %s unavailable: %s", request.method, request.path, what, exc)
        message = f"the {what} is busy or unreachable; nothing was saved, retry in {RETRY_AFTER} s"
        if "application/json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse({"error": {"code": "unavailable", "message": message}}, status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER)
        return response


class RejectNulQueryMiddleware:
    """A NUL byte in a page's query string is 400: no filter can mean it, and PostgreSQL refuses
    it in a text parameter (`/?q=%00` would be a 500). The API validates its own query
    parameters (422, as its schema documents)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/") and any(
                "\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
            return HttpResponse("the query string contains a NUL byte", status=400,
                                content_type="text/plain; charset=utf-8")
        return self.get_response(request)
