"""The trend page: a project's runs over time, filtered, regressions flagged, runs linked."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs import services
from runs.models import Tag

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(alice, upload_run):
    """Three commits on main (fast, slow, fast again) and one run on a feature branch."""
    runs = [
        upload_run(alice, "sweep/sweep_tuned_2step.log", meta={"ci": {"branch": "main", "commit": "aaaa1111"}}),
        upload_run(alice, "sweep/sweep_default_2step.log", meta={"ci": {"branch": "main", "commit": "bbbb2222"}}),
        upload_run(alice, "sweep/sweep_dropped_2step.log", meta={"ci": {"branch": "main", "commit": "cccc3333"}}),
        upload_run(alice, "sweep/sweep_tuned_3step.log", meta={"ci": {"branch": "feature", "commit": "dddd4444"}}),
    ]
    services.add_annotation(alice, runs[1], "note", "NCCL tuning lost in the launcher")
    return runs


def test_trend_flags_the_slow_commit_and_links_every_run(client, alice, history):
    client.force_login(alice)
    body = client.get("/trend/?project=team&branch=main&metric=throughput_tok_s").content.decode()
    assert "Throughput over 3 runs: 522.7 → 489.6 tok/s; 1 regression beyond the noise, the largest at bbbb2222" in body
    assert f'<tr data-run="{history[1].id}" class="regression">' in body
    for run in history[:3]:
        assert f'href="/runs/{run.id}/"' in body
    assert f'href="/runs/{history[3].id}/"' not in body
    assert "NCCL tuning lost in the launcher" in body and 'id="chart-trend"' in body


def test_trend_json_in_commit_order_with_annotations(client, alice, history):
    client.force_login(alice)
    data = client.get("/trend/?project=team&branch=main&format=json").json()
    assert [p["commit"] for p in data["points"]] == ["aaaa1111", "bbbb2222", "cccc3333"]
    assert data["points"][1]["annotations"][0]["body"] == "NCCL tuning lost in the launcher"
    assert data["regressions"] == [history[1].id]


def test_trend_filters_by_tag_and_nccl_status(client, alice, history):
    client.force_login(alice)
    history[0].tags.add(Tag.objects.create(name="nightly"))
    assert [p["run_id"] for p in client.get("/trend/?project=team&tag=nightly&format=json").json()["points"]] == [
        history[0].id]
    drift = client.get("/trend/?project=team&nccl_status=drift&format=json").json()["points"]
    assert [p["run_id"] for p in drift] == [history[2].id]


def test_other_metric_and_other_teams(client, alice, eve, history):
    client.force_login(alice)
    data = client.get("/trend/?project=team&branch=main&metric=cycle_ms&format=json").json()
    assert data["unit"] == "ms" and [p["value"] for p in data["points"]] == [4.255, 4.58, 4.45]
    client.force_login(eve)
    assert client.get("/trend/?project=team&format=json").json()["points"] == []


def test_query_count_does_not_grow_with_the_number_of_runs(client, alice, history, upload_run):
    client.force_login(alice)
    with CaptureQueriesContext(connection) as before:
        client.get("/trend/?project=team")
    upload_run(alice, "sweep/sweep_tuned_4step.log")
    upload_run(alice, "sweep/sweep_tuned_5step.log")
    with CaptureQueriesContext(connection) as after:
        client.get("/trend/?project=team")
    assert len(before) == len(after) <= 8
