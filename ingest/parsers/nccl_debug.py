"""NCCL_DEBUG=INFO output (FORMATS §4): version, environment echoes per rank, transports, WARNs.

    vm:1561:1561 [1] NCCL INFO NCCL_PROTO set by environment to LL
    vm:1561:1561 [1] NCCL INFO comm 0x3c03a010 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0

The `[dev]` field is the local CUDA device, not the rank, and an echo often comes before the
`comm ... rank R nRanks N` line of its process. So echoes wait until finish(), then take the rank
that the same thread (else the same process) reported. A process that never said its rank is
named `pid <pid>`.
"""

from __future__ import annotations

import re
from array import array

import numpy as np

from .records import MAX_INT_DIGITS, Issue, NcclValue, ParseResult

NAME = "nccl_debug"
SOURCE = "nccl echo"
MAX_WARNINGS = 100  # distinct WARN messages kept; eight ranks repeating one failure is one warning
REPEATS = 4096  # Channel lines remembered: each rank prints its channels again per communicator

# host:pid:tid [dev] [file.cc:line ]NCCL LEVEL message; searched, so Ray/vLLM prefixes may precede.
# The look-behinds start a match only where a host or path token starts. Without them a search
# tried every position inside a long token, each scanning to its end: quadratic in the token's
# length (a 1,068-character `mpirun -x NCCL_...` echo cost 1.1 ms). The leftmost match cannot
# change: a match that starts inside a token also matches from the token's start ([^\s:]+, \S*).
_LINE = re.compile(
    r"(?<![^\s:])([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:(\S+:\d+) )?NCCL (INFO|WARN|TRACE|CALL|ABORT)\b ?(.*)$"
)
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)\S*?(?:\+cuda(\d+\.\d+))?(?:\s|$)")
# Printed bare by rank 0 (2.12 .. 2.25), possibly behind a Ray/vLLM process tag.
_BARE_VERSION = re.compile(r"^(?:\([^)]*\)\s*)?NCCL version \d")
_ECHO = re.compile(r"^(NCCL_[A-Z0-9_]+) set by environment to (.*)$")
# The value a subsystem settled on, echoed without "by environment" (socket/IB code, 2.2x):
# `NCCL_SOCKET_IFNAME set to hsn`, `NCCL_IB_HCA set to mlx5_0,mlx5_1`.
_SET_TO = re.compile(r"^(NCCL_[A-Z0-9_]+) set to (\S.*?)\s*$")
# RCCL names its own version (`RCCL version : 2.27.7-HEAD:0d2c4fd`), behind a redacted prefix too.
_RCCL_VERSION = re.compile(r"\bRCCL version\s*:?\s*(\d+\.\d+\.\d+)")
_INVALID = re.compile(r"^Invalid value (.*) for (NCCL_[A-Z0-9_]+), using default (-?\d+)\.?$")
_PLUGIN_ADD = re.compile(r"Adding (NCCL_[A-Z0-9_]+)=(\S+) to environment")
_PLUGIN_NAME = re.compile(r"Plugin name set by env to (\S+)")
_RANK = re.compile(r"\brank (\d+) n[Rr]anks (\d+)(?: nNodes (\d+))?")
_CONNECTION = re.compile(r"^Channel \d+(?:/\d+)? : (\d+)\[[0-9a-fx]+\] -> (\d+)\[[0-9a-fx]+\]( \[receive\])?")
_RING = re.compile(r"^Channel \d+/(\d+) :(?: +\d+)+\s*$")
_VIA = re.compile(r" via (P2P/direct pointer(?:/read)?|\S+)")
_CHANNELS = re.compile(r"^(\d+) coll channels, .*?(\d+) p2p channels,")
_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_CONF_FILE = re.compile(r"NCCL_CONF_FILE\S*?[= ](?:set by environment to )?(\S+)|(?<!\S)(\S*/\.?nccl\.conf)\b")
_MATRIX_ROW = re.compile(r"^(?:\(\w+ pid=\d+\) )?\s*(\w+) \|(.*)\|(.*)$")
_INTEGER = re.compile(r"-?\d+\.$")
_P2P_KINDS = ("IPC", "CUMEM", "direct pointer")


def transport(via: str) -> str | None:
    """`NET/IB/0/GDRDMA` -> `NET/IB/GDRDMA` (the NIC index is per rank); None for a cut-off name."""
    parts = via.split("/")
    family = parts[0]
    if family == "P2P" and len(parts) > 1 and parts[1] in _P2P_KINDS:
        return via
    if family == "SHM" and len(parts) > 1:
        return via
    if family in ("NET", "COLLNET") and len(parts) > 2 and parts[2].isdigit():
        return "/".join(parts[:2] + parts[3:])
    return None


def thread_key(tid: str) -> int | str:
    """A thread's key in the rank dicts and the pending echoes: its id as an int where the text is
    one's own form (no leading zero, up to MAX_INT_DIGITS digits), else the text itself (no two
    threads share a key). A log of many communicators holds hundreds of thousands of threads to
    its end: an int is half a text's memory (_scan_nccl.h's nccl_tid keys them alike)."""
    if len(tid) <= MAX_INT_DIGITS and tid.isascii() and tid.isdigit() and (tid[0] != "0" or len(tid) == 1):
        return int(tid)
    return tid


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("NCCL", "nccl.conf")
    STARTS: re.Pattern | None = None
    SHARED = 65536  # texts `shared` holds at most: past it a new text is its own copy

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.pending: list[tuple[NcclValue, str, str, int | str]] = []  # (value, host, pid, thread_key(tid))
        # Every echo in its order, for the copies finish() makes: its line and its identity (settle():
        # key, value, kind, source, logfile, process, rank, host, pid), or -1 - its place in `unsettled`
        # (its rank still open: held as the object finish() sets it on).
        # (4 bytes each while they fit, as runs.digest.NcclFold's lines: a log of many communicators
        # holds a million echoes to its end; 8 past 2**31, _wide)
        self.echo_lines = array("i")
        self.echo_ids = array("i")
        self.identities: dict[tuple, int] = {}
        self.unsettled: list[tuple[NcclValue, str, str, int | str]] = []
        # Every echo is held to the end (its rank is known then): its texts are shared with the
        # echoes that repeat them (a log of many restarts echoes the same variables each time; five
        # strings an echo were ~280 bytes of it). Read by the native scanner too (_scan_nccl.h).
        self.shared: dict[str, str] = {}
        # A thread's first rank, by process: (host, pid) -> {tid: rank}. A log of many communicators
        # has hundreds of thousands of threads: one dict a process holds them in less than a key each.
        self.thread_rank: dict[tuple[str, str], dict[int | str, str]] = {}  # tids as thread_key() keys them
        self.process_rank: dict[tuple[str, str], str] = {}
        # The rank each CUDA device of a process has: nccl-tests `-g 2` drives two GPUs (two ranks)
        # from one process, which echoes each variable once (NCCL reads its environment once).
        self.device_ranks: dict[tuple[str, str], dict[str, str]] = {}
        self.thread_peer_rank: dict[tuple[str, str], dict[int | str, str]] = {}  # from connection lines, as thread_rank
        self.process_peer_rank: dict[tuple[str, str], str] = {}
        self.nranks: tuple[int, int] | None = None  # (largest nranks seen, its line)
        self.nnodes: tuple[int, int] | None = None
        self.ring_channels: tuple[int, int] | None = None
        self.transports: dict[str, int] = {}  # name -> first line
        self.warned: set[str] = set()
        self.in_matrix = False
        self.matrix_columns: tuple[list[str], list[str]] | None = None
        # Channel lines read already: all they tell (ranks, transports) is kept on first sight.
        self.channel_lines: set[str] = set()

    def feed(self, lineno: int, line: str) -> None:
        if self.in_matrix:
            if self._matrix(lineno, line):
                return
        if "NCCL" not in line:
            if "nccl.conf" in line:
                self._conf_file(lineno, line)
            return
        if line in self.channel_lines:
            return
        # _LINE has " NCCL " (after `] ` or `file.cc:N `): without it the search, which tries every
        # position of the line (7 us on an env dump), finds nothing.
        m = _LINE.search(line) if " NCCL " in line else None
        if m:
            self._debug(lineno, m)
            if m.group(6) == "INFO" and m.group(7).startswith("Channel ") and len(self.channel_lines) < REPEATS:
                self.channel_lines.add(line)
        elif "NCCL version" in line and _BARE_VERSION.match(line):
            self._version(lineno, line, bare=True)
        elif "RCCL version" in line and " NCCL INFO " in line:
            self.result.add_format(NAME)  # a prefix redacted to `node [0] NCCL INFO`
            self._rccl_version(lineno, line)
        elif "NCCL_CONF_FILE" in line:
            self._conf_file(lineno, line)

    def busy(self) -> bool:
        return self.in_matrix  # the Func/Proto/Algo table ends at its first line that is not a row

    def settle(self) -> None:
        """The echoes since the last call whose thread has said its rank take it now, as finish() would
        (a thread's first rank is its rank: the first of finish()'s choices, never changed), so a sink
        takes them ranked and neither it nor this parser holds them to the end: only their line and
        identity stay, for the copies finish() makes. The others wait as objects. Called before a sink
        takes the rows (parse_numbered, native.parse_chunks) and by finish()."""
        ids, lines, identities, thread_rank = self.echo_ids, self.echo_lines, self.identities, self.thread_rank
        for entry in self.pending:
            value, host, pid, tid = entry
            threads = thread_rank.get((host, pid))
            rank = threads.get(tid) if threads else None
            if rank is None:
                i = -1 - len(self.unsettled)
                self.unsettled.append(entry)
            else:
                value.rank = rank
                key = (value.key, value.value, value.kind, value.source, value.logfile, value.process, rank, host, pid)
                held = identities.get(key)
                if held is None:
                    held = identities[key] = len(identities)
                i = held
            try:
                ids.append(i)
            except OverflowError:  # 2**31 identities or unsettled echoes: 64 bits from here on
                self.echo_ids = ids = array("q", ids)
                ids.append(i)
            try:
                lines.append(value.line)
            except OverflowError:  # a line past 2**31: 64 bits from here on
                self.echo_lines = lines = array("q", lines)
                lines.append(value.line)
        self.pending.clear()  # in place: the scanner appends to this list

    def finish(self) -> None:
        r = self.result
        self.settle()
        # An echo is the process's, not its thread's: every rank the process drives had it. The
        # other ranks of a settled echo follow from its identity: found once an identity (a log of
        # many communicators settles hundreds of thousands of echoes, nearly all of a process that
        # drives one device), and only the echoes that have some, or are unsettled, are gone over.
        others = [self._other_ranks(host, pid, mine) for *_, mine, host, pid in self.identities]
        ids = np.frombuffer(self.echo_ids, dtype=self.echo_ids.typecode)
        if len(others):
            copied = np.fromiter(map(bool, others), dtype=bool, count=len(others))
            ids = np.flatnonzero((ids < 0) | copied[np.maximum(ids, 0)])
        else:
            ids = np.flatnonzero(ids < 0)
        by_id = list(self.identities)
        for at in ids.tolist():
            i, line = self.echo_ids[at], self.echo_lines[at]
            if i < 0:
                value, host, pid, tid = self.unsettled[-1 - i]
                value.rank = (
                    self.thread_rank.get((host, pid), {}).get(tid)
                    or self.process_rank.get((host, pid))
                    or self.thread_peer_rank.get((host, pid), {}).get(tid)
                    or self.process_peer_rank.get((host, pid))
                    or f"pid {pid}"
                )
                key, text, kind, source, logfile, process, mine = (value.key, value.value, value.kind, value.source,
                                                                   value.logfile, value.process, value.rank)
                ranks = self._other_ranks(host, pid, mine)
            else:
                key, text, kind, source, logfile, process = by_id[i][:6]
                ranks = others[i]
            for rank in ranks:
                r.nccl.append(NcclValue(key, text, kind, line, source, rank, logfile, process))
        self.echo_lines, self.echo_ids, self.identities, self.unsettled = array("i"), array("i"), {}, []
        if self.nranks:
            r.set("nccl.nranks", self.nranks[0], self.nranks[1], NAME)
        if self.nnodes:
            r.set("nccl.nnodes", self.nnodes[0], self.nnodes[1], NAME)
        if self.ring_channels:
            r.set("nccl.coll_channels", self.ring_channels[0], self.ring_channels[1], NAME)
        if self.transports:
            first = min(self.transports.values())
            r.set("nccl.transports", sorted(self.transports), first, NAME)

    def _other_ranks(self, host: str, pid: str, mine: str) -> list[str]:
        """The ranks of the process's devices (in their order, once each) but `mine`."""
        return [rank for rank in dict.fromkeys(self.device_ranks.get((host, pid), {}).values()) if rank != mine]

    def _debug(self, lineno: int, m: re.Match) -> None:
        host, pid, tid, dev, where, level, msg = m.groups()
        r = self.result
        r.add_format(NAME)
        if level == "WARN":
            self._warn(lineno, msg, where)
            return
        if level != "INFO":
            return
        if msg.startswith("NCCL_"):
            e = _ECHO.match(msg)
            if e:
                value = e.group(2).strip()
                if _INTEGER.fullmatch(value):
                    value = value[:-1]  # integer params print "%lld." with a period
                self._effective(lineno, e.group(1), value, SOURCE, host, pid, tid)
                if e.group(1) == "NCCL_CONF_FILE":
                    r.set("nccl.conf_file", value, lineno, NAME)
                return
            t = _SET_TO.match(msg)
            if t:
                self._effective(lineno, t.group(1), t.group(2), SOURCE, host, pid, tid)
                return
        rank = _RANK.search(msg)
        if rank:
            self._rank(lineno, host, pid, tid, dev, rank)
            return
        if msg.startswith("Channel "):
            self._channel(lineno, host, pid, tid, msg)
            return
        if msg.startswith("NCCL version"):
            self._version(lineno, msg, bare=False)
        elif msg.startswith("RCCL version"):
            self._rccl_version(lineno, msg)
        elif msg.startswith("Invalid value "):
            inv = _INVALID.match(msg)
            if inv:
                bad, key, default = inv.groups()
                self._effective(lineno, key, default, "nccl echo (invalid value)", host, pid, tid)
                self._warn(lineno, f"{key}={bad} is invalid; NCCL used the default {default}", None)
        elif msg.startswith("Using network"):
            net = _NETWORK.match(msg)
            if net:
                r.set("nccl.network", net.group(1), lineno, NAME)
        elif " coll channels," in msg:
            ch = _CHANNELS.match(msg)
            if ch:
                r.set("nccl.coll_channels", r.read_int(ch.group(1), lineno, "coll channels"), lineno, NAME)
                r.set("nccl.p2p_channels", r.read_int(ch.group(2), lineno, "p2p channels"), lineno, NAME)
        elif msg.startswith("Enabled NCCL Func/Proto/Algo Matrix"):
            self.in_matrix = True
            self.matrix_columns = None
        elif "to environment" in msg or "set by env to" in msg:
            add = _PLUGIN_ADD.search(msg)
            if add:
                self._effective(lineno, add.group(1), add.group(2), "nccl plugin", host, pid, tid)
            name = _PLUGIN_NAME.search(msg)
            if name:
                self._effective(lineno, "NCCL_NET_PLUGIN", name.group(1), "nccl plugin", host, pid, tid)
        elif "nccl.conf" in msg or "NCCL_CONF_FILE" in msg:
            self._conf_file(lineno, msg)

    def _effective(self, lineno: int, key: str, value: str, source: str, host: str, pid: str,
                   tid: str) -> None:
        share = self._shared
        v = NcclValue(share(key), share(value), "effective", lineno, source)
        self.result.nccl.append(v)
        # (not the thread: a log of many communicators has a new one every few lines, which would
        # fill `shared` and leave the texts that do repeat, hosts and pids, unshared)
        self.pending.append((v, share(host), share(pid), thread_key(tid)))

    def _shared(self, text: str) -> str:
        """`text`'s equal held in `shared`, or `text` (held there while it holds fewer than SHARED)."""
        held = self.shared.get(text)
        if held is not None:
            return held
        if len(self.shared) < self.SHARED:
            self.shared[text] = text
        return text

    def _rank(self, lineno: int, host: str, pid: str, tid: str, dev: str, m: re.Match) -> None:
        rank, nranks, nnodes = m.group(1), self.result.read_int(m.group(2), lineno, "nranks"), m.group(3)
        # Held to the end per thread (a log of many communicators has hundreds of thousands): the
        # texts a process's threads repeat are shared (_scan_nccl.h's nccl_keys shares them too).
        share = self._shared
        host, pid, rank = share(host), share(pid), share(rank)
        threads = self.thread_rank.get((host, pid))
        if threads is None:
            threads = self.thread_rank[(host, pid)] = {}
        threads.setdefault(thread_key(tid), rank)
        self.process_rank.setdefault((host, pid), rank)
        self.device_ranks.setdefault((host, pid), {}).setdefault(dev, rank)
        if nranks is not None and (self.nranks is None or nranks > self.nranks[0]):
            self.nranks = (nranks, lineno)
        nodes = None if nnodes is None else self.result.read_int(nnodes, lineno, "nNodes")
        if nodes is not None and (self.nnodes is None or nodes > self.nnodes[0]):
            self.nnodes = (nodes, lineno)

    def _channel(self, lineno: int, host: str, pid: str, tid: str, msg: str) -> None:
        c = _CONNECTION.match(msg)
        if c:
            # A send connection starts at this rank; a `[receive]` one ends at it. finish() reads a
            # peer rank only for a process that never said its rank: once it has, none is kept (a
            # thread each, they were most of a renumbered log's memory).
            if (host, pid) not in self.process_rank:
                share = self._shared
                host, pid, local = share(host), share(pid), share(c.group(2) if c.group(3) else c.group(1))
                threads = self.thread_peer_rank.get((host, pid))
                if threads is None:
                    threads = self.thread_peer_rank[(host, pid)] = {}
                threads.setdefault(thread_key(tid), local)
                self.process_peer_rank.setdefault((host, pid), local)
            via = _VIA.search(msg, c.end())
            name = transport(via.group(1)) if via else None
            if name and name not in self.transports:
                self.transports[name] = lineno
            return
        ring = _RING.match(msg)
        if ring and self.ring_channels is None:
            channels = self.result.read_int(ring.group(1), lineno, "ring channels")
            self.ring_channels = None if channels is None else (channels, lineno)

    def _version(self, lineno: int, text: str, bare: bool) -> None:
        m = _VERSION.search(text)
        if not m:
            return
        r = self.result
        if bare:
            r.add_format(NAME)
        r.used.add(lineno)  # every rank prints it: a repeat is read, not new
        r.set("nccl.version", m.group(1), lineno, NAME)
        r.set("nccl.library", "NCCL", lineno, NAME)  # RCCL names itself `RCCL version` (_rccl_version)
        if m.group(2):
            r.set("nccl.cuda_version", m.group(2), lineno, NAME)

    def _rccl_version(self, lineno: int, text: str) -> None:
        m = _RCCL_VERSION.search(text)
        if m:
            self.result.used.add(lineno)
            self.result.set("nccl.version", m.group(1), lineno, NAME)
            # RCCL's own name wins over an `NCCL version` line its build may print as well.
            self.result.set("nccl.library", "RCCL", lineno, NAME, overwrite=True)

    def _conf_file(self, lineno: int, text: str) -> None:
        m = _CONF_FILE.search(text)
        if m:
            self.result.set("nccl.conf_file", m.group(1) or m.group(2), lineno, NAME)

    def _warn(self, lineno: int, msg: str, where: str | None) -> None:
        text = f"NCCL WARN {msg.strip()}" + (f" ({where})" if where else "")
        if text in self.warned or len(self.warned) >= MAX_WARNINGS:
            return
        self.warned.add(text)
        self.result.warnings.append(Issue(lineno, text))

    def _matrix(self, lineno: int, line: str) -> bool:
        """One line of the Func/Proto/Algo table; False when the line is not part of it.

        NCCL prints the table in one INFO call (one write), its rows right under the header and a
        blank line after: the first line that is not a row ends it, an NCCL line included (a log
        of NCCL lines only, the blank dropped, would otherwise keep the table open to its end).
        """
        if not line.strip():
            self.in_matrix = False
            return True
        m = _MATRIX_ROW.match(line)
        if not m:
            self.in_matrix = False
            return False
        func, protos, algos = m.group(1), m.group(2).split(), m.group(3).split()
        if func == "Function":
            self.matrix_columns = (protos, algos)
        elif func == "AllReduce" and self.matrix_columns:
            r = self.result
            names_p, names_a = self.matrix_columns
            # A row cut short (1023-byte limit, Ray) just names fewer columns.
            enabled_p = [n for n, v in zip(names_p, protos, strict=False) if v == "1"]
            enabled_a = [n for n, v in zip(names_a, algos, strict=False) if v == "1"]
            r.set("nccl.allreduce_protos", enabled_p, lineno, NAME)
            r.set("nccl.allreduce_algos", enabled_a, lineno, NAME)
        return True
