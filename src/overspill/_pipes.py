"""The parent's ends of a running command's pipes, behind one ``poll``.

Output pipes are read in 1 MiB chunks (``_spawn`` enlarged their buffers to
1 MiB where Linux allows), stdin is fed without blocking, and, once asked, a
pidfd turns readable when the command exits, so the capture loop
(``capture``) waits for output, stdin room and the exit in one ``poll``.
This module moves bytes; when to stop, signal or give up is the capture loop's.
``select.poll`` is used directly: ``selectors`` (with math and
collections.abc) costs ``overspill run`` start-up for nothing it needs.
"""

from __future__ import annotations

import errno
import os
import select

from ._spawn import PIPE_SIZE

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (``overspill run``); annotations are never evaluated
    from collections.abc import Iterator
    from typing import Optional

    from ._spawn import Child

# A pidfd (Linux 5.3+) turns readable when the process exits, so the loop can
# wait for the exit in the same poll as for the pipes, without a poll tick.
_pidfd_open = getattr(os, "pidfd_open", None)

__all__ = ["ChildPipes"]

_READ_SIZE = 1024 * 1024
#: Reads of one pipe by ``held``: enough for all its buffer holds (``PIPE_SIZE``, one read) and its end.
_HELD_READS = 4
# What each registered descriptor is (output pipes are 0 and 1).
_STDIN = -1
_EXIT = -2
# A pipe's end shows as POLLHUP (or POLLERR) without POLLIN: it is read then, and gives b"".
_READABLE = select.POLLIN | select.POLLPRI
_WRITABLE = select.POLLOUT


class ChildPipes:
    """The pipes of ``child``: stdout (0) and, unless ``merged``, stderr (1);
    its stdin when it has one, fed ``stdin``'s bytes.

    ``open`` counts the output pipes not yet at their end; ``feeds_stdin``
    says whether stdin is a pipe; ``watching_exit`` whether ``watch_exit``
    was called, and ``exit_fd`` is the pidfd it found.
    """

    def __init__(self, child: Child, stdin: Optional[bytes], merged: bool) -> None:
        self._child = child
        # poll, as subprocess.communicate uses: no descriptor of its own to create and
        # no system call per registration, which a short command would notice.
        self._poll = select.poll()
        # Registered descriptor -> what it is (0/1 output, _STDIN, _EXIT).
        self._fds: dict[int, int] = {}
        self._pending = memoryview(stdin) if stdin is not None else None
        pipes = [child.stdout] if merged else [child.stdout, child.stderr]
        for index, fd in enumerate(pipes):
            assert fd is not None
            self._register(fd, _READABLE, index)
        self.feeds_stdin = child.stdin is not None
        if child.stdin is not None:
            self._register(child.stdin, _WRITABLE, _STDIN)
        self.open = len(pipes)
        # Opened only when the loop has to wait for the exit: most commands have
        # exited by the time their pipes close, and then it costs nothing.
        self.exit_fd: Optional[int] = None
        self.watching_exit = False

    def _register(self, fd: int, events: int, what: int) -> None:
        self._poll.register(fd, events)
        self._fds[fd] = what

    def _unregister(self, fd: int) -> None:
        self._poll.unregister(fd)
        del self._fds[fd]

    def watch_exit(self) -> None:
        """Register a pidfd of the command, where pidfds are to be had (else
        ``exit_fd`` stays None and the loop polls for the exit)."""
        self.watching_exit = True
        if _pidfd_open is None:  # pragma: no cover - not Linux
            return
        try:
            fd = _pidfd_open(self._child.pid)
        except OSError:  # pragma: no cover - a kernel before 5.3, or a seccomp filter
            return
        self._register(fd, _READABLE, _EXIT)
        self.exit_fd = fd

    def ready(self, timeout: float) -> Iterator[tuple[int, bytes]]:
        """Wait up to ``timeout`` seconds; feed stdin and yield ``(stream, chunk)``
        for what the output pipes hold (an exit or a pipe's end yields nothing)."""
        # poll takes milliseconds; round up, so a short wait is not a busy loop.
        events = self._poll.poll(int(-(-timeout * 1000 // 1)) if timeout > 0 else 0)
        for fd, _ in events:
            what = self._fds.get(fd)
            if what is None:
                continue
            if what == _EXIT:
                # The command exited; the loop's next turn sees it (waitid).
                # Once is enough: a readable pidfd stays readable.
                self._unregister(fd)
                continue
            if what == _STDIN:
                self._feed_stdin()
                continue
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not chunk:
                self._unregister(fd)
                self.open -= 1
                continue
            yield what, chunk

    def buffered(self) -> Iterator[tuple[int, bytes]]:
        """``(stream, chunk)`` for what the output pipes hold right now, without waiting for more."""
        for fd, what in list(self._fds.items()):
            if what < 0:  # stdin or the pidfd
                continue
            os.set_blocking(fd, False)
            while True:
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    break
                yield what, chunk

    def held(self) -> Iterator[tuple[int, bytes]]:
        """``(stream, chunk)`` for what the output pipes hold right now, without waiting for more,
        noting each pipe's end (``open``) when it comes.  Once the command has exited, a pipe still
        open after this is held by another process: its end is not merely unread."""
        for fd, what in list(self._fds.items()):
            if what < 0:  # stdin or the pidfd
                continue
            os.set_blocking(fd, False)
            # At most a few reads a pipe: a process still writing as fast as they read would otherwise
            # keep this loop (and the deadline it is asked at) from ending; the pipe then stays open.
            for _ in range(_HELD_READS):
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    self._unregister(fd)
                    self.open -= 1
                    break
                yield what, chunk

    def _feed_stdin(self) -> None:
        fd = self._child.stdin
        assert fd is not None
        pending = self._pending
        try:
            if pending:
                written = os.write(fd, pending[:PIPE_SIZE])
                pending = self._pending = pending[written:]
        except BlockingIOError:
            return
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.EINVAL):
                raise
            pending = None  # the child closed its stdin: what it did not read is dropped
        if not pending:
            self._pending = None
            self._unregister(fd)
            self._child.close_stdin()

    def close(self) -> None:
        """Close the pidfd (the pipes are the child's to close)."""
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None
