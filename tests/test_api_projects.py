"""/api/v1/projects: members, invitations (nobody joins a project without accepting), project names."""

import json

import pytest

from runs.models import Membership

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
