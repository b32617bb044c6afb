# A nccl-tests line's two sides (out-of-place, in-place) in one CollectiveResult row, not a row
# each: half the rows to COPY (runs/models.py). Rows stored before are paired here in SQL, as the
# worker pairs them (ingest.services.paired_sides): an in-place row with the out-of-place row of
# the same line, process and collective.

from django.db import migrations, models

# What a line's two sides share (ingest.services.LINE_FIELDS, with the run and the log file).
SHARED = ("run_id", "logfile_id", "line", "process", "op", "size_bytes", "count", "dtype", "redop", "root")
SIDE = (("time_us", "ip_time_us"), ("algbw_gbs", "ip_algbw_gbs"), ("busbw_gbs", "ip_busbw_gbs"), ("wrong", "ip_wrong"))
OUT_OF_PLACE, IN_PLACE, BOTH = 1, 2, 3


def _table(apps, schema_editor) -> str:
    return schema_editor.connection.ops.quote_name(apps.get_model("runs", "CollectiveResult")._meta.db_table)


def pair_sides(apps, schema_editor):
    t = _table(apps, schema_editor)
    run = schema_editor.execute
    # An in-place row's values into the in-place columns.
    run(f"UPDATE {t} SET sides = {IN_PLACE}, "
        + ", ".join(f"{ip} = {out}" for out, ip in SIDE) + ", " + ", ".join(f"{out} = NULL" for out, _ in SIDE)
        + " WHERE in_place")
    # The out-of-place row of its line takes them (equal columns only: a null line or log file pairs nothing).
    match = " AND ".join(f"p.{f} = {t}.{f}" for f in SHARED)
    taken = f"SELECT {{}} FROM {t} p WHERE p.sides = {IN_PLACE} AND {match} ORDER BY p.id LIMIT 1"
    run(f"UPDATE {t} SET sides = {BOTH}, " + ", ".join(f"{ip} = ({taken.format('p.' + ip)})" for _, ip in SIDE)
        + f" WHERE sides = {OUT_OF_PLACE} AND EXISTS ({taken.format('1')})")
    # The in-place rows taken (the first of their line's, as taken above) go.
    mine = " AND ".join(f"o.{f} = {t}.{f}" for f in SHARED)
    run(f"DELETE FROM {t} WHERE sides = {IN_PLACE} "
        f"AND EXISTS (SELECT 1 FROM {t} o WHERE o.sides = {BOTH} AND {mine}) "
        f"AND id = (SELECT MIN(p.id) FROM {t} p WHERE p.sides = {IN_PLACE} AND {match})")


def split_sides(apps, schema_editor):
    t = _table(apps, schema_editor)
    run = schema_editor.execute
    kept = ", ".join((*SHARED, *(ip for _, ip in SIDE)))
    run(f"INSERT INTO {t} ({kept}, sides, in_place) SELECT {kept}, {IN_PLACE}, FALSE FROM {t} WHERE sides = {BOTH}")
    run(f"UPDATE {t} SET sides = {OUT_OF_PLACE} WHERE sides = {BOTH}")
    run(f"UPDATE {t} SET in_place = TRUE, " + ", ".join(f"{out} = {ip}" for out, ip in SIDE)
        + f" WHERE sides = {IN_PLACE}")


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0022_collective_islands'),
    ]

    operations = [
        migrations.AddField(
            model_name='collectiveresult',
            name='ip_time_us',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='collectiveresult',
            name='ip_algbw_gbs',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='collectiveresult',
            name='ip_busbw_gbs',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='collectiveresult',
            name='ip_wrong',
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name='collectiveresult',
            name='sides',
            field=models.PositiveSmallIntegerField(default=1),
            preserve_default=False,
        ),
        # A default for the way back (the column comes back on rows that exist).
        migrations.AlterField(
            model_name='collectiveresult',
            name='in_place',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(pair_sides, split_sides),
        migrations.RemoveField(
            model_name='collectiveresult',
            name='in_place',
        ),
    ]
