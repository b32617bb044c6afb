"""Who may call /api/v1/: every operation needs credentials (A1), session writes need CSRF (A3),
tokens that are revoked or expired stop working (A5), and requests are rate-limited (A6)."""

import re
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.utils import timezone

from ingest.parsers import native
from runs.models import ApiToken, Run
from webapp.api import api
from webapp.auth import create_token

pytestmark = pytest.mark.django_db

# The CI client is served without a token: it holds no secret, and CI fetches it before using one.
PUBLIC = {("GET", "/api/v1/health"), ("GET", "/api/v1/client/runlens-upload.py")}
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def operations() -> list[tuple[str, str]]:
    schema = api.get_openapi_schema()
    return sorted((method.upper(), path) for path, ops in schema["paths"].items() for method in ops)


def call(client: Client, method: str, path: str, run_id: int = 1, **kw):
    path = path.replace("{run_id}", str(run_id)).replace("{username}", "bob")
    return client.generic(method, re.sub(r"\{\w+\}", "1", path), **kw)


def test_schema_lists_the_operations_we_classified():
    # 13 + sweep, verdict, pinned, the client script, split, roles + projects, members, tokens,
    # annotations (11) + invitations: a project's (list, withdraw), yours (list, accept, decline)
    # + a run's profiler traces (breakdown, CSV, timeline, one event, the phase mapping).
    assert len(operations()) == 39 and PUBLIC <= set(operations())


@pytest.mark.parametrize(("method", "path"), [op for op in operations() if op not in PUBLIC])
def test_every_operation_without_credentials_is_401(client, method, path):
    response = call(client, method, path)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("header", ["Bearer rlt_nope_nope", "Bearer ", "Basic YWxpY2U6YWxpY2UtcHc=", "rlt_x_y"])
def test_bad_authorization_headers_are_401(client, alice, header):
    response = client.get("/api/v1/runs", headers={"Authorization": header})
    assert response.status_code == 401 and "rlt_" not in response.content.decode()


def test_health_needs_no_credentials(client):
    assert client.get("/api/v1/health").json() == {"status": "ok", "database": "ok", "redis": "ok",
                                                   "parser": "native"}


def test_health_says_in_one_line_when_the_native_scanner_is_not_built(client, monkeypatch):
    monkeypatch.setattr(native, "_scan", None)
    parser = client.get("/api/v1/health").json()["parser"]
    assert parser.startswith("the native scanner (ingest/parsers/_scan.c) is not built") and "\n" not in parser
    assert "reference engine" in parser


@pytest.mark.parametrize("field", ["revoked_at", "expires_at"])
def test_revoked_or_expired_token_is_refused_at_once(client, alice, field):
    token = create_token(alice)
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/runs", headers=headers).status_code == 200
    ApiToken.objects.update(**{field: timezone.now() - timedelta(seconds=1)})
    assert client.get("/api/v1/runs", headers=headers).status_code == 401


def test_session_login_reads_without_csrf(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/api/v1/runs").status_code == 200


@pytest.mark.parametrize(("method", "path"), [op for op in operations() if op[0] in MUTATING])
def test_session_write_without_csrf_token_is_403_and_changes_nothing(alice, upload_run, method, path):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = call(client, method, path, run.id, data=b"{}", content_type="application/json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "csrf_failed"
    assert list(Run.objects.values_list("id", "status")) == [(run.id, "queued")]
    assert not run.tags.exists() and not run.annotations.exists()


@pytest.mark.parametrize(("method", "path"), [op for op in operations() if op[0] in MUTATING])
def test_bearer_write_needs_no_csrf_token(alice, bearer, upload_run, method, path):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)  # a session cookie too: the Bearer token still decides
    response = call(client, method, path, run.id, data=b"{}", content_type="application/json",
                    headers=bearer(alice))
    assert response.status_code not in (401, 403), response.content


def test_session_write_with_csrf_token_is_accepted(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    client.get("/api/v1/docs")  # the docs page hands out the CSRF cookie, as a page of ours would
    response = client.put(f"/api/v1/runs/{run.id}/tags", {"tags": ["from-browser"]}, content_type="application/json",
                          headers={"X-CSRFToken": client.cookies["csrftoken"].value})
    assert response.status_code == 200 and list(run.tags.values_list("name", flat=True)) == ["from-browser"]


def test_too_many_requests_is_429_for_that_user_only(client, alice, bob, bearer, settings):
    settings.API_RATE = "3/m"
    alice_headers, bob_headers = bearer(alice), bearer(bob)
    assert [client.get("/api/v1/runs", headers=alice_headers).status_code for _ in range(3)] == [200] * 3
    response = client.get("/api/v1/runs", headers=alice_headers)
    assert response.status_code == 429 and response.json()["error"]["code"] == "rate_limited"
    assert int(response["Retry-After"]) > 0
    assert client.get("/api/v1/runs", headers=bob_headers).status_code == 200


def test_guessing_tokens_from_one_address_is_429_while_good_tokens_still_work(client, alice, bearer, settings):
    settings.API_FAILED_AUTH_RATE = "3/m"
    wrong = {"Authorization": "Bearer rlt_guess_guess"}
    assert [client.get("/api/v1/runs", headers=wrong).status_code for _ in range(4)] == [401, 401, 401, 429]
    assert client.get("/api/v1/runs", headers=wrong).json()["error"]["code"] == "rate_limited"
    assert client.get("/api/v1/runs", headers=bearer(alice)).status_code == 200


def test_parallel_requests_are_counted_atomically_in_redis(settings):
    """50 requests at once from one address against a limit of 10: exactly 10 pass (ninja's
    get-then-set history let dozens more through)."""
    import threading
    import uuid

    from django.test import RequestFactory

    from webapp.api import FailedAuthThrottle

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": settings.REDIS_URL, "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}}
    settings.API_FAILED_AUTH_RATE = "10/m"
    throttle = FailedAuthThrottle()
    request = RequestFactory().get("/api/v1/runs", REMOTE_ADDR="10.9.8.7")
    allowed: list[bool] = []
    barrier = threading.Barrier(50)

    def hit() -> None:
        barrier.wait()
        allowed.append(throttle.allow_request(request))

    threads = [threading.Thread(target=hit) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert allowed.count(True) == 10


def test_a_forged_x_forwarded_for_does_not_reset_the_failed_auth_count(client, settings):
    settings.API_FAILED_AUTH_RATE = "3/m"
    wrong = {"Authorization": "Bearer rlt_guess_guess"}
    codes = [client.get("/api/v1/runs", headers={**wrong, "X-Forwarded-For": f"10.0.0.{i}"}).status_code
             for i in range(4)]
    assert codes == [401, 401, 401, 429]


def test_the_throttle_fails_open_when_its_cache_is_down(client, alice, bearer, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0", "OPTIONS": {"socket_connect_timeout": 1}}}
    assert client.get("/api/v1/runs", headers=bearer(alice)).status_code == 200


def test_a_wrong_authorization_scheme_never_logs_the_credential_even_with_debug(client, settings, caplog):
    settings.DEBUG = True
    with caplog.at_level("DEBUG"):
        response = client.get("/api/v1/runs", headers={"Authorization": "Basic c2VjcmV0LXBhc3N3b3Jk"})
    assert response.status_code == 401
    assert "c2VjcmV0LXBhc3N3b3Jk" not in caplog.text


def test_ninjas_own_validation_errors_use_our_error_shape(client, alice, bearer):
    response = client.get("/api/v1/runs?page=0", headers=bearer(alice))
    assert response.status_code == 422
    assert response.json() == {"error": {"code": "validation_error", "message": response.json()["error"]["message"]}}
    assert "page" in response.json()["error"]["message"]


def test_docs_page_uses_swagger_from_ninjas_static_files_not_a_cdn(client):
    html = client.get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html and "/static/ninja/swagger-ui.css" in html
    assert "cdn" not in html.lower() and "https://" not in html
    assert finders.find("ninja/swagger-ui-bundle.js") and finders.find("ninja/swagger-ui-init.js")
    assert client.get("/api/v1/openapi.json").json()["info"]["title"] == "runlens API"


def test_the_ci_client_script_is_served_without_credentials(client):
    response = client.get("/api/v1/client/runlens-upload.py")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/x-python")
    assert b"def report_verdict(" in response.content and b"import django" not in response.content
