"""Who owns a growing resource, and whether that owner still exists.

A running resource names its owner — the process that writes and seals it —
as ``(host, pid, start)``: the host name, the process id, and the process's
start time (clock ticks since boot, from ``/proc/PID/stat``) together with the
boot id (``/proc/sys/kernel/random/boot_id``).  A pid alone is reused; a pid
with its start time in the same boot names one process for ever.

An owner on another host cannot be checked from here: it is taken as alive.
"""

from __future__ import annotations

import os

from ._frozen import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; the annotations are never evaluated
    from typing import Optional

__all__ = ["Owner", "current_owner", "give_up", "group_alive", "owner_alive", "owner_holds", "process_start"]

_BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


@frozen()
class Owner:
    """The process that writes a growing resource."""

    __slots__ = ("host", "pid", "start", "boot")

    host: str
    pid: int
    #: Clock ticks after boot at which the process started (0 when unknown).
    start: int
    #: The boot the start time belongs to ("" when unknown).
    boot: str


def _boot_id() -> str:
    try:
        with open(_BOOT_ID_PATH, encoding="ascii") as file:
            return file.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def process_start(pid: int) -> Optional[int]:
    """The start time of process ``pid`` in clock ticks after boot; None when it does not exist.

    Field 22 of ``/proc/PID/stat``, read after the command name (which may
    hold spaces and parentheses).  0 where there is no ``/proc``, when the pid
    answers a signal.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return None
    except OSError:
        return _signal_probe(pid)
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        if fields[0] == b"Z" or fields[0] == b"X":
            return None  # a zombie: the process has ended, only its exit status is left
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _signal_probe(pid: int) -> Optional[int]:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0


_CURRENT: Optional[Owner] = None


def current_owner() -> Owner:
    """This process as an owner (recomputed after a fork: the pid changed)."""
    global _CURRENT
    pid = os.getpid()
    if _CURRENT is None or _CURRENT.pid != pid:
        _CURRENT = Owner(os.uname().nodename, pid, process_start(pid) or 0, _boot_id())
    return _CURRENT


def owner_alive(owner: Owner) -> bool:
    """Whether ``owner`` may still be running: False only when it certainly is not.

    Gone means: on this host, and either another boot, or no process with its
    pid, or a process with its pid that started at another time.
    """
    here = current_owner()
    if owner.host != here.host:
        return True
    if owner.boot and here.boot and owner.boot != here.boot:
        return False
    if owner.pid == here.pid:
        return owner.start == here.start or not owner.start
    started = process_start(owner.pid)
    if started is None:
        return False
    return not owner.start or not started or started == owner.start


# Growing resources this process owns but gave up finishing (their record could not be republished,
# not even after retries): they read as lost here at once, as they will everywhere once this process
# is gone; no file can say so to other processes (writing one is what failed).  An id each, and only
# on such a failure: never large.
_GIVEN_UP: set[str] = set()


def give_up(resource_id: str) -> None:
    """This process will never finish ``resource_id``, its own growing resource: it reads as lost here."""
    _GIVEN_UP.add(resource_id)


def owner_holds(owner: Optional[Owner], resource_id: str) -> bool:
    """Whether a running resource may still be finished: its owner may be alive (``owner_alive``;
    no owner named: taken as alive), and it is not one this process gave up (``give_up``)."""
    return resource_id not in _GIVEN_UP and (owner is None or owner_alive(owner))


def group_alive(group: int) -> bool:
    """Whether any process is left in process group ``group`` (one of another user's counts)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
