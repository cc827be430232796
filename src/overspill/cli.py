"""The ``overspill`` command line: run, read, grep, truncate, ls, cleanup, stats, mcp, wait, kill, jobs.

Exit codes: the command's own for ``run``; otherwise 0 on success, 2 for
usage errors and bad input, 3 for an unknown, invalid or foreign resource,
4 for a storage failure.  Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn, Optional, TextIO, Union

from . import __version__, _kernels
from ._frontend import (DEFAULT_TIMEOUT, MAX_TIMEOUT, MCP_MAX_BYTES, MCP_MAX_LINES, WRAP_INIT_TIMEOUT,
                        end_of_resource, one_line, read_page)
from .config import MAX_READ_BYTES, resolve_limits
from .errors import (
    AccessDeniedError,
    ConfigError,
    InvalidResourceError,
    OverspillError,
    ResourceNotFoundError,
    StorageError,
)
from .store import ToolOutputStore
from .text import next_calls

if TYPE_CHECKING:
    from .capture import RunningCommand

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_RESOURCE = 3
EXIT_STORAGE = 4
_CHUNK = 1024 * 1024
_EXIT_CODES = """exit codes:
  0  success (run: the command's own exit code; 124 when it timed out;
     128+N when overspill got signal N, which it passed on to the command)
  2  usage error or bad input
  3  unknown, invalid or another session's resource
  4  storage failure (for example, the disk is full)"""
# Each command's --help lists the codes it can exit with, and only those.
_USAGE_LINE = "  2  usage error or bad input"
_RESOURCE_LINE = "  3  unknown, invalid or another session's resource"
_STORAGE_LINE = "  4  storage failure (for example, the disk is full, or the server cannot be reached)"
_COMMAND_EXIT_CODES = {
    "run": ["  N  the command's own exit code; 124 when it timed out; 128+N when overspill got",
            "     signal N (passed on to the command)", _USAGE_LINE,
            "  4  storage failure: the output could not be stored (the preview is still printed),",
            "     or the store's server cannot be reached (then the command is not run)"],
    "read": ["  0  success", _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "grep": ["  0  some line matched", "  1  no line matched", _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "truncate": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "ls": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "cleanup": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "stats": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "wait": ["  0  success", _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "kill": ["  0  success", _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "jobs": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "mcp": ["  0  the client closed the connection", "  128+N  the server got signal N", _USAGE_LINE,
            "  4  storage failure: the store cannot be opened or reached at start-up"],
}


def _exit_codes(command: str) -> str:
    codes = _COMMAND_EXIT_CODES.get(command)
    return _EXIT_CODES if codes is None else "exit codes:\n" + "\n".join(codes)


_SESSION_HELP = "session id (default: $OVERSPILL_SESSION, else 'cli')"
_URL_HELP = ("keep outputs in Redis instead: redis://HOST:PORT/DB, rediss://... (TLS) or redis+cluster://HOST:PORT "
             "(default: $OVERSPILL_STORE_URL); a path or file:///PATH is a data folder")
_DATA_HELP = "data folder (default: $OVERSPILL_DATA_DIR, $XDG_DATA_HOME/overspill or ~/.local/share/overspill)"


class _Detached:
    """Stands for the parser of a command that ``_parser(only=...)`` leaves out:
    its arguments are not needed, so they are not built."""

    def add_argument(self, *args: object, **kwargs: object) -> None:
        pass


class _UsageError(Exception):
    """Bad input found after parsing: reported like a usage error (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        self.exit(EXIT_USAGE, f"overspill: error: {command + ': ' if command else ''}{message}\n")


def _integer(minimum: int, meaning: str):
    """An argparse type: an int of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {meaning}, not {text!r}")
        return value

    return parse


_positive = _integer(1, "a positive integer")
_non_negative = _integer(0, "a non-negative integer")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, at least 0, not {text!r}")
    return value


def _parser(only: Optional[str] = None) -> _Parser:
    """The command line's parser.  Given ``only`` (a command's name), the other
    commands' parsers are not built: each costs ``gettext`` look-ups, and
    together they were 4 ms of every call.  Such a parser takes the same
    arguments and gives the same help and errors for that command."""
    common = _Parser(add_help=False)
    common.add_argument("--session", help=_SESSION_HELP)
    common.add_argument("--data-dir", help=_DATA_HELP)
    common.add_argument("--store-url", help=_URL_HELP)
    common.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    limits = _Parser(add_help=False)
    limits.add_argument("--max-lines", type=_positive, help="lines the preview may show (default 2000)")
    limits.add_argument("--max-bytes", type=_positive, help="bytes the preview may show (default 51200)")
    limits.add_argument("--max-tokens", type=_positive, help="o200k tokens the preview may take besides its "
                        "bytes (default: no token bound; needs pip install 'overspill[tokens]')")

    parser = _Parser(prog="overspill", description="Bound tool outputs for LLM agents: preview the head and "
                     "tail, keep the whole output, and read it back in pages.",
                     epilog=_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"overspill {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help_text: str,
            parents: Sequence[argparse.ArgumentParser]) -> Union[argparse.ArgumentParser, _Detached]:
        if only is not None and name != only:
            return _Detached()
        return commands.add_parser(name, help=help_text, description=help_text, parents=list(parents),
                                   epilog=_exit_codes(name), formatter_class=argparse.RawDescriptionHelpFormatter)

    run = add("run", "run a command and print its bounded output (stdout and stderr as one stream, "
              "stored whole when over the limits); exits with the command's exit code, 124 on timeout",
              [common, limits])
    run.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT,
                     help=f"seconds before it is stopped (default {DEFAULT_TIMEOUT:g})")
    run.add_argument("--spill", dest="spill", action="store_true", default=True,
                     help="store the whole output, however large (the default)")
    run.add_argument("--no-spill", dest="spill", action="store_false",
                     help="keep only what fits in memory (the first and last 512 KiB)")
    run.add_argument("--background", action="store_true",
                     help="run on after overspill returns, owned by a small detached supervisor; prints the "
                          "handle (tool-output://ID) to read, wait for and kill (timeout does not apply)")
    run.add_argument("--yield-after", type=_non_negative_seconds, default=None, metavar="SECONDS",
                     help="with --background: seconds to wait for the command first (default 10); one that "
                          "ends sooner is an ordinary result")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]",
                     help="the command: one argument runs through the shell; several run as they are")

    wait = add("wait", "wait for a background command until it exits, a pattern appears in its new output, "
               "or the timeout; print the new output's preview and the offset to read on from", [common])
    wait.add_argument("uri", help="the command's handle, tool-output://ID")
    wait.add_argument("--timeout", type=_non_negative_seconds, default=30.0, help="seconds at most (default 30)")
    wait.add_argument("--pattern", help="return as soon as a new line matches this regular expression; "
                                        "exits 1 when none did")
    wait.add_argument("--offset", type=_non_negative, help="where the new output starts (default: its end now)")

    kill = add("kill", "end a background command's process group (SIGTERM, then SIGKILL after a grace)", [common])
    kill.add_argument("uri", help="the command's handle, tool-output://ID")

    add("jobs", "list this session's background commands: handle, state, bytes, age, exit code", [common])

    read = add("read", "print a page of a stored output, or all of it", [common])
    read.add_argument("uri", help="tool-output://ID")
    read.add_argument("--offset", type=_non_negative, help="byte offset of the page (default 0)")
    read.add_argument("--limit", type=_positive, help=f"bytes in the page (default and most {MAX_READ_BYTES})")
    read.add_argument("--all", action="store_true", help="write the whole resource, its exact bytes, to stdout")

    grep = add("grep", "search a stored output as text: each matching line with its byte offset (offset:line), "
               "then the count of matching lines; exits 1 when nothing matches", [common])
    grep.add_argument("uri", help="tool-output://ID")
    grep.add_argument("pattern", help="a Python regular expression, matched against each line's text")
    grep.add_argument("-i", "--ignore-case", action="store_true", help="match regardless of case")
    grep.add_argument("-C", "--context", type=_non_negative, default=0, metavar="N",
                      help="lines shown before and after each match (offset-line)")
    grep.add_argument("-m", "--max-count", type=_positive, default=100, metavar="N",
                      help="matching lines listed (default 100; all are counted)")

    truncate = add("truncate", "bound any text (a file, or stdin of any size) and print the preview",
                   [common, limits])
    truncate.add_argument("file", nargs="?", default="-", help="a file, or - for stdin (the default)")
    truncate.add_argument("--name", help="a name to store with the resource")

    ls = add("ls", "list stored outputs with size, age, name and session", [common])
    ls.add_argument("--all-sessions", action="store_true", help="every session's, not only this one's")

    cleanup = add("cleanup", "remove expired outputs and leftovers", [common])
    cleanup.add_argument("--dry-run", action="store_true", help="only report what would be removed")

    add("stats", "count, bytes, oldest and per-session totals of stored outputs (with --session: that "
        "session's only)", [common])

    mcp = add("mcp", "serve the bash, read, grep, webfetch, wait, kill and jobs tools to an MCP client over "
              "stdio, or (--wrap, --wrap-url) another MCP server's tools with bounded, pageable results "
              "(needs the mcp extra: pip install 'overspill[mcp]')", [])
    mcp.add_argument("--session", help="session id shared across restarts (default: a fresh one per server)")
    mcp.add_argument("--data-dir", help=_DATA_HELP)
    mcp.add_argument("--store-url", help=_URL_HELP)
    mcp.add_argument("--cwd", help="folder commands run in and relative paths start from (default: the current one)")
    mcp.add_argument("--max-lines", type=_positive, help=f"lines a preview may show (default {MCP_MAX_LINES})")
    mcp.add_argument("--max-bytes", type=_positive, help=f"bytes a preview may show (default {MCP_MAX_BYTES})")
    mcp.add_argument("--max-tokens", type=_positive, help="o200k tokens a preview may take besides its bytes "
                     "(default: no token bound; needs pip install 'overspill[tokens]')")
    mcp.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT,
                     help=f"seconds a command runs when the model names no timeout (default {DEFAULT_TIMEOUT:g}, "
                          f"at most {MAX_TIMEOUT:g})")
    mcp.add_argument("--wrap", action="store_true",
                     help="serve the MCP server started by COMMAND (after --) with bounded, pageable results "
                          "instead of overspill's own tools")
    mcp.add_argument("--wrap-url", metavar="URL",
                     help="serve the streamable-HTTP MCP server at URL with bounded, pageable results")
    mcp.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                     help="an HTTP header for --wrap-url (repeatable)")
    mcp.add_argument("--no-resource-link", dest="resource_link", action="store_false", default=True,
                     help="with --wrap/--wrap-url: leave the resource_link block out of bounded results "
                          "(the marker still names the URI), for clients that refuse it")
    mcp.add_argument("--init-timeout", type=_seconds, default=WRAP_INIT_TIMEOUT,
                     help="with --wrap/--wrap-url: seconds the server has to answer initialize "
                          f"(default {WRAP_INIT_TIMEOUT:g})")
    mcp.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]",
                     help="with --wrap: the MCP server's command and its arguments")
    return parser


def _config(args: argparse.Namespace) -> dict[str, Any]:
    return {"tool_output": {key: value for key, value in (("max_lines", getattr(args, "max_lines", None)),
                                                         ("max_bytes", getattr(args, "max_bytes", None)),
                                                         ("max_tokens", getattr(args, "max_tokens", None)))
                            if value is not None}}


def _reader(args: argparse.Namespace) -> ToolOutputStore:
    """The store for ls, stats, read and cleanup: a missing data folder is not
    created by them; it holds no stored outputs."""
    return _store(args, create=False)


def _store(args: argparse.Namespace, create: bool = True, config: Optional[dict[str, Any]] = None) -> ToolOutputStore:
    if args.data_dir is not None and args.store_url is not None:
        raise _UsageError("give --data-dir or --store-url, not both")
    config = _config(args) if config is None else config
    if args.store_url is not None:
        from .backends._location import check_url

        check_url(args.store_url, "--store-url")  # a wrong URL is named as the flag that gave it
        return ToolOutputStore(url=args.store_url, config=config)
    return ToolOutputStore(args.data_dir, config=config, create=create)


def _on_a_server(args: argparse.Namespace) -> bool:
    """Whether the store these arguments name is a server (which can be unreachable)."""
    from .backends._location import locate

    return locate(args.data_dir, args.store_url).url is not None


def _cli_calls(args: argparse.Namespace, uri: str, offset: int) -> str:
    """The marker's last line as shell commands: read on at ``offset``, or grep."""
    options: list[str] = []
    for option, value in (("--session", args.session), ("--data-dir", args.data_dir),
                          ("--store-url", args.store_url)):
        if value is not None:
            options += [option, str(value)]
    return (f"next: {shlex.join(['overspill', 'read', uri, '--offset', str(offset), *options])}  or  "
            f"{shlex.join(['overspill', 'grep', uri, *options])} PATTERN")


def _for_the_shell(args: argparse.Namespace, text: str, uri: Optional[str], offset: Optional[int]) -> str:
    """``text`` with its marker's model calls (``read(resource=...)``) written
    as the commands that do the same here."""
    if uri is None or offset is None:
        return text
    return text.replace(next_calls(uri, offset), _cli_calls(args, uri, offset), 1)


def _session(args: argparse.Namespace) -> str:
    return args.session or os.environ.get("OVERSPILL_SESSION") or "cli"


def _as_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _as_json(getattr(value, field.name)) for field in dataclasses.fields(value)
                if field.repr}
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _shown(text: str) -> str:
    """``text`` with every non-printable character (controls, escape codes,
    bidi overrides) written as a Python escape: names and session ids come from
    callers, and printed raw they could drive the terminal."""
    if text.isprintable():
        return text
    return "".join(character if character.isprintable() else _escape(character) for character in text)


# json.dumps escapes U+0000-U+001F itself; DEL and the C1 controls (U+009B is
# an escape sequence introducer on some terminals) are escaped here.
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}


def _stdout() -> TextIO:
    """Standard output; an OSError (exit 4, one line) when the caller closed
    it (``>&-``), for which Python sets ``sys.stdout`` to None."""
    if sys.stdout is None:
        raise OSError("standard output is closed: nothing could be written")
    return sys.stdout


def _print_json(value: Any) -> None:
    import json  # only --json needs it

    _stdout().write(json.dumps(_as_json(value), ensure_ascii=False).translate(_JSON_CONTROLS) + "\n")


def _print_text(text: str) -> None:
    _stdout().write(text if text.endswith("\n") else text + "\n")


def _exit_status(exit_code: int) -> int:
    return 128 - exit_code if exit_code < 0 else min(exit_code, 255)


_FORWARDED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))
EXIT_TIMEOUT = 124  # as timeout(1)


class _Forwarder:
    """Signal handlers that pass SIGTERM, SIGHUP and SIGINT on to the running
    command's process group, so nothing it started outlives ``overspill run``."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._running: Optional[RunningCommand] = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Forwarder:
        for signum in _FORWARDED_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        self.received.append(signum)
        if self._running is not None:
            self._running.send_signal(signum)

    def started(self, running: RunningCommand) -> None:
        self._running = running
        for signum in self.received[:1]:  # a signal that came before the command did
            running.send_signal(signum)


def _command_run(args: argparse.Namespace) -> int:
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv or (len(argv) == 1 and not argv[0].strip()):
        raise _UsageError("run needs a command after --")
    command = argv[0] if len(argv) == 1 else shlex.join(argv)
    if args.background:
        return _run_background(args, command)
    if args.yield_after is not None:
        raise _UsageError("run: --yield-after applies to --background only")
    # Imported here: the tools bring the capture machinery (subprocess, selectors),
    # which no other command needs.
    from .tools.bash import execute

    from .tools.bash import start_failure

    limits = resolve_limits(_config(args))
    store: Optional[ToolOutputStore]
    try:
        store = _store(args)
        store_error = None
    except StorageError as error:
        if _on_a_server(args):
            raise  # a server that cannot be reached: exit 4 before the command runs, not after
        store, store_error = None, str(error)  # a folder that cannot be written: the preview still shows
    with _Forwarder() as forwarder:
        try:
            ran = execute(store, _session(args), f"cli-{time.time_ns()}", command, timeout=args.timeout,
                          spill=args.spill, inherit_stdin=True, limits=limits, started=forwarder.started,
                          name=_shortened(command, _NAME_CHARACTERS))
        except StorageError:
            raise
        except (OSError, ValueError) as error:
            raise _UsageError(start_failure(error)) from None
        # Not opening the store matters only when the output needed storing.
        storage_error = (store_error or ran.storage_error) if ran.storage_error is not None else None
        if args.json:
            _print_json(ran.tool_result(args.timeout))
        else:
            # The preview (from memory if it could not be stored), its next calls as commands.
            _print_text(_for_the_shell(args, ran.text(args.timeout),
                                       None if ran.resource is None else ran.resource.uri,
                                       ran.marker.get("next_offset")))  # type: ignore[arg-type]
        _stdout().flush()
    if storage_error is not None:
        return _fail(EXIT_STORAGE, f"the output could not be kept: {storage_error}")
    if forwarder.received:
        return 128 + forwarder.received[0]
    if ran.process.timed_out:
        return EXIT_TIMEOUT
    return _exit_status(ran.process.exit_code)


def _run_background(args: argparse.Namespace, command: str) -> int:
    """``run --background``: a detached supervisor owns the command; answer as the bash tool does."""
    import json
    import subprocess

    from .tools.jobs import YIELD_AFTER, background_answer

    if args.data_dir is not None and args.store_url is not None:
        raise _UsageError("give --data-dir or --store-url, not both")
    store = _store(args)
    session = _session(args)
    store.check_background(session)  # a clear error now, not from the supervisor
    spec = {"data_dir": None if args.data_dir is None else os.path.abspath(args.data_dir), "url": args.store_url,
            "session": session, "call": f"cli-{time.time_ns()}", "command": command, "cwd": os.getcwd(),
            "config": _config(args)}
    try:
        supervisor = subprocess.Popen([sys.executable, "-m", "overspill._supervisor", json.dumps(spec)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      start_new_session=True, close_fds=True)
    except OSError as error:
        raise _UsageError(f"could not start the supervisor: {error.strerror or error}") from None
    assert supervisor.stdout is not None
    with supervisor.stdout:
        line = supervisor.stdout.readline().decode("utf-8", "replace").strip()
    status, _, rest = line.partition(" ")
    if status != "ok":
        supervisor.wait()
        raise _UsageError(f"could not run the command: {rest or 'the supervisor failed to start'}")
    uri, _, pid = rest.partition(" ")
    deadline = time.monotonic() + (YIELD_AFTER if args.yield_after is None else args.yield_after)
    while store.status(session, uri).state == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    answer = background_answer(store, session, uri, resolve_limits(_config(args)), pid=int(pid))
    if args.json:
        _print_json(answer)
    else:
        _print_text(answer.output)
    if answer.is_error:
        return EXIT_STORAGE
    if answer.metadata.get("state") == "exited":
        return _exit_status(answer.metadata["exit_code"])
    return 0


def _command_wait(args: argparse.Namespace) -> int:
    from .tools.jobs import wait

    store = _reader(args)
    session = _session(args)
    store.status(session, args.uri)  # an unknown or foreign handle: exit 3
    answer = wait(store, session, f"cli-{time.time_ns()}", args.uri, args.timeout, args.pattern, offset=args.offset,
                  budget=float("inf"))
    _print_answer(args, answer)
    return 1 if args.pattern is not None and answer.metadata.get("match") is None else 0


def _command_kill(args: argparse.Namespace) -> int:
    from .tools.jobs import kill

    store = _reader(args)
    session = _session(args)
    store.status(session, args.uri)
    _print_answer(args, kill(store, session, f"cli-{time.time_ns()}", args.uri))
    return 0


def _print_answer(args: argparse.Namespace, answer: Any) -> None:
    """A tool's answer: its text (or, with --json, all of it); a failure is a usage error."""
    if answer.is_error:
        raise _UsageError(answer.output)
    if args.json:
        _print_json(answer)
    else:
        _print_text(answer.output)


def _command_jobs(args: argparse.Namespace) -> int:
    from .tools.jobs import jobs

    answer = jobs(_reader(args), _session(args), f"cli-{time.time_ns()}")
    if answer.is_error:
        raise _UsageError(answer.output)
    if args.json:
        _print_json({"jobs": answer.metadata["jobs"]})
    else:
        _print_text(answer.output)
    return 0


# How much of a command ``overspill run`` records as its output's name (``ls`` shows it).
_NAME_CHARACTERS = 80


def _shortened(text: str, characters: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= characters else text[: characters - 1] + "…"


def _write_all(out: BinaryIO, chunks: Iterator[memoryview]) -> None:
    for chunk in chunks:
        out.write(chunk)
    out.flush()


def _continue_command(args: argparse.Namespace, uri: str, offset: int, limit: Optional[int]) -> str:
    """The command that reads on from ``offset``: the same session, folder and page size as this one."""
    words = ["overspill", "read", uri, "--offset", str(offset)]
    for option, value in (("--limit", limit), ("--session", args.session), ("--data-dir", args.data_dir),
                          ("--store-url", args.store_url)):
        if value is not None:
            words += [option, str(value)]
    return shlex.join(words)


def _note(message: str) -> None:
    """A one-line note on stderr that is not an error."""
    if sys.stderr is not None:
        sys.stderr.write(f"overspill: note: {_shown(one_line(message))}\n")


def _command_read(args: argparse.Namespace) -> int:
    from .records import parse_page_uri

    uri, query_offset, query_limit = parse_page_uri(args.uri)  # tool-output://ID?offset=N&limit=M, as MCP's
    for name, given, queried in (("offset", args.offset, query_offset), ("limit", args.limit, query_limit)):
        if given is not None and queried is not None and given != queried:
            raise _UsageError(f"read: the URI says {name}={queried} and --{name} says {given}; give one")
    offset_given = args.offset if args.offset is not None else query_offset
    limit = args.limit if args.limit is not None else query_limit
    if args.all and (offset_given is not None or limit is not None):
        raise _UsageError("read: --all writes the whole resource; it takes no --offset or --limit")
    store = _reader(args)
    session = _session(args)
    if args.all and args.json:
        with store.view(session, uri) as (resource, data):
            _print_json({"resource": resource, "content": str(data, "utf-8", "replace")})
        return 0
    if args.all:
        # Verified range by range as it is written: the first bytes go out at
        # once and memory stays flat, whatever the size.
        _write_all(_stdout().buffer, store.iter_bytes(session, uri))
        return 0
    if limit is not None and limit > MAX_READ_BYTES:
        _note(f"--limit {limit} is more than a page holds: clamped to {MAX_READ_BYTES} bytes")
        limit = None  # the most, which is the default: the hint need not repeat it
    offset = offset_given or 0
    page = read_page(store, session, uri, offset, limit)
    if args.json:
        _print_json(page)
    elif page.next is None and not page.complete:
        # A background command still running: its output so far ends here.
        _print_text(f"{page.content}\n\n[complete: false; the output so far ends at byte {page.resource.size}: "
                    f"{_continue_command(args, page.resource.uri, page.resource.size, limit)} later, or overspill wait]")
    elif page.next is None:
        if page.offset >= page.resource.size and page.resource.size:
            # One rule everywhere: at or past the end is an empty last page (no next), not an error.
            _note(end_of_resource(page.resource, offset))
            return 0
        _print_text(page.content)
    else:
        _print_text(f"{page.content}\n\n[{page.resource.size - page.next} more bytes: "
                    f"{_continue_command(args, page.resource.uri, page.next, limit)}]")
    return 0


def _command_grep(args: argparse.Namespace) -> int:
    from .tools.grep import search_resource

    from .records import parse_page_uri

    uri = parse_page_uri(args.uri)[0]
    store = _store(args)
    try:
        found = search_resource(store, _session(args), uri, args.pattern, ignore_case=args.ignore_case,
                                context=args.context, max_matches=args.max_count)
    except OverspillError:
        raise
    except ValueError as error:  # a bad pattern
        raise _UsageError(str(error)) from None
    if args.json:
        _print_json({"lines": list(found.lines), "total": found.total, "listed": found.listed})
    elif found.lines:
        more = f"; {found.total - found.listed} not listed (raise --max-count)" if found.total > found.listed else ""
        listing = "\n".join(found.lines) + f"\n[{_count(found.total, 'matching line')}{more}]"
        # Bounded like any output: a long listing is stored whole and previewed, with where to read on.
        bounded = store.truncate(_session(args), f"cli-{time.time_ns()}", listing,
                                 name=_shortened(f"grep {args.pattern} {uri}", _NAME_CHARACTERS))
        _print_text(_for_the_shell(args, bounded.content, None if bounded.resource is None else bounded.resource.uri,
                                   bounded.next_offset))
    return 0 if found.total else 1


def _chunks_of(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def _command_truncate(args: argparse.Namespace) -> int:
    store = _store(args)
    session = _session(args)
    call = f"cli-{time.time_ns()}"
    name = args.name if args.name is not None else (None if args.file == "-" else os.path.basename(args.file))
    if args.file == "-":
        result = store.truncate_stream(session, call, _chunks_of(sys.stdin.buffer), name=name)
    else:
        try:
            source = open(args.file, "rb")
        except OSError as error:
            raise _UsageError(f"cannot read {args.file}: {error.strerror}") from None
        with source:
            result = store.truncate_stream(session, call, _chunks_of(source), name=name)
    if args.json:
        _print_json(result)
    else:
        _print_text(_for_the_shell(args, result.content, None if result.resource is None else result.resource.uri,
                                   result.next_offset))
    return 0


def _age(created_ms: float) -> str:
    seconds = max(time.time() - created_ms / 1000, 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _command_ls(args: argparse.Namespace) -> int:
    store = _reader(args)
    records = store.records(None if args.all_sessions else _session(args))
    if args.json:
        _print_json({"resources": [{"uri": r.resource.uri, "size": r.resource.size, "lines": r.lines,
                                    "mime": r.resource.mime,
                                    "name": r.resource.name, "session": r.session_id,
                                    "tool_call": r.tool_call_id, "created": r.created_ms} for r in records]})
        return 0
    if not records:
        _print_text("no stored outputs")
        return 0
    rows = [(r.resource.uri, str(r.resource.size), "-" if r.lines is None else str(r.lines), _age(r.created_ms),
             _shown(r.resource.name or "-"), _shown(r.session_id)) for r in records]
    header = ("URI", "BYTES", "LINES", "AGE", "NAME", "SESSION")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    for row in [header, *rows]:
        _stdout().write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _command_cleanup(args: argparse.Namespace) -> int:
    from .records import uri_for

    store = _reader(args)
    report = store.cleanup(dry_run=args.dry_run)
    if args.json:
        # ``uris``: what was (with --dry-run: would be) removed, by URI.
        _print_json({**_as_json(report), "dry_run": args.dry_run,
                     "uris": [uri_for(resource_id) for resource_id in report.removed_ids]})
    elif report.busy:
        _print_text(f"another process is cleaning {'this store' if store.url else 'this folder'}; nothing done")
    else:
        verb = "would remove" if args.dry_run else "removed"
        # A folder's leftovers are temporary files; a server's, the keys of writers that died.
        leftovers = _count(report.temporaries, "unfinished write" if store.url else "leftover file")
        parts = [_count(report.removed, "output")] + ([leftovers] if report.temporaries else [])
        left = (f"; {report.skipped} {'entry' if report.skipped == 1 else 'entries'} could not be removed"
                if report.skipped else "")
        _print_text(f"{verb} {' and '.join(parts)}, {_count(report.bytes_freed, 'byte')}{left}")
    return 0


def _command_stats(args: argparse.Namespace) -> int:
    store = _reader(args)
    # --session names one session (as for ls); without it, every session's totals.
    only = args.session
    records = store.records(only)
    sessions: dict[str, dict[str, int]] = {}
    for record in records:
        entry = sessions.setdefault(record.session_id, {"count": 0, "bytes": 0, "lines": 0})
        entry["count"] += 1
        entry["bytes"] += record.resource.size
        entry["lines"] += record.lines or 0  # records of other tools do not say
    oldest = min((record.created_ms for record in records), default=None)
    summary = {"count": len(records), "bytes": sum(r.resource.size for r in records),
               "lines": sum(r.lines or 0 for r in records),
               "oldest": None if oldest is None else int(oldest), "sessions": sessions,
               "quota": store.limits().max_total_bytes}
    if args.json:
        _print_json(summary)
        return 0
    lines = [f"{_count(summary['count'], 'output')}, {summary['bytes']} bytes, {_count(summary['lines'], 'line')}"]
    if oldest is not None:
        lines.append(f"oldest: {_age(oldest)} ago")
    quota = summary["quota"]
    if only is None:  # the quota counts every session's outputs
        lines.append(f"quota: {summary['bytes']} of {quota} bytes used ({100 * summary['bytes'] / quota:.1f}%); "
                     "the oldest outputs go first when a new one needs the room")
    lines += [f"  {_shown(session)}: {_count(entry['count'], 'output')}, {entry['bytes']} bytes, "
              f"{_count(entry['lines'], 'line')}"
              for session, entry in sessions.items()]
    _print_text("\n".join(lines))
    return 0


def _command_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    try:
        installed = importlib.util.find_spec("mcp") is not None  # without importing it (a second's work)
    except (ImportError, ValueError):
        installed = False
    if not installed:
        raise _UsageError("overspill mcp needs the mcp extra: pip install 'overspill[mcp]'")
    if args.session is not None and not args.session.strip():
        raise _UsageError("--session must not be empty")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        raise _UsageError(f"--cwd {args.cwd} is not a folder")
    if args.timeout > MAX_TIMEOUT:
        raise _UsageError(f"--timeout must be at most {MAX_TIMEOUT:g} seconds, not {args.timeout:g}")
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    wrapping = args.wrap or args.wrap_url is not None
    if args.wrap and args.wrap_url is not None:
        raise _UsageError("give --wrap -- COMMAND or --wrap-url URL, not both")
    if args.wrap and not argv:
        raise _UsageError("--wrap needs the server's command after --, e.g. overspill mcp --wrap -- "
                          "python -m mcp_server_git")
    if argv and not args.wrap:
        raise _UsageError(f"unexpected arguments {shlex.join(argv)}: a command to wrap follows --wrap --")
    if args.header and args.wrap_url is None:
        raise _UsageError("--header goes with --wrap-url")
    if not args.resource_link and not wrapping:
        raise _UsageError("--no-resource-link goes with --wrap or --wrap-url")
    try:
        from . import mcp_server  # the SDK is imported only here, never by ``import overspill``
        if wrapping:
            from . import mcp_upstream
    except ImportError as error:  # an mcp too old or broken to serve
        raise _UsageError(f"overspill mcp needs the mcp extra (mcp>=2.3,<3): pip install 'overspill[mcp]' "
                          f"({error})") from None
    if args.wrap_url is not None and not args.wrap_url.startswith(("http://", "https://")):
        raise _UsageError(f"--wrap-url must be an http:// or https:// URL, not {args.wrap_url!r}")
    try:
        headers = dict(mcp_upstream.parse_header(text) for text in args.header) if wrapping else {}
    except ValueError as error:
        raise _UsageError(str(error)) from None

    # Opened (a server connected to) before serving: an unreachable store is exit 4 at start-up.
    store = _store(args, config=mcp_server.limits_config(args.max_lines, args.max_bytes,
                                                         max_tokens=args.max_tokens))
    with store:
        if wrapping:
            mcp_upstream.serve_wrapped(store, args.session, command=argv if args.wrap else None, url=args.wrap_url,
                                       headers=headers, cwd=args.cwd, resource_link=args.resource_link,
                                       init_timeout=args.init_timeout)
        else:
            mcp_server.serve(store, args.session, cwd=args.cwd, timeout=args.timeout)
    return 0


_COMMANDS = {"run": _command_run, "read": _command_read, "grep": _command_grep, "truncate": _command_truncate,
             "ls": _command_ls, "cleanup": _command_cleanup, "stats": _command_stats, "mcp": _command_mcp,
             "wait": _command_wait, "kill": _command_kill, "jobs": _command_jobs}


def _fail(status: int, message: str) -> int:
    if sys.stderr is None:  # closed by the caller (2>&-): the status alone tells
        return status
    sys.stderr.write(f"overspill: error: {_shown(one_line(message))}\n")
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; return (and, as a console script, exit with) its status."""
    try:
        _kernels.requested()  # a bad OVERSPILL_IMPLEMENTATION is one line, whatever the command
    except ConfigError as error:
        return _fail(EXIT_USAGE, str(error))
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        if words == ["--version"]:
            # What argparse's version action prints, without building seven sub-parsers first.
            _stdout().write(f"overspill {__version__}\n")
            return 0
        if not words:  # bare ``overspill``: what it can do, and how to ask
            _stdout().write(_parser().format_help())
            return EXIT_USAGE
        args = _parser(words[0] if words and words[0] in _COMMANDS else None).parse_args(words)
        return _COMMANDS[args.command](args)
    except _UsageError as error:
        return _fail(EXIT_USAGE, str(error))
    except (InvalidResourceError, ResourceNotFoundError, AccessDeniedError) as error:
        return _fail(EXIT_RESOURCE, str(error))
    except ConfigError as error:
        return _fail(EXIT_USAGE, str(error))
    except StorageError as error:
        return _fail(EXIT_STORAGE, str(error))
    except OverspillError as error:
        return _fail(EXIT_USAGE, str(error))
    except BrokenPipeError:
        # The reader (head, less) went away: not an error; keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    # Whatever else goes wrong is still one line: bad input (an over-long
    # session id, OVERSPILL_IMPLEMENTATION=cython without the extension) is
    # exit 2, a failure of the system (reading stdin, a full disk) exit 4.
    except (ValueError, TypeError, ImportError) as error:
        return _fail(EXIT_USAGE, str(error))
    except OSError as error:
        return _fail(EXIT_STORAGE, str(error))
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


if __name__ == "__main__":  # pragma: no cover - python -m overspill.cli
    sys.exit(main())
