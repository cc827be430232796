"""Text rules built on the kernels: the head+tail preview and the content policy."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional, Union

from . import _kernels
from ._native import _byte_view as byte_view

__all__ = ["Preview", "encode_content", "human_lines", "preview", "preview_from_cuts", "stored_pieces",
           "truncation_marker"]

Content = Union[str, bytes, bytearray, memoryview]

# Code points encoded (or bytes yielded) at a time by stored_pieces: each
# piece stays in cache from the write to the checksum.
_ENCODE_SLICE = 1 << 18

# Lone surrogates that surrogateescape cannot store; the policy stores U+FFFD.
_UNSTORABLE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


@dataclass(frozen=True)
class Preview:
    """A bounded head+tail view of some content.

    ``head`` is a prefix and ``tail`` a suffix of the content; they never
    overlap and never split a character.  ``head_end`` and ``tail_start`` are
    the cuts as byte offsets in the stored (UTF-8) form: the omitted part is
    ``[head_end, tail_start)``, empty when ``truncated`` is false.
    """

    head: str
    tail: str
    truncated: bool
    head_end: int
    tail_start: int


def _decode(data: memoryview) -> str:
    return str(data, "utf-8", "replace")


def preview(content: Content, max_lines: int, max_bytes: int) -> Preview:
    """The head+tail preview of ``content`` within ``max_lines`` and ``max_bytes``.

    Not truncated when the content has at most ``max_lines`` lines and at most
    ``max_bytes`` bytes: then ``head`` is all of it.  Otherwise, with more than
    ``max_lines`` lines, the head region is the first ``ceil(max_lines / 2)``
    lines and the tail region the last ``floor(max_lines / 2)`` (else both are
    the whole content); if the regions together exceed ``max_bytes``, the head
    keeps up to ``ceil(max_bytes / 2)`` bytes of its region and the tail up to
    ``floor(max_bytes / 2)`` of its own, a share one side cannot use going to
    the other.  Cuts fall on character boundaries.  The cost grows with the
    preview, not with the content.

    :param content: a ``str`` (head and tail are slices of it) or bytes-like
        content (head and tail are decoded with ``errors="replace"``),
        ``mmap`` included.
    :param max_lines: at least 1.
    :param max_bytes: at least 1, counted in UTF-8 bytes of the stored form.
    :raises TypeError: wrong argument types (a bool is not an int).
    :raises ValueError: a limit below 1.
    """
    return preview_from_cuts(content, _kernels.preview_cuts(content, max_lines, max_bytes))


def preview_from_cuts(content: Content, cuts: tuple[int, int, int, int]) -> Preview:
    """The ``Preview`` of ``content`` for cuts that ``preview_cuts`` computed."""
    head_end, tail_start, head_index, tail_index = cuts
    truncated = head_end < tail_start
    if isinstance(content, str):
        if not truncated:
            return Preview(content, "", False, head_end, tail_start)
        return Preview(content[:head_index], content[tail_index:], True, head_end, tail_start)
    with byte_view(content) as view:
        if not truncated:
            return Preview(_decode(view), "", False, head_end, tail_start)
        return Preview(_decode(view[:head_index]), _decode(view[tail_index:]), True, head_end, tail_start)


def truncation_marker(uri: str, size: int, lines: int, resume_offset: int, total: Optional[int] = None) -> str:
    """The line between head and tail: where the full output is and where to go on.

    ``lines`` is the count a person gives (``wc -l``, plus one for a final
    line without a newline).  ``total`` is the output's size when the stored
    copy holds only its first ``size`` bytes.  Under 200 bytes for any size
    below a petabyte; it ends with `` ...``.
    """
    if total is not None and total > size:
        return (
            f"... output truncated; the stored copy holds the first {size} of {total} bytes "
            f"({lines} lines in all) as {uri}; the omitted part starts at byte offset {resume_offset} ..."
        )
    return (
        f"... output truncated; full content available as {uri} "
        f"({size} bytes, {lines} lines); the omitted part starts at byte offset {resume_offset} ..."
    )


def human_lines(content: Content) -> int:
    """Lines as a person counts them: ``wc -l``, plus one for a final line
    without a newline (``"1\\n2\\n"`` is 2 lines, ``""`` is 0)."""
    newlines = _kernels.count_lines(content) - 1
    if isinstance(content, str):
        return newlines + (1 if content and content[-1] != "\n" else 0)
    with byte_view(content) as view:
        return newlines + (1 if len(view) and view[-1] != 10 else 0)


def encode_content(content: Content) -> bytes:
    """The stored form of ``content``.

    Bytes-like content is stored exactly.  A ``str`` is encoded as UTF-8 with
    ``surrogateescape`` (so text decoded that way round-trips to its original
    bytes), and any other lone surrogate becomes U+FFFD: this never raises.

    :raises TypeError: ``content`` is neither ``str`` nor bytes-like.
    """
    if isinstance(content, str):
        try:
            return content.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return _UNSTORABLE_SURROGATE.sub("\ufffd", content).encode("utf-8", "surrogateescape")
    try:
        return bytes(memoryview(content))
    except TypeError:
        raise TypeError(f"content must be str or bytes-like, not {type(content).__name__}") from None


def stored_pieces(content: Content) -> Iterator[memoryview]:
    """The stored form of ``content`` as consecutive flat byte views.

    A ``str`` is encoded a slice at a time (each code point encodes on its
    own, so slices join into exactly ``encode_content(content)``), which
    never holds a second copy of a large text.

    :raises TypeError: ``content`` is neither ``str`` nor bytes-like.
    """
    if isinstance(content, str):
        ascii_form = _kernels.ascii_view(content)
        if ascii_form is not None:
            with ascii_form:
                # Slices keep what a write just copied in cache for the checksum.
                for start in range(0, len(ascii_form), _ENCODE_SLICE):
                    yield ascii_form[start : start + _ENCODE_SLICE]
            return
        for start in range(0, len(content), _ENCODE_SLICE):
            yield memoryview(encode_content(content[start : start + _ENCODE_SLICE]))
        return
    with byte_view(content) as view:
        yield view
