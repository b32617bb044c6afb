"""Every page and API operation per persona: alice (admin), bob (editor), vic (viewer), eve
(outside the project), anonymous. A project eve is not in does not exist for her (404)."""

import json

import pytest

from runs.models import Annotation, Invitation, Membership, Project, Run
from runs.permissions import has_role, require_role, role_in
from tests.samples import log_path

pytestmark = pytest.mark.django_db

PERSONAS = ["alice", "bob", "vic", "eve"]


@pytest.fixture
def world(alice, bob, vic, eve, upload_run):
    """bob's run in alice's project, with a note of alice's on it."""
    run = upload_run(bob, "spec_eagle3_tuned_2step.log", parse=False, name="bobs-run")
    note = Annotation.objects.create(run=run, author=alice, body="alice's *note*")
    return {"users": {"alice": alice, "bob": bob, "vic": vic, "eve": eve}, "run": run, "note": note,
            "project": run.project, "lf": run.logfiles.first()}


def fill(path: str, w: dict) -> str:
    return path.format(run=w["run"].id, note=w["note"].id, project=w["project"].id, lf=w["lf"].id)


PAGES = [  # path, status for alice/bob/vic, status for eve
    ("/", 200, 200),
    ("/runs/{run}/", 200, 404),
    ("/compare/?runs={run}", 200, 404),
    ("/runs/status.json?ids={run}", 200, 200),
    ("/projects/", 200, 200),
    ("/projects/{project}/", 200, 404),
    ("/settings/tokens/", 200, 200),
    ("/upload/", 200, 200),
    ("/accounts/password/", 200, 200),
    ("/ingest/logfiles/{lf}/lines", 200, 404),
    ("/ingest/logfiles/{lf}/raw", 200, 404),
]


@pytest.mark.parametrize(("path", "member", "outsider"), PAGES)
def test_pages_per_persona(client, world, path, member, outsider):
    url = fill(path, world)
    assert client.get(url).status_code == 302, "anonymous goes to the login page"
    for name in PERSONAS:
        client.force_login(world["users"][name])
        expected = outsider if name == "eve" else member
        assert client.get(url).status_code == expected, (name, url)


def test_outsider_pages_do_not_name_the_run(client, world):
    client.force_login(world["users"]["eve"])
    assert client.get(f"/runs/status.json?ids={world['run'].id}").json() == {"runs": []}
    assert "bobs-run" not in client.get("/").content.decode()
    assert "team" not in client.get("/projects/").content.decode()


# method, path, body, expected status for alice, bob, vic, eve
API = [
    ("GET", "/api/v1/runs/{run}", None, (200, 200, 200, 404)),
    ("GET", "/api/v1/runs/{run}/status", None, (200, 200, 200, 404)),
    ("GET", "/api/v1/runs/{run}/annotations", None, (200, 200, 200, 404)),
    ("POST", "/api/v1/runs/{run}/annotations", {"body": "seen", "window_from": 2, "window_to": 4},
     (201, 201, 201, 404)),
    ("POST", "/api/v1/runs/{run}/annotations", {"kind": "steps", "body": "2"}, (201, 201, 403, 404)),
    ("PUT", "/api/v1/runs/{run}/tags", {"tags": ["x"]}, (200, 200, 403, 404)),
    ("POST", "/api/v1/runs/{run}/reparse", None, (202, 202, 403, 404)),
    ("POST", "/api/v1/runs/{run}/refresh", None, (400, 400, 403, 404)),  # 400: uploaded, not registered
    ("PATCH", "/api/v1/annotations/{note}", {"body": "changed"}, (200, 403, 403, 404)),
    ("GET", "/api/v1/compare?runs={run}", None, (200, 200, 200, 404)),
    ("GET", "/api/v1/projects/{project}/members", None, (200, 200, 200, 404)),
    ("POST", "/api/v1/projects/{project}/members", {"username": "nina", "role": "viewer"}, (202, 403, 403, 404)),
    ("PATCH", "/api/v1/projects/{project}/members/vic", {"role": "editor"}, (200, 403, 403, 404)),
]


@pytest.mark.parametrize(("method", "path", "body", "expected"), API)
def test_api_operations_per_persona(client, bearer, world, django_user_model, method, path, body, expected):
    django_user_model.objects.create_user("nina")
    for name, status in zip(PERSONAS, expected, strict=True):
        Membership.objects.filter(user__username="nina").delete()
        Invitation.objects.all().delete()
        Membership.objects.filter(user__username="vic").update(role="viewer")
        response = client.generic(method, fill(path, world), data=b"" if body is None else json.dumps(body),
                                  content_type="application/json", headers=bearer(world["users"][name]))
        assert response.status_code == status, (name, method, path, response.content)
        if status in (403, 404):
            assert response.json()["error"]["code"] in ("role_required", "not_author", "not_found")


@pytest.mark.parametrize(("name", "status"), [("alice", 200), ("bob", 200), ("vic", 403), ("eve", 404)])
def test_deleting_a_run_needs_admin_or_its_editor_creator(client, bearer, world, name, status):
    response = client.delete(f"/api/v1/runs/{world['run'].id}", headers=bearer(world["users"][name]))
    assert response.status_code == status
    assert Run.objects.filter(id=world["run"].id).exists() == (status != 200)


@pytest.mark.parametrize(("name", "status"), [("alice", 200), ("bob", 403), ("vic", 403), ("eve", 404)])
def test_deleting_someone_elses_annotation_needs_admin(client, bearer, world, name, status):
    response = client.delete(f"/api/v1/annotations/{world['note'].id}", headers=bearer(world["users"][name]))
    assert response.status_code == status
    assert Annotation.objects.filter(id=world["note"].id).exists() == (status != 200)


@pytest.mark.parametrize(("name", "status"), [("alice", 200), ("bob", 403), ("vic", 200), ("eve", 404)])
def test_removing_vic_needs_admin_or_vic_himself(client, bearer, world, name, status):
    response = client.delete(f"/api/v1/projects/{world['project'].id}/members/vic", headers=bearer(world["users"][name]))
    assert response.status_code == status
    assert Membership.objects.filter(user__username="vic").exists() == (status != 200)


def test_viewer_cannot_upload_to_the_project(client, bearer, world):
    with open(log_path("spec_eagle3_tuned_2step.log"), "rb") as f:
        response = client.post("/api/v1/runs", {"files": [f], "meta": '{"project": "team"}'},
                               headers=bearer(world["users"]["vic"]))
    assert response.status_code == 403 and Run.objects.count() == 1


def test_project_list_names_each_project_with_my_role(client, bearer, world):
    projects = client.get("/api/v1/projects", headers=bearer(world["users"]["vic"])).json()
    assert [(p["name"], p["role"]) for p in projects] == [("team", "viewer")]
    assert client.get("/api/v1/projects", headers=bearer(world["users"]["eve"])).json() == []


@pytest.mark.parametrize(("name", "kept"), [("vic", True), ("eve", True), ("alice", False)])
def test_delete_button_of_the_page_refuses_viewers_and_outsiders(client, world, name, kept):
    client.force_login(world["users"][name])
    client.post(f"/annotations/{world['note'].id}/delete")
    assert Annotation.objects.filter(id=world["note"].id).exists() == kept


def test_viewer_sees_no_delete_button_on_others_notes_but_on_own(client, world):
    mine = Annotation.objects.create(run=world["run"], author=world["users"]["vic"], body="vic's")
    client.force_login(world["users"]["vic"])
    page = client.get(f"/runs/{world['run'].id}/").content.decode()
    assert f"/annotations/{mine.id}/delete" in page and f"/annotations/{world['note'].id}/delete" not in page


def test_admin_invites_by_email_and_changes_the_role_once_accepted_on_the_page(client, world, django_user_model):
    nina = django_user_model.objects.create_user("nina", email="nina@example.org")
    client.force_login(world["users"]["alice"])
    url = f"/projects/{world['project'].id}/"
    client.post(url, {"action": "add", "user": "NINA@example.org", "role": "viewer"})
    assert not Membership.objects.filter(user=nina).exists()  # invited, not yet a member
    client.force_login(nina)
    client.post(f"/invitations/{Invitation.objects.get().id}/accept")
    client.force_login(world["users"]["alice"])
    client.post(url, {"action": "role", "username": "nina", "role": "editor"})
    assert Membership.objects.get(user__username="nina").role == "editor"
    client.force_login(world["users"]["bob"])  # an editor's post changes nothing
    client.post(url, {"action": "remove", "username": "nina"})
    assert Membership.objects.filter(user__username="nina").exists()


def test_the_last_admin_cannot_leave_or_be_demoted(client, bearer, world):
    url = f"/api/v1/projects/{world['project'].id}/members/alice"
    headers = bearer(world["users"]["alice"])
    assert client.patch(url, {"role": "viewer"}, content_type="application/json", headers=headers).status_code == 409
    assert client.delete(url, headers=headers).status_code == 409
    assert role_in(world["users"]["alice"], world["project"]) == "admin"


def test_role_ladder(world):
    users, project = world["users"], world["project"]
    assert [has_role(users[n], project, "editor") for n in PERSONAS] == [True, True, False, False]
    assert has_role(users["vic"], project, "viewer") and not has_role(users["eve"], project, "viewer")
    with pytest.raises(Exception, match="editor role"):
        require_role(users["vic"], Project.objects.get(name="team"), "editor")
