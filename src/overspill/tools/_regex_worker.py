"""The matching rules of grep, and the worker process that applies them.

Python's ``re`` has no time bound and holds the GIL while it matches, so one
pattern such as ``(a+)+$`` can stall a process for ever.  ``_regex`` runs
these functions in a worker (this file run as a script, ``python -I -S``),
which it kills when a search runs out of time.  Standard library only: the
worker imports nothing of overspill but ``_html`` (the file beside this one,
itself standard library only), for the other work that needs a time bound:
webfetch's HTML conversion (``html.parser`` is quadratic on some malformed
pages, such as many unclosed ``<a `` tags).

Protocol, over the worker's stdin and stdout: a request is ``_REQUEST``
(operation, ``re`` flags, CPU seconds allowed, pattern length, payload
length), the pattern (UTF-8, ``surrogatepass``) and the payload; the answer
is ``_ANSWER`` (status, body length) and the body: for ``_OK`` the indices
of the matching lines (8-byte unsigned, native order), or for a conversion
the converted text (UTF-8); for ``_FAILED`` a one-line message.  A
conversion's pattern is empty and its flags the most characters of output it
builds (0: no bound, ``_html.convert_page``'s ``limit``); its answer is
``_CUT`` rather than ``_OK`` when it stopped there (the text is its start).
"""

from __future__ import annotations

import itertools
import re
import struct
import sys
import types
from array import array
from pathlib import Path

#: The payload is lines, each ended by ``\n`` (the last may lack it), searched
#: one at a time as a file's lines are: decoded with ``errors="replace"``, the
#: ``\n`` removed; a line ending in ``\r`` (a CRLF file's) matches when it does
#: or the line without that ``\r`` does, so ``end$`` finds ``end\r\n``.  (The
#: rg search gets each ``$`` as ``(?:\r?$)``, the same rule.)
LINES = 1
#: The payload is a block of a stored output's view (decoded with
#: ``surrogateescape``, ``re.MULTILINE``), whose lines match as ``LINES``' do:
#: each searched alone, without its ``\n`` (a final ``\r`` optional), so that no
#: match holds a ``\n`` and ``\A``, ``\Z`` hold at each line's ends.  A pattern
#: that cannot tell the block from its lines is searched over the whole block
#: at once (``lines_with_a_match``).
TEXT = 2
#: The payload is ``_PIECE`` (three lengths and whether the piece ends its line) and a piece of
#: one line's view longer than a block: the text before the search starts (context for
#: look-behinds), the part in which this piece's matches start, and the part after it (context
#: for look-aheads).  The answer is ``[0]`` when a match starts in that part (``piece_matches``).
PIECE = 5
#: The payload is ``_AFTER`` (two lengths in bytes, ``skip`` at most ``seen``) and a block as
#: ``TEXT``'s whose first line a reader has seen up to ``seen`` bytes: its first ``skip`` bytes are
#: the text before a search that starts inside a line (context only: no match starts in them, ``^``
#: and ``\A`` do not match at their end, a look-behind sees them).  Its first line matches when a
#: match starts past ``skip`` and is new to that reader: it starts at ``seen`` or later, or the line
#: cut at ``seen`` has no such match (it ends past ``seen``, or a look-ahead reads past it), so one
#: wholly in what was seen does not; the other lines as ``TEXT``'s (``lines_with_a_match_after``).
TEXT_AFTER = 6
#: The payload is an HTML page (UTF-8), answered with its Markdown (``_html.convert_page``).
MARKDOWN = 3
#: The payload is an HTML page (UTF-8), answered with its plain text (``_html.convert_page``).
PLAIN_TEXT = 4

_REQUEST = struct.Struct("<BIdIQ")
_PIECE = struct.Struct("<QQQB")
_AFTER = struct.Struct("<QQ")
_ANSWER = struct.Struct("<BQ")
_OK = 0
_FAILED = 1
_CUT = 2
# Seconds of CPU beyond a request's allowance before the kernel ends a worker
# whose parent is gone (the parent's own clock ends it first).
_CPU_GRACE = 5


def matching_lines(regex: re.Pattern[str], payload: bytes) -> list[int]:
    """Indices of the lines of ``payload`` in which ``regex`` is found (``LINES``)."""
    lines = payload.split(b"\n")
    if payload.endswith(b"\n") or not payload:
        lines.pop()
    found = []
    for index, raw in enumerate(lines):
        text = raw.decode("utf-8", "replace")
        if regex.search(text) or (text.endswith("\r") and regex.search(text[:-1])):
            found.append(index)
    return found


def lines_with_a_match(regex: re.Pattern[str], payload: bytes) -> list[int]:
    """Indices of the lines of ``payload`` in which ``regex`` (with ``re.MULTILINE``) is found,
    each line searched alone, as a file's lines are (``TEXT``).  A line ending in ``\\r`` (a CRLF
    output's) matches when it does or the line without that ``\\r`` does, as in ``matching_lines``.

    A pattern whose matches stay within a line and that sees the text around a line only as a
    line's end (``_line_bound``) is searched over the whole text at once, a match per matching line
    (a search per line costs about a microsecond more per line); the lines are the same.  With a
    CRLF text ``$`` matches only before ``\\n``, so the text is searched again with those ``\\r``
    removed (which moves no line: line indices are the same in both texts).

    A final ``\\n`` ends the last line: no empty line follows it.
    """
    text = payload.decode("utf-8", "surrogateescape")
    count = text.count("\n") + (0 if payload.endswith(b"\n") else 1)
    if not _line_bound(regex):
        return _each_line(regex, text, count)
    found = _match_lines(regex, text, count)
    if "\r\n" in text or text.endswith("\r"):
        # (Only a CRLF text pays for the second search; a line found by either is listed once.)
        stripped = text.replace("\r\n", "\n")
        stripped = stripped[:-1] if stripped.endswith("\r") else stripped
        found = sorted(set(found).union(_match_lines(regex, stripped, count)))
    return found


def lines_with_a_match_after(regex: re.Pattern[str], payload: bytes) -> list[int]:
    """``lines_with_a_match`` of a block whose first line was seen up to ``seen`` bytes, and whose
    first ``skip`` bytes come before the search's start (``TEXT_AFTER``): a match that starts in
    them is no match of the first line (it is not in what is searched), so that line is searched
    from their end on, as ``re``'s ``pos`` does; and one that the part seen had is not new (``_new_match``)."""
    skip, seen = _AFTER.unpack_from(payload)
    body = payload[_AFTER.size:]
    newline = body.find(b"\n", seen)
    line = body[: len(body) if newline < 0 else newline].decode("utf-8", "surrogateescape")
    start = len(body[:skip].decode("utf-8", "surrogateescape"))
    new = len(body[:seen].decode("utf-8", "surrogateescape"))
    found = [0] if _new_match(regex, line, start, new) or (
        line.endswith("\r") and _new_match(regex, line[:-1], start, new)) else []
    if 0 <= newline < len(body) - 1:
        found += [index + 1 for index in lines_with_a_match(regex, body[newline + 1 :])]
    return found


#: How many positions just before a reader's offset ``_new_match`` tries one by one: further back
#: it goes on from a match's end, so that a run ending at the offset (a progress bar of ``#``, with
#: ``#+``) costs one search, not one per position (quadratic in the look-back, at every poll).
_RETRIED = 256


def _new_match(regex: re.Pattern[str], line: str, start: int, new: int) -> bool:
    """Whether ``regex`` has a match in ``line`` searched from ``start`` (``re``'s ``pos``) that is
    new to a reader who saw ``line`` up to ``new``: one that starts at ``new`` or later, or one that
    starts before it and that the line cut at ``new`` (``re``'s ``endpos``) had not, the same span
    at the same start (it ends past ``new``, or a look-ahead or an anchor reads past ``new``).

    Before ``new`` the match weighed at a position is the one ``re`` finds there; past one that was
    seen, the search goes on from its end, and from its next character only within ``_RETRIED``
    positions of ``new``, so the searches are linear in the line (a bounded look-back).
    """
    if regex.search(line, max(start, new)) is not None:
        return True
    position = start
    while position < new and (match := regex.search(line, position)) is not None and match.start() < new:
        before = regex.match(line, match.start(), new)
        if before is None or before.span() != match.span():
            return True
        position = max(match.start() + 1, min(match.end(), new - _RETRIED))
    return False


def _each_line(regex: re.Pattern[str], text: str, count: int) -> list[int]:
    """Indices of the first ``count`` lines of ``text`` in which ``regex`` is found, each line searched
    alone (``lines_with_a_match``'s rule): the searches are driven by ``map`` and ``compress``,
    not a loop of this interpreter's, at about half the cost a line."""
    lines = text.split("\n", count)[:count]
    search = regex.search
    found = list(itertools.compress(range(count), map(search, lines)))
    if "\r" in text:
        # (Only a line ending in \r not found as it is is searched again, without that \r.)
        seen = set(found)
        again = [index for index, line in enumerate(lines)
                 if line.endswith("\r") and index not in seen and search(line[:-1])]
        if again:
            found = sorted(seen.union(again))
    return found


def _match_lines(regex: re.Pattern[str], text: str, count: int) -> list[int]:
    """Indices (below ``count``) of the lines of ``text`` in which a match of ``regex`` starts, each
    once, for a ``regex`` whose matches hold no ``\\n`` (``_line_bound``).

    The cost is per matching line, not per match (``.`` matches each character): once a line is
    found, the search goes on at the next line's start.  As no match can hold a ``\\n``, no later
    match in the line could have run into the next lines and hidden one starting there, and a
    search from the next line's start (``^`` and look-behinds see the whole text) finds what
    ``finditer`` would.
    """
    found: list[int] = []
    line = 0  # the line holding ``position``
    position = 0
    search = regex.search
    while line < count:
        match = search(text, position)
        if match is None:
            break
        start = match.start()
        line += text.count("\n", position, start)
        if line >= count:
            break
        found.append(line)
        end = text.find("\n", start)
        if end < 0:
            break
        # (The match ends at or before this \n: it holds none.)
        position = end + 1
        line += 1
    return found


def _re_internals() -> tuple[types.ModuleType, types.ModuleType] | None:
    """``(constants, parser)``: the ``re`` module's own pattern parser and its constants, which
    tell what a pattern can match; None where this Python has neither (callers then assume the
    worst, as for a parse of another shape)."""
    try:
        from re import _constants as constants, _parser as parser  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        try:
            import sre_constants as constants  # type: ignore[no-redef]
            import sre_parse as parser  # type: ignore[no-redef]
        except ImportError:
            return None
    return constants, parser


def _line_bound(regex: re.Pattern[str]) -> bool:
    """Whether a search of a whole text (``re.MULTILINE``) finds, in each line, what a search of
    that line alone finds (False when it cannot be told).

    So it is when nothing in the pattern, look-arounds included, can match a ``\\n`` (a match
    could hold one; a look-around could read the next line or the one before, where a line
    alone has nothing) and its only anchors at a line's ends are ``^`` and ``$`` with
    ``re.MULTILINE`` (``\\A``, ``\\Z``, and ``^``, ``$`` without it, hold only at the whole
    text's ends).  ``\\B`` is left to the lines too: ``re`` before Python 3.14 finds no
    ``\\B`` in an empty string, where an empty line of a text holds one.
    """
    internals = _re_internals()
    if internals is None:
        return False
    constants, parser = internals
    try:
        parsed = parser.parse(regex.pattern, regex.flags)
        return not _leaves_line(constants, parsed, parsed.state.flags)
    except Exception:  # an internal module of another shape: search line by line
        return False


# Of re's character categories, those holding "\n" (their NOT_ forms hold it when these do not).
_NEWLINE_CATEGORIES = ("SPACE", "LINEBREAK")
_NEWLINE = 10


# The anchors a text and a line alone agree on (with re.MULTILINE for ^ and $, which the parse
# gives as AT_BEGINNING and AT_END): a word boundary and its ends see "\n" as a line's end.
_LINE_ANCHORS = ("AT_BOUNDARY",)
_MULTILINE_ANCHORS = ("AT_BEGINNING", "AT_END", "AT_BEGINNING_LINE", "AT_END_LINE")


def _leaves_line(constants: types.ModuleType, items: object, flags: int) -> bool:
    """Whether the parsed pattern ``items`` (under ``flags``) may match or look at a ``\\n``, or
    holds an anchor a line alone does not answer as the text does (``_line_bound``)."""
    for op, value in items:  # type: ignore[attr-defined]
        name = str(op)
        if name == "LITERAL":
            if value == _NEWLINE:
                return True
        elif name == "NOT_LITERAL":
            if value != _NEWLINE:
                return True
        elif name == "ANY":
            if flags & constants.SRE_FLAG_DOTALL:
                return True
        elif name == "IN":
            if _set_holds_newline(value):
                return True
        elif name == "AT":
            anchor = str(value)
            if not (anchor in _LINE_ANCHORS
                    or (anchor in _MULTILINE_ANCHORS and flags & constants.SRE_FLAG_MULTILINE)):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):  # (a look-around reads text it does not match)
            if _leaves_line(constants, value[1], flags):
                return True
        elif name == "SUBPATTERN":  # (its flags apply inside it)
            _, added, removed, inner = value
            if _leaves_line(constants, inner, (flags | added) & ~removed):
                return True
        elif (nested := _nested(name, value)) is not None:
            if any(_leaves_line(constants, inner, flags) for inner in nested):
                return True
        elif name != "GROUPREF":  # (a back-reference repeats a group, looked at already)
            return True  # not known here: assume it may
    return False


def _nested(name: str, value: object) -> list[object] | None:
    """The patterns a parsed container node holds (a repeat's body, a group's, an atomic group's,
    each alternative of a branch or of a conditional group); None for any other node.  The one
    place that knows where ``re``'s parser puts them, for every walk over a parsed pattern."""
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return [value[2]]  # type: ignore[index]
    if name == "SUBPATTERN":
        return [value[3]]  # type: ignore[index]
    if name == "ATOMIC_GROUP":
        return [value]
    if name == "BRANCH":
        return list(value[1])  # type: ignore[index]
    if name == "GROUPREF_EXISTS":
        return [branch for branch in value[1:] if branch is not None]  # type: ignore[index]
    return None


def _set_holds_newline(items: list) -> bool:
    """Whether a parsed character class (``IN``'s items) holds ``\\n``."""
    negated = False
    holds = False
    for op, value in items:
        name = str(op)
        if name == "NEGATE":
            negated = True
        elif name == "LITERAL":
            holds = holds or value == _NEWLINE
        elif name == "RANGE":
            holds = holds or value[0] <= _NEWLINE <= value[1]
        elif name == "CATEGORY":
            category = str(value)
            opposite = "_NOT_" in category
            base = any(category.endswith(kind) for kind in _NEWLINE_CATEGORIES)
            holds = holds or base != opposite
        else:
            return True  # not known here: assume it does
    return holds != negated


def piece_matches(regex: re.Pattern[str], payload: bytes) -> list[int]:
    """``[0]`` when a match of ``regex`` starts in the middle part of the piece of a line ``payload``
    (``PIECE``), else ``[]``.

    The parts are decoded apart (each is cut at a character's start, so this is the piece
    decoded whole) and searched as one text from the middle part's start, where ``^`` and ``\\A``
    do not match and a look-behind sees the part before.  A piece that does not end its line
    ends where the line goes on: a match that reaches that end counts only when the pattern looks
    at no end (``$``, ``\\Z``, ``\\b``, ``\\B``, look-aheads), since the text after it could
    undo one that does.  The last piece follows ``lines_with_a_match``'s rule for a final ``\\r``.
    """
    before, middle, after, last = _PIECE.unpack_from(payload)
    body = payload[_PIECE.size:]
    texts = [body[start:start + size].decode("utf-8", "surrogateescape")
             for start, size in ((0, before), (before, middle), (before + middle, after))]
    start, stop = len(texts[0]), len(texts[0]) + len(texts[1])
    text = "".join(texts)
    if last and text.endswith("\n"):
        # The line is searched without its newline, as a file's line is: nothing matches it, and
        # ``\Z`` holds at the line's end.
        text = text[:-1]
    candidates = [text]
    if last and text.endswith("\r"):
        candidates.append(text[:-1])
    looks_at_ends = None
    # Characters a look-ahead may read past a match's end, a look-behind before its start (None:
    # no bound known); found only when a match comes near a piece's edge.
    reach = None
    for candidate in candidates:
        # The last piece answers for every start up to the line's end.
        limit = len(candidate) + 1 if last else stop
        match = regex.search(candidate, start)
        retries = _RETRIES
        while match is not None and match.start() < limit:
            if reach is None:
                reach = _reach(regex)
            ahead, behind = reach
            # A look-behind that reaches the piece's start would see the start of a text (``^``,
            # ``\A``, ``\b`` hold there, a negative one finds nothing), not the line's text before it.
            held_behind = not before or (behind is not None and match.start() - behind >= 0)
            if held_behind and (last or (ahead is not None and match.end() + ahead < len(candidate))):
                return [0]
            if looks_at_ends is None:
                looks_at_ends = _looks_at_ends(regex)
            if held_behind and not looks_at_ends:
                return [0]
            # This match (longer than the piece's context) may hold only by the piece's end; a
            # later, shorter one may not: look on from the next start, a bounded number of times.
            retries -= 1
            if not retries:
                break
            match = regex.search(candidate, match.start() + 1)
    return []


# Matches ending at a piece's end passed over before a piece gives up (each search may run to that end).
_RETRIES = 16


def _reach(regex: re.Pattern[str]) -> tuple[int | None, int | None]:
    """How far past a match's end a look-ahead of ``regex`` may read, and how far before its start
    a look-behind may (characters, one more for an assertion at their far end; 0 without any;
    None when unbounded or not known)."""
    internals = _re_internals()
    if internals is None:
        return None, None
    try:
        found = [0, 0]
        _look_widths(internals[1].parse(regex.pattern, regex.flags), found)
        return tuple(None if width >= _UNBOUNDED else width for width in found)  # type: ignore[return-value]
    except Exception:  # an internal module of another shape
        return None, None


_UNBOUNDED = 1 << 40


def _look_widths(items: object, found: list[int]) -> None:
    """Add to ``found`` (ahead, behind) the widest look-around in ``items`` (nested ones added on)."""
    for op, value in items:  # type: ignore[attr-defined]
        name = str(op)
        if name in ("ASSERT", "ASSERT_NOT"):
            inner = [0, 0]
            _look_widths(value[1], inner)
            width = value[1].getwidth()[1]
            width = _UNBOUNDED if width >= 0xFFFFFFFF else width
            side = 0 if value[0] > 0 else 1
            found[side] = max(found[side], width + inner[side] + 1)
            # A look-ahead inside a look-behind reads from before the match's start on (and back).
            found[0] = max(found[0], inner[0])
            found[1] = max(found[1], inner[1] + (width if side else 0))
        elif (nested := _nested(name, value)) is not None:
            for inner in nested:
                _look_widths(inner, found)
        elif name not in ("LITERAL", "NOT_LITERAL", "ANY", "IN", "GROUPREF", "AT", "CATEGORY", "RANGE",
                          "NEGATE", "CHARSET", "BIGCHARSET"):
            found[0] = found[1] = _UNBOUNDED  # not known here: assume no bound


def _looks_at_ends(regex: re.Pattern[str]) -> bool:
    """Whether ``regex`` has an assertion that what follows a position can decide (``$``,
    ``\\Z``, ``\\b``, ``\\B``, a look-ahead; True when it cannot be told)."""
    internals = _re_internals()
    if internals is None:
        return True
    try:
        return _has_end_assertion(internals[1].parse(regex.pattern, regex.flags))
    except Exception:  # an internal module of another shape
        return True


def _has_end_assertion(items: object) -> bool:
    for op, value in items:  # type: ignore[attr-defined]
        name = str(op)
        if name == "AT":
            if str(value) not in ("AT_BEGINNING", "AT_BEGINNING_LINE", "AT_BEGINNING_STRING"):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if value[0] > 0 or _has_end_assertion(value[1]):
                return True
        elif (nested := _nested(name, value)) is not None:
            if any(_has_end_assertion(inner) for inner in nested):
                return True
        elif name not in ("LITERAL", "NOT_LITERAL", "ANY", "IN", "GROUPREF"):
            return True  # not known here: assume it does
    return False


_html_module = None


def _html() -> types.ModuleType:
    """overspill's ``_html``, loaded from beside this file on first use (the
    worker runs isolated, without overspill on its path)."""
    global _html_module
    if _html_module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_overspill_html", Path(__file__).with_name("_html.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _html_module = module
    return _html_module


def converted(operation: int, payload: bytes, limit: int) -> tuple[bytes, bool]:
    """The HTML page ``payload`` as Markdown (``MARKDOWN``) or plain text (``PLAIN_TEXT``), UTF-8,
    built up to past ``limit`` characters (0: all of it), and whether that is all of it."""
    html = payload.decode("utf-8", "surrogatepass")
    text, whole = _html().convert_page(html, operation == MARKDOWN, limit or None)
    return text.encode("utf-8", "surrogatepass"), whole


_OPERATIONS = {LINES: matching_lines, TEXT: lines_with_a_match, PIECE: piece_matches,
               TEXT_AFTER: lines_with_a_match_after}


def _read_exactly(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _limit_cpu(seconds: float) -> None:
    """Let the kernel end this process once it has used ``seconds`` more CPU
    (plus a grace): the bound that holds when the parent is gone."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    total = used.ru_utime + used.ru_stime
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(total + seconds) + _CPU_GRACE
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):  # pragma: no cover - a hard limit already spent
        pass


def serve(requests, answers) -> None:
    """Answer requests from ``requests`` on ``answers`` until end of input."""
    while True:
        try:
            operation, flags, seconds, pattern_size, payload_size = _REQUEST.unpack(
                _read_exactly(requests, _REQUEST.size))
            pattern = _read_exactly(requests, pattern_size).decode("utf-8", "surrogatepass")
            payload = _read_exactly(requests, payload_size)
        except EOFError:
            return
        _limit_cpu(seconds)
        try:
            if operation in (MARKDOWN, PLAIN_TEXT):
                body, whole = converted(operation, payload, flags)
                status = _OK if whole else _CUT
            else:
                found = _OPERATIONS[operation](re.compile(pattern, flags), payload)
                status, body = _OK, array("Q", found).tobytes()  # native order: the parent runs on this machine
        except Exception as error:  # reported to the parent as one line
            status, body = _FAILED, " ".join(f"{type(error).__name__}: {error}".split()).encode("utf-8", "replace")
        answers.write(_ANSWER.pack(status, len(body)))
        answers.write(body)
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
