"""What the run and comparison pages chart, kept per run at ingest (`Run.series`).

A 100k-window run has millions of rows; a chart has a few hundred pixels across. At the end of
each parse `compute_series` reads the run's stored columns (runs/columns.py) a figure at a time
and keeps for each figure a min/max-bucket thinning: every kept point keeps its window, its log
line and its log file, so a point on screen still opens its line. Pages read these; only a
zoomed window range reads stored rows (`phase_rows_between`, `figure_rows_between`), capped at
ZOOM_MAX_WINDOWS; a phase zoom reads only the blocks whose windows meet its range.

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

import polars as pl

from runs import columns
from runs.columns import METRIC, PHASE
from runs.models import LogFile
from runs.summary import describe, source_rank, spread

SERIES_VERSION = 2
PHASE_CHART_POINTS = 1000  # per trace of the run page's phase chart: about the pixels across a chart
# Per trace of the figures (the comparison's charts "over the run"): up to 20 runs share a chart there,
# and nothing else reads these points, so they are kept at that size (no thinning per request).
FIGURE_POINTS = 400
ZOOM_MAX_WINDOWS = 2000  # a zoom reads at most this many windows of rows per trace
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

    def __init__(self, total: int, limit: int = PHASE_CHART_POINTS, value: int = 1) -> None:
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


def downsample(points: Sequence[Sequence[Any]], limit: int = PHASE_CHART_POINTS, value: int = 1) -> list:
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

    def __init__(self, windows: int, phases: int, limit: int = PHASE_CHART_POINTS) -> None:
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


def thin_phases(rows: Iterable[Sequence[Any]], windows: int, phases: int, limit: int = PHASE_CHART_POINTS) -> list:
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


def kept_positions(values: pl.Series, limit: int, size: int | None = None) -> pl.Series:
    """Thinner's choice over a whole column at once: the positions it keeps, in order (the first,
    the last, and in each bucket the first lowest and first highest of the positions between)."""
    total = len(values)
    if total <= limit:
        return pl.Series("at", range(total), dtype=pl.Int64)
    size = size or max(1, math.ceil(total / max(1, (limit - 2) // 2)))
    inner = pl.DataFrame({"v": values}).with_row_index("at").with_columns(pl.col("at").cast(pl.Int64)).slice(
        1, total - 2)
    picked = inner.group_by(pl.col("at") // size, maintain_order=True).agg(
        low=pl.col("at").get(pl.col("v").arg_min()), high=pl.col("at").get(pl.col("v").arg_max()))
    return pl.concat([pl.Series("at", [0, total - 1], dtype=pl.Int64), picked.get_column("low"),
                      picked.get_column("high")]).unique().sort()


def thin_frame(rows: pl.DataFrame, limit: int, value: str = "value") -> pl.DataFrame:
    """`rows` thinned as Thinner thins them (the same points, tested), with their positions
    (`x`, 1-based). Python's comparisons and polars' differ on NaN: those go through Thinner."""
    column = rows.get_column(value)
    if column.dtype.is_float() and column.is_nan().any():
        thinner = Thinner(rows.height, limit)
        for x in range(rows.height):
            thinner.add((x, column[x]))
        keep = pl.Series("at", [p[0] for p in thinner.points()], dtype=pl.Int64)
    else:
        keep = kept_positions(column, limit)
    return rows.with_row_index("x", offset=1).gather(keep)


def thin_phase_frame(rows: pl.DataFrame, windows: int, phases: int, limit: int = PHASE_CHART_POINTS) -> pl.DataFrame:
    """PhaseThinner over a frame of phase rows (logfile, window, name, ms, ...) in the run's order:
    the rows of the windows it keeps. A window is kept for a phase when one of its rows is the
    first lowest or first highest of that phase in the bucket (tested against PhaseThinner)."""
    if windows <= limit or rows.get_column("ms").is_nan().any():
        if windows <= limit:
            return rows
        kept = thin_phases(rows.select("logfile", "window", "name", "ms", "line").iter_rows(), windows, phases, limit)
        return pl.DataFrame(kept, schema=rows.select("logfile", "window", "name", "ms", "line").schema, orient="row")
    size = max(1, math.ceil(windows / max(1, (limit - 2) // (2 * max(1, phases)))))
    rows = rows.with_columns(at=pl.struct("logfile", "window").rle_id().cast(pl.Int64))
    inner = rows.filter((pl.col("at") > 0) & (pl.col("at") < windows - 1))
    picked = inner.group_by(pl.col("at") // size, "name", maintain_order=True).agg(
        low=pl.col("at").get(pl.col("ms").arg_min()), high=pl.col("at").get(pl.col("ms").arg_max()))
    keep = pl.concat([pl.Series("at", [0, windows - 1], dtype=pl.Int64), picked.get_column("low"),
                      picked.get_column("high")])
    return rows.filter(pl.col("at").is_in(keep.implode())).drop("at")


# ---- computing the stored series -----------------------------------------------------------

def compute_series(run_id: int, limit: int = PHASE_CHART_POINTS) -> dict:
    """Every charted figure of a run, thinned, from its stored columns (one figure at a time).

    It reads the blocks itself, after the summary's own read of them (runs.services.run_rows):
    measured at the end of a 512 MB decode ingest, a pass over the run's phase blocks (fetched
    and inflated) costs 0.15 s of the refresh's 5.4 s of CPU, the whole series 1.25 s (the
    summary's regrouping 2.6 s); handing the summary's blocks over instead would save under
    0.6 s and hold the phase columns twice (memory or a second spill)."""
    figures = _figures(run_id, min(limit, FIGURE_POINTS))
    return {"v": SERIES_VERSION, "phases": _phases(run_id, limit), "figures": figures,
            # Each figure's noise on its own: the comparison API reads only this.
            "spread": {key: f["spread"] for key, f in figures.items()}}


def _phases(run_id: int, limit: int) -> dict:
    """The run page's stacked phase chart: thin_phase_frame over the run's phase rows, read a
    block at a time (columns.phase_blocks) in three passes: windows and first rows, the buckets'
    lowest and highest, the rows of the windows kept. The same rows as thinning them all at once.

    No pass needs the run's order across blocks: a window's place in the run is its file's
    offset plus its rank among the file's windows (kept from the first pass), a bucket's first
    lowest is its lowest at the lowest place, and the few rows kept are sorted at the end. A
    pass that cut the run into slices in that order (concatenated and sorted, three times) was
    most of the series' time at the end of a 512 MB parse, under the run's row lock."""
    file_windows: dict[int, list[pl.Series]] = {}  # each file's distinct windows, block by block
    firsts: dict[str, tuple[int, int, int, Any]] = {}  # name -> (logfile, window, i, line) of its first row
    odd = False
    for logfile, name, rows in columns.phase_blocks(run_id):
        if not rows.height:
            continue
        # NaN compares apart in Python and polars, a row without a window has no place in the
        # run: such runs are thinned the way that orders every row (below).
        odd = odd or bool(rows.get_column("ms").is_nan().any()) or rows.get_column("window").null_count() > 0
        file_windows.setdefault(logfile, []).append(rows.get_column("window").unique())
        top = rows.filter(pl.col("window") == pl.col("window").min())
        window, i, line = top.select("window", "i", "line").row(top.get_column("i").arg_min())
        if name not in firsts or (logfile, window, i) < firsts[name][:3]:
            firsts[name] = (logfile, window, i, line)
    if not firsts:
        return {"windows": 0, "names": [], "first": {}, "rows": []}
    names = sorted(firsts, key=lambda n: firsts[n][:3])
    first = {name: [firsts[name][0], firsts[name][3]] for name in names}
    shown = ["logfile", "window", "name", "ms", "line"]
    if odd:  # thin all rows at once, in the run's order, as before
        rows = pl.concat([part.select(shown) for part in columns.phase_slices(run_id)])
        windows = sum(pl.concat(parts).n_unique() for parts in file_windows.values())
        thinned = thin_phase_frame(rows, windows, len(names), limit)
        return {"windows": windows, "names": names, "first": first,
                "rows": [list(r) for r in thinned.iter_rows()]}
    places = _Places({logfile: pl.concat(parts).unique().sort() for logfile, parts in file_windows.items()})
    windows = places.windows
    keep = None if windows <= limit else _kept_windows(run_id, places, len(names), limit)
    kept: list[pl.DataFrame] = []
    for logfile, name, rows in columns.phase_blocks(run_id):
        if keep is not None:
            rows = rows.with_columns(places.at(logfile, rows.get_column("window"))).filter(
                pl.col("at").is_in(keep.implode())).drop("at")
        if rows.height:
            kept.append(rows.with_columns(logfile=pl.lit(logfile, pl.Int64), name=pl.lit(name, pl.String)))
    out = pl.concat(kept).sort(["logfile", "window", "i"]).select(shown) if kept else None
    return {"windows": windows, "names": names, "first": first,
            "rows": [list(r) for r in out.iter_rows()] if out is not None else []}


class _Places:
    """Each window's place in the run (0-based, in the run's order of files, then windows): its
    file's offset (the windows of the files before) plus its rank among the file's windows."""

    def __init__(self, file_windows: dict[int, pl.Series]) -> None:
        self.file_windows = file_windows
        self.offset: dict[int, int] = {}
        self.windows = 0
        for logfile in sorted(file_windows):
            self.offset[logfile] = self.windows
            self.windows += file_windows[logfile].len()

    def at(self, logfile: int, window: pl.Series) -> pl.Series:
        """The places of these windows of the file (each one a window the first pass saw)."""
        known = self.file_windows[logfile]
        if known[-1] - known[0] + 1 == known.len():  # windows 1..n, the usual file: no search
            return (window - known[0] + self.offset[logfile]).rename("at")
        return known.search_sorted(window).cast(pl.Int64).rename("at") + self.offset[logfile]


def _kept_windows(run_id: int, places: _Places, phases: int, limit: int) -> pl.Series:
    """The places of the windows thin_phase_frame keeps, bucket by bucket over the blocks: in
    each bucket and phase the first lowest and first highest ms (in the run's order: the lowest
    value at the lowest place; ms holds no NaN here), and the first and last windows."""
    windows = places.windows
    size = max(1, math.ceil(windows / max(1, (limit - 2) // (2 * max(1, phases)))))
    low: dict[tuple[int, str], tuple[float, int]] = {}
    high: dict[tuple[int, str], tuple[float, int]] = {}
    for logfile, name, rows in columns.phase_blocks(run_id):
        at = places.at(logfile, rows.get_column("window"))
        inner = rows.select("ms").with_columns(at).filter((pl.col("at") > 0) & (pl.col("at") < windows - 1))
        picked = inner.group_by(bucket=pl.col("at") // size).agg(
            low_ms=pl.col("ms").min(), low=pl.col("at").filter(pl.col("ms") == pl.col("ms").min()).min(),
            high_ms=pl.col("ms").max(), high=pl.col("at").filter(pl.col("ms") == pl.col("ms").max()).min())
        for bucket, low_ms, low_at, high_ms, high_at in picked.iter_rows():
            key = (bucket, name)
            if key not in low or (low_ms, low_at) < low[key]:
                low[key] = (low_ms, low_at)
            if key not in high or (-high_ms, high_at) < high[key]:
                high[key] = (-high_ms, high_at)
    return pl.Series("at", sorted({0, windows - 1, *(at for _, at in low.values()), *(at for _, at in high.values())}),
                     dtype=pl.Int64)


def best_source(run_id: int, names: Iterable[str]) -> str | None:
    """The source the summary believes first among these metrics of a run (of equal rank, the
    one whose first row comes first in the run: the order the rows are read in)."""
    names = list(names)
    sources = columns.sources(run_id, METRIC, names)
    if not sources:
        return None
    top = min(source_rank(s) for s in sources)
    tied = sorted(s for s in sources if source_rank(s) == top)
    if len(tied) == 1:
        return tied[0]
    return first_best(columns.frame(run_id, METRIC, [], names=names, sources=tied).get_column("source"))


def first_best(sources: pl.Series) -> str | None:
    """Of the sources of rows in the run's order, the best ranked; of equal rank, the first seen."""
    seen = sources.unique(maintain_order=True).to_list()
    return min(seen, key=source_rank) if seen else None


def figure_frame(run_id: int, key: str, source: str | None = None) -> pl.DataFrame | None:
    """The rows behind one per-window figure (value, line, logfile, window) in the run's order;
    None for an unknown key or a figure without rows."""
    if key == VERIFY:
        # verify_ms comes from phase rows: any phase whose name says verify
        found = columns.frame(run_id, PHASE, ["ms", "line"], labels=False, name_has="verify")
        return found.select(value="ms", line="line", logfile="logfile", window="window")
    if key not in FIGURE_METRICS:
        return None
    source = source or best_source(run_id, FIGURE_METRICS[key])
    if source is None:
        return None
    found = columns.frame(run_id, METRIC, ["value", "line"], labels=False, names=FIGURE_METRICS[key], source=source)
    return found.select("value", "line", "logfile", "window")


def _figures(run_id: int, limit: int) -> dict:
    # A figure at a time (_figure's rows go before the next figure's are read).
    return {key: fig for key in (*FIGURE_METRICS, VERIFY) if (fig := _figure(run_id, key, limit)) is not None}


def _figure(run_id: int, key: str, limit: int) -> dict | None:
    source = None if key == VERIFY else best_source(run_id, FIGURE_METRICS[key])
    rows = figure_frame(run_id, key, source)
    if rows is None or not rows.height:
        return None
    points = thin_frame(rows, limit).select("x", "value", "line", "logfile", "window")
    return {"source": source, "count": rows.height, "spread": _spread(rows.get_column("value")),
            "points": [list(p) for p in points.iter_rows()]}


def _spread(values: pl.Series) -> float | None:
    """spread() of a figure's values, to the bit: through describe() on an array of their buffer
    (numpy sorts it) rather than a list of ~900k floats that statistics.quantiles sorts, two
    thirds of a 512 MB decode log's figures' time. A null (no float) goes the list's way."""
    if values.null_count():
        return spread(values.to_list())
    floats = array("d")
    floats.frombytes(values.cast(pl.Float64).to_numpy().tobytes())
    return describe(floats).spread


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
    rows = columns.frame(run_id, PHASE, ["ms", "line"], windows=(lo, hi))
    rows = rows.filter(pl.col("window").is_between(lo, hi))
    return [list(r) for r in rows.select("logfile", "window", "name", "ms", "line").iter_rows()]


def figure_rows_between(run_id: int, key: str, source: str | None, lo: int, hi: int) -> list[list]:
    """Every point of one figure at positions lo..hi of the run (capped): exact rows, no thinning."""
    lo, hi = zoom_span(lo, hi)
    rows = figure_frame(run_id, key, source)
    if rows is None:
        return []
    return [[x, value, line, logfile, window]
            for x, (value, line, logfile, window) in enumerate(rows.slice(lo - 1, hi - lo + 1).iter_rows(), start=lo)]
