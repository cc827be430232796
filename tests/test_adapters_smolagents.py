"""overspill.adapters.smolagents, driven by a scripted smolagents Model subclass (no network).

smolagents runs agents synchronously only; concurrent runs are agents on threads.
"""

from __future__ import annotations

import gc
import re
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import pytest

import adapter_scenario as scenario
from adapter_scenario import BIG, SMALL, Script, check_files_refused, expected_paging, file_probes, framework, \
    marker, write_secret
from overspill import ToolOutputStore

framework("smolagents")
from smolagents import Tool, ToolCallingAgent, tool  # noqa: E402
from smolagents.agent_types import AgentText  # noqa: E402
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, \
    Model  # noqa: E402

from overspill.adapters.smolagents import BoundedToolCallingAgent, bound  # noqa: E402

MAX_STEPS = 100
OBSERVATION = "Observation:\n"
big, small, broken, table = (tool(function) for function in scenario.TOOLS)






# A read page as the smolagents paging tool frames it: a line naming its bytes, the page, then the closing
# hint or, after the last page, a line saying it is the end (smolagents strips what it shows the model).
FRAMED = re.compile(r"\[(tool-output://[0-9A-Za-z]+): bytes (\d+) to (\d+) of (\d+)\]\n(.*?)(?:\n\n\[end of \1\])?",
                    re.DOTALL)


def unframed(text: str) -> str:
    """A framed read page as the read tool's own answer (the page and its closing hint); other text as it is."""
    found = FRAMED.fullmatch(text)
    return text if found is None else found.group(5)


class ScriptedModel(Model):
    """A smolagents Model whose every answer asks a Script what to call next."""

    def __init__(self, script: Script, before: Optional[Callable[[Script, Optional[str]], None]] = None) -> None:
        super().__init__(model_id="scripted")
        self.script = script
        self.before = before
        self.tool_names: list[str] = []

    def generate(self, messages: list, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self.tool_names = [tool.name for tool in tools_to_call_from or []]
        last = messages[-1]
        received = None
        if last.role == MessageRole.TOOL_RESPONSE:
            text = "".join(block["text"] for block in last.content if block.get("type") == "text")
            received = unframed(text[len(OBSERVATION):] if text.startswith(OBSERVATION) else text)
        if self.before is not None:
            self.before(self.script, received)
        chosen = self.script.next(received)
        name, arguments = ("final_answer", {"answer": "done"}) if chosen is None else chosen
        call = ChatMessageToolCall(id=self.script.call_id(), type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=arguments))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store") as opened:
        yield opened


def test_bound_adds_read_and_grep_with_the_tools_schemas(store):
    tools = bound([big], store)
    assert [tool.name for tool in tools] == ["big", "read", "grep"]
    expected = expected_paging(store)
    for paging in tools[1:]:
        parameters = expected[paging.name]["parameters"]
        assert paging.description == expected[paging.name]["description"]
        assert {name: (rule["type"], rule["description"]) for name, rule in paging.inputs.items()} == {
            name: (rule["type"], rule["description"]) for name, rule in parameters["properties"].items()}
        assert {name for name, rule in paging.inputs.items() if not rule.get("nullable")} == set(
            parameters["required"])
    assert (tools[0].name, tools[0].inputs, tools[0].output_type) == (big.name, big.inputs, big.output_type)
    with pytest.raises(ValueError, match="read"):
        bound([read], store)
    assert [tool.name for tool in bound(tools, store)] == ["big", "read", "grep"]  # bound twice: wrapped once


@tool
def read() -> str:
    """The caller's own tool named read."""
    return ""


def test_scenario_with_bound_tools(store, tmp_path, monkeypatch):
    # The model first tries the working folder's files through read and grep: each is refused.
    write_secret(tmp_path)
    monkeypatch.chdir(tmp_path)
    script = Script(probes=file_probes())
    agent = ToolCallingAgent(tools=bound([big], store), model=ScriptedModel(script), max_steps=MAX_STEPS,
                             verbosity_level=0)
    assert agent.run("go") == "done"
    script.check()
    # smolagents checks arguments against the tool's inputs before calling it: its own error refuses path.
    check_files_refused(script, "Argument path is not in the tool's input schema")
    (record,) = store.records()
    assert record.resource.size == len(BIG.encode())


def test_scenario_with_the_agent_subclass(store):
    script = Script()
    model = ScriptedModel(script)
    agent = BoundedToolCallingAgent([big], model, store=store, max_steps=MAX_STEPS, verbosity_level=0)
    assert agent.run("go") == "done"
    assert set(model.tool_names) == {"big", "read", "grep", "final_answer"}
    script.check()
    assert [record.session_id for record in store.records()] == [agent.overspill_session]


def test_agent_text_and_other_str_subclasses(store):
    from overspill.adapters.smolagents import _bounded_value
    from overspill.adapters._core import Bounder

    bounder = Bounder(store)
    small_text = AgentText(SMALL)
    assert _bounded_value(bounder, "s", small_text) is small_text
    preview = _bounded_value(bounder, "s", AgentText(BIG))
    assert isinstance(preview, AgentText) and marker(str.__str__(preview))

    class Label(str):
        pass

    assert type(_bounded_value(bounder, "s", Label(BIG))) is str
    assert len(store.records()) == 2


def test_small_result_passes_untouched_and_nothing_is_stored(store):
    for make in (lambda model: ToolCallingAgent(tools=bound([small], store), model=model, verbosity_level=0),
                 lambda model: BoundedToolCallingAgent([small], model, store=store, verbosity_level=0)):
        script = Script("small")
        with pytest.raises(Exception, match="no marker"):  # smolagents wraps it in AgentGenerationError
            make(ScriptedModel(script)).run("go")
        assert script.received == [SMALL]
    assert store.records() == []


def test_json_result_is_stored_as_json_text(store):
    import json

    script = Script("table", pattern='"row 12345"')
    BoundedToolCallingAgent([table], ScriptedModel(script), store=store, max_steps=MAX_STEPS,
                            verbosity_level=0).run("go")
    (record,) = store.records()
    text = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
    assert json.loads(text) == scenario.table()
    assert script.grep.endswith("[1 matching line]")


def test_raising_tool_reaches_the_model_as_smolagents_shows_errors(store):
    received = []
    for make in (lambda model: ToolCallingAgent(tools=[broken], model=model, verbosity_level=0),
                 lambda model: ToolCallingAgent(tools=bound([broken], store), model=model, verbosity_level=0),
                 lambda model: BoundedToolCallingAgent([broken], model, store=store, verbosity_level=0)):
        script = Script("broken")
        with pytest.raises(Exception, match="no marker"):  # smolagents wraps it in AgentGenerationError
            make(ScriptedModel(script)).run("go")
        received.append(script.received)
    assert received[0] == received[1] == received[2]
    assert "the disk is on fire" in received[0][0]
    assert store.records() == []


def test_concurrent_agents_do_not_see_each_others_uris(store):
    uris: dict[int, str] = {}
    barrier = threading.Barrier(2, timeout=30)

    def before(script: Script, received: Optional[str]) -> None:
        if script.uri is None and received is not None and "tool-output://" in received:
            uris[id(script)] = marker(received)[0]
            barrier.wait()
            script.foreign = next(uri for key, uri in uris.items() if key != id(script))

    scripts = [Script(), Script()]
    agents = [ToolCallingAgent(tools=bound([big], store), model=ScriptedModel(scripts[0], before),
                               max_steps=MAX_STEPS, verbosity_level=0),
              BoundedToolCallingAgent([big], ScriptedModel(scripts[1], before), store=store, max_steps=MAX_STEPS,
                                      verbosity_level=0)]
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda agent: agent.run("go"), agents)) == ["done", "done"]
    for script in scripts:
        script.check()
        assert "not found in this session" in script.foreign_answer
    assert len({record.session_id for record in store.records()}) == 2


# ------------------------------------------------------------------ regressions (red team 3)
def test_the_agent_subclass_given_bound_tools_pages_what_they_stored(store, tmp_path):
    # BoundedToolCallingAgent(bound(tools), ...): the bound tools stored in their own list's session (and
    # store) while the agent's read and grep paged the agent's, so the model's read found nothing.
    with ToolOutputStore(tmp_path / "other") as other:
        for given in (store, other):
            script = Script()
            agent = BoundedToolCallingAgent(bound([big], given), ScriptedModel(script), store=store,
                                            max_steps=MAX_STEPS, verbosity_level=0)
            assert agent.run("go") == "done"
            script.check()
            assert [record.session_id for record in store.records()][-1] == agent.overspill_session
        assert other.records() == [] and len(store.records()) == 2


# ------------------------------------------------------------------ regressions (red team 4)
class CodeModel(Model):
    """A CodeAgent's model: answers each step with the next piece of code (``codes``, or what ``next_code``
    makes of the last message's text, None to answer); ``seen`` keeps each message's text."""

    def __init__(self, codes: list, next_code: Optional[Callable[[str], Optional[str]]] = None) -> None:
        super().__init__(model_id="code")
        self.codes = list(codes)
        self.next_code = next_code
        self.seen: list[str] = []

    def generate(self, messages: list, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        last = messages[-1]
        self.seen.append("".join(block.get("text", "") for block in last.content)
                         if isinstance(last.content, list) else str(last.content))
        code = self.codes.pop(0) if self.codes else self.next_code(self.seen[-1])
        code = 'final_answer("done")' if code is None else code
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"<code>\n{code}\n</code>")


def test_a_code_agents_code_gets_the_tools_value(store):
    # In a CodeAgent the tool's value goes to the code, not the model: bound() replaced a large dict
    # with its preview (a str), and the code indexing it failed.
    from smolagents import CodeAgent

    @tool
    def rows() -> dict:
        """Many rows."""
        return {"rows": [[n, f"row {n}"] for n in range(20_000)]}

    agent = CodeAgent(tools=bound([rows], store), model=CodeModel(
        ['final_answer(sum(row[0] for row in rows()["rows"]))']), max_steps=2, verbosity_level=-1)
    assert agent.run("sum them") == sum(range(20_000))
    assert store.records() == []


def test_read_takes_its_arguments_by_position(store):
    # The code prompt shows read(resource, offset, limit), and a CodeAgent's code calls tools so:
    # read(uri, offset) raised TypeError.
    from smolagents import CodeAgent

    tools = bound([big], store)
    preview = tools[0](sanitize_inputs_outputs=True)  # as a ToolCallingAgent calls it: bounded
    uri, offset = marker(preview)
    read = next(tool for tool in tools if tool.name == "read")
    assert read(uri, offset) == read(resource=uri, offset=offset) == read(uri, offset=offset)
    assert unframed(read(uri, offset)).startswith(BIG.encode()[offset:offset + 20].decode())  # after its frame line
    assert "at most 3 arguments" in read(uri, offset, 10, 4)
    assert "both by position and by name" in read(uri, resource=uri)
    agent = CodeAgent(tools=tools, model=CodeModel([f'final_answer(read("{uri}", {offset}, 100))']), max_steps=2,
                      verbosity_level=-1)
    assert agent.run("page it") == read(resource=uri, offset=offset, limit=100)


# ------------------------------------------------------------------ regressions (red team L)
def test_a_raising_tools_long_error_text_is_bounded_and_stored(store):
    # smolagents shows the model "Error executing tool ...: RuntimeError: <the exception's text>": a tool
    # raising with a 1.3 MB log reached the model whole through bound(...) and BoundedToolCallingAgent.
    # Now the text is stored whole and the model gets its preview, pages it back exactly and greps it;
    # the error keeps its type.
    from smolagents import CodeAgent

    log = "tests failed:\n" + BIG

    @tool
    def run_tests() -> str:
        """Run the test suite."""
        raise RuntimeError(log)

    message = f"Error executing tool 'run_tests' with arguments {{}}: RuntimeError: {log}\nPlease try again or use another tool"
    # bound() stores the exception's text, the agent smolagents' whole message: each is what the model is
    # shown (the preview) in place of that text, so the pages are of it.
    for make, shown, whole in (
            (lambda model: ToolCallingAgent(tools=bound([run_tests], store), model=model, max_steps=MAX_STEPS,
                                            verbosity_level=-1), "RuntimeError: ", log),
            (lambda model: BoundedToolCallingAgent([run_tests], model, store=store, max_steps=MAX_STEPS,
                                                   verbosity_level=-1), "Error:\n", message)):
        script = Script("run_tests")
        assert make(ScriptedModel(script)).run("go") == "done"
        error = script.received[0]
        assert "Error executing tool 'run_tests'" in error and "RuntimeError: tests failed:" in error
        script.preview = error.split(shown, 1)[1]
        script.check(whole)
    assert [b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)).decode()
            for record in store.records()] == [log, message]
    # A CodeAgent shows the model the code's failure with the exception's text: bounded the same way.
    agent = CodeAgent(tools=bound([run_tests], store), model=CodeModel(["run_tests()", "final_answer('x')"]),
                      max_steps=3, verbosity_level=-1)
    agent.run("go")
    (step,) = [step for step in agent.memory.steps if getattr(step, "error", None) is not None]
    assert "RuntimeError: tests failed:" in str(step.error) and len(str(step.error).encode()) < 60_000
    assert "tool-output://" in str(step.error) and len(store.records()) == 3



def test_an_image_from_a_tool_of_any_output_type_passes_without_a_warning(store, caplog):
    # output_type="any" returning an image: the image passed (as meant) but every call logged "cannot be
    # serialised ... passed on unbounded", as if it were a value overspill failed to bound.
    import logging

    import PIL.Image
    from smolagents import Tool

    class Picture(Tool):
        name = "picture"
        description = "Draw a picture."
        inputs: dict = {}
        output_type = "any"

        def forward(self) -> Any:
            return PIL.Image.new("RGB", (4, 4))

    picture = Picture()
    agent = BoundedToolCallingAgent([picture], ScriptedModel(Script()), store=store, verbosity_level=-1)
    with caplog.at_level(logging.WARNING, logger="overspill"):
        through_bound = bound([picture], store)[0](sanitize_inputs_outputs=True)
        through_agent = agent.execute_tool_call("picture", {})
    for image in (through_bound, through_agent):  # smolagents makes it an AgentImage, whose to_raw() it is
        assert isinstance(image, PIL.Image.Image) and image.to_raw().size == (4, 4)
    assert [record.getMessage() for record in caplog.records if record.name == "overspill"] == []
    assert store.records() == []


# ------------------------------------------------------------------ regressions (red team A7)
def test_saving_an_agent_with_overspills_tools_is_refused_saying_why(store, tmp_path):
    # smolagents' own validation refused bound tools, read and grep with "Tool validation failed for
    # _BoundedTool" (init parameters without defaults, forward naming outside names): a tool that holds a
    # live store and session cannot be saved as the source of its class.  The refusal now says so.
    from smolagents import CodeAgent

    @tool
    def lookup(tag: str) -> str:
        """Look something up.

        Args:
            tag: what to look up
        """
        return tag

    model = ScriptedModel(Script())
    agents = [ToolCallingAgent(tools=bound([lookup], store), model=model),
              CodeAgent(tools=bound([lookup], store), model=model),
              BoundedToolCallingAgent([lookup], model, store=store)]
    for index, agent in enumerate(agents):
        for save in (agent.to_dict, lambda: agent.save(tmp_path / f"agent-{index}")):
            with pytest.raises(ValueError, match="cannot be saved: smolagents saves a tool as the source"):
                save()
    ToolCallingAgent(tools=[lookup], model=model).save(tmp_path / "plain")  # the agent's own tools save
    assert (tmp_path / "plain" / "tools" / "lookup.py").exists()


# ------------------------------------------------------------------ regressions (red team C10)
class _OneCallModel(Model):
    """Calls ``name`` once, then answers; keeps the observation text each tool response showed."""

    def __init__(self, name: str) -> None:
        super().__init__(model_id="scripted")
        self.name = name
        self.observations: list[str] = []
        self._turns = 0

    def generate(self, messages: list, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self._turns += 1
        if messages[-1].role == MessageRole.TOOL_RESPONSE:
            self.observations.append("".join(block["text"] for block in messages[-1].content
                                             if block.get("type") == "text"))
        name, arguments = (self.name, {}) if self._turns == 1 else ("final_answer", {"answer": "done"})
        call = ChatMessageToolCall(id=f"c{self._turns}", type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=arguments))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def test_a_result_json_cannot_serialise_is_bounded_as_the_text_the_agent_shows(store, caplog):
    # Rows holding a datetime: json.dumps fails, so the result passed on whole with a warning, and the
    # ToolCallingAgent showed the model str(result), 7.7 MB, nothing stored.  It is now bounded as that
    # text (the agent's str(), what the model would have read); a small one still passes as it is.
    import datetime
    import logging

    rows = [{"id": index, "created": datetime.datetime(2024, 1, 1), "note": "é" * 40} for index in range(20_000)]
    few = rows[:2]

    @tool
    def table_rows() -> list:
        """Rows from the database."""
        return rows

    @tool
    def few_rows() -> list:
        """A few rows from the database."""
        return few

    with caplog.at_level(logging.WARNING, logger="overspill"):
        for make in (lambda model: ToolCallingAgent(tools=bound([table_rows], store), model=model, max_steps=3,
                                                    verbosity_level=-1),
                     lambda model: BoundedToolCallingAgent([table_rows], model, store=store, max_steps=3,
                                                           verbosity_level=-1)):
            model = _OneCallModel("table_rows")
            make(model).run("go")
            (shown,) = model.observations
            assert "tool-output://" in shown and len(shown.encode()) < 60_000
        # what is stored is the text the agent would have shown, whole
        for record in store.records():
            stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri))
            assert stored == str(rows).encode()
        assert len(store.records()) == 2
        # one that fits reaches the agent as it came, the same object, and nothing is stored
        assert bound([few_rows], store)[0](sanitize_inputs_outputs=True) is few
        agent = BoundedToolCallingAgent([few_rows], _OneCallModel("few_rows"), store=store, verbosity_level=-1)
        assert agent.execute_tool_call("few_rows", {}) is few
    assert len(store.records()) == 2
    assert [record.getMessage() for record in caplog.records if record.name == "overspill"] == []


# ------------------------------------------------------------------ regressions (red team D12)
#: An output with non-ASCII characters and whitespace at most page seams: about 190 KB, several pages.
SPACED = "".join(f"{n} é{' ' * 40}\n\n" for n in range(120_000, 124_000))


@tool
def spaced() -> str:
    """Return a large output, mostly whitespace."""
    return SPACED


def _code_page(observation: str, printed: bool) -> str:
    """The page a CodeAgent's step showed the model: what its code printed, or the step's value."""
    logs, value = observation.split("Execution logs:\n", 1)[1].split("Last output from code snippet:\n", 1)
    return logs.removesuffix("\n") if printed else value


def test_a_code_agent_is_shown_every_byte_of_each_read_page(store):
    # read(uri, offset) in a CodeAgent's code gave the store's default page (51,200 bytes and its hint), but
    # smolagents shows the model at most 50,000 characters of what the code prints and 20,000 of the step's
    # value, cutting the middle out: the page's hint then named an offset past bytes the model never saw.
    # Each page now fits what smolagents shows, its hint included; a larger limit asked for is clamped.
    from smolagents import CodeAgent

    tools = bound([spaced], store)
    uri, offset = marker(tools[0](sanitize_inputs_outputs=True))
    read = next(tool for tool in tools if tool.name == "read")
    data = SPACED.encode()
    forms = ['print(read("{uri}", {offset}))', 'read("{uri}", {offset})', 'read("{uri}", {offset}, 1000000)']
    pages: list[str] = []
    starts: list[int] = []

    def next_code(seen: str) -> Optional[str]:
        form = forms[(len(starts) - 1) % len(forms)]
        shown = _code_page(seen, form.startswith("print"))
        assert "_This content has been truncated" not in seen
        assert shown == read(uri, starts[-1], 1_000_000 if "1000000" in form else None)  # as read gives it
        page = unframed(shown)
        hint = scenario.HINT.search(page)
        pages.append(page if hint is None else page[:hint.start()])
        if hint is None:
            return None
        starts.append(int(hint.group(3)))
        return forms[(len(starts) - 1) % len(forms)].format(uri=uri, offset=starts[-1])

    starts.append(offset)
    model = CodeModel([forms[0].format(uri=uri, offset=offset)], next_code)
    CodeAgent(tools=tools, model=model, max_steps=40, verbosity_level=-1).run("page it")
    assert len(pages) > 3 and "".join(pages) == data[offset:].decode()
    # A limit in the URI is clamped as the argument is.
    assert read(f"{uri}?offset={offset}&limit=1000000") == read(uri, offset, 1_000_000) == read(uri, offset)


def test_a_tool_calling_agent_is_shown_each_read_page_with_its_whitespace(store):
    # smolagents' ToolCallingAgent shows the model str(result).strip(): a page that began or ended with
    # spaces or newlines lost them, so the pages no longer made up the stored bytes (two lines ran together
    # at a seam).  The page now comes between a line naming its bytes and its closing hint (or, after the
    # last page, a line saying it is the end), so nothing of it is stripped; so for BoundedToolCallingAgent.
    for make in (lambda model: ToolCallingAgent(tools=bound([spaced], store), model=model, max_steps=MAX_STEPS,
                                                verbosity_level=-1),
                 lambda model: BoundedToolCallingAgent([spaced], model, store=store, max_steps=MAX_STEPS,
                                                       verbosity_level=-1)):
        script = Script("spaced", pattern=f"^{scenario.NEEDLE} ")
        assert make(ScriptedModel(script)).run("go") == "done"
        script.check(SPACED)
        # (at least one seam inside the whitespace, and the last page ends with it)
        assert any(page[:1].isspace() for page in script.pages[1:]) and script.pages[-1].endswith("\n")


# ------------------------------------------------------------------ regressions (red team F13)
class Blob(Tool):
    """A tool of output type ``any`` returning bytes (``size`` of them), which smolagents shows as their repr."""

    name = "blob"
    description = "Return a binary blob."
    inputs: dict = {}
    output_type = "any"

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def forward(self) -> bytes:
        return bytes(self.size)


def test_a_result_whose_shown_text_is_over_the_limits_is_bounded_as_that_text_red_team_f13(store):
    # bytes(40_000) fit the limits (51,200 bytes), so they passed, but a ToolCallingAgent shows the model
    # str(result): their repr, 160,016 characters, with no marker and nothing stored.  The text the agent
    # shows is now bounded and stored when the raw (or JSON) text fits but it does not, as the OpenAI
    # Agents SDK adapter does; a value whose shown text fits still passes as it came.
    data = bytes(40_000)
    for make in (lambda model: ToolCallingAgent(tools=bound([Blob(len(data))], store), model=model, max_steps=3,
                                                verbosity_level=-1),
                 lambda model: BoundedToolCallingAgent([Blob(len(data))], model, store=store, max_steps=3,
                                                       verbosity_level=-1)):
        model = _OneCallModel("blob")
        make(model).run("go")
        (shown,) = model.observations
        assert "tool-output://" in shown and len(shown.encode()) < 60_000
    records = store.records()
    assert len(records) == 2
    for record in records:
        stored = b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri))
        assert stored == str(data).encode()
    few = bound([Blob(10)], store)[0]
    assert few(sanitize_inputs_outputs=True) == bytes(10)
    agent = BoundedToolCallingAgent([Blob(10)], _OneCallModel("blob"), store=store, verbosity_level=-1)
    assert agent.execute_tool_call("blob", {}) == bytes(10)
    assert len(store.records()) == 2


class _PlannedModel(Model):
    """A model whose turns are ``plan``'s functions, in order, of the last tool response's text (None on the
    first turn): each gives ``(name, arguments)``, or None to answer ``"done"`` (so does every turn past the
    plan); ``seen`` keeps those texts."""

    def __init__(self, plan: list) -> None:
        super().__init__(model_id="planned")
        self.plan = list(plan)
        self.seen: list[str] = []
        self._turns = 0

    def generate(self, messages: list, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self._turns += 1
        received = None
        if messages[-1].role == MessageRole.TOOL_RESPONSE:
            received = "".join(block["text"] for block in messages[-1].content if block.get("type") == "text")
            self.seen.append(received)
        chosen = self.plan.pop(0)(received) if self.plan else None
        name, arguments = ("final_answer", {"answer": "done"}) if chosen is None else chosen
        call = ChatMessageToolCall(id=f"p{self._turns}", type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=arguments))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


class _Failing(Model):
    """A model that raises ``error`` (smolagents ends the agent's run with an AgentGenerationError)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(model_id="failing")
        self.error = error

    def generate(self, *args: Any, **kwargs: Any) -> ChatMessage:
        raise self.error


class _TeamScript(Script):
    """The scenario's script calling a managed agent (``tool``), which takes a task, for its output."""

    def next(self, received: Optional[str]) -> Optional[tuple[str, dict[str, Any]]]:
        chosen = super().next(received)
        return (chosen[0], {"task": "report"}) if chosen is not None and chosen[0] == self.tool else chosen


def _helper(model: Model, tools: Optional[list] = None, **kwargs: Any) -> ToolCallingAgent:
    """A managed agent named ``helper`` (a ToolCallingAgent) driven by ``model``."""
    return ToolCallingAgent(tools=[small] if tools is None else tools, model=model, name="helper",
                            description="Helps the manager.", max_steps=3, verbosity_level=-1, **kwargs)


def _answering(text: str) -> _PlannedModel:
    return _PlannedModel([lambda received: ("final_answer", {"answer": text})])


def test_a_managed_agents_report_is_bounded_through_bound_managed_agents_red_team_f13(store):
    # ToolCallingAgent(tools=bound(...), managed_agents=[sub]): the model calls a managed agent as it calls a
    # tool, but smolagents calls the agent itself, so its 1.3 MB report reached the manager's model whole
    # (no marker, nothing stored); only BoundedToolCallingAgent bounded it.  bound_managed_agents bounds the
    # report, and the failure text, in the session the manager's read (from bound()) pages.
    from smolagents.agents import populate_template

    from overspill.adapters.smolagents import bound_managed_agents

    report = populate_template(_helper(_answering(BIG)).prompt_templates["managed_agent"]["report"],
                               variables={"name": "helper", "final_answer": BIG})
    script = _TeamScript("helper")
    manager = ToolCallingAgent(tools=bound([small], store), model=ScriptedModel(script), max_steps=MAX_STEPS,
                               managed_agents=bound_managed_agents([_helper(_answering(BIG))], store),
                               verbosity_level=-1)
    assert manager.run("go") == "done"
    script.check(report)  # the preview, then every page of the report through the manager's read, then grep
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) == \
        report.encode()
    # A failing managed agent: smolagents shows the model its error's text, bounded the same way.
    log = "the helper failed:\n" + BIG
    model = _PlannedModel([lambda received: ("helper", {"task": "report"})])
    ToolCallingAgent(tools=bound([small], store), model=model, verbosity_level=-1, max_steps=3,
                     managed_agents=bound_managed_agents([_helper(_Failing(RuntimeError(log)))], store)).run("go")
    (error,) = model.seen
    assert "Error executing request to team member 'helper'" in error and "the helper failed:" in error
    assert "tool-output://" in error and len(error.encode()) < 60_000
    # A small report passes as it is, nothing stored; a BoundedToolCallingAgent takes them as it takes any.
    for make in (lambda model, team: ToolCallingAgent(tools=bound([small], store), model=model, managed_agents=team,
                                                      verbosity_level=-1, max_steps=3),
                 lambda model, team: BoundedToolCallingAgent([small], model, store=store, managed_agents=team,
                                                             verbosity_level=-1, max_steps=3)):
        model = _PlannedModel([lambda received: ("helper", {"task": "report"})])
        make(model, bound_managed_agents([_helper(_answering(SMALL))], store)).run("go")
        assert model.seen[0].endswith(SMALL) and "tool-output://" not in model.seen[0]
    assert len(store.records()) == 2
    with pytest.raises(TypeError, match="bound_managed_agents takes smolagents agents"):
        bound_managed_agents([small], store)
    with pytest.raises(TypeError, match="give managed agents through bound_managed_agents"):
        bound([_helper(_answering(SMALL))], store)
    # It holds a live store and session, as a bound tool does: saving it is refused, saying why.
    with pytest.raises(ValueError, match="the bound managed agent 'helper' cannot be saved"):
        bound_managed_agents([_helper(_answering(SMALL))], store)[0].to_dict()


#: ``seq 1 100000``: short lines, so its preview is within smolagents' cut of a run summary's messages.
NUMBERS = "".join(f"{n}\n" for n in range(1, 100_001))


@tool
def count() -> str:
    """Print numbers."""
    return NUMBERS


def test_a_managed_agents_markers_are_pageable_by_the_managers_read_red_team_f13(store):
    # A managed agent's run summary (provide_run_summary=True) shows the manager its messages, its tools'
    # previews and markers among them; but each BoundedToolCallingAgent (each bound() list) was its own
    # session, so the manager's read of such a marker answered "not found in this session (another session
    # wrote it)".  A managed agent run by a manager on the same store now works in the manager's session for
    # that run; two managers' runs stay apart.
    from overspill.adapters.smolagents import bound_managed_agents

    def counting() -> _PlannedModel:
        return _PlannedModel([lambda received: ("count", {}), lambda received: ("final_answer", {"answer": "counted"})])

    def reading(uris: list) -> Callable[[Optional[str]], tuple[str, dict[str, Any]]]:
        def read_first(received: Optional[str]) -> tuple[str, dict[str, Any]]:
            uris.append(re.search(r"tool-output://[0-9A-Za-z]+", received or "").group(0))
            return "read", {"resource": uris[-1], "offset": 0}
        return read_first

    teams = [
        lambda model, sub: BoundedToolCallingAgent([], model, store=store, managed_agents=[sub], max_steps=4,
                                                   verbosity_level=-1),
        lambda model, sub: ToolCallingAgent(tools=bound([small], store), model=model, max_steps=4, verbosity_level=-1,
                                            managed_agents=bound_managed_agents([sub], store))]
        # (a BoundedToolCallingAgent sub, then a ToolCallingAgent on bound() tools)
    subs = [BoundedToolCallingAgent([count], counting(), store=store, name="helper", description="Helps the manager.",
                                    max_steps=3, verbosity_level=-1, provide_run_summary=True),
            _helper(counting(), bound([count], store), provide_run_summary=True)]
    for make, sub in zip(teams, subs):
        uris: list[str] = []
        model = _PlannedModel([lambda received: ("helper", {"task": "count"}), reading(uris)])
        make(model, sub).run("go")
        (uri,) = uris
        assert "not found in this session" not in model.seen[1] and f"[{uri}: bytes 0 to " in model.seen[1]
        # Another manager running the same managed agent: its run is in that manager's session, apart.
        sub.model = counting()
        other = _PlannedModel([lambda received: ("helper", {"task": "count"}),
                               lambda received: ("read", {"resource": uri})])
        make(other, sub).run("go")
        assert "not found in this session" in other.seen[1]
    sessions = [record.session_id for record in store.records()]
    assert len(sessions) == len(set(sessions)) == 4
    for record in store.records():
        assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) == \
            NUMBERS.encode()


#: The call a preview's marker names to read on: ``read(resource="tool-output://ID", offset=N)``.
READ_ON = re.compile(r'read\(resource="(tool-output://[0-9A-Za-z]+)", offset=(\d+)\)')


def test_a_code_agent_managers_read_pages_its_managed_agents_markers_red_team_h14(store, tmp_path):
    # smolagents' LocalPythonExecutor runs a CodeAgent's code in a thread of its own (a one-worker pool that
    # keeps its time limit, copying no context): a managed agent called in that code found no manager on its
    # thread's stack, so its tools stored in bound_managed_agents' own session and the manager's read of the
    # marker its report showed answered "not found in this session (another session wrote it)".  The run now
    # goes on in the thread waiting for the code, for every kind of manager and nesting; other runs stay apart.
    from smolagents import CodeAgent

    from overspill.adapters.smolagents import bound_managed_agents

    def helper(tools: Optional[list] = None) -> ToolCallingAgent:
        # Counts, then reports the read its preview's marker names.
        model = _PlannedModel([lambda received: ("count", {}),
                               lambda received: ("final_answer", {"answer": f"next: {READ_ON.search(received)[0]}"})])
        return _helper(model, bound([count], store) if tools is None else tools)

    def code_manager(codes: list, team: list, pages: list, **kwargs: Any) -> CodeAgent:
        # Runs ``codes``, then prints the read named in the last observation (kept in ``pages``), then answers.
        def read_on(seen: str) -> Optional[str]:
            if pages:
                return None
            pages.append(seen)
            return f"print({READ_ON.search(seen)[0]})"
        return CodeAgent(tools=bound([], store), model=CodeModel(list(codes), read_on),
                         managed_agents=bound_managed_agents(team, store), max_steps=4, verbosity_level=-1, **kwargs)

    def check(pages: list, model: CodeModel) -> str:
        # The manager printed a page of the read its managed agent reported (its observation after that one).
        (shown,) = pages
        uri, offset = READ_ON.search(shown).groups()
        page = model.seen[model.seen.index(shown) + 1]
        assert "not found in this session" not in page and f"[{uri}: bytes {offset} to " in page, page[:300]
        return uri

    # A CodeAgent manager (its code in the executor's thread) reads what its managed agent reported.
    pages: list[str] = []
    manager = code_manager(['print(helper(task="count"))'], [helper()], pages)
    manager.run("go")
    uri = check(pages, manager.model)
    # A BoundedToolCallingAgent managed agent works in the manager's session as well.
    pages = []
    sub = BoundedToolCallingAgent([count], _PlannedModel([
        lambda received: ("count", {}),
        lambda received: ("final_answer", {"answer": f"next: {READ_ON.search(received)[0]}"})]),
        store=store, name="helper", description="Helps the manager.", max_steps=3, verbosity_level=-1)
    manager = code_manager(['print(helper(task="count"))'], [sub], pages)
    manager.run("go")
    check(pages, manager.model)
    # Another CodeAgent manager's run is apart from it.
    other = CodeAgent(tools=bound([], store), model=CodeModel([f'print(read("{uri}"))', 'final_answer("done")']),
                      max_steps=2, verbosity_level=-1)
    other.run("go")
    assert "not found in this session" in other.model.seen[1]
    # Nested: a CodeAgent manager run as the managed agent of a ToolCallingAgent, then of a CodeAgent, reports
    # its own managed agent's marker; the outer manager's read pages it (the whole run is in its session).
    def middle() -> CodeAgent:
        return code_manager(['final_answer(helper(task="count"))'], [helper()], [], name="boss",
                            description="Leads the helper.")

    uris: list[str] = []

    def read_reported(received: Optional[str]) -> tuple[str, dict[str, Any]]:
        resource, offset = READ_ON.search(received or "").groups()
        uris.append(resource)
        return "read", {"resource": resource, "offset": int(offset)}

    outer = _PlannedModel([lambda received: ("boss", {"task": "count"}), read_reported])
    ToolCallingAgent(tools=bound([small], store), model=outer, max_steps=4, verbosity_level=-1,
                     managed_agents=bound_managed_agents([middle()], store)).run("go")
    (resource,) = uris
    assert "not found in this session" not in outer.seen[1] and f"[{resource}: bytes " in outer.seen[1]
    pages = []
    top = code_manager(['print(boss(task="count"))'], [middle()], pages)
    top.run("go")
    check(pages, top.model)
    # Two such managed agents called at once (a ToolCallingAgent's parallel calls, each in a pool thread).
    class Parallel(Model):
        def __init__(self) -> None:
            super().__init__(model_id="parallel")
            self.seen: list[str] = []

        def generate(self, messages: list, **kwargs: Any) -> ChatMessage:
            calls = [("boss", {"task": "count"}), ("second", {"task": "count"})]
            if messages[-1].role == MessageRole.TOOL_RESPONSE:
                self.seen.append("".join(block["text"] for block in messages[-1].content
                                         if block.get("type") == "text"))
                calls = [("read", {"resource": resource, "offset": int(offset)})
                         for resource, offset in READ_ON.findall(self.seen[-1])] if len(self.seen) == 1 else \
                    [("final_answer", {"answer": "done"})]
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[ChatMessageToolCall(
                id=f"c{len(self.seen)}{n}", type="function", function=ChatMessageToolCallFunction(name=name,
                                                                                                   arguments=arguments))
                for n, (name, arguments) in enumerate(calls)])

    second = middle()
    second.name = "second"
    parallel = Parallel()
    ToolCallingAgent(tools=bound([small], store), model=parallel, max_steps=4, verbosity_level=-1,
                     managed_agents=bound_managed_agents([middle(), second], store)).run("go")
    assert len(READ_ON.findall(parallel.seen[0])) == 2
    assert "not found in this session" not in parallel.seen[1] and parallel.seen[1].count(": bytes ") == 2
    # A CodeAgent that runs its code in its own thread (no time limit) reads them too.
    pages = []
    manager = code_manager(['print(helper(task="count"))'], [helper()], pages,
                           executor_kwargs={"timeout_seconds": None})
    manager.run("go")
    check(pages, manager.model)
    # A managed agent whose tools are on another store keeps its own session there.
    with ToolOutputStore(tmp_path / "elsewhere") as elsewhere:
        tools = bound([count], elsewhere)
        pages = []
        code_manager(['print(helper(task="count"))'], [helper(tools)], pages).run("go")
        (record,) = elsewhere.records()
        assert record.session_id == tools[0]._session_id
    for record in store.records():
        assert b"".join(bytes(piece) for piece in store.iter_bytes(record.session_id, record.resource.uri)) == \
            NUMBERS.encode()


# ------------------------------------------------------------------ regressions (review R20)
class _Held:
    """An object a thread's frame holds for a while, then drops while the frame lives on."""


def _still_alive_after_a_bound_call_in_a_pool(store: ToolOutputStore, in_team: bool) -> bool:
    """Whether an object a thread drops after a bound tool call has run in a pool task, while a managed agent
    runs, is still alive: the thread is the managed agent's (``in_team``: a frame under its tool holds the
    object) or one beside the run.  The pool's call belongs to no team: it stays in its list's own session."""
    from overspill.adapters.smolagents import bound_managed_agents

    refs: list = []
    holding, paused, dropping, dropped, finish = (threading.Event() for _ in range(5))

    def hold() -> None:
        held = _Held()
        refs.append(weakref.ref(held))
        holding.set()
        dropping.wait(30)
        held = None  # dropped: nothing else refers to it
        dropped.set()
        finish.wait(30)

    @tool
    def pause() -> str:
        """Wait while the test looks."""
        paused.set()
        hold() if in_team else finish.wait(30)
        return "paused"

    helper = _helper(_PlannedModel([lambda received: ("pause", {})]), bound([pause], store))
    manager = ToolCallingAgent(tools=bound([small], store), model=_PlannedModel([
        lambda received: ("helper", {"task": "pause"})]), managed_agents=bound_managed_agents([helper], store),
        max_steps=3, verbosity_level=-1)
    threads = [threading.Thread(target=manager.run, args=("go",))] + (
        [] if in_team else [threading.Thread(target=hold)])
    for thread in threads:
        thread.start()
    try:
        assert holding.wait(30) and paused.wait(30)
        tools = bound([big], store)
        with ThreadPoolExecutor(1) as pool:
            assert "tool-output://" in pool.submit(tools[0], sanitize_inputs_outputs=True).result()
        assert [record.session_id for record in store.records()] == [tools[0]._session_id]
        dropping.set()
        assert dropped.wait(30)
        gc.collect()
        return refs[0]() is not None
    finally:
        dropping.set()
        finish.set()
        for thread in threads:
            thread.join(30)


def test_a_bound_call_in_a_pool_keeps_no_object_another_thread_dropped_review_r20(store):
    # While a managed agent ran anywhere, a bound tool call in a pool task looked for the thread waiting for
    # it by reading f_locals of every frame of every thread; on Python 3.11 that stores a snapshot of the
    # locals on each frame, so an object a thread beside the run dropped afterwards stayed alive with the frame.
    assert not _still_alive_after_a_bound_call_in_a_pool(store, in_team=False)


def test_a_bound_call_in_a_pool_reads_no_frame_of_a_team_thread_but_its_executors_review_r20(store):
    # The cost of that look-up (milliseconds a call with tens of threads): now only the threads running a team
    # are looked at, their frames told apart by code, and only the one frame of smolagents' executor that holds
    # the task's future has its locals read; a frame under the managed agent's tool is never read, so what it
    # drops is gone.
    assert not _still_alive_after_a_bound_call_in_a_pool(store, in_team=True)
