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


def test_bus_bandwidth_runs_read_in_sql_are_those_of_every_stored_line(alice):
    """run_rows reads each file's and process's runs of adjacent nccl-tests row lines (stored by
    the worker, CollectiveIsland): the same runs, rows and peaks as every stored line fed to Busbw
    in line order (two files, an MPI-tagged output)."""
    from django.db.models import Count, Max

    from runs.digest import Busbw
    from runs.models import CollectiveResult

    run = _nccl_tests_run(alice)
    every = Busbw()
    for lf_id, process, line, n, peak in (
            CollectiveResult.objects.filter(run=run, busbw_gbs__isnull=False).values("logfile_id", "process", "line")
            .annotate(n=Count("id"), peak=Max("busbw_gbs")).order_by("logfile_id", "process", "line")
            .values_list("logfile_id", "process", "line", "n", "peak")):
        every.add(lf_id, process, line or 0, n, peak)
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


def test_the_islands_stored_by_the_worker_are_those_the_migration_finds_among_the_rows(alice):
    """Migration 0022 finds the islands of runs stored before them with the query refresh_run ran
    (in SQL, over the rows); the worker's (runs.digest.BusbwIslands) are the same. A re-parse
    replaces them, a deleted run takes them along."""
    import importlib

    from django.apps import apps
    from django.db import connection

    from runs.models import CollectiveIsland, Run

    run = _nccl_tests_run(alice)
    stored = _islands(run)
    assert len({lf for lf, *_ in stored}) == 2 and len(stored) == 3
    CollectiveIsland.objects.all().delete()
    migration = importlib.import_module("runs.migrations.0022_collective_islands")
    with connection.schema_editor() as editor:
        migration.islands_of_stored_rows(apps, editor)
    assert _islands(run) == stored

    ingest.requeue_run(Run.objects.get(id=run.id))
    for lf in run.logfiles.all():
        assert ingest.parse_logfile(lf.id) == "ready"
    assert _islands(run) == stored  # replaced, not doubled
    registration.delete_run(alice, Run.objects.get(id=run.id))
    assert not CollectiveIsland.objects.exists()
