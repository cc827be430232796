"""What an upstream MCP server asks of its client, carried to the real client (the wrapper's relay).

The upstream is always spoken to in the initialize-handshake era, so it may
send requests (sampling ``createMessage``, elicitation, ``roots/list``, ping)
while a call is in flight.  How they reach the real client depends on the era
the real client speaks:

- handshake era: as requests of our own, related to the call in flight;
- 2026 era, which forbids server-to-client requests: the call in flight
  answers ``input_required`` with the upstream's requests embedded (a
  ``Rounds``), the client retries with ``inputResponses`` and the
  ``requestState`` we gave, and the answers go back to the upstream, whose
  call never stopped.

Needs the ``mcp`` extra; ``import overspill`` never imports this module.
"""

from __future__ import annotations

import functools
import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, Optional, Union

import anyio
import anyio.abc
from mcp import types
from mcp.client.session import DEFAULT_CLIENT_INFO, ClientSession
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import event_from_wire
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from ._frontend import one_line

__all__ = ["Relay", "RelayingSession", "Rounds"]

logger = logging.getLogger(__name__)

# How long a relayed ping may take before the upstream is told it failed.
_PING_TIMEOUT = 10.0
# How long a 2026-era client has to retry with its answers before the upstream is told it gave none.
_ANSWER_WAIT = 600.0
_EXPIRED = "Invalid or expired requestState"
# How many of the upstream's notifications wait for the real client's handshake to end, at most.
_HELD_MOST = 100


def modern(session: Any) -> bool:
    """Whether the real client on ``session`` speaks the 2026 era (no server-to-client requests)."""
    return getattr(session, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


class Rounds:
    """One upstream call of a 2026-era client, across its ``input_required`` rounds.

    The upstream's call runs on (``tasks``) while the client answers: its
    requests queue here (``ask``), each round's handler takes what is queued
    or the call's end (``next``), and the client's answers (``answer``) wake
    the waiting requests.
    """

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(24)  # the requestState: unguessable, meaningful to this process only
        self._events_in, self._events = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
        self._waiting: dict[str, tuple[anyio.Event, list[Any]]] = {}
        self._keys = 0
        self.progress: Any = None  # the current round's progress reporter
        self.forget: Any = None  # drops this call from the relay's suspended calls
        self.scope = anyio.CancelScope()  # the upstream call's: cancelled when the client gives up on it

    async def report_progress(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        """The upstream's progress, to the round in flight (an earlier round's request is answered)."""
        if self.progress is not None:
            try:
                await self.progress(progress, total, message)
            except Exception as error:  # that round ended meanwhile
                logger.debug("progress not passed on: %s", error)

    async def ask(self, request: Any, result_type: Any) -> Any:
        """Queue ``request`` for the client and wait for its answer (an ``ErrorData`` if none came)."""
        self._keys += 1
        key = f"{request.method.split('/')[-1]}-{self._keys}"
        event, answer = anyio.Event(), []
        self._waiting[key] = (event, answer)
        await self._events_in.send(("ask", (key, request)))
        with anyio.move_on_after(_ANSWER_WAIT):
            await event.wait()
        self._waiting.pop(key, None)
        if not answer:
            if self.forget is not None:
                self.forget()  # the client went away from this call: a late retry is refused
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the client did not answer this request")
        try:
            return result_type.model_validate(answer[0], by_name=False)
        except ValueError as error:
            return types.ErrorData(code=types.INVALID_PARAMS,
                                   message=f"the client's answer does not fit: {one_line(str(error))[:200]}")

    def answer(self, responses: Optional[dict[str, Any]]) -> None:
        """The client's ``inputResponses`` (keyed as asked), to the requests waiting on them."""
        for key, response in (responses or {}).items():
            waiting = self._waiting.get(key)
            if waiting is not None and not waiting[0].is_set():
                dumped = response.model_dump(by_alias=True, mode="json", exclude_none=True) \
                    if hasattr(response, "model_dump") else response
                waiting[1].append(dumped)
                waiting[0].set()

    def finish(self, outcome: Any) -> None:
        """The upstream call's end: its raw result, or a ``CallToolResult`` saying why there is none."""
        self._events_in.send_nowait(("done", outcome))

    async def next(self) -> Union[types.InputRequiredResult, Any]:
        """What this round answers: the requests queued (an ``input_required`` result), else the call's end."""
        kind, value = await self._events.receive()
        if kind == "done":
            return value
        asked = dict([value])
        while True:  # requests the upstream made together go out together
            try:
                kind, more = self._events.receive_nowait()
            except anyio.WouldBlock:
                break
            if kind == "done":  # not expected while a request waits; keep it for the next round
                self._events_in.send_nowait((kind, more))
                break
            asked[more[0]] = more[1]
        return types.InputRequiredResult(input_requests=asked, request_state=self.token)


class Relay:
    """Carries what an upstream server sends its client on to the real client.

    Give ``callbacks(capabilities)`` to the upstream ``ClientSession``: only
    the callbacks for capabilities the real client declared are set (a
    ``RelayingSession`` given the same ``capabilities`` offers the upstream
    those, as declared).  A request the upstream
    makes while a call is in flight goes out within that call (in the 2026
    era, as that call's ``input_required`` round).
    """

    def __init__(self) -> None:
        self._standalone: Any = None  # the real client's session, for what belongs to no call
        # Calls being forwarded: (session, request id) in the handshake era, their Rounds in the 2026 era.
        self._in_flight: list[Any] = []
        self._ready: Optional[anyio.Event] = None
        self._suspended: dict[str, Rounds] = {}
        self._held = 0  # the upstream's notifications waiting for the client's handshake to end
        self.tasks: Optional[anyio.abc.TaskGroup] = None  # where 2026-era calls run on between rounds
        # The upstream's list changes and resource updates, for a 2026-era client's subscriptions/listen
        # streams (that era has no other way to carry them; the wrapper's listen handler reads them here).
        self.events = InMemorySubscriptionBus()
        # Told when the upstream asks the client something before the client finished its handshake
        # (the request waits for it): whoever waits on the upstream then must not hold up that handshake.
        self.asked_early: Optional[Callable[[], None]] = None

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
        """The real client finished its handshake on ``session`` (in the 2026 era, which has none: sent
        ``server/discover`` or any request): relaying may start."""
        self._standalone = session
        self._event().set()

    def bind(self, session: Any) -> None:
        if self._standalone is None:
            self._standalone = session

    def enter(self, call: Any) -> None:
        """A call is being forwarded: ``(session, request id)``, or its ``Rounds``."""
        self._in_flight.append(call)

    def leave(self, call: Any) -> None:
        self._in_flight.remove(call)

    def suspend(self, rounds: Rounds) -> None:
        """``rounds`` waits for the client's retry, which names its token."""
        self._suspended[rounds.token] = rounds
        rounds.forget = functools.partial(self._suspended.pop, rounds.token, None)

    def resume(self, state: str) -> Rounds:
        """The call whose ``requestState`` the client echoed.

        :raises MCPError: no call of this process has that state (any more).
        """
        rounds = self._suspended.pop(state, None)
        if rounds is None:
            raise MCPError(types.INVALID_PARAMS, _EXPIRED)
        return rounds

    async def _ask(self, request: Any, result_type: Any) -> Any:
        if self._in_flight and isinstance(self._in_flight[-1], Rounds):
            # A 2026-era call's own round: the client is there (it made the call), handshake or none.
            return await self._in_flight[-1].ask(request, result_type)
        if not self._event().is_set() and self.asked_early is not None:
            self.asked_early()
        await self._event().wait()
        if self._in_flight and isinstance(self._in_flight[-1], Rounds):
            return await self._in_flight[-1].ask(request, result_type)
        if self._in_flight:
            session, related = self._in_flight[-1]
            metadata = ServerMessageMetadata(related_request_id=related)
        else:
            session, metadata = self._standalone, None
        if modern(session):
            return types.ErrorData(code=types.INTERNAL_ERROR, message=(
                "the client speaks a protocol without server-to-client requests outside a tool call"))
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
        """Ping the real client for the upstream; answers at once when none is connected yet, or
        when the client speaks the 2026 era (which has no server-to-client ping).

        :raises MCPError: the real client did not answer within 10 seconds, or refused.
        """
        if self._ready is None or not self._ready.is_set() or modern(self._standalone):
            return
        with anyio.fail_after(_PING_TIMEOUT):
            await self._standalone.send_ping()

    async def _notification(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line on the upstream's stdout that is not JSON-RPC
            logger.warning("the upstream server sent a message that is not JSON-RPC: %s", one_line(str(message))[:300])
            return
        if isinstance(message, types.ProgressNotification):
            return  # a request's progress goes through that request's callback, with the real client's token
        sent = message.model_dump(by_alias=True, mode="json", exclude_none=True) \
            if isinstance(message, BaseModel) else {}
        event = event_from_wire(sent.get("method", ""), sent.get("params"))
        if event is not None:  # (no stream listens before the client is there: nothing to hold)
            await self.events.publish(event)
        if not self._event().is_set():
            # Held until the client's handshake ends (notifications go out in the order they came), a
            # bounded number of them: past that the client is not finishing it, and the rest are dropped.
            if self._held >= _HELD_MOST:
                logger.debug("%s dropped: the client has not finished its handshake", type(message).__name__)
                return
            self._held += 1
            try:
                await self._event().wait()
            finally:
                self._held -= 1
        try:
            await self._standalone.send_notification(message)
        except Exception as error:  # the real client is going away: nothing left to tell
            logger.debug("could not pass on %s: %s", type(message).__name__, error)


class RelayingSession(ClientSession):
    """A ``ClientSession`` that relays the upstream's pings to the real client
    (the SDK answers them itself otherwise), and that can be opened as the real
    client: given ``version`` or ``capabilities``, its ``initialize`` offers
    the upstream that protocol version (the SDK's newest handshake version when
    None) and exactly those capabilities (none when None), where the SDK's
    offers its newest version and the capabilities its callbacks imply."""

    def __init__(self, *args: Any, relay: Relay, version: Optional[str] = None,
                 capabilities: Optional[types.ClientCapabilities] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._relay = relay
        self._as_client = version is not None or capabilities is not None
        self._version = version or LATEST_HANDSHAKE_VERSION
        # Task-augmented requests to the client are not relayed: the upstream is not told it takes them.
        self._capabilities = (capabilities or types.ClientCapabilities()).model_copy(update={"tasks": None})
        self._named = kwargs.get("client_info") or DEFAULT_CLIENT_INFO

    async def initialize(self) -> types.InitializeResult:
        """The upstream's ``initialize`` answer (adopted, and ``notifications/initialized`` sent).

        :raises RuntimeError: it answered a protocol version the SDK cannot speak.
        :raises MCPError: it answered with an error, or the connection closed.
        """
        if not self._as_client or self.initialize_result is not None:
            return await super().initialize()
        result = await self.send_request(types.InitializeRequest(params=types.InitializeRequestParams(
            protocol_version=self._version, capabilities=self._capabilities, client_info=self._named)),
            types.InitializeResult)
        if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise RuntimeError(f"Unsupported protocol version from the server: {result.protocol_version}")
        self.adopt(result)
        await self.send_notification(types.InitializedNotification())
        return result

    async def _on_request(self, dctx: Any, method: str, params: Any) -> dict[str, Any]:
        if method == "ping":
            await self._relay.ping()
            return {}
        return await super()._on_request(dctx, method, params)
