"""Browser forms of the runs pages: the fields, their limits and their messages in one place."""

from __future__ import annotations

from django import forms

from runs.models import Annotation


class AnnotationForm(forms.Form):
    kind = forms.ChoiceField(choices=Annotation.Kind.choices, initial=Annotation.Kind.NOTE)
    body = forms.CharField(max_length=100_000, strip=False, error_messages={"required": "write something to add"})

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if "\x00" in body:  # PostgreSQL refuses NUL in text
            raise forms.ValidationError("the text contains a NUL character")
        return body
