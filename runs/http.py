"""The request of a page behind `login_required`, typed as such.

django-stubs types `request.user` as `User | AnonymousUser`; behind `login_required` it is always
a `User`, and the services that record who did something take a `User`.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedRequest(HttpRequest):
    user: User  # narrower than HttpRequest's User | AnonymousUser: login_required sees to it


class ApiRequest(HttpRequest):
    auth: User  # ninja sets `request.auth` to what the API's auth returned: the authenticated user
