"""nccl-tests result tables (`all_reduce_perf` and friends, FORMATS §5).

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
           8             2     float     sum      -1    15.78    0.00    0.00       0    13.87 ...
    # Avg bus bandwidth    : 68.7056

Header-driven: the column names line says where each value sits, because builds differ (no
in-place half, `-I 1` per-iteration columns, an `#iters` column, old `bytes N type op` names).
Each `time` column opens one side: the first is out-of-place, the second in-place. NCCL INFO
lines may land between rows; only a footer or a new header ends a table.

A footer (`# Out of bounds values`, `# Avg bus bandwidth`) ends a test, and a file can hold several
(two hosts' runs pasted one after another, a job that runs one binary after another): the
footer's values are windowed by the test's number in the file (1, 2, ...), and a row after a
footer opens the next test. Rows keep their line numbers: a test's rows are those after the
previous test's footer and up to its own (runs.summary.nccl_tests_panels).

The op may be named only after the table (`# Collective test concluded: all_reduce_perf`, when
no `starting` line or command line named it). A sink may store the rows held in the result at
any time, so rows whose op is still unknown stay here until their op is named, the next table
starts or the stream ends, and only then go to the result (see HOLD_LINES).
"""

from __future__ import annotations

import re

from .processes import RECENT
from .records import MAX_INT_DIGITS, Collective, Issue, Metric, ParseResult

NAME = "nccl_tests"
# Rows whose op is unknown are held at most this many lines: the process Tagger remembers the
# tags of its RECENT last tagged lines, so a row released within RECENT lines of its own line
# is still stamped with that line's process (an MPI rank). Past it they go to the result as
# "unknown", renamed in memory if the name comes later (rows a sink took keep "unknown").
HOLD_LINES = RECENT // 2
# Header lines whose Table is kept (Parser.headers): a file prints the same few headers, test after
# test, and the native scanner opens a table of a header kept here without stopping (_scan_tests.h).
HEADERS_KEPT = 64

# Old and new names of the same column.
_ALIASES = {
    "bytes": "size", "n": "count", "op": "redop", "cputime": "time",
    "#wrong": "wrong", "error": "wrong", "errors": "wrong", "res": "wrong",
}
# The classic layout, used for rows of an excerpt that lost its header (a copy cut from the middle).
_DEFAULT_HEADER = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong"
_DTYPES = frozenset(
    "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 fp8_e4m3 fp8_e5m2 "
    "f8e4m3 f8e5m2 float16 float32 float64 char int".split()
)
_REDOPS = frozenset("sum prod max min avg none mulsum premulsum".split())

_VERSION = re.compile(r"nccl-tests version (\S+)(?:.*?nccl-library=(\d+))?")
_TEST = re.compile(r"Collective test (starting|concluded): (\S+)")
_BINARY = re.compile(r"(?:^|[\s/])([a-z][a-z0-9_]*?)_perf(?:_mpi)?(?=\s|$)")
_RUN_FIELD = re.compile(r"([A-Za-z][A-Za-z ]*?):?\s+(\d[\w().]*)")
# A device row; builds before the `Group` column (2.9 and older) print `#   Rank  0 Pid  14926 on ...`.
_DEVICE = re.compile(
    r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$"
)
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+|nan|inf)\s*(\w*)")


def binary(line: str) -> str | None:
    """_BINARY.search(line).group(1), found from each `_perf` of the line in turn: the regex search
    tries every place of the line, and a long `mpirun -x ...` command holding a test's binary cost
    70 us. A match ends in a `_perf`, its name the run of [a-z0-9_] just before (led by a letter,
    behind a space, a `/` or the line's start): from the first `_perf` on, the first whose name and
    end fit is the leftmost match, and the shortest name at it (the lazy `*?`)."""
    i = line.find("_perf")
    while i >= 0:
        end = i + 5
        if line.startswith("_mpi", end) and (end + 4 == len(line) or line[end + 4].isspace()) \
                or end == len(line) or line[end].isspace():
            start = i
            while start > 0 and line[start - 1] in _NAME_CHARS:
                start -= 1
            if start < i and "a" <= line[start] <= "z" and (start == 0 or line[start - 1] == "/"
                                                             or line[start - 1].isspace()):
                return line[start:i]
        i = line.find("_perf", i + 1)
    return None


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def op_name(program: str) -> str:
    """`all_reduce_perf_mpi` -> `all_reduce`."""
    name = program.rsplit("/", 1)[-1]
    for suffix in ("_mpi", "_perf"):
        name = name.removesuffix(suffix)
    return name


def nccl_version(code: str) -> str | None:
    """NCCL_VERSION_CODE as printed by nccl-tests: 22809 -> 2.28.9 (2.9 and later), 2804 -> 2.8.4."""
    if len(code) > MAX_INT_DIGITS:
        return None
    n = int(code)
    if n >= 20900:
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    if n >= 1000:
        return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"
    return None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None  # N/A
    return value if value == value else None


def _int(text: str, result: ParseResult | None = None, lineno: int = 0, what: str = "") -> int | None:
    """A table cell as an integer (None: not one); over MAX_INT_DIGITS digits (or 1e18 as `%g`
    prints it), None with a warning where `result` is given."""
    try:
        value = float(text) if len(text) > MAX_INT_DIGITS or not text.lstrip("-").isdigit() else int(text)
    except ValueError:
        return None  # N/A
    if value != value:
        return None
    if abs(value) >= 10 ** MAX_INT_DIGITS:
        if result is not None:
            result.read_int("9" * (MAX_INT_DIGITS + 1), lineno, what)  # the bound's warning
        return None
    return int(value)


class Table:
    """Where the values of one header's rows sit."""

    def __init__(self, names: list[str]) -> None:
        names = [_ALIASES.get(n.lower(), n.lower()) for n in names]
        starts = [i for i, n in enumerate(names) if n == "time"]
        first = starts[0]
        self.lead = {n: i for i, n in enumerate(names[:first])}
        self.sides: list[dict[str, int]] = []
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(names)
            self.sides.append({names[i]: i for i in range(start, end)})
        self.width = len(names)

    @classmethod
    def from_header(cls, text: str) -> Table | None:
        names = text.lstrip("#").split()
        lowered = {_ALIASES.get(n.lower(), n.lower()) for n in names}
        if not {"size", "time", "busbw"} <= lowered:
            return None
        return cls(names)


_FALLBACK = Table(_DEFAULT_HEADER.split())


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("_perf",)
    # A `#` or a digit first, after a leading space or tab and any whitespace (feed()'s lstrip);
    # every non-ASCII first character too, as str.isdigit() takes some of them.
    STARTS: re.Pattern | None = re.compile(r"\n(?:[ \t][^\S\n]*)?[#0-9\x80-\U0010ffff]")

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.table: Table | None = None
        self.seen_header = False
        self.op_started: str | None = None  # from `# Collective test starting:`
        self.op_command: str | None = None  # from a command line naming the binary
        self.op = "unknown"
        self.rows: list[Collective] = []  # rows of the current test, for a late op name
        self.held: list[Collective] = []  # rows of the current test not yet in the result (op unknown)
        self.tables = 0
        self.test = 1  # the number of the test being read (footers window their values by it)
        self.test_ended = False  # a footer was read: the next row or table opens test + 1
        self.ranks: tuple[int, int] | None = None  # (number of ranks listed, line)
        self.wrong_warned = False
        # Header line -> its Table, or None for a `busbw` line that is no header (a Table is never
        # changed, so the tables of one header may share it).
        self.headers: dict[str, Table | None] = {}

    def feed(self, lineno: int, line: str) -> None:
        first = line[:1]
        if first == " " or first == "\t":
            stripped = line.lstrip()
            first = stripped[:1]
        else:
            stripped = line
        if first == "#":
            self._comment(lineno, stripped)
        elif first.isdigit():
            if self.table is not None or not self.seen_header:
                self._row(lineno, stripped)
        elif "_perf" in line:
            b = binary(line)
            if b and "NCCL INFO" not in line:
                self.op_command = op_name(b)
                # A job script or pasted command that runs the test: its NCCL variables launch
                # nccl-tests, not a serving engine (processes.Tagger).
                self.result.set("nccl_tests.command", self.op_command, lineno, NAME)

    def busy(self) -> bool:
        return False  # a table's rows are `#` and digit lines, whatever comes between them

    def finish(self) -> None:
        self._release()
        if self.ranks:
            self.result.set("nccl_tests.ranks", self.ranks[0], self.ranks[1], NAME)

    def _release(self) -> None:
        """Hand the held rows to the result (where a sink may take them), in their order."""
        if self.held:
            self.result.collectives.extend(self.held)
            self.held = []

    def _comment(self, lineno: int, text: str) -> None:
        r = self.result
        if self.held and lineno - self.held[0].line >= HOLD_LINES:
            self._release()
        if "busbw" in text:
            if text in self.headers:
                table = self.headers[text]
            else:
                table = Table.from_header(text)
                if len(self.headers) < HEADERS_KEPT:
                    self.headers[text] = table
            if table:
                r.add_format(NAME)
                self._release()  # the previous table's rows: no name came for them
                self._open_test()
                self.table = table
                self.seen_header = True
                self.tables += 1
                self.rows = []
                self.wrong_warned = False
                self.op = self.op_started or self.op_command or "unknown"
            return
        if "Avg bus bandwidth" in text:
            m = _AVG_BUSBW.match(text)
            if m:
                r.add_format(NAME)
                value = _float(m.group(1))
                if value is not None:
                    r.metrics.append(Metric("avg_busbw_gbs", value, self.test, lineno, NAME))
                if m.group(2) == "FAILED":
                    r.warnings.append(
                        Issue(lineno, f"nccl-tests: average bus bandwidth {m.group(1)} FAILED the check")
                    )
                self.test_ended = True
            self.table = None
            return
        if "Out of bounds" in text:
            m = _OUT_OF_BOUNDS.match(text)
            if m:
                self.test_ended = True  # a footer line ends the test even when its count is unreadable
                count = r.read_int(m.group(1), lineno, "out-of-bounds values")
                if count is None:
                    self.table = None
                    return
                r.metrics.append(Metric("out_of_bounds_values", float(count), self.test, lineno, NAME))
                if count or m.group(2) == "FAILED":
                    r.warnings.append(Issue(lineno, f"nccl-tests: {count} out-of-bounds values (FAILED)"))
            self.table = None
            return
        if "Collective test" in text:
            m = _TEST.search(text)
            if m:
                r.add_format(NAME)
                op = op_name(m.group(2))
                if m.group(1) == "starting":
                    self.op_started = op
                else:
                    # Rows released already (past HOLD_LINES) are renamed too while still in memory.
                    for c in self.rows:
                        if c.op == "unknown":
                            c.op = op
                    self._release()
                    self.op_started = None
            return
        if "nThread" in text:
            r.add_format(NAME)  # the test's header: an excerpt cut before its table is still nccl-tests
            self._run_fields(lineno, text)
        elif "nccl-tests version" in text:
            m = _VERSION.search(text)
            if m:
                r.add_format(NAME)
                r.set("nccl_tests.version", m.group(1), lineno, NAME)
                if m.group(2):
                    r.set("nccl.version", nccl_version(m.group(2)), lineno, NAME)
        elif "Rank" in text:
            m = _DEVICE.match(text)
            if m:
                rank = r.read_int(m.group(1), lineno, "nccl-tests rank")
                ranks = None if rank is None else rank + 1
                if ranks is not None and (self.ranks is None or ranks > self.ranks[0]):
                    self.ranks = (ranks, lineno)
                r.set("nccl_tests.gpu", m.group(2), lineno, NAME)

    def _open_test(self) -> None:
        """A table or row after a footer: the next test's."""
        if self.test_ended:
            self.test += 1
            self.test_ended = False

    def _run_fields(self, lineno: int, text: str) -> None:
        """`# nThread 1 nGpus 2 minBytes 8 ... warmup iters: 1 iters: 20` -> nccl_tests.* settings."""
        for key, value in _RUN_FIELD.findall(text.lstrip("#")):
            name = "nccl_tests." + "_".join(key.lower().split())
            self.result.set(name, self.result.read_int(value, lineno, key) if value.isdigit() else value, lineno, NAME)

    def _row(self, lineno: int, text: str) -> None:
        values = text.split()
        table = self.table
        if table is None:
            # No header yet: only a row that is unmistakably the classic layout.
            if len(values) not in (9, 13) or values[2] not in _DTYPES or values[3] not in _REDOPS:
                return
            table = _FALLBACK
        lead = table.lead
        r = self.result
        size = _int(values[lead["size"]], r, lineno, "size") if "size" in lead and lead["size"] < len(values) else None
        if size is None:
            return
        count = _int(values[lead["count"]], r, lineno, "count") if "count" in lead and lead["count"] < len(values) \
            else None
        root = _int(values[lead["root"]], r, lineno, "root") if "root" in lead and lead["root"] < len(values) else -1
        dtype = values[lead["type"]] if "type" in lead and lead["type"] < len(values) else ""
        redop = values[lead["redop"]] if "redop" in lead and lead["redop"] < len(values) else ""
        if count is None or root is None or not dtype.isidentifier():
            return
        rows = []
        for side, columns in enumerate(table.sides):
            cells = {name: values[i] for name, i in columns.items() if i < len(values)}
            if "busbw" not in cells:
                break  # a row cut short keeps the sides it has
            time_us = _float(cells.get("time", ""))
            algbw, busbw = _float(cells.get("algbw", "")), _float(cells["busbw"])
            if time_us is None and algbw is None and busbw is None:
                continue
            wrong = cells.get("wrong")
            rows.append(Collective(
                op=self.op, size_bytes=size, count=count, dtype=dtype, redop=redop, root=root,
                time_us=time_us, algbw_gbs=algbw, busbw_gbs=busbw,
                wrong=_int(wrong, r, lineno, "#wrong") if wrong is not None else None,
                in_place=side == 1, line=lineno,
            ))
        if not rows:
            return
        r = self.result
        r.add_format(NAME)
        self._open_test()
        self.rows.extend(rows)
        if self.op == "unknown":
            if self.held and lineno - self.held[0].line >= HOLD_LINES:
                self._release()
            self.held.extend(rows)
        else:
            r.collectives.extend(rows)
        bad = [c for c in rows if c.wrong]
        if bad and not self.wrong_warned:
            self.wrong_warned = True  # one warning per table: the rows say the rest
            r.warnings.append(Issue(lineno, f"nccl-tests: {bad[0].wrong} wrong elements at {size} bytes"))
