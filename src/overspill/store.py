"""ToolOutputStore: bound an output, persist the whole of it, read it back in pages.

A small output goes back untouched (no disk, no id).  A large one is written
as ``{id}.txt`` (the exact bytes) and published by its ``{id}.json`` record;
the caller gets a head+tail preview with a marker naming ``tool-output://ID``,
and the same session reads the rest in UTF-8-safe pages through ``mmap``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Optional, Union

from . import _files, _kernels
from ._arguments import positive_seconds, whole_number
from .config import MAX_READ_BYTES, RETENTION, ConfigSource, Limits, default_data_dir, resolve_limits
from .errors import (
    AccessDeniedError,
    ResourceCorruptError,
    ResourceNotFoundError,
    StorageError,
)
from .records import (
    CHECKSUM_CHUNK,
    Record,
    Resource,
    is_resource_id,
    load_record,
    new_id,
    parse_uri,
    record_json,
    uri_for,
)
from .retention import CleanupReport, sweep
from ._native import BytesLike
from ._native import _byte_view as byte_view
from .text import Content, Preview, preview, preview_from_cuts, stored_pieces, truncation_marker

__all__ = ["Page", "ToolOutputStore", "TruncateResult"]

_OPEN_MAPS = 16
_CACHED_RECORDS = 1024


@dataclass(frozen=True)
class TruncateResult:
    """What the model sees of an output: all of it, or a preview and a resource.

    When truncated, ``lines`` is the stored output's line count and
    ``next_offset`` the byte offset where the part the preview omits begins
    (the numbers the marker gives the model); both are None otherwise.
    """

    content: str
    truncated: bool
    resource: Optional[Resource]
    lines: Optional[int] = None
    next_offset: Optional[int] = None


@dataclass(frozen=True)
class Page:
    """One page of a resource.

    ``offset`` is where ``content`` starts (a byte offset in the stored bytes);
    ``next`` is where the following page starts, None at the end.
    """

    resource: Resource
    content: str
    offset: int
    truncated: bool
    next: Optional[int]


def _check_id_string(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


def _storage_error(action: str, error: OSError) -> StorageError:
    return StorageError(error.errno, f"{action}: {error.strerror or error}")


class _PayloadWriter:
    """Writes one resource: the payload under a fresh id, then the record.

    Nothing is visible until ``publish`` renames the record into place; on any
    failure ``abort`` removes whatever this writer created.
    """

    def __init__(self, directory: Path, durable: bool) -> None:
        self._directory = directory
        self._durable = durable
        self._temporary: Optional[Path] = None
        self._published = False
        self.size = 0
        self._checksums = bytearray()
        self._crc = 0
        self._filled = 0  # bytes of the current checksum chunk seen so far
        for _ in range(8):
            self.id = new_id()
            try:
                self._fd = _files.create_exclusive(self.payload_path)
                return
            except FileExistsError:
                continue
        raise StorageError(17, "could not find a free resource id")

    @property
    def payload_path(self) -> Path:
        return self._directory / f"{self.id}.txt"

    @property
    def record_path(self) -> Path:
        return self._directory / f"{self.id}.json"

    def write(self, data: memoryview) -> None:
        _files.write_all(self._fd, data)
        self.size += len(data)
        position = 0
        while position < len(data):
            take = min(CHECKSUM_CHUNK - self._filled, len(data) - position)
            self._crc = _kernels.crc32(data[position : position + take], self._crc)
            self._filled += take
            position += take
            if self._filled == CHECKSUM_CHUNK:
                self._checksums += self._crc.to_bytes(4, "big")
                self._crc, self._filled = 0, 0

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str]) -> Record:
        if self._filled:
            self._checksums += self._crc.to_bytes(4, "big")
            self._crc, self._filled = 0, 0
        if self._durable:
            os.fsync(self._fd)
        fd, self._fd = self._fd, -1
        os.close(fd)
        record = Record(
            Resource(uri_for(self.id), mime, self.size, name), session_id, tool_call_id,
            time.time_ns() // 1_000_000, bytes(self._checksums), CHECKSUM_CHUNK,
        )
        self._temporary = self._directory / f".{self.id}.{secrets.token_hex(4)}.tmp"
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


class ToolOutputStore:
    """Bounds tool outputs, persists the large ones and serves them back in pages.

    :param data_dir: the data folder; by default ``$OVERSPILL_DATA_DIR``, else
        ``$XDG_DATA_HOME/overspill``, else ``~/.local/share/overspill``.  The
        store manages ``data_dir/tool-output/managed`` (``store.directory``).
    :param config: limits from a mapping, JSON/TOML file path(s) or a sequence
        of them (see ``overspill.config.resolve_limits``).
    :param durable: fsync payload, record and folder before a write returns.
    :param retention: how long ``cleanup`` keeps a resource.
    :param grace: how long ``cleanup`` leaves leftovers of unfinished writes.
    :raises ConfigError: invalid configuration.
    :raises StorageError: the folder cannot be created.
    """

    def __init__(
        self,
        data_dir: Union[str, os.PathLike[str], None] = None,
        *,
        config: Optional[ConfigSource] = None,
        durable: bool = True,
        retention: timedelta = RETENTION,
        grace: timedelta = timedelta(hours=1),
    ) -> None:
        if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
            raise TypeError(f"data_dir must be a path, not {type(data_dir).__name__}")
        for value, name in ((retention, "retention"), (grace, "grace")):
            if not isinstance(value, timedelta):
                raise TypeError(f"{name} must be a timedelta, not {type(value).__name__}")
            if value < timedelta(0):
                raise ValueError(f"{name} must not be negative")
        self._limits = resolve_limits(config)
        self._durable = bool(durable)
        self._retention = retention
        self._grace = grace
        root = default_data_dir() if data_dir is None else Path(data_dir)
        self._directory = root / "tool-output" / "managed"
        try:
            _files.ensure_directory(self._directory)
        except OSError as error:
            raise _storage_error(f"cannot create {self._directory}", error) from None
        self._lock = threading.Lock()
        self._maps: OrderedDict[str, _Mapped] = OrderedDict()
        self._records: OrderedDict[str, tuple[tuple[int, ...], Record]] = OrderedDict()
        self._cleaner: Optional[threading.Thread] = None
        self._stop = threading.Event()

    # ------------------------------------------------------------------ basics
    @property
    def directory(self) -> Path:
        """The managed folder: ``data_dir/tool-output/managed``."""
        return self._directory

    @property
    def durable(self) -> bool:
        return self._durable

    def limits(self) -> Limits:
        """The limits ``truncate`` applies when a call names none."""
        return self._limits

    def __enter__(self) -> ToolOutputStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ToolOutputStore({str(self._directory.parent.parent)!r}, durable={self._durable})"

    def close(self) -> None:
        """Stop the background cleanup and drop the cached maps."""
        self._stop.set()
        cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None and cleaner is not threading.current_thread():
            cleaner.join()
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

    # ------------------------------------------------------------------ writing
    def _writer(self) -> _PayloadWriter:
        try:
            return _PayloadWriter(self._directory, self._durable)
        except OSError as error:
            raise _storage_error("cannot create a resource", error) from None

    def _publish(self, writer: _PayloadWriter, session_id: str, tool_call_id: str,
                 mime: str, name: Optional[str]) -> Resource:
        try:
            return writer.publish(session_id, tool_call_id, mime, name).resource
        except BaseException as error:
            writer.abort()
            if isinstance(error, OSError) and not isinstance(error, StorageError):
                raise _storage_error("cannot store the resource", error) from None
            raise

    def _write_pieces(self, session_id: str, tool_call_id: str, pieces: Iterable[memoryview],
                      mime: str, name: Optional[str]) -> Resource:
        writer = self._writer()
        try:
            for piece in pieces:
                writer.write(piece)
        except BaseException as error:
            writer.abort()
            if isinstance(error, OSError):
                raise _storage_error("cannot store the resource", error) from None
            raise
        return self._publish(writer, session_id, tool_call_id, mime, name)

    @staticmethod
    def _check_write_arguments(session_id: object, tool_call_id: object, mime: object, name: object) -> None:
        _check_id_string(session_id, "session_id")
        _check_id_string(tool_call_id, "tool_call_id")
        _check_id_string(mime, "mime")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, not {type(name).__name__}")

    def write(self, session_id: str, tool_call_id: str, content: Content, *,
              mime: str = "text/plain", name: Optional[str] = None) -> Resource:
        """Persist ``content`` whole, whatever its size, and return its resource.

        A ``str`` is stored as UTF-8 (``surrogateescape``; other lone surrogates
        as U+FFFD); bytes-like content is stored exactly.

        :raises TypeError: an argument of the wrong type.
        :raises ValueError: an empty ``session_id``, ``tool_call_id`` or ``mime``.
        :raises StorageError: the write failed; nothing was left visible.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        if not isinstance(content, str):
            content = _checked_buffer(content)
        return self._write_pieces(session_id, tool_call_id, stored_pieces(content), mime, name)

    def truncate(self, session_id: str, tool_call_id: str, content: Content, *,
                 max_lines: Optional[int] = None, max_bytes: Optional[int] = None,
                 mime: Optional[str] = None, name: Optional[str] = None) -> TruncateResult:
        """Bound ``content`` for the model, persisting it whole when it is over.

        Under both limits the content comes back unchanged (decoded with
        ``errors="replace"`` if it was bytes) and nothing is written.  Over
        them the resource is written and the content is
        ``head + "\\n\\n" + marker + "\\n\\n" + tail`` (without the last part when
        the tail is empty), head and tail as ``overspill.preview`` gives them.

        :param max_lines: overrides the store's limit for this call.
        :param max_bytes: overrides the store's limit for this call.
        :raises TypeError: an argument of the wrong type (a bool is not an int).
        :raises ValueError: a limit below 1, or an empty id or mime.
        :raises StorageError: the write failed; nothing was left visible.
        """
        mime = "text/plain" if mime is None else mime
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        lines_limit = self._limits.max_lines if max_lines is None else max_lines
        bytes_limit = self._limits.max_bytes if max_bytes is None else max_bytes
        if not isinstance(content, str):
            content = _checked_buffer(content)
        cuts = _kernels.preview_cuts(content, lines_limit, bytes_limit)
        if cuts[0] >= cuts[1]:
            if isinstance(content, str):
                return TruncateResult(content, False, None)
            return TruncateResult(preview_from_cuts(content, cuts).head, False, None)
        resource = self._write_pieces(session_id, tool_call_id, stored_pieces(content), mime, name)
        lines = _kernels.count_lines(content)
        preview = preview_from_cuts(content, cuts)
        return TruncateResult(_compose(preview.head, preview.tail, resource, lines, preview.head_end), True, resource,
                              lines, preview.head_end)

    # ------------------------------------------------------------------ streams
    def write_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                     mime: str = "text/plain", name: Optional[str] = None) -> Resource:
        """Persist an output that arrives as byte chunks, holding one chunk at a time.

        :raises TypeError: a chunk is not bytes-like, or another argument is of the wrong type.
        :raises StorageError: the write failed; nothing was left visible.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        return self._write_pieces(session_id, tool_call_id, map(_chunk_view, chunks), mime, name)

    def truncate_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                        max_lines: Optional[int] = None, max_bytes: Optional[int] = None,
                        mime: Optional[str] = None, name: Optional[str] = None) -> TruncateResult:
        """``truncate`` for an output that arrives as byte chunks, in bounded memory.

        Chunks are held only while the output is still under the limits (at
        most ``max_bytes``); past them they go straight to the payload, and
        the preview is cut from the stored bytes, so it equals what
        ``truncate`` gives for the joined content.  Under the limits the
        content is returned decoded with ``errors="replace"`` and nothing is
        written.

        :raises TypeError: a chunk is not bytes-like, or another argument is of the wrong type.
        :raises ValueError: a limit below 1, or an empty id or mime.
        :raises StorageError: the write failed; nothing was left visible.
        """
        mime = "text/plain" if mime is None else mime
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        lines_limit = self._limits.max_lines if max_lines is None else whole_number(max_lines, "max_lines", 1)
        bytes_limit = self._limits.max_bytes if max_bytes is None else whole_number(max_bytes, "max_bytes", 1)
        held = bytearray()
        newlines = 0
        size = 0
        writer: Optional[_PayloadWriter] = None
        try:
            for chunk in chunks:
                with _chunk_view(chunk) as view:
                    newlines += _kernels.count_lines(view) - 1
                    size += len(view)
                    if writer is None and size <= bytes_limit and newlines < lines_limit:
                        held += view
                        continue
                    if writer is None:
                        writer = self._writer()
                        writer.write(memoryview(held))
                        held = bytearray()
                    writer.write(view)
        except BaseException as error:
            if writer is not None:
                writer.abort()
            if isinstance(error, OSError) and not isinstance(error, StorageError):
                raise _storage_error("cannot store the resource", error) from None
            raise
        if writer is None:
            return TruncateResult(held.decode("utf-8", "replace"), False, None)
        resource = self._publish(writer, session_id, tool_call_id, mime, name)
        preview = self._preview_payload(resource, newlines + 1, lines_limit, bytes_limit)
        return TruncateResult(_compose(preview.head, preview.tail, resource, newlines + 1, preview.head_end),
                              True, resource, newlines + 1, preview.head_end)

    def _preview_payload(self, resource: Resource, lines: int, max_lines: int, max_bytes: int) -> Preview:
        """The preview of a just-published payload, touching only what decides it."""
        path = self._path(resource.id, ".txt")
        try:
            fd, _ = _files.open_regular(path)
            try:
                if lines <= max_lines:
                    return _byte_cut_preview(fd, resource.size, max_bytes)
                with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapping:
                    return preview(mapping, max_lines, max_bytes)
            finally:
                os.close(fd)
        except OSError as error:
            raise _storage_error(f"cannot read back {resource.uri}", error) from None

    # ------------------------------------------------------------------ reading
    def _path(self, resource_id: str, suffix: str) -> Path:
        return self._directory / f"{resource_id}{suffix}"

    def _record(self, resource_id: str) -> Record:
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

    def _owned_record(self, session_id: str, resource_id: str) -> Record:
        record = self._record(resource_id)
        if record.session_id != session_id:
            raise AccessDeniedError(f"resource {record.resource.uri} not found in this session (another session wrote it)")
        return record

    @contextlib.contextmanager
    def view(self, session_id: str, uri: str) -> Iterator[tuple[Resource, memoryview]]:
        """The whole verified payload as a read-only view, for scans such as grep.

        Every checksum chunk is verified (once per file change) before the
        view is given out; it is valid only inside the ``with`` block.

        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: its bytes do not match their checksums.
        """
        resource_id = parse_uri(uri)
        _check_id_string(session_id, "session_id")
        record = self._owned_record(session_id, resource_id)
        entry = self._mapped(record)
        if entry.map is None:
            yield record.resource, memoryview(b"")
            return
        try:
            whole = memoryview(entry.map)
        except ValueError:
            # The map was closed by close() in another thread.
            raise ResourceNotFoundError(f"resource {uri} is no longer open") from None
        with whole:
            self._verify(record, entry, whole, 0, record.resource.size)
            yield record.resource, whole

    def read(self, session_id: str, uri: str, *, offset: int = 0, limit: Optional[int] = None) -> Page:
        """A page of a resource that this session wrote.

        :param uri: ``tool-output://ID``.
        :param offset: a byte offset into the stored bytes, clamped to
            ``[0, size]``; a mid-character offset starts at the next character.
        :param limit: the most bytes in the page, clamped to ``[1, MAX_READ_BYTES]``
            (the default); a page holds at least one character.
        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises TypeError: ``offset`` or ``limit`` is not an int (a bool is not).
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: its bytes do not match their checksums.
        """
        resource_id = parse_uri(uri)
        _check_id_string(session_id, "session_id")
        offset = whole_number(offset, "offset")  # clamped below, as the reference store does
        limit = MAX_READ_BYTES if limit is None else whole_number(limit, "limit")
        record = self._owned_record(session_id, resource_id)
        size = record.resource.size
        offset = min(max(offset, 0), size)
        limit = min(max(limit, 1), MAX_READ_BYTES)
        entry = self._mapped(record)
        if entry.map is None:
            return Page(record.resource, "", 0, False, None)
        try:
            with memoryview(entry.map) as view:
                start, end = _kernels.page_bounds(view, offset, limit, True)
                self._verify(record, entry, view, start, end)
                content = str(view[start:end], "utf-8", "replace")
        except ValueError:
            # The map was closed by close() in another thread.
            raise ResourceNotFoundError(f"resource {uri} is no longer open") from None
        more = end < size
        return Page(record.resource, content, start, more, end if more else None)

    # ------------------------------------------------------------------ listing
    def _published_ids(self) -> list[str]:
        try:
            names = os.listdir(self._directory)
        except OSError as error:
            raise _storage_error(f"cannot list {self._directory}", error) from None
        return sorted(name[:-5] for name in names if name.endswith(".json") and is_resource_id(name[:-5]))

    def records(self, session_id: Optional[str] = None) -> list[Record]:
        """Valid records in id (creation) order, of one session or of all.

        Broken or vanishing resources are skipped: cleanup deals with them.
        """
        if session_id is not None:
            _check_id_string(session_id, "session_id")
        found = []
        for resource_id in self._published_ids():
            try:
                record = self._record(resource_id)
            except ResourceNotFoundError:
                continue
            if session_id is None or record.session_id == session_id:
                found.append(record)
        return found

    def resources(self, session_id: str) -> list[Resource]:
        """That session's resources in the order they were written (id order)."""
        _check_id_string(session_id, "session_id")
        return [record.resource for record in self.records(session_id)]

    # ------------------------------------------------------------------ cleanup
    def cleanup(self, now: Union[datetime, float, None] = None, *, dry_run: bool = False) -> CleanupReport:
        """Remove expired resources, broken pairs and old leftovers.

        :param now: the current time (a datetime, or seconds since the epoch);
            the clock by default.
        :param dry_run: remove nothing; report what would be removed.
        :raises StorageError: the folder cannot be read.
        """
        if now is None:
            now_seconds = time.time()
        elif isinstance(now, datetime):
            now_seconds = now.timestamp()
        elif isinstance(now, (int, float)) and not isinstance(now, bool):
            now_seconds = float(now)
        else:
            raise TypeError(f"now must be a datetime or seconds since the epoch, not {type(now).__name__}")
        try:
            report = sweep(self._directory, now_seconds, self._retention, self._grace, dry_run=dry_run)
        except OSError as error:
            raise _storage_error(f"cannot clean {self._directory}", error) from None
        if dry_run:
            return report
        with self._lock:
            for resource_id in report.removed_ids:
                self._maps.pop(resource_id, None)
                self._records.pop(resource_id, None)
        return report

    def start_cleanup(self, interval: float = 3600.0) -> None:
        """Run ``cleanup`` now and then every ``interval`` seconds on a daemon thread.

        :raises ValueError: ``interval`` is not positive.
        :raises RuntimeError: already started.
        """
        seconds = positive_seconds(interval, "interval")
        if self._cleaner is not None:
            raise RuntimeError("cleanup is already running")
        self._stop.clear()
        self._cleaner = threading.Thread(
            target=self._clean_periodically, args=(seconds,), name="overspill-cleanup", daemon=True
        )
        self._cleaner.start()

    def _clean_periodically(self, interval: float) -> None:
        while not self._stop.is_set():
            try:
                self.cleanup()
            except StorageError:
                pass  # the folder vanished or is unreadable: try again next time
            self._stop.wait(interval)


# A code-point boundary depends on at most 3 bytes either side of it.
_BOUNDARY_REACH = 4


def _byte_cut_preview(fd: int, size: int, max_bytes: int) -> Preview:
    """``preview`` of a file over ``max_bytes`` whose lines are within the limit.

    Then the regions are the whole content and only two byte cuts decide the
    preview, so two windows of the file settle it, whatever its size.
    """
    head_share, tail_share = max_bytes - max_bytes // 2, max_bytes // 2
    head_window = os.pread(fd, head_share + _BOUNDARY_REACH, 0)
    _, end = _kernels.page_bounds(head_window, 0, head_share, len(head_window) == size)
    head_end = end if end <= head_share else 0  # the first character alone is over the share
    window_start = max(size - tail_share - _BOUNDARY_REACH, 0)
    tail_window = os.pread(fd, size - window_start, window_start)
    tail_offset, _ = _kernels.page_bounds(tail_window, size - tail_share - window_start, 1, True)
    return Preview(str(head_window[:head_end], "utf-8", "replace"), str(tail_window[tail_offset:], "utf-8", "replace"),
                   True, head_end, window_start + tail_offset)


def _chunk_view(chunk: object) -> memoryview:
    if isinstance(chunk, str):
        raise TypeError("chunks must be bytes-like, not str")
    return byte_view(chunk)


def _checked_buffer(content: object) -> Union[bytes, bytearray, memoryview]:
    try:
        memoryview(content).release()  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"content must be str or bytes-like, not {type(content).__name__}") from None
    return content  # type: ignore[return-value]


def _compose(head: str, tail: str, resource: Resource, lines: int, resume_offset: int) -> str:
    marker = truncation_marker(resource.uri, resource.size, lines, resume_offset)
    return f"{head}\n\n{marker}\n\n{tail}" if tail else f"{head}\n\n{marker}"
