"""Who wrote each line: the processes of one log file and their roles (DESIGN, "Words").

A log is several processes writing into one stream. What the lines themselves say:

    vm:1573:1573 [0] NCCL INFO ...                    NCCL: host:pid:tid [dev]       -> "pid 1573"
    [TP1] pid=1574 environ NCCL_*: ...                worker env dump (TP1 is pid 1574) -> "pid 1574"
    launcher pid=1572 environ NCCL_*: ...             launcher env dump               -> "pid 1572"
    [2026-11-29 21:25:30 TP0] Decode batch ...        SGLang rank prefix              -> "TP0"
    (VllmWorker rank=0 pid=123) ...                   vLLM process tag                -> "pid 123"
    #  Rank  0 Group  0 Pid   1377 on vm device 0     nccl-tests device row           -> "pid 1377"
    [1,0]<stdout>:anything                            MPI --tag-output (job 1, rank 0) -> "mpi 1,0"
                                                      (a pid the line names becomes its alias)
    anything else                                     the file's untagged stream      -> "main"

Every record gets the tag of the line it came from (`process`); labels that a later line ties
to a pid (`[TP0] pid=1573`) are kept as `alias`, so rows stored before the tie still resolve.
A role per process, from what it printed: serving launcher, serving worker, benchmark client,
nccl-tests, unknown (ROLES). Records of benchmark blocks are tagged "bench".

Pure and streaming: a few cheap substring checks per line, a small window of recent line tags.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from .records import ParseResult

LAUNCHER, WORKER, BENCH, NCCL_TESTS, UNKNOWN = (
    "serving launcher", "serving worker", "benchmark client", "nccl-tests", "unknown",
)
ROLES = (WORKER, LAUNCHER, BENCH, NCCL_TESTS, UNKNOWN)
MAIN = "main"
BENCH_TAG = "bench"
BENCH_SOURCES = frozenset({"sglang_bench", "sglang_bench_one_batch", "vllm_bench"})
SERVING_FORMATS = frozenset({"sglang", "vllm", "llamacpp", "eagle_profile"})
RECENT = 8192  # lines whose tag is remembered: a block flushed later still finds its first line
REPEATS = 4096  # NCCL lines remembered with their tag: every rank prints its channels again per communicator

# The look-behind starts a match only where a host token starts (as nccl_debug._LINE, which says why:
# the unanchored search was quadratic in a long token's length; the leftmost match is the same).
_NCCL = re.compile(r"(?<![^\s:])([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL [A-Z]+\b ?(.*)$")
# The literal every _NCCL match holds ("NCCL" has a space on either side): a line without it, an
# env dump or launch line full of NCCL_ names, is no NCCL line, found without the search, which on
# such a line tries each of its words as a host (~30 µs: the cost of a Python-fed line again).
_NCCL_WORD = " NCCL "
_NCCL_RANK = re.compile(r"\brank (\d+) n[Rr]anks \d+")
_VLLM = re.compile(r"^\((\w+?)(?:_\d+)?(?: rank=(\d+))?(?: (TP\d+))? pid=(\d+)\)")
_SGLANG = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d((?: (?:DP|TP|EP|PP)\d+)+)\]")
_DUMP = re.compile(r"^(.*?)\bpid=(\d+) environ\b")
_LABEL = re.compile(r"\b((?:DP|TP|EP|PP)\d+)\b")
_TESTS_DEVICE = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device")
# Lines that start a serving engine: a launch command, SGLang's ServerArgs, a launcher env dump.
_LAUNCH_CMD = re.compile(r"^(?:[$+]\s|\S+@\S+[#$]\s).*?(?:python|serve|launch|torchrun|mpirun)")
_VLLM_WORKERS = frozenset({"VllmWorker", "VllmWorkerProcess", "RayWorkerWrapper", "EngineCore", "Worker"})
_VLLM_LAUNCHERS = frozenset({"APIServer"})


class Tagger:
    """Fed every line before the format parsers; `stamp()` after them tags the new records.

    Like a format parser it names the lines it acts on (TRIGGERS, STARTS) and is busy() while
    it must see every line: until the file's untagged stream has its first line.
    """

    TRIGGERS = ("NCCL", "environ", "server_args=ServerArgs(")
    STARTS = re.compile(r"\n[(\[#$+]")

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.recent: OrderedDict[int, str] = OrderedDict()
        self.marks = [0, 0, 0, 0]  # how many records of each list are stamped
        self.stamped: tuple[list, ...] = ([], [], [], [])  # the lists the marks are of
        # Processes that declared NCCL values, kept here: a sink may take the values themselves.
        self.declared_by: set[str] = set()
        self.launch_lines: list[int] = []
        self.tests_pids: set[str] = set()
        # A line seen before tags alike and changes no process again (every field it sets is
        # set already): NCCL lines by their text, SGLang prefixes by their label.
        self.nccl_lines: dict[str, str] = {}
        self.sglang_labels: set[str] = set()

    def _process(self, tag: str, lineno: int) -> dict:
        p = self.result.processes.get(tag)
        if p is None:
            p = {"pid": None, "host": None, "rank": None, "label": None, "first_line": lineno,
                 "hints": [], "alias": None}
            self.result.processes[tag] = p
        return p

    @staticmethod
    def _hint(p: dict, hint: str) -> None:
        if hint not in p["hints"]:
            p["hints"].append(hint)

    def busy(self) -> bool:
        return MAIN not in self.result.processes

    def feed(self, lineno: int, line: str) -> None:
        tag = self._tag(lineno, line)
        mpi = getattr(line, "mpi", None)  # text.MpiLine: the line came as `[job,rank]<stdout>:...`
        if mpi is not None:
            tag = self._mpi(lineno, line, tag, *mpi)
        if tag != MAIN:
            self.recent[lineno] = tag  # forgotten in stamp(), once the records of the line have it
        elif MAIN not in self.result.processes and line.strip():
            self._process(MAIN, lineno)

    def _tag(self, lineno: int, line: str) -> str:
        head = line[:1]
        if head == "(":
            m = _VLLM.match(line)
            if m:
                name, rank, tp, pid = m.groups()
                tag = f"pid {pid}"
                p = self._process(tag, lineno)
                p["pid"], p["label"] = self.result.read_int(pid, lineno, "pid"), p["label"] or name
                if rank is not None or tp:
                    p["rank"] = p["rank"] or (rank if rank is not None else tp[2:])
                if name in _VLLM_LAUNCHERS:
                    self._hint(p, LAUNCHER)
                    self.launch_lines.append(lineno)
                elif name in _VLLM_WORKERS:
                    self._hint(p, WORKER)
                self._nccl(lineno, line, p)
                return tag
        if "NCCL" in line:
            known = self.nccl_lines.get(line)
            if known is not None:
                return known
            m = _NCCL.search(line) if _NCCL_WORD in line else None
            if m:
                host, pid, _tid, _dev, msg = m.groups()
                tag = f"pid {pid}"
                p = self._process(tag, lineno)
                p["pid"], p["host"] = self.result.read_int(pid, lineno, "pid"), p["host"] or host
                if p["rank"] is None:
                    r = _NCCL_RANK.search(msg)
                    if r:
                        p["rank"] = r.group(1)
                if len(self.nccl_lines) < REPEATS:
                    self.nccl_lines[line] = tag
                return tag
        if head == "[":
            m = _SGLANG.match(line)
            if m:
                label = m.group(1).strip()
                if label in self.sglang_labels:
                    return label
                self.sglang_labels.add(label)
                p = self._process(label, lineno)
                p["label"] = label
                self._hint(p, WORKER)
                tp = re.search(r"TP(\d+)", label)
                p["rank"] = p["rank"] or (tp.group(1) if tp else None)
                return label
        if "environ" in line and "pid=" in line:  # each _DUMP holds both (see launch_env.feed)
            m = _DUMP.match(line)
            if m:
                prefix, pid = m.groups()
                tag = f"pid {pid}"
                p = self._process(tag, lineno)
                p["pid"] = self.result.read_int(pid, lineno, "pid")
                if "launcher" in prefix.lower():
                    self._hint(p, LAUNCHER)
                    self.launch_lines.append(lineno)
                else:
                    self._hint(p, WORKER)
                    label = _LABEL.findall(prefix)
                    if label:
                        name = " ".join(label)
                        p["label"] = name
                        tp = re.search(r"TP(\d+)", name)
                        p["rank"] = p["rank"] or (tp.group(1) if tp else None)
                        alias = self._process(name, lineno)
                        alias["alias"] = tag
                return tag
        if head == "#" and "Pid" in line:
            m = _TESTS_DEVICE.match(line)
            if m:
                rank, pid, host = m.groups()
                tag = f"pid {pid}"
                p = self._process(tag, lineno)
                p["pid"], p["host"] = self.result.read_int(pid, lineno, "pid"), p["host"] or host
                self._hint(p, NCCL_TESTS)
                self.tests_pids.add(tag)
                return tag
        if (head in "$+" and _LAUNCH_CMD.match(line)) or "server_args=ServerArgs(" in line:
            self.launch_lines.append(lineno)
        return MAIN

    def _mpi(self, lineno: int, line: str, tag: str, job: int, rank: int) -> str:
        """MPI's --tag-output names the writer: rank `rank` of job `job` (Open MPI's `[jobid,rank]`).

        The rank is the process: pids repeat across hosts and containers (two ranks both "pid 21"
        on two nodes), ranks do not. A pid the line names becomes an alias of the rank (its hints,
        pid and host go to the rank); an nccl-tests device row keeps its own process (rank 0
        prints every rank's row).
        """
        name = f"mpi {job},{rank}"
        p = self._process(name, lineno)
        p["rank"] = p["rank"] or str(rank)
        p["label"] = p["label"] or f"MPI rank {rank} (job {job})"
        if tag == MAIN or tag == name or tag in self.tests_pids:
            return name if tag == MAIN else tag
        q = self.result.processes[tag]
        if q["alias"] is None:
            q["alias"] = name
        p["pid"] = p["pid"] or q["pid"]
        if p["host"] is None and _NCCL_WORD in line:
            m = _NCCL.search(line)
            p["host"] = m.group(1) if m else None
        for hint in q["hints"]:
            self._hint(p, hint)
        return name

    def _nccl(self, lineno: int, line: str, p: dict) -> None:
        m = _NCCL.search(line) if _NCCL_WORD in line else None
        if m:
            p["host"] = p["host"] or m.group(1)

    def stamp(self) -> None:
        """Tag the records the parsers added since the last call with their line's process.

        Called after every line or after a chunk of lines: the tags of all lines fed since the
        last call are known here, and the RECENT last ones are kept for blocks flushed later.
        """
        r = self.result
        lists: tuple[list, ...] = (r.metrics, r.phases, r.nccl, r.collectives)
        stamped, marks = self.stamped, self.marks
        # No record since the last call (most lines): each list as long as its mark, or new and empty
        # (the native engine hands the records Python read to its scanner and starts new lists).
        if (len(lists[0]) == (marks[0] if lists[0] is stamped[0] else 0)
                and len(lists[1]) == (marks[1] if lists[1] is stamped[1] else 0)
                and len(lists[2]) == (marks[2] if lists[2] is stamped[2] else 0)
                and len(lists[3]) == (marks[3] if lists[3] is stamped[3] else 0)):
            if not (lists[0] is stamped[0] and lists[1] is stamped[1] and lists[2] is stamped[2]
                    and lists[3] is stamped[3]):
                self.stamped, self.marks = lists, [len(x) for x in lists]
            while len(self.recent) > RECENT:
                self.recent.popitem(last=False)
            return
        for i, records in enumerate(lists):
            # A sink's take_rows() swaps in new lists: they are stamped from their start.
            start = self.marks[i] if records is self.stamped[i] else 0
            for rec in records[start:]:
                if not rec.process:
                    tag = self.recent.get(rec.line, MAIN)
                    if tag == MAIN and getattr(rec, "source", "") in BENCH_SOURCES:
                        tag = BENCH_TAG
                        if BENCH_TAG not in r.processes:
                            self._hint(self._process(BENCH_TAG, rec.line), BENCH)
                    rec.process = tag
                if i == 2 and rec.kind == "declared":
                    self.declared_by.add(rec.process)
            self.marks[i] = len(records)
        self.stamped = lists
        while len(self.recent) > RECENT:
            self.recent.popitem(last=False)

    def finish(self) -> None:
        """Roles from what each process printed and what the file holds (after the parsers)."""
        self.stamp()
        r = self.result
        procs = r.processes
        declared_by = self.declared_by
        tests = "nccl_tests" in r.formats or "nccl_tests.command" in r.settings
        # NCCL variables declared in an nccl-tests file (`mpirun -x NCCL_...`, a `COMMAND:` echo)
        # launch the test, not a serving engine.
        serving = bool(SERVING_FORMATS & set(r.formats)) or any(
            LAUNCHER in p["hints"] or WORKER in p["hints"] for p in procs.values()
        ) or (bool(declared_by - {BENCH_TAG}) and not tests)
        # The nccl-tests table is printed by the test's own process: one pid, one process.
        if tests and len(self.tests_pids) == 1 and MAIN in procs and not (serving and MAIN in declared_by):
            procs[MAIN]["alias"] = next(iter(self.tests_pids))
        for tag, p in procs.items():
            hints = p["hints"]
            if NCCL_TESTS in hints:
                role = NCCL_TESTS
            elif LAUNCHER in hints:
                role = LAUNCHER
            elif WORKER in hints:
                role = WORKER
            elif BENCH in hints:
                role = BENCH
            elif tag == MAIN:
                role = LAUNCHER if serving and (MAIN in declared_by or SERVING_FORMATS & set(r.formats)) \
                    else NCCL_TESTS if tests else UNKNOWN
            elif tests and not serving:
                role = NCCL_TESTS
            elif serving:
                role = WORKER
            else:
                role = UNKNOWN
            p["role"] = role
        r.launch_lines = self.launch_lines if serving or not tests else []
