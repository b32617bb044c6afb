import io
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import nccl_debug, parse_lines, parse_stream, processes, text
from runs.summary import summarize
from tests.samples import log_path, public_sample


def effective(result):
    return {(v.rank, v.key): v.value for v in result.nccl if v.kind == "effective"}


def test_echo_before_comm_line_takes_the_rank_of_its_process_not_the_device_field():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:1561:1561 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS",
        "vm:1560:1560 [1] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS",
        "vm:1561:1561 [0] NCCL INFO comm 0x3c03a010 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1",
        "vm:1560:1560 [1] NCCL INFO ncclCommInitRankConfig comm 0x3487d520 rank 0 nranks 2 cudaDev 1 - Init",
    ])
    assert [(v.rank, v.line, v.source) for v in r.nccl] == [("1", 1, "nccl echo"), ("0", 2, "nccl echo")]
    assert r.settings["nccl.nranks"].value == 2
    assert r.formats == ["nccl_debug"]


def test_integer_echo_drops_its_period_and_string_echo_is_kept_as_typed():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "h:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 16777216.",
        "h:1:1 [0] NCCL INFO NCCL_CUMEM_ENABLE set by environment to 0.",
        "h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to ^LL128",
        "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0,lo",
        "h:1:1 [0] NCCL INFO comm 0x1 rank 3 nRanks 4",
    ])
    assert effective(r) == {
        ("3", "NCCL_BUFFSIZE"): "16777216", ("3", "NCCL_CUMEM_ENABLE"): "0",
        ("3", "NCCL_PROTO"): "^LL128", ("3", "NCCL_SOCKET_IFNAME"): "^docker0,lo",
    }


def test_process_that_never_names_its_rank_is_called_by_pid():
    r = parse_lines(formats=["nccl_debug"], lines=["h:77:78 [2] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL"])
    assert effective(r) == {("pid 77", "NCCL_P2P_LEVEL"): "NVL"}


def test_one_process_with_several_gpus_gives_its_echo_to_every_rank_it_drives():
    # nccl-tests -g 2: one pid, one init thread per rank; NCCL reads (and echoes) its environment
    # once per process, so the one echo, printed by rank 1's thread, holds for rank 0 as well.
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:1377:1389 [1] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.",
        "vm:1377:1388 [0] NCCL INFO ncclCommInitRankConfig comm 0x5 rank 0 nranks 2 cudaDev 0 - Init START",
        "vm:1377:1389 [1] NCCL INFO ncclCommInitRankConfig comm 0x6 rank 1 nranks 2 cudaDev 1 - Init START",
    ])
    assert effective(r) == {("0", "NCCL_NVLS_ENABLE"): "0", ("1", "NCCL_NVLS_ENABLE"): "0"}
    assert {v.line for v in r.nccl} == {1}


def test_echo_lines_past_32_bits_are_kept_and_copied_to_each_rank_at_their_lines():
    # echo_lines holds 4 bytes a line while they fit, then 8: a line past 2**31 keeps its number
    from ingest.parsers.records import ParseResult

    r = ParseResult()
    p = nccl_debug.Parser(r)
    far = 2**31 + 5
    p.feed(1, "vm:1377:1388 [0] NCCL INFO ncclCommInitRankConfig comm 0x5 rank 0 nranks 2 cudaDev 0 - Init START")
    p.feed(2, "vm:1377:1389 [1] NCCL INFO ncclCommInitRankConfig comm 0x6 rank 1 nranks 2 cudaDev 1 - Init START")
    p.feed(3, "vm:1377:1389 [1] NCCL INFO NCCL_PROTO set by environment to LL")
    p.settle()
    p.feed(far, "vm:1377:1389 [1] NCCL INFO NCCL_ALGO set by environment to Ring")
    p.feed(far + 1, "vm:1377:1390 [1] NCCL INFO NCCL_DEBUG set by environment to INFO")  # a thread of no rank
    p.finish()
    assert p.echo_lines.typecode == "i"  # (emptied by finish)
    assert sorted((v.key, v.rank, v.line) for v in r.nccl) == [
        ("NCCL_ALGO", "0", far), ("NCCL_ALGO", "1", far), ("NCCL_DEBUG", "0", far + 1), ("NCCL_DEBUG", "1", far + 1),
        ("NCCL_PROTO", "0", 3), ("NCCL_PROTO", "1", 3)]


def test_processes_of_one_gpu_each_keep_their_own_echoes():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:10:10 [0] NCCL INFO NCCL_PROTO set by environment to LL",
        "vm:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
        "vm:10:10 [0] NCCL INFO comm 0x2 rank 3 nRanks 4 nNodes 1 localRanks 4 localRank 3 MNNVL 0",
        "vm:11:11 [1] NCCL INFO comm 0x3 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0",
    ])
    assert effective(r) == {("0", "NCCL_PROTO"): "LL"}



@pytest.mark.parametrize("engine", ["native", "lines"])
def test_an_echo_whose_thread_said_its_rank_goes_to_the_sink_ranked_and_is_not_held(engine):
    # Echoes were held as objects to the parse's end, by this parser and by whatever a sink kept
    # them in (1 GB of NCCL start-ups: 540 MB). A thread's first rank is its echoes' rank: they take
    # it before the sink takes them; only those whose thread has not said it yet wait for finish().
    lines = []
    for k in range(400):
        pid = 1000 + k
        lines += [f"vm:{pid}:{pid} [0] NCCL INFO NCCL_PROTO set by environment to LL",
                  f"vm:{pid}:{pid} [0] NCCL INFO NCCL_ALGO set by environment to Ring",
                  f"vm:{pid}:{pid} [0] NCCL INFO comm 0x1 rank {k % 8} nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0"]
    lines += ["vm:9:9 [0] NCCL INFO NCCL_PROTO set by environment to Simple",  # its rank comes after the parse's
              "vm:9:10 [1] NCCL INFO comm 0x2 rank 7 nRanks 8 nNodes 1 localRanks 8 localRank 1 MNNVL 0"]  # other thread
    taken: list = []
    ranked_when_taken: list[bool] = []

    def sink(result):
        rows = result.take_rows()[3]
        taken.extend(rows)
        ranked_when_taken.extend(bool(v.rank) for v in rows)
    with mock.patch.object(parsers, "SPILL_AT", 16), mock.patch.object(parsers, "SPILL_EVERY", 4), \
            mock.patch.object(text, "BATCH", 1 << 12), mock.patch.object(text, "FIRST_BATCH", 1 << 12):
        result = parse_stream(io.BytesIO(("\n".join(lines) + "\n").encode()), sink=sink, engine=engine)
    taken.extend(result.take_rows()[3])
    echoes = [v for v in taken if v.kind == "effective"]
    assert len(echoes) == 801 and len(taken) == 801
    assert {(v.line, v.rank) for v in echoes[:800]} == {(3 * k + j, str(k % 8)) for k in range(400) for j in (1, 2)}
    assert echoes[800].rank == "7" and echoes[800].line == 1201  # at the end, from its process's rank
    # Taken by a spill before their rank line: the echoes of the last thread or two before it.
    assert len(ranked_when_taken) > 400 and ranked_when_taken.count(False) <= len(ranked_when_taken) // 4


def test_connection_line_names_the_rank_when_no_comm_line_survived():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "g:5:9 [1] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS",
        "g:5:9 [1] NCCL INFO Channel 02/0 : 1[c6000] -> 4[c1000] [receive] via NET/Socket/1 comm 0x9",
        "g:6:9 [2] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS",
        "g:6:9 [2] NCCL INFO Channel 00/0 : 6[6] -> 5[5] via P2P/IPC",
    ])
    assert effective(r) == {("4", "NCCL_P2P_LEVEL"): "SYS", ("6", "NCCL_P2P_LEVEL"): "SYS"}


def test_version_line_bare_prefixed_mpi_tagged_or_quoted():
    for line in (
        "NCCL version 2.20.5+cuda12.4",
        "[1,0]<stdout>:NCCL version 2.12.7+cuda11.4",
        "> NCCL version 2.20.5+cuda12.4",
        "vm:1560:1560 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
        "(RayWorkerWrapper pid=539) NCCL version 2.20.5+cuda12.4",
    ):
        r = parse_lines(formats=["nccl_debug"], lines=[line])
        assert r.settings["nccl.version"].value == line.split("version ")[1].split("+")[0], line
        assert r.formats == ["nccl_debug"]
    assert parse_lines(formats=["nccl_debug"], lines=["NCCL version 2.28.9+cuda13.0"]).settings["nccl.cuda_version"].value == "13.0"


def test_version_mentioned_inside_other_text_is_not_nccl_output():
    r = parse_lines(formats=["nccl_debug"], lines=["INFO 07-14 vllm: we tested NCCL version 2.18.1 last week"])
    assert r.formats == [] and "nccl.version" not in r.settings


def test_warn_after_blank_line_becomes_a_warning_with_its_source_location():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "h:9:9 [0] NCCL INFO comm 0x1 rank 0 nRanks 2",
        "",
        "h:9:12 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion with error 12",
        "",
        "h:9:13 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion with error 12",
    ])
    assert [(w.line, w.message) for w in r.warnings] == [
        (3, "NCCL WARN NET/IB : Got completion with error 12 (transport/net_ib.cc:1295)"),
    ]


def test_transports_are_one_sorted_setting_without_nic_indexes():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "h:1:2 [0] NCCL INFO Channel 00 : 3[4a000] -> 6[44000] [send] via NET/IB/0/GDRDMA",
        "h:1:2 [0] NCCL INFO Channel 00 : 3[3] -> 4[4] via SHM/direct/direct",
        "h:1:2 [0] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3",
        "h:1:2 [0] NCCL INFO Channel 01/0 : 2[2] -> 3[3] via P2P/direct pointer/read",
        "h:1:2 [0] NCCL INFO Channel 02/0 : 7[ce000] -> 5[c6000] via P2P/IPC comm 0xfb16e30 nRanks 08",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 6[",  # cut by Ray's deduplication
    ])
    assert r.settings["nccl.transports"].value == [
        "NET/IB/GDRDMA", "NET/Socket", "P2P/CUMEM", "P2P/IPC", "P2P/direct pointer/read", "SHM/direct/direct",
    ]
    assert r.settings["nccl.transports"].line == 1


def test_channels_network_and_ranks_are_settings():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:1:1 [0] NCCL INFO Using network Socket",
        "vm:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7",
        "vm:1:1 [0] NCCL INFO comm 0x575c rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",
        "vm:1:1 [0] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 32 p2p channels, 2 p2p "
        "channels per peer",
    ])
    values = {k: s.value for k, s in r.settings.items()}
    assert values["nccl.network"] == "Socket"
    assert values["nccl.coll_channels"] == 16  # the summary line beats the ring listing
    assert values["nccl.p2p_channels"] == 32
    assert values["nccl.nranks"] == 8 and values["nccl.nnodes"] == 1


def test_ring_listing_gives_channel_count_for_old_builds():
    r = parse_lines(formats=["nccl_debug"], lines=["h:1:1 [0] NCCL INFO Channel 01/02 :    0   1   2   3"])
    assert r.settings["nccl.coll_channels"].value == 2


def test_func_proto_algo_matrix_gives_allreduce_protos_and_algos_and_ends_at_blank_line():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:1:1 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
        "     Function |       LL     LL128    Simple   |          Tree           Ring  CollNetDirect   "
        "CollNetChain           NVLS       NVLSTree            PAT  ",
        "  Broadcast |  1  0  0  |  0  1  0  "
        "0              0              0              0  ",
        "  AllReduce |  1  0  1  |  1  1  0  "
        "0              0              0              0  ",
        "",
        "vm:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL",
        "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2",
        "  Other | not | a matrix row any more",
    ])
    assert r.settings["nccl.allreduce_protos"].value == ["LL", "Simple"]
    assert r.settings["nccl.allreduce_algos"].value == ["Tree", "Ring"]
    assert effective(r) == {("0", "NCCL_PROTO"): "LL"}
    assert r.warnings == [] and r.errors == []


def test_matrix_ends_at_the_first_line_that_is_not_a_row_an_nccl_line_too():
    """The table is one write: a line between its rows is after it (a log of NCCL lines only,
    its blank line dropped, never reopens it, and the readers are not kept busy to its end)."""
    header = ("     Function |       LL     LL128    Simple   |          Tree           Ring  CollNetDirect   "
              "CollNetChain           NVLS       NVLSTree            PAT  ")
    r = parse_lines(formats=["nccl_debug"], lines=[
        "vm:1:1 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
        header,
        "vm:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL",
        "  AllReduce |  1  0  1  |  1  1  0  0  0  0  0  ",
    ])
    assert "nccl.allreduce_protos" not in r.settings  # its row came after the table had ended
    assert effective(r) == {("pid 1", "NCCL_PROTO"): "LL"}  # the line that ended it is read as ever
    ray = parse_lines(formats=["nccl_debug"], lines=[
        "(RayWorkerWrapper pid=5) vm:5:5 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
        "(RayWorkerWrapper pid=5) " + header,
        "(RayWorkerWrapper pid=5)     AllReduce |  0  0  1  |  0  1  0  0  0  0  0  ",
        "(RayWorkerWrapper pid=5) vm:5:5 [0] NCCL INFO comm 0x1 rank 0 nRanks 2",
    ])
    assert ray.settings["nccl.allreduce_protos"].value == ["Simple"]
    assert ray.settings["nccl.nranks"].value == 2


def test_ray_prefix_and_repeat_suffix_are_read_through():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "(RayWorkerWrapper pid=539) node1:539:539 [1] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL "
        "[repeated 3x across cluster]",
        "(RayWorkerWrapper pid=539) node1:539:539 [1] NCCL INFO NCCL_CUMEM_ENABLE set by environment to 0.",
        "(RayWorkerWrapper pid=539) node1:539:539 [1] NCCL INFO comm 0x7f rank 1 nRanks 4 nNodes 1",
    ])
    assert effective(r) == {("1", "NCCL_P2P_LEVEL"): "NVL", ("1", "NCCL_CUMEM_ENABLE"): "0"}


def test_quoted_and_mpi_tagged_lines_are_unwrapped():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "> flow-matic:820398:820779 [0] NCCL INFO Using network Socket",
        "[1,1]<stdout>:test-efa-1:21:21 [0] NCCL INFO comm 0x7f9c rank 1 nranks 2 cudaDev 0 busId f5000 - "
        "Destroy COMPLETE",
    ])
    assert r.settings["nccl.network"].value == "Socket"
    assert r.settings["nccl.nranks"].value == 2


def test_conf_file_mentions_are_a_setting():
    assert parse_lines(formats=["nccl_debug"], lines=["export NCCL_CONF_FILE=/opt/nccl/tuned.conf"]).settings[
        "nccl.conf_file"].value == "/opt/nccl/tuned.conf"
    assert parse_lines(formats=["nccl_debug"], lines=["$ cat /etc/nccl.conf"]).settings["nccl.conf_file"].value == "/etc/nccl.conf"


def test_invalid_value_is_effective_as_the_default_and_warns():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "h:1:1 [0] NCCL INFO Invalid value 16M for NCCL_BUFFSIZE, using default 4194304.",
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 1",
    ])
    assert effective(r) == {("0", "NCCL_BUFFSIZE"): "4194304"}
    assert r.warnings[0].line == 1 and "NCCL_BUFFSIZE=16M" in r.warnings[0].message


def test_plugin_adding_a_variable_counts_as_effective():
    r = parse_lines(formats=["nccl_debug"], lines=["h:1:1 [0] NCCL INFO NET/OFI Adding NCCL_PROTO=simple to environment"])
    assert effective(r) == {("pid 1", "NCCL_PROTO"): "simple"}


def test_unrelated_and_malformed_lines_are_skipped():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "[2026-11-29 21:06:31 TP0] Decode batch. #running-req: 1, gen throughput (token/s): 466.32",
        "NCCL INFO with no header",
        "h:x:1 [0] NCCL INFO NCCL_PROTO set by environment to LL",
        "\x00\xff garbage",
        "",
    ])
    assert r.nccl == [] and r.settings == {} and r.formats == []


def test_tuned_2step_sample_declared_equals_effective_on_every_rank():
    with open(log_path("spec_eagle3_tuned_2step.log"), "rb") as f:
        nccl = summarize(parse_stream(f))["nccl"]
    assert nccl["status"] == "ok" and nccl["drift"] == []
    assert nccl["version"] == "2.28.9"
    assert set(nccl["effective_by_rank"]) == {"0", "1"}
    for rank in ("0", "1"):
        assert nccl["effective_by_rank"][rank] == nccl["declared"]
    assert nccl["declared"]["NCCL_PROTO"] == "LL" and "NCCL_VERSION" not in nccl["declared"]


def test_dropped_sample_drifts_on_the_tuning_the_workers_never_got(golden):
    with open(log_path("sweep/sweep_dropped_2step.log"), "rb") as f:
        result = parse_stream(f)
    parsed = summarize(result)
    nccl = parsed["nccl"]
    assert nccl["status"] == "drift"
    assert nccl["version"] == "2.28.9"
    assert [d["key"] for d in nccl["drift"]] == [
        "NCCL_ALGO", "NCCL_BUFFSIZE", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS", "NCCL_P2P_LEVEL", "NCCL_PROTO",
    ]
    assert all(d["ranks"] == ["0", "1"] and d["effective"] is None for d in nccl["drift"])
    assert nccl["effective"] == {"NCCL_CUMEM_ENABLE": "0", "NCCL_DEBUG": "INFO", "NCCL_NVLS_ENABLE": "0"}
    assert result.settings["nccl.transports"].value == ["P2P/IPC"]  # CUMEM off: IPC instead
    golden("sweep_dropped_2step", parsed)


def test_public_efa_sample_reads_the_mpi_tagged_bare_version():
    with open(public_sample("nccl_debug_efa_mpi_tagged_version_line.log"), "rb") as f:
        r = parse_stream(f)
    assert r.settings["nccl.version"].value == "2.12.7"
    assert r.settings["nccl.network"].value == "AWS Libfabric"


def test_public_quoted_vllm_sample_reads_version_and_network():
    with open(public_sample("nccl_debug_quoted_socket_v2.20.5_vllm_issue6370.log"), "rb") as f:
        r = parse_stream(f)
    assert r.settings["nccl.version"].value == "2.20.5"
    assert r.settings["nccl.network"].value == "Socket"


def test_public_samples_give_their_transports():
    cases = {
        "nccl_debug_8gpu_channels_shm_nccl_issue1027.log":
            ["P2P/direct pointer", "P2P/direct pointer/read", "SHM/direct/direct"],
        "nccl_debug_ib_gdrdma_pci_busid_nccl_issue687.log": ["NET/IB/GDRDMA", "P2P/IPC/read"],
        "nccl_debug_multinode_ipc_read_net_socket_nccl_issue952.log": ["NET/Socket", "P2P/IPC/read"],
        "rccl_debug_comm_suffix_rccl_issue1026.log": ["NET/Socket", "P2P/IPC"],
        "nccl_debug_h100_8gpu_p2p_ipc_vllm_issue6732.log": ["P2P/IPC"],
    }
    for name, transports in cases.items():
        with open(public_sample(name), "rb") as f:
            assert parse_stream(f).settings["nccl.transports"].value == transports, name


def test_public_comm_sample_gives_eight_ranks():
    with open(public_sample("nccl_debug_8gpu_comm_trees_deepseek_coder_v2_issue29.log"), "rb") as f:
        assert parse_stream(f).settings["nccl.nranks"].value == 8


def test_set_to_echoes_without_by_environment_are_effective():
    """NCCL's socket and IB code echo the value they settled on: `NCCL_IB_HCA set to mlx5_0,mlx5_1`."""
    r = parse_lines(lines=[
        "ubuntu4:251907:251907 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1",
        "nid001049:658566:658566 [0] NCCL INFO NCCL_SOCKET_IFNAME set to hsn",
        "nid001049:658566:658566 [0] NCCL INFO P2P Chunksize set to 131072",
    ])
    assert [(v.key, v.value, v.kind) for v in r.nccl] == [
        ("NCCL_IB_HCA", "mlx5_0,mlx5_1", "effective"), ("NCCL_SOCKET_IFNAME", "hsn", "effective")]


def test_rccl_names_its_version_with_or_without_the_line_prefix():
    for line in ("TARS:829507:829507 [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd",
                 "node [0] NCCL INFO RCCL version : 2.30.4-HEAD:2b22ab0"):
        r = parse_lines(lines=[line])
        assert r.settings["nccl.library"].value == "RCCL" and r.formats == ["nccl_debug"]
    assert summarize(parse_lines(lines=[line]))["nccl"]["version"] == "2.30.4"


def _library(path) -> tuple[object, object]:
    """(the parser's `nccl.library` setting, the parse JSON's `nccl.library`)."""
    with open(path, "rb") as f:
        r = parse_stream(f)
    setting = r.settings.get("nccl.library")
    return (setting.value if setting else None), summarize(r)["nccl"]["library"]


def test_rccl_version_line_makes_the_library_rccl():
    # Behind a full `host:pid:tid [dev] NCCL INFO` prefix and behind a redacted `node [0]` one.
    assert _library(public_sample("../nccl/rccl_debug_2.27.7_version_banner_rocm_issue6074.log")) == ("RCCL", "RCCL")
    assert _library(public_sample("../nccl/rccl_debug_2.27.7_redacted_host_rccl_issue2188.log")) == ("RCCL", "RCCL")


def test_nccl_version_line_makes_the_library_nccl():
    # An INFO line of every rank, and a bare banner.
    assert _library(public_sample("../nccl/job_nersc_slurm_test_2.23_918503.log")) == ("NCCL", "NCCL")
    assert _library(public_sample("../nccl/nccl_debug_2.19.3_bare_version_socket_issue1267.log")) == ("NCCL", "NCCL")


def test_library_is_null_when_no_line_names_it():
    # nccl-tests' `nccl-library=` code is a version number, which NCCL and RCCL builds both print.
    assert _library(public_sample("../nccl/nccl_tests_allreduce_gb200_nvl72_coreweave_pr43.txt")) == (None, None)
    assert _library(public_sample("nccl_tests_h200nvl_8gpu_compact_header.txt")) == (None, None)


def test_rccl_wins_over_an_nccl_version_line_before_it():
    r = parse_lines(formats=["nccl_debug"], lines=[
        "h:1:1 [0] NCCL INFO NCCL version 2.27.7+hip7.2",
        "h:1:1 [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd",
    ])
    assert r.settings["nccl.library"].value == "RCCL"


# The patterns before their look-behinds: the reference the anchored ones must agree with.
_UNANCHORED = {
    "_LINE": r"([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:(\S+:\d+) )?NCCL (INFO|WARN|TRACE|CALL|ABORT)\b ?(.*)$",
    "processes._NCCL": r"([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL [A-Z]+\b ?(.*)$",
    "_CONF_FILE": r"NCCL_CONF_FILE\S*?[= ](?:set by environment to )?(\S+)|(\S*/\.?nccl\.conf)\b",
}
_PIECES = st.sampled_from(["h", "vm", "10-4", ":", "1", "42", " ", "  ", "[0]", "[", "]", "NCCL", "INFO", "WARN",
                           "init.cc:213", "/", "/etc/nccl.conf", ".nccl.conf", "NCCL_CONF_FILE", "=", "x",
                           "set by environment to ", "\t", "é"])


def _pattern(name):
    return processes._NCCL if name == "processes._NCCL" else getattr(nccl_debug, name)


@settings(max_examples=400)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_anchored_line_patterns_find_what_the_unanchored_ones_found(text):
    import re

    for name, reference in _UNANCHORED.items():
        want, got = re.search(reference, text), _pattern(name).search(text)
        assert (want and (want.span(), want.groups())) == (got and (got.span(), got.groups())), name


def test_anchored_line_patterns_agree_on_every_real_nccl_line():
    import re

    roots = (Path(__file__).parent / "corpus", Path(__file__).parent.parent / "samples")
    lines = [line for root in roots for path in sorted(root.rglob("*"))
             if path.is_file() and path.suffix in (".log", ".txt", ".out")
             for line in path.read_text(errors="replace").splitlines() if "NCCL" in line]
    assert len(lines) > 2000
    for name, reference in _UNANCHORED.items():
        pattern, ref = _pattern(name), re.compile(reference)
        for line in lines:
            want, got = ref.search(line), pattern.search(line)
            assert (want and (want.span(), want.groups())) == (got and (got.span(), got.groups())), (name, line)
