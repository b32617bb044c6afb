"""runs/digest.py: the summary read from per-file digests equals the summary of every row reloaded,
and a pasted NCCL annotation refreshes the run without reading its bulky rows."""

from __future__ import annotations

import io
import json
from array import array

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import ingest.parsers as parsers
from ingest import registration
from ingest import services as ingest_services
from ingest.parsers import parse_lines, parse_stream
from runs import digest
from runs.models import Annotation, DigestPart, Run
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


def digested(run: Run) -> int:
    """How many of the run's files have a digest."""
    return DigestPart.objects.filter(logfile__run=run, seq=0).count()


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
def test_refresh_from_digests_gives_the_parse_of_every_row_reloaded(alice, case):
    run = upload(alice, RUNS[case]())
    assert run.status == "ready" and digested(run) == run.logfiles.count()
    # The old path: every stored row back as an object, summarised.
    assert run.parsed == json.loads(json.dumps(summarize(run_result(run))))
    assert run.launches_count == run.parsed["launches_count"]


@pytest.mark.django_db
def test_a_file_parsed_before_digests_gets_one_from_its_rows(alice):
    run = upload(alice, RUNS["two launches"]())
    before = run.parsed
    DigestPart.objects.filter(logfile__run=run).delete()
    refresh_run(run.id)
    assert Run.objects.get(id=run.id).parsed == before
    assert digested(run) == 2


ROW_TABLES = ("runs_sampleblock", "runs_digestpart", "runs_collectiveresult")


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


def test_a_digest_round_trips_with_its_windows_moved_on():
    d = digest.FileDigest()
    d.phase("TP0", "eagle_profile", "Draft", 1, 10, 0.5, 11.8)
    d.phase("TP0", "eagle_profile", "Draft", 2, 20, 0.6, None)
    d.metric("TP0", "eagle_profile", "cycle_ms", "", 2, 21, 4.8)
    d.metric("main", "nccl_tests", "avg_busbw_gbs", "", 0, 99, 7.5)
    back = digest.decode(d.encode(), logfile=7, offset=100)
    assert back.max_window == 2 and back.last_avg_busbw == 7.5
    (draft,) = back.phases
    assert (draft.logfile, draft.process, draft.name) == (7, "TP0", "Draft")
    assert list(draft.windows) == [101, 102] and list(draft.lines) == [10, 20] and list(draft.values) == [0.5, 0.6]
    assert draft.pcts is not None and draft.pcts[0] == 11.8 and draft.pcts[1] != draft.pcts[1]  # NaN: none printed
    assert [m.name for m in back.metrics] == ["cycle_ms", "avg_busbw_gbs"] and list(back.metrics[0].order) == [2]


def test_a_large_digest_round_trips_a_column_at_a_time_and_a_cut_one_is_refused():
    import random

    rng = random.Random(1)
    d = digest.FileDigest()
    for w in range(1, 150_001):  # columns of several MiB: read back across many inflate steps
        d.metric("TP0", "sglang_decode", "gen_throughput_tok_s", "", w, 2 * w, rng.random())
        d.phase("main", "eagle_profile", "Draft", w, 2 * w + 1, rng.random(), None if w % 3 else 1.5)
    blob = d.encode()
    back = digest.decode(memoryview(blob), logfile=1, offset=0)
    (tput,), (draft,) = back.metrics, back.phases
    kept = d.rows()
    assert tput.values == kept.metrics[0].values and draft.values == kept.phases[0].values
    assert list(draft.lines[-2:]) == [299_999, 300_001] and draft.order == kept.phases[0].order
    with pytest.raises(ValueError, match="cut short"):
        digest.decode(blob[: len(blob) // 2], logfile=1, offset=0)


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
    (group,) = digest.decode(d.encode(), logfile=1, offset=0).metrics
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


def test_a_digest_in_parts_decodes_into_a_spill_as_it_was(monkeypatch):
    monkeypatch.setattr(digest, "FLUSH_ROWS", 1000)
    d = digest.FileDigest()
    many_rows(d, 5000)
    parts = list(d.encoded(part_bytes=4096))
    assert len(parts) > 3 and b"".join(parts) == d.encode()
    spill = digest.Spill()
    back = digest.decode(iter(parts), logfile=3, offset=10, spill=spill)
    kept = d.rows()
    for got, want in ((back.metrics[0], kept.metrics[0]), (back.phases[0], kept.phases[0])):
        assert isinstance(got._columns[2], digest.Parked)
        assert list(got.windows) == [w + 10 for w in want.windows]
        assert (got.lines, got.values, got.order) == (want.lines, want.values, want.order)
    assert str(list(back.phases[0].pcts or [])) == str(list(kept.phases[0].pcts or []))  # NaN too
    with pytest.raises(ValueError, match="cut short"):
        digest.decode(iter(parts[:-2]), logfile=3, offset=0, spill=digest.Spill())


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
