"""Chart pages at 100k windows a run (issue 10): the comparison page and API of 10 runs, and
one run's page; server time p50 of 10 requests each and page sizes, through Django's test client.

Makes its own database (`test_<name>_series_bench`, dropped at the end unless --keep), fills
`--runs` runs of `--windows` windows straight into the row tables (tests/synthetic.py), computes
their stored series when the code has them (runs/series.py), then times the pages.
Usage: python bench/series.py [--runs 10] [--windows 100000] [--repeat 10] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from runs.models import Membership, Project, Run  # noqa: E402
from tests.synthetic import make_run  # noqa: E402

try:
    from runs.series import fresh_series
except ImportError:  # the code before stored series: pages read every row
    fresh_series = None
if "series" not in {f.name for f in Run._meta.get_fields()}:
    fresh_series = None


def timed(client: Client, url: str, repeat: int) -> dict:
    times, cpu, size, body = [], [], 0, b""
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)  # this process's CPU: the view, not PostgreSQL
        assert response.status_code == 200, (url, response.status_code)
        body = response.content
        size = len(body)
    return {"url": url, "p50_ms": round(1000 * statistics.median(times), 1), "max_ms": round(1000 * max(times), 1),
            "cpu_p50_ms": round(1000 * statistics.median(cpu), 1), "bytes": size, "body": body}


def max_points(body: bytes) -> int:
    """The longest trace of the page's embedded figures (json_script blocks)."""
    longest = 0
    for block in re.findall(rb'<script id="chart-[^"]*" type="application/json">(.*?)</script>', body, re.S):
        for trace in json.loads(block)["data"]:
            longest = max(longest, len(trace.get("x") or []))
    return longest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--windows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    settings.ALLOWED_HOSTS = ["*"]
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"test_{old_name}_series_bench"
    connection.creation.create_test_db(verbosity=0, keepdb=args.keep, serialize=False)
    try:
        user = User.objects.filter(username="bench").first() or User.objects.create_user("bench", password="x")
        project, _ = Project.objects.get_or_create(name="bench")
        Membership.objects.get_or_create(project=project, user=user)
        runs = list(Run.objects.filter(project=project).order_by("id"))
        start = time.perf_counter()
        while len(runs) < args.runs:
            runs.append(make_run(project, user, args.windows, name=f"bench-{len(runs)}"))
        fill = time.perf_counter() - start
        series_s = None
        if fresh_series is not None:
            start = time.perf_counter()
            for run in runs:
                run.series = fresh_series(run)
                run.save(update_fields=["series"])
            series_s = (time.perf_counter() - start) / len(runs)
        client = Client()
        client.force_login(user)
        ids = ",".join(str(r.id) for r in runs)
        results = {
            "compare_page": timed(client, f"/compare/?runs={ids}&baseline={runs[0].id}", args.repeat),
            "compare_api": timed(client, f"/api/v1/compare?runs={ids}&baseline={runs[0].id}", args.repeat),
            "run_page": timed(client, f"/runs/{runs[0].id}/", args.repeat),
        }
        print(f"code: {Path(sys.modules['runs'].__file__ or '').parent}")
        print(f"{args.runs} runs x {args.windows} windows; rows filled in {fill:.1f} s; "
              f"series per run {series_s if series_s is None else round(series_s, 2)} s")
        for name, r in results.items():
            points = max_points(r.pop("body"))
            print(f"{name:13} p50 {r['p50_ms']:9.1f} ms  max {r['max_ms']:9.1f} ms  cpu p50 {r['cpu_p50_ms']:8.1f} ms"
                  f"  {r['bytes']:>10,} bytes  longest trace {points} points")
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        if not args.keep:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
