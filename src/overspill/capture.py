"""Running a command without ever holding more of its output than the caps allow.

Both pipes are drained concurrently (one ``poll`` loop, 1 MiB reads, 1 MiB
pipe buffers where Linux allows) through a ``StreamCap`` each, and keep being
drained after the caps are reached, so the child never blocks on a full pipe.
On timeout the whole process group is terminated, then killed after a grace.
"""

from __future__ import annotations

import os
import time
# A lock without importing threading (start-up).
from _thread import allocate_lock
# The C module's plain ints: ``signal`` would import enum (``overspill run``'s start-up).
from _signal import SIGKILL, SIGTERM
# collections.abc's Mapping and Sequence without importing the collections package (start-up).
from _collections_abc import Mapping, Sequence

from . import _kernels
from ._arguments import check_metadata, id_string, os_string, positive_seconds, whole_number
from ._frozen import frozen
from ._pipes import ChildPipes
from ._spawn import spawn
from ._store_types import chunk_view
from .text import counted_lines

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and dataclasses cost ``overspill run``'s start-up; annotations are never evaluated
    import threading
    from collections.abc import Iterable, Iterator
    from typing import Callable, Optional, Union

    from ._kernels import StreamCap
    from ._spawn import Child
    from .records import Resource
    from .store import ToolOutputStore

    Command = Union[str, Sequence[str]]
    Spill = tuple["ToolOutputStore", str, str]

_waitid = getattr(os, "waitid", None)

__all__ = ["MAX_CAPTURE_BYTES", "Collected", "ProcessResult", "RunningCommand", "arun", "collect_stream", "kill_running",
           "run"]

MAX_CAPTURE_BYTES = 1024 * 1024
# After SIGTERM, how long the group has to exit before SIGKILL.
_TERMINATE_GRACE = 2.0
# How often the loop wakes without I/O, to notice an abort (a deadline and the
# command's exit wake it by themselves).
_TICK = 0.1
# Without a pidfd, how soon the loop looks again for the command's exit once the
# pipes are closed; doubled up to _TICK, so a short command costs about a millisecond.
_FIRST_EXIT_POLL = 0.0005
# The commands started and not yet reaped, by id: a server that must end quickly (it is being
# signalled while it already ends its commands) kills them all at once (``kill_running``).
_RUNNING: dict[int, "RunningCommand"] = {}
_RUNNING_LOCK = allocate_lock()


@frozen(defaults={"resource": None})
class ProcessResult:
    """What a command did: exit code, the retained bytes of each stream and the totals.

    ``exit_code`` is negative (minus the signal number) when a signal ended the
    process.  ``resource`` holds the complete combined output when ``spill``
    was given and the output was over the store's limits (None otherwise).
    """

    __slots__ = ("exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "stdout_bytes",
                 "stderr_bytes", "timed_out", "duration", "resource")
    exit_code: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_bytes: int
    stderr_bytes: int
    timed_out: bool
    duration: float
    resource: Optional[Resource]


@frozen()
class Collected:
    """The first ``max_bytes`` of a stream, with how much it held in all."""

    __slots__ = ("data", "total_bytes", "truncated")
    data: bytes
    total_bytes: int
    truncated: bool


def collect_stream(chunks: Iterable[Union[bytes, bytearray, memoryview]], max_bytes: int) -> Collected:
    """Keep the first ``max_bytes`` bytes of an iterable of byte chunks; count all.

    :raises TypeError: a chunk is not bytes-like, or ``max_bytes`` not an int.
    :raises ValueError: ``max_bytes`` below 1.
    """
    cap = _kernels.StreamCap(max_bytes, keep="head")
    for chunk in chunks:
        with chunk_view(chunk) as view:  # (the store's streams' one check and wording)
            cap.feed(view)
    return Collected(cap.value(), cap.total_bytes, cap.truncated)


def _check_cwd(cwd: object) -> None:
    """Refuse a working folder no process can be started in, before anything is started.

    :raises TypeError: not a path.
    :raises ValueError: it holds a NUL or a lone surrogate.
    """
    if cwd is None:
        return
    if not isinstance(cwd, (str, bytes, os.PathLike)):
        raise TypeError(f"cwd must be a path, not {type(cwd).__name__}")
    folder = os.fspath(cwd)
    os_string(os.fsdecode(folder), "cwd")


def check_working_folder(cwd: object) -> None:
    """Refuse a ``cwd`` that is not an existing folder, in the one line every
    front end gives (the bash tool in the foreground or the background,
    ``overspill run``, MCP): "the working folder X does not exist" or "... is
    not a folder", rather than the bare "No such file or directory" of the
    failed start.

    :raises NotADirectoryError: ``cwd`` is missing or not a folder.
    :raises TypeError: not a path.
    :raises ValueError: it holds a NUL or a lone surrogate (named as the start names it).
    """
    _check_cwd(cwd)
    if cwd is None or os.path.isdir(cwd):  # type: ignore[arg-type]
        return
    import errno  # (only a refused folder needs it)

    what = "does not exist" if not os.path.exists(cwd) else "is not a folder"
    raise NotADirectoryError(errno.ENOTDIR, f"the working folder {os.fsdecode(os.fspath(cwd))} {what}")


def _check_environment(env: object) -> None:
    """Refuse an environment no process can be given, naming the entry.

    :raises TypeError: not a mapping of str (or bytes) to str (or bytes).
    :raises ValueError: a name that is empty or holds ``=``, or a name or value
        that holds a NUL or a lone surrogate.
    """
    if env is None:
        return
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a mapping of str to str, not {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, (str, bytes)):
            raise TypeError(f"env's variable names must be str, not {type(name).__name__}")
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"env[{name!r}] must be a str, not {type(value).__name__}")
        shown = os.fsdecode(name)
        if not shown or "=" in shown:
            raise ValueError(f"env's variable name {shown!r} must be non-empty and hold no '='")
        os_string(shown, f"env's variable name {shown!r}")
        os_string(os.fsdecode(value), f"env[{shown!r}]")


def _encoded_stdin(text: str) -> bytes:
    """``text`` as the UTF-8 bytes given to a command (``surrogateescape``: undecodable bytes as they were).

    :raises ValueError: it holds a lone surrogate UTF-8 has no bytes for.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        raise ValueError(f"stdin holds a lone surrogate ({ascii(text[error.start])} at index {error.start}), "
                         "which UTF-8 cannot encode; pass bytes") from None


def _signal_group(process: Child, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class RunningCommand:
    """A started command: ``chunks()`` drives it and yields its output as it comes.

    For callers that consume the output as a stream (the bash tool spills it
    through ``store.truncate_stream``); ``run`` is built on it.  Arguments are
    those of ``run``, plus ``inherit_stdin`` (give the command this process's
    own stdin instead of ``stdin``'s bytes or ``/dev/null``).

    The timeout is a deadline for the whole call: at it the process group gets
    SIGTERM, and once the command itself has exited (or after a grace, with
    SIGKILL) the call returns, even if a process outside the group still holds
    the pipe open.  A command that has exited by the deadline and whose pipes
    reach their end is not timed out (no signal is sent): its status stands.
    """

    def __init__(self, command: Command, *, cwd: Optional[Union[str, os.PathLike[str]]],
                 env: Optional[Mapping[str, str]], timeout: Optional[float], stdin: Optional[Union[bytes, str]],
                 max_output_bytes: int, max_error_bytes: int, keep: str,
                 abort: Optional[threading.Event] = None, merge_stderr: bool = False,
                 inherit_stdin: bool = False, before_start: Optional[Callable[[], None]] = None) -> None:
        """Check every argument, call ``before_start`` (an exception from it starts nothing),
        then start the command."""
        if isinstance(command, str):
            argv: Union[str, list[str]] = os_string(command, "command")
            shell = True
        elif isinstance(command, Sequence) and command and all(isinstance(part, str) for part in command):
            argv, shell = list(command), False
            for position, part in enumerate(argv):
                os_string(part, f"command[{position}]")
        else:
            raise TypeError("command must be a str (run by the shell) or a non-empty list of str")
        _check_cwd(cwd)
        _check_environment(env)
        if timeout is not None:
            timeout = positive_seconds(timeout, "timeout")
        if stdin is not None and not isinstance(stdin, (bytes, str)):
            raise TypeError(f"stdin must be bytes or str, not {type(stdin).__name__}")
        if stdin is not None and inherit_stdin:
            raise ValueError("give stdin or inherit_stdin, not both")
        self._caps = (
            _kernels.StreamCap(whole_number(max_output_bytes, "max_output_bytes", 1), keep=keep),
            _kernels.StreamCap(whole_number(max_error_bytes, "max_error_bytes", 1), keep=keep),
        )
        self._stdin = _encoded_stdin(stdin) if isinstance(stdin, str) else stdin
        self._timeout = timeout
        self._abort = abort
        self._merged = bool(merge_stderr)
        self._timed_out = False
        # Set once the group was told to stop (deadline, abort or a forwarded signal).
        self._stop_at: Optional[float] = None
        self._kill_at: Optional[float] = None
        self._killed = False
        self._ends_with_newline = False
        if before_start is not None:  # the arguments are good; what else must hold comes before the start
            before_start()
        self._started = time.monotonic()
        # Its own session and process group, so a timeout reaches grandchildren.
        self._process = spawn(argv, cwd=cwd, env=env, feed_stdin=self._stdin is not None,
                              inherit_stdin=inherit_stdin, merge_stderr=self._merged)
        self._finished: Optional[float] = None
        with _RUNNING_LOCK:
            _RUNNING[id(self)] = self

    @property
    def pid(self) -> int:
        """The command's process id, which is also its process group id."""
        return self._process.pid

    def send_signal(self, signum: int) -> None:
        """Forward ``signum`` to the command's process group and stop waiting for it.

        The group gets the signal now, and SIGKILL if it is still there after a
        grace; the call then returns as after a timeout (without ``timed_out``).
        Safe to call from a signal handler; does nothing once the command was reaped.
        """
        if self._process.returncode is not None:
            return
        _signal_group(self._process, signum)
        self._begin_stop(time.monotonic())

    def stop_waiting(self) -> None:
        """Stop waiting for the command's process group, which another process already signalled
        (``overspill kill`` of a supervised command): as ``send_signal`` without sending anything
        again, so the group gets that one signal, and SIGKILL if it is still there after the grace.
        Safe to call from a signal handler; does nothing once the command was reaped.
        """
        if self._process.returncode is not None:
            return
        self._begin_stop(time.monotonic())

    def _begin_stop(self, now: float) -> None:
        if self._stop_at is None:
            self._stop_at = now
            self._kill_at = now + _TERMINATE_GRACE

    def _leader_exited(self) -> bool:
        """Whether the command itself has exited, without reaping it.

        Not reaping keeps its zombie in the group, so the group id cannot be
        reused and ``killpg`` still reaches only the command's processes.
        """
        if self._process.returncode is not None:
            return True
        if _waitid is None:  # pragma: no cover - platforms without waitid
            return self._process.poll() is not None
        try:
            return _waitid(os.P_PID, self._process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def chunks(self) -> Iterator[tuple[int, bytes]]:
        """Yield ``(stream, chunk)`` (0 stdout, 1 stderr) until the command is done.

        Done means: both pipes closed and the command exited; or, after the
        deadline, an abort or a forwarded signal, the command exited (what is
        still buffered in the pipes is read first).  Closing the generator
        early kills the process group; either way the child is reaped before
        this returns.
        """
        pipes = ChildPipes(self._process, self._stdin, self._merged)
        finished = False
        try:
            for stream, chunk in self._pump(pipes):
                self._caps[stream].feed(chunk)
                self._ends_with_newline = chunk[-1] == 10
                yield stream, chunk
            finished = True
        finally:
            pipes.close()
            if not finished:
                # Closed early (an error downstream, or the consumer stopped): end the group.
                _signal_group(self._process, SIGKILL)
            self._reap()

    def _pump(self, pipes: ChildPipes) -> Iterator[tuple[int, bytes]]:
        """The capture loop: what ``pipes`` yield, until the command is done (see ``chunks``)."""
        process = self._process
        deadline = None if self._timeout is None else self._started + self._timeout
        exit_poll = _FIRST_EXIT_POLL
        while True:
            now = time.monotonic()
            if self._stop_at is None and deadline is not None and now >= deadline and self._leader_exited():
                # At the deadline the command has exited on its own: what its pipes still hold is
                # read, and when they reach their end it is done, its exit status its own, not a
                # timeout. A pipe still open is held by a process it left running: the timeout
                # applies, to the whole group (below).
                yield from pipes.held()
                if not pipes.open:
                    return
            self._stop_if_due(now, deadline)
            stopping = self._stop_at is not None
            if stopping or not pipes.open:
                if self._leader_exited():
                    if stopping:
                        # Whoever else holds the pipe (a process that left the
                        # group) does not hold up the call: end the group, take
                        # what is already buffered, and return.
                        _signal_group(process, SIGKILL)
                        yield from pipes.buffered()
                        return
                    if not pipes.open:
                        return
                if not pipes.watching_exit:
                    pipes.watch_exit()
                    continue  # it may have exited meanwhile: look again before waiting
                assert self._kill_at is not None or not stopping
                if stopping and not self._killed and now >= self._kill_at:  # type: ignore[operator]
                    _signal_group(process, SIGKILL)
                    self._killed = True
            wake = self._wake_after(now, deadline, stopping)
            if not pipes.open and not pipes.feeds_stdin and pipes.exit_fd is None:
                # No pidfd to wait on: look again soon, then less often.
                time.sleep(max(min(wake, exit_poll), 0.0))
                exit_poll = min(exit_poll * 2, _TICK)
                continue
            yield from pipes.ready(max(wake, 0))

    def _stop_if_due(self, now: float, deadline: Optional[float]) -> None:
        """At the deadline or an abort, tell the group to stop (SIGTERM) and start the grace."""
        if self._stop_at is not None:
            return
        aborted = self._abort is not None and self._abort.is_set()
        if aborted or (deadline is not None and now >= deadline):
            self._timed_out = not aborted
            _signal_group(self._process, SIGTERM)
            self._begin_stop(now)

    def _wake_after(self, now: float, deadline: Optional[float], stopping: bool) -> float:
        """How long the loop may wait: a tick, or less when the deadline or the kill is nearer."""
        if deadline is not None and not stopping:
            return min(_TICK, deadline - now)
        if stopping and not self._killed:
            return min(_TICK, self._kill_at - now)  # type: ignore[operator]
        return _TICK

    def output(self) -> Iterator[bytes]:
        """The output's chunks in arrival order (both streams), driving the command.

        Closing the iterator before the end kills the command (see ``chunks``).
        """
        chunks = self.chunks()
        try:
            for _, chunk in chunks:
                yield chunk
        finally:
            chunks.close()

    def combined_output(self) -> _Output:
        """Both streams' chunks in arrival order, for a consumer such as
        ``store.write_stream``, as a context manager (``with run.combined_output()
        as chunks``); leaving the block early kills the command."""
        return _Output(self.output())

    def _reap(self) -> None:
        process = self._process
        process.close_pipes()
        if process.wait(_TERMINATE_GRACE) is None:
            _signal_group(process, SIGKILL)
            process.wait()
        with _RUNNING_LOCK:
            _RUNNING.pop(id(self), None)
        if self._finished is None:
            self._finished = time.monotonic()

    def drain(self) -> None:
        for _ in self.chunks():
            pass

    @property
    def output_lines(self) -> int:
        """Lines of output so far as ``wc -l`` counts them, plus one for a final
        line without a newline (``seq 1 10`` is 10 lines; no output is 0)."""
        newlines = sum(cap.total_lines - 1 for cap in self._caps)
        total = sum(cap.total_bytes for cap in self._caps)
        return counted_lines(newlines, total, self._ends_with_newline)

    @property
    def held(self) -> StreamCap:
        """The output kept in memory (stdout's cap; the whole stream when merged):
        its start and, apart, its true end (``head``, ``tail``), the totals
        written and whether the cap dropped bytes between them."""
        return self._caps[0]

    def result(self, resource: Optional[Resource] = None) -> ProcessResult:
        out, err = self._caps
        finished = self._finished if self._finished is not None else time.monotonic()
        return ProcessResult(
            exit_code=self._process.returncode if self._process.returncode is not None else -1,
            stdout=out.value(), stderr=err.value(),
            stdout_truncated=out.truncated, stderr_truncated=err.truncated,
            stdout_bytes=out.total_bytes, stderr_bytes=err.total_bytes,
            timed_out=self._timed_out, duration=finished - self._started, resource=resource,
        )


def kill_running() -> None:
    """Kill (SIGKILL) the process group of every command this process started and has not reaped,
    foreground and background alike, and have each one's capture return as after an abort.

    For a server whose teardown must end now (it got a signal while already ending its commands
    with their SIGTERM grace): a group is killed at once rather than after its grace.
    """
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for command in running:
        command.send_signal(SIGKILL)


class _Output:
    """``combined_output``'s context manager (contextlib's costs start-up):
    the output's iterator, closed when the block ends."""

    __slots__ = ("_output",)

    def __init__(self, output: Iterator[bytes]) -> None:
        self._output = output

    def __enter__(self) -> Iterator[bytes]:
        return self._output

    def __exit__(self, *exc_info: object) -> None:
        self._output.close()


def _spill_target(spill: object) -> Optional[Spill]:
    """``spill`` checked before the command starts.

    :raises TypeError: not a (ToolOutputStore, str, str) tuple.
    :raises ValueError: an empty or overlong id.
    """
    if spill is None:
        return None
    from .store import ToolOutputStore  # already imported: the caller made the store

    if not (isinstance(spill, tuple) and len(spill) == 3):
        raise TypeError("spill must be (store, session_id, tool_call_id)")
    if not isinstance(spill[0], ToolOutputStore):
        raise TypeError(f"spill must be (store, session_id, tool_call_id) with a ToolOutputStore first, "
                        f"not {type(spill[0]).__name__}")
    for value, name in zip(spill[1:], ("spill's session_id", "spill's tool_call_id")):
        check_metadata(id_string(value, name), name)
    return spill  # type: ignore[return-value]


def _run(command: Command, *, cwd, env, timeout, stdin, max_output_bytes, max_error_bytes, keep, spill,
         merge_stderr, abort: Optional[threading.Event] = None) -> ProcessResult:
    target = _spill_target(spill)
    # A store server that cannot be reached fails now, before the command runs (as the bash tool's
    # rule is): found only when the output first spills, the command would have run, its effects
    # done, and its exit code and output been lost with the error.
    capture = RunningCommand(command, cwd=cwd, env=env, timeout=timeout, stdin=stdin, max_output_bytes=max_output_bytes,
                             max_error_bytes=max_error_bytes, keep=keep, abort=abort, merge_stderr=merge_stderr,
                             before_start=None if target is None else target[0].ping)
    if target is None:
        capture.drain()
        return capture.result()
    store, session_id, tool_call_id = target
    # truncate_stream holds the output while it is under the store's limits and writes nothing then.
    with capture.combined_output() as output:
        resource = store.truncate_stream(session_id, tool_call_id, output).resource
    return capture.result(resource)


def run(command: Command, *, cwd: Optional[Union[str, os.PathLike[str]]] = None,
        env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
        stdin: Optional[Union[bytes, str]] = None, max_output_bytes: int = MAX_CAPTURE_BYTES,
        max_error_bytes: int = MAX_CAPTURE_BYTES, keep: str = "head_tail",
        spill: Optional[Spill] = None, merge_stderr: bool = False) -> ProcessResult:
    """Run ``command`` and capture its output within the caps.

    :param command: a ``str`` runs through the shell; a list of ``str`` runs directly.
    :param timeout: a deadline for the call, in seconds: then the process group
        gets SIGTERM (SIGKILL after a short grace) and the call returns what was
        captured, with ``timed_out``, as soon as the command itself has exited,
        even if a process that left the group still holds the pipe.
    :param stdin: bytes (or text, encoded as UTF-8) given to the command.
    :param max_output_bytes: the most stdout bytes kept in memory.
    :param max_error_bytes: the most stderr bytes kept in memory.
    :param keep: ``"head_tail"`` keeps the start and the true end of each
        stream; ``"head"`` only the start.
    :param spill: ``(store, session_id, tool_call_id)``: also stream the whole
        combined output into that store when it is over the store's limits
        (``truncate_stream``'s rule: an output within them is not stored);
        the result's ``resource`` names it.  With ``merge_stderr`` the stored
        bytes are the terminal's order.  Without it the two streams come
        through two pipes and are stored as they are read: each stream's own
        bytes in order, but lines written close together to stdout and
        stderr may be stored in another order than a terminal shows
        (``echo out1; echo err1 >&2; echo out2`` can be stored as
        ``out1 out2 err1``).
    :param merge_stderr: give the command one pipe for stdout and stderr (as
        ``2>&1`` does), so the output keeps the order a terminal shows;
        ``stdout`` then holds it all and ``stderr`` is empty.
    :raises TypeError: a malformed command or argument (``env`` not a mapping of
        str to str, ``spill`` not a store and two ids).
    :raises ValueError: a cap below 1, an unknown ``keep`` or a non-positive timeout;
        a NUL or a lone surrogate in the command, an argument, ``cwd`` or ``env``
        (no process can be given one), or a lone surrogate in ``stdin`` text. The
        message names the argument; nothing was started.
    :raises OSError: the command could not be started (for example, a missing
        program or ``cwd``).
    :raises StorageError: with ``spill``, a store server that cannot be reached
        (checked with ``store.ping()`` before the command starts: nothing was
        run); or storing the output failed while the command ran (the store
        went away, the disk filled): its process group was killed if it was
        still running, and its exit code and output are not returned.
    """
    return _run(command, cwd=cwd, env=env, timeout=timeout, stdin=stdin, max_output_bytes=max_output_bytes,
                max_error_bytes=max_error_bytes, keep=keep, spill=spill, merge_stderr=merge_stderr)


async def arun(command: Command, *, cwd: Optional[Union[str, os.PathLike[str]]] = None,
               env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
               stdin: Optional[Union[bytes, str]] = None, max_output_bytes: int = MAX_CAPTURE_BYTES,
               max_error_bytes: int = MAX_CAPTURE_BYTES, keep: str = "head_tail",
               spill: Optional[Spill] = None, merge_stderr: bool = False) -> ProcessResult:
    """``run`` for asyncio: the same arguments and the same result.

    The capture loop runs in a worker thread; cancelling the awaiting task
    terminates the process group (SIGTERM, then SIGKILL) before it returns.
    """
    import asyncio  # here, not at the top: it alone would triple ``import overspill``'s time
    import threading  # here: only the worker thread's abort needs it (start-up)

    abort = threading.Event()
    task = asyncio.get_running_loop().run_in_executor(
        None, lambda: _run(command, cwd=cwd, env=env, timeout=timeout, stdin=stdin,
                           max_output_bytes=max_output_bytes, max_error_bytes=max_error_bytes, keep=keep,
                           spill=spill, merge_stderr=merge_stderr, abort=abort))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        abort.set()
        try:
            await task
        except Exception:  # the cancellation is what the caller sees
            pass
        raise
