"""The checkout itself: what a clone on another operating system would trip on."""

from __future__ import annotations

import subprocess
from collections import defaultdict

from tests.samples import PROJECT_ROOT


def test_no_two_tracked_paths_differ_only_in_case():
    """macOS and Windows file systems ignore case: two such files are one there, and a checkout
    silently loses one (docs/RELIABILITY.md beside docs/reliability.md did)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert len(tracked) > 100
    by_fold: defaultdict[str, list[str]] = defaultdict(list)
    for path in tracked:
        by_fold[path.casefold()].append(path)
    assert [paths for paths in by_fold.values() if len(paths) > 1] == []
