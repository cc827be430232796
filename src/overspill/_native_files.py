"""Twin kernel that checks an open file against the identity it was known by;
the conventions are stated in ``overspill._native``."""

from __future__ import annotations

import errno
import os
import stat

from ._buffers import check_int as _check_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

__all__ = ["file_unchanged", "read_regular", "regular_identity"]

# Never through a symlink; a FIFO planted under a file's name never blocks the open.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NONBLOCK", 0))
# Linux: no access time written (a first read of a file written just before
# would otherwise dirty its inode: ~1 us of a cold read, per file).
_NOATIME = getattr(os, "O_NOATIME", 0)


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


def read_regular(path: str, offset: int, length: int, most: int,
                 /) -> tuple[int, tuple[int, int, int, int, int], Optional[bytes]]:
    """Open the regular file at ``path`` (never through a symlink, never
    blocking on a FIFO, and where the caller owns it without writing its
    access time: ``O_NOATIME``), take its identity (``regular_identity``'s) and read
    up to ``length`` bytes at ``offset`` with one ``pread``, but no more than
    its ``fstat`` size leaves there plus one byte (so that a file that grew
    shows it): ``(fd, identity, data)``.  ``data`` is None, and nothing is
    read, when the file holds more than ``most`` bytes.  The descriptor stays
    open for the caller, who closes it or keeps it for ``file_unchanged``.  A
    cold read reads a record and a payload window so; the compiled twin makes
    the three system calls without the interpreter between them.

    :raises OSError: the open, ``fstat`` or ``pread`` fails (``ELOOP`` for a
        symlink), or the file is not a regular one (errno 0); nothing is left open.
    :raises TypeError: ``path`` is not a str, or ``offset``, ``length`` or
        ``most`` is not an int (a bool is not).
    :raises ValueError: ``offset``, ``length`` or ``most`` is negative, or
        ``path`` holds a NUL.
    :raises UnicodeEncodeError: ``path`` cannot be encoded (as ``os.open``).
    """
    if type(path) is not str:
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    offset = _check_int(offset, "offset", 0)
    length = _check_int(length, "length", 0)
    most = _check_int(most, "most", 0)
    try:
        fd = os.open(path, _OPEN_FLAGS | _NOATIME)
    except PermissionError as error:
        if not _NOATIME or error.errno != errno.EPERM:
            raise
        fd = os.open(path, _OPEN_FLAGS)  # not this user's file: read it as any reader does
    try:
        identity = regular_identity(fd)
        if identity is None:
            raise OSError(0, "not a regular file", path)
        if identity[3] > most:
            return fd, identity, None
        data = os.pread(fd, min(length, max(identity[3] + 1 - offset, 0)), offset)
    except BaseException:
        os.close(fd)
        raise
    return fd, identity, data
