"""The bash tool: run a command and bound what the model sees of its output."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Optional, Union

from ..capture import MAX_CAPTURE_BYTES, ProcessResult, RunningCommand
from ..store import ToolOutputStore
from ..text import preview
from ._result import ToolResult, bounded, failure, stored_metadata

__all__ = ["bash"]

PathArg = Union[str, "os.PathLike[str]", None]
Progress = Callable[[int], None]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _stream_text(data: bytes, total: int, truncated: bool) -> str:
    """A captured stream, with a visible mark where capture dropped its middle."""
    if not truncated:
        return _decode(data)
    head_size = MAX_CAPTURE_BYTES - MAX_CAPTURE_BYTES // 2
    dropped = total - len(data)
    return f"{_decode(data[:head_size])}\n[... {dropped} bytes dropped at capture ...]\n{_decode(data[head_size:])}"


def _notes(exit_code: int, timed_out: bool, timeout: Optional[float]) -> list[str]:
    notes = []
    if timed_out:
        notes.append(f"[timed out after {timeout:g} seconds; the command's process group was terminated]")
    if exit_code != 0:
        notes.append(f"[exit code: {exit_code}]")
    return notes


def _metadata(result: ProcessResult) -> dict[str, object]:
    return {"exit_code": result.exit_code, "timed_out": result.timed_out, "duration": result.duration,
            "stdout_bytes": result.stdout_bytes, "stderr_bytes": result.stderr_bytes}


def _compose(result: ProcessResult, timeout: Optional[float]) -> str:
    parts = []
    if result.stdout_bytes:
        parts.append(_stream_text(result.stdout, result.stdout_bytes, result.stdout_truncated).rstrip("\n"))
    if result.stderr_bytes:
        parts.append("[stderr]\n" + _stream_text(result.stderr, result.stderr_bytes, result.stderr_truncated).rstrip("\n"))
    parts += _notes(result.exit_code, result.timed_out, timeout)
    return "\n".join(parts) if parts else "(no output)"


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


def bash(store: ToolOutputStore, session_id: str, tool_call_id: str, command: str, *,
         timeout: float = 120.0, cwd: PathArg = None, env: Optional[Mapping[str, str]] = None,
         spill: bool = False, abort: Optional[threading.Event] = None,
         progress: Optional[Progress] = None) -> ToolResult:
    """Run ``command`` through the shell; return its bounded output.

    The text is stdout, then stderr (marked, only when non-empty), then the
    exit code when it is not 0 and a note on timeout (a timeout is an error
    for the model; a non-zero exit code is the command's own answer).  Each stream is
    captured within 1 MiB (its start and its end); when capture dropped bytes
    the preview says how many and no resource is advertised, since the stored
    copy would not be the whole output.  With ``spill`` the whole combined
    output streams into the store and its URI is advertised.

    :param timeout: seconds before the command's process group is terminated.
    :param cwd: the working directory (the host's choice).
    :param env: the environment (the host's choice).
    :param spill: store the complete output however large it is.
    :param abort: when set (from another thread), the command's process group
        is terminated as on a timeout (the host's cancellation).
    :param progress: called from the running thread with the bytes of output
        so far, after each chunk that arrives (the host's progress reports).
    """
    if not isinstance(command, str) or not command.strip():
        return failure("command must be a non-empty string")
    try:
        running = RunningCommand(command, cwd=cwd, env=env, timeout=timeout, stdin=None,
                                 max_output_bytes=MAX_CAPTURE_BYTES, max_error_bytes=MAX_CAPTURE_BYTES,
                                 keep="head_tail", abort=abort)
    except (OSError, ValueError, TypeError) as error:
        return failure(f"could not run the command: {getattr(error, 'strerror', None) or error}")
    try:
        if spill:
            return _spilled(store, session_id, tool_call_id, running, timeout, progress)
        for _ in _counted((chunk for _, chunk in running.chunks()), progress):
            pass
    except (OSError, ValueError, TypeError) as error:
        return failure(f"could not run the command: {getattr(error, 'strerror', None) or error}")
    result = running.result()
    text = _compose(result, timeout)
    metadata = _metadata(result)
    dropped = result.stdout_bytes - len(result.stdout) + result.stderr_bytes - len(result.stderr)
    if not dropped:
        return bounded(store.truncate(session_id, tool_call_id, text), is_error=result.timed_out, **metadata)
    limits = store.limits()
    view = preview(text, limits.max_lines, limits.max_bytes)
    note = (f"... {dropped} bytes of output were dropped at capture, so it was not stored; "
            f"rerun with spill to keep all of it ...")
    output = f"{view.head}\n\n{note}\n\n{view.tail}" if view.tail else f"{view.head}\n\n{note}"
    return ToolResult(output, result.timed_out, True, None, {**metadata, "dropped_bytes": dropped})


def _spilled(store: ToolOutputStore, session_id: str, tool_call_id: str, running: RunningCommand,
             timeout: Optional[float], progress: Optional[Progress]) -> ToolResult:
    with running.combined_output() as output:
        outcome = store.truncate_stream(session_id, tool_call_id, _counted(output, progress))
    result = running.result(outcome.resource)
    notes = _notes(result.exit_code, result.timed_out, timeout)
    body = outcome.content.rstrip("\n") if outcome.content else ("" if notes else "(no output)")
    output = "\n".join([body, *notes]) if body else "\n".join(notes)
    return ToolResult(output, result.timed_out, outcome.truncated, outcome.resource,
                      {**_metadata(result), **stored_metadata(outcome)})
