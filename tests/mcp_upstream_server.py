"""An upstream MCP server for the wrapper's tests, written with the SDK's low-level ``Server``.

Run as ``python mcp_upstream_server.py [MODE[,MODE...]]``: ``serve`` (the default,
over stdio), ``collide`` (also has tools named ``read`` and ``grep``), ``overcollide``
(also ``overspill_read`` and ``overspill_grep``), ``garbage`` (writes lines that are not
JSON-RPC to stdout before serving),
``silent`` (never answers ``initialize``), ``die`` (exits 5 at start, after a
line on stderr; with ``hostile``, a line of ESC, BEL and U+202E), ``http PORT`` (streamable HTTP on 127.0.0.1:PORT), ``notools``
(serves resources and prompts only: no tools capability), ``latecollide`` (tools named
``read`` and ``grep`` appear from its second ``tools/list`` on, as after a list change), ``changes`` (declares
``listChanged`` for tools, prompts and resources and takes ``resources/subscribe``; its tool ``change`` sends
the three list changes and ``resources/updated`` for each subscribed URI, and says which those are).

Tools: ``text`` (``unit`` repeated ``count`` times, joined by ``sep``),
``blocks`` (several text blocks, an image, audio and an embedded resource), ``image``, ``structured``
(``structuredContent`` given, with a text), ``fail`` (``isError``), ``slow``
(progress, then waits to be cancelled; touches ``path`` when it is),
``crash`` (exits 7 mid-call after a line on stderr: ``line``, "upstream crashing now" by
default), ``sample``, ``elicit``, ``roots``, ``ping``, ``log`` (requests to and notifications
for the client),
``pid`` (the server's pid, process group and parent), ``headers`` (the
``X-Test`` header of the HTTP request), ``typed`` (declares an
``outputSchema``: ``{"result": string}``, the SDK's shape for a tool returning
text, and returns ``text``'s text in both forms), ``listed`` (declares the schema the SDK's and
FastMCP's servers declare for a tool returning a list of objects, ``{"result": [{"i", "text"}...]}``,
and returns ``count`` rows of ``width`` characters as their JSON text and as that object),
``closed`` (the same rows under a schema that admits no other key and at least one row),
``reported`` (an object as a FastMCP tool returning a model gives it: ``total``, ``count``
``items`` and a ``note`` of ``width`` characters, all required), ``nullable`` and ``counts`` (return
``data`` as ``structuredContent``, as ``structured`` does, under a schema of one required ``v`` that is null or
a string of at least 50,000 characters and no other key, and one of a map of integers with at least one member),
``verbatim`` (returns the content blocks it is given as ``content``, as JSON, and ``meta`` as
the result's ``_meta``), ``rpcerror`` (answers a JSON-RPC error of ``code``, -32000 by default, and
``message``, as a server's own errors are sent).  Any tool given ``as_error`` answers as an ``isError``
result, with its ``structuredContent`` (``"with"``) or without it (``"bare"``, as the SDK's servers answer for
a tool that raises).  Its resource reads and prompts report progress
(1 of 2) when asked; reading ``test://busy`` and getting the prompt ``busy`` answer a JSON-RPC error
-32000 (the first code of JSON-RPC's server-error range, which servers send for their own errors).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
MODE = sys.argv[1] if len(sys.argv) > 1 else "serve"
MODES = set(MODE.split(","))

TOOLS = ["text", "blocks", "image", "structured", "fail", "slow", "crash", "sample", "elicit", "roots", "ping",
         "log", "pid", "headers", "typed", "listed", "closed", "reported", "nullable", "counts", "verbatim",
         "rpcerror"] + (
            ["change"] if "changes" in MODES else []) + (
            ["read", "grep"] if MODES & {"collide", "overcollide"} else []) + (
            ["overspill_read", "overspill_grep"] if "overcollide" in MODES else [])
TYPED = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
ROW = {"type": "object", "properties": {"i": {"type": "integer"}, "text": {"type": "string"}}, "required": ["i", "text"]}
SCHEMAS = {
    "typed": TYPED,
    "listed": {"type": "object", "properties": {"result": {"type": "array", "items": ROW}}, "required": ["result"]},
    "closed": {"type": "object", "properties": {"result": {"type": "array", "items": ROW, "minItems": 1}},
               "required": ["result"], "additionalProperties": False},
    "reported": {"type": "object", "properties": {"total": {"type": "integer"}, "items": {
        "type": "array", "items": {"type": "string"}}, "note": {"type": "string"}}, "required": ["total", "items", "note"]},
    "nullable": {"type": "object", "properties": {"v": {"anyOf": [{"type": "null"}, {
        "type": "string", "minLength": 50_000}]}}, "required": ["v"], "additionalProperties": False},
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1},
}


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


LISTINGS = [0]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    LISTINGS[0] += 1
    late = ["read", "grep"] if "latecollide" in MODES and LISTINGS[0] > 1 else []
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description=f"the test tool {name}", input_schema={"type": "object"},
                   output_schema=SCHEMAS.get(name),
                   annotations=types.ToolAnnotations(read_only_hint=name != "crash"))
        for name in TOOLS + late])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    result = await answer(ctx, params)
    as_error = (params.arguments or {}).get("as_error")
    if as_error:  # the same answer as an isError result; "bare": without structuredContent, as a raising tool's
        result = result.model_copy(update={"is_error": True, **({"structured_content": None} if as_error == "bare"
                                                                  else {})})
    return result


async def answer(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, args = params.name, params.arguments or {}
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    if name in ("text", "read", "grep", "typed", "overspill_read", "overspill_grep"):
        value = args.get("sep", "").join([args.get("unit", "")] * args.get("count", 1))
        return types.CallToolResult(content=[text(value)], structured_content={"result": value} if name == "typed"
                                    else None)
    if name in ("listed", "closed"):
        rows = [{"i": index, "text": "r" * args.get("width", 50)} for index in range(args.get("count", 1))]
        return types.CallToolResult(content=[text(json.dumps(rows))], structured_content={"result": rows})
    if name == "reported":
        count = args.get("count", 1)
        report = {"total": count, "items": [f"item {index}" for index in range(count)], "note": "n" * args["width"]}
        return types.CallToolResult(content=[text(json.dumps(report))], structured_content=report)
    if name == "verbatim":  # the test says exactly what the upstream answers (annotations, _meta)
        return types.CallToolResult.model_validate({"content": args["content"], "_meta": args.get("meta")})
    if name == "change":  # standalone notifications of the handshake era, outside the call's own
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_prompt_list_changed()
        await ctx.session.send_resource_list_changed()
        for uri in sorted(SUBSCRIBED):
            await ctx.session.send_resource_updated(uri)
        return types.CallToolResult(content=[text("subscribed: " + " ".join(sorted(SUBSCRIBED)))])
    if name == "rpcerror":  # a JSON-RPC error, not an isError result
        raise MCPError(args.get("code", -32000), args.get("message", "row 7 is locked, retry later"))
    if name == "blocks":
        return types.CallToolResult(content=[text(part) for part in args["parts"]] + [
            types.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
            types.AudioContent(type="audio", data=IMAGE, mime_type="audio/wav"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="test://embedded", text="an embedded resource", mime_type="text/plain"))])
    if name == "image":
        return types.CallToolResult(content=[types.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
                                             text(args.get("caption", "a pixel"))])
    if name in ("structured", "nullable", "counts"):
        return types.CallToolResult(content=[text(args.get("text", "see structuredContent"))],
                                    structured_content=args["data"])
    if name == "fail":
        return types.CallToolResult(content=[text(args.get("why", "it failed"))], is_error=True)
    if name == "slow":
        try:
            for step in range(1, 4):
                await ctx.session.report_progress(float(step), 10.0, f"step {step}")
            await anyio.sleep(600)
        finally:
            Path(args["path"]).write_text("cancelled")
    if name == "crash":
        sys.stderr.write(f"first line\n{args.get('line', 'upstream crashing now')}\n")
        sys.stderr.flush()
        os._exit(7)
    if name == "sample":
        result = await ctx.session.send_request(types.CreateMessageRequest(params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=text(args.get("prompt", "hi")))], max_tokens=10)),
            types.CreateMessageResult, metadata=related)
        return types.CallToolResult(content=[text(f"sampled: {result.content.text}")])
    if name == "elicit":
        result = await ctx.session.send_request(types.ElicitRequest(params=types.ElicitRequestFormParams(
            message="your name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}})),
            types.ElicitResult, metadata=related)
        return types.CallToolResult(content=[text(f"elicited: {result.action} {result.content}")])
    if name == "roots":
        result = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult, metadata=related)
        return types.CallToolResult(content=[text("roots: " + " ".join(str(root.uri) for root in result.roots))])
    if name == "ping":
        await ctx.session.send_request(types.PingRequest(), types.EmptyResult, metadata=related)
        return types.CallToolResult(content=[text("pinged")])
    if name == "log":
        await ctx.session.send_notification(types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="warning", data="a log line")))
        await ctx.session.send_notification(types.ToolListChangedNotification())
        return types.CallToolResult(content=[text("logged")])
    if name == "pid":
        return types.CallToolResult(content=[text(f"{os.getpid()} {os.getpgid(0)} {os.getppid()}")])
    if name == "headers":  # over HTTP: a header the wrapper was told to send
        request = getattr(ctx, "request", None)
        return types.CallToolResult(content=[text(str(request.headers.get("x-test") if request else None))])
    return types.CallToolResult(content=[text(f"unknown tool {name}")], is_error=True)


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri="test://hello", name="hello")])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    if str(params.uri) == "test://busy":
        raise MCPError(-32000, "resource busy, retry later")
    await ctx.session.report_progress(1.0, 2.0, "reading")  # nothing unless the client asked for progress
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text="hello there")])


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name="greet", description="a greeting")])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name == "busy":
        raise MCPError(-32000, "prompt store busy, retry later")
    await ctx.session.report_progress(1.0, 2.0, "prompting")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text("hello prompt"))])


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    return types.CompleteResult(completion=types.Completion(values=["alpha", "beta"]))


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    sys.stderr.write(f"level set to {params.level}\n")
    sys.stderr.flush()
    return types.EmptyResult()


SUBSCRIBED: set[str] = set()  # the resources/subscribe URIs not unsubscribed (``changes``)


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.discard(str(params.uri))
    return types.EmptyResult()


def server() -> Server[Any]:
    tools: dict[str, Any] = {} if "notools" in MODES else {"on_list_tools": list_tools, "on_call_tool": call_tool}
    made: Server[Any] = Server(
        "test-upstream", version="1.2.3", instructions="The test upstream's own instructions.",
        **tools, on_list_resources=list_resources,
        on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
        on_completion=complete)
    made.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    if "changes" in MODES:
        made.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
        made.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    return made


def initialization_options(made: Server[Any]) -> Any:
    """What the server declares: the list changes it sends only in ``changes``."""
    changed = "changes" in MODES
    return made.create_initialization_options(NotificationOptions(
        prompts_changed=changed, resources_changed=changed, tools_changed=changed))


async def main() -> None:
    if "die" in MODES:
        sys.stderr.write("cannot start: no configuration\n" if "hostile" not in MODES else
                         "boom \x1b]0;owned\x07 \x1b[2J \u202eevil\n")
        sys.exit(5)
    if MODE == "silent":
        await anyio.to_thread.run_sync(sys.stdin.buffer.read)  # reads, never answers
        return
    if "garbage" in MODES:
        sys.stdout.write("this is not JSON-RPC\n{\"half\": \n")
        sys.stdout.flush()
    if MODE == "http":
        import uvicorn

        app = server().streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        await uvicorn.Server(config).serve()
        return
    made = server()
    async with stdio_server() as (read_stream, write_stream):
        await made.run(read_stream, write_stream, initialization_options(made))


if __name__ == "__main__":
    anyio.run(main)
