"""The detached supervisor of a background command started by the CLI.

``overspill run --background`` must return while the command runs on, but a
growing resource needs an owner that drains the pipe, seals and finishes it.
This small process is that owner: the CLI starts it in a session of its own
(no terminal, stdin ``/dev/null``), it starts the command (``background.start``),
writes one line to its stdout — ``ok URI PID``, ``storage-error MESSAGE`` (the
output could not be stored: the command was not run) or ``error MESSAGE`` — closes
it, and lives until the command exited and its record was finished.  SIGTERM,
SIGHUP or SIGINT to it end the command's process group first (SIGTERM, SIGKILL
after a grace); ``background.SUPERVISOR_STOP_WAITING`` (SIGUSR1), from
``overspill kill``, which signals the group itself, only stops the wait for
the group (SIGKILL after the grace), so that the group gets one SIGTERM.

Run as ``python -m overspill._supervisor SPEC`` where SPEC is JSON:
``{"data_dir" | "url", "session", "call", "command", "name", "cwd", "config"}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any, Optional

from . import background
from .errors import OverspillError, StorageError
from .store import ToolOutputStore

__all__ = ["main"]


def _announce(line: str) -> None:
    """Tell the CLI how the start went, then let go of the pipe (it waits for nothing else)."""
    os.write(1, (line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def main(argv: Optional[list[str]] = None) -> int:
    """Start the command the SPEC names, announce it, and own it until it exited; the exit code
    (0 once its record was finished)."""
    spec: dict[str, Any] = json.loads((sys.argv[1:] if argv is None else argv)[0])
    # The handlers come before the start: the running record names this process as soon as it is
    # published, and a signal that came before the command had started would end this process
    # (SIGUSR1's default action too), leaving the command lost.  Until then signals are kept.
    started: list[background.Job] = []
    pending: list[int] = []

    def act(signum: int) -> None:
        running = started[0].running
        if signum == background.SUPERVISOR_STOP_WAITING:
            running.stop_waiting()  # the group was signalled already: it gets no second SIGTERM
        else:
            running.send_signal(signal.SIGTERM)  # the pump thread sees the group end and finishes the record

    def stop(signum: int, frame: object) -> None:
        if started:
            act(signum)
        else:
            pending.append(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, background.SUPERVISOR_STOP_WAITING):
        signal.signal(signum, stop)
    try:
        if spec.get("url"):
            store = ToolOutputStore(url=spec["url"], config=spec.get("config"))
        else:
            store = ToolOutputStore(spec.get("data_dir"), config=spec.get("config"))
        job = background.start(store, spec["session"], spec["call"], spec["command"], cwd=spec.get("cwd"),
                               name=spec.get("name"))
    except StorageError as error:  # (an OSError too) the CLI's exit 4, not a usage error
        _announce(f"storage-error {error.strerror or error}")
        return 1
    except (OverspillError, OSError, ValueError, TypeError) as error:
        _announce(f"error {getattr(error, 'strerror', None) or error}")
        return 1
    started.append(job)
    # (A signal from here on acts at once; ``pending`` holds only those that came before.)
    for signum in pending:
        act(signum)
    _announce(f"ok {job.uri} {job.pid}")
    while not job.wait(1.0):
        pass
    store.close()
    return 0 if job.final is not None else 1


if __name__ == "__main__":
    sys.exit(main())
