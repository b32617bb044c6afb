"""The login lockout as a person meets it in Chromium: the page says how long it lasts and leads
back to the login form."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_lockout_page_says_15_minutes_and_leads_back_to_the_login_form(page, alice, settings):
    assert settings.AXES_COOLOFF_TIME * 60 == 15
    for i in range(settings.AXES_FAILURE_LIMIT):
        page.goto(f"{page.base}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", f"guess{i}")
        page.click("button[type=submit]")
    assert "This account is locked for 15 minutes" in page.inner_text("#lockout")
    page.screenshot(path=str(ARTIFACTS / "login-locked-out.png"), full_page=True)
    page.click("#back-to-login")
    page.wait_for_url(f"{page.base}/accounts/login/")
    assert page.is_visible("#id_password")
    assert not page.errors
