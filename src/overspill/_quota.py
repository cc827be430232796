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

import errno

from .backends._report import CleanupReport
from .errors import StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional, Protocol, TypeVar

    from .backends.base import Backend, Quota
    from .records import Record

    class QuotaBackend(Backend, Quota, Protocol):
        """A backend with the ``Quota`` capability."""

    T = TypeVar("T")

__all__ = ["HeldByRunning", "make_room", "publish_within", "room_made"]


class HeldByRunning(StorageError):
    """An output not published: with every other published resource evicted, running
    background outputs (never evicted, their bytes counted) leave no room for it."""

    def __init__(self, running: int, limit: int) -> None:
        super().__init__(errno.ENOSPC, f"running background commands' outputs (never evicted) hold {running} of "
                                       f"the {limit} bytes that max_total_bytes leaves for outputs")
        self.running = running


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


def publish_within(backend: QuotaBackend, limit: int, publish: Callable[[], T], size: int = 0) -> T:
    """``publish()`` of a payload of ``size`` bytes once ``backend``'s location has room for
    it within ``limit`` (the writer's unpublished bytes are in ``pending_bytes``); its result.

    The common case, already within the limit, holds only the running total
    (``tally``: no count of the location, no cleanup lock; running outputs'
    bytes are in it as they are sealed), and the check and the publish are
    one step under it: a writer that finds room takes it before any other
    writer looks.  Otherwise ``room_made`` evicts and publishes under the
    cleanup lock, within the limit or, when what holds the room are payloads
    other writers have not published yet (each evicts in its turn when it
    publishes), anyway; but never when running outputs, which are never
    evicted, leave no room for these ``size`` bytes: ``HeldByRunning``.

    :raises HeldByRunning: running outputs hold the room (nothing is published).
    :raises OSError: as ``make_room``, or as ``publish``.
    """
    with backend.tally():
        if backend.usage() + backend.pending_bytes() <= limit:
            return publish()
    published: list[T] = []
    held = _evict(backend, limit, lambda: published.append(publish()), True, size)[2]
    if not published:
        raise HeldByRunning(held, limit)
    return published[0]


def room_made(backend: QuotaBackend, limit: int, size: int, then: Callable[[int], None],
              held: Callable[[], int] = lambda: 0) -> int:
    """Room for up to ``size`` more bytes within ``limit``, less ``held()``
    (room others hold that no count of the location sees yet, read under the
    lock): ``make_room`` for all of them, with the location counted whatever
    its running total says (a running output grows behind the total's back,
    in any process), then ``then(room)`` while the lock (and the running
    total, ``tally``) is still held, with ``room`` the bytes of ``size`` that
    fit (fewer when what holds the rest cannot be evicted: running outputs);
    ``room`` (0: none, and ``then`` is not called).  Two writers never both
    take the same room.

    :raises OSError: as ``make_room``, or as ``then``.
    """
    with backend.eviction_lock(), backend.tally():
        # ``held`` is read here, not by the caller: a room another writer took while this one
        # waited for the lock is in it (read before, it could be counted by neither).
        limit -= held()
        used = _evicted(backend, limit - size)[2]
        room = min(size, limit - used)
        if room <= 0:
            return 0
        then(room)
        return room


def _evict(backend: QuotaBackend, limit: int, then: Optional[Callable[[], None]] = None,
           anyway: bool = False, size: int = 0) -> tuple[CleanupReport, int, int]:
    """Under the lock: the location counted, then the oldest published resources evicted
    until it is within ``limit`` (then ``then()``, if it is, or ``anyway`` unless running
    outputs and ``size`` bytes together pass ``limit``); the report, the bytes it takes
    after the eviction, and the running outputs' bytes when they were counted (else 0)."""
    # The running total is held too: a writer that publishes without the lock
    # (``publish_within``'s common case) comes before the count or after ``then``.
    with backend.eviction_lock(), backend.tally():
        removed, freed, used, listed = _evicted(backend, limit)
        running = 0
        if then is not None and used > limit and anyway:
            # Nothing more can be evicted.  Other writers' unpublished payloads go when they publish,
            # each in its turn: this one may take their room for now.  Running outputs never go.
            running = sum(record.resource.size for record in listed if record.state == "running")
            anyway = running + size <= limit
        if then is not None and (used <= limit or anyway):
            then()
        return CleanupReport(len(removed), freed, 0, 0, tuple(removed)), used, running


def _evicted(backend: QuotaBackend, limit: int) -> tuple[list[str], int, int, list[Record]]:
    """The location counted, then the oldest published resources evicted until it is within
    ``limit`` (running ones never); under the eviction lock and the running total, held by the
    caller.  The ids removed, the bytes freed, the bytes the location takes after, and the
    records listed (none when it was within ``limit`` from the start)."""
    used = backend.recount() + backend.pending_bytes()
    removed: list[str] = []
    freed = 0
    listed: list[Record] = []
    if used > limit:
        listed = sorted(backend.records(), key=lambda record: (record.created_ms, record.id))
        for record in listed:
            if used <= limit:
                break
            if record.state == "running":
                continue  # a live background command's output is never evicted; its bytes still count
            freed += backend.delete(record.id)
            removed.append(record.id)
            used = backend.usage() + backend.pending_bytes()
    return removed, freed, used, listed
