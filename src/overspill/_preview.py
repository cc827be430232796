"""Previews of stored outputs: the head+tail the model is shown of an output
too large to return whole, and the signal lines of the part it omits.

One entry, ``stored_preview``: the store calls it once per truncated output,
after the payload is published, with a ``read(start, end)`` callable over the
stored copy.  The preview is cut from the output in memory when the caller
still holds it (``content``), else from verified windows of the stored copy
and, when that copy holds only the output's start, the output's true end kept
in memory (``kept_end``).  ``compose`` joins the preview, the marker and the
signal lines into what the model reads.

This module never touches a file or a socket: every byte comes through
``read``.  Every offset it returns is a byte offset in the output (for a
stored copy, the same as in the stored bytes).
"""

from __future__ import annotations

import contextlib
import errno

from . import _kernels
from ._buffers import VIEW_ANSI
from ._views import final_state, head_window, head_within, view_preview
from .errors import ResourceCorruptError, ResourceNotFoundError, StorageError
from .text import (
    SIGNAL_LINES,
    SIGNAL_PERCENT,
    SIGNAL_LINE_PERCENT,
    BOUNDARY_MARGIN,
    Preview,
    SignalCollector,
    line_slack,
    preview_from_cuts,
    truncation_marker,
    view_marker,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterator
    from typing import Optional

    from .text import Content, Reader, SignalPatterns

    Recut = Callable[[int, int], Preview]

__all__ = ["BOUNDARY_MARGIN", "compose", "stored_preview", "whole_view"]


def stored_preview(read: Reader, *, uri: str, stored: int, total: int, max_lines: int, max_bytes: int,
                   flags: int, signals: SignalPatterns, count: Optional[int] = None,
                   content: Optional[Content] = None,
                   kept_end: Optional[bytes] = None, first: Optional[Preview] = None,
                   release: Optional[Callable[[int, int], None]] = None,
                   outline: bool = False,
                   tokens: Optional[tuple[int, Callable[[str], int]]] = None,
                   runs: int = 0, mapped: Optional[Reader] = None) -> tuple[Preview, list[str]]:
    """The preview of a stored output, and the signal lines and outline of the part it omits.

    :param read: ``read(start, end)`` gives a verified view of ``[start, end)``
        of the stored copy, usable as a context manager.  Every byte the
        preview shows (head, tail, signal lines, outline) comes through it: a
        store passes copies checked after they were made (``Backend.read_copy``),
        so a byte another process changes in place is never shown.
    :param uri: the resource's URI, named by read-back errors.
    :param stored: bytes in the stored copy.
    :param total: bytes in the output (more than ``stored`` when it was capped).
    :param max_lines: the preview's line limit.
    :param max_bytes: the preview's byte limit.
    :param flags: the views shown (``text.view_flags``).
    :param signals: the compiled signal patterns; empty for none.
    :param count: the output's lines by the preview's rule (newlines + 1);
        needed when ``content`` is not given.
    :param content: the whole output, when the caller holds it: a ``str``
        that is its own view, or the stored form (bytes-like) to view.
    :param kept_end: the output's true end when the stored copy holds only
        its start (and ``content`` is not given).
    :param first: the preview of the full limits, when the caller already cut it.
    :param release: called with ``(start, end)`` after a signal or outline
        scan read that range (a hint that its pages are not needed soon).
    :param outline: add the outline of the omitted part (``overspill._outline``)
        when the output is of a kind that has one.
    :param tokens: ``(max_tokens, count)``: the preview (head, tail, signal
        lines and outline) also takes at most ``max_tokens`` tokens by
        ``count(text)``; its byte limit is lowered until it does (so an
        output within the byte and line limits may come back truncated).
    :param runs: the lines kept of a run of same-shape lines at a cut
        (``overspill.preview``'s ``runs``; 0 trims nothing); ``first`` was cut with it.
    :param mapped: as ``read``, a view that need not be a copy (the local
        backend's map, checked when made): where a view's cuts depend on
        whole lines, they are found through it, the bytes shown still
        through ``read`` (``_through_view``).  None: ``read``.
    :returns: the preview and the lines shown after the marker: the signal
        lines, then the outline (their lines and bytes come out of the
        preview's budget); none when the preview is not truncated, and none
        of a kind when the stored copy cannot be read for it.
    :raises StorageError: a window of the stored copy cannot be read back.
    :raises ResourceCorruptError: a window read back does not match its checksums.
    """
    recut = _cutter(read, uri, stored, total, count, flags, content, kept_end, runs, release, mapped)
    if tokens is None:
        shaped = recut(max_lines, max_bytes) if first is None else first
        return _shown(read, release, stored, shaped, recut, max_lines, max_bytes, flags, signals, outline)
    max_tokens, counted = tokens
    size = _token_bytes(recut, max_lines, max_bytes, max_tokens, counted)
    while True:
        shaped, lines = _shown(read, release, stored, recut(max_lines, size), recut, max_lines, size, flags,
                               signals, outline)
        used = counted(shaped.head) + counted(shaped.tail) + sum(counted(line) + 1 for line in lines)
        if used <= max_tokens or size == 1:
            return shaped, lines
        # Signal lines or the outline were denser in tokens than the cut was: narrower again.
        size = max(1, min(size - 1, size * max_tokens * 15 // (used * 16)))


def _token_bytes(recut: Recut, max_lines: int, max_bytes: int, max_tokens: int,
                 counted: Callable[[str], int]) -> int:
    """The greatest byte limit (at most ``max_bytes``, found by narrowing in
    proportion) whose preview takes at most ``max_tokens`` tokens."""
    size = max_bytes
    while size > 1:
        shaped = recut(max_lines, size)
        used = counted(shaped.head) + counted(shaped.tail)
        if used <= max_tokens:
            break
        size = max(1, min(size - 1, size * max_tokens * 15 // (used * 16)))
    return size


def _shown(read: Reader, release: Optional[Callable[[int, int], None]], stored: int, shaped: Preview,
           recut: Recut, max_lines: int, max_bytes: int, flags: int, signals: SignalPatterns,
           outline: bool) -> tuple[Preview, list[str]]:
    """``shaped`` (the preview within the limits), narrowed for the signal
    lines and the outline of what it omits, and those lines."""
    if not shaped.truncated:
        return shaped, []
    from . import _outline  # (with heapq) only a truncated output's preview needs it

    kind = _outline_kind(read, stored) if outline else None
    reserved = _outline.budget(max_lines, max_bytes) if kind else (0, 0)
    if not reserved[1]:
        return _signalled(read, release, stored, shaped, recut, max_lines, max_bytes, flags, signals)
    # The outline's share is set aside first: the signal lines and the
    # preview share what is left, and the outline then describes exactly the
    # part they omit.
    first, signal_lines, drawn = _outlined_within(read, release, stored, recut, max_lines, max_bytes, flags,
                                                  signals, kind, reserved)
    used = (len(drawn), sum(_outline.line_size(line) for line in drawn))
    unused = reserved[1] - used[1]
    if unused < _GIVE_BACK_MIN or min(first.tail_start, stored) - first.head_end > _GIVE_BACK_SCAN:
        return first, signal_lines + drawn
    # Most of the share went unused: it goes back to the head and tail.  The
    # omitted part is then smaller, so it is scanned again and its outline
    # drawn within what the first one took (and a little more: its counts
    # may have other digits); an outline that no longer fits is left out.
    again = (used[0] + (1 if used[0] else 0), used[1] + _REDRAW_MARGIN if used[1] else 0)
    if not again[1]:
        return _signalled(read, release, stored, recut(max_lines, max_bytes), recut, max_lines, max_bytes, flags,
                          signals)
    second, signal_lines, drawn = _outlined_within(read, release, stored, recut, max_lines, max_bytes, flags,
                                                   signals, kind, again)
    return second, signal_lines + drawn


# An outline's unused share (bytes) worth giving back to the head and tail,
# the most omitted bytes scanned a second time to do it, and the bytes a
# redrawn outline may take beyond the first one.
_GIVE_BACK_MIN = 64
_GIVE_BACK_SCAN = 64 << 20
_REDRAW_MARGIN = 24


def _signalled(read: Reader, release: Optional[Callable[[int, int], None]], stored: int, shaped: Preview,
               recut: Recut, max_lines: int, max_bytes: int, flags: int,
               signals: SignalPatterns) -> tuple[Preview, list[str]]:
    """``shaped`` with the signal lines of what it omits (when there are patterns)."""
    if not signals:
        return shaped, []
    return _with_signals(read, release, stored, shaped, recut, max_lines, max_bytes, signals, flags)


def _outlined_within(read: Reader, release: Optional[Callable[[int, int], None]], stored: int, recut: Recut,
                     max_lines: int, max_bytes: int, flags: int, signals: SignalPatterns, kind: str,
                     reserved: tuple[int, int]) -> tuple[Preview, list[str], list[str]]:
    """The preview and its signal lines within the limits less ``reserved``,
    and the outline of what they omit within ``reserved``."""
    lines, size = max_lines - reserved[0], max_bytes - reserved[1]
    shaped, signal_lines = _signalled(read, release, stored, recut(lines, size), recut, lines, size, flags,
                                      signals)
    return shaped, signal_lines, _outlined(read, release, stored, shaped, kind, reserved)


def _outline_kind(read: Reader, stored: int) -> Optional[str]:
    """What kind of outline the output gets, from the start of its stored copy."""
    from . import _outline

    try:
        with read(0, min(stored, _outline.DETECT_BYTES)) as view:
            return _outline.detect(bytes(view))
    except (OSError, ResourceNotFoundError):
        return None


def _outlined(read: Reader, release: Optional[Callable[[int, int], None]], stored: int, shaped: Preview,
              kind: str, reserved: tuple[int, int]) -> list[str]:
    """The outline of ``shaped``'s omitted part within ``reserved`` (lines, bytes)."""
    from . import _outline

    scanned = _releasing(read, release)
    collector = _outline.Outline(kind, scanned)
    try:
        collector.scan(shaped.head_end, min(shaped.tail_start, stored), stored)
        return collector.render(*reserved)
    except (OSError, ResourceNotFoundError):
        # A help, like the signal lines: not worth failing the call for.
        return []


def compose(shaped: Preview, signals: list[str], uri: str, size: int, lines: int,
            total: Optional[int] = None, note: Optional[str] = None, *, end_kept: bool = True) -> str:
    """What the model reads of a stored output: ``head``, the marker (with
    ``note``), the signal lines and ``tail`` (see ``ToolOutputStore.truncate``);
    ``end_kept`` false: a capped output's preview without its true end.
    A preview that is not truncated is a view that fits the limits of an
    output whose raw bytes do not: the view, then ``view_marker``."""
    # One blank line before the marker: a head that ends its last line (it does when whole lines
    # decide the cut) needs one newline more, one that does not, two; an empty head, none.
    head = shaped.head
    if not shaped.truncated:
        return whole_view(head, uri, size, lines, total)
    separator = "\n" if head.endswith("\n") else "\n\n"
    marker = truncation_marker(uri, size, lines, shaped.head_end, total, note=note, end_kept=end_kept)
    text = f"{head}{separator}{marker}" if head else marker
    if signals:
        text += "\n" + "\n".join(signals)
    return f"{text}\n\n{shaped.tail}" if shaped.tail else text


def whole_view(view: str, uri: str, size: int, lines: int, total: Optional[int] = None) -> str:
    """What the model reads of a stored output whose view (``view``) fits the
    limits its raw bytes do not: the view, then ``view_marker``'s marker."""
    if not view:
        return view_marker(uri, size, lines, total)
    separator = "\n" if view.endswith("\n") else "\n\n"  # one blank line before the marker
    return f"{view}{separator}{view_marker(uri, size, lines, total)}"


def _cutter(read: Reader, uri: str, stored: int, total: int, count: Optional[int], flags: int,
            content: Optional[Content], kept_end: Optional[bytes], runs: int,
            release: Optional[Callable[[int, int], None]] = None, mapped: Optional[Reader] = None) -> Recut:
    """``recut(max_lines, max_bytes)``: the preview within those limits, from the best source."""
    if isinstance(content, str):
        text = content

        def recut(lines: int, size: int) -> Preview:
            return preview_from_cuts(text, _kernels.preview_cuts(text, lines, size, line_slack(size), runs))
    elif content is not None:
        data = content

        def recut(lines: int, size: int) -> Preview:
            return view_preview(data, lines, size, flags, line_slack(size), runs)
    elif count is None:
        raise TypeError("count is needed when content is not given")
    elif kept_end is not None:
        end = kept_end

        def recut(lines: int, size: int) -> Preview:
            return _capped(read, uri, stored, end, total, count, lines, size, flags, runs)
    else:
        # A capped copy previewed without its true end (another process's view of it): bytes not
        # kept follow the copy, so a line it ends inside has no known end (``head_window``).
        held_to_end = total <= stored

        def recut(lines: int, size: int) -> Preview:
            return _payload(read, uri, stored, count, lines, size, flags, runs, release, mapped, held_to_end)
    return recut


def _releasing(read: Reader, release: Optional[Callable[[int, int], None]]) -> Reader:
    """``read``, giving each region back with ``release`` once scanned (a scan
    of a large omitted part must not keep its pages resident)."""
    if release is None:
        return read

    @contextlib.contextmanager
    def scanned(start: int, end: int) -> Iterator[memoryview]:
        with read(start, end) as view:
            yield view
        release(start, end)

    return scanned


@contextlib.contextmanager
def _reading_back(uri: str) -> Iterator[None]:
    """The one wording of a failed read-back: a ``StorageError`` naming the resource.  Bytes read
    back that fail their check stay ``ResourceCorruptError``, as in every other read: damage, not
    a read that failed."""
    try:
        yield
    except ResourceCorruptError:
        raise
    except (OSError, ResourceNotFoundError) as error:
        raise StorageError(getattr(error, "errno", None) or errno.EIO,
                           f"cannot read back {uri}: {error}") from None


def _filler(head: bytes, tail: bytes, lines: int, max_lines: int) -> bytes:
    """Newlines that stand for an omitted middle of an output of ``lines``
    lines (newlines + 1), whose end is ``tail``.

    The middle only matters through its newlines: enough of them that both
    line regions end exactly where they do in the output, or beyond its
    windows when they do.  Whole lines decide (a final newline starts no
    line), as in ``preview_cuts``.
    """
    final = tail.endswith(b"\n")
    if lines - final <= max_lines:
        return b""
    return b"\n" * max(0, max_lines + final - (_kernels.count_lines(head) - 1) - (_kernels.count_lines(tail) - 1))


def _payload(read: Reader, uri: str, size: int, lines: int, max_lines: int, max_bytes: int,
             flags: int, runs: int, release: Optional[Callable[[int, int], None]] = None,
             mapped: Optional[Reader] = None, held_to_end: bool = True) -> Preview:
    """The view preview of a just-published payload, from verified windows of it
    (``held_to_end`` false: the start of a capped output, as ``head_window`` has it).

    Only the first and last ``max_bytes`` (and a few) bytes decide a preview
    of text that is its own view there, so two windows settle it whatever the
    size: memory stays bounded and a remote backend sends only those bytes.
    When a window holds escapes or redraws, what the view shows depends on
    whole lines, so the cuts are found through the whole payload (``mapped``,
    else ``read``: through the local map, only the parts it reads; a long
    region read for its view is read a piece at a time and given back with
    ``release``), and the preview is served from copies of the windows they
    show (``_through_view``).
    """
    slack = line_slack(max_bytes)
    window = max_bytes + BOUNDARY_MARGIN
    with _reading_back(uri):
        if size <= 2 * window:
            with read(0, size) as whole:
                found = view_preview(whole, max_lines, max_bytes, flags, slack, runs)
            if held_to_end:
                return found
            return _short_of(found, head_window(_bytes_of(read), size, max_bytes, flags, window,
                                                held_to_end=False)[1], size)
        # The head's window reaches the end of the line the head may cut into (a \r on in it redraws it).
        head_end, unknown = head_window(_bytes_of(_releasing(read, release)), size, max_bytes, flags, window,
                                        held_to_end=held_to_end)
        if head_end > size - window:
            with read(0, size) as whole:
                return view_preview(whole, max_lines, max_bytes, flags, slack, runs, lines=lines, release=release)
        with read(0, head_end) as view:
            head = bytes(view)
        with read(size - window, size) as view:
            tail = bytes(view)
        if flags and (_kernels.view_bytes(head, flags) is not None
                      or _kernels.view_bytes(tail, flags) is not None
                      or flags & VIEW_ANSI and _may_be_in_a_sequence(read, size - window)):
            found = _through_view(read, mapped or read, size, lines, max_lines, max_bytes, flags, runs, release)
            return found if held_to_end else _short_of(found, unknown, size)
    return _windowed(head, tail, size, lines, max_lines, max_bytes, flags, runs, unknown)


def _short_of(found: Preview, unknown: int, size: int) -> Preview:
    """``found``, the preview of a capped copy of ``size`` bytes (the start of an output), showing
    nothing of the line that starts at ``unknown`` (-1: none), whose final state is not known
    (``head_window``, not ``held_to_end``): a view cut from the copy alone knows only the copy's
    end.  When all of the copy's view fits, that line, which runs to the copy's end, is its last:
    the preview is truncated at its start."""
    if unknown >= 0 and not found.truncated:
        return Preview(found.head[: found.head.rfind("\n") + 1], "", True, unknown, size)
    return head_within(found, unknown)


def _windowed(head: bytes, tail: bytes, size: int, lines: int, max_lines: int, max_bytes: int, flags: int,
              runs: int, unknown: int = -1) -> Preview:
    """The preview of an output of ``size`` bytes and ``lines`` lines (newlines + 1) cut from
    its first bytes (``head``) and its last (``tail``) alone, the middle standing as
    ``_filler``'s newlines."""
    filler = _filler(head, tail, lines, max_lines)
    # Trimmed runs stay within the windows: a cut moves only away from the gap.
    cut = view_preview(head + filler + tail, max_lines, max_bytes, flags, line_slack(max_bytes), runs)
    shift = size - (len(head) + len(filler) + len(tail))
    return head_within(Preview(cut.head, cut.tail, True, cut.head_end, cut.tail_start + shift), unknown)


def _through_view(read: Reader, mapped: Reader, size: int, lines: int, max_lines: int, max_bytes: int,
                  flags: int, runs: int, release: Optional[Callable[[int, int], None]]) -> Preview:
    """The preview of a payload whose windows hold escapes or redraws, shown only from checked copies.

    What such a view shows at its ends depends on whole lines, so its cuts are found through
    ``mapped``, a view of the whole payload read a region at a time (memory stays flat however
    long a line is), which is checked when made: a byte changed in place meanwhile could show in
    it.  The preview served is cut again from copies (``read``) of the two windows those cuts show,
    with a margin, and served only when it is the same: its every byte is then a checked one.
    When it is not (a byte changed during the first cut, or windows too narrow for the view), both
    are cut again, the windows wider, up to ``_COPY_REACH`` each; past that (an end shows more
    stored bytes than that, a line of redraws or escapes), the cut through ``mapped`` stands.
    """
    slack = line_slack(max_bytes)
    margin = max_bytes + BOUNDARY_MARGIN
    while True:
        with mapped(0, size) as whole:
            found = view_preview(whole, max_lines, max_bytes, flags, slack, runs, lines=lines, release=release)
        head_end = min(size, (found.head_end if found.truncated else size) + margin)
        tail_start = max(head_end, (found.tail_start if found.truncated else size) - margin)
        if head_end > _COPY_REACH or size - tail_start > _COPY_REACH:
            return found
        with read(0, head_end) as view:
            head = bytes(view)
        if tail_start == head_end:  # the windows meet: the copy is all of the payload
            with read(head_end, size) as view:
                copied = view_preview(head + view, max_lines, max_bytes, flags, slack, runs, lines=lines)
        else:
            with read(tail_start, size) as view:
                copied = _windowed(head, bytes(view), size, lines, max_lines, max_bytes, flags, runs)
        if copied == found:
            return copied
        if margin >= _COPY_REACH:
            return found
        margin = min(margin * 4, _COPY_REACH)


# The most stored bytes ``_through_view`` copies for each end of a preview.
_COPY_REACH = 16 << 20


def _bytes_of(read: Reader) -> Callable[[int, int], bytes]:
    """``read`` as a function giving the bytes ``[start, end)`` themselves."""
    def bytes_of(start: int, end: int) -> bytes:
        with read(start, end) as view:
            return bytes(view)

    return bytes_of


def _may_be_in_a_sequence(read: Reader, position: int) -> bool:
    """Whether an escape sequence begun before ``position`` may still be under way there: the
    bytes back to the line's start, within ``_SEQUENCE_LOOK_BACK``, hold an ESC.  A window that
    starts there looks like plain text (an unterminated OSC string's last bytes) when its view is
    empty.  A line longer than the look-back without an ESC in it is taken as text: the look is
    bounded (a whole read of a long line would cost its size)."""
    low = max(0, position - _SEQUENCE_LOOK_BACK)
    with read(low, position) as view:
        before = bytes(view)
    return b"\x1b" in before[before.rfind(b"\n") + 1 :]


# How far back ``_may_be_in_a_sequence`` looks for an ESC on the tail window's line.
_SEQUENCE_LOOK_BACK = 64 * 1024


def _capped(read: Reader, uri: str, stored: int, tail: bytes, total: int, lines: int, max_lines: int,
            max_bytes: int, flags: int, runs: int) -> Preview:
    """The preview of an output whose stored copy holds only its start.

    The head comes from the stored payload, the tail from the true end kept
    in memory; what lies between is known only by its size (and the output's
    line count), as for ``_payload``'s windows.  Offsets are the output's:
    ``head_end`` is also an offset in the stored copy.
    """
    with _reading_back(uri):
        # The head's window reaches the end of the line the head may cut into, or the stored copy's:
        # never a redraw that the copy's bytes after the window overwrite.  A line the copy ends
        # inside, with bytes not kept after it, may go on being redrawn there, and its last redraw
        # in the copy may be a state cut short (a capture's '...\r89233\r89'): when a \r was seen
        # on it, its final state is not known and the head shows nothing of it (``head_window``);
        # the kept end shows its final state when that state starts there (``_apart``).  Without
        # a \r it is a byte cut of its start, as a line longer than the copy is.
        end, unknown = head_window(_bytes_of(read), stored, max_bytes, flags, max_bytes + BOUNDARY_MARGIN,
                                   held_to_end=total - len(tail) <= stored)
        with read(0, min(end, stored)) as view:
            head = bytes(view)
    tail_start = total - len(tail)
    if tail_start < len(head):  # the true end and the head overlap: no gap at all
        tail, tail_start = tail[len(head) - tail_start :], len(head)
    gap = tail_start > len(head)
    filler = _filler(head, tail, lines, max_lines) if gap else b""
    slack = line_slack(max_bytes)
    cut = view_preview(head + filler + tail, max_lines, max_bytes, flags, slack, runs)
    if (cut.truncated and cut.head_end > len(head)) or (
            gap and (not cut.truncated or cut.tail_start < len(head) + len(filler))):
        # The cut lies across the gap (the preview wants more than the stored
        # start or the kept end holds): joined, the two would show lines the
        # command never wrote, so each is cut on its own.  With no gap (the
        # kept end is the whole output) a head reaching past the stored copy
        # would send the model to read where it holds nothing: the head is
        # cut from the stored copy alone.
        return _apart(head if unknown < 0 else head[:unknown], tail, tail_start, max_lines, max_bytes, flags, slack,
                      runs)
    shift = total - (len(head) + len(filler) + len(tail))
    return head_within(Preview(cut.head, cut.tail, cut.truncated, cut.head_end, cut.tail_start + shift), unknown)


def _apart(head: bytes, tail: bytes, tail_start: int, max_lines: int, max_bytes: int, flags: int,
           slack: int, runs: int) -> Preview:
    """A preview of a stored start (``head``) and a kept end (``tail``, at
    ``tail_start`` in the output) with a gap between them: whole lines of
    each, half the budget for the start, what it leaves for the end."""
    newline = head.rfind(b"\n")
    if newline >= 0:  # the stored copy ends inside a line: show up to its last full line, newline included
        head = head[: newline + 1]
    first = _bounded(head, max(1, max_lines // 2), max(1, max_bytes // 2), flags, slack, runs)
    head_end = first.head_end if first.truncated else len(head)
    # The kept end starts inside a line.  When the view collapses that line's redraws and its final
    # state (what it shows: the last redraw that shows anything) starts in the kept end, that state
    # is whole: the tail starts there (a line ending in a long run of \r progress keeps its last
    # words).  The kept end's start is taken as outside an escape sequence: only an OSC string can
    # hold a \r, and it would have to run on from the bytes not kept.  The kept end is in memory (at
    # most 1 MiB): the look passes any number of empty redraws (a spinner clearing the line after the
    # last message), as the view of the whole output does.
    _, final = final_state(memoryview(tail), tail, 0, flags, len(tail), None)
    newline = tail.find(b"\n")
    if final > 0:
        tail, tail_start = tail[final:], tail_start + final
    elif 0 <= newline < len(tail) - 1:  # what the line shows is cut, or unknown: from the next one
        tail, tail_start = tail[newline + 1 :], tail_start + newline + 1
    lines_left = max(1, max_lines - first.head.count("\n") - 1)
    bytes_left = max(1, max_bytes - len(first.head.encode("utf-8", "surrogatepass")))
    last = _bounded(tail, lines_left, bytes_left, flags, slack, runs)
    if last.truncated:
        return Preview(first.head, last.tail, True, head_end, tail_start + last.tail_start)
    return Preview(first.head, last.head, True, head_end, tail_start)


def _bounded(data: bytes, max_lines: int, max_bytes: int, flags: int, slack: int, runs: int) -> Preview:
    """A preview whose ``head`` and ``tail`` (all of ``data`` when not
    truncated) are each within the limits: the preview rule gives each about
    half of them, so twice the limits are tried first."""
    whole = view_preview(data, max_lines, max_bytes, flags, slack, runs)
    if not whole.truncated:
        return whole
    wider = view_preview(data, 2 * max_lines, 2 * max_bytes, flags, slack, runs)
    fits = all(part.count("\n") < max_lines and len(part.encode("utf-8", "surrogatepass")) <= max_bytes
               for part in (wider.head, wider.tail))
    return wider if wider.truncated and fits else whole


def _with_signals(read: Reader, release: Optional[Callable[[int, int], None]], stored: int,
                  shaped: Preview, recut: Recut, max_lines: int, max_bytes: int, signals: SignalPatterns,
                  flags: int) -> tuple[Preview, list[str]]:
    """The truncated preview with the signal lines of its omitted part, within the same limits.

    The omitted part is scanned once; when signal lines are found, the
    preview is cut again with their lines and bytes taken out of its budget,
    and only the two bands that this adds to the omitted part are scanned
    besides (or, when that cut omits less on a side, its omitted part
    afresh): every line shown points into, and counts only, the final
    omitted part.  When the stored bytes cannot be read back, the preview comes
    without signal lines.
    """

    scanned = _releasing(read, release)

    def scan(start: int, end: int) -> None:
        # Only the stored copy can be read (it may hold only the output's start).
        if start < min(end, stored):
            collector.scan(scanned, start, min(end, stored))

    collector = SignalCollector(signals, flags)
    try:
        scan(shaped.head_end, shaped.tail_start)
        block = collector.render(min(SIGNAL_LINES + 1, max_lines * SIGNAL_LINE_PERCENT // 100),
                                 max_bytes * SIGNAL_PERCENT // 100)
        if not block:
            return shaped, []
        used_lines = len(block)
        used_bytes = sum(len(line.encode("utf-8", "surrogateescape")) + 1 for line in block)
        narrower = recut(max(max_lines - used_lines, 1), max(max_bytes - used_bytes, 1))
        if narrower.head_end > shaped.head_end or narrower.tail_start < shaped.tail_start:
            # Trimmed runs make a cut not monotone in the limits: the narrower
            # cut shows lines the first one omitted, and lines counted there
            # would be pointed at (and counted) as omitted.  The collector
            # keeps no offset per line, so its final omitted part is scanned afresh.
            collector = SignalCollector(signals, flags)
            scan(narrower.head_end, narrower.tail_start)
        else:
            scan(narrower.head_end, shaped.head_end)
            scan(shaped.tail_start, narrower.tail_start)
    except (OSError, ResourceNotFoundError):
        # The output is stored and the preview stands; the signal lines are a
        # help, not worth failing (or unpublishing) the call for.
        return shaped, []
    return narrower, collector.render(used_lines, used_bytes)
