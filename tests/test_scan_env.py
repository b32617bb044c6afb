"""Env dumps, launch commands, exports, bare NCCL versions and the NCCL-named lines no reader acts
on, read in C (ingest/parsers/_scan_env.h): the native engine gives what the line engine gives on
the real lines of the corpus and samples, repeated, damaged and made, and it reads their repeats
in C (not a line each handed back to Python)."""

import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.parsers import _scan, parse_stream, processes
from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _same
from tests.test_scan_launch import _real_lines
from tests.test_scan_nccl import _python_lines

_SHAPE = re.compile(r"pid=\d+ environ|^[$+]\s|^(?:export|declare|env)\b|^[A-Za-z_][A-Za-z0-9_]*=|^NCCL version|NCCL")
_HEAD = re.compile(r":\d+:\d+ \[\d+\] ")


def _env_lines() -> list[str]:
    """Every real line of these shapes: NCCL named outside an NCCL head, an env dump, a command."""
    return [line for line in _real_lines() if line.isascii() and _SHAPE.search(line) and not _HEAD.search(line)
            and not line.startswith(("|", "- ", " "))]  # (the corpus's own index and notes)


REAL = _env_lines()
# NCCL INFO lines of a log with no serving format (a test job's): their processes, read in C past the first
REAL_INFO = [line for line in (PROJECT_ROOT / "tests" / "corpus" / "shared" / "nccl_debug_8gpu_p2p_direct_nccl_issue1773.log")
             .read_text().splitlines() if _HEAD.search(line)][:80]
SPEC = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_text().splitlines()
NOSPEC = (PROJECT_ROOT / "samples" / "spec_baseline_nospec.log").read_text().splitlines()
DUMPS = [line for line in SPEC + NOSPEC if " environ " in line]
LAUNCH = [line for line in SPEC + NOSPEC if line.startswith("$ ")]


def test_the_real_lines_hold_every_shape_read_in_c():
    assert len(REAL) > 60
    for pattern in (r"^\[TP\d+\] pid=\d+ environ NCCL_\*: ", r"^launcher pid=\d+ environ ", r"^\$ NCCL_\w+=",
                    r"^export NCCL_\w+=\w", r"^export NCCL_\w+=\"", r"^export [A-Z_]+=", r"^NCCL version \d",
                    r"^node \[\d+\] NCCL INFO ", r"^echo .*NCCL", r"^\[\d{4}-\d\d-\d\d [\d:]+\] node "):
        assert any(re.search(pattern, line) for line in REAL), pattern


def _log(*parts: list[str]) -> bytes:
    return ("\n".join(line for part in parts for line in part) + "\n").encode()


@pytest.mark.parametrize("batch", [1 << 21, 4096, 333, 61])
def test_real_env_lines_repeated_read_as_the_lines_engine_reads_them(batch):
    data = _log(SPEC, REAL, NOSPEC, REAL, SPEC, REAL)
    _same(data, batch, batch)


def test_the_repeats_of_a_serving_logs_env_and_launch_lines_are_read_in_c():
    data = _log(SPEC, SPEC, SPEC)
    fed = _python_lines(data)
    again = _python_lines(_log(SPEC))
    # Past the first launch, its dumps, command and version lines are C's: none comes back
    for line in DUMPS + LAUNCH:
        assert fed.count(line) <= again.count(line), line
    assert len(fed) - len(again) <= 4
    _same(data)


def test_the_repeats_of_the_real_lines_are_read_in_c():
    once = _python_lines(_log(SPEC, REAL))
    thrice = _python_lines(_log(SPEC, REAL, REAL, REAL))
    back = [line for line in REAL if thrice.count(line) > once.count(line)]
    assert len(back) < 0.06 * len(REAL), back
    # what still comes back: an RCCL version (the library set again), a markdown title (nccl_tests'
    # `#`), and the line after a `\` (a command SGLang's reader joins: it is busy). Launch flags,
    # escapes, prompts, test commands and SGLang's launch commands (their settings held) are C's.
    after_escape = {b for a, b in zip(REAL, REAL[1:], strict=False) if a.endswith("\\")}
    for line in back:
        assert line in after_escape or line.startswith("#") or "RCCL version" in line, line


# ---- made lines: each branch of the readers' grammar --------------------------------------------

DUMP = DUMPS[1]  # a worker's: `[TP0] pid=... environ NCCL_*: ...`
LAUNCHER = next(line for line in DUMPS if line.startswith("launcher"))
WORKER_PID = re.search(r"pid=(\d+)", DUMP).group(1)
LAUNCHER_PID = re.search(r"pid=(\d+)", LAUNCHER).group(1)

MADE = [
    # env dumps: labels, ranks, pids, the parts of _DUMP, the pairs
    DUMP, LAUNCHER,
    DUMP.replace("[TP0]", "[DP0 TP0 EP0]"), DUMP.replace("[TP0]", "[TP0 rank=3]"), DUMP.replace("[TP0]", "[rank 2]"),
    DUMP.replace("[TP0]", "[TP00]"), DUMP.replace("[TP0]", "[TP0x]"), DUMP.replace("[TP0]", "worker"),
    DUMP.replace("[TP0]", "[PP1]"), DUMP.replace("[TP0]", "(TP0)"), DUMP.replace("[TP0] ", ""),
    DUMP.replace("[TP0]", "[" + "TP0 " * 80 + "]"),
    DUMP.replace(f"pid={WORKER_PID}", f"pid=0{WORKER_PID}"), DUMP.replace(f"pid={WORKER_PID}", "pid=" + "9" * 25),
    DUMP.replace(f"pid={WORKER_PID}", "pid=424242"), DUMP.replace("pid=", "xpid="), DUMP.replace("pid=", "a pid="),
    DUMP.replace(" environ ", " environment "), DUMP.replace(" environ NCCL_*:", " environ:"),
    DUMP.replace(" environ NCCL_*:", " environ"), DUMP.replace("NCCL_*: ", "NCCL_*:\t"),
    DUMP + " NCCL_X=", DUMP + " NCCL_x=1 MY_NCCL_A=1 NCCL_A=NCCL_B=1 =", DUMP + "  \t", DUMP + " \x1c",
    DUMP.split(": ")[0] + ": ", DUMP + " pid=7 environ: NCCL_Z=9",
    LAUNCHER.replace("launcher", "Launcher"), LAUNCHER.replace("launcher", "LAUNCHER [TP0]"),
    LAUNCHER.split(": ")[0] + ": nothing here", LAUNCHER.replace(f"pid={LAUNCHER_PID}", "pid=4243"),
    DUMP + " NCCL_CONF_FILE=/etc/nccl.conf", DUMP + " batch Decode batch", DUMP + " NCCL INFO x",
    # launch commands: prompts, starts, words, names
    *LAUNCH, "$ NCCL_A=1 NCCL_B=2 python3 x.py", "$  NCCL_A=1\tpython", "$\tNCCL_A=1 serve", "$NCCL_A=1 python",
    "+ NCCL_A=1 mpirun -np 2", "+ NCCL_A=1 torchrun", "$ NCCL_A=1 ./run", "$ nvidia-smi topo -m", "$ ls NCCL",
    "export NCCL_A=1", "export NCCL_NET=\"AWS Libfabric\"", "export NCCL_A='x y' NCCL_B=\"\" NCCL_C=''",
    "export NCCL_A=\"x", "export NCCL_A=x\\ y", "export NCCL_A=1 FOO=2", "export FOO=3", "export foo=4 NCCL_A=5",
    "export MY_TOKEN=1 NCCL_A=2", "export API_KEY=1", "export KEYS=2", "export A_KEY_B=3", "export KEYRING=4",
    "export NCCL_A", "export", "export  NCCL_A=1", "exporter=1 NCCL_A=2", "export\x0bNCCL_A=1",
    "declare -x NCCL_A=1", "declare -x FOO=1", "declare NCCL_A=1", "env NCCL_A=1 python", "env NCCL_A=1",
    "env FOO=1 NCCL_A=2 cmd", "NCCL_A=1", "NCCL_A=", "NCCL_A=1 NCCL_B=2", "FOO=1 NCCL_A=2 python3 run.py",
    "FOO=1", "foo=1 NCCL_A=2", "Foo=1 bar", "_X=1 NCCL_A=2", "9X=1 NCCL_A=2", "NCCL_A=1 -x NCCL_B=2 mpirun",
    "mpirun -x NCCL_A=1 -e NCCL_B=2 --env NCCL_C=3 app", "user@host:~$ NCCL_A=1 python", "(venv) $ NCCL_A=1 python",
    "[u@h dir]$ NCCL_A=1 python", "u.v-w@h:/x# NCCL_A=1 python", "NCCL_A=1 python -c 'print(1)'",
    "$ NCCL_A=1 SGLANG_X=2 python -m sglang.launch_server", "$ NCCL_A=1 all_reduce_perf -b 8",
    "$ NCCL_A=1 NCCL_PASSWORD=x python", "$ NCCL_A=1 \"quoted cmd\" python", "$ NCCL_A=1 server_args=ServerArgs(",
    # bare versions: held settings, CUDA or not, other forms
    "NCCL version 2.28.9+cuda13.0", "NCCL version 2.28.9", "NCCL version 2.28.9+cuda12.4", "NCCL version 2.28",
    "NCCL version 2.28.9+cuda12.4.1", "NCCL version x NCCL version 2.28.9", "NCCL version 2.28.9 NCCL_A=1",
    "NCCL version  2.28.9", "NCCL version 2.28.9-1+cuda13.0 extra", "(pid=3) NCCL version 2.28.9",
    # lines no reader acts on, and their near misses
    "node [0] NCCL INFO Kernel version: 6.8.0-136-generic", "node [0] NCCL INFO Using network Socket",
    "node [0] NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1",
    "node [0] NCCL INFO NCCL_X set by environment to 1", "node [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd",
    "node [0] NCCL INFO throughput NCCL_A set to 3", "echo ========== RUNNING NCCL TESTS ==========",
    "========== RUNNING NCCL TESTS ==========", "---- NCCL ----", "--- NCCL set by environment ---",
    "[2026-08-23 09:56:58] node [0] /src/init.cc:213 NCCL WARN Missing", "[2026-08-23 09:56:58 TP0] NCCL x",
    "[2026-08-23 09:56:58 TP0 x] NCCL x", "# NCCL x", "#  Rank  0 Pid 1 NCCL", "(x) NCCL y", " NCCL indented",
    "node a:1:2 [3] NCCL INFO x", "b:1:2 [3] NCCL INFO x", "see nccl.conf", "NCCL_CONF_FILE=/x", "Decode batch NCCL",
    "NCCL avg bus bandwidth 3", "nccl version 2.1 NCCL", "NCCL: throughput below NCCL_MIN=2", "NCCL statistics  x:y",
    "NCCL", "NCCL_", "x NCCL environ y", "os.environ NCCL pid=3", "ncclrun pid=12 environ: NCCL_A=1",
    # a version or topology dump in the head (the Watcher's, never a candidate) naming NCCL
    "torch: 2.5.1 NCCL throughput", "[pip3] nvidia-nccl-cu12==2.26.2 NCCL_X=1 throughput", "vllm: 0.8 NCCL_A=1",
    "GPU0\tX \tNV12\t NCCL_A=1", "PyTorch version : 2.5 NCCL version 2.21.5",
    # launch flags (_FLAG, _shell_value): forms, quotes, escapes, empties, bare exports, look-behinds
    "mpirun -x NCCL_A=1 -x NCCL_B=\"x y\" -x NCCL_C='z' -e NCCL_D=4 --env NCCL_E=5 app",
    "mpirun -x NCCL_A=a\\,b\\ c -x NCCL_B=\\ -x NCCL_C=x\\\\y app", "mpirun -x NCCL_A=\"a\\,b\" -x NCCL_B='' app",
    "mpirun -x NCCL_A= -x NCCL_B -x LD_LIBRARY_PATH -x NCCL_C=3", "mpirun -x=NCCL_A=1 -x = NCCL_B=2 -x\tNCCL_C=3",
    "mpirun -xNCCL_A=1 --x NCCL_B=2 -X NCCL_C=3 -x NCCL_D =4", "declare -x NCCL_A=1 -x NCCL_B=2",
    "a-x NCCL_A=1 -x NCCL_B=2", "mpirun -x NCCL_A=\"open -x NCCL_B=2", "mpirun -x NCCL_A='x -x NCCL_B=2' -x NCCL_C=3",
    "mpirun -x NCCL_a=1 -x NCCL_A=b=c -x NCCL_=1 -x NCCL_B=\"q\"r", "mpirun -x NCCL_A=1\\", "-x NCCL_A=1",
    "-x NCCL_A=1 -x NCCL_B=2", "mpirun --env=NCCL_A=1 --envx NCCL_B=2 -ex NCCL_C=3", "mpirun -x NCCL_A=\"\"",
    "docker run -e NCCL_A=1 -e NCCL_B=\"\" img", "NCCL_A=1 mpirun -x NCCL_B=2 -x NCCL_A=3 app",
    "export NCCL_A=1 -x NCCL_B=2", "$ mpirun -x NCCL_A=1 python x.py", "+ mpirun -x NCCL_A=1 -x NCCL_B=",
    # prompts (_PROMPT): tags, brackets, user@host, and their near misses
    "(base) u@h:~/x$ mpirun -x NCCL_A=1 ./all_reduce_perf -g 1", "((env-1) ) [u@h ~]$ NCCL_A=1 FOO=2 python3 x.py",
    "(a (b) c) $ NCCL_A=1 x", "(a) (b $ NCCL_A=1", "(a)[u@h]# NCCL_A=1", "[u@h d]$NCCL_A=1", "[u@h d] $ NCCL_A=1",
    "[u@h d]] NCCL_A=1", "u@h:/a b$ NCCL_A=1", "u@h:/x#$ NCCL_A=1", "u@h: NCCL_A=1", "u@h:$NCCL_A=1 x",
    "@h:/x$ NCCL_A=1", "u@:/x$ NCCL_A=1", "(x pid=3) NCCL_A=1", "(x)pid=3 NCCL_A=1", "(a ((b)) c) $ NCCL_A=1",
    "(a)  \t$  NCCL_A=1 python", "() $ NCCL_A=1", "(a) u.v-w@h.i:/d# export NCCL_A=1 FOO=3", "(a) $", "(a) [u@h x",
    "root@10-4-3-3:/opt/nccl-tests# NCCL_P2P_DISABLE=0 NCCL_DEBUG=info ./build/all_reduce_perf -g 8 | tail -n 30",
    # shell words (shlex): escapes, quotes in a word, unclosed quotes (str.split() then), a last `\\`
    "export NCCL_A=x\\ y NCCL_B=\"a\\\"b\" NCCL_C=\"a\\b\" NCCL_D='a\\b'", "NCCL_A=\"x NCCL_B=2", "export NCCL_A=1 \\",
    "export NCCL_A='x'y\"z\" NCCL_B=\\'q\\'", "export NCCL_A=\"'x'\"", "$ NCCL_A=1 python x.py \"unclosed",
    "export NCCL_A=1 \"\" NCCL_B=2", "export \"NCCL_A=1\"", "NCCL_A='a b' NCCL_B=\"c\"", "NCCL_A=\\\" NCCL_B=1",
    "export NCCL_A=\"x\\\\\" y\"", "NCCL_A=1\\\tNCCL_B=2 x", "FOO=\"a b\" NCCL_A=1 x", "NCCL_A=\"x\"\"y\" z",
    # a test's command (nccl_tests' op_command and setting), sglang's name outside a launch
    "mpirun -x NCCL_A=1 ./build/all_reduce_perf -b 8", "mpirun -x NCCL_A=1 /x/alltoall_perf_mpi -g 1",
    "mpirun -x NCCL_A=1 ./build/broadcast_perf", "mpirun -x NCCL_A=1 all_reduce_perf NCCL INFO x",
    "NCCL_A=1 ./Foo_perf -g 1", "NCCL_A=1 ./x_perf_perf", "NCCL_A=1 ./_perf", "NCCL_A=1 a_perfx b_perf_mpi",
    "((sglang-0.5.9) ) [u@h ~]$ NCCL_A=1 torchrun x.py", "$ NCCL_A=1 python -m sglang.launch_server --tp 2",
    "$ NCCL_A=1 sglang serve --tp 2", "$ NCCL_A=1 xsglang.launch_server", "$ NCCL_A=1 sglang.launch_serverx",
    "$ NCCL_A=1 sglang  \tserve", "$ NCCL_A=1 sglang servex", "$ NCCL_A=1 python -m sglang.bench_latency",
    # SGLang's launch commands (its settings held: read in C), continued, odd, with another literal of sglang's
    "((sglang-0.5.9) ) [u@h ~]$ NCCL_A=1 SGLANG_HOST_IP=1.2.3.4 python3 -m sglang.launch_server --model-path /m "
    "--tp-size 2 --trust-remote-code --host 1.2.3.4 --mem-fraction-static 0.8 --disaggregation-mode decode  ",
    "$ NCCL_A=1 python -m sglang.launch_server --tp 2 \\", "$ NCCL_A=1 python -m sglang.launch_server --tp=x --dp",
    "$ NCCL_A=1 sglang serve --mod m --tp 2 SGL_X=1 --model-path", "$ NCCL_A=1 python -m sglang.launch_server --tp",
    "$ NCCL_A=1 python -m sglang.launch_server \"--tp 2\" '--model' x --enable-dp-attention --disable-cuda-graph=0",
    "$ NCCL_A=1 python -m sglang.launch_server --speculative-algo eagle", "$ SGLANG_Y=1 python -m sglang.bench_latency",
    "$ NCCL_A=1 python -m sglang.launch_server --cuda-graph-max-bs abc --page-size -- --dtype x -- SGLANG_Z=1",
    "$ NCCL_A=\"1 python -m sglang.launch_server --tp 2", "$ NCCL_A=1 python -m sglang.launch_server --x=1 --y 2 --",
    # env dumps of processes new to the Tagger
    "[DP1 TP3] pid=77 environ NCCL_*: NCCL_A=1", "launcher pid=78 environ NCCL_*: NCCL_A=1",
    "[TP2 rank=5] pid=79 environ NCCL_*: NCCL_A=1", "worker pid=80 environ NCCL_*: NCCL_A=1",
    "[EP0] pid=81 environ NCCL_*:", "[TP1] pid=0082 environ NCCL_*: NCCL_A=1", "[TP0] pid=83 environ NCCL_*: x",
    # past the scanner's bounds (a text, a word count): Python's
    "mpirun -x NCCL_A=" + "v" * 9000 + " -x NCCL_B=2", "export NCCL_A=" + "x\\ " * 3000, "NCCL_A=1 " * 600,
]

# What copies do to a line (the MPI tags, quotes and colours clean() takes off are the lead's: text.py).
_DAMAGE = [
    lambda s: s[: len(s) // 2],
    lambda s: s[: len(s) - 3],
    lambda s: s + "   ",
    lambda s: s + " é",
    lambda s: s.replace(" ", "  ", 1),
    lambda s: s.replace(" ", "\t", 2),
    lambda s: s.replace("=", " = ", 1),
    lambda s: s.replace("NCCL_", "nccl_", 1),
    lambda s: "\x1c" + s,
    lambda s: s + " \\",
    lambda s: s.replace("pid=", "pid=1", 1),
    lambda s: s + " throughput",
]


@pytest.mark.parametrize("line", MADE)
def test_a_made_line_after_its_processes_are_known_reads_as_the_lines_engine_reads_it(line):
    data = _log(SPEC, [line, line], NOSPEC, [line])
    _same(data, 1 << 12, 1 << 12)
    _same(data, 97, 97, spill_at=1)  # (a sink takes the records after each chunk: stamp() sees none of C's)
    # Alone with NCCL lines (no serving format): who declared NCCL values makes the roles
    alone = _log([line, *REAL_INFO, line, line, *REAL_INFO, line])
    _same(alone, 1 << 12, 1 << 12, spill_at=1)
    _same(alone, 61, 61, spill_at=1)


@st.composite
def env_logs(draw) -> bytes:
    """Real and made lines, some damaged, after a serving head (its processes, formats, settings), read
    three times over (the repeats by the scanner)."""
    lines = draw(st.lists(st.sampled_from(REAL + MADE), min_size=1, max_size=30))
    out = []
    for line in lines:
        for damage in draw(st.lists(st.sampled_from(_DAMAGE), max_size=2)):
            line = damage(line)
        out.append(line)
    head = draw(st.sampled_from([SPEC, NOSPEC, SPEC[:draw(st.integers(0, len(SPEC)))], []]))
    body = head + out + draw(st.permutations(out)) + out
    return ("\n".join(body) + draw(st.sampled_from(["\n", ""]))).encode()


@SETTINGS
@given(env_logs(), st.integers(1, 3000), st.integers(1, 50), st.booleans())
def test_native_reads_damaged_env_lines_as_the_lines_engine_does(data, batch, spill_at, vector):
    _same(data, batch, batch, spill_at, vector=vector)


def test_made_lines_of_each_shape_are_read_in_c_once_their_processes_and_settings_are_held():
    c_lines = [DUMP, LAUNCHER, LAUNCH[0], "export NCCL_NET=\"AWS Libfabric\"", "export FOO=3", "declare -x NCCL_A=1",
               "env NCCL_A=1 python", "NCCL_A=1", "NCCL version 2.28.9+cuda13.0", "node [0] NCCL INFO Kernel version: 6",
               "echo ========== RUNNING NCCL TESTS ==========", DUMP.replace("[TP0]", "[TP0 rank=3]")]
    data = _log(SPEC, c_lines, c_lines * 20)
    _same(data)
    fed = _python_lines(data)
    for line in c_lines:
        assert fed.count(line) <= 1, line


def test_env_bind_checks_its_arguments():
    from ingest.parsers import PARSERS, native, records

    bare = _scan.Scanner.__new__(_scan.Scanner)
    tagger = processes.Tagger(records.ParseResult())
    with pytest.raises(RuntimeError, match="not initialised"):
        bare.env_bind(tagger, None, 1, ("a", "b"), "main", "launch_env")
    scan, _ = native.standalone(PARSERS)
    with pytest.raises(RuntimeError, match="nccl_bind"):
        scan.env_bind(tagger, None, 1, ("a", "b"), "main", "launch_env")
    scan.nccl_bind(records.ParseResult(), object(), 1, 1, records.NcclValue, "nccl echo")
    with pytest.raises(ValueError):
        scan.env_bind(tagger, None, -1, ("a", "b"), "main", "launch_env")
    with pytest.raises(AttributeError):
        scan.env_bind(object(), None, 1, ("a", "b"), "main", "launch_env")
    odd = processes.Tagger(records.ParseResult())
    odd.launch_lines = ()  # type: ignore[assignment]
    with pytest.raises(TypeError):
        scan.env_bind(odd, None, 1, ("a", "b"), "main", "launch_env")
    with pytest.raises(TypeError):
        scan.env_bind(tagger, None, 1, ("a", "b"), "main", "launch_env", "not callable")
    scan.env_bind(tagger, None, 1, ("a", "b"), "main", "launch_env")
    scan.env_bind(tagger, None, 1, ("a", "b"), "main", "launch_env", len)  # again: the first binding goes


@pytest.mark.parametrize("last", ["export NCCL_X=1", "$ NCCL_X=1 python3 run.py", "NCCL_X=1 NCCL_Y=2 ./run"])
def test_a_declared_value_read_in_c_names_its_process_a_declarer_before_a_sink_takes_it(last):
    # The command is the chunk's last line, read in C: its record goes to the sink before the Tagger's
    # stamp() sees it, so the scanner itself marks "main" a declarer (the launcher role hangs on it).
    data = _log(["hello", "[TP0] pid=5 environ NCCL_*: NCCL_A=1", last])
    assert last not in _python_lines(data)
    _same(data, spill_at=1)
    assert parse_stream(io.BytesIO(data), engine="lines").processes["main"]["role"] == processes.LAUNCHER


# ---- launch flags, prompts, shell words, test commands (the nccl mixes' launch lines) ------------

# The real launch lines of the corpus whose shapes the nccl mixes repeat: an `mpirun -x` command after
# a conda prompt and alone (escaped commas and spaces), a `+ mpirun` of bash -x, prompts of SGLang's
# and of a root shell before NCCL_ assignments (one quoted), each naming a test's binary or not.
SHAPES = [r"^\(base\) \S+@\S+\$ mpirun .* -x NCCL_", r"^mpirun .*\\ .* -x NCCL_\w+=\S*\\,", r"^\+ mpirun .* -x NCCL_\w+= ",
          r"^\(\(sglang-[\d.]+\) \) \[\S+@\S+ ~\]\$ NCCL_\w+=\S+ .* torchrun ", r"^root@\S+:\S+# NCCL_\w+=\S+ ",
          r"^\(\(sglang-[\d.]+\) \) \[\S+@\S+ ~\]\$ NCCL_\w+=\S+ .* -m sglang\.launch_server "]
SHAPED = [next(line for line in REAL if re.search(pattern, line)) for pattern in SHAPES]


def test_the_launch_lines_of_the_nccl_mixes_are_read_in_c_past_their_first():
    data = _log(SPEC, SHAPED, REAL_INFO, SHAPED * 5)
    _same(data)
    _same(data, 97, 97, spill_at=1)
    fed = _python_lines(data)
    for line in SHAPED:
        # the first: a test's command sets nccl_tests.command, an SGLang env name a setting, a new "main"
        assert fed.count(line) <= 1, line


def test_a_command_naming_one_test_then_another_sets_the_op_as_the_lines_engine_does():
    # nccl_tests names a table that names no op of its own after the last command's binary (op_command):
    # the scanner sets it where it reads the command
    a = "mpirun -x NCCL_A=1 ./build/broadcast_perf -b 8"
    b = "mpirun -x NCCL_A=1 ./build/alltoall_perf_mpi -b 8"
    table = ["#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
             "#wrong", "           8             2     float     sum      -1    15.78    0.00    0.00       0    13.87    "
             "0.00    0.00       0", "# Avg bus bandwidth    : 0.00"]
    data = _log(SPEC, [a], table, [b], table, [a, b, a], table, [b], table)
    _same(data)
    _same(data, 61, 61, spill_at=1)
    fed = _python_lines(data)
    assert fed.count(a) == 1 and b not in fed  # (the first sets nccl_tests.command)
    ops = {c.op for c in parse_stream(io.BytesIO(data), engine="native").collectives}
    assert ops == {"broadcast", "alltoall"}


_WORD_PARTS = ["a", "NCCL_A=", "NCCL_B=", "FOO=", "=", "x y", " ", "  ", "\t", '"', "'", "\\", '\\"', "\\'", "\\\\",
               "-x ", " -x NCCL_C=", "-e ", "--env ", ",", "\\,", '""', "''", "$", "#", "@", "(", ")", "[", "]"]


@st.composite
def command_lines(draw) -> str:
    """Shell-ish commands built of quotes, escapes and flags after a start launch_env reads."""
    head = draw(st.sampled_from(["", "$ ", "+ ", "export ", "env ", "declare -x ", "(v) $ ", "(a (b)) [u@h d]$ ",
                                 "u@h:~/d# ", "mpirun ", "NCCL_Z=1 "]))
    body = "".join(draw(st.lists(st.sampled_from(_WORD_PARTS), max_size=14)))
    return head + draw(st.sampled_from(["NCCL_A=", "FOO=1 NCCL_A=", "-x NCCL_A=", ""])) + body


@SETTINGS
@given(st.lists(command_lines(), min_size=1, max_size=6), st.booleans())
def test_hostile_quoting_reads_as_the_lines_engine_reads_it(lines, spec):
    head = SPEC if spec else []
    data = _log(head, lines, lines, lines)
    _same(data, 61, 61, spill_at=1)
    _same(data)


def test_records_of_many_keys_and_values_and_of_many_launch_flags_read_as_the_lines_engine_reads_them():
    """A record's key and value strs are kept by their text (256 of them, up to 64 characters): more
    distinct ones than that, values past 64 characters and texts that share their first and last
    bytes give the values the line engine gives; a launch line's first 64 flags are taken from the
    check before its moves, the rest found again."""
    flags = " ".join(f"-x NCCL_K{k}_{'Y' * (k % 7)}=v{k}{'z' * (k % 70)}x" for k in range(90))  # (< 8192 bytes)
    lines = [f"$ mpirun {flags} python3 run.py", f"$ mpirun {flags} -x NCCL_LAST='a b' python3 run.py"]
    for k in range(300):  # dumps of distinct values: the kept strs replaced, and found again below
        pairs = " ".join(f"NCCL_A{j}=aaaaaaaa{k * 7 + j}bbbbbbbb" for j in range(4))
        lines.append(f"[TP0] pid=1561 environ NCCL_*: {pairs}")
    data = _log(SPEC, lines, lines[:50], SPEC)
    _same(data)
    _same(data, 333, 333, spill_at=7)
    fed = _python_lines(_log(SPEC, lines, lines))
    assert fed.count(lines[0]) <= 1 and fed.count(lines[-1]) <= 1
