"""The local folder's ``Quota`` capability (``backends.base.Quota``): the store's
eviction policy (``overspill._quota``) reads the folder's bytes here.

The running total of ``_usage`` is the fast count; this backend's payloads
not yet published are its ``pending_bytes`` (their publish adds them).
"""

from __future__ import annotations

from ..records import CHECKSUM_CHUNK, Record, record_size
from ._usage import UsageTotal

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Optional

    from ._local_writer import LocalWriter

__all__ = ["LocalQuota", "unpublished_bytes"]


class LocalQuota:
    """The quota's numbers and lock for ``LocalBackend`` (a mixin)."""

    _directory: str
    _live: dict[int, LocalWriter]
    _usage: Optional[UsageTotal]
    _missing: Callable[[], bool]

    def usage(self) -> int:
        """Bytes the folder's files take, by the running total (``_usage``) when
        there is one, without this backend's unpublished payloads
        (``pending_bytes``); a count of the folder when there is no usable total.

        :raises OSError: the folder cannot be read.
        """
        return self._counted(UsageTotal.total)

    def pending_bytes(self) -> int:
        """Bytes of this backend's payloads not yet published (``usage`` counts them at publish)."""
        return self._pending()

    def recount(self) -> int:
        """``usage``, counted from the folder's files and kept as the running total:
        the correction for whatever others did behind the total's back.  The payloads
        that dead overspill writers left (no record, their record's temporary file beside
        them, their writer lock free: ``_sweep.remove_dead_writers``) are removed first,
        whatever their age, as the Redis backend's recount drops its dead writers'
        bytes: otherwise they would count until the sweep's grace period, with published
        outputs evicted in their place (a live writer's payload is locked: never removed).
        Called under ``eviction_lock``.

        :raises OSError: the folder cannot be read.
        """
        if not self._missing():
            from ._sweep import remove_dead_writers  # (the cleanup module) only an eviction needs it

            remove_dead_writers(self._directory)
        return self._counted(UsageTotal.recount)

    def _counted(self, kept: Callable[[UsageTotal], int]) -> int:
        """``kept(total)`` of the running total, else the folder counted (without
        this backend's unpublished payloads) when there is no usable total."""
        if self._missing():
            return 0
        if self._usage is not None:
            try:
                return kept(self._usage)
            except OSError:
                pass  # no usable index folder: count the folder, as without one
        from ._sweep import folder_bytes  # (the cleanup module) only without a running total

        return max(folder_bytes(self._directory) - self._pending(), 0)

    def eviction_lock(self) -> AbstractContextManager[bool]:
        """The folder's cleanup lock (``.cleanup.lock``), waiting for a sweep in progress
        at most ``CLEANUP_LOCK_WAIT_SECONDS``, as the Redis backend waits for its lock.

        :raises OSError: the lock file cannot be opened, or another process held it
            all that time (``EBUSY``: a stopped cleaner must not hang every writer).
        """
        from . import _report
        from ._sweep import sweep_lock  # only an eviction needs the cleanup module

        return sweep_lock(self._directory, wait=True, within=_report.CLEANUP_LOCK_WAIT_SECONDS)

    def tally(self) -> AbstractContextManager[None]:
        """The running total held (``UsageTotal.held``): a publish inside counts
        its bytes with no other writer's check or publish in between.  Without a
        running total nothing is held (each check counts the folder).

        """
        if self._usage is None or self._missing():
            from contextlib import nullcontext

            return nullcontext()
        return self._usage.held()

    def record_bytes(self, record: Record, /) -> int:
        """The bytes of ``record``'s ``{id}.json``, checksums for all of its size included."""
        return record_size(record, CHECKSUM_CHUNK)

    def _pending(self) -> int:
        """Bytes of this backend's payloads not yet published."""
        return unpublished_bytes(self._live)


def unpublished_bytes(live: dict[int, LocalWriter]) -> int:
    """Bytes of the payloads of ``live`` writers not yet in the running total (not yet published;
    a growing payload's bytes since it last added them, at its last seal)."""
    return sum(writer.pending for writer in list(live.values()))
