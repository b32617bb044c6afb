"""How a figure is written, everywhere: cards, tables, sentences, CSV, and the live list's script.

One rule: the value's shortest decimal form (Python's repr, JavaScript's String) rounded half away
from zero to the places of its kind: tok/s 1 decimal, ms 2, tokens per cycle 2, % 1. Rounding the
binary value instead (`f"{94.05:.1f}"` is "94.0", Django's floatformat says "94.1") made one
run's throughput read differently in the list and in the sentence about it. `figure()` in
webapp/static/runlens/app.js is the same function for the live updates;
tests/browser/test_figures_browser.py checks both give the same text for a table of values.
Pure: no Django.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

DASH = "—"  # an unknown figure
DEFAULT_PLACES = 2  # a figure of no listed kind
# Decimal places of each kind of figure.
PLACES = {"tok_s": 1, "ms": 2, "tokens": 2, "pct": 1, "p": 2, "gbs": 2}
# The kind of each figure key the pages, the API and the CSV export name.
KINDS = {
    "throughput_tok_s": "tok_s", "tokens_per_cycle": "tokens", "cycle_ms": "ms", "verify_ms": "ms",
    "verify_pct": "pct", "ms": "ms", "pct": "pct",
}


def places_of(kind: str | int) -> int:
    """Places for a kind (`tok_s`), a figure key (`cycle_ms`, `phase:Draft`) or a number of places."""
    if isinstance(kind, int):
        return kind
    if isinstance(kind, str) and kind.isdigit():
        return int(kind)
    if kind.startswith("phase:"):  # a phase figure (`phase:Target verify`) is ms per cycle
        return PLACES["ms"]
    kind = kind.removeprefix("metric:")  # the run page's figure keys (`metric:cycle_ms`)
    return PLACES.get(KINDS.get(kind, kind), DEFAULT_PLACES)


def rounded(value: object, kind: str | int) -> Decimal | None:
    """The figure rounded by the one rule, or None when there is no finite number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    with localcontext() as ctx:
        ctx.prec = 400  # room for every float's digits: 1e308 with 2 places
        q = Decimal(repr(number)).quantize(Decimal(1).scaleb(-places_of(kind)), rounding=ROUND_HALF_UP)
    return q.copy_abs() if q == 0 else q  # never "-0.0"


def figure(value: object, kind: str | int) -> str:
    """`94.1`, `4.08`; `—` when unknown."""
    q = rounded(value, kind)
    return DASH if q is None else f"{q:f}"


def signed(value: object, kind: str | int) -> str:
    """A delta, always with its sign: `+1.23`, `-0.40`, `0.00` when it rounds to nothing."""
    q = rounded(value, kind)
    if q is None:
        return DASH
    return f"+{q:f}" if q > 0 else f"{q:f}"


def csv_value(value: object, kind: str | int) -> Decimal | None:
    """A CSV cell: the rounded number (a Decimal, so the writer keeps its places), None if unknown."""
    return rounded(value, kind)


def throughput_scope_text(scope: dict | None) -> str:
    """`sum over 4 DP ranks (DP attention)` for summary.throughput_scope; "" when it does not apply.

    Read after "the throughput is the ..." in the comparison's headline, so a noun phrase."""
    if not scope:
        return ""
    kind = scope.get("kind")
    if kind == "sum_over_dp_ranks":
        return f"sum over {scope['ranks']} DP ranks" + (" (DP attention)" if scope.get("dp_attention") else "")
    if kind == "untagged_dp_ranks":
        return f"median of {scope['dp_size']} DP ranks' untagged lines, not their sum"
    return ""


def throughput_scope_title(scope: dict | None) -> str:
    """The longer why of throughput_scope_text (a tooltip), "" when it does not apply."""
    kind = (scope or {}).get("kind")
    if kind == "sum_over_dp_ranks":
        return "each DP rank logs its own rate; the figure adds them up per window"
    if kind == "untagged_dp_ranks":
        return ("each DP rank logs its own rate, but these lines carry no DP tag, so they cannot be told "
                "apart and added up per window: the figure is about one rank's rate, not the server's")
    return ""
