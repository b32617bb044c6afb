"""The live list's figure() in app.js writes every figure as runs/display.py does."""

from __future__ import annotations

import pytest

from runs import display
from tests.test_display import TABLE

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


def test_script_and_server_write_every_figure_alike(page):
    page.goto(f"{page.base}/accounts/login/")  # any page loads app.js
    cases = [[value, kind] for value, kind, _ in TABLE if value is None or value == value]  # JSON has no NaN
    cases += [[v, k] for v in (0.15, 2.5, 99.95, 1e-5, 123.456789, -1.45, 1e16 + 2, 5e-324) for k in display.PLACES]
    got = page.evaluate("(cases) => cases.map(([v, k]) => figure(v, k))", cases)
    assert got == [display.figure(v, k) for v, k in cases]
    assert page.evaluate("() => [Number.NaN, Infinity].map((v) => figure(v, 'ms'))") == ["—", "—"]


def test_script_and_server_share_the_places_of_each_kind(page):
    page.goto(f"{page.base}/accounts/login/")
    places, kinds, default = page.evaluate("() => [FIGURE_PLACES, FIGURE_KINDS, FIGURE_DEFAULT_PLACES]")
    assert (places, kinds, default) == (display.PLACES, display.KINDS, display.DEFAULT_PLACES)


def _hover(page, chart: str, curve: int, point: int) -> str:
    """What plotly.js shows when the pointer is on one point of a chart: its hover label's text."""
    page.wait_for_function(f"() => document.querySelector('#{chart}')?.data")
    return page.evaluate(
        """([chart, curve, point]) => {
             const el = document.getElementById(chart);
             window.Plotly.Fx.hover(el, [{curveNumber: curve, pointNumber: point}]);
             return Array.from(el.querySelectorAll('.hoverlayer .hovertext')).map((n) => n.textContent).join(' | ');
           }""", [chart, curve, point])


def test_chart_labels_and_hovers_write_figures_as_the_tables_do(page, alice):
    from tests.browser.conftest import login
    from tests.samples import log_path, parsed_upload

    # sweep_tuned_2step's verify is 3.775 ms, a binary 3.77499...: plotly's own %{x:.2f} says 3.77.
    base = parsed_upload(alice, "eagle.log", log_path("spec_eagle3_tuned_2step.log").read_bytes())
    run = parsed_upload(alice, "tuned.log", log_path("sweep/sweep_tuned_2step.log").read_bytes())
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/compare/?runs={base.id},{run.id}&baseline={base.id}")
    verify = next(i for i, p in enumerate(run.parsed["phases"]) if p["name"] == "Target verify")
    label = _hover(page, "breakdown-chart", verify, 1)
    assert "3.78 ms · 90.0%" in label and "3.77" not in label
    # The bars' own labels, drawn inside them (SVG text).
    drawn = page.evaluate("() => Array.from(document.querySelectorAll('#breakdown-chart .bartext'))"
                          ".map((n) => n.textContent)")
    assert "3.78 ms · 90.0%" in drawn and "0.15 ms · 3.5%" in drawn
    assert page.errors == []
