"""Annotations as a discussion: replies, window anchors, edits with their history, deletion."""

import pytest

from runs import services
from runs.models import Annotation, AnnotationEdit
from runs.services import ServiceError

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(alice, bob, upload_run):
    return upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)


def test_reply_and_anchor_are_stored(run, alice, bob):
    note = services.add_annotation(alice, run, "note", "verify jumps", window_from=9, window_to=4, phase="verify")
    reply = services.add_annotation(bob, run, "note", "agreed", parent=note.id)
    assert (note.window_from, note.window_to, note.phase) == (4, 9, "verify")  # put in order
    assert list(note.replies.all()) == [reply]


def test_reply_to_a_note_of_another_run_is_refused(run, alice, upload_run):
    other = upload_run(alice, "spec_baseline_nospec.log", parse=False)
    elsewhere = services.add_annotation(alice, other, "note", "x")
    with pytest.raises(ServiceError, match="not on run"):
        services.add_annotation(alice, run, "note", "y", parent=elsewhere.id)


def test_edit_keeps_the_old_text_in_history(run, alice):
    note = services.add_annotation(alice, run, "note", "first")
    services.edit_annotation(alice, note, "second")
    services.edit_annotation(alice, note, "third")
    note.refresh_from_db()
    assert note.body == "third" and note.edited_at is not None
    assert list(AnnotationEdit.objects.filter(annotation=note).values_list("body", flat=True)) == ["first", "second"]


def test_only_author_or_admin_may_edit(run, alice, bob):
    note = services.add_annotation(bob, run, "note", "bob's")
    with pytest.raises(ServiceError):
        services.edit_annotation(alice.__class__.objects.create_user("x"), note, "no")
    services.edit_annotation(alice, note, "admin fixed a typo")  # alice is the project admin
    alices = services.add_annotation(alice, run, "note", "alice's")
    with pytest.raises(ServiceError, match="author or a project admin"):
        services.delete_annotation(bob, alices)


def test_deleting_a_note_with_replies_keeps_its_place(run, alice, bob):
    note = services.add_annotation(alice, run, "note", "question")
    services.add_annotation(bob, run, "note", "answer", parent=note.id)
    services.delete_annotation(alice, note)
    note.refresh_from_db()
    assert note.deleted_at is not None and note.body == "" and note.replies.count() == 1
    lone = services.add_annotation(alice, run, "note", "lonely")
    services.delete_annotation(alice, lone)
    assert not Annotation.objects.filter(id=lone.id).exists()


def test_viewer_may_note_but_not_set_steps(run, vic):
    services.add_annotation(vic, run, "note", "looks fine")
    with pytest.raises(Exception, match="editor role"):
        services.add_annotation(vic, run, "steps", "3")
