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
    return (<unsigned long long>info.st_ino, _nanoseconds(info.st_mtim), _nanoseconds(info.st_ctim),
            <long long>info.st_size, <unsigned long long>info.st_dev)
