"""A figure across runs over time (DESIGN, "Analysis": trend.py). Pure: `TrendPoint`s in, dicts out.

Points come in upload order; runs of one commit stay together, in the order their commit first
appeared (CI uploads each commit once it is built, so this is commit order on a branch). Each
point is judged against the point before it by the comparison's one rule (`compare.judge`: beyond
the noise of either run and at least 1%), so a flag on the trend means what a CI gate would have said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from runs.compare import METRICS, judge, spread
from runs.display import figure, signed

METRIC_INFO = {key: (label, unit, better) for key, label, unit, better in METRICS}


@dataclass(frozen=True)
class TrendPoint:
    id: int
    name: str
    created_at: datetime
    value: float | None
    noise: float | None = None  # the parse summary's spread of the figure, when it kept one
    windows: tuple[float, ...] = ()  # else the per-window values the noise is computed from
    commit: str = ""
    branch: str = ""
    nccl_status: str = "unknown"
    annotations: tuple[tuple[datetime, str, str], ...] = field(default=())  # (when, kind, body)


def ordered(points: list[TrendPoint]) -> list[TrendPoint]:
    """Upload order, with every run of a commit placed where that commit first appeared."""
    by_time = sorted(points, key=lambda p: (p.created_at, p.id))
    first_seen: dict[str, int] = {}
    slots = []
    for i, p in enumerate(by_time):
        slots.append((first_seen.setdefault(p.commit, i) if p.commit else i, i))
    return [by_time[i] for _, i in sorted(slots)]


def trend(points: list[TrendPoint], metric: str) -> dict:
    """Each point with its change from the previous one, flagged when worse beyond the noise."""
    if metric not in METRIC_INFO:
        raise ValueError(f"unknown metric {metric!r}: one of {', '.join(METRIC_INFO)}")
    label, unit, better = METRIC_INFO[metric]
    rows, previous = [], None
    for p in ordered([p for p in points if p.value is not None]):
        noise = p.noise if p.noise is not None else spread(list(p.windows))
        row: dict[str, Any] = {"run_id": p.id, "name": p.name, "created_at": p.created_at.isoformat(), "value": p.value,
               "commit": p.commit, "branch": p.branch, "nccl_status": p.nccl_status, "noise": noise,
               "label": p.commit[:8] if p.commit else p.name, "delta": None, "delta_pct": None,
               "flag": None, "annotations": [{"at": at.isoformat(), "kind": kind, "body": body}
                                             for at, kind, body in p.annotations]}
        if previous is not None:
            judged = judge(p.value, previous["value"], noise, previous["noise"], better)
            row.update(delta=judged["delta"], delta_pct=judged["delta_pct"],
                       flag={"worse": "regression", "better": "improvement"}.get(judged["verdict"] or ""))
        rows.append(row)
        previous = row
    regressions = [r for r in rows if r["flag"] == "regression"]
    return {"metric": metric, "label": label, "unit": unit, "better": better, "points": rows,
            "regressions": [r["run_id"] for r in regressions], "headline": _headline(rows, label, unit, metric)}


def _headline(rows: list[dict], label: str, unit: str, metric: str) -> str:
    if not rows:
        return "No ready run with this figure matches."
    first, last = rows[0], rows[-1]
    runs = f"{len(rows)} run{'s' if len(rows) != 1 else ''}"
    text = f"{label} over {runs}: {figure(first['value'], metric)} → {figure(last['value'], metric)} {unit}"
    flagged = [r for r in rows if r["flag"] == "regression"]
    if flagged:
        worst = max(flagged, key=lambda r: abs(r["delta_pct"] or 0))
        text += (f"; {len(flagged)} regression{'s' if len(flagged) != 1 else ''} beyond the noise, the largest "
                 f"at {worst['label']} ({signed(worst['delta_pct'], 'pct')}%)")
    else:
        text += "; no regression beyond the noise"
    return text + "."
