"""Pure-Python kernels: the readable specification of ``overspill._speedups``.

Both modules export the same names with the same positional-only signatures,
return the same results and raise the same exception types for every input;
``overspill._kernels`` picks one of them.  This one leans on fast built-ins
(``bytes.count``, ``str.find``, ``str.encode``) and never loops per character
over unbounded input.

Conventions shared by every kernel:

* A *line* is what ``str.split("\\n")`` yields: ``""`` is one line and a final
  line without ``"\\n"`` counts.
* The *stored form* of a ``str`` is UTF-8 with ``surrogateescape`` (U+DC80 to
  U+DCFF stand for one raw byte each) and every other lone surrogate stored as
  U+FFFD (three bytes).  Bytes-like data is its own stored form.
* A position in bytes is a *boundary* unless a lead byte before it announces a
  sequence that covers it and every byte of that sequence is a continuation
  byte inside the buffer.  This is the ordinary code-point boundary for valid
  UTF-8 and a total, loop-free rule for invalid bytes.
"""

from __future__ import annotations

import re
import zlib
from typing import Optional

from ._buffers import VIEW_ANSI, VIEW_CR, BytesLike
from ._buffers import JSON_LABEL_KEYS
from ._buffers import ESCAPE as _ESCAPE
from ._buffers import byte_view as _byte_view
from ._buffers import check_flags as _check_flags
from ._buffers import check_int as _check_int
from ._buffers import check_patterns as _check_patterns

# Large enough that per-block overhead vanishes, small enough that a bounded
# search ("is this over 2,000 lines?") reads little past its answer.
_BLOCK = 1 << 16

# Lone surrogates that surrogateescape turns back into one raw byte each.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")

_KEEP_MODES = ("head", "head_tail")


class _Haystack:
    """``count``/``find``/``rfind`` with start and end over a str, bytes or a
    buffer, so that the kernels below read only the part they need."""

    __slots__ = ("_data", "_view", "_needle")

    def __init__(self, data: object, view: memoryview | None) -> None:
        self._data = data
        self._view = view
        self._needle = "\n" if isinstance(data, str) else b"\n"

    def count(self, start: int, end: int) -> int:
        if self._view is None:
            return self._data.count(self._needle, start, end)  # type: ignore[attr-defined]
        return sum(
            self._view[pos : min(pos + _BLOCK, end)].tobytes().count(b"\n")
            for pos in range(start, end, _BLOCK)
        )

    def find_nth(self, k: int, end: int) -> int:
        """Index of the k-th newline (k >= 1) in [0, end), or -1."""
        pos = 0
        while pos < end:
            block_end = min(pos + _BLOCK, end)
            found = self.count(pos, block_end)
            if found >= k:
                if self._view is None:
                    index = pos - 1
                    for _ in range(k):
                        index = self._data.find(self._needle, index + 1, block_end)  # type: ignore[attr-defined]
                    return index
                block = self._view[pos:block_end].tobytes()
                index = -1
                for _ in range(k):
                    index = block.find(b"\n", index + 1)
                return pos + index
            k -= found
            pos = block_end
        return -1

    def rfind_nth(self, k: int, end: int) -> int:
        """Index of the k-th newline (k >= 1) counting back from ``end``, or -1."""
        stop = end
        while stop > 0:
            block_start = max(stop - _BLOCK, 0)
            found = self.count(block_start, stop)
            if found >= k:
                if self._view is None:
                    index = stop
                    for _ in range(k):
                        index = self._data.rfind(self._needle, block_start, index)  # type: ignore[attr-defined]
                    return index
                block = self._view[block_start:stop].tobytes()
                index = len(block)
                for _ in range(k):
                    index = block.rfind(b"\n", 0, index)
                return block_start + index
            k -= found
            stop = block_start
        return -1


def _newlines_upto(hay: _Haystack, size: int, limit: int | None) -> int:
    """Newlines in [0, size); with ``limit``, ``min(newlines, limit)``."""
    if limit is None:
        return hay.count(0, size)
    found = 0
    pos = 0
    while pos < size and found < limit:
        found += hay.count(pos, min(pos + _BLOCK, size))
        pos += _BLOCK
    return min(found, limit)


def count_lines(data: str | BytesLike, stop: int | None = None, /) -> int:
    """Lines in ``data`` as ``len(data.split("\\n"))`` counts them.

    :param data: a ``str`` or any C-contiguous bytes-like object (``bytes``,
        ``bytearray``, ``memoryview``, ``mmap``).
    :param stop: when given, return ``min(lines, stop + 1)``, reading only as
        far as needed to know it.
    :raises TypeError: ``data`` is neither text nor a contiguous buffer, or
        ``stop`` is not an int (a bool is not).
    :raises ValueError: ``stop`` is negative.
    """
    limit = None if stop is None else _check_int(stop, "stop", 0)
    if isinstance(data, str):
        return _newlines_upto(_Haystack(data, None), len(data), limit) + 1
    if isinstance(data, (bytes, bytearray)):
        return _newlines_upto(_Haystack(data, None), len(data), limit) + 1
    with _byte_view(data) as view:
        return _newlines_upto(_Haystack(view, view), len(view), limit) + 1


def utf8_length(text: str, /) -> int:
    """Bytes in the stored form of ``text``, without encoding all of it at once.

    :raises TypeError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if text.isascii():
        return len(text)
    total = 0
    for start in range(0, len(text), _BLOCK):
        part = text[start : start + _BLOCK]
        try:
            total += len(part.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:
            # surrogatepass writes every surrogate as three bytes; the escaped
            # ones are stored as a single byte instead.
            escaped = len(_ESCAPED_BYTE.findall(part))
            total += len(part.encode("utf-8", "surrogatepass")) - 2 * escaped
    return total


def _sequence_length(lead: int) -> int:
    """Bytes announced by a well-formed UTF-8 lead byte, 0 for any other byte."""
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _is_boundary(buf: BytesLike, size: int, pos: int, final: bool) -> bool:
    """Whether a page may start or end at ``pos`` (0 <= pos <= size).

    With ``final`` false the buffer is a prefix of the file: its end is no
    boundary, and a sequence cut off by the end is assumed to go on.
    """
    if pos >= size:
        return final
    if pos == 0 or not _is_continuation(buf[pos]):
        return True
    for lead_pos in range(pos - 1, max(pos - 4, -1), -1):
        if _is_continuation(buf[lead_pos]):
            continue
        end = lead_pos + _sequence_length(buf[lead_pos])
        if end <= pos:
            return True
        if not all(_is_continuation(b) for b in buf[pos + 1 : min(end, size)]):
            return True
        return end > size and final
    return True


def _boundary_at_or_after(buf: BytesLike, size: int, pos: int, final: bool) -> int:
    """First boundary >= pos, or ``size`` when there is none (at most 3 steps)."""
    while pos < size and not _is_boundary(buf, size, pos, final):
        pos += 1
    return pos


def _boundary_at_or_before(buf: BytesLike, size: int, pos: int, floor: int, final: bool) -> int:
    """Last boundary in [floor, pos], or ``floor`` when there is none."""
    while pos > floor and not _is_boundary(buf, size, pos, final):
        pos -= 1
    return pos


def _page(buf: BytesLike, size: int, offset: int, limit: int, final: bool) -> tuple[int, int]:
    start = _boundary_at_or_after(buf, size, min(offset, size), final)
    end = _boundary_at_or_before(buf, size, min(start + limit, size), start, final)
    if end == start < size:
        # Not even one character fits in the limit: the page is that character.
        end = _boundary_at_or_after(buf, size, start + 1, final)
        if end == size and not final:
            end = start
    return start, end


def page_bounds(buffer: BytesLike, offset: int, limit: int, final: bool = True, /) -> tuple[int, int]:
    """The page ``[start, end)`` of ``buffer`` that a read at ``offset`` returns.

    ``start`` is the first boundary at or after ``offset`` (clamped to the
    buffer), ``end`` the last boundary within ``start + limit`` or, when not
    one whole character fits, the end of that character.  The end of the
    buffer is a boundary only when ``final`` (it is the end of the file);
    otherwise ``start == end`` means more data is needed.  Following ``end``
    from 0 tiles a final buffer exactly, for every limit.

    :raises TypeError: ``buffer`` is not a contiguous buffer, ``offset`` or
        ``limit`` not an int, ``final`` not a bool.
    :raises ValueError: ``offset`` is negative or ``limit`` below 1.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    offset = _check_int(offset, "offset", 0)
    limit = _check_int(limit, "limit", 1)
    if not isinstance(final, bool):
        raise TypeError(f"final must be a bool, not {type(final).__name__}")
    with _byte_view(buffer) as view:
        return _page(view, len(view), offset, limit, final)


def _line_regions(hay: _Haystack, size: int, max_lines: int) -> tuple[int, int] | None:
    """``(head_region_end, tail_region_start)`` when there are more than
    ``max_lines`` lines, else None.

    Lines here are whole lines: a final newline ends the last line and
    starts no other.  The head region is the first ``ceil(max_lines / 2)``
    lines with their newlines (it ends where the next line starts), the tail
    region the last ``floor(max_lines / 2)``; at least one line lies between.
    """
    final = size > 0 and hay.count(size - 1, size) == 1
    newlines = _newlines_upto(hay, size, max_lines + 1)
    if newlines < max_lines or (newlines == max_lines and final):
        return None
    head_lines = (max_lines + 1) // 2
    tail_lines = max_lines // 2
    head_end = hay.find_nth(head_lines, size) + 1
    tail_start = hay.rfind_nth(tail_lines, size - 1 if final else size) + 1 if tail_lines else size
    return head_end, tail_start


def _shares(head_size: int, tail_size: int, max_bytes: int) -> tuple[int, int]:
    """Byte budgets of head and tail; what one side cannot use goes to the other."""
    head_share = (max_bytes + 1) // 2
    tail_share = max_bytes // 2
    if head_size < head_share:
        return head_size, tail_share + head_share - head_size
    if tail_size < tail_share:
        return head_share + tail_share - tail_size, tail_size
    return head_share, tail_share


def _newline_before(view: BytesLike, low: int, high: int) -> int:
    """Index of the last newline in [low, high), or -1 (a bounded window)."""
    return -1 if low >= high else _rfind_in(bytes(view[low:high]), low)


def _rfind_in(window: bytes, base: int) -> int:
    found = window.rfind(b"\n")
    return -1 if found < 0 else base + found


def _newline_after(view: BytesLike, low: int, high: int) -> int:
    """Index of the first newline in [low, high), or -1 (a bounded window)."""
    if low >= high:
        return -1
    found = bytes(view[low:high]).find(b"\n")
    return -1 if found < 0 else low + found


# Where a cut inside a long line may land, after a newline was looked for in
# vain: just after one of these (token-ish boundaries of minified code, CSV
# rows and prose), so that a word or a number is not split.
_TOKEN_ENDS = (",", ";", "}", " ")
_TOKEN_END_BYTES = tuple(mark.encode() for mark in _TOKEN_ENDS)


def _mark_before(window: str | bytes) -> int:
    """Index of the last token end in ``window``, or -1."""
    marks = _TOKEN_ENDS if isinstance(window, str) else _TOKEN_END_BYTES
    return max(window.rfind(mark) for mark in marks)  # type: ignore[arg-type]


def _mark_after(window: str | bytes) -> int:
    """Index of the first token end in ``window``, or -1."""
    marks = _TOKEN_ENDS if isinstance(window, str) else _TOKEN_END_BYTES
    found = [index for index in (window.find(mark) for mark in marks) if index >= 0]  # type: ignore[arg-type]
    return min(found, default=-1)


def _head_cut(view: BytesLike, size: int, share: int, slack: int) -> int:
    """The head's end: the last boundary within ``share``, or just after a
    newline when one ends at most ``slack`` bytes before ``share``, else just
    after the last ``,`` ``;`` ``}`` or space there."""
    cut = _boundary_at_or_before(view, size, share, 0, True)
    if slack:
        low = max(share - slack, 1) - 1
        newline = _newline_before(view, low, cut)
        if newline >= 0:
            return newline + 1
        if low < cut:
            mark = _mark_before(bytes(view[low:cut]))
            if mark >= 0:
                return low + mark + 1
    return cut


def _tail_cut(view: BytesLike, size: int, share: int, slack: int) -> int:
    """The tail's start: the first boundary leaving at most ``share`` bytes,
    or just after a newline at most ``slack`` bytes later (never the end),
    else just after the first ``,`` ``;`` ``}`` or space there."""
    low = size - share
    cut = _boundary_at_or_after(view, size, low, True)
    if slack:
        start, stop = max(cut - 1, 0), min(low + slack, size - 1)
        newline = _newline_after(view, start, stop)
        if newline >= 0:
            return newline + 1
        if start < stop:
            mark = _mark_after(bytes(view[start:stop]))
            if mark >= 0:
                return start + mark + 1
    return cut


def _preview_bytes(view: BytesLike, hay: _Haystack, max_lines: int, max_bytes: int,
                   slack: int) -> tuple[int, int, int, int]:
    size = len(view)
    regions = _line_regions(hay, size, max_lines)
    if regions is None:
        if size <= max_bytes:
            return size, size, size, size
        regions = (size, 0)
    head_region, tail_region = regions
    if head_region + size - tail_region <= max_bytes:
        return head_region, tail_region, head_region, tail_region
    head_share, tail_share = _shares(head_region, size - tail_region, max_bytes)
    # A side that fits whole is cut at its region; only a real cut gives up slack.
    head_end = _head_cut(view, size, head_share, slack if head_share < head_region else 0)
    tail_start = _tail_cut(view, size, tail_share, slack if size - tail_share > tail_region else 0)
    return head_end, tail_start, head_end, tail_start


def _prefix_fitting(text: str, end: int, budget: int) -> int:
    """Largest i <= end with utf8_length(text[:i]) <= budget."""
    low, high = 0, min(end, budget)
    while low < high:
        mid = (low + high + 1) // 2
        if utf8_length(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def _suffix_fitting(text: str, start: int, budget: int) -> int:
    """Smallest j >= start with utf8_length(text[j:]) <= budget."""
    low, high = max(start, len(text) - budget), len(text)
    while low < high:
        mid = (low + high) // 2
        if utf8_length(text[mid:]) <= budget:
            high = mid
        else:
            low = mid + 1
    return low


def _capped_length(text: str, start: int, end: int, cap: int) -> int:
    """``min(utf8_length(text[start:end]), cap)``, reading at most ``cap`` code points."""
    return min(utf8_length(text[start : min(end, start + cap)]), cap)


def _preview_text(text: str, max_lines: int, max_bytes: int, slack: int) -> tuple[int, int, int, int]:
    length = len(text)
    size = utf8_length(text)
    regions = _line_regions(_Haystack(text, None), length, max_lines)
    if regions is None:
        if size <= max_bytes:
            return size, size, length, length
        regions = (length, 0)
    head_region, tail_region = regions
    # Every comparison below is against at most max_bytes, so lengths capped
    # just above it decide them as the exact ones would, at bounded cost.
    cap = max_bytes + 1
    head_size = _capped_length(text, 0, head_region, cap)
    tail_size = min(utf8_length(text[max(tail_region, length - cap) :]), cap)
    if head_size + tail_size <= max_bytes:
        return head_size, size - tail_size, head_region, tail_region
    head_share, tail_share = _shares(head_size, tail_size, max_bytes)
    head_index = _prefix_fitting(text, head_region, head_share)
    tail_index = _suffix_fitting(text, tail_region, tail_share)
    head_end = utf8_length(text[:head_index])
    tail_start = size - utf8_length(text[tail_index:])
    if slack and head_index < head_region:
        # Same rule as for bytes: a newline ending at most `slack` bytes
        # before the share, else a token end there; either lies within
        # `slack` code points of the cut.
        low = max(head_index - slack - 1, 0)
        newline = text.rfind("\n", low, head_index)
        for found in (newline, _found(_mark_before(text[low:head_index]), low)):
            if found >= 0:
                end = head_end - utf8_length(text[found + 1 : head_index])
                if head_share - end <= slack:
                    head_index, head_end = found + 1, end
                    break
    if slack and tail_index > tail_region:
        low, high = max(tail_index - 1, 0), min(tail_index + slack, length - 1)
        newline = text.find("\n", low, high)
        for found in (newline, _found(_mark_after(text[low:high]), low)):
            if found >= 0:
                start = tail_start + utf8_length(text[tail_index : found + 1])
                if start - (size - tail_share) <= slack:
                    tail_index, tail_start = found + 1, start
                    break
    return head_end, tail_start, head_index, tail_index


def _found(index: int, base: int) -> int:
    return -1 if index < 0 else base + index


def preview_cuts(content: str | BytesLike, max_lines: int, max_bytes: int, line_slack: int = 0, /
                 ) -> tuple[int, int, int, int]:
    """Where the head+tail preview of ``content`` cuts it.

    Returns ``(head_end, tail_start, head_index, tail_index)``: the head is
    ``content[:head_index]`` and the tail ``content[tail_index:]``;
    ``head_end`` and ``tail_start`` are the same cuts as byte offsets in the
    stored form (equal to the indexes for bytes-like content).  The content
    was truncated exactly when ``head_end < tail_start``; otherwise all four
    are the content's length.  The rules are those of ``overspill.preview``;
    ``line_slack`` is the most bytes a byte cut gives up to land just after a
    newline (0: cut at the last character boundary, as before).

    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: ``max_lines`` or ``max_bytes`` below 1, ``line_slack`` negative.
    """
    max_lines = _check_int(max_lines, "max_lines", 1)
    max_bytes = _check_int(max_bytes, "max_bytes", 1)
    slack = _check_int(line_slack, "line_slack", 0)
    if isinstance(content, str):
        return _preview_text(content, max_lines, max_bytes, slack)
    if isinstance(content, (bytes, bytearray)):
        return _preview_bytes(content, _Haystack(content, None), max_lines, max_bytes, slack)
    with _byte_view(content) as view:
        return _preview_bytes(view, _Haystack(view, view), max_lines, max_bytes, slack)


def ascii_view(text: str, /) -> memoryview | None:
    """The stored form of ``text`` as a read-only byte view when it is ASCII, else None.

    (The compiled twin shares the str's own storage; this one copies.)

    :raises TypeError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if not text.isascii():
        return None
    return memoryview(text.encode("ascii"))


def crc32(data: BytesLike, value: int = 0, /) -> int:
    """zlib's CRC-32 of ``data``, continuing from ``value`` (as ``zlib.crc32``).

    :raises TypeError: ``data`` is not a contiguous buffer or ``value`` not an int.
    :raises ValueError: ``value`` is outside 0 to 2**32 - 1.
    """
    if isinstance(data, str):
        raise TypeError("data must be a bytes-like object, not str")
    value = _check_int(value, "value", 0)
    if value > 0xFFFFFFFF:
        raise ValueError(f"value must be at most 4294967295, not {value}")
    with _byte_view(data) as view:
        return zlib.crc32(view, value)


class StreamCap:
    """A streaming byte cap: retains at most ``max_bytes`` and counts everything.

    ``keep="head"`` retains the first ``max_bytes`` bytes.  ``keep="head_tail"``
    retains the first ``ceil(max_bytes / 2)`` bytes and, in a ring, the last
    ``floor(max_bytes / 2)`` bytes of what follows them, so the end of a long
    stream survives.  Any chunking of the same bytes gives the same state.

    :param max_bytes: the retention cap, at least 1.
    :param keep: ``"head"`` or ``"head_tail"``.
    :raises TypeError: ``max_bytes`` is not an int or ``keep`` not a str.
    :raises ValueError: ``max_bytes`` below 1 or an unknown ``keep``.
    """

    __slots__ = ("_max_bytes", "_keep", "_head", "_head_cap", "_ring", "_ring_cap", "_ring_pos",
                 "_total_bytes", "_newlines")

    def __init__(self, max_bytes: int, *, keep: str = "head") -> None:
        self._max_bytes = _check_int(max_bytes, "max_bytes", 1)
        if not isinstance(keep, str):
            raise TypeError(f"keep must be a str, not {type(keep).__name__}")
        if keep not in _KEEP_MODES:
            raise ValueError(f"keep must be 'head' or 'head_tail', not {keep!r}")
        self._keep = "head" if keep == "head" else "head_tail"  # the mode's constant, as the compiled twin keeps
        self._head_cap = self._max_bytes if keep == "head" else (self._max_bytes + 1) // 2
        self._ring_cap = self._max_bytes - self._head_cap
        # Both grow with what is fed, up to their share of max_bytes.
        self._head = bytearray()
        self._ring = bytearray()
        self._ring_pos = 0  # once the ring is full: where its oldest byte is
        self._total_bytes = 0
        self._newlines = 0

    def feed(self, chunk: BytesLike, /) -> None:
        """Count ``chunk`` and retain what the cap allows.

        :raises TypeError: ``chunk`` is not a contiguous bytes-like object.
        """
        if isinstance(chunk, str):
            raise TypeError("chunk must be a bytes-like object, not str")
        with _byte_view(chunk) as view:
            self._total_bytes += len(view)
            self._newlines += count_lines(view) - 1
            room = self._head_cap - len(self._head)
            self._head += view[:room]
            rest = view[room:]
            if rest and self._ring_cap:
                self._push_tail(rest[-self._ring_cap :])

    def _push_tail(self, data: memoryview) -> None:
        ring = self._ring
        capacity = self._ring_cap
        if len(ring) < capacity:
            # Still filling: append until full; only then does it wrap.
            fill = capacity - len(ring)
            ring += data[:fill]
            data = data[fill:]
            if not data:
                return
        first = min(len(data), capacity - self._ring_pos)
        ring[self._ring_pos : self._ring_pos + first] = data[:first]
        ring[: len(data) - first] = data[first:]
        self._ring_pos = (self._ring_pos + len(data)) % capacity

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def keep(self) -> str:
        return self._keep

    @property
    def head(self) -> bytes:
        """The retained start of the stream."""
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        """The retained end of the stream (always empty for ``keep="head"``)."""
        return bytes(self._ring[self._ring_pos :] + self._ring[: self._ring_pos])

    @property
    def total_bytes(self) -> int:
        return self._total_bytes

    @property
    def total_lines(self) -> int:
        """Lines in everything fed, counted as ``count_lines`` would."""
        return self._newlines + 1

    @property
    def truncated(self) -> bool:
        return self._total_bytes > len(self._head) + len(self._ring)

    def value(self) -> bytes:
        """The retained bytes: the head, then the tail."""
        return self.head + self.tail

    def __repr__(self) -> str:
        return (f"StreamCap(max_bytes={self._max_bytes}, keep={self._keep!r}, "
                f"total_bytes={self._total_bytes}, truncated={self.truncated})")


# ---------------------------------------------------------------- views
# A line holding a lone carriage return (one not ending the line as \r\n).
_REDRAWN_LINE = re.compile(rb"[^\n]*\r(?!\n)[^\n]*")


def _has_lone_cr(data: bytes) -> bool:
    return data.count(b"\r") != data.count(b"\r\n")


def _collapse(data: bytes) -> bytes:
    size = len(data)

    def redraw(match: re.Match[bytes]) -> bytes:
        line = match.group()
        # A \r just before the \n is the line's ending and stays.
        ending = b"\r" if line.endswith(b"\r") and match.end() < size else b""
        segments = (line[:-1] if ending else line).split(b"\r")
        shown = next((segment for segment in reversed(segments) if segment), b"")
        return shown + ending

    return _REDRAWN_LINE.sub(redraw, data)


def text_fits(text: str, max_lines: int, max_bytes: int, flags: int, /) -> bool:
    """Whether ``text`` is shown as it is: its own view for ``flags`` (no ESC
    with ``VIEW_ANSI``, no lone ``\\r`` with ``VIEW_CR``), at most ``max_lines``
    whole lines (a final newline starts no line) and at most ``max_bytes`` bytes
    in its stored form (``utf8_length``): exactly when ``preview_cuts`` of it
    would not truncate and its view is itself.

    :raises TypeError: ``text`` is not a ``str``; a limit or ``flags`` not an int.
    :raises ValueError: a limit below 1, ``flags`` outside 0 to 3.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    max_lines = _check_int(max_lines, "max_lines", 1)
    max_bytes = _check_int(max_bytes, "max_bytes", 1)
    flags = _check_flags(flags)
    if len(text) > max_bytes:  # every code point takes at least one byte
        return False
    if flags & VIEW_ANSI and "\x1b" in text:
        return False
    if flags & VIEW_CR and text.count("\r") != text.count("\r\n"):
        return False
    # A final newline ends the last line: one more newline then still fits.
    newlines_allowed = max_lines + 1 if text.endswith("\n") else max_lines
    return text.count("\n") < newlines_allowed and utf8_length(text) <= max_bytes


def view_bytes(buffer: BytesLike, flags: int, /) -> bytes | None:
    """What a reader is shown of ``buffer``: escapes removed, redraws collapsed.

    With ``VIEW_ANSI`` (1), ANSI escape sequences (CSI, OSC, charset selection
    and the other ESC-introduced ones) are removed.  Then, with ``VIEW_CR``
    (2), each line (newlines are never removed) keeps only its last non-empty
    segment between lone carriage returns, as a terminal shows a redrawn
    progress line; ``\\r\\n`` is a line ending and stays.  Returns None when
    the view is ``buffer`` itself (no ESC, no lone ``\\r`` for the flags given).

    :raises TypeError: ``buffer`` is not a contiguous buffer, ``flags`` not an int.
    :raises ValueError: ``flags`` outside 0 to 3.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    flags = _check_flags(flags)
    with _byte_view(buffer) as view:
        data = view.tobytes()
    escapes = bool(flags & VIEW_ANSI) and b"\x1b" in data
    redraws = bool(flags & VIEW_CR) and _has_lone_cr(data)
    if not (escapes or redraws):
        return None
    if escapes:
        data = _ESCAPE.sub(b"", data)
    if flags & VIEW_CR and b"\r" in data:
        data = _collapse(data)
    return data


# ---------------------------------------------------------------- signals
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _boundary(before: int, after: int) -> bool:
    """A word boundary: not two word bytes, or a lowercase then an uppercase letter."""
    return not (before in _WORD and after in _WORD) or (0x61 <= before <= 0x7A and 0x41 <= after <= 0x5A)


def _matches_at(text: bytes, start: int, end: int, literal: bytes, anchored: bool) -> bool:
    """Whether the literal found at ``start``, in a line ending at ``end``, counts."""
    if anchored:
        return True
    stop = start + len(literal)
    if literal[0] in _WORD and start > 0 and not _boundary(text[start - 1], text[start]):
        return False
    if literal[-1] in _WORD and stop < end and not _boundary(text[stop - 1], text[stop]):
        return False
    return True


def _scan_kinds(text: bytes, patterns: list[tuple[int, bool, bool, bytes]]) -> dict[int, int]:
    """``{line_start: lowest kind}`` for the lines of ``text`` (a view) that match.

    Each literal is found with ``bytes.find`` (in a lowercased copy when
    caseless) and checked only where found: a few C-speed passes instead of
    a regex tried at every byte.
    """
    lowered: bytes | None = None
    claimed: dict[int, int] = {}
    size = len(text)
    for kind, anchored, caseless, literal in sorted(patterns, key=lambda entry: entry[0]):
        if caseless:
            if lowered is None:
                lowered = text.lower()
            haystack, needle = lowered, literal.lower()
        else:
            haystack, needle = text, literal
        if anchored:
            if haystack.startswith(needle):
                claimed.setdefault(0, kind)
            needle = b"\n" + needle
        position = haystack.find(needle)
        while position >= 0:
            start = position + 1 if anchored else position
            line_start = text.rfind(b"\n", 0, start) + 1
            line_end = text.find(b"\n", start)
            line_end = size if line_end < 0 else line_end
            if line_start in claimed or not _matches_at(text, start, line_end, literal, anchored):
                position = haystack.find(needle, position + 1)
                continue
            claimed[line_start] = kind
            # One hit settles the line for this kind (lower kinds came first).
            position = haystack.find(needle, line_end)
    return claimed


def signal_lines(buffer: BytesLike, start: int, end: int, patterns: tuple, flags: int, limit: int, /
                 ) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Lines of ``buffer[start:end]`` whose view matches a signal pattern.

    The region is split at newlines (its first and last lines may be parts of
    lines of the buffer); each line's view (``view_bytes`` with ``flags``) is
    matched against ``patterns``, tuples ``(kind, anchored, caseless,
    literal)``: ``literal`` (ASCII case-insensitively when ``caseless``) at the
    start of the view when ``anchored``, else anywhere with a word boundary at
    each edge that is a letter or digit.  A line's kind is the lowest kind it
    matches.  Returns ``(hits, totals)``: ``hits`` lists ``(line_start,
    line_end, kind)`` (offsets in ``buffer``, the newline excluded) in order,
    at most ``limit`` lines of each kind; ``totals[kind]`` counts every
    matching line of that kind (its length is the highest kind plus one).

    :raises TypeError: wrong argument types.
    :raises ValueError: ``start``/``end`` outside the buffer or reversed,
        malformed patterns, ``flags`` outside 0 to 3, ``limit`` negative.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    start = _check_int(start, "start", 0)
    end = _check_int(end, "end", 0)
    checked = _check_patterns(patterns)
    flags = _check_flags(flags)
    limit = _check_int(limit, "limit", 0)
    kinds = max((kind for kind, _, _, _ in checked), default=-1) + 1
    totals = [0] * kinds
    with _byte_view(buffer) as view:
        if end > len(view) or start > end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {len(view)}")
        region = view[start:end].tobytes()
    if not checked or not region:
        return [], totals
    shown = view_bytes(region, flags) if flags else None
    text = region if shown is None else shown
    claimed = _scan_kinds(text, checked)
    hits: list[tuple[int, int, int]] = []
    kept = [0] * kinds
    stored = _LineMap(region, text) if shown is not None else None
    for line_start in sorted(claimed):
        kind = claimed[line_start]
        totals[kind] += 1
        if kept[kind] >= limit:
            continue
        kept[kind] += 1
        if stored is None:
            line_end = text.find(b"\n", line_start)
            hits.append((start + line_start, start + (len(text) if line_end < 0 else line_end), kind))
        else:
            first, last = stored.line_at(line_start)
            hits.append((start + first, start + last, kind))
    return hits, totals


class _LineMap:
    """Maps a line of a view (by its start) to the same line of the stored
    bytes: the view keeps every newline, so the n-th lines correspond."""

    __slots__ = ("_stored", "_view", "_view_pos", "_stored_pos")

    def __init__(self, stored: bytes, view: bytes) -> None:
        self._stored = stored
        self._view = view
        self._view_pos = 0
        self._stored_pos = 0

    def line_at(self, view_start: int) -> tuple[int, int]:
        """``(start, end)`` in the stored bytes; calls come in increasing order."""
        for _ in range(self._view.count(b"\n", self._view_pos, view_start)):
            self._stored_pos = self._stored.index(b"\n", self._stored_pos) + 1
        self._view_pos = view_start
        end = self._stored.find(b"\n", self._stored_pos)
        return self._stored_pos, len(self._stored) if end < 0 else end


# ---------------------------------------------------------------- outline
#: Bytes of a line's leading token kept (a longer one is cut there).
TOKEN_MAX = 255
#: Bytes of a commit subject kept.
SUBJECT_MAX = 120
#: The most levels ``outline_lines`` keeps runs for.
OUTLINE_DEPTH_MAX = 32
# Bytes that end a line's leading token ("::" does not: it separates parts).
_TOKEN = re.compile(rb"(?:[^ \t\[(,;\"'=<>|{}:]|::)*")
_HEX_DIGITS = frozenset(b"0123456789abcdef")


def _leading_token(text: bytes) -> bytes:
    """The line's leading token: up to a stop byte, "::" kept, at most TOKEN_MAX bytes."""
    window = text[: TOKEN_MAX + 1]
    end = _TOKEN.match(window).end()  # type: ignore[union-attr]  # it matches the empty string
    # A "::" that straddles the cap ends the scan past it, as a byte loop does.
    return window[: min(end, TOKEN_MAX)]


def _section_header(text: bytes) -> bool:
    """``/some/dir:`` (as ``ls -R`` heads each folder): a path with no space or colon, then a colon."""
    if len(text) < 2 or text[-1] != 58:
        return False
    name = text[:-1]
    if b" " in name or b"\t" in name or b":" in name:
        return False
    return b"/" in name or name[0] == 46


def _part_ends(token: bytes) -> list[int]:
    """Where each non-empty part of ``token`` ends; parts are split at "/" and "::"."""
    ends = []
    start = 0
    i = 0
    size = len(token)
    while i < size:
        byte = token[i]
        if byte == 47:
            width = 1
        elif byte == 58 and i + 1 < size and token[i + 1] == 58:
            width = 2
        else:
            i += 1
            continue
        if i > start:
            ends.append(i)
        i += width
        start = i
    if size > start:
        ends.append(size)
    return ends


def _commit_hash(text: bytes) -> bytes | None:
    """The first 12 hex digits of a ``commit <hash>`` line (7 or more), else None."""
    if not text.startswith(b"commit "):
        return None
    end = 7
    while end < len(text) and text[end] in _HEX_DIGITS:
        end += 1
    if end - 7 < 7 or (end < len(text) and text[end] != 32):
        return None
    return text[7 : min(end, 19)]


def outline_lines(buffer: BytesLike, start: int, end: int, section: bytes, max_depth: int, max_runs: int,
                  max_commits: int, /) -> tuple:
    """The structure of the lines of ``buffer[start:end]``: runs of lines by path prefix, and commits.

    The region is split at newlines (a final newline ends the last line; it
    does not start another), and a line's final ``\\r`` is dropped.  A line's
    *token* is its leading text up to the first space, tab, ``[({<>|=,;'"``
    or lone ``:`` (``::`` joins parts), at most ``TOKEN_MAX`` bytes.  A line
    is *keyed* by

    * when the whole line is a section header (``/a/dir:`` as ``ls -R``
      writes: no space or colon before the final colon, holding ``/`` or
      starting with ``.``), by that path, which becomes the current section;
    * else by its own token, when the token holds ``/`` or ``::`` (a path, a
      test id);
    * else by the current section (``section`` at the start), if any.

    The key of a keyed line at depth ``d`` is its token up to the end of its
    ``d``-th part (parts split at ``/`` and ``::``; the whole token when it
    has fewer).  At each depth ``1..max_depth``, consecutive keyed lines with
    the same key form a *run*; an unkeyed line joins the current run (or,
    before any, counts in ``lead``).  At most ``max_runs`` runs are kept per
    depth: a depth with more is ``None``.  A *commit* is a line
    ``commit <7 or more hex digits>`` (then its end or a space); its subject
    is the first later line (before the next commit) that starts with four
    spaces and holds more, stripped of spaces and tabs, at most
    ``SUBJECT_MAX`` bytes.  The first ``max_commits`` and the last
    ``max_commits`` commits are kept.

    Returns ``(runs, lead, lines, keyed, section, commits, commit_total)``:
    ``runs[d - 1]`` lists ``(key, offset, lines, deeper)`` (``deeper``: some
    line of the run has more parts than the key) or is None; ``section`` is
    the current section at the end; ``commits`` lists ``(offset, hash,
    subject or None)`` in order; offsets are offsets in ``buffer``.

    :raises TypeError: wrong argument types.
    :raises ValueError: ``start``/``end`` outside the buffer or reversed,
        ``max_depth`` outside 1 to ``OUTLINE_DEPTH_MAX``, ``max_runs`` below
        1, ``max_commits`` negative, ``section`` longer than ``TOKEN_MAX``.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    start = _check_int(start, "start", 0)
    end = _check_int(end, "end", 0)
    if not isinstance(section, bytes):
        raise TypeError(f"section must be bytes, not {type(section).__name__}")
    max_depth = _check_int(max_depth, "max_depth", 1)
    max_runs = _check_int(max_runs, "max_runs", 1)
    max_commits = _check_int(max_commits, "max_commits", 0)
    if max_depth > OUTLINE_DEPTH_MAX:
        raise ValueError(f"max_depth must be at most {OUTLINE_DEPTH_MAX}, not {max_depth}")
    if len(section) > TOKEN_MAX:
        raise ValueError(f"section must be at most {TOKEN_MAX} bytes, not {len(section)}")
    with _byte_view(buffer) as view:
        if end > len(view) or start > end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {len(view)}")
        region = view[start:end].tobytes()
    runs: list = [[] for _ in range(max_depth)]
    current: list = [None] * max_depth  # the key of each depth's current run
    lead = lines = keyed = total = 0
    first: list = []
    last: list = []
    pending: list | None = None  # the latest commit still without a subject
    position = 0
    size = len(region)
    while position < size:
        newline = region.find(b"\n", position)
        stop = size if newline < 0 else newline
        text = region[position:stop]
        if text.endswith(b"\r"):
            text = text[:-1]
        offset = start + position
        position = stop + 1
        lines += 1
        digest = _commit_hash(text)
        if digest is not None:
            total += 1
            pending = [offset, digest, None]
            if len(first) < max_commits:
                first.append(pending)
            elif max_commits:
                last.append(pending)
                if len(last) > max_commits:
                    del last[0]
        elif pending is not None and text.startswith(b"    "):
            subject = text.strip(b" \t")
            if subject:
                pending[2] = subject[:SUBJECT_MAX]
                pending = None
        if _section_header(text):
            section = text[:-1][:TOKEN_MAX]
            token = section
        else:
            token = _leading_token(text)
            if b"/" not in token and b"::" not in token:
                token = section
        if not token:
            if current[0] is None:
                lead += 1
            else:
                for depth in range(max_depth):
                    if runs[depth] is not None:
                        runs[depth][-1][2] += 1
            continue
        keyed += 1
        ends = _part_ends(token)
        for depth in range(max_depth):
            key = token[: ends[min(depth + 1, len(ends)) - 1]] if ends else token
            deeper = len(ends) > depth + 1
            kept = runs[depth]
            if key == current[depth]:
                if kept is not None:
                    kept[-1][2] += 1
                    kept[-1][3] = kept[-1][3] or deeper
                continue
            current[depth] = key
            if kept is None:
                continue
            if len(kept) >= max_runs:
                runs[depth] = None
                continue
            kept.append([key, offset, 1, deeper])
    shown = [None if kept is None else [tuple(run) for run in kept] for kept in runs]
    commits = [tuple(commit) for commit in first + last]
    return shown, lead, lines, keyed, section, commits, total


#: Bytes of a JSON key or label kept.
JSON_KEY_MAX = 64
#: Keys listed per JSON entry.
JSON_KEYS_MAX = 12
#: Containers open at once beyond which a document is not outlined.
JSON_NESTING_MAX = 4096
_JSON_SIGNIFICANT = re.compile(rb"[^ \t\r\n]")
_JSON_STRING_STOP = re.compile(rb'["\\]')
_JSON_LITERAL_STOP = re.compile(rb'[ \t\r\n,\]}:\[{"]')
_JSON_LITERAL_START = frozenset(b"-0123456789tfn")
_ROOT, _OBJECT, _ARRAY = 0, 1, 2


class _Frame:
    """One open container of ``JsonOutline`` (the root holds the top-level values)."""

    __slots__ = ("kind", "path", "index", "reportable", "expect_key", "key", "first_index", "last_index",
                 "count", "first_offset", "keys", "labels", "label_depth", "item", "item_index",
                 "item_offset", "labelled", "collect_into", "member_in_range")

    def __init__(self, kind: int, path: tuple, reportable: bool) -> None:
        self.kind = kind
        self.path = path
        self.index = 0
        self.reportable = reportable
        self.expect_key = kind == _OBJECT
        self.key = b""
        self.first_index = -1
        self.last_index = -1
        self.count = 0
        self.first_offset = -1
        self.keys: list = []
        self.labels: list = []
        self.label_depth = 0  # 1: an array's object item; 2: an object member of one
        self.item: Optional[_Frame] = None  # the item whose label this frame may hold
        self.item_index = -1
        self.item_offset = -1
        self.labelled = False
        self.collect_into: Optional[_Frame] = None  # the array whose item keys this object lists
        self.member_in_range = False


class JsonOutline:
    """A streaming scan of a JSON document (or JSON Lines) for the structure of one part of it.

    ``feed`` takes the output's bytes in order from its start; bytes at or
    past ``omit_end`` are not read.  An item of an array (or a top-level
    value) is *omitted* when it starts in ``[omit_start, omit_end)``; so is a
    member of an object when its key does.  Containers are *reported* down
    to ``max_depth`` levels (the top-level value is level 1) along object
    members, and the top-level values themselves (the root, a sequence of
    values as in JSON Lines) with the first value's members; the items of an
    array are summed up in the array's entry, not reported one by one.

    ``result()`` returns ``(valid, records, entries, dropped)``: ``valid`` is
    false once a byte could not be JSON (then nothing more is read);
    ``records`` counts the top-level values begun; ``entries`` lists, for each
    reported container with omitted items, ``(path, kind, first_index,
    last_index, count, first_offset, end_offset, keys, labels)`` -- ``path``
    the tuple of keys from the top-level value (``None`` for the root),
    ``kind`` ``"object"``, ``"array"`` or ``"root"``, the first and last
    omitted index, how many, where the first starts, where the container ends
    (or ``omit_end``, if later), ``keys`` (an object's omitted keys, or the
    keys of an array's first omitted object item; at most ``JSON_KEYS_MAX``,
    each at most ``JSON_KEY_MAX`` raw bytes) and ``labels`` (for each of the
    first ``max_labels`` omitted object items that has one, ``(index,
    offset, label)``: the first string or literal, in document order, whose
    key is one of ``JSON_LABEL_KEYS``, in the item or an object member of
    it).  Entries come in the order their containers close, then the open
    ones innermost first; at most ``max_entries``, ``dropped`` counts the rest.

    :raises TypeError: wrong argument types.
    :raises ValueError: ``omit_start > omit_end``, ``max_depth`` outside 1 to
        ``OUTLINE_DEPTH_MAX``, ``max_entries`` below 1, ``max_labels`` negative.
    """

    __slots__ = ("_omit_start", "_omit_end", "_max_depth", "_max_entries", "_max_labels", "_position",
                 "_stack", "_valid", "_entries", "_dropped", "_state", "_capture", "_capture_frame",
                 "_is_key")

    def __init__(self, omit_start: int, omit_end: int, max_depth: int, max_entries: int, max_labels: int) -> None:
        self._omit_start = _check_int(omit_start, "omit_start", 0)
        self._omit_end = _check_int(omit_end, "omit_end", 0)
        self._max_depth = _check_int(max_depth, "max_depth", 1)
        self._max_entries = _check_int(max_entries, "max_entries", 1)
        self._max_labels = _check_int(max_labels, "max_labels", 0)
        if self._omit_start > self._omit_end:
            raise ValueError("omit_start must not be after omit_end")
        if self._max_depth > OUTLINE_DEPTH_MAX:
            raise ValueError(f"max_depth must be at most {OUTLINE_DEPTH_MAX}, not {self._max_depth}")
        self._position = 0
        self._stack = [_Frame(_ROOT, (), True)]
        self._valid = True
        self._entries: list = []
        self._dropped = 0
        self._state = 0  # 0: between tokens, 1: in a string, 2: after a backslash in one, 3: in a literal
        self._capture = bytearray()
        self._capture_frame: Optional[_Frame] = None
        self._is_key = False

    def feed(self, buffer: BytesLike, /) -> None:
        """Scan the next bytes of the document.

        :raises TypeError: ``buffer`` is not a contiguous bytes-like object.
        """
        if isinstance(buffer, str):
            raise TypeError("buffer must be a bytes-like object, not str")
        with _byte_view(buffer) as view:
            base = self._position
            size = len(view)
            data = view[: max(0, min(size, self._omit_end - base))].tobytes()
        self._position = base + size
        if self._valid and data:
            self._scan(data, base)

    def _in_range(self, offset: int) -> bool:
        return self._omit_start <= offset < self._omit_end

    def _item(self, frame: _Frame, offset: int) -> bool:
        """Count an item (or member) of ``frame`` starting at ``offset``; whether it is omitted."""
        index = frame.index
        frame.index += 1
        if not (frame.reportable and self._in_range(offset)):
            return False
        if frame.count == 0:
            frame.first_index = index
            frame.first_offset = offset
        frame.last_index = index
        frame.count += 1
        return True

    def _open(self, kind: int, offset: int) -> None:
        parent = self._stack[-1]
        index = parent.index
        omitted = self._item(parent, offset) if parent.kind != _OBJECT else parent.member_in_range
        depth = len(self._stack)
        if depth > JSON_NESTING_MAX:
            self._valid = False
            return
        if parent.kind == _OBJECT:
            path = parent.path + (parent.key,)
            reportable = parent.reportable and depth <= self._max_depth
        elif parent.kind == _ROOT:
            path = ()
            reportable = index == 0 and depth <= self._max_depth
        else:
            path = parent.path
            reportable = False
        frame = _Frame(kind, path, reportable)
        if kind == _OBJECT:
            if parent.kind == _ARRAY and parent.reportable and omitted:
                frame.label_depth = 1
                frame.item = frame
                frame.item_index = index
                frame.item_offset = offset
                frame.collect_into = parent if parent.count == 1 else None
            elif parent.kind == _OBJECT and parent.label_depth == 1:
                frame.label_depth = 2
                frame.item = parent
        self._stack.append(frame)

    def _close(self, kind: int, offset: int) -> None:
        frame = self._stack[-1]
        if frame.kind != kind:
            self._valid = False
            return
        self._stack.pop()
        self._emit(frame, offset + 1)

    def _emit(self, frame: _Frame, end: int) -> None:
        if not frame.reportable or frame.count == 0:
            return
        if len(self._entries) >= self._max_entries:
            self._dropped += 1
            return
        kind = ("root", "object", "array")[frame.kind]
        self._entries.append((None if frame.kind == _ROOT else frame.path, kind, frame.first_index,
                              frame.last_index, frame.count, frame.first_offset, min(end, self._omit_end),
                              tuple(frame.keys), tuple(frame.labels)))

    def _owner(self, frame: _Frame) -> Optional[_Frame]:
        """The array whose item ``frame`` (the item or its member) belongs to."""
        item = frame.item
        if item is None:
            return None
        index = len(self._stack) - (1 if frame is item else 2) - 1
        return self._stack[index] if index >= 0 else None

    def _scalar_done(self, text: bytes) -> None:
        """A string or literal value just ended in the top frame: maybe an item's label."""
        frame = self._stack[-1]
        if frame.kind != _OBJECT or frame.label_depth == 0 or frame.key not in JSON_LABEL_KEYS:
            return
        item = frame.item
        if item is None or item.labelled:
            return
        item.labelled = True
        owner = self._owner(frame)
        if owner is not None and len(owner.labels) < self._max_labels:
            owner.labels.append((item.item_index, item.item_offset, text))

    def _key_done(self, text: bytes) -> None:
        frame = self._stack[-1]
        frame.key = text
        if frame.member_in_range and len(frame.keys) < JSON_KEYS_MAX:
            frame.keys.append(text)
        into = frame.collect_into
        if into is not None and len(into.keys) < JSON_KEYS_MAX:
            into.keys.append(text)

    def _scan(self, data: bytes, base: int) -> None:
        size = len(data)
        i = 0
        stack = self._stack
        while i < size:
            state = self._state
            if state == 1 or state == 2:
                if state == 2:
                    if len(self._capture) < JSON_KEY_MAX:
                        self._capture.append(data[i])
                    i += 1
                    self._state = 1
                    continue
                found = _JSON_STRING_STOP.search(data, i)
                stop = size if found is None else found.start()
                room = JSON_KEY_MAX - len(self._capture)
                if room > 0:
                    self._capture += data[i : min(stop, i + room)]
                if found is None:
                    return
                if data[stop] == 92:  # a backslash: the next byte is escaped
                    if len(self._capture) < JSON_KEY_MAX:
                        self._capture.append(92)
                    self._state = 2
                    i = stop + 1
                    continue
                self._state = 0
                i = stop + 1
                text = bytes(self._capture)
                if self._is_key:
                    self._key_done(text)
                else:
                    self._scalar_done(text)
                continue
            if state == 3:
                found = _JSON_LITERAL_STOP.search(data, i)
                stop = size if found is None else found.start()
                room = JSON_KEY_MAX - len(self._capture)
                if room > 0:
                    self._capture += data[i : min(stop, i + room)]
                if found is None:
                    return
                self._state = 0
                i = stop
                self._scalar_done(bytes(self._capture))
                continue
            found = _JSON_SIGNIFICANT.search(data, i)
            if found is None:
                return
            i = found.start()
            byte = data[i]
            offset = base + i
            top = stack[-1]
            if byte == 34:  # "
                if top.kind == _OBJECT and top.expect_key:
                    top.member_in_range = self._item(top, offset)
                    top.expect_key = False
                    self._is_key = True
                else:
                    if top.kind != _OBJECT:  # an object's member was counted at its key
                        self._item(top, offset)
                    self._is_key = False
                self._capture = bytearray()
                self._state = 1
                i += 1
            elif byte == 123 or byte == 91:  # { [
                if top.kind == _OBJECT and top.expect_key:
                    self._valid = False
                    return
                self._open(_OBJECT if byte == 123 else _ARRAY, offset)
                if not self._valid:
                    return
                i += 1
            elif byte == 125 or byte == 93:  # } ]
                if top.kind == _ROOT:
                    self._valid = False
                    return
                self._close(_OBJECT if byte == 125 else _ARRAY, offset)
                if not self._valid:
                    return
                i += 1
            elif byte == 44:  # ,
                if top.kind == _OBJECT:
                    top.expect_key = True
                i += 1
            elif byte == 58:  # :
                if top.kind != _OBJECT or top.expect_key:
                    self._valid = False
                    return
                i += 1
            elif byte in _JSON_LITERAL_START:
                if top.kind == _OBJECT:
                    if top.expect_key:
                        self._valid = False
                        return
                else:
                    self._item(top, offset)
                self._capture = bytearray()
                self._state = 3
            else:
                self._valid = False
                return

    def result(self) -> tuple[bool, int, list, int]:
        """``(valid, records, entries, dropped)``; see the class."""
        saved = list(self._entries), self._dropped
        for frame in reversed(self._stack):
            self._emit(frame, self._omit_end)
        entries, dropped = self._entries, self._dropped
        self._entries, self._dropped = saved
        return self._valid, self._stack[0].index, entries, dropped
