"""Two people in one project discuss a run in Chromium: alice anchors a note by dragging across the
phase chart, bob sees it drawn there and replies; eve reaches none of it; a revoked token is refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Annotation
from tests.browser.conftest import ARTIFACTS, login
from webapp.auth import create_token, revoke_token

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def drag_across(page, selector: str, start: float, end: float) -> None:
    """Drag horizontally over a Plotly chart's plot area, from `start` to `end` (fractions of its width)."""
    box = page.locator(f"{selector} .nsewdrag").first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (start + end) / 2, y, steps=5)
    page.mouse.move(box["x"] + box["width"] * end, y, steps=5)
    page.mouse.up()


def test_two_people_discuss_an_anchored_note(browser, live_server, page, alice, bob, eve, upload_run, private_queue):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", name="tuned")
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/runs/{run.id}/")
    page.wait_for_selector("#phases-chart .main-svg")
    drag_across(page, "#phases-chart", 0.25, 0.6)
    expect(page.locator("#id_window_to")).not_to_have_value("")
    low, high = int(page.input_value("#id_window_from")), int(page.input_value("#id_window_to"))
    assert 0 <= low < high
    page.fill("#id_body", "**verify jumps here**: NCCL channel rebuild <script>alert(1)</script>")
    page.fill("#id_phase", "Target verify")
    page.click("#annotate-form button[type=submit]")
    page.wait_for_selector(".note-body strong")
    note = Annotation.objects.get(run=run)
    assert (note.window_from, note.window_to, note.phase) == (low, high, "Target verify")

    bob_context = browser.new_context(viewport={"width": 1360, "height": 900})
    bob_page = bob_context.new_page()
    bob_page.base = page.base
    errors: list[str] = []
    bob_page.on("pageerror", lambda e: errors.append(str(e)))
    login(bob_page, "bob", "bob-pw")
    bob_page.goto(f"{page.base}/runs/{run.id}/")
    bob_page.wait_for_selector("#phases-chart .main-svg")
    # The note is drawn on the chart: a shaded band over its windows and a marker with its text.
    drawn = bob_page.evaluate("""() => {
        const el = document.getElementById('phases-chart');
        const marker = el.data.find((t) => t.meta === 'notes');
        return {shapes: el.layout.shapes.length, text: marker.hovertext[0], ids: marker.customdata};
    }""")
    assert drawn["shapes"] == 1 and drawn["ids"] == [note.id]
    assert "&lt;script&gt;" in drawn["text"] and "<script>" not in drawn["text"]
    assert bob_page.locator(f"#chart-note-{note.id} a[href='#note-{note.id}']").count() == 1
    bob_page.locator(f"#note-{note.id} summary").click()
    bob_page.fill(f"#note-{note.id} form.reply textarea", "agreed: *channel rebuild*")
    bob_page.click(f"#note-{note.id} form.reply button")
    bob_page.wait_for_selector(".annotation.depth-1 .note-body em")
    bob_page.screenshot(path=str(ARTIFACTS / "discussion.png"), full_page=True)
    reply = Annotation.objects.get(parent=note)
    assert reply.author == bob
    # bob, an editor but not the author, is offered no delete for alice's note, only for his reply.
    assert bob_page.locator(f"#note-{note.id} > details form.delete").count() == 0
    assert bob_page.locator(f"#note-{reply.id} form.delete").count() == 1
    assert errors == [] and page.errors == []
    bob_context.close()

    eve_context = browser.new_context()
    eve_page = eve_context.new_page()
    eve_page.base = page.base
    login(eve_page, "eve", "eve-pw")
    for path in (f"/runs/{run.id}/", f"/api/v1/runs/{run.id}/annotations", f"/api/v1/runs/{run.id}"):
        assert eve_page.goto(page.base + path).status == 404
    assert "verify jumps" not in eve_page.goto(page.base + "/").text()
    eve_context.close()

    token = create_token(bob, "ci")
    ci = browser.new_context()  # no session cookie: the token alone decides
    api = ci.request
    headers = {"Authorization": f"Bearer {token}"}
    assert api.get(f"{page.base}/api/v1/runs/{run.id}/annotations", headers=headers).status == 200
    revoke_token(bob, bob.api_tokens.get().id)
    assert api.get(f"{page.base}/api/v1/runs/{run.id}/annotations", headers=headers).status == 401
    ci.close()
