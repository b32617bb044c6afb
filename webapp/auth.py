"""API tokens: `rlt_<prefix>_<secret>`; only a SHA-256 of the whole token is stored (RELIABILITY A5)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.contrib.auth.models import AbstractBaseUser, User
from django.db.models import Q
from django.utils import timezone

from runs.models import ApiToken


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user: User, name: str = "") -> str:
    """Create a token for the user and return it; it is shown once and never stored in clear."""
    prefix = secrets.token_hex(6)
    token = f"rlt_{prefix}_{secrets.token_urlsafe(32)}"
    ApiToken.objects.create(user=user, name=name, prefix=prefix, token_hash=_hash(token))
    return token


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
