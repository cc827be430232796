"""Twin kernels that open and read a stored file (a first read's system calls) and
check an open file against the identity it was known by; the conventions are
stated in ``overspill._native``."""

from __future__ import annotations

import errno
import os
import stat

from ._buffers import check_int as _check_int
from ._native_text import page_arguments, page_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

    from ._buffers import BytesLike

__all__ = ["file_unchanged", "read_page", "read_regular", "regular_identity"]

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


def read_page(path: str, base: int, length: int, size: int, low: int, high: int, offset: int, limit: int,
              flags: int, reach: int, checksums: Optional[BytesLike], chunk: int,
              /) -> tuple[int, tuple[int, int, int, int, int], Optional[int | tuple[int, int, Optional[str]]]]:
    """A first read's page in one call: the ``length`` bytes at ``base`` of the
    regular file at ``path``, read as ``read_regular(path, base, length, size)``
    reads them, then ``page_text`` of that window for ``[low, high)`` and
    ``offset``, with every position (and a mismatched chunk's index) counted
    from the file's start: ``(fd, identity, found)``.

    ``found`` is None, and nothing is verified, when the file does not hold
    exactly ``size`` bytes or fewer than ``length`` were read; otherwise
    ``page_text``'s answer.  ``checksums`` are the file's, from its first
    chunk, so ``base`` must be a chunk boundary.  The descriptor stays open
    for the caller (``read_regular``'s).  The compiled twin makes the open,
    ``fstat`` and ``pread`` in one release of the GIL, into a buffer of its
    own: no bytes object of the window, and no interpreter between the steps.

    :raises OSError: as ``read_regular`` (nothing is left open).
    :raises TypeError: ``path`` is not a str, a number not an int (a bool is
        not), or ``checksums`` neither None nor a contiguous buffer.
    :raises ValueError: not ``base <= low <= offset <= high <= base + length``
        with ``low < high``; ``limit`` or ``chunk`` below 1, another number
        negative, ``flags`` outside 0 to 3; with ``checksums``, ``base`` not a
        multiple of ``chunk``, too few checksums for the chunks of
        ``[low, high)``, or a window that ends inside one of those chunks
        before ``size`` (a part of a chunk cannot be verified).  All are
        checked before the file is opened.
    """
    if type(path) is not str:
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    base = _check_int(base, "base", 0)
    length = _check_int(length, "length", 0)
    size = _check_int(size, "size", 0)
    low, high, offset, limit, flags, reach, view, chunk = page_arguments(low, high, offset, limit, flags, reach,
                                                                         checksums, chunk)
    try:
        if not base <= low <= offset <= high <= base + length or low == high:
            raise ValueError(f"base, low, offset and high must satisfy base <= low <= offset <= high <= base + "
                             f"length and low < high, not {base}, {low}, {offset}, {high} (length {length})")
        if view is not None:
            if base % chunk:
                raise ValueError(f"base must be a multiple of chunk ({chunk}) when checksums are given, not {base}")
            count = len(view)
            if 4 * ((high - 1) // chunk + 1) > count:
                raise ValueError(f"{count // 4} checksums do not cover the chunks of [{low}, {high})")
            if base + length < min(-(-high // chunk) * chunk, size):
                raise ValueError(f"a window of {length} bytes at {base} does not hold the whole chunks of "
                                 f"[{low}, {high})")
        fd, identity, data = read_regular(path, base, length, size)
        if identity[3] != size or data is None or len(data) != length:
            return fd, identity, None
        sums = None if view is None else view[4 * (base // chunk) :]
        try:
            found = page_text(data, low - base, high - base, offset - base, limit, flags, reach, sums, chunk)
        except BaseException:
            os.close(fd)
            raise
        finally:
            if sums is not None:
                sums.release()
    finally:
        if view is not None:
            view.release()
    if isinstance(found, int):
        return fd, identity, found + base // chunk
    start, end, text = found
    return fd, identity, (start + base, end + base, text)
