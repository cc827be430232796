"""What every command of the command line shares: exit codes, the store it
opens, the session, output (text, JSON, notes) and the marker's next calls
written as shell commands."""

from __future__ import annotations

import os
import sys

# (Names and session ids come from callers: printed raw they could drive the terminal.)
from .._frontend import one_line, printable as _shown

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse cost start-up; annotations are never evaluated
    import argparse
    from collections.abc import Iterator
    from typing import Any, BinaryIO, Optional, TextIO

    from ..store import ToolOutputStore

EXIT_USAGE = 2
EXIT_RESOURCE = 3
EXIT_STORAGE = 4
EXIT_TIMEOUT = 124  # as timeout(1)
_CHUNK = 1024 * 1024
# The options every command shares (mcp: all but --json), written before the command
# or after it: (flag, dest, default, switch).  A switch takes no value; each other one
# value.  The parser (_parsing, which keeps their help) and the argparse-free forms
# read this one table.
_SHARED = (("--session", "session", None, False), ("--data-dir", "data_dir", None, False),
           ("--store-url", "store_url", None, False), ("--json", "json", False, True))
# What they hold when given neither before nor after the command.
_COMMON_DEFAULTS = {dest: default for _, dest, default, _ in _SHARED}


def _past_shared(words: list[str]) -> list[str]:
    """``words`` from the command on: past the shared options plainly written
    before it (``--data-dir D`` or ``--data-dir=D``; abbreviations are left to
    argparse).  Its first word is the command, if it names one."""
    index = 0
    while index < len(words):
        flag, equals, _ = words[index].partition("=")
        entry = next((entry for entry in _SHARED if entry[0] == flag), None)
        if entry is None:
            break
        index += 1 if equals or entry[3] else 2
    return words[index:]


class _UsageError(Exception):
    """Bad input found after parsing: reported like a usage error (exit 2)."""



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
    from ..store import ToolOutputStore

    if args.data_dir is not None and args.store_url is not None:
        raise _UsageError("give --data-dir or --store-url, not both")
    config = _config(args) if config is None else config
    if args.store_url is not None:
        from ..backends._location import check_url

        check_url(args.store_url, "--store-url")  # a wrong URL is named as the flag that gave it
        return ToolOutputStore(url=args.store_url, config=config)
    return ToolOutputStore(args.data_dir, config=config, create=create)


def _on_a_server(args: argparse.Namespace) -> bool:
    """Whether the store these arguments name is a server (which can be unreachable)."""
    from ..backends._location import locate

    return locate(args.data_dir, args.store_url).url is not None


def _common_options(args: argparse.Namespace) -> list[str]:
    """The options a follow-up command needs to find the same resource.  A store URL's
    password (and query) is shown as ``***``: the hints go into model contexts and logs
    (give the URL in ``OVERSPILL_STORE_URL`` and the hints need none).  A data folder is
    given as an absolute path: a hint run from another working folder finds the same one."""
    options: list[str] = []
    for option, value in (("--session", args.session), ("--data-dir", args.data_dir),
                          ("--store-url", args.store_url)):
        if value is not None:
            if option == "--store-url":
                value = _without_secrets(str(value))
            elif option == "--data-dir":
                value = _absolute(value)
            options += [option, str(value)]
    return options


def _absolute(path: str) -> str:
    """``path`` joined to the working folder, as the OS would resolve it from here: not normalised
    (``link/../dd`` is the folder beside the link's target, which ``abspath`` would miss); as it is
    when the working folder was removed."""
    try:
        return os.path.join(os.getcwd(), path)
    except FileNotFoundError:
        return path


def _without_secrets(url: str) -> str:
    """``url``, or where it holds a password (after the user name, or as a query's
    ``password``) the form errors show it in, with ``***``."""
    from ..backends._urls import redacted_url

    shown = redacted_url(url)
    if "***" in shown or shown.startswith("<") or "password" in url.partition("?")[2].lower():
        return shown
    return url


def _shell_join(words: list[str]) -> str:
    """``shlex.join(words)``, safe to print: a word with a non-printable character
    (a session id or folder given by the caller) is written in ANSI-C quoting
    (``$'...'``: bash, zsh, ksh, POSIX sh since 2024),
    so no control character reaches the terminal and the shell reads the word
    back as it was, in every locale: each non-printable character is its UTF-8
    bytes as ``\\xNN`` (a byte that was not UTF-8, surrogateescape's, is that
    byte); a printable one stays literal."""
    import shlex

    return " ".join(shlex.quote(word) if word.isprintable() else _ansi_c_quoted(word) for word in words)


def _ansi_c_quoted(word: str) -> str:
    out = []
    for character in word:
        if character in "\\'":
            out.append("\\" + character)
        elif character.isprintable():
            # Its UTF-8 bytes, written raw: bash passes them on as they are whatever the locale.
            out.append(character)
        else:
            # ``\xNN`` is one byte in every locale, where ``\uNNNN`` is encoded in the locale's
            # charset (under LC_ALL=C it stays the text ``\u00a0``): the character's UTF-8
            # bytes, or for surrogateescape's stand-in (U+DC80..U+DCFF) the argument's own byte.
            # A lone surrogate of another kind (no argv or environment holds one; only
            # ``main(argv)`` called from Python) has no bytes of its own: its surrogatepass
            # bytes keep the hint printable instead of failing it.
            code = ord(character)
            errors = "surrogateescape" if 0xDC80 <= code <= 0xDCFF else "surrogatepass"
            out.extend(f"\\x{byte:02x}" for byte in character.encode("utf-8", errors))
    return "$'" + "".join(out) + "'"


def _cli_calls(args: argparse.Namespace, uri: str, offset: int) -> str:
    """The marker's last line as shell commands: read on at ``offset``, or grep."""
    options = _common_options(args)
    return (f"next: {_shell_join(['overspill', 'read', uri, '--offset', str(offset), *options])}  or  "
            f"{_shell_join(['overspill', 'grep', uri, *options])} PATTERN")


def _for_the_shell(args: argparse.Namespace, text: str, uri: Optional[str], offset: Optional[int]) -> str:
    """``text`` with its marker's model calls (``read(resource=...)``) written
    as the commands that do the same here."""
    if uri is None or offset is None:
        return text
    from ..text import next_calls

    return text.replace(next_calls(uri, offset), _cli_calls(args, uri, offset), 1)


def _shell_answer(args: argparse.Namespace, answer: Any) -> str:
    """A background command's answer (``run --background``, ``wait``, ``kill``)
    with its next calls in the model's syntax written as shell commands: the
    marker's (``read``/``grep``) and the running state line's (``read``,
    ``wait``, ``kill``)."""
    from ..tools.jobs import background_calls

    text = answer.output
    uri = answer.metadata.get("uri") or (answer.resource.uri if answer.resource is not None else None)
    offset = answer.metadata.get("next_offset")
    if uri is None or offset is None:
        return text
    # (a wait's marker names the part it omitted, its state line where it stopped: ``omitted_offset``)
    text = _for_the_shell(args, text, uri, answer.metadata.get("omitted_offset", offset))
    words = _common_options(args)
    read = _shell_join(["overspill", "read", uri, "--offset", str(offset), *words])
    wait = _shell_join(["overspill", "wait", uri, "--offset", str(offset), *words])
    kill = _shell_join(["overspill", "kill", uri, *words])
    return text.replace(background_calls(uri, offset), f"{read}, {wait} for more, {kill} to stop it", 1)


def _session(args: argparse.Namespace) -> str:
    return args.session or os.environ.get("OVERSPILL_SESSION") or "cli"


def _as_json(value: Any) -> Any:
    import dataclasses  # only --json needs it

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _as_json(getattr(value, field.name)) for field in dataclasses.fields(value)
                if field.repr}
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value


# json.dumps escapes U+0000-U+001F itself; DEL and the C1 controls (U+009B is
# an escape sequence introducer on some terminals) are escaped here.
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}


def _stdout() -> TextIO:
    """Standard output; an OSError (exit 4, one line) when the caller closed
    it (``>&-``), for which Python sets ``sys.stdout`` to None."""
    if sys.stdout is None:
        raise OSError("standard output is closed: nothing could be written")
    return sys.stdout


def _stdin() -> TextIO:
    """Standard input; an OSError (exit 4, one line) when the caller closed
    it (``<&-``), for which Python sets ``sys.stdin`` to None."""
    if sys.stdin is None:
        raise OSError("standard input is closed: nothing could be read")
    return sys.stdin


def _print_json(value: Any) -> None:
    """``value`` as one line of JSON: valid UTF-8 whatever it holds."""
    _stdout().write(_json_text(value) + "\n")


def _json_text(value: Any) -> str:
    """``value`` as ``_print_json`` writes it (without the newline)."""
    import json  # only --json needs it

    text = json.dumps(_as_json(value), ensure_ascii=False).translate(_JSON_CONTROLS)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: a name, session or path that was not UTF-8
            # (surrogateescape's U+DC80-U+DCFF for its bytes).  Written raw it
            # would be an invalid byte in the document; as the JSON escape
            # (``\udcff``, what ensure_ascii writes for it) the document is valid
            # and os.fsencode of the decoded string gives the original bytes.
            # It can only stand inside a JSON string, where the escape is legal.
            text = text.translate({code: f"\\u{code:04x}" for code in range(0xD800, 0xE000)})
    return text


def _reader_gone() -> None:
    """Standard output's reader (head, less) went away: what is left to write goes nowhere, and
    Python does not complain at exit when it flushes."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _print_text(text: str) -> None:
    _stdout().write(text if text.endswith("\n") else text + "\n")


def _exit_status(exit_code: int) -> int:
    return 128 - exit_code if exit_code < 0 else min(exit_code, 255)



def _print_answer(args: argparse.Namespace, answer: Any) -> None:
    """A tool's answer: its text (or, with --json, all of it); a failure is a usage error."""
    if answer.is_error:
        raise _UsageError(answer.output)
    if args.json:
        _print_json(answer)
    else:
        _print_text(_shell_answer(args, answer))




_NAME_CHARACTERS = 80


def _shortened(text: str, characters: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= characters else text[: characters - 1] + "…"


def _write_all(out: BinaryIO, chunks: Iterator[memoryview]) -> None:
    """Each chunk written as it comes, straight to ``out``'s descriptor when it has one.

    A buffered writer whose reader went away mid-write (``| head``) returns
    the part the pipe took as success and fails only at the next write, after
    the next range was mapped and verified for nothing; ``os.write`` fails at
    once (BrokenPipeError, which ``main`` answers)."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return
    out.flush()  # what was written to it before goes first
    for chunk in chunks:
        written = os.write(fd, chunk)
        while written < chunk.nbytes:  # a write a signal cut short
            with chunk[written:] as rest:
                written += os.write(fd, rest)


def _continue_command(args: argparse.Namespace, uri: str, offset: int, limit: Optional[int]) -> str:
    """The command that reads on from ``offset``: the same session, folder and page size as this one."""
    words = ["overspill", "read", uri, "--offset", str(offset)]
    if limit is not None:
        words += ["--limit", str(limit)]
    return _shell_join(words + _common_options(args))


def _note(message: str) -> None:
    """A one-line note on stderr that is not an error."""
    if sys.stderr is not None:
        sys.stderr.write(f"overspill: note: {_shown(one_line(message))}\n")



def _fail(status: int, message: str) -> int:
    if sys.stderr is None:  # closed by the caller (2>&-): the status alone tells
        return status
    sys.stderr.write(f"overspill: error: {_shown(one_line(message))}\n")
    return status

