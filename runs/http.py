"""What pages and the API share at the HTTP level: the request types behind `login_required` and
ninja's auth, and the one CSV writer every download goes through.

django-stubs types `request.user` as `User | AnonymousUser`; behind `login_required` it is always
a `User`, and the services that record who did something take a `User`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse

# A text cell a spreadsheet would run as a formula starts with one of these, perhaps after spaces
# (OWASP "CSV injection"; Excel and LibreOffice also read a leading tab or carriage return).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(cell: object) -> object:
    """A text cell that would run as a formula (`=HYPERLINK(...)` as a run name) gets a leading
    apostrophe, which spreadsheets show as text; numbers, negative ones too, stay numbers."""
    if isinstance(cell, str) and cell.lstrip(" ").startswith(FORMULA_STARTS):
        return f"'{cell}"
    return cell


def csv_download(filename: str, rows: Iterable[Sequence[object]]) -> HttpResponse:
    """Every CSV export of runlens (compare, sweep): an attachment, each cell through csv_cell."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    csv.writer(response).writerows([csv_cell(c) for c in row] for row in rows)
    return response


class AuthenticatedRequest(HttpRequest):
    user: User  # narrower than HttpRequest's User | AnonymousUser: login_required sees to it


class ApiRequest(HttpRequest):
    auth: User  # ninja sets `request.auth` to what the API's auth returned: the authenticated user
