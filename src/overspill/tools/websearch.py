"""The websearch tool: the host's search backend, its answer bounded."""

from __future__ import annotations

from .. import _kernels
from .._frontend import error_line
from ..store import ToolOutputStore
from ..text import encode_content
from ._result import MAX_SEARCH_BYTES, ToolResult, bounded, failure

__all__ = ["websearch"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (``overspill run`` imports every tool); never evaluated
    from collections.abc import Callable
    from typing import Optional, Union

    SearchProvider = Callable[[str], Union[str, bytes]]


def websearch(store: ToolOutputStore, session_id: str, tool_call_id: str, query: str, *,
              provider: Optional[SearchProvider]) -> ToolResult:
    """Ask ``provider`` (the user's search backend) and bound its answer.

    The answer is cut at ``MAX_SEARCH_BYTES`` on a character boundary, with a
    note that counts inside that size, then bounded with ``store.truncate``.
    """
    if not isinstance(query, str) or not query.strip():
        return failure("query must be a non-empty string")
    if not callable(provider):
        return failure("web search is not available: no search provider is configured")
    try:
        answer = provider(query)
    except Exception as error:  # noqa: BLE001 - the backend's failure is reported to the model
        return failure(f"the search failed: {error_line(error)}")
    if isinstance(answer, str):
        data = encode_content(answer)
    elif isinstance(answer, (bytes, bytearray, memoryview)):
        data = bytes(answer)
    else:
        return failure(f"the search provider returned {type(answer).__name__}, not text")
    # Decoded first, so that replacement characters count in the size.
    text = data.decode("utf-8", "replace")
    encoded = text.encode("utf-8")
    metadata = {"bytes": len(encoded), "cut": len(encoded) > MAX_SEARCH_BYTES}
    if len(encoded) > MAX_SEARCH_BYTES:
        note = f"\n\n[search results cut at {MAX_SEARCH_BYTES} of {len(encoded)} bytes]"
        budget = MAX_SEARCH_BYTES - len(note.encode())
        _, end = _kernels.page_bounds(encoded, 0, budget, True)
        text = encoded[: end if end <= budget else 0].decode("utf-8") + note
    return bounded(store.truncate(session_id, tool_call_id, text), **metadata)
