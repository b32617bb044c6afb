"""runs/services.py: run edits (annotations, a person's values) and the run summary."""

import io

import pytest

from ingest import registration
from ingest import services as ingest
from runs import services


def test_a_persons_nccl_declaration_wins_over_the_log(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    assert run.parsed["nccl"]["declared"]["NCCL_PROTO"] == "LL"
    services.add_annotation(alice, run, "nccl", "NCCL_PROTO=Simple")
    run.refresh_from_db()
    assert run.parsed["nccl"]["declared"]["NCCL_PROTO"] == "Simple" and run.nccl_status == "drift"


def test_files_of_one_run_that_disagree_on_steps_get_a_warning(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_tuned_3step.log")
    assert run.steps == 2
    messages = [w["message"] for w in run.parsed["warnings"]]
    assert any("spec.steps is 3 here but 2 in an earlier file" in m for m in messages)


def test_pasted_settings_are_read_like_a_launch_log():
    pasted = "# from the launch shell\nexport NCCL_PROTO=LL\nNCCL_ALGO='Ring'\nLD_LIBRARY_PATH=/opt/nccl/lib\n\n"
    assert services.parse_nccl_lines(pasted) == {"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}


def test_a_pasted_line_that_is_no_assignment_is_refused_with_its_number():
    with pytest.raises(services.ServiceError) as e:
        services.parse_nccl_lines("NCCL_PROTO=LL\nhello world\n")
    assert e.value.line == 2 and "hello world" in e.value.message


def test_pasted_text_without_nccl_values_is_refused():
    with pytest.raises(services.ServiceError) as e:
        services.parse_nccl_lines("HOME=/root\n")
    assert e.value.code == "no_nccl_values"


def test_a_person_set_step_count_survives_a_reparse(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    services.add_annotation(alice, run, "steps", "3")
    services.refresh_run(run.id)
    run.refresh_from_db()
    assert run.steps == 3 and run.steps_by_person and run.steps_source.startswith("set by alice")


def test_a_step_count_outside_one_to_sixteen_is_refused(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log", parse=False)
    for bad in ("0", "17"):
        with pytest.raises(services.ServiceError) as e:
            services.add_annotation(alice, run, "steps", bad)
        assert e.value.code == "bad_steps" and "between 1 and 16" in e.value.message


def test_a_person_step_count_that_contradicts_the_log_is_flagged_beside_it(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    services.add_annotation(alice, run, "steps", "3")
    run.refresh_from_db()
    assert run.steps == 3 and run.person_conflict
    from runs.summary import person_vs_logs

    assert person_vs_logs(run.parsed, run.steps, run.steps_by_person) == [
        "steps set to 3 by a person, but the log says 2"]


def test_a_pasted_nccl_value_that_contradicts_the_launcher_is_flagged(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    services.add_annotation(alice, run, "nccl", "NCCL_PROTO=Simple\nNCCL_ALGO=Ring")
    run.refresh_from_db()
    conflicts = run.parsed["nccl"]["conflicts"]
    assert [(c["key"], c["person"], c["log"]) for c in conflicts] == [("NCCL_PROTO", "Simple", "LL")]
    assert conflicts[0]["log_line"] == 2 and run.person_conflict


def test_an_unknown_nccl_name_is_kept_with_a_warning(alice, upload_run):
    run = upload_run(alice, "spec_eagle3_tuned_2step.log")
    annotation = services.add_annotation(alice, run, "nccl", "NCCL_PROTOCOL=LL")
    assert annotation.warnings and "NCCL_PROTOCOL is not an NCCL parameter" in annotation.warnings[0]


@pytest.mark.django_db
def test_only_a_ready_run_can_be_pinned_and_unpinning_another_run_keeps_the_pin(alice, upload_run):
    from runs.services import ServiceError, pin_baseline

    queued = upload_run(alice, "sweep/sweep_default_1step.log", parse=False)
    with pytest.raises(ServiceError) as refused:
        pin_baseline(alice, queued)
    assert refused.value.status == 409
    ready = upload_run(alice, "sweep/sweep_default_2step.log")
    assert pin_baseline(alice, ready).pinned_baseline == ready
    assert pin_baseline(alice, queued, pinned=False).pinned_baseline == ready


def _bench_file(rate: str, output: str) -> bytes:
    rows = [("Backend:", "sglang"), ("Traffic request rate:", rate), ("Successful requests:", "100"),
            ("Output token throughput (tok/s):", output)]
    return "\n".join(["============ Serving Benchmark Result ============"]
                     + [f"{label:<40} {value:<10}" for label, value in rows] + ["=" * 50, ""]).encode()


@pytest.mark.django_db
def test_a_runs_result_blocks_come_from_every_file_each_naming_its_file(alice):
    run, _ = registration.register_upload(alice, [registration.IncomingFile(name, io.BytesIO(data), len(data)) for name, data in [
        ("rate2.txt", _bench_file("2.0", "800.00")), ("rate8.txt", _bench_file("8.0", "900.00"))]], project="team")
    for lf in run.logfiles.order_by("id"):
        ingest.parse_logfile(lf.id)
    run.refresh_from_db()
    files = {lf.id: lf.original_name for lf in run.logfiles.all()}
    blocks = run.parsed["serving_blocks"]
    assert [(files[b["logfile"]], b["request_rate"], b["output_throughput_tok_s"]) for b in blocks] == [
        ("rate2.txt", 2.0, 800.0), ("rate8.txt", 8.0, 900.0)]
    assert run.parsed["serving"] == {"result_blocks": 2} and run.throughput_tok_s is None


@pytest.mark.django_db
def test_blocks_a_file_counts_without_listing_them_count_in_the_runs_total(alice, monkeypatch):
    from ingest.parsers import serving
    monkeypatch.setattr(serving, "BLOCKS_KEPT", 1)
    sweep = _bench_file("2.0", "800.00") + _bench_file("8.0", "900.00") + _bench_file("4.0", "850.00")
    run, _ = registration.register_upload(alice, [registration.IncomingFile(name, io.BytesIO(data), len(data)) for name, data in [
        ("sweep.txt", sweep), ("rate16.txt", _bench_file("16.0", "990.00"))]], project="team")
    for lf in run.logfiles.order_by("id"):
        ingest.parse_logfile(lf.id)
    run.refresh_from_db()
    sweep_file = run.logfiles.get(original_name="sweep.txt")
    assert sweep_file.settings["serving_blocks_omitted"]["value"] == {"count": 2, "first_line": 7}
    assert [b["request_rate"] for b in run.parsed["serving_blocks"]] == [2.0, 16.0]
    assert run.parsed["serving"] == {"result_blocks": 4} and run.throughput_tok_s is None
    assert any("lists 2 of the 4 result blocks" in w["message"] for w in run.parsed["warnings"])


JOB_SCRIPT, JOB_OUTPUT = "../tests/corpus/nccl/job_nersc_run_tests.sh", "../tests/corpus/nccl/job_nersc_slurm_test_2.23_918503.log"


def test_a_job_script_and_its_slurm_output_are_one_run_declared_by_the_script(alice, upload_run):
    """The sbatch script declares, its output echoes: one verdict, not `unknown` with nothing effective."""
    run = upload_run(alice, JOB_SCRIPT, JOB_OUTPUT)
    nccl = run.parsed["nccl"]
    script = run.logfiles.get(original_name=JOB_SCRIPT.split("/")[-1])
    assert nccl["declared"]["NCCL_NET"] == "AWS Libfabric" and nccl["declared"]["NCCL_SOCKET_IFNAME"] == "hsn"
    assert nccl["sources"]["declared"]["NCCL_NET"][0] == script.id
    assert nccl["effective"]["NCCL_SOCKET_IFNAME"] == "hsn" and nccl["status"] != "unknown"
    assert run.parsed["launches_count"] == 0
    assert {p["role"] for p in run.parsed["processes"]} == {"nccl-tests"}
    # Drift only for variables NCCL echoes: NCCL_NET and NCCL_DEBUG are never echoed, so their
    # absence from the output is no evidence.
    drifted = {d["key"] for d in nccl["drift"]}
    assert not drifted & {"NCCL_NET", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME"}


def test_a_job_output_alone_has_no_declarations_and_says_ok_on_its_echoes(alice, upload_run):
    run = upload_run(alice, JOB_OUTPUT)
    assert run.parsed["nccl"]["declared"] == {} and run.parsed["nccl"]["status"] == "ok"


def _nccl_tests_run(user):
    """A run of two nccl-tests outputs (an MPI-tagged one, twice over; an alltoall), parsed."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parent / "corpus"
    files = [registration.IncomingFile(name, io.BytesIO(data), len(data)) for name, data in (
        ("a.txt", (corpus / "shared/nccl_tests_all_reduce_h100_16rank_k8s_mpi.txt").read_bytes() * 2),
        ("b.log", (corpus / "nccl/nccl_tests_command_echo_alltoall_2.30.3_report.log").read_bytes()))]
    run, _ = registration.register_upload(user, files, project="team")
    for lf in run.logfiles.all():
        assert ingest.parse_logfile(lf.id) == "ready"
    return run


def _sides_per_line(run) -> dict:
    """(logfile, process, line) -> (the line's sides with a bus bandwidth, their highest), of
    the run's stored collectives a side at a time (as every reader sees them)."""
    from runs.models import CollectiveResult, collective_values

    lines: dict = {}
    for c in collective_values(CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line", "id"),
                               "logfile_id", "process", "line", "busbw_gbs"):
        if c["busbw_gbs"] is not None:
            n, peak = lines.get((c["logfile_id"], c["process"], c["line"] or 0), (0, c["busbw_gbs"]))
            lines[(c["logfile_id"], c["process"], c["line"] or 0)] = (n + 1, max(peak, c["busbw_gbs"]))
    return lines


def test_bus_bandwidth_runs_read_in_sql_are_those_of_every_stored_line(alice):
    """run_rows reads each file's and process's runs of adjacent nccl-tests row lines (stored by
    the worker, CollectiveIsland): the same runs, rows and peaks as every stored line fed to Busbw
    in line order (two files, an MPI-tagged output)."""
    from runs.digest import Busbw

    run = _nccl_tests_run(alice)
    every = Busbw()
    for (lf_id, process, line), (n, peak) in sorted(_sides_per_line(run).items()):
        every.add(lf_id, process, line, n, peak)
    read = services.run_rows(run, services._ready_files(run)).busbw

    def listed(busbw: Busbw) -> list:
        # By file and process name: the order processes come in is no part of the runs (run_rows
        # sorts them bytewise, the ORM by the database's collation).
        return sorted((lf, process, [column.tolist() for column in runs]) for lf, process, runs in busbw.runs())

    assert listed(read) == listed(every)
    assert sum(len(runs[0]) for _, _, runs in every.runs()) > 2


def _islands(run) -> list:
    from runs.models import CollectiveIsland

    return list(CollectiveIsland.objects.filter(run=run).order_by("logfile_id", "process", "first_line").values_list(
        "logfile_id", "process", "first_line", "last_line", "rows", "peak_busbw_gbs"))


def test_the_islands_stored_by_the_worker_are_those_of_the_stored_sides(alice):
    """The worker's islands (runs.digest.BusbwIslands) are the runs of adjacent lines of the
    stored sides with a bus bandwidth (as migration 0022 found them in SQL when a row was a side).
    A re-parse replaces them, a deleted run takes them along."""
    from runs.models import CollectiveIsland, Run

    run = _nccl_tests_run(alice)
    stored = _islands(run)
    assert len({lf for lf, *_ in stored}) == 2 and len(stored) == 3
    found: list = []
    for (lf, process, line), (n, peak) in sorted(_sides_per_line(run).items()):
        if found and found[-1][:2] == [lf, process] and found[-1][3] == line - 1:
            found[-1][3:] = [line, found[-1][4] + n, max(found[-1][5], peak)]
        else:
            found.append([lf, process, line, line, n, peak])
    assert sorted(stored, key=lambda i: (i[0], i[1], i[2])) == [tuple(i) for i in found]

    ingest.requeue_run(Run.objects.get(id=run.id))
    for lf in run.logfiles.all():
        assert ingest.parse_logfile(lf.id) == "ready"
    assert _islands(run) == stored  # replaced, not doubled
    registration.delete_run(alice, Run.objects.get(id=run.id))
    assert not CollectiveIsland.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_pairs_stored_sides_into_a_row_a_line_and_back(alice):
    """Migration 0023: rows stored a side each (before it) become a row a line, both sides in it,
    as the worker stores them now; every reader sees the same sides in the same order, the run's
    summary is the same. Reversed, the rows are a side each again."""
    from django.db import connection, transaction
    from django.db.migrations.executor import MigrationExecutor

    from runs.models import CollectiveResult, Run, collective_values

    fields = ("logfile_id", "line", "process", "op", "size_bytes", "count", "dtype", "redop", "root", "time_us",
              "algbw_gbs", "busbw_gbs", "wrong", "in_place")
    run = _nccl_tests_run(alice)
    stored = CollectiveResult.objects.filter(run=run).order_by("logfile_id", "line", "id")
    sides = list(collective_values(stored, *fields))
    lines = stored.count()
    # Both sides of each table line in one row (the outputs have no line of one side).
    assert len(sides) == 2 * lines and {c["in_place"] for c in sides} == {False, True}
    parsed = Run.objects.get(id=run.id).parsed
    before, after = [("runs", "0022_collective_islands")], [("runs", "0023_collective_sides")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        Old = executor.loader.project_state(before).apps.get_model("runs", "CollectiveResult")
        old = Old.objects.filter(run_id=run.id).order_by("logfile_id", "line", "in_place")
        assert list(old.values(*fields)) == sides
        # A side alone (a line of one side, a batch cut between a line's sides) stays a row of its own.
        lone = old.filter(in_place=True).order_by("id").first()
        Old.objects.create(run_id=run.id, **{f: getattr(lone, f) for f in fields if f != "in_place"},
                           in_place=True)
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        assert CollectiveResult.objects.filter(run=run).count() == lines + 1
        paired = list(collective_values(stored, *fields))
        assert [c for c in paired if c not in sides] == [] and len(paired) == len(sides) + 1
        assert [c for i, c in enumerate(paired) if i == 0 or c != paired[i - 1]] == sides
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    CollectiveResult.objects.filter(run=run, sides=CollectiveResult.IN_PLACE).delete()
    assert list(collective_values(stored, *fields)) == sides
    with transaction.atomic():
        services.refresh_run(run.id)
    assert Run.objects.get(id=run.id).parsed == parsed
