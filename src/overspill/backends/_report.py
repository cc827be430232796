"""``CleanupReport``: what one sweep removed (see ``base``, which re-exports it)."""

from __future__ import annotations

from .._frozen import frozen

__all__ = ["CLEANUP_LOCK_WAIT_SECONDS", "CleanupReport"]

#: How long a write that must evict waits for the location's cleanup lock (a sweep or another
#: eviction in progress) before it fails with a ``StorageError`` (EBUSY) that says so: a holder
#: that stopped (SIGSTOP, a debugger) must not hang every writer that needs room.  A sweep takes
#: far less; Redis's lock also expires by itself (``_redis_keys.LOCK_MS``), the local ``flock``
#: only when its holder dies.
CLEANUP_LOCK_WAIT_SECONDS = 60.0


@frozen(defaults={"removed": 0, "bytes_freed": 0, "temporaries": 0, "skipped": 0, "removed_ids": (),
                  "busy": False}, hidden=("removed_ids",))
class CleanupReport:
    """What one sweep removed.

    ``removed`` counts resources (pairs or lone payloads and records),
    ``temporaries`` leftover temporary files (or partial writes), ``bytes_freed``
    all bytes released.  ``skipped`` counts what the sweep left that it would
    have removed: entries it could not remove (a directory under a
    resource's name, no permission), and the whole location (1, with ``busy``)
    when another process was sweeping it.  So ``if report.skipped`` means
    "something was not cleaned".
    """

    __slots__ = ("removed", "bytes_freed", "temporaries", "skipped", "removed_ids", "busy")
    removed: int
    bytes_freed: int
    temporaries: int
    skipped: int
    removed_ids: tuple[str, ...]
    busy: bool
