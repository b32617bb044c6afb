"""ingest/parsers/processes.py: every record knows the process that wrote its line, and its role."""

from __future__ import annotations

from ingest.parsers import parse_lines, parse_stream
from tests.samples import log_path, public_sample


def test_nccl_echoes_and_env_dumps_name_their_pid():
    with open(log_path("sweep/sweep_dropped_2step.log"), "rb") as f:
        r = parse_stream(f)
    by_process = {(v.process, v.kind) for v in r.nccl}
    assert ("pid 1572", "declared") in by_process  # the launcher's env dump
    assert ("main", "declared") in by_process  # the `$ NCCL_...=... python3 launch.py` line
    assert ("pid 1573", "effective") in by_process and ("pid 1574", "effective") in by_process
    assert r.processes["TP0"]["alias"] == "pid 1573"
    assert {m.process for m in r.metrics if m.source == "sglang_decode"} == {"TP0"}
    assert r.processes["pid 1573"]["role"] == "serving worker"
    assert r.processes["pid 1572"]["role"] == "serving launcher"
    assert r.launch_lines == [1, 2]


def test_nccl_tests_table_belongs_to_the_test_process():
    with open(log_path("nccl-tests_all_reduce_default.log"), "rb") as f:
        r = parse_stream(f)
    assert r.processes["pid 1377"]["role"] == "nccl-tests" and r.processes["pid 1377"]["host"] == "vm"
    assert r.processes["main"]["alias"] == "pid 1377"
    assert {c.process for c in r.collectives} == {"main"}


def test_vllm_process_tags_give_pid_rank_and_role():
    r = parse_lines([
        "(APIServer pid=79) INFO 09-02 10:00:00 [api_server.py:1] vLLM API server version 0.10.1",
        "(VllmWorker rank=1 pid=218) INFO 09-02 10:00:01 [pynccl.py:70] vLLM is using nccl==2.25.1",
        "(VllmWorker rank=1 pid=218) node1:218:218 [1] NCCL INFO NCCL_PROTO set by environment to LL",
        "(EngineCore_0 pid=100) INFO 09-02 10:00:02 [core.py:1] started",
    ])
    assert r.processes["pid 79"]["role"] == "serving launcher"
    worker = r.processes["pid 218"]
    assert (worker["role"], worker["rank"], worker["host"], worker["label"]) == ("serving worker", "1", "node1", "VllmWorker")
    assert r.processes["pid 100"]["role"] == "serving worker"
    assert [v.process for v in r.nccl] == ["pid 218"]


def test_sglang_dp_attention_prefixes_are_processes_of_their_own():
    r = parse_lines([
        "[2025-05-01 10:00:00 DP0 TP0] Decode batch. #running-req: 1, #token: 5, token usage: 0.00, "
        "gen throughput (token/s): 10.00, #queue-req: 0",
        "[2025-05-01 10:00:00 DP1 TP1] Decode batch. #running-req: 1, #token: 5, token usage: 0.00, "
        "gen throughput (token/s): 12.00, #queue-req: 0",
    ])
    assert {m.process for m in r.metrics} == {"DP0 TP0", "DP1 TP1"}
    assert r.processes["DP1 TP1"]["rank"] == "1" and r.processes["DP1 TP1"]["role"] == "serving worker"


def test_a_bare_nccl_log_has_processes_of_unknown_role():
    r = parse_lines(["host:5:5 [0] NCCL INFO NCCL_PROTO set by environment to LL"])
    assert r.processes["pid 5"]["role"] == "unknown"


def test_mpi_tag_output_names_the_rank_that_wrote_the_line():
    # Both ranks are "pid 21", on two hosts: only MPI's [job,rank] tells them apart.
    with open(public_sample("nccl_tests_efa_mpi_interleaved_destroy.txt"), "rb") as f:
        r = parse_stream(f)
    ranks = {tag: (p["rank"], p["host"], p["pid"]) for tag, p in r.processes.items() if tag.startswith("mpi ")}
    assert ranks == {"mpi 1,0": ("0", "test-nccl-efa-worker-0", 21), "mpi 1,1": ("1", "test-nccl-efa-worker-1", 21)}
    assert {c.process for c in r.collectives} == {"mpi 1,0"}  # rank 0 prints the table
    assert r.processes["pid 21"]["alias"] in ranks


def test_mpi_tagged_lines_without_a_pid_belong_to_their_rank_and_records_carry_it():
    r = parse_lines([
        "[1,0]<stdout>:vm:1573:1573 [0] NCCL INFO NCCL_PROTO set by environment to LL",
        "[1,1]<stdout>:vm:1573:1573 [1] NCCL INFO NCCL_PROTO set by environment to Simple",
        "[1,1]<stderr>:some warning from the benchmark",
    ])
    assert [(v.process, v.value) for v in r.nccl] == [("mpi 1,0", "LL"), ("mpi 1,1", "Simple")]
    assert r.processes["mpi 1,1"]["rank"] == "1" and r.processes["mpi 1,1"]["first_line"] == 2
    assert "main" not in r.processes


def test_the_nccl_line_search_is_left_out_only_where_it_cannot_match():
    """Tagger searches _NCCL only in a line holding " NCCL " (an env dump full of NCCL_ names costs
    it ~30 µs): every real line, and damaged copies of those naming NCCL, it finds none in without."""
    from ingest.parsers import nccl_debug, processes
    from tests.test_scan_launch import _damaged, _real_lines

    found = 0
    for line in _real_lines():
        if "NCCL" not in line:
            continue
        for text in (line, *_damaged(line), line.replace(" NCCL ", "\tNCCL "), line.replace(" NCCL ", " NCCL\t")):
            m = processes._NCCL.search(text)
            assert m is None or processes._NCCL_WORD in text, text
            assert nccl_debug._LINE.search(text) is None or " NCCL " in text, text  # nccl_debug.feed's the same
            found += m is not None
    assert found > 1000
