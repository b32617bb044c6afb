"""The one formatting of a figure (runs/display.py); tests/browser/test_figures_browser.py checks
the live list's script gives the same text."""

from decimal import Decimal

import pytest

from runs import display

# (value, kind, text): the table both implementations must agree on.
TABLE = [
    (94.05, "tok_s", "94.1"),  # f"{94.05:.1f}" says 94.0: the binary value is 94.04999...
    (94.04, "tok_s", "94.0"),
    (472.8, "throughput_tok_s", "472.8"),
    (61.7, "tok_s", "61.7"),
    (0.25, "tok_s", "0.3"),  # an exact binary tie: half away from zero
    (-0.25, "tok_s", "-0.3"),
    (1.005, "ms", "1.01"),
    (4.075, "verify_ms", "4.08"),
    (19.145, "cycle_ms", "19.15"),
    (2.605, "tokens_per_cycle", "2.61"),
    (1.0, "tokens", "1.00"),
    (-0.004, "ms", "0.00"),  # never "-0.00"
    (-0.04, "tok_s", "0.0"),
    (95.05, "pct", "95.1"),
    (0.0, "tok_s", "0.0"),
    (1e-7, "ms", "0.00"),
    (0.005, "ms", "0.01"),
    (1234567.85, "tok_s", "1234567.9"),
    (1e21, "tok_s", "1000000000000000000000.0"),
    (5452.63, "tok_s", "5452.6"),
    (7, "ms", "7.00"),
    (0.785, "p", "0.79"),
    (12.5, 0, "13"),
    (-34.5, 0, "-35"),
    (2.675, "phase:Target verify", "2.68"),
    (2.675, "metric:cycle_ms", "2.68"),
    (3.14159, "no_such_kind", "3.14"),
    (None, "tok_s", "—"),
    (float("nan"), "tok_s", "—"),
    (float("inf"), "ms", "—"),
]


@pytest.mark.parametrize(("value", "kind", "text"), TABLE)
def test_figure_rounds_the_shortest_decimal_half_away_from_zero(value, kind, text):
    assert display.figure(value, kind) == text


def test_signed_deltas_show_their_sign_and_no_negative_zero():
    assert [display.signed(v, "ms") for v in (1.005, -0.4, -0.001, 0, None)] == ["+1.01", "-0.40", "0.00", "0.00", "—"]


def test_csv_values_are_numbers_with_the_pages_places():
    assert display.csv_value(94.05, "throughput_tok_s") == Decimal("94.1")
    assert str(display.csv_value(4.0, "cycle_ms")) == "4.00"
    assert display.csv_value(None, "ms") is None


def test_throughput_scope_text_says_the_sum_over_dp_ranks():
    scope = {"kind": "sum_over_dp_ranks", "ranks": 4, "dp_size": 4, "dp_attention": True}
    assert display.throughput_scope_text(scope) == "sum over 4 DP ranks (DP attention)"
    assert display.throughput_scope_text({**scope, "dp_attention": False}) == "sum over 4 DP ranks"
    assert display.throughput_scope_text(None) == ""


def test_throughput_scope_text_says_untagged_dp_lines_are_not_a_sum():
    scope = {"kind": "untagged_dp_ranks", "ranks": None, "dp_size": 2, "dp_attention": True}
    assert display.throughput_scope_text(scope) == "median of 2 DP ranks' untagged lines, not their sum"
    assert "cannot be told apart" in display.throughput_scope_title(scope)
    assert display.throughput_scope_title(None) == ""
