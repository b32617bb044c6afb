"""A fuzz corpus for the native scanner (`make sanitize` runs it under AddressSanitizer and UBSan).

Seeded, so a report is found again: every real log the repository and the shared samples hold,
mutated (bytes flipped, cut at random, spliced with another, lines repeated, numbers made endless,
non-ASCII and NUL bytes, CRLF, very long lines), each parsed by the native engine through the
product's own driver and by the reference engine, which must agree; then direct calls of the C
API with arguments out of range, which must raise, never read out of bounds.

    python scripts/fuzz_scan.py [--inputs N] [--seed S]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingest.parsers import PARSERS, ParseError, _scan, native, nccl_tests, parse_stream  # noqa: E402
from ingest.parsers.records import ParseResult  # noqa: E402
from ingest.parsers.text import clean  # noqa: E402


def sources() -> list[bytes]:
    roots = [ROOT / "samples", ROOT / "tests" / "corpus", ROOT / "tests" / "data"]
    shared = os.environ.get("RUNLENS_SHARED_SAMPLES")
    if shared:
        roots.append(Path(shared))
    out = []
    for root in roots:
        if root.is_dir():
            out += [p.read_bytes() for p in sorted(root.rglob("*"))
                    if p.is_file() and p.suffix in (".log", ".txt", ".sh", ".out")]
    return [b for b in out if b]


def mutate(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    start = rng.randrange(max(len(data) - 12000, 0) + 1)  # at most 12 KB of a log: many inputs a minute
    b = bytearray(data[start:start + 12000])
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(9)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:  # cut
            b = b[:at]
        elif op == 2:  # splice another log in
            other = rng.choice(others)
            s = rng.randrange(len(other) + 1)
            b[at:at] = other[s:s + rng.randint(1, 2000)]
        elif op == 3:  # repeat a line
            lines = bytes(b).split(b"\n")
            k = rng.randrange(len(lines))
            lines[k:k] = [lines[k]] * rng.randint(1, 60)
            b = bytearray(b"\n".join(lines))
        elif op == 4:  # an endless number
            b[at:at] = b"9" * rng.choice([19, 400, 5000])
        elif op == 5:  # non-ASCII, NUL, control bytes
            b[at:at] = rng.choice([b"\xc3\xa9", b"\x00", b"\xff\xfe", b"\x1b[1;36m", b"\r", "µ".encode()])
        elif op == 6:  # CRLF line ends
            b = bytearray(bytes(b).replace(b"\n", b"\r\n"))
        elif op == 7:  # a very long line
            b[at:at] = b"x" * rng.choice([31, 32, 33, 63, 64, 4095])
        else:  # blank and tagged lines
            b[at:at] = rng.choice([b"\n" * 50, b"[2026-01-01 00:00:00 TP7] Decode batch. x: 1\n" * 20])
    return bytes(b)


def parse(data: bytes, engine: str):
    try:
        result = parse_stream(io.BytesIO(data), engine=engine)  # type: ignore[arg-type]
    except ParseError as e:
        return ("ParseError", e.line, e.message)
    return result


def direct_calls(rng: random.Random) -> int:
    """The C API called with arguments out of range: each must raise, never read past a buffer."""
    raised = 0
    scan, state = native.standalone(PARSERS)
    for _ in range(400):
        text = "\n".join(rng.choice(["", "a", "NCCL INFO x", "[EAGLE3_PROFILE] window=1", "  Draft: 1 ms/cyc",
                                      "[1,0]<stdout>:# x", "[12,3]<stderr>:", "[1,0]<stdout>"])
                         for _ in range(rng.randint(0, 6)))
        args = (rng.randint(-3, len(text) + 3), rng.randint(-3, 9), rng.randint(-3, 12), 1, *state,
                rng.choice([0, native.F_MAIN, 127]), rng.randint(-3, 9))
        try:
            scan.scan_text(text, *args)
        except (IndexError, ValueError):
            raised += 1
        try:  # with its dirty lines cleaned in C (text.Text): any list, any place in it, any wide lines
            dirty = sorted(rng.sample(range(-2, 8), rng.randint(0, 3)))
            wide = {rng.randint(-2, 8): rng.choice(["wide é", "> x\u2588", "", b"not a str"])
                    for _ in range(rng.randint(0, 3))}
            scan.scan_text(text, *args, wide, dirty, rng.randint(-1, len(dirty) + 1), clean)
        except (IndexError, ValueError, TypeError):
            raised += 1
        try:  # an MPI-tagged line comes cleaned, a text.MpiLine
            scan.scan([clean(line) for line in text.split("\n")], rng.randint(-3, 9), 1, *state,
                      rng.choice([0, native.F_MAIN]))
        except IndexError:
            raised += 1
    # A chunk's ASCII image made from its bytes: what the decoder makes of any bytes, and a share checked.
    pieces = [b"a", b"\n", b"\r", b"\x00", b"\x80", b"\xc3", b"\xa9", b"\xe2\x96", b"\xf0\x9f\x98", b"\xed\xa0",
              b"\xf4\x90", b"\xff", b"x" * 31, "\u2588".encode(), "\U0001f600".encode()]
    for _ in range(2000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        data = data[rng.randint(0, 2):] if rng.random() < 0.3 else data
        decoded = data.decode("utf-8", "replace")
        lines = decoded.split("\n")
        wide = {i: line for i, line in enumerate(lines) if not line.isascii()}
        share = rng.choice([0.0, 0.05, 0.5, 1.0])
        image = decoded.encode("ascii", "replace").decode()
        want = None if len(wide) > share * len(lines) else (image, len(lines), wide)
        if _scan.utf8_image(memoryview(data), share) != want:
            raise AssertionError(f"utf8_image({data!r}, {share}) is not the decoder's")
    for share in (-1.0, float("nan")):
        try:
            _scan.utf8_image(b"x", share)
        except ValueError:
            raised += 1
    # The nccl-tests reader's state as the scanner reads it: wrong types and odd tables refused.
    tests = nccl_tests.Parser(ParseResult())
    tests.result.formats.append(nccl_tests.NAME)
    tests.op, tests.table = "all_reduce", nccl_tests.Table("size count type redop root time busbw".split())
    row = ["         8    2  float  sum  -1  1.5  2.5  3.5 N/A 9"]
    for held, lead in ((None, {"size": 0}), ([], {"size": -5, "count": 10**30}), ([], {"size": "x"}),
                       ([], {"size": 2**40, "count": 1}), ([], None)):
        tests.held, tests.table.lead = held, lead  # type: ignore[assignment]
        scan.watch_tests(tests, tests.result, ["float", "sum"])
        try:
            scan.scan(row, 0, 1, *state, native.F_MAIN)
        except (TypeError, OverflowError):
            raised += 1
    for bad in ([object()], [nccl_tests.Collective("x", 1, 1, "f", "s", -1, None, None, None, None, False, 1,
                                                   "main", logfile=3)], "not a list"):
        try:
            scan.add_collectives(bad)
        except (TypeError, ValueError, AttributeError):
            raised += 1
    for words in ([1], ["not an identifier"], ["x"] * 65):
        try:
            scan.watch_tests(tests, tests.result, words)
        except (TypeError, ValueError):
            raised += 1
    scan.take_collectives()
    bare = _scan.Scanner.__new__(_scan.Scanner)
    for call in (bare.take, bare.take_groups, lambda: bare.mask("x"), lambda: bare.masks("x"), bare.take_collectives,
                 lambda: bare.add_collectives([]), lambda: bare.watch_tests(None, None, [])):
        try:
            call()
        except RuntimeError:
            raised += 1
    return raised


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=24)
    a = ap.parse_args(argv)
    if native.available() is not None:
        print(f"fuzz_scan: {native.available()}", file=sys.stderr)
        return 2
    rng = random.Random(a.seed)
    logs = sources()
    differ = 0
    for i in range(a.inputs):
        data = mutate(rng, rng.choice(logs), logs)
        got, want = parse(data, "native"), parse(data, "lines")
        if got != want:
            differ += 1
            print(f"input {i} (seed {a.seed}): the engines differ", file=sys.stderr)
    raised = direct_calls(rng)
    print(f"fuzz_scan: {a.inputs} mutated inputs from {len(logs)} real logs, {differ} where the engines differ; "
          f"{raised} out-of-range C API calls refused")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
