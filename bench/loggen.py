"""Synthetic mixed logs for the benchmark: NCCL start-up, then windows as a real SGLang EAGLE3
server prints them (a decode line, a profile block, an NCCL channel line, HTTP noise).

Numbers vary from window to window (a seeded generator) so the log is not one block repeated;
the start-up is this project's own recording (samples/spec_eagle3_tuned_2step.log).
"""

from __future__ import annotations

import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAD_SAMPLE = ROOT / "samples" / "spec_eagle3_tuned_2step.log"
VARIANTS = 1000  # distinct windows; the file cycles through them


def window(rng: random.Random) -> str:
    """One window of a serving log (11 lines, ~900 bytes)."""
    draft, verify, accept = rng.uniform(0.5, 0.6), rng.uniform(3.9, 4.2), rng.uniform(0.2, 0.25)
    total = draft + verify + accept
    accept_len = rng.uniform(1.1, 1.4)
    tput = 1000 * (accept_len + 1) / total
    sec, port = rng.randrange(60), rng.randrange(30000, 60000)
    return (
        f"[2026-11-29 21:06:{sec:02d} TP0] Decode batch. #running-req: 1, #token: {rng.randrange(100, 900)}, "
        f"token usage: 0.00, accept len: {accept_len + 1:.2f}, cuda graph: False, "
        f"gen throughput (token/s): {tput:.2f}, #queue-req: 0\n"
        "[EAGLE3_PROFILE] window=100 cycles, steps=2\n"
        f"  Draft:               {draft:.2f} ms/cyc  ({100 * draft / total:5.1f}%)\n"
        f"  Target verify:       {verify:.2f} ms/cyc  ({100 * verify / total:5.1f}%)\n"
        f"  Accept:              {accept:.2f} ms/cyc  ({100 * accept / total:5.1f}%)\n"
        f"  Cycle total:         {total:.2f} ms/cyc\n"
        f"  Accept len:          {accept_len:.2f}\n"
        f"  Throughput:         {tput:.1f} tok/s\n"
        "vm:1560:1560 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
        f'[2025-01-07 20:16:02] INFO:     127.0.0.1:{port} - "GET /get_model_info HTTP/1.1" 200 OK\n'
    )


def windows_text(count: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(window(rng) for _ in range(count))


def write_log(path: Path, *, size_bytes: int | None = None, windows: int | None = None,
              label: str = "", seed: int = 0) -> Path:
    """Write a mixed log of at least `size_bytes`, or of exactly `windows` windows after the
    start-up. `label` (a comment line at the top) makes logs of equal content differ: uploads
    of the same content to a project give back the first run."""
    if (size_bytes is None) == (windows is None):
        raise ValueError("give size_bytes or windows")
    path.parent.mkdir(parents=True, exist_ok=True)
    head = HEAD_SAMPLE.read_bytes()
    cycle = windows_text(VARIANTS, seed).encode()
    per_window = len(cycle) / VARIANTS
    tmp = path.with_suffix(path.suffix + ".part")
    with open(tmp, "wb") as f:
        if label:
            f.write(f"# runlens bench log {label}\n".encode())
        f.write(head)
        if windows is not None:
            full, rest = divmod(windows, VARIANTS)
            for _ in range(full):
                f.write(cycle)
            f.write(windows_text(rest, seed).encode())
        else:
            assert size_bytes is not None
            written = f.tell()
            while written + len(cycle) <= size_bytes:
                f.write(cycle)
                written += len(cycle)
            if written < size_bytes:
                f.write(windows_text(int((size_bytes - written) / per_window) + 1, seed).encode())
    tmp.replace(path)
    return path


def cached_log(path: Path, **kwargs) -> Path:
    """The log at `path`, generated once: a `.ok` stamp beside it records what it was made with."""
    stamp = path.with_suffix(path.suffix + ".ok")
    want = repr(sorted(kwargs.items()))
    if path.exists() and stamp.exists() and stamp.read_text() == want:
        return path
    write_log(path, **kwargs)
    stamp.write_text(want)
    return path
