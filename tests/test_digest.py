"""runs/digest.py: the summary read from the stored columns regrouped as digests equals the summary
of every row reloaded, a lone parse's digest summarises as its records do, and a pasted NCCL
annotation refreshes the run without reading its bulky rows. Busbw: nccl-tests rows kept as runs
of adjacent lines, not a dict entry a line, give the panels' counts and peaks the per-line dict
gave, since a footer line is never a row line (summary.nccl_tests_panels splits a file's rows at
its footers)."""

from __future__ import annotations

import io
import json
from array import array
from bisect import bisect_right
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest import registration
from ingest import services as ingest_services
from ingest.parsers import eagle_profile, parse_lines, parse_stream
from ingest.parsers.records import Collective, collectives_frame
from runs import columns, digest
from runs.digest import Busbw
from runs.models import Annotation, Run
from runs.services import add_annotation, refresh_run, run_result
from runs.summary import summarize
from tests.samples import log_path, public_sample


def upload(user, files: dict[str, bytes]) -> Run:
    run, _ = registration.register_upload(
        user, [registration.IncomingFile(name, io.BytesIO(data), len(data)) for name, data in files.items()],
        project="team")
    for lf in run.logfiles.all():
        ingest_services.parse_logfile(lf.id)
    return Run.objects.get(id=run.id)


def halves(path) -> dict[str, bytes]:
    lines = path.read_bytes().splitlines(keepends=True)
    return {"part1.log": b"".join(lines[:len(lines) // 2]), "part2.log": b"".join(lines[len(lines) // 2:])}


RUNS = {
    "two launches": lambda: {"tuned.log": log_path("spec_eagle3_tuned_2step.log").read_bytes(),
                             "default.log": log_path("sweep/sweep_default_2step.log").read_bytes()},
    "one launch over two files": lambda: halves(log_path("sweep/sweep_dropped_2step.log")),
    "serving and nccl-tests": lambda: {"serve.log": log_path("sweep/sweep_dropped_2step.log").read_bytes(),
                                       "tests.log": log_path("nccl-tests_all_reduce_default.log").read_bytes()},
    "three launches, mixed formats": lambda: {
        "nospec.log": log_path("spec_baseline_nospec.log").read_bytes(),
        "tuned.log": log_path("spec_eagle3_tuned_2step.log").read_bytes(),
        "mtp.log": public_sample("sglang_decode_mtp_tp8_pr7376.log").read_bytes(),
        "vllm.log": public_sample("vllm_v0_spec_metrics_and_stage_times_doc.log").read_bytes(),
    },
    "nccl-tests alone, many rows": lambda: {
        "a.txt": public_sample("nccl_tests_all_reduce_h100_16rank_k8s_mpi.txt").read_bytes(),
        "b.txt": public_sample("nccl_tests_h200nvl_8gpu_compact_header.txt").read_bytes()},
    "llama.cpp and vLLM stage times": lambda: {
        "llama.log": public_sample("llamacpp_spec_statistics_eagle3_pr24536.log").read_bytes(),
        "stages.log": public_sample("vllm_v0_specdecodeworker_stage_times_issue8370.log").read_bytes()},
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", RUNS)
def test_refresh_from_stored_columns_gives_the_parse_of_every_row_reloaded(alice, case):
    run = upload(alice, RUNS[case]())
    assert run.status == "ready" and columns.row_count(run.id)
    # The old path: every stored row back as an object, summarised.
    assert run.parsed == json.loads(json.dumps(summarize(run_result(run))))
    assert run.launches_count == run.parsed["launches_count"]


ROW_TABLES = ("runs_sampleblock", "runs_collectiveresult")


@pytest.mark.django_db
def test_a_pasted_nccl_annotation_reads_no_phase_or_metric_row(alice):
    run = upload(alice, RUNS["two launches"]())
    with CaptureQueriesContext(connection) as queries:
        add_annotation(alice, run, Annotation.Kind.NCCL, "NCCL_PROTO=Simple\nNCCL_ALGO=Tree\n")
    touched = [q["sql"] for q in queries.captured_queries if any(t in q["sql"] for t in ROW_TABLES)]
    assert touched == []
    assert len(queries.captured_queries) < 30  # a handful, whatever the run's size
    partial = Run.objects.get(id=run.id)
    assert partial.parsed["nccl"]["conflicts"]  # the person's NCCL_PROTO differs from the launcher's
    # The same as recomputing everything.
    refresh_run(run.id)
    full = Run.objects.get(id=run.id)
    assert partial.parsed == full.parsed
    assert (partial.nccl_status, partial.person_conflict) == (full.nccl_status, full.person_conflict)


def stored(process: list[str], rank: list[str], window: list[int], order: list[int], phase: bool) -> pl.DataFrame:
    """A block's rows as runs.columns hands them to a Regrouper."""
    n = len(process)
    return pl.DataFrame({"process": process, "rank": rank, "window": window, "line": [10 * w for w in window],
                         "value": [0.5 + k for k in range(n)], "order": order,
                         **({"pct": [float("nan")] * n} if phase else {})})


def test_stored_rows_are_regrouped_per_writer_in_the_order_of_their_first_row():
    groups = digest.Regrouper(digest.Spill())
    # Verify's block reaches the regrouper first, though Draft's rows come first in the file.
    groups.add(True, 1, "Target verify", "eagle_profile", stored(["TP0"], [""], [1], [1], phase=True))
    groups.add(True, 1, "Draft", "eagle_profile", stored(["TP0", "TP0"], ["", ""], [1, 2], [0, 2], phase=True))
    groups.add(False, 1, "cycle_ms", "sglang", stored(["TP0", "TP1", "TP0"], ["0", "1", "0"], [1, 1, 2], [0, 1, 2],
                                                      phase=False))
    groups.add(True, 2, "Draft", "eagle_profile", stored(["TP0"], [""], [3], [0], phase=True))
    rows = groups.rows()
    assert [(g.logfile, g.name, list(g.windows)) for g in rows.phases] == [
        (1, "Draft", [1, 2]), (1, "Target verify", [1]), (2, "Draft", [3])]
    assert [(g.process, g.rank, list(g.windows), list(g.order)) for g in rows.metrics] == [
        ("TP0", "0", [1, 2], [0, 2]), ("TP1", "1", [1], [1])]
    assert rows.by_window and isinstance(rows.phases[0]._columns[0], digest.Parked)
    pcts = rows.phases[0].pcts
    assert pcts is not None and pcts[0] != pcts[0]  # NaN: none printed


def test_a_block_of_one_writer_but_its_last_row_is_regrouped_in_two():
    groups = digest.Regrouper(digest.Spill())
    # A block told apart from a one-writer block by its last row only: the rank, then the process.
    groups.add(False, 1, "cycle_ms", "sglang", stored(["TP0"] * 4, ["0", "0", "0", "1"], [1, 2, 3, 3], [0, 1, 2, 3],
                                                      phase=False))
    groups.add(False, 1, "tok_s", "sglang", stored(["TP0", "TP0", "TP1"], ["", "", ""], [1, 2, 2], [4, 5, 6],
                                                   phase=False))
    rows = groups.rows()
    assert [(g.name, g.process, g.rank, list(g.windows), list(g.order)) for g in rows.metrics] == [
        ("cycle_ms", "TP0", "0", [1, 2, 3], [0, 1, 2]), ("cycle_ms", "TP0", "1", [3], [3]),
        ("tok_s", "TP0", "", [1, 2], [4, 5]), ("tok_s", "TP1", "", [2], [6])]


def test_a_run_parse_keeps_the_first_collectives_and_counts_them_all():
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    rows = [f"{8 << i % 56:>12} {2 << i % 56:>12}     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0"
            for i in range(150)]
    result = parse_lines([header, *rows], formats=["nccl_tests"])
    assert len(result.collectives) == 300
    parsed = summarize(result)
    assert len(parsed["collectives"]) == digest.COLLECTIVES_KEPT and parsed["collectives_total"] == 300
    assert parsed["collectives"][0]["size_bytes"] == 8 and parsed["collectives"][1]["in_place"] is True


def test_a_sink_digest_keeps_the_first_collectives_of_many_batches_and_summarizes_alike(monkeypatch):
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    rows = [f"{8 << i % 56:>12} {2 << i % 56:>12}     float     sum      -1    10.00    0.00    {i}.00      0    10.00    0.00    0.00      0"
            for i in range(150)]
    # Named before its rows, the table's rows reach the sink as they come (an unnamed table's wait
    # in the parser for a late name, nccl_tests.HOLD_LINES).
    data = "\n".join(["# Collective test starting: all_reduce_perf", header, *rows]).encode() + b"\n"
    monkeypatch.setattr(parsers, "SPILL_AT", 1)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    sink = digest.ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=sink)
    assert result.spilled > 0 and len(sink.collectives.kept) == digest.COLLECTIVES_KEPT
    assert summarize(result, sink.rows(result)) == summarize(parse_stream(io.BytesIO(data)))


def test_numbers_past_four_bytes_are_kept():
    assert array("i").typecode == digest.ints([1, 2]).typecode
    assert list(digest.ints([1, 2**40])) == [1, 2**40]


def test_a_digest_keeps_line_numbers_past_four_bytes():
    d = digest.FileDigest()
    d.metric("main", "sglang", "accept_len", "", 1, 10, 2.5)
    d.metric("main", "sglang", "accept_len", "", 2, 2**40, 2.6)
    d.metric("main", "sglang", "accept_len", "", 3, 30, 2.7)
    (group,) = d.rows().metrics
    assert list(group.lines) == [10, 2**40, 30] and list(group.windows) == [1, 2, 3] and list(group.order) == [0, 1, 2]


def many_rows(d: digest.FileDigest, n: int) -> None:
    for w in range(1, n + 1):
        d.metric("TP0", "sglang_decode", "gen_throughput_tok_s", "", w, 2 * w, w / 7)
        d.phase("main", "eagle_profile", "Draft", w, 2 * w + 1, w / 3, None if w % 3 else 1.5)
        if w == n // 2:  # one line past four bytes, after the first flush: pieces of both widths
            d.metric("TP0", "sglang_decode", "gen_throughput_tok_s", "", w, 2**40, 1.0)


def test_a_digest_parks_its_columns_on_disk_and_reads_them_back_whole(monkeypatch):
    monkeypatch.setattr(digest, "FLUSH_ROWS", 1000)
    d = digest.FileDigest()
    many_rows(d, 5000)
    rows = d.rows()
    (tput,), (draft,) = rows.metrics, rows.phases
    assert isinstance(tput._columns[0], digest.Parked) and len(tput._columns[0].pieces) > 5
    assert len(tput) == 5001 and list(tput.windows[:3]) == [1, 2, 3] and tput.lines[2500] == 2**40
    assert list(tput.order[:4]) == [0, 2, 4, 6] and tput.values[-1] == 5000 / 7
    assert draft.pcts is not None and draft.pcts[2] == 1.5 and draft.pcts[0] != draft.pcts[0]
    assert len(draft) == 5000 and draft.lines[-1] == 10001


def test_a_parse_spilled_on_disk_summarizes_as_one_held_in_memory(monkeypatch):
    data = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    monkeypatch.setattr(digest, "FLUSH_ROWS", 7)
    monkeypatch.setattr(parsers, "SPILL_AT", 1)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    sink = digest.ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=sink)
    rows = sink.rows(result)
    assert any(isinstance(g._columns[0], digest.Parked) for g in rows.phases)
    assert summarize(result, rows) == summarize(parse_stream(io.BytesIO(data)))


def test_a_digest_of_the_scanners_grouped_records_equals_one_of_its_frames(monkeypatch):
    from bench.loggen import HEAD_SAMPLE, windows_text

    data = HEAD_SAMPLE.read_bytes() + windows_text(3000, seed=7).encode() + public_sample(
        "sglang_decode_eagle3_issue11948.log").read_bytes() + windows_text(200, seed=8).encode()
    monkeypatch.setattr(parsers, "SPILL_AT", 5000)

    def digested(grouped: bool):
        monkeypatch.setattr(digest.ParseDigest, "takes_groups", grouped)
        sink = digest.ParseDigest()
        result = parse_stream(io.BytesIO(data), sink=sink)
        return result, sink.rows(result)

    (r1, grouped), (r2, framed) = digested(True), digested(False)
    for kind in ("phases", "metrics"):
        a, b = getattr(grouped, kind), getattr(framed, kind)
        assert [(g.process, g.source, g.name, g.rank) for g in a] == [(g.process, g.source, g.name, g.rank) for g in b]
        for x, y in zip(a, b, strict=True):
            assert (x.windows, x.lines, x.values, x.order) == (y.windows, y.lines, y.values, y.order)
            assert str(x.pcts) == str(y.pcts)  # NaN too
    assert len(grouped.phases) == 3 and len(grouped.phases[0]) > 3000
    assert summarize(r1, grouped) == summarize(r2, framed)


def test_grouped_batches_take_their_places_from_their_order_on_past_four_bytes():
    from ingest.parsers.records import Grouped

    def ints(*v: int) -> bytes:
        return array("i", v).tobytes()

    def batch() -> Grouped:  # two groups, their records interleaved: places 0, 2 and 1
        return Grouped(False, 3, 0, [("a", "s", "main", "", ints(1, 2), ints(10, 12), array("d", [1.0, 2.0]).tobytes(),
                                      ints(0, 2), None),
                                     ("b", "s", "main", "", ints(1), ints(11), array("d", [3.0]).tobytes(), ints(1), None)])

    g = digest._Grouper()
    for order in (0, 3, 2**31 - 3, 2**31):  # the last two batches past four bytes: 8-byte places
        g.add_grouped(None, batch(), order)
    a, b = g.groups(False)
    assert list(a.order) == [0, 2, 3, 5, 2**31 - 3, 2**31 - 1, 2**31, 2**31 + 2]
    assert list(b.order) == [1, 4, 2**31 - 2, 2**31 + 1]
    assert list(a.lines) == [10, 12] * 4 and list(b.values) == [3.0] * 4


@pytest.mark.django_db(transaction=True)
def test_the_migration_cuts_stored_digests_into_parts_that_join_back_to_them(alice):
    """Migration 0015: each one-value digest becomes parts of at most 1 MiB, in order; and back."""
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("runs", "0014_sample_blocks")], [("runs", "0015_digest_parts")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        Project, Run, LogFile = (apps.get_model("runs", m) for m in ("Project", "Run", "LogFile"))
        run = Run.objects.create(project=Project.objects.create(name="old"), name="old run", status="ready")
        big, small = (LogFile.objects.create(run=run, original_name=f"{n}.log", path=f"{n}.log", sha256="0" * 64,
                                             status="ready") for n in ("big", "small"))
        blob = bytes(range(256)) * (5 * 4096 + 3)  # 5 MiB and a bit
        apps.get_model("runs", "LogFileDigest").objects.bulk_create([
            apps.get_model("runs", "LogFileDigest")(logfile=big, data=blob),
            apps.get_model("runs", "LogFileDigest")(logfile=small, data=b"abc")])
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        Part = executor.loader.project_state(after).apps.get_model("runs", "DigestPart")
        parts = [bytes(p) for p in Part.objects.filter(logfile_id=big.id).order_by("seq").values_list("data", flat=True)]
        assert len(parts) == 6 and b"".join(parts) == blob and max(map(len, parts)) == 1 << 20
        assert [bytes(p) for p in Part.objects.filter(logfile_id=small.id).values_list("data", flat=True)] == [b"abc"]
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        Digest = executor.loader.project_state(before).apps.get_model("runs", "LogFileDigest")
        assert bytes(Digest.objects.get(logfile_id=big.id).data) == blob
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_a_profile_of_thousands_of_distinct_phase_names_lists_each_with_its_own_figures(monkeypatch):
    # Window 1 and 3 print the same 2000 names (0.25 and 0.75 ms), window 2 2000 others (0.5 ms):
    # per window the phases add up to 500, 1000 and 1500 ms; every name's median is 0.5 ms.
    n = 2000

    def block(names: range, ms: str) -> str:
        return "[EAGLE3_PROFILE] window=100 cycles, steps=2\n" + "".join(f"  Phase {k}: {ms} ms/cyc\n" for k in names)

    data = (block(range(n), "0.25") + block(range(n, 2 * n), "0.5") + block(range(n), "0.75")).encode()
    monkeypatch.setattr(digest, "FLUSH_ROWS", 999)  # groups parked over several flushes
    monkeypatch.setattr(eagle_profile.Parser, "PHASE_NAMES", 2 * n)  # past a file's cap: the digest's many groups
    monkeypatch.setattr(parsers, "SPILL_AT", 700)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 700)
    sink = digest.ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=sink)
    parsed = summarize(result, sink.rows(result))
    assert parsed["summary"]["cycle_ms"] == 1000.0 and parsed["summary"]["windows"] == 3
    assert [p["name"] for p in parsed["phases"]] == [f"Phase {k}" for k in range(2 * n)]
    assert parsed["phases"][0] == {"name": "Phase 0", "ms": 0.5, "pct": 0.05, "windows": 2, "spread": None}
    assert parsed["phases"][-1] == {"name": f"Phase {2 * n - 1}", "ms": 0.5, "pct": 0.05, "windows": 1,
                                    "spread": None}
    assert {(p["ms"], p["pct"]) for p in parsed["phases"]} == {(0.5, 0.05)}
    assert parsed == summarize(parse_stream(io.BytesIO(data)))  # as the records summarise, held in memory


def test_a_parked_groups_share_of_a_launch_is_parked_too(monkeypatch):
    """A run of several launches splits its groups: each share waits on disk as the group did,
    not in memory (a 512 MB log's shares were all its rows at once)."""
    monkeypatch.setattr(digest, "FLUSH_ROWS", 1000)
    d = digest.FileDigest()
    many_rows(d, 3000)
    (tput,), (draft,) = d.rows().metrics, d.rows().phases
    share = tput.part([0, 2, 1500, 3000])
    assert all(isinstance(c, digest.Parked) for c in share._columns[:4]) and len(share) == 4
    assert list(share.windows) == [1, 3, 1500, 3000] and list(share.lines) == [2, 6, 2**40, 6000]
    assert list(share.values) == [1 / 7, 3 / 7, 1.0, 3000 / 7] and list(share.order) == [0, 4, 3000, 5999]
    drafted = draft.part([1, 2])
    assert isinstance(drafted._columns[4], digest.Parked) and drafted.pcts is not None
    assert drafted.pcts[0] != drafted.pcts[0] and drafted.pcts[1] == 1.5  # none printed (NaN), then 1.5
    assert list(drafted.values) == [2 / 3, 1.0]


@pytest.mark.parametrize("keep", [range(0, 3000), range(995, 1006), range(1499, 1503), range(2998, 3000),
                                  range(7, 8), range(1000, 2000), [3, 4, 6], [5, 4], [1000, 1001, 1001], [0, 2999]])
def test_a_share_of_a_parked_group_holds_the_rows_it_names(keep, monkeypatch):
    """A run of rows (a launch's share where launches follow each other) is its pieces' part, read and
    written nowhere: across pieces, of both widths, the first and last rows; any other share is taken."""
    monkeypatch.setattr(digest, "FLUSH_ROWS", 1000)
    d = digest.FileDigest()
    many_rows(d, 3000)
    (tput,), (draft,) = d.rows().metrics, d.rows().phases
    for group in (tput, draft, digest.Group(None, "main", "s", "n", "", *(array(c.typecode, c) for c in (
            draft.windows, draft.lines, draft.values, draft.order, draft.pcts)))):
        columns = [group.windows, group.lines, group.values, group.order, group.pcts]
        spill = next((c.spill for c in group._columns if isinstance(c, digest.Parked)), None)
        written = spill and spill._end
        share = group.part(list(keep))
        got = [share.windows, share.lines, share.values, share.order, share.pcts]
        for column, part in zip(columns, got, strict=True):
            if column is None:
                assert part is None
                continue
            assert [str(v) for v in part] == [str(column[i]) for i in keep]  # NaN pcts alike
        assert len(share) == len(keep)
        runs = list(keep) == list(range(keep[0], keep[-1] + 1))
        assert spill is None or (spill._end == written) == runs  # a run is no write; a parked share is
        assert all(isinstance(c, digest.Parked) for c in share._columns[:4]) == (spill is not None)


# Busbw: nccl-tests rows kept as runs of adjacent lines.

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
    from_runs = [(int(last), int(n), float(peak)) for _, _, runs in busbw.runs() for last, n, peak in zip(*runs, strict=True)]
    per_line = [(line, n, peak) for (_, line), (n, peak) in _per_line(rows).items()]
    assert _panels(from_runs, ends) == _panels(per_line, ends)


def test_a_table_is_one_run():
    busbw = Busbw()
    for line in range(100, 1100):
        busbw.add(7, "pid 1", line, 2, float(line % 13))
    ((logfile, process, runs),) = list(busbw.runs())
    assert (logfile, process, [r.tolist() for r in runs]) == (7, "pid 1", [[1099], [2000], [12.0]])


def _runs_of(busbw: Busbw) -> dict:
    return {(lf, process): [r.tolist() for r in runs] for lf, process, runs in busbw.runs()}


BATCH = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 3), st.floats(0, 500, allow_nan=False)),
                 max_size=20, unique_by=lambda r: r[0]).map(sorted)


@given(st.lists(BATCH, max_size=5))
def test_lines_added_a_batch_at_once_make_the_runs_of_lines_added_one_by_one(batches):
    one_by_one, at_once = Busbw(), Busbw()
    for batch in batches:
        for line, n, peak in batch:
            one_by_one.add(3, "main", line, n, peak)
        at_once.add_lines(3, "main", np.array([r[0] for r in batch], dtype=np.int64),
                          np.array([r[1] for r in batch], dtype=np.int64), np.array([r[2] for r in batch]))
    assert _runs_of(at_once) == _runs_of(one_by_one)


SIDE = st.tuples(st.sampled_from(["main", "pid 7"]), st.integers(0, 3),
                 st.one_of(st.none(), st.floats(0, 500, allow_nan=False)))


@given(st.lists(SIDE, max_size=40), st.lists(st.integers(1, 40), max_size=3))
def test_a_frame_of_collectives_is_tallied_as_its_records(sides, cuts):
    """The native scanner's columns (CollectiveTally.add_frame) count as the records would: rows
    in line order, a row's sides on one line, processes interleaved, batches cut anywhere."""
    rows, line = [], 10
    for process, step, busbw in sides:  # step 0: the other side of the same line
        line += step
        rows.append(Collective("all_reduce", 8, 2, "float", "sum", -1, 1.0, 0.5, busbw, 0, step == 0, line, process))
    by_records, by_frames = digest.CollectiveTally(), digest.CollectiveTally()
    by_records.add(rows)
    bounds = [0, *sorted(c % (len(rows) + 1) for c in cuts), len(rows)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        by_frames.add_frame(collectives_frame(rows[start:end]))
    assert by_frames.total == by_records.total == len(rows)
    assert _runs_of(by_frames.busbw) == _runs_of(by_records.busbw)
    assert [(c.line, c.busbw_gbs, c.process) for c in by_frames.kept] == \
        [(c.line, c.busbw_gbs, c.process) for c in by_records.kept]


def _islands_as_sql_finds_them(rows: list[Collective]) -> list[tuple[str, int, int, int, float]]:
    """The query refresh_run ran before the islands were stored (runs/migrations/0022), in Python:
    per process cut to 64 characters and line, the rows with a bus bandwidth; then per process
    the runs of consecutive lines, by process and first line."""
    per_line = _per_line([(c.process[:64], c.line, 1, c.busbw_gbs) for c in rows if c.busbw_gbs is not None])
    out = []
    for process in sorted({p for p, _ in per_line}):
        lines = sorted(line for p, line in per_line if p == process)
        start = 0
        for at in range(1, len(lines) + 1):
            if at == len(lines) or lines[at] != lines[at - 1] + 1:
                own = [per_line[(process, line)] for line in lines[start:at]]
                out.append((process, lines[start], lines[at - 1], sum(n for n, _ in own), max(p for _, p in own)))
                start = at
    return out


LONG = "x" * 64  # two process tags that the rows' column cuts to one
ISLAND_ROW = st.tuples(st.sampled_from(["main", "pid 7", LONG + "a", LONG + "b"]), st.integers(1, 40),
                       st.one_of(st.none(), st.floats(0, 500, allow_nan=False)), st.booleans())


@given(st.lists(ISLAND_ROW, max_size=60), st.lists(st.integers(0, 60), max_size=4), st.booleans())
def test_islands_found_batch_by_batch_are_those_sql_finds_among_the_stored_rows(sides, cuts, shuffle):
    """The worker's islands (stored in place of a refresh's SQL): the same as the query over every
    row, whatever the batches: a line's rows cut apart, batches of earlier lines after later ones,
    processes interleaved, rows with no bus bandwidth, tags past the column's 64 characters."""
    rows = [Collective("all_reduce", 8, 2, "float", "sum", -1, 1.0, 0.5, busbw, 0, in_place, line, process)
            for process, line, busbw, in_place in sides]
    bounds = [0, *sorted(c % (len(rows) + 1) for c in cuts), len(rows)]
    batches = [rows[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]
    if shuffle:
        batches.reverse()
    islands = digest.BusbwIslands()
    for batch in batches:
        islands.add_frame(collectives_frame(batch) if batch else None)
    assert list(islands.islands()) == _islands_as_sql_finds_them(rows)


def test_a_table_is_one_island_and_a_gap_starts_another():
    from dataclasses import replace

    islands = digest.BusbwIslands()
    rows = [Collective("all_reduce", 8, 2, "float", "sum", -1, 1.0, 0.5, float(line % 13), 0, side, line, "main")
            for line in [*range(100, 200), *range(202, 210)] for side in (False, True)]
    islands.add_frame(collectives_frame(rows[:51]))  # line 125's sides in two batches
    islands.add_frame(collectives_frame(rows[51:]))
    # A batch inside an island already found (a row of line 150 again, its bus bandwidth the highest).
    islands.add_frame(collectives_frame([replace(rows[100], busbw_gbs=99.0)]))
    assert list(islands.islands()) == [("main", 100, 199, 201, 99.0), ("main", 202, 209, 16, 12.0)]


# Real logs of NCCL values: launch lines with NCCL variables, launcher and worker env dumps, NCCL
# echoes (`set by environment`) resolved to ranks at the parse's end, and several launches.
NCCL_VALUE_LOGS = ["nccl/sglang_launch_prompt_nccl_vars_pd_decode_slurmv4.log",
                   "nccl/torchrun_prompt_nccl_vars_slurmv4.log",
                   "nccl/nccl_debug_cumem_enable_kserve_issue3791.log",
                   "nccl/job_nersc_slurm_test_2.23_918503.log",
                   "shared/nccl_debug_8gpu_p2p_direct_nccl_issue1773.log"]
CORPUS = Path(__file__).resolve().parent / "corpus"


def _digest_parse(data: bytes, monkeypatch) -> tuple:
    monkeypatch.setattr(parsers, "SPILL_AT", 3)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    sink = digest.ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=sink)
    return sink, result, sink.rows(result)


@pytest.mark.parametrize("repeats", [1, 3])
@pytest.mark.parametrize("name", NCCL_VALUE_LOGS)
def test_folded_nccl_values_summarize_as_every_value(monkeypatch, name, repeats):
    # A log repeated (a service restarted): the same variables echoed again in later launches.
    data = (CORPUS / name).read_bytes() * repeats
    _, result, rows = _digest_parse(data, monkeypatch)
    assert summarize(result, rows) == summarize(parse_stream(io.BytesIO(data)))


def test_folded_nccl_values_of_mixed_logs_summarize_as_every_value(monkeypatch):
    # Logs one after another in one file: values of one identity in launches of different processes.
    data = b"".join((CORPUS / name).read_bytes() for name in NCCL_VALUE_LOGS * 2)
    sink, result, rows = _digest_parse(data, monkeypatch)
    every = parse_stream(io.BytesIO(data))
    assert len(result.nccl) < len(every.nccl)
    assert summarize(result, rows) == summarize(every)


def test_a_repeated_launch_log_holds_its_distinct_nccl_values_only(monkeypatch):
    """Memory follows the distinct values: a launch log of env dumps and launch lines repeated 4
    or 16 times holds as many value objects (one per identity), the numbers of its lines aside."""
    data = (CORPUS / "nccl/torchrun_prompt_nccl_vars_slurmv4.log").read_bytes()
    held = []
    for repeats in (4, 16):
        sink, result, _ = _digest_parse(data * repeats, monkeypatch)
        assert len(sink.nccl._which) == len(parse_stream(io.BytesIO(data * repeats)).nccl)
        held.append((len(sink.nccl._first), len(sink.nccl._loose), len(result.nccl)))
    assert held[0] == held[1] and held[0][0] > 0


def test_an_echo_of_every_restart_keeps_its_rank_and_last_line(monkeypatch):
    # Echoes get their rank at the parse's end (nccl_debug): folded then, by that rank.
    data = (CORPUS / "nccl/nccl_debug_cumem_enable_kserve_issue3791.log").read_bytes() * 3
    _, result, _ = _digest_parse(data, monkeypatch)
    every = parse_stream(io.BytesIO(data)).nccl
    assert all(v.rank for v in result.nccl if v.kind == "effective")
    last = {}
    for v in every:
        last[(v.process, v.kind, v.key, v.rank, v.source, v.value)] = v.line
    assert {(v.process, v.kind, v.key, v.rank, v.source, v.value): v.line for v in result.nccl} == last


def test_the_nccl_fold_keeps_lines_past_32_bits():
    from dataclasses import replace

    from ingest.parsers.records import NcclValue, ParseResult
    from runs.digest import NcclFold

    fold = NcclFold()
    a = NcclValue("NCCL_PROTO", "LL", "declared", 3, "launch prefix", process="main")
    c = replace(a, value="Simple", line=9)
    fold.add([a, c])
    assert fold._lines.typecode == "i"  # 4 bytes a value while the lines fit
    b = replace(a, line=2**31 + 7)
    fold.add([b])
    assert fold._lines.typecode == "q" and list(fold._lines) == [3, 9, 2**31 + 7]
    # the last value of each identity, in the order they came: c, then a again at its far line
    assert fold.values(ParseResult()) == [c, b]
    # a line past 32 bits inside a batch: the lines before it in the batch kept once, in order
    fold = NcclFold()
    fold.add([a])
    fold.add([c, b, replace(c, line=11)])
    assert fold._lines.typecode == "q" and list(fold._lines) == [3, 9, 2**31 + 7, 11]
    assert list(fold._which) == [0, 1, 0, 1]


def _every_last(values: list, starts: dict, by_line: bool) -> list:
    """The fold's answer the long way: each value's (identity, segment), the last of each, in order."""
    last: dict[tuple, int] = {}
    order = sorted(range(len(values)), key=lambda i: values[i].line) if by_line else range(len(values))
    for i in order:
        v = values[i]
        cuts = starts.get(v.logfile, [])
        last[(v.logfile, v.process, v.kind, v.key, v.rank, v.source, v.value, bisect_right(cuts, v.line))] = i
    return [values[i] for i in sorted(last.values())]


@given(st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from(["main", "pid 7"]),
                          st.sampled_from(["declared", "effective"]), st.just("NCCL_PROTO"),
                          st.sampled_from(["", "0"]), st.sampled_from(["LL", "Ring"]), st.integers(1, 8)),
                max_size=60),
       st.dictionaries(st.sampled_from([None, 1, 2]), st.lists(st.integers(1, 8), max_size=4).map(sorted),
                       max_size=3),
       st.booleans(), st.sampled_from([1, 2, 1 << 20]), st.booleans())
def test_the_nccl_fold_keeps_the_last_value_of_each_identity_in_each_segment(rows, starts, by_line, chunk, lone):
    from ingest.parsers.records import NcclValue
    from runs.digest import NcclFold

    if lone:  # a lone parse's: one file, its segments known
        rows = [(None, *row[1:]) for row in rows]
        starts = {None: starts.get(None, [3, 6])}
    values = [NcclValue(key, value, kind, line, "export", rank, logfile, process)
              for logfile, process, kind, key, rank, value, line in rows]
    fold = NcclFold()
    fold.add(values)
    for v in values:  # loose echoes (no rank yet) take theirs before the fold, as nccl_debug sets it
        if v.kind == "effective" and not v.rank:
            v.rank = "3"
    want = _every_last(values, starts, by_line)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(digest, "_FOLD_CHUNK", chunk)
        assert fold._fold(starts, by_line) == want


@given(st.lists(st.integers(-5, 40), max_size=50), st.sampled_from([1, 3, 1 << 20]))
def test_the_last_of_each_key_is_found_alike_packed_and_sorted(keys, chunk):
    want = {k: i for i, k in enumerate(keys)}
    expect = sorted((i, k) for k, i in want.items())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(digest, "_FOLD_CHUNK", chunk)
        assert digest._last_of_each(np.array(keys, dtype=np.int32), None) == expect  # packed in 64 bits
        assert digest._last_of_each(np.array(keys, dtype=np.int64), None) == expect  # the stable sort
