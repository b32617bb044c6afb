"""Reading log bytes as numbered, normalised lines.

Streaming on purpose: a 1 GB log must never sit in memory, so lines are produced one at a time
from a binary file object read in chunks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from .records import ParseError

MAX_LINE_BYTES = 1 << 20  # a longer line is cut here and flagged
CHUNK = 1 << 16
SNIFF_BYTES = 8192  # the head checked for NUL bytes (binary files)

# ANSI escapes and the residue copies leave behind (^[ , U+FFFD, #033 for ESC). With the ESC
# dropped altogether only colour codes with digits are taken (`[1;36m`, `[0;0m`): a bare `[m`
# is as likely the start of `[multiproc_worker_utils.py:238]`.
_ANSI = re.compile(r"(?:\x1b|\^\[|\ufffd|#033)\[[0-9;?]*[A-Za-z]|\[\d+(?:;\d+)*m(?!\])")
# Wrappers that prefix whole lines: MPI --tag-output, markdown quotes.
_WRAPPER = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|> ?)+")
# DJL serving relays worker output as `[INFO ] PyProcess - W-210-model-stdout: <line>`.
_DJL = re.compile(r"^\[?[A-Z]+ *\] PyProcess - W-[\w-]+?-std(?:out|err): ")
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


# ---- MPI --tag-output: the wrapper goes, the process it names stays (issue 9) ----------------
_MPI_TAG = re.compile(r"\[(\d+),(\d+)\]<std(?:out|err)>:")


class MpiLine(str):
    """A cleaned line that came wrapped in MPI's `[job,rank]<stdout>:` tag: parsers see plain text,
    the process tagger (processes.py) reads `mpi` = (job, rank) off it."""

    mpi: tuple[int, int]


def _keep_mpi_tag(raw: str, line: str) -> str:
    m = _MPI_TAG.match(raw)
    if m is None:
        return line
    tagged = MpiLine(line)
    tagged.mpi = (int(m.group(1)), int(m.group(2)))
    return tagged
# ---------------------------------------------------------------------------------------------


def clean(line: str) -> str:
    """Normalise one line: colours, carriage returns, MPI/markdown wrappers, Ray dedup suffix."""
    raw = line
    if "\r" in line or "^M" in line:
        # A tqdm bar rewrites the line with \r: keep what was printed last.
        line = line.replace("^M", "\r").rstrip("\r")
        if "\r" in line:
            line = line.rsplit("\r", 1)[1]
    if "[" in line:
        line = _ANSI.sub("", line)
        if line.startswith("[") and ">:" in line[:24]:
            line = _WRAPPER.sub("", line)
        if line.endswith("cluster]") or "across cluster]" in line:
            line = _RAY_REPEAT.sub("", line)
    if line.startswith(">"):
        line = _WRAPPER.sub("", line)
    if "PyProcess" in line:
        line = _DJL.sub("", line)
    return _keep_mpi_tag(raw, line) if raw[:1] == "[" else line


def read_lines(stream: BinaryIO, warnings: list | None = None) -> Iterator[tuple[int, str]]:
    """Yield (line number, cleaned text) from a binary stream.

    Raises ParseError for an empty or binary file. A final line without a line end is taken as
    cut off (a truncated upload or a log still being written) and skipped with a warning, so a
    truncated file always parses to a prefix of the full file's records.
    """
    from .records import Issue

    # Sniff the first 8 KiB whatever the read size, so small chunks see the same head.
    chunk = b""
    while len(chunk) < SNIFF_BYTES:
        more = stream.read(CHUNK)
        if not more:
            break
        chunk += more
    if not chunk:
        raise ParseError(0, "the file is empty")
    if b"\x00" in chunk[:SNIFF_BYTES]:
        raise ParseError(1, "this is a binary file, not a text log (it contains NUL bytes)")
    if chunk.startswith(b"\xef\xbb\xbf"):
        chunk = chunk[3:]
    buf = b""
    lineno = 0
    skipping = False  # inside the rest of a line that was cut: drop bytes up to its newline
    while chunk:
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                chunk = stream.read(CHUNK)
                continue
            chunk = chunk[nl + 1:]
            skipping = False
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            raw = buf[start:nl]
            start = nl + 1
            lineno += 1
            if len(raw) > MAX_LINE_BYTES:
                raw = raw[:MAX_LINE_BYTES]
                _cut(lineno, warnings)
            yield lineno, _decode(raw, lineno, warnings)
        buf = buf[start:]
        if len(buf) > MAX_LINE_BYTES:
            # Keep the first MiB of the monster line, drop the rest up to its end; the lines
            # after it are read as usual (never more than a MiB of it in memory).
            lineno += 1
            _cut(lineno, warnings)
            yield lineno, _decode(buf[:MAX_LINE_BYTES], lineno, warnings)
            buf = b""
            skipping = True
        chunk = stream.read(CHUNK)
    if buf.strip() and not skipping:
        lineno += 1
        if warnings is not None:
            warnings.append(Issue(lineno, "the file ends mid-line (truncated?); that last line was skipped"))


def _cut(lineno: int, warnings: list | None) -> None:
    from .records import Issue

    if warnings is not None:
        warnings.append(Issue(lineno, f"line longer than {MAX_LINE_BYTES} bytes was cut"))


def _decode(raw: bytes, lineno: int, warnings: list | None) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if b"\x00" in raw:
        # NULs past the sniffed head (copytruncate leaves a run of them): no text has them, and
        # PostgreSQL refuses them in text columns.
        raw = raw.replace(b"\x00", b"")
    return clean(raw.decode("utf-8", errors="replace"))


def number_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """Number already-decoded lines (tests and in-memory callers)."""
    for i, line in enumerate(lines, 1):
        yield i, clean(line.rstrip("\n").rstrip("\r"))
