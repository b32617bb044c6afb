from ingest.parsers import parse_lines, parse_stream
from runs.summary import summarize
from tests.samples import log_path, public_sample


def values(result):
    return [(v.key, v.value, v.kind, v.source, v.rank, v.line) for v in result.nccl]


def test_prefix_assignments_on_a_dollar_command_line_are_declared():
    r = parse_lines(formats=["launch_env"], lines=["$ NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_VERSION=2.28.3-1 python3 launch.py --steps 2"])
    assert values(r) == [
        ("NCCL_PROTO", "LL", "declared", "launch prefix", "", 1),
        ("NCCL_ALGO", "Ring", "declared", "launch prefix", "", 1),
        ("NCCL_VERSION", "2.28.3-1", "declared", "launch prefix", "", 1),  # runs/nccl.py filters it
    ]
    assert r.formats == ["launch_env"]


def test_prefix_after_bash_trace_prompt_or_env_command_with_quotes():
    r = parse_lines(formats=["launch_env"], lines=[
        "+ NCCL_DEBUG=INFO torchrun --nproc-per-node 8 train.py",
        "root@10-4-3-3:/opt/nccl-tests# NCCL_P2P_LEVEL=SYS ./build/all_reduce_perf -g 8 | tail -n 30",
        "env NCCL_SOCKET_IFNAME=\"^docker0,lo\" python3 serve.py",
    ])
    assert [(v.key, v.value, v.source, v.line) for v in r.nccl] == [
        ("NCCL_DEBUG", "INFO", "launch prefix", 1),
        ("NCCL_P2P_LEVEL", "SYS", "launch prefix", 2),
        ("NCCL_SOCKET_IFNAME", "^docker0,lo", "launch prefix", 3),
    ]


def test_export_lines_are_declared():
    r = parse_lines(formats=["launch_env"], lines=["export NCCL_BUFFSIZE=16777216", "+ export NCCL_NTHREADS=512 NCCL_MAX_NCHANNELS=16",
                          "declare -x NCCL_PROTO=\"LL\""])
    assert [(v.key, v.value, v.source) for v in r.nccl] == [
        ("NCCL_BUFFSIZE", "16777216", "export"), ("NCCL_NTHREADS", "512", "export"),
        ("NCCL_MAX_NCHANNELS", "16", "export"), ("NCCL_PROTO", "LL", "export"),
    ]


def test_a_lone_assignment_is_an_env_dump_line():
    r = parse_lines(formats=["launch_env"], lines=["NCCL_IB_HCA=mlx5_0,mlx5_1", "HOME=/root", "NCCL_DEBUG=WARN"])
    assert [(v.key, v.value, v.kind, v.source) for v in r.nccl] == [
        ("NCCL_IB_HCA", "mlx5_0,mlx5_1", "declared", "env dump"),
        ("NCCL_DEBUG", "WARN", "declared", "env dump"),
    ]
    assert r.settings == {}  # a whole `env` dump is not the launch configuration


def test_launcher_environment_dump_is_declared():
    r = parse_lines(formats=["launch_env"], lines=["launcher pid=1559 environ NCCL_*: NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216"])
    assert values(r) == [
        ("NCCL_ALGO", "Ring", "declared", "launcher env dump", "", 1),
        ("NCCL_BUFFSIZE", "16777216", "declared", "launcher env dump", "", 1),
    ]


def test_worker_environment_dump_is_effective_for_the_tp_rank():
    r = parse_lines(formats=["launch_env"], lines=[
        "[TP1] pid=1561 environ NCCL_*: NCCL_CUMEM_ENABLE=0 NCCL_DEBUG=INFO",
        "[2026-11-29 21:06:31 DP1 TP3] pid=1570 environ NCCL_*: NCCL_PROTO=LL",
        "worker pid=1580 environ NCCL_*: NCCL_ALGO=Ring",
        "[TP0] pid=1560 environ NCCL_*: ",
    ])
    assert values(r) == [
        ("NCCL_CUMEM_ENABLE", "0", "effective", "worker env dump", "1", 1),
        ("NCCL_DEBUG", "INFO", "effective", "worker env dump", "1", 1),
        ("NCCL_PROTO", "LL", "effective", "worker env dump", "3", 2),
        ("NCCL_ALGO", "Ring", "effective", "worker env dump", "pid 1580", 3),
    ]


def test_launch_flags_of_mpirun_and_docker_are_declared():
    r = parse_lines(formats=["launch_env"], lines=[
        "mpirun -np 16 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x NCCL_IB_HCA=mlx5 ./all_reduce_perf -g 1",
        "docker run --gpus all -e NCCL_P2P_DISABLE=1 --env=NCCL_SHM_DISABLE=1 image",
    ])
    assert [(v.key, v.value, v.source) for v in r.nccl] == [
        ("NCCL_DEBUG", "INFO", "launch flag"), ("NCCL_IB_HCA", "mlx5", "launch flag"),
        ("NCCL_P2P_DISABLE", "1", "launch flag"), ("NCCL_SHM_DISABLE", "1", "launch flag"),
    ]


def test_other_prefix_variables_become_env_settings_but_secrets_do_not():
    r = parse_lines(formats=["launch_env"], lines=[
        "$ SGLANG_ENABLE_SPEC_V2=1 HF_TOKEN=hf_abc CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server",
    ])
    assert {k: (s.value, s.line) for k, s in r.settings.items()} == {
        "env.SGLANG_ENABLE_SPEC_V2": ("1", 1), "env.CUDA_VISIBLE_DEVICES": ("0,1", 1),
    }
    assert r.nccl == []


def test_empty_values_declare_nothing():
    assert parse_lines(formats=["launch_env"], lines=["export NCCL_ALGO="]).nccl == []


def test_nccl_echo_lines_and_prose_are_not_declarations():
    r = parse_lines(formats=["launch_env"], lines=[
        "vm:1561:1561 [1] NCCL INFO NCCL_PROTO set by environment to LL",
        "[2026-11-29 21:06:31 TP0] NCCL_CUMEM_ENABLE is set to 0",
        "Set NCCL_P2P_LEVEL=SYS before launching",
        "# NCCL_ALGO=Tree  (commented out in the script)",
        "os.environ['NCCL_PROTO'] = 'LL'",
        "$ echo 'unbalanced quote",
    ])
    assert r.nccl == [] and r.settings == {} and r.formats == []


def test_worker_dump_ranks_agree_with_nccl_echo_ranks():
    r = parse_lines([
        "[TP1] pid=1561 environ NCCL_*: NCCL_PROTO=LL",
        "vm:1561:1561 [1] NCCL INFO NCCL_PROTO set by environment to LL",
        "vm:1561:1561 [1] NCCL INFO comm 0x3c03a010 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1",
    ], formats=["launch_env", "nccl_debug"])
    assert {(v.source, v.rank) for v in r.nccl} == {("worker env dump", "1"), ("nccl echo", "1")}


def test_dropped_sample_declares_the_tuning_and_its_workers_lack_it():
    with open(log_path("sweep/sweep_dropped_2step.log"), "rb") as f:
        r = parse_stream(f, formats=["launch_env"])
    declared = {(v.key, v.source) for v in r.nccl if v.kind == "declared"}
    assert ("NCCL_PROTO", "launch prefix") in declared and ("NCCL_PROTO", "launcher env dump") in declared
    workers = {(v.rank, v.key) for v in r.nccl if v.kind == "effective"}
    assert workers == {(rank, key) for rank in ("0", "1")
                       for key in ("NCCL_CUMEM_ENABLE", "NCCL_DEBUG", "NCCL_NVLS_ENABLE")}


def test_baseline_sample_without_tuning_is_ok():
    with open(log_path("spec_baseline_nospec.log"), "rb") as f:
        nccl = summarize(parse_stream(f))["nccl"]
    assert nccl["status"] == "ok"
    assert nccl["declared"] == {"NCCL_DEBUG": "INFO", "NCCL_NVLS_ENABLE": "0"}


def test_public_nccl_tests_command_line_prefix():
    with open(public_sample("nccl_debug_8gpu_p2p_direct_nccl_issue1773.log"), "rb") as f:
        r = parse_stream(f)
    assert {v.key: v.value for v in r.nccl if v.kind == "declared"} == {
        "NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": "SYS", "NCCL_DEBUG": "info",
    }


def test_prefix_after_the_prompts_people_paste_is_declared():
    """Real prompts: `((venv) ) [user@host ~]$`, `(base) user@host:~/dir$`, `(/path/env) [user@host dir]$`."""
    r = parse_lines(formats=["launch_env"], lines=[
        '((sglang-0.5.9) ) [dev@aihub0007 ~]$ NCCL_IB_DISABLE=1 NCCL_IB_HCA="=mlx5_0,=mlx5_1" python3 -m sglang.launch_server --tp 16',
        "(base) gandiva@v100-gpu-1:~/nccl-tests$ NCCL_ALGO=Ring ./build/broadcast_perf -g 1",
        "(/scratch/user/conda_venv) [user@lrdn0487 repo]$ NCCL_PROTO=Simple python collect_env.py",
        "(VllmWorker rank=0 pid=218) NCCL_PROTO=LL is a process tag, not a prompt",
    ])
    assert [(v.key, v.value, v.line) for v in r.nccl] == [
        ("NCCL_IB_DISABLE", "1", 1), ("NCCL_IB_HCA", "=mlx5_0,=mlx5_1", 1),
        ("NCCL_ALGO", "Ring", 2), ("NCCL_PROTO", "Simple", 3),
    ]


def test_mpirun_flags_echoed_by_a_script_are_shell_unescaped():
    line = (r"mpirun -mca plm_rsh_args -p\ 3456 -x NCCL_DEBUG_SUBSYS=GRAPH\,NET\,TUNING "
            r"-x NCCL_IB_HCA=mlx5_2\,mlx5_3 -x NCCL_NETDEVS_POLICY=MAX:1 -x NCCL_SOCKET_IFNAME='^docker0,lo' "
            r"/workspace/nccl-tests/build/alltoall_perf -b 1k")
    r = parse_lines(formats=["launch_env"], lines=["COMMAND:", line])
    assert {v.key: v.value for v in r.nccl} == {
        "NCCL_DEBUG_SUBSYS": "GRAPH,NET,TUNING", "NCCL_IB_HCA": "mlx5_2,mlx5_3",
        "NCCL_NETDEVS_POLICY": "MAX:1", "NCCL_SOCKET_IFNAME": "^docker0,lo",
    }


def test_every_nccl_variable_of_a_command_echo_is_declared_even_new_ones():
    out = summarize(parse_stream(open("tests/corpus/nccl/nccl_tests_command_echo_alltoall_2.30.3_report.log", "rb")))
    declared = out["nccl"]["declared"]
    assert len(declared) == 14 and declared["NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS"] == "0"
    assert out["processes"][0]["role"] == "nccl-tests" and out["launches_count"] == 0
    assert out["nccl_tests"][0]["rows"] == 48 and out["nccl_tests"][0]["peak_busbw_gbs"] == 38.31


def test_words_of_a_command_are_shlexs_with_or_without_quotes_and_escapes():
    import shlex

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ingest.parsers.launch_env import _words

    real = [line for line in log_path("spec_eagle3_tuned_2step.log").read_text().splitlines() if line.startswith("$ ")]
    assert real and all(_words(line) == shlex.split(line) for line in real)

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet="ab=_ \t\r\n'\"\\\x0b\x0c\x1c\x1f#;|&$()é\xa0\x85", max_size=16))
    def same(text):
        try:
            expected = shlex.split(text)
        except ValueError:  # unbalanced: the fallback's own reading
            return
        assert _words(text) == expected

    same()
