"""The local folder's writer: one resource's payload, then its record.

A payload is written to ``{id}.txt`` (created exclusively, ``0600``, its
writer lock held until the pair is published or gone) and published by
renaming its record into ``{id}.json``; ``LocalBackend.create`` hands it out.
The record's temporary file (``.{id}.{8 hex}.tmp``) is made as the writer
starts, not at the publish: beside a payload without a record, it says an
overspill writer left it, whose free lock then means it is dead
(``_sweep.remove_dead_writers``); a peer's payload, written without a lock
or a temporary file, is never taken for one.
"""

from __future__ import annotations

import os
import time

from .. import _files
from ..records import CHECKSUM_CHUNK, Record, Resource, record_json, uri_for
from ._checksums import Checksums

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and pathlib cost start-up (issue 21); annotations are never evaluated
    from datetime import timedelta
    from typing import Optional

    from ._usage import UsageTotal

__all__ = ["LocalWriter"]

# A durable writer sets the disk to work on each such stretch of its payload
# once written, so the fsync at publish waits for the last stretch, not for
# the whole payload (1 GiB: 0.52 s -> 0.02 s).  Linux's POSIX_FADV_DONTNEED
# starts the writeback of dirty pages and drops only pages already clean.
_WRITEBACK_BYTES = 16 << 20
_fadvise = getattr(os, "posix_fadvise", None)


class LocalWriter:
    """Writes one resource: the payload under its id, then the record.

    Nothing is visible until ``publish`` renames the record into place; on any
    failure ``abort`` removes whatever this writer created.  The payload's
    descriptor stays open, holding the writer lock, until the record is in
    place or the files are gone: a cleanup (in this process or another) never
    sweeps a live writer's files, however long its producer pauses.
    """

    def __init__(self, directory: str, resource_id: str, durable: bool,
                 live: Optional[dict[int, LocalWriter]] = None, usage: Optional[UsageTotal] = None) -> None:
        # The backend's unpublished writers (counted by its quota check until
        # published) and its running total of the folder's bytes, if any.
        self._live = live
        self._usage = usage
        self._directory = directory
        self._durable = durable
        self._temporary: Optional[str] = None
        self._temporary_fd = -1  # the record's temporary file, made at the start (the module docstring)
        self._published = False
        self._id = resource_id
        # The bytes in the payload file.  Each piece is written as it is given: the store joins a
        # stream's small chunks (``_store_streams``) before they reach a writer, once for both
        # stream paths, and a growing writer's pieces must be in the file when sealed.
        self._size = 0
        self._checksums = Checksums(CHECKSUM_CHUNK)
        self._written_back = 0  # the payload before this offset is on its way to the disk
        self._settled = False  # the payload fsync-ed (``settle``)
        from ._sweep import writer_lock  # the cleanup module: only a process that writes needs it

        self._fd = _files.create_exclusive(self.payload_path)  # FileExistsError: the store draws again
        try:
            # A sweep with a zero grace period can take the new file between
            # its creation and this lock, and unlink it: then the name no
            # longer leads to this file, and the store draws another id.
            try:
                taken = not writer_lock(self._fd) or not os.path.samestat(os.fstat(self._fd),
                                                                          os.lstat(self.payload_path))
            except FileNotFoundError:
                taken = True
            if taken:
                raise FileExistsError(17, "a cleanup took the new payload", str(self.payload_path))
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise
        try:
            self._new_temporary()  # after the lock: a marked payload is a live writer's or a dead one's
        except BaseException:
            self.abort()  # (the payload is ours: its lock is held)
            raise

    def _new_temporary(self) -> None:
        """Create the record's temporary file, kept open for ``_put_record``."""
        temporary = f"{self._directory}/.{self._id}.{os.urandom(4).hex()}.tmp"
        self._temporary_fd = _files.create_exclusive(temporary)
        self._temporary = temporary  # only once it is ours: ``abort`` removes it

    @property
    def id(self) -> str:
        return self._id

    @property
    def size(self) -> int:
        """The bytes written so far (all in the payload file)."""
        return self._size

    @property
    def pending(self) -> int:
        """The payload's bytes that the folder's running total does not hold yet (all, until the
        publish)."""
        return self._size

    @property
    def payload_path(self) -> str:
        return f"{self._directory}/{self._id}.txt"

    @property
    def record_path(self) -> str:
        return f"{self._directory}/{self._id}.json"

    def write(self, data: memoryview, /) -> None:
        """Append ``data`` to the payload now, as given (a stream's small chunks are joined by the
        store before they get here).

        :raises OSError: a write failed part-way (the disk full, a file-size
            limit).  The bytes that did reach the file are accounted for
            (size, checksums) all the same, and only they, so the payload file
            never holds more or less than this writer says, and a growing
            resource published with that size stays readable up to it.
        """
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
        finally:
            if written:
                self._wrote(data[:written])

    def _wrote(self, data: memoryview) -> None:
        """Account for ``data``, just appended to the payload."""
        self._size += len(data)
        self._checksums.feed(data)
        if self._durable and self._size - self._written_back >= _WRITEBACK_BYTES and _fadvise is not None:
            try:
                _fadvise(self._fd, self._written_back, self._size - self._written_back, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass  # a hint: the fsync at publish writes whatever it did not start
            self._written_back = self._size

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
                retention: timedelta, capture: Optional[tuple[int, int]] = None,
                lines: Optional[int] = None) -> Record:
        del retention  # the folder expires by sweep, which reads ``created``
        checksums = self._checksums.finish()
        self.settle()
        record = Record(
            Resource(uri_for(self._id), mime, self._size, name), session_id, tool_call_id,
            time.time_ns() // 1_000_000, checksums, CHECKSUM_CHUNK, capture, lines,
        )
        self._put_record(record)
        fd, self._fd = self._fd, -1
        os.close(fd)  # releases the writer lock: the pair is complete and published
        self._done()
        return record

    def settle(self) -> None:
        """The payload fsync-ed now when durable (once: ``publish`` does not repeat it)."""
        if self._durable and not self._settled:
            os.fsync(self._fd)
            self._settled = True

    def _put_record(self, record: Record) -> int:
        """Write ``record`` to a temporary file and rename it into ``{id}.json``: visible at once,
        whole; the record's bytes.  A complete record's bytes and the payload's ``pending`` ones
        are added to the folder's running total before the rename (taken back if it fails)."""
        if self._temporary_fd < 0:
            self._new_temporary()  # a growing writer's later publish (each try under a new name)
        temporary_fd, self._temporary_fd = self._temporary_fd, -1
        added = 0
        try:
            try:
                document = record_json(record)
                _files.write_all(temporary_fd, memoryview(document))
                if self._durable:
                    os.fsync(temporary_fd)
            finally:
                os.close(temporary_fd)
            if self._usage is not None and record.complete:
                # Counted before the record is visible, not after: a writer killed between the two
                # leaves the total high until the next correction (a recount), never low; low, the
                # quota would trust it and let the folder pass max_total_bytes.
                change = self.pending + len(document)
                if self._usage.add(change):
                    added = change
            os.rename(self._temporary, self.record_path)
        except BaseException:
            if added:
                self._usage.add(-added)  # type: ignore[union-attr]  # not published: not in the folder
            # A growing writer tries again under a new name: each failed try's file goes now.
            try:
                _files.remove_quietly(self._temporary)
            except OSError:
                pass  # a leftover, which cleanup removes after the grace period
            raise
        self._published = True
        self._temporary = None
        if self._durable:
            _files.fsync_directory(self._directory)
        return len(document)

    def _done(self) -> None:
        if self._live is not None:
            self._live.pop(id(self), None)

    def abort(self) -> None:
        """Remove everything this writer created; never raises."""
        self._done()
        for fd in (self._temporary_fd, self._fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._temporary_fd = self._fd = -1
        paths = [self.payload_path, self._temporary, self.record_path if self._published else None]
        for path in paths:
            if path is not None:
                try:
                    _files.remove_quietly(path)
                except OSError:
                    pass  # left for cleanup, which removes leftovers after the grace period
