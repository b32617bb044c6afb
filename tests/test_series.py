"""runs/series.py: the thinning (pure) and the stored series of a run (database)."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runs.series import (
    PHASE_CHART_POINTS,
    ZOOM_MAX_WINDOWS,
    compute_series,
    downsample,
    figure_rows_between,
    fresh_series,
    phase_rows_between,
    thin_frame,
    thin_phase_frame,
    thin_phases,
)
from runs.summary import spread
from tests import synthetic


def _points(n: int) -> list[tuple]:
    # (x, value, line, logfile, window): a slow ripple
    return [(i, float(i % 7), 100 + i, 9, i) for i in range(1, n + 1)]


def test_a_series_within_the_limit_comes_back_unchanged():
    points = _points(PHASE_CHART_POINTS)
    assert downsample(points) == points
    assert downsample([]) == []
    assert downsample(points[:1]) == points[:1]


def test_one_point_over_the_limit_is_thinned_to_the_limit():
    thin = downsample(_points(PHASE_CHART_POINTS + 1))
    assert len(thin) <= PHASE_CHART_POINTS


def test_spikes_and_dips_survive_and_every_kept_point_keeps_its_line_and_file():
    points = _points(10_000)
    points[4999] = (5000, 99.0, 5099, 9, 5000)
    points[7000] = (7001, -5.0, 7100, 9, 7001)
    thin = downsample(points, limit=400)
    assert len(thin) <= 400
    assert (5000, 99.0, 5099, 9, 5000) in thin and (7001, -5.0, 7100, 9, 7001) in thin
    assert all(p in points for p in thin)  # every kept point is a real row, line and file included
    assert [p[0] for p in thin] == sorted(p[0] for p in thin)
    assert thin[0] == points[0] and thin[-1] == points[-1]


def test_each_bucket_keeps_its_own_min_and_max():
    # Buckets of 10 (limit 22 -> 10 buckets over 100 points): each holds a distinct low and high.
    points = [(i, float((i * 37) % 10) + (i // 10) * 100, i, 1, i) for i in range(100)]
    thin = downsample(points, limit=22)
    for start in range(0, 100, 10):
        bucket = points[start:start + 10]
        inner = [p for p in bucket if p not in (points[0], points[-1])]
        assert min(inner, key=lambda p: p[1]) in thin and max(inner, key=lambda p: p[1]) in thin


def test_equal_values_keep_the_first_of_a_bucket():
    points = [(i, 1.0, i, 1, i) for i in range(50)]
    thin = downsample(points, limit=12)
    assert len(thin) <= 12 and [p[0] for p in thin][:2] == [0, 1]


def _windows(n: int, phases: tuple[str, ...] = ("Draft", "Target verify")) -> list[tuple]:
    return [(3, w, name, 1.0 + k + (w % 5) / 10, 10 * w + k) for w in range(1, n + 1) for k, name in enumerate(phases)]


def test_phase_thinning_keeps_whole_windows_so_stacked_traces_share_x():
    rows = _windows(5000)
    rows[2 * 2500 + 1] = (3, 2501, "Target verify", 50.0, 25011)
    kept = thin_phases(rows, 5000, 2, limit=200)
    by_name: dict[str, list[int]] = {}
    for _, window, name, _, _ in kept:
        by_name.setdefault(name, []).append(window)
    assert by_name["Draft"] == by_name["Target verify"] and len(by_name["Draft"]) <= 200
    assert [3, 2501, "Target verify", 50.0, 25011] in kept
    assert all(tuple(r) in set(rows) for r in kept)


def test_phase_thinning_leaves_a_small_run_alone():
    rows = _windows(40)
    assert thin_phases(rows, 40, 2) == [list(r) for r in rows]
    assert thin_phases([], 0, 0) == []


# Few distinct values: ties everywhere, where "the first lowest" matters.
_values = st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, -3.0, 1e9]), max_size=300)


@settings(max_examples=200, deadline=None)
@given(values=_values, limit=st.integers(min_value=2, max_value=40))
def test_the_column_thinning_keeps_what_the_point_thinning_keeps(values, limit):
    points = [(x, v, 100 + x, 9, x) for x, v in enumerate(values, start=1)]
    frame = pl.DataFrame(points, schema=["x", "value", "line", "logfile", "window"], orient="row").drop("x")
    kept = thin_frame(frame, limit).select("x", "value", "line", "logfile", "window")
    assert [tuple(p) for p in kept.iter_rows()] == [tuple(p) for p in downsample(points, limit)]


@settings(max_examples=200, deadline=None)
@given(windows=st.lists(st.lists(st.tuples(st.sampled_from(["Draft", "Target verify", "Accept"]),
                                           st.sampled_from([1.0, 2.0, 2.5, 7.0])), min_size=1, max_size=4),
                        max_size=120),
       limit=st.integers(min_value=2, max_value=30))
def test_the_column_phase_thinning_keeps_the_windows_the_row_thinning_keeps(windows, limit):
    """Windows of any phases (repeated too, as two DP ranks' rows of one window are)."""
    rows = [(1 + w // 50, w, name, ms, 10 * w + k) for w, window in enumerate(windows, start=1)
            for k, (name, ms) in enumerate(window)]
    frame = pl.DataFrame(rows, schema=["logfile", "window", "name", "ms", "line"], orient="row")
    names = len({r[2] for r in rows})
    expected = thin_phases(rows, len(windows), names, limit)
    assert [list(r) for r in thin_phase_frame(frame, len(windows), names, limit).iter_rows()] == expected


@pytest.fixture
def project(alice):
    return alice.projects.get()


@pytest.mark.django_db
def test_stored_series_are_bounded_exact_points_with_the_whole_series_noise(alice, project):
    run = synthetic.make_run(project, alice, 3000, spike=1234)
    kept = compute_series(run.id)
    verify = kept["figures"]["verify_ms"]
    full = [synthetic.values(w, 1234)[1] for w in range(1, 3001)]
    assert verify["count"] == 3000 and verify["spread"] == spread(full)
    assert len(verify["points"]) <= PHASE_CHART_POINTS
    spike = [1234, synthetic.values(1234, 1234)[1], 4 * 1234 + 1, run.logfiles.get().id, 1234]
    assert spike in verify["points"] and max(p[1] for p in verify["points"]) == spike[1]
    tput = kept["figures"]["throughput_tok_s"]
    assert tput["source"] == "eagle_profile" and tput["points"][0][:3] == [1, synthetic.values(1, 1234)[2], 6]
    phases = kept["phases"]
    assert phases["windows"] == 3000 and phases["names"] == ["Draft", "Target verify"]
    assert phases["first"] == {"Draft": [run.logfiles.get().id, 4], "Target verify": [run.logfiles.get().id, 5]}
    assert len({r[1] for r in phases["rows"]}) <= PHASE_CHART_POINTS // 2


@pytest.mark.parametrize("special", [None, float("nan"), -0.0, 0.0, float("inf"), 2.5])
@pytest.mark.parametrize("n", [3, 4, 999, 1001, 5000])
def test_a_figure_spread_is_the_spread_of_its_values_as_a_list(special, n):
    import random

    from runs.series import _spread

    rng = random.Random(n)
    values = [rng.choice([rng.random() * 10, rng.randint(0, 5) / 4]) for _ in range(n)]
    values[n // 3] = special

    def outcome(figure):
        try:
            return str(figure())
        except TypeError as e:  # a None among 4 or more: statistics.quantiles' own error
            return type(e).__name__

    assert outcome(lambda: _spread(pl.Series("value", values, dtype=pl.Float64))) == outcome(lambda: spread(values))


@pytest.mark.django_db
def test_a_run_without_rows_has_empty_series(alice, project):
    run = project.runs.create(name="empty")
    kept = compute_series(run.id)
    assert kept["figures"] == {} and kept["phases"]["rows"] == [] and kept["phases"]["windows"] == 0


@pytest.mark.django_db
def test_series_are_kept_until_a_log_file_is_parsed_again(alice, project, django_assert_max_num_queries):
    run = synthetic.make_run(project, alice, 50)
    run.series = fresh_series(run)
    with django_assert_max_num_queries(1):  # an annotation's refresh: the files are unchanged
        assert fresh_series(run) is run.series
    run.logfiles.update(parsed_at="2026-01-01T00:00:00Z")
    assert fresh_series(run) is not run.series


@pytest.mark.django_db
def test_a_zoom_reads_every_row_of_its_windows_and_no_more_than_the_cap(alice, project):
    run = synthetic.make_run(project, alice, 3000)
    lf = run.logfiles.get().id
    rows = phase_rows_between(run.id, 100, 102)
    assert rows == [[lf, w, name, synthetic.values(w, 1500)[k], 4 * w + k]
                    for w in (100, 101, 102) for k, name in ((0, "Draft"), (1, "Target verify"))]
    points = figure_rows_between(run.id, "throughput_tok_s", "eagle_profile", 10, 12)
    assert points == [[w, synthetic.values(w, 1500)[2], 4 * w + 2, lf, w] for w in (10, 11, 12)]
    wide = figure_rows_between(run.id, "tokens_per_cycle", "eagle_profile", 1, 10**9)
    assert len(wide) == ZOOM_MAX_WINDOWS and wide[-1][0] == ZOOM_MAX_WINDOWS


def _phases_at_once(run_id: int, limit: int = PHASE_CHART_POINTS) -> dict:
    """What the run page's phase chart was before it read phases a slice at a time: every phase
    row of the run in one frame, thinned at once."""
    rows = synthetic.stored_rows("phase", run_id=run_id)
    if not rows.height:
        return {"windows": 0, "names": [], "first": {}, "rows": []}
    windows = rows.select(pl.struct("logfile", "window").n_unique()).item()
    firsts = rows.with_row_index("at").group_by("name").first().sort("at")
    names = firsts.get_column("name").to_list()
    first = {name: [logfile, line] for name, logfile, line in firsts.select("name", "logfile", "line").iter_rows()}
    kept = thin_phase_frame(rows.select("logfile", "window", "name", "ms", "line"), windows, len(names), limit)
    return {"windows": windows, "names": names, "first": first, "rows": [list(r) for r in kept.iter_rows()]}


def _phase_run(project, user, files: int, windows: int, seed: int, nan: bool = False, gaps: bool = False):
    """A run of `files` log files whose phases come in many small blocks: names that start late,
    windows out of order within a block, a phase that skips windows, equal values (ties); with
    `gaps`, windows no phase has (a file's windows not 1..n: their places found by search)."""
    import io
    import random

    from ingest.parsers.records import PHASE_SCHEMA
    from runs import columns
    from runs.models import LogFile, Run, Status

    rng = random.Random(seed)
    run = Run.objects.create(project=project, name="phases", created_by=user, status=Status.READY)
    for f in range(files):
        lf = LogFile.objects.create(run=run, original_name=f"{f}.log", path=f"{f}.log", sha256="0" * 64,
                                    status=Status.READY)
        cut = columns.Cutter(io.BytesIO())
        order = list(range(1, windows + 1))
        for start in range(0, windows, 50):  # a few windows printed out of order
            if rng.random() < 0.3:
                order[start:start + 5] = reversed(order[start:start + 5])
        rows = []
        for w in order:
            if gaps and (w % 5 == 3 or w < 4):
                continue
            for name in ("Draft", "Target verify", "Accept", "Late"):
                if (name == "Late" and w < windows // 3) or (name == "Accept" and w % 7 == 0):
                    continue
                ms = round(rng.choice([1.0, 2.0, rng.random() * 4]), 2)
                if nan and w == windows // 2:
                    ms = float("nan")
                rows.append((name, ms, None, w, 10 * w + len(rows) % 10, "eagle_profile", ""))
        for i in range(0, len(rows), 97):  # batches as the parse hands them over
            cut.add(pl.DataFrame(rows[i:i + 97], schema=PHASE_SCHEMA, orient="row"))
        cut.finish()
        columns.write(lf, cut)
    return run


@pytest.mark.django_db
@pytest.mark.parametrize(("files", "windows", "limit", "nan", "gaps"), [
    (1, 3000, 200, False, False), (2, 1500, 120, False, False), (3, 40, 1000, False, False),
    (2, 800, 100, True, False), (1, 3000, 200, False, True), (3, 900, 150, False, True), (2, 60, 30, False, True)])
def test_phases_read_a_block_at_a_time_are_the_phases_thinned_at_once(alice, project, monkeypatch, files, windows,
                                                                       limit, nan, gaps):
    from runs import blocks
    from runs.columns import phase_blocks, phase_slices
    from runs.series import _phases

    monkeypatch.setattr(blocks, "BLOCK_ROWS", 256)
    monkeypatch.setattr(blocks, "HELD_ROWS", 600)  # names cut early: blocks start at many windows
    run = _phase_run(project, alice, files, windows, seed=windows, nan=nan, gaps=gaps)
    assert sum(1 for _ in phase_slices(run.id)) > (10 if windows >= 800 else 1)  # blocks start at many windows
    assert sum(1 for _ in phase_blocks(run.id)) > (4 * files if windows >= 800 else 1)  # names cut in several blocks
    got, want = _phases(run.id, limit), _phases_at_once(run.id, limit)
    assert str(got) == str(want)  # str: NaN equals NaN
    assert got["names"] == ["Draft", "Target verify", "Accept", "Late"]
