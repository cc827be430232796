"""What every tool returns, and the limits the tools share."""

from __future__ import annotations

from .._frontend import one_line, printable, whole_characters
from .._frozen import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Any, Optional

    from ..records import Resource
    from ..store import TruncateResult

__all__ = ["MAX_LINE_LENGTH", "MAX_MATCHES", "MAX_READ_LINES", "MAX_RESPONSE_BYTES", "MAX_SEARCH_BYTES", "ToolResult",
           "bounded", "failure", "message_line", "shortened_line",
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


def ends_around_note(start: str, end: str, whole: int, most: int) -> str:
    """A line of ``whole`` characters, more than ``most``, as ``most`` characters: its start and its
    end around a note of how much was cut.  ``start`` begins the line and ``end`` ends it, each with
    at least ``most`` characters (the line itself, for ``shortened_line``; what was kept of one never
    held whole, such as a process's last stderr line as it streamed)."""
    # The note's length depends on the count it gives, which depends on the room the note leaves:
    # sized with the line's own length in both places, it is never shorter than the final one.
    room = most - len(_cut_note(whole, whole))
    head = room // 2
    return f"{start[:head]}{_cut_note(whole - room, whole)}{end[len(end) - (room - head):]}"


def _cut_note(cut: int, whole: int) -> str:
    return f" …[{cut} of {whole} characters cut]… "


def message_line(text: str) -> str:
    """``text`` as one line (``one_line``), shortened by ``shortened_line``, every character one
    UTF-8 can carry (``whole_characters``: a message may quote a path or name that is not UTF-8)
    and printable (``printable``: ``\\x1b`` for ESC).  The one home of every tool's error line and
    the MCP server's: they quote what others chose (a file or skill folder's name, a server's
    reason phrase, a search provider's message), which shown raw could drive the terminal that
    shows the transcript or hide what the line says."""
    # Surrogates become U+FFFD first, as before, not ``\udcXX``; escaping comes before the cut, so
    # the escapes count in the bound.
    return shortened_line(printable(whole_characters(one_line(text))))


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
