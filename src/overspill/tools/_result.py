"""What every tool returns, and the limits the tools share."""

from __future__ import annotations

from .._frozen import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Any, Optional

    from ..records import Resource
    from ..store import TruncateResult

__all__ = ["MAX_LINE_LENGTH", "MAX_MATCHES", "MAX_READ_LINES", "MAX_RESPONSE_BYTES", "MAX_SEARCH_BYTES", "ToolResult",
           "bounded", "failure", "stored_metadata"]

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


def failure(reason: str, **metadata: Any) -> ToolResult:
    """A one-line error for the model."""
    return ToolResult(" ".join(reason.split()), True, False, None, metadata)


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
