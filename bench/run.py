"""Benchmarks (`make bench`): parse throughput and memory on a generated log.

Targets live here, not in timed tests: a 1 GB mixed log must parse with flat memory (peak RSS
independent of file size). Usage: python bench/run.py [--size-mb 1024] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingest.parsers import parse_stream  # noqa: E402

# One window as a real server prints it: a decode line, a profile block, NCCL and HTTP noise.
BLOCK = """[2026-11-29 21:06:31 TP0] Decode batch. #running-req: 1, #token: 224, token usage: 0.00, accept len: 2.24, \
cuda graph: False, gen throughput (token/s): 466.32, #queue-req: 0
[EAGLE3_PROFILE] window=100 cycles, steps=2
  Draft:               0.56 ms/cyc  ( 11.8%)
  Target verify:       4.02 ms/cyc  ( 83.6%)
  Accept:              0.22 ms/cyc  (  4.5%)
  Cycle total:         4.80 ms/cyc
  Accept len:          1.24
  Throughput:         466.3 tok/s
vm:1560:1560 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM
[2025-01-07 20:16:02] INFO:     127.0.0.1:41452 - "GET /get_model_info HTTP/1.1" 200 OK
"""


def generate(path: Path, size_mb: int) -> None:
    if path.exists() and path.stat().st_size >= size_mb << 20:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = (BLOCK * 1000).encode()
    with open(path, "wb") as f:
        head = Path(ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_bytes()
        f.write(head)
        written = len(head)
        while written < size_mb << 20:
            f.write(chunk)
            written += len(chunk)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=int(os.environ.get("BENCH_SIZE_MB", "1024")))
    ap.add_argument("--keep", action="store_true", help="keep the generated log in var/bench")
    args = ap.parse_args()
    path = ROOT / "var" / "bench" / f"mixed-{args.size_mb}mb.log"
    generate(path, args.size_mb)
    size = path.stat().st_size
    before = rss_mb()
    start = time.perf_counter()
    with open(path, "rb") as f:
        # The worker hands rows to the database in batches; here they are counted and dropped.
        result = parse_stream(f, sink=lambda r: r.take_rows())
    elapsed = time.perf_counter() - start
    print(f"parse {size / 2**20:.0f} MiB mixed log: {elapsed:.1f} s, {size / 2**20 / elapsed:.1f} MiB/s, "
          f"{result.lines / elapsed / 1e3:.0f}k lines/s, {result.record_count} records")
    print(f"peak RSS {rss_mb():.0f} MiB (before parse {before:.0f} MiB)")
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    main()
