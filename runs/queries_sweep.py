"""Reads for the sweep and trend pages and their API (moves into runs/queries.py once it lands).

Each function takes the user and what they asked for, and returns the pure modules' inputs in
a fixed number of queries; pages and API call the same functions.
"""

from __future__ import annotations

from django.db.models import QuerySet

from runs.models import LogFile, Run, Status, visible_runs
from runs.sweep import CONFIG_KEYS, SweepRun

MAX_SWEEP_RUNS = 200


def sweep_runs(user, ids: list[int] | None = None, project: str = "", tag: str = "") -> QuerySet[Run]:
    """The ready runs of a sweep: the ids given, or a project's runs (with a tag, if given)."""
    runs = visible_runs(user).filter(status=Status.READY)
    if ids:
        runs = runs.filter(id__in=ids)
    elif project:
        runs = runs.filter(project__name=project)
        if tag:
            runs = runs.filter(tags__name=tag)
    else:
        return runs.none()
    return runs.order_by("steps", "id")[:MAX_SWEEP_RUNS]


def sweep_inputs(runs: QuerySet[Run] | list[Run]) -> list[SweepRun]:
    """SweepRuns for these runs, with model, TP size and GPU from their logs (two queries)."""
    runs = list(runs)
    config: dict[int, dict] = {r.id: ({"engine": r.engine} if r.engine else {}) for r in runs}
    for lf in LogFile.objects.filter(run_id__in=list(config), status=Status.READY).order_by("id").values(
        "run_id", "settings"
    ):
        settings = lf["settings"] or {}
        for key in CONFIG_KEYS:
            source = "nccl_tests.gpu" if key == "gpu" and "gpu" not in settings else key
            if source in settings:
                config[lf["run_id"]].setdefault(key, settings[source]["value"])
    out = []
    for r in runs:
        nccl = (r.parsed or {}).get("nccl") or {}
        out.append(SweepRun(
            id=r.id, name=r.name, steps=r.steps, throughput_tok_s=r.throughput_tok_s,
            tokens_per_cycle=r.tokens_per_cycle, cycle_ms=r.cycle_ms, verify_ms=r.verify_ms,
            config=config[r.id], nccl_effective=nccl.get("effective") or {}, nccl_status=r.nccl_status or "unknown",
        ))
    return out
