from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0004_run_steps_by_person'),
    ]

    operations = [
        migrations.AddField(
            model_name='logfile',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
