"""The one NinjaAPI of runlens, at /api/v1/ (OpenAPI at /api/v1/openapi.json, docs at /api/v1/docs).

Routers: runs/api.py (getting runs in, reading, annotating and comparing them; projects and
their members), webapp/tokens.py (your API tokens). Auth is
set once here: a Bearer token (CI), or the browser's session, whose writes need the CSRF token.
Every error leaves as {"error": {"code", "message", "line"?}} with a stable code.
"""

from __future__ import annotations

import logging
import math

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.datastructures import MultiValueDict
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Schema
from ninja.errors import HttpError, Throttled, ValidationError
from ninja.parser import Parser
from ninja.responses import Status
from ninja.security import HttpBearer, SessionAuth
from ninja.throttling import AnonRateThrottle, AuthRateThrottle, SimpleRateThrottle

from ingest.parsers import native
from runs.api import projects_router
from runs.api import router as runs_router
from runs.schemas import BadJson, ErrorOut, read_json
from runs.services import ServiceError
from webapp.auth import hit, user_for_token
from webapp.middleware import RETRY_AFTER, SERVICE_DOWN, health_of, is_nul_refusal, unavailable
from webapp.tokens import router as tokens_router

log = logging.getLogger(__name__)


class SettingsRate(SimpleRateThrottle):
    """A ninja throttle whose rate is the setting named `setting`, read per request. Mixed in
    before AuthRateThrottle or AnonRateThrottle, which share this base, so the MRO is unchanged.

    Counted atomically in a fixed window (cache.add + cache.incr): ninja's get-then-set history
    let parallel requests slip through. The client address is REMOTE_ADDR unless
    RUNLENS_TRUSTED_PROXIES says how many proxies append to X-Forwarded-For (NINJA_NUM_PROXIES).
    The cache (Redis) being down fails open: reads must not go down with it.
    """

    setting: str

    def __init__(self) -> None:
        super().__init__(getattr(settings, self.setting))

    def allow_request(self, request: HttpRequest) -> bool:
        rate = getattr(settings, self.setting)
        if self.rate != rate:
            self.rate = rate
            self.num_requests, self.duration = self.parse_rate(rate)
        key = self.get_cache_key(request)
        if key is None:
            return True
        # The rate settings are always strings ("600/m" by default): parse_rate gave both numbers.
        assert self.num_requests is not None and self.duration is not None
        self.retry_in = hit(key, self.num_requests, self.duration)
        return self.retry_in is None

    def wait(self) -> float | None:
        return getattr(self, "retry_in", None)


class ApiRateThrottle(SettingsRate, AuthRateThrottle):
    """ninja's per-user throttle at RUNLENS_API_RATE."""

    setting = "API_RATE"


class FailedAuthThrottle(SettingsRate, AnonRateThrottle):
    """Counts wrong tokens per address (RUNLENS_API_FAILED_AUTH_RATE); the next one past it is 429."""

    setting = "API_FAILED_AUTH_RATE"
    scope = "failed_auth"


class BearerToken(HttpBearer):
    """`Authorization: Bearer rlt_...`, a token from `manage.py createtoken` (CI)."""

    failures = FailedAuthThrottle()

    def __call__(self, request: HttpRequest) -> AbstractBaseUser | None:
        # ninja's own version logs the whole header under DEBUG when the scheme is not Bearer
        # (`Basic <password>`): a credential in the server log. Never log it; count it as a guess.
        scheme, _, token = request.headers.get(self.header, "").partition(" ")
        if not scheme:
            return None
        if scheme.lower() != self.openapi_scheme:
            return self.authenticate(request, "")
        return self.authenticate(request, token.strip())

    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser | None:
        user = user_for_token(token)
        request.auth_token = user is not None  # type: ignore[attr-defined]  # read by auth.by_token
        if user is None and not self.failures.allow_request(request):
            # ninja types `wait` as int, yet its own throttling passes wait()'s float as well.
            raise Throttled(wait=self.failures.wait())  # type: ignore[arg-type]
        return user


class Session(SessionAuth):
    """The browser's login session. ninja checks the CSRF token for it (RELIABILITY A3).

    Only for a logged-in session: a request with no session at all is 401, not a CSRF 403.
    """

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


class UnsupportedMediaType(Exception):
    pass


class JsonParser(Parser):
    """JSON bodies only as application/json: a cross-site text/plain POST is never processed
    (RELIABILITY A4, MLflow CVE-2023-43472)."""

    def parse_body(self, request: HttpRequest) -> dict:
        if request.content_type != "application/json":
            raise UnsupportedMediaType(request.content_type)
        data = read_json(request.body)
        if not isinstance(data, dict):
            raise BadJson(f"a JSON {type(data).__name__}, not an object")
        return data

    def parse_querydict(self, data: MultiValueDict, list_fields: list[str], request: HttpRequest) -> dict:
        """A parameter of one value given twice (`?tag=a&tag=b`) is a 422, not its last value:
        ninja's default silently kept the last, so the filter applied was not the one asked for.
        Handing pydantic the list makes the schema's own type refuse it."""
        result: dict = {}
        for key, values in data.lists():
            result[key] = values if key in list_fields or len(values) > 1 else values[0]
        return result


api = NinjaAPI(
    title="runlens API",
    version="1",
    description="Upload or register run logs from CI, read parsed runs, annotate them. "
    "Authenticate with `Authorization: Bearer <token>` (`python manage.py createtoken USER`).",
    auth=[BearerToken(), Session()],
    throttle=[ApiRateThrottle()],
    parser=JsonParser(),
    urls_namespace="api",
)

CODES = {
    400: "bad_request", 401: "unauthenticated", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    413: "too_large", 415: "unsupported_media_type", 422: "validation_error", 429: "rate_limited",
}


def error(request: HttpRequest, status: int, code: str, message: str, line: int | None = None) -> HttpResponse:
    detail: dict[str, str | int] = {"code": code, "message": message}
    if line is not None:
        detail["line"] = line
    return api.create_response(request, {"error": detail}, status=status)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, UnsupportedMediaType):
        return error(request, 415, "unsupported_media_type", "send the body as application/json")
    if isinstance(exc.__cause__, BadJson):
        return error(request, 422, "bad_json", f"the body is {exc.__cause__}", exc.__cause__.line)
    code = CODES.get(exc.status_code, "error")
    if exc.status_code == 403 and "CSRF" in exc.message:
        code = "csrf_failed"
        message = "CSRF check failed: send the X-CSRFToken header with a session, or use a Bearer token"
    elif exc.status_code == 401:
        message = "authentication required: send Authorization: Bearer <token>"
    else:
        message = exc.message
    response = error(request, exc.status_code, code, message)
    if isinstance(exc, Throttled) and exc.wait:
        response["Retry-After"] = str(math.ceil(exc.wait))
    return response


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # The upload handler refused an oversized body before storing it, so its fields are missing.
    refused = getattr(request, "upload_refused", None)
    if refused:
        return error(request, 413, "upload_too_large", refused)
    sources = {str(e.get("loc", ("",))[0]) for e in exc.errors}
    if sources & {"file", "form"} and not (request.content_type or "").startswith("multipart/form-data"):
        return error(request, 415, "unsupported_media_type", "send the files as multipart/form-data")
    problems = []
    for e in exc.errors:
        where = ".".join(str(p) for p in e.get("loc", ()))
        problems.append(f"{where}: {e.get('msg', 'invalid')}")
    return error(request, 422, "validation_error", "; ".join(problems) or "invalid request")


@api.exception_handler(ServiceError)
def on_service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return error(request, exc.status, exc.code, exc.message, exc.line)


@api.exception_handler(MultiPartParserError)
def on_bad_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    return error(request, 400, "bad_multipart", f"the multipart body cannot be read: {exc}")


@api.exception_handler(SuspiciousOperation)
def on_suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # Django's own request limits: too many parts (RELIABILITY U2), too large a form field.
    if isinstance(exc, RequestDataTooBig):
        return error(request, 413, "too_large", str(exc))
    return error(request, 400, "bad_request", str(exc))


@api.exception_handler(PermissionError)
def on_permission_error(request: HttpRequest, exc: PermissionError) -> HttpResponse:
    return error(request, 403, "forbidden", str(exc))


@api.exception_handler(PermissionDenied)
def on_role_required(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    # runs.permissions.RoleRequired: a member whose role does not allow the operation.
    return error(request, 403, "role_required", str(exc) or "your role in this project does not allow this")


@api.exception_handler(Http404)
@api.exception_handler(ObjectDoesNotExist)
def on_not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return error(request, 404, "not_found", str(exc) or "not found")


def on_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The database is busy or away, or Redis is: nothing half-done, try again shortly."""
    what = unavailable(exc)
    log.warning("API %s %s: %s unavailable: %s", request.method, request.path, what, exc)
    response = error(request, 503, "unavailable", f"the {what} is busy or unreachable; retry in {RETRY_AFTER} s")
    response["Retry-After"] = str(RETRY_AFTER)
    return response


for _exc in SERVICE_DOWN:
    # ninja types a handler as taking the exception or its class; it is always called with the exception.
    api.add_exception_handler(_exc, on_unavailable)  # type: ignore[arg-type]


@api.exception_handler(DataError)
def nul_in_text(request: HttpRequest, exc: DataError) -> HttpResponse:
    # A NUL in a multipart field (the only input not read before the operation) reached PostgreSQL.
    if is_nul_refusal(exc):
        return error(request, 422, "nul_byte", "a field contains a NUL byte")
    return on_crash(request, exc)


@api.exception_handler(Exception)
def on_crash(request: HttpRequest, exc: Exception) -> HttpResponse:
    log.exception("API %s %s failed", request.method, request.path)
    return error(request, 500, "internal_error", "internal error; the server log has the details")


@csrf_exempt  # a 404 for every method; nothing here reads the session
def not_found(request: HttpRequest) -> JsonResponse:
    """Any other URL under /api/ (an id that is not a number, say): JSON like every API answer."""
    return JsonResponse({"error": {"code": "not_found", "message": f"no API endpoint at {request.path}"}},
                        status=404)


class HealthOut(Schema):
    status: str
    database: str
    redis: str
    parser: str  # "native", or the one line saying the native scanner is not built (the reference reads)


@api.get("/health", auth=None, response={200: HealthOut, 503: HealthOut, 429: ErrorOut}, tags=["health"])
def health(request: HttpRequest) -> Status:
    """Liveness, without credentials (load balancers, CI waiting for the server).

    `status` is ok, `degraded` (Redis down: reads work, uploads are kept and queued later) or
    `down` (the database is unreachable: 503). `database` and `redis` say `ok` or `down`.
    """
    parts = {**health_of(), "parser": native.notice() or "native"}
    if parts["database"] != "ok":
        return Status(503, {"status": "down", **parts})
    return Status(200, {"status": "ok" if parts["redis"] == "ok" else "degraded", **parts})


api.add_router("/", runs_router, tags=["runs"])
api.add_router("/", projects_router, tags=["projects"])
api.add_router("/", tokens_router, tags=["tokens"])
