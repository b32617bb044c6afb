"""Plotly figures as plain dicts (json_script-embedded, drawn by static/runlens/app.js).

Pure: they take lists the views fetched and return figure dicts; tested without a database.
Names that come from logs or users go into traces as data; plotly.js renders them as text.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Protocol

import plotly.graph_objects as go

# Colour per well-known phase, so the same phase looks the same on every chart.
PHASE_COLORS = {
    "Draft": "#7aa6d8",
    "Target verify": "#d8664f",
    "Accept": "#8cc084",
    "Target forward": "#d8664f",
}
PALETTE = ["#6f5fb5", "#e0a93b", "#4aa3a2", "#b85c9e", "#7f7f7f", "#9c6b3f"]
LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13},
    "legend": {"orientation": "h", "y": -0.2},
    "hovermode": "x unified",
}


class PhaseRow(Protocol):
    name: str
    window: int
    ms: float
    line: int | None


def phase_color(name: str, index: int) -> str:
    return PHASE_COLORS.get(name, PALETTE[index % len(PALETTE)])


def phase_timeline(rows: Iterable[PhaseRow], file_label: str = "") -> dict:
    """Stacked area of each phase's ms per cycle over the run's windows, hover shows the line."""
    by_phase: dict[str, list[PhaseRow]] = {}
    for r in rows:
        by_phase.setdefault(r.name, []).append(r)
    fig = go.Figure()
    for i, (name, samples) in enumerate(by_phase.items()):
        fig.add_trace(go.Scatter(
            x=[s.window for s in samples], y=[s.ms for s in samples], name=name,
            mode="lines+markers", stackgroup="phases", line={"color": phase_color(name, i)},
            customdata=[s.line for s in samples],
            hovertemplate="%{y:.2f} ms/cycle · line %{customdata}<extra>%{fullData.name}</extra>",
        ))
    fig.update_layout(
        **LAYOUT,
        title={"text": f"Phase time per cycle over the run{file_label}", "font": {"size": 15}},
        xaxis_title="window", yaxis_title="ms per cycle",
    )
    return fig.to_plotly_json()


def _label(name: str, is_base: bool) -> str:
    return f"{name} (baseline)" if is_base else name


def cycle_breakdown(result: dict) -> dict:
    """One stacked horizontal bar per run of phase ms/cycle, baseline on top, labelled ms and %."""
    runs = result["runs"]
    labels = [_label(r["name"], r["id"] == result["baseline"]) for r in runs]
    fig = go.Figure()
    for i, row in enumerate(result["phases"]):
        cells = [row["runs"][r["id"]] for r in runs]
        fig.add_trace(go.Bar(
            y=labels, x=[c["ms"] or 0 for c in cells], name=row["name"], orientation="h",
            marker={"color": phase_color(row["name"], i)},
            text=[f"{c['ms']:.2f} ms · {c['pct']:.0f}%" if c["ms"] and c["pct"] is not None
                  else (f"{c['ms']:.2f} ms" if c["ms"] else "") for c in cells],
            textposition="inside", insidetextanchor="middle",
            hovertemplate="%{y}<br>%{x:.2f} ms/cycle<extra>%{fullData.name}</extra>",
        ))
    legend = {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0, "traceorder": "normal"}
    margin = {**LAYOUT["margin"], "b": 40, "t": 90}
    fig.update_layout(**{**LAYOUT, "hovermode": "closest", "margin": margin, "legend": legend},
                      barmode="stack", xaxis_title="ms per cycle", height=180 + 60 * len(runs),
                      title={"text": "Cycle breakdown (ms per cycle)", "font": {"size": 15}, "y": 0.97})
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig.to_plotly_json()


def phase_deltas(result: dict) -> dict:
    """Where the time went: each phase's ms/cycle change against the baseline, per run."""
    runs = [r for r in result["runs"] if r["id"] != result["baseline"]]
    # Only phases with a delta somewhere: a phase the baseline lacks has nothing to compare.
    rows = [row for row in result["phases"] if any(row["runs"][r["id"]]["delta_ms"] is not None for r in runs)]
    fig = go.Figure()
    names = [row["name"] for row in rows]
    for i, r in enumerate(runs):
        deltas = [row["runs"][r["id"]]["delta_ms"] for row in rows]
        fig.add_trace(go.Bar(
            y=names, x=[d or 0 for d in deltas], name=r["name"], orientation="h",
            marker={"color": [("#c53030" if (d or 0) > 0 else "#2f855a") for d in deltas],
                    "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}},
            text=[f"{d:+.2f} ms/cyc" if d is not None else "" for d in deltas], textposition="auto",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:+.2f} ms/cycle<extra>%{fullData.name}</extra>",
        ))
    legend = {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}
    margin = {**LAYOUT["margin"], "t": 60 + 22 * ((len(runs) + 1) // 2), "r": 90}
    fig.update_layout(**{**LAYOUT, "hovermode": "closest", "legend": legend, "margin": margin}, barmode="group",
                      title={"text": "Where the time went (vs baseline)", "font": {"size": 15}, "y": 0.97},
                      xaxis_title="Δ ms per cycle (red = slower)",
                      height=200 + 28 * max(1, len(names)) * max(1, len(runs)))
    fig.update_xaxes(zeroline=True, zerolinewidth=2, zerolinecolor="#555")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig.to_plotly_json()


def over_the_run(runs: list, key: str, title: str, unit: str) -> dict:
    """One trace per run of a per-window series (already downsampled), hover names the line."""
    fig = go.Figure()
    for i, (name, points) in enumerate(runs):
        fig.add_trace(go.Scatter(
            x=[p[0] for p in points], y=[p[1] for p in points], name=name, mode="lines+markers",
            line={"color": PALETTE[i % len(PALETTE)]}, marker={"size": 5},
            customdata=[p[2] for p in points],
            hovertemplate=f"%{{y:.2f}} {unit} · line %{{customdata}}<extra>%{{fullData.name}}</extra>",
        ))
    fig.update_layout(**LAYOUT, title={"text": title, "font": {"size": 15}}, xaxis_title="window",
                      yaxis_title=unit, height=340, showlegend=True)
    return fig.to_plotly_json()


def collectives(runs: list) -> dict:
    """nccl-tests bus bandwidth against message size (log x), out-of-place and in-place per run."""
    fig = go.Figure()
    for i, (name, rows) in enumerate(runs):
        for in_place, dash in ((False, "solid"), (True, "dot")):
            side = [c for c in rows if c["in_place"] == in_place and c["busbw_gbs"] is not None]
            if not side:
                continue
            fig.add_trace(go.Scatter(
                x=[c["size_bytes"] for c in side], y=[c["busbw_gbs"] for c in side],
                name=f"{name} · {'in-place' if in_place else 'out-of-place'}", mode="lines+markers",
                line={"color": PALETTE[i % len(PALETTE)], "dash": dash},
                hovertemplate="%{x} B: %{y:.2f} GB/s<extra>%{fullData.name}</extra>",
            ))
    fig.update_layout(**LAYOUT, title={"text": "Collectives: bus bandwidth vs message size", "font": {"size": 15}},
                      xaxis_title="message size (bytes)", yaxis_title="bus bandwidth (GB/s)", height=380)
    fig.update_xaxes(type="log")
    return fig.to_plotly_json()


def acceptance_curve(name: str, curve: dict) -> dict:
    """Throughput against per-position acceptance for k = 1..5 at this run's cycle time."""
    fig = go.Figure()
    for i, s in enumerate(curve["series"]):
        fig.add_trace(go.Scatter(
            x=s["p"], y=s["throughput_tok_s"], name=f"k = {s['steps']}", mode="lines",
            line={"color": PALETTE[i % len(PALETTE)]},
            hovertemplate="p = %{x:.2f}: %{y:.1f} tok/s<extra>%{fullData.name}</extra>",
        ))
    for value, label, dash in ((curve.get("baseline_tok_s"), "baseline", "dash"),
                               (curve.get("target_tok_s"), "target", "dot")):
        if value:
            fig.add_hline(y=value, line={"dash": dash, "color": "#555"}, annotation_text=f"{label} {value:.1f} tok/s")
    point = curve.get("run_point") or {}
    if point.get("p") is not None:
        fig.add_trace(go.Scatter(
            x=[point["p"]], y=[point["throughput_tok_s"]], name=f"{name} (measured)", mode="markers",
            marker={"size": 13, "color": "#c53030", "symbol": "diamond"},
            hovertemplate="measured: p ≈ %{x:.2f}, %{y:.1f} tok/s<extra></extra>",
        ))
    fig.update_layout(**{**LAYOUT, "hovermode": "closest"}, height=380,
                      title={"text": f"{name}: throughput vs acceptance at {curve['cycle_ms']:.2f} ms/cycle",
                             "font": {"size": 15}},
                      xaxis_title="per-position acceptance p", yaxis_title="tok/s")
    return fig.to_plotly_json()


# Per-window series on the comparison page: key -> (chart title, unit).
SERIES = {
    "throughput_tok_s": ("Throughput over the run", "tok/s"),
    "tokens_per_cycle": ("Tokens per cycle over the run", "tokens/cycle"),
    "verify_ms": ("Target verify ms/cycle over the run", "ms/cyc"),
}


class Note(Protocol):
    id: int
    window_from: int | None
    window_to: int | None
    phase: str
    body: str


def with_notes(fig: dict, notes: Iterable[Note], author: dict[int, str] | None = None, label: str = "",
               selectable: bool = True) -> dict:
    """Draw anchored notes on an over-the-run chart: a shaded band per window range, and a marker
    at its top whose hover is the note (escaped: plotly renders hover text as HTML-ish markup).

    The marker's customdata is the note id (app.js scrolls to `#note-<id>` on a click), and the
    chart is set to box-select (unless `selectable` is off) so dragging over windows starts a note.
    """
    fig = {**fig, "data": list(fig.get("data", [])), "layout": dict(fig.get("layout", {}))}
    shapes = list(fig["layout"].get("shapes", []))
    xs, texts, ids = [], [], []
    for n in notes:
        if n.window_from is None:
            continue
        low, high = n.window_from, n.window_to if n.window_to is not None else n.window_from
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": low - 0.5, "x1": high + 0.5,
                       "y0": 0, "y1": 1, "fillcolor": "#f6c344", "opacity": 0.18, "line": {"width": 0},
                       "layer": "below", "name": f"note-{n.id}"})
        who = (author or {}).get(n.id, "")
        head = f"{label}{who}: " if who or label else ""
        where = f"windows {low}–{high}" if high != low else f"window {low}"
        phase = f" · {n.phase}" if n.phase else ""
        text = n.body if len(n.body) <= 160 else n.body[:157] + "…"
        texts.append(html.escape(f"{head}{text}").replace("\n", "<br>") + f"<br><i>{html.escape(where + phase)}</i>")
        xs.append((low + high) / 2)
        ids.append(n.id)
    if xs:
        fig["data"].append({
            "type": "scatter", "x": xs, "y": [1.0] * len(xs), "yaxis": "y2", "mode": "markers+text",
            "text": ["✎"] * len(xs), "textposition": "top center", "name": "notes", "showlegend": False,
            "marker": {"size": 12, "color": "#b7791f", "symbol": "triangle-down"},
            "hovertext": texts, "hoverinfo": "text", "customdata": ids, "meta": "notes",
        })
        fig["layout"]["yaxis2"] = {"overlaying": "y", "range": [0, 1.08], "visible": False, "fixedrange": True}
    fig["layout"]["shapes"] = shapes
    if selectable:
        fig["layout"]["dragmode"] = "select"
        fig["layout"]["selectdirection"] = "h"
    return fig
