"""An NCCL_DEBUG log of real lines in which no line repeats: the honest case for the scanner.

bench/mixes.py's `nccl_startup` repeats one pass of real NCCL lines to a size, so past the first
pass every line is one the readers have seen (a repeat is the cheapest line there is). A real
log of many ranks and communicators repeats little: each communicator has its own address,
channel numbers and threads. This takes the same real lines (every line naming NCCL in the NCCL
and serving logs of the repository and the shared samples) and, copy after copy, gives each
copy new thread ids, communicator addresses and channel numbers, and its processes pids from a
pool of JOBS (a copy is a communicator of one of JOBS jobs): the line kinds and their mix stay
real, no line of a copy is a line of another (the thread ids see to it), and the processes stay
as many as a real job has (runs/layout.py's summary is quadratic in them: a file of ten thousand
processes measures that, not the parse).

    RUNLENS_SHARED_SAMPLES=/work/shared/samples .venv/bin/python -m bench.nccl_unique /tmp/nccl-unique.log 32
    .venv/bin/python -m bench.nccl_unique /tmp/nccl-known.log 32 known

`known`: the lines once, then only their INFO lines that act on nothing once their thread is
known (no echo, version, matrix; lower-case hosts), renumbered copy after copy (channels,
addresses, a copy mark) with the threads kept: what the native scanner reads in C, measured alone.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench import mixes

_HEAD = re.compile(r"([^\s:]+):(\d+):(\d+) \[")
_PID_TAG = re.compile(r"\bpid=(\d+)")
_CHANNEL = re.compile(r"\bChannel (\d+)")
_COMM = re.compile(r"\b0x([0-9a-f]{4,16})\b")


JOBS = 8


def copy(lines: list[str], k: int) -> list[str]:
    """Copy `k` of the lines: tids moved by k, pids by k's job, channels renumbered, addresses changed."""
    shift, job = 100_003 * k, 100_003 * (k % JOBS)

    def head(m: re.Match) -> str:
        return f"{m.group(1)}:{int(m.group(2)) + job}:{int(m.group(3)) + shift} ["

    def channel(m: re.Match) -> str:
        return f"Channel {(int(m.group(1)) + k) % 64:0{len(m.group(1))}d}"

    def comm(m: re.Match) -> str:
        return f"0x{int(m.group(1), 16) ^ (k * 0x9E3779B1 & 0xFFFFFFFF):x}"

    out = []
    for line in lines:
        line = _HEAD.sub(head, line, count=1)
        line = _PID_TAG.sub(lambda m: f"pid={int(m.group(1)) + job}", line)
        line = _CHANNEL.sub(channel, line)
        out.append(_COMM.sub(comm, line))
    return out


def unit_lines() -> list[str]:
    text = mixes.unit("nccl_startup", mixes.source_files(mixes.default_sources()))
    return text.decode().splitlines()


_KNOWN = re.compile(r"^[a-z][^\s:]*:\d+:\d+ \[\d+\] NCCL INFO ")
_KEEP_AS_IS = re.compile(r"Channel \d+/\d+ :( +\d+)+$|\brank \d+ n[Rr]anks")  # a mark would change them


def known(lines: list[str], k: int) -> list[str]:
    """Copy `k` of the INFO lines of known threads: channels and addresses renumbered, a mark added."""
    out = []
    for line in lines:
        if not _KNOWN.match(line) or "NCCL_" in line or "CCL version" in line or "Func/Proto" in line:
            continue
        line = _CHANNEL.sub(lambda m: f"Channel {(int(m.group(1)) + k) % 64:0{len(m.group(1))}d}", line)
        line = _COMM.sub(lambda m: f"0x{int(m.group(1), 16) ^ k:x}", line)
        out.append(line if _KEEP_AS_IS.search(line) else f"{line} #{k}")
    return out


def write(path: Path, size: int, kind: str = "unique") -> int:
    lines = unit_lines()
    written, k = 0, 0
    with path.open("w") as f:
        while written < size:
            block = "\n".join(lines if kind == "known" and k == 0 else known(lines, k) if kind == "known"
                              else copy(lines, k)) + "\n"
            f.write(block)
            written += len(block.encode())
            k += 1
    return written


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), int(sys.argv[2]) << 20, *sys.argv[3:4]))
