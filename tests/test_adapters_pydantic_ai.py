"""overspill.adapters.pydantic_ai, driven by PydanticAI's FunctionModel (no network)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Optional

import pytest

import adapter_scenario as scenario
from adapter_scenario import BIG, SMALL, Rendezvous, Script, check_files_refused, expected_paging, file_probes, \
    framework, write_secret
from overspill import ToolOutputStore

framework("pydantic_ai")
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, \
    ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

from overspill.adapters.pydantic_ai import capability, toolset  # noqa: E402


TOOLS = {tool.__name__: tool for tool in scenario.TOOLS}
big, broken, table = scenario.big, scenario.broken, scenario.table


def _received(messages: list) -> Optional[str]:
    last = messages[-1]
    if not isinstance(last, ModelRequest):
        return None
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            return part.content if isinstance(part.content, str) else part.model_response_str()
        if isinstance(part, RetryPromptPart):
            return part.model_response()
    return None


def scripted(script: Script, before: Any = None) -> FunctionModel:
    # Usage given, so FunctionModel does not estimate tokens over the whole history at every turn.
    usage = RequestUsage(input_tokens=1, output_tokens=1)

    def answer(received: Optional[str]) -> ModelResponse:
        chosen = script.next(received)
        if chosen is None:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        name, arguments = chosen
        return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=script.call_id())], usage=usage)

    async def respond(messages: list, info: AgentInfo) -> ModelResponse:
        received = _received(messages)
        if before is not None:
            await before(script, received)
        return answer(received)

    return FunctionModel(respond)


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store") as opened:
        yield opened


def agent(script: Script, store: ToolOutputStore, name: str = "big", **options: Any) -> Agent:
    return Agent(scripted(script, **options), tools=[TOOLS[name]], capabilities=[capability(store)])


def test_capability_provides_read_and_grep_with_the_tools_schemas(store):
    expected = expected_paging(store)
    seen: dict[str, Any] = {}

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        seen.update({tool.name: tool for tool in info.function_tools})
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), tools=[big], capabilities=[capability(store)]).run_sync("go")
    assert set(seen) == {"big", "read", "grep"}
    for name in ("read", "grep"):
        assert (seen[name].description, seen[name].parameters_json_schema) == (
            expected[name]["description"], expected[name]["parameters"])
    assert set(toolset(store).tools) == {"read", "grep"}


def test_scenario_sync(store, tmp_path, monkeypatch):
    # The model first tries the working folder's files through read and grep: each is refused.
    write_secret(tmp_path)
    monkeypatch.chdir(tmp_path)
    script = Script(probes=file_probes())
    result = agent(script, store).run_sync("go")
    assert result.output == "done"
    script.check()
    check_files_refused(script)
    (record,) = store.records()
    assert record.tool_call_id.startswith("call-")
    # The run's conversation is the session: a run continuing its history can read what it stored.
    later = Script()
    later.foreign = script.uri
    agent(later, store).run_sync("go on", message_history=result.all_messages())
    later.check()
    assert later.foreign_answer.startswith(BIG[:20])


def test_scenario_async(store):
    script = Script()
    asyncio.run(agent(script, store).run("go"))
    script.check()
    assert len(store.records()) == 1


def test_small_result_passes_untouched_and_nothing_is_stored(store):
    script = Script("small")
    with pytest.raises(AssertionError, match="no marker"):
        agent(script, store, "small").run_sync("go")
    assert script.received == [SMALL]
    assert store.records() == []


def test_json_result_is_stored_as_json_text(store):
    script = Script("table", pattern='"row 12345"')
    asyncio.run(agent(script, store, "table").run("go"))
    (record,) = store.records()
    text = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert json.loads(text) == table()
    assert "".join(script.pages) == text.encode()[script.offset:].decode()


def test_raising_tool_reaches_the_model_as_pydantic_ai_shows_errors(store):
    outcomes = []
    for capabilities in ([], [capability(store)]):
        script = Script("broken")
        with pytest.raises(RuntimeError) as raised:
            Agent(scripted(script), tools=[broken], capabilities=capabilities).run_sync("go")
        outcomes.append((str(raised.value), script.received))
    assert outcomes[0] == outcomes[1] == ("the disk is on fire", [])
    # A tool asking for a retry reaches the model as PydanticAI's retry prompt, as without the capability.
    from pydantic_ai import ModelRetry

    def flaky() -> str:
        """Ask for another try."""
        raise ModelRetry("the disk is warming up")

    received = []
    for capabilities in ([], [capability(store)]):
        script = Script("flaky")
        with pytest.raises(AssertionError, match="no marker"):
            Agent(scripted(script), tools=[flaky], capabilities=capabilities).run_sync("go")
        received.append(script.received)
    assert received[0] == received[1] and "the disk is warming up" in received[0][0]
    assert store.records() == []


def test_paging_errors_reach_the_model_as_tool_failures(store):
    script = Script()
    script.foreign = "tool-output://0123456789abXXXXXXXXXXXXXX"
    agent(script, store).run_sync("go")
    script.check()
    assert script.foreign_answer == "no resource tool-output://0123456789abXXXXXXXXXXXXXX"


def test_concurrent_runs_do_not_see_each_others_uris(store):
    rendezvous = Rendezvous()
    scripts = [Script(), Script()]
    shared = Agent(tools=[big], capabilities=[capability(store)])  # one agent for both runs

    async def main() -> None:
        await asyncio.gather(*(shared.run("go", model=scripted(script, before=rendezvous.before))
                               for script in scripts))

    asyncio.run(main())
    for script in scripts:
        script.check()
        assert "not found in this session" in script.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


# ------------------------------------------------------------------ regressions (red team 3)
def test_text_beside_media_is_bounded_and_the_media_passes(store):
    # A list holding media and text: PydanticAI sends the media as files and the rest as the tool's text.
    # The capability once passed such a list whole, so 1.3 MB of text beside an image reached the model.
    from pydantic_ai import ToolReturn
    from pydantic_ai.messages import BinaryContent

    image = BinaryContent(data=b"\x89PNG\r\n\x1a\n" + bytes(64), media_type="image/png")

    def pictured() -> list:
        """A large text beside an image."""
        return [BIG, image]

    def returned() -> Any:
        """The same as a ToolReturn's return value."""
        return ToolReturn(return_value=[BIG, image])

    for tool in (pictured, returned):
        script = Script(tool.__name__)
        result = Agent(scripted(script), tools=[tool], capabilities=[capability(store)]).run_sync("go")
        script.check()  # the preview's marker, then pages reproducing BIG exactly
        (first,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                    for part in message.parts if isinstance(part, ToolReturnPart) and part.tool_name == tool.__name__]
        assert image in list(first.content) and "tool-output://" in first.model_response_str()
    assert len(store.records()) == 2


# ------------------------------------------------------------------ regressions (red team 4)
def _sent(tool: Any, store: ToolOutputStore) -> list:
    """The parts of the request the model got after one call of ``tool``."""
    usage = RequestUsage(input_tokens=1, output_tokens=1)
    sent: list = []

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool.__name__, {}, tool_call_id="call-1")], usage=usage)
        sent.extend(messages[-1].parts)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    Agent(FunctionModel(respond), tools=[tool], capabilities=[capability(store)]).run_sync("go")
    return sent


def test_a_tool_returns_content_is_bounded_too(store):
    # ToolReturn.content goes to the model as a message of its own; it passed whole (1.3 MB).
    from pydantic_ai import ToolReturn
    from pydantic_ai.messages import BinaryContent, UserPromptPart

    image = BinaryContent(data=b"\x89PNG\r\n\x1a\n" + bytes(64), media_type="image/png")

    def extra() -> Any:
        """A short return value, with a large text and an image sent beside it."""
        return ToolReturn(return_value="see below", content=[BIG, image])

    def extra_text() -> Any:
        """A large string as the extra content."""
        return ToolReturn(return_value="see below", content=BIG)

    for tool in (extra, extra_text):
        parts = _sent(tool, store)
        (returned,) = [part for part in parts if isinstance(part, ToolReturnPart)]
        (prompt,) = [part for part in parts if isinstance(part, UserPromptPart)]
        texts = [prompt.content] if isinstance(prompt.content, str) else [
            item for item in prompt.content if isinstance(item, str)]
        assert returned.content == "see below"
        assert len(texts) == 1 and "tool-output://" in texts[0] and len(texts[0].encode()) < 60_000
        assert tool is extra_text or image in list(prompt.content)
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [BIG, BIG]


def test_text_beside_media_is_bounded_together(store):
    # Thirty strings of 40 KB beside an image were each within the limits: 1.2 MB reached the model.
    from pydantic_ai.messages import BinaryContent

    image = BinaryContent(data=b"\x89PNG\r\n\x1a\n" + bytes(64), media_type="image/png")
    pieces = [f"piece {index} " + "x" * 40_000 for index in range(30)]

    def many() -> list:
        """Many strings, each within the limits, beside an image."""
        return pieces[:10] + [image] + pieces[10:]

    (returned,) = [part for part in _sent(many, store) if isinstance(part, ToolReturnPart)]
    texts = [item for item in returned.content if isinstance(item, str)]
    assert image in list(returned.content) and len(texts) == 1 and "tool-output://" in texts[0]
    (record,) = store.records()
    stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert stored == "\n".join(pieces)


# ------------------------------------------------------------------ regressions (red team L)
def test_grep_with_its_context_argument_reaches_the_model(store):
    # grep's schema has a ``context`` argument (lines around each match); the paging tool's function took
    # the run context as ``context``, so the model's call crashed the run with "got multiple values for
    # argument 'context'".  The capability's grep and toolset()'s grep both take it.
    usage = RequestUsage(input_tokens=1, output_tokens=1)
    needle = scenario.NEEDLE

    def model(first: tuple) -> tuple[FunctionModel, list]:
        received: list = []

        def respond(messages: list, info: AgentInfo) -> ModelResponse:
            if len(messages) > 1:
                received.append(_received(messages))
            if len(received) == 0:
                return ModelResponse(parts=[ToolCallPart(*first, tool_call_id="call-0")], usage=usage)
            if len(received) == 1 and first[0] == "big":
                uri = scenario.MARKER.search(received[0]).group(1)
                return ModelResponse(parts=[ToolCallPart(
                    "grep", {"pattern": f"^{needle}$", "resource": uri, "context": 1}, tool_call_id="call-1")],
                    usage=usage)
            return ModelResponse(parts=[TextPart("done")], usage=usage)

        return FunctionModel(respond), received

    bounded, received = model(("big", {}))
    Agent(bounded, tools=[big], capabilities=[capability(store)]).run_sync("go")
    found = received[1]
    assert f":{needle}\n" in found and f"-{int(needle) - 1}\n" in found and f"-{int(needle) + 1}\n" in found
    foreign = "tool-output://0123456789abXXXXXXXXXXXXXX"
    alone, received = model(("grep", {"pattern": "x", "resource": foreign, "context": 1}))
    Agent(alone, toolsets=[toolset(store)]).run_sync("go")
    assert received[0].startswith(f"no resource {foreign}"), received  # the tool's failure, not a crash


def test_a_retry_or_failure_message_is_bounded_and_stored(store):
    # A tool's ModelRetry or ToolFailed (as PydanticAI's MCPToolset raises for an MCP server's isError
    # result) is shown to the model instead of a result; its message reached the model whole (1.3 MB)
    # because after_tool_execute never sees it.  Now it is stored and previewed like a result, and the
    # model pages it back exactly; the error keeps its kind (a retry stays a retry, a failure a failure).
    from pydantic_ai import ModelRetry
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailed

    log = "build failed:\n" + BIG

    def retrying() -> str:
        """Ask for another try, with the long log of what failed."""
        raise ModelRetry(log)

    def failing() -> str:
        """Fail for good, with the long log."""
        raise ToolFailed(log)

    def fine() -> str:
        """A small result a later capability rejects with a long retry message."""
        return "ok"

    class Rejecting(AbstractCapability[Any]):
        # Another capability's hook raising ModelRetry reaches overspill's wrap_tool_execute as it is.
        async def after_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any) -> Any:
            if tool_def.name == "fine":
                raise ModelRetry(log)
            return result

    outcomes = {}
    for tool, extra in ((retrying, []), (failing, []), (fine, [Rejecting()])):
        script = Script(tool.__name__)
        result = Agent(scripted(script), tools=[tool], capabilities=[capability(store), *extra]).run_sync("go")
        script.check(log)  # the preview's marker, pages reproducing the message exactly, grep
        (first,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                    for part in message.parts if getattr(part, "tool_name", None) == tool.__name__]
        outcomes[tool.__name__] = type(first).__name__ if isinstance(first, RetryPromptPart) else first.outcome
    assert outcomes["failing"] == "failed" and outcomes["retrying"] in ("retried", "RetryPromptPart")
    assert outcomes["fine"] == outcomes["retrying"]
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log] * 3


def test_a_bounded_retry_keeps_the_users_subclass_without_calling_its_init_again(store):
    """Regression (review M, duplicate): ``_bounded_error`` rebuilt a ModelRetry with ``copy.copy``,
    which calls ``__init__`` with the message alone: a subclass whose ``__init__`` takes other
    arguments fell back to a bare ModelRetry (its type and attributes lost).  It uses ``_core.retold``
    now, as the other adapters do: the subclass, its attributes, the bounded text, no second ``__init__``."""
    from pydantic_ai import ModelRetry
    from pydantic_ai.exceptions import ToolFailed

    made = []

    class Flaky(ModelRetry):
        def __init__(self, attempt: int, log: str) -> None:
            made.append(attempt)
            self.attempt = attempt
            super().__init__(log)

    class Gone(ToolFailed):
        def __init__(self, log: str, *, where: str) -> None:
            made.append(where)
            self.where = where
            super().__init__(log)

    bounding = capability(store)
    log = "build failed:\n" + BIG
    for error, kept in ((Flaky(3, log), ("attempt", 3)), (Gone(log, where="disk"), ("where", "disk"))):
        bounded = asyncio.run(bounding._bounded_error("s", "c1", error))
        assert type(bounded) is type(error) and getattr(bounded, kept[0]) == kept[1]
        assert bounded.message == str(bounded) == bounded.args[0] and "tool-output://" in bounded.message
        assert len(bounded.message) < len(log)
    assert made == [3, "disk"]  # each __init__ ran once, when the tool raised


# ------------------------------------------------------------------ regressions (red team A11)
def test_long_conversation_and_call_ids_are_bounded_in_sessions_of_their_own(store):
    """Regression (red team A11, f01): a model's tool_call_id (or a run's conversation_id) over the
    store's 1024-byte bound for an id failed the run with the store's ValueError, even for a 4-byte
    result.  Now: a small result passes untouched; a large one is bounded and paged in the conversation's
    session, which is the same for every run of it and apart from another long conversation id's
    differing only at its end."""
    from adapter_scenario import LONG_ID, LongIdScript

    script = LongIdScript("small")
    with pytest.raises(AssertionError, match="no marker"):
        agent(script, store, "small").run_sync("go", conversation_id=LONG_ID + "a")
    assert script.received == [SMALL] and store.records() == []
    first = LongIdScript()
    agent(first, store).run_sync("go", conversation_id=LONG_ID + "a")
    first.check()
    for conversation, shown in (("b", False), ("a", True)):  # the first run's URI, from another one, then its own
        later = LongIdScript()
        later.foreign = first.uri
        agent(later, store).run_sync("go", conversation_id=LONG_ID + conversation)
        later.check()
        assert later.foreign_answer.startswith(BIG[:20]) is shown, later.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


# ------------------------------------------------------------------ regressions (red team P12)
def test_an_output_functions_retry_message_is_bounded_and_stays_a_retry(store):
    # A ModelRetry raised by an output function (ToolOutput(fn), TextOutput(fn)) or an output validator
    # reached the model whole (538 KB, nothing stored): an output tool's call goes through the output
    # hooks, not wrap_tool_execute.  Now it is stored and previewed as a tool's retry is, the model pages
    # it back exactly, and it stays a retry (the model tries again, the run goes on).
    from pydantic_ai import ModelRetry, TextOutput, ToolOutput
    from pydantic_ai.capabilities import AbstractCapability

    log = "the answer is not ready:\n" + BIG

    def answer() -> str:
        """The final answer."""
        raise ModelRetry(log)

    def passes() -> str:
        """The final answer, which the output validator rejects."""
        return "ok"

    class Rejecting(AbstractCapability[Any]):
        # Another capability's output hook raising ModelRetry reaches overspill's wrap_output_validate.
        rejected = False

        async def after_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            if not self.rejected:
                self.rejected = True
                raise ModelRetry(log)
            return output

    for function, validated, extra in ((answer, False, []), (passes, True, []), (passes, False, [Rejecting()])):
        script = Script("final_result")
        run = Agent(scripted(script), output_type=[ToolOutput(function), str],
                    capabilities=[capability(store), *extra])
        if validated:
            @run.output_validator
            def reject(output: str) -> str:
                if output == "ok":
                    raise ModelRetry(log)
                return output
        result = run.run_sync("go")
        assert result.output == "done"
        script.check(log)  # the preview's marker, pages reproducing the message exactly, grep
        (first,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                    for part in message.parts if getattr(part, "tool_name", None) == "final_result"]
        assert isinstance(first, RetryPromptPart) or first.outcome == "retried"
    # A text output function's retry (no call to answer: harness feedback) is bounded too.
    seen: list = []

    def shout(text: str) -> str:
        if text == "first":
            raise ModelRetry(log)
        return text.upper()

    async def respond(messages: list, info: AgentInfo) -> ModelResponse:
        again = len(messages) > 1  # the feedback reaches the model as the next request's text
        if again:
            seen.extend(part.content for part in messages[-1].parts)
        return ModelResponse(parts=[TextPart("second" if again else "first")],
                             usage=RequestUsage(input_tokens=1, output_tokens=1))

    result = Agent(FunctionModel(respond), output_type=TextOutput(shout), capabilities=[capability(store)]) \
        .run_sync("go")
    assert result.output == "SECOND"
    (shown,) = seen
    assert "tool-output://" in shown and "retry_feedback" in shown and len(shown.encode()) < 60_000
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log] * 4


def test_a_deferred_tools_result_given_back_is_bounded(store):
    # A deferred call's result given back with DeferredToolResults(calls=...) (an ExternalToolset's tool, or
    # a tool that raised CallDeferred) reached the model whole (538 KB, nothing stored): PydanticAI never
    # runs after_tool_execute for it.  Now the resumed run's results are bounded before they become tool
    # returns: a value or a ToolReturn's as a tool's result, a ModelRetry's or ToolFailed's message as a
    # tool's, each keeping its kind; the model pages the stored text back exactly.  A RetryPromptPart given
    # back (deprecated, "the same result as ModelRetry") reached the model whole too: its text is bounded
    # as a ModelRetry's, and it stays a retry.
    import warnings

    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ModelRetry
    from pydantic_ai.exceptions import PydanticAIDeprecationWarning, ToolFailed
    from pydantic_ai.messages import ToolReturn
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    log = "the job's log:\n" + BIG
    external = ExternalToolset([ToolDefinition(name="big", parameters_json_schema={"type": "object",
                                                                                   "properties": {}})])
    kinds = {}
    for name, given in (("value", log), ("return", ToolReturn(log)), ("retry", ModelRetry(log)),
                        ("failure", ToolFailed(log)),
                        ("prompt", lambda call_id: RetryPromptPart(content=log, tool_name="big",
                                                                   tool_call_id=call_id))):
        script = Script()
        run = Agent(scripted(script), output_type=[str, DeferredToolRequests], toolsets=[external],
                    capabilities=[capability(store)])
        paused = run.run_sync("go")
        (call,) = paused.output.calls
        if callable(given):  # a part names the call it answers
            with warnings.catch_warnings():  # the deprecated part's own warning, for making it: the test's doing
                warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
                given = given(call.tool_call_id)
        result = run.run_sync(message_history=paused.all_messages(),
                              deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: given}))
        assert result.output == "done"
        script.check(log)  # the preview's marker, pages reproducing the result exactly, grep
        (first,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                    for part in message.parts if getattr(part, "tool_call_id", None) == call.tool_call_id]
        kinds[name] = "retried" if isinstance(first, RetryPromptPart) else first.outcome
    assert kinds == {"value": "success", "return": "success", "retry": "retried", "failure": "failed",
                     "prompt": "retried"}
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log] * 5


# ------------------------------------------------------------------ regressions (red team B13)
def test_an_args_validators_retry_or_failure_is_bounded_and_keeps_its_kind(store):
    # A ModelRetry or ToolFailed raised by a tool's args_validator (Tool(fn, args_validator=...)), or by
    # another capability's before_tool_validate or wrap_tool_validate, reached the model whole (1.3 MB,
    # nothing stored): PydanticAI raises it in the validate stage, before any execute hook.  Now it is
    # stored and previewed as a tool's is, the model pages it back exactly, and it keeps its kind.
    from pydantic_ai import ModelRetry, Tool
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailed

    log = "arguments rejected:\n" + BIG

    def rejecting(ctx: Any) -> None:
        raise ModelRetry(log)

    def failing(ctx: Any) -> None:
        raise ToolFailed(log)

    def tool(name: str, validator: Any = None) -> Tool:
        def run() -> str:
            return "ok"

        run.__name__ = run.__doc__ = name
        return Tool(run, name=name, args_validator=validator)

    class Rejecting(AbstractCapability[Any]):
        # Another capability's validate hooks: before_tool_validate runs inside overspill's
        # wrap_tool_validate, and so does a wrap_tool_validate of a capability listed after overspill's.
        async def before_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            if tool_def.name == "before":
                raise ModelRetry(log)
            return args

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            if tool_def.name == "wrapped":
                raise ModelRetry(log)
            return await handler(args)

    outcomes = {}
    for name, validator in (("retrying", rejecting), ("failing", failing), ("before", None), ("wrapped", None)):
        script = Script(name)
        result = Agent(scripted(script), tools=[tool(name, validator)],
                       capabilities=[capability(store), Rejecting()]).run_sync("go")
        script.check(log)  # the preview's marker, pages reproducing the message exactly, grep
        (first,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                    for part in message.parts if getattr(part, "tool_name", None) == name]
        outcomes[name] = first.outcome
    assert outcomes == {"retrying": "retried", "failing": "failed", "before": "retried", "wrapped": "retried"}
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log] * 4


def test_huge_arguments_failing_validation_are_bounded_and_stay_a_retry(store):
    # Arguments failing validation come back to the model as a retry holding pydantic's error details,
    # whose "input" is the argument itself: 1.3 MB arguments were echoed back whole (nothing stored), for a
    # function tool, an output tool (final_result) and a prompted output alike, as _bounded_part took only
    # a text.  Now the text the model is shown of the details (PydanticAI's JSON of them) is stored whole
    # and previewed, and the retry stays a retry; small details pass as they are.
    from pydantic import BaseModel
    from pydantic_ai import PromptedOutput

    log = "the arguments:\n" + BIG
    usage = RequestUsage(input_tokens=1, output_tokens=1)

    class Answer(BaseModel):
        n: int

    def count(n: int) -> str:
        """Count."""
        return str(n)

    def retried(how: str, value: str, capabilities: list) -> tuple[Any, str]:
        """The retry the model got for its first answer (``how``) made with ``value``, and its text."""
        sent: list = []

        async def respond(messages: list, info: AgentInfo) -> ModelResponse:
            if len(messages) > 1:
                sent.append(messages[-1].parts[0])
                return ModelResponse(parts=[TextPart('{"n": 1}' if how == "prompted" else "done")], usage=usage)
            if how == "prompted":
                return ModelResponse(parts=[TextPart(json.dumps({"n": value}))], usage=usage)
            return ModelResponse(parts=[ToolCallPart(how, {"n": value}, tool_call_id="c1")], usage=usage)

        output_type = PromptedOutput(Answer) if how == "prompted" else [Answer, str]
        result = Agent(FunctionModel(respond), tools=[count], output_type=output_type,
                       capabilities=capabilities).run_sync("go")
        assert result.output in ("done", Answer(n=1))  # the retry was one: the model tried again
        (part,) = sent
        return part, part.model_response_str() if isinstance(part, ToolReturnPart) else part.content

    for how in ("count", "final_result", "prompted"):
        whole, shown_whole = retried(how, log, [])
        assert len(shown_whole.encode()) > len(log)
        before = len(store.records())
        part, shown = retried(how, log, [capability(store)])
        assert type(part) is type(whole) and getattr(part, "outcome", None) == getattr(whole, "outcome", None)
        assert "tool-output://" in shown and len(shown.encode()) < 60_000, shown[:200]
        (record,) = store.records()[before:]
        stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri))
        assert stored.decode() in shown_whole  # the details' text as PydanticAI showed it, stored whole
        assert [detail["input"] for detail in json.loads(stored)] == [log]
        small, shown_small = retried(how, "twelve", [capability(store)])
        assert shown_small == retried(how, "twelve", [])[1] and "tool-output://" not in shown_small
        assert len(store.records()) == before + 1  # small details are not stored


def test_a_retry_part_is_bounded_without_the_frameworks_deprecation_warning(store):
    # Bounding a RetryPromptPart the user gave (deprecated, as a deferred call's result) made a new one with
    # dataclasses.replace: PydanticAI's deprecation warning at each, attributed to dataclasses.py, for a
    # part the user's code had already made.  Now none is emitted; the part keeps its type, as does the
    # form that replaces it (a ToolReturnPart with outcome='retried').
    import warnings

    from pydantic_ai.exceptions import PydanticAIDeprecationWarning

    log = "try again:\n" + BIG
    with warnings.catch_warnings():  # the user's own construction warns: not the adapter's doing
        warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
        old = RetryPromptPart(content=log, tool_name="big", tool_call_id="c1")
    new = ToolReturnPart(tool_name="big", content=log, tool_call_id="c1", outcome="retried")
    bounding = capability(store)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bounded = [asyncio.run(bounding._bounded_part("s", f"c{n}", part)) for n, part in enumerate((old, new))]
    assert [warning for warning in caught if issubclass(warning.category, PydanticAIDeprecationWarning)] == []
    for part, made in zip((old, new), bounded):
        assert type(made) is type(part) and made.tool_call_id == part.tool_call_id
        assert "tool-output://" in made.content and len(made.content.encode()) < 60_000
    assert bounded[1].outcome == "retried"


def test_the_adapter_imports_and_bounds_without_the_deprecated_retry_prompt_part(store, monkeypatch):
    # The adapter imported RetryPromptPart by name at module import: on a PydanticAI without it (to be
    # removed in v3) importing the adapter raised a raw ImportError.  Now the name is optional: the adapter
    # imports, and a resumed run's deferred retry is bounded as before.
    import importlib
    import sys

    import pydantic_ai.messages
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ModelRetry
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    import overspill.adapters

    name = "overspill.adapters.pydantic_ai"
    monkeypatch.setattr(overspill.adapters, "pydantic_ai", sys.modules[name])  # each put back after the test
    monkeypatch.delitem(sys.modules, name)
    legacy = pydantic_ai.messages.RetryPromptPart
    monkeypatch.delattr(pydantic_ai.messages, "RetryPromptPart")
    fresh = importlib.import_module(name)
    # PydanticAI 2 itself still reads the name during a run: given back, the adapter imported without it.
    monkeypatch.setattr(pydantic_ai.messages, "RetryPromptPart", legacy, raising=False)
    assert fresh._LEGACY_RETRY_PARTS == ()

    log = "the job's log:\n" + BIG
    external = ExternalToolset([ToolDefinition(name="big", parameters_json_schema={"type": "object",
                                                                                   "properties": {}})])
    script = Script()
    run = Agent(scripted(script), output_type=[str, DeferredToolRequests], toolsets=[external],
                capabilities=[fresh.capability(store)])
    paused = run.run_sync("go")
    (call,) = paused.output.calls
    result = run.run_sync(message_history=paused.all_messages(),
                          deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: ModelRetry(log)}))
    assert result.output == "done"
    script.check(log)


def test_a_huge_cut_off_output_still_raises_and_a_bounded_validation_retry_keeps_its_cause(store):
    # Review R14: a2f70e9 turned a huge ValidationError into a ModelRetry saying the preview, so PydanticAI
    # no longer saw JSON cut off by the token limit (finish_reason 'length': it raises
    # OutputTokenLimitExceeded, without overspill, rather than retry with the same limit) and the retry's
    # cause read 'model_retry'.  The error now stays a ValidationError, each huge input its preview: the
    # cut-off output raises as it did, and a retry keeps cause 'validation_error'.  The text measured and
    # stored is the one PydanticAI shows, a repeated root-level input once.
    from pydantic import BaseModel
    from pydantic_ai import PromptedOutput
    from pydantic_ai.exceptions import OutputTokenLimitExceeded

    usage = RequestUsage(input_tokens=1, output_tokens=1)

    class Answer(BaseModel):
        text: str

    def cut_off(messages: list, info: AgentInfo) -> ModelResponse:
        calls.append(1)
        text = json.dumps({"text": "x" * size})[:-5]  # JSON cut off mid-string
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart("final_result", text, tool_call_id="c1")], usage=usage,
                                 finish_reason="length")
        return ModelResponse(parts=[TextPart(text)], usage=usage, finish_reason="length")

    for output_type in (PromptedOutput(Answer), Answer):
        for size in (100, 1_000_000):
            for capabilities in ([], [capability(store)]):
                calls: list = []
                with pytest.raises(OutputTokenLimitExceeded):
                    Agent(FunctionModel(cut_off), output_type=output_type,
                          capabilities=capabilities).run_sync("go")
                assert calls == [1], (output_type, size, capabilities)

    def f(a: int, b: int, c: int, d: int) -> str:
        """f."""
        return "ok"

    def retried(capabilities: list) -> Any:
        sent: list = []

        def respond(messages: list, info: AgentInfo) -> ModelResponse:
            if len(messages) > 1:
                sent.append(messages[-1].parts[0])
                return ModelResponse(parts=[TextPart("done")], usage=usage)
            return ModelResponse(parts=[ToolCallPart("f", {"data": BIG}, tool_call_id="c1")], usage=usage)

        Agent(FunctionModel(respond), tools=[f], capabilities=capabilities).run_sync("go")
        return sent[0]

    whole = retried([])
    before = len(store.records())
    part = retried([capability(store)])
    assert (part.outcome, part.retry) == (whole.outcome, whole.retry)
    assert whole.retry.cause == "validation_error"
    assert "tool-output://" in part.model_response_str()
    (record,) = store.records()[before:]
    stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    # Four missing fields sharing the whole input, shown once, and the unexpected one's own input, as
    # PydanticAI showed them (in its {"error": ...}): to_json of the details held the whole input five times.
    assert stored in whole.model_response_str() and json.loads(stored) == whole.content
    assert sum("input" in detail for detail in json.loads(stored)) == 2


# ------------------------------------------------------------------ regressions (red team G13)
import pydantic as _pydantic  # noqa: E402  (the tools' annotations are resolved at module level)


def _validation_retry(tool: Any, arguments: dict, capabilities: list) -> Any:
    """The part the model got back for calling ``tool`` with ``arguments`` (which fail its validation,
    or make it fail)."""
    usage = RequestUsage(input_tokens=1, output_tokens=1)
    sent: list = []

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            sent.append(messages[-1].parts[0])
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        return ModelResponse(parts=[ToolCallPart(tool.__name__, arguments, tool_call_id="c1")], usage=usage)

    Agent(FunctionModel(respond), tools=[tool], capabilities=capabilities).run_sync("go")
    return sent[0]


def _shown_details(part: Any) -> str:
    """The details' text the model is shown in an errored tool return (PydanticAI's ``{"error": ...}``)."""
    shown = part.model_response_str()
    assert shown.startswith('{"error":') and shown.endswith("}"), shown[:200]
    return shown[len('{"error":'):-1]


def _check_bounded_retry(store: ToolOutputStore, tool: Any, arguments: dict) -> tuple[list, list]:
    """Call ``tool`` with ``arguments`` with and without the capability; check that the details the model
    is shown with it are within the store's limits, stay a validation retry, and name one URI whose stored
    text is the whole details' text shown without it.  The details shown whole and bounded."""
    import re

    from overspill.text import shown_size, within_limits

    whole = _validation_retry(tool, arguments, [])
    part = _validation_retry(tool, arguments, [capability(store)])
    shown, shown_whole = _shown_details(part), _shown_details(whole)
    limits = store.limits()
    assert shown_size(shown_whole) > limits.max_bytes  # (the case is over the limits at all)
    assert within_limits(shown.count("\n"), shown_size(shown), shown.endswith("\n"), limits.max_lines,
                         limits.max_bytes), shown_size(shown)
    assert (part.outcome, part.retry) == (whole.outcome, whole.retry) and part.retry.cause == "validation_error"
    (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", shown))
    (record,) = [record for record in store.records() if record.resource.uri == uri]
    stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, uri)).decode()
    assert stored == shown_whole
    return whole.content, part.content


def test_many_inputs_each_under_the_preview_are_bounded_together(store):
    # Red team G13 (1): ten 30 KB arguments failing validation, none alone longer than the preview, so
    # _with_inputs_previewed replaced none: the model was shown all 301 KB, and the stored copy the
    # adapter had made was named nowhere.  Now each input over a budget halved until the details' text
    # fits the limits is a short reference to that copy.
    def ten(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int, i: int, j: int) -> str:
        """Ten numbers."""
        return "ok"

    whole, bounded = _check_bounded_retry(store, ten, {name: name * 30_000 for name in "abcdefghij"})
    assert [(detail["type"], detail["loc"]) for detail in bounded] == [(detail["type"], detail["loc"])
                                                                      for detail in whole]
    assert all("tool-output://" in detail["input"] for detail in bounded)


def test_many_huge_inputs_do_not_each_get_the_whole_preview(store):
    # Red team G13 (2): thirty items each longer than the preview were each replaced by the whole preview
    # (1.4 MB shown for 30 inputs of 2.7 MB); the preview escaped again in the details' JSON is over the
    # limits on its own.  Now each is a short reference to the stored text (the first, room allowing,
    # with its head and tail).
    def listed(x: list[int]) -> str:
        """Numbers."""
        return "ok"

    huge = "\n".join(f"line {n} " + "x" * 60 for n in range(1_000))  # 70 KB: over the 50 KiB preview
    whole, bounded = _check_bounded_retry(store, listed, {"x": [str(n) + huge for n in range(30)]})
    assert [(detail["type"], detail["loc"]) for detail in bounded] == [(detail["type"], detail["loc"])
                                                                      for detail in whole]
    first, *others = [detail["input"] for detail in bounded]  # the first with its head and tail, where room allows
    assert first.startswith("0line 0 ") and first.endswith(huge[-20:]) and "tool-output://" in first
    assert all(len(json.dumps(shown)) < 1_000 and "tool-output://" in shown for shown in others)


class _Rejected(_pydantic.BaseModel):
    """A model whose validator rejects any value with a message holding it (as validators often word it)."""

    v: str

    @_pydantic.field_validator("v")
    @classmethod
    def check(cls, v: str) -> str:
        from pydantic_core import PydanticCustomError

        raise PydanticCustomError("too_big", "rejected: " + v)


def test_a_huge_custom_error_message_is_cut_and_says_where_it_is(store):
    # Red team G13 (3): a PydanticCustomError's message holding the huge value it rejects (2.7 MB) was kept
    # whole: only inputs were replaced.  Now a message over the budget is cut, its head and tail kept, and
    # says where the whole error is stored; the detail keeps its type and place.
    def custom(x: _Rejected) -> str:
        """A checked value."""
        return "ok"

    huge = "\n".join(f"line {n} " + "x" * 60 for n in range(3_000))
    whole, bounded = _check_bounded_retry(store, custom, {"x": {"v": huge}})
    assert [(detail["type"], detail["loc"]) for detail in bounded] == [("too_big", whole[0]["loc"])]
    (message,) = [detail["msg"] for detail in bounded]
    assert message.startswith("rejected: line 0 ") and "tool-output://" in message
    assert message.endswith(huge[-20:])


def test_thousands_of_failing_details_end_with_how_many_more_there_are(store):
    # Red team G13 (4): thousands of small failing items, each detail short, are together far over the
    # limits, and no input or message can be shortened: the first details that fit are kept, and one
    # more detail (overspill_more_errors) says how many others there are and where all of them are stored.
    def listed(x: list[int]) -> str:
        """Numbers."""
        return "ok"

    whole, bounded = _check_bounded_retry(store, listed, {"x": ["no"] * 5_000})
    *kept, more = bounded
    assert 10 < len(kept) < 5_000 and kept == whole[:len(kept)]
    assert more["type"] == "overspill_more_errors" and "tool-output://" in more["msg"]
    assert f"{5_000 - len(kept)} more" in more["msg"]


def test_validation_details_the_store_cannot_keep_are_bounded_and_say_so(tmp_path):
    # Red team G13: without a stored copy (a data folder that cannot be written) the details are bounded
    # all the same, and say that the whole error was not stored rather than name a URI.
    import shutil

    from overspill.text import shown_size, within_limits

    def ten(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int, i: int, j: int) -> str:
        """Ten numbers."""
        return "ok"

    folder = tmp_path / "store"
    with ToolOutputStore(folder) as store:
        shutil.rmtree(folder)
        folder.write_text("")  # the disk went bad: a file where the data folder was
        part = _validation_retry(ten, {name: name * 30_000 for name in "abcdefghij"}, [capability(store)])
        shown = _shown_details(part)
        limits = store.limits()
        assert within_limits(shown.count("\n"), shown_size(shown), shown.endswith("\n"), limits.max_lines,
                             limits.max_bytes), shown_size(shown)
        assert "tool-output://" not in shown and "not stored" in shown
        assert part.retry.cause == "validation_error"


# ------------------------------------------------------------------ regressions (review R16)
def test_a_huge_place_is_cut_and_every_detail_is_kept(store):
    # Review R16 (1): a detail's loc was never shortened, so a 1 MB dict key made its detail, and every
    # detail after it, one overspill_more_errors detail ("3 more validation errors not shown").  Now a
    # loc item over the budget is cut to its head and tail saying where the whole error is, as messages
    # are: every detail keeps its type, and the small ones their places.
    def mapped(x: dict[str, int]) -> str:
        """Numbers by name."""
        return "ok"

    key = "k" * 500_000 + "m" * 500_000
    whole, bounded = _check_bounded_retry(store, mapped, {"x": {key: "no", "a": "no1", "b": "no2"}})
    assert [detail["type"] for detail in bounded] == [detail["type"] for detail in whole] == ["int_parsing"] * 3
    assert [detail["loc"] for detail in bounded[1:]] == [detail["loc"] for detail in whole[1:]]
    outer, cut = bounded[0]["loc"]
    assert outer == "x" and cut.startswith("kkkk") and cut.endswith("mmmm") and "tool-output://" in cut
    assert len(cut) < 60_000


def test_validation_details_are_bounded_off_the_event_loop(store):
    # Review R16 (3): a ValidationError's details were rendered, and bounded at each of ~9 budgets, on the
    # event loop (seconds for 50k details), though the store's write of them ran on a worker thread.  Now
    # the rendering and the bounding run on that same worker thread: an input's serializer (run to
    # measure and to show it) never runs on the loop's thread.
    import threading

    from pydantic import BaseModel, model_serializer

    threads: set = set()

    class Blob(BaseModel):
        @model_serializer
        def whole(self) -> str:
            threads.add(threading.get_ident())
            return "b" * 100_000

    loop: list = []

    async def counted(xs: list) -> int:
        loop.append(threading.get_ident())
        from pydantic import TypeAdapter

        TypeAdapter(list[int]).validate_python([Blob()] * 3)  # raises: each detail's input a Blob
        return 0

    from pydantic_ai import ToolOutput

    usage = RequestUsage(input_tokens=1, output_tokens=1)
    sent: list = []

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            sent.append(messages[-1].parts[0])
            raise RuntimeError("seen")
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"xs": [1]}, tool_call_id="o1")],
                             usage=usage)

    with pytest.raises(RuntimeError, match="seen"):
        Agent(FunctionModel(respond), output_type=ToolOutput(counted), capabilities=[capability(store)]).run_sync("go")
    (part,) = sent
    assert part.retry.cause == "validation_error" and "tool-output://" in part.model_response_str()
    assert threads and loop and loop[0] not in threads


def test_a_deferred_retry_holding_validation_details_stays_a_validation_retry(store):
    # Review R16 (4): a deferred call resolved with a (deprecated) RetryPromptPart whose content is a
    # ValidationError's details (a list) had that list replaced by the preview string, so PydanticAI made
    # it a model_retry rather than a validation_error retry, and the string escaped inside {"error": ...}
    # was 55,930 bytes (over the 51,200).  Now a part whose content is a details list keeps a details list,
    # bounded as a ValidationError's are: the cause stays validation_error, within the limits, the whole
    # details' text stored under the URI they name.
    import re
    import warnings

    from pydantic import TypeAdapter
    from pydantic_ai import DeferredToolRequests, DeferredToolResults
    from pydantic_ai.exceptions import PydanticAIDeprecationWarning
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    from overspill.text import fits_limits

    try:
        TypeAdapter(list[int]).validate_python(["no"] * 20_000)
    except _pydantic.ValidationError as error:
        details = error.errors(include_url=False, include_context=False)
    external = ExternalToolset([ToolDefinition(name="big", parameters_json_schema={"type": "object",
                                                                                   "properties": {}})])

    usage = RequestUsage(input_tokens=1, output_tokens=1)

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        return ModelResponse(parts=[ToolCallPart("big", {}, tool_call_id="c1")], usage=usage)

    def answered(capabilities: list) -> Any:
        run = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests], toolsets=[external],
                    capabilities=capabilities)
        paused = run.run_sync("go")
        (call,) = paused.output.calls
        with warnings.catch_warnings():  # the deprecated part's own warning, for making it: the test's doing
            warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
            given = RetryPromptPart(content=details, tool_name="big", tool_call_id=call.tool_call_id)
        result = run.run_sync(message_history=paused.all_messages(),
                              deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: given}))
        (part,) = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                   for part in message.parts if getattr(part, "tool_call_id", None) == call.tool_call_id]
        return part

    whole, part = answered([]), answered([capability(store)])
    assert (part.outcome, part.retry) == (whole.outcome, whole.retry) and part.retry.cause == "validation_error"
    assert isinstance(part.content, list) and part.content[0] == whole.content[0]
    assert part.content[-1]["type"] == "overspill_more_errors"
    sent = part.model_response_str()
    assert fits_limits(sent, store.limits()), len(sent.encode())
    (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", sent))
    (record,) = [record for record in store.records() if record.resource.uri == uri]
    stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, uri)).decode()
    assert stored == _shown_details(whole)


# ------------------------------------------------------------------ regressions (E15)
def _read_whole(store: ToolOutputStore, uri: str) -> str:
    """The stored text of ``uri``, read page by page as the model's ``read`` does."""
    (record,) = [record for record in store.records() if record.resource.uri == uri]
    pages, offset = [], 0
    while offset is not None:
        page = store.read(record.session_id, uri, offset=offset)
        pages.append(page.content)
        offset = page.next
    return "".join(pages)


@pytest.mark.parametrize("message", [
    pytest.param('"' * 2_000_000, id="quotes"),
    pytest.param("\\" * 2_000_000, id="backslashes"),
    pytest.param("\x01\x1f\t" * 700_000, id="control-characters"),
    pytest.param("é\u2028\U0001f600" * 300_000, id="non-ascii"),
    pytest.param("\x01" * 12_000, id="control-characters-whose-own-text-fits"),
    pytest.param('line "quoted" \\ \x07\n' * 100_000, id="lines"),
])
@pytest.mark.parametrize("kind", ["ModelRetry", "ToolFailed"])
def test_a_retry_message_that_json_escaping_grows_reaches_the_model_within_the_limits(store, message, kind):
    # E15: a ModelRetry's (or ToolFailed's) message was bounded on its own text, but PydanticAI sends the
    # model that text escaped in its {"error": ...} JSON: 2 MB of quotes reached the model as 102,682
    # bytes (the limit 51,200), control characters as \u0001 six times their size, and 12,000 of them
    # (their own text within the limits) as 72 KB, nothing stored.  Now the text the model gets is what
    # is bounded: within max_bytes with the marker's room besides, one JSON line, naming the URI whose
    # pages give the message back exactly.
    import re

    from overspill.text import MARKER_BYTES, shown_size

    part = _retried(store, message, kind)
    assert part.outcome == ("retried" if kind == "ModelRetry" else "failed")
    limits = store.limits()
    # What a provider without an error channel of its own sends, and what one with it sends.
    for received in (part.model_response_str(), part.model_response_str(wrap_if_error=False)):
        assert shown_size(received) <= limits.max_bytes + MARKER_BYTES, shown_size(received)
        assert received.count("\n") < limits.max_lines + 5
    received = part.model_response_str()
    assert received.startswith('{"error":') and "\n" not in received
    (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", received))
    assert _read_whole(store, uri) == message


def test_validation_details_right_at_the_limit_reach_the_model_within_it(store):
    # E15: a ValidationError's details were measured without the {"error": ...} PydanticAI sends them in
    # (10 bytes), so details 3 bytes under the limit reached the model 7 bytes over it, nothing stored.
    # Now the measured text is the text the model gets: it is bounded, and names the whole details' text.
    import re

    from overspill.text import fits_limits, shown_size

    def count(n: int) -> str:
        """Count."""
        return str(n)

    limits = store.limits()
    framing = shown_size(_shown_details(_validation_retry(count, {"n": "x"}, []))) - 1
    arguments = {"n": "x" * (limits.max_bytes - 3 - framing)}
    whole = _validation_retry(count, arguments, [])
    assert shown_size(_shown_details(whole)) == limits.max_bytes - 3  # its details alone fit
    assert not fits_limits(whole.model_response_str(), limits)  # as the model gets them, they do not
    part = _validation_retry(count, arguments, [capability(store)])
    received = part.model_response_str()
    assert fits_limits(received, limits), shown_size(received)
    assert part.retry.cause == "validation_error" and isinstance(part.content, list)
    (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", received))
    assert _read_whole(store, uri) == _shown_details(whole)


# ------------------------------------------------------------------ regressions (review R22)
def _retried(store: ToolOutputStore, message: str, kind: str = "ModelRetry") -> Any:
    """The part the model gets after a tool raises ``kind(message)`` under the capability."""
    from pydantic_ai import ModelRetry
    from pydantic_ai.exceptions import ToolFailed

    error = {"ModelRetry": ModelRetry, "ToolFailed": ToolFailed}[kind]

    def failing() -> str:
        """Fail with a message."""
        raise error(message)

    return _validation_retry(failing, {}, [capability(store)])


@pytest.mark.parametrize("message", [
    pytest.param("no such file: /tmp/caf\udce9.txt " + "x" * 100_000, id="over-the-limits"),
    pytest.param("no such file: /tmp/caf\udce9.txt " + "\x01" * 12_000, id="over-them-as-sent"),
    pytest.param("\ud83d" + '"' * 30_000, id="another-lone-surrogate"),
])
@pytest.mark.parametrize("kind", ["ModelRetry", "ToolFailed"])
def test_a_retry_message_holding_a_lone_surrogate_reaches_the_model_as_its_preview(store, message, kind):
    # Review R22 (1): measuring what PydanticAI sends of a message rendered it with pydantic's JSON, which
    # refuses a lone surrogate (a surrogateescape'd file name): TypeError out of the agent run.  Measuring
    # never raises now: the message is rendered as the store shows it (each lone surrogate a U+FFFD), it is
    # stored, and its preview reaches the model.
    import re

    from overspill.text import MARKER_BYTES, shown_size

    part = _retried(store, message, kind)
    received = part.model_response_str()
    assert "\ufffd" in json.loads(received)["error"]
    assert shown_size(received) <= store.limits().max_bytes + MARKER_BYTES
    (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", received))
    assert _read_whole(store, uri).endswith(message[-1000:])


def test_a_small_retry_message_is_answered_without_a_worker_thread_or_rendering(store):
    # Review R22 (2): every retry message, even 100 bytes, was rendered as PydanticAI sends it and bounded on a
    # worker thread (11.5 -> 163 us a retry).  A message so short that even escaped at 6 bytes a character
    # it fits the limits needs neither: it is answered in place, unrendered.  A longer one still takes both.
    import concurrent.futures

    from pydantic_ai import ModelRetry
    from pydantic_ai.exceptions import ToolFailed

    from overspill.adapters._core import Bounder
    from overspill.adapters.pydantic_ai import _message_shown

    class Counting(concurrent.futures.ThreadPoolExecutor):
        submitted = 0

        def submit(self, *args: Any, **kwargs: Any) -> Any:
            Counting.submitted += 1
            return super().submit(*args, **kwargs)

    rendered: list = []

    def recorded(text: str) -> str:
        rendered.append(len(text))
        return _message_shown(text)

    bounder, bounded = Bounder(store), capability(store)
    small = '"\\\x01 check the "path" argument ' * 3
    large = "\x01" * 12_000

    async def main() -> list:
        asyncio.get_running_loop().set_default_executor(Counting(1))
        answers = [await bounded._bounded_error("s", "c", ModelRetry(small)),
                   await bounded._bounded_error("s", "c", ToolFailed(small)),
                   await bounder.aerror_text("s", "c", small, recorded),
                   bounder.error_text("s", "c", small, recorded)]
        assert (Counting.submitted, rendered) == (0, [])
        answers.append(await bounder.aerror_text("s", "c", large, recorded))
        assert Counting.submitted == 1 and rendered
        return answers

    answers = asyncio.run(main())
    assert answers[:4] == [None] * 4 and "tool-output://" in answers[4]


def test_bounding_a_large_retry_message_never_renders_it_whole(store):
    # Review R22 (3): a message was rendered whole as PydanticAI sends it just to size the first cut: 50 MB
    # of \x01 (6 bytes each as \u0001) took 573 MB more memory (23 MB before).  A text over max_bytes is over
    # the limits whatever its rendering: it is stored and only its preview rendered.
    import tracemalloc

    from overspill.adapters._core import Bounder
    from overspill.adapters.pydantic_ai import _message_shown

    def peak(bound: Any) -> int:
        tracemalloc.start()
        try:
            bound()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    message = "\x01" * 4_000_000
    bounder = Bounder(store)
    stored = peak(lambda: store.truncate("s", "alone", message))  # the store's own (the twin's is 3x)
    bounded = peak(lambda: bounder.error_result("s", "c", message, _message_shown))
    assert bounded < stored + len(message), (bounded, stored)  # was 12x the message: 48 MB
    assert "tool-output://" in bounder.error_text("s", "c", message, _message_shown)


def test_max_tokens_bounds_a_retry_message_as_pydantic_ai_sends_it(tmp_path):
    # Review R22 (4): max_tokens was applied to a message's own text, not to the text PydanticAI sends: 760
    # quotes (190 tokens) passed whole with max_tokens=200 and reached the model as 764 tokens.  Now the
    # tokens of the text sent count too: beside its marker's own, it takes at most max_tokens.
    import re

    from overspill._tokens import counter
    from overspill.adapters.pydantic_ai import _message_shown

    count = counter()
    with ToolOutputStore(tmp_path / "store", config={"tool_output": {"max_tokens": 200}}) as store:
        for message in ('"' * 760, "\\" * 760, '"' * 200_000, "\x01" * 200_000, "a b " * 50_000):
            received = _retried(store, message).model_response_str()
            assert "tool-output://" in received, (message[:3], count(received))
            preview = json.loads(received)["error"]
            head, marker, tail = preview.split("\n\n")
            assert count(received) <= 200 + count(_message_shown(marker)), (message[:3], count(received))
            (uri,) = set(re.findall(r"tool-output://[A-Za-z0-9]+", received))
            assert _read_whole(store, uri) == message


@pytest.mark.parametrize("outcome", ["retried", "failed"])
def test_a_retried_part_whose_list_fits_as_pydantic_ai_sends_it_is_left_as_it_is(store, outcome):
    # Review R22 (5): PydanticAI sends a retried part's list as the JSON array it is ({"error": [...]}, each
    # quote escaped once) and a failed part's as a string holding that JSON (escaped twice); both were
    # measured as the string, so a retried list that PydanticAI sends in 45,014 bytes (limit 51,200) was
    # stored and replaced by a preview.  Each is measured as PydanticAI sends it.
    from overspill.text import MARKER_BYTES, fits_limits, shown_size

    part = ToolReturnPart(tool_name="t", content=['say "hi"' * 4_500], tool_call_id="c1", outcome=outcome)
    sent = part.model_response_str()
    bounded = asyncio.run(capability(store)._bounded_part("s", "c1", part))
    if fits_limits(sent, store.limits()):
        assert outcome == "retried" and bounded is None and not store.records()
    else:
        assert outcome == "failed" and isinstance(bounded.content, str), shown_size(sent)
        assert shown_size(bounded.model_response_str()) <= store.limits().max_bytes + MARKER_BYTES
