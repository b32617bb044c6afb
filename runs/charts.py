"""Plotly figures as plain dicts (json_script-embedded, drawn by static/runlens/app.js).

Pure: they take lists the views fetched and return figure dicts; tested without a database.
Names that come from logs or users go into traces as data; plotly.js renders them as text.

Every number a label or a hover shows is written here by runs/display.py and handed to plotly as
text (`%{text}`): plotly's own `%{y:.2f}` rounds the binary value (4.255 -> "4.25") where the page
beside the chart says 4.26.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from functools import cache
from typing import Any, Protocol

import plotly.graph_objects as go
import plotly.io as pio

from runs.display import figure, signed

# Colour per well-known phase, so the same phase looks the same on every chart.
PHASE_COLORS = {
    "Draft": "#7aa6d8",
    "Target verify": "#d8664f",
    "Accept": "#8cc084",
    "Target forward": "#d8664f",
}
# Ten colours that stay apart for colour-blind readers too; past ten runs the dash pattern changes.
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f",
           "#ff9da7", "#7f7f7f"]
DASHES = ["solid", "dash", "dot", "dashdot"]
TEMPLATE = "plotly_white"
# Every figure's layout. The template is added to the finished JSON (`_json`), not through
# plotly: validating it costs about 0.25 s a figure, and a page draws several.
LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13},
    "legend": {"orientation": "h", "y": -0.2},
    "hovermode": "x unified",
}


@cache
def _template() -> dict:
    return pio.templates[TEMPLATE].to_plotly_json()


def _json(fig: go.Figure) -> dict:
    """The figure as plotly.js takes it, with the template."""
    out = fig.to_plotly_json()
    out["layout"]["template"] = _template()
    return out


def _plain(traces: list[dict], layout: dict) -> dict:
    """A figure of plain dicts, as `_json` gives, without plotly's validation: the figures whose
    size grows with the runs (thousands of points, 20 runs) are built this way."""
    return {"data": traces, "layout": {**layout, "template": _template()}}


def scatter(**trace: Any) -> dict:
    """A scatter trace as a plain dict (what go.Scatter(...).to_plotly_json() gives, unvalidated)."""
    return {**trace, "type": "scatter"}


class PhaseRow(Protocol):
    # Read-only: model rows and the stored series' named tuples (runs.queries.ChartRow) both fit.
    @property
    def logfile_id(self) -> int | None: ...  # a phase row always has its log file; kept optional for callers
    @property
    def name(self) -> str: ...
    @property
    def window(self) -> int: ...
    @property
    def ms(self) -> float: ...
    @property
    def line(self) -> int | None: ...


def phase_color(name: str, index: int) -> str:
    return PHASE_COLORS.get(name, PALETTE[index % len(PALETTE)])


def run_line(index: int) -> dict:
    """The i-th compared run's line: its own colour, and a dash pattern once the palette repeats."""
    return {"color": PALETTE[index % len(PALETTE)], "dash": DASHES[(index // len(PALETTE)) % len(DASHES)]}


def legend_on_top(count: int) -> tuple[dict, int]:
    """A horizontal legend above the plot and the top margin its rows need (about 4 names a row),
    so 20 runs' names never sit on the traces."""
    rows = max(1, (count + 3) // 4)
    return {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}, 50 + 22 * rows


def phase_timeline(rows: Iterable[PhaseRow], file_label: str = "") -> dict:
    """Stacked area of each phase's ms per cycle over the run's windows, hover shows the line."""
    by_phase: dict[str, list[PhaseRow]] = {}
    for r in rows:
        by_phase.setdefault(r.name, []).append(r)
    traces = [scatter(
        customdata=[[s.logfile_id, s.line] for s in samples],  # a click opens this log line
        hovertemplate="%{text} ms/cycle · line %{customdata[1]}<extra>%{fullData.name}</extra>",
        line={"color": phase_color(name, i)}, mode="lines+markers", name=name, stackgroup="phases",
        text=[figure(s.ms, "ms") for s in samples], x=[s.window for s in samples], y=[s.ms for s in samples],
    ) for i, (name, samples) in enumerate(by_phase.items())]
    return _plain(traces, {
        **LAYOUT, "title": {"text": f"Phase time per cycle over the run{file_label}", "font": {"size": 15}},
        "xaxis": {"title": {"text": "window"}}, "yaxis": {"title": {"text": "ms per cycle"}},
    })


def _label(name: str, is_base: bool) -> str:
    return f"{name} (baseline)" if is_base else name


def cycle_breakdown(result: dict) -> dict:
    """One stacked horizontal bar per run of phase ms/cycle, baseline on top, labelled ms and %."""
    runs = result["runs"]
    labels = [_label(r["name"], r["id"] == result["baseline"]) for r in runs]
    traces = []
    for i, row in enumerate(result["phases"]):
        cells = [row["runs"][r["id"]] for r in runs]
        traces.append({
            "hovertemplate": "%{y}<br>%{text}<extra>%{fullData.name}</extra>",
            "insidetextanchor": "middle", "marker": {"color": phase_color(row["name"], i)}, "name": row["name"],
            "orientation": "h",
            "text": [f"{figure(c['ms'], 'ms')} ms · {figure(c['pct'], 'pct')}%" if c["ms"] and c["pct"] is not None
                     else (f"{figure(c['ms'], 'ms')} ms" if c["ms"] else "") for c in cells],
            "textposition": "inside", "x": [c["ms"] or 0 for c in cells], "y": labels, "type": "bar",
        })
    legend = {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0, "traceorder": "normal"}
    margin = {**LAYOUT["margin"], "b": 40, "t": 90}
    return _plain(traces, {
        **LAYOUT, "hovermode": "closest", "margin": margin, "legend": legend, "barmode": "stack",
        "xaxis": {"title": {"text": "ms per cycle"}}, "height": 180 + 60 * len(runs),
        "title": {"text": "Cycle breakdown (ms per cycle)", "font": {"size": 15}, "y": 0.97},
        "yaxis": {"autorange": "reversed", "automargin": True},
    })


def phase_deltas(result: dict) -> dict:
    """Where the time went: each phase's ms/cycle change against the baseline, per run."""
    runs = [r for r in result["runs"] if r["id"] != result["baseline"]]
    # Only phases with a delta somewhere: a phase the baseline lacks has nothing to compare.
    rows = [row for row in result["phases"] if any(row["runs"][r["id"]]["delta_ms"] is not None for r in runs)]
    traces = []
    names = [row["name"] for row in rows]
    for i, r in enumerate(runs):
        deltas = [row["runs"][r["id"]]["delta_ms"] for row in rows]
        traces.append({
            "cliponaxis": False, "hovertemplate": "%{y}: %{text}<extra>%{fullData.name}</extra>",
            "marker": {"color": [("#c53030" if (d or 0) > 0 else "#2f855a") for d in deltas],
                       "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}},
            "name": r["name"], "orientation": "h",
            "text": [f"{signed(d, 'ms')} ms/cyc" if d is not None else "" for d in deltas], "textposition": "auto",
            "x": [d or 0 for d in deltas], "y": names, "type": "bar",
        })
    legend = {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}
    margin = {**LAYOUT["margin"], "t": 60 + 22 * ((len(runs) + 1) // 2), "r": 90}
    return _plain(traces, {
        **LAYOUT, "hovermode": "closest", "legend": legend, "margin": margin, "barmode": "group",
        "title": {"text": "Where the time went (vs baseline)", "font": {"size": 15}, "y": 0.97},
        "xaxis": {"title": {"text": "Δ ms per cycle (red = slower)"}, "zeroline": True, "zerolinewidth": 2,
                  "zerolinecolor": "#555"},
        "height": 200 + 28 * max(1, len(names)) * max(1, len(runs)),
        "yaxis": {"autorange": "reversed", "automargin": True},
    })


def over_the_run(runs: list, key: str, title: str, unit: str) -> dict:
    """One trace per run of a per-window series (already downsampled), hover names the line."""
    traces = [scatter(
        customdata=[[p[3] if len(p) > 3 else None, p[2]] for p in points],  # a click opens this log line
        hovertemplate=f"%{{text}} {unit} · line %{{customdata[1]}}<extra>%{{fullData.name}}</extra>",
        line=run_line(i), marker={"size": 5}, mode="lines+markers", name=name,
        text=[figure(p[1], key) for p in points], x=[p[0] for p in points], y=[p[1] for p in points],
    ) for i, (name, points) in enumerate(runs)]
    legend, top = legend_on_top(len(runs))
    return _plain(traces, {
        **LAYOUT, "legend": legend, "margin": {**LAYOUT["margin"], "t": top + 30},
        "title": {"text": title, "font": {"size": 15}, "y": 0.98}, "xaxis": {"title": {"text": "window"}},
        "yaxis": {"title": {"text": unit}}, "height": 300 + top, "showlegend": True,
    })


def collectives(runs: list) -> dict:
    """nccl-tests bus bandwidth against message size (log x), out-of-place and in-place per run."""
    traces = []
    for i, (name, rows) in enumerate(runs):
        for in_place, dash in ((False, "solid"), (True, "dot")):
            side = [c for c in rows if c["in_place"] == in_place and c["busbw_gbs"] is not None]
            if not side:
                continue
            traces.append(scatter(
                hovertemplate="%{x} B: %{text} GB/s<extra>%{fullData.name}</extra>",
                line={"color": PALETTE[i % len(PALETTE)], "dash": dash},  # dash tells the two sides apart
                mode="lines+markers", name=f"{name} · {'in-place' if in_place else 'out-of-place'}",
                text=[figure(c["busbw_gbs"], "gbs") for c in side],
                x=[c["size_bytes"] for c in side], y=[c["busbw_gbs"] for c in side],
            ))
    return _plain(traces, {
        **LAYOUT, "title": {"text": "Collectives: bus bandwidth vs message size", "font": {"size": 15}},
        "xaxis": {"title": {"text": "message size (bytes)"}, "type": "log"},
        "yaxis": {"title": {"text": "bus bandwidth (GB/s)"}}, "height": 380,
    })


def acceptance_curve(name: str, curve: dict) -> dict:
    """Throughput against per-position acceptance for k = 1..5 at this run's cycle time."""
    traces = [scatter(
        hovertemplate="%{text}<extra>%{fullData.name}</extra>",
        line={"color": PALETTE[i % len(PALETTE)]}, mode="lines", name=f"k = {s['steps']}",
        text=[f"p = {figure(p, 'p')}: {figure(t, 'tok_s')} tok/s" for p, t in zip(s["p"], s["throughput_tok_s"],
                                                                                strict=True)],
        x=s["p"], y=s["throughput_tok_s"],
    ) for i, s in enumerate(curve["series"])]
    shapes, notes = [], []
    for value, label, dash in ((curve.get("baseline_tok_s"), "baseline", "dash"),
                               (curve.get("target_tok_s"), "target", "dot")):
        if value:  # what plotly's add_hline makes: a line across the plot, its label at the right
            shapes.append({"line": {"color": "#555", "dash": dash}, "type": "line", "x0": 0, "x1": 1,
                           "xref": "x domain", "y0": value, "y1": value, "yref": "y"})
            notes.append({"showarrow": False, "text": f"{label} {figure(value, 'tok_s')} tok/s", "x": 1,
                          "xanchor": "right", "xref": "x domain", "y": value, "yanchor": "bottom", "yref": "y"})
    point = curve.get("run_point") or {}
    if point.get("p") is not None:
        traces.append(scatter(
            hovertemplate="measured: %{text}<extra></extra>",
            marker={"color": "#c53030", "size": 13, "symbol": "diamond"}, mode="markers",
            name=f"{name} (measured)", x=[point["p"]], y=[point["throughput_tok_s"]],
            text=[f"p ≈ {figure(point['p'], 'p')}, {figure(point['throughput_tok_s'], 'tok_s')} tok/s"],
        ))
    extra: dict[str, Any] = {"shapes": shapes, "annotations": notes} if shapes else {}
    return _plain(traces, {
        **LAYOUT, "hovermode": "closest", "height": 380, **extra,
        "title": {"text": f"{name}: throughput vs acceptance at {figure(curve['cycle_ms'], 'ms')} ms/cycle",
                  "font": {"size": 15}},
        "xaxis": {"title": {"text": "per-position acceptance p"}}, "yaxis": {"title": {"text": "tok/s"}},
    })


# Per-window series on the comparison page: key -> (chart title, unit).
SERIES = {
    "throughput_tok_s": ("Throughput over the run", "tok/s"),
    "tokens_per_cycle": ("Tokens per cycle over the run", "tokens/cycle"),
    "verify_ms": ("Target verify ms/cycle over the run", "ms/cyc"),
}


SWEEP_METRICS = {
    "throughput_tok_s": ("Throughput vs draft steps", "tok/s"),
    "tokens_per_cycle": ("Tokens per cycle vs draft steps", "tokens/cycle"),
    "cycle_ms": ("Cycle time vs draft steps", "ms"),
    "verify_ms": ("Target verify vs draft steps", "ms/cycle"),
}


def sweep_chart(result: dict, key: str) -> dict:
    """One figure per metric: each group's measured points against the step count, the best
    point starred, the fitted prediction dashed with its band (throughput, tokens per cycle),
    the no-speculation baseline a horizontal line (throughput)."""
    title, unit = SWEEP_METRICS[key]
    fig = go.Figure()
    predicted_key = {"throughput_tok_s": "throughput_tok_s", "tokens_per_cycle": "tokens_per_cycle",
                     "cycle_ms": "cycle_ms"}.get(key)
    for i, g in enumerate(result["groups"]):
        color = PALETTE[i % len(PALETTE)]
        points = [p for p in g["points"] if p[key] is not None]
        fig.add_trace(go.Scatter(
            x=[p["steps"] for p in points], y=[p[key] for p in points], name=g["label"], mode="markers+lines",
            marker={"color": color, "size": 9}, line={"color": color},
            customdata=[[p["name"], p["run_id"]] for p in points], text=[figure(p[key], key) for p in points],
            hovertemplate="%{customdata[0]}: %{text} " + unit + "<extra>%{fullData.name}</extra>",
        ))
        curve = g["fit"]["curve"]
        if curve and predicted_key:
            xs = [c["steps"] for c in curve]
            if key == "throughput_tok_s":
                fig.add_trace(go.Scatter(
                    x=xs + xs[::-1], y=[c["high_tok_s"] for c in curve] + [c["low_tok_s"] for c in curve][::-1],
                    fill="toself", fillcolor=color, opacity=0.15, line={"width": 0}, hoverinfo="skip",
                    name=f"{g['label']} band", showlegend=False,
                ))
            fig.add_trace(go.Scatter(
                x=xs, y=[c[predicted_key] for c in curve], name=f"{g['label']} predicted", mode="lines",
                line={"color": color, "dash": "dash"}, text=[figure(c[predicted_key], key) for c in curve],
                hovertemplate="predicted %{text} " + unit + "<extra>%{fullData.name}</extra>",
            ))
        best = g["best"]
        if key == "throughput_tok_s":
            fig.add_trace(go.Scatter(
                x=[best["steps"]], y=[best[key]], name=f"{g['label']} best", mode="markers",
                marker={"symbol": "star", "size": 18, "color": color, "line": {"color": "#222", "width": 1}},
                customdata=[[best["name"]]], text=[figure(best[key], key)],
                hovertemplate="best: %{customdata[0]} %{text} tok/s<extra></extra>",
            ))
    if key == "throughput_tok_s":
        seen = set()
        for g in result["groups"]:
            b = g["baseline"]
            if b and b["run_id"] not in seen:
                seen.add(b["run_id"])
                fig.add_hline(y=b["throughput_tok_s"], line={"dash": "dot", "color": "#555"},
                              annotation_text=f"no speculation {figure(b['throughput_tok_s'], 'tok_s')} tok/s")
    fig.update_layout(**{**LAYOUT, "hovermode": "closest"}, title={"text": title, "font": {"size": 15}},
                      xaxis={"title": "draft steps", "dtick": 1}, yaxis_title=unit)
    return _json(fig)


def trend_chart(result: dict) -> dict:
    """The figure run after run: a line through every point (click one to open its run),
    regressions beyond the noise as red crosses, annotations as markers above their run."""
    points = result["points"]
    xs = list(range(1, len(points) + 1))
    labels = [p["label"] for p in points]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=xs, y=[p["value"] for p in points], name=result["label"], mode="lines+markers",
        line={"color": PALETTE[0]}, marker={"size": 8},
        customdata=[[f"/runs/{p['run_id']}/", p["name"], p["nccl_status"]] for p in points],
        text=[figure(p["value"], result["metric"]) for p in points],
        hovertemplate="%{customdata[1]}<br>%{text} " + result["unit"] + " · NCCL %{customdata[2]}<extra></extra>",
    ))
    flagged = [(x, p) for x, p in zip(xs, points, strict=True) if p["flag"] == "regression"]
    if flagged:
        fig.add_trace(go.Scatter(
            x=[x for x, _ in flagged], y=[p["value"] for _, p in flagged], name="regression", mode="markers",
            marker={"symbol": "x", "size": 14, "color": "#c0392b"},
            customdata=[[f"/runs/{p['run_id']}/", p["name"], signed(p["delta_pct"], "pct")] for _, p in flagged],
            hovertemplate="%{customdata[1]}: %{customdata[2]}% beyond the noise<extra>regression</extra>",
        ))
    noted = [(x, p) for x, p in zip(xs, points, strict=True) if p["annotations"]]
    if noted:
        top = max(p["value"] for p in points)
        fig.add_trace(go.Scatter(
            x=[x for x, _ in noted], y=[top * 1.04] * len(noted), name="annotations", mode="markers",
            marker={"symbol": "triangle-down", "size": 12, "color": PALETTE[1]},
            customdata=[[f"/runs/{p['run_id']}/", " / ".join(a["body"][:80] for a in p["annotations"][:3])]
                        for _, p in noted],
            hovertemplate="%{customdata[1]}<extra>annotation</extra>",
        ))
    fig.update_layout(**{**LAYOUT, "hovermode": "closest"},
                      title={"text": f"{result['label']} over time", "font": {"size": 15}},
                      xaxis={"title": "run (commit order)", "tickmode": "array", "tickvals": xs, "ticktext": labels},
                      yaxis_title=result["unit"])
    return _json(fig)
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
