"""A run's verdict against its baseline, for CI (DESIGN, "Analysis": verdict.py). Pure.

Built on the comparison (`runs/compare.py`): the same deltas, the same noise (half the
interquartile range of the per-window values, the larger of the two runs') and the same rule
for a real change (beyond the noise and at least 1%). Throughput decides the overall verdict;
the other figures are its evidence.
"""

from __future__ import annotations

from runs.compare import METRICS, RunInput, _verify, compare, spread

VERDICTS = ("regression", "improvement", "no change", "not comparable", "pending")
# The comparison's floor: a change under 1% is not called a change whatever the noise.
MIN_CHANGE_PCT = 1.0


def figure(key: str, label: str, unit: str, better: str, value: float | None, base: float | None,
           noise: float | None) -> dict:
    """One figure's delta, whether it is outside the noise, and how far beyond it in the bad direction."""
    row = {"key": key, "label": label, "unit": unit, "better": better, "value": value, "baseline": base,
           "delta": None, "delta_pct": None, "noise": noise, "significant": False, "direction": None,
           "worse_beyond_noise_pct": 0.0}
    if value is None or base is None:
        return row
    d = value - base
    pct = 100 * d / base if base else None
    significant = abs(d) > (noise or 0) and abs(pct or 0) >= MIN_CHANGE_PCT
    direction = None
    if significant:
        direction = "better" if (d > 0) == (better == "higher") else "worse"
    beyond = 0.0
    if direction == "worse" and base:
        # The part of the change the noise cannot explain, in % of the baseline: what a CI gate
        # compares with its threshold.
        beyond = 100 * (abs(d) - (noise or 0)) / abs(base)
    row.update(delta=round(d, 4), delta_pct=None if pct is None else round(pct, 2), significant=significant,
               direction=direction, worse_beyond_noise_pct=round(beyond, 2))
    return row


def _phase_noise(run: RunInput, name: str) -> float | None:
    return spread([v for _, v, _ in run.series.get(f"phase:{name}", [])])


def verdict(run: RunInput, base: RunInput | None, baseline_how: str = "", missing_reason: str = "") -> dict:
    """`regression` / `improvement` / `no change` / `not comparable`, with per-figure rows and reasons."""
    out: dict = {"run": run.id, "baseline": None, "baseline_how": baseline_how, "verdict": "not comparable",
                 "reasons": [], "figures": [], "headline": ""}
    if base is None:
        out["reasons"] = [missing_reason or "no baseline"]
        out["headline"] = f"{run.name}: not comparable: {out['reasons'][0]}."
        return out
    out["baseline"] = {"id": base.id, "name": base.name}
    result = compare([base, run], base.id)
    noise = {m["key"]: m["runs"][run.id]["noise"] for m in result["metrics"]}
    figs = result["runs"]
    mine, theirs = figs[1], figs[0]
    for key, label, unit, better in METRICS:
        out["figures"].append(figure(key, label, unit, better, mine[key], theirs[key], noise[key]))
    verify = _verify(run.parsed)
    for row in result["phases"]:
        if verify and row["name"] == verify["name"]:
            continue  # already there as verify_ms, with its per-window noise
        cell, base_cell = row["runs"][run.id], row["runs"][base.id]
        base_name = row["baseline_as"] or row["name"]
        base_ms = base_cell["ms"] if base_cell["ms"] is not None else (
            cell["ms"] - cell["delta_ms"] if cell["delta_ms"] is not None else None)
        noises = [n for n in (_phase_noise(run, row["name"]), _phase_noise(base, base_name)) if n is not None]
        out["figures"].append(figure(f"phase:{row['name']}", row["name"], "ms/cyc", "lower", cell["ms"], base_ms,
                                     max(noises) if noises else None))

    tput = out["figures"][0]
    problems = [d["text"] for d in result["comparable"]["differences"]]
    if tput["value"] is None:
        problems.append(f"{run.name} has no throughput")
    if tput["baseline"] is None:
        problems.append(f"the baseline {base.name} has no throughput")
    if problems:
        out["reasons"] = problems
        out["headline"] = f"{run.name} vs {base.name}: not comparable: {'; '.join(problems)}."
        return out
    out["verdict"] = {"worse": "regression", "better": "improvement", None: "no change"}[tput["direction"]]
    out["reasons"] = [_reason(f) for f in out["figures"] if f["significant"]] or [
        f"every figure within the noise or under {MIN_CHANGE_PCT:g}%"]
    word = {"regression": "slower than", "improvement": "faster than", "no change": "within the noise of"}
    out["headline"] = (f"{out['verdict'].capitalize()}: {run.name} is {word[out['verdict']]} {base.name} "
                       f"({tput['value']:.1f} vs {tput['baseline']:.1f} tok/s, {tput['delta_pct']:+.1f}%"
                       f"{_noise_text(tput)}).")
    return out


def _noise_text(f: dict) -> str:
    return f", noise ±{f['noise']:.2f}" if f["noise"] is not None else ""


def _reason(f: dict) -> str:
    unit = f" {f['unit']}" if f["unit"] else ""
    return (f"{f['label']} {f['direction']}: {f['baseline']:.2f} → {f['value']:.2f}{unit} "
            f"({f['delta_pct']:+.1f}%{_noise_text(f)})")


def gate(result: dict, metric: str, threshold_pct: float) -> dict:
    """Should CI fail: did `metric` get worse by more than `threshold_pct` beyond the noise?"""
    out = {"metric": metric, "threshold_pct": threshold_pct, "fail": False, "text": ""}
    row = next((f for f in result["figures"] if f["key"] == metric), None)
    if row is None:
        known = ", ".join(f["key"] for f in result["figures"]) or "none (not comparable)"
        out["text"] = f"no figure {metric!r} in the verdict (figures: {known})"
        return out
    beyond = row["worse_beyond_noise_pct"]
    out["fail"] = beyond > threshold_pct
    out["text"] = (f"{row['label']} {beyond:.1f}% worse beyond the noise "
                   f"({'over' if out['fail'] else 'within'} the {threshold_pct:g}% limit)")
    return out
