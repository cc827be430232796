"""Text rules built on the kernels: the head+tail preview, what a view is
(``view_flags``, ``shown_text``), signal lines, the marker, the line count
and the content policy.  Previews of views are cut in ``_views``."""

from __future__ import annotations

from . import _kernels
from ._buffers import DIGITS_ZEROED, MIDLINE_NONE, NUMBERS, QUOTED_OUTSIDE, VIEW_ANSI, VIEW_CR, BytesLike, LazyPattern
from ._buffers import byte_view
from ._frozen import frozen
from ._signal_near import LONG_LINE, shown_from

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable, Iterable, Iterator
    from contextlib import AbstractContextManager
    from typing import Any, Optional, Union

    Content = Union[str, bytes, bytearray, memoryview]
    SignalPatterns = tuple[tuple[int, bool, bool, bytes], ...]
    Reader = Callable[[int, int], AbstractContextManager[memoryview]]

__all__ = [
    "MARKER_BYTES",
    "Preview",
    "RUN_KEEP",
    "SignalCollector",
    "as_stored",
    "compile_signals",
    "counted_lines",
    "encode_content",
    "fits_limits",
    "human_lines",
    "last_newline",
    "line_slack",
    "next_calls",
    "omitted_marker",
    "preview",
    "preview_from_cuts",
    "renamed_calls",
    "shown_size",
    "shown_text",
    "stored_pieces",
    "truncation_marker",
    "unstored_marker",
    "view_flags",
    "view_marker",
]

#: A marker is under this many bytes, for any size and URI (``truncation_marker``, issue 12 item 5): the
#: room a preview's text may take over ``max_bytes``, which bounds its head and tail only.
MARKER_BYTES = 300

# Bytes read around a window so that its character boundaries are decided
# exactly as over the whole payload (a boundary depends on 3 bytes each side).
BOUNDARY_MARGIN = 16

# Code points encoded (or bytes yielded) at a time by stored_pieces: each
# piece stays in cache from the write to the checksum.
_ENCODE_SLICE = 1 << 18

# Lone surrogates that surrogateescape cannot store; the policy stores U+FFFD.
_UNSTORABLE_SURROGATE = LazyPattern("[\ud800-\udc7f\udd00-\udfff]")


@frozen()
class Preview:
    """A bounded head+tail view of some content.

    ``head`` is a prefix and ``tail`` a suffix of the content; they never
    overlap and never split a character.  ``head_end`` and ``tail_start`` are
    the cuts as byte offsets in the stored (UTF-8) form: the omitted part is
    ``[head_end, tail_start)``, empty when ``truncated`` is false.
    """

    __slots__ = ("head", "tail", "truncated", "head_end", "tail_start")
    head: str
    tail: str
    truncated: bool
    head_end: int
    tail_start: int


def _decode(data: memoryview) -> str:
    return str(data, "utf-8", "replace")


def preview(content: Content, max_lines: int, max_bytes: int, *, line_slack: int = 0, runs: int = 0) -> Preview:
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
    (the head then ends with one and the tail starts a line).  With ``runs``,
    a head cut by the byte limit after a newline that ends in a run of more
    than ``2 * runs`` lines differing only in their numbers (and long hex
    digests, UUIDs too) keeps the run's first ``runs`` lines, and a tail cut so that
    starts with such a run keeps its last ``runs``; the rest of the run is
    omitted too (a side the line limit decides is never trimmed).  The cost
    grows with the preview, not with the content.

    :param content: a ``str`` (head and tail are slices of it) or bytes-like
        content (head and tail are decoded with ``errors="replace"``),
        ``mmap`` included.
    :param max_lines: at least 1.
    :param max_bytes: at least 1, counted in UTF-8 bytes of the stored form.
    :param line_slack: at least 0 (the default keeps the plain byte cuts).
    :param runs: at least 0: the lines kept of a run at a cut (the default,
        0, trims nothing; ``truncate`` passes ``RUN_KEEP`` unless
        ``tool_output.trim_runs`` is false).
    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: a limit below 1, a negative ``line_slack`` or ``runs``.
    """
    return preview_from_cuts(content, _kernels.preview_cuts(content, max_lines, max_bytes, line_slack, runs))


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


def lines_in_all(lines: int) -> str:
    """How every marker words an output's line count: ``"1 line in all"``,
    ``"2 lines in all"`` (one rule, so no marker says "1 lines")."""
    return f"{lines} line{'' if lines == 1 else 's'} in all"


def not_kept(stored: int, end: int, total: int) -> str:
    """What a preview says of the bytes ``[stored, end)`` of an output of ``total`` bytes whose
    stored copy ends at ``stored``: they were not kept (nor, when ``end`` is ``total``, the rest)."""
    bytes_lost = f"the rest, bytes {stored} to {total}, was" if end >= total else f"bytes {stored} to {end} were"
    return f"{bytes_lost} not kept: the stored copy ends at byte {stored}"


def truncation_marker(uri: str, size: int, lines: int, resume_offset: int, total: Optional[int] = None, *,
                      note: Optional[str] = None, end_kept: bool = True) -> str:
    """The marker between head and tail: what was cut, and the exact next calls.

    Two lines (three with ``note``): the size and line count of the output
    (``lines`` as a person counts them: ``wc -l``, plus one for a final line
    without a newline) and the byte offset where the omitted part begins,
    then the ``read`` call that continues there and the ``grep`` call that
    searches the stored output.  When the stored copy holds only the first
    ``size`` of the output's ``total`` bytes, the first line says so instead
    of naming the offset (the ``read`` call names it): with a stored size up
    to ``MAX_PAYLOAD_BYTES`` and a total up to 2**63, both do not fit the
    300 bytes (issue 12 item 5).  ``end_kept`` false says the preview has no
    true end after the head ("holds only the first").  When a capped copy is
    all in the head (``resume_offset`` at or past ``size``), one line that
    says the rest was not kept, and no next call (a read there would return
    nothing).  Under 300 bytes without ``note`` for any size a payload can
    have (``MAX_PAYLOAD_BYTES``), any total below 2**63 and any URI.
    """
    counted = lines_in_all(lines)
    if total is not None and total > size and resume_offset >= size:
        # The head already shows the whole stored copy: a read from there would return nothing
        # (issue 19 item 18), so the marker says the rest was not kept and offers no next call.
        return (f"... output truncated: the stored copy holds the first {size} of {total} bytes ({counted}), "
                f"all of it shown here; {not_kept(size, total, total)} ..." + (f"\n({note})" if note else ""))
    if total is not None and total > size:
        only = "" if end_kept else "only "
        status = (f"... output truncated: the stored copy holds {only}the first {size} of {total} bytes "
                  f"({counted}) ...\n")
    else:
        status = (f"... output truncated ({size} bytes, {counted}); the omitted part starts at byte "
                  f"offset {resume_offset} ...\n")
    if note:
        status += f"({note})\n"
    return status + next_calls(uri, resume_offset)


def omitted_marker(uri: str, resume_offset: int, tail_start: int, size: int, total: Optional[int] = None) -> str:
    """The marker of a preview from an offset (a running output's ``wait``):
    the bytes ``[resume_offset, tail_start)`` of an output of ``size`` stored
    bytes are omitted, then the ``read`` call that continues (none when
    ``resume_offset`` is at the stored copy's end: a read there returns
    nothing).  With ``total``, the stored copy holds only the first ``size``
    of the output's ``total`` bytes and ``tail_start`` is an offset in the
    output; past ``size`` the tail is the output's true end, and the bytes
    between were not kept.  Under 300 bytes for any size a payload can have
    and any total below 2**63 (issue 12 item 5).
    """
    if total is not None and tail_start > size:
        marker = (f"... bytes {resume_offset} to {tail_start} of {total} omitted (not kept past byte {size}; "
                  f"the true end follows) ...")
    else:
        marker = (f"... {tail_start - resume_offset} bytes omitted here: from byte offset {resume_offset} to "
                  f"{tail_start} of {size if total is None else total} ...")
    # (a read at the stored copy's end would return nothing)
    return marker + "\n" + next_calls(uri, resume_offset) if resume_offset < size else marker


def next_calls(uri: str, resume_offset: int, *, read: str = "read", grep: str = "grep") -> str:
    """The marker's last line: the model's ``read`` call that continues at
    ``resume_offset`` and the ``grep`` call that searches the output (a
    front end that speaks another syntax replaces exactly this line, one that
    serves the tools under other names with ``renamed_calls``).

    :param read: the name the paging tool is called by.
    :param grep: the name the search tool is called by.
    """
    return f'next: {read}(resource="{uri}", offset={resume_offset}) or {grep}(resource="{uri}", pattern="...")'


def renamed_calls(content: str, uri: str, *, read: str = "read", grep: str = "grep") -> str:
    """``content`` with each marker line for ``uri`` (``next_calls``'s, at
    whatever offset) naming the tools ``read`` and ``grep`` instead: for a
    front end that serves overspill's tools under other names (an upstream
    it wraps has a ``read`` of its own).  Unchanged under the default names."""
    if read == "read" and grep == "grep":
        return content
    import re  # only front ends that rename need it

    # The line's shape is next_calls's own (the offset its one variable part): no second copy of it here.
    before, after = next_calls(uri, 0).split("offset=0", 1)
    line = re.compile(re.escape(before + "offset=") + "([0-9]+)" + re.escape(after))
    return line.sub(lambda found: next_calls(uri, int(found.group(1)), read=read, grep=grep), content)


def view_marker(uri: str, size: int, lines: int, total: Optional[int] = None) -> str:
    """The marker after an output shown whole as its view: the raw output was
    over the limits and is stored, but what the model is shown of it (``\r``
    redraws collapsed, escape sequences removed) fits them.  Two lines: what
    the view stands for (every stored byte; ``total`` when the stored copy
    holds only the first ``size``), then the calls that read the raw bytes
    from the start.  Under 300 bytes for any size a payload can have, any
    total below 2**63 and any URI (issue 12 item 5).
    """
    if total is not None and total > size:
        stored = (f"... output stored ({size} of {total} bytes kept, {lines_in_all(lines)}): the view above "
                  f"collapsed redraws and escapes ...")
    else:
        stored = (f"... output stored ({size} bytes, {lines_in_all(lines)}): the view above collapsed redraws "
                  f"and escape sequences and stands for all of it ...")
    return stored + "\n" + next_calls(uri, 0)


def unstored_marker(total: int, lines: int, reason: str) -> str:
    """The marker after the preview of an output that could not be stored at
    all, naming no resource (none exists to read) and saying why (``reason``:
    one line).  Under 300 bytes for any total below 2**63 with the store's own
    reasons (the quota cannot hold even a record; running background outputs
    hold it), whatever their numbers (issue 12 item 5)."""
    return f"... output not stored ({total} bytes, {lines_in_all(lines)}): {reason} ..."


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


def as_stored(text: str) -> str:
    """``text`` as the store shows it back once stored: ``encode_content``'s rule (each lone surrogate
    ``surrogateescape`` cannot store a U+FFFD, each it can an invalid byte), decoded with
    ``errors="replace"``, so every lone surrogate is a U+FFFD; ``text`` itself when it holds none.  For
    a caller that renders text as the model will get it (a JSON encoder refuses a lone surrogate): this
    never raises."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _decode(memoryview(encode_content(text)))
    return text


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


# The lines truncate keeps of a run of same-shape lines at a byte cut
# (``preview``'s ``runs``), unless ``tool_output.trim_runs`` is false.
RUN_KEEP = 10


def line_slack(max_bytes: int) -> int:
    """What ``truncate`` lets a cut give up to land after a newline: 10% of a side's budget."""
    return (max_bytes // 2) // 10


def shown_text(data: BytesLike, flags: int) -> str:
    """``data`` as the model is shown it: its view, decoded with ``errors="replace"``."""
    return _kernels.view_text(data, flags)


def shown_size(text: str) -> int:
    """UTF-8 bytes of ``text`` as the model gets it (an invalid byte shown as U+FFFD is 3)."""
    return len(text.encode("utf-8", "surrogatepass"))


def within_limits(newlines: int, size: int, last_newline: bool, max_lines: int, max_bytes: int) -> bool:
    """Whether an output of ``size`` bytes holding ``newlines`` newlines (its
    last byte one when ``last_newline``) is within the limits as ``truncate``
    holds it: at most ``max_bytes``, and at most ``max_lines`` whole lines (a
    final newline starts no line), as ``preview_cuts`` counts them."""
    return size <= max_bytes and (newlines < max_lines or (newlines == max_lines and last_newline))


def fits_limits(text: str, limits: Any) -> bool:
    """Whether ``text`` is within ``limits`` (a ``Limits``: ``max_lines``,
    ``max_bytes``, ``max_tokens``) as the store holds it, so that a caller can
    show it without ``truncate``: at most ``max_bytes`` bytes as shown
    (``shown_size``, never fewer than the stored form's) and ``max_lines``
    lines (``within_limits``: a final newline starts no line, as ``truncate``
    counts them).  With a token bound, also at most as many bytes as tokens:
    a token stands for one byte at least, so such a text is known to fit
    without counting; any other is for ``truncate`` to count."""
    if len(text) > limits.max_bytes:  # every code point is one byte at least: not encoded
        return False
    size = shown_size(text)
    return within_limits(text.count("\n"), size, text.endswith("\n"), limits.max_lines, limits.max_bytes) \
        and (limits.max_tokens is None or size <= limits.max_tokens)


def held_text(data: BytesLike, flags: int, max_bytes: int,
              tokens: Optional[tuple[int, Callable[[str], int]]] = None) -> Optional[str]:
    """An output held whole within the limits as the model is shown it
    (``shown_text``), or None when invalid bytes, shown as U+FFFD (3 bytes
    each), take it over ``max_bytes``, or its tokens are over ``tokens``
    (``(max_tokens, count)``, ``_tokens.bound``'s form; None: no token bound):
    the limits hold for what is shown, and then it must be stored."""
    text = shown_text(data, flags)
    if "\ufffd" in text and shown_size(text) > max_bytes:
        return None
    if tokens is not None and tokens[1](text) > tokens[0]:
        return None
    return text


# ---------------------------------------------------------------- signals
#: Signal lines shown at most, and the share of max_bytes (in percent) they may take.
SIGNAL_LINES = 20
SIGNAL_PERCENT = 10
#: The share of max_lines (in percent) the signal block, its header included, may take.
#: Half: the head and the tail share the other half as they share any line limit, so
#: each keeps at least a quarter of the lines and the tail (where a build's or a test
#: run's final status is) is never given up for lines of the middle (red team A14:
#: bounded only by max_lines - 1, 19 signal lines at 20 left one head line and no
#: tail).  From 42 lines on the SIGNAL_LINES cap decides, so larger budgets are unchanged.
SIGNAL_LINE_PERCENT = 50
_SIGNAL_KINDS = {"error": 0, "warning": 1, "summary": 2}
# Characters of one signal line shown; the rest is cut.
_SIGNAL_CHARS = 240
# Distinct lines (near-duplicates counted as one) remembered per kind; later distinct
# ones are only counted in the totals.  Repeats of a remembered line never use this up.
_GROUPS_PER_KIND = 256
# Matching lines asked of the kernel per call and kind: the list it builds stays small.
_HITS_PER_CALL = 16384
# Matching lines grouped in all (each costs Python work); past it they are only counted,
# and the counts shown become lower bounds ("[×N+]").
_HITS_GROUPED = 1 << 16
# A signal line is shortened to fit the room left, not dropped, while this many bytes of its text fit.
_SHORTEST_SHOWN = 24
# A group's alias is a raw line with its digits made "0" (DIGITS_ZEROED: digits never change
# a line's view, nor where its numbers are, so lines with one alias have one group).
# Raw lines remembered as belonging to a group, so a repeat needs no view and no regex.
_ALIASES = 4096
# Bytes scanned per block: lines longer than this are scanned in parts.
_SCAN_BLOCK = 8 << 20
# Bytes before a scanned region walked at most for where it stands among diff hunks and commit
# messages (a preview's head, which is far smaller: the walk costs what showing it does).
_QUOTED_WALK = 8 << 20


# compile_signals' answers for the signal lists (tuples: the configuration's
# own, immutable) it has seen: a store is made with the same list as the last
# one nearly always, and compiling ~100 patterns cost more than the rest of
# the store's construction.  A few lists at most (emptied when full).
_COMPILED_SIGNALS: dict[tuple[tuple[str, str], ...], SignalPatterns] = {}
# The last list kept, by identity: the same tuple object as last time (the
# configuration's own) needs neither the type checks nor the hash.  A kept
# list holds only exact strs in tuples, so its text cannot have changed.
_LAST_SIGNALS: tuple[object, SignalPatterns] = ((), ())


def compile_signals(signals: Iterable[tuple[str, str]]) -> SignalPatterns:
    """Kernel patterns for ``(kind, pattern)`` pairs (see ``config.DEFAULT_SIGNALS``).

    A pattern without uppercase letters matches regardless of ASCII case; a
    leading ``^`` anchors it at the start of a line.

    :raises ValueError: an unknown kind, or a pattern that is empty or not ASCII.
    """
    global _LAST_SIGNALS
    last = _LAST_SIGNALS
    if last[0] is signals:
        return last[1]
    # Only a tuple of exact (str, str) pairs is looked up and kept: it hashes,
    # and no str subclass can compare equal to a different text.
    cacheable = type(signals) is tuple and all(
        type(pair) is tuple and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is str
        for pair in signals)
    if cacheable:
        known = _COMPILED_SIGNALS.get(signals)  # type: ignore[arg-type]
        if known is not None:
            _LAST_SIGNALS = (signals, known)
            return known
    compiled = []
    for kind, pattern in signals:
        if kind not in _SIGNAL_KINDS:
            raise ValueError(f"unknown signal kind {kind!r}")
        anchored = pattern.startswith("^")
        literal = pattern[1:] if anchored else pattern
        if not literal or not literal.isascii():
            raise ValueError(f"a signal pattern must be non-empty ASCII, not {pattern!r}")
        compiled.append((_SIGNAL_KINDS[kind], anchored, literal == literal.lower(), literal.encode("ascii")))
    result = tuple(compiled)
    if cacheable:
        if len(_COMPILED_SIGNALS) >= 8:
            _COMPILED_SIGNALS.clear()
        _COMPILED_SIGNALS[signals] = result
        _LAST_SIGNALS = (signals, result)
    return result


def _cut(text: str) -> str:
    """A signal line's text as shown: its first ``_SIGNAL_CHARS`` characters, "…" when cut."""
    return text[:_SIGNAL_CHARS] + "…" if len(text) > _SIGNAL_CHARS else text


class SignalCollector:
    """Lines of omitted parts that look like errors, warnings or summaries, and their offsets.

    ``scan`` reads a region once, a block at a time; ``render`` picks what
    fits: errors first, then warnings, then summaries, near-duplicates (the
    same text once numbers, long hex digests and UUIDs are removed: the
    same-shape rule's numbers, ``_buffers.NUMBERS``) shown once, at their first offset, with
    a count.  Repeats of a line already seen are counted however many there are;
    only distinct lines are bounded (``_GROUPS_PER_KIND`` per kind), so a distinct
    error after hundreds of repeats of another is still found.  Lines of diff
    hunks and commit messages are quoted text, not signals (the kernel's
    ``state``, carried from block to block and call to call).
    """

    def __init__(self, patterns: SignalPatterns, flags: int) -> None:
        self._patterns = patterns
        self._flags = flags
        self._kinds = max((kind for kind, _, _, _ in patterns), default=-1) + 1
        self.totals = [0] * self._kinds
        # (kind, text without numbers) -> [kind, first offset, text, count]
        self._groups: dict[tuple[int, str], list] = {}
        self._distinct = [0] * self._kinds
        self._aliases: dict[bytes, tuple[int, str]] = {}  # a raw line, digits made "0" -> its group's key
        self._grouped = 0  # matching lines grouped so far (``_HITS_GROUPED`` at most)
        # Where the scan stands among diff hunks and commit messages (signal_lines' state) at the
        # end of each region scanned: a region that starts where one ended (the band after the
        # omitted part) goes on from there; any other from the output's start (``_quoted_at``).
        self._quoted: dict[int, list[int]] = {}

    def scan(self, read: Reader, start: int, end: int) -> None:
        """Scan ``[start, end)`` of the stored bytes; ``read(a, b)`` gives a view of ``[a, b)``."""
        if not self._patterns:
            return
        state = self._quoted.pop(start, None) or self._quoted_at(read, start)
        position = start
        while position < end:
            stop = min(end, position + _SCAN_BLOCK)
            with read(position, stop) as block:
                length = len(block)
                if stop < end:
                    newline = last_newline(block)
                    if newline >= 0:
                        length = newline + 1
                self._scan_block(block, position, length, state)
            position += max(length, 1)
        self._quoted[position] = state

    def _quoted_at(self, read: Reader, start: int) -> list[int]:
        """Where ``start`` stands among diff hunks and commit messages: the lines before it
        walked, when they are few enough to be a preview's head (an omitted part's start, a
        band beside it), so that a hunk the head cuts is known in the omitted part, and a line
        the cut falls inside keeps in it the verdict of its start (``MIDLINE_*``); else (a
        scan from far in, which the preview never asks for) outside both."""
        state = [QUOTED_OUTSIDE, 0, 0, MIDLINE_NONE]
        if 0 < start <= _QUOTED_WALK:
            with read(0, start) as head:
                _kernels.signal_lines(head, 0, len(head), (), self._flags, 0, 0, state)
        return state

    def _signals(self, block: memoryview, offset: int, length: int, state: list[int], limit: int,
                 distinct: int = 0) -> tuple[list[tuple[int, int, int]], list[int], list[int]]:
        """The kernel's hits and totals for ``block[offset:length]``, from ``state`` (left
        at ``length``), and a copy of ``state`` as it was at ``offset``."""
        before = state.copy()
        hits, totals = _kernels.signal_lines(block, offset, length, self._patterns, self._flags, limit, distinct,
                                             state)
        return hits, totals, before

    def _resume(self, block: memoryview, offset: int, cut: int, before: list[int], state: list[int]) -> None:
        """Set ``state`` to where ``cut`` (a line start after ``offset``) stands, walked
        from ``before`` (where ``offset`` stood): a call cut short goes on from ``cut``."""
        state[:] = before
        _kernels.signal_lines(block, offset, cut, (), self._flags, 0, 0, state)

    def _scan_block(self, block: memoryview, position: int, length: int, state: list[int]) -> None:
        """Group the matching lines of ``block[:length]`` (at ``position`` in the stored bytes)
        and count them; the kernel is asked again from where a kind's list was cut short.
        ``state`` stands at the block's start, and is left at ``length``."""
        offset = 0
        while offset < length:
            limit = min(_HITS_PER_CALL, _HITS_GROUPED - self._grouped)
            if limit <= 0:
                self._scan_distinct(block, position, offset, length, state)
                return
            hits, totals, before = self._signals(block, offset, length, state, limit)
            returned = [0] * len(totals)
            for _, _, kind in hits:
                returned[kind] += 1
            cut_short = [kind for kind, count in enumerate(totals) if count > returned[kind]]
            if not cut_short:
                for index, count in enumerate(totals):
                    self.totals[index] += count
                self._group(block, position, hits)
                return
            # Every matching line that starts before the end of the last line returned for a
            # kind cut short was returned (lines do not overlap): those are complete.
            last_end = {kind: line_end for _, line_end, kind in hits if kind in cut_short}
            cut = min(last_end.values())
            complete = [hit for hit in hits if hit[0] < cut]
            for _, _, kind in complete:
                self.totals[kind] += 1
            self._group(block, position, complete)
            if cut + 1 < length:
                self._resume(block, offset, cut + 1, before, state)
            offset = cut + 1

    def _scan_distinct(self, block: memoryview, position: int, offset: int, length: int, state: list[int]) -> None:
        """Past ``_HITS_GROUPED``: count the matching lines of ``block[offset:length]`` and
        group only the first of each distinct line (the kernel lists those), so a line that
        starts a new group is still found while repeats cost no Python work; the counts
        shown then become lower bounds, as the grouped lines are fewer than the totals."""
        counted = False
        while offset < length:
            hits, totals, before = self._signals(block, offset, length, state, _HITS_PER_CALL, 4 * _SIGNAL_CHARS)
            if not counted:  # a call counts every line of the rest of the block
                for index, count in enumerate(totals):
                    self.totals[index] += count
                counted = True
            # A kind with its _GROUPS_PER_KIND groups starts no more: its list being full
            # hides nothing, and its lines need no grouping.
            open_kinds = [kind < len(self._distinct) and self._distinct[kind] < _GROUPS_PER_KIND
                          for kind in range(len(totals))]
            returned = [0] * len(totals)
            last_end = [0] * len(totals)
            for _, line_end, kind in hits:
                returned[kind] += 1
                last_end[kind] = line_end
            cut_short = [kind for kind, count in enumerate(returned) if count >= _HITS_PER_CALL and open_kinds[kind]]
            cut = min((last_end[kind] for kind in cut_short), default=length)
            # Lines before the cut were all listed (first occurrences within this call);
            # the next call lists distinct lines again from the cut on.
            self._group(block, position, [hit for hit in hits if hit[0] < cut and open_kinds[hit[2]]])
            if not cut_short:
                return
            if cut + 1 < length:
                self._resume(block, offset, cut + 1, before, state)
            offset = cut + 1

    def _group(self, block: memoryview, position: int, hits: list[tuple[int, int, int]]) -> None:
        groups = self._groups
        aliases = self._aliases
        for line_start, line_end, kind in hits:
            raw = bytes(block[line_start : min(line_end, line_start + 4 * _SIGNAL_CHARS)])
            alias = raw.translate(DIGITS_ZEROED)
            key = aliases.get(alias)
            text = None
            if key is None:
                # The key is taken before the cut: a number crossing it would leave a part
                # that is no number (a few hex digits of a UUID), and split a group.
                view = self._view(raw)
                key = (kind, NUMBERS.sub("", view))
                text = _cut(view)
                if len(aliases) < _ALIASES:
                    aliases[alias] = key
            self._grouped += 1
            offset = position + line_start
            group = groups.get(key)
            if group is not None:
                group[3] += 1
                if offset < group[1]:  # a band scanned later may lie before it
                    group[1:3] = self._first(block, position, line_start, line_end, kind, raw, text)
                continue
            if self._distinct[kind] >= _GROUPS_PER_KIND:
                continue
            self._distinct[kind] += 1
            groups[key] = [kind, *self._first(block, position, line_start, line_end, kind, raw, text), 1]

    def _first(self, block: memoryview, position: int, line_start: int, line_end: int, kind: int, raw: bytes,
               text: Optional[str]) -> tuple[int, str]:
        """The offset and text a group's first line is shown by: a line longer
        than ``LONG_LINE`` from near its match (found again only here, once per
        group at most, as grouping goes by the line's start)."""
        if line_end - line_start > LONG_LINE:
            near = shown_from(block, line_start, line_end, kind, self._patterns, self._flags)
            if near != line_start:
                return position + near, self._shown(bytes(block[near : min(line_end, near + 4 * _SIGNAL_CHARS)]))
        return position + line_start, text if text is not None else self._shown(raw)

    def _shown(self, raw: bytes) -> str:
        """A matching line as the model is shown it: its view, stripped, cut at ``_SIGNAL_CHARS``."""
        return _cut(self._view(raw))

    def _view(self, raw: bytes) -> str:
        """A matching line's view, stripped: what its group key is taken from."""
        return shown_text(raw, self._flags).strip()

    def render(self, max_lines: int, max_bytes: int) -> list[str]:
        """The block shown after the marker, within ``max_lines`` and ``max_bytes``
        (both including its header); empty when nothing fits or nothing was found.
        A line longer than the room left is shortened (ending in "…") while
        ``_SHORTEST_SHOWN`` bytes of its text fit: a small budget keeps, in part,
        what a larger one shows whole."""
        if not self._groups or max_lines < 2:
            return []
        # Past _HITS_GROUPED, repeats are no longer counted into their groups.
        more = "+" if self._grouped >= _HITS_GROUPED and sum(self.totals) > self._grouped else ""
        ordered = sorted(self._groups.values(), key=lambda group: (group[0], group[1]))
        header = _signal_header(self.totals)
        _, offset, text, count = ordered[0]
        if _size(header) + _size(f"{offset}:{text}{_count_suffix(count, more)}") > max_bytes:
            header = _signal_header(self.totals, short=True)  # more room for the first line
        used = _size(header)
        lines = [header]
        for _, offset, text, count in ordered:
            if len(lines) >= max_lines:
                break
            prefix = f"{offset}:"
            suffix = _count_suffix(count, more)
            line = prefix + text + suffix
            if used + _size(line) > max_bytes:
                room = max_bytes - used - _size(prefix + suffix + "…")
                shortened = _shortened(text, room)
                if shortened is None:
                    continue  # a shorter line further on may still fit
                line = prefix + shortened + "…" + suffix
            lines.append(line)
            used += _size(line)
        return lines if len(lines) > 1 else []


def _count_suffix(count: int, more: str) -> str:
    """How many lines a shown signal line stands for, after it (nothing for one)."""
    return f" [×{count}{more}]" if count > 1 else ""


def _size(line: str) -> int:
    """The bytes ``line`` takes in the preview, its newline included."""
    return len(line.encode("utf-8", "surrogateescape")) + 1


def _shortened(text: str, room: int) -> Optional[str]:
    """The longest start of ``text`` (whole characters, trailing space removed) within
    ``room`` UTF-8 bytes, or None when fewer than ``_SHORTEST_SHOWN`` bytes fit."""
    if room < _SHORTEST_SHOWN:
        return None
    cut = text[:room]  # a character takes at least one byte
    while len(cut.encode("utf-8", "surrogateescape")) > room:
        cut = cut[:-1]
    cut = cut.rstrip().rstrip("…")
    return cut if len(cut.encode("utf-8", "surrogateescape")) >= _SHORTEST_SHOWN else None


def _signal_header(totals: list[int], *, short: bool = False) -> str:
    """The signal block's first line: how many lines matched, and as what (``short``:
    in fewer words, for a budget the usual line would take most of)."""
    total = sum(totals)
    summaries = totals[2] if len(totals) > 2 else 0
    if short:
        what = ("summary" if summaries == total else "error/warning/summary" if summaries
                else "error/warning")
        return f"[{total} {what} line{'' if total == 1 else 's'} omitted, by offset:]"
    if not summaries:
        return ("[1 line of the omitted part looks like an error or a warning; by byte offset:]" if total == 1
                else f"[{total} lines of the omitted part look like errors or warnings; by byte offset:]")
    if summaries == total:
        return ("[1 line of the omitted part looks like a summary; by byte offset:]" if total == 1
                else f"[{total} lines of the omitted part look like summaries; by byte offset:]")
    return f"[{total} lines of the omitted part look like errors, warnings or summaries; by byte offset:]"


def cut_character(end: BytesLike) -> int:
    """How many bytes at the end of ``end`` (the last bytes of an output that
    may go on: a running command's sealed prefix) are the start of a UTF-8
    character whose other bytes are not there yet: a lead byte followed by
    fewer continuation bytes than it announces; 0 when none is (whatever
    follows, the text up to here is whole characters).  Its last 4 bytes decide."""
    data = bytes(end[-4:])
    for back in range(1, len(data) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead (or an ASCII byte) of the last sequence
            needed = 2 if 0xC2 <= byte <= 0xDF else 3 if 0xE0 <= byte <= 0xEF else 4 if 0xF0 <= byte <= 0xF4 else 1
            return back if needed > back else 0
    return 0


def last_newline(block: memoryview) -> int:
    """Index of the last newline in ``block``, or -1 (looked for from its end, 64 KiB at
    first, then in windows twice as wide: never a copy of the whole block)."""
    end, width = len(block), 1 << 16
    while end > 0:
        low = max(end - width, 0)
        found = block[low:end].tobytes().rfind(b"\n")
        if found >= 0:
            return low + found
        end, width = low, min(width * 2, 1 << 23)
    return -1


def __getattr__(name: str) -> object:
    # The type aliases (``Content``, ``Reader``, ``SignalPatterns``) are for
    # annotations; built with typing only when something asks for one at run time.
    if name in ("Content", "Reader", "SignalPatterns"):
        from collections.abc import Callable
        from contextlib import AbstractContextManager
        from typing import Union

        aliases = {"Content": Union[str, bytes, bytearray, memoryview],
                   "SignalPatterns": tuple[tuple[int, bool, bool, bytes], ...],
                   "Reader": Callable[[int, int], AbstractContextManager[memoryview]]}
        globals().update(aliases)
        return aliases[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
