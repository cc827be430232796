"""ToolOutputStore: bound an output, persist the whole of it, read it back in pages.

A small output goes back untouched (no storage, no id).  A large one is
written whole through a backend (``overspill.backends``: the local folder's
``{id}.txt`` payload published by its ``{id}.json`` record); the caller gets a
head+tail preview with a marker naming ``tool-output://ID``, and the same
session reads the rest in UTF-8-safe, verified pages.

This module is the policy — limits, previews, markers, ids, session checks,
retention settings; it never touches a file or a socket itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Optional, Union

from . import _kernels
from ._arguments import id_string, positive_seconds, whole_number
from .config import MAX_READ_BYTES, RETENTION, ConfigSource, Limits, resolve_limits
from .errors import AccessDeniedError, BackgroundLimitError, StorageError, UnsupportedError
from .backends._location import locate, open_backend
from ._quota import make_room
from .backends.base import Backend, CleanupReport, ForkAware, GrowingBackend, PageHints, Quota, Writer
from .backends.local import LocalBackend
from .records import MAX_METADATA_BYTES, Record, Resource, new_id, parse_uri
from ._buffers import VIEW_ANSI, VIEW_CR, BytesLike, byte_view
from . import _tokens
from ._growing import GrowingOutput
from ._owner import current_owner
from ._preview import BOUNDARY_MARGIN, compose, stored_preview
from .text import (
    Content,
    Preview,
    Reader,
    ESCAPE_REACH,
    compile_signals,
    counted_lines,
    encode_content,
    escape_end,
    human_lines,
    line_slack,
    preview_from_cuts,
    shown_size,
    shown_text,
    stored_pieces,
    view_flags,
    view_preview,
)

__all__ = ["Page", "ToolOutputStore", "TruncateResult"]

# Draws of a fresh id before giving up: a clash needs 83 random bits to repeat.
_ID_ATTEMPTS = 8
# Bytes read around a page so that its character boundaries are decided
# exactly as over the whole payload.
_PAGE_MARGIN = BOUNDARY_MARGIN
# Bytes per range that ``iter_bytes`` verifies and yields (rounded to whole
# checksum chunks, so that no chunk is verified twice).
_STREAM_BYTES = 1 << 20
# What a capped stream keeps of its true end, in memory, for the preview's tail.
_TRUE_TAIL_BYTES = 1024 * 1024
# How often (bytes written) a long write makes room under the folder's quota.
_QUOTA_STEP = 64 * 1024 * 1024
# Ids, call ids and mimes this short are within MAX_METADATA_BYTES whatever they hold (4 bytes a code point).
_INLINE_ID_LENGTH = MAX_METADATA_BYTES // 4


class _TrueTail:
    """The last ``_TRUE_TAIL_BYTES`` (or a little more) of a stream, as the chunks
    that hold them (``bytes`` chunks are kept by reference, others copied)."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def feed(self, chunk: object, view: memoryview) -> None:
        data = chunk if type(chunk) is bytes else bytes(view)
        self._chunks.append(data)  # type: ignore[arg-type]
        self._size += len(view)
        while self._size - len(self._chunks[0]) >= _TRUE_TAIL_BYTES:
            self._size -= len(self._chunks.popleft())

    def value(self) -> bytes:
        return b"".join(self._chunks)[-_TRUE_TAIL_BYTES:]


def _true_end(content: Content) -> bytes:
    """The last ``_TRUE_TAIL_BYTES`` of ``content``'s stored form."""
    if isinstance(content, str):
        # Each code point encodes on its own: the last ones encode to the stored form's end.
        return encode_content(content[-_TRUE_TAIL_BYTES:])[-_TRUE_TAIL_BYTES:]
    with memoryview(content) as view:
        return bytes(view.cast("B")[-_TRUE_TAIL_BYTES:])


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
    ``next`` is where the following page starts, None at the end (of the
    sealed prefix, when the resource is not ``complete``).
    """

    resource: Resource
    content: str
    offset: int
    truncated: bool
    next: Optional[int]
    #: False for a background command still running (or lost): ``resource.size``
    #: is then where its sealed prefix ends, and more may follow.
    complete: bool = True


_new_instance = object.__new__


def _unchanged(content: str) -> TruncateResult:
    """``TruncateResult(content, False, None)`` for the path almost every output takes.

    A frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``; filling the instance's ``__dict__`` directly gives
    an equal object in 40 % of the time (tests pin the equality).
    """
    result = _new_instance(TruncateResult)
    fields = result.__dict__
    fields["content"] = content
    fields["truncated"] = False
    fields["resource"] = None
    fields["lines"] = None
    fields["next_offset"] = None
    return result


def _storage_error(action: str, error: OSError) -> StorageError:
    return StorageError(error.errno, f"{action}: {error.strerror or error}")


class ToolOutputStore:
    """Bounds tool outputs, persists the large ones and serves them back in pages.

    :param data_dir: the data folder; by default ``$OVERSPILL_DATA_DIR``, else
        ``$XDG_DATA_HOME/overspill``, else ``~/.local/share/overspill``.  The
        store manages ``data_dir/tool-output/managed`` (``store.directory``).
    :param url: where to keep resources instead: ``redis://host:port/db``,
        ``rediss://...`` (TLS) or ``redis+cluster://host:port`` for Redis
        (``pip install 'overspill[redis]'``), a path or ``file:///path`` for
        a data folder.  Without ``url`` or ``data_dir``, ``$OVERSPILL_STORE_URL``
        is read the same way.  A password in it is never shown.
    :param config: limits from a mapping, JSON/TOML file path(s) or a sequence
        of them (see ``overspill.config.resolve_limits``).
    :param durable: fsync payload, record and folder before a write returns.
    :param retention: how long ``cleanup`` keeps a resource.
    :param grace: how long ``cleanup`` leaves leftovers of unfinished writes.
    :param create: create the local folder now (the default); with False a
        missing folder is created by the first write, and until then reads,
        listings and cleanups find nothing and create nothing.
    :raises ValueError: both ``data_dir`` and ``url`` were given.
    :raises ConfigError: invalid configuration, an unsupported URL, or a
        Redis URL without the redis client installed.
    :raises StorageError: the folder cannot be created, or the server cannot
        be reached (the message names its address).
    """

    def __init__(
        self,
        data_dir: Union[str, os.PathLike[str], None] = None,
        *,
        url: Optional[str] = None,
        config: Optional[ConfigSource] = None,
        durable: bool = True,
        retention: timedelta = RETENTION,
        grace: timedelta = timedelta(hours=1),
        create: bool = True,
    ) -> None:
        location = locate(data_dir, url)
        for value, name in ((retention, "retention"), (grace, "grace")):
            if not isinstance(value, timedelta):
                raise TypeError(f"{name} must be a timedelta, not {type(value).__name__}")
            if value < timedelta(0):
                raise ValueError(f"{name} must not be negative")
        self._limits = resolve_limits(config)
        # (max_tokens, count): the token bound and its counter, loaded now so
        # that a missing extra is reported here, not by the first large output.
        self._tokens: Optional[tuple[int, Callable[[str], int]]] = None
        if self._limits.max_tokens is not None:
            self._tokens = (self._limits.max_tokens, _tokens.counter())
        self._views = view_flags(self._limits.views)
        self._signals = compile_signals(self._limits.signals)
        self._durable = bool(durable)
        self._retention = retention
        self._grace = grace
        self._url: Optional[str] = None
        self._directory: Optional[Path] = None
        self._backend: Backend = open_backend(location, durable=self._durable, create=create)
        if location.url is not None:
            self._url = location.shown  # without its password
            self._where = self._url
        else:
            assert isinstance(self._backend, LocalBackend)
            self._root = location.folder
            self._directory = self._backend.directory
            self._where = str(self._directory)
        # The backend's optional capabilities, looked up once.
        self._quota = self._backend if isinstance(self._backend, Quota) else None
        self._hints = self._backend if isinstance(self._backend, PageHints) else None
        self._cleaner: Optional[threading.Thread] = None
        self._stop = threading.Event()
        _OPEN_STORES.add(self)

    def _reset_after_fork(self) -> None:
        """In a forked child: no cleaner thread (it was not forked), fresh locks and caches."""
        self._cleaner = None
        self._stop = threading.Event()
        if isinstance(self._backend, ForkAware):
            self._backend.reset_after_fork()

    # ------------------------------------------------------------------ basics
    @property
    def directory(self) -> Optional[Path]:
        """The managed folder, ``data_dir/tool-output/managed``; None when the store is on a server."""
        return self._directory

    @property
    def url(self) -> Optional[str]:
        """The server's URL without its password; None when the store is a local folder."""
        return self._url

    @property
    def durable(self) -> bool:
        return self._durable

    @property
    def views(self) -> tuple[str, ...]:
        """The views the model is shown of stored bytes (``tool_output.views``; ``()`` for raw text)."""
        return self._limits.views

    def limits(self) -> Limits:
        """The limits ``truncate`` applies when a call names none."""
        return self._limits

    def ping(self) -> None:
        """Check that the store can be reached now: one round trip to a server
        (nothing for a local folder, whose failures show when it is written).
        Hosts call it before work whose output would otherwise be lost, such as
        running a command.

        :raises StorageError: the server cannot be reached (the message names
            its address, never a password).
        """
        ping = getattr(self._backend, "ping", None)
        if ping is not None:
            ping()

    def __enter__(self) -> ToolOutputStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._url is not None:
            return f"ToolOutputStore(url={self._url!r})"
        return f"ToolOutputStore({str(self._root)!r}, durable={self._durable})"

    def close(self) -> None:
        """Stop the background cleanup and drop the cached maps."""
        self._stop.set()
        cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None and cleaner is not threading.current_thread():
            cleaner.join()
        self._backend.close()

    # ------------------------------------------------------------------ writing
    def _writer(self) -> Writer:
        """A backend writer under a fresh id (ids are the store's: they sort by time)."""
        return self._created(self._backend.create)

    def _created(self, create: Callable[[str], Any]) -> Any:
        """``create(id)`` for a fresh id, drawn again while the id is taken."""
        for _ in range(_ID_ATTEMPTS):
            try:
                return create(new_id())
            except FileExistsError:
                continue
            except OSError as error:
                if isinstance(error, StorageError):
                    raise
                raise _storage_error("cannot create a resource", error) from None
        raise StorageError(17, "could not find a free resource id")

    def _stored_cap(self) -> int:
        """The most bytes one stored copy holds: one output never passes the folder's quota."""
        return min(self._limits.max_stored_bytes, self._limits.max_total_bytes)

    def _make_room(self) -> None:
        """Evict the oldest resources until the location is within its quota
        (``overspill._quota``).

        The location's own bytes count, unfinished payloads (this writer's
        included) too; only published resources are evicted, oldest
        ``created`` first, under the cleanup lock.  A backend without the
        ``Quota`` capability is left alone.
        """
        if self._quota is None:
            return
        try:
            make_room(self._quota, self._limits.max_total_bytes)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise _storage_error(f"cannot make room in {self._directory}", error) from None

    def _write_capped(self, writer: Writer, data: memoryview, cap: int) -> None:
        """Write what of ``data`` fits under ``cap``; make room under the quota as the payload grows."""
        room = cap - writer.size
        if room <= 0:
            return
        before = writer.size
        writer.write(data if len(data) <= room else data[:room])
        if before // _QUOTA_STEP != writer.size // _QUOTA_STEP:
            self._make_room()

    def _publish(self, writer: Writer, session_id: str, tool_call_id: str,
                 mime: str, name: Optional[str], total: Optional[int] = None,
                 lines: Optional[int] = None) -> Record:
        """Publish ``writer``'s resource; ``total`` is the output's size when it was
        capped, ``lines`` its line count as people give it."""
        capture = None if total is None or total <= writer.size else (total, writer.size)
        extra: dict[str, object] = {}
        if capture is not None:
            extra["capture"] = capture
        if lines is not None:
            extra["lines"] = lines
        try:
            self._make_room()
            return writer.publish(session_id, tool_call_id, mime, name, retention=self._retention, **extra)
        except BaseException as error:
            writer.abort()
            if isinstance(error, OSError) and not isinstance(error, StorageError):
                raise _storage_error("cannot store the resource", error) from None
            raise

    def _write_pieces(self, session_id: str, tool_call_id: str, pieces: Iterable[memoryview],
                      mime: str, name: Optional[str]) -> Record:
        """Store ``pieces`` (their first ``max_stored_bytes``; the rest is counted)."""
        cap = self._stored_cap()
        writer = self._writer()
        total = 0
        newlines = 0
        last_newline = False
        try:
            for piece in _stable_pieces(pieces):
                if not len(piece):
                    continue
                total += len(piece)
                newlines += _kernels.count_lines(piece) - 1
                last_newline = piece[-1] == 10
                self._write_capped(writer, piece, cap)
        except BaseException as error:
            writer.abort()
            if isinstance(error, OSError) and not isinstance(error, StorageError):
                raise _storage_error("cannot store the resource", error) from None
            raise
        lines = counted_lines(newlines, total, last_newline)
        return self._publish(writer, session_id, tool_call_id, mime, name, total, lines)

    @staticmethod
    def _check_write_arguments(session_id: object, tool_call_id: object, mime: object, name: object) -> None:
        _check_metadata(id_string(session_id, "session_id"), "session_id")
        _check_metadata(id_string(tool_call_id, "tool_call_id"), "tool_call_id")
        _check_metadata(id_string(mime, "mime"), "mime")
        if name is not None:
            if not isinstance(name, str):
                raise TypeError(f"name must be a str or None, not {type(name).__name__}")
            _check_metadata(name, "name")

    def write(self, session_id: str, tool_call_id: str, content: Content, *,
              mime: str = "text/plain", name: Optional[str] = None) -> Resource:
        """Persist ``content`` whole, whatever its size, and return its resource.

        A ``str`` is stored as UTF-8 (``surrogateescape``; other lone surrogates
        as U+FFFD); bytes-like content is stored exactly.  Past
        ``max_stored_bytes`` (or the folder's ``max_total_bytes``) only the
        first that many bytes are stored, and the record's ``capture`` says so.

        :raises TypeError: an argument of the wrong type.
        :raises ValueError: an empty ``session_id``, ``tool_call_id`` or ``mime``.
        :raises StorageError: the write failed; nothing was left visible.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        if not isinstance(content, str):
            content = _checked_buffer(content)
        return self._write_pieces(session_id, tool_call_id, stored_pieces(content), mime, name).resource

    def truncate(self, session_id: str, tool_call_id: str, content: Content, *,
                 max_lines: Optional[int] = None, max_bytes: Optional[int] = None,
                 mime: Optional[str] = None, name: Optional[str] = None) -> TruncateResult:
        """Bound ``content`` for the model, persisting it whole when it is over.

        The model is shown a view of the content (``tool_output.views``: ANSI
        escapes removed, ``\\r`` redraws collapsed; text without ESC or lone
        ``\\r`` is its own view).  Views never decide storage: when the raw
        content is within the limits its view comes back (decoded with
        ``errors="replace"`` if it was bytes) and nothing is written.  Over
        them the content is stored exactly; when its view fits the limits
        (redraws and escapes only) the result is that view, ``"\\n\\n"`` and
        ``view_marker``'s marker, else ``head + "\\n\\n" + marker`` followed by
        the signal lines, if any, and ``"\\n\\n" + tail`` when the tail is
        not empty.  Head and tail are those of ``overspill.preview`` of the
        view with ``line_slack`` 10% of a side's budget; signal lines are up
        to 20 lines of the omitted part that look like errors, warnings or summaries
        (``tool_output.signals``), each with its byte offset, and their bytes
        and lines come out of the preview's budget.  Every offset is a byte
        offset in the stored bytes.

        :param max_lines: overrides the store's limit for this call.
        :param max_bytes: overrides the store's limit for this call.
        :raises TypeError: an argument of the wrong type (a bool is not an int).
        :raises ValueError: a limit below 1, or an empty id or mime.
        :raises StorageError: the write failed; nothing was left visible.
        """
        mime = "text/plain" if mime is None else mime
        # Nearly every output is small and comes with plain str ids: that case is
        # checked inline (the full check gives the same verdict, at 3x the cost).
        if not (type(session_id) is str and 0 < len(session_id) <= _INLINE_ID_LENGTH and type(tool_call_id) is str
                and 0 < len(tool_call_id) <= _INLINE_ID_LENGTH and type(mime) is str and mime
                and len(mime) <= _INLINE_ID_LENGTH and name is None):
            self._check_write_arguments(session_id, tool_call_id, mime, name)
        lines_limit = self._limits.max_lines if max_lines is None else max_lines
        bytes_limit = self._limits.max_bytes if max_bytes is None else max_bytes
        flags = self._views
        # The path almost every output takes: one kernel pass says it is shown as it is.
        # (With a token bound, the tokens are counted on the way below.)
        if (self._tokens is None and type(content) is str
                and _kernels.text_fits(content, lines_limit, bytes_limit, flags)):
            return _unchanged(content)
        if not isinstance(content, str):
            content = _checked_buffer(content)
        elif flags and _needs_view(content, flags):
            # The view is cut from the stored form, where offsets are counted.
            content = _kernels.ascii_view(content) or memoryview(encode_content(content))
        tokens = self._tokens
        shaped: Optional[Preview]
        if isinstance(content, str):
            cuts = _kernels.preview_cuts(content, lines_limit, bytes_limit, line_slack(bytes_limit))
            if cuts[0] >= cuts[1]:
                if tokens is None or tokens[1](content) <= tokens[0]:
                    return _unchanged(content)
                shaped = None  # within the byte and line limits, over the token bound
            else:
                shaped = preview_from_cuts(content, cuts)
        else:
            # Views never decide storage: raw bytes over the limits are stored whole, even when
            # their view (redraws collapsed, escapes removed) would fit.
            raw = _kernels.preview_cuts(content, lines_limit, bytes_limit)
            if raw[0] >= raw[1]:
                text = shown_text(content, flags)
                # Invalid bytes show as U+FFFD (3 bytes each): the limit holds for what is shown.
                fits = "\ufffd" not in text or shown_size(text) <= bytes_limit
                if fits and (tokens is None or tokens[1](text) <= tokens[0]):
                    return _unchanged(text)
                shaped = None  # within the byte and line limits, over them as shown or over the token bound
            else:
                shaped = view_preview(content, lines_limit, bytes_limit, flags, line_slack(bytes_limit))
                if not shaped.truncated and tokens is not None and tokens[1](shaped.head) > tokens[0]:
                    shaped = None  # the view fits the bytes and lines, not the token bound
        record = self._write_pieces(session_id, tool_call_id, stored_pieces(content), mime, name)
        lines = human_lines(content)
        if record.capture is None:
            shaped, signals = stored_preview(
                self._reader(record), uri=record.resource.uri, stored=record.resource.size,
                total=record.resource.size, max_lines=lines_limit, max_bytes=bytes_limit, flags=flags,
                signals=self._signals, content=content, first=shaped, release=self._releaser(record),
                outline=self._limits.outline, tokens=tokens)
        else:
            # The stored copy holds only the output's start: the preview is cut as
            # truncate_stream cuts it (head from the stored copy, tail from the true
            # end), so the marker never offers an offset past what was stored.
            shaped, signals = stored_preview(
                self._reader(record), uri=record.resource.uri, stored=record.resource.size,
                total=record.capture[0], count=_kernels.count_lines(content), max_lines=lines_limit,
                max_bytes=bytes_limit, flags=flags, signals=self._signals, kept_end=_true_end(content),
                release=self._releaser(record), outline=self._limits.outline, tokens=tokens)
        return self._truncated(record, shaped, signals, lines)

    def _reader(self, record: Record) -> Reader:
        """``read(start, end)``: verified views of ``record``'s stored bytes."""
        backend = self._backend
        return lambda start, end: backend.read(record, start, end)

    def _releaser(self, record: Record) -> Optional[Callable[[int, int], None]]:
        """The backend's hint that a scanned range of ``record`` is not needed soon, if it has one."""
        hints = self._hints
        if hints is None:
            return None
        return lambda start, end: hints.drop_pages(record, start, end)

    @staticmethod
    def _truncated(record: Record, shaped: Preview, signals: list[str], lines: int) -> TruncateResult:
        total = record.capture[0] if record.capture is not None else None
        content = compose(shaped, signals, record.resource.uri, record.resource.size, lines, total)
        # A view shown whole stands for every stored byte: reading goes on from the start.
        return TruncateResult(content, True, record.resource, lines, shaped.head_end if shaped.truncated else 0)

    # ------------------------------------------------------------------ streams
    def write_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                     mime: str = "text/plain", name: Optional[str] = None) -> Resource:
        """Persist an output that arrives as byte chunks, holding one chunk at a time.

        :raises TypeError: a chunk is not bytes-like, or another argument is of the wrong type.
        :raises StorageError: the write failed; nothing was left visible.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        return self._write_pieces(session_id, tool_call_id, map(_chunk_view, chunks), mime, name).resource

    def truncate_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                        max_lines: Optional[int] = None, max_bytes: Optional[int] = None,
                        mime: Optional[str] = None, name: Optional[str] = None) -> TruncateResult:
        """``truncate`` for an output that arrives as byte chunks, in bounded memory.

        Chunks are held only while the output is still under the limits (at
        most ``max_bytes``); past them they go straight to the payload, and
        the preview is cut from the stored bytes, so it equals what
        ``truncate`` gives for the joined content.  Under the limits the
        content is returned decoded with ``errors="replace"`` and nothing is
        written.  Past ``max_stored_bytes`` (or the folder's
        ``max_total_bytes``) the payload stops growing, the last 1 MiB is kept
        in memory, and the preview's tail is the output's true end; the
        record's ``capture`` and the marker say how much was stored.

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
        last_newline = False
        cap = self._stored_cap()
        true_tail = _TrueTail()
        writer: Optional[Writer] = None
        try:
            for chunk in chunks:
                with _chunk_view(chunk) as view:
                    if not view:
                        continue
                    newlines += _kernels.count_lines(view) - 1
                    size += len(view)
                    last_newline = view[-1] == 10
                    # Under the limits: whole lines (a final newline starts no line), as preview_cuts counts.
                    if writer is None and size <= bytes_limit and (
                            newlines < lines_limit or (newlines == lines_limit and last_newline)):
                        held += view
                        continue
                    if writer is None:
                        writer = self._writer()
                        self._write_capped(writer, memoryview(held), cap)
                        if size - len(view) > cap - _TRUE_TAIL_BYTES:
                            true_tail.feed(bytes(held), memoryview(held))
                        held = bytearray()
                    if size > cap - _TRUE_TAIL_BYTES:
                        true_tail.feed(chunk, view)
                    for piece in _stable(view):
                        self._write_capped(writer, piece, cap)
        except BaseException as error:
            if writer is not None:
                writer.abort()
            if isinstance(error, OSError) and not isinstance(error, StorageError):
                raise _storage_error("cannot store the resource", error) from None
            raise
        if writer is None:
            text = shown_text(held, self._views)
            # Invalid bytes show as U+FFFD (3 bytes each): the limit holds for what is shown.
            fits = "\ufffd" not in text or shown_size(text) <= bytes_limit
            if fits and (self._tokens is None or self._tokens[1](text) <= self._tokens[0]):
                return TruncateResult(text, False, None)
            # Within the byte and line limits, over them as shown or over the token bound: stored
            # like any larger output.
            writer = self._writer()
            try:
                self._write_capped(writer, memoryview(held), cap)
                if size > cap - _TRUE_TAIL_BYTES:
                    true_tail.feed(bytes(held), memoryview(held))
            except BaseException as error:
                writer.abort()
                if isinstance(error, OSError) and not isinstance(error, StorageError):
                    raise _storage_error("cannot store the resource", error) from None
                raise
        lines = counted_lines(newlines, size, last_newline)  # as a person counts them
        record = self._publish(writer, session_id, tool_call_id, mime, name, size, lines)
        count = newlines + 1  # as the preview's line rule counts them
        try:
            shaped, signals = stored_preview(
                self._reader(record), uri=record.resource.uri, stored=record.resource.size, total=size,
                count=count, max_lines=lines_limit, max_bytes=bytes_limit, flags=self._views,
                signals=self._signals, kept_end=None if record.capture is None else true_tail.value(),
                release=self._releaser(record), outline=self._limits.outline, tokens=self._tokens)
        except BaseException:
            # The preview is read back from the published payload; when that
            # fails the caller gets an error, so no resource may stay behind.
            self._discard(record.id)
            raise
        return self._truncated(record, shaped, signals, lines)

    def _discard(self, resource_id: str) -> None:
        """Remove a resource this store just published; never raises (a pair
        left behind is a complete resource, which cleanup expires)."""
        try:
            self._backend.delete(resource_id)
        except Exception:  # noqa: BLE001 - the caller is already raising the error that matters
            pass

    # ------------------------------------------------------------------ reading
    def _owned_record(self, session_id: str, resource_id: str) -> Record:
        record = self._backend.record(resource_id)
        if record.session_id != session_id:
            raise AccessDeniedError(f"resource {record.resource.uri} not found in this session (another session wrote it)")
        return record

    @contextlib.contextmanager
    def view(self, session_id: str, uri: str, *, start: int = 0,
             end: Optional[int] = None) -> Iterator[tuple[Resource, memoryview]]:
        """The whole verified payload (or its bytes ``[start, end)``, clamped) as a
        read-only view, for scans such as grep.

        Every checksum chunk under it is verified before the view is given
        out; it is valid only inside the ``with`` block.

        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: its bytes do not match their checksums.
        """
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        record = self._owned_record(session_id, resource_id)
        size = record.resource.size
        low = min(max(whole_number(start, "start"), 0), size)
        high = size if end is None else min(max(whole_number(end, "end"), low), size)
        with self._backend.read(record, low, high) as whole:
            yield record.resource, whole

    def iter_bytes(self, session_id: str, uri: str) -> Iterator[memoryview]:
        """The exact stored bytes, in order, one verified range at a time.

        Each range (about 1 MiB, whole checksum chunks) is verified just before
        it is yielded, so a consumer that stops early (``read --all | head``)
        pays only for what it took, and memory stays flat whatever the size.
        A yielded view is valid until the next one is requested; copy it to keep it.

        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: a range does not match its checksums (the
            ranges before it were already yielded).
        """
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        record = self._owned_record(session_id, resource_id)
        return self._ranges(record)

    def _ranges(self, record: Record) -> Iterator[memoryview]:
        size = record.resource.size
        step = max(_STREAM_BYTES // record.checksum_chunk, 1) * record.checksum_chunk
        for start in range(0, size, step):
            with self._backend.read(record, start, min(start + step, size)) as view:
                yield view

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
        id_string(session_id, "session_id")
        offset = whole_number(offset, "offset")  # clamped below, as the reference store does
        limit = MAX_READ_BYTES if limit is None else whole_number(limit, "limit")
        record = self._owned_record(session_id, resource_id)
        size = record.resource.size
        offset = min(max(offset, 0), size)
        limit = min(max(limit, 1), MAX_READ_BYTES)
        # The page's boundaries depend on a few bytes either side of it, so a
        # window with a margin decides them exactly as the whole payload would.
        low = max(offset - _PAGE_MARGIN, 0)
        high = min(offset + limit + _PAGE_MARGIN, size)
        escapes = self._views & VIEW_ANSI
        if escapes:
            # Room to see an escape sequence that a page edge would split.
            low, high = max(offset - ESCAPE_REACH, 0), min(high + ESCAPE_REACH, size)
        with self._backend.read(record, low, high) as view:
            if not view:
                return Page(record.resource, "", 0, False, None, record.complete)
            start, end = _kernels.page_bounds(view, offset - low, limit, high == size)
            if escapes:
                # Each page's view is of its bytes alone: a page never starts or ends inside an
                # escape sequence (it would show a piece of it, such as "[1;31m").  A start inside
                # one moves past it (it shows nothing); an end inside one moves to its end.
                start = escape_end(view, start)
                end = max(escape_end(view, end), start)
            content = shown_text(view[start:end], self._views)
        start += low
        end += low
        more = end < size
        # As ``_unchanged`` does for TruncateResult: an equal frozen instance
        # without a frozen ``__init__``'s per-field ``object.__setattr__``.
        page = _new_instance(Page)
        fields = page.__dict__
        fields["resource"] = record.resource
        fields["content"] = content
        fields["offset"] = start
        fields["truncated"] = more
        fields["next"] = end if more else None
        fields["complete"] = record.complete
        return page

    # ------------------------------------------------------------------ background commands
    def check_background(self, session_id: str) -> None:
        """Raise unless ``session_id`` may start one more background command.

        :raises UnsupportedError: the backend has no growing resources.
        :raises BackgroundLimitError: ``max_background`` of the session's commands are running.
        :raises StorageError: the listing failed.
        """
        id_string(session_id, "session_id")
        if not isinstance(self._backend, GrowingBackend):
            raise UnsupportedError(f"the store at {self._where} does not support background commands "
                                   "(no growing resources on this backend); run the command in the foreground")
        running = sum(1 for record in self.records(session_id) if record.state == "running")
        if running >= self._limits.max_background:
            raise BackgroundLimitError(
                f"{running} background commands are already running in this session (max_background is "
                f"{self._limits.max_background}); wait for one or kill one first")

    def open_growing(self, session_id: str, tool_call_id: str, *, process: Optional[tuple[int, int]] = None,
                     mime: str = "text/plain", name: Optional[str] = None) -> GrowingOutput:
        """A growing resource for a background command's output, published at once as running.

        The caller writes the output to it, has it sealed (``seal_if_due``)
        and finishes it with the exit code; this process is its owner.

        :param process: the command's (pid, start time), so that ``kill`` can
            reach it from another process.
        :raises UnsupportedError, BackgroundLimitError: as ``check_background``.
        :raises StorageError: the resource could not be created.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        self.check_background(session_id)
        create = self._backend.create_growing  # type: ignore[attr-defined]  # checked: a GrowingBackend
        owner = current_owner()
        writer = self._created(lambda resource_id: create(resource_id, session_id=session_id,
                                                          tool_call_id=tool_call_id, mime=mime, name=name,
                                                          owner=owner, process=process))
        return GrowingOutput(writer, self._stored_cap(), self._make_room, _QUOTA_STEP)

    def status(self, session_id: str, uri: str) -> Record:
        """The record of a resource this session wrote; for a background command's
        output, its ``state`` (running, exited, lost), exit code and sealed size.

        :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError: as ``read``.
        """
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        return self._owned_record(session_id, resource_id)

    def preview(self, session_id: str, uri: str, *, offset: int = 0, max_lines: Optional[int] = None,
                max_bytes: Optional[int] = None, kept_end: Optional[bytes] = None) -> TruncateResult:
        """The head+tail preview of a resource's bytes from ``offset`` to its (sealed) end.

        Under the limits ``content`` is all of them; over, a marker names the
        byte offset where the omitted part starts.  ``next_offset`` is where
        to read on from: that offset, or the end when nothing was omitted.
        Nothing is written.

        :param offset: clamped to ``[0, size]``.
        :param kept_end: the output's true end when its stored copy was capped
            (only used from offset 0).
        :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError,
            ResourceCorruptError: as ``read``.
        """
        record = self.status(session_id, uri)
        offset = whole_number(offset, "offset")
        lines_limit = self._limits.max_lines if max_lines is None else whole_number(max_lines, "max_lines", 1)
        bytes_limit = self._limits.max_bytes if max_bytes is None else whole_number(max_bytes, "max_bytes", 1)
        size = record.resource.size
        start = min(max(offset, 0), size)
        backend = self._backend
        newlines = 0
        last_newline = False
        for low in range(start, size, _STREAM_BYTES):
            with backend.read(record, low, min(low + _STREAM_BYTES, size)) as view:
                newlines += _kernels.count_lines(view) - 1
                last_newline = view[-1] == 10
        capped = start == 0 and record.capture is not None and kept_end is not None
        total = record.capture[0] if capped else size - start  # type: ignore[index]
        shaped, signals = stored_preview(
            lambda low, high: backend.read(record, start + low, start + high), uri=record.resource.uri,
            stored=size - start, total=total, count=newlines + 1, max_lines=lines_limit, max_bytes=bytes_limit,
            # Signal lines and the outline name offsets of the range: only from 0 are they the output's.
            flags=self._views, signals=self._signals if start == 0 else (), outline=start == 0 and self._limits.outline,
            kept_end=kept_end if capped else None, tokens=self._tokens)
        lines = newlines + (1 if size > start and not last_newline else 0)
        if not shaped.truncated:
            return TruncateResult(shaped.head, False, record.resource, lines, size)
        if start == 0:
            content = compose(shaped, signals, record.resource.uri, size, lines, total if capped else None)
        else:
            resume = start + shaped.head_end
            uri_text = record.resource.uri
            marker = (f"... {shaped.tail_start - shaped.head_end} bytes omitted here: from byte offset {resume} "
                      f"to {start + shaped.tail_start} of {size} ...\n"
                      f'next: read(resource="{uri_text}", offset={resume}) or grep(resource="{uri_text}", '
                      'pattern="...")')
            content = f"{shaped.head}\n\n{marker}"
            if signals:
                content += "\n" + "\n".join(signals)
            if shaped.tail:
                content += f"\n\n{shaped.tail}"
        return TruncateResult(content, True, record.resource, lines, start + shaped.head_end)


    def read_bytes(self, session_id: str, uri: str, *, offset: int = 0,
                   limit: Optional[int] = None) -> tuple[Resource, bytes, int, Optional[int]]:
        """A page of a resource's exact bytes (for binary resources, which a
        text page would show as U+FFFD): ``(resource, data, offset, next)``.

        Offsets and limits are clamped as ``read``'s, but the page is cut at
        exactly ``offset + limit`` (bytes have no characters to respect);
        ``next`` is where the following page starts, None at the end (a read at
        or past the end is an empty page).

        :raises: as ``read``.
        """
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        offset = whole_number(offset, "offset")
        limit = MAX_READ_BYTES if limit is None else whole_number(limit, "limit")
        record = self._owned_record(session_id, resource_id)
        size = record.resource.size
        start = min(max(offset, 0), size)
        end = min(start + min(max(limit, 1), MAX_READ_BYTES), size)
        with self._backend.read(record, start, end) as view:
            data = bytes(view)
        return record.resource, data, start, (end if end < size else None)

    # ------------------------------------------------------------------ listing
    def records(self, session_id: Optional[str] = None) -> list[Record]:
        """Valid records in id (creation) order, of one session or of all.

        Broken or vanishing resources are skipped: cleanup deals with them.

        :raises StorageError: the listing failed.
        """
        if session_id is not None:
            id_string(session_id, "session_id")
        try:
            return self._backend.records(session_id)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise _storage_error(f"cannot list {self._where}", error) from None

    def resources(self, session_id: str) -> list[Resource]:
        """That session's resources in the order they were written (id order)."""
        id_string(session_id, "session_id")
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
            return self._backend.sweep(now_seconds, self._retention, self._grace, dry_run=dry_run)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise _storage_error(f"cannot clean {self._where}", error) from None

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
        # Nothing a sweep meets ends this thread, and nothing is hidden: each
        # failure, and each sweep that left something it could not remove, is
        # logged to the "overspill" logger; the next sweep tries again.
        import logging

        log = logging.getLogger("overspill")
        while not self._stop.is_set():
            try:
                report = self.cleanup()
            except Exception:  # noqa: BLE001 - the periodic cleaner must outlive any one sweep
                log.exception("periodic cleanup of %s failed; trying again in %s seconds", self._where, interval)
            else:
                if report.skipped and not report.busy:
                    log.warning("periodic cleanup of %s could not remove %d entries (a directory under a "
                                "resource's name, or no permission)", self._where, report.skipped)
            self._stop.wait(interval)


# Every store of this process, so that a forked child can reset them: a lock
# held by a thread that exists only in the parent would deadlock the child's
# first read, and the parent's cleaner thread is not in the child.
_OPEN_STORES: "weakref.WeakSet[ToolOutputStore]" = weakref.WeakSet()


def _reset_stores_after_fork() -> None:
    for store in list(_OPEN_STORES):
        store._reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_stores_after_fork)

# Writable buffers are copied this much at a time before they are written (see _stable).
_COPY_BYTES = 1 << 20


def _stable(view: memoryview) -> Iterator[memoryview]:
    """``view`` as pieces that cannot change while they are written and checksummed.

    A read-only view (bytes, a str's stored form, a read-only map) is itself.
    A writable one (a bytearray another thread may be changing) is copied a
    MiB at a time, so the checksum and the payload always cover the same bytes.
    """
    if view.readonly:
        yield view
        return
    for start in range(0, len(view), _COPY_BYTES):
        yield memoryview(bytes(view[start : start + _COPY_BYTES]))


def _stable_pieces(pieces: Iterable[memoryview]) -> Iterator[memoryview]:
    for piece in pieces:
        yield from _stable(piece)


def _check_metadata(value: str, name: str) -> None:
    # A record must stay small enough to be read back: each caller string is
    # bounded in UTF-8 bytes (a lone surrogate counts as the 3 bytes it takes).
    if len(value) > MAX_METADATA_BYTES // 4:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"{name} must be at most {MAX_METADATA_BYTES} UTF-8 bytes, not {size}")


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


def _needs_view(text: str, flags: int) -> bool:
    """Whether ``text`` differs from its view: an ESC or a lone ``\\r``."""
    if flags & VIEW_ANSI and "\x1b" in text:
        return True
    return bool(flags & VIEW_CR) and text.count("\r") != text.count("\r\n")
