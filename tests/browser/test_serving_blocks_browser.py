"""A file of several benchmark result blocks shows each block as a row of its own on the run page,
in a real Chromium: the table is drawn, one row a block, and no blended figure stands for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS, login
from tests.samples import parsed_upload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SWEEP = Path(__file__).resolve().parents[1] / "corpus" / "serving" / "sglang_bench_serving_rate_sweep_dlora.md"
ROWS = """() => Array.from(document.querySelectorAll('#serving-blocks tr[data-block]')).map((tr) =>
    [tr.checkVisibility(), Array.from(tr.cells).map((td) => td.textContent.replace(/\\s+/g, ' ').trim())])"""


def test_each_result_block_of_a_sweep_is_a_visible_row(page, alice):
    run = parsed_upload(alice, SWEEP.name, SWEEP.read_bytes())
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/runs/{run.id}/")
    page.wait_for_selector("#serving-blocks table")
    rows = page.evaluate(ROWS)
    page.locator("#serving-blocks").screenshot(path=str(ARTIFACTS / "serving-blocks.png"))
    assert [visible for visible, _ in rows] == [True] * 6
    # block, where, tool, request rate, concurrency, requests, output tok/s, ...
    assert [(cells[3], cells[6]) for _, cells in rows] == [
        ("2.0", "825.9"), ("4.0", "839.0"), ("8.0", "832.7"), ("16.0", "820.0"), ("32.0", "834.6"), ("64.0", "832.5")]
    assert all(cells[2] == "sglang" and cells[4] == "not set" for _, cells in rows)
    assert page.locator("#blocks-apart").is_visible()
    assert page.errors == []
