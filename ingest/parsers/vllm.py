"""vLLM logs (FORMATS §2.3, §3, §6): speculative-decoding metrics, engine throughput, V0 stage
times, launch arguments and `vllm bench serve` result blocks.

Speculative metrics lines changed wording and field order with most releases, so a line is
read as `Key: value` pairs (the per-position list is "floats until the next `Key:`"). V0
counters are cumulative over the server's life and are differenced into per-window values;
V1 values are already per logging interval. Tokens per cycle is `Mean acceptance length`
(bonus token included) or, in V0, emitted tokens per verify step.

Acceptance rates are stored as fractions (0..1) whether the line prints `0.550` or `55.0%`.
"""

from __future__ import annotations

import ast
import json
import math
import re

from .records import MAX_INT_DIGITS, Metric, ParseResult, Phase
from .serving import Block, BlockReader, add_block

NAME = "vllm"

_SPEC = re.compile(r"(?:SpecDecoding|Speculative) metrics:\s*")
# A `Key: ` at the start of the body or after ", "; keys never start with a digit, so the
# per-position floats between two keys are one value.
_KEY = re.compile(r"(?:^|,\s*)([A-Za-z][A-Za-z \-]*?):\s*")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SPEC_KEYS = {
    "draft acceptance rate": "rate",
    "avg draft acceptance rate": "rate",
    "system efficiency": "efficiency",
    "number of speculative tokens": "k",
    "number of accepted tokens": "accepted",
    "number of draft tokens": "drafted",
    "number of emitted tokens": "emitted",
    "accepted": "accepted",
    "drafted": "drafted",
    "mean acceptance length": "mean_len",
    "accepted throughput": "accepted_tps",
    "drafted throughput": "drafted_tps",
    "per-position acceptance rate": "positions",
}
_ENGINE = re.compile(
    r"(?:Engine (\d+): )?Avg prompt throughput: (\d+(?:\.\d+)?) tokens/s, "
    r"Avg generation throughput: (\d+(?:\.\d+)?) tokens/s,?\s*"
)
_ENGINE_FIELDS = {
    "running": "running_req",
    "waiting": "waiting_req",
    "pending": "waiting_req",
    "swapped": "swapped_req",
    "gpu kv cache usage": "kv_cache_usage_pct",
    "cpu kv cache usage": "cpu_kv_cache_usage_pct",
    "prefix cache hit rate": "prefix_cache_hit_rate_pct",
}
_STAGE = re.compile(r"SpecDecodeWorker stage times:\s*(.*)$")
# A server launch command pasted in a note: `vllm serve …`, `python -m vllm.entrypoints.openai.api_server …`.
_COMMAND = re.compile(r"(?:^|[\s$/])(?:vllm serve\b|-m\s+vllm\.entrypoints\.openai\.api_server\b)")
_COMMAND_K = re.compile(r"num[_-]speculative[_-]tokens\\?\"?\s*[=: ]\s*(\d+)")
_STAGE_FIELD = re.compile(r"(\w+?)_ms=(\d+(?:\.\d+)?)")
_STAGE_PHASES = {
    "average_time_per_proposal_tok": "proposal",
    "scoring_time": "scoring",
    "verification_time": "verification",
    "prefill_sync_time": "prefill sync",
}
_VERSION = re.compile(r"vLLM API server version ([\w.+-]+)|LLM engine \(v([\w.+-]+)\) with config: (.*)$")
# `Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen3-8B', ...`
_CONFIG_FIELDS = {
    "model": re.compile(r"(?<![\w.])model='([^']*)'"),
    "tp_size": re.compile(r"(?<![\w.])tensor_parallel_size=(\d+)"),
    "pp_size": re.compile(r"(?<![\w.])pipeline_parallel_size=(\d+)"),
    "dp_size": re.compile(r"(?<![\w.])data_parallel_size=(\d+)"),
}
_SPEC_CONFIG = re.compile(r"speculative_config=(\w*\([^()]*\)|\{[^{}]*\})")
# `non-default args: {...}` (vLLM ≥0.9) -> settings.
_ARGS = {
    "model": ("model", str),
    "tensor_parallel_size": ("tp_size", int),
    "data_parallel_size": ("dp_size", int),
    "pipeline_parallel_size": ("pp_size", int),
    "enable_expert_parallel": ("vllm.enable_expert_parallel", bool),
    "max_model_len": ("vllm.max_model_len", int),
    "max_num_seqs": ("vllm.max_num_seqs", int),
    "gpu_memory_utilization": ("vllm.gpu_memory_utilization", float),
}


def _value(text: str) -> float | None:
    """First number in `66 tokens`, `27.3%`, `4.37 tokens/s`; None for `nan%` and friends."""
    m = _NUMBER.search(text)
    if not m:
        return None
    try:
        value = float(m.group())
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return value / 100 if "%" in text[m.end():m.end() + 2] else value


def spec_fields(body: str) -> dict[str, object]:
    """`Mean acceptance length: 2.91, Accepted: 44 tokens, Per-position acceptance rate: 0.7, 0.4`
    -> {"mean_len": 2.91, "accepted": 44.0, "positions": [0.7, 0.4]}."""
    keys = list(_KEY.finditer(body))
    out: dict[str, object] = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(body)
        label = m.group(1).strip().lower().replace("tokens tokens", "tokens")  # V0.5 typo
        name = _SPEC_KEYS.get(label)
        text = body[m.end():end].strip().rstrip(".,").strip()
        if name is None:
            continue
        if name == "positions":
            values = [_value(v) for v in text.split(",") if v.strip()]
            if values and all(v is not None for v in values):
                out[name] = values
            continue
        value = _value(text)
        if value is not None:
            out[name] = value
    return out


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = (
        "metrics:", "throughput:", "stage times", "non-default args", "LLM", "vllm serve", "api_server",
        *BlockReader.TRIGGERS,
    )
    STARTS: re.Pattern | None = BlockReader.STARTS

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.spec_window = 0
        self.v0_previous: tuple[float, float, float] | None = None  # cumulative counters
        self.engine_windows: dict[str, int] = {}
        self.stage_window = 0
        # V0 pairing, per launch: the draft length of the current launch (a launch command, its
        # config or a metrics line says it).
        self.launch_k: int | None = None
        self.launch_used = False  # a metrics or stage line since the launch started
        self.bench = BlockReader()
        self.bench_blocks = 0

    def feed(self, lineno: int, line: str) -> None:
        block = self.bench.feed(lineno, line)
        if block is not None:
            self._bench_block(block)
        if "metrics:" in line:
            m = _SPEC.search(line)
            if m:
                self._spec(lineno, line[m.end():])
        elif "throughput:" in line:
            if "Avg prompt throughput" in line:
                self._engine(lineno, line)
        elif "stage times" in line:
            m = _STAGE.search(line)
            if m:
                self._stage(lineno, m.group(1))
        elif "non-default args" in line:
            self._new_launch()
            self._args(lineno, line)
        elif "LLM" in line and ("version" in line or "with config:" in line):
            if "version" in line:
                self._new_launch()
            self._version(lineno, line)
        elif ("vllm serve" in line or "api_server" in line) and _COMMAND.search(line):
            self._new_launch()
            k = _COMMAND_K.search(line)
            n = self.result.read_int(k.group(1), lineno, "num_speculative_tokens") if k else None
            if n is not None and n > 0:
                self._known_k(n)

    def busy(self) -> bool:
        return self.bench.block is not None

    def finish(self) -> None:
        block = self.bench.close()
        if block is not None:
            self._bench_block(block)

    # -- SpecDecoding / Speculative metrics -------------------------------------------------

    def _k(self) -> int | None:
        steps = self.result.settings.get("spec.steps")
        return steps.value if steps is not None and isinstance(steps.value, int) and steps.value > 0 else None

    def _spec(self, lineno: int, body: str) -> None:
        f = spec_fields(body)
        if "accepted" not in f and "mean_len" not in f and "rate" not in f:
            return
        r = self.result
        r.add_format("vllm_spec")
        r.set("engine", "vllm", lineno, "vllm_spec")
        self.launch_used = True
        k = f.get("k")
        # _value() gives floats (inf and 1e300 among them), positions a list
        if isinstance(k, float) and 1 <= k < 10 ** MAX_INT_DIGITS and k == int(k):
            r.set("spec.steps", int(k), lineno, "vllm_spec")
            self._known_k(int(k))
        positions = f.get("positions")
        if isinstance(positions, list) and positions:
            r.set("spec.steps", len(positions), lineno, "vllm_spec")
        if "efficiency" in f or "emitted" in f:
            self._spec_v0(lineno, f)
        else:
            self._spec_v1(lineno, f)

    def _spec_v0(self, lineno: int, f: dict) -> None:
        if not all(key in f for key in ("accepted", "drafted", "emitted")):
            return
        current = (f["accepted"], f["drafted"], f["emitted"])
        previous, self.v0_previous = self.v0_previous, current
        if previous is not None and all(c >= p for c, p in zip(current, previous, strict=True)):
            accepted, drafted, emitted = (c - p for c, p in zip(current, previous, strict=True))
        else:
            accepted, drafted, emitted = current  # first line, or the counters restarted
        if drafted <= 0:
            return  # nothing was drafted since the last line: not a window
        self.spec_window += 1
        w = self.spec_window
        add = self._adder(lineno, w)
        add("draft_acceptance_rate", accepted / drafted)
        add("accepted_tokens", accepted)
        add("draft_tokens", drafted)
        add("emitted_tokens", emitted)
        k = self.launch_k or self._k()  # the line's own draft length first, then the launch's
        if k:
            # V0 counts k draft tokens per sequence per step, so drafted / k verify steps.
            steps = drafted / k
            add("tokens_per_cycle", emitted / steps)
            add("system_efficiency", emitted / (steps * (k + 1)))

    def _spec_v1(self, lineno: int, f: dict) -> None:
        accepted, drafted = f.get("accepted"), f.get("drafted")
        if drafted is not None and drafted <= 0:
            self.result.used.add(lineno)
            return  # `nan%`: an interval without drafts is not a window
        self.spec_window += 1
        add = self._adder(lineno, self.spec_window)
        rate = f.get("rate")
        if rate is None and accepted is not None and drafted:
            rate = accepted / drafted
        add("draft_acceptance_rate", rate)
        add("accepted_tokens", accepted)
        add("draft_tokens", drafted)
        add("accepted_throughput_tok_s", f.get("accepted_tps"))
        add("drafted_throughput_tok_s", f.get("drafted_tps"))
        mean_len = f.get("mean_len")
        k = self._k()
        if mean_len is not None:
            add("accept_len_raw", mean_len)
            add("tokens_per_cycle", mean_len)  # 1 + accepted / drafts: includes the bonus token
        elif k and accepted is not None and drafted:
            add("tokens_per_cycle", 1 + accepted * k / drafted)
        for i, p in enumerate(f.get("positions") or (), 1):
            add(f"acceptance_pos_{i}", p)

    def _adder(self, lineno: int, window: int):
        metrics = self.result.metrics

        def add(name: str, value: float | None) -> None:
            if value is not None:
                metrics.append(Metric(name, round(float(value), 6), window, lineno, "vllm_spec"))

        return add

    # -- Engine throughput ------------------------------------------------------------------

    def _engine(self, lineno: int, line: str) -> None:
        m = _ENGINE.search(line)
        if not m:
            return
        r = self.result
        r.add_format("vllm_engine")
        r.set("engine", "vllm", lineno, "vllm_engine")
        generation = float(m.group(3))
        if generation <= 0:
            r.used.add(lineno)
            return  # an idle interval (or prefill only) is not a decode window
        dp = r.read_int(m.group(1), lineno, "engine number") if m.group(1) else None
        rank = f"DP{dp}" if dp is not None else ""
        window = self.engine_windows.get(rank, 0) + 1
        self.engine_windows[rank] = window

        def add(name: str, value: float) -> None:
            r.metrics.append(Metric(name, value, window, lineno, "vllm_engine", rank))

        add("throughput_tok_s", generation)
        add("prompt_throughput_tok_s", float(m.group(2)))
        for piece in line[m.end():].rstrip(".").split(","):
            key, sep, text = piece.partition(":")
            name = _ENGINE_FIELDS.get(key.strip().lower())
            if sep and name:
                n = _NUMBER.search(text)
                if n and math.isfinite(value := float(n.group())):
                    add(name, value)

    # -- V0 SpecDecodeWorker stage times ----------------------------------------------------

    def _stage(self, lineno: int, body: str) -> None:
        values = {}
        for key, text in _STAGE_FIELD.findall(body):
            if key in _STAGE_PHASES:
                value = float(text)
                if math.isfinite(value):
                    values[key] = value
        if "scoring_time" not in values and "average_time_per_proposal_tok" not in values:
            return
        self.result.add_format("vllm_stage_times")
        self.result.set("engine", "vllm", lineno, "vllm_stage_times")
        self.launch_used = True
        # A stage line is paired with the draft length of its own launch, as the lines before it
        # said it (its launch command or config, or a metrics line of the launch): never a later
        # line's, so a cut-off copy keeps its records a prefix of the whole file's.
        self.stage_window += 1
        k = self.launch_k
        for key, ms in values.items():
            name = _STAGE_PHASES[key]
            if key == "average_time_per_proposal_tok":
                # Proposal time per draft token; a cycle drafts k of them. Without the launch's
                # draft length the per-cycle figure is unknown, and the phase keeps a name that says so.
                if k:
                    ms = round(ms * k, 6)
                else:
                    name = "proposal per token"
            self.result.phases.append(Phase(name, ms, None, self.stage_window, lineno, "vllm_stage_times"))

    def _known_k(self, k: int) -> None:
        self.launch_k = k

    def _new_launch(self) -> None:
        """A server start: what the next launch reports is its own (a note can paste several runs
        one after another), its draft length and its cumulative counters."""
        if not self.launch_used:
            return  # the same start's other lines (version, args, command)
        self.launch_k, self.launch_used, self.v0_previous = None, False, None

    # -- launch arguments and version -------------------------------------------------------

    def _args(self, lineno: int, line: str) -> None:
        start = line.find("{", line.find("non-default args"))
        if start < 0:
            return
        try:
            args = ast.literal_eval(line[start:].strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return
        if not isinstance(args, dict):
            return
        r = self.result
        r.add_format("vllm_args")
        r.set("engine", "vllm", lineno, "vllm_args")
        for field, (key, kind) in _ARGS.items():
            value = args.get(field)
            if value is not None and not isinstance(value, dict | list):
                try:
                    r.set(key, kind(value), lineno, "vllm_args")
                except (TypeError, ValueError, OverflowError):
                    continue
        spec = args.get("speculative_config")
        if isinstance(spec, str):
            try:
                spec = json.loads(spec)
            except ValueError:
                spec = None
        if isinstance(spec, dict):
            method = spec.get("method")
            if isinstance(method, str) and method:
                r.set("spec.algorithm", method.upper(), lineno, "vllm_args")
            steps = spec.get("num_speculative_tokens")
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                r.set("spec.steps", steps, lineno, "vllm_args")
                self._known_k(steps)
            if isinstance(spec.get("model"), str):
                r.set("spec.draft_model", spec["model"], lineno, "vllm_args")

    def _version(self, lineno: int, line: str) -> None:
        m = _VERSION.search(line)
        if not m:
            return
        r = self.result
        r.set("engine", "vllm", lineno, "vllm_version")
        r.set("engine.version", m.group(1) or m.group(2), lineno, "vllm_version")
        config = m.group(3)
        if config:
            for key, pattern in _CONFIG_FIELDS.items():
                f = pattern.search(config)
                if f:
                    r.set(key, f.group(1) if key == "model" else r.read_int(f.group(1), lineno, key), lineno,
                          "vllm_version")
            spec = _SPEC_CONFIG.search(config)
            if spec:
                method = re.search(r"method='(\w+)'", spec.group(1))
                if method:
                    r.set("spec.algorithm", method.group(1).upper(), lineno, "vllm_version")
                steps = re.search(r"num_spec(?:ulative)?_tokens=(\d+)", spec.group(1))
                n = r.read_int(steps.group(1), lineno, "num_speculative_tokens") if steps else None
                if n is not None and n > 0:
                    r.set("spec.steps", n, lineno, "vllm_version")
                    self._known_k(n)

    # -- vllm bench serve -------------------------------------------------------------------

    def _bench_block(self, block: Block) -> None:
        if block.owner(self.result.settings) == "vllm":
            self._bench_emit(block)

    def _bench_emit(self, block: Block) -> None:
        # The native scanner writes a block's records so itself where nothing here changes its flags
        # (bench_emit_rows, _scan_bench.h): a change here is made there too.
        r = self.result
        fmt = "vllm_bench_serve"
        r.add_format(fmt)
        add_block(r, block, "vllm", fmt)
        self.bench_blocks += 1
        window = self.bench_blocks
        positions = 0
        for row in block.rows:
            value, key = row.value, row.key
            if value is None:
                continue
            r.set(f"serving.{key}", value, row.line, fmt)
            if not isinstance(value, int | float):
                continue
            if key == "output_throughput_tok_s":
                name = "throughput_tok_s"
            elif key == "acceptance_length":
                name = "tokens_per_cycle"  # per run: deltas of /metrics counters
            elif key == "acceptance_rate_pct":
                name, value = "draft_acceptance_rate", value / 100
            elif key.startswith("acceptance_position_"):
                positions += 1
                name, value = f"acceptance_pos_{positions}", value / 100
            else:
                continue
            r.metrics.append(Metric(name, round(float(value), 6), window, row.line, "vllm_bench"))
        if "Speculative Decoding" in block.sections or positions:
            r.set("engine", "vllm", block.first_line, fmt)
        if positions:
            r.set("spec.steps", positions, block.first_line, fmt)
