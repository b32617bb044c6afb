"""SGLang logs (FORMATS §1, §2.1, §2.2): server batch lines, launch arguments, benchmark output.

- `Decode batch` / `Prefill batch` lines of every era. The body is split on ", " into
  `key: value` pairs rather than matched by one fixed regex, because the fields changed with
  nearly every release. With DP attention every DP group logs its own line, so metrics carry
  the DP rank (`DP3`) and the summary adds throughput up across ranks.
- `server_args=ServerArgs(...)`: a dataclass repr, read with `ast`; pasted copies that wrap or
  are cut off fall back to key-wise regexes.
- The launch command (`python -m sglang.launch_server --tp 2 ...`), with argparse's prefix
  abbreviations, `--flag=value`, `\\` continuations and environment prefixes.
- `bench_serving` result blocks (shared reader in serving.py) and `bench_one_batch` output.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from typing import Any

from . import launch_env
from .records import Metric, ParseResult
from .serving import Block, BlockReader, add_block

NAME = "sglang"

# `[2025-10-22 10:27:57 DP1 TP1 EP1] ` prefix; custom logging formats put anything before.
_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)((?: (?:DP|TP|EP|PP)\d+)*)\] ")
_DP_TAG = re.compile(r"(?<![\w-])DP(\d+) TP\d+")
_DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,]?\s*")
_PREFILL = re.compile(r"Prefill batch(?: \[\d+\])?[.,]?\s*")

# Decode-line keys we keep, normalised to lower case, with the metric name they become.
_DECODE_METRICS = {
    "#running-req": "running_req",
    "#token": "kv_tokens",
    "#full token": "kv_tokens",
    "token usage": "token_usage",
    "full token usage": "token_usage",
    "#swa token": "swa_kv_tokens",
    "swa token usage": "swa_token_usage",
    "mamba num": "mamba_num",
    "mamba usage": "mamba_usage",
    "pre-allocated usage": "preallocated_usage",
    "#prealloc-req": "prealloc_req",
    "#transfer-req": "transfer_req",
    "#retracted-req": "retracted_req",
    "accept len": "accept_len_raw",
    "accept rate": "accept_rate",
    "gen throughput (token/s)": "gen_throughput_tok_s",
    "#queue-req": "queue_req",
    "#cache_miss": "cache_miss",
}
_PREFILL_METRICS = {
    "#new-seq": "new_seq",
    "#new-token": "new_tokens",
    "#cached-token": "cached_tokens",
    "cache hit rate": "cache_hit_rate_pct",
    "token usage": "token_usage",
    "full token usage": "token_usage",
    "#running-req": "running_req",
    "#queue-req": "queue_req",
    "#pending-token": "pending_tokens",
    "#prealloc-req": "prealloc_req",
    "#inflight-req": "inflight_req",
    "input throughput (token/s)": "input_throughput_tok_s",
}

# ServerArgs field -> (setting key, how to read the value).
_SERVER_ARGS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "model_path": ("model", str),
    "speculative_algorithm": ("spec.algorithm", lambda v: str(v).upper()),
    "speculative_draft_model_path": ("spec.draft_model", str),
    "speculative_num_steps": ("spec.steps", int),
    "speculative_eagle_topk": ("spec.topk", int),
    "speculative_num_draft_tokens": ("spec.draft_tokens", int),
    "tp_size": ("tp_size", int),
    "dp_size": ("dp_size", int),
    "ep_size": ("ep_size", int),
    "pp_size": ("pp_size", int),
    "enable_dp_attention": ("sglang.enable_dp_attention", bool),
    "cuda_graph_max_bs": ("sglang.cuda_graph_max_bs", int),
    "disable_cuda_graph": ("sglang.disable_cuda_graph", bool),
    "attention_backend": ("sglang.attention_backend", str),
    "mem_fraction_static": ("sglang.mem_fraction_static", float),
    "max_running_requests": ("sglang.max_running_requests", int),
    "chunked_prefill_size": ("sglang.chunked_prefill_size", int),
    "page_size": ("sglang.page_size", int),
    "kv_cache_dtype": ("sglang.kv_cache_dtype", str),
    "dtype": ("sglang.dtype", str),
    "quantization": ("sglang.quantization", str),
}
# One value of a dataclass repr, ending where the next field (or the call) starts.
_REPR_VALUE = (
    r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|None|True|False|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"(?=[,)])"
)
_ARG_PATTERNS = {key: re.compile(rf"(?<![\w.]){key}={_REPR_VALUE}") for key in _SERVER_ARGS}
# A line that starts a new log record, so it cannot be the wrapped tail of a pasted repr.
_LOG_START = re.compile(
    r"^\s*(?:\[\d{4}-\d\d-\d\d|\d{4}-\d\d-\d\d|\(\w+ pid=|(?:INFO|WARNING|ERROR|DEBUG)\b|Traceback)"
)
_MAX_JOIN_LINES = 64
_MAX_JOIN_CHARS = 1 << 18

# Launch flags -> (setting key, type). Aliases listed as argparse registers them; other
# abbreviations resolve as argparse does, by unique prefix.
_FLAGS: dict[str, tuple[str, Callable[[str], object]]] = {
    "--model-path": ("model", str),
    "--model": ("model", str),
    "--speculative-algorithm": ("spec.algorithm", lambda v: v.upper()),
    "--speculative-draft-model-path": ("spec.draft_model", str),
    "--speculative-draft-model": ("spec.draft_model", str),
    "--speculative-num-steps": ("spec.steps", int),
    "--speculative-eagle-topk": ("spec.topk", int),
    "--speculative-num-draft-tokens": ("spec.draft_tokens", int),
    "--tensor-parallel-size": ("tp_size", int),
    "--tp-size": ("tp_size", int),
    "--tp": ("tp_size", int),
    "--data-parallel-size": ("dp_size", int),
    "--dp-size": ("dp_size", int),
    "--dp": ("dp_size", int),
    "--expert-parallel-size": ("ep_size", int),
    "--ep-size": ("ep_size", int),
    "--ep": ("ep_size", int),
    "--pipeline-parallel-size": ("pp_size", int),
    "--pp-size": ("pp_size", int),
    "--enable-dp-attention": ("sglang.enable_dp_attention", bool),
    "--disable-cuda-graph": ("sglang.disable_cuda_graph", bool),
    "--cuda-graph-max-bs": ("sglang.cuda_graph_max_bs", int),
    "--attention-backend": ("sglang.attention_backend", str),
    "--mem-fraction-static": ("sglang.mem_fraction_static", float),
    "--max-running-requests": ("sglang.max_running_requests", int),
    "--chunked-prefill-size": ("sglang.chunked_prefill_size", int),
    "--page-size": ("sglang.page_size", int),
    "--kv-cache-dtype": ("sglang.kv_cache_dtype", str),
    "--dtype": ("sglang.dtype", str),
    "--quantization": ("sglang.quantization", str),
}
# Entry points that take the server's flags (bench_serving is a client with flags of its own).
_LAUNCH = re.compile(
    r"\bsglang(?:\.launch_server\b|\.bench_one_batch\b|\.bench_offline_throughput\b"
    r"|\.bench_latency\b|\s+serve\b)"
)
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A launch flag pasted on a line of its own, without the command's head (`--speculative-num-steps 4 \`,
# a "Key Launch Parameters" list): SGLang's speculative flags name the server they configure.
_FLAG_LINE = re.compile(r"^\s*--speculative-[\w-]+(?:[ =]\S+)?\s*\\?\s*$")

# bench_one_batch (`rank_print` format strings, FORMATS §2.2).
_ONE_BATCH = re.compile(
    r"\b(Prefill|Decode|Total)(?: (\d+))?\.\s+(?:Batch size: (\d+), )?(median )?latency:\s*"
    r"(\d+(?:\.\d+)?) s, (?:median )?throughput:\s*(\d+(?:\.\d+)?) token/s"
)


def split_fields(body: str) -> dict[str, str]:
    """`#running-req: 1, token usage: 0.00, ` -> {"#running-req": "1", "token usage": "0.00"}."""
    out: dict[str, str] = {}
    for piece in body.split(", "):
        key, sep, value = piece.partition(":")
        if sep:
            out[key.strip().lower()] = value.strip().rstrip(",").strip()
    return out


def _number(text: str | None) -> float | None:
    if not text:
        return None
    if text in ("True", "False"):
        return 1.0 if text == "True" else 0.0
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # NaN is "unknown", not a number to average



class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = (
        "Decode batch", "Prefill batch", "ServerArgs(", "sglang", "latency:", " ...", "--speculative-",
        *BlockReader.TRIGGERS,
    )
    STARTS: re.Pattern | None = BlockReader.STARTS

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.windows: dict[str, int] = {}  # decode windows per DP rank: ranks report separately
        self.prefill_windows: dict[str, int] = {}
        self.args: list[str] | None = None  # a ServerArgs repr being joined across wrapped lines
        self.args_line = 0
        self.args_depth = 0
        self.args_quote = ""
        self.launch: list[str] | None = None  # a launch command continued with `\`
        self.launch_line = 0
        self.bench = BlockReader()
        self.bench_blocks = 0
        self.one_batch_phase = ""  # "", "warmup" or "benchmark" (after the banners)
        self.one_batch_step = 0
        self.one_batch_windows = 0

    def feed(self, lineno: int, line: str) -> None:
        if self.args is not None and self._continue_args(lineno, line):
            return
        if self.launch is not None:
            self._continue_launch(line)
            return
        block = self.bench.feed(lineno, line)
        if block is not None:
            self._bench_block(block)
        if "batch" in line:
            if "Decode batch" in line:
                self._decode(lineno, line)
                return
            if "Prefill batch" in line:
                self._prefill(lineno, line)
                return
        if "ServerArgs(" in line:
            self._start_args(lineno, line)
        elif "sglang" in line and _LAUNCH.search(line):
            self.launch, self.launch_line = [], lineno
            self._continue_launch(line)
        elif "latency:" in line or " ..." in line:
            self._one_batch(lineno, line)
        elif "--speculative-" in line and _FLAG_LINE.match(line):
            self.result.add_format("sglang_launch")
            self._flags(line.strip().rstrip("\\").split(), lineno)

    def busy(self) -> bool:
        # A wrapped ServerArgs repr, a launch command continued with `\`, an open bench block.
        return self.args is not None or self.launch is not None or self.bench.block is not None

    def finish(self) -> None:
        if self.args is not None:
            self._finish_args()
        if self.launch is not None:
            self._finish_launch()
        block = self.bench.close()
        if block is not None:
            self._bench_block(block)

    def _rank(self, line: str, end: int) -> str:
        """The DP rank tag (`DP3`), or "" when one scheduler reports for the whole server."""
        p = _PREFIX.search(line, 0, end + 1)
        if p:
            tags = p.group(2).split()
            return next((t for t in tags if t.startswith("DP")), "")
        m = _DP_TAG.search(line, 0, end)
        return f"DP{m.group(1)}" if m else ""

    def _decode(self, lineno: int, line: str) -> None:
        m = _DECODE.search(line)
        if not m:
            return
        fields = split_fields(line[m.end():])
        throughput = _number(fields.get("gen throughput (token/s)"))
        if throughput is None:
            # A line cut before its throughput is not a whole window.
            return
        rank = self._rank(line, m.start())
        r = self.result
        r.add_format("sglang_decode")
        r.set("engine", "sglang", lineno, "sglang_decode")
        window = self.windows.get(rank, 0) + 1
        self.windows[rank] = window
        add = r.metrics.append
        for key, text in fields.items():
            metric = _DECODE_METRICS.get(key)
            if metric is not None and (value := _number(text)) is not None:
                add(Metric(metric, value, window, lineno, "sglang_decode", rank))
        graph = fields.get("cuda graph", fields.get("cpu graph"))
        if graph in ("True", "False"):
            r.metrics.append(Metric("graph", float(graph == "True"), window, lineno, "sglang_decode", rank))
        accept = _number(fields.get("accept len"))
        if accept is not None:
            # SGLang's `accept len` counts the bonus token: it already is tokens per cycle.
            r.metrics.append(Metric("tokens_per_cycle", accept, window, lineno, "sglang_decode", rank))

    def _prefill(self, lineno: int, line: str) -> None:
        m = _PREFILL.search(line)
        if not m:
            return
        fields = split_fields(line[m.end():])
        if "#new-token" not in fields and "#new-seq" not in fields:
            return
        rank = self._rank(line, m.start())
        r = self.result
        r.add_format("sglang_prefill")
        r.set("engine", "sglang", lineno, "sglang_prefill")
        window = self.prefill_windows.get(rank, 0) + 1
        self.prefill_windows[rank] = window
        for key, text in fields.items():
            metric = _PREFILL_METRICS.get(key)
            if metric is not None and (value := _number(text)) is not None:
                r.metrics.append(Metric(metric, value, window, lineno, "sglang_prefill", rank))

    # -- server_args=ServerArgs(...) --------------------------------------------------------

    def _start_args(self, lineno: int, line: str) -> None:
        self.args, self.args_line = [], lineno
        self.args_depth, self.args_quote = 0, ""
        self._add_args(line[line.index("ServerArgs("):])

    def _continue_args(self, lineno: int, line: str) -> bool:
        """Take `line` as the wrapped tail of the repr; False when it is a log line of its own."""
        assert self.args is not None  # feed() calls this only while a repr is being joined
        if (
            not line.strip() or _LOG_START.match(line) or "Decode batch" in line or "Prefill batch" in line
            or len(self.args) >= _MAX_JOIN_LINES or sum(map(len, self.args)) > _MAX_JOIN_CHARS
        ):
            self._finish_args()
            return False
        self._add_args(line)
        return True

    def _add_args(self, text: str) -> None:
        args = self.args
        assert args is not None  # _start_args() or _continue_args() has a repr open
        depth, quote, i = self.args_depth, self.args_quote, 0
        n = len(text)
        while i < n:
            c = text[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth <= 0:
                    args.append(text[:i + 1])
                    self.args_depth, self.args_quote = 0, ""
                    self._finish_args()
                    return
            i += 1
        args.append(text)
        self.args_depth, self.args_quote = depth, quote

    def _finish_args(self) -> None:
        # Wrapped copies break mid-token (`max_total_token` / `s=None`): join without a space.
        assert self.args is not None  # called only with a repr open
        text, lineno = "".join(self.args), self.args_line
        self.args = None
        values = _literal_call(text)
        if values is None:
            values = {}
            for key, pattern in _ARG_PATTERNS.items():
                m = pattern.search(text)
                if m:
                    try:
                        values[key] = ast.literal_eval(m.group(1))
                    except (ValueError, SyntaxError, MemoryError, RecursionError):
                        continue
        r = self.result
        r.add_format("sglang_server_args")
        r.set("engine", "sglang", lineno, "sglang_server_args")
        for field, (key, kind) in _SERVER_ARGS.items():
            value = values.get(field)
            if value is None or isinstance(value, dict | list):
                continue
            try:
                value = kind(value)
            except (TypeError, ValueError, OverflowError):
                continue
            existing = r.settings.get(key)
            # The server's own view of its arguments beats what a launch line typed.
            r.set(key, value, lineno, "sglang_server_args",
                  overwrite=existing is not None and existing.source == "sglang_launch")

    # -- launch command ---------------------------------------------------------------------

    def _continue_launch(self, line: str) -> None:
        assert self.launch is not None  # feed() calls this only with a launch command open
        text = line.rstrip()
        more = text.endswith("\\") and len(self.launch) < _MAX_JOIN_LINES
        self.launch.append(text[:-1] if text.endswith("\\") else text)
        if not more:
            self._finish_launch()

    def _finish_launch(self) -> None:
        assert self.launch is not None  # called only with a launch command open
        text, lineno = " ".join(self.launch), self.launch_line
        self.launch = None
        tokens = launch_env.shell_words(text)  # shlex.split()'s words, without its per-character Python
        if tokens is None:
            tokens = text.split()
        r = self.result
        r.add_format("sglang_launch")
        r.set("engine", "sglang", lineno, "sglang_launch")
        self._flags(tokens, lineno)

    def _flags(self, tokens: list[str], lineno: int) -> None:
        """The settings a launch command's words give (`--flag value`, `--flag=value`, `NAME=value`).
        (The native scanner walks the words as this does to find the settings all held: _scan_env.h
        env_sglang_launch, its C twin, which asks _resolve_flag.)"""
        r = self.result
        i = 0
        while i < len(tokens):
            token = tokens[i]
            i += 1
            if _ENV.match(token):
                name, _, value = token.partition("=")
                if name.startswith(("SGLANG_", "SGL_")):
                    r.set(f"env.{name}", value, lineno, "sglang_launch")
                continue
            if not token.startswith("--"):
                continue
            flag, eq, value = token.partition("=")
            spec = _resolve_flag(flag)
            if spec is not None and spec[1] is bool:
                if not eq:
                    value = "true"
                r.set(spec[0], value.lower() in ("1", "true", "yes"), lineno, "sglang_launch")
                continue
            if not eq:
                if i >= len(tokens) or tokens[i].startswith("--"):
                    continue
                value = tokens[i]
                i += 1
            if spec is not None:
                try:
                    r.set(spec[0], spec[1](value), lineno, "sglang_launch")
                except (TypeError, ValueError):
                    continue

    # -- bench_serving ----------------------------------------------------------------------

    def _bench_block(self, block: Block) -> None:
        if block.owner(self.result.settings) == "sglang":
            self._bench_emit(block)

    def _bench_emit(self, block: Block) -> None:
        # The native scanner writes a block's records so itself where nothing here changes its flags
        # (bench_emit_rows, _scan_bench.h): a change here is made there too.
        r = self.result
        fmt = "sglang_bench_serving"
        r.add_format(fmt)
        add_block(r, block, "sglang", fmt)
        self.bench_blocks += 1
        window = self.bench_blocks
        for row in block.rows:
            value = row.value
            if value is None:
                continue
            r.set(f"serving.{row.key}", value, row.line, fmt)
            if row.key == "backend" and isinstance(value, str):
                # The client's backend names the server it measured.
                engine = "vllm" if value.startswith("vllm") else "sglang" if "sglang" in value else None
                r.set("engine", engine, row.line, fmt)
            elif row.key == "output_throughput_tok_s" and isinstance(value, int | float):
                r.metrics.append(Metric("throughput_tok_s", float(value), window, row.line, "sglang_bench"))
            elif row.key == "accept_length" and isinstance(value, int | float):
                # Cumulative over the server's life (FORMATS §2.1): the summary uses it only
                # when the log has no decode lines.
                r.metrics.append(Metric("tokens_per_cycle", float(value), window, row.line, "sglang_bench"))

    # -- bench_one_batch --------------------------------------------------------------------

    def _one_batch(self, lineno: int, line: str) -> None:
        text = line.strip()
        if text in ("Warmup ...", "Benchmark ..."):
            self.one_batch_phase = "warmup" if text.startswith("Warmup") else "benchmark"
            self.one_batch_step = 0
            return
        if "latency:" not in line:
            return
        m = _ONE_BATCH.search(line)
        if m:
            self.result.used.add(lineno)  # read, kept or dropped on purpose (the warm-up's)
        if self.one_batch_phase != "benchmark":
            # Numbers before `Benchmark ...` are the warm-up pass (its banner may be cut off).
            return
        if m:
            self._one_batch_entry(lineno, m.group(1), m.group(2), m.group(3), bool(m.group(4)),
                                  float(m.group(5)), float(m.group(6)))

    def _one_batch_entry(self, lineno: int, kind: str, step: str | None, batch: str | None,
                         is_median: bool, latency: float, throughput: float) -> None:
        r = self.result
        fmt = "sglang_bench_one_batch"
        r.add_format(fmt)
        r.set("engine", "sglang", lineno, fmt)
        if kind == "Prefill":
            self.one_batch_step = 0
            r.set("serving.prefill_latency_s", latency, lineno, fmt)
            r.set("serving.prefill_throughput_tok_s", throughput, lineno, fmt)
        elif kind == "Total":
            r.set("serving.total_latency_s", latency, lineno, fmt)
            r.set("serving.total_throughput_tok_s", throughput, lineno, fmt)
        elif is_median:
            r.set("serving.decode_median_latency_s", latency, lineno, fmt)
            r.set("serving.decode_median_throughput_tok_s", throughput, lineno, fmt)
        else:
            index = r.read_int(step, lineno, "decode step") if step is not None else self.one_batch_step
            if index is None:
                return
            self.one_batch_step = index + 1
            if batch is not None:
                r.set("serving.batch_size", r.read_int(batch, lineno, "batch size"), lineno, fmt)
            if index == 0:
                return  # the first decode step after prefill carries graph/compile warm-up
            self.one_batch_windows += 1
            w = self.one_batch_windows
            r.metrics.append(Metric("throughput_tok_s", throughput, w, lineno, "sglang_bench_one_batch"))
            r.metrics.append(Metric("decode_latency_ms", round(latency * 1000, 6), w, lineno,
                                    "sglang_bench_one_batch"))


def _resolve_flag(flag: str) -> tuple[str, Callable[[str], object]] | None:
    """`--speculative-algo` -> the `--speculative-algorithm` entry, as argparse resolves it."""
    if flag in _FLAGS:
        return _FLAGS[flag]
    if len(flag) < 4:
        return None
    matches = {_FLAGS[f] for f in _FLAGS if f.startswith(flag)}
    return matches.pop() if len(matches) == 1 else None


def _literal_call(text: str) -> dict | None:
    """`ServerArgs(a=1, b='x', c=Conf(d=2))` -> {"a": 1, "b": "x", "c": {"d": 2}}; None if unreadable."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree.body, ast.Call):
        return None
    return _call_kwargs(tree.body)


def _call_kwargs(call: ast.Call) -> dict:
    out = {}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        if isinstance(kw.value, ast.Call):
            # A nested dataclass (`cuda_graph_config=CudaGraphConfig(...)`).
            out[kw.arg] = _call_kwargs(kw.value)
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # a repr literal_eval cannot read (`<Enum.X: 1>` is not even parsed)
    return out
