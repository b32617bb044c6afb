"""NCCL lines that are not a head's INFO lines, read in C (ingest/parsers/_scan_nccl_other.h): a
WARN line with its source place and the bare `NCCL version` line, as nccl-tests outputs print them
between runs. The native engine gives what the line engine gives on the real ones, repeated,
changed and damaged, and reads their repeats in C."""

from hypothesis import given

from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _fed_by_python, _same
from tests.test_scan_tests import logs_with

CORPUS = PROJECT_ROOT / "tests" / "corpus" / "nccl"
# Real logs that print them: nccl-tests 2.9.6 (`misc/ibvwrap.cc:63 NCCL WARN`, bare version, mpirun
# echo), an NCCL 2.19.3 job's bare version line, a 2.30.3 report with its own.
LOGS = [(CORPUS / name).read_bytes() for name in (
    "nccl_tests_broadcast_v2.9.6_prompt_mpirun_issue82.log", "nccl_debug_2.19.3_bare_version_socket_issue1267.log",
    "nccl_tests_command_echo_alltoall_2.30.3_report.log")]
WARN = b"v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"
BARE = b"NCCL version 2.9.6+cuda11.2"


def test_the_real_logs_hold_both_shapes():
    assert any(WARN in data for data in LOGS)
    assert all(b"\nNCCL version " in data for data in LOGS)


def test_real_logs_repeated_read_their_warn_and_version_lines_in_c():
    for data in LOGS:
        lines = data.rstrip(b"\n").split(b"\n")
        kept = [line for line in lines if b"NCCL WARN" in line or line.startswith(b"NCCL version")]
        once = b"\n".join(lines) + b"\n"
        many = b"\n".join(lines + kept * 40) + b"\n"
        assert _fed_by_python(many) == _fed_by_python(once), data[:60]
        for batch in (1 << 21, 1 << 10):
            _same(many, batch, batch)


# What else such a line may be: its place changed or gone, another level, words a reader or the
# context watcher acts on, a version behind a tag or of another form.
VARIANTS = [
    WARN, WARN.replace(b"misc/ibvwrap.cc:63 ", b""), WARN.replace(b":63 ", b": "), WARN.replace(b":63", b":6x"),
    WARN.replace(b"misc/ibvwrap.cc:63", b":63"), WARN.replace(b"cc:63 ", b"cc:63  "), WARN + b"  ",
    WARN.replace(b"WARN", b"WARNING"), WARN.replace(b"WARN", b"INFO"), WARN.replace(b"v100-gpu-1", b"10-4-3-3"),
    WARN.replace(b"14926:14926", b"14927:14927"), WARN.replace(b"[0]", b"[1]"), WARN + b" rank 3 nranks 4",
    WARN + b" NCCL_IB_HCA=mlx5", WARN + b" throughput", WARN.replace(b"Failed", b"Failed\tto"),
    b"v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN", b"v100-gpu-1:14926:14926 [0] NCCL WARN x",
    b"(x) " + WARN, b"[1,0]<stdout>:" + WARN, WARN.replace(b"Failed", b"NCCL version 2.9.6"),
    BARE, b"NCCL version 2.9.6", b"NCCL version 2.9", b"NCCL version x", b" NCCL version 2.9.6",
    b"(Worker pid=1) NCCL version 2.9.6+cuda11.2", b"NCCL version 2.9.6+cuda11.2 NCCL INFO x",
    b"NCCL version 2.9.6 NCCL_X=1", b"NCCL version 2.10.3+cuda12.2", b"NCCL version 2.9.6+cuda", BARE + b" throughput",
    b"NCCL version 2.9.6+cuda11.2x", b"[1,0]<stdout>:" + BARE, b"NCCL version 12345678901234567890.1.1",
]


@SETTINGS
@given(logs_with(LOGS, VARIANTS))
def test_warn_and_version_lines_changed_anywhere_give_the_records_lines_give(case):
    _same(*case, case[1])
