from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0003_register_path_permission'),
    ]

    operations = [
        migrations.AddField(
            model_name='logfile',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
