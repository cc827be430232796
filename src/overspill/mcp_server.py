"""``overspill mcp``: the tools as a Model Context Protocol server over stdio.

Needs the ``mcp`` extra (``pip install 'overspill[mcp]'``); ``import overspill``
never imports this module, and the CLI imports it only for ``overspill mcp``.

What a client gets:

- tools ``bash``, ``read``, ``grep``, ``webfetch`` and, for background commands,
  ``wait``, ``kill`` and ``jobs``, with the names,
  descriptions and input schemas of ``overspill.tools.schemas`` (one source of
  truth), dispatched through ``overspill.tools.call``;
- each result is a text block with the bounded output; when the whole output
  was stored, also a ``resource_link`` to ``tool-output://ID`` (for a client
  of protocol 2025-06-18 or later, which has them: ``links_allowed``); and
  ``structuredContent`` with ``uri``, ``size``, ``lines``, ``next_offset`` and
  ``exit_code`` where they apply, and ``text``: the bounded output again, for
  clients that show the model only ``structuredContent``.  A failure is
  ``isError`` with one line;
- the resource template ``tool-output://{id}{?offset,limit}``: ``resources/read``
  returns that page, with ``offset``, ``next_offset`` and ``size`` in the
  contents' ``_meta``.  A page (of ``read`` or ``resources/read``) defaults to
  the preview's byte limit, so it passes the clients that cut results at ~10 KB;
  ``limit`` asks for up to ``MAX_READ_BYTES``;
- one session per server process (a fresh id unless one is given), so another
  session's URI is "not found in this session";
- ``bash`` streams into the store as the command runs, reports the bytes so far
  every second to a client that sent a progress token, and a cancelled call
  ends the command's process group (a background call's too, while it waits
  out ``yield_after``: its handle was never given).

The low-level ``mcp.server.Server`` is used rather than ``MCPServer``: the
input schemas must be exactly ``tools.schemas``'s, not ones inferred from a
Python signature, and results carry ``structuredContent`` without an output
schema (its fields depend on what the tool stored).
"""

from __future__ import annotations

import base64
import functools
import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp import types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least

from . import __version__, background, tools
from ._frontend import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    MCP_MAX_BYTES,
    MCP_MAX_LINES,
    binary_page,
    check_session_id,
    check_timeout,
    error_line,
    parse_page_uri,
    read_page,
    whole_characters,
)
from ._frozen import replace
from ._mcp_streams import WrappedReadStream
from .config import MAX_READ_BYTES
from .errors import InvalidResourceError, OverspillError
from .records import SCHEME, Resource, new_id
from .store import ToolOutputStore
from .text import renamed_calls
from .tools import ToolResult
from .tools._result import message_line

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "RESOURCE_TEMPLATE",
    "TOOLS",
    "create_server",
    "limits_config",
    "page_bytes",
    "paging_instructions",
    "read_resource",
    "resource_template",
    "run_stdio",
    "serve",
    "server_session",
]

#: The tools served.
TOOLS = ("bash", "read", "grep", "webfetch", "wait", "kill", "jobs")
#: Sized so a preview (plus its marker) passes the ~10 KB cut of Codex and Copilot CLI untouched.
DEFAULT_MAX_BYTES = MCP_MAX_BYTES
DEFAULT_MAX_LINES = MCP_MAX_LINES
# DEFAULT_TIMEOUT and MAX_TIMEOUT (seconds a command runs when the model names
# no timeout, and the most it may name) are the front ends' (overspill._frontend).
RESOURCE_TEMPLATE = SCHEME + "{id}{?offset,limit}"

# The JSON-RPC code MCP gives a resource that cannot be found, and the generic invalid-params one.
_RESOURCE_NOT_FOUND = -32002
_INVALID_PARAMS = -32602
# How often a running command's byte count is reported.
_PROGRESS_INTERVAL = 1.0
# Tools whose answers can name a background command's state.
_BACKGROUND = {"bash", "wait", "kill"}
_ENVIRONMENT = {"max_lines": "OVERSPILL_MAX_LINES", "max_bytes": "OVERSPILL_MAX_BYTES"}
_READ_ONLY = {"read", "grep", "wait", "jobs"}
# Seconds after the client closed stdin before the groups still there are killed: the SDK's stdio
# clients send SIGTERM 2 s after closing it, and SIGKILL 2 s later.
_EOF_HURRY = 1.5
# The protocol version that added resource_link content blocks (an older client refuses a result with one).
_LINKS_SINCE = "2025-06-18"

logger = logging.getLogger(__name__)

PathArg = Union[str, "os.PathLike[str]", None]


def limits_config(max_lines: Optional[int] = None, max_bytes: Optional[int] = None,
                  environ: Optional[Mapping[str, str]] = None, *,
                  max_tokens: Optional[int] = None) -> dict[str, dict[str, int]]:
    """The store configuration for the server: the given limits, else the
    environment's (``OVERSPILL_MAX_LINES``/``OVERSPILL_MAX_BYTES``), else the
    MCP defaults (``DEFAULT_MAX_LINES``, ``DEFAULT_MAX_BYTES``).

    :param environ: the environment to consult (``os.environ`` by default).
    :param max_tokens: the preview's o200k token bound (``tool_output.max_tokens``), if any.
    """
    env = os.environ if environ is None else environ
    section = {}
    for key, given, default in (("max_lines", max_lines, DEFAULT_MAX_LINES),
                                ("max_bytes", max_bytes, DEFAULT_MAX_BYTES)):
        if given is not None:
            section[key] = given
        elif not env.get(_ENVIRONMENT[key], "").strip():
            section[key] = default
        # else: the store reads the environment itself (and reports a bad value there)
    if max_tokens is not None:
        section["max_tokens"] = max_tokens
    return {"tool_output": section}


def page_bytes(limits: Any) -> int:
    """The bytes a page read over MCP holds when the client names no ``limit``:
    the preview's byte limit (``limits.max_bytes``), at most ``MAX_READ_BYTES``."""
    return min(limits.max_bytes, MAX_READ_BYTES)


def paging_instructions(limits: Any, session: str, read: str = "read", grep: str = "grep",
                        what: str = "Tool outputs") -> str:
    """The instructions' paragraph on bounded outputs: the limits, the tools that page, the session."""
    tokens = "" if limits.max_tokens is None else f" (or {limits.max_tokens} tokens)"
    return (f"{what} over {limits.max_lines} lines or {limits.max_bytes} bytes{tokens} come back as a head and a tail "
            f"around a marker naming a {SCHEME}ID resource that holds the whole output; page through it with "
            f"{read} (resource, offset) or search it with {grep} (resource). This server's session is {session}: "
            "resources of other sessions are not found.")


def _error(message: str) -> types.CallToolResult:
    """A failure for the model: one line, bounded as a tool's own failure is (``message_line``)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=message_line(message))], is_error=True)


def _structured(name: str, result: ToolResult) -> dict[str, Any]:
    """The numbers a client pages with: ``uri``, ``size``, ``lines``, ``next_offset``, ``exit_code``
    (and a page's ``offset``)."""
    meta = result.metadata
    data: dict[str, Any] = {}
    if result.resource is not None:
        data["uri"] = result.resource.uri
        data["size"] = result.resource.size
        for key in ("lines", "next_offset"):
            if meta.get(key) is not None:
                data[key] = meta[key]
    elif name == "read" and meta.get("uri") is not None:  # a page of a stored output
        data["uri"] = meta["uri"]
        data["size"] = meta.get("size")
        data["offset"] = meta.get("offset")  # where the page starts: a mid-character offset moves on
        if meta.get("next") is not None:
            data["next_offset"] = meta["next"]
    elif name == "read" and result.truncated and meta.get("last_line") is not None:  # lines of a file
        data["next_offset"] = meta["last_line"] + 1
    if meta.get("exit_code") is not None:
        data["exit_code"] = meta["exit_code"]
    if name in _BACKGROUND and meta.get("state") is not None:  # a background command's handle
        data["state"] = meta["state"]
        data["complete"] = meta.get("complete", True)
    if not result.is_error:
        data["text"] = result.output
    return data


def links_allowed(ctx: Any) -> bool:
    """Whether the protocol version the client of the request in ``ctx`` agreed has ``resource_link``
    content blocks (added in 2025-06-18): an older client refuses a result holding one, whole."""
    version = getattr(ctx.session, "protocol_version", None)
    return isinstance(version, str) and is_version_at_least(version, _LINKS_SINCE)


def _tool_result(name: str, result: ToolResult, resource_link: bool = True, *, read: str = "read",
                 grep: str = "grep") -> types.CallToolResult:
    """``result`` as MCP's: its text, a ``resource_link`` to what it stored, its numbers (``_structured``).

    :param read: the name overspill's ``read`` is served under, and ``grep`` its ``grep``'s (a
        wrapper's upstream may have tools of those names): the marker's next calls and the
        link's description name them.
    """
    if result.resource is not None and (read, grep) != ("read", "grep"):
        result = replace(result, output=renamed_calls(result.output, result.resource.uri, read=read,
                                                                  grep=grep))
    # The last guard before the SDK writes the answer: a lone surrogate (a name that is not UTF-8,
    # quoted by a tool) makes its JSON encoding raise, and the server would die answering.
    output = whole_characters(result.output)
    if output is not result.output:
        result = replace(result, output=output)
    # A failure's output is already one line; a timed-out command's is its preview and a note.
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.output)]
    if result.resource is not None and resource_link:
        resource = result.resource
        content.append(types.ResourceLink(
            type="resource_link", uri=resource.uri, name=whole_characters(resource.name or resource.id),
            mime_type=resource.mime,
            size=resource.size, description=f"The whole output: page through it with {read} (resource=this URI, "
                                            "offset) or resources/read of this URI with ?offset=N."))
    structured = _structured(name, result)
    return types.CallToolResult(content=content, structured_content=structured or None, is_error=result.is_error)


async def _in_thread(function: Callable[[], ToolResult], abort: Optional[threading.Event],
                     report: Optional[Callable[[], Any]]) -> ToolResult:
    """Run a blocking tool on its own thread without blocking the event loop.

    The call is awaited without a thread: the tool's own thread wakes the
    awaiting task when it ends.  Waiting on one of anyio's worker threads (40
    by default, shared with the SDK's stdin reader and ``resources/read``)
    would let long calls take them all, and the server would stop hearing
    pings, reads and cancellations.

    ``report`` (an async callable) runs beside it once a second.  When the
    awaiting task is cancelled (the client's ``notifications/cancelled``, or the
    server shutting down), ``abort`` is set and the thread is waited for, so the
    command's process group is gone and reaped before the cancellation goes on.
    A tool without ``abort`` is abandoned to finish on its own (a daemon thread).
    """
    finished = anyio.Event()
    token = anyio.lowlevel.current_token()
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(function())
        except BaseException as error:  # handed to the awaiting task
            outcome.append(error)
        finally:
            try:
                anyio.from_thread.run_sync(finished.set, token=token)
            except Exception:  # the event loop is gone: nobody awaits this call any more
                pass

    threading.Thread(target=target, name="overspill-mcp-tool", daemon=True).start()
    try:
        async with anyio.create_task_group() as group:
            if report is not None:
                group.start_soon(_every_second, report)
            await finished.wait()
            group.cancel_scope.cancel()
    finally:
        if not finished.is_set() and abort is not None:
            abort.set()
            with anyio.CancelScope(shield=True):
                await finished.wait()
    value = outcome[0]
    if isinstance(value, BaseException):
        raise value
    return value


async def _every_second(report: Callable[[], Any]) -> None:
    while True:
        await anyio.sleep(_PROGRESS_INTERVAL)
        await report()


class _Progress:
    """Bytes of output so far: set from the tool's thread, reported to the
    client (once a second, by ``_in_thread``) only when they grew, since
    progress must increase with each notification."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._bytes = 0
        self._reported = 0

    def set(self, count: int) -> None:
        self._bytes = count

    async def __call__(self) -> None:
        count = self._bytes
        if count > self._reported:
            self._reported = count
            await self._ctx.session.report_progress(float(count), None, f"{count} bytes of output so far")


def _names_a_limit(uri: object) -> bool:
    """Whether a ``read``'s resource URI carries its own ``?limit=`` (the resource template's form):
    the server's default page then stays out, or the read would refuse a limit given twice."""
    try:
        return parse_page_uri(uri)[2] is not None
    except OverspillError:
        return False  # the read refuses such a URI in its own words


def _host_options(ctx: Any, name: str, arguments: Any, *, cwd: PathArg, timeout: float, page: int,
                  limits: Any = None) -> tuple[Any, dict[str, Any], Optional[threading.Event], Optional[_Progress]]:
    """What the server adds to the model's call of tool ``name``: the arguments
    with the server's defaults (a ``read`` page's limit, ``bash``'s timeout),
    the host's options for ``tools.call``, the event that cancels the call
    and the progress reported while it runs."""
    options: dict[str, Any] = {"cwd": cwd}
    if name == "read":
        if (isinstance(arguments, Mapping) and "limit" not in arguments and "path" not in arguments
                and not _names_a_limit(arguments.get("resource"))):
            arguments = {**arguments, "limit": page}
        # A file's page is not stored and previewed: it is kept within the server's bound itself.
        options["limits"] = limits
    abort = None
    report = None
    if name == "grep":  # a cancelled search kills its worker
        abort = threading.Event()
        options["abort"] = abort
    if name == "bash":
        if isinstance(arguments, Mapping) and "timeout" not in arguments:
            arguments = {**arguments, "timeout": timeout}
        abort = threading.Event()
        report = _Progress(ctx)
        options.update(spill=True, abort=abort, progress=report.set)
    elif name == "wait":
        abort = threading.Event()  # a cancelled wait stops polling and kills its pattern's worker
        report = _Progress(ctx)  # the sealed size of the command's output, while the call waits
        options.update(progress=report.set, abort=abort)
    return arguments, options, abort, report


def _listed_tools(limits: Any, timeout: float) -> list[types.Tool]:
    """``tools/list``: ``TOOLS`` as ``tools.schemas`` defines them, with their hints."""
    by_name = {spec["name"]: spec for spec in tools.schemas("anthropic", limits=limits, timeout=timeout)}
    return [
        types.Tool(name=spec["name"], description=spec["description"], input_schema=spec["input_schema"],
                   annotations=types.ToolAnnotations(read_only_hint=spec["name"] in _READ_ONLY,
                                                     open_world_hint=spec["name"] == "webfetch"))
        for spec in (by_name[name] for name in TOOLS)
    ]


def create_server(store: ToolOutputStore, session_id: Optional[str] = None, *, cwd: PathArg = None,
                  timeout: float = DEFAULT_TIMEOUT) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) over ``store`` for one session.

    :param session_id: the session every call and read belongs to; a fresh
        ``mcp-…`` id when None (named in the server's instructions).
    :param cwd: the folder commands run in and relative paths start from
        (default: the server's own).
    :param timeout: seconds a command runs when the model names no timeout.
    :raises TypeError: ``session_id`` is not a str.
    :raises ValueError: ``session_id`` is empty, or ``timeout`` is not in (0, 3600].
    """
    session = server_session(session_id)
    check_timeout(timeout)
    limits = store.limits()
    calls = itertools.count(1)
    listed = _listed_tools(limits, timeout)
    template = resource_template(limits)
    page = page_bytes(limits)
    instructions = paging_instructions(limits, session)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        if name not in TOOLS:
            return _error(f"unknown tool {name!r}; the tools are {', '.join(TOOLS)}")
        arguments, options, abort, report = _host_options(
            ctx, name, params.arguments if params.arguments is not None else {}, cwd=cwd, timeout=timeout,
            page=page, limits=limits)
        call_id = f"mcp-{time.time_ns()}-{next(calls)}"
        work = functools.partial(tools.call, store, session, call_id, name, arguments, **options)
        try:
            result = await _in_thread(work, abort, report)
        except Exception as error:  # a bug or an unexpected failure: still one line for the model
            logger.exception("tool %s failed", name)
            return _error(f"{name} failed: {error_line(error)}")
        return _tool_result(name, result, links_allowed(ctx))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        records = await anyio.to_thread.run_sync(store.records, session)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=record.resource.uri, name=whole_characters(record.resource.name or record.resource.id),
                           mime_type=record.resource.mime, size=record.resource.size)
            for record in reversed(records)])  # newest first

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def on_read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await read_resource(store, session, str(params.uri), page)

    return Server(
        "overspill", version=__version__, title="overspill",
        description="Shell, file, search and fetch tools whose large outputs are stored whole and read in pages.",
        instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool,
        on_list_resources=list_resources, on_list_resource_templates=list_templates,
        on_read_resource=on_read,
    )


def resource_template(limits: Any) -> types.ResourceTemplate:
    """The ``tool-output://`` resource template a server over ``limits`` lists."""
    return types.ResourceTemplate(
        name="tool-output", uri_template=RESOURCE_TEMPLATE, mime_type="text/plain",
        description=f"A page of an output a tool stored in this session: {page_bytes(limits)} bytes unless limit "
                    f"names up to {MAX_READ_BYTES}; offset and limit are bytes. The contents' _meta names "
                    "next_offset, absent at the end.")


async def read_resource(store: ToolOutputStore, session: str, uri: str, page: int) -> types.ReadResourceResult:
    """``resources/read`` of ``tool-output://ID?offset=N&limit=M`` in ``session``; ``page``
    bytes when the URI names no limit.

    :raises MCPError: invalid params for a malformed URI or query, resource
        not found for one that is not this session's (one line each).
    """
    base, offset, limit = _page_request(uri)
    try:
        found = await anyio.to_thread.run_sync(functools.partial(_page, store, session, base, offset,
                                                                 page if limit is None else limit))
    except InvalidResourceError as error:
        raise MCPError(_INVALID_PARAMS, message_line(str(error))) from None
    except OverspillError as error:
        raise MCPError(_RESOURCE_NOT_FOUND, message_line(str(error))) from None
    resource, start, following, content, complete = found
    # next_offset is absent at the end (a read at or past the end is an empty last page).
    meta = {"offset": start, "size": resource.size}
    if not complete:  # a background command still running: the size is its output so far
        meta["complete"] = False
    if following is not None:
        meta["next_offset"] = following
    if isinstance(content, bytes):  # a binary resource: its exact bytes, paged by the same offsets
        return types.ReadResourceResult(contents=[types.BlobResourceContents(
            uri=uri, mime_type=resource.mime, blob=base64.b64encode(content).decode("ascii"), _meta=meta)])
    return types.ReadResourceResult(contents=[
        types.TextResourceContents(uri=uri, mime_type=resource.mime, text=content, _meta=meta)])


def _page(store: ToolOutputStore, session: str, uri: str, offset: int,
          limit: Optional[int]) -> tuple[Resource, int, Optional[int], Union[str, bytes], bool]:
    """A page for ``resources/read``: text, or a binary resource's exact bytes, and whether the output is complete."""
    page = read_page(store, session, uri, offset, limit)
    binary = binary_page(store, session, page, offset, limit)
    if binary is None:
        return page.resource, page.offset, page.next, page.content, page.complete
    data, start, following = binary
    return page.resource, start, following, data, page.complete


def _page_request(uri: str) -> tuple[str, int, Optional[int]]:
    """``tool-output://ID?offset=N&limit=M`` as (the resource's URI, offset, limit).

    :raises MCPError: (invalid params, one line) a malformed URI or query.
    """
    try:
        base, offset, limit = parse_page_uri(uri)
    except InvalidResourceError as error:
        raise MCPError(_INVALID_PARAMS, message_line(str(error))) from None
    return base, offset or 0, limit


def serve(store: ToolOutputStore, session_id: Optional[str] = None, *, cwd: PathArg = None,
          timeout: float = DEFAULT_TIMEOUT) -> None:
    """Serve ``create_server(...)`` over this process's stdin and stdout until the
    client closes stdin or the process gets SIGTERM, SIGHUP or SIGINT; running
    commands are ended (their process groups killed and reaped) before it returns.

    Arguments and errors are ``create_server``'s.
    """
    run_stdio(create_server(store, session_id, cwd=cwd, timeout=timeout))


def server_session(session_id: Optional[str]) -> str:
    """The store session a server serves: ``session_id``, or a fresh ``mcp-…`` id when None.

    :raises TypeError: ``session_id`` is not a str.
    :raises ValueError: ``session_id`` is empty, longer than a record holds or holds a surrogate pair.
    """
    return f"mcp-{new_id()}" if session_id is None else check_session_id(session_id)


def _small_int(digits: str) -> Optional[int]:
    """A JSON integer, or None for one of more digits than ``int`` takes from a string (4,300)."""
    return int(digits) if len(digits) <= 4000 else None


def rejected_request(error: Exception) -> Optional[types.JSONRPCError]:
    """The JSON-RPC error answering a request that the SDK's reader could not
    validate (it yields the validation error in the message's place and the
    request would go unanswered): -32602 when only its ``params`` are at fault
    (an array, a number too long to convert), else -32600.  None when
    ``error`` is no such failure or names no usable id (then there is no
    request to answer)."""
    from json import loads

    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return None
    details = error.errors(include_url=False)
    message: object = None
    for detail in details:
        given = detail.get("input")
        if detail.get("type") == "json_invalid" and isinstance(given, str):
            try:  # valid JSON that pydantic's parser cannot hold (a 5,000-digit number)
                message = loads(given, parse_int=_small_int)
            except ValueError:
                return None
            break
        if isinstance(given, dict) and "method" in given:
            message = given
            break
    if not isinstance(message, dict):
        return None
    request_id, method = message.get("id"), message.get("method")
    if not (isinstance(request_id, str) or type(request_id) is int) or not isinstance(method, str):
        return None
    try:
        types.JSONRPCRequest.model_validate({"jsonrpc": message.get("jsonrpc"), "id": request_id, "method": method})
    except ValidationError:
        code, what = types.INVALID_REQUEST, "Invalid request"
    else:
        code, what = types.INVALID_PARAMS, "Invalid params"
    first = details[0]
    where = ".".join(str(part) for part in first.get("loc", ())[1:])
    reason = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message_line(f"{what} for {method}: {reason}")))


class _Answering(WrappedReadStream):
    """The SDK's stdio read stream, with the requests its reader could not
    validate answered with an error (``rejected_request``) on ``write``, the
    stream the server writes to, instead of being dropped unanswered; every
    other item passes through as it came.  ``on_end`` is called when the
    stream ends (the client closed stdin)."""

    def __init__(self, inner: Any, write: Any, on_end: Optional[Callable[[], None]] = None) -> None:
        super().__init__(inner)
        self._write = write
        self._on_end = on_end

    async def receive(self) -> Any:
        """The next item to serve."""
        from mcp.shared.message import SessionMessage

        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                if self._on_end is not None:  # the client closed stdin: the teardown's clock starts
                    self._on_end()
                raise
            answer = rejected_request(item) if isinstance(item, Exception) else None
            if answer is None:
                return item
            await self._write.send(SessionMessage(answer))

    def close(self) -> None:
        """Closes the SDK's stream."""
        self._inner.close()


def run_stdio(server: Server[Any], *beside: Callable[[], Any]) -> None:
    """Run ``server`` over this process's stdin and stdout, with the tasks ``beside`` it, until the
    client closes stdin or a SIGTERM, SIGHUP or SIGINT; then cancel everything (each handler and
    task ends what it started) and return, or on a signal exit 128+N.

    Signals are heard until the end: one that comes while the processes started are being ended
    (after the client closed stdin, or after a first signal) kills every group still there at once
    (``_hurry``), and the exit is 128+N.  After the client closed stdin the groups are killed
    ``_EOF_HURRY`` seconds on whatever happens, before the SIGTERM that the SDK's clients send 2 s
    after closing it: the processes that ignore SIGTERM are gone before a client's SIGKILL can
    take this process first."""
    received: list[int] = []
    ending: list[str] = []  # why the processes started are being ended: "eof" or "signal"

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP, signal.SIGINT) as signals:
                async with anyio.create_task_group() as watching:
                    serving = anyio.CancelScope()

                    async def hurry_later() -> None:
                        await anyio.sleep(_EOF_HURRY)
                        _hurry()

                    def end(why: str) -> None:
                        if not ending:
                            ending.append(why)
                            if why == "eof":
                                watching.start_soon(hurry_later)
                            serving.cancel()  # every handler ends its command, then run returns

                    async def on_signals() -> None:
                        async for number in signals:
                            received.append(number)
                            if ending:  # already ending: no more grace
                                _hurry()
                            end("signal")

                    watching.start_soon(on_signals)
                    with serving:
                        async with anyio.create_task_group() as group:
                            for task in beside:
                                group.start_soon(task)
                            await server.run(_Answering(read_stream, write_stream, functools.partial(end, "eof")),
                                             write_stream, server.create_initialization_options())
                            group.cancel_scope.cancel()
                    end("eof")  # the server returned on its own: the read stream ended
                    # Commands started in the background end with the server that owns them; waited for on
                    # a thread, so that a signal meanwhile is heard.
                    await anyio.to_thread.run_sync(background.kill_all)
                    watching.cancel_scope.cancel()
            if received:
                # The SDK reads stdin on a thread blocked in read(), which no cancellation reaches; the
                # commands are already ended and reaped, so leave without waiting for the client's EOF.
                sys.stderr.flush()
                os._exit(128 + received[0])

    anyio.run(main)


#: Groups to kill at once when a teardown must hurry, besides the commands ``capture`` runs: one
#: callable per group a front end started itself (the wrapper's upstream), for as long as it may live.
_HURRY_KILLS: set[Callable[[], None]] = set()


def kill_on_hurry(kill: Callable[[], None]) -> Callable[[], None]:
    """Register ``kill`` (it ends a process group at once, and must not raise) to be called when the
    server's teardown must hurry; returns the function that removes it again."""
    _HURRY_KILLS.add(kill)
    return functools.partial(_HURRY_KILLS.discard, kill)


def _hurry() -> None:
    """Kill every process group this server started and still has, at once (SIGKILL): its
    commands, foreground and background, and what registered with ``kill_on_hurry``."""
    from .capture import kill_running

    kill_running()
    for kill in list(_HURRY_KILLS):
        kill()
