"""The sweep in a real browser: the recorded sweep samples, picked on the run list, drawn with
their best points, the fitted prediction and the headline."""

from __future__ import annotations

import pytest

from runs.models import Tag
from tests.browser.conftest import ARTIFACTS, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SWEEP = ["baseline_nospec", *[f"{n}_{k}step" for n in ("default", "tuned") for k in range(1, 6)], "dropped_2step"]


@pytest.fixture
def sweep_runs(alice, upload_run):
    tag, _ = Tag.objects.get_or_create(name="sweep")
    runs = {}
    for name in SWEEP:
        runs[name] = upload_run(alice, f"sweep/sweep_{name}.log", name=name)
        runs[name].tags.add(tag)
    return runs


def test_sweep_page_draws_best_points_prediction_and_headline(page, sweep_runs):
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/sweep/?project=team&tag=sweep")
    page.wait_for_selector("#chart-sweep-throughput_tok_s-plot .main-svg")
    assert not page.errors

    headline = page.inner_text("#headline")
    assert "Tuned NCCL wins at 1–2 steps, default NCCL from 3; best overall default NCCL 5-step, 692.4 tok/s." in headline
    assert "tuned NCCL: best 5-step, 646.3 tok/s" in headline

    legend = page.text_content("#chart-sweep-throughput_tok_s-plot .legend")
    for name in ("default NCCL", "tuned NCCL", "default NCCL predicted", "tuned NCCL predicted", "default NCCL best"):
        assert name in legend
    # The best points are the starred markers: one per group, at 5 steps for default and tuned.
    stars = page.evaluate("""() => document.getElementById('chart-sweep-throughput_tok_s-plot').data
        .filter(t => t.name.endsWith(' best')).map(t => [t.name, t.x[0], t.y[0]])""")
    assert ["default NCCL best", 5, 692.35] in stars and ["tuned NCCL best", 5, 646.3] in stars
    curve = page.evaluate("""() => document.getElementById('chart-sweep-throughput_tok_s-plot').data
        .find(t => t.name === 'tuned NCCL predicted').x""")
    assert curve == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "no speculation 259.0 tok/s" in page.text_content("#chart-sweep-throughput_tok_s-plot")

    best_row = page.inner_text(f"tr[data-run='{sweep_runs['default_5step'].id}']")
    assert "best" in best_row and "692.4" in best_row
    assert "Predicted best: 8 steps, +3% over 5, untested" in page.inner_text("section[data-group='tuned NCCL']")
    page.screenshot(path=str(ARTIFACTS / "sweep.png"), full_page=True)


def test_sweep_selected_on_the_run_list_opens_the_sweep(page, sweep_runs):
    login(page, "alice", "alice-pw")
    picked = [sweep_runs[n].id for n in ("tuned_1step", "tuned_2step", "tuned_3step")]
    for run_id in picked:
        page.check(f"input[name=run][value='{run_id}']")
    page.click("#sweep-button")
    page.wait_for_url(f"**/sweep/?runs={','.join(map(str, picked))}")
    page.wait_for_selector("#chart-sweep-throughput_tok_s-plot .main-svg")
    assert page.inner_text("#headline").startswith("tuned NCCL: best 3-step")
    assert not page.errors
