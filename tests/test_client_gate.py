"""The CI gate end to end: the client fetched from the server with curl, run by a bare python3,
against a live server and a real Celery worker. Its own module: tests/test_client.py uses a
stand-in parser thread, and this one needs the real worker and the verdict.
"""

import json
import re
import shutil
import subprocess
import sys
import urllib.request

import pytest

from ingest import client
from runs.models import Run
from tests.samples import log_path
from webapp.auth import create_token

PYTHON = shutil.which("python3") or sys.executable


@pytest.fixture
def script(live_server, tmp_path):
    """runlens-upload.py as CI gets it: curl from the server, no package installed."""
    if not shutil.which("curl"):
        pytest.skip("no curl")
    path = tmp_path / "runlens-upload.py"
    subprocess.run(["curl", "-fsS", f"{live_server.url}/api/v1/client/runlens-upload.py", "-o", str(path)],
                   check=True, timeout=30)
    return path


def upload(script, live_server, token, log: str, *args: str, branch: str = "",
           project: str = "team") -> subprocess.CompletedProcess:
    meta = script.parent / f"meta-{log.replace('/', '_')}.json"
    meta.write_text(json.dumps({"ci": {"branch": branch}} if branch else {}))
    # -I: isolated mode, no site-packages of the test environment: standard library only.
    return subprocess.run(
        [PYTHON, "-I", str(script), "--url", live_server.url, "--token", token, "--project", project,
         *(["--create-project"] if project != "team" else []),
         "--meta-json", str(meta), "--wait", "--timeout", "120", *args, str(log_path(log))],
        capture_output=True, text=True, timeout=180, env={"PATH": "/usr/bin:/bin"},
    )


def run_id(proc: subprocess.CompletedProcess) -> int:
    return int(re.search(r"^run (\d+):", proc.stdout, re.M).group(1))


@pytest.mark.e2e
@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_fail_on_regression_exits_6_for_slower_and_0_for_faster(live_server, alice, worker, script, tmp_path):
    # Both recordings are EAGLE-3, 2 draft steps, with the same NCCL settings reaching the workers.
    token = create_token(alice)
    main = upload(script, live_server, token, "spec_eagle3_tuned_2step.log", branch="main")  # 472.8 tok/s
    assert main.returncode == 0, main.stdout + main.stderr

    summary = tmp_path / "summary.md"
    faster = upload(script, live_server, token, "sweep/sweep_tuned_2step.log",  # 522.7 tok/s
                    "--baseline", "branch:main", "--fail-on-regression", "3", "--summary-md", str(summary),
                    branch="feature")
    assert faster.returncode == 0, faster.stdout + faster.stderr
    assert "Improvement: " in faster.stdout
    assert Run.objects.get(pk=run_id(faster)).meta["baseline"] == {"branch": "main"}

    # The other way round, in a project of its own (the same files uploaded again are the same run).
    upload(script, live_server, token, "sweep/sweep_tuned_2step.log", branch="main", project="other")
    slower = upload(script, live_server, token, "spec_eagle3_tuned_2step.log", "--baseline", "branch:main",
                    "--fail-on-regression", "3", "--summary-md", str(summary), project="other")
    assert slower.returncode == 6, slower.stdout + slower.stderr
    new = run_id(slower)
    base = Run.objects.get(pk=new).project.runs.exclude(pk=new).get().pk
    assert "Regression: spec_eagle3_tuned_2step.log is slower than sweep_tuned_2step.log (472.8 vs 522.7 tok/s" \
        in slower.stdout
    assert f"compare: {live_server.url}/compare/?runs={base},{new}&baseline={base}" in slower.stdout
    assert "over the 3% limit" in slower.stdout

    md = summary.read_text()
    assert md.count("### ") == 2 and "### 🟢 runlens: improvement\n" in md and "### 🔴 runlens: regression\n" in md
    # The figures as the pages write them (a cycle of 4.255 ms is 4.26 there, never the binary 4.25).
    assert "| Throughput tok/s | 522.7 | 472.8 | -49.9 | -9.6% | 19.0 | worse |" in md
    assert "| Cycle ms | 4.26 | 4.60 | +0.35 | +8.1% | 0.13 | worse |" in md
    assert md.count("| Target verify ms/cyc |") == 2  # once per verdict: verify is not repeated as a phase
    assert f"[Compare in runlens]({live_server.url}/compare/?runs={base},{new}&baseline={base})" in md
    assert "NCCL" not in md  # the same settings reached both runs' workers: nothing to say


@pytest.mark.e2e
@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_dropped_nccl_tuning_is_never_green_and_fail_on_drift_exits_8(live_server, alice, worker, script, tmp_path):
    """The recording whose launcher's NCCL tuning never reached the workers, against a tuned
    baseline (it is slower) and against an untuned one (it is faster: the gate used to say 🟢)."""
    token = create_token(alice)
    summary = tmp_path / "summary.md"
    for project, baseline in (("team", "sweep/sweep_tuned_2step.log"), ("untuned", "sweep/sweep_default_2step.log")):
        main = upload(script, live_server, token, baseline, branch="main", project=project)
        assert main.returncode == 0, main.stdout + main.stderr
        gated = upload(script, live_server, token, "sweep/sweep_dropped_2step.log", "--baseline", "branch:main",
                       "--fail-on-regression", "3", "--summary-md", str(summary), branch="feature", project=project)
        # The regression gate alone lets it pass (under 3% beyond the noise, or faster) ...
        assert gated.returncode == 0, gated.stdout + gated.stderr
        headline = gated.stdout.splitlines()[2]  # after "run N: <url> (queued)" and "run N: ready"
        assert headline.startswith("NCCL drift in sweep_dropped_2step.log: the workers never got 6 NCCL variables")
        assert "not comparable: effective NCCL settings differ: " in headline
        assert "  nccl: NCCL_ALGO declared Ring, never reached the workers" in gated.stdout
        assert "  nccl: NCCL_CUMEM_ENABLE: this run 0, baseline unset" in gated.stdout
        # ... --fail-on-drift stops it, with its own exit status (the same files again: the same run).
        drift = upload(script, live_server, token, "sweep/sweep_dropped_2step.log", "--fail-on-drift",
                       "--fail-on-regression", "3", project=project)
        assert drift.returncode == client.EXIT_DRIFT == 8, drift.stdout + drift.stderr
        assert "gate: NCCL drift (--fail-on-drift)" in drift.stdout

        # Any other consumer reads the same from the verdict API.
        verdict = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"{live_server.url}/api/v1/runs/{run_id(gated)}/verdict", headers={"Authorization": f"Bearer {token}"}),
            timeout=30).read())
        assert verdict["verdict"] == "not comparable" and verdict["nccl"]["status"] == "drift"
        assert verdict["nccl"]["alarm"] is True and len(verdict["nccl"]["drift"]) == 6
        assert {"key": "NCCL_CUMEM_ENABLE", "run": "0", "baseline": None} in verdict["nccl"]["differs"]

    md = summary.read_text()
    titles = [line for line in md.splitlines() if line.startswith("### ")]
    assert titles == ["### ⚠️ runlens: not comparable · NCCL drift: 6 declared variables did not reach the "
                      "workers as declared"] * 2
    assert "🟢" not in md and "improvement" not in md
    assert "| NCCL_ALGO | Ring | unset | |" in md and "| NCCL_CUMEM_ENABLE | | 0 | unset |" in md


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_gate_without_wait_is_a_usage_error(live_server, alice, script):
    proc = subprocess.run([PYTHON, "-I", str(script), "--url", live_server.url, "--token", "t",
                           "--fail-on-regression", "3", str(log_path("sweep/sweep_default_2step.log"))],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "need --wait" in proc.stderr
    assert not Run.objects.exists()


@pytest.mark.parametrize(("given", "stored"), [("42", 42), ("pinned", "pinned"), ("branch:main", {"branch": "main"})])
def test_baseline_flag_becomes_meta_baseline(given, stored):
    args = client.parser().parse_args(["--url", "u", "--baseline", given, "x.log"])
    assert client.with_baseline({}, args) == {"baseline": stored}


@pytest.mark.parametrize("given", ["latest", "branch:", "-3"])
def test_bad_baseline_flag_is_a_usage_error(given):
    args = client.parser().parse_args(["--url", "u", f"--baseline={given}", "x.log"])
    with pytest.raises(client.ClientError) as e:
        client.with_baseline({}, args)
    assert e.value.code == client.EXIT_USAGE


def test_summary_escapes_names_that_would_break_the_table():
    md = client.summary_markdown({
        "verdict": "regression", "headline": "Regression: a|b is slower", "reasons": [],
        "figures": [{"label": "Draft|x", "unit": "ms/cyc", "baseline": 1.0, "value": 1.2, "delta": 0.2,
                     "delta_pct": 20.0, "noise": None, "direction": "worse",
                     "text": {"baseline": "1.00", "value": "1.20", "delta": "+0.20", "delta_pct": "+20.0",
                              "noise": "—"}}],
        "compare_url": "https://r.example/compare/?runs=1,2&baseline=1", "run_url": "https://r.example/runs/2/",
    })
    assert "a\\|b" in md and "| Draft\\|x ms/cyc | 1.00 | 1.20 | +0.20 | +20.0% | — | worse |" in md
    assert "[Compare in runlens](https://r.example/compare/?runs=1,2&baseline=1)" in md

