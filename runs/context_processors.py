"""What every page's header shows besides the user: how many invitations wait for them (the only
sign of one, as runlens sends no e-mail)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest

from runs import queries


def invitations(request: HttpRequest) -> dict[str, Callable[[], int]]:
    # A callable: counted only when a template reads it (the header, for a logged-in user).
    def pending() -> int:
        return queries.invitations_for(request.user).count() if request.user.is_authenticated else 0

    return {"pending_invitations": pending}
