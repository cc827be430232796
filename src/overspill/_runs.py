"""The same-shape-run rule of the preview: one home, called by both kernel
implementations after their cut (``preview_cuts``'s ``runs``) and by the
preview of a view (``_views``), so that every preview trims runs alike.

A run is a sequence of consecutive lines that differ only in their numbers
(and long hex digests, UUIDs too: ``_buffers.NUMBERS``): ``PASSED`` test
ids, ``step N: loss=...`` logs, CSV rows, records processed.  What it says is in its first and last lines.  With
``keep`` (> 0), a truncated preview whose head ends in a run of more than
``2 * keep`` lines keeps only the run's first ``keep`` lines, and a tail that
starts with such a run keeps only its last ``keep``; the rest of the run joins
the omitted part.  Only a side the byte limit cut on a line boundary is
trimmed: a head that ends with a newline and holds fewer lines than the line
rule gives it (``ceil(max_lines / 2)``), a tail that starts a line and holds
fewer than ``max_lines // 2`` lines.  A side the line rule decides is never
trimmed, so a preview cut by lines alone is what it is without ``keep``.

Imported only when a truncated preview is trimmed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Optional, Union

from ._buffers import NUMBERS, BytesLike, byte_view, plain_str

__all__ = ["shape", "trim_cuts", "trim_stored"]


Shape = Callable[[str], str]


def shape(line: str) -> str:
    """A line's shape, the rule's spec: its text with each number (a run of
    digits, a hex digest of 7 or more digits, a UUID: ``_buffers.NUMBERS``) as
    ``#`` (the compiled kernel computes the same in one pass)."""
    return NUMBERS.sub("#", line)


def _run_length(lines: Iterable[str], shaped: Shape) -> int:
    """How many of ``lines``, from the first, have the first one's shape."""
    count = 0
    first = None
    for line in lines:
        this = shaped(line)
        if first is None:
            first = this
        elif this != first:
            break
        count += 1
    return count


def kept_head_lines(head: str, max_lines: int, keep: int, shaped: Shape = shape) -> Optional[int]:
    """How many lines of ``head`` stay (None: all of them)."""
    if not head.endswith("\n") or head.count("\n") >= max_lines - max_lines // 2:
        return None
    lines = head[:-1].split("\n")
    run = _run_length(reversed(lines), shaped)
    return len(lines) - run + keep if run > 2 * keep else None


def dropped_tail_lines(tail: str, starts_line: bool, max_lines: int, keep: int,
                       shaped: Shape = shape) -> Optional[int]:
    """How many lines at the start of ``tail`` go (None: none of them)."""
    if not starts_line or not tail:
        return None
    lines = (tail[:-1] if tail.endswith("\n") else tail).split("\n")
    if len(lines) >= max_lines // 2:
        return None
    run = _run_length(lines, shaped)
    return run - keep if run > 2 * keep else None


def _after_newlines(data: Union[str, bytes], start: int, count: int) -> int:
    """The index just after the ``count``-th newline of ``data`` from ``start``
    (the caller knows there are that many)."""
    newline = "\n" if isinstance(data, str) else b"\n"
    position = start
    for _ in range(count):
        position = data.index(newline, position) + 1  # type: ignore[arg-type]
    return position


def trim_stored(view: memoryview, head: str, tail: str, head_end: int, tail_start: int, max_lines: int,
                keep: int, shaped: Shape = shape) -> tuple[str, str, int, int]:
    """A truncated preview of stored bytes (``view``) with its runs trimmed.

    ``head`` and ``tail`` are what is shown of ``view[:head_end]`` and
    ``view[tail_start:]``: the bytes decoded, or their view (escapes removed,
    redraws collapsed), which has the same newlines, so that a line kept or
    dropped as shown is the same line in the stored bytes.  ``shaped`` is
    ``shape`` or a kernel's equal and faster one.

    :returns: ``(head, tail, head_end, tail_start)``.
    """
    kept = kept_head_lines(head, max_lines, keep, shaped)
    if kept is not None:
        head = head[: _after_newlines(head, 0, kept)]
        head_end = _after_newlines(bytes(view[:head_end]), 0, kept)
    dropped = dropped_tail_lines(tail, tail_start > 0 and view[tail_start - 1] == 10, max_lines, keep, shaped)
    if dropped is not None:
        tail = tail[_after_newlines(tail, 0, dropped) :]
        tail_start += _after_newlines(bytes(view[tail_start:]), 0, dropped)
    return head, tail, head_end, tail_start


def trim_cuts(content: Union[str, BytesLike], cuts: tuple[int, int, int, int], max_lines: int, keep: int,
              utf8_length: Callable[[str], int], shaped: Shape = shape) -> tuple[int, int, int, int]:
    """``preview_cuts``'s result with the runs at its cuts trimmed (``keep`` > 0).

    :param cuts: ``(head_end, tail_start, head_index, tail_index)`` of a
        truncated preview of ``content`` (``head_end < tail_start``).
    :param utf8_length: the calling kernel's: a ``str``'s cuts move by the
        stored size of the lines they give up.
    :param shaped: ``shape``, or the calling kernel's equal one.
    """
    head_end, tail_start, head_index, tail_index = cuts
    if isinstance(content, str):
        content = plain_str(content)  # its own characters, as the kernels read them: no override runs
        head, tail = content[:head_index], content[tail_index:]
        kept = kept_head_lines(head, max_lines, keep, shaped)
        if kept is not None:
            index = _after_newlines(head, 0, kept)
            head_end -= utf8_length(content[index:head_index])
            head_index = index
        dropped = dropped_tail_lines(tail, content[tail_index - 1] == "\n", max_lines, keep, shaped)
        if dropped is not None:
            index = tail_index + _after_newlines(tail, 0, dropped)
            tail_start += utf8_length(content[tail_index:index])
            tail_index = index
        return head_end, tail_start, head_index, tail_index
    with byte_view(content) as view:
        head = str(view[:head_index], "utf-8", "replace")
        tail = str(view[tail_index:], "utf-8", "replace")
        head_end, tail_start = trim_stored(view, head, tail, head_end, tail_start, max_lines, keep, shaped)[2:]
    return head_end, tail_start, head_end, tail_start
