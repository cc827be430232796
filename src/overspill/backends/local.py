"""The local backend: one folder of ``{id}.txt`` payloads and ``{id}.json`` records.

A resource is written as ``{id}.txt`` (the exact bytes, ``0600``, created
exclusively) and published by renaming its record into ``{id}.json``; payloads
are never rewritten, so a shared read-only ``mmap`` of one cannot fault.

Reads: per id, the paths are built once and the parsed record is kept with
the identity (inode, size, times) of the file it came from.  A page comes from
a cached map of the payload as a zero-copy view, after one ``lstat`` of the
payload and a check of the CRC-32 of every 64 KiB chunk under it, on every
read.  Ranges of 1 MiB and more get a map of their own, dropped when the
caller releases the view, so streaming a payload keeps memory flat.  Cleanup
is ``_sweep``: one process at a time per folder.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Optional

from .. import _files
from ..errors import ResourceCorruptError, ResourceNotFoundError
from ..records import (CHECKSUM_CHUNK, SCHEME, Record, Resource, is_resource_id, read_record, record_json,
                       record_size, unreadable, uri_for)
from .._owner import Owner, owner_alive
from ._checksums import Checksums, verify
from ._index import ListingIndex
from ._seals import SealChain
from ._sweep import folder_bytes, sweep, sweep_lock, writer_lock
from ._usage import UsageTotal
from .base import CleanupReport

__all__ = ["LocalBackend"]

_OPEN_MAPS = 16
_CACHED_RECORDS = 1024
# Ranges this large get a map of their own, dropped with the caller's view:
# streaming a payload range by range keeps memory flat, whatever its size.
_PRIVATE_MAP_BYTES = 1 << 20
# A durable writer sets the disk to work on each such stretch of its payload
# once written, so the fsync at publish waits for the last stretch, not for
# the whole payload (1 GiB: 0.52 s -> 0.02 s).  Linux's POSIX_FADV_DONTNEED
# starts the writeback of dirty pages and drops only pages already clean.
_WRITEBACK_BYTES = 16 << 20
_fadvise = getattr(os, "posix_fadvise", None)


class _LocalWriter:
    """Writes one resource: the payload under its id, then the record.

    Nothing is visible until ``publish`` renames the record into place; on any
    failure ``abort`` removes whatever this writer created.  The payload's
    descriptor stays open, holding the writer lock, until the record is in
    place or the files are gone: a cleanup (in this process or another) never
    sweeps a live writer's files, however long its producer pauses.
    """

    def __init__(self, directory: Path, resource_id: str, durable: bool,
                 live: Optional[dict[int, _LocalWriter]] = None, usage: Optional[UsageTotal] = None) -> None:
        # The backend's unpublished writers (counted by its quota check until
        # published) and its running total of the folder's bytes, if any.
        self._live = live
        self._usage = usage
        self._directory = directory
        self._durable = durable
        self._temporary: Optional[Path] = None
        self._published = False
        self._id = resource_id
        self._size = 0
        self._checksums = Checksums(CHECKSUM_CHUNK)
        self._written_back = 0  # the payload before this offset is on its way to the disk
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

    @property
    def id(self) -> str:
        return self._id

    @property
    def size(self) -> int:
        return self._size

    @property
    def payload_path(self) -> Path:
        return self._directory / f"{self._id}.txt"

    @property
    def record_path(self) -> Path:
        return self._directory / f"{self._id}.json"

    def write(self, data: memoryview, /) -> None:
        _files.write_all(self._fd, data)
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
        if self._durable:
            os.fsync(self._fd)
        record = Record(
            Resource(uri_for(self._id), mime, self._size, name), session_id, tool_call_id,
            time.time_ns() // 1_000_000, checksums, CHECKSUM_CHUNK, capture, lines,
        )
        written = self._put_record(record)
        fd, self._fd = self._fd, -1
        os.close(fd)  # releases the writer lock: the pair is complete and published
        self._done()
        if self._usage is not None:
            self._usage.add(self._size + written)
        return record

    def _put_record(self, record: Record) -> int:
        """Write ``record`` to a temporary file and rename it into ``{id}.json``: visible at once,
        whole; the record's bytes."""
        self._temporary = self._directory / f".{self._id}.{os.urandom(4).hex()}.tmp"
        temporary_fd = _files.create_exclusive(self._temporary)
        try:
            document = record_json(record)
            _files.write_all(temporary_fd, memoryview(document))
            if self._durable:
                os.fsync(temporary_fd)
        finally:
            os.close(temporary_fd)
        os.rename(self._temporary, self.record_path)
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
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1
        paths = [self.payload_path, self._temporary, self.record_path if self._published else None]
        for path in paths:
            if path is not None:
                try:
                    _files.remove_quietly(path)
                except OSError:
                    pass  # left for cleanup, which removes leftovers after the grace period


class _Entry:
    """What this process knows of one resource: its paths (built once), its
    parsed record with the file identity it was read under, the record's
    checksums as integers, and an open map of the payload with its identity."""

    # ``parsed`` and ``mapped`` are (identity, value) pairs replaced whole, so a
    # reader without the lock never pairs one identity with another's value.
    __slots__ = ("record_path", "payload_path", "seal_path", "parsed", "mapped", "chain")

    def __init__(self, directory: str, resource_id: str) -> None:
        self.record_path = f"{directory}/{resource_id}.json"
        self.payload_path = f"{directory}/{resource_id}.txt"
        self.seal_path = f"{directory}/{resource_id}.seal"
        self.parsed: tuple[Optional[tuple[int, ...]], Optional[Record]] = (None, None)
        self.mapped: tuple[Optional[tuple[int, ...]], Optional[mmap.mmap]] = (None, None)
        # A running resource's seals, parsed so far, with the seal file's inode.
        self.chain: tuple[Optional[int], Optional[SealChain]] = (None, None)


def _map_range(path: str, uri: str, base: int, end: int,
               check: Callable[[os.stat_result], None]) -> mmap.mmap:
    """A read-only map of the payload at ``path`` from ``base`` (page-aligned) to
    ``end``, once ``check`` accepted the ``fstat`` of the file opened."""
    try:
        fd, opened = _files.open_regular(path)
    except OSError as error:
        raise unreadable(uri, "has no readable payload", error) from None
    try:
        check(opened)
        return mmap.mmap(fd, end - base, access=mmap.ACCESS_READ, offset=base)
    except OSError as error:
        raise unreadable(uri, "cannot be mapped", error) from None
    finally:
        os.close(fd)


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: the cache key."""
    return (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_dev)


class LocalBackend:
    """Resources as file pairs in ``directory`` (created ``0700`` if missing).

    :param directory: the managed folder itself (the store passes
        ``data_dir/tool-output/managed``).
    :param durable: fsync payload, record and folder before ``publish`` returns.
    :param index: where to keep the listing index (``backends/_index.py``), a
        cache outside ``directory`` that makes listing a session cost what its
        own records do; None lists by reading every record.  The store passes
        ``data_dir/tool-output/index``.
    :param create: make the folder now (the default); with False a missing
        folder is made by the first write, and until then reads, listings
        and sweeps find nothing and create nothing (``overspill ls`` of a
        folder that was never written leaves no trace).
    :raises OSError: the folder cannot be created or is not a directory.
    """

    def __init__(self, directory: Path, *, durable: bool = True, index: Optional[Path] = None,
                 create: bool = True) -> None:
        self._directory = Path(directory)
        self._durable = bool(durable)
        if create:
            _files.ensure_directory(self._directory)
            self._created = True
        else:
            try:
                _files.check_owned_directory(self._directory)
                self._created = True
            except FileNotFoundError:
                self._created = False  # made by the first write, not by a reader
        self._folder = str(self._directory)
        if index is not None and Path(os.path.abspath(index)).is_relative_to(os.path.abspath(self._directory)):
            raise ValueError("the listing index must be outside the managed folder")
        self._index = None if index is None else ListingIndex(self._directory, Path(index), durable=self._durable)
        # The quota's running total lives beside the index; without an index the
        # quota check counts the folder (as a sweep always does).
        self._live: dict[int, _LocalWriter] = {}  # this backend's writers not yet published
        self._usage = None if index is None else UsageTotal(str(self._directory), str(index), self._pending)
        # Readers look entries up without the lock (a dict lookup is atomic);
        # the lock serialises insertions, evictions and map bookkeeping.
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._mapped_ids: OrderedDict[str, None] = OrderedDict()  # ids with an open map, oldest first

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def durable(self) -> bool:
        return self._durable

    def __repr__(self) -> str:
        return f"LocalBackend({str(self._directory)!r}, durable={self._durable})"

    # ------------------------------------------------------------------ writing
    def create(self, resource_id: str, /) -> _LocalWriter:
        if not self._created:
            _files.ensure_directory(self._directory)
            self._created = True
        writer = _LocalWriter(self._directory, resource_id, self._durable, self._live, self._usage)
        self._live[id(writer)] = writer
        return writer

    def create_growing(self, resource_id: str, /, *, session_id: str, tool_call_id: str, mime: str,
                       name: Optional[str], owner: Owner, process: Optional[tuple[int, int]]) -> "GrowingLocalWriter":
        """A growing resource, published at once as running (see ``_local_growing``).

        :raises FileExistsError: the id is taken.
        :raises OSError: the files could not be created or the record published.
        """
        from ._local_growing import GrowingLocalWriter

        if not self._created:
            _files.ensure_directory(self._directory)
            self._created = True
        return GrowingLocalWriter(self._directory, resource_id, self._durable, self._live, self._usage,
                                  session_id=session_id,
                                  tool_call_id=tool_call_id, mime=mime, name=name, owner=owner, process=process)

    def _missing(self) -> bool:
        """Whether a folder left to the first write does not exist yet: it holds nothing."""
        return not self._created and not os.path.isdir(self._directory)

    # ------------------------------------------------------------------ reading
    def _entry(self, resource_id: str) -> _Entry:
        entry = self._entries.get(resource_id)
        if entry is None:
            entry = _Entry(self._folder, resource_id)
            with self._lock:
                entry = self._entries.setdefault(resource_id, entry)
                if len(self._entries) > _CACHED_RECORDS:
                    # Oldest first (dicts keep insertion order); a dropped
                    # entry's map closes once no reader holds a view of it.
                    dropped = next(iter(self._entries))
                    self._mapped_ids.pop(dropped, None)
                    del self._entries[dropped]
        return entry

    def record(self, resource_id: str, /) -> Record:
        """The validated record of ``resource_id``, parsed again only when its file changed."""
        entry = self._entry(resource_id)
        known, record = entry.parsed
        if record is not None:
            try:
                info = os.lstat(entry.record_path)
            except FileNotFoundError:
                raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}") from None
            except OSError as error:
                raise unreadable(uri_for(resource_id), "has no readable record", error) from None
            if _identity(info) != known:
                record = None
        if record is None:
            # Parsed from the file that was opened, keyed by that file's fstat.
            record, info = read_record(entry.record_path, resource_id)
            entry.parsed = (_identity(info), record)
        if record.state != "running":
            return record
        return self._growing(entry, record)

    def _sealed_chain(self, entry: _Entry, uri: str) -> SealChain:
        """The running resource's seal chain, with the entries appended since the last look."""
        try:
            fd, info = _files.open_regular(entry.seal_path)
        except OSError as error:
            raise unreadable(uri, "has no readable seals", error) from None
        try:
            inode, chain = entry.chain
            if chain is None or inode != info.st_ino:
                chain = SealChain(uri[len(SCHEME):])
            if info.st_size > chain.consumed:
                chain.feed(os.pread(fd, info.st_size - chain.consumed, chain.consumed))
        except OSError as error:
            raise unreadable(uri, "has no readable seals", error) from None
        finally:
            os.close(fd)
        entry.chain = (info.st_ino, chain)
        return chain

    def _growing(self, entry: _Entry, record: Record) -> Record:
        """A running record as readers see it: the sealed size, and ``lost`` when its owner is gone."""
        try:
            chain = self._sealed_chain(entry, record.resource.uri)
        except ResourceNotFoundError:
            # The seals go when the command's record is republished: read that one.
            record, info = read_record(entry.record_path, record.id)
            entry.parsed = (_identity(info), record)
            if record.state != "running":
                return record
            raise
        state = "running" if record.owner is None or owner_alive(record.owner) else "lost"
        return replace(record, resource=replace(record.resource, size=chain.end), state=state)

    def _map(self, entry: _Entry, record: Record, identity: Optional[tuple[int, ...]]) -> mmap.mmap:
        """Open and map the payload (whose lstat gave ``identity``, if one was
        taken: a cold read opens without one); cache the map."""
        uri = record.resource.uri
        try:
            fd, opened = _files.open_regular(entry.payload_path)
        except OSError as error:
            raise unreadable(uri, "has no readable payload", error) from None
        try:
            if identity is None:
                if opened.st_size != record.resource.size:
                    raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
                identity = _identity(opened)
            elif _identity(opened) != identity:
                raise ResourceNotFoundError(f"resource {uri} changed while being opened")
            mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as error:
            raise unreadable(uri, "cannot be mapped", error) from None
        finally:
            os.close(fd)
        with self._lock:
            entry.mapped = (identity, mapping)
            self._mapped_ids[record.id] = None
            self._mapped_ids.move_to_end(record.id)
            if len(self._mapped_ids) > _OPEN_MAPS:
                oldest, _ = self._mapped_ids.popitem(last=False)
                evicted = self._entries.get(oldest)
                if evicted is not None:
                    # Closed by the GC once no reader holds a view of it.
                    evicted.mapped = (None, None)
        return mapping

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        """The bytes ``[start, end)`` as a view of the payload's map (no copy).

        One ``lstat`` of the payload per call revalidates the cached map; the
        checksum chunks under the range are verified on every call, so a byte
        changed in place (even through a shared writable map, which changes
        no timestamp) is never served.
        """
        entry = self._entry(record.id)
        uri = record.resource.uri
        if not record.complete:
            return self._read_growing(entry, record, start, end)
        known, mapping = entry.mapped
        if mapping is not None or end - start >= _PRIVATE_MAP_BYTES or start >= end:
            # The one stat of a read: the cached map is still this file's.
            try:
                info = os.lstat(entry.payload_path)
            except OSError as error:
                entry.mapped = (None, None)
                raise unreadable(uri, "has no payload", error) from None
            if not stat.S_ISREG(info.st_mode) or info.st_size != record.resource.size:
                entry.mapped = (None, None)
                raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
            if start >= end:
                return memoryview(b"")
            identity = _identity(info)
            if end - start >= _PRIVATE_MAP_BYTES:
                return self._read_large(entry, record, identity, start, end)
            if known != identity:
                mapping = self._map(entry, record, identity)
        else:
            mapping = self._map(entry, record, None)  # cold: open and fstat, no stat by name first
        try:
            whole = memoryview(mapping)  # type: ignore[arg-type]
        except ValueError:
            # The map was closed by close() in another thread.
            raise ResourceNotFoundError(f"resource {uri} is no longer open") from None
        with whole:
            verify(record, whole, 0, start, end)
            # The slice keeps the map's buffer exported after ``whole`` is released.
            return whole[start:end]

    def _read_large(self, entry: _Entry, record: Record, identity: tuple[int, ...],
                    start: int, end: int) -> memoryview:
        """A large range from a map of its own, unmapped when the caller releases
        the view: streaming a payload range by range keeps memory flat."""
        uri = record.resource.uri
        chunk = record.checksum_chunk
        first = start // chunk * chunk
        if record.checksums is not None:
            last = min(-(-end // chunk) * chunk, record.resource.size)
        else:
            last = end
        base = first - first % mmap.ALLOCATIONGRANULARITY

        def check(opened: os.stat_result) -> None:
            if _identity(opened) != identity:
                raise ResourceNotFoundError(f"resource {uri} changed while being opened")

        mapping = _map_range(entry.payload_path, uri, base, last, check)
        with memoryview(mapping) as part:
            verify(record, part, base, start, end)
            return part[start - base : end - base]

    def _read_growing(self, entry: _Entry, record: Record, start: int, end: int) -> memoryview:
        """``[start, end)`` of a running (or lost) resource's sealed prefix, each sealed stretch under it verified.

        The payload grows, so it is mapped per read, up to the end of the last
        stretch needed; the map goes when the caller releases the view.
        """
        uri = record.resource.uri
        if start >= end:
            return memoryview(b"")
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
                return self.read(current, start, end)
        low, high = chain.span(start, end)
        base = low - low % mmap.ALLOCATIONGRANULARITY

        def check(opened: os.stat_result) -> None:
            if opened.st_size < high:
                raise ResourceCorruptError(f"resource {uri} is corrupt: its payload is shorter than its seals "
                                           f"({opened.st_size} of {high} bytes)")

        mapping = _map_range(entry.payload_path, uri, base, high, check)
        with memoryview(mapping) as part:
            chain.verify(uri, part, base, start, end)
            return part[start - base : end - base]

    def drop_pages(self, record: Record, start: int, end: int, /) -> None:
        """A hint after a long scan of ``[start, end)``: its mapped pages are not needed soon.

        A scan through the shared map (the store's signal scan of an omitted
        middle) would otherwise keep every page it touched resident in this
        process.  The file's page cache is untouched; never raises.
        """
        entry = self._entries.get(record.id)
        mapping = None if entry is None else entry.mapped[1]
        if mapping is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        first = start - start % mmap.PAGESIZE
        try:
            mapping.madvise(mmap.MADV_DONTNEED, first, max(min(end, len(mapping)) - first, 0))
        except (OSError, ValueError):
            pass  # closed meanwhile, or refused: it was only a hint

    # ------------------------------------------------------------------ listing
    def _published_ids(self) -> list[str]:
        names = os.listdir(self._directory)
        return sorted(name[:-5] for name in names if name.endswith(".json") and is_resource_id(name[:-5]))

    def _valid_record(self, resource_id: str) -> Optional[Record]:
        try:
            return self.record(resource_id)
        except ResourceNotFoundError:
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
        found = []
        for resource_id in candidates:
            try:
                record = self.record(resource_id)
            except ResourceNotFoundError:
                continue
            if session_id is None or record.session_id == session_id:
                found.append(record)
        return found

    # ------------------------------------------------------------------ removal
    def _forget(self, resource_ids: Iterable[str]) -> None:
        with self._lock:
            for resource_id in resource_ids:
                self._mapped_ids.pop(resource_id, None)
                self._entries.pop(resource_id, None)

    def delete(self, resource_id: str, /) -> int:
        """Remove the pair, record first; the bytes freed (0 when it was gone)."""
        freed = _files.remove_quietly(self._directory / f"{resource_id}.json")
        freed += _files.remove_quietly(self._directory / f"{resource_id}.txt")
        freed += _files.remove_quietly(self._directory / f"{resource_id}.seal")
        self._forget([resource_id])
        if freed and self._usage is not None:
            self._usage.add(-freed)
        return freed

    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        if self._missing():
            return CleanupReport()  # never written: nothing to clean, and no lock file made for it
        report = sweep(self._directory, now, retention, grace, dry_run=dry_run)
        if not dry_run:
            self._forget(report.removed_ids)
            if self._usage is not None and not report.busy:
                try:
                    self._usage.recount()  # the correction: whatever others did behind the total's back
                except OSError:
                    pass  # the index folder is unusable: the quota check counts the folder itself
        return report

    # ------------------------------------------------------------------ the quota (``base.Quota``)
    def usage(self) -> int:
        """Bytes the folder's files take, by the running total (``_usage``) when
        there is one, without this backend's unpublished payloads
        (``pending_bytes``); a count of the folder when there is no usable total.

        :raises OSError: the folder cannot be read.
        """
        if self._missing():
            return 0
        if self._usage is not None:
            try:
                return self._usage.total()
            except OSError:
                pass  # no usable index folder: count the folder, as without one
        return max(folder_bytes(self._directory) - self._pending(), 0)

    def pending_bytes(self) -> int:
        """Bytes of this backend's payloads not yet published (``usage`` counts them at publish)."""
        return self._pending()

    def recount(self) -> int:
        """``usage``, counted from the folder's files and kept as the running total:
        the correction for whatever others did behind the total's back.

        :raises OSError: the folder cannot be read.
        """
        if self._missing():
            return 0
        if self._usage is not None:
            try:
                return self._usage.recount()
            except OSError:
                pass  # counted again by the next check that needs it
        return max(folder_bytes(self._directory) - self._pending(), 0)

    def eviction_lock(self) -> AbstractContextManager[bool]:
        """The folder's cleanup lock (``.cleanup.lock``), waiting for a sweep in progress.

        :raises OSError: the lock file cannot be opened.
        """
        return sweep_lock(self._directory, wait=True)

    def record_bytes(self, record: Record, /) -> int:
        """The bytes of ``record``'s ``{id}.json``, checksums for all of its size included."""
        return record_size(record, CHECKSUM_CHUNK)

    def _pending(self) -> int:
        """Bytes of this backend's payloads not yet published."""
        return sum(writer.size for writer in list(self._live.values()))

    def reset_after_fork(self) -> None:
        """In a forked child: a fresh lock and empty caches.

        Another thread of the parent may have held the lock (it is not in the
        child to release it) or been half-way through a cache update; the
        child starts from nothing and maps what it reads itself.
        """
        self._live = {}
        self._lock = threading.Lock()
        self._entries = {}
        self._mapped_ids = OrderedDict()
        if self._index is not None:
            self._index.reset_after_fork()

    def close(self) -> None:
        """Drop the cached records and maps (a map in use closes when its last view goes)."""
        with self._lock:
            maps = [entry.mapped[1] for entry in self._entries.values() if entry.mapped[1] is not None]
            self._entries = {}
            self._mapped_ids.clear()
        for mapping in maps:
            try:
                mapping.close()
            except BufferError:
                pass  # a page is being decoded from it; it closes when released
