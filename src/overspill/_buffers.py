"""Argument checks and byte views shared by both kernel implementations.

``overspill._native`` (the pure twin) and ``overspill._speedups`` (compiled)
accept exactly the same arguments because both check them here; the text
rules reach the view flags and byte views here too, so that no module but
``_kernels`` imports an implementation.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and re cost start-up; the annotations are never evaluated
    import re
    from typing import Union

__all__ = ["ESCAPE", "ESCAPE_BEFORE_CONTINUATION", "GRAPH_GLYPHS", "JSON_KEY_MAX", "JSON_LABEL_KEYS", "OUTLINE_AFTER_BLANK", "OUTLINE_BELOW_PAIR", "OUTLINE_BELOW_SLASH", "OUTLINE_FLAGS", "OUTLINE_ONELINE", "MAX_KINDS", "MAX_PATTERNS", "TOKEN_ENDS", "VIEW_ANSI", "VIEW_CR", "VIEW_FLAGS",
           "BytesLike", "LazyPattern", "byte_view", "check_flags", "check_int", "check_outline_flags", "check_patterns", "int_text",
           "plain_bytes", "plain_int", "plain_str", "value_text"]

if TYPE_CHECKING:
    BytesLike = Union[bytes, bytearray, memoryview]
else:  # the name stays importable (annotations only), without importing typing
    BytesLike = (bytes, bytearray, memoryview)


class LazyPattern:
    """A regular expression compiled on first use, so that importing overspill
    never imports ``re`` (start-up); it answers what the compiled one does."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, source: str | bytes) -> None:
        self._source = source
        self._compiled: re.Pattern | None = None  # type: ignore[type-arg]

    def __getattr__(self, name: str) -> object:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._source)
        return getattr(self._compiled, name)


#: Ints of at most this many digits are shown whole in error messages.
_SHOWN_DIGITS = 30
_SHOWN = 10**_SHOWN_DIGITS
#: Up to this many bits an int's count of digits is made exact (one power of
#: ten, microseconds); past it, a lower bound is said rather than paid for.
_EXACT_BITS = 1 << 17


def int_text(value: int) -> str:
    """A caller's int as an error message shows it: its digits, or past 30 digits
    its count of digits, e.g. ``(a 5001-digit number)``.

    ``str`` of an int over 4,300 digits raises ValueError (Python's bound on
    int-to-text conversion), which would escape in place of the error being
    built; and a number that long says no more in full than its size.  The
    int's own value is read (``int.__index__``), as ``check_int`` does.
    """
    value = int.__index__(value)
    if -_SHOWN < value < _SHOWN:
        return str(value)
    size = -value if value < 0 else value
    bits = size.bit_length()
    # 10**(digits - 1) <= 2**(bits - 1) <= size: the factor is just under log10(2), so this never overcounts.
    digits = (bits - 1) * 301029995663981195 // 10**18 + 1
    sign = "negative " if value < 0 else ""
    if bits > _EXACT_BITS:
        return f"(a {sign}number of at least {digits} digits)"
    power = 10**digits
    while size >= power:
        digits += 1
        power *= 10
    return f"(a {sign}{digits}-digit number)"


def value_text(value: object) -> str:
    """A caller's value as an error message quotes it: ``repr``, an int (not a bool)
    by ``int_text``, and a container holding an int too long for text by its type."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int_text(value)
    try:
        return repr(value)
    except ValueError:  # (a list or table holding an int past Python's int-to-text bound)
        return f"(a {type(value).__name__} holding a number too long to show)"


def plain_int(value: object, name: str) -> int:
    """The exact ``int`` of ``value``'s own value, if it is an int (a bool is not).

    The int's own value is read (``int.__index__``, the C slot, not an
    override): a subclass's ``__int__``, ``__index__`` or comparisons never
    run, as the compiled module reads the value itself.

    :raises TypeError: not an int.
    """
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        value = int.__index__(value)
    return value


def check_int(value: object, name: str, minimum: int) -> int:
    """``value`` if it is an int (a bool is not) of at least ``minimum``, clamped to
    what a C ``Py_ssize_t`` holds, as the compiled twin reads it.  The int's
    own value is read (``plain_int``).

    :raises TypeError: not an int.
    :raises ValueError: below ``minimum``.
    """
    if type(value) is not int:  # (an exact int is its own value: no call on the twin's hot path)
        value = plain_int(value, name)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {int_text(value)}")
    return value if value < sys.maxsize else sys.maxsize


def plain_str(text: str) -> str:
    """The exact ``str`` of ``text``'s own characters: a subclass's overrides (``count``,
    ``find``, ``__len__``, ``__getitem__``, ``encode`` ...) never run, as the compiled
    module reads a str's storage.  ``text`` itself when it is a ``str`` (no copy)."""
    return text if type(text) is str else str.__str__(text)  # str's own slot copies the storage


def plain_bytes(data: bytes) -> bytes:
    """The exact ``bytes`` of a ``bytes`` (subclass)'s own storage, as ``plain_str`` for text."""
    return data if type(data) is bytes else bytes.__getitem__(data, slice(None))


def byte_view(data: object) -> memoryview:
    """A flat ``"B"`` memoryview of any C-contiguous buffer (the caller releases it)."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"expected str or a bytes-like object, not {type(data).__name__}"
        ) from None
    if not view.c_contiguous:
        view.release()
        raise TypeError("a bytes-like argument must be C-contiguous")
    if view.format != "B" or view.ndim != 1:
        # CPython will not cast a view of several dimensions with a zero in its shape, which
        # holds no bytes: it is empty data, as the compiled module reads any C-contiguous buffer.
        flat = view.cast("B") if view.nbytes else memoryview(b"")
        view.release()
        return flat
    return view


# Where a cut inside a long line may land when no newline is near: just after
# one of these (token-ish boundaries of minified code, CSV rows and prose), so
# that a word or a number is not split (see _native_preview.preview_cuts).
TOKEN_ENDS = b",;} "

# What a reader is shown of stored bytes (see _native.view_bytes).
VIEW_ANSI = 1
VIEW_CR = 2
VIEW_FLAGS = VIEW_ANSI | VIEW_CR

# A line's numbers, as the same-shape-run rule (overspill._runs) and the signal
# lines' near-duplicates (text.SignalCollector) read them: a UUID (runs of exactly
# 8, 4, 4, 4 and 12 lowercase hex digits joined by "-"; or of uppercase ones, as
# SQL Server and Windows write GUIDs, with no hex digit of either case just before
# it: never a tail of a longer run), a hex digest (7 or more lowercase hex digits:
# a mixed-case or uppercase word is more often a name), or a run of digits.  The
# one spec: the compiled kernel computes the same without a regex (_line_shape;
# osp_hex_digest in overspill_signals.h), and the tests hold both to a naive reference.
_DIGESTS_SOURCE = (r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?![0-9a-f])"
                   r"|(?<![0-9A-Fa-f])[0-9A-F]{8}(?:-[0-9A-F]{4}){3}-[0-9A-F]{12}(?![0-9A-F])|[0-9a-f]{7,}")
NUMBERS = LazyPattern(_DIGESTS_SOURCE + r"|[0-9]+")
# Every ASCII digit made "0": two lines that differ only in their digits are one line after
# it (signal_lines' distinct keys, SignalCollector's aliases).
DIGITS_ZEROED = bytes.maketrans(b"123456789", b"000000000")
# The hex digests alone, in bytes (where a run of digits would match, none can start).
DIGEST_BYTES = LazyPattern(_DIGESTS_SOURCE.encode("ascii"))

# ESC and what follows it, per ECMA-48: a CSI (ESC [ parameters intermediates
# final), an OSC (ESC ] text, ended by BEL or ESC \), or another escape
# (intermediates, then one final byte: charset selection, keypad modes, save
# and restore cursor).  A sequence cut short by the end of the data or by a
# byte that cannot continue it ends there; none of them crosses a newline.
_ESCAPE_BODY = rb"(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[\x20-\x2f]*[\x30-\x7e]?)"
_ESCAPE_SOURCE = rb"\x1b" + _ESCAPE_BODY
ESCAPE = LazyPattern(_ESCAPE_SOURCE)
# A run of escape sequences, one after another, its last one captured (group 1): a walk over them
# takes the run in one match, and resumes from its last one when that reaches the end of the bytes.
ESCAPE_RUN = LazyPattern(rb"(?:(" + _ESCAPE_SOURCE + rb"))+")
# What a walk past \r redraws takes in one match (see _store_reads): a run of carriage returns, and a
# run of escape sequences and carriage returns (both views: a spinner's \r ESC[2K), its last sequence
# captured as ESCAPE_RUN's (group 1, for a walk that resumes at a window's end alike) and its last \r
# (group 2: Python keeps a group's last repetition).  The sequence first: a run of sequences alone is
# then nearly as fast as over ESCAPE_RUN.
CR_RUN = LazyPattern(rb"\r+")
REDRAW_RUN = LazyPattern(rb"(?:(" + _ESCAPE_SOURCE + rb")|(\r))+")
# An escape sequence followed by a UTF-8 continuation byte: the last of a run of them, which the
# bytes before the run must not take once the run is removed (see _native.view_bytes).  One
# sequence, taken whole as the view takes it (a lookahead and its backreference cannot backtrack:
# an OSC string is not cut short to put a continuation byte of its own after it), so a search tries
# each ESC once and reads one sequence there: linear, however long a run is (a run taken whole
# from each of its ESCs was quadratic in its length).  The ESC first lets a search skip to each ESC.
ESCAPE_BEFORE_CONTINUATION = LazyPattern(rb"\x1b(?=(" + _ESCAPE_BODY + rb"))\1(?=[\x80-\xbf])")


def check_flags(flags: object) -> int:
    value = check_int(flags, "flags", 0)
    if value > VIEW_FLAGS:
        raise ValueError(f"flags must be a combination of VIEW_ANSI (1) and VIEW_CR (2), not {flags}")
    return value


# How outline_lines reads a region (see _native_outline.outline_lines): its
# first line follows an empty line or starts the output (an ls -R header
# there may hold spaces); its lines may be git log --oneline's (a line
# "<hash> <subject>" is a commit).
OUTLINE_AFTER_BLANK = 1
OUTLINE_ONELINE = 2
OUTLINE_FLAGS = OUTLINE_AFTER_BLANK | OUTLINE_ONELINE
# What follows a run's key in those of its lines that have more parts
# (outline_lines' ``deeper``, bits): a "/" (a folder's files) or a "::" (a
# test id's parts).  The outline shows the key as its lines go on (``src/``,
# ``test_a.py::``), and a key both follow as it is: red team C12 showed a test
# id's file as the folder ``test_many.py/``, which no line holds.  The compiled
# kernel's OSP_BELOW_SLASH and OSP_BELOW_PAIR.
OUTLINE_BELOW_SLASH = 1
OUTLINE_BELOW_PAIR = 2
# What git log --graph draws beside a commit's lines: its glyphs and spaces
# (the compiled kernel's osp_graph_glyph).
GRAPH_GLYPHS = b"*|/\\_ "


def check_outline_flags(flags: object) -> int:
    """``outline_lines``' ``flags``: an int made of the ``OUTLINE_*`` bits."""
    value = check_int(flags, "flags", 0)
    if value > OUTLINE_FLAGS:
        raise ValueError(f"flags must be a combination of the OUTLINE_* bits (at most {OUTLINE_FLAGS}), not {flags}")
    return value


# The most signal patterns, and kinds of them, a scan takes.
MAX_PATTERNS = 64
MAX_KINDS = 8


def check_patterns(patterns: object) -> list[tuple[int, bool, bool, bytes]]:
    """Validated ``(kind, anchored, caseless, literal)`` signal patterns."""
    if not isinstance(patterns, (tuple, list)):
        raise TypeError(f"patterns must be a tuple or list, not {type(patterns).__name__}")
    if len(patterns) > MAX_PATTERNS:
        raise ValueError(f"at most {MAX_PATTERNS} patterns, not {len(patterns)}")
    checked = []
    for entry in patterns:
        if not isinstance(entry, tuple) or len(entry) != 4:
            raise TypeError("each pattern must be a tuple (kind, anchored, caseless, literal)")
        kind, anchored, caseless, literal = entry
        kind = check_int(kind, "kind", 0)
        if kind >= MAX_KINDS:
            raise ValueError(f"kind must be below {MAX_KINDS}, not {kind}")
        if not isinstance(anchored, bool) or not isinstance(caseless, bool):
            raise TypeError("anchored and caseless must be bools")
        if not isinstance(literal, bytes):
            raise TypeError(f"literal must be bytes, not {type(literal).__name__}")
        literal = plain_bytes(literal)
        if not 1 <= len(literal) <= 255 or b"\n" in literal:
            raise ValueError("a literal must hold 1 to 255 bytes and no newline")
        checked.append((kind, anchored, caseless, literal))
    return checked


# signal_lines' ``state``: where a scan stands between lines, as the list
# [phase, old, new, midline] (see _native_text._Quoted): between diff hunks and
# git commits; in a hunk, whose header's counts of old and new lines still to
# come are old and new; after a commit line, in its header lines; in its
# message.  midline: the MIDLINE_* below.
# The compiled kernel's OSP_QUOTED_*.
QUOTED_OUTSIDE = 0
QUOTED_HUNK = 1
QUOTED_HEADER = 2
QUOTED_MESSAGE = 3
# Whether a region starts inside a line (a head, a scan block or a band cut it), and that
# line's verdict, which its rest keeps: its rest is never read as a line of its own, as a
# hunk line's rest would end the hunk (the compiled kernel's OSP_MIDLINE_*).
MIDLINE_NONE = 0  # the region starts at a line's start
MIDLINE_SHOWN = 1  # inside a line that is not quoted
MIDLINE_QUOTED = 2  # inside a quoted line
# The most lines a hunk header's count holds (18 digits; a longer number makes
# no header): the compiled kernel's counts are 64-bit (OSP_HUNK_DIGITS).
HUNK_COUNT_MAX = 10**18 - 1


def check_signal_state(state: object) -> tuple[int, int, int, int] | None:
    """``signal_lines``' ``state``: None, or a list ``[phase, old, new, midline]`` of ints,
    ``phase`` one of the ``QUOTED_*``, ``old`` and ``new`` from 0 to ``HUNK_COUNT_MAX``,
    ``midline`` one of the ``MIDLINE_*``.

    :raises TypeError: neither None nor a list of four ints.
    :raises ValueError: a number out of its range.
    """
    if state is None:
        return None
    if type(state) is not list:
        raise TypeError(f"state must be None or a list [phase, old, new, midline], not {type(state).__name__}")
    if len(state) != 4:
        raise TypeError(f"state must be None or a list [phase, old, new, midline] of four ints, not a list of {len(state)}")
    return (_state_number(state[0], "phase", QUOTED_MESSAGE, "one of the QUOTED_*"),
            _state_number(state[1], "old", HUNK_COUNT_MAX, "a hunk's count"),
            _state_number(state[2], "new", HUNK_COUNT_MAX, "a hunk's count"),
            _state_number(state[3], "midline", MIDLINE_QUOTED, "one of the MIDLINE_*"))


def _state_number(value: object, name: str, maximum: int, what: str) -> int:
    """A number of ``signal_lines``' ``state``, from 0 to ``maximum``; the message shows
    the caller's value, not the one ``check_int`` clamps it to."""
    number = check_int(value, name, 0)
    if number > maximum:
        raise ValueError(f"{name} must be {what}, from 0 to {maximum}, not {int_text(plain_int(value, name))}")
    return number


#: Keys whose value names an array's object item (its label in the JSON outline); not ``id``:
#: a number tells a reader no more than the item's index does.
JSON_LABEL_KEYS = frozenset((b"name", b"title", b"key", b"package", b"path", b"file", b"filename",
                             b"slug", b"label"))
#: Bytes of a JSON key or label (its raw JSON source) the outline shows at most; the
#: kernels keep one more, so that a longer one is known to be cut (``JsonOutline``).
JSON_KEY_MAX = 64
