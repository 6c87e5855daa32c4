"""The inputs of ``urlguard audit``: files or standard input, plain or gzip,
read as runs of whole lines about a megabyte at a time.

A log is untrusted input: a broken gzip stream, an unreadable file or a
missing standard input is an :class:`AuditError` with one printable line,
never a traceback; a line longer than :data:`MAX_LINE` is dropped while
reading and counted (``Source.overlong``), never kept in memory.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Final

#: Bytes asked of the input at a time.
CHUNK: Final = 1 << 20
#: A longer line is not a log line; it is counted unparseable and skipped
#: without keeping it in memory. (nginx and Apache refuse request lines over
#: 8 KiB by default; a log line with headers stays far below this.)
MAX_LINE: Final = 1 << 20


class AuditError(Exception):
    """An input that cannot be audited; ``str()`` is one printable line."""


class Source:
    """One opened input: plain or gzip, a file or standard input."""

    def __init__(self, shown: str, raw: IO[bytes], owned: bool) -> None:
        self.shown = shown
        self._raw = raw
        self._owned = owned
        self._seekable = False
        try:
            self._seekable = raw.seekable()
        except (OSError, ValueError, io.UnsupportedOperation):
            self._seekable = False
        head = _peek(raw, 2)
        self.gzip = head == b"\x1f\x8b"  # RFC 1952 §2.3.1: ID1 ID2
        self._gzip_file = gzip.GzipFile(fileobj=raw, mode="rb") if self.gzip else None
        #: Lines longer than MAX_LINE, dropped while reading.
        self.overlong = 0

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._gzip_file is not None:
            self._gzip_file.close()  # does not close the file it wraps
        if self._owned:
            self._raw.close()

    def batches(self) -> Iterator[bytes]:
        """The input as runs of whole lines, each line ending in ``\\n``, about
        a chunk at a time (a last line without a line break gets one).

        A control byte (a NUL) is left in its line, which is then
        unparseable: one bad line never stops the rest. Raises
        :class:`AuditError` on broken gzip data."""
        stream = self._gzip_file if self._gzip_file is not None else self._raw
        # Whole chunks from a file; from a pipe, whatever is available (read1),
        # so that lines are counted and progress moves while the writer is slow.
        read: Callable[[int], bytes] = (
            stream.read if self._seekable else getattr(stream, "read1", stream.read)
        )
        carry = b""  # the start of a line continued in the next chunk
        skipping = False  # inside an overlong line, dropping it
        while True:
            chunk = self._read(read)
            if not chunk:
                break
            if skipping:
                end = chunk.find(b"\n")
                if end < 0:
                    continue
                chunk = chunk[end + 1 :]  # the rest of the overlong line
                skipping = False
            if carry:  # a line began in an earlier chunk
                end = chunk.find(b"\n")
                if len(carry) + (len(chunk) if end < 0 else end) > MAX_LINE:
                    self.overlong += 1  # one unparseable line, dropped
                    carry = b""
                    if end < 0:
                        skipping = True
                        continue
                    chunk = chunk[end + 1 :]
                elif end < 0:
                    carry += chunk
                    continue
            end = chunk.rfind(b"\n")
            if end < 0:
                carry = chunk  # at most CHUNK == MAX_LINE bytes
                continue
            body = carry + chunk[: end + 1]
            carry = chunk[end + 1 :]
            yield body
        if carry:
            yield carry + b"\n"

    def _read(self, read: Callable[[int], bytes]) -> bytes:
        try:
            return read(CHUNK)
        except EOFError:
            raise AuditError(
                f"{self.shown}: truncated gzip data (the compressed stream ends early)"
            ) from None
        except (gzip.BadGzipFile, zlib.error):
            raise AuditError(f"{self.shown}: not valid gzip data") from None
        except OSError as error:
            raise AuditError(f"{self.shown}: cannot read: {_strerror(error)}") from None


def open_source(name: str, shown: str) -> Source:
    """The input ``name`` (``-``: standard input), shown as ``shown`` in errors."""
    if name == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            raise AuditError("-: standard input is not available")
        return Source("<stdin>", stdin, owned=False)
    try:
        raw = open(name, "rb")  # noqa: SIM115 (closed by Source.__exit__)
    except OSError as error:
        raise AuditError(f"{shown}: cannot read: {_strerror(error)}") from None
    try:
        return Source(shown, raw, owned=True)
    except OSError as error:
        raw.close()
        raise AuditError(f"{shown}: cannot read: {_strerror(error)}") from None
    except BaseException:
        raw.close()
        raise


def _peek(raw: IO[bytes], size: int) -> bytes:
    peek = getattr(raw, "peek", None)
    if peek is not None:
        head: bytes = peek(size)[:size]
        return head
    if raw.seekable():
        position = raw.tell()
        head = raw.read(size)
        raw.seek(position)
        return head
    return b""


def _strerror(error: OSError) -> str:
    return error.strerror or type(error).__name__
