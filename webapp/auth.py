"""API tokens: `rlt_<prefix>_<secret>`; only a SHA-256 of the whole token is stored (RELIABILITY A5)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser, User
from django.core.cache import cache
from django.db.models import Q
from django.http import Http404, HttpRequest
from django.utils import timezone
from ninja.throttling import BaseThrottle

from runs.models import ApiToken

log = logging.getLogger(__name__)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user: User, name: str = "", expires_at: datetime | None = None) -> str:
    """Create a token for the user and return it; it is shown once and never stored in clear."""
    return issue_token(user, name, expires_at)[1]


def issue_token(user: User, name: str = "", expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """The new token's row and its secret (`rlt_<prefix>_...`: the prefix names it in lists)."""
    # An expiry already past makes a token refused from the start; allowed rather than a special case.
    prefix = secrets.token_hex(6)
    token = f"rlt_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken.objects.create(user=user, name=name[:100], prefix=prefix, token_hash=_hash(token),
                                  expires_at=expires_at)
    return row, token


def user_tokens(user: User) -> list[ApiToken]:
    """The user's tokens that still work or were revoked, newest first."""
    return list(ApiToken.objects.filter(user=user).order_by("-created_at", "-id"))


def revoke_token(user: User, token_id: int) -> ApiToken:
    """Revoke one of the user's own tokens: refused (401) from the next request on.
    Someone else's token id is not found, as if it did not exist."""
    row = ApiToken.objects.filter(id=token_id, user=user).first()
    if row is None:
        raise Http404(f"no token {token_id} of yours")
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
    return row


def by_token(request: HttpRequest) -> bool:
    """Whether the API request was authenticated by a token (BearerToken marks it), not a session."""
    return getattr(request, "auth_token", False)


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


def hit(key: str, limit: int, period: int) -> float | None:
    """Count one request against `limit` per `period` seconds (a fixed window): None if allowed,
    else the seconds until the window ends. Atomic in the shared cache (add + incr), so parallel
    requests cannot slip through; the cache (Redis) unreachable fails open: a limit is not worth an
    outage of the API."""
    now = time.time()
    window = int(now // period)
    key = f"{key}:{window}"
    try:
        cache.add(key, 0, period + 1)
        count = cache.incr(key)
    except ValueError:  # expired between add and incr: this request opens the window
        cache.add(key, 1, period + 1)
        count = 1
    except Exception as e:
        log.warning("rate limit %s not counted, the cache is unreachable: %s", key, e)
        return None
    return None if count <= limit else period * (window + 1) - now


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the address RUNLENS_TRUSTED_PROXIES proxies put in X-Forwarded-For.

    The one rule for "who is asking" of every limit: the API throttles and the login lockout
    (django-axes calls this, AXES_CLIENT_IP_CALLABLE), so a forged header dodges neither."""
    return BaseThrottle().get_ident(request) or ""
