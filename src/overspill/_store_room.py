"""The quota's side of the store: the room one output may take under
``max_total_bytes`` (its payload and its record), eviction before a publish,
and what the model sees when not even a record fits.

A mixin of ``ToolOutputStore``'s write side (``_store_writes.StoreWrites``);
the eviction policy itself is ``overspill._quota``.
"""

from __future__ import annotations

from ._frozen import replace
from ._owner import current_owner
from ._quota import make_room, publish_within, room_made
from ._store_types import NotStored, TruncateResult, storage_error
from .errors import StorageError
from .records import CHECKSUM_CHUNK, Record, Resource, new_id, uri_for
from .text import encode_content, unstored_marker

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional

    from ._quota import QuotaBackend
    from .config import Limits
    from .text import Content, Preview

__all__ = ["StoreRoom"]

# A bound of every number a record holds (sizes, lines, times, pids): 10**15 bytes is a petabyte.
_WIDEST = 10**15


class StoreRoom:
    """Room under the quota for one output (a mixin of the store's write side)."""

    # Set by ToolOutputStore.__init__.
    _limits: Limits
    _views: int
    _tokens: Optional[tuple[int, Callable[[str], int]]]
    _runs: int
    _folder: Optional[str]
    _quota: Optional[QuotaBackend]

    def _room(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
              growing: bool = False) -> tuple[int, int]:
        """``(cap, reserve)``: the most bytes one output's stored copy holds, and
        the bytes its record is counted for, so that payload and record together
        stay within ``max_total_bytes`` (``max_stored_bytes`` caps the payload
        too).  A cap below 1: the quota cannot hold even the record, and
        nothing of the output is stored."""
        limits = self._limits
        cap = min(limits.max_stored_bytes, limits.max_total_bytes)
        if self._quota is None:
            return cap, 0
        # The record at that cap, every number at its widest: a bound of the real one.
        template = Record(Resource(uri_for(new_id()), mime, cap, name), session_id, tool_call_id, _WIDEST, None,
                          CHECKSUM_CHUNK, (_WIDEST, cap), _WIDEST)
        if growing:
            template = replace(template, state="exited", owner=current_owner(), process=(_WIDEST, _WIDEST),
                               exit_code=-_WIDEST)
        reserve = self._quota.record_bytes(template)
        return min(limits.max_stored_bytes, limits.max_total_bytes - reserve), reserve

    def _not_even_the_record(self, reserve: int) -> str:
        """Why nothing was stored: the quota is smaller than one record."""
        return f"max_total_bytes {self._limits.max_total_bytes} cannot hold even its record ({reserve} bytes)"

    def _make_room(self, reserve: int = 0) -> None:
        """Evict the oldest resources until the location is within its quota
        (``overspill._quota``).

        The location's own bytes count, unfinished payloads (this writer's
        included) too; only published resources are evicted, oldest
        ``created`` first, under the cleanup lock.  A backend without the
        ``Quota`` capability is left alone.  ``reserve`` bytes are kept free
        besides: the record about to be published.
        """
        quota = self._quota
        if quota is None:
            return
        try:
            make_room(quota, self._limits.max_total_bytes - reserve)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise storage_error(f"cannot make room in {self._folder}", error) from None

    def _room_for(self, reserve: Callable[[], int], size: int, then: Callable[[int], None]) -> int:
        """Room under the quota for up to ``size`` more bytes, ``reserve()`` bytes
        kept free besides (``_make_room``; read under the quota's lock, as
        ``room_made``'s ``held``): the location counted, evicted for all
        of them, then ``then(room)`` run under the lock with the bytes that fit
        (``room_made``: fewer when what holds the rest cannot be evicted,
        running outputs); ``room`` (0: none, and ``then`` is not run).  Without
        the ``Quota`` capability every byte fits.

        :raises StorageError: the location could not be counted or evicted from
            (or ``then`` failed: its error, as one).
        """
        quota = self._quota
        if quota is None:
            then(size)
            return size
        try:
            return room_made(quota, self._limits.max_total_bytes, size, then, reserve)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise storage_error(f"cannot make room in {self._folder}", error) from None

    def _publish_within(self, reserve: int, publish: Callable[[], Record], size: int = 0) -> Record:
        """``publish()`` of a payload of ``size`` bytes under the quota
        (``overspill._quota.publish_within``): the oldest resources evicted
        first when the location would pass ``max_total_bytes`` with it, and no
        other writer taking the same room in between; ``HeldByRunning`` (a
        StorageError) when running outputs leave no room for it.  ``reserve``
        is the record's room, as ``_make_room``'s.  ``publish`` raises what it
        raises (its own StorageError wording)."""
        quota = self._quota
        if quota is None:
            return publish()
        try:
            return publish_within(quota, self._limits.max_total_bytes - reserve, publish, size)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise storage_error(f"cannot make room in {self._folder}", error) from None

    def _unstored(self, held: Content, *, total: int, lines: int, lines_limit: int, bytes_limit: int,
                  reserve: int, whole: bool = True, first: Optional[Preview] = None, count: Optional[int] = None,
                  kept_end: Optional[bytes] = None, why: Optional[str] = None,
                  refuse: bool = False) -> TruncateResult:
        """What the model sees of an output over the limits that could not be
        stored at all: its preview, then a marker that says so, and why, and
        names no resource (none exists to read).  ``held`` is the whole output
        (``whole``), or its start and ``kept_end`` its true end; ``why`` is the
        reason (by default: the quota cannot hold even the record; running
        outputs may hold the room, or the write may fail).

        :raises NotStored: with ``refuse`` (``_truncate_stream``), carrying that result.
        """
        reason = self._not_even_the_record(reserve) if why is None else why
        if isinstance(held, str):
            try:
                data = memoryview(held.encode("utf-8"))
            except UnicodeEncodeError:
                # Lone surrogates: shown as the stored form would be (an escaped byte as U+FFFD,
                # counted as its 3 bytes), never cut from the str, whose preview would hold them.
                data = memoryview(encode_content(held))
                held, first = data, None
        else:
            data = memoryview(held).cast("B")
        from ._preview import stored_preview  # only a preview needs it

        shaped, _ = stored_preview(lambda start, end: data[start:end], uri="(not stored)", stored=len(data),
                                   total=total, count=count, max_lines=lines_limit, max_bytes=bytes_limit,
                                   flags=self._views, signals=(), content=held if whole else None,
                                   kept_end=kept_end, first=first, tokens=self._tokens, runs=self._runs)
        marker = unstored_marker(total, lines, reason)
        head = shaped.head
        # One blank line before the marker, as ``_preview.compose`` puts it.
        separator = "\n" if head.endswith("\n") else "\n\n"
        text = f"{head}{separator}{marker}" if head else marker
        if shaped.truncated and shaped.tail:
            text += f"\n\n{shaped.tail}"
        result = TruncateResult(text, True, None, lines, None)
        if refuse:
            raise NotStored(reason, result)
        return result
