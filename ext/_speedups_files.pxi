# File identity checks; see overspill/_native_files.py, the twin and specification.
# Included by _speedups.pyx.

from libc.limits cimport INT_MAX
from posix.stat cimport fstat, struct_stat
from posix.time cimport timespec


cdef object _nanoseconds(timespec stamp):
    """A time as ``os.stat_result``'s ``st_*time_ns`` gives it (exact for every value)."""
    if -9000000000 < stamp.tv_sec < 9000000000:  # no overflow of a 64-bit product
        return <long long>stamp.tv_sec * 1000000000 + stamp.tv_nsec
    return <object>stamp.tv_sec * 1000000000 + stamp.tv_nsec


cdef bint _is_identity(object identity):
    """Whether ``identity`` is a tuple of five ints (a bool is not)."""
    if type(identity) is not tuple or len(<tuple>identity) != 5:
        return False
    for item in <tuple>identity:
        if type(item) is not int:
            return False
    return True


def file_unchanged(fd, identity, /):
    """Whether the file open as ``fd`` still has a name and the identity ``identity``; see _native.file_unchanged."""
    cdef struct_stat info
    cdef Py_ssize_t c_fd = _check_int(fd, "fd", 0)
    if not _is_identity(identity):
        raise TypeError("identity must be a tuple of five ints (file_identity's)")
    # Not a descriptor this process can have: as a closed one, the file is not known.
    if c_fd > INT_MAX or fstat(<int>c_fd, &info) != 0:
        return False
    # The fields compared one by one, in the order the cheapest ones differ first.
    return (info.st_nlink > 0 and identity[2] == _nanoseconds(info.st_ctim) and identity[3] == info.st_size
            and identity[1] == _nanoseconds(info.st_mtim) and identity[0] == <unsigned long long>info.st_ino
            and identity[4] == <unsigned long long>info.st_dev)


from cpython.exc cimport PyErr_SetFromErrno
from posix.stat cimport S_ISREG


cdef tuple _identity(struct_stat *info):
    """``file_identity``'s tuple of an ``fstat``."""
    return (<unsigned long long>info.st_ino, _nanoseconds(info.st_mtim), _nanoseconds(info.st_ctim),
            <long long>info.st_size, <unsigned long long>info.st_dev)


def regular_identity(fd, /):
    """The identity of the regular file open as ``fd``, else None; see _native.regular_identity."""
    cdef struct_stat info
    cdef Py_ssize_t c_fd = _check_int(fd, "fd", 0)
    if c_fd > INT_MAX:
        raise OverflowError("fd is greater than maximum")
    if fstat(<int>c_fd, &info) != 0:
        PyErr_SetFromErrno(OSError)
    if not S_ISREG(info.st_mode):
        return None
    return _identity(&info)


from cpython.exc cimport PyErr_CheckSignals, PyErr_SetFromErrnoWithFilenameObject
from libc cimport errno as c_errno  # module-qualified: a bare ``errno = ...`` would make a local
from libc.errno cimport EINTR, EPERM
from libc.string cimport strlen
from posix.fcntl cimport O_CLOEXEC, O_NONBLOCK, O_RDONLY
from posix.fcntl cimport open as c_open
from posix.unistd cimport close as c_close
from posix.unistd cimport pread as c_pread

cdef extern from *:
    """
    #include <fcntl.h>
    #ifndef O_NOATIME
    #define O_NOATIME 0  /* not Linux: access times are left to the system */
    #endif
    """
    enum: O_NOFOLLOW
    enum: O_NOATIME

cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(object text)
    object PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)


cdef const char *_fs_path(object path, object encoded) except NULL:
    """``encoded`` (``path`` as os.open encodes it) as a C string; ValueError for a NUL in it."""
    cdef const char *c_path = encoded
    if <Py_ssize_t>strlen(c_path) != len(encoded):
        raise ValueError("embedded null byte")
    return c_path


cdef int _open_regular(object path, const char *c_path, struct_stat *info, char *buffer, Py_ssize_t wanted,
                       Py_ssize_t offset, Py_ssize_t size, Py_ssize_t *got) except -1:
    """Open ``c_path`` as ``read_regular`` does and ``fstat`` it into ``info``; with a
    ``buffer``, when the file is regular and of ``size`` bytes, ``pread`` ``wanted``
    bytes at ``offset`` into it (``got``: the bytes read; -1 when none were read).
    One release of the GIL for all three calls.  Returns the descriptor.

    :raises OSError: the open, ``fstat`` or ``pread`` fails, or the file is not a
        regular one (errno 0); nothing is left open.
    """
    cdef int fd, failure, stat_failed = 0
    cdef int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOATIME
    got[0] = -1
    while True:
        with nogil:
            fd = c_open(c_path, flags)
            if fd >= 0:
                stat_failed = fstat(fd, info)
                if buffer != NULL and stat_failed == 0 and S_ISREG(info.st_mode) and info.st_size == size:
                    got[0] = c_pread(fd, buffer, wanted, offset)
            failure = c_errno.errno
        if fd >= 0:
            break
        if failure == EPERM and flags & O_NOATIME:
            flags &= ~O_NOATIME  # not this user's file: read it as any reader does
            continue
        if failure != EINTR:
            c_errno.errno = failure
            PyErr_SetFromErrnoWithFilenameObject(OSError, path)
        PyErr_CheckSignals()  # as os.open: a handler that raises ends the call
    try:
        if stat_failed != 0:
            c_errno.errno = failure
            PyErr_SetFromErrno(OSError)  # (closed below, as on every error)
        if not S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file", path)
        if buffer != NULL and got[0] < 0 and info.st_size == size:
            _pread_again(fd, buffer, wanted, offset, failure, got)
    except BaseException:
        c_close(fd)
        raise
    return fd


cdef inline Py_ssize_t _bounded_length(Py_ssize_t size, Py_ssize_t offset, Py_ssize_t length) noexcept:
    """How much of ``length`` bytes at ``offset`` a read takes of a file of ``size``
    bytes: no more than it holds plus one byte, so that a file that grew shows it."""
    if size < offset:
        return 0
    if size - offset < length:
        return size - offset + 1
    return length


cdef int _pread_again(int fd, char *buffer, Py_ssize_t wanted, Py_ssize_t offset, int failure,
                      Py_ssize_t *got) except -1:
    """After a ``pread`` that failed with ``failure``: OSError, or (EINTR) run the
    signal handlers and read again until it succeeds."""
    while True:
        if failure != EINTR:
            c_errno.errno = failure
            PyErr_SetFromErrno(OSError)
        PyErr_CheckSignals()
        with nogil:
            got[0] = c_pread(fd, buffer, wanted, offset)
            failure = c_errno.errno
        if got[0] >= 0:
            return 0


def read_regular(path, offset, length, most, /):
    """A regular file opened, its identity and up to ``length`` bytes at ``offset``; see _native.read_regular."""
    cdef Py_ssize_t c_offset, c_length, c_most, wanted, got
    cdef struct_stat info
    cdef int fd, failure
    cdef char *buffer
    cdef bytes data
    if type(path) is not str:
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    c_offset = _check_int(offset, "offset", 0)
    c_length = _check_int(length, "length", 0)
    c_most = _check_int(most, "most", 0)
    encoded = PyUnicode_EncodeFSDefault(path)  # as os.open encodes a path
    fd = _open_regular(path, _fs_path(path, encoded), &info, NULL, 0, 0, 0, &got)
    try:
        identity = _identity(&info)
        if info.st_size > c_most:
            return fd, identity, None
        wanted = _bounded_length(info.st_size, c_offset, c_length)
        data = PyBytes_FromStringAndSize(NULL, wanted)
        buffer = PyBytes_AS_STRING(data)
        with nogil:
            got = c_pread(fd, buffer, wanted, c_offset)
            failure = c_errno.errno
        if got < 0:
            _pread_again(fd, buffer, wanted, c_offset, failure, &got)
    except BaseException:
        c_close(fd)
        raise
    return fd, identity, data if got == wanted else data[:got]


def read_page(path, base, length, size, low, high, offset, limit, flags, reach, checksums, chunk, /):
    """A first read's page: ``read_regular`` of a window, then ``page_text`` of it; see _native.read_page."""
    cdef Py_ssize_t c_base, c_length, c_size, c_low, c_high, c_offset, c_limit, c_reach, c_chunk, wanted
    cdef Py_ssize_t got, covered, gap
    cdef int c_flags, fd
    cdef struct_stat info
    cdef char *buffer
    cdef Py_buffer sums
    if type(path) is not str:
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    c_base = _check_int(base, "base", 0)
    c_length = _check_int(length, "length", 0)
    c_size = _check_int(size, "size", 0)
    c_low = _check_int(low, "low", 0)
    c_high = _check_int(high, "high", 0)
    c_offset = _check_int(offset, "offset", 0)
    c_limit = _check_int(limit, "limit", 1)
    c_flags = _flags_of(flags)
    c_reach = _check_int(reach, "reach", 0)
    if checksums is not None:
        if isinstance(checksums, str):
            raise TypeError("checksums must be a bytes-like object, not str")
        _bytes_of(checksums, &sums)  # released by the outer finally below, on every path
    buffer = NULL
    try:
        c_chunk = _check_int(chunk, "chunk", 1)
        # Every number is in [0, PY_SSIZE_T_MAX] (clamped as the twin clamps them), and the twin
        # compares them exactly: so no check below adds or multiplies what could pass the maximum.
        if not c_base <= c_low <= c_offset <= c_high or c_high - c_base > c_length or c_low == c_high:
            raise ValueError(f"base, low, offset and high must satisfy base <= low <= offset <= high <= base + "
                             f"length and low < high, not {base}, {low}, {offset}, {high} (length {length})")
        if checksums is not None:
            if c_base % c_chunk:
                raise ValueError(f"base must be a multiple of chunk ({chunk}) when checksums are given, not {base}")
            if (c_high - 1) // c_chunk + 1 > sums.len // 4:  # (4 * chunks > len, without the product)
                raise ValueError(f"{sums.len // 4} checksums do not cover the chunks of [{low}, {high})")
            # The window must reach min(high rounded up to a chunk, size): the rounding is taken
            # only where it stays below size.
            covered = c_size
            if c_high < c_size:
                gap = (c_chunk - c_high % c_chunk) % c_chunk
                if gap <= c_size - c_high:
                    covered = c_high + gap
            if covered > c_base and c_length < covered - c_base:
                raise ValueError(f"a window of {length} bytes at {base} does not hold the whole chunks of "
                                 f"[{low}, {high})")
        encoded = PyUnicode_EncodeFSDefault(path)  # as os.open encodes a path (sums released if it fails)
        # As read_regular reads a file of that size.  A size claimed too large to hold is
        # only a failure if the file has it: else, as the twin, a mismatch (None).
        wanted = _bounded_length(c_size, c_base, c_length)
        buffer = <char *>malloc(<size_t>wanted + 1)
        try:
            fd = _open_regular(path, _fs_path(path, encoded), &info, buffer, wanted, c_base, c_size, &got)
            try:
                if buffer == NULL and info.st_size == c_size:
                    raise MemoryError()
                found = _window_page(<const uint8_t *>buffer, c_length, c_base, c_low, c_high, c_offset, c_limit,
                                     c_flags, c_reach, <const uint8_t *>sums.buf if checksums is not None else NULL,
                                     c_chunk) if info.st_size == c_size and got == c_length else None
                return fd, _identity(&info), found
            except BaseException:
                c_close(fd)
                raise
        finally:
            free(buffer)
    finally:
        if checksums is not None:
            PyBuffer_Release(&sums)

