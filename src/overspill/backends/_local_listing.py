"""Listing the local folder's records (``Backend.records``): through the
listing index (``_index.py``) when there is one, so that one session's listing
reads that session's records only; else by the names in the folder.

A record that cannot be read now (no permission, no descriptors) cannot say
whose it is.  It is never named to another session, nor does it stop another
session's listing or the quota's eviction (which lists every session): such
listings skip it, and a catch-up leaves it out of the index, so that it is
looked at again once readable.  Only a listing of the session the index
attributes it to (it read it as that session's) says it cannot read it.
"""

from __future__ import annotations

import os

from ..errors import ResourceNotFoundError, StorageError
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
        """The valid record of ``resource_id``; None when it is gone, invalid or cannot be read now."""
        try:
            return self.record(resource_id)
        except (ResourceNotFoundError, StorageError):
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
        # One session's candidates from the index are those it read as that session's.
        attributed = self._index is not None and session_id is not None
        found = []
        for resource_id in candidates:
            try:
                record = self.record(resource_id)
            except ResourceNotFoundError:
                continue
            except StorageError:
                if attributed:
                    raise  # this session's own output, which it cannot read now
                continue  # whose it is cannot be told: not this listing's to fail on (see the module docstring)
            if session_id is None or record.session_id == session_id:
                found.append(record)
        return found
