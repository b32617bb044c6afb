"""The trend in a real browser: regressions flagged, and a click on a point opens its run."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def history(alice, upload_run):
    return [
        upload_run(alice, "sweep/sweep_tuned_2step.log", meta={"ci": {"branch": "main", "commit": "aaaa1111"}}),
        upload_run(alice, "sweep/sweep_default_2step.log", meta={"ci": {"branch": "main", "commit": "bbbb2222"}}),
        upload_run(alice, "sweep/sweep_dropped_2step.log", meta={"ci": {"branch": "main", "commit": "cccc3333"}}),
    ]


def test_trend_flags_the_regression_and_a_click_opens_the_run(page, history):
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/trend/?project=team&branch=main&metric=throughput_tok_s")
    page.wait_for_selector("#trend-chart .main-svg")
    assert "1 regression beyond the noise, the largest at bbbb2222" in page.inner_text("#headline")
    ticks = page.text_content("#trend-chart .xaxislayer-above")
    assert "aaaa1111" in ticks and "bbbb2222" in ticks and "cccc3333" in ticks
    assert "regression" in page.text_content("#trend-chart .legend")
    page.screenshot(path=str(ARTIFACTS / "trend.png"), full_page=True)

    # Click where plotly drew the second point (the regression) and land on its run page.
    x, y = page.evaluate("""() => {
        const gd = document.getElementById('trend-chart');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(2), r.top + ya._offset + ya.l2p(gd.data[0].y[1])];
    }""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_url(f"**/runs/{history[1].id}/")
    assert not page.errors
