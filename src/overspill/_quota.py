"""The quota's eviction policy: which resources go when a location is over ``max_total_bytes``.

The backend offers the numbers, a lock and deletion (``backends.base.Quota``
and ``Backend.delete``); the policy is the store's, the same for every
backend: published resources go oldest ``created`` first (ties by id, any
session), under the location's cleanup lock, until its usage is within the
limit.  Each goes record first, as in a sweep, so a reader that already
holds its record finds no bytes (``ResourceNotFoundError``), never other
bytes.
"""

from __future__ import annotations

from .backends._report import CleanupReport

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional, Protocol

    from .backends.base import Backend, Quota

    class QuotaBackend(Backend, Quota, Protocol):
        """A backend with the ``Quota`` capability."""

__all__ = ["make_room", "room_made"]


def make_room(backend: QuotaBackend, limit: int) -> CleanupReport:
    """Evict published resources until ``backend``'s location takes at most ``limit`` bytes.

    The common case, already within the limit, costs one usage look-up and
    takes no lock.  Under the lock, two writers never both evict for the
    same room and a sweep never races an eviction.

    :raises OSError: the location cannot be read, or a resource not removed.
    """
    if backend.usage() + backend.pending_bytes() <= limit:
        return CleanupReport()
    return _evict(backend, limit)[0]


def room_made(backend: QuotaBackend, limit: int, then: Callable[[], None]) -> bool:
    """``make_room``, with the location counted whatever its running total says
    (a running output grows behind the total's back, in any process), then
    ``then()`` while the lock is still held if the location is within ``limit``;
    whether it was (it is not when what holds the room cannot be evicted:
    running outputs).  Two writers never both take the same room.

    :raises OSError: as ``make_room``.
    """
    return _evict(backend, limit, then)[1] <= limit


def _evict(backend: QuotaBackend, limit: int,
           then: Optional[Callable[[], None]] = None) -> tuple[CleanupReport, int]:
    """Under the lock: the location counted, then the oldest published resources evicted
    until it is within ``limit`` (then ``then()``, if it is); the report and the bytes it
    takes after the eviction."""
    with backend.eviction_lock():
        used = backend.recount() + backend.pending_bytes()
        removed: list[str] = []
        freed = 0
        if used > limit:
            for record in sorted(backend.records(), key=lambda record: (record.created_ms, record.id)):
                if used <= limit:
                    break
                if record.state == "running":
                    continue  # a live background command's output is never evicted; its bytes still count
                freed += backend.delete(record.id)
                removed.append(record.id)
                used = backend.usage() + backend.pending_bytes()
        if then is not None and used <= limit:
            then()
        return CleanupReport(len(removed), freed, 0, 0, tuple(removed)), used
