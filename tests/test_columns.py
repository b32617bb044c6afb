"""runs/columns.py: the one owner of the stored phase and metric columns. Rows written through it
read back the same for each reader (the summary's groups, a figure, a zoom, the trend, a file's
rows), and no other module touches the blocks or their format."""

from __future__ import annotations

import io
import re
from pathlib import Path

import polars as pl
import pytest
from django.db import connection, transaction

from ingest.parsers.records import METRIC_SCHEMA, PHASE_SCHEMA
from runs import blocks, columns, digest
from runs.models import LogFile, Project, Run, Status
from runs.services import refresh_run

ROOT = Path(__file__).resolve().parent.parent
NAN = float("nan")


def phases(rows: list[tuple]) -> pl.DataFrame:
    """(name, ms, pct, window, line, source, process) rows."""
    return pl.DataFrame(rows, schema=PHASE_SCHEMA, orient="row")


def metrics(rows: list[tuple]) -> pl.DataFrame:
    """(name, value, window, line, source, rank, process) rows."""
    return pl.DataFrame(rows, schema=METRIC_SCHEMA, orient="row")


def a_run(alice, files: int) -> tuple[Run, list[LogFile]]:
    run = Run.objects.create(project=Project.objects.create(name="p"), name="r", created_by=alice,
                             status=Status.READY)
    return run, [LogFile.objects.create(run=run, original_name=f"{k}.log", path=f"{k}.log", sha256="0" * 64,
                                        status=Status.READY) for k in range(files)]


@pytest.mark.django_db
def test_the_summary_reads_each_files_rows_per_writer_with_later_windows_moved_on(alice):
    run, (a, b) = a_run(alice, 2)
    columns.store(a, phases([("Draft", 0.5, 11.8, 1, 10, "eagle_profile", "TP0"),
                             ("Draft", 0.6, None, 2, 20, "eagle_profile", "TP0")]),
                  metrics([("cycle_ms", 4.8, 2, 21, "eagle_profile", "", "TP0"),
                           ("avg_busbw_gbs", 7.0, 0, 98, "nccl_tests", "", "main"),
                           ("avg_busbw_gbs", 7.5, 0, 99, "nccl_tests", "", "main")]))
    columns.store(b, phases([("Draft", 0.7, None, 1, 5, "eagle_profile", "TP0")]))
    rows = columns.summary_rows([a, b], digest.Spill())
    assert [(g.logfile, g.process, g.name, list(g.windows), list(g.lines), list(g.values)) for g in rows.phases] == [
        (a.id, "TP0", "Draft", [1, 2], [10, 20], [0.5, 0.6]), (b.id, "TP0", "Draft", [3], [5], [0.7])]
    pcts = rows.phases[0].pcts
    assert pcts is not None and pcts[0] == 11.8 and pcts[1] != pcts[1]  # NaN: none printed
    assert [(m.name, list(m.order)) for m in rows.metrics] == [("cycle_ms", [0]), ("avg_busbw_gbs", [1, 2])]
    assert rows.by_window
    assert isinstance(rows.phases[0]._columns[0], digest.Parked)  # on disk until the summary asks


@pytest.mark.django_db
def test_a_large_files_columns_regroup_as_a_parse_of_the_same_rows_digests_them(alice, monkeypatch):
    """Many blocks, flushed to the spill in many pieces, two ranks in one block, a line number
    past four bytes: the stored groups are the lone parse's, column for column."""
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 3000)
    monkeypatch.setattr(digest, "FLUSH_ROWS", 5000)
    n = 20_000
    phase_rows = phases([("Draft", w / 3, None if w % 3 else 1.5, w, 2 * w + 1, "eagle_profile", "main")
                         for w in range(1, n + 1)])
    metric_rows = metrics([("gen_throughput_tok_s", w / 7, w, 2**40 if w == n // 2 else 2 * w, "sglang_decode",
                            f"TP{w % 2}", "main") for w in range(1, n + 1)])
    run, (lf,) = a_run(alice, 1)
    columns.store(lf, phase_rows, metric_rows)
    assert columns.row_count(run.id) == 2 * n
    rows = columns.summary_rows([lf], digest.Spill())
    for kind, frame in (("phases", phase_rows), ("metrics", metric_rows)):
        parse = digest.FileDigest()  # a kind alone: its rows numbered from 0, as a block's `i`
        (parse.phase_frame if kind == "phases" else parse.metric_frame)(frame)
        want, got = getattr(parse.rows(), kind), getattr(rows, kind)
        assert [(g.process, g.rank, len(g)) for g in got] == [(g.process, g.rank, len(g)) for g in want]
        for x, y in zip(got, want, strict=True):
            assert (x.windows, x.lines, x.values, x.order) == (y.windows, y.lines, y.values, y.order)
            assert str(x.pcts) == str(y.pcts)  # NaN too
    assert 2**40 in rows.metrics[0].lines or 2**40 in rows.metrics[1].lines


@pytest.mark.django_db
def test_a_figure_reads_only_its_blocks_and_a_zoom_only_the_blocks_meeting_its_windows(
        alice, monkeypatch, django_assert_max_num_queries):
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 100)
    run, (a, b) = a_run(alice, 2)
    for lf in (a, b):
        columns.store(lf, phases([(name, float(w), None, w, 10 * w + k, "eagle_profile", "")
                                  for w in range(1, 501) for k, name in enumerate(("Draft", "Target verify"))]),
                      metrics([("throughput_tok_s", 400.0 + w, w, 10 * w + 2, src, "", "") for w in range(1, 501)
                               for src in ("sglang", "eagle_profile")]))
    zoom = columns.frame(run.id, columns.PHASE, ["ms", "line"], windows=(250, 260))
    assert zoom.height == 2 * 2 * 100  # two files, two names, the one block of each holding 201-300
    verify = columns.frame(run.id, columns.PHASE, ["ms"], labels=False, name_has="VERIFY")
    assert verify.height == 1000 and verify.columns == ["i", "window", "ms", "logfile"]
    assert verify.get_column("logfile").to_list() == [a.id] * 500 + [b.id] * 500  # the run's order
    assert columns.sources(run.id, columns.METRIC, ["throughput_tok_s"]) == {"sglang", "eagle_profile"}
    assert columns.names(run.id, columns.METRIC, ["gen_throughput_tok_s", "throughput_tok_s"], "sglang") == {
        "throughput_tok_s"}
    with django_assert_max_num_queries(1):
        by_run = columns.frames_by_run([run.id], columns.METRIC, ["value"], names=["throughput_tok_s"])
    assert by_run[run.id].filter(pl.col("source") == "sglang").get_column("value").to_list()[:2] == [401.0, 402.0]
    assert columns.file_rows(b, columns.PHASE).select("window", "name").row(1) == (1, "Target verify")


@pytest.mark.django_db
def test_names_and_labels_are_cut_to_the_columns_sizes(alice):
    run, (lf,) = a_run(alice, 1)
    columns.store(lf, phases([("P" * 150, 1.0, None, 1, 1, "S" * 40, "W" * 70)]),
                  metrics([("M" * 70, 1.0, 1, 2, "S" * 40, "R" * 40, "W" * 70)]))
    phase = columns.file_rows(lf, columns.PHASE).row(0, named=True)
    metric = columns.file_rows(lf, columns.METRIC).row(0, named=True)
    assert (len(phase["name"]), len(phase["source"]), len(phase["process"])) == (100, 32, 64)
    assert (len(metric["name"]), len(metric["source"]), len(metric["rank"]), len(metric["process"])) == (64, 32, 32, 64)


@pytest.mark.django_db
def test_a_cut_file_is_written_as_the_same_blocks_it_was_cut_into(alice, monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 7)
    run, (lf,) = a_run(alice, 1)
    with io.BytesIO() as spool:
        cut = columns.Cutter(spool)
        for start in range(0, 40, 9):  # batches as a parse hands them over
            cut.add(phases([("Draft", float(w), None, w, w, "eagle_profile", "") for w in range(start, start + 9)]))
        cut.finish()
        assert sum(b.rows for b in cut.blocks()) == 45
        columns.write(lf, cut)
    assert columns.file_rows(lf, columns.PHASE).get_column("window").to_list() == list(range(45))
    other = Run.objects.create(project=run.project, name="other", created_by=alice, status=Status.READY)
    columns.move([lf.id], other)
    assert columns.row_count(other.id) == 45 and columns.row_count(run.id) == 0
    columns.delete(lf)
    assert columns.row_count(other.id) == 0


def test_no_module_but_runs_columns_touches_the_stored_blocks():
    """SampleBlock and the block format (runs.blocks) are named only by their owner (and the
    model and the format themselves); callers go through runs.columns' functions (migrations keep
    their own frozen copies)."""
    touch = re.compile(r"\bSampleBlock\b|\bDigestPart\b|runs\.blocks\b|from runs import [^\n]*\bblocks\b")
    owners = {ROOT / "runs" / name for name in ("columns.py", "models.py", "blocks.py")}
    found = [str(path.relative_to(ROOT)) for package in ("runs", "ingest", "webapp", "bench")
             for path in (ROOT / package).rglob("*.py")
             if path not in owners and "migrations" not in path.parts and touch.search(path.read_text())]
    assert found == []


@pytest.mark.django_db(transaction=True)
def test_the_migration_drops_the_digests_and_the_summary_reads_the_same_without_them(alice, upload_run):
    """Migration 0019_storage: the per-file digests go (their values are all in the blocks); reversed,
    their table comes back empty."""
    from django.db.migrations.executor import MigrationExecutor

    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    before = Run.objects.get(id=run.id).parsed
    lf = run.logfiles.get()
    executor = MigrationExecutor(connection)
    before_it = [("runs", "0018_roles_edits_failed_files")]
    executor.migrate(before_it)
    try:
        Part = executor.loader.project_state(before_it).apps.get_model("runs", "DigestPart")
        Part.objects.create(logfile_id=lf.id, seq=0, data=b"old digest")
        executor = MigrationExecutor(connection)
        executor.migrate([("runs", "0019_storage_drop_digest_parts")])
        assert "runs_digestpart" not in connection.introspection.table_names()
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    with transaction.atomic():
        refresh_run(run.id)
    assert Run.objects.get(id=run.id).parsed == before
