"""Plotly figures of profiler traces (plain dicts, as runs/charts.py makes them): each phase's
time by kernel class beside the log's phase time, one cycle's kernels on their streams, and the
per-phase class deltas of compared runs. Pure: no Django."""

from __future__ import annotations

from typing import Any

from runs.charts import LAYOUT, PALETTE, _plain

IDLE = "GPU idle"
# Colours by kernel class, the same on every chart; NCCL variants take the warm tail in order.
CLASS_COLORS = {
    "GEMM": "#4e79a7", "Attention": "#59a14f", "Copy/concat": "#f28e2b", "Elementwise/reduction": "#76b7b2",
    "Other": "#9c755f", IDLE: "#e8e8e8",
}
NCCL_COLORS = ["#e15759", "#b07aa1", "#ff9da7", "#edc948", "#bab0ac"]


def class_color(cls: str, nccl_seen: list[str]) -> str:
    if cls in CLASS_COLORS:
        return CLASS_COLORS[cls]
    if cls not in nccl_seen:
        nccl_seen.append(cls)
    return NCCL_COLORS[nccl_seen.index(cls) % len(NCCL_COLORS)] if cls.startswith("NCCL") else PALETTE[-1]


def phase_classes(rank: dict, agreement: list[dict]) -> dict:
    """A stacked bar per phase: ms per cycle by kernel class, then GPU idle up to the phase's wall
    time; the log's time for the phase as a marker beside it."""
    phases = rank["phases"]
    names = [p["name"] for p in phases]
    classes = sorted({c for p in phases for c in p["by_class"]},
                     key=lambda c: -sum(p["by_class"].get(c, 0) for p in phases))
    seen: list[str] = []
    data = []
    for cls in classes:
        data.append({"type": "bar", "name": cls, "x": names, "y": [p["by_class"].get(cls, 0.0) for p in phases],
                     "marker": {"color": class_color(cls, seen)},
                     "customdata": [[p["event"], p["ts_us"]] for p in phases],
                     "hovertemplate": "%{y:.3f} ms/cycle<extra>" + cls + "</extra>"})
    # Idle: the wall time the kernels leave (busy counts stream overlap once; classes may count it twice).
    data.append({"type": "bar", "name": IDLE, "x": names,
                 "y": [max(0.0, p["wall_ms"] - max(p["busy_ms"], sum(p["by_class"].values()))) for p in phases],
                 "marker": {"color": CLASS_COLORS[IDLE]},
                 "text": [f"{p['idle_share'] * 100:.0f}% idle" if p["idle_share"] is not None else "" for p in phases],
                 "textposition": "inside", "hovertemplate": "%{y:.3f} ms/cycle idle<extra></extra>"})
    logged = {a["phase"]: a["log_ms"] for a in agreement}
    if logged:
        data.append({"type": "scatter", "mode": "markers", "name": "log (median ms/cycle)",
                     "x": [n for n in names if n in logged], "y": [logged[n] for n in names if n in logged],
                     "marker": {"symbol": "diamond", "size": 11, "color": "#222"}})
    layout = {**LAYOUT, "barmode": "stack", "hovermode": "closest",
              "title": {"text": "Where each phase's time goes on the GPU"},
              "yaxis": {"title": {"text": "ms per cycle (mean over traced cycles)"}}}
    return _plain(data, layout)


def cycle_timeline(tl: dict) -> dict:
    """One cycle: a lane per stream (kernels coloured by class), the phase ranges on a lane above."""
    seen: list[str] = []
    k = tl["kernels"]
    lanes = sorted(set(k["stream"]))
    by_class: dict[str, list[int]] = {}
    for i, n in enumerate(k["name"]):
        by_class.setdefault(tl["classes"][n], []).append(i)
    data: list[dict[str, Any]] = []
    for cls, idx in sorted(by_class.items()):
        data.append({
            "type": "bar", "orientation": "h", "name": cls, "marker": {"color": class_color(cls, seen)},
            "base": [k["start_ms"][i] for i in idx], "x": [k["dur_ms"][i] for i in idx],
            "y": [f"stream {k['stream'][i]}" for i in idx],
            "customdata": [[tl["names"][k["name"][i]][:120], k["event"][i]] for i in idx],
            "hovertemplate": "%{customdata[0]}<br>%{base:.3f} ms +%{x:.4f} ms · event #%{customdata[1]}<extra>"
                             + cls + "</extra>",
        })
    ranges = tl["ranges"]
    data.append({
        "type": "bar", "orientation": "h", "name": "ranges", "showlegend": False,
        "base": [r["start_ms"] for r in ranges], "x": [r["end_ms"] - r["start_ms"] for r in ranges],
        "y": ["ranges"] * len(ranges), "text": [r["phase"] or r["name"] for r in ranges], "textposition": "inside",
        "marker": {"color": "rgba(120,120,120,0.25)", "line": {"color": "#555", "width": 1}},
        "customdata": [[r["name"], r["event"]] for r in ranges],
        "hovertemplate": "%{customdata[0]}: %{x:.3f} ms · event #%{customdata[1]}<extra></extra>",
    })
    layout = {**LAYOUT, "barmode": "overlay", "hovermode": "closest", "bargap": 0.3,
              "title": {"text": f"Cycle {tl['cycle']} on GPU {tl['device']} ({tl['ms']:.2f} ms)"},
              "xaxis": {"title": {"text": "ms from the cycle's first range"}},
              "yaxis": {"categoryorder": "array",
                        "categoryarray": [f"stream {s}" for s in reversed(lanes)] + ["ranges"]},
              "height": 260 + 40 * len(lanes)}
    return _plain(data, layout)


def class_deltas(trace: dict) -> dict | None:
    """Per compared run, the change of each phase by kernel class against the baseline (ms per cycle)."""
    data = []
    seen: list[str] = []
    rows = [(r, d) for r in trace["runs"] for d in r["deltas"]]
    if not rows:
        return None
    x = [f"{r['name']} · {d['phase']}" for r, d in rows]
    classes = sorted({c for _, d in rows for c in d["by_class"]})
    for cls in classes:
        data.append({"type": "bar", "name": cls, "x": x, "y": [d["by_class"].get(cls, 0.0) for _, d in rows],
                     "marker": {"color": class_color(cls, seen)}})
    data.append({"type": "bar", "name": IDLE, "x": x, "y": [d["wall_ms"] - d["busy_ms"] for _, d in rows],
                 "marker": {"color": "#bbbbbb"}})
    layout = {**LAYOUT, "barmode": "relative", "hovermode": "closest",
              "title": {"text": "Change per phase by kernel class vs the baseline"},
              "yaxis": {"title": {"text": "Δ ms per cycle"}}}
    return _plain(data, layout)
