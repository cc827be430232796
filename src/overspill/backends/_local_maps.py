"""What the local backend keeps per resource it read, and how it maps a payload."""

from __future__ import annotations

import mmap
import os

from .. import _files, _kernels
from ..records import unreadable

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; the annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional

    from ..records import Record
    from ._seals import SealChain

__all__ = ["PRIVATE_MAP_BYTES", "Descriptor", "Entry", "drop_mapped_pages", "file_identity", "hold", "map_range"]

# Ranges this large get a map of their own, dropped with the caller's view:
# streaming a payload range by range keeps memory flat, whatever its size.
PRIVATE_MAP_BYTES = 1 << 20


class Entry:
    """What this process knows of one resource: its paths (built once), its
    parsed record with the file identity it was read under, the record's
    checksums as integers, and an open map of the payload with its identity."""

    # ``parsed`` and ``mapped`` are (identity, value) pairs replaced whole, so a
    # reader without the lock never pairs one identity with another's value.
    # ``record_file`` and ``payload_file``, while the payload is mapped or
    # after a first read (whose payload is then mapped from the file it read):
    # (the identity, the file open under it), so that a later read checks both
    # files with ``fstat`` instead of a stat by path (``_kernels.file_unchanged``:
    # a file deleted or replaced, or whose bytes, mode or links changed, is
    # never served from the cache).  ``mapped`` is (identity, None) after a
    # first read: the payload was read once, not mapped.
    __slots__ = ("record_path", "payload_path", "seal_path", "parsed", "mapped", "chain", "record_file",
                 "payload_file")

    def __init__(self, directory: str, resource_id: str) -> None:
        self.record_path = f"{directory}/{resource_id}.json"
        self.payload_path = f"{directory}/{resource_id}.txt"
        self.seal_path = f"{directory}/{resource_id}.seal"
        self.parsed: tuple[Optional[tuple[int, ...]], Optional[Record]] = (None, None)
        self.mapped: tuple[Optional[tuple[int, ...]], Optional[mmap.mmap]] = (None, None)
        # A running resource's seals, parsed so far, with the seal file's inode.
        self.chain: tuple[Optional[int], Optional[SealChain]] = (None, None)
        self.record_file: Optional[tuple[tuple[int, ...], Descriptor]] = None
        self.payload_file: Optional[tuple[tuple[int, ...], Descriptor]] = None

    def drop_map(self) -> None:
        """Forget the map and the files held open (each closes once no reader uses it)."""
        self.mapped, self.record_file, self.payload_file = (None, None), None, None


class Descriptor:
    """An open descriptor, closed when the last reference to it goes: a reader
    uses one without the lock while another thread may drop the entry's."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except Exception:  # noqa: BLE001 - closed already, or the interpreter is shutting down
            pass


def hold(path: str, known: tuple[int, ...]) -> Optional[tuple[tuple[int, ...], Descriptor]]:
    """The file at ``path`` opened, with ``known``, if it is still the file of
    identity ``known``; None otherwise (reads then stat it by path)."""
    try:
        fd, _ = _files.open_regular(path)
    except OSError:
        return None
    held = Descriptor(fd)  # closes fd when dropped, on either answer
    return (known, held) if _kernels.file_unchanged(fd, known) else None


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
