"""API tokens: `rlt_<prefix>_<secret>`; only a SHA-256 of the whole token is stored (RELIABILITY A5)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from runs.models import ApiToken


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user: AbstractBaseUser, name: str = "", expires_at: datetime | None = None) -> str:
    """Create a token for the user and return it; it is shown once and never stored in clear."""
    return issue_token(user, name, expires_at)[1]


def issue_token(user: AbstractBaseUser, name: str = "", expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """The new token's row and its secret (`rlt_<prefix>_...`: the prefix names it in lists)."""
    # An expiry already past makes a token refused from the start; allowed rather than a special case.
    prefix = secrets.token_hex(6)
    token = f"rlt_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken.objects.create(user=user, name=name[:100], prefix=prefix, token_hash=_hash(token),
                                  expires_at=expires_at)
    return row, token


def user_tokens(user: AbstractBaseUser) -> list[ApiToken]:
    """The user's tokens that still work or were revoked, newest first."""
    return list(ApiToken.objects.filter(user=user).order_by("-created_at", "-id"))


def revoke_token(user: AbstractBaseUser, token_id: int) -> ApiToken:
    """Revoke one of the user's own tokens: refused (401) from the next request on.
    Someone else's token id is not found, as if it did not exist."""
    row = ApiToken.objects.filter(id=token_id, user=user).first()
    if row is None:
        raise Http404(f"no token {token_id} of yours")
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
    return row


def user_for_token(token: str) -> AbstractBaseUser | None:
    """The active user a token belongs to, or None (unknown, revoked, expired or malformed)."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "rlt":
        return None
    now = timezone.now()
    row = (
        ApiToken.objects.filter(prefix=parts[1], revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .select_related("user")
        .first()
    )
    if row is None or not hmac.compare_digest(row.token_hash, _hash(token)) or not row.user.is_active:
        return None
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(id=row.id).update(last_used_at=now)
    return row.user
