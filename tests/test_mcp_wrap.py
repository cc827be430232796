"""``overspill mcp --wrap``/``--wrap-url`` and ``overspill.mcp_wrap.wrap``, driven by the
SDK's own client over stdio against the installed console script, around a test
upstream written with the SDK (``mcp_upstream_server.py``) and around the real
``mcp-server-git`` and ``mcp-server-fetch`` from PyPI.  Real processes only;
/proc says nothing is left running."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from processes import alive_in_group, processes, wait_until

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'overspill[mcp]'")

import anyio  # noqa: E402
from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import Client, StdioServerParameters, types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS  # noqa: E402
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError  # noqa: E402
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ToolsListChanged  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402
from test_mcp_server import links_of, overspill_script, page_with_read, stdio, text_of  # noqa: E402

from conftest import IMPLEMENTATIONS  # noqa: E402

UPSTREAM = str(Path(__file__).with_name("mcp_upstream_server.py"))
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
LIMIT = 8192


def wrapped(tmp_path: Path, env: dict[str, str], *upstream: str, options: tuple[str, ...] = (),
            mode: str = "legacy", **client: object) -> Client:
    """A client of ``overspill mcp --wrap`` around the test upstream (``upstream`` are its arguments)."""
    args = ["mcp", "--data-dir", str(tmp_path / "data"), *options, "--wrap", "--", sys.executable, UPSTREAM,
            *upstream]
    return Client(StdioServerParameters(command=overspill_script(), args=args, env=env), mode=mode,
                  **client)  # type: ignore[arg-type]


def direct(command: list[str], env: dict[str, str]) -> Client:
    return Client(StdioServerParameters(command=command[0], args=command[1:], env=env), mode="legacy")


def running_with(token: str) -> list[int]:
    """Processes (not zombies) whose command line holds ``token``."""
    found = []
    for pid, state, _, _ in processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if token.encode() in file.read() and state != "Z" and pid != os.getpid():
                    found.append(pid)
        except OSError:
            continue
    return found


def dumped(result) -> list[dict]:
    return [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in result.content]


async def page_all(client: Client, uri: str, tool: str = "read") -> bytes:
    offset, pages = 0, []
    while True:
        result = await client.call_tool(tool, {"resource": uri, "offset": offset, "limit": 50 * 1024})
        assert not result.is_error, text_of(result)
        data, nxt = text_of(result).encode(), result.structured_content.get("next_offset")
        pages.append(data if nxt is None else data[: nxt - offset])
        if nxt is None:
            return b"".join(pages)
        offset = nxt


# ------------------------------------------------------------------ the test upstream over stdio
class Recorded:
    """What the real client's callbacks were asked and told (one shared session's)."""

    def __init__(self) -> None:
        self.logged: list = []
        self.notified: list[str] = []

    def callbacks(self) -> dict:
        async def sampling(context, params):
            return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="forty-two"),
                                             model="test-model")

        async def elicitation(context, params):
            return types.ElicitResult(action="accept", content={"name": "Ada"})

        async def roots(context):
            return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/root-a")])

        async def log(params):
            self.logged.append(params.data)

        async def message(item):
            self.notified.append(type(item).__name__)

        return dict(sampling_callback=sampling, elicitation_callback=elicitation, list_roots_callback=roots,
                    logging_callback=log, message_handler=message)


class Shared:
    """One wrapped session (the console script around the test upstream, the SDK's client over
    stdio in the handshake era, with sampling, elicitation and roots) that the tests below share:
    they call tools and read what was stored, and none of them ends or breaks the session."""

    def __init__(self, portal, client, recorded: Recorded, token: str) -> None:
        self.portal, self.client, self.recorded, self.token = portal, client, recorded, token

    def run(self, function, *args):
        """Run ``await function(client, *args)`` on the session's event loop."""
        return self.portal.call(function, self.client, *args)


@pytest.fixture(scope="module")
def shared(tmp_path_factory, implementation):
    token = f"token-{time.time_ns()}"
    recorded = Recorded()
    env = {**os.environ, "OVERSPILL_IMPLEMENTATION": implementation}  # as subprocess_env, for the module
    client = wrapped(tmp_path_factory.mktemp("shared"), env, "serve", token, **recorded.callbacks())
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(client) as entered:
            pid, group, wrapper = map(int, text_of(portal.call(entered.call_tool, "pid", {})).split())
            assert group == pid and pid in running_with(token)
            yield Shared(portal, entered, recorded, token)
    # The client went away: the wrapper ends the upstream's process group, then exits.
    assert wait_until(lambda: not alive_in_group(group) and not running_with(token))
    assert wait_until(lambda: wrapper not in [pid for pid, state, _, _ in processes() if state != "Z"])


def test_results_pass_through_or_come_back_bounded(shared, subprocess_env):
    async def main(client):
        assert client.server_info.name == "test-upstream" and client.server_info.version == "1.2.3"
        assert client.instructions.startswith("The test upstream's own instructions.")
        assert "8192 bytes" in client.instructions and "with read" in client.instructions
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(listed)[:3] == ["text", "blocks", "image"] and {"read", "grep"} <= set(listed)
        assert listed["text"].description == "the test tool text" and listed["text"].input_schema == {
            "type": "object"}
        assert listed["crash"].annotations.read_only_hint is False
        assert listed["read"].input_schema["required"] == ["resource"]

        calls = {
            "empty": ("text", {"unit": "", "count": 1}),
            "bytes at the limit": ("text", {"unit": "x", "count": LIMIT}),
            "lines at the limit": ("text", {"unit": "a", "count": 400, "sep": "\n"}),
            "small blocks": ("blocks", {"parts": ["one", "two", "three"]}),
            "image": ("image", {}),
            "small structured": ("structured", {"data": {"rows": [1, 2, 3]}}),
            "small error": ("fail", {"why": "no such row"}),
            "small typed": ("typed", {"unit": "t", "count": 10}),
        }
        async with direct([sys.executable, UPSTREAM], subprocess_env) as upstream:
            for label, (name, arguments) in calls.items():
                result = await client.call_tool(name, arguments)
                expected = await upstream.call_tool(name, arguments)
                assert dumped(result) == dumped(expected), label
                assert result.structured_content == expected.structured_content, label
                assert result.is_error == expected.is_error, label
        assert (await client.call_tool("image", {})).content[0].type == "image"

        over = {
            "a byte over": ("text", {"unit": "x", "count": LIMIT + 1}, "x" * (LIMIT + 1)),
            "a line over": ("text", {"unit": "a", "count": 401, "sep": "\n"}, "\n".join("a" * 401)),
            "binary-looking": ("text", {"unit": "\x00\x01\x7f\x1f\ufffd\u00e9\n", "count": 3000}, None),
            "several blocks": ("blocks", {"parts": ["a" * 5000, "b" * 5000]}, "a" * 5000 + "\n" + "b" * 5000),
            "large error": ("fail", {"why": "e" * 9000}, "e" * 9000),
        }
        for label, (name, arguments, whole) in over.items():
            if whole is None:
                whole = arguments["unit"] * arguments["count"]
            result = await client.call_tool(name, arguments)
            (link,) = links_of(result)
            structured = result.structured_content
            assert set(structured) == {"uri", "size", "lines", "next_offset", "text"}, label
            assert structured["uri"] == link.uri and structured["size"] == len(whole.encode()), label
            assert structured["text"] == text_of(result) and len(text_of(result).encode()) < LIMIT + 400, label
            assert result.is_error == (name == "fail"), label
            assert await page_all(client, link.uri) == whole.encode(), label
        blocks = await client.call_tool("blocks", {"parts": ["a" * 5000, "b" * 5000]})
        assert [block.type for block in blocks.content] == ["text", "resource_link", "image", "audio", "resource"]
        small = await client.call_tool("blocks", {"parts": ["one"]})
        assert dumped(blocks)[2:] == dumped(small)[1:]  # the other blocks, unchanged, in their order

        data = {"rows": [{"id": n, "name": f"row {n}"} for n in range(2000)]}
        big = await client.call_tool("structured", {"data": data, "text": "2000 rows"})
        assert [block.type for block in big.content] == ["text", "text", "resource_link"]
        assert big.content[0].text == "2000 rows" and big.structured_content["text"] == big.content[1].text
        stored = await page_all(client, big.structured_content["uri"])
        assert json.loads(stored) == data

        # A page defaults to the preview's byte limit; resources/read of ours and of the upstream's.
        uri = links_of(await client.call_tool("text", {"unit": "y", "count": 100000}))[0].uri
        page = await client.call_tool("read", {"resource": uri})
        assert page.structured_content["next_offset"] == LIMIT and not page.is_error
        first = (await client.read_resource(uri)).contents[0]
        assert first.meta["next_offset"] == LIMIT and first.text == "y" * LIMIT
        found = await client.call_tool("grep", {"pattern": "y+", "resource": uri, "max_matches": 1})
        assert not found.is_error and "1 matching line" in text_of(found) or "0:" in text_of(found)
        bad = await client.call_tool("read", {"path": "/etc/passwd"})
        assert bad.is_error and "no argument 'path'" in text_of(bad)
        assert (await client.read_resource("test://hello")).contents[0].text == "hello there"
        resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
        assert resources[0] == "test://hello" and uri in resources
        templates = (await client.list_resource_templates()).resource_templates
        assert [template.uri_template for template in templates] == ["tool-output://{id}{?offset,limit}"]
        assert [prompt.name for prompt in (await client.list_prompts()).prompts] == ["greet"]
        prompt = await client.get_prompt("greet")
        assert prompt.messages[0].content.text == "hello prompt"
        completion = await client.complete(types.PromptReference(type="ref/prompt", name="greet"),
                                           {"name": "x", "value": "a"})
        assert completion.completion.values == ["alpha", "beta"]
        with warnings.catch_warnings():  # logging/setLevel is deprecated in the 2026 protocol, still served
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level("debug")
        with pytest.raises(MCPError):
            await client.read_resource("tool-output://0123456789abZZZZZZZZZZZZZZ")

    shared.run(main)


def test_a_bounded_result_with_escapes_and_carriage_returns_reads_back_as_sent(shared, tmp_path, subprocess_env):
    """A wrapped server's results are data, not a terminal's output: no views (ANSI, lone \\r).  Its
    preview shows the text as sent, and read and resources/read page it back byte-exactly;
    ``overspill mcp``'s own bash output keeps its shell views."""
    async def main(client):
        for unit, count in (("row;1\r", 3000), ("\x1b[32mok\x1b[0m line\n", 1000), ("50%\r100%\x1b[K\r\n", 2000)):
            whole = unit * count
            result = await client.call_tool("text", {"unit": unit, "count": count})
            (link,) = links_of(result)
            assert text_of(result).startswith(whole[:200]), unit
            assert await page_all(client, link.uri) == whole.encode(), unit
            first = (await client.read_resource(link.uri)).contents[0]
            assert first.text == whole[:first.meta["next_offset"]], unit

    shared.run(main)

    async def own(client):
        colored = "for i in $(seq 3000); do printf '\\033[31mred\\033[0m\\n'; done"
        result = await client.call_tool("bash", {"command": colored})
        (link,) = links_of(result)
        assert text_of(result).startswith("red\nred\n")
        assert text_of(await client.call_tool("read", {"resource": link.uri})).startswith("red\nred\n")

    async def served():
        async with stdio(tmp_path / "own", subprocess_env) as client:
            await own(client)

    anyio.run(served)


def test_an_output_schema_is_listed_and_a_bounded_result_conforms_to_it(shared):
    async def main(client):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["typed"].output_schema == {"type": "object", "properties": {"result": {"type": "string"}},
                                                 "required": ["result"]}
        assert listed["text"].output_schema is None
        # The SDK's client validates structuredContent against the schema: a result it refused would raise.
        result = await client.call_tool("typed", {"unit": "typed line\n", "count": 2000})
        (link,) = links_of(result)
        assert result.structured_content == {"result": text_of(result)} and link.uri in text_of(result)
        ours = result.meta["overspill/bounded"]
        assert ours["uri"] == link.uri and ours["size"] == 22000 and ours["text"] == text_of(result)
        assert await page_all(client, link.uri) == b"typed line\n" * 2000

    shared.run(main)


def test_a_large_list_under_an_output_schema_gives_a_result_a_validating_client_accepts(shared):
    # Regression: FastMCP's and the SDK's servers declare {"result": [...]} (required) for a tool
    # returning a list; bounded, such a result carried overspill's own fields, which that schema
    # refuses, so the SDK's client raised instead of returning anything.
    rows = [{"i": index, "text": "r" * 50} for index in range(5000)]

    async def main(client):
        result = await client.call_tool("listed", {"count": 5000})  # validated by the client
        (link,) = links_of(result)  # the text and structuredContent say the same: stored once
        structured = result.structured_content
        # Room beside the preview for a prefix of the rows (none at the default limits), and
        # overspill's fields for a client that shows the model only structuredContent.
        assert structured["result"] == rows[:len(structured["result"])]
        assert {key: structured[key] for key in ("uri", "size", "text")} == {
            "uri": link.uri, "size": len(json.dumps(rows)), "text": text_of(result)}
        assert result.meta["overspill/bounded"]["uri"] == link.uri
        assert await page_all(client, link.uri) == json.dumps(rows).encode()

        # A schema that admits no other key, and at least one row: a prefix of the rows within
        # the limits, overspill's fields only under _meta.
        result = await client.call_tool("closed", {"count": 5000})
        structured = result.structured_content
        assert list(structured) == ["result"] and 1 <= len(structured["result"]) < 5000
        assert structured["result"] == rows[:len(structured["result"])]
        shown = json.dumps(structured, indent=2)
        assert len(shown.encode()) <= 8192 and shown.count("\n") < 400
        ours = result.meta["overspill/bounded"]
        assert ours["uri"] == links_of(result)[0].uri and ours["text"] == text_of(result)

        # Rows wider than the limits: one row, its text cut, rather than none.
        result = await client.call_tool("closed", {"count": 3, "width": 20000})
        (row,) = result.structured_content["result"]
        assert row["i"] == 0 and 0 < len(row["text"]) < 8192 and set(row["text"]) == {"r"}

        # An object with a long string and a long array (a model, as FastMCP gives it): the long
        # string is not swapped for the preview while the array would stay whole beside it.
        result = await client.call_tool("reported", {"count": 3000, "width": 20000})
        structured = result.structured_content
        assert {key: structured[key] for key in ("total", "items", "note", "text")} == {
            "total": 3000, "items": [], "note": "", "text": text_of(result)}
        assert len(json.dumps(structured).encode()) < 2 * 8192
        # A long string and little else: the preview is of the whole JSON, not of the string, so
        # it is not given as the string; overspill's fields beside the model at its smallest.
        result = await client.call_tool("reported", {"count": 3, "width": 20000})
        structured = result.structured_content
        assert {key: structured[key] for key in ("total", "items", "note", "text")} == {
            "total": 3, "items": [], "note": "", "text": text_of(result)}

        # Within the limits: as the upstream sent it.
        result = await client.call_tool("listed", {"count": 3})
        assert result.structured_content == {"result": rows[:3]} and not links_of(result)

    shared.run(main)


def test_a_bounded_result_conforms_where_only_a_small_value_or_a_later_member_fits_red_team_b14(shared):
    # Regression: a required member that is null or a string of at least 50,000 characters, and a
    # map of integers with at least one member whose first key is over the limits, gave overspill's
    # own fields, which both schemas refuse (the SDK's client raised): each cut was a prefix, and
    # neither null nor a later member was tried.
    async def main(client):
        data = {"v": "z" * 60_000}
        result = await client.call_tool("nullable", {"data": data})  # validated by the client
        assert result.structured_content == {"v": None}
        ours = result.meta["overspill/bounded"]
        assert ours["uri"] == links_of(result)[0].uri
        assert await page_all(client, ours["uri"]) == json.dumps(data, ensure_ascii=False, indent=2).encode()

        data = {"k" * 20_000: 1, "a": 2}
        result = await client.call_tool("counts", {"data": data})
        assert result.structured_content == {"a": 2}
        assert await page_all(client, result.meta["overspill/bounded"]["uri"]) == json.dumps(
            data, ensure_ascii=False, indent=2).encode()

    shared.run(main)


def test_a_bounded_error_result_of_a_tool_with_an_output_schema_has_structured_content_only_as_it_conforms_red_team_n15_1(
        shared):
    # Regression: a large isError result of a tool that declares an outputSchema came back with overspill's own
    # fields as structuredContent, which the schema refuses ('result' is a required property); the TypeScript
    # SDK's client validates a structuredContent that is there, isError or not, and threw -32602, so the model
    # lost the error.  The Python SDK's client does not validate an error result: jsonschema says it here.
    from jsonschema.validators import validator_for

    rows = [{"i": index, "text": "r" * 50} for index in range(5000)]

    async def main(client):
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}

        async def called(name: str, arguments: dict, whole: bytes):
            result = await client.call_tool(name, arguments)
            assert result.is_error, name
            shown = text_of(result)  # the error's text, bounded, its marker naming the stored copy
            (link,) = links_of(result)
            assert link.uri in shown and len(shown.encode()) < 2 * LIMIT, name
            assert await page_all(client, link.uri) == whole, name
            ours = result.meta["overspill/bounded"]  # overspill's fields where a bounded result keeps them
            assert ours["uri"] == link.uri and ours["size"] == len(whole) and ours["text"] == shown, name
            if result.structured_content is not None:
                schema = schemas[name]
                assert validator_for(schema)(schema).is_valid(result.structured_content), name
            return result

        # The upstream's error result has no structuredContent (a tool that raises): nor has the bounded one.
        for name, arguments, whole in (("typed", {"unit": "error line\n", "count": 2000}, b"error line\n" * 2000),
                                       ("listed", {"count": 5000}, json.dumps(rows).encode()),
                                       ("closed", {"count": 5000}, json.dumps(rows).encode())):
            result = await called(name, {**arguments, "as_error": "bare"}, whole)
            assert result.structured_content is None, name

        # It has one: bounded as a success's is, to what the schema admits.
        result = await called("typed", {"unit": "error line\n", "count": 2000, "as_error": "with"},
                              b"error line\n" * 2000)
        assert result.structured_content == {"result": text_of(result)}
        result = await called("closed", {"count": 5000, "as_error": "with"}, json.dumps(rows).encode())
        assert 1 <= len(result.structured_content["result"]) < 5000
        assert result.structured_content["result"] == rows[:len(result.structured_content["result"])]

    shared.run(main)


def annotated(text: str, annotations: dict | None = None, meta: dict | None = None) -> dict:
    """A text block as an upstream sends it, with its ``annotations`` and ``_meta`` when given."""
    block: dict = {"type": "text", "text": text}
    if annotations is not None:
        block["annotations"] = annotations
    if meta is not None:
        block["_meta"] = meta
    return block


def test_annotations_and_meta_of_text_blocks_survive_bounding(shared, subprocess_env):
    # Regression: a bounded result's preview block carried neither the annotations (audience,
    # priority, lastModified) nor the _meta of the text blocks it joins, so a client relying on
    # audience=["assistant"] saw them vanish only when an output was large.
    said = {"audience": ["assistant"], "priority": 0.25, "lastModified": "2025-01-02T03:04:05Z"}
    tagged = {"example.com/origin": "db", "example.com/shape": {"rows": 2}}
    others = [  # passed through as they are, annotations and _meta included
        {"type": "image", "data": IMAGE, "mimeType": "image/png", "annotations": {"audience": ["user"]},
         "_meta": {"example.com/image": True}},
        {"type": "resource", "resource": {"uri": "test://embedded", "text": "embedded", "mimeType": "text/plain"},
         "annotations": {"priority": 1.0}, "_meta": {"example.com/embedded": 1}},
        {"type": "resource_link", "uri": "test://linked", "name": "linked",
         "annotations": {"audience": ["assistant"], "lastModified": "2024-12-31T00:00:00Z"},
         "_meta": {"example.com/link": "theirs"}},
    ]
    result_meta = {"example.com/trace": "t-1"}

    def verbatim(*texts: dict) -> dict:
        return {"content": [texts[0], *others, *texts[1:]], "meta": result_meta}

    cases = {  # label: (the text blocks, the preview's annotations and _meta, our link's annotations)
        "the same on every block": ((annotated("a" * 5000, said, tagged), annotated("b" * 5000, said, tagged)),
                                    said, tagged),
        "one block": ((annotated("c" * 9000, said, tagged),), said, tagged),
        "what every block says": (
            (annotated("d" * 5000, said, {**tagged, "example.com/part": 1, "example.com/flag": True}),
             annotated("short", {**said, "priority": 0.75}, {**tagged, "example.com/part": 2, "example.com/flag": 1}),
             annotated("e" * 5000, {"lastModified": said["lastModified"], "audience": ["assistant"]},
                       {"example.com/shape": {"rows": 2}, "example.com/origin": "db"})),
            {"audience": ["assistant"], "lastModified": said["lastModified"]}, tagged),
        "for the user and for the assistant": (
            (annotated("f" * 5000, {"audience": ["user"], "priority": 0.5}),
             annotated("g" * 5000, {"audience": ["assistant"], "priority": 0.5})), {"priority": 0.5}, None),
        "a block saying nothing": ((annotated("h" * 5000, said, tagged), annotated("i" * 5000)), None, None),
    }

    async def main(client):
        async with direct([sys.executable, UPSTREAM], subprocess_env) as upstream:
            small = verbatim(annotated("small", said, tagged), annotated("text", {"priority": 0.5}, {"x": 1}))
            passed, expected = await client.call_tool("verbatim", small), await upstream.call_tool("verbatim", small)
            assert dumped(passed) == dumped(expected) and passed.meta == expected.meta == result_meta
            for label, (texts, shown, kept) in cases.items():
                arguments = verbatim(*texts)
                result = await client.call_tool("verbatim", arguments)
                expected = await upstream.call_tool("verbatim", arguments)
                blocks = dumped(result)
                assert [block["type"] for block in blocks] == [
                    "text", "resource_link", "image", "resource", "resource_link"], label
                assert blocks[2:] == dumped(expected)[1:4], label  # the others, unchanged, in their order
                preview, link = blocks[0], blocks[1]
                assert preview.get("annotations") == shown, label
                assert preview.get("_meta") == kept, label
                assert link.get("annotations") == preview.get("annotations") and "_meta" not in link, label
                assert result.meta == result_meta, label
                whole = "\n".join(block["text"] for block in texts)
                assert await page_all(client, link["uri"]) == whole.encode(), label

    shared.run(main)


def test_requests_and_notifications_are_relayed(shared):
    async def main(client):
        assert text_of(await client.call_tool("sample", {"prompt": "the answer?"})) == "sampled: forty-two"
        assert text_of(await client.call_tool("elicit", {})) == "elicited: accept {'name': 'Ada'}"
        assert text_of(await client.call_tool("roots", {})) == "roots: file:///tmp/root-a"
        assert text_of(await client.call_tool("ping", {})) == "pinged"
        assert text_of(await client.call_tool("log", {})) == "logged"
        recorded = shared.recorded
        assert await anyio.to_thread.run_sync(wait_until, lambda: recorded.logged and "ToolListChangedNotification"
                                              in recorded.notified)
        assert recorded.logged == ["a log line"]

    shared.run(main)


def test_progress_and_cancellation_go_through(shared, tmp_path):
    flag = tmp_path / "cancelled"
    reports: list[float] = []

    async def main(client):
        async with anyio.create_task_group() as group:

            async def progress(value, total, message) -> None:
                reports.append(value)
                if len(reports) == 3:
                    group.cancel_scope.cancel()  # the client sends notifications/cancelled

            async def call() -> None:
                await client.call_tool("slow", {"path": str(flag)}, progress_callback=progress)
                pytest.fail("the call should have been cancelled")

            group.start_soon(call)
        assert await anyio.to_thread.run_sync(wait_until, flag.exists)
        assert text_of(await client.call_tool("text", {"unit": "after"})) == "after"

    shared.run(main)
    assert reports == [1.0, 2.0, 3.0]


def test_progress_of_a_resource_read_and_a_prompt_goes_through(shared):
    """Progress is relayed for any request the client asks it of, not only tools/call."""
    async def main(client):
        for request, result_type, message in (
                (types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri="test://hello")),
                 types.ReadResourceResult, "reading"),
                (types.GetPromptRequest(params=types.GetPromptRequestParams(name="greet")),
                 types.GetPromptResult, "prompting")):
            reports: list = []

            async def progress(value, total, said) -> None:
                reports.append((value, total, said))

            await client.session.send_request(request, result_type, progress_callback=progress)
            with anyio.fail_after(10):
                while not reports:
                    await anyio.sleep(0.01)
            assert reports == [(1.0, 2.0, message)], request.method

    shared.run(main)


def test_in_the_2026_era_requests_are_input_required_rounds_and_a_crash_is_an_error(tmp_path, subprocess_env):
    recorded = Recorded()
    flag = tmp_path / "cancelled"
    reports: list[float] = []

    async def main():
        # The SDK client's default mode: the 2026 protocol's discover, where a server sends no requests.
        async with wrapped(tmp_path, subprocess_env, mode="auto", **recorded.callbacks()) as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            assert text_of(await client.call_tool("sample", {"prompt": "the answer?"})) == "sampled: forty-two"
            assert text_of(await client.call_tool("elicit", {})) == "elicited: accept {'name': 'Ada'}"
            assert text_of(await client.call_tool("roots", {})) == "roots: file:///tmp/root-a"
            assert text_of(await client.call_tool("ping", {})) == "pinged"
            session = client.session
            first = await session.call_tool("sample", {"prompt": "again"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and len(first.input_requests) == 1
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await session.call_tool("sample", {}, request_state="forged", input_responses={},
                                        allow_input_required=True)
            async with anyio.create_task_group() as group:  # cancelling a call cancels the upstream's

                async def progress(value, total, message) -> None:
                    reports.append(value)
                    if len(reports) == 3:
                        group.cancel_scope.cancel()

                async def call() -> None:
                    await client.call_tool("slow", {"path": str(flag)}, progress_callback=progress)
                    pytest.fail("the call should have been cancelled")

                group.start_soon(call)
            assert await anyio.to_thread.run_sync(wait_until, flag.exists) and reports == [1.0, 2.0, 3.0]
            result = await client.call_tool("text", {"unit": "m", "count": 20000})
            (link,) = links_of(result)
            assert await page_all(client, link.uri) == b"m" * 20000
            said = {"content": [annotated("n" * 9000, {"audience": ["assistant"]}, {"k": 1})], "meta": {"t": 1}}
            kept = await client.call_tool("verbatim", said)  # the text blocks' annotations in this era too
            assert dumped(kept)[0]["annotations"] == {"audience": ["assistant"]} and kept.content[0].meta == {"k": 1}
            assert kept.meta["t"] == 1 and kept.content[1].annotations.audience == ["assistant"]

            group = int(text_of(await client.call_tool("pid", {})).split()[1])
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "\n" not in text_of(crashed)
            assert "exited with code 7" in text_of(crashed) and "upstream crashing now" in text_of(crashed)
            later = await client.call_tool("text", {"unit": "x"})
            assert later.is_error and "is gone" in text_of(later) and "exited with code 7" in text_of(later)
            assert "Unknown" not in text_of(later)
            stored = await client.call_tool("read", {"resource": link.uri})
            assert not stored.is_error and text_of(stored).startswith("m" * LIMIT + "\n")  # overspill's own tools still answer
            return group

    group = anyio.run(main)
    assert wait_until(lambda: not alive_in_group(group))


@pytest.mark.parametrize(("mode", "wait", "fragments"), [
    ("silent", "1", ["did not answer initialize within 1 seconds", "(is it an MCP server speaking over stdio?)"]),
    ("die", "20", ["exited with code 5", "cannot start: no configuration"]),
])
def test_an_upstream_that_never_serves_is_a_clear_error(tmp_path, subprocess_env, mode, wait, fragments):
    token = f"token-{time.time_ns()}"

    async def main():
        with pytest.raises(BaseException) as caught:  # the SDK's client raises it inside an exception group
            async with wrapped(tmp_path, subprocess_env, mode, token, options=("--init-timeout", wait)):
                pass
        error = caught.value
        while getattr(error, "exceptions", None):  # an exception group (a built-in from 3.11)
            error = error.exceptions[0]
        assert isinstance(error, MCPError)
        return error.message

    started = time.monotonic()
    message = anyio.run(main)
    assert all(fragment in message for fragment in fragments), message
    assert time.monotonic() - started < 60  # bounded (a liveness bound, far above the 1 s asked for)
    assert wait_until(lambda: not running_with(token))


def test_an_upstream_tool_taking_our_name_later_is_not_listed(tmp_path, subprocess_env):
    # The wrapper names its tools when it starts (the instructions say them); an upstream read and grep
    # that appear after that could never be called through it: a call named read reaches overspill's.
    async def main():
        async with wrapped(tmp_path, subprocess_env, "latecollide") as client:
            assert "read (resource, offset)" in client.instructions
            for _ in range(2):
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names.count("read") == 1 and names.count("grep") == 1, names
                assert names[-2:] == ["read", "grep"] and "overspill_read" not in names
            result = await client.call_tool("text", {"unit": "q", "count": 30000})
            assert await page_all(client, result.structured_content["uri"], "read") == b"q" * 30000

    anyio.run(main)


def test_collisions_garbage_no_resource_link_a_token_bound_and_no_capabilities(tmp_path, subprocess_env):
    async def main():
        # No sampling, elicitation or roots; an upstream with its own read and grep that writes garbage first.
        async with wrapped(tmp_path, subprocess_env, "collide,garbage", mode="auto",
                           options=("--no-resource-link", "--max-tokens", "200")) as client:
            assert client.server_info.name == "test-upstream"
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[-4:] == ["read", "grep", "overspill_read", "overspill_grep"]
            assert "overspill_read (resource, offset)" in client.instructions and "200 tokens" in client.instructions
            ours = await client.call_tool("read", {"unit": "upstream's own read"})
            assert text_of(ours) == "upstream's own read"  # the upstream's tool, unchanged
            result = await client.call_tool("text", {"unit": "q", "count": 30000})
            assert not links_of(result) and result.structured_content["uri"] in text_of(result)
            assert await page_all(client, result.structured_content["uri"], "overspill_read") == b"q" * 30000
            refused = await client.call_tool("overspill_grep", {"pattern": "q"})
            assert refused.is_error and "overspill_grep needs the argument 'resource'" in text_of(refused)
            with pytest.raises(MCPError, match="Sampling not supported"):  # the upstream's own error, passed on
                await client.call_tool("sample", {})

            # Within the bytes and lines, over 200 tokens: bounded all the same; a short text is not.
            words = " ".join(f"w{n}" for n in range(600))
            tokens = await client.call_tool("text", {"unit": words})
            uri = tokens.structured_content["uri"]
            assert len(words) < LIMIT and uri in text_of(tokens) and text_of(tokens) != words
            assert await page_all(client, uri, "overspill_read") == words.encode()
            short = await client.call_tool("text", {"unit": "a few words"})
            assert text_of(short) == "a few words" and short.structured_content is None

    anyio.run(main)


def test_our_tools_take_a_name_no_upstream_tool_has(tmp_path, subprocess_env):
    """An upstream with read and overspill_read (grep and overspill_grep): all four are listed and reach
    the upstream; overspill's are overspill_read_2 and overspill_grep_2, named in the instructions."""
    async def main():
        async with wrapped(tmp_path, subprocess_env, "overcollide") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[-6:] == ["read", "grep", "overspill_read", "overspill_grep", "overspill_read_2",
                                  "overspill_grep_2"]
            assert "overspill_read_2 (resource, offset)" in client.instructions
            for name in ("read", "grep", "overspill_read", "overspill_grep"):
                assert text_of(await client.call_tool(name, {"unit": f"upstream's {name}"})) == f"upstream's {name}"
            result = await client.call_tool("text", {"unit": "q", "count": 30000})
            (link,) = links_of(result)
            assert await page_all(client, link.uri, "overspill_read_2") == b"q" * 30000
            found = await client.call_tool("overspill_grep_2", {"pattern": "q+", "resource": link.uri})
            assert not found.is_error

    anyio.run(main)


def test_an_upstream_with_no_tools_is_served(tmp_path, subprocess_env):
    # A server of resources and prompts only declares no tools capability: the wrapper once asked it for
    # tools/list at initialize, took its "Method not found" for the upstream being gone, and served nothing.
    async def main():
        for mode in ("legacy", "auto"):
            async with wrapped(tmp_path, subprocess_env, "notools", mode=mode) as client:
                assert client.server_info.name == "test-upstream"
                assert [tool.name for tool in (await client.list_tools()).tools] == ["read", "grep"]
                assert [str(resource.uri) for resource in (await client.list_resources()).resources] == ["test://hello"]
                read = await client.read_resource("test://hello")
                assert read.contents[0].text == "hello there"
                assert [prompt.name for prompt in (await client.list_prompts()).prompts] == ["greet"]
                refused = await client.call_tool("read", {})
                assert refused.is_error and "needs the argument 'resource'" in text_of(refused)

    anyio.run(main)


def test_fifty_megabytes_and_a_session_across_processes(tmp_path, subprocess_env, implementation):
    if implementation != IMPLEMENTATIONS[-1]:
        pytest.skip("the 50 MB case runs once a run (with the last implementation): its size is the point")
    unit = "0123456789abcdef" * 4 + "\n"  # 65 bytes
    count = 50 * 1024 * 1024 // len(unit) + 1

    async def main():
        async with wrapped(tmp_path, subprocess_env, options=("--session", "kept")) as client:
            result = await client.call_tool("text", {"unit": unit, "count": count})
            assert len(text_of(result).encode()) < LIMIT + 400
            return links_of(result)[0].uri, result.structured_content

    uri, structured = anyio.run(main)
    assert structured["size"] == len(unit) * count > 50 * 1024 * 1024
    done = subprocess.run([overspill_script(), "read", uri, "--all", "--session", "kept", "--data-dir",
                           str(tmp_path / "data")], capture_output=True, env=subprocess_env, timeout=120)
    assert done.returncode == 0 and done.stdout == (unit * count).encode()

    async def again():  # another wrapper process, the same session: the URI still reads
        async with wrapped(tmp_path, subprocess_env, options=("--session", "kept")) as client:
            last = await client.call_tool("read", {"resource": uri, "offset": structured["size"] - 65})
            assert text_of(last) == unit

    anyio.run(again)


# ------------------------------------------------------------------ over streamable HTTP
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_wrap_url_over_streamable_http(tmp_path, subprocess_env):
    port = free_port()
    server = subprocess.Popen([sys.executable, UPSTREAM, "http", str(port)], env=subprocess_env,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0)
        args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap-url", f"http://127.0.0.1:{port}/mcp",
                "--header", "X-Test: sent by overspill"]

        async def main():
            parameters = StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env)
            async with Client(parameters, mode="legacy") as client:
                assert client.server_info.name == "test-upstream"
                assert text_of(await client.call_tool("headers", {})) == "sent by overspill"
                small = await client.call_tool("text", {"unit": "small"})
                assert text_of(small) == "small" and small.structured_content is None
                result = await client.call_tool("text", {"unit": "h", "count": 40000})
                (link,) = links_of(result)
                assert await page_all(client, link.uri) == b"h" * 40000
                # Regression: a result of more than the SDK's default 1 MiB for one server-sent
                # event failed, and the upstream was then taken for gone.
                result = await client.call_tool("text", {"unit": "line of an HTTP upstream\n", "count": 100_000})
                assert not result.is_error, text_of(result)
                (link,) = links_of(result)
                assert await page_all(client, link.uri) == b"line of an HTTP upstream\n" * 100_000
                assert text_of(await client.call_tool("text", {"unit": "after"})) == "after"

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)


# ------------------------------------------------------------------ the library
def test_wrap_takes_a_client_session(tmp_path, subprocess_env):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from overspill import ToolOutputStore
    from overspill.mcp_server import limits_config
    from overspill.mcp_wrap import Relay, wrap

    async def main():
        relay = Relay()
        parameters = StdioServerParameters(command=sys.executable, args=[UPSTREAM], env=subprocess_env)
        with ToolOutputStore(tmp_path / "data", durable=False, config=limits_config(environ={})) as store:
            async with stdio_client(parameters) as (read, write):
                async with ClientSession(read, write, **relay.callbacks(None)) as session:
                    await session.initialize()
                    server = wrap(session, store, "host-session", relay=relay)
                    async with Client(server, mode="legacy") as client:
                        assert client.server_info.name == "test-upstream" and "host-session" in client.instructions
                        result = await client.call_tool("text", {"unit": "w", "count": 9000})
                        (link,) = links_of(result)
                        assert await page_with_read(client, link.uri) == b"w" * 9000
                        assert text_of(await client.call_tool("text", {"unit": "tiny"})) == "tiny"
        with pytest.raises(TypeError):
            wrap(object(), store)  # type: ignore[arg-type]

    anyio.run(main)


# ------------------------------------------------------------------ real servers from PyPI
def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"})


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    git(repo, "init", "-q", "-b", "main")
    big = repo / "big.txt"
    for number in range(120):
        big.write_text("".join(f"line {n} of version {number}\n" for n in range(number * 30)))
        git(repo, "add", "big.txt")
        git(repo, "commit", "-q", "-m", f"commit number {number}: " + "words " * 20)
    big.write_text("".join(f"changed line {n}\n" for n in range(6000)))  # a large unstaged diff
    return repo


def test_mcp_server_git_results_are_bounded_and_page_back_exactly(tmp_path, subprocess_env, repository):
    command = [sys.executable, "-m", "mcp_server_git", "--repository", str(repository)]
    calls = [("git_log", {"repo_path": str(repository), "max_count": 120}),
             ("git_diff_unstaged", {"repo_path": str(repository)}),
             ("git_show", {"repo_path": str(repository), "revision": "HEAD"})]

    async def main():
        async with direct(command, subprocess_env) as upstream:
            expected = [text_of(await upstream.call_tool(name, arguments)) for name, arguments in calls]
            direct_tools = (await upstream.list_tools()).tools
        parameters = StdioServerParameters(command=overspill_script(), env=subprocess_env, args=[
            "mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", *command])
        async with Client(parameters) as client:  # the SDK client's default mode (the 2026 era)
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == [tool.name for tool in direct_tools] + ["read", "grep"]
            assert [(tool.description, tool.input_schema) for tool in tools[:-2]] == [
                (tool.description, tool.input_schema) for tool in direct_tools]
            for (name, arguments), whole in zip(calls, expected):
                assert len(whole.encode()) > LIMIT, name
                result = await client.call_tool(name, arguments)
                (link,) = links_of(result)
                assert len(text_of(result).encode()) < LIMIT + 400, name
                assert await page_all(client, link.uri) == whole.encode(), name
            status = await client.call_tool("git_status", {"repo_path": str(repository)})
            assert "big.txt" in text_of(status) and not links_of(status)

    anyio.run(main)


def test_mcp_server_fetch_of_a_page_on_loopback(tmp_path, subprocess_env):
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.txt").write_text("".join(f"paragraph {n}: some text of the page\n" for n in range(3000)))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    command = [sys.executable, "-m", "mcp_server_fetch", "--allow-private-ips", "--ignore-robots-txt"]
    arguments = {"url": f"http://127.0.0.1:{httpd.server_address[1]}/page.txt", "max_length": 999999}

    async def main():
        async with direct(command, subprocess_env) as upstream:
            whole = text_of(await upstream.call_tool("fetch", arguments))
        parameters = StdioServerParameters(command=overspill_script(), env=subprocess_env, args=[
            "mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", *command])
        async with Client(parameters, mode="legacy") as client:
            result = await client.call_tool("fetch", arguments)
            (link,) = links_of(result)
            assert "paragraph 2999" in whole and await page_all(client, link.uri) == whole.encode()

    try:
        anyio.run(main)
    finally:
        httpd.shutdown()
        httpd.server_close()


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize(("arguments", "fragment"), [
    (["--wrap"], "needs the server's command"),
    (["--wrap-url", "http://127.0.0.1:9/mcp", "--wrap", "--", "x"], "not both"),
    (["--header", "X: y"], "--header goes with --wrap-url"),
    (["--wrap-url", "http://127.0.0.1:9/mcp", "--header", "no colon"], "Name: value"),
    (["--wrap-url", "ftp://host/mcp"], "http:// or https://"),
    (["--no-resource-link"], "goes with --wrap"),
    (["--", "python"], "follows --wrap"),
])
def test_cli_usage_errors(subprocess_env, arguments, fragment):
    done = subprocess.run([overspill_script(), "mcp", *arguments], capture_output=True, text=True,
                          env=subprocess_env, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and fragment in done.stderr and done.stderr.count("\n") == 1, done.stderr


# ------------------------------------------------------------------ regressions (red team 4)
RAW_UPSTREAM = str(Path(__file__).with_name("raw_mcp_upstream.py"))


def raw_wrapped(tmp_path: Path, env: dict[str, str], mode: str, **client: object) -> Client:
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, RAW_UPSTREAM, mode]
    return Client(StdioServerParameters(command=overspill_script(), args=args, env=env), mode="legacy",
                  **client)  # type: ignore[arg-type]


def test_what_the_upstream_sends_that_cannot_be_passed_on_never_ends_the_wrapper(tmp_path, subprocess_env):
    # A lone surrogate escape (JSON.stringify of a string cut inside an emoji) parsed, then killed the
    # wrapper when written on; JSON nested past the parser's depth killed the upstream's reader.
    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "plain") as client:
            for size in (10, 3 * LIMIT):  # passed through, and bounded
                result = await client.call_tool("cut", {"size": size})
                assert not result.is_error
                text = text_of(result) if size == 10 else (await page_all(
                    client, result.structured_content["uri"])).decode()
                assert text == "cut emoji: \ufffd " + "x" * size + " and a whole one: \U0001f600"
            with pytest.raises(MCPError, match="answer cannot be read: maximum recursion depth"):
                await client.call_tool("deep", {})
            assert text_of(await client.call_tool("echo", {})) == "ok"  # the wrapper and the upstream live on

    anyio.run(main)


def test_an_upstream_whose_tools_the_sdk_refuses_is_a_clear_error(tmp_path, subprocess_env):
    # The SDK refused the upstream's tools/list while the wrapper initialized it: initialize succeeded
    # all the same, and every later request said the upstream "exited with code 0".
    async def main():
        with pytest.raises(BaseException) as caught:
            async with raw_wrapped(tmp_path, subprocess_env, "badlist"):
                pass
        error = caught.value
        while getattr(error, "exceptions", None):
            error = error.exceptions[0]
        assert isinstance(error, MCPError)
        return error.message

    message = anyio.run(main)
    assert "answered initialize with what the MCP SDK cannot take" in message and "outputSchema" in message
    assert "exited with code 0" not in message


def test_the_tasks_capability_is_not_passed_on(tmp_path, subprocess_env):
    # The upstream's tasks capability was passed on, but tasks/* are not forwarded: a task-augmented
    # tools/call failed with a validation error, tasks/get with "Method not found".
    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "tasks") as client:
            capabilities = client.server_capabilities
            assert capabilities.tools is not None and capabilities.tasks is None
            assert text_of(await client.call_tool("echo", {})) == "ok"

    anyio.run(main)


def test_the_upstream_is_told_the_clients_name(tmp_path, subprocess_env):
    # The upstream was told the SDK's default name ({"name": "mcp", "version": "0.1.0"}), not the
    # client's: a server that adapts to its client could not.
    async def main():
        named = types.Implementation(name="claude-code", version="2.1.0")
        async with raw_wrapped(tmp_path, subprocess_env, "plain", client_info=named) as client:
            told = json.loads(text_of(await client.call_tool("client", {})))
            assert told == {"name": "claude-code", "version": "2.1.0"}

    anyio.run(main)


def test_fields_the_sdk_does_not_know_pass_through(tmp_path, subprocess_env):
    """A vendor's (or a later revision's) fields in tools, results, content blocks and resources reach
    the client as the upstream sent them, in a bounded result too (the SDK's types dropped them)."""
    raw = TypeAdapter(dict)

    async def answers(client) -> dict:
        session = client.session
        listed = await session.send_request(types.ListToolsRequest(), raw)
        call = types.CallToolRequest(params=types.CallToolRequestParams(name="extras", arguments={"size": 10}))
        resources = await session.send_request(types.ListResourcesRequest(), raw)
        read = types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri="raw://x"))
        return {"tool": [tool for tool in listed["tools"] if tool["name"] == "echo"],
                "call": await session.send_request(call, raw),
                "resource": [resource for resource in resources["resources"] if resource["uri"] == "raw://x"],
                "read": await session.send_request(read, raw)}

    async def main():
        async with direct([sys.executable, RAW_UPSTREAM, "extras"], subprocess_env) as upstream:
            expected = await answers(upstream)
        assert expected["tool"][0]["x-cost"] == 3 and expected["call"]["x-top"] == {"a": 1}
        async with raw_wrapped(tmp_path, subprocess_env, "extras") as client:
            assert await answers(client) == expected
            call = types.CallToolRequest(params=types.CallToolRequestParams(name="extras",
                                                                            arguments={"size": 3 * LIMIT}))
            bounded = await client.session.send_request(call, raw)
            assert bounded["x-top"] == {"a": 1} and "uri" in bounded["structuredContent"]
            assert [block["type"] for block in bounded["content"]] == ["text", "resource_link", "image"]
            assert bounded["content"][2]["x-vendor"] == 2

    anyio.run(main)


# ------------------------------------------------------------------ regressions (red team D: the handshake)
@contextlib.asynccontextmanager
async def handshaken(tmp_path: Path, env: dict[str, str], mode: str, version: str, capabilities: dict):
    """The SDK's ``ClientSession`` to the wrapped raw upstream, initialized by hand (the SDK's own
    ``initialize`` always offers its newest version and the capabilities its callbacks imply): offering
    ``version`` and declaring ``capabilities`` as given.  Yields the session and the answer it was given."""
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, RAW_UPSTREAM, mode]
    async with stdio_client(StdioServerParameters(command=overspill_script(), args=args, env=env)) as (read, write):
        async with ClientSession(read, write) as session:
            answer = await session.send_request(types.InitializeRequest(params=types.InitializeRequestParams(
                protocol_version=version, capabilities=types.ClientCapabilities.model_validate(capabilities),
                client_info=types.Implementation(name="by-hand", version="1"))), types.InitializeResult)
            session.adopt(answer)
            await session.send_notification(types.InitializedNotification())
            yield session, answer


def test_the_protocol_version_is_the_clients_offer_and_the_upstreams_answer(tmp_path, subprocess_env):
    # The upstream was offered the SDK's newest version (2025-11-25) whatever the client asked, and the
    # client was told the version the wrapper's SDK picked (the one it asked for), not the upstream's.
    async def told(mode: str, version: str) -> tuple[str, str]:
        async with handshaken(tmp_path, subprocess_env, mode, version, {}) as (session, answer):
            offered = json.loads(text_of(await session.call_tool("init", {})))["protocolVersion"]
            assert text_of(await session.call_tool("echo", {})) == "ok"  # the wrapper speaks what it said
            return offered, answer.protocol_version

    async def main():
        for version in ("2024-11-05", "2025-06-18"):
            assert await told("plain", version) == (version, version)
        # An upstream that speaks only 2024-11-05: the client asking 2025-11-25 is told so, as it would be direct.
        assert await told("old", "2025-11-25") == ("2025-11-25", "2024-11-05")
        # A version the wrapper's SDK does not speak is answered with its newest, as the SDK's server would.
        assert await told("plain", "1999-01-01") == (LATEST_HANDSHAKE_VERSION, LATEST_HANDSHAKE_VERSION)
        # An upstream answering a version the wrapper's SDK cannot speak: initialize fails, naming it.
        with pytest.raises(BaseException) as caught:
            await told("future", "2025-06-18")
        error = caught.value
        while getattr(error, "exceptions", None):
            error = error.exceptions[0]
        assert isinstance(error, MCPError)
        assert "Unsupported protocol version from the server: 2099-01-01" in error.message

    anyio.run(main)


def test_a_content_block_of_an_unknown_type_is_a_short_error(tmp_path, subprocess_env):
    """The SDK refuses a block of a type no MCP revision has (it cannot be passed on): the call says so in
    one short line, not pydantic's report of every content type's misfit (about 3 KB)."""
    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "extras") as client:
            result = await client.call_tool("widget", {})
            assert result.is_error and len(text_of(result)) < 400, text_of(result)
            assert "not a CallToolResult the MCP SDK takes" in text_of(result)
            assert "content.0 is {'type': 'widget'" in text_of(result)
            assert text_of(await client.call_tool("echo", {})) == "ok"

    anyio.run(main)


def test_the_upstream_is_offered_exactly_the_capabilities_the_client_declared(tmp_path, subprocess_env):
    # The SDK's session declared its own defaults for what the client declared: elicitation form-only came
    # out as form and url, roots without listChanged with it; experimental and extensions were dropped.
    declared = {"elicitation": {"form": {}}, "roots": {"listChanged": False}, "sampling": {"tools": {}},
                "experimental": {"example.com/feature": {"on": True}},
                "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}}
    tasks = {"tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}}}

    async def main():
        for capabilities, expected in (
                (declared, declared), ({"elicitation": {}}, {"elicitation": {}}), ({}, {}),
                ({**declared, **tasks}, declared)):  # task-augmented requests are not relayed: not offered
            async with handshaken(tmp_path, subprocess_env, "plain", "2025-06-18", capabilities) as (session, _):
                assert json.loads(text_of(await session.call_tool("init", {})))["capabilities"] == expected

    anyio.run(main)


def test_an_upstream_asking_the_client_while_listing_its_tools_does_not_hold_up_initialize(tmp_path,
                                                                                         subprocess_env):
    # The wrapper listed the upstream's tools inside the client's initialize; an upstream asking roots/list
    # meanwhile waited for the client, which answers only once initialize is answered: initialize failed
    # after --init-timeout with "did not answer initialize".
    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/root-a")])

    async def main():
        args = ["mcp", "--data-dir", str(tmp_path / "data"), "--init-timeout", "20", "--wrap", "--",
                sys.executable, RAW_UPSTREAM, "roots"]
        for mode in ("legacy", "auto"):
            started = time.monotonic()
            async with Client(StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env),
                              mode=mode, list_roots_callback=roots) as client:
                assert time.monotonic() - started < 15  # answered at once, not at the timeout
                # Its tools were not known when initialize was answered: overspill's avoid read and grep.
                assert "overspill_read (resource, offset)" in client.instructions
                names = [tool.name for tool in (await client.list_tools()).tools]
                # The upstream speaks only the handshake era: a client in "auto" falls back to it, as it does
                # directly, and has the roots to give while the tools are listed.
                assert client.protocol_version == LATEST_HANDSHAKE_VERSION
                assert names == ["list_root-a", "read", "overspill_read", "overspill_grep"]
                assert text_of(await client.call_tool("read", {})) == "ok"  # the upstream's own read
                seen = json.loads(text_of(await client.call_tool("seen", {})))
                # Nothing reached it while it waited for the client (the client's first tools/list shared
                # the wrapper's), and it was asked for its tools no more than the client asked.
                assert seen["while_waiting"] == [] and seen["methods"].count("tools/list") <= 2, seen

    anyio.run(main)


def _marker_calls(result) -> str:
    """The bounded result's ``next:`` line (the marker's calls)."""
    (line,) = [line for line in text_of(result).splitlines() if line.startswith("next: ")]
    return line


def _calls_named(uri: str, offset: int, read: str = "read", grep: str = "grep") -> str:
    """The store's marker line (``next_calls``) with its two tools called ``read`` and ``grep``."""
    from overspill.text import next_calls

    default = next_calls(uri, offset)
    assert default.startswith("next: read(") and default.count(" or grep(") == 1
    return default.replace("next: read(", f"next: {read}(", 1).replace(" or grep(", f" or {grep}(", 1)


def test_the_marker_and_the_link_name_the_tools_the_wrapper_serves(tmp_path, subprocess_env):
    """Regression (red team D, f03): over an upstream with its own read, overspill's pager is served as
    overspill_read, yet the marker said ``next: read(resource=..., offset=N)`` (the upstream's read,
    with arguments it does not take) and the resource_link "page through it with read"."""
    async def through_the_cli():
        async with wrapped(tmp_path, subprocess_env, "overcollide") as client:
            result = await client.call_tool("text", {"unit": "q\n", "count": 30000})
            (link,) = links_of(result)
            offset = result.structured_content["next_offset"]
            expected = _calls_named(link.uri, offset, "overspill_read_2", "overspill_grep_2")
            assert _marker_calls(result) == expected and expected.startswith("next: overspill_read_2(")
            assert expected in result.structured_content["text"]
            assert "page through it with overspill_read_2 (" in link.description
            page = await client.call_tool("overspill_read_2", {"resource": link.uri, "offset": offset})
            assert not page.is_error and text_of(page).startswith("q\nq\n")
            # overspill's own grep, its listing over the limits: its marker names the same tools.
            found = await client.call_tool("overspill_grep_2", {"pattern": "q", "resource": link.uri,
                                                                "max_matches": 1000})
            (listing,) = links_of(found)
            assert _marker_calls(found) == _calls_named(listing.uri, found.structured_content["next_offset"],
                                                        "overspill_read_2", "overspill_grep_2")

    anyio.run(through_the_cli)

    from mcp.server.mcpserver import MCPServer
    from mcp.shared.memory import create_client_server_memory_streams

    from overspill import ToolOutputStore
    from overspill.mcp_server import limits_config
    from overspill.mcp_wrap import Relay, wrap

    def upstream(with_read: bool) -> MCPServer:
        served = MCPServer("up")

        @served.tool()
        def big(n: int) -> str:
            return "".join(f"row {i}\n" for i in range(n))

        if with_read:
            @served.tool()
            def read(path: str) -> str:
                return "the upstream's own read of " + path
        return served

    async def through_the_library(with_read: bool, data: Path):
        config = {"tool_output": {**limits_config(environ={})["tool_output"], "views": []}}
        with ToolOutputStore(data, durable=False, config=config) as store:
            async with create_client_server_memory_streams() as ((c_r, c_w), (s_r, s_w)):
                async with anyio.create_task_group() as group:
                    low = upstream(with_read)._lowlevel_server
                    group.start_soon(lambda: low.run(s_r, s_w, low.create_initialization_options()))
                    relay = Relay()
                    async with ClientSession(c_r, c_w, **relay.callbacks(None)) as session:
                        await session.initialize()
                        async with Client(wrap(session, store, "s", relay=relay), mode="legacy") as client:
                            result = await client.call_tool("big", {"n": 5000})
                            (link,) = links_of(result)
                            # (The tool declares an outputSchema: structuredContent is its shape.)
                            offset = int(_marker_calls(result).split("offset=", 1)[1].split(")", 1)[0])
                            pager = "overspill_read" if with_read else "read"
                            # Under the default names, the marker is byte for byte the store's own.
                            assert _marker_calls(result) == _calls_named(link.uri, offset, pager)
                            assert f"page through it with {pager} (" in link.description
                            follow = await client.call_tool(pager, {"resource": link.uri, "offset": offset})
                            assert not follow.is_error and text_of(follow).startswith("row ")
                    group.cancel_scope.cancel()

    anyio.run(through_the_library, True, tmp_path / "with-read")
    anyio.run(through_the_library, False, tmp_path / "without")


def test_a_crash_is_an_error_though_a_child_of_the_upstream_holds_its_stdout(tmp_path, subprocess_env):
    # Only EOF on the upstream's stdout ended the connection: an upstream that exited mid-call while a
    # process it started (a worker) still held its stdout was never seen to go, and the call (and every
    # later one) waited for ever.
    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "plain") as client:
            group = int(text_of(await client.call_tool("pid", {})).split()[1])
            with anyio.fail_after(120):  # a liveness bound: the defect waited for ever
                crashed = await client.call_tool("crash", {})
                later = await client.call_tool("echo", {})
            assert crashed.is_error and "\n" not in text_of(crashed)
            assert "exited with code 7" in text_of(crashed) and "upstream crashing now" in text_of(crashed)
            assert later.is_error and "is gone" in text_of(later) and "exited with code 7" in text_of(later)
            assert alive_in_group(group)  # the helper still runs, until the client goes away
            return group

    group = anyio.run(main)
    assert wait_until(lambda: not alive_in_group(group))


# ------------------------------------------------------------------ regressions (red team B7)
def test_an_unreadable_answer_written_result_first_fails_its_call(tmp_path, subprocess_env):
    # The id of an answer that cannot be read was looked for only at the line's start, after "jsonrpc":
    # an upstream writing {"result": ..., "jsonrpc": "2.0", "id": N} (the TypeScript SDK) left the call
    # waiting for ever.  Its id is now read at either end, never from inside the result.
    from overspill.mcp_upstream import _parse

    deep = "[" * 3000 + "]" * 3000
    for line, expected in (
            ('{"result": {"d": ' + deep + ', "id": 99}, "jsonrpc": "2.0", "id": 7}', 7),
            ('{"result":{"d":' + deep + '},"jsonrpc":"2.0","id":"a-b"}', "a-b"),
            ('{"id": 5, "result": ' + deep + ', "jsonrpc": "2.0"}', 5),
            ('{"jsonrpc": "2.0", "id": 6, "result": ' + deep + '}', 6),
            ('{"error": {"code": 1, "message": "m", "data": ' + deep + '}, "jsonrpc": "2.0", "id": 4}', 4),
            ('{"result": 5, "jsonrpc": "2.0", "id": 3}', 3),  # parsed, but not a valid result
            ('{"result": {"d": ' + deep + ', "id": 99}, "jsonrpc": "2.0"}', None),  # only the result's own id
            ('{"result": {"id": 99, "d": ' + deep + '}, "jsonrpc": "2.0"}', None),
            ('{"params": {"d": ' + deep + '}, "method": "m", "jsonrpc": "2.0", "id": 8}', None)):  # a request
        parsed = _parse(line)
        if expected is None:
            assert isinstance(parsed, ValueError), line[:40]
        else:
            assert isinstance(parsed.message, types.JSONRPCError) and parsed.message.id == expected, line[:40]
            assert "answer cannot be read" in parsed.message.error.message

    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "tsorder") as client:
            with anyio.fail_after(60):
                with pytest.raises(MCPError, match="answer cannot be read: maximum recursion depth"):
                    await client.call_tool("deep", {})
                assert text_of(await client.call_tool("echo", {})) == "ok"

    anyio.run(main)


def test_the_upstream_is_told_the_name_a_2026_client_gives(tmp_path, subprocess_env):
    # A 2026-era client (the SDK's default mode discovers, or one pinned to the version) has no initialize:
    # its name travels in each request's _meta envelope, and the upstream was told the SDK's default
    # {"name": "mcp", "version": "0.1.0"} instead.
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, RAW_UPSTREAM, "plain"]
    named = types.Implementation(name="my-client", version="7.1")

    async def main():
        for mode in ("auto", MODERN_PROTOCOL_VERSIONS[-1]):
            async with Client(StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env),
                              mode=mode, client_info=named) as client:
                with anyio.fail_after(60):
                    told = json.loads(text_of(await client.call_tool("init", {})))["clientInfo"]
                assert told == {"name": "my-client", "version": "7.1"}, mode

    anyio.run(main)


def test_a_2026_client_pinning_its_version_gets_the_upstreams_requests_and_notifications(tmp_path,
                                                                                         subprocess_env):
    # A 2026-era client that pins its version sends no server/discover (nor notifications/initialized):
    # the upstream's sampling, elicitation and roots requests waited for a handshake that never came (the
    # call hung), and its notifications piled up, each a task waiting for ever.
    recorded = Recorded()

    async def main():
        async with wrapped(tmp_path, subprocess_env, mode=MODERN_PROTOCOL_VERSIONS[-1],
                           **recorded.callbacks()) as client:
            with anyio.fail_after(60):
                assert text_of(await client.call_tool("sample", {"prompt": "q"})) == "sampled: forty-two"
                assert text_of(await client.call_tool("elicit", {})) == "elicited: accept {'name': 'Ada'}"
                assert text_of(await client.call_tool("roots", {})) == "roots: file:///tmp/root-a"
                assert text_of(await client.call_tool("log", {})) == "logged"
                while not recorded.logged:
                    await anyio.sleep(0.02)
            assert recorded.logged == ["a log line"]

    anyio.run(main)

    from overspill.mcp_relay import _HELD_MOST, Relay

    class Client:  # the real client's session, as the relay sees it: what it is sent
        protocol_version = LATEST_HANDSHAKE_VERSION

        def __init__(self) -> None:
            self.sent: list = []

        async def send_notification(self, message) -> None:
            self.sent.append(message.params.data)

    async def held():
        # Before the handshake ends, notifications wait for it, in order, a bounded number of them.
        relay, client = Relay(), Client()
        async with anyio.create_task_group() as tasks:
            for number in range(_HELD_MOST + 50):
                tasks.start_soon(relay._notification, types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(level="info", data=number)))
                await anyio.sleep(0)
            await anyio.sleep(0)  # the last one started has run up to its wait
            assert relay._held == _HELD_MOST
            relay.client_ready(client)
        assert client.sent == list(range(_HELD_MOST)) and relay._held == 0

    anyio.run(held)


def test_a_client_of_a_protocol_before_resource_links_gets_none_from_the_wrapper(tmp_path, subprocess_env):
    # A bounded result carried a resource_link block (added in 2025-06-18) whatever version was agreed:
    # a 2025-03-26 or 2024-11-05 client (the SDK 1.9 line) refused the whole result.  It gets none now, from
    # the upstream's tools and overspill's own; the marker names the URI either way.
    raw = TypeAdapter(dict)
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, UPSTREAM]

    async def call(session, name: str, arguments: dict) -> dict:
        return await session.send_request(types.CallToolRequest(params=types.CallToolRequestParams(
            name=name, arguments=arguments)), raw)

    async def blocks(version: str) -> tuple[list, list]:
        parameters = StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env)
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            answer = await session.send_request(types.InitializeRequest(params=types.InitializeRequestParams(
                protocol_version=version, capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="by-hand", version="1"))), types.InitializeResult)
            assert answer.protocol_version == version
            session.adopt(answer)
            await session.send_notification(types.InitializedNotification())
            with anyio.fail_after(60):
                bounded = await call(session, "text", {"unit": "a line " * 20, "sep": "\n", "count": 2000})
                uri = bounded["structuredContent"]["uri"]
                assert uri in bounded["content"][0]["text"]
                # overspill's grep: 100 matching lines of 140 bytes, over the limits, stored
                grepped = await call(session, "grep", {"resource": uri, "pattern": "line"})
                assert grepped["structuredContent"]["uri"] in grepped["content"][0]["text"]
            return ([block["type"] for block in bounded["content"]],
                    [block["type"] for block in grepped["content"]])

    async def main():
        for version in ("2024-11-05", "2025-03-26"):
            assert await blocks(version) == (["text"], ["text"]), version
        assert await blocks("2025-06-18") == (["text", "resource_link"], ["text", "resource_link"])

    anyio.run(main)


_SDK_UPSTREAM = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("sdk-shapes")


@app.tool()
def said(unit: str, count: int) -> str:
    return unit * count


@app.tool()
def rows(count: int) -> list[dict]:
    return [{"i": index, "name": f"row {index}"} for index in range(count)]


app.run()
'''


def test_a_small_result_of_an_sdk_server_passes_through_though_its_structured_copy_is_larger(
        tmp_path, subprocess_env):
    # Red team B f01: an MCPServer tool's str (or list) within the limits also comes as structuredContent
    # {"result": ...} repeating it, whose JSON (escaped, indented) is over them; that copy was measured and
    # stored on its own, and the model got the whole text plus an ~8.4 KB preview of the copy and a link
    # (12.5 KB for 4,100 quotes).  Under the limits a result passes through as the upstream sent it.
    upstream = tmp_path / "sdk_upstream.py"
    upstream.write_text(_SDK_UPSTREAM)
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, str(upstream)]
    calls = [("said", {"unit": '"', "count": 4100}),  # JSON escaping doubles it
             ("said", {"unit": "a", "count": 8185}),  # the JSON's quotes and key add 16 bytes
             ("rows", {"count": 100})]  # 100 blocks of 4 lines: 400 lines; the JSON's indentation adds more

    async def results(client: Client) -> list:
        found = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            found.append(([block.model_dump(by_alias=True, mode="json", exclude_none=True)
                           for block in result.content], result.structured_content, result.is_error))
        return found

    async def main():
        async with direct([sys.executable, str(upstream)], subprocess_env) as client:
            expected = await results(client)
        async with Client(StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env),
                          mode="legacy") as client:
            got = await results(client)
        for (name, arguments), want, have in zip(calls, expected, got):
            shown = "\n".join(block["text"] for block in want[0])
            assert len(shown.encode()) <= LIMIT and shown.count("\n") < 400, name  # within the limits
            assert not _json_fits_limits(want[1]), name  # while the copy's JSON is not
            assert have == want, (name, arguments)

    anyio.run(main)


def _json_fits_limits(value) -> bool:
    shown = json.dumps(value, ensure_ascii=False, indent=2)
    return len(shown.encode()) <= LIMIT and shown.count("\n") < 400


class _NotImplemented(http.server.BaseHTTPRequestHandler):
    """Answers every request 501, as a proxy or a server without the streamable-HTTP transport may."""

    def _refuse(self) -> None:
        self.send_response(501)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, *args) -> None:  # not the test's stderr
        pass


def test_wrap_url_that_cannot_be_reached_says_why(tmp_path, subprocess_env):
    # Red team B f04: with nothing listening, the client was told only "could not be started: unhandled
    # errors in a TaskGroup (1 sub-exception)" (anyio's group around the transport's error); a server
    # answering 501 gave "Server returned an error response" without the status.
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotImplemented)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    async def error_of(url: str) -> str:
        args = ["mcp", "--data-dir", str(tmp_path / "data"), "--init-timeout", "20", "--wrap-url", url]
        parameters = StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env)
        with pytest.raises(BaseException) as raised:  # the client's task group may wrap the MCPError
            async with Client(parameters, mode="legacy") as client:
                await client.list_tools()
        error = raised.value
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        assert isinstance(error, MCPError), repr(error)
        return error.error.message

    async def main():
        refused = await error_of(f"http://127.0.0.1:{free_port()}/mcp")
        assert "could not be started" in refused and "ConnectionRefusedError" in refused, refused
        assert "TaskGroup" not in refused and "\n" not in refused
        unimplemented = await error_of(f"http://127.0.0.1:{httpd.server_address[1]}/mcp")
        assert "HTTP 501 Not Implemented" in unimplemented, unimplemented

    try:
        anyio.run(main)
    finally:
        httpd.shutdown()
        httpd.server_close()


def _initialize_error(args: list[str], env: dict[str, str], mode: str = "legacy") -> str:
    """The message of the MCPError the SDK's client gets entering (initializing) the wrapper run with ``args``;
    fails the test when initialize succeeds."""
    async def main() -> str:
        parameters = StdioServerParameters(command=overspill_script(), args=args, env=env)
        with pytest.raises(BaseException) as raised:  # the client's task group may wrap the MCPError
            with anyio.fail_after(120):  # a liveness bound
                async with Client(parameters, mode=mode):
                    pass
        error = raised.value
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        assert isinstance(error, MCPError), repr(error)
        return error.error.message

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_wrap_url_that_cannot_be_reached_fails_initialize_red_team_f11_f1(tmp_path, subprocess_env, mode):
    """Regression (red team F11 f1): with nothing listening at the URL, the wrapper answered ``initialize``
    with success, as overspill itself; the connection's error came only with the next request.  The
    transport's failure cancelled the start, which marked it settled before the failure was noted."""
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--init-timeout", "20",
            "--wrap-url", f"http://127.0.0.1:{free_port()}/mcp"]
    message = _initialize_error(args, subprocess_env, mode)
    assert "could not be started" in message and "ConnectionRefusedError" in message, message
    assert "\n" not in message


def test_wrap_url_that_never_answers_names_http_not_stdio_red_team_f11_f3(tmp_path, subprocess_env):
    """Regression (red team F11 f3): an HTTP upstream that accepts and never answers was said not to answer
    initialize "(is it an MCP server speaking over stdio?)", the hint for a command."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts (the backlog), never answers
        args = ["mcp", "--data-dir", str(tmp_path / "data"), "--init-timeout", "1",
                "--wrap-url", f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"]
        message = _initialize_error(args, subprocess_env)
    assert "did not answer initialize within 1 seconds" in message, message
    assert "streamable HTTP endpoint" in message and "stdio" not in message, message


@pytest.mark.parametrize("mode", ["cyclingcursor", "endlesscursor"])
def test_an_upstream_whose_tools_list_never_ends_is_served_with_what_was_learnt_red_team_f11_f2(
        tmp_path, subprocess_env, mode):
    """Regression (red team F11 f2): the wrapper followed the upstream's tools/list ``nextCursor`` for ever
    at start-up (a pagination cycling p1 -> p2 -> p1 ...: thousands of requests), then failed initialize
    with "did not answer initialize within N seconds".  It stops at a cursor given twice or after a cap of
    pages, says so on stderr, and serves what it learnt; the client's own pagination passes the cursors."""
    # The wrapper's stderr kept in a file (the client's own goes to the stderr the test process started with).
    log = tmp_path / "stderr"
    args = ["-c", f'exec "$0" "$@" 2>{shlex.quote(str(log))}', overspill_script(), "mcp", "--data-dir",
            str(tmp_path / "data"), "--init-timeout", "10", "--wrap", "--", sys.executable, RAW_UPSTREAM, mode]

    async def main():
        with anyio.fail_after(60):  # a liveness bound
            async with Client(StdioServerParameters(command="sh", args=args, env=subprocess_env),
                              mode="legacy") as client:
                learnt = json.loads(text_of(await client.call_tool("seen", {})))["methods"].count("tools/list")
                assert text_of(await client.call_tool("echo", {})) == "ok"
                first = await client.list_tools()  # the upstream's own cursor, passed through
                assert first.next_cursor == ("p2" if mode == "cyclingcursor" else "1")
                second = await client.list_tools(cursor=first.next_cursor)
                return learnt, [tool.name for tool in second.tools], second.next_cursor

    learnt, listed, after = anyio.run(main)
    if mode == "cyclingcursor":
        assert learnt == 3  # the first page, p2, p1: p2 again is not asked
        # read on page p2 was learnt: overspill's read takes the next name, listed after the upstream's read
        assert listed == ["read"] and after == "p1"
    else:
        assert 2 < learnt <= 101, learnt
        assert listed == ["page_1"] and after == "2"
    said = log.read_text()
    assert "tools/list" in said and ("a second time" if mode == "cyclingcursor" else "after 100 pages") in said, said


# ------------------------------------------------------------------ red team B f02
def test_the_upstreams_group_is_gone_when_the_sdk_client_closes_the_wrapper(tmp_path, subprocess_env):
    """Regression (red team B f02): the SDK's stdio client closes stdin, SIGTERMs 2 s later and
    SIGKILLs 2 s after that.  The wrapper stopped hearing signals once stdin closed and needed 1 s +
    2 s to reach SIGKILL of the upstream's group, so the client's SIGTERM killed it first and a
    process of that group ignoring SIGTERM ran on.  Now the group is killed before the client's
    SIGTERM (and at once on it)."""
    import signal
    import textwrap

    upstream = tmp_path / "upstream.py"
    upstream.write_text(textwrap.dedent('''
        import os, subprocess
        from mcp.server import MCPServer
        # a worker of the server's that ignores SIGTERM (as one that shuts down slowly would, for a while)
        child = subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do sleep 1; done"])
        app = MCPServer("up")
        @app.tool()
        def pids() -> str:
            return f"{os.getpid()} {child.pid}"
        app.run()
    '''))
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, str(upstream)]

    async def main():
        parameters = StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env)
        async with Client(parameters, mode="legacy") as client:
            return [int(pid) for pid in text_of(await client.call_tool("pids", {})).split()]

    leader, child = anyio.run(main)  # the SDK's own shutdown: stdin closed, SIGTERM at 2 s, SIGKILL at 4 s
    try:
        assert wait_until(lambda: not alive_in_group(leader), 20), alive_in_group(leader)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, signal.SIGKILL)


# ------------------------------------------------------------------ red team V9 f01
def test_a_handshake_era_upstream_asking_outside_a_call_reaches_an_auto_client_as_directly(tmp_path, subprocess_env):
    """Regression (red team V9 f01): the SDK client's default ``auto`` mode probes ``server/discover``
    and, with a server of the handshake era only, falls back to ``initialize``.  The wrapper answered the
    probe itself, naming 2026-07-28, so the client was told that era although the upstream answered
    2025-11-25, and the upstream's requests outside a tool call were refused ("the client speaks a protocol
    without server-to-client requests outside a tool call"): roots asked at the end of its handshake never
    came, and a tools/list during which it asked failed.  Now the probe is the upstream's to answer."""
    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/root-a")])

    async def session(command: list[str]) -> tuple[str, list[str], str, int]:
        async with Client(StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env),
                          list_roots_callback=roots) as client:  # the default mode: auto
            names = [tool.name for tool in (await client.list_tools()).tools]
            asked = text_of(await client.call_tool("roots", {}))  # those it asked at its handshake's end
            seen = json.loads(text_of(await client.call_tool("seen", {})))["methods"]
            # The upstream is asked server/discover once through the wrapper, as the client asks it directly.
            return (client.protocol_version, [name for name in names if name.startswith("list_")], asked,
                    seen.count("server/discover"))

    async def main():
        for mode in ("earlyroots", "roots"):
            upstream = [sys.executable, RAW_UPSTREAM, mode]
            wrapper = [overspill_script(), "mcp", "--data-dir", str(tmp_path / mode), "--wrap", "--", *upstream]
            alone, through = await session(upstream), await session(wrapper)
            assert alone[0] == through[0] == LATEST_HANDSHAKE_VERSION, mode
            if mode == "earlyroots":
                assert json.loads(through[2]) == ["file:///tmp/root-a"]
            else:
                assert through[1] == ["list_root-a"]
            assert through == alone and alone[3] == 1, mode

    anyio.run(main)


# ------------------------------------------------------------------ red team F10
_ERRING_UPSTREAM = r'''
import json, sys
# A server that answers tools/call "fails" and resources/read with JSON-RPC errors (not isError results):
# the message is "Traceback..." and `lines` lines, the data `rows` rows (none when 0), from the arguments
# (from the URI's "lines/rows" for a read).
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}, "resources": {}},
                  "serverInfo": {"name": "erring", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "fails", "inputSchema": {"type": "object"}}]}
    elif method in ("tools/call", "resources/read"):
        if method == "tools/call":
            lines, rows = params["arguments"]["lines"], params["arguments"]["rows"]
        else:
            lines, rows = map(int, params["uri"].rsplit("/", 2)[-2:])
        error = {"code": -32603, "message": "Traceback (most recent call last):" + "\n  File x.py, line 1, in f" * lines}
        if rows:
            error["data"] = {"rows": [{"row": n, "text": "r" * 40} for n in range(rows)]}
        if method == "tools/call" and params["arguments"].get("elicitations"):  # a URL elicitation required
            error["code"] = -32042
            error["data"] = {"elicitations": [{"mode": "url", "elicitationId": f"e{n}", "url": f"https://x.test/{n}",
                                               "message": "open " + "m" * 40} for n in range(rows)]}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}), flush=True)
        continue
    elif method == "resources/list":
        result = {"resources": []}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
'''


def _whole_error(lines: int, rows: int) -> tuple[str, object]:
    """The message and data ``_ERRING_UPSTREAM`` sends for ``lines`` and ``rows``."""
    message = "Traceback (most recent call last):" + "\n  File x.py, line 1, in f" * lines
    return message, ({"rows": [{"row": n, "text": "r" * 40} for n in range(rows)]} if rows else None)


def test_an_upstreams_jsonrpc_error_is_bounded_as_an_error_result_is_red_team_f10_f01(tmp_path, subprocess_env):
    """Regression (red team F10 f01): an upstream's JSON-RPC error (not an ``isError`` result) to a
    tools/call was re-raised as it came, so a 200 KB stack trace in its message reached the client (and
    the model) whole; resources/read, prompts and completions alike.  Now a message over the limits is
    stored in the session and shown as its preview with the marker, a ``data`` over them is stored as its
    JSON and named; the code stays, and an error within the limits passes on byte for byte."""
    upstream = tmp_path / "erring.py"
    upstream.write_text(_ERRING_UPSTREAM)
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, str(upstream)]

    async def failure(call) -> types.ErrorData:
        with pytest.raises(MCPError) as raised:
            await call
        return raised.value.error

    async def main():
        async with Client(StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env),
                          mode="legacy") as client:
            small = await failure(client.call_tool("fails", {"lines": 3, "rows": 2}))  # within: as it came
            assert (small.code, small.message, small.data) == (-32603, *_whole_error(3, 2))

            for method in ("tools/call", "resources/read"):
                call = client.call_tool("fails", {"lines": 8000, "rows": 2}) if method == "tools/call" \
                    else client.read_resource("erring://8000/2")
                big = await failure(call)
                whole, data = _whole_error(8000, 2)
                assert big.code == -32603 and big.data == data, method  # the same error, its small data as sent
                assert len(big.message.encode()) < LIMIT + 400 and "output truncated" in big.message, method
                assert big.message.startswith("Traceback (most recent call last):\n  File x.py"), method
                (uri,) = set(re.findall(r"tool-output://\w+", big.message))
                assert await page_all(client, uri) == whole.encode(), method  # stored whole, in the session

            large_data = await failure(client.call_tool("fails", {"lines": 3, "rows": 2000}))
            message, data = _whole_error(3, 2000)
            assert large_data.message == message  # within the limits: as it came
            assert set(large_data.data) == {"uri", "size", "lines", "next_offset", "text"}
            assert len(large_data.data["text"].encode()) < LIMIT + 400
            assert json.loads(await page_all(client, large_data.data["uri"])) == data

            both = await failure(client.call_tool("fails", {"lines": 8000, "rows": 2000}))
            assert "output truncated" in both.message and set(both.data) == {"uri", "size", "lines", "next_offset"}
            assert json.loads(await page_all(client, both.data["uri"])) == data

    anyio.run(main)


def test_after_the_upstream_is_gone_the_lists_give_overspills_own_entries_red_team_f10_f02(tmp_path, subprocess_env):
    """Regression (red team F10 f02): once the upstream had crashed, tools/list, resources/list and
    resources/templates/list failed ("... is gone"), so a client that lists again lost overspill's read and
    grep, the stored outputs and their template, while tools/call still served them.  Now they list those."""
    async def main():
        async with raw_wrapped(tmp_path, subprocess_env, "plain") as client:
            uri = (await client.call_tool("cut", {"size": 3 * LIMIT})).structured_content["uri"]
            with anyio.fail_after(120):  # a liveness bound
                crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "exited with code 7" in text_of(crashed)
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["read", "grep"]  # the upstream's are gone with it
            assert [str(resource.uri) for resource in (await client.list_resources()).resources] == [uri]
            templates = (await client.list_resource_templates()).resource_templates
            assert [template.uri_template for template in templates] == ["tool-output://{id}{?offset,limit}"]
            assert (await page_all(client, uri)).startswith(b"cut emoji: ")  # and read as before
            later = await client.call_tool("echo", {})
            assert later.is_error and "is gone" in text_of(later)  # its tools still fail, saying why

    anyio.run(main)


def test_a_url_elicitation_errors_data_passes_as_it_came_its_message_bounded(tmp_path, subprocess_env):
    """Regression (review R3 of d003301, noted): an upstream's URL-elicitation-required error (-32042)
    whose data was over the limits reached the client with its elicitations replaced by a stored
    output's fields, so the client could not open them.  Its data is the client's, not the model's:
    it passes as it came; an over-limit message is still bounded."""
    upstream = tmp_path / "erring.py"
    upstream.write_text(_ERRING_UPSTREAM)
    args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap", "--", sys.executable, str(upstream)]

    async def main():
        async with Client(StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env),
                          mode="legacy") as client:
            for lines in (3, 8000):
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("fails", {"lines": lines, "rows": 500, "elicitations": True})
                error = raised.value.error
                assert error.code == -32042
                assert len(json.dumps(error.data).encode()) > LIMIT  # over the limits, and as it came
                assert [item["url"] for item in error.data["elicitations"]] == [f"https://x.test/{n}" for n in range(500)]
                if lines == 8000:
                    assert "output truncated" in error.message and len(error.message.encode()) < LIMIT + 400
                else:
                    assert error.message == _whole_error(3, 0)[0]

    anyio.run(main)


# ------------------------------------------------------------------ regressions (red team F12)
async def _rpc_error(call) -> tuple[int, str]:
    """The code and message of the JSON-RPC error ``call`` (a coroutine function) raises."""
    with pytest.raises(MCPError) as raised:
        await call()
    return raised.value.code, raised.value.message


async def _answers_32000_errors_then_serves_on(client: Client) -> None:
    """The test upstream's own -32000 errors reach ``client`` as sent, to a tools/call, a resources/read and
    a prompts/get, the SDK's own words for a closed connection among them, and the upstream serves on."""
    for call, sent in ((lambda: client.call_tool("rpcerror", {}), "row 7 is locked, retry later"),
                       (lambda: client.read_resource("test://busy"), "resource busy, retry later"),
                       (lambda: client.get_prompt("busy"), "prompt store busy, retry later"),
                       # what a server that relays another (a proxy) sends when its own upstream closed
                       (lambda: client.call_tool("rpcerror", {"message": "Connection closed"}), "Connection closed")):
        assert await _rpc_error(call) == (-32000, sent)
        served = await client.call_tool("text", {"unit": "still served"})
        assert not served.is_error and text_of(served) == "still served"


def test_an_upstreams_own_32000_error_passes_on_and_it_serves_on_red_team_f12_1(tmp_path, subprocess_env):
    """Regression (red team F12, 1): an upstream's JSON-RPC error of code -32000 (the first of JSON-RPC's
    server errors, which servers send for their own: "row 7 is locked, retry later") was taken for the SDK's
    own word that the connection had closed, which has that code: the call got "closed the connection during
    this call", every later call "is gone", a resources/read -32603, while the upstream ran on.  Now such an
    error passes on as sent and the upstream serves on; a crash mid-call is still told as a closed connection."""
    async def main():
        async with wrapped(tmp_path, subprocess_env) as client:
            pid = text_of(await client.call_tool("pid", {}))
            await _answers_32000_errors_then_serves_on(client)
            assert text_of(await client.call_tool("pid", {})) == pid  # the same upstream, never restarted
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "exited with code 7" in text_of(crashed)
            assert "exited with code 7 during this call; its last stderr line: upstream crashing now; later calls " \
                   "will fail" in text_of(crashed)
            later = await client.call_tool("text", {"unit": "x"})
            assert later.is_error and "is gone" in text_of(later) and "exited with code 7" in text_of(later)

    anyio.run(main)


def test_an_http_upstreams_own_32000_error_passes_on_and_a_crash_is_still_a_close_red_team_f12_1(
        tmp_path, subprocess_env):
    """Regression (red team F12, 1), over streamable HTTP: the upstream's own -32000 errors pass on as sent and
    it serves on; when it crashes mid-call, the SDK's transport's own -32000 for the response stream that
    ended with no answer is still a closed connection (as before)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, UPSTREAM, "http", str(port)], env=subprocess_env,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0)
        url = f"http://127.0.0.1:{port}/mcp"
        args = ["mcp", "--data-dir", str(tmp_path / "data"), "--wrap-url", url]

        async def main():
            parameters = StdioServerParameters(command=overspill_script(), args=args, env=subprocess_env)
            async with Client(parameters, mode="legacy") as client:
                await _answers_32000_errors_then_serves_on(client)
                with anyio.fail_after(120):  # a liveness bound
                    crashed = await client.call_tool("crash", {})
                assert crashed.is_error, text_of(crashed)
                assert text_of(crashed).startswith(f"the upstream server at {url} closed the connection during "
                                                   "this call; later calls will fail")
                later = await client.call_tool("text", {"unit": "x"})
                assert later.is_error and "is gone" in text_of(later)

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_crash_quotes_a_long_last_stderr_line_by_its_start_and_end_around_a_note_red_team_f12_2(
        tmp_path, subprocess_env):
    """Regression (red team F12, 2): after a crash mid-call, "its last stderr line" quoted only the line's last
    300 characters (of a 4 KiB tail of stderr), cut mid-word with no note, so its start (the exception's type)
    was lost.  Now a long line keeps its start and end around the note for cut values, counted in whole
    characters (the tail could begin inside one, a U+FFFD); a short one is quoted whole."""
    # Over 4 KiB of UTF-8 (the tail once kept), with characters of two, three and four bytes.
    line = ("sqlite3.OperationalError: database is locked (数据库已锁定, verrouillée) while writing "
            + " ".join(f"/var/lib/app/db/shard-{n:04}.sqlite" for n in range(150)) + " — gave up 🦀")
    assert len(line.encode()) > 4096

    async def main():
        async with wrapped(tmp_path, subprocess_env) as client:
            with anyio.fail_after(120):  # a liveness bound
                crashed = await client.call_tool("crash", {"line": line})
            text = text_of(crashed)
            assert crashed.is_error and "exited with code 7 during this call; its last stderr line: " in text
            quoted = text.split("its last stderr line: ", 1)[1].rsplit("; later calls will fail", 1)[0]
            found = re.fullmatch(r"(.+) …\[(\d+) of (\d+) characters cut\]… (.+)", quoted)
            assert found, quoted
            start, cut, whole, end = found.group(1), int(found.group(2)), int(found.group(3)), found.group(4)
            # (a space beside the note is one with the note's own, the message being one line)
            assert whole == len(line) and whole - 2 <= len(start) + cut + len(end) <= whole
            assert line.startswith(start) and line.endswith(end) and "\ufffd" not in quoted
            assert start.startswith("sqlite3.OperationalError: database is locked (数据库已锁定")
            assert end.endswith("— gave up 🦀") and len(quoted) <= 300
            later = await client.call_tool("text", {"unit": "x"})
            assert later.is_error and quoted in text_of(later)  # the same words for the calls after

    anyio.run(main)


def test_a_long_upstream_command_is_named_by_its_start_and_end_around_a_note_red_team_n15_2(tmp_path, subprocess_env):
    """Regression (red team N15, 2): every error naming the upstream (here: it never answers initialize) gave its
    command cut bare to 120 characters, mid-quote, saying nothing of the cut.  Now a long command is named as a
    long stderr line is quoted: its start and end around the note for cut values."""
    token = f"token-{time.time_ns()}"
    argument = f"{token} it's " + "x" * 300 + " the end"  # quoted by shlex, as a `-c` program is
    command = shlex.join([sys.executable, UPSTREAM, "silent", argument])
    message = _initialize_error(["mcp", "--data-dir", str(tmp_path / "data"), "--init-timeout", "1", "--wrap",
                                 "--", sys.executable, UPSTREAM, "silent", argument], subprocess_env)
    named = message.removeprefix("the upstream server (").split(") is gone: ", 1)
    assert len(named) == 2 and named[1].startswith("did not answer initialize within 1 seconds"), message
    found = re.fullmatch(r"(.+) …\[(\d+) of (\d+) characters cut\]… (.+)", named[0])
    assert found, message
    start, whole, end = found.group(1), int(found.group(3)), found.group(4)
    assert whole == len(command) and command.startswith(start) and command.endswith(end), message
    assert end.endswith(" the end'") and len(named[0]) <= 120
    assert wait_until(lambda: not running_with(token))


_HOSTILE_STDERR = "boom \x1b]0;owned\x07 \x1b[2J \u202eevil"
_HOSTILE_SHOWN = "boom \\x1b]0;owned\\x07 \\x1b[2J \\u202eevil"


def test_the_wrappers_own_error_lines_show_the_upstreams_control_characters_escaped_review_r23_3(
        tmp_path, subprocess_env):
    """Regression (review R23, 3): the wrapper's own error lines quoted what the upstream wrote raw, so
    an upstream that died at start with ``ESC ] 0 ; owned BEL`` on stderr drove the client's terminal
    through the -32603 of ``initialize`` ("the upstream server (...) is gone: exited with code 5; its last
    stderr line: ..."), and so did the "is gone" of every later request after a crash mid-call.  They are
    one-line errors as the tools' are (``message_line``): the control characters shown escaped."""
    async def main():
        said = []
        with pytest.raises(BaseException) as caught:  # the SDK's client raises it inside an exception group
            async with wrapped(tmp_path, subprocess_env, "die,hostile", options=("--init-timeout", "20")):
                pass
        error = caught.value
        while getattr(error, "exceptions", None):
            error = error.exceptions[0]
        assert isinstance(error, MCPError) and "exited with code 5" in error.message, error
        said.append(error.message)
        async with wrapped(tmp_path, subprocess_env) as client:
            with anyio.fail_after(120):  # a liveness bound
                crashed = await client.call_tool("crash", {"line": _HOSTILE_STDERR})
            assert crashed.is_error and "exited with code 7" in text_of(crashed)
            said.append(text_of(crashed))
            with pytest.raises(MCPError, match="is gone: exited with code 7") as gone:
                await client.list_prompts()
            said.append(gone.value.message)
        for message in said:
            assert message.isprintable() and _HOSTILE_SHOWN in message, message

    anyio.run(main)


def test_a_crash_says_the_end_not_its_last_stderr_line_came_during_the_call_red_team_d13_2(tmp_path, subprocess_env):
    """Regression (red team D13, 2): a crash mid-call read "... was killed by SIGKILL; its last stderr line:
    filesystem-mcp started: ... during this call; later calls will fail ...", putting a line the server wrote
    at start-up "during this call".  Now "during this call" qualifies the end (the exit code or signal), and the
    last stderr line follows it; later calls name the same end without it."""
    async def main():
        async with wrapped(tmp_path, subprocess_env) as client:
            crashed = await client.call_tool("crash", {"line": "upstream started: serving /srv"})
            assert crashed.is_error
            assert text_of(crashed).endswith(
                "exited with code 7 during this call; its last stderr line: upstream started: serving /srv; "
                "later calls will fail until the MCP server is restarted"), text_of(crashed)
            later = await client.call_tool("text", {"unit": "x"})
            assert later.is_error and "during this call" not in text_of(later)
            assert "exited with code 7; its last stderr line: upstream started: serving /srv" in text_of(later)

    anyio.run(main)


def test_a_2026_client_listens_for_the_upstreams_changes_red_team_d13_1(tmp_path, subprocess_env):
    """Regression (red team D13, 1): a 2026-era client (the SDK's default ``auto`` mode), which gets list changes
    and resource updates only on a ``subscriptions/listen`` stream, got "Method not found" for it from the
    wrapper, and the upstream's change notifications were dropped.  Now it is served over what the upstream
    sends (its capabilities are the upstream's as it declared them): the kinds the upstream declares, each
    resource watched subscribed to upstream for the stream's life; an upstream that declares none gets an
    acknowledgment honoring none of them."""
    async def main():
        async with wrapped(tmp_path, subprocess_env, "changes", mode="auto") as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            declared = client.server_capabilities
            assert declared.tools.list_changed and declared.prompts.list_changed
            assert declared.resources.list_changed and declared.resources.subscribe
            with anyio.fail_after(60):  # a liveness bound
                async with client.listen(tools_list_changed=True, resources_list_changed=True,
                                         resource_subscriptions=["test://hello"]) as listening:
                    honored = listening.honored
                    assert honored.tools_list_changed and honored.resources_list_changed
                    assert honored.resource_subscriptions == ["test://hello"] and not honored.prompts_list_changed
                    said = await client.call_tool("change", {})
                    assert text_of(said) == "subscribed: test://hello"
                    seen = set()
                    async for event in listening:
                        seen.add(event)
                        if len(seen) == 3:
                            break
                    assert seen == {ToolsListChanged(), ResourcesListChanged(), ResourceUpdated(uri="test://hello")}
                # The stream is over: so is the upstream's subscription.
                while text_of(await client.call_tool("change", {})) != "subscribed: ":
                    await anyio.sleep(0.05)
        async with wrapped(tmp_path, subprocess_env, mode="auto") as client:  # declares no list change
            assert not client.server_capabilities.tools.list_changed
            with anyio.fail_after(60):
                async with client.listen(tools_list_changed=True, resource_subscriptions=["test://hello"]) as listening:
                    assert listening.honored == types.SubscriptionFilter()

    anyio.run(main)


def test_open_listen_streams_end_when_the_upstream_dies_review_r14(tmp_path, subprocess_env):
    """Regression (review R14): when the upstream died, a 2026-era client's open ``subscriptions/listen``
    streams stayed open for ever, with no event and no end (the wrapper never closed them), while a new
    listen failed at once with "... is gone".  Now each open stream ends gracefully once the link's failure
    is noted: on a call that meets the death (``crash``) and when the upstream's stdout ends with no call
    in flight (killed from outside); a new listen then gets the "is gone" error."""
    async def main():
        async with wrapped(tmp_path, subprocess_env, "changes", mode="auto") as client:
            async with client.listen(tools_list_changed=True, resource_subscriptions=["test://hello"]) as first, \
                    client.listen(resources_list_changed=True) as second:
                crashed = await client.call_tool("crash", {})
                assert crashed.is_error and "exited with code 7" in text_of(crashed)
                with anyio.fail_after(10):  # the defect: both streams stayed open for ever
                    assert [event async for event in first] == []
                    assert [event async for event in second] == []
            with anyio.fail_after(10), pytest.raises(MCPError, match="is gone: exited with code 7"):
                async with client.listen(tools_list_changed=True):
                    pass
        async with wrapped(tmp_path, subprocess_env, "changes", mode="auto") as client:
            pid = int(text_of(await client.call_tool("pid", {})).split()[0])
            async with client.listen(resource_subscriptions=["test://hello"]) as listening:
                os.kill(pid, signal.SIGKILL)  # no call in flight: only the end of its stdout tells
                with anyio.fail_after(10):
                    assert [event async for event in listening] == []
            with anyio.fail_after(10), pytest.raises(MCPError, match="is gone: was killed by SIGKILL"):
                async with client.listen(tools_list_changed=True):
                    pass

    anyio.run(main)


class _Unsayable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def test_an_upstream_error_that_cannot_say_itself_is_still_described_red_team_r12():
    """Regression (red team R12): mcp_upstream._head formatted 'Type: message' itself, so an
    exception whose ``__str__`` raises (or one in its chain of causes) escaped as that RuntimeError
    while the failure was being told; it now uses error_line, the one home of that format."""
    from overspill.mcp_upstream import _described, _head

    assert _head(_Unsayable()) == "_Unsayable (its message could not be read)"
    try:
        try:
            raise _Unsayable
        except _Unsayable as cause:
            raise OSError("connection lost") from cause
    except OSError as error:
        assert _described(error) == "OSError: connection lost"  # (a cause that says nothing adds nothing)
