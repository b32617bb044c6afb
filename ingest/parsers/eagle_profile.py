"""Per-cycle speculative-decoding profile blocks (this project's `ms/cyc` format, FORMATS §6).

    [EAGLE3_PROFILE] window=100 cycles, steps=2
      Draft:               0.56 ms/cyc  ( 11.8%)
      Target verify:       4.02 ms/cyc  ( 83.6%)
      Cycle total:         4.80 ms/cyc
      Accept len:          1.24          <- accepted draft tokens; tokens/cycle = 1.24 + 1
      Throughput:         466.3 tok/s

A non-speculative run prints `Target forward: 4.09 ms/step` with no header: each step is a
cycle of one phase. Any `Name: X ms/cyc (P%)` line is a phase, whatever the name.

Hand-made summary tables (tenstorrent vllm-tt-plugin PR #130) give one configuration per row:

    accept 2 of 5          257 iters   1.992 tok/iter    5.420 ms/iter

Each row is a window: `tok/iter` counts every token an iteration emits (1.000 without
speculation), so it is tokens per cycle as is; `ms/iter` is the cycle time.
"""

from __future__ import annotations

import re

from .records import Issue, Metric, ParseResult, Phase

NAME = "eagle_profile"
# Distinct phase names a file keeps (a real profile prints a handful). Each name is a group of
# rows, a row of the phase table and a series of its chart: a log of a million distinct names (a
# made one, FORMATS §6) cost memory and time per name in every step after the parse. A phase
# line of a later name is left out, counted in one warning; the C scanner reads the same cap
# (Parser.PHASE_NAMES) and counts its lines the same way.
PHASE_NAMES = 1000

_HEADER = re.compile(r"\[(\w+?)_PROFILE\]\s*(.*)$")
_HEADER_FIELD = re.compile(r"(\w+)=(\d+)")
_PHASE = re.compile(
    r"^\s*([A-Za-z][\w /+\-]*?)\s*:\s+(\d+(?:\.\d+)?)\s*ms/(cyc|cycle|step|iter)\b"
    r"(?:\s*\(\s*(\d+(?:\.\d+)?)\s*%\s*\))?"
)
_TABLE_ROW = re.compile(
    r"^\s*(\S.*?)\s+(\d+)\s+(?:iters?|cycles?|steps?)\s+(\d+(?:\.\d+)?)\s*tok/(?:iter|cyc|step)\s+"
    r"(\d+(?:\.\d+)?)\s*ms/(?:iter|cyc|step)\s*$"
)
_VALUE = re.compile(r"^\s+(Accept len|Accept length|Throughput)\s*:\s+(\d+(?:\.\d+)?)\s*(tok/s)?\s*$")
_TOTALS = {"cycle total", "total", "cycle"}


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("_PROFILE]", "ms/")
    STARTS: re.Pattern | None = None
    PHASE_NAMES = PHASE_NAMES

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.window = 0
        self.in_block = False
        self.seen: set[str] = set()  # phase names in the current window
        self.names: set[str] = set()  # the phase names kept (PHASE_NAMES at most)
        self.left_out = 0  # phase lines of names past PHASE_NAMES
        self.first_left_out = 0  # the first of them

    def feed(self, lineno: int, line: str) -> None:
        if "_PROFILE]" in line:
            self._header(lineno, line)
            return
        if "ms/" in line:
            if "tok/" in line:
                m = _TABLE_ROW.match(line)
                if m:
                    self._table_row(lineno, m)
                    return
            m = _PHASE.match(line)
            if m:
                self._phase(lineno, m)
                return
        if self.in_block:
            m = _VALUE.match(line)
            if m:
                self._value(lineno, m.group(1), float(m.group(2)))
            elif not line.startswith((" ", "\t")):
                self.in_block = False

    def busy(self) -> bool:
        return self.in_block  # an Accept len / Throughput line, or the line that ends the block

    def finish(self) -> None:
        if self.left_out:
            self.result.warnings.append(Issue(self.first_left_out, (
                f"more than {self.PHASE_NAMES:,} distinct phase names: the phase table and the cycle time keep the "
                f"first {self.PHASE_NAMES:,}; {self.left_out:,} phase line(s) of later names are left out")))

    def _header(self, lineno: int, line: str) -> None:
        m = _HEADER.search(line)
        if not m:
            return
        r = self.result
        r.add_format(NAME)
        self.window += 1
        self.in_block = True
        self.seen = set()
        r.set("spec.algorithm", m.group(1).upper(), lineno, NAME)
        fields = dict(_HEADER_FIELD.findall(m.group(2)))
        if "steps" in fields and "spec.steps" not in r.settings:  # the first steps= counts (as set() keeps it)
            r.set("spec.steps", r.read_int(fields["steps"], lineno, "steps="), lineno, NAME)
        if "window" in fields:
            r.metrics.append(Metric("window_cycles", float(fields["window"]), self.window, lineno, NAME))

    def _phase(self, lineno: int, m: re.Match) -> None:
        name = m.group(1).strip()
        ms = float(m.group(2))
        pct = float(m.group(4)) if m.group(4) is not None else None
        total = name.lower() in _TOTALS
        if not total and name not in self.names:
            if len(self.names) >= self.PHASE_NAMES:
                # Left out as if it were no phase line: no window opened, no name kept.
                self.left_out += 1
                self.first_left_out = self.first_left_out or lineno
                return
            self.names.add(name)
        if not self.in_block and (name in self.seen or self.window == 0):
            # Headerless (non-speculative) output: a repeated phase name opens the next window.
            self.window += 1
            self.seen = set()
        self.seen.add(name)
        self.result.add_format(NAME)
        if total:
            self.result.metrics.append(Metric("cycle_ms", ms, self.window, lineno, NAME))
        else:
            self.result.phases.append(Phase(name, ms, pct, self.window, lineno, NAME))

    def _table_row(self, lineno: int, m: re.Match) -> None:
        self.result.add_format(NAME)
        self.window += 1
        self.in_block = False
        self.seen = set()
        tokens, ms = float(m.group(3)), float(m.group(4))
        add = self.result.metrics.append
        add(Metric("window_cycles", float(m.group(2)), self.window, lineno, NAME))
        add(Metric("tokens_per_cycle", tokens, self.window, lineno, NAME))
        add(Metric("cycle_ms", ms, self.window, lineno, NAME))
        if ms > 0:
            add(Metric("throughput_tok_s", round(1000 * tokens / ms, 4), self.window, lineno, NAME))

    def _value(self, lineno: int, label: str, value: float) -> None:
        metrics = self.result.metrics
        if label.startswith("Accept"):
            metrics.append(Metric("accept_len_raw", value, self.window, lineno, NAME))
            # The profile counts accepted draft tokens; a cycle also emits the bonus token.
            metrics.append(Metric("tokens_per_cycle", round(value + 1, 6), self.window, lineno, NAME))
        else:
            metrics.append(Metric("throughput_tok_s", value, self.window, lineno, NAME))
