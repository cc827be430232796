"""overspill.adapters.openai_agents, driven by the SDK's own ScriptedModel (no network)."""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import pytest

import adapter_scenario as scenario
from adapter_scenario import BIG, MAX_TURNS, SMALL, Rendezvous, Script, check_files_refused, expected_paging, \
    file_probes, framework, write_secret
from overspill import ToolOutputStore

agents = framework("agents")
testing = framework("agents.testing")
from pydantic import BaseModel, Field  # noqa: E402  (installed with the SDK)
from overspill.adapters.openai_agents import bound  # noqa: E402

agents.set_tracing_disabled(True)
big, small, broken, table = (agents.function_tool(function) for function in scenario.TOOLS)






def _received(call: Any) -> Optional[str]:
    """The text of the last tool result the model was sent, None on the first turn."""
    last = call.input[-1] if isinstance(call.input, list) else None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        output = last["output"]
        return output if isinstance(output, str) else "".join(item.get("text", "") for item in output)
    return None


def scripted(script: Script, *, before: Any = None) -> Any:
    """A ScriptedModel whose every step asks ``script`` what to do next."""
    model = testing.ScriptedModel()

    async def respond(call: Any) -> Any:
        received = _received(call)
        if before is not None:
            await before(script, received)
        chosen = script.next(received)
        if chosen is None:
            return [testing.assistant_message("done")]
        model.enqueue(testing.ModelStep.respond(respond))
        name, arguments = chosen
        return [testing.function_call(name, arguments, call_id=script.call_id())]

    model.enqueue(testing.ModelStep.respond(respond))
    return model


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store") as opened:
        yield opened


def test_bound_adds_read_and_grep_with_the_tools_schemas(store):
    tools = bound([big], store)
    assert [tool.name for tool in tools] == ["big", "read", "grep"]
    expected = expected_paging(store)
    for tool in tools[1:]:
        assert tool.description == expected[tool.name]["description"]
        assert tool.params_json_schema == expected[tool.name]["parameters"]
    assert big.on_invoke_tool is not tools[0].on_invoke_tool  # the caller's tool is left as it was
    with pytest.raises(ValueError, match="read"):
        bound([tools[1].__class__(name="read", description="", params_json_schema={},
                                  on_invoke_tool=tools[1].on_invoke_tool)], store)


def test_scenario_sync(store, tmp_path, monkeypatch):
    # The model first tries the working folder's files through read and grep: each is refused.
    write_secret(tmp_path)
    monkeypatch.chdir(tmp_path)
    script = Script(probes=file_probes())
    agent = agents.Agent(name="a", model=scripted(script), tools=bound([big], store))
    result = agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS)
    assert result.final_output == "done"
    script.check()
    check_files_refused(script)
    (record,) = store.records()
    assert record.resource.size == len(BIG.encode()) and record.tool_call_id.startswith("call-")


def test_scenario_async_with_a_session_id(store):
    script = Script()
    agent = agents.Agent(name="a", model=scripted(script), tools=bound([big], store, session_id="thread-7"))
    asyncio.run(agents.Runner.run(agent, "go", max_turns=MAX_TURNS))
    script.check()
    assert [record.session_id for record in store.records()] == ["thread-7"]


def test_group_id_is_the_session(store):
    script = Script()
    agent = agents.Agent(name="a", model=scripted(script), tools=bound([big], store))
    agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS, run_config=agents.RunConfig(group_id="chat-42"))
    script.check()
    assert [record.session_id for record in store.records()] == ["chat-42"]


def test_small_result_passes_untouched_and_nothing_is_stored(store):
    script = Script("small")
    agent = agents.Agent(name="a", model=scripted(script), tools=bound([small], store))
    with pytest.raises(AssertionError, match="no marker"):
        agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS)
    assert script.received == [SMALL]
    assert store.records() == []


def test_json_result_is_stored_as_json_text(store):
    import json

    script = Script("table", pattern='"row 12345"')
    agent = agents.Agent(name="a", model=scripted(script), tools=bound([table], store))
    asyncio.run(agents.Runner.run(agent, "go", max_turns=MAX_TURNS))
    text = json.dumps({"rows": [[n, f"row {n}"] for n in range(20_000)]}, ensure_ascii=False)
    assert "".join(script.pages) == text.encode()[script.offset:].decode()
    assert script.grep.startswith('0:{"rows": [[0, "row 0"]') and script.grep.endswith('[1 matching line]')


def test_raising_tool_reaches_the_model_as_the_sdk_shows_errors(store):
    received = []
    for tools in ([broken], bound([broken], store)):
        script = Script("broken")
        agent = agents.Agent(name="a", model=scripted(script), tools=tools)
        with pytest.raises(AssertionError, match="no marker"):
            agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS)
        received.append(script.received)
    assert received[0] == received[1] and "error occurred" in received[1][0]
    assert store.records() == []


def test_concurrent_runs_do_not_see_each_others_uris(store):
    tools = bound([big], store)  # one tool list and one agent for both runs
    agent = agents.Agent(name="a", tools=tools)
    rendezvous = Rendezvous()
    scripts = [Script(), Script()]

    async def main() -> None:
        await asyncio.gather(*(agents.Runner.run(agent.clone(model=scripted(script, before=rendezvous.before)), "go", max_turns=MAX_TURNS)
                               for script in scripts))

    asyncio.run(main())
    for script in scripts:
        script.check()
        assert "not found in this session" in script.foreign_answer
    assert scripts[0].uri != scripts[1].uri
    assert len({record.session_id for record in store.records()}) == 2


def test_mcp_server_tools_are_bounded(store, tmp_path):
    import os
    import sys

    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    script = Script()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}

    async def main() -> None:
        server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                 "env": env}, name="big-output", client_session_timeout_seconds=30)
        (wrapped,) = bound_servers([server], store, session_id="mcp-run")
        async with server:
            agent = agents.Agent(name="a", model=scripted(script), tools=bound([], store, session_id="mcp-run"),
                                 mcp_servers=[wrapped])
            await agents.Runner.run(agent, "go", max_turns=MAX_TURNS)

    asyncio.run(main())
    script.check()
    assert [record.session_id for record in store.records()] == ["mcp-run"]


class Count(BaseModel):
    count: int


def count() -> Count:
    """Count."""
    return Count(count=3)


def rows() -> dict:
    """Rows."""
    return scenario.table()


def test_typed_outputs_and_output_items(store):
    import json

    from agents.tool import ToolOutputImage, ToolOutputText

    from overspill.adapters.openai_agents import _bound_output
    from overspill.adapters._core import Bounder

    received = []
    for tools in ([agents.function_tool(count, output_type=Count)],
                  bound([agents.function_tool(count, output_type=Count)], store)):
        script = Script("count")
        with pytest.raises(AssertionError, match="no marker"):
            agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=tools), "go")
        received.append(script.received)
    assert received[0] == received[1] == ['{"count":3}']  # a small typed output is the JSON the SDK sends

    script = Script("rows", pattern='"row 12345"')
    tool = agents.function_tool(rows, output_json_schema={"type": "object"})
    agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=bound([tool], store)), "go",
                           max_turns=MAX_TURNS)
    (record,) = store.records()
    text = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert json.loads(text) == scenario.table() and "".join(script.pages) == text[script.offset:]

    async def items() -> list:
        image = ToolOutputImage(image_url="https://example.invalid/a.png")
        return await _bound_output(Bounder(store), "s", "c", [ToolOutputText(text=BIG), image,
                                                              {"type": "text", "text": "short"}])

    # The text items are read together: stored as one text, shown as one item where the first stood.
    text_item, image = asyncio.run(items())
    assert isinstance(text_item, ToolOutputText) and "tool-output://" in text_item.text
    assert image.image_url == "https://example.invalid/a.png"
    stored = [record for record in store.records() if record.session_id == "s"]
    assert [b"".join(bytes(piece) for piece in store.iter_bytes("s", record.resource.uri)) for record in stored] \
        == [(BIG + "\nshort").encode()]


# ------------------------------------------------------------------ regressions (red team 3)
class Report(BaseModel):
    items: list[str]


def listed() -> list:
    """Rows as a list of plain dicts (which the SDK sends as one value, not as output items)."""
    return [{"row": n, "name": f"row {n}"} for n in range(20_000)]


def report() -> Report:
    """A pydantic model, returned without a declared output type."""
    return Report(items=[f"row {n}" for n in range(20_000)])


PICTURE = "data:image/png;base64," + "A" * 80_000  # an image item larger than the store's byte limit


def picture() -> dict:
    """An image output item, as a dict."""
    return {"type": "image", "image_url": PICTURE}


def pictures() -> list:
    """Image output items, as models."""
    from agents.tool import ToolOutputImage

    return [ToolOutputImage(image_url=PICTURE), ToolOutputImage(image_url=PICTURE)]


def _calling_once(name: str, call_id: str = "call-1") -> tuple[Any, list]:
    """A scripted model that calls the tool ``name`` once, then says "done"; and the list that
    gets what it was sent for the call (as the SDK put it in the next turn's input)."""
    model, sent = testing.ScriptedModel(), []

    async def respond(call: Any) -> Any:
        last = call.input[-1] if isinstance(call.input, list) else None
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            sent.append(last["output"])
            return [testing.assistant_message("done")]
        model.enqueue(testing.ModelStep.respond(respond))
        return [testing.function_call(name, "{}", call_id=call_id)]

    model.enqueue(testing.ModelStep.respond(respond))
    return model, sent


def _outputs(tool: Any, store: ToolOutputStore) -> list:
    """What the model was sent for one call of ``tool`` (as the SDK put it in the next turn's input)."""
    model, sent = _calling_once(tool.name)
    agents.Runner.run_sync(agents.Agent(name="a", model=model, tools=bound([tool], store)), "go")
    return sent


def test_a_list_of_plain_values_is_bounded_whole_as_its_json_text(store):
    # The SDK takes a list as output items only when every item is one; a list of rows is sent as
    # str(list): the adapter once bounded each dict on its own, and 740 KB reached the model.
    import json

    script = Script("listed", pattern='"row 12345"')
    agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=bound([agents.function_tool(listed)],
                                                                                      store)), "go", max_turns=MAX_TURNS)
    text = json.dumps(listed(), ensure_ascii=False)
    assert "".join(script.pages) == text.encode()[script.offset:].decode()
    assert len(script.preview.encode()) < 60_000


def test_a_pydantic_model_is_bounded_as_its_json(store):
    import json

    script = Script("report", pattern='"row 12345"')
    agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=bound([agents.function_tool(report)],
                                                                                      store)), "go", max_turns=MAX_TURNS)
    (record,) = store.records()
    text = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert json.loads(text) == report().model_dump() and "".join(script.pages) == text[script.offset:]


def test_image_items_pass_as_images_whatever_their_size(store, caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="overspill"):
        for tool in (picture, pictures):
            (sent,) = _outputs(agents.function_tool(tool), store)
            assert [item["type"] for item in sent] == ["input_image"] * (1 if tool is picture else 2)
            assert all(item["image_url"] == PICTURE for item in sent)
    assert store.records() == [] and caplog.records == []


def test_bound_twice_stores_where_its_own_read_pages(store, tmp_path):
    # bound() of a bound list with another store: the tools kept the first store while read and grep
    # paged the second, so the model could not read the URI it was given.
    with ToolOutputStore(tmp_path / "other") as other:
        script = Script()
        tools = bound(bound([big], other), store)
        assert [tool.name for tool in tools] == ["big", "read", "grep"]
        agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=tools), "go", max_turns=MAX_TURNS)
        script.check()
        assert other.records() == [] and len(store.records()) == 1


def test_mcp_server_tools_share_the_runs_session(store):
    # With no session_id, function tools take the run's group_id while an MCP server's tools took the
    # run's trace: the model could not read a bounded MCP result with the run's read.
    import os
    import sys

    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    script = Script()

    async def main() -> None:
        server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                 "env": env}, name="big-output", client_session_timeout_seconds=30)
        (wrapped,) = bound_servers([server], store)
        async with server:
            agent = agents.Agent(name="a", model=scripted(script), tools=bound([], store), mcp_servers=[wrapped])
            await agents.Runner.run(agent, "go", max_turns=MAX_TURNS, run_config=agents.RunConfig(group_id="chat-7"))

    asyncio.run(main())
    script.check()
    (record,) = store.records()
    assert record.session_id == "chat-7" and record.tool_call_id.startswith("call-")  # the model's call id


# ------------------------------------------------------------------ regressions (red team 4)
LOG_SECRET = "sk-live-0123456789abcdef"


def secret_log() -> str:
    """A long log with a secret in its middle (where a preview omits it)."""
    return BIG + f"API_KEY={LOG_SECRET}\n" + BIG


def test_output_guardrails_check_the_whole_output(store):
    # A guardrail saw only the preview: the secret in the omitted middle passed it, and the model
    # read it back through grep.
    from agents import ToolGuardrailFunctionOutput, tool_output_guardrail

    seen: list[int] = []

    @tool_output_guardrail
    def measured(data: Any) -> Any:
        seen.append(len(data.output))
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    @tool_output_guardrail
    def no_secrets(data: Any) -> Any:
        if "sk-live-" in str(data.output):
            return ToolGuardrailFunctionOutput.reject_content("withheld: the output holds a secret", output_info=None)
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    tool = agents.function_tool(secret_log, tool_output_guardrails=[measured, no_secrets, measured])
    (sent,) = _outputs(tool, store)
    assert sent == "withheld: the output holds a secret"
    assert seen == [len(secret_log())]  # the first saw the whole output; the SDK stops at a rejection

    # Allowed, the model gets the preview, and every guardrail saw the whole output.
    seen.clear()
    (sent,) = _outputs(agents.function_tool(scenario.big, tool_output_guardrails=[measured, measured]), store)
    assert "tool-output://" in sent and seen == [len(BIG), len(BIG)]

    # A tripwire stops the run, as without bound().
    @tool_output_guardrail
    def tripwire(data: Any) -> Any:
        if LOG_SECRET in str(data.output):
            return ToolGuardrailFunctionOutput.raise_exception(output_info=None)
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    with pytest.raises(agents.ToolOutputGuardrailTripwireTriggered):
        _outputs(agents.function_tool(secret_log, tool_output_guardrails=[tripwire]), store)


def many_items() -> list:
    """Search hits, one text item each, every one within the limits, beside an image."""
    from agents.tool import ToolOutputImage, ToolOutputText

    return ([ToolOutputText(text=f"hit {index} " + "x" * 30_000) for index in range(20)]
            + [ToolOutputImage(image_url="https://example.invalid/a.png")]
            + [ToolOutputText(text=f"hit {index} " + "y" * 30_000) for index in range(20, 40)])


def test_text_items_are_bounded_together(store):
    # Forty text items of 30 KB each were each within the limits, so 1.2 MB reached the model.
    (sent,) = _outputs(agents.function_tool(many_items), store)
    assert [item["type"] for item in sent] == ["input_text", "input_image"]
    assert len(sent[0]["text"].encode()) < 60_000 and "tool-output://" in sent[0]["text"]
    (record,) = store.records()
    stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert stored == "\n".join(item.text for item in many_items() if hasattr(item, "text"))


def test_mcp_blocks_the_sdk_shows_as_text_are_bounded(store):
    # An embedded resource (which the SDK shows as its JSON text) and many text blocks each within the
    # limits passed whole: 1.5 MB and 1.2 MB reached the model.
    import os
    import sys

    import json

    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    sent: dict[str, Any] = {}

    async def main() -> None:
        server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                 "env": env}, name="big-output", client_session_timeout_seconds=30)
        (wrapped,) = bound_servers([server], store, session_id="blocks")
        async with server:
            for name in ("document", "pieces"):
                model = testing.ScriptedModel()

                async def respond(call: Any, name: str = name) -> Any:
                    last = call.input[-1] if isinstance(call.input, list) else None
                    if isinstance(last, dict) and last.get("type") == "function_call_output":
                        sent[name] = last["output"]
                        return [testing.assistant_message("done")]
                    model.enqueue(testing.ModelStep.respond(respond))
                    return [testing.function_call(name, "{}", call_id=f"call-{name}")]

                model.enqueue(testing.ModelStep.respond(respond))
                agent = agents.Agent(name="a", model=model, tools=bound([], store, session_id="blocks"),
                                     mcp_servers=[wrapped])
                await agents.Runner.run(agent, "go")

    asyncio.run(main())
    for name, output in sent.items():
        text = output if isinstance(output, str) else "".join(item.get("text", "") for item in output)
        assert "tool-output://" in text and len(text.encode()) < 60_000, name
    stored = {record.tool_call_id: b"".join(bytes(piece) for piece in store.iter_bytes("blocks", record.resource.uri))
              for record in store.records()}
    assert json.loads(stored["call-document"])["resource"]["text"] == BIG  # the block as the SDK shows it
    assert stored["call-pieces"] == "\n".join(f"piece {index} " + "x" * 40_000 for index in range(30)).encode()


# ------------------------------------------------------------------ regressions (red team 5)
def deploy() -> str:
    """Deploy (a human approves it first)."""
    return "deployed"


def test_a_run_resumed_after_an_approval_keeps_its_session(store):
    # With tracing disabled each Runner.run has a new NoOpTrace, which was the session: the run resumed
    # after the approval could not read what it stored before the pause ("another session wrote it").
    gated = agents.function_tool(deploy, needs_approval=True)

    async def streamed(agent: Any, start: Any) -> Any:
        result = agents.Runner.run_streamed(agent, start, max_turns=MAX_TURNS)
        async for _ in result.stream_events():
            pass
        return result

    for stream in (False, True):
        script = Script(probes=[("deploy", {})])  # after the preview, before paging: the run pauses there
        agent = agents.Agent(name="a", model=scripted(script), tools=bound([big, gated], store))
        run = (lambda start: asyncio.run(streamed(agent, start))) if stream else \
            (lambda start: agents.Runner.run_sync(agent, start, max_turns=MAX_TURNS))
        first = run("go")
        assert [item.name for item in first.interruptions] == ["deploy"]
        state = first.to_state()
        state.approve(first.interruptions[0])
        run(state)
        script.check()
        assert script.probe_answers == ["deployed"]
    assert len({record.session_id for record in store.records()}) == 2  # still one session per run


def test_bound_tool_keeps_wrapped_and_drops_only_the_output_schema(store):
    # bound()'s copy raised AttributeError for __wrapped__ (the SDK's access to the decorated function).
    # Its output schema goes, as the README says: the SDK checks every output against it, a preview cannot match.
    from agents.models.openai_responses import Converter

    typed = agents.function_tool(count, output_type=Count)
    wrapped, *_ = bound([typed], store)
    assert wrapped.__wrapped__ is typed.__wrapped__ is count
    assert isinstance(wrapped, agents.FunctionTool) and wrapped.name == typed.name
    assert wrapped.params_json_schema == typed.params_json_schema
    assert Converter._convert_function_tool(typed)[0].get("output_schema") is not None
    assert Converter._convert_function_tool(wrapped)[0].get("output_schema") is None
    assert bound([wrapped], store)[0].__wrapped__ is count  # bound again
    with pytest.raises(AttributeError, match="read-only"):
        wrapped.__wrapped__ = len
    async def invoke(context: Any, input: str) -> str:
        return "plain"

    untyped = agents.FunctionTool(name="plain", description="", params_json_schema={}, on_invoke_tool=invoke)
    with pytest.raises(AttributeError):  # no decorated function: as the SDK says for the tool itself
        bound([untyped], store)[0].__wrapped__


FILES_SERVER = '''
from mcp.server.mcpserver import MCPServer
server = MCPServer("files")
@server.tool()
def read(path: str) -> str:
    """Read a file."""
    return "FILE CONTENT of " + path
server.run("stdio")
'''


def test_an_mcp_tool_named_read_is_refused(store, tmp_path):
    # bound_servers() took a server with a tool named read: the SDK kept one of the two reads and only
    # logged the collision, so the model lost the server's tool (bound() refuses a function tool so named).
    import sys

    from agents.mcp import MCPServerStdio, create_static_tool_filter

    from overspill.adapters.openai_agents import bound_servers

    path = tmp_path / "files_server.py"
    path.write_text(FILES_SERVER)

    async def offered(call: str, **options: Any) -> tuple[list[str], Any]:
        """The tools the model was offered, and what it got calling ``call``."""
        model, seen = testing.ScriptedModel(), {}

        async def respond(request: Any) -> Any:
            last = request.input[-1] if isinstance(request.input, list) else None
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                seen["output"] = last["output"]
                return [testing.assistant_message("done")]
            seen["tools"] = [tool.name for tool in request.tools]
            model.enqueue(testing.ModelStep.respond(respond))
            return [testing.function_call(call, {"path": "notes.txt"}, call_id="call-1")]

        model.enqueue(testing.ModelStep.respond(respond))
        server = MCPServerStdio({"command": sys.executable, "args": [str(path)]}, name="files",
                                client_session_timeout_seconds=30, tool_filter=options.pop("tool_filter", None))
        async with server:
            agent = agents.Agent(name="a", model=model, tools=bound([], store),
                                 mcp_servers=bound_servers([server], store), **options)
            await agents.Runner.run(agent, "go")
        return seen.get("tools", []), seen.get("output")

    with pytest.raises(ValueError, match="MCP server 'files' has a tool named 'read'"):
        asyncio.run(offered("read"))
    # Left out by the server's filter, or named after its server by the agent: no collision, so no refusal.
    tools, output = asyncio.run(offered("read", tool_filter=create_static_tool_filter(blocked_tool_names=["read"])))
    assert tools == ["read", "grep"] and "resource" in str(output)  # overspill's read answered
    tools, output = asyncio.run(offered("mcp_files__read", mcp_config={"include_server_in_tool_names": True}))
    assert sorted(tools) == ["grep", "mcp_files__read", "read"] and "FILE CONTENT of notes.txt" in str(output)


def test_mcp_server_guardrails_and_extractor_see_the_whole_result(store):
    # An MCP server's own output guardrails saw the preview: the secret in the omitted middle passed
    # them and the model grepped it out of the stored output.  Its custom data extractor lost the
    # result's structured content (the model is shown the preview instead).
    import json
    import os
    import sys

    from agents import ToolGuardrailFunctionOutput, tool_output_guardrail
    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    whole = secret_log()
    seen: list[str] = []
    extracted: list[Any] = []

    @tool_output_guardrail
    def measured(data: Any) -> Any:
        seen.append(data.output if isinstance(data.output, str) else data.output["text"])
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    @tool_output_guardrail
    def no_secrets(data: Any) -> Any:
        if LOG_SECRET in str(data.output):
            return ToolGuardrailFunctionOutput.reject_content("withheld: the output holds a secret", output_info=None)
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    def extractor(context: Any) -> Any:
        extracted.append((context.structured_content, context.tool_output))
        return None

    async def sent_for(tool: str, structured: bool) -> Any:
        model, sent = _calling_once(tool, f"call-{tool}-{structured}")
        server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                 "env": env}, name="big-output", client_session_timeout_seconds=30,
                                use_structured_content=structured, custom_data_extractor=extractor,
                                tool_output_guardrails=[measured, no_secrets, measured])
        async with server:
            agent = agents.Agent(name="a", model=model, tools=bound([], store, session_id="g"),
                                 mcp_servers=bound_servers([server], store, session_id="g"))
            await agents.Runner.run(agent, "go")
        (output,) = sent
        return output if isinstance(output, str) else "".join(item.get("text", "") for item in output)

    for structured in (False, True):
        seen.clear()
        extracted.clear()
        assert asyncio.run(sent_for("secret_log", structured)) == "withheld: the output holds a secret"
        shown = json.dumps({"result": whole}) if structured else whole
        assert seen == [shown]  # the first saw the whole output; the SDK stops at the rejection
        ((content, output),) = extracted
        assert dict(content or {}) == {"result": whole}
        assert "tool-output://" in str(output)  # tool_output: what the model is shown, as the SDK documents it
    # Allowed, the model gets the preview and each guardrail saw the whole output.
    seen.clear()
    sent = asyncio.run(sent_for("big", False))
    assert "tool-output://" in sent and seen == [BIG, BIG]


# ------------------------------------------------------------------ regressions (red team A7)
@pytest.mark.parametrize("behavior", ["stop_on_first_tool", "stop_at_tools"])
def test_a_tool_output_that_is_the_final_output_passes_whole(store, behavior):
    # With tool_use_behavior="stop_on_first_tool" or StopAtTools, the tool's output is the run's
    # final_output, for the application: it was the model's preview (a head, a tail and a marker).
    chosen = "stop_on_first_tool" if behavior == "stop_on_first_tool" else agents.StopAtTools(stop_at_tool_names=["big"])
    model, sent = _calling_once("big")
    agent = agents.Agent(name="a", model=model, tools=bound([big], store), tool_use_behavior=chosen)
    assert agents.Runner.run_sync(agent, "go").final_output == BIG
    assert sent == [] and store.records() == []


def test_outputs_the_model_reads_are_bounded_whatever_the_tool_use_behavior(store):
    # StopAtTools naming another tool, or a custom function that chooses no final output: the model
    # reads the output, bounded (a custom function is given it so too).
    seen = []

    def never(context: Any, results: list) -> Any:
        seen.extend(result.output for result in results)
        return agents.ToolsToFinalOutputResult(is_final_output=False)

    for chosen in (agents.StopAtTools(stop_at_tool_names=["small"]), never):
        model, sent = _calling_once("big")
        agent = agents.Agent(name="a", model=model, tools=bound([big, small], store), tool_use_behavior=chosen)
        assert agents.Runner.run_sync(agent, "go").final_output == "done"
        (output,) = sent
        assert "tool-output://" in output and len(output.encode()) < 60_000
    assert len(seen) == 1 and "tool-output://" in seen[0]
    assert len(store.records()) == 2


def test_an_mcp_tool_output_that_is_the_final_output_passes_whole(store):
    import os
    import sys

    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    finals = []

    async def main() -> None:
        server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                 "env": env}, name="big-output", client_session_timeout_seconds=30)
        (wrapped,) = bound_servers([server], store)
        async with server:
            for chosen in ("stop_on_first_tool", agents.StopAtTools(stop_at_tool_names=["big"]), "run_llm_again"):
                for given in (server, wrapped):  # the final output is the SDK's own, as without overspill
                    model, sent = _calling_once("big")
                    agent = agents.Agent(name="a", model=model, tools=bound([], store), mcp_servers=[given],
                                         tool_use_behavior=chosen)
                    finals.append(((await agents.Runner.run(agent, "go")).final_output, sent))

    asyncio.run(main())
    for (own, _), (final, sent) in (finals[0:2], finals[2:4]):
        assert final == own and len(own) > len(BIG) and sent == []  # the SDK shows the item as str(dict)
    final, (output,) = finals[5]  # run_llm_again: the model reads it, bounded
    text = output if isinstance(output, str) else "".join(item.get("text", "") for item in output)
    assert final == "done" and "tool-output://" in text and len(text.encode()) < 60_000
    assert len(store.records()) == 1


# ------------------------------------------------------------------ regressions (red team W9)
def _local_cases() -> dict[str, tuple[Any, Any, str]]:
    """The SDK's local tools other than function tools, each as (the tool, the model's call of it given
    a call id, the text that reaches the model and is stored whole when bounded)."""
    from agents.editor import ApplyPatchResult
    from agents.tool import ApplyPatchTool, CustomTool, LocalShellTool, ShellCommandOutput, ShellResult, ShellTool
    from openai.types.responses import ResponseApplyPatchToolCall, ResponseCustomToolCall
    from openai.types.responses.response_apply_patch_tool_call import OperationCreateFile
    from openai.types.responses.response_function_shell_tool_call import Action, ResponseFunctionShellToolCall
    from openai.types.responses.response_output_item import LocalShellCall, LocalShellCallAction

    def fail(*_: Any) -> Any:
        raise RuntimeError(BIG)

    async def custom(context: Any, raw: str) -> str:
        assert raw == "go" and context.tool_call_id == "local-1"
        return BIG

    half = BIG.index(f"\n{scenario.LINES // 2}\n") + 1
    result = ShellResult(output=[ShellCommandOutput(stdout=BIG[:half], stderr="warning", command="seq"),
                                 {"stdout": BIG[half:], "stderr": "", "outcome": {"type": "exit", "exit_code": 3}}])

    async def shell_result(request: Any) -> Any:
        return result

    class Editor:
        def create_file(self, operation: Any) -> Any:
            return ApplyPatchResult(status="completed", output=BIG)

        update_file = delete_file = create_file

    class FailingEditor(Editor):
        create_file = fail

    def custom_call(name: str) -> Any:
        return lambda call_id: ResponseCustomToolCall(type="custom_tool_call", call_id=call_id, name=name,
                                                      input="go", id="ct")

    def shell_call(call_id: str) -> Any:
        return ResponseFunctionShellToolCall(type="shell_call", id="sc", call_id=call_id, status="completed",
                                             action=Action(commands=["seq 200000"]))

    def local_shell_call(call_id: str) -> Any:
        return LocalShellCall(type="local_shell_call", id="lc", call_id=call_id, status="completed",
                              action=LocalShellCallAction(type="exec", command=["seq", "200000"], env={}))

    def patch_call(call_id: str) -> Any:
        return ResponseApplyPatchToolCall(type="apply_patch_call", id="pc", call_id=call_id, status="completed",
                                          operation=OperationCreateFile(type="create_file", path="a.txt", diff="+a\n"))

    return {
        "custom": (CustomTool(name="custom_big", description="d", on_invoke_tool=custom), custom_call("custom_big"), BIG),
        "custom-raising": (CustomTool(name="custom_fail", description="d", on_invoke_tool=fail),
                           custom_call("custom_fail"), BIG),
        "shell-text": (ShellTool(executor=lambda request: BIG), shell_call, BIG),
        "shell-result": (ShellTool(executor=shell_result), shell_call, f"{BIG[:half]}\nwarning\n{BIG[half:]}"),
        "shell-raising": (ShellTool(executor=fail), shell_call, BIG),
        "local-shell": (LocalShellTool(executor=lambda request: BIG), local_shell_call, BIG),
        "apply-patch": (ApplyPatchTool(editor=Editor()), patch_call, BIG),
        "apply-patch-raising": (ApplyPatchTool(editor=FailingEditor()), patch_call, BIG),
    }


def _local_received(call: Any) -> Optional[str]:
    """The text of the last tool result the model was sent (a local tool's or a function tool's), None on
    the first turn; a shell result's commands' stdout and stderr together."""
    last = call.input[-1] if isinstance(call.input, list) else None
    if isinstance(last, dict) and last.get("type") == "shell_call_output":
        return "".join(entry["stdout"] + entry["stderr"] for entry in last["output"])
    if isinstance(last, dict) and last.get("type") in ("custom_tool_call_output", "local_shell_call_output",
                                                      "apply_patch_call_output"):
        return last["output"]
    return _received(call)


@pytest.mark.parametrize("group_id", [None, "chat-local"])
@pytest.mark.parametrize("case", list(_local_cases()))
def test_local_tools_other_than_function_tools_are_bounded_and_paged(store, case, group_id):
    # bound() wrapped only FunctionTools: a CustomTool's, a local ShellTool's, a LocalShellTool's and an
    # apply_patch editor's 1.3 MB (their results or their errors' text) reached the model whole.  Each is
    # now stored and previewed, and read pages it in the run's session (the group_id, found with tracing
    # disabled although the SDK gives a shell executor and an editor no run config).
    tool, calling, text = _local_cases()[case]
    script = Script(tool.name)
    model = testing.ScriptedModel()
    sent: list[Any] = []

    async def respond(call: Any) -> Any:
        last = call.input[-1] if isinstance(call.input, list) else None
        if isinstance(last, dict) and last.get("call_id") == "local-1":
            sent.append(last)
        chosen = script.next(_local_received(call))
        if chosen is None:
            return [testing.assistant_message("done")]
        model.enqueue(testing.ModelStep.respond(respond))
        name, arguments = chosen
        if name == tool.name:
            return [calling("local-1")]
        return [testing.function_call(name, arguments, call_id=script.call_id())]

    model.enqueue(testing.ModelStep.respond(respond))
    tools = bound([tool], store)
    assert type(tools[0]) is type(tool) and tools[0].name == tool.name and tools[0] is not tool
    agent = agents.Agent(name="a", model=model, tools=tools)
    result = agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS, run_config=agents.RunConfig(group_id=group_id))
    assert result.final_output == "done"
    script.check(text)
    (record,) = store.records()
    assert record.resource.size == len(text.encode())
    assert record.tool_call_id == "local-1" or case.startswith("apply-patch")  # an editor is not given it
    if group_id is not None:
        assert record.session_id == group_id
    if case == "shell-result":  # the commands' outcomes are kept; the preview stands in the first one's stdout
        (output,) = sent
        assert [entry["outcome"] for entry in output["output"]] == [{"type": "exit", "exit_code": None},
                                                                     {"type": "exit", "exit_code": 3}]
        assert output["output"][0]["stdout"] == script.preview and output["output"][1]["stdout"] == ""


def test_local_tools_within_the_limits_pass_untouched_and_hosted_ones_as_they_are(store, tmp_path):
    from agents.tool import CustomTool, ShellTool

    async def custom(context: Any, raw: str) -> str:
        return SMALL

    tool = CustomTool(name="custom_small", description="d", on_invoke_tool=custom)
    hosted = ShellTool(environment={"type": "container_auto"})
    with ToolOutputStore(tmp_path / "other") as other:
        tools = bound(bound([tool, hosted], other), store)  # bound again: anew, into this store
    assert tools[1] is hosted and tools[0].on_invoke_tool.original is tool and tool.on_invoke_tool is custom
    model = testing.ScriptedModel()
    sent: list[Any] = []
    model.enqueue([ResponseCustomToolCallFor("custom_small")])

    def second(call: Any) -> Any:
        sent.append(call.input[-1]["output"])
        return [testing.assistant_message("done")]

    model.enqueue(testing.ModelStep.respond(second))
    agents.Runner.run_sync(agents.Agent(name="a", model=model, tools=tools), "go")
    assert sent == [SMALL] and store.records() == []
    with pytest.raises(ValueError, match="read"):
        bound([CustomTool(name="read", description="d", on_invoke_tool=custom)], store)


def ResponseCustomToolCallFor(name: str) -> Any:  # noqa: N802  (stands for the SDK's item)
    """The model's call of the custom tool ``name``."""
    from openai.types.responses import ResponseCustomToolCall

    return ResponseCustomToolCall(type="custom_tool_call", call_id="c1", name=name, input="go", id="i1")


# ------------------------------------------------------------------ regressions (red team A11)
def test_long_group_and_call_ids_are_bounded_in_sessions_of_their_own(store):
    """Regression (red team A11, f01): a model's call_id (or a run's group_id) over the store's 1024-byte
    bound for an id failed the run ("tool_call_id must be at most 1024 UTF-8 bytes"), even for a 4-byte
    result.  Now: a small result passes untouched; a large one is bounded and paged in the run's session,
    which is the same for every run of the group and apart from another long group id's differing only
    at its end."""
    from adapter_scenario import LONG_ID, LongIdScript

    def run(script: Script, tool: Any, group: str) -> None:
        agent = agents.Agent(name="a", model=scripted(script), tools=bound([tool], store))
        agents.Runner.run_sync(agent, "go", max_turns=MAX_TURNS, run_config=agents.RunConfig(group_id=LONG_ID + group))

    script = LongIdScript("small")
    with pytest.raises(AssertionError, match="no marker"):
        run(script, small, "a")
    assert script.received == [SMALL] and store.records() == []
    first = LongIdScript()
    run(first, big, "a")
    first.check()
    for group, shown in (("b", False), ("a", True)):  # the first run's URI, from another group, then its own
        later = LongIdScript()
        later.foreign = first.uri
        run(later, big, group)
        later.check()
        assert later.foreign_answer.startswith(BIG[:20]) is shown, later.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


def test_an_mcp_tools_error_text_is_bounded_as_a_function_tools_is(store):
    """Regression (red team A11, f02): an MCP tool failing with a long error (a protocol error carrying an
    upstream's 500 KB body) reached the model whole through ``bound_servers``: the SDK formats a raised
    error with the server's failure error function (else the agent's ``mcp_config`` one), which the
    wrapper handed over as it was.  Now the text either makes is bounded as a function tool's failure
    text is: the model gets the preview and pages the whole text back in the run's session.  The SDK's
    default (one fixed line, never the error) and no failure error function (the error ends the run)
    stay as they are without overspill."""
    import os
    import sys

    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}

    def shown(context: Any, error: Exception) -> str:  # an application telling the model what went wrong
        return f"The tool failed: {error}"

    async def shown_later(context: Any, error: Exception) -> str:
        return f"The tool failed later: {error}"

    bounded: list[tuple[Script, str]] = []
    unchanged: list[tuple[Any, Any]] = []

    async def main() -> None:
        for own, mcp_config in ((shown, {}), (None, {"failure_error_function": shown_later}), (None, {})):
            options = {} if own is None else {"failure_error_function": own}
            server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                     "env": env}, name="big-output", client_session_timeout_seconds=30, **options)
            (wrapped,) = bound_servers([server], store, session_id="mcp-errors")
            async with server:
                model, sent = _calling_once("failing")  # the text the SDK shows the model without overspill
                await agents.Runner.run(agents.Agent(name="a", model=model, mcp_servers=[server],
                                                     mcp_config=mcp_config), "go")
                (whole,) = sent
                if own is not None or mcp_config:
                    script = Script("failing")
                    agent = agents.Agent(name="a", model=scripted(script), mcp_servers=[wrapped],
                                         tools=bound([], store, session_id="mcp-errors"), mcp_config=mcp_config)
                    await agents.Runner.run(agent, "go", max_turns=MAX_TURNS)
                    bounded.append((script, whole))
                    continue
                model, sent = _calling_once("failing")
                await agents.Runner.run(agents.Agent(name="a", model=model, mcp_servers=[wrapped]), "go")
                unchanged.append((whole, sent[0]))
                raised = []  # no failure error function: the error ends the run
                for given in (server, wrapped):
                    model, sent = _calling_once("failing")
                    with pytest.raises(Exception) as error:
                        await agents.Runner.run(agents.Agent(name="a", model=model, mcp_servers=[given],
                                                             mcp_config={"failure_error_function": None}), "go")
                    raised.append((type(error.value), sent))
                unchanged.append(tuple(raised))

    asyncio.run(main())
    assert [whole.split(":")[0] for _, whole in bounded] == ["The tool failed", "The tool failed later"]
    for script, whole in bounded:
        assert "upstream returned HTTP 502" in whole and len(whole.encode()) > 500_000
        script.check(whole)  # the preview, the pages reproducing the whole text, grep in it
    (own, sent), (raw, wrapped) = unchanged
    # The SDK's own fixed line (its wording changes between releases: 0.25 dropped "Please try again.").
    assert sent == own == agents.default_tool_error_function(None, RuntimeError("not shown"))
    assert raw == wrapped and raw[1] == []
    assert len(store.records()) == 2 and {record.session_id for record in store.records()} == {"mcp-errors"}


def test_a_failure_text_the_store_cannot_keep_still_reaches_the_model_review_r4(tmp_path):
    """Review R4 (a gap in 9b98082 and before): a failed call's text (what a function tool's or an MCP
    server's failure error function makes of the error) was bounded as an output is, through
    ``store.truncate``, so a store that could not write it (a full disk, a data folder gone) raised
    StorageError in its place and the run ended.  As the README says for a tool's error text, the model
    gets the preview whose marker says "output not stored" and why, and the run goes on; an output
    guardrail still checks the whole text.

    Review R6 (a gap in 0c58301): a function tool on the SDK's default failure function whose text
    ``RunConfig.tool_error_formatter`` makes was still bounded as an output, so the run ended with
    ``UserError`` wrapping the StorageError; it is a failure's text too."""
    import os
    import shutil
    import sys

    from agents import ToolGuardrailFunctionOutput, tool_output_guardrail
    from agents.mcp import MCPServerStdio

    from overspill.adapters.openai_agents import bound_servers

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    seen: list[str] = []

    @tool_output_guardrail
    def measured(data: Any) -> Any:
        seen.append(str(data.output))
        return ToolGuardrailFunctionOutput.allow(output_info=None)

    def shown(context: Any, error: Exception) -> str:
        return f"The tool failed: {error}"

    def failing() -> str:
        """Fail with a long error (an upstream's error body, say)."""
        raise RuntimeError("upstream returned HTTP 502:\n" + BIG)

    tool = agents.function_tool(failing, failure_error_function=shown, tool_output_guardrails=[measured])
    plain = agents.function_tool(failing, tool_output_guardrails=[measured])  # the SDK's default failure function
    formatted = agents.RunConfig(tool_error_formatter=lambda args: f"The tool failed: {args.error}")
    folder = tmp_path / "store"

    async def main() -> list:
        sent_all = []
        with ToolOutputStore(folder) as store:
            shutil.rmtree(folder)
            folder.write_text("")  # the disk went bad: a file where the data folder was
            model, sent = _calling_once("failing")
            await agents.Runner.run(agents.Agent(name="a", model=model, tools=bound([tool], store, session_id="s")),
                                    "go")
            sent_all.append(sent)
            model, sent = _calling_once("failing")
            await agents.Runner.run(agents.Agent(name="a", model=model, tools=bound([plain], store, session_id="s")),
                                    "go", run_config=formatted)
            sent_all.append(sent)
            server = MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                                     "env": env}, name="big-output", client_session_timeout_seconds=30,
                                    failure_error_function=shown)
            (wrapped,) = bound_servers([server], store, session_id="s")
            async with server:
                model, sent = _calling_once("failing")
                await agents.Runner.run(agents.Agent(name="a", model=model, mcp_servers=[wrapped]), "go")
                sent_all.append(sent)
        return sent_all

    for sent in asyncio.run(main()):
        (text,) = sent
        assert text.startswith("The tool failed: ") and "upstream returned HTTP 502" in text
        assert "output not stored" in text and "tool-output://" not in text and len(text.encode()) < 60_000
    assert seen == [f"The tool failed: upstream returned HTTP 502:\n{BIG}"] * 2  # the guardrails saw the whole text


# ------------------------------------------------------------------ regressions (red team N12)
def _mcp_server(**options: Any) -> Any:
    """The scenario's MCP server (``adapter_mcp_server.py``) over stdio."""
    import os
    import sys

    from agents.mcp import MCPServerStdio

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    return MCPServerStdio({"command": sys.executable, "args": [os.path.join(here, "adapter_mcp_server.py")],
                           "env": env}, name="big-output", client_session_timeout_seconds=30, **options)


def _stored(store: ToolOutputStore, record: Any) -> bytes:
    return b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri))


def test_a_structured_mcp_result_is_bounded_as_the_sdk_shows_it_with_escapes(store):
    # The SDK shows a structured result as json.dumps(structured_content): a CJK character as a \uXXXX
    # escape, 6 bytes.  The adapter measured json.dumps(..., ensure_ascii=False), 3 bytes a character,
    # so 74 KB of escapes that fit as UTF-8 reached the model whole, with no marker.
    import json

    from adapter_mcp_server import CJK_ROWS

    from overspill.adapters.openai_agents import bound_servers

    shown = json.dumps({"rows": CJK_ROWS})
    assert len(json.dumps({"rows": CJK_ROWS}, ensure_ascii=False).encode()) < 51_200 < len(shown)

    async def main() -> list:
        model, sent = _calling_once("cjk")
        server = _mcp_server(use_structured_content=True)
        async with server:
            agent = agents.Agent(name="a", model=model, tools=bound([], store, session_id="s"),
                                 mcp_servers=bound_servers([server], store, session_id="s"))
            await agents.Runner.run(agent, "go")
        return sent

    (output,) = asyncio.run(main())
    text = output if isinstance(output, str) else "".join(item.get("text", "") for item in output)
    uri, offset = scenario.marker(text)
    assert text.startswith(shown[:100]) and len(text.encode()) < 60_000
    (record,) = store.records()
    assert record.resource.uri == uri and _stored(store, record) == shown.encode()  # the text the SDK shows


class Document(BaseModel):
    title: str
    raw: str = Field(exclude=True)  # left out of its JSON, but not of its str(), which the SDK shows


class Opaque:
    """A value neither json nor pydantic can serialise, whose str() the SDK shows."""

    def __str__(self) -> str:
        return BIG


def document() -> Document:
    """A document whose raw text is left out of its JSON."""
    return Document(title="notes", raw=BIG)


def note() -> Document:
    """A small document."""
    return Document(title="notes", raw="a line")


def zeros() -> bytes:
    """Bytes within the limits, whose repr (what the SDK shows) is four times over them."""
    return b"\0" * 20_000


def opaque() -> Any:
    """A value with no JSON."""
    return Opaque()


def test_a_plain_value_is_bounded_as_the_sdk_shows_it(store):
    # The SDK shows a function tool's plain value as str(value); the adapter measured its JSON text (a
    # pydantic model's leaves out an excluded field; bytes are stored as they are; a value with no JSON
    # passed unbounded), so 1.6 MB of str(document()) reached the model whole.
    for function in (document, zeros, opaque):
        script = Script(function.__name__, pattern="123456")
        tools = bound([agents.function_tool(function)], store, session_id=function.__name__)
        agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script), tools=tools), "go", max_turns=MAX_TURNS)
        (record,) = [record for record in store.records() if record.session_id == function.__name__]
        shown = str(function())
        assert _stored(store, record) == shown.encode()  # what the model pages is what the SDK would show
        assert len(script.preview.encode()) < 60_000 and shown.startswith(script.preview[:50])
        assert "".join(script.pages) == shown.encode()[script.offset:].decode()
    # Within the limits as the SDK shows it: untouched, nothing stored.
    script = Script("note")
    with pytest.raises(AssertionError, match="no marker"):
        agents.Runner.run_sync(agents.Agent(name="a", model=scripted(script),
                                            tools=bound([agents.function_tool(note)], store, session_id="n")), "go")
    assert script.received == [str(note())] and [r for r in store.records() if r.session_id == "n"] == []
    # A hosted program's call (programmatic tool calling) gets the value's JSON, as without bound().
    from agents.tool import ProgrammaticToolCallingTool
    from openai.types.responses.response_function_tool_call import CallerProgram, ResponseFunctionToolCall
    from openai.types.responses.response_output_item import Program

    def by_program(tool: Any) -> list:
        model, sent = testing.ScriptedModel(), []

        async def respond(call: Any) -> Any:
            last = call.input[-1] if isinstance(call.input, list) else None
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                sent.append(last["output"])
                return [testing.assistant_message("done")]
            model.enqueue(testing.ModelStep.respond(respond))
            return [Program(id="p-1", call_id="p-1", code="await document()", fingerprint="f", type="program"),
                    ResponseFunctionToolCall(arguments="{}", call_id="call-p", name="document", type="function_call",
                                             caller=CallerProgram(caller_id="p-1", type="program"))]

        model.enqueue(testing.ModelStep.respond(respond))
        agents.Runner.run_sync(agents.Agent(name="a", model=model, tools=[tool, ProgrammaticToolCallingTool()]), "go")
        return sent

    tool = agents.function_tool(document, allowed_callers=["direct", "programmatic"])
    assert by_program(tool) == by_program(bound([tool], store, session_id="p")[0]) == ['{"title":"notes"}']
    assert [record for record in store.records() if record.session_id == "p"] == []


def test_bound_servers_twice_stores_where_its_own_read_pages(store, tmp_path):
    # bound_servers() of a bound server returned it as it was, still storing in the first call's store
    # and session: the agent's read (the second store, session "two") answered "no resource".
    from overspill.adapters.openai_agents import bound_servers

    with ToolOutputStore(tmp_path / "other") as other:
        script = Script()

        async def main() -> None:
            server = _mcp_server()
            (first,) = bound_servers([server], other, session_id="one")
            (second,) = bound_servers([first], store, session_id="two")
            async with server:
                agent = agents.Agent(name="a", model=scripted(script), tools=bound([], store, session_id="two"),
                                     mcp_servers=[second])
                await agents.Runner.run(agent, "go", max_turns=MAX_TURNS)

        asyncio.run(main())
        script.check()
        assert other.records() == [] and [record.session_id for record in store.records()] == ["two"]


def test_a_namespaced_tool_named_read_is_bound_beside_overspills_read(store):
    # bound() refused a function tool named read inside a tool_namespace ("fs.read"), though the SDK
    # calls it by its qualified name, apart from overspill's read.
    def read(path: str) -> str:
        """Read a file."""
        return f"file {path}\n" + BIG

    tools = bound(agents.tool_namespace(name="fs", description="files", tools=[agents.function_tool(read)]), store,
                  session_id="s")
    assert [tool.qualified_name for tool in tools] == ["fs.read", "read", "grep"]
    model, sent = testing.ScriptedModel(), []

    async def respond(call: Any) -> Any:
        last = call.input[-1] if isinstance(call.input, list) else None
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            sent.append(last["output"])
        if len(sent) == 2:
            return [testing.assistant_message("done")]
        model.enqueue(testing.ModelStep.respond(respond))
        if not sent:
            return [testing.function_call("read", {"path": "notes"}, call_id="call-1", namespace="fs")]
        uri, offset = scenario.marker(sent[0])
        return [testing.function_call("read", {"resource": uri, "offset": offset, "limit": 20}, call_id="call-2")]

    model.enqueue(testing.ModelStep.respond(respond))
    agents.Runner.run_sync(agents.Agent(name="a", model=model, tools=tools), "go")
    preview, page = sent
    assert preview.startswith("file notes\n0\n") and len(preview.encode()) < 60_000  # the namespaced read, bounded
    (record,) = store.records()
    whole = _stored(store, record)
    offset = scenario.marker(preview)[1]
    assert page.startswith(whole[offset:offset + 20].decode())  # overspill's read paged it
    # A tool whose qualified name is read is still refused, a function tool or another local tool.
    with pytest.raises(ValueError, match="a tool named 'read' is already given"):
        bound([agents.function_tool(read)], store)


# ------------------------------------------------------------------ regressions (red team A13)
def _failing_handoff(error_text: str, formatter: Any) -> Any:
    """A handoff to a fresh agent "b" whose ``on_handoff`` raises ``RuntimeError(error_text)``, its failure
    formatted by ``formatter`` (openai-agents 0.25's ``Handoff.failure_error_function``)."""
    def on_handoff(context: Any) -> None:
        raise RuntimeError(error_text)

    return agents.handoff(agents.Agent(name="b", model=testing.ScriptedModel()), on_handoff=on_handoff,
                          failure_error_function=formatter)


def test_a_handoffs_failure_text_is_bounded_by_bound_handoffs_red_team_a13(store, tmp_path):
    """Red team A13: openai-agents 0.25 added ``Handoff.failure_error_function``: a handoff whose
    ``on_handoff`` raises reaches the calling model as the ``transfer_to_X`` call's output, the text the
    application's formatter made of the error, and nothing of the adapter could bound it (1.3 MB reached
    the model).  ``bound_handoffs`` copies the handoffs with that text bounded as an MCP tool's failure
    text is: the model gets the preview and pages the whole text back with the run's ``read``, in the
    run's session (sync and async runs, the run's ``group_id``, a fixed ``session_id``).  A small failure
    passes untouched and stores nothing; the SDK's default formatter (one fixed line) and None (the error
    ends the run) are left as they are, and so is an ``Agent`` the SDK gives no failure function."""
    import dataclasses

    from overspill.adapters.openai_agents import bound_handoffs

    if "failure_error_function" not in {field.name for field in dataclasses.fields(agents.Handoff)}:
        pytest.skip("an SDK without Handoff.failure_error_function (before 0.25): handoffs cannot fail to the model")

    def told(context: Any, error: Exception) -> str:  # an application telling the model what went wrong
        return f"handoff error: {error}"

    async def told_later(context: Any, error: Exception) -> str:
        return f"handoff error later: {error}"

    whole_error = "handoff failed:\n" + BIG
    # A run with its session found by the adapter (tracing disabled: the run), sync; the run's group_id,
    # async and with an async formatter; a fixed session_id.
    for formatter, shown, run_config, session_id in (
            (told, "handoff error: ", None, None),
            (told_later, "handoff error later: ", agents.RunConfig(group_id="chat-a13"), None),
            (told, "handoff error: ", None, "thread-a13")):
        given = _failing_handoff(whole_error, formatter)
        (handoff,) = bound_handoffs([given], store, session_id=session_id)
        script = Script(given.tool_name)
        agent = agents.Agent(name="a", model=scripted(script), tools=bound([], store, session_id=session_id),
                             handoffs=[handoff])
        before = {record.resource.uri for record in store.records()}
        options = {"max_turns": MAX_TURNS} if run_config is None else {"max_turns": MAX_TURNS, "run_config": run_config}
        if formatter is told:
            result = agents.Runner.run_sync(agent, "go", **options)
        else:
            result = asyncio.run(agents.Runner.run(agent, "go", **options))
        assert result.final_output == "done" and result.last_agent.name == "a"  # no transfer: "a" answered
        script.check(shown + whole_error)  # the preview, then read from its offset pages the whole text back
        assert handoff is not given and given.failure_error_function is formatter  # the caller's is left as it was
        assert (handoff.tool_name, handoff.agent_name) == (given.tool_name, given.agent_name)
        (record,) = [record for record in store.records() if record.resource.uri not in before]
        if session_id is not None or run_config is not None:
            assert record.session_id == (session_id or run_config.group_id)

    # A small failure reaches the model as the SDK shows it without overspill, and nothing is stored.
    before = store.records()
    sent_all = []
    for bind in (lambda handoffs: handoffs, lambda handoffs: bound_handoffs(handoffs, store)):
        handoffs = bind([_failing_handoff("the target is busy", told)])
        model, sent = _calling_once(handoffs[0].tool_name)
        agents.Runner.run_sync(agents.Agent(name="a", model=model, handoffs=handoffs), "go")
        sent_all.append(sent)
    assert sent_all[0] == sent_all[1] == ["handoff error: the target is busy"]
    assert store.records() == before

    # The SDK's default formatter (one fixed line, never the error; known by identity) and None (the error
    # propagates) are left as they are; so is an Agent, which the SDK makes a handoff with no failure function.
    fixed = _failing_handoff(whole_error, agents.default_tool_error_function)
    (kept,) = bound_handoffs([fixed], store)
    assert kept.failure_error_function is agents.default_tool_error_function
    model, sent = _calling_once(kept.tool_name)
    agents.Runner.run_sync(agents.Agent(name="a", model=model, handoffs=[kept]), "go")
    assert sent == [agents.default_tool_error_function(None, RuntimeError("not shown"))]
    raising = _failing_handoff("no formatter", None)
    target = agents.Agent(name="c")
    left = bound_handoffs([raising, target], store)
    assert len(left) == 2 and left[0] is raising and left[1] is target
    model, sent = _calling_once(raising.tool_name)
    with pytest.raises(RuntimeError, match="no formatter"):
        agents.Runner.run_sync(agents.Agent(name="a", model=model, handoffs=bound_handoffs([raising], store)), "go")
    assert store.records() == before
    with pytest.raises(TypeError, match="Handoff"):
        bound_handoffs(["transfer_to_b"], store)

    # Bound again: anew, into this call's store and session (where its read pages), not the first call's.
    with ToolOutputStore(tmp_path / "other") as other:
        (twice,) = bound_handoffs(bound_handoffs([_failing_handoff(whole_error, told)], other, session_id="one"),
                                  store, session_id="two")
        model, sent = _calling_once(twice.tool_name)
        agents.Runner.run_sync(agents.Agent(name="a", model=model, handoffs=[twice]), "go")
        assert "tool-output://" in sent[0] and len(sent[0].encode()) < 60_000
        assert other.records() == [] and "two" in {record.session_id for record in store.records()}
