"""Redis keys, the Lua scripts and the numbers the Redis backend's parts share.

The layout (see ``overspill.backends.redis``)::

    ovs:{ID}:meta        the record: the local folder's {id}.json, plus "chunkBytes"
    ovs:{ID}:c:N         payload bytes [N * CHUNK_BYTES, (N + 1) * CHUNK_BYTES)
    ovs:session:SESSION  sorted set: the session's ids, scored by creation (ms)
    ovs:sessions         sorted set: sessions, scored by their latest write (ms); only a
                         cache of the ovs:session:* keys, rebuilt from them when damaged
    ovs:pending          sorted set: unfinished writers, scored by their heartbeat (ms)
    ovs:cleanup-lock     held by the one process sweeping or evicting
    ovs:{usage}:bytes    the quota's running total, and ovs:{usage}:by-id its bytes per resource
"""

from __future__ import annotations

from datetime import timedelta
from collections.abc import Sequence
from typing import Any, Optional

import redis.exceptions

from ._report import CLEANUP_LOCK_WAIT_SECONDS

__all__ = ["ACCOUNT", "ACCOUNT_STEP", "ALLOW_OOM", "BY_ID", "CHECKSUM_BYTES", "CHUNK_BYTES", "DISCARD",
           "DROP_DAMAGED_ZSET", "DROP_DEAD", "FreeingScript", "LOCK", "LOCK_MS", "LOCK_WAIT_SECONDS", "PARTIAL_TTL",
           "PENDING", "PUBLISH", "RECOUNT", "REDIS_ERRORS", "RELEASE", "RENEW_LOCK", "SESSIONS", "TAKE_LOCK",
           "UNACCOUNT", "UNANSWERED", "UNLINK_BATCH", "USAGE", "USED", "answers", "chunk_count", "chunk_key",
           "is_wrong_type", "member_id", "meta_key", "session_key", "unless_damaged"]

#: Bytes per chunk key: far below Redis's 512 MB value cap, large enough that
#: a 1 GiB payload is about a thousand keys, and 16 KiB short of 1 MiB so that
#: the value and its header fit jemalloc's 1 MiB size class (a full MiB would
#: take the 1.25 MiB class: a quarter of the memory wasted).
CHUNK_BYTES = 1024 * 1024 - 16 * 1024
#: Bytes per checksum: a 50 KB page reads and verifies about 66 KB.
CHECKSUM_BYTES = 16 * 1024
#: How long the chunks of an unfinished write live without a heartbeat.
PARTIAL_TTL = timedelta(seconds=60)

# What the client raises for a server that fails, refuses or cannot be reached.
REDIS_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException)
# What it raises when a command was sent and no reply came: it may have run or not.
UNANSWERED = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
SESSIONS = b"ovs:sessions"
PENDING = b"ovs:pending"
LOCK = b"ovs:cleanup-lock"
# The quota's bookkeeping, in one slot so that one script updates both: bytes
# per resource (published or being written) and their running total.
USED = b"ovs:{usage}:bytes"
BY_ID = b"ovs:{usage}:by-id"
# A writer accounts its chunks this often (and the rest when it publishes).
ACCOUNT_STEP = 8 * 1024 * 1024
LOCK_WAIT_SECONDS = CLEANUP_LOCK_WAIT_SECONDS
#: The cleanup lock's expiry, renewed by its holder every quarter of it
#: (``_redis_quota._Hold``): short, so that a holder killed mid-sweep (kill -9,
#: OOM) or a take whose reply was lost blocks evictions and sweeps for at most
#: this long, where a fixed 10 minutes made every write needing room fail.
#: Read from this module at each use, so that a test can shorten it.
LOCK_MS = 20 * 1000
UNLINK_BATCH = 256

# KEYS: meta, chunk 0 .. chunk n-1.  ARGV: record, ttl ms, "1" when ARGV[4] holds
# the last chunk's bytes (written here, so a small resource is one round trip),
# the length of every chunk written before (a full chunk).
# Returns -1 when published, -2 when the id is taken, else the index of a chunk
# that was lost (0 .. n-1) or altered to another length (n + index).
# A record there that is this very one is this publish run before: the client resends
# a command once after a dropped connection, and the reply lost may be the first
# run's (it answered "taken", and the writer then unlisted and uncounted its own
# published output).  The record names its creation time (ms), caller and checksums,
# so another write's never equals it.
PUBLISH = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' then
  if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then return -1 end
  return -2
end
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

# The number a quota value (the total, or one id's bytes) holds, or nil when it is
# damage: one INCRBY/HINCRBY/DECRBY refuse (Redis's own rule, string2ll: an optional
# '-' then decimal digits without a leading zero, or "0" alone), or one past 2**53.
# Lua's tonumber() is not that test: it accepts "1.5", "nan", "inf", "0x10", "1e3" and
# " 5", all of which made every write and cleanup fail on the command after it.  Past
# 2**53 (8 PiB, more than any store holds) a Lua number no longer holds the value
# exactly, and near 2**63 INCRBY of an output's bytes overflows and the usage read
# back wraps negative (no eviction recounts it): every write failed on it too.  The
# bound is compared exactly (16 digits at most; a double rounds monotonically).
_INTEGER = """
local function integer(text)
  if text == '0' then return 0 end
  local digits = string.match(text, '^%-?([1-9]%d*)$')
  if digits == nil or #digits > 16 or tonumber(digits) > 9007199254740992 then return nil end
  return tonumber(text)
end
-- A sum of per-id values, as a total holds it: at most 2**53 (see integer).
local function counted(values)
  local total = 0
  for _, bytes in ipairs(values) do total = total + (integer(bytes) or 0) end
  if total > 9007199254740992 then return 9007199254740992 end
  return total
end
"""

# Run first by every script over the quota's keys (KEYS: total, per-id hash):
# a per-id "hash" of another type is dropped, and a total that is damage (of
# another type, or text ``integer`` refuses) is recounted from the
# hash, so one damaged key never fails every write.  A per-id value that is not
# one counts as nothing (ACCOUNT and UNACCOUNT drop it).
_REPAIR_USAGE = _INTEGER + """
local kind = redis.call('TYPE', KEYS[2]).ok
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[2]) end
kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and (kind ~= 'string' or integer(redis.call('GET', KEYS[1])) == nil) then
  local total = counted(redis.call('HVALS', KEYS[2]))
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[1], total)
end
"""

# KEYS: total, per-id hash.  The total (0 when there is none).
USAGE = _REPAIR_USAGE + """
return tonumber(redis.call('GET', KEYS[1]) or '0')
"""

# KEYS: total, per-id hash.  ARGV: id, the bytes it holds now (what it held so far and
# more).  Sets the id's count, and adds the difference to the total: run twice (the
# client resends a command once after a dropped connection, and the first run's reply
# may be the one lost) it counts the bytes once.  A value that is not one counts as
# nothing, as the total's repair counts it.  Returns the total.
ACCOUNT = _REPAIR_USAGE + """
local before = integer(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0
local now = integer(ARGV[2])
if now ~= before then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  return redis.call('INCRBY', KEYS[1], string.format('%d', now - before))
end
return tonumber(redis.call('GET', KEYS[1]) or '0')
"""

# KEYS: meta, chunk 0 .. chunk n-1.  ARGV: the record a publish sent and got no reply
# for.  Deletes the record when it is that one (the publish ran: the write is reported
# failed, so nothing of it may stay visible), then the chunks; 1 when the record was
# there.  A record of another type or another write's stays.
DISCARD = """
local removed = 0
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  removed = 1
end
for i = 2, #KEYS do redis.call('UNLINK', KEYS[i]) end
return removed
"""

# KEYS: total, per-id hash.  ARGV: ids whose bytes are gone.  Returns the bytes released.
UNACCOUNT = _REPAIR_USAGE + """
local freed = 0
for i = 1, #ARGV do
  local bytes = redis.call('HGET', KEYS[2], ARGV[i])
  if bytes then
    freed = freed + (integer(bytes) or 0)
    redis.call('HDEL', KEYS[2], ARGV[i])
  end
end
if freed > 9007199254740992 then freed = 9007199254740992 end  -- (an integer DECRBY takes; see integer)
if freed ~= 0 then redis.call('DECRBY', KEYS[1], freed) end
return freed
"""

# KEYS: total, per-id hash.  The total, recomputed from the hash (a total of 0
# is no key, as before the first write: a sweep of an emptied store leaves none).
RECOUNT = _REPAIR_USAGE + """
local total = counted(redis.call('HVALS', KEYS[2]))
if total == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], total) end
return total
"""

# KEYS: ovs:pending.  ARGV: a heartbeat time (ms), then ids.  Removes each id whose
# entry is still no newer than that time (a writer that beat meanwhile keeps its
# entry) and returns those removed.
DROP_DEAD = """
local dropped = {}
local before = tonumber(ARGV[1])
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= before then
    redis.call('ZREM', KEYS[1], ARGV[i])
    dropped[#dropped + 1] = ARGV[i]
  end
end
return dropped
"""

# KEYS: ovs:sessions, ovs:pending or a session's set.  Deletes it when it holds another type than
# a sorted set (damage: every listing and write would fail on it); 1 when it did.
# One script, so a key another process has just rebuilt is never deleted.
DROP_DAMAGED_ZSET = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'zset' and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""

# KEYS: ovs:cleanup-lock.  ARGV: this holder's token, its expiry (ms).  Takes the lock
# when it is free, or when it already holds this token (a retried take whose first
# reply was lost ran on the server: the caller's own lock, not another's); 1 when
# taken.  A holder always sets it with an expiry, as a string:
# a key of another type, or one with no expiry, is damage no holder will ever release
# (every cleanup would be busy for ever, every eviction wait and fail), so it is
# deleted first.  One script, so a lock another process has just taken stays.
TAKE_LOCK = """
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and (kind ~= 'string' or redis.call('PTTL', KEYS[1]) == -1) then
  redis.call('DEL', KEYS[1])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""

# KEYS: ovs:cleanup-lock.  ARGV: the holder's token, the expiry (ms).  Extends the
# lock while it still holds that token; 0 when it no longer does (it expired, and
# may be another's now).
RENEW_LOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


#: The shebang (Redis >= 7) of the scripts a sweep or an eviction runs (``FreeingScript``):
#: on a full ``noeviction`` server (used memory over ``maxmemory``) Redis refuses a
#: script's first SET, INCRBY or DECRBY, so the cleanup lock could not be taken nor
#: the total recounted, and neither cleanup nor the quota could free the memory
#: that blocked them.  Their writes free memory (DEL, HDEL, ZREM) or are a few
#: bytes of bookkeeping (the lock, the total).  PUBLISH and ACCOUNT, a writer's,
#: never carry it: a new output is still refused on a full server.
ALLOW_OOM = "#!lua flags=allow-oom\n"


def _refuses_shebang(error: BaseException) -> bool:
    """Whether the server refused a script for its shebang line: a server before
    Redis 7 does not know it (Lua reads '#' as a syntax error), a later one may
    not know a flag."""
    text = str(error)
    return isinstance(error, redis.exceptions.ResponseError) and ("near '#'" in text or "shebang" in text)


class FreeingScript:
    """A script of the sweep or the eviction, run even on a full ``noeviction``
    server: registered with ``ALLOW_OOM``, and without it on a server that
    refuses the shebang (before Redis 7: there a script's first write that may
    grow memory is still refused when memory is full).  Called as redis-py's
    ``Script``: ``script(keys=[...], args=[...])``."""

    def __init__(self, client: Any, text: str, shebang: str = ALLOW_OOM) -> None:
        self._flagged = client.register_script(shebang + text)
        self._plain = client.register_script(text)
        # Set once, from any thread, when the server refuses the shebang: every later
        # call goes straight to the plain script (a bool's assignment is atomic).
        self._plain_only = False

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        if not self._plain_only:
            try:
                return self._flagged(keys=keys, args=args)
            except redis.exceptions.ResponseError as error:
                if not _refuses_shebang(error):
                    raise
                self._plain_only = True
        return self._plain(keys=keys, args=args)


def meta_key(resource_id: str) -> bytes:
    return f"ovs:{{{resource_id}}}:meta".encode("ascii")


def member_id(member: bytes) -> Optional[str]:
    """The resource id a member of the bookkeeping (a session's set, ovs:pending,
    ovs:{usage}:by-id) names; None for one that is not ASCII, which no writer
    of ours wrote (ids are ASCII): damage that listings skip and cleanup removes."""
    try:
        return member.decode("ascii")
    except UnicodeDecodeError:
        return None


def chunk_key(resource_id: str, index: int) -> bytes:
    return f"ovs:{{{resource_id}}}:c:{index}".encode("ascii")


def session_key(session_id: str) -> bytes:
    return b"ovs:session:" + session_id.encode("utf-8", "surrogatepass")


def chunk_count(size: int, chunk: int) -> int:
    return -(-size // chunk)


def is_wrong_type(error: BaseException) -> bool:
    """Whether a server error says a key holds another type (damage, not an outage)."""
    return isinstance(error, redis.exceptions.ResponseError) and str(error).startswith("WRONGTYPE")


def unless_damaged(command: Any, *args: Any, **kwargs: Any) -> Any:
    """``command(*args, **kwargs)``, or None when its key holds another type."""
    try:
        return command(*args, **kwargs)
    except redis.exceptions.ResponseError as error:
        if is_wrong_type(error):
            return None
        raise


def without_record(client: Any, ids: list[str]) -> list[str]:
    """Those of ``ids`` that have no record (``meta_key``), in their order: one pipelined look."""
    pipe = client.pipeline(transaction=False)
    for resource_id in ids:
        pipe.exists(meta_key(resource_id))
    return [resource_id for resource_id, there in zip(ids, pipe.execute()) if not there]


def answers(pipe: Any) -> list[Any]:
    """A pipeline's replies, a WRONGTYPE reply as its exception (any other error raises)."""
    replies = pipe.execute(raise_on_error=False)
    for answer in replies:
        if isinstance(answer, Exception) and not is_wrong_type(answer):
            raise answer
    return replies
