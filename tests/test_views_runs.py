"""Run pages with personas: alice owns the project, bob is in it, eve is not."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from runs.models import SampleBlock
from tests.samples import dp_attention_log, parsed_upload, with_server_args

pytestmark = pytest.mark.django_db


def test_every_page_requires_login(client):
    for url in ["/", "/runs/1/", "/upload/", "/runs/status.json?ids=1", "/ingest/logfiles/1/lines"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_run_list_shows_team_runs_newest_first(client, alice, bob, upload_run):
    old = upload_run(alice, "spec_baseline_nospec.log", name="old baseline")
    new = upload_run(alice, "spec_eagle3_tuned_2step.log", name="new eagle")
    client.force_login(bob)
    body = client.get("/").content.decode()
    assert body.index("new eagle") < body.index("old baseline")
    assert "472.8" in body and "4.08" in body and f"/runs/{old.id}/" in body and f"/runs/{new.id}/" in body


def test_run_list_sorts_by_verify_ms(client, alice, upload_run):
    upload_run(alice, "spec_eagle3_tuned_2step.log", name="verify-4.08")
    upload_run(alice, "sweep/sweep_tuned_3step.log", name="verify-3.98")
    client.force_login(alice)
    body = client.get("/?sort=verify").content.decode()
    assert body.index("verify-3.98") < body.index("verify-4.08")
    body = client.get("/?sort=-verify").content.decode()
    assert body.index("verify-4.08") < body.index("verify-3.98")


def test_outsider_sees_neither_list_nor_detail(client, alice, eve, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", name="secret run")
    client.force_login(eve)
    assert "secret run" not in client.get("/").content.decode()
    assert client.get(f"/runs/{run.id}/").status_code == 404
    assert client.get(f"/runs/status.json?ids={run.id}").json() == {"runs": []}
    assert client.get(f"/ingest/logfiles/{run.logfiles.get().id}/lines?start=1").status_code == 404


def test_detail_shows_summary_phases_chart_and_files(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    response = client.get(f"/runs/{run.id}/")
    body = response.content.decode()
    assert response.status_code == 200
    assert "Target verify" in body and "91.0" in body and "4.08" in body
    assert 'id="chart-phases"' in body and reverse("plotly_js") in body
    assert "spec_eagle3_tuned_2step.log" in body and 'data-line="141"' in body
    assert "cdn" not in body.lower()


def test_detail_of_a_failed_run_shows_the_reason(client, alice):
    from ingest import services
    from tests.samples import upload_bytes

    run = upload_bytes(alice, "empty.log", b"")
    services.parse_logfile(run.logfiles.get().id)
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "Parsing failed" in body and "empty.log: the file is empty" in body


def test_busy_run_page_polls_for_status(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert 'data-busy="1"' in body and "refreshes by itself" in body
    status = client.get(f"/runs/status.json?ids={run.id}").json()["runs"][0]
    assert status["status"] == "queued" and status["busy"] is True


def test_status_json_rejects_garbage_ids(client, alice):
    client.force_login(alice)
    assert client.get("/runs/status.json?ids=1,x").status_code == 400


def test_run_names_are_escaped(client, alice, upload_run):
    upload_run(alice, "spec_eagle3_tuned_2step.log", name="<img src=x onerror=alert(1)>")
    client.force_login(alice)
    body = client.get("/").content.decode()
    assert "<img src=x" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body


def test_pages_send_a_csp_without_inline_scripts(client, alice):
    client.force_login(alice)
    response = client.get("/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "unsafe-inline" not in response["Content-Security-Policy"].split("script-src")[1].split(";")[0]
    assert response["X-Content-Type-Options"] == "nosniff"


def test_plotly_is_served_from_the_installed_package(client):
    response = client.get(reverse("plotly_js"))
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/javascript")
    assert len(body) > 1_000_000 and b"plotly" in body[:2000].lower()


def test_plotly_is_sent_gzipped_to_browsers_that_accept_it(client):
    import gzip

    response = client.get(reverse("plotly_js"), HTTP_ACCEPT_ENCODING="gzip")
    body = b"".join(response.streaming_content)
    assert response["Content-Encoding"] == "gzip" and len(body) < 2_000_000
    assert b"plotly" in gzip.decompress(body)[:2000].lower()


def test_run_list_filters_by_effective_nccl_value_and_drift(client, alice, upload_run):
    upload_run(alice, "spec_eagle3_tuned_2step.log", name="tuned")
    upload_run(alice, "sweep/sweep_dropped_2step.log", name="dropped")
    client.force_login(alice)
    body = client.get("/?nccl=NCCL_PROTO=LL").content.decode()
    assert "tuned" in body and "dropped" not in body
    body = client.get("/?nccl_status=drift").content.decode()
    assert "dropped" in body and ">tuned<" not in body and "NCCL drift" in body


def test_run_list_filters_by_steps_and_engine(client, alice, upload_run):
    upload_run(alice, "spec_eagle3_tuned_2step.log", name="two-step")
    upload_run(alice, "sweep/sweep_tuned_3step.log", name="three-step")
    client.force_login(alice)
    body = client.get("/?steps=3&engine=sglang").content.decode()
    assert "three-step" in body and "two-step" not in body


def test_run_list_paginates(client, alice, upload_run):
    from runs.models import Project, Run

    project = Project.objects.get(name="team")
    Run.objects.bulk_create([Run(project=project, name=f"run {i:03d}", status="ready") for i in range(120)])
    client.force_login(alice)
    body = client.get("/?page=3").content.decode()
    assert "page 3 of 3" in body and body.count('name="run"') == 20


def test_drift_panel_names_the_variables_that_never_reached_the_workers(client, alice, upload_run):
    run = upload_run(alice, "sweep/sweep_dropped_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert ("The workers never got 6 NCCL variables the launcher declared (NCCL_ALGO, NCCL_BUFFSIZE, "
            "NCCL_MAX_NCHANNELS, NCCL_NTHREADS, NCCL_P2P_LEVEL, NCCL_PROTO)") in body
    assert "debug-only knobs" in body
    # Each declared value links to the line it was read from.
    assert 'data-line="2"' in body


def test_run_page_suggests_the_newest_non_speculative_baseline(client, alice, upload_run):
    base = upload_run(alice, "spec_baseline_nospec.log", name="no-spec baseline")
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/?target=600").content.decode()
    assert f'href="/runs/{base.id}/">no-spec baseline</a>' in body and "suggested" in body
    assert "above the break-even 1.12" in body and 'id="chart-curve"' in body


def test_suggested_baseline_has_the_same_model_tp_gpu_and_engine(client, alice):
    same = parsed_upload(alice, "base-tp2.log", with_server_args("spec_baseline_nospec.log", model_path="llama-8b", tp_size=2))
    parsed_upload(alice, "base-tp8.log", with_server_args("spec_baseline_nospec.log", model_path="llama-8b", tp_size=8))
    run = parsed_upload(alice, "eagle.log", with_server_args("spec_eagle3_tuned_2step.log", model_path="llama-8b", tp_size=2))
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    # The newer TP 8 baseline is not comparable: the older TP 2 one is suggested.
    assert f'href="/runs/{same.id}/">{same.name}</a>' in body
    assert "with the same model, TP size, GPU and engine" in body and 'id="no-baseline"' not in body


def test_no_comparable_baseline_means_none_suggested_and_the_page_says_why(client, alice):
    other = parsed_upload(alice, "base-tp8.log", with_server_args("spec_baseline_nospec.log", model_path="llama-8b", tp_size=8))
    run = parsed_upload(alice, "eagle.log", with_server_args("spec_eagle3_tuned_2step.log", model_path="llama-8b", tp_size=2))
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert f'href="/runs/{other.id}/"' not in body
    assert ("No baseline suggested: no run without speculation in project team with the same model llama-8b, "
            "TP 2, GPU unknown, engine sglang (the newest closest, base-tp8.log, differs: TP 8 vs 2)") in body
    assert "No break-even verdict: no baseline run." in body
    # A person may still pick it: then it is used, and no "why" is shown.
    body = client.get(f"/runs/{run.id}/?baseline={other.id}").content.decode()
    assert f'href="/runs/{other.id}/">{other.name}</a>' in body and 'id="no-baseline"' not in body


def test_a_baseline_on_another_gpu_is_not_suggested(client, alice, upload_run):
    # The nccl-tests log recorded beside the baseline names its GPU; the speculative run's logs do not.
    upload_run(alice, "spec_baseline_nospec.log", "nccl-tests_all_reduce_default.log", name="h200 base")
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "the newest closest, h200 base, differs: GPU NVIDIA H200 vs unknown" in body


def test_no_baseline_at_all_says_there_is_no_run_without_speculation(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "No baseline suggested: no run without speculation in project team yet." in body


def test_pasted_nccl_settings_become_declared_configuration(client, alice, upload_run):
    run = upload_run(alice, "spec_baseline_nospec.log")
    client.force_login(alice)
    response = client.post(f"/runs/{run.id}/annotate", {"kind": "nccl", "body": "NCCL_PROTO=LL\nNCCL_ALGO=Ring\n"})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.parsed["nccl"]["declared"]["NCCL_PROTO"] == "LL"
    # The baseline's workers echo no NCCL_PROTO: the annotation's declaration shows as drift.
    assert run.nccl_status == "drift"
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "annotation by alice at" in body


def test_steps_set_by_a_person_show_who_and_when(client, alice, upload_run):
    run = upload_run(alice, "spec_baseline_nospec.log")
    client.force_login(alice)
    client.post(f"/runs/{run.id}/annotate", {"kind": "steps", "body": "3"})
    run.refresh_from_db()
    assert run.steps == 3 and run.steps_source.startswith("set by alice at")
    assert "set by alice at" in client.get(f"/runs/{run.id}/").content.decode()


def test_bad_annotation_is_refused_with_a_message(client, alice, upload_run):
    run = upload_run(alice, "spec_baseline_nospec.log")
    client.force_login(alice)
    body = client.post(f"/runs/{run.id}/annotate", {"kind": "steps", "body": "three"}, follow=True).content.decode()
    assert "a steps annotation is one integer" in body
    run.refresh_from_db()
    assert run.steps is None


def test_outsider_cannot_annotate(client, alice, eve, upload_run):
    run = upload_run(alice, "spec_baseline_nospec.log")
    client.force_login(eve)
    assert client.post(f"/runs/{run.id}/annotate", {"kind": "note", "body": "hi"}).status_code == 404
    assert not run.annotations.exists()


def test_summary_cards_link_to_the_first_window_they_were_read_from(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    # The first profile block: `Cycle total` on line 143, `Accept len` 144, `Throughput` 145.
    assert 'data-line="143"' in body and 'data-line="144"' in body and 'data-line="145"' in body


def test_static_files_are_served_without_debug(client, settings):
    """gunicorn in production serves our JS/CSS itself (whitenoise), no separate server needed."""
    settings.DEBUG = False
    response = client.get("/static/runlens/app.js")
    assert response.status_code == 200 and b"drawCharts" in b"".join(response.streaming_content)


def test_nccl_tests_run_shows_its_bus_bandwidth_chart(client, alice, upload_run):
    run = upload_run(alice, "nccl-tests_all_reduce_default.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert 'id="chart-collectives"' in body and "299.73" in body


@pytest.mark.parametrize("url", ["/?steps=%C2%B2", "/runs/{id}/?baseline=%C2%B2", "/compare/?runs=%C2%B2",
                                 "/compare/?runs={id}&baseline=%C2%B2"])
def test_unicode_digits_in_the_query_are_ignored_not_a_crash(client, alice, upload_run, url):
    run = upload_run(alice, "spec_baseline_nospec.log")
    client.force_login(alice)
    assert client.get(url.format(id=run.id)).status_code == 200


def test_run_page_lists_reading_warnings(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_tuned_3step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "while reading the logs" in body and "spec.steps is 3 here but 2 in an earlier file" in body


def test_a_median_figure_lists_every_window_line_with_the_median_marked(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/figure.json", {"key": "phase:Target verify"}).json()
    lines = [w["line"] for w in body["windows"]]
    assert body["total"] == 6 == len(lines) and lines == sorted(lines)
    assert {m["line"] for m in body["middle"]} <= set(lines) and body["median_value"] == body["figure"] == 4.08
    [logfile] = {w["logfile"] for w in body["windows"]}
    text = client.get(f"/ingest/logfiles/{logfile}/lines", {"at": ",".join(map(str, lines))}).json()
    assert [t["line"] for t in text["lines"]] == lines
    assert all("Target verify" in t["text"] for t in text["lines"])


def test_an_even_count_of_windows_marks_both_middle_ones_and_states_the_cards_median(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/figure.json", {"key": "metric:throughput_tok_s"}).json()
    assert body["total"] == 6 and body["figure"] == run.throughput_tok_s == 472.8
    assert [m["value"] for m in body["middle"]] == [466.3, 479.3] and body["median_value"] == 472.8


def test_a_figure_of_two_files_lists_every_window_of_both(client, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_default_2step.log")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/figure.json", {"key": "metric:throughput_tok_s"}).json()
    assert [f["name"] for f in body["files"]] == ["spec_eagle3_tuned_2step.log", "sweep_default_2step.log"]
    assert body["total"] == 14 == len(body["windows"]) == run.windows
    assert body["figure"] == run.throughput_tok_s == body["median_value"]


def test_figure_lines_of_another_teams_run_are_not_found(client, alice, eve, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    client.force_login(eve)
    assert client.get(f"/runs/{run.id}/figure.json", {"key": "metric:throughput_tok_s"}).status_code == 404


def test_project_admin_pins_and_unpins_the_ci_baseline_from_the_run_page(client, alice, bob, upload_run):
    from runs.models import Project

    run = upload_run(alice, "sweep/sweep_default_2step.log")
    client.force_login(bob)  # a member, not an admin: no button, and a hand-made POST changes nothing
    assert 'id="pin-form"' not in client.get(f"/runs/{run.id}/").content.decode()
    client.post(f"/runs/{run.id}/pin", {"pinned": "1"})
    assert Project.objects.get(name="team").pinned_baseline is None
    client.force_login(alice)
    client.post(f"/runs/{run.id}/pin", {"pinned": "1"})
    assert Project.objects.get(name="team").pinned_baseline == run
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "CI baseline of team" in body and "Unpin CI baseline" in body
    client.post(f"/runs/{run.id}/pin", {"pinned": "0"})
    assert Project.objects.get(name="team").pinned_baseline is None


def test_run_list_and_api_list_never_load_a_runs_parse(client, alice, bearer, upload_run):
    """`parsed` can be large; lists show columns only (launches_count is one)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    upload_run(alice, "spec_eagle3_tuned_2step.log", name="listed run")
    client.force_login(alice)
    with CaptureQueriesContext(connection) as queries:
        assert "listed run" in client.get("/").content.decode()
        assert client.get("/api/v1/runs", headers=bearer(alice)).json()["items"][0]["launches_count"] == 1
    run_reads = [q["sql"] for q in queries.captured_queries if 'FROM "runs_run"' in q["sql"]]
    # The one key a list shows (the DP scope) is taken out in SQL; the column itself is never read.
    whole_column = re.compile(r'(?<!JSON_EXTRACT\()"runs_run"\."parsed"(?! (?:->|#>))')
    assert run_reads and not [sql for sql in run_reads if whole_column.search(sql)]


def test_the_page_of_a_run_of_many_windows_is_bounded_and_shows_the_same_medians(
        client, alice, big_run, monkeypatch):
    from runs import blocks
    from runs.series import PHASE_CHART_POINTS
    from tests import synthetic

    # Twelve times the points a trace may have, each phase kept in several blocks: thinning must
    # happen, across blocks (100k-window timings are make bench's, not a test's).
    windows, spike = 12 * PHASE_CHART_POINTS, 7_777
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 5000)
    run = big_run(windows, spike=spike)
    assert SampleBlock.objects.filter(run=run, name="Target verify").count() == 3
    client.force_login(alice)
    response = client.get(f"/runs/{run.id}/")
    assert response.status_code == 200 and len(response.content) < 2_000_000
    traces = response.context["chart"]["data"]
    phases = [t for t in traces if t.get("stackgroup") == "phases"]
    assert [t["name"] for t in phases] == ["Draft", "Target verify"]
    assert all(len(t["x"]) <= PHASE_CHART_POINTS for t in phases) and phases[0]["x"] == phases[1]["x"]
    verify = phases[1]
    at = verify["x"].index(spike)  # the slow window survives, and opens its own line
    assert verify["y"][at] == synthetic.values(spike, spike)[1]
    assert verify["customdata"][at] == [run.logfiles.get().id, 4 * spike + 1]
    body = response.content.decode()
    assert f"{run.throughput_tok_s:.1f}" in body and f"{run.verify_ms:.2f}" in body
    assert "Thinned to at most" in body
    figure = client.get(f"/runs/{run.id}/figure.json", {"key": "phase:Target verify"}).json()
    ordered = sorted(synthetic.values(w, spike)[1] for w in range(1, windows + 1))
    middle = ordered[(windows - 1) // 2:windows // 2 + 1]
    assert figure["total"] == windows and [m["value"] for m in figure["middle"]] == middle
    shown = {w["line"] for w in figure["windows"]}
    assert len(figure["windows"]) <= 202 and {m["line"] for m in figure["middle"]} <= shown


def _sql_of(client, url, headers=None):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, headers=headers or {}).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_the_run_page_reads_no_phase_or_metric_row_and_its_queries_do_not_grow_with_the_run(
        client, alice, big_run):
    """The page reads the stored series, summary and file columns, never a run's rows
    (a 100k-window run has millions); only a zoom reads rows, of its bounded window range."""
    small, large = big_run(50, name="small"), big_run(5000, name="large")
    client.force_login(alice)
    client.get(f"/runs/{small.id}/")  # the session and the user's first look-ups, out of the counts
    rows = re.compile(r'"runs_sampleblock"')
    small_sql, large_sql = _sql_of(client, f"/runs/{small.id}/"), _sql_of(client, f"/runs/{large.id}/")
    assert not [q for q in large_sql if rows.search(q)]
    assert len(small_sql) == len(large_sql)
    zoomed = [q for q in _sql_of(client, f"/runs/{large.id}/?from=10&to=20") if rows.search(q)]
    assert len(zoomed) == 1 and '"window_hi" >= 10' in zoomed[0] and '"window_lo" <= 20' in zoomed[0]


def _runs(alice, count, start=0):
    from runs.models import Project, Run, Tag

    project, tag = Project.objects.get(name="team"), Tag.objects.get_or_create(name="nightly")[0]
    scope = {"kind": "sum_over_dp_ranks", "ranks": 2, "dp_size": 2, "dp_attention": True}
    for i in range(start, start + count):
        run = Run.objects.create(project=project, name=f"run {i:03}", created_by=alice, status="ready",
                                 throughput_tok_s=100 + i, parsed={"summary": {"throughput_scope": scope}})
        run.tags.add(tag)


@pytest.mark.parametrize("url", ["/?page=2", "/?sort=-tok_s&page=2", "/api/v1/runs?page=2&page_size=5"])
def test_a_list_page_reads_the_same_queries_whatever_the_number_of_runs_and_sorts_without_parses(
        client, alice, bearer, url):
    """A page of the list costs the same with 12 runs or 60 (no query a row); the sort
    takes ids only, so no run's `parsed` is read for the runs before the page."""
    _runs(alice, 12)
    client.force_login(alice)
    headers = bearer(alice) if url.startswith("/api/") else {}
    client.get(url, headers=headers)  # the session, out of the counts
    few = _sql_of(client, url, headers)
    _runs(alice, 48, start=12)
    many = _sql_of(client, url, headers)
    assert len(few) == len(many)
    paged = [q for q in many if "OFFSET" in q]
    assert len(paged) == 1 and '"parsed"' not in paged[0]


def test_the_list_shows_the_dp_scope_of_each_run_of_the_page(client, alice):
    _runs(alice, 60)
    client.force_login(alice)
    body = client.get("/?page=2").content.decode()
    assert "run 009" in body and "run 010" not in body  # newest first: page 2 holds the 10 oldest
    assert body.count("sum over 2 DP ranks") == 10


def test_a_zoomed_run_page_charts_every_row_of_its_windows(client, alice, big_run):
    from tests import synthetic

    run = big_run(5000)
    client.force_login(alice)
    response = client.get(f"/runs/{run.id}/", {"from": 1000, "to": 1009})
    traces = {t["name"]: t for t in response.context["chart"]["data"] if t.get("stackgroup")}
    assert traces["Draft"]["x"] == list(range(1000, 1010))
    assert traces["Target verify"]["y"] == [synthetic.values(w, 2500)[1] for w in range(1000, 1010)]
    assert "Every row of windows 1000–1009" in response.content.decode()


def test_editors_replace_tags_on_the_run_page_and_the_change_shows_in_history_and_activity(
        client, alice, bob, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False, tags=["old"])
    client.force_login(bob)
    response = client.post(f"/runs/{run.id}/tags", {"tags": "h200, nightly"})
    assert response.status_code == 302
    assert sorted(run.tags.values_list("name", flat=True)) == ["h200", "nightly"]
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert 'id="tags-form"' in page and "bob: old → h200, nightly" in page
    assert "bob on" in client.get("/").content.decode().split('id="activity"')[1]


def test_a_viewer_gets_no_tag_form_and_a_hand_made_post_changes_nothing(client, alice, vic, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False, tags=["old"])
    client.force_login(vic)
    assert 'id="tags-form"' not in client.get(f"/runs/{run.id}/").content.decode()
    client.post(f"/runs/{run.id}/tags", {"tags": "vandal"})
    assert list(run.tags.values_list("name", flat=True)) == ["old"] and not run.edits.exists()


def test_dp_attention_throughput_says_it_is_a_sum_over_the_ranks(client, alice, upload_run):
    run = parsed_upload(alice, "dp.log", dp_attention_log())
    base = upload_run(alice, "spec_baseline_nospec.log", name="one rank")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    # 150.05 + 47.00 tok/s per window, written as everywhere: 197.1.
    assert '<div class="value">197.1 <small>tok/s</small>' in body
    assert 'id="throughput-scope"' in body and "sum over 2 DP ranks (DP attention)" in body
    assert run.parsed["summary"]["throughput_scope"]["ranks"] == 2
    headline = client.get(f"/compare/?runs={base.id},{run.id}&baseline={base.id}&format=json").json()["headline"]
    assert "dp.log's throughput is the sum over 2 DP ranks (DP attention)." in headline[0]["text"]


def test_dp_attention_with_untagged_lines_says_the_figure_is_not_the_sum(client, alice, upload_run):
    run = parsed_upload(alice, "dp.log", dp_attention_log(tagged=False))
    base = upload_run(alice, "spec_baseline_nospec.log", name="one rank")
    client.force_login(alice)
    scope = "median of 2 DP ranks&#x27; untagged lines, not their sum"
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert 'id="throughput-scope"' in body and scope in body and "cannot be told apart" in body
    assert run.parsed["summary"]["throughput_scope"]["ranks"] is None
    row = client.get("/").content.decode().split(f'data-run="{run.id}"')[1].split("</tr>")[0]
    assert scope in row
    live = client.get(f"/runs/status.json?ids={run.id}").json()["runs"][0]
    assert live["throughput_scope"] == "median of 2 DP ranks' untagged lines, not their sum"
    compare = client.get(f"/compare/?runs={base.id},{run.id}&baseline={base.id}").content.decode()
    assert scope in compare
    headline = client.get(f"/compare/?runs={base.id},{run.id}&baseline={base.id}&format=json").json()["headline"]
    assert "dp.log's throughput is the median of 2 DP ranks' untagged lines, not their sum." in headline[0]["text"]


def test_nccl_tests_driving_two_gpus_from_one_process_shows_each_echo_for_both_ranks(client, alice, upload_run):
    # -g 2: one process, ranks 0 and 1; NCCL echoed NCCL_NVLS_ENABLE once, from rank 1's thread.
    run = upload_run(alice, "nccl-tests_all_reduce_default.log")
    [panel] = run.parsed["nccl_tests"]
    assert panel["nccl"]["effective_by_rank"] == {"0": {"NCCL_NVLS_ENABLE": "0"}, "1": {"NCCL_NVLS_ENABLE": "0"}}
    client.force_login(alice)
    page = client.get(f"/runs/{run.id}/").content.decode()
    section = page[page.index('id="nccl-tests"'):]
    section = section[:section.index("</section>")]
    assert "rank 0 (effective)" in section and "rank 1 (effective)" in section and "missing" not in section


CORPUS_SWEEP = Path(__file__).parent / "corpus" / "serving" / "sglang_bench_serving_rate_sweep_dlora.md"


def test_run_page_shows_each_result_block_of_a_sweep_as_a_row(client, alice):
    run = parsed_upload(alice, CORPUS_SWEEP.name, CORPUS_SWEEP.read_bytes())
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    section = body[body.index('id="serving-blocks"'):body.index("</section>", body.index('id="serving-blocks"'))]
    rows = section.count('<tr data-block=')
    assert rows == 6 and "blocks-apart" in section
    for rate, tput in [("2.0", "825.9"), ("16.0", "820.0"), ("64.0", "832.5")]:
        assert f"<td>{rate}</td>" in section and tput in section
    assert "6 result blocks with different settings" in body  # the run's warning says it too


def test_run_page_names_each_llamacpp_draft_type_and_the_acceptance_rate(client, alice):
    log = Path(__file__).parent / "corpus" / "serving" / "llamacpp_statistics_ngram_mod_draft_mtp_pr23269.log"
    run = parsed_upload(alice, log.name, log.read_bytes())
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    types = body[body.index('id="draft-types"'):]
    assert '<tr data-type="ngram-mod">' in types and '<tr data-type="draft-mtp">' in types
    assert "41.80" in types  # draft-mtp: 33271.024 ms over 796 generate calls, kept in ms
    assert 'data-field="acceptance-rate">0.71<' in body  # 1299 accepted / 1841 drafted tokens, both types


def test_detail_links_each_line_no_reader_used(client, alice):
    content = (b"node:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
               b"Mean throughput was 440 tok/s before the change\n")
    run = parsed_upload(alice, "notes.log", content)
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    row = re.search(r'<tr class="warn-row unread" data-unread="1">.*?</tr>', body, re.S)
    assert row and 'data-line="2"' in row.group(0) and ">line 2</a>" in row.group(0)


def test_detail_shows_the_topology_and_a_context_file(client, alice, upload_run):
    run = upload_run(alice, "../tests/corpus/nccl/vllm_collect_env_topo_nv12_issue19607.txt")
    notes = parsed_upload(alice, "notes.txt", b"the cluster was shared that day\n")
    client.force_login(alice)
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert 'id="topology"' in body and "<td>NV12</td>" in body and "NCCL_P2P_LEVEL does not change" in body
    assert "vllm 0.8.5.post1" in body
    body = client.get(f"/runs/{notes.id}/").content.decode()
    assert 'id="context"' in body and "the cluster was shared that day" in body
