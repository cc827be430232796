"""smolagents adapter: ``ToolCallingAgent(tools=bound(tools), ...)``, or ``BoundedToolCallingAgent``.

Needs the ``smolagents`` extra (``pip install 'overspill[smolagents]'``).

``bound`` wraps each ``Tool`` so its result, where an agent shows it to the
model (a ``ToolCallingAgent``'s call), is bounded by ``ToolOutputStore.truncate``
(an ``AgentText`` or any other ``str`` subclass is bounded as its characters
and comes back as the same type when it fits), and adds ``read`` and
``grep``.  In a ``CodeAgent``'s code a tool's value reaches the code as it
is (the code, not the model, takes it: a dict stays a dict); ``read`` and
``grep`` are there for what was stored.  ``BoundedToolCallingAgent`` instead bounds in its
``execute_tool_call``, so every tool and managed agent it is given is covered
without wrapping, and adds ``read`` and ``grep`` itself.

A tool that raises reaches the model as smolagents' error text; the text of
the exception (``bound``) or the whole error message (``BoundedToolCallingAgent``)
is bounded like a result, the exception keeping its type.

smolagents has no run or thread id: the session is one per agent (per
``bound`` list, which belongs to one agent), and each call's id is made.
Image and audio results pass as they are.

An agent with overspill's tools cannot be saved (``save``, ``to_dict``,
``push_to_hub``, a remote executor): smolagents saves a tool as the source of
its class, and these hold a live store and session (``_not_saved``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from ._extra import needs_extra

with needs_extra("smolagents"):
    import PIL.Image
    from smolagents import Tool, ToolCallingAgent
    from smolagents.agent_types import AgentAudio, AgentText
    from smolagents.utils import AgentError

from ..store import ToolOutputStore
from ..tools.read import page_within
from ._core import PAGING_TOOLS, Bounder, PagingTool, new_call_id, new_session_id, open_store, paging_tools

__all__ = ["BoundedToolCallingAgent", "bound"]

# Results of these output types are media for the model, never text to bound.
_MEDIA_TYPES = ("image", "audio")
_FINAL_ANSWER = "final_answer"
# smolagents' own cuts of what a CodeAgent shows the model, where a version does not name them: the step's
# value (utils.MAX_LENGTH_TRUNCATE_CONTENT) and what its code prints (local_python_executor.DEFAULT_MAX_LEN_OUTPUT).
_FALLBACK_VALUE_CUT = 20_000
_FALLBACK_PRINT_CUT = 50_000


def _framework_cut(module: str, name: str, fallback: int) -> int:
    """smolagents' ``module.name``, a length in characters beyond which it cuts the middle out of what it
    shows the model; ``fallback`` when this version has no such positive int."""
    import importlib

    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return fallback
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else fallback


def _shown_characters() -> int:
    """The most characters of a ``read`` answer that every smolagents agent shows the model whole.

    A ``CodeAgent`` shows the step's value cut to ``MAX_LENGTH_TRUNCATE_CONTENT`` characters and what the
    code prints cut to ``DEFAULT_MAX_LEN_OUTPUT`` (print adds a newline), each by taking its middle out:
    a longer page would lose bytes while its closing hint named an offset past them.  A
    ``ToolCallingAgent`` shows the whole answer; the same page serves it.
    """
    value = _framework_cut("smolagents.utils", "MAX_LENGTH_TRUNCATE_CONTENT", _FALLBACK_VALUE_CUT)
    printed = _framework_cut("smolagents.local_python_executor", "DEFAULT_MAX_LEN_OUTPUT", _FALLBACK_PRINT_CUT)
    return min(value, printed - 1)


#: The most bytes of a ``read`` page (its default and the cap of a ``limit`` asked for): its answer, hint
#: included, fits what smolagents shows the model (``_shown_characters``).
_PAGE = page_within(_shown_characters())


def _inputs(parameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A JSON schema's properties in smolagents' ``inputs`` form (optional ones nullable)."""
    required = set(parameters.get("required", ()))
    inputs = {}
    for name, rule in parameters["properties"].items():
        entry = {"type": rule["type"], "description": rule.get("description", name)}
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


def _bounded_value(bounder: Bounder, session_id: str, value: Any) -> Any:
    """A tool result bounded; a ``str`` subclass that is cut comes back as its own type where it can.

    An image or audio value (a tool of output type ``any`` may return one) passes as it is, as for the
    ``image`` and ``audio`` output types: the agent shows it to the model as media, never as text (so it
    is not "a value that cannot be serialised" either, and gets no warning).

    A ``ToolCallingAgent`` shows the model ``str(result)`` of any result that is not media, so that is
    the text the model would get whole: a value JSON cannot serialise (rows holding a ``datetime``) is
    bounded as ``str(value)``, and so is one whose raw or JSON text fits but whose ``str()`` does not
    (bytes, shown as their repr at up to four characters a byte) (``Bounder.value``'s ``shown``).
    """
    # smolagents needs Pillow (its agent types import it); an AgentImage is a PIL image, an AgentAudio a str.
    if isinstance(value, (PIL.Image.Image, AgentAudio)):
        return value
    bounded = bounder.value(session_id, new_call_id(), value, shown=str)
    if bounded is value or not isinstance(value, AgentText):
        return bounded
    return AgentText(bounded)


def _not_saved(tool: Tool) -> ValueError:
    """The error saving an overspill tool raises (as smolagents refuses to save its own wrappers).

    smolagents saves a tool (``to_dict``, and through it ``save``, ``push_to_hub`` and the remote
    executors) as the source code of its class, made again without arguments when loaded; a bound tool
    and overspill's ``read`` and ``grep`` are made of live objects (the store, the session they share,
    the wrapped tool) that no source code carries.  Saving the wrapped tool instead would write an agent
    that no longer bounds anything, beside a ``read`` and ``grep`` of a session nothing writes to.
    """
    kind = "the bound tool" if isinstance(tool, _BoundedTool) else "overspill's tool"
    return ValueError(f"{kind} {tool.name!r} cannot be saved: smolagents saves a tool as the source of its "
                      f"class, made again without arguments, and this one holds a live store and session; "
                      f"save the agent with its own tools, and bound them again once it is loaded")


class _PagingTool(Tool):
    """``read`` or ``grep`` as a smolagents ``Tool``, in one session."""

    skip_forward_signature_validation = True  # the inputs come from the schemas; forward takes them in their order
    output_type = "string"

    def __init__(self, tool: PagingTool, session_id: str) -> None:
        self.name = tool.name
        self.description = tool.description
        self.inputs = _inputs(tool.parameters)
        self._tool = tool
        self._session_id = session_id
        super().__init__()

    def forward(self, *args: Any, **kwargs: Any) -> str:
        # Positional arguments in the order of ``inputs``, as the code prompt shows the signature
        # (``read(resource, offset, limit)``); too many is the model's error, said in one line.
        names = list(self.inputs)
        if len(args) > len(names):
            return f"{self.name} takes at most {len(names)} arguments ({', '.join(names)}), not {len(args)}"
        given = dict(zip(names, args))
        twice = sorted(set(given) & set(kwargs))
        if twice:
            return f"{self.name} got {', '.join(twice)} both by position and by name"
        chosen = {key: value for key, value in {**given, **kwargs}.items() if value is not None}
        # A page framed: a ToolCallingAgent shows the model str(result).strip(), which would take the
        # whitespace a page begins or ends with.  (grep takes neither: its listing is bounded by the store's
        # limits, and it begins with an offset and ends with its count.)
        return self._tool.run(self._session_id, new_call_id(), chosen, page=_PAGE, framed=True).output

    def to_dict(self) -> dict:
        """Refused: see ``_not_saved``.

        :raises ValueError: always.
        """
        raise _not_saved(self)


class _BoundedTool(Tool):
    """A ``Tool`` whose results are bounded; its name, description and inputs are the wrapped tool's."""

    skip_forward_signature_validation = True  # forward passes everything on to the wrapped tool

    def __init__(self, tool: Tool, bounder: Bounder, session_id: str) -> None:
        self.name = tool.name
        self.description = tool.description
        self.inputs = tool.inputs
        self.output_type = tool.output_type
        self.output_schema = getattr(tool, "output_schema", None)
        self.wrapped = tool
        self._bounder = bounder
        self._session_id = session_id
        super().__init__()

    def __call__(self, *args: Any, sanitize_inputs_outputs: bool = False, **kwargs: Any) -> Any:
        # An agent that shows the result to the model calls a tool with sanitize_inputs_outputs=True
        # (ToolCallingAgent); a CodeAgent's code calls it without: the code, not the model, takes that
        # value (a dict stays a dict), and what the code prints is the agent's own observation.
        try:
            result = self.wrapped(*args, sanitize_inputs_outputs=sanitize_inputs_outputs, **kwargs)
        except Exception as error:
            # The agent shows the model the exception's text (a ToolCallingAgent's "Error executing tool
            # ...", a CodeAgent's "Code execution failed ... due to"): bounded, its type kept.
            bounded = self._bounder.error(self._session_id, new_call_id(), error)
            if bounded is None:
                raise
            raise bounded from error
        if not sanitize_inputs_outputs or self.output_type in _MEDIA_TYPES:
            return result
        return _bounded_value(self._bounder, self._session_id, result)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.forward(*args, **kwargs)

    def to_dict(self) -> dict:
        """Refused: see ``_not_saved``.

        :raises ValueError: always.
        """
        raise _not_saved(self)


def _paging(store: ToolOutputStore, session_id: str) -> list[Tool]:
    return [_PagingTool(tool, session_id) for tool in paging_tools(store)]


def bound(tools: Iterable[Tool], store: Optional[ToolOutputStore] = None) -> list[Tool]:
    """The given tools with their results bounded, plus ``read`` and ``grep``, for one agent.

    A result within the store's limits reaches the model untouched and
    nothing is stored; a larger one is stored whole and the model gets its
    preview with the marker naming ``tool-output://ID``.  A result that is not
    text is stored as its JSON text (bytes as they are); one that cannot be
    serialised, or whose ``str(value)`` (the text the agent shows the model of
    it: bytes' repr) is over the limits where its own text is not, is bounded
    as ``str(value)`` (one whose texts fit passes unchanged, the same object).  The list is one
    session: give each agent its own ``bound(...)``.

    :param store: where outputs are stored; the default ``ToolOutputStore()`` when None.
    :raises TypeError: ``store`` is not a ``ToolOutputStore``, or an item is not a smolagents ``Tool``.
    :raises ValueError: a tool of the caller's named ``read`` or ``grep``.
    """
    store = open_store(store)
    bounder = Bounder(store)
    session_id = new_session_id()
    result: list[Tool] = []
    for tool in tools:
        if isinstance(tool, _PagingTool):
            continue  # bound() of a bound list: its paging tools are made anew below
        if not isinstance(tool, Tool):
            raise TypeError(f"bound takes smolagents Tool objects, not {type(tool).__name__}")
        if tool.name in PAGING_TOOLS:
            raise ValueError(f"a tool named {tool.name!r} is already given; bound() adds its own read and grep")
        if isinstance(tool, _BoundedTool):
            tool = tool.wrapped
        result.append(tool if tool.name == _FINAL_ANSWER else _BoundedTool(tool, bounder, session_id))
    return result + _paging(store, session_id)


class BoundedToolCallingAgent(ToolCallingAgent):
    """A ``ToolCallingAgent`` whose every tool call result (managed agents' included) is bounded.

    Takes the ``ToolCallingAgent`` arguments plus ``store`` (the default
    ``ToolOutputStore()`` when None), and adds ``read`` and ``grep`` to its
    tools.  The agent is one session.  ``final_answer`` passes untouched.

    :raises TypeError: ``store`` is not a ``ToolOutputStore``.
    :raises ValueError: a tool of the caller's named ``read`` or ``grep``.
    """

    def __init__(self, tools: list[Tool], model: Any, *, store: Optional[ToolOutputStore] = None,
                 **kwargs: Any) -> None:
        store = open_store(store)
        self.overspill_session = new_session_id()
        self._overspill_bounder = Bounder(store)
        tools = list(tools)
        for tool in tools:
            if getattr(tool, "name", None) in PAGING_TOOLS and not isinstance(tool, _PagingTool):
                raise ValueError(f"a tool named {tool.name!r} is already given; the agent adds its own read and grep")
        # bound(...) tools are taken as they were: the agent bounds every result in its own session and
        # store, which its read and grep page (the list's own paging tools are left out for the same reason).
        tools = [tool.wrapped if isinstance(tool, _BoundedTool) else tool for tool in tools
                 if not isinstance(tool, _PagingTool)] + _paging(store, self.overspill_session)
        super().__init__(tools, model, **kwargs)

    def execute_tool_call(self, tool_name: str, arguments: Any) -> Any:
        """Run the call as ``ToolCallingAgent`` does, then bound its result.

        Errors propagate as smolagents raises them, so the model sees them as it always does, with
        their message (the tool's error text inside smolagents' own words) bounded like a result.
        """
        try:
            result = super().execute_tool_call(tool_name, arguments)
        except AgentError as error:
            bounded = self._overspill_bounder.error(self.overspill_session, new_call_id(), error)
            if bounded is None:
                raise
            raise bounded from error
        tool = self.tools.get(tool_name)
        if tool_name == _FINAL_ANSWER or isinstance(tool, (_PagingTool, _BoundedTool)) or (
                tool is not None and tool.output_type in _MEDIA_TYPES):
            return result
        return _bounded_value(self._overspill_bounder, self.overspill_session, result)
