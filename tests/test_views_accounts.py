"""Account pages: API tokens (secret once, revoke -> 401), password change, login lockout."""

import pytest
from django.core.management import call_command
from django.test import Client

from runs.models import ApiToken

pytestmark = pytest.mark.django_db


def test_token_created_on_the_page_is_shown_once_and_works_until_revoked(client, alice):
    client.force_login(alice)
    page = client.post("/settings/tokens/", {"name": "ci", "expires_days": "30"})
    secret = page.context["secret"]
    assert secret.startswith("rlt_") and secret in page.content.decode() and page["Cache-Control"] == "no-store"
    assert secret not in client.get("/settings/tokens/").content.decode()
    row = ApiToken.objects.get()
    assert row.name == "ci" and row.expires_at is not None and f"rlt_{row.prefix}" in secret
    headers = {"Authorization": f"Bearer {secret}"}
    ci = Client()  # no session: the token alone decides
    assert ci.get("/api/v1/runs", headers=headers).status_code == 200
    client.post(f"/settings/tokens/{row.id}/revoke")
    assert ci.get("/api/v1/runs", headers=headers).status_code == 401


def test_tokens_api_lists_creates_and_revokes_only_your_own(client, alice, bob, bearer):
    headers = bearer(alice)
    client.force_login(alice)  # tokens are made by a logged-in person, never by another token
    created = client.post("/api/v1/tokens", {"name": "gh", "expires_at": "2099-01-01T00:00:00Z"},
                          content_type="application/json", headers={"X-CSRFToken": _csrf(client)})
    client.logout()
    assert created.status_code == 201 and created.json()["token"].startswith("rlt_")
    listed = client.get("/api/v1/tokens", headers=headers).json()
    assert {t["name"] for t in listed} == {"", "gh"} and all("token" not in t for t in listed)
    token_id = created.json()["id"]
    assert client.delete(f"/api/v1/tokens/{token_id}", headers=bearer(bob)).status_code == 404
    assert client.delete(f"/api/v1/tokens/{token_id}", headers=headers).status_code == 200
    fresh = {"Authorization": f"Bearer {created.json()['token']}"}
    assert client.get("/api/v1/runs", headers=fresh).status_code == 401


def test_createtoken_can_create_the_ci_bot(capsys, db, django_user_model):
    call_command("createtoken", "ci-bot", "--create-user", "--name", "github")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    bot = django_user_model.objects.get(username="ci-bot")
    assert token.startswith("rlt_") and not bot.has_usable_password()


def test_password_change_page_changes_the_password(client, alice):
    client.force_login(alice)
    response = client.post("/accounts/password/", {"old_password": "alice-pw", "new_password1": "n3w-Passw0rd!",
                                                   "new_password2": "n3w-Passw0rd!"})
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("n3w-Passw0rd!")


def test_login_is_locked_after_repeated_wrong_passwords(client, alice, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(3):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    assert response.status_code == 429 and "_auth_user_id" not in client.session


@pytest.mark.parametrize("expires_at", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00",
                                        "10000-01-01T00:00:00Z"])
def test_an_expiry_out_of_range_is_422_and_the_token_pages_keep_working(client, alice, expires_at):
    client.force_login(alice)
    created = client.post("/api/v1/tokens", {"name": "far", "expires_at": expires_at},
                          content_type="application/json", headers={"X-CSRFToken": _csrf(client)})
    assert created.status_code == 422 and "expires_at" in created.json()["error"]["message"]
    assert not ApiToken.objects.exists()
    assert client.get("/api/v1/tokens").status_code == 200 and client.get("/settings/tokens/").status_code == 200


def test_a_token_form_out_of_range_is_422_and_makes_nothing(client, alice):
    client.force_login(alice)
    page = client.post("/settings/tokens/", {"name": "far", "expires_days": "10000000"})
    assert page.status_code == 422 and "expires in" in page.content.decode() and not ApiToken.objects.exists()


def test_a_token_cannot_create_tokens_so_revoking_it_ends_access(client, alice, bearer):
    leaked = bearer(alice)
    response = client.post("/api/v1/tokens", {"name": "persist"}, content_type="application/json", headers=leaked)
    assert response.status_code == 403 and response.json()["error"]["code"] == "session_required"
    assert ApiToken.objects.count() == 1  # the leaked one only
    token_id = client.get("/api/v1/tokens", headers=leaked).json()[0]["id"]
    assert client.delete(f"/api/v1/tokens/{token_id}", headers=leaked).status_code == 200
    assert client.get("/api/v1/runs", headers=leaked).status_code == 401


def test_a_logged_in_session_creates_tokens_through_the_api(client, alice):
    client.force_login(alice)
    created = client.post("/api/v1/tokens", {"name": "gh", "expires_at": "2099-01-01T00:00:00Z"},
                          content_type="application/json", headers={"X-CSRFToken": _csrf(client)})
    assert created.status_code == 201 and created.json()["token"].startswith("rlt_")


def _csrf(client) -> str:
    client.get("/settings/tokens/")
    return client.cookies["csrftoken"].value
