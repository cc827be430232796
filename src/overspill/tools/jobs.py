"""Background commands for the model: ``bash(background=True)``, ``wait``, ``kill`` and ``jobs``.

A background command's handle is its output's URI (``tool-output://ID``).
Nothing is kept on the server per model: every answer names the byte offset
to read on from, and the model passes it back (``read``'s ``offset``,
``wait``'s ``offset``).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Optional, Union

from .. import background as _background
from .._arguments import as_float
from .._frontend import WAIT_BUDGET, YIELD_AFTER
from .._owner import current_owner
from ..capture import ProcessResult
from ..config import Limits
from ..errors import OverspillError, ResourceNotFoundError, SearchError
from ..records import Record
from .._store_types import TruncateResult
from ..store import ToolOutputStore
from ._result import ToolResult, bounded, failure, shortened_line, stored_metadata
from .._binary import SNIFF_BYTES, output_is_binary
from .._buffers import VIEW_CR
from .bash import CommandOutput, describe_binary, start_failure, strip_final_newline

if TYPE_CHECKING:
    from ._regex import Search

__all__ = ["DEFAULT_WAIT_BUDGET", "YIELD_AFTER", "background_answer", "background_calls", "jobs", "jobs_listing",
           "kill", "start_background", "wait"]

PathArg = Union[str, "os.PathLike[str]", None]
Progress = Callable[[int], None]

#: The most seconds one ``wait`` call waits by default (the host's tool-call budget).
DEFAULT_WAIT_BUDGET = WAIT_BUDGET
# How often a wait looks for new sealed output.
_POLL = 0.05
# The least time a wait's pattern may spend matching (``timeout=0`` still searches what is new).
_LEAST_MATCH_TIME = 1.0


def background_calls(uri: str, next_offset: int) -> str:
    """The running command's next calls in the model's syntax (a front end that
    speaks another syntax, such as the CLI, replaces exactly this text)."""
    return (f'read(resource="{uri}", offset={next_offset}), wait(resource="{uri}", timeout=..., '
            f'offset={next_offset}) for more, kill(resource="{uri}") to stop it')


def _state_line(record: Record, next_offset: int) -> str:
    """The line after the preview that says what the command is doing and what to call next."""
    uri = record.resource.uri
    size = record.resource.size
    if record.state == "running":
        return f"[running in the background as {uri}: {size} bytes so far; read on with {background_calls(uri, next_offset)}]"
    if record.state == "lost":
        how = ("this process could not finish its record when the command exited" if _given_up(record)
               else f"the process that ran {uri} is gone")
        return f"[lost: {how}; its first {size} bytes are kept and readable, the rest is not]"
    how = _how_it_ended(record.exit_code)
    if record.capture is not None and record.capture[0] > size:
        return f"[{how}; {uri} holds the first {size} of its {record.capture[0]} bytes]"
    return f"[{how}; {uri} holds all {size} bytes]"


def _how_it_ended(code: Optional[int]) -> str:
    """"exited with code N", or "terminated by SIGNAME" for a command a signal ended."""
    if code is not None and code < 0:
        import signal

        try:
            return f"terminated by {signal.Signals(-code).name}"
        except ValueError:
            return f"terminated by signal {-code}"
    return f"exited with code {code}"


def _given_up(record: Record) -> bool:
    """Whether a lost record is one this process, its owner, gave up (``background.Job``: its
    record could not be republished at the command's exit), not one whose owner is gone."""
    return record.owner is not None and record.owner == current_owner()


def _metadata(record: Record, next_offset: int, **extra: object) -> dict[str, object]:
    return {"uri": record.resource.uri, "state": record.state, "exit_code": record.exit_code,
            "size": record.resource.size, "next_offset": next_offset, "complete": record.complete, **extra}


def start_background(store: ToolOutputStore, session_id: str, tool_call_id: str, command: str, *,
                     yield_after: float = YIELD_AFTER, cwd: PathArg = None, env: Optional[Mapping[str, str]] = None,
                     limits: Optional[Limits] = None, abort: Optional[threading.Event] = None) -> ToolResult:
    """``bash(..., background=True)``: start ``command``, wait up to ``yield_after`` seconds, answer.

    A command that ended by then is an ordinary result (its output under
    the limits comes back whole and nothing stays stored).  Otherwise the
    answer is the preview of its output so far and a line naming the handle
    (``tool-output://ID``), its state and the offset to read on from.

    :param abort: when set during the wait (the host's cancellation of this
        call, a server shutting down), the wait ends and the command is
        killed, since its handle was never given to anyone; the answer is an
        error.  After the answer the command runs on whatever ``abort`` does.
    """
    if isinstance(yield_after, bool) or not isinstance(yield_after, (int, float)) or not yield_after >= 0:
        return failure("yield_after must be a number of seconds, at least 0")
    if limits is None:
        limits = store.limits()
    try:
        job = _background.start(store, session_id, tool_call_id, command, cwd=cwd, env=env)
    except OverspillError as error:
        return failure(str(error))
    except (OSError, ValueError, TypeError) as error:
        return failure(start_failure(error))
    if not job.wait(yield_after, abort=abort) and abort is not None and abort.is_set():
        job.kill()  # nobody holds its handle: left running, it would outlive the call that started it unseen
        return failure("bash was cancelled: the background command was killed before its handle was given")
    return background_answer(store, session_id, job.uri, limits, job=job)


def background_answer(store: ToolOutputStore, session_id: str, uri: str, limits: Limits, *,
                      job: Optional[_background.Job] = None, pid: Optional[int] = None) -> ToolResult:
    """The answer for a background command as it is now: an ordinary result when
    it exited (nothing stays stored when its output fits the limits), else the
    preview of its output so far and the line naming its handle and state.

    :param job: the command, when this process runs it (its true end is known
        past ``max_stored_bytes``).
    :param pid: the command's process id, for the host (``metadata["pid"]``).
    """
    given_up: dict[str, object] = {}
    if job is not None:
        # This process owns the output: what the command wrote so far is sealed before the answer
        # looks (the timer would seal it only after a second of quiet, past a short ``yield_after``).
        job.output.seal_now()
        pid = job.pid
        if job.exited.is_set() and job.final is None:
            # Its record could not be republished (``Job._finish``): it reads as lost, what was
            # sealed stays readable, and only this answer can still say how the command ended.
            given_up = {"exit_code": job.running.result().exit_code, "storage_error": str(job.error)}
    try:
        record = store.status(session_id, uri)
        if record.state == "exited":
            return _finished_result(store, session_id, record, limits, job)
        # The owner seals on its own clock: everything shown stops at the size this
        # record states (the state line's "so far", ``size``), never past it.
        size = record.resource.size
        shown = store.preview(session_id, uri, max_lines=limits.max_lines, max_bytes=limits.max_bytes, end=size)
        start = _start_of(store, session_id, uri, size)
    except OverspillError as error:
        return failure(str(error))
    next_offset = shown.next_offset or 0
    text = _body(shown.content, start, record)
    line = _state_line(record, next_offset)
    stopped, storage = _storing_stopped(uri)
    if stopped:
        line = f"{stopped}\n{line}"
    if given_up:
        reason = f"the command exited with code {given_up['exit_code']}; its record could not be republished: {job.error}"
        line = f"[{' '.join(reason.split())}]\n{line}"
    return ToolResult(f"{text}\n{line}" if text else line, False, True, record.resource,
                      {**stored_metadata(shown), **_metadata(record, next_offset, pid=pid), **storage, **given_up})


def _start_of(store: ToolOutputStore, session_id: str, uri: str, size: int) -> bytes:
    """The first bytes stored (whether the output is binary), within the first ``size`` (the size the answer states)."""
    if size <= 0:
        return b""
    return store.read_bytes(session_id, uri, limit=min(SNIFF_BYTES, size))[1]


def _body(content: str, start: bytes, record: Record) -> str:
    """The preview, or a one-line description of binary output."""
    return _binary_line(start, record) or strip_final_newline(content)


def _binary_line(start: bytes, record: Record) -> Optional[str]:
    """The one line that describes a binary output (``start``, its first bytes, decides, as it does
    for bash's answer and ``read``), or None for text: every answer of a background command
    (``bash``'s, ``wait``'s, running or exited) describes it so, never decodes it."""
    if not start or not output_is_binary(start):
        return None
    total = record.capture[0] if record.capture is not None else record.resource.size
    return describe_binary(total, start, record.resource.uri, record.resource.size)


def _finished_result(store: ToolOutputStore, session_id: str, record: Record, limits: Limits,
                     job: Optional[_background.Job]) -> ToolResult:
    """What the foreground bash tool would have answered for the command that already ended."""
    uri = record.resource.uri
    shown = store.preview(session_id, uri, max_lines=limits.max_lines, max_bytes=limits.max_bytes,
                          kept_end=_background.kept_end(uri) if job is None else job.output.kept_end())
    start = _start_of(store, session_id, uri, record.resource.size)
    total = record.capture[0] if record.capture is not None else record.resource.size
    duration = (job.running.result().duration if job is not None
                else max(time.time() - record.created_ms / 1000, 0.0))
    result = ProcessResult(record.exit_code if record.exit_code is not None else -1, b"", b"", False, False, total,
                           0, False, duration)
    lines = record.lines or 0
    binary = _binary_line(start, record)
    # The raw bytes decide storing, as in the foreground (``truncate``): an output over the limits
    # whose view fits them (redraws, escapes) stays stored, its view shown whole with its marker.
    raw_within = (record.capture is None and record.resource.size <= limits.max_bytes
                  and shown.lines <= limits.max_lines)
    if not shown.truncated and not binary and raw_within:
        store._discard(record.id)  # noqa: SLF001 - under the limits: an ordinary result stores nothing
        output = CommandOutput(result, strip_final_newline(shown.content), False, None, lines, None, {})
    elif not shown.truncated and not binary:
        from .._preview import whole_view  # only a view shown whole needs it

        shown = TruncateResult(whole_view(shown.content, uri, record.resource.size, shown.lines,
                                          record.capture[0] if record.capture is not None else None),
                               True, record.resource, shown.lines, 0)  # (reading goes on from the start)
        output = CommandOutput(result, strip_final_newline(shown.content), True, record.resource, lines, None,
                               stored_metadata(shown))
    elif binary:
        output = CommandOutput(result, binary, True, record.resource, lines, None, {})
    else:
        output = CommandOutput(result, strip_final_newline(shown.content), True, record.resource, lines, None,
                               stored_metadata(shown))
    answer = output.tool_result(None)
    answer.metadata.update(state="exited", background=True)
    note, storage = _storing_stopped(uri)
    if note and answer.resource is not None:
        # The stored copy is only the output's start because storing failed, not because of a cap:
        # said above the status line, as the foreground's storage failure is.
        answer = ToolResult(output.text(None, note), answer.is_error, answer.truncated, answer.resource,
                            {**answer.metadata, **storage})
    return answer


def _storing_stopped(uri: str) -> tuple[str, dict[str, object]]:
    """The note for an output whose storing a write or seal failure stopped, said above the state
    line of every answer about it, and the metadata that names the failure (``storage_error``);
    ("", {}) when none did, or where it is not known: only the process that runs or ran the command
    knows (``background.storing_failure``).  The caller has checked the session (``store.status``)."""
    failed = _background.storing_failure(uri)
    if failed is None:
        return "", {}
    return f"[storing the output stopped, not the command: {' '.join(failed.split())}]", {"storage_error": failed}


def wait(store: ToolOutputStore, session_id: str, tool_call_id: str, resource: str, timeout: float,
         pattern: Optional[str] = None, *, offset: Optional[int] = None, budget: float = DEFAULT_WAIT_BUDGET,
         progress: Optional[Progress] = None, abort: Optional[threading.Event] = None) -> ToolResult:
    """Wait for a background command: until it exits, until ``pattern`` appears in its new output, or ``timeout``.

    :param resource: the command's handle (``tool-output://ID``).
    :param timeout: seconds to wait at most (cut to ``budget``).
    :param pattern: a regular expression searched in the text of the new
        output as it stands, its unfinished last line too (a prompt with no
        newline; searched again as it grows), line by line (``^``/``$``
        anchor at lines, and ``$`` at the end so far); the line that holds
        ``offset`` is searched whole (a line whose parts came a seal apart
        matches; at most 64 KiB back), a match there counting when the
        line cut at ``offset`` did not have it (it ends past ``offset``, or
        reads past it, or a ``\\r`` past it redrew the line).  It is matched as
        grep matches a stored output: in each line's view (``store.views``), in a worker process, within grep's time
        budget (``_regex.TIME_LIMIT`` seconds, cut to ``timeout`` but at least
        one, plus one per 16 MiB searched); past it the answer says
        ``pattern too slow: ...`` after the new output.
    :param offset: where the new output starts (the offset an earlier answer
        named); by default the end of the output sealed when the call begins
        (before a character that end cuts in two, as the answers' offsets are).
        An offset inside a character starts at the next one, as a ``read``
        page from it does.
    :param budget: the most seconds one call waits (the host's tool-call budget).
    :param progress: called with the sealed size now and then while waiting.
    :param abort: when set (the host's cancellation), the wait ends within a
        poll, its search's worker killed; the answer is an error.
    :returns: the new output's preview, then a line with the state, whether
        the pattern was found, and the offset to read on from.
    """
    del tool_call_id
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        return failure("timeout must be a number of seconds, at least 0")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        return failure("offset must be a non-negative integer")
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern:
            return failure("pattern must be a non-empty string")
        from ._regex import compile_pattern  # grep's compile: no FutureWarning on the host's stderr

        try:
            compile_pattern(pattern, re.MULTILINE)  # a bad pattern is the model's error, said here
        except re.error as error:
            return failure(f"invalid pattern {pattern!r}: {error}")
    limit = min(as_float(timeout), budget)
    # Taken now: the command may exit while this call waits, and its true end (past
    # max_stored_bytes) goes with the job, kept in memory by this process only.
    job = _background.find(resource)
    try:
        record = store.status(session_id, resource)
        if record.state is None:
            return failure(f"{resource} is a stored output, not a background command; read it with read")
        start = (_sealed_end(store, session_id, record) if offset is None
                 else _page_start(store, session_id, resource, min(offset, record.resource.size)))
        found, record, too_slow = _watch(store, session_id, resource, start, pattern, limit, progress, abort)
        limits = store.limits()
        # Only up to the size of the record last seen: the state line states that size, and
        # bytes sealed since are shown by the next call (a preview past it could say
        # "(no new output)" yet name an offset beyond bytes it never showed).
        kept = None
        if record.state == "exited":  # (the record first: only then is the kept end the output's end)
            kept = _background.kept_end(resource) if job is None else job.output.kept_end()
        shown = store.preview(session_id, resource, offset=start, max_lines=limits.max_lines,
                              max_bytes=limits.max_bytes, end=record.resource.size, kept_end=kept)
        # Binary output is described, not decoded, as bash's answer describes it (its first bytes decide).
        first = _start_of(store, session_id, resource, record.resource.size) if shown.content else b""
    except _Cancelled:
        return failure("wait was cancelled")
    except OverspillError as error:
        return failure(str(error))
    next_offset = shown.next_offset if shown.next_offset is not None else record.resource.size
    omitted: dict[str, object] = {}
    if record.state == "running" and shown.resource is not None and next_offset != shown.resource.size:
        # A follow loop goes on after what was shown (the end of its tail), not from the omitted part:
        # from there the next wait would show the same tail again.  The marker names the omitted part.
        omitted = {"omitted_offset": next_offset}
        next_offset = shown.resource.size
    notes = []
    # A note quoting the model's pattern (of any length) is cut as a failure's line is: within the preview's bound.
    if too_slow is not None:  # the output and the state are still news; the search is what failed
        notes.append(shortened_line(f"[{too_slow}]"))
    elif pattern is not None:
        past = " (in the output's end past its stored copy)" if (
            found is not None and found >= record.resource.size) else ""
        notes.append(shortened_line(f"[pattern {pattern!r} found at byte offset {found}{past}]" if found is not None
                                    else f"[pattern {pattern!r} not seen in the new output]"))
    elif record.state == "running":
        notes.append(f"[waited {limit:g} s]")
    stopped, storage = _storing_stopped(resource)
    if stopped:
        notes.append(stopped)
    # New stored bytes, or past the stored copy (max_stored_bytes) the output's true end.
    body = _body(shown.content, first, record) or "(no new output)"
    text = "\n".join([body, *notes, _state_line(record, next_offset)])
    return ToolResult(text, False, shown.truncated, record.resource,
                      _metadata(record, next_offset, offset=start, match=found, **omitted, **storage))


def _sealed_end(store: ToolOutputStore, session_id: str, record: Record) -> int:
    """Where a wait without an offset starts: the end of the output sealed now, before the first
    bytes of a character or an escape sequence that a running output's sealed end cuts (the store's
    rule for pages and previews, ``_cut_end``).  The earlier answer named that offset; a start past
    those bytes would show the rest of the character as U+FFFD (the character never whole), or the
    rest of the sequence as text.  An exited or lost output's end is final: nothing will complete
    what is cut there."""
    del session_id  # (``record`` is this session's: ``store.status`` checked it)
    size = record.resource.size
    if record.state != "running" or size == 0:
        return size
    # (the payload is append-only: the bytes before ``size`` stay as they are while it grows)
    return size - store._cut_end(record.id, record, size)  # noqa: SLF001 - the store's one rule for it


def _page_start(store: ToolOutputStore, session_id: str, uri: str, offset: int) -> int:
    """Where a wait from ``offset`` starts: where a ``read`` page from there starts (its own
    rule: an offset inside a character starts at the next one, inside an escape sequence that the
    view removes, past it), so that a wait never shows the rest of a character as U+FFFD, and
    searches and says the same start.  The offsets answers name are such starts already."""
    if offset == 0:
        return 0
    return store.read(session_id, uri, offset=offset, limit=1).offset


class _Cancelled(Exception):
    """The wait's abort event was set (its search's worker, if any, is gone)."""


def _watch(store: ToolOutputStore, session_id: str, uri: str, start: int, pattern: Optional[str],
           limit: float, progress: Optional[Progress],
           abort: Optional[threading.Event]) -> tuple[Optional[int], Record, Optional[str]]:
    """Poll until the command is no longer running, ``pattern`` matches the new output, or ``limit`` seconds passed.

    The matching is grep's (``_regex.Search``: a worker process, a time budget), never ``re`` on
    this thread: a pattern that backtracks without end would hold the GIL, and a server's every
    other call with it, past any timeout.

    :returns: the byte offset of the first matching line (None if none), the last record seen,
        and, when the search ran out of its time or failed, its one-line message.
    :raises _Cancelled: ``abort`` was set.
    """
    if pattern is None:
        return _poll(store, session_id, uri, start, None, limit, progress, abort)
    from ._regex import TIME_LIMIT, Cancelled, Search  # the worker's machinery, only for a pattern

    # grep's budget, its fixed part cut to the wait's own time (a wait honours its timeout, give or
    # take what the last bytes it saw take to match), though never below what a quick look needs.
    time_limit = min(TIME_LIMIT, max(limit, _LEAST_MATCH_TIME))
    try:
        with Search(pattern, time_limit=time_limit, abort=abort) as search:
            return _poll(store, session_id, uri, start, search, limit, progress, abort)
    except Cancelled:
        raise _Cancelled from None


def _poll(store: ToolOutputStore, session_id: str, uri: str, start: int, search: Optional[Search], limit: float,
          progress: Optional[Progress], abort: Optional[threading.Event]) -> tuple[Optional[int], Record, Optional[str]]:
    """``_watch``'s loop."""
    deadline = time.monotonic() + limit
    # Where the next search starts: at first the start of the line that holds ``start`` (a line
    # split across it is matched whole), then the unfinished line's start (searched again as it grows).
    scanned = start if search is None else _line_start(store, session_id, uri, start)
    searched = start  # the end of the text searched so far (no new text, no new search)
    reported = -1
    while True:
        if abort is not None and abort.is_set():
            raise _Cancelled
        record = store.status(session_id, uri)
        size = record.resource.size
        if search is not None and size > searched:
            try:
                found, scanned = _search(store, session_id, uri, scanned, size, search, record.state != "running",
                                         start)
            except SearchError as error:  # too slow, or no worker: said in one line, the rest still answered
                return None, record, " ".join(str(error).split())
            searched = size
            if found is not None:
                return found, record, None
        if search is not None and record.state == "exited" and record.capture is not None:
            # Past max_stored_bytes (or the quota) the stored copy ends early; the output's true end,
            # which this process keeps and the answer shows, is new output too: searched once, final.
            try:
                found = _search_kept_end(store, uri, record.capture[0], search)
            except SearchError as error:
                return None, record, " ".join(str(error).split())
            if found is not None:
                return found, record, None
        if progress is not None and size != reported:
            reported = size
            progress(size)
        if record.state != "running" or time.monotonic() >= deadline:
            return None, record, None
        pause = min(_POLL, max(deadline - time.monotonic(), 0))
        if abort is not None:
            abort.wait(pause)
        else:
            time.sleep(pause)


# New output is searched a window at a time, never all at once (a finished output of gigabytes).
_SEARCH_WINDOW = 1 << 20
# The unfinished last line is searched as it stands (a prompt, a redrawn progress line: the answer
# shows it), and again from its start as it grows, so that a match over its whole text is seen.
# One longer than this (a progress bar redrawn with \r and no newline) is searched again only from
# _OVERLAP before where the last search ended (a match across the two is still seen), so that no
# poll reads more than a piece of it again; a line over a window is searched in such pieces too.
_LINE_PIECE = 1 << 16
_OVERLAP = 1 << 12


def _line_start(store: ToolOutputStore, session_id: str, uri: str, start: int) -> int:
    """Where a wait's search from ``start`` begins: the start of the line that holds ``start``, so
    that a line whose parts came a seal or more apart ("server rea", then "dy on port 80") is
    matched whole.  Lines can be huge: as an unfinished line is searched again from its start only
    within ``_LINE_PIECE``, so the look-back goes at most that far, to a start inside the line
    when the line starts further back (``_search`` takes it for no line's start)."""
    if start == 0:
        return 0
    low = max(start - _LINE_PIECE, 0)
    with store.view(session_id, uri, start=low, end=start) as (_, data):
        newline = bytes(data).rfind(b"\n")
    return low if newline < 0 else low + newline + 1


def _search(store: ToolOutputStore, session_id: str, uri: str, low: int, high: int, search: Search,
            final: bool, new: int = 0) -> tuple[Optional[int], int]:
    """Search the text of ``[low, high)`` as it stands, its last line too, finished or not.

    :param final: the output ends at ``high`` (its command exited): nothing is searched again.
    :param new: where the new output starts (the wait's start; 0: all is new): ``low`` may be
        before it, on the line that holds it, and a match there counts only when the line cut at
        ``new`` did not have it (``_first_matching_line``'s ``seen``).
    :returns: the byte offset of the first matching line (of the piece, in a line searched in
        pieces; the line's new part, ``new``, for the line that holds it), and where the next
        search starts: the start of the unfinished last line (searched
        again with what follows it; ``high`` when ``final``).
    :raises PatternTooSlowError, SearchError: the search ran out of its time, or its worker failed.
    :raises _regex.Cancelled: the search's abort event was set.
    """
    from ..text import view_flags  # (as cut_character: only a wait with a pattern needs them)

    views = view_flags(store.views)
    while low < high:
        end = min(high, low + _SEARCH_WINDOW)
        with store.view(session_id, uri, start=max(low - 1, 0), end=end) as (_, data):
            chunk = bytes(data)
        # A start inside a line (an offset named mid-line, a long line's next piece) is no line's
        # start: the byte before it goes with the search (unless it ends a line), so that ``^`` and
        # look-behinds see that it is not.  It joins the first line; offsets stay the chunk's.
        before, chunk = (chunk[:1], chunk[1:]) if low > 0 else (b"", chunk)
        if before == b"\n":
            before = b""
        last = end == high
        newline = chunk.rfind(b"\n")
        piece = newline < 0 and not last  # a line longer than the window: searched in overlapping pieces
        if not last and not piece:
            chunk = chunk[: newline + 1]  # the window's last line, cut by the window, is searched with the next
        line_start = _first_matching_line(search, views, before, chunk, max(new - low, 0))
        if line_start is not None:
            # (said from where the new output starts, which the answer shows, not before it)
            return max(low + line_start, new), low + len(chunk)
        if last:
            if final:
                return None, high
            unfinished = len(chunk) - newline - 1
            # (text ended by a newline leaves nothing unfinished: the next search starts at high)
            return None, high - unfinished if unfinished < _LINE_PIECE else high - _OVERLAP
        low += len(chunk) - _OVERLAP if piece else len(chunk)
    return None, low


def _search_kept_end(store: ToolOutputStore, uri: str, total: int, search: Search) -> Optional[int]:
    """Search the true end of ``uri``'s exited output that this process keeps (``kept_end``), its
    lines whole: from after its first newline (its first line may have begun before it).

    :param total: the output's size (``record.capture``): the kept end is its last bytes.
    :returns: the offset in the whole output of the first matching line (past the stored copy:
        shown in the answer, not readable), or None (no match, or no kept end here).
    """
    from ..text import view_flags

    kept = _background.kept_end(uri)
    if not kept:
        return None
    first = kept.find(b"\n") + 1
    if first == 0:
        return None
    line_start = _first_matching_line(search, view_flags(store.views), b"", kept[first:])
    return None if line_start is None else total - len(kept) + first + line_start


def _first_matching_line(search: Search, views: int, before: bytes, chunk: bytes, seen: int = 0) -> Optional[int]:
    """Where in ``chunk`` the first line whose view ``search`` matches starts, or None.

    The worker decodes with surrogateescape (invalid bytes one character each) and names the
    lines, counted by their \\n bytes, in which a match starts: offsets stay exact.  What is
    searched is each line's view, as grep searches a stored output (a coloured ``ready`` is
    ``ready``): a view keeps every line, so a line's index is the same in both, and a line's view
    depends on that line alone (no escape sequence, no redraw crosses a newline).

    :param views: the store's view flags (0: the bytes as they are).
    :param before: the byte before ``chunk`` when ``chunk`` starts inside a line (else empty): it
        goes with the search as context, so that ``^`` and look-behinds see no line start there,
        but a match that starts in it is not in ``chunk`` and does not count.
    :param seen: the first bytes of ``chunk`` that were shown already (the first line's part before
        a wait's offset, within it): a match that they had (the line cut there, ``re``'s
        ``endpos``) is not new and does not count, unless a \\r past them redrew the line.
    """
    from .. import _kernels

    skip = len(before)
    known = skip + seen
    if not views:
        lines = search.text(before + chunk, skip, known)
    else:
        newline = chunk.find(b"\n") + 1 or len(chunk)
        first, rest = before + chunk[:newline], chunk[newline:]
        # Only the first line's view can hold ``before``: it is made with it and without it, to
        # tell whether the view keeps that byte as it is (where it does not, the match cannot be
        # told apart from one in the line: the byte is searched as part of the line).
        first_shown = _kernels.view_bytes(first, views)
        if skip and first_shown is not None:
            alone = _kernels.view_bytes(chunk[:newline], views)
            skip = skip if first_shown == before + (chunk[:newline] if alone is None else alone) else 0
        if seen and first_shown is not None:
            # The part shown ends in the line's view where that part's own view ends, when the line was
            # appended to: its view begins with it and no \r past it redrew the line (a redraw may
            # write the same text again, "Building" then "\rBuilding done", and that text is new).
            # Otherwise the whole view is new.  A \r at the line's end redraws nothing (yet); one at
            # the shown part's end does once text follows it.
            old = before + chunk[:seen]
            old_shown = _kernels.view_bytes(old, views)
            old_shown = old if old_shown is None else old_shown
            after = len(chunk[:seen].rstrip(b"\r"))  # (the shown part's trailing \r with what follows)
            redrawn = bool(views & VIEW_CR) and b"\r" in chunk[:newline].rstrip(b"\r\n")[after:]
            known = len(old_shown) if first_shown.startswith(old_shown) and not redrawn else skip
        rest_shown = _kernels.view_bytes(rest, views)
        lines = search.text((first if first_shown is None else first_shown)
                            + (rest if rest_shown is None else rest_shown), skip, known)
    if not lines:
        return None
    return len(chunk) - len(chunk.split(b"\n", lines[0])[-1])


def kill(store: ToolOutputStore, session_id: str, tool_call_id: str, resource: str) -> ToolResult:
    """End a background command's whole process group (SIGTERM, then SIGKILL after a grace); say how it ended."""
    del tool_call_id
    job = _background.find(resource) if isinstance(resource, str) else None
    if job is not None and job.output.record.session_id != session_id:
        job = None  # another session's command: the store refuses it below
    try:
        record = store.status(session_id, resource)
        if record.state is None:
            return failure(f"{resource} is a stored output, not a background command")
        was = record.state
        record = _background.kill(store, session_id, resource)
    except ResourceNotFoundError as error:
        if job is None:
            return failure(str(error))
        # This process runs the command but its stored output is gone (its folder removed): the
        # group is ended all the same, and the answer says how the command ended.
        job.kill()
        code = job.running.result().exit_code
        return ToolResult(f"[{_how_it_ended(code)}; its stored output is gone ({error}): none of it can be read]",
                          False, False, None, {"uri": resource, "state": "lost", "exit_code": code, "size": 0,
                                               "next_offset": 0, "complete": False})
    except OverspillError as error:
        return failure(str(error))
    size = record.resource.size
    gone = "its owner could not finish its record" if _given_up(record) else "its owner is gone"
    prefix = ("" if was == "running" else f"[it was lost ({gone}); what was left of its process group "
              "was ended] " if was == "lost" else f"[it was already {was}] ")
    stopped, storage = _storing_stopped(resource)
    if stopped:
        prefix = f"{stopped}\n{prefix}"
    return ToolResult(prefix + _state_line(record, size), False, False, record.resource,
                      _metadata(record, size, **storage))


def jobs(store: ToolOutputStore, session_id: str, tool_call_id: str) -> ToolResult:
    """This session's background commands, oldest first: handle, state, size, age and exit code
    (``jobs_listing``); a store that cannot list them, or keep a long listing, is the failure's one line."""
    try:
        return jobs_listing(store, session_id, tool_call_id)
    except OverspillError as error:
        return failure(str(error))


def jobs_listing(store: ToolOutputStore, session_id: str, tool_call_id: str, *, text: bool = True) -> ToolResult:
    """This session's background commands, oldest first: handle, state, size, age and exit code.

    The listing is bounded like any output (``store.truncate``, as grep's
    is): a long one is stored whole and previewed; ``metadata["jobs"]``, for
    the host, holds every entry.  ``text=False``: the entries only (the
    output empty, nothing stored), for a host that shows them itself.

    ``size`` is the output's bytes so far that can be read (``read``,
    ``wait``): a running (or lost) command's sealed, verified prefix, an
    exited one's whole stored output.  The sealed size only grows, and every
    answer (``bash(background=True)``, ``wait``) shows output only up to the
    size it states, so ``size`` is never less than what was already shown.
    It trails the command's raw output only by what is not sealed yet (a
    background command's output is sealed every 256 KiB, and at the latest
    about a second after it was written).  In the process that runs (or
    ran) a command whose storing a write failure stopped, its entry says why
    (``storage_error``, and the note at the end of its line).

    :raises StorageError: the store cannot list the records, or keep a long listing.
    """
    records = [record for record in store.records(session_id) if record.state is not None]
    if not records:
        return ToolResult("no background commands in this session", False, False, None, {"jobs": []})
    now = time.time() * 1000
    lines = []
    listed = []
    for record in records:
        age = max(now - record.created_ms, 0) / 1000
        code = "" if record.exit_code is None else f" exit={record.exit_code}"
        stopped, storage = _storing_stopped(record.resource.uri)
        lines.append(f"{record.resource.uri} {record.state} {record.resource.size} bytes {age:.0f}s{code}"
                     + (f" {stopped}" if stopped else ""))
        listed.append({"uri": record.resource.uri, "state": record.state, "size": record.resource.size,
                       "age": round(age, 3), "exit_code": record.exit_code, **storage})
    if not text:
        return ToolResult("", False, False, None, {"jobs": listed})
    return bounded(store.truncate(session_id, tool_call_id, "\n".join(lines)), jobs=listed)

