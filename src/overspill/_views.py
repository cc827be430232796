"""The preview of what the model is shown of stored bytes (their view: ANSI
escapes removed, redraws collapsed), with its limits counted as shown.

``text`` says what a view is (``view_flags``, ``shown_text``); this module
cuts head+tail previews of views for the store's ``truncate`` and ``preview``
and keeps a cut (or a page's edge) from splitting an escape sequence.  The
cuts are offsets in the stored bytes, which the views never change.
"""

from __future__ import annotations

import sys

from . import _kernels
from ._buffers import ESCAPE as ESCAPE_SEQUENCE
from ._buffers import TOKEN_ENDS, VIEW_ANSI, VIEW_CR, BytesLike, byte_view
from .text import Preview, preview_from_cuts, shown_size, shown_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from array import array
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from typing import Optional

    Reader = Callable[[int, int], AbstractContextManager[memoryview]]  # a payload's bytes [start, end), verified

__all__ = ["ESCAPE_REACH", "Escapes", "covering_far", "covering_in", "final_state", "head_window",
           "head_within", "view_preview"]

# How far back from a page's edge a read looks for an escape sequence covering it (its window's margin),
# and the first step of _last_of's look-back (a preview's cut looks back as far as the sequence takes).
ESCAPE_REACH = 512


def _viewed(data: BytesLike, flags: int) -> bytes:
    shown = _kernels.view_bytes(data, flags) if flags else None
    return bytes(data) if shown is None else shown


# How far past a preview's byte limit the look for the end of the line its head may cut into reads
# (``head_window``): a line longer than this is not read whole on every preview for a \r that would
# redraw it; the head then ends at the line's start, as when its final state is not found.
HEAD_LINE_REACH = 16 << 20


def _head_line(read: Callable[[int, int], bytes], max_bytes: int, size: int) -> tuple[int, int, bool]:
    """The line that a head within ``max_bytes`` may end inside, in data of
    ``size`` bytes (``read(start, end)`` gives its bytes ``[start, end)``):
    the one holding the byte before ``max_bytes``.  Returns ``(start,
    newline, redrawn)``: ``newline`` is the offset of the newline that ends
    it, ``size`` when the data ends first, -1 when none comes within
    ``HEAD_LINE_REACH`` bytes (bytes.find: memory speed, a window at a time);
    ``redrawn``, whether a \r with a byte other than the newline after it
    was seen in the bytes of the line looked at (asked only of a line whose
    end was not found)."""
    low = min(max_bytes - 1, size)
    before = read(0, low)
    start = before.rfind(b"\n") + 1
    # A \r right before the newline ends the line (CRLF): no redraw.  The last byte looked at has
    # no byte after it yet (the data's last may be half of a CRLF whose \n was not kept): its \r
    # counts only once a byte other than the newline follows it.
    redrawn = before.find(b"\r", start, max(start, low - 1)) >= 0
    pending = low > start and before.endswith(b"\r")
    limit = min(size, low + HEAD_LINE_REACH)
    reach = ESCAPE_REACH
    while low < limit:
        high = min(limit, low + reach)
        window = read(low, high)
        found = window.find(b"\n")
        if found >= 0:
            return start, low + found, redrawn or (pending and found > 0) or b"\r" in window[: max(0, found - 1)]
        redrawn = redrawn or pending or b"\r" in window[:-1]
        pending = window.endswith(b"\r")
        low, reach = high, min(reach * 4, _SCAN_BYTES)
    return start, (size if limit == size else -1), redrawn


def head_window(read: Callable[[int, int], bytes], size: int, max_bytes: int, flags: int,
                reach: int, *, held_to_end: bool = True) -> tuple[int, int]:
    """The window of data of ``size`` bytes (``read(start, end)`` gives its
    bytes ``[start, end)``) whose view decides the head of a preview within
    ``max_bytes``: ``(end, unknown)``, the window ``[0, end)`` and -1, or
    ``reach`` and the start of the line the head may end inside when that
    line's end is not known and a \r was seen on it: its final state is not
    known, and the head shows nothing of it (``head_within``).  A line's end
    is not known past ``HEAD_LINE_REACH``, nor past the data when it is only
    the start of an output (not ``held_to_end``: a capture's or a capped
    copy's, the bytes after it dropped), whose last redraw there may be a
    state cut short.  A line with no \r in the bytes looked at (a minified
    document, a one-line log) is no progress bar: its head is a byte cut of
    its start, as the window ``reach`` gives it.

    With ``VIEW_CR`` the head shows a line's final state (what follows its
    last \r redraw): a \r anywhere on to the line's newline can redraw what a
    byte cut would show, so the window reaches that newline (at least
    ``reach``); without it, the window is ``reach``.
    """
    if not flags & VIEW_CR:
        return reach, -1
    start, newline, redrawn = _head_line(read, max_bytes, size)
    if newline < 0 or (newline == size and not held_to_end):
        return reach, (start if redrawn else -1)
    if not redrawn:
        return reach, -1  # no \r on the line past the window's start: a byte cut shows its state
    return max(reach, newline + 1), -1  # with the newline: a \r before it is a line ending, not a redraw


def head_within(found: Preview, start: int) -> Preview:
    """``found`` with a head that shows nothing of the line that starts at
    ``start`` (-1: none), one whose final state is not known
    (``head_window``): the head ends at that line's start."""
    if start < 0 or not found.truncated or found.head_end <= start:
        return found
    return Preview(found.head[: found.head.rfind("\n") + 1], found.tail, True, start, found.tail_start)


def _is_clean(view: memoryview, max_bytes: int, flags: int, head: int,
              release: Optional[Callable[[int, int], None]] = None) -> bool:
    """Whether the parts of ``view`` a preview can show are their own view: ``view[:head]``
    (``head_window``) and the tail's window (the look back for an escape sequence under
    way gives each window back with ``release``)."""
    size = len(view)
    reach = max_bytes + 2
    if size <= 2 * reach or head >= size - reach:
        return _kernels.view_bytes(view, flags) is None
    # The tail's window is no piece of a sequence that starts before it (an OSC string, such as an inline
    # image's base64, can be longer than the window).
    if _kernels.view_bytes(view[:head], flags) is not None or _kernels.view_bytes(view[size - reach :], flags) is not None:
        return False
    if not flags & VIEW_ANSI:
        return True
    # No ESC on the line before the window: no sequence is under way (the look back of
    # _past_escape, first made here a window at a time, given back as read).
    if release is not None and _last_of(view, 0, size - reach, b"\x1b\n", release) < 0:
        return True
    return not _past_escape(view, 0, size - reach) > size - reach


def _view_forward(view: memoryview, end: int, want: int, flags: int,
                  release: Optional[Callable[[int, int], None]] = None) -> tuple[bytes, int, Optional[bytes]]:
    """The view of ``view[:stop]`` for the least line-aligned ``stop <= end``
    whose view exceeds ``want`` bytes (or ``stop == end``): (view, stop, raw).
    Past ``_REGION_BYTES`` (``_view_forward_far``) raw is None and the view
    only its first ``want + _CAP_MARGIN`` bytes."""
    stop = min(end, want + 1)
    while True:
        if stop > _REGION_BYTES:
            return _view_forward_far(view, end, want, flags, stop, release)
        raw = view[:stop].tobytes()
        line_stop = stop
        if stop < end:
            newline = raw.rfind(b"\n")
            if newline >= 0:
                line_stop = newline + 1
                raw = raw[:line_stop]
        shown = _viewed(raw, flags)
        if len(shown) > want or line_stop == end:
            return shown, line_stop, raw
        stop = min(end, stop * 4)


def _view_backward(view: memoryview, begin_limit: int, want: int, flags: int,
                   release: Optional[Callable[[int, int], None]] = None) -> tuple[bytes, int, Optional[bytes]]:
    """The view of ``view[begin:]`` for the greatest line-aligned ``begin >=
    begin_limit`` whose view exceeds ``want`` bytes: (view, begin, raw).
    Past ``_REGION_BYTES`` (``_view_backward_far``) raw is None and the view
    only its last ``want + _CAP_MARGIN`` bytes."""
    size = len(view)
    begin = max(begin_limit, size - want - 1)
    while True:
        if size - begin > _REGION_BYTES:
            return _view_backward_far(view, begin_limit, want, flags, begin, release)
        line_begin = begin
        if begin > begin_limit:
            probe = view[begin - 1 :].tobytes()
            newline = probe.find(b"\n")
            if 0 <= newline < len(probe) - 1:
                line_begin = begin + newline
            elif flags & VIEW_ANSI:
                line_begin = _past_escape(view, begin_limit, begin)  # mid-line: never inside a sequence
        raw = view[line_begin:].tobytes()
        shown = _viewed(raw, flags)
        if len(shown) > want or line_begin == begin_limit:
            return shown, line_begin, raw
        begin = max(begin_limit, size - 4 * (size - begin))


# Past this many stored bytes, _view_forward and _view_backward view their region a piece at a time
# (_region_view) and keep only the view's ends: a line redrawn with \r, or a run of escapes, can be
# any length and its view a few bytes, so the region's bytes and view were held whole (200 MB of
# progress\r on one line: 200 MB of memory, 1.6 GB in the pure twin). The margin kept past a
# side's budget lets the cut find its character boundary as it would in the whole view.
_REGION_BYTES = 4 << 20
_PIECE_BYTES = 1 << 20
_CAP_MARGIN = 64


def _view_forward_far(view: memoryview, end: int, want: int, flags: int, stop: int,
                      release: Optional[Callable[[int, int], None]]) -> tuple[bytes, int, None]:
    """``_view_forward``'s loop from ``stop`` on, each region viewed in pieces: the same
    ``stop``, and the first ``want + _CAP_MARGIN`` bytes of the same view (all of it when shorter)."""
    cap = want + _CAP_MARGIN
    while True:
        line_stop = stop
        if stop < end:
            newline = _last_newline(view, 0, stop, release)
            if newline >= 0:
                line_stop = newline + 1
        shown = _region_view(view, 0, line_stop, flags, cap, release)
        if shown.length > want or line_stop == end:
            return shown.first, line_stop, None
        stop = min(end, stop * 4)


def _view_backward_far(view: memoryview, begin_limit: int, want: int, flags: int, begin: int,
                       release: Optional[Callable[[int, int], None]]) -> tuple[bytes, int, None]:
    """``_view_backward``'s loop from ``begin`` on, each region viewed in pieces: the same
    ``begin``, and the last ``want + _CAP_MARGIN`` bytes of the same view (all of it when shorter)."""
    size = len(view)
    cap = want + _CAP_MARGIN
    while True:
        line_begin = begin
        if begin > begin_limit:
            newline = _find_newline(view, begin - 1, size, release)
            if 0 <= newline < size - 1:
                line_begin = newline + 1
            elif flags & VIEW_ANSI:
                line_begin = _past_escape(view, begin_limit, begin)  # mid-line: never inside a sequence
        shown = _region_view(view, line_begin, size, flags, cap, release)
        if shown.length > want or line_begin == begin_limit:
            return shown.last, line_begin, None
        begin = max(begin_limit, size - 4 * (size - begin))


class _Ends:
    """The first and last ``cap`` bytes and the length of bytes appended a piece at a time."""

    __slots__ = ("cap", "first", "last", "length")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.first = b""
        self.last = b""
        self.length = 0

    def add(self, piece: bytes) -> None:
        if not piece:
            return
        cap = self.cap
        if len(self.first) < cap:
            self.first += piece[: cap - len(self.first)]
        self.last = (self.last + piece[-cap:])[-cap:]
        self.length += len(piece)

    def add_ends(self, other: _Ends) -> None:
        """Append what ``other`` stands for (its middle is not needed: only the ends are kept)."""
        if other.length <= self.cap:
            self.add(other.first)  # all of it
            return
        if len(self.first) < self.cap:
            self.first += other.first[: self.cap - len(self.first)]
        self.last = other.last
        self.length += other.length


def _find_newline(view: memoryview, low: int, high: int,
                  release: Optional[Callable[[int, int], None]] = None) -> int:
    """The first newline in ``view[low:high]`` (an offset in ``view``), or -1; read a window at a
    time (each given back with ``release``)."""
    while low < high:
        top = min(high, low + _PIECE_BYTES)
        found = view[low:top].tobytes().find(b"\n")
        if release is not None:
            release(low, top)
        if found >= 0:
            return low + found
        low = top
    return -1


def _last_newline(view: memoryview, low: int, high: int,
                  release: Optional[Callable[[int, int], None]] = None) -> int:
    """The last newline in ``view[low:high]`` (an offset in ``view``), or -1; read back a window at
    a time (each given back with ``release``)."""
    while high > low:
        bottom = max(low, high - _PIECE_BYTES)
        found = view[bottom:high].tobytes().rfind(b"\n")
        if release is not None:
            release(bottom, high)
        if found >= 0:
            return bottom + found
        high = bottom
    return -1


def _nth_line_start(view: memoryview, low: int, count: int) -> int:
    """Where the line after the ``count``-th newline from ``low`` starts (``low`` for 0)."""
    position = low
    for _ in range(count):
        position = _find_newline(view, position, len(view)) + 1
    return position


def _line_start_from_end(view: memoryview, low: int, after: int) -> int:
    """Where the line of ``view[low:]`` followed by ``after`` newlines starts (``low`` when it is the first)."""
    high, wanted = len(view), after + 1
    while high > low:
        bottom = max(low, high - _PIECE_BYTES)
        window = view[bottom:high].tobytes()
        found = window.count(b"\n")
        if found >= wanted:
            position = len(window)
            for _ in range(wanted):
                position = window.rfind(b"\n", 0, position)
            return bottom + position + 1
        wanted -= found
        high = bottom
    return low


def _pieces(view: memoryview, low: int, high: int, flags: int) -> Iterator[tuple[int, int, bool]]:
    """``[low, high)`` (in one line, ``view`` ending where its data does) as pieces ``(start, end,
    sequence)`` of about ``_PIECE_BYTES``, each viewed alone as it is in the whole: with
    ``VIEW_ANSI`` no piece ends inside an escape sequence, and a long one (an OSC string) is a
    piece of its own, ``sequence`` True (its view is empty)."""
    while low < high:
        end = min(high, low + _PIECE_BYTES)
        if flags & VIEW_ANSI and end < high:
            first, last = _covering(view, low, end)
            if first < end:
                if first > low:
                    yield low, first, False
                yield first, last, True
                low = last
                continue
        yield low, end, False
        low = end


def _line_ends(view: memoryview, line: int, end: int, flags: int, cap: int,
               release: Optional[Callable[[int, int], None]]) -> _Ends:
    """The ends of the view of the line ``view[line:end]`` (no newline in it; ``end < len(view)``:
    the newline at ``end`` follows it), read a piece at a time: escapes removed (``VIEW_ANSI``),
    then (``VIEW_CR``) the last non-empty segment between \r, with the \r that ends a line
    before its newline (as ``view_bytes``)."""
    whole = _Ends(cap)
    ansi = flags & VIEW_ANSI
    if not flags & VIEW_CR:
        for start, stop, sequence in _pieces(view, line, end, flags):
            if not sequence:
                whole.add(_viewed(view[start:stop], flags))
            if release is not None:
                release(start, stop)
        return whole
    best: Optional[_Ends] = None  # the last non-empty segment ended so far
    current = _Ends(cap)
    last_byte = b""
    for start, stop, sequence in _pieces(view, line, end, flags):
        piece = b"" if sequence else view[start:stop].tobytes()
        if ansi and piece:
            shown = _kernels.view_bytes(piece, VIEW_ANSI)
            piece = piece if shown is None else shown
        if release is not None:
            release(start, stop)
        if not piece:
            continue
        last_byte = piece[-1:]
        first = piece.find(b"\r")
        if first < 0:
            current.add(piece)
            continue
        current.add(piece[:first])
        if current.length:
            best = current
        last = piece.rfind(b"\r")
        between = piece[first + 1 : last].rstrip(b"\r")
        if between:
            best = _Ends(cap)
            best.add(between[between.rfind(b"\r") + 1 :])
        current = _Ends(cap)
        current.add(piece[last + 1 :])
    if current.length:
        best = current
    shown_line = best if best is not None else _Ends(cap)
    if end < len(view) and last_byte == b"\r":
        shown_line.add(b"\r")  # the line's ending: it stays
    return shown_line


def _region_view(view: memoryview, low: int, high: int, flags: int, cap: int,
                 release: Optional[Callable[[int, int], None]]) -> _Ends:
    """The ends of ``_viewed(view[low:high], flags)``, read a piece at a time: views never cross a
    newline, so line-aligned pieces are viewed alone, and a line longer than a piece by
    ``_line_ends``; each piece is given back with ``release`` once read."""
    data = view[:high]
    found = _Ends(cap)
    position = low
    while position < high:
        stop = min(high, position + _PIECE_BYTES)
        window = data[position:stop].tobytes()
        newline = window.rfind(b"\n") if stop < high else len(window) - 1
        if newline >= 0:
            found.add(_viewed(window[: newline + 1], flags) if stop < high else _viewed(window, flags))
            stop = position + newline + 1 if stop < high else high
        else:
            line_end = _find_newline(data, stop, high, release)
            line_end = high if line_end < 0 else line_end
            found.add_ends(_line_ends(data, position, line_end, flags, cap, release))
            if line_end < high:
                found.add(b"\n")
            stop = min(high, line_end + 1)
        if release is not None:
            release(position, stop)
        position = stop
    return found


def _shows_any(view: memoryview, low: int, high: int, flags: int) -> bool:
    """Whether ``_viewed(view[low:high], flags)`` is not empty, for a slice holding no \r,
    read a piece at a time."""
    if high - low <= _PIECE_BYTES:
        return bool(_viewed(view[low:high], flags))
    if not flags & VIEW_ANSI:
        return True  # no escape and no \r: the view is the bytes
    data = view[:high]
    return any(not sequence and _viewed(data[start:stop], flags) for start, stop, sequence in
               _pieces(data, low, high, flags))


def _line_start(raw: bytes, lines: int) -> int:
    """Where line number ``lines`` (0-based) of ``raw`` starts."""
    position = 0
    for _ in range(lines):
        position = raw.index(b"\n", position) + 1
    return position


def _cut_head(view: memoryview, shown: bytes, stop: int, raw: Optional[bytes], share: int, slack: int,
              flags: int) -> tuple[int, str]:
    """The head within ``share`` view bytes: (its stored end, its text). ``raw`` is
    ``view[:stop]``, or None (then ``shown`` may be only the view's first bytes)."""
    if share >= len(shown):
        return stop, str(shown, "utf-8", "replace")
    cut = _kernels.page_bounds(shown, 0, share, True)[1] if share else 0
    if cut > share:
        cut = 0  # the first character alone is over the share
    if slack:
        newline = shown.rfind(b"\n", max(share - slack, 1) - 1, cut)
        if newline >= 0:
            cut = newline + 1
    line_view = shown.rfind(b"\n", 0, cut) + 1
    above = shown.count(b"\n", 0, line_view)
    line = _line_start(raw, above) if raw is not None else _nth_line_start(view, 0, above)
    if cut == line_view:
        return line, str(shown[:cut], "utf-8", "replace")
    # Mid-line: the head ends inside the line's final state (what follows its
    # last \r redraw): cut at an earlier offset, the view of the stored prefix
    # would be a redraw the line overwrites (a bar at 2 % that ends at 100 %).
    # The final state's view is no longer than its stored bytes, so taking the
    # remaining budget in stored bytes keeps the head within the share.
    remaining = share - line_view
    line_end, start = final_state(view, raw, line, flags, stop)
    if start < 0:
        return line, str(shown[:line_view], "utf-8", "replace")
    end = _kernels.page_bounds(view, start, remaining, True)[1]
    if end - start > remaining:
        end = start
    end = min(end, line_end)
    if slack and start < end < line_end:
        end = _token_end_before(view, line, max(start, end - slack), end, flags)
    if flags & VIEW_ANSI:
        end = _before_escape(view, line, end)  # back, not forward: the head stays within its share
    if start > line and not _viewed(view[start:end], flags):
        # Nothing of the final state fits (or only escapes): its \r alone would show the redraw before it.
        end = line
    return end, str(shown[:line_view] + _viewed(view[line:end], flags), "utf-8", "replace")


# How many \r a look for a line's final state passes over (empty redraws, escape sequences holding
# \r) before the head ends at the line's start instead: the head's line may be any part of an
# unbounded payload.  A caller whose data is in memory and bounded passes None: no limit.
_REDRAWS_PASSED = 64


def final_state(view: memoryview, raw: Optional[bytes], line: int, flags: int, stop: int,
                passes: Optional[int] = _REDRAWS_PASSED) -> tuple[int, int]:
    """Where the line starting at ``line`` ends (its newline, or the data's
    end) and where its final state starts: what its view shows, the last
    non-empty segment between lone \\r (``view_bytes``), is the view of
    ``view[start:end]`` for every ``end`` in it.  ``start`` is ``line`` when
    the line has no redraw (or the flags collapse none); -1 when the look
    back passes over more than ``passes`` \\r (empty redraws, escape
    sequences holding one) without finding it (None: any number).
    ``raw`` is ``view[:stop]``, or None (then read from ``view``).

    A \\r inside an escape sequence (an OSC string) is removed with it
    (``VIEW_ANSI``) and separates nothing.  Whether the line is redrawn after
    the cut is known only at its end: the look for its last \\r reads on to
    its newline (memory speed, a window at a time).
    """
    if not flags & VIEW_CR:
        line_end = raw.find(b"\n", line) if raw is not None else _find_newline(view, line, stop)
        return (stop if line_end < 0 else line_end), line
    # The look for the last \r finds the newline in the same pass (below) where raw does not hold it.
    line_end = raw.find(b"\n", line) if raw is not None else -1
    if line_end >= 0:
        last = raw.rfind(b"\r", line, line_end)
        escapes = b"\x1b" in raw[line:line_end]
    else:
        size = len(view)
        low, reach, last, escapes = line, ESCAPE_REACH, -1, False
        while True:
            high = min(size, low + reach)
            window = view[low:high].tobytes()
            newline = window.find(b"\n")
            found = window.rfind(b"\r", 0, len(window) if newline < 0 else newline)
            if found >= 0:
                last = low + found
            escapes = escapes or b"\x1b" in (window if newline < 0 else window[:newline])
            if newline >= 0 or high == size:
                line_end = low + newline if newline >= 0 else size
                break
            low, reach = high, min(reach * 4, _SCAN_BYTES)
    if last < 0:
        return line_end, line
    ansi = bool(flags & VIEW_ANSI) and escapes
    segment_end = line_end
    passed = 0
    while passes is None or passed < passes:
        passed += 1
        if last < 0:
            return line_end, line  # the first segment is the final state
        before = last
        if ansi:
            covered = _covering(view, line, last)[0]
            if covered != last:
                # Inside an escape sequence: no redraw, nor any other \r of it (the look goes on
                # before the sequence, so a long one holding many is read once).
                before = covered
        if before == last:
            if _shows_any(view, last + 1, segment_end, flags):
                return line_end, last + 1
            segment_end = last  # an empty redraw (or the \r of a \r\n): the one before shows
            if passes is None:
                segment_end = before = _past_empty_redraws(view, line, segment_end, flags, ansi)
        last = _last_of(view, line, before, b"\r")
    return line_end, -1


def _past_empty_redraws(view: memoryview, line: int, end: int, flags: int, ansi: bool) -> int:
    """``end`` (the end of an empty redraw in the line starting at ``line``),
    moved back over the empty redraws before it many at a time: to the
    earliest lone \\r from which the view of the bytes up to ``end`` is empty.

    A look one redraw at a time costs microseconds per \\r, seconds for a
    spinner that cleared the line a million times; this one views spans that
    grow while they show nothing and shrink when they show something, so it
    stops within ``ESCAPE_REACH`` bytes of the final state (``final_state``
    looks at the redraws left one at a time)."""
    reach = ESCAPE_REACH
    while reach >= ESCAPE_REACH:
        redraw = _last_of(view, line, end - reach, b"\r") if end - reach > line else -1
        while ansi and redraw >= 0:  # a \r inside an escape sequence is no redraw: the one before it
            covered = _covering(view, line, redraw)[0]
            if covered == redraw:
                break
            redraw = _last_of(view, line, covered, b"\r")
        if redraw >= 0 and not _viewed(view[redraw + 1 : end], flags):
            end, reach = redraw, min(reach * 2, _PIECE_BYTES)  # all empty: past them, a longer span next
        else:
            reach //= 2  # something shows (or no redraw is that far back): a shorter span
    return end


def _token_end_before(view: memoryview, line: int, low: int, cut: int, flags: int) -> int:
    """``cut``, moved back to just after the last token end (``TOKEN_ENDS``) in
    ``[low, cut)`` (in the line starting at ``line``) that is no part of an
    escape sequence; ``cut`` when none is.
    The rule ``preview_cuts`` applies to a line that is its own view."""
    window = view[low:cut].tobytes()
    position = len(window)
    while True:
        position = max(window.rfind(mark, 0, position) for mark in _TOKEN_MARKS)
        if position < 0:
            return cut
        after = low + position + 1
        if not flags & VIEW_ANSI or _past_escape(view, line, after) == after:
            return after


def _token_end_after(view: memoryview, line: int, cut: int, high: int, flags: int) -> int:
    """``cut``, moved on to just after the first token end in ``[cut - 1,
    high)`` that is no part of an escape sequence; ``cut`` when none is."""
    low = max(cut - 1, 0)
    window = view[low:high].tobytes()
    position = 0
    while True:
        found = [index for index in (window.find(mark, position) for mark in _TOKEN_MARKS) if index >= 0]
        if not found:
            return cut
        position = min(found) + 1
        after = low + position
        if not flags & VIEW_ANSI or _past_escape(view, line, after) == after:
            return after


_TOKEN_MARKS = tuple(TOKEN_ENDS[i : i + 1] for i in range(len(TOKEN_ENDS)))


def _last_of(view: memoryview, floor: int, position: int, stops: bytes,
             release: Optional[Callable[[int, int], None]] = None) -> int:
    """Where the last byte of ``stops`` in ``view[floor:position]`` is, or -1:
    read back a window at a time (a few hundred bytes on a line of text; each
    given back with ``release``)."""
    high, size = position, ESCAPE_REACH
    while high > floor:
        low = max(floor, high - size)
        window = view[low:high].tobytes()
        if release is not None:
            release(low, high)
        found = max(window.rfind(stops[i : i + 1]) for i in range(len(stops)))
        if found >= 0:
            return low + found
        high, size = low, min(size * 4, _SCAN_BYTES)  # bounded windows: a long line is read, not held
    return -1


def _covering(view: memoryview, floor: int, position: int) -> tuple[int, int]:
    """The escape sequence that covers ``position`` (starts before it, ends
    after it) as ``(start, end)``; ``(position, position)`` when none does.

    ``floor`` is where no sequence is under way (a line's start, the data's),
    so the bytes from it to ``view``'s end tell (``covering_in`` of them).
    """
    found = covering_in(view[floor:], position - floor, True, True)
    assert found is not None  # both edges are known: the window can tell
    return found[0] + floor, found[1] + floor


def _past_escape(view: memoryview, line: int, cut: int) -> int:
    """``cut``, moved past an escape sequence that it would split (``line``: no sequence is under way there)."""
    return _covering(view, line, cut)[1]


def _before_escape(view: memoryview, line: int, cut: int) -> int:
    """``cut``, moved back to the start of an escape sequence that it would split."""
    return _covering(view, line, cut)[0]


def covering_in(view: memoryview, position: int, from_start: bool, to_end: bool) -> Optional[tuple[int, int]]:
    """The escape sequence that covers ``position`` in a window of a payload
    (starts before it, ends after it) as ``(start, end)``; ``(position,
    position)`` when none does; None when the window cannot tell: a sequence
    may start before it (no ESC, newline or BEL before ``position`` in it: an
    OSC string, an inline image's base64, can be longer than any window) or go
    on past its end.  ``from_start``: no sequence is under way at the window's
    start (it starts the payload, or a line); ``to_end``: it ends the payload.

    Every ESC starts a sequence but the ESC of an ST (``ESC \\``) that ends an
    OSC string, and no sequence crosses a newline: the sequence is the one at
    the last ESC before ``position`` on its line, or the OSC whose ST that ESC
    ends.  The look-back goes as far as that ESC or the window's start, however
    long an OSC string (an inline image's base64) makes it; the match forward
    as far as the sequence's end.
    """
    escape = _last_of(view, 0, position, b"\x1b\n")
    if escape < 0:
        # None of a sequence's bytes is a BEL but an OSC's last: after one, no sequence is under way.
        return (position, position) if from_start or b"\x07" in view[:position].tobytes() else None
    if view[escape] != 0x1B:
        return position, position
    if view[escape + 1 : escape + 2] == b"\\":
        before = _last_of(view, 0, escape, b"\x1b\n\x07")  # an OSC string holds none of these
        if before < 0 and not from_start:
            return None  # the OSC this ST may end starts before the window
        if before >= 0 and view[before] == 0x1B and view[before + 1] == 0x5D:
            escape = before
    end = ESCAPE_SEQUENCE.match(view, escape).end()
    if end >= len(view) - 1 and not to_end:
        return None  # with the bytes after the window, the match may be longer (its ST is two bytes)
    return (escape, end) if end > position else (position, position)


# The block of an escape index (``Escapes``): a look-back through the index reads at most this much.
ESCAPE_BLOCK = 4096
# The bytes an index's scan reads at a time.
_SCAN_BYTES = 1 << 20

class Escapes:
    """What is known of where a payload's escape sequences are, for a page
    edge inside one longer than the page's window (an OSC string): its bytes
    ``[0, indexed)`` hold no ESC before ``clean``; ``lasts[k]`` is the last
    ESC before ``k * ESCAPE_BLOCK`` (-1: none) and ``ends[k]`` where the
    sequence there ends (0: none; ``sys.maxsize``: at the payload's end, which
    may yet grow); ``last``/``last_end``: the same before ``indexed``.

    Stored bytes never change (a running resource's only grow), so what an
    index says stays true; it is never changed, only replaced by a longer one
    (``extended``), so threads may share it without a lock.  Built a range at
    a time (``bytes.rfind``: memory speed), once per byte of the payload.
    """

    __slots__ = ("clean", "ends", "indexed", "last", "last_end", "lasts")

    def __init__(self, clean: int, indexed: int, last: int, last_end: int, lasts: array[int], ends: array[int]) -> None:
        self.clean = clean
        self.indexed = indexed
        self.last = last
        self.last_end = last_end
        self.lasts = lasts
        self.ends = ends

    @classmethod
    def empty(cls) -> Escapes:
        """The index of no bytes."""
        from array import array

        return cls(0, 0, -1, 0, array("q", [-1]), array("q", [0]))

    def extended(self, read: Reader, upto: int, size: int) -> Escapes:
        """This index, or a new one that also covers the bytes ``[indexed, upto)``
        (read through ``read``; the payload has ``size`` bytes)."""
        low = self.indexed
        if upto <= low:
            return self
        clean, last, last_end = self.clean, self.last, self.last_end
        lasts, ends = self.lasts[:], self.ends[:]
        while low < upto:
            high = min(upto, low + _SCAN_BYTES)
            with read(low, high) as view:
                data = view.tobytes()
            position = 0
            while position < len(data):
                boundary = (low + position) // ESCAPE_BLOCK * ESCAPE_BLOCK + ESCAPE_BLOCK
                stop = min(len(data), boundary - low)
                found = data.rfind(b"\x1b", position, stop)
                if found >= 0:
                    if last < 0:
                        clean = low + data.find(b"\x1b", position, stop)  # the first ESC
                    last = low + found
                    end = ESCAPE_SEQUENCE.match(data, found).end()
                    last_end = low + end if end < len(data) - 1 else _match_end(read, last, size)
                    if last_end == size:
                        last_end = sys.maxsize  # a running command's next bytes may go on with it
                position = stop
                if low + position == boundary:
                    lasts.append(last)
                    ends.append(last_end)
            low = high
        if last < 0:
            clean = upto
        return Escapes(clean, upto, last, last_end, lasts, ends)

    def quiet(self, low: int, high: int) -> bool:
        """Whether no escape sequence has a byte in ``[low, high)`` (said only of indexed blocks)."""
        first, stop = low // ESCAPE_BLOCK, -(-high // ESCAPE_BLOCK)
        lasts = self.lasts
        return stop < len(lasts) and lasts[stop] == lasts[first] and self.ends[first] <= low

    def last_before(self, read: Reader, position: int) -> int:
        """The last ESC before ``position`` (at most ``indexed``), or -1."""
        if position == self.indexed:
            return self.last
        block = position // ESCAPE_BLOCK
        start = block * ESCAPE_BLOCK
        if start < position:
            with read(start, position) as view:
                found = view.tobytes().rfind(b"\x1b")
            if found >= 0:
                return start + found
        return self.lasts[block]


def covering_far(read: Reader, escapes: Escapes, position: int, size: int) -> tuple[int, int]:
    """``_covering`` of the bytes ``[0, size)`` read through ``read``, as far
    back and on as the sequence takes: its ESC is the last before
    ``position`` (from ``escapes``, which covers ``position``), or the OSC
    start before it when that one is an ST; a newline between, or any byte
    no sequence holds, ends the sequence's match before ``position``."""
    escape = escapes.last_before(read, position)
    if escape < 0:
        return position, position
    if escape > 0 and _bytes_at(read, escape + 1, size) == b"\\":
        before = escapes.last_before(read, escape)
        # The OSC at ``before`` whose string runs to this ST (none of ESC, newline, BEL between).
        if before >= 0 and _bytes_at(read, before + 1, size) == b"]" and _match_end(read, before, size) == escape + 2:
            escape = before
    end = _match_end(read, escape, size)
    return (escape, end) if end > position else (position, position)


def _bytes_at(read: Reader, start: int, size: int) -> bytes:
    """The byte at ``start`` (nothing past ``size``)."""
    with read(start, min(start + 1, size)) as view:
        return view.tobytes()


def _match_end(read: Reader, escape: int, size: int) -> int:
    """Where the escape sequence at ``escape`` ends, read on as far as it goes."""
    reach = ESCAPE_REACH
    while True:
        high = min(size, escape + reach)
        with read(escape, high) as view:
            end = ESCAPE_SEQUENCE.match(view).end()
        if end < high - escape - 1 or high == size:
            return escape + end
        reach *= 4


def _cut_tail(view: memoryview, shown: bytes, begin: int, raw: Optional[bytes], share: int, slack: int,
              flags: int) -> tuple[int, str]:
    """The tail within ``share`` view bytes: (its stored start, its text). ``raw`` is
    ``view[begin:]``, or None (then ``shown`` may be only the view's last bytes)."""
    size = len(shown)
    if share >= size:
        return begin, str(shown, "utf-8", "replace")
    low = size - share
    cut = _kernels.page_bounds(shown, low, 1, True)[0]
    if slack:
        newline = shown.find(b"\n", max(cut - 1, 0), min(low + slack, size - 1))
        if newline >= 0:
            cut = newline + 1
    line_view = shown.rfind(b"\n", 0, cut) + 1
    if raw is not None:
        line = begin + _line_start(raw, shown.count(b"\n", 0, line_view))
    else:  # counted from the end: ``shown`` may be the view's last bytes only
        line = _line_start_from_end(view, begin, shown.count(b"\n", line_view))
    if cut == line_view:
        return line, str(shown[cut:], "utf-8", "replace")
    line_end_view = shown.find(b"\n", cut)
    line_end_view = size if line_end_view < 0 else line_end_view
    remaining = share - (size - line_end_view)
    if raw is not None:
        line_end = raw.find(b"\n", line - begin)
        line_end = begin + (len(raw) if line_end < 0 else line_end)
    else:
        line_end = _find_newline(view, line, len(view))
        line_end = len(view) if line_end < 0 else line_end
    start = _kernels.page_bounds(view, max(line_end - remaining, line), 1, True)[0]
    if flags & VIEW_ANSI:
        start = min(_past_escape(view, line, start), line_end)
    if slack and line < start < line_end:
        start = _token_end_after(view, line, start, min(start + slack, line_end), flags)
    # The partial line is viewed with its newline: a \r\n is a line ending, and stays (viewed alone, a
    # final \r would be a redraw).
    ending = 1 if line_end_view < size else 0
    return start, str(_viewed(view[start : line_end + ending], flags) + shown[line_end_view + ending :], "utf-8",
                      "replace")


def _shares(head_size: int, tail_size: int, max_bytes: int) -> tuple[int, int]:
    head_share, tail_share = max_bytes - max_bytes // 2, max_bytes // 2
    if head_size < head_share:
        return head_size, tail_share + head_share - head_size
    if tail_size < tail_share:
        return head_share + tail_share - tail_size, tail_size
    return head_share, tail_share


def view_preview(data: BytesLike, max_lines: int, max_bytes: int, flags: int, slack: int = 0,
                 runs: int = 0, *, lines: Optional[int] = None,
                 release: Optional[Callable[[int, int], None]] = None) -> Preview:
    """``preview`` of what the model is shown of ``data`` (stored bytes),
    within the limits as shown: each invalid byte becomes U+FFFD, three bytes
    of what the model reads, so output with invalid UTF-8 (Latin-1, binary)
    is cut with the largest smaller byte budget whose head and tail, as shown,
    fit ``max_bytes`` (and is truncated even when its stored bytes fit).

    The rest is ``_viewed_preview``'s; ``runs`` is ``preview``'s. ``lines``, when
    known, is ``data``'s line count (newlines + 1): an output whose lines fit is
    then not read through for them. ``release(start, end)`` is called once a
    long region of ``data`` has been read (its pages are not needed soon).
    """
    found = _viewed_preview(data, max_lines, max_bytes, flags, slack, runs, lines, release)
    if "\ufffd" not in found.head and "\ufffd" not in found.tail:
        return found
    if shown_size(found.head) + shown_size(found.tail) <= max_bytes:
        return found
    # The shown size grows with the budget: the largest budget that fits, by bisection (a stored
    # byte shows as at most 3, so a third of max_bytes always fits but for a lone wide character).
    low, high, best = 1, max_bytes - 1, None
    while low <= high:
        budget = (low + high) // 2
        candidate = _viewed_preview(data, max_lines, budget, flags, slack * budget // max_bytes, runs, lines,
                                    release)
        if candidate.truncated and shown_size(candidate.head) + shown_size(candidate.tail) <= max_bytes:
            best, low = candidate, budget + 1
        else:
            high = budget - 1
    if best is not None:
        return best
    least = _viewed_preview(data, max_lines, 1, flags, 0, runs, lines, release)
    if shown_size(least.head) + shown_size(least.tail) <= max_bytes:
        return least
    # Under 3 bytes, not even one invalid byte fits as shown (U+FFFD): nothing is shown, as when a
    # valid character is wider than the budget, and the marker stands for every byte.
    with byte_view(data) as view:
        size = len(view)
    return Preview("", "", True, 0, size)


def _viewed_preview(data: BytesLike, max_lines: int, max_bytes: int, flags: int, slack: int = 0,
                    runs: int = 0, lines: Optional[int] = None,
                    release: Optional[Callable[[int, int], None]] = None) -> Preview:
    """``preview`` of what the model is shown of ``data`` (stored bytes), its limits counted in view bytes.

    The rules of ``preview`` applied to the view (``view_bytes`` with
    ``flags``), which has the same lines: the limits count the view's bytes,
    so output that fits once cleaned is not truncated (``head`` is then all
    of its view).  ``head_end`` and ``tail_start`` stay offsets in ``data``:
    the head shows ``data[:head_end]`` and the tail ``data[tail_start:]``.
    Text without ESC or lone ``\r`` near its ends (the head's end of them
    reaching the end of the line the head may cut into, ``head_window``; a
    line whose end is past ``HEAD_LINE_REACH`` is not shown) gets exactly
    ``preview``'s cuts (with ``line_slack=slack, runs=runs``); a view's runs are trimmed by
    the same rule (``_runs``), over its lines as shown.  The cost grows with
    the stored bytes the preview shows.

    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: a limit below 1 or a negative ``slack``.
    """
    with byte_view(data) as view:
        head, unknown = head_window(lambda low, high: view[low:high].tobytes(), len(view), max_bytes, flags,
                                    max_bytes + 2)
        if not flags or _is_clean(view, max_bytes, flags, head, release):
            found = preview_from_cuts(view, _kernels.preview_cuts(view, max_lines, max_bytes, slack, runs))
            if flags and not found.truncated:
                return Preview(shown_text(view, flags), "", False, found.head_end, found.tail_start)
            return head_within(found, unknown)
        found = _dirty_preview(view, max_lines, max_bytes, flags, slack, lines, release)
        if runs and found.truncated:
            from ._runs import trim_stored  # only a trimmed preview pays for its import

            head, tail, head_end, tail_start = trim_stored(view, found.head, found.tail, found.head_end,
                                                           found.tail_start, max_lines, runs)
            return Preview(head, tail, True, head_end, tail_start)
        return found


def _dirty_preview(view: memoryview, max_lines: int, max_bytes: int, flags: int, slack: int,
                   lines: Optional[int] = None, release: Optional[Callable[[int, int], None]] = None) -> Preview:
    size = len(view)
    if lines is not None and lines - (size > 0 and view[size - 1] == 0x0A) <= max_lines:
        # The lines fit (whole lines decide: a final newline starts none), known without reading
        # through a long line for its newlines.
        head_region = tail_region = size
    else:
        # With no byte limit, the cuts are the line regions (equal when the lines fit).
        head_region, tail_region = _kernels.preview_cuts(view, max_lines, sys.maxsize)[:2]
    lines_over = head_region < tail_region
    if not lines_over:
        head_region, tail_region = size, 0
    head_view, head_stop, head_raw = _view_forward(view, head_region, max_bytes, flags, release)
    if not lines_over and head_stop == size and len(head_view) <= max_bytes:
        return Preview(str(head_view, "utf-8", "replace"), "", False, size, size)
    tail_view, tail_begin, tail_raw = _view_backward(view, tail_region, max_bytes, flags, release)
    whole = head_stop == head_region and tail_begin == tail_region
    if lines_over and whole and len(head_view) + len(tail_view) <= max_bytes:
        return Preview(str(head_view, "utf-8", "replace"), str(tail_view, "utf-8", "replace"), True,
                       head_region, tail_region)
    head_size = min(len(head_view), max_bytes + 1)
    tail_size = min(len(tail_view), max_bytes + 1)
    head_share, tail_share = _shares(head_size, tail_size, max_bytes)
    head_end, head = _cut_head(view, head_view, head_stop, head_raw, head_share,
                               slack if head_share < head_size else 0, flags)
    tail_start, tail = _cut_tail(view, tail_view, tail_begin, tail_raw, tail_share,
                                 slack if tail_share < tail_size else 0, flags)
    if tail_start < head_end:
        tail_start, tail = head_end, ""
    return Preview(head, tail, True, head_end, tail_start)
