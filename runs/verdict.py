"""A run's verdict against its baseline, for CI (DESIGN, "Analysis": verdict.py). Pure.

Read off the comparison (`runs/compare.py`): the same deltas, the same noise (half the
interquartile range across windows, the larger of the two runs') and its one rule for a real
change (`judge`: beyond the noise and at least 1%). Throughput decides the overall verdict; the
other figures are its evidence.

NCCL is judged beside the figures, never inside them: `nccl` says whether the run's workers got
what its launcher declared (`drift`) and which settings they had that the baseline's workers did
not (`differs`). Different settings make the two runs not comparable (compare.comparability); a
drifted run is never a plain improvement: its headline and title say the drift first.

Every number a person reads comes with its text (`figures[].text`), written by runs/display.py,
so the CI client prints the page's strings instead of rounding on its own.
"""

from __future__ import annotations

from runs.compare import RunInput, _verify, compare, nccl_differences
from runs.display import figure, signed
from runs.nccl import drift_clause

VERDICTS = ("regression", "improvement", "no change", "not comparable", "pending")
# compare.judge's floor: a change under 1% is not called a change whatever the noise.
MIN_CHANGE_PCT = 1.0


def worse_beyond_noise_pct(judged: dict, base: float | None) -> float:
    """The part of a worsening the noise cannot explain, in % of the baseline's value (0 unless
    `judge` called it worse): what a CI gate compares with its threshold."""
    if judged["verdict"] != "worse" or not base or judged["delta"] is None:
        return 0.0
    return round(100 * (abs(judged["delta"]) - (judged["noise"] or 0)) / abs(base), 2)


def _row(key: str, label: str, unit: str, better: str, value: float | None, base: float | None,
         judged: dict) -> dict:
    beyond = worse_beyond_noise_pct(judged, base)
    return {"key": key, "label": label, "unit": unit, "better": better, "value": value, "baseline": base,
            "delta": judged["delta"], "delta_pct": judged["delta_pct"], "noise": judged["noise"],
            "significant": judged["significant"], "direction": judged["verdict"],
            "worse_beyond_noise_pct": beyond,
            "text": {"value": figure(value, key), "baseline": figure(base, key), "delta": signed(judged["delta"], key),
                     "delta_pct": signed(judged["delta_pct"], "pct"), "noise": figure(judged["noise"], key),
                     "worse_beyond_noise_pct": figure(beyond, "pct")}}


def nccl_verdict(run: RunInput, base: RunInput | None) -> dict:
    """The run's NCCL status and drift, and the effective settings it differs from its baseline in.

    `differs`: [{key, run, baseline}] (None: not set), None when either run's settings are unknown
    or there is no baseline. `alarm`: the run's own workers did not get what was declared."""
    nccl = run.parsed.get("nccl") or {}
    # `launch`: which serving launch drifted, when the run holds several (None otherwise).
    drift = [{k: d.get(k) for k in ("key", "declared", "effective", "ranks", "launch")}
             for d in nccl.get("drift") or []]
    status = nccl.get("status") or "unknown"
    base_status = ((base.parsed.get("nccl") or {}).get("status") or "unknown") if base else None
    differs = None
    if base is not None and status != "unknown" and base_status != "unknown":
        differs = [{"key": v["key"], "run": v["values"][1], "baseline": v["values"][0]}
                   for v in nccl_differences([base, run])]
    short, sentence = "", ""
    if drift:
        n = len(drift)
        short = f"NCCL drift: {n} declared variable{'s' if n != 1 else ''} did not reach the workers as declared"
        sentence = f"NCCL drift in {run.name}: {drift_clause(nccl.get('drift') or [], limit=4)}."
    elif differs:
        short = f"NCCL settings differ from the baseline's ({len(differs)} variable{'s' if len(differs) != 1 else ''})"
    elif base_status == "drift":
        short = "NCCL drift in the baseline"
    return {"status": status, "baseline_status": base_status, "drift": drift, "differs": differs,
            "alarm": bool(drift), "short": short, "sentence": sentence}


def verdict(run: RunInput, base: RunInput | None, baseline_how: str = "", missing_reason: str = "") -> dict:
    """`regression` / `improvement` / `no change` / `not comparable`, with per-figure rows and reasons."""
    out: dict = {"run": run.id, "baseline": None, "baseline_how": baseline_how, "verdict": "not comparable",
                 "reasons": [], "figures": [], "headline": "", "nccl": nccl_verdict(run, base)}
    if base is None:
        out["reasons"] = [missing_reason or "no baseline"]
        return _titled(out, f"{run.name}: not comparable: {out['reasons'][0]}.")
    out["baseline"] = {"id": base.id, "name": base.name}
    # The comparison judges every figure by its one rule; the verdict only reads it.
    result = compare([base, run], base.id)
    for m in result["metrics"]:
        cell = m["runs"][run.id]
        out["figures"].append(_row(m["key"], m["label"], m["unit"], m["better"], cell["value"],
                                   m["runs"][base.id]["value"], cell))
    verify = _verify(run.parsed)
    for row in result["phases"]:
        if verify and row["name"] == verify["name"]:
            continue  # already there as verify_ms
        cell = row["runs"][run.id]
        base_ms = row["runs"][base.id]["ms"]
        if base_ms is None and cell["delta_ms"] is not None:  # the baseline's equivalent phase
            base_ms = round(cell["ms"] - cell["delta_ms"], 4)
        out["figures"].append(_row(f"phase:{row['name']}", row["name"], "ms/cyc", "lower", cell["ms"], base_ms,
                                   {**cell, "delta": cell["delta_ms"]}))

    tput = out["figures"][0]
    problems = [d["text"] for d in result["comparable"]["differences"]]
    if tput["value"] is None:
        problems.append(f"{run.name} has no throughput")
    if tput["baseline"] is None:
        problems.append(f"the baseline {base.name} has no throughput")
    if problems:
        out["reasons"] = problems
        return _titled(out, f"{run.name} vs {base.name}: not comparable: {'; '.join(problems)}.")
    out["verdict"] = {"worse": "regression", "better": "improvement", None: "no change"}[tput["direction"]]
    out["reasons"] = [_reason(f) for f in out["figures"] if f["significant"]] or [
        f"every figure within the noise or under {MIN_CHANGE_PCT:g}%"]
    word = {"regression": "slower than", "improvement": "faster than", "no change": "within the noise of"}
    return _titled(out, f"{out['verdict'].capitalize()}: {run.name} is {word[out['verdict']]} {base.name} "
                        f"({figure(tput['value'], 'tok_s')} vs {figure(tput['baseline'], 'tok_s')} tok/s, "
                        f"{signed(tput['delta_pct'], 'pct')}%"
                        f"{_noise_text(tput)}).")


def _titled(out: dict, sentence: str) -> dict:
    """The headline (a drift first: it is why the figures cannot be trusted) and the one-line
    `title` a CI summary opens with, both naming the NCCL finding."""
    nccl = out["nccl"]
    out["headline"] = f"{nccl['sentence']} {sentence}" if nccl["sentence"] else sentence
    out["title"] = f"runlens: {out['verdict']}" + (f" · {nccl['short']}" if nccl["short"] else "")
    return out


def _noise_text(f: dict) -> str:
    return f", noise ±{figure(f['noise'], f['key'])}" if f["noise"] is not None else ""


def _reason(f: dict) -> str:
    unit = f" {f['unit']}" if f["unit"] else ""
    return (f"{f['label']} {f['direction']}: {figure(f['baseline'], f['key'])} → {figure(f['value'], f['key'])}{unit} "
            f"({signed(f['delta_pct'], 'pct')}%{_noise_text(f)})")


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
    out["text"] = (f"{row['label']} {figure(beyond, 'pct')}% worse beyond the noise "
                   f"({'over' if out['fail'] else 'within'} the {threshold_pct:g}% limit)")
    return out
