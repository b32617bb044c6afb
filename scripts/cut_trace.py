"""Cut a few cycles out of a PyTorch profiler trace, verbatim: the repository's test trace.

    .venv/bin/python scripts/cut_trace.py samples/traces/trace_spec_k2.json.gz \
        samples/traces/trace_spec_k2_3cycles.json.gz --first 5 --last 7

Keeps the top-level keys written before `traceEvents` (devices, versions) as they are, every
metadata event (`ph: M`: process and thread names), and every other event whose start lies inside
the CPU ranges `cycle_FIRST` .. `cycle_LAST` (the GPU finishes each cycle inside it: the loop
synchronises at its end). Events are copied one by one (a float's repr reads back the same
number), in the file's order; nothing is computed or changed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

import ijson


def _open(path: str):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--last", type=int, required=True)
    a = p.parse_args(argv)
    wanted = {f"cycle_{n}" for n in range(a.first, a.last + 1)}
    lo, hi = float("inf"), float("-inf")
    with _open(a.source) as f:
        for ev in ijson.items(f, "traceEvents.item", use_float=True):
            if ev.get("cat") == "user_annotation" and ev.get("name") in wanted:
                lo, hi = min(lo, ev["ts"]), max(hi, ev["ts"] + ev["dur"])
    if lo == float("inf"):
        print(f"no CPU ranges cycle_{a.first}..cycle_{a.last} in {a.source}", file=sys.stderr)
        return 1
    with _open(a.source) as f:
        head = f.read(1 << 20)
    at = head.find(b'"traceEvents"')
    top = json.loads(head[:at].rstrip().rstrip(b",") + b"}")
    kept = 0
    with gzip.open(a.out, "wt", compresslevel=9) as out, _open(a.source) as f:
        out.write(json.dumps(top, indent=1)[:-2] + ',\n"traceEvents": [\n')
        first = True
        for ev in ijson.items(f, "traceEvents.item", use_float=True):
            ts = ev.get("ts")
            if ev.get("ph") == "M" or (isinstance(ts, float | int) and lo <= ts <= hi):
                out.write(("" if first else ",\n") + json.dumps(ev))
                first = False
                kept += 1
        out.write("\n]}\n")
    print(f"{a.out}: {kept} events of cycles {a.first}..{a.last} ({lo:.3f} .. {hi:.3f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
