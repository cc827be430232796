"""The ``overspill`` command line: run, read, grep, truncate, ls, cleanup, stats, mcp, wait, kill, jobs.

Exit codes: the command's own for ``run``; otherwise 0 on success, 2 for
usage errors and bad input, 3 for an unknown, invalid or foreign resource,
4 for a storage failure.  Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import os
import sys

from .. import __version__
from .._frontend import DEFAULT_TIMEOUT
from ..errors import (
    AccessDeniedError,
    ConfigError,
    InvalidResourceError,
    OverspillError,
    ResourceNotFoundError,
    StorageError,
)
from ._common import (_COMMON_DEFAULTS, EXIT_RESOURCE, EXIT_STORAGE, EXIT_USAGE, _fail, _past_shared, _reader_gone,
                      _stdout, _UsageError)

# Each command imports what it needs (argparse, the store, the capture, signal,
# shlex) when it runs: ``overspill --version`` imports none of them, and no
# command pays for another's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn, Optional

__all__ = ["main", "exit_with"]

# Each command's module and function, imported when the command runs.
_COMMANDS = {"run": "_run", "wait": "_run", "kill": "_run", "jobs": "_run", "read": "_commands", "grep": "_commands",
             "truncate": "_commands", "ls": "_commands", "cleanup": "_commands", "stats": "_commands",
             "mcp": "_commands"}


class _Arguments:
    """Parsed arguments, as ``argparse.Namespace`` holds them (for the forms ``_plain`` reads)."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)


def _plain(words: list[str]) -> Optional[_Arguments]:
    """The arguments of the two most common calls without argparse (which, with
    ``re``, ``gettext`` and ``shutil``, costs more than the rest of the call):
    ``run -- COMMAND...`` and ``read URI --all``, exactly so written.  Every
    other form goes to the parser; these give what it gives (a test pins it)."""
    if len(words) >= 3 and words[0] == "run" and words[1] == "--":
        return _Arguments(command="run", **_COMMON_DEFAULTS, max_lines=None, max_bytes=None, max_tokens=None,
                          timeout=DEFAULT_TIMEOUT, spill=True, background=False, yield_after=None, argv=words[1:])
    if len(words) == 3 and words[0] == "read" and "--all" in words[1:]:
        uri = words[2] if words[1] == "--all" else words[1]
        if not uri.startswith("-"):
            return _Arguments(command="read", **_COMMON_DEFAULTS, uri=uri, offset=None, limit=None, all=True)
    return None


def _command(name: str):  # -> Callable[[argparse.Namespace], int]
    module = f"{__name__}.{_COMMANDS[name]}"
    __import__(module)  # not importlib.import_module: importlib imports warnings
    return getattr(sys.modules[module], f"_command_{name}")


def __getattr__(name: str) -> object:
    # The parser, for the tests that compare it with the argparse-free forms.
    if name == "_parser":
        from . import _parsing

        return _parsing._parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Commands after which the process may end without the interpreter's teardown:
# they write nothing but standard output and error, and hold nothing that
# needs more than the kernel's own cleanup (open files, maps).
_NO_TEARDOWN = ("read",)


def _nothing_left_at_exit() -> bool:
    """Whether exiting now would skip nothing but clearing the interpreter:
    no ``atexit`` callback registered and no thread but this one."""
    # A callback is registered through the atexit module, so it is loaded;
    # CPython's own count, and where that is missing, the teardown runs.
    atexit = sys.modules.get("atexit")
    if atexit is not None and getattr(atexit, "_ncallbacks", lambda: 1)():
        return False
    threading = sys.modules.get("threading")
    return threading is None or (threading.active_count() == 1
                                 and not getattr(threading, "_threading_atexits", True))


def exit_with(status: int) -> NoReturn:
    """End the ``overspill`` process with ``status`` (what ``main`` returned).

    After a command in ``_NO_TEARDOWN`` (the shared options before it or not),
    once standard output and error are flushed and nothing is left to run at
    exit, the process ends at once
    (``os._exit``): the interpreter's teardown clears the ~60 modules a read
    loaded one by one, 2-4 ms, as long as the rest of a ``read --all | head``
    after start-up.  Anything else exits as ``sys.exit`` does, and so does a
    flush that fails (Python then reports it as usual).  Only for the
    program's own process: the launcher and ``python -m overspill`` call it.
    """
    command = _past_shared(sys.argv[1:])[:1]  # the shared options may come first
    if command and command[0] in _NO_TEARDOWN and type(status) is int and 0 <= status <= 255:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            sys.exit(status)
        if _nothing_left_at_exit():
            os._exit(status)
    sys.exit(status)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; return (and, as a console script, exit with) its status."""
    words = sys.argv[1:] if argv is None else list(argv)
    if _past_shared(words)[:1] != ["read"]:  # the shared options may come first
        return _main(words)
    # A read is bounded work that makes no garbage cycles worth collecting:
    # the cyclic collector waits until it is done (a read's imports set it
    # off ~8 times with nothing to free, 0.5-1 ms).
    import gc  # built in: no file to load

    if not gc.isenabled():
        return _main(words)
    gc.disable()
    try:
        return _main(words)
    finally:
        gc.enable()


def _main(words: list[str]) -> int:
    from .. import _kernels

    try:
        _kernels.requested()  # a bad OVERSPILL_IMPLEMENTATION is one line, whatever the command
    except ConfigError as error:
        return _fail(EXIT_USAGE, str(error))
    try:
        if words == ["--version"]:
            # What argparse's version action prints, without building seven sub-parsers first.
            _stdout().write(f"overspill {__version__}\n")
            return 0
        args = _plain(words)
        if args is None:
            from ._parsing import _command_word, _parser

            if not words:  # bare ``overspill``: what it can do, and how to ask
                _stdout().write(_parser().format_help())
                return EXIT_USAGE
            args = _parser(_command_word(words, _COMMANDS)).parse_args(words)
        return _command(args.command)(args)
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
        _reader_gone()  # not an error
        return 0
    # Whatever else goes wrong is still one line: bad input (an over-long
    # session id, OVERSPILL_IMPLEMENTATION=cython without the extension) is
    # exit 2, a failure of the system (reading stdin, a full disk) exit 4.
    except (ValueError, TypeError, ImportError) as error:
        return _fail(EXIT_USAGE, str(error))
    except OSError as error:
        return _fail(EXIT_STORAGE, str(error))
    except KeyboardInterrupt:
        import signal

        return 128 + signal.SIGINT
