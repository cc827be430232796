"""ToolOutputStore: bound an output, persist the whole of it, read it back in pages.

A small output goes back untouched (no storage, no id).  A large one is
written whole through a backend (``overspill.backends``: the local folder's
``{id}.txt`` payload published by its ``{id}.json`` record); the caller gets a
head+tail preview with a marker naming ``tool-output://ID``, and the same
session reads the rest in UTF-8-safe, verified pages.

This module is the policy — limits, previews, markers, ids, session checks,
retention settings; it never touches a file or a socket itself.  The class
is composed of its write side (``_store_writes.StoreWrites``, with the
streaming writes of ``_store_streams.StoreStreams``) and its read side
(``_store_reads.StoreReads``); here are its construction, background
commands, listing and cleanup.
"""

from __future__ import annotations

import errno
import os
import time
from _weakref import ref as _weak_ref  # weakref's ref, without importing weakref (start-up)

from . import _tokens
from ._arguments import as_float, id_string, positive_seconds
from ._owner import current_owner
from ._store_reads import StoreReads
from ._store_types import Page, TruncateResult, storage_error
from ._store_streams import StoreStreams
from ._store_writes import QUOTA_STEP
from .backends._location import locate, open_backend
from .backends.base import ForkAware, GrowingBackend, PageHints, PageTexts, Quota
from .backends.local import LocalBackend
from .config import RETENTION, datetime, resolve_limits, timedelta
from .errors import BackgroundLimitError, StorageError, UnsupportedError
from .text import RUN_KEEP, compile_signals, view_flags

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, threading and pathlib cost start-up (issue 21); annotations are never evaluated
    import threading
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Optional, Union

    from ._growing import GrowingOutput
    from .backends.base import Backend, CleanupReport
    from .config import ConfigSource, Limits
    from .records import Record, Resource

__all__ = ["Page", "ToolOutputStore", "TruncateResult"]

# The least growth between two looks at the quota by a running output.
_GROWING_QUOTA_STEP = 64 * 1024
# How far inwards _epoch_seconds looks for a naive time's offset at an end of the calendar
# (CPython looks a day either side).
_TWO_DAYS = timedelta(days=2)


def _epoch_seconds(moment: datetime) -> float:
    """``moment.timestamp()``: seconds since the epoch of an aware datetime, or of the local time a
    naive one names, at either end of the calendar too.

    CPython finds a naive time's local offset by looking a day either side of it, which near
    year 1 or 9999 is outside the calendar (``ValueError``, ``OverflowError``); the offset two days
    inwards, the zone's rule at that end, is taken instead (an aware time needs no such look).
    """
    try:
        return moment.timestamp()
    except (ValueError, OverflowError):
        if moment.utcoffset() is not None:  # aware: its failure is its own
            raise
        inwards = _TWO_DAYS if moment.year < 5000 else -_TWO_DAYS
        return (moment + inwards).timestamp() - inwards.total_seconds()


class ToolOutputStore(StoreStreams, StoreReads):
    """Bounds tool outputs, persists the large ones and serves them back in pages.

    :param data_dir: the data folder; by default ``$OVERSPILL_DATA_DIR``, else
        ``$XDG_DATA_HOME/overspill``, else ``~/.local/share/overspill``.  The
        store manages ``data_dir/tool-output/managed`` (``store.directory``).
    :param url: where to keep resources instead: ``redis://host:port/db``,
        ``rediss://...`` (TLS) or ``redis+cluster://host:port`` for Redis
        (``pip install 'overspill[redis]'``), a path or ``file:///path`` for
        a data folder.  Without ``url`` or ``data_dir``, ``$OVERSPILL_STORE_URL``
        is read the same way.  A password in it is never shown.
    :param config: limits from a mapping, JSON/TOML file path(s) or a sequence
        of them (see ``overspill.config.resolve_limits``).
    :param durable: fsync payload, record and folder before a write returns.
    :param retention: how long ``cleanup`` keeps a resource.
    :param grace: how long ``cleanup`` leaves leftovers of unfinished writes.
    :param create: create the local folder now (the default); with False a
        missing folder is created by the first write, and until then reads,
        listings and cleanups find nothing and create nothing.
    :raises ValueError: both ``data_dir`` and ``url`` were given.
    :raises ConfigError: invalid configuration, an unsupported URL, or a
        Redis URL without the redis client installed.
    :raises StorageError: the folder cannot be created, or the server cannot
        be reached (the message names its address).
    """

    def __init__(
        self,
        data_dir: Union[str, os.PathLike[str], None] = None,
        *,
        url: Optional[str] = None,
        config: Optional[ConfigSource] = None,
        durable: bool = True,
        retention: timedelta = RETENTION,
        grace: timedelta = timedelta(hours=1),
        create: bool = True,
    ) -> None:
        location = locate(data_dir, url)
        for value, name in ((retention, "retention"), (grace, "grace")):
            if not isinstance(value, timedelta):
                raise TypeError(f"{name} must be a timedelta, not {type(value).__name__}")
            if value < timedelta(0):
                raise ValueError(f"{name} must not be negative")
        self._limits = resolve_limits(config)
        # (max_tokens, count): the token bound and its counter, loaded now so
        # that a missing extra is reported here, not by the first large output.
        self._tokens: Optional[tuple[int, Callable[[str], int]]] = _tokens.bound(self._limits.max_tokens)
        self._views = view_flags(self._limits.views)
        # The lines kept of a run of same-shape lines at a cut (preview's ``runs``).
        self._runs = RUN_KEEP if self._limits.trim_runs else 0
        self._signals = compile_signals(self._limits.signals)
        self._durable = bool(durable)
        self._retention = retention
        self._grace = grace
        self._url: Optional[str] = None
        self._folder: Optional[str] = None  # the managed folder, as text
        self._directory: Optional[Path] = None  # the same as a Path, made when first asked for
        self._backend: Backend = open_backend(location, durable=self._durable, create=create)
        if location.url is not None:
            self._url = location.shown  # without its password
            self._where = self._url
        else:
            self._root = location.place
            assert isinstance(self._backend, LocalBackend)
            self._folder = self._backend.folder
            self._where = self._folder
        # The backend's optional capabilities, looked up once.
        self._quota = self._backend if isinstance(self._backend, Quota) else None
        self._hints = self._backend if isinstance(self._backend, PageHints) else None
        self._pages = self._backend if isinstance(self._backend, PageTexts) else None
        self._escapes = {}  # read's escape indexes (``_store_reads``)
        self._cleaner: Optional[threading.Thread] = None
        self._stop: Optional[threading.Event] = None  # made by start_cleanup: threading is not imported before
        _track(self)

    def _reset_after_fork(self) -> None:
        """In a forked child: no cleaner thread (it was not forked), fresh locks and caches."""
        self._cleaner = None
        self._stop = None
        if isinstance(self._backend, ForkAware):
            self._backend.reset_after_fork()

    # ------------------------------------------------------------------ basics
    @property
    def directory(self) -> Optional[Path]:
        """The managed folder, ``data_dir/tool-output/managed``; None when the store is on a server."""
        if self._directory is None and self._folder is not None:
            from pathlib import Path  # here: pathlib (with re and urllib) costs every command's start-up

            self._directory = Path(self._folder)
        return self._directory

    @property
    def url(self) -> Optional[str]:
        """The server's URL without its password; None when the store is a local folder."""
        return self._url

    @property
    def durable(self) -> bool:
        return self._durable

    @property
    def views(self) -> tuple[str, ...]:
        """The views the model is shown of stored bytes (``tool_output.views``; ``()`` for raw text)."""
        return self._limits.views

    def limits(self) -> Limits:
        """The limits ``truncate`` applies when a call names none."""
        return self._limits

    def ping(self) -> None:
        """Check that the store can be reached now: one round trip to a server
        (nothing for a local folder, whose failures show when it is written).
        Hosts call it before work whose output would otherwise be lost, such as
        running a command.

        :raises StorageError: the server cannot be reached (the message names
            its address, never a password).
        """
        ping = getattr(self._backend, "ping", None)
        if ping is not None:
            ping()

    def __enter__(self) -> ToolOutputStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._url is not None:
            return f"ToolOutputStore(url={self._url!r})"
        return f"ToolOutputStore({self._root!r}, durable={self._durable})"

    def close(self) -> None:
        """Stop the background cleanup and drop the cached maps."""
        if self._stop is not None:
            self._stop.set()
        cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None:
            import threading  # already imported: the cleaner is a thread

            if cleaner is not threading.current_thread():
                cleaner.join()
        self._backend.close()

    # ------------------------------------------------------------------ background commands
    def check_background(self, session_id: str) -> None:
        """Raise unless ``session_id`` may start one more background command.

        :raises UnsupportedError: the backend has no growing resources.
        :raises BackgroundLimitError: ``max_background`` of the session's commands are running.
        :raises StorageError: the listing failed.
        """
        self._growing_backend(session_id)
        running = sum(1 for record in self.records(session_id) if record.state == "running")
        if running >= self._limits.max_background:
            raise BackgroundLimitError(
                f"{running} background commands are already running in this session (max_background is "
                f"{self._limits.max_background}); wait for one or kill one first")

    def _growing_backend(self, session_id: str) -> None:
        """Check ``session_id``, and that the backend keeps growing resources (``UnsupportedError``)."""
        id_string(session_id, "session_id")
        if not isinstance(self._backend, GrowingBackend):
            raise UnsupportedError(f"the store at {self._where} does not support background commands "
                                   "(no growing resources on this backend); run the command in the foreground")

    def starting_background(self, session_id: str) -> _HeldLock:
        """A context manager that holds the store's lock for starting a background command
        in ``session_id`` (waiting for another process's start): inside it, the
        ``max_background`` check and ``open_growing``'s publish of the running record are one
        step, whichever processes start commands at once.  ``check_background`` is done on
        entering (and again by ``open_growing``).

        :raises UnsupportedError, BackgroundLimitError: as ``check_background``.
        :raises StorageError: the lock cannot be taken, or the listing failed.
        """
        self._growing_backend(session_id)  # at once: a backend without growing resources has no such lock
        lock = self._backend.starting_background  # type: ignore[attr-defined]  # checked: a GrowingBackend
        return _HeldLock(lock, f"cannot start a background command in {self._where}",
                         lambda: self.check_background(session_id))

    def open_growing(self, session_id: str, tool_call_id: str, *,
                     process: Union[tuple[int, int], Callable[[], tuple[int, int]], None] = None,
                     mime: str = "text/plain", name: Optional[str] = None) -> GrowingOutput:
        """A growing resource for a background command's output, published at once as running.

        The caller writes the output to it, has it sealed (``seal_if_due``)
        and finishes it with the exit code; this process is its owner.

        :param process: the command's (pid, start time), so that ``kill`` can
            reach it from another process; or a function that starts the
            command and gives them, called only once the checks passed, the
            quota had room and the files exist (nothing that can fail before it
            leaves a command run for a resource that was never created; only
            the running record's publish comes after it).
        :raises UnsupportedError, BackgroundLimitError: as ``check_background``.
        :raises StorageError: the resource could not be created.
        """
        self._check_write_arguments(session_id, tool_call_id, mime, name)
        self.check_background(session_id)
        cap, reserve = self._room(session_id, tool_call_id, mime, name, growing=True)
        if cap < 1:
            raise StorageError(errno.ENOSPC, f"the output cannot be stored: {self._not_even_the_record(reserve)}")
        create = self._backend.create_growing  # type: ignore[attr-defined]  # checked: a GrowingBackend
        owner = current_owner()
        writer = self._created(lambda resource_id: create(resource_id, session_id=session_id,
                                                          tool_call_id=tool_call_id, mime=mime, name=name,
                                                          owner=owner, process=process))
        from ._growing import GrowingOutput, reservations_for  # threading: only a background command pays for it

        # The quota is looked at every step of growth: a small quota as often as a few
        # hundredths of it (running outputs are never evicted, so they must stop in time).
        # Each look makes room for the bytes up to the next one, and counts what the other
        # running outputs of this process made room for and have not written yet, their records'
        # too.  The location's count holds each output's running record and seals, which its
        # finished record (``reserve`` bytes at most) replaces: only the rest of ``reserve`` is kept
        # free (``record_room``), or the stored copy would end that much short of the quota
        # (nothing stored when the first look asks for the whole cap).  A look that finds less room
        # than it asks for stores what fits.
        step = min(QUOTA_STEP, max(_GROWING_QUOTA_STEP, self._limits.max_total_bytes // 64))
        reservations = reservations_for(self._where)
        output = GrowingOutput(writer, cap, lambda incoming, write: self._room_for(
            lambda: output.record_room + reservations.held_by_others(output), incoming, write), step, reserve)
        reservations.add(output)
        return output


    # ------------------------------------------------------------------ listing
    def records(self, session_id: Optional[str] = None) -> list[Record]:
        """Valid records in id (creation) order, of one session or of all.

        Broken or vanishing resources are skipped: cleanup deals with them.

        :raises StorageError: the listing failed.
        """
        if session_id is not None:
            id_string(session_id, "session_id")
        try:
            return self._backend.records(session_id)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise storage_error(f"cannot list {self._where}", error) from None

    def resources(self, session_id: str) -> list[Resource]:
        """That session's resources in the order they were written (id order)."""
        id_string(session_id, "session_id")
        return [record.resource for record in self.records(session_id)]

    # ------------------------------------------------------------------ cleanup
    def cleanup(self, now: Union[datetime, float, None] = None, *, dry_run: bool = False) -> CleanupReport:
        """Remove expired resources, broken pairs and old leftovers.

        :param now: the current time (a datetime, or seconds since the epoch);
            the clock by default.
        :param dry_run: remove nothing; report what would be removed.
        :raises StorageError: the folder cannot be read.
        """
        if now is None:
            now_seconds = time.time()
        elif isinstance(now, datetime):
            now_seconds = _epoch_seconds(now)
        elif isinstance(now, (int, float)) and not isinstance(now, bool):
            now_seconds = as_float(now)
        else:
            raise TypeError(f"now must be a datetime or seconds since the epoch, not {type(now).__name__}")
        try:
            return self._backend.sweep(now_seconds, self._retention, self._grace, dry_run=dry_run)
        except OSError as error:
            if isinstance(error, StorageError):
                raise
            raise storage_error(f"cannot clean {self._where}", error) from None

    def start_cleanup(self, interval: float = 3600.0) -> None:
        """Run ``cleanup`` now and then every ``interval`` seconds on a daemon thread.

        :raises ValueError: ``interval`` is not positive.
        :raises RuntimeError: already started.
        """
        seconds = positive_seconds(interval, "interval")
        if self._cleaner is not None:
            raise RuntimeError("cleanup is already running")
        import threading  # only a store that cleans in the background needs it

        self._stop = threading.Event()
        self._cleaner = threading.Thread(
            target=self._clean_periodically, args=(seconds, self._stop), name="overspill-cleanup", daemon=True
        )
        self._cleaner.start()

    def _clean_periodically(self, interval: float, stop: threading.Event) -> None:
        # Nothing a sweep meets ends this thread, and nothing is hidden: each
        # failure, and each sweep that left something it could not remove, is
        # logged to the "overspill" logger; the next sweep tries again.
        import logging
        import threading  # already imported: this is the cleaner thread

        # An interval past what a wait takes (inf, 10**400) is "never again": the longest wait, in turn.
        pause = min(interval, threading.TIMEOUT_MAX)
        log = logging.getLogger("overspill")
        while not stop.is_set():
            try:
                report = self.cleanup()
            except Exception:  # noqa: BLE001 - the periodic cleaner must outlive any one sweep
                log.exception("periodic cleanup of %s failed; trying again in %s seconds", self._where, interval)
            else:
                if report.skipped and not report.busy:
                    log.warning("periodic cleanup of %s could not remove %d entries (a directory under a "
                                "resource's name, or no permission)", self._where, report.skipped)
            stop.wait(pause)


# Every store of this process, so that a forked child can reset them: a lock
# held by a thread that exists only in the parent would deadlock the child's
# first read, and the parent's cleaner thread is not in the child.
# (Weak references by id, each removing itself: weakref.WeakSet would import
# weakref and types at start-up.)
_OPEN_STORES: dict[int, _weak_ref[ToolOutputStore]] = {}


def _track(store: ToolOutputStore) -> None:
    key = id(store)
    _OPEN_STORES[key] = _weak_ref(store, lambda _, key=key: _OPEN_STORES.pop(key, None))


def _reset_stores_after_fork() -> None:
    for reference in list(_OPEN_STORES.values()):
        store = reference()
        if store is not None:
            store._reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_stores_after_fork)


class _HeldLock:
    """``ToolOutputStore.starting_background``'s context manager (contextlib costs start-up):
    a backend's lock taken on entering (an ``OSError`` then is a ``StorageError``), then ``check``
    done under it; released on leaving."""

    __slots__ = ("_lock", "_action", "_check", "_held")

    def __init__(self, lock: Callable[[], AbstractContextManager[object]], action: str,
                 check: Callable[[], None]) -> None:
        self._lock = lock
        self._action = action
        self._check = check
        self._held: Optional[AbstractContextManager[object]] = None

    def __enter__(self) -> None:
        held = self._lock()
        try:
            held.__enter__()
        except OSError as error:
            raise storage_error(self._action, error) from None
        self._held = held
        try:
            self._check()
        except BaseException:
            self._release()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self._release()

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.__exit__(None, None, None)
