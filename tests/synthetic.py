"""Large synthetic runs for the bounded-page tests (and the series benchmark): rows written
straight into the stored columns (runs/columns.py), as a parse of a
`windows`-window log would leave them; the caller computes the stored series (as refresh_run does).

Window w of log file f: phase rows `Draft` (line 4w) and `Target verify` (line 4w+1), metric rows
throughput_tok_s (line 4w+2) and tokens_per_cycle (line 4w+3), all from `eagle_profile`. Values
follow a deterministic ripple with a spike at window `spike` (so thinning must keep it).
"""

from __future__ import annotations

from statistics import median

import polars as pl

from ingest.parsers.records import METRIC_SCHEMA, PHASE_SCHEMA
from runs import columns
from runs.models import LogFile, Run, Status

SOURCE = "eagle_profile"


def values(w: int, spike: int) -> tuple[float, float, float, float]:
    """(draft ms, verify ms, tok/s, tokens per cycle) of window w."""
    ripple = ((w * 7919) % 1000) / 1000
    draft = 1.5 + 0.2 * ripple
    verify = 4.0 + 0.1 * ripple + (6.0 if w == spike else 0.0)
    return draft, verify, 450.0 + 10 * ripple - (200.0 if w == spike else 0.0), 2.5 + 0.1 * ripple


def make_run(project, user, windows: int, name: str = "big", spike: int | None = None) -> Run:
    """A ready run of one log file with `windows` windows, its summary figures the medians (no
    stored series yet: `runs.series.fresh_series` makes them)."""
    spike = windows // 2 if spike is None else spike
    run = Run.objects.create(project=project, name=name, created_by=user, status=Status.READY)
    lf = LogFile.objects.create(run=run, original_name=f"{name}.log", path=f"{name}.log", sha256="0" * 64,
                                status=Status.READY, lines=4 * windows + 4)
    ws = range(1, windows + 1)
    columns.store(lf, pl.DataFrame(
        [(phase, values(w, spike)[k], None, w, 4 * w + k, SOURCE, "") for w in ws
         for k, phase in ((0, "Draft"), (1, "Target verify"))], schema=PHASE_SCHEMA, orient="row"), pl.DataFrame(
        [(metric, values(w, spike)[k], w, 4 * w + k, SOURCE, "", "") for w in ws
         for k, metric in ((2, "throughput_tok_s"), (3, "tokens_per_cycle"))], schema=METRIC_SCHEMA, orient="row"))
    draft, verify, tput, tpc = (median(values(w, spike)[k] for w in ws) for k in range(4))
    run.throughput_tok_s, run.tokens_per_cycle, run.verify_ms = tput, tpc, verify
    run.cycle_ms, run.windows = draft + verify, windows
    run.parsed = {"summary": {"throughput_tok_s": tput, "tokens_per_cycle": tpc, "cycle_ms": draft + verify,
                              "windows": windows},
                  "phases": [{"name": "Draft", "ms": draft, "pct": None}, {"name": "Target verify", "ms": verify,
                                                                            "pct": None}]}
    run.save()
    return run


def stored_rows(kind: str, run: Run | None = None, run_id: int | None = None, name: str | None = None) -> pl.DataFrame:
    """The stored rows of one kind ("phase" or "metric") of a run (of every run without one) as
    one frame, of one name if given, in the run's order (logfile, window, i)."""
    return columns.frame(run.id if run is not None else run_id, kind, names=None if name is None else [name])
