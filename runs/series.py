"""What the run and comparison pages chart, kept per run at ingest (`Run.series`).

A 100k-window run has millions of rows; a chart has a few hundred pixels across. At the end of
each parse `store_series` reads the rows once, streaming (`values_list().iterator()`, never a
model instance per row, memory bounded by the bucket size), and keeps for each figure a
min/max-bucket thinning: every kept point keeps its window, its log line and its log file, so
a point on screen still opens its line. Pages read these; only a zoomed window range reads rows
(`phase_rows_between`, `figure_rows_between`), capped at ZOOM_MAX_WINDOWS.

The thinning itself (`Thinner`, `downsample`, `PhaseThinner`) is pure and tested without a database.

Stored shape (`SERIES_VERSION` 1):
    {"v": 1,
     "phases": {"windows": n, "names": [...], "first": {name: [logfile, line]},
                "rows": [[logfile, window, name, ms, line], ...]},         # the run page's stacked chart
     "figures": {key: {"source": s, "count": n, "spread": x,      # at most FIGURE_POINTS points
                       "points": [[x, value, line, logfile, window], ...]}},  # x: position 1..n in the run
     "spread": {key: x},                                          # the figures' noise alone (the API's)
     "files": [[logfile, parsed_at, status], ...]}                # what they were computed from
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import QuerySet

from runs.models import LogFile, MetricSample, PhaseSample
from runs.summary import source_rank, spread

SERIES_VERSION = 2
MAX_POINTS = 1000  # per trace of the run page's phase chart: about the pixels across a chart
# Per trace of the comparison's charts (compare.MAX_POINTS): up to 20 runs share a chart there,
# and nothing else reads these points, so they are kept at that size (no thinning per request).
FIGURE_POINTS = 400
ZOOM_MAX_WINDOWS = 2000  # a zoom reads at most this many windows of rows per trace
CHUNK = 5000  # rows per fetch while streaming
# Per-window figures: key -> metric row names (several: SGLang's decode line says "gen throughput").
# verify_ms comes from phase rows (any phase whose name says verify), the others from metric rows.
FIGURE_METRICS = {
    "throughput_tok_s": ("throughput_tok_s", "gen_throughput_tok_s"),
    "tokens_per_cycle": ("tokens_per_cycle",),
    "cycle_ms": ("cycle_ms",),
}
VERIFY = "verify_ms"


# ---- pure thinning ---------------------------------------------------------------------------

class Thinner:
    """Min/max buckets over a stream whose length is known up front: each bucket keeps its
    lowest and highest point (spikes survive), in stream order; the first and last points are
    always kept (a trace spans the whole run). At most `limit` points come out; a stream of
    `limit` points or fewer comes out unchanged."""

    def __init__(self, total: int, limit: int = MAX_POINTS, value: int = 1) -> None:
        self.total, self.value, self.keep_all = total, value, total <= limit
        buckets = max(1, (limit - 2) // 2)
        self.size = max(1, math.ceil(total / buckets))
        self.out: list[Sequence[Any]] = []
        self.seen = 0
        self.low: tuple[int, Sequence[Any]] | None = None
        self.high: tuple[int, Sequence[Any]] | None = None

    def add(self, point: Sequence[Any]) -> None:
        i = self.seen
        self.seen += 1
        if self.keep_all:
            self.out.append(point)
            return
        if i == 0:
            self.out.append(point)
        elif i == self.total - 1:
            self._flush()
            self.out.append(point)
            return
        else:
            v = point[self.value]
            # Strict comparisons: of equal values the first one stays (as a stable sort would).
            if self.low is None or v < self.low[1][self.value]:
                self.low = (i, point)
            if self.high is None or v > self.high[1][self.value]:
                self.high = (i, point)
        if (i + 1) % self.size == 0:
            self._flush()

    def _flush(self) -> None:
        kept = dict(x for x in (self.low, self.high) if x is not None)
        self.out += [kept[i] for i in sorted(kept)]
        self.low = self.high = None

    def points(self) -> list[Sequence[Any]]:
        self._flush()
        return self.out


def downsample(points: Sequence[Sequence[Any]], limit: int = MAX_POINTS, value: int = 1) -> list:
    """`points` thinned to at most `limit` (min and max of each bucket, first and last kept)."""
    if len(points) <= limit:
        return list(points)
    thinner = Thinner(len(points), limit, value)
    for p in points:
        thinner.add(p)
    return list(thinner.points())


class PhaseThinner:
    """The run page's stacked phase chart: every phase must share its x values (a stacked area
    with holes drops to zero), so whole windows are kept: in each bucket of windows, the windows
    holding each phase's lowest and highest ms, with all their rows. A trace then has at most
    `limit` points whatever the number of phases. Windows come as lists of rows
    (logfile, window, name, ms, line) in the run's order."""

    def __init__(self, windows: int, phases: int, limit: int = MAX_POINTS) -> None:
        self.keep_all = windows <= limit
        buckets = max(1, (limit - 2) // (2 * max(1, phases)))
        self.size = max(1, math.ceil(windows / buckets))
        self.total = windows
        self.rows: list[Sequence[Any]] = []
        self.seen = 0
        # phase -> (its ms, the window's position, the window's rows)
        self.low: dict[str, tuple[float, int, list]] = {}
        self.high: dict[str, tuple[float, int, list]] = {}

    def add(self, window: list[Sequence[Any]]) -> None:
        i = self.seen
        self.seen += 1
        if self.keep_all or i == 0:
            self.rows += window
        elif i == self.total - 1:
            self._flush()
            self.rows += window
            return
        else:
            for row in window:
                name, ms = row[2], row[3]
                if name not in self.low or ms < self.low[name][0]:
                    self.low[name] = (ms, i, window)
                if name not in self.high or ms > self.high[name][0]:
                    self.high[name] = (ms, i, window)
        if not self.keep_all and (i + 1) % self.size == 0:
            self._flush()

    def _flush(self) -> None:
        kept = {i: w for _, i, w in (*self.low.values(), *self.high.values())}
        for i in sorted(kept):
            self.rows += kept[i]
        self.low, self.high = {}, {}

    def result(self) -> list[Sequence[Any]]:
        self._flush()
        return self.rows


def thin_phases(rows: Iterable[Sequence[Any]], windows: int, phases: int, limit: int = MAX_POINTS) -> list:
    """Phase rows (logfile, window, name, ms, line) in (logfile, window) order, whole windows kept."""
    thinner = PhaseThinner(windows, phases, limit)
    current: list[Sequence[Any]] = []
    for row in rows:
        if current and (row[0], row[1]) != (current[0][0], current[0][1]):
            thinner.add(current)
            current = []
        current.append(row)
    if current:
        thinner.add(current)
    return [list(r) for r in thinner.result()]


# ---- reading the rows (bounded memory) -------------------------------------------------------

def _stream(rows: QuerySet, *fields: str) -> Iterable[tuple]:
    return rows.values_list(*fields).iterator(chunk_size=CHUNK)


def compute_series(run_id: int, limit: int = MAX_POINTS) -> dict:
    """Every charted figure of a run, thinned, from its stored rows (a few streaming queries)."""
    figures = _figures(run_id, min(limit, FIGURE_POINTS))
    return {"v": SERIES_VERSION, "phases": _phases(run_id, limit), "figures": figures,
            # Each figure's noise on its own: the comparison API reads only this.
            "spread": {key: f["spread"] for key, f in figures.items()}}


def _phases(run_id: int, limit: int) -> dict:
    rows = PhaseSample.objects.filter(run_id=run_id)
    windows = rows.values("logfile_id", "window").distinct().count()
    if not windows:
        return {"windows": 0, "names": [], "first": {}, "rows": []}
    names: list[str] = []
    first: dict[str, list] = {}

    def read() -> Iterable[tuple]:
        for row in _stream(rows.order_by("logfile_id", "window", "id"), "logfile_id", "window", "name", "ms", "line"):
            if row[2] not in first:
                names.append(row[2])
                first[row[2]] = [row[0], row[4]]
            yield row

    count = rows.values("name").distinct().count()
    kept = thin_phases(read(), windows, count, limit)
    return {"windows": windows, "names": names, "first": first, "rows": kept}


def best_source(rows: QuerySet) -> str | None:
    """The source the summary believes first among these metric rows (of equal rank, the one
    whose first row comes first in the run: the order the rows would be read in)."""
    sources = set(rows.values_list("source", flat=True).distinct())
    if not sources:
        return None
    top = min(source_rank(s) for s in sources)
    tied = sorted(s for s in sources if source_rank(s) == top)
    if len(tied) == 1:
        return tied[0]
    firsts = {s: rows.filter(source=s).order_by("logfile_id", "window", "id").values_list(
        "logfile_id", "window", "id").first() for s in tied}
    return min(tied, key=lambda s: firsts[s] or (0, 0, 0))


def figure_rows(run_id: int, key: str, source: str | None = None) -> QuerySet | None:
    """The rows behind one per-window figure, in the run's order (None for an unknown key)."""
    if key == VERIFY:
        phases = PhaseSample.objects.filter(run_id=run_id, name__icontains="verify")
        return phases.order_by("logfile_id", "window", "id")
    if key not in FIGURE_METRICS:
        return None
    rows = MetricSample.objects.filter(run_id=run_id, name__in=FIGURE_METRICS[key])
    source = source or best_source(rows)
    return None if source is None else rows.filter(source=source).order_by("logfile_id", "window", "id")


def _value(key: str) -> str:
    return "ms" if key == VERIFY else "value"


def _figures(run_id: int, limit: int) -> dict:
    out = {}
    for key in (*FIGURE_METRICS, VERIFY):
        source = None if key == VERIFY else best_source(
            MetricSample.objects.filter(run_id=run_id, name__in=FIGURE_METRICS[key]))
        rows = figure_rows(run_id, key, source)
        if rows is None:
            continue
        count = rows.count()
        if not count:
            continue
        thinner = Thinner(count, limit)
        values = array("d")
        for x, (value, line, logfile, window) in enumerate(_stream(rows, _value(key), "line", "logfile_id", "window"),
                                                           start=1):
            values.append(value)
            thinner.add([x, value, line, logfile, window])
        out[key] = {"source": source, "count": count, "spread": spread(list(values)),
                    "points": [list(p) for p in thinner.points()]}
    return out


def _files(run_id: int) -> list[list]:
    """What the rows depend on: each log file and when it was last parsed."""
    return [[i, at.isoformat() if at else None, status] for i, at, status in
            LogFile.objects.filter(run_id=run_id).order_by("id").values_list("id", "parsed_at", "status")]


def fresh_series(run: Any) -> dict:
    """The run's series for refresh_run: kept as they are when no log file was parsed since
    (an annotation refreshes the summary, not the rows), else computed again."""
    files = _files(run.id)
    stored = getattr(run, "series", None)
    if isinstance(stored, dict) and stored.get("v") == SERIES_VERSION and stored.get("files") == files:
        return stored
    return {**compute_series(run.id), "files": files}


def run_series(run: Any) -> dict:
    """The run's stored series, or computed now for a run parsed before they were kept."""
    stored = getattr(run, "series", None)
    if isinstance(stored, dict) and stored.get("v") == SERIES_VERSION:
        return stored
    return compute_series(run.id)


def zoom_span(lo: int, hi: int) -> tuple[int, int]:
    """A zoom's window range, capped at ZOOM_MAX_WINDOWS from its start."""
    lo = max(1, lo)
    return lo, max(lo, min(hi, lo + ZOOM_MAX_WINDOWS - 1))


def phase_rows_between(run_id: int, lo: int, hi: int) -> list[list]:
    """Every phase row of windows lo..hi (capped), as the stored rows are."""
    lo, hi = zoom_span(lo, hi)
    rows = PhaseSample.objects.filter(run_id=run_id, window__gte=lo, window__lte=hi).order_by(
        "logfile_id", "window", "id")
    return [list(r) for r in rows.values_list("logfile_id", "window", "name", "ms", "line")]


def figure_rows_between(run_id: int, key: str, source: str | None, lo: int, hi: int) -> list[list]:
    """Every point of one figure at positions lo..hi of the run (capped): exact rows, no thinning."""
    lo, hi = zoom_span(lo, hi)
    rows = figure_rows(run_id, key, source)
    if rows is None:
        return []
    found = rows.values_list(_value(key), "line", "logfile_id", "window")[lo - 1:hi]
    return [[x, value, line, logfile, window] for x, (value, line, logfile, window) in enumerate(found, start=lo)]
