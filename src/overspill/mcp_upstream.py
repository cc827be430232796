"""``overspill mcp --wrap``: the upstream server as a process (or a URL), and serving it wrapped.

The upstream command runs in its own process group with this process's
environment; its stdout carries JSON-RPC (a line that is not is reported on
stderr and skipped), its stderr is copied to ours as it comes (where clients
log it) and its last line is kept to name in errors.  Its exit ends the
connection even when a process it started still holds its stdout (so no EOF
comes): what it wrote before leaving is read first.  It is started when the
wrapper starts, and initialized when the real client sends ``initialize``: it is
offered the protocol version the real client asked for and the capabilities it
declared (those the wrapper relays: sampling, elicitation, roots, experimental
and extensions), as declared, and the client is told the version it answered
(a 2026-era client's ``server/discover`` is asked of it right after its
handshake, before its tools: ``mcp_wrap.speaks_modern``).
Its group is terminated when the real client goes away: stdin closed, then
SIGTERM to the group, then SIGKILL (sooner when the server hurries: 1.5 s after
the client closed stdin, or on a signal then; ``mcp_server.run_stdio``).

Needs the ``mcp`` extra; ``import overspill`` never imports this module.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import functools
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any, Optional

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from ._frontend import WRAP_INIT_TIMEOUT, error_line, one_line
from ._mcp_streams import WrappedReadStream
from ._owner import group_alive
from .mcp_server import kill_on_hurry, run_stdio
from .mcp_wrap import Link, Relay, RelayingSession, build_server
from .store import ToolOutputStore
from .tools._result import message_line, printable_line, shortened_line

__all__ = ["UpstreamProcess", "parse_header", "serve_wrapped"]

# Grace for the upstream to leave on its own once its stdin is closed, then after SIGTERM.
_EXIT_GRACE = 1.0
_TERM_GRACE = 2.0
# How long a call that saw the connection close waits for the process's exit code.
_REAP_WAIT = 2.0
# Once the process has exited, its stdout is read on until it stays quiet this long (or ends): what it wrote
# before leaving is passed on, then the connection is closed though a child it left may hold the pipe open.
_DRAIN_QUIET = 0.2
# ... and no longer than this in all, however much a child it left keeps writing.
_DRAIN_MOST = 2.0
_POLL = 0.02
# The most characters of its last stderr line an error names (a longer one by its start and end around a note).
_SHOWN_LINE = 300
# The most characters of its command that the errors naming it give (a longer one by its start and end around a note).
_SHOWN_COMMAND = 120
# What ends a line of its stderr (as bytes.splitlines has it).
_LINE_BREAK = re.compile("[\r\n]")
# glibc's mallopt parameter for the size from which a block gets its own mapping, and the size set.
_M_MMAP_THRESHOLD = -3
_OWN_MAPPING = 1 << 20


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` as ``(name, value)``.

    :raises ValueError: no colon, an empty name, or a name with spaces.
    """
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or any(character.isspace() for character in name.strip()):
        raise ValueError(f"--header takes 'Name: value', not {text!r}")
    return name.strip(), value.strip()


class UpstreamProcess:
    """An MCP server started as a command, spoken to over its stdin and stdout."""

    # What a command that never answers initialize may not be, asked in the error (``OwnedLink``).
    unanswered = "is it an MCP server speaking over stdio?"

    def __init__(self, argv: Sequence[str], cwd: Optional[str] = None) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.label = f"the upstream server ({shortened_line(one_line(shlex.join(self.argv)), _SHOWN_COMMAND)})"
        self._process: Any = None
        self._stderr_line = _LastLine(_SHOWN_LINE)
        # The reader's progress, for _watch_exit: chunks read so far, whether it waits on the pipe (and the
        # scope of that wait), whether it has ended, and whether it is to stop (the process has gone).
        self._chunks = 0
        self._waiting: Optional[anyio.CancelScope] = None
        self._reader_done = False
        self._stop_reading = False

    @property
    def returncode(self) -> Optional[int]:
        return None if self._process is None else self._process.returncode

    def last_stderr_line(self) -> Optional[str]:
        """The last line the process wrote to stderr that is not blank, stripped (one of more than
        ``_SHOWN_LINE`` characters as its start and end around a note); None when there is none."""
        return self._stderr_line.shown()

    async def describe_end(self) -> Optional[str]:
        """How the process ended ("exited with code 3; its last stderr line: ..."), waiting
        up to 2 seconds for it to be reaped; None when it still runs."""
        with anyio.move_on_after(_REAP_WAIT):
            while self._process is not None and self._process.returncode is None:
                await anyio.sleep(_POLL)
        code = self.returncode
        if code is None:
            return None
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
            else f"exited with code {code}"
        line = self.last_stderr_line()
        return f"{how}; its last stderr line: {line}" if line else f"{how}; it wrote nothing to stderr"

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[tuple[Any, Any]]:
        """Start the command and yield the session's (read, write) streams; on leaving,
        terminate its process group."""
        self._process = process = await anyio.open_process(
            self.argv, stdin=-1, stdout=-1, stderr=-1, cwd=self.cwd, start_new_session=True)
        group = process.pid  # a new session: the group's id is the leader's pid
        read_in, read_out = anyio.create_memory_object_stream[Any](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        # A server told to hurry (a signal while it ends what it started) kills the group at once,
        # whatever grace _stop is giving it: until _stop has seen it gone.
        forget = kill_on_hurry(functools.partial(_kill_group, group))
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._read_stdout, read_in)
                tasks.start_soon(self._write_stdin, write_out, read_in)
                tasks.start_soon(self._copy_stderr)
                tasks.start_soon(self._watch_exit)
                try:
                    yield read_out, write_in
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(group)
                    tasks.cancel_scope.cancel()
        finally:
            forget()
            for stream in (read_in, read_out, write_in, write_out):
                stream.close()

    async def _read_stdout(self, sink: MemoryObjectSendStream[Any]) -> None:
        # A line's bytes gather in one buffer (grown in place) and are decoded once it is whole, the buffer
        # dropped before json.loads: a result of N bytes is held at most twice at any moment (bytes and
        # text, then text and the parsed string), and no trail of decoded pieces is left behind in the heap.
        buffer = bytearray()
        stdout = self._process.stdout
        try:
            async with sink:
                while not self._stop_reading:
                    # Only the wait on the pipe is cancelled (by _watch_exit, once the process has gone and
                    # its stdout is quiet): a message read is never dropped half-way to the session.
                    chunk = b""
                    with anyio.CancelScope() as self._waiting:
                        try:
                            chunk = await stdout.receive()
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                            return
                    self._waiting = None
                    if not chunk:  # cancelled: the process is gone, and what it wrote has been read
                        return
                    self._chunks += 1
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        if buffer:
                            buffer += memoryview(chunk)[start:end]
                            line = buffer.decode("utf-8", "replace")
                            buffer = bytearray()
                        else:
                            line = chunk[start:end].decode("utf-8", "replace")
                        start = end + 1
                        if line.strip():
                            message = _parse(line)
                            del line  # the parsed message holds what is needed
                            try:
                                await sink.send(message)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                            del message  # held by the session from here on, and only as long as it needs it
                    if start < len(chunk):
                        buffer += memoryview(chunk)[start:]
                    del chunk
        finally:
            self._reader_done = True

    async def _watch_exit(self) -> None:
        """End the connection once the process has exited, though its stdout has not.

        A process it started (a worker, a language server) inherits its stdout and may hold it open long
        after it is gone: EOF never comes, and a call in flight would wait for ever.  Once it has exited,
        its stdout is read on until it has been quiet for ``_DRAIN_QUIET`` (what it wrote before leaving is
        passed on), ``_DRAIN_MOST`` at most; then the reader stops and the session sees the connection end,
        as on EOF.  The child is left to ``_stop``, which ends the whole group.
        """
        await self._process.wait()  # anyio's: the exit itself, not (as asyncio's own) the pipes' end too
        waited = 0.0
        while not self._reader_done:
            seen = self._chunks
            await anyio.sleep(_DRAIN_QUIET)
            waited += _DRAIN_QUIET
            waiting = self._waiting
            # Quiet: waiting on the pipe, with nothing read for a while (not busy handing a message on).
            if (waiting is not None and self._chunks == seen) or waited >= _DRAIN_MOST:
                self._stop_reading = True
                if waiting is not None:
                    waiting.cancel()
                return

    async def _write_stdin(self, source: MemoryObjectReceiveStream[SessionMessage],
                           sink: MemoryObjectSendStream[Any]) -> None:
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await self._process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            sink.close()  # the server stopped reading: the session sees the connection end

    async def _copy_stderr(self) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            async for chunk in self._process.stderr:
                self._stderr_line.feed(chunk)
                with contextlib.suppress(OSError):
                    os.write(sys.stderr.fileno(), chunk)

    async def _stop(self, group: int) -> None:
        process = self._process
        with contextlib.suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await process.stdin.aclose()
        with anyio.move_on_after(_EXIT_GRACE):
            while process.returncode is None:
                await anyio.sleep(_POLL)
        # The whole group, whether or not the leader left: its children may still run.
        for number, grace in ((signal.SIGTERM, _TERM_GRACE), (signal.SIGKILL, _TERM_GRACE)):
            if process.returncode is not None and not group_alive(group):
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, number)
            with anyio.move_on_after(grace):
                while process.returncode is None or group_alive(group):
                    await anyio.sleep(_POLL)
        for stream in (process.stdout, process.stderr):
            with contextlib.suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                await stream.aclose()


class _LastLine:
    """The last line of a stream that is not blank, kept as the stream comes in bounded memory: its first
    and last ``keep`` characters (the whitespace around it left out) and its length, in characters decoded
    from the stream's start (invalid bytes as U+FFFD; a character split across reads stays whole)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        # The line in hand: its start, its end up to its last character that is not whitespace, the
        # whitespace after that (its last ``keep`` characters, and how many) and its length up to there.
        self._start = self._end = self._space = ""
        self._spaces = self._length = 0
        self._last: Optional[tuple[str, str, int]] = None  # the same of the last line ended that was not blank

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        for index, piece in enumerate(_LINE_BREAK.split(self._decoder.decode(data))):
            if index:
                self._close()
            self._add(piece)

    def shown(self) -> Optional[str]:
        """The last line that is not blank (the one in hand, if it is not), as ``keep`` characters at most,
        shown by the printable rule (``printable_line``: the process chose it, and the wrapper's error lines
        quote it): a longer one as its start and end around the note for cut values; None when there is none."""
        kept = (self._start, self._end, self._length) if self._length else self._last
        if kept is None:
            return None
        start, end, length = kept
        return printable_line(start, end, length, self._keep)

    def _add(self, text: str) -> None:
        body = text.rstrip()
        if not body:  # whitespace: part of the line only if more of it follows (none counts at its start)
            if self._length:
                self._space = (self._space + text)[-self._keep:]
                self._spaces += len(text)
            return
        if not self._length:
            body = body.lstrip()
        more = self._space + body
        if len(self._start) < self._keep:
            self._start += more[:self._keep - len(self._start)]
        self._end = (self._end + more)[-self._keep:]
        self._length += self._spaces + len(body)
        self._space = text[len(text.rstrip()):][-self._keep:]
        self._spaces = len(text) - len(text.rstrip())

    def _close(self) -> None:
        if self._length:
            self._last = (self._start, self._end, self._length)
        self._start = self._end = self._space = ""
        self._spaces = self._length = 0


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _large_blocks_mapped() -> None:
    """Have glibc give every block of 1 MiB or more a mapping of its own, unmapped when freed.

    Left alone, glibc raises that size to the largest block freed so far (up to 32 MiB): after the first
    large result, the next one's line, text and parsed string come from the heap, where freed memory stays
    resident, and the wrapper's peak grows call after call (2x the result, then 3x, then 4x).  Set once,
    the threshold stays put and the peak stays at 2x.  Elsewhere (musl, macOS) nothing is changed.
    """
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, _OWN_MAPPING)
    except (ValueError, OSError, AttributeError):  # not glibc, or no such call
        return


# What an unreadable answer's top-level members are read with (``_unreadable_answer``): a member whose value is
# a scalar (a string, a number, true, false or null), a run of them, each with its comma, then...
_KEY = r'"(?:[^"\\]|\\.){0,40}"'
_SCALAR = r'-?\d{1,18}(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.){0,100}"|true|false|null'
_PAIR = r'\s*' + _KEY + r'\s*:\s*(?:' + _SCALAR + r')\s*'
_MEMBER = re.compile(r'\s*"(?P<key>(?:[^"\\]|\\.){0,40})"\s*:\s*(?P<value>' + _SCALAR + r')\s*')
# ... the head of the line: the scalar members before the first compound value, and that value's key...
_ANSWER_HEAD = re.compile(r'\s*\{(?P<members>(?:' + _PAIR + r',)*)'
                          r'(?:\s*"(?P<compound>(?:[^"\\]|\\.){0,40})"\s*:\s*[\[{])?')
# ... and its tail: the scalar members after the last compound value, up to the line's last brace.  That one
# brace closes the line, so they are the top-level object's members, never those of an object in the result.
_ANSWER_TAIL = re.compile(r'(?P<members>(?:,' + _PAIR + r')+)\}\s*$')
# How far from each end of a line they are looked for (the result between can be any size).
_ANSWER_EDGE = 400


def _parse(line: str) -> Any:
    try:
        message = json.loads(line)
        if "\\ud" in line or "\\uD" in line:
            # A lone surrogate escape (JSON.stringify of a string cut inside an emoji) parses, but
            # cannot be written on to the client: the SDK's writer would fail, and the wrapper with it.
            message = _whole_characters(message)
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except (ValueError, RecursionError) as error:  # handed to the session, which reports it and reads on
        why = one_line(str(error))[:200]
        answered = _unreadable_answer(line, why)
        return answered if answered is not None else ValueError(f"not JSON-RPC: {line[:200]!r} ({why})")


def _unreadable_answer(line: str, why: str) -> Optional[SessionMessage]:
    """For an answer that cannot be read (nested too deep to parse, or not a valid result) whose id
    its top-level members name: that request's error, so the call it answers fails at once instead of
    waiting for an answer that will not come.  None for anything else (a request or a notification).

    The id is looked for among the scalar members before the result (``{"jsonrpc": "2.0", "id": 6,
    "result": ...}``, as Python writers put it) and after it (``{"result": ..., "jsonrpc": "2.0",
    "id": 6}``, as the TypeScript SDK does), near each end of the line only: the result between can be
    any size, and an "id" inside it is not the answer's."""
    head = _ANSWER_HEAD.match(line[:_ANSWER_EDGE])
    if head is None:
        return None
    members = dict(_members(head.group("members")))
    # From the head's last comma at the earliest: not members the head has read already.
    tail = _ANSWER_TAIL.search(line, max(len(line) - _ANSWER_EDGE, head.end() - 1))
    if tail is not None:
        members.update(_members(tail.group("members")))
    compound = head.group("compound")
    answers = compound in ("result", "error") or "result" in members or "error" in members
    if not answers or compound == "params" or "method" in members or "id" not in members:
        return None  # a request or a notification (its compound value is params), or no id to answer
    try:
        request_id: Any = json.loads(members["id"])
    except ValueError:
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    error = types.ErrorData(code=types.INTERNAL_ERROR,
                            message=message_line(f"the upstream server's answer cannot be read: {why}"))
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _members(text: str) -> list[tuple[str, str]]:
    """The ``(key, value text)`` of the scalar members in ``text`` (a run of them, with their commas)."""
    return [(found.group("key"), found.group("value")) for found in _MEMBER.finditer(text)]


def _whole_characters(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_whole_characters(item) for item in value]
    if isinstance(value, dict):
        return {_whole_characters(key): _whole_characters(item) for key, item in value.items()}
    return value


# The words of the SDK's streamable-HTTP transport for a request it gives up on because the response stream
# ended with no answer, which it says with the code of a closed connection (mcp 2.x's
# ``StreamableHTTPTransport._resolve_abandoned_request``): nothing else tells them from the server's own.
_ABANDONED = ("SSE stream ended without a response", "SSE stream failed: ",
              "SSE stream ended and reconnection attempts were exhausted")


class _HttpUpstream:
    """A streamable-HTTP upstream at ``url``: ``connect`` opens the SDK's transport to it, noting the last
    error status its server answered (the SDK turns one into a JSON-RPC error that says only "Server
    returned an error response"), which ``status`` gives, for the wrapper's own errors to name."""

    # What a URL that never answers initialize may not be, asked in the error (``OwnedLink``).
    unanswered = "is it an MCP server's streamable HTTP endpoint?"

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = headers
        self._refused: Optional[str] = None

    def status(self) -> Optional[str]:
        """The error status the server answered the last POST ("HTTP 501 Not Implemented"), or None."""
        return self._refused

    @staticmethod
    def abandoned(error: MCPError) -> bool:
        """Whether ``error`` is the SDK transport's own for a request whose response stream ended with no
        answer (the server went away mid-call): a closed connection (``Link.closed``), not the server's."""
        return error.code == types.CONNECTION_CLOSED and error.data is None and error.message.startswith(_ABANDONED)

    async def _note(self, response: Any) -> None:
        # Only a POST's (one carrying a message), and only the last: a GET refused 405 (a server with no
        # stream of its own to offer) is ordinary, and a later POST answered 2xx makes an earlier refusal
        # no cause of what fails next.
        if response.request.method == "POST":
            failed = response.status_code >= 400
            self._refused = f"HTTP {response.status_code} {response.reason_phrase}".rstrip() if failed else None

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's streamable-HTTP streams to the server (read, write)."""
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=self.headers) as client:
            client.event_hooks = {**client.event_hooks, "response": [*client.event_hooks["response"], self._note]}
            # No bound on one server-sent event (the SDK's default is 1 MiB): large results are what
            # the wrapper is for, and a stdio upstream's lines have none either.
            async with streamable_http_client(self.url, http_client=client, max_sse_event_size=None) as streams:
                yield streams[0], streams[1]


_SHOWN_CAUSES = 3  # leaf errors named in one message, at most (then "and N more")


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, its nested groups' included (``error`` itself when it
    is not a group)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _http_status(error: BaseException) -> Optional[int]:
    """The HTTP status ``error`` carries (its own ``status_code``, or its response's), if any."""
    try:  # httpx's errors raise, not return None, for a request or response they were not given
        status = getattr(error, "status_code", None) or getattr(getattr(error, "response", None), "status_code", None)
    except Exception:
        return None
    return status if isinstance(status, int) else None


def _head(error: BaseException) -> str:
    """``error`` as ``Type: message``, with the HTTP status it carries."""
    text = error_line(error)  # (one home for "Type: message", safe from a __str__ that raises)
    status = _http_status(error)
    return f"{text} (HTTP {status})" if status is not None and str(status) not in text else text


def _described(error: BaseException, depth: int = 0) -> str:
    """``error`` (``_head``) with, in parentheses, the deepest error in its chain of causes (and
    contexts) that says something it does not (httpx's "All connection attempts failed" is over the socket's
    ConnectionRefusedError); a group in the chain is given by its leaves."""
    text = _head(error)
    root: Optional[str] = None
    cause: Optional[BaseException] = error
    for _ in range(8):  # a chain is short; a cycle (a context set by hand) must not loop
        assert cause is not None
        # The context too, though suppressed: httpcore raises its ConnectError "from None" while handling
        # the OSError whose own cause is the ConnectionRefusedError.
        cause = cause.__cause__ or cause.__context__
        if cause is None or not isinstance(cause, Exception):  # a cancellation is not why it failed
            break
        if isinstance(cause, BaseExceptionGroup):
            root = _cause(cause, depth + 1) if depth < 2 else root
            break
        if error_line(cause).partition(": ")[2] not in text:  # its message (error_line: it may not say one)
            root = _head(cause)
    return f"{text} ({root})" if root and root not in text else text


def _cause(error: BaseException, depth: int = 0) -> str:
    """What went wrong, on one line: the leaf errors of an exception group (anyio's task groups wrap a
    transport's error in one, whose own text says only "unhandled errors in a TaskGroup"), each
    ``_described``, repeats said once."""
    said: list[str] = []
    leaves = _leaves(error)
    for leaf in leaves:
        text = _described(leaf, depth)
        if text not in said:
            said.append(text)
    more = len(said) - _SHOWN_CAUSES
    return one_line("; ".join(said[:_SHOWN_CAUSES]) + (f"; and {more} more" if more > 0 else ""))


class OwnedLink(Link):
    """A link whose session this process opens on the real client's ``initialize``, on a task
    of its own (``own``), so the transport's scopes are entered and left on one task."""

    def __init__(self, opener: Any, relay: Relay, *, label: str, describe_end: Any, init_timeout: float,
                 unanswered: str, status: Optional[Any] = None, abandoned: Optional[Any] = None) -> None:
        """:param unanswered: the transport's question when the upstream does not answer initialize in
            time (``UpstreamProcess.unanswered``, ``_HttpUpstream.unanswered``).
        :param status: gives the last HTTP error status the upstream answered, or None (an HTTP
            transport's; its errors do not carry it), for the failure to name.
        :param abandoned: the transport's own errors for a request whose answer can never come
            (``_HttpUpstream.abandoned``; ``Link``'s)."""
        super().__init__(label=label, describe_end=describe_end, abandoned=abandoned)
        self._unanswered = unanswered
        self._status = status
        self._opener = opener
        self._relay = relay
        self._init_timeout = init_timeout
        self._capabilities: Optional[types.ClientCapabilities] = None
        self._client_info: Optional[types.Implementation] = None
        self._version: Optional[str] = None
        self._discover: Optional[str] = None
        self._requested = anyio.Event()
        self._settled = anyio.Event()

    async def _connect(self, capabilities: Optional[types.ClientCapabilities],
                       client_info: Optional[types.Implementation], version: Optional[str],
                       discover: Optional[str] = None) -> None:
        self._capabilities = capabilities
        self._client_info = client_info
        self._version = version
        self._discover = discover
        self._requested.set()
        await self._settled.wait()

    async def own(self) -> None:
        """Open the upstream, initialize it once asked, keep it until cancelled, then close it (ending its
        process group).

        ``_settled`` (which ``get`` waits on) is set only once the start has an outcome: served, or
        ``failure`` noted.  A start that ends otherwise (cancelled: an HTTP transport's failure cancels
        it, its error coming out of the opener afterwards) leaves it to the outer handlers, which note
        the failure first."""
        try:
            # Started at once, so its start-up overlaps the real client's; spoken to once the client's
            # initialize says what it can do.
            async with self._opener() as (read, write):
                await self._requested.wait()
                read = _Watched(read)
                async with RelayingSession(read, write, relay=self._relay, client_info=self._client_info,
                                           version=self._version, capabilities=self._capabilities or
                                           types.ClientCapabilities(), **self._relay.callbacks(self._capabilities)
                                           ) as session, anyio.create_task_group() as tasks:
                    self.session = session
                    try:
                        with anyio.fail_after(self._init_timeout):
                            await self._start(session, tasks)
                    except TimeoutError:
                        # A server that died while starting says so rather than "did not answer".
                        ended = await self._describe_end() if self._describe_end is not None else None
                        self.failure = ended or (f"did not answer initialize within {self._init_timeout:g} seconds "
                                                 f"({self._unanswered})")
                    except MCPError as error:
                        self.failure = await self.ended(self._with_status(one_line(error.message)))
                    except Exception as error:  # an answer the SDK refuses (a tools/list it cannot read)
                        self.failure = f"answered initialize with what the MCP SDK cannot take: {one_line(str(error))}"
                    self._settled.set()
                    if self.failure is not None:
                        tasks.cancel_scope.cancel()
                        return
                    # Its read stream ends when it is gone (its process exited, its connection closed), a
                    # call in flight or not: noted now, so what waits on it is told (``Link.when_gone``).
                    await read.ended.wait()
                    await self.lost()
                    await anyio.sleep_forever()
        except Exception as error:  # it could not be started (no such command) or reached
            # The cause, not the text of the task group that carries it ("unhandled errors in a TaskGroup").
            self.failure = self.failure or f"could not be started: {self._with_status(_cause(error))}"
        finally:
            if not self._settled.is_set():
                # Cancelled before it was served, by no error of its own (the wrapper is leaving): a
                # request still waiting is told so, not given a session that never started.
                self.failure = self.failure or "closed before it answered initialize: the wrapper is stopping"
                self._settled.set()

    def _with_status(self, text: str) -> str:
        """``text`` with the last HTTP error status the upstream answered, when there is one it lacks."""
        status = self._status() if self._status is not None else None
        return f"{text} ({status})" if status and status not in text else text

    async def _start(self, session: RelayingSession, tasks: Any) -> None:
        """Initialize the upstream, ask it the real client's ``server/discover`` (when a 2026-era client
        asked one) and learn its tools; stop waiting for these (they go on on ``tasks``) when the upstream
        asks the real client something first: the client answers once its own first request is answered,
        so waiting would hold up both until the timeout (and ``discovered`` stays None).

        :raises Exception: what initialize or tools/list raised before that.
        """
        settle = anyio.Event()
        failed: list[Exception] = []

        async def learn() -> None:
            try:
                if self._discover is not None:
                    # Before its tools: a server that asks the client something while listing them would
                    # hold the probe's answer up until the client is there, and the client waits on it.
                    await self.probe(self._discover)
                await self.learn_tools()
            except Exception as error:  # once served, the client's own tools/list meets the same
                failed.append(error)
            finally:
                settle.set()

        # From the start: a server may ask as soon as its handshake ends (roots, as filesystem servers do).
        self._relay.asked_early = settle.set
        try:
            await session.initialize()
            self.agreed = session.protocol_version
            tasks.start_soon(learn)
            await settle.wait()
        finally:
            self._relay.asked_early = None
        if failed:
            raise failed[0]
        self.unlisted = not self.prepared


class _Watched(WrappedReadStream):
    """A transport's read stream, passed through as it is, that sets ``ended`` when it ends (or is closed)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.ended = anyio.Event()

    async def receive(self) -> Any:
        """The next item the transport read."""
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.ended.set()
            raise

    def closing(self) -> None:
        self.ended.set()

    def __getattr__(self, name: str) -> Any:
        # Whatever else an SDK release asks of its read stream (``receive_nowait``, ``statistics``) is the
        # stream's own: this wrapper only marks when it ends.
        if name == "_inner":  # (not set yet: no recursion)
            raise AttributeError(name)
        return getattr(self._inner, name)


def serve_wrapped(store: ToolOutputStore, session_id: Optional[str] = None, *,
                  command: Optional[Sequence[str]] = None, url: Optional[str] = None,
                  headers: Optional[dict[str, str]] = None, cwd: Optional[str] = None,
                  resource_link: bool = True, init_timeout: float = WRAP_INIT_TIMEOUT) -> None:
    """Serve the upstream (``command``, or the streamable-HTTP ``url``) wrapped, over this
    process's stdin and stdout, until the client closes stdin or a SIGTERM, SIGHUP or SIGINT.

    :raises ValueError: neither or both of ``command`` and ``url``, or an empty command.
    """
    if (command is None) == (url is None) or (command is not None and not command):
        raise ValueError("give a command or a url to wrap")
    relay = Relay()
    if command is not None:
        process = UpstreamProcess(command, cwd)
        link = OwnedLink(process.connect, relay, label=process.label, describe_end=process.describe_end,
                         init_timeout=init_timeout, unanswered=process.unanswered)
    else:
        assert url is not None
        upstream = _HttpUpstream(url, dict(headers or {}))
        link = OwnedLink(upstream.connect, relay, label=f"the upstream server at {url}", describe_end=None,
                         init_timeout=init_timeout, unanswered=upstream.unanswered, status=upstream.status,
                         abandoned=upstream.abandoned)
    _large_blocks_mapped()
    # On leaving, link.own is cancelled: the upstream's process group is ended on the way out.
    run_stdio(build_server(link, store, session_id, resource_link=resource_link, relay=relay), link.own)
