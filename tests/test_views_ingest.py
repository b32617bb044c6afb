"""The /upload/ form, log line provenance and raw downloads."""

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.models import LogFile, Run, Status
from tests.samples import log_path

pytestmark = pytest.mark.django_db


def _file(name="spec_eagle3_tuned_2step.log", content=None):
    return SimpleUploadedFile(name, content if content is not None else log_path(name).read_bytes())


def test_upload_form_creates_a_queued_run_and_answers_json(client, alice, data_dir):
    client.force_login(alice)
    response = client.post(
        "/upload/",
        {"files": [_file(), _file("spec_baseline_nospec.log")], "name": "two files", "tags": "h200, eagle3"},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 202
    body = response.json()
    run = Run.objects.get(id=body["id"])
    assert body == {"id": run.id, "status": "queued", "url": f"/runs/{run.id}/", "created": True}
    assert run.name == "two files" and sorted(t.name for t in run.tags.all()) == ["eagle3", "h200"]
    names = [lf.original_name for lf in run.logfiles.all()]
    assert names == ["spec_eagle3_tuned_2step.log", "spec_baseline_nospec.log"]
    assert all((data_dir / lf.path).exists() for lf in run.logfiles.all())


def test_the_same_files_again_in_the_same_project_answer_with_that_run_as_the_api_does(
        client, alice, bearer, data_dir):
    client.force_login(alice)
    first = client.post("/upload/", {"files": [_file(), _file("spec_baseline_nospec.log")]},
                        HTTP_ACCEPT="application/json").json()
    again = client.post("/upload/", {"files": [_file("spec_baseline_nospec.log"), _file()], "name": "again"},
                        HTTP_ACCEPT="application/json")
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["created"] is False
    # The API answers the same content with the same run, whichever way it came in first.
    api = client.post("/api/v1/runs", {"files": [_file()]}, headers=bearer(alice))
    page = client.post("/upload/", {"files": [_file()]}, HTTP_ACCEPT="application/json")
    assert (api.status_code, page.status_code) == (202, 200) and page.json()["id"] == api.json()["id"]
    assert Run.objects.count() == 2 and len(list((data_dir / "logs").iterdir())) == 3
    # The run page says why no new run was made.
    assert "uploaded before" in client.get(first["url"]).content.decode()


def test_an_unknown_project_on_the_upload_page_is_an_error_unless_created(client, alice, eve, data_dir):
    client.force_login(alice)
    refused = client.post("/upload/", {"files": [_file()], "project": "tema"}, HTTP_ACCEPT="application/json")
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "unknown_project"
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))
    made = client.post("/upload/", {"files": [_file()], "project": "tema", "create_project": "on"},
                       HTTP_ACCEPT="application/json")
    assert made.status_code == 202 and Run.objects.get().project.name == "tema"


def test_a_newcomer_uploads_into_a_project_named_after_them_on_purpose(client, eve):
    client.force_login(eve)
    page = client.get("/upload/").content.decode()
    assert '<option value="eve">eve (new)</option>' in page and 'name="create_project"' in page
    response = client.post("/upload/", {"files": [_file()], "project": "eve", "create_project": "on"})
    assert response.status_code == 302 and Run.objects.get().project.name == "eve"


def test_upload_without_javascript_redirects_to_the_run(client, alice):
    client.force_login(alice)
    response = client.post("/upload/", {"files": [_file()]})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.id}/"


def test_upload_of_gz_is_decompressed(client, alice, data_dir):
    client.force_login(alice)
    raw = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    client.post("/upload/", {"files": [_file("x.log.gz", gzip.compress(raw))]}, HTTP_ACCEPT="application/json")
    lf = LogFile.objects.get()
    assert (data_dir / lf.path).read_bytes() == raw and lf.size == len(raw)


def test_upload_over_the_cap_is_refused_before_anything_is_stored(client, alice, settings, data_dir):
    settings.MAX_UPLOAD_BYTES = 1000
    client.force_login(alice)
    response = client.post("/upload/", {"files": [_file()]}, HTTP_ACCEPT="application/json")
    assert response.status_code == 413
    assert "over the limit of 1000 bytes" in response.json()["error"]["message"]
    assert not Run.objects.exists() and not list(data_dir.rglob("*.log"))


def test_upload_without_files_is_a_clear_error(client, alice):
    client.force_login(alice)
    response = client.post("/upload/", {"name": "x"})
    assert response.status_code == 400 and "choose at least one log file" in response.content.decode()


def test_gzip_bomb_is_refused(client, alice, settings, data_dir):
    settings.MAX_DECOMPRESSED_BYTES = 1 << 20
    client.force_login(alice)
    bomb = gzip.compress(b"A" * (4 << 20))  # 4 MiB of output from ~4 KiB
    response = client.post("/upload/", {"files": [_file("bomb.log.gz", bomb)]}, HTTP_ACCEPT="application/json")
    assert response.status_code == 413 and "decompressed size limit" in response.json()["error"]["message"]
    assert not Run.objects.exists() and not list(data_dir.rglob("*"))[1:]


def test_upload_with_session_but_no_csrf_token_is_refused(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post("/upload/", {"files": [_file()]}).status_code == 403
    assert not Run.objects.exists()


def test_filename_is_metadata_never_a_path(client, alice, data_dir):
    client.force_login(alice)
    client.post("/upload/", {"files": [_file("../../evil.log", b"x\n")]}, HTTP_ACCEPT="application/json")
    lf = LogFile.objects.get()
    assert lf.path.startswith("logs/") and ".." not in lf.path
    assert (data_dir / lf.path).resolve().is_relative_to(data_dir)


def test_lines_endpoint_returns_the_source_lines(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    lf = run.logfiles.get()
    client.force_login(alice)
    body = client.get(f"/ingest/logfiles/{lf.id}/lines?start=140&end=141").json()
    assert body["name"] == "spec_eagle3_tuned_2step.log"
    assert [ln["line"] for ln in body["lines"]] == [140, 141]
    assert "Target verify:       4.02 ms/cyc" in body["lines"][1]["text"]


def test_raw_download_is_never_rendered(client, alice, upload_run):
    from tests.samples import upload_bytes

    run = upload_bytes(alice, "page.html", b"<script>alert(1)</script>\n")
    client.force_login(alice)
    response = client.get(f"/ingest/logfiles/{run.logfiles.get().id}/raw")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert run.status == Status.QUEUED


def test_a_line_offset_past_2_63_is_400(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    response = client.get(f"/ingest/logfiles/{run.logfiles.get().id}/lines?start=99999999999999999999")
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_range"


@pytest.mark.parametrize("query", ["q=%00", "tag=%00", "engine=a%00b", "page=%00"])
def test_a_nul_byte_in_a_list_filter_is_400(client, alice, query):
    client.force_login(alice)
    assert client.get(f"/?{query}").status_code == 400
