"""The story in a real browser: upload two logs, watch them parse, compare them, export CSV."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from runs.models import Run
from tests.browser.conftest import ARTIFACTS, login
from tests.samples import log_path, parsed_upload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def _upload(page, name: str, run_name: str) -> int:
    page.goto(f"{page.base}/upload/")
    page.set_input_files("#id_files", str(log_path(name)))
    assert name.rsplit("/", 1)[-1] in page.inner_text("#file-list")
    page.fill("#id_name", run_name)
    page.click("#upload-submit")
    page.wait_for_url("**/runs/*/")
    # The run page polls and reloads itself when the parse ends: no manual reload here.
    page.wait_for_selector("#run-status.ready", timeout=60_000)
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


@pytest.mark.e2e
def test_upload_parse_compare_and_export(page, alice, worker):
    login(page, "alice", "alice-pw")
    base = _upload(page, "spec_baseline_nospec.log", "baseline no-spec")
    tuned = _upload(page, "sweep/sweep_dropped_2step.log", "dropped 2-step")
    assert "Target verify" in page.inner_text("main")
    page.screenshot(path=str(ARTIFACTS / "run-detail.png"), full_page=True)

    page.goto(f"{page.base}/")
    page.check(f"input[name=run][value='{base}']")
    page.check(f"input[name=run][value='{tuned}']")
    page.click("#compare-button")
    page.wait_for_url(f"**/compare/?runs={base},{tuned}&baseline={base}")
    page.wait_for_selector("#breakdown-chart .main-svg")
    page.wait_for_selector("[data-figure='chart-throughput_tok_s'] .main-svg")

    breakdown = page.text_content("#breakdown-chart")
    assert "Target verify" in breakdown and "baseline no-spec (baseline)" in breakdown
    legend = page.text_content("[data-figure='chart-throughput_tok_s'] .legend")
    assert "baseline no-spec" in legend and "dropped 2-step" in legend
    headline = page.inner_text("#headline")
    assert "never got 6 NCCL variables" in headline
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)

    with page.expect_download() as download:
        page.click("#csv-link")
    csv_text = open(download.value.path()).read()
    assert csv_text.startswith("run_id,run,baseline,metric") and "dropped 2-step" in csv_text

    # Provenance: clicking a source link shows the log line it came from.
    page.click("#config a.src >> nth=0")
    page.wait_for_selector("#source-panel:not([hidden]) .hit")
    assert page.inner_text("#source-panel .hit").strip()

    outside = {u for u in page.requests if urlparse(u).scheme in ("http", "https")
               and urlparse(u).hostname not in LOCAL_HOSTS}
    assert outside == set()
    assert page.errors == []
    assert Run.objects.filter(status="ready").count() == 2


def test_hostile_run_name_is_shown_not_executed(page, alice, upload_run):
    evil = "<img src=x onerror=alert(1)></script><script>alert(2)</script>"
    a = upload_run(alice, "spec_baseline_nospec.log", name=evil)
    b = upload_run(alice, "spec_eagle3_tuned_2step.log", name="ok")
    login(page, "alice", "alice-pw")
    for path in ("/", f"/runs/{a.id}/", f"/compare/?runs={a.id},{b.id}"):
        page.goto(page.base + path)
        page.wait_for_load_state("networkidle")
        assert evil in page.inner_text("main")
    page.wait_for_selector("#breakdown-chart .main-svg")
    assert page.errors == []


# Every link, form, script, frame and image a page has, with where it points.
_TARGETS_JS = """() => Array.from(document.querySelectorAll('a[href], area[href], form, [src], link[href]'))
  .map(el => el.href || el.action || el.src || '')"""


def test_no_control_links_or_posts_to_another_host(page, alice, upload_run):
    runs = [upload_run(alice, name) for name in ("spec_baseline_nospec.log", "spec_eagle3_tuned_2step.log",
                                                 "nccl-tests_all_reduce_default.log")]
    login(page, "alice", "alice-pw")
    ids = ",".join(str(r.id) for r in runs)
    for path in ("/", f"/runs/{runs[1].id}/", f"/runs/{runs[2].id}/", f"/compare/?runs={ids}", "/upload/"):
        page.goto(page.base + path)
        page.wait_for_load_state("networkidle")
        targets = [t for t in page.evaluate(_TARGETS_JS) if t]
        assert targets, path
        foreign = {t for t in targets if urlparse(t).scheme in ("http", "https")
                   and urlparse(t).hostname not in LOCAL_HOSTS}
        assert foreign == set(), path
        # Plotly's mode bar: download as PNG and zoom, but no Chart Studio / cloud / plot.ly link.
        for chart in page.query_selector_all(".chart .modebar"):
            titles = " ".join(b.get_attribute("data-title") or "" for b in chart.query_selector_all(".modebar-btn"))
            assert "png" in titles.lower() and "chart studio" not in titles.lower() and "cloud" not in titles.lower()
    assert page.errors == []


def test_twenty_runs_compare_with_distinct_lines_and_a_legend_clear_of_the_plot(page, alice, upload_run):
    first = upload_run(alice, "spec_eagle3_tuned_2step.log")
    # Twenty runs of one parsed log (copies of its rows are enough: the layout is under test); a
    # line of its own makes each copy new content, as the same bytes give back the same run.
    tuned = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    ids = [first.id] + [parsed_upload(alice, f"copy {i}.log", f"copy {i}\n".encode() + tuned).id
                        for i in range(19)]
    extra = upload_run(alice, "spec_baseline_nospec.log")
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/compare/?runs={','.join(map(str, ids + [extra.id]))}")
    assert f"#{extra.id}" in page.inner_text("#left-out")
    chart = "[data-figure='chart-throughput_tok_s']"
    page.wait_for_selector(f"{chart} .main-svg")
    lines = page.eval_on_selector_all(f"{chart} .scatterlayer .trace .js-line",
                                      "els => els.map(e => e.style.stroke + '|' + e.style.strokeDasharray)")
    assert len(lines) == 20 and len(set(lines)) == 20
    legend = page.eval_on_selector(f"{chart} .legend", "e => e.getBoundingClientRect().bottom")
    plot = page.eval_on_selector(f"{chart} .draglayer .nsewdrag", "e => e.getBoundingClientRect().top")
    assert legend <= plot + 1
    page.screenshot(path=str(ARTIFACTS / "compare-20.png"), full_page=True)
    assert page.errors == []


def test_a_median_opens_every_window_line_and_a_chart_point_opens_its_own(page, alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/runs/{run.id}/")
    assert page.inner_text("#tpc-raw").startswith("Accept len 1.20 + 1 bonus token")
    page.click("a.src[data-figure='phase:Target verify'] >> nth=0")
    page.wait_for_selector("#source-panel:not([hidden]) .hit")
    rows = page.query_selector_all("#source-lines > div")
    # Six windows: the two middle ones are marked (both 4.08 here), their mean is the median.
    assert len(rows) == 6 and len(page.query_selector_all("#source-lines .hit")) == 2
    assert "median 4.08" in page.inner_text("#source-title")
    page.click("#source-close")
    page.wait_for_selector("[data-figure='chart-phases'] .main-svg")
    page.click("[data-figure='chart-phases'] .scatterlayer .trace:last-child .points path >> nth=2", force=True)
    page.wait_for_selector("#source-panel:not([hidden]) .hit")
    assert "Target verify" in page.inner_text("#source-panel .hit") or "Accept" in page.inner_text("#source-panel .hit")
    page.screenshot(path=str(ARTIFACTS / "run-provenance.png"), full_page=True)
    assert page.errors == []
