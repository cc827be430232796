"""Text rules built on the kernels: the head+tail preview, views, signal
lines, the marker and the content policy."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Optional, Union

from . import _kernels
from ._buffers import ESCAPE as ESCAPE_SEQUENCE
from ._buffers import TOKEN_ENDS, VIEW_ANSI, VIEW_CR, BytesLike, byte_view

__all__ = [
    "Preview",
    "SignalCollector",
    "compile_signals",
    "counted_lines",
    "escape_end",
    "encode_content",
    "human_lines",
    "last_newline",
    "line_slack",
    "next_calls",
    "preview",
    "preview_from_cuts",
    "shown_size",
    "shown_text",
    "stored_pieces",
    "truncation_marker",
    "view_flags",
    "view_marker",
    "view_preview",
]

Content = Union[str, bytes, bytearray, memoryview]

# Code points encoded (or bytes yielded) at a time by stored_pieces: each
# piece stays in cache from the write to the checksum.
_ENCODE_SLICE = 1 << 18

# Lone surrogates that surrogateescape cannot store; the policy stores U+FFFD.
_UNSTORABLE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


@dataclass(frozen=True)
class Preview:
    """A bounded head+tail view of some content.

    ``head`` is a prefix and ``tail`` a suffix of the content; they never
    overlap and never split a character.  ``head_end`` and ``tail_start`` are
    the cuts as byte offsets in the stored (UTF-8) form: the omitted part is
    ``[head_end, tail_start)``, empty when ``truncated`` is false.
    """

    head: str
    tail: str
    truncated: bool
    head_end: int
    tail_start: int


def _decode(data: memoryview) -> str:
    return str(data, "utf-8", "replace")


def preview(content: Content, max_lines: int, max_bytes: int, *, line_slack: int = 0) -> Preview:
    """The head+tail preview of ``content`` within ``max_lines`` and ``max_bytes``.

    Lines are whole lines here: a final newline ends the last line and starts
    no other.  Not truncated when the content has at most ``max_lines`` lines
    and at most ``max_bytes`` bytes: then ``head`` is all of it.  Otherwise,
    with more than ``max_lines`` lines, the head region is the first
    ``ceil(max_lines / 2)`` lines with their newlines (so the omitted part
    starts a line) and the tail region the last ``floor(max_lines / 2)`` (else
    both are the whole content); if the regions together exceed ``max_bytes``, the head
    keeps up to ``ceil(max_bytes / 2)`` bytes of its region and the tail up to
    ``floor(max_bytes / 2)`` of its own, a share one side cannot use going to
    the other.  Cuts fall on character boundaries; with ``line_slack``, a
    byte cut gives up at most that many bytes to land just after a newline
    (the head then ends with one and the tail starts a line).  The cost grows
    with the preview, not with the content.

    :param content: a ``str`` (head and tail are slices of it) or bytes-like
        content (head and tail are decoded with ``errors="replace"``),
        ``mmap`` included.
    :param max_lines: at least 1.
    :param max_bytes: at least 1, counted in UTF-8 bytes of the stored form.
    :param line_slack: at least 0 (the default keeps the plain byte cuts).
    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: a limit below 1 or a negative ``line_slack``.
    """
    return preview_from_cuts(content, _kernels.preview_cuts(content, max_lines, max_bytes, line_slack))


def preview_from_cuts(content: Content, cuts: tuple[int, int, int, int]) -> Preview:
    """The ``Preview`` of ``content`` for cuts that ``preview_cuts`` computed."""
    head_end, tail_start, head_index, tail_index = cuts
    truncated = head_end < tail_start
    if isinstance(content, str):
        if not truncated:
            return Preview(content, "", False, head_end, tail_start)
        return Preview(content[:head_index], content[tail_index:], True, head_end, tail_start)
    with byte_view(content) as view:
        if not truncated:
            return Preview(_decode(view), "", False, head_end, tail_start)
        return Preview(_decode(view[:head_index]), _decode(view[tail_index:]), True, head_end, tail_start)


def truncation_marker(uri: str, size: int, lines: int, resume_offset: int, total: Optional[int] = None, *,
                      note: Optional[str] = None) -> str:
    """The marker between head and tail: what was cut, and the exact next calls.

    Two lines (three with ``note``): the size and line count of the output
    (``lines`` as a person counts them: ``wc -l``, plus one for a final line
    without a newline; ``total`` is the output's size when the stored copy
    holds only its first ``size`` bytes) and the byte offset where the
    omitted part begins, then the ``read`` call that continues there and the
    ``grep`` call that searches the stored output.  Under 300 bytes without
    ``note`` for any size below a petabyte.
    """
    counted = f"{lines} line{'' if lines == 1 else 's'} in all"
    if total is not None and total > size:
        status = (f"... output truncated: the stored copy holds the first {size} of {total} bytes ({counted}); "
                  f"the omitted part starts at byte offset {resume_offset} ...\n")
    else:
        status = (f"... output truncated ({size} bytes, {counted}); the omitted part starts at byte "
                  f"offset {resume_offset} ...\n")
    if note:
        status += f"({note})\n"
    return status + next_calls(uri, resume_offset)


def next_calls(uri: str, resume_offset: int) -> str:
    """The marker's last line: the model's ``read`` call that continues at
    ``resume_offset`` and the ``grep`` call that searches the output (a
    front end that speaks another syntax replaces exactly this line)."""
    return f'next: read(resource="{uri}", offset={resume_offset}) or grep(resource="{uri}", pattern="...")'


def view_marker(uri: str, size: int, lines: int, total: Optional[int] = None) -> str:
    """The marker after an output shown whole as its view: the raw output was
    over the limits and is stored, but what the model is shown of it (``\r``
    redraws collapsed, escape sequences removed) fits them.  Two lines: what
    the view stands for (every stored byte; ``total`` when the stored copy
    holds only the first ``size``), then the calls that read the raw bytes
    from the start.
    """
    if total is not None and total > size:
        stored = f"the stored copy holds the first {size} of {total} bytes, {lines} lines in all"
    else:
        stored = f"{size} bytes, {lines} lines in all"
    return (f"... output stored ({stored}): the view above collapsed redraws and escape sequences and stands for "
            f"all {size} stored bytes ...\n"
            f'next: read(resource="{uri}", offset=0) or grep(resource="{uri}", pattern="...")')


def human_lines(content: Content) -> int:
    """Lines as a person counts them: ``wc -l``, plus one for a final line
    without a newline (``"1\\n2\\n"`` is 2 lines, ``""`` is 0)."""
    newlines = _kernels.count_lines(content) - 1
    if isinstance(content, str):
        return counted_lines(newlines, len(content), content[-1:] == "\n")
    with byte_view(content) as view:
        return counted_lines(newlines, len(view), len(view) > 0 and view[-1] == 10)


def counted_lines(newlines: int, size: int, ends_with_newline: bool) -> int:
    """The one line-count rule people use (``human_lines``), from an output's
    newlines, its size and whether its last byte is a newline: for outputs
    counted as they stream by."""
    return newlines + (1 if size and not ends_with_newline else 0)


def encode_content(content: Content) -> bytes:
    """The stored form of ``content``.

    Bytes-like content is stored exactly.  A ``str`` is encoded as UTF-8 with
    ``surrogateescape`` (so text decoded that way round-trips to its original
    bytes), and any other lone surrogate becomes U+FFFD: this never raises.

    :raises TypeError: ``content`` is neither ``str`` nor bytes-like.
    """
    if isinstance(content, str):
        try:
            return content.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return _UNSTORABLE_SURROGATE.sub("\ufffd", content).encode("utf-8", "surrogateescape")
    try:
        return bytes(memoryview(content))
    except TypeError:
        raise TypeError(f"content must be str or bytes-like, not {type(content).__name__}") from None


def stored_pieces(content: Content) -> Iterator[memoryview]:
    """The stored form of ``content`` as consecutive flat byte views.

    A ``str`` is encoded a slice at a time (each code point encodes on its
    own, so slices join into exactly ``encode_content(content)``), which
    never holds a second copy of a large text.

    :raises TypeError: ``content`` is neither ``str`` nor bytes-like.
    """
    if isinstance(content, str):
        ascii_form = _kernels.ascii_view(content)
        if ascii_form is not None:
            with ascii_form:
                # Slices keep what a write just copied in cache for the checksum.
                for start in range(0, len(ascii_form), _ENCODE_SLICE):
                    yield ascii_form[start : start + _ENCODE_SLICE]
            return
        for start in range(0, len(content), _ENCODE_SLICE):
            yield memoryview(encode_content(content[start : start + _ENCODE_SLICE]))
        return
    with byte_view(content) as view:
        yield view


# ---------------------------------------------------------------- views
_VIEW_BITS = {"ansi": VIEW_ANSI, "cr": VIEW_CR}
# How far back from a mid-line tail cut (or a page's edge) an escape sequence covering it may start.
_ESCAPE_REACH = 512
ESCAPE_REACH = _ESCAPE_REACH


def view_flags(views: Iterable[str]) -> int:
    """The kernel flags for view names (``"ansi"``, ``"cr"``).

    :raises ValueError: an unknown name.
    """
    flags = 0
    for name in views:
        if name not in _VIEW_BITS:
            raise ValueError(f"unknown view {name!r} (expected ansi or cr)")
        flags |= _VIEW_BITS[name]
    return flags


def line_slack(max_bytes: int) -> int:
    """What ``truncate`` lets a cut give up to land after a newline: 10% of a side's budget."""
    return (max_bytes // 2) // 10


def _viewed(data: BytesLike, flags: int) -> bytes:
    shown = _kernels.view_bytes(data, flags) if flags else None
    return bytes(data) if shown is None else shown


def shown_text(data: BytesLike, flags: int) -> str:
    """``data`` as the model is shown it: its view, decoded with ``errors="replace"``."""
    shown = _kernels.view_bytes(data, flags) if flags else None
    return str(data if shown is None else shown, "utf-8", "replace")


def _is_clean(view: memoryview, max_bytes: int, flags: int) -> bool:
    """Whether the parts of ``view`` a preview can show are their own view."""
    size = len(view)
    reach = max_bytes + 2
    if size <= 2 * reach:
        return _kernels.view_bytes(view, flags) is None
    return _kernels.view_bytes(view[:reach], flags) is None and _kernels.view_bytes(view[size - reach :], flags) is None


def _view_forward(view: memoryview, end: int, want: int, flags: int) -> tuple[bytes, int, bytes]:
    """The view of ``view[:stop]`` for the least line-aligned ``stop <= end``
    whose view exceeds ``want`` bytes (or ``stop == end``): (view, stop, raw)."""
    stop = min(end, want + 1)
    while True:
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


def _view_backward(view: memoryview, begin_limit: int, want: int, flags: int) -> tuple[bytes, int, bytes]:
    """The view of ``view[begin:]`` for the greatest line-aligned ``begin >=
    begin_limit`` whose view exceeds ``want`` bytes: (view, begin, raw)."""
    size = len(view)
    begin = max(begin_limit, size - want - 1)
    while True:
        line_begin = begin
        if begin > begin_limit:
            probe = view[begin - 1 :].tobytes()
            newline = probe.find(b"\n")
            if 0 <= newline < len(probe) - 1:
                line_begin = begin + newline
        raw = view[line_begin:].tobytes()
        shown = _viewed(raw, flags)
        if len(shown) > want or line_begin == begin_limit:
            return shown, line_begin, raw
        begin = max(begin_limit, size - 4 * (size - begin))


def _line_start(raw: bytes, lines: int) -> int:
    """Where line number ``lines`` (0-based) of ``raw`` starts."""
    position = 0
    for _ in range(lines):
        position = raw.index(b"\n", position) + 1
    return position


def _cut_head(view: memoryview, shown: bytes, stop: int, raw: bytes, share: int, slack: int, flags: int
              ) -> tuple[int, str]:
    """The head within ``share`` view bytes: (its stored end, its text)."""
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
    line = _line_start(raw, shown.count(b"\n", 0, line_view))
    if cut == line_view:
        return line, str(shown[:cut], "utf-8", "replace")
    # Mid-line: the line's view is no longer than its stored bytes, so taking
    # the remaining budget in stored bytes keeps the head within the share.
    remaining = share - line_view
    line_end = raw.find(b"\n", line)
    line_end = len(raw) if line_end < 0 else line_end
    end = _kernels.page_bounds(view, line, remaining, True)[1]
    if end - line > remaining:
        end = line
    end = min(end, line_end)
    if slack and line < end < line_end:
        end = _token_end_before(view, line, max(line, end - slack), end, flags)
    return end, str(shown[:line_view] + _viewed(view[line:end], flags), "utf-8", "replace")


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


def _past_escape(view: memoryview, line: int, cut: int) -> int:
    """``cut``, moved past an escape sequence that it would split."""
    low = max(line, cut - _ESCAPE_REACH)
    escape = view[low:cut].tobytes().rfind(b"\x1b")
    if escape < 0:
        return cut
    start = low + escape
    match = ESCAPE_SEQUENCE.match(view[start : cut + _ESCAPE_REACH].tobytes())
    end = start + (match.end() if match else 1)
    return max(cut, end)


def escape_end(view: memoryview, position: int) -> int:
    """``position``, moved to the end of an escape sequence that covers it (one
    that starts before it and ends after it), when that sequence starts within
    ``ESCAPE_REACH`` bytes before it and ends within ``view``; else ``position``."""
    end = _past_escape(view, 0, position)
    return position if end > len(view) else end


def _cut_tail(view: memoryview, shown: bytes, begin: int, raw: bytes, share: int, slack: int, flags: int
              ) -> tuple[int, str]:
    """The tail within ``share`` view bytes: (its stored start, its text)."""
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
    line = begin + _line_start(raw, shown.count(b"\n", 0, line_view))
    if cut == line_view:
        return line, str(shown[cut:], "utf-8", "replace")
    line_end_view = shown.find(b"\n", cut)
    line_end_view = size if line_end_view < 0 else line_end_view
    remaining = share - (size - line_end_view)
    line_end = raw.find(b"\n", line - begin)
    line_end = begin + (len(raw) if line_end < 0 else line_end)
    start = _kernels.page_bounds(view, max(line_end - remaining, line), 1, True)[0]
    if flags & VIEW_ANSI:
        start = min(_past_escape(view, line, start), line_end)
    if slack and line < start < line_end:
        start = _token_end_after(view, line, start, min(start + slack, line_end), flags)
    return start, str(_viewed(view[start:line_end], flags) + shown[line_end_view:], "utf-8", "replace")


def _shares(head_size: int, tail_size: int, max_bytes: int) -> tuple[int, int]:
    head_share, tail_share = max_bytes - max_bytes // 2, max_bytes // 2
    if head_size < head_share:
        return head_size, tail_share + head_share - head_size
    if tail_size < tail_share:
        return head_share + tail_share - tail_size, tail_size
    return head_share, tail_share


def shown_size(text: str) -> int:
    """UTF-8 bytes of ``text`` as the model gets it (an invalid byte shown as U+FFFD is 3)."""
    return len(text.encode("utf-8", "surrogatepass"))


def view_preview(data: BytesLike, max_lines: int, max_bytes: int, flags: int, slack: int = 0) -> Preview:
    """``preview`` of what the model is shown of ``data`` (stored bytes),
    within the limits as shown: each invalid byte becomes U+FFFD, three bytes
    of what the model reads, so output with invalid UTF-8 (Latin-1, binary)
    is cut with the largest smaller byte budget whose head and tail, as shown,
    fit ``max_bytes`` (and is truncated even when its stored bytes fit).

    The rest is ``_viewed_preview``'s.
    """
    found = _viewed_preview(data, max_lines, max_bytes, flags, slack)
    if "\ufffd" not in found.head and "\ufffd" not in found.tail:
        return found
    if shown_size(found.head) + shown_size(found.tail) <= max_bytes:
        return found
    # The shown size grows with the budget: the largest budget that fits, by bisection (a stored
    # byte shows as at most 3, so a third of max_bytes always fits but for a lone wide character).
    low, high, best = 1, max_bytes - 1, None
    while low <= high:
        budget = (low + high) // 2
        candidate = _viewed_preview(data, max_lines, budget, flags, slack * budget // max_bytes)
        if candidate.truncated and shown_size(candidate.head) + shown_size(candidate.tail) <= max_bytes:
            best, low = candidate, budget + 1
        else:
            high = budget - 1
    return best if best is not None else _viewed_preview(data, max_lines, 1, flags, 0)


def _viewed_preview(data: BytesLike, max_lines: int, max_bytes: int, flags: int, slack: int = 0) -> Preview:
    """``preview`` of what the model is shown of ``data`` (stored bytes), its limits counted in view bytes.

    The rules of ``preview`` applied to the view (``view_bytes`` with
    ``flags``), which has the same lines: the limits count the view's bytes,
    so output that fits once cleaned is not truncated (``head`` is then all
    of its view).  ``head_end`` and ``tail_start`` stay offsets in ``data``:
    the head shows ``data[:head_end]`` and the tail ``data[tail_start:]``.
    Text without ESC or lone ``\r`` near its ends gets exactly ``preview``'s
    cuts.  The cost grows with the stored bytes the preview shows.

    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: a limit below 1 or a negative ``slack``.
    """
    with byte_view(data) as view:
        cuts = _kernels.preview_cuts(view, max_lines, max_bytes, slack)
        if not flags or _is_clean(view, max_bytes, flags):
            found = preview_from_cuts(view, cuts)
            if flags and not found.truncated:
                return Preview(shown_text(view, flags), "", False, found.head_end, found.tail_start)
            return found
        return _dirty_preview(view, max_lines, max_bytes, flags, slack)


def _dirty_preview(view: memoryview, max_lines: int, max_bytes: int, flags: int, slack: int) -> Preview:
    size = len(view)
    # With no byte limit, the cuts are the line regions (equal when the lines fit).
    head_region, tail_region = _kernels.preview_cuts(view, max_lines, sys.maxsize)[:2]
    lines_over = head_region < tail_region
    if not lines_over:
        head_region, tail_region = size, 0
    head_view, head_stop, head_raw = _view_forward(view, head_region, max_bytes, flags)
    if not lines_over and head_stop == size and len(head_view) <= max_bytes:
        return Preview(str(head_view, "utf-8", "replace"), "", False, size, size)
    tail_view, tail_begin, tail_raw = _view_backward(view, tail_region, max_bytes, flags)
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


# ---------------------------------------------------------------- signals
#: Signal lines shown at most, and the share of max_bytes (in percent) they may take.
SIGNAL_LINES = 20
SIGNAL_PERCENT = 10
_SIGNAL_KINDS = {"error": 0, "warning": 1, "summary": 2}
# Characters of one signal line shown; the rest is cut.
_SIGNAL_CHARS = 240
# Matching lines remembered per kind (the rest are only counted).
_HITS_PER_KIND = 256
# Bytes scanned per block: lines longer than this are scanned in parts.
_SCAN_BLOCK = 8 << 20
_DIGITS = re.compile(r"\d+")
SignalPatterns = tuple[tuple[int, bool, bool, bytes], ...]
Reader = Callable[[int, int], AbstractContextManager[memoryview]]


def compile_signals(signals: Iterable[tuple[str, str]]) -> SignalPatterns:
    """Kernel patterns for ``(kind, pattern)`` pairs (see ``config.DEFAULT_SIGNALS``).

    A pattern without uppercase letters matches regardless of ASCII case; a
    leading ``^`` anchors it at the start of a line.

    :raises ValueError: an unknown kind, or a pattern that is empty or not ASCII.
    """
    compiled = []
    for kind, pattern in signals:
        if kind not in _SIGNAL_KINDS:
            raise ValueError(f"unknown signal kind {kind!r}")
        anchored = pattern.startswith("^")
        literal = pattern[1:] if anchored else pattern
        if not literal or not literal.isascii():
            raise ValueError(f"a signal pattern must be non-empty ASCII, not {pattern!r}")
        compiled.append((_SIGNAL_KINDS[kind], anchored, literal == literal.lower(), literal.encode("ascii")))
    return tuple(compiled)


class SignalCollector:
    """Lines of omitted parts that look like errors, warnings or summaries, and their offsets.

    ``scan`` reads a region once, a block at a time; ``render`` picks what
    fits: errors first, then warnings, then summaries, near-duplicates (the
    same text once digits are removed) shown once with a count.
    """

    def __init__(self, patterns: SignalPatterns, flags: int) -> None:
        self._patterns = patterns
        self._flags = flags
        self._kinds = max((kind for kind, _, _, _ in patterns), default=-1) + 1
        self.totals = [0] * self._kinds
        self._hits: dict[int, tuple[int, str]] = {}  # offset -> (kind, text)
        self._kept = [0] * self._kinds

    def scan(self, read: Reader, start: int, end: int) -> None:
        """Scan ``[start, end)`` of the stored bytes; ``read(a, b)`` gives a view of ``[a, b)``."""
        if not self._patterns:
            return
        position = start
        while position < end:
            stop = min(end, position + _SCAN_BLOCK)
            with read(position, stop) as block:
                length = len(block)
                if stop < end:
                    newline = last_newline(block)
                    if newline >= 0:
                        length = newline + 1
                limit = max(_HITS_PER_KIND - min(self._kept, default=0), 0)
                hits, totals = _kernels.signal_lines(block, 0, length, self._patterns, self._flags, limit)
                for index, count in enumerate(totals):
                    self.totals[index] += count
                for line_start, line_end, kind in hits:
                    if self._kept[kind] >= _HITS_PER_KIND or position + line_start in self._hits:
                        continue
                    self._kept[kind] += 1
                    raw = block[line_start : min(line_end, line_start + 4 * _SIGNAL_CHARS)]
                    text = shown_text(raw, self._flags).strip()
                    if len(text) > _SIGNAL_CHARS:
                        text = text[:_SIGNAL_CHARS] + "…"
                    self._hits[position + line_start] = (kind, text)
            position += max(length, 1)

    def render(self, max_lines: int, max_bytes: int) -> list[str]:
        """The block shown after the marker, within ``max_lines`` and ``max_bytes``
        (both including its header); empty when nothing fits or nothing was found."""
        groups: dict[tuple[int, str], list] = {}
        for offset in sorted(self._hits):
            kind, text = self._hits[offset]
            group = groups.setdefault((kind, _DIGITS.sub("", text)), [kind, offset, text, 0])
            group[3] += 1
        if not groups or max_lines < 2:
            return []
        header = _signal_header(self.totals)
        used = len(header.encode()) + 1
        lines = [header]
        for kind, offset, text, count in sorted(groups.values(), key=lambda group: (group[0], group[1])):
            line = f"{offset}:{text}" + (f" [×{count}]" if count > 1 else "")
            size = len(line.encode("utf-8", "surrogateescape")) + 1
            if len(lines) >= max_lines:
                break
            if used + size > max_bytes:
                continue  # a shorter line further on may still fit
            lines.append(line)
            used += size
        return lines if len(lines) > 1 else []


def _signal_header(totals: list[int]) -> str:
    """The signal block's first line: how many lines matched, and as what."""
    total = sum(totals)
    summaries = totals[2] if len(totals) > 2 else 0
    if not summaries:
        return ("[1 line of the omitted part looks like an error or a warning; by byte offset:]" if total == 1
                else f"[{total} lines of the omitted part look like errors or warnings; by byte offset:]")
    if summaries == total:
        return ("[1 line of the omitted part looks like a summary; by byte offset:]" if total == 1
                else f"[{total} lines of the omitted part look like summaries; by byte offset:]")
    return f"[{total} lines of the omitted part look like errors, warnings or summaries; by byte offset:]"


def last_newline(block: memoryview) -> int:
    """Index of the last newline in ``block``, or -1 (its last 64 KiB looked at first)."""
    tail = block[-(1 << 16) :].tobytes()
    found = tail.rfind(b"\n")
    if found >= 0:
        return len(block) - len(tail) + found
    found = block.tobytes().rfind(b"\n")
    return found
