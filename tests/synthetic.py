"""Large synthetic runs for the bounded-page tests (and the series benchmark): rows written
straight into the tables (COPY on PostgreSQL, bulk_create elsewhere), as a parse of a
`windows`-window log would leave them; the caller computes the stored series (as refresh_run does).

Window w of log file f: phase rows `Draft` (line 4w) and `Target verify` (line 4w+1), metric rows
throughput_tok_s (line 4w+2) and tokens_per_cycle (line 4w+3), all from `eagle_profile`. Values
follow a deterministic ripple with a spike at window `spike` (so thinning must keep it).
"""

from __future__ import annotations

from statistics import median

from django.db import connection

from runs.models import LogFile, MetricSample, PhaseSample, Run, Status

SOURCE = "eagle_profile"


def values(w: int, spike: int) -> tuple[float, float, float, float]:
    """(draft ms, verify ms, tok/s, tokens per cycle) of window w."""
    ripple = ((w * 7919) % 1000) / 1000
    draft = 1.5 + 0.2 * ripple
    verify = 4.0 + 0.1 * ripple + (6.0 if w == spike else 0.0)
    return draft, verify, 450.0 + 10 * ripple - (200.0 if w == spike else 0.0), 2.5 + 0.1 * ripple


def _copy(model, columns: list[str], rows) -> None:
    if connection.vendor == "postgresql":
        table = model._meta.db_table
        names = ", ".join(connection.ops.quote_name(c) for c in columns)
        with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    batch = []
    for row in rows:
        batch.append(model(**dict(zip(columns, row, strict=True))))
        if len(batch) == 5000:
            model.objects.bulk_create(batch)
            batch = []
    model.objects.bulk_create(batch)


def make_run(project, user, windows: int, name: str = "big", spike: int | None = None) -> Run:
    """A ready run of one log file with `windows` windows, its summary figures the medians (no
    stored series yet: `runs.series.fresh_series` makes them)."""
    spike = windows // 2 if spike is None else spike
    run = Run.objects.create(project=project, name=name, created_by=user, status=Status.READY)
    lf = LogFile.objects.create(run=run, original_name=f"{name}.log", path=f"{name}.log", sha256="0" * 64,
                                status=Status.READY, lines=4 * windows + 4)
    ws = range(1, windows + 1)
    _copy(PhaseSample, ["run_id", "logfile_id", "line", "process", "name", "window", "ms", "source"],
          ((run.id, lf.id, 4 * w + k, "", phase, w, values(w, spike)[k], SOURCE)
           for w in ws for k, phase in ((0, "Draft"), (1, "Target verify"))))
    _copy(MetricSample, ["run_id", "logfile_id", "line", "process", "name", "window", "value", "rank", "source"],
          ((run.id, lf.id, 4 * w + k, "", metric, w, values(w, spike)[k], "", SOURCE)
           for w in ws for k, metric in ((2, "throughput_tok_s"), (3, "tokens_per_cycle"))))
    draft, verify, tput, tpc = (median(values(w, spike)[k] for w in ws) for k in range(4))
    run.throughput_tok_s, run.tokens_per_cycle, run.verify_ms = tput, tpc, verify
    run.cycle_ms, run.windows = draft + verify, windows
    run.parsed = {"summary": {"throughput_tok_s": tput, "tokens_per_cycle": tpc, "cycle_ms": draft + verify,
                              "windows": windows},
                  "phases": [{"name": "Draft", "ms": draft, "pct": None}, {"name": "Target verify", "ms": verify,
                                                                            "pct": None}]}
    run.save()
    return run
