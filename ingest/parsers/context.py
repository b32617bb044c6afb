"""What a file says besides its log formats, read beside whichever engine parses it.

    GPU0     X      NV12    SYS     0-9,20-29          nvidia-smi topo -m: the link between two GPUs
    [pip3] nvidia-nccl-cu12==2.26.2                    version dumps (collect_env, check_env, pip)
    vLLM Version                 : 0.8.5.post1
    # Avg bus bandwidth    : 12.3   (no reader took it)  unread: a line with a supported format's
                                                       words that no reader used

One Watcher sees every line (parse_stream hands it each chunk before the engine reads it, so the
three engines give it the same lines); it looks only at lines that hold one of WORDS or look
like a topology row, found by one regex search over a chunk. Unread lines are the candidates no
record, setting or structural mark (ParseResult.used) came from: `harvest()` strikes off the
lines of the records before a sink takes them and once more at the end.

A file with no log format is kept as context (`context` setting, a warning), not failed: people
attach topology dumps, version lists and notes to a run. Pure and streaming; memory is bounded
by MAX_CANDIDATES whatever the file's size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter

import numpy as np

from .records import Grouped, Issue, ParseResult

# Words of a supported format: a line holding one was meant for a reader (FORMATS §1-§6).
# NCCL's own INFO lines mention NCCL_ variables in passing (`... without NCCL_DMABUF_ENABLE=1`):
# only its echoes count, and an assignment counts outside NCCL's lines. `Speculative` keeps its
# capital: the launch flags `--speculative-...` are read, or not, as a launch command.
# WORDS is its case-blind words and the rest: on an ASCII line (most), offer() reads the case-blind
# ones in the line's lower() (the same matches: case-folding an ASCII letter stays ASCII), a search
# a third as costly as WORDS' own. `N(?<![\w.]N)` is `(?<![\w.])N`, the look-behind taken at an
# N only (done at every position it cost as much as all the rest).
_WORDS_CASED = (r"throughput|acceptance? (?:len|rate)|Accept length|statistics +\S+:|Speculative"
                r"|NCCL_[A-Z0-9_]+ set to |N(?<![\w.]N)CCL_[A-Z0-9_]+=")
_WORDS_CASELESS = r"avg bus bandwidth|specdecod|set by environment|[nr]ccl version"
WORDS = re.compile(f"{_WORDS_CASED}|(?i:{_WORDS_CASELESS})")
_CASED, _CASELESS = re.compile(_WORDS_CASED), re.compile(_WORDS_CASELESS)
# A word of each of WORDS' branches, lower-case: an ASCII line holding none (most) holds no WORDS,
# found without the regex, whose case-blind branches and look-behind cost ten times more a line.
# (Not a non-ASCII one: `ſ`, `K`, `ı`, `İ` match ASCII letters case-blind and lower() keeps them.)
# The native scanner searches the same words (HINT_WORDS in _scan_context.h, held to this by
# tests/test_scan_context.py) for every line it offers and for launch_env's STARTS.
_HINTS = re.compile("throughput|accept|bandwidth|specdecod|statistics|speculative|environment|cl version|nccl_")
# Lines a reader always takes whole (the native scanner's own shapes) and benchmark section titles
# (`----Speculative Decoding----`, a block's structure): never candidates.
_SKIP = re.compile(r"Decode batch|Prefill batch|^-{3,}[\w ]+-{3,}\s*$|"
                   r"NCCL (?:INFO|WARN|TRACE)(?!.*(?:set by environment|NCCL_[A-Z0-9_]+ set to|[NR]CCL version))")


def _skipped(line: str) -> bool:
    """_SKIP.search(line), its search done only where a literal each branch holds is there (an env dump
    or launch line holds WORDS and is never skipped: the search would read all of it for nothing)."""
    return ("batch" in line or "NCCL " in line or line.startswith("---")) and _SKIP.search(line) is not None
# How a topology row, a GPU header or a version line starts (searched line-anchored).
_CTX = re.compile(
    r"^(?:[ \t]*GPU\d+[ \t]|\[(?:pip3?|conda)\] |(?:vLLM Version|PyTorch version|CUDA Driver Version|"
    r"sglang|vllm|torch|transformers|flashinfer_python|triton)\s*:)",
    re.M,
)
# Words one of _CTX's branches holds: a line without any never matches it, nor does any part of it.
_CTX_WORDS = ("GPU", "[pip", "[conda] ", "Version", "version", "sglang", "vllm", "torch", "transformers",
              "flashinfer_python", "triton")
# _CTX searched over a chunk's text: a line it matches follows a newline (a chunk's first line is
# looked at apart). `\s*` may run on past a newline there: each line found is matched again alone.
assert _CTX.pattern.startswith("^")
_CTX_AFTER = re.compile("\n" + _CTX.pattern[1:])
# More MPI-tagged lines in a chunk than this and Watcher.text looks at each line, not for each tag.
MANY_TAGGED = 1000
MAX_CANDIDATES = 100_000  # candidate line numbers held; past it the count stops (`truncated`)
# Topology and version dumps are read in a file's first lines only: a dump is a small file of its
# own or the head of a log, and a search of every chunk would cost a large log's parse time twice.
HEAD_SCAN_LINES = 20_000
LISTED = 10  # unread line numbers kept in the parse JSON
HEAD_LINES = 40  # lines of a context file kept to show
HEAD_CHARS = 4000

# nvidia-smi topo -m: the header names the columns; each GPU row gives its link to every column.
_TOPO_HEADER = re.compile(r"^\s*(GPU0(?:\s+(?:GPU|NIC|mlx|CPU|NUMA)\S*(?: Affinity| NUMA ID)?)+)")
_TOPO_ROW = re.compile(r"^\s*(GPU\d+)\s+((?:(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|C2C)\s+)+)")
LINKS = ("X", "C2C", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC")  # NV# first, then nearest to farthest
_VERSION_LINES = (
    (re.compile(r"^\[(?:pip3?|conda)\] ([\w.-]+)(?:==| +)(\d[\w.+-]*)"), None),
    (re.compile(r"^vLLM Version\s*:\s*(\S+)", re.I), "vllm"),
    (re.compile(r"^PyTorch version\s*:\s*(\S+)", re.I), "torch"),
    (re.compile(r"^(?:sglang|vllm|torch|transformers|PyTorch|flashinfer_python|triton): (\d\S*)"), ""),
    (re.compile(r"^CUDA Driver Version\s*:\s*(\S+)", re.I), "cuda_driver"),
)
_PACKAGES = re.compile(r"^(?:nvidia-nccl-cu\d+|torch|vllm|sglang|transformers|triton|flashinfer-python)$")


class Watcher:
    def __init__(self, wanted: Callable[[str], bool] | None = None) -> None:
        self.wanted = wanted  # whether a format reader's trigger or start is on the line
        self.dump_lines: set[int] = set()
        self.candidates: set[int] = set()  # the first MAX_CANDIDATES lines holding WORDS
        self.truncated = False
        self.used: set[int] = set()
        # The candidates as an array for harvest()'s lookups, made again only when `candidates` has grown
        # (the sets only grow: a size says which set it is), the used ones in it too (striking one again
        # changes nothing): a log past MAX_CANDIDATES made the open ones afresh at each sink call (~5 ms
        # of set difference and array), never again once candidates stop coming.
        self._lines = np.zeros(0, dtype=np.int64)
        self._lines_at = 0  # len(candidates) it was made at
        self.topo_columns: list[str] | None = None
        self.topo_line = 0
        self.topo_rows: dict[str, list[str]] = {}
        self.versions: dict[str, tuple[str, int]] = {}
        self.head: list[str] = []

    # -- feeding -------------------------------------------------------------------------------

    def lines(self, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        """Pass (line number, text) pairs on, reading the head's dumps (the line-at-a-time engine)."""
        for lineno, line in numbered:
            if lineno <= HEAD_SCAN_LINES:
                if len(self.head) < HEAD_LINES:
                    self.head.append(line)
                if _CTX.match(line):
                    self.dump(lineno, line)
            yield lineno, line

    def chunk(self, first: int, lines: list[str]) -> None:
        """A chunk of cleaned lines (the chunk engines): its part in the file's head."""
        if first <= HEAD_SCAN_LINES:
            head = lines[:HEAD_SCAN_LINES - first + 1]
            self.text(first, "\n".join(head), [], None, len(head))

    def text(self, first: int, body: str, dirty: list[int], clean: Callable[[str], str] | None,
             count: int | None = None) -> None:
        """A chunk as one text (text.Text keeps its dirty lines, those clean() may change, raw, and
        its MPI-tagged ones, no other line holding "]<std"; `count` its lines, where known): the dumps in
        its part of the file's head, those lines read cleaned as the engines read them."""
        if first > HEAD_SCAN_LINES:
            return
        n = HEAD_SCAN_LINES - first + 1  # the chunk's lines in the head
        lines = None
        if (body.count("\n") + 1 if count is None else count) > n:  # the chunk runs on past the head: cut there
            lines = body.split("\n", n)
            body = body[:len(body) - len(lines.pop()) - 1]
        todo = [k for k in dirty if k < n] if clean is not None else []  # the lines read cleaned
        tagged: list[int] = []
        if clean is not None and (tag := body.find("]<std")) >= 0:
            found = _tagged(body, tag, MANY_TAGGED)
            if found is None:  # MPI's own log, every line tagged: each looked at
                self._text_lines(first, body.split("\n") if lines is None else lines, set(dirty), clean)
                return
            tagged = found
        # Those read cleaned, and the lines _CTX may match, found by one search of the text, not a
        # match a line (20k of them a file: 7 ms, the most of a small parse's fixed cost).
        last = max(todo[-1] if todo else -1, tagged[-1] if tagged else -1)
        if last >= 0 and lines is None:
            lines = body.split("\n", last + 1)
        seen = {k: clean(lines[k]) for k in todo} if todo and clean is not None and lines is not None else {}
        need = max(HEAD_LINES - len(self.head), 0)
        # A tagged line that is not dirty only loses its tag when cleaned (text.Text): what is left holds
        # a word _CTX needs only if the line does. Cleaned where it does or is kept in the head (a
        # clean() of a long nccl-tests row cost 30 us).
        skipped = set()
        if clean is not None and lines is not None:
            for k in tagged:
                if k not in seen:
                    if k < need or any(word in lines[k] for word in _CTX_WORDS):
                        seen[k] = clean(lines[k])
                    else:
                        skipped.add(k)
        if need:
            self.head.extend(seen.get(k, line) for k, line in enumerate(body.split("\n", need)[:need]))
        if 0 not in seen:
            seen[0] = body[:end] if (end := body.find("\n")) >= 0 else body
        k, at = 0, 0
        for m in _CTX_AFTER.finditer(body):
            start = m.start() + 1
            k += body.count("\n", at, start)
            at = start
            if k not in seen and k not in skipped:
                seen[k] = body[start:end] if (end := body.find("\n", start)) >= 0 else body[start:]
        for k in sorted(seen):
            if _CTX.match(line := seen[k]):
                self.dump(first + k, line)

    def _text_lines(self, first: int, lines: list[str], dirty: set[int], clean: Callable[[str], str]) -> None:
        """text() of a chunk's head lines with MPI-tagged ones among them: each line looked at."""
        for k, line in enumerate(lines):
            if k in dirty or line[:1] == "[" and "]<std" in line:
                lines[k] = line = clean(line)
            if len(self.head) < HEAD_LINES:
                self.head.append(line)
            if _CTX.match(line):
                self.dump(first + k, line)

    def dump(self, lineno: int, line: str) -> None:
        if "GPU" in line and self._topology(lineno, line):
            return
        self._version(lineno, line)

    def offer(self, lineno: int, line: str) -> None:
        """A line an engine hands a reader (every engine hands the same ones: those holding a format
        reader's trigger or start, plus any line while a reader is busy): a candidate when it holds
        a format's words and a reader's trigger or start, so the engines agree whatever was busy."""
        if self.truncated and len(self.candidates) >= MAX_CANDIDATES:
            return  # full, and the count already said so: no line can change anything (the sets only grow)
        if line.isascii():
            low = line.lower()
            if not _HINTS.search(low) or lineno in self.candidates \
                    or not (_CASED.search(line) or _CASELESS.search(low)) or _skipped(line):
                return
        elif lineno in self.candidates or not WORDS.search(line) or _skipped(line):
            return
        if self.wanted is not None and not self.wanted(line):
            return
        if lineno in self.dump_lines:
            return
        if len(self.candidates) < MAX_CANDIDATES:
            self.candidates.add(lineno)
        else:
            self.truncated = True

    def _topology(self, lineno: int, line: str) -> bool:
        h = _TOPO_HEADER.match(line)
        if h:
            self.topo_columns = [c for c in re.split(r"\s{2,}|\t", line.strip()) if c]
            self.topo_line = self.topo_line or lineno
            self.dump_lines.add(lineno)
            return True
        r = _TOPO_ROW.match(line) if self.topo_columns else None
        if r and r.group(1) not in self.topo_rows:
            self.topo_rows[r.group(1)] = r.group(2).split()
            self.dump_lines.add(lineno)
            return True
        return False

    def _version(self, lineno: int, line: str) -> bool:
        for pattern, name in _VERSION_LINES:
            m = pattern.match(line)
            if not m:
                continue
            if name is None:
                if not _PACKAGES.match(m.group(1)):
                    return False
                key, value = m.group(1), m.group(2)
            else:
                key, value = name or line.split(":", 1)[0].strip().lower(), m.group(1)
            key = {"pytorch": "torch", "flashinfer_python": "flashinfer"}.get(key, key)
            self.versions.setdefault(key, (value, lineno))
            self.dump_lines.add(lineno)
            return True
        return False

    # -- the end -------------------------------------------------------------------------------

    def harvest(self, result: ParseResult) -> None:
        """Strike off the candidate lines that records in `result` came from (before a sink takes them)."""
        # A line's mark (result.used) strikes it off only if it is a candidate, which it is by now or
        # never (the engines offer a line before a sink is called): only those marks are kept. A log
        # of many NCCL start-ups marks every version line, a set that grew with the file.
        candidates = self.candidates
        if result.used:
            self.used.update(result.used & candidates)
            result.used.clear()
        if len(self.used) == len(candidates):  # (used holds candidates only, until finish())
            return
        line = attrgetter("line")
        for records in (result.phases, result.metrics, result.nccl, result.collectives):
            if records:
                self.used.update(candidates.intersection(map(line, records)))
        # Columns are looked up in bulk (numpy): a batch holds a spill's worth of records, and a
        # Python loop over them took a third of a serving log's parse once a candidate stayed open.
        # Every batch's line column joined and looked up once: a bench log's batches hold hundreds
        # of small groups (one a metric name), and a lookup each cost more than the lookup of all.
        columns: list[np.ndarray] = []
        for frames in (result.phase_frames, result.metric_frames):
            for batch in frames:
                if isinstance(batch, Grouped):
                    columns.extend(batch.arrays(g)[1] for g in batch.groups)
                elif batch.height:
                    columns.append(batch.get_column("line").to_numpy())
        columns.extend(frame.get_column("line").to_numpy() for frame in result.collective_frames if frame.height)
        if columns:
            if self._lines_at != len(candidates):
                self._lines = np.fromiter(candidates, dtype=np.int64, count=len(candidates))
                self._lines_at = len(candidates)
            self._strike(np.concatenate(columns), self._lines)

    def _strike(self, lines: np.ndarray, wanted: np.ndarray) -> None:
        """Mark used the candidate lines (`wanted`: all of them, used or not) that `lines` holds. They are
        mostly lines before the batch's: those in its range are looked up in a table of the range."""
        if not len(lines):
            return
        low, high = lines.min(), lines.max()
        wanted = wanted[(wanted >= low) & (wanted <= high)]
        if len(wanted):
            self.used.update(wanted[np.isin(wanted, lines, kind="table")].tolist())

    def finish(self, result: ParseResult) -> None:
        """Topology, versions, unread lines and, for a file of no log format, its context."""
        self.harvest(result)
        self.used.update(s.line for s in result.settings.values())
        self.used.update(w.line for w in (*result.warnings, *result.errors) if w.line)
        self.used.update(result.used)
        topology = self._matrix()
        if topology:
            result.add_format("nvidia_smi_topo")
            result.set("topology", topology, self.topo_line, "nvidia_smi_topo")
        if self.versions:
            if not result.formats:
                result.add_format("versions")
            first = min(line for _, line in self.versions.values())
            result.set("versions", {k: v for k, (v, _) in sorted(self.versions.items())}, first, "versions")
        unread = sorted(self.candidates - self.used)
        count = len(unread)
        result.set("unread", {"count": count, "lines": unread[:LISTED], "truncated": self.truncated},
                   unread[0] if unread else 0, "unread")
        if count:
            shown = ", ".join(str(n) for n in unread[:LISTED])
            result.warnings.append(Issue(unread[0] if unread else 0, (
                f"{count} line{'s carry' if count != 1 else ' carries'} words of a format runlens reads but no reader "
                f"used {'them' if count != 1 else 'it'} (line {shown}{', ...' if count > LISTED else ''})")))
        if not result.formats:
            head = "\n".join(self.head)[:HEAD_CHARS]
            result.set("context", {"kind": "text", "lines": result.lines, "head": head}, 1, "context")
            result.warnings.append(Issue(0, (
                f"none of the {result.lines} lines is in a format runlens reads: the file is kept as context "
                "(shown on the run page), with no figures")))

    def _matrix(self) -> dict | None:
        """{gpus, pairs: {"GPU0-GPU1": "NV12"}, links, nvlink} from the header and the GPU rows."""
        if not self.topo_columns or not self.topo_rows:
            return None
        gpus = [c for c in self.topo_columns if re.fullmatch(r"GPU\d+", c)]
        pairs: dict[str, str] = {}
        for row, cells in self.topo_rows.items():
            for col, cell in zip(self.topo_columns, cells, strict=False):
                if col in gpus and col != row and cell != "X":
                    a, b = sorted((row, col), key=lambda g: int(g[3:]))
                    pairs.setdefault(f"{a}-{b}", cell)
        if not pairs:
            return None
        links = sorted(set(pairs.values()), key=_link_order)
        return {"gpus": len(gpus), "pairs": pairs, "links": links,
                "nvlink": all(v.startswith("NV") for v in pairs.values()),
                "rows": {row: cells[:len(gpus)] for row, cells in self.topo_rows.items()}, "columns": gpus}


def _tagged(body: str, tag: int, most: int) -> list[int] | None:
    """The indices of `body`'s lines that start with "[" and hold "]<std" (MPI's tag, cleaned off
    them), `tag` the first "]<std"; None past `most` of them."""
    found: list[int] = []
    k, at = 0, 0
    while tag >= 0:
        start = body.rfind("\n", 0, tag) + 1
        k += body.count("\n", at, start)
        at = start
        if body.startswith("[", start):
            if len(found) == most:
                return None
            found.append(k)
        end = body.find("\n", tag)
        tag = -1 if end < 0 else body.find("]<std", end)
    return found


def _link_order(link: str) -> tuple[int, str]:
    return (0, link) if link.startswith("NV") else (1 + LINKS.index(link) if link in LINKS else 99, link)
