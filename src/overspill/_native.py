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

from ._buffers import VIEW_ANSI, VIEW_CR, BytesLike
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
    ``max_lines`` lines, else None."""
    if _newlines_upto(hay, size, max_lines) < max_lines:
        return None
    head_lines = (max_lines + 1) // 2
    tail_lines = max_lines // 2
    head_end = hay.find_nth(head_lines, size)
    tail_start = hay.rfind_nth(tail_lines, size) + 1 if tail_lines else size
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


def _head_cut(view: BytesLike, size: int, share: int, slack: int) -> int:
    """The head's end: the last boundary within ``share``, or just after a
    newline when one ends at most ``slack`` bytes before ``share``."""
    cut = _boundary_at_or_before(view, size, share, 0, True)
    if slack:
        newline = _newline_before(view, max(share - slack, 1) - 1, cut)
        if newline >= 0:
            return newline + 1
    return cut


def _tail_cut(view: BytesLike, size: int, share: int, slack: int) -> int:
    """The tail's start: the first boundary leaving at most ``share`` bytes,
    or just after a newline at most ``slack`` bytes later (never the end)."""
    low = size - share
    cut = _boundary_at_or_after(view, size, low, True)
    if slack:
        newline = _newline_after(view, max(cut - 1, 0), min(low + slack, size - 1))
        if newline >= 0:
            return newline + 1
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
        # before the share; it lies within `slack` code points of the cut.
        newline = text.rfind("\n", max(head_index - slack - 1, 0), head_index)
        if newline >= 0:
            end = head_end - utf8_length(text[newline + 1 : head_index])
            if head_share - end <= slack:
                head_index, head_end = newline + 1, end
    if slack and tail_index > tail_region:
        newline = text.find("\n", max(tail_index - 1, 0), min(tail_index + slack, length - 1))
        if newline >= 0:
            start = tail_start + utf8_length(text[tail_index : newline + 1])
            if start - (size - tail_share) <= slack:
                tail_index, tail_start = newline + 1, start
    return head_end, tail_start, head_index, tail_index


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
    lines (as ``str.split("\\n")`` gives them) and at most ``max_bytes`` bytes
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
    return text.count("\n") < max_lines and utf8_length(text) <= max_bytes


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
