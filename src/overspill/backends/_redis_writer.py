"""One resource being written to Redis: chunk keys with a short expiry, kept
alive by a heartbeat, then one script that publishes the record."""

from __future__ import annotations

import errno
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Optional

from .. import _kernels
from ..errors import StorageError
from ..records import Record, Resource, record_json, uri_for
from ._checksums import Checksums
# PARTIAL_TTL is read from its module at each use, so that a test can shorten it.
from . import _redis_keys
from ._redis_keys import (
    ACCOUNT_STEP,
    CHECKSUM_BYTES,
    CHUNK_BYTES,
    PENDING,
    REDIS_ERRORS,
    SESSIONS,
    UNANSWERED,
    UNLINK_BATCH,
    answers,
    chunk_key,
    meta_key,
    session_key,
)

if TYPE_CHECKING:
    from .redis import RedisBackend

__all__ = ["RedisWriter"]


class RedisWriter:
    """One resource being written: chunk keys with a short expiry, then the record."""

    def __init__(self, backend: RedisBackend, resource_id: str) -> None:
        self._backend = backend
        self._client = backend.client
        self._id = resource_id
        self.size = 0
        self._buffer = bytearray()
        self._flushed = 0  # chunk keys written
        self._checksums = Checksums(CHECKSUM_BYTES)
        self._finished = False
        self._beating = False
        self._listed = False  # an entry in ovs:pending (the heartbeat's, or the publish's)
        # Held by a heartbeat for its whole renewal and by publish around its script, so a beat
        # that began before publish cannot set the partial expiry back on published chunks.
        self._beat_lock = threading.Lock()
        self._accounted = 0  # bytes counted against the quota so far
        self._account_sent = False  # an ACCOUNT sent, answered or not: abort uncounts the id
        # (keys, record) of a publish sent whose outcome is unknown (no reply, or the
        # call interrupted): abort removes that record if it is there, not only the chunks.
        self._unsure: Optional[tuple[list[bytes], bytes]] = None
        self._indexed_in: Optional[str] = None  # the session whose index lists this id

    @property
    def accounted(self) -> int:
        return self._accounted

    def _account_to(self, total: int) -> None:
        if total == self._accounted:
            return
        self._account_sent = True  # its reply may be lost after it ran
        try:
            self._backend.account(self._id, total)
        except REDIS_ERRORS as error:
            raise self._backend.storage_error("cannot store the resource", error) from None
        self._accounted = total

    @property
    def id(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"<RedisWriter {self._id} {self.size} bytes>"

    def _flush(self, data: memoryview) -> None:
        """Write one full chunk key (with the partial expiry) from ``data``."""
        if not self._beating:
            # The first chunk makes this write visible to the sweep as pending.
            self._beating = True
            self._listed = True
            self._backend.enlist(self)
            self.beat()
        self._checksums.feed(data)
        try:
            self._client.set(chunk_key(self._id, self._flushed), data,
                             px=int(_redis_keys.PARTIAL_TTL.total_seconds() * 1000))
        except REDIS_ERRORS as error:
            raise self._backend.storage_error("cannot store the resource", error) from None
        self._flushed += 1
        if self._flushed * CHUNK_BYTES - self._accounted >= ACCOUNT_STEP:
            self._account_to(self._flushed * CHUNK_BYTES)

    def beat(self) -> None:
        """Renew the expiry of the chunks written so far; never raises."""
        with self._beat_lock:
            if self._finished:
                return
            flushed = self._flushed
            try:
                self._backend.list_pending(self._id)
                ttl = int(_redis_keys.PARTIAL_TTL.total_seconds() * 1000)
                for start in range(0, flushed, UNLINK_BATCH):
                    pipe = self._client.pipeline(transaction=False)
                    for index in range(start, min(start + UNLINK_BATCH, flushed)):
                        pipe.pexpire(chunk_key(self._id, index), ttl)
                    pipe.execute()
            except (*REDIS_ERRORS, OSError):
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

    def settle(self) -> None:
        """Nothing to do: the server keeps each chunk as it is sent (its own persistence rules)."""

    def publish(self, session_id: str, tool_call_id: str, mime: str, name: Optional[str], *,
                retention: timedelta, capture: Optional[tuple[int, int]] = None,
                lines: Optional[int] = None) -> Record:
        if self._finished:
            raise ValueError("publish after publish or abort")
        tail = bytes(self._buffer)
        self._checksums.feed(memoryview(tail))
        chunks = self._flushed + (1 if tail else 0)
        created = time.time_ns() // 1_000_000
        record = Record(Resource(uri_for(self._id), mime, self.size, name), session_id, tool_call_id,
                        created, self._checksums.finish(), CHECKSUM_BYTES, capture, lines)
        document = record_json(record)[:-1] + b',"chunkBytes":%d}' % CHUNK_BYTES
        # At least a second, so the caller can read what it was just given.
        ttl = max(int(min(retention.total_seconds(), 1e11) * 1000), 1000)
        keys = [meta_key(self._id)] + [chunk_key(self._id, index) for index in range(chunks)]
        backend = self._backend
        try:
            # An entry in ovs:pending first, kept until the record is there: a recount
            # (another process's eviction) drops the count of an id with neither, which
            # would lose this one's for good, and a sweep drops an index entry with
            # neither (a crash before the record), which would unlist this one.  So it
            # must be there before the index entry: on one server the pipeline's
            # commands run in order; a Cluster pipeline sends to each node at once, in
            # no order, so there it is a round trip of its own (a small output's only:
            # a larger writer's heartbeat listed it at its first chunk).
            pipe = self._client.pipeline(transaction=False)
            pending_in_pipe = False
            if not self._listed:
                self._listed = True
                if backend.is_cluster:
                    backend.list_pending(self._id)
                else:
                    pipe.zadd(PENDING, {self._id: time.time() * 1000})
                    pending_in_pipe = True
            pipe.zadd(session_key(session_id), {self._id: created})
            pipe.zadd(SESSIONS, {session_id.encode("utf-8", "surrogatepass"): created}, gt=True)
            self._indexed_in = session_id
            replies = answers(pipe)
            pending_reply = replies.pop(0) if pending_in_pipe else None
            index_again = False
            if isinstance(pending_reply, Exception):
                # ovs:pending of another type (damage, listing no write): replaced by a new
                # one holding this entry, and the index entry written again after it, as
                # the order above wants (a sweep in between may have dropped it).
                backend.list_pending(self._id)
                index_again = True
            if isinstance(replies[0], Exception):
                # This session's own set of another type (damage: it lists nothing, and every
                # write of the session failed on it until a cleanup): removed by the rule
                # cleanup applies (only while still damaged, so a set another writer has just
                # put there stays), and a new one started with this entry.
                backend.drop_damaged_zset(session_key(session_id))
                index_again = True
            if index_again:
                self._client.zadd(session_key(session_id), {self._id: created})
            if isinstance(replies[-1], Exception):
                # ovs:sessions of another type (damage): rebuilt from the sessions' sets, this
                # session's included (its set was written just before), not a failed write.
                backend.rebuild_sessions()
            if not tail and self._flushed:
                self._verify_last_block(record.checksums or b"")
            self._account_to(self.size + len(document))
            with self._beat_lock:
                self._unsure = (keys, document)
                try:
                    outcome = backend.publish_script(keys=keys, args=[document, ttl, 1 if tail else 0, tail,
                                                                      CHUNK_BYTES])
                except UNANSWERED:
                    # Sent, and no reply (the client's one resend included; a Cluster client
                    # sends once): it may have run.  Its record there says it did.
                    if not self._published_as(document):
                        raise
                    outcome = -1
                self._unsure = None  # answered: what it did is known
                if outcome == -1:
                    self._finished = True  # no later beat renews the partial expiry
        except REDIS_ERRORS as error:
            raise backend.storage_error("cannot publish the resource", error) from None
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
        backend.delist(self)
        if self._listed:
            try:
                self._client.zrem(PENDING, self._id)
            except REDIS_ERRORS:
                pass  # the sweep finds the record published and drops the entry
        backend.remember(self._id, (record, CHUNK_BYTES))
        return record

    def _published_as(self, document: bytes) -> bool:
        """Whether this resource's record is ``document`` (a publish that got no reply
        ran); False when it is not or cannot be read (then ``abort`` removes it if it is)."""
        try:
            return self._client.get(meta_key(self._id)) == document
        except REDIS_ERRORS:
            return False

    def _verify_last_block(self, checksums: bytes) -> None:
        """Check the stored end of the payload against its CRC before publishing
        (the script checks every chunk's length): "stored" means readable.

        :raises StorageError: the bytes there are not those written.
        """
        last = self._flushed - 1
        start = CHUNK_BYTES - CHECKSUM_BYTES
        data = self._client.getrange(chunk_key(self._id, last), start, CHUNK_BYTES - 1)
        index = (last * CHUNK_BYTES + start) // CHECKSUM_BYTES
        expected = checksums[4 * index : 4 * index + 4]
        if len(data) != CHECKSUM_BYTES or _kernels.crc32(data).to_bytes(4, "big") != expected:
            raise StorageError(errno.EIO, f"the last chunk of {uri_for(self._id)} was changed by someone else "
                                          f"before it was published at {self._backend.url}; nothing was published")

    def abort(self) -> None:
        published = self._finished
        self._finished = True
        self._buffer = bytearray()
        self._backend.delist(self)
        if self._unsure is not None and not published:
            # A publish whose outcome is unknown: its record goes first, if it is there, with
            # the chunks (one script).  If that fails the record may be published: its index
            # entry and count then stay with it (nothing unlisted nor uncounted), and if it
            # is not, the sweep drops them as a dead writer's.
            keys, document = self._unsure
            try:
                self._backend.discard_script(keys=keys, args=[document])
            except (*REDIS_ERRORS, OSError):
                return
        steps = []
        if published:
            steps.append(lambda: self._backend.delete(self._id))
        elif self._flushed and self._unsure is None:
            steps.append(lambda: self._client.unlink(*(chunk_key(self._id, index) for index in range(self._flushed))))
        if self._account_sent and not published:
            steps.append(lambda: self._backend.unaccount(self._id))
        if self._indexed_in is not None and not published:
            steps.append(lambda: self._client.zrem(session_key(self._indexed_in), self._id))
        if self._listed:
            steps.append(lambda: self._client.zrem(PENDING, self._id))
        # Each step on its own: one that fails (a key of another type, a lost connection)
        # skipped the rest, and left this write's entry in ovs:pending after its error.
        for step in steps:
            try:
                step()
            except (*REDIS_ERRORS, OSError):
                pass  # the chunks expire on their own; the sweep drops the entries left
