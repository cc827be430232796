"""What the local backend keeps per resource it read, and how it maps a payload."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from typing import Optional

from .. import _files
from ..records import Record, unreadable
from ._seals import SealChain

__all__ = ["Entry", "drop_mapped_pages", "file_identity", "map_range"]


class Entry:
    """What this process knows of one resource: its paths (built once), its
    parsed record with the file identity it was read under, the record's
    checksums as integers, and an open map of the payload with its identity."""

    # ``parsed`` and ``mapped`` are (identity, value) pairs replaced whole, so a
    # reader without the lock never pairs one identity with another's value.
    __slots__ = ("record_path", "payload_path", "seal_path", "parsed", "mapped", "chain")

    def __init__(self, directory: str, resource_id: str) -> None:
        self.record_path = f"{directory}/{resource_id}.json"
        self.payload_path = f"{directory}/{resource_id}.txt"
        self.seal_path = f"{directory}/{resource_id}.seal"
        self.parsed: tuple[Optional[tuple[int, ...]], Optional[Record]] = (None, None)
        self.mapped: tuple[Optional[tuple[int, ...]], Optional[mmap.mmap]] = (None, None)
        # A running resource's seals, parsed so far, with the seal file's inode.
        self.chain: tuple[Optional[int], Optional[SealChain]] = (None, None)


def map_range(path: str, uri: str, base: int, end: int,
               check: Callable[[os.stat_result], None]) -> mmap.mmap:
    """A read-only map of the payload at ``path`` from ``base`` (page-aligned) to
    ``end``, once ``check`` accepted the ``fstat`` of the file opened."""
    try:
        fd, opened = _files.open_regular(path)
    except OSError as error:
        raise unreadable(uri, "has no readable payload", error) from None
    try:
        check(opened)
        return mmap.mmap(fd, end - base, access=mmap.ACCESS_READ, offset=base)
    except OSError as error:
        raise unreadable(uri, "cannot be mapped", error) from None
    finally:
        os.close(fd)


def file_identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: the cache key."""
    return (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_dev)


def drop_mapped_pages(mapping: Optional[mmap.mmap], start: int, end: int) -> None:
    """Tell the kernel that ``[start, end)`` of ``mapping`` is not needed soon
    (the file's page cache is untouched); never raises."""
    if mapping is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    first = start - start % mmap.PAGESIZE
    try:
        mapping.madvise(mmap.MADV_DONTNEED, first, max(min(end, len(mapping)) - first, 0))
    except (OSError, ValueError):
        pass  # closed meanwhile, or refused: it was only a hint
