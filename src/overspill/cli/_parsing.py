"""The command line's parser (argparse, imported when a parser is built) and
the two commonest forms read without it (``run -- COMMAND...`` and
``read URI --all``)."""

from __future__ import annotations

from .. import __version__
from .._frontend import (DEFAULT_TIMEOUT, MAX_TIMEOUT, MCP_MAX_BYTES, MCP_MAX_LINES, WRAP_INIT_TIMEOUT,
                         decimal_integer, page_number)
from ._common import _COMMON_DEFAULTS, _SHARED, EXIT_USAGE, _past_shared, _UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse cost start-up; annotations are never evaluated
    import argparse
    from collections.abc import Callable, Collection, Sequence
    from typing import NoReturn, Optional, Union

    Adder = Callable[[str, str, Sequence[argparse.ArgumentParser]], Union[argparse.ArgumentParser, "_Detached"]]

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
    "wait": ["  0  success", "  1  --pattern matched no new line before the command ended or the timeout came",
             _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "kill": ["  0  success", _USAGE_LINE, _RESOURCE_LINE, _STORAGE_LINE],
    "jobs": ["  0  success", _USAGE_LINE, _STORAGE_LINE],
    "mcp": ["  0  the client closed the connection", "  128+N  the server got signal N", _USAGE_LINE,
            "  4  storage failure: the store cannot be opened or reached at start-up"],
}


def _exit_codes(command: str) -> str:
    codes = _COMMAND_EXIT_CODES.get(command)
    return _EXIT_CODES if codes is None else "exit codes:\n" + "\n".join(codes)


_SESSION_HELP = "session id (default: $OVERSPILL_SESSION, else 'cli')"
_MCP_SESSION_HELP = "session id shared across restarts (default: a fresh one per server)"
# The top level's names both, for the session given before any command.
_TOP_SESSION_HELP = ("session id (default: $OVERSPILL_SESSION, else 'cli'; mcp: a fresh one per server, "
                     "$OVERSPILL_SESSION ignored)")
_URL_HELP = ("keep outputs in Redis instead: redis://HOST:PORT/DB, rediss://... (TLS) or redis+cluster://HOST:PORT "
             "(default: $OVERSPILL_STORE_URL); a path or file:///PATH is a data folder")
_DATA_HELP = "data folder (default: $OVERSPILL_DATA_DIR, $XDG_DATA_HOME/overspill or ~/.local/share/overspill)"
# The help of each of the shared options (``_common._SHARED``; a test pins that each has one).
_SHARED_HELP = {"--session": _SESSION_HELP, "--data-dir": _DATA_HELP, "--store-url": _URL_HELP,
                "--json": "print one JSON object instead of text"}
_SHARED_NAMED = ", ".join(flag for flag, *_ in _SHARED[:-1]) + " and " + _SHARED[-1][0]
# --data-dir and --store-url are two spellings of one setting, the store's location.
_LOCATION = ("data_dir", "store_url")
_BEFORE = f"""shared options: {_SHARED_NAMED} (mcp: all but --json)
  come before the command or after it (overspill --data-dir DIR ls); given in
  both places, the one after the command wins (--data-dir and --store-url are
  one setting, the store's location: either after replaces either before)."""


class _Detached:
    """Stands for the parser of a command that ``_parser(only=...)`` leaves out:
    its arguments are not needed, so they are not built."""

    def add_argument(self, *args: object, **kwargs: object) -> None:
        pass




def _parser_class() -> type[argparse.ArgumentParser]:
    """``_Parser``: an ArgumentParser whose usage errors are one line on
    stderr and exit 2 (made on first use: argparse is imported then)."""
    global _Parser
    if _Parser is None:
        import argparse

        class Parser(argparse.ArgumentParser):
            def error(self, message: str) -> NoReturn:
                command = self.prog.partition(" ")[2]
                self.exit(EXIT_USAGE, f"overspill: error: {command + ': ' if command else ''}{message}\n")

        Parser.__name__ = Parser.__qualname__ = "_Parser"
        _Parser = Parser
    return _Parser


_Parser: Optional[type[argparse.ArgumentParser]] = None


def _commands_action() -> type[argparse.Action]:
    """argparse's sub-parsers action, refusing a shared option given before a
    command that does not take it (``overspill --json mcp``) in one line that
    names both, rather than passing it on unread.  A store location given after
    the command replaces the one given before, in either spelling (argparse
    alone would keep ``--store-url A`` beside ``--data-dir B``, then refused as both)."""
    import argparse

    class Commands(argparse._SubParsersAction):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: Sequence[str], option_string: Optional[str] = None) -> None:
            command = self._name_parser_map.get(values[0])
            if command is not None:
                taken = {action.dest for action in command._actions}
                for flag, dest, default, _ in _SHARED:
                    if dest not in taken and getattr(namespace, dest, default) != default:
                        parser.error(f"{flag} (given before the command) is not an option of {values[0]}")
            before = {dest: getattr(namespace, dest, None) for dest in _LOCATION}
            for dest in _LOCATION:
                setattr(namespace, dest, None)
            super().__call__(parser, namespace, values, option_string)  # sets only what the command was given
            if all(getattr(namespace, dest, None) is None for dest in _LOCATION):
                for dest, value in before.items():
                    setattr(namespace, dest, value)

    return Commands


def _integer(minimum: int, meaning: str):
    """An argparse type: an int of at least ``minimum``, written as a URI's query
    writes one (``decimal_integer``: no sign, space, ``_`` or other scripts' digits)."""

    def parse(text: str) -> int:
        value = decimal_integer(text, minimum)
        if value is None:
            import argparse  # already imported: this runs inside parse_args

            raise argparse.ArgumentTypeError(f"expected {meaning}, not {text!r}")
        return value

    return parse


_positive = _integer(1, "a positive integer")
_non_negative = _integer(0, "a non-negative integer")


def _page_offset(text: str) -> int:
    """An argparse type: ``read --offset``, taken by the rule of the URI's ``?offset=``
    (at most 18 digits) and refused with its line.  A _UsageError is no error argparse
    rewrites (it prefixes ``argument --offset:`` only to ArgumentTypeError, TypeError
    and ValueError): it reaches ``main``, which prints it as the URI's is printed."""
    return page_number("offset", text, _UsageError)


def _seconds(text: str) -> float:
    import argparse  # already imported: this runs inside parse_args

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def _non_negative_seconds(text: str) -> float:
    import argparse  # already imported: this runs inside parse_args

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, at least 0, not {text!r}")
    return value


def _add_shared(parser: argparse.ArgumentParser, session_help: str = _SESSION_HELP, json: bool = True) -> None:
    """Add the shared options to ``parser`` (the top level's or a command's).  None
    has a default of its own (SUPPRESS): a command's would overwrite what was given
    before the command, argparse copying the command's namespace over the top
    level's.  The top level's ``set_defaults`` fills in what neither gave."""
    import argparse

    for flag, dest, _, switch in _SHARED:
        help_text = session_help if flag == "--session" else _SHARED_HELP[flag]
        if not switch:
            parser.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=help_text)
        elif json:
            parser.add_argument(flag, dest=dest, action="store_true", default=argparse.SUPPRESS, help=help_text)


def _command_word(words: Sequence[str], commands: Collection[str]) -> Optional[str]:
    """The command ``words`` name after the shared options written before it, if
    plainly written (for ``_parser(only=...)``; else None, and the whole parser
    decides).  Any other option before it is refused here (``_misplaced``):
    argparse would take its value for the command and blame that."""
    rest = _past_shared(list(words))
    if not rest:
        return None
    word = rest[0]
    if word in commands:
        return word
    top = ("-h", "--help", "--version", *(flag for flag, *_ in _SHARED))
    if word.startswith("-") and word not in ("-", "--") and \
            not any(flag.startswith(word.partition("=")[0]) for flag in top):
        raise _UsageError(_misplaced(word, rest[1:]))
    return None


def _misplaced(word: str, later: Sequence[str]) -> str:
    """The line for ``word``, an option other than the shared ones written before
    the command (``later``: the words after it).  It goes after the command only
    if the command argparse sees takes it: the next word (argparse takes an
    unknown option for a switch), or, when that is no command and ``word`` has no
    ``=VALUE``, the word after it, as that command takes ``word``: with a value.
    (An error path: the whole parser is built to ask the command's.)"""
    option, equals, _ = word.partition("=")
    commands = next(action for action in _parser()._actions if action.dest == "command").choices
    action = None
    if later[:1] and later[0] in commands:
        command = later[0]
        action = commands[command]._option_string_actions.get(option)
    elif not equals and len(later) > 1 and later[1] in commands:
        command = later[1]
        action = commands[command]._option_string_actions.get(option)
        if action is not None and action.nargs == 0:  # a switch: the word between is no value of it
            action = None
    if action is not None:
        return (f"{option} goes after the command: overspill {command} {option} ... (only "
                f"{_SHARED_NAMED} may come before it)")
    return f"unrecognized option {option} (only {_SHARED_NAMED} may come before the command)"


def _parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's parser.  Given ``only`` (a command's name), the other
    commands' parsers are not built: each costs ``gettext`` look-ups, and
    together they were 4 ms of every call.  Such a parser takes the same
    arguments and gives the same help and errors for that command."""
    import argparse

    _Parser = _parser_class()
    common = _Parser(add_help=False)
    _add_shared(common)
    limits = _Parser(add_help=False)
    limits.add_argument("--max-lines", type=_positive, help="lines the preview may show (default 2000)")
    limits.add_argument("--max-bytes", type=_positive, help="bytes the preview may show (default 51200)")
    limits.add_argument("--max-tokens", type=_positive, help="o200k tokens the preview may take besides its "
                        "bytes (default: no token bound; needs pip install 'overspill[tokens]')")

    parser = _Parser(prog="overspill", description="Bound tool outputs for LLM agents: preview the head and "
                     "tail, keep the whole output, and read it back in pages.",
                     epilog=_BEFORE + "\n\n" + _EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"overspill {__version__}")
    _add_shared(parser, session_help=_TOP_SESSION_HELP)
    parser.set_defaults(**_COMMON_DEFAULTS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser,
                                     action=_commands_action())

    def add(name: str, help_text: str,
            parents: Sequence[argparse.ArgumentParser]) -> Union[argparse.ArgumentParser, _Detached]:
        if only is not None and name != only:
            return _Detached()
        return commands.add_parser(name, help=help_text, description=help_text, parents=list(parents),
                                   epilog=_exit_codes(name), formatter_class=argparse.RawDescriptionHelpFormatter)

    _add_run(add, common, limits)
    _add_background(add, common)
    _add_reading(add, common)
    _add_storing(add, common, limits)
    _add_mcp(add)
    return parser


# Each adds its commands' parsers through ``add`` (the ``_parser`` closure that
# builds only the command asked for), in the order help lists them.
def _add_run(add: Adder, common: argparse.ArgumentParser, limits: argparse.ArgumentParser) -> None:
    import argparse

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


def _add_background(add: Adder, common: argparse.ArgumentParser) -> None:
    wait = add("wait", "wait for a background command until it exits, a pattern appears in its new output, "
               "or the timeout; print the new output's preview and the offset to read on from", [common])
    wait.add_argument("uri", help="the command's handle, tool-output://ID")
    wait.add_argument("--timeout", type=_non_negative_seconds, default=30.0, help="seconds at most (default 30)")
    wait.add_argument("--pattern", help="return as soon as the new output (its last line even unfinished) "
                                        "matches this regular expression; exits 1 when none did")
    wait.add_argument("--offset", type=_non_negative, help="where the new output starts (default: its end now)")

    kill = add("kill", "end a background command's process group (SIGTERM, then SIGKILL after a grace)", [common])
    kill.add_argument("uri", help="the command's handle, tool-output://ID")

    add("jobs", "list this session's background commands: handle, state, bytes, age, exit code", [common])


def _add_reading(add: Adder, common: argparse.ArgumentParser) -> None:
    from ..config import MAX_READ_BYTES

    read = add("read", "print a page of a stored output, or all of it", [common])
    read.add_argument("uri", help="tool-output://ID")
    read.add_argument("--offset", type=_page_offset, help="byte offset of the page (default 0)")
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


def _add_storing(add: Adder, common: argparse.ArgumentParser, limits: argparse.ArgumentParser) -> None:
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


def _add_mcp(add: Adder) -> None:
    import argparse

    mcp = add("mcp", "serve the bash, read, grep, webfetch, wait, kill and jobs tools to an MCP client over "
              "stdio, or (--wrap, --wrap-url) another MCP server's tools with bounded, pageable results "
              "(needs the mcp extra: pip install 'overspill[mcp]')", [])
    _add_shared(mcp, session_help=_MCP_SESSION_HELP, json=False)
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
