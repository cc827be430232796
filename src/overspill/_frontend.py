"""What every front end shares: defaults, argument rules, the error line, the page read.

The CLI, the MCP server and the tools take their defaults (a command's
timeout, the MCP preview limits), their checks (session ids, timeouts, page
offsets) and the one-line error rule from here, and read a page of a stored
output through ``read_page``, so that no front end holds a rule another one
needs.  Importing this module imports neither the store nor a third-party
library.
"""

from __future__ import annotations

from ._arguments import id_string
from .errors import InvalidResourceError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (every CLI command imports this module)
    from typing import Optional

    from .records import Resource
    from .store import Page, ToolOutputStore

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "WAIT_BUDGET",
    "YIELD_AFTER",
    "MCP_MAX_BYTES",
    "MCP_MAX_LINES",
    "WRAP_INIT_TIMEOUT",
    "check_session_id",
    "check_timeout",
    "one_line",
    "binary_page",
    "end_of_resource",
    "page_argument_problem",
    "read_page",
]

#: Seconds a command runs when the model names no timeout, and the most it may name.
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
#: Seconds a background command is waited for before its handle is returned.
YIELD_AFTER = 10.0
#: The most seconds one ``wait`` call waits (clients cut a tool call at about a minute).
WAIT_BUDGET = 50.0
#: The MCP server's preview limits: sized so a preview (plus its marker) passes
#: the ~10 KB cut of Codex and Copilot CLI untouched.
MCP_MAX_LINES = 400
MCP_MAX_BYTES = 8 * 1024
#: Seconds a wrapped MCP server (``overspill mcp --wrap``) has to answer ``initialize``.
WRAP_INIT_TIMEOUT = 30.0


def one_line(text: object) -> str:
    """``text`` as one line: every run of whitespace (newlines included) is one space."""
    return " ".join(str(text).split())


def check_session_id(value: object) -> str:
    """``value`` if it is a session id (a non-empty ``str``).

    :raises TypeError: not a str.
    :raises ValueError: empty.
    """
    return id_string(value, "session_id")


def timeout_problem(value: object) -> Optional[str]:
    """Why ``value`` is not a timeout in ``(0, MAX_TIMEOUT]`` seconds; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        return f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, not {value!r}"
    return None


def check_timeout(value: object) -> float:
    """``value`` if it is a timeout in ``(0, MAX_TIMEOUT]`` seconds.

    :raises ValueError: it is not (a bool is not a number).
    """
    problem = timeout_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value  # type: ignore[return-value]


def page_argument_problem(offset: object, limit: object) -> Optional[str]:
    """Why ``offset`` (a byte offset, at least 0) or ``limit`` (bytes, at least 1)
    is not what a page read takes; None when both are (or are None)."""
    for value, name, minimum in ((offset, "offset", 0), (limit, "limit", 1)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be an integer"
        if value < minimum:
            return f"{name} must be at least {minimum}"
    return None


def read_page(store: ToolOutputStore, session_id: str, uri: object, offset: Optional[int] = None,
              limit: Optional[int] = None) -> Page:
    """A page of a stored output, as every front end reads one.

    :param offset: a byte offset (default 0); ``store.read`` clamps it to the size.
    :param limit: the most bytes in the page (default ``MAX_READ_BYTES``).
    :raises InvalidResourceError: ``offset`` or ``limit`` is not a whole number
        of at least 0 or 1, or ``uri`` is not a well-formed URI.
    :raises AccessDeniedError: another session wrote the resource.
    :raises ResourceNotFoundError: it does not exist or its files are broken.
    :raises ResourceCorruptError: its bytes do not match their checksums.
    """
    problem = page_argument_problem(offset, limit)
    if problem is not None:
        raise InvalidResourceError(problem)
    return store.read(session_id, uri, offset=offset or 0, limit=limit)  # type: ignore[arg-type]


def binary_page(store: ToolOutputStore, session_id: str, page: Page, offset: Optional[int] = None,
                limit: Optional[int] = None) -> Optional[tuple[bytes, int, Optional[int]]]:
    """For ``page`` (as ``read_page`` gave it) of a binary resource
    (``records.is_binary_mime``): the exact bytes of the same range, where
    they start and where the next page does (None at the end), which front
    ends serve as bytes (MCP's base64 ``blob``) or describe, never decode.
    None for a text resource.

    :raises: as ``read_page``.
    """
    from .records import is_binary_mime

    if not is_binary_mime(page.resource.mime):
        return None
    _, data, start, following = store.read_bytes(session_id, page.resource.uri, offset=offset or 0, limit=limit)
    return data, start, following


def end_of_resource(resource: Resource, offset: int) -> str:
    """What every front end says of a read at or past the end: an empty last
    page, no next, and not an error."""
    size = resource.size
    return (f"offset {offset} is at or past the end of {resource.uri}, which has {size} "
            f"byte{'' if size == 1 else 's'}: nothing more to read")
