"""Account pages: API tokens (/settings/tokens/), password change (Django's view, its old password
counted as a login attempt: webapp/logins.py)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import PasswordChangeView
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from runs.forms import TokenForm
from runs.http import AuthenticatedRequest
from webapp import auth
from webapp.logins import ThrottledPasswordChangeForm


class PasswordChange(PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self) -> dict:
        return {**super().get_form_kwargs(), "request": self.request}


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: AuthenticatedRequest) -> HttpResponse:
    """List, create (the secret shown on this one answer only) and revoke API tokens."""
    secret = None
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_days"]
        expires = timezone.now() + timedelta(days=days) if days else None
        _, secret = auth.issue_token(request.user, form.cleaned_data["name"], expires)
        form = TokenForm()
    response = render(request, "settings/tokens.html", {
        "form": form, "secret": secret, "tokens": auth.user_tokens(request.user), "now": timezone.now(),
    }, status=422 if form.errors else 200)
    response["Cache-Control"] = "no-store"  # the secret must not stay in a cache
    return response


@login_required
@require_POST
def revoke_token(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    row = auth.revoke_token(request.user, pk)
    messages.info(request, f"token {row.name or row.prefix} revoked")
    return redirect("tokens")
