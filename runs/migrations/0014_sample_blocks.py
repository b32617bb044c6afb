# Phase and metric rows become per-file column blocks (runs/blocks.py, issue 10).
# Stored rows are converted, one log file at a time, before their tables go.

import io

import django.db.models.deletion
from django.db import migrations, models

BLOCK_ROWS = 65_536  # runs.blocks.BLOCK_ROWS when this was written


def _encode(frame) -> bytes:
    out = io.BytesIO()
    frame.write_ipc(out, compression="zstd")
    return out.getvalue()


def rows_to_blocks(apps, schema_editor):
    """Each file's rows, in id order (what `i` stands for), cut per (name, source) into blocks.
    The block format is written out here, not imported: a migration must not change with the code."""
    import polars as pl

    LogFile = apps.get_model("runs", "LogFile")
    SampleBlock = apps.get_model("runs", "SampleBlock")
    PhaseSample = apps.get_model("runs", "PhaseSample")
    MetricSample = apps.get_model("runs", "MetricSample")
    kinds = (
        ("phase", PhaseSample, ("window", "line", "process", "ms", "pct"),
         {"window": pl.Int64, "line": pl.Int64, "process": pl.String, "ms": pl.Float64, "pct": pl.Float64}),
        ("metric", MetricSample, ("window", "line", "process", "value", "rank"),
         {"window": pl.Int64, "line": pl.Int64, "process": pl.String, "value": pl.Float64, "rank": pl.String}),
    )
    files = set(PhaseSample.objects.values_list("logfile_id", flat=True).distinct()) | set(
        MetricSample.objects.values_list("logfile_id", flat=True).distinct())
    for lf in LogFile.objects.filter(id__in=files - {None}).order_by("id"):
        seq = 0
        for kind, model, fields, schema in kinds:
            rows = list(model.objects.filter(logfile_id=lf.id).order_by("id").values_list("name", "source", *fields))
            if not rows:
                continue
            frame = pl.DataFrame(rows, schema={"name": pl.String, "source": pl.String, **schema}, orient="row")
            del rows
            frame = frame.with_columns(i=pl.int_range(0, frame.height, dtype=pl.Int64),
                                       line=pl.col("line").fill_null(0))
            blocks = []
            for (name, source), part in frame.group_by(["name", "source"], maintain_order=True):
                part = part.select("i", *fields)
                for start in range(0, part.height, BLOCK_ROWS):
                    block = part.slice(start, BLOCK_ROWS)
                    blocks.append(SampleBlock(
                        run_id=lf.run_id, logfile_id=lf.id, kind=kind, name=name, source=source, seq=seq,
                        rows=block.height, window_lo=block["window"].min(), window_hi=block["window"].max(),
                        data=_encode(block)))
                    seq += 1
            SampleBlock.objects.bulk_create(blocks)


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0013_sample_bulk_constraints'),
    ]

    operations = [
        migrations.CreateModel(
            name='SampleBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('phase', 'Phase'), ('metric', 'Metric')], max_length=6)),
                ('name', models.CharField(max_length=100)),
                ('source', models.CharField(max_length=32)),
                ('seq', models.PositiveIntegerField()),
                ('rows', models.PositiveIntegerField()),
                ('window_lo', models.PositiveIntegerField()),
                ('window_hi', models.PositiveIntegerField()),
                ('data', models.BinaryField()),
                ('logfile', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='blocks', to='runs.logfile')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
            ],
            options={
                'indexes': [models.Index(fields=['run', 'kind', 'name'], name='block_run_kind_name')],
                'constraints': [models.UniqueConstraint(fields=('logfile', 'seq'), name='block_logfile_seq')],
            },
        ),
        migrations.RunPython(rows_to_blocks, migrations.RunPython.noop),
        migrations.DeleteModel(name='MetricSample'),
        migrations.DeleteModel(name='PhaseSample'),
    ]
