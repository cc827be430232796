"""``overspill run`` (in the foreground, or in the background under a
detached supervisor) and the background commands' wait, kill and jobs."""

from __future__ import annotations

import os
import sys
import time

from ..errors import StorageError
from ._common import (EXIT_STORAGE, EXIT_TIMEOUT, _config, _exit_status, _fail, _for_the_shell, _on_a_server,
                      _print_answer, _print_json, _print_text, _reader, _reader_gone, _session, _shell_answer,
                      _shortened, _stdout, _store, _UsageError, _NAME_CHARACTERS)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse cost start-up; annotations are never evaluated
    import argparse
    from typing import Any, Optional

    from ..capture import RunningCommand
    from ..store import ToolOutputStore

_FORWARDED_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")


def _signal_module() -> Any:
    """signal's C core where there is one: ``signal`` itself wraps it in enums
    (importing enum costs ``overspill run`` more than the rest of its start-up)."""
    try:
        import _signal
    except ImportError:  # pragma: no cover - an interpreter without CPython's _signal
        import signal as _signal
    return _signal


class _Forwarder:
    """Signal handlers that pass SIGTERM, SIGHUP and SIGINT on to the running
    command's process group, so nothing it started outlives ``overspill run``."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._running: Optional[RunningCommand] = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Forwarder:
        signal = _signal_module()
        for name in _FORWARDED_SIGNALS:
            if hasattr(signal, name):
                signum = getattr(signal, name)
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        signal = _signal_module()
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
    if len(argv) == 1:
        command = argv[0]
    else:
        import shlex  # (and with it re) only for a command in several words

        command = shlex.join(argv)
    if args.background:
        return _run_background(args, command)
    if args.yield_after is not None:
        raise _UsageError("run: --yield-after applies to --background only")
    # Imported here: the tools bring the capture machinery (subprocess, selectors),
    # which no other command needs.
    from ..config import resolve_limits
    from ..tools.bash import execute

    from ..tools.bash import start_failure

    limits = resolve_limits(_config(args))
    store: Optional[ToolOutputStore] = None
    if args.store_url is not None or _on_a_server(args):
        store = _store(args)  # a server that cannot be reached: exit 4 before the command runs, not after
    with _Forwarder() as forwarder:
        try:
            # A local folder is opened only for an output that must be stored (most are
            # shown whole); one that cannot be opened still leaves the preview shown.
            ran = execute(store, _session(args), f"cli-{time.time_ns()}", command, timeout=args.timeout,
                          spill=args.spill, inherit_stdin=True, limits=limits, started=forwarder.started,
                          name=_shortened(command, _NAME_CHARACTERS),
                          open_store=None if store is not None else lambda: _store(args))
        except StorageError:
            raise
        except (OSError, ValueError) as error:
            raise _UsageError(start_failure(error)) from None
        storage_error = ran.storage_error
        try:
            if args.json:
                _print_json(ran.tool_result(args.timeout))
            else:
                # The preview (from memory if it could not be stored), its next calls as commands.
                # (an output within the limits is printed as it is, its final newline included)
                _stdout().write(_for_the_shell(args, ran.terminal_text(args.timeout),
                                               None if ran.resource is None else ran.resource.uri,
                                               ran.marker.get("next_offset")))  # type: ignore[arg-type]
            _stdout().flush()
        except BrokenPipeError:
            _reader_gone()  # nobody reads the preview: the command's own status still decides the exit code
    if storage_error is not None:
        return _fail(EXIT_STORAGE, f"the output could not be kept: {storage_error}")
    if forwarder.received:
        return 128 + forwarder.received[0]
    if ran.process.timed_out:
        return EXIT_TIMEOUT
    return _exit_status(ran.process.exit_code)


_SUPERVISOR = ("import sys; sys.path[:] = [entry for entry in sys.path if entry not in ('', '.')]; import runpy; "
               "runpy.run_module('overspill._supervisor', run_name='__main__')")


def _run_background(args: argparse.Namespace, command: str) -> int:
    """``run --background``: a detached supervisor owns the command; answer as the bash tool does."""
    import json
    import subprocess

    from ..config import resolve_limits
    from ..tools.jobs import YIELD_AFTER, background_answer

    store = _store(args)  # (refuses --data-dir with --store-url)
    session = _session(args)
    store.check_background(session)  # a clear error now, not from the supervisor
    try:
        here: Optional[str] = os.getcwd()
    except FileNotFoundError:
        # The working folder was removed: the supervisor inherits it as it is (no cwd given), and
        # the command runs there, as in the foreground; a relative path resolves as it does here.
        here = None
    # (joined, not normalised: ``link/../dd`` is resolved by the OS, as it is here)
    data_dir = args.data_dir if args.data_dir is None or here is None else os.path.join(here, args.data_dir)
    # (named as the foreground run names its output: ``ls`` shows the command)
    spec = {"data_dir": data_dir, "url": args.store_url, "session": session, "call": f"cli-{time.time_ns()}",
            "command": command, "name": _shortened(command, _NAME_CHARACTERS), "cwd": here, "config": _config(args)}
    try:
        # Not ``-m``, which puts the working folder first on sys.path: a project's json.py or
        # signal.py would be imported (run) by the supervisor in place of the standard library's.
        # ``-c`` puts it there too (as ""), and the code drops it before importing anything.
        supervisor = subprocess.Popen([sys.executable, "-c", _SUPERVISOR, json.dumps(spec)],
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
        if status == "storage-error":  # the output could not be stored (the command was not run): exit 4
            return _fail(EXIT_STORAGE, f"could not run the command: {rest}")
        raise _UsageError(f"could not run the command: {rest or 'the supervisor failed to start'}")
    uri, _, pid = rest.partition(" ")
    deadline = time.monotonic() + (YIELD_AFTER if args.yield_after is None else args.yield_after)
    interrupted = False
    try:
        while store.status(session, uri).state == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
    except KeyboardInterrupt:
        # Ctrl-C ends the wait, not the command (the supervisor owns it): its handle is still told.
        interrupted = True
    answer = background_answer(store, session, uri, resolve_limits(_config(args)), pid=int(pid))
    if args.json:
        _print_json(answer)
    else:
        _print_text(_shell_answer(args, answer))
    if interrupted:
        return 128 + _signal_module().SIGINT
    if answer.is_error:
        return EXIT_STORAGE
    if answer.metadata.get("state") == "exited":
        return _exit_status(answer.metadata["exit_code"])
    return 0


def _command_wait(args: argparse.Namespace) -> int:
    from ..tools.jobs import wait

    store = _reader(args)
    session = _session(args)
    store.status(session, args.uri)  # an unknown or foreign handle: exit 3
    answer = wait(store, session, f"cli-{time.time_ns()}", args.uri, args.timeout, args.pattern, offset=args.offset,
                  budget=float("inf"))
    _print_answer(args, answer)
    return 1 if args.pattern is not None and answer.metadata.get("match") is None else 0


def _command_kill(args: argparse.Namespace) -> int:
    from ..tools.jobs import kill

    store = _reader(args)
    session = _session(args)
    store.status(session, args.uri)
    _print_answer(args, kill(store, session, f"cli-{time.time_ns()}", args.uri))
    return 0




def _command_jobs(args: argparse.Namespace) -> int:
    from ..tools.jobs import jobs_listing

    # (the store's errors as they are: a failure to list is a storage failure, exit 4, as for ls)
    answer = jobs_listing(_reader(args), _session(args), f"cli-{time.time_ns()}", text=not args.json)
    if args.json:
        _print_json({"jobs": answer.metadata["jobs"]})
    else:
        # A long listing is stored and previewed: its marker's next calls as shell commands.
        _print_text(_for_the_shell(args, answer.output, None if answer.resource is None else answer.resource.uri,
                                   answer.metadata.get("next_offset")))
    return 0


# How much of a command ``overspill run`` records as its output's name (``ls`` shows it).
