"""Twin kernels of what a reader is shown: the views, ``text_fits`` and the
signal-line scan (see ``overspill._native`` for the conventions)."""

from __future__ import annotations

from codecs import getincrementaldecoder

from ._buffers import DIGEST_BYTES, DIGITS_ZEROED, LazyPattern
from ._buffers import VIEW_ANSI, VIEW_CR, BytesLike
from ._buffers import ESCAPE as _ESCAPE
from ._buffers import ESCAPE_BEFORE_CONTINUATION as _ESCAPE_BEFORE_CONTINUATION
from ._buffers import ESCAPE_RUN as _ESCAPE_RUN
from ._buffers import byte_view as _byte_view
from ._buffers import check_flags as _check_flags
from ._buffers import check_int as _check_int
from ._buffers import check_patterns as _check_patterns
from ._buffers import check_signal_state as _check_signal_state
from ._buffers import MIDLINE_NONE, MIDLINE_QUOTED, MIDLINE_SHOWN
from ._buffers import QUOTED_HEADER, QUOTED_HUNK, QUOTED_MESSAGE, QUOTED_OUTSIDE
from ._buffers import plain_str as _plain_str
from ._native_bytes import _is_continuation, _sequence_length
from ._native_bytes import copied_bad_chunk, page_bounds, utf8_length
from ._native_outline import _commit, _skip_escapes

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; the annotations are never evaluated
    from typing import Optional

__all__ = ["page_arguments", "page_text", "signal_lines", "text_fits", "view_bytes", "view_text"]

# A lone carriage return: one not ending its line as \r\n.  Only the lines
# holding one are redrawn, each found from its \r (built-in searches for its
# bounds): a pattern for the whole line, tried at every byte of the lines that
# have none, would scan each such line once per byte (quadratic in its length).
_LONE_CR = LazyPattern(rb"\r(?!\n)")
_utf8_decoder = getincrementaldecoder("utf-8")


def _has_lone_cr(data: bytes) -> bool:
    return data.count(b"\r") != data.count(b"\r\n")


def _collapse(data: bytes) -> bytes:
    size = len(data)
    pieces: list[bytes] = []
    done = 0  # data[:done] is settled; always a line's start (or the end of a line just redrawn)
    found = _LONE_CR.search(data)
    while found is not None:
        carriage = found.start()
        newline = data.rfind(b"\n", done, carriage)
        first = done if newline < 0 else newline + 1
        last = data.find(b"\n", carriage)
        last = size if last < 0 else last
        line = data[first:last]
        # A \r just before the \n is the line's ending and stays.
        ending = b"\r" if line.endswith(b"\r") and last < size else b""
        segments = (line[:-1] if ending else line).split(b"\r")
        pieces.append(data[done:first])
        pieces.append(next((segment for segment in reversed(segments) if segment), b"") + ending)
        done = last
        found = _LONE_CR.search(data, last)
    pieces.append(data[done:])
    return b"".join(pieces)


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
    if type(text) is not str:
        text = _plain_str(text)
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


# Bytes of escaped data removed in one re.sub call.  re.sub builds a list of
# every kept stretch before joining them (about 25 times the data for coloured
# log lines), so a block of the signal scan (8 MiB) is taken a window at a time.
_STRIP_WINDOW = 1 << 18


def _strip_escapes(data: bytes) -> bytes:
    """``data`` without its escape sequences, as ``_ESCAPE.sub(b"", data)``
    gives it, in memory bounded by ``_STRIP_WINDOW`` rather than by ``data``.

    No sequence crosses a newline and the pattern looks neither behind nor
    ahead of its match, so windows cut just after a newline give the same
    matches as the whole; a line longer than a window is walked match by match.
    """
    size = len(data)
    if size <= _STRIP_WINDOW:
        return _ESCAPE.sub(b"", data)
    sub = _ESCAPE.sub
    pieces: list[bytes] = []
    start = 0
    while start < size:
        end = start + _STRIP_WINDOW
        if end >= size:
            end = size
        else:
            newline = data.rfind(b"\n", start, end)
            if newline >= 0:
                end = newline + 1
            else:  # one line longer than a window: up to its end, one match at a time
                newline = data.find(b"\n", end)
                end = size if newline < 0 else newline + 1
                kept = bytearray()
                done = start
                for found in _ESCAPE.finditer(data, start, end):
                    kept += data[done : found.start()]
                    done = found.end()
                kept += data[done:end]
                pieces.append(kept)  # type: ignore[arg-type]  # join takes any bytes-like
                start = end
                continue
        pieces.append(sub(b"", data[start:end]))
        start = end
    return b"".join(pieces)


def _valid_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8, decoded a ``_STRIP_WINDOW`` at a time (no
    copy of a large block as a str)."""
    decoder = _utf8_decoder("strict")
    view = memoryview(data)
    try:
        for start in range(0, len(data), _STRIP_WINDOW):
            decoder.decode(view[start : start + _STRIP_WINDOW], False)
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    finally:
        view.release()
    return True


def _held(data: bytes, floor: int, end: int) -> int:
    """How many bytes at the end of ``data[floor:end]`` start a character that a
    continuation byte would go on with: a prefix of a well-formed UTF-8 sequence,
    as the decoder takes it (E0 needs A0-BF next, ED 80-9F, F0 90-BF, F4 80-8F;
    an encoded surrogate is no start); 0 when none does."""
    lead = end - 1
    while lead >= floor and lead > end - 4 and _is_continuation(data[lead]):
        lead -= 1
    if lead < floor:
        return 0
    byte = data[lead]
    have = end - lead
    if have >= _sequence_length(byte):  # (0 for a byte that starts no character)
        return 0
    if have >= 2:
        second = data[lead + 1]
        if ((byte == 0xE0 and second < 0xA0) or (byte == 0xED and second > 0x9F) or (byte == 0xF0 and second < 0x90)
                or (byte == 0xF4 and second > 0x8F)):
            return 0
    return have


def _split_characters(data: bytes) -> bytes:
    """``data`` with the start of a character that a removed escape sequence cuts
    off from its continuation bytes made one byte 0xFF (the compiled
    ``osp_split_character``).

    Decoded as stored, such a start is one U+FFFD (the ESC ends it) and the
    continuation bytes after the sequence are U+FFFD each; without the sequence
    they would decode together as a character that is not in the output.  The
    start is a prefix of a well-formed character at the end of the bytes before
    the sequence (``_held``); 0xFF is one U+FFFD too, and
    no byte goes on with it.  Only a run of sequences followed by a continuation
    byte is looked at, and only in text that is not valid UTF-8: a sequence's
    last byte is ASCII (an OSC string cut short by the data's end has no byte
    after it), which no continuation byte follows in valid text.

    Linear in ``data``, however long a run is: the search for a sequence
    followed by a continuation byte reads one sequence at each ESC, and the run
    that such a sequence ends is found by walking runs (one match each)
    forward from its line's start (no sequence crosses a newline) or from the
    last run found; text with no such sequence is never walked.
    """
    if data.isascii() or _valid_utf8(data):
        return data
    pieces: list[bytes] = []
    done = 0
    walked = 0  # no sequence starts before this offset and ends after it
    for last in _ESCAPE_BEFORE_CONTINUATION.finditer(data):
        start, end = last.span()  # the run ends where ``last`` does, before a continuation byte
        # The run starts at the first ESC from there whose run reaches ``end`` (every ESC starts a
        # sequence or ends an OSC string); with no ESC before ``last``, at ``last``.
        newline = data.rfind(b"\n", walked, start)
        escape = data.find(b"\x1b", walked if newline < 0 else newline + 1, start)
        while escape >= 0:
            reach = _ESCAPE_RUN.match(data, escape).end()
            if reach >= end:
                start = escape
                break
            escape = data.find(b"\x1b", reach, start)
        walked = end
        held = _held(data, done, start)
        if held:
            pieces.append(data[done : start - held])
            pieces.append(b"\xff")
            done = start
    if not pieces:
        return data
    pieces.append(data[done:])
    return b"".join(pieces)


def view_bytes(buffer: BytesLike, flags: int, /) -> bytes | None:
    """What a reader is shown of ``buffer``: escapes removed, redraws collapsed.

    With ``VIEW_ANSI`` (1), ANSI escape sequences (CSI, OSC, charset selection
    and the other ESC-introduced ones) are removed.  Then, with ``VIEW_CR``
    (2), each line (newlines are never removed) keeps only its last non-empty
    segment between lone carriage returns, as a terminal shows a redrawn
    progress line; ``\\r\\n`` is a line ending and stays.  The bytes either
    side of a removed sequence are never joined into a character: the start of
    one that the sequence cuts off from its continuation bytes is shown as one
    byte 0xFF (one U+FFFD, as the stored bytes decode; ``_split_characters``).
    Returns None when
    the view is ``buffer`` itself (no ESC, no lone ``\\r`` for the flags given).

    :raises TypeError: ``buffer`` is not a contiguous buffer, ``flags`` not an int.
    :raises ValueError: ``flags`` outside 0 to 3.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    with _byte_view(buffer) as view:
        flags = _check_flags(flags)
        data = view.tobytes()
    escapes = bool(flags & VIEW_ANSI) and b"\x1b" in data
    redraws = bool(flags & VIEW_CR) and _has_lone_cr(data)
    if not (escapes or redraws):
        return None
    if escapes:
        data = _strip_escapes(_split_characters(data))
    if flags & VIEW_CR and b"\r" in data:
        data = _collapse(data)
    return data


# ---------------------------------------------------------------- signals
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _start_boundary(text: bytes, end: int, start: int) -> bool:
    """Whether a match may begin at ``start > 0`` (its first byte a word byte)
    in a line ending at ``end``: not inside a word, except where a capitalised
    word starts in camel case: after a lowercase letter (``ValueError``) or,
    as an acronym ends, after an uppercase one when a lowercase letter follows
    (``HTTPError``)."""
    before, here = text[start - 1], text[start]
    if not (before in _WORD and here in _WORD):
        return True
    if here not in _UPPER:
        return False
    return before in _LOWER or (before in _UPPER and start + 1 < end and text[start + 1] in _LOWER)


def _is_key(text: bytes, start: int, stop: int, end: int) -> bool:
    """Whether the match ``text[start:stop]`` is a whole quoted object key:
    right after ``"`` and right before ``"``, spaces or tabs, then ``:``
    (``"summary":`` names a field; ``"level":"error"`` and ``"error: boom"``
    are no keys).  No newline is skipped, so a line's verdict is its own."""
    if start == 0 or text[start - 1] != 34 or stop >= end or text[stop] != 34:
        return False
    stop += 1
    while stop < end and text[stop] in b" \t":
        stop += 1
    return stop < end and text[stop] == 58


def _in_name(text: bytes, start: int, stop: int, end: int, start_word: bool, end_word: bool) -> bool:
    """Whether the match ``text[start:stop]`` is part of a name (a path, a file,
    an identifier, a hyphenated word, an object key) rather than a diagnostic:
    right after ``/``, ``\\``, ``_``, ``::`` or ``word-``, or right before
    ``_``, ``/``, ``(``, ``::``, ``.x`` or ``-x`` (x a word byte); such an edge
    counts only when the literal's byte there is a word byte.  Or the whole of
    a quoted object key (``_is_key``).  A newline is none of these, so a line
    gets the same verdict read alone or among others."""
    if _is_key(text, start, stop, end):
        return True
    if start_word and start > 0:
        before = text[start - 1]
        if before in b"/\\_":
            return True
        if start > 1 and ((before == 45 and text[start - 2] in _WORD) or (before == 58 and text[start - 2] == 58)):
            return True
    if end_word and stop < end:
        after = text[stop]
        if after in b"_/(":
            return True
        if stop + 1 < end and ((after in b".-" and text[stop + 1] in _WORD) or (after == 58 and text[stop + 1] == 58)):
            return True
    return False


def _matches_at(text: bytes, start: int, end: int, literal: bytes, anchored: bool) -> bool:
    """Whether the literal found at ``start``, in a line ending at ``end``, counts."""
    if anchored:
        return True
    stop = start + len(literal)
    start_word, end_word = literal[0] in _WORD, literal[-1] in _WORD
    if start_word and start > 0 and not _start_boundary(text, end, start):
        return False
    # At the end, no camel case: "ErrorHandler" is a name.
    if end_word and stop < end and text[stop] in _WORD:
        return False
    return not _in_name(text, start, stop, end, start_word, end_word)


# How an `ls -l` or `tar tv` entry starts: a mode string (a type, nine permissions, an optional ".",
# "+" or "@": SELinux, ACL, extended attributes), spaces, then ls's link count or tar's owner/group,
# spaces and a size.  What follows the mode string is required: "---------- " also opens failure
# banners ("---------- ERROR: build failed ----------").  (No newline: the match stays in its line.)
_MODE_STRING = LazyPattern(rb"[-dlcbpsD][r-][w-][xsS-][r-][w-][xsS-][r-][w-][xtT-][.+@]? +"
                           rb"(?:[0-9]|[^ /\n]+/[^ /\n]+ +[0-9])")


def _listing_entry(text: bytes, line_start: int) -> bool:
    """Whether the line of ``text`` (a view) at ``line_start`` starts as an
    ``ls -l`` or ``tar tv`` entry (a mode string, then a link count, or an
    owner/group and a size): a listing entry, never a signal line, whatever
    its name (a folder called ``Error``) or a symlink's target.
    ``osp_listing_entry`` in the compiled kernel."""
    return _MODE_STRING.match(text, line_start) is not None


def _scan_kinds(text: bytes, patterns: list[tuple[int, bool, bool, bytes]]) -> dict[int, int]:
    """``{line_start: lowest kind}`` for the lines of ``text`` (a view) that match.

    Each literal is found with ``bytes.find`` (in a lowercased copy when
    caseless) and checked only where found: a few C-speed passes instead of
    a regex tried at every byte.  A line's bounds are found once however many
    hits it holds, and the search leaves a claimed line at its end: a long
    line full of hits that do not count (``-Werror``) is read a bounded number
    of times, not once per hit.
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
        line_start, line_end = 0, -1  # the line of the last hit: [line_start, line_end), line_end its \n
        position = haystack.find(needle)
        while position >= 0:
            start = position + 1 if anchored else position
            if start > line_end:  # (hits come in order: otherwise the last hit's line, no \n between)
                line_start = text.rfind(b"\n", 0, start) + 1
                line_end = text.find(b"\n", start)
                line_end = size if line_end < 0 else line_end
            if line_start in claimed:
                # Every later hit on the line has the same verdict: on from its end (an anchored
                # needle's \n there starts the next line's hit).
                position = haystack.find(needle, max(position + 1, line_end))
                continue
            if not _matches_at(text, start, line_end, literal, anchored):
                position = haystack.find(needle, position + 1)
                continue
            claimed[line_start] = kind
            # One hit settles the line for this kind (lower kinds came first).
            position = haystack.find(needle, line_end)
    return claimed


# ---------------------------------------------------------------- quoted lines
# A hunk header "@@ -a[,b] +c[,d] @@...": its counts b and d (a missing one is 1), numbers of
# at most 18 digits (HUNK_COUNT_MAX).  A commit's header line: a letter, letters and spaces, ":".
_HUNK_HEADER = LazyPattern(rb"@@ -[0-9]{1,18}(?:,([0-9]{1,18}))? \+[0-9]{1,18}(?:,([0-9]{1,18}))? @@")
_COMMIT_HEADER_LINE = LazyPattern(rb"[A-Za-z][A-Za-z ]*:")


class _Quoted:
    """Which lines of a region are quoted text, never signal lines: a unified
    diff's hunks and git log's commit messages.  A ``+ raise ValueError(...)``
    in a hunk or ``failed before the fix`` in a message is text quoted from a
    file or a person, not a diagnostic of the run that printed it.

    * After a hunk header ``@@ -a[,b] +c[,d] @@`` (itself quoted: what follows
      its ``@@`` is a line of the file), the lines its counts cover are quoted:
      `` `` takes an old and a new line, ``-`` an old one, ``+`` a new one, and
      ``\\`` ("No newline at end of file") none, also after the last line.  Any
      other line, or one its counts no longer cover, ends the hunk.
    * After a commit line (``_native_outline._commit``'s: ``commit <7 or more
      hex digits>``, then the line's end, a space or ESC) come its header lines
      (``Author:``, ``Date:``, ``Merge:``: a letter, letters and spaces, ``:``)
      up to an empty line; then its message: lines starting with four spaces,
      which git puts before each, are quoted, empty lines stay in it, and any
      other line ends it.
    * A line that ends a hunk or a commit is then read as if outside both.
    * A line is read as a reader is shown it: a ``\r`` before its newline (a
      pty's line end) is its end, and its leading CSI escapes (git's
      ``--color=always``) are skipped (``_native_outline._skip_escapes``).
    * A region that starts inside a line (``MIDLINE_*``: a head, a scan block
      or a band cut it) gives that line's rest the verdict its start had, and
      never reads it as a line of its own (a hunk line's rest would end the
      hunk); one that ends inside a line leaves the next to start inside it.

    The state (``signal_lines``' ``state``) comes in from the caller (what the
    lines before the region left: ``text.SignalCollector`` walks a preview's
    head, then carries it from block to block); a hunk that began before what
    the caller walked is not known.  Lines are asked about in increasing
    order; the state is walked to each, once, skipping (outside a hunk and a
    commit) to the next line that could start one.  ``osp_quoted`` in the
    compiled kernel.
    """

    __slots__ = ("phase", "old", "new", "_midline", "_last", "_region", "_at", "_next_hunk", "_next_commit",
                 "_next_escape")

    def __init__(self, region: bytes, state: tuple[int, int, int, int]) -> None:
        self.phase = state[0]
        # The counts mean something in a hunk only.
        self.old, self.new = (state[1], state[2]) if self.phase == QUOTED_HUNK else (0, 0)
        self._midline = state[3]  # where the region starts: the phase and counts are after that line
        self._last = self._midline == MIDLINE_QUOTED  # the verdict of the last line walked
        self._region = region
        self._at = 0  # the next line to walk starts here
        # The next line starting "@@ -" / "commit " / ESC "["; stale below _at.
        self._next_hunk = self._next_commit = self._next_escape = -1

    def line(self, start: int, end: int) -> bool:
        """Whether the line ``region[start:end]`` is quoted; the state moves past it."""
        self._walk(start)
        if start == 0 and self._midline != MIDLINE_NONE:
            self._at = end + 1  # the rest of a line begun before the region
            return self._last
        if self._at > start:  # (asked twice: never, as the scan gives each line once)
            return False
        self._at = end + 1
        self._last = self._step(self._region[start:end])
        return self._last

    def finish(self) -> list[int]:
        """The state at the region's end, ``[phase, old, new, midline]``: every line
        walked (a final empty one, after a last newline, is the next region's first
        line); a region that ends inside a line leaves the next to start inside it."""
        region = self._region
        self._walk(len(region))
        if region.endswith(b"\n"):
            midline = MIDLINE_NONE
        else:
            midline = MIDLINE_QUOTED if self._last else MIDLINE_SHOWN
        return [self.phase, self.old, self.new, midline]

    def _search(self, needle: bytes) -> int:
        region, at = self._region, self._at
        if region.startswith(needle, at):
            return at
        found = region.find(b"\n" + needle, at)
        return len(region) if found < 0 else found + 1

    def _walk(self, to: int) -> None:
        region = self._region
        size = len(region)
        while self._at < to:
            if self._at == 0 and self._midline != MIDLINE_NONE:
                # The rest of a line begun before the region: its verdict is the one it came with.
                end = region.find(b"\n")
                self._at = size + 1 if end < 0 else end + 1
                continue
            if self.phase == QUOTED_OUTSIDE:
                # Only a hunk header or a commit line changes the state here: on to the next one.
                if self._next_hunk < self._at:
                    self._next_hunk = self._search(b"@@ -")
                if self._next_commit < self._at:
                    self._next_commit = self._search(b"commit ")
                if self._next_escape < self._at:
                    self._next_escape = self._search(b"\x1b[")
                lead = min(self._next_hunk, self._next_commit, self._next_escape)
                if lead > self._at:
                    self._last = False  # the lines skipped: outside, none quoted
                self._at = lead
                if self._at >= to:
                    self._at = to
                    return
            end = region.find(b"\n", self._at)
            end = size if end < 0 else end
            self._last = self._step(region[self._at : end])
            self._at = end + 1

    def _step(self, line: bytes) -> bool:
        if line.endswith(b"\r"):
            line = line[:-1]
        line = line[_skip_escapes(line):]
        phase = self.phase
        if phase == QUOTED_HUNK:
            first = line[:1]
            if first == b"\\":
                return True
            if first == b" " and self.old and self.new:
                self.old -= 1
                self.new -= 1
                return True
            if first == b"-" and self.old:
                self.old -= 1
                return True
            if first == b"+" and self.new:
                self.new -= 1
                return True
            # Past its counts, or a line no hunk holds (a malformed diff): the hunk has ended.
        elif phase == QUOTED_HEADER:
            if not line:
                self.phase = QUOTED_MESSAGE
                return False
            if _COMMIT_HEADER_LINE.match(line):
                return False
        elif phase == QUOTED_MESSAGE:
            if not line:
                return False
            if line.startswith(b"    "):
                return True
        self.phase, self.old, self.new = QUOTED_OUTSIDE, 0, 0
        if line.startswith(b"@@ -"):
            header = _HUNK_HEADER.match(line)
            if header is not None:
                old, new = header.groups()
                self.phase, self.old, self.new = QUOTED_HUNK, int(old or 1), int(new or 1)
                return True
        elif line.startswith(b"commit ") and _commit(line, False) is not None:
            self.phase = QUOTED_HEADER
        return False


# signal_lines(distinct=...): a line's key has every ASCII digit made "0" (DIGITS_ZEROED).
# Each hex digit of either case made "x", any other byte " ": a line with no 7 in a
# row has no hex digest nor UUID (an uppercase UUID's last group has 12), and needs
# no regex (osp_hex_row7 in the compiled kernel).
_HEX_MARKED = bytes(0x78 if chr(byte) in "0123456789abcdefABCDEF" else 0x20 for byte in range(256))


def _signal_key(line: bytes, flags: int) -> bytes:
    """``line`` with each number's bytes made ``0`` (every ASCII digit, every
    byte of a hex digest or UUID as ``_buffers.NUMBERS`` reads them), so that two
    lines with one key differ only in their numbers' digits, at the same
    places: near-duplicates.  With escape sequences viewed away and one in the
    line, only digits: a hex letter can end a sequence (a finer key, never a
    wrong one).  ``osp_signal_key`` in the compiled kernel."""
    if b"xxxxxxx" in line.translate(_HEX_MARKED) and not (flags & VIEW_ANSI and b"\x1b" in line):
        line = DIGEST_BYTES.sub(lambda digest: b"0" * len(digest[0]), line)
    return line.translate(DIGITS_ZEROED)


def signal_lines(buffer: BytesLike, start: int, end: int, patterns: tuple, flags: int, limit: int,
                 distinct: int = 0, state: Optional[list[int]] = None, /
                 ) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Lines of ``buffer[start:end]`` whose view matches a signal pattern.

    The region is split at newlines (its first and last lines may be parts of
    lines of the buffer); each line's view (``view_bytes`` with ``flags``) is
    matched against ``patterns``, tuples ``(kind, anchored, caseless,
    literal)``: ``literal`` (ASCII case-insensitively when ``caseless``) at the
    start of the view when ``anchored``, else anywhere as a word (at each edge
    that is a letter or digit: not inside a word but where a camel-case
    capital starts, ``_start_boundary``) and not inside a name (``_in_name``).
    A line whose view starts as an ``ls -l`` or ``tar tv`` entry is a listing entry
    and matches nothing (``_listing_entry``).
    A line's kind is the lowest kind it matches.  Returns ``(hits, totals)``: ``hits`` lists ``(line_start,
    line_end, kind)`` (offsets in ``buffer``, the newline excluded) in order,
    at most ``limit`` lines of each kind; ``totals[kind]`` counts every
    matching line of that kind (its length is the highest kind plus one).
    With ``distinct`` above 0, a line is listed only when no line listed
    before it has its kind and the same first ``distinct`` stored bytes once
    each number's bytes are made ``0`` (``_signal_key``: digits, hex digests, UUIDs;
    its repeats are counted, not listed), so a scan of many near-duplicates
    lists each distinct line once.

    The lines of a diff's hunks and of git log's commit messages (``_Quoted``)
    are quoted text: never listed nor counted.  ``state`` is where the region's
    first line stands among them: None (outside any, at a line's start), or a
    list ``[phase, old, new, midline]`` (``_buffers.QUOTED_*``, a hunk's counts
    still to come, ``_buffers.MIDLINE_*``: whether the region starts inside a
    line, and that line's verdict), which is then set to where the region's end
    stands, so that the next region of a scan goes on from it, also inside a
    line (with no patterns, that is all a call does).

    :raises TypeError: wrong argument types.
    :raises ValueError: ``start``/``end`` outside the buffer or reversed,
        malformed patterns, ``flags`` outside 0 to 3, ``limit`` or ``distinct``
        negative, a ``state`` number out of its range.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    with _byte_view(buffer) as view:
        start = _check_int(start, "start", 0)
        end = _check_int(end, "end", 0)
        checked = _check_patterns(patterns)
        flags = _check_flags(flags)
        limit = _check_int(limit, "limit", 0)
        distinct = _check_int(distinct, "distinct", 0)
        begun = _check_signal_state(state)
        kinds = max((kind for kind, _, _, _ in checked), default=-1) + 1
        totals = [0] * kinds
        if end > len(view) or start > end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {len(view)}")
        region = view[start:end].tobytes()
    if not region:
        return [], totals
    quoted = _Quoted(region, begun or (QUOTED_OUTSIDE, 0, 0, MIDLINE_NONE))
    if not checked:
        if state is not None:
            state[:] = quoted.finish()
        return [], totals
    shown = view_bytes(region, flags) if flags else None
    if shown is not None and len(shown) == len(region):
        shown = None  # the view only removes bytes: the same length is the same bytes
    text = region if shown is None else shown
    claimed = _scan_kinds(text, checked)
    hits: list[tuple[int, int, int]] = []
    kept = [0] * kinds
    stored = _LineMap(region, text) if shown is not None else None
    seen: set[tuple[int, bytes]] = set()
    for line_start in sorted(claimed):
        if _listing_entry(text, line_start):
            continue
        kind = claimed[line_start]
        if stored is None:
            first = line_start
            last = text.find(b"\n", line_start)
            if last < 0:
                last = len(text)
        else:
            first, last = stored.line_at(line_start)
        if quoted.line(first, last):
            continue
        totals[kind] += 1
        if kept[kind] >= limit:
            continue
        if distinct:
            key = (kind, _signal_key(region[first : min(last, first + distinct)], flags))
            if key in seen:
                continue
            seen.add(key)
        kept[kind] += 1
        hits.append((start + first, start + last, kind))
    if state is not None:
        state[:] = quoted.finish()
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


def view_text(buffer: BytesLike, flags: int, /) -> str:
    """What a reader is shown of ``buffer`` (``view_bytes``), decoded as UTF-8
    with ``errors="replace"``: a page's text in one call.

    :raises TypeError: ``buffer`` is not a contiguous buffer, ``flags`` not an int.
    :raises ValueError: ``flags`` outside 0 to 3.
    """
    shown = view_bytes(buffer, flags)
    if shown is not None:
        return str(shown, "utf-8", "replace")
    with _byte_view(buffer) as view:
        return str(view, "utf-8", "replace")


def page_arguments(low: int, high: int, offset: int, limit: int, flags: int, reach: int, checksums: object,
                   chunk: int) -> tuple[int, int, int, int, int, int, Optional[memoryview], int]:
    """``page_text``'s arguments after its buffer, each checked alone, in order (``read_page``
    takes the same): the numbers, and ``checksums`` as None or a flat byte view, which the
    caller releases.

    :raises TypeError: a number is not an int (a bool is not), ``checksums`` neither None
        nor a contiguous buffer.
    :raises ValueError: ``limit`` or ``chunk`` below 1, another negative, ``flags`` outside 0 to 3.
    """
    numbers = (_check_int(low, "low", 0), _check_int(high, "high", 0), _check_int(offset, "offset", 0),
               _check_int(limit, "limit", 1), _check_flags(flags), _check_int(reach, "reach", 0))
    if checksums is None:
        return (*numbers, None, _check_int(chunk, "chunk", 1))
    if isinstance(checksums, str):
        raise TypeError("checksums must be a bytes-like object, not str")
    sums = _byte_view(checksums)
    try:
        return (*numbers, sums, _check_int(chunk, "chunk", 1))
    except BaseException:
        sums.release()
        raise


def _maybe_split(window: bytes, edge: int, reach: int) -> bool:
    """``page_text``'s rule 3 for one edge (a position in ``window``, the window's copy)."""
    before = window[max(0, edge - reach) : edge]
    if b"\x1b" in before:
        return True
    # None of a sequence's bytes past its ESC is a newline, a BEL or an ESC (but an ST's or BEL's last byte).
    return reach > 0 and edge - reach >= 0 and b"\n" not in before and b"\x07" not in before


def page_text(buffer: BytesLike, low: int, high: int, offset: int, limit: int, flags: int, reach: int,
              checksums: Optional[BytesLike], chunk: int, /) -> int | tuple[int, int, Optional[str]]:
    """A verified page of a payload and its text, in one call: what a store's
    read does with ``verified_copy``, ``page_bounds`` and ``view_text``.

    ``buffer`` is the whole payload; ``[low, high)`` the window read around
    the page, ``offset`` (inside it) where the page was asked for.  The
    window is copied out of ``buffer`` first, and the steps below read the
    copy (``buffer[i]`` below is the copy's byte at ``i``): the page is made
    of the bytes checked, even when ``buffer`` is a shared map that another
    process changes meanwhile.

    1. Every checksum chunk under ``[low, high)`` is checked against
       ``checksums`` (as ``verified_copy`` with base 0: the copy's bytes
       inside the window, ``buffer``'s outside it; None: nothing to check):
       the index of the first that does not match is returned.
    2. ``(start, end) = page_bounds(buffer[low:high], offset - low, limit,
       high == len(buffer))``, made payload offsets.
    3. With ``VIEW_ANSI`` in ``flags``, an edge (``start`` or ``end``) may
       split an escape sequence when the ``reach`` bytes of the window before
       it hold an ESC, or (``reach`` > 0) are all inside the window and hold
       none of ESC, newline and BEL (a sequence longer than ``reach``, such as
       an OSC string, may be under way), or (with ``VIEW_CR`` too) the byte
       at ``end`` is in the window and an ESC: then ``(start, end, None)``
       (the caller moves the edges by its escape rule).  Otherwise ``(start,
       end, view_text(buffer[start:end], flags))``, but that with ``VIEW_CR``,
       when the byte at ``end`` is in the window and a newline, a ``\r``
       ending the page is that line's ending and stays, as in the view of the
       whole buffer: the text is ``view_text(buffer[start:end + 1],
       flags)`` less its final newline.

    :raises TypeError: ``buffer`` or ``checksums`` is not a contiguous buffer
        (or None, for ``checksums``), or a number is not an int.
    :raises ValueError: not ``low <= offset <= high <= len(buffer)`` with
        ``low < high``; ``limit`` or ``chunk`` below 1, another number
        negative, ``flags`` outside 0 to 3, or ``checksums`` too short for
        the chunks of the window.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    with _byte_view(buffer) as view:
        low, high, offset, limit, flags, reach, sums, chunk = page_arguments(low, high, offset, limit, flags, reach,
                                                                             checksums, chunk)
        size = len(view)
        try:
            if not low <= offset <= high <= size or low == high:
                raise ValueError(f"low, offset and high must satisfy low <= offset <= high <= {size} and low < high, "
                                 f"not {low}, {offset}, {high}")
            if sums is not None and 4 * ((high - 1) // chunk + 1) > len(sums):
                raise ValueError(f"{len(sums) // 4} checksums do not cover the chunks of [{low}, {high})")
            # The window out of the buffer first: the checks and the text below are of this copy.
            window = view[low:high].tobytes()
            if sums is not None:
                failed = copied_bad_chunk(view, 0, window, low, high, sums, chunk)
                if failed >= 0:
                    return failed
        finally:
            if sums is not None:
                sums.release()
        # Window positions from here.
        start, end = page_bounds(window, offset - low, limit, high == size)
        last = high - low
        text = None
        if flags & VIEW_ANSI and (any(_maybe_split(window, edge, reach) for edge in (start, end))
                                  or flags & VIEW_CR and end < last and window[end] == 0x1B):
            # (An ESC just past the end may stand between a line's \r and its \n: the caller's escape
            # rule looks past it.)
            pass
        elif flags & VIEW_CR and end < last and window[end] == 0x0A:
            # The page ends a line but for its \n: a \r before it is the line's ending, as in the whole
            # output's view (viewed alone, a final \r is a redraw). The view of the page and that \n,
            # less the \n, is the page's.
            text = view_text(window[start : end + 1], flags)[:-1]
        else:
            text = view_text(window[start:end], flags)
        return start + low, end + low, text
