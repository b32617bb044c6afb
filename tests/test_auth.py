"""webapp/auth.py: the login form's limit on password guesses, per address."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_password_guessing_on_the_login_form_is_429_per_address(alice, settings):
    settings.LOGIN_RATE = "3/m"
    guesser, other = Client(REMOTE_ADDR="10.1.1.1"), Client(REMOTE_ADDR="10.2.2.2")
    codes = [guesser.post("/accounts/login/", {"username": "alice", "password": f"guess{i}"}).status_code
             for i in range(4)]
    assert codes == [200, 200, 200, 429]
    # Even the right password waits out the window from that address; another address logs in.
    assert guesser.post("/accounts/login/", {"username": "alice", "password": "alice-pw"}).status_code == 429
    assert other.post("/accounts/login/", {"username": "alice", "password": "alice-pw"}).status_code == 302


def test_a_forged_x_forwarded_for_does_not_reset_the_login_count(alice, settings):
    settings.LOGIN_RATE = "2/m"
    client = Client(REMOTE_ADDR="10.1.1.1")
    codes = [client.post("/accounts/login/", {"username": "alice", "password": "x"},
                         headers={"X-Forwarded-For": f"192.0.2.{i}"}).status_code for i in range(3)]
    assert codes == [200, 200, 429]
