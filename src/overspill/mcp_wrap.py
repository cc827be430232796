"""Bounded, pageable results for any MCP server: the wrapping as a library.

``wrap(session, store)`` takes an SDK ``ClientSession`` connected to an
upstream server and returns an SDK ``Server`` that serves the same tools,
resources, prompts and completions to a real client, with overspill in between:

- a ``tools/call`` result whose text blocks (joined with ``"\\n"``) are over the
  store's limits is stored whole and replaced by the bounded preview with its
  marker, a ``resource_link`` to ``tool-output://ID`` (unless
  ``resource_link=False`` or the client's protocol predates 2025-06-18) and
  ``structuredContent`` with ``uri``, ``size``, ``lines``, ``next_offset`` and
  ``text`` (the shape ``overspill mcp`` gives);
  an upstream ``structuredContent`` over the limits is stored as its JSON text.
  Under the limits the result passes through as the upstream sent it.  The
  preview block carries the annotations and ``_meta`` entries common to the
  text blocks it replaces, the ``resource_link`` those annotations; image,
  audio, embedded-resource and link blocks, and the result's ``_meta``, pass
  through unchanged (``mcp_bound.bound``);
- an upstream's JSON-RPC error to any request keeps its code; a message or
  ``data`` over the limits is stored and shown bounded (``mcp_bound.bound_error``);
- overspill's ``read`` and ``grep`` over stored outputs are added (named
  ``overspill_read``/``overspill_grep`` when the upstream has a tool of that
  name at the start, ``overspill_read_2``... when it has that one too, or
  when its tools are not known yet when ``initialize`` is answered: it asked
  the client something while listing them; the instructions, the markers'
  next calls and the links' descriptions name them), with the ``tool-output://``
  template; an upstream tool that takes one of those names later is not listed
  (a call by that name reaches overspill's tool);
- ``initialize`` answers with the upstream's server info, instructions and
  capabilities (and, where the link opens the upstream as the real client, the
  protocol version the upstream answered to the client's); a 2026-era client's
  ``server/discover`` is asked of the upstream first, and one that shows no sign
  of that era answers it (``speaks_modern``): the client falls back to
  ``initialize``, as it does with that server directly; the upstream's
  tools are listed unchanged, ``outputSchema`` included: a bounded result of a
  tool that declares one carries
  ``structuredContent`` conforming to it where one can be had;
- requests the upstream sends its client (sampling, elicitation, roots, ping)
  go to the real client through a ``Relay`` (``mcp_relay``), in either
  protocol era; notifications go both ways (to a 2026-era client, the upstream's
  list changes and resource updates on its ``subscriptions/listen`` streams:
  ``_Wrapper.listen``).

Needs the ``mcp`` extra; ``import overspill`` never imports this module.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, NoReturn, Optional

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.server import Server
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from . import tools
from ._frontend import one_line
from .mcp_bound import bound, bound_error, error_fits, fits, release
from .mcp_relay import Relay, RelayingSession, Rounds, modern
from .mcp_server import (_Answering, _error, _tool_result, links_allowed, page_bytes, paging_instructions,
                         read_resource, resource_template, server_session)
from .records import SCHEME
from .store import ToolOutputStore
from .tools._result import message_line
from .tools.schemas import _resource_problem, _resource_schema

__all__ = ["Link", "Relay", "RelayingSession", "build_server", "wrap"]

logger = logging.getLogger(__name__)

# The upstream's results are kept as the JSON it sent, so what passes through is not re-shaped.
_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
# The failures of a write that find the SDK's transport torn down (``Link.closed``).
_TORN_DOWN = (anyio.BrokenResourceError, anyio.ClosedResourceError)
# The JSON the handler of the request in hand answered (``_answer``), for the middleware (``_with_unknown``).
_ANSWERED: contextvars.ContextVar[Optional[list[dict[str, Any]]]] = contextvars.ContextVar("_ANSWERED", default=None)
# The 2026 protocol's per-request envelope: this hop's, never passed on (the upstream has its own);
# and a retry's answers to our input_required round, ours too.
_ENVELOPE = frozenset({types.PROTOCOL_VERSION_META_KEY, types.CLIENT_INFO_META_KEY,
                       types.CLIENT_CAPABILITIES_META_KEY, types.LOG_LEVEL_META_KEY})
# The most tools/list pages learn_tools asks for (a pagination that never ends, with cursors never given
# twice, would otherwise hold the start up until its timeout): far more tools than a client can offer a model.
_LEARNT_PAGES = 100
# How long the end of a subscriptions/listen stream waits for the upstream to take back its subscriptions.
_UNWATCH_WAIT = 5.0


class Link:
    """The upstream session and what became of it.

    ``describe_end`` (given by the transport) says how the upstream ended, e.g.
    "exited with code 3; its last stderr line: ..." (the end, then any detail after the first "; "); None
    while it runs.
    """

    def __init__(self, session: Optional[ClientSession] = None, *, label: str = "the upstream server",
                 describe_end: Optional[Callable[[], Any]] = None,
                 abandoned: Optional[Callable[[MCPError], bool]] = None) -> None:
        """:param abandoned: whether an error is the transport's own for a request whose answer can never come
            (``_HttpUpstream.abandoned``), a closed connection too (``closed``); None when it has none."""
        self.session = session
        self._abandoned = abandoned
        self.label = label
        self._failure: Optional[str] = None
        self._told: list[Callable[[], None]] = []  # called once the failure is noted (``when_gone``)
        self.names: set[str] = set()
        self.prepared = False
        # The link serves before the upstream's tools are known (it asked the client something while listing
        # them, which the client answers only once initialize is answered): overspill's names avoid read and grep.
        self.unlisted = False
        # The protocol version the upstream answered to the real client's offer; None when it was not offered one.
        self.agreed: Optional[str] = None
        # The upstream's answer to the server/discover of a 2026-era client, asked once (``probe``): the
        # result's JSON or the MCPError; None when no such client asked, or none came before the upstream
        # asked the client something (``OwnedLink``).  ``speaks_modern`` reads it.
        self.discovered: Any = None
        self.probed = False
        # learn_tools' first tools/list while it waits: the event set when it ends, and its answer if it gave one.
        self._first: Optional[tuple[anyio.Event, list[dict[str, Any]]]] = None
        self.output_schemas: dict[str, dict[str, Any]] = {}  # the tools that declare one
        self._describe_end = describe_end
        self._lock: Optional[anyio.Lock] = None

    @property
    def failure(self) -> Optional[str]:
        """Why the upstream is gone, on one line (how it ended, where that is known); None while it serves."""
        return self._failure

    @failure.setter
    def failure(self, why: Optional[str]) -> None:
        # Every path that notes the failure comes here, so whoever waits on the upstream is told whichever
        # noted it (a call that met the closed connection, the end of its read stream, a start that failed).
        first = self._failure is None and why is not None
        self._failure = why
        if first:
            for told in self._told:
                told()

    def when_gone(self, told: Callable[[], None]) -> None:
        """Have ``told`` called (synchronously, once) when the upstream's failure is noted."""
        self._told.append(told)

    async def lost(self) -> str:
        """Note that the connection to the upstream closed: how it ended becomes the failure (one noted
        already is kept: it is the same end).  :returns: the failure."""
        described = await self.ended("closed the connection")
        if self.failure is None:
            self.failure = described
        assert self.failure is not None
        return self.failure

    @property
    def served(self) -> bool:
        """Whether the upstream was up once (initialized, and its tools learned or being learned), though
        it may be gone since; False while it has not started, and when it never could."""
        return self.prepared or self.unlisted

    def closed(self, error: BaseException) -> bool:
        """Whether ``error`` is the MCP SDK's own word that the connection to the upstream closed, not an error
        the upstream sent: the one rule for both (``_Wrapper.gone``).

        Both carry -32000: the SDK's ``CONNECTION_CLOSED`` is the first code of JSON-RPC's server-error range,
        which servers send for their own errors ("row 7 is locked, retry later"), a proxy even in the SDK's
        words ("Connection closed").  The SDK tells its own apart only by an object it keeps to itself, so it
        is told by what the SDK does when it says so: its dispatcher marks itself closed when the read stream
        ends (or it is shut down) before it wakes the requests waiting, and refuses every later one at once; a
        request whose write finds the transport torn down first raises it from that write's failure.  Over
        HTTP, the transport's own error for a request whose response stream ended with no answer (the server
        went away mid-call) is one too (``abandoned``).
        """
        if not isinstance(error, MCPError) or error.code != types.CONNECTION_CLOSED:
            return False
        if isinstance(error.__context__, _TORN_DOWN):
            return True
        # (mcp 2.x's JSONRPCDispatcher and DirectDispatcher; a dispatcher that keeps no such state leaves
        # the code alone to say it.)
        if getattr(getattr(self.session, "_dispatcher", None), "_closed", True):
            return True
        return self._abandoned is not None and self._abandoned(error)

    async def ended(self, fallback: str) -> str:
        """How the upstream ended (waiting briefly for a process to be reaped), else ``fallback``."""
        if self._describe_end is not None:
            described = await self._describe_end()
            if described:
                return described
        return fallback

    async def prepare(self, discover: Optional[str] = None) -> None:
        """Initialize the session if its owner did not, ask it ``server/discover`` at the version
        ``discover`` when given (``probe``: before its tools, which it may answer only once the real
        client is there), and learn the upstream's tool names (none when it serves no tools: a server of
        resources or prompts only)."""
        assert self.session is not None
        if self.session.initialize_result is None and self.session.discover_result is None:
            await self.session.initialize()
        if discover is not None:
            await self.probe(discover)
        await self.learn_tools()

    async def probe(self, version: str) -> None:
        """Ask the upstream ``server/discover`` at ``version``, as a 2026-era client asked the wrapper, and
        keep its answer in ``discovered`` (an error included: it is the answer).  The session stays in the
        handshake era: a server that speaks only that era refuses the request, one that serves both
        refuses the 2026 envelope on this connection (``speaks_modern``)."""
        assert self.session is not None
        self.probed = True
        if self.session.discover_result is not None:  # its owner opened it in the 2026 era
            self.discovered = self.session.discover_result.model_dump(by_alias=True, mode="json", exclude_none=True)
            return
        try:
            self.discovered = await self.session.send_discover(version)
        except MCPError as error:
            self.discovered = error
        except Exception as error:  # an answer that is not JSON-RPC's: no sign of the 2026 era either
            self.discovered = MCPError(types.INTERNAL_ERROR, message_line(f"{type(error).__name__}: {error}"))

    async def learn_tools(self) -> None:
        """Learn the upstream's tool names (all its pages); ``prepared`` once they are known.

        A pagination that does not end (a ``nextCursor`` given twice, as one cycling p1, p2, p1... does, or
        more pages than ``_LEARNT_PAGES``) is followed no further, with a warning on this module's logger
        (on stderr, for ``overspill mcp --wrap``): the names of the pages read are what is known.  A client's own ``tools/list`` still gets the upstream's cursors as they come."""
        assert self.session is not None
        cursor = None
        given: set[str] = set()
        while True:
            if cursor:
                listed = await _tools_of(self.session, types.PaginatedRequestParams(cursor=cursor))
            else:
                ended, answer = self._first = (anyio.Event(), [])
                try:
                    listed = await _tools_of(self.session, None)
                    answer.append(listed)
                finally:
                    self._first = None
                    ended.set()
            self.learn(listed.get("tools", []))
            cursor = listed.get("nextCursor")
            stop = None
            if isinstance(cursor, str) and cursor in given:  # (one of another type fails the next request)
                stop = f"gave the cursor {one_line(str(cursor))[:80]!r} a second time"
            elif cursor and len(given) + 1 >= _LEARNT_PAGES:
                stop = f"still gave a next cursor after {_LEARNT_PAGES} pages"
            if stop is not None:
                logger.warning("%s: its tools/list %s; served with the tools of the %d pages read", self.label,
                               stop, len(given) + 1)
            if not cursor or stop is not None:
                self.prepared = True
                return
            if isinstance(cursor, str):
                given.add(cursor)

    async def first_tools(self) -> Optional[dict[str, Any]]:
        """The answer to ``learn_tools``' first tools/list (a copy), waited for, when one is in flight; else
        None (and None when it fails).  A client's own first tools/list shares it rather than sending
        another while it waits (on the client, for what the upstream asked while listing)."""
        if self._first is None:
            return None
        ended, answer = self._first
        await ended.wait()
        return dict(answer[0]) if answer else None

    def learn(self, listed: list[dict[str, Any]]) -> None:
        """Take note of listed tools: their names and output schemas."""
        for tool in listed:
            self.names.add(tool.get("name"))
            if isinstance(tool.get("outputSchema"), dict):
                self.output_schemas[tool["name"]] = tool["outputSchema"]
            else:
                self.output_schemas.pop(tool.get("name"), None)

    async def get(self, capabilities: Optional[types.ClientCapabilities],
                  client_info: Optional[types.Implementation] = None, version: Optional[str] = None, *,
                  discover: Optional[str] = None) -> ClientSession:
        """The prepared session (opened, where this link opens it, as the real client: with its
        ``capabilities``, ``client_info``, the name it gave, and ``version``, the protocol version it asked
        for, None for the SDK's newest).  ``discover``: the version a 2026-era client's ``server/discover``
        named; the upstream is asked the same once (``discovered``).

        :raises MCPError: the upstream could not be reached or is gone (one line naming why).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.failure is None and not self.prepared and not self.unlisted:
                await self._connect(capabilities, client_info, version, discover)
            if discover is not None and not self.probed and self.failure is None:
                assert self.session is not None
                await self.probe(discover)  # prepared before this client came (by the session's owner)
        if self.failure is not None:
            raise MCPError(types.INTERNAL_ERROR, message_line(f"{self.label} is gone: {self.failure}"))
        assert self.session is not None
        return self.session

    async def _connect(self, capabilities: Optional[types.ClientCapabilities],
                       client_info: Optional[types.Implementation], version: Optional[str],
                       discover: Optional[str] = None) -> None:
        try:
            await self.prepare(discover)
        except MCPError as error:
            self.failure = await self.ended(one_line(error.message))


def wrap(session: ClientSession, store: ToolOutputStore, session_id: Optional[str] = None, *,
         resource_link: bool = True, relay: Optional[Relay] = None) -> Server[Any]:
    """An SDK ``Server`` that serves ``session``'s upstream with bounded, pageable tool results.

    Run it as any low-level server (``await server.run(read, write,
    server.create_initialization_options())``); the session is initialized on
    the first request if its owner did not.

    :param session: a ``ClientSession`` to the upstream, entered (running).
    :param store: where outputs over ``store.limits()`` are kept.  Its views
        (``tool_output.views``) apply to previews, reads and greps: give one
        configured with ``views: []`` (as ``overspill mcp --wrap`` does) for
        results shown and read back as sent, escapes and lone ``\r`` included.
    :param session_id: the store session of every result and read; a fresh
        ``mcp-…`` id when None (named in the instructions).
    :param resource_link: add a ``resource_link`` block to a bounded result
        (for a client of protocol 2025-06-18 or later, which has them; the
        marker names the URI either way).
    :param relay: the ``Relay`` whose ``callbacks`` the session was built with,
        so its requests reach the real client; None when it has none.
    :raises TypeError: ``session`` is not a ``ClientSession``, or ``session_id`` not a str.
    :raises ValueError: ``session_id`` is empty.
    """
    if not isinstance(session, ClientSession):
        raise TypeError(f"session must be an mcp ClientSession, not {type(session).__name__}")
    return build_server(Link(session), store, session_id, resource_link=resource_link, relay=relay or Relay())


class _Wrapper:
    """The wrapping server's handlers over one link: what ``build_server`` registers."""

    def __init__(self, link: Link, store: ToolOutputStore, session_id: Optional[str], *, resource_link: bool,
                 relay: Relay) -> None:
        self.link, self.store, self.relay, self.resource_link = link, store, relay, resource_link
        self.session = server_session(session_id)
        self.limits = store.limits()
        self.page = page_bytes(self.limits)
        self._calls = itertools.count(1)
        self.ours: dict[str, str] = {}  # the names our tools are served under -> read or grep
        self.definitions: list[dict[str, Any]] = []
        self.server: Server[Any] = _EraServer(self.opening,
            "overspill", lifespan=self.lifespan, on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            on_list_resources=self.list_resources, on_list_resource_templates=self.list_templates,
            on_read_resource=self.read,
            on_subscribe_resource=self.forwarding(types.SubscribeRequest, types.EmptyResult),
            on_unsubscribe_resource=self.forwarding(types.UnsubscribeRequest, types.EmptyResult),
            on_list_prompts=self.forwarding(types.ListPromptsRequest, types.ListPromptsResult),
            on_get_prompt=self.forwarding(types.GetPromptRequest, types.GetPromptResult),
            on_completion=self.forwarding(types.CompleteRequest, types.CompleteResult),
            on_subscriptions_listen=self.listen)
        self.listening = ListenHandler(relay.events)
        # Once the upstream is gone no event can come: each open listen stream ends (gracefully, with its
        # result), and the client's next listen is told why (``Link.get``), rather than waiting for ever.
        link.when_gone(self.listening.close)
        self.watched: collections.Counter[str] = collections.Counter()  # resources subscribed to upstream
        # Registered directly: the constructor's arguments for these warn (deprecated in the 2026 protocol).
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams,
                                        self.forwarding(types.SetLevelRequest, types.EmptyResult))
        self.server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams,
                                             self.roots_changed)
        self.server.middleware.append(self.middleware)

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        # 2026-era calls waiting on the client's answers run on here, between that client's requests.
        async with anyio.create_task_group() as tasks:
            self.relay.tasks = tasks
            try:
                yield {}
            finally:
                self.relay.tasks = None
                tasks.cancel_scope.cancel()

    async def opening(self, request: types.JSONRPCRequest) -> Optional[types.JSONRPCMessage]:
        """What the client's first request opens (``_EraServer``): None to serve it, else the answer that
        stands in for it.  A 2026-era client's ``server/discover`` (with the 2026 envelope, which would
        open this connection in that era) is asked of the upstream first; when the upstream shows no sign
        of the 2026 era (``speaks_modern``), the client gets the upstream's own answer, and falls back to
        ``initialize`` as it does with that server directly: the handshake era, in which the upstream's
        requests outside a tool call (roots right after its handshake, or while listing its tools) reach
        it, as they cannot in the 2026 era."""
        params = request.params if isinstance(request.params, dict) else {}
        meta = params.get("_meta")
        if request.method != "server/discover" or not isinstance(meta, dict) \
                or types.PROTOCOL_VERSION_META_KEY not in meta:
            return None
        version = meta[types.PROTOCOL_VERSION_META_KEY]
        try:
            capabilities: Optional[types.ClientCapabilities] = types.ClientCapabilities.model_validate(
                meta.get(types.CLIENT_CAPABILITIES_META_KEY) or {})
        except ValidationError:
            capabilities = None
        try:
            client_info: Optional[types.Implementation] = types.Implementation.model_validate(
                meta.get(types.CLIENT_INFO_META_KEY))
        except ValidationError:
            client_info = None
        try:
            await self.link.get(capabilities, client_info,
                                discover=version if isinstance(version, str) else LATEST_MODERN_VERSION)
        except MCPError as error:  # no upstream to speak any era: initialize will say why, in the client's era
            return types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error.error)
        answer = self.link.discovered
        if answer is None:
            # The upstream asked the client something before it answered (roots right after its
            # handshake): only the handshake era carries a request outside a tool call to the client.
            return types.JSONRPCError(jsonrpc="2.0", id=request.id, error=types.ErrorData(
                code=types.INVALID_REQUEST, message="the upstream server asked its client something outside a tool "
                "call, which only the handshake protocol era carries: use initialize"))
        if speaks_modern(answer):
            return None
        if isinstance(answer, MCPError):
            return types.JSONRPCError(jsonrpc="2.0", id=request.id, error=answer.error)
        return types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result=answer)

    def name_ours(self) -> None:
        if self.ours:
            return
        for kind in ("read", "grep"):
            # Unlisted (the upstream asked the client something while listing its tools): not all its names
            # are known yet, so the plain name is not taken (nor any it listed already).
            exposed = _free_name(kind, self.link.names | {kind} if self.link.unlisted else self.link.names)
            self.ours[exposed] = kind
            spec = _resource_schema(kind, exposed)
            self.definitions.append(types.Tool(
                name=exposed, description=spec["description"], input_schema=spec["input_schema"],
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            ).model_dump(by_alias=True, mode="json", exclude_none=True))

    def links(self, ctx: Any) -> bool:
        """Whether a bounded result for the request in ``ctx`` carries a ``resource_link``: unless told not
        to, and for a client whose protocol version has them (the marker names the URI either way)."""
        return self.resource_link and links_allowed(ctx)

    def named(self) -> dict[str, str]:
        """The names our tools are served under, by kind (``read``, ``grep``): what markers call them."""
        return {kind: exposed for exposed, kind in self.ours.items()}

    async def upstream(self, ctx: Any) -> ClientSession:
        """The upstream session, opened (on the first request that needs it) as the client of ``ctx``."""
        found = await self.link.get(getattr(ctx.session, "client_capabilities", None), _client_info(ctx))
        self.name_ours()
        _adopt_identity(self.server, found)
        return found

    async def bounded_error(self, error: MCPError, call_id: Optional[str] = None) -> MCPError:
        """The upstream's JSON-RPC ``error`` as the client gets it: itself when its message and data fit
        the limits (nearly every one: no thread, no store), else the same code with what is over stored in
        the session and shown as its preview (``mcp_bound.bound_error``), as an ``isError`` result's text
        is: clients show an error's message to the model, and a stack trace can be megabytes.

        :param call_id: the call it answers (a ``tools/call``'s); a fresh one when None.
        """
        # A URL elicitation's data is the client's to act on (the elicitations it must open before
        # the call can go on), not text for the model: it passes as it came, only its message is bounded.
        kept = error.code == types.URL_ELICITATION_REQUIRED
        if error_fits(error.message, None if kept else error.data, self.limits):
            return error
        call_id = call_id or f"wrap-{time.time_ns()}-{next(self._calls)}"
        message, data = await anyio.to_thread.run_sync(functools.partial(
            bound_error, error.message, None if kept else error.data, self.store, self.session, call_id,
            **self.named()))
        return MCPError(error.code, message, error.data if kept else data)

    async def gone(self, error: BaseException) -> Optional[str]:
        """Why the upstream gave no answer to a request, on one line: when the connection closed
        (``Link.closed``), how it ended, noted as the link's failure; None for an ``MCPError`` the upstream
        sent, which is its answer."""
        if self.link.closed(error):
            return await self.link.lost()
        if isinstance(error, MCPError):
            return None
        if isinstance(error, ValidationError):  # pydantic's whole report (KBs of every union member's misfit)
            return _unfit(error)
        return one_line(f"{type(error).__name__}: {error}")

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize":
            try:
                capabilities = types.ClientCapabilities.model_validate((ctx.params or {}).get("capabilities") or {})
            except ValidationError:
                capabilities = None
            try:  # the upstream is told the real client's name, not the SDK's default one
                client_info = types.Implementation.model_validate((ctx.params or {}).get("clientInfo"))
            except ValidationError:
                client_info = None
            requested = (ctx.params or {}).get("protocolVersion")
            # A version the SDK cannot speak is answered with its newest, as the SDK's server would.
            await self.link.get(capabilities, client_info,
                                requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else None)
            self.name_ours()
            if self.link.agreed is not None and isinstance(ctx.params, dict):
                # The client is told the version the upstream answered (it may be older than the one asked
                # for), and the SDK commits this connection to the version in these very params.
                ctx.params["protocolVersion"] = self.link.agreed
            return _initialized(await call_next(ctx), self.link, self.limits, self.session, self.ours)
        if ctx.method == "server/discover":  # the 2026 protocol's handshake: the upstream's answer too
            await self.upstream(ctx)
            self.relay.client_ready(ctx.session)
            return _initialized(await call_next(ctx), self.link, self.limits, self.session, self.ours)
        if ctx.request_id is None:
            if ctx.method == "notifications/initialized":
                self.relay.client_ready(ctx.session)
            return await call_next(ctx)
        if modern(ctx.session):
            # The 2026 era has no handshake: a client that pins its version sends no server/discover, and is
            # ready at its first request (else the upstream's requests and notifications would wait for ever).
            self.relay.client_ready(ctx.session)
        else:
            self.relay.bind(ctx.session)
        sent: list[dict[str, Any]] = []  # what the handler answered, as the JSON it built (_answer)
        token = _ANSWERED.set(sent)
        try:
            result = await call_next(ctx)
        finally:
            _ANSWERED.reset(token)
        # The SDK shapes a result by its types, which drop what they do not know (a vendor's or a later
        # revision's fields): those are put back, so what passes through is as the upstream sent it.
        return _with_unknown(result, sent[0]) if sent and isinstance(result, dict) else result

    async def upstream_listed(self, ctx: Any, ask: Callable[[ClientSession], Any], none: dict[str, Any]
                              ) -> dict[str, Any]:
        """``await ask(session)``, the upstream's part of a list; ``none`` (a copy) when the upstream, once up,
        is gone, before or during the request, so the list still gives overspill's own entries (its tools, the
        stored outputs, their template), as ``call_tool`` still serves them: a client that lists again after a
        crash keeps what was stored.

        :raises MCPError: the upstream's own error while it runs; why it never came up (could not be
            started or reached, or failed its handshake): the client is told, not shown a list without it.
        """
        try:
            found = await self.upstream(ctx)
        except MCPError:
            if not self.link.served:
                raise
            self.name_ours()
            return dict(none)
        try:
            return await ask(found)
        except MCPError:
            if self.link.failure is None:  # the upstream's own answer: passed on
                raise
            return dict(none)  # it went during this request (``gone`` noted why)

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        async def ask(found: ClientSession) -> dict[str, Any]:
            return (await self.link.first_tools() if params is None or not params.cursor else None) \
                or await _tools_of(found, params, self.gone, _progress(ctx), self.bounded_error)

        listed = await self.upstream_listed(ctx, ask, {"tools": []})
        self.link.learn(listed.get("tools", []))
        # Our names were chosen at the start and told in the instructions; an upstream tool that
        # takes one later could never be called through the wrapper, so it is not listed as if it could.
        listed["tools"] = [tool for tool in listed.get("tools", []) if tool.get("name") not in self.ours]
        if not listed.get("nextCursor"):
            listed["tools"] = [*listed.get("tools", []), *self.definitions]
        return types.ListToolsResult.model_validate(_answer(listed), by_name=False)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        try:
            found: Optional[ClientSession] = await self.upstream(ctx)
        except MCPError as error:  # the upstream is gone: its tools fail, overspill's still read what was stored
            found = None
            self.name_ours()
            if params.name not in self.ours:
                return _error(error.message)
        call_id = f"wrap-{time.time_ns()}-{next(self._calls)}"
        if params.name in self.ours:
            return await _own_tool(self.store, self.session, call_id, self.ours[params.name], params.name,
                                   params.arguments, self.page, self.links(ctx), self.named())
        assert found is not None
        progress = _progress(ctx)
        if modern(ctx.session) and self.relay.tasks is not None:
            raw = await self._in_rounds(found, ctx, params, progress, call_id)
            if isinstance(raw, types.InputRequiredResult):
                return raw
        else:
            call = (ctx.session, ctx.request_id)
            self.relay.enter(call)
            try:
                raw = await self._forward_call(found, params, progress, call_id)
            finally:
                self.relay.leave(call)
        if not isinstance(raw, dict):
            return raw  # why the upstream gave no result
        if fits(raw, self.limits):
            shown = raw  # nearly every result: no thread, no store
        else:
            shown = await anyio.to_thread.run_sync(functools.partial(
                bound, raw, self.store, self.session, call_id, self.links(ctx),
                self.link.output_schemas.get(params.name), **self.named()))
            release(raw, shown)
        if modern(ctx.session) and "resultType" not in shown:
            shown = {**shown, "resultType": "complete"}  # required in the 2026 protocol; a legacy upstream has none
        return _answer(shown)

    async def _forward_call(self, found: ClientSession, params: types.CallToolRequestParams,
                            progress: Any, call_id: str) -> Any:
        """The upstream's raw result, or a ``CallToolResult`` saying why it gave none.

        :raises MCPError: the upstream's own JSON-RPC error: as it is when within the limits, else with
            what is over stored under ``call_id`` and shown as its preview (``bounded_error``).
        """
        try:
            return await found.send_request(types.CallToolRequest(params=_onward(params)), _RAW,
                                            progress_callback=progress)
        except MCPError as error:
            reason = await self.gone(error)
            if reason is None:
                await _raise_bounded(error, functools.partial(self.bounded_error, call_id=call_id))
            return _error(f"{self.link.label} {_during_this_call(reason)}; later calls will fail until the MCP "
                          "server is restarted")
        except Exception as error:  # a broken connection or an unreadable result: one line for the model
            return _error(f"{self.link.label} failed during this call: {await self.gone(error)}")

    async def _in_rounds(self, found: ClientSession, ctx: Any, params: types.CallToolRequestParams,
                         progress: Any, call_id: str) -> Any:
        """A 2026-era client's call: started (or resumed, when it echoes our ``requestState``) on the
        lifespan's tasks, so that the upstream's requests become ``input_required`` rounds."""
        if params.request_state is not None:
            rounds = self.relay.resume(params.request_state)
            rounds.answer(params.input_responses)
        else:
            rounds = Rounds()

            async def run() -> None:
                self.relay.enter(rounds)
                try:
                    with rounds.scope:
                        rounds.finish(await self._forward_call(found, params, rounds.report_progress, call_id))
                except MCPError as error:
                    rounds.finish(error)
                finally:
                    self.relay.leave(rounds)

            assert self.relay.tasks is not None
            self.relay.tasks.start_soon(run)
        rounds.progress = progress
        try:
            outcome = await rounds.next()
        except BaseException:  # cancelled: the client gave up on the call, so the upstream's is cancelled too
            rounds.scope.cancel()
            raise
        finally:
            rounds.progress = None
        if isinstance(outcome, types.InputRequiredResult):
            self.relay.suspend(rounds)
        elif isinstance(outcome, MCPError):
            raise outcome
        return outcome

    async def list_resources(self, ctx: Any, params: Any) -> Any:
        async def ask(found: ClientSession) -> dict[str, Any]:
            if not _has(found, "resources"):
                return {"resources": []}
            return await _forward(found, types.ListResourcesRequest(params=params), self.gone, _progress(ctx),
                                  self.bounded_error)

        listed = await self.upstream_listed(ctx, ask, {"resources": []})
        if not listed.get("nextCursor"):
            records = await anyio.to_thread.run_sync(self.store.records, self.session)
            listed["resources"] = [*listed.get("resources", []), *(
                types.Resource(uri=record.resource.uri, name=record.resource.name or record.resource.id,
                               mime_type=record.resource.mime, size=record.resource.size
                               ).model_dump(by_alias=True, mode="json", exclude_none=True)
                for record in reversed(records))]
        return types.ListResourcesResult.model_validate(_answer(listed), by_name=False)

    async def list_templates(self, ctx: Any, params: Any) -> Any:
        async def ask(found: ClientSession) -> dict[str, Any]:
            if _has(found, "resources"):
                try:
                    return await _forward(found, types.ListResourceTemplatesRequest(params=params), self.gone,
                                          _progress(ctx), self.bounded_error)
                except MCPError as error:
                    if error.code != types.METHOD_NOT_FOUND:  # a server with resources but no templates has none
                        raise
            return {"resourceTemplates": []}

        listed = await self.upstream_listed(ctx, ask, {"resourceTemplates": []})
        if not listed.get("nextCursor"):
            listed["resourceTemplates"] = [*listed.get("resourceTemplates", []), resource_template(
                self.limits).model_dump(by_alias=True, mode="json", exclude_none=True)]
        return types.ListResourceTemplatesResult.model_validate(_answer(listed), by_name=False)

    async def read(self, ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        if str(params.uri).startswith(SCHEME):
            return await read_resource(self.store, self.session, str(params.uri), self.page)
        return types.ReadResourceResult.model_validate(_answer(
            await _forward(await self.upstream(ctx), types.ReadResourceRequest(params=params), self.gone,
                           _progress(ctx), self.bounded_error)), by_name=False)

    def forwarding(self, request_type: Any, result_type: Any) -> Callable[..., Any]:
        # Typed on the way out, so each protocol era's required fields (the 2026 cache hints) are filled.
        async def handler(ctx: Any, params: Any) -> Any:
            raw = await _forward(await self.upstream(ctx), request_type(params=params), self.gone, _progress(ctx),
                                 self.bounded_error)
            return result_type.model_validate(_answer(raw), by_name=False)
        return handler

    async def listen(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        """A 2026-era client's ``subscriptions/listen`` stream, served over what the upstream sends: the wrapper
        speaks the handshake era to it, where list changes and resource updates are notifications of their
        own (``Relay.events``), so it honors the kinds the upstream declares it sends (its capabilities, as
        the client was told them) and the resources it can watch: each is subscribed to upstream
        (``resources/subscribe``) while a stream watches it.  Stored outputs never change (a watch on one
        is honored and never fires).

        :raises MCPError: the upstream's error to a subscription, or why it is gone.
        """
        found = await self.upstream(ctx)
        declared = found.server_capabilities or types.ServerCapabilities()
        asked = params.notifications
        watchable = declared.resources is not None and bool(declared.resources.subscribe)
        uris = [uri for uri in asked.resource_subscriptions or () if watchable or uri.startswith(SCHEME)]
        honored = types.SubscriptionFilter(
            tools_list_changed=_declares(asked.tools_list_changed, declared.tools),
            prompts_list_changed=_declares(asked.prompts_list_changed, declared.prompts),
            resources_list_changed=_declares(asked.resources_list_changed, declared.resources),
            resource_subscriptions=uris or None)
        theirs = [uri for uri in dict.fromkeys(uris) if not uri.startswith(SCHEME)]
        subscribed: list[str] = []
        try:
            for uri in theirs:
                first = not self.watched[uri]
                # Counted before it is asked: a stream that ends while the upstream takes the subscription
                # (the client cancelled it) takes it back below, as any other.
                self.watched[uri] += 1
                subscribed.append(uri)
                if first:
                    await _forward(found, types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                                   self.gone, None, self.bounded_error)
            if theirs:  # gone while it subscribed: told so (a stream opened now would never be closed)
                await self.upstream(ctx)
            return await self.listening(ctx, params.model_copy(update={"notifications": honored}))
        finally:
            # Also when the client ends the stream (which cancels this handler): the upstream stops watching.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_UNWATCH_WAIT):
                for uri in subscribed:
                    self.watched[uri] -= 1
                    if self.watched[uri] or self.link.failure is not None:
                        continue
                    del self.watched[uri]
                    with contextlib.suppress(MCPError):  # the stream is over either way
                        await _forward(found, types.UnsubscribeRequest(
                            params=types.UnsubscribeRequestParams(uri=uri)), self.gone)

    async def roots_changed(self, ctx: Any, params: Any) -> None:
        if self.link.session is not None and self.link.failure is None:
            # The notification itself: the session's helper for it warns (MCPDeprecationWarning, roots
            # are deprecated as of 2026-07-28) on the wrapper's stderr at every relay of the client's.
            await self.link.session.send_notification(types.RootsListChangedNotification())


def speaks_modern(answer: Any) -> bool:
    """Whether ``answer``, the upstream's to ``server/discover`` asked on its handshake-era connection
    (``Link.discovered``), shows that it speaks the 2026 era: a result naming a 2026 version; an
    unsupported-version error naming one; or -32600, with which a server serving both eras (the SDK's)
    refuses the 2026 envelope on a connection its handshake holds to that era.  A server of the handshake
    era only answers otherwise (-32601 or -32602, the SDK's 1.x servers), or not within the probe's time."""
    if isinstance(answer, MCPError):
        if answer.code == types.INVALID_REQUEST:
            return True
        if answer.code != types.UNSUPPORTED_PROTOCOL_VERSION:
            return False
        try:
            named = types.UnsupportedProtocolVersionErrorData.model_validate(answer.error.data).supported
        except ValidationError:
            return False
    elif isinstance(answer, dict):
        try:
            named = types.DiscoverResult.model_validate(answer).supported_versions
        except ValidationError:
            return False
    else:
        return False
    return any(version in MODERN_PROTOCOL_VERSIONS for version in named)


class _EraServer(Server[Any]):
    """An SDK ``Server`` whose client's first request is shown to ``opening`` before the SDK sees it
    (the SDK commits a connection to the era its first request opens): ``opening`` gives None to serve
    it, or the answer that stands in for it, written back at once (the SDK then takes the client's next
    request for its first)."""

    def __init__(self, opening: Callable[[types.JSONRPCRequest], Any], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._opening = opening

    async def run(self, read_stream: Any, write_stream: Any, initialization_options: Any,
                  raise_exceptions: bool = False) -> None:
        """``Server.run``, over the client's messages as ``_Opening`` passes them on."""
        await super().run(_Opening(read_stream, write_stream, self._opening), write_stream,
                          initialization_options, raise_exceptions)


class _Opening(_Answering):
    """A server's read stream whose first request goes through ``opening`` (``_EraServer``)."""

    def __init__(self, inner: Any, write: Any, opening: Callable[[types.JSONRPCRequest], Any]) -> None:
        super().__init__(inner, write)
        self._opening: Optional[Callable[[types.JSONRPCRequest], Any]] = opening

    async def receive(self) -> Any:
        """The next item to serve."""
        while True:
            item = await super().receive()
            if self._opening is None or not isinstance(item, SessionMessage) \
                    or not isinstance(item.message, types.JSONRPCRequest):
                return item
            opening, self._opening = self._opening, None
            answer = await opening(item.message)
            if answer is None:
                return item
            await self._write.send(SessionMessage(answer))


def build_server(link: Link, store: ToolOutputStore, session_id: Optional[str], *, resource_link: bool,
                 relay: Relay) -> Server[Any]:
    """The wrapping server over ``link`` (``wrap``'s, and the CLI's over a process or URL)."""
    return _Wrapper(link, store, session_id, resource_link=resource_link, relay=relay).server


def _answer(sent: dict[str, Any]) -> dict[str, Any]:
    """``sent``, noted as the JSON the request in hand answers (its unknown fields are put back after
    the SDK has shaped it: ``_with_unknown``)."""
    answered = _ANSWERED.get()
    if answered is not None:
        answered[:] = [sent]
    return sent


def _with_unknown(shaped: Any, sent: Any) -> Any:
    """``shaped`` (the SDK's dump of ``sent``, which drops the fields its types do not know) with the
    members of ``sent`` it lacks put back, at every depth: objects member by member, arrays item by
    item where the two are as long; what the SDK filled or changed stays as it made it."""
    if isinstance(shaped, dict) and isinstance(sent, dict):
        merged = dict(shaped)
        for key, value in sent.items():
            merged[key] = _with_unknown(merged[key], value) if key in merged else value
        return merged
    if isinstance(shaped, list) and isinstance(sent, list) and len(shaped) == len(sent):
        return [_with_unknown(item, given) for item, given in zip(shaped, sent)]
    return shaped


def _unfit(error: ValidationError) -> str:
    """One short line for an upstream answer the SDK refuses: the type, the number of misfits, and
    where the first is, with what was there (e.g. a content block of a type no MCP revision has)."""
    first = error.errors()[0]
    where: list[str] = []
    for part in first["loc"]:
        if isinstance(part, str) and part[:1].isupper():  # a member of a union tried: the place is before it
            break
        where.append(str(part))
    found = first.get("input")
    if where != [str(part) for part in first["loc"]] or first["type"] == "missing":
        said = f"{'.'.join(where) or 'the result'} is {one_line(repr(found))[:160]}"
    else:
        said = f"{'.'.join(where)}: {first['msg']}"
    return (f"its answer is not a {error.title} the MCP SDK takes ({error.error_count()} "
            f"misfit{'s' if error.error_count() != 1 else ''}; {said})")


def _free_name(kind: str, taken: set[str]) -> str:
    """The first of ``kind``, ``overspill_KIND``, ``overspill_KIND_2``, ``overspill_KIND_3``... that
    no upstream tool has (the same name for the same tools, whatever their order)."""
    for name in itertools.chain((kind, f"overspill_{kind}"), (f"overspill_{kind}_{n}" for n in itertools.count(2))):
        if name not in taken:
            return name
    raise AssertionError("unreachable")


def _adopt_identity(server: Server[Any], upstream: ClientSession) -> None:
    """Name ``server`` as the upstream is named, for the 2026 protocol's per-result stamp."""
    info = upstream.server_info
    if info is None or server.name == info.name:
        return
    server.name, server.version, server.title = info.name, info.version, info.title
    server.description, server.website_url, server.icons = info.description, info.website_url, info.icons
    server.__dict__.pop("_server_info_stamp_source", None)  # a cached dump of the old identity


def _onward(params: Any) -> Any:
    """``params`` without what was for this hop only: the real client's envelope keys in ``_meta``, and
    the answers and state of a 2026-era retry (the upstream speaks the handshake era)."""
    update: dict[str, Any] = {}
    meta = getattr(params, "meta", None)
    if meta and not _ENVELOPE.isdisjoint(meta):
        update["meta"] = {key: value for key, value in meta.items() if key not in _ENVELOPE}
    if getattr(params, "request_state", None) is not None or getattr(params, "input_responses", None) is not None:
        update.update(request_state=None, input_responses=None)
    return params.model_copy(update=update) if update else params


def _client_info(ctx: Any) -> Optional[types.Implementation]:
    """The name the real client gave: at ``initialize`` in the handshake era, in each request's ``_meta``
    envelope in the 2026 era (which has no handshake; ``server/discover`` carries it too).  None when it
    gave none, or one that is not an ``Implementation``."""
    given = getattr(ctx.session, "client_params", None)
    if given is not None:
        return given.client_info
    meta = (ctx.params if isinstance(ctx.params, dict) else {}).get("_meta")
    try:
        return types.Implementation.model_validate((meta or {}).get(types.CLIENT_INFO_META_KEY))
    except ValidationError:
        return None


def _has(session: ClientSession, capability: str) -> bool:
    capabilities = session.server_capabilities
    return capabilities is not None and getattr(capabilities, capability) is not None


def _declares(asked: Optional[bool], capability: Any) -> Optional[bool]:
    """A listen filter's flag for a list the client ``asked`` to hear of: True when the upstream's
    ``capability`` for it (tools, prompts, resources) declares ``listChanged``, else None (not honored)."""
    return True if asked and capability is not None and capability.list_changed else None


def _progress(ctx: Any) -> Any:
    """The real client's progress reporter for the request in ``ctx``, when it asked for progress
    (a ``progressToken`` in its ``_meta``): what the upstream reports of the request forwarded goes
    there, with the client's token; else None."""
    token = ((ctx.params or {}).get("_meta") or {}).get("progressToken")
    return None if token is None else ctx.session.report_progress


async def _forward(session: ClientSession, request: Any, gone: Callable[[BaseException], Any],
                   progress: Any = None, bounded: Optional[Callable[[MCPError], Any]] = None) -> dict[str, Any]:
    """The upstream's answer to ``request`` as the JSON it sent; its errors as they are, or as
    ``bounded`` gives them (``_Wrapper.bounded_error``: within the limits).

    :param gone: why the upstream gave no answer, None for an error it sent (``_Wrapper.gone``).
    :param progress: where the upstream's progress on it goes (``_progress``'s), if anywhere.
    """
    if getattr(request, "params", None) is not None:
        request = request.model_copy(update={"params": _onward(request.params)})
    try:
        return await session.send_request(request, _RAW, progress_callback=progress)
    except MCPError as error:
        reason = await gone(error)
        if reason is not None:
            raise MCPError(types.INTERNAL_ERROR, message_line(f"the upstream server {reason}")) from None
        if bounded is None:
            raise
        await _raise_bounded(error, bounded)


def _during_this_call(reason: str) -> str:
    """``reason``, how the upstream ended (``Link.ended``: "HOW" or "HOW; DETAIL", e.g. "was killed by SIGKILL;
    its last stderr line: ..."), saying that the end came during the call in hand: after HOW, for the line
    quoted in DETAIL may have been written long before (a server's start-up line)."""
    how, sep, detail = reason.partition("; ")
    return f"{how} during this call{sep}{detail}"


async def _raise_bounded(error: MCPError, bounded: Callable[[MCPError], Any]) -> NoReturn:
    """Raise the upstream's ``error`` as ``bounded`` gives it (``_Wrapper.bounded_error``): itself when
    within the limits, else the copy with what is over stored and shown as its preview."""
    shown = await bounded(error)
    if shown is error:
        raise error
    raise shown from None


async def _tools_of(session: ClientSession, params: Any,
                    gone: Optional[Callable[[BaseException], Any]] = None, progress: Any = None,
                    bounded: Optional[Callable[[MCPError], Any]] = None) -> dict[str, Any]:
    """The upstream's ``tools/list`` answer as the JSON it sent; no tools when it declares none (it is not
    asked) or answers that it has no such method.

    :param gone: how a closed connection is told (``_forward``'s); None to raise the SDK's error as it is.
    :param bounded: how its other errors are bounded (``_forward``'s), with ``gone``.
    """
    if not _has(session, "tools"):
        return {"tools": []}
    request = types.ListToolsRequest(params=params)
    try:
        if gone is None:
            return await session.send_request(request, _RAW)
        return await _forward(session, request, gone, progress, bounded)
    except MCPError as error:
        if error.code != types.METHOD_NOT_FOUND:
            raise
        return {"tools": []}


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
    # Task-augmented requests (tasks/get, tasks/result...) are not forwarded: a client told the
    # upstream takes them would send a tools/call the wrapper cannot answer as a task.
    capabilities.pop("tasks", None)
    result["capabilities"] = capabilities
    return result


async def _own_tool(store: ToolOutputStore, session: str, call_id: str, kind: str, exposed: str,
                    arguments: Optional[Mapping[str, Any]], page: int, resource_link: bool,
                    named: Mapping[str, str]) -> types.CallToolResult:
    """overspill's read or grep over the session's stored outputs (``named``: the names they are served under)."""
    arguments = dict(arguments or {})
    problem = _resource_problem(kind, arguments, exposed)
    if problem is not None:
        return _error(problem)
    if kind == "read" and "limit" not in arguments:
        arguments["limit"] = page
    work = functools.partial(tools.call, store, session, call_id, kind, arguments)
    return _tool_result(kind, await anyio.to_thread.run_sync(work), resource_link, **named)
