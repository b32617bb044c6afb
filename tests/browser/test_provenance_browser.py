"""A figure's provenance panel in a real browser: it states the card's median, marks the windows
that make it (both middle ones for an even count) and lists every window of every file behind it.
Real sample logs recorded on 2 H200 GPUs (samples/: the shared gpu/ recordings, byte for byte)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _open(page, run_id: int, key: str) -> tuple[str, list[str], list[str]]:
    page.goto(f"{page.base}/runs/{run_id}/")
    page.click(f"a.src[data-figure='{key}'] >> nth=0")
    page.wait_for_selector("#source-panel:not([hidden]) .hit")
    return (page.inner_text("#source-title"), [r.inner_text() for r in page.query_selector_all("#source-lines .hit")],
            [r.inner_text() for r in page.query_selector_all("#source-lines > div[data-line]")])


def test_an_even_count_states_the_cards_median_and_marks_both_middle_windows(page, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    login(page, "alice", "alice-pw")
    title, hits, rows = _open(page, run.id, "metric:throughput_tok_s")
    card = page.inner_text(".card .value >> nth=0")
    assert card.startswith("472.8") and "6 windows" in title and "median 472.8" in title
    assert "466.3 at line" in title and "479.3 at line" in title
    assert len(rows) == 6 and len(hits) == 2
    assert any("= 466.3" in h for h in hits) and any("= 479.3" in h for h in hits)
    page.screenshot(path=str(ARTIFACTS / "provenance-even.png"), full_page=True)
    assert page.errors == []


def test_a_run_of_two_launches_links_its_figure_to_every_window_of_both_files(page, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_default_2step.log")
    login(page, "alice", "alice-pw")
    title, hits, rows = _open(page, run.id, "metric:throughput_tok_s")
    assert f"median {run.throughput_tok_s:.1f}" in title and "14 windows in 2 files" in title
    assert len(rows) == 14 == run.windows and len(hits) == 2
    files = [f.inner_text() for f in page.query_selector_all("#source-lines > .file")]
    assert files == ["── spec_eagle3_tuned_2step.log", "── sweep_default_2step.log"]
    page.screenshot(path=str(ARTIFACTS / "provenance-two-files.png"), full_page=True)
    assert page.errors == []
