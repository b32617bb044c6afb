"""What pages read from a query string: typed values, and what a page cannot read is left out."""

from __future__ import annotations

from django.http import QueryDict

from runs import forms
from runs.series import ZOOM_MAX_WINDOWS


def test_ids_come_in_order_once_each_from_both_spellings():
    assert forms.run_ids(QueryDict("runs=7,3,x,7&run=9&run=3")) == [7, 3, 9]
    assert forms.parse_ids(" 4 , 5,,") == [4, 5]


def test_only_ascii_digits_of_a_size_the_database_takes_are_ids():
    assert forms.is_int("42") and not forms.is_int("²") and not forms.is_int("-1")
    assert not forms.is_int("1" * 19) and not forms.is_int(None)
    assert forms.optional_id("7") == 7 and forms.optional_id("seven") is None and forms.optional_id(None) is None


def test_a_zoom_is_a_range_of_positive_windows_capped_in_length():
    assert forms.zoom_from_query(QueryDict("from=10&to=20")) == (10, 20)
    assert forms.zoom_from_query(QueryDict("from=20&to=10")) is None
    assert forms.zoom_from_query(QueryDict("from=0&to=0")) is None
    assert forms.zoom_from_query(QueryDict("from=a&to=5")) is None
    assert forms.zoom_from_query(QueryDict("from=1&to=999999")) == (1, ZOOM_MAX_WINDOWS)


def test_a_target_is_a_positive_number_or_nothing():
    assert forms.positive_float("120.5") == 120.5
    assert forms.positive_float("-3") is None and forms.positive_float("abc") is None
    assert forms.positive_float("") is None and forms.positive_float("1e9") is None


def test_run_list_filters_drop_what_does_not_validate_and_keep_the_rest():
    filters = forms.filters_from_query(QueryDict("q=eagle&steps=two&status=ready&ignored=1"))
    assert filters.q == "eagle" and filters.steps is None and filters.status == "ready"
