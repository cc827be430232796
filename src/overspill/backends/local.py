"""The local backend: one folder of ``{id}.txt`` payloads and ``{id}.json`` records.

A resource is written as ``{id}.txt`` (the exact bytes, ``0600``, created
exclusively) and published by renaming its record into ``{id}.json``; payloads
are never rewritten, so a shared read-only ``mmap`` of one cannot fault.  Pages
are served from those maps (cached, revalidated by the file's identity on
every read) as zero-copy views, after checking the CRC-32 of the chunks they
cover.  Cleanup is ``_sweep``: one process at a time per folder.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Optional

from .. import _files, _kernels
from ..errors import ResourceCorruptError, ResourceNotFoundError
from ..records import CHECKSUM_CHUNK, Record, Resource, is_resource_id, load_record, record_json, uri_for
from ._sweep import sweep
from .base import CleanupReport

__all__ = ["LocalBackend"]

_OPEN_MAPS = 16
_CACHED_RECORDS = 1024


class _LocalWriter:
    """Writes one resource: the payload under its id, then the record.

    Nothing is visible until ``publish`` renames the record into place; on any
    failure ``abort`` removes whatever this writer created.
    """

    def __init__(self, directory: Path, resource_id: str, durable: bool) -> None:
        self._directory = directory
        self._durable = durable
        self._temporary: Optional[Path] = None
        self._published = False
        self._id = resource_id
        self._size = 0
        self._checksums = bytearray()
        self._crc = 0
        self._filled = 0  # bytes of the current checksum chunk seen so far
        self._fd = _files.create_exclusive(self.payload_path)  # FileExistsError: the store draws again

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
        position = 0
        while position < len(data):
            take = min(CHECKSUM_CHUNK - self._filled, len(data) - position)
            self._crc = _kernels.crc32(data[position : position + take], self._crc)
            self._filled += take
            position += take
            if self._filled == CHECKSUM_CHUNK:
                self._checksums += self._crc.to_bytes(4, "big")
                self._crc, self._filled = 0, 0

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
                retention: timedelta) -> Record:
        del retention  # the folder expires by sweep, which reads ``created``
        if self._filled:
            self._checksums += self._crc.to_bytes(4, "big")
            self._crc, self._filled = 0, 0
        if self._durable:
            os.fsync(self._fd)
        fd, self._fd = self._fd, -1
        os.close(fd)
        record = Record(
            Resource(uri_for(self._id), mime, self._size, name), session_id, tool_call_id,
            time.time_ns() // 1_000_000, bytes(self._checksums), CHECKSUM_CHUNK,
        )
        self._temporary = self._directory / f".{self._id}.{os.urandom(4).hex()}.tmp"
        temporary_fd = _files.create_exclusive(self._temporary)
        try:
            _files.write_all(temporary_fd, memoryview(record_json(record)))
            if self._durable:
                os.fsync(temporary_fd)
        finally:
            os.close(temporary_fd)
        os.rename(self._temporary, self.record_path)
        self._published = True
        self._temporary = None
        if self._durable:
            _files.fsync_directory(self._directory)
        return record

    def abort(self) -> None:
        """Remove everything this writer created; never raises."""
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


class _Mapped:
    """An open map of one payload and which of its checksum chunks were verified."""

    __slots__ = ("identity", "map", "verified")

    def __init__(self, identity: tuple[int, ...], mapping: Optional[mmap.mmap], chunks: int) -> None:
        self.identity = identity
        self.map = mapping
        self.verified = bytearray(chunks)


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: the cache key."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class LocalBackend:
    """Resources as file pairs in ``directory`` (created ``0700`` if missing).

    :param directory: the managed folder itself (the store passes
        ``data_dir/tool-output/managed``).
    :param durable: fsync payload, record and folder before ``publish`` returns.
    :raises OSError: the folder cannot be created or is not a directory.
    """

    def __init__(self, directory: Path, *, durable: bool = True) -> None:
        self._directory = Path(directory)
        self._durable = bool(durable)
        _files.ensure_directory(self._directory)
        self._lock = threading.Lock()
        self._maps: OrderedDict[str, _Mapped] = OrderedDict()
        self._records: OrderedDict[str, tuple[tuple[int, ...], Record]] = OrderedDict()

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
        return _LocalWriter(self._directory, resource_id, self._durable)

    # ------------------------------------------------------------------ reading
    def _path(self, resource_id: str, suffix: str) -> Path:
        return self._directory / f"{resource_id}{suffix}"

    def record(self, resource_id: str, /) -> Record:
        """The validated record of ``resource_id``, from cache while its file is unchanged."""
        path = self._path(resource_id, ".json")
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}") from None
        except OSError as error:
            raise ResourceNotFoundError(f"cannot read resource {uri_for(resource_id)}: {error.strerror}") from None
        identity = _identity(info)
        with self._lock:
            cached = self._records.get(resource_id)
            if cached is not None and cached[0] == identity:
                self._records.move_to_end(resource_id)
                return cached[1]
        record = load_record(path, resource_id)
        with self._lock:
            self._records[resource_id] = (identity, record)
            if len(self._records) > _CACHED_RECORDS:
                self._records.popitem(last=False)
        return record

    def _mapped(self, record: Record) -> _Mapped:
        """An open map of the payload, revalidated against the file on every call."""
        resource_id = record.id
        path = self._path(resource_id, ".txt")
        uri = record.resource.uri
        try:
            info = os.lstat(path)
        except OSError:
            self._forget_map(resource_id)
            raise ResourceNotFoundError(f"resource {uri} has no payload") from None
        if not stat.S_ISREG(info.st_mode) or info.st_size != record.resource.size:
            self._forget_map(resource_id)
            raise ResourceNotFoundError(f"resource {uri} has a missing or mismatched payload")
        identity = _identity(info)
        with self._lock:
            entry = self._maps.get(resource_id)
            if entry is not None and entry.identity == identity:
                self._maps.move_to_end(resource_id)
                return entry
        try:
            fd, opened = _files.open_regular(path)
        except OSError:
            raise ResourceNotFoundError(f"resource {uri} has no readable payload") from None
        try:
            if _identity(opened) != identity:
                raise ResourceNotFoundError(f"resource {uri} changed while being opened")
            mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if info.st_size else None
        except OSError:
            raise ResourceNotFoundError(f"resource {uri} cannot be mapped") from None
        finally:
            os.close(fd)
        chunks = -(-info.st_size // record.checksum_chunk)
        entry = _Mapped(identity, mapping, chunks)
        with self._lock:
            self._maps[resource_id] = entry
            if len(self._maps) > _OPEN_MAPS:
                self._maps.popitem(last=False)  # closed by the GC once no reader holds it
        return entry

    def _forget_map(self, resource_id: str) -> None:
        with self._lock:
            self._maps.pop(resource_id, None)

    @staticmethod
    def _verify(record: Record, entry: _Mapped, view: memoryview, start: int, end: int) -> None:
        """Check the chunks under [start, end) against the record's checksums, once each."""
        if record.checksums is None or start >= end:
            return
        chunk = record.checksum_chunk
        for index in range(start // chunk, (end - 1) // chunk + 1):
            if entry.verified[index]:
                continue
            actual = _kernels.crc32(view[index * chunk : (index + 1) * chunk])
            if actual.to_bytes(4, "big") != record.checksums[4 * index : 4 * index + 4]:
                raise ResourceCorruptError(
                    f"resource {record.resource.uri} is corrupt: bytes {index * chunk} to "
                    f"{min((index + 1) * chunk, record.resource.size)} do not match their checksum"
                )
            entry.verified[index] = 1

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        """The verified bytes ``[start, end)`` as a view of the shared map (no copy)."""
        entry = self._mapped(record)
        if entry.map is None or start >= end:
            return memoryview(b"")
        try:
            whole = memoryview(entry.map)
        except ValueError:
            # The map was closed by close() in another thread.
            raise ResourceNotFoundError(f"resource {record.resource.uri} is no longer open") from None
        with whole:
            self._verify(record, entry, whole, start, end)
            # The slice keeps the map's buffer exported after ``whole`` is released.
            return whole[start:end]

    # ------------------------------------------------------------------ listing
    def _published_ids(self) -> list[str]:
        names = os.listdir(self._directory)
        return sorted(name[:-5] for name in names if name.endswith(".json") and is_resource_id(name[:-5]))

    def records(self, session_id: Optional[str] = None, /) -> list[Record]:
        found = []
        for resource_id in self._published_ids():
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
                self._maps.pop(resource_id, None)
                self._records.pop(resource_id, None)

    def delete(self, resource_id: str, /) -> int:
        """Remove the pair, record first; the bytes freed (0 when it was gone)."""
        freed = _files.remove_quietly(self._path(resource_id, ".json"))
        freed += _files.remove_quietly(self._path(resource_id, ".txt"))
        self._forget([resource_id])
        return freed

    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        report = sweep(self._directory, now, retention, grace, dry_run=dry_run)
        if not dry_run:
            self._forget(report.removed_ids)
        return report

    def close(self) -> None:
        """Drop the cached records and maps (a map in use closes when its last view goes)."""
        with self._lock:
            maps = list(self._maps.values())
            self._maps.clear()
            self._records.clear()
        for entry in maps:
            if entry.map is not None:
                try:
                    entry.map.close()
                except BufferError:
                    pass  # a page is being decoded from it; it closes when released
