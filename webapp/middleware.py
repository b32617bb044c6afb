"""Cross-cutting answers: headers every response carries (RELIABILITY X3, a CSP without inline
scripts), 503 when a backing service is down, 400 for input no database column can hold.

`X-Content-Type-Options: nosniff` comes from Django's SecurityMiddleware (SECURE_CONTENT_TYPE_NOSNIFF).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db import DatabaseError, DataError, InterfaceError, OperationalError, connection
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


def is_nul_refusal(exc: BaseException) -> bool:
    """psycopg refusing a NUL in a text parameter (before anything was sent): bad input, not a fault."""
    return isinstance(exc, DataError) and "NUL (0x00)" in str(exc)


class RejectNulQueryMiddleware:
    """A NUL byte in the path, the query string or a posted form field is refused before any view
    reads it: nothing can mean it, and PostgreSQL refuses it in a text parameter (a 500 from
    `/?q=%00` or `DELETE .../members/a%00b`). Pages answer 400; the API 422 in its error shape
    (every operation that takes input documents 422). JSON bodies are checked by their one reader
    (runs.schemas.read_json). Multipart bodies are not read here (the upload's errors are the view's
    to answer): a NUL in one of their fields that reaches the database is caught on its way back
    (process_exception here, `nul_in_text` in webapp/api.py)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = self._nul_in(request)
        if where is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": {"code": "nul_byte", "message": f"the {where} contains a NUL byte"}},
                                status=422)
        return HttpResponse(f"the {where} contains a NUL byte", status=400, content_type="text/plain; charset=utf-8")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_nul_refusal(exception):
            return HttpResponse("a field contains a NUL byte", status=400, content_type="text/plain; charset=utf-8")
        return None

    @staticmethod
    def _nul_in(request: HttpRequest) -> str | None:
        if "\x00" in request.path:
            return "path"
        if any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
            return "query string"
        if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
            try:
                fields = request.POST.lists()
            except (SuspiciousOperation, OSError):
                return None  # too large, too many fields, cut off: the view reads it again and says so
            if any("\x00" in key or any("\x00" in v for v in values) for key, values in fields):
                return "form"
        return None
