"""OpenAI Agents SDK adapter: ``Agent(tools=bound(tools))``.

Needs the ``openai-agents`` extra (``pip install 'overspill[openai-agents]'``).

``bound`` copies each ``FunctionTool`` with its ``on_invoke_tool`` wrapped, so
its result (after the SDK's own failure handling, which turns an exception
into the error text the model sees) is bounded by ``ToolOutputStore.truncate``,
and adds ``read`` and ``grep``; the SDK's other local tools (a custom tool, a
local shell, apply_patch) are copied with what runs them wrapped.  ``bound_servers`` does the same for the tools
of MCP servers (``Agent(mcp_servers=bound_servers(servers))``), and ``bound_handoffs`` for the text a
handoff's ``failure_error_function`` makes of a failed handoff, which openai-agents 0.25 sends the
calling model (``Agent(handoffs=bound_handoffs(handoffs))``).  An output
that becomes the run's ``final_output`` (by the agent's ``tool_use_behavior``:
``"stop_on_first_tool"`` or ``StopAtTools``) is the application's, not the
model's, and passes whole.

The session is ``session_id`` when given, else the run's thread: the run
config's ``group_id`` (the SDK's "chat thread ID"), else the run's trace (its
``trace_id``; when tracing is disabled, an id kept on the run's ``Usage``, which
a ``RunState`` carries into the resumed run), else the agent.  The call id is
the model's ``call_id`` (a new one for an apply_patch operation, whose editor
is not given it, and for a handoff's failure text, whose failure function is not).
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
import threading
from dataclasses import replace
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Callable, Optional, Union

from ._extra import needs_extra

with needs_extra("openai-agents"):
    import pydantic_core
    import agents.tool as _sdk_tool
    from agents import Agent, FunctionTool, Handoff, Tool, default_tool_error_function, handoff as _sdk_handoff
    from agents.mcp import MCPServer
    from agents.tool import ToolOutputFileContent, ToolOutputImage, ToolOutputText, \
        ValidToolOutputPydanticModelsTypeAdapter
    from agents.tool_context import ToolContext
    from agents.tool_guardrails import ToolOutputGuardrail
    from agents.tracing import get_current_trace
    from pydantic import ValidationError

try:  # how the SDK chooses the context an invoker gets (private, so its absence is allowed for)
    from agents.tool import _get_function_tool_invoke_context as _narrowed_context
except ImportError:
    _narrowed_context = None
try:  # the ToolContext attribute by which the SDK notes that its default failure handling made a call's result
    from agents.tool import _DEFAULT_FAILURE_HANDLED_ATTR as _DEFAULT_FAILURE_HANDLED
except ImportError:
    _DEFAULT_FAILURE_HANDLED = "_function_tool_default_failure_handled"
try:  # whether a call was made by a hosted program (programmatic tool calling), which gets JSON, not str()
    from agents.tool import _is_programmatic_tool_call
except ImportError:  # an SDK without programmatic tool calling: every call is the model's
    def _is_programmatic_tool_call(tool_call: Any) -> bool:
        return False

from ..store import ToolOutputStore
from ._core import PAGING_TOOLS, Bounder, PagingTool, Sessions, json_text, optional_session_id, new_call_id, \
    new_session_id, open_store, paging_tools

__all__ = ["bound", "bound_handoffs", "bound_servers"]

# Shared by every bound(), bound_servers() and bound_handoffs() call, so a run's tools, its
# servers' tools and its handoffs' failures agree on the session of a run that has no other id.
_RUNS = Sessions()
_NO_TRACE_ID = "no-op"  # the id of every trace when tracing is disabled
_RUN_SESSION = "_overspill_session_id"  # the attribute of a run's Usage naming its session (_run_session)
_RUN_SESSION_LOCK = threading.Lock()
_KEPT_WHOLE = 64  # whole outputs a bound tool keeps for its output guardrails, at most
# (tool name, run context) of the MCP tool call about to be made, noted by _BoundedServer's meta resolver.
_MCP_CALL: ContextVar[Optional[tuple[str, Any]]] = ContextVar("overspill_mcp_call", default=None)


def _session(fixed: Optional[str], context: Any, fallback: object, run_config: Any = None) -> str:
    """The session of a call: ``fixed``, else the run's ``group_id`` (of ``run_config``, else of the
    context's), else the run's trace, else the agent (``fallback`` outside any)."""
    if fixed is not None:
        return fixed
    if run_config is None:
        run_config = getattr(context, "run_config", None)
    group_id = getattr(run_config, "group_id", None)
    if isinstance(group_id, str) and group_id:
        return group_id
    trace = get_current_trace()
    if run_config is None:
        # No run config found (a local tool's executor on an SDK that calls it elsewhere): a traced run's
        # trace carries its group_id.
        group_id = getattr(trace, "group_id", None)
        if isinstance(group_id, str) and group_id:
            return group_id
    if trace is not None:
        trace_id = trace.trace_id
        if isinstance(trace_id, str) and trace_id and trace_id != _NO_TRACE_ID:
            return trace_id
        return _run_session(context) or _RUNS.of(trace)
    agent = getattr(context, "agent", None)
    return _RUNS.of(agent if agent is not None else fallback)


def _run_session(context: Any) -> Optional[str]:
    """The session of the run ``context`` belongs to when tracing is disabled (its trace, a ``NoOpTrace``,
    is new in each ``Runner.run``, a resumed one too), kept on the run's ``Usage``; None outside a run.

    The usage is the one object of a run that every tool context shares with it (the SDK copies the run
    context into each call's ``ToolContext``, keeping its ``usage``) and that a ``RunState`` carries
    into the resumed run: ``RunResult.to_state()`` deep-copies it, attributes included.  A state
    serialised with ``to_json`` keeps only the usage's fields; give such a run a ``group_id``.
    """
    usage = getattr(context, "usage", None)
    if usage is None:
        return None
    found = getattr(usage, _RUN_SESSION, None)
    if isinstance(found, str):
        return found
    with _RUN_SESSION_LOCK:  # tools of one run may run on several threads
        found = getattr(usage, _RUN_SESSION, None)
        if isinstance(found, str):
            return found
        try:
            setattr(usage, _RUN_SESSION, new_session_id())
        except (AttributeError, TypeError):  # a usage that takes no attribute: the trace's session
            return None
        return getattr(usage, _RUN_SESSION)


def _call_id(context: Any) -> str:
    call_id = getattr(context, "tool_call_id", None)
    return call_id if isinstance(call_id, str) and call_id else new_call_id()


def _final_output(context: Any, names: Iterable[Optional[str]]) -> bool:
    """Whether the output of the call of ``context``, to a tool of one of ``names``, is the run's
    ``final_output``, for the application rather than the model, by the agent's ``tool_use_behavior``.

    ``"stop_on_first_tool"``: any turn that calls function tools ends the run, with the first call's
    output as its final output; which call is first is not known to any one of them, so every call of
    such an agent passes whole (the others' outputs are never read by this run's model either).  A
    ``StopAtTools``: the calls of the tools it names (by name or qualified name, as the SDK matches
    them).  A custom ``ToolsToFinalOutputFunction`` chooses after the calls, from their outputs, which
    the model reads if it chooses none: they are bounded, and the function gets them so.
    """
    behavior = getattr(getattr(context, "agent", None), "tool_use_behavior", None)
    if isinstance(behavior, str):
        return behavior == "stop_on_first_tool"
    if isinstance(behavior, Mapping):
        stop_at = behavior.get("stop_at_tool_names") or ()
        return any(name in stop_at for name in names if name)
    return False


def _structured_item(output: Any) -> Any:
    """The SDK's structured output item ``output`` stands for (a text, image or file item, as a model or a
    dict with a ``type``), else None: the SDK's own rule for what it sends the model as an item."""
    if isinstance(output, (ToolOutputText, ToolOutputImage, ToolOutputFileContent)):
        return output
    if isinstance(output, dict) and "type" in output:
        try:
            return ValidToolOutputPydanticModelsTypeAdapter.validate_python(output)
        except ValidationError:
            return None
    return None


async def _bound_item(bounder: Bounder, session_id: str, call_id: str, output: Any, item: Any) -> Any:
    """One structured output item bounded: a text item's text; an image or a file passes as it is."""
    if not isinstance(item, ToolOutputText):
        return output  # media for the model, never text to bound
    text = await bounder.atext(session_id, call_id, item.text)
    return output if text is None else _with_text(output, text)


def _dumps(value: Any) -> str:
    """A tool's return value as JSON text: ``json`` for plain values, pydantic for what ``json`` cannot
    write (models, dataclasses, dates), as the SDK itself serialises tool outputs.

    :raises TypeError: neither can serialise it.
    :raises ValueError: a circular reference.
    """
    try:
        return json_text(value)
    except TypeError:
        pass
    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError as error:
        raise TypeError(str(error)) from error


def _program_json(value: Any) -> str:
    """A tool's plain value as the SDK gives it to a hosted program that made the call (programmatic tool
    calling): pydantic's compact JSON (``ItemHelpers.tool_call_output_item``), not ``str(value)``.

    :raises TypeError: pydantic cannot serialise it.
    """
    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError as error:
        raise TypeError(str(error)) from error


def _with_text(output: Any, text: str) -> Any:
    """A text item (a model or a dict) with its text replaced."""
    return {**output, "text": text} if isinstance(output, dict) else output.model_copy(update={"text": text})


async def _bound_items(bounder: Bounder, session_id: str, call_id: str, output: Any, items: list[Any]) -> Any:
    """A list of output items bounded: its text items together (the model reads them all), stored as
    one text when together they are over the limits and then shown as one text item, the first's;
    images and files in place, whatever their size."""
    texts = [item.text if isinstance(item, ToolOutputText) else None for item in items]
    bounded = await bounder.aitems(session_id, call_id, list(output), texts, _with_text)
    return output if bounded is None else bounded


async def _bound_output(bounder: Bounder, session_id: str, call_id: str, output: Any,
                        program: bool = False) -> Any:
    """A tool's output bounded: a structured item (text bounded, media as it is), a list of them as the SDK
    takes one (every item structured: its text items together), or any other value as the text the SDK
    shows of it (``str(output)``; its JSON for a call a hosted program made, ``program``)."""
    if isinstance(output, (list, tuple)) and output:
        items = [_structured_item(item) for item in output]
        if all(item is not None for item in items):
            return await _bound_items(bounder, session_id, call_id, output, items)
    else:
        item = _structured_item(output)
        if item is not None:
            return await _bound_item(bounder, session_id, call_id, output, item)
    if output is None:
        return output
    if program:  # a hosted program that made the call gets the value's JSON: measured and stored as such
        return await bounder.avalue(session_id, call_id, output, _program_json)
    # Any other value (a list with a plain item among them too): the SDK sends the model str(output).  It
    # is stored as its JSON text when that is over the limits, else as str(output) when that is (a pydantic
    # model's excluded field, bytes' repr at four characters a byte) or when it has no JSON (shown=).
    return await bounder.avalue(session_id, call_id, output, _dumps, shown=_as_shown)


async def _bound_shown(bounder: Bounder, session_id: str, context: Any, output: Any, whole: Any,
                       kept: "_WholeOutputs", readers: int) -> Any:
    """What the model is shown of a call (a tool's output, or the SDK's text of its failure) bounded
    (``_bound_output``) under the call's id; when it was bounded, ``whole`` is kept for the call's
    ``readers`` checks (its output guardrails, which check the whole output, not the preview)."""
    program = _is_programmatic_tool_call(getattr(context, "tool_call", None))
    bounded = await _bound_output(bounder, session_id, _call_id(context), output, program)
    if bounded is not output:
        kept.keep(context, whole, readers)
    return bounded


async def _bound_failure(bounder: Bounder, session_id: str, context: Any, text: Any, whole: Any,
                         kept: "_WholeOutputs", readers: int) -> Any:
    """The SDK's text of a failed call (what a failure error function made of the error) bounded as an
    error's text is (``Bounder.aerror_text``): when the store cannot keep it, the preview says "output not
    stored" and why, so the model still gets the tool's failure and the run goes on, rather than a
    StorageError in its place.  When it was bounded, ``whole`` is kept for the call's ``readers`` checks,
    as ``_bound_shown`` keeps an output.  A value that is no text (a formatter's own choice) is bounded
    as an output is (``_bound_shown``)."""
    if not isinstance(text, str):
        return await _bound_shown(bounder, session_id, context, text, whole, kept, readers)
    preview = await bounder.aerror_text(session_id, _call_id(context), text)
    if preview is None:
        return text
    kept.keep(context, whole, readers)
    return preview


class _Failure:
    """A failed call's text as a function tool's failure error function made it (``_MarkedFailure``),
    marked so that the bound invoker bounds it as a failure's text rather than as an output."""

    __slots__ = ("text",)

    def __init__(self, text: Any) -> None:
        self.text = text


class _MarkedFailure:
    """The failure error function of the copy a bound function tool invokes: the tool's own, its text
    marked (``_Failure``).  The SDK formats a raised error inside the invoker ``_BoundedInvoker`` wraps,
    so the text comes back as the call's result, which only this mark tells from an output.  None (the
    error is raised) stays None."""

    def __init__(self, formatter: Callable[[Any, Exception], Any]) -> None:
        self.formatter = formatter

    async def __call__(self, context: Any, error: Exception) -> Any:
        text = self.formatter(context, error)
        text = await text if inspect.isawaitable(text) else text
        return None if text is None else _Failure(text)


def _failures_marked(tool: FunctionTool) -> FunctionTool:
    """A copy of ``tool`` whose failure error function marks its text (``_MarkedFailure``), else ``tool``
    itself: no failure error function of its own (None lets the error end the run), or the SDK's default
    (one fixed line, or the run's ``tool_error_formatter``'s text in its place, which the SDK marks itself:
    ``_default_failure``), or an SDK that keeps it elsewhere."""
    formatter = getattr(tool, "_failure_error_function", None)
    if (formatter is None or formatter is default_tool_error_function
            or getattr(tool, "_use_default_failure_error_function", True)):
        return tool
    marked = copy.copy(tool)  # (the SDK's copy binds the copy's invoker to the copy and its formatter)
    marked._failure_error_function = _MarkedFailure(formatter)
    return marked


def _default_failure(context: Any) -> bool:
    """Whether the result of the call of ``context`` that just returned is a failure's text made by the SDK's
    default failure handling: the default failure function's fixed line, or what the run's
    ``RunConfig.tool_error_formatter`` made of the error in its place (the tool's error itself, however
    long).  The SDK marks such a result on the call's ``ToolContext``, which the tool copy
    (``_failures_marked``) cannot do for it; the mark is read, not cleared: the SDK takes it after the
    call (to let the text past the tool's output schema)."""
    return bool(getattr(context, _DEFAULT_FAILURE_HANDLED, False))


class _BoundedInvoker:
    """A ``FunctionTool``'s ``on_invoke_tool`` with its result bounded (the SDK's text of a failure too:
    its failure handling runs inside the invoker wrapped here)."""

    def __init__(self, inner: FunctionTool, bounder: Bounder, session_id: Optional[str], owner: object,
                 adapter: Any) -> None:
        self.original = inner  # the tool as it was (its invoker and output schema)
        self._inner = _failures_marked(inner)  # what runs: its failure text marked (_bound_failure bounds it)
        self._bounder = bounder
        self._session_id = session_id
        self._owner = owner
        self._adapter = adapter
        # Whether the SDK narrows the context for the inner invoker: it depends only on the invoker's
        # signature, so it is learnt on the first call (the SDK inspects the signature every time).
        self._narrows: Optional[bool] = None if _narrowed_context is not None else False
        # The tool's output guardrails (_OnWholeOutput) check the whole output, not the preview.
        self.whole = _WholeOutputs()

    def _inner_context(self, context: ToolContext[Any]) -> Any:
        if self._narrows is False:
            return context
        chosen = _narrowed_context(self._inner, context)
        self._narrows = chosen is not context
        return chosen

    async def __call__(self, context: ToolContext[Any], input: str) -> Any:
        if getattr(context, _DEFAULT_FAILURE_HANDLED, False):
            # A mark left by an earlier call on this context (the SDK clears it before each call it makes),
            # cleared so that the mark read after this call (_default_failure) is this call's.
            setattr(context, _DEFAULT_FAILURE_HANDLED, False)
        output = whole = await self._inner.on_invoke_tool(self._inner_context(context), input)
        failed = isinstance(output, _Failure)
        if failed:
            output = whole = output.text  # the SDK's text of the failure, as the tool's formatter made it
        else:
            failed = _default_failure(context)
        if _final_output(context, (self._inner.name, getattr(self._inner, "qualified_name", None))):
            return whole  # the run's final output, as the tool returned it: the application's, not the model's
        if failed:
            return await _bound_failure(self._bounder, _session(self._session_id, context, self._owner), context,
                                        output, whole, self.whole, self.whole.readers)
        if self._adapter is not None and not isinstance(output, str):
            # The copy no longer declares the output schema (a preview cannot match it):
            # the output becomes the JSON text the SDK would have sent.
            output = json.dumps(self._adapter.dump_python(self._adapter.validate_python(output), mode="json",
                                                          by_alias=True), ensure_ascii=False, separators=(",", ":"))
        return await _bound_shown(self._bounder, _session(self._session_id, context, self._owner), context,
                                  output, whole, self.whole, self.whole.readers)


_NOT_KEPT = object()


class _WholeOutputs:
    """The whole outputs of bounded calls, for the checks that must see them rather than the preview
    the model is shown (the output guardrails, ``_OnWholeOutput``): each kept under its call id with
    how many checks are still to see it, and dropped when the last has (or one stopped the SDK)."""

    def __init__(self) -> None:
        self.readers = 0  # the checks of each call (a bound tool's guardrails); none: nothing is kept
        self._kept: dict[str, list[Any]] = {}

    def keep(self, context: Any, whole: Any, readers: int) -> None:
        """Keep ``whole``, the output of the call of ``context``, for ``readers`` checks."""
        call_id = getattr(context, "tool_call_id", None)
        if readers <= 0 or not isinstance(call_id, str):
            return
        if len(self._kept) >= _KEPT_WHOLE:  # calls whose checks never ran (the run stopped first)
            del self._kept[next(iter(self._kept))]
        self._kept[call_id] = [whole, readers]

    def take(self, context: Any, last: bool) -> Any:
        """The whole output of the call of ``context`` for one check, ``_NOT_KEPT`` when the model is shown
        the output itself; ``last``: no other check sees it after this one."""
        call_id = getattr(context, "tool_call_id", None)
        kept = self._kept.get(call_id) if isinstance(call_id, str) else None
        if kept is None:
            return _NOT_KEPT
        kept[1] -= 1
        if last or kept[1] <= 0:
            self._kept.pop(call_id, None)
        return kept[0]


class _OnWholeOutput(ToolOutputGuardrail):  # type: ignore[misc]
    """A tool output guardrail of a bound tool, run on the whole output where the model is shown its
    preview: what it rejects or stops never reaches the model, neither in the preview nor through the
    link (the output was stored before the guardrails ran, but the model is not given its link).  The
    SDK runs it as it runs the guardrail it stands for (same name and function, results recorded)."""

    def __init__(self, guarded: ToolOutputGuardrail, whole: _WholeOutputs,
                 shown: Callable[[Any], Any] = lambda kept: kept) -> None:
        super().__init__(guardrail_function=guarded.guardrail_function, name=guarded.get_name())
        self.guarded = guarded
        self._whole = whole
        self._shown = shown  # the output as the SDK would have given it, from what was kept

    async def run(self, data: Any) -> Any:
        kept = self._whole.take(data.context, False)
        checked = data if kept is _NOT_KEPT else replace(data, output=self._shown(kept))
        verdict = await self.guarded.run(checked)
        behavior = getattr(verdict, "behavior", None)
        if isinstance(behavior, dict) and behavior.get("type") != "allow":
            self._whole.take(data.context, True)  # the SDK stops at this one
        return verdict


class _WrappedOfOriginal:
    """``__wrapped__`` of a bound tool: the original tool's (the callable given to ``function_tool``).

    The SDK's own descriptor finds that callable in the tool's invoker, which bound() replaced, so a
    bound tool's class (``_bound_class``) puts this one in its place.
    """

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            raise AttributeError("FunctionTool classes have no wrapped Python callable")
        invoker = instance.on_invoke_tool
        if isinstance(invoker, _BoundedInvoker):
            return invoker.original.__wrapped__
        return FunctionTool.__wrapped__.__get__(instance, owner)  # its invoker was replaced since

    def __set__(self, instance: Any, value: object) -> None:
        raise AttributeError("FunctionTool.__wrapped__ is read-only")  # as the SDK's own


_BOUND_CLASSES: dict[type, type] = {}


def _bound_class(kind: type) -> type:
    """The class of a bound copy of a ``kind`` tool: ``kind`` itself, with ``__wrapped__`` read from the
    original tool (a subclass per tool class, so a subclass's own methods stay)."""
    found = _BOUND_CLASSES.get(kind)
    if found is None:
        found = _BOUND_CLASSES.setdefault(kind, type(kind.__name__, (kind,), {
            "__wrapped__": _WrappedOfOriginal(), "__module__": kind.__module__, "__qualname__": kind.__qualname__,
            "__doc__": kind.__doc__}))
    return found


def _wrapped(tool: FunctionTool, bounder: Bounder, session_id: Optional[str], owner: object) -> FunctionTool:
    inner = copy.copy(tool)
    adapter = None
    wrapped = copy.copy(tool)
    wrapped.__class__ = _bound_class(type(tool))
    if tool.output_json_schema is not None or tool._output_type_adapter is not None:
        adapter = tool._output_type_adapter
        wrapped.output_json_schema = None
        wrapped._output_type_adapter = None
        if adapter is None:  # a schema without a Python type: any JSON value it dumps to
            from pydantic import TypeAdapter

            adapter = TypeAdapter(Any)
    invoker = wrapped.on_invoke_tool = _BoundedInvoker(inner, bounder, session_id, owner, adapter)
    if tool.tool_output_guardrails:
        wrapped.tool_output_guardrails = [_OnWholeOutput(guardrail, invoker.whole)
                                          for guardrail in tool.tool_output_guardrails]
        invoker.whole.readers = len(wrapped.tool_output_guardrails)
    return wrapped


def _paging_tool(tool: PagingTool, session_id: Optional[str], owner: object) -> FunctionTool:
    async def invoke(context: ToolContext[Any], input: str) -> str:
        result = await tool.arun(_session(session_id, context, owner), _call_id(context), input or "{}")
        return result.output

    paging = FunctionTool(name=tool.name, description=tool.description, params_json_schema=tool.parameters,
                          on_invoke_tool=invoke, strict_json_schema=False)
    paging._overspill_paging = True  # type: ignore[attr-defined]
    return paging


# ------------------------------------------------------------------ local tools other than function tools
# The SDK's tools that run on the application's side, whose output the SDK sends to the model as text:
# a CustomTool (raw string input, its own on_invoke_tool), a ShellTool with a local executor, the older
# LocalShellTool and an ApplyPatchTool's editor.  Each is looked up on its own: an SDK version without
# one of them still has the others bounded.
_CustomTool = getattr(_sdk_tool, "CustomTool", None)
_ShellTool = getattr(_sdk_tool, "ShellTool", None)
_ShellResult = getattr(_sdk_tool, "ShellResult", None)
_LocalShellTool = getattr(_sdk_tool, "LocalShellTool", None)
_ApplyPatchTool = getattr(_sdk_tool, "ApplyPatchTool", None)
try:
    from agents.editor import ApplyPatchResult as _ApplyPatchResult
except ImportError:
    _ApplyPatchResult = None

_STACK_DEPTH = 12  # frames above a local tool's wrapper searched for the run's RunConfig


def _run_config_on_stack() -> Any:
    """The ``RunConfig`` of the run calling a local tool's executor or editor, found among the local
    variables of its callers (the SDK's own code, which holds it); None when none is.

    The SDK gives a shell executor and an apply_patch editor the run's ``RunContextWrapper``, which has
    no run config, and with tracing disabled nothing else of the run carries its ``group_id``: without it
    such an output would be stored in another session than the one ``read`` (a function tool, given the
    run config) pages.  Call it on the wrapper's own stack (not from a worker thread).
    """
    try:
        from agents import RunConfig
    except ImportError:  # an SDK without one: the trace's group_id, else the run's trace or usage
        return None
    frame = sys._getframe(1)
    for _ in range(_STACK_DEPTH):
        if frame is None:
            break
        for value in frame.f_locals.values():
            if isinstance(value, RunConfig):
                return value
        frame = frame.f_back
    return None


def _as_shown(value: Any) -> str:
    """The text the SDK sends the model for a tool's value (a function tool's plain value, a local tool's):
    a ``str`` as it is (a subclass as the plain ``str`` of its characters), anything else as ``str(value)``."""
    return str.__str__(value) if isinstance(value, str) else str(value)


class _LocalBounding:
    """What the wrapper of a local tool's runner (or of a handoff's failure error function,
    ``_BoundedHandoffFailure``) shares: what it wraps as it was (``original``, which a bound() of a bound
    list wraps anew), the bounder, the fixed session and the bound() call."""

    def __init__(self, original: Any, bounder: Bounder, session_id: Optional[str], owner: object) -> None:
        self.original = original
        self._bounder = bounder
        self._session_id = session_id
        self._owner = owner

    def _session_of(self, context: Any, run_config: Any) -> str:
        return _session(self._session_id, context, self._owner, run_config)

    def _run_config(self, context: Any) -> Any:
        if self._session_id is not None or getattr(context, "run_config", None) is not None:
            return None  # not needed, or _session finds it on the context
        return _run_config_on_stack()


class _BoundedCustomInvoker(_LocalBounding):
    """A ``CustomTool``'s ``on_invoke_tool`` with its result bounded: the text the SDK sends the model
    (``str(result)``), and the text of an exception it raises (the SDK shows the model ``str(error)``)."""

    async def __call__(self, context: Any, input: str) -> Any:
        session_id = self._session_of(context, self._run_config(context))
        try:
            output = self.original.on_invoke_tool(context, input)
            output = await output if inspect.isawaitable(output) else output
        except Exception as error:  # the SDK catches Exception and shows the model its text
            bounded = await self._bounder.aerror(session_id, _call_id(context), error)
            if bounded is None:
                raise
            raise bounded from error
        preview = await self._bounder.atext(session_id, _call_id(context), _as_shown(output))
        return output if preview is None else preview


class _BoundedShellExecutor(_LocalBounding):
    """A local ``ShellTool``'s (or ``LocalShellTool``'s) executor with its result bounded.

    ``ShellTool``: a text result as the SDK sends it (``str(result)``); a ``ShellResult`` as the model
    reads it, every command's stdout and stderr together (joined with a newline), stored as one text when
    together they are over the limits and then shown as the preview in the first of them, the others
    emptied, each command's outcome kept; an exception's text (the SDK shows it).  ``LocalShellTool``:
    a text result (the SDK sends the executor's value as it is, and lets an exception end the run).
    """

    def __init__(self, original: Any, bounder: Bounder, session_id: Optional[str], owner: object,
                 errors_shown: bool) -> None:
        super().__init__(original, bounder, session_id, owner)
        self._errors_shown = errors_shown  # whether the SDK shows the model an exception's text

    async def __call__(self, request: Any) -> Any:
        context = getattr(request, "ctx_wrapper", None)
        session_id = self._session_of(context, self._run_config(context))
        call_id = getattr(getattr(request, "data", None), "call_id", None)
        if not (isinstance(call_id, str) and call_id):
            call_id = new_call_id()
        try:
            result = self.original.executor(request)
            result = await result if inspect.isawaitable(result) else result
        except Exception as error:
            bounded = await self._bounder.aerror(session_id, call_id, error) if self._errors_shown else None
            if bounded is None:
                raise
            raise bounded from error
        if _ShellResult is not None and isinstance(result, _ShellResult):
            return await self._bounded_result(session_id, call_id, result)
        if not self._errors_shown and not isinstance(result, str):
            return result  # a LocalShellTool's value goes to the model as it is: not text to bound
        preview = await self._bounder.atext(session_id, call_id, _as_shown(result))
        return result if preview is None else preview

    async def _bounded_result(self, session_id: str, call_id: str, result: Any) -> Any:
        entries = result.output
        if not isinstance(entries, (list, tuple)):
            return result  # not what the SDK takes: its error, not ours
        # Each command's stdout and stderr as the SDK reads them (an entry is a ShellCommandOutput or a mapping).
        places: list[tuple[int, str]] = []
        texts: list[str] = []
        for index, entry in enumerate(entries):
            for field in ("stdout", "stderr"):
                value = entry.get(field, "") if isinstance(entry, Mapping) else getattr(entry, field, "")
                text = "" if value is None else _as_shown(value)
                if text:
                    places.append((index, field))
                    texts.append(text)
        if not texts:
            return result
        preview = await self._bounder.apieces(session_id, call_id, texts)  # type: ignore[arg-type]
        if preview is None:
            return result
        bounded = list(entries)
        for number, (index, field) in enumerate(places):
            shown = preview if number == 0 else ""
            entry = bounded[index]
            bounded[index] = ({**entry, field: shown} if isinstance(entry, Mapping)
                              else replace(entry, **{field: shown}))
        return replace(result, output=bounded)


class _BoundedEditor(_LocalBounding):
    """An ``ApplyPatchTool``'s editor with each operation's output bounded (the SDK sends the model the
    outputs of a call's operations joined with newlines, or the text of an exception an operation raised);
    every other attribute is the editor's."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original.editor, name)

    async def create_file(self, operation: Any) -> Any:
        """The editor's ``create_file``, its output bounded."""
        return await self._apply("create_file", operation, self._run_config(None))

    async def update_file(self, operation: Any) -> Any:
        """The editor's ``update_file``, its output bounded."""
        return await self._apply("update_file", operation, self._run_config(None))

    async def delete_file(self, operation: Any) -> Any:
        """The editor's ``delete_file``, its output bounded."""
        return await self._apply("delete_file", operation, self._run_config(None))

    async def _apply(self, method: str, operation: Any, run_config: Any) -> Any:
        context = getattr(operation, "ctx_wrapper", None)
        session_id = self._session_of(context, run_config)
        call_id = new_call_id()  # the SDK gives an editor the operation, not the model's call id
        try:
            result = getattr(self.original.editor, method)(operation)
            result = await result if inspect.isawaitable(result) else result
        except Exception as error:
            bounded = await self._bounder.aerror(session_id, call_id, error)
            if bounded is None:
                raise
            raise bounded from error
        if result is None:
            return result
        # The output the SDK takes from each kind of result (its normalize_apply_patch_result).
        if _ApplyPatchResult is not None and isinstance(result, _ApplyPatchResult):
            output = result.output
        elif isinstance(result, Mapping):
            output = result.get("output")
        else:
            output = result
        if output is None:
            return result
        preview = await self._bounder.atext(session_id, call_id, _as_shown(output))
        if preview is None:
            return result
        if _ApplyPatchResult is not None and isinstance(result, _ApplyPatchResult):
            return _ApplyPatchResult(status=result.status, output=preview)
        if isinstance(result, Mapping):
            return {**result, "output": preview}
        return preview


def _local_bound(tool: Any, bounder: Bounder, session_id: Optional[str], owner: object) -> Any:
    """A copy of ``tool`` with its output bounded when it is a local tool other than a function tool
    (its name, description and format kept; the original left as it was), else ``tool`` itself: a
    hosted tool (a ShellTool with a hosted environment too), whose output the SDK never sees."""
    for kind, attribute, make in (
            (_CustomTool, "on_invoke_tool", _BoundedCustomInvoker),
            (_ShellTool, "executor", lambda *given: _BoundedShellExecutor(*given, errors_shown=True)),
            (_LocalShellTool, "executor", lambda *given: _BoundedShellExecutor(*given, errors_shown=False)),
            (_ApplyPatchTool, "editor", _BoundedEditor)):
        if kind is None or not isinstance(tool, kind):
            continue
        runner = getattr(tool, attribute, None)
        if runner is None:
            return tool  # run elsewhere (a hosted shell)
        if isinstance(runner, _LocalBounding):
            tool = runner.original  # bound again: anew from the tool as it was, into this call's store
        copied = copy.copy(tool)
        setattr(copied, attribute, make(tool, bounder, session_id, owner))
        return copied
    return tool


def bound(tools: Iterable[Tool], store: Optional[ToolOutputStore] = None, *,
          session_id: Optional[str] = None) -> list[Tool]:
    """The given tools with every local tool's result bounded, plus ``read`` and ``grep``.

    Each ``FunctionTool`` is copied with its ``on_invoke_tool`` wrapped, and
    so is each other tool run on the application's side whose output the SDK
    sends the model as text: a ``CustomTool`` (its ``on_invoke_tool``), a
    ``ShellTool`` with a local executor and a ``LocalShellTool`` (the
    executor), an ``ApplyPatchTool`` (its editor, each operation's output);
    their names, descriptions and formats are kept, and the originals are left
    as they were.  Hosted tools (a hosted ``ShellTool`` too), whose results the
    SDK never sees, and a ``ComputerTool`` (a screenshot for the model) pass as
    they are.  A result within the store's limits reaches the
    model untouched and nothing is stored; a larger one is stored whole and the
    model gets its preview with the marker naming ``tool-output://ID``.  A
    result that is not text is bounded as the SDK shows it, ``str(result)``:
    stored as its JSON text (a pydantic model or dataclass as pydantic writes
    it) when that is over the limits, else as ``str(result)`` when that is (a
    pydantic model's excluded field, bytes' repr), and as ``str(result)`` when
    it has no JSON; a hosted program's call (programmatic tool calling) gets
    and bounds pydantic's JSON.  Output items (a
    ``ToolOutputText``, image or file, or a list of them) are bounded as the
    SDK sends them: each text item on its own, images and files untouched.  A
    call whose output becomes the run's ``final_output`` (an agent with
    ``tool_use_behavior="stop_on_first_tool"``, or a tool its ``StopAtTools``
    names) passes whole, as the tool returned it.  A local tool other than a
    function tool is bounded as the SDK sends its output: a custom tool's and a
    text shell result as ``str()``, a ``ShellResult``'s commands' stdout and
    stderr together (one preview in the first of them, the others emptied, the
    outcomes kept), and the text of an exception the SDK shows the model (its
    type kept).

    :param tools: the agent's tools (``function_tool`` results and any other ``Tool``).
    :param store: where outputs are stored; the default ``ToolOutputStore()`` when None.
    :param session_id: the session every call uses; when None, each run's
        thread (``RunConfig.group_id``), else the run's trace, else the agent.
    :raises TypeError: ``store`` or ``session_id`` of the wrong type.
    :raises ValueError: an empty ``session_id``, or a function or local tool of the caller's named ``read``
        or ``grep`` (by its qualified name: a ``tool_namespace``'s ``fs.read`` is taken).
    """
    store = open_store(store)
    session_id = optional_session_id(session_id)
    bounder = Bounder(store)
    owner = _Owner()
    result: list[Tool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool) and getattr(tool, "_overspill_paging", False):
            continue  # bound() of a bound list: its paging tools are made anew below
        if isinstance(tool, FunctionTool) and _takes_a_paging_name(tool):
            raise ValueError(f"a tool named {tool.name!r} is already given; bound() adds its own read and grep")
        if isinstance(tool, FunctionTool):
            if isinstance(tool.on_invoke_tool, _BoundedInvoker):
                # Bound again: bound anew from the tool as it was, so its outputs go to this call's store and
                # session, which this call's read and grep page.
                tool = tool.on_invoke_tool.original
            tool = _wrapped(tool, bounder, session_id, owner)
        else:
            bounded = _local_bound(tool, bounder, session_id, owner)
            if bounded is not tool and _takes_a_paging_name(bounded):  # (a custom tool, say: the model's namespace)
                raise ValueError(f"a tool named {bounded.name!r} is already given; bound() adds its own read and grep")
            tool = bounded
        result.append(tool)
    result.extend(_paging_tool(tool, session_id, owner) for tool in paging_tools(store))
    return result


def _takes_a_paging_name(tool: Any) -> bool:
    """Whether the model calls ``tool`` by the name of overspill's ``read`` or ``grep``: its qualified name,
    by which the SDK tells tools apart (``fs.read`` for a function tool in a ``tool_namespace``, called
    apart from a top-level ``read``), else its name (an MCP tool, a custom tool)."""
    name = getattr(tool, "qualified_name", None)
    return (name if isinstance(name, str) and name else getattr(tool, "name", None)) in PAGING_TOOLS


class _Owner:
    """Stands for one bound() call: the session of a call outside any run and agent."""


class _BoundedServer(MCPServer):
    """An ``MCPServer`` whose tool results are bounded; everything else is the wrapped server's.

    The SDK calls a server's tool without its run context, but first asks the server's
    ``tool_meta_resolver`` for the call's ``_meta``, with that context: the resolver given here notes it
    (then asks the wrapped server's own, if any), so the call is bounded in the run's session and under
    the model's call id, as function tools are.
    """

    def __init__(self, server: MCPServer, bounder: Bounder, session_id: Optional[str], owner: object) -> None:
        # The base initialiser is not run: every attribute it would set is read from the wrapped server.
        self.__dict__["_overspill_server"] = server
        self.__dict__["_overspill_bounder"] = bounder
        self.__dict__["_overspill_session_id"] = session_id
        self.__dict__["_overspill_owner"] = owner
        # The server's output guardrails and custom data extractor see a bounded call's whole result.
        self.__dict__["_overspill_whole"] = _WholeOutputs()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_overspill_server"], name)

    @property
    def name(self) -> str:
        return self._overspill_server.name

    async def connect(self) -> None:
        await self._overspill_server.connect()

    async def cleanup(self) -> None:
        await self._overspill_server.cleanup()

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped server's tools, refused when one of them takes the name of overspill's ``read`` or
        ``grep`` (as ``bound`` refuses such a function tool): the SDK would keep one tool of the name and
        only log the collision, so the model would lose the server's tool or overspill's.

        :raises ValueError: a tool named ``read`` or ``grep``, unless the agent the tools are listed for
            prefixes MCP tools' names with their server's (``mcp_config`` ``include_server_in_tool_names``).
        """
        tools = await self._overspill_server.list_tools(*args, **kwargs)
        agent = args[1] if len(args) > 1 else kwargs.get("agent")
        mcp_config = getattr(agent, "mcp_config", None)
        if not (isinstance(mcp_config, Mapping) and mcp_config.get("include_server_in_tool_names")):
            for tool in tools:
                if _takes_a_paging_name(tool):
                    raise ValueError(f"the MCP server {self.name!r} has a tool named {tool.name!r}; bound() adds "
                                     f"its own read and grep (leave the server's tool out with its tool_filter, or "
                                     f"give the agent mcp_config={{'include_server_in_tool_names': True}})")
        return tools

    async def list_prompts(self, *args: Any, **kwargs: Any) -> Any:
        return await self._overspill_server.list_prompts(*args, **kwargs)

    async def get_prompt(self, *args: Any, **kwargs: Any) -> Any:
        return await self._overspill_server.get_prompt(*args, **kwargs)

    async def list_resources(self, *args: Any, **kwargs: Any) -> Any:
        return await self._overspill_server.list_resources(*args, **kwargs)

    async def list_resource_templates(self, *args: Any, **kwargs: Any) -> Any:
        return await self._overspill_server.list_resource_templates(*args, **kwargs)

    async def read_resource(self, *args: Any, **kwargs: Any) -> Any:
        return await self._overspill_server.read_resource(*args, **kwargs)

    @property
    def tool_meta_resolver(self) -> Any:
        inner = getattr(self._overspill_server, "tool_meta_resolver", None)

        def resolve(meta_context: Any) -> Any:
            _MCP_CALL.set((meta_context.tool_name, meta_context.run_context))
            return None if inner is None else inner(meta_context)

        return resolve

    def _get_failure_error_function(self, agent_failure_error_function: Any) -> Any:
        """The failure error function the SDK formats a failed call of the server's tools with (the
        server's own, else the agent's ``mcp_config`` one, else the SDK's default: as the wrapped server
        chooses), its text bounded (``_BoundedFailure``).  None, which lets the error end the run, stays
        None, and so does the SDK's default: it shows the model one fixed line, never the error, and the
        SDK knows it by identity to keep the error's text out of its traces too.

        The SDK asks the server for it (a private method) when it makes function tools of the server's
        tools, and formats an error raised out of ``call_tool`` with it; an SDK without the method gets
        the wrapped server's errors as they are."""
        choose = getattr(self._overspill_server, "_get_failure_error_function", None)
        chosen = agent_failure_error_function if choose is None else choose(agent_failure_error_function)
        if chosen is None or chosen is default_tool_error_function:
            return chosen
        return _BoundedFailure(chosen, self)

    @property
    def tool_output_guardrails(self) -> Any:
        """The wrapped server's output guardrails, each run on a bounded call's whole output (as the SDK
        would have shown it) rather than the preview, as ``bound`` does for a function tool's."""
        guardrails = getattr(self._overspill_server, "tool_output_guardrails", None)
        if not guardrails:
            return guardrails
        return [_OnWholeOutput(guardrail, self._overspill_whole, lambda kept: kept[1]) for guardrail in guardrails]

    @property
    def custom_data_extractor(self) -> Any:
        """The wrapped server's custom data extractor, given a bounded call's own ``structured_content``
        (the MCP result's, which the model is shown as the preview instead); ``tool_output`` stays what
        the model is shown, as the SDK documents it."""
        extractor = getattr(self._overspill_server, "custom_data_extractor", None)
        if extractor is None:
            return None
        whole = self._overspill_whole

        async def extract(context: Any) -> Any:
            kept = whole.take(getattr(context, "run_context", None), False)
            if kept is not _NOT_KEPT:
                structured = _structured_content(kept[0])
                context = replace(context, structured_content=(
                    MappingProxyType(copy.deepcopy(structured)) if isinstance(structured, dict) else None))
            found = extractor(context)
            return await found if inspect.isawaitable(found) else found

        return extract

    async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
        result = await self._overspill_server.call_tool(*args, **kwargs)
        # The run's context as the resolver noted it for this call (the SDK runs the call in a task made
        # after asking); outside a run, or for a call made directly, the run's trace or this bound_servers().
        noted = _MCP_CALL.get()
        name = args[0] if args else kwargs.get("tool_name")
        context = noted[1] if noted is not None and noted[0] == name else None
        if _mcp_final_output(context):
            return result  # the run's final output (as for a function tool)
        session_id = _session(self._overspill_session_id, context, self._overspill_owner)
        structured = bool(getattr(self._overspill_server, "use_structured_content", False))
        bounded = await _bound_call_result(self._overspill_bounder, session_id, _call_id(context), result, structured)
        if bounded is not result:
            readers = (len(getattr(self._overspill_server, "tool_output_guardrails", None) or ())
                       + (getattr(self._overspill_server, "custom_data_extractor", None) is not None))
            if readers:
                self._overspill_whole.keep(context, (result, _sdk_output(result, structured)), readers)
        return bounded


def _mcp_final_output(context: Any) -> bool:
    """Whether the output of the MCP tool call of ``context`` (its ``ToolContext``; None when not known)
    is the run's final output (``_final_output``, by the tool's name or its namespaced name)."""
    tool_name = getattr(context, "tool_name", None)
    namespace = getattr(context, "tool_namespace", None)
    return bool(tool_name) and _final_output(context, (tool_name, f"{namespace}.{tool_name}" if namespace else None))


class _BoundedFailure:
    """The failure error function the SDK formats a failed call of a bound server's tool with, with the
    text it makes bounded as a function tool's failure text is (``_bound_failure``, as ``_BoundedInvoker``
    bounds the text the SDK's failure handling returns inside the invoker it wraps): an MCP tool's error
    is raised out of ``call_tool`` and formatted by the SDK afterwards, so it is bounded here.  The
    server's output guardrails check the whole text; a call whose output is the run's final output
    passes whole, as a function tool's does."""

    def __init__(self, formatter: Callable[[Any, Exception], Any], server: "_BoundedServer") -> None:
        self.formatter = formatter  # the server's own or the agent's mcp_config one
        self._server = server

    async def __call__(self, context: Any, error: Exception) -> Any:
        text = self.formatter(context, error)
        text = await text if inspect.isawaitable(text) else text
        if _mcp_final_output(context):
            return text
        server = self._server
        readers = len(getattr(server._overspill_server, "tool_output_guardrails", None) or ())
        return await _bound_failure(server._overspill_bounder,
                                    _session(server._overspill_session_id, context, server._overspill_owner),
                                    # (kept as call_tool keeps a result and what the SDK shows of it: no result here)
                                    context, text, (None, text), server._overspill_whole, readers)


def _structured_content(result: Any) -> Any:
    """An MCP result's structured content (the MCP SDK's attribute name of either major version)."""
    found = getattr(result, "structured_content", None)
    return found if found is not None else getattr(result, "structuredContent", None)


def _shown_structure(result: Any, structured: bool) -> Optional[str]:
    """The text the SDK shows the model of an MCP ``CallToolResult``'s structured content
    (``MCPUtil.invoke_mcp_tool``): ``json.dumps`` of it, non-ASCII as ``\\uXXXX`` escapes, when the server
    shows that (``structured``) and the result is no error; else None (the SDK shows its blocks)."""
    content = _structured_content(result)
    is_error = getattr(result, "is_error", getattr(result, "isError", False))
    return json.dumps(content) if structured and content and not is_error else None


def _sdk_output(result: Any, structured: bool) -> Any:
    """The tool output the SDK makes of an MCP ``CallToolResult`` (``MCPUtil.invoke_mcp_tool``): its
    structured content as JSON text when the server shows that (``_shown_structure``), else one
    item per block (text; an image as a data URL; any other block as its JSON text), one item alone."""
    shown = _shown_structure(result, structured)
    if shown is not None:
        return shown
    items: list[dict[str, str]] = []
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            items.append({"type": "text", "text": block.text})
        elif kind == "image":
            mime = getattr(block, "mime_type", None) or getattr(block, "mimeType", None)
            items.append({"type": "image", "image_url": f"data:{mime};base64,{block.data}"})
        else:
            items.append({"type": "text", "text": block.model_dump_json()})
    return items[0] if len(items) == 1 else items


def _shown_text(block: Any) -> Optional[str]:
    """The text the SDK shows the model for an MCP content block: a text block's text, any block but an
    image as its JSON (the SDK's own fallback); None for an image."""
    kind = getattr(block, "type", None)
    if kind == "text" and isinstance(getattr(block, "text", None), str):
        return block.text
    if kind == "image":
        return None
    return block.model_dump_json()


async def _bound_call_result(bounder: Bounder, session_id: str, call_id: str, result: Any,
                             structured: bool) -> Any:
    """An MCP ``CallToolResult`` bounded as the SDK shows it to the model: its structured content, when
    the server shows that instead (and the result is no error), as the very JSON text the SDK shows
    (``_shown_structure``: measured and stored so), else every block but images as text,
    taken together: stored as one text when together they are over the limits, and then shown as one
    text block where the first of them stood, images in place."""
    from mcp.types import TextContent

    shown = _shown_structure(result, structured)
    if shown is not None:
        # (its \uXXXX escapes are 6 to 12 bytes a character: the UTF-8 form would fit where this does not)
        bounded = await bounder.atext(session_id, call_id, shown)
        if bounded is None:
            return result
        # A preview is not the declared structure: the model is shown it as text instead.
        return result.model_copy(update={"structured_content": None,
                                         "content": [TextContent(type="text", text=bounded)]})
    content = list(getattr(result, "content", None) or [])

    def first(block: Any, preview: str) -> Any:
        return (block.model_copy(update={"text": preview}) if getattr(block, "type", None) == "text"
                else TextContent(type="text", text=preview))

    bounded = await bounder.aitems(session_id, call_id, content, [_shown_text(block) for block in content], first)
    return result if bounded is None else result.model_copy(update={"content": bounded})


def bound_servers(servers: Iterable[MCPServer], store: Optional[ToolOutputStore] = None, *,
                  session_id: Optional[str] = None) -> list[MCPServer]:
    """MCP servers whose tools' results are bounded as ``bound`` bounds function tools.

    Each server is wrapped (connect, list and clean up as usual); a text block
    of a tool result over the limits is stored and replaced by its preview, and so
    is the text the model is shown for a failed call (what the server's
    ``failure_error_function``, else the agent's ``mcp_config`` one, makes of the
    error), as a function tool's failure text is.  The
    server's output guardrails check a bounded result whole (as the SDK would
    have shown it), and its custom data extractor gets the result's own
    structured content.
    Give the agent ``bound(...)``'s ``read`` and ``grep`` (with the same store
    and ``session_id``) so the model can page what was stored.  A server
    already bound is bound anew, into this call's store and session.

    A server with a tool named ``read`` or ``grep`` is refused with ``ValueError`` when its tools are
    listed for an agent (the run fails there), unless the agent's ``mcp_config`` sets
    ``include_server_in_tool_names``: the SDK would keep one tool of the name.

    :raises TypeError: ``store`` or ``session_id`` of the wrong type, or a server that is not an ``MCPServer``.
    :raises ValueError: an empty ``session_id``.
    """
    store = open_store(store)
    session_id = optional_session_id(session_id)
    bounder = Bounder(store)
    owner = _Owner()
    wrapped: list[MCPServer] = []
    for server in servers:
        if not isinstance(server, MCPServer):
            raise TypeError(f"bound_servers takes MCPServer objects, not {type(server).__name__}")
        if isinstance(server, _BoundedServer):
            # Bound again: bound anew from the server as it was, so its results go to this call's store and
            # session, which the read and grep of a bound() with them page (as bound() does for its tools).
            server = server._overspill_server
        wrapped.append(_BoundedServer(server, bounder, session_id, owner))
    return wrapped


class _BoundedHandoffFailure(_LocalBounding):
    """The failure error function of a handoff ``bound_handoffs`` copied: the handoff's own (``original``),
    the text it makes of the error bounded as an MCP tool's failure text is (``_bound_failure``, as
    ``_BoundedFailure`` does).  The SDK sends that text to the calling model as the output of its
    ``transfer_to_X`` call; a failed handoff is never the run's final output (the calling agent runs
    again), and a handoff has no output guardrails, so nothing is kept for one.

    The SDK gives it the run's ``RunContextWrapper``, which has neither the model's call id (a new one is
    used) nor the run config: that is found on the stack (``_run_config``), so that the text is stored in
    the session the run's ``read`` pages (the run's ``group_id``)."""

    def __init__(self, original: Callable[[Any, Exception], Any], bounder: Bounder, session_id: Optional[str],
                 owner: object) -> None:
        super().__init__(original, bounder, session_id, owner)
        self._whole = _WholeOutputs()  # (no readers: never holds anything)

    async def __call__(self, context: Any, error: Exception) -> Any:
        # Looked for before any await, on the stack of the SDK code that calls this (it holds the run config).
        session_id = self._session_of(context, self._run_config(context))
        text = self.original(context, error)
        text = await text if inspect.isawaitable(text) else text
        return await _bound_failure(self._bounder, session_id, context, text, text, self._whole, 0)


def _handoff_bound(given: Handoff, bounder: Bounder, session_id: Optional[str], owner: object) -> Handoff:
    """A copy of ``given`` whose failure error function bounds its text (``_BoundedHandoffFailure``), else
    ``given`` itself: no failure error function (None lets the error end the run; an SDK before 0.25 has
    no such field), or the SDK's default (one fixed line, never the error, which the SDK knows by
    identity)."""
    formatter = getattr(given, "failure_error_function", None)
    if isinstance(formatter, _BoundedHandoffFailure):
        # Bound again: bound anew from the handoff's own function, into this call's store and session.
        formatter = formatter.original
    elif formatter is None or formatter is default_tool_error_function:
        return given
    copied = copy.copy(given)  # (not dataclasses.replace, which would drop the fields not set by __init__)
    copied.failure_error_function = _BoundedHandoffFailure(formatter, bounder, session_id, owner)
    return copied


def bound_handoffs(handoffs: Iterable[Union[Handoff, Agent]], store: Optional[ToolOutputStore] = None, *,
                   session_id: Optional[str] = None) -> list[Union[Handoff, Agent]]:
    """Handoffs whose failure text is bounded as ``bound`` bounds a function tool's.

    From openai-agents 0.25 a handoff may fail to the calling model: when its
    ``on_handoff`` raises (or the model's arguments do not validate), the SDK
    sends the model, as the output of its ``transfer_to_X`` call, the text the
    handoff's ``failure_error_function`` makes of the error.  Each handoff with
    a failure error function of the application's is copied with that function
    wrapped (the original left as it was): a text within the store's limits
    reaches the model untouched and nothing is stored; a larger one is stored
    whole and the model gets its preview with the marker (when the store cannot
    keep it, a preview whose marker says "output not stored" and why).  Give
    the agent ``bound(...)``'s ``read`` and ``grep`` (with the same store and
    ``session_id``) so the model can page what was stored.  A handoff with no
    failure error function (the error ends the run) or the SDK's default one
    (one fixed line) is returned as it is, and so is an ``Agent``, unless the
    SDK's ``handoff(agent)``, which ``Agent(handoffs=...)`` makes of it, has a
    failure error function (it is then that handoff, bound).  A handoff already
    bound is bound anew, into this call's store and session.  On an SDK without
    ``Handoff.failure_error_function`` (before 0.25) the handoffs are returned as
    they are.

    :param handoffs: the agent's handoffs: ``Handoff`` objects and ``Agent`` objects, as
        ``Agent(handoffs=...)`` takes them.
    :param store: where failure texts are stored; the default ``ToolOutputStore()`` when None.
    :param session_id: the session every failure uses; when None, the run's, as ``bound`` finds it.
    :raises TypeError: ``store`` or ``session_id`` of the wrong type, or a handoff that is neither a
        ``Handoff`` nor an ``Agent``.
    :raises ValueError: an empty ``session_id``.
    """
    store = open_store(store)
    session_id = optional_session_id(session_id)
    bounder = Bounder(store)
    owner = _Owner()
    result: list[Union[Handoff, Agent]] = []
    for given in handoffs:
        if isinstance(given, Handoff):
            result.append(_handoff_bound(given, bounder, session_id, owner))
        elif isinstance(given, Agent):
            # The SDK makes such an agent its default handoff(agent) on each turn: made here only when that has
            # a failure error function to bound, so that an agent stays as it was given otherwise.
            made = _sdk_handoff(given)
            bounded = _handoff_bound(made, bounder, session_id, owner)
            result.append(given if bounded is made else bounded)
        else:
            raise TypeError(f"bound_handoffs takes Handoff objects and Agents, not {type(given).__name__}")
    return result
