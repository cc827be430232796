"""PydanticAI adapter: ``Agent(..., capabilities=[capability()])``.

Needs the ``pydantic-ai`` extra (``pip install 'overspill[pydantic-ai]'``).

The capability's ``after_tool_execute`` bounds every tool's result (a
``ToolReturn``'s ``return_value`` and, on its own, its ``content``;
multimodal content passes as it is, and the text beside it in a list is
bounded together); its ``wrap_tool_execute`` bounds the message of a
``ModelRetry`` or ``ToolFailed`` (an MCP server's ``isError`` result comes as
one of them), which the model sees instead of a result, escaped in PydanticAI's
``{"error": ...}`` JSON (that text is what is bounded: ``_message_shown``), and its
``wrap_tool_validate`` the same raised while the arguments are validated (a
tool's ``args_validator``, another capability's validate hooks); its
``wrap_output_process`` and ``wrap_output_validate`` do the same for a retry
of the output (an output function's, an output validator's), which stays a
retry.  Arguments or an output failing validation come back as a retry holding
pydantic's error details, each with the ``input`` it refused (a huge argument
whole): over the limits (in that ``{"error": ...}``), those hooks store the JSON text PydanticAI shows of
the details whole and make the error again within them, still a
``ValidationError`` (so its retry keeps its cause, and a structured output cut
off by the token limit still raises ``OutputTokenLimitExceeded``) whose huge
inputs and messages say where the whole is (``tool-output://ID``).  Its
``before_node_run`` bounds the results a run resumed with
``deferred_tool_results`` gives deferred calls (PydanticAI runs no tool hook
for them; results another capability's ``handle_deferred_tool_calls`` gives
during the run are not seen); and its toolset gives the model ``read`` and
``grep``, whose failures reach the model as ``ToolFailed``.

The session is the run's conversation (``RunContext.conversation_id``: one per
run, kept by runs that continue its message history), else the run
(``run_id``), else the agent.  The call id is the model's ``tool_call_id``.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from bisect import bisect_right
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain
from typing import Any, Optional, TypeVar

from ._extra import needs_extra

with needs_extra("pydantic-ai"):
    import pydantic_ai.exceptions
    import pydantic_ai.messages
    import pydantic_core
    from pydantic_ai import CallToolsNode, RunContext
    from pydantic_ai.capabilities import AbstractCapability, WrapOutputProcessHandler, WrapOutputValidateHandler, \
        WrapToolExecuteHandler, WrapToolValidateHandler
    from pydantic_ai.exceptions import ModelRetry, ToolFailed, ToolFailedError, ToolRetryError
    from pydantic_ai.messages import ToolCallPart, ToolReturn, is_multi_modal_content
    from pydantic_ai.output import OutputContext
    from pydantic_ai.tools import Tool, ToolDefinition
    from pydantic_ai.toolsets import FunctionToolset

from ..config import Limits
from ..records import Resource
from ..store import ToolOutputStore
from ..text import fits_limits, preview as head_and_tail, shown_size
from ._core import Bounder, PagingTool, Sessions, Text, as_text, new_call_id, open_store, paging_tools, retold

__all__ = ["OverspillCapability", "capability", "toolset"]

_AGENTS = Sessions()

# PydanticAI's deprecated retry part, "to be removed in v3": bounded while a PydanticAI has it (a deferred
# call's result may still be one), and no part is one (an empty tuple for isinstance) once it is gone.
_LEGACY_RETRY_PARTS: tuple[type, ...] = tuple(
    part for part in (getattr(pydantic_ai.messages, "RetryPromptPart", None),) if isinstance(part, type))
# The category PydanticAI's deprecations warn with (typing's ``deprecated`` default before it had one).
_DEPRECATION: type[Warning] = getattr(pydantic_ai.exceptions, "PydanticAIDeprecationWarning", DeprecationWarning)


def _dumps(value: Any) -> str:
    """PydanticAI's own JSON for a tool's return value (models, dataclasses, dates...)."""
    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError as error:
        raise TypeError(str(error)) from error


def _in_error(json_text: str) -> str:
    """What PydanticAI sends the model of an errored tool return (a retry's, a failure's) whose content's
    JSON is ``json_text``: its ``{"error": ...}`` (``ToolReturnPart.model_response_str``), the longest of
    its renderings (a provider with an error channel of its own gets the content alone)."""
    return f'{{"error":{json_text}}}'


def _message_shown(message: str) -> str:
    """The text PydanticAI sends the model of a retry's or failure's message: ``_in_error`` of it as a JSON
    string, where each quote, backslash and control character is escaped."""
    return _in_error(_dumps(message))


def _part_shown(part: Any, text: str) -> Callable[[str], str]:
    """How PydanticAI renders ``text``, the text of a retry's or failure's ``part`` content
    (``ToolReturnPart._error_value``): a retried part's list as the JSON array it is (``text``, escaped once,
    in ``{"error": ...}``); anything else, and the preview that replaces the list (a message), as a
    message (``_message_shown``)."""
    if getattr(part, "outcome", None) != "retried" or not isinstance(part.content, list):
        return _message_shown

    def shown(given: str) -> str:
        return _in_error(given) if given == text else _message_shown(given)

    return shown


def _details_text(details: list[Any]) -> str:
    """The text PydanticAI shows the model of a ``ValidationError``'s details: its own rendering (``ctx``
    dropped, a root-level ``input`` repeated by later errors kept once), else (a PydanticAI without it, a
    list that is not details) their JSON."""
    dump = getattr(pydantic_ai.messages, "_dump_error_details", None)
    adapter = getattr(pydantic_ai.messages, "tool_return_ta", None)
    if dump is None or adapter is None or not all(isinstance(detail, dict) for detail in details):
        return _dumps(details)
    return adapter.dump_json(dump(details), by_alias=True).decode()


#: The least budget (bytes) an input's JSON or a message is cut to: below it, what says where the whole error
#: is would be no shorter than what it replaces.
_LEAST_BUDGET = 256
#: The type of the detail that ends details cut short (too many to fit the limits even so), saying how many
#: more there are.
_MORE_ERRORS = "overspill_more_errors"


def _json_sized(value: Any) -> tuple[int, object]:
    """The bytes of ``value``'s JSON (``_dumps``), and a key equal for values of equal JSON (its size and
    hash: the text itself, of a huge input, is not kept); one without JSON counts as more than any budget,
    keyed by itself."""
    try:
        text = _dumps(value)
    except TypeError:
        return sys.maxsize, id(value)
    return shown_size(text), (len(text), hash(text))


def _where_stored(resource: Optional[Resource]) -> str:
    """What each shortened part of the details says of the whole error's text: where it is stored, so the
    model can page it with ``read``, or (``resource`` None: the store could not keep it) that it is not."""
    if resource is None:
        return "the whole error was over the limits and not stored"
    return f"the whole error is stored as {resource.uri}; read it in pages"


def _error_details(error: pydantic_core.ValidationError) -> str:
    """The JSON text of ``error``'s details as PydanticAI shows them (``_details_text``): what is stored."""
    return _details_text(error.errors(include_url=False, include_context=False))


def _shown_details(error: pydantic_core.ValidationError) -> str:
    """The text PydanticAI sends the model of ``error``: its details' (``_error_details``) in
    ``{"error": ...}`` (``_in_error``)."""
    return _in_error(_error_details(error))


def _shown_content(details: list[dict[str, Any]]) -> str:
    """``_shown_details`` of a part's details list."""
    return _in_error(_details_text(details))


def _details_bounded(error: pydantic_core.ValidationError, resource: Optional[Resource],
                     limits: Limits) -> pydantic_core.ValidationError:
    """``error`` made again so that the text PydanticAI shows of it (``_shown_details``) is within
    ``limits`` and says where the whole of that text is (``_where_stored``: ``resource``'s URI), as
    ``_bounded_details`` bounds its details.  It stays a ``ValidationError`` whose every detail kept keeps
    its type and place, so PydanticAI still reads it (the retry's cause, a cut-off output's
    ``json_invalid``)."""
    return _bounded_details(error.errors(include_url=False), _where_stored(resource), limits,
                            lambda lines: _rebuilt(error.title, lines), _shown_details)


def _content_bounded(details: list[dict[str, Any]], resource: Optional[Resource],
                     limits: Limits) -> list[dict[str, Any]]:
    """A part's content that is a ``ValidationError``'s details (``_is_details``) bounded as
    ``_details_bounded`` bounds an error's: still a details list, so PydanticAI still reads it as one (a
    deprecated ``RetryPromptPart``'s stays a ``validation_error`` retry), each detail keeping its keys."""
    return _bounded_details(details, _where_stored(resource), limits, list, _shown_content)


def _is_details(content: Any) -> bool:
    """Whether ``content`` is a ``ValidationError``'s details as a part holds them: a list of details,
    each with its type, place and message."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(detail, dict) and isinstance(detail.get("type"), str) and isinstance(detail.get("msg"), str)
        and isinstance(detail.get("loc"), (list, tuple)) for detail in content)


_Made = TypeVar("_Made")


def _bounded_details(details: list[dict[str, Any]], where: str, limits: Limits,
                     made: Callable[[list[dict[str, Any]]], _Made], shown: Callable[[_Made], str]) -> _Made:
    """``made`` of ``details`` bounded so that ``shown`` of it (the text PydanticAI shows the model) is within
    ``limits``, each part shortened saying ``where`` the whole text is.

    Each input whose JSON is over a budget is replaced by its size and that reference, each message and
    each item of a place (``loc``: a dict's key may be the model's whole text) over it is cut to its head
    and tail saying the same; the budget starts at the limit and is halved (down to ``_LEAST_BUDGET``)
    until the text fits, and where room is left the first input replaced shows its head and tail too.
    When even then it does not fit (thousands of details), the first details that fit are kept and one
    more (``overspill_more_errors``) says how many others there are, with the reference.  Every detail
    kept keeps its keys (a detail without an ``input`` has none), its type and its place.  (Limits too
    small for even that one detail are the one case left over them.)
    """
    inputs = [_json_sized(detail["input"]) if "input" in detail else (0, None) for detail in details]
    # Inputs of equal JSON are numbered alike and others not: PydanticAI shows a root-level input equal
    # to the first one's once, so two inputs are shown as one only when they are one.
    numbers: dict[object, int] = {}
    for _, key in inputs:
        if key is not None:
            numbers.setdefault(key, len(numbers) + 1)
    message_sizes = [shown_size(detail["msg"]) for detail in details]
    # The bytes of each item of each place (a name's or key's, its JSON's at least: a number's digits).
    place_sizes = [[shown_size(item) if isinstance(item, str) else len(str(item)) for item in detail["loc"]]
                   for detail in details]
    room = limits.max_bytes if limits.max_tokens is None else min(limits.max_bytes, limits.max_tokens)

    def least(budget: int) -> list[int]:
        # The fewest bytes each detail is shown in at ``budget``: ``{"type":"","loc":[],"msg":""}`` and a
        # comma, its type, the message and the place's items it keeps whole (each a comma and quotes at
        # most fewer).  A sum of them over the room needs no rendering (thousands of details are a large
        # text to render, at each budget).
        return [30 + len(detail["type"]) + (size if size <= budget else 0)
                + sum(item for item in sizes if item <= budget)
                for detail, size, sizes in zip(details, message_sizes, place_sizes)]

    # The same sum, at any budget, from the sizes kept whole sorted once: a search, not a pass over
    # every detail at each budget.
    framing = sum(30 + len(detail["type"]) for detail in details)
    kept_sizes = sorted(chain(message_sizes, chain.from_iterable(place_sizes)))
    kept_totals = [0, *accumulate(kept_sizes)]

    def least_total(budget: int) -> int:
        return framing + kept_totals[bisect_right(kept_sizes, budget)]

    def entries(budget: int, count: int) -> list[dict[str, Any]]:
        # The first ``count`` details as shown at ``budget``: each input, message and place item over it
        # shortened (an input to its size, the others to their head and tail), every other key kept.
        lines = []
        for detail, (input_size, key), message_size, sizes in zip(details[:count], inputs, message_sizes,
                                                                   place_sizes):
            place = [item if size <= budget else _cut(item, "place", size, budget, where, limits)
                     for item, size in zip(detail["loc"], sizes)]
            line = {**detail, "loc": type(detail["loc"])(place),
                    "msg": detail["msg"] if message_size <= budget
                    else _cut(detail["msg"], "message", message_size, budget, where, limits)}
            if key is not None and input_size > budget:
                line["input"] = f"(input #{numbers[key]} of {input_size} bytes not shown: {where})"
            lines.append(line)
        return lines

    budget = room
    while True:
        budget = max(budget, _LEAST_BUDGET)
        # The cheap bound first: at a budget whose fewest bytes are over the room, nothing is rendered.
        if least_total(budget) <= room:
            lines = entries(budget, len(details))
            rebuilt = made(lines)
            if fits_limits(shown(rebuilt), limits):
                # Where room allows, the first input replaced shows its head and tail too: what the model sent.
                at = next((index for index, (size, key) in enumerate(inputs)
                           if key is not None and budget < size < sys.maxsize), None)
                if at is None:
                    return rebuilt
                value, (size, key) = details[at]["input"], inputs[at]
                lines[at] = {**lines[at], "input": _cut(value if isinstance(value, str) else _dumps(value),
                                                        f"input #{numbers[key]}", size, budget, where, limits)}
                fuller = made(lines)
                return fuller if fits_limits(shown(fuller), limits) else rebuilt
        if budget == _LEAST_BUDGET:
            break
        budget //= 2

    # The most details that fit, found by halving the range (the text grows with each detail kept), no more
    # than those whose fewest bytes fit; with limits too small for any detail, the one saying how many there
    # are.  Only those are made, at the least budget.
    low, high, total = 0, 0, 0
    for size in least(budget)[:-1]:
        total += size
        if total > room:
            break
        high += 1
    lines = entries(budget, high)

    def first(kept: int) -> _Made:
        # The first ``kept`` details as at the least budget, and one saying how many more there are.
        more = len(details) - kept
        said = f"{more} more validation error{'' if more == 1 else 's'} not shown: {where}"
        return made([*lines[:kept], {"type": _MORE_ERRORS, "loc": (), "msg": said, "input": None}])

    while low < high:
        middle = (low + high + 1) // 2
        if fits_limits(shown(first(middle)), limits):
            low = middle
        else:
            high = middle - 1
    return first(low)


def _cut(text: str, what: str, size: int, budget: int, where: str, limits: Limits) -> str:
    """``text`` (a message, an input's text, a place's item: ``what``, of ``size`` bytes, over ``budget``) cut
    to its head and tail (``overspill.preview``'s, within half of ``budget``), saying it was cut and ``where``
    the whole error is."""
    shown = head_and_tail(text, limits.max_lines, budget // 2)
    return f"{shown.head} ... ({what} of {size} bytes cut: {where}) ... {shown.tail}"


def _rebuilt(title: str, lines: list[dict[str, Any]]) -> pydantic_core.ValidationError:
    """A ``ValidationError`` titled ``title`` whose details are ``lines`` (type, place, message, input,
    context)."""
    messages = [line["msg"] for line in lines]
    # The error's input type (python or JSON) is not public, and it words some messages: the one that
    # words them as they were is the one.
    for input_type in ("python", "json"):
        try:
            rebuilt = pydantic_core.ValidationError.from_exception_data(title, lines, input_type=input_type)
        except (KeyError, TypeError, ValueError):
            break  # a custom error type (PydanticCustomError's, ours), which pydantic cannot make from its name
        if [detail["msg"] for detail in rebuilt.errors()] == messages:
            return rebuilt
    # Else (a custom type, a message cut) each detail is made as a custom error of its type's name saying
    # its message.
    return pydantic_core.ValidationError.from_exception_data(title, [
        {"type": pydantic_core.PydanticCustomError(line["type"], line["msg"]), "loc": line["loc"],
         "input": line["input"]} for line in lines])


def _session(context: RunContext[Any], fallback: object) -> str:
    for session in (context.conversation_id, context.run_id):
        if isinstance(session, str) and session:
            return session
    agent = context.agent
    return _AGENTS.of(agent if agent is not None else fallback)


def _call_id(context: RunContext[Any], call: Optional[ToolCallPart] = None) -> str:
    return _own_id(call.tool_call_id if call is not None else context.tool_call_id)


def _own_id(call_id: Any) -> str:
    """The model's tool call id, else one made for the call."""
    return call_id if isinstance(call_id, str) and call_id else new_call_id()


def _paging_tool(tool: PagingTool, owner: object) -> Tool[Any]:
    # The run context is positional-only: PydanticAI passes it first and the model's arguments by keyword,
    # and grep has an argument named ``context`` (lines around each match) that must land in ``arguments``.
    async def run(run_context: RunContext[Any], /, **arguments: Any) -> str:
        result = await tool.arun(_session(run_context, owner), _call_id(run_context), arguments)
        if result.is_error:
            raise ToolFailed(result.output)
        return result.output

    return Tool.from_schema(run, name=tool.name, description=tool.description, json_schema=tool.parameters,
                            takes_ctx=True)


def toolset(store: Optional[ToolOutputStore] = None) -> FunctionToolset[Any]:
    """``read`` and ``grep`` as a PydanticAI toolset, for agents that take toolsets rather than capabilities.

    ``capability()`` already includes them; use this one only beside your own bounding.

    :raises TypeError: ``store`` is not a ``ToolOutputStore``.
    """
    store = open_store(store)
    return _toolset(store, object())


def _toolset(store: ToolOutputStore, owner: object) -> FunctionToolset[Any]:
    return FunctionToolset([_paging_tool(tool, owner) for tool in paging_tools(store)])


@dataclass
class OverspillCapability(AbstractCapability[Any]):
    """Bounds every tool result through a ``ToolOutputStore`` and gives the model ``read`` and ``grep``."""

    store: ToolOutputStore
    _bounder: Bounder = field(init=False, repr=False)
    _toolset: FunctionToolset[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._bounder = Bounder(self.store)
        self._toolset = _toolset(self.store, self)

    @classmethod
    def get_serialization_name(cls) -> Optional[str]:
        return None  # holds a store: not part of an agent spec

    def get_toolset(self) -> FunctionToolset[Any]:
        return self._toolset

    async def after_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                 args: Any, result: Any) -> Any:
        """Bound ``result``, unless it is a page or search of this capability's own tools."""
        if tool_def.name in self._toolset.tools:
            return result  # a page is already bounded (and may hold more lines than a preview)
        return await self._bounded_result(_session(ctx, self), _call_id(ctx, call), result)

    async def before_node_run(self, ctx: RunContext[Any], *, node: Any) -> Any:
        """Bound the results a run resumed with ``deferred_tool_results`` gives deferred calls (an external
        tool's, a ``CallDeferred`` tool's): PydanticAI makes them tool returns without ``after_tool_execute``
        or ``wrap_tool_execute``.  A value or a ``ToolReturn`` is bounded as a tool's result, a
        ``ModelRetry``'s or ``ToolFailed``'s message as a tool's, each keeping its kind (a ``RetryPromptPart``,
        deprecated but still "the same result as ``ModelRetry``", as one, staying a retry); an approval or a
        denial is the application's, not the tool's, and passes.
        """
        results = node.tool_call_results if isinstance(node, CallToolsNode) else None
        if not results:
            return node
        session_id = _session(ctx, self)
        bounded = dict(results)
        for call_id, result in results.items():
            if isinstance(result, ToolReturn):
                bounded[call_id] = await self._bounded_result(session_id, _own_id(call_id), result)
            elif isinstance(result, (ModelRetry, ToolFailed)):
                bounded[call_id] = await self._bounded_error(session_id, _own_id(call_id), result) or result
            elif isinstance(result, _LEGACY_RETRY_PARTS):
                bounded[call_id] = await self._bounded_part(session_id, _own_id(call_id), result) or result
        if all(bounded[call_id] is result for call_id, result in results.items()):
            return node
        return replace(node, tool_call_results=bounded)

    async def wrap_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                args: Any, handler: WrapToolExecuteHandler) -> Any:
        """Run the call; bound the message of a retry or failure it raises, which the model is shown instead
        of a result (a ``ModelRetry`` or ``ToolFailed`` of the tool, or an MCP server's ``isError`` result).

        The exception keeps its type (PydanticAI's ``ToolRetryError``/``ToolFailedError``, or the
        ``ModelRetry``/``ToolFailed`` itself when the caller asked for raw errors): over the limits, its
        message is stored whole in the run's session and replaced by the preview with the marker.
        """
        if tool_def.name in self._toolset.tools:
            return await handler(args)  # read's and grep's own failures are one line
        return await self._retries_bounded(ctx, call, lambda: handler(args))

    async def wrap_tool_validate(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                 args: Any, handler: WrapToolValidateHandler) -> Any:
        """Validate the call's arguments; bound the message of a retry or failure raised on the way, as
        ``wrap_tool_execute`` does: the model is shown it instead of a result, and PydanticAI raises it
        before any execute hook runs.

        That is a ``ModelRetry`` or ``ToolFailed`` of the tool's ``args_validator``, of another capability's
        ``before_tool_validate``, ``on_tool_validate_error`` or ``after_tool_validate``, or of the
        ``wrap_tool_validate`` of a capability listed after this one (listed before it, it wraps this hook).
        The retry stays a retry (on the tool's retry budget), the failure a failure.
        """
        return await self._retries_bounded(ctx, call, lambda: handler(args))

    async def wrap_output_validate(self, ctx: RunContext[Any], *, output_context: OutputContext, output: Any,
                                   handler: WrapOutputValidateHandler) -> Any:
        """Validate the model's output; bound the message of a retry a hook raises (as ``wrap_tool_execute``)."""
        return await self._retries_bounded(ctx, None, lambda: handler(output))

    async def wrap_output_process(self, ctx: RunContext[Any], *, output_context: OutputContext, output: Any,
                                  handler: WrapOutputProcessHandler) -> Any:
        """Process the model's output; bound the message of a retry it raises, as ``wrap_tool_execute`` does.

        An output function's (``ToolOutput(fn)``, ``TextOutput(fn)``...) or an output validator's
        ``ModelRetry`` is shown to the model as a tool's is, but an output tool's call runs through the
        output hooks, never ``wrap_tool_execute``; it stays a retry.
        """
        return await self._retries_bounded(ctx, None, lambda: handler(output))

    async def _retries_bounded(self, ctx: RunContext[Any], call: Optional[ToolCallPart],
                               run: Callable[[], Awaitable[Any]]) -> Any:
        """``run()``'s value; a retry or failure it raises is raised again with its message bounded
        (``_bounded_error``), in the call's session under the call's id (``call``'s, else the context's)."""
        try:
            return await run()
        except (ToolRetryError, ToolFailedError, ModelRetry, ToolFailed, pydantic_core.ValidationError) as error:
            if ctx.partial_output:
                raise  # a streamed partial output's retry is dropped, never shown: only the final one's is
            bounded = await self._bounded_error(_session(ctx, self), _call_id(ctx, call), error)
            if bounded is None:
                raise
            # The cause stays the one PydanticAI gave (the tool's own exception, for whoever debugs it).
            raise bounded from (error.__cause__ if isinstance(error, (ToolRetryError, ToolFailedError)) else error)

    async def _bounded_error(self, session_id: str, call_id: str, error: Exception) -> Optional[Exception]:
        """``error`` with the text the model is shown bounded, as a new exception of its type (a
        ``ValidationError``'s details keep their types and places, their huge inputs and messages saying
        where the whole text is: ``_details_bounded``); None when that text fits or is not text
        (structured content)."""
        if isinstance(error, pydantic_core.ValidationError):
            # PydanticAI answers it with a retry holding its details, whose ``input`` may be the model's
            # whole argument.  It stays a ValidationError: PydanticAI reads it (cause 'validation_error',
            # and a 'json_invalid' one of a structured output cut off by the token limit raises
            # OutputTokenLimitExceeded rather than retry), so it is made again within the limits, the
            # whole text of its details stored.
            return await self._validation_bounded(session_id, call_id, error, _error_details, _details_bounded)
        if isinstance(error, (ToolRetryError, ToolFailedError)):
            attribute = "tool_retry" if isinstance(error, ToolRetryError) else "tool_failed"
            part = await self._bounded_part(session_id, call_id, getattr(error, attribute))
            return None if part is None else type(error)(part)
        message = getattr(error, "message", None)
        if not isinstance(message, str):
            return None
        preview = await self._bounder.aerror_text(session_id, call_id, message, _message_shown)
        if preview is None:
            return None
        # A subclass of the user's stays that subclass, with its attributes, and its __init__ (which
        # may take other arguments) is not called again: ``retold``, as the other adapters do.
        bounded = retold(error, preview)
        if not isinstance(bounded, (ModelRetry, ToolFailed)) or getattr(bounded, "message", None) != preview:
            # (retold could not make one that PydanticAI handles, with the text where it reads it: the base type)
            bounded = (ModelRetry if isinstance(error, ModelRetry) else ToolFailed)(preview)
        return bounded  # type: ignore[return-value]

    async def _bounded_part(self, session_id: str, call_id: str, part: Any) -> Any:
        """A retry's or failure's message part (a ``ToolReturnPart``, a ``RetryPromptPart``...) with its
        content bounded as the model is shown it, None when that text fits or the content is not text: a
        ``ValidationError``'s details (``_is_details``) stay details, bounded as an error's are
        (``_content_bounded``: PydanticAI reads a list as a validation error's, its retry's cause
        ``validation_error``), other content becomes its preview (``_retry_preview``)."""
        if _is_details(part.content):
            content = await self._validation_bounded(session_id, call_id, part.content, _details_text,
                                                     _content_bounded)
        else:
            content = await self._retry_preview(session_id, call_id, part)
        if content is None:
            return None
        if not isinstance(part, _LEGACY_RETRY_PARTS):
            # The part keeps everything else (the retry's attempt count, the call id, the outcome).
            return replace(part, content=content)
        with warnings.catch_warnings():
            # The part stays the type the user gave, whose every construction warns that it is deprecated:
            # the user was warned making it, and this copy is the adapter's, so only that warning is silenced.
            warnings.simplefilter("ignore", _DEPRECATION)
            return replace(part, content=content)

    async def _validation_bounded(self, session_id: str, call_id: str, details: _Made,
                                  text_of: Callable[[_Made], str],
                                  bounded: Callable[[_Made, Optional[Resource], Limits], _Made]) -> Optional[_Made]:
        """``details`` (a ``ValidationError``, a part's details list) ``bounded`` when the text PydanticAI
        sends the model of them (``_in_error`` of ``text_of`` them, their JSON) is over the limits (their
        JSON is then stored whole, and the bounded details name it), else None.

        Rendering the text, storing it and bounding the details run on one worker thread: for thousands of
        details each is seconds of CPU the event loop must not wait on, and a validation retry is rare
        beside the model call it precedes, so a small one takes the thread too (its text is not known
        small before it is rendered).
        """
        def run() -> Optional[_Made]:
            kept = self._bounder.error_result(session_id, call_id, text_of(details), _in_error)
            return None if kept is None else bounded(details, kept.resource, self.store.limits())

        return await asyncio.to_thread(run)

    async def _retry_preview(self, session_id: str, call_id: str, part: Any) -> Optional[str]:
        """The preview with the marker of a retry's or failure's content (``part``'s) when the text the model
        is shown of it is over the limits (that text is then stored whole), else None: a message is that
        text, and another list PydanticAI's JSON of it; other content (structured, media) passes.  What is
        bounded is the text as PydanticAI sends it (``_part_shown``)."""
        content = part.content
        text = content if isinstance(content, str) else _details_text(content) if isinstance(content, list) \
            else None
        return None if text is None else await self._bounder.aerror_text(session_id, call_id, text,
                                                                          _part_shown(part, text))

    async def _bounded_result(self, session_id: str, call_id: str, result: Any) -> Any:
        """A tool's result bounded: a ``ToolReturn``'s ``return_value`` and, on its own, its ``content``;
        any other value as ``_bounded`` bounds it."""
        if isinstance(result, ToolReturn):
            # Its content goes to the model too, as a message of its own: bounded on its own.
            changes = {"return_value": await self._bounded(session_id, call_id, result.return_value),
                       "content": await self._bounded_content(session_id, f"{call_id}.content", result.content)}
            changes = {name: value for name, value in changes.items() if value is not getattr(result, name)}
            return replace(result, **changes) if changes else result
        return await self._bounded(session_id, call_id, result)

    async def _bounded(self, session_id: str, call_id: str, value: Any) -> Any:
        """A return value bounded: media (images, audio, documents, files) as it is; beside media in a list,
        the other items together (PydanticAI sends a list's media as files and the rest as the tool's text);
        any other value whole, as its text."""
        if value is None or is_multi_modal_content(value):
            return value
        if isinstance(value, list) and any(is_multi_modal_content(item) for item in value):  # only a list is split
            return await self._bounded_pieces(session_id, call_id, value, lambda item: as_text(item, _dumps))
        return await self._bounder.avalue(session_id, call_id, value, _dumps)

    async def _bounded_content(self, session_id: str, call_id: str, content: Any) -> Any:
        """A ``ToolReturn``'s content bounded: a string; in a sequence, its strings together (media and
        anything else as they are)."""
        if isinstance(content, str):
            return await self._bounder.avalue(session_id, call_id, content)
        if isinstance(content, (list, tuple)):
            items = list(content)
            bounded = await self._bounded_pieces(session_id, call_id, items,
                                                 lambda item: item if isinstance(item, str) else None)
            return content if bounded is items else bounded
        return content

    async def _bounded_pieces(self, session_id: str, call_id: str, items: list[Any],
                              text_of: Callable[[Any], Optional[Text]]) -> Any:
        """``items`` whose text (``text_of``: None for media) is stored as one text when together it is
        over the limits, then shown as one string where the first stood; else ``items`` as they came."""
        texts = [None if is_multi_modal_content(item) else text_of(item) for item in items]
        bounded = await self._bounder.aitems(session_id, call_id, items, texts, lambda item, preview: preview)
        return items if bounded is None else bounded


def capability(store: Optional[ToolOutputStore] = None) -> OverspillCapability:
    """A capability bounding every tool result of the agent, with ``read`` and ``grep`` as its tools.

    A result within the store's limits reaches the model untouched and
    nothing is stored; a larger one is stored whole and the model gets its
    preview with the marker naming ``tool-output://ID``.  A return value that
    is not text is stored as its JSON text (as PydanticAI serialises it); one
    that cannot be serialised passes unchanged, with a warning on the
    ``overspill`` logger.

    :param store: where outputs are stored; the default ``ToolOutputStore()`` when None.
    :raises TypeError: ``store`` is not a ``ToolOutputStore``.
    """
    return OverspillCapability(open_store(store))
