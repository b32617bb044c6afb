"""ingest.services called directly: upload, parse, re-parse, failures, reconciler."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from ingest import registration, services
from runs import columns
from runs.models import CollectiveResult, LogFile, Project, Run, Status, collective_values
from runs.permissions import RoleRequired
from runs.services import ServiceError
from tests.samples import upload_bytes
from tests.synthetic import stored_rows

pytestmark = pytest.mark.django_db


def test_upload_stores_file_with_hash_and_queues_it(alice, upload_run, data_dir):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    assert run.status == Status.QUEUED and lf.status == Status.QUEUED
    stored = data_dir / lf.path
    assert stored.read_bytes().startswith(b"$ NCCL_ALGO=Ring")
    assert lf.size == stored.stat().st_size and len(lf.sha256) == 64
    assert lf.original_name == "spec_eagle3_tuned_2step.log" and "spec_eagle3" not in lf.path


def test_parse_fills_rows_and_run_summary(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    assert run.status == Status.READY
    assert run.steps == 2 and "line" in run.steps_source
    assert run.verify_ms == 4.08 and run.throughput_tok_s == 472.8 and run.tokens_per_cycle == 2.2
    verify = stored_rows("phase", run=run, name="Target verify")
    assert verify.height == 6
    first = verify.row(0, named=True)
    assert (first["ms"], first["pct"], first["window"]) == (4.02, 83.6, 1)
    assert first["line"] == 141 and first["logfile"] == run.logfiles.get().id  # line 141 of the log


def test_stored_line_numbers_point_at_the_source_text(alice, upload_run, data_dir):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    lf = run.logfiles.get()
    text = (data_dir / lf.path).read_text().splitlines()
    phases = stored_rows("phase", run=run)
    assert phases.height > 10
    for name, ms, line in phases.head(10).select("name", "ms", "line").iter_rows():
        assert name in text[line - 1] and f"{ms:.2f}" in text[line - 1]


def test_redelivered_task_does_nothing(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    lf = run.logfiles.get()
    rows = stored_rows("phase", run=run).height
    assert services.parse_logfile(lf.id) == "skipped"
    assert stored_rows("phase", run=run).height == rows
    lf.refresh_from_db()
    assert lf.attempts == 1


def test_reparse_replaces_rows_instead_of_adding(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    before = (stored_rows("phase", run=run).height, stored_rows("metric", run=run).height)
    services.requeue_run(run)
    services.parse_logfile(run.logfiles.get().id)
    after = (stored_rows("phase", run=run).height, stored_rows("metric", run=run).height)
    assert after == before
    run.refresh_from_db()
    assert run.status == Status.READY


def test_reparse_and_refresh_check_the_editor_role_themselves(alice, vic, upload_run):
    """Not only the API view: any caller of the service (a page, a command) gets the same refusal."""
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    for call in (lambda: services.reparse_run(vic, run), lambda: registration.refresh_registered(vic, run)):
        with pytest.raises(RoleRequired):
            call()
    assert run.logfiles.get().status == Status.READY


def test_two_files_make_one_run_with_windows_in_sequence(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_default_2step.log")
    assert run.logfiles.count() == 2 and run.status == Status.READY
    assert run.parsed["summary"]["windows"] > 6


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "empty"),
    (b"\x00\x01\x02binary\x00" * 20, "binary"),
])
def test_bad_input_fails_with_a_reason_and_no_rows(alice, content, reason):
    run = upload_bytes(alice, "bad.log", content)
    lf = run.logfiles.get()
    assert services.parse_logfile(lf.id) == Status.FAILED
    run.refresh_from_db()
    lf.refresh_from_db()
    assert run.status == Status.FAILED and lf.status == Status.FAILED
    assert reason in lf.error and "bad.log" in lf.error and reason in run.error
    assert not stored_rows("phase", run=run).height and not stored_rows("metric", run=run).height


def test_text_in_no_known_format_is_kept_as_context_with_a_warning_not_failed(alice):
    run = upload_bytes(alice, "notes.txt", b"hello\nnothing to see here\n")
    lf = run.logfiles.get()
    assert services.parse_logfile(lf.id) == Status.READY
    run.refresh_from_db()
    lf.refresh_from_db()
    assert lf.formats == [] and "none of the 2 lines" in lf.warnings[0]["message"]
    assert run.parsed["context"][0]["file"] == "notes.txt" and "nothing to see here" in run.parsed["context"][0]["head"]


def test_a_topology_dump_beside_a_log_is_read_and_the_run_shows_it(alice, upload_run):
    run = upload_run(alice, "nccl-tests_all_reduce_default.log",
                     "../tests/corpus/nccl/nvidia_smi_topo_pix_phb_sys_k8s_issue53497.txt")
    assert run.logfiles.filter(status=Status.READY).count() == 2
    topology = run.parsed["topology"]
    assert topology["pairs"]["GPU0-GPU1"] == "PIX" and not topology["nvlink"]
    assert "NCCL_P2P_LEVEL" in topology["p2p_level"]


def test_truncated_log_is_ready_with_a_warning(alice, data_dir):
    content = (
        b"[EAGLE3_PROFILE] window=100 cycles, steps=2\n"
        b"  Target verify:       4.02 ms/cyc  ( 83.6%)\n"
        b"  Accept len:          1.24\n"
        b"  Throughput:         466.3 tok/s\n"
        b"[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Target verify:       4.5"
    )
    run = upload_bytes(alice, "cut.log", content)
    services.parse_logfile(run.logfiles.get().id)
    run.refresh_from_db()
    lf = run.logfiles.get()
    assert run.status == Status.READY and run.verify_ms == 4.02
    assert lf.warnings and lf.warnings[0]["line"] == 6 and "mid-line" in lf.warnings[0]["message"]


def test_parser_crash_marks_failed_and_writes_nothing(alice, upload_run, monkeypatch):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)

    def boom(stream):
        raise RuntimeError("parser bug")

    monkeypatch.setattr(services, "parse_stream", boom)
    assert services.parse_logfile(run.logfiles.get().id) == Status.FAILED
    run.refresh_from_db()
    assert "internal error" in run.error and not stored_rows("phase", run=run).height


def test_an_error_while_folding_on_its_thread_fails_the_file_naming_it(alice, upload_run, monkeypatch):
    """The blocks are cut on the fold thread while parsing: its error reaches the parse, and the
    file fails naming it, with nothing half-written (as a parser crash)."""
    import threading

    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    assert stored_rows("phase", run=run).height
    services.requeue_run(run)
    threads = []

    def boom(*args):
        threads.append(threading.current_thread().name)
        raise ValueError("no room for the blocks")

    monkeypatch.setattr(columns.Cutter, "add", boom)
    assert services.parse_logfile(run.logfiles.get().id) == Status.FAILED
    run.refresh_from_db()
    assert "no room for the blocks" in run.error and "internal error" in run.error
    assert threads and threads[0].startswith("runlens-fold")
    assert not stored_rows("phase", run=run).height


def break_writes_after(monkeypatch, blocks: int) -> None:
    """The database write fails ("disk full") after `blocks` column blocks were written."""
    real = columns.Cutter.blocks

    def written_then_full(cut):
        for n, block in enumerate(real(cut)):
            if n >= blocks:
                raise RuntimeError("disk full")
            yield block

    monkeypatch.setattr(columns.Cutter, "blocks", written_then_full)


def test_failed_store_leaves_previous_rows_intact(alice, upload_run, monkeypatch):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    rows = stored_rows("phase", run=run).height
    services.requeue_run(run)

    break_writes_after(monkeypatch, 2)
    with pytest.raises(RuntimeError, match="disk full"):
        services.parse_logfile(run.logfiles.get().id)
    # The transaction rolled back: the old rows are still all there, none duplicated, and the
    # file is handed back to the queue for the retry or the reconciler.
    assert stored_rows("phase", run=run).height == rows
    assert run.logfiles.get().status == Status.QUEUED


def test_big_logs_are_inserted_in_batches_while_parsing(alice, data_dir, monkeypatch):
    import ingest.parsers as parsers

    monkeypatch.setattr(parsers, "SPILL_AT", 50)
    block = (
        "[EAGLE3_PROFILE] window=100 cycles, steps=2\n"
        "  Target verify:       4.02 ms/cyc  ( 83.6%)\n"
        "  Accept len:          1.24\n"
        "  Throughput:         466.3 tok/s\n"
    )
    run = upload_bytes(alice, "big.log", (block * 3000).encode())
    calls = []
    real = columns.Cutter.add
    monkeypatch.setattr(columns.Cutter, "add", lambda cut, phases=None, metrics=None: (
        calls.append(0 if phases is None else phases.height), real(cut, phases, metrics)))
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY
    # Phases were cut into blocks while parsing a chunk at a time (the first read is 64 KiB: 868 of
    # its blocks, then larger reads), never all at once.
    assert len(calls) >= 3 and calls[0] == 868 and max(calls) < 3000 and sum(calls) == 3000
    assert stored_rows("phase", run=run).height == 3000
    assert stored_rows("metric", run=run, name="tokens_per_cycle").height == 3000


def test_nccl_tests_rows_named_only_after_their_table_are_stored_with_their_op(alice, monkeypatch):
    import ingest.parsers as parsers

    # The sink stores rows after every line: before the concluding line names the op.
    monkeypatch.setattr(parsers, "SPILL_AT", 1)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    header = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong")
    rows = [f"{8 << k:>12} {2 << k:>13}     float     sum      -1    15.78    0.00    0.00      0"
            "    13.87    0.00    0.00      0" for k in range(20)]
    log = "\n".join(["# nThread 1 nGpus 2 minBytes 8 maxBytes 8388608", header, *rows,
                     "# Avg bus bandwidth    : 0.00 ", "#", "# Collective test concluded: all_gather_perf", ""])
    run = upload_bytes(alice, "late-op.log", log.encode())
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY
    stored = CollectiveResult.objects.filter(run=run)
    assert stored.count() == 20  # a row a line, both its sides
    assert len(list(collective_values(stored, "op"))) == 40
    assert set(stored.values_list("op", flat=True)) == {"all_gather"}


def test_reconciler_requeues_stuck_files_and_gives_up_after_max_attempts(alice, upload_run, settings):
    settings.MAX_PARSE_ATTEMPTS = 2
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    later = timezone.now() + timedelta(seconds=settings.CLAIM_STALE_SECONDS + 60)
    assert services.claim(lf.id)
    assert services.reconcile(now=later) == 1
    lf.refresh_from_db()
    assert lf.status == Status.QUEUED and lf.attempts == 1
    assert services.claim(lf.id)
    assert services.reconcile(now=later) == 1
    lf.refresh_from_db()
    assert lf.status == Status.FAILED and "gave up after 2 attempts" in lf.error
    assert Run.objects.get(id=run.id).status == Status.FAILED


def test_a_claim_whose_heartbeat_went_stale_can_be_taken_over(alice, upload_run, settings):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    assert services.claim(lf.id)
    assert not services.claim(lf.id)
    long_ago = timezone.now() - timedelta(seconds=settings.CLAIM_STALE_SECONDS + 1)
    LogFile.objects.filter(id=lf.id).update(claimed_at=long_ago)  # a long parse, still beating
    assert not services.claim(lf.id)
    LogFile.objects.filter(id=lf.id).update(heartbeat_at=long_ago)  # its worker went silent
    assert services.claim(lf.id)


def test_a_parse_whose_run_was_deleted_meanwhile_is_cancelled_and_writes_nothing(alice, upload_run, monkeypatch):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    real = services._store_rows

    def delete_first(*args):  # DELETE /runs/{id} lands while the worker parses
        Run.objects.filter(id=run.id).delete()
        real(*args)

    monkeypatch.setattr(services, "_store_rows", delete_first)
    assert services.parse_logfile(lf.id) == "cancelled"
    assert not stored_rows("phase").height and not LogFile.objects.exists()


def test_project_for_refuses_a_project_the_user_is_not_in_as_if_it_did_not_exist(alice, eve):
    answers = []
    for name in ("team", "nobody-has-this"):
        with pytest.raises(ServiceError) as e:
            registration.project_for(eve, name)
        answers.append((e.value.status, e.value.code, e.value.message.replace(repr(name), "NAME")))
    assert answers[0] == answers[1] and answers[0][:2] == (404, "unknown_project")


def test_project_for_creates_only_on_purpose_and_never_a_private_one(alice, eve):
    with pytest.raises(ServiceError, match="no project you may upload to"):
        registration.project_for(eve, None)
    lab = registration.project_for(eve, "eve-lab", create=True)
    assert registration.project_for(eve, None) == lab and lab.membership_set.get(user=eve).role == "admin"
    with pytest.raises(ServiceError) as taken:
        registration.project_for(eve, "team", create=True)
    assert taken.value.status == 409 and not Project.objects.get(name="team").membership_set.filter(user=eve)


def test_a_redelivered_task_takes_over_its_own_dead_claim_only(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    assert services.claim(lf.id, token="task-1")
    assert not services.claim(lf.id, token="task-2")  # another message: the claim is taken
    assert services.claim(lf.id, token="task-1")  # the same message again: its worker died
    lf.refresh_from_db()
    assert lf.attempts == 2 and lf.claim_token == "task-1"


def test_a_log_that_keeps_killing_workers_ends_failed(alice, upload_run, settings):
    settings.MAX_PARSE_ATTEMPTS = 2
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    lf = run.logfiles.get()
    for _ in range(2):
        assert services.claim(lf.id, token="t")  # each time the worker was killed mid-parse
    assert services.parse_logfile(lf.id, token="t") == Status.FAILED
    lf.refresh_from_db()
    assert "gave up after 2 attempts" in lf.error and not stored_rows("phase", run=run).height


def test_reparse_is_not_mistaken_for_a_stuck_file(alice, upload_run, settings):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    LogFile.objects.filter(run=run).update(updated_at=timezone.now() - timedelta(hours=1))
    services.requeue_run(run)
    assert services.reconcile() == 0


def test_nul_bytes_after_the_head_are_dropped_not_stored(alice, data_dir):
    content = b"filler line\n" * 1000 + b"NCCL_PROTO=LL\x00\x00 python3 launch.py\n" + (
        b"[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Target verify:       4.02 ms/cyc  ( 83.6%)\n")
    run = upload_bytes(alice, "rotated.log", content)
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY
    run.refresh_from_db()
    assert run.verify_ms == 4.02 and run.parsed["nccl"]["declared"]["NCCL_PROTO"] == "LL"


def test_stored_rows_are_the_parsed_records_exactly(alice, data_dir):
    """Rows of the native scanner go to the database as CSV (COPY) or instances (SQLite): every
    value, window, line and process as the line-at-a-time parse gives them."""
    import io

    from bench.loggen import HEAD_SAMPLE, windows_text
    from ingest.parsers import parse_stream

    data = HEAD_SAMPLE.read_bytes() + windows_text(4000, seed=5).encode()
    run = upload_bytes(alice, "lanes.log", data)
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY
    parsed = parse_stream(io.BytesIO(data), engine="lines")
    # In the order the parse emitted them (i), and each as the parser made it.
    phases = stored_rows("phase", run=run).sort("i").select("name", "ms", "pct", "window", "line", "process", "source")
    assert list(phases.iter_rows()) == [(p.name, p.ms, p.pct, p.window, p.line, p.process, p.source)
                                        for p in parsed.phases]
    metrics = stored_rows("metric", run=run).sort("i").select("name", "value", "window", "line", "rank", "process",
                                                              "source")
    stored = list(metrics.iter_rows())
    assert stored == [(m.name, m.value, m.window, m.line, m.rank, m.process, m.source) for m in parsed.metrics]
    assert len(stored) > 40_000


@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_while_its_rows_are_stored_keeps_none_of_them(alice, data_dir, monkeypatch):
    """The bulk row tables have no database FK to refuse rows of a deleted run: delete_run waits
    for the store holding the log file's row, then deletes what it wrote."""
    import threading

    block = "[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Target verify:       4.02 ms/cyc  ( 83.6%)\n"
    run = upload_bytes(alice, "racing.log", (block * 50).encode())
    stored, release = threading.Event(), threading.Event()
    finish = services._finish_logfile

    def slow_finish(*args, **kwargs):  # inside the store's transaction, its rows written
        stored.set()
        release.wait(30)
        return finish(*args, **kwargs)

    monkeypatch.setattr(services, "_finish_logfile", slow_finish)

    def in_thread(call):
        try:
            call()
        finally:
            connection.close()

    parse = threading.Thread(target=in_thread, args=(lambda: services.parse_logfile(run.logfiles.get().id),))
    parse.start()
    assert stored.wait(30)
    delete = threading.Thread(target=in_thread, args=(lambda: registration.delete_run(alice, Run.objects.get(id=run.id)),))
    delete.start()
    delete.join(1)
    assert delete.is_alive()  # waiting for the store of the log file (its store lock)
    release.set()
    parse.join(30)
    delete.join(30)
    assert not Run.objects.filter(id=run.id).exists()
    assert not stored_rows("phase", run_id=run.id).height
    assert not stored_rows("metric", run_id=run.id).height


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_is_written_while_its_store_is_open_and_never_waits_on_the_finishing_store(
        alice, data_dir, monkeypatch):
    """The store's transaction leaves the log file's row alone while it writes the rows (the beat is
    written then); once it holds the row (the file marked ready, the run's summary being made), a
    beat gives up within its lock timeout, not behind the store's COMMIT, and the claim is not
    taken for lost."""
    import threading
    import time

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer for the whole database: nothing else writes while a store is open")
    block = "[EAGLE3_PROFILE] window=100 cycles, steps=2\n  Target verify:       4.02 ms/cyc  ( 83.6%)\n"
    run = upload_bytes(alice, "beating.log", (block * 50).encode())
    lf_id = run.logfiles.get().id
    writing, finishing, release = threading.Event(), threading.Event(), threading.Event()
    write, refresh = columns.write, services.refresh_run

    def slow_write(*args, **kwargs):  # in the store's transaction, before its rows are written
        writing.set()
        release.wait(30)
        return write(*args, **kwargs)

    def slow_refresh(*args, **kwargs):  # in the store's transaction, the file's row updated
        finishing.set()
        release.wait(30)
        return refresh(*args, **kwargs)

    monkeypatch.setattr(columns, "write", slow_write)
    monkeypatch.setattr(services, "refresh_run", slow_refresh)

    def parse():
        try:
            services.parse_logfile(lf_id)
        finally:
            connection.close()

    def beat_within(seconds: float):
        heartbeat = services.Heartbeat(LogFile.objects.get(id=lf_id))
        said: list = []
        thread = threading.Thread(target=lambda: (said.append(heartbeat.beat()), connection.close()))
        start = time.monotonic()
        thread.start()
        thread.join(seconds)
        assert not thread.is_alive(), "the heartbeat waited on the store"
        return said[0], time.monotonic() - start, heartbeat.lost.is_set()

    parser = threading.Thread(target=parse)
    parser.start()
    try:
        assert writing.wait(30)
        before = LogFile.objects.get(id=lf_id).heartbeat_at
        assert beat_within(5)[0] is True
        assert LogFile.objects.get(id=lf_id).heartbeat_at > before
        release.set()
        release.clear()  # the next wait, in the run's refresh, holds again
        assert finishing.wait(30)
        written, seconds, lost = beat_within(5)
        assert written is None and not lost and seconds < 3
    finally:
        release.set()
        parser.join(30)
    assert LogFile.objects.get(id=lf_id).status == Status.READY


# Real logs of NCCL values (launch lines, launcher and worker env dumps, NCCL echoes resolved to
# ranks at the parse's end, several launches), as tests/test_digest.py folds them for parselog.
NCCL_VALUE_LOGS = ["nccl/sglang_launch_prompt_nccl_vars_pd_decode_slurmv4.log",
                   "nccl/torchrun_prompt_nccl_vars_slurmv4.log",
                   "nccl/nccl_debug_cumem_enable_kserve_issue3791.log",
                   "nccl/job_nersc_slurm_test_2.23_918503.log",
                   "shared/nccl_debug_8gpu_p2p_direct_nccl_issue1773.log"]


def _every_value(fold, result):
    """NcclFold.stored without the fold: every value of the parse, in the order it came (as the
    worker stored them before)."""
    from dataclasses import replace

    return [replace(fold._first[i] if i >= 0 else fold._loose[-1 - i], line=line)
            for i, line in zip(fold._which, fold._lines, strict=True)]


def _nccl_view(run: Run) -> tuple:
    """What the pages, the API and the run list read of a run's NCCL values."""
    from runs.models import NcclSetting

    run.refresh_from_db()
    rows = {tuple(r) for r in NcclSetting.objects.filter(run=run).values_list(
        "process", "key", "value", "kind", "rank", "source", "role")}
    return run.parsed, run.nccl_status, run.person_conflict, run.launches_count, rows, NcclSetting.objects.filter(
        run=run).count()


def _parse_again(run: Run) -> None:
    services.requeue_run(run)
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY


@pytest.mark.parametrize("logs", [[name] for name in NCCL_VALUE_LOGS] + [NCCL_VALUE_LOGS * 2],
                         ids=[*NCCL_VALUE_LOGS, "all, twice"])
def test_folded_nccl_rows_show_as_every_value_whatever_role_a_person_gives_the_file(alice, monkeypatch, logs):
    """The worker stores the last of each NCCL value between two places a launch could start:
    the run's verdicts, their lines and the run list's filter read the same as from every value,
    with the file's role as detected and under each role a person may set afterwards."""
    from pathlib import Path

    from runs.digest import NcclFold
    from runs.layout import ROLES

    corpus = Path(__file__).resolve().parent / "corpus"
    # A service restarted: the same variables echoed again in later launches.
    data = b"".join((corpus / name).read_bytes() for name in logs) * 3
    run = upload_bytes(alice, "nccl.log", data)
    lf = run.logfiles.get()
    folded = NcclFold.stored
    for role in ("", *ROLES):
        LogFile.objects.filter(id=lf.id).update(role=role)
        monkeypatch.setattr(NcclFold, "stored", folded)
        _parse_again(run)
        kept = _nccl_view(run)
        monkeypatch.setattr(NcclFold, "stored", _every_value)
        _parse_again(run)
        every = _nccl_view(run)
        assert kept[:5] == every[:5], role
        assert kept[5] < every[5]  # fewer rows


def test_nccl_values_echoed_again_by_the_same_processes_store_no_more_rows(alice):
    """Rows follow the distinct values, not the lines: a launch log's env dumps and launch lines
    repeated 4 or 16 times (the same processes, whose first lines are in the first copy) store
    as many NCCL rows as the log once, each at its last line."""
    from pathlib import Path

    from runs.models import NcclSetting

    data = (Path(__file__).resolve().parent / "corpus" / "nccl/torchrun_prompt_nccl_vars_slurmv4.log").read_bytes()
    lines = data.count(b"\n")
    stored = []
    for repeats in (1, 4, 16):
        run = upload_bytes(alice, f"x{repeats}.log", data * repeats)
        assert services.parse_logfile(run.logfiles.get().id) == Status.READY
        rows = NcclSetting.objects.filter(run=run).order_by("id")
        stored.append([(r.key, r.value, r.line - (repeats - 1) * lines) for r in rows])
    assert stored[0] and stored[0] == stored[1] == stored[2]


@pytest.mark.parametrize("name", ["shared/nccl_tests_all_reduce_h100_16rank_k8s_mpi.txt",
                                  "nccl/nccl_tests_command_echo_alltoall_2.30.3_report.log"])
def test_stored_collectives_are_the_parsed_rows_exactly(alice, monkeypatch, name):
    """nccl-tests rows go to the database as columns (an Arrow spool, then CSV for COPY or
    instances for SQLite): every field, line and process as the line-at-a-time parse gives them,
    spilled in small batches; a text that reads as COPY's NULL mark stays a text."""
    import io
    from pathlib import Path

    import ingest.parsers as parsers
    from ingest.parsers import parse_stream

    monkeypatch.setattr(parsers, "SPILL_AT", 7)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    data = (Path(__file__).resolve().parent / "corpus" / name).read_bytes() * 3
    run = upload_bytes(alice, "tests.log", data)
    assert services.parse_logfile(run.logfiles.get().id) == Status.READY
    parsed = parse_stream(io.BytesIO(data), engine="lines").collectives
    stored = [tuple(c.values()) for c in collective_values(
        CollectiveResult.objects.filter(run=run).order_by("id"), "op", "size_bytes", "count", "dtype", "redop", "root",
        "time_us", "algbw_gbs", "busbw_gbs", "wrong", "in_place", "line", "process")]
    assert len(parsed) > 20
    assert list(stored) == [(c.op, c.size_bytes, c.count, c.dtype, c.redop, c.root, c.time_us, c.algbw_gbs,
                             c.busbw_gbs, c.wrong, c.in_place, c.line, c.process) for c in parsed]


def test_a_collective_whose_texts_read_as_null_or_empty_is_stored_as_it_is(alice):
    from ingest.parsers.records import Collective, collectives_frame

    run = upload_bytes(alice, "x.log", b"x\n")
    lf = run.logfiles.get()
    odd = [Collective("all_reduce", 8, 2, "float", "", -1, None, 1.5, 1e-7, None, True, 3, "\\N"),
           Collective('a"b,c', 2**62, 2, "float", "sum", 0, 12.25, float("inf"), 0.1 + 0.2, 0, False, 4, "")]
    services._insert_collectives(lf, collectives_frame(odd))
    stored = [tuple(c.values()) for c in collective_values(
        CollectiveResult.objects.filter(logfile=lf).order_by("id"), "op", "size_bytes", "count", "dtype", "redop", "root",
        "time_us", "algbw_gbs", "busbw_gbs", "wrong", "in_place", "line", "process")]
    assert list(stored) == [(c.op, c.size_bytes, c.count, c.dtype, c.redop, c.root, c.time_us, c.algbw_gbs,
                             c.busbw_gbs, c.wrong, c.in_place, c.line, c.process) for c in odd]


def test_a_lines_two_sides_are_one_stored_row_and_a_side_alone_a_row_of_its_own(alice):
    """A nccl-tests line's out-of-place and in-place results are stored as one row; a side with no
    other side next to it (a batch cut between them, another process's or collective's line, a
    line of one side) is a row alone. Readers see a row a side, in the parser's order, either way."""
    from ingest.parsers.records import Collective, collectives_frame

    run = upload_bytes(alice, "x.log", b"x\n")
    lf = run.logfiles.get()

    def side(line: int, in_place: bool, process: str = "p", size: int = 8, busbw: float | None = 1.0) -> Collective:
        return Collective("all_reduce", size, size // 4, "float", "sum", -1, 2.0 + in_place, 1.5, busbw,
                          None if in_place else 0, in_place, line, process)

    batches = [[side(1, False), side(1, True),  # a line: one row
                side(2, True),  # in-place alone
                side(3, False), side(3, True, "q"),  # two processes' sides
                side(4, False), side(4, True, size=16),  # two collectives
                side(5, False, busbw=None), side(5, True),
                side(6, False)],  # the batch ends between a line's sides
               [side(6, True), side(7, False), side(7, True)]]
    for batch in batches:
        services._insert_collectives(lf, collectives_frame(batch))
    stored = CollectiveResult.objects.filter(logfile=lf).order_by("logfile_id", "line", "id")
    fields = ("op", "size_bytes", "count", "dtype", "redop", "root", "time_us", "algbw_gbs", "busbw_gbs", "wrong",
              "in_place", "line", "process")
    assert [tuple(c.values()) for c in collective_values(stored, *fields)] == [
        (c.op, c.size_bytes, c.count, c.dtype, c.redop, c.root, c.time_us, c.algbw_gbs, c.busbw_gbs, c.wrong,
         c.in_place, c.line, c.process) for batch in batches for c in batch]
    assert list(stored.values_list("line", "sides")) == [(1, 3), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2), (5, 3),
                                                         (6, 1), (6, 2), (7, 3)]
