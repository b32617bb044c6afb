"""Reading log bytes as numbered, normalised lines.

Streaming on purpose: a 1 GB log must never sit in memory. `read_chunks` hands out the lines of
one large read at a time (decoded and split in C, cleaned only where a line needs it);
`read_lines` is the line-at-a-time reader they are proven equal to (tests/test_parsers_engine.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import BinaryIO, Literal, overload

import polars as pl

from .records import Issue, ParseError

try:
    from . import _scan  # the native scanner's chunk helpers (native.py); pure Python without it
except ImportError:
    _scan = None  # type: ignore[assignment]

MAX_LINE_BYTES = 1 << 20  # a longer line is cut here and flagged
CHUNK = 1 << 16
# Bytes read_chunks reads at once: big enough that the per-chunk work of the engine and its
# native scanner is noise (larger reads only hold more memory), after a few smaller first reads.
BATCH = 1 << 21
FIRST_BATCH = 1 << 16
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
# What a line must contain for clean() to change it (each literal is searched in C over a
# whole chunk, so a chunk without any of them skips clean() altogether): \r and ^M for _decode
# and tqdm, the starts of _ANSI, "]<std" of an MPI tag, the Ray suffix, the DJL prefix, and a
# line that starts with `>` (a markdown quote; the chunk's first line is checked apart).
_DIRTY = ("\r", "^M", "\x1b", "^[", "\ufffd", "#033", "]<std", "across cluster]", "PyProcess", "\n>")
_COLOUR = re.compile(r"\[\d+(?:;\d+)*m")  # _ANSI's ESC-less branch, without its lookahead


# ---- MPI --tag-output: the wrapper goes, the process it names stays ----------------------
# At most 18 digits a number (records.MAX_INT_DIGITS): a longer `[job,rank]` is no tag MPI prints,
# and the wrapper is taken off all the same (_WRAPPER) with the line kept untagged.
_MPI_TAG = re.compile(r"\[(\d{1,18}),(\d{1,18})\]<std(?:out|err)>:")


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


def _head(stream: BinaryIO) -> bytes:
    """The first read (at least SNIFF_BYTES unless the file is shorter), BOM dropped.

    Raises ParseError for an empty or binary file.
    """
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
    return chunk


def read_lines(stream: BinaryIO, warnings: list | None = None) -> Iterator[tuple[int, str]]:
    """Yield (line number, cleaned text) from a binary stream.

    Raises ParseError for an empty or binary file. A final line without a line end is taken as
    cut off (a truncated upload or a log still being written) and skipped with a warning, so a
    truncated file always parses to a prefix of the full file's records.
    """
    chunk = _head(stream)
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
        _mid_line(lineno + 1, warnings)


@overload
def read_chunks(stream: BinaryIO, warnings: list | None = ...,
                texts: Literal[False] = ...) -> Iterator[tuple[int, Lines]]: ...
@overload
def read_chunks(stream: BinaryIO, warnings: list | None = ..., *,
                texts: bool) -> Iterator[tuple[int, Lines | Text]]: ...
def read_chunks(stream: BinaryIO, warnings: list | None = None,
                texts: bool = False) -> Iterator[tuple[int, Lines | Text]]:
    """Yield (number of the first line, cleaned lines) per read of BATCH bytes, cut at a newline.

    With `texts`, a chunk of ASCII text with few lines to clean comes as a Text instead (the
    native engine reads it in place; native.py).

    The same lines, numbers and warnings as read_lines, a chunk at a time. A line over
    MAX_LINE_BYTES is yielded alone, its warning added just before it, as read_lines does.
    """
    head = _head(stream)
    # One buffer for the whole file, read into (BATCH bytes after what is left of the last read's cut line,
    # which is at most MAX_LINE_BYTES): each read's lines are decoded from it in place. A bytes object a
    # read, joined to the rest and cut in two after, copied the file three times more (~7% of a parse).
    buf = bytearray(max(len(head), MAX_LINE_BYTES) + BATCH)
    buf[:len(head)] = head
    filled = len(head)  # the bytes of buf read and not handed out yet begin at 0 and end here
    readinto = getattr(stream, "readinto", None)
    lineno = 0
    skipping = False  # inside the rest of a line that was cut: drop bytes up to its newline
    # The first reads are small: the parsers set a file's formats and settings line by line on
    # its first records, before the native scanner can take over.
    size = min(FIRST_BATCH, BATCH)
    while True:
        if readinto is not None:
            more = readinto(memoryview(buf)[filled:filled + size])
        else:
            piece = stream.read(size)
            more = len(piece)
            buf[filled:filled + more] = piece
        filled += more
        size = min(size * 4, BATCH)
        start = 0  # the first byte not handed out
        if skipping:
            nl = buf.find(b"\n", 0, filled)
            if nl < 0:
                if not more:
                    return
                filled = 0
                continue
            start, skipping = nl + 1, False
        end = buf.rfind(b"\n", start, filled)
        if end >= 0:
            if end - start > MAX_LINE_BYTES and _long_line(buf, start, end):
                # Runs of ordinary lines are decoded together; an over-long line goes alone.
                run: list[bytes] = []
                for part in bytes(memoryview(buf)[start:end]).split(b"\n"):
                    if len(part) > MAX_LINE_BYTES:  # one over-long line
                        if run:
                            lines = _decode_block(b"\n".join(run), texts)
                            yield lineno + 1, lines
                            lineno += len(lines)
                            run = []
                        lineno += 1
                        _cut(lineno, warnings)
                        yield lineno, _lines([_decode(part[:MAX_LINE_BYTES], lineno, warnings)], [0])
                    else:
                        run.append(part)
                if run:
                    lines = _decode_block(b"\n".join(run), texts)
                    yield lineno + 1, lines
                    lineno += len(lines)
            else:
                # Decoded where it lies (no NUL in it, else as bytes, which _decode_block takes them out of).
                block = memoryview(buf)[start:end] if buf.find(b"\0", start, end) < 0 else bytes(buf[start:end])
                lines = _decode_block(block, texts)
                del block  # (the buffer is written again below: no view of it outlives its use)
                yield lineno + 1, lines
                lineno += len(lines)
            start = end + 1
        if filled - start > MAX_LINE_BYTES:
            # Keep the first MiB of the monster line, drop the rest up to its end.
            lineno += 1
            _cut(lineno, warnings)
            yield lineno, _lines([_decode(bytes(buf[start:start + MAX_LINE_BYTES]), lineno, warnings)], [0])
            start, skipping = filled, True
        if not more:
            if buf[start:filled].strip():
                _mid_line(lineno + 1, warnings)
            return
        # The cut line left over goes to the front, the next read after it.
        buf[:filled - start] = buf[start:filled]
        filled -= start


def _long_line(buf: bytearray, start: int, end: int) -> bool:
    """Whether a line of buf[start:end] is longer than MAX_LINE_BYTES. Such a line holds one of the
    bytes start + k * MAX_LINE_BYTES (k >= 1): only the lines there are measured, not the whole block."""
    for at in range(start + MAX_LINE_BYTES, end, MAX_LINE_BYTES):
        after = buf.find(b"\n", at, end)
        if (end if after < 0 else after) - max(buf.rfind(b"\n", start, at) + 1, start) > MAX_LINE_BYTES:
            return True
    return False


class Lines(list):
    """A chunk's lines as _decode_block gives them, with `mpi`: the indices of its MpiLines
    (only a cleaned line can be one: found while cleaning, not by a look at every line)."""

    mpi: list[int]


def _lines(lines: list[str], cleaned: Iterable[int] = ()) -> Lines:
    out = Lines(lines)
    out.mpi = sorted(i for i in cleaned if type(lines[i]) is MpiLine)
    return out


class Text:
    """A chunk kept as its decoded text, ASCII, not cut into lines (read_chunks(texts=True)): the
    native scanner reads its lines in place; Python cuts out only those it feeds, cleaning the
    `dirty` ones (the indices of the lines clean() may change, ascending) and those MPI-tagged.
    A line whose one change is the MPI tag leading it is not among the dirty: the scanner takes
    the tag off itself (_scan.dirty_lines).

    A chunk with a few non-ASCII lines (a progress bar's blocks, a name in another script) comes as
    its ASCII image, each other character a "?" (so every line starts at the same place in both),
    those lines dirty and `wide` holding each decoded by its index: a dirty line is cut from there
    where it is one, else from the image (the same text)."""

    __slots__ = ("count", "dirty", "text", "wide")

    def __init__(self, text: str, count: int, dirty: list[int], wide: dict[int, str] | None = None) -> None:
        self.text, self.count, self.dirty = text, count, dirty
        self.wide = {} if wide is None else wide

    def __len__(self) -> int:
        return self.count

    @property
    def raw(self) -> str:
        """The decoded text (made anew: the context watcher reads it for the file's head alone)."""
        if not self.wide:
            return self.text
        lines = self.text.split("\n")
        for i, line in self.wide.items():
            lines[i] = line
        return "\n".join(lines)


# A chunk with more lines to clean than this share is cut into lines as ever. A dirty line of a text
# is cut out and cleaned alone, ~2 us more than in a chunk of lines, which costs ~0.4 us more a line
# (a str each): measured on the decode mix coloured every 4th line, 25% was 17% slower as text, 1%
# 20% faster (bench/mixes.py; the break-even lies near a fifth).
TEXT_DIRTY_SHARE = 0.05


def _decode_block(block: bytes | memoryview, texts: bool = False) -> Lines | Text:
    """Lines of newline-separated bytes (a memoryview: without NULs), decoded and cleaned as _decode
    does one line.

    One decode and split in C: UTF-8 never takes a newline into a multi-byte sequence, so it
    yields the lines _decode would. clean() runs only on lines holding one of its triggers.
    """
    if isinstance(block, bytes) and b"\x00" in block:
        block = block.replace(b"\x00", b"")
    # For a Text, the bytes' ASCII image and their non-ASCII lines decoded, in one C pass: no str of the
    # whole decoded text (a chunk of 2 MB with a progress bar's blocks in it decoded to 4 MB of UCS-2).
    imaged = _scan.utf8_image(block, TEXT_DIRTY_SHARE) if texts and _scan is not None else None
    if imaged is not None and imaged[2]:
        image, count, wide = imaged
        in_image = _scan.dirty_lines(image)
        assert in_image is not None  # an ASCII text
        # Its non-ASCII lines are cleaned (clean() runs on every line of the line engine, and leaves such a
        # line as it is unless it holds one of _DIRTY) with those the image shows dirty; the MPI-tagged
        # ones, in_image[2], the scanner reads.
        to_clean = sorted(set(in_image[1]).union(wide)) if in_image[1] else list(wide)
        if len(to_clean) <= TEXT_DIRTY_SHARE * count:
            return Text(image, count, to_clean, wide)
        imaged = None
    text = str(block, "utf-8", errors="replace") if imaged is None else imaged[0]
    counted = None if _scan is None else _scan.dirty_lines(text)  # one C pass over an ASCII text
    marked = None if counted is None else sorted(counted[1] + counted[2]) if counted[2] else counted[1]
    if texts and counted is not None and len(counted[1]) <= TEXT_DIRTY_SHARE * counted[0]:
        return Text(text, counted[0], counted[1])
    lines = text.split("\n")
    if marked is not None:
        for i in marked:
            lines[i] = clean(lines[i])
        return _lines(lines, marked)
    # One Aho-Corasick pass (polars) for all of them: a search each costs 7x more on 2 MiB.
    dirty = pl.Series([text]).str.extract_many(list(_DIRTY), overlapping=True).explode().drop_nulls().unique().to_list()
    colours = _COLOUR.search(text) is not None
    if not (dirty or colours or text.startswith(">")):
        return _lines(lines)
    # Line i starts at ends[i - 1]: the character at p is on line bisect_right(ends, p).
    ends = list(accumulate(len(line) + 1 for line in lines))
    found = {0} if text.startswith(">") else set()
    for t in dirty:
        p = text.find(t)
        while p >= 0:
            i = bisect_right(ends, p + len(t) - 1)  # the last character: "\n>" is on the next line
            found.add(i)
            # On from the next line, where a "\n>" may start at this line's newline.
            p = text.find(t, ends[i] - len(t) + 1) if i + 1 < len(ends) else -1
    if colours:
        found.update(bisect_right(ends, m.start()) for m in _COLOUR.finditer(text))
    for i in found:
        lines[i] = clean(lines[i])
    return _lines(lines, found)


def _longest_line(block: bytes) -> int:
    return _scan.longest_line(block) if _scan is not None else max(map(len, block.split(b"\n")))


def _mid_line(lineno: int, warnings: list | None) -> None:
    if warnings is not None:
        warnings.append(Issue(lineno, "the file ends mid-line (truncated?); that last line was skipped"))


def _cut(lineno: int, warnings: list | None) -> None:
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
