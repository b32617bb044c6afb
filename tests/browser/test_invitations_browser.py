"""Inviting someone to a project in Chromium: the admin invites, the invitee sees the invitation on
their Projects page and accepts it; only then are they a member."""

from __future__ import annotations

import pytest

from runs.models import Membership
from tests.browser.conftest import ARTIFACTS, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_invitation_is_sent_then_accepted_on_the_pages(page, browser, alice, eve):
    project = alice.projects.get()
    login(page, "alice", "alice-pw")
    page.goto(f"{page.base}/projects/{project.id}/")
    page.fill("#id_user", "eve")
    page.select_option("#id_role", "editor")
    page.click("form.add-member button[type=submit]")
    page.wait_for_selector("#invitations tr[data-invitee='eve']")
    assert "invited eve as editor: they join when they accept" in page.inner_text("[data-message=info]")
    assert page.query_selector("#members tr[data-username='eve']") is None
    assert not Membership.objects.filter(user=eve).exists()
    page.screenshot(path=str(ARTIFACTS / "invitation-sent.png"), full_page=True)

    context = browser.new_context(viewport={"width": 1360, "height": 900})
    invitee = context.new_page()
    invitee.base = page.base
    try:
        login(invitee, "eve", "eve-pw")
        assert invitee.inner_text("#invitations-pending") == "1"  # every page's header says so
        invitee.click("header nav a[href='/projects/']")
        row = invitee.wait_for_selector("#invitations tr[data-invitation]")
        assert row.inner_text().split("\t")[:3] == ["team", "editor", "alice"]
        invitee.screenshot(path=str(ARTIFACTS / "invitation-received.png"), full_page=True)
        row.query_selector("button.primary").click()
        invitee.wait_for_url(f"{page.base}/projects/{project.id}/")
        assert "you joined team as editor" in invitee.inner_text("[data-message=info]")
        assert invitee.query_selector("#members tr[data-username='eve']") is not None
        assert invitee.query_selector("#invitations-pending") is None
    finally:
        context.close()
    assert Membership.objects.get(user=eve).role == "editor"
    assert not page.errors
