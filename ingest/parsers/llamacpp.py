"""llama.cpp speculative decoding (FORMATS §6): per-implementation `statistics` lines, the
per-slot `draft acceptance` line and `eval time` timings.

    statistics     draft-eagle3: #calls(b,g,a) =    1     87     87, #gen drafts =     87,
      #acc drafts =    70, #gen tokens =    259, #acc tokens =   167, #mean acc len = 2.92,
      #acc rate/pos = (0.805, 0.632, 0.483), dur(b,g,a) = 0.005, 325.555, 0.114 ms

Older builds print `statistics ngram_simple: #calls = 15, #gen drafts = 5, ...` without the
mean or the durations, and one line per implementation when several are combined.
`#mean acc len` is 1 + accepted tokens / drafts, so it includes the bonus token (2.92 =
1 + 167/87). `dur(b,g,a)` are total milliseconds spent in begin (new prompt), generation and
accepting; divided by the generation calls they become draft-side phases in ms per cycle. They
do not cover the target's verify, so they never add up to a cycle. Fields are read one by one,
in any order, since the line is young and will change.
"""

from __future__ import annotations

import math
import re

from .records import Metric, ParseResult, Phase

NAME = "llamacpp"

_STATISTICS = re.compile(r"\bstatistics\s+([A-Za-z][\w.\-]*):\s*(.*)$")
_CALLS = re.compile(r"#calls(\(b,g,a\))?\s*=\s*(\d+)(?:\s+(\d+)\s+(\d+))?")
_COUNTS = {
    "gen_drafts": re.compile(r"#gen drafts\s*=\s*(\d+)"),
    "acc_drafts": re.compile(r"#acc drafts\s*=\s*(\d+)"),
    "gen_tokens": re.compile(r"#gen tokens\s*=\s*(\d+)"),
    "acc_tokens": re.compile(r"#acc tokens\s*=\s*(\d+)"),
}
_MEAN_LEN = re.compile(r"mean acc(?:eptance)? len(?:gth)?\s*=\s*(\d+(?:\.\d+)?)")
_POSITIONS = re.compile(r"(?:#acc rate/pos|acceptance rate per position)\s*=\s*\(([^)]*)\)")
_DURATIONS = re.compile(r"dur\(b,g,a\)\s*=\s*(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?)\s*ms")
_PHASES = ("draft begin", "draft generate", "draft accept")
# `draft acceptance = 0.64479 (  167 accepted /   259 generated)`; older builds say `rate`.
_SLOT = re.compile(
    r"draft acceptance(?: rate)?\s*=\s*(\d+(?:\.\d+)?)\s*\(\s*(\d+) accepted\s*/\s*(\d+) generated\)"
)
_EVAL = re.compile(
    r"(prompt )?eval time\s*=\s*(\d+(?:\.\d+)?) ms\s*/\s*(\d+) (?:tokens|runs)\s*"
    r"\(\s*(\d+(?:\.\d+)?) ms per token,\s*(\d+(?:\.\d+)?) tokens per second\)"
)


def _floats(text: str) -> list[float] | None:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        return None
    return values if values and all(math.isfinite(v) for v in values) else None


def _algorithm(impl: str) -> str:
    """`draft-eagle3` -> EAGLE3, `ngram-simple` -> NGRAM, `draft` (a draft model) -> DRAFT."""
    name = impl.lower()
    if "eagle3" in name:
        return "EAGLE3"
    if name.startswith("ngram"):
        return "NGRAM"
    name = name.removeprefix("draft-")
    return name.upper().replace("-", "_")


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("statistics", "draft acceptance", "eval time")
    STARTS: re.Pattern | None = None

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.windows = 0
        self.slot_windows = 0
        self.eval_windows = 0
        self.prompt_windows = 0

    def feed(self, lineno: int, line: str) -> None:
        if "statistics" in line:
            m = _STATISTICS.search(line)
            if m:
                self._statistics(lineno, m.group(1), m.group(2))
        elif "draft acceptance" in line:
            self._slot(lineno, line)
        elif "eval time" in line:
            self._eval(lineno, line)

    def busy(self) -> bool:
        return False

    def finish(self) -> None:
        pass

    def _seen(self, lineno: int) -> None:
        self.result.add_format(NAME)
        self.result.set("engine", "llama.cpp", lineno, NAME)

    def _statistics(self, lineno: int, impl: str, body: str) -> None:
        read = self.result.read_int
        counts = {key: n for key, p in _COUNTS.items()
                  if (m := p.search(body)) and (n := read(m.group(1), lineno, key)) is not None}
        mean = _MEAN_LEN.search(body)
        if not counts and not mean:
            return
        self._seen(lineno)
        r = self.result
        r.set("spec.algorithm", _algorithm(impl), lineno, NAME)
        self.windows += 1
        w = self.windows

        def add(name: str, value: float, source: str = NAME) -> None:
            r.metrics.append(Metric(name, round(float(value), 6), w, lineno, source))

        for key, value in counts.items():
            add(key, value)
        drafts = counts.get("gen_drafts")
        calls = _CALLS.search(body)
        generate_calls = None
        if calls:
            # `#calls(b,g,a) = 1 87 87` (begin, generate, accept) or a plain `#calls = 15`.
            generate_calls = read(calls.group(3) if calls.group(1) and calls.group(3) else calls.group(2),
                                  lineno, "#calls")
            if generate_calls is not None:
                add("draft_calls", generate_calls)
        if mean:
            add("accept_len_raw", float(mean.group(1)))
            add("tokens_per_cycle", float(mean.group(1)))  # 1 + accepted / drafts
        elif drafts and "acc_tokens" in counts:
            add("tokens_per_cycle", 1 + counts["acc_tokens"] / drafts)
        if counts.get("gen_tokens"):
            add("draft_acceptance_rate", counts.get("acc_tokens", 0) / counts["gen_tokens"])
        positions = _POSITIONS.search(body)
        rates = _floats(positions.group(1)) if positions else None
        if rates:
            r.set("spec.steps", len(rates), lineno, NAME)
            for i, p in enumerate(rates, 1):
                add(f"acceptance_pos_{i}", p)
        durations = _DURATIONS.search(body)
        cycles = generate_calls or drafts
        if durations and cycles:
            for name, total in zip(_PHASES, durations.groups(), strict=True):
                r.phases.append(Phase(name, round(float(total) / cycles, 6), None, w, lineno, NAME))

    def _slot(self, lineno: int, line: str) -> None:
        m = _SLOT.search(line)
        if not m:
            return
        self._seen(lineno)
        self.slot_windows += 1
        w = self.slot_windows
        metrics = self.result.metrics
        source = "llamacpp_slot"
        accepted = self.result.read_int(m.group(2), lineno, "accepted tokens")
        generated = self.result.read_int(m.group(3), lineno, "generated draft tokens")
        if accepted is None or generated is None:
            return
        metrics.append(Metric("accepted_tokens", float(accepted), w, lineno, source))
        metrics.append(Metric("draft_tokens", float(generated), w, lineno, source))
        if generated:
            metrics.append(Metric("draft_acceptance_rate", round(accepted / generated, 6), w, lineno, source))
        mean = _MEAN_LEN.search(line, m.end())
        if mean:
            metrics.append(Metric("tokens_per_cycle", float(mean.group(1)), w, lineno, source))
        positions = _POSITIONS.search(line, m.end())
        for i, p in enumerate((_floats(positions.group(1)) if positions else None) or (), 1):
            metrics.append(Metric(f"acceptance_pos_{i}", p, w, lineno, source))

    def _eval(self, lineno: int, line: str) -> None:
        m = _EVAL.search(line)
        if not m:
            return
        tokens_per_s = float(m.group(5))
        if not math.isfinite(tokens_per_s):
            return
        self._seen(lineno)
        metrics = self.result.metrics
        if m.group(1):
            self.prompt_windows += 1
            metrics.append(Metric("prompt_throughput_tok_s", tokens_per_s, self.prompt_windows, lineno, NAME))
        else:
            self.eval_windows += 1
            w = self.eval_windows
            metrics.append(Metric("throughput_tok_s", tokens_per_s, w, lineno, NAME))
            metrics.append(Metric("decode_ms_per_token", float(m.group(4)), w, lineno, NAME))
