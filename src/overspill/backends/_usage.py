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

``held()`` keeps the file locked for a whole step (the quota's check and the
publish it allows, ``_quota.publish_within``): the same thread's updates
inside it change the held total, so no other writer's check or publish comes
between.  A rise is written to the file at once (a publish counts its bytes
before its record is renamed into place: a writer killed after the rename
must leave the total high); a fall is written back once at the end.
"""

from __future__ import annotations

import os
from _thread import get_ident  # not threading, nor contextlib: a read imports this module (start-up)

from .. import _files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["USAGE_NAME", "UsageTotal"]

USAGE_NAME = "usage"


def _folder_bytes(folder: str) -> int:
    from ._sweep import folder_bytes  # the one definition of what the folder's files take

    return folder_bytes(folder)


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
        # The held step (``held``): the holding thread, its descriptor of the file, and
        # [the total the file holds, the total now].
        self._holder: int | None = None
        self._held_fd = -1
        self._step: list[int | None] = [None, None]

    def reset_after_fork(self) -> None:
        """In a forked child: no thread holds the total (the one that did in the parent is not
        here, and a child's thread that got its id must not take the hold for its own)."""
        self._holder = None
        self._held_fd = -1
        self._step = [None, None]

    def _locked(self) -> int:
        """The usage file, open and exclusively locked (-1 where there is no ``flock``)."""
        if not _files.CAN_LOCK:  # pragma: no cover - not POSIX: every check recounts
            return -1
        _files.ensure_directory(self._location)
        fd = _files.lock_exclusive(self._path)  # closed by a forked child: see _files
        assert fd is not None  # it waits
        return fd

    @staticmethod
    def _release(fd: int) -> None:
        _files.close_lock_file(fd)  # also releases the lock

    def _changed(self, total: int | None, change: int | None) -> int:
        """The total after ``change``: the folder counted when ``change`` is None or there is no total."""
        if total is None or change is None:
            # Caught up (or corrected) from the folder.  Another process's
            # unfinished payload is counted now and again at its publish:
            # the total errs high until the next correction, never low.
            return max(_folder_bytes(self._folder) - self._unpublished(), 0)
        return max(total + change, 0)

    @staticmethod
    def _read(fd: int) -> int | None:
        text = os.pread(fd, 32, 0)
        return int(text) if text.strip().isdigit() else None

    @staticmethod
    def _write(fd: int, total: int) -> None:
        data = f"{total}\n".encode("ascii")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))

    def _update(self, change: int | None) -> int:
        """Under the file's lock: the total plus ``change``, written back; the
        folder recounted instead when ``change`` is None or the file holds no total."""
        if self._holder == get_ident():  # inside this thread's ``held``: its lock is this update's
            step = self._step
            step[1] = total = self._changed(step[1], change)
            if step[0] is None or total > step[0]:
                # A rise goes to the file now, not at the end of the step: a process killed
                # before then must leave the total high (a publish counts its bytes first).
                try:
                    self._write(self._held_fd, total)
                    step[0] = total
                except OSError:
                    pass  # written back at the end of the step, or corrected by the next sweep
            return total
        fd = self._locked()
        if fd < 0:  # pragma: no cover - not POSIX
            return _folder_bytes(self._folder)
        try:
            total = self._read(fd)
            if total is not None and change == 0:
                return total
            total = self._changed(total, change)
            self._write(fd, total)
            return total
        finally:
            self._release(fd)

    def held(self) -> _Held:
        """Keep the file locked while a ``with`` block runs: this thread's
        ``total``, ``add`` and ``recount`` inside it use the held total (a rise
        written at once, a fall at the end), and every other writer's wait.  Nested, it holds
        nothing more; a file that cannot be opened holds nothing (the updates
        inside go on as without ``held``, each falling back as it does).

        :raises OSError: the file cannot be read.
        """
        return _Held(self)

    def total(self) -> int:
        """The folder's bytes as last counted and kept up.

        :raises OSError: the index folder or the folder cannot be read.
        """
        return self._update(0)

    def add(self, change: int) -> bool:
        """Add ``change`` bytes (negative: removed); whether the total holds the
        change.  Never raises (the next sweep corrects a total that could not be
        kept up)."""
        try:
            self._update(change)
        except OSError:
            return False
        return True

    def recount(self) -> int:
        """Count the folder's files again and keep that as the total.

        :raises OSError: the folder cannot be read.
        """
        return self._update(None)


class _Held:
    """``UsageTotal.held``'s block (a class, not contextlib: start-up)."""

    __slots__ = ("_fd", "_usage")

    def __init__(self, usage: UsageTotal) -> None:
        self._usage = usage
        self._fd = -1

    def __enter__(self) -> None:
        usage = self._usage
        if usage._holder == get_ident():
            return
        try:
            fd = usage._locked()
        except OSError:
            return
        if fd < 0:  # pragma: no cover - not POSIX: nothing to hold
            return
        try:
            total = usage._read(fd)
        except BaseException:
            usage._release(fd)
            raise
        self._fd = fd
        usage._step = [total, total]
        usage._held_fd = fd
        usage._holder = get_ident()

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        usage = self._usage
        (written, now), usage._step, usage._holder, usage._held_fd = usage._step, [None, None], None, -1
        try:
            if now is not None and now != written:
                try:
                    usage._write(fd, now)
                except OSError:
                    pass  # as ``add``: the next sweep corrects a total that could not be kept up
        finally:
            usage._release(fd)
