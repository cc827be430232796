"""smolagents adapter: ``ToolCallingAgent(tools=bound(tools), ...)``, or ``BoundedToolCallingAgent``.

Managed agents: ``ToolCallingAgent(tools=bound(tools, store), managed_agents=bound_managed_agents(agents, store))``
(``BoundedToolCallingAgent`` bounds its managed agents itself).

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
A managed agent run by its manager on the same store works in the manager's
session for that run (``_session``), a ``CodeAgent`` manager's too, whose code
smolagents runs in a thread of its own (``_run_stacks``): its outputs, and the
markers its report shows the manager (a run summary holds its previews), are
the manager's, which the manager's ``read`` pages.  Image and audio results pass as they are.

An agent with overspill's tools cannot be saved (``save``, ``to_dict``,
``push_to_hub``, a remote executor): smolagents saves a tool as the source of
its class, and these hold a live store and session (``_not_saved``).
"""

from __future__ import annotations

import concurrent.futures.thread
import contextlib
import contextvars
import sys
import threading
from collections.abc import Container, Iterable, Iterator
from types import CodeType, FrameType
from typing import Any, Optional

from ._extra import needs_extra

with needs_extra("smolagents"):
    # (smolagents first: on a machine without the extra, the framework is the module to name)
    from smolagents import MultiStepAgent, Tool, ToolCallingAgent, local_python_executor
    from smolagents.agent_types import AgentAudio, AgentText
    from smolagents.utils import AgentError
    import PIL.Image

from ..store import ToolOutputStore
from ..tools.read import page_within
from ._core import PAGING_TOOLS, Bounder, PagingTool, new_call_id, new_session_id, open_store, paging_tools

__all__ = ["BoundedToolCallingAgent", "bound", "bound_managed_agents"]

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


#: The store and session of the manager whose managed agent is running in this context (``_team_run``), else
#: None.  A context variable: smolagents runs parallel tool calls each in a copy of the caller's context.
_TEAM: contextvars.ContextVar[Optional[tuple[ToolOutputStore, str]]] = contextvars.ContextVar(
    "overspill_smolagents_team", default=None)
#: The same, per thread inside a ``_team_run`` (by ``threading.get_ident()``): a thread's context cannot be
#: read from another thread, and the thread that runs a ``CodeAgent``'s code needs it (``_team``).
_THREAD_TEAMS: dict[int, tuple[ToolOutputStore, str]] = {}
# A concurrent.futures thread pool's task as its worker thread runs it (its ``self.future``).
_TASK_CODE = concurrent.futures.thread._WorkItem.run.__code__
# Where smolagents' executor holds the future of the task running a CodeAgent's code: ThreadPoolExecutor.submit
# (its ``f``) until it returns, then the wrapper of local_python_executor.timeout (its ``future``) until the code
# ends.  Each holds it to its end: reading their locals keeps nothing alive that the frame would have dropped.
_SUBMIT_CODE = concurrent.futures.thread.ThreadPoolExecutor.submit.__code__
_WAIT_CODE: Optional[CodeType]
try:
    _WAIT_CODE = local_python_executor.timeout(1)(lambda: None).__code__
except (AttributeError, TypeError):  # a smolagents without it: no thread is known to wait for a CodeAgent's code
    _WAIT_CODE = None


def _waiting_thread(frame: Optional[FrameType],
                    among: Optional[Container[int]] = None) -> Optional[tuple[int, FrameType]]:
    """The thread (of ``among``'s ids, any when None) waiting for the task of a thread pool that the stack
    ``frame`` is on runs, as its id and innermost frame, else None.

    smolagents' ``LocalPythonExecutor`` runs a ``CodeAgent``'s code, under its time limit, as the task of a
    one-worker thread pool of its own (which copies no context) and waits for its future: what that code calls
    belongs to the agent's run, in the waiting thread.  The link is the task's future itself, held by the thread
    that submitted it (``_submitted``), so it is never a guess: a stack that runs no pool task, or a future that
    not exactly one other thread holds, has none.  A pool of another kind (one a tool's code submits to) is
    not followed: its tasks work in their agent's own session.

    Frames are told apart by their code alone: this stack's task frame and, in each other thread, the one frame
    of smolagents' executor holding a future are the only ones whose locals are read.  On Python before 3.13
    reading a frame's ``f_locals`` stores a snapshot of its locals on it, so an object that thread then drops
    would stay alive as long as the frame; and walking every frame of every thread on each tool call would cost
    milliseconds in a process with many threads (``_team`` passes only the threads running a team).
    """
    task = None
    while frame is not None:
        if frame.f_code is _TASK_CODE:
            task = frame
        frame = frame.f_back
    future = None if task is None else getattr(task.f_locals.get("self"), "future", None)
    if future is None:
        return None
    this = threading.get_ident()
    holders = [(ident, top) for ident, top in sys._current_frames().items()
               if ident != this and (among is None or ident in among) and _submitted(top) is future]
    return holders[0] if len(holders) == 1 else None


def _submitted(frame: Optional[FrameType]) -> Optional[object]:
    """The future that smolagents' executor, innermost on the stack ``frame`` is on, submitted and waits for
    (``_SUBMIT_CODE``, ``_WAIT_CODE``), else None; the locals of that one frame alone are read."""
    inner = None
    while frame is not None:
        if frame.f_code is _WAIT_CODE:
            if inner is not None and inner.f_code is _SUBMIT_CODE:  # still submitting: ``future`` is not yet set
                return inner.f_locals.get("f")
            return frame.f_locals.get("future")
        inner, frame = frame, frame.f_back
    return None


def _run_stacks(frame: FrameType) -> Iterator[tuple[int, FrameType]]:
    """The stacks the run of the code at ``frame`` is on, innermost first, each as its thread's id and innermost
    frame: this thread's from ``frame``, then (while that thread runs a pool's task: a ``CodeAgent``'s code)
    the thread waiting for the task (``_waiting_thread``), and so on (each thread once: a future handed on to
    another thread could otherwise lead back)."""
    stack: Optional[tuple[int, FrameType]] = (threading.get_ident(), frame)
    seen = set()
    while stack is not None and stack[0] not in seen:
        seen.add(stack[0])
        yield stack
        stack = _waiting_thread(stack[1])


def _team() -> Optional[tuple[ToolOutputStore, str]]:
    """The store and session of the manager whose managed agent's run the caller is part of (``_team_run``),
    else None: this context's, or, in the thread running a ``CodeAgent``'s code (which has no copy of the
    agent's context), that of the thread waiting for it, when a team runs in that thread (``_waiting_thread``
    among ``_THREAD_TEAMS``: a managed agent's run, at any depth of managers, starts in the thread that waits
    for the code calling it)."""
    team = _TEAM.get()
    if team is not None or not _THREAD_TEAMS:  # (no managed agent runs anywhere: no stack to look at)
        return team
    waiting = _waiting_thread(sys._getframe(1), _THREAD_TEAMS)
    return None if waiting is None else _THREAD_TEAMS.get(waiting[0])


def _session(store: ToolOutputStore, session_id: str) -> str:
    """The session in which overspill's tools of an agent on ``store`` (whose own is ``session_id``) bound
    and page now: the manager's while the agent runs as a managed agent of a manager on the same store
    (``_team_run``; ``_team``, also in a ``CodeAgent``'s code), so that a marker its report shows the
    manager (a run summary holds its previews) names a resource the manager's ``read`` pages; else its own.
    Two managers' runs, and an agent run on its own, stay apart."""
    team = _team()
    return team[1] if team is not None and team[0] is store else session_id


@contextlib.contextmanager
def _team_run(store: ToolOutputStore, session_id: str) -> Iterator[None]:
    """While a manager on ``store`` runs one of its managed agents: the agents under it on the same store work
    in the manager's session, ``session_id`` (``_session``)."""
    ident = threading.get_ident()
    token = _TEAM.set((store, session_id))
    outer = _THREAD_TEAMS.get(ident)
    _THREAD_TEAMS[ident] = (store, session_id)
    try:
        yield
    finally:
        if outer is None:
            _THREAD_TEAMS.pop(ident, None)
        else:
            _THREAD_TEAMS[ident] = outer
        _TEAM.reset(token)


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
        session_id = _session(self._tool.store, self._session_id)
        return self._tool.run(session_id, new_call_id(), chosen, page=_PAGE, framed=True).output

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
        session_id = _session(self._bounder.store, self._session_id)
        try:
            result = self.wrapped(*args, sanitize_inputs_outputs=sanitize_inputs_outputs, **kwargs)
        except Exception as error:
            # The agent shows the model the exception's text (a ToolCallingAgent's "Error executing tool
            # ...", a CodeAgent's "Code execution failed ... due to"): bounded, its type kept.
            bounded = self._bounder.error(session_id, new_call_id(), error)
            if bounded is None:
                raise
            raise bounded from error
        if not sanitize_inputs_outputs or self.output_type in _MEDIA_TYPES:
            return result
        return _bounded_value(self._bounder, session_id, result)

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
    session: give each agent its own ``bound(...)``.  A managed agent is no
    tool: give it through ``bound_managed_agents``, with the same store.

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
            also = ("; give managed agents through bound_managed_agents"
                    if isinstance(tool, (MultiStepAgent, _BoundedAgent)) else "")
            raise TypeError(f"bound takes smolagents Tool objects, not {type(tool).__name__}{also}")
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
    tools.  The agent is one session (its managed agents on the same store
    work in it while it runs them; run as a managed agent itself, it works in
    its manager's).  ``final_answer`` passes untouched.

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
        # bound_managed_agents(...) agents too: the agent bounds their reports as it does every result.
        if kwargs.get("managed_agents"):
            kwargs["managed_agents"] = [agent.wrapped if isinstance(agent, _BoundedAgent) else agent
                                        for agent in kwargs["managed_agents"]]
        super().__init__(tools, model, **kwargs)

    def execute_tool_call(self, tool_name: str, arguments: Any) -> Any:
        """Run the call as ``ToolCallingAgent`` does, then bound its result.

        Errors propagate as smolagents raises them, so the model sees them as it always does, with
        their message (the tool's error text inside smolagents' own words) bounded like a result.
        """
        store = self._overspill_bounder.store
        session_id = _session(store, self.overspill_session)
        # A managed agent's run is in this agent's session (``_session``): the markers its report shows are ours.
        team = _team_run(store, session_id) if tool_name in self.managed_agents else contextlib.nullcontext()
        try:
            with team:
                result = super().execute_tool_call(tool_name, arguments)
        except AgentError as error:
            bounded = self._overspill_bounder.error(session_id, new_call_id(), error)
            if bounded is None:
                raise
            raise bounded from error
        tool = self.tools.get(tool_name)
        if tool_name == _FINAL_ANSWER or isinstance(tool, (_PagingTool, _BoundedTool)) or (
                tool is not None and tool.output_type in _MEDIA_TYPES):
            return result
        return _bounded_value(self._overspill_bounder, session_id, result)


class _BoundedAgent:
    """A managed agent as ``bound_managed_agents`` gives it: the agent itself (``wrapped``: its name,
    description, memory, everything its manager reads of it) but for the call its manager makes, whose
    report and failure text are bounded in the session the manager's ``read`` pages."""

    _OWN = frozenset(("wrapped", "_bounder", "_session_id"))

    def __init__(self, agent: MultiStepAgent, bounder: Bounder, session_id: str) -> None:
        self.wrapped = agent
        self._bounder = bounder
        self._session_id = session_id  # when the manager has no read of overspill's on this store

    def __getattr__(self, name: str) -> Any:
        # Only what this object lacks; never its own (an object made without __init__: copy, pickle).
        if name in _BoundedAgent._OWN:
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # What a manager sets on its managed agent (its inputs and output_type) is set on the agent, as it
        # would be without this wrapper.
        object.__setattr__(self, name, value) if name in _BoundedAgent._OWN else setattr(self.wrapped, name, value)

    def __call__(self, task: str, **kwargs: Any) -> Any:
        store = self._bounder.store
        manager, shown = self._manager()
        found = None if manager is None else next(
            (tool._session_id for tool in getattr(manager, "tools", {}).values()
             if isinstance(tool, _PagingTool) and tool._tool.store is store), None)
        session_id = _session(store, found or self._session_id)
        try:
            with _team_run(store, session_id):
                report = self.wrapped(task, **kwargs)
        except Exception as error:
            # The manager shows the model "Error executing request to team member ...: <its text>" (a
            # CodeAgent: its code's failure): bounded, its type kept, as a bound tool's error.
            bounded = self._bounder.error(session_id, new_call_id(), error)
            if bounded is None:
                raise
            raise bounded from error
        return _bounded_value(self._bounder, session_id, report) if shown else report

    def _manager(self) -> tuple[Optional[MultiStepAgent], bool]:
        """The agent calling this one as its managed agent, found on the stacks of the run (its method's
        ``self``: smolagents gives a managed agent only the model's arguments; a ``CodeAgent``'s code runs in
        a thread of its executor, so its ``_step_stream`` is on the stack of the thread waiting for it,
        ``_run_stacks``), and whether that call shows the model the report (a ``ToolCallingAgent``'s
        ``execute_tool_call``; a ``CodeAgent``'s code takes the report itself, as it takes a bound tool's
        value).  ``(None, False)`` when no manager calls it."""
        for _, frame in _run_stacks(sys._getframe(2)):
            while frame is not None:
                owner = frame.f_locals.get("self")
                if isinstance(owner, MultiStepAgent) and any(
                        agent is self for agent in getattr(owner, "managed_agents", {}).values()):
                    return owner, frame.f_code.co_name == "execute_tool_call"
                frame = frame.f_back
        return None, False

    def _not_saved(self) -> ValueError:
        """The error saving it raises: as a bound tool (``_not_saved``), it holds a live store and session
        that no saved agent carries, and saving the agent it wraps would write one that no longer bounds."""
        return ValueError(f"the bound managed agent {self.wrapped.name!r} cannot be saved: it holds a live "
                          f"store and session; save the agent itself (its wrapped agent), and bound it again "
                          f"once it is loaded")

    def to_dict(self) -> dict:
        """Refused: see ``_not_saved``.

        :raises ValueError: always.
        """
        raise self._not_saved()

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Refused: see ``_not_saved``.

        :raises ValueError: always.
        """
        raise self._not_saved()


def bound_managed_agents(agents: Iterable[MultiStepAgent], store: Optional[ToolOutputStore] = None) -> list[Any]:
    """Managed agents whose reports reach their manager's model bounded as ``bound`` bounds a tool's result.

    The model calls a managed agent as it calls a tool, but smolagents calls
    the agent itself, past any tool ``bound`` wraps: give a manager with
    ``bound(...)`` tools its managed agents through this, with the same store
    (``ToolCallingAgent(tools=bound(tools, store),
    managed_agents=bound_managed_agents(agents, store))``).  A report within
    the store's limits reaches the model untouched and nothing is stored; a
    larger one is stored whole and the model gets its preview with the marker,
    in the session the manager's ``read`` pages (the manager's ``bound``
    list's), so that ``read`` pages it.  A failing agent's error text (which
    smolagents shows the model) is bounded the same way, keeping its type.
    While it runs, the managed agent's own overspill tools on the same store
    work in that session too, so the markers its report shows (a run summary
    holds its previews) are pageable by the manager's ``read``.  A
    ``CodeAgent`` manager's code gets the report as it is (the code takes it),
    its failure text bounded.  An agent already bound is bound anew into this
    store.  ``BoundedToolCallingAgent`` needs none of this: it bounds its
    managed agents itself (and takes these as the agents they wrap).

    :param store: where reports are stored; the default ``ToolOutputStore()`` when None.  A manager
        without ``bound(...)`` tools on this store has no ``read`` to page them: the reports are bounded in
        a session of this call's own.
    :raises TypeError: ``store`` is not a ``ToolOutputStore``, or an item is not a smolagents agent.
    """
    store = open_store(store)
    bounder = Bounder(store)
    session_id = new_session_id()
    result: list[Any] = []
    for agent in agents:
        if isinstance(agent, _BoundedAgent):
            agent = agent.wrapped
        if not isinstance(agent, MultiStepAgent):
            raise TypeError(f"bound_managed_agents takes smolagents agents, not {type(agent).__name__}")
        result.append(_BoundedAgent(agent, bounder, session_id))
    return result
