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


def read_regular(path, offset, length, most, /):
    """A regular file opened, its identity and up to ``length`` bytes at ``offset``; see _native.read_regular."""
    cdef Py_ssize_t c_offset, c_length, c_most, wanted, got
    cdef struct_stat info
    cdef int fd, failure
    cdef const char *c_path
    cdef char *buffer
    cdef bytes data
    if type(path) is not str:
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    c_offset = _check_int(offset, "offset", 0)
    c_length = _check_int(length, "length", 0)
    c_most = _check_int(most, "most", 0)
    encoded = PyUnicode_EncodeFSDefault(path)  # as os.open encodes a path
    c_path = encoded
    if <Py_ssize_t>strlen(c_path) != len(encoded):
        raise ValueError("embedded null byte")
    cdef int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOATIME
    cdef int stat_failed = 0
    while True:
        with nogil:  # open and fstat in one release of the GIL
            fd = c_open(c_path, flags)
            if fd >= 0:
                stat_failed = fstat(fd, &info)
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
        identity = _identity(&info)
        if info.st_size > c_most:
            return fd, identity, None
        # No more than the file holds, by its fstat, plus one byte: a file that grew shows it.
        wanted = c_length
        if info.st_size < c_offset:
            wanted = 0
        elif info.st_size - c_offset < c_length:
            wanted = info.st_size - c_offset + 1
        data = PyBytes_FromStringAndSize(NULL, wanted)
        buffer = PyBytes_AS_STRING(data)
        while True:
            with nogil:
                got = c_pread(fd, buffer, wanted, c_offset)
                failure = c_errno.errno
            if got >= 0:
                break
            if failure != EINTR:
                c_errno.errno = failure
                PyErr_SetFromErrno(OSError)
            PyErr_CheckSignals()
    except BaseException:
        c_close(fd)
        raise
    return fd, identity, data if got == wanted else data[:got]
