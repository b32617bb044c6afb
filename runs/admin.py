"""Django's admin for staff: inspect a stuck parse (log file status, attempts, claim), members, tokens.

Tokens show their prefix and dates only; the hash is read-only and the secret is never stored.
"""

from __future__ import annotations

from django.contrib import admin

from runs.models import Annotation, AnnotationEdit, ApiToken, Invitation, LogFile, Membership, Project, Run


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "user__email", "project__name"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["project", "invitee", "role", "invited_by", "created_at"]
    list_filter = ["role", "project"]
    search_fields = ["invitee", "project__name"]


_LOGFILE_FIELDS = ("original_name", "status", "attempts", "claimed_at", "claim_token", "parsed_at", "error")


class LogFileInline(admin.TabularInline):
    model = LogFile
    extra = 0
    fields = _LOGFILE_FIELDS
    readonly_fields = _LOGFILE_FIELDS
    show_change_link = True


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "project", "status", "created_by", "created_at"]
    list_filter = ["status", "project", "engine"]
    search_fields = ["name"]
    raw_id_fields = ["created_by"]
    readonly_fields = ["parsed", "meta"]
    inlines = [LogFileInline]


@admin.register(LogFile)
class LogFileAdmin(admin.ModelAdmin):
    list_display = ["id", "original_name", "run", "status", "attempts", "claimed_at", "claim_token", "updated_at"]
    list_filter = ["status", "registered"]
    search_fields = ["original_name", "sha256", "claim_token"]
    raw_id_fields = ["run"]
    readonly_fields = ["sha256", "settings", "warnings", "formats", "created_at", "updated_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "user__username"]
    readonly_fields = ["prefix", "token_hash", "created_at", "last_used_at"]


class AnnotationEditInline(admin.TabularInline):
    model = AnnotationEdit
    extra = 0
    readonly_fields = ["body", "edited_by", "edited_at"]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "kind", "author", "created_at", "edited_at", "deleted_at"]
    list_filter = ["kind"]
    raw_id_fields = ["run", "parent"]
    inlines = [AnnotationEditInline]
