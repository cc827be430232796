"""``overspill mcp`` driven by the MCP SDK's own client: in memory for the fast
cases, and over stdio against the installed ``overspill`` console script for
the end-to-end ones (real processes, real store)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from processes import alive_in_group, regex_workers_of, wait_until, zombies_of

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'overspill[mcp]'")

import anyio  # noqa: E402  (installed with the extra)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from overspill import ToolOutputStore, tools  # noqa: E402
from overspill.mcp_server import (  # noqa: E402
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    RESOURCE_TEMPLATE,
    TOOLS,
    create_server,
    limits_config,
)

SEQ = "".join(f"{i}\n" for i in range(1, 100001)).encode()  # what `seq 1 100000` writes


def overspill_script() -> str:
    """The installed console script: beside this interpreter (a venv), else on PATH."""
    beside = Path(sys.executable).with_name("overspill")
    found = str(beside) if beside.exists() else shutil.which("overspill")
    if found is None:
        pytest.fail("the overspill console script is not installed (pip install -e '.[mcp]')")
    return found


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "data", durable=False, config=limits_config(environ={})) as opened:
        yield opened


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def links_of(result) -> list:
    return [block for block in result.content if block.type == "resource_link"]


async def page_with_read(client: Client, uri: str) -> bytes:
    offset, pages = 0, []
    while True:
        result = await client.call_tool("read", {"resource": uri, "offset": offset})
        assert not result.is_error, text_of(result)
        structured = result.structured_content
        assert structured["uri"] == uri and structured["offset"] == offset
        data = text_of(result).encode()
        nxt = structured.get("next_offset")
        pages.append(data if nxt is None else data[: nxt - offset])
        if nxt is None:
            return b"".join(pages)
        assert nxt > offset
        offset = nxt


async def page_with_resources_read(client: Client, uri: str, limit: int) -> bytes:
    offset, pages = 0, []
    while True:
        result = await client.read_resource(f"{uri}?offset={offset}&limit={limit}")
        (contents,) = result.contents
        assert contents.meta["offset"] == offset
        pages.append(contents.text.encode())
        if contents.meta.get("next_offset") is None:
            return b"".join(pages)
        offset = contents.meta["next_offset"]


# ------------------------------------------------------------------ in memory
def test_the_tools_are_the_schemas_tools(store):
    async def main():
        async with Client(create_server(store)) as client:
            listed = (await client.list_tools()).tools
        expected = {spec["name"]: spec for spec in tools.schemas("anthropic", limits=store.limits())}
        assert [tool.name for tool in listed] == list(TOOLS) == ["bash", "read", "grep", "webfetch", "wait", "kill",
                                                                 "jobs"]
        for tool in listed:
            assert tool.input_schema == expected[tool.name]["input_schema"]
            assert tool.description == expected[tool.name]["description"]
        # The descriptions name the limits this server applies, not the library's defaults.
        assert "over 400 lines or 8 KB" in listed[0].description and "2000" not in listed[0].description

    anyio.run(main)


def test_the_bash_schema_names_the_servers_command_timeout(store):
    async def main():
        async with Client(create_server(store, timeout=900)) as client:
            listed = (await client.list_tools()).tools
        timeout = listed[0].input_schema["properties"]["timeout"]
        assert timeout["description"] == "Seconds before the command is stopped (default 900)."
        assert listed[0].input_schema == tools.schemas("anthropic", limits=store.limits(), timeout=900)[0]["input_schema"]

    anyio.run(main)


def test_defaults_for_mcp_clients_and_the_session_in_the_instructions(store):
    assert (DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES) == (8192, 400)
    assert store.limits().max_bytes == 8192 and store.limits().max_lines == 400
    assert limits_config(10, None, environ={"OVERSPILL_MAX_BYTES": "999"}) == {"tool_output": {"max_lines": 10}}

    async def main():
        async with Client(create_server(store, "the-session")) as client:
            assert "the-session" in client.instructions and "8192 bytes" in client.instructions
        async with Client(create_server(store)) as first, Client(create_server(store)) as second:
            assert first.instructions != second.instructions  # a fresh session per server

    anyio.run(main)


def test_small_output_and_a_failing_command(store):
    async def main():
        async with Client(create_server(store)) as client:
            small = await client.call_tool("bash", {"command": "echo hello"})
            assert not small.is_error and text_of(small) == "hello" and not links_of(small)
            assert small.structured_content == {"exit_code": 0, "text": "hello"}
            failing = await client.call_tool("bash", {"command": "echo broken; exit 3"})
            assert not failing.is_error and failing.structured_content == {"exit_code": 3, "text": text_of(failing)}
            assert "broken" in text_of(failing) and "3" in text_of(failing)

    anyio.run(main)


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [("bash", {"command": 5}, "must be a string"), ("bash", {}, "needs the argument 'command'"),
     ("bash", {"command": "true", "timeout": 3601}, "at most 3600"), ("bash", {"command": "true", "x": 1}, "no argument"),
     ("read", {"resource": "tool-output://0123456789abZZZZZZZZZZZZZZ"}, "no resource"),
     ("read", {"resource": "nope"}, "tool-output"), ("grep", {"pattern": "("}, ""),
     ("websearch", {"query": "q"}, "unknown tool")],
)
def test_bad_calls_are_one_line_errors(store, name, arguments, fragment):
    async def main():
        async with Client(create_server(store)) as client:
            result = await client.call_tool(name, arguments)
        assert result.is_error and len(result.content) == 1
        assert fragment in text_of(result) and "\n" not in text_of(result) and "Traceback" not in text_of(result)

    anyio.run(main)


def test_large_output_pages_and_reads_back_exactly(store):
    async def main():
        async with Client(create_server(store)) as client:
            result = await client.call_tool("bash", {"command": "seq 1 100000"})
            (link,) = links_of(result)
            structured = result.structured_content
            assert structured["uri"] == link.uri and structured["size"] == link.size == len(SEQ)
            assert structured["exit_code"] == 0 and structured["lines"] in (100000, 100001)
            assert SEQ.startswith(text_of(result).encode()[: structured["next_offset"]])
            assert structured["text"] == text_of(result)  # for clients that show the model only structuredContent
            assert await page_with_read(client, link.uri) == SEQ
            assert await page_with_resources_read(client, link.uri, 30000) == SEQ
            first = (await client.read_resource(link.uri)).contents[0]
            assert first.meta.get("next_offset") == len(first.text.encode()) == DEFAULT_MAX_BYTES  # the preview's limit
            page = await client.call_tool("read", {"resource": link.uri})
            assert page.structured_content["next_offset"] == DEFAULT_MAX_BYTES
            asked = await client.call_tool("read", {"resource": link.uri, "limit": 50 * 1024})
            assert asked.structured_content["next_offset"] == 50 * 1024
            widest = (await client.read_resource(link.uri + "?limit=60000")).contents[0]
            assert widest.meta["next_offset"] == 50 * 1024  # a page holds at most MAX_READ_BYTES
            listed = (await client.list_resources()).resources
            assert [resource.uri for resource in listed] == [link.uri]
            templates = (await client.list_resource_templates()).resource_templates
            assert [template.uri_template for template in templates] == [RESOURCE_TEMPLATE]

    anyio.run(main)


def test_read_takes_a_limit_in_the_uri_through_the_server(store):
    """Noticed by fix B12: the server gave a ``read`` with no ``limit`` argument its default page as
    one, so a URI of the resource template's form (``?limit=N``) was refused as a number given twice
    ("the URI says limit=100 and limit is 8192; give one"). The default stays out when the URI names
    a limit; one given both ways and disagreeing is still refused."""
    async def main():
        async with Client(create_server(store)) as client:
            (link,) = links_of(await client.call_tool("bash", {"command": "seq 1 100000"}))
            page = await client.call_tool("read", {"resource": link.uri + "?offset=6&limit=100"})
            assert not page.is_error, text_of(page)
            assert (page.structured_content["offset"], page.structured_content["next_offset"]) == (6, 106)
            assert text_of(page).startswith(SEQ[6:106].decode())
            both = await client.call_tool("read", {"resource": link.uri + "?limit=100", "limit": 200})
            assert both.is_error and "give one" in text_of(both)
            bad = await client.call_tool("read", {"resource": link.uri + "?limit=x"})
            assert bad.is_error and "limit" in text_of(bad)

    anyio.run(main)


def test_integer_arguments_with_a_zero_fraction_through_the_server(store):
    """Regression (f11): the SDK passes a model's 3890.0 on as a float, which tools.call refused."""
    async def main():
        async with Client(create_server(store)) as client:
            result = await client.call_tool("bash", {"command": "seq 1 100000"})
            offset = result.structured_content["next_offset"]
            page = await client.call_tool("read", {"resource": result.structured_content["uri"],
                                                   "offset": float(offset), "limit": 6.0})
            assert not page.is_error, text_of(page)
            assert page.structured_content["offset"] == offset and text_of(page).startswith(SEQ[offset:offset + 6].decode())
            half = await client.call_tool("read", {"resource": result.structured_content["uri"], "offset": 10.5})
            assert half.is_error and text_of(half) == "read's argument 'offset' must be an integer, not 10.5"

    anyio.run(main)


@pytest.mark.parametrize("query", ["?offset=-1", "?offset=x", "?limit=0", "?offset=1&offset=2", "?page=2"])
def test_resources_read_refuses_a_malformed_query(store, query):
    uri = store.write("s", "c", "abc" * 10).uri

    async def main():
        async with Client(create_server(store, "s")) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri + query)
        assert "\n" not in caught.value.message

    anyio.run(main)


def test_another_session_cannot_read(store):
    uri = store.write("alice", "c", "secret\n" * 10000).uri

    async def main():
        async with Client(create_server(store, "bob")) as client:
            result = await client.call_tool("read", {"resource": uri})
            assert result.is_error and "not found in this session" in text_of(result)
            grepped = await client.call_tool("grep", {"pattern": "secret", "resource": uri})
            assert grepped.is_error and "secret\n" not in text_of(grepped)
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert "not found in this session" in caught.value.message
            assert (await client.list_resources()).resources == []

    anyio.run(main)


def test_grep_and_read_a_file_in_the_servers_folder(store, tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")

    async def main():
        async with Client(create_server(store, cwd=tmp_path)) as client:
            found = await client.call_tool("grep", {"pattern": "beta", "path": "notes.txt"})
            assert not found.is_error and "beta" in text_of(found)
            lines = await client.call_tool("read", {"path": "notes.txt", "offset": 2, "limit": 1})
            assert "beta" in text_of(lines) and lines.structured_content == {"next_offset": 3, "text": text_of(lines)}

    anyio.run(main)


def test_webfetch_of_a_large_page_links_the_whole_of_it(store, tmp_path):
    (tmp_path / "big.txt").write_bytes(SEQ)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    async def main():
        async with Client(create_server(store)) as client:
            url = f"http://127.0.0.1:{httpd.server_address[1]}/big.txt"
            result = await client.call_tool("webfetch", {"url": url, "format": "text"})
            assert not result.is_error and len(text_of(result).encode()) < 8 * 1024 + 300
            (link,) = links_of(result)
            return await page_with_read(client, link.uri)

    try:
        assert anyio.run(main).rstrip(b"\n") == SEQ.rstrip(b"\n")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_progress_reports_bytes_so_far(store, tmp_path):
    flag = tmp_path / "flag"
    reports: list[float] = []

    async def progress(value: float, total, message) -> None:
        reports.append(value)
        flag.touch()  # the command finishes only once a report came

    async def main():
        async with Client(create_server(store)) as client:
            command = f"seq 1 5000; while [ ! -e {flag} ]; do sleep 0.05; done; seq 1 5000"
            return await client.call_tool("bash", {"command": command, "timeout": 60}, progress_callback=progress)

    result = anyio.run(main)
    assert not result.is_error and result.structured_content["exit_code"] == 0
    assert reports and reports == sorted(set(reports)) and 0 < reports[-1] <= result.structured_content["size"]


def test_a_background_command_through_the_server(store, tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    reports: list[float] = []

    async def progress(value: float, total, message) -> None:
        reports.append(value)

    async def main():
        async with Client(create_server(store)) as client:
            command = f"echo 'dev server starting'; read -r go < '{gate}'; echo 'listening on :8000'; sleep 60"
            started = await client.call_tool("bash", {"command": command, "background": True, "yield_after": 0.5})
            assert not started.is_error, text_of(started)
            assert started.structured_content["state"] == "running"
            assert started.structured_content["complete"] is False
            (link,) = links_of(started)

            def release() -> None:
                import time as clock

                clock.sleep(1.5)
                with open(gate, "w") as writer:
                    writer.write("go\n")

            threading.Thread(target=release).start()
            waited = await client.call_tool("wait", {"resource": link.uri, "timeout": 30, "pattern": "listening",
                                                     "offset": 0}, progress_callback=progress)
            assert "listening on :8000" in text_of(waited) and waited.structured_content["state"] == "running"
            page = await client.call_tool("read", {"resource": link.uri})
            assert text_of(page).startswith("dev server starting\nlistening on :8000\n")
            listed = await client.call_tool("jobs", {})
            assert link.uri in text_of(listed) and "running" in text_of(listed)
            killed = await client.call_tool("kill", {"resource": link.uri})
            assert killed.structured_content["state"] == "exited" and killed.structured_content["exit_code"] < 0

    anyio.run(main)
    assert reports and reports == sorted(set(reports))


# ------------------------------------------------------------------ over stdio, the installed script
def stdio(data_dir: Path, env: dict[str, str], *extra: str) -> Client:
    parameters = StdioServerParameters(command=overspill_script(), args=["mcp", "--data-dir", str(data_dir), *extra],
                                       env=env)
    return Client(parameters, mode="legacy")  # the initialize handshake, as today's clients do


def test_stdio_end_to_end(tmp_path, subprocess_env):
    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            assert client.server_info.name == "overspill"
            listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            assert listed == {spec["name"]: spec["input_schema"] for spec in tools.schemas("anthropic")
                              if spec["name"] in TOOLS}

            result = await client.call_tool("bash", {"command": "seq 1 100000"})
            assert not result.is_error and len(text_of(result).encode()) < 8 * 1024
            (link,) = links_of(result)
            assert link.uri.startswith("tool-output://") and link.size == len(SEQ)
            assert await page_with_read(client, link.uri) == SEQ
            assert await page_with_resources_read(client, link.uri, 50 * 1024) == SEQ

            found = await client.call_tool("grep", {"pattern": "^99999$", "resource": link.uri})
            assert not found.is_error and "99999" in text_of(found)
            failing = await client.call_tool("bash", {"command": "echo nope >&2; exit 7"})
            assert not failing.is_error and failing.structured_content["exit_code"] == 7
            bad = await client.call_tool("bash", {"command": ["not", "a", "string"]})
            assert bad.is_error and "\n" not in text_of(bad)
            return link.uri

    uri = anyio.run(main)

    async def other():
        async with stdio(tmp_path / "data", subprocess_env) as client:  # a second connection: another session
            result = await client.call_tool("read", {"resource": uri})
            assert result.is_error and "not found in this session" in text_of(result)
            with pytest.raises(MCPError):
                await client.read_resource(uri)

    anyio.run(other)


def test_stdio_session_shared_across_restarts(tmp_path, subprocess_env):
    async def write():
        async with stdio(tmp_path / "data", subprocess_env, "--session", "kept") as client:
            return links_of(await client.call_tool("bash", {"command": "seq 1 100000"}))[0].uri

    uri = anyio.run(write)

    async def read():
        async with stdio(tmp_path / "data", subprocess_env, "--session", "kept") as client:
            return await page_with_read(client, uri)

    assert anyio.run(read) == SEQ


def test_stdio_restarted_server_reads_a_finished_background_handle(tmp_path, subprocess_env):
    async def start():
        async with stdio(tmp_path / "data", subprocess_env, "--session", "kept") as client:
            started = await client.call_tool("bash", {"command": "sleep 0.5; seq 1 100000", "background": True,
                                                      "yield_after": 0})
            assert started.structured_content["state"] == "running"
            uri = links_of(started)[0].uri
            ended = await client.call_tool("wait", {"resource": uri, "timeout": 30})
            assert ended.structured_content["state"] == "exited" and ended.structured_content["exit_code"] == 0
            return uri

    uri = anyio.run(start)

    async def read():
        async with stdio(tmp_path / "data", subprocess_env, "--session", "kept") as client:
            listed = await client.call_tool("jobs", {})
            assert "exited" in text_of(listed)
            return await page_with_read(client, uri)

    assert anyio.run(read) == SEQ


def test_stdio_wait_finds_a_pattern_on_a_line_split_across_the_offset_it_starts_from(tmp_path, subprocess_env):
    """Regression (red team K15 f01): a follow loop of waits (each from the offset the last answer
    named) never matched ``ready on port`` on a line written in two parts, "server rea" then "dy on
    port 80": each wait searched only from its offset and ran to its timeout."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            command = f"printf 'server rea'; read -r go < '{gate}'; printf 'dy on port 80\\n'; sleep 60"
            started = await client.call_tool("bash", {"command": command, "background": True, "yield_after": 0})
            uri = started.structured_content["uri"]
            first = await client.call_tool("wait", {"resource": uri, "timeout": 30, "pattern": "server rea",
                                                    "offset": 0})
            offset = first.structured_content["next_offset"]
            assert offset == len(b"server rea"), text_of(first)
            with open(gate, "w") as release:
                release.write("go\n")
            waited = await client.call_tool("wait", {"resource": uri, "timeout": 30, "pattern": "ready on port",
                                                     "offset": offset})
            assert text_of(waited).startswith("dy on port 80\n[pattern 'ready on port' found at byte offset 10]\n")
            assert waited.structured_content["next_offset"] == len(b"server ready on port 80\n")
            before = await client.call_tool("wait", {"resource": uri, "timeout": 0, "pattern": "server",
                                                     "offset": offset})
            assert "[pattern 'server' not seen in the new output]" in text_of(before)
            await client.call_tool("kill", {"resource": uri})

    anyio.run(main)


def test_stdio_jobs_listing_is_bounded_by_the_servers_limits(tmp_path, subprocess_env):
    """Regression (red team K15 f02): under ``overspill mcp`` (8 KiB by default) 160 jobs gave a
    10,580-byte ``jobs`` answer; a long listing is stored whole, previewed within the server's
    limits and linked, as any output is."""
    async def main():
        async with stdio(tmp_path / "data", subprocess_env, "--max-lines", "5") as client:
            uris = []
            try:
                for _ in range(8):
                    started = await client.call_tool("bash", {"command": "sleep 30", "background": True,
                                                              "yield_after": 0})
                    uris.append(started.structured_content["uri"])
                listed = await client.call_tool("jobs", {})
                assert not listed.is_error and "output truncated" in text_of(listed), text_of(listed)
                (link,) = links_of(listed)
                assert listed.structured_content["uri"] == link.uri
                whole = (await page_with_read(client, link.uri)).decode()
                assert [line.split()[0] for line in whole.splitlines()] == uris
            finally:
                for uri in uris:
                    await client.call_tool("kill", {"resource": uri})

    anyio.run(main)


async def cancelled_once_started(client, arguments: dict, pid_file) -> tuple[int, int]:
    """Call bash with ``arguments`` (whose command writes ``$$ $PPID`` to ``pid_file``), cancel the
    call once the command has started (notifications/cancelled): (the group's leader, the server)."""
    async with anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool("bash", arguments)
            pytest.fail("the call should have been cancelled")

        group.start_soon(call)
        await anyio.to_thread.run_sync(wait_until, lambda: pid_file.exists() and pid_file.read_text().strip())
        group.cancel_scope.cancel()
    leader, server = map(int, pid_file.read_text().split())
    return leader, server


def test_stdio_cancellation_kills_the_process_group(tmp_path, subprocess_env):
    pid_file = tmp_path / "pids"
    # $$ is the shell (the group's leader), $PPID the server that started it.
    command = f"sleep 1000 & echo $$ $PPID > {pid_file}; sleep 1000; wait"

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            leader, server = await cancelled_once_started(client, {"command": command, "timeout": 3600}, pid_file)
            assert await anyio.to_thread.run_sync(wait_until, lambda: not alive_in_group(leader))
            assert await anyio.to_thread.run_sync(wait_until, lambda: not zombies_of(server))
            after = await client.call_tool("bash", {"command": "echo still serving"})
            assert text_of(after) == "still serving"

    anyio.run(main)


async def answers_while_matching_then_cancels(client, server: int, name: str, arguments: dict, page_uri: str,
                                              page_text: str) -> None:
    """While the call ``name(arguments)`` matches a backtracking pattern in a worker of ``server``,
    the server answers a ping and a read of ``page_uri`` (``page_text``); cancelling the call
    (notifications/cancelled) ends that worker."""
    ended: list[object] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            ended.append(await client.call_tool(name, arguments))

        group.start_soon(call)
        assert await anyio.to_thread.run_sync(wait_until, lambda: regex_workers_of(server))
        worker = regex_workers_of(server)[0]
        with anyio.fail_after(60):  # a bound on a hang, not a timing claim
            await client.send_ping()
            page = await client.read_resource(page_uri)
        assert page.contents[0].text == page_text and ended == []
        group.cancel_scope.cancel()
    assert await anyio.to_thread.run_sync(wait_until, lambda: worker not in regex_workers_of(server))


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_stdio_a_backtracking_grep_leaves_the_server_answering_and_is_cancelled(tmp_path, subprocess_env):
    # Issue 19 item 13: grep's re held the GIL with no bound; ping went unanswered and cancellation
    # was ignored. The matching now runs in a worker process that cancellation kills.
    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            made = await client.call_tool("bash", {"command": "seq 1 5000; printf 'a%.0s' $(seq 34); echo b; "
                                                              "echo $PPID >&2"})
            uri = links_of(made)[0].uri
            server = int(text_of(made).rstrip().rsplit("\n", 1)[-1])
            await answers_while_matching_then_cancels(client, server, "grep", {"pattern": "(a+)+$", "resource": uri},
                                                      f"{uri}?offset=0&limit=10", "1\n2\n3\n4\n5\n")
            found = await client.call_tool("grep", {"pattern": "a+b$", "resource": uri})
            assert not found.is_error and text_of(found).endswith("[1 matching line]")

    anyio.run(main)


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_stdio_64_long_calls_leave_ping_reads_and_cancellation_answered(tmp_path, subprocess_env):
    # Issue 19 item 14: each running call used to hold one of anyio's 40 worker threads while it was
    # awaited; the SDK's stdin reader needs one too, so at 39+ calls nothing more was heard.
    folder = tmp_path / "pids"
    folder.mkdir()
    calls = 64

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            uri = links_of(await client.call_tool("bash", {"command": "seq 1 100000"}))[0].uri
            ended: list[int] = []
            async with anyio.create_task_group() as group:

                async def call(number: int) -> None:
                    try:
                        await client.call_tool("bash", {"command": f"echo $$ > {folder}/{number}; sleep 1000",
                                                        "timeout": 3600})
                    finally:
                        ended.append(number)

                for number in range(calls):
                    group.start_soon(call, number)
                assert await anyio.to_thread.run_sync(
                    wait_until, lambda: len([p for p in folder.iterdir() if p.read_text().strip()]) == calls)
                # A bound on a hang, not a timing claim: without the fix these wait for a sleep to end.
                with anyio.fail_after(60):
                    await client.send_ping()
                    page = await client.read_resource(f"{uri}?offset=0&limit=100")
                    read = await client.call_tool("read", {"resource": uri, "offset": 6, "limit": 6})
                assert page.contents[0].text == SEQ[:100].decode()
                assert text_of(read).startswith("4\n5\n")
                assert ended == []  # every long call was still running meanwhile
                group.cancel_scope.cancel()  # 64 notifications/cancelled
            leaders = [int(path.read_text()) for path in folder.iterdir()]
            assert await anyio.to_thread.run_sync(wait_until, lambda: not any(map(alive_in_group, leaders)))
            after = await client.call_tool("bash", {"command": "echo still serving"})
            assert text_of(after) == "still serving"

    anyio.run(main)


def test_stdio_server_ends_running_commands_when_the_client_goes(tmp_path, subprocess_env):
    pid_file = tmp_path / "pids"
    command = f"echo $$ > {pid_file}; sleep 1000"

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "bash", {"command": command, "timeout": 3600})
                await anyio.to_thread.run_sync(wait_until, lambda: pid_file.exists() and pid_file.read_text().strip())
                group.cancel_scope.cancel()
                return None

    anyio.run(main)  # leaving the block closes the server's stdin
    leader = int(pid_file.read_text())
    assert wait_until(lambda: not alive_in_group(leader))


def test_stdio_progress_and_sigterm(tmp_path, subprocess_env):
    flag, pid_file = tmp_path / "flag", tmp_path / "pids"
    reports: list[float] = []

    async def progress(value: float, total, message) -> None:
        reports.append(value)
        flag.touch()

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            command = f"seq 1 5000; while [ ! -e {flag} ]; do sleep 0.05; done; echo done"
            result = await client.call_tool("bash", {"command": command, "timeout": 60}, progress_callback=progress)
            assert text_of(result).endswith("done") and reports and reports == sorted(set(reports))
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    with pytest.raises(MCPError):  # the server went away mid-call
                        await client.call_tool("bash", {"command": f"echo $$ $PPID > {pid_file}; sleep 1000"})

                group.start_soon(call)
                await anyio.to_thread.run_sync(wait_until, lambda: pid_file.exists() and pid_file.read_text().strip())
                leader, server = map(int, pid_file.read_text().split())
                os.kill(server, signal.SIGTERM)
                assert await anyio.to_thread.run_sync(wait_until, lambda: not alive_in_group(leader))

    anyio.run(main)


def test_without_the_extra_it_exits_2_with_the_install_command(tmp_path, subprocess_env):
    code = ("import sys; sys.modules['mcp'] = None; from overspill.cli import main; "
            "sys.exit(main(['mcp', '--data-dir', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env=subprocess_env, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "pip install 'overspill[mcp]'" in done.stderr


def test_importing_overspill_does_not_import_the_sdk(subprocess_env):
    code = ("import sys, overspill, overspill.tools, overspill.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'pydantic') "
            "or m in ('overspill.mcp_server', 'overspill.mcp_wrap', 'overspill.mcp_upstream', "
            "'overspill.mcp_relay', 'overspill.mcp_bound')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_cli_usage_errors(tmp_path, subprocess_env):
    for arguments, fragment in ((["--timeout", "4000"], "at most 3600"), (["--cwd", str(tmp_path / "no")], "not a folder"),
                                (["--max-bytes", "0"], "positive integer"), (["--session", " "], "must not be empty")):
        done = subprocess.run([overspill_script(), "mcp", *arguments], capture_output=True, text=True,
                              env=subprocess_env, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and fragment in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert os.path.exists(overspill_script())


# ------------------------------------------------------------------ issue 19 (defects-b items)
def test_resources_read_refuses_a_huge_offset_in_one_line(store):
    """Regression (issue 19, item 22): a 5,000-digit offset gave error code 0 and a traceback."""
    uri = store.write("s", "c", "abc" * 10).uri

    async def main():
        async with Client(create_server(store, "s")) as client:
            for query in ("?offset=" + "9" * 5000, "?limit=" + "1" * 5000, "?offset=" + "9" * 19):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(uri + query)
                assert caught.value.code == -32602 and "\n" not in caught.value.message
                assert len(caught.value.message) < 200
            at_end = (await client.read_resource(uri + "?offset=" + "9" * 18)).contents[0]
            assert at_end.text == "" and "next_offset" not in (at_end.meta or {}) and at_end.meta["offset"] == 30

    anyio.run(main)


def test_resources_read_of_a_binary_resource_is_a_paged_blob(store):
    """Regression (issue 19, item 3): binary resources came back as text full of U+FFFD."""
    import base64

    from mcp import types

    data = bytes(range(256)) * 1000
    uri = store.write("s", "c", data, mime="application/octet-stream").uri

    async def main():
        async with Client(create_server(store, "s")) as client:
            offset, pieces = 0, []
            while True:
                content = (await client.read_resource(f"{uri}?offset={offset}&limit=40000")).contents[0]
                assert isinstance(content, types.BlobResourceContents)
                assert content.mime_type == "application/octet-stream" and content.meta["offset"] == offset
                pieces.append(base64.b64decode(content.blob))
                if "next_offset" not in content.meta:
                    break
                offset = content.meta["next_offset"]
            assert b"".join(pieces) == data and len(pieces) == 7
            described = await client.call_tool("read", {"resource": uri, "offset": 5, "limit": 10})
            assert "not decoded as text" in text_of(described) and "\ufffd" not in text_of(described)
            text = (await client.read_resource(store.write("s", "c2", "plain\n" * 3).uri)).contents[0]
            assert text.text == "plain\n" * 3 and "next_offset" not in text.meta

    anyio.run(main)


def test_stdio_store_url_and_an_unreachable_store_at_start_up(tmp_path, subprocess_env):
    """Regression (issue 19, items 6 and 4): ``overspill mcp`` had no --store-url, and an
    unreachable store was found only when a command's output needed storing."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_server

    down = subprocess.run([overspill_script(), "mcp", "--store-url", "redis://127.0.0.1:1/0"], env=subprocess_env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert down.returncode == 4 and down.stderr.decode().count("\n") == 1 and b"127.0.0.1:1" in down.stderr
    bad = subprocess.run([overspill_script(), "mcp", "--store-url", "redis://h:1/abc"], env=subprocess_env,
                         stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith(b"overspill: error: --store-url: Redis URL")
    server = start_server(parent=tmp_path)
    try:
        parameters = StdioServerParameters(command=overspill_script(), env=subprocess_env,
                                           args=["mcp", "--store-url", server.url, "--session", "kept"])

        async def main():
            async with Client(parameters, mode="legacy") as client:
                return links_of(await client.call_tool("bash", {"command": "seq 1 100000"}))[0].uri

        uri = anyio.run(main)
        with ToolOutputStore(url=server.url) as store, store.view("kept", uri) as (resource, data):
            assert resource.size == len(SEQ) and bytes(data) == SEQ
    finally:
        server.stop()


def _end_group(leader: int) -> None:
    """SIGKILL what is left of a command's group (a failing test must not leave ``sleep 1000`` behind)."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def test_stdio_a_background_call_cancelled_in_its_yield_kills_the_command(tmp_path, subprocess_env):
    """Regression (red team D, f01): the yield of bash(background=true) ignored the call's abort, so a
    cancelled call left its command running, its handle never given to the model."""
    pid_file = tmp_path / "pids"
    command = f"echo $$ $PPID > {pid_file}; sleep 1000"

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            leader, server = await cancelled_once_started(
                client, {"command": command, "background": True, "yield_after": 600}, pid_file)
            try:
                assert await anyio.to_thread.run_sync(wait_until, lambda: not alive_in_group(leader))
                assert await anyio.to_thread.run_sync(wait_until, lambda: not zombies_of(server))
                listed = text_of(await client.call_tool("jobs", {}))
                assert " exited " in listed and " running " not in listed
            finally:
                _end_group(leader)

    anyio.run(main)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_stdio_a_background_call_in_its_yield_ends_with_the_server(tmp_path, subprocess_env, how):
    """Regression (red team D, f01): during a background call's yield the server neither left on the
    client's EOF nor on SIGTERM; the client SIGKILLed it and the command (its own group) ran on."""
    pid_file = tmp_path / "pids"
    command = f"echo $$ $PPID > {pid_file}; sleep 1000"

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    with pytest.raises(MCPError):  # the server goes away mid-call
                        await client.call_tool("bash", {"command": command, "background": True,
                                                        "yield_after": 600})

                group.start_soon(call)
                await anyio.to_thread.run_sync(wait_until, lambda: pid_file.exists() and pid_file.read_text().strip())
                leader, server = map(int, pid_file.read_text().split())
                if how == "SIGTERM":
                    os.kill(server, signal.SIGTERM)
                    try:
                        assert await anyio.to_thread.run_sync(wait_until, lambda: not alive_in_group(leader))
                    finally:
                        _end_group(leader)
                group.cancel_scope.cancel()

    anyio.run(main)  # leaving the block closes the server's stdin (and, past 2 s, kills the server)
    leader = int(pid_file.read_text().split()[0])
    try:
        assert wait_until(lambda: not alive_in_group(leader))
    finally:
        _end_group(leader)


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_stdio_a_backtracking_wait_pattern_leaves_the_server_answering_and_is_cancelled(tmp_path, subprocess_env):
    """Regression (red team D, f02): wait's pattern ran in ``re`` on the server's thread, holding the
    GIL without bound: pings went unanswered and the wait overran its timeout.  It runs in grep's
    worker (a time budget), which a cancelled wait kills."""
    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            started = await client.call_tool("bash", {"command": "printf 'a%.0s' $(seq 34); echo b; echo $PPID; "
                                                                 "sleep 1000", "background": True, "yield_after": 0})
            uri = started.structured_content["uri"]
            try:
                seen = await client.call_tool("wait", {"resource": uri, "timeout": 30, "pattern": "^[0-9]+$",
                                                       "offset": 0})
                server = int(text_of(seen).splitlines()[1])
                await answers_while_matching_then_cancels(
                    client, server, "wait", {"resource": uri, "timeout": 50, "pattern": "(a+)+$", "offset": 0},
                    f"{uri}?offset=0&limit=3", "aaa")
                with anyio.fail_after(60):  # likewise: the budget ends it
                    slow = await client.call_tool("wait", {"resource": uri, "timeout": 1, "pattern": "(a+)+$",
                                                           "offset": 0})
                assert not slow.is_error and "[pattern too slow: '(a+)+$' was stopped after" in text_of(slow)
                assert slow.structured_content["state"] == "running"
            finally:
                with anyio.move_on_after(60):  # (a server stuck under the GIL never answers)
                    await client.call_tool("kill", {"resource": uri})

    anyio.run(main)


@pytest.mark.parametrize("bound", [{}, {"max_tokens": 300}, {"max_lines": 7}, {"max_bytes": 1000}])
def test_reading_a_file_through_the_server_stays_within_its_bound(tmp_path, bound):
    """Regression (red team J, f02): ``read`` with a ``path`` gave up to 50 KiB / 2,000 lines whatever
    the server's bound (400 lines / 8 KiB, or --max-tokens), so a client's ~10 KB cut took its
    closing hint.  A file's page is kept within the bound; the hint (like the marker) comes on top."""
    pytest.importorskip("quicktok") if "max_tokens" in bound else None
    line = "entry {}: lorem ipsum dolor sit amet consectetur\n"
    (tmp_path / "notes.txt").write_text("".join(line.format(i) for i in range(5000)) + "é" * 9000 + "\n")
    config = limits_config(environ={}, **bound)
    limits = config["tool_output"]
    with ToolOutputStore(tmp_path / "data", durable=False, config=config) as bounded:
        async def main():
            async with Client(create_server(bounded, cwd=tmp_path)) as client:
                offset, seen = 1, 0
                while offset:
                    page = await client.call_tool("read", {"path": "notes.txt", "offset": offset})
                    assert not page.is_error, text_of(page)
                    text = text_of(page)
                    body, _, hint = text.partition("\n\n[more lines follow: read again with offset=")
                    assert len(body.encode()) <= limits["max_bytes"] and body.count("\n") < limits["max_lines"]
                    if "max_tokens" in limits:
                        from overspill._tokens import counter
                        assert counter()(body) <= limits["max_tokens"]
                    numbers = [int(shown.split("\t")[0]) for shown in body.split("\n")]
                    assert numbers == list(range(offset, offset + len(numbers)))
                    seen += len(numbers)
                    offset = int(hint.split(" ")[0]) if hint else 0
                    assert not hint or offset == numbers[-1] + 1
                assert seen == 5001  # every line, the last one (over the bound alone) cut with a note
                assert "… [line cut at" in body

        anyio.run(main)


def test_a_failure_quoting_a_long_value_stays_within_the_bound(store):
    """Regression (red team Y f02): the server's own failures (an unknown tool) and the tools'
    (a 100 KB URL) quoted the value whole, past the 8 KiB an answer promises."""
    async def main():
        async with Client(create_server(store)) as client:
            for name, arguments in (("n" * 100000, {}), ("webfetch", {"url": "ftp://" + "u" * 100000})):
                result = await client.call_tool(name, arguments)
                assert result.is_error and len(result.content) == 1
                assert len(text_of(result).encode()) <= 8192 and "characters cut]" in text_of(result)

    anyio.run(main)


# ------------------------------------------------------------------ red team V f07
def _answers(process: subprocess.Popen, wanted: set, timeout: float = 60) -> dict:
    """The server's answers, by id, until every id in ``wanted`` has one (or ``timeout`` passes:
    a bound against hanging, not a timing check)."""
    import json
    import queue

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    found: dict = {}
    while not wanted <= found.keys():
        try:
            message = json.loads(lines.get(timeout=timeout))
        except queue.Empty:
            break
        if "id" in message:
            found[message["id"]] = message
    return found


def test_stdio_answers_requests_the_sdk_cannot_validate(tmp_path, subprocess_env):
    """Regression (red team V f07): a ``tools/call`` whose JSON holds a 5,000-digit integer and a
    ``resources/read`` whose params is an array failed the SDK's message validation, and its
    stdio reader dropped them: the client waited forever. Each is now answered with a JSON-RPC
    error carrying its id (-32602: only the params are at fault), and the server goes on."""
    import json

    process = subprocess.Popen([sys.executable, "-m", "overspill", "mcp", "--data-dir", str(tmp_path / "data"),
                                "--session", "S"], env=subprocess_env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    raw = [json.dumps(request) for request in requests] + [
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":'
        '{"resource":"tool-output://x","offset":1%s}}}' % ("0" * 5000),
        '{"jsonrpc":"2.0","id":"four","method":"resources/read","params":["tool-output://x"]}',
        '{"jsonrpc":"2.0","id":5,"method":"ping"}',
    ]
    try:
        process.stdin.write("".join(line + "\n" for line in raw).encode())
        process.stdin.flush()
        found = _answers(process, {1, 3, "four", 5})
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    assert found.keys() >= {1, 3, "four", 5}, found.keys()
    assert found[3]["error"]["code"] == found["four"]["error"]["code"] == -32602
    assert "number out of range" in found[3]["error"]["message"]
    assert "params" in found["four"]["error"]["message"]
    assert found[5]["result"] == {}


def test_only_requests_with_an_id_are_answered_when_the_sdk_cannot_validate_them():
    """``rejected_request`` answers a request by its id, -32600 when more than its params is wrong,
    and leaves alone what names no request to answer (a notification, broken JSON, a huge id)."""
    from mcp import types
    from pydantic import ValidationError

    from overspill.mcp_server import rejected_request

    def failure(line: str) -> Exception:
        try:
            types.jsonrpc_message_adapter.validate_json(line)
        except ValidationError as error:
            return error
        raise AssertionError(f"{line} validated")

    wrong_version = rejected_request(failure('{"jsonrpc":"1.0","id":7,"method":"ping","params":[1]}'))
    assert (wrong_version.id, wrong_version.error.code) == (7, -32600)
    assert "\n" not in wrong_version.error.message
    assert rejected_request(failure('{"jsonrpc":"2.0","method":"notifications/x","params":[1]}')) is None
    assert rejected_request(failure('{"jsonrpc":"2.0","id":7,"method":"ping"')) is None
    assert rejected_request(failure('{"jsonrpc":"2.0","id":1%s,"method":"ping"}' % ("0" * 5000))) is None
    assert rejected_request(failure('{"jsonrpc":"2.0","id":true,"method":"ping","params":[]}')) is None
    assert rejected_request(ValueError("not the SDK's")) is None


# ------------------------------------------------------------------ red team B7 f03
def test_stdio_a_client_of_a_protocol_before_resource_links_gets_none(tmp_path, subprocess_env):
    """Regression (red team B7 f03): a bounded result carried a ``resource_link`` block (added in
    2025-06-18) whatever version the client agreed: a 2025-03-26 or 2024-11-05 client (the SDK 1.9
    line) refused the whole result.  It gets none now (the marker names the URI); later ones do."""
    import json

    def blocks(version: str) -> list:
        process = subprocess.Popen([sys.executable, "-m", "overspill", "mcp", "--data-dir", str(tmp_path / "data")],
                                   env=subprocess_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "bash", "arguments": {"command": "seq 1 100000"}}},
        ]
        try:
            process.stdin.write("".join(json.dumps(request) + "\n" for request in requests).encode())
            process.stdin.flush()
            found = _answers(process, {1, 2})
        finally:
            process.stdin.close()
            process.wait(timeout=60)
        assert found[1]["result"]["protocolVersion"] == version
        result = found[2]["result"]
        assert "tool-output://" in result["content"][0]["text"]  # the marker names the URI either way
        return [block["type"] for block in result["content"]]

    assert blocks("2024-11-05") == blocks("2025-03-26") == ["text"]
    assert blocks("2025-06-18") == blocks("2025-11-25") == ["text", "resource_link"]


# ------------------------------------------------------------------ red team B f03
def test_stdio_a_background_command_ignoring_sigterm_ends_when_the_sdk_client_closes_the_server(tmp_path,
                                                                                                 subprocess_env):
    """Regression (red team B f03): the SDK's stdio client closes stdin, SIGTERMs 2 s later and
    SIGKILLs 2 s after that.  The server stopped hearing signals once stdin closed and gave a
    background command 2 s of SIGTERM grace, so the client's SIGTERM killed it first and a command
    ignoring SIGTERM ran on.  Now its group is killed before the client's SIGTERM (and at once on it)."""
    pid_file = tmp_path / "pid"
    command = f"trap '' TERM; echo $$ > {pid_file}; while :; do sleep 1; done"

    async def main():
        async with stdio(tmp_path / "data", subprocess_env) as client:
            result = await client.call_tool("bash", {"command": command, "background": True, "yield_after": 0.5})
            assert not result.is_error, text_of(result)
            assert await anyio.to_thread.run_sync(wait_until, lambda: pid_file.exists() and pid_file.read_text())

    anyio.run(main)  # the SDK's own shutdown: stdin closed, SIGTERM at 2 s, SIGKILL at 4 s
    leader = int(pid_file.read_text())
    try:
        assert wait_until(lambda: not alive_in_group(leader), 20), alive_in_group(leader)
    finally:
        _end_group(leader)


def test_stdio_a_signal_while_the_server_ends_its_commands_kills_them_at_once(tmp_path, subprocess_env):
    """Regression (red team B f02/f03): a SIGTERM that came while the server was ending its commands
    (stdin closed, a background command given its SIGTERM grace) killed the server by the default
    action, and a command ignoring SIGTERM ran on.  It is now heard: the groups are killed at once
    and the server exits 128+15."""
    import json

    pid_file, termed = tmp_path / "pid", tmp_path / "termed"
    # Outlives SIGTERM (a trap, run between short sleeps) and says when it got it: the teardown is under way.
    command = f"trap 'touch {termed}' TERM; echo $$ > {pid_file}; while :; do sleep 0.05; done"
    process = subprocess.Popen([sys.executable, "-m", "overspill", "mcp", "--data-dir", str(tmp_path / "data")],
                               env=subprocess_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "bash", "arguments": {"command": command, "background": True, "yield_after": 0.5}}},
    ]
    leader = None
    try:
        process.stdin.write("".join(json.dumps(request) + "\n" for request in requests).encode())
        process.stdin.flush()
        found = _answers(process, {1, 2})
        assert 2 in found and not found[2]["result"].get("isError"), found
        assert wait_until(lambda: pid_file.exists() and pid_file.read_text())
        leader = int(pid_file.read_text())
        process.stdin.close()
        assert wait_until(termed.exists)  # the server is ending its commands
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
        assert wait_until(lambda: not alive_in_group(leader), 20), alive_in_group(leader)
    finally:
        process.kill()
        process.wait()
        if leader is not None:
            _end_group(leader)


def test_stdio_grep_listing_a_file_whose_name_is_not_utf8_is_answered(tmp_path, subprocess_env):
    """Regression (red team X9 f01): grep searched in Python (a look-behind rg refuses) listed
    ``bad\\xffname.txt`` with a lone surrogate; the SDK raised while writing the answer and
    ``overspill mcp`` died, the client waiting to its timeout.  The name is shown with U+FFFD and
    the server answers on."""
    with open(os.fsencode(tmp_path) + b"/bad\xffname.txt", "wb") as file:
        file.write(b"hello\n")

    async def main():
        async with stdio(tmp_path / "data", subprocess_env, "--cwd", str(tmp_path)) as client:
            with anyio.fail_after(60):
                found = await client.call_tool("grep", {"pattern": "(?<=h)ello", "path": "."})
                assert not found.is_error and text_of(found) == "bad\ufffdname.txt:1:hello"
                after = await client.call_tool("bash", {"command": "echo still here"})
                assert text_of(after).startswith("still here")

    anyio.run(main)


def test_an_answer_holding_a_lone_surrogate_is_sent_with_u_fffd():
    """Regression (red team X9 f01): the MCP server's last guard: whatever a tool's answer
    quotes (a name that is not UTF-8), what is sent is UTF-8 (an unencodable answer killed the
    server); a surrogate pair stays its character."""
    from overspill.mcp_server import _error, _tool_result
    from overspill.tools import ToolResult

    sent = _tool_result("read", ToolResult("a\udcffb \ud83d\ude00 c\ud800", False, False, None, {}))
    assert text_of(sent) == "a\ufffdb \U0001f600 c\ufffd" and sent.structured_content["text"] == text_of(sent)
    sent.model_dump_json()
    failed = _error("no such file: x\udcff")
    assert text_of(failed) == "no such file: x\ufffd"
    failed.model_dump_json()


def test_a_server_timeout_too_long_for_text_is_refused_by_its_count_of_digits(store):
    """Red team A10 f01 (the same fault elsewhere): ``create_server(timeout=10**5000)`` raised the
    int-to-text ValueError from inside its own refusal instead of the refusal."""
    with pytest.raises(ValueError, match=r"^timeout must be more than 0 and at most 3600 seconds, "
                                         r"not \(a 5001-digit number\)$"):
        create_server(store, timeout=10**5000)
