"""The one formatting of a figure (runs/display.py); tests/browser/test_figures_browser.py checks
the live list's script gives the same text."""

import csv
import io
import json
import re
from decimal import Decimal
from html.parser import HTMLParser

import pytest

from ingest import client as ingest_client
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


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts (nested tags' text included)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _tables(page: str) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def _chart(page: str, element_id: str) -> dict:
    return json.loads(re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page).group(1))


WITNESS = ("throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms", "phase:Draft", "phase:Accept")
LABELS = {"Throughput": "throughput_tok_s", "Tokens / cycle": "tokens_per_cycle", "Cycle": "cycle_ms",
          "Target verify": "verify_ms", "Draft": "phase:Draft", "Accept": "phase:Accept"}


def test_one_run_reads_the_same_on_every_surface(client, alice, bearer, upload_run, capsys):
    """sweep_tuned_2step's cycle (4.255 ms), verify (3.775) and draft (0.145) are stored as binary
    values just under the half: rounding those (Python's :.2f, plotly's %{y:.2f}) said 4.25, 3.77,
    0.14 where the pages said 4.26, 3.78, 0.15. Every surface must now print the same strings."""
    base = upload_run(alice, "spec_eagle3_tuned_2step.log")
    run = upload_run(alice, "sweep/sweep_tuned_2step.log", meta={"baseline": base.id})
    phases = {p["name"]: p["ms"] for p in run.parsed["phases"]}
    stored = {"throughput_tok_s": run.throughput_tok_s, "tokens_per_cycle": run.tokens_per_cycle,
              "cycle_ms": run.cycle_ms, "verify_ms": run.verify_ms, "phase:Draft": phases["Draft"],
              "phase:Accept": phases["Accept"]}
    expected = {key: display.figure(stored[key], key) for key in WITNESS}
    assert expected == {"throughput_tok_s": "522.7", "tokens_per_cycle": "2.20", "cycle_ms": "4.26",
                        "verify_ms": "3.78", "phase:Draft": "0.15", "phase:Accept": "0.23"}
    assert [f"{stored[k]:.2f}" for k in ("cycle_ms", "verify_ms", "phase:Draft")] == ["4.25", "3.77", "0.14"]
    surfaces: dict[str, dict[str, str]] = {}
    client.force_login(alice)

    # The run page: its cards and its phase table.
    page = client.get(f"/runs/{run.id}/").content.decode()
    cards = dict(re.findall(r'<div class="label">([^<]+)</div><div class="value">([^ <]+)', page))
    phase_table = next(t for t in _tables(page) if t[0][:2] == ["Phase", "ms / cycle"])
    surfaces["run page"] = {LABELS[k]: v for k, v in cards.items() if k in LABELS} | {
        LABELS[row[0]]: row[1] for row in phase_table[1:] if row[0] in ("Draft", "Accept")}

    # The comparison page: its summary and phase tables, and the labels of its cycle-breakdown chart.
    page = client.get(f"/compare/?runs={base.id},{run.id}&baseline={base.id}").content.decode()
    tables = _tables(page)
    summary = next(t for t in tables if t[0][0] == "Run" and t[0][1].startswith("Throughput"))
    row = next(r for r in summary if r[0] == run.name)
    by_phase = {r[0]: r[2].split()[0] for r in next(t for t in tables if t[0][0] == "Phase")[1:]}
    surfaces["compare page"] = {key: cell.split()[0] for key, cell in zip(WITNESS[:4], row[1:5], strict=True)} | {
        "phase:Draft": by_phase["Draft"], "phase:Accept": by_phase["Accept"]}
    breakdown = {t["name"]: t["text"][1].split(" ms")[0] for t in _chart(page, "chart-breakdown")["data"]}
    curve_title = _chart(page, f"chart-curve-{run.id}")["layout"]["title"]["text"]
    surfaces["charts"] = {"verify_ms": breakdown["Target verify"], "phase:Draft": breakdown["Draft"],
                          "phase:Accept": breakdown["Accept"],
                          "cycle_ms": re.search(r"at (\S+) ms/cycle", curve_title).group(1)}

    # The comparison's CSV export.
    rows = list(csv.reader(io.StringIO(client.get(
        f"/compare/?runs={base.id},{run.id}&baseline={base.id}&format=csv").content.decode())))
    surfaces["csv"] = {r[3]: r[4] for r in rows[1:] if r[0] == str(run.id) and r[3] in WITNESS}

    # The verdict API, and what the CI client makes of it: the markdown summary and the console.
    verdict = client.get(f"/api/v1/runs/{run.id}/verdict", headers=bearer(alice)).json()
    surfaces["verdict api"] = {f["key"]: f["text"]["value"] for f in verdict["figures"] if f["key"] in WITNESS}
    md = ingest_client.summary_markdown(verdict)
    md_rows = {cells[0]: cells[2] for line in md.splitlines() if line.startswith("| ")
               for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    surfaces["summary markdown"] = {key: md_rows[label] for label, key in
                                    (("Throughput tok/s", "throughput_tok_s"), ("Tokens / cycle", "tokens_per_cycle"),
                                     ("Cycle ms", "cycle_ms"), ("Target verify ms/cyc", "verify_ms"),
                                     ("Draft ms/cyc", "phase:Draft"), ("Accept ms/cyc", "phase:Accept"))}
    ingest_client.print_verdict(verdict)
    console = capsys.readouterr().out
    # The console names the figures that changed beyond the noise: "Cycle better: 4.60 → 4.26 ms (...)".
    surfaces["client console"] = {LABELS[label]: value for label, value in
                                  re.findall(r"^  - (.+?) (?:better|worse): \S+ → (\S+)", console, re.M)}
    assert set(surfaces["client console"]) == {"throughput_tok_s", "cycle_ms", "verify_ms", "phase:Draft"}

    for name, seen in surfaces.items():
        assert seen == {k: expected[k] for k in seen}, name
    assert sum(len(seen) for seen in surfaces.values()) == 6 + 6 + 4 + 6 + 6 + 6 + 4
