"""Bench inputs built from real logs: each mix is one kind of real content, repeated to a size.

The generator's log (loggen.py) holds the line kinds the native scanner was made fast for; a
real log holds others (NCCL start-up of every kind, vLLM metrics, bench result blocks,
nccl-tests rows). So the parse figure is measured per mix of real content, each on its own:

- `nccl_startup`  every line naming NCCL (INFO/WARN lines, launch and environment lines) of every
                  source but nccl-tests tables: the start-up of serving logs, public NCCL/RCCL logs
- `decode`        SGLang decode/prefill lines and EAGLE profile blocks only
- `vllm`          whole vLLM logs (V0/V1 metrics, `vllm bench serve` result blocks) and the
                  serving bench blocks of SGLang's `bench_serving` (the same block shape)
- `nccl_tests`    whole nccl-tests outputs (tables, headers, echoed commands)
- `generator`     loggen's synthetic serving log (what the bench measured before)

A file's kind is read from its content, not its name, so a kept-back set of real logs dropped
in a directory (`--mix-source DIR`) is sorted the same way. Pure: no processes, no timing
(bench/run.py measures; tests/test_bench.py checks what is built).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from bench.loggen import cached_log

ROOT = Path(__file__).resolve().parent.parent
MIXES = ("nccl_startup", "decode", "vllm", "nccl_tests", "generator")
# Odd input that made a cliff (made here, not real): blank lines after one tagged line; SGLang decode
# lines every one `[date TPn]` (no "main" process ever); EAGLE profile blocks of distinct phase names.
CLIFFS = ("blank_lines", "tagged_decode", "distinct_names")
DECODE_LINE = ("[2026-11-29 21:06:{:02d} TP0] Decode batch. #running-req: 1, #token: 224, token usage: 0.00, "
               "accept len: 2.24, cuda graph: False, gen throughput (token/s): 466.32, #queue-req: 0\n")
TEXT_SUFFIXES = {".log", ".txt", ".out", ".sh"}


def default_sources() -> list[Path]:
    """The real logs: the repository's samples and public corpus, and the shared samples (GPU
    recordings, public excerpts) where this machine has them."""
    roots = [ROOT / "samples", ROOT / "tests" / "corpus"]
    shared = os.environ.get("RUNLENS_SHARED_SAMPLES")
    if shared:
        roots += [Path(shared) / "gpu", Path(shared) / "public"]
    return [r for r in roots if r.is_dir()]


def source_files(roots: Iterable[Path]) -> list[Path]:
    """Every text log under `roots`, each content once (the public corpus copies shared samples)."""
    seen: set[bytes] = set()
    out = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
                continue
            data = path.read_bytes()
            if data in seen or b"\x00" in data[:8192]:
                continue
            seen.add(data)
            out.append(path)
    return out


def kind(text: str) -> str | None:
    """What a whole file is, by its content: "nccl_tests", "vllm" or None (kept for line filters)."""
    if "busbw" in text and ("out-of-place" in text or "Avg bus bandwidth" in text):
        return "nccl_tests"
    low = text.lower()
    if "vllm" in low or "specdecoding metrics" in low or "speculative metrics" in low \
            or "avg prompt throughput" in low or "speculative decoding---" in low \
            or "serving benchmark result" in low or "draft acceptance rate" in low:
        return "vllm"
    return None


def nccl_lines(lines: list[str]) -> Iterator[str]:
    return (line for line in lines if "NCCL" in line)


def decode_lines(lines: list[str]) -> Iterator[str]:
    """SGLang decode/prefill lines and EAGLE profile blocks (the header and its indented lines)."""
    block = False
    for line in lines:
        if "Decode batch" in line or "Prefill batch" in line:
            block = False
            yield line
        elif line.startswith("[EAGLE") and "PROFILE]" in line:
            block = True
            yield line
        elif block and line.startswith("  "):
            yield line
        else:
            block = False


def whole(lines: list[str]) -> Iterator[str]:
    return iter(lines)


# mix -> (which files, which of their lines)
PICK: dict[str, tuple[Callable[[str | None], bool], Callable[[list[str]], Iterator[str]]]] = {
    "nccl_startup": (lambda k: k != "nccl_tests", nccl_lines),
    "decode": (lambda k: k is None, decode_lines),
    "vllm": (lambda k: k == "vllm", whole),
    "nccl_tests": (lambda k: k == "nccl_tests", whole),
}


def unit(mix: str, files: Iterable[Path]) -> bytes:
    """One pass of a mix over its real sources: the lines it takes, file after file."""
    takes, lines_of = PICK[mix]
    out: list[str] = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        if not takes(kind(text)):
            continue
        lines = text.splitlines()
        out.extend(lines_of(lines))
    return ("\n".join(out) + "\n").encode() if out else b""


def cliff(mix: str, size_bytes: int) -> Iterator[bytes]:
    """The pieces of a cliff input of about `size_bytes`."""
    if mix == "blank_lines":
        yield DECODE_LINE.format(0).encode()
        yield b"\n" * size_bytes
    elif mix == "tagged_decode":
        block = "".join(DECODE_LINE.format(i % 60) for i in range(1000)).encode()
        for _ in range(-(-size_bytes // len(block))):
            yield block
    else:
        yield b"[EAGLE3_PROFILE] window=100 cycles, steps=2\n"
        n = 0
        while n < size_bytes:
            piece = "".join(f"  Phase {n + i}: 0.5 ms/cyc\n" for i in range(1000)).encode()
            n += len(piece)
            yield piece


def write_mix(path: Path, mix: str, size_bytes: int, roots: Iterable[Path] | None = None) -> Path:
    """A file of at least `size_bytes` (one unit at least): the mix's unit, repeated."""
    if mix == "generator":
        return cached_log(path, size_bytes=size_bytes)
    if mix in CLIFFS:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            for piece in cliff(mix, size_bytes):
                f.write(piece)
        return path
    files = source_files(default_sources() if roots is None else roots)
    body = unit(mix, files)
    if not body:
        raise ValueError(f"no source holds any {mix} content")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    with open(tmp, "wb") as f:
        written = 0
        while written < size_bytes or not written:
            f.write(body)
            written += len(body)
    tmp.replace(path)
    return path


def describe(mix: str, roots: Iterable[Path] | None = None) -> dict:
    """Which real files a mix is made of, for results.json (the table says what is real)."""
    if mix == "generator" or mix in CLIFFS:
        return {"real": False, "files": []}
    files = source_files(default_sources() if roots is None else roots)
    takes, lines_of = PICK[mix]
    used = []
    for p in files:
        text = p.read_bytes().decode("utf-8", errors="replace")
        if takes(kind(text)) and any(True for _ in lines_of(text.splitlines())):
            used.append(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p))
    return {"real": True, "files": used}
