# A log file's digest kept in parts (runs/digest.py, issue 10): stored digests are cut into
# parts (the parts joined are the old value), then the one-value table goes.

import django.db.models.deletion
from django.db import migrations, models

PART_BYTES = 1 << 20  # runs.digest.PART_BYTES when this was written


def digests_to_parts(apps, schema_editor):
    LogFileDigest = apps.get_model("runs", "LogFileDigest")
    DigestPart = apps.get_model("runs", "DigestPart")
    for logfile_id in LogFileDigest.objects.order_by("logfile_id").values_list("logfile_id", flat=True):
        data = bytes(LogFileDigest.objects.get(logfile_id=logfile_id).data)
        DigestPart.objects.bulk_create(
            DigestPart(logfile_id=logfile_id, seq=seq, data=data[start:start + PART_BYTES])
            for seq, start in enumerate(range(0, len(data), PART_BYTES)))


def parts_to_digests(apps, schema_editor):
    LogFileDigest = apps.get_model("runs", "LogFileDigest")
    DigestPart = apps.get_model("runs", "DigestPart")
    for logfile_id in DigestPart.objects.order_by().values_list("logfile_id", flat=True).distinct():
        parts = DigestPart.objects.filter(logfile_id=logfile_id).order_by("seq").values_list("data", flat=True)
        LogFileDigest.objects.create(logfile_id=logfile_id, data=b"".join(bytes(p) for p in parts))


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0014_sample_blocks'),
    ]

    operations = [
        migrations.CreateModel(
            name='DigestPart',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.PositiveIntegerField()),
                ('data', models.BinaryField()),
                ('logfile', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='digest_parts', to='runs.logfile')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('logfile', 'seq'), name='digest_part_logfile_seq')],
            },
        ),
        migrations.RunPython(digests_to_parts, parts_to_digests),
        migrations.DeleteModel(name='LogFileDigest'),
    ]
