"""Opening a trace file, compressed or not: gzip, bzip2, xz and Zstandard are read as the
plain text they hold, recognised by their magic bytes (not the name: `day.csv.gz` renamed
`day.csv` still reads), with the trace byte limit applied to the decompressed bytes, so a
small compressed file cannot expand past it (a decompression bomb is one line, not a
machine out of memory).

Every trace reader opens its file through `open_trace_text` or `read_trace_bytes`; the
regular-file check (`columns.check_exists`) comes first, as for plain files.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from gpuscale.errors import UserInputError

# Decompressed bytes of one trace. The run's own cap is 20 M requests (workloads/limits.py);
# a generic CSV row is ~30 bytes and a Mooncake line with block hashes a few hundred, so a
# legitimate trace stays far below this, while memory for the text stays within a 24 GiB
# machine's reach.
MAX_TRACE_BYTES = 8 * 2**30
_CHUNK_BYTES = 1 << 20


class _Decompressed(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class _ZstdFrames:
    """Zstandard frames one after another, decompressed as read; a stream that ends inside a
    frame is an error (zstandard's own stream reader returns the bytes so far silently)."""

    def __init__(self, raw: BinaryIO, zstandard: Any) -> None:
        self._raw, self._zstandard = raw, zstandard
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._frame_started = False
        self._pending = bytearray()

    def read(self, size: int = -1, /) -> bytes:
        while size < 0 or len(self._pending) < size:
            chunk = self._raw.read(_CHUNK_BYTES)
            if not chunk:
                if self._frame_started and not self._frame.eof:
                    raise EOFError("compressed stream ended before the end of a frame")
                break
            try:
                self._feed(chunk)
            except self._zstandard.ZstdError as exc:
                raise ValueError(str(exc)) from None
        cut = len(self._pending) if size < 0 else size
        out = bytes(self._pending[:cut])
        del self._pending[:cut]
        return out

    def _feed(self, chunk: bytes) -> None:
        while chunk:
            if self._frame.eof:  # the next frame starts in what the last one left over
                self._frame = self._zstandard.ZstdDecompressor().decompressobj()
            self._frame_started = True
            self._pending += self._frame.decompress(chunk)
            chunk = self._frame.unused_data if self._frame.eof else b""

    def close(self) -> None:
        self._raw.close()


def _open_zstd(raw: BinaryIO) -> _Decompressed:
    try:
        import zstandard
    except ImportError:  # a declared dependency; only a broken install lacks it
        raise UserInputError("reading a Zstandard trace needs the `zstandard` package: "
                             "pip install zstandard") from None
    return _ZstdFrames(raw, zstandard)


# magic bytes -> (name, opener of a decompressing binary stream over the raw file)
_FORMATS: tuple[tuple[bytes, str, Callable[[BinaryIO], _Decompressed]], ...] = (
    # Each wraps the open raw file, which the capped stream closes with it.
    (b"\x1f\x8b", "gzip", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", "bzip2", lambda raw: bz2.BZ2File(raw, mode="rb")),
    (b"\xfd7zXZ\x00", "xz", lambda raw: lzma.LZMAFile(raw, mode="rb")),  # noqa: SIM115
    (b"\x28\xb5\x2f\xfd", "zstd", _open_zstd),
)
_MAGIC_BYTES = max(len(magic) for magic, _, _ in _FORMATS)


def compression_of(path: Path) -> str | None:
    """"gzip", "bzip2", "xz", "zstd", or None for a plain file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_MAGIC_BYTES)
    except OSError:
        return None  # the reader that opens it next reports the error
    return next((name for magic, name, _ in _FORMATS if head.startswith(magic)), None)


class _CappedStream(io.RawIOBase):
    """A decompressed stream that refuses to yield more than `limit` bytes in all, and turns
    a corrupt or truncated archive into one line naming the file."""

    def __init__(self, inner: _Decompressed, raw: BinaryIO, limit: int, source: str, kind: str):
        self._inner, self._raw = inner, raw
        self._left, self._limit = limit, limit
        self._source, self._kind = source, kind

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer)
        try:
            data = self._inner.read(min(len(view), self._left + 1))
        except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:  # a corrupt stream
            raise UserInputError(f"not a readable {self._kind} file ({exc})",
                                 source=self._source) from None
        if len(data) > self._left:
            raise UserInputError(f"decompresses to more than the {self._limit}-byte trace limit; "
                                 "see docs/input-limits.md", source=self._source)
        self._left -= len(data)
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


def open_trace_binary(path: Path) -> BinaryIO:
    """The trace's bytes as a stream: the file itself, or its decompressed contents (at most
    MAX_TRACE_BYTES, read when called)."""
    source = str(path)
    kind = compression_of(path)
    try:
        raw = open(path, "rb")  # noqa: SIM115 -- closed by the caller, through the wrapper
    except OSError as exc:
        raise UserInputError(f"cannot read: {exc.strerror}", source=source) from None
    if kind is None:
        return raw
    opener = next(open_ for _, name, open_ in _FORMATS if name == kind)
    try:
        inner = opener(raw)
    except Exception:
        raw.close()
        raise
    return io.BufferedReader(_CappedStream(inner, raw, MAX_TRACE_BYTES, source, kind),
                             _CHUNK_BYTES)


def open_trace_text(path: Path, *, newline: str | None = None) -> IO[str]:
    """The trace as UTF-8 text (a byte-order mark dropped), decompressed when it is an archive."""
    return io.TextIOWrapper(open_trace_binary(path), encoding="utf-8-sig", newline=newline)


def read_trace_bytes(path: Path) -> bytes:
    """All of the trace's (decompressed) bytes."""
    with open_trace_binary(path) as handle:
        return handle.read()
