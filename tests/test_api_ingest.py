"""POST /api/v1/runs (upload), /runs/register (by server path, RELIABILITY R1-R8), /runs/{id}/refresh."""

import gzip
import io
import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from ingest import registration, services
from runs.models import LogFile, NcclSetting, Project, Run, Status
from tests.samples import log_path
from tests.synthetic import stored_rows

pytestmark = pytest.mark.django_db

TUNED = "spec_eagle3_tuned_2step.log"
BASELINE = "spec_baseline_nospec.log"


def _file(name=TUNED, content=None):
    return SimpleUploadedFile(name, content if content is not None else log_path(name).read_bytes())


def _upload(client, headers, files, meta=None, **extra):
    data = {"files": files}
    if meta is not None:
        data["meta"] = meta if isinstance(meta, str) else json.dumps(meta)
    return client.post("/api/v1/runs", data, headers=headers, **extra)


# Upload


def test_upload_creates_a_queued_run_with_its_metadata(client, alice, bearer, data_dir):
    meta = {
        "name": "ci tuned", "project": "team", "tags": ["ci", "h200"], "steps": 3, "notes": "nightly",
        "nccl_env": {"NCCL_PROTO": "LL", "NCCL_BUFFSIZE": 16777216},
        "ci": {"commit": "abc123", "branch": "main", "url": "https://ci.example/1"},
    }
    response = _upload(client, bearer(alice), [_file(), _file(BASELINE)], meta)
    assert response.status_code == 202
    run = Run.objects.get()
    assert response.json() == {"id": run.id, "status": "queued", "url": f"http://testserver/runs/{run.id}/",
                               "created": True}
    assert (run.name, run.notes, run.project.name, run.created_by) == ("ci tuned", "nightly", "team", alice)
    assert sorted(run.tags.values_list("name", flat=True)) == ["ci", "h200"]
    assert run.meta["ci"] == meta["ci"] and run.steps == 3 and "upload metadata" in run.steps_source
    assert [lf.original_name for lf in run.logfiles.all()] == [TUNED, BASELINE]
    assert all((data_dir / lf.path).exists() and lf.status == Status.QUEUED for lf in run.logfiles.all())
    assert {(n.key, n.value, n.kind, n.source, n.logfile_id) for n in NcclSetting.objects.all()} == {
        ("NCCL_PROTO", "LL", "declared", "upload metadata", None),
        ("NCCL_BUFFSIZE", "16777216", "declared", "upload metadata", None),
    }


def test_steps_from_upload_metadata_survive_the_parse(client, alice, bearer):
    _upload(client, bearer(alice), [_file()], {"steps": 3})
    run = Run.objects.get()
    services.parse_logfile(run.logfiles.get().id)
    run.refresh_from_db()
    assert run.status == Status.READY and run.steps == 3  # the log says 2; the uploader said 3


def test_newcomer_check_shape_curl_form_fields_then_status(client, alice, bearer):
    headers = bearer(alice)
    created = _upload(client, headers, [_file()], '{"name": "run.log", "tags": ["newcomer"]}').json()
    status = client.get(f"/api/v1/runs/{created['id']}/status", headers=headers).json()
    assert status["status"] == "queued" and status["id"] == created["id"]


@pytest.mark.django_db(transaction=True)
def test_same_upload_sent_twice_at_once_makes_one_run(alice, data_dir, private_queue):
    raw = log_path(TUNED).read_bytes()
    barrier = threading.Barrier(2)
    results = []

    def send() -> None:
        try:
            barrier.wait()
            run, created = registration.register_upload(
                alice, [registration.IncomingFile("a.log", io.BytesIO(raw), len(raw))], project="team")
            results.append((run.id, created))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(created for _, created in results) == [False, True] and len({i for i, _ in results}) == 1
    assert Run.objects.count() == 1 and len(list((data_dir / "logs").iterdir())) == 1


def test_gz_upload_is_stored_decompressed(client, alice, bearer, data_dir):
    raw = log_path(TUNED).read_bytes()
    _upload(client, bearer(alice), [_file("run.log.gz", gzip.compress(raw))])
    lf = LogFile.objects.get()
    assert (data_dir / lf.path).read_bytes() == raw and lf.size == len(raw)


def test_truncated_gz_is_an_error_naming_the_file_and_stores_nothing(client, alice, bearer, data_dir):
    whole = gzip.compress(log_path(TUNED).read_bytes())
    response = _upload(client, bearer(alice), [_file(), _file("cut.log.gz", whole[: len(whole) // 2])])
    assert response.status_code == 400 and response.json()["error"]["code"] == "truncated_gzip"
    assert response.json()["error"]["message"].startswith("cut.log.gz: ")
    assert not Run.objects.exists() and not [p for p in data_dir.rglob("*") if p.is_file()]


def test_concatenated_gz_members_are_one_complete_log(client, alice, bearer, data_dir):
    raw = log_path(TUNED).read_bytes()
    half = len(raw) // 2
    _upload(client, bearer(alice), [_file("two.log.gz", gzip.compress(raw[:half]) + gzip.compress(raw[half:]))])
    assert (data_dir / LogFile.objects.get().path).read_bytes() == raw


def test_same_content_in_the_same_project_gives_back_the_run(client, alice, bearer, data_dir):
    headers = bearer(alice)
    first = _upload(client, headers, [_file(), _file(BASELINE)]).json()
    again = _upload(client, headers, [_file(BASELINE), _file()], {"name": "retry"})
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["created"] is False
    assert Run.objects.count() == 1 and len(list((data_dir / "logs").iterdir())) == 2


def test_same_content_in_another_project_is_a_new_run(client, alice, bearer):
    headers = bearer(alice)
    first = _upload(client, headers, [_file()]).json()
    other = _upload(client, headers, [_file()], {"project": "alice-lab", "create_project": True})
    assert other.status_code == 202 and other.json()["id"] != first["id"] and Run.objects.count() == 2


def test_idempotency_key_gives_back_the_first_run_and_stores_nothing(client, alice, bearer, data_dir):
    headers = {**bearer(alice), "Idempotency-Key": "ci-job-42"}
    first = _upload(client, headers, [_file()]).json()
    again = _upload(client, headers, [_file(BASELINE)])
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    assert Run.objects.get().meta["idempotency_key"] == "ci-job-42"
    assert len(list((data_dir / "logs").iterdir())) == 1


def test_a_failed_run_does_not_swallow_a_retry_with_the_same_key_or_content(client, alice, bearer):
    headers = {**bearer(alice), "Idempotency-Key": "ci-job-43"}
    first = _upload(client, headers, [_file()]).json()
    Run.objects.filter(id=first["id"]).update(status=Status.FAILED)  # e.g. its stored file was lost
    again = _upload(client, headers, [_file()])
    assert again.status_code == 202 and again.json()["created"] is True and again.json()["id"] != first["id"]
    assert _upload(client, bearer(alice), [_file()]).json()["id"] == again.json()["id"]


def test_a_locked_database_is_503_with_retry_after_and_keeps_no_file(client, alice, bearer, data_dir, monkeypatch):
    from django.db import OperationalError

    from runs.models import Run as RunModel

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(RunModel.objects, "create", locked)  # SQLite past its busy timeout
    response = _upload(client, bearer(alice), [_file()])
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "unavailable"
    assert not list(data_dir.rglob("*.log"))  # nothing committed, nothing kept


def test_upload_over_the_cap_is_413_before_anything_is_stored(client, alice, bearer, settings, data_dir):
    settings.MAX_UPLOAD_BYTES = 1000
    response = _upload(client, bearer(alice), [_file()])
    assert response.status_code == 413 and response.json()["error"]["code"] == "upload_too_large"
    assert "over the limit of 1000 bytes" in response.json()["error"]["message"]
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


def test_gzip_bomb_is_413_and_leaves_nothing(client, alice, bearer, settings, data_dir):
    settings.MAX_DECOMPRESSED_BYTES = 1 << 20
    response = _upload(client, bearer(alice), [_file("bomb.log.gz", gzip.compress(b"A" * (4 << 20)))])
    assert response.status_code == 413 and response.json()["error"]["code"] == "decompressed_too_large"
    assert not Run.objects.exists() and not [p for p in data_dir.rglob("*") if p.is_file()]


def test_json_body_is_415(client, alice, bearer):
    response = client.post("/api/v1/runs", {"meta": "{}"}, content_type="application/json", headers=bearer(alice))
    assert response.status_code == 415 and response.json()["error"]["code"] == "unsupported_media_type"
    assert not Run.objects.exists()


@pytest.mark.parametrize(("meta", "says"), [
    ('{"name": "x",', "meta is not valid JSON: Expecting property name enclosed in double quotes (line 1"),
    ('["x"]', "meta must be a JSON object, not list"),
    ('{"tags": "ci"}', "meta.tags: Input should be a valid list"),
    ('{"nccl_env": {"PROTO": "LL"}}', "meta.nccl_env.PROTO.[key]: String should match pattern '^NCCL_"),
    ('{"steps": true}', "meta.steps: Input should be a valid integer"),
    ('{"nmae": "typo"}', "meta.nmae: Extra inputs are not permitted"),
])
def test_invalid_meta_is_422_naming_the_problem(client, alice, bearer, meta, says, data_dir):
    response = _upload(client, bearer(alice), [_file()], meta)
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_meta"
    assert says in response.json()["error"]["message"]
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


def test_upload_without_files_is_422(client, alice, bearer):
    response = client.post("/api/v1/runs", {"meta": "{}"}, headers=bearer(alice))
    assert response.status_code == 422 and "files" in response.json()["error"]["message"]


def test_an_empty_file_is_accepted_and_its_parse_says_it_is_empty(client, alice, bearer, data_dir):
    response = _upload(client, bearer(alice), [_file("empty.log", b"")])
    assert response.status_code == 202
    logfile = Run.objects.get(id=response.json()["id"]).logfiles.get()
    assert logfile.original_name == "empty.log" and logfile.size == 0 and logfile.status == Status.QUEUED
    services.parse_logfile(logfile.id)
    logfile.refresh_from_db()
    assert logfile.status == Status.FAILED and "empty" in logfile.error


def test_unexpected_form_fields_are_422(client, alice, bearer):
    response = client.post("/api/v1/runs", {"files": [_file()], "nmae": "typo"}, headers=bearer(alice))
    assert response.status_code == 422 and response.json()["error"]["code"] == "unexpected_fields"
    assert "nmae" in response.json()["error"]["message"] and not Run.objects.exists()


def test_a_project_i_am_not_in_answers_exactly_as_one_that_does_not_exist(client, alice, eve, bearer, data_dir):
    """Issue 14: a project name cannot be probed through uploads."""
    taken = _upload(client, bearer(eve), [_file()], {"project": "team"})
    free = _upload(client, bearer(eve), [_file()], {"project": "nobody-has-this"})
    assert taken.status_code == free.status_code == 404
    code = taken.json()["error"]["code"]
    assert code == free.json()["error"]["code"] == "unknown_project"
    assert taken.json()["error"]["message"].replace("'team'", "NAME") == \
        free.json()["error"]["message"].replace("'nobody-has-this'", "NAME")
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


def test_an_unknown_project_is_an_error_and_create_project_creates_it(client, alice, bearer):
    refused = _upload(client, bearer(alice), [_file()], {"project": "tema"})
    assert refused.status_code == 404 and "--create-project" in refused.json()["error"]["message"]
    made = _upload(client, bearer(alice), [_file()], {"project": "tema", "create_project": True})
    assert made.status_code == 202
    run = Run.objects.get(id=made.json()["id"])
    assert run.project.name == "tema" and run.project.membership_set.get().role == "admin"
    # Asking again to create a project of yours just uses it.
    again = _upload(client, bearer(alice), [_file(BASELINE)], {"project": "tema", "create_project": True})
    assert again.status_code == 202 and Run.objects.get(id=again.json()["id"]).project == run.project


def test_creating_a_project_whose_name_someone_else_has_is_409_and_joins_nothing(client, alice, eve, bearer):
    response = _upload(client, bearer(eve), [_file()], {"project": "team", "create_project": True})
    assert response.status_code == 409 and response.json()["error"]["code"] == "project_name_taken"
    assert not Run.objects.exists() and not eve.projects.exists()


def test_no_project_and_none_to_upload_to_is_an_error_not_a_private_project(client, eve, bearer):
    response = _upload(client, bearer(eve), [_file()])
    assert response.status_code == 400 and response.json()["error"]["code"] == "no_project"
    assert not Run.objects.exists() and not Project.objects.exists()


def test_too_many_parts_is_400(client, alice, bearer, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 5
    response = _upload(client, bearer(alice), [_file(f"{i}.log", b"x\n") for i in range(6)])
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"
    assert not Run.objects.exists()


def test_filename_is_kept_as_metadata_only(client, alice, bearer, data_dir):
    _upload(client, bearer(alice), [_file("../../evil.log", b"x\n")])
    lf = LogFile.objects.get()
    assert lf.path.startswith("logs/") and (data_dir / lf.path).resolve().is_relative_to(data_dir)


# Register by path


@pytest.fixture
def root(tmp_path, settings):
    """A configured log root with one log in it, and a secret file beside (outside) it."""
    root = tmp_path / "logs"
    root.mkdir()
    (root / "run.log").write_bytes(log_path(TUNED).read_bytes())
    (tmp_path / "secret.log").write_text("SECRET CONTENT\n")
    settings.LOG_ROOTS = [root.resolve()]
    return root


def _register(client, headers, path, **fields):
    return client.post("/api/v1/runs/register", {"path": str(path), **fields}, content_type="application/json",
                       headers=headers)


class _OpenSpy:
    """Records the files opened while active (sys.addaudithook cannot be removed, so it is switched)."""

    paths: list[str] | None = None

    @classmethod
    def hook(cls, event: str, args: tuple) -> None:
        if cls.paths is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
            cls.paths.append(os.fsdecode(args[0]))


sys.addaudithook(_OpenSpy.hook)


@pytest.fixture
def read_outside(root):
    """After the test: which files outside the root (passwd, environ, secret, /dev/zero) were opened."""
    _OpenSpy.paths = []
    targets = ["/etc/passwd", "/proc/self/environ", "/dev/zero", str(root.parent / "secret.log")]

    def touched() -> list[str]:
        return [p for p in _OpenSpy.paths if os.path.exists(p) and any(os.path.samefile(p, t) for t in targets)]

    yield touched
    _OpenSpy.paths = None


def test_admin_registers_a_file_under_a_root(client, alice, bearer, root):
    response = _register(client, bearer(alice), root / "run.log", name="on the box", tags=["registered"])
    assert response.status_code == 202 and response.json()["created"] is True
    run = Run.objects.get(id=response.json()["id"])
    lf = run.logfiles.get()
    assert lf.registered and lf.path == str((root / "run.log").resolve())
    assert lf.size == (root / "run.log").stat().st_size
    assert run.name == "on the box" and list(run.tags.values_list("name", flat=True)) == ["registered"]
    assert services.parse_logfile(lf.id) == Status.READY


def test_registered_path_is_stored_as_its_realpath(client, alice, bearer, root):
    (root / "latest.log").symlink_to(root / "run.log")
    _register(client, bearer(alice), root / "latest.log")
    assert LogFile.objects.get().path == str((root / "run.log").resolve())


@pytest.mark.parametrize("path", [
    "../../etc/passwd", "/etc/passwd", "/proc/self/environ", "//proc/self/root/etc/passwd", "file:///etc/passwd",
    "{tmp}/secret.log", "{root}/../secret.log",
])
def test_r1_paths_outside_the_roots_are_400_and_nothing_is_read(client, alice, bearer, root, read_outside, path):
    path = path.format(tmp=root.parent, root=root)
    response = _register(client, bearer(alice), path)
    assert response.status_code == 400 and response.json()["error"]["code"] == "path_outside_allowed_roots"
    assert not read_outside()
    assert not Run.objects.exists()


@pytest.mark.parametrize("path", [
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%252e%252e%252fetc%252fpasswd", "..%5c..%5cetc%5cpasswd", "..\\..\\etc\\passwd",
    "{root}/x#/../../../secret.log", "{root}/x;/../../secret.log", "{root}/x?/../../secret.log",
    "．．／．．／etc／passwd", "/etc/passwd/.", "{root}/" + "a/" * 2100 + "run.log", "{root}/%2e%2e/secret.log",
])
def test_r2_encoded_and_odd_paths_are_400_never_500_never_read(client, alice, bearer, root, read_outside, path):
    response = _register(client, bearer(alice), path.replace("{root}", str(root)))
    assert response.status_code == 400
    assert response.json()["error"]["code"] in ("path_outside_allowed_roots", "path_not_readable")
    assert not read_outside() and not Run.objects.exists()


def test_r2_a_nul_in_a_path_is_422_never_read(client, alice, bearer, root, read_outside):
    response = _register(client, bearer(alice), f"{root}/x\x00.log")
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_json"
    assert not read_outside() and not Run.objects.exists()


def test_r3_a_sibling_sharing_the_roots_prefix_is_outside(client, alice, bearer, root):
    evil = root.parent / "logs_evil"
    evil.mkdir()
    (evil / "a.log").write_text("x\n")
    response = _register(client, bearer(alice), evil / "a.log")
    assert response.status_code == 400 and response.json()["error"]["code"] == "path_outside_allowed_roots"


@pytest.mark.parametrize(("link", "target", "path"), [
    ("passwd.log", "/etc/passwd", "passwd.log"),
    ("secret.log", "{tmp}/secret.log", "secret.log"),
    ("everything", "/", "everything/etc/passwd"),
    ("zero.log", "/dev/zero", "zero.log"),
])
def test_r4_symlinks_out_of_the_root_are_400(client, alice, bearer, root, read_outside, link, target, path):
    (root / link).symlink_to(target.format(tmp=root.parent))
    response = _register(client, bearer(alice), root / path)
    assert response.status_code == 400 and response.json()["error"]["code"] == "path_outside_allowed_roots"
    assert not read_outside()


def test_a_hard_link_in_the_root_to_a_file_outside_is_400(client, alice, bearer, root):
    os.link(root.parent / "secret.log", root / "linked.log")
    response = _register(client, bearer(alice), root / "linked.log")
    assert response.status_code == 400 and response.json()["error"]["code"] == "hard_linked"
    assert not Run.objects.exists()


def test_r4_file_swapped_for_a_symlink_after_registration_fails_in_the_worker(client, alice, bearer, root):
    run_id = _register(client, bearer(alice), root / "run.log").json()["id"]
    (root / "run.log").unlink()
    (root / "run.log").symlink_to(root.parent / "secret.log")
    lf = LogFile.objects.get(run_id=run_id)
    assert services.parse_logfile(lf.id) == Status.FAILED
    run = Run.objects.get(id=run_id)
    assert run.status == Status.FAILED and "SECRET" not in run.error and not NcclSetting.objects.exists()


def test_r5_directory_fifo_socket_and_oversized_files_are_400(client, alice, bearer, root, settings):
    headers = bearer(alice)
    (root / "dir").mkdir()
    os.mkfifo(root / "fifo.log")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.log"))
    try:
        codes = [_register(client, headers, root / n).json()["error"]["code"] for n in ("dir", "fifo.log", "sock.log")]
    finally:
        sock.close()
    assert codes == ["not_a_regular_file", "not_a_regular_file", "path_not_readable"]
    settings.MAX_UPLOAD_BYTES = 100
    response = _register(client, headers, root / "run.log")
    assert response.status_code == 400 and response.json()["error"]["code"] == "too_large"
    assert not Run.objects.exists()


def test_r7_existing_and_missing_paths_outside_the_roots_answer_the_same(client, alice, bearer, root):
    headers = bearer(alice)
    existing = _register(client, headers, root.parent / "secret.log")
    missing = _register(client, headers, root.parent / "no-such.log")
    assert (existing.status_code, existing.content) == (missing.status_code, missing.content)


@pytest.mark.parametrize("persona", ["bob", "eve"])
def test_r8_only_project_admins_may_register(client, alice, bob, eve, bearer, root, persona):
    from django.contrib.auth.models import Permission

    user = {"bob": bob, "eve": eve}[persona]
    user.user_permissions.add(Permission.objects.get(codename="register_path"))
    response = _register(client, bearer(user), root / "run.log", project="team")
    assert response.status_code == 403 and response.json()["error"]["code"] == "not_project_admin"
    assert _register(client, bearer(user), root / "run.log").status_code == 403
    assert not Run.objects.exists()


def test_r8_same_path_twice_gives_the_same_run(client, alice, bearer, root):
    headers = bearer(alice)
    first = _register(client, headers, root / "run.log")
    again = _register(client, headers, root / ".." / "logs" / "run.log")
    assert (first.status_code, again.status_code) == (202, 200) and first.json()["id"] == again.json()["id"]
    assert Run.objects.count() == 1 and LogFile.objects.count() == 1


def test_registration_is_off_without_roots(client, alice, bearer, settings, tmp_path):
    settings.LOG_ROOTS = []
    response = _register(client, bearer(alice), tmp_path / "x.log")
    assert response.status_code == 400 and response.json()["error"]["code"] == "registration_disabled"


# Refresh


def test_refresh_of_a_grown_log_requeues_the_parse(client, alice, bearer, root):
    headers = bearer(alice)
    run_id = _register(client, headers, root / "run.log").json()["id"]
    lf = LogFile.objects.get(run_id=run_id)
    services.parse_logfile(lf.id)
    unchanged = client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers).json()
    assert unchanged == {"id": run_id, "status": "ready", "changed": False, "kept": []}
    with open(root / "run.log", "ab") as f:
        f.write(b"one more line\n")
    grown = client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers).json()
    assert grown == {"id": run_id, "status": "queued", "changed": True, "kept": []}
    lf.refresh_from_db()
    assert lf.status == Status.QUEUED and lf.size == Path(root / "run.log").stat().st_size
    assert services.parse_logfile(lf.id) == Status.READY


def _registered_and_parsed(client, headers, root):
    run_id = _register(client, headers, root / "run.log").json()["id"]
    services.parse_logfile(LogFile.objects.get(run_id=run_id).id)
    return run_id, stored_rows("phase", run_id=run_id).height


@pytest.mark.parametrize(("change", "why"), [
    (lambda raw: raw[: len(raw) // 3], "smaller than the"),  # truncated (copytruncate, a restart)
    (lambda raw: b"2026-12-01 new server start\n" + raw[100:] + b"x\n" * 200, "its first bytes"),  # rotated
])
def test_refresh_of_a_rotated_or_truncated_log_keeps_the_old_rows_and_says_why(
        client, alice, bearer, root, change, why):
    headers = bearer(alice)
    run_id, rows = _registered_and_parsed(client, headers, root)
    raw = (root / "run.log").read_bytes()
    (root / "run.log").write_bytes(change(raw))
    body = client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers).json()
    assert body["changed"] is False and body["status"] == "ready"
    assert len(body["kept"]) == 1 and body["kept"][0].startswith("run.log: ") and why in body["kept"][0]
    assert stored_rows("phase", run_id=run_id).height == rows > 0
    lf = LogFile.objects.get(run_id=run_id)
    assert lf.status == Status.READY and lf.size == len(raw)
    # Said where people look: the run's API answer, its status, and its page.
    detail = client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
    assert detail["logfiles"][0]["refresh_warning"] == body["kept"][0]
    assert client.get(f"/api/v1/runs/{run_id}/status", headers=headers).json()["logfiles"][0]["refresh_warning"]
    client.force_login(alice)
    assert "Not refreshed:" in client.get(f"/runs/{run_id}/").content.decode()


def test_refresh_of_a_log_rewritten_past_its_head_keeps_the_old_rows(client, alice, bearer, root):
    big = log_path(TUNED).read_bytes() * 20  # past the hashed head (64 KiB)
    (root / "run.log").write_bytes(big)
    run_id = _register(client, bearer(alice), root / "run.log").json()["id"]
    (root / "run.log").write_bytes(big[:-300] + b"#" * 300 + b"and more\n")
    kept = client.post(f"/api/v1/runs/{run_id}/refresh", headers=bearer(alice)).json()["kept"]
    assert len(kept) == 1 and "bytes it had before were changed" in kept[0]
    assert LogFile.objects.get(run_id=run_id).size == len(big)


def test_refresh_with_replace_reads_a_rotated_log_as_it_is_now(client, alice, bearer, root):
    headers = bearer(alice)
    run_id, _ = _registered_and_parsed(client, headers, root)
    (root / "run.log").write_bytes(log_path(BASELINE).read_bytes())
    assert client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers).json()["kept"]
    body = client.post(f"/api/v1/runs/{run_id}/refresh?replace=true", headers=headers).json()
    assert body == {"id": run_id, "status": "queued", "changed": True, "kept": []}
    lf = LogFile.objects.get(run_id=run_id)
    assert lf.refresh_warning == "" and lf.size == log_path(BASELINE).stat().st_size
    assert services.parse_logfile(lf.id) == Status.READY
    # From the new content on, growth is growth again.
    with open(root / "run.log", "ab") as f:
        f.write(b"one more line\n")
    assert client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers).json()["changed"] is True


def test_refresh_of_an_uploaded_run_is_400(client, alice, bearer, upload_run):
    run = upload_run(alice, TUNED, parse=False)
    response = client.post(f"/api/v1/runs/{run.id}/refresh", headers=bearer(alice))
    assert response.status_code == 400 and response.json()["error"]["code"] == "not_registered"


def test_refresh_of_a_vanished_file_is_400_and_keeps_the_run(client, alice, bearer, root):
    headers = bearer(alice)
    run_id = _register(client, headers, root / "run.log").json()["id"]
    (root / "run.log").unlink()
    response = client.post(f"/api/v1/runs/{run_id}/refresh", headers=headers)
    assert response.status_code == 400 and response.json()["error"]["code"] == "path_not_readable"
    assert Run.objects.filter(id=run_id).exists()


def test_refresh_of_a_run_of_another_project_is_404(client, alice, eve, bearer, root):
    run_id = _register(client, bearer(alice), root / "run.log").json()["id"]
    assert client.post(f"/api/v1/runs/{run_id}/refresh", headers=bearer(eve)).status_code == 404


def test_r8_admin_of_a_personal_project_still_needs_the_grant(client, alice, eve, bearer, root):
    """Every user administers the project of their first upload: that must not open the disk."""
    headers = bearer(eve)
    upload = _upload(client, headers, [SimpleUploadedFile("a.log", b"x\n")],
                     {"project": "eve-lab", "create_project": True})
    assert upload.status_code == 202
    response = _register(client, headers, root / "run.log")
    assert response.status_code == 403 and response.json()["error"]["code"] == "not_allowed_to_register"
    assert not LogFile.objects.filter(registered=True).exists()


# Bad input is a clear 4xx, never a 500


@pytest.mark.parametrize("damage", [
    lambda gz: gz + b"trailing garbage",
    lambda gz: gz + b"\x00" * 1024 + b"more after the padding",
    lambda gz: gz[:10] + b"junk after the header" + gz[10:],
    lambda gz: gz[:len(gz) // 2],  # cut short
])
def test_a_damaged_gzip_is_400_and_stores_nothing(client, alice, bearer, data_dir, damage):
    gz = gzip.compress(log_path(TUNED).read_bytes())
    response = _upload(client, bearer(alice), [_file("run.log.gz", damage(gz))])
    assert response.status_code == 400, response.content
    # A cut-short stream has its own code: the log would otherwise look complete.
    assert response.json()["error"]["code"] in ("bad_gzip", "truncated_gzip")
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


def test_zero_padding_after_a_gzip_is_ignored_as_gzip_does(client, alice, bearer, data_dir):
    raw = log_path(TUNED).read_bytes()
    padded = gzip.compress(raw[:5000]) + gzip.compress(raw[5000:]) + b"\x00" * (3 << 20)  # over a read
    assert _upload(client, bearer(alice), [_file("run.log.gz", padded)]).status_code == 202
    assert (data_dir / LogFile.objects.get().path).read_bytes() == raw


def test_deeply_nested_meta_is_422_not_a_crash(client, alice, bearer):
    response = _upload(client, bearer(alice), [_file()], "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_meta"


def test_nul_bytes_in_a_run_name_are_422(client, alice, bearer):
    response = _upload(client, bearer(alice), [_file()], {"name": "a\u0000b"})
    assert response.status_code == 422, response.content
    assert not Run.objects.exists()


@pytest.mark.parametrize(("meta", "says"), [
    ('{"steps": ' + "9" * 5000 + "}", "meta is too large a number: an integer of 5000 digits"),
    ('{"nccl_env": {"NCCL_MIN_NCHANNELS": ' + "1" * 60 + "}}", "an integer of 60 digits"),
    ('{"notes": "fine", "ci": {"commit": "a\\u0000b"}}', "meta is text with a NUL character"),
    ('{"roles": {"a\\u0000.log": "unknown"}}', "meta is text with a NUL character"),
])
def test_a_huge_integer_or_a_nul_anywhere_in_meta_is_422(client, alice, bearer, meta, says, data_dir):
    response = _upload(client, bearer(alice), [_file()], meta)
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_meta", response.content
    assert says in response.json()["error"]["message"]
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


@pytest.mark.parametrize("look_alike", ["Team-B-Private", "team-b-private ", "team-b-priv\u0430te",  # Cyrillic а
                                        "team-b-privat\u0435", "\uff54eam-b-private", "team\u200b-b-private",
                                        "team\u2013b-private", "\u03a4\u0395\u0391\u039c-b-private"])  # Greek ΤΕΑΜ
def test_a_project_name_that_looks_like_anothers_is_taken(client, alice, eve, bearer, look_alike, data_dir):
    assert _upload(client, bearer(eve), [_file()], {"project": "team-b-private", "create_project": True}
                   ).status_code == 202
    response = _upload(client, bearer(alice), [_file()], {"project": look_alike, "create_project": True})
    assert response.status_code == 409 and response.json()["error"]["code"] == "project_name_taken"
    assert sorted(Project.objects.values_list("name", flat=True)) == ["team", "team-b-private"]


def test_a_project_name_is_stored_normalised_and_found_by_its_look(client, eve, bearer):
    headers = bearer(eve)
    first = _upload(client, headers, [_file()], {"project": "  \uff2eew   Project ", "create_project": True})
    assert first.status_code == 202 and Project.objects.get().name == "New Project"
    again = _upload(client, headers, [_file(BASELINE)], {"project": "new project"})
    assert again.status_code == 202 and Run.objects.get(id=again.json()["id"]).project.name == "New Project"


def test_an_empty_project_name_once_normalised_is_422(client, eve, bearer):
    response = _upload(client, bearer(eve), [_file()], {"project": " \u200b ", "create_project": True})
    assert response.status_code == 422 and response.json()["error"]["code"] == "bad_project_name"
