"""Password guessing: the login lockout (django-axes) with a cap per username across addresses,
the same count for the password-change form's old password, and the lockout page.

django-axes counts wrong passwords per username and address (RUNLENS_LOGIN_FAILURES, 5): a guesser
cannot lock a user out of their own address. Alone, that lets a guesser with many addresses go on
(20 addresses x 4 guesses = 80 tries, then the right one logged in). So a username also has a cap
across all addresses (RUNLENS_LOGIN_FAILURES_PER_USERNAME, 20 within the cool-off): past it the
username is locked everywhere for RUNLENS_LOGIN_COOLOFF_MINUTES, its owner included. That is the
price (a determined guesser can keep one account locked, 15 minutes at a time); unlimited guessing
is the worse one, and an admin unlocks at once (`manage.py axes_reset_username NAME`).
"""

from __future__ import annotations

from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt
from django import forms
from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LoginLimits(AxesDatabaseHandler):
    """django-axes' database handler (AXES_HANDLER), plus the cap per username across addresses."""

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        failures = super().get_failures(request, credentials)
        username = get_client_username(request, credentials)
        if username is None:
            return failures
        counts = AccessAttempt.objects.filter(username=username, attempt_time__gte=get_cool_off_threshold(request))
        across = sum(counts.values_list("failures_since_start", flat=True))
        if across >= settings.LOGIN_FAILURES_PER_USERNAME:
            # Reads as the per-address limit reached: axes then locks as it does for one address.
            return max(failures, get_failure_limit(request, credentials))
        return failures


def cooloff_minutes() -> int:
    return round(settings.AXES_COOLOFF_TIME * 60)


def locked_out(request: HttpRequest, original_response: HttpResponse | None = None,
               credentials: dict | None = None) -> HttpResponse:
    """The lockout page (AXES_LOCKOUT_CALLABLE): how long it lasts, and the way back to the login form."""
    return render(request, "registration/locked_out.html", {"minutes": cooloff_minutes()},
                  status=getattr(settings, "AXES_HTTP_RESPONSE_CODE", 429))


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """The old password is checked through authenticate(), so a wrong one counts as a failed login
    (django-axes): the form is no longer an unlimited oracle for someone holding a session."""

    def __init__(self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        old_password = self.cleaned_data["old_password"]
        if authenticate(self.request, username=self.user.get_username(), password=old_password) != self.user:
            raise forms.ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password
