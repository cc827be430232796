"""Listing the local folder's records (``Backend.records``): through the
listing index (``_index.py``) when there is one, so that one session's listing
reads that session's records only; else by the names in the folder.
"""

from __future__ import annotations

import os

from ..errors import ResourceNotFoundError
from ..records import is_resource_id

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional

    from ..records import Record
    from ._index import ListingIndex

__all__ = ["LocalListing"]


class LocalListing:
    """``records`` for ``LocalBackend`` (a mixin)."""

    _directory: str
    _index: Optional[ListingIndex]
    _missing: Callable[[], bool]
    record: Callable[[str], Record]

    def _published_ids(self) -> list[str]:
        names = os.listdir(self._directory)
        return sorted(name[:-5] for name in names if name.endswith(".json") and is_resource_id(name[:-5]))

    def _valid_record(self, resource_id: str) -> Optional[Record]:
        try:
            return self.record(resource_id)
        except ResourceNotFoundError:
            return None

    def records(self, session_id: Optional[str] = None, /) -> list[Record]:
        """Valid records in id order; through the index when there is one, so
        that one session's listing reads that session's records only."""
        if self._missing():
            return []  # never written: nothing to list, and no index folder made for it
        if self._index is None:
            candidates = self._published_ids()
        else:
            candidates = self._index.candidates(session_id, self._valid_record)
        found = []
        for resource_id in candidates:
            try:
                record = self.record(resource_id)
            except ResourceNotFoundError:
                continue
            if session_id is None or record.session_id == session_id:
                found.append(record)
        return found
