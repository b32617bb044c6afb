"""webapp/auth.py: the address every limit counts by; the login lockout (django-axes) keyed on it.

One login limit: django-axes locks a username out from one address after
RUNLENS_LOGIN_FAILURES wrong passwords. The per-address RUNLENS_LOGIN_RATE throttle is gone.
"""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _login(client: Client, password: str, **headers: str) -> int:
    return client.post("/accounts/login/", {"username": "alice", "password": password},
                       headers=headers).status_code


def test_password_guessing_is_stopped_even_for_the_right_password(alice, settings):
    settings.AXES_FAILURE_LIMIT = 3
    guesser, other = Client(REMOTE_ADDR="10.1.1.1"), Client(REMOTE_ADDR="10.2.2.2")
    codes = [_login(guesser, f"guess{i}") for i in range(5)]
    assert codes == [200, 200, 429, 429, 429]
    # Locked: the right password does not get in from that address, so guessing learns nothing...
    assert _login(guesser, "alice-pw") == 429 and "_auth_user_id" not in guesser.session
    # ...and the guesser cannot lock alice out of her own address.
    assert _login(other, "alice-pw") == 302


def test_a_forged_x_forwarded_for_does_not_dodge_the_lockout(alice, settings):
    settings.AXES_FAILURE_LIMIT = 2
    client = Client(REMOTE_ADDR="10.1.1.1")
    codes = [_login(client, "x", **{"X-Forwarded-For": f"192.0.2.{i}"}) for i in range(4)]
    assert codes == [200, 429, 429, 429]


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_one_locked(alice, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.NINJA_NUM_PROXIES = 1
    proxy = Client(REMOTE_ADDR="10.9.9.9")
    assert [_login(proxy, "x", **{"X-Forwarded-For": "192.0.2.1"}) for _ in range(2)] == [200, 429]
    # Another client behind the same proxy is not locked out by the first one's guesses.
    assert _login(proxy, "alice-pw", **{"X-Forwarded-For": "192.0.2.2"}) == 302


def test_the_login_limit_holds_while_the_cache_is_down(alice, settings):
    # Counted in the database: a Redis outage does not open the door to guessing.
    settings.AXES_FAILURE_LIMIT = 2
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0",
                                   "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    client = Client(REMOTE_ADDR="10.1.1.1")
    assert [_login(client, "x") for _ in range(3)] == [200, 429, 429]


def test_guessing_one_username_from_many_addresses_is_capped_across_them(alice, settings):
    # The defaults: 5 per username and address, 20 per username from any address.
    assert (settings.AXES_FAILURE_LIMIT, settings.LOGIN_FAILURES_PER_USERNAME) == (5, 20)
    guessers = [Client(REMOTE_ADDR=f"198.51.100.{i}") for i in range(20)]
    codes = [_login(guessers[i % 20], f"guess{i}") for i in range(100)]
    assert codes.count(200) == 19 and codes[19:] == [429] * 81  # the 20th wrong password locks the username
    # Locked everywhere: the right password from a fresh address does not get in either.
    fresh = Client(REMOTE_ADDR="203.0.113.7")
    assert _login(fresh, "alice-pw") == 429 and "_auth_user_id" not in fresh.session


def test_another_username_is_not_locked_by_guesses_at_alice(alice, bob, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    for i in range(3):
        _login(Client(REMOTE_ADDR=f"198.51.100.{i}"), "x")
    response = Client(REMOTE_ADDR="198.51.100.1").post("/accounts/login/", {"username": "bob", "password": "bob-pw"})
    assert response.status_code == 302


def _change(client: Client, old: str) -> int:
    return client.post("/accounts/password/", {"old_password": old, "new_password1": "n3w-Passw0rd!",
                                               "new_password2": "n3w-Passw0rd!"}).status_code


def test_the_password_change_forms_old_password_is_throttled_as_a_login(alice):
    client = Client(REMOTE_ADDR="10.1.1.1")
    client.force_login(alice)
    codes = [_change(client, f"guess{i}") for i in range(12)]
    assert codes == [200] * 4 + [429] * 8
    assert _change(client, "alice-pw") == 429  # the right one learns nothing either
    alice.refresh_from_db()
    assert alice.check_password("alice-pw")
    # ...and the login form counts the same failures: locked there too.
    assert _login(Client(REMOTE_ADDR="10.1.1.1"), "alice-pw") == 429


def test_the_lockout_page_says_how_long_and_links_to_the_login_form(alice, settings):
    settings.AXES_FAILURE_LIMIT = 1
    settings.AXES_COOLOFF_TIME = 0.5  # hours
    response = Client(REMOTE_ADDR="10.1.1.1").post("/accounts/login/", {"username": "alice", "password": "x"})
    body = response.content.decode()
    assert response.status_code == 429 and "locked for 30 minutes" in body and 'href="/accounts/login/"' in body
