"""Where a signal line of a very long line (minified JSON, one-line logs) is shown from.

The signal kernel reports whole lines; a line of megabytes shown from its
start would point the model far from what matched and show none of it.  For
such a line the match is found again with the same kernel, over regions that
begin and end just after a delimiter (a token end: ``,`` ``;`` ``}`` ``]``
``{`` ``[`` space, tab), so the kernel's word rules see the same edges there
as in the whole line (each is searched with that delimiter, so its start is
no line start: a mode string there opens no listing entry); the line is then
shown from the last token end before
the match, within a bounded look-back.  With escape sequences viewed away
(``VIEW_ANSI``) the ``[`` and ``;`` inside one are no token ends: no region,
and no shown text, starts inside a sequence (``_views._past_escape``, the
rule the preview's cuts keep).
"""

from __future__ import annotations

from . import _kernels
from ._buffers import VIEW_ANSI, LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # never evaluated
    from ._buffers import BytesLike

__all__ = ["LONG_LINE", "shown_from"]

#: A matching line longer than this (bytes) is shown from near its match rather than its start.
LONG_LINE = 240
# Bytes searched per kernel call; a region overlaps the last one by _OVERLAP
# bytes (more than any literal) so that no match across their edge is missed.
_WINDOW = 64 << 10
_OVERLAP = 512
# Most bytes before the end of the token that ends the match the shown text starts at
# (mid-token only for a token this long: the match stays within what is shown).
_LOOK_BACK = 160
_DELIMITERS = b",;}]{[ \t"  # the bytes a token ends with
# One of them (each escaped); compiled on first use: importing overspill never imports re.
_TOKEN_END = LazyPattern(b"[" + b"".join(b"\\" + bytes([delimiter]) for delimiter in _DELIMITERS) + b"]")


def shown_from(block: BytesLike, line_start: int, line_end: int, kind: int, patterns: tuple, flags: int) -> int:
    """Where in ``block`` to show the matching line ``[line_start, line_end)``
    of ``kind`` from: its start when its first ``LONG_LINE`` bytes show the
    match (or it is not long), else a token end shortly before its first match."""
    if line_end - line_start <= LONG_LINE:
        return line_start
    mine = tuple(pattern for pattern in patterns if pattern[0] == kind)
    if _matches(block, line_start, _cut_before(block, line_start, line_start + LONG_LINE, flags), mine, flags):
        return line_start
    unanchored = tuple(pattern for pattern in mine if not pattern[1])
    start = line_start
    while start < line_end and unanchored:
        end = _next_token_end(block, min(line_end, start + _WINDOW), line_end)
        if _matches(block, start, end, unanchored, flags):
            return _last_start(block, start, _first_end(block, start, end, unanchored, flags), unanchored, flags)
        if end >= line_end:
            break
        # On from a token end _OVERLAP bytes back (mid-token only when there is none; then
        # never inside an escape sequence: each region's start is a floor no sequence is under
        # way at, the next one's look-back for an ESC stops there).
        following = _cut_before(block, start, end - _OVERLAP, flags)
        start = following if following > start else _outside_escape(block, start, end - _OVERLAP, line_end, flags)
    return line_start  # (a match only the view or an anchored pattern makes: the line's start)


def _matches(block: BytesLike, start: int, end: int, patterns: tuple, flags: int) -> bool:
    """Whether ``[start, end)`` of a long line holds a match of ``patterns``.

    The kernel takes a region's start for a line's start (where a listing
    entry's mode string is looked for), which a region that starts after a
    token end is not: it is given the delimiter before it too.  A delimiter
    (no ``/``, ``_``, ``-``, quote or word byte) changes no word or name edge
    of what follows, and only unanchored patterns are looked for here."""
    if start > 0 and block[start - 1] in _DELIMITERS:
        start -= 1
    return start < end and bool(_kernels.signal_lines(block, start, end, patterns, flags, 1)[0])


def _next_token_end(block: BytesLike, position: int, line_end: int) -> int:
    """The first token end at or after ``position`` (``line_end`` when none), searched a window at a time."""
    while position < line_end:
        stop = min(line_end, position + _WINDOW)
        found = _TOKEN_END.search(bytes(block[position:stop]))
        if found is not None:
            return position + found.end()
        position = stop
    return line_end


def _cut_before(block: BytesLike, floor: int, position: int, flags: int) -> int:
    """The last token end at or before ``position``, within ``_OVERLAP`` bytes
    and after ``floor`` (``floor`` when none), that is no part of an escape
    sequence when they are viewed away (``floor``: no sequence is under way there)."""
    if position <= floor:
        return floor
    low = max(floor, position - _OVERLAP)
    data = bytes(block[low:position])
    found = len(data)
    while True:
        found = max(data.rfind(bytes([delimiter]), 0, found) for delimiter in _DELIMITERS)
        if found < 0:
            return floor
        after = low + found + 1
        if _outside_escape(block, floor, after, position, flags) == after:
            return after


def _first_end(block: BytesLike, start: int, end: int, patterns: tuple, flags: int) -> int:
    """The first token end ``cut`` (or ``end``) such that ``[start, cut)``
    holds a match, ``[start, end)`` holding one (bisected)."""
    data = bytes(block[start:end])
    cuts = [start + found.end() for found in _TOKEN_END.finditer(data) if start + found.end() < end] + [end]
    low, high = 0, len(cuts) - 1
    while low < high:
        middle = (low + high) // 2
        if _matches(block, start, cuts[middle], patterns, flags):
            high = middle
        else:
            low = middle + 1
    return cuts[low]


def _last_start(block: BytesLike, start: int, end: int, patterns: tuple, flags: int) -> int:
    """The last token end ``s`` with a match in ``[s, end)`` (``start`` when
    none), no more than ``_LOOK_BACK`` bytes before that match's end."""
    data = bytes(block[start:end])
    starts = [start] + [start + found.end() for found in _TOKEN_END.finditer(data) if start + found.end() < end]
    low, high = 0, len(starts) - 1
    while low < high:  # the last start whose region still holds the match
        middle = (low + high + 1) // 2
        if _matches(block, starts[middle], end, patterns, flags):
            low = middle
        else:
            high = middle - 1
    first = starts[low]
    # _matches gives a region the delimiter before it: a literal that starts with that byte
    # may match from there, so the shown text starts at the token end before it.
    if low and any(pattern[3][0] == block[first - 1] for pattern in patterns):
        first = starts[low - 1]
    shown = _character_start(block, max(first, end - _LOOK_BACK), end)
    return _outside_escape(block, start, shown, end, flags)


def _character_start(block: BytesLike, position: int, end: int) -> int:
    """``position``, moved on to the first byte of a character (at most 3
    bytes; never past ``end``): the look-back, or a region begun ``_OVERLAP``
    bytes back, can land inside a multi-byte character, whose view from there
    would start with U+FFFD, which no stored byte is."""
    return min(_kernels.page_bounds(block, position, 1, True)[0], end)


def _outside_escape(block: BytesLike, floor: int, position: int, end: int, flags: int) -> int:
    """``position``, moved past the escape sequence it is inside (never past
    ``end``) when the view removes them (``VIEW_ANSI``): what is shown from
    there is then the view of the stored bytes from there, not a sequence's
    remnant ("31mERROR").  ``floor``: no sequence is under way there (the
    line's start, a region's); the look-back for an ESC stops at it."""
    if not flags & VIEW_ANSI:
        return position
    from ._views import _past_escape  # (here: _views imports text, which imports this module)

    with memoryview(block) as view:  # (released here: the block may be a mapped file's)
        return min(_past_escape(view, floor, position), end)
