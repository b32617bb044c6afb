from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0010_run_digests"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="series",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]
