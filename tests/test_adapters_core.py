"""overspill.adapters._core: what the framework adapters share, and what importing overspill does not load."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys

import pytest

from overspill import ToolOutputStore
from overspill.adapters._core import Bounder, Sessions, as_text, optional_session_id, open_store, paging_tools
from overspill.tools import schemas

# Each adapter's extra and the framework package it installs; the test extra takes them all.
ADAPTER_EXTRAS = {"openai-agents": "openai-agents", "langchain": "langchain", "pydantic-ai": "pydantic-ai-slim",
                  "smolagents": "smolagents"}
FRAMEWORKS = ("agents", "langchain", "langchain_core", "langgraph", "pydantic_ai", "smolagents", "openai", "mcp")


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store") as opened:
        yield opened


def test_importing_overspill_imports_no_framework(subprocess_env):
    code = ("import sys, overspill, overspill.tools, overspill.adapters, overspill.adapters._core\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=subprocess_env).stdout
    assert output.strip() == "[]"


def test_small_values_come_back_as_they_came(store):
    bounder = Bounder(store)
    for value in ("short", b"bytes", {"a": 1}, [1, 2], 3, None):
        assert bounder.value("s", "c", value) is value
    assert store.records() == []


def test_large_json_value_is_stored_as_its_json_text(store):
    value = {"rows": list(range(30_000))}
    preview = Bounder(store).value("s", "c", value)
    assert isinstance(preview, str) and "tool-output://" in preview
    (record,) = store.records()
    stored = b"".join(bytes(piece) for piece in store.iter_bytes("s", record.resource.uri))
    assert stored == json.dumps(value, ensure_ascii=False).encode()


def test_unserialisable_value_passes_with_a_warning(store, caplog):
    value = object()
    with caplog.at_level(logging.WARNING, logger="overspill"):
        assert Bounder(store).value("s", "c", value) is value
    assert "cannot be serialised" in caplog.text and caplog.records[0].name == "overspill"
    assert store.records() == []


def test_str_subclass_is_bounded_as_plain_text(store):
    class Text(str):
        def __str__(self) -> str:
            return "not the characters"

    assert type(as_text(Text("abc"))) is str and as_text(Text("abc")) == "abc"
    big = Text("x\n" * 5000)
    preview = Bounder(store).value("s", "c", big)
    assert type(preview) is str and preview.startswith("x\nx\n")
    small = Text("abc")
    assert Bounder(store).value("s", "c", small) is small


def test_async_bounding_equals_sync(store):
    bounder = Bounder(store)
    text = "".join(f"{n}\n" for n in range(10_000))
    sync = bounder.text("s", "c1", text)
    asynchronous = asyncio.run(bounder.atext("s", "c2", text))
    assert sync is not None and asynchronous is not None
    assert sync.split("tool-output://")[0] == asynchronous.split("tool-output://")[0]
    assert asyncio.run(bounder.avalue("s", "c3", "small")) == "small"
    assert len(store.records()) == 2


def test_sessions_one_id_per_object():
    sessions = Sessions()

    class Run:
        pass

    first, second = Run(), Run()
    assert sessions.of(first) == sessions.of(first) != sessions.of(second)
    unhashable = [1]
    assert sessions.of(unhashable) == sessions.of(unhashable) != sessions.of([1])


def test_session_id_and_store_checks(store):
    assert optional_session_id(None) is None and optional_session_id("t") == "t"
    with pytest.raises(TypeError):
        optional_session_id(3)
    with pytest.raises(ValueError):
        optional_session_id("")
    assert open_store(store) is store
    with pytest.raises(TypeError, match="ToolOutputStore"):
        open_store("/tmp/somewhere")


def test_paging_tools_are_the_tools_own_on_stored_outputs_only(tmp_path):
    with ToolOutputStore(tmp_path / "store", config={"tool_output": {"max_lines": 50, "max_bytes": 4096}}) as store:
        tools = {tool.name: tool for tool in paging_tools(store)}
        full = {spec["function"]["name"]: spec["function"] for spec in schemas(limits=store.limits())}
        assert list(tools) == ["read", "grep"]
        for name, tool in tools.items():
            # overspill.tools' schema with the file arguments and the wording about files taken out.
            assert tool.parameters["additionalProperties"] is False
            for key, rule in tool.parameters["properties"].items():
                assert {**rule, "description": ""} == {**full[name]["parameters"]["properties"][key], "description": ""}
            assert "path" not in tool.parameters["properties"] and "path" in full[name]["parameters"]["properties"]
            assert tool.parameters["required"] == [*full[name]["parameters"]["required"], "resource"]
            assert set(tool.parameters["properties"]) < set(full[name]["parameters"]["properties"])
            text = json.dumps([tool.description, tool.parameters])
            assert not re.search(r"\b(path|files?|folder|glob)\b", text), text
            assert tool.description.split(" (")[0] == full[name]["description"].split(" (")[0]
        assert "50 lines" in tools["grep"].description
        text = "".join(f"{n}\n" for n in range(1000))
        result = store.truncate("s", "c", text)
        page = tools["read"].run("s", "r", {"resource": result.resource.uri, "offset": result.next_offset})
        assert not page.is_error and page.output == text[result.next_offset:]
        denied = asyncio.run(tools["read"].arun("other", "r", json.dumps({"resource": result.resource.uri})))
        assert denied.is_error and "not found in this session" in denied.output
        bad = tools["grep"].run("s", "g", {"resource": result.resource.uri})
        assert bad.is_error and "pattern" in bad.output


@pytest.mark.parametrize("arguments", [
    {"path": "secret.txt"}, {"path": "secret.txt", "resource": "tool-output://0123456789abcdefghijklmn"},
    {"resource": "tool-output://0123456789abcdefghijklmn", "glob": "*.txt"}, {}, None, "{}",
    json.dumps({"path": "secret.txt"})])
@pytest.mark.parametrize("name", ["read", "grep"])
def test_paging_tools_never_read_files(store, tmp_path, monkeypatch, name, arguments):
    (tmp_path / "secret.txt").write_text("the launch code is 0451-ZEBRA\n")
    monkeypatch.chdir(tmp_path)
    tool = {tool.name: tool for tool in paging_tools(store)}[name]
    if isinstance(arguments, dict):
        arguments = {"pattern": "launch", **arguments} if name == "grep" else arguments
    result = tool.run("s", "c", arguments)
    assert result.is_error and "0451" not in result.output and "\n" not in result.output
    if "path" in (arguments or ""):
        assert result.output == (f"{name} works on stored outputs only and takes no path here: set resource to "
                                 "the tool-output:// URI a truncated output names")
    elif "glob" in (arguments or ""):
        assert ("takes no glob" if name == "grep" else "has no argument 'glob'") in result.output
    else:
        assert result.output == (f"{name} needs the argument 'resource'" if name == "read" or isinstance(arguments, dict)
                                 else f"{name} needs the argument 'pattern'")


@pytest.mark.parametrize("name", ["read", "grep"])
def test_paging_tools_answer_deeply_nested_arguments_text_as_not_json(store, name):
    """Red team f04: the adapters parse the model's arguments text before call() does, and
    json.loads raises RecursionError (not a ValueError) on deep nesting: it left the tool."""
    tool = {tool.name: tool for tool in paging_tools(store)}[name]
    result = tool.run("s", "c", "[" * 100_000)
    assert result.is_error and result.output.startswith(f"the arguments of {name} are not valid JSON")


def test_each_adapter_has_its_extra():
    from importlib import metadata

    info = metadata.metadata("overspill")
    assert set(ADAPTER_EXTRAS) <= set(info.get_all("Provides-Extra") or [])
    requirements = info.get_all("Requires-Dist") or []
    for extra, package in ADAPTER_EXTRAS.items():
        assert any(r.startswith(package) and f'extra == "{extra}"' in r for r in requirements), (extra, requirements)
        assert any(r.startswith("overspill") and extra in r and 'extra == "test"' in r for r in requirements)


@pytest.mark.parametrize(("module", "framework_module", "names"), [
    ("openai_agents", "agents", {"bound", "bound_handoffs", "bound_servers"}),
    ("langchain", "langchain.agents", {"OverspillMiddleware", "middleware"}),
    ("pydantic_ai", "pydantic_ai", {"OverspillCapability", "capability", "toolset"}),
    ("smolagents", "smolagents", {"BoundedToolCallingAgent", "bound", "bound_managed_agents"}),
])
def test_adapter_public_names_are_pinned(module, framework_module, names):
    from importlib import import_module

    from adapter_scenario import framework

    framework(framework_module)
    adapter = import_module(f"overspill.adapters.{module}")
    assert set(adapter.__all__) == names
    assert all(callable(getattr(adapter, name)) for name in names)


# ------------------------------------------------------------------ regressions (red team L)
def test_an_error_is_retold_with_its_text_bounded_and_its_type_kept(store):
    # Frameworks show the model an exception's text (smolagents' "Error executing tool ...", a LangChain
    # error handler's str(exc)): Bounder.error stores a long one whole and retells the exception with the
    # preview, keeping what an ``except`` clause or the framework's "Name: text" looks at.
    from overspill.adapters._core import retold

    class Picky(Exception):
        def __init__(self, code: int, detail: str) -> None:
            super().__init__(code, detail)
            self.code = code

    told = retold(Picky(3, "x" * 10), "short")
    assert type(told) is Picky and str(told) == "short" and told.code == 3 and told.args == ("short",)
    failed = retold(subprocess.CalledProcessError(2, ["make"], output="y"), "short")  # str() is not its args
    assert isinstance(failed, subprocess.CalledProcessError) and type(failed).__name__ == "CalledProcessError"
    assert str(failed) == "short" and (failed.returncode, failed.output) == (2, "y")
    assert isinstance(retold(KeyError("k"), "short"), KeyError) and str(retold(KeyError("k"), "short")) == "short"
    bounder = Bounder(store)
    log = "".join(f"{n}\n" for n in range(200_000))
    assert bounder.error("s", "c1", ValueError("small")) is None and store.records() == []
    bounded = asyncio.run(bounder.aerror("s", "c2", ValueError(log)))
    assert type(bounded) is ValueError and "tool-output://" in str(bounded) and len(str(bounded)) < 60_000
    (record,) = store.records()
    assert b"".join(bytes(piece) for piece in store.iter_bytes("s", record.resource.uri)).decode() == log


def test_a_retold_oserror_keeps_its_errno_strerror_and_filenames():
    """Regression (review M, minor): ``retold`` copied only ``__dict__``, so a retold OSError lost its
    errno, strerror and filenames (built-in slots), and a class's ``__slots__`` were lost the same way,
    though its docstring says the attributes are copied."""
    import errno as errnos

    from overspill.adapters._core import retold

    missing = FileNotFoundError(errnos.ENOENT, "No such file or directory", "/no/such", None, "/other")
    missing.note = "kept too"
    told = retold(missing, "short")
    assert isinstance(told, FileNotFoundError) and type(told).__name__ == "FileNotFoundError"
    assert str(told) == "short" and told.args == ("short",) and told.note == "kept too"
    assert (told.errno, told.strerror, told.filename, told.filename2) == (
        errnos.ENOENT, "No such file or directory", "/no/such", "/other")
    blocked = retold(BlockingIOError(errnos.EAGAIN, "busy", 5), "short")  # characters_written: a getset
    assert (blocked.errno, blocked.characters_written, str(blocked)) == (errnos.EAGAIN, 5, "short")
    assert not hasattr(retold(BlockingIOError(errnos.EAGAIN, "busy"), "short"), "characters_written")
    bad = retold(SyntaxError("bad", ("f.py", 3, 7, "x = = 1\n")), "short")
    assert (bad.filename, bad.lineno, bad.offset, bad.text, str(bad)) == ("f.py", 3, 7, "x = = 1\n", "short")

    class Slotted(Exception):
        __slots__ = ("code",)

        def __init__(self, code: int) -> None:
            super().__init__(f"failed with {code}")
            self.code = code

    again = retold(Slotted(7), "short")
    assert type(again) is Slotted and again.code == 7 and str(again) == "short"


def test_a_long_error_text_the_store_cannot_keep_keeps_the_tools_exception(tmp_path):
    """Regression (red team Q f04): with a data folder that cannot be written, Bounder.error raised
    StorageError in place of the tool's own exception, so LangChain's ToolErrorMiddleware
    (``isinstance(exc, ValueError)``) missed it and the run halted, and a long ModelRetry ended a
    PydanticAI run as a storage error. The tool's exception now comes through, its text the
    preview whose marker says "output not stored" and why (as ``mcp --wrap`` gives a result)."""
    import shutil

    folder = tmp_path / "store"
    with ToolOutputStore(folder) as store:
        bounder = Bounder(store)
        shutil.rmtree(folder)
        folder.write_text("")  # the disk went bad: a file where the data folder was
        log = "".join(f"FAILED test_{n} - assert 1 == 2\n" for n in range(20_000))
        for told in (bounder.error("s", "c1", ValueError(log)), asyncio.run(bounder.aerror("s", "c2", ValueError(log)))):
            assert type(told) is ValueError and "output not stored" in str(told) and len(str(told)) < 60_000
            assert str(told).startswith("FAILED test_0 - assert 1 == 2\n") and "tool-output://" not in str(told)
        assert asyncio.run(bounder.aerror_text("s", "c3", log)).startswith("FAILED test_0")
        assert bounder.error("s", "c4", ValueError("small")) is None


# ------------------------------------------------------------------ regressions (red team Q f01, f02)
class _Coded(Exception):
    """An exception whose ``__new__`` takes its own arguments (as some libraries' do)."""

    def __new__(cls, code: int, detail: str) -> "_Coded":
        made = super().__new__(cls, code, detail)
        made.code = code
        return made


class _Sealed(Exception):
    """An exception that only its own maker can make (its ``__new__`` wants a token it does not keep)."""

    def __new__(cls, token: object) -> "_Sealed":
        if token is not _SEALED_TOKEN:
            raise TypeError("made only by its maker")
        made = super().__new__(cls)
        return made

    def __init__(self, token: object) -> None:  # (keeps no arguments: nothing to make it again from)
        pass

    def __str__(self) -> str:
        return "sealed: " + "x" * 100


_SEALED_TOKEN = object()


def _validation_error() -> Exception:
    import pydantic

    class Rows(pydantic.BaseModel):
        rows: list[int]

    try:
        Rows(rows=[f"x{n}" for n in range(50)])
    except pydantic.ValidationError as error:
        return error
    raise AssertionError("pydantic accepted what it should refuse")


def test_a_retold_error_keeps_its_type_when_its_type_is_not_made_from_its_text(store):
    """Regression (red team Q f01): an ExceptionGroup / BaseExceptionGroup (an asyncio.TaskGroup in a tool),
    a pydantic ValidationError or a type whose ``__new__`` takes its own arguments came out of ``retold``
    (so of LangChain's middleware, smolagents' ``bound()``, PydanticAI) as a plain ``Exception`` of the same
    name: ``except* ValueError``, ``except ExceptionGroup``, ``except ValidationError`` all missed it. It is now
    a subclass of the original type saying the preview; one no exception of its type can be made to say it
    is left unbounded (None) rather than lose its type."""
    pydantic = pytest.importorskip("pydantic")
    from overspill.adapters._core import retold

    shards = [ValueError(f"shard {n} failed") for n in range(3)]
    group = retold(ExceptionGroup("fetch failed: " + "z" * 100, shards), "short")
    assert isinstance(group, ExceptionGroup) and type(group).__name__ == "ExceptionGroup" and str(group) == "short"
    assert list(group.exceptions) == shards
    try:
        raise group
    except* ValueError as caught:  # what the tool's caller wrote
        assert list(caught.exceptions) == shards
    base = retold(BaseExceptionGroup("stopped", [KeyboardInterrupt(), ValueError("v")]), "short")
    assert isinstance(base, BaseExceptionGroup) and not isinstance(base, Exception) and str(base) == "short"
    invalid = _validation_error()
    told = retold(invalid, "short")
    assert isinstance(told, pydantic.ValidationError) and isinstance(told, ValueError) and str(told) == "short"
    assert type(told).__name__ == "ValidationError" and told.errors() == invalid.errors()
    coded = retold(_Coded(3, "d" * 100), "short")
    assert isinstance(coded, _Coded) and coded.code == 3 and str(coded) == "short"
    assert retold(_Sealed(_SEALED_TOKEN), "short") is None
    bounder = Bounder(store)
    assert bounder.error("s", "c1", _Sealed(_SEALED_TOKEN)) is None  # (its text fits: nothing stored anyway)
    long = ExceptionGroup("fetch failed:\n" + "\n".join("y" * 200 for _ in range(2_000)), shards)
    bounded = bounder.error("s", "c2", long)
    assert isinstance(bounded, ExceptionGroup) and "tool-output://" in str(bounded) and len(str(bounded)) < 60_000
    bounded = asyncio.run(bounder.aerror("s", "c3", _validation_error().__class__.from_exception_data(
        "Rows", [{"type": "missing", "loc": (f"field_{n}",), "input": {}} for n in range(2_000)])))
    assert isinstance(bounded, pydantic.ValidationError) and "tool-output://" in str(bounded)


def test_a_retold_error_pickles_and_copies_as_its_type():
    """Regression (red team Q f02): a retold KeyError / CalledProcessError / UnicodeDecodeError (a subclass
    made at run time, under the original's name) could not be pickled ("it's not the same object as
    builtins.KeyError"), nor copied (its args no longer fit its __init__), so a tool run in a process pool
    reported a PicklingError instead of its error. It now pickles and copies as its own type, with the same
    text and attributes."""
    import copy
    import pickle

    from overspill.adapters._core import retold

    originals = [KeyError("k" * 100), subprocess.CalledProcessError(2, ["make", "-j"], output="out", stderr="err"),
                 UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte"), _Coded(4, "d" * 100),
                 ExceptionGroup("many", [ValueError("a"), KeyError("b")])]
    try:
        import pydantic  # noqa: F401
        originals.append(_validation_error())
    except ImportError:
        pass
    for original in originals:
        original.note = "kept"
        told = retold(original, "short")
        assert isinstance(told, type(original)) and str(told) == "short"
        for again in (pickle.loads(pickle.dumps(told)), copy.copy(told)):
            assert isinstance(again, type(original)) and type(again).__name__ == type(original).__name__
            assert str(again) == "short" and again.note == "kept" and len(again.args) == len(told.args)
            if hasattr(original, "errors"):  # a ValidationError's args are its own objects: its errors() are it
                assert again.errors() == original.errors()
            else:
                assert repr(again.args) == repr(told.args)
            for name in ("returncode", "cmd", "output", "stderr", "encoding", "object", "start", "end", "reason",
                         "code"):
                assert getattr(again, name, None) == getattr(original, name, None), name
    group = pickle.loads(pickle.dumps(retold(originals[4], "short")))
    assert [type(inner) for inner in group.exceptions] == [ValueError, KeyError]


# ------------------------------------------------------------------ regressions (red team C10)
def test_a_value_json_cannot_serialise_is_bounded_as_the_text_the_framework_shows(store, caplog):
    # shown= (smolagents' str) is the text bounded when JSON fails; a value it cannot show either still
    # passes unchanged with the warning.
    class Unshowable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    big = [{1, 2}] * 20_000  # a set: not JSON
    with caplog.at_level(logging.WARNING, logger="overspill"):
        preview = Bounder(store).value("s", "c", big, shown=str)
        assert isinstance(preview, str) and "tool-output://" in preview
        (record,) = store.records()
        assert b"".join(bytes(piece) for piece in store.iter_bytes("s", record.resource.uri)) == str(big).encode()
        small = [{1, 2}]
        assert Bounder(store).value("s", "c2", small, shown=str) is small
        assert caplog.records == []
        unshowable = Unshowable()
        assert Bounder(store).value("s", "c3", unshowable, shown=str) is unshowable
    assert "cannot be serialised" in caplog.text and len(store.records()) == 1



# ------------------------------------------------------------------ regressions (red team F13)
def test_a_value_whose_shown_text_alone_is_over_the_limits_is_bounded_as_that_text(store):
    # Bounder.value(..., shown=str) bounded bytes as themselves: 40,000 fit, so they passed, and smolagents
    # showed the model their 160,016-character repr.  The shown text is now the one home's second check
    # (value and avalue alike): stored and previewed when the value's own text fits but it does not.
    data = bytes(40_000)
    bounder = Bounder(store)
    for preview in (bounder.value("s", "c1", data, shown=str), asyncio.run(bounder.avalue("s", "c2", data, shown=str))):
        assert isinstance(preview, str) and "tool-output://" in preview and len(preview.encode()) < 60_000
    assert [b"".join(bytes(piece) for piece in store.iter_bytes("s", record.resource.uri))
            for record in store.records()] == [str(data).encode()] * 2
    few = bytes(10)
    assert bounder.value("s", "c3", few, shown=str) is few and bounder.value("s", "c4", data) is data
    assert len(store.records()) == 2

class _Upstream(Exception):
    """An error that makes itself again from its own attributes, not its args (as ``json.JSONDecodeError``)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"upstream answered {status}: {body}")
        self.status, self.body = status, body

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (self.status, self.body)


def test_a_retold_error_whose_type_reduces_itself_copies_and_pickles_saying_the_preview(store):
    # retold() kept the original type and set only .args, but json.JSONDecodeError.__reduce__ makes it again
    # from .msg/.doc/.pos (and _Upstream from its status and body): copy.copy or a pickle round trip of the
    # bounded exception gave back the whole unbounded text.  Such a type is now retold as the subclass,
    # which copies and pickles as the original type saying the preview.
    import copy
    import pickle

    body = "<html>" + "<p>maintenance</p>\n" * 20_000
    bounder = Bounder(store)
    for number, original in enumerate((json.JSONDecodeError("upstream did not return JSON: " + body, body, 0),
                                       _Upstream(503, body))):
        bounded = bounder.error("s", f"c{number}", original)
        shown = str(bounded)
        assert isinstance(bounded, type(original)) and type(bounded).__name__ == type(original).__name__
        assert "tool-output://" in shown and len(shown) < 60_000
        for again in (copy.copy(bounded), copy.deepcopy(bounded), pickle.loads(pickle.dumps(bounded)),
                      pickle.loads(pickle.dumps(bounded, protocol=2))):
            assert isinstance(again, type(original)) and type(again).__name__ == type(original).__name__
            assert str(again) == shown
            for name in ("msg", "doc", "pos", "lineno", "colno", "status", "body"):
                assert getattr(again, name, None) == getattr(original, name, None), name
    assert len(store.records()) == 2
    # a type whose copy is made from its args alone keeps being retold as itself
    plain = bounder.error("s", "c9", ValueError(body))
    assert type(plain) is ValueError and str(copy.copy(plain)) == str(plain) != body


@pytest.mark.parametrize("adapter, extra, framework", [
    ("langchain", "langchain", "langchain"), ("langchain", "langchain", "langgraph"),
    ("openai_agents", "openai-agents", "agents"), ("pydantic_ai", "pydantic-ai", "pydantic_ai"),
    ("smolagents", "smolagents", "smolagents"), ("smolagents", "smolagents", "PIL"),
    ("smolagents", "smolagents", "smolagents PIL")])
def test_an_adapter_without_its_framework_names_the_extra_to_install(subprocess_env, adapter, extra, framework):
    """Regression (red team H10, noted): importing an adapter on a machine without its extra raised
    the framework's bare ModuleNotFoundError ("No module named 'langchain'"); it names the extra and
    its ``pip install`` now, and is still a ModuleNotFoundError naming the missing module. Red team
    J15: without the extra neither smolagents nor its Pillow is there, and the framework is named."""
    # A process where the framework cannot be imported, as on a machine without the extra.
    missing = framework.split()
    framework = missing[0]
    code = (f"import sys; sys.modules.update(dict.fromkeys({missing!r}))\n"
            "try:\n"
            f"    import overspill.adapters.{adapter}\n"
            "except ModuleNotFoundError as error:\n"
            "    print(error.name); print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=subprocess_env)
    assert done.returncode == 0, done.stderr
    name, message = done.stdout.split("\n", 1)
    assert name.split(".")[0] == framework
    assert f"pip install 'overspill[{extra}]'" in message and repr(name) in message


# ------------------------------------------------------------------ regressions (red team A11)
def test_ids_the_store_refuses_become_stand_ins_it_accepts(store):
    """Regression (red team A11, f01): a framework's or a model's id over the store's 1024-byte bound for
    a caller string (a LangGraph thread id, a tool call id), or holding a surrogate pair (which a record
    would read back as another string), reached ``truncate`` as it was: the store's ``ValueError`` failed
    the whole run, even for a 4-byte result.  Such an id now stands for a stand-in the store accepts, the
    same every time (the model's ``read`` in that session finds its outputs) and its own (two ids never
    share a session); an id the store accepts is used exactly as it is."""
    from adapter_scenario import LONG_ID, marker

    from overspill._arguments import MAX_METADATA_BYTES

    bounder = Bounder(store)
    read = paging_tools(store)[0]
    log = "".join(f"{n}\n" for n in range(200_000))
    paired = "thread-\ud83d\ude00"  # a surrogate pair: not the session of "thread-\U0001F600"
    seen: set[str] = set()

    def new_records() -> list:
        found = [record for record in store.records() if record.resource.uri not in seen]
        seen.update(record.resource.uri for record in found)
        return found

    for session_id in (LONG_ID + "a", paired):
        call_id = LONG_ID + "c"
        assert bounder.text(session_id, call_id, "tiny") is None and new_records() == []
        assert bounder.error(session_id, call_id, ValueError("small")) is None and new_records() == []
        uri, offset = marker(bounder.text(session_id, call_id, log))
        page = read.run(session_id, call_id, {"resource": uri, "offset": offset})
        assert not page.is_error and page.output.startswith(log.encode()[offset:offset + 100].decode()), page.output
        told = asyncio.run(bounder.aerror(session_id, call_id, ValueError(log)))
        assert type(told) is ValueError and "tool-output://" in str(told)
        for other in (LONG_ID + "b", "thread-\U0001F600"):  # ids differing only at the end, the pair's character
            assert "not found in this session" in read.run(other, call_id, {"resource": uri}).output
        records = new_records()
        assert len(records) == 2 and len({record.session_id for record in records}) == 1
        for record in records:
            for stand_in in (record.session_id, record.tool_call_id):
                assert len(stand_in.encode()) <= MAX_METADATA_BYTES and stand_in not in (session_id, call_id)
    # Ids the store accepts stay exactly as they are: control characters, a lone surrogate, the bound itself.
    for session_id in ("thread\x00\n\x1b1", "thread-\udc80", "y" * MAX_METADATA_BYTES):
        bounder.text(session_id, "c" * MAX_METADATA_BYTES, log)
        (record,) = new_records()
        assert (record.session_id, record.tool_call_id) == (session_id, "c" * MAX_METADATA_BYTES)
