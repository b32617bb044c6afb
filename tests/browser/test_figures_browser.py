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
