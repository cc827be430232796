"""LangChain / LangGraph adapter: ``create_agent(..., middleware=[middleware()])``.

Needs the ``langchain`` extra (``pip install 'overspill[langchain]'``).

The middleware's ``wrap_tool_call`` and ``awrap_tool_call`` bound every tool
result: a ``ToolMessage``'s content (a string, or each text block of a
content-block list) and the ``ToolMessage``s of a ``Command``'s update.  The
middleware registers ``read`` and ``grep`` as its tools and answers their
calls itself, so they run in the calling thread's session.

The session is the LangGraph thread (``configurable.thread_id``) when the
agent is run with one, else the agent run (an id the middleware keeps in the
run's state, set when the run starts).  The call id is the model's tool call id.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Awaitable, Callable, Optional

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command
from typing_extensions import NotRequired

from ..store import ToolOutputStore
from ._core import Bounder, PagingTool, new_call_id, new_session_id, open_store, paging_tools

__all__ = ["OverspillMiddleware", "middleware"]

_SESSION_KEY = "overspill_session"


class OverspillState(AgentState):
    """The agent state with the run's session id, private to the middleware."""

    overspill_session: NotRequired[Annotated[str, PrivateStateAttr]]


def _session_of(request: Any, fallback: str) -> str:
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None) or {}
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is not None and str(thread_id):
        return str(thread_id)
    state = getattr(request, "state", None)
    session = state.get(_SESSION_KEY) if isinstance(state, dict) else getattr(state, _SESSION_KEY, None)
    return session if isinstance(session, str) and session else fallback


def _call_id(request: Any) -> str:
    call_id = request.tool_call.get("id")
    return call_id if isinstance(call_id, str) and call_id else new_call_id()


class OverspillMiddleware(AgentMiddleware):
    """Bounds every tool result through a ``ToolOutputStore`` and gives the model ``read`` and ``grep``."""

    state_schema = OverspillState

    def __init__(self, store: ToolOutputStore) -> None:
        super().__init__()
        self.store = store
        self._bounder = Bounder(store)
        # A call outside any agent run (a tool used on its own) falls back to this middleware's session.
        self._session = new_session_id()
        self._paging: dict[str, PagingTool] = {tool.name: tool for tool in paging_tools(store)}
        self.tools: list[BaseTool] = [self._tool(tool) for tool in self._paging.values()]

    def _tool(self, tool: PagingTool) -> BaseTool:
        def run(**arguments: Any) -> str:
            return tool.run(self._session, new_call_id(), arguments).output

        async def arun(**arguments: Any) -> str:
            return (await tool.arun(self._session, new_call_id(), arguments)).output

        return StructuredTool.from_function(func=run, coroutine=arun, name=tool.name, description=tool.description,
                                            args_schema=tool.parameters, infer_schema=False)

    # -------------------------------------------------------------- the run's session
    def before_agent(self, state: Any, runtime: Any) -> Optional[dict[str, Any]]:
        if isinstance(state, dict) and state.get(_SESSION_KEY):
            return None  # a thread's checkpointed run keeps its session
        return {_SESSION_KEY: new_session_id()}

    async def abefore_agent(self, state: Any, runtime: Any) -> Optional[dict[str, Any]]:
        return self.before_agent(state, runtime)

    # -------------------------------------------------------------- tool calls
    def _paging_tool(self, request: Any) -> Optional[PagingTool]:
        tool = self._paging.get(request.tool_call.get("name"))
        if tool is None or (request.tool is not None and not any(request.tool is own for own in self.tools)):
            return None  # not ours: another tool of that name is the agent's own
        return tool

    @staticmethod
    def _message(request: Any, output: str, is_error: bool) -> ToolMessage:
        return ToolMessage(content=output, tool_call_id=request.tool_call.get("id") or "",
                           name=request.tool_call.get("name"), status="error" if is_error else "success")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Answer ``read``/``grep`` calls; bound every other tool's result."""
        paging = self._paging_tool(request)
        session_id = _session_of(request, self._session)
        if paging is not None:
            result = paging.run(session_id, _call_id(request), request.tool_call.get("args"))
            return self._message(request, result.output, result.is_error)
        return _bound_result(self._bounder, session_id, _call_id(request), handler(request))

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """``wrap_tool_call`` for async runs."""
        paging = self._paging_tool(request)
        session_id = _session_of(request, self._session)
        if paging is not None:
            result = await paging.arun(session_id, _call_id(request), request.tool_call.get("args"))
            return self._message(request, result.output, result.is_error)
        return await _abound_result(self._bounder, session_id, _call_id(request), await handler(request))


# ------------------------------------------------------------------ bounding results
# Each bounded piece of text is found once (``_texts``) and replaced once
# (``_replaced``); only the bounding itself differs between sync and async.

def _texts(result: Any) -> list[tuple[int, int, str]]:
    """(message index, block index or -1, text) of every text in a tool result."""
    found: list[tuple[int, int, str]] = []
    for index, message in enumerate(_messages(result)):
        content = message.content
        if isinstance(content, str):
            found.append((index, -1, content))
        elif isinstance(content, list):
            for block_index, block in enumerate(content):
                if isinstance(block, str):
                    found.append((index, block_index, block))
                elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                    found.append((index, block_index, block["text"]))
    return found


def _messages(result: Any) -> list[ToolMessage]:
    if isinstance(result, ToolMessage):
        return [result]
    if isinstance(result, Command) and isinstance(result.update, dict):
        # A tool's Command reports to the model through the ToolMessages of its update.
        messages = result.update.get("messages")
        if isinstance(messages, list):
            return [message for message in messages if isinstance(message, ToolMessage)]
    return []


def _replaced(result: Any, bounded: dict[tuple[int, int], str]) -> Any:
    if not bounded:
        return result
    messages = _messages(result)
    new: dict[int, ToolMessage] = {}
    for index, message in enumerate(messages):
        changes = {block: text for (at, block), text in bounded.items() if at == index}
        if not changes:
            continue
        if -1 in changes:
            new[index] = message.model_copy(update={"content": changes[-1]})
            continue
        content = list(message.content)
        for block, text in changes.items():
            content[block] = text if isinstance(content[block], str) else {**content[block], "text": text}
        new[index] = message.model_copy(update={"content": content})
    if isinstance(result, ToolMessage):
        return new[0]
    swap = {id(messages[index]): message for index, message in new.items()}
    update = {**result.update, "messages": [swap.get(id(item), item) for item in result.update["messages"]]}
    return dataclasses.replace(result, update=update)


def _call_ids(call_id: str, texts: list[tuple[int, int, str]]) -> list[str]:
    # One text keeps the call's own id; several are told apart by where they sit.
    return [call_id] if len(texts) == 1 else [f"{call_id}.{at}.{block}" for at, block, _ in texts]


def _bound_result(bounder: Bounder, session_id: str, call_id: str, result: Any) -> Any:
    texts = _texts(result)
    bounded = {}
    for (at, block, text), piece_id in zip(texts, _call_ids(call_id, texts)):
        preview = bounder.text(session_id, piece_id, text)
        if preview is not None:
            bounded[at, block] = preview
    return _replaced(result, bounded)


async def _abound_result(bounder: Bounder, session_id: str, call_id: str, result: Any) -> Any:
    texts = _texts(result)
    bounded = {}
    for (at, block, text), piece_id in zip(texts, _call_ids(call_id, texts)):
        preview = await bounder.atext(session_id, piece_id, text)
        if preview is not None:
            bounded[at, block] = preview
    return _replaced(result, bounded)


def middleware(store: Optional[ToolOutputStore] = None) -> OverspillMiddleware:
    """An ``AgentMiddleware`` bounding every tool result of the agent, with ``read`` and ``grep`` as its tools.

    A result within the store's limits reaches the model untouched and
    nothing is stored; a larger one is stored whole and the model gets its
    preview with the marker naming ``tool-output://ID``.  Each text block of a
    content-block list is bounded on its own; other blocks (images, files) pass
    as they are.

    :param store: where outputs are stored; the default ``ToolOutputStore()`` when None.
    :raises TypeError: ``store`` is not a ``ToolOutputStore``.
    """
    return OverspillMiddleware(open_store(store))
