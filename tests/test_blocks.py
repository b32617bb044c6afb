"""runs/blocks.py: a file's rows cut into column blocks of one kind, name and source, and read
back exactly, in the order the row tables gave them (logfile, window, then emission order)."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.parsers.records import METRIC_SCHEMA, PHASE_SCHEMA
from runs import blocks


def phases(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=PHASE_SCHEMA, orient="row")


def metrics(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=METRIC_SCHEMA, orient="row")


def write(*batches: tuple[str, pl.DataFrame]) -> list[blocks.Block]:
    out: list[blocks.Block] = []
    writer = blocks.BlockWriter(out.append)
    for kind, frame in batches:
        writer.add(kind, frame)
    writer.finish()
    return out


def read(kind: str, cut: list[blocks.Block], logfile: int = 7) -> pl.DataFrame:
    return blocks.frame(kind, [(logfile, b.name, b.source, b.data) for b in cut if b.kind == kind])


def test_each_block_holds_one_kind_name_and_source():
    cut = write(("phase", phases([("Draft", 0.5, 10.0, 1, 3, "eagle_profile", "main"),
                                  ("Target verify", 4.0, None, 1, 4, "eagle_profile", "main"),
                                  ("Draft", 0.6, 11.0, 2, 9, "eagle_profile", "main")])),
                ("metric", metrics([("throughput_tok_s", 466.3, 1, 5, "eagle_profile", "", "main"),
                                    ("throughput_tok_s", 470.0, 1, 6, "sglang", "TP0", "main")])))
    assert sorted((b.kind, b.name, b.source, b.rows, b.window_lo, b.window_hi) for b in cut) == [
        ("metric", "throughput_tok_s", "eagle_profile", 1, 1, 1),
        ("metric", "throughput_tok_s", "sglang", 1, 1, 1),
        ("phase", "Draft", "eagle_profile", 2, 1, 2),
        ("phase", "Target verify", "eagle_profile", 1, 1, 1),
    ]
    assert len({b.seq for b in cut}) == len(cut)


def test_rows_read_back_exactly_in_window_then_emission_order():
    """Two DP ranks count windows apart: rows come back by window, ties in the order emitted,
    every value (a missing percentage too), line and process as written."""
    first = phases([("Draft", 0.1, 1.5, 2, 10, "eagle_profile", "DP0"),
                    ("Draft", 0.2, None, 1, 11, "eagle_profile", "DP1")])
    second = phases([("Draft", 0.30000000000000004, 2.0, 1, 12, "eagle_profile", "DP0"),
                     ("Target verify", 4.08, 83.6, 2, 13, "eagle_profile", "DP1")])
    back = read("phase", write(("phase", first), ("phase", second)))
    assert back.select("name", "ms", "pct", "window", "line", "process", "i").rows() == [
        ("Draft", 0.2, None, 1, 11, "DP1", 1),
        ("Draft", 0.30000000000000004, 2.0, 1, 12, "DP0", 2),
        ("Draft", 0.1, 1.5, 2, 10, "DP0", 0),
        ("Target verify", 4.08, 83.6, 2, 13, "DP1", 3),
    ]
    assert set(back.get_column("logfile")) == {7} and set(back.get_column("source")) == {"eagle_profile"}


def test_a_long_figure_is_cut_at_block_rows_and_read_back_whole(monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 100)
    n = 1050
    frame = metrics([("cycle_ms", w / 8, w, 2 * w, "eagle_profile", "", "main") for w in range(1, n + 1)])
    cut = write(*(("metric", part) for part in frame.iter_slices(137)))
    assert [b.rows for b in cut] == [100] * 10 + [50]
    assert [(b.window_lo, b.window_hi) for b in cut][:2] == [(1, 100), (101, 200)]
    back = read("metric", cut)
    assert back.get_column("value").to_list() == [w / 8 for w in range(1, n + 1)]
    assert back.get_column("i").to_list() == list(range(n))


def test_many_names_hold_a_bounded_number_of_rows(monkeypatch):
    """A log with a thousand phase names does not hold a block's worth of each in memory."""
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 50)
    monkeypatch.setattr(blocks, "HELD_ROWS", 400)
    writer = blocks.BlockWriter(lambda block: None)
    for batch in range(20):
        writer.add("phase", phases([(f"phase {k}", 1.0, None, batch + 1, 1000 * batch + k, "eagle_profile", "")
                                    for k in range(1000)]))
        assert sum(writer.held_rows.values()) <= 400
    writer.finish()
    assert not writer.held_rows


@pytest.mark.parametrize("columns", [["ms"], ["ms", "line"]])
def test_reading_some_columns_keeps_the_order_keys(columns):
    cut = write(("phase", phases([("Draft", 0.5, 10.0, 2, 3, "eagle_profile", "main"),
                                  ("Draft", 0.7, 10.0, 1, 9, "eagle_profile", "main")])))
    back = blocks.frame("phase", [(1, b.name, b.source, b.data) for b in cut], columns)
    assert set(back.columns) == {"i", "window", *columns, "logfile", "name", "source"}
    assert back.get_column("ms").to_list() == [0.7, 0.5]


def test_no_blocks_read_as_an_empty_frame_of_the_kind():
    empty = blocks.frame("metric", [], ["value"])
    assert empty.height == 0 and {"value", "window", "logfile", "name"} <= set(empty.columns)


@pytest.mark.django_db(transaction=True)
def test_the_migration_turns_stored_rows_into_blocks_that_read_back_the_same(alice):
    """Migration 0014: a database of row tables keeps every row, as blocks in id order."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("runs", "0013_sample_bulk_constraints")], [("runs", "0014_sample_blocks")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        Project, Run, LogFile = (apps.get_model("runs", m) for m in ("Project", "Run", "LogFile"))
        PhaseSample, MetricSample = apps.get_model("runs", "PhaseSample"), apps.get_model("runs", "MetricSample")
        run = Run.objects.create(project=Project.objects.create(name="old"), name="old run", status="ready")
        lf = LogFile.objects.create(run=run, original_name="a.log", path="a.log", sha256="0" * 64, status="ready")
        phase_rows = [("Target verify", 4.0 + w / 100, None if w % 2 else 80.5, w, 10 * w, "DP0") for w in (3, 1, 2)]
        PhaseSample.objects.bulk_create(
            PhaseSample(run=run, logfile=lf, name=n, ms=ms, pct=pct, window=w, line=line, process=p, source="eagle_profile")
            for n, ms, pct, w, line, p in phase_rows)
        MetricSample.objects.bulk_create(
            MetricSample(run=run, logfile=lf, name="cycle_ms", value=5.5, window=1, line=None, process="", rank="TP0",
                         source="sglang") for _ in range(2))
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        SampleBlock = executor.loader.project_state(after).apps.get_model("runs", "SampleBlock")
        found = SampleBlock.objects.filter(logfile_id=lf.id)

        def back(kind):
            return blocks.frame(kind, found.filter(kind=kind).values_list("logfile_id", "name", "source", "data"))

        assert back("phase").sort("i").select("name", "ms", "pct", "window", "line", "process").rows() == phase_rows
        assert found.get(kind="phase").window_lo == 1 and found.get(kind="phase").window_hi == 3
        assert back("metric").select("value", "line", "rank", "source").rows() == [(5.5, 0, "TP0", "sglang")] * 2
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_rows_kept_waiting_are_the_same_to_the_bit():
    """A part that waits for its block is copied (a slice would keep its whole batch alive: a
    128 MB decode log's fold peaked 350 MB higher), value for value."""
    frame = pl.DataFrame({"i": [1, 2, 3, 4], "process": ["TP0", "a much longer process name", "", None],
                          "ms": [-0.0, float("nan"), float("inf"), None], "pct": [None, 1.5, -2.0, 0.0]})
    owned = blocks._owned(frame.slice(0, 4))
    assert owned.schema == frame.schema and owned.equals(frame, null_equal=True)
    assert [str(v) for v in owned["ms"]] == ["-0.0", "nan", "inf", "None"]
