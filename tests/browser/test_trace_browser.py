"""Profiler traces in a real browser: the run page draws the phases by kernel class and a cycle's
timeline, the cycle picker redraws it, the comparison names what explains a phase's change."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_page_trace_charts_and_cycle_picker(page, alice, upload_run):
    run = upload_run(alice, "traces/trace_spec_k2_3cycles.json.gz", "traces/spec_k2.log")
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/runs/{run.id}/#trace")
    page.wait_for_selector("#trace-classes-chart .main-svg")
    page.wait_for_selector("#trace-timeline-chart .main-svg")
    legend = page.text_content("#trace-classes-chart .legend")
    assert "GEMM" in legend and "GPU idle" in legend
    assert "Cycle 7" in page.text_content("#trace-timeline-chart")
    page.screenshot(path=str(ARTIFACTS / "run-trace.png"), full_page=True)
    page.select_option("#trace-cycle", "5")
    page.click("#trace form.inline button")
    page.wait_for_selector("#trace-timeline-chart .main-svg")
    assert "Cycle 5" in page.text_content("#trace-timeline-chart")
    page.click("#trace-timeline-chart .main-svg", position={"x": 400, "y": 120})  # a click opens nothing
    assert page.errors == []


def test_compare_page_shows_the_trace_deltas(page, alice, upload_run):
    k2 = upload_run(alice, "traces/trace_tp1_flash_rank0.json.gz", "traces/trace_tp1_flash.log")
    k4 = upload_run(alice, "traces/trace_tp1_flash_k4_rank0.json.gz", "traces/trace_tp1_flash_k4.log")
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/compare/?runs={k2.id},{k4.id}&baseline={k2.id}")
    page.wait_for_selector("#trace-deltas-chart .main-svg")
    assert "Target verify +2.0 ms: GPU idle +1.9 ms" in page.inner_text("#headline")
    assert "GPU idle" in page.inner_text("#trace-deltas")
    page.screenshot(path=str(ARTIFACTS / "compare-trace.png"), full_page=True)
    assert page.errors == []
