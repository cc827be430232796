"""Starting a command with its output on pipes, without importing ``subprocess``.

``subprocess`` alone costs a short ``overspill run`` more than a third of its
start-up (it imports signal and enum, threading, locale and re, selectors,
contextlib).  A shell command without a working folder, the bash tool's and
``overspill run``'s case, is started here with ``os.posix_spawn`` and the same
promises ``subprocess.Popen(shell=True, start_new_session=True)`` keeps: a new
session (so its group can be signalled as one), SIGPIPE and SIGXFSZ at their
defaults (Popen's ``restore_signals``), and none of this process's inheritable
descriptors above 2 (Popen's ``close_fds``).  Everything else (a list of
arguments, whose PATH lookup must use the ``env`` given, or a ``cwd``) is
started by ``subprocess.Popen`` exactly as before, imported then.

Either way the parent's ends of the pipes are plain descriptors, non-inheritable,
and a ``Child`` reaps the process with the same return-code convention as Popen
(minus the signal number when a signal ended it).
"""

from __future__ import annotations

import os
import time

# The C module: its constants are plain ints, without signal's enum (start-up).
import _signal

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    import subprocess
    from collections.abc import Mapping, Sequence
    from typing import Optional, Union

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["Child", "spawn"]

# Looked up when a command starts, so a test can take the fallback (Popen) path.
_posix_spawn = getattr(os, "posix_spawn", None)
_SHELL = "/bin/sh"
# Where this process's open descriptors are listed (Linux; elsewhere Popen is used).
_OPEN_FDS = "/proc/self/fd"
# Pipe buffers are enlarged to this where Linux allows: a chatty command blocks less often.
PIPE_SIZE = 1024 * 1024
# Popen's restore_signals: the interpreter ignores these, the command must not.
_DEFAULT_SIGNALS = tuple(getattr(_signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(_signal, name))


def _enlarge_pipe(fd: int) -> None:
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:  # above the system's pipe-max-size: keep the default
            pass


class Child:
    """A started command: its pid (also its process group's id), its
    ``returncode`` once reaped, and the parent's ends of its pipes as
    descriptors (``stdin`` None unless it is fed; ``stderr`` None when merged
    into ``stdout``)."""

    __slots__ = ("pid", "returncode", "stdin", "stdout", "stderr", "_popen")

    def __init__(self, pid: int, stdin: Optional[int], stdout: int, stderr: Optional[int],
                 popen: Optional[subprocess.Popen[bytes]] = None) -> None:
        self.pid = pid
        self.returncode: Optional[int] = None
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        # Set when Popen started it: Popen then does the reaping (its bookkeeping stays right).
        self._popen = popen

    def poll(self) -> Optional[int]:
        """Reap the command if it has exited; its return code, or None while it runs."""
        return self.wait(0.0)

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Reap the command, waiting up to ``timeout`` seconds (None: until it exits).

        :returns: the return code (``-N`` when signal N ended it), or None if it
            is still running after ``timeout``.
        """
        if self.returncode is not None:
            return self.returncode
        if self._popen is not None:
            return self._wait_popen(timeout)
        if timeout is None:
            self._reaped(0)
            return self.returncode
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while not self._reaped(os.WNOHANG):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return self.returncode

    def _reaped(self, options: int) -> bool:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:
            # Reaped elsewhere (SIGCHLD ignored): its status is lost, as Popen takes it.
            self.returncode = 0
            return True
        if pid == 0:
            return False
        self.returncode = os.waitstatus_to_exitcode(status)
        return True

    def _wait_popen(self, timeout: Optional[float]) -> Optional[int]:
        popen = self._popen
        assert popen is not None
        if timeout == 0.0:
            self.returncode = popen.poll()
            return self.returncode
        import subprocess  # already imported: Popen started the command

        try:
            self.returncode = popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def close_stdin(self) -> None:
        """Close the parent's end of stdin (the command then reads its end)."""
        fd, self.stdin = self.stdin, None
        if fd is not None:
            _close(fd)

    def close_pipes(self) -> None:
        """Close the parent's ends of every pipe (idempotent)."""
        self.close_stdin()
        for name in ("stdout", "stderr"):
            fd = getattr(self, name)
            setattr(self, name, None)
            if fd is not None:
                _close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _inheritable_fds() -> Optional[list[int]]:
    """This process's inheritable descriptors above 2 (the ones ``exec`` would pass
    on); None where they cannot be listed."""
    try:
        names = os.listdir(_OPEN_FDS)
    except OSError:
        return None
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
    return found


def spawn(command: Union[str, Sequence[str]], *, cwd: Optional[Union[str, os.PathLike[str]]],
          env: Optional[Mapping[str, str]], feed_stdin: bool, inherit_stdin: bool, merge_stderr: bool) -> Child:
    """Start ``command`` in a new session with its output on pipes.

    :param command: a ``str`` runs as ``/bin/sh -c command``; a list of ``str``
        runs directly (its program looked up in ``env``'s PATH, as Popen does).
    :param env: the command's whole environment (None: this process's).
    :param feed_stdin: give it a pipe for stdin (``Child.stdin``); otherwise
        this process's stdin when ``inherit_stdin``, else ``/dev/null``.
    :param merge_stderr: stderr goes to stdout's pipe (``2>&1``).
    :raises OSError: the command could not be started (a missing program or
        ``cwd``, with its name in ``filename``).
    :raises TypeError, ValueError: an environment Popen would refuse.
    """
    fds: list[int] = []
    try:
        out_r, out_w = os.pipe()
        fds += (out_r, out_w)
        err_r = err_w = None
        if not merge_stderr:
            err_r, err_w = os.pipe()
            fds += (err_r, err_w)
        in_r = in_w = None
        if feed_stdin:
            in_r, in_w = os.pipe()
            fds += (in_r, in_w)
        for fd in (out_r, err_r):
            if fd is not None:
                _enlarge_pipe(fd)
        child_ends = (in_r, out_w, err_w)
        # A descriptor 0-2 among the child's ends (this process has closed a
        # standard stream) needs Popen's careful shuffle.
        low = any(fd is not None and fd < 3 for fd in child_ends)
        inherited = None
        if isinstance(command, str) and cwd is None and _posix_spawn is not None and not low:
            inherited = _inheritable_fds()
        if inherited is not None:
            pid = _spawn_shell(command, env, in_r, out_w, err_w, inherit_stdin, inherited)
            popen = None
        else:
            popen = _popen(command, cwd, env, in_r, out_w, err_w, inherit_stdin)
            pid = popen.pid
    except BaseException:
        for fd in fds:
            _close(fd)
        raise
    for fd in child_ends:
        if fd is not None:
            _close(fd)
    if in_w is not None:
        os.set_blocking(in_w, False)
    return Child(pid, in_w, out_r, err_r, popen)


def _spawn_shell(command: str, env: Optional[Mapping[str, str]], in_r: Optional[int], out_w: int,
                 err_w: Optional[int], inherit_stdin: bool, inherited: list[int]) -> int:
    actions: list[tuple] = []
    if in_r is not None:
        actions.append((os.POSIX_SPAWN_DUP2, in_r, 0))
    elif not inherit_stdin:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0))
    actions.append((os.POSIX_SPAWN_DUP2, out_w, 1))
    actions.append((os.POSIX_SPAWN_DUP2, out_w if err_w is None else err_w, 2))
    actions.extend((os.POSIX_SPAWN_CLOSE, fd) for fd in inherited)
    assert _posix_spawn is not None
    return _posix_spawn(_SHELL, [_SHELL, "-c", command], _current_environment() if env is None else env,
                        file_actions=actions, setsigdef=_DEFAULT_SIGNALS, setsid=True)


def _current_environment() -> Mapping[Union[str, bytes], Union[str, bytes]]:
    """This process's environment as ``os.environ`` holds it, for ``posix_spawn``.

    ``os.environ`` keeps its variables encoded in a plain dict (``_data``, in
    every CPython since 3.2); handing that dict over spares ``posix_spawn``
    decoding and encoding every variable through the mapping's Python methods
    (~0.1 ms of a ~1 ms short command), and reads it in one step that another
    thread's change cannot split.  The same variables either way.
    """
    encoded = getattr(os.environ, "_data", None)
    return encoded if isinstance(encoded, dict) else os.environ


def _popen(command: Union[str, Sequence[str]], cwd: Optional[Union[str, os.PathLike[str]]],
           env: Optional[Mapping[str, str]], in_r: Optional[int], out_w: int, err_w: Optional[int],
           inherit_stdin: bool) -> subprocess.Popen[bytes]:
    import subprocess  # here: only a list of arguments or a working folder needs it

    stdin: object = in_r if in_r is not None else (None if inherit_stdin else subprocess.DEVNULL)
    return subprocess.Popen(
        command, shell=isinstance(command, str), cwd=cwd, env=None if env is None else dict(env),
        stdin=stdin, stdout=out_w, stderr=out_w if err_w is None else err_w, bufsize=0,
        start_new_session=True,  # its own process group, so a timeout reaches grandchildren
    )
