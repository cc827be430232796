"""Compiled kernels of overspill: the same contract as overspill/_native.py.

The pure-Python twin is the specification: every function here returns what
its namesake there returns and raises the same exception types, checked by
the differential tests.  Argument checking uses the twin's own helpers
(overspill._buffers), so the two cannot drift apart in what they accept, and
follows the twin's one rule of order (overspill._native: one argument at a
time, in the order of the signature, type then own range; relations last):
so a bytes-like argument's buffer is taken at its place in the signature,
before the arguments after it are checked.
The loops live in overspill_simd.h; this module only checks arguments and
reaches the bytes.
"""

from cpython.buffer cimport (
    PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_FillInfo, PyBuffer_Release, PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcpy

from overspill_simd cimport (
    OSP_PLAIN_VIEW, osp_hit, osp_needs_view, osp_pattern, osp_scan_plain, osp_text_fits, osp_scan, osp_scan_free,
    osp_scan_init, osp_scan_region, osp_view, osp_quoted, osp_quoted_begin, osp_quoted_finish,
    osp_boundary_at_or_after, osp_boundary_at_or_before, osp_count_upto, osp_crc_init, osp_crc32, osp_find_nth,
    osp_page, osp_scan_token, osp_set_mask32,
    osp_prefix_fitting, osp_rfind_nth, osp_simd_cap, osp_suffix_fitting, osp_utf8_length,
)

from overspill._buffers import byte_view as _byte_view
from overspill._buffers import check_flags as _check_flags
from overspill._buffers import check_patterns as _check_patterns
from overspill._buffers import check_signal_state as _check_signal_state
from overspill._buffers import int_text as _int_text

cdef extern from "Python.h":
    # (data NULL: a new bytes object to fill, this frame's alone until it is returned)
    object PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)
    # CPython's own storage of a str: `kind` bytes per code point.
    int PyUnicode_KIND(object text)
    void *PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint PyUnicode_IS_ASCII(object text)
    const Py_ssize_t PY_SSIZE_T_MAX
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    object PyUnicode_FromKindAndData(int kind, const void *buffer, Py_ssize_t size)
    object PyUnicode_DecodeUTF8(const char *data, Py_ssize_t size, const char *errors)
    long PyLong_AsLongAndOverflow(object value, int *overflow) except? -1

# Below this many bytes, dropping and retaking the GIL costs more than it frees.
cdef enum:
    NOGIL_BYTES = 65536
    NEWLINE = 10

_KEEP_MODES = ("head", "head_tail")

# The CRC table is built once here, before any thread can race to build it.
osp_crc_init()


# int's own slot: an exact int of the value of any int, subclass or not.
cdef object _int_value = int.__index__


cdef Py_ssize_t _check_int(object value, str name, Py_ssize_t minimum) except -1:
    cdef int overflow = 0
    cdef long small
    if type(value) is int:
        # A plain int in range, as nearly every call passes: read in C, without
        # the two comparisons of Python ints below (a third of a small text_fits).
        small = PyLong_AsLongAndOverflow(value, &overflow)
        if overflow == 0 and minimum <= small < PY_SSIZE_T_MAX:
            return small
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    # The int's own value, as the twin's check_int reads it: a subclass's
    # __index__, __int__ or comparisons never run (an overridden __lt__ let a
    # negative value through to C).
    value = _int_value(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {_int_text(value)}")
    if value >= PY_SSIZE_T_MAX:
        return PY_SSIZE_T_MAX
    return value


cdef int _bytes_of(object data, Py_buffer *out) except -1:
    """``out`` filled with the bytes ``_byte_view(data)`` reaches, flat (the caller releases it).

    Raw buffers, never typed memoryviews: Cython's memoryview support makes
    importing this module import collections.abc (start-up), and taking a
    typed memoryview costs more than a small buffer's scan.  A plain
    C-contiguous buffer is taken directly; anything else goes through the
    twin's ``_byte_view``, which raises the twin's errors.  A refused request
    is BufferError, TypeError or (numpy, for an array that is not
    C-contiguous) ValueError; the twin's check asks again with the full
    flags, so an exporter whose ValueError means something else raises it
    there, as it does to the twin."""
    try:
        PyObject_GetBuffer(data, out, PyBUF_SIMPLE)
        return 0
    except (BufferError, TypeError, ValueError):
        pass
    view = _byte_view(data)
    PyObject_GetBuffer(view, out, PyBUF_SIMPLE)  # out holds the view; released with it
    return 0


cdef Py_ssize_t _newlines(const void *data, Py_ssize_t n, int width, Py_ssize_t limit) noexcept:
    """Newlines in data[0:n); with limit >= 0, min(newlines, limit)."""
    cdef Py_ssize_t found
    if n * width >= NOGIL_BYTES:
        with nogil:
            found = osp_count_upto(data, n, width, NEWLINE, limit)
    else:
        found = osp_count_upto(data, n, width, NEWLINE, limit)
    return found if limit < 0 or found < limit else limit


def _set_simd_cap(level, /):
    """For the tests: cap the instruction sets used (0 portable C ... 3 AVX-512); return the old cap."""
    global osp_simd_cap
    cdef int previous = osp_simd_cap
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise ValueError("level must be 0, 1, 2 or 3")
    osp_simd_cap = level
    return previous


def count_lines(data, stop=None, /):
    """Lines in ``data`` as ``len(data.split("\\n"))`` counts them; see _native.count_lines."""
    cdef Py_ssize_t limit = -1
    cdef Py_buffer buf
    if isinstance(data, str):
        if stop is not None:
            limit = _check_int(stop, "stop", 0)
        return _newlines(PyUnicode_DATA(data), PyUnicode_GET_LENGTH(data), PyUnicode_KIND(data), limit) + 1
    if isinstance(data, bytes):
        if stop is not None:
            limit = _check_int(stop, "stop", 0)
        return _newlines(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), 1, limit) + 1
    _bytes_of(data, &buf)
    try:
        if stop is not None:
            limit = _check_int(stop, "stop", 0)
        if buf.len == 0:
            return 1
        return _newlines(buf.buf, buf.len, 1, limit) + 1
    finally:
        PyBuffer_Release(&buf)


def utf8_length(text, /):
    """Bytes in the stored form of ``text``; see _native.utf8_length."""
    cdef Py_ssize_t n, total
    cdef int kind
    cdef void *data
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    n = PyUnicode_GET_LENGTH(text)
    if PyUnicode_IS_ASCII(text):
        return n
    kind = PyUnicode_KIND(text)
    data = PyUnicode_DATA(text)
    if n * kind >= NOGIL_BYTES:
        with nogil:
            total = osp_utf8_length(data, n, kind)
    else:
        total = osp_utf8_length(data, n, kind)
    return total


def page_bounds(buffer, offset, limit, final=True, /):
    """The page ``(start, end)`` a read at ``offset`` returns; see _native.page_bounds."""
    cdef Py_ssize_t c_offset, c_limit, start = 0, end = 0
    cdef Py_buffer buf
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &buf)
    try:
        c_offset = _check_int(offset, "offset", 0)
        c_limit = _check_int(limit, "limit", 1)
        if not isinstance(final, bool):
            raise TypeError(f"final must be a bool, not {type(final).__name__}")
        if buf.len > 0:
            osp_page(<const unsigned char *>buf.buf, buf.len, c_offset, c_limit, final is True, &start, &end)
        return start, end
    finally:
        PyBuffer_Release(&buf)


include "_speedups_preview.pxi"


def text_fits(text, max_lines, max_bytes, flags, /):
    """Whether ``text`` is shown as it is, within the limits; see _native.text_fits."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    cdef Py_ssize_t c_lines = _check_int(max_lines, "max_lines", 1)
    cdef Py_ssize_t c_bytes = _check_int(max_bytes, "max_bytes", 1)
    # The flags every store passes take no call into the twin's checker.
    cdef int c_flags = flags if type(flags) is int and 0 <= flags <= 3 else _check_flags(flags)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text)
    cdef int width = PyUnicode_KIND(text)
    # Whole lines: a final newline ends the last line, so one more newline still fits.
    if c_lines < PY_SSIZE_T_MAX and _ends_with_newline(data, length, width):
        c_lines += 1
    return osp_text_fits(data, length, width, c_lines, c_bytes, c_flags) != 0


cdef class _AsciiStorage:
    """Exports an ASCII str's own storage, which is its UTF-8 form, read-only."""

    # object, not str: a Cython str attribute refuses subclasses of str.
    cdef object _text

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        if flags & PyBUF_WRITABLE:
            raise BufferError("the storage of a str is read-only")
        PyBuffer_FillInfo(buffer, self, PyUnicode_DATA(self._text), PyUnicode_GET_LENGTH(self._text), 1, flags)

    def __releasebuffer__(self, Py_buffer *buffer):
        pass


def ascii_view(text, /):
    """A read-only view of the stored form of an ASCII ``text``, or None; see _native.ascii_view."""
    cdef _AsciiStorage storage
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if not PyUnicode_IS_ASCII(text):
        return None
    storage = _AsciiStorage.__new__(_AsciiStorage)
    storage._text = text
    return memoryview(storage)


def crc32(data, value=0, /):
    """zlib's CRC-32 of ``data``, continuing from ``value``; see _native.crc32."""
    cdef Py_ssize_t start
    cdef uint32_t crc
    cdef Py_buffer buf
    if isinstance(data, str):
        raise TypeError("data must be a bytes-like object, not str")
    _bytes_of(data, &buf)
    try:
        start = _check_int(value, "value", 0)
        if start > 0xFFFFFFFF:
            raise ValueError(f"value must be at most 4294967295, not {value}")
        crc = <uint32_t>start
        if buf.len >= NOGIL_BYTES:
            with nogil:
                crc = osp_crc32(crc, <const unsigned char *>buf.buf, buf.len)
        elif buf.len:
            crc = osp_crc32(crc, <const unsigned char *>buf.buf, buf.len)
        return crc
    finally:
        PyBuffer_Release(&buf)


cdef Py_ssize_t _first_bad_chunk(const unsigned char *buf, Py_ssize_t size, Py_ssize_t base, Py_ssize_t first,
                                 Py_ssize_t last, Py_ssize_t chunk, const unsigned char *sums) noexcept nogil:
    cdef Py_ssize_t index, low
    cdef const unsigned char *recorded
    for index in range(first, last + 1):
        low = index * chunk - base
        recorded = sums + 4 * index
        if osp_crc32(0, buf + low, min(chunk, size - low)) != (
                (<uint32_t>recorded[0] << 24) | (<uint32_t>recorded[1] << 16)
                | (<uint32_t>recorded[2] << 8) | <uint32_t>recorded[3]):
            return index
    return -1


cdef Py_ssize_t _first_bad_copied(const unsigned char *buf, Py_ssize_t size, Py_ssize_t base,
                                  const unsigned char *copy, Py_ssize_t start, Py_ssize_t end, Py_ssize_t chunk,
                                  const unsigned char *sums) noexcept nogil:
    """``_first_bad_chunk`` of the chunks under ``[start, end)``, each chunk's CRC over ``copy`` (the
    payload's ``[start, end)``, taken out of ``buf`` before) inside the range and ``buf`` outside it:
    CRC-32 runs in order, so the three parts continue one another (see _native.verified_copy)."""
    cdef Py_ssize_t index, low, high
    cdef uint32_t crc
    cdef const unsigned char *recorded
    for index in range(start // chunk, (end - 1) // chunk + 1):
        low = index * chunk
        high = min(low + chunk, base + size)
        crc = osp_crc32(0, buf + (low - base), start - low) if low < start else 0
        crc = osp_crc32(crc, copy + (max(low, start) - start), min(high, end) - max(low, start))
        if high > end:
            crc = osp_crc32(crc, buf + (end - base), high - end)
        recorded = sums + 4 * index
        if crc != ((<uint32_t>recorded[0] << 24) | (<uint32_t>recorded[1] << 16)
                   | (<uint32_t>recorded[2] << 8) | <uint32_t>recorded[3]):
            return index
    return -1


ctypedef struct _Chunks:
    # verify_chunks' and verified_copy's arguments, checked (_chunk_arguments).
    Py_buffer buf   # the payload from byte base on
    Py_buffer sums  # one big-endian CRC-32 per chunk
    Py_ssize_t base, start, end, chunk


cdef int _chunk_arguments(buffer, base, start, end, checksums, chunk, _Chunks *a) except -1:
    """``verify_chunks``' and ``verified_copy``'s arguments (the two take the same), each checked
    alone in order, then the relations between them, into ``*a`` (as the twin's ``_chunk_arguments``):
    all while the caller holds the GIL, which it may drop once this returns.  On success the caller
    releases ``a.sums`` and ``a.buf``; a refused call holds no buffer (the one taken is released
    before the error leaves)."""
    cdef Py_ssize_t last
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &a.buf)
    try:
        a.base = _check_int(base, "base", 0)
        a.start = _check_int(start, "start", 0)
        a.end = _check_int(end, "end", 0)
        if isinstance(checksums, str):
            raise TypeError("checksums must be a bytes-like object, not str")
        _bytes_of(checksums, &a.sums)
        try:
            a.chunk = _check_int(chunk, "chunk", 1)
            last = (a.end - 1) // a.chunk
            if (a.end <= a.start or a.start // a.chunk * a.chunk < a.base or a.end - a.base > a.buf.len
                    or last + 1 > a.sums.len // 4):  # (4 * (last + 1) > len, without the product)
                raise ValueError(f"the buffer (from {a.base}, {a.buf.len} bytes) and {a.sums.len // 4} checksums "
                                 f"do not hold the chunks of [{a.start}, {a.end})")
        except BaseException:
            PyBuffer_Release(&a.sums)
            raise
    except BaseException:
        PyBuffer_Release(&a.buf)
        raise
    return 0


def verified_copy(buffer, base, start, end, checksums, chunk, /):
    """Bytes ``[start, end)`` copied out of the buffer, then verified: the copy, or the first
    bad chunk; see _native.verified_copy."""
    cdef Py_ssize_t failed
    cdef _Chunks a
    cdef char *out
    _chunk_arguments(buffer, base, start, end, checksums, chunk, &a)
    try:
        copy = PyBytes_FromStringAndSize(NULL, a.end - a.start)
        out = PyBytes_AS_STRING(copy)
        # The copy first: what is checked is what is returned.  (Checked by _chunk_arguments: every
        # chunk starts inside a.buf and every index has its 4 bytes.)  The new bytes are this frame's.
        if a.end - a.start >= NOGIL_BYTES:
            with nogil:
                memcpy(out, <const char *>a.buf.buf + (a.start - a.base), <size_t>(a.end - a.start))
                failed = _first_bad_copied(<const unsigned char *>a.buf.buf, a.buf.len, a.base,
                                           <const unsigned char *>out, a.start, a.end, a.chunk,
                                           <const unsigned char *>a.sums.buf)
        else:
            memcpy(out, <const char *>a.buf.buf + (a.start - a.base), <size_t>(a.end - a.start))
            failed = _first_bad_copied(<const unsigned char *>a.buf.buf, a.buf.len, a.base,
                                       <const unsigned char *>out, a.start, a.end, a.chunk,
                                       <const unsigned char *>a.sums.buf)
        return copy if failed < 0 else failed
    finally:
        PyBuffer_Release(&a.sums)
        PyBuffer_Release(&a.buf)


def verify_chunks(buffer, base, start, end, checksums, chunk, /):
    """The first chunk under ``[start, end)`` whose CRC-32 is not recorded, or -1; see _native.verify_chunks."""
    cdef Py_ssize_t failed
    cdef _Chunks a
    _chunk_arguments(buffer, base, start, end, checksums, chunk, &a)
    try:
        # Checked by _chunk_arguments: every chunk starts inside a.buf and every index has its 4 bytes.
        if a.end - a.start >= NOGIL_BYTES:
            with nogil:
                failed = _first_bad_chunk(<const unsigned char *>a.buf.buf, a.buf.len, a.base, a.start // a.chunk,
                                          (a.end - 1) // a.chunk, a.chunk, <const unsigned char *>a.sums.buf)
        else:
            failed = _first_bad_chunk(<const unsigned char *>a.buf.buf, a.buf.len, a.base, a.start // a.chunk,
                                      (a.end - 1) // a.chunk, a.chunk, <const unsigned char *>a.sums.buf)
        return failed
    finally:
        PyBuffer_Release(&a.sums)
        PyBuffer_Release(&a.buf)


# The kernels of the other seams, one file each as the twin splits them
# (overspill/_native_*.py); included, so that they compile into this one module.
include "_speedups_stream.pxi"
include "_speedups_views.pxi"
include "_speedups_outline.pxi"
include "_speedups_json.pxi"
include "_speedups_files.pxi"
include "_speedups_record.pxi"
include "_speedups_values.pxi"
