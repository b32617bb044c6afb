"""runs/digest.py Busbw: nccl-tests rows kept as runs of adjacent lines, not a dict entry a line,
give the panels' counts and peaks the per-line dict gave, since a footer line is never a row line
(summary.nccl_tests_panels splits a file's rows at its footers)."""

from __future__ import annotations

from bisect import bisect_right

from hypothesis import given
from hypothesis import strategies as st

from runs.digest import Busbw

ROW = st.tuples(st.sampled_from(["pid 1", "pid 2"]), st.integers(1, 60), st.integers(1, 3),
                st.floats(0, 500, allow_nan=False))


def _per_line(rows: list[tuple[str, int, int, float]]) -> dict[tuple[str, int], tuple[int, float]]:
    out: dict[tuple[str, int], tuple[int, float]] = {}
    for process, line, n, peak in rows:
        old = out.get((process, line))
        out[(process, line)] = (n, peak) if old is None else (old[0] + n, max(old[1], peak))
    return out


def _panels(items: list[tuple[int, int, float]], ends: list[int]) -> list[tuple[int, float | None]]:
    """The panels' arithmetic (summary.nccl_tests_panels): per test (start, end], its rows and peak."""
    items = sorted(items)
    lines = [line for line, _, _ in items]
    last = lines[-1] if lines else 0
    tests = [*ends, last] if not ends or last > ends[-1] else list(ends)
    out, start = [], 0
    for end in tests:
        own = items[bisect_right(lines, start):bisect_right(lines, end)]
        out.append((sum(n for _, n, _ in own), max(p for _, _, p in own) if own else None))
        start = end
    return out


@given(st.lists(ROW, max_size=40), st.lists(st.integers(1, 70), max_size=6), st.booleans())
def test_runs_of_adjacent_lines_give_the_counts_and_peaks_of_every_line(rows, footers, in_order):
    if in_order:  # as a parse and the SQL feed them; out of order, a line starts a run of its own
        rows = sorted(rows, key=lambda r: r[1])
    row_lines = {line for _, line, _, _ in rows}
    ends = sorted({f for f in footers if f not in row_lines})  # a footer line is never a row line
    busbw = Busbw()
    for process, line, n, peak in rows:
        busbw.add(None, process, line, n, peak)
    from_runs = [(last, n, peak) for _, _, runs in busbw.runs() for _, last, n, peak in runs]
    per_line = [(line, n, peak) for (_, line), (n, peak) in _per_line(rows).items()]
    assert _panels(from_runs, ends) == _panels(per_line, ends)


def test_a_table_is_one_run():
    busbw = Busbw()
    for line in range(100, 1100):
        busbw.add(7, "pid 1", line, 2, float(line % 13))
    ((logfile, process, runs),) = list(busbw.runs())
    assert (logfile, process, runs) == (7, "pid 1", [[100, 1099, 2000, 12.0]])
