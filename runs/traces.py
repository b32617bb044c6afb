"""Profiler traces as phases: which range names are which phases, per-phase figures, comparison
against a baseline and the sentences pages say. Pure: the stored JSON of a trace file
(ingest/parsers/trace.py) in, dicts out; no Django.

Range names become phases by PHASE_NAMES (the names engines and this project's recipe use) or
by a person's mapping (`Run.trace_phases`, {range name: phase, "" to ignore it}), which wins.
Several ranges of one cycle mapped to one phase add up (wall, busy, kernels, time by class:
a loop's ranges follow one another, they do not overlap).

Per phase, over its cycles: wall and busy are means per cycle (they add up with the classes in
a stacked bar), `wall_median_ms` is the figure compared with the log's phase time (logs report
medians over windows), and the idle share is 1 - busy / wall over all cycles.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping

# (phase, pattern on the range name lowered, with spaces and dashes as underscores).
PHASE_NAMES: tuple[tuple[str, str], ...] = (
    ("Draft extend", r"^(forward_)?draft_extend(_forward)?$"),
    ("Draft", r"^((eagle|spec|speculative)_)?draft(_forward|_decode|_steps?(_?\d+)?)?$"),
    ("Target verify", r"^((target|forward_target)_)?verify(_forward)?$"),
    ("Accept", r"^accept(_tokens)?$|^rejection_sampl(e|er|ing)$"),
    ("Target forward", r"^(target|decode)_forward$|^forward_decode$"),
)
_PHASES = tuple((phase, re.compile(p)) for phase, p in PHASE_NAMES)
IDLE_LAUNCH_BOUND = 0.5  # a phase whose GPU is idle more than this is waiting for the CPU
IDLE_PART = 0.1  # ... said of phases that are at least this share of the cycle
EXPLAINS = 0.6  # one class explains a phase's change when it is this share of it, same sign
MIN_CHANGE_MS = 0.5
# Log and trace agree within the profiler's own cost: it timestamps every op and launch on the
# CPU, which slows a launch-bound phase by up to ~15% (this project's sample: 1-6%).
AGREE_SHARE = 0.15
AGREE_MS = 0.3


def _key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def phase_of(name: str, mapping: Mapping[str, str] | None = None) -> str | None:
    """The phase a range name stands for: a person's mapping first ("" = not a phase), then PHASE_NAMES."""
    if mapping and name in mapping:
        return mapping[name] or None
    key = _key(name)
    for phase, pattern in _PHASES:
        if pattern.match(key):
            return phase
    return None


def same_phase(a: str, b: str) -> bool:
    """A log's phase name and a trace's name for the same thing ("Target verify", "target_verify")."""
    return re.sub(r"[^a-z0-9]", "", a.lower()) == re.sub(r"[^a-z0-9]", "", b.lower())


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def _r(x: float | None, places: int = 3) -> float | None:
    return None if x is None else round(x, places)


def rank_breakdown(rank: dict, kernel_names: list[str], mapping: Mapping[str, str] | None = None) -> dict:
    """One device's phases (figures per cycle and over cycles) and the ranges that are no phase."""
    merged: dict[str, dict[int, dict]] = defaultdict(dict)
    names_of: dict[str, list[str]] = defaultdict(list)
    tops: dict[str, dict[int, list]] = defaultdict(dict)
    unmapped = []
    for name, r in rank["ranges"].items():
        phase = phase_of(name, mapping)
        if phase is None:
            unmapped.append({"name": name, "ranges": len(r["cycles"]),
                             "wall_ms": _r(sum(c["wall_ms"] for c in r["cycles"]))})
            continue
        names_of[phase].append(name)
        for c in r["cycles"]:
            m = merged[phase].get(c["cycle"])
            if m is None:
                m = merged[phase][c["cycle"]] = {
                    "cycle": c["cycle"], "event": c["event"], "ts_us": c["ts_us"], "wall_ms": 0.0, "busy_ms": 0.0,
                    "kernels": 0, "launches": 0, "by_class": {}}
            m["wall_ms"] += c["wall_ms"]
            m["busy_ms"] += c["busy_ms"]
            m["kernels"] += c["kernels"]
            m["launches"] = None if c["launches"] is None or m["launches"] is None else m["launches"] + c["launches"]
            _add(m["by_class"], c["by_class"])
        for k in r.get("top", []):
            t = tops[phase].setdefault(k["kernel"], [0.0, 0, k["event"], k["ts_us"]])
            t[0] += k["ms"]
            t[1] += k["count"]
    phases = []
    for phase, by_cycle in merged.items():
        cycles = [by_cycle[k] for k in sorted(by_cycle)]
        n = len(cycles)
        wall = sum(c["wall_ms"] for c in cycles)
        busy = sum(c["busy_ms"] for c in cycles)
        by_class: dict[str, float] = {}
        for c in cycles:
            _add(by_class, c["by_class"])
            c["idle_share"] = _r(1 - c["busy_ms"] / c["wall_ms"], 4) if c["wall_ms"] > 0 else None
            c["wall_ms"], c["busy_ms"] = _r(c["wall_ms"], 4), _r(c["busy_ms"], 4)
            c["by_class"] = {k: _r(v, 4) for k, v in c["by_class"].items()}
        kernel_ms = sum(by_class.values())
        launches = [c["launches"] for c in cycles]
        top = sorted(tops[phase].items(), key=lambda kv: -kv[1][0])[:10]
        phases.append({
            "name": phase, "ranges": names_of[phase], "cycles": n, "first_ts_us": cycles[0]["ts_us"],
            "event": cycles[0]["event"], "ts_us": cycles[0]["ts_us"],
            "wall_ms": _r(wall / n), "wall_median_ms": _r(statistics.median(c["wall_ms"] for c in cycles)),
            "busy_ms": _r(busy / n), "idle_share": _r(1 - busy / wall, 4) if wall > 0 else None,
            "kernels": _r(sum(c["kernels"] for c in cycles) / n, 1),
            "launches": None if None in launches else _r(sum(launches) / n, 1),
            "by_class": {k: _r(v / n, 4) for k, v in sorted(by_class.items(), key=lambda kv: -kv[1])},
            "top": [{"kernel": kernel_names[k] if 0 <= k < len(kernel_names) else str(k),
                     "ms": _r(ms / n, 4), "count": count / n, "share": _r(ms / kernel_ms, 4) if kernel_ms else None,
                     "event": event, "ts_us": ts} for k, (ms, count, event, ts) in top],
            "per_cycle": cycles,
        })
    # In the order a cycle runs them: by where each phase's median cycle starts within its cycle.
    phases.sort(key=lambda p: _order_in_cycle(p, merged))
    for p in phases:
        del p["first_ts_us"]
    return {
        "device": rank["device"], "rank": rank.get("rank"), "gpu": rank.get("gpu"),
        "ranges_from": rank["ranges_from"], "cycles_from": rank["cycles_from"],
        "kernels": rank["kernels"], "launches": rank["launches"], "streams": rank["streams"],
        "span_ms": rank["span_ms"], "busy_ms": rank["busy_ms"], "kernel_ms": rank["kernel_ms"],
        "idle_share": _r(1 - rank["busy_ms"] / rank["span_ms"], 4) if rank["span_ms"] else None,
        "outside_ranges_ms": rank["outside_ranges_ms"], "by_class": rank["by_class"],
        "phases": phases, "unmapped": unmapped,
        "cycles": sorted(int(k) for k in rank.get("timelines", {})),
    }


def _order_in_cycle(phase: dict, merged: Mapping[str, dict[int, dict]]) -> tuple[float, str]:
    offsets = []
    for c in phase["per_cycle"]:
        starts = [m[c["cycle"]]["ts_us"] for m in merged.values() if c["cycle"] in m]
        offsets.append(c["ts_us"] - min(starts))
    return (statistics.median(offsets) if offsets else 0.0, phase["name"])


def messages(rank: dict, breakdown: dict, range_names: Iterable[str]) -> list[str]:
    """What a reader must know about one device's breakdown: never an empty breakdown unexplained."""
    out = []
    names = sorted(range_names)
    if not rank["ranges"]:
        out.append("this trace has no user ranges (record_function) around its phases: only whole-trace "
                   "figures are shown; wrap each phase in torch.profiler.record_function('draft') etc.")
    elif not breakdown["phases"]:
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
        out.append(f"none of this trace's ranges ({shown}) is named like a phase (draft, target_verify, accept, "
                   "...): map them to phases on the run page")
    if breakdown["ranges_from"] == "cpu":
        out.append("the trace has no GPU-side ranges (gpu_user_annotation): phase windows are the CPU ranges, "
                   "so work queued in one phase and run in the next counts where it ran")
    if breakdown["phases"] and breakdown["cycles_from"] == "order":
        out.append("no cycle ranges (cycle_N, step_N): each phase's ranges are numbered in order as cycles")
    return out


def run_trace(files: Iterable[dict], mapping: Mapping[str, str] | None = None) -> dict:
    """The run's trace breakdown from its trace files ({logfile, name, trace}): one entry per
    device (a file per rank), each with its phases; the first is what pages show."""
    ranks = []
    notes: list[str] = []
    for f in files:
        stored = f["trace"]
        for w in stored.get("warnings", []):
            notes.append(f"{f['name']}: {w['message']}")
        for rank in stored["ranks"]:
            b = rank_breakdown(rank, stored["kernel_names"], mapping)
            b["logfile"], b["file"] = f["logfile"], f["name"]
            b["messages"] = messages(rank, b, [u["name"] for u in b["unmapped"]] or rank["ranges"])
            ranks.append(b)
    if len(ranks) > 1:
        ids = ", ".join(f"{r['file']} GPU {r['device']}" + (f" (rank {r['rank']})" if r["rank"] is not None else "")
                        for r in ranks)
        notes.append(f"{len(ranks)} traced GPUs ({ids}): pages show the first; the API and CSV hold each")
    return {"ranks": ranks, "messages": notes + (ranks[0]["messages"] if ranks else [])}


def summary(trace: dict) -> dict:
    """The run's trace as `parsed["trace"]` keeps it: each rank's phases without their cycles."""
    return {
        "messages": trace["messages"],
        "ranks": [{**{k: v for k, v in r.items() if k != "phases"},
                   "phases": [{k: v for k, v in p.items() if k != "per_cycle"} for p in r["phases"]]}
                  for r in trace["ranks"]],
    }


def agreement(phases: list[dict], log_phases: list[dict]) -> list[dict]:
    """Each traced phase beside the log's time for it: agree when within the profiler's overhead."""
    out = []
    for p in phases:
        log = next((lp for lp in log_phases if same_phase(lp.get("name", ""), p["name"])), None)
        if log is None or log.get("ms") is None or p["wall_median_ms"] is None:
            continue
        diff = p["wall_median_ms"] - log["ms"]
        ok = abs(diff) <= max(AGREE_MS, AGREE_SHARE * log["ms"])
        out.append({"phase": p["name"], "trace_ms": p["wall_median_ms"], "log_ms": log["ms"], "diff_ms": _r(diff),
                    "agree": ok, "note": "" if ok else (
                        f"{p['name']}: the trace says {p['wall_median_ms']:.2f} ms, the log {log['ms']:.2f} ms "
                        f"({diff:+.2f} ms), more than the profiler's overhead: were they recorded in the same run?")})
    return out


def idle_notes(rank: dict) -> list[str]:
    """Phases whose GPU mostly waits ("Target verify is 80% idle: launch-bound; CUDA graphs would help"),
    among those that are a real part of the cycle (a 0.3 ms accept idling says nothing)."""
    cycle = sum(p["wall_ms"] for p in rank["phases"])
    return [f"{p['name']} is {p['idle_share'] * 100:.0f}% idle: launch-bound; CUDA graphs would help"
            for p in rank["phases"] if p["idle_share"] is not None and p["idle_share"] >= IDLE_LAUNCH_BOUND
            and p["wall_ms"] >= IDLE_PART * cycle]


def compare(run: dict, baseline: dict) -> list[dict]:
    """Per-phase deltas of a run's first rank against the baseline's: wall, busy, idle and each class
    (ms per cycle), with the class that explains the change when one does."""
    if not run.get("ranks") or not baseline.get("ranks"):
        return []
    mine = {p["name"]: p for p in run["ranks"][0]["phases"]}
    base = {p["name"]: p for p in baseline["ranks"][0]["phases"]}
    out = []
    for name in [n for n in base if n in mine] + [n for n in mine if n not in base]:
        p, b = mine.get(name), base.get(name)
        if p is None or b is None:
            continue
        classes = sorted(set(p["by_class"]) | set(b["by_class"]))
        by_class = {c: round(p["by_class"].get(c, 0.0) - b["by_class"].get(c, 0.0), 4) for c in classes}
        wall = p["wall_ms"] - b["wall_ms"]
        busy = p["busy_ms"] - b["busy_ms"]
        top = max(by_class.items(), key=lambda kv: abs(kv[1]), default=None)
        explained = None
        if abs(wall) >= MIN_CHANGE_MS and top and top[1] * wall > 0 and abs(top[1]) >= EXPLAINS * abs(wall):
            explained = {"class": top[0], "ms": top[1]}
        elif abs(wall) >= MIN_CHANGE_MS and abs(wall - busy) >= EXPLAINS * abs(wall):
            explained = {"class": "GPU idle", "ms": _r(wall - busy, 4)}
        out.append({"phase": name, "wall_ms": _r(wall, 4), "busy_ms": _r(busy, 4), "base_wall_ms": b["wall_ms"],
                    "run_wall_ms": p["wall_ms"], "idle_share": p["idle_share"], "base_idle_share": b["idle_share"],
                    "by_class": dict(sorted(by_class.items(), key=lambda kv: -abs(kv[1] or 0))),
                    "explained_by": explained, "event": p["event"], "ts_us": p["ts_us"]})
    return out


def headline(deltas: list[dict]) -> list[str]:
    """Clauses for the comparison's headline: phases whose change one class explains."""
    out = []
    for d in sorted(deltas, key=lambda d: -abs(d["wall_ms"])):
        e = d["explained_by"]
        if e:
            out.append(f"{d['phase']} {d['wall_ms']:+.1f} ms: {e['class']} {e['ms']:+.1f} ms")
    return out


CSV_COLUMNS = ("file", "device", "rank", "phase", "ranges", "cycle", "event", "ts_us", "wall_ms", "busy_ms",
               "idle_pct", "kernels", "launches")


def csv_rows(trace: dict) -> tuple[list[str], list[list]]:
    """Header and rows of the per-phase, per-cycle CSV: one row a phase and cycle, a column a class."""
    classes = sorted({c for r in trace["ranks"] for p in r["phases"] for c in p["by_class"]})
    rows = []
    for r in trace["ranks"]:
        for p in r["phases"]:
            for c in p["per_cycle"]:
                idle = None if c["idle_share"] is None else round(c["idle_share"] * 100, 1)
                rows.append([r["file"], r["device"], r["rank"], p["name"], " ".join(p["ranges"]), c["cycle"],
                             c["event"], c["ts_us"], c["wall_ms"], c["busy_ms"], idle, c["kernels"], c["launches"]]
                            + [c["by_class"].get(k, 0.0) for k in classes])
    return [*CSV_COLUMNS, *(f"{k} ms" for k in classes)], rows


def compare_runs(runs: list[tuple[int, str, dict | None]], baseline: int) -> dict | None:
    """The comparison's trace part: per run, its per-phase deltas by class against the baseline's
    trace and its launch-bound phases; headline entries (the comparison's shape: text, anchor).
    None when no run has a trace."""
    by_id = {rid: (name, t) for rid, name, t in runs}
    if not any(t for _, t in by_id.values()):
        return None
    base = by_id.get(baseline, ("", None))[1]
    out_runs = []
    heads = []
    for rid, name, t in runs:
        if not t or not t.get("ranks"):
            out_runs.append({"id": rid, "name": name, "traced": False, "deltas": [], "idle": []})
            continue
        deltas = compare(t, base) if base and rid != baseline else []
        idle = idle_notes(t["ranks"][0])
        out_runs.append({"id": rid, "name": name, "traced": True, "deltas": deltas, "idle": idle,
                         "phases": [{k: p[k] for k in ("name", "wall_ms", "busy_ms", "idle_share", "by_class")}
                                    for p in t["ranks"][0]["phases"]]})
        heads += [{"text": f"{name}: {clause}", "anchor": "trace"} for clause in headline(deltas)]
        heads += [{"text": f"{name}: {note}", "anchor": "trace"} for note in idle[:1]]
    notes = [] if base else ["the baseline has no profiler trace: no per-class deltas"]
    return {"baseline": baseline, "runs": out_runs, "headline": heads, "messages": notes}


def timeline(files: list[dict], rank: int = 0, cycle: int | None = None,
             mapping: Mapping[str, str] | None = None) -> dict | None:
    """One kept cycle of one traced GPU (the `rank`-th, in run_trace's order): its kernels with
    stream, name, class and event index, and its ranges with their phase. `cycle` None: the kept
    cycle of median wall time. None when there is no such GPU or it kept no cycle."""
    entries = [(f, r) for f in files for r in f["trace"]["ranks"]]
    if not 0 <= rank < len(entries):
        return None
    f, r = entries[rank]
    kept = r.get("timelines") or {}
    if not kept:
        return None
    cycles = sorted(int(k) for k in kept)
    if cycle is None or str(cycle) not in kept:
        by_ms = sorted(cycles, key=lambda k: kept[str(k)]["ms"])
        cycle = by_ms[len(by_ms) // 2]
    c = kept[str(cycle)]
    names = f["trace"]["kernel_names"]
    classes = f["trace"]["kernel_classes"]
    used = sorted(set(c["kernel"]))
    at = {k: i for i, k in enumerate(used)}
    return {
        "file": f["name"], "logfile": f["logfile"], "device": r["device"], "rank": rank, "cycle": cycle,
        "cycles": cycles, "ms": c["ms"], "t0_us": c["t0_us"], "truncated": c["truncated"],
        "ranges": [{"name": n, "phase": phase_of(n, mapping), "start_ms": a, "end_ms": b, "event": ev}
                   for n, a, b, ev in c["ranges"]],
        "names": [names[k] for k in used], "classes": [classes[k] for k in used],
        "kernels": {"start_ms": c["start_ms"], "dur_ms": c["dur_ms"], "stream": c["stream"],
                    "name": [at[k] for k in c["kernel"]], "event": c["event"]},
    }
