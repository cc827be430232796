"""Seals of a growing resource: how far its payload may be served, and the checksums of each stretch.

A growing payload is append-only.  Its writer seals its progress now and then
with one fixed-size entry::

    start (8 bytes) | end (8) | CRC-32 of the payload's [start, end) (4) | check (4)

big-endian, where the CRC was computed from the writer's memory as the bytes
were written (never read back), and ``check`` is the CRC-32 of the resource id
and the first 20 bytes, so an entry torn by a crash, altered, or copied from
another resource fails its own check.  A reader follows the chain from 0: an
entry counts when its check holds and it starts where the chain ends; any
other entry is ignored (so nothing after an altered entry counts).  The
payload is served up to the chain's end only, each stretch verified against
its CRC.  Entries are never rewritten: a stretch sealed once keeps its CRC.
"""

from __future__ import annotations

import struct
from bisect import bisect_right

from .. import _kernels
from ..errors import ResourceCorruptError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

__all__ = ["ENTRY_SIZE", "SEAL_BYTES", "SealChain", "seal_entry"]

_ENTRY = struct.Struct(">QQI")
ENTRY_SIZE = _ENTRY.size + 4
#: A writer seals at least every this many bytes (and after about a second of quiet).
SEAL_BYTES = 256 * 1024
_DOMAIN = b"overspill-seal\0"


def _check(resource_id: str, body: bytes) -> int:
    return _kernels.crc32(_DOMAIN + resource_id.encode("ascii") + body)


def seal_entry(resource_id: str, start: int, end: int, crc: int) -> bytes:
    """The entry sealing ``[start, end)`` of ``resource_id`` with ``crc``."""
    body = _ENTRY.pack(start, end, crc)
    return body + _check(resource_id, body).to_bytes(4, "big")


class SealChain:
    """The verified chain of one resource's seals, grown as new entries are read.

    ``ends[i]`` is where stretch ``i`` ends (it starts at ``ends[i - 1]``, or
    0), ``crcs[i]`` its CRC-32; ``end`` the sealed size; ``consumed`` how many
    bytes of the seal file were parsed (a torn last entry is left for later).
    """

    __slots__ = ("resource_id", "ends", "crcs", "consumed")

    def __init__(self, resource_id: str) -> None:
        self.resource_id = resource_id
        self.ends: list[int] = []
        self.crcs: list[int] = []
        self.consumed = 0

    @property
    def end(self) -> int:
        return self.ends[-1] if self.ends else 0

    def feed(self, data: bytes) -> None:
        """Parse the seal file's bytes from ``consumed`` on (``data`` starts there)."""
        whole = len(data) - len(data) % ENTRY_SIZE
        for position in range(0, whole, ENTRY_SIZE):
            body = data[position : position + ENTRY_SIZE - 4]
            check = int.from_bytes(data[position + ENTRY_SIZE - 4 : position + ENTRY_SIZE], "big")
            start, end, crc = _ENTRY.unpack(body)
            if check != _check(self.resource_id, body) or start != self.end or end <= start:
                continue  # torn, altered, foreign or out of order: not part of the chain
            # The CRC first: a reader that sees a stretch's end finds its CRC.
            self.crcs.append(crc)
            self.ends.append(end)
        self.consumed += whole

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The sealed stretches' bounds ``[low, high)`` that cover ``[start, end)`` (``end <= self.end``)."""
        first = bisect_right(self.ends, start)
        last = bisect_right(self.ends, max(end - 1, start))
        low = self.ends[first - 1] if first else 0
        high = self.ends[min(last, len(self.ends) - 1)]
        return low, high

    def verify(self, uri: str, view: memoryview, base: int, start: int, end: int) -> None:
        """Check every stretch under ``[start, end)``; ``view`` holds the payload from ``base``.

        :raises ResourceCorruptError: a stretch does not match its seal.
        """
        self._check(uri, view, base, None, start, end)

    def verified_copy(self, uri: str, view: memoryview, base: int, start: int, end: int) -> bytes:
        """``[start, end)`` copied out of ``view`` first, then checked as ``verify`` does, each
        stretch over the copy inside the range and ``view`` outside it: the bytes returned are
        the bytes checked, even when ``view`` is a shared map changed meanwhile
        (``_checksums.verified_copy``'s rule, for seals).

        :raises ResourceCorruptError: a stretch does not match its seal.
        """
        copy = view[start - base : end - base].tobytes()
        # Checked through a view of the copy: a slice of ``bytes`` would copy each stretch's part again.
        with memoryview(copy) as copied:
            self._check(uri, view, base, copied, start, end)
        return copy

    def _check(self, uri: str, view: memoryview, base: int, copy: Optional[memoryview], start: int,
               end: int) -> None:
        """``verify`` (``copy`` None) or ``verified_copy``'s check of ``copy``, the bytes ``[start, end)``."""
        if start >= end:
            return
        crc32 = _kernels.crc32
        index = bisect_right(self.ends, start)
        low = self.ends[index - 1] if index else 0
        while low < end:
            high = self.ends[index]
            if copy is None:
                crc = crc32(view[low - base : high - base])
            else:
                # CRC-32 runs in order: the bytes before the copy, the copy's, the bytes after it.
                crc = crc32(view[low - base : start - base]) if low < start else 0
                crc = crc32(copy[max(low, start) - start : min(high, end) - start], crc)
                if high > end:
                    crc = crc32(view[end - base : high - base], crc)
            if crc != self.crcs[index]:
                raise ResourceCorruptError(
                    f"resource {uri} is corrupt: bytes {low} to {high} do not match their seal")
            low = high
            index += 1
