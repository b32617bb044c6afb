"""Plotly figures as plain dicts (json_script-embedded, drawn by static/runlens/app.js).

Pure: they take lists the views fetched and return figure dicts; tested without a database.
Names that come from logs or users go into traces as data; plotly.js renders them as text.
"""

from __future__ import annotations

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
