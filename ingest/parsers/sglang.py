"""SGLang server logs (FORMATS §1): `Decode batch` lines of every era, with rank prefixes.

The body is split on ", " into `key: value` pairs rather than matched by one fixed regex,
because the fields changed with nearly every release.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .records import Metric, ParseResult

NAME = "sglang"

# `[2025-10-22 10:27:57 DP1 TP1 EP1] ` prefix; custom logging formats put anything before.
_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)((?: (?:DP|TP|EP|PP)\d+)*)\] ")
_DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,]?\s*")

# Decode-line keys we keep, normalised to lower case, with the metric name they become.
_DECODE_METRICS = {
    "#running-req": "running_req",
    "#token": "kv_tokens",
    "#full token": "kv_tokens",
    "token usage": "token_usage",
    "full token usage": "token_usage",
    "accept len": "accept_len_raw",
    "accept rate": "accept_rate",
    "gen throughput (token/s)": "gen_throughput_tok_s",
    "#queue-req": "queue_req",
}


def split_fields(body: str) -> dict[str, str]:
    """`#running-req: 1, token usage: 0.00, ` -> {"#running-req": "1", "token usage": "0.00"}."""
    out: dict[str, str] = {}
    for piece in body.split(", "):
        key, sep, value = piece.partition(":")
        if sep:
            out[key.strip().lower()] = value.strip().rstrip(",").strip()
    return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN is "unknown", not a number to average


class Parser:
    name = NAME

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.windows: dict[str, int] = {}  # per rank tag: DP ranks report separately

    def feed(self, lineno: int, line: str) -> None:
        if "Decode batch" in line:
            self._decode(lineno, line)

    def finish(self) -> None:
        pass

    def _decode(self, lineno: int, line: str) -> None:
        m = _DECODE.search(line)
        if not m:
            return
        p = _PREFIX.search(line, 0, m.start() + 1)
        rank = p.group(2).strip() if p else ""
        fields = split_fields(line[m.end():])
        throughput = _number(fields.get("gen throughput (token/s)", ""))
        if throughput is None:
            # A line cut before its throughput is not a whole window.
            return
        r = self.result
        r.add_format("sglang_decode")
        r.set("engine", "sglang", lineno, "sglang_decode")
        window = self.windows.get(rank, 0) + 1
        self.windows[rank] = window
        for key, metric in _DECODE_METRICS.items():
            if key in fields:
                value = _number(fields[key])
                if value is not None:
                    r.metrics.append(Metric(metric, value, window, lineno, "sglang_decode", rank))
        accept = _number(fields.get("accept len", ""))
        if accept is not None:
            # SGLang's `accept len` counts the bonus token: it already is tokens per cycle.
            r.metrics.append(Metric("tokens_per_cycle", accept, window, lineno, "sglang_decode", rank))


def parse(lines: Iterable[str]) -> ParseResult:
    from . import parse_lines

    return parse_lines(lines, formats=[NAME])
