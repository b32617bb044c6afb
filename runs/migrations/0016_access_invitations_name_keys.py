# Access: invitations (nobody joins a project without accepting), one project name per look
# (Project.name_key, runs/names.py), and token expiries held to years Python can read back.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from runs.names import name_key


def fill_name_keys(apps, schema_editor):
    """Each project's key; a project whose name looks like an earlier one's keeps its name and gets
    a key of its own (`key~id`), so the upgrade refuses nothing that exists and only new look-alikes."""
    Project = apps.get_model("runs", "Project")
    seen = set()
    for project in Project.objects.order_by("id"):
        key = name_key(project.name)
        project.name_key = key if key not in seen else f"{key}~{project.id}"
        seen.add(key)
        project.save(update_fields=["name_key"])


def clamp_token_expiries(apps, schema_editor):
    """An expiry past year 9998 was stored by PostgreSQL yet breaks every read of its row (Python's
    datetime ends at 9999-12-31, and the value is read in UTC, then shown in TIME_ZONE)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("UPDATE runs_apitoken SET expires_at = '9999-01-01T00:00:00Z' "
                              "WHERE expires_at > '9999-01-01T00:00:00Z'")


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0015_digest_parts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="name_key",
            field=models.TextField(default="", editable=False),
            preserve_default=False,
        ),
        migrations.RunPython(fill_name_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="project",
            name="name_key",
            field=models.TextField(editable=False, unique=True),
        ),
        migrations.CreateModel(
            name="Invitation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("invitee", models.CharField(max_length=254)),
                ("role", models.CharField(choices=[("viewer", "Viewer"), ("editor", "Editor"), ("admin", "Admin")],
                                          default="viewer", max_length=10)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("invited_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL,
                                                 related_name="+", to=settings.AUTH_USER_MODEL)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="invitations",
                                              to="runs.project")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("project", "invitee"),
                                                        name="one_invitation_per_invitee")],
            },
        ),
        migrations.RunPython(clamp_token_expiries, migrations.RunPython.noop),
    ]
