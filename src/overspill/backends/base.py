"""The backend protocol: where one resource's bytes and record live.

``ToolOutputStore`` is the policy (limits, previews, markers, ids, session
checks, retention settings); a backend only stores and serves bytes and
records.  It knows nothing of previews, limits or which session may read
what, and it never imports the store.  The store never touches a file or a
socket itself: everything below goes through these two protocols.

Lifecycle of one resource::

    writer = backend.create(resource_id)         # id chosen by the store
    writer.write(view); writer.write(view) ...   # streaming, any sizes
    record = writer.publish(session_id, tool_call_id, mime, name, retention=...)
        # atomic: before it returns nothing is visible, after it all is
    # or, on any failure:  writer.abort()         # leaves nothing visible

    record = backend.record(resource_id)         # validated record
    with backend.read(record, start, end) as view:   # verified bytes [start, end)
        ...
    backend.records(session_id)                  # listing, id (creation) order
    backend.delete(resource_id)                  # one resource, record first
    backend.sweep(now, retention, grace)         # retention and leftovers

Contract every backend keeps:

* **Checksums.**  A writer computes a big-endian CRC-32 (zlib's polynomial,
  ``overspill._kernels.crc32``) per fixed-size chunk of the payload, chunk
  size of the backend's choosing (the local folder: 64 KiB; Redis: one per
  chunk key, e.g. 1 MiB), and puts both in the ``Record``
  (``checksums``, ``checksum_chunk``).  ``read`` verifies every chunk that
  overlaps the returned range on every call (no "verified once" trust) and
  raises ``ResourceCorruptError`` naming the byte range on a mismatch.
* **Atomic publication.**  A resource is visible (to ``record``, ``read``,
  ``records``) only once ``publish`` returned; a writer killed mid-way leaves
  nothing readable, and its leftovers are removed by ``sweep`` once older
  than ``grace``.  Published payloads are immutable.
* **Ids.**  The store chooses ids (``overspill.records.new_id``: they sort by
  creation time).  ``create`` raises ``FileExistsError`` when the id is
  already taken (the store then draws another).
* **Errors.**  Lookups and reads raise ``ResourceNotFoundError`` (missing,
  invalid record, payload missing or of the wrong size) or
  ``ResourceCorruptError``; storage failures raise ``OSError`` — preferably
  ``StorageError`` with a message that names the location but never a
  password.  No other exception type leaves a backend for bad data.
* **Threads.**  One backend object is used by many threads at once; a writer
  by one thread at a time.
* **Memory.**  ``write`` holds at most a chunk; ``read`` of a range holds at
  most that range (the local backend returns a view of a shared map: no
  copy at all; ``read_copy`` is one copy of the range).  The store reads
  large payloads a range at a time.
"""

from __future__ import annotations

# Kept in its own module so that ``import overspill`` (which names it) does not
# import typing for the protocols below; re-exported here, where it belongs.
from ._report import CleanupReport

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from datetime import timedelta
    from typing import Optional, Protocol, Union, runtime_checkable

    from .._owner import Owner
    from ..records import Record
else:
    class _ProtocolType(type):
        """``typing.Protocol``'s runtime check without importing typing (every
        ``overspill`` command opens a store, which looks its backend's
        capabilities up here): an object is an instance when it is one by
        inheritance, or has every public member the protocol classes define."""

        def __instancecheck__(cls, instance: object) -> bool:
            if type.__instancecheck__(cls, instance):
                return True
            members = cls.__dict__.get("_members")
            if members is None:
                members = frozenset(name for klass in cls.__mro__ if isinstance(klass, _ProtocolType)
                                    for name in vars(klass) if not name.startswith("_"))
                type.__setattr__(cls, "_members", members)
            # A class that defines every member as a plain function, with the
            # default attribute lookup, conforms for each of its instances:
            # remembered per class (a store looks three protocols up at each
            # construction).  Any other is checked per instance, as typing's
            # Protocol does.  A class changed after its first check (a member
            # deleted) is not looked at again.
            conforming = cls.__dict__.get("_conforming")
            if conforming is None:
                conforming = set()
                type.__setattr__(cls, "_conforming", conforming)
            kind = type(instance)
            if kind in conforming:
                return True
            if _plain_methods(kind, members):
                conforming.add(kind)
                return True
            return all(hasattr(instance, name) for name in members)

    _FUNCTION = type(lambda: None)

    def _plain_methods(kind: type, names: frozenset[str]) -> bool:
        """Whether ``kind``'s instances have every one of ``names`` as a plain
        function of the class (no descriptor or lookup hook that could answer
        differently for one instance)."""
        if (kind.__getattribute__ is not object.__getattribute__ or "__getattr__" in dir(kind)
                or type(kind) is not type):
            return False
        for name in names:
            found = next((klass.__dict__[name] for klass in kind.__mro__ if name in klass.__dict__), None)
            if type(found) is not _FUNCTION:
                return False
        return True

    class Protocol(metaclass=_ProtocolType):
        """The base of the protocols below (``typing.Protocol`` for type checkers)."""

        __slots__ = ()

    def runtime_checkable(cls):  # the check above is always on
        return cls

__all__ = ["Backend", "CleanupReport", "ForkAware", "GrowingBackend", "GrowingWriter", "PageHints", "PageTexts",
           "Quota", "Writer"]


@runtime_checkable
class Writer(Protocol):
    """One resource being written: streaming writes, then ``publish`` or ``abort``."""

    @property
    def id(self) -> str:
        """The resource id given to ``Backend.create``."""
        ...

    @property
    def size(self) -> int:
        """Bytes written so far."""
        ...

    def write(self, data: memoryview, /) -> None:
        """Append ``data`` (a flat byte view of any length) to the payload.

        The writer must not keep a reference to ``data`` after returning: the
        caller may reuse or mutate the buffer.

        :raises OSError: the bytes could not be stored (the caller then calls
            ``abort``).
        """
        ...

    def settle(self) -> None:
        """Make what was written durable now, when the backend was opened durable
        (nothing otherwise): the store calls it before it takes the quota's lock,
        so that ``publish``, which runs under it, waits on no large flush.  Writing
        after it is not allowed.

        :raises OSError: the bytes could not be made durable (the caller then
            calls ``abort``).
        """
        ...

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
                retention: timedelta, capture: Optional[tuple[int, int]] = None,
                lines: Optional[int] = None) -> Record:
        """Make the resource visible, atomically, and return its record.

        ``capture`` is ``(total, stored)`` when the output was larger than what
        was written (the store caps a stored copy): it goes into the record as
        ``Record.capture`` (``"capture": {"total": T, "stored": S}`` in JSON).
        The store passes it only when the copy was capped.  ``lines`` is the
        output's line count (``wc -l``, plus one for a final line without a
        newline), kept as ``Record.lines`` (``"lines"`` in JSON).

        Makes the payload durable first when the backend was opened durable
        (unless ``settle`` already did).
        ``created_ms`` is the backend's clock at publication; ``retention`` lets
        a backend with native expiry (Redis ``EXPIRE``) expire every key of the
        resource at ``created + retention`` — the local folder ignores it and
        leaves expiry to ``sweep``.

        :raises OSError: publication failed; nothing is visible (the caller
            then calls ``abort``, which must still clean up).
        """
        ...

    def abort(self) -> None:
        """Remove whatever this writer created, published or not; never raises.

        What cannot be removed now is left for ``sweep`` after the grace period.
        """
        ...


@runtime_checkable
class Backend(Protocol):
    """Stores and serves resources' bytes and records.  See the module docstring."""

    def create(self, resource_id: str, /) -> Writer:
        """A writer for a new resource named ``resource_id`` (well-formed, from the store).

        :raises FileExistsError: the id is taken (the store draws another).
        :raises OSError: the backend cannot create anything (full, unreachable).
        """
        ...

    def record(self, resource_id: str, /) -> Record:
        """The validated, published record of ``resource_id`` (may be cached).

        :raises ResourceNotFoundError: not published, or its record is invalid.
        """
        ...

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        """The payload bytes ``[start, end)``, every overlapping checksum chunk verified.

        ``0 <= start <= end <= record.resource.size`` (the store clamps).  The
        result is a read-only flat byte view of exactly ``end - start`` bytes;
        the caller releases it (``with backend.read(...) as view``).  For a
        record without checksums (written by another tool), only the size is
        checked.

        :raises ResourceNotFoundError: the payload is missing, not of the
            record's size, or can no longer be read.
        :raises ResourceCorruptError: a chunk does not match its checksum.
        """
        ...

    def read_copy(self, record: Record, start: int, end: int, /) -> bytes:
        """The payload bytes ``[start, end)`` as ``bytes`` of their own, the very
        bytes whose chunks were verified (``read``'s view may be a shared map,
        whose bytes another process can change in place after the check: a
        backend that serves one copies the range out first, then verifies the
        copy, ``_checksums.verified_copy``).  For the bytes a caller hands on:
        ``read_bytes``, ``iter_bytes``, a page's text, a preview's windows.

        :raises: as ``read``.
        """
        ...

    def records(self, session_id: Optional[str] = None, /) -> list[Record]:
        """Valid published records in id (creation) order, of one session or of all.

        Broken or vanishing resources are skipped (``sweep`` deals with them).

        :raises OSError: the listing itself failed.
        """
        ...

    def delete(self, resource_id: str, /) -> int:
        """Remove one resource (record first, so no reader finds a record
        without its bytes); return the bytes freed, 0 when it was gone.

        :raises OSError: it could not be removed.
        """
        ...

    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        """One retention pass at ``now`` (seconds since the epoch).

        Removes resources created more than ``retention`` before ``now``,
        published resources whose payload is missing or of the wrong size,
        and — once older than ``grace`` — leftovers of unfinished writes and
        invalid records.  With ``dry_run`` nothing is removed; the report says
        what would be.  When another process holds the sweep (one sweeper at a
        time per location) the report is ``skipped=1, busy=True`` (a backend
        whose dry run only reads, Redis's, takes no lock for it); what could
        not be removed is skipped, counted in ``skipped``, and the sweep goes on.

        :raises OSError: the location cannot be read.
        """
        ...

    def close(self) -> None:
        """Release maps, connections and caches; the backend is not used after."""
        ...


@runtime_checkable
class GrowingWriter(Protocol):
    """A background command's output being written: published at once as running,
    readable up to its last seal, finished into an ordinary resource."""

    @property
    def id(self) -> str: ...

    @property
    def size(self) -> int:
        """Bytes written so far."""
        ...

    @property
    def sealed(self) -> int:
        """Bytes sealed so far: what readers are served."""
        ...

    @property
    def record(self) -> Record:
        """The running record as published at the start."""
        ...

    @property
    def overhead(self) -> int:
        """Bytes its other stored parts (the running record, the seals) take now
        under the quota: the finished record replaces them."""
        ...

    def write(self, data: memoryview, /) -> None:
        """Append ``data``; not readable until the next ``seal``.

        :raises OSError: the bytes could not be stored.
        """
        ...

    def seal(self) -> None:
        """Make what was written readable: one seal entry (end offset, CRC-32 of
        the new bytes from memory, the entry's own checksum); nothing when nothing is new.

        :raises OSError: the entry could not be stored.
        """
        ...

    def finish(self, exit_code: int, *, capture: Optional[tuple[int, int]] = None,
               lines: Optional[int] = None, mime: Optional[str] = None) -> Record:
        """Seal the rest and republish the record with size, lines, exit code, the
        ordinary checksums (``state`` "exited") and ``mime`` when given (what the
        whole output turned out to be); an ordinary resource from then on.

        :raises OSError: the record could not be republished.
        """
        ...

    def abort(self) -> None:
        """Remove the resource; never raises."""
        ...

    def release(self) -> None:
        """Let go of the resource without finishing it (its record could not be republished): what
        was sealed stays readable, as a dead owner leaves it; never raises."""
        ...


@runtime_checkable
class GrowingBackend(Protocol):
    """The optional capability of backends that keep background commands' outputs.

    A backend without it (``create_growing``) makes the store raise
    ``UnsupportedError`` for background commands: nothing falls back.  Its
    ``record`` gives a running resource's ``resource.size`` as the sealed,
    verified prefix and its state as "running", or "lost" once the owner is
    gone; its ``read`` serves only sealed bytes, verifying each sealed stretch
    under the range (``ResourceCorruptError``); its ``sweep`` and quota never
    remove a running resource whose owner lives.
    """

    def starting_background(self) -> AbstractContextManager[object]:
        """A lock across processes, waited for, held while a background command is started:
        from the ``max_background`` check to the publish of its running record.

        :raises OSError: the lock cannot be taken.
        """
        ...

    def create_growing(self, resource_id: str, /, *, session_id: str, tool_call_id: str, mime: str,
                       name: Optional[str], owner: Owner,
                       process: Union[tuple[int, int], Callable[[], tuple[int, int]], None]) -> GrowingWriter:
        """A growing resource, published at once as running.

        :param process: the command's (pid, start time), or a function that
            starts the command and gives them: called once everything but the
            record is in place, so that a resource that cannot be created
            never runs its command (a failure of the record's publish is the
            only one left after it).
        :raises FileExistsError: the id is taken (``process`` not called yet).
        :raises OSError: it could not be created or published.
        """
        ...


# ---------------------------------------------------------------- optional capabilities
# A backend may offer any of these beside ``Backend``; the store looks for them
# once, when it opens the backend (``isinstance`` against these protocols).


@runtime_checkable
class Quota(Protocol):
    """Usage, a lock and counts for ``max_total_bytes``: the store's eviction
    policy (``overspill._quota.make_room``) runs on them and ``Backend.delete``."""

    def usage(self) -> int:
        """Bytes the location's resources take now (published or being written).

        :raises OSError: the location cannot be read.
        """
        ...

    def pending_bytes(self) -> int:
        """Bytes this process's unfinished writers hold that ``usage`` does not count yet."""
        ...

    def recount(self) -> int:
        """``usage``, made exact (bookkeeping of vanished resources dropped);
        called under ``eviction_lock``.

        :raises OSError: the location cannot be read.
        """
        ...

    def eviction_lock(self) -> AbstractContextManager[object]:
        """Hold the location's cleanup lock, waiting for a sweep or eviction in progress.

        :raises OSError: the lock cannot be had.
        """
        ...

    def tally(self) -> AbstractContextManager[object]:
        """Hold the running total behind ``usage`` while a check and the publish
        it allows run (no other writer's check or publish in between, and the
        publish's bytes counted before it ends); cheap: no count of the location.
        A backend whose total cannot be held returns a context that holds nothing.

        :raises OSError: the total cannot be had.
        """
        ...

    def record_bytes(self, record: Record, /) -> int:
        """At least the bytes ``record`` takes where this location keeps it, with
        checksums for all of its ``resource.size`` (whatever ``record.checksums``
        holds): a stored resource's record counts against the quota beside its payload."""
        ...


@runtime_checkable
class PageHints(Protocol):
    """A hint after a long scan of ``[start, end)`` of a payload: its pages are not needed soon."""

    def drop_pages(self, record: Record, start: int, end: int, /) -> None:
        """Never raises."""
        ...


@runtime_checkable
class PageTexts(Protocol):
    """A page read in one step where the payload is already mapped: its checksum
    chunks verified, its bounds found and its text made by one kernel call
    (``_kernels.page_text``), with no view handed out."""

    def page_text(self, resource_id: str, record: Record, low: int, high: int, offset: int, limit: int, flags: int,
                  reach: int, /) -> Optional[tuple[int, int, Optional[str]]]:
        """``_kernels.page_text`` over the payload of ``record`` (a window
        ``low < high`` inside it), whose id is ``resource_id`` (as parsed from
        the URI: ``record.id`` would make it again); None when this backend
        has no warm map of it (the caller then reads through ``read``).

        :raises ResourceCorruptError: a chunk of ``[low, high)`` does not match its checksum.
        """
        ...


@runtime_checkable
class ForkAware(Protocol):
    """Locks, caches or threads a forked child must not inherit."""

    def reset_after_fork(self) -> None:
        """In a forked child: fresh locks, empty caches, no threads of the parent's."""
        ...
