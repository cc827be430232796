"""The Redis backend: resources in a Redis server or a Redis Cluster.

Needs the optional ``redis`` client (``pip install 'overspill[redis]'``); it is
imported here only, so ``import overspill`` never imports it.

Keys of one resource share the hash tag ``{ID}``, so in a Cluster they all
live in one slot and one Lua script can touch them atomically::

    ovs:{ID}:meta        the record: the local folder's {id}.json, plus "chunkBytes"
    ovs:{ID}:c:N         payload bytes [N * CHUNK_BYTES, (N + 1) * CHUNK_BYTES), 1008 KiB each
    ovs:session:SESSION  sorted set: the session's ids, scored by creation (ms)
    ovs:sessions         sorted set: sessions, scored by their latest write (ms)
    ovs:pending          sorted set: unfinished writers, scored by their heartbeat (ms)
    ovs:cleanup-lock     held by the one process sweeping or evicting
    ovs:{usage}:bytes    the quota's running total, and ovs:{usage}:by-id its bytes per resource

How the promises of the local folder carry over:

* **Atomic publication.**  Chunks are written with a short expiry
  (``PARTIAL_TTL``, kept alive by the writer while it lives); one Lua script
  checks that every chunk is still there, sets the record and gives every key
  of the resource the same expiry, ``created + retention``.  A writer killed
  mid-way leaves no record (nothing is readable) and its chunks expire.
* **Verified reads.**  The record holds a CRC-32 (zlib's polynomial) of every
  ``CHECKSUM_BYTES`` of the payload; a read is one ``GETRANGE`` per chunk key
  it covers, widened to whole checksum blocks, each verified on every read.
  All keys of a resource are deleted by one ``DEL`` and expire at the same
  instant, so a gone resource reads back empty and is reported not found.
* **Retention** is Redis's own expiry; ``sweep`` removes what expiry cannot
  see: index entries of expired resources, resources older than a shorter
  retention than they were written with, records whose chunks are gone, and
  partial writes whose writer stopped beating.
* **Listing** reads the per-session sorted set, never ``KEYS`` or ``SCAN`` (``SCAN``
  only rebuilds a damaged ``ovs:sessions`` from the per-session sets).
* **The quota** (``_redis_quota``; the store's policy in ``overspill._quota``):
  writers add their bytes to the running total; when it passes the limit,
  the store (under the cleanup lock) has the bookkeeping of resources that
  expired or whose writer died dropped (``recount``), then removes the
  oldest published resources.
* **Durability** is the server's: configure AOF or replicas there;
  ``durable`` has no meaning here.
"""

from __future__ import annotations

import errno
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Optional

import redis
import redis.cluster
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import ConfigError, ResourceNotFoundError, StorageError
from ..records import Record, uri_for
from ._redis_keys import (
    ACCOUNT,
    BY_ID,
    CHECKSUM_BYTES,
    CHUNK_BYTES,
    DISCARD,
    DROP_DAMAGED_ZSET,
    DROP_DEAD,
    FreeingScript,
    PARTIAL_TTL,
    PENDING,
    PUBLISH,
    RECOUNT,
    REDIS_ERRORS,
    RELEASE,
    RENEW_LOCK,
    SESSIONS,
    TAKE_LOCK,
    UNACCOUNT,
    UNLINK_BATCH,
    USAGE,
    answers,
    chunk_count,
    chunk_key,
    is_wrong_type,
    member_id,
    meta_key,
    session_key,
    unless_damaged,
)
from ._redis_quota import RedisQuota
from ._redis_reads import RedisReads
from ._redis_sweep import RedisSweep
from ._redis_writer import RedisWriter
from ._redis_url import parse_redis_url
from .base import CleanupReport

__all__ = ["CHECKSUM_BYTES", "CHUNK_BYTES", "PARTIAL_TTL", "RedisBackend", "RedisWriter"]

#: How often a live writer renews its chunks and its entry in ``ovs:pending``.
_HEARTBEAT_SECONDS = 10.0


class RedisBackend(RedisReads, RedisQuota):
    """Resources in one Redis server (``redis://``, ``rediss://``) or a Cluster
    (``redis+cluster://``, ``rediss+cluster://``).

    :param url: ``redis://[[user]:password@]host[:port][/db]``, ``unix:///path``
        and the like, with the options of ``_redis_url.OPTIONS``
        (``?socket_timeout=5`` ...); see ``_redis_url``.
    :raises ConfigError: the URL is not one this backend serves, or a part
        of it is wrong (the message names the part).
    :raises StorageError: the server cannot be reached (the message names
        the address, never a password).
    """

    def __init__(self, url: str) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        self._secret: Optional[str] = None
        address = parse_redis_url(url)
        self._shown = address.shown
        self._secret = address.password
        self._cluster = address.cluster
        options = dict(address.options)
        # A timeout already waited its seconds: retrying it only multiplies the
        # wait (a stopped server took minutes).  A dropped connection (a server
        # restarted under a pooled connection) is retried once, at once.  The
        # cluster client retries every error it deems transient, timeouts
        # included, after re-reading the slots: none there, so a hung node is
        # one StorageError after one timeout and the other nodes are untouched.
        # A command resent after a dropped connection may have run already (only
        # its reply was lost): every write this backend sends is safe to run twice
        # (the publish and the quota's scripts recognise their own earlier run), and
        # a publish that got no reply at all is looked up (``RedisWriter.publish``).
        options["retry"] = Retry(NoBackoff(), 0 if self._cluster else 1,
                                 supported_errors=(redis.exceptions.ConnectionError,))
        # Past ``max_connections`` a call waits for a connection to come back (the
        # default pool fails it at once, "Too many connections"), as long as one
        # connect and one reply may take: a pool that stays busy longer (a hung
        # server, callers piling up) is a StorageError, as a timeout is.
        self._pool_cap: Optional[int] = options.get("max_connections")
        self._pool_wait = options["socket_connect_timeout"] + options["socket_timeout"]
        if self._pool_cap is not None and self._cluster:
            options.update(connection_pool_class=redis.BlockingConnectionPool, timeout=self._pool_wait)
        try:
            if self._cluster:
                # The cluster client connects at once, to learn the slots.
                self._client: Any = redis.cluster.RedisCluster(**options)
            else:
                self._client = redis.Redis(**options)
                if self._pool_cap is not None:
                    self._client = self._blocking(self._client, self._pool_cap, self._pool_wait)
                self._client.ping()
        except (TypeError, ValueError) as error:
            raise ConfigError(f"malformed Redis URL {self._shown}: {self._scrub(error)}") from None
        except (*REDIS_ERRORS, OSError) as error:
            raise self.storage_error("cannot connect to Redis", error) from None
        self.publish_script = self._client.register_script(PUBLISH)
        self.discard_script = self._client.register_script(DISCARD)
        # A sweep's and an eviction's scripts run on a full noeviction server too (they free
        # memory: FreeingScript); a writer's (publish, account) are refused there.
        self._release = FreeingScript(self._client, RELEASE)
        self._take_lock = FreeingScript(self._client, TAKE_LOCK)
        self._renew_lock = FreeingScript(self._client, RENEW_LOCK)
        self._holding = threading.local()
        self._account_script = self._client.register_script(ACCOUNT)
        self._unaccount_script = FreeingScript(self._client, UNACCOUNT)
        self._recount_script = FreeingScript(self._client, RECOUNT)
        self._usage_script = FreeingScript(self._client, USAGE)
        self._drop_dead_script = FreeingScript(self._client, DROP_DEAD)
        self._drop_damaged_zset = FreeingScript(self._client, DROP_DAMAGED_ZSET)
        self._lock = threading.Lock()
        self._records: OrderedDict[str, tuple[Record, int]] = OrderedDict()
        self._live: weakref.WeakSet[RedisWriter] = weakref.WeakSet()  # writers with chunks in Redis
        self._open: weakref.WeakSet[RedisWriter] = weakref.WeakSet()  # every unfinished writer
        self._keeper: Optional[threading.Thread] = None
        self._closed = threading.Event()

    @staticmethod
    def _blocking(client: Any, cap: int, wait: float) -> Any:
        """A client like ``client`` (connected the same way: TCP, TLS or a socket,
        with the same options) whose pool of ``cap`` connections makes a call
        wait up to ``wait`` seconds for a free one."""
        plain = client.connection_pool
        pool = redis.BlockingConnectionPool(connection_class=plain.connection_class, max_connections=cap,
                                            timeout=wait, **plain.connection_kwargs)
        client.close()  # it never connected: nothing to wait for
        return redis.Redis.from_pool(pool)

    # ------------------------------------------------------------------ basics
    @property
    def url(self) -> str:
        """The URL, without its password."""
        return self._shown

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis`` or ``RedisCluster``)."""
        return self._client

    @property
    def is_cluster(self) -> bool:
        """Whether the store is a Redis Cluster (keys of different slots on different nodes)."""
        return self._cluster

    def __repr__(self) -> str:
        return f"RedisBackend({self._shown!r})"

    def _scrub(self, error: BaseException) -> str:
        """The error's message, never with the password in it."""
        reason = str(error) or type(error).__name__
        return reason.replace(self._secret, "***") if self._secret else reason

    def storage_error(self, action: str, error: BaseException) -> StorageError:
        """A StorageError naming the server, with any password scrubbed from the cause."""
        reason = self._scrub(error)
        number = getattr(error, "errno", None)
        if self._pool_cap is not None and str(error) == "No connection available.":  # BlockingConnectionPool's
            reason = (f"all {self._pool_cap} connections (max_connections) stayed busy for "
                      f"{self._pool_wait:g} s")
            number = errno.EBUSY
        if not self._cluster and (isinstance(error, (redis.exceptions.AskError, redis.exceptions.ClusterDownError))
                                  or reason.startswith("CROSSSLOT")):
            # A MOVED reply's own text is only "SLOT HOST:PORT": say what it means.
            reason = (f"the server is a Redis Cluster node ({type(error).__name__}: {reason}); use the Cluster "
                      "URL form, redis+cluster://host:port (rediss+cluster:// over TLS)")
        if _refused_credentials(error):
            # (a ConnectionError to redis-py, but the server answered: it refused the user or password)
            number = errno.EACCES
        elif not isinstance(number, int):
            number = errno.ECONNREFUSED if isinstance(error, redis.exceptions.ConnectionError) else errno.EIO
        return StorageError(number, f"{action} at {self._shown}: {reason}")

    def ping(self) -> None:
        """One round trip to the server (in a Cluster, to one node).

        :raises StorageError: it cannot be reached or does not answer in time.
        """
        try:
            if self._cluster:
                self._client.ping(target_nodes=redis.cluster.RedisCluster.RANDOM)
            else:
                self._client.ping()
        except (*REDIS_ERRORS, OSError) as error:
            raise self.storage_error("cannot reach Redis", error) from None

    def reset_after_fork(self) -> None:
        """In a forked child: fresh lock, no writers or heartbeat of the parent's,
        empty caches (redis-py opens new connections after a fork by itself)."""
        self._lock = threading.Lock()
        self._holding = threading.local()  # the parent's cleanup lock, if held, is not the child's
        self._records = OrderedDict()
        self._live = weakref.WeakSet()
        self._open = weakref.WeakSet()
        self._keeper = None
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        keeper, self._keeper = self._keeper, None
        if keeper is not None and keeper is not threading.current_thread():
            keeper.join()
        with self._lock:
            self._records.clear()
        try:
            self._client.close()
        except (*REDIS_ERRORS, OSError):
            pass

    # ------------------------------------------------------------------ writing
    def create(self, resource_id: str, /) -> RedisWriter:
        try:
            taken = self._client.exists(meta_key(resource_id), chunk_key(resource_id, 0))
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot create a resource", error) from None
        if taken:
            raise FileExistsError(errno.EEXIST, f"resource id {resource_id} is taken")
        writer = RedisWriter(self, resource_id)
        with self._lock:
            self._open.add(writer)
        return writer

    def enlist(self, writer: RedisWriter) -> None:
        """Keep ``writer``'s partial keys alive from a daemon thread while it lives."""
        with self._lock:
            self._live.add(writer)
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(target=self._keep_alive, name="overspill-redis-heartbeat",
                                                daemon=True)
                self._keeper.start()

    def list_pending(self, resource_id: str) -> None:
        """Put (or renew) ``resource_id``'s entry in ``ovs:pending``.  That key only
        lists writes in flight: one of another type is damage, which lists none of
        them, so it is deleted (atomically, only while still damaged) and the entry
        written into a new one, never a failure of every write.

        :raises redis.exceptions.RedisError: the server fails or cannot be reached.
        """
        entry = {resource_id: time.time() * 1000}
        try:
            self._client.zadd(PENDING, entry)
        except redis.exceptions.ResponseError as error:
            if not is_wrong_type(error):
                raise
            self.drop_damaged_zset(PENDING)
            self._client.zadd(PENDING, entry)

    def drop_damaged_zset(self, key: bytes) -> bool:
        """Delete ``key`` if it holds another type than a sorted set (damage); True when it did."""
        return bool(self._drop_damaged_zset(keys=[key]))

    def delist(self, writer: RedisWriter) -> None:
        with self._lock:
            self._live.discard(writer)
            self._open.discard(writer)

    def _keep_alive(self) -> None:
        while not self._closed.wait(_HEARTBEAT_SECONDS):
            with self._lock:
                writers = list(self._live)
            for writer in writers:
                writer.beat()

    # ------------------------------------------------------------------ listing
    def _session_ids(self, session_id: Optional[str]) -> list[str]:
        # A key of the wrong type (WRONGTYPE) is damage that cleanup removes:
        # skipped here, never a failure of every listing.
        if session_id is not None:
            members = unless_damaged(self._client.zrange, session_key(session_id), 0, -1) or []
        else:
            sessions = self.sessions()
            members = []
            if sessions:
                pipe = self._client.pipeline(transaction=False)
                for session in sessions:
                    pipe.zrange(b"ovs:session:" + session, 0, -1)
                for found in answers(pipe):
                    if not isinstance(found, Exception):
                        members += found
        # A member that names no id (not ASCII) is damage that cleanup removes.
        return sorted({resource_id for resource_id in map(member_id, members) if resource_id is not None})

    def sessions(self, *, repair: bool = True) -> list[bytes]:
        """The sessions ``ovs:sessions`` lists.  That key is only a cache of the
        ``ovs:session:*`` keys: one of another type is damage, rebuilt from them
        (as the local listing index is from the folder), so it hides no session
        and fails no write for good.

        :param repair: False (a dry-run cleanup): the sessions are found as the
            rebuild finds them, and nothing is written.
        """
        listed = unless_damaged(self._client.zrange, SESSIONS, 0, -1)
        return listed if listed is not None else self.rebuild_sessions(repair=repair)

    def rebuild_sessions(self, *, repair: bool = True) -> list[bytes]:
        """``ovs:sessions`` rebuilt from the sessions' own sets, found by ``SCAN``
        (on every node of a Cluster), each scored by its latest write; a key of
        another type in its place is deleted first.  Only damage calls this:
        listings never scan."""
        prefix = b"ovs:session:"
        if repair:
            self._drop_damaged_zset(keys=[SESSIONS])
        found: dict[bytes, float] = {}
        for key in self._client.scan_iter(match=prefix + b"*", _type="zset", count=1000):
            newest = unless_damaged(self._client.zrange, key, -1, -1, withscores=True)
            if newest:
                found[bytes(key)[len(prefix):]] = newest[0][1]
        if repair and found:
            # GT: a writer that listed its session meanwhile keeps its (later) score.
            self._client.zadd(SESSIONS, found, gt=True)
        return sorted(found)

    def _records_of(self, ids: Sequence[str]) -> list[tuple[str, Optional[tuple[Record, int]]]]:
        """Each id with its record, None when it is gone or invalid; one round trip."""
        if not ids:
            return []
        cached = [self._cached(resource_id) for resource_id in ids]
        pipe = self._client.pipeline(transaction=False)
        for resource_id, parsed in zip(ids, cached):
            if parsed is None:
                pipe.get(meta_key(resource_id))
            else:
                pipe.exists(meta_key(resource_id))
        found: list[tuple[str, Optional[tuple[Record, int]]]] = []
        for resource_id, parsed, answer in zip(ids, cached, answers(pipe)):
            if isinstance(answer, Exception):  # a record key of the wrong type: damaged, skipped
                found.append((resource_id, None))
                continue
            if parsed is not None:
                found.append((resource_id, parsed if answer else None))
                continue
            try:
                parsed = self.parse(resource_id, answer)
            except ResourceNotFoundError:
                found.append((resource_id, None))
                continue
            self.remember(resource_id, parsed)
            found.append((resource_id, parsed))
        return found

    def records(self, session_id: Optional[str] = None, /) -> list[Record]:
        try:
            ids = self._session_ids(session_id)
            found = self._records_of(ids)
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot list resources", error) from None
        return [parsed[0] for _, parsed in found
                if parsed is not None and (session_id is None or parsed[0].session_id == session_id)]

    # ------------------------------------------------------------------ removing
    def unlink_unknown(self, resource_id: str, dry_run: bool = False) -> int:
        """Remove chunk keys of a resource whose size is unknown; return their bytes."""
        freed = 0
        start = 0
        while True:
            self.still_locked()
            keys = [chunk_key(resource_id, index) for index in range(start, start + UNLINK_BATCH)]
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.exists(key)
                pipe.strlen(key)
            replies = answers(pipe)
            # A chunk key of the wrong type exists but has no length: removed all the same.
            lengths = [0 if isinstance(length, Exception) else length for length in replies[1::2]]
            present = [key for key, there in zip(keys, replies[0::2]) if there]
            if not present:
                return freed
            freed += sum(lengths)
            if not dry_run:
                self._client.unlink(*present)
            start += UNLINK_BATCH

    def ends_where_claimed(self, record: Record, chunk: int) -> bool:
        """Whether the last chunk key ``record`` claims is there, as long as it says:
        one round trip, whatever size the record claims (a damaged one may claim
        a petabyte, whose key names alone would not fit in memory)."""
        chunks = chunk_count(record.resource.size, chunk)
        if not chunks:
            return True
        last = record.resource.size - (chunks - 1) * chunk
        try:
            return self._client.strlen(chunk_key(record.id, chunks - 1)) == last
        except redis.exceptions.ResponseError as error:
            if is_wrong_type(error):
                return False
            raise

    def remove(self, record: Record, chunk: int) -> int:
        """Remove a resource, record first (one atomic DEL of all its keys).  A record
        whose last chunk is not there (damaged, or its chunks expired) is broken: its
        record goes, then the chunk keys that exist, found a batch at a time."""
        self.still_locked()
        if not self.ends_where_claimed(record, chunk):
            self._client.delete(meta_key(record.id))
            self._client.zrem(session_key(record.session_id), record.id)
            self._forget(record.id)
            self.unaccount(record.id)
            return self.unlink_unknown(record.id)
        keys = [meta_key(record.id)] + [chunk_key(record.id, index)
                                         for index in range(chunk_count(record.resource.size, chunk))]
        removed = self._client.delete(*keys)
        self._client.zrem(session_key(record.session_id), record.id)
        self._forget(record.id)
        counted = self.unaccount(record.id)
        # The bytes released are the ones the quota counted for it (its meta key too, as the
        # folder counts its record file); a resource it had no count for, its own bytes.
        return (counted or self.removable_bytes(record)) if removed else 0

    def removable_bytes(self, record: Record) -> int:
        """What removing ``record``'s resource would release (a dry run's figure): the
        bytes the quota counts for it, or its payload and meta key when it has no count."""
        counted = unless_damaged(self._client.hget, BY_ID, record.id)
        try:
            return int(counted) if counted is not None and int(counted) > 0 else (
                record.resource.size + self.record_bytes(record))
        except ValueError:  # a damaged count: its own bytes
            return record.resource.size + self.record_bytes(record)

    def delete(self, resource_id: str, /) -> int:
        try:
            try:
                record, chunk = self._parsed(resource_id)
            except ResourceNotFoundError:
                self._client.delete(meta_key(resource_id))
                self._forget(resource_id)
                self.unaccount(resource_id)
                return self.unlink_unknown(resource_id)
            return self.remove(record, chunk)
        except REDIS_ERRORS as error:
            raise self.storage_error(f"cannot delete {uri_for(resource_id)}", error) from None

    # ------------------------------------------------------------------ sweeping
    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        """One retention pass (``RedisSweep``) under the cleanup lock; a dry run reads
        only, so it takes no lock: it works for a read-only ACL user and on a full
        server, and is never busy (its report is what a sweep would remove as it
        reads, one running meanwhile or not)."""
        try:
            if dry_run:
                return RedisSweep(self, now, retention, grace, dry_run).run()
            with self._locked(wait=False) as held:
                if not held:
                    return CleanupReport(skipped=1, busy=True)
                return RedisSweep(self, now, retention, grace, dry_run).run()
        except REDIS_ERRORS as error:
            raise self.storage_error("cannot clean", error) from None


def _refused_credentials(error: BaseException) -> bool:
    """Whether ``error`` is, or was caused by, the server refusing the user or password: a Cluster
    client raises its own RedisClusterException with the AuthenticationError as the cause."""
    seen = 0
    while error is not None and seen < 8:  # (a short chain: a cycle must not loop)
        if isinstance(error, redis.exceptions.AuthenticationError):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False
