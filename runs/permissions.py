"""Who may do what in a project: one ladder of roles, checked by one function.

viewer: read and annotate. editor: also upload, tag, set steps/NCCL, delete own runs, re-parse.
admin: also members and roles, delete any run, project settings. A superuser is admin everywhere.
A project a user is not in does not exist for them (404 before any role check, RELIABILITY A2).
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied

from runs.models import Membership, Project

Role = Membership.Role
RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}
# What each role is needed for, in the words of the refusal.
NEEDED_FOR = {Role.VIEWER: "reading", Role.EDITOR: "this change", Role.ADMIN: "managing the project"}


def role_in(user: User | AnonymousUser, project: Project | int) -> str | None:
    """The user's role in the project (admin for superusers), or None if they are not in it."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    project_id = project if isinstance(project, int) else project.pk
    return Membership.objects.filter(project_id=project_id, user=user).values_list("role", flat=True).first()


def has_role(user: User | AnonymousUser, project: Project | int, needed: str) -> bool:
    role = role_in(user, project)
    return role is not None and RANK[Role(role)] >= RANK[Role(needed)]


class RoleRequired(PermissionDenied):
    """403 on pages (Django's handler) and in the API (code `role_required`, webapp/api.py)."""


def require_role(user: User | AnonymousUser, project: Project | int, needed: str) -> None:
    """Raise RoleRequired (403) unless the user has at least the `needed` role in the project."""
    role = role_in(user, project)
    if role is None or RANK[Role(role)] < RANK[Role(needed)]:
        raise RoleRequired(f"{NEEDED_FOR[Role(needed)]} needs the {needed} role in this project"
                           f" (you are {role or 'not a member'})")
