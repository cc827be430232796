"""The store's read side: pages, views, byte ranges and previews of what a session stored.

A mixin of ``ToolOutputStore`` (see ``overspill.store``): every read checks
the URI and the session, then asks the backend for verified bytes.
"""

from __future__ import annotations

from . import _kernels
from ._arguments import id_string, whole_number
from ._buffers import CR_RUN, ESCAPE_RUN, REDRAW_RUN, VIEW_ANSI, VIEW_CR
from ._store_types import PAGE_SLOTS, Page, TruncateResult
from ._views import ESCAPE_BLOCK, ESCAPE_REACH, Escapes, covering_far, covering_in
from .config import MAX_READ_BYTES
from .errors import AccessDeniedError
from .records import parse_uri
from .text import BOUNDARY_MARGIN, counted_lines, cut_character, omitted_marker, shown_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from typing import Optional

    from .backends.base import Backend, PageTexts
    from .config import Limits
    from .records import Record, Resource
    from .text import SignalPatterns

__all__ = ["StoreReads"]

# Bytes read around a page so that its character boundaries are decided
# exactly as over the whole payload.
_PAGE_MARGIN = BOUNDARY_MARGIN
# Bytes per range that ``iter_bytes`` verifies and yields (rounded to whole
# checksum chunks, so that no chunk is verified twice).
_STREAM_BYTES = 1 << 20
# How far a page read that moves its edges past escape sequences looks on either side of its window.
_WIDE_REACH = 4096
# The window in which the look for a newline past a page's escape sequences reads on.
_WALK_BYTES = 1 << 16
# The most payloads whose escape index (``_views.Escapes``) a store keeps.
_ESCAPE_INDEXES = 256


def _denied(record: Record) -> AccessDeniedError:
    """What a session is told of a resource another session wrote."""
    return AccessDeniedError(f"resource {record.resource.uri} not found in this session (another session wrote it)")


def _ending_line(page: bytes | memoryview, flags: int) -> str:
    """The text of a page whose payload goes on with a newline (``page`` ends with it, escape
    sequences between left out): the view of the page and that newline, less the newline, so a
    final \r is the line's ending, as in the view of the whole output (alone, it is a redraw)."""
    return shown_text(page, flags)[:-1]


def _ends_in_cr(page: memoryview) -> bool:
    """Whether the last byte of ``page`` outside escape sequences is a \r: only then does a
    newline after the page (``_newline_next``) change its view."""
    shown = _kernels.view_bytes(page, VIEW_ANSI)
    last = page[-1:] if shown is None else shown[-1:]
    return last == b"\r"


def _page_text(page: memoryview, flags: int, newline_next: bool) -> str:
    """The view of ``page``; ``newline_next``: the payload's view goes on with a newline
    (``_ending_line``, the escape sequences between left out)."""
    return _ending_line(page.tobytes() + b"\n", flags) if newline_next else shown_text(page, flags)


class _Ranges:
    """A resource's exact bytes for a scan that slices them a window at a time (grep), where
    the backend does not map the payload (Redis): each slice is read and verified as it is
    taken, so the client holds a window, never the whole payload (a whole view there is one
    read of every chunk joined: twice the payload at its peak).  ``len`` is the payload's size;
    a slice (step 1) is ``bytes``, clamped as a ``bytes`` slice is.

    :raises ResourceNotFoundError: (from a slice) the resource went meanwhile.
    :raises ResourceCorruptError: (from a slice) its bytes do not match their checksums.
    """

    __slots__ = ("_backend", "_record")

    def __init__(self, backend: Backend, record: Record) -> None:
        self._backend = backend
        self._record = record

    def __len__(self) -> int:
        return self._record.resource.size

    def __getitem__(self, window: slice) -> bytes:
        if not isinstance(window, slice):
            raise TypeError("a payload read by ranges is sliced, not indexed")
        start, stop, step = window.indices(self._record.resource.size)
        if step != 1:
            raise ValueError("a payload read by ranges is sliced with step 1")
        with self._backend.read(self._record, start, max(start, stop)) as view:
            return bytes(view)


class StoreReads:
    """Reading what a session stored: ``read`` (pages), ``read_bytes``, ``view``,
    ``iter_bytes``, ``status`` and ``preview``."""

    # Set by ToolOutputStore.__init__.
    _backend: Backend
    _pages: Optional[PageTexts]
    _views: int
    _runs: int
    _limits: Limits
    _signals: SignalPatterns
    _tokens: Optional[tuple[int, Callable[[str], int]]]
    # Per resource id: where the payload's ESC bytes are, for page edges inside a sequence longer
    # than a page's window (built only by pages that need it; stored bytes never change).
    _escapes: dict[str, Escapes]

    def _owned_record(self, session_id: str, resource_id: str) -> Record:
        record = self._backend.record(resource_id)
        if record.session_id != session_id:
            raise _denied(record)
        return record

    def view(self, session_id: str, uri: str, *, start: int = 0,
             end: Optional[int] = None) -> AbstractContextManager[tuple[Resource, memoryview]]:
        """The whole verified payload (or its bytes ``[start, end)``, clamped) as a
        read-only view, for scans such as grep.

        Every checksum chunk under it is verified before the view is given
        out; it is valid only inside the ``with`` block.

        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: its bytes do not match their checksums.
        """
        import contextlib  # here: a page read (``read --all``) never needs it (start-up)

        return contextlib.contextmanager(self._whole)(session_id, uri, start, end)

    def _whole(self, session_id: str, uri: str, start: int,
               end: Optional[int]) -> Iterator[tuple[Resource, memoryview]]:
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        record = self._owned_record(session_id, resource_id)
        size = record.resource.size
        low = min(max(whole_number(start, "start"), 0), size)
        high = size if end is None else min(max(whole_number(end, "end"), low), size)
        with self._backend.read(record, low, high) as whole:
            yield record.resource, whole

    def _scan(self, session_id: str, uri: str) -> AbstractContextManager[tuple[Resource, memoryview | _Ranges]]:
        """``view`` of the whole payload, for a scan that slices it a window at a time
        (grep's ``ResourceListing``): the view itself where the backend maps the payload
        (the local folder: a slice copies nothing, and the map serves the scan to its end),
        else ``_Ranges``, whose slices are read and verified one at a time (Redis).  A
        running output's is always the view (its sealed prefix, as ``view`` gives it).

        :raises: as ``view``.
        """
        import contextlib  # as in ``view``: a page read never needs it (start-up)

        if self._pages is None:
            resource_id = parse_uri(uri)
            id_string(session_id, "session_id")
            record = self._owned_record(session_id, resource_id)
            if record.state != "running":
                return contextlib.nullcontext((record.resource, _Ranges(self._backend, record)))
        return self.view(session_id, uri)

    def iter_bytes(self, session_id: str, uri: str) -> Iterator[memoryview]:
        """The exact stored bytes, in order, one verified range at a time.

        Each range (about 1 MiB, whole checksum chunks) is copied out and that
        copy verified just before it is yielded (so its bytes are the ones
        checked, whatever happens to the file meanwhile), so a consumer that
        stops early (``read --all | head``) pays only for what it took, and
        memory stays flat whatever the size.

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
            # Bytes of their own, the ones verified (``Backend.read_copy``): a view of the shared map
            # would be written out after its check, showing a byte changed in place meanwhile.
            yield memoryview(self._backend.read_copy(record, start, min(start + step, size)))

    def read(self, session_id: str, uri: str, *, offset: int = 0, limit: Optional[int] = None) -> Page:
        """A page of a resource that this session wrote.

        :param uri: ``tool-output://ID``.
        :param offset: a byte offset into the stored bytes, clamped to
            ``[0, size]``; a mid-character offset starts at the next character,
            and one inside an escape sequence that the view removes, after it.
        :param limit: the most bytes in the page, clamped to ``[1, MAX_READ_BYTES]``
            (the default); a page holds at least one character (escape sequences
            that the view removes and \\r redraws that it collapses are not counted:
            the limit counts from where the page's text starts; a \\r that ends a
            line is text), unless only sequences and redraws are left before the end.
        :raises InvalidResourceError: ``uri`` is not a well-formed URI.
        :raises TypeError: ``offset`` or ``limit`` is not an int (a bool is not).
        :raises AccessDeniedError: another session wrote the resource.
        :raises ResourceNotFoundError: it does not exist or its files are broken.
        :raises ResourceCorruptError: its bytes do not match their checksums.
        """
        resource_id = parse_uri(uri)
        # The usual call (a str, ints) is checked inline: a warm page is a few
        # microseconds of Python around one kernel call, and a call costs ~0.1 each.
        if type(session_id) is not str or not session_id:
            id_string(session_id, "session_id")
        if type(offset) is not int:
            offset = whole_number(offset, "offset")  # clamped below, as the reference store does
        if limit is None:
            limit = MAX_READ_BYTES
        elif type(limit) is not int:
            limit = whole_number(limit, "limit")
        record = self._backend.record(resource_id)
        if record.session_id != session_id:
            raise _denied(record)
        size = record.resource.size
        offset = 0 if offset < 0 else size if offset > size else offset
        limit = 1 if limit < 1 else MAX_READ_BYTES if limit > MAX_READ_BYTES else limit
        # The page's boundaries depend on a few bytes either side of it, so a
        # window with a margin decides them exactly as the whole payload would.
        # When escapes are removed it is wider: room to see an escape sequence
        # that a page edge would split.
        flags = self._views
        reach = 0
        if flags & VIEW_ANSI:
            before, after = ESCAPE_REACH, _PAGE_MARGIN + ESCAPE_REACH
            reach = ESCAPE_REACH
        else:
            before = after = _PAGE_MARGIN
        low = offset - before if offset > before else 0
        high = offset + limit + after
        if high > size:
            high = size
        final = high == size
        resource = record.resource
        if final and record.state == "running":
            # A running command's sealed end may cut a character in two, or an escape sequence that
            # the view removes (``_cut_end``): the page stops before its first bytes, and names their
            # offset to read on from (a page that ended with them would show U+FFFD, and the next
            # page would start inside the character, or show the sequence's rest as text).  The page
            # states that end as the size so far, as ``preview`` does: a page ending there is the
            # last one for now (not "more bytes" that a read there could never serve).  An offset
            # inside those bytes starts past them, as any mid-character offset starts at the next
            # character: an empty page at the sealed end (offsets never go back).  A lost command's
            # end is final: a character cut there stays cut, and is shown as such.
            cut = self._cut_end(resource_id, record, size)
            if cut and offset <= size - cut:
                from ._frozen import replace  # only a sealed end inside a character needs it

                size = high = size - cut
                resource = replace(resource, size=size)
                low = low if low < high else high
            elif cut:
                final = False  # (the page's bounds move a start inside the character to the sealed end)
        pages = self._pages
        found = None
        if pages is not None and low < high:
            if reach:
                escapes = self._escapes.get(resource_id)
                if escapes is not None and escapes.quiet(low, high):
                    reach = 0  # no sequence in the window, nor over its edges: none to look for
            # The common case in one kernel call: verify, bounds and text (None: no warm map).
            found = pages.page_text(resource_id, record, low, high, offset, limit, flags, reach)
        if found is not None and found[2] is not None:
            start, end, content = found
        else:
            start, end, content = self._page_view(resource_id, record, low, high, offset, limit, final)
        if not content and flags:
            # A page holds at least one character, its limit counted from where its text starts (its
            # window, and a running output's sealed end, decided anew from there), and its next offset
            # is past it.  The offset is inside an escape sequence, which shows nothing: the page is
            # the one read where it ends (``start``, past ``offset``, so this ends).
            if content is None:
                return self.read(session_id, uri, offset=start, limit=limit)
            # The page's bytes are escape sequences only, or (the cr view) \r redraws, with sequences
            # between under the ansi view: it goes on to the text after them (a \r that ends a line
            # is text), as the page read there (which starts on a character the view shows, so this
            # ends); sequences and redraws up to the end make the last page, empty.  (Without either
            # view a page that shows nothing is empty: ``start == end``.)
            if start < end:
                text = self._text_start(resource_id, record, start, min(end + _WIDE_REACH, size), flags)
                if text >= size:
                    end = size
                elif text >= end:
                    page = self.read(session_id, uri, offset=text, limit=limit)
                    return _kernels.new_slotted(Page, PAGE_SLOTS, (page.resource, page.content, start, page.truncated,
                                                                    page.next, page.complete))
        more = end < size
        # Page(...) without its __init__'s six bound setters (~1 us of a ~20 us warm page).
        return _kernels.new_slotted(Page, PAGE_SLOTS, (resource, content, start, more,
                                                        end if more else None, record.complete))

    def _page_view(self, resource_id: str, record: Record, low: int, high: int, offset: int, limit: int,
                   final: bool) -> tuple[int, int, Optional[str]]:
        """A page read through a verified view of ``[low, high)``: ``(start, end, text)``;
        ``final``: ``high`` ends a character (the payload's end, or a running one's whole characters).
        When the view removes escapes and ``offset`` is inside an escape sequence: ``(its end, its
        end, None)``, for the caller to read the page from there (the limit counts from where the
        page starts, and the window around ``offset`` may not reach past that start)."""
        flags = self._views
        # The page's window as bytes of its own (``Backend.read_copy``): its bounds and text are of
        # the bytes verified, never of a map changed in place after the check.
        if not flags & VIEW_ANSI:
            with memoryview(self._backend.read_copy(record, low, high)) as view:
                if not view:
                    return low, low, ""
                start, end = _kernels.page_bounds(view, offset - low, limit, final)
                if flags & VIEW_CR and end < len(view) and view[end] == 0x0A:
                    return start + low, end + low, _ending_line(view[start : end + 1], flags)
                return start + low, end + low, shown_text(view[start:end], flags)
        if low == high:
            with self._backend.read(record, low, high):  # (no bytes, but the backend tells if it is gone)
                return low, low, ""
        # Each page's view is of its bytes alone: a page never starts or ends inside an escape
        # sequence (it would show a piece of it, such as "[1;31m").  A start inside one moves past it
        # (it shows nothing), and the caller reads the page from there; an end inside one moves to its
        # end.  The edges are found in a window wider than the page's on both sides: most long
        # sequences (an OSC 8 link's signed URL) end in it.
        size = record.resource.size
        wide_low, wide_high = max(low - _WIDE_REACH, 0), min(high + _WIDE_REACH, size)
        with memoryview(self._backend.read_copy(record, wide_low, wide_high)) as wide:
            start, end = _kernels.page_bounds(wide[low - wide_low : high - wide_low], offset - low, limit, final)
            moved = self._sequence_end(resource_id, record, wide, wide_low, wide_high, start + low)
            if moved != start + low:
                return moved, moved, None
            start += low
            end = self._sequence_end(resource_id, record, wide, wide_low, wide_high, end + low)
            if end <= wide_high:
                page = wide[start - wide_low : end - wide_low]
                ending = flags & VIEW_CR and _ends_in_cr(page) and self._newline_next(
                    resource_id, record, wide, wide_low, wide_high, end)
                return start, end, _page_text(page, flags, ending)
        # The end moved past the window: the end of a sequence longer than its margin.
        with memoryview(self._backend.read_copy(record, start, end)) as view:
            ending = flags & VIEW_CR and _ends_in_cr(view) and self._newline_next(
                resource_id, record, view, start, end, end)
            return start, end, _page_text(view, flags, ending)

    def _newline_next(self, resource_id: str, record: Record, view: memoryview, low: int, high: int,
                      position: int) -> bool:
        """Whether the view's next byte after a page ending at ``position`` is a newline: the
        bytes from there (``view`` holds ``[low, high)``) are escape sequences, which the view
        removes, then a newline.  A \r ending the page is then that line's ending (``page_text``)."""
        return self._after_escapes(resource_id, record, view, low, high, position)[1] == 0x0A

    def _text_start(self, resource_id: str, record: Record, position: int, high: int, flags: int) -> int:
        """The first payload position from ``position`` (outside escape sequences) that the view
        (``flags``) shows something of: past escape sequences (the ansi view) and \\r redraws (the
        cr view; a \\r that ends a line is shown, ``_after_escapes``); the payload's size when they
        run to its end.  The bytes up to ``high`` are read first, then more as they go on."""
        with self._backend.read(record, position, high) as view:
            return self._after_escapes(resource_id, record, view, position, high, position, flags)[0]

    def _after_escapes(self, resource_id: str, record: Record, view: memoryview, low: int, high: int,
                       position: int, flags: int = VIEW_ANSI) -> tuple[int, int]:
        """``_past_escapes``, read on past the window (``view`` holds ``[low, high)``) as long as
        the sequences (and, under the cr view, the \\r redraws) go on: the byte is -1 only at the
        payload's end.  Under the cr view a \\r whose next byte (past sequences, under the ansi
        view) is a newline ends that line, which the view keeps: the position is that \\r's, the
        byte 0x0D."""
        size = record.resource.size
        position, byte, redraw = self._past_escapes(resource_id, record, view, low, high, position, flags, -1)
        while byte < 0 and position < size:  # the sequences run past the window: read on from there
            low, high = position, min(position + _WALK_BYTES, size)
            with self._backend.read(record, low, high) as view:
                position, byte, redraw = self._past_escapes(resource_id, record, view, low, high, position, flags,
                                                            redraw)
        return position, byte

    def _past_escapes(self, resource_id: str, record: Record, view: memoryview, low: int, high: int,
                      position: int, flags: int, redraw: int) -> tuple[int, int, int]:
        """The first payload position from ``position`` outside escape sequences (the ansi view;
        under the cr view, not a \\r either), and its byte; the byte is -1 when the window (``view``
        holds ``[low, high)``) ends first.  ``redraw``: the last \\r passed (-1: none), returned as
        it stands for the walk to go on with in the next window: a newline next makes that \\r the
        line's ending, and the position returned."""
        size = record.resource.size
        redraws = flags & VIEW_CR
        escapes = flags & VIEW_ANSI
        while low <= position < high:
            byte = view[position - low]
            if not (byte == 0x0D and redraws or byte == 0x1B and escapes):
                if byte == 0x0A and redraw >= 0:
                    return redraw, 0x0D, redraw
                return position, byte, redraw
            if byte == 0x0D:
                # A redraw unless a newline comes next: known only further on.  A run of them in one
                # match (a bar redrawn without text between can leave megabytes).
                position = CR_RUN.match(view, position - low, high - low).end() + low
                redraw = position - 1
                continue
            # Past the run of sequences (and, under the cr view, redraws) from here, in one match (one
            # ESC alone is a sequence of its own): a run's sequences whose ends are inside the window
            # are whole, as the view reads them; its last \r is a redraw unless a newline comes next.
            run = (REDRAW_RUN if redraws else ESCAPE_RUN).match(view, position - low)
            if redraws and run.start(2) >= 0:
                redraw = run.start(2) + low
            if redraws and run.lastindex == 2 or run.end() < high - low - 1 or high == size:
                position = run.end() + low
                continue
            # The run's last sequence reaches the window's end, and may go on past it.
            position = run.start(1) + low
            position = max(self._sequence_end(resource_id, record, view, low, high, position + 1), position + 1)
        return position, -1, redraw

    def _sequence_end(self, resource_id: str, record: Record, view: memoryview, low: int, high: int,
                      position: int) -> int:
        """``position`` (in the payload; ``view`` holds its bytes ``[low, high)``), moved to the end
        of an escape sequence that covers it; else ``position``."""
        return self._sequence(resource_id, record, view, low, high, position)[1]

    def _sequence(self, resource_id: str, record: Record, view: memoryview, low: int, high: int,
                  position: int) -> tuple[int, int]:
        """The escape sequence that covers ``position`` (in the payload; ``view`` holds its bytes
        ``[low, high)``) as ``(start, end)``; ``(position, position)`` when none does (``covering_in``)."""
        size = record.resource.size
        found = covering_in(view, position - low, low == 0, high == size)
        if found is not None:
            return found[0] + low, found[1] + low
        # The sequence may start before the window (an OSC string longer than its margin) or end past it.
        escapes = self._escapes.get(resource_id)
        if escapes is not None and position <= escapes.clean:
            return position, position  # no ESC before it
        # The payload's escape index finds the sequence's ESC however far back, after one scan of the
        # bytes before the window's block end, made once for all pages (a page whose window no sequence
        # reaches then skips the look-back: ``read``'s fast path).
        backend = self._backend

        def read(start: int, end: int) -> AbstractContextManager[memoryview]:
            return backend.read(record, start, end)

        if escapes is None:
            escapes = Escapes.empty()
        wanted = min(size, -(-high // ESCAPE_BLOCK) * ESCAPE_BLOCK)
        if escapes.indexed < wanted:
            escapes = escapes.extended(read, wanted, size)
            if len(self._escapes) >= _ESCAPE_INDEXES:
                self._escapes.clear()
            self._escapes[resource_id] = escapes
        return covering_far(read, escapes, position, size)

    def _cut_end(self, resource_id: str, record: Record, size: int) -> int:
        """How many bytes at the end of a running output's first ``size`` bytes (its sealed prefix,
        which the next bytes may go on from) start something not whole there: a character
        (``text.cut_character``) or, when the view removes escapes, an escape sequence the next
        bytes may go on with.  0 when none does.  This is the one rule for where a running output's
        pages, previews and ``wait`` stop: an end (and the offset named to read on from) inside a
        sequence would show its rest as text ("1mFAILED") once the rest arrives.

        A sequence may go on when its match reaches the end (the views' rule, ``covering_in``: with
        the bytes after, the match may be longer), or an ESC is the last byte: it starts one, or ends
        the OSC string before it (an ST is two bytes), which then may go on too.
        """
        if size == 0:
            return 0
        low = max(size - ESCAPE_REACH, 0)
        with self._backend.read(record, low, size) as window:
            end = size - cut_character(window)
            if not self._views & VIEW_ANSI or end == 0:
                return size - end
            if window[end - 1 - low] == 0x1B:
                end -= 1
            if end > low:
                start, stop = self._sequence(resource_id, record, window[: end - low], low, end, end - 1)
                if stop >= end:
                    end = start
        return size - end

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
        data = self._backend.read_copy(record, start, end)  # the bytes verified, not the map's of later
        return record.resource, data, start, (end if end < size else None)

    def status(self, session_id: str, uri: str) -> Record:
        """The record of a resource this session wrote; for a background command's
        output, its ``state`` (running, exited, lost), exit code and sealed size.

        :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError: as ``read``.
        """
        resource_id = parse_uri(uri)
        id_string(session_id, "session_id")
        # A backend that caches records (Redis) serves a read's from memory, as the read of
        # the bytes then finds a removed resource gone; status reads no bytes, so it asks
        # for a record confirmed to be there still (one EXISTS when it was cached).
        current = getattr(self._backend, "current_record", None)
        if current is None:
            return self._owned_record(session_id, resource_id)
        record = current(resource_id)
        if record.session_id != session_id:
            raise _denied(record)
        return record

    def preview(self, session_id: str, uri: str, *, offset: int = 0, max_lines: Optional[int] = None,
                max_bytes: Optional[int] = None, kept_end: Optional[bytes] = None,
                end: Optional[int] = None) -> TruncateResult:
        """The head+tail preview of a resource's bytes from ``offset`` to its (sealed) end.

        Under the limits ``content`` is all of them; over, a marker names the
        byte offset where the omitted part starts.  ``next_offset`` is where
        to read on from: that offset, or the end when nothing was omitted.
        Nothing is written.

        :param offset: clamped to ``[0, size]``.
        :param kept_end: the output's true end when its stored copy was capped:
            from any offset, the preview shows the stored bytes from there, then
            that end (the marker says which bytes between were not kept).
        :param end: preview as if the resource ended there (clamped to
            ``[offset, size]``; the returned resource then has that size).  A
            running resource's sealed size grows between two looks at it: a
            caller that states the size of a record it looked at first passes
            that size, so it never shows bytes past what it states.
        :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError,
            ResourceCorruptError: as ``read``.
        """
        record = self.status(session_id, uri)
        offset = whole_number(offset, "offset")
        lines_limit = self._limits.max_lines if max_lines is None else whole_number(max_lines, "max_lines", 1)
        bytes_limit = self._limits.max_bytes if max_bytes is None else whole_number(max_bytes, "max_bytes", 1)
        size = record.resource.size
        start = min(max(offset, 0), size)
        resource = record.resource
        bound = size if end is None else max(whole_number(end, "end"), start)
        if record.state == "running" and bound > start:
            # A running command's sealed end may cut a character or an escape sequence in two: the
            # preview stops before it (its next offset is then where it starts, not inside it).
            bound = min(bound, size) - self._cut_end(record.id, record, min(bound, size))
        if bound < size:
            from ._frozen import replace  # only a bounded preview of a grown resource needs it

            # Reads still go through the record as stored (a backend checks its payload
            # against it); only the bytes previewed and the size stated stop at ``end``.
            size = max(bound, start)
            resource = replace(resource, size=size)
            kept_end = None  # the true end follows the whole output, not this prefix of it
        backend = self._backend
        newlines = 0
        last_newline = False
        for low in range(start, size, _STREAM_BYTES):
            with backend.read(record, low, min(low + _STREAM_BYTES, size)) as view:
                newlines += _kernels.count_lines(view) - 1
                last_newline = view[-1] == 10
        # The output's size when the stored copy holds only its start (past max_stored_bytes).
        output = record.capture[0] if record.capture is not None and record.capture[0] > size else None
        # From any offset: the stored bytes from there, then the true end (a wait from an offset
        # shows the new bytes and how the command ended).
        capped = output is not None and kept_end is not None
        # A capped output whose true end this caller does not hold (its answer is built by another
        # process than the one that ran it): its head is the stored copy's, and it is said to be the
        # first bytes of a larger output whose end was not kept (the stored copy's end is not it).
        endless = start == 0 and output is not None and kept_end is None and size == record.resource.size
        total = output - start if capped or endless else size - start  # type: ignore[operator]
        lines = counted_lines(newlines, size - start, last_newline)
        count = newlines + 1
        if (capped or endless) and record.lines is not None:
            # The output's lines, not the stored copy's: the marker says so many "in all", and a capped
            # cut's filler stands for the lines not kept (from an offset, an upper bound of them).
            lines = record.lines
            if capped:  # (an endless preview is cut from the stored copy alone: its count is the copy's)
                count = lines + 1 if kept_end.endswith(b"\n") else lines  # type: ignore[union-attr]
        from ._preview import compose, stored_preview  # only previews need it (reads do not)

        # The bytes shown are copied out and then checked (``Backend.read_copy``); a view of the map
        # only finds the cuts of a long region's view (``stored_preview``'s ``mapped``).
        shaped, signals = stored_preview(
            lambda low, high: memoryview(backend.read_copy(record, start + low, start + high)), uri=resource.uri,
            stored=size - start, total=total, count=count, max_lines=lines_limit, max_bytes=bytes_limit,
            # Signal lines and the outline name offsets of the range: only from 0 are they the output's.
            flags=self._views, signals=self._signals if start == 0 else (), outline=start == 0 and self._limits.outline,
            kept_end=kept_end if capped else None, tokens=self._tokens, runs=self._runs,
            mapped=lambda low, high: backend.read(record, start + low, start + high))
        if endless:
            from ._frozen import replace

            cut = shaped.head_end if shaped.truncated else size
            content = compose(replace(shaped, tail="", truncated=True, head_end=cut), signals, resource.uri, size,
                              # ("holds only the first"; all of the copy in the head: the rest was not kept)
                              lines, total, end_kept=cut >= size)
            return TruncateResult(content, True, resource, lines, cut)
        if not shaped.truncated:
            return TruncateResult(shaped.head, False, resource, lines, size)
        if start == 0:
            content = compose(shaped, signals, resource.uri, size, lines, total if capped else None)
        else:
            resume = start + shaped.head_end
            tail_start = start + shaped.tail_start  # an offset in the output (past the stored copy: in the kept end)
            marker = omitted_marker(resource.uri, resume, tail_start, size, output if capped else None)
            content = f"{shaped.head}\n\n{marker}" if shaped.head else marker  # (none new stored: the kept end)
            if signals:
                content += "\n" + "\n".join(signals)
            if shaped.tail:
                content += f"\n\n{shaped.tail}"
        return TruncateResult(content, True, resource, lines, start + shaped.head_end)
