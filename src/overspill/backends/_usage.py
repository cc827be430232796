"""A running total of the managed folder's bytes, so the quota needs no scan per write.

``make_room`` once ``scandir``-ed and ``stat``-ed every file of the folder on
every write: 2 ms at 500 resources, 93-211 ms at 12,000 (issue 21).  The
total is kept instead in one small file beside the listing index
(``index/usage``, the decimal total and a newline), shared by every process
that writes the folder:

* a publish adds its payload's and record's bytes, a delete subtracts what it
  freed, each under an exclusive ``flock`` of the file (read, add, write);
* a missing or unreadable file is caught up from the folder (one scan), as
  the listing index is;
* every sweep, and every eviction, recounts it from the folder, which
  corrects what others did behind its back (a peer tool's writes, files
  removed by hand, a crashed writer's leftovers).

Between corrections the total can only lag what it does not see; the quota
check that trusts it evicts from an exact recount, never from the total.
"""

from __future__ import annotations

import os

from .. import _files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["USAGE_NAME", "UsageTotal"]

USAGE_NAME = "usage"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _folder_bytes(folder: str) -> int:
    from ._sweep import folder_bytes  # the one definition of what the folder's files take

    return folder_bytes(folder)


# Descriptors of usage files this process holds locked right now.  A fork
# copies them into the child, and a flock belongs to the open file, not the
# thread: the child's copy would keep the parent's lock held for ever and the
# child's first update would wait on itself.  The child closes its copies.
_LOCKED_FDS: set[int] = set()


def _close_inherited_locks() -> None:
    for fd in list(_LOCKED_FDS):
        try:
            os.close(fd)
        except OSError:
            pass
    _LOCKED_FDS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


class UsageTotal:
    """The running total of ``folder``'s bytes, kept in ``location/usage``.

    :param folder: the managed folder.
    :param location: the listing index's folder (outside ``folder``).
    :param unpublished: the bytes of this process's payloads still being
        written: a count of the folder holds them, and their publish adds them.
    """

    def __init__(self, folder: str, location: str, unpublished: Callable[[], int]) -> None:
        self._folder = folder
        self._location = location
        self._unpublished = unpublished
        self._path = os.path.join(location, USAGE_NAME)

    def _update(self, change: int | None) -> int:
        """Under the file's lock: the total plus ``change``, written back; the
        folder recounted instead when ``change`` is None or the file holds no total."""
        try:
            import fcntl  # here, not at import: a read takes no lock (start-up)
        except ImportError:  # pragma: no cover - not POSIX: every check recounts
            return _folder_bytes(self._folder)
        _files.ensure_directory(self._location)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, _files.FILE_MODE)
        _LOCKED_FDS.add(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.pread(fd, 32, 0)
            total = int(text) if change is not None and text.strip().isdigit() else None
            if total is None:
                # Caught up (or corrected) from the folder.  Another process's
                # unfinished payload is counted now and again at its publish:
                # the total errs high until the next correction, never low.
                total = max(_folder_bytes(self._folder) - self._unpublished(), 0)
            elif change:
                total = max(total + change, 0)
            else:
                return total
            data = f"{total}\n".encode("ascii")
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            return total
        finally:
            _LOCKED_FDS.discard(fd)
            os.close(fd)  # also releases the lock

    def total(self) -> int:
        """The folder's bytes as last counted and kept up.

        :raises OSError: the index folder or the folder cannot be read.
        """
        return self._update(0)

    def add(self, change: int) -> None:
        """Add ``change`` bytes (negative: removed); never raises (the next
        sweep corrects a total that could not be kept up)."""
        try:
            self._update(change)
        except OSError:
            pass

    def recount(self) -> int:
        """Count the folder's files again and keep that as the total.

        :raises OSError: the folder cannot be read.
        """
        return self._update(None)
