"""Serving benchmark result blocks (FORMATS §2.1, §2.3), shared by the SGLang and vLLM parsers.

Both tools print the same `{:<40} {:<10}` rows under a `= Serving Benchmark Result =` title,
so one reader collects a block's rows and notes whose block it is from the first label only
one of the tools prints: SGLang's first row is `Backend:`, vLLM's `Successful requests:`;
`Accept length:` and `E2E Latency` are SGLang's, `Failed requests:`, `E2EL` and the
`Speculative Decoding` section vLLM's. A block with none of them goes to the engine the log has
named so far, SGLang if none. The first telling label decides, once, and the owner is settled
when the block closes, not at the end of the file: a cut-off copy then keeps its records a
prefix of the whole file's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_TITLE = "Serving Benchmark Result"
# `----------------End-to-End Latency----------------`
_SECTION = re.compile(r"^\s*-{3,}\s*([A-Za-z][^-]*(?:-[A-Za-z][^-]*)*?)\s*-{3,}\s*$")
# `Mean TTFT (ms):                          38.23     `: one token (or `not set`) after the colon.
_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/%#.,\-]*?)\s*:(?:\s+(not set|\S+))?\s*$")
# Rows that may open a block whose title was cut off in the copy.
_START = re.compile(
    r"\s*(?:Successful requests|Benchmark duration \(s\)|Request throughput \(req/s\)"
    r"|Output token throughput \(tok/s\)):\s+\S"
)
# A block copied as comments or quotes: `# ============ Serving Benchmark Result ====`.
_PREFIX = re.compile(r"^([#>][ \t]?)=")
# The client's settings lines printed before a vLLM block (SGLang prints them inside its block).
_CLIENT = re.compile(
    r"^\s*(?:[#>]\s?)?(Traffic request rate|Maximum request concurrency|Max request concurrency):\s*(\S+)\s*$"
)
# The client's arguments echoed before its run (`vllm bench serve`, `sglang.bench_serving`):
# `Namespace(subparser='bench', ..., model='Qwen/Qwen3-0.6B', ..., request_rate=inf, ...)`.
_NAMESPACE = {
    "model": re.compile(r"[(,\s]model='([^']+)'"),
    "request_rate": re.compile(r"[(,\s]request_rate=([\w.]+)"),
    "max_concurrency": re.compile(r"[(,\s]max_concurrency=(\d+)"),
}
_UNITS = {"tok/s": "tok_s", "req/s": "req_s", "ms": "ms", "s": "s", "%": "pct", "rps": "rps"}

_SGLANG_LABELS = frozenset({
    "backend", "traffic request rate", "max request concurrency", "max reqeuest concurrency",
    "concurrency", "accept length", "total generated tokens (retokenized)",
    "input token throughput (tok/s)", "total input text tokens", "total input vision tokens",
})
_VLLM_LABELS = frozenset({
    "failed requests", "maximum request concurrency", "request rate configured (rps)",
    "request goodput (req/s)", "acceptance rate (%)", "acceptance length", "drafts",
    "draft tokens", "accepted tokens", "per-position acceptance (%)",
})


@dataclass(slots=True)
class Row:
    line: int
    label: str  # as printed, stripped
    key: str  # serving key: snake_case, unit last
    value: object  # int, float or str


@dataclass
class Block:
    first_line: int
    titled: bool = False  # opened by the `Serving Benchmark Result` title
    tool: str | None = None  # "sglang"/"vllm" once a label only one tool prints was seen
    rows: list[Row] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)  # headers as printed
    prefix: str = ""  # a comment or quote mark before every line of a copied block (`# `, `> `)
    # What the benchmark client printed just before the block (`Traffic request rate: inf`,
    # `Maximum request concurrency: 32`): settings of this block when its own rows lack them.
    client: dict = field(default_factory=dict)

    def owner(self, settings: dict) -> str:
        """"sglang" or "vllm": by the block's own labels, else by the log's engine so far."""
        if self.tool:
            return self.tool
        engine = settings.get("engine")
        return "vllm" if engine is not None and engine.value == "vllm" else "sglang"

    def note_row(self, label: str) -> None:
        # (the native scanner reads it, _row_tool's answer kept per label: bench_note_row in _scan_vllm.h)
        if self.tool is None:
            first = self.titled and not self.rows
            self.tool = _row_tool(label, first)

    def note_section(self, header: str) -> None:
        if self.tool is None:
            if header in ("End-to-End Latency", "Inter-Token Latency"):
                self.tool = "sglang"
            elif header in ("End-to-end Latency", "Speculative Decoding"):
                self.tool = "vllm"


def _row_tool(label: str, first: bool) -> str | None:
    text = label.lower()
    if text in _SGLANG_LABELS or "e2e latency" in text:
        return "sglang"
    if text in _VLLM_LABELS or "e2el" in text or text.startswith("position "):
        return "vllm"
    if label.startswith("Total Token throughput"):  # vLLM's 2024 capitalisation
        return "vllm"
    if first and text == "successful requests":  # SGLang prints `Backend:` before it
        return "vllm"
    return None


class BlockReader:
    """Feed every line; returns a Block on the line that closes one, else None."""

    # Lines that may open a block (feed() with no block open); with one open, every line counts.
    TRIGGERS = (_TITLE, "---", "request rate:", "request concurrency:", "Namespace(")
    # The rows that may open a block (_START), as a parser's STARTS; inside a block the parser is busy().
    STARTS = re.compile(r"\n[^\S\n]*(?:Successful requests|Benchmark duration \(s\)|Request throughput \(req/s\)"
                        r"|Output token throughput \(tok/s\)):")

    def __init__(self) -> None:
        self.block: Block | None = None
        self.subsection = ""
        self.client: dict = {}  # client settings lines seen since the last block

    def feed(self, lineno: int, line: str) -> Block | None:
        block = self.block
        if block is not None and block.prefix:
            if not line.startswith(block.prefix.rstrip()):
                self.block = None  # the comment block ended
                return block if block.rows else None
            line = line[len(block.prefix):]
        if block is None:
            if _TITLE in line:
                self.open_title(lineno, line)
            elif "request " in line and (c := _CLIENT.match(line)):  # (C twin: bench_client, _scan_bench.h)
                key = "request_rate" if "rate" in c.group(1) else "max_concurrency"
                self.client[key] = parse_value(c.group(2))
            elif "Namespace(" in line:
                self.client = {}  # a new client run: what an earlier one said is not this one's
                for key, pattern in _NAMESPACE.items():
                    if m := pattern.search(line):
                        self.client[key] = m.group(1) if key == "model" else parse_value(m.group(1))
            elif "---" in line:
                self.open_section(lineno, line)
            elif ("requests:" in line or "s):" in line) and _START.match(line) and (m := _ROW.match(line)):
                self._row(self._open(lineno), lineno, m)
            return None
        if _TITLE in line:
            self._open(lineno).titled = True
            return block if block.rows else None
        m = _ROW.match(line)
        if m:
            self._row(block, lineno, m)
            return None
        if "---" in line and (s := _SECTION.match(line)):
            self._section(block, s.group(1))
            return None
        if not line.strip():
            return None
        # The `=====` footer, or any other line: the block is over.
        self.block = None
        return block if block.rows else None

    def open_title(self, lineno: int, line: str) -> Block:
        """What feed() does at a title with no block open: a titled block, of the title's comment
        mark. The native scanner does the same on both bench readers (bench_open_title in _scan_vllm.h)."""
        opened = self._open(lineno)
        opened.titled = True
        m = _PREFIX.match(line)
        opened.prefix = m.group(1) if m else ""
        return opened

    def open_section(self, lineno: int, line: str) -> Block | None:
        """What feed() does at a `---` line with no block open: a block opened by a section title (its
        own title cut off in the copy), or None (bench_title in _scan_vllm.h calls it too)."""
        m = _SECTION.match(line)
        if m is None:
            return None
        block = self._open(lineno)
        self._section(block, m.group(1))
        return block

    def close(self) -> Block | None:
        """The block still open at the end of the input (a cut-off copy)."""
        block, self.block = self.block, None
        return block if block and block.rows else None

    def _open(self, lineno: int) -> Block:
        self.block = Block(lineno, client=self.client)
        self.client = {}
        self.subsection = ""
        return self.block

    def _section(self, block: Block, header: str) -> None:
        block.sections.append(header)
        block.note_section(header)
        self.subsection = ""

    def _row(self, block: Block, lineno: int, m: re.Match) -> None:
        label, text = m.group(1).strip(), m.group(2)
        block.note_row(label)
        if text is None:
            # `Per-position acceptance (%):` heads the `  Position i:` rows below it.
            self.subsection = label
            block.rows.append(Row(lineno, label, serving_key(label), None))
            return
        value = parse_value(text)
        if value is None:
            return
        key = serving_key(label)
        if self.subsection and label.lower().startswith("position "):
            key = f"acceptance_{key}_pct"
        block.rows.append(Row(lineno, label, key, value))


# serving_key() of every label seen: a block's labels repeat block after block, and the native scanner
# (_scan_vllm.h) reads a row's key here. Bounded, as a file can print any number of labels.
KEYS: dict[str, str] = {}
KEYS_MAX = 4096
_UNIT = re.compile(r"\(([^)]*)\)\s*$")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_INT = re.compile(r"[-+]?\d{1,18}")


def serving_key(label: str) -> str:
    """`Output token throughput (tok/s)` -> `output_throughput_tok_s` (DESIGN, "Contract")."""
    key = KEYS.get(label)
    if key is None:
        key = _serving_key(label)
        if len(KEYS) < KEYS_MAX:
            KEYS[label] = key
    return key


def _serving_key(label: str) -> str:
    text = label.strip().lower().replace("reqeuest", "request")
    if text.startswith("maximum "):
        text = "max " + text[len("maximum "):]
    unit = ""
    m = _UNIT.search(text)
    if m and m.group(1).strip() in _UNITS:
        unit = _UNITS[m.group(1).strip()]
        text = text[:m.start()]
    text = text.replace("token throughput", "throughput")
    words = _NON_WORD.sub("_", text).strip("_")
    return f"{words}_{unit}" if unit and words else words or unit


def parse_value(text: str) -> object:
    """`748.92` -> 748.92, `1200` -> 1200, `inf`/`not set`/`sglang` stay text; `nan` is no value."""
    text = text.strip()
    if not text or text.lower() in ("nan", "nan%", "n/a", "none"):
        return None
    if _INT.fullmatch(text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


BLOCKS_KEY = "serving_blocks"  # the setting listing a file's result blocks (runs.summary reads it)
SPEC_KEYS = ("accept_length", "acceptance_length", "acceptance_rate_pct")


def block_record(block: Block, tool: str) -> dict:
    """A result block as the parse JSON lists it: the tool, its first line, the settings it ran
    with (model where the client echoed its arguments, request rate, concurrency, whether it
    measured speculative decoding) and every row it printed under its serving key.

    Current vLLM prints `Request rate configured (RPS)` only when the rate is not inf, and both
    tools print the concurrency only when it was set: a vLLM block of that layout (it has the
    `Failed requests` row, printed since the same change) without the rate row ran at inf. Older
    vLLM blocks never print the rate: unknown (null) unless the client's lines said it."""
    values: dict = {}
    for row in block.rows:
        if row.value is not None and row.key not in values:  # the first row of a key
            values[row.key] = row.value
    rate = values.get("traffic_request_rate",
                      values.get("request_rate_configured_rps", block.client.get("request_rate")))
    if rate is None and tool == "vllm" and "failed_requests" in values:
        rate = "inf"
    concurrency = values.get("max_request_concurrency", block.client.get("max_concurrency"))
    if concurrency == "not set":
        concurrency = None
    return {"tool": tool, "line": block.first_line, "model": block.client.get("model"), "request_rate": rate,
            "max_concurrency": concurrency, "speculative": not values.keys().isdisjoint(SPEC_KEYS), **values}


# Result blocks of a file listed one by one once its blocks are of several configurations. Such
# blocks are never blended (runs.summary.serving_of_blocks): each is only a row of the run page's
# table, and a log that repeats a sweep thousands of times held every row (60k blocks of a 128 MB
# log: a 40 MB list, stored, loaded and summarised; the worker peaked at 709 MB). Past this many,
# a block is counted (OMITTED_KEY), not listed. Blocks of one configuration are all kept: their
# median is the run's figure, and every block counts in it.
BLOCKS_KEPT = 1000
OMITTED_KEY = "serving_blocks_omitted"  # {"count": blocks not listed, "first_line": the first of them}


def block_config(record: dict) -> tuple:
    """runs.summary.block_settings of a record (the parsers never import runs)."""
    return (record.get("tool"), str(record.get("model")), str(record.get("request_rate")),
            str(record.get("max_concurrency")), bool(record.get("speculative")))


def add_block(result, block: Block, tool: str, source: str) -> None:
    """Append the block's record to the result's list of blocks (one setting, a list), or count
    it in OMITTED_KEY once the list holds BLOCKS_KEPT blocks of more than one configuration.
    (The native scanner calls it, and counts a block itself once OMITTED_KEY is set: _scan_bench.h.)"""
    record = block_record(block, tool)
    setting = result.settings.get(BLOCKS_KEY)
    if setting is None:
        result.set(BLOCKS_KEY, [record], block.first_line, source)
        return
    blocks = setting.value
    # Past the cap every kept block is of the first one's configuration (a block of another is
    # omitted, and then every later one): only the first BLOCKS_KEPT are looked through, once.
    if len(blocks) >= BLOCKS_KEPT and (
            OMITTED_KEY in result.settings or block_config(record) != block_config(blocks[0])
            or (len(blocks) == BLOCKS_KEPT and any(block_config(b) != block_config(blocks[0]) for b in blocks))):
        omitted = result.settings.get(OMITTED_KEY)
        if omitted is None:
            result.set(OMITTED_KEY, {"count": 1, "first_line": block.first_line}, block.first_line, source)
        else:
            omitted.value["count"] += 1
        return
    blocks.append(record)
