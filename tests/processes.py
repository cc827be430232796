"""What /proc says about processes, for the tests that check nothing is left running."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable


def _stat(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as file:
            # The command name may hold spaces and parentheses: split after the last ')'.
            return file.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def processes() -> list[tuple[int, str, int, int]]:
    """``(pid, state, parent pid, process group)`` of every process."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(entry)) is not None:
            found.append((int(entry), fields[0], int(fields[1]), int(fields[2])))
    return found


def alive_in_group(group: int) -> list[int]:
    """Processes of ``group`` that still run (a zombie has stopped running)."""
    return [pid for pid, state, _, pgrp in processes() if pgrp == group and state != "Z"]


def zombies_of(parent: int) -> list[int]:
    """Children of ``parent`` that exited and were never reaped."""
    return [pid for pid, state, ppid, _ in processes() if ppid == parent and state == "Z"]


def regex_workers_of(parent: int) -> list[int]:
    """Running children of ``parent`` that are grep's regex workers."""
    found = []
    for pid, state, ppid, _ in processes():
        if ppid == parent and state != "Z":
            try:
                if b"_regex_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                continue
    return found


def wait_until(condition: Callable[[], object], limit: float = 30.0) -> bool:
    """Poll ``condition`` until it holds or ``limit`` seconds pass (a liveness bound, not a timing claim)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@contextlib.contextmanager
def forked_while_held(holder: threading.Thread, inside: threading.Event, release: threading.Event,
                      undo: Callable[[], None]) -> Iterator[None]:
    """Fork while ``holder`` (started here) waits inside a lock (it sets ``inside`` there and
    waits for ``release``); the child lives, holding whatever it inherited, until the ``with``
    block has run.  The block runs once the child's fork handlers have, the holder has let go and
    ``undo`` has removed the patch that held it."""
    holder.start()
    inside.wait()
    child_reads, child_exits = os.pipe()
    started_reads, started = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(child_exits)
        os.write(started, b".")  # its fork handlers have run
        os.read(child_reads, 1)
        os._exit(0)
    os.close(child_reads)
    os.close(started)
    try:
        os.read(started_reads, 1)
        os.close(started_reads)
        release.set()
        holder.join()
        undo()
        yield
    finally:
        os.close(child_exits)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the forked child did not exit"
