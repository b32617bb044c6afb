from django.db import migrations, models


def mark_person_set(apps, schema_editor):
    # Before this field, a person's step count was told apart by its source text.
    apps.get_model("runs", "Run").objects.filter(steps_source__startswith="set by").update(steps_by_person=True)


class Migration(migrations.Migration):
    dependencies = [("runs", "0003_register_path_permission")]

    operations = [
        migrations.AddField(model_name="run", name="steps_by_person", field=models.BooleanField(default=False)),
        migrations.RunPython(mark_person_set, migrations.RunPython.noop),
    ]
