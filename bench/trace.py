"""The trace mix of `make bench`: reading a PyTorch profiler trace (issue 26's targets).

A 1 GB trace is built by repeating the cycles of this project's own H200 recording
(samples/traces/trace_spec_k2_3cycles.json.gz, cycles 5-7 of the shared sample): each copy's
events moved on in time by the recording's span, its `cycle_N` ranges renumbered and its
External ids and correlations offset, so the copies are distinct cycles of one long trace (the
events themselves are the recording's). `ingest.parsers.trace.parse` reads it in a process of its
own: the rate is the trace's uncompressed JSON over the process's CPU time (user + system, from
wait4: the reader is one thread, so this is one core's work, whatever else the machine runs; the
wall time is reported beside it), the peak RSS from wait4 too.

    python bench/run.py --sections trace            # 1024 MB
    python bench/run.py --sections trace --quick    # 64 MB
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import time
from pathlib import Path

from bench import report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "traces" / "trace_spec_k2_3cycles.json.gz"
RATE_MB_S = 50
RSS_MB = 300
_CYCLE = re.compile(r"^cycle_(\d+)$")


def build(path: Path, size_bytes: int) -> Path:
    """The sample's cycles repeated until the JSON reaches `size_bytes` (kept for the next bench run)."""
    if path.exists() and path.stat().st_size >= size_bytes:
        return path
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), int | float)]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1000.0
    cycles = sorted({int(m.group(1)) for e in timed if (m := _CYCLE.match(str(e.get("name", ""))))})
    ids = max(int((e.get("args") or {}).get("External id", 0) or 0) for e in timed) + 1
    corr = max([int((e.get("args") or {}).get("correlation", 0) or 0) for e in timed] +
               [int(e.get("id", 0) or 0) for e in timed if isinstance(e.get("id"), int)]) + 1
    tmp = path.with_suffix(".part")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as out:
        head = json.dumps(doc)[:-1]
        out.write(head + (", " if doc else "") + '"traceEvents": [\n')
        out.write(",\n".join(json.dumps(e) for e in meta))
        k = 0
        while out.tell() < size_bytes:
            for e in timed:
                c = dict(e, ts=e["ts"] + k * span)
                if (m := _CYCLE.match(str(e.get("name", "")))):
                    c["name"] = f"cycle_{int(m.group(1)) + k * len(cycles)}"
                args = e.get("args")
                if args:
                    args = dict(args)
                    if "External id" in args:
                        args["External id"] += k * ids
                    if "correlation" in args:
                        args["correlation"] += k * corr
                    c["args"] = args
                if isinstance(e.get("id"), int):
                    c["id"] = e["id"] + k * corr
                out.write(",\n" + json.dumps(c))
            k += 1
        out.write("\n]}\n")
    tmp.replace(path)
    return path


def run(argv: list[str]) -> tuple[float, float, int]:
    """A command to its end: (wall seconds, CPU seconds, peak RSS bytes), from wait4."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, status, usage = os.wait4(p.pid, 0)
    except BaseException:
        p.kill()
        p.wait()
        raise
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        assert p.stderr is not None
        raise RuntimeError(f"trace read failed: {p.stderr.read().decode(errors='replace')[-1500:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def section_trace(a, rows: dict, refs: dict, wall, py: str, data: Path, say) -> None:
    """Build (or reuse) the trace, read it twice in a fresh process, judge rate and peak RSS."""
    size_mb = 64 if a.quick else 1024
    path = build(data / f"trace-{size_mb}mb.json", size_mb << 20)
    size = path.stat().st_size
    wall(["cat", str(path)])  # into the page cache, as the parse section does with its log
    read = ("import sys\nfrom ingest.parsers import trace\nt = trace.parse(open(sys.argv[1], 'rb'))\n"
            "print(t['ranks'][0]['kernels'])")
    startup = min(run([py, "-c", "import ingest.parsers.trace"])[1] for _ in range(2))
    say(f"trace read of {size / report.MB:.0f} MB ...")
    runs = [run([py, "-c", read, str(path)]) for _ in range(2)]
    seconds, cpu, rss = min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)
    # Start-up (imports: numpy, ijson) subtracted only when the read clearly outlasts it, as the
    # parse section does: on the quick bench's 64 MB it is a third of the time, on 1 GB nothing.
    excluded = cpu > 2 * startup
    rate = size / report.MB / (cpu - startup if excluded else cpu)
    load = os.getloadavg()[0]
    rows["trace_rate"] = report.Row(
        "trace_rate", "profiler trace read (Kineto JSON), one core", f">= {RATE_MB_S} MB/s of uncompressed JSON",
        f"{rate:.1f} MB/s of CPU time ({size / report.MB:.0f} MB in {cpu:.1f} CPU s, start-up {startup:.2f} s "
        f"{'excluded' if excluded else 'included'}; wall {seconds:.1f} s at load {load:.1f})",
        rate >= RATE_MB_S, {"mb_per_s": round(rate, 2), "cpu_seconds": round(cpu, 3), "wall_seconds": round(seconds, 3),
                            "load_average": round(load, 2), "size_bytes": size})
    rows["trace_rss"] = report.Row(
        "trace_rss", f"trace read peak RSS ({size / report.MB:.0f} MB trace)", f"<= {RSS_MB} MB",
        report.mb(rss), rss <= RSS_MB * report.MB, {"peak_rss_bytes": rss})
    refs["trace_build"] = f"{SAMPLE.name} repeated to {size} bytes"
    say(rows["trace_rate"].measured, "| peak RSS", rows["trace_rss"].measured)
