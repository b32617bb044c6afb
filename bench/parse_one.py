"""Parse one log as `manage.py parselog` does (its own parse_file: the parse, the digest, the
summary) and print the seconds that took, start-up left out, and the CPU seconds it used: what
bench/run.py's mixes section times, in a process of its own (its peak RSS is the parse's). The CPU
seconds say what the parse costs where other work shares the cores (wall time then grows, CPU does not)."""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django  # noqa: E402

django.setup()

from ingest.management.commands.parselog import parse_file  # noqa: E402
from ingest.parsers import native  # noqa: E402

if __name__ == "__main__":
    native.hold_heap()  # as parselog does
    gc.freeze()  # as parselog does
    start, cpu = time.perf_counter(), time.process_time()
    parse_file(Path(sys.argv[1]))
    print(f"{time.perf_counter() - start:.6f} {time.process_time() - cpu:.6f}")
