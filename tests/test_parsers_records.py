"""ingest/parsers/records.py: the shared result's bounded integers."""

from ingest.parsers.records import MAX_INT_DIGITS, ParseResult


def test_an_integer_within_the_bound_is_read_as_int_reads_it():
    r = ParseResult()
    assert r.read_int("9" * MAX_INT_DIGITS, 1, "pid") == int("9" * MAX_INT_DIGITS)
    assert r.read_int("0" * 40 + "7", 1, "pid") == 7  # leading zeros are no magnitude
    assert r.warnings == []


def test_a_longer_one_is_left_out_with_one_warning_per_field_that_counts_the_others():
    r = ParseResult()
    assert r.read_int("1" * 5000, 3, "pid") is None
    assert r.read_int("1" * 19, 9, "pid") is None
    assert r.read_int("1" * 30, 12, "steps=") is None
    assert [(w.line, w.message) for w in r.warnings] == [
        (3, f"pid has more than {MAX_INT_DIGITS} digits: left out (on this line and 1 other(s))"),
        (12, f"steps= has 30 digits, more than {MAX_INT_DIGITS}: left out"),
    ]
