"""The parent's ends of a running command's pipes, behind one poll selector.

Output pipes are read in 1 MiB chunks (their buffers enlarged to 1 MiB where
Linux allows), stdin is fed without blocking, and, once asked, a pidfd turns
readable when the command exits, so the capture loop (``capture``) waits for
output, stdin room and the exit in one ``select``.  This module moves bytes;
when to stop, signal or give up is the capture loop's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (``overspill run``); annotations are never evaluated
    import subprocess
    from collections.abc import Iterator
    from typing import Optional

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

# A pidfd (Linux 5.3+) turns readable when the process exits, so the loop can
# wait for the exit in the same select as for the pipes, without a poll tick.
_pidfd_open = getattr(os, "pidfd_open", None)

__all__ = ["ChildPipes"]

_READ_SIZE = 1024 * 1024
_PIPE_SIZE = 1024 * 1024
# The selector key data of stdin and of the pidfd (output pipes are 0 and 1).
_STDIN = -1
_EXIT = -2
_Selector = getattr(selectors, "PollSelector", selectors.SelectSelector)


def _enlarge_pipe(fd: int) -> None:
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # above the system's pipe-max-size: keep the default
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)


class ChildPipes:
    """The pipes of ``process``: stdout (0) and, unless ``merged``, stderr (1);
    its stdin when it has one, fed ``stdin``'s bytes.

    ``open`` counts the output pipes not yet at their end; ``feeds_stdin``
    says whether stdin is a pipe; ``watching_exit`` whether ``watch_exit``
    was called, and ``exit_fd`` is the pidfd it found.
    """

    def __init__(self, process: subprocess.Popen[bytes], stdin: Optional[bytes], merged: bool) -> None:
        assert process.stdout is not None
        self._process = process
        # poll, as subprocess.communicate uses: no descriptor of its own to create and
        # no system call per registration, which a short command would notice.
        self._selector = _Selector()
        self._pending = memoryview(stdin) if stdin is not None else None
        pipes = [process.stdout] if merged else [process.stdout, process.stderr]
        for index, pipe in enumerate(pipes):
            assert pipe is not None
            _enlarge_pipe(pipe.fileno())
            self._selector.register(pipe.fileno(), selectors.EVENT_READ, index)
        self.feeds_stdin = process.stdin is not None
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            self._selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, _STDIN)
        self.open = len(pipes)
        # Opened only when the loop has to wait for the exit: most commands have
        # exited by the time their pipes close, and then it costs nothing.
        self.exit_fd: Optional[int] = None
        self.watching_exit = False

    def watch_exit(self) -> None:
        """Register a pidfd of the command, where pidfds are to be had (else
        ``exit_fd`` stays None and the loop polls for the exit)."""
        self.watching_exit = True
        if _pidfd_open is None:  # pragma: no cover - not Linux
            return
        try:
            fd = _pidfd_open(self._process.pid)
        except OSError:  # pragma: no cover - a kernel before 5.3, or a seccomp filter
            return
        self._selector.register(fd, selectors.EVENT_READ, _EXIT)
        self.exit_fd = fd

    def ready(self, timeout: float) -> Iterator[tuple[int, bytes]]:
        """Wait up to ``timeout`` seconds; feed stdin and yield ``(stream, chunk)``
        for what the output pipes hold (an exit or a pipe's end yields nothing)."""
        for key, _ in self._selector.select(timeout):
            if key.data == _EXIT:
                # The command exited; the loop's next turn sees it (waitid).
                # Once is enough: a readable pidfd stays readable.
                self._selector.unregister(key.fd)
                continue
            if key.data == _STDIN:
                self._feed_stdin()
                continue
            try:
                chunk = os.read(key.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not chunk:
                self._selector.unregister(key.fd)
                self.open -= 1
                continue
            yield key.data, chunk

    def buffered(self) -> Iterator[tuple[int, bytes]]:
        """``(stream, chunk)`` for what the output pipes hold right now, without waiting for more."""
        for key in list(self._selector.get_map().values()):
            if key.data < 0:  # stdin or the pidfd
                continue
            os.set_blocking(key.fd, False)
            while True:
                try:
                    chunk = os.read(key.fd, _READ_SIZE)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    break
                yield key.data, chunk

    def _feed_stdin(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        pending = self._pending
        try:
            if pending:
                written = os.write(stdin.fileno(), pending[:_PIPE_SIZE])
                pending = self._pending = pending[written:]
        except BlockingIOError:
            return
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.EINVAL):
                raise
            pending = None  # the child closed its stdin: what it did not read is dropped
        if not pending:
            self._pending = None
            self._selector.unregister(stdin.fileno())
            with contextlib.suppress(OSError):
                stdin.close()

    def close(self) -> None:
        """Close the selector and the pidfd (the pipes are the process's to close)."""
        self._selector.close()
        if self.exit_fd is not None:
            os.close(self.exit_fd)
