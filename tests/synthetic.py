"""Large synthetic runs for the bounded-page tests (and the series benchmark): rows written
straight into column blocks (runs/blocks.py), as a parse of a
`windows`-window log would leave them; the caller computes the stored series (as refresh_run does).

Window w of log file f: phase rows `Draft` (line 4w) and `Target verify` (line 4w+1), metric rows
throughput_tok_s (line 4w+2) and tokens_per_cycle (line 4w+3), all from `eagle_profile`. Values
follow a deterministic ripple with a spike at window `spike` (so thinning must keep it).
"""

from __future__ import annotations

from statistics import median

import polars as pl

from ingest.parsers.records import METRIC_SCHEMA, PHASE_SCHEMA
from runs import blocks
from runs.models import LogFile, Run, SampleBlock, Status

SOURCE = "eagle_profile"


def values(w: int, spike: int) -> tuple[float, float, float, float]:
    """(draft ms, verify ms, tok/s, tokens per cycle) of window w."""
    ripple = ((w * 7919) % 1000) / 1000
    draft = 1.5 + 0.2 * ripple
    verify = 4.0 + 0.1 * ripple + (6.0 if w == spike else 0.0)
    return draft, verify, 450.0 + 10 * ripple - (200.0 if w == spike else 0.0), 2.5 + 0.1 * ripple


def _save(run: Run, lf: LogFile, block: blocks.Block) -> None:
    SampleBlock.objects.create(run=run, logfile=lf, kind=block.kind, name=block.name, source=block.source,
                               seq=block.seq, rows=block.rows, window_lo=block.window_lo,
                               window_hi=block.window_hi, data=block.data)


def make_run(project, user, windows: int, name: str = "big", spike: int | None = None) -> Run:
    """A ready run of one log file with `windows` windows, its summary figures the medians (no
    stored series yet: `runs.series.fresh_series` makes them)."""
    spike = windows // 2 if spike is None else spike
    run = Run.objects.create(project=project, name=name, created_by=user, status=Status.READY)
    lf = LogFile.objects.create(run=run, original_name=f"{name}.log", path=f"{name}.log", sha256="0" * 64,
                                status=Status.READY, lines=4 * windows + 4)
    ws = range(1, windows + 1)
    writer = blocks.BlockWriter(lambda block: _save(run, lf, block))
    writer.add(blocks.PHASE, pl.DataFrame(
        [(phase, values(w, spike)[k], None, w, 4 * w + k, SOURCE, "") for w in ws
         for k, phase in ((0, "Draft"), (1, "Target verify"))], schema=PHASE_SCHEMA, orient="row"))
    writer.add(blocks.METRIC, pl.DataFrame(
        [(metric, values(w, spike)[k], w, 4 * w + k, SOURCE, "", "") for w in ws
         for k, metric in ((2, "throughput_tok_s"), (3, "tokens_per_cycle"))], schema=METRIC_SCHEMA, orient="row"))
    writer.finish()
    draft, verify, tput, tpc = (median(values(w, spike)[k] for w in ws) for k in range(4))
    run.throughput_tok_s, run.tokens_per_cycle, run.verify_ms = tput, tpc, verify
    run.cycle_ms, run.windows = draft + verify, windows
    run.parsed = {"summary": {"throughput_tok_s": tput, "tokens_per_cycle": tpc, "cycle_ms": draft + verify,
                              "windows": windows},
                  "phases": [{"name": "Draft", "ms": draft, "pct": None}, {"name": "Target verify", "ms": verify,
                                                                            "pct": None}]}
    run.save()
    return run


def stored_rows(kind: str, **filters) -> pl.DataFrame:
    """The stored rows of one kind ("phase" or "metric") as one frame, from the blocks matching
    `filters` (run=, run_id=, name=, ...), in the run's order (logfile, window, i)."""
    found = SampleBlock.objects.filter(kind=kind, **filters).order_by("logfile_id", "seq")
    return blocks.frame(kind, found.values_list("logfile_id", "name", "source", "data"))
