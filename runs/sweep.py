"""A step-count sweep (DESIGN, "Analysis": sweep.py). Pure: `SweepRun`s in, plain dicts out.

Runs are grouped by comparable configuration: model, TP size, GPU, engine and the NCCL settings
the workers really had (the effective fingerprint). Within a group each run is a point against
its draft step count; runs without speculation are the baselines of every group on the same
hardware.

The model fit, per group, with the arithmetic of `runs/specdecode.py`:

- acceptance: one per-position acceptance `p` for the whole group, the least-squares fit of
  `expected_tokens_per_cycle(p, k)` to the measured tokens per cycle; its band is the range
  of the per-run `implied_acceptance`;
- cost per draft step: cycle time `T(k) = T0 + c * k`, ordinary least squares over the runs;
  its band is the residuals' standard deviation;
- predicted throughput `= r * tau(p, k) / T(k)` for k = 1..8, where `r` is the median of
  measured / modelled throughput over the group's runs (engines count wall-clock time the
  profile's cycle does not, so tau / T alone overstates every point by a few percent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import NamedTuple

from runs.display import csv_value, figure, signed
from runs.nccl import LOGGING_ONLY
from runs.specdecode import expected_tokens_per_cycle, implied_acceptance

PREDICT_STEPS = range(1, 9)
CONFIG_KEYS = ("model", "tp_size", "gpu", "engine")
FINGERPRINT_IGNORED = LOGGING_ONLY
# Above this many differing variables a group is named "tuned NCCL" instead of listing them.
MAX_LISTED_SETTINGS = 2
# Grid step of the acceptance fit before it is refined by ternary search.
_GRID = 200
_REFINE_ROUNDS = 60


@dataclass(frozen=True)
class SweepRun:
    id: int
    name: str
    steps: int | None
    throughput_tok_s: float | None
    tokens_per_cycle: float | None
    cycle_ms: float | None
    verify_ms: float | None = None
    config: dict[str, object] = field(default_factory=dict)  # model, tp_size, gpu, engine
    nccl_effective: dict[str, str] = field(default_factory=dict)
    nccl_status: str = "unknown"  # ok / drift / unknown

    @property
    def speculative(self) -> bool:
        return bool(self.steps) and self.tokens_per_cycle is not None


def fingerprint(run: SweepRun) -> tuple[tuple[str, str], ...] | None:
    """The NCCL settings the workers had, as a sortable key; None when no log shows them."""
    if run.nccl_status == "unknown" and not run.nccl_effective:
        return None
    return tuple(sorted((k, str(v)) for k, v in run.nccl_effective.items() if k not in FINGERPRINT_IGNORED))


def hardware_key(run: SweepRun) -> tuple:
    return tuple(_norm(run.config.get(k)) for k in CONFIG_KEYS)


def _norm(value: object) -> str | None:
    return None if value is None or value == "" else str(value).strip().lower()


def sweep(runs: Sequence[SweepRun]) -> dict:
    """Groups with their points, best point, baseline, fit and headline; sentences across groups."""
    skipped = [{"id": r.id, "name": r.name, "reason": _skip_reason(r)} for r in runs if _skip_reason(r)]
    usable = [r for r in runs if not _skip_reason(r)]
    baselines = [r for r in usable if not r.speculative]
    by_group: dict[tuple, list[SweepRun]] = {}
    for r in usable:
        if r.speculative:
            by_group.setdefault((hardware_key(r), fingerprint(r)), []).append(r)
    labels = _labels(list(by_group))
    groups = []
    for key, members in sorted(by_group.items(), key=lambda kv: _sort_key(kv[0])):
        groups.append(_group(key, labels[key], members, baselines))
    return {"groups": groups, "headline": _overall(groups), "skipped": skipped,
            "baselines": [_point(r) for r in baselines]}


def _skip_reason(r: SweepRun) -> str | None:
    if r.throughput_tok_s is None:
        return "no throughput in its logs"
    if r.steps and r.tokens_per_cycle is None:
        return f"{r.steps} draft steps but no tokens per cycle in its logs"
    if r.tokens_per_cycle is not None and not r.steps:
        return "tokens per cycle but no draft step count (set it on the run page)"
    return None


def _sort_key(key: tuple) -> tuple:
    hw, fp = key
    return (tuple(v or "" for v in hw), fp is None, len(fp or ()), fp or ())


def _labels(keys: list[tuple]) -> dict[tuple, str]:
    """"default NCCL" for the settings every group on the hardware shares, else what differs."""
    out: dict[tuple, str] = {}
    by_hw: dict[tuple, list] = {}
    for hw, fp in keys:
        by_hw.setdefault(hw, []).append(fp)
    for hw, fps in by_hw.items():
        known = [set(fp) for fp in fps if fp is not None]
        common = set.intersection(*known) if len(known) > 1 else set()
        used: dict[str, int] = {}
        for fp in sorted(fps, key=lambda f: (f is None, len(f or ()), f or ())):
            if fp is None:
                label = "NCCL unknown"
            else:
                diff = sorted(set(fp) - common)
                if not diff:
                    label = "default NCCL"
                elif len(diff) <= MAX_LISTED_SETTINGS:
                    label = ", ".join(f"{k}={v}" for k, v in diff)
                else:
                    label = "tuned NCCL"
            used[label] = used.get(label, 0) + 1
            out[(hw, fp)] = label if used[label] == 1 else f"{label} #{used[label]}"
    return out


def _point(r: SweepRun) -> dict:
    return {"run_id": r.id, "name": r.name, "steps": r.steps, "throughput_tok_s": r.throughput_tok_s,
            "tokens_per_cycle": r.tokens_per_cycle, "cycle_ms": r.cycle_ms, "verify_ms": r.verify_ms,
            "nccl_status": r.nccl_status}


def _group(key: tuple, label: str, members: list[SweepRun], baselines: list[SweepRun]) -> dict:
    hw, fp = key
    members = sorted(members, key=lambda r: (r.steps, r.id))
    points = [_point(r) for r in members]
    best = max(points, key=lambda p: (p["throughput_tok_s"], -p["run_id"]))
    baseline = _baseline(hw, fp, baselines)
    group = {
        "key": _key_text(hw, fp),
        "label": label,
        "config": dict(zip(CONFIG_KEYS, (members[0].config.get(k) for k in CONFIG_KEYS), strict=True)),
        "nccl": dict(fp) if fp is not None else None,
        "points": points,
        "best": best,
        "baseline": baseline,
        "fit": fit(members),
        "drift": [p["run_id"] for p in points if p["nccl_status"] == "drift"],
    }
    group["headline"] = group_headline(group)
    return group


def _key_text(hw: tuple, fp: tuple | None) -> str:
    parts = [f"{k}={v}" for k, v in zip(CONFIG_KEYS, hw, strict=True) if v is not None]
    parts.append("nccl=" + ("?" if fp is None else ",".join(f"{k}={v}" for k, v in fp) or "-"))
    return ";".join(parts)


def _baseline(hw: tuple, fp: tuple | None, baselines: list[SweepRun]) -> dict | None:
    """The fastest no-speculation run on the same hardware, preferring the same NCCL settings."""
    same_hw = [b for b in baselines if hardware_key(b) == hw]
    if not same_hw:
        return None
    same_nccl = [b for b in same_hw if fingerprint(b) == fp]
    pick = max(same_nccl or same_hw, key=lambda b: (b.throughput_tok_s, -b.id))
    return {**_point(pick), "same_nccl": bool(same_nccl)}


class _Measured(NamedTuple):
    """A speculative run with every figure the fit needs, none of them None."""
    steps: int
    throughput_tok_s: float
    tokens_per_cycle: float
    cycle_ms: float


def _measured(r: SweepRun) -> _Measured | None:
    """The run's figures if it is speculative and has a cycle time and a throughput, else None."""
    if r.steps and r.tokens_per_cycle is not None and r.cycle_ms and r.throughput_tok_s:
        return _Measured(r.steps, r.throughput_tok_s, r.tokens_per_cycle, r.cycle_ms)
    return None


def fit(members: Sequence[SweepRun]) -> dict:
    """Acceptance and cost per draft step fitted to the group; the predicted curve for 1-8 steps."""
    pts = [m for m in map(_measured, members) if m is not None]
    out: dict = {"p": None, "p_low": None, "p_high": None, "base_cycle_ms": None, "cost_per_step_ms": None,
                 "cycle_resid_ms": None, "calibration": None, "curve": [], "predicted_best": None,
                 "notes": [], "reason": None}
    if not pts:
        out["reason"] = "no run with a step count, tokens per cycle and cycle time"
        return out
    implied = [p for p in (implied_acceptance(r.tokens_per_cycle, r.steps) for r in pts) if p is not None]
    if not implied:
        out["reason"] = "every run reports more tokens per cycle than its step count allows"
        return out
    p = fit_acceptance([(r.steps, r.tokens_per_cycle) for r in pts])
    out.update(p=round(p, 4), p_low=round(min(implied), 4), p_high=round(max(implied), 4))

    steps = sorted({r.steps for r in pts})
    if len(steps) < 2:
        out["reason"] = f"one step count measured ({steps[0]}): the cost of a step needs two"
        return out
    t0, cost, resid = fit_cycle([(r.steps, r.cycle_ms) for r in pts])
    if cost < 0:
        # Fewer ms per cycle with more steps is noise (a longer draft never makes a cycle
        # shorter); a negative cost would predict ever faster cycles past the measured range.
        out["notes"].append(f"cycle time fell with the step count ({cost:+.3f} ms/step): cost taken as 0")
        cycles = [r.cycle_ms for r in pts]
        t0, cost = sum(cycles) / len(cycles), 0.0
        resid = _resid([(r.steps, r.cycle_ms) for r in pts], t0, cost)
    ratio = median(r.throughput_tok_s / (1000 * r.tokens_per_cycle / r.cycle_ms) for r in pts)
    out.update(base_cycle_ms=round(t0, 4), cost_per_step_ms=round(cost, 4), cycle_resid_ms=round(resid, 4),
               calibration=round(ratio, 4))
    tested = set(steps)
    curve = []
    for k in PREDICT_STEPS:
        cycle = t0 + cost * k
        if cycle <= 0:
            continue
        low_cycle, high_cycle = cycle + resid, max(cycle - resid, cycle / 2)
        curve.append({
            "steps": k, "tested": k in tested,
            "tokens_per_cycle": round(expected_tokens_per_cycle(p, k), 4),
            "cycle_ms": round(cycle, 4),
            "throughput_tok_s": round(ratio * 1000 * expected_tokens_per_cycle(p, k) / cycle, 2),
            "low_tok_s": round(ratio * 1000 * expected_tokens_per_cycle(out["p_low"], k) / low_cycle, 2),
            "high_tok_s": round(ratio * 1000 * expected_tokens_per_cycle(out["p_high"], k) / high_cycle, 2),
        })
    out["curve"] = curve
    out["predicted_best"] = _predicted_best(curve, pts)
    return out


def fit_acceptance(points: Sequence[tuple[int, float]]) -> float:
    """The p in [0, 1] minimising the squared error of expected_tokens_per_cycle(p, k) vs tau."""
    def sse(p: float) -> float:
        return sum((expected_tokens_per_cycle(p, k) - tau) ** 2 for k, tau in points)

    # A grid first: the error need not be unimodal over all of [0, 1] with mixed step counts,
    # but it is within one grid cell of its minimum; ternary search then refines inside it.
    best = min(range(_GRID + 1), key=lambda i: sse(i / _GRID))
    lo, hi = max(0.0, (best - 1) / _GRID), min(1.0, (best + 1) / _GRID)
    for _ in range(_REFINE_ROUNDS):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if sse(m1) <= sse(m2):
            hi = m2
        else:
            lo = m1
    return (lo + hi) / 2


def fit_cycle(points: Sequence[tuple[int, float]]) -> tuple[float, float, float]:
    """Least squares T = T0 + c * k: (T0, c, standard deviation of the residuals)."""
    n = len(points)
    mk = sum(k for k, _ in points) / n
    mt = sum(t for _, t in points) / n
    sxx = sum((k - mk) ** 2 for k, _ in points)
    if sxx == 0:
        raise ValueError("a cycle-time fit needs two different step counts")
    cost = sum((k - mk) * (t - mt) for k, t in points) / sxx
    t0 = mt - cost * mk
    return t0, cost, _resid(points, t0, cost)


def _resid(points: Sequence[tuple[int, float]], t0: float, cost: float) -> float:
    dof = len(points) - 2
    if dof <= 0:
        return 0.0
    return (sum((t - t0 - cost * k) ** 2 for k, t in points) / dof) ** 0.5


def _predicted_best(curve: list[dict], pts: Sequence[_Measured]) -> dict | None:
    if not curve:
        return None
    top = max(curve, key=lambda c: c["throughput_tok_s"])
    measured_best = max(pts, key=lambda r: r.throughput_tok_s)
    ref = next((c for c in curve if c["steps"] == measured_best.steps), None)
    out = {"steps": top["steps"], "throughput_tok_s": top["throughput_tok_s"], "tested": top["tested"],
           "vs_steps": measured_best.steps, "gain_pct": None, "within_band": None}
    if top["tested"]:
        if top["steps"] == measured_best.steps:
            out["text"] = f"the model agrees: {top['steps']} steps is best"
        else:
            out["text"] = (f"the model predicts {top['steps']} steps best, "
                           f"though {measured_best.steps} measured fastest")
        return out
    if ref is not None:
        # Model against model at the measured best, so the calibration cancels out.
        out["gain_pct"] = round(100 * (top["throughput_tok_s"] / ref["throughput_tok_s"] - 1), 1)
        out["within_band"] = ref["high_tok_s"] >= top["throughput_tok_s"]
        out["text"] = (f"predicted best: {top['steps']} steps, {signed(out['gain_pct'], 0)}% over "
                       f"{measured_best.steps}, untested" + (" (within the fit's band)" if out["within_band"] else ""))
    else:
        out["text"] = f"predicted best: {top['steps']} steps, untested"
    if top["steps"] == PREDICT_STEPS[-1]:
        # The curve may keep rising past the chart: say so rather than imply a peak at 8.
        out["text"] += f"; still rising at {top['steps']}"
    return out


def _steps_text(steps: list[int]) -> str:
    """[1, 2, 3, 5] -> "1–3, 5"."""
    parts, start = [], None
    for i, k in enumerate(steps):
        if start is None:
            start = k
        if i + 1 == len(steps) or steps[i + 1] != k + 1:
            parts.append(str(k) if start == k else f"{start}–{k}")
            start = None
    return ", ".join(parts)


def group_headline(group: dict) -> str:
    best = group["best"]
    text = f"{group['label']}: best {best['steps']}-step, {figure(best['throughput_tok_s'], 'tok_s')} tok/s"
    base = group["baseline"]
    if base and base["throughput_tok_s"]:
        gain = 100 * (best["throughput_tok_s"] / base["throughput_tok_s"] - 1)
        text += f" ({signed(gain, 0)}% over no speculation, {figure(base['throughput_tok_s'], 'tok_s')} tok/s)"
    pb = group["fit"]["predicted_best"]
    if pb:
        text += f"; {pb['text']}"
    elif group["fit"]["reason"]:
        text += f"; no model fit: {group['fit']['reason']}"
    if group["drift"]:
        n = len(group["drift"])
        text += f"; {n} run{'s' if n != 1 else ''} with NCCL drift (declared settings never reached the workers)"
    return text + "."


def _overall(groups: list[dict]) -> list[str]:
    """Across groups on the same hardware: who wins at which step count, and the best overall."""
    out = []
    by_hw: dict[str, list[dict]] = {}
    for g in groups:
        by_hw.setdefault(g["key"].rsplit(";nccl=", 1)[0], []).append(g)
    for members in by_hw.values():
        if len(members) < 2:
            continue
        sentence = []
        contenders = [g for g in members if len({p["steps"] for p in g["points"]}) >= 2]
        if len(contenders) >= 2:
            sentence.append(_winners(contenders))
        best_group = max(members, key=lambda g: g["best"]["throughput_tok_s"])
        b = best_group["best"]
        sentence.append(f"best overall {best_group['label']} {b['steps']}-step, "
                        f"{figure(b['throughput_tok_s'], 'tok_s')} tok/s")
        text = "; ".join(s for s in sentence if s)
        out.append(text[0].upper() + text[1:] + ".")
    return out


def _winners(groups: list[dict]) -> str:
    """"tuned NCCL wins at 1–2 steps, default NCCL from 3" over the step counts all groups ran."""
    best_at = [{p["steps"]: p["throughput_tok_s"] for p in sorted(g["points"], key=lambda p: p["throughput_tok_s"])}
               for g in groups]
    common = sorted(set.intersection(*(set(b) for b in best_at)))
    if len(common) < 2:
        return ""
    winner = {k: max(range(len(groups)), key=lambda i: best_at[i][k]) for k in common}
    segments: list[tuple[int, list[int]]] = []
    for k in common:
        if segments and segments[-1][0] == winner[k]:
            segments[-1][1].append(k)
        else:
            segments.append((winner[k], [k]))
    if len(segments) == 1:
        return f"{groups[segments[0][0]]['label']} wins at every step count ({_steps_text(common)})"
    parts = []
    for n, (i, ks) in enumerate(segments):
        label = groups[i]["label"]
        if n == len(segments) - 1 and len(ks) > 1 and n > 0:
            parts.append(f"{label} from {ks[0]}")
        elif n == 0:
            parts.append(f"{label} wins at {_steps_text(ks)} step{'s' if ks != [1] else ''}")
        else:
            parts.append(f"{label} at {_steps_text(ks)}")
    return ", ".join(parts)


def to_csv_rows(result: dict) -> list[list[object]]:
    """Measured points and the predicted curve of each group, one row each."""
    rows: list[list[object]] = [["group", "kind", "run_id", "run", "steps", "throughput_tok_s", "tokens_per_cycle",
                                 "cycle_ms", "verify_ms", "low_tok_s", "high_tok_s"]]
    # Numbers rounded as the pages show them (runs/display.py).
    def n(value: object, kind: str) -> object:
        return csv_value(value, kind)

    for g in result["groups"]:
        for p in g["points"]:
            rows.append([g["label"], "measured", p["run_id"], p["name"], p["steps"], n(p["throughput_tok_s"], "tok_s"),
                         n(p["tokens_per_cycle"], "tokens"), n(p["cycle_ms"], "ms"), n(p["verify_ms"], "ms"),
                         None, None])
        for c in g["fit"]["curve"]:
            rows.append([g["label"], "predicted", None, None, c["steps"], n(c["throughput_tok_s"], "tok_s"),
                         n(c["tokens_per_cycle"], "tokens"), n(c["cycle_ms"], "ms"), None,
                         n(c["low_tok_s"], "tok_s"), n(c["high_tok_s"], "tok_s")])
    for b in result["baselines"]:
        rows.append(["", "baseline", b["run_id"], b["name"], 0, n(b["throughput_tok_s"], "tok_s"), None,
                     n(b["cycle_ms"], "ms"), None, None, None])
    return rows
