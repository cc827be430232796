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
* **Listing** reads the per-session sorted set, never ``KEYS`` or ``SCAN``.
* **The quota** (``make_room``, as the local folder's): writers add their
  bytes to the running total; when it passes the limit, the evictor (under
  the cleanup lock) first drops the bookkeeping of resources that expired or
  whose writer died, then removes the oldest published resources.
* **Durability** is the server's: configure AOF or replicas there;
  ``durable`` has no meaning here.
"""

from __future__ import annotations

import contextlib
import errno
import json
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, Optional

import redis
import redis.cluster
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from .. import _kernels
from ..errors import ConfigError, ResourceCorruptError, ResourceNotFoundError, StorageError
from ..records import Record, Resource, parse_record, record_json, uri_for
from ._redis_url import parse_redis_url
from .base import CleanupReport

__all__ = ["CHECKSUM_BYTES", "CHUNK_BYTES", "PARTIAL_TTL", "RedisBackend"]

#: Bytes per chunk key: far below Redis's 512 MB value cap, large enough that
#: a 1 GiB payload is about a thousand keys, and 16 KiB short of 1 MiB so that
#: the value and its header fit jemalloc's 1 MiB size class (a full MiB would
#: take the 1.25 MiB class: a quarter of the memory wasted).
CHUNK_BYTES = 1024 * 1024 - 16 * 1024
#: Bytes per checksum: a 50 KB page reads and verifies about 66 KB.
CHECKSUM_BYTES = 16 * 1024
#: How long the chunks of an unfinished write live without a heartbeat.
PARTIAL_TTL = timedelta(seconds=60)
#: How often a live writer renews its chunks and its entry in ``ovs:pending``.
_HEARTBEAT_SECONDS = 10.0

_CACHED_RECORDS = 1024
# What the client raises for a server that fails, refuses or cannot be reached.
_REDIS_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException)
_SESSIONS = b"ovs:sessions"
_PENDING = b"ovs:pending"
_LOCK = b"ovs:cleanup-lock"
# The quota's bookkeeping, in one slot so that one script updates both: bytes
# per resource (published or being written) and their running total.
_USED = b"ovs:{usage}:bytes"
_BY_ID = b"ovs:{usage}:by-id"
# A writer accounts its chunks this often (and the rest when it publishes).
_ACCOUNT_STEP = 8 * 1024 * 1024
_LOCK_WAIT_SECONDS = 60.0
_LOCK_MS = 10 * 60 * 1000
_UNLINK_BATCH = 256

# KEYS: meta, chunk 0 .. chunk n-1.  ARGV: record, ttl ms, "1" when ARGV[4] holds
# the last chunk's bytes (written here, so a small resource is one round trip),
# the length of every chunk written before (a full chunk).
# Returns -1 when published, -2 when the id is taken, else the index of a chunk
# that was lost (0 .. n-1) or altered to another length (n + index).
_PUBLISH = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -2 end
local last = #KEYS
local flushed = last
if ARGV[3] == '1' then flushed = last - 1 end
local full = tonumber(ARGV[5])
for i = 2, flushed do
  local length = redis.call('STRLEN', KEYS[i])
  if length == 0 then return i - 2 end
  if length ~= full then return (last - 1) + (i - 2) end
end
if ARGV[3] == '1' then redis.call('SET', KEYS[last], ARGV[4]) end
for i = 2, last do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return -1
"""

# Run first by every script over the quota's keys (KEYS: total, per-id hash):
# a per-id "hash" of another type is dropped, and a total that is not a
# number (of another type, or text) is recounted from the hash, so one
# damaged key never fails every write.
_REPAIR_USAGE = """
local kind = redis.call('TYPE', KEYS[2]).ok
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[2]) end
kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and (kind ~= 'string' or tonumber(redis.call('GET', KEYS[1])) == nil) then
  local total = 0
  for _, bytes in ipairs(redis.call('HVALS', KEYS[2])) do total = total + (tonumber(bytes) or 0) end
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[1], total)
end
"""

# KEYS: total, per-id hash.  The total (0 when there is none).
_USAGE = _REPAIR_USAGE + """
return tonumber(redis.call('GET', KEYS[1]) or '0')
"""

# KEYS: total, per-id hash.  ARGV: id, bytes to add.
_ACCOUNT = _REPAIR_USAGE + """
if tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') == nil then redis.call('HDEL', KEYS[2], ARGV[1]) end
redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2])
return redis.call('INCRBY', KEYS[1], ARGV[2])
"""

# KEYS: total, per-id hash.  ARGV: ids whose bytes are gone.  Returns the bytes released.
_UNACCOUNT = _REPAIR_USAGE + """
local freed = 0
for i = 1, #ARGV do
  local bytes = redis.call('HGET', KEYS[2], ARGV[i])
  if bytes then
    freed = freed + (tonumber(bytes) or 0)
    redis.call('HDEL', KEYS[2], ARGV[i])
  end
end
if freed ~= 0 then redis.call('DECRBY', KEYS[1], freed) end
return freed
"""

# KEYS: total, per-id hash.  The total, recomputed from the hash.
_RECOUNT = _REPAIR_USAGE + """
local total = 0
for _, bytes in ipairs(redis.call('HVALS', KEYS[2])) do total = total + (tonumber(bytes) or 0) end
redis.call('SET', KEYS[1], total)
return total
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _meta_key(resource_id: str) -> bytes:
    return f"ovs:{{{resource_id}}}:meta".encode("ascii")


def _chunk_key(resource_id: str, index: int) -> bytes:
    return f"ovs:{{{resource_id}}}:c:{index}".encode("ascii")


def _session_key(session_id: str) -> bytes:
    return b"ovs:session:" + session_id.encode("utf-8", "surrogatepass")


def _chunk_count(size: int, chunk: int) -> int:
    return -(-size // chunk)


def _is_wrong_type(error: BaseException) -> bool:
    """Whether a server error says a key holds another type (damage, not an outage)."""
    return isinstance(error, redis.exceptions.ResponseError) and str(error).startswith("WRONGTYPE")


def _unless_damaged(command: Any, *args: Any, **kwargs: Any) -> Any:
    """``command(*args, **kwargs)``, or None when its key holds another type."""
    try:
        return command(*args, **kwargs)
    except redis.exceptions.ResponseError as error:
        if _is_wrong_type(error):
            return None
        raise


def _answers(pipe: Any) -> list[Any]:
    """A pipeline's replies, a WRONGTYPE reply as its exception (any other error raises)."""
    answers = pipe.execute(raise_on_error=False)
    for answer in answers:
        if isinstance(answer, Exception) and not _is_wrong_type(answer):
            raise answer
    return answers


class RedisBackend:
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
        options["retry"] = Retry(NoBackoff(), 0 if self._cluster else 1,
                                 supported_errors=(redis.exceptions.ConnectionError,))
        try:
            if self._cluster:
                # The cluster client connects at once, to learn the slots.
                self._client: Any = redis.cluster.RedisCluster(**options)
            else:
                self._client = redis.Redis(**options)
                self._client.ping()
        except (TypeError, ValueError) as error:
            raise ConfigError(f"malformed Redis URL {self._shown}: {self._scrub(error)}") from None
        except (*_REDIS_ERRORS, OSError) as error:
            raise self._error("cannot connect to Redis", error) from None
        self._publish = self._client.register_script(_PUBLISH)
        self._release = self._client.register_script(_RELEASE)
        self._account_script = self._client.register_script(_ACCOUNT)
        self._unaccount_script = self._client.register_script(_UNACCOUNT)
        self._recount_script = self._client.register_script(_RECOUNT)
        self._usage_script = self._client.register_script(_USAGE)
        self._lock = threading.Lock()
        self._records: OrderedDict[str, tuple[Record, int]] = OrderedDict()
        self._live: weakref.WeakSet[_RedisWriter] = weakref.WeakSet()  # writers with chunks in Redis
        self._open: weakref.WeakSet[_RedisWriter] = weakref.WeakSet()  # every unfinished writer
        self._keeper: Optional[threading.Thread] = None
        self._closed = threading.Event()

    # ------------------------------------------------------------------ basics
    @property
    def url(self) -> str:
        """The URL, without its password."""
        return self._shown

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis`` or ``RedisCluster``)."""
        return self._client

    def __repr__(self) -> str:
        return f"RedisBackend({self._shown!r})"

    def _scrub(self, error: BaseException) -> str:
        """The error's message, never with the password in it."""
        reason = str(error) or type(error).__name__
        return reason.replace(self._secret, "***") if self._secret else reason

    def _error(self, action: str, error: BaseException) -> StorageError:
        """A StorageError naming the server, with any password scrubbed from the cause."""
        reason = self._scrub(error)
        number = getattr(error, "errno", None)
        if not isinstance(number, int):
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
        except (*_REDIS_ERRORS, OSError) as error:
            raise self._error("cannot reach Redis", error) from None

    def reset_after_fork(self) -> None:
        """In a forked child: fresh lock, no writers or heartbeat of the parent's,
        empty caches (redis-py opens new connections after a fork by itself)."""
        self._lock = threading.Lock()
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
        except (*_REDIS_ERRORS, OSError):
            pass

    # ------------------------------------------------------------------ writing
    def create(self, resource_id: str, /) -> _RedisWriter:
        try:
            taken = self._client.exists(_meta_key(resource_id), _chunk_key(resource_id, 0))
        except _REDIS_ERRORS as error:
            raise self._error("cannot create a resource", error) from None
        if taken:
            raise FileExistsError(errno.EEXIST, f"resource id {resource_id} is taken")
        writer = _RedisWriter(self, resource_id)
        with self._lock:
            self._open.add(writer)
        return writer

    def _enlist(self, writer: _RedisWriter) -> None:
        """Keep ``writer``'s partial keys alive from a daemon thread while it lives."""
        with self._lock:
            self._live.add(writer)
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(target=self._keep_alive, name="overspill-redis-heartbeat",
                                                daemon=True)
                self._keeper.start()

    def _delist(self, writer: _RedisWriter) -> None:
        with self._lock:
            self._live.discard(writer)
            self._open.discard(writer)

    def _unaccounted(self) -> int:
        """Bytes this process's unfinished writers hold that the total does not count yet."""
        with self._lock:
            writers = list(self._open)
        return sum(max(writer.size - writer.accounted, 0) for writer in writers)

    def _keep_alive(self) -> None:
        while not self._closed.wait(_HEARTBEAT_SECONDS):
            with self._lock:
                writers = list(self._live)
            for writer in writers:
                writer.beat()

    # ------------------------------------------------------------------ reading
    def _parse(self, resource_id: str, data: Optional[bytes]) -> tuple[Record, int]:
        if data is None:
            raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}")
        record = parse_record(data, resource_id)
        try:
            chunk = json.loads(data).get("chunkBytes")
        except ValueError:  # parse_record accepted it, so this cannot happen; belt and braces
            chunk = None
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1 or (
                record.checksums is not None and chunk % record.checksum_chunk):
            raise ResourceNotFoundError(f"resource {uri_for(resource_id)} has an invalid record: bad chunkBytes")
        return record, chunk

    def _remember(self, resource_id: str, parsed: tuple[Record, int]) -> None:
        with self._lock:
            self._records[resource_id] = parsed
            if len(self._records) > _CACHED_RECORDS:
                self._records.popitem(last=False)

    def _cached(self, resource_id: str) -> Optional[tuple[Record, int]]:
        with self._lock:
            parsed = self._records.get(resource_id)
            if parsed is not None:
                self._records.move_to_end(resource_id)
            return parsed

    def record(self, resource_id: str, /) -> Record:
        # Published records are immutable (ids are never reused), so a cached
        # one stays right; that it still exists is checked by every read.
        parsed = self._cached(resource_id)
        if parsed is None:
            try:
                data = self._client.get(_meta_key(resource_id))
            except redis.exceptions.ResponseError as error:
                if not _is_wrong_type(error):
                    raise self._error(f"cannot read {uri_for(resource_id)}", error) from None
                raise ResourceNotFoundError(f"resource {uri_for(resource_id)} has a damaged record "
                                            "(a key of the wrong type)") from None
            except _REDIS_ERRORS as error:
                raise self._error(f"cannot read {uri_for(resource_id)}", error) from None
            parsed = self._parse(resource_id, data)
            self._remember(resource_id, parsed)
        return parsed[0]

    def _chunk_of(self, record: Record) -> int:
        """The chunk key size ``record``'s resource was written with."""
        parsed = self._cached(record.id)
        if parsed is None:
            try:
                data = self._client.get(_meta_key(record.id))
            except _REDIS_ERRORS as error:
                raise self._error(f"cannot read {record.resource.uri}", error) from None
            parsed = self._parse(record.id, data)
            self._remember(record.id, parsed)
        return parsed[1]

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        size = record.resource.size
        if not 0 <= start <= end <= size:
            raise ValueError(f"range [{start}, {end}) is outside the resource's {size} bytes")
        if start == end:
            return memoryview(b"")
        uri = record.resource.uri
        chunk = self._chunk_of(record)
        block = record.checksum_chunk if record.checksums is not None else 1
        # Widen to whole checksum blocks (never past the end), so each can be verified.
        first = start - start % block
        last = min(end + (-end) % block, size)
        pieces = []
        try:
            for index in range(first // chunk, (last - 1) // chunk + 1):
                base = index * chunk
                pieces.append(self._client.getrange(_chunk_key(record.id, index), max(first, base) - base,
                                                    min(last, base + chunk) - base - 1))
        except _REDIS_ERRORS as error:
            raise self._error(f"cannot read {uri}", error) from None
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if len(data) != last - first:
            # Deleted or expired: every key of a resource goes at once, so its
            # chunks read back empty (a Lua read that also checked the record
            # costs four times a GETRANGE: values are copied through Lua).
            self._forget(record.id)
            raise ResourceNotFoundError(f"resource {uri} is gone or has a mismatched payload")
        if record.checksums is not None:
            view = memoryview(data)
            checksums = record.checksums
            for offset in range(0, last - first, block):
                index = (first + offset) // block
                actual = _kernels.crc32(view[offset : offset + block])
                if actual.to_bytes(4, "big") != checksums[4 * index : 4 * index + 4]:
                    raise ResourceCorruptError(
                        f"resource {uri} is corrupt: bytes {first + offset} to "
                        f"{min(first + offset + block, size)} do not match their checksum")
        return memoryview(data)[start - first : end - first].toreadonly()

    def _forget(self, resource_id: str) -> None:
        with self._lock:
            self._records.pop(resource_id, None)

    # ------------------------------------------------------------------ listing
    def _session_ids(self, session_id: Optional[str]) -> list[str]:
        # A key of the wrong type (WRONGTYPE) is damage that cleanup removes:
        # skipped here, never a failure of every listing.
        if session_id is not None:
            members = _unless_damaged(self._client.zrange, _session_key(session_id), 0, -1) or []
        else:
            sessions = _unless_damaged(self._client.zrange, _SESSIONS, 0, -1) or []
            members = []
            if sessions:
                pipe = self._client.pipeline(transaction=False)
                for session in sessions:
                    pipe.zrange(b"ovs:session:" + session, 0, -1)
                for found in _answers(pipe):
                    if not isinstance(found, Exception):
                        members += found
        return sorted({member.decode("ascii", "replace") for member in members})

    def _records_of(self, ids: Sequence[str]) -> list[tuple[str, Optional[tuple[Record, int]]]]:
        """Each id with its record, None when it is gone or invalid; one round trip."""
        if not ids:
            return []
        cached = [self._cached(resource_id) for resource_id in ids]
        pipe = self._client.pipeline(transaction=False)
        for resource_id, parsed in zip(ids, cached):
            if parsed is None:
                pipe.get(_meta_key(resource_id))
            else:
                pipe.exists(_meta_key(resource_id))
        found: list[tuple[str, Optional[tuple[Record, int]]]] = []
        for resource_id, parsed, answer in zip(ids, cached, _answers(pipe)):
            if isinstance(answer, Exception):  # a record key of the wrong type: damaged, skipped
                found.append((resource_id, None))
                continue
            if parsed is not None:
                found.append((resource_id, parsed if answer else None))
                continue
            try:
                parsed = self._parse(resource_id, answer)
            except ResourceNotFoundError:
                found.append((resource_id, None))
                continue
            self._remember(resource_id, parsed)
            found.append((resource_id, parsed))
        return found

    def records(self, session_id: Optional[str] = None, /) -> list[Record]:
        try:
            ids = self._session_ids(session_id)
            found = self._records_of(ids)
        except _REDIS_ERRORS as error:
            raise self._error("cannot list resources", error) from None
        return [parsed[0] for _, parsed in found
                if parsed is not None and (session_id is None or parsed[0].session_id == session_id)]

    # ------------------------------------------------------------------ removing
    def _unlink_unknown(self, resource_id: str, dry_run: bool = False) -> int:
        """Remove chunk keys of a resource whose size is unknown; return their bytes."""
        freed = 0
        start = 0
        while True:
            keys = [_chunk_key(resource_id, index) for index in range(start, start + _UNLINK_BATCH)]
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.exists(key)
                pipe.strlen(key)
            answers = _answers(pipe)
            # A chunk key of the wrong type exists but has no length: removed all the same.
            lengths = [0 if isinstance(length, Exception) else length for length in answers[1::2]]
            present = [key for key, there in zip(keys, answers[0::2]) if there]
            if not present:
                return freed
            freed += sum(lengths)
            if not dry_run:
                self._client.unlink(*present)
            start += _UNLINK_BATCH

    def _remove(self, record: Record, chunk: int) -> int:
        """Remove a resource, record first (one atomic DEL of all its keys)."""
        keys = [_meta_key(record.id)] + [_chunk_key(record.id, index)
                                         for index in range(_chunk_count(record.resource.size, chunk))]
        removed = self._client.delete(*keys)
        self._client.zrem(_session_key(record.session_id), record.id)
        self._forget(record.id)
        self._unaccount(record.id)
        return record.resource.size if removed else 0

    def delete(self, resource_id: str, /) -> int:
        try:
            try:
                record = self.record(resource_id)
            except ResourceNotFoundError:
                self._client.delete(_meta_key(resource_id))
                self._forget(resource_id)
                self._unaccount(resource_id)
                return self._unlink_unknown(resource_id)
            return self._remove(record, self._chunk_of(record))
        except _REDIS_ERRORS as error:
            raise self._error(f"cannot delete {uri_for(resource_id)}", error) from None

    # ------------------------------------------------------------------ the quota
    def _account(self, resource_id: str, delta: int) -> None:
        if delta:
            self._account_script(keys=[_USED, _BY_ID], args=[resource_id, delta])

    def _unaccount(self, *resource_ids: str) -> int:
        if not resource_ids:
            return 0
        return int(self._unaccount_script(keys=[_USED, _BY_ID], args=list(resource_ids)))

    def usage(self) -> int:
        """Bytes the store's resources take in Redis (published or being written,
        records included), as the quota counts them.

        :raises StorageError: the server cannot be reached.
        """
        try:
            return int(self._usage_script(keys=[_USED, _BY_ID]))
        except _REDIS_ERRORS as error:
            raise self._error("cannot read the usage", error) from None

    def _recount(self) -> int:
        """Drop the bookkeeping of resources that expired or whose writer died; the exact total."""
        ids = [member.decode("ascii", "replace") for member in _unless_damaged(self._client.hkeys, _BY_ID) or []]
        if ids:
            pipe = self._client.pipeline(transaction=False)
            for resource_id in ids:
                pipe.exists(_meta_key(resource_id))
            published = pipe.execute()
            pending = _unless_damaged(self._client.zmscore, _PENDING, ids) or [0] * len(ids)  # damaged: keep all
            self._unaccount(*(resource_id for resource_id, live, score in zip(ids, published, pending)
                              if not live and score is None))
        return int(self._recount_script(keys=[_USED, _BY_ID]))

    def make_room(self, limit: int, /) -> CleanupReport:
        """Evict published resources, oldest ``created`` first (any session),
        until the store takes at most ``limit`` bytes, under the cleanup lock.

        The capability the store enforces ``max_total_bytes`` through (as the
        local folder's).  A reader racing an eviction gets
        ``ResourceNotFoundError``, never other bytes: all keys of a resource
        go in one ``DEL``.

        :raises StorageError: the server failed, or the lock stayed held
            longer than a minute.
        """
        try:
            if self.usage() + self._unaccounted() <= limit:  # the common case: one GET, no lock
                return CleanupReport()
            with self._locked(wait=True):
                used = self._recount() + self._unaccounted()
                removed: list[str] = []
                freed = 0
                if used > limit:
                    for record in sorted(self.records(), key=lambda record: (record.created_ms, record.id)):
                        if used <= limit:
                            break
                        freed += self._remove(record, self._chunk_of(record))
                        removed.append(record.id)
                        used = self.usage() + self._unaccounted()
                return CleanupReport(len(removed), freed, 0, 0, tuple(removed))
        except _REDIS_ERRORS as error:
            raise self._error("cannot make room", error) from None

    # ------------------------------------------------------------------ sweeping
    @contextlib.contextmanager
    def _locked(self, wait: bool) -> Iterator[bool]:
        """Hold the one cleanup lock (a key with an expiry); yields False when
        not waiting and another process holds it."""
        token = secrets.token_hex(16)
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        while not self._client.set(_LOCK, token, nx=True, px=_LOCK_MS):
            if not wait:
                yield False
                return
            if time.monotonic() > deadline:
                raise StorageError(errno.EBUSY, f"the cleanup lock at {self._shown} stayed held for "
                                                f"{_LOCK_WAIT_SECONDS:.0f} s")
            time.sleep(0.05)
        try:
            yield True
        finally:
            self._release(keys=[_LOCK], args=[token])

    def sweep(self, now: float, retention: timedelta, grace: timedelta, *,
              dry_run: bool = False) -> CleanupReport:
        try:
            with self._locked(wait=False) as held:
                if not held:
                    return CleanupReport(skipped=1, busy=True)
                return _Sweep(self, now, retention, grace, dry_run).run()
        except _REDIS_ERRORS as error:
            raise self._error("cannot clean", error) from None


class _Sweep:
    def __init__(self, backend: RedisBackend, now: float, retention: timedelta, grace: timedelta,
                 dry_run: bool) -> None:
        self.backend = backend
        self.client = backend.client
        self.dry_run = dry_run
        self.now_ms = now * 1000
        self.retention_ms = retention.total_seconds() * 1000
        self.grace_ms = grace.total_seconds() * 1000
        self.removed: list[str] = []
        self.bytes_freed = 0
        self.temporaries = 0

    def remove(self, resource_id: str, record: Optional[Record], chunk: int) -> None:
        if record is None:
            if not self.dry_run:
                self.client.delete(_meta_key(resource_id))
            self.bytes_freed += self.backend._unlink_unknown(resource_id, self.dry_run)
        elif self.dry_run:
            self.bytes_freed += record.resource.size
        else:
            self.bytes_freed += self.backend._remove(record, chunk)
        self.removed.append(resource_id)

    def damaged(self, key: bytes) -> None:
        """Remove an index key of the wrong type (counted with the leftovers)."""
        if not self.dry_run:
            self.client.delete(key)
        self.temporaries += 1

    def session(self, session: bytes) -> None:
        key = b"ovs:session:" + session
        listed = _unless_damaged(self.client.zrange, key, 0, -1, withscores=True)
        if listed is None:
            self.damaged(key)
            listed = []
        entries = [(member.decode("ascii", "replace"), score) for member, score in listed]
        pipe = self.client.pipeline(transaction=False)
        for resource_id, _ in entries:
            pipe.get(_meta_key(resource_id))
        stale = []
        for (resource_id, score), data in zip(entries, _answers(pipe)):
            if isinstance(data, Exception):  # a record key of the wrong type: never ours, removed now
                self.remove(resource_id, None, CHUNK_BYTES)
                continue
            if data is None:
                # Expired, deleted, or a publish in progress (the index entry comes first).
                if self.now_ms - score > self.grace_ms:
                    stale.append(resource_id)
                continue
            try:
                record, chunk = self.backend._parse(resource_id, data)
            except ResourceNotFoundError:
                if self.now_ms - score > self.grace_ms:
                    self.remove(resource_id, None, CHUNK_BYTES)
                continue
            expired = self.now_ms - record.created_ms > self.retention_ms
            chunks = _chunk_count(record.resource.size, chunk)
            intact = chunks == 0 or self.client.exists(
                *(_chunk_key(resource_id, index) for index in range(chunks))) == chunks
            if expired or not intact:
                self.remove(resource_id, record, chunk)
        if stale and not self.dry_run:
            self.client.zrem(key, *stale)
            self.backend._unaccount(*stale)
        if not self.dry_run and self.client.zcard(key) == 0:
            # A writer adds to its session's set before ``ovs:sessions``: the
            # second look puts back a session that gained a resource meanwhile.
            self.client.zrem(_SESSIONS, session)
            score = self.client.zrange(key, -1, -1, withscores=True)
            if score:
                self.client.zadd(_SESSIONS, {session: score[0][1]}, gt=True)

    def pending(self) -> None:
        dead_before = self.now_ms - max(self.grace_ms, PARTIAL_TTL.total_seconds() * 1000)
        members = _unless_damaged(self.client.zrangebyscore, _PENDING, "-inf", dead_before)
        if members is None:
            self.damaged(_PENDING)
            members = []
        for member in members:
            resource_id = member.decode("ascii", "replace")
            if not self.client.exists(_meta_key(resource_id)):
                self.bytes_freed += self.backend._unlink_unknown(resource_id, self.dry_run)
                self.temporaries += 1
                if not self.dry_run:
                    self.backend._unaccount(resource_id)
            if not self.dry_run:
                self.client.zrem(_PENDING, member)

    def run(self) -> CleanupReport:
        sessions = _unless_damaged(self.client.zrange, _SESSIONS, 0, -1)
        if sessions is None:
            self.damaged(_SESSIONS)
            sessions = []
        for session in sessions:
            self.session(session)
        self.pending()
        if not self.dry_run:
            self.backend.usage()  # a damaged quota total (not a number) is recounted by the script
        return CleanupReport(len(self.removed), self.bytes_freed, self.temporaries, 0, tuple(self.removed))


class _RedisWriter:
    """One resource being written: chunk keys with a short expiry, then the record."""

    def __init__(self, backend: RedisBackend, resource_id: str) -> None:
        self._backend = backend
        self._client = backend.client
        self._id = resource_id
        self.size = 0
        self._buffer = bytearray()
        self._flushed = 0  # chunk keys written
        self._checksums = bytearray()
        self._finished = False
        self._beating = False
        # Held by a heartbeat for its whole renewal and by publish around its script, so a beat
        # that began before publish cannot set the partial expiry back on published chunks.
        self._beat_lock = threading.Lock()
        self._accounted = 0  # bytes counted against the quota so far
        self._indexed_in: Optional[str] = None  # the session whose index lists this id

    @property
    def accounted(self) -> int:
        return self._accounted

    def _account_to(self, total: int) -> None:
        try:
            self._backend._account(self._id, total - self._accounted)
        except _REDIS_ERRORS as error:
            raise self._backend._error("cannot store the resource", error) from None
        self._accounted = total

    @property
    def id(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"<RedisWriter {self._id} {self.size} bytes>"

    def _checksum(self, data: memoryview) -> None:
        for offset in range(0, len(data), CHECKSUM_BYTES):
            self._checksums += _kernels.crc32(data[offset : offset + CHECKSUM_BYTES]).to_bytes(4, "big")

    def _flush(self, data: memoryview) -> None:
        """Write one full chunk key (with the partial expiry) from ``data``."""
        if not self._beating:
            # The first chunk makes this write visible to the sweep as pending.
            self._beating = True
            self._backend._enlist(self)
            self.beat()
        self._checksum(data)
        try:
            self._client.set(_chunk_key(self._id, self._flushed), data,
                             px=int(PARTIAL_TTL.total_seconds() * 1000))
        except _REDIS_ERRORS as error:
            raise self._backend._error("cannot store the resource", error) from None
        self._flushed += 1
        if self._flushed * CHUNK_BYTES - self._accounted >= _ACCOUNT_STEP:
            self._account_to(self._flushed * CHUNK_BYTES)

    def beat(self) -> None:
        """Renew the expiry of the chunks written so far; never raises."""
        with self._beat_lock:
            if self._finished:
                return
            flushed = self._flushed
            try:
                self._client.zadd(_PENDING, {self._id: time.time() * 1000})
                ttl = int(PARTIAL_TTL.total_seconds() * 1000)
                for start in range(0, flushed, _UNLINK_BATCH):
                    pipe = self._client.pipeline(transaction=False)
                    for index in range(start, min(start + _UNLINK_BATCH, flushed)):
                        pipe.pexpire(_chunk_key(self._id, index), ttl)
                    pipe.execute()
            except (*_REDIS_ERRORS, OSError):
                pass  # the next beat tries again; publish reports chunks that were lost

    def write(self, data: memoryview, /) -> None:
        if self._finished:
            raise ValueError("write after publish or abort")
        with memoryview(data) as view:
            total = len(view)
            position = 0
            if self._buffer:
                take = min(CHUNK_BYTES - len(self._buffer), total)
                self._buffer += view[:take]
                position = take
                if len(self._buffer) == CHUNK_BYTES:
                    self._flush(memoryview(self._buffer))
                    self._buffer = bytearray()
            # Whole chunks go straight from the caller's buffer, uncopied.
            while total - position >= CHUNK_BYTES:
                self._flush(view[position : position + CHUNK_BYTES])
                position += CHUNK_BYTES
            if position < total:
                self._buffer += view[position:]
        self.size += total

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
                retention: timedelta, capture: Optional[tuple[int, int]] = None,
                lines: Optional[int] = None) -> Record:
        if self._finished:
            raise ValueError("publish after publish or abort")
        tail = bytes(self._buffer)
        self._checksum(memoryview(tail))
        chunks = self._flushed + (1 if tail else 0)
        created = time.time_ns() // 1_000_000
        record = Record(Resource(uri_for(self._id), mime, self.size, name), session_id, tool_call_id,
                        created, bytes(self._checksums), CHECKSUM_BYTES, capture, lines)
        document = record_json(record)[:-1] + b',"chunkBytes":%d}' % CHUNK_BYTES
        # At least a second, so the caller can read what it was just given.
        ttl = max(int(min(retention.total_seconds(), 1e11) * 1000), 1000)
        keys = [_meta_key(self._id)] + [_chunk_key(self._id, index) for index in range(chunks)]
        backend = self._backend
        try:
            # The index first: a crash before the record leaves an entry the sweep drops.
            self._client.zadd(_session_key(session_id), {self._id: created})
            self._indexed_in = session_id
            self._client.zadd(_SESSIONS, {session_id.encode("utf-8", "surrogatepass"): created}, gt=True)
            if not tail and self._flushed:
                self._verify_last_block()
            self._account_to(self.size + len(document))
            with self._beat_lock:
                outcome = backend._publish(keys=keys, args=[document, ttl, 1 if tail else 0, tail, CHUNK_BYTES])
                if outcome == -1:
                    self._finished = True  # no later beat renews the partial expiry
        except _REDIS_ERRORS as error:
            raise backend._error("cannot publish the resource", error) from None
        if outcome == -2:
            raise StorageError(errno.EEXIST, f"resource id {self._id} was taken at {backend.url}")
        if outcome >= chunks:
            raise StorageError(errno.EIO, f"chunk {outcome - chunks} of {uri_for(self._id)} was changed by someone "
                                          f"else before it was published at {backend.url} (its length is not "
                                          "what was written); nothing was published")
        if outcome != -1:
            raise StorageError(errno.EIO, f"chunk {outcome} of {uri_for(self._id)} expired before it "
                                          f"was published at {backend.url}")
        self._finished = True
        self._buffer = bytearray()
        backend._delist(self)
        if self._beating:
            try:
                self._client.zrem(_PENDING, self._id)
            except _REDIS_ERRORS:
                pass  # the sweep finds the record published and drops the entry
        backend._remember(self._id, (record, CHUNK_BYTES))
        return record

    def _verify_last_block(self) -> None:
        """Check the stored end of the payload against its CRC before publishing
        (the script checks every chunk's length): "stored" means readable.

        :raises StorageError: the bytes there are not those written.
        """
        last = self._flushed - 1
        start = CHUNK_BYTES - CHECKSUM_BYTES
        data = self._client.getrange(_chunk_key(self._id, last), start, CHUNK_BYTES - 1)
        index = (last * CHUNK_BYTES + start) // CHECKSUM_BYTES
        expected = bytes(self._checksums[4 * index : 4 * index + 4])
        if len(data) != CHECKSUM_BYTES or _kernels.crc32(data).to_bytes(4, "big") != expected:
            raise StorageError(errno.EIO, f"the last chunk of {uri_for(self._id)} was changed by someone else "
                                          f"before it was published at {self._backend.url}; nothing was published")

    def abort(self) -> None:
        published = self._finished
        self._finished = True
        self._buffer = bytearray()
        self._backend._delist(self)
        try:
            if published:
                self._backend.delete(self._id)
            elif self._flushed:
                self._client.unlink(*(_chunk_key(self._id, index) for index in range(self._flushed)))
            if self._accounted and not published:
                self._backend._unaccount(self._id)
            if self._indexed_in is not None and not published:
                self._client.zrem(_session_key(self._indexed_in), self._id)
            if self._beating:
                self._client.zrem(_PENDING, self._id)
        except (*_REDIS_ERRORS, OSError):
            pass  # the chunks expire on their own; the sweep drops the pending entry
