"""Bounded, pageable results for any MCP server: the wrapping as a library.

``wrap(session, store)`` takes an SDK ``ClientSession`` connected to an
upstream server and returns an SDK ``Server`` that serves the same tools,
resources, prompts and completions to a real client, with overspill in between:

- a ``tools/call`` result whose text blocks (joined with ``"\\n"``) are over the
  store's limits is stored whole and replaced by the bounded preview with its
  marker, a ``resource_link`` to ``tool-output://ID`` (unless
  ``resource_link=False``) and ``structuredContent`` with ``uri``, ``size``,
  ``lines``, ``next_offset`` and ``text`` (the shape ``overspill mcp`` gives);
  an upstream ``structuredContent`` over the limits is stored as its JSON text.
  Under the limits the result passes through as the upstream sent it.  Image,
  audio and embedded-resource blocks pass through unchanged;
- overspill's ``read`` and ``grep`` over stored outputs are added (named
  ``overspill_read``/``overspill_grep`` when the upstream has a tool of that
  name; the instructions name them), with the ``tool-output://`` template;
- ``initialize`` answers with the upstream's server info, instructions and
  capabilities; the upstream's tools are listed unchanged except for
  ``outputSchema``, which is withheld: a bounded result cannot conform to it,
  and clients that validate (the SDKs do) would refuse every bounded result;
- requests the upstream sends its client (sampling, elicitation, roots, ping)
  go to the real client through a ``Relay``; notifications go both ways.

Needs the ``mcp`` extra; ``import overspill`` never imports this module.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import TypeAdapter, ValidationError

from . import tools
from ._frontend import one_line
from .mcp_server import (_error, _tool_result, page_bytes, paging_instructions,
                         read_resource, resource_template, server_session)
from .records import SCHEME
from .store import ToolOutputStore
from .tools._result import bounded
from .tools.schemas import _resource_problem, _resource_schema

__all__ = ["Relay", "wrap"]

logger = logging.getLogger(__name__)

# The upstream's results are kept as the JSON it sent, so what passes through is not re-shaped.
_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
_GONE = types.CONNECTION_CLOSED
# The 2026 protocol's per-request envelope: this hop's, never passed on (the upstream has its own).
_ENVELOPE = frozenset({types.PROTOCOL_VERSION_META_KEY, types.CLIENT_INFO_META_KEY,
                       types.CLIENT_CAPABILITIES_META_KEY, types.LOG_LEVEL_META_KEY})
# How long a relayed ping may take before the upstream is told it failed.
_PING_TIMEOUT = 10.0


class Relay:
    """Carries what an upstream server sends its client on to the real client.

    Give ``callbacks(capabilities)`` to the upstream ``ClientSession``: only
    the callbacks for capabilities the real client declared are set, so the
    upstream is offered nothing the real client lacks.  A request the upstream
    makes while a call is in flight goes out within that call.
    """

    def __init__(self) -> None:
        self._standalone: Any = None  # the real client's session, for what belongs to no call
        self._in_flight: list[tuple[Any, Any]] = []  # (session, request id) of calls being forwarded
        self._ready: Optional[anyio.Event] = None

    def callbacks(self, capabilities: Optional[types.ClientCapabilities]) -> dict[str, Any]:
        """Keyword arguments for ``ClientSession``: the relaying callbacks and the message handler."""
        given: dict[str, Any] = {"message_handler": self._notification}
        if capabilities is not None and capabilities.sampling is not None:
            given.update(sampling_callback=self._sample, sampling_capabilities=capabilities.sampling)
        if capabilities is not None and capabilities.elicitation is not None:
            given["elicitation_callback"] = self._elicit
        if capabilities is not None and capabilities.roots is not None:
            given["list_roots_callback"] = self._roots
        return given

    def _event(self) -> anyio.Event:
        if self._ready is None:
            self._ready = anyio.Event()
        return self._ready

    def client_ready(self, session: Any) -> None:
        """The real client finished its handshake on ``session``: relaying may start."""
        self._standalone = session
        self._event().set()

    def bind(self, session: Any) -> None:
        if self._standalone is None:
            self._standalone = session

    def enter(self, session: Any, request_id: Any) -> None:
        self._in_flight.append((session, request_id))

    def leave(self, session: Any, request_id: Any) -> None:
        self._in_flight.remove((session, request_id))

    async def _ask(self, request: Any, result_type: Any) -> Any:
        await self._event().wait()
        if self._in_flight:
            session, related = self._in_flight[-1]
            metadata = ServerMessageMetadata(related_request_id=related)
        else:
            session, metadata = self._standalone, None
        try:
            return await session.send_request(request, result_type, metadata=metadata)
        except MCPError as error:
            return error.error

    async def _sample(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        result_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._ask(types.CreateMessageRequest(params=params), result_type)

    async def _elicit(self, context: Any, params: Any) -> Any:
        return await self._ask(types.ElicitRequest(params=params), types.ElicitResult)

    async def _roots(self, context: Any) -> Any:
        return await self._ask(types.ListRootsRequest(), types.ListRootsResult)

    async def ping(self) -> None:
        """Ping the real client for the upstream; answers at once when none is connected yet.

        :raises MCPError: the real client did not answer within 10 seconds, or refused.
        """
        if self._ready is None or not self._ready.is_set():
            return
        with anyio.fail_after(_PING_TIMEOUT):
            await self._standalone.send_ping()

    async def _notification(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line on the upstream's stdout that is not JSON-RPC
            logger.warning("the upstream server sent a message that is not JSON-RPC: %s", one_line(str(message))[:300])
            return
        if isinstance(message, types.ProgressNotification):
            return  # a call's progress goes through that call's callback, with the real client's token
        await self._event().wait()
        try:
            await self._standalone.send_notification(message)
        except Exception as error:  # the real client is going away: nothing left to tell
            logger.debug("could not pass on %s: %s", type(message).__name__, error)


class RelayingSession(ClientSession):
    """A ``ClientSession`` that relays the upstream's pings to the real client
    (the SDK answers them itself otherwise)."""

    def __init__(self, *args: Any, relay: Relay, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._relay = relay

    async def _on_request(self, dctx: Any, method: str, params: Any) -> dict[str, Any]:
        if method == "ping":
            await self._relay.ping()
            return {}
        return await super()._on_request(dctx, method, params)


class Link:
    """The upstream session and what became of it.

    ``describe_end`` (given by the transport) says how the upstream ended, e.g.
    "exited with code 3; its last stderr line: ..."; None while it runs.
    """

    def __init__(self, session: Optional[ClientSession] = None, *, label: str = "the upstream server",
                 describe_end: Optional[Callable[[], Any]] = None) -> None:
        self.session = session
        self.label = label
        self.failure: Optional[str] = None
        self.names: set[str] = set()
        self.prepared = False
        self._describe_end = describe_end
        self._lock: Optional[anyio.Lock] = None

    async def ended(self, fallback: str) -> str:
        """How the upstream ended (waiting briefly for a process to be reaped), else ``fallback``."""
        if self._describe_end is not None:
            described = await self._describe_end()
            if described:
                return described
        return fallback

    async def prepare(self) -> None:
        """Initialize the session if its owner did not, and learn the upstream's tool names."""
        assert self.session is not None
        if self.session.initialize_result is None and self.session.discover_result is None:
            await self.session.initialize()
        cursor = None
        while True:
            listed = await self.session.send_request(
                types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None), _RAW)
            self.names.update(tool.get("name") for tool in listed.get("tools", []))
            cursor = listed.get("nextCursor")
            if not cursor:
                self.prepared = True
                return

    async def get(self, capabilities: Optional[types.ClientCapabilities]) -> ClientSession:
        """The prepared session.

        :raises MCPError: the upstream could not be reached or is gone (one line naming why).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.failure is None and not self.prepared:
                await self._connect(capabilities)
        if self.failure is not None:
            raise MCPError(types.INTERNAL_ERROR, f"{self.label} is gone: {self.failure}")
        assert self.session is not None
        return self.session

    async def _connect(self, capabilities: Optional[types.ClientCapabilities]) -> None:
        try:
            await self.prepare()
        except MCPError as error:
            self.failure = await self.ended(one_line(error.message))


def wrap(session: ClientSession, store: ToolOutputStore, session_id: Optional[str] = None, *,
         resource_link: bool = True, relay: Optional[Relay] = None) -> Server[Any]:
    """An SDK ``Server`` that serves ``session``'s upstream with bounded, pageable tool results.

    Run it as any low-level server (``await server.run(read, write,
    server.create_initialization_options())``); the session is initialized on
    the first request if its owner did not.

    :param session: a ``ClientSession`` to the upstream, entered (running).
    :param store: where outputs over ``store.limits()`` are kept.
    :param session_id: the store session of every result and read; a fresh
        ``mcp-…`` id when None (named in the instructions).
    :param resource_link: add a ``resource_link`` block to a bounded result
        (the marker names the URI either way).
    :param relay: the ``Relay`` whose ``callbacks`` the session was built with,
        so its requests reach the real client; None when it has none.
    :raises TypeError: ``session`` is not a ``ClientSession``, or ``session_id`` not a str.
    :raises ValueError: ``session_id`` is empty.
    """
    if not isinstance(session, ClientSession):
        raise TypeError(f"session must be an mcp ClientSession, not {type(session).__name__}")
    return build_server(Link(session), store, session_id, resource_link=resource_link, relay=relay or Relay())


def build_server(link: Link, store: ToolOutputStore, session_id: Optional[str], *, resource_link: bool,
                 relay: Relay) -> Server[Any]:
    """The wrapping server over ``link`` (``wrap``'s, and the CLI's over a process or URL)."""
    session = server_session(session_id)
    limits = store.limits()
    page = page_bytes(limits)
    calls = itertools.count(1)
    ours: dict[str, str] = {}  # the names our tools are served under -> read or grep
    definitions: list[dict[str, Any]] = []

    def name_ours() -> None:
        if ours:
            return
        for kind in ("read", "grep"):
            exposed = f"overspill_{kind}" if kind in link.names else kind
            ours[exposed] = kind
            spec = _resource_schema(kind, exposed)
            definitions.append(types.Tool(
                name=exposed, description=spec["description"], input_schema=spec["input_schema"],
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            ).model_dump(by_alias=True, mode="json", exclude_none=True))

    async def upstream(ctx: Any) -> ClientSession:
        found = await link.get(getattr(ctx.session, "client_capabilities", None))
        name_ours()
        _adopt_identity(server, found)
        return found

    async def gone(error: BaseException) -> str:
        if isinstance(error, MCPError) and error.code == _GONE:
            link.failure = await link.ended("closed the connection")
            return link.failure
        return one_line(f"{type(error).__name__}: {error}")

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize":
            try:
                capabilities = types.ClientCapabilities.model_validate((ctx.params or {}).get("capabilities") or {})
            except ValidationError:
                capabilities = None
            await link.get(capabilities)
            name_ours()
            return _initialized(await call_next(ctx), link, limits, session, ours)
        if ctx.method == "server/discover":  # the 2026 protocol's handshake: the upstream's answer too
            await upstream(ctx)
            relay.client_ready(ctx.session)
            return _initialized(await call_next(ctx), link, limits, session, ours)
        if ctx.request_id is None:
            if ctx.method == "notifications/initialized":
                relay.client_ready(ctx.session)
            return await call_next(ctx)
        relay.bind(ctx.session)
        return await call_next(ctx)

    async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        found = await upstream(ctx)
        listed = await _forward(found, types.ListToolsRequest(params=params), gone)
        for tool in listed.get("tools", []):
            tool.pop("outputSchema", None)  # see the module's docstring
        if not listed.get("nextCursor"):
            listed["tools"] = [*listed.get("tools", []), *definitions]
        return types.ListToolsResult.model_validate(listed, by_name=False)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        try:
            found = await upstream(ctx)
        except MCPError as error:  # the upstream is gone: its tools fail, overspill's still read what was stored
            found = None
            name_ours()
            if params.name not in ours:
                return _error(error.message)
        call_id = f"wrap-{time.time_ns()}-{next(calls)}"
        if params.name in ours:
            return await _own_tool(store, session, call_id, ours[params.name], params.name, params.arguments, page,
                                   resource_link)
        assert found is not None
        token = ((ctx.params or {}).get("_meta") or {}).get("progressToken")
        progress = None if token is None else ctx.session.report_progress
        relay.enter(ctx.session, ctx.request_id)
        try:
            raw = await found.send_request(types.CallToolRequest(params=_onward(params)), _RAW,
                                           progress_callback=progress)
        except MCPError as error:
            if error.code != _GONE:
                raise  # the upstream's own JSON-RPC error, passed on as it is
            reason = await gone(error)
            return _error(f"{link.label} {reason} during this call; later calls will fail until the MCP server "
                          "is restarted")
        except Exception as error:  # a broken connection or an unreadable result: one line for the model
            return _error(f"{link.label} failed during this call: {await gone(error)}")
        finally:
            relay.leave(ctx.session, ctx.request_id)
        if _fits(raw, limits):
            shown = raw  # nearly every result: no thread, no store
        else:
            shown = await anyio.to_thread.run_sync(_bound, raw, store, session, call_id, resource_link)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and "resultType" not in shown:
            shown = {**shown, "resultType": "complete"}  # required in the 2026 protocol; a legacy upstream has none
        return shown

    async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
        found = await upstream(ctx)
        listed: dict[str, Any] = {"resources": []}
        if _has(found, "resources"):
            listed = await _forward(found, types.ListResourcesRequest(params=params), gone)
        if not listed.get("nextCursor"):
            records = await anyio.to_thread.run_sync(store.records, session)
            listed["resources"] = [*listed.get("resources", []), *(
                types.Resource(uri=record.resource.uri, name=record.resource.name or record.resource.id,
                               mime_type=record.resource.mime, size=record.resource.size
                               ).model_dump(by_alias=True, mode="json", exclude_none=True)
                for record in reversed(records))]
        return types.ListResourcesResult.model_validate(listed, by_name=False)

    async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
        found = await upstream(ctx)
        listed: dict[str, Any] = {"resourceTemplates": []}
        if _has(found, "resources"):
            try:
                listed = await _forward(found, types.ListResourceTemplatesRequest(params=params), gone)
            except MCPError as error:
                if error.code != types.METHOD_NOT_FOUND:  # a server with resources but no templates has none
                    raise
        if not listed.get("nextCursor"):
            listed["resourceTemplates"] = [*listed.get("resourceTemplates", []), resource_template(limits).model_dump(
                by_alias=True, mode="json", exclude_none=True)]
        return types.ListResourceTemplatesResult.model_validate(listed, by_name=False)

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        if str(params.uri).startswith(SCHEME):
            return await read_resource(store, session, str(params.uri), page)
        return types.ReadResourceResult.model_validate(
            await _forward(await upstream(ctx), types.ReadResourceRequest(params=params), gone), by_name=False)

    def forwarding(request_type: Any, result_type: Any) -> Callable[..., Any]:
        # Typed on the way out, so each protocol era's required fields (the 2026 cache hints) are filled.
        async def handler(ctx: Any, params: Any) -> Any:
            raw = await _forward(await upstream(ctx), request_type(params=params), gone)
            return result_type.model_validate(raw, by_name=False)
        return handler

    async def roots_changed(ctx: Any, params: Any) -> None:
        if link.session is not None and link.failure is None:
            await link.session.send_roots_list_changed()

    server: Server[Any] = Server(
        "overspill", on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read,
        on_subscribe_resource=forwarding(types.SubscribeRequest, types.EmptyResult),
        on_unsubscribe_resource=forwarding(types.UnsubscribeRequest, types.EmptyResult),
        on_list_prompts=forwarding(types.ListPromptsRequest, types.ListPromptsResult),
        on_get_prompt=forwarding(types.GetPromptRequest, types.GetPromptResult),
        on_completion=forwarding(types.CompleteRequest, types.CompleteResult))
    # Registered directly: the constructor's arguments for these warn (deprecated in the 2026 protocol).
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, forwarding(types.SetLevelRequest, types.EmptyResult))
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, roots_changed)
    server.middleware.append(middleware)
    return server


def _adopt_identity(server: Server[Any], upstream: ClientSession) -> None:
    """Name ``server`` as the upstream is named, for the 2026 protocol's per-result stamp."""
    info = upstream.server_info
    if info is None or server.name == info.name:
        return
    server.name, server.version, server.title = info.name, info.version, info.title
    server.description, server.website_url, server.icons = info.description, info.website_url, info.icons
    server.__dict__.pop("_server_info_stamp_source", None)  # a cached dump of the old identity


def _onward(params: Any) -> Any:
    """``params`` without the real client's envelope keys in ``_meta``."""
    meta = getattr(params, "meta", None)
    if not meta or _ENVELOPE.isdisjoint(meta):
        return params
    return params.model_copy(update={"meta": {key: value for key, value in meta.items() if key not in _ENVELOPE}})


def _has(session: ClientSession, capability: str) -> bool:
    capabilities = session.server_capabilities
    return capabilities is not None and getattr(capabilities, capability) is not None


async def _forward(session: ClientSession, request: Any, gone: Callable[[BaseException], Any]) -> dict[str, Any]:
    """The upstream's answer to ``request`` as the JSON it sent; its errors as they are."""
    if getattr(request, "params", None) is not None:
        request = request.model_copy(update={"params": _onward(request.params)})
    try:
        return await session.send_request(request, _RAW)
    except MCPError as error:
        if error.code != _GONE:
            raise
        raise MCPError(types.INTERNAL_ERROR, f"the upstream server {await gone(error)}") from None


def _initialized(result: Any, link: Link, limits: Any, session: str, ours: Mapping[str, str]) -> Any:
    """Our ``initialize`` result made the upstream's: its server info, instructions and capabilities
    (with tools and resources, which overspill serves whatever the upstream has)."""
    upstream = link.session
    assert upstream is not None
    if not isinstance(result, dict):
        return result
    named = {kind: exposed for exposed, kind in ours.items()}
    ours_text = paging_instructions(limits, session, named["read"], named["grep"], "Tool results")
    instructions = getattr(upstream.initialize_result, "instructions", None) or upstream.instructions
    result["instructions"] = f"{instructions}\n\n{ours_text}" if instructions else ours_text
    if upstream.server_info is not None and "serverInfo" in result:
        result["serverInfo"] = upstream.server_info.model_dump(by_alias=True, mode="json", exclude_none=True)
    capabilities = (upstream.server_capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
                    if upstream.server_capabilities is not None else {})
    capabilities.setdefault("tools", {})
    capabilities.setdefault("resources", {})
    result["capabilities"] = capabilities
    return result


async def _own_tool(store: ToolOutputStore, session: str, call_id: str, kind: str, exposed: str,
                    arguments: Optional[Mapping[str, Any]], page: int, resource_link: bool) -> types.CallToolResult:
    """overspill's read or grep over the session's stored outputs."""
    arguments = dict(arguments or {})
    problem = _resource_problem(kind, arguments, exposed)
    if problem is not None:
        return _error(problem)
    if kind == "read" and "limit" not in arguments:
        arguments["limit"] = page
    work = functools.partial(tools.call, store, session, call_id, kind, arguments)
    return _tool_result(kind, await anyio.to_thread.run_sync(work), resource_link)


def _within(text: str, limits: Any) -> bool:
    """Whether ``text`` is within the limits as it is (its view, which the store measures, is no larger)."""
    return (len(text) <= limits.max_bytes and text.count("\n") < limits.max_lines
            and len(text.encode("utf-8", "surrogatepass")) <= limits.max_bytes)


def _fits(raw: dict[str, Any], limits: Any) -> bool:
    """Whether a ``tools/call`` result passes through as it is, decided without the store: its
    text blocks (joined as ``_bound`` joins them) and its ``structuredContent`` (as JSON) fit."""
    content = raw.get("content")
    if not isinstance(content, list):
        return True
    texts = [block["text"] for block in content
             if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    if texts and not _within("\n".join(texts), limits):
        return False
    structured = raw.get("structuredContent")
    return structured is None or _within(json.dumps(structured, ensure_ascii=False, indent=2), limits)


def _duplicates(structured: Any, text: str) -> bool:
    """Whether ``structuredContent`` says what the text blocks say (the SDK's servers put a
    result in both: its JSON in the text, or the text as ``{"result": text}``)."""
    if structured == {"result": text}:
        return True
    if not text.lstrip()[:1] in ("{", "["):
        return False
    try:
        return json.loads(text) == structured
    except ValueError:
        return False


def _bound(raw: dict[str, Any], store: ToolOutputStore, session: str, call_id: str,
           resource_link: bool) -> dict[str, Any]:
    """A ``tools/call`` result bounded for the model (runs on a worker thread: it may write)."""
    content = raw.get("content")
    if not isinstance(content, list):
        return raw
    texts = [index for index, block in enumerate(content)
             if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    joined = "\n".join(content[index]["text"] for index in texts)
    structured = raw.get("structuredContent")
    cut = store.truncate(session, call_id, joined) if texts else None
    if structured is not None and (cut is None or cut.resource is None or not _duplicates(structured, joined)):
        as_json = json.dumps(structured, ensure_ascii=False, indent=2)
        shape = store.truncate(session, f"{call_id}-structured", as_json, mime="application/json")
    else:
        shape = None
    if (cut is None or cut.resource is None) and (shape is None or shape.resource is None):
        return raw  # within the limits: as the upstream sent it
    shown = dict(raw)
    if cut is not None and cut.resource is not None:
        ours = _tool_result("wrap", bounded(cut), resource_link).model_dump(by_alias=True, mode="json",
                                                                            exclude_none=True)
        blocks: list[Any] = []
        for index, block in enumerate(content):  # the preview where the first text block was
            if index == texts[0]:
                blocks.extend(ours["content"])
            elif index not in texts:
                blocks.append(block)
        shown["content"] = blocks
        data = ours["structuredContent"]
        if shape is not None and shape.resource is not None:
            data["structured_uri"] = shape.resource.uri  # stored too, not shown: the text is the preview
            if resource_link:
                shown["content"].append(_tool_result("wrap", bounded(shape)).model_dump(
                    by_alias=True, mode="json", exclude_none=True)["content"][1])
        elif shape is not None:
            data["structured"] = structured  # small: kept whole beside the preview
        shown["structuredContent"] = data
    else:
        assert shape is not None
        ours = _tool_result("wrap", bounded(shape), resource_link).model_dump(by_alias=True, mode="json",
                                                                             exclude_none=True)
        shown["content"] = [*content, *ours["content"]]
        shown["structuredContent"] = ours["structuredContent"]
    return shown

