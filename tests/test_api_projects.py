"""/api/v1/projects: members, invitations (nobody joins a project without accepting), project names."""

import json

import pytest

from runs.models import Invitation, Membership, Project

pytestmark = pytest.mark.django_db


def _post(client, url, body, headers):
    return client.post(url, json.dumps(body) if not isinstance(body, str) else body,
                       content_type="application/json", headers=headers)


# Bad input: 4xx, never a 500 (PostgreSQL refuses NUL in text; Python refuses giant integers)


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_a_nul_in_a_member_path_is_422(client, alice, vic, bearer, method):
    response = client.generic(method, f"/api/v1/projects/{alice.projects.get().id}/members/a%00b",
                              data=json.dumps({"role": "editor"}), content_type="application/json",
                              headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "nul_byte"


@pytest.mark.parametrize("body", [
    '{"username": "a\\u0000b", "role": "viewer"}',
    '{"username": "vic", "role": "viewer", "x\\u0000": 1}',
])
def test_a_nul_in_a_member_body_is_422(client, alice, bearer, body):
    response = _post(client, f"/api/v1/projects/{alice.projects.get().id}/members", body, bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_json"
    assert Membership.objects.count() == 1


def test_a_huge_integer_in_any_json_body_is_422(client, alice, upload_run, bearer):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    body = '{"body": "x", "window_from": ' + "7" * 5000 + "}"
    response = _post(client, f"/api/v1/runs/{run.id}/annotations", body, bearer(alice))
    assert response.status_code == 422 and "an integer of 5000 digits" in response.json()["error"]["message"]


def test_a_nul_in_an_api_query_or_a_page_form_is_refused(client, alice, bearer):
    response = client.get("/api/v1/sweep?project=a%00b", headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "nul_byte"
    client.force_login(alice)
    url = f"/projects/{alice.projects.get().id}/"
    as_a_browser_posts = client.post(url, "action=remove&username=a%00b",
                                     content_type="application/x-www-form-urlencoded")
    multipart = client.post(url, {"action": "remove", "username": "a\x00b"})
    assert as_a_browser_posts.status_code == 400 and multipart.status_code == 400


# Invitations: adding someone neither confirms an account nor puts them in the project


def _eves_project(client, eve, bearer) -> int:
    """eve, in no project, makes one by uploading with create_project (as anyone can)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.samples import log_path

    log = SimpleUploadedFile("run.log", log_path("spec_eagle3_tuned_2step.log").read_bytes())
    response = client.post("/api/v1/runs", {"files": [log], "meta": json.dumps(
        {"project": "eves", "create_project": True})}, headers=bearer(eve))
    assert response.status_code == 202
    return Project.objects.get(name="eves").id


def test_inviting_says_the_same_whether_or_not_the_account_exists(client, eve, bearer, django_user_model):
    victim = django_user_model.objects.create_user("victim", email="victim@b.example")
    project_id = _eves_project(client, eve, bearer)
    headers = bearer(eve)
    url = f"/api/v1/projects/{project_id}/members"
    answers = [_post(client, url, {"username": who, "role": "viewer"}, headers)
               for who in ("Victim@B.example", "nobody@b.example", "victim", "nobody")]
    assert {a.status_code for a in answers} == {202}
    shapes = [{k: v for k, v in a.json().items() if k not in ("id", "invitee", "created_at")} for a in answers]
    assert all(shape == shapes[0] for shape in shapes), shapes
    # Nothing but what eve typed: no username behind an e-mail address, no e-mail behind a username.
    assert [a.json()["invitee"] for a in answers] == ["victim@b.example", "nobody@b.example", "victim", "nobody"]
    # The victim is in no project until they say so, and eve sees no member but herself.
    assert not Membership.objects.filter(user=victim).exists()
    assert client.get("/api/v1/projects", headers=bearer(victim)).json() == []
    assert [m["username"] for m in client.get(url, headers=headers).json()] == ["eve"]


def test_the_invitee_accepts_and_only_then_is_a_member(client, alice, eve, bearer):
    eve.email = "eve@c.example"
    eve.save()
    url = f"/api/v1/projects/{alice.projects.get().id}/members"
    invited = _post(client, url, {"username": "EVE@c.example", "role": "editor"}, bearer(alice))
    assert invited.status_code == 202
    mine = client.get("/api/v1/invitations", headers=bearer(eve)).json()
    assert [(i["project"], i["role"], i["invited_by"]) for i in mine] == [("team", "editor", "alice")]
    assert client.get(f"/api/v1/projects/{mine[0]['project_id']}/members", headers=bearer(eve)).status_code == 404
    accepted = client.post(f"/api/v1/invitations/{mine[0]['id']}/accept", headers=bearer(eve))
    assert accepted.status_code == 200 and accepted.json()["name"] == "team" and accepted.json()["role"] == "editor"
    assert Membership.objects.get(user=eve).role == "editor" and not Invitation.objects.exists()
    assert client.get("/api/v1/invitations", headers=bearer(eve)).json() == []


def test_a_declined_invitation_leaves_the_project_unseen(client, alice, eve, bearer):
    _post(client, f"/api/v1/projects/{alice.projects.get().id}/members", {"username": "eve"}, bearer(alice))
    invitation = Invitation.objects.get()
    assert client.post(f"/api/v1/invitations/{invitation.id}/decline", headers=bearer(eve)).status_code == 200
    assert not Invitation.objects.exists() and not Membership.objects.filter(user=eve).exists()


def test_nobody_else_can_accept_or_see_an_invitation(client, alice, bob, eve, bearer):
    _post(client, f"/api/v1/projects/{alice.projects.get().id}/members", {"username": "eve"}, bearer(alice))
    invitation = Invitation.objects.get()
    assert client.get("/api/v1/invitations", headers=bearer(bob)).json() == []
    response = client.post(f"/api/v1/invitations/{invitation.id}/accept", headers=bearer(bob))
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_such_invitation"
    assert Invitation.objects.exists()


def test_admins_list_and_withdraw_invitations_others_may_not(client, alice, bob, bearer):
    project_id = alice.projects.get().id
    _post(client, f"/api/v1/projects/{project_id}/members", {"username": "nina"}, bearer(alice))
    url = f"/api/v1/projects/{project_id}/invitations"
    assert client.get(url, headers=bearer(bob)).status_code == 403
    listed = client.get(url, headers=bearer(alice)).json()
    assert [(i["invitee"], i["role"]) for i in listed] == [("nina", "viewer")]
    assert client.delete(f"{url}/{listed[0]['id']}", headers=bearer(bob)).status_code == 403
    assert client.delete(f"{url}/{listed[0]['id']}", headers=bearer(alice)).status_code == 200
    assert client.get(url, headers=bearer(alice)).json() == []


def test_inviting_a_member_or_twice_is_409(client, alice, bob, bearer):
    url = f"/api/v1/projects/{alice.projects.get().id}/members"
    assert _post(client, url, {"username": "bob"}, bearer(alice)).json()["error"]["code"] == "already_member"
    assert _post(client, url, {"username": "nina"}, bearer(alice)).status_code == 202
    assert _post(client, url, {"username": "nina"}, bearer(alice)).json()["error"]["code"] == "already_invited"


def test_an_account_made_after_the_invitation_can_accept_it(client, alice, bearer, django_user_model):
    _post(client, f"/api/v1/projects/{alice.projects.get().id}/members", {"username": "late@d.example"},
          bearer(alice))
    late = django_user_model.objects.create_user("late", email="late@d.example")
    invitation = client.get("/api/v1/invitations", headers=bearer(late)).json()[0]
    assert client.post(f"/api/v1/invitations/{invitation['id']}/accept", headers=bearer(late)).status_code == 200
    assert Membership.objects.get(user=late).role == "viewer"


def test_the_pages_invite_list_and_accept(client, alice, eve):
    client.force_login(alice)
    project_url = f"/projects/{alice.projects.get().id}/"
    client.post(project_url, {"action": "add", "user": "eve", "role": "editor"})
    assert 'data-invitee="eve"' in client.get(project_url).content.decode()
    assert not Membership.objects.filter(user=eve).exists()
    client.force_login(eve)
    invitation = Invitation.objects.get()
    assert f'data-invitation="{invitation.id}"' in client.get("/projects/").content.decode()
    assert client.post(f"/invitations/{invitation.id}/accept").status_code == 302
    assert Membership.objects.get(user=eve).role == "editor"


@pytest.mark.django_db(transaction=True)
def test_the_migration_keys_existing_look_alikes_apart_and_clamps_unreadable_expiries(client, alice):
    """Migration 0016 on a database that has what the old code let in: look-alike project names
    (kept, each its own key) and a token expiry PostgreSQL stored but Python cannot read back."""
    from datetime import datetime, timedelta, timezone

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("runs", "0015_digest_parts")], [("runs", "0016_access_invitations_name_keys")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        Project, ApiToken = apps.get_model("runs", "Project"), apps.get_model("runs", "ApiToken")
        ids = [Project.objects.create(name=n).id for n in ("team-b-private", "Team-B-Private", "team-b-privat\u0435")]
        far = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14)))
        ApiToken.objects.create(user_id=alice.id, name="far", prefix="abc", token_hash="0" * 64, expires_at=far)
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        migrated = executor.loader.project_state(after).apps.get_model("runs", "Project")
        keys = dict(migrated.objects.filter(id__in=ids).values_list("id", "name_key"))
        assert keys == {ids[0]: "team-b-private", ids[1]: f"team-b-private~{ids[1]}",
                        ids[2]: f"team-b-private~{ids[2]}"}
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    client.force_login(alice)
    assert client.get("/api/v1/tokens").json()[0]["expires_at"].startswith("9999-01-01")
    assert client.get("/settings/tokens/").status_code == 200
