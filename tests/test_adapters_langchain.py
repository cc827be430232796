"""overspill.adapters.langchain, driven by LangChain's GenericFakeChatModel with bind_tools (no network)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any, Optional

import pytest

import adapter_scenario as scenario
from adapter_scenario import BIG, SMALL, Rendezvous, Script, check_files_refused, expected_paging, file_probes, \
    framework, write_secret
from overspill import ToolOutputStore

framework("langchain.agents")
from langchain.agents import create_agent  # noqa: E402
from langchain.tools import ToolRuntime  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import InjectedToolCallId, tool  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402
from langgraph.types import Command  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from overspill.adapters.langchain import middleware  # noqa: E402

RECURSION = {"recursion_limit": 500}
big, small, broken = (tool(function) for function in scenario.TOOLS[:3])





@tool
def blocks() -> list:
    """Return content blocks: a large text beside an image."""
    return [{"type": "text", "text": BIG}, {"type": "image", "url": "https://example.invalid/a.png"}]


@tool
def command(runtime: ToolRuntime) -> Command:
    """Return a Command whose update reports to the model."""
    return Command(update={"messages": [ToolMessage(BIG, tool_call_id=runtime.tool_call_id)]})


def _received(messages: list) -> Optional[str]:
    last = messages[-1]
    if not isinstance(last, ToolMessage):
        return None
    if isinstance(last.content, str):
        return last.content
    return "".join(block["text"] for block in last.content if isinstance(block, dict) and block.get("type") == "text")


class ScriptedChat(GenericFakeChatModel):
    """GenericFakeChatModel whose every answer asks a Script what to call next."""

    script: Any
    before: Any = None
    messages: Any = iter(())  # the fake's canned answers: unused, the script answers instead
    bound: list = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        self.bound = list(tools)
        return self

    def _answer(self, received: Optional[str]) -> ChatResult:
        chosen = self.script.next(received)
        if chosen is None:
            message = AIMessage(content="done")
        else:
            name, arguments = chosen
            message = AIMessage(content="", tool_calls=[{"name": name, "args": arguments, "id": self.script.call_id()}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self._answer(_received(messages))

    async def _agenerate(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        received = _received(messages)
        if self.before is not None:
            await self.before(self.script, received)
        return self._answer(received)


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store") as opened:
        yield opened


def run(script: Script, tools: list, store: ToolOutputStore, **config: Any) -> dict:
    agent = create_agent(ScriptedChat(script=script), tools=tools, middleware=[middleware(store)])
    return agent.invoke({"messages": [("user", "go")]}, {**RECURSION, **config})


def test_middleware_registers_read_and_grep_with_the_tools_schemas(store):
    from langchain_core.utils.function_calling import convert_to_openai_tool

    expected = {name: {"type": "function", "function": spec} for name, spec in expected_paging(store).items()}
    added = middleware(store).tools
    assert [tool.name for tool in added] == ["read", "grep"]
    for tool in added:
        assert convert_to_openai_tool(tool) == expected[tool.name]


def test_scenario_sync(store, tmp_path, monkeypatch):
    # The model first tries the working folder's files through read and grep: each is refused.
    write_secret(tmp_path)
    monkeypatch.chdir(tmp_path)
    script = Script(probes=file_probes())
    result = run(script, [big], store)
    assert result["messages"][-1].content == "done"
    script.check()
    check_files_refused(script)
    (record,) = store.records()
    assert record.tool_call_id.startswith("call-")


def test_scenario_async_in_a_thread(store):
    from langgraph.checkpoint.memory import InMemorySaver

    script = Script()
    agent = create_agent(ScriptedChat(script=script), tools=[big], middleware=[middleware(store)],
                         checkpointer=InMemorySaver())
    asyncio.run(agent.ainvoke({"messages": [("user", "go")]},
                              {**RECURSION, "configurable": {"thread_id": "thread-7"}}))
    script.check()
    assert [record.session_id for record in store.records()] == ["thread-7"]


def test_small_result_passes_untouched_and_nothing_is_stored(store):
    script = Script("small")
    with pytest.raises(AssertionError, match="no marker"):
        run(script, [small], store)
    assert script.received == [SMALL]
    assert store.records() == []


def test_content_blocks_text_is_bounded_and_media_pass(store):
    script = Script("blocks")
    result = run(script, [blocks], store)
    script.check()
    (first,) = [m for m in result["messages"] if isinstance(m, ToolMessage) and m.name == "blocks"]
    assert first.content[1] == {"type": "image", "url": "https://example.invalid/a.png"}


def test_command_results_are_bounded(store):
    script = Script("command")
    run(script, [command], store)
    script.check()


def test_raising_tool_reaches_the_model_as_langchain_shows_errors(store):
    from langchain.agents.middleware import ToolErrorMiddleware

    # By default an exception ends the run, as without the middleware.
    outcomes = []
    for extra in ([], [middleware(store)]):
        script = Script("broken")
        agent = create_agent(ScriptedChat(script=script), tools=[broken], middleware=extra)
        with pytest.raises(RuntimeError) as raised:
            agent.invoke({"messages": [("user", "go")]}, RECURSION)
        outcomes.append((str(raised.value), script.received))
    assert outcomes[0] == outcomes[1] == ("the disk is on fire", [])
    # With ToolErrorMiddleware, outside or inside ours, the model gets the error ToolMessage.
    surface = ToolErrorMiddleware(on_error=lambda error, request: f"{type(error).__name__}: {error}")
    for order in ([surface, middleware(store)], [middleware(store), surface]):
        script = Script("broken")
        agent = create_agent(ScriptedChat(script=script), tools=[broken], middleware=order)
        with pytest.raises(AssertionError, match="no marker"):
            agent.invoke({"messages": [("user", "go")]}, RECURSION)
        assert script.received == ["RuntimeError: the disk is on fire"]
    assert store.records() == []


def test_concurrent_runs_do_not_see_each_others_uris(store):
    rendezvous = Rendezvous()
    scripts = [Script(), Script()]
    shared = middleware(store)  # one middleware, so only the run tells the sessions apart

    async def main() -> None:
        await asyncio.gather(*(
            create_agent(ScriptedChat(script=script, before=rendezvous.before), tools=[big], middleware=[shared])
            .ainvoke({"messages": [("user", "go")]}, RECURSION) for script in scripts))

    asyncio.run(main())
    for script in scripts:
        script.check()
        assert "not found in this session" in script.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


# ------------------------------------------------------------------ regressions (red team 4)
class OnceChat(GenericFakeChatModel):
    """Calls one tool, then records the content of the ToolMessage it is sent and stops."""

    name_to_call: str = ""
    sent: list = []
    messages: Any = iter(())
    tools_bound: list = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> OnceChat:
        self.tools_bound = list(tools)
        return self

    def _generate(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            self.sent.append(messages[-1].content)
            message = AIMessage(content="done")
        else:
            message = AIMessage(content="", tool_calls=[{"name": self.name_to_call, "args": {}, "id": "call-1"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def sent_for(function: Any, store: ToolOutputStore) -> Any:
    chat = OnceChat(name_to_call=function.name, sent=[])
    create_agent(chat, tools=[function], middleware=[middleware(store)]).invoke({"messages": [("user", "go")]},
                                                                                RECURSION)
    (content,) = chat.sent
    return content


ROWS = {"rows": [[n, f"row {n}"] for n in range(20_000)]}
IMAGE = {"type": "image", "url": "https://example.invalid/a.png"}


@tool
def json_block() -> list:
    """A json content block."""
    return [{"type": "json", "json": ROWS}]


@tool
def search_results() -> list:
    """A search_result block whose text is nested, beside an image."""
    return [IMAGE, {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": BIG}]}]


@tool
def many_blocks() -> list:
    """Thirty text blocks, each within the limits, and an image between them."""
    return ([{"type": "text", "text": f"block {index} " + "x" * 40_000} for index in range(15)] + [IMAGE]
            + [{"type": "text", "text": f"block {index} " + "x" * 40_000} for index in range(15, 30)])


def stored_texts(store: ToolOutputStore) -> list[str]:
    return [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()]


@pytest.mark.parametrize("function", [json_block, search_results, many_blocks])
def test_every_block_the_model_reads_is_bounded_together(store, function):
    # json and search_result blocks passed whole (418 KB, 1.5 MB), and so did thirty text blocks each
    # within the limits (1.2 MB): only text blocks were bounded, each on its own.
    import json

    content = sent_for(function, store)
    texts = [block["text"] for block in content if isinstance(block, dict) and block.get("type") == "text"]
    assert len(texts) == 1 and "tool-output://" in texts[0] and len(texts[0].encode()) < 60_000
    assert [block for block in content if block.get("type") != "text"] == ([IMAGE] if function is not json_block
                                                                          else [])
    (stored,) = stored_texts(store)
    blocks = function.invoke({})
    expected = [block["text"] if block["type"] == "text" else json.dumps(block, ensure_ascii=False)
                for block in blocks if block is not IMAGE and block != IMAGE]
    assert stored == "\n".join(expected)


def test_an_agent_tool_named_read_is_refused(store):
    # The agent's own read replaced the middleware's silently: the model was shown a read taking a
    # path, and following the preview's marker failed.
    @tool
    def read(path: str) -> str:
        """Read a file."""
        return "file"

    for function in (read,):
        chat = OnceChat(name_to_call=big.name, sent=[])
        agent = create_agent(chat, tools=[big, function], middleware=[middleware(store)])
        with pytest.raises(ValueError, match="named 'read'"):
            agent.invoke({"messages": [("user", "go")]}, RECURSION)
        with pytest.raises(ValueError, match="named 'read'"):
            asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, RECURSION))


# ------------------------------------------------------------------ regressions (red team 5)
def _command_of(form: str) -> Any:
    @tool
    def command_message(runtime: ToolRuntime) -> Command:
        """Return a Command whose update carries the tool message in another form than a ToolMessage."""
        if form == "role":
            message: Any = [{"role": "tool", "content": BIG, "tool_call_id": runtime.tool_call_id}]
        elif form == "type":
            message = [{"type": "tool", "content": BIG, "tool_call_id": runtime.tool_call_id}]
        else:  # the serialised ToolMessage
            message = [ToolMessage(BIG, tool_call_id=runtime.tool_call_id).to_json()]
        return Command(update={"messages": message})

    return command_message


@pytest.mark.parametrize("form", ["role", "type", "serialised"])
def test_command_tool_message_in_any_form_is_bounded(store, form):
    # A Command whose update carried the tool message as a message dict (which LangGraph turns into a
    # ToolMessage) reached the model whole: only ToolMessage instances were bounded.
    script = Script("command_message")
    result = run(script, [_command_of(form)], store)
    script.check()
    sent = [m for m in result["messages"] if isinstance(m, ToolMessage)][0]  # the Command's, then the pages
    assert "tool-output://" in sent.content and len(sent.content.encode()) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == BIG.encode()


# ------------------------------------------------------------------ regressions (red team L)
def test_a_long_exception_text_is_bounded_whichever_side_the_error_middleware_is(store):
    # With ToolErrorMiddleware outside overspill's middleware, the exception passed through ours and its
    # handler's str(exc) reached the model whole (1.3 MB).  Now ours bounds the exception's text (stored
    # whole, the exception keeping its type); inside, the error ToolMessage is bounded as any result.
    from langchain.agents.middleware import ToolErrorMiddleware

    log = "tests failed:\n" + BIG

    @tool
    def run_tests() -> str:
        """Run the test suite."""
        raise RuntimeError(log)

    kinds = []

    def on_error(error: Exception, request: Any) -> str:
        kinds.append(type(error))
        return f"{type(error).__name__}: {error}"

    for asynchronous in (False, True):
        for outside in (True, False):
            surface = ToolErrorMiddleware(on_error=on_error)
            order = [surface, middleware(store)] if outside else [middleware(store), surface]
            script = Script("run_tests")
            agent = create_agent(ScriptedChat(script=script), tools=[run_tests], middleware=order)
            task = {"messages": [("user", "go")]}
            if asynchronous:
                asyncio.run(agent.ainvoke(task, RECURSION))
            else:
                agent.invoke(task, RECURSION)
            shown = "RuntimeError: "
            assert script.received[0].startswith(shown + "tests failed:")
            if outside:  # the exception's text is what was stored
                script.preview = script.received[0][len(shown):]
                script.check(log)
            else:  # the handler's whole message is what was stored
                script.check(shown + log)
    assert kinds == [RuntimeError] * 4
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log, "RuntimeError: " + log] * 2


# ------------------------------------------------------------------ regressions (red team A7)
def _listing_of(form: str) -> Any:
    @tool
    def listing(runtime: ToolRuntime) -> list:
        """Return the result as a list of Command and ToolMessage objects, as LangGraph's ToolNode accepts."""
        if form == "command":
            return [Command(update={"messages": [ToolMessage(BIG, tool_call_id=runtime.tool_call_id)]})]
        return [Command(update={"messages": []}), ToolMessage(BIG, tool_call_id=runtime.tool_call_id)]

    return listing


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("form", ["command", "message"])
def test_a_list_of_commands_and_tool_messages_is_bounded(store, form, asynchronous):
    # A tool returning a list of Command/ToolMessage objects reached the model whole (590 KB): only a
    # single ToolMessage or Command was looked into.
    script = Script("listing")
    agent = create_agent(ScriptedChat(script=script), tools=[_listing_of(form)], middleware=[middleware(store)])
    task = {"messages": [("user", "go")]}
    result = asyncio.run(agent.ainvoke(task, RECURSION)) if asynchronous else agent.invoke(task, RECURSION)
    script.check()
    sent = [m for m in result["messages"] if isinstance(m, ToolMessage)][0]  # the list's, then the pages
    assert "tool-output://" in sent.content and len(sent.content.encode()) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == BIG.encode()


class TurnChat(GenericFakeChatModel):
    """Calls the given tools in one turn, then records the ToolMessages it is sent and stops."""

    names: list = []
    sent: list = []
    messages: Any = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> TurnChat:
        return self

    def _generate(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            self.sent.extend(m.content for m in messages if isinstance(m, ToolMessage))
            message = AIMessage(content="done")
        else:
            message = AIMessage(content="", tool_calls=[{"name": name, "args": {}, "id": f"call-{index}"}
                                                        for index, name in enumerate(self.names)])
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool(return_direct=True)
def report() -> str:
    """The final report, returned to the user as the run's answer."""
    return BIG


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_return_direct_tools_answer_is_the_whole_output(store, asynchronous):
    # A return_direct tool's message ends the run and is the application's answer: the middleware
    # replaced it by the model's preview (head, tail and a marker telling a model to call read).
    chat = TurnChat(names=["report"], sent=[])
    agent = create_agent(chat, tools=[report, small], middleware=[middleware(store)])
    task = {"messages": [("user", "go")]}
    result = asyncio.run(agent.ainvoke(task, RECURSION)) if asynchronous else agent.invoke(task, RECURSION)
    final = result["messages"][-1]
    assert isinstance(final, ToolMessage) and final.content == BIG
    assert chat.sent == [] and store.records() == []
    # Called beside a tool that is not return_direct, it does not end the run: the model reads it, bounded.
    chat = TurnChat(names=["report", "small"], sent=[])
    agent = create_agent(chat, tools=[report, small], middleware=[middleware(store)])
    result = asyncio.run(agent.ainvoke(task, RECURSION)) if asynchronous else agent.invoke(task, RECURSION)
    assert result["messages"][-1].content == "done"
    assert "tool-output://" in chat.sent[0] and len(chat.sent[0].encode()) < 60_000 and chat.sent[1] == SMALL
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == BIG.encode()


# ------------------------------------------------------------------ regressions (red team A11)
def test_long_thread_and_call_ids_are_bounded_in_sessions_of_their_own(store):
    """Regression (red team A11, f01): a thread id or a tool call id over the store's 1024-byte bound
    for an id failed the whole run with the store's ValueError, even for a 4-byte result.  Now: a small
    result passes untouched; a large one is bounded and paged in the thread's session, which is the same
    for every run of the thread and apart from another long thread id's differing only at its end."""
    from adapter_scenario import LONG_ID, LongIdScript

    script = LongIdScript("small")
    with pytest.raises(AssertionError, match="no marker"):
        run(script, [small], store, configurable={"thread_id": LONG_ID + "a"})
    assert script.received == [SMALL] and store.records() == []
    first = LongIdScript()
    run(first, [big], store, configurable={"thread_id": LONG_ID + "a"})
    first.check()
    for thread, shown in (("b", False), ("a", True)):  # the first run's URI, from another thread, then its own
        later = LongIdScript()
        later.foreign = first.uri
        run(later, [big], store, configurable={"thread_id": LONG_ID + thread})
        later.check()
        assert later.foreign_answer.startswith(BIG[:20]) is shown, later.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


# ------------------------------------------------------------------ regressions (red team P12)
class ModelState(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages] = []


@dataclasses.dataclass
class DataState:
    messages: Annotated[list[AnyMessage], add_messages] = dataclasses.field(default_factory=list)


STATES: dict[str, Any] = {"list": Annotated[list, add_messages], "dict": MessagesState, "model": ModelState,
                          "dataclass": DataState, "pairs": MessagesState}  # "pairs": a dict state's, as pairs


def _updating(state: str) -> Any:
    """The tool whose Command updates the state named in the form LangGraph takes for that state."""
    @tool
    def update(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Return a Command whose update is in the state's own form."""
        messages = [ToolMessage(BIG, tool_call_id=tool_call_id)]
        if state == "pairs":
            return Command(update=(("messages", messages),))  # a tuple of (key, value) pairs
        return Command(update=messages if state == "list" else STATES[state](messages=messages))  # not "dict"

    return update


def _tool_graph(state: str, tools: list, hooks: Any, model: Any = None) -> Any:
    """A graph over the state named whose ToolNode has the middleware's hooks as its wrappers: alone, or
    (with ``model``) in a model <-> tools loop routed by tools_condition."""
    graph = StateGraph(STATES[state])
    graph.add_node("tools", ToolNode(tools, wrap_tool_call=hooks.wrap_tool_call, awrap_tool_call=hooks.awrap_tool_call))
    if model is None:
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
    else:
        graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})  # a dict state
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
    return graph.compile()


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("state", ["list", "model", "dataclass", "pairs"])
def test_a_commands_update_in_every_form_langgraph_takes_is_bounded(store, state, asynchronous):
    # A ToolNode over a list of messages takes a Command(update=[ToolMessage, ...]) (a state model's
    # Command(update=State(messages=[...])) as well): only a dict update's "messages" was looked into, so
    # the tool message reached the model whole (538 KB).  So did a tuple of (key, value) pairs, which
    # LangGraph applies as a dict's items (Command._update_as_tuples).
    app = _tool_graph(state, [_updating(state)], middleware(store))
    call = AIMessage(content="", tool_calls=[{"name": "update", "args": {}, "id": "call-1"}])
    task: Any = [call] if state == "list" else {"messages": [call]}
    result = asyncio.run(app.ainvoke(task)) if asynchronous else app.invoke(task)
    messages = result if isinstance(result, list) else result["messages"]
    (sent,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert "tool-output://" in sent.content and len(sent.content.encode()) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == BIG.encode()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_return_direct_tools_output_is_bounded_where_the_run_does_not_end_there(store, asynchronous):
    # A ToolNode in a model <-> tools loop routed by tools_condition (which ignores return_direct): the
    # return_direct tool's message does not end the run, the model reads it next; it passed whole
    # (538 KB), the middleware taking every return_direct call for create_agent's run-ending one.
    chat = TurnChat(names=["report"], sent=[])
    hooks = middleware(store)
    app = _tool_graph("dict", [report, *hooks.tools], hooks, model=chat)
    task = {"messages": [("user", "go")]}
    result = asyncio.run(app.ainvoke(task, RECURSION)) if asynchronous else app.invoke(task, RECURSION)
    assert result["messages"][-1].content == "done"
    (sent,) = chat.sent
    assert "tool-output://" in sent and len(sent.encode()) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == BIG.encode()


# ------------------------------------------------------------------ regressions (red team E13)
@tool(return_direct=True)
def conclude() -> str:
    """Conclude the run with the final report."""
    raise RuntimeError("the report failed:\n" + BIG)


def _reviewed(store: ToolOutputStore, order: str, called: str, edited_to: str, asynchronous: bool) -> tuple:
    """Run an agent whose model calls ``called``, a HumanInTheLoopMiddleware reviewer editing the call to
    ``edited_to`` (resumed with ``Command(resume=...)``, as LangChain documents); overspill's middleware listed
    before or after the reviewer's, a ToolErrorMiddleware showing the model ``str(exc)`` outside both.
    Returns the model and the run's messages."""
    from langchain.agents.middleware import HumanInTheLoopMiddleware, ToolErrorMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    chat = TurnChat(names=[called], sent=[])
    hitl = HumanInTheLoopMiddleware(interrupt_on={called: True})
    ours = middleware(store)
    errors = ToolErrorMiddleware(on_error=lambda error, request: str(error))
    agent = create_agent(chat, tools=[report, big, small, conclude], checkpointer=InMemorySaver(),
                         middleware=[errors, *([ours, hitl] if order == "overspill-first" else [hitl, ours])])
    config = {**RECURSION, "configurable": {"thread_id": f"reviewed-{order}"}}
    resume = Command(resume={"decisions": [{"type": "edit", "edited_action": {"name": edited_to, "args": {}}}]})
    if asynchronous:
        async def both() -> dict:
            await agent.ainvoke({"messages": [("user", "go")]}, config)
            return await agent.ainvoke(resume, config)

        return chat, asyncio.run(both())["messages"]
    agent.invoke({"messages": [("user", "go")]}, config)
    return chat, agent.invoke(resume, config)["messages"]


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("order", ["overspill-first", "hitl-first"])
def test_a_return_direct_call_a_reviewer_redirects_to_another_tool_is_bounded(store, order, asynchronous):
    # The model called a return_direct tool; the reviewer edited the call to an ordinary one, so the run
    # goes on to the model (create_agent judges by the ToolMessage's name: the tool that ran).  With
    # overspill's middleware outside the reviewer's, it judged by the request it was given and passed the
    # other tool's whole output (538 KB) to the model.
    chat, messages = _reviewed(store, order, "report", "big", asynchronous)
    assert messages[-1].content == "done"
    (sent,) = chat.sent
    assert "tool-output://" in sent and len(sent.encode()) < 60_000
    (record,) = store.records()  # the whole output (after the reviewer's note, when that came inside)
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        .endswith(BIG.encode())


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("order", ["overspill-first", "hitl-first"])
def test_a_call_a_reviewer_redirects_to_a_return_direct_tool_is_the_whole_answer(store, order, asynchronous):
    # The model called an ordinary tool; the reviewer edited the call to a return_direct one, whose message
    # ends the run as its answer: it was bounded to the model's preview, the middleware judging by the
    # model's call (or by the request it was given).
    chat, messages = _reviewed(store, order, "small", "report", asynchronous)
    final = messages[-1]
    assert isinstance(final, ToolMessage) and final.name == "report" and final.content.endswith(BIG)
    assert chat.sent == [] and store.records() == []


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("order", ["overspill-first", "hitl-first"])
def test_the_exception_of_a_return_direct_tool_a_reviewer_redirects_to_is_bounded(store, order, asynchronous):
    # The model called an ordinary tool; the reviewer edited the call to a return_direct one, which raised.
    # The error middleware outside names the error message after the model's call, so the run goes on to
    # the model: the exception is bounded, though the request overspill's middleware is given (inside the
    # reviewer's) names the return_direct tool.  (A guard for the exception's side of the judgment, which
    # has no result to tell by: it held before, judging by the model's call as well as by the request.)
    chat, messages = _reviewed(store, order, "small", "conclude", asynchronous)
    assert messages[-1].content == "done"
    (sent,) = chat.sent
    assert sent.startswith("the report failed:") and "tool-output://" in sent and len(sent.encode()) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) \
        == ("the report failed:\n" + BIG).encode()


@pytest.mark.parametrize("name", ["read", "grep"])
def test_a_structured_output_schema_named_read_or_grep_is_refused(store, name):
    # A ToolStrategy schema (or a bare or AutoStrategy schema, which such a model gets as a ToolStrategy)
    # named grep was bound beside the middleware's grep: the model's grep call on a marker's URI became the
    # structured answer and ended the run.
    from langchain.agents.structured_output import AutoStrategy, ToolStrategy

    schema = type(name, (BaseModel,), {"__annotations__": {"resource": str}, "__doc__": "The answer."})
    for response_format in (ToolStrategy(schema), schema, AutoStrategy(schema)):
        agent = create_agent(OnceChat(name_to_call=big.name, sent=[]), tools=[big], middleware=[middleware(store)],
                             response_format=response_format)
        with pytest.raises(ValueError, match=f"named '{name}'"):
            agent.invoke({"messages": [("user", "go")]}, RECURSION)
        with pytest.raises(ValueError, match=f"named '{name}'"):
            asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, RECURSION))
    assert store.records() == []
