"""Twin kernels that measure and page (lines, UTF-8 sizes, the boundary rule,
CRC-32, the ASCII view); the conventions are stated in ``overspill._native``."""

from __future__ import annotations

import zlib

from ._buffers import LazyPattern
from ._buffers import BytesLike
from ._buffers import byte_view as _byte_view
from ._buffers import check_int as _check_int
from ._buffers import plain_str as _plain_str

__all__ = ["ascii_view", "count_lines", "crc32", "page_bounds", "utf8_length", "verified_copy", "verify_chunks"]

# Large enough that per-block overhead vanishes, small enough that a bounded
# search ("is this over 2,000 lines?") reads little past its answer.
_BLOCK = 1 << 16

# Lone surrogates that surrogateescape turns back into one raw byte each.
_ESCAPED_BYTE = LazyPattern("[\udc80-\udcff]")


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
    if isinstance(data, str) or type(data) is bytes or type(data) is bytearray:
        # (A bytes or bytearray subclass is read through its buffer below: its storage.)
        if type(data) is not str and isinstance(data, str):
            data = _plain_str(data)
        limit = None if stop is None else _check_int(stop, "stop", 0)
        return _newlines_upto(_Haystack(data, None), len(data), limit) + 1
    with _byte_view(data) as view:
        limit = None if stop is None else _check_int(stop, "stop", 0)
        return _newlines_upto(_Haystack(view, view), len(view), limit) + 1


def utf8_length(text: str, /) -> int:
    """Bytes in the stored form of ``text``, without encoding all of it at once.

    :raises TypeError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if type(text) is not str:
        text = _plain_str(text)
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
    with _byte_view(buffer) as view:
        offset = _check_int(offset, "offset", 0)
        limit = _check_int(limit, "limit", 1)
        if not isinstance(final, bool):
            raise TypeError(f"final must be a bool, not {type(final).__name__}")
        return _page(view, len(view), offset, limit, final)


def ascii_view(text: str, /) -> memoryview | None:
    """The stored form of ``text`` as a read-only byte view when it is ASCII, else None.

    (The compiled twin shares the str's own storage; this one copies.)

    :raises TypeError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if type(text) is not str:
        text = _plain_str(text)
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
    with _byte_view(data) as view:
        value = _check_int(value, "value", 0)
        if value > 0xFFFFFFFF:
            raise ValueError(f"value must be at most 4294967295, not {value}")
        return zlib.crc32(view, value)


def verify_chunks(buffer: BytesLike, base: int, start: int, end: int, checksums: BytesLike, chunk: int, /) -> int:
    """The first checksum chunk under ``[start, end)`` whose CRC-32 is not the
    recorded one, or -1 when every one matches: a verified read in one call.

    ``buffer`` holds the payload from byte ``base`` on; chunk ``i`` is payload
    bytes ``[i * chunk, (i + 1) * chunk)``, cut short by the end of ``buffer``
    (the payload's end); ``checksums`` holds one big-endian CRC-32 per chunk.

    :raises TypeError: ``buffer`` or ``checksums`` is not a contiguous buffer,
        or a number is not an int.
    :raises ValueError: an empty range, a range ``buffer`` does not hold from
        its first chunk's start, or ``checksums`` too short for it.
    """
    view, base, start, end, sums, chunk = _chunk_arguments(buffer, base, start, end, checksums, chunk)
    with view, sums:
        return _first_bad_chunk(view, base, start, end, sums, chunk)


def verified_copy(buffer: BytesLike, base: int, start: int, end: int, checksums: BytesLike,
                  chunk: int, /) -> bytes | int:
    """Bytes ``[start, end)`` of the payload copied out of ``buffer`` first, then
    verified: the copy, or the index of the first checksum chunk under the range
    whose CRC-32 is not the recorded one.

    The arguments are ``verify_chunks``'s.  Each chunk's CRC-32 is computed over
    the copy's bytes inside ``[start, end)`` and ``buffer``'s outside it (CRC-32
    runs over a chunk's bytes in order, so the three parts make the chunk's), so
    the bytes returned are the bytes checked even when ``buffer`` is a shared
    map that another process changes meanwhile: a change made before the copy
    fails the check, one made after it is not in the copy.

    :raises TypeError, ValueError: as ``verify_chunks``.
    """
    view, base, start, end, sums, chunk = _chunk_arguments(buffer, base, start, end, checksums, chunk)
    with view, sums:
        copy = view[start - base : end - base].tobytes()  # first: what is checked and returned
        failed = copied_bad_chunk(view, base, copy, start, end, sums, chunk)
        return copy if failed < 0 else failed


def copied_bad_chunk(view: memoryview, base: int, copy: bytes, start: int, end: int, sums: memoryview,
                     chunk: int) -> int:
    """The first chunk under ``[start, end)`` whose CRC-32, over ``copy`` (the
    payload's bytes ``[start, end)`` taken out of ``view`` before) inside the
    range and ``view`` (the payload from ``base``) outside it, is not recorded;
    -1 when none.  The caller checked that ``view`` and ``sums`` hold those chunks (``_chunk_arguments``)."""
    limit = base + len(view)
    # A view of the copy: a slice of ``bytes`` would copy each chunk's part of it a second time.
    with memoryview(copy) as copied:
        for index in range(start // chunk, (end - 1) // chunk + 1):
            low = index * chunk
            high = min(low + chunk, limit)
            crc = zlib.crc32(view[low - base : start - base]) if low < start else 0
            crc = zlib.crc32(copied[max(low, start) - start : min(high, end) - start], crc)
            if high > end:
                crc = zlib.crc32(view[end - base : high - base], crc)
            if crc != int.from_bytes(sums[4 * index : 4 * index + 4], "big"):
                return index
    return -1


def _chunk_arguments(buffer: BytesLike, base: int, start: int, end: int, checksums: BytesLike,
                     chunk: int) -> tuple[memoryview, int, int, int, memoryview, int]:
    """``verify_chunks``'s and ``verified_copy``'s arguments (the two take the same), each checked
    alone in order, then the relations between them: ``(view, base, start, end, sums, chunk)``,
    ``view`` and ``sums`` flat byte views that the caller releases.  A refused call holds no
    view: the one taken is released before the error leaves (a bytearray can be resized at once).

    :raises TypeError, ValueError: as ``verify_chunks``.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    view = _byte_view(buffer)
    try:
        base = _check_int(base, "base", 0)
        start = _check_int(start, "start", 0)
        end = _check_int(end, "end", 0)
        if isinstance(checksums, str):
            raise TypeError("checksums must be a bytes-like object, not str")
        sums = _byte_view(checksums)
        try:
            chunk = _check_int(chunk, "chunk", 1)
            if (end <= start or start // chunk * chunk < base or end - base > len(view)
                    or 4 * ((end - 1) // chunk + 1) > len(sums)):
                raise ValueError(f"the buffer (from {base}, {len(view)} bytes) and {len(sums) // 4} checksums "
                                 f"do not hold the chunks of [{start}, {end})")
        except BaseException:
            sums.release()
            raise
    except BaseException:
        view.release()
        raise
    return view, base, start, end, sums, chunk


def _first_bad_chunk(view: memoryview, base: int, start: int, end: int, sums: memoryview, chunk: int) -> int:
    """``verify_chunks`` once its arguments passed ``_chunk_arguments``: the chunks."""
    first, last = start // chunk, (end - 1) // chunk
    for index in range(first, last + 1):
        low = index * chunk - base
        if zlib.crc32(view[low : low + chunk]) != int.from_bytes(sums[4 * index : 4 * index + 4], "big"):
            return index
    return -1
