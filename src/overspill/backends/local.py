"""The local backend: one folder of ``{id}.txt`` payloads and ``{id}.json`` records.

A resource is written as ``{id}.txt`` (the exact bytes, ``0600``, created
exclusively) and published by renaming its record into ``{id}.json``; payloads
are never rewritten, so a shared read-only ``mmap`` of one cannot fault.

Reads: per id, the paths are built once and the parsed record is kept with
the identity (inode, size, times) of the file it came from.  A page comes from
a cached map of the payload, after one ``fstat`` of the payload held open
with it (an ``lstat`` by path when that shows a change) and a check of the
CRC-32 of every checksum chunk under it, on every read: as a zero-copy view
(``read``), as bytes copied out before they are checked (``read_copy``), or
as the page's text from one kernel call (``_local_pages``).  Ranges of 1 MiB and more get a map of their own, dropped when the
caller releases the view, so streaming a payload keeps memory flat.  Cleanup
is ``_sweep``: one process at a time per folder; listing is ``_local_listing``.
"""

from __future__ import annotations

import mmap
import os
import stat
from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)
from _weakref import ref as _weak  # weakref's ref, without importing weakref (start-up)

from .. import _files, _kernels
from ..errors import ResourceNotFoundError
from ..records import Record, open_record, unreadable, uri_for
from ._checksums import verified_copy, verify
from ._index import ListingIndex
from ._local_growing import LocalGrowing
from ._local_listing import LocalListing
from ._local_maps import PRIVATE_MAP_BYTES, Descriptor, Entry, drop_mapped_pages, file_identity, hold, map_range
from ._local_pages import LocalPages
from ._local_quota import LocalQuota, unpublished_bytes
from ._local_writer import LocalWriter
from ._usage import UsageTotal
from ._report import CleanupReport

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and pathlib cost start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterable
    from datetime import timedelta
    from pathlib import Path
    from typing import Optional, Union

__all__ = ["LocalBackend"]

# Past this many bytes, a read verifies its range a step at a time (a multiple of any checksum
# chunk a record names up to it), giving back each step's pages.
_VERIFY_STEP = 4 << 20

_OPEN_MAPS = 16
_CACHED_RECORDS = 1024
# Past this many resources with large-read maps listed, the ones whose maps are all gone are dropped.
_LARGE_MAP_IDS = 64


def _inside(path: str, folder: str) -> bool:
    """Whether the absolute ``path`` is ``folder`` or under it (``Path.is_relative_to``)."""
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")


def _absolute(path: Union[str, os.PathLike[str]]) -> str:
    """``path`` as text, against the working folder of now when relative (``..`` kept, as the system reads it).

    :raises OSError: the working folder is gone.
    """
    text = _files.folder_text(path)
    return text if os.path.isabs(text) else _files.folder_text(os.path.join(os.getcwd(), text))


class LocalBackend(LocalGrowing, LocalQuota, LocalListing, LocalPages):
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

    def __init__(self, directory: Union[str, os.PathLike[str]], *, durable: bool = True,
                 index: Union[str, os.PathLike[str], None] = None, create: bool = True) -> None:
        # The folder as absolute text (``str(Path(directory).absolute())``): every
        # path here is built from it, so a later ``os.chdir`` does not move the
        # store; ``directory`` gives it as a Path, made only when asked for.
        self._directory = _absolute(directory)
        self._path: Optional[Path] = None
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
        self._folder = self._directory
        if index is not None and _inside(os.path.abspath(index), os.path.abspath(self._directory)):
            raise ValueError("the listing index must be outside the managed folder")
        index = None if index is None else _absolute(index)
        self._index = None if index is None else ListingIndex(self._directory, index, durable=self._durable)
        # The quota's running total lives beside the index; without an index the
        # quota check counts the folder (as a sweep always does).
        self._live: dict[int, LocalWriter] = {}  # this backend's writers not yet published
        # Its count of unpublished bytes reads the writers, not the backend: no
        # reference cycle, so a store dropped unclosed lets its files go at once.
        live = self._live
        self._usage = None if index is None else UsageTotal(self._directory, index, lambda: unpublished_bytes(live))
        # Readers look entries up without the lock (a dict lookup is atomic);
        # the lock serialises insertions, evictions and map bookkeeping.
        self._lock = allocate_lock()
        self._chains_lock = allocate_lock()  # see LocalGrowing._sealed_chain
        self._entries: dict[str, Entry] = {}
        # Ids whose entry holds files open (a first read's, or with a map), oldest
        # first (insertion order); at most _OPEN_MAPS, so descriptors stay few.
        self._mapped_ids: dict[str, None] = {}
        # The maps of their own that large reads handed out and that are still in use, by resource
        # id, each with its offset in the payload: drop_pages gives their scanned pages back too.
        self._large_maps: dict[str, list[tuple[Callable[[], Optional[mmap.mmap]], int]]] = {}
        # The record file last parsed, still open: a page read just after it keeps
        # it with the payload (its next reads check it with fstat, and no close
        # or second open is on their way); the next parse drops (closes) it.
        # Set without the lock (a cold read's cost): a parse racing close() may
        # leave one record file open until the next parse or the backend goes.
        self._last_parsed: Optional[tuple[Entry, tuple[int, ...], Descriptor]] = None

    @property
    def folder(self) -> str:
        """``directory`` as text (``str(directory)``), without importing pathlib."""
        return self._directory

    @property
    def directory(self) -> Path:
        if self._path is None:
            from pathlib import Path  # only when asked for: pathlib (with re and urllib) costs start-up

            self._path = Path(self._directory)
        return self._path

    @property
    def durable(self) -> bool:
        return self._durable

    def __repr__(self) -> str:
        return f"LocalBackend({self._directory!r}, durable={self._durable})"

    # ------------------------------------------------------------------ writing
    def create(self, resource_id: str, /) -> LocalWriter:
        if not self._created:
            _files.ensure_directory(self._directory)
            self._created = True
        writer = LocalWriter(self._directory, resource_id, self._durable, self._live, self._usage)
        self._live[id(writer)] = writer
        return writer

    def _missing(self) -> bool:
        """Whether a folder left to the first write does not exist yet: it holds nothing."""
        return not self._created and not os.path.isdir(self._directory)

    # ------------------------------------------------------------------ reading
    def _entry(self, resource_id: str) -> Entry:
        entry = self._entries.get(resource_id)
        if entry is None:
            entry = Entry(self._folder, resource_id)
            with self._lock:
                entry = self._entries.setdefault(resource_id, entry)
                if len(self._entries) > _CACHED_RECORDS:
                    # Oldest first (dicts keep insertion order); a dropped
                    # entry's map closes once no reader holds a view of it.
                    dropped = next(iter(self._entries))
                    self._mapped_ids.pop(dropped, None)
                    if self._last_parsed is not None and self._last_parsed[0] is self._entries[dropped]:
                        self._last_parsed = None  # (its file, and any map of the entry, go with it)
                    del self._entries[dropped]
        return entry

    def record(self, resource_id: str, /) -> Record:
        """The validated record of ``resource_id``, parsed again only when its file changed."""
        entry = self._entry(resource_id)
        known, record = entry.parsed
        held = entry.record_file
        if record is not None and held is not None and held[0] is known and _kernels.file_unchanged(held[1].fd, known):
            pass  # the open record file is still the one parsed, and still named: no stat by path
        elif record is not None:
            try:
                info = os.lstat(entry.record_path)
            except FileNotFoundError:
                raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}") from None
            except OSError as error:
                raise unreadable(uri_for(resource_id), "has no readable record", error) from None
            if file_identity(info) != known:
                record = None
            elif entry.mapped[1] is not None:
                # Read again while mapped: held open for the next reads' fstat (a first read pays enough).
                opened = hold(entry.record_path, known)  # type: ignore[arg-type]
                with self._lock:  # beside a map still held: one dropped meanwhile leaves nothing to close it
                    if entry.mapped[1] is not None:
                        entry.record_file = opened
        if record is None:
            # Parsed from the file that was opened, keyed by that file's fstat.
            record, identity, fd = open_record(entry.record_path, resource_id)
            entry.parsed = (identity, record)
            self._last_parsed = (entry, identity, Descriptor(fd))
        if record.state != "running":
            return record
        return self._growing(entry, record)

    def _keep_open(self, entry: Entry, resource_id: str) -> None:
        """With the lock held: ``resource_id``'s entry now holds files open (the
        newest); the oldest beyond _OPEN_MAPS lets its map and files go."""
        last = self._last_parsed
        if (last is not None and last[0] is entry and entry.parsed[0] is last[1]
                and (entry.record_file is None or entry.record_file[0] is not last[1])):
            entry.record_file = (last[1], last[2])  # the record file just parsed: its next checks are fstats
            self._last_parsed = None
        self._mapped_ids.pop(resource_id, None)
        self._mapped_ids[resource_id] = None  # the newest
        if len(self._mapped_ids) > _OPEN_MAPS:
            oldest = next(iter(self._mapped_ids))
            del self._mapped_ids[oldest]
            evicted = self._entries.get(oldest)
            if evicted is not None:
                evicted.drop_map()  # the map closes once no reader holds a view of it

    def _map(self, entry: Entry, record: Record, identity: Optional[tuple[int, ...]]) -> mmap.mmap:
        """Open and map the payload (whose lstat gave ``identity``, if one was
        taken: a cold read opens without one, and a read after a first one maps
        the payload that read kept open); cache the map, and keep the payload
        open beside it for warm reads' ``fstat``."""
        uri = record.resource.uri
        known = entry.mapped[0]
        held = entry.payload_file
        if (identity is None and held is not None and held[0] is known and known[3] == record.resource.size
                and _kernels.file_unchanged(held[1].fd, known)):  # type: ignore[index]
            try:
                mapping = mmap.mmap(held[1].fd, 0, access=mmap.ACCESS_READ)
            except OSError as error:
                raise unreadable(uri, "cannot be mapped", error) from None
            with self._lock:
                if entry.payload_file is held:  # (not dropped meanwhile: nothing would close the map)
                    entry.mapped = (known, mapping)
                    self._keep_open(entry, record.id)
            return mapping
        try:
            fd, opened = _files.open_regular(entry.payload_path)
        except OSError as error:
            raise unreadable(uri, "has no readable payload", error) from None
        try:
            if identity is None:
                if opened.st_size != record.resource.size:
                    raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
                identity = file_identity(opened)
            elif file_identity(opened) != identity:
                raise ResourceNotFoundError(f"resource {uri} changed while being opened")
            mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except BaseException as error:
            os.close(fd)
            if isinstance(error, OSError):
                raise unreadable(uri, "cannot be mapped", error) from None
            raise
        with self._lock:
            entry.mapped = (identity, mapping)
            # Kept open with the map, so that warm reads check the payload with fstat.
            entry.payload_file = (identity, Descriptor(fd))
            self._keep_open(entry, record.id)
        return mapping

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        """The bytes ``[start, end)`` as a view of the payload's map (no copy).

        One ``fstat`` of the payload's open descriptor per call revalidates
        the cached map (an ``lstat`` by path when there is none, or it shows
        a change); the checksum chunks under the range are verified on every
        call, so a byte changed in place (even through a shared writable map,
        which changes no timestamp) before the call is never served.  The view
        is of the live map: its bytes are the file's as they are when read, so
        one changed in place after the check shows in it; ``read_copy`` gives
        bytes that are the ones checked.
        """
        return self._read(record, start, end, False)  # type: ignore[return-value]

    def read_copy(self, record: Record, start: int, end: int, /) -> bytes:
        """The bytes ``[start, end)``, copied out of the payload's map before
        they are verified (``_checksums.verified_copy``): the bytes returned are
        the bytes checked, whatever another process does to the file meanwhile.
        Revalidated as ``read``; a range of 1 MiB or more is copied from a map of
        its own, unmapped before this returns."""
        found = self._read(record, start, end, True)
        return found if type(found) is bytes else found.tobytes()  # type: ignore[union-attr]

    def _read(self, record: Record, start: int, end: int, copy: bool) -> memoryview | bytes:
        """``read`` (a view of the map) or, with ``copy``, ``read_copy`` (bytes)."""
        entry = self._entry(record.id)
        uri = record.resource.uri
        if not record.complete:
            return self._read_growing(entry, record, start, end, copy)
        known, mapping = entry.mapped
        held = entry.payload_file
        if (mapping is not None and held is not None and held[0] is known and start < end
                and end - start < PRIVATE_MAP_BYTES and known[3] == record.resource.size  # type: ignore[index]
                and _kernels.file_unchanged(held[1].fd, known)):
            pass  # warm: the open payload is still the mapped one, and still named
        elif mapping is not None or end - start >= PRIVATE_MAP_BYTES or start >= end:
            # The one stat of a read: the cached map is still this file's.
            try:
                info = os.lstat(entry.payload_path)
            except OSError as error:
                entry.drop_map()
                raise unreadable(uri, "has no payload", error) from None
            if not stat.S_ISREG(info.st_mode) or info.st_size != record.resource.size:
                entry.drop_map()
                raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
            if start >= end:
                return memoryview(b"")
            identity = file_identity(info)
            if end - start >= PRIVATE_MAP_BYTES:
                return self._read_large(entry, record, identity, start, end, copy)
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
            if copy:
                return verified_copy(record, whole, 0, start, end)
            verify(record, whole, 0, start, end)
            # The slice keeps the map's buffer exported after ``whole`` is released.
            return whole[start:end]

    def _read_large(self, entry: Entry, record: Record, identity: tuple[int, ...],
                    start: int, end: int, copy: bool) -> memoryview | bytes:
        """A large range from a map of its own, unmapped when the caller releases
        the view (with ``copy``: copied out and verified, unmapped at once):
        streaming a payload range by range keeps memory flat."""
        uri = record.resource.uri
        chunk = record.checksum_chunk
        first = start // chunk * chunk
        if record.checksums is not None:
            last = min(-(-end // chunk) * chunk, record.resource.size)
        else:
            last = end
        base = first - first % mmap.ALLOCATIONGRANULARITY

        def check(opened: os.stat_result) -> None:
            if file_identity(opened) != identity:
                raise ResourceNotFoundError(f"resource {uri} changed while being opened")

        mapping = map_range(entry.payload_path, uri, base, last, check)
        if copy:
            try:
                with memoryview(mapping) as part:
                    return verified_copy(record, part, base, start, end)
            finally:
                mapping.close()
        with memoryview(mapping) as part:
            if end - start <= _VERIFY_STEP:
                verify(record, part, base, start, end)
                return part[start - base : end - base]
            # A very large range (a whole payload, for a preview that must view a long line) is
            # verified a step at a time, each step's pages given back once checked: the
            # verification alone would otherwise make every page of it resident at once.
            position, step = start, max(chunk, _VERIFY_STEP // chunk * chunk)
            while position < end:
                stop = min(end, position // chunk * chunk + step)
                verify(record, part, base, position, stop)
                drop_mapped_pages(mapping, position - base, min(-(-stop // chunk) * chunk, last) - base)
                position = stop
            view = part[start - base : end - base]
        # drop_pages (a scan's hint) reaches this map too while the caller holds it (a map of a
        # range this large only: few are made, and the next one of the resource prunes the dead).
        live = [(alive, offset) for alive, offset in self._large_maps.get(record.id, ()) if alive() is not None]
        live.append((_weak(mapping), base))
        self._large_maps[record.id] = live
        if len(self._large_maps) > _LARGE_MAP_IDS:
            # Resources read large once and never again (removed, say) would stay listed for ever.
            for resource_id in list(self._large_maps):
                if all(alive() is None for alive, _ in self._large_maps.get(resource_id, ())):
                    self._large_maps.pop(resource_id, None)
        return view

    def drop_pages(self, record: Record, start: int, end: int, /) -> None:
        """A hint after a long scan of ``[start, end)``: its mapped pages are not needed soon.

        A scan through the shared map (the store's signal scan of an omitted
        middle) would otherwise keep every page it touched resident in this
        process.  The file's page cache is untouched; never raises.
        """
        entry = self._entries.get(record.id)
        if entry is not None:
            drop_mapped_pages(entry.mapped[1], start, end)
        maps = self._large_maps.get(record.id, ())
        for alive, offset in maps:
            mapping = alive()
            if mapping is not None and end > offset:
                drop_mapped_pages(mapping, max(start - offset, 0), end - offset)
        if maps and all(alive() is None for alive, _ in maps):
            self._large_maps.pop(record.id, None)

    # ------------------------------------------------------------------ removal
    def _forget(self, resource_ids: Iterable[str]) -> None:
        with self._lock:
            for resource_id in resource_ids:
                self._mapped_ids.pop(resource_id, None)
                self._large_maps.pop(resource_id, None)
                entry = self._entries.pop(resource_id, None)
                if entry is not None and self._last_parsed is not None and self._last_parsed[0] is entry:
                    self._last_parsed = None

    def delete(self, resource_id: str, /) -> int:
        """Remove the pair, record first; the bytes freed (0 when it was gone)."""
        freed = _files.remove_quietly(f"{self._directory}/{resource_id}.json")
        freed += _files.remove_quietly(f"{self._directory}/{resource_id}.txt")
        freed += _files.remove_quietly(f"{self._directory}/{resource_id}.seal")
        self._forget([resource_id])
        if freed and self._usage is not None:
            self._usage.add(-freed)
        return freed

    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        if self._missing():
            return CleanupReport()  # never written: nothing to clean, and no lock file made for it
        from ._sweep import sweep  # only a cleanup needs it

        report = sweep(self._directory, now, retention, grace, dry_run=dry_run)
        if not dry_run:
            self._forget(report.removed_ids)
            if self._usage is not None and not report.busy:
                try:
                    self._usage.recount()  # the correction: whatever others did behind the total's back
                except OSError:
                    pass  # the index folder is unusable: the quota check counts the folder itself
        return report

    def reset_after_fork(self) -> None:
        """In a forked child: fresh locks and empty caches.

        Another thread of the parent may have held a lock (it is not in the
        child to release it) or been half-way through a cache update; the
        child starts from nothing and maps what it reads itself.
        """
        self._live.clear()  # in place: the usage total counts unpublished bytes through this dict
        self._lock = allocate_lock()
        self._chains_lock = allocate_lock()
        self._entries = {}
        self._mapped_ids = {}
        self._last_parsed = None
        if self._index is not None:
            self._index.reset_after_fork()
        if self._usage is not None:
            self._usage.reset_after_fork()

    def close(self) -> None:
        """Drop the cached records and maps (a map in use closes when its last view goes)."""
        with self._lock:
            maps = [entry.mapped[1] for entry in self._entries.values() if entry.mapped[1] is not None]
            self._entries = {}
            self._mapped_ids.clear()
            self._last_parsed = None
        for mapping in maps:
            try:
                mapping.close()
            except BufferError:
                pass  # a page is being decoded from it; it closes when released
