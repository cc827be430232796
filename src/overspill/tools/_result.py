"""What every tool returns, and the limits the tools share."""

from __future__ import annotations

from .._frontend import one_line, printable, shown_characters, whole_characters
from .._frozen import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Any, Optional

    from ..records import Resource
    from ..store import TruncateResult

__all__ = ["MAX_LINE_LENGTH", "MAX_MATCHES", "MAX_READ_LINES", "MAX_RESPONSE_BYTES", "MAX_SEARCH_BYTES", "ToolResult",
           "bounded", "failure", "message_line", "printable_line", "shortened_line",
           "stored_metadata"]

MAX_READ_LINES = 2000
MAX_LINE_LENGTH = 2000
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
MAX_SEARCH_BYTES = 256 * 1024
#: The most matching lines grep lists for a model (its schema's maximum of ``max_matches``).
MAX_MATCHES = 1000


@frozen(defaults={"is_error": False, "truncated": False, "resource": None}, factories={"metadata": dict})
class ToolResult:
    """A tool's answer for the model.

    ``output`` is what the model reads; ``is_error`` marks a failure it should
    see (with a one-line reason as the output); ``truncated`` and ``resource``
    say whether and where the whole output was stored; ``metadata`` is for the
    host (exit codes, sizes, offsets) and never needed by the model.
    """

    __slots__ = ("output", "is_error", "truncated", "resource", "metadata")
    output: str
    is_error: bool
    truncated: bool
    resource: Optional[Resource]
    metadata: dict[str, Any]


def shortened_line(line: str, most: int = MAX_LINE_LENGTH) -> str:
    """``line`` if it has at most ``most`` characters (``MAX_LINE_LENGTH``, the tools' bound on a line,
    unless a part of a line is bounded less); a longer one keeps its start and its end around a note
    of how much was cut (``ends_around_note``).
    A message may quote what a server sent (a reason phrase, a ``Location``) or the model's own input
    (a URL, a path, a pattern), of any length; cut so, it stays within the default preview's 8 KiB
    (``MAX_LINE_LENGTH`` characters are at most 8000 UTF-8 bytes)."""
    if len(line) <= most:
        return line
    return ends_around_note(line, line, len(line), most)


def ends_around_note(start: str, end: str, whole: int, most: int, *, escaped: bool = False) -> str:
    """A line of ``whole`` characters, more than ``most``, as ``most`` characters: its start and its
    end around a note of how much was cut.  ``start`` begins the line and ``end`` ends it, each with
    at least ``most`` characters (the line itself, for ``shortened_line``; what was kept of one never
    held whole, such as a process's last stderr line as it streamed), or the whole line when it has
    fewer.  ``escaped``: each kept character is shown by the printable rule (``\\x1b`` for ESC), the
    ends cut between whole escapes, never inside one; the line may then have ``most`` characters or
    fewer and still be cut, its escapes being longer.  The note counts the line's own characters."""
    # The note's length depends on the count it gives, which depends on the room the note leaves:
    # sized with the line's own length in both places, it is never shorter than the final one.
    room = most - len(_cut_note(whole, whole))
    if not escaped:
        head = room // 2
        return f"{start[:head]}{_cut_note(whole - room, whole)}{end[len(end) - (room - head):]}"
    # Only the characters that could be kept are escaped (each is shown as one to ten characters):
    # escaping the whole line first cost ten times its length for a line of ``most``.
    heads = shown_characters(start[:room])
    tails = shown_characters(end[max(len(end) - room, 0):])[::-1]
    head = _fitting(heads, room // 2)
    tail = _fitting(tails, room - _width(heads, head))
    head = _fitting(heads, room - _width(tails, tail))  # the room the tail's last escape did not take
    # The kept escapes fill ``room`` at most and the whole line's are longer, so something is cut.
    return "".join(heads[:head]) + _cut_note(whole - head - tail, whole) + "".join(reversed(tails[:tail]))


def _fitting(pieces: list[str], room: int) -> int:
    """How many of ``pieces``, from the first, fit in ``room`` characters."""
    count = 0
    for piece in pieces:
        room -= len(piece)
        if room < 0:
            break
        count += 1
    return count


def _width(pieces: list[str], count: int) -> int:
    return sum(map(len, pieces[:count]))


def _cut_note(cut: int, whole: int) -> str:
    return f" …[{cut} of {whole} characters cut]… "


def printable_line(start: str, end: str, whole: int, most: int) -> str:
    """A line of ``whole`` characters, begun by ``start`` and ended by ``end`` (each the line itself
    or at least ``most`` of its characters: ``ends_around_note``), shown by the printable rule
    (``\\x1b`` for ESC) in at most ``most`` characters: whole when it fits so, else its ends around
    the note, cut between escapes."""
    if whole <= most:  # ``start`` is the whole line
        shown = printable(start)
        if len(shown) <= most:
            return shown
    elif start.isprintable() and end.isprintable():
        return ends_around_note(start, end, whole, most)
    return ends_around_note(start, end, whole, most, escaped=True)


def message_line(text: str) -> str:
    """``text`` as one line (``one_line``), every character one UTF-8 can carry
    (``whole_characters``: a message may quote a path or name that is not UTF-8) and printable
    (``printable``: ``\\x1b`` for ESC), in at most ``MAX_LINE_LENGTH`` characters as
    ``shortened_line`` cuts (``printable_line``).  The one home of every tool's error line and
    the MCP server's: they quote what others chose (a file or skill folder's name, a server's
    reason phrase, a search provider's message), which shown raw could drive the terminal that
    shows the transcript or hide what the line says."""
    # Surrogates become U+FFFD first, as before, not ``\\udcXX``.  The escapes count in the bound.
    line = whole_characters(one_line(text))
    return printable_line(line, line, len(line), MAX_LINE_LENGTH)


def failure(reason: str, **metadata: Any) -> ToolResult:
    """A one-line error for the model, bounded by ``message_line``."""
    return ToolResult(message_line(reason), True, False, None, metadata)


def stored_metadata(result: TruncateResult) -> dict[str, Any]:
    """What the marker tells the model about a stored output, for the host:
    ``lines`` and ``next_offset`` (where the omitted part begins); empty when
    nothing was stored."""
    if result.resource is None:
        return {}
    return {"lines": result.lines, "next_offset": result.next_offset}


def bounded(result: TruncateResult, *, is_error: bool = False, **metadata: Any) -> ToolResult:
    """A tool output as ``store.truncate`` bounded it."""
    return ToolResult(result.content, is_error, result.truncated, result.resource,
                      {**metadata, **stored_metadata(result)})
