"""Where log bytes live, and the limits on getting them there (RELIABILITY §2.1, §2.2).

Uploads are stored under RUNLENS_DATA_DIR/logs/<uuid>: the user's filename is metadata only,
never part of a path. Registered paths must resolve (symlinks followed) under a LOG_ROOT.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

COPY_CHUNK = 1 << 20


class StorageError(Exception):
    """A file we refuse to store or read; `code` is stable for the API."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CappedUploadHandler(FileUploadHandler):
    """Refuse an upload over RUNLENS_MAX_UPLOAD_BYTES before any of it is stored.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE does not count file data, so the cap is enforced here:
    up front from Content-Length, and again while streaming in case it was understated.
    The view answers 413 when `request.upload_refused` is set.
    """

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        cap = settings.MAX_UPLOAD_BYTES
        # Multipart framing adds a little: allow 1 MiB of headers and boundaries on top.
        if content_length and content_length > cap + (1 << 20):
            self._refuse(content_length)
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > settings.MAX_UPLOAD_BYTES:
            self._refuse(self.received)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None

    def _refuse(self, size: int) -> None:
        assert self.request is not None  # Django builds upload handlers with the request
        # An attribute of runlens's own on the request (the upload view reads it with getattr).
        self.request.upload_refused = _too_large(size)  # type: ignore[attr-defined]


def _too_large(size: int) -> str:
    return (
        f"upload of {size} bytes is over the limit of {settings.MAX_UPLOAD_BYTES} bytes "
        "(RUNLENS_MAX_UPLOAD_BYTES)"
    )


def logs_dir() -> Path:
    path = settings.DATA_DIR / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_stream(chunks: Iterable[bytes]) -> tuple[str, str, int]:
    """Write chunks to a new file under the data dir; returns (relative path, sha256, size).

    The file appears under its final name only when complete (write to .part, then rename),
    so a crash never leaves a half-written log that looks whole.
    """
    rel = f"logs/{uuid.uuid4().hex}.log"
    final = settings.DATA_DIR / rel
    logs_dir()
    tmp = final.with_suffix(".part")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "xb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > settings.MAX_DECOMPRESSED_BYTES:
                    raise StorageError("too_large", f"log is over {settings.MAX_DECOMPRESSED_BYTES} bytes")
                digest.update(chunk)
                out.write(chunk)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return rel, digest.hexdigest(), size


def read_chunks(f: BinaryIO) -> Iterable[bytes]:
    while chunk := f.read(COPY_CHUNK):
        yield chunk


def gunzip_chunks(f: BinaryIO, compressed_size: int) -> Iterable[bytes]:
    """Decompress a .gz stream with an output budget: a gzip bomb fails, never fills the disk.

    Concatenated members are read in turn; zero bytes after the last member are ignored (tape
    padding: `gzip -t` accepts it too). Anything else that is not gzip (junk, a cut-off stream)
    is `bad_gzip`, never a crash.
    """
    budget = min(settings.MAX_DECOMPRESSED_BYTES, max(compressed_size, 1) * 200)
    out = 0
    d = zlib.decompressobj(wbits=31)
    padding = False  # past the last member, in zero bytes
    while chunk := f.read(COPY_CHUNK):
        while chunk:
            if padding or (d.eof and not chunk.strip(b"\0")):
                if chunk.strip(b"\0"):
                    raise _bad_gzip("data after the zero padding that ends the gzip stream")
                padding = True
                break
            try:
                data = d.decompress(chunk, COPY_CHUNK)
            except zlib.error as e:
                raise _bad_gzip(str(e)) from None
            chunk = d.unconsumed_tail
            out += len(data)
            if out > budget:
                raise StorageError(
                    "decompressed_too_large",
                    f"decompressed size limit: more than {budget} bytes from {compressed_size} compressed",
                )
            yield data
            if d.eof:
                # Concatenated multi-member gzip: start the next member (or find the padding).
                chunk = d.unused_data + chunk
                if chunk and chunk.strip(b"\0"):
                    d = zlib.decompressobj(wbits=31)
    if not d.eof and not out:
        raise _bad_gzip("not a valid gzip file")
    if not d.eof:
        # Keeping the part that inflated would hide the loss: the log would look complete.
        raise StorageError("truncated_gzip", "the .gz file is cut short (no end-of-stream marker): "
                                             "upload it again, or the uncompressed log")


def _bad_gzip(why: str) -> StorageError:
    return StorageError("bad_gzip", f"damaged .gz file: {why}")


def is_gzip(f: BinaryIO) -> bool:
    head = f.read(2)
    f.seek(0)
    return head == b"\x1f\x8b"


def store_upload(f: BinaryIO, size: int) -> tuple[str, str, int]:
    """Store an uploaded file (decompressing .gz as a stream). Returns (rel path, sha256, size)."""
    if is_gzip(f):
        return store_stream(gunzip_chunks(f, size))
    return store_stream(read_chunks(f))


def orphans(older_than: float, now: float | None = None) -> list[Path]:
    """Files a killed web server or worker left behind, untouched for `older_than` seconds:
    Django's spooled uploads (`*.upload.*` in FILE_UPLOAD_TEMP_DIR) and our `logs/*.part`.
    Never a stored log (`logs/*.log`): those belong to runs."""
    now = time.time() if now is None else now
    found = []
    places = [(settings.DATA_DIR / "logs", "*.part")]
    if settings.FILE_UPLOAD_TEMP_DIR:
        places.append((Path(settings.FILE_UPLOAD_TEMP_DIR), "*.upload*"))
    for folder, pattern in places:
        for path in sorted(folder.glob(pattern)) if folder.is_dir() else []:
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > older_than:
                found.append(path)
    return found


def remove_orphans(older_than: float) -> list[Path]:
    """Delete what `orphans` finds; returns the paths removed."""
    removed = []
    for path in orphans(older_than):
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def remove_stored(paths: Iterable[str]) -> None:
    """Delete stored uploads (paths relative to the data dir); never anything outside it."""
    for rel in paths:
        full = (settings.DATA_DIR / rel).resolve()
        if full.is_relative_to(settings.DATA_DIR):
            full.unlink(missing_ok=True)


HEAD_BYTES = 64 << 10  # the head of a registered log whose hash tells a rotated file from a grown one


@dataclass(frozen=True)
class Digest:
    """What a registered log's bytes were when read: enough to tell later whether it only grew."""

    sha256: str
    size: int
    head_sha256: str  # of the first HEAD_BYTES (fewer if the file is shorter)
    # Of the first `prefix` bytes, and of the first min(prefix, HEAD_BYTES), when asked for: equal
    # to the old sha256 and head_sha256 exactly when the file only had bytes appended since.
    prefix_sha256: str | None = None
    old_head_sha256: str | None = None


def registered_digest(path: str, prefix: int | None = None) -> Digest:
    """Hashes of a registered log, read once through the same checks as the worker's.

    `prefix`: the size it had when last read, to check that those bytes are still there unchanged.
    """
    digest, head = hashlib.sha256(), hashlib.sha256()
    before, before_head = (hashlib.sha256(), hashlib.sha256()) if prefix is not None else (None, None)
    size = 0
    with open_log(path, registered=True) as f:
        for chunk in read_chunks(f):
            if size < HEAD_BYTES:
                head.update(chunk[:HEAD_BYTES - size])
            if before is not None and before_head is not None and prefix is not None and size < prefix:
                before.update(chunk[:prefix - size])
                if size < min(prefix, HEAD_BYTES):
                    before_head.update(chunk[:min(prefix, HEAD_BYTES) - size])
            digest.update(chunk)
            size += len(chunk)
    return Digest(digest.hexdigest(), size, head.hexdigest(),
                  before.hexdigest() if before else None, before_head.hexdigest() if before_head else None)


def resolve_registered(path: str) -> Path:
    """Check a path for registration: under a configured root after symlinks, a regular file.

    Errors are the same whether the path exists or not outside the roots (no existence oracle).
    """
    outside = StorageError("path_outside_allowed_roots", "path is not under an allowed log root")
    if not settings.LOG_ROOTS:
        raise StorageError("registration_disabled", "path registration is off (RUNLENS_LOG_ROOTS is empty)")
    if not path or len(path) > 4096 or any(ord(c) < 32 for c in path) or not os.path.isabs(path):
        raise outside
    real = Path(os.path.realpath(path))
    if not any(real.is_relative_to(root) for root in settings.LOG_ROOTS):
        raise outside
    fd = _open_regular(real)
    os.close(fd)
    return real


def _open_regular(real: Path) -> int:
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise StorageError("path_not_readable", "no readable regular file at that path") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise StorageError("not_a_regular_file", "path is not a regular file")
    if st.st_nlink > 1:
        # A hard link inside a root may be any file of the same filesystem (/etc/shadow): its
        # path says nothing about where it belongs, so only singly linked files are read.
        os.close(fd)
        raise StorageError("hard_linked", "the file has more than one hard link; copy it into the log root instead")
    if st.st_size > settings.MAX_UPLOAD_BYTES:
        os.close(fd)
        raise StorageError("too_large", f"file is over {settings.MAX_UPLOAD_BYTES} bytes")
    return fd


def open_log(path: str, registered: bool) -> BinaryIO:
    """Open a stored or registered log for reading. The worker re-validates registered paths."""
    if not registered:
        full = (settings.DATA_DIR / path).resolve()
        if not full.is_relative_to(settings.DATA_DIR):
            raise StorageError("path_outside_data_dir", "stored path escapes the data dir")
        return open(full, "rb")
    real = resolve_registered(path)
    fd = _open_regular(real)
    if os.path.realpath(f"/proc/self/fd/{fd}") != str(real):
        os.close(fd)
        raise StorageError("path_changed", "the file changed between check and open")
    return os.fdopen(fd, "rb")

