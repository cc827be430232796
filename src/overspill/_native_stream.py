"""Twin kernel ``StreamCap``, the streaming byte cap a capture feeds (see ``overspill._native``)."""

from __future__ import annotations

from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)

from ._buffers import BytesLike
from ._buffers import byte_view as _byte_view
from ._buffers import check_int as _check_int
from ._native_bytes import count_lines

__all__ = ["StreamCap"]

_KEEP_MODES = ("head", "head_tail")


class StreamCap:
    """A streaming byte cap: retains at most ``max_bytes`` and counts everything.

    ``keep="head"`` retains the first ``max_bytes`` bytes.  ``keep="head_tail"``
    retains the first ``ceil(max_bytes / 2)`` bytes and, in a ring, the last
    ``floor(max_bytes / 2)`` bytes of what follows them, so the end of a long
    stream survives.  Any chunking of the same bytes gives the same state.
    Feeds from several threads are each whole, as the compiled twin's are
    (its update runs with the GIL held): a lock is held for each feed, and for
    each read of more than one field of the state.

    :param max_bytes: the retention cap, at least 1.
    :param keep: ``"head"`` or ``"head_tail"``.
    :raises TypeError: ``max_bytes`` is not an int or ``keep`` not a str.
    :raises ValueError: ``max_bytes`` below 1 or an unknown ``keep``.
    """

    __slots__ = ("_max_bytes", "_keep", "_head", "_head_cap", "_ring", "_ring_cap", "_ring_pos",
                 "_total_bytes", "_newlines", "_lock")

    def __init__(self, max_bytes: int, *, keep: str = "head") -> None:
        self._max_bytes = _check_int(max_bytes, "max_bytes", 1)
        if not isinstance(keep, str):
            raise TypeError(f"keep must be a str, not {type(keep).__name__}")
        if keep not in _KEEP_MODES:
            raise ValueError(f"keep must be 'head' or 'head_tail', not {keep!r}")
        self._keep = "head" if keep == "head" else "head_tail"  # the mode's constant, as the compiled twin keeps
        self._head_cap = self._max_bytes if keep == "head" else (self._max_bytes + 1) // 2
        self._ring_cap = self._max_bytes - self._head_cap
        # Both grow with what is fed, up to their share of max_bytes.
        self._head = bytearray()
        self._ring = bytearray()
        self._ring_pos = 0  # once the ring is full: where its oldest byte is
        self._total_bytes = 0
        self._newlines = 0
        # A thread switch may come between any two bytecodes: without it, a feed read a count or the
        # head's room that another thread's feed then changed, and one update overwrote the other.
        self._lock = allocate_lock()

    def feed(self, chunk: BytesLike, /) -> None:
        """Count ``chunk`` and retain what the cap allows.

        :raises TypeError: ``chunk`` is not a contiguous bytes-like object.
        """
        if isinstance(chunk, str):
            raise TypeError("chunk must be a bytes-like object, not str")
        with self._lock, _byte_view(chunk) as view:
            self._total_bytes += len(view)
            self._newlines += count_lines(view) - 1
            room = self._head_cap - len(self._head)
            self._head += view[:room]
            rest = view[room:]
            if rest and self._ring_cap:
                self._push_tail(rest[-self._ring_cap :])

    def _push_tail(self, data: memoryview) -> None:
        ring = self._ring
        capacity = self._ring_cap
        if len(ring) < capacity:
            # Still filling: append until full; only then does it wrap.
            fill = capacity - len(ring)
            ring += data[:fill]
            data = data[fill:]
            if not data:
                return
        first = min(len(data), capacity - self._ring_pos)
        ring[self._ring_pos : self._ring_pos + first] = data[:first]
        ring[: len(data) - first] = data[first:]
        self._ring_pos = (self._ring_pos + len(data)) % capacity

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def keep(self) -> str:
        return self._keep

    @property
    def head(self) -> bytes:
        """The retained start of the stream."""
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        """The retained end of the stream (always empty for ``keep="head"``)."""
        with self._lock:
            return self._tail()

    def _tail(self) -> bytes:
        # (the lock held: the ring and where its oldest byte is, from one state)
        return bytes(self._ring[self._ring_pos :] + self._ring[: self._ring_pos])

    @property
    def total_bytes(self) -> int:
        return self._total_bytes

    @property
    def total_lines(self) -> int:
        """Lines in everything fed, counted as ``count_lines`` would."""
        return self._newlines + 1

    @property
    def truncated(self) -> bool:
        with self._lock:
            return self._truncated()

    def _truncated(self) -> bool:
        return self._total_bytes > len(self._head) + len(self._ring)

    def value(self) -> bytes:
        """The retained bytes: the head, then the tail."""
        with self._lock:
            return bytes(self._head) + self._tail()

    def __repr__(self) -> str:
        with self._lock:
            total_bytes, truncated = self._total_bytes, self._truncated()
        return (f"StreamCap(max_bytes={self._max_bytes}, keep={self._keep!r}, "
                f"total_bytes={total_bytes}, truncated={truncated})")
