"""The store's write side: ``write``, ``truncate`` and their streaming forms.

A mixin of ``ToolOutputStore`` (see ``overspill.store``): the store draws the
id, a backend writer takes the bytes (capped by ``max_stored_bytes``, room
made under ``max_total_bytes`` as it grows, ``overspill._quota``), and
``overspill._preview`` cuts what the model is shown of a stored output.
"""

from __future__ import annotations

import errno

from . import _kernels
from ._arguments import check_metadata, id_string
from ._buffers import VIEW_ANSI, VIEW_CR, BytesLike, byte_view
from ._quota import HeldByRunning
from ._store_room import StoreRoom
from ._store_types import (
    RESULT_SLOTS,
    TRUE_TAIL_BYTES,
    TrueTail,
    TruncateResult,
    checked_buffer,
    stable_pieces,
    storage_error,
    unchanged,
    unchanging,
)
from ._views import view_preview
from .errors import StorageError
from .records import MAX_METADATA_BYTES, new_id
from .text import (
    Preview,
    counted_lines,
    encode_content,
    held_text,
    human_lines,
    line_slack,
    preview_from_cuts,
    stored_pieces,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and pathlib cost start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterable, Iterator
    from datetime import timedelta
    from typing import Any, NoReturn, Optional, Union

    from ._quota import QuotaBackend
    from .backends.base import Backend, PageHints, Writer
    from .config import Limits
    from .records import Record, Resource
    from .text import Content, Reader, SignalPatterns

__all__ = ["StoreWrites", "raise_stored"]

# Draws of a fresh id before giving up: a clash needs 83 random bits to repeat.
_ID_ATTEMPTS = 8
# How often (bytes written) a long write makes room under the folder's quota.
QUOTA_STEP = 64 * 1024 * 1024
# Code points of a str encoded at a time as it is stored (as text.stored_pieces does).
_ENCODE_SLICE = 1 << 18
# Ids, call ids and mimes this short are within MAX_METADATA_BYTES whatever they hold (4 bytes a code point);
# an ASCII one holds no surrogate pair either, so check_metadata has nothing to refuse in it.
_INLINE_ID_LENGTH = MAX_METADATA_BYTES // 4


def _true_end(content: Content) -> bytes:
    """The last ``TRUE_TAIL_BYTES`` of ``content``'s stored form."""
    if isinstance(content, str):
        # Each code point encodes on its own: the last ones encode to the stored form's end.
        return encode_content(content[-TRUE_TAIL_BYTES:])[-TRUE_TAIL_BYTES:]
    with memoryview(content) as view:
        return bytes(view.cast("B")[-TRUE_TAIL_BYTES:])


def _ending(pieces: Iterable[memoryview], end: list[bytes]) -> Iterator[memoryview]:
    """``pieces`` (which cannot change: ``stable``'s), leaving in ``end[0]``, once they are all
    taken, the last ``TRUE_TAIL_BYTES`` of what they held: a changing buffer's true end as it
    was written and counted, where ``_true_end`` would read the buffer as it is by then."""
    tail = TrueTail()
    for piece in pieces:
        yield piece
        tail.feed(piece)  # (a copy of at most a MiB: kept by reference)
    end[0] = tail.value()


def _preview_count(lines: int, end: bytes) -> int:
    """The preview's line count (newlines + 1) of an output of ``lines`` lines as people count
    them (``human_lines``; not empty) whose last bytes are ``end``."""
    return lines + (1 if end.endswith(b"\n") else 0)


def _needs_view(text: str, flags: int) -> bool:
    """Whether ``text`` differs from its view: an ESC or a lone ``\\r``."""
    if flags & VIEW_ANSI and "\x1b" in text:
        return True
    # "in" finds a character at memchr speed; the two counts scan the whole text, so they
    # run only when there is a "\r" at all.
    return bool(flags & VIEW_CR) and "\r" in text and text.count("\r") != text.count("\r\n")


def _stored_size(content: Content) -> int:
    """Bytes of ``content``'s stored form."""
    if isinstance(content, str):
        return len(encode_content(content))
    with memoryview(content) as view:
        return view.nbytes


def _noted_pieces(content: Union[str, BytesLike], noted: list[bool]) -> Iterator[memoryview]:
    """``stored_pieces(content)``, setting ``noted[0]`` when ``content`` is a
    ``str`` holding a lone surrogate: its stored form is then not its text (an escaped byte is
    stored as itself and shown as U+FFFD; another lone surrogate is stored as U+FFFD).

    Each slice is encoded strictly first, at the speed of the ``surrogateescape`` encoding
    it replaces, so the check costs nothing more than the write's own encoding.
    """
    if not isinstance(content, str) or content.isascii():
        yield from stored_pieces(content)
        return
    for start in range(0, len(content), _ENCODE_SLICE):
        part = content[start : start + _ENCODE_SLICE]
        try:
            encoded = part.encode("utf-8")
        except UnicodeEncodeError:
            noted[0] = True
            encoded = encode_content(part)  # each code point encodes on its own: slices join
        yield memoryview(encoded)


def raise_stored(error: BaseException) -> NoReturn:
    """Re-raise a failure of storing an output: an OSError as the StorageError the store raises."""
    if isinstance(error, OSError) and not isinstance(error, StorageError):
        raise storage_error("cannot store the resource", error) from None
    raise error


class StoreWrites(StoreRoom):
    """Storing outputs: ``write``, ``truncate``, ``write_stream`` and ``truncate_stream``."""

    # Set by ToolOutputStore.__init__.
    _backend: Backend
    _limits: Limits
    _views: int
    _runs: int
    _signals: SignalPatterns
    _tokens: Optional[tuple[int, Callable[[str], int]]]
    _retention: timedelta
    _folder: Optional[str]
    _quota: Optional[QuotaBackend]
    _hints: Optional[PageHints]

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
                raise storage_error("cannot create a resource", error) from None
        raise StorageError(17, "could not find a free resource id")

    def _write_capped(self, writer: Writer, data: memoryview, cap: int) -> None:
        """Write what of ``data`` fits under ``cap``; make room under the quota as the payload grows."""
        room = cap - writer.size
        if room <= 0:
            return
        before = writer.size
        writer.write(data if len(data) <= room else data[:room])
        if before // QUOTA_STEP != writer.size // QUOTA_STEP:
            self._make_room()

    def _publish(self, writer: Writer, session_id: str, tool_call_id: str,
                 mime: str, name: Optional[str], total: Optional[int] = None,
                 lines: Optional[int] = None, reserve: int = 0) -> Record:
        """Publish ``writer``'s resource; ``total`` is the output's size when it was
        capped, ``lines`` its line count as people give it, ``reserve`` the room
        its record takes under the quota."""
        capture = None if total is None or total <= writer.size else (total, writer.size)
        extra: dict[str, object] = {}
        if capture is not None:
            extra["capture"] = capture
        if lines is not None:
            extra["lines"] = lines
        retention = self._retention

        def publish() -> Record:
            try:
                return writer.publish(session_id, tool_call_id, mime, name, retention=retention, **extra)
            except OSError as error:
                raise_stored(error)  # the publish's own wording, not the quota's

        try:
            # A large payload's fsync before the quota's lock, which other writers wait on.
            writer.settle()
            return self._publish_within(reserve, publish, writer.size)
        except BaseException as error:
            writer.abort()
            raise_stored(error)

    def _write_pieces(self, session_id: str, tool_call_id: str, pieces: Iterable[memoryview],
                      mime: str, name: Optional[str], room: Optional[tuple[int, int]] = None) -> Record:
        """Store ``pieces`` (their first ``max_stored_bytes``; the rest is counted).

        :raises StorageError: the quota cannot hold even the record (nothing is stored).
        """
        cap, reserve = self._room(session_id, tool_call_id, mime, name) if room is None else room
        if cap < 1:
            raise StorageError(errno.ENOSPC, f"the output was not stored: {self._not_even_the_record(reserve)}")
        writer = self._writer()
        total = 0
        newlines = 0
        last_newline = False
        try:
            for piece in stable_pieces(pieces):
                if not len(piece):
                    continue
                total += len(piece)
                newlines += _kernels.count_lines(piece) - 1
                last_newline = piece[-1] == 10
                self._write_capped(writer, piece, cap)
        except BaseException as error:
            writer.abort()
            raise_stored(error)
        lines = counted_lines(newlines, total, last_newline)
        return self._publish(writer, session_id, tool_call_id, mime, name, total, lines, reserve)

    @staticmethod
    def _check_write_arguments(session_id: object, tool_call_id: object, mime: object, name: object) -> None:
        check_metadata(id_string(session_id, "session_id"), "session_id")
        check_metadata(id_string(tool_call_id, "tool_call_id"), "tool_call_id")
        check_metadata(id_string(mime, "mime"), "mime")
        if name is not None:
            if not isinstance(name, str):
                raise TypeError(f"name must be a str or None, not {type(name).__name__}")
            check_metadata(name, "name")

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
            content = checked_buffer(content)
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
        if not (type(session_id) is str and 0 < len(session_id) <= _INLINE_ID_LENGTH and session_id.isascii()
                and type(tool_call_id) is str and 0 < len(tool_call_id) <= _INLINE_ID_LENGTH
                and tool_call_id.isascii() and type(mime) is str and mime and len(mime) <= _INLINE_ID_LENGTH
                and mime.isascii() and name is None):
            self._check_write_arguments(session_id, tool_call_id, mime, name)
        lines_limit = self._limits.max_lines if max_lines is None else max_lines
        bytes_limit = self._limits.max_bytes if max_bytes is None else max_bytes
        flags = self._views
        # The path almost every output takes: one kernel pass says it is shown as it is.
        # (With a token bound, the tokens are counted on the way below.)
        if (self._tokens is None and type(content) is str
                and _kernels.text_fits(content, lines_limit, bytes_limit, flags)):
            # unchanged(content), without the call into it (~5% of this path).
            return _kernels.new_slotted(TruncateResult, RESULT_SLOTS, (content, False, None, None, None))
        try:
            plain = isinstance(content, (str, bytes))
            content = self._to_cut(content)
            if not plain:
                with byte_view(content) as view:  # (held: a bytearray cannot be resized meanwhile)
                    if not unchanging(view):
                        # A buffer another thread or process may change during the call: what the model
                        # is told must be of the bytes stored.  Within max_bytes it is copied (no larger
                        # than a preview) and cut as bytes are; past it, it is over the limits whatever
                        # it holds, and its lines and preview are taken from the stored copy.
                        if view.nbytes > bytes_limit:
                            return self._stored_result(session_id, tool_call_id, content, mime, name,
                                                       lines_limit, bytes_limit, None, changing=True)
                        content = bytes(view)
            first = self._first_cut(content, lines_limit, bytes_limit, flags)
            if isinstance(first, TruncateResult):
                return first
            return self._stored_result(session_id, tool_call_id, content, mime, name, lines_limit, bytes_limit,
                                       first)
        except OSError as error:
            # The modules only an output over the limits needs (the preview kernel's _runs, the
            # views, the stored preview) are imported on its first one (start-up, issue 21): out
            # of descriptors, that import fails too, before anything is stored as well as after.
            raise_stored(error)

    def _to_cut(self, content: Content) -> Union[str, BytesLike]:
        """``content`` as ``truncate`` cuts its preview: bytes-like content checked, a ``str`` whose
        view differs from it as its stored form (the view is cut from that, where offsets are counted)."""
        if not isinstance(content, str):
            return checked_buffer(content)
        flags = self._views
        if flags and _needs_view(content, flags):
            return _kernels.ascii_view(content) or memoryview(encode_content(content))
        return content

    def _not_stored(self, content: Content, why: str, max_bytes: Optional[int] = None) -> TruncateResult:
        """What ``truncate`` shows of ``content`` that it could not store for ``why`` (a failed write:
        the ``StorageError``'s reason, one line), for a front end that shows the model a preview
        rather than the error: within the limits, ``content`` as ``truncate`` gives it; over them, the
        preview with the marker that says "output not stored" and why, naming no resource, as when
        the quota cannot hold even a record.  Nothing is written.  ``max_bytes`` overrides the
        store's limit, as ``truncate``'s."""
        limits = self._limits
        bytes_limit = limits.max_bytes if max_bytes is None else max_bytes
        try:
            content = self._to_cut(content)
            first = self._first_cut(content, limits.max_lines, bytes_limit, self._views)
            if isinstance(first, TruncateResult):
                return first
            return self._unstored(content, total=_stored_size(content), lines=human_lines(content),
                                  lines_limit=limits.max_lines, bytes_limit=bytes_limit, reserve=0,
                                  first=first, why=why)
        except OSError as error:
            raise_stored(error)  # a lazy import out of descriptors, as in truncate

    def _first_cut(self, content: Union[str, BytesLike], lines_limit: int, bytes_limit: int,
                   flags: int) -> Union[TruncateResult, Preview, None]:
        """``truncate``'s verdict before anything is stored: the unchanged result
        when ``content`` is shown whole, else the preview cut from ``content``
        itself (None when it must be cut from the stored bytes: within the
        byte and line limits, over them as shown or over the token bound)."""
        tokens = self._tokens
        shaped: Optional[Preview]
        if isinstance(content, str):
            cuts = _kernels.preview_cuts(content, lines_limit, bytes_limit, line_slack(bytes_limit), self._runs)
            if cuts[0] >= cuts[1]:
                if tokens is None or tokens[1](content) <= tokens[0]:
                    return unchanged(content)
                shaped = None  # within the byte and line limits, over the token bound
            else:
                shaped = preview_from_cuts(content, cuts)
        else:
            # Views never decide storage: raw bytes over the limits are stored whole, even when
            # their view (redraws collapsed, escapes removed) would fit.
            raw = _kernels.preview_cuts(content, lines_limit, bytes_limit)
            if raw[0] >= raw[1]:
                text = held_text(content, flags, bytes_limit, tokens)
                if text is not None:
                    return unchanged(text)
                shaped = None  # within the byte and line limits, over them as shown or over the token bound
            else:
                shaped = view_preview(content, lines_limit, bytes_limit, flags, line_slack(bytes_limit), self._runs)
                if not shaped.truncated and tokens is not None and tokens[1](shaped.head) > tokens[0]:
                    shaped = None  # the view fits the bytes and lines, not the token bound
        return shaped

    def _stored_result(self, session_id: str, tool_call_id: str, content: Union[str, BytesLike], mime: str,
                       name: Optional[str], lines_limit: int, bytes_limit: int,
                       shaped: Optional[Preview], changing: bool = False) -> TruncateResult:
        """Store ``content`` whole (capped by the quota) and preview what was stored.

        ``changing``: ``content`` is a buffer that may change while it is stored; its lines, its
        preview and their offsets then come from the stored copy, and a capped one's true end
        from the copies that were written, never from the buffer as it is later.
        """
        flags = self._views
        tokens = self._tokens
        # (A changing buffer is counted only if it is not stored: its stored copy's count is the write's.)
        lines = None if changing else human_lines(content)
        cap, reserve = room = self._room(session_id, tool_call_id, mime, name)
        from ._preview import stored_preview  # only a stored output's preview needs it

        if cap < 1:
            return self._unstored(content, total=_stored_size(content),
                                  lines=human_lines(content) if lines is None else lines, lines_limit=lines_limit,
                                  bytes_limit=bytes_limit, reserve=reserve, first=shaped)
        surrogates = [False]
        ending = [b""]
        pieces = _noted_pieces(content, surrogates)
        try:
            record = self._write_pieces(session_id, tool_call_id,
                                        _ending(stable_pieces(pieces), ending) if changing else pieces, mime, name,
                                        room)
        except HeldByRunning as held:
            # Running background outputs hold the quota: nothing stored, as for a quota too small.
            return self._unstored(content, total=_stored_size(content),
                                  lines=human_lines(content) if lines is None else lines, lines_limit=lines_limit,
                                  bytes_limit=bytes_limit, reserve=reserve, first=shaped, why=held.strerror)
        count: Optional[int] = None
        if changing:
            # The write counted the copies it stored (and, past the cap, the rest): the preview is cut
            # from the stored copy (no content, no first cut) and, when capped, from the true end
            # those copies ended with.
            lines = record.lines
            count = _preview_count(lines, ending[0])
            content = None
        try:
            if record.capture is None:
                if surrogates[0]:
                    # A str holding lone surrogates is shown as its stored bytes are, each escaped byte
                    # as U+FFFD counted as its 3 bytes, as for the same output given as bytes: the
                    # preview cut from the str itself would show the surrogates (not UTF-8 at all).
                    content, shaped, count = None, None, _kernels.count_lines(content)
                shaped, signals = stored_preview(
                    self._stored_bytes(record), uri=record.resource.uri, stored=record.resource.size,
                    total=record.resource.size, count=count, max_lines=lines_limit, max_bytes=bytes_limit,
                    flags=flags, signals=self._signals, content=content, first=shaped,
                    release=self._releaser(record), outline=self._limits.outline, tokens=tokens,
                    runs=self._runs, mapped=self._mapped_bytes(record))
            else:
                # The stored copy holds only the output's start: the preview is cut as
                # truncate_stream cuts it (head from the stored copy, tail from the true
                # end), so the marker never offers an offset past what was stored.
                shaped, signals = stored_preview(
                    self._stored_bytes(record), uri=record.resource.uri, stored=record.resource.size,
                    total=record.capture[0], count=_kernels.count_lines(content) if count is None else count,
                    max_lines=lines_limit, max_bytes=bytes_limit, flags=flags, signals=self._signals,
                    kept_end=_true_end(content) if content is not None else ending[0],
                    release=self._releaser(record), outline=self._limits.outline, tokens=tokens,
                    runs=self._runs, mapped=self._mapped_bytes(record))
        except BaseException:
            # The preview is read back from the published payload; when that fails the caller gets an
            # error, so no resource may stay behind (as truncate_stream does).
            self._discard(record.id)
            raise
        return self._truncated(record, shaped, signals, lines)

    def _stored_bytes(self, record: Record) -> Reader:
        """``read(start, end)``: ``record``'s stored bytes ``[start, end)`` copied out, then
        verified (``Backend.read_copy``), for a preview to show: a view of a shared map would show
        a byte another process changed in place after the check."""
        backend = self._backend
        return lambda start, end: memoryview(backend.read_copy(record, start, end))

    def _mapped_bytes(self, record: Record) -> Reader:
        """``read(start, end)``: verified views of ``record``'s stored bytes (no copy: a map's are
        the file's as they are when read), where a preview finds the cuts of a long region's
        view (``stored_preview``'s ``mapped``), never the bytes it shows."""
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
        from ._preview import compose

        content = compose(shaped, signals, record.resource.uri, record.resource.size, lines, total)
        # A view shown whole stands for every stored byte: reading goes on from the start.
        return TruncateResult(content, True, record.resource, lines, shaped.head_end if shaped.truncated else 0)

    def _discard(self, resource_id: str) -> None:
        """Remove a resource this store just published; never raises (a pair
        left behind is a complete resource, which cleanup expires)."""
        try:
            self._backend.delete(resource_id)
        except Exception:  # noqa: BLE001 - the caller is already raising the error that matters
            pass


