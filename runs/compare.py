"""Comparing runs against a baseline (DESIGN, "Analysis": compare.py). Pure: dicts in, dicts out.

Each run comes in as a `RunInput`: its parse JSON (the contract shape), its per-window series and
its configuration with sources. The view fetches those in a fixed number of queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.display import csv_value, figure, signed, throughput_scope_text
from runs.nccl import drift_clause, effective_differences, effective_settings
from runs.summary import spread

# The summary table, in reading order: key, label, unit, which direction is better.
METRICS = [
    ("throughput_tok_s", "Throughput", "tok/s", "higher"),
    ("tokens_per_cycle", "Tokens / cycle", "", "higher"),
    ("cycle_ms", "Cycle", "ms", "lower"),
    ("verify_ms", "Target verify", "ms/cyc", "lower"),
]
# Differences here make two runs measure different things (DESIGN: "comparable?" verdict).
COMPARABILITY_KEYS = [
    ("model", "model"), ("tp_size", "TP size"), ("spec.steps", "steps"), ("gpu", "GPU"),
    ("engine", "engine"), ("engine.version", "engine version"), ("spec.algorithm", "algorithm"),
]
# A non-speculative run's target forward is the work a speculative run's verify replaces.
EQUIVALENT_PHASES = {"Target verify": "Target forward"}


@dataclass
class RunInput:
    id: int
    name: str
    parsed: dict
    # key -> [(x, value, line, logfile id, window)] (x: the position in the run; runs/series.py
    # keeps them thinned): the line and file let a chart point open its source.
    series: dict[str, list[Sequence]] = field(default_factory=dict)
    # {key: {"value": v, "source": "x.log line 12" or "set by alice at ..."}}
    config: dict[str, dict] = field(default_factory=dict)
    steps: int | None = None
    collectives: list[dict] = field(default_factory=list)
    # Values a person set that the logs contradict, as sentences (runs.summary.person_vs_logs).
    person_conflicts: list[str] = field(default_factory=list)
    # key -> the noise of the whole per-window series (runs/series.py keeps it with the thinned points).
    spreads: dict[str, float] = field(default_factory=dict)


def _verify(parsed: dict) -> dict | None:
    return next((p for p in parsed.get("phases", []) if "verify" in p["name"].lower()), None)


def figures(run: RunInput) -> dict[str, float | None]:
    s = run.parsed.get("summary") or {}
    verify = _verify(run.parsed)
    return {
        "throughput_tok_s": s.get("throughput_tok_s"),
        "tokens_per_cycle": s.get("tokens_per_cycle"),
        "cycle_ms": s.get("cycle_ms"),
        "verify_ms": verify["ms"] if verify else None,
        "verify_pct": verify["pct"] if verify else None,
    }


def _delta(value: float | None, base: float | None) -> tuple[float | None, float | None]:
    if value is None or base is None:
        return None, None
    d = value - base
    return round(d, 4), (round(100 * d / base, 2) if base else None)


def compare(runs: list[RunInput], baseline_id: int | None = None) -> dict:
    """Runs against a baseline: per-phase and per-metric deltas, noise, config diff, headline."""
    if not runs:
        return {"baseline": None, "runs": [], "metrics": [], "phases": [], "config": [],
                "comparable": {"ok": True, "differences": []}, "headline": []}
    by_id = {r.id: r for r in runs}
    base = (by_id.get(baseline_id) if baseline_id is not None else None) or runs[0]
    ordered = [base] + [r for r in runs if r.id != base.id]
    figs = {r.id: figures(r) for r in ordered}

    metrics = []
    for key, label, unit, better in METRICS:
        base_value = figs[base.id][key]
        rows = {}
        for r in ordered:
            rows[r.id] = {"value": figs[r.id][key], **judge(
                figs[r.id][key], base_value, _noise(r, key), _noise(base, key), better, r.id == base.id)}
        metrics.append({"key": key, "label": label, "unit": unit, "better": better, "runs": rows})

    phases = _phase_rows(ordered, base)
    config = config_diff(ordered)
    comparable = comparability(ordered)
    result = {
        "baseline": base.id,
        "runs": [
            {"id": r.id, "name": r.name, "steps": r.steps, **figs[r.id],
             "nccl": _nccl_brief(r.parsed.get("nccl") or {}), "windows": (r.parsed.get("summary") or {}).get("windows"),
             # What the throughput covers when several DP ranks add up (summary.throughput_scope), else None.
             "throughput_scope": (r.parsed.get("summary") or {}).get("throughput_scope"),
             "person_conflicts": r.person_conflicts}
            for r in ordered
        ],
        "metrics": metrics,
        "phases": phases,
        "config": config,
        "comparable": comparable,
    }
    result["headline"] = headline(result)
    return result


def judge(value: float | None, base: float | None, noise: float | None, base_noise: float | None,
          better: str, is_base: bool = False) -> dict:
    """The one rule for every compared figure (throughput, cycle, each phase): a change counts when
    it exceeds the larger noise of the two runs and is at least 1% of the baseline's value."""
    d, pct = _delta(value, base)
    known = [x for x in (noise, base_noise) if x is not None]
    worst = max(known) if known else None
    significant = d is not None and not is_base and abs(d) > (worst or 0) and abs(pct or 0) >= 1.0
    verdict = None
    if significant and d is not None:
        verdict = "better" if (d > 0) == (better == "higher") else "worse"
    return {"delta": d, "delta_pct": pct, "noise": worst, "significant": significant, "verdict": verdict}


def _noise(run: RunInput, key: str) -> float | None:
    """A figure's noise: from the parse summary, else from the per-window series (runs parsed
    before the summary kept it)."""
    if key == "verify_ms":
        verify = _verify(run.parsed)
        if verify and verify.get("spread") is not None:
            return verify["spread"]
    stored = ((run.parsed.get("summary") or {}).get("spread") or {}).get(key)
    if stored is not None:
        return stored
    if key in run.spreads:  # the whole series' noise: `series` may hold only a thinned part of it
        return run.spreads[key]
    return spread([p[1] for p in run.series.get(key, [])])


def _phase_rows(ordered: list[RunInput], base: RunInput) -> list[dict]:
    names: list[str] = []
    table: dict[int, dict[str, dict]] = {}
    for r in ordered:
        table[r.id] = {p["name"]: p for p in r.parsed.get("phases", [])}
        names += [n for n in table[r.id] if n not in names]
    rows = []
    for name in names:
        base_phase = table[base.id].get(name) or table[base.id].get(EQUIVALENT_PHASES.get(name, ""))
        base_ms = (base_phase or {}).get("ms")
        cells = {}
        for r in ordered:
            p = table[r.id].get(name)
            ms = p["ms"] if p else None
            verdict = judge(ms, base_ms, (p or {}).get("spread"), (base_phase or {}).get("spread"), "lower",
                            r.id == base.id)
            cells[r.id] = {"ms": ms, "pct": p["pct"] if p else None, "delta_ms": verdict["delta"],
                           "delta_pct": verdict["delta_pct"], "noise": verdict["noise"],
                           "significant": verdict["significant"], "verdict": verdict["verdict"]}
        rows.append({"name": name, "runs": cells,
                     "baseline_as": base_phase["name"] if base_phase and base_phase["name"] != name else None})
    return rows


def _nccl_brief(nccl: dict) -> dict:
    drift = nccl.get("drift", [])
    return {"status": nccl.get("status") or "unknown", "drift": [d["key"] for d in drift],
            "changed": [d["key"] for d in drift if d.get("effective") is not None], "version": nccl.get("version"),
            "sentence": drift_clause(drift, limit=4)}


def config_diff(ordered: list[RunInput]) -> list[dict]:
    """Every configuration key with each run's value and source; `differs` marks the ones to show."""
    keys: list[str] = []
    for r in ordered:
        keys += [k for k in r.config if k not in keys]
    rows = []
    for key in sorted(keys):
        cells = {r.id: r.config.get(key) for r in ordered}
        values = {_norm(c["value"]) if c else None for c in cells.values()}
        rows.append({"key": key, "runs": cells, "differs": len(values) > 1})
    return rows


def _norm(value: object) -> str:
    return str(value).strip().lower()


def comparability(ordered: list[RunInput]) -> dict:
    """Runs differing in model, TP size, steps, GPU or engine version measure different things;
    so do runs whose workers had different NCCL settings (what they had, not what was declared)."""
    differences = []
    for key, label in COMPARABILITY_KEYS:
        values = [(r.config.get(key) or {}).get("value") for r in ordered]
        known = [v for v in values if v is not None]
        if len({_norm(v) for v in known}) > 1:
            shown = " vs ".join("?" if v is None else str(v) for v in values)
            differences.append({"key": key, "label": label, "values": values, "text": f"{label} differ: {shown}"})
    if variables := nccl_differences(ordered):
        differences.append({"key": "nccl.effective", "label": NCCL_LABEL, "values": variables,
                            "text": f"{NCCL_LABEL} differ: {nccl_differences_text(variables)}"})
    return {"ok": not differences, "differences": differences}


NCCL_LABEL = "effective NCCL settings"
NCCL_LISTED = 4  # variables named in a sentence; the rest are counted


def nccl_differences(ordered: list[RunInput]) -> list[dict]:
    """The NCCL variables the runs' workers had with different values: [{key, values}], one value
    per run in `ordered` (None: not set). Runs no log shows the settings of take no part."""
    return effective_differences([effective_settings(r.parsed.get("nccl") or {}) for r in ordered])


def nccl_differences_text(variables: list[dict], limit: int = NCCL_LISTED) -> str:
    """`NCCL_ALGO Ring vs unset, NCCL_PROTO LL vs unset (+3 more)`: values in the runs' order."""
    shown = [f"{v['key']} " + " vs ".join("unset" if x is None else str(x) for x in v["values"])
             for v in variables[:limit]]
    more = f" (+{len(variables) - limit} more)" if len(variables) > limit else ""
    return ", ".join(shown) + more


def headline(result: dict) -> list[dict]:
    """Plain-rule sentences, each pointing at the section with its evidence (`anchor`)."""
    runs = result["runs"]
    if len(runs) < 2:
        return []
    base = runs[0]
    out: list[dict[str, Any]] = []
    tput = next(m for m in result["metrics"] if m["key"] == "throughput_tok_s")
    others = [r for r in runs[1:] if tput["runs"][r["id"]]["delta_pct"] is not None]
    if others:
        r = max(others, key=lambda r: abs(tput["runs"][r["id"]]["delta_pct"]))
        cell = tput["runs"][r["id"]]
        values = f"({figure(cell['value'], 'tok_s')} vs {figure(base['throughput_tok_s'], 'tok_s')} tok/s)"
        if cell["significant"]:
            word = "faster" if cell["delta"] > 0 else "slower"
            text = f"{r['name']} is {figure(abs(cell['delta_pct']), 'pct')}% {word} than {base['name']} {values}."
        else:
            text = f"{r['name']} and {base['name']} are within the noise on throughput {values}."
        for run in (r, base):  # a DP server's figure is the sum of its ranks': say so beside it
            if scope := throughput_scope_text(run.get("throughput_scope")):
                text += f" {run['name']}'s throughput is the {scope}."
        out.append({"text": text, "anchor": "summary"})
    best = None
    for row in result["phases"]:
        for r in runs[1:]:
            cell = row["runs"][r["id"]]
            # Only a change outside the noise makes the headline (the same rule as the tables).
            if cell["significant"] and (best is None or abs(cell["delta_ms"]) > abs(best[2]["delta_ms"])):
                best = (row, r, cell)
    if best and abs(best[2]["delta_ms"]) >= 0.01:
        row, r, cell = best
        base_ms = row["runs"][base["id"]]["ms"]
        if base_ms is None:  # the baseline's equivalent phase (target forward for verify)
            base_ms = cell["ms"] - cell["delta_ms"]
        share = f", {figure(cell['pct'], 'pct')}% of the cycle" if cell["pct"] is not None else ""
        out.append({"text": f"{row['name']} {signed(cell['delta_ms'], 'ms')} ms/cyc in {r['name']} "
                            f"({figure(base_ms, 'ms')} → {figure(cell['ms'], 'ms')}{share}).", "anchor": "breakdown"})
    for r in runs:
        if r["nccl"]["status"] != "drift":
            continue
        out.append({"text": f"{r['name']}: {r['nccl']['sentence']}.", "anchor": "config", "alarm": True})
    for r in runs:
        for sentence in r.get("person_conflicts", []):
            out.append({"text": f"{r['name']}: {sentence}.", "anchor": "config", "alarm": True})
    for d in result["comparable"]["differences"]:
        out.append({"text": d["text"] + ".", "anchor": "config"})
    return out


def to_csv_rows(result: dict) -> list[list]:
    """The summary and phase tables as CSV rows (run, metric, value, delta, delta %, noise), each
    number rounded as the pages show it (runs/display.py: tok/s 1 decimal, ms 2, % 1)."""
    names = {r["id"]: r["name"] for r in result["runs"]}
    rows: list[list[Any]] = [
        ["run_id", "run", "baseline", "metric", "value", "unit", "delta", "delta_pct", "noise", "significant"]
    ]
    for m in result["metrics"]:
        for rid, cell in m["runs"].items():
            rows.append([rid, names[rid], rid == result["baseline"], m["key"], csv_value(cell["value"], m["key"]),
                         m["unit"], csv_value(cell["delta"], m["key"]), csv_value(cell["delta_pct"], "pct"),
                         csv_value(cell["noise"], m["key"]), cell["significant"]])
    for p in result["phases"]:
        for rid, cell in p["runs"].items():
            rows.append([rid, names[rid], rid == result["baseline"], f"phase:{p['name']}", csv_value(cell["ms"], "ms"),
                         "ms/cyc", csv_value(cell["delta_ms"], "ms"), csv_value(cell["delta_pct"], "pct"), None, None])
    return rows
