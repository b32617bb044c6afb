"""The CI gate end to end: the client fetched from the server with curl, run by a bare python3,
against a live server and a real Celery worker. Its own module: tests/test_client.py uses a
stand-in parser thread, and this one needs the real worker and the verdict.
"""

import json
import re
import shutil
import subprocess
import sys

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


def upload(script, live_server, token, log: str, *args: str, branch: str = "") -> subprocess.CompletedProcess:
    meta = script.parent / f"meta-{log.replace('/', '_')}.json"
    meta.write_text(json.dumps({"ci": {"branch": branch}} if branch else {}))
    # -I: isolated mode, no site-packages of the test environment: standard library only.
    return subprocess.run(
        [PYTHON, "-I", str(script), "--url", live_server.url, "--token", token, "--project", "team",
         "--meta-json", str(meta), "--wait", "--timeout", "120", *args, str(log_path(log))],
        capture_output=True, text=True, timeout=180, env={"PATH": "/usr/bin:/bin"},
    )


def run_id(proc: subprocess.CompletedProcess) -> int:
    return int(re.search(r"^run (\d+):", proc.stdout, re.M).group(1))


@pytest.mark.e2e
@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_fail_on_regression_exits_6_for_slower_and_0_for_faster(live_server, alice, worker, script, tmp_path):
    token = create_token(alice)
    main = upload(script, live_server, token, "sweep/sweep_dropped_2step.log", branch="main")  # 489.6 tok/s
    assert main.returncode == 0, main.stdout + main.stderr

    summary = tmp_path / "summary.md"
    faster = upload(script, live_server, token, "sweep/sweep_tuned_2step.log",  # 522.7 tok/s
                    "--baseline", "branch:main", "--fail-on-regression", "3", "--summary-md", str(summary),
                    branch="feature")
    assert faster.returncode == 0, faster.stdout + faster.stderr
    assert "Improvement: " in faster.stdout
    assert Run.objects.get(pk=run_id(faster)).meta["baseline"] == {"branch": "main"}

    slower = upload(script, live_server, token, "sweep/sweep_default_2step.log",  # 470.7 tok/s
                    "--baseline", str(run_id(faster)), "--fail-on-regression", "3", "--summary-md", str(summary))
    assert slower.returncode == 6, slower.stdout + slower.stderr
    base, new = run_id(faster), run_id(slower)
    assert "Regression: sweep_default_2step.log is slower than sweep_tuned_2step.log (470.7 vs 522.7 tok/s" in slower.stdout
    assert f"compare: {live_server.url}/compare/?runs={base},{new}&baseline={base}" in slower.stdout
    assert "over the 3% limit" in slower.stdout

    md = summary.read_text()
    assert md.count("### ") == 2 and "runlens: improvement" in md and "runlens: regression" in md
    assert "| Throughput tok/s | 522.70 | 470.70 | -52.00 | -9.9% | 19.04 | worse |" in md
    assert md.count("| Target verify ms/cyc |") == 2  # once per verdict: verify is not repeated as a phase
    assert f"[Compare in runlens]({live_server.url}/compare/?runs={base},{new}&baseline={base})" in md


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
                     "delta_pct": 20.0, "noise": None, "direction": "worse"}],
        "compare_url": "https://r.example/compare/?runs=1,2&baseline=1", "run_url": "https://r.example/runs/2/",
    })
    assert "a\\|b" in md and "| Draft\\|x ms/cyc | 1.00 | 1.20 | +0.20 | +20.0% | — | worse |" in md
    assert "[Compare in runlens](https://r.example/compare/?runs=1,2&baseline=1)" in md
