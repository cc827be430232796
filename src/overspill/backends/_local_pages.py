"""A page read in one step by the local backend (the ``PageTexts``
capability): one ``fstat`` of the payload held open with its cached map, then
one kernel call that verifies, finds the page and makes its text (on a first
read, one kernel call that also opens the payload and reads the window's chunks
with one ``pread``)."""

from __future__ import annotations

import os

from .. import _kernels
from ..errors import ResourceNotFoundError
from ..records import unreadable
from ._checksums import corrupt
from ._local_maps import PRIVATE_MAP_BYTES, Descriptor

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    import mmap
    import threading
    from collections.abc import Callable
    from typing import Optional

    from ..records import Record
    from ._local_maps import Entry

__all__ = ["LocalPages"]


class LocalPages:
    """``page_text`` for ``LocalBackend`` (a mixin)."""

    _entries: dict[str, Entry]
    _lock: threading.Lock
    _map: Callable[[Entry, Record, Optional[tuple[int, ...]]], mmap.mmap]  # open, map and cache the payload
    _keep_open: Callable[[Entry, str], None]  # with the lock: the entry now holds files open

    def page_text(self, resource_id: str, record: Record, low: int, high: int, offset: int, limit: int, flags: int,
                  reach: int, /) -> Optional[tuple[int, int, Optional[str]]]:
        """A page from the payload's map: one ``fstat`` of the payload held open
        with it (as ``read``'s warm path), then one kernel call verifies the
        chunks of ``[low, high)``, finds the page and makes its text
        (``_kernels.page_text``).  A first read takes the window's chunks with
        one ``pread`` instead; the second maps the payload.  None when the map
        cannot be trusted without a stat by path, or for a running resource.

        :raises ResourceNotFoundError: a first read finds no payload of the record's size.
        :raises ResourceCorruptError: a chunk under the window does not match its checksum.
        """
        entry = self._entries.get(resource_id)
        # A window as large as ``read`` maps on its own is left to ``read``.
        if entry is None or not record.complete or high - low >= PRIVATE_MAP_BYTES:
            return None
        known, mapping = entry.mapped
        if mapping is None and known is None:
            return self._first_page(resource_id, entry, record, low, high, offset, limit, flags, reach)
        if mapping is None:
            mapping = self._map(entry, record, None)  # read again: map it, no stat by path first
        else:
            held = entry.payload_file
            if (held is None or held[0] is not known or known[3] != record.resource.size  # type: ignore[index]
                    or not _kernels.file_unchanged(held[1].fd, known)):
                return None  # changed, or held no more: ``read`` looks again by path
        try:
            found = _kernels.page_text(mapping, low, high, offset, limit, flags, reach, record.checksums,
                                       record.checksum_chunk)
        except ValueError:
            if not mapping.closed:
                raise
            return None  # closed by close() in another thread: read it the long way
        if isinstance(found, int):
            raise corrupt(record, found)
        return found

    def _first_page(self, resource_id: str, entry: Entry, record: Record, low: int, high: int, offset: int,
                    limit: int, flags: int, reach: int) -> tuple[int, int, Optional[str]]:
        """A first read: the window's whole checksum chunks read with one ``pread``
        (no map to set up and fault in for one page), verified and paged in the
        same kernel call (``_kernels.read_page``); a second read maps the payload."""
        uri = record.resource.uri
        size = record.resource.size
        chunk = record.checksum_chunk
        checksums = record.checksums
        base = low - low % chunk if checksums is not None else low
        # One byte past the window's last chunk (when there is one) keeps its end from
        # looking like the payload's end.
        stop = min((-(-high // chunk) * chunk if checksums is not None else high) + 1, size)
        try:
            # Opened, identified, read, verified and paged in one kernel call (None: not the
            # record's size); ``found`` as ``_kernels.page_text``'s, in payload offsets.
            fd, identity, found = _kernels.read_page(entry.payload_path, base, stop - base, size, low, high, offset,
                                                     limit, flags, reach, checksums, chunk)
        except OSError as error:
            raise unreadable(uri, "has no readable payload", error) from None
        if found is None:
            os.close(fd)
            raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
        held = Descriptor(fd)  # closed when dropped: at once, or when the entry lets it go
        with self._lock:
            if entry.mapped[1] is None and entry.payload_file is None:  # (another thread may have mapped it)
                # Read once: the payload stays open (with the record file just parsed),
                # and the next read maps it from there, with no open or stat by path.
                entry.mapped = (identity, None)
                entry.payload_file = (identity, held)
                self._keep_open(entry, resource_id)
        if isinstance(found, int):
            raise corrupt(record, found)
        return found
