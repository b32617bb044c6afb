"""What the runs pages read from a request: their forms (fields, limits, messages) and their query
strings, turned into typed values here so that runs/queries.py takes ids, ranges and filters,
never a QueryDict. Lenient where the API is strict: a page drops a value it cannot read."""

from __future__ import annotations

from typing import Any, TypeGuard

from django import forms
from django.http import QueryDict
from pydantic import ValidationError

from runs.models import Annotation, Membership
from runs.schemas import RunFilters
from runs.series import zoom_span


def is_int(text: str | None) -> TypeGuard[str]:
    """ASCII digits only, and a size the database takes (`"²".isdigit()` is True; int() refuses it)."""
    return text is not None and text.isascii() and text.isdecimal() and len(text) <= 18


def optional_id(raw: str | None) -> int | None:
    """An id from a query string (`?baseline=7`), or None when absent or not one."""
    return int(raw) if is_int(raw) else None


def positive_float(raw: str | None) -> float | None:
    """A positive number from a query string, or None (a form field left empty or mistyped)."""
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < 1e7 else None


def zoom_from_query(query: QueryDict) -> tuple[int, int] | None:
    """`?from=&to=` (windows, inclusive) of a zoomed chart, capped at series.ZOOM_MAX_WINDOWS; None
    when absent or not a range of positive integers."""
    low, high = query.get("from"), query.get("to")
    if not (is_int(low) and is_int(high)) or int(high) < int(low) or int(high) < 1:
        return None
    return zoom_span(int(low), int(high))


def parse_ids(raw: str) -> list[int]:
    """Run ids from `3,7,9`, in order, once each (not cut: callers say when there are too many)."""
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if is_int(part) and int(part) not in ids:
            ids.append(int(part))
    return ids


def run_ids(query: QueryDict) -> list[int]:
    """`?runs=3,7,9` (a shareable URL) and `?run=3&run=7` (the run list's checkboxes without
    JavaScript), in order, once each."""
    return parse_ids(",".join([query.get("runs", ""), *query.getlist("run")]))


def filters_from_query(query: QueryDict) -> RunFilters:
    """The run list page's filters from its query string, with the API's schema. A page is
    lenient where the API is strict: a field that does not validate is left out, not an error."""
    data: dict[str, Any] = {k: v for k, v in query.items() if k in RunFilters.model_fields and v != ""}
    while True:
        try:
            return RunFilters(**data)
        except ValidationError as e:
            bad = {str(err["loc"][0]) for err in e.errors() if err.get("loc")}
            if not bad & set(data):
                return RunFilters()
            for key in bad:
                data.pop(key, None)


class AnnotationForm(forms.Form):
    kind = forms.ChoiceField(choices=Annotation.Kind.choices, initial=Annotation.Kind.NOTE)
    body = forms.CharField(max_length=100_000, strip=False, error_messages={"required": "write something to add"},
                           widget=forms.Textarea(attrs={"rows": 3, "placeholder": "markdown: **bold**, `code`, [links](https://…)"}))
    parent = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    window_from = forms.IntegerField(required=False, min_value=0, max_value=10_000_000, label="from window")
    window_to = forms.IntegerField(required=False, min_value=0, max_value=10_000_000, label="to window")
    phase = forms.CharField(required=False, max_length=100, label="phase or figure")

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if "\x00" in body:  # PostgreSQL refuses NUL in text
            raise forms.ValidationError("the text contains a NUL character")
        return body


class AnnotationEditForm(forms.Form):
    body = forms.CharField(max_length=100_000, strip=False, error_messages={"required": "write something to keep"},
                           widget=forms.Textarea(attrs={"rows": 3}))

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if "\x00" in body:
            raise forms.ValidationError("the text contains a NUL character")
        return body


class MemberForm(forms.Form):
    user = forms.CharField(max_length=254, label="username or e-mail")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="name", help_text="what uses it, e.g. github-actions")
    expires_days = forms.IntegerField(required=False, min_value=1, max_value=3650, label="expires in (days)",
                                      help_text="empty: never")
