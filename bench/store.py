"""Ingest one generated mixed log through ingest.services.parse_logfile on the configured database
(DATABASE_URL), then paste an NCCL annotation on the run: seconds, MiB/s, peak RSS (issue 10).

    DATABASE_URL=postgres://.../db .venv/bin/python bench/store.py --size-mb 128

Creates a user `bench` and a run in project `bench` each time (the database is a scratch one).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench.loggen import cached_log  # noqa: E402
from ingest import registration, services  # noqa: E402
from runs import columns  # noqa: E402
from runs.models import Annotation, Run  # noqa: E402
from runs.services import add_annotation  # noqa: E402


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--annotate", type=int, help="only paste an NCCL annotation on this run (a fresh process)")
    args = ap.parse_args()
    if args.annotate:
        return annotate(args.annotate)
    call_command("migrate", verbosity=0)
    path = cached_log(ROOT / "bench" / "data" / f"mixed-{args.size_mb}mb.log", size_bytes=args.size_mb << 20)
    size = path.stat().st_size
    user, _ = User.objects.get_or_create(username="bench")
    with open(path, "rb") as f:
        run, _ = registration.register_upload(user, [registration.IncomingFile(path.name, f, size)], project="bench",
                                             create_project=True)
    lf = run.logfiles.get()
    before = peak_mb()
    start, cpu = time.perf_counter(), cpu_s()
    status = services.parse_logfile(lf.id)
    took, cpu = time.perf_counter() - start, cpu_s() - cpu
    run = Run.objects.get(id=run.id)
    rows = columns.row_count(run.id)
    print(f"ingest {size / 2**20:.0f} MiB: {status} in {took:.1f} s, {size / 2**20 / took:.2f} MiB/s, "
          f"worker CPU {cpu:.1f} s, {rows} phase+metric rows, {run.windows} windows; peak RSS {peak_mb():.0f} MiB "
          f"(before the parse {before:.0f} MiB)")
    print(f"parsed JSON of the run: {len(json.dumps(run.parsed)) / 1024:.0f} KiB; "
          f"annotate with: bench/store.py --annotate {run.id}")


def annotate(run_id: int) -> None:
    run = Run.objects.get(id=run_id)
    user = User.objects.get(username="bench")
    before = peak_mb()
    start, cpu = time.perf_counter(), cpu_s()
    add_annotation(user, run, Annotation.Kind.NCCL, "NCCL_PROTO=Simple\n")
    took, cpu = time.perf_counter() - start, cpu_s() - cpu
    print(f"NCCL annotation on run {run_id} ({run.windows} windows): {took * 1000:.0f} ms (CPU {cpu * 1000:.0f} ms), "
          f"peak RSS {peak_mb():.0f} MiB (before it {before:.0f} MiB)")


if __name__ == "__main__":
    main()
