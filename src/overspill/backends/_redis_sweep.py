"""The Redis backend's retention sweep: what expiry cannot see, under the cleanup lock.

It removes index entries of expired resources, resources older than a
shorter retention than they were written with, records whose chunks are
gone, and partial writes whose writer stopped beating.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Optional

from ..errors import ResourceNotFoundError
from ..records import Record
# PARTIAL_TTL is read from its module at each use, so that a test can shorten it.
from . import _redis_keys
from ._redis_keys import (CHUNK_BYTES, PENDING, SESSIONS, answers, chunk_count, chunk_key, member_id, meta_key,
                          unless_damaged, without_record)
from .base import CleanupReport

if TYPE_CHECKING:
    from .redis import RedisBackend

__all__ = ["RedisSweep"]


class RedisSweep:
    """One retention pass over a Redis store (see ``RedisBackend.sweep``), under the cleanup lock."""

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
                self.client.delete(meta_key(resource_id))
            self.bytes_freed += self.backend.unlink_unknown(resource_id, self.dry_run)
        elif self.dry_run:
            self.bytes_freed += self.backend.removable_bytes(record)
        else:
            self.bytes_freed += self.backend.remove(record, chunk)
        self.removed.append(resource_id)

    def damaged(self, key: bytes) -> None:
        """Remove an index key of the wrong type (counted with the leftovers): the rule
        a write of that session applies too, so only while it is still damaged (a
        write may have replaced it meanwhile with a set listing its resource)."""
        if not self.dry_run:
            self.backend.drop_damaged_zset(key)
        self.temporaries += 1

    def session(self, session: bytes) -> None:
        self.backend.still_locked()  # each step under the lock, so a lock lost is never swept on
        key = b"ovs:session:" + session
        listed = unless_damaged(self.client.zrange, key, 0, -1, withscores=True)
        if listed is None:
            self.damaged(key)
            listed = []
        entries = []
        for member, score in listed:
            resource_id = member_id(member)
            if resource_id is None:  # names no id (not ASCII): damage, dropped from the index
                if not self.dry_run:
                    self.client.zrem(key, member)
                self.temporaries += 1
            else:
                entries.append((resource_id, score))
        pipe = self.client.pipeline(transaction=False)
        for resource_id, _ in entries:
            pipe.get(meta_key(resource_id))
        stale = []
        for (resource_id, score), data in zip(entries, answers(pipe)):
            if isinstance(data, Exception):  # a record key of the wrong type: never ours, removed now
                self.remove(resource_id, None, CHUNK_BYTES)
                continue
            if data is None:
                # Expired, deleted, or a publish in progress (the index entry comes
                # before the record): which, ``abandoned`` tells.
                if self.now_ms - score > self.grace_ms:
                    stale.append(resource_id)
                continue
            try:
                record, chunk = self.backend.parse(resource_id, data)
            except ResourceNotFoundError:
                if self.now_ms - score > self.grace_ms:
                    self.remove(resource_id, None, CHUNK_BYTES)
                continue
            expired = self.now_ms - record.created_ms > self.retention_ms
            chunks = chunk_count(record.resource.size, chunk)
            # The last chunk first: a damaged record claiming far more than is there
            # is found broken in one round trip, before a key name per claimed chunk.
            intact = chunks == 0 or (self.backend.ends_where_claimed(record, chunk) and self.client.exists(
                *(chunk_key(resource_id, index) for index in range(chunks))) == chunks)
            if expired or not intact:
                self.remove(resource_id, record, chunk)
        stale = self.abandoned(stale)
        if stale and not self.dry_run:
            self.client.zrem(key, *stale)
            self.backend.unaccount(*stale)
        if not self.dry_run and self.client.zcard(key) == 0:
            # A writer adds to its session's set before ``ovs:sessions``: the
            # second look puts back a session that gained a resource meanwhile.
            self.client.zrem(SESSIONS, session)
            score = self.client.zrange(key, -1, -1, withscores=True)
            if score:
                self.client.zadd(SESSIONS, {session: score[0][1]}, gt=True)

    def dead_before(self) -> float:
        """The heartbeat (ms) at or before which a writer listed in ovs:pending is dead."""
        return self.now_ms - max(self.grace_ms, _redis_keys.PARTIAL_TTL.total_seconds() * 1000)

    def abandoned(self, ids: list[str]) -> list[str]:
        """Of ids a session lists that had no record, those no live writer is
        publishing: a writer is in ovs:pending from before its index entry until
        after its record is set, so an id in neither (looked up in this order,
        after the index) has no publish in flight, whatever the grace (one
        shorter than a publish unlisted and uncounted a resource being published).
        A Cluster keeps ovs:pending and the session's set in different slots, so
        this is an order of reads, not one script."""
        if not ids:
            return []
        scores = unless_damaged(self.client.zmscore, PENDING, ids)
        if scores is None:  # damaged: ``pending`` removes it, and the next sweep decides
            return []
        dead_before = self.dead_before()
        quiet = [resource_id for resource_id, beat in zip(ids, scores) if beat is None or beat <= dead_before]
        if not quiet:
            return []
        return without_record(self.client, quiet)

    def pending(self) -> None:
        dead_before = self.dead_before()
        members = unless_damaged(self.client.zrangebyscore, PENDING, "-inf", dead_before)
        if members is None:
            # Deleted only while still damaged: a writer may have just replaced it (list_pending).
            if not self.dry_run:
                self.backend.drop_damaged_zset(PENDING)
            self.temporaries += 1
            members = []
        for member in members:
            self.backend.still_locked()
            resource_id = member_id(member)
            if resource_id is None:  # names no id (not ASCII): damage, dropped (its count by the recount)
                if not self.dry_run:
                    self.client.zrem(PENDING, member)
                self.temporaries += 1
                continue
            if not self.client.exists(meta_key(resource_id)):
                self.bytes_freed += self.backend.unlink_unknown(resource_id, self.dry_run)
                self.temporaries += 1
                if not self.dry_run:
                    self.backend.unaccount(resource_id)
            if not self.dry_run:
                self.client.zrem(PENDING, member)

    def run(self) -> CleanupReport:
        # A damaged ovs:sessions is rebuilt from the sessions' sets (it only caches them), not
        # counted as a leftover: nothing stored was lost with it.
        for session in self.backend.sessions(repair=not self.dry_run):
            self.session(session)
        self.pending()
        if not self.dry_run:
            # The quota's bookkeeping recounted, as every eviction does: counts of
            # resources gone behind its back dropped, members that name no id too,
            # and a damaged total (not a number) recounted by the script.
            self.backend.recount_now()
        return CleanupReport(len(self.removed), self.bytes_freed, self.temporaries, 0, tuple(self.removed))
