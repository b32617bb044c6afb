"""Shared fixtures: golden files, sample paths, personas (alice owns, bob is in the team, eve is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.samples import DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true",
        help="rewrite tests/data/golden/*.json from the current parser output (then review the diff)",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare a JSON-able value with tests/data/golden/<name>.json (or rewrite it with --regen-golden)."""

    def check(name: str, value: object) -> None:
        path = DATA / "golden" / f"{name}.json"
        text = json.dumps(value, indent=1, sort_keys=True) + "\n"
        if request.config.getoption("--regen-golden") or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert json.loads(text) == json.loads(path.read_text()), f"differs from {path}"

    return check
