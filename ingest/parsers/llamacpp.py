"""llama.cpp speculative decoding (FORMATS §6): per-implementation `statistics` lines, the
per-slot `draft acceptance` line and `eval time` timings.

    statistics     draft-eagle3: #calls(b,g,a) =    1     87     87, #gen drafts =     87,
      #acc drafts =    70, #gen tokens =    259, #acc tokens =   167, #mean acc len = 2.92,
      #acc rate/pos = (0.805, 0.632, 0.483), dur(b,g,a) = 0.005, 325.555, 0.114 ms

Older builds print `statistics ngram_simple: #calls = 15, #gen drafts = 5, ...` without the
mean or the durations. The server prints one line per draft type (`ngram-map-k`, `ngram-mod`,
`draft-mtp`, ...) after each request, and every counter is cumulative over the server's life:
the lines printed together make one window, each type's share being what it added since its
previous line. Tokens per cycle is 1 + accepted tokens / drafts (the bonus token is in: 2.92 =
1 + 167/87), pooled over the types by totals in runs.summary, never a mean of their ratios; the
algorithm is the type that accepted most. `dur(b,g,a)` are total milliseconds in begin (new
prompt), generation and accepting; divided by that phase's calls they become `<type> generate`
and so on, in ms per call. They do not cover the target's verify, so they never add up to a
cycle. Fields are read one by one, in any order, since the line is young and will change.
"""

from __future__ import annotations

import math
import re

from .records import Metric, ParseResult, Phase

NAME = "llamacpp"
# The setting holding each draft type's cumulative counters (runs.summary lists them as `draft_types`).
TYPES_KEY = "llamacpp.draft_types"

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
_PHASES = ("begin", "generate", "accept")
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
    if "mtp" in name:
        return "MTP"
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
        self.types: dict[str, dict] = {}  # draft type -> its latest cumulative counters
        self.base: dict[str, dict] = {}  # draft type -> its counters at its previous line
        self.group: list[str] = []  # the types printed in the current window

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

    # The native scanner reads most such lines itself (llama_statistics, _scan_llamacpp.h): a change here
    # changes it too (tests/test_scan_llamacpp.py holds the two equal).
    def _statistics(self, lineno: int, impl: str, body: str) -> None:
        read = self.result.read_int
        counts = {key: n for key, p in _COUNTS.items()
                  if (m := p.search(body)) and (n := read(m.group(1), lineno, key)) is not None}
        mean = _MEAN_LEN.search(body)
        if not counts and not mean:
            return
        self._seen(lineno)
        if impl in self.group or not self.group:
            # A type printed again: the server printed its statistics once more (the next request).
            self.group = []
            self.windows += 1
        calls = _CALLS.search(body)
        if calls:
            # `#calls(b,g,a) = 1 87 87` (begin, generate, accept) or a plain `#calls = 15`.
            if calls.group(1) and calls.group(3):
                named = {"calls_begin": calls.group(2), "calls_generate": calls.group(3),
                         "calls_accept": calls.group(4)}
            else:
                named = {"calls_generate": calls.group(2)}
            counts.update((k, n) for k, v in named.items() if (n := read(v, lineno, "#calls")) is not None)
        stats: dict = {"counts": counts, "mean": float(mean.group(1)) if mean else None, "line": lineno}
        durations = _DURATIONS.search(body)
        if durations:
            stats["dur"] = tuple(float(d) for d in durations.groups())
        positions = _POSITIONS.search(body)
        rates = _floats(positions.group(1)) if positions else None
        if rates:
            stats["positions"] = rates
            self.result.set("spec.steps", len(rates), lineno, NAME)
        self.types[impl] = stats
        self.group.append(impl)
        self._publish(lineno)
        self._window(impl, stats, lineno)

    def _publish(self, lineno: int) -> None:
        """The file's cumulative counters per draft type (the latest line of each), and the
        algorithm of the type that drafted most: a run mixing an n-gram lookup with MTP is an MTP run."""
        r = self.result
        table = {}
        for impl, stats in self.types.items():
            row = {"type": impl, **stats["counts"]}
            if "dur" in stats:
                row.update(zip(("dur_begin_ms", "dur_generate_ms", "dur_accept_ms"), stats["dur"], strict=True))
            table[impl] = row
        setting = r.settings.get(TYPES_KEY)
        if setting is None:
            r.set(TYPES_KEY, table, lineno, NAME)
        else:
            setting.value, setting.line = table, lineno
        dominant = max(self.types, key=lambda i: (self.types[i]["counts"].get("acc_tokens", 0),
                                                  self.types[i]["counts"].get("gen_drafts", 0)))
        current = r.settings.get("spec.algorithm")
        r.set("spec.algorithm", _algorithm(dominant), lineno, NAME, overwrite=current is None or current.source == NAME)

    def _window(self, impl: str, stats: dict, lineno: int) -> None:
        """This type's share of the current window: what its cumulative counters added since its
        last line. The types printed together make one window (runs.summary pools them by totals:
        accepted tokens over drafts of all types, never a mean of the types' ratios); each line's
        records are its own, so a cut-off copy keeps a prefix of the whole file's."""
        before = self.base.get(impl)
        self.base[impl] = stats
        now = stats["counts"]
        old = before["counts"] if before else {}
        restarted = any(now.get(k, 0) < v for k, v in old.items())
        delta = {k: v - (0 if restarted else old.get(k, 0)) for k, v in now.items()}
        w = self.windows
        r = self.result

        def add(name: str, value: float) -> None:
            r.metrics.append(Metric(name, round(float(value), 6), w, lineno, NAME))

        drafted = delta.get("gen_drafts", 0) or delta.get("gen_tokens", 0)
        if not drafted:
            if stats["mean"] is not None and "gen_drafts" not in now:
                add("tokens_per_cycle", stats["mean"])  # a line with the mean but no counters
            return  # this type drafted nothing since its last line
        for key in ("gen_drafts", "acc_drafts", "gen_tokens", "acc_tokens", "calls_generate"):
            if key in delta:
                add("draft_calls" if key == "calls_generate" else key, delta[key])
        for i, p in enumerate(stats.get("positions") or (), 1):
            add(f"acceptance_pos_{i}", p)
        if "dur" in stats:
            old_dur = (0.0, 0.0, 0.0) if restarted or not before else before.get("dur", (0.0, 0.0, 0.0))
            calls = [delta.get(k, 0) for k in ("calls_begin", "calls_generate", "calls_accept")]
            if not any(calls):
                calls = [0, delta.get("gen_drafts", 0), 0]
            for phase, ms, was, n in zip(_PHASES, stats["dur"], old_dur, calls, strict=True):
                if n:  # ms per call of this type: `dur(b,g,a)` are total milliseconds
                    r.phases.append(Phase(f"{impl} {phase}", round((ms - was) / n, 6), None, w, lineno, NAME))

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
