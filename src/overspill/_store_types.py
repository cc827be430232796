"""The store's values and byte-argument helpers, shared by its read and write sides.

``TruncateResult`` and ``Page`` are what ``ToolOutputStore`` returns (public,
re-exported by ``overspill.store``); the rest turns a caller's content and
chunks into byte views that cannot change while they are stored.
"""

from __future__ import annotations

import errno

from . import _kernels
from ._buffers import byte_view
from ._frozen import frozen
from .errors import StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Iterable, Iterator
    from typing import Optional, Union

    from .records import Resource

__all__ = ["TRUE_TAIL_BYTES", "NotStored", "Page", "TrueTail", "TruncateResult", "checked_buffer", "chunk_view",
           "stable", "stable_pieces", "storage_error", "unchanged", "unchanging"]

# What a capped output keeps of its true end, in memory, for the preview's tail.
TRUE_TAIL_BYTES = 1024 * 1024

# Buffers that may change are copied this much at a time before they are written (see stable).
_COPY_BYTES = 1 << 20


@frozen(defaults={"lines": None, "next_offset": None})
class TruncateResult:
    """What the model sees of an output: all of it, or a preview and a resource.

    When truncated, ``lines`` is the stored output's line count and
    ``next_offset`` the byte offset where the part the preview omits begins
    (the numbers the marker gives the model); both are None otherwise.
    """

    __slots__ = ("content", "truncated", "resource", "lines", "next_offset")
    content: str
    truncated: bool
    resource: Optional[Resource]
    lines: Optional[int]
    next_offset: Optional[int]


@frozen(defaults={"complete": True})
class Page:
    """One page of a resource.

    ``offset`` is where ``content`` starts (a byte offset in the stored bytes);
    ``next`` is where the following page starts, None at the end (of the
    sealed prefix, when the resource is not ``complete``).
    """

    __slots__ = ("resource", "content", "offset", "truncated", "next", "complete")
    resource: Resource
    content: str
    offset: int
    truncated: bool
    next: Optional[int]
    #: False for a background command still running (or lost): ``resource.size``
    #: is then where its sealed prefix ends, and more may follow.
    complete: bool


# TruncateResult's and Page's fields' slots, in order: what unchanged and a
# read fill through new_slotted.
RESULT_SLOTS = tuple(TruncateResult.__dict__[field] for field in TruncateResult.__slots__)
PAGE_SLOTS = tuple(Page.__dict__[field] for field in Page.__slots__)


def unchanged(content: str) -> TruncateResult:
    """``TruncateResult(content, False, None)``: the path almost every output takes."""
    # Its __init__ only sets the five slots, each through a bound setter (a
    # frozen class refuses plain assignment): new_slotted sets them in one call,
    # a third of the time (issue 21, goal 6).
    return _kernels.new_slotted(TruncateResult, RESULT_SLOTS, (content, False, None, None, None))


class NotStored(StorageError):
    """An output over the limits that the quota cannot hold (not even its record, or running
    outputs hold the room), raised for a front end that reports it as the storage failure it
    is (``_truncate_stream(refuse=True)``); ``result`` is what ``truncate_stream`` returns for
    it otherwise: the preview, its marker saying "output not stored" and why."""

    def __init__(self, reason: str, result: TruncateResult) -> None:
        super().__init__(errno.ENOSPC, f"the output was not stored: {reason}")
        self.result = result


def storage_error(action: str, error: OSError) -> StorageError:
    """An OSError as the StorageError the store raises, ``action`` saying what failed."""
    return StorageError(error.errno, f"{action}: {error.strerror or error}")


def unchanging(view: memoryview) -> bool:
    """Whether ``view``'s bytes cannot change while it is held: it is a view of ``bytes``, or of a
    ``str``'s own ASCII storage (``_kernels.ascii_view``).  Any other buffer may (see ``stable``)."""
    owner = view.obj
    # (ascii_view's owner type is the implementation's: looked up per call, as the tests switch it.)
    return isinstance(owner, bytes) or type(owner) is type(_kernels.ascii_view("").obj)


def stable(view: memoryview) -> Iterator[memoryview]:
    """``view`` as pieces that cannot change while they are written and checksummed.

    Only a view whose owner cannot change is itself: one of ``bytes``, or of
    a ``str``'s own ASCII storage (``_kernels.ascii_view``).  Any other
    buffer is copied a MiB at a time, so the checksum and the payload always
    cover the same bytes: a writable one (a bytearray another thread may be
    changing), and a read-only one too, which can still change under its
    reader (``memoryview(bytearray).toreadonly()``, a read-only ``mmap`` of a
    file another process writes, any exporter that only refuses writes
    through this view).
    """
    if unchanging(view):
        yield view
        return
    for start in range(0, len(view), _COPY_BYTES):
        yield memoryview(bytes(view[start : start + _COPY_BYTES]))


def stable_pieces(pieces: Iterable[memoryview]) -> Iterator[memoryview]:
    """Each of ``pieces`` through ``stable``."""
    for piece in pieces:
        yield from stable(piece)


def chunk_view(chunk: object) -> memoryview:
    """A flat byte view of one chunk of a stream (the caller releases it).

    :raises TypeError: the chunk is not bytes-like (a ``str`` neither: a stream's chunks are
        bytes), in the one wording that names its type, or not C-contiguous.
    """
    if not isinstance(chunk, str):
        try:
            view = memoryview(chunk)  # type: ignore[arg-type]
        except TypeError:
            pass  # refused below, as a str is
        else:
            return byte_view(view)  # flat and C-contiguous, as every bytes-like argument
    raise TypeError(f"chunks must be bytes-like, not {type(chunk).__name__}")


def checked_buffer(content: object) -> Union[bytes, bytearray, memoryview]:
    try:
        memoryview(content).release()  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"content must be str or bytes-like, not {type(content).__name__}") from None
    return content  # type: ignore[return-value]


class TrueTail:
    """The last ``TRUE_TAIL_BYTES`` (or a little more) of a stream, as the pieces
    that hold them: each piece is kept by reference, so it must not change."""

    def __init__(self) -> None:
        from collections import deque  # here: collections costs start-up, and only a stream needs it

        self._pieces: deque[Union[bytes, memoryview]] = deque()
        self._size = 0

    def feed(self, piece: Union[bytes, memoryview]) -> None:
        """Take ``piece`` (bytes, or a byte view of a buffer that cannot change) as the stream's next."""
        self._pieces.append(piece)
        self._size += len(piece)
        # Invariant: the pieces kept hold at least the last TRUE_TAIL_BYTES, and no whole piece more.
        while self._size - len(self._pieces[0]) >= TRUE_TAIL_BYTES:
            self._size -= len(self._pieces.popleft())

    def value(self) -> bytes:
        """The last ``TRUE_TAIL_BYTES`` fed (all of it, when less was)."""
        return b"".join(self._pieces)[-TRUE_TAIL_BYTES:]
