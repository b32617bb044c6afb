"""GET /api/v1/runs/{id}/verdict, the baseline named at upload, pinning, and /status carrying it."""

import pytest

from runs.models import Project

pytestmark = pytest.mark.django_db

DEFAULT_2 = "sweep/sweep_default_2step.log"  # 470.7 tok/s, NCCL untuned
TUNED_2 = "sweep/sweep_tuned_2step.log"  # 522.7 tok/s, same model, steps and engine, NCCL tuned
EAGLE_2 = "spec_eagle3_tuned_2step.log"  # 472.8 tok/s, the same set-up as TUNED_2, NCCL tuned alike
DROPPED_2 = "sweep/sweep_dropped_2step.log"  # 489.6 tok/s: the launcher's NCCL tuning never reached the workers


def get_verdict(client, user, bearer, run, query=""):
    response = client.get(f"/api/v1/runs/{run.id}/verdict{query}", headers=bearer(user))
    assert response.status_code == 200, response.content
    return response.json()


def test_baseline_by_run_id_gives_regression_with_compare_url(client, alice, bearer, upload_run):
    base = upload_run(alice, TUNED_2)
    slower = upload_run(alice, EAGLE_2, meta={"baseline": base.id})
    out = get_verdict(client, alice, bearer, slower, "?fail_on_regression=3")
    assert out["verdict"] == "regression" and out["baseline"]["id"] == base.id
    assert out["compare_url"].endswith(f"/compare/?runs={base.id},{slower.id}&baseline={base.id}")
    assert out["gate"]["fail"] is True
    keys = [f["key"] for f in out["figures"]]
    assert keys[:4] == ["throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms"]
    assert keys[4:] == ["phase:Draft", "phase:Accept"]  # verify is verify_ms already


def test_pinned_baseline_is_the_default(client, alice, bearer, upload_run):
    base = upload_run(alice, EAGLE_2)
    response = client.put(f"/api/v1/runs/{base.id}/pinned", {"pinned": True}, content_type="application/json",
                          headers=bearer(alice))
    assert response.json() == {"project": "team", "pinned_baseline": base.id}
    faster = upload_run(alice, TUNED_2)
    out = get_verdict(client, alice, bearer, faster, "?fail_on_regression=3")
    assert out["verdict"] == "improvement" and out["baseline_how"] == "pinned" and out["gate"]["fail"] is False


def test_no_pinned_baseline_is_not_comparable_with_the_reason(client, alice, bearer, upload_run):
    run = upload_run(alice, DEFAULT_2, meta={"baseline": "pinned"})
    out = get_verdict(client, alice, bearer, run)
    assert out["verdict"] == "not comparable"
    assert out["reasons"] == ['meta.baseline is "pinned" and project team has no pinned baseline']


def test_branch_baseline_is_the_latest_earlier_ready_run_of_that_branch(client, alice, bearer, upload_run):
    upload_run(alice, TUNED_2, meta={"ci": {"branch": "main", "commit": "a1"}})
    latest_main = upload_run(alice, "sweep/sweep_dropped_2step.log", meta={"ci": {"branch": "main", "commit": "b2"}})
    upload_run(alice, TUNED_2, name="feature run", meta={"ci": {"branch": "feature"}})
    run = upload_run(alice, DEFAULT_2, meta={"baseline": {"branch": "main"}, "ci": {"branch": "feature"}})
    out = get_verdict(client, alice, bearer, run)
    assert out["baseline"]["id"] == latest_main.id and out["baseline_how"] == "latest of branch main"


def test_only_project_admins_may_pin(client, alice, bob, bearer, upload_run):
    run = upload_run(alice, DEFAULT_2)
    response = client.put(f"/api/v1/runs/{run.id}/pinned", {"pinned": True}, content_type="application/json",
                          headers=bearer(bob))
    assert response.status_code == 403
    assert Project.objects.get(name="team").pinned_baseline is None


def test_status_carries_the_verdict_once_ready(client, alice, bearer, upload_run):
    base = upload_run(alice, TUNED_2)
    run = upload_run(alice, EAGLE_2, meta={"baseline": base.id})
    body = client.get(f"/api/v1/runs/{run.id}/status", headers=bearer(alice)).json()
    assert body["status"] == "ready" and body["verdict"]["verdict"] == "regression"
    assert body["verdict"]["nccl"] == get_verdict(client, alice, bearer, run)["nccl"]
    queued = upload_run(alice, "sweep/sweep_tuned_3step.log", parse=False)
    assert client.get(f"/api/v1/runs/{queued.id}/status", headers=bearer(alice)).json()["verdict"] is None
    assert get_verdict(client, alice, bearer, queued)["verdict"] == "pending"


def test_upload_meta_baseline_is_validated(client, alice, bearer):
    from io import BytesIO

    from tests.samples import log_path

    for bad in ('{"baseline": "latest"}', '{"baseline": {"branch": ""}}', '{"baseline": 0}'):
        f = BytesIO(log_path(DEFAULT_2).read_bytes())
        f.name = "x.log"
        response = client.post("/api/v1/runs", {"files": [f], "meta": bad}, headers=bearer(alice))
        assert response.status_code == 422, bad
        assert response.json()["error"]["code"] == "bad_meta"


def test_other_teams_cannot_read_the_verdict(client, alice, eve, bearer, upload_run):
    run = upload_run(alice, DEFAULT_2)
    assert client.get(f"/api/v1/runs/{run.id}/verdict", headers=bearer(eve)).status_code == 404


@pytest.mark.parametrize("endpoint", ["verdict", "status"])
def test_dropped_nccl_tuning_is_named_in_the_verdict_and_its_headline(client, alice, bearer, upload_run, endpoint):
    base = upload_run(alice, TUNED_2)
    run = upload_run(alice, DROPPED_2, meta={"baseline": base.id})
    body = client.get(f"/api/v1/runs/{run.id}/{endpoint}", headers=bearer(alice)).json()
    out = body if endpoint == "verdict" else body["verdict"]
    nccl = out["nccl"]
    assert nccl["status"] == "drift" and nccl["baseline_status"] == "ok" and nccl["alarm"] is True
    assert [d["key"] for d in nccl["drift"]] == ["NCCL_ALGO", "NCCL_BUFFSIZE", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS",
                                                "NCCL_P2P_LEVEL", "NCCL_PROTO"]
    assert nccl["drift"][0] == {"key": "NCCL_ALGO", "declared": "Ring", "effective": None, "ranks": ["0", "1"],
                                "launch": None}
    # What the workers had against what the baseline's had: the drift, and a variable only this run's had.
    assert {"key": "NCCL_ALGO", "run": None, "baseline": "Ring"} in nccl["differs"]
    assert {"key": "NCCL_CUMEM_ENABLE", "run": "0", "baseline": None} in nccl["differs"]
    assert len(nccl["differs"]) == 7 and "NCCL_DEBUG" not in {d["key"] for d in nccl["differs"]}
    assert out["verdict"] == "not comparable"
    assert out["headline"].startswith("NCCL drift in sweep_dropped_2step.log: the workers never got 6 NCCL")
    assert out["title"] == "runlens: not comparable · NCCL drift: 6 declared variables did not reach the workers as declared"


def test_same_nccl_settings_leave_the_verdict_alone(client, alice, bearer, upload_run):
    base = upload_run(alice, TUNED_2)
    run = upload_run(alice, EAGLE_2, meta={"baseline": base.id})
    nccl = get_verdict(client, alice, bearer, run)["nccl"]
    assert nccl == {"status": "ok", "baseline_status": "ok", "drift": [], "differs": [], "alarm": False,
                    "short": "", "sentence": ""}
