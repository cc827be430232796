"""grep's regular-expression work, done in a worker process within a time budget.

Python's ``re`` has no time bound, holds the GIL while it matches and, in a
thread that is not the main one, hears no signal: one pattern such as
``(a+)+$`` would stall the whole process (an MCP server's pings and
cancellations with it).  A ``Search`` sends each block to a worker (the
script ``_regex_worker``, run by this interpreter) and waits for the matching
lines without holding the GIL; when the search's time is spent, or its
``abort`` event is set, or the wait is interrupted (Ctrl-C), the worker is
killed.  Idle workers are kept for the next search, so a search seldom pays
for a process start.  webfetch's HTML conversion runs in the same workers
(``convert_html``), for the same reasons: ``html.parser`` is quadratic on
some malformed pages.
"""

from __future__ import annotations

import atexit
import os
import re
import selectors
import subprocess
import sys
import threading
import time
import warnings
from array import array
from pathlib import Path
from typing import Optional

from ..errors import PatternTooSlowError, SearchError
from ._regex_worker import (_AFTER, _ANSWER, _CUT, _FAILED, _PIECE, _REQUEST, LINES, MARKDOWN, PIECE, PLAIN_TEXT,
                            TEXT, TEXT_AFTER)

__all__ = ["BYTES_PER_SECOND", "TIME_LIMIT", "Cancelled", "Search", "compile_pattern", "convert_html"]

#: Seconds a search may spend matching, plus one second per ``BYTES_PER_SECOND``
#: bytes it searches (a large output may take longer than a small one; a
#: pattern that backtracks without end never gets longer).
TIME_LIMIT = 10.0
BYTES_PER_SECOND = 16 << 20
# How often a wait looks at its abort event.
_TICK = 0.05
_KEPT_WORKERS = 2
_WORKER = Path(__file__).with_name("_regex_worker.py")


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile``, without the FutureWarning Python gives for a pattern whose
    meaning a later version may change (``[[:alpha:]]``, ``[a&&b]``): the
    pattern is the model's, and the warning would reach the host's stderr.

    A pattern ``re`` cannot compile for other reasons than its syntax (a repeat
    count past what ``re`` can hold, ``a{99999999999}``: OverflowError; groups
    nested deeper than its recursive parser goes: RecursionError) is refused
    the same way: every caller catches ``re.error`` and tells the model in one line.

    :raises re.error: an invalid pattern.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern, flags)
        except OverflowError as error:
            raise re.error(str(error) or "a number in it is too large") from None
        except RecursionError:
            raise re.error("it nests too deeply") from None


class Cancelled(Exception):
    """The search's abort event was set; its worker is gone."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self) -> None:
        if not sys.executable:
            raise SearchError("cannot start the search: this Python has no interpreter path to run a worker with")
        try:
            # Its own session: a terminal's Ctrl-C reaches overspill, which ends the worker itself.
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, bufsize=0, start_new_session=True)
        except OSError as error:
            raise SearchError(f"cannot start the search's worker process: {error.strerror or error}") from None
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests = self.process.stdin
        self.answers = self.process.stdout.fileno()
        self.owner = os.getpid()

    def kill(self) -> None:
        process = self.process
        if process.returncode is None:
            try:
                process.kill()
            except ProcessLookupError:  # pragma: no cover - it ended on its own meanwhile
                pass
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:  # pragma: no cover - a pipe the worker broke
                    pass
        process.wait()


class _Pool:
    """Idle workers, for this process only (a forked child starts its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.owner == os.getpid() and worker.process.poll() is None:
                    return worker
                if worker.owner == os.getpid():
                    worker.kill()  # ended on its own: reap it
        return _Worker()

    def give_back(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < _KEPT_WORKERS and worker.owner == os.getpid():
                self._idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        """End and reap this process's idle workers (at exit: a worker left to
        see its pipe close would outlive the interpreter unreaped)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            if worker.owner == os.getpid():
                worker.kill()


_POOL = _Pool()
atexit.register(_POOL.close)


#: The longest time limit a search keeps (about 32 years): any longer one is this.
_LONGEST = 1e9


class Search:
    """The regular-expression work of one grep call, in a worker process.

    Use as a context manager; ``lines`` and ``text`` return the indices of the
    matching lines of one block each (the rules are ``_regex_worker``'s).
    Together they may take ``time_limit`` seconds plus one per
    ``BYTES_PER_SECOND`` bytes searched.

    :param pattern: a pattern ``re.compile`` accepts with ``flags`` (the caller
        compiles it first, so a bad pattern is its ``ValueError``, not ours).
    :param abort: when set, the search ends (``Cancelled``) within ``_TICK``.
    """

    def __init__(self, pattern: str, flags: int = 0, *, time_limit: float = TIME_LIMIT,
                 abort: Optional[threading.Event] = None) -> None:
        self._pattern = pattern.encode("utf-8", "surrogatepass")
        self._flags = int(flags)
        self._shown = pattern
        # inf (or 10**400) means no limit: a billion seconds is as good, and a wait and the worker's
        # CPU limit take it (neither takes an infinity).
        self._time_limit = min(time_limit, _LONGEST)
        self._abort = abort
        self._searched = 0
        self._spent = 0.0
        self._worker: Optional[_Worker] = None

    def __enter__(self) -> Search:
        return self

    def __exit__(self, *exc_info: object) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            _POOL.give_back(worker)

    def lines(self, payload: bytes) -> list[int]:
        """Indices of the lines of ``payload`` (lines ended by ``\\n``) in which the pattern is found."""
        return self._ask(LINES, self._flags, payload)

    def text(self, payload: bytes, skip: int = 0, seen: Optional[int] = None) -> list[int]:
        """Indices of the lines of the text ``payload`` in which the pattern (``re.MULTILINE``) is
        found, each line searched alone as ``lines`` does (``_regex_worker.TEXT``).  ``skip``: the
        first bytes are context before a search that starts inside a line; a match that starts in
        them does not count.  ``seen`` (``skip`` when None): the first line's first bytes that a
        reader has seen; a match that they had (the line cut there) does not count (``_regex_worker.TEXT_AFTER``)."""
        seen = skip if seen is None else max(seen, skip)
        if seen:
            return self._ask(TEXT_AFTER, self._flags | re.MULTILINE, _AFTER.pack(skip, seen) + payload)
        return self._ask(TEXT, self._flags | re.MULTILINE, payload)

    def piece(self, before: bytes, middle: bytes, after: bytes, last: bool) -> bool:
        """Whether a match (``re.MULTILINE``) starts in ``middle``, the part of a piece of one long
        line's view that this piece answers for (``_regex_worker.piece_matches``): ``before`` and
        ``after`` are the text around it, ``last`` says the piece ends the line.  Each part starts
        at a character's start."""
        payload = _PIECE.pack(len(before), len(middle), len(after), last) + before + middle + after
        return bool(self._ask(PIECE, self._flags | re.MULTILINE, payload))

    def _ask(self, operation: int, flags: int, payload: bytes) -> list[int]:
        self._searched += len(payload)
        allowed = self._time_limit + self._searched / BYTES_PER_SECOND - self._spent
        worker = self._worker if self._worker is not None else _POOL.take()
        self._worker = None  # until it answers, a worker is not fit to be given back
        started = time.monotonic()
        try:
            status, body = _request(worker, operation, flags, self._pattern, payload, allowed, self._abort)
        except _OutOfTime:
            raise PatternTooSlowError(
                f"pattern too slow: {self._shown!r} was stopped after "
                f"{self._spent + time.monotonic() - started:.1f} s of matching; narrow it (literal text, "
                "an anchor, no nested repeats such as (a+)+)") from None
        finally:
            self._spent += time.monotonic() - started
        self._worker = worker
        if status == _FAILED:
            raise SearchError(f"the search failed: {body.decode('utf-8', 'replace')}")
        found = array("Q")
        found.frombytes(body)
        return found.tolist()


class _OutOfTime(Exception):
    """A request's time ran out; its worker was killed."""


def convert_html(html: str, markdown: bool, seconds: Optional[float],
                 limit: Optional[int] = None) -> Optional[tuple[str, bool]]:
    """``html`` as Markdown (or, ``markdown`` false, plain text) by ``_html``'s
    rules, converted in a worker process within ``seconds`` (None: no bound),
    built only up to past ``limit`` characters (None: all of it; ``_html.convert_page``).

    ``html.parser`` is quadratic on some malformed pages (60 KB of unclosed
    ``<a `` tags take a minute, CVE-2025-6069) and holds the GIL meanwhile:
    in a worker the conversion can be stopped, and the host keeps answering.

    :returns: the converted text and whether it is all of it (false: its start, past ``limit``),
        or None when ``seconds`` ran out (the worker is killed).
    :raises SearchError: the worker could not be started or failed (the message says how).
    """
    allowed = _LONGEST if seconds is None else min(max(seconds, 0.0), _LONGEST)
    payload = html.encode("utf-8", "surrogatepass")
    worker = _POOL.take()
    try:
        # (A conversion's flags are its limit, 0 for none.)
        status, body = _request(worker, MARKDOWN if markdown else PLAIN_TEXT, limit or 0, b"", payload, allowed,
                                None, "conversion")
    except _OutOfTime:
        return None
    _POOL.give_back(worker)
    if status == _FAILED:
        raise SearchError(f"the conversion failed: {body.decode('utf-8', 'replace')}")
    return body.decode("utf-8", "surrogatepass"), status != _CUT


def _request(worker: _Worker, operation: int, flags: int, pattern: bytes, payload: bytes, allowed: float,
             abort: Optional[threading.Event], work: str = "search") -> tuple[int, bytes]:
    """Send one request to ``worker`` and wait for its answer (status, body) at most ``allowed``
    seconds; the worker is killed when the wait ends otherwise.  ``work`` names the work in an error.

    :raises _OutOfTime: ``allowed`` ran out.
    :raises Cancelled: ``abort`` was set.
    :raises SearchError: the worker ended unexpectedly.
    """
    started = time.monotonic()
    try:
        header = _REQUEST.pack(operation, flags, max(allowed, 0.0), len(pattern), len(payload))
        _write_all(worker.requests, header + pattern)
        _write_all(worker.requests, payload)
        return _answer(worker, started + allowed, abort)
    except BaseException as error:
        worker.kill()
        if isinstance(error, (BrokenPipeError, EOFError)):
            raise SearchError(f"the {work}'s worker process ended unexpectedly") from None
        raise


def _answer(worker: _Worker, deadline: float, abort: Optional[threading.Event]) -> tuple[int, bytes]:
    """The worker's answer, read until ``deadline`` (``_OutOfTime`` past it) or ``abort`` (``Cancelled``)."""
    received = bytearray()
    needed = _ANSWER.size
    status = -1
    with selectors.DefaultSelector() as selector:
        selector.register(worker.answers, selectors.EVENT_READ)
        while len(received) < needed:
            now = time.monotonic()
            if abort is not None and abort.is_set():
                raise Cancelled
            if now >= deadline:
                raise _OutOfTime
            # (A poll takes at most about 24 days: a longer limit is waited out an hour at a time.)
            wait = min(_TICK if abort is not None else 3600.0, deadline - now)
            if not selector.select(wait):
                continue
            chunk = os.read(worker.answers, max(needed - len(received), 1 << 16))
            if not chunk:
                raise EOFError
            received += chunk
            if status < 0 and len(received) >= _ANSWER.size:
                status, size = _ANSWER.unpack_from(received)
                needed = _ANSWER.size + size
    return status, bytes(received[_ANSWER.size:needed])


def _write_all(pipe: object, data: bytes) -> None:
    """All of ``data`` to an unbuffered pipe (a raw write may take only part of it)."""
    view = memoryview(data)
    while view:
        written = pipe.write(view)  # type: ignore[attr-defined]
        view = view[written:]
