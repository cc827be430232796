"""The store's streaming writes: ``write_stream`` and ``truncate_stream``, in bounded memory.

An output arriving as byte chunks is held only while it is within the
limits; past them it goes through a writer, capped, its true end kept in
memory (``_Spill``).  ``StoreStreams`` extends the write side
(``_store_writes.StoreWrites``) and ``ToolOutputStore`` composes it.
"""

from __future__ import annotations


from . import _kernels
from ._arguments import whole_number
from ._buffers import BytesLike
from ._quota import HeldByRunning
from ._store_types import TrueTail, TruncateResult, chunk_view, stable
from ._store_writes import StoreWrites, raise_stored
from .text import counted_lines, held_text, within_limits

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterable, Iterator
    from typing import Optional

    from .backends.base import Writer
    from .records import Resource

__all__ = ["StoreStreams"]

# Once an output is being written, chunks smaller than this are joined and
# counted, kept and written this many bytes at a time: an output streamed as
# lines (a file object, ``proc.stdout``) paid the per-chunk work (line count,
# true end, quota step, write) once per line.  This is the only join: a backend's
# writer writes each piece as it is given.
_BATCH_BYTES = 64 << 10


def _joined(chunks: Iterable[BytesLike]) -> Iterator[memoryview]:
    """``chunks`` as views, those under ``_BATCH_BYTES`` joined into views of about that size
    (``write_stream``: the per-piece work, a line count and a write, once a block, not once a line).

    :raises TypeError: a chunk is not bytes-like.
    """
    batch = bytearray()
    for chunk in chunks:
        if type(chunk) is bytes and len(chunk) < _BATCH_BYTES:
            batch += chunk
        else:
            view = chunk_view(chunk)
            if len(view) >= _BATCH_BYTES:
                if batch:
                    yield memoryview(bytes(batch))
                    batch = bytearray()
                yield view
                continue
            with view:
                batch += view  # a copy: the caller may reuse its buffer
        if len(batch) >= _BATCH_BYTES:
            yield memoryview(bytes(batch))  # bytes: stable while written and checksummed
            batch = bytearray()
    if batch:
        yield memoryview(bytes(batch))


class StoreStreams(StoreWrites):
    """Storing outputs that arrive as byte chunks."""

    def write_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                     mime: str = "text/plain", name: Optional[str] = None) -> Resource:
        """Persist an output that arrives as byte chunks, holding one chunk at a time (and at most
        64 KiB of small ones, joined to be written together).

        :raises TypeError: a chunk is not bytes-like, or another argument is of the wrong type.
        :raises StorageError: the write failed; nothing was left visible.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        return self._write_pieces(session_id, tool_call_id, _joined(chunks), mime, name).resource

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
        :raises ResourceCorruptError: the stored bytes read back for the preview do not match
            their checksums (changed in place since they were written); nothing was left visible.
        """
        return self._truncate_stream(session_id, tool_call_id, chunks, max_lines=max_lines, max_bytes=max_bytes,
                                     mime=mime, name=name, refuse=False)

    def _truncate_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                         max_lines: Optional[int], max_bytes: Optional[int], mime: Optional[str],
                         name: Optional[str], refuse: bool) -> TruncateResult:
        """``truncate_stream``; with ``refuse``, an output over the limits that the quota cannot
        hold (not even its record, or running outputs hold the room) is the ``StorageError`` it is
        rather than the "output not stored" preview: for the front ends that report a storage
        failure as one (the bash tool, ``overspill run`` and ``truncate``), as a failed write is."""
        try:
            return self._cut_stream(session_id, tool_call_id, chunks, max_lines=max_lines, max_bytes=max_bytes,
                                    mime=mime, name=name, refuse=refuse)
        except OSError as error:
            # The modules only an output over the limits needs (the stored preview, its kernels)
            # are imported on its first one (start-up, issue 21): out of descriptors, that import
            # fails too, whether the output was stored or not.
            raise_stored(error)

    def _cut_stream(self, session_id: str, tool_call_id: str, chunks: Iterable[BytesLike], *,
                    max_lines: Optional[int], max_bytes: Optional[int], mime: Optional[str],
                    name: Optional[str], refuse: bool) -> TruncateResult:
        """``_truncate_stream``'s work; an OSError may leave it (see there)."""
        mime = "text/plain" if mime is None else mime
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        lines_limit = self._limits.max_lines if max_lines is None else whole_number(max_lines, "max_lines", 1)
        bytes_limit = self._limits.max_bytes if max_bytes is None else whole_number(max_bytes, "max_bytes", 1)
        spill = _Spill(self, lines_limit, bytes_limit, lambda: self._room(session_id, tool_call_id, mime, name))
        try:
            for chunk in chunks:
                spill.feed(chunk)
            spill.drain()
        except BaseException as error:
            spill.abort()
            raise_stored(error)
        lines = counted_lines(spill.newlines, spill.size, spill.last_newline)  # as a person counts them
        if spill.unstored:
            return self._unstored(bytes(spill.held), total=spill.size, lines=lines, lines_limit=lines_limit,
                                  bytes_limit=bytes_limit, reserve=spill.reserve, whole=False,
                                  count=spill.newlines + 1, kept_end=spill.true_tail.value(), refuse=refuse)
        if spill.writer is None:
            early = self._held_result(spill, lines, lines_limit, bytes_limit, refuse)
            if early is not None:
                return early
        size = spill.size
        try:
            record = self._publish(spill.writer, session_id, tool_call_id, mime, name, size, lines, spill.reserve)
        except HeldByRunning as held:
            # Running background outputs hold the quota: nothing stored, as for a quota too small
            # (the preview from the output's start and its true end, both kept in memory).
            return self._unstored(bytes(spill.first), total=size, lines=lines, lines_limit=lines_limit,
                                  bytes_limit=bytes_limit, reserve=spill.reserve, whole=False,
                                  count=spill.newlines + 1, kept_end=spill.true_tail.value(), why=held.strerror,
                                  refuse=refuse)
        count = spill.newlines + 1  # as the preview's line rule counts them
        from ._preview import stored_preview  # only a stored output's preview needs it

        try:
            shaped, signals = stored_preview(
                self._stored_bytes(record), uri=record.resource.uri, stored=record.resource.size, total=size,
                count=count, max_lines=lines_limit, max_bytes=bytes_limit, flags=self._views,
                signals=self._signals, kept_end=None if record.capture is None else spill.true_tail.value(),
                release=self._releaser(record), outline=self._limits.outline, tokens=self._tokens,
                runs=self._runs, mapped=self._mapped_bytes(record))
        except BaseException:
            # The preview is read back from the published payload; when that
            # fails the caller gets an error, so no resource may stay behind.
            self._discard(record.id)
            raise
        return self._truncated(record, shaped, signals, lines)

    def _held_result(self, spill: _Spill, lines: int, lines_limit: int, bytes_limit: int,
                     refuse: bool) -> Optional[TruncateResult]:
        """The result of an output held whole in memory: itself when it is shown
        within the limits, else None once a writer holds it (or its preview
        when not even a record can be stored; with ``refuse``, that StorageError)."""
        text = held_text(spill.held, self._views, bytes_limit, self._tokens)
        if text is not None:
            return TruncateResult(text, False, None)
        # Within the byte and line limits, over them as shown or over the token bound: stored
        # like any larger output.
        if spill.cap < 1:
            return self._unstored(bytes(spill.held), total=spill.size, lines=lines, lines_limit=lines_limit,
                                  bytes_limit=bytes_limit, reserve=spill.reserve, refuse=refuse)
        try:
            spill.start()
        except BaseException as error:
            spill.abort()
            raise_stored(error)
        return None


class _Spill:
    """An output arriving as chunks (``truncate_stream``): held while it is within
    the limits, then written, capped, through a writer; its true end kept in
    memory when the stored copy is capped."""

    def __init__(self, store: StoreWrites, lines_limit: int, bytes_limit: int,
                 room: Callable[[], tuple[int, int]]) -> None:
        self._store = store
        self._lines_limit = lines_limit
        self._bytes_limit = bytes_limit
        self._room = room
        self._measured: Optional[tuple[int, int]] = None
        # Over the limits with no room for even a record: nothing is stored; the
        # output's start stays in ``held`` (twice the preview's bytes) and its end in ``true_tail``.
        self.unstored = False
        self.held = bytearray()
        # Once written: the output's start (twice the preview's bytes), for the preview of an
        # output that running background outputs leave no room for (``HeldByRunning``).
        self.first = bytearray()
        self.newlines = 0
        self.size = 0
        self.last_newline = False
        self.true_tail = TrueTail()
        self.writer: Optional[Writer] = None
        # Small chunks fed once the writer is open, not yet counted nor written (``drain``).
        self._batch = bytearray()

    @property
    def cap(self) -> int:
        """The most bytes the stored copy holds (below 1: not even a record fits)."""
        return self._measure()[0]

    @property
    def reserve(self) -> int:
        """The bytes the record is counted for under the quota."""
        return self._measure()[1]

    def _measure(self) -> tuple[int, int]:
        # The room under the quota, worked out when first needed: an output
        # within the limits (most of them) never needs it, nor the record's
        # JSON form that measuring it builds.
        if self._measured is None:
            self._measured = self._room()
        return self._measured

    def feed(self, chunk: BytesLike) -> None:
        """Count ``chunk``; hold it while the output is within the limits, else write it (a
        small one joined to the next ones first: ``drain`` takes the rest once the output ends)."""
        if type(chunk) is bytes and self.writer is not None and len(chunk) < _BATCH_BYTES:
            # The common small chunk (a line), without a view: this is all it costs.
            self._batch += chunk
            if len(self._batch) >= _BATCH_BYTES:
                self.drain()
            return
        with chunk_view(chunk) as view:
            if not view:
                return
            if self.writer is not None:
                if len(view) < _BATCH_BYTES:
                    self._batch += view  # a copy: the caller may reuse its buffer
                    if len(self._batch) >= _BATCH_BYTES:
                        self.drain()
                    return
                self.drain()
            self._take(chunk, view)

    def drain(self) -> None:
        """Count and write the joined small chunks (the counts and the payload are whole after it)."""
        if self._batch:
            joined = bytes(self._batch)  # bytes: kept by reference in the true end, and stable
            self._batch = bytearray()
            self._take(joined, memoryview(joined))

    def _take(self, chunk: object, view: memoryview) -> None:
        """``feed``'s work for ``view`` (of ``chunk``), not empty."""
        self.newlines += _kernels.count_lines(view) - 1
        self.size += len(view)
        self.last_newline = view[-1] == 10
        if self.writer is None and not self.unstored and within_limits(
                self.newlines, self.size, self.last_newline, self._lines_limit, self._bytes_limit):
            self.held += view
            return
        if self.cap < 1:
            self._hold_start(view)
        elif self.writer is None:
            self.start()
        # (The true end is kept whatever the cap: a publish refused for running outputs shows it.)
        self.true_tail.feed(chunk if type(chunk) is bytes else bytes(view))
        if self.writer is not None:
            room = 2 * self._bytes_limit - len(self.first)
            if room > 0:
                self.first += view[:room]
            for piece in stable(view):
                self._store._write_capped(self.writer, piece, self.cap)

    def _hold_start(self, view: memoryview) -> None:
        """Unstored: keep the output's start for the preview's head (its end goes to ``true_tail``)."""
        if not self.unstored:
            self.unstored = True
            self.true_tail.feed(bytes(self.held))
        room = 2 * self._bytes_limit - len(self.held)
        if room > 0:
            self.held += view[:room]

    def start(self) -> None:
        """Open the writer and write what was held (a chunk being fed is counted but not yet held)."""
        self.writer = self._store._writer()
        self._store._write_capped(self.writer, memoryview(self.held), self.cap)
        self.true_tail.feed(bytes(self.held))
        self.first = self.held[: 2 * self._bytes_limit]
        self.held = bytearray()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()
