"""The Redis backend's quota bookkeeping and its cleanup lock.

Writers add their bytes to a running total (``ovs:{usage}:bytes``, with the
bytes of each resource in ``ovs:{usage}:by-id``); the store's eviction policy
(``overspill._quota``) reads it through ``usage``, ``pending_bytes`` and
``recount`` and holds ``eviction_lock`` while it deletes.  The same lock
serialises sweeps (not dry runs: they only read).
"""

from __future__ import annotations

import contextlib
import errno
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import StorageError
from ..records import Record, record_size
# PARTIAL_TTL is read from its module at each use, so that a test can shorten it.
from . import _redis_keys
from ._redis_keys import (BY_ID, CHECKSUM_BYTES, CHUNK_BYTES, LOCK, LOCK_WAIT_SECONDS, PENDING, REDIS_ERRORS, USED,
                          chunk_key, member_id, meta_key, unless_damaged, without_record)

if TYPE_CHECKING:
    from ._redis_writer import RedisWriter

__all__ = ["RedisQuota"]


class _Hold:
    """One holding of the cleanup lock: its token, its expiry renewed by a thread.

    The lock's expiry (``LOCK_MS``) is short so that a holder that dies leaves
    it for seconds, not minutes; this thread extends it every quarter of it
    while the holder lives.  A holder that cannot be sure it still holds the
    lock (the renewal found another token, or no renewal was confirmed for
    three quarters of the expiry: a stalled process, an unreachable server)
    stops at its next step (``check``) rather than go on unlocked.
    """

    def __init__(self, renew: Any, token: str, taken_at: float, shown: str) -> None:
        self.token = token
        self._renew = renew
        self._shown = shown
        self._expiry = _redis_keys.LOCK_MS / 1000
        # The time the last confirmed take or renewal was *sent*: the lock lasts at least
        # ``_expiry`` from then, whenever the server ran it.
        self._confirmed = taken_at
        self._lost = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="overspill-redis-cleanup-lock", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        while not self._done.wait(self._expiry / 4):
            sent = time.monotonic()
            try:
                mine = self._renew(keys=[LOCK], args=[self.token, int(self._expiry * 1000)])
            except REDIS_ERRORS:
                continue  # not confirmed: ``check`` stops the holder once the expiry may have passed
            if not mine:
                self._lost = True
                return
            self._confirmed = sent

    def check(self) -> None:
        """Nothing while the lock is surely still this holder's.

        :raises StorageError: (ENOLCK) the lock expired or may have: the
            work it guards stops here, unfinished but never unlocked.
        """
        # A quarter of the expiry is left as margin for the step about to run.
        if self._lost or time.monotonic() - self._confirmed >= self._expiry * 3 / 4:
            raise StorageError(errno.ENOLCK, f"the cleanup lock at {self._shown} was lost while this process "
                                             f"held it (not renewed within its {self._expiry:g} s expiry: "
                                             "the process or the server stalled); stopped rather than go on "
                                             "unlocked, try again")

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


class RedisQuota:
    """The quota and the cleanup lock of ``RedisBackend`` (a mixin: the backend
    sets up the client, the scripts and the writers' registry)."""

    _client: Any
    _shown: str
    _lock: threading.Lock
    _open: weakref.WeakSet[RedisWriter]
    _account_script: Any
    _unaccount_script: Any
    _recount_script: Any
    _usage_script: Any
    _drop_dead_script: Any
    _release: Any
    _take_lock: Any
    _renew_lock: Any
    _holding: threading.local  # .hold: the _Hold of the cleanup lock this thread holds, if any

    storage_error: Callable[[str, BaseException], StorageError]  # RedisBackend's

    def _unaccounted(self) -> int:
        """Bytes this process's unfinished writers hold that the total does not count yet."""
        with self._lock:
            writers = list(self._open)
        return sum(max(writer.size - writer.accounted, 0) for writer in writers)

    def account(self, resource_id: str, counted: int) -> None:
        """Count ``counted`` bytes for ``resource_id`` from now on (all it holds so far,
        not an increment: the script is safe to run twice, as the client does when a
        connection drops before its reply), the total moved by the difference.

        :raises redis.exceptions.RedisError: the server fails or cannot be reached.
        """
        self._account_script(keys=[USED, BY_ID], args=[resource_id, counted])

    def unaccount(self, *resource_ids: str) -> int:
        if not resource_ids:
            return 0
        return int(self._unaccount_script(keys=[USED, BY_ID], args=list(resource_ids)))

    def usage(self) -> int:
        """Bytes the store's resources take in Redis (published or being written,
        records included), as the quota counts them.

        :raises StorageError: the server cannot be reached.
        """
        try:
            return int(self._usage_script(keys=[USED, BY_ID]))
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot read the usage", error) from None

    def recount_now(self) -> int:
        """``recount`` without its error wrapping (the sweep wraps its own); under the cleanup lock."""
        return self._recount()

    def _recount(self) -> int:
        """Drop the bookkeeping of resources that expired or whose writer died; the exact total."""
        self.still_locked()
        ids = []
        damaged = []  # members that name no id (not ASCII): never a resource's, dropped now
        for member in unless_damaged(self._client.hkeys, BY_ID) or []:
            resource_id = member_id(member)
            if resource_id is None:
                damaged.append(member)
            else:
                ids.append(resource_id)
        if damaged:
            self._unaccount_script(keys=[USED, BY_ID], args=damaged)
        if ids:
            # ovs:pending before the records: a writer is listed there from before its
            # bytes are counted until after its record is set, so an id found in
            # neither (in this order) has no publish in flight.
            scores = unless_damaged(self._client.zmscore, PENDING, ids)
            pending = scores if scores is not None else [0] * len(ids)  # damaged: keep all
            pipe = self._client.pipeline(transaction=False)
            for resource_id in ids:
                pipe.exists(meta_key(resource_id))
            published = pipe.execute()
            gone = [resource_id for resource_id, live, score in zip(ids, published, pending)
                    if not live and score is None]
            if scores is not None:
                gone += self._dead_writers([(resource_id, score) for resource_id, live, score
                                            in zip(ids, published, pending) if not live and score is not None])
            self.unaccount(*gone)
        return int(self._recount_script(keys=[USED, BY_ID]))

    def _dead_writers(self, listed: list[tuple[str, float]]) -> list[str]:
        """Of unpublished ids listed in ovs:pending (with their heartbeat, ms), those
        whose writer is dead, their entries dropped: its count would otherwise
        stay until a sweep's grace (an hour; forever without cleanup), evicting
        live outputs for memory Redis already freed.

        Dead means a heartbeat older than ``PARTIAL_TTL`` *and* no chunk 0.  A
        live writer beats every ``_HEARTBEAT_SECONDS`` (10 s, six times per
        ``PARTIAL_TTL``), renewing its chunks from chunk 0 on; a writer whose
        chunk 0 expired cannot publish any more (the publish script refuses a
        lost chunk), so however slow or starved it is, and whatever the skew of
        its clock against this one, nothing it can still publish loses its
        count.  (Only a small output's publish, which has no chunk before its
        script, could be taken for dead, and only if it stalled for
        ``PARTIAL_TTL`` between two round trips.)  The chunk is looked at after
        the heartbeat: a publish in between shows its record or its chunks.
        """
        dead_before = time.time() * 1000 - _redis_keys.PARTIAL_TTL.total_seconds() * 1000
        stale = [resource_id for resource_id, score in listed if score <= dead_before]
        if not stale:
            return []
        pipe = self._client.pipeline(transaction=False)
        for resource_id in stale:
            pipe.exists(meta_key(resource_id), chunk_key(resource_id, 0))
        silent = [resource_id for resource_id, held in zip(stale, pipe.execute()) if not held]
        if not silent:
            return []
        # Dropped only if still that old: a writer that beat since keeps its entry and count.
        self._drop_dead_script(keys=[PENDING], args=[dead_before, *silent])
        # Its reply is not what decides: resent after a dropped connection (its first run's
        # reply lost), the script finds those entries gone and names none, and their counts
        # stayed until the next recount, evicting live outputs for memory already freed.  What
        # is left decides, read as the recount reads it: an id no longer in ovs:pending and,
        # looked up after, without a record has no publish in flight (whoever dropped it).
        scores = unless_damaged(self._client.zmscore, PENDING, silent)
        if scores is None:
            return []
        unlisted = [resource_id for resource_id, score in zip(silent, scores) if score is None]
        if not unlisted:
            return []
        return without_record(self._client, unlisted)

    def pending_bytes(self) -> int:
        """Bytes this process's unfinished writers hold that ``usage`` does not count yet."""
        return self._unaccounted()

    def recount(self) -> int:
        """``usage``, exact: the bookkeeping of resources that expired or whose
        writer died is dropped first (call it under ``eviction_lock``).

        :raises StorageError: the server failed.
        """
        try:
            return self._recount()
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot make room", error) from None

    def tally(self) -> contextlib.AbstractContextManager[None]:
        """Nothing held: a writer's bytes reach the running total in the script
        call before its publish (``RedisWriter.publish``), and a check and a
        publish cannot be one script where the total and the resource live in
        different slots of a Cluster."""
        return contextlib.nullcontext()

    def record_bytes(self, record: Record, /) -> int:
        """The bytes of ``record``'s meta key (its JSON with checksums of every
        ``CHECKSUM_BYTES``, plus ``"chunkBytes"``), as the quota counts them."""
        return record_size(record, CHECKSUM_BYTES) + len(b',"chunkBytes":%d' % CHUNK_BYTES)

    @contextlib.contextmanager
    def eviction_lock(self) -> Iterator[bool]:
        """The cleanup lock, waiting for a sweep or eviction in progress.

        A reader racing an eviction gets ``ResourceNotFoundError``, never
        other bytes: all keys of a resource go in one ``DEL``.

        :raises StorageError: the server failed, or the lock stayed held
            longer than a minute.
        """
        try:
            with self._locked(wait=True) as held:
                yield held
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot make room", error) from None

    def still_locked(self) -> None:
        """Before each step of a sweep or an eviction: nothing when this thread
        holds no cleanup lock or surely still holds it.

        :raises StorageError: the lock this thread took was lost (see ``_Hold``).
        """
        hold = getattr(self._holding, "hold", None)
        if hold is not None:
            hold.check()

    def _take(self, token: str) -> bool:
        """One try at the cleanup lock with ``token``.  A take whose reply is lost (a
        timeout) may still run on the server later: it is released at once (best
        effort; a take that runs after the release lapses within ``LOCK_MS``, and
        a retry with the same token would recognise it)."""
        try:
            return bool(self._take_lock(keys=[LOCK], args=[token, _redis_keys.LOCK_MS]))
        except REDIS_ERRORS:
            with contextlib.suppress(*REDIS_ERRORS):
                self._release(keys=[LOCK], args=[token])
            raise

    @contextlib.contextmanager
    def _locked(self, wait: bool) -> Iterator[bool]:
        """Hold the one cleanup lock (a key with a short expiry, renewed while it
        is held: ``_Hold``); yields False when not waiting and another process
        holds it.  A damaged lock (another type, or no expiry) is removed as it
        is taken (``TAKE_LOCK``).  The steps of the work it guards call
        ``still_locked``."""
        token = secrets.token_hex(16)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            sent = time.monotonic()
            if self._take(token):
                break
            if not wait:
                yield False
                return
            if time.monotonic() > deadline:
                raise StorageError(errno.EBUSY, f"the cleanup lock at {self._shown} stayed held for "
                                                f"{LOCK_WAIT_SECONDS:.0f} s")
            time.sleep(0.05)
        hold = _Hold(self._renew_lock, token, sent, self._shown)
        self._holding.hold = hold
        try:
            yield True
        finally:
            self._holding.hold = None
            hold.stop()
            self._release(keys=[LOCK], args=[token])
