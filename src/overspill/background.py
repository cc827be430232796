"""Background commands: started now, their output growing in the store while they run.

``start`` runs a command in its own process group (stdin ``/dev/null``,
stdout and stderr in one pipe) and streams its output into a growing
resource (``ToolOutputStore.open_growing``) published at once: a thread per
command drains the pipe into it, and one sealer thread per process seals
what waited long enough.  When the command exits its record is republished
with the exit code, as an ordinary resource.  This process owns the
resource: if it dies first, readers see the command as ``lost``.

``kill`` ends a command's whole process group (SIGTERM, then SIGKILL after
a grace), whether this process or another one on this host owns it.
Commands still running when the interpreter exits are killed, so that none
is left writing to a pipe nobody drains.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Optional, Union

from ._arguments import wait_seconds
from ._binary import SNIFF_BYTES
from ._owner import current_owner, group_alive, owner_alive, process_start
from .capture import RunningCommand, check_working_folder
from .errors import ResourceNotFoundError
from .records import Record

if TYPE_CHECKING:
    from ._growing import GrowingOutput
    from ._owner import Owner
    from .store import ToolOutputStore

__all__ = ["KILL_GRACE", "Job", "find", "kill", "kill_all", "kept_end", "start", "storing_failure", "wait_for_state"]

#: Seconds between SIGTERM and SIGKILL when a background command is killed.
KILL_GRACE = 2.0
# What ``kill`` sends a supervisor (``overspill._supervisor``) once it SIGTERMed the command's group
# itself: "stop waiting for the group", not "signal it" (which SIGTERM to the supervisor means), so
# that the group gets one SIGTERM whoever owns it.
SUPERVISOR_STOP_WAITING = signal.SIGUSR1
# How often the sealer looks for output that waited long enough to be sealed.
_SEAL_TICK = 0.1
# How often a waiter on another process's command looks at its record.
_POLL = 0.05
# How often a wait for a command's end looks at its abort event.
_ABORT_TICK = 0.05
# Seconds a command's record is tried again when it cannot be republished at its exit (a moment
# without file descriptors, in a server that runs many commands), the first pause between tries and
# the longest: a failure that lasts longer gives the record up (``GrowingOutput.give_up``).
_FINISH_TRIES = 10.0
_FINISH_PAUSE = 0.05
_FINISH_PAUSE_MAX = 1.0

Command = Union[str, Sequence[str]]


class Job:
    """A background command this process started and owns."""

    def __init__(self, running: RunningCommand, output: GrowingOutput, abort: threading.Event) -> None:
        self.running = running
        self.output = output
        self.uri = output.record.resource.uri
        self.pid = running.pid
        self.started = time.time()
        self.exited = threading.Event()
        self.final: Optional[Record] = None
        self.error: Optional[BaseException] = None
        self._abort = abort
        self._thread = threading.Thread(target=self._pump, name="overspill-background", daemon=True)

    def _pump(self) -> None:
        output = self.running.output()
        try:
            for chunk in output:
                self.output.write(chunk)
        except BaseException as error:  # noqa: BLE001 - kept for the caller; the record still gets its end
            self.error = error
        finally:
            output.close()  # kills the group if the loop above failed; reaps the command
            self.final = self._finish(self.running.result().exit_code)
            _SEALER.remove(self)
            end = self.output.kept_end() if self.final is not None else None
            failure = self.output.failure
            with _LOCK:
                # Kept before the job goes: a look-up finds one or the other.
                if end is not None or failure is not None:
                    _ENDED[self.uri] = (end, None if failure is None else str(failure))
                    while len(_ENDED) > _KEPT_ENDS:
                        del _ENDED[next(iter(_ENDED))]
                _JOBS.pop(self.uri, None)
            self.exited.set()

    def _finish(self, exit_code: int) -> Optional[Record]:
        """The final record, tried again for ``_FINISH_TRIES`` seconds; None when it could not be
        republished: then the record is given up (``error`` says why), and reads as lost in this
        process, as it will everywhere once this process is gone.  Left running, it would hold a
        ``max_background`` slot and keep ``wait`` waiting for as long as this process lives."""
        deadline = time.monotonic() + _FINISH_TRIES
        pause = _FINISH_PAUSE
        while True:
            try:
                return self.output.finish(exit_code)
            except Exception as error:  # noqa: BLE001 - kept for the caller
                self.error = error
            # The folder removed (no new file can be made in it): no later try can succeed.
            if isinstance(self.error, FileNotFoundError) or time.monotonic() + pause > deadline:
                self.output.give_up()
                return None
            time.sleep(pause)
            pause = min(pause * 2, _FINISH_PAUSE_MAX)

    def wait(self, timeout: Optional[float], *, abort: Optional[threading.Event] = None) -> bool:
        """Wait until the command exited and its record was republished (or given up: ``final`` is
        then None); whether it did.

        :param timeout: seconds at most; None or infinity: without bound.
        :param abort: when set (the host's cancellation, a server shutting down), the wait ends
            within ``_ABORT_TICK`` seconds, False unless the command exited; the command runs on.
        :raises TypeError, ValueError: ``timeout`` is not a number of seconds, at least 0.
        """
        limit = None if timeout is None else wait_seconds(timeout, "timeout")
        if abort is None:
            return self.exited.wait(limit)
        deadline = None if limit is None else time.monotonic() + limit
        # Two events cannot be waited on at once: the command's end is waited for, and the abort
        # looked at between short waits.
        while not abort.is_set():
            left = _ABORT_TICK if deadline is None else min(deadline - time.monotonic(), _ABORT_TICK)
            if left <= 0 or self.exited.wait(left):
                break
        return self.exited.is_set()

    def kill(self) -> None:
        """End the process group (SIGTERM, SIGKILL after ``KILL_GRACE``) and wait for the final record."""
        self._abort.set()
        self.exited.wait()


class _Sealer:
    """One daemon thread per process that seals every job's output when it is due."""

    def __init__(self) -> None:
        self._jobs: set[Job] = set()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def add(self, job: Job) -> None:
        with self._lock:
            self._jobs.add(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="overspill-sealer", daemon=True)
                self._thread.start()

    def remove(self, job: Job) -> None:
        with self._lock:
            self._jobs.discard(job)

    def _run(self) -> None:
        while True:
            time.sleep(_SEAL_TICK)
            with self._lock:
                jobs = list(self._jobs)
                if not jobs:
                    self._thread = None
                    return
            now = time.monotonic()
            for job in jobs:
                job.output.seal_if_due(now)

    def reset_after_fork(self) -> None:
        self._jobs = set()
        self._lock = threading.Lock()
        self._thread = None


_SEALER = _Sealer()
_LOCK = threading.Lock()
_JOBS: dict[str, Job] = {}
# What the answers given after the job is gone (``wait`` called after the exit) need of the last
# finished commands whose stored copy was capped (max_stored_bytes, the quota, a failed write),
# oldest first: the true end (each at most 1 MiB: with _KEPT_ENDS of them, 16 MiB at most), and why
# storing stopped when a write failed (``storing_failure``).
_ENDED: dict[str, tuple[Optional[bytes], Optional[str]]] = {}
_KEPT_ENDS = 16


def _reset_after_fork() -> None:
    global _LOCK, _JOBS, _ENDED
    _LOCK = threading.Lock()
    _JOBS = {}  # the parent's jobs are the parent's: a child owns none of them
    _ENDED = {}
    _SEALER.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def start(store: ToolOutputStore, session_id: str, tool_call_id: str, command: Command, *,
          cwd: Optional[Union[str, os.PathLike[str]]] = None, env: Optional[Mapping[str, str]] = None,
          name: Optional[str] = None) -> Job:
    """Start ``command`` in the background, its output growing in ``store`` under a new resource.

    :param name: stored with the output, as a foreground command's (``overspill run`` records
        the command; ``ls`` shows it).

    :raises UnsupportedError: the store's backend has no growing resources.
    :raises BackgroundLimitError: the session already runs ``max_background`` commands.
    :raises StorageError: the resource could not be created (the command is not run: it starts
        only once the quota's room and the files are there; a failure of the record's publish
        after that ends it at once).
    :raises OSError: the command could not be started (``NotADirectoryError`` naming a ``cwd`` that
        is missing or not a folder).
    :raises TypeError: a malformed command.
    :raises ValueError: a name no record could hold (before the command runs).
    """
    check_working_folder(cwd)  # named as in the foreground, before any lock or record
    # One check-and-start at a time in this process, and in this store's folder: the limit holds.
    # The folder's lock first: waiting for another process's start, this process's jobs may still end (_LOCK).
    with store.starting_background(session_id), _LOCK:
        abort = threading.Event()
        started: list[RunningCommand] = []

        def spawn() -> tuple[int, int]:
            # Called by the store once the resource's checks, room and files are in place (a quota
            # with no room, a folder that cannot be written: the command never runs), at most once.
            if not started:
                try:
                    # The output grows in the store; memory keeps only as much of its start
                    # as decides whether it is binary.
                    started.append(RunningCommand(command, cwd=cwd, env=env, timeout=None, stdin=None,
                                                  max_output_bytes=SNIFF_BYTES, max_error_bytes=1, keep="head",
                                                  abort=abort, merge_stderr=True))
                except BaseException as error:
                    raise _NotStarted(error) from None  # not the store's failure: said as it is, below
            pid = started[0].pid
            return pid, process_start(pid) or 0

        try:
            output = store.open_growing(session_id, tool_call_id, process=spawn, name=name)
        except _NotStarted as failed:
            raise failed.error from None
        except BaseException:
            if started:  # only the running record's publish failed: the command must not run on unseen
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(started[0].pid, signal.SIGKILL)
                started[0].drain()  # the pipe closes with the group; the command is reaped
            raise
        running = started[0]
        job = Job(running, output, abort)
        _JOBS[job.uri] = job
    _SEALER.add(job)
    job._thread.start()
    return job


class _NotStarted(Exception):
    """The command itself could not be started (``error``), inside the store's creation of its
    resource: carried through it untouched, then raised as it is."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def find(uri: str) -> Optional[Job]:
    """The job this process runs for ``uri``, if any."""
    return _JOBS.get(uri)


def kept_end(uri: str) -> Optional[bytes]:
    """The true end of ``uri``'s output (at most 1 MiB) when this process runs or ran its command and
    its stored copy holds only its start; None otherwise (nothing past the stored copy, or this
    process no longer holds it: it keeps the last ``_KEPT_ENDS`` ends).  It is the output's end once
    the record says the command exited: look at the record first."""
    with _LOCK:
        job = _JOBS.get(uri)
        if job is None:
            return _ENDED.get(uri, (None, None))[0]
    return job.output.kept_end()


def storing_failure(uri: str) -> Optional[str]:
    """Why storing ``uri``'s output stopped (a write or a seal failed: the stored copy ends at the
    bytes that reached it) when this process runs or ran its command; None when it did not stop, or
    this process no longer holds it (it keeps the last ``_KEPT_ENDS`` finished commands' reasons, as
    their ends).  Only the owner knows: the record does not say."""
    with _LOCK:
        job = _JOBS.get(uri)
        if job is None:
            return _ENDED.get(uri, (None, None))[1]
    failure = job.output.failure
    return None if failure is None else str(failure)


def wait_for_state(store: ToolOutputStore, session_id: str, uri: str, timeout: float) -> Record:
    """The record once it is no longer ``running``, or as it is after ``timeout`` seconds
    (infinity: without bound).

    :raises TypeError, ValueError: ``timeout`` is not a number of seconds, at least 0.
    :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError: as ``store.status``.
    """
    limit = wait_seconds(timeout, "timeout")
    deadline = None if limit is None else time.monotonic() + limit
    job = find(uri)
    if job is not None:
        job.wait(limit)
    while True:
        record = store.status(session_id, uri)
        if record.state != "running" or (deadline is not None and time.monotonic() >= deadline):
            return record
        time.sleep(_POLL)


def kill(store: ToolOutputStore, session_id: str, uri: str) -> Record:
    """End a background command's process group: SIGTERM, then SIGKILL after ``KILL_GRACE``.

    A command this process runs is ended and its record finished here.  One
    another process on this host owns (a supervisor, another server) is
    signalled by its process group, and its owner finishes the record; the
    record is returned as it is once the owner did, or after the grace.

    :returns: the final record (``exited``; ``lost`` when the owner is gone).
    :raises InvalidResourceError, AccessDeniedError, ResourceNotFoundError: as ``store.read``; a
        command of ``session_id`` this process runs is ended first whatever the store says (its
        folder removed: ``ResourceNotFoundError`` once the group is ended).
    """
    job = find(uri)
    if job is not None and job.output.record.session_id == session_id:
        # This process holds the command: nothing the store says (its folder removed, its record
        # unreadable) may leave the group running.  Another session's job is refused by the look below.
        job.kill()
        return store.status(session_id, uri)
    record = store.status(session_id, uri)
    if record.state == "exited" or record.state is None:
        return record
    if record.process is None:
        raise ResourceNotFoundError(f"resource {uri} does not name its command's process")
    pid, started = record.process
    current = process_start(pid)
    if current is not None and started and current and current != started:
        return record  # the pid now names another process: the command is long gone
    owner = record.owner
    # The group's one SIGTERM, sent here whoever owns the command (a supervisor that is stopped,
    # hung or gone cannot hold it back).
    _signal_group(pid, signal.SIGTERM)
    if record.state == "running" and owner is not None and _is_supervisor(owner):
        # The CLI's supervisor is told the group was signalled, not to signal it (its SIGTERM
        # handler would send the group a second SIGTERM): it stops reading once the command
        # exited, since a process that left the group (a daemon) may hold the pipe for ever.
        _signal_process(owner, SUPERVISOR_STOP_WAITING)
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline:
        record = store.status(session_id, uri)
        # A lost command's group has no owner to reap it: its grace lasts while any of it is left.
        if record.state == "exited" or (record.state == "lost" and not group_alive(pid)):
            break
        time.sleep(_POLL)
    _signal_group(pid, signal.SIGKILL)  # stragglers of the group, whatever the leader did
    if record.state == "running":
        # Looked at again whatever the owner's state: a supervisor's own SIGKILL grace ends with
        # this one, and it may have finished the record and exited since the last look (then the
        # record says how the command ended, or "lost"); a live owner is given a grace to finish it.
        alive = owner is not None and owner_alive(owner)
        record = wait_for_state(store, session_id, uri, KILL_GRACE if alive else 0)
    return record


def _is_supervisor(owner: Owner) -> bool:
    """Whether ``owner`` is a live ``overspill._supervisor`` process on this host (not a server that
    owns other jobs too: only a supervisor is signalled)."""
    if not owner_alive(owner) or owner.host != current_owner().host or owner.pid == os.getpid():
        return False
    try:
        with open(f"/proc/{owner.pid}/cmdline", "rb") as file:
            return b"overspill._supervisor" in file.read()
    except OSError:
        return False


def _signal_process(owner: Owner, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(owner.pid, number)


def _signal_group(pgid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, number)


def kill_all() -> None:
    """End every background command this process runs and wait for their records (at exit: nobody
    would drain their pipes, and their owner would be gone)."""
    for job in list(_JOBS.values()):
        with contextlib.suppress(Exception):
            job._abort.set()
    for job in list(_JOBS.values()):
        job.exited.wait(KILL_GRACE + 3)


atexit.register(kill_all)
