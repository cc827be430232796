"""What every front end shares: defaults, argument rules, the error line, the page read.

The CLI, the MCP server and the tools take their defaults (a command's
timeout, the MCP preview limits), their checks (session ids, timeouts, page
offsets), the one-line error rule and the printable rule (``printable``,
whose home is ``_printable``: the Redis backend shows it too) from here, read a page of a stored
output through ``read_page``, take a page's URI with its query
(``tool-output://ID?offset=N&limit=M``) apart with ``parse_page_uri`` and
tell a resource served as bytes by its MIME type (``is_binary_mime``), so
that no front end holds a rule another one needs.  Importing this module imports neither the store nor a third-party
library.
"""

from __future__ import annotations

from ._arguments import check_metadata, id_string
from ._buffers import int_text, value_text
from ._printable import printable, shown_characters
from .errors import InvalidResourceError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (every CLI command imports this module)
    from typing import Optional

    from .records import Resource
    from .store import Page, ToolOutputStore, TruncateResult

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "WAIT_BUDGET",
    "YIELD_AFTER",
    "MCP_MAX_BYTES",
    "MCP_MAX_LINES",
    "WRAP_INIT_TIMEOUT",
    "check_session_id",
    "truncate_kept",
    "check_timeout",
    "decimal_integer",
    "one_line",
    "error_line",
    "printable",
    "shown_characters",
    "whole_characters",
    "binary_page",
    "end_of_resource",
    "lost_end",
    "lost_note",
    "stored_copy_end",
    "is_binary_mime",
    "page_argument_problem",
    "page_number",
    "page_request",
    "parse_page_uri",
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


def error_line(error: BaseException) -> str:
    """``error`` (a failure of the host's own code: a search provider's) as ``Type: message`` on one
    line, or ``Type`` when its message is empty.  An exception whose ``__str__`` raises (or returns
    no str) is ``Type (its message could not be read)``: telling the model of a failure must not fail."""
    name = type(error).__name__
    try:
        message = one_line(error)
    except Exception:  # noqa: BLE001 - the exception's own __str__ failed
        return f"{name} (its message could not be read)"
    return f"{name}: {message}" if message else name


def whole_characters(text: str) -> str:
    """``text`` with every lone surrogate as U+FFFD (a surrogate pair as the character it encodes).

    A ``str`` made from a file name or an argument may hold ``surrogateescape``'s
    stand-ins for bytes that are not UTF-8; UTF-8 cannot carry them, so an answer
    holding one could not be sent (the MCP SDK raises while writing it) nor encoded
    by a host.  This never raises."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 joins a high and a low surrogate into their character and replaces the rest.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def truncate_kept(store: ToolOutputStore, session_id: str, call_id: str, text: str,
                  mime: str = "text/plain", *, max_bytes: Optional[int] = None) -> TruncateResult:
    """``store.truncate`` of ``text``; when the store cannot keep it (a failed write: a full disk, a file
    too large), the preview with the store's own "output not stored" marker naming why, as when the
    quota cannot hold even a record: the model still gets the bounded start and end, and the caller
    what it had (a wrapped server's result, a tool's own exception), not a storage error in its place.
    A payload that fails its check when read back for the preview (``ResourceCorruptError``) is not
    kept either: the store removed it.  ``max_bytes`` overrides the store's limit, as ``truncate``'s."""
    from .errors import ResourceCorruptError, StorageError

    try:
        return store.truncate(session_id, call_id, text, mime=mime, max_bytes=max_bytes)
    except (StorageError, ResourceCorruptError) as error:
        return store._not_stored(text, one_line(getattr(error, "strerror", None) or str(error)), max_bytes)


def check_session_id(value: object) -> str:
    """``value`` if it is a session id (a non-empty ``str`` a record can hold).

    :raises TypeError: not a str.
    :raises ValueError: empty, over ``MAX_METADATA_BYTES`` UTF-8 bytes, or holding
        a surrogate pair (a record would read it back as another session's id).
    """
    checked = id_string(value, "session_id")
    check_metadata(checked, "session_id")
    return checked


def timeout_problem(value: object) -> Optional[str]:
    """Why ``value`` is not a timeout in ``(0, MAX_TIMEOUT]`` seconds; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        return f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, not {value_text(value)}"
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


#: The ``application/`` types that are text (besides every ``text/`` type and
#: the ``+json`` and ``+xml`` suffixes).  The one list: webfetch keeps a body
#: as text by it and the front ends decode a stored page by it, so whatever
#: webfetch stored as text reads back as text.  Legacy names included
#: (``x-javascript``, ``x-yaml``): servers still send them.
_TEXT_APPLICATIONS = frozenset({"application/json", "application/xml", "application/javascript",
                                 "application/x-javascript", "application/ecmascript", "application/x-ndjson",
                                 "application/yaml", "application/x-yaml", "application/toml",
                                 "application/x-sh", "application/sql"})


def is_binary_mime(mime: str) -> bool:
    """Whether a resource of this MIME type holds bytes that are not text
    (``application/octet-stream``, images, archives...): such a page is
    served as bytes (MCP's base64 ``blob``) or described, never decoded.
    webfetch refuses a body of such a type and keeps every other one as text."""
    kind = mime.split(";", 1)[0].strip().lower()
    if kind.startswith("text/") or kind in _TEXT_APPLICATIONS:
        return False
    return not kind.endswith(("+json", "+xml"))


#: The most digits a page's offset may have in a URI's query (more is past any
#: resource's size).
_MAX_QUERY_DIGITS = 18
#: The most digits of a limit in a URI's query: a limit over a page is a page,
#: as ``read --limit``'s is, up to where Python refuses to parse a number (int()'s
#: default bound, which --limit meets too).
_MAX_LIMIT_DIGITS = 4300


def parse_page_uri(uri: object, bad_number: type[Exception] = InvalidResourceError
                   ) -> tuple[str, Optional[int], Optional[int]]:
    """``tool-output://ID?offset=N&limit=M`` (the MCP resource template's form)
    as the resource's URI, the offset and the limit (None when not given).

    :param bad_number: what an offset or limit that is no number in range raises
        (the CLI's usage error: the same as ``--offset abc``).
    :raises InvalidResourceError: a malformed URI or query, an unknown query
        key; by default also an offset or limit that is not one decimal integer
        (offset at least 0, at most 18 digits; limit at least 1, at most 4,300
        digits: one over a page is clamped by the read); one line.
    """
    from .records import SCHEME, parse_uri

    if not isinstance(uri, str):
        raise InvalidResourceError(f"a resource URI must be a str, not {type(uri).__name__}")
    base, question, query = uri.partition("?")
    parse_uri(base)
    numbers: dict[str, Optional[int]] = {"offset": None, "limit": None}
    if not question:
        return base, None, None
    seen = set()
    for pair in query.split("&"):
        key, equals, text = pair.partition("=")
        if not equals:
            raise InvalidResourceError(f"malformed query {query[:80]!r} in a {SCHEME}ID URI (expected offset=N&limit=M)")
        if key not in numbers:
            raise InvalidResourceError(f"{SCHEME}ID takes offset and limit, not {key[:40]!r}")
        if key in seen:
            # A number given twice is bad input, as one given both in the URI and as an argument
            # (``page_request``), not a malformed URI.
            raise bad_number(f"{key} is given twice in a {SCHEME}ID URI")
        seen.add(key)
        numbers[key] = page_number(key, text, bad_number)
    return base, numbers["offset"], numbers["limit"]


def page_number(key: str, text: str, bad_number: type[Exception] = InvalidResourceError) -> int:
    """A page's ``offset`` or ``limit`` given as text (a URI's query, ``read --offset``)
    as the int it is: one decimal integer (``decimal_integer``), an offset at least 0
    and of at most 18 digits, a limit at least 1 and of at most 4,300 digits.

    :raises bad_number: anything else; one line, the same whichever way it was given.
    """
    minimum, digits = (0, _MAX_QUERY_DIGITS) if key == "offset" else (1, _MAX_LIMIT_DIGITS)
    value = decimal_integer(text, minimum, digits)
    if value is None:
        raise bad_number(_bad_offset(text) if key == "offset" else
                         f"limit must be one integer of at least 1 (at most {digits} digits), not {_cut(text)!r}")
    return value


def decimal_integer(text: str, minimum: int, digits: int = _MAX_LIMIT_DIGITS) -> Optional[int]:
    """``text`` as the int it writes when it is one decimal integer of at most
    ``digits`` ASCII digits and at least ``minimum``; None otherwise.

    The one rule for a number given as text (a URI's query, every integer flag
    of the command line): ``int(text)`` also takes a sign, surrounding space,
    ``_`` between digits and other scripts' digits, which no query and no flag
    should mean as a number.  The default bound is what ``int()`` parses."""
    if not (text.isascii() and text.isdigit()) or len(text) > digits:
        return None
    value = int(text)
    return value if value >= minimum else None


def _cut(text: str) -> str:
    """A number as an error quotes it: its first digits when it is long."""
    return text if len(text) <= 24 else text[:21] + "..."


def _bad_offset(text: str, quote: bool = True) -> str:
    """The one line that refuses the page offset ``text`` (no number, or one past ``_MAX_QUERY_DIGITS`` digits),
    quoted as given (unquoted: ``int_text``'s words for an int too long to show)."""
    shown = repr(_cut(text)) if quote else text
    return f"offset must be one integer from 0 to {10**_MAX_QUERY_DIGITS - 1}, not {shown}"


def page_request(uri: object, offset: Optional[int], limit: Optional[int],
                 bad_input: type[Exception] = InvalidResourceError) -> tuple[str, Optional[int], Optional[int]]:
    """A page read asked for as ``uri`` (which may carry ``?offset=N&limit=M``) and as
    ``offset`` and ``limit`` arguments: the resource's URI, the offset and the limit
    (None when given neither way).  The same number given both ways must agree,
    and an ``offset`` argument is bounded as the URI's is (at most 18 digits).

    :param bad_input: what a number that is no number in range, or one given
        two ways that disagree, raises (``parse_page_uri``'s ``bad_number``).
    :raises InvalidResourceError: as ``parse_page_uri``.
    """
    base, queried_offset, queried_limit = parse_page_uri(uri, bad_input)
    if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 10**_MAX_QUERY_DIGITS:
        # One rule for both forms: ``--offset N`` is refused where ``?offset=N`` is (past any size either way).
        shown = int_text(offset)  # its digits, quoted as the URI's are, or its count of digits
        raise bad_input(_bad_offset(shown, quote=shown.isdigit()))
    for name, given, queried in (("offset", offset, queried_offset), ("limit", limit, queried_limit)):
        if given is not None and queried is not None and given != queried:
            raise bad_input(f"the URI says {name}={int_text(queried)} and {name} is {value_text(given)}; give one")
    return (base, offset if offset is not None else queried_offset,
            limit if limit is not None else queried_limit)


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
    (``is_binary_mime``): the exact bytes of the same range, where
    they start and where the next page does (None at the end), which front
    ends serve as bytes (MCP's base64 ``blob``) or describe, never decode.
    None for a text resource.

    :raises: as ``read_page``.
    """
    if not is_binary_mime(page.resource.mime):
        return None
    _, data, start, following = store.read_bytes(session_id, page.resource.uri, offset=offset or 0, limit=limit)
    return data, start, following


def stored_copy_end(store: ToolOutputStore, session_id: str, page: Page) -> Optional[str]:
    """What every front end says after the last page of a capped stored copy
    (``max_stored_bytes``): the output went on, and the rest was not kept; None
    for any other page.  Only a last page of a finished output reads the record.

    :raises OverspillError: the record cannot be read (as ``store.status``).
    """
    if page.next is not None or not page.complete:
        return None
    capture = store.status(session_id, page.resource.uri).capture
    if capture is None or capture[0] <= capture[1]:
        return None
    total, stored = capture
    return (f"the stored copy of {page.resource.uri} ends here, at byte {stored}: the output had {total} bytes, "
            f"and the rest, bytes {stored} to {total}, was not kept")


def lost_end(store: ToolOutputStore, session_id: str, page: Page) -> Optional[str]:
    """What every front end says after the last page (so far) of a background command's output
    whose owner is gone (``lost``): its output ends there for good, so no front end invites a
    read later; None for any other page (a running one's end is for now: each front end names
    its own way to read on).

    :raises OverspillError: the record cannot be read (as ``store.status``).
    """
    if page.next is not None or page.complete:
        return None
    record = store.status(session_id, page.resource.uri)
    if record.state != "lost":
        return None
    return lost_note(page.resource.uri, record.resource.size)


def lost_note(uri: str, size: int) -> str:
    """The words for a lost background command's output that ends at byte ``size`` for good."""
    return f"complete: false; lost: the process that ran {uri} is gone, so its output ends at byte {size} for good"


def end_of_resource(resource: Resource, offset: int) -> str:
    """What every front end says of a read at or past the end: an empty last
    page, no next, and not an error.  An ``offset`` before the end can get
    there too: inside the last character, whose page starts where it ends."""
    size = resource.size
    if offset < size:
        return (f"offset {int_text(offset)} is inside the last character of {resource.uri}, which ends at byte {size}, "
                "the end: nothing more to read")
    return (f"offset {int_text(offset)} is at or past the end of {resource.uri}, which has {size} "
            f"byte{'' if size == 1 else 's'}: nothing more to read")
