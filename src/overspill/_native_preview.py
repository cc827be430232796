"""Twin kernel ``preview_cuts``: where a head+tail preview cuts (see ``overspill._native``)."""

from __future__ import annotations

from ._buffers import TOKEN_ENDS, BytesLike
from ._buffers import byte_view as _byte_view
from ._buffers import check_int as _check_int
from ._buffers import plain_str as _plain_str
from ._native_bytes import _boundary_at_or_after, _boundary_at_or_before, _Haystack, _newlines_upto, utf8_length

__all__ = ["preview_cuts"]


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
# vain: just after one of _buffers.TOKEN_ENDS (as bytes, and as str for text).
_TOKEN_END_BYTES = tuple(TOKEN_ENDS[i : i + 1] for i in range(len(TOKEN_ENDS)))
_TOKEN_ENDS = tuple(mark.decode("ascii") for mark in _TOKEN_END_BYTES)


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


def preview_cuts(content: str | BytesLike, max_lines: int, max_bytes: int, line_slack: int = 0, runs: int = 0,
                 /) -> tuple[int, int, int, int]:
    """Where the head+tail preview of ``content`` cuts it.

    Returns ``(head_end, tail_start, head_index, tail_index)``: the head is
    ``content[:head_index]`` and the tail ``content[tail_index:]``;
    ``head_end`` and ``tail_start`` are the same cuts as byte offsets in the
    stored form (equal to the indexes for bytes-like content).  The content
    was truncated exactly when ``head_end < tail_start``; otherwise all four
    are the content's length.  The rules are those of ``overspill.preview``;
    ``line_slack`` is the most bytes a byte cut gives up to land just after a
    newline (0: cut at the last character boundary, as before); ``runs``, when
    above 0, trims runs of same-shape lines at line-aligned byte cuts to that
    many lines (``overspill._runs``, the rule both implementations call).

    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: ``max_lines`` or ``max_bytes`` below 1, ``line_slack`` or ``runs`` negative.
    """
    view = None
    if isinstance(content, str):
        if type(content) is not str:
            content = _plain_str(content)
    elif type(content) is not bytes and type(content) is not bytearray:  # a subclass is read through its buffer
        view = _byte_view(content)
    try:
        max_lines = _check_int(max_lines, "max_lines", 1)
        max_bytes = _check_int(max_bytes, "max_bytes", 1)
        slack = _check_int(line_slack, "line_slack", 0)
        keep = _check_int(runs, "runs", 0)
        if isinstance(content, str):
            cuts = _preview_text(content, max_lines, max_bytes, slack)
        elif view is None:
            cuts = _preview_bytes(content, _Haystack(content, None), max_lines, max_bytes, slack)
        else:
            cuts = _preview_bytes(view, _Haystack(view, view), max_lines, max_bytes, slack)
    finally:
        if view is not None:
            view.release()
    if keep and cuts[0] < cuts[1]:
        from ._runs import trim_cuts  # only a trimmed preview pays for its import (start-up)

        return trim_cuts(content, cuts, max_lines, keep, utf8_length)
    return cuts
