"""The local folder's growing resource: a background command's output, readable while it runs.

Files, beside the ordinary pair: ``{id}.txt`` (the payload, append-only),
``{id}.json`` (published at once with ``"state": "running"``, the owner and
no size) and ``{id}.seal`` (the seal entries of ``_seals``).  ``finish`` seals
the rest, republishes the record with the size, line count, exit code and the
ordinary checksums (an ordinary resource from then on) and removes the seal
file.  The payload's writer lock is held from creation to ``finish``, as for
any writer.
"""

from __future__ import annotations

import mmap
import os
import time

from .. import _files, _kernels
from .._frozen import replace
from .._owner import owner_holds
from ..errors import ResourceCorruptError, ResourceNotFoundError
from ..records import CHECKSUM_CHUNK, SCHEME, Record, Resource, read_record, unreadable, uri_for
from ._local_maps import Entry, map_range
from ._local_writer import LocalWriter

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, dataclasses and pathlib cost start-up (issue 21); annotations are never evaluated
    import threading
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any, Optional, Union

    from .._owner import Owner
    from ._seals import SealChain
    from ._usage import UsageTotal

__all__ = ["GrowingLocalWriter", "LocalGrowing"]


class GrowingLocalWriter(LocalWriter):
    """Appends to a published running resource, seals its progress, and finishes it."""

    def __init__(self, directory: str, resource_id: str, durable: bool, live: Any, usage: Any, *,
                 session_id: str, tool_call_id: str, mime: str, name: Optional[str], owner: Owner,
                 process: Union[tuple[int, int], Callable[[], tuple[int, int]], None]) -> None:
        super().__init__(directory, resource_id, durable, live, usage)
        self._seal_fd = -1
        self._sealed = 0
        self._seal_crc = 0  # CRC-32 of the bytes after ``_sealed``, from memory as they were written
        # The payload's bytes added to the folder's running total so far (at each seal): a running
        # output's bytes count toward the quota as it grows, in every process's check, not only once
        # it finished.  Until then the rest is this backend's pending bytes (``pending``).
        self._counted = 0
        self._record_bytes = 0  # the running record's ``{id}.json``
        self._seal_bytes = 0  # the seal file's entries written so far
        try:
            self._seal_fd = _files.create_exclusive(self.seal_path)
            if callable(process):
                # The command starts only now that its files exist: a folder that cannot take them
                # never runs it (see ``GrowingBackend.create_growing``).
                process = process()
            self._running = Record(Resource(uri_for(resource_id), mime, 0, name), session_id, tool_call_id,
                                   time.time_ns() // 1_000_000, None, CHECKSUM_CHUNK, None, None, "running",
                                   owner, process)
            self._record_bytes = self._put_record(self._running)
        except BaseException:
            self.abort()
            raise
        if live is not None:
            live[id(self)] = self  # its bytes not yet in the running total are pending (the quota's check)

    @property
    def seal_path(self) -> str:
        return f"{self._directory}/{self._id}.seal"

    @property
    def sealed(self) -> int:
        """Bytes sealed so far (readable by everyone)."""
        return self._sealed

    @property
    def record(self) -> Record:
        """The running record, as published at the start."""
        return self._running

    @property
    def overhead(self) -> int:
        """Bytes its files other than the payload take now (the running record, the seals): a
        count of the folder includes them, and the finished record replaces them."""
        return self._record_bytes + self._seal_bytes

    def _wrote(self, data: memoryview) -> None:
        super()._wrote(data)
        self._seal_crc = _kernels.crc32(data, self._seal_crc)

    def seal(self) -> None:
        """Seal what was written since the last seal (nothing to do when nothing was)."""
        if self._size == self._sealed:
            return
        from ._seals import seal_entry  # (struct, bisect) only a background command's writer needs it

        entry = seal_entry(self._id, self._sealed, self._size, self._seal_crc)
        _files.write_all(self._seal_fd, memoryview(entry))
        self._seal_bytes += len(entry)
        self._sealed = self._size
        self._seal_crc = 0
        if self._usage is not None and self._size > self._counted:
            self._usage.add(self._size - self._counted)
            self._counted = self._size

    @property
    def pending(self) -> int:
        """The bytes written since the last seal added them to the running total."""
        return self._size - self._counted

    def finish(self, exit_code: int, *, capture: Optional[tuple[int, int]] = None,
               lines: Optional[int] = None, mime: Optional[str] = None) -> Record:
        """Seal the rest and republish the record as an ordinary resource that says how the command ended.

        :raises OSError: the record could not be republished (the running one stays).
        """
        self.seal()
        checksums = self._checksums.finish()
        if self._durable:
            os.fsync(self._fd)
        running = self._running
        record = Record(Resource(running.resource.uri, mime or running.resource.mime, self._size, running.resource.name),
                        running.session_id, running.tool_call_id, running.created_ms, checksums,
                        CHECKSUM_CHUNK, capture, lines, "exited", running.owner, running.process, exit_code)
        self._put_record(record)  # counts the rest (``pending``) and the record before the rename
        self._close_seals()
        try:
            _files.remove_quietly(self.seal_path)
        except OSError:
            pass  # an orphan seal file beside an exited record is never read; cleanup removes it
        fd, self._fd = self._fd, -1
        os.close(fd)  # releases the writer lock: the resource is complete
        self._done()
        self._counted = self._size
        return record

    def release(self) -> None:
        """Let go of the files without finishing (the record could not be republished): they stay
        as a dead owner leaves them, the record running, the sealed prefix readable; never raises."""
        self._close_seals()
        self._done()  # its unsealed bytes are no longer pending: the next recount finds what is there
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)  # the writer lock: cleanup may judge the resource as a lost one
            except OSError:
                pass

    def _close_seals(self) -> None:
        if self._seal_fd >= 0:
            try:
                os.close(self._seal_fd)
            except OSError:
                pass
            self._seal_fd = -1

    def abort(self) -> None:
        """Remove the payload, the record and the seals; never raises."""
        self._close_seals()
        if self._usage is not None and self._counted:
            self._usage.add(-self._counted)  # (add never raises)
            self._counted = 0
        try:
            _files.remove_quietly(self.seal_path)
        except OSError:
            pass
        super().abort()


class LocalGrowing:
    """The ``GrowingBackend`` side of ``LocalBackend`` (a mixin: the backend sets
    up the folder, the entries and the writers' registry)."""

    _directory: str
    _durable: bool
    _created: bool
    _live: dict[int, LocalWriter]
    _usage: Optional[UsageTotal]
    _chains_lock: threading.Lock
    _entry: Callable[[str], Entry]
    record: Callable[[str], Record]
    read: Callable[[Record, int, int], memoryview]
    read_copy: Callable[[Record, int, int], bytes]

    def starting_background(self) -> AbstractContextManager[bool]:
        """The folder's lock for starting background commands (``.background.lock``), waited for:
        held from the ``max_background`` check to the new running record's publish, so that
        processes starting commands at once cannot all pass the check.

        :raises OSError: the lock file cannot be opened.
        """
        from ._sweep import BACKGROUND_LOCK_NAME, folder_lock  # only a background start needs it

        return folder_lock(self._directory, BACKGROUND_LOCK_NAME, wait=True)

    def create_growing(self, resource_id: str, /, *, session_id: str, tool_call_id: str, mime: str,
                       name: Optional[str], owner: Owner,
                       process: Union[tuple[int, int], Callable[[], tuple[int, int]], None]) -> "GrowingLocalWriter":
        """A growing resource, published at once as running (see ``_local_growing``); ``process`` as
        ``GrowingBackend.create_growing`` takes it.

        :raises FileExistsError: the id is taken.
        :raises OSError: the files could not be created or the record published.
        """
        if not self._created:
            _files.ensure_directory(self._directory)
            self._created = True
        return GrowingLocalWriter(self._directory, resource_id, self._durable, self._live, self._usage,
                                  session_id=session_id,
                                  tool_call_id=tool_call_id, mime=mime, name=name, owner=owner, process=process)

    def _sealed_chain(self, entry: Entry, uri: str) -> SealChain:
        """The running resource's seal chain, with the entries appended since the last look."""
        try:
            fd, info = _files.open_regular(entry.seal_path)
        except OSError as error:
            raise unreadable(uri, "has no readable seals", error) from None
        try:
            # A chain grows in place: two threads feeding it the same new entries would count them
            # twice in ``consumed`` and skip the entries after them for good.  Readers of a chain
            # need no lock (its lists only grow, each CRC before its end).
            with self._chains_lock:
                inode, chain = entry.chain
                if chain is None or inode != info.st_ino:
                    from ._seals import SealChain  # only a running resource has seals

                    chain = SealChain(uri[len(SCHEME):])
                if info.st_size > chain.consumed:
                    chain.feed(os.pread(fd, info.st_size - chain.consumed, chain.consumed))
                entry.chain = (info.st_ino, chain)
        except OSError as error:
            raise unreadable(uri, "has no readable seals", error) from None
        finally:
            os.close(fd)
        return chain

    def _growing(self, entry: Entry, record: Record) -> Record:
        """A running record as readers see it: the sealed size, and ``lost`` when its owner is gone."""
        try:
            chain = self._sealed_chain(entry, record.resource.uri)
        except ResourceNotFoundError:
            # The seals go when the command's record is republished: read that one.
            record, identity = read_record(entry.record_path, record.id)
            entry.parsed = (identity, record)
            if record.state != "running":
                return record
            raise
        state = "running" if owner_holds(record.owner, record.id) else "lost"
        return replace(record, resource=replace(record.resource, size=chain.end), state=state)

    def _read_growing(self, entry: Entry, record: Record, start: int, end: int,
                      copy: bool = False) -> memoryview | bytes:
        """``[start, end)`` of a running (or lost) resource's sealed prefix, each sealed stretch under it verified.

        The payload grows, so it is mapped per read, up to the end of the last
        stretch needed; the map goes when the caller releases the view.  With
        ``copy``, the bytes copied out of the map before they are checked
        (``SealChain.verified_copy``), and the map closed at once.
        """
        uri = record.resource.uri
        if start >= end:
            return b"" if copy else memoryview(b"")
        inode, chain = entry.chain
        if chain is None or chain.end < end:
            try:
                chain = self._sealed_chain(entry, uri)
            except ResourceNotFoundError:
                chain = None
            if chain is None or chain.end < end:
                # Finished meanwhile (the seals are gone): the same bytes, now an ordinary resource.
                current = self.record(record.id)
                if not current.complete or current.resource.size < end:
                    raise ResourceNotFoundError(f"resource {uri} no longer holds bytes {start} to {end}")
                return self.read_copy(current, start, end) if copy else self.read(current, start, end)
        low, high = chain.span(start, end)
        base = low - low % mmap.ALLOCATIONGRANULARITY

        def check(opened: os.stat_result) -> None:
            if opened.st_size < high:
                raise ResourceCorruptError(f"resource {uri} is corrupt: its payload is shorter than its seals "
                                           f"({opened.st_size} of {high} bytes)")

        mapping = map_range(entry.payload_path, uri, base, high, check)
        if copy:
            try:
                with memoryview(mapping) as part:
                    return chain.verified_copy(uri, part, base, start, end)
            finally:
                mapping.close()
        with memoryview(mapping) as part:
            chain.verify(uri, part, base, start, end)
            return part[start - base : end - base]
