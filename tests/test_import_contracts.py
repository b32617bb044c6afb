"""The import contracts of pyproject.toml (the arrows of docs/architecture.md) catch an import
that points the wrong way: lint-imports on a copy of the code with such imports planted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.samples import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
# module file -> an import it must not have, and the contract that says so
PLANTED = {
    "ingest/parsers/text.py": ("from runs import models", "Parsers are a leaf"),
    "runs/sweep.py": ("from runs import queries", "Pure analysis modules touch no database"),
    "runs/verdict.py": ("import django", "Pure analysis modules touch no database"),
    "runs/trend.py": ("from ingest import storage", "The domain's models, reads and pure analysis never import ingest"),
    "runs/services.py": ("from webapp import urls", "Layers: webapp above runs and ingest"),
}


def _copy(tmp: Path) -> Path:
    root = tmp / "code"
    for package in ("webapp", "runs", "ingest"):
        shutil.copytree(PROJECT_ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "static", "migrations"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root)
    return root


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_the_contracts_hold_on_the_code_as_it_is(tmp_path):
    result = _lint(_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_planted_wrong_way_import_breaks_its_contract(tmp_path):
    root = _copy(tmp_path)
    for module, (line, _) in PLANTED.items():
        path = root / module
        path.write_text(path.read_text() + f"\n{line}  # planted\n")
    result = _lint(root)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    for module, (_, contract) in PLANTED.items():
        assert any(line.startswith(contract) for line in broken), (module, contract, result.stdout)
        assert module.removesuffix(".py").replace("/", ".") in result.stdout
