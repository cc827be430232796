"""The read tool: a page of a stored output, or numbered lines of a file."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up (``overspill run`` imports every tool); never evaluated
    from collections.abc import Callable
    from pathlib import Path
    from typing import BinaryIO, Optional, Union

    from ..config import Limits

from .._arguments import os_string_problem
from .._frontend import (binary_page, end_of_resource, lost_end, page_argument_problem, page_request, read_page,
                         stored_copy_end)
from ..config import MAX_READ_BYTES
from ..errors import OverspillError
from ..store import ToolOutputStore
from .._binary import file_is_binary
from .._buffers import int_text
from ._result import MAX_LINE_LENGTH, MAX_READ_LINES, ToolResult, failure

__all__ = ["page_within", "read"]

# Bytes of a binary page shown in hex.
_HEX_BYTES = 16
# Longest raw line read at once; the rest of a longer line is skipped unread.
_LINE_READ = MAX_LINE_LENGTH * 4 + 1
# Bytes of a shown line's rest skipped to reach the line after it on the same page: a page ends at
# a line longer than this (reading it all would take seconds per gigabyte).
_SKIP_BOUND = 16 << 20
# Characters a resource page's answer may hold besides the page's own: the line naming its bytes when
# ``framed`` (at most about 120 characters) and its closing hint or note (the longest, a running
# command's or a capped stored copy's, about 230), with 19-digit numbers and a tool-output URI, with
# room to spare.
_NOTES_ROOM = 512


def page_within(characters: int) -> int:
    """The most bytes of a resource page (``read``'s ``page``) whose whole answer, its frame and closing
    hint or note included, is at most ``characters`` characters: for a host whose framework shows the model only so
    much of an answer.  A byte decodes to at most one character (an undecodable one to one U+FFFD), so
    every byte such a page holds reaches the model, and its hint names the next offset exactly.

    :raises ValueError: ``characters`` leaves no room for a byte beside the notes.
    """
    if characters <= _NOTES_ROOM:
        raise ValueError(f"a page within {characters} characters has no room beside its notes ({_NOTES_ROOM})")
    return characters - _NOTES_ROOM


def read(store: ToolOutputStore, session_id: str, tool_call_id: str, *, resource: Optional[str] = None,
         path: Optional[str] = None, offset: Optional[int] = None, limit: Optional[int] = None,
         cwd: Union[str, "os.PathLike[str]", None] = None, limits: Optional[Limits] = None,
         page: Optional[int] = None, framed: bool = False) -> ToolResult:
    """Read a page of a ``tool-output://`` resource, or lines of a file.

    With ``resource``: ``offset`` and ``limit`` are bytes (as ``store.read``; the URI may
    carry them too, ``?offset=N&limit=M``, as MCP's ``resources/read`` takes it), and a
    closing hint names the next offset when more follows.  With
    ``path``: ``offset`` is the first line (1-based; 0 also means the first), ``limit`` the number of
    lines (default ``MAX_READ_LINES``), at most ``MAX_READ_BYTES`` bytes; lines
    are numbered and each is cut at ``MAX_LINE_LENGTH`` characters (a page ends after a
    line longer than ``_SKIP_BOUND`` bytes, the rest of which is not read). A file with a NUL
    in its first bytes, or in a line the page would show, is binary: refused.

    :param cwd: the folder a relative ``path`` is read from (the host's choice).
    :param limits: the host's bound on what the model is shown (the MCP
        server's): a file's page then takes at most ``limits.max_lines``
        lines and ``limits.max_bytes`` bytes (and ``limits.max_tokens``
        o200k tokens when set) besides its closing hint, the first line cut
        to fit when it alone does not (to one character at least, its cut
        named in the closing hint when its note does not fit beside it; a
        bound too small for that is an error).
    :param page: the most bytes of a resource's page (the host's choice, ``page_within``), for a host
        whose framework shows the model only so much of an answer: the ``limit`` when none is asked
        for, and the cap of one asked for (as an argument or in the URI); the closing hint names
        where the page ended, as always.
    :param framed: for a host that strips the answer's surrounding whitespace before the model sees
        it (smolagents' ``ToolCallingAgent``): a resource's answer starts with a line naming the page's
        bytes (``[URI: bytes START to END of SIZE]``), and a last page that no note closes ends with
        ``[end of URI]`` after a blank line, so no byte of the page is at either end of the answer.
    :raises ConfigError: ``limits.max_tokens`` is set and the ``tokens``
        extra is not installed.
    """
    if (resource is None) == (path is None):
        return failure("give exactly one of resource (a tool-output:// URI) or path (a file)")
    if resource is not None:
        return _read_resource(store, session_id, resource, offset, limit, page, framed)
    return _read_file(path, offset, limit, cwd, limits)


def _read_resource(store: ToolOutputStore, session_id: str, uri: object, offset: Optional[int],
                   limit: Optional[int], most: Optional[int] = None, framed: bool = False) -> ToolResult:
    try:
        # Every URI, with a query (tool-output://ID?offset=N&limit=M, as resources/read takes it) or
        # without: one rule for the offset either way (at most 18 digits, as resources/read and
        # ``overspill read --offset`` take it), not one that a ``?limit`` in the URI switched on.
        uri, offset, limit = page_request(uri, offset, limit)
        if most is not None and (limit is None or (isinstance(limit, int) and limit > most)):
            # (a limit that is no integer is left for read_page to refuse)
            limit = most
        page = read_page(store, session_id, uri, offset, limit)
        binary = binary_page(store, session_id, page, offset, limit)
    except OverspillError as error:
        return failure(str(error))
    resource = page.resource
    size = resource.size
    start, following, content = page.offset, page.next, page.content
    if binary is not None:
        data, start, following = binary
        content = _describe_bytes(resource.mime, resource.uri, size, start, data) if data else ""
    metadata = {"offset": start, "next": following, "size": size, "uri": resource.uri, "complete": page.complete}
    # The frame's first line: what comes after it, up to the closing hint or note, is the page's own.
    end = size if following is None else following
    head = f"[{resource.uri}: bytes {start} to {end} of {size}]\n" if framed else ""
    if following is None and not page.complete:
        try:
            lost = lost_end(store, session_id, page)
        except OverspillError:
            lost = None  # (gone since the page was read: said as for a running one)
        if lost is not None:
            # Its owner is gone: what was sealed is all there will ever be.
            return ToolResult(f"{head}{content}\n\n[{lost}]", False, False, None, metadata)
        # A background command's output: the page ends where its sealed prefix does, for now.
        hint = (f"\n\n[complete: false; the output so far ends at byte {size} of {resource.uri}: read again "
                f"with offset={size} later, or wait(resource=..., offset={size}) for more]")
        return ToolResult(head + content + hint, False, False, None, {**metadata, "next": size})
    if following is None:
        if start >= size and size:
            # At or past the end: an empty last page (no next), said in one line rather than shown as nothing.
            content = f"[{end_of_resource(resource, offset or 0)}]"
        try:
            capped = stored_copy_end(store, session_id, page)
        except OverspillError as error:
            return failure(str(error))
        if capped is not None:
            # The stored copy ends before the output did: a reader must not take its end for the output's.
            content = f"{content}\n\n[{capped}]" if content else f"[{capped}]"
            metadata["stored_copy_ends"] = True
        elif framed and not (start >= size and size):
            # Nothing closes the last page: a line does, so its last bytes are not the answer's end.
            content = f"{content}\n\n[end of {resource.uri}]"
        return ToolResult(head + content, False, False, None, metadata)
    hint = (f"\n\n[{size - following} more bytes of {resource.uri}: "
            f"read again with offset={following} to continue]")
    return ToolResult(head + content + hint, False, True, None, metadata)


def _describe_bytes(mime: str, uri: str, size: int, start: int, data: bytes) -> str:
    """A page of a binary resource in one line: where it is and its first bytes in hex."""
    more = " ..." if len(data) > _HEX_BYTES else ""
    return (f"[binary ({mime}): bytes {start} to {start + len(data)} of the {size} bytes of {uri}, "
            f"not decoded as text; they begin {data[:_HEX_BYTES].hex(' ')}{more}]")


def _read_line(file: BinaryIO) -> Optional[tuple[bytes, bool]]:
    """The next line (without its newline) cut to a bounded length, and whether
    it was cut (its rest is then left unread: ``_skip_rest``); None at the end of the file."""
    raw = file.readline(_LINE_READ)
    if not raw:
        return None
    if raw.endswith(b"\n"):
        return raw[:-1].removesuffix(b"\r"), False
    if len(raw) < _LINE_READ:
        return raw, False  # the last line, without a newline
    return raw, True


def _skip_rest(file: BinaryIO, bound: Optional[int] = None) -> bool:
    """Skip the rest of a cut line, its newline included: True once past it (or at the end of the
    file), False when ``bound`` bytes of it were skipped and it goes on."""
    skipped = 0
    while bound is None or skipped < bound:
        rest = file.readline(1 << 20)
        if not rest or rest.endswith(b"\n"):
            return True
        skipped += len(rest)
    return False


def _read_file(path: object, offset: Optional[int], limit: Optional[int],
               cwd: Union[str, "os.PathLike[str]", None], limits: Optional[Limits] = None) -> ToolResult:
    if not isinstance(path, str) or not path:
        return failure("path must be a non-empty string")
    problem = os_string_problem(path, "path")
    if problem:
        return failure(problem)
    # The schema shares ``offset`` (minimum 0) with resources, so 0 is valid here too: the first line.
    problem = page_argument_problem(offset, limit)
    if problem:
        return failure(problem)
    first = max(offset or 1, 1)
    count = limit or MAX_READ_LINES
    size, tokens = MAX_READ_BYTES, None
    if limits is not None:
        count, size = min(count, limits.max_lines), min(size, limits.max_bytes)
        if limits.max_tokens is not None:
            from .._tokens import counter

            tokens = (limits.max_tokens, counter())
    # Joined as given: pathlib would drop a trailing "/" or "/." and read a file named as a folder.
    target = os.path.join(cwd or ".", path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return failure(f"no such file: {path}")
    except OSError as error:
        return failure(f"cannot read {path}: {error.strerror}")
    if stat.S_ISDIR(info.st_mode):
        return failure(f"{path} is a directory, not a file; list it with bash or search it with grep")
    if not stat.S_ISREG(info.st_mode):
        return failure(f"{path} is not a regular file")
    try:
        # Opened without blocking and judged by what was opened: a FIFO or device put in the
        # file's place since the look above would otherwise block the open (or the reads).
        descriptor = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
        try:
            opened = os.fstat(descriptor)
        except OSError:
            os.close(descriptor)
            raise
        if not stat.S_ISREG(opened.st_mode):
            os.close(descriptor)
            return failure(f"{path} is not a regular file")
        with os.fdopen(descriptor, "rb") as file:
            if file_is_binary(file):
                return failure(f"{path} looks binary (it contains NUL bytes); it cannot be read as text")
            return _numbered_lines(file, path, first, count, size, tokens)
    except OSError as error:
        return failure(f"cannot read {path}: {error.strerror}")


def _numbered_lines(file: BinaryIO, path: str, first: int, count: int, max_bytes: int = MAX_READ_BYTES,
                    tokens: Optional[tuple[int, Callable[[str], int]]] = None) -> ToolResult:
    """Up to ``count`` numbered lines from line ``first``, within ``max_bytes``
    (and ``tokens``: ``(max_tokens, count)``) and a closing hint when more follow."""
    number = 0
    lines: list[str] = []
    used = 0
    more = False
    unread = None  # the number of a shown line whose rest was not all skipped: the page ends there
    squeezed = ""  # how the page's one line was cut, when its own note did not fit beside it
    while True:
        if len(lines) == count:
            # Whether a line follows takes one byte of it, never the whole of a long one.
            more = bool(file.read(1))
            break
        line = _read_line(file)
        if line is None:
            break
        number += 1
        raw, cut = line
        if number < first:
            if cut:
                _skip_rest(file)  # the lines before the page are counted: each to its newline
            continue
        if b"\0" in raw:
            # A NUL past the first bytes sniffed: rg and grep take the file for binary too.
            return failure(f"{path} looks binary (line {number} contains NUL bytes); it cannot be read as text")
        text = raw.decode("utf-8", "replace")
        if cut or len(text) > MAX_LINE_LENGTH:
            text = text[:MAX_LINE_LENGTH] + f"… [line cut at {MAX_LINE_LENGTH} characters]"
        numbered = f"{number:>6}\t{text}"
        size = len(numbered.encode("utf-8", "surrogateescape")) + 1
        if lines and used + size > max_bytes:
            more = True
            break
        if size > max_bytes:  # the first line alone is over a host's bound: cut further
            cut_line = _cut_line(number, text, lambda shown: _utf8(shown) + 1 <= max_bytes, f"max_bytes {max_bytes}")
            if cut_line is None:
                return failure(_too_small(path, number, f"max_bytes {max_bytes}"))
            numbered, squeezed = cut_line
            size = _utf8(numbered) + 1
        lines.append(numbered)
        used += size
        # The rest of a cut line (never shown) is skipped to reach the next line, within a
        # bound: a line of gigabytes would take seconds per page, so the page ends at it.
        if cut and not _skip_rest(file, _SKIP_BOUND):
            more, unread = True, number
            break
    if not lines:
        if number == 0:
            return ToolResult("(empty file)", False, False, None, {"lines": 0})
        return failure(f"offset {int_text(first)} is past the end of {path}, which has {number} lines")
    if tokens is not None:
        within = _within_tokens(lines, more, tokens, squeezed)
        if within is None:
            return failure(_too_small(path, first, f"max_tokens {tokens[0]}"))
        lines, more, squeezed = within
    last = first + len(lines) - 1
    output = "\n".join(lines)
    closing = ""
    if unread is not None and last == unread:
        closing = (f"line {unread} goes on past {_SKIP_BOUND >> 20} MiB, not read further: lines after it, if "
                   f"any, from offset={last + 1}")
    elif more:
        closing = f"more lines follow: read again with offset={last + 1} to continue"
    closing = "; ".join(note for note in (closing, squeezed) if note)
    if closing:
        output += f"\n\n[{closing}]"
    return ToolResult(output, False, more, None, {"first_line": first, "last_line": last})


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _cut_line(number: int, text: str, fits: Callable[[str], bool], bound: str) -> Optional[tuple[str, str]]:
    """Line ``number`` numbered, its text cut to the longest start that
    ``fits`` (a page's ``bound``, said as ``"max_tokens 5"``), and a note for the
    closing hint: the line ends in a note saying where it was cut when that
    fits beside at least one character (the note for the hint is then "");
    else in a bare ``…``, the note going to the hint (on top of the bound), so
    that a page makes progress through the line.  None when not even the
    number and the first character fit."""
    for noted in (True, False):
        keep = len(text)
        while True:
            keep = keep * 7 // 8 if keep > 8 else keep - 1
            if keep <= 0:
                break
            if noted:
                shown = f"{number:>6}\t{text[:keep]}… [line cut at {keep} characters]"
            else:
                shown = f"{number:>6}\t{text[:keep]}…"
            if fits(shown):
                if noted:
                    return shown, ""
                plural = "" if keep == 1 else "s"
                return shown, f"line {number} is cut at {keep} character{plural} to fit the page's bound ({bound})"
    return None


def _too_small(path: str, number: int, bound: str) -> str:
    """The error of a page whose first line does not fit its ``bound`` even cut to one character."""
    return (f"line {number} of {path} does not fit this page's bound ({bound}), not even its number and first "
            f"character; read on from offset={number + 1} for the lines after it, if any")


def _within_tokens(lines: list[str], more: bool, tokens: tuple[int, Callable[[str], int]], squeezed: str = ""
                   ) -> Optional[tuple[list[str], bool, str]]:
    """The first of ``lines`` whose text takes at most ``max_tokens`` tokens,
    narrowed in proportion (as the preview's byte limit is), whether lines
    follow them, and how the one line left was cut (``_cut_line``'s note;
    ``squeezed``: the note of a line already cut to a bare ``…``).  None when
    not even the first line's number and first character fit."""
    max_tokens, counted = tokens
    while True:
        used = counted("\n".join(lines))
        if used <= max_tokens:
            return lines, more, squeezed
        if len(lines) == 1:  # one line over the bound: its text is cut until it fits
            number, _, text = lines[0].partition("\t")
            # A line already cut is cut from its text: its note, or its bare "…", taken off.
            text = text[:-1] if squeezed else (text.rpartition("… [line cut at ")[0] or text)
            cut_line = _cut_line(int(number), text, lambda shown: counted(shown) <= max_tokens,
                                 f"max_tokens {max_tokens}")
            return None if cut_line is None else ([cut_line[0]], more, cut_line[1])
        lines, more = lines[: max(1, min(len(lines) - 1, len(lines) * max_tokens * 15 // (used * 16)))], True
