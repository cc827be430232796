"""The bash tool: run a command and bound what the model sees of its output.

The command's stdout and stderr share one pipe (as ``2>&1`` does), so the
stored bytes are exactly what a terminal would have shown, in order.  Status
(exit code, timeout) never enters those bytes: it is metadata, and one short
line the model sees after the preview.
"""

from __future__ import annotations

import itertools
import os

from .. import _tokens
from .._arguments import check_metadata, id_string
from .._frontend import DEFAULT_TIMEOUT
from .._frozen import frozen
from ..capture import MAX_CAPTURE_BYTES, RunningCommand, check_working_folder
from ..config import Limits
from ..errors import ResourceCorruptError, StorageError
from ..text import RUN_KEEP, held_text, view_flags, within_limits
from .._binary import BINARY_MIME, SNIFF_BYTES, output_is_binary
from ._result import ToolResult, failure, stored_metadata

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (``overspill run``); annotations are never evaluated
    import threading
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Callable, Optional, TypeVar, Union

    from .._kernels import StreamCap
    from ..capture import ProcessResult
    from ..records import Resource
    from ..store import ToolOutputStore, TruncateResult

    PathArg = Union[str, "os.PathLike[str]", None]
    Progress = Callable[[int], None]
    _R = TypeVar("_R")

__all__ = ["bash"]

# Bytes shown (as hex) of a binary output.
_HEX_BYTES = 16
# What memory holds of an output, to preview it when it cannot be stored: a command's capture
# and ``overspill truncate``'s input alike (``_stored_late``).
_HELD_BYTES, _HELD_KEEP = MAX_CAPTURE_BYTES, "head_tail"


def describe_binary(size: int, start: bytes, uri: Optional[str], stored: Optional[int] = None) -> str:
    """The line shown for a binary output (here and by ``jobs``): its size, where it is stored, its first bytes."""
    first = start[:_HEX_BYTES].hex(" ")
    more = " ..." if size > _HEX_BYTES else ""
    where = f"stored as {uri}" if uri else "not stored"
    if uri and stored is not None and stored < size:
        where += f" (the stored copy holds the first {stored} of {size} bytes)"
    return f"[binary output, {size} bytes, {where}; it begins {first}{more}]"


def status_line(result: ProcessResult, timeout: Optional[float]) -> str:
    """The line the model sees after the output: timeout, signal or exit code ("" for success)."""
    if result.timed_out:
        return f"[timed out after {timeout:g} s; process group killed]"
    if result.exit_code < 0:
        import signal  # here: only a command a signal ended needs its name (start-up: enum)

        number = -result.exit_code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"[terminated by {name}]"
    if result.exit_code:
        return f"[exit code {result.exit_code}]"
    return ""


@frozen({"final_newline": False})
class CommandOutput:
    """A command run for a model: what it did and what the model is shown of it.

    ``shown`` is the preview (or a binary description), without the status
    line; ``storage_error`` says why the output could not be kept, if it could
    not (then ``shown`` was built from the bytes held in memory).
    ``final_newline``: the output (text) ended with a newline, which ``shown``
    leaves out so that the status line follows it directly.
    """

    __slots__ = ("process", "shown", "truncated", "resource", "lines", "storage_error", "marker", "final_newline")
    process: ProcessResult
    shown: str
    truncated: bool
    resource: Optional[Resource]
    lines: int
    storage_error: Optional[str]
    # What the marker tells the model (``lines``, ``next_offset``), for the host.
    marker: dict[str, object]
    final_newline: bool

    def text(self, timeout: Optional[float], note: str = "") -> str:
        """The preview (or "(no output)"), a note if any, and the status line."""
        status = status_line(self.process, timeout)
        body = self.shown if self.shown or status or note else "(no output)"
        return "\n".join(part for part in (body, note, status) if part)

    def terminal_text(self, timeout: Optional[float]) -> str:
        """What ``overspill run`` prints: the preview with the output's final
        newline given back (``text`` leaves it out for the model's status line,
        so ``printf 'a\\n\\n'`` would print one line fewer), then the status
        line; it ends with a newline.  An output of nothing is "(no output)", as in ``text``."""
        status = status_line(self.process, timeout)
        body = self.shown + "\n" if self.final_newline else self.shown
        # Each part on lines of its own: a preview that does not end with a newline gets one.
        return "".join(part if part.endswith("\n") else part + "\n" for part in (body, status) if part) \
            or "(no output)\n"

    def tool_result(self, timeout: Optional[float]) -> ToolResult:
        """The bash tool's answer: a timeout or a storage failure is an error for the model."""
        if self.storage_error is not None:
            note = f"[the output could not be kept: {' '.join(self.storage_error.split())}]"
            return ToolResult(self.text(timeout, note), True, self.truncated, None,
                              {**self.metadata(), "storage_error": self.storage_error})
        return ToolResult(self.text(timeout), self.process.timed_out, self.truncated, self.resource, self.metadata())

    def metadata(self) -> dict[str, object]:
        return {"exit_code": self.process.exit_code, "timed_out": self.process.timed_out,
                "duration": self.process.duration, "output_bytes": self.process.stdout_bytes,
                "output_lines": self.lines,
                "stored_bytes": self.resource.size if self.resource is not None else 0, **self.marker}


class _Sniffed:
    """The output's first chunks, held until they make up the sniffing sample."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.held: list[bytes] = []
        size = 0
        for chunk in chunks:
            self.held.append(chunk)
            size += len(chunk)
            if size >= SNIFF_BYTES:
                break
        self.start = b"".join(self.held)[:SNIFF_BYTES]
        self.binary = output_is_binary(self.start)


def strip_final_newline(text: str) -> str:
    """``text`` without one final newline: the model sees the status line right after the output."""
    return text[:-1] if text.endswith("\n") else text


def _memory_view(held: StreamCap, limits: Limits, binary: bool, note: str) -> tuple[str, bool]:
    """What the model sees when nothing was stored: a preview of what memory
    held of the output (``held``: its start and, when the cap dropped bytes
    between them, its true end), and whether it needed storing.

    The preview is the one the store gives of an output it holds only the
    start and the true end of (``_preview.stored_preview``): the view, within
    the limits as shown.  The line between head and tail counts the output's
    bytes (as the command wrote them, before any view) it stands for.
    """
    total = held.total_bytes
    if binary:
        return describe_binary(total, held.head, None), True
    flags = view_flags(limits.views)
    tokens = _tokens.bound(limits.max_tokens)
    if held.truncated:
        start, kept_end = held.head, held.tail
    else:
        start, kept_end = held.value(), None
        if within_limits(held.total_lines - 1, total, start.endswith(b"\n"), limits.max_lines, limits.max_bytes):
            # Within the bytes and lines but over a token bound: previewed as a larger one is.
            whole = held_text(start, flags, limits.max_bytes, tokens)
            if whole is not None:
                return strip_final_newline(whole), False
    from .._preview import stored_preview  # here: an output shown whole needs none of the preview's modules

    data = memoryview(start)
    shown, _ = stored_preview(lambda begin, end: data[begin:end], uri="(held in memory)", stored=len(data),
                              total=total, count=held.total_lines, max_lines=limits.max_lines,
                              max_bytes=limits.max_bytes, flags=flags, signals=(),
                              content=start if kept_end is None else None, kept_end=kept_end,
                              tokens=tokens,
                              runs=RUN_KEEP if limits.trim_runs else 0)
    if not shown.truncated:
        # The raw bytes are over the limits (they needed storing), their view is not: it is all shown.
        return strip_final_newline(shown.head), True
    omitted = shown.tail_start - shown.head_end  # offsets in the output: the bytes between head and tail
    middle = f"... {omitted} of the output's {total} bytes (as written) omitted here; {note} ..."
    # One blank line before the marker, as the store's previews have it (``_preview.compose``).
    separator = "\n" if shown.head.endswith("\n") else "\n\n"
    body = f"{shown.head}{separator}{middle}" if shown.head else middle
    return (f"{body}\n\n{strip_final_newline(shown.tail)}" if shown.tail else body), True


def _counted(chunks: Iterator[bytes], progress: Optional[Progress]) -> Iterator[bytes]:
    """``chunks``, telling ``progress`` the running total of bytes after each one."""
    if progress is None:
        yield from chunks
        return
    total = 0
    for chunk in chunks:
        total += len(chunk)
        progress(total)
        yield chunk


def start_failure(error: BaseException) -> str:
    """Why a command could not be started, in one line naming what was missing."""
    reason = getattr(error, "strerror", None) or str(error)
    filename = getattr(error, "filename", None)
    if filename is not None and str(filename) not in reason:
        reason = f"{reason}: {filename}"
    return f"could not run the command: {reason}"


def execute(store: Optional[ToolOutputStore], session_id: str, tool_call_id: str, command: str, *,
            timeout: Optional[float], cwd: PathArg = None, env: Optional[Mapping[str, str]] = None,
            spill: bool = True, inherit_stdin: bool = False, limits: Optional[Limits] = None,
            started: Optional[Callable[[RunningCommand], None]] = None,
            abort: Optional[threading.Event] = None, progress: Optional[Progress] = None,
            name: Optional[str] = None, open_store: Optional[Callable[[], ToolOutputStore]] = None) -> CommandOutput:
    """Run ``command`` for a model (the bash tool and ``overspill run``).

    :param store: where the output is kept; None when it cannot be opened
        (then the output is previewed from memory and ``storage_error`` says so).
    :param spill: stream the whole output into the store; otherwise only what
        capture kept (1 MiB: the start and the true end) can be stored.
    :param inherit_stdin: give the command this process's stdin (else /dev/null).
    :param limits: the preview's limits (default: the store's).
    :param started: called with the running command as soon as it started
        (the CLI forwards signals to it).
    :param abort: when set (from another thread), the command's process group
        is terminated as on a timeout (the host's cancellation).
    :param progress: called with the bytes of output so far after each chunk.
    :param name: stored with the output (``overspill run`` records the command).
    :param open_store: with ``store`` None, opens the store when the output
        must be stored: an output shown whole within ``limits`` (which must
        be the store's) opens nothing.  A ``StorageError`` it raises is taken
        as a store that could not be opened.
    :raises StorageError: ``store`` is a server that cannot be reached (the
        command is not run).
    :raises OSError: the command could not be started (a missing ``cwd`` is
        named).
    """
    # Ids and a name no record could hold are refused before the command runs, not after.
    for value, what in ((session_id, "session_id"), (tool_call_id, "tool_call_id")):
        check_metadata(id_string(value, what), what)
    if name is not None:
        check_metadata(name, "name")
    if limits is None:
        limits = store.limits() if store is not None else Limits()
    if store is not None:
        store.ping()  # a server that cannot be reached fails now, before the command runs
    check_working_folder(cwd)
    running = RunningCommand(command, cwd=cwd, env=env, timeout=timeout, stdin=None,
                             max_output_bytes=_HELD_BYTES, max_error_bytes=1, keep=_HELD_KEEP,
                             merge_stderr=True, inherit_stdin=inherit_stdin, abort=abort)
    if started is not None:
        started(running)
    output = running.output()
    try:
        counted = _counted(output, progress)
        sniffed = _Sniffed(counted)
        late = store is None and open_store is not None

        def keep(opened: Callable[[], Optional[ToolOutputStore]], chunks: Iterator[bytes]) -> _Kept:
            return _keep(opened, session_id, tool_call_id, running, sniffed, chunks, limits=limits, spill=spill,
                         name=name, late=late)

        # An output shown whole needs no store, spilled or not (binary output is always stored);
        # the command runs to its end whatever happens to the store, and what it says is still previewed.
        stored, shown, truncated, error = _stored_late(
            itertools.chain(sniffed.held, counted), limits, open_store if late else lambda: store, keep,
            running.held, wait=late and not sniffed.binary, binary=sniffed.binary, strip=True)
        kept = stored if stored is not None else _Kept(None, shown, truncated, {})
        if kept.resource is not None and sniffed.binary:
            total = running.held.total_bytes  # the bytes written; past max_stored_bytes the copy holds fewer
            kept.shown = describe_binary(total, sniffed.start, kept.resource.uri, kept.resource.size)
            kept.truncated = True
    finally:
        output.close()  # kills the command if anything above failed before its end
    result = running.result(kept.resource)
    # (a binary output's description was never cut; the retained bytes end with the output's last byte)
    return CommandOutput(result, kept.shown, kept.truncated, kept.resource, running.output_lines, error, kept.marker,
                         not sniffed.binary and result.stdout.endswith(b"\n"))


class _Kept:
    """What became of an output: its resource (if stored) and what the model is shown."""

    __slots__ = ("resource", "shown", "truncated", "marker")

    def __init__(self, resource: Optional[Resource], shown: str, truncated: bool, marker: dict[str, object]) -> None:
        self.resource = resource
        self.shown = shown
        self.truncated = truncated
        self.marker = marker


def _keep(open_store: Callable[[], Optional[ToolOutputStore]], session_id: str, tool_call_id: str,
          running: RunningCommand, sniffed: _Sniffed, chunks: Iterator[bytes], *, limits: Limits, spill: bool,
          name: Optional[str], late: bool) -> _Kept:
    """Drive the command through ``chunks`` to its end and keep its output as ``execute`` says
    (``_stored_late``'s ``keep``: an output shown whole never gets here when the store is opened late).

    :param open_store: the store (None: there is none); ``late``: it is opened only now.
    :raises StorageError: the output could not be stored (there is no store
        and the output was over the limits, or the store failed).
    """
    # (the ids and name were checked before the command ran: a record can hold them)
    if late and not spill:
        for _ in chunks:
            pass
        if running.held.truncated:
            # Bytes dropped with spilling off: nothing would be stored, so nothing is opened.
            shown, truncated = _memory_view(running.held, limits, sniffed.binary,
                                            "spilling was off, so the output was not stored")
            return _Kept(None, shown, truncated, {})
    store = open_store()
    if store is None:
        # Without a store only an output that needs no storing is whole:
        # one under the limits (text) is shown as it is, not a failure.
        for _ in chunks:
            pass
        shown, truncated = _memory_view(running.held, limits, sniffed.binary, "the output could not be stored")
        if truncated:
            raise StorageError(0, "the output folder could not be opened")
        return _Kept(None, shown, truncated, {})
    if spill and sniffed.binary:
        return _Kept(_stored_binary(store, session_id, tool_call_id, chunks, name), "", False, {})
    if not spill:
        for _ in chunks:
            pass
        # Spilling off: only what capture held in memory can be stored, and only when it is all.
        if running.held.truncated:
            shown, truncated = _memory_view(running.held, limits, sniffed.binary,
                                            "spilling was off, so the output was not stored")
            return _Kept(None, shown, truncated, {})
        data = running.held.value()
        if sniffed.binary:
            return _Kept(store.write(session_id, tool_call_id, data, mime=BINARY_MIME, name=name), "", False, {})
        chunks = iter((data,))  # (truncate_stream of one chunk is truncate of it)
    outcome = _truncated_or_refused(store, session_id, tool_call_id, chunks, limits, name)
    return _Kept(outcome.resource, strip_final_newline(outcome.content), outcome.truncated, stored_metadata(outcome))


def _stored_binary(store: ToolOutputStore, session_id: str, tool_call_id: str, chunks: Iterator[bytes],
                   name: Optional[str]) -> Resource:
    """Store a binary output (``_Sniffed``'s verdict) whole, as ``application/octet-stream``:
    it is described in one line (``describe_binary``), never previewed as text.

    :raises StorageError: the output could not be stored.
    """
    return store.write_stream(session_id, tool_call_id, chunks, mime=BINARY_MIME, name=name)


def _truncated_or_refused(store: ToolOutputStore, session_id: str, tool_call_id: str, chunks: Iterator[bytes],
                          limits: Limits, name: Optional[str]) -> TruncateResult:
    """``store.truncate_stream`` of ``chunks`` for a front end that reports a storage failure:
    an output over the limits that the quota cannot hold (not even its record, or running
    outputs hold the room) raises ``NotStored``, a ``StorageError`` carrying the store's
    preview, so it is the failure a failed write is (a tool error, exit 4), not a success.

    :raises StorageError: the output could not be stored.
    """
    return store._truncate_stream(session_id, tool_call_id, chunks, name=name, mime=None,
                                  max_lines=limits.max_lines, max_bytes=limits.max_bytes, refuse=True)


def _held_within(chunks: Iterator[bytes], limits: Limits) -> tuple[list[bytes], Optional[str]]:
    """Take ``chunks`` while the output is within ``limits``, as ``truncate_stream`` holds it.

    Returns the chunks taken and, when the output ended within the limits,
    what ``truncate_stream`` returns for it: the text shown whole (None when
    it must be stored: over the limits, over them as shown, or over the token
    bound, counted by the counter the store's preview uses, ``_tokens``).
    """
    held: list[bytes] = []
    newlines = size = 0
    for chunk in chunks:
        if not chunk:
            continue  # no bytes: it says nothing of the last one
        held.append(chunk)
        newlines += chunk.count(b"\n")
        size += len(chunk)
        if not within_limits(newlines, size, chunk.endswith(b"\n"), limits.max_lines, limits.max_bytes):
            return held, None
    # The token bound is checked here, before any store is opened: an output shown whole opens none.
    return held, held_text(b"".join(held), view_flags(limits.views), limits.max_bytes,
                           _tokens.bound(limits.max_tokens))


def bound_stream(open_store: Callable[[], ToolOutputStore], session_id: str, tool_call_id: str,
                 chunks: Iterable[bytes], *, limits: Limits,
                 name: Optional[str] = None) -> tuple[TruncateResult, Optional[str]]:
    """``truncate_stream`` of ``chunks`` with the store opened only when the output must be stored
    (``overspill truncate``; ``overspill run`` keeps its output by the same rule, ``_stored_late``).

    An output shown whole within ``limits`` (which must be the store's) opens
    nothing.  When the store cannot be opened, or fails while the output is
    written, the rest is still read and a preview of what memory held (its
    start and its true end) comes back with the error's text; else the error
    is None.  Binary input (the rule ``execute`` applies to a command's output,
    ``output_is_binary``) is stored whole as ``application/octet-stream`` and
    described in one line, as ``overspill run`` shows it.

    :raises ValueError: an id or name no record could hold (before anything is read).
    """
    for value, what in ((session_id, "session_id"), (tool_call_id, "tool_call_id")):
        check_metadata(id_string(value, what), what)
    if name is not None:
        check_metadata(name, "name")
    from .._store_types import TruncateResult

    total = 0

    def counted(source: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal total
        for chunk in source:
            total += len(chunk)
            yield chunk

    # Binary input by the rule a command's output follows (``execute``): stored whole as
    # application/octet-stream, whatever its size, and described in one line.
    source = counted(iter(chunks))
    sniffed = _Sniffed(source)

    def keep(opened: Callable[[], ToolOutputStore], chunks: Iterator[bytes]) -> TruncateResult:
        if sniffed.binary:
            resource = _stored_binary(opened(), session_id, tool_call_id, chunks, name)
            return TruncateResult(describe_binary(total, sniffed.start, resource.uri, resource.size), True, resource)
        return _truncated_or_refused(opened(), session_id, tool_call_id, chunks, limits, name)

    stored, shown, truncated, error = _stored_late(itertools.chain(sniffed.held, source), limits, open_store, keep,
                                                   wait=not sniffed.binary, binary=sniffed.binary)
    return (stored, None) if stored is not None else (TruncateResult(shown, truncated, None, None, None), error)


def _stored_late(chunks: Iterator[bytes], limits: Limits, open_store: Callable[[], Optional[ToolOutputStore]],
                 keep: Callable[[Callable[[], Optional[ToolOutputStore]], Iterator[bytes]], _R],
                 held: Optional[StreamCap] = None, *, wait: bool = True,
                 binary: bool = False, strip: bool = False) -> tuple[Optional[_R], str, bool, Optional[str]]:
    """The one rule by which ``overspill run`` (``execute``) and ``overspill truncate``
    (``bound_stream``) keep an output whose store is opened only when it must be.

    With ``wait``, the chunks are taken while the output is within ``limits``
    (``_held_within``): one that ends there is shown whole and ``keep`` is not
    called (nothing is opened).  Else ``keep(open_store, chunks)`` keeps all of
    it, opening the store.  When that raises ``StorageError`` (the store could
    not be opened, or failed while the output was written) or
    ``ResourceCorruptError`` (the stored copy failed its check when read back
    for the preview, and was removed), the rest of the
    chunks is still read, and a preview of what memory held comes back with
    the error's text; when the quota refused it (``NotStored``), the store's own
    preview, its marker saying "output not stored" and why.

    :param held: what memory holds of the output (a command's capture, fed
        as it runs: its start, its true end, the totals, whether bytes were
        dropped); None: held here as capture would (``MAX_CAPTURE_BYTES``, head and tail).
    :param strip: what is shown comes back without a final newline (``execute``:
        the model sees the status line right after it; a preview from memory has none).
    :returns: ``(kept, shown, truncated, error)``: ``keep``'s result (None when
        nothing was kept) and, when None, what is shown: the whole output
        (``error`` None), or the preview from memory and the error's text.
    """
    if held is None:
        from .._kernels import StreamCap

        memory = held = StreamCap(_HELD_BYTES, keep=_HELD_KEEP)

        def fed(source: Iterator[bytes]) -> Iterator[bytes]:
            for chunk in source:
                memory.feed(chunk)
                yield chunk

        chunks = fed(chunks)
    if wait:
        taken, shown = _held_within(chunks, limits)
        if shown is not None:
            return None, strip_final_newline(shown) if strip else shown, False, None
        chunks = itertools.chain(taken, chunks)
    try:
        return keep(open_store, chunks), "", False, None
    except (StorageError, ResourceCorruptError) as error:
        # (ResourceCorruptError: the stored copy read back for its preview failed its check; the
        # store removed it, so the output is as unkept as after a failed write.)
        for _ in chunks:  # the rest is still read (a command runs to its end) and previewed
            pass
        from .._store_types import NotStored  # here: an output shown whole needs none of the store's modules

        if isinstance(error, NotStored):
            # Refused by the quota: the store's own preview, its marker saying "output not stored" and why.
            shown = error.result.content
            return None, strip_final_newline(shown) if strip else shown, True, str(error)
        shown, truncated = _memory_view(held, limits, binary, "the output could not be stored")
        return None, shown, truncated, str(error)


def bash(store: ToolOutputStore, session_id: str, tool_call_id: str, command: str, *,
         timeout: float = DEFAULT_TIMEOUT, cwd: PathArg = None, env: Optional[Mapping[str, str]] = None,
         spill: bool = True, abort: Optional[threading.Event] = None,
         progress: Optional[Progress] = None, background: bool = False,
         yield_after: Optional[float] = None) -> ToolResult:
    """Run ``command`` through the shell; return its bounded output.

    stdout and stderr share one pipe, so the output is what a terminal would
    show, in order.  Over the limits it is stored whole (its exact bytes) and
    the model sees a preview naming its URI; binary output is stored and
    described in one line.  After the output comes one status line when there
    is something to say (``[exit code 1]``, ``[timed out after 120 s; process
    group killed]``).  A timeout is an error for the model; a non-zero exit
    code is the command's own answer.  The command's stdin is ``/dev/null``.

    :param timeout: seconds before the command's process group is terminated.
    :param cwd: the working directory (the host's choice).
    :param env: the environment (the host's choice).
    :param spill: store the complete output however large it is (the
        default); False keeps only what capture holds in memory (1 MiB, its
        start and its end), stored when nothing was dropped.
    :param abort: when set (from another thread), the command's process group
        is terminated as on a timeout (the host's cancellation); a background
        command only while the call waits out ``yield_after`` (its handle not
        given yet), and the answer is then an error.
    :param progress: called from the running thread with the bytes of output
        so far, after each chunk that arrives (the host's progress reports).
    :param background: run the command on past this call, its output growing
        in a resource readable while it runs (``overspill.tools.jobs``): the
        call returns within ``yield_after`` seconds (default 10) with the
        handle (``tool-output://ID``), the state and a preview of the output
        so far; a command that ended by then is an ordinary result.
        ``timeout`` does not apply: the command runs until it exits or is
        killed (``kill``).
    """
    if not isinstance(command, str) or not command.strip():
        return failure("command must be a non-empty string")
    if not isinstance(background, bool):
        return failure("background must be a boolean")
    if background:
        from .jobs import YIELD_AFTER, start_background

        return start_background(store, session_id, tool_call_id, command,
                                yield_after=YIELD_AFTER if yield_after is None else yield_after, cwd=cwd, env=env,
                                abort=abort)
    if yield_after is not None:
        return failure("yield_after applies to background commands only (background=true)")
    try:
        ran = execute(store, session_id, tool_call_id, command, timeout=timeout, cwd=cwd, env=env, spill=spill,
                      abort=abort, progress=progress)
    except StorageError as error:
        return failure(f"the command was not run: the output store cannot be reached ({error})")
    except (OSError, ValueError, TypeError) as error:
        return failure(start_failure(error))
    return ran.tool_result(timeout)
