"""A page read in one step from the local backend's cached map (the
``PageTexts`` capability): one ``fstat`` of the payload held open with the
map, then one kernel call that verifies, finds the page and makes its text."""

from __future__ import annotations

from .. import _kernels
from ._checksums import corrupt
from ._local_maps import PRIVATE_MAP_BYTES, still_named

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    import mmap
    from collections.abc import Callable
    from typing import Optional

    from ..records import Record
    from ._local_maps import Entry

__all__ = ["LocalPages"]


class LocalPages:
    """``page_text`` for ``LocalBackend`` (a mixin)."""

    _entries: dict[str, Entry]
    _map: Callable[[Entry, Record, Optional[tuple[int, ...]]], mmap.mmap]  # open, map and cache the payload

    def page_text(self, record: Record, low: int, high: int, offset: int, limit: int, flags: int, reach: int, /
                  ) -> Optional[tuple[int, int, Optional[str]]]:
        """A page from the payload's map: one ``fstat`` of the payload held open
        with it (as ``read``'s warm path; a first read maps it), then one kernel
        call verifies the chunks of ``[low, high)``, finds the page and makes
        its text (``_kernels.page_text``).  None when the map cannot be
        trusted without a stat by path, or for a running resource.

        :raises ResourceNotFoundError: a first read finds no payload of the record's size.
        :raises ResourceCorruptError: a chunk under the window does not match its checksum.
        """
        entry = self._entries.get(record.id)
        # A window as large as ``read`` maps on its own is left to ``read``.
        if entry is None or not record.complete or high - low >= PRIVATE_MAP_BYTES:
            return None
        known, mapping = entry.mapped
        if mapping is None:
            mapping = self._map(entry, record, None)  # cold: open and fstat, no stat by path first
        else:
            held = entry.payload_file
            if (held is None or held[0] is not known or known[3] != record.resource.size  # type: ignore[index]
                    or not still_named(held[1], known)):
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
