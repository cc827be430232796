"""The payload checksums every backend keeps: computed as bytes are written, verified on every read.

A payload's checksums are the big-endian CRC-32 (zlib's polynomial,
``_kernels.crc32``) of each ``chunk`` bytes of it, the last chunk short; the
record names the chunk size.  Both backends compute them with ``Checksums``
and verify them with ``verify``, so the two agree on the bytes and on the
error a mismatch raises.
"""

from __future__ import annotations

from .. import _kernels
from ..errors import ResourceCorruptError
from ..records import Record

__all__ = ["Checksums", "corrupt", "verified_copy", "verify"]


class Checksums:
    """The running checksums of a payload written in pieces of any size."""

    __slots__ = ("_chunk", "_crc", "_filled", "_sums")

    def __init__(self, chunk: int) -> None:
        self._chunk = chunk
        self._sums = bytearray()
        self._crc = 0
        self._filled = 0  # bytes of the current chunk seen so far

    def feed(self, data: memoryview) -> None:
        """Account for ``data``, the payload's next bytes."""
        chunk = self._chunk
        crc32 = _kernels.crc32
        position = 0
        size = len(data)
        while position < size:
            take = min(chunk - self._filled, size - position)
            self._crc = crc32(data[position : position + take], self._crc)
            self._filled += take
            position += take
            if self._filled == chunk:
                self._sums += self._crc.to_bytes(4, "big")
                self._crc, self._filled = 0, 0

    def finish(self) -> bytes:
        """The checksums of the whole payload (its last chunk included)."""
        if self._filled:
            self._sums += self._crc.to_bytes(4, "big")
            self._crc, self._filled = 0, 0
        return bytes(self._sums)


def verify(record: Record, view: memoryview, base: int, start: int, end: int) -> None:
    """Check every checksum chunk under ``[start, end)`` of ``record``'s payload.

    ``view`` holds the payload from offset ``base`` on, at least to the end of
    the last chunk checked (or of the payload).  A record without checksums
    (written by another tool) has nothing to check.

    :raises ResourceCorruptError: a chunk does not match its checksum (the
        message names its byte range).
    """
    checksums = record.checksums
    if checksums is None or start >= end:
        return
    chunk = record.checksum_chunk
    # One kernel call for all the chunks; the native one reads a map in place.
    index = _kernels.verify_chunks(view, base, start, end, checksums, chunk)
    if index >= 0:
        raise corrupt(record, index)


def verified_copy(record: Record, view: memoryview, base: int, start: int, end: int) -> bytes:
    """``[start, end)`` of ``record``'s payload copied out of ``view`` (as ``verify``'s), then
    every checksum chunk under it checked over the copy inside the range and ``view`` outside it
    (``_kernels.verified_copy``): the bytes returned are the bytes checked, even when ``view`` is
    a shared map that another process changes meanwhile (a change in place made before the copy
    fails the check, one made after it is not in the copy).

    :raises ResourceCorruptError: a chunk does not match its checksum (as ``verify``).
    """
    checksums = record.checksums
    if start >= end:
        return b""
    if checksums is None:
        return view[start - base : end - base].tobytes()  # nothing to check
    found = _kernels.verified_copy(view, base, start, end, checksums, record.checksum_chunk)
    if type(found) is int:
        raise corrupt(record, found)
    return found


def corrupt(record: Record, index: int) -> ResourceCorruptError:
    """The error for chunk ``index`` of ``record``'s payload not matching its checksum."""
    chunk = record.checksum_chunk
    return ResourceCorruptError(
        f"resource {record.resource.uri} is corrupt: bytes {index * chunk} to "
        f"{min((index + 1) * chunk, record.resource.size)} do not match their checksum"
    )
