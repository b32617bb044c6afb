"""NCCL INFO lines the C scanner reads itself (ingest/parsers/_scan_nccl.h): the native engine
gives what the line engine gives on real NCCL lines, repeated, renumbered and damaged, and it
does read the bulk of them in C (not a line each handed back to Python)."""

import io
import re
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.nccl_unique import copy
from ingest.parsers import _scan, native, nccl_debug, parse_stream, processes, records, text
from tests.samples import PROJECT_ROOT, public_excerpts
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _fed_by_python, _same

_HEAD = re.compile(r"^[^\s:(]+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN) ")


def _real_lines() -> list[str]:
    """Every NCCL INFO/WARN line of the repository's real logs (corpus, public excerpts, samples)."""
    paths = sorted((PROJECT_ROOT / "tests" / "corpus" / "nccl").glob("*.log")) + public_excerpts() \
        + sorted((PROJECT_ROOT / "samples").rglob("*.log"))
    out: dict[str, None] = {}
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if _HEAD.match(line) and line.isascii():
                out[line] = None
    return list(out)


REAL = _real_lines()
SPEC = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_text()


def _kinds(pattern: str) -> list[str]:
    found = [line for line in REAL if re.search(pattern, line)]
    assert found, pattern
    return found


def test_the_real_lines_hold_every_kind_read_in_c():
    assert len(REAL) > 500
    for pattern in (r"NCCL INFO Channel \d+/\d+ : \d+\[\w+\] -> ", r"NCCL INFO Channel \d+/\d+ :( +\d+)+$",
                    r"\brank \d+ n[Rr]anks \d+", r"Connected all rings", r"via NET/", r"via P2P/direct pointer",
                    r"via SHM/", r"\[receive\]", r"nNodes \d+"):
        _kinds(pattern)


def test_real_nccl_lines_repeated_and_renumbered_read_as_the_lines_engine_reads_them():
    data = ("\n".join(REAL + REAL + copy(REAL, 8) + REAL) + "\n").encode()
    for batch in (1 << 21, 4096, 97):
        _same(data, batch, batch)
    lines = data.count(b"\n")
    # The first pass is Python's (first of each kind, echoes, versions); the repeats are C's.
    assert _fed_by_python(data) < 0.5 * lines


def test_the_scanner_reads_repeated_info_lines_of_known_processes_itself():
    head = "\n".join(REAL) + "\n"
    plain = _fed_by_python(head.encode())
    again = (head + head).encode()
    # The second pass: only what acts on every sight (echoes, versions, WARN) comes back.
    acting = sum(1 for line in REAL if "set by environment" in line or "CCL version" in line or " NCCL WARN " in line
                 or "NCCL_" in line or not line[:1].islower())
    assert _fed_by_python(again) - plain <= acting
    _same(again, 1 << 12, 1 << 12)


def _one_process(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


COMM = "vm:1467:1467 [0] NCCL INFO comm 0x1518ba20 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0"
CONN = "vm:1467:1467 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"
RING = "vm:1467:1467 [0] NCCL INFO Channel 00/24 : 0 1"


@pytest.mark.parametrize("later", [
    # an INFO message nccl_debug has no branch for: nothing changes
    "vm:1467:1467 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "vm:1467:1467 [0] NCCL INFO NET/IB : No device found.",
    "vm:1467:1467 [0] NCCL INFO threadThresholds 8/8/64 | 16/8/64 | 512 | 512",
    # connections: known thread, known or new transport, the name's forms
    CONN.replace("Channel 00/0", "Channel 07/0"),
    CONN.replace("0[0] -> 1[1]", "1[1] -> 0[0]") + " [receive]",
    CONN.replace("P2P/CUMEM", "P2P/direct pointer/read"),
    CONN.replace("P2P/CUMEM", "P2P/direct pointer"),
    CONN.replace("P2P/CUMEM", "NET/IB/0/GDRDMA"),
    CONN.replace("P2P/CUMEM", "NET/IB/3/GDRDMA(PCI)"),
    CONN.replace("P2P/CUMEM", "COLLNET/IB/x"),
    CONN.replace("P2P/CUMEM", "SHM/direct/direct"),
    CONN.replace("P2P/CUMEM", "P2P/IPC comm 0x2bc1f840 nRanks 02"),
    CONN.replace(" via P2P/CUMEM", ""),
    CONN.replace(" via P2P/CUMEM", " via  P2P/CUMEM"),
    CONN.replace("0[0] -> 1[1]", "0[60] -> 1[7x0]"),
    CONN.replace("0[0] -> 1[1]", "0[G] -> 1[1]"),
    CONN.replace("1467:1467", "1467:1470"),  # another thread of the process: its first connection
    # rings: once set, a listing changes nothing
    RING.replace("Channel 00/24", "Channel 05/24"),
    RING + "   ",
    RING.replace(" : 0 1", " :  0  1 x"),
    RING.replace("00/24", "00"),
    # rank lines: ranks held, counts no larger; or larger (Python sets them)
    COMM.replace("0x1518ba20", "0x1"),
    COMM.replace("nNodes 1", "nNodes 3"),
    COMM.replace("nRanks 2", "nRanks 16"),
    COMM.replace("nRanks 2", "nranks 2"),
    COMM.replace("nRanks 2", "nRanks 2" + "0" * 30),
    COMM.replace(" nNodes 1", ""),
    COMM.replace("[0]", "[3]"),
    "vm:1467:1467 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.44",
    "vm:1467:1467 [0] NCCL INFO Channel 00/0 : rank 0 nranks 4",
    # what nccl_debug or the context watcher acts on: Python's
    "vm:1467:1467 [0] NCCL INFO Using network IB",
    "vm:1467:1467 [0] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 4 p2p",
    "vm:1467:1467 [0] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, " + "9" * 30 + " p2p channels,",
    "vm:1467:1467 [0] NCCL INFO NET/OFI Adding NCCL_PROTO=simple to environment",
    "vm:1467:1467 [0] NCCL INFO Plugin name set by env to libnccl-net.so",
    "vm:1467:1467 [0] NCCL INFO Invalid value 16M for NCCL_BUFFSIZE, using default 4194304.",
    "vm:1467:1467 [0] NCCL INFO reading /etc/nccl.conf",
    # echoes: a record each (C makes it for a known process), the value as _ECHO and _INTEGER read it
    "vm:1467:1467 [0] NCCL INFO NCCL_PROTO set by environment to LL",
    "vm:1467:1467 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 16777216.",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to -1.",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to 1.5.",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to .",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to -.",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to   spaced  value \x1c ",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to ",
    "vm:1467:1467 [0] NCCL INFO NCCL_x set by environment to 1",
    "vm:1467:1467 [0] NCCL INFO NCCL_ set by environment to 1",
    "vm:1467:1467 [0] NCCL INFO NCCL_X  set by environment to 1",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to 1",
    "vm:1467:1467 [0] NCCL INFO NCCL_CONF_FILE set by environment to /etc/nccl.conf",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to a NCCL INFO b",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to a NCCL WARN b set by environment",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to pid=3 environ: NCCL_Y=1",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to -x NCCL_Y=2",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to --env NCCL_Y=2",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to rank 3 nranks 4",
    "vm:1467:1499 [0] NCCL INFO NCCL_X set by environment to 1",
    "vm:1400:1400 [0] NCCL INFO NCCL_X set by environment to 1",
    "TARS:1467:1467 [0] NCCL INFO NCCL_X set by environment to 1",
    "user@vm:1467:1467 [0] NCCL INFO NCCL_X set by environment to 1",
    "export:1467:1467 [0] NCCL INFO NCCL_X set by environment to 1",
    "X=1:1467:1467 [0] NCCL INFO NCCL_X set by environment to 1",
    "vm:1467:1467 [0] NCCL INFO cudaDriverVersion 13000 RCCL version : 2.27.7",
    # version lines: the first sets the settings (Python's); once they are held, C marks the line
    # used and offers it, unless it names a CUDA version not held or is not `NCCL version X.Y.Z`
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
    "vm:1467:1499 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9-1+cuda12.4 extra words",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9+cuda",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28",
    "vm:1467:1467 [0] NCCL INFO NCCL version  2.28.9",
    "vm:1467:1467 [0] NCCL INFO NCCL version x NCCL version 2.28.9",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9 nccl.conf set by environment NCCL_CONF_FILE",
    "vm:1467:1467 [0] NCCL INFO NCCL version 2.28.9 rank 0 nranks 2",
    "vm:1467:1467 [0] NCCL INFO NCCL versions 2.28.9",
    "TARS:1467:1467 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
    # `NCCL_X set to V` (_SET_TO): an echo's record, the value as its lazy group and `\s*$` read it
    "vm:1467:1467 [0] NCCL INFO NCCL_SOCKET_IFNAME set to hsn",
    "vm:1467:1467 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to 12.",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to a b \x1c\t ",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to  a",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to ",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to a NCCL INFO b",
    "vm:1467:1467 [0] NCCL INFO NCCL_X set to rank 3 nranks 4",
    "vm:1467:1467 [0] NCCL INFO NCCL_CONF_FILE set to /etc/nccl.conf",
    # the Func/Proto/Algo header: followed by an NCCL INFO head (here: the line again, or the
    # first lines) it only clears the columns; before a row, a blank or the end, Python's
    "vm:1467:1467 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
    "vm:1467:1467 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix: 16 coll channels, 16 p2p channels,",
    # heads: other processes, hosts, fields, levels, damage
    "vm:1468:1468 [1] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "TARS:1467:1467 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "TA@RS:1467:1467 [0] NCCL INFO Connected all rings",
    "10-4-3-3:1467:1467 [0] NCCL INFO Connected all rings",
    "vm:1467:1467 [0] init.cc:12 NCCL INFO Connected all rings",
    "vm:1467:1467 [0] NCCL WARN Connected all rings",
    "vm:1467:1467 [0] NCCL INFOConnected all rings",
    "vm:1467:1467 [0] NCCL INFO",
    "vm:1467:1467  [0] NCCL INFO Connected all rings",
    "vm:1467:1467\t[0] NCCL INFO Connected all rings",
    "vm:01467:1467 [0] NCCL INFO Connected all rings",
    "vm:" + "1" * 25 + ":1467 [0] NCCL INFO Connected all rings",
    "vm:1467:1467 [0] NCCL INFO Connected all rings é",
    "(RayWorkerWrapper pid=1467) vm:1467:1467 [0] NCCL INFO Connected all rings",
    "vm:1467:1467 [0] NCCL INFO Connected all rings [repeated 3x across cluster]",
    "vm:1467:1467 [0] NCCL INFO Channel 00/0 : 0[0] -> 1",
    "vm:1467:14",
])
def test_a_line_after_its_process_is_known_reads_as_the_lines_engine_reads_it(later):
    first = [COMM, CONN, RING, "vm:1467:1467 [0] NCCL INFO Using network Socket"]
    data = _one_process(*first, later, later, *first, later)
    _same(data, 1 << 12, 1 << 12)
    _same(data, 64, 64)
    _same(("\n".join(SPEC.splitlines()[:120] + [later] * 3) + "\n").encode(), 1 << 12, 1 << 12)


def test_plain_lines_of_a_known_process_are_read_in_c():
    later = ["vm:1467:1467 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
             "vm:1467:1467 [0] NCCL INFO NCCL_PROTO set by environment to LL",
             "TARS:1467:1467 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 4194304.",
             CONN.replace("Channel 00/0", "Channel 07/0"), RING.replace("00/24", "05/24"), COMM.replace("0x15", "0x9"),
             "TARS:1467:1467 [0] NCCL INFO NET/IB : No device found."]
    first = [COMM, CONN, RING, "TARS:1467:1467 [0] NCCL INFO comm 0x1 rank 0 nRanks 2"]
    data = _one_process(*first, *later * 50)
    # The process's first line and the first ring listing (it sets the ring channels); the
    # first connection and the rank line of another host's thread of the pid are C's.
    assert _fed_by_python(data) == 2
    _same(data)
    echoes = parse_stream(io.BytesIO(data), engine="native").nccl
    assert len(echoes) == 100 and {(v.key, v.value, v.rank, v.process) for v in echoes} == {
        ("NCCL_PROTO", "LL", "0", "pid 1467"), ("NCCL_BUFFSIZE", "4194304", "0", "pid 1467")}


def test_larger_counts_and_new_transports_are_set_in_c():
    larger = [COMM.replace("nRanks 2", f"nRanks {n}") for n in (4, 8, 16)]
    transports = [CONN.replace("P2P/CUMEM", name) for name in ("SHM/direct/direct", "NET/IB/0/GDRDMA")]
    data = _one_process(COMM, CONN, RING, *larger, *transports)
    assert _fed_by_python(data) == 2  # the process's first line, the first ring listing
    _same(data)
    result = parse_stream(io.BytesIO(data), engine="native")
    assert result.settings["nccl.nranks"].value == 16
    assert result.settings["nccl.transports"].value == ["NET/IB/GDRDMA", "P2P/CUMEM", "SHM/direct/direct"]


_DAMAGE = [
    lambda s: s[: len(s) // 2],
    lambda s: s[: len(s) - 3],
    lambda s: s.replace(" ", "  ", 1),
    lambda s: s.replace(" : ", "  : "),
    lambda s: s.replace("INFO ", "INFO  "),
    lambda s: s.replace(" ", "\t", 2),
    lambda s: s + " é",
    lambda s: s + "   ",
    lambda s: s + "\x1c",
    lambda s: re.sub(r":(\d+):", lambda m: ":" + m.group(1) * 6 + ":", s, count=1),
    lambda s: re.sub(r"n([Rr])anks \d+", lambda m: f"n{m.group(1)}anks " + "7" * 25, s),
    lambda s: re.sub(r"n([Rr])anks \d+", r"n\1anks 64", s),
    lambda s: re.sub(r"nNodes \d+", "nNodes 12", s),
    lambda s: re.sub(r"\brank (\d+)", r"rank 1\1", s),
    lambda s: s.replace("rank ", "Rank "),
    lambda s: s.replace("-> ", "->"),
    lambda s: s.replace("] -> ", "] [receive] -> "),
    lambda s: re.sub(r"via \S+", "via NET/Socket/1", s),
    lambda s: re.sub(r"via \S+", "via P2P/direct pointer/read", s),
    lambda s: re.sub(r"via \S+", "via P2P/weird", s),
    lambda s: re.sub(r"^[^:]+", "Host-A", s),
    lambda s: re.sub(r"^[^:]+", "10-1-1-1", s),
    lambda s: re.sub(r":(\d+) \[", lambda m: f":{int(m.group(1)) + 1} [", s, count=1),
    lambda s: "(RayWorkerWrapper pid=9) " + s,
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO NCCL_ALGO set by environment to Ring "),
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO Using network "),
    lambda s: s + " 16 coll channels, 32 p2p channels,",
    lambda s: s + " nccl.conf",
    lambda s: s + " set by env to x",
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO Enabled NCCL Func/Proto/Algo Matrix: "),
    lambda s: s.replace(" NCCL INFO ", " NCCL TRACE "),
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO NCCL version 2.19.3+cuda12.3 "),
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO NCCL version 2.19.3 "),
    lambda s: s.replace(" NCCL INFO ", " NCCL INFO NCCL_SOCKET_IFNAME set to "),
    lambda s: re.sub(r":(\d+) \[", lambda m: f":{int(m.group(1)) + 100_003} [", s, count=1),  # a new thread
]


@st.composite
def nccl_logs(draw) -> bytes:
    """Real NCCL lines, some damaged, read twice over (the second time by the C scanner), with
    a serving log's head around them at times (its processes, echoes and matrix)."""
    lines = draw(st.lists(st.sampled_from(REAL), min_size=1, max_size=40))
    out = []
    for line in lines:
        for damage in draw(st.lists(st.sampled_from(_DAMAGE), max_size=2)):
            line = damage(line)
        out.append(line)
    body = out + draw(st.permutations(out)) + out
    if draw(st.booleans()):
        body = SPEC.splitlines()[:draw(st.integers(0, 150))] + body
    return ("\n".join(body) + draw(st.sampled_from(["\n", ""]))).encode()


@SETTINGS
@given(nccl_logs(), st.integers(1, 3000), st.booleans())
def test_native_reads_damaged_real_nccl_lines_as_the_lines_engine_does(data, batch, vector):
    _same(data, batch, batch, vector=vector)


# ---- nccl_bind's arguments are checked; a bound scanner with readers unlike the real ones reads none ----

def test_nccl_bind_checks_its_arguments():
    bare = _scan.Scanner.__new__(_scan.Scanner)
    with pytest.raises(RuntimeError, match="not initialised"):
        bare.nccl_bind(records.ParseResult(), object(), 1, 1, records.NcclValue, "nccl echo")
    from ingest.parsers import PARSERS

    scan, _ = native.standalone(PARSERS)
    with pytest.raises(ValueError):
        scan.nccl_bind(records.ParseResult(), object(), -1, 1, records.NcclValue, "nccl echo")
    with pytest.raises(TypeError):
        scan.nccl_bind(records.ParseResult(), object(), "4096", 1, records.NcclValue, "nccl echo")
    with pytest.raises(TypeError):
        scan.nccl_bind(records.ParseResult(), object(), 1, 1, "not callable", "nccl echo")


def test_nccl_values_are_made_in_c_only_where_their_init_just_stores_the_fields():
    from dataclasses import dataclass, field

    from ingest.parsers import PARSERS

    assert native._plain_init(records.NcclValue) == records.NcclValue.__slots__

    @dataclass(slots=True)
    class Checked:
        key: str

        def __post_init__(self) -> None:
            self.key = self.key.upper()

    @dataclass(slots=True)
    class Defaulted:
        key: str
        hints: list = field(default_factory=list)

    class Hand:
        __slots__ = ("key",)

        def __init__(self, key: str) -> None:
            self.key = key.strip()

    assert [native._plain_init(c) for c in (Checked, Defaulted, Hand)] == [None, None, None]
    scan, _ = native.standalone(PARSERS)
    names = records.NcclValue.__slots__
    for slots in (names, None):
        scan.nccl_bind(records.ParseResult(), object(), 1, 1, records.NcclValue, "nccl echo", slots)
    for bad in (names[:7], names[:7] + ("key",), names[:7] + ("nope",), names[:7] + (1,), list(names)):
        with pytest.raises(TypeError, match="slots"):
            scan.nccl_bind(records.ParseResult(), object(), 1, 1, records.NcclValue, "nccl echo", bad)
    with pytest.raises(TypeError, match="slots"):  # no slots of its own
        scan.nccl_bind(records.ParseResult(), object(), 1, 1, dict, "nccl echo", names)


DUMPS = [line for path in sorted((PROJECT_ROOT / "samples").rglob("*.log"))
         for line in path.read_text(errors="replace").splitlines() if re.search(r"\bpid=\d+ environ\b", line)]


def test_echoes_and_env_values_made_in_c_equal_those_the_readers_make():
    # Echoes (nccl_echo) and env dumps' values (env_record) are made in C without calling the
    # record type: each field as the line engine's record has it.
    assert DUMPS
    data = ("\n".join(ECHOES * 2 + DUMPS * 2 + ECHOES + copy(ECHOES, 1)) + "\n").encode()
    _same(data, 1 << 12, 1 << 12)
    got = parse_stream(io.BytesIO(data), engine="native").nccl
    want = parse_stream(io.BytesIO(data), engine="lines").nccl
    fields = records.NcclValue.__slots__
    assert [[getattr(v, k) for k in fields] for v in got] == [[getattr(v, k) for k in fields] for v in want]
    assert {type(v) for v in got} == {records.NcclValue}
    assert {"nccl echo", "worker env dump", "launcher env dump"} <= {v.source for v in got}
    assert _fed_by_python(data) < data.count(b"\n") // 2  # most made in C


def test_values_made_in_c_of_str_and_int_alone_are_untracked_and_a_container_set_on_one_stays_alive():
    """The collector walks no record of atomic fields (as it untracks such a tuple): a start-up's
    collections did walk every value made since the last one."""
    import gc
    import weakref

    data = ("\n".join(ECHOES * 2 + DUMPS * 2) + "\n").encode()
    result = parse_stream(io.BytesIO(data), engine="native")
    made = [v for v in result.nccl if not gc.is_tracked(v)]
    assert {v.source for v in made} >= {"nccl echo", "worker env dump"}
    assert all(isinstance(getattr(v, k), (str, int, type(None))) for v in made for k in records.NcclValue.__slots__)

    class Box(list):
        pass

    box = Box()
    box.append(box)  # a cycle, held by an untracked record only
    made[0].process = box
    ref = weakref.ref(box)
    del box
    gc.collect()
    assert ref() is made[0].process


def test_a_scanner_bound_to_readers_it_cannot_read_hands_the_lines_back():
    from ingest.parsers import PARSERS

    result = records.ParseResult()
    result.formats.append(nccl_debug.NAME)
    line = "vm:1:1 [0] NCCL INFO Connected all rings"
    scan, state = native.standalone(PARSERS)
    scan.nccl_bind(result, object(), processes.REPEATS, nccl_debug.REPEATS, records.NcclValue, nccl_debug.SOURCE)
    stop, _ = scan.scan([line], 0, 1, *state, native.F_MAIN)
    assert stop == 0 and not result.processes  # no dicts to read: Python's
    # bound to a parser it can read, the first line of a process makes it as the Tagger does
    scan.nccl_bind(result, nccl_debug.Parser(result), processes.REPEATS, nccl_debug.REPEATS, records.NcclValue,
                   nccl_debug.SOURCE)
    stop, _ = scan.scan([line], 0, 7, *state, native.F_MAIN)
    assert stop == 1
    assert result.processes == {"pid 1": {"pid": 1, "host": "vm", "rank": None, "label": None, "first_line": 7,
                                          "hints": [], "alias": None}}
    assert list(result.processes["pid 1"]) == ["pid", "host", "rank", "label", "first_line", "hints", "alias"]


def test_each_threads_first_connection_is_read_in_c_for_its_echoes_rank():
    # A process that never printed `rank R nRanks N`: an echo takes its thread's peer rank.
    data = _one_process("h:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
                        "h:7:7 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM",
                        "h:7:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM",
                        "h:7:9 [1] NCCL INFO NCCL_PROTO set by environment to LL")
    _same(data)
    result = parse_stream(io.BytesIO(data), engine="native")
    assert [(v.key, v.rank) for v in result.nccl] == [("NCCL_PROTO", "1")]
    assert _fed_by_python(data) == 1  # the process's first line (thread 9's connection and the echo are C's)


def test_the_bench_logs_of_nccl_lines_repeat_no_line_of_a_known_shape():
    from bench.nccl_unique import known

    head = [line for line in REAL if _HEAD.match(line)][:300]
    assert not set(copy(head, 1)) & set(copy(head, 2)) and not set(copy(head, 1)) & set(head)
    marked = [line for line in known(head, 1) if line.endswith(" #1")]
    assert marked and not set(marked) & set(known(head, 2))


def _python_lines(data: bytes) -> list[str]:
    """The lines the Tagger was fed in Python, in order."""
    fed: list[str] = []
    feed = processes.Tagger.feed

    def spy(self, lineno: int, line: str) -> None:
        fed.append(line)
        feed(self, lineno, line)

    with mock.patch.object(processes.Tagger, "feed", spy):
        parse_stream(io.BytesIO(data), engine="native")
    return fed


@pytest.mark.parametrize("batch", [1 << 21, 4096, 333, 61])
def test_new_threads_of_known_processes_are_read_in_c(batch):
    # Real lines, then a copy with every thread renumbered (its pids kept): each thread's first
    # rank line, connection, version and echo lines are read in C as the readers would.
    data = ("\n".join(REAL + copy(REAL, 8)) + "\n").encode()
    _same(data, batch, batch)
    if batch == 1 << 21:
        again = _fed_by_python(data) - _fed_by_python(("\n".join(REAL) + "\n").encode())
        # what is left: RCCL's own lines (its version line sets the library again), a few
        assert again <= len(REAL) // 200


ENV_HEAD = (PROJECT_ROOT / "samples" / "spec_baseline_nospec.log").read_text().splitlines()[:60]


def test_a_process_an_env_dump_made_gets_its_host_from_its_first_nccl_line_in_c():
    assert ENV_HEAD[3].startswith("[TP1] pid=1468 environ") and "vm:1468:1468" in ENV_HEAD[7]
    data = ("\n".join(ENV_HEAD) + "\n").encode()
    for batch in (1 << 21, 200, 64):
        _same(data, batch, batch)
    assert ENV_HEAD[7] not in _python_lines(data)  # pid 1468's host is set in C
    result = parse_stream(io.BytesIO(data), engine="native")
    assert result.processes["pid 1468"]["host"] == "vm"
    # Two hosts with the pid: the first host stays (`p["host"] or host`), whichever reads them.
    other = ENV_HEAD[7].replace("vm:1468:1468", "gpu2:1468:1468")
    data = ("\n".join([*ENV_HEAD[:7], other, *ENV_HEAD[7:]]) + "\n").encode()
    _same(data)
    assert parse_stream(io.BytesIO(data), engine="native").processes["pid 1468"]["host"] == "gpu2"


SPEC_MATRIX = SPEC.splitlines()[88:95]
_INFO_HEAD = re.compile(r"^[^\s:]+:\d+:\d+ \[\d+\] NCCL INFO ")


@pytest.mark.parametrize("after", [
    [],  # the header ends the log
    [""],
    SPEC_MATRIX[1:],  # its real rows
    SPEC_MATRIX[1:3] + ["vm:1560:1560 [0] NCCL INFO Connected all rings"],
    ["vm:1560:1560 [0] NCCL INFO threadThresholds 8/8/64 | 16/8/64 | 512 | 512"],
    ["vm:1560:1560 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:", SPEC_MATRIX[1], SPEC_MATRIX[5]],
    ["vm:1560:1560 [0] NCCL INFO NCCL_PROTO set by environment to LL"],
    ["vm:1560:1560 [0] NCCL WARN Connected all rings"],
    ["(RayWorkerWrapper pid=1560) vm:1560:1560 [0] NCCL INFO Connected all rings"],
    ["vm:1560:1560 [0] NCCL INFO Connected all rings é"],  # a chunk cut into lines, not kept a text
    ["\x1b[0mvm:1560:1560 [0] NCCL INFO Connected all rings"],  # a line clean() changes
    ["  AllReduce |        1         0         0   |             0              1"],
    ["vm | x"],
])
def test_the_matrix_header_is_read_in_c_where_the_next_line_is_an_nccl_head(after):
    header = SPEC_MATRIX[0]
    assert header.endswith("Func/Proto/Algo Matrix:") and SPEC_MATRIX[-1].lstrip().startswith("AllReduce")
    lines = SPEC.splitlines()[:88] + [header, *after] * 3 + SPEC_MATRIX
    data = ("\n".join(lines) + "\n").encode()
    for batch in (1 << 21, 4096, 97):
        _same(data, batch, batch)
        _same(data, batch, batch, vector=False)
    # In one chunk, Python reads a header whose next line is no plain ASCII NCCL INFO line (one
    # clean() leaves alone: a chunk kept as text cleans its dirty lines one by one, unseen ahead), or
    # that comes while a table is open (right after its rows: nccl_debug is busy)
    python = [i for i, line in enumerate(lines) if line == header
              and (not (i + 1 < len(lines) and _INFO_HEAD.match(lines[i + 1]) and lines[i + 1].isascii()
                        and text.clean(lines[i + 1]) == lines[i + 1])
                   or nccl_debug._MATRIX_ROW.match(lines[i - 1]))]
    assert _python_lines(data).count(header) == len(python) >= 1


ISSUE_1773 = (PROJECT_ROOT / "tests" / "corpus" / "shared" / "nccl_debug_8gpu_p2p_direct_nccl_issue1773.log")


def test_nccl_lines_of_a_host_led_by_a_digit_are_read_in_c_before_any_nccl_tests_header():
    # `10-4-3-3:97095:97191 [5] NCCL INFO Channel 00/0 : 5[5] -> 6[6] via P2P/direct pointer` starts
    # like an nccl-tests row and has 13 cells, as the classic layout's rows do: before a header,
    # nccl_tests reads it only if its third cell is a type, and it is "NCCL".
    log = ISSUE_1773.read_text().splitlines()
    assert sum(1 for line in log if len(line.split()) == 13 and line[:1].isdigit()) >= 3
    data = ("\n".join(log + copy(log, 8)) + "\n").encode()
    for batch in (1 << 21, 333, 61):
        _same(data, batch, batch)
    assert not set(_python_lines(data)) & (set(copy(log, 8)) - set(log))  # (the command is not renumbered)
    # After a real table (a header and rows) the scanner reads the table's own way, and equally.
    tests = (PROJECT_ROOT / "samples" / "nccl-tests_all_reduce_default.log").read_text().splitlines()
    assert any("busbw" in line and line.startswith("#") for line in tests)
    data = ("\n".join(log + tests + copy(log, 8) + copy(log, 16)) + "\n").encode()
    for batch in (1 << 21, 4096, 97):
        _same(data, batch, batch)


ECHOES = _kinds(r"NCCL INFO NCCL_[A-Z0-9_]+ set (?:by environment )?to ")
SHARED = nccl_debug.Parser.SHARED


@pytest.mark.parametrize("shared", [0, 3, SHARED])
def test_repeated_real_echoes_share_their_texts_in_both_engines_and_read_alike(shared):
    # A log of many restarts echoes the same variables each time: each echo is held to the parse's
    # end, its texts shared with the echoes repeating them (up to SHARED texts, C and Python alike).
    data = ("\n".join(ECHOES * 6) + "\n").encode()
    with mock.patch.object(nccl_debug.Parser, "SHARED", shared):
        for batch in (1 << 21, 4096, 97):
            _same(data, batch, batch)
        for engine in ("lines", "native"):
            values = parse_stream(io.BytesIO(data), engine=engine).nccl
            assert len(values) >= 6 * len({(v.key, v.value) for v in values}) > 0
            copies = len({id(v.key) for v in values} | {id(v.value) for v in values})
            if shared == SHARED:  # one object a distinct text
                assert copies == len({v.key for v in values} | {v.value for v in values})
            elif shared == 0:
                assert copies > len(values)  # (equal short texts may be one object: Python's own caching)
    assert _fed_by_python(data) < 0.5 * data.count(b"\n")  # the repeats are C's


CORPUS = PROJECT_ROOT / "tests" / "corpus" / "nccl"


def _corpus(name: str) -> str:
    return (CORPUS / name).read_text()


@pytest.mark.parametrize("batch", [1 << 21, 4096, 97])
def test_the_first_lines_of_renumbered_processes_make_them_in_c(batch):
    # Every copy renumbers pids and threads: each process's first line is a new one's. The Tagger's
    # process (pid, host, rank, first line, key order) is made in C as _tag and _process make it.
    one = "\n".join(REAL) + "\n"
    data = ("\n".join(REAL + copy(REAL, 1) + copy(REAL, 2) + copy(REAL, 3)) + "\n").encode()
    _same(data, batch, batch)
    # the first pass makes the shapes' settings; the copies' first lines are no longer Python's
    assert _fed_by_python(data) < _fed_by_python(one.encode()) + 3 * 60


def test_a_process_made_in_c_is_the_one_the_tagger_makes():
    lines = ["vm:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
             "vm:9:11 [1] NCCL INFO comm 0x1 rank 3 nRanks 4 nNodes 1 localRanks 2 localRank 1 MNNVL 0",
             "vm:9:12 [1] NCCL INFO Channel 00/0 : 3[1] -> 0[0] via P2P/CUMEM",
             "h2:12:12 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"]
    head = _one_process(COMM, CONN, RING, "vm:1467:1467 [0] NCCL INFO NCCL_PROTO set by environment to LL")
    _same(head + _one_process(*lines), 1 << 12, 1 << 12)
    for line in lines:  # each one the first of its process, right after the start-up
        _same(head + _one_process(line), 1 << 12, 1 << 12)
    # the WARN line's process too: its text is warned by then (a line before it)
    data = head + _one_process(lines[3].replace("h2:12:12", "h1:5:5"), *lines)
    assert lines[-1] not in _python_lines(data)
    _same(data, 1 << 12, 1 << 12)


RCCL = _corpus("rccl_debug_2.27.7_version_banner_rocm_issue6074.log")
REDACTED = _corpus("rccl_debug_2.27.7_redacted_host_rccl_issue2188.log")
MSCCL = _corpus("rccl_tests_mi50_init_complete_issue163.log")


@pytest.mark.parametrize("text", [RCCL, REDACTED, MSCCL])
@pytest.mark.parametrize("batch", [1 << 21, 4096, 61])
def test_rccl_logs_repeated_read_as_the_lines_engine_reads_them(text, batch):
    _same((text * 4).encode(), batch, batch)


@pytest.mark.parametrize("line", [
    "TARS:829507:829507 [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd",  # the library set again, the line used
    "node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567",  # a redacted head: "main"'s, read by its words
    "TARS:829507:829507 [0] NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1",  # launch_env's "NCCL_"
    "z292:58192:58200 [2] /long_pathname_so_that_rpms_can_package_the_debug_info/src/rccl/build/hipify/src/"
    "init.cc:2065 NCCL WARN MSCCL++: Cannot enable MSCCL++; environment is not MSCCL compatible",  # a context word
])
def test_a_repeated_rccl_line_is_read_in_c(line):
    text = RCCL + REDACTED + MSCCL
    data = (text + text + line + "\n").encode()
    assert line in text.splitlines()
    assert _python_lines(data).count(line) <= 1  # its first sight at most: three in all
    _same(data, 1 << 12, 1 << 12)


@pytest.mark.parametrize("line", [
    "node [0] NCCL INFO RCCL version : 2.27",  # no X.Y.Z: _RCCL_VERSION searches on
    "node [0] NCCL INFO RCCL version 2.27.7 [x]",  # a second '[': a head might be found in it
    "no:de [0] NCCL INFO RCCL version : 2.27.7",  # a ':' in the word
    "Node [0] NCCL INFO RCCL version : 2.27.7",  # launch_env's STARTS
    "node [0] NCCL INFO RCCL version : 2.27.7 environ pid=3",
    "vm:1:1 [0] NCCL INFO RCCL version : 2.27",
    "vm:1:1 [0] NCCL INFO RCCL version: 2.27.7 rank 0 nranks 2",  # the rank branch first
    "TARS:829507:829507 [0] NCCL INFO Dmabuf x NCCL_A=1 -x NCCL_B=2",  # launch_env's -x flag
    "TARS:829507:829507 [0] NCCL INFO NCCL_P2P_LEVEL set to SYS and pid=4",
    "TARS:829507:829507 [0] NCCL INFO Dmabuf NCCL_DMABUF_ENABLE set to 1",  # offer's `NCCL_X set to `
    "z292:58192:58200 [2] init.cc:1 NCCL WARN environment is not MSCCL compatible",  # a new warning
    "z292:58192:58200 [2] init.cc:1 NCCL WARN NCCL_X set by environment to 1",
    "node [0] NCCL INFO RCCL version : 2.27.7\r",
    "node [0] NCCL INFO RCCL version : 2.27.7 é",
])
def test_rccl_lines_of_other_shapes_read_as_the_lines_engine_reads_them(line):
    text = RCCL + REDACTED + MSCCL
    _same((text + line + "\n" + text).encode(), 1 << 12, 1 << 12)
    _same((line + "\n" + text + line + "\n").encode(), 1 << 12, 1 << 12)


@pytest.mark.parametrize("word", ["set by env", "CCL version", "to environment", "nccl.conf", "NCCL_CONF_FILE"])
def test_a_word_nccl_debug_acts_on_hands_the_line_back_wherever_it_stands(word):
    # Searched 16 places at a time and then one by one: at every place of a message, the line is
    # Python's; the same word one letter off is read in C.
    def lines(w: str) -> list[str]:
        return [COMM, CONN] + [f"vm:1467:1467 [0] NCCL INFO {'Ab' * (pad // 2)}{'c' * (pad % 2)}{w} end{pad}"
                               for pad in range(1, 46)]

    near = word[:-1] + ("X" if word[-1] != "X" else "Y")
    acted, missed = _one_process(*lines(word)), _one_process(*lines(near))
    for data in (acted, missed):
        _same(data, 1 << 12, 1 << 12)
    assert _fed_by_python(acted) - _fed_by_python(missed) == 45


# ---- MPI-tagged NCCL lines (`[1,0]<stdout>:host:pid:tid [dev] NCCL INFO ...`) read in C ----------

EFA = [_corpus_line for name in ("nccl_debug_efa_mpi_tagged_version_line.log", "nccl_tests_efa_mpi_interleaved_destroy.txt")
       for _corpus_line in (PROJECT_ROOT / "tests" / "corpus" / "shared" / name).read_text().splitlines()]
_EFA_NCCL = [line for line in EFA if "NCCL" in line]


def test_the_efa_corpus_holds_mpi_tagged_nccl_lines_of_each_shape():
    assert all(line.startswith("[1,") for line in _EFA_NCCL)
    for pattern in (r"\]<stdout>:NCCL version \d", r"<stdout>:[^\s:]+:\d+:\d+ \[\d+\] NCCL INFO Using network",
                    r"NCCL INFO comm 0x\w+ rank \d+ nranks"):
        assert any(re.search(pattern, line) for line in _EFA_NCCL), pattern


@pytest.mark.parametrize("dirty", [False, True])
def test_repeated_mpi_tagged_nccl_lines_of_known_ranks_are_read_in_c(dirty):
    """The EFA logs repeated (the mix's unit holds them): past the first pass the MPI-tagged NCCL lines
    (a ring's Destroy lines, the network, the bare version) change nothing the scanner cannot tell,
    and come back no more. `dirty`: every line cleaned too (a chunk of lines, MpiLine objects)."""
    end = "\r" if dirty else ""
    once = "".join(line + end + "\n" for line in EFA)
    data = (once * 6).encode()
    fed = [line for line in _python_lines(data) if "NCCL" in line]
    # the first pass's: the format, the processes, the settings (the tables' rows are nccl_tests')
    assert len(fed) <= len(_EFA_NCCL) and len(_EFA_NCCL) * 6 > 20
    for batch in (1 << 16, 97, 7):
        _same(data, batch, batch)


_TAGS = ["[1,0]<stdout>:", "[1,1]<stdout>:", "[2,0]<stderr>:", ""]
_MPI_PARTS = [
    "test-efa-0:21:21 [0] NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)",
    "test-efa-1:21:21 [0] NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)",
    "test-efa-0:21:21 [0] NCCL INFO Using network AWS Libfabric",
    "test-efa-0:21:21 [0] NCCL INFO comm 0x7fde98000f60 rank 0 nranks 2 cudaDev 0 busId 35000 - Destroy COMPLETE",
    "test-efa-1:21:21 [0] NCCL INFO comm 0x7f9c0c000f60 rank 1 nranks 2 cudaDev 0 busId f5000 - Destroy COMPLETE",
    "test-efa-0:21:77 [0] NCCL INFO comm 0x7fde98000f60 rank 0 nranks 4 cudaDev 0 busId 35000 - Init COMPLETE",
    "test-efa-0:21:21 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/AWS Libfabric/0",
    "test-efa-0:21:21 [0] NCCL INFO Channel 00/02 :    0   1",
    "test-efa-0:21:21 [0] NCCL INFO NCCL_PROTO set by environment to LL",
    "test-efa-0:22:22 [1] NCCL INFO NCCL version 2.12.7+cuda11.4",
    "test-efa-0:22:22 [1] NCCL INFO Using network AWS Libfabric",  # another pid of the node
    "test-efa-0:0:0 [0] NCCL INFO Using network AWS Libfabric",  # pid 0: `p["pid"] or q["pid"]` takes the next
    "test-efa-0:21:21 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
    "NCCL version 2.12.7+cuda11.4",
    "NCCL version 2.12.7+cuda11.4 NCCL INFO",
    "NCCL version 2.12.7+cuda11.4 pid=3 environ",  # _tag's env dump: a process
    "NCCL version 2.12.7+cuda11.4 server_args=ServerArgs(",  # _tag's launch line
    "test-efa-0:21:21 [0] NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1",  # launch_env's too
    "hello from a rank",
    "[TP0] pid=21 environ NCCL_*: NCCL_DEBUG=INFO",
    "#  Rank  0 Group  0 Pid     21 on test-efa-0 device  0 [0x35] NVIDIA A100-SXM4-40GB",
]


@st.composite
def mpi_nccl_logs(draw) -> bytes:
    """NCCL lines behind MPI tags of a few ranks (and none), two ranks' lines naming one pid (two
    nodes), among lines that make a rank's process without a host or pid, an env dump's hints, an
    nccl-tests device process: every way Tagger._mpi may change something, each shape repeated."""
    parts = draw(st.lists(st.tuples(st.sampled_from(_TAGS), st.sampled_from(_MPI_PARTS)), min_size=1, max_size=30))
    body = [tag + line for tag, line in parts]
    body = body + draw(st.permutations(body)) + body
    end = draw(st.sampled_from(["", "", "\r"]))  # "\r": every line cleaned, a chunk of lines
    return "".join(line + end + "\n" for line in body).encode()


@SETTINGS
@given(mpi_nccl_logs(), st.integers(1, 400))
def test_mpi_tagged_nccl_lines_read_as_the_lines_engine_reads_them(data, batch):
    _same(data, batch, batch)


@pytest.mark.parametrize("lines", [
    # Found by the random Hypothesis pass: once the version is held, the scanner read the second line
    # as a bare version, which _tag reads as an env dump's process ("pid 3", a serving worker).
    ["NCCL version 2.12.7+cuda11.4", "NCCL version 2.12.7+cuda11.4 pid=3 environ"],
    ["NCCL version 2.12.7+cuda11.4", "NCCL version 2.12.7+cuda11.4 server_args=ServerArgs("],  # a launch line
    ["node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567",
     "node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567 pid=3 environ"],
    ["node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567",
     "node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567 server_args=ServerArgs("],
])
def test_a_version_line_holding_another_tagger_word_reads_as_the_lines_engine(lines):
    data = "".join(line + "\n" for line in lines * 3).encode()
    for batch in (1 << 16, 1):
        _same(data, batch, batch)


@pytest.mark.parametrize("first", [
    ["[1,0]<stdout>:hello"],  # the rank's process made with no pid and no host: _mpi sets them
    ["test-efa-0:21:21 [0] NCCL INFO Using network AWS Libfabric", "[1,0]<stdout>:hello"],  # no alias yet
    ["[1,1]<stdout>:test-efa-0:21:21 [0] NCCL INFO Using network AWS Libfabric", "[1,0]<stdout>:hello"],  # alias 1,1
    ["[1,0]<stdout>:test-efa-0:21:21 [0] NCCL INFO Using network AWS Libfabric",
     "[TP0] pid=21 environ NCCL_*: NCCL_DEBUG=INFO"],  # a hint the rank lacks
    ["#  Rank  0 Group  0 Pid     21 on test-efa-0 device  0 [0x35] NVIDIA A100", "[1,0]<stdout>:hello"],
    ["[1,0]<stdout>:test-efa-0:22:22 [1] NCCL INFO Using network AWS Libfabric",  # the rank's pid and host
     "test-efa-0:21:21 [0] NCCL INFO Channel 00/02 :    0   1"],  # ... and pid 21 not aliased yet
    ["[1,0]<stdout>:test-efa-0:0:0 [0] NCCL INFO Using network AWS Libfabric"],  # the rank's pid 0
])
def test_an_mpi_tagged_nccl_line_whose_rank_takes_anything_from_the_pid_reads_as_the_lines_engine(first):
    line = "[1,0]<stdout>:test-efa-0:21:21 [0] NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)"
    warm = [_MPI_PARTS[2], _MPI_PARTS[3], "[1,0]<stdout>:NCCL version 2.12.7+cuda11.4"]  # the settings held
    for end in ("", "\r"):
        data = "".join(x + end + "\n" for x in [*warm, *first, line, line, *first, line]).encode()
        for batch in (1 << 16, 3, 1):
            _same(data, batch, batch)


def test_many_heads_taken_in_turn_read_as_the_lines_engine_reads_them():
    """More line heads than the scanner holds (1024, two to a set), each coming back in turn: heads
    found in either slot of their set, moved and dropped, read again, read as the line engine does."""
    heads = [f"node{p % 3}:{1000 + p}:{5000 + t} [{t % 8}] NCCL INFO " for p in range(40) for t in range(40)]
    body = []
    for line in ("comm 0x{:x} rank {} nranks 64 cudaDev 0 busId 1000 - Init START", "Connected all rings",
                 "NCCL_PROTO set by environment to Simple"):  # (an echo's record: its head's process)
        body += [h + line.format(k + 16, k % 64) for k, h in enumerate(heads)]
    data = ("\n".join(body + body[::-1] + body[::7] + body) + "\n").encode()
    _same(data, 1 << 16, 1 << 16)
    assert _fed_by_python(data) < 100


# ---- a start-up printed again in the same order: each line compared with the one that came after its
# predecessor last time (nccl_repeat), read as nothing where that one was idle ----

_CYCLE = [line for line in REAL if _HEAD.match(line)][:400]


def test_a_start_up_printed_again_in_its_order_is_read_in_c_as_the_lines_engine_reads_it():
    """A start-up's lines printed six times in one order, with every kind of line in it (echoes,
    versions, rank and connection lines, rings, WARNs, NCCL_ words): the repeats are read in C and
    every line that acts each time (an echo's record, a version's use) still acts."""
    assert any("set by environment" in line for line in _CYCLE) and any("NCCL version" in line for line in _CYCLE)
    once = ("\n".join(_CYCLE) + "\n").encode()
    data = ("\n".join(_CYCLE * 6) + "\n").encode()
    for batch in (1 << 21, 4096, 173):
        _same(data, batch, batch)
    acting = sum(1 for line in _CYCLE if "CCL version" in line or " NCCL WARN " in line or "NCCL_" in line
                 or "Func/Proto/Algo" in line)
    assert _fed_by_python(data) - _fed_by_python(once) <= 5 * acting


@pytest.mark.parametrize("change", ["swap", "drop", "thread", "matrix"])
def test_a_repeat_out_of_its_order_or_changed_reads_as_the_lines_engine_reads_it(change):
    """The third of five printings differs: two lines swapped, one dropped, a new thread's copy of
    the lines (its first rank and connection to set), a table header with its rows; each line after
    it compared with what came after the line before it last time, and found or not."""
    third = list(_CYCLE)
    if change == "swap":
        third[10], third[11] = third[11], third[10]
    elif change == "drop":
        del third[20]
    elif change == "thread":
        third = copy(third, 3)
    else:
        third[30:30] = [third[29].split(" NCCL INFO ")[0] + " NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:",
                        "     Function |       LL     LL128    Simple   |          Tree           Ring",
                        "    AllReduce |        1         1         1   |             1              1", ""]
    data = ("\n".join(_CYCLE * 2 + third + _CYCLE * 2) + "\n").encode()
    for batch in (1 << 21, 2048, 97):
        _same(data, batch, batch)


@SETTINGS
@given(st.lists(st.sampled_from(_CYCLE[:40] + [COMM, CONN, RING]), min_size=1, max_size=300), st.integers(1, 4000))
def test_real_lines_repeated_in_any_order_read_as_the_lines_engine_reads_them(lines, batch):
    # Repeats that follow and break the order the lines came in before: predictions kept and missed.
    _same(("\n".join(lines * 3) + "\n").encode(), batch, batch)


@pytest.mark.parametrize("batch", [1 << 21, 61])
def test_threads_are_keyed_alike_in_both_engines_ints_where_their_text_is_an_ints_own(batch):
    """A thread id keys the rank dicts as an int (half a text's memory) where its digits are one's own
    form; `0123` and `123` stay two threads, and a tid past 18 digits stays text (nccl_tid, thread_key)."""
    long = "1" * 25
    heads = ["vm:1467:123 [0]", "vm:1467:0123 [0]", f"vm:1467:{long} [1]", "vm:1467:0 [1]", "vm:1468:00 [0]"]
    lines = []
    for k, h in enumerate(heads):
        lines += [f"{h} NCCL INFO NCCL_PROTO set by environment to LL",
                  f"{h} NCCL INFO Channel 00/0 : {k % 2}[0] -> {1 - k % 2}[1] via P2P/CUMEM"]
    for k, h in enumerate(heads[:3]):
        lines.append(f"{h} NCCL INFO comm 0x{k + 1:x} rank {k} nRanks 4 nNodes 1 localRanks 2 localRank 0 MNNVL 0")
    data = ("\n".join(lines * 3) + "\n").encode()
    _same(data, batch, batch)
    assert {nccl_debug.thread_key(t) for t in ("123", "0123", long, "0", "00")} == {123, "0123", long, 0, "00"}
    result = parse_stream(io.BytesIO(data), engine="native")
    ranks = {(v.key, v.rank) for v in result.nccl}
    assert ("NCCL_PROTO", "0") in ranks and ("NCCL_PROTO", "1") in ranks and ("NCCL_PROTO", "2") in ranks


def test_more_processes_than_the_table_first_holds_read_as_the_lines_engine_reads_them():
    """The processes of line heads in a table that grows (256 entries, then twice as many each time,
    their places made again): 700 processes whose new threads come in turn, a third of them never
    saying a rank (their flags read again at each new thread) and a third only from their third
    thread on, read as the line engine reads them, and in C."""
    body = []
    for t in range(4):
        for p in range(700):
            head = f"h{p % 5}:{2000 + p}:{9000 + 1000 * t + p} [{t % 2}] NCCL INFO "
            if p % 3 == 1 or (p % 3 == 2 and t >= 2):
                body.append(head + f"comm 0x{p:x} rank {p % 8} nranks 8 cudaDev {t % 2} busId 1000 - Init START")
            body += [head + "Connected all rings", head + f"Channel 00/0 : {p % 8}[0] -> {(p + 1) % 8}[1] via P2P/IPC"]
    data = ("\n".join(body) + "\n").encode()
    for batch in (1 << 21, 4096):
        _same(data, batch, batch)
    assert _fed_by_python(data) < 100


@pytest.mark.parametrize("message", [
    "r", "ra", "ran", "rank", "rank ", "rank 1", "rank 1 nRanks", "rank 1 nRanks ", "rank 1 nranks 2",
    "x rank 1 nRanks 2 nNodes", "x rank 1 nRanks 2 nNodes 3", "arank 1 nranks 2", "rank rank 3 nranks 4 r",
    "err rr rank 12 nranks 160 nNodes 20", "ranks 1 nranks 2 rank 3 nranks 4", "rank 1 nRanks 2r",
])
def test_a_rank_found_anywhere_in_a_message_or_at_its_end_reads_as_the_lines_engine(message):
    # _RANK.search at each 'r' of the message, up to its last bytes: the thread's rank, the counts
    head = "vm:1467:1600 [1] NCCL INFO "
    data = _one_process(COMM, head + message, head + "Connected all rings", head + message)
    for batch in (1 << 21, 61):
        _same(data, batch, batch)
