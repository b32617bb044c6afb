"""Browser forms of the runs pages: the fields, their limits and their messages in one place."""

from __future__ import annotations

from django import forms

from runs.models import Annotation, Membership


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
