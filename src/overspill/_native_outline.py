"""Twin kernel ``outline_lines``: runs of lines by path prefix, and git commits."""

from __future__ import annotations


from ._buffers import LazyPattern
from ._buffers import BytesLike
from ._buffers import byte_view as _byte_view
from ._buffers import check_int as _check_int
from ._buffers import GRAPH_GLYPHS, OUTLINE_AFTER_BLANK, OUTLINE_BELOW_PAIR, OUTLINE_BELOW_SLASH, OUTLINE_ONELINE
from ._buffers import check_outline_flags as _check_outline_flags
from ._buffers import plain_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:  # re and typing cost start-up; the annotations are never evaluated
    import re
    from typing import Optional

__all__ = ["OUTLINE_DEPTH_MAX", "SUBJECT_MAX", "TOKEN_MAX", "outline_lines"]

#: Bytes of a line's leading token kept (a longer one is cut there).
TOKEN_MAX = 255
#: Bytes of a commit subject kept (a longer one is cut before a character and ends in ``…``).
SUBJECT_MAX = 120
#: The most levels ``outline_lines`` keeps runs for.
OUTLINE_DEPTH_MAX = 32
# Bytes that end a line's leading token ("::" does not: it separates parts).
_TOKEN = LazyPattern(rb"(?:[^ \t\[(,;\"'=<>|{}:\x1b]|::)*")
# The first stop byte, ":" or "/" (what ``_path_goes_on`` looks for).
_NOT_PATH = LazyPattern(rb"[ \t\[(,;\"'=<>|{}:\x1b/]")
# What ends ``_path_reaches``' search besides a space, "/" and an unclosed "(".
_WORD_STOPS = frozenset(b"\t[,;\"'=<>|{}\x1b:")
# A complete CSI escape sequence (colour, erase in line: ESC [ parameters
# intermediates final), as grep --color and git's colour write them.
_CSI = LazyPattern(rb"(?:\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e])*")
_HEX_DIGITS = frozenset(b"0123456789abcdef")
# What ends a subject cut at SUBJECT_MAX bytes.
_ELLIPSIS = "…".encode()
# What git log --graph draws before a commit's lines: its glyphs and spaces.
_GRAPH = frozenset(GRAPH_GLYPHS)


def _leading_token(text: bytes) -> tuple[bytes, bool]:
    """The line's leading token: up to a stop byte, "::" kept, and a space kept
    after a "/" when the next word reaches a "/" (``_path_goes_on``), or, after
    a name the space would cut (``_cut_name``), when a later word does
    (``_path_reaches``: "Program Files (x86)/"), at most TOKEN_MAX bytes; and
    whether its last part may not be a key: one the space cut.  Red team T9
    f03: a listing of "./Program Files/..." and "./Program Data/..." was
    outlined as one non-existent "./Program"; red team D10 f01: "./Program
    Files (x86)/..." was cut to "./Program"."""
    window = text[: TOKEN_MAX + 1]
    limit = min(len(text), TOKEN_MAX)  # a stop byte ends the token only before this
    end = 0
    while True:
        end = _TOKEN.match(window, end).end()  # type: ignore[union-attr]  # it matches the empty string
        if end < limit and text[end] == 32 and b"/" in window[:end]:
            if _path_goes_on(text, end + 1):
                end += 1
                continue
            if _cut_name(window[:end]):
                reached = _path_reaches(text, end + 1, limit)
                if reached >= 0:
                    end = reached
                    continue
        break
    # A "::" that straddles the cap ends the scan past it, as a byte loop does.
    token = window[: min(end, TOKEN_MAX)]
    if end >= limit or text[end] != 32:
        return token, False
    return token, _cut_name(token)


def _cut_name(token: bytes) -> bool:
    """Whether the last part of ``token``, which a space ends, may be a name the
    space cut: one after a "/" (not "::": a test id's part has no space), not
    empty, and no whole name (``_whole_name``)."""
    slash, pair = token.rfind(b"/"), token.rfind(b"::")
    last = token[slash + 1 :]
    return slash >= 0 and pair < slash and last != b"" and not _whole_name(last)


def _path_goes_on(text: bytes, start: int) -> bool:
    """Whether ``text[start:]`` reaches a "/" before a stop byte (a space
    among them) or a ":": after a space in a path, the next word belongs to it."""
    stop = _NOT_PATH.search(text, start)
    return stop is not None and text[stop.start()] == 47


def _path_reaches(text: bytes, start: int, limit: int) -> int:
    """Where a later word of ``text[start:limit]`` reaches a "/" that goes on a
    path a space cut (``./Program Files (x86)/x``), else -1: the words before it
    are one space apart and hold no stop byte (a space among them), ":" or "/",
    but a "(" closed in the same word (``(x86)``); a word starting with "/" is
    a path of its own (``2024/01/01 GET /api``).  A listing's column gaps, a
    grep line's ":" and a test's ``[ 10%]`` end the search."""
    opened = False
    word_start = True
    for position in range(start, limit):
        byte = text[position]
        if byte == 47:
            return -1 if opened or word_start else position
        if byte == 32:
            if opened or word_start:
                return -1
            word_start = True
            continue
        word_start = False
        if byte == 40:
            if opened:
                return -1
            opened = True
        elif byte == 41:
            opened = False
        elif byte in _WORD_STOPS:
            return -1
    return -1


def _whole_name(part: bytes) -> bool:
    """Whether a path's last part that a space ended is a whole name all the
    same: a "." past its first byte and before its last (an extension:
    ``tests/test_a.py ....F``), or all digits (a day: ``2009/11/10 23:00:00``)."""
    return b"." in part[1:-1] or part.isdigit()


def _skip_escapes(text: bytes) -> int:
    """Where ``text`` starts once its leading complete CSI escape sequences are skipped:
    a reader is shown the line without them."""
    return _CSI.match(text).end()  # type: ignore[union-attr]  # it matches the empty string


def _section_header(text: bytes, after_blank: bool) -> bool:
    """``/some/dir:`` (as ``ls -R`` heads each folder): a path with no colon, then a colon.

    A name with a space or tab (``/t/Program Files:``) is one only right after
    an empty line (where ``ls -R`` puts every header but the first) and when a
    ``/`` comes before its first space or tab: a log line ending in ``:``
    ("Processing batch 57 from /data/in:") is no folder."""
    if len(text) < 2 or text[-1] != 58:
        return False
    name = text[:-1]
    if b":" in name:
        return False
    spaces = [found for found in (name.find(b" "), name.find(b"\t")) if found >= 0]
    if spaces:
        return after_blank and 0 <= name.find(b"/") < min(spaces)
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


def _graph_prefix(text: bytes) -> int:
    """Where a commit may start in ``text``: past its leading ``git log --graph``
    glyphs (``*|/\\_``), spaces and CSI escapes, when they hold a ``*`` (the
    commit's node) or are escapes only; else -1."""
    i = star = visible = 0
    size = len(text)
    while True:
        i += _skip_escapes(text[i:])
        if i >= size or text[i] not in _GRAPH:
            break
        star = star or text[i] == 42
        visible = 1
        i += 1
    return i if star or not visible else -1


def _commit(text: bytes, oneline: bool) -> tuple[bytes, bytes | None] | None:
    """``(first 12 hex digits, subject or None)`` when ``text`` is a commit line, else None.

    After ``_graph_prefix``: ``commit <7 or more hex digits>`` then the line's
    end, a space or ESC (its subject comes on a later line); or, when
    ``oneline``, ``git log --oneline``'s ``<7 or more hex digits>``, CSI escapes,
    one space, then the subject: the rest of the line, its leading escapes
    skipped and its end stripped of spaces and tabs, not empty and starting
    with no space, tab or ``*`` (``sha256sum`` writes two spaces or `` *``)."""
    start = _graph_prefix(text)
    if start < 0:
        return None
    size = len(text)
    command = text.startswith(b"commit ", start)
    begin = end = start + 7 if command else start
    if not (command or oneline):
        return None
    while end < size and text[end] in _HEX_DIGITS:
        end += 1
    if end - begin < 7:
        return None
    digest = text[begin : min(end, begin + 12)]
    if command and (end == size or text[end] in (32, 27)):
        return digest, None
    if command or not oneline:
        return None
    end += _skip_escapes(text[end:])
    if end + 1 >= size or text[end] != 32 or text[end + 1] in (32, 9, 42):
        return None
    end += 1
    end += _skip_escapes(text[end:])
    subject = text[end:].rstrip(b" \t")
    return (digest, _capped(subject)) if subject else None


def _capped(subject: bytes) -> bytes:
    """``subject`` when it fits ``SUBJECT_MAX`` bytes; else its start, cut before
    a character (never after a lead byte: no U+FFFD), and ``…`` (it is cut)."""
    if len(subject) <= SUBJECT_MAX:
        return subject
    cut = SUBJECT_MAX - len(_ELLIPSIS)
    back = 0
    while back < 3 and 0x80 <= subject[cut - back] < 0xC0:  # a continuation byte: inside a character
        back += 1
    return subject[: cut - back] + _ELLIPSIS


def _subject(text: bytes) -> bytes | None:
    """The subject on a line after a commit line: the leading run of graph glyphs,
    spaces and CSI escapes holds four spaces in a row (a plain log indents the
    message by four; ``--graph`` puts its glyphs first); what follows the first
    four, stripped of spaces and tabs, when not empty."""
    i = spaces = 0
    size = len(text)
    while i < size:
        skipped = _skip_escapes(text[i:])
        if skipped:
            i += skipped
            spaces = 0
            continue
        if text[i] not in _GRAPH:
            return None
        spaces = spaces + 1 if text[i] == 32 else 0
        i += 1
        if spaces == 4:
            subject = text[i:].strip(b" \t")
            return _capped(subject) if subject else None
    return None


def outline_lines(buffer: BytesLike, start: int, end: int, section: bytes, max_depth: int, max_runs: int,
                  max_commits: int, flags: int = 0, /) -> tuple:
    """The structure of the lines of ``buffer[start:end]``: runs of lines by path prefix, and commits.

    The region is split at newlines (a final newline ends the last line; it
    does not start another), and a line's final ``\\r`` is dropped.  The
    complete CSI escape sequences a line starts with (``ESC[33m``: colour)
    are skipped: what follows them is classified, as a reader sees the line.
    A line's *token* is its leading text up to the first space, tab,
    ``[({<>|=,;'"``, ESC or lone ``:`` (``::`` joins parts; a space after a
    ``/`` does not end it when the next word reaches a ``/``, nor after a cut
    name when a later one does), at most
    ``TOKEN_MAX`` bytes.  A line
    is *keyed* by

    * when the whole line is a section header (``/a/dir:`` as ``ls -R``
      writes: no colon before the final colon, holding ``/`` or starting
      with ``.``; a space or tab in it only when the line follows an empty
      one, or one of escapes only, and does not start with one), by that path, which becomes the
      current section;
    * else by its own token, when the token holds ``/`` or ``::`` (a path, a
      test id);
    * else by the current section (``section`` at the start), if any.

    The key of a keyed line at depth ``d`` is its token up to the end of its
    ``d``-th part (parts split at ``/`` and ``::``; the whole token when it
    has fewer).  A last part after a ``/`` that a space ended may be a name
    the space cut (``./Program Files``): unless it is a whole name all the
    same (see ``_whole_name``) it is no key: the line's key stops at the part
    before (it is keyed by the section when there is none), and where that
    key's run goes on the line waits as an unkeyed line does (below that
    key its run is unknown).
    (After such a name a space goes on all the same when a later word reaches
    a ``/``, see ``_path_reaches``: ``./Program Files (x86)/x`` is no such line.)  At each depth ``1..max_depth``, consecutive keyed lines with
    the same key form a *run*; an unkeyed line (and a line whose last part a
    space cut, where its folder's run goes on) joins the current runs, at every
    depth, only when the next keyed line of the region goes on with the run at
    the deepest depth (red team E11 f03: a pytest run's FAILURES section was
    counted as lines of its last test id), or, for a line whose last part a
    space cut after a name in its folder (or the folder's own line), when the
    next line with a key is not the cut name going on (its token is not the
    cut one and a space); below its folder such a line is in the run the line
    before it began, the name before's (red team A14, review R18:
    ``setuptools/command/launcher manifest.xml`` between, or after, files of
    its folder was in no run); else it is in no
    run at any depth (review R6: every depth's runs hold the same lines).  Until
    then it is *unclaimed*; before any keyed line, such lines count in ``lead``.  At most ``max_runs`` runs are kept per
    depth: a depth with more is ``None``.  A *commit* is a line
    ``commit <7 or more hex digits>`` (then its end, a space or ESC), after
    ``git log --graph``'s glyphs if any (see ``_commit``); its subject is the
    first later line (before the next commit) that starts with four spaces
    (after the graph's glyphs) and holds more, stripped of spaces and tabs,
    at most ``SUBJECT_MAX`` bytes (see ``_subject``; a longer one is cut
    before a character and ends in ``…``: see ``_capped``).  With ``OUTLINE_ONELINE``
    in ``flags``, a ``git log --oneline`` line ``<hash> <subject>`` is a
    commit too, with its subject.  The first ``max_commits`` and the last
    ``max_commits`` commits are kept.  With ``OUTLINE_AFTER_BLANK`` in
    ``flags``, the region's first line is taken to follow an empty line (the
    caller knows: it follows one, or starts the output).

    Returns ``(runs, lead, lines, keyed, section, commits, commit_total,
    unclaimed)``: ``runs[d - 1]`` lists ``(key, offset, lines, deeper)``
    (``deeper``: what follows the key in the run's lines that have more parts
    than it, ``OUTLINE_BELOW_SLASH`` for a ``/``, ``OUTLINE_BELOW_PAIR`` for a
    ``::``, both bits, or 0 when none has more) or is None;
    ``section`` is the current section at the end; ``commits`` lists
    ``(offset, hash, subject or None)`` in order; ``unclaimed`` is the lines
    at the end unclaimed (the caller's next region says whether the last runs
    take them); offsets are offsets in ``buffer``.

    :raises TypeError: wrong argument types.
    :raises ValueError: ``start``/``end`` outside the buffer or reversed,
        ``max_depth`` outside 1 to ``OUTLINE_DEPTH_MAX``, ``max_runs`` below
        1, ``max_commits`` negative, ``section`` longer than ``TOKEN_MAX``,
        ``flags`` not made of the ``OUTLINE_*`` bits.
    """
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    with _byte_view(buffer) as view:
        start, end, section, max_depth, max_runs, max_commits = _outline_arguments(start, end, section, max_depth,
                                                                                   max_runs, max_commits)
        flags = _check_outline_flags(flags)
        if end > len(view) or start > end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {len(view)}")
        region = view[start:end].tobytes()
    runs = _Runs(max_depth, max_runs)
    commits = _Commits(max_commits)
    lines, keyed, section = _outline_region(region, start, section, runs, commits, flags)
    return runs.shown(), runs.lead, lines, keyed, section, commits.kept(), commits.total, runs.unclaimed


def _outline_arguments(start: object, end: object, section: object, max_depth: object, max_runs: object,
                       max_commits: object) -> tuple[int, int, bytes, int, int, int]:
    """``outline_lines``' arguments after its buffer, each checked alone, in order."""
    start = _check_int(start, "start", 0)
    end = _check_int(end, "end", 0)
    if not isinstance(section, bytes):
        raise TypeError(f"section must be bytes, not {type(section).__name__}")
    section = plain_bytes(section)
    if len(section) > TOKEN_MAX:
        raise ValueError(f"section must be at most {TOKEN_MAX} bytes, not {len(section)}")
    max_depth = _check_int(max_depth, "max_depth", 1)
    if max_depth > OUTLINE_DEPTH_MAX:
        raise ValueError(f"max_depth must be at most {OUTLINE_DEPTH_MAX}, not {max_depth}")
    return start, end, section, max_depth, _check_int(max_runs, "max_runs", 1), _check_int(max_commits,
                                                                                         "max_commits", 0)


def _outline_region(region: bytes, start: int, section: bytes, runs: _Runs, commits: _Commits, flags: int
                    ) -> tuple[int, int, bytes]:
    """Give each line of ``region`` (at ``start`` in the buffer) to ``commits`` and,
    by its key, to ``runs``; ``(lines, keyed lines, the section at the end)``."""
    lines = keyed = 0
    after_blank = bool(flags & OUTLINE_AFTER_BLANK)
    oneline = bool(flags & OUTLINE_ONELINE)
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
        whole = text
        text = text[_skip_escapes(text):]
        commits.line(whole, offset, oneline)
        header = _section_header(text, after_blank)
        after_blank = not text  # (a line of escapes only is shown empty)
        if header:
            section = text[:-1][:TOKEN_MAX]
            token, dropped = section, False
        else:
            token, dropped = _leading_token(text)
            if b"/" not in token and b"::" not in token or dropped and len(_part_ends(token)) == 1:
                token, dropped = section, False
        if token:
            keyed += 1
            runs.keyed(token, offset, dropped)
        else:
            runs.unkeyed()
    return lines, keyed, section


def _below(token: bytes, ends: list[int], depth: int) -> int:
    """What follows the key at ``depth`` (0 the first) of a line whose token's parts
    end at ``ends``: the separator before its next part (``OUTLINE_BELOW_SLASH``,
    ``OUTLINE_BELOW_PAIR``), or 0 when it has none (the key is the whole token's)."""
    if len(ends) <= depth + 1:
        return 0
    return OUTLINE_BELOW_SLASH if token[ends[depth]] == 47 else OUTLINE_BELOW_PAIR


class _Runs:
    """The runs of ``outline_lines`` at each depth, ``lead`` the unkeyed lines before
    any, ``unclaimed`` the lines since the last keyed one (at every depth)."""

    __slots__ = ("_kept", "_current", "_max_runs", "_name", "_cut", "lead", "unclaimed")

    def __init__(self, max_depth: int, max_runs: int) -> None:
        self._kept: list = [[] for _ in range(max_depth)]  # None once a depth has too many runs
        self._current: list = [None] * max_depth  # the key of each depth's current run
        self._max_runs = max_runs
        # The last keyed line's keys when its token is whole, all of them keys, else 0.
        self._name = 0
        # The token of the last unclaimed line whose last part a space cut, while its
        # folder's lines may yet claim it (see ``keyed``), else None.
        self._cut: bytes | None = None
        self.lead = 0
        self.unclaimed = 0

    def unkeyed(self) -> None:
        """An unkeyed line waits for the next keyed line: it joins the current runs
        when that one goes on with the deepest (or, before any run, the lead)."""
        if self._current[0] is None:
            self.lead += 1
            return
        self.unclaimed += 1

    def keyed(self, token: bytes, offset: int, dropped: bool = False) -> None:
        """A line keyed by ``token``, starting at ``offset``: at each depth it extends
        the current run when the key is the same, else starts a run.  ``dropped``:
        the token's last part is no key (see ``_leading_token``)."""
        ends = _part_ends(token)
        keys = len(ends) - 1 if dropped else len(ends)
        current = self._current
        runs = self._kept
        found = [token[: ends[min(depth + 1, keys) - 1]] if keys else token for depth in range(len(runs))]
        goes_on = [key == before for key, before in zip(found, current)]
        # A line whose last part a space cut, waiting below (see the next branch), is its
        # folder's line when the line before it is a name in that folder (or the folder's
        # own line): it is claimed by the next line that has a key, unless that line is the
        # cut name going on (its token the cut one's and a space: "./Program Files/x"),
        # at every depth into the runs the line before began: its folder's, and below the
        # folder the name before's (red team A14: "setuptools/command/launcher
        # manifest.xml" was counted in no group; review R18: last in its folder, or before
        # a sibling folder's lines, it still was).  After a line in another folder below
        # its own, no run below its folder is its (review R6: "./app/read me 0.txt" is no
        # line of "./app/sub0/"): it waits as a line with no path does.
        claims = self._cut is not None and not token.startswith(self._cut + b" ")
        self._cut = None
        if dropped and 0 < keys < len(runs) and all(goes_on[:keys]):
            # Its last part is no key and its folder's run goes on: it waits as an unkeyed
            # line does ("./Program Files" in find, before its folder's lines; below the
            # folder its run is unknown), and the current keys stay.
            if claims:
                self.unclaimed -= 1
                for kept in runs:
                    if kept is not None:
                        kept[-1][2] += 1
            self.unclaimed += 1
            if self._name and keys >= self._name - 1:
                self._cut = token
            return
        # The lines waiting since the last keyed one join the runs at every depth when
        # this line goes on with the deepest, else none (review R6: decided at each depth
        # alone, a line was a folder's and none of its files', and a depth's runs summed
        # to more than the next one's), but a cut name's line it claims (above).
        claimed = self.unclaimed if goes_on[-1] else int(claims)
        self.unclaimed = 0
        self._name = keys if not dropped and 0 < keys <= len(runs) else 0
        for depth, key in enumerate(found):
            deeper = _below(token, ends, depth)
            kept = runs[depth]
            if goes_on[depth]:
                if kept is not None:
                    kept[-1][2] += claimed + 1
                    kept[-1][3] |= deeper
                continue
            current[depth] = key
            if kept is None:
                continue
            if claimed and kept:
                # Below the folder a claimed line is in the run the line before began:
                # the part of the output it lies in (the name before's).
                kept[-1][2] += claimed
            if len(kept) >= self._max_runs:
                runs[depth] = None
                continue
            kept.append([key, offset, 1, deeper])

    def shown(self) -> list:
        return [None if kept is None else [tuple(run) for run in kept] for kept in self._kept]


class _Commits:
    """The first and the last ``limit`` commits of ``outline_lines``, each with its subject once found."""

    __slots__ = ("_limit", "_first", "_last", "_pending", "total")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._first: list = []
        self._last: list = []
        self._pending: list | None = None  # the latest commit still without a subject
        self.total = 0

    def line(self, text: bytes, offset: int, oneline: bool) -> None:
        """A line at ``offset``: a commit (with its subject, on one line), its subject, or neither."""
        found = _commit(text, oneline)
        if found is not None:
            self.total += 1
            pending = [offset, found[0], found[1]]
            self._pending = pending if found[1] is None else None
            if len(self._first) < self._limit:
                self._first.append(pending)
            elif self._limit:
                self._last.append(pending)
                if len(self._last) > self._limit:
                    del self._last[0]
        elif self._pending is not None:
            subject = _subject(text)
            if subject is not None:
                self._pending[2] = subject
                self._pending = None

    def kept(self) -> list:
        return [tuple(commit) for commit in self._first + self._last]
