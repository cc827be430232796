"""The local folder's retention sweep: what cleanup removes from a managed folder, and what it leaves.

Removed:
* a valid resource whose ``created`` is older than the retention;
* a pair whose record is valid but whose payload is missing, not a regular
  file, or of the wrong size;
* once older than the grace period: a payload without a record, a pair whose
  record is unreadable or invalid, and the store's own temporary files —
  unless a live writer holds the payload's lock (``writer_lock``): a writer
  that pauses for longer than the grace period keeps its files.  The quota's
  eviction removes such a payload whatever its age once its lock is free,
  when an overspill writer provably left it (its record's temporary file,
  made as the writer starts, is beside it): its writer is gone
  (``remove_dead_writers``).  A peer's payload (KiloCode/opencode take no
  lock and make no such file) may be a moment from its record: it waits out
  the grace period.
Every other file is left alone; what cannot be removed (a directory under a
resource's name, no permission) is counted in ``skipped`` and the sweep goes on.  One process sweeps a folder at a time
(``.cleanup.lock``); the others skip.  A record goes before its payload, so a
reader never finds a published record without the bytes it names.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from .. import _files
from .._buffers import LazyPattern
from ..errors import ResourceNotFoundError, StorageError
from .._owner import owner_holds
from ..records import ID_LENGTH, Record, load_record
from ._report import CleanupReport

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and pathlib cost start-up (issue 21); annotations are never evaluated
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from datetime import timedelta
    from pathlib import Path
    from typing import Optional, Union

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: sweeps are not serialised there
    fcntl = None  # type: ignore[assignment]

__all__ = ["BACKGROUND_LOCK_NAME", "CleanupReport", "LOCK_NAME", "TEMPORARY_PATTERN", "FolderSweep", "folder_bytes",
           "folder_lock", "remove_dead_writers", "sweep", "sweep_lock", "writer_lock"]

LOCK_NAME = ".cleanup.lock"
# Held while a background command is started (``LocalGrowing.starting_background``).
BACKGROUND_LOCK_NAME = ".background.lock"
_ID = r"[0-9a-f]{12}[0-9A-Za-z]{14}"
# Compiled on first use: only a sweep needs them, and ``re`` costs every command's start-up.
_PAIR_MEMBER = LazyPattern(rf"({_ID})\.(txt|json)")
_SEAL = LazyPattern(rf"({_ID})\.seal")
#: The names of the store's temporary record files: ``.{id}.{8 hex}.tmp``.
TEMPORARY_PATTERN = LazyPattern(rf"\.{_ID}\.[0-9a-f]{{8}}\.tmp")


def writer_lock(fd: int) -> bool:
    """Take the exclusive lock a live writer holds on its payload for its whole
    life (until its record is published or its files removed); False when
    someone else holds it.  Without ``fcntl`` (Windows) there is no lock: True.

    ``flock`` locks belong to the open file, so a sweep in the writer's own
    process is kept off it as well as one in another process.

    :raises OSError: the lock call failed for another reason.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@contextlib.contextmanager
def _unless_written(path: Path) -> Iterator[tuple[bool, os.stat_result | None]]:
    """Hold the writer lock of the payload at ``path`` while the body removes
    what belongs to it; yields (False, ...) (hands off) when a live writer
    holds it, else (True, the locked file's ``fstat``).  A payload that is
    missing or cannot be opened has no writer: (True, None)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        yield True, None
        return
    try:
        yield writer_lock(fd), os.fstat(fd)
    finally:
        os.close(fd)


def _read_record(path: Path, resource_id: str) -> Record | None:
    """The valid record at ``path``, or None when it is unreadable or invalid."""
    try:
        return load_record(path, resource_id)
    except ResourceNotFoundError:
        return None


def _age(info: os.stat_result | None, now: float) -> float:
    return float("inf") if info is None else now - info.st_mtime


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


class FolderSweep:
    """One retention pass over a managed folder (see the module docstring)."""

    def __init__(self, directory: Path, now: float, retention: timedelta, grace: timedelta, dry_run: bool) -> None:
        self.directory = directory
        self.dry_run = dry_run
        self.now = now
        self.retention_ms = retention.total_seconds() * 1000
        self.grace = grace.total_seconds()
        self.removed: list[str] = []
        self.bytes_freed = 0
        self.temporaries = 0
        self.skipped = 0

    def remove(self, path: Path) -> int | None:
        """Unlink ``path`` (in a dry run, only measure it); return the bytes it
        held, or None when it could not be removed (counted in ``skipped``)."""
        if not self.dry_run:
            try:
                return _files.remove_quietly(path)
            except OSError:
                # A directory under a resource's name, no permission: leave it,
                # and go on with the rest, so that one entry never stops expiry.
                self.skipped += 1
                return None
        info = _lstat(path)
        if info is not None and stat.S_ISDIR(info.st_mode):
            self.skipped += 1
            return None
        return 0 if info is None else info.st_size

    def remove_pair(self, resource_id: str, has_record: bool = True) -> None:
        freed = self.remove(self.directory / f"{resource_id}.json")
        if freed is None:
            return  # the record stays, so its payload stays: never a record without its bytes
        payload = self.remove(self.directory / f"{resource_id}.txt")
        if payload is None and not has_record:
            return  # nothing was removed
        seals = self.remove(self.directory / f"{resource_id}.seal")  # a background command's, if any
        freed += seals or 0
        self.removed.append(resource_id)
        self.bytes_freed += freed + (payload or 0)

    def abandoned(self, resource_id: str, payload: os.stat_result, *, dead_only: bool) -> None:
        """Remove the payload ``payload`` (measured) of ``resource_id``, found without a
        record, unless a live writer holds it or its record has come since.  ``dead_only``:
        only when its lock was taken (the writer provably gone), not when it cannot be
        opened now (out of descriptors, no permission: the writer could still be alive)."""
        payload_path = self.directory / f"{resource_id}.txt"
        with _unless_written(payload_path) as (unowned, locked):
            # The lock is free when the writer is gone, but also when it has
            # just published: its record renamed into place after the listing
            # that found none.  Under the lock no writer publishes any more, so
            # look again: with a record now, or another file locked than the one
            # measured, this is not an abandoned payload (a published pair is
            # judged by the next sweep).  One that cannot be opened has no writer,
            # after the grace period; before it, it may have one.
            if locked is None and dead_only:
                return
            if (unowned and (locked is None or os.path.samestat(locked, payload))
                    and _lstat(self.directory / f"{resource_id}.json") is None):
                self.remove_pair(resource_id, has_record=False)

    def dead_writers(self) -> CleanupReport:
        """Remove, whatever their age, the payloads without a record that an overspill
        writer left (its record's temporary file beside them) and whose writer lock is
        free (their writer died: a live one holds it until its record is published);
        nothing else.  Without ``fcntl`` (no lock to tell a live writer by) nothing."""
        if fcntl is None:  # pragma: no cover - Windows: only the grace period tells a leftover
            return CleanupReport()
        records, payloads, others = self.members()
        # A free lock tells a dead writer only for a writer that takes one: ours, which makes
        # its record's temporary file as it starts.  A peer's payload, without either, may be
        # a moment from its record (it writes the payload first): the grace period is its rule.
        ours = {name[1 : 1 + ID_LENGTH] for name in others if TEMPORARY_PATTERN.fullmatch(name)}
        for resource_id in sorted((payloads - records) & ours):
            payload = _lstat(self.directory / f"{resource_id}.txt")
            if payload is not None and stat.S_ISREG(payload.st_mode):
                self.abandoned(resource_id, payload, dead_only=True)
        return CleanupReport(len(self.removed), self.bytes_freed, self.temporaries, self.skipped, tuple(self.removed))

    def resource(self, resource_id: str, has_record: bool) -> None:
        payload_path = self.directory / f"{resource_id}.txt"
        record_path = self.directory / f"{resource_id}.json"
        if not has_record:
            payload = _lstat(payload_path)
            if payload is not None and _age(payload, self.now) > self.grace:
                self.abandoned(resource_id, payload, dead_only=False)
            return
        try:
            record = _read_record(record_path, resource_id)
        except StorageError:
            # Unreadable for now (no descriptors, no permission): not a broken pair to remove.
            self.skipped += 1
            return
        # The payload is measured after its record is read: a running output's record
        # is republished with its final size when it finishes, and the payload
        # measured before that would not match it.  A complete record's payload no
        # longer changes, so measured after it, a size that differs is a broken pair.
        payload = _lstat(payload_path)
        if record is None:
            # Unreadable or invalid: wait out the grace period of the newer file.
            newest = payload if payload is not None else _lstat(record_path)
            if _age(newest, self.now) > self.grace:
                self.remove_pair(resource_id)
            return
        if record.state == "running":
            if owner_holds(record.owner, resource_id):
                return  # a live background command's output: never removed, whatever its age
            # Lost (its owner is gone): expires as any resource; its size is that of its seals.
            if self.now * 1000 - record.created_ms > self.retention_ms:
                self.remove_pair(resource_id)
            return
        expired = self.now * 1000 - record.created_ms > self.retention_ms
        broken = payload is None or not stat.S_ISREG(payload.st_mode) or payload.st_size != record.resource.size
        if expired or broken:
            self.remove_pair(resource_id)

    def temporary(self, name: str) -> None:
        path = self.directory / name
        info = _lstat(path)
        if info is not None and _age(info, self.now) > self.grace:
            # ``.{id}.{hex}.tmp`` is the record a writer is publishing: its payload's lock says it is live.
            with _unless_written(self.directory / f"{name[1 : 1 + ID_LENGTH]}.txt") as (unowned, _):
                if not unowned:
                    return
                freed = self.remove(path)
            if freed is not None:
                self.bytes_freed += freed
                self.temporaries += 1

    def orphan_seals(self, resource_id: str) -> None:
        """Seals whose resource is gone (or was never published), once older than the grace."""
        path = self.directory / f"{resource_id}.seal"
        if _age(_lstat(path), self.now) > self.grace:
            freed = self.remove(path)
            if freed is not None:
                self.bytes_freed += freed
                self.temporaries += 1

    def members(self) -> tuple[set[str], set[str], list[str]]:
        """The folder listed once: the ids with a record, the ids with a payload, and the other names."""
        records: set[str] = set()
        payloads: set[str] = set()
        others: list[str] = []
        for name in os.listdir(self.directory):
            member = _PAIR_MEMBER.fullmatch(name)
            if member is not None:
                (records if member.group(2) == "json" else payloads).add(member.group(1))
            else:
                others.append(name)
        return records, payloads, others

    def run(self) -> CleanupReport:
        records, payloads, others = self.members()
        seals: set[str] = set()
        for name in others:
            if TEMPORARY_PATTERN.fullmatch(name):
                self.temporary(name)
            elif _SEAL.fullmatch(name):
                seals.add(name[:-5])
        for resource_id in sorted(records | payloads):
            self.resource(resource_id, resource_id in records)
        for resource_id in sorted(seals - records - payloads):
            self.orphan_seals(resource_id)
        return CleanupReport(len(self.removed), self.bytes_freed, self.temporaries, self.skipped, tuple(self.removed))


@contextlib.contextmanager
def folder_lock(directory: Union[str, Path], name: str, *, wait: bool,
                within: Optional[float] = None) -> Iterator[bool]:
    """Hold the folder's lock file ``name``; yields False (without it) when another
    process holds it and ``wait`` is false; ``within``: wait at most that many seconds.

    :raises OSError: the lock file cannot be opened, or stayed held ``within`` seconds (``EBUSY``).
    """
    # (closed by a forked child)
    lock_fd = _files.lock_exclusive(os.path.join(directory, name), wait=wait, within=within)
    if lock_fd is None:
        yield False
        return
    try:
        yield True
    finally:
        _files.close_lock_file(lock_fd)  # also releases the lock


def sweep_lock(directory: Union[str, Path], *, wait: bool,
               within: Optional[float] = None) -> AbstractContextManager[bool]:
    """Hold the folder's cleanup lock (``folder_lock`` of ``LOCK_NAME``).

    :raises OSError: the lock file cannot be opened, or stayed held ``within`` seconds (``EBUSY``).
    """
    return folder_lock(directory, LOCK_NAME, wait=wait, within=within)


def sweep(directory: Union[str, Path], now: float, retention: timedelta, grace: timedelta, *,
          dry_run: bool = False) -> CleanupReport:
    """One cleanup pass over ``directory`` at time ``now`` (seconds since the epoch).

    With ``dry_run`` nothing is removed: the report says what would be.

    :raises OSError: the folder or its lock file cannot be opened.
    """
    with sweep_lock(directory, wait=False) as locked:
        if not locked:
            return CleanupReport(skipped=1, busy=True)
        from pathlib import Path  # a sweep only: pathlib costs every command's start-up

        return FolderSweep(Path(directory), now, retention, grace, dry_run).run()


def remove_dead_writers(directory: Union[str, Path]) -> CleanupReport:
    """Remove the payloads that dead overspill writers left in ``directory`` (no record,
    their record's temporary file beside them, their writer lock free), whatever their age (``FolderSweep.dead_writers``): the quota's
    recount (under the cleanup lock when it evicts; after a sweep, without it: each
    removal is decided under the payload's writer lock), so that a killed writer's
    bytes never make an eviction remove published outputs in their place while they
    wait out the grace.

    :raises OSError: the folder cannot be listed.
    """
    from datetime import timedelta  # an eviction only: they cost every command's start-up
    from pathlib import Path

    return FolderSweep(Path(directory), 0.0, timedelta(0), timedelta(0), dry_run=False).dead_writers()


def folder_bytes(directory: Union[str, Path]) -> int:
    """Bytes held by the folder's regular files: payloads (finished or not), records, temporaries."""
    used = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    used += entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue  # removed while listing
    return used
