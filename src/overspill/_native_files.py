"""Twin kernel that checks an open file against the identity it was known by;
the conventions are stated in ``overspill._native``."""

from __future__ import annotations

import os
import stat

from ._buffers import check_int as _check_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

__all__ = ["file_unchanged", "regular_identity"]


def file_unchanged(fd: int, identity: tuple[int, int, int, int, int], /) -> bool:
    """Whether the file open as ``fd`` still has a name (a link) and the
    identity ``identity``: ``(st_ino, st_mtime_ns, st_ctime_ns, st_size,
    st_dev)`` of its ``fstat``, as the local backend's ``file_identity`` makes it.

    A file unlinked, or replaced by a rename over its name, has no link left;
    a new link or a change of its bytes or mode changes its ctime.  A
    descriptor that is not open (closed, or out of range) answers False: the
    caller then looks the file up again by its path.  The compiled twin reads
    the ``fstat`` without making an ``os.stat_result`` (half a warm page
    read's system-call cost).

    :raises TypeError: ``fd`` is not an int (a bool is not), or ``identity``
        is not a tuple of five ints.
    :raises ValueError: ``fd`` is negative.
    """
    fd = _check_int(fd, "fd", 0)
    if type(identity) is not tuple or len(identity) != 5 or not all(type(item) is int for item in identity):
        raise TypeError("identity must be a tuple of five ints (file_identity's)")
    try:
        info = os.fstat(fd)
    except (OSError, OverflowError):
        return False
    return info.st_nlink > 0 and identity == (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size,
                                              info.st_dev)


def regular_identity(fd: int, /) -> Optional[tuple[int, int, int, int, int]]:
    """The identity of the file open as ``fd`` (``file_unchanged``'s: its
    ``fstat``'s ``(st_ino, st_mtime_ns, st_ctime_ns, st_size, st_dev)``), or
    None when it is not a regular file.  The compiled twin makes no
    ``os.stat_result`` (a cold read makes two identities).

    :raises OSError: ``fstat`` fails (a descriptor not open: ``EBADF``).
    :raises OverflowError: ``fd`` is larger than a descriptor can be.
    :raises TypeError: ``fd`` is not an int (a bool is not).
    :raises ValueError: ``fd`` is negative.
    """
    info = os.fstat(_check_int(fd, "fd", 0))
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_dev
