"""The public corpus: real excerpts that users published (tests/corpus/SOURCES.md), each with key
fields written down by reading the excerpt, never by running the parser. Every golden field must
match `parselog --json`; the test prints how many do (K/N) so a regression shows its size."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingest.management.commands.parselog import parse_file
from ingest.parsers import ParseError

CORPUS = Path(__file__).parent / "corpus"
GOLDENS = sorted(CORPUS.rglob("*.golden.json"))
_MISSING = object()


def lookup(parsed: object, dotted: str) -> object:
    """`serving_blocks.1.request_rate` -> parsed["serving_blocks"][1]["request_rate"]; _MISSING when a
    step is absent (a missing key is a wrong field, not a null one)."""
    node = parsed
    for part in dotted.split("."):
        if isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                return _MISSING
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return _MISSING
    return node


def same(expected: object, actual: object) -> bool:
    """Numbers as printed in a log are rounded: equal within the last printed digit's half (at
    least 0.1% relative); everything else exactly."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        tolerance = max(abs(expected) * 1e-3, _half_last_digit(expected))
        return math.isclose(expected, actual, abs_tol=tolerance)
    return expected == actual


def _half_last_digit(value: float) -> float:
    text = repr(value)
    if "e" in text or "." not in text:
        return 0.0
    return 0.5 * 10 ** -len(text.split(".")[1])


def check(golden_path: Path) -> list[str]:
    golden = json.loads(golden_path.read_text())
    excerpt = golden_path.parent / golden["excerpt"]
    try:
        parsed = parse_file(excerpt)
    except ParseError as e:  # a file read as no format: every field of it is wrong, the others still count
        return [f"{excerpt.relative_to(CORPUS)}: {dotted}: not parsed ({e.message})" for dotted in golden["fields"]]
    wrong = []
    for dotted, expected in golden["fields"].items():
        actual = lookup(parsed, dotted)
        if actual is _MISSING or not same(expected, actual):
            shown = "missing" if actual is _MISSING else json.dumps(actual)
            wrong.append(f"{excerpt.relative_to(CORPUS)}: {dotted}: expected {json.dumps(expected)}, got {shown}")
    return wrong


def test_corpus_has_goldens_with_sources():
    sources = (CORPUS / "SOURCES.md").read_text()
    assert len(GOLDENS) >= 40, f"the corpus holds {len(GOLDENS)} excerpts with goldens, fewer than 40"
    for golden_path in GOLDENS:
        golden = json.loads(golden_path.read_text())
        assert (golden_path.parent / golden["excerpt"]).exists(), golden_path
        assert golden["fields"], f"{golden_path} checks no field"
        assert golden["excerpt"].split("/")[-1] in sources, f"{golden['excerpt']} has no row in SOURCES.md"


def test_every_golden_field_matches_parselog(capsys):
    wrong: list[str] = []
    total = 0
    for golden_path in GOLDENS:
        total += len(json.loads(golden_path.read_text())["fields"])
        wrong += check(golden_path)
    with capsys.disabled():
        print(f"\ncorpus: {total - len(wrong)}/{total} golden fields right in {len(GOLDENS)} excerpts")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("dotted,expected", [
    ("a.1.b", 2), ("a.-1.b", 2), ("a.2.b", _MISSING), ("c", _MISSING), ("d", None),
])
def test_lookup_walks_dicts_and_lists(dotted, expected):
    assert lookup({"a": [{"b": 1}, {"b": 2}], "d": None}, dotted) is expected or \
        lookup({"a": [{"b": 1}, {"b": 2}], "d": None}, dotted) == expected


def test_numbers_match_within_their_printed_precision():
    assert same(2.57, 2.5749) and not same(2.57, 2.58)
    assert same(94, 94.0) and not same(94, 95)
    assert not same(None, 0) and not same("LL", "ll")
