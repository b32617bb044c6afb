"""The upload page's form. The files themselves are read by the capped upload handler
(ingest/storage.py) before the form sees them; the form names them and checks the rest."""

from __future__ import annotations

from django import forms


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (Django's documented recipe)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple) and data:
            return [single(d, initial) for d in data]
        if isinstance(data, list | tuple):
            data = None  # nothing chosen: the required check below says so
        return [single(data, initial)]


class UploadForm(forms.Form):
    # The form metaclass moves declared fields into base_fields, so this never shadows BaseForm.files
    # (the uploads) at run time; django-stubs reads it as a class attribute of that name.
    files = MultipleFileField(error_messages={"required": "choose at least one log file"})  # type: ignore[assignment]
    name = forms.CharField(max_length=200, required=False)
    project = forms.CharField(max_length=100, required=False)
    create_project = forms.BooleanField(required=False)  # make `project` if nobody has that name
    tags = forms.CharField(max_length=2000, required=False)
    notes = forms.CharField(max_length=100_000, required=False)

    def tag_list(self) -> list[str]:
        return [t for t in self.cleaned_data["tags"].split(",") if t.strip()]
