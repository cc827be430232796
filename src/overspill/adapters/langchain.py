"""LangChain / LangGraph adapter: ``create_agent(..., middleware=[middleware()])``.

Needs the ``langchain`` extra (``pip install 'overspill[langchain]'``).

The middleware's ``wrap_tool_call`` and ``awrap_tool_call`` bound every tool
result: a ``ToolMessage``'s content (a string, or the text of a content-block
list taken together: its text blocks and the JSON of every other block but
media) and the tool messages of a ``Command``'s update (a dict's ``"messages"``,
a list of messages, a state object's ``messages``; each in any form LangGraph
turns into a ``ToolMessage``), or of each item of a list of them; a tool's exception passing through it has its
text bounded (for an error middleware outside it, such as ``ToolErrorMiddleware``,
that shows the model ``str(exc)``), keeping its type.  A ``return_direct`` tool's call
that ends an agent's run passes whole: its message is the run's answer, for the application (judged
after the call by the tool that ran, as ``create_agent`` judges; in another graph, where the middleware
cannot tell that the run ends there, it is bounded).  The middleware registers ``read`` and ``grep``
as its tools and answers their calls itself, so they run in the calling
thread's session.

The session is the LangGraph thread (``configurable.thread_id``) when the
agent is run with one, else the agent run (an id the middleware keeps in the
run's state, set when the run starts).  The call id is the model's tool call id.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Awaitable, Callable, Optional

from ._extra import needs_extra

with needs_extra("langchain"):
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain.agents.structured_output import AutoStrategy, ProviderStrategy, ToolStrategy
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.errors import GraphBubbleUp
    from langgraph.types import Command
    from pydantic import BaseModel
    from typing_extensions import NotRequired

from ..store import ToolOutputStore
from ._core import Bounder, PagingTool, as_text, new_call_id, new_session_id, open_store, paging_tools, replaced_pieces

__all__ = ["OverspillMiddleware", "middleware"]

_SESSION_KEY = "overspill_session"


class OverspillState(AgentState):
    """The agent state with the run's session id, private to the middleware."""

    overspill_session: NotRequired[Annotated[str, PrivateStateAttr]]


def _state_value(state: Any, key: str) -> Any:
    """``key`` of a graph's state: a dict's item, a state object's attribute; None when it has none."""
    return state.get(key) if isinstance(state, dict) else getattr(state, key, None)


def _session_of(request: Any, fallback: str) -> str:
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None) or {}
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is not None and str(thread_id):
        return str(thread_id)
    session = _state_value(getattr(request, "state", None), _SESSION_KEY)
    return session if isinstance(session, str) and session else fallback


def _returned_directly(request: Any, result: Any) -> bool:
    """Whether the call's ``result`` ends the run as its answer, for the application rather than the model.

    ``create_agent`` stops after the tools when every tool the model's turn ran (of the agent's own: a
    provider's tools aside) has ``return_direct=True``; its last message, this call's, is then the run's
    answer.  It names the tool a call ran by the name on the call's ``ToolMessage`` (one of the agent's
    tools), else by the model's call: a middleware inside this one may run another tool than the request
    names (``HumanInTheLoopMiddleware`` carrying out a reviewer's edit), so the middleware judges after the
    call, by its result, the same way.  A ``return_direct`` tool called beside another tool does not stop
    the run: the model reads its message, so it is bounded.  Only ``create_agent``'s graph stops there:
    another graph (a ``ToolNode`` given these hooks, routed by ``tools_condition``) may send the message on
    to its model, so the call passes whole only in a run of an agent this middleware is part of (its state
    carries the session ``before_agent`` set).  When the middleware cannot tell, the message is bounded:
    a model may read it, and the application can still read the whole output from the store.
    """
    state = getattr(request, "state", None)
    tools = getattr(getattr(request, "runtime", None), "tools", None)
    messages = _state_value(state, "messages")
    if not _state_value(state, _SESSION_KEY) or not tools or not isinstance(messages, list):
        return False  # not create_agent's run, or nothing to tell by: bounded
    direct = {tool.name: bool(getattr(tool, "return_direct", False)) for tool in tools}
    if not any(direct.values()):
        return False
    ran = {message.tool_call_id: message.name for message in _messages(result) if message.name in direct}
    call_id = request.tool_call.get("id")
    for message in reversed(messages):  # the model's turn that made this call
        calls = getattr(message, "tool_calls", None)
        if isinstance(message, AIMessage) and calls and any(call.get("id") == call_id for call in calls):
            names = [name for call in calls if (name := ran.get(call.get("id") or "", call.get("name"))) in direct]
            return bool(names) and all(direct[name] for name in names)
    return False


def _raised_directly(request: Any) -> bool:
    """Whether the call's exception, made its message by an error middleware outside this one, ends the run
    as its answer (``_returned_directly``).  That middleware names the message after the model's call, or
    after the request given here when a middleware between them redirected the call (a reviewer's edit):
    which of the two cannot be told, so both must be ``return_direct``."""
    return bool(getattr(request.tool, "return_direct", False)) and _returned_directly(request, None)


def _output_tool_names(response_format: Any) -> list[str]:
    """The names of the tools a model request's structured output may give the model.

    A ``ToolStrategy`` gives one tool per schema; a bare schema (or an ``AutoStrategy``'s) is given as a
    ``ToolStrategy`` to a model without structured output of its own, as ``create_agent`` binds it: the
    names are LangChain's own, from the ``ToolStrategy`` it would make.  A ``ProviderStrategy`` gives none.
    """
    if response_format is None or isinstance(response_format, ProviderStrategy):
        return []
    if not isinstance(response_format, ToolStrategy):
        response_format = ToolStrategy(response_format.schema if isinstance(response_format, AutoStrategy)
                                       else response_format)
    return [spec.name for spec in response_format.schema_specs]


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

    # -------------------------------------------------------------- model calls
    def _check_tools(self, request: Any) -> None:
        """Refuse an agent given its own ``read`` or ``grep``: LangChain keeps one tool of a name (the
        agent's), so the model would be shown that tool where the markers name the middleware's.  A
        structured-output schema of either name is refused too: the model is given it as a tool of that
        name beside the middleware's (``_output_tool_names``), and its call there is taken as the answer."""
        names = [(tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None), "tool")
                 for tool in getattr(request, "tools", None) or () if not any(tool is own for own in self.tools)]
        names += [(name, "structured-output schema")
                  for name in _output_tool_names(getattr(request, "response_format", None))]
        for name, kind in names:
            if name in self._paging:
                raise ValueError(f"the agent has a {kind} named {name!r} of its own; the overspill middleware "
                                 f"adds its own read and grep (rename the agent's {kind})")

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Check the tools the model is given (``_check_tools``), then call it."""
        self._check_tools(request)
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """``wrap_model_call`` for async runs."""
        self._check_tools(request)
        return await handler(request)

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
        """Answer ``read``/``grep`` calls; bound every other tool's result but the run's answer
        (``_returned_directly``)."""
        paging = self._paging_tool(request)
        session_id = _session_of(request, self._session)
        if paging is not None:
            result = paging.run(session_id, _call_id(request), request.tool_call.get("args"))
            return self._message(request, result.output, result.is_error)
        try:
            result = handler(request)
        except GraphBubbleUp:
            raise  # LangGraph's control flow (an interrupt, a parent command), not an error
        except Exception as error:
            # An error middleware outside this one (ToolErrorMiddleware) shows the model the exception's
            # text: bounded here whatever the order, the exception keeping its type.
            if _raised_directly(request):
                raise  # the run's answer, once that middleware makes it a message
            bounded = self._bounder.error(session_id, _call_id(request), error)
            if bounded is None:
                raise
            raise bounded from error
        if _returned_directly(request, result):
            return result  # the run's answer, for the application: this run's model never reads it
        return _bound_result(self._bounder, session_id, _call_id(request), result)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """``wrap_tool_call`` for async runs."""
        paging = self._paging_tool(request)
        session_id = _session_of(request, self._session)
        if paging is not None:
            result = await paging.arun(session_id, _call_id(request), request.tool_call.get("args"))
            return self._message(request, result.output, result.is_error)
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:  # as in wrap_tool_call
            if _raised_directly(request):
                raise
            bounded = await self._bounder.aerror(session_id, _call_id(request), error)
            if bounded is None:
                raise
            raise bounded from error
        if _returned_directly(request, result):
            return result
        return await _abound_result(self._bounder, session_id, _call_id(request), result)


# ------------------------------------------------------------------ bounding results
# The pieces of text of each ToolMessage are found once (``_pieces``) and replaced once
# (``_replaced``); only the bounding itself differs between sync and async.

# Content blocks that are media for the model, never text to bound (LangChain's standard blocks and the
# providers' own); a document is media unless its source is text.
_MEDIA_BLOCKS = frozenset({"image", "image_url", "input_image", "audio", "input_audio", "video", "file",
                           "input_file"})


def _piece(block: Any) -> Optional[str]:
    """The text a content block shows the model: a string, a text block's text, any other block but
    media as its JSON text (a ``json``, ``search_result`` or text ``document`` block...); None for media."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return block["text"]
    if kind in _MEDIA_BLOCKS or (kind == "document" and _media_source(block.get("source"))):
        return None
    return as_text(block)  # type: ignore[return-value]  (a dict: JSON text, or None when it has none)


def _media_source(source: Any) -> bool:
    return not isinstance(source, dict) or source.get("type") not in ("text", "content")


def _pieces(result: Any) -> list[tuple[int, list[int], list[str]]]:
    """(message index, block indices or [-1] for a string content, their texts) of each message of a tool
    result that shows the model text."""
    found = []
    for index, message in enumerate(_messages(result)):
        content = message.content
        if isinstance(content, str):
            found.append((index, [-1], [content]))
        elif isinstance(content, list):
            texts = [_piece(block) for block in content]
            at = [block for block, text in enumerate(texts) if text is not None]
            if at:
                found.append((index, at, [texts[block] for block in at]))  # type: ignore[misc]
    return found


def _tool_message(item: Any) -> Optional[ToolMessage]:
    """``item`` of a Command's messages as the ``ToolMessage`` LangGraph makes of it, else None.

    LangGraph's ``add_messages`` takes any message-like form (a message dict with ``role``/``type``
    ``"tool"``, a serialised ``ToolMessage``, a ``("tool", ...)`` pair) and turns it into a message
    with ``convert_to_messages``: the same conversion says which of them reach the model as tool
    messages.
    """
    if isinstance(item, ToolMessage):
        return item
    if isinstance(item, BaseMessage) or not isinstance(item, (dict, tuple, list)):
        return None  # another kind of message, or a string (a human message)
    try:
        (message,) = convert_to_messages([item])
    except Exception:  # a form LangGraph refuses as well: the run fails there, with its own error
        return None
    return message if isinstance(message, ToolMessage) else None


def _items(result: Any) -> list[Any]:
    """The parts of a tool's result that may carry tool messages: each item of a list (LangGraph's
    ``ToolNode`` takes a tool's list of ``ToolMessage`` and ``Command`` objects, each as if returned
    alone), else the result itself."""
    return list(result) if isinstance(result, list) else [result]


def _update_messages(update: Any) -> Optional[list[Any]]:
    """The list of messages a ``Command``'s update gives the graph's messages, None when it gives none.

    LangGraph takes an update in the state's own form: a dict's ``"messages"`` (``create_agent``, a
    ``ToolNode`` given a dict), the list of messages itself (a ``ToolNode`` over a list of messages), or
    a state object's ``messages`` field (a pydantic model or a dataclass, read as the graph reads it); or
    a dict's items as a list or tuple of ``(key, value)`` pairs, whose ``"messages"`` lists are read
    together, in order.
    """
    if _is_pairs(update):
        lists = [value for key, value in update if key == "messages"]
        return [message for value in lists for message in value] \
            if lists and all(isinstance(value, list) for value in lists) else None
    if isinstance(update, dict):
        messages = update.get("messages")
    elif isinstance(update, list):
        messages = update
    elif isinstance(update, BaseModel) and "messages" in type(update).model_fields:
        messages = update.messages
    elif dataclasses.is_dataclass(update) and not isinstance(update, type) \
            and any(field.name == "messages" for field in dataclasses.fields(update)):
        messages = update.messages
    else:
        return None
    return messages if isinstance(messages, list) else None


def _is_pairs(update: Any) -> bool:
    """Whether LangGraph applies ``update`` as ``(key, value)`` pairs (``Command._update_as_tuples``): a list
    or tuple whose items are all 2-tuples with a str key.  Such a list is never read as messages."""
    return isinstance(update, (list, tuple)) and bool(update) \
        and all(isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in update)


def _with_update_messages(update: Any, messages: list[Any]) -> Any:
    """``update`` (a form ``_update_messages`` reads) giving ``messages`` instead, in the same form."""
    if _is_pairs(update):
        # Each "messages" pair takes back as many messages as it gave (_update_messages read them in order).
        rest, pairs = iter(messages), []
        for key, value in update:
            pairs.append((key, [next(rest) for _ in value]) if key == "messages" else (key, value))
        return type(update)(pairs)
    if isinstance(update, dict):
        return {**update, "messages": messages}
    if isinstance(update, list):
        return messages
    if isinstance(update, BaseModel):
        return update.model_copy(update={"messages": messages})
    return dataclasses.replace(update, messages=messages)


def _item_messages(item: Any) -> list[ToolMessage]:
    """The tool messages of one part of a result: a ``ToolMessage`` itself, or those of a ``Command``'s
    update (its messages in any form ``_update_messages`` reads, each message in any form LangGraph
    accepts, as the ``ToolMessage`` it becomes)."""
    if isinstance(item, ToolMessage):
        return [item]
    if isinstance(item, Command):
        # A tool's Command reports to the model through the ToolMessages of its update.
        messages = _update_messages(item.update)
        if messages is not None:
            return [message for message in map(_tool_message, messages) if message is not None]
    return []


def _messages(result: Any) -> list[ToolMessage]:
    """The tool messages of a tool's result, in order: a ``ToolMessage``, a ``Command``'s, or those of each
    item of a list of them."""
    return [message for item in _items(result) for message in _item_messages(item)]


def _replaced(result: Any, bounded: dict[int, tuple[list[int], str]]) -> Any:
    """``result`` with each bounded message's pieces replaced by their preview (where the first stood); a
    message given in another form than a ``ToolMessage`` is replaced by the ``ToolMessage`` it becomes."""
    if not bounded:
        return result
    messages = _messages(result)
    new: dict[int, ToolMessage] = {}
    for index, (at, preview) in bounded.items():
        message = messages[index]
        if at == [-1]:
            content: Any = preview
        else:
            first = message.content[at[0]]
            content = replaced_pieces(list(message.content), at,
                                      preview if isinstance(first, str) else {"type": "text", "text": preview})
        new[index] = message.model_copy(update={"content": content})
    if not isinstance(result, list):
        return _replaced_item(result, new)
    replaced, start = [], 0
    for item in result:  # the messages _messages found, item by item: renumbered from each item's first
        count = len(_item_messages(item))
        replaced.append(_replaced_item(item, {index - start: message for index, message in new.items()
                                              if start <= index < start + count}))
        start += count
    return replaced


def _replaced_item(item: Any, new: dict[int, ToolMessage]) -> Any:
    """``item`` (a ``ToolMessage`` or a ``Command``) with its n-th tool message replaced by ``new[n]``."""
    if not new:
        return item
    if isinstance(item, ToolMessage):
        return new[0]
    replaced, found = [], 0
    # The n-th tool message found is the n-th one _tool_message takes from the update's messages.
    for message in _update_messages(item.update) or ():
        if _tool_message(message) is not None:
            message, found = new.get(found, message), found + 1
        replaced.append(message)
    return dataclasses.replace(item, update=_with_update_messages(item.update, replaced))


def _call_ids(call_id: str, found: list[tuple[int, list[int], list[str]]]) -> list[str]:
    # One message keeps the call's own id; several (a Command's) are told apart by where they sit.
    return [call_id] if len(found) == 1 else [f"{call_id}.{index}" for index, _, _ in found]


def _bound_result(bounder: Bounder, session_id: str, call_id: str, result: Any) -> Any:
    found = _pieces(result)
    bounded = {}
    for (index, at, texts), piece_id in zip(found, _call_ids(call_id, found)):
        preview = bounder.pieces(session_id, piece_id, texts)  # type: ignore[arg-type]
        if preview is not None:
            bounded[index] = (at, preview)
    return _replaced(result, bounded)


async def _abound_result(bounder: Bounder, session_id: str, call_id: str, result: Any) -> Any:
    found = _pieces(result)
    bounded = {}
    for (index, at, texts), piece_id in zip(found, _call_ids(call_id, found)):
        preview = await bounder.apieces(session_id, piece_id, texts)  # type: ignore[arg-type]
        if preview is not None:
            bounded[index] = (at, preview)
    return _replaced(result, bounded)


def middleware(store: Optional[ToolOutputStore] = None) -> OverspillMiddleware:
    """An ``AgentMiddleware`` bounding every tool result of the agent, with ``read`` and ``grep`` as its tools.

    A result within the store's limits reaches the model untouched and
    nothing is stored; a larger one is stored whole and the model gets its
    preview with the marker naming ``tool-output://ID``.  The text of a
    content-block list is its text blocks and every other block but media as
    its JSON text, taken together: over the limits, they are stored as one
    text and shown as one text block where the first stood; media (images,
    audio, video, files) pass as they are.

    :param store: where outputs are stored; the default ``ToolOutputStore()`` when None.
    :raises TypeError: ``store`` is not a ``ToolOutputStore``.
    """
    return OverspillMiddleware(open_store(store))
