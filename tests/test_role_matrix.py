"""The README's role matrix, tried on every write operation of the API and of the pages, as an
outsider (eve), a viewer (vic), an editor (bob) and an admin (alice) of the project, and as
nobody at all.

viewer: reads and annotates. editor: also uploads, tags, sets steps/NCCL, corrects roles,
deletes and splits own runs, re-parses and refreshes. admin: also members and roles, pins the
CI baseline, registers logs by path, deletes and splits any run. A note is changed by its
author or an admin; a token by its owner; an account by its holder; an invitation is answered by
its invitee and withdrawn by an admin. Staff pages (/admin/) are
staff's only.

The tables are checked against the URL conf and the OpenAPI document: a write operation added
to either and not to a table here fails `test_every_api_write_is_in_the_table` or
`test_every_page_that_takes_a_post_is_in_the_table`, so the next endpoint cannot forget its row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from runs.models import Annotation, ApiToken, Invitation, LogFile, Membership, NcclSetting, Project, Run, RunEdit
from tests.samples import log_path

pytestmark = pytest.mark.django_db

PERSONAS = {"outsider": "eve", "viewer": "vic", "editor": "bob", "admin": "alice"}
EVERYONE = frozenset(PERSONAS)
EDITORS = frozenset({"editor", "admin"})
ADMINS = frozenset({"admin"})
VIEWERS = frozenset({"viewer", "editor", "admin"})
NOBODY: frozenset[str] = frozenset()
INVITEE = frozenset({"outsider"})  # the world's invitation is eve's, who is in no project yet
# The codes of a refusal by role (permissions.RoleRequired and the services' own checks).
REFUSALS = {"role_required", "not_author", "not_allowed", "not_allowed_to_register", "session_required"}


@pytest.fixture
def world(alice, bob, vic, eve, django_user_model, settings, tmp_path, upload_run) -> dict:
    """bob's run of two serving launches and a profiler trace (parsed), alice's run, a run registered from a log root,
    alice's and vic's notes, nina (a viewer to remove), one API token of alice's."""
    root = tmp_path / "logs"
    root.mkdir()
    (root / "registered.log").write_bytes(log_path("sweep/sweep_tuned_1step.log").read_bytes())
    (root / "another.log").write_bytes(log_path("sweep/sweep_tuned_3step.log").read_bytes())
    settings.LOG_ROOTS = [root.resolve()]
    from ingest import registration

    run = upload_run(bob, "spec_eagle3_tuned_2step.log", "sweep/sweep_default_2step.log",
                     "traces/trace_spec_k2_3cycles.json.gz", name="bobs-run")
    alices = upload_run(alice, "sweep/sweep_default_1step.log", parse=False, name="alices-run")
    registered, _ = registration.register_path(alice, str(root / "registered.log"), project="team")
    with open(root / "registered.log", "ab") as grown:  # so a refresh has something to read
        grown.write(b"one more line\n")
    nina = django_user_model.objects.create_user("nina")
    django_user_model.objects.create_user("zoe")  # to be added
    Membership.objects.create(project=run.project, user=nina, role=Membership.Role.VIEWER)
    token = ApiToken.objects.create(user=alice, name="alices", prefix="feedbeef0001", token_hash="0" * 64)
    invitation = Invitation.objects.create(project=run.project, invitee="eve", role="viewer", invited_by=alice)
    return {
        "users": {"alice": alice, "bob": bob, "vic": vic, "eve": eve}, "run": run, "alices_run": alices,
        "registered": registered, "project": run.project, "root": root, "token": token,
        "note": Annotation.objects.create(run=run, author=alice, body="alice's note"),
        "vics_note": Annotation.objects.create(run=run, author=vic, body="vic's note"),
        "runs_before": Run.objects.count(), "nina_name": "nina", "invitation": invitation,
    }


def _id(w: dict, key: str) -> int | str:
    value = w[key]
    return value if isinstance(value, str) else value.id


@dataclass(frozen=True)
class Op:
    """One write operation: `key` is the API's `METHOD /path` (OpenAPI) or a page's URL name.
    `args` fill the path from the world; `took(w, user)` says whether the write happened."""

    key: str
    allowed: frozenset[str]
    took: Callable[[dict, User], bool]
    body: dict | None = None
    args: dict[str, str] = field(default_factory=dict)
    multipart: bool = False
    session: bool = False  # the API call made with the browser's session, not a bearer token
    what: str = ""

    @property
    def method(self) -> str:
        return self.key.split(" ")[0] if " " in self.key else "POST"

    def url(self, w: dict) -> str:
        if " " in self.key:
            path = self.key.split(" ", 1)[1]
            return path.format(**{k: _id(w, v) for k, v in self.args.items()})
        return reverse(self.key, kwargs={k: _id(w, v) for k, v in self.args.items()})

    def __str__(self) -> str:
        return f"{self.key} {self.what}".strip()


RUN = {"run_id": "run"}
PK_RUN = {"pk": "run"}


def _runs_more(w: dict, user: User) -> bool:
    return Run.objects.count() > w["runs_before"]


def _gone(model, key: str) -> Callable[[dict, User], bool]:
    return lambda w, user: not model.objects.filter(id=w[key].id).exists()


def _role_edited(w: dict, user: User) -> bool:
    return RunEdit.objects.filter(what=RunEdit.What.ROLES).exists()


def _trace_mapped(w: dict, user: User) -> bool:
    return RunEdit.objects.filter(what=RunEdit.What.TRACE_PHASES).exists()


def _tagged(w: dict, user: User) -> bool:
    return w["run"].tags.filter(name="x").exists()


def _noted(w: dict, user: User) -> bool:
    return Annotation.objects.filter(body="seen").exists()


def _steps(w: dict, user: User) -> bool:
    return Run.objects.get(id=w["run"].id).steps == 7


def _nccl_declared(w: dict, user: User) -> bool:
    return NcclSetting.objects.filter(run=w["run"], key="NCCL_ALGO", value="Tree").exists()


def _pinned(w: dict, user: User) -> bool:
    return Project.objects.get(id=w["project"].id).pinned_baseline_id == w["run"].id


def _split(w: dict, user: User) -> bool:
    return Run.objects.filter(name__startswith="bobs-run · launch").exists()


def _reparsed(w: dict, user: User) -> bool:
    return LogFile.objects.filter(run=w["run"], status="queued").exists()


def _body_changed(key: str) -> Callable[[dict, User], bool]:
    return lambda w, user: Annotation.objects.get(id=w[key].id).body == "changed"


def _note_deleted(key: str) -> Callable[[dict, User], bool]:
    return lambda w, user: not Annotation.objects.filter(id=w[key].id, deleted_at=None).exists()


def _member(username: str, role: str | None) -> Callable[[dict, User], bool]:
    return lambda w, user: Membership.objects.filter(user__username=username, role=role).exists() if role else \
        not Membership.objects.filter(user__username=username).exists()


def _invited(username: str) -> Callable[[dict, User], bool]:
    return lambda w, user: Invitation.objects.filter(invitee=username, role="editor").exists()


def _joined(w: dict, user: User) -> bool:
    return Membership.objects.filter(user__username="eve", project=w["project"]).exists()


def _declined(w: dict, user: User) -> bool:
    return not Invitation.objects.filter(id=w["invitation"].id).exists() and not _joined(w, user)


def _token_made(w: dict, user: User) -> bool:
    return ApiToken.objects.filter(user=user, name="made").exists()


def _token_revoked(w: dict, user: User) -> bool:
    return ApiToken.objects.get(id=w["token"].id).revoked_at is not None


def _refreshed(w: dict, user: User) -> bool:
    # The registered log grew after it was registered: a refresh takes its new size.
    return LogFile.objects.get(run=w["registered"]).size == (w["root"] / "registered.log").stat().st_size


def _registered(w: dict, user: User) -> bool:
    return LogFile.objects.filter(registered=True, original_name="another.log").exists()


def _password_changed(w: dict, user: User) -> bool:
    return User.objects.get(id=user.id).check_password("a-new-pass-9341")


NOTE = {"body": "seen", "window_from": 1, "window_to": 2}

API_OPS = [
    Op("POST /api/v1/runs", EDITORS, _runs_more, multipart=True,
       body={"meta": '{"project": "team"}', "file": "sweep/sweep_tuned_5step.log"}),
    Op("POST /api/v1/runs/register", ADMINS, _registered, body={"path": "another.log", "project": "team"}),
    Op("DELETE /api/v1/runs/{run_id}", EDITORS, _gone(Run, "run"), args=RUN, what="(the editor's own run)"),
    Op("DELETE /api/v1/runs/{run_id}", ADMINS, _gone(Run, "alices_run"), args={"run_id": "alices_run"},
       what="(someone else's run)"),
    Op("POST /api/v1/runs/{run_id}/reparse", EDITORS, _reparsed, args=RUN),
    Op("POST /api/v1/runs/{run_id}/split", EDITORS, _split, args=RUN, what="(the editor's own run)"),
    Op("POST /api/v1/runs/{run_id}/roles", EDITORS, _role_edited, args=RUN,
       body={"roles": {"spec_eagle3_tuned_2step.log": "nccl-tests"}}),
    Op("PUT /api/v1/runs/{run_id}/tags", EDITORS, _tagged, args=RUN, body={"tags": ["x"]}),
    Op("PUT /api/v1/runs/{run_id}/trace/phases", EDITORS, _trace_mapped, args=RUN,
       body={"phases": {"my_verify": "Target verify"}}),
    Op("POST /api/v1/runs/{run_id}/annotations", VIEWERS, _noted, args=RUN, body=NOTE, what="(a note)"),
    Op("POST /api/v1/runs/{run_id}/annotations", EDITORS, _steps, args=RUN, body={"kind": "steps", "body": "7"},
       what="(steps)"),
    Op("POST /api/v1/runs/{run_id}/annotations", EDITORS, _nccl_declared, args=RUN,
       body={"kind": "nccl", "body": "NCCL_ALGO=Tree"}, what="(NCCL settings)"),
    Op("POST /api/v1/runs/{run_id}/refresh", EDITORS, _refreshed, args={"run_id": "registered"}),
    Op("PUT /api/v1/runs/{run_id}/pinned", ADMINS, _pinned, args=RUN, body={"pinned": True}),
    Op("PATCH /api/v1/annotations/{annotation_id}", ADMINS, _body_changed("note"), args={"annotation_id": "note"},
       body={"body": "changed"}, what="(the admin's note)"),
    Op("PATCH /api/v1/annotations/{annotation_id}", frozenset({"viewer", "admin"}), _body_changed("vics_note"),
       args={"annotation_id": "vics_note"}, body={"body": "changed"}, what="(the viewer's own note)"),
    Op("DELETE /api/v1/annotations/{annotation_id}", ADMINS, _note_deleted("note"), args={"annotation_id": "note"},
       what="(the admin's note)"),
    Op("DELETE /api/v1/annotations/{annotation_id}", frozenset({"viewer", "admin"}), _note_deleted("vics_note"),
       args={"annotation_id": "vics_note"}, what="(the viewer's own note)"),
    Op("POST /api/v1/projects/{project_id}/members", ADMINS, _invited("zoe"),
       args={"project_id": "project"}, body={"username": "zoe", "role": "editor"}, what="(an invitation)"),
    Op("DELETE /api/v1/projects/{project_id}/invitations/{invitation_id}", ADMINS, _gone(Invitation, "invitation"),
       args={"project_id": "project", "invitation_id": "invitation"}, what="(withdraw)"),
    Op("POST /api/v1/invitations/{invitation_id}/accept", INVITEE, _joined, args={"invitation_id": "invitation"},
       what="(eve's invitation: eve only)"),
    Op("POST /api/v1/invitations/{invitation_id}/decline", INVITEE, _declined, args={"invitation_id": "invitation"},
       what="(eve's invitation: eve only)"),
    Op("PATCH /api/v1/projects/{project_id}/members/{username}", ADMINS, _member("nina", "editor"),
       args={"project_id": "project", "username": "nina_name"}, body={"role": "editor"}),
    Op("DELETE /api/v1/projects/{project_id}/members/{username}", ADMINS, _member("nina", None),
       args={"project_id": "project", "username": "nina_name"}, what="(someone else)"),
    Op("POST /api/v1/tokens", EVERYONE, _token_made, body={"name": "made"}, session=True,
       what="(one's own, from a session)"),
    Op("POST /api/v1/tokens", NOBODY, _token_made, body={"name": "made"}, what="(with a token: never)"),
    Op("DELETE /api/v1/tokens/{token_id}", ADMINS, _token_revoked, args={"token_id": "token"},
       what="(alice's token: its owner only)"),
]

PAGE_OPS = [
    Op("upload", EDITORS, _runs_more, multipart=True, body={"project": "team", "file": "sweep/sweep_tuned_5step.log"}),
    Op("pin", ADMINS, _pinned, args=PK_RUN, body={"pinned": "1"}),
    Op("annotate", VIEWERS, _noted, args=PK_RUN, body={"kind": "note", "body": "seen"}, what="(a note)"),
    Op("annotate", EDITORS, _steps, args=PK_RUN, body={"kind": "steps", "body": "7"}, what="(steps)"),
    Op("annotate", EDITORS, _nccl_declared, args=PK_RUN, body={"kind": "nccl", "body": "NCCL_ALGO=Tree"},
       what="(NCCL settings)"),
    Op("split_run", EDITORS, _split, args=PK_RUN, what="(the editor's own run)"),
    Op("set_roles", EDITORS, _role_edited, args=PK_RUN, body={"role-{lf}": "nccl-tests"}),
    Op("set_tags", EDITORS, _tagged, args=PK_RUN, body={"tags": "x"}),
    Op("trace_phases", EDITORS, _trace_mapped, args=PK_RUN, body={"range": "my_verify", "phase": "Target verify"}),
    Op("annotation_edit", ADMINS, _body_changed("note"), args={"pk": "note"}, body={"body": "changed"},
       what="(the admin's note)"),
    Op("annotation_edit", frozenset({"viewer", "admin"}), _body_changed("vics_note"), args={"pk": "vics_note"},
       body={"body": "changed"}, what="(the viewer's own note)"),
    Op("annotation_delete", ADMINS, _note_deleted("note"), args={"pk": "note"}, what="(the admin's note)"),
    Op("annotation_delete", frozenset({"viewer", "admin"}), _note_deleted("vics_note"), args={"pk": "vics_note"},
       what="(the viewer's own note)"),
    Op("project_detail", ADMINS, _invited("zoe"), args={"pk": "project"},
       body={"action": "add", "user": "zoe", "role": "editor"}, what="(invite)"),
    Op("accept_invitation", INVITEE, _joined, args={"pk": "invitation"}, what="(eve's invitation: eve only)"),
    Op("decline_invitation", INVITEE, _declined, args={"pk": "invitation"}, what="(eve's invitation: eve only)"),
    Op("project_detail", ADMINS, _member("nina", "editor"), args={"pk": "project"},
       body={"action": "role", "username": "nina", "role": "editor"}, what="(role)"),
    Op("project_detail", ADMINS, _member("nina", None), args={"pk": "project"},
       body={"action": "remove", "username": "nina"}, what="(remove someone else)"),
    Op("tokens", EVERYONE, _token_made, body={"name": "made"}, what="(one's own)"),
    Op("revoke_token", ADMINS, _token_revoked, args={"pk": "token"}, what="(alice's token: its owner only)"),
    Op("password_change", EVERYONE, _password_changed, what="(one's own)",
       body={"old_password": "{name}-pw", "new_password1": "a-new-pass-9341", "new_password2": "a-new-pass-9341"}),
]

# Pages that take a POST and are no project's write: what they do, and where that is held.
NOT_PROJECT_WRITES = {
    "login": "signs in with a password (rate-limited by django-axes: tests/test_views_accounts.py)",
    "logout": "ends one's own session",
}


def _client(w: dict, persona: str | None) -> tuple[Client, User | None]:
    client = Client()
    user = w["users"][PERSONAS[persona]] if persona else None
    if user is not None:
        client.force_login(user)
    return client, user


def _send(op: Op, w: dict, persona: str | None, api: bool):
    client, user = _client(w, persona)
    url = op.url(w)
    body = dict(op.body or {})
    headers = {}
    if api and user is not None and not op.session:
        from webapp.auth import create_token

        headers["Authorization"] = f"Bearer {create_token(user)}"
        client.logout()
    if "path" in body:
        body["path"] = str(w["root"] / body["path"])
    if user is not None:
        body = {k: v.replace("{name}", user.username) if isinstance(v, str) else v for k, v in body.items()}
    body = {k.replace("{lf}", str(w["run"].logfiles.order_by("id").first().id)): v for k, v in body.items()}
    if op.multipart:
        name = body.pop("file")
        with open(log_path(name), "rb") as f:
            return client.post(url, {("files" if api else "files"): [f], **body}, headers=headers), user
    if api:
        data = b"" if op.body is None else json.dumps(body)
        return client.generic(op.method, url, data=data, content_type="application/json", headers=headers), user
    return client.post(url, body), user


def _case(op: Op) -> str:
    return str(op).replace(" ", "_")


@pytest.mark.parametrize("persona", list(PERSONAS))
@pytest.mark.parametrize("op", API_OPS, ids=_case)
def test_api_write_follows_the_role_matrix(world, op, persona):
    response, user = _send(op, world, persona, api=True)
    allowed = persona in op.allowed
    assert op.took(world, user) == allowed, (op, persona, response.status_code, response.content[:300])
    if allowed:
        assert response.status_code < 300, (op, persona, response.content[:300])
    elif persona == "outsider" and any(p in op.key for p in ("{project_id}", "{run_id}", "{annotation_id}")):
        assert response.status_code == 404, (op, persona, response.content[:300])
    else:
        assert response.status_code in (403, 404), (op, persona, response.content[:300])
        if response.status_code == 403:
            assert response.json()["error"]["code"] in REFUSALS


@pytest.mark.parametrize("persona", list(PERSONAS))
@pytest.mark.parametrize("op", PAGE_OPS, ids=_case)
def test_page_write_follows_the_role_matrix(world, op, persona):
    response, user = _send(op, world, persona, api=False)
    allowed = persona in op.allowed
    assert op.took(world, user) == allowed, (op, persona, response.status_code, response.content[:300])
    assert response.status_code < 500


@pytest.mark.parametrize("op", API_OPS + PAGE_OPS, ids=_case)
def test_nobody_signed_in_writes_nothing(world, op):
    api = op in API_OPS
    response, _ = _send(op, world, None, api=api)
    assert response.status_code == (401 if api else 302)
    assert not op.took(world, world["users"]["alice"])


def test_staff_pages_write_nothing_for_project_admins(world):
    """/admin/ is Django's, for staff: a project admin who is not staff deletes nothing there."""
    client, _ = _client(world, "admin")
    client.post(f"/admin/runs/run/{world['run'].id}/delete/", {"post": "yes"})
    assert Run.objects.filter(id=world["run"].id).exists()


def _writes_in_openapi() -> set[str]:
    from webapp.api import api

    paths = api.get_openapi_schema()["paths"]
    return {f"{method.upper()} {path}" for path, ops in paths.items() for method in ops
            if method in ("post", "put", "patch", "delete")}


def test_every_api_write_is_in_the_table():
    tabled = {op.key for op in API_OPS}
    writes = _writes_in_openapi()
    assert writes - tabled == set(), "API writes with no row in API_OPS: add their role rows"
    assert tabled - writes == set(), "rows for API writes that no longer exist"


def _routes(patterns, prefix: str = "") -> list[tuple[str, URLPattern]]:
    found = []
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            if route.startswith(("api/", "admin/")):
                continue  # the API: the OpenAPI check above; staff pages: test_staff_pages_...
            found += _routes(p.url_patterns, route)
        elif isinstance(p, URLPattern):
            found.append((route, p))
    return found


def test_every_page_that_takes_a_post_is_in_the_table(world):
    """Every route of the URL conf is sent a POST; one that does not answer 405 writes something,
    and must have its rows (or say why it is no project's write)."""
    tabled = {op.key for op in PAGE_OPS} | set(NOT_PROJECT_WRITES)
    takes_post = set()
    for route, pattern in _routes(get_resolver().url_patterns):
        if route.startswith(("api/", "^api/")):
            continue
        client, _ = _client(world, "admin")
        kwargs = {name: 2**31 - 1 for name in pattern.pattern.converters}
        url = reverse(pattern.name, kwargs=kwargs) if pattern.name else "/" + route
        if client.post(url, {}).status_code != 405:
            takes_post.add(pattern.name or route)
    assert takes_post - tabled == set(), "pages taking a POST with no row in PAGE_OPS: add their role rows"
    assert tabled - takes_post == set(), "rows for pages that no longer take a POST"
