"""An MCP server over stdio written without the SDK, so that the bytes it sends are exactly what a
test asks for (what an SDK server could not send: a lone surrogate escape, JSON nested too deep to
parse, a tools/list the SDK refuses).  Its one argument chooses: "plain", "badlist", "tasks" (it
declares the tasks capability), "extras" (fields no MCP type has, e.g. a vendor's, in its tools,
results, content blocks and resources; its tool "extras" answers ``size`` x's and an image, "widget"
a block of an unknown type), "old" (it answers initialize with 2024-11-05 whatever it is offered),
"future" (with 2099-01-01) or "roots" (it asks its client roots/list before answering tools/list, and
lists a tool per root, list_NAME, and one named read) or "earlyroots" (it asks roots/list as soon as
its handshake ends, on notifications/initialized, as filesystem servers do; its tool "roots" answers them)
or "tsorder" (as "plain", its answers written
as the TypeScript SDK writes them: ``{"result": ..., "jsonrpc": "2.0", "id": N}``) or "cyclingcursor" (its
tools/list pages never end: the first and cursor "p1" give its tools and nextCursor "p2", "p2" a tool
named read and nextCursor "p1") or "endlesscursor" (every page has a nextCursor never given before: "1",
"2", ..., page N a tool named page_N).  Its tool "init"
answers the initialize params it was given; "seen" the methods it received, and those that came while it waited for roots/list's answer;
"pid" its pid and process group; "crash" starts a ``sleep 300`` that inherits its stdout (a worker that
outlives it), writes a line on stderr and exits 7 without answering."""

import json
import os
import subprocess
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
TOOLS = [{"name": "cut", "description": "text with a lone surrogate escape", "inputSchema": {"type": "object"}},
         {"name": "deep", "description": "nested too deep", "inputSchema": {"type": "object"}},
         {"name": "echo", "description": "ok", "inputSchema": {"type": "object"}}]
if MODE == "badlist":
    TOOLS.append({"name": "odd", "inputSchema": {"type": "object"},
                  "outputSchema": {"type": ["object", "null"]}})

if MODE == "extras":
    TOOLS = [{**tool, "x-cost": 3, "annotations": {"readOnlyHint": True, "x-hint": True}} for tool in TOOLS]
    TOOLS.append({"name": "extras", "inputSchema": {"type": "object"}, "x-cost": 4})
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


INIT: dict = {}
EARLY_ROOTS: list = []
SEEN: list = []
WHILE_WAITING: list = []
PENDING: list = []  # read while waiting for roots/list's answer: handled after it


def messages():
    while True:
        if PENDING:
            yield PENDING.pop(0)
            continue
        line = sys.stdin.readline()
        if not line:
            return
        yield json.loads(line)


def ask_roots() -> list:
    send('{"jsonrpc": "2.0", "id": "roots", "method": "roots/list"}')
    while line := sys.stdin.readline():
        message = json.loads(line)
        if message.get("id") == "roots" and "method" not in message:
            return message.get("result", {}).get("roots", [])
        WHILE_WAITING.append(message.get("method"))
        PENDING.append(message)
    sys.exit(0)


def send(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: str) -> None:
    if MODE == "tsorder":  # as the TypeScript SDK writes its answers: the result first, the id last
        send('{"result": ' + result + ', "jsonrpc": "2.0", "id": ' + json.dumps(request_id) + "}")
    else:
        send('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": ' + result + "}")


for message in messages():
    method, request_id = message.get("method"), message.get("id")
    SEEN.append(method)
    if method == "notifications/initialized" and MODE == "earlyroots":
        EARLY_ROOTS = [root["uri"] for root in ask_roots()]
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        CLIENT = message["params"].get("clientInfo")
        INIT = message["params"]
        version = {"old": "2024-11-05", "future": "2099-01-01"}.get(MODE, message["params"]["protocolVersion"])
        capabilities: dict = {"tools": {}}
        if MODE == "extras":
            capabilities["resources"] = {}
        if MODE == "tasks":
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        answer(request_id, json.dumps({"protocolVersion": version,
                                       "capabilities": capabilities, "serverInfo": {"name": "raw", "version": "1"}}))
    elif method == "tools/list" and MODE == "roots":
        listed = [{"name": "list_" + root["uri"].rsplit("/", 1)[-1], "inputSchema": {"type": "object"}}
                  for root in ask_roots()]
        answer(request_id, json.dumps({"tools": listed + [{"name": "read", "inputSchema": {"type": "object"}}]}))
    elif method == "tools/list" and MODE == "cyclingcursor":
        cursor = (message.get("params") or {}).get("cursor")
        if cursor == "p2":
            answer(request_id, json.dumps({"tools": [{"name": "read", "inputSchema": {"type": "object"}}],
                                           "nextCursor": "p1"}))
        else:
            answer(request_id, json.dumps({"tools": TOOLS, "nextCursor": "p2"}))
    elif method == "tools/list" and MODE == "endlesscursor":
        cursor = (message.get("params") or {}).get("cursor")
        page = [{"name": f"page_{cursor}", "inputSchema": {"type": "object"}}] if cursor else TOOLS
        answer(request_id, json.dumps({"tools": page, "nextCursor": str(int(cursor or 0) + 1)}))
    elif method == "tools/list":
        answer(request_id, json.dumps({"tools": TOOLS}))
    elif method == "tools/call":
        name = message["params"]["name"]
        size = message["params"].get("arguments", {}).get("size", 10)
        if name == "cut":
            # What JSON.stringify writes for a string cut inside an emoji: a lone high surrogate.
            text = "cut emoji: \\ud83d " + "x" * size + " and a whole one: \\ud83d\\ude00"
            answer(request_id, '{"content": [{"type": "text", "text": "' + text + '"}]}')
        elif name == "client":  # the clientInfo it was given at initialize
            answer(request_id, json.dumps({"content": [{"type": "text", "text": json.dumps(CLIENT)}]}))
        elif name == "extras":
            answer(request_id, json.dumps({"content": [
                {"type": "text", "text": "x" * size, "x-vendor": 1},
                {"type": "image", "data": PIXEL, "mimeType": "image/png", "x-vendor": 2}], "x-top": {"a": 1}}))
        elif name == "widget":  # a content block of a type no MCP revision has
            answer(request_id, json.dumps({"content": [{"type": "widget", "spec": {"w": 1}}]}))
        elif name in ("init", "seen"):
            said = INIT if name == "init" else {"methods": SEEN, "while_waiting": WHILE_WAITING}
            answer(request_id, json.dumps({"content": [{"type": "text", "text": json.dumps(said)}]}))
        elif name == "roots":  # what it was given when it asked at the end of its handshake
            answer(request_id, json.dumps({"content": [{"type": "text", "text": json.dumps(EARLY_ROOTS)}]}))
        elif name == "pid":
            answer(request_id, json.dumps({"content": [{"type": "text", "text": f"{os.getpid()} {os.getpgid(0)}"}]}))
        elif name == "crash":
            subprocess.Popen(["sleep", "300"])  # holds this process's stdout open after it has gone
            sys.stderr.write("first line\nupstream crashing now\n")
            sys.stderr.flush()
            os._exit(7)
        elif name == "deep":
            answer(request_id, '{"content": [{"type": "text", "text": "deep"}], "structuredContent": {"d": '
                   + "[" * 3000 + "]" * 3000 + "}}")
        else:
            answer(request_id, '{"content": [{"type": "text", "text": "ok"}]}')
    elif method == "resources/list" and MODE == "extras":
        answer(request_id, json.dumps({"resources": [{"uri": "raw://x", "name": "x", "x-etag": "abc"}]}))
    elif method == "resources/read" and MODE == "extras":
        answer(request_id, json.dumps({"contents": [{"uri": "raw://x", "text": "r", "x-etag": "abc"}], "x-top": 1}))
    else:
        send('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "error": {"code": -32601, '
             '"message": "Method not found"}}')
