"""The Redis backend's reads: records (parsed, cached) and verified byte ranges.

A resource's record is its meta key; a range is one ``GETRANGE`` per chunk
key it covers, widened to whole checksum blocks, each verified on every read
(``_checksums.verify``).  All keys of a resource go at once, so a gone
resource reads back empty and is reported not found.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Optional

from ..errors import ResourceNotFoundError, StorageError
from ..records import Record, parse_record, uri_for
from ._checksums import verify
from ._redis_keys import REDIS_ERRORS, chunk_key, is_wrong_type, meta_key

__all__ = ["RedisReads"]

_CACHED_RECORDS = 1024


class RedisReads:
    """Reading records and payload ranges for ``RedisBackend`` (a mixin: the
    backend sets up the client, the lock and the record cache)."""

    _client: Any
    _lock: threading.Lock
    _records: OrderedDict[str, tuple[Record, int]]

    storage_error: Callable[[str, BaseException], StorageError]  # RedisBackend's

    def parse(self, resource_id: str, data: Optional[bytes]) -> tuple[Record, int]:
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

    def remember(self, resource_id: str, parsed: tuple[Record, int]) -> None:
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
        return self._parsed(resource_id)[0]

    def _parsed(self, resource_id: str) -> tuple[Record, int]:
        """``resource_id``'s record and the chunk key size it was written with,
        from the cache or the server."""
        parsed = self._cached(resource_id)
        if parsed is None:
            try:
                data = self._client.get(meta_key(resource_id))
            except REDIS_ERRORS as error:
                raise self._read_failure(resource_id, error, "record", "key") from None
            parsed = self.parse(resource_id, data)
            self.remember(resource_id, parsed)
        return parsed

    def _read_failure(self, resource_id: str, error: BaseException, part: str, key: str) -> Exception:
        """What a failed read of one of ``resource_id``'s keys raises.

        A key of the wrong type is damage, not an outage: the resource cannot be
        read back, so it is not found (``part`` and ``key`` name what is damaged
        in the message), never a storage failure.
        """
        uri = uri_for(resource_id)
        if not is_wrong_type(error):
            return self.storage_error(f"cannot read {uri}", error)
        self._forget(resource_id)
        return ResourceNotFoundError(f"resource {uri} has a damaged {part} (a {key} of the wrong type)")

    def current_record(self, resource_id: str, /) -> Record:
        """``record``, confirmed to be there still: a cached record is served only
        while its key exists (another process's cleanup or eviction may have
        removed it; ``record`` leaves that to the read of the bytes).

        :raises ResourceNotFoundError: it is gone (or its record is damaged).
        :raises StorageError: the server fails or cannot be reached.
        """
        parsed = self._cached(resource_id)
        if parsed is None:
            return self.record(resource_id)
        try:
            there = self._client.exists(meta_key(resource_id))
        except REDIS_ERRORS as error:
            raise self.storage_error(f"cannot read {uri_for(resource_id)}", error) from None
        if not there:
            self._forget(resource_id)
            raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}")
        return parsed[0]

    def read(self, record: Record, start: int, end: int, /) -> memoryview:
        size = record.resource.size
        if not 0 <= start <= end <= size:
            raise ValueError(f"range [{start}, {end}) is outside the resource's {size} bytes")
        if start == end:
            # No bytes to read, so no read to find the resource gone: its record is asked
            # (a page at the end, every page of an empty output), as a read of bytes would.
            self.current_record(record.id)
            return memoryview(b"")
        uri = record.resource.uri
        chunk = self._parsed(record.id)[1]
        block = record.checksum_chunk if record.checksums is not None else 1
        # Widen to whole checksum blocks (never past the end), so each can be verified.
        first = start - start % block
        last = min(end + (-end) % block, size)
        pieces = []
        try:
            for index in range(first // chunk, (last - 1) // chunk + 1):
                base = index * chunk
                pieces.append(self._client.getrange(chunk_key(record.id, index), max(first, base) - base,
                                                    min(last, base + chunk) - base - 1))
        except REDIS_ERRORS as error:
            raise self._read_failure(record.id, error, "payload", "chunk key") from None
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if len(data) != last - first:
            # Deleted or expired: every key of a resource goes at once, so its
            # chunks read back empty (a Lua read that also checked the record
            # costs four times a GETRANGE: values are copied through Lua).
            self._forget(record.id)
            raise ResourceNotFoundError(f"resource {uri} is gone or has a mismatched payload")
        verify(record, memoryview(data), first, start, end)
        return memoryview(data)[start - first : end - first].toreadonly()

    def read_copy(self, record: Record, start: int, end: int, /) -> bytes:
        # ``read``'s bytes are this call's own (the replies), never shared with another
        # process: what it verified is what it returns.
        with self.read(record, start, end) as view:
            whole = view.obj  # the reply itself, when the range is all of it: no second copy
            return whole if type(whole) is bytes and len(whole) == view.nbytes else view.tobytes()

    def _forget(self, resource_id: str) -> None:
        with self._lock:
            self._records.pop(resource_id, None)
