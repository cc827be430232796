"""The grep tool: search files (ripgrep when present) or a stored output."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Optional, Union

from .. import _kernels
from .._arguments import os_string_problem, positive_seconds
from ..errors import OverspillError
from ..store import ToolOutputStore, TruncateResult
from ..text import VIEW_ANSI, VIEW_CR, encode_content, last_newline, view_flags
from .._binary import file_is_binary
from ._glob import Overrides
from ._regex import TIME_LIMIT, Cancelled, Search, compile_pattern
from ._result import MAX_LINE_LENGTH, MAX_MATCHES, ToolResult, bounded, failure, shortened_line

if TYPE_CHECKING:
    from .._store_reads import _Ranges

    # A stored payload as a scan slices it: mapped, or read a range at a time (``ToolOutputStore._scan``).
    Payload = Union[memoryview, _Ranges, "_FileBytes"]

__all__ = ["ResourceListing", "ResourceMatches", "grep", "resource_listing", "search_resource"]

# Never searched, at any depth (files or folders of these names), given to rg after the user's
# glob: of rg's globs the last that matches decides, so no glob brings these back in.
_SKIPPED_GLOBS = ("!.git", "!.hg", "!.svn")
PathArg = Union[str, "os.PathLike[str]", None]


def _ripgrep() -> Optional[str]:
    return shutil.which("rg")


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_LENGTH else line[:MAX_LINE_LENGTH] + "… [line cut]"


def grep(store: ToolOutputStore, session_id: str, tool_call_id: str, pattern: str, *, path: str = ".",
         resource: Optional[str] = None, glob: Optional[str] = None, ignore_case: bool = False,
         max_matches: int = 100, context: int = 0, cwd: PathArg = None,
         abort: Optional[threading.Event] = None) -> ToolResult:
    """Search files under ``path``, or the stored output ``resource``, for a regex.

    File results are ``file:line:text`` (a carriage return inside the line
    shown as the two characters ``\\r``, a newline in a file's name as ``\\n``); resource results are
    ``offset:text``, the byte offset of the line to give ``read`` (the output
    is searched as text, see ``search_resource``; ``context`` lines around
    each match are ``offset-text``), then the count of matching lines.  Each
    line is cut at ``MAX_LINE_LENGTH``; at most ``max_matches`` are listed,
    with a count of the rest.  Files are searched with ``rg`` when it is on PATH,
    else in Python, skipping ``.git`` and binary files (a NUL byte anywhere in
    the file, rg's rule: matches before a late NUL are dropped too); the pattern is Python's
    ``re`` either way, a line's final ``\\r`` (CRLF) optional before ``$``, and one
    that rg's engine refuses (look-around, back-references, ``\\Z``) or reads
    otherwise (``[[:alpha:]]``, ``a*+``... see ``ripgrep_pattern``) is searched in
    Python; the README names what still differs (Unicode details).  Python's matching
    runs in a worker process within a time budget (``TIME_LIMIT`` seconds,
    plus one per 16 MiB searched): a pattern that backtracks without end
    comes back as a "pattern too slow" error telling the model to narrow it.

    :param glob: only files whose path or name matches this glob, as ``rg --glob``
        reads it either way (see ``_glob``): ``*.{py,md}``, ``!*.txt`` (all but these),
        ``src/**/*.py``; ``*`` stays within a folder, a glob without ``/`` matches a
        name at any depth. It never filters a file named by ``path``.
    :param cwd: the folder a relative ``path`` is searched from (the host's choice).
    :param abort: when set (the host's cancellation), the search stops and its
        worker is killed; the result is an error.
    """
    if not isinstance(pattern, str) or not pattern:
        return failure("pattern must be a non-empty string")
    if isinstance(max_matches, bool) or not isinstance(max_matches, int) or max_matches < 1:
        return failure("max_matches must be a positive integer")
    if glob is not None and not isinstance(glob, str):
        return failure("glob must be a string")
    problem = None if glob is None else os_string_problem(glob, "glob")
    if problem:
        return failure(problem)
    flags = re.IGNORECASE if ignore_case else 0
    try:
        regex = compile_pattern(pattern, flags)
    except re.error as error:
        return failure(f"invalid pattern {pattern!r}: {error}")
    if resource is not None:
        if path != "." or glob is not None:  # (read refuses a resource and a path alike)
            return failure("give resource (a tool-output:// URI) or path and glob (files), not both")
        return _grep_resource(store, session_id, tool_call_id, resource, pattern, ignore_case, context, max_matches,
                              abort)
    found = _Matches(max_matches)
    if not isinstance(path, str) or not path:
        return failure("path must be a non-empty string")
    problem = os_string_problem(path, "path")
    if problem:
        return failure(problem)
    # The path as given, not as pathlib reads it: Path drops a trailing "/" and "/." ("x.py/" would be
    # x.py, while rg, given the path, fails on it with ENOTDIR), so the two searches would differ.
    root = os.path.join(cwd or ".", path)
    try:
        overrides = Overrides(([glob] if glob else []) + list(_SKIPPED_GLOBS), cwd or ".")
    except ValueError as error:  # the same refusal, in the same words, whether rg is there or not
        return failure(f"invalid glob {glob!r}: {error}")
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return failure(f"no such file or folder: {path}")
    except OSError as error:  # too long, a loop of links, no permission, a file named as a folder
        # ("x.py/", "x.py/.", "x.py/sub": ENOTDIR, as rg meets it): said, not raised
        return failure(f"cannot search {path}: {error.strerror or error}")
    if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
        # A FIFO, a device, a socket: one rule for both searches, decided here. rg would open
        # and read it (a FIFO without a writer blocks, /dev/zero never ends) until its timeout.
        return failure(f"cannot search {path}: not a regular file or folder")
    try:
        problem = _search_files(root, path, regex, pattern, glob, overrides, ignore_case, cwd, found, abort)
    except Cancelled:
        return failure("grep was cancelled")
    except OverspillError as error:
        return failure(str(error))
    if problem is not None:
        return problem
    if not found.total:
        return ToolResult(shortened_line(f"no matches for {pattern!r}"), False, False, None, {"matches": 0})
    rest = found.total - len(found.lines)
    text = "\n".join(found.lines)
    if rest:
        text += f"\n[{rest} more matches not shown; narrow the pattern, path or glob]"
    return bounded(store.truncate(session_id, tool_call_id, text), matches=found.total)


class _Matches:
    """The first ``limit`` result lines (cut to MAX_LINE_LENGTH, a ``\\r`` in one
    shown as the two characters ``\\r``, a ``\\n`` in a file's name as ``\\n``) and a count of all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lines: list[str] = []
        self.total = 0

    def add(self, line: str) -> None:
        self.total += 1
        if len(self.lines) < self.limit:
            # The results go through store.truncate, whose cr view shows only what follows a line's
            # last \r (a redraw, as a terminal shows it): a progress bar saved in a log would take the
            # file:line: before it away. Written out as \r, the whole matched line stays in view.
            # A file's name may hold a newline (a matched line never does): written out as \n, each
            # result stays one line of the listing.
            self.lines.append(_cut(line.replace("\r", "\\r").replace("\n", "\\n")))


class _FileMatches:
    """One file's result lines, held until the file is known to be text: grep skips a
    file with a NUL byte anywhere in it, as ``rg`` does (it stops at the NUL and drops
    the file), so matches before a late NUL are not results."""

    def __init__(self, found: _Matches, name: str) -> None:
        self.found = found
        self.name = name
        self.lines: list[str] = []
        self.total = 0

    def add(self, line: str) -> None:
        self.total += 1
        if len(self.found.lines) + len(self.lines) < self.found.limit:  # the rest are only counted
            self.lines.append(line)

    def keep(self) -> None:
        """The file is text: its results count."""
        for line in self.lines:
            self.found.add(line)
        self.found.total += self.total - len(self.lines)


# ---------------------------------------------------------------- stored outputs
# Bytes of a stored output decoded and searched at a time (cut after a newline).
_SEARCH_BLOCK = 8 << 20


@dataclass(frozen=True)
class ResourceMatches:
    """What ``search_resource`` found: result lines and the count of matching lines.

    ``lines`` holds ``offset:text`` for a matching line and ``offset-text``
    for a context line (``offset`` is the byte offset of the line in the
    stored bytes, for ``read``), and ``--`` between groups that are not
    adjacent; ``total`` counts every matching line, listed or not.
    """

    lines: tuple[str, ...]
    total: int
    listed: int
    #: For the output of a command still running: the bytes searched (its whole lines so far); None
    #: when the whole output was searched.
    searched: Optional[int] = None


def _display(text: str) -> str:
    """A decoded line as shown: invalid bytes as U+FFFD, cut at MAX_LINE_LENGTH."""
    if not text.isascii():
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _cut(text.removesuffix("\r"))


def search_resource(store: ToolOutputStore, session_id: str, uri: str, pattern: str, *,
                    ignore_case: bool = False, context: int = 0, max_matches: int = 100,
                    time_limit: float = TIME_LIMIT) -> ResourceMatches:
    """Search a stored output as text, line by line, with byte offsets.

    The pattern is a Python regular expression matched against each line of
    what the model is shown of the output (its view, decoded from UTF-8; an
    invalid byte is one character), so ``.`` matches one character and
    ``(?i)`` folds any letter; ``^`` and ``$`` anchor at the line.  Each
    result names the byte offset of its line in the stored bytes.  The
    matching runs in a worker process, and may take ``time_limit`` seconds
    plus one per 16 MiB of the output.  The search holds a block of the
    output at a time, whatever ``context`` (a line longer than the block is one
    line, its view searched in pieces that overlap by twice ``_PIECE_CONTEXT``, 1 MiB: a match
    of up to half of it, look-arounds included, is found wherever it lies, a
    longer one across a piece's edge may be missed); the result holds the listing
    (``resource_listing`` makes it line by line, as the grep tool and
    ``overspill grep`` do, streaming theirs into the store).

    :param ignore_case: match regardless of case.
    :param context: lines shown before and after each matching line (``-C``);
        any size (one as large as the output's line count shows every line).
    :param max_matches: matching lines listed (the rest are counted).
    :param time_limit: seconds of matching allowed besides the per-size allowance.
    :raises ValueError: an invalid pattern or argument.
    :raises TypeError: ``time_limit`` is not a number.
    :raises PatternTooSlowError: the pattern ran out of time (the message says to narrow it).
    :raises SearchError: the worker process could not be started or failed.
    :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError: as ``store.read``.
    """
    listing = resource_listing(store, session_id, uri, pattern, ignore_case=ignore_case, context=context,
                               max_matches=max_matches, time_limit=positive_seconds(time_limit, "time_limit"))
    lines = tuple(listing.lines())
    return ResourceMatches(lines, listing.total, listing.listed, listing.searched)


def resource_listing(store: ToolOutputStore, session_id: str, uri: str, pattern: str, *, ignore_case: bool = False,
                     context: int = 0, max_matches: int = 100, time_limit: float = TIME_LIMIT,
                     abort: Optional[threading.Event] = None) -> ResourceListing:
    """``search_resource``'s search, its listing made line by line as it is read
    (``ResourceListing.lines``), so that a large ``context`` costs no memory; it
    also stops (``Cancelled``) when ``abort`` is set.

    :raises ValueError: an invalid pattern or argument, at once; the search's
        own errors (``search_resource``'s) come from ``lines``, the resource's
        from either.
    """
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError("context must be a non-negative integer")
    # No output has more lines than sys.maxsize: a larger context shows the same lines.
    context = min(context, sys.maxsize)
    if isinstance(max_matches, bool) or not isinstance(max_matches, int) or max_matches < 1:
        raise ValueError("max_matches must be a positive integer")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        compile_pattern(pattern, re.MULTILINE | flags)
    except re.error as error:
        raise ValueError(f"invalid pattern {pattern!r}: {error}") from None
    # A running command's output is searched up to its last whole line: the line being written
    # may still end otherwise ("10 passed" may become "10 passed, 3 failed").
    running = store.status(session_id, uri).state == "running"
    return ResourceListing(store, session_id, uri, pattern, flags, context, max_matches, time_limit, abort, running)


def running_note(searched: int) -> str:
    """What a search of a running command's output says of what it searched."""
    return (f"complete: false: the command is still running; searched its first {searched} bytes (its whole "
            f"lines so far): search again later, or wait")


def _line_starts(data: bytes) -> array[int]:
    """Where each line of ``data`` starts, and one past the end (as if a newline followed it)."""
    return array("q", accumulate((len(line) + 1 for line in data.split(b"\n")), initial=0))


class _ShownLines:
    """The lines of a block's view, each decoded (``surrogateescape``) when it is asked for: a
    block of short lines held as strings is many objects (about 60 bytes a line), as two arrays
    of offsets 16.  A ``\n`` is never inside a character, so a line decoded alone is the line
    of the whole block decoded."""

    __slots__ = ("_shown", "_starts", "_count")

    def __init__(self, raw: bytes, shown: bytes) -> None:
        self._shown = shown
        self._starts = _line_starts(shown)
        # The empty line after the block's last newline belongs to the next block.
        self._count = len(self._starts) - 1 - raw.endswith(b"\n")

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> str:
        return self._shown[self._starts[index]:self._starts[index + 1] - 1].decode("utf-8", "surrogateescape")


def _block(data: Payload, position: int, size: int,
           views: int) -> tuple[bytes, bytes, Union[_ShownLines, _LongLine], array[int]]:
    """The block of ``data`` searched from ``position`` (up to ``_SEARCH_BLOCK`` bytes, cut after
    its last newline unless it ends the ``size`` bytes searched): its bytes, its view, the view's
    lines, and each line's offset in the stored bytes less ``position`` (and one past the last).

    A line longer than the block (no newline in it) is one block of its own, never held whole: its
    bytes and view are empty, its lines a ``_LongLine`` (searched and shown a piece at a time)."""
    stop = min(size, position + _SEARCH_BLOCK)
    raw = bytes(data[position:stop])
    if stop < size:
        newline = raw.rfind(b"\n")
        if newline >= 0:
            raw = raw[: newline + 1]
        else:
            line = _LongLine(data, position, size, views)
            return b"", b"", line, array("q", (0, line.length + 1))
    shown = _kernels.view_bytes(raw, views) if views else None
    if shown is None:  # the block is its own view
        shown = raw
    return raw, shown, _ShownLines(raw, shown), _line_starts(raw)


# Bytes of a long line's view on either side of the part a piece answers for (at most about a
# quarter of the block): a match of up to this many bytes, look-arounds included, is found as in
# the whole line, and a longer one that crosses a piece's edge may be missed.
_PIECE_CONTEXT = 1 << 19
# Bytes of a long line's view decoded to show it (it is cut at MAX_LINE_LENGTH characters).
_SHOWN_BYTES = 4 * MAX_LINE_LENGTH + 64


def _char_start(text: Union[bytes, bytearray], at: int) -> int:
    """``at``, moved back to a character's start (past at most 3 continuation bytes): cutting the
    text there splits no well-formed character, so its parts decode as the whole does."""
    for _ in range(3):
        if at <= 0 or at >= len(text) or text[at] & 0xC0 != 0x80:
            break
        at -= 1
    return at


class _LongLine:
    """One line of a stored output (or of a file, for grep's Python search) longer than the search
    block, as ``_ShownLines`` with one line: its view is made, searched and shown a piece at a time,
    so that memory stays bounded by a few blocks whatever the line's length.

    ``length`` is its bytes, its newline included.  Its view is what ``view_bytes`` makes of it:
    escape sequences removed as a stream (a piece never cuts one, however long), then with the
    ``cr`` view only its last non-empty segment between lone ``\\r`` (and a CRLF's ``\\r``).
    """

    __slots__ = ("length", "_data", "_start", "_end", "_newline", "_views", "_segment")

    def __init__(self, data: Payload, position: int, size: int, views: int) -> None:
        self._data = data
        self._views = views
        end = position
        self._newline = False
        while end < size:  # its end: the next newline, or the end of what is searched
            window = bytes(data[end:min(size, end + _SEARCH_BLOCK)])
            newline = window.find(b"\n")
            if newline >= 0:
                end += newline
                self._newline = True
                break
            if not window:  # the end of a file read to its end (``_FileBytes``: its size was not known)
                break
            end += len(window)
        self.length = end - position + self._newline
        self._start = position
        self._end = end  # its newline excluded
        # With the cr view: (start, end, whether a CRLF's \r ends it) of the part of the stripped
        # line shown, in offsets of that stream; found once, by a first pass.
        self._segment = self._last_segment() if views & VIEW_CR else None

    def _stripped(self) -> Iterator[bytes]:
        """The line's bytes (its newline excluded), escape sequences removed (with the ansi view), in
        chunks of about a block.  A chunk never ends inside a sequence: one still going on at a
        window's end is carried to the next (its first two bytes and its last tell how it goes on)."""
        carry = b""
        position = self._start
        while position < self._end:
            stop = min(self._end, position + _SEARCH_BLOCK)
            window = carry + bytes(self._data[position:stop])
            position = stop
            carry = b""
            if not self._views & VIEW_ANSI:
                yield window
                continue
            if stop < self._end:
                escape = window.rfind(b"\x1b")
                # A sequence reaching the window's end (all of it is removed) may go on after it.
                if escape >= 0 and _kernels.view_bytes(window[escape:], VIEW_ANSI) == b"":
                    tail = window[escape:]
                    carry = tail if len(tail) <= 3 else tail[:2] + tail[-1:]
                    window = window[:escape]
            shown = _kernels.view_bytes(window, VIEW_ANSI)
            yield window if shown is None else shown

    def _last_segment(self) -> tuple[int, int, bool]:
        """``view_bytes``' cr rule over the stripped line: where its last non-empty segment between
        ``\\r`` starts and ends, and whether a ``\\r`` before the newline ends the line (it stays)."""
        start = end = None
        current = 0  # where the segment under way starts
        offset = 0
        last = b""
        for chunk in self._stripped():
            if chunk:
                last = chunk[-1:]
            body = chunk.rstrip(b"\r")
            if body:
                carriage = body.rfind(b"\r")
                start = offset + carriage + 1 if carriage >= 0 else current
                end = offset + len(body)
                if len(body) < len(chunk):  # it ends with \r: a segment starts after them
                    current = offset + len(chunk)
                elif carriage >= 0:
                    current = offset + carriage + 1
            elif chunk:
                current = offset + len(chunk)
            offset += len(chunk)
        ending = self._newline and last == b"\r"
        if start is None:  # no non-empty segment
            return 0, 0, ending
        return start, end, ending

    def _shown(self) -> Iterator[bytes]:
        """The line's view, its newline included, in chunks of about a block."""
        if self._segment is None:
            yield from self._stripped()
        else:
            start, end, ending = self._segment
            offset = 0
            for chunk in self._stripped():
                low, high = max(start - offset, 0), min(end - offset, len(chunk))
                offset += len(chunk)
                if low < high:
                    yield chunk[low:high]
                if offset >= end:
                    break
            if ending:
                yield b"\r"
        if self._newline:
            yield b"\n"

    def matches(self, search: Search) -> bool:
        """Whether the pattern is found in the line's view, searched in pieces of the block's size.

        Each piece answers for the matches that start in its part ``[owned, owned_end)``; it holds
        ``context`` bytes of the view before that part and after it, so that a match of up to that
        many bytes (look-arounds included) is judged as in the whole line.  The piece that reaches
        the line's end answers for everything up to that end."""
        block = max(_SEARCH_BLOCK, 16)
        context = max(1, min(_PIECE_CONTEXT, (block - 8) // 2))
        chunks = self._shown()
        held = bytearray()  # the view from the piece's start on
        owned = 0  # in ``held``: where the part this piece answers for starts
        exhausted = False
        while True:
            while not exhausted and len(held) <= block:
                chunk = next(chunks, None)
                if chunk is None:
                    exhausted = True
                else:
                    held += chunk
            last = exhausted and len(held) <= block
            # (cut at a character's start too: a character cut there would be read as other ones)
            end = len(held) if last else _char_start(held, block)
            owned_end = end if last else _char_start(held, end - context)
            if owned_end <= owned:  # (only with tiny test blocks) go on, a character at least
                owned_end = owned + 1
                while owned_end < end and held[owned_end] & 0xC0 == 0x80:
                    owned_end += 1
            if search.piece(bytes(held[:owned]), bytes(held[owned:owned_end]), bytes(held[owned_end:end]), last):
                return True
            if last:
                return False
            begin = _char_start(held, max(owned_end - context, 0))
            del held[:begin]
            owned = owned_end - begin

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> str:
        if index != 0:
            raise IndexError(index)
        shown = bytearray()
        for chunk in self._shown():
            shown += chunk
            if len(shown) >= _SHOWN_BYTES:
                break
        shown = shown[:_SHOWN_BYTES]
        if shown.endswith(b"\n"):
            shown = shown[:-1]
        return bytes(shown).decode("utf-8", "surrogateescape")


class ResourceListing:
    """One search of a stored output, as grep -C prints it: ``lines`` yields the
    listing (``offset:text`` for a listed match, ``offset-text`` for a context
    line, ``--`` between groups that are not adjacent) as the output is read, a
    block at a time.  Once ``lines`` is done, ``total`` counts every matching
    line, ``listed`` those listed, and ``searched`` is the bytes searched of a
    running command's output (None for a whole one).

    The lines before a match are not held while the search goes on (a context
    of a million lines would hold a million): when the match comes they are
    read again from the stored bytes, a block at a time, each block at most
    once more.
    """

    def __init__(self, store: ToolOutputStore, session_id: str, uri: str, pattern: str, flags: int, context: int,
                 limit: int, time_limit: float, abort: Optional[threading.Event], running: bool) -> None:
        self._store = store
        self._session_id = session_id
        self._uri = uri
        self._pattern = pattern
        self._flags = flags
        self._context = context
        self._limit = limit
        self._time_limit = time_limit
        self._abort = abort
        self._running = running
        self.total = 0
        self.listed = 0
        self.searched: Optional[int] = None
        self._last = -1  # number of the last line shown

    def _show(self, number: int, offset: int, text: str, separator: str) -> Iterator[str]:
        if self._context and self._last >= 0 and number > self._last + 1:
            yield "--"
        self._last = number
        yield f"{offset}{separator}{_display(text)}"

    def lines(self) -> Iterator[str]:
        """The listing's lines, in order."""
        views = view_flags(self._store.views)
        context = self._context
        # Windows of the payload (``_block``), read as they are needed where it is not mapped
        # (Redis): a whole view there held all of it in memory, twice at its peak.
        with self._store._scan(self._session_id, self._uri) as (_, data), \
                Search(self._pattern, self._flags, time_limit=self._time_limit, abort=self._abort) as search:
            size = last_newline(data) + 1 if self._running else len(data)
            starts: list[int] = []  # each block's first line number and position, to read a block again
            positions: list[int] = []
            after = 0  # trailing context lines still to show
            position = 0
            number = 0  # line number of the block's first line
            while position < size:
                raw, shown, texts, offsets = _block(data, position, size, views)
                starts.append(number)
                positions.append(position)
                cursor = 0  # the next line of this block not yet passed
                if isinstance(texts, _LongLine):
                    found = [0] if texts.matches(search) else []
                else:
                    found = search.text(shown)
                for index in found:
                    if index >= len(texts):
                        continue
                    stop = min(index, cursor + after)  # the last match's trailing context ends at this one
                    for between in range(cursor, stop):
                        yield from self._show(number + between, position + offsets[between], texts[between], "-")
                    after = max(after - (stop - cursor), 0)
                    cursor = index + 1
                    self.total += 1
                    if self.listed >= self._limit:
                        after = 0
                        continue
                    first = max(number + index - context, self._last + 1)  # the lines before it to show
                    if first < number:
                        yield from self._again(data, size, views, starts, positions, first, number)
                    for between in range(max(first - number, 0), index):
                        yield from self._show(number + between, position + offsets[between], texts[between], "-")
                    yield from self._show(number + index, position + offsets[index], texts[index], ":")
                    self.listed += 1
                    after = context
                stop = min(len(texts), cursor + after)
                for between in range(cursor, stop):
                    yield from self._show(number + between, position + offsets[between], texts[between], "-")
                after -= stop - cursor
                number += len(texts)
                position += texts.length if isinstance(texts, _LongLine) else max(len(raw), 1)
        self.searched = size if self._running else None

    def _again(self, data: Payload, size: int, views: int, starts: list[int], positions: list[int], first: int,
               end: int) -> Iterator[str]:
        """Context lines ``first`` to ``end - 1``, all in blocks before the current one, read again."""
        block = bisect_right(starts, first) - 1
        while block + 1 < len(starts):  # the last block is the current one
            number = starts[block]
            _, _, texts, offsets = _block(data, positions[block], size, views)
            for line in range(max(first, number), min(end, number + len(texts))):
                yield from self._show(line, positions[block] + offsets[line - number], texts[line - number], "-")
            block += 1


def listing_summary(listing: ResourceListing, more: str) -> str:
    """A listing's last line, after a newline: the count of matching lines, then ``more``."""
    return f"\n[{listing.total} matching line{'s' if listing.total != 1 else ''}{more}]"


class SearchFailed(Exception):
    """The search's own error (``error``), told apart from the store's while its listing is stored."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


# Characters of a listing handed to the store at a time.
_LISTING_CHUNK = 1 << 16


def store_listing(store: ToolOutputStore, session_id: str, tool_call_id: str, listing: ResourceListing,
                  summary: Callable[[], str], *, name: Optional[str] = None) -> Optional[TruncateResult]:
    """``listing``'s lines, then ``summary()`` (called once they are done), bounded by
    ``store.truncate_stream`` as they are made (a long listing is stored whole and
    previewed, in bounded memory); None when the listing has no line (nothing is stored).

    :raises SearchFailed: the search failed (its error is ``error``; nothing is stored).
    :raises StorageError: the listing could not be stored.
    """
    lines = listing.lines()

    def following() -> Optional[str]:
        try:
            return next(lines)
        except StopIteration:
            return None
        except Exception as error:  # the search's, told apart from the store's own
            raise SearchFailed(error) from None

    line = following()
    if line is None:
        return None

    def chunks() -> Iterator[bytes]:
        pieces = [line]
        held = len(line)
        while (more := following()) is not None:
            pieces.append("\n" + more)
            held += len(more) + 1
            if held >= _LISTING_CHUNK:
                yield encode_content("".join(pieces))
                pieces, held = [], 0
        pieces.append(summary())
        yield encode_content("".join(pieces))

    try:
        return store.truncate_stream(session_id, tool_call_id, chunks(), name=name)
    finally:
        lines.close()  # a failed write ends the search (its view and worker) at once


def _grep_resource(store: ToolOutputStore, session_id: str, tool_call_id: str, uri: object, pattern: str,
                   ignore_case: bool, context: object, max_matches: int,
                   abort: Optional[threading.Event]) -> ToolResult:
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        return failure("context must be a non-negative integer")

    def summary() -> str:
        more = ""
        if listing.total > listing.listed:
            # Raising max_matches helps only below the most the schema allows; past it, only a narrower pattern does.
            raise_it = " or raise max_matches" if max_matches < MAX_MATCHES else ""
            more = f"; {listing.total - listing.listed} not listed: narrow the pattern{raise_it}"
        if listing.searched is not None:
            more += f"; {running_note(listing.searched)}"
        return listing_summary(listing, more)

    try:
        try:
            listing = resource_listing(store, session_id, uri, pattern,  # type: ignore[arg-type]
                                       ignore_case=ignore_case, context=context, max_matches=max_matches,
                                       abort=abort)
            # Streamed into the store: a listing with a large context is never held whole.
            stored = store_listing(store, session_id, tool_call_id, listing, summary)
        except SearchFailed as failed:
            raise failed.error from None
    except Cancelled:
        return failure("grep was cancelled")
    except OverspillError as error:
        return failure(str(error))
    except ValueError as error:
        return failure(str(error))
    running = {} if listing.searched is None else {"complete": False, "searched": listing.searched}
    if stored is None:
        text = f"no matches for {pattern!r} in {uri}"
        if listing.searched is not None:
            text += f" so far [{running_note(listing.searched)}]"
        return ToolResult(shortened_line(text), False, False, None, {"matches": 0, **running})
    return bounded(stored, matches=listing.total, **running)


def _walk(root: str, shown_root: str, overrides: Overrides) -> Iterator[tuple[str, bool, str]]:
    """Regular files under ``root`` as rg's walk (``--sort=path``) gives them:
    each with whether it was given by name and its name as rg prints it
    (``shown_root`` joined with the names under it).

    A folder's entries come in the order of their names' bytes, a subfolder's
    files before the next name's; ``overrides`` (the globs) decide what is
    skipped, a folder with all it holds, but never ``root`` itself nor a file
    named as it.  FIFOs, devices and sockets are never yielded (opening one
    can block for ever: a FIFO without a writer, ``/proc/self/fd/0``);
    symlinks inside the tree are not followed, as ``rg`` does not follow them.
    """
    try:
        info = os.stat(root)  # the path the caller named is followed
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        yield root, True, shown_root
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    folders = [iter(_entries(root, shown_root))]  # a stack, not recursion: trees can be deep
    while folders:
        entry = next(folders[-1], None)
        if entry is None:
            folders.pop()
            continue
        path, name, is_folder = entry
        if overrides.skips(name, is_folder):
            continue
        if is_folder:
            folders.append(iter(_entries(path, name)))
        else:
            yield path, False, name


def _entries(folder: str, name: str) -> list[tuple[str, str, bool]]:
    """The folders and regular files in ``folder`` (rg names it ``name``), sorted by
    their names' bytes: (path, rg's name, is a folder); symlinks and other kinds
    left out, an unreadable folder empty (rg --no-messages says nothing of it)."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        found.append((entry.name, True))
                    elif entry.is_file(follow_symlinks=False):
                        found.append((entry.name, False))
                except OSError:
                    continue  # vanished: not a match
    except OSError:
        return []
    found.sort(key=lambda item: os.fsencode(item[0]))
    return [(os.path.join(folder, entry), os.path.join(name, entry), is_folder) for entry, is_folder in found]


def _shown_name(name: str) -> str:
    """A walked file's name as the rg search shows it: its bytes decoded from UTF-8 with each
    invalid one as U+FFFD.  (``os.scandir`` gives a name that is not UTF-8 with
    ``surrogateescape``'s lone surrogates, which no answer can carry.)"""
    if name.isascii():
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _open_regular(file: Union[str, Path], named: bool) -> BinaryIO:
    """``file`` opened for reading if it is still a regular file (it may have been
    replaced since it was listed): O_NONBLOCK so that a FIFO put in its place
    cannot block the open, and fstat decides.

    :raises OSError: not a regular file, or it cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    if not named:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(file, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{file} is not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


class _BinaryFile(Exception):
    """A NUL byte was read: the file is binary (rg's rule), and skipped."""


class _FileBytes:
    """A regular file's bytes up to its end, sliced as ``_LongLine`` slices a payload (a slice is
    read when taken, and is short only at the end, as a ``bytes`` slice is): every byte the search
    reads passes here, so the first NUL ends the file's search at once (``_BinaryFile``), however
    far from a newline it lies.

    The end is where a read comes back empty, not the size the file had when opened: a file
    of /proc or /sys says 0 and has content, and a log may grow while it is searched (rg reads
    both to their end too).

    :raises _BinaryFile: (from a slice) it holds a NUL.
    :raises OSError: (from a slice) it cannot be read.
    """

    __slots__ = ("_descriptor",)

    def __init__(self, descriptor: int) -> None:
        self._descriptor = descriptor

    def __getitem__(self, window: slice) -> bytes:
        start, stop = window.start, window.stop
        parts = []
        while start < stop:
            part = os.pread(self._descriptor, stop - start, start)
            if not part:  # its end (a read may be short before it: /proc gives a page at a time)
                break
            if b"\0" in part:
                raise _BinaryFile
            parts.append(part)
            start += len(part)
        return b"".join(parts)


def _search_file(data: _FileBytes, search: Search, results: _FileMatches) -> None:
    """``data``'s lines where ``search`` finds the pattern, added to ``results``: blocks of whole
    lines of about ``_SEARCH_BLOCK`` bytes, and a line longer than that a ``_LongLine`` (searched
    in overlapping pieces, as in a stored output), so that memory stays bounded.  The file is read
    to its end, its size unknown until then (``_FileBytes``).

    :raises _BinaryFile: the file holds a NUL (what was added is then not kept).
    """
    number = 1  # the block's first line
    position = 0
    while True:
        block = data[position:position + _SEARCH_BLOCK]
        if not block:
            break
        # A short block is the file's last; a full one may be followed by more.
        newline = block.rfind(b"\n") if len(block) == _SEARCH_BLOCK else len(block) - 1
        if newline < 0:
            line = _LongLine(data, position, sys.maxsize, 0)  # (to the file's end, wherever it lies)
            if line.matches(search):
                text = line[0].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                results.add(f"{results.name}:{number}:{text}")
            position += line.length
            number += 1
            continue
        block = block[: newline + 1]
        matching = search.lines(block)
        if matching:
            lines = block.split(b"\n")
            for index in matching:
                text = lines[index].decode("utf-8", "replace").rstrip("\r\n")
                results.add(f"{results.name}:{number + index}:{text}")
        number += block.count(b"\n")
        position += len(block)


def _search_files(root: str, shown_root: str, regex: re.Pattern[str], pattern: str, glob: Optional[str],
                  overrides: Overrides, ignore_case: bool, cwd: PathArg, found: _Matches,
                  abort: Optional[threading.Event]) -> Optional[ToolResult]:
    """Files under ``root``, with ``rg`` when it is on PATH, else line by line
    with the matching in a worker (``Search``: a time budget, ``abort``).

    :raises PatternTooSlowError, SearchError: the Python search ran out of time or failed.
    :raises Cancelled: ``abort`` was set.
    """
    ripgrep = _ripgrep()
    if ripgrep is not None:
        try:
            return _ripgrep_search(ripgrep, shown_root, pattern, glob, ignore_case, cwd, found)
        except _RefusedByRipgrep:
            pass  # look-around, a back-reference, \Z...: the pattern is Python's, so Python searches
    with Search(pattern, re.IGNORECASE if ignore_case else 0, time_limit=TIME_LIMIT, abort=abort) as search:
        for file, named, shown in _walk(root, shown_root, overrides):
            name = _shown_name(shown.removeprefix("./"))  # as the rg search shows it
            results = _FileMatches(found, name)
            try:
                with _open_regular(file, named) as handle:
                    if file_is_binary(handle):  # the common case, told by its first bytes
                        continue
                    _search_file(_FileBytes(handle.fileno()), search, results)
                results.keep()
            except _BinaryFile:
                continue  # binary after all (rg's rule: a NUL anywhere): its matches are dropped
            except OSError:
                continue  # unreadable or vanished: not a match
    return None


class _RefusedByRipgrep(Exception):
    """rg's regex engine does not take a pattern that Python's re does, or would give it another meaning,
    or rg cannot be started with it (a pattern or glob past the kernel's limit on one argument)."""


# One token of a Python pattern, for ripgrep_pattern: an escape, a class, a group's opening (with
# its (?...) prefix), a repetition (with its lazy ?), or one character.
_TOKEN = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]])*\]|\((?:\?(?:P<\w+>|P=\w+\)|[#=!:]|<[=!]|[-a-zA-Z]*[:)]))?"
                    r"|(?:[*+?]|\{\d*(?:,\d*)?\})\??|.", re.DOTALL)
# In a class, what Rust reads as a nested class, a POSIX class ([:alpha:]) or a set operation
# and Python as plain characters.
_RUST_CLASS_SYNTAX = re.compile(r"\\.|(\[|&&|--|~~)", re.DOTALL)
_FLAGS = re.compile(r"\(\?([-a-zA-Z]*)[:)]")
# rg's $ for Python's at a line's end, where a CRLF's \r is optional (see _regex_worker.LINES).
_LINE_END = r"(?:\r?$)"


def _repeats(token: str) -> bool:
    return token[0] in "*+?" or (token[0] == "{" and len(token) > 1)


def ripgrep_pattern(pattern: str) -> Optional[str]:
    """``pattern`` (one Python's ``re`` takes) as given to rg so that it matches
    the lines the Python search matches, or None when only Python can search it.

    Each ``$`` becomes ``(?:\\r?$)``, as the Python search lets a line's final
    ``\\r`` (a CRLF file's) go unmatched.  None for what both engines take with
    different meanings: in a class, a ``[`` (Rust: a POSIX class such as
    ``[[:alpha:]]``, or a nested one; Python: characters) or ``&&``, ``--``,
    ``~~`` (Rust's set operations); a repetition repeated (``a*+``: possessive
    for Python); the verbose flag ``x`` (Rust drops spaces inside classes
    too); ``\\<``, ``\\>``, ``\\b{`` (word assertions in newer Rust); ``\\B``
    (Python's never matches an empty line, Rust's does); a ``$``
    followed by more than the end of its alternative or group (``$\\b``: only
    there could the optional ``\\r`` tell the two rules apart).  A pattern rg
    refuses outright (look-around, back-references, ``\\Z``) rg itself
    reports (``_RefusedByRipgrep``).
    """
    tokens = _TOKEN.findall(pattern)
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token[0] == "[" and any(match.group(1) for match in _RUST_CLASS_SYNTAX.finditer(token[1:-1])):
            return None
        if _repeats(token) and following and _repeats(following):
            return None
        flags = _FLAGS.fullmatch(token)
        if flags and "x" in flags.group(1):
            return None
        if token in ("\\<", "\\>", "\\B") or (token == "\\b" and following.startswith("{")):
            return None
        if token == "$" and not _ends_its_branch(tokens, index + 1):
            return None
    return "".join(_LINE_END if token == "$" else token for token in tokens)


def _ends_its_branch(tokens: list[str], start: int) -> bool:
    """Whether nothing that matches or asserts follows ``tokens[start - 1]`` in the
    pattern: only repetitions, closing parentheses and other alternatives."""
    depth = 0  # of groups opened after start, inside an alternative being passed over
    passing = False  # inside another alternative: its content does not follow
    for token in tokens[start:]:
        if passing:
            if token.startswith("(") and token[-1] != ")":
                depth += 1
            elif token == ")":
                if depth:
                    depth -= 1
                else:
                    passing = False  # its group closed: what follows the group follows the $ too
        elif token == "|":
            passing = True
        elif token != ")" and not _repeats(token):
            return False
    return True


# Seconds rg may take over one search.
_RIPGREP_TIMEOUT = 300


def _ripgrep_search(ripgrep: str, shown_root: str, pattern: str, glob: Optional[str], ignore_case: bool,
                    cwd: PathArg, found: _Matches) -> Optional[ToolResult]:
    """The search of ``_search_files`` by ``rg``: None when it ran, else the failure for the model.

    :raises _RefusedByRipgrep: rg's engine refused the pattern (Python's re took it), or rg could
        not be started (an argument too long for the kernel): nothing was searched, and the caller
        searches in Python.
    """
    # Search what the Python fallback searches: hidden and ignored files too, never .git. --null
    # puts a NUL after the file's name: a result line always has one, rg's notice of a binary file
    # never. --no-mmap: reading a file through a memory map, rg looks for a NUL in its start only.
    # --encoding=none: the bytes as they are (rg would decode a UTF-16 file with a BOM, which the
    # Python search skips for its NULs, and drop a UTF-8 BOM the Python search keeps).
    command = [ripgrep, "--line-number", "--with-filename", "--no-heading", "--color=never", "--sort=path",
               "--null", "--no-mmap", "--encoding=none", "--hidden", "--no-ignore", "--no-messages"]
    if ignore_case:
        command.append("--ignore-case")
    if os_string_problem(pattern, "pattern") is not None:
        # A NUL or a lone surrogate cannot be an argument; Python's re takes the pattern as it is.
        raise _RefusedByRipgrep
    translated = ripgrep_pattern(pattern)
    if translated is None:  # rg would take it, with another meaning
        raise _RefusedByRipgrep
    # The user's glob first: the last matching glob decides, and .git & co. stay out.
    command += [f"--glob={glob}" for glob in ([glob] if glob else []) + list(_SKIPPED_GLOBS)]
    command += ["--regexp", translated, "--", shown_root]
    try:
        # Read as it comes (_RipgrepOutput), never held whole: its size is the matching lines' (a
        # 200 MB log whose every line matches, or one line of gigabytes), whatever max_matches is.
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    except OSError:
        # rg could not be started: mostly a pattern or glob past the kernel's limit on one argument
        # (128 KiB: E2BIG), which rg has no other way to take (--glob has no file form; -f reads one
        # pattern a line and drops a final \r), or rg gone since it was found. The Python search
        # searches the same files for the same lines.
        raise _RefusedByRipgrep from None
    assert process.stdout is not None and process.stderr is not None
    errors = bytearray()  # its standard error, read beside (a full pipe would stop rg), the start kept
    reader = threading.Thread(target=_keep_start, args=(process.stderr, errors), daemon=True)
    reader.start()
    timed_out = threading.Event()

    def stop() -> None:
        if process.poll() is None:
            timed_out.set()
            process.kill()  # its output then ends, and the parse with it

    timer = threading.Timer(_RIPGREP_TIMEOUT, stop)
    timer.daemon = True
    timer.start()
    try:
        output = _RipgrepOutput(process.stdout)
        _ripgrep_results(output, found)
        returncode = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:  # the parse failed (or was interrupted): rg goes with it
            process.kill()
            process.wait()
        reader.join()
        process.stdout.close()
        process.stderr.close()
    if timed_out.is_set():
        return failure(f"grep stopped after {_RIPGREP_TIMEOUT} s; narrow the path or glob")
    # The results parsed so far count only when rg ran to its end (the caller drops them otherwise).
    if returncode not in (0, 1):
        # rg parses the pattern before it reads a file: a refusal comes with no results. (Its
        # message, several lines, ends with advice about its own flags, useless to the model.)
        if not output.printed and b"regex" in errors.lower():
            raise _RefusedByRipgrep
        reason = " ".join(errors.decode("utf-8", "replace").split()) or "no message"
        return failure(f"rg failed with exit status {returncode}: {reason}; check the path and glob")
    return None


# Bytes of rg's output read at a time.
_RIPGREP_CHUNK = 1 << 16
# Bytes of rg's standard error kept for its message (with --no-messages, only its own error: a line or a few).
_RIPGREP_ERRORS = 1 << 16


def _keep_start(pipe: BinaryIO, kept: bytearray) -> None:
    """Read ``pipe`` to its end, keeping its first ``_RIPGREP_ERRORS`` bytes in ``kept``."""
    while chunk := pipe.read(_RIPGREP_CHUNK):
        kept += chunk[:max(_RIPGREP_ERRORS - len(kept), 0)]


# The NUL after a result's name; the end of a notice's line, or the NUL that makes it a result's name.
_NUL = re.compile(b"\0")
_NUL_OR_NEWLINE = re.compile(b"[\0\n]")


class _RipgrepOutput:
    """rg's standard output, read a chunk at a time as its lines are parsed (``next``): what is
    held is a chunk and what is parsed of it (a name, a notice, at most ``_SHOWN_BYTES`` of a
    matched line), however much rg prints.  Offsets are from the first byte not yet parsed.

    Each result is the file's name, a NUL, then "LINE:text" up to a "\\n": the name comes first,
    found by its NUL, since a name may hold a "\\n" (split at each "\\n", 'new\\nline.txt' was
    listed as 'line.txt'). The text ends at the next "\\n" only: str.splitlines() would also break
    a matched line at \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028 or U+2029 and count its pieces
    as matches.  After a file's results, "FILE: binary file matches (found "\\0" byte around offset
    N)" or "FILE: WARNING: stopped searching binary file after match (...)" is a notice that the
    file has a NUL after the lines rg printed; a notice holds no NUL (a result of a file whose name
    starts so does).
    """

    __slots__ = ("_pipe", "_held", "_at", "_ended", "_name", "_notice", "printed")

    def __init__(self, pipe: BinaryIO) -> None:
        self._pipe = pipe
        self._held = b""
        self._at = 0  # in ``_held``: the first byte not yet parsed
        self._ended = False
        self._name = b""  # the file of the last result, as rg names it
        self._notice: Optional[bytes] = None  # how a notice about it starts; None at first and after one
        self.printed = False  # whether rg printed anything

    def next(self) -> Optional[tuple[bytes, Optional[bytes], bool]]:
        """The next line parsed, None at the output's end.  A result is its file's name, the first
        bytes of its "LINE:text" (cut at a character's start when it is over ``_SHOWN_BYTES``:
        what can be shown of it, decoded as the whole line is) and whether a byte other than
        \\r follows those (else a CRLF's \\r, or a run of them, ends the line); a notice that the
        last result's file is binary is that name, None and False."""
        held, at, notice = self._held, self._at, self._notice
        # Most lines: a short result within the chunk held, told with two searches.
        if notice is None or (len(held) - at >= len(notice) and not held.startswith(notice, at)):
            null = held.find(b"\0", at)
            if null >= 0:
                end = held.find(b"\n", null, null + _SHOWN_BYTES + 2)
                if end >= 0:
                    self._at = end + 1
                    return self._result(held[at:null]), held[null + 1:end], False
        if not self._pending():
            return None
        if notice is not None and self._starts_with(notice):
            _, byte = self._find(_NUL_OR_NEWLINE, len(notice))
            if byte != b"\0":
                self._take(len(notice))  # (the name may hold a "\n")
                self._line(0)  # (to its end)
                self._notice = None
                return self._name, None, False
        null, _ = self._find(_NUL)
        if null < 0:
            return None  # a notice of a file named by path, whose matches rg did not print: no result
        name = self._take(null)
        self._take(1)
        text, other = self._line(_SHOWN_BYTES + 1)
        if len(text) > _SHOWN_BYTES:
            cut = _char_start(text, _SHOWN_BYTES)
            other = other or bool(text[cut:].strip(b"\r"))
            text = text[:cut]
        return self._result(name), text, other

    def _result(self, name: bytes) -> bytes:
        """``name``, a result's file: a notice after it is about this file."""
        if self._notice is None or name != self._name:
            self._name = name
            self._notice = name + b": "
        return name

    def _more(self) -> bool:
        """Read another chunk, dropping what was parsed: False at the output's end."""
        chunk = b"" if self._ended else self._pipe.read(_RIPGREP_CHUNK)
        if not chunk:
            self._ended = True
            return False
        self.printed = True
        self._held = self._held[self._at:] + chunk
        self._at = 0
        return True

    def _pending(self) -> bool:
        """Whether any of the output is left to parse."""
        return self._at < len(self._held) or self._more()

    def _starts_with(self, prefix: bytes) -> bool:
        """Whether what is left starts with ``prefix``."""
        while len(self._held) - self._at < len(prefix) and self._more():
            pass
        return self._held.startswith(prefix, self._at)

    def _find(self, pattern: re.Pattern[bytes], start: int = 0) -> tuple[int, bytes]:
        """Where ``pattern`` (one byte) first matches from offset ``start`` on, and that byte;
        (-1, b"") when it does not before the output's end."""
        while True:
            found = pattern.search(self._held, self._at + start)
            if found is not None:
                return found.start() - self._at, found.group()
            start = len(self._held) - self._at
            if not self._more():
                return -1, b""

    def _take(self, count: int) -> bytes:
        """The next ``count`` bytes, parsed."""
        taken = self._held[self._at:self._at + count]
        self._at += count
        return taken

    def _line(self, keep: int) -> tuple[bytes, bool]:
        """The rest of the line, parsed up to its "\\n" (or the output's end): its first ``keep``
        bytes, and whether a byte other than \\r follows them (the rest is read, never held)."""
        kept = b""
        other = False
        while True:
            end = self._held.find(b"\n", self._at)
            stop = len(self._held) if end < 0 else end
            room = keep - len(kept)
            if room > 0:
                kept += self._held[self._at:min(stop, self._at + room)]
            if not other and stop - self._at > room:
                other = bool(self._held[self._at + room:stop].strip(b"\r"))
            self._at = stop + (end >= 0)
            if end >= 0 or not self._more():
                return kept, other


def _ripgrep_results(output: _RipgrepOutput, found: _Matches) -> None:
    """rg's results, parsed as they are read, added to ``found`` file by file (a file's results are
    dropped when a notice says it is binary).  The line's own \\r before its "\\n" goes, as the
    Python search drops it."""
    results: Optional[_FileMatches] = None
    current = b""  # the file of ``results``, as rg names it
    while (line := output.next()) is not None:
        name, text, other = line
        if text is None:  # a notice: the file is binary, its results are not
            results = None
            continue
        if results is None or name != current:
            if results is not None:
                results.keep()
            current = name
            results = _FileMatches(found, name.decode("utf-8", "replace").removeprefix("./"))
        shown = f"{results.name}:{text.decode('utf-8', 'replace')}"
        results.add(shown if other else shown.rstrip("\r"))
    if results is not None:
        results.keep()
