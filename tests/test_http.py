"""runs/http.py: the one CSV writer every download goes through."""

import csv
import io
import re
from pathlib import Path

import pytest

from runs.http import csv_cell, csv_download

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("cell", "written"), [
    ("=HYPERLINK(\"http://x.example\")", "'=HYPERLINK(\"http://x.example\")"),
    ("+1+cmd", "'+1+cmd"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("  =1+1", "'  =1+1"), ("eagle3 2-step", "eagle3 2-step"), (-3.5, -3.5), (None, None), (True, True),
])
def test_a_cell_a_spreadsheet_would_run_is_written_as_text(cell, written):
    assert csv_cell(cell) == written


def test_the_download_is_an_attachment_of_neutralised_rows():
    response = csv_download("x.csv", [["name", "value"], ["=1+1", -2]])
    assert response["Content-Disposition"] == 'attachment; filename="x.csv"'
    assert list(csv.reader(io.StringIO(response.content.decode()))) == [["name", "value"], ["'=1+1", "-2"]]


def test_no_code_writes_csv_but_the_one_writer():
    # Every export (compare, sweep, and any added later) goes through csv_download.
    writers = [str(p.relative_to(ROOT)) for app in ("runs", "ingest", "webapp") for p in (ROOT / app).rglob("*.py")
               if re.search(r"csv\.writer|text/csv", p.read_text())]
    assert writers == ["runs/http.py"]
