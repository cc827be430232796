"""Compiled kernels of overspill: the same contract as overspill/_native.py.

The pure-Python twin is the specification: every function here returns what
its namesake there returns and raises the same exception types, checked by
the differential tests.  Argument checking uses the twin's own helpers
(overspill._buffers), so the two cannot drift apart in what they accept.
The loops live in overspill_simd.h; this module only checks arguments and
reaches the bytes.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from overspill_simd cimport (
    osp_hit, osp_needs_view, osp_pattern, osp_text_fits, osp_scan, osp_scan_free, osp_scan_init, osp_scan_region, osp_view,
    osp_boundary_at_or_after, osp_boundary_at_or_before, osp_count_upto, osp_crc_init, osp_crc32, osp_find_nth,
    osp_page, osp_scan_token, osp_set_mask32,
    osp_prefix_fitting, osp_rfind_nth, osp_simd_cap, osp_suffix_fitting, osp_utf8_length,
)

from overspill._buffers import byte_view as _byte_view
from overspill._buffers import check_flags as _check_flags
from overspill._buffers import check_patterns as _check_patterns

cdef extern from "Python.h":
    # CPython's own storage of a str: `kind` bytes per code point.
    int PyUnicode_KIND(object text)
    void *PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint PyUnicode_IS_ASCII(object text)
    const Py_ssize_t PY_SSIZE_T_MAX

# Below this many bytes, dropping and retaking the GIL costs more than it frees.
cdef enum:
    NOGIL_BYTES = 65536
    NEWLINE = 10

_KEEP_MODES = ("head", "head_tail")

# The CRC table is built once here, before any thread can race to build it.
osp_crc_init()


cdef Py_ssize_t _check_int(object value, str name, Py_ssize_t minimum) except -1:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    if value >= PY_SSIZE_T_MAX:
        return PY_SSIZE_T_MAX
    return value


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
    cdef const unsigned char[::1] buf
    if stop is not None:
        limit = _check_int(stop, "stop", 0)
    if isinstance(data, str):
        return _newlines(PyUnicode_DATA(data), PyUnicode_GET_LENGTH(data), PyUnicode_KIND(data), limit) + 1
    if isinstance(data, bytes):
        return _newlines(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), 1, limit) + 1
    view = _byte_view(data)
    try:
        buf = view
        if buf.shape[0] == 0:
            return 1
        return _newlines(&buf[0], buf.shape[0], 1, limit) + 1
    finally:
        buf = None
        view.release()


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
    cdef const unsigned char[::1] buf
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    c_offset = _check_int(offset, "offset", 0)
    c_limit = _check_int(limit, "limit", 1)
    if not isinstance(final, bool):
        raise TypeError(f"final must be a bool, not {type(final).__name__}")
    view = _byte_view(buffer)
    try:
        buf = view
        if buf.shape[0] > 0:
            osp_page(&buf[0], buf.shape[0], c_offset, c_limit, final is True, &start, &end)
        return start, end
    finally:
        buf = None
        view.release()


cdef (Py_ssize_t, Py_ssize_t) _shares(Py_ssize_t head_size, Py_ssize_t tail_size, Py_ssize_t max_bytes) noexcept:
    """Byte budgets of head and tail; what one side cannot use goes to the other."""
    cdef Py_ssize_t head_share = max_bytes - max_bytes // 2, tail_share = max_bytes // 2
    if head_size < head_share:
        return head_size, tail_share + head_share - head_size
    if tail_size < tail_share:
        return head_share + tail_share - tail_size, tail_size
    return head_share, tail_share


cdef bint _ends_with_newline(const void *data, Py_ssize_t n, int width) noexcept:
    if n <= 0:
        return False
    if width == 1:
        return (<const uint8_t *>data)[n - 1] == NEWLINE
    if width == 2:
        return (<const uint16_t *>data)[n - 1] == NEWLINE
    return (<const uint32_t *>data)[n - 1] == NEWLINE


cdef bint _line_regions(const void *data, Py_ssize_t n, int width, Py_ssize_t max_lines,
                        Py_ssize_t *head_region, Py_ssize_t *tail_region) noexcept:
    """Set the head region's end and the tail region's start when there are
    more than max_lines whole lines (a final newline starts no other line);
    return whether there are.  As _native_preview._line_regions: the head region
    ends where its last line's newline does, just after it."""
    cdef Py_ssize_t tail_lines = max_lines // 2
    cdef bint final = _ends_with_newline(data, n, width)
    cdef Py_ssize_t limit = max_lines + 1 if max_lines < PY_SSIZE_T_MAX else max_lines
    cdef Py_ssize_t newlines = _newlines(data, n, width, limit)
    if newlines < max_lines or (newlines == max_lines and final):
        return False
    head_region[0] = osp_find_nth(data, n, width, NEWLINE, max_lines - tail_lines) + 1
    tail_region[0] = osp_rfind_nth(data, n - 1 if final else n, width, NEWLINE, tail_lines) + 1 if tail_lines else n
    return True


cdef Py_ssize_t _last_newline(const void *data, int width, Py_ssize_t low, Py_ssize_t high) noexcept nogil:
    """Index of the last newline in [low, high), or -1."""
    cdef Py_ssize_t found
    if low >= high:
        return -1
    found = osp_rfind_nth(<const char *>data + low * width, high - low, width, NEWLINE, 1)
    return -1 if found < 0 else low + found


cdef Py_ssize_t _first_newline(const void *data, int width, Py_ssize_t low, Py_ssize_t high) noexcept nogil:
    """Index of the first newline in [low, high), or -1."""
    cdef Py_ssize_t found
    if low >= high:
        return -1
    found = osp_find_nth(<const char *>data + low * width, high - low, width, NEWLINE, 1)
    return -1 if found < 0 else low + found


cdef inline Py_ssize_t _unit(const void *data, int width, Py_ssize_t index) noexcept nogil:
    if width == 1:
        return (<const uint8_t *>data)[index]
    if width == 2:
        return (<const unsigned short *>data)[index]
    return (<const uint32_t *>data)[index]


cdef inline bint _is_token_end(Py_ssize_t unit) noexcept nogil:
    # See _native_preview._TOKEN_ENDS.
    return unit == 44 or unit == 59 or unit == 125 or unit == 32


cdef Py_ssize_t _last_mark(const void *data, int width, Py_ssize_t low, Py_ssize_t high) noexcept nogil:
    """Index of the last token end in [low, high), or -1."""
    cdef Py_ssize_t i = high - 1
    while i >= low:
        if _is_token_end(_unit(data, width, i)):
            return i
        i -= 1
    return -1


cdef Py_ssize_t _first_mark(const void *data, int width, Py_ssize_t low, Py_ssize_t high) noexcept nogil:
    """Index of the first token end in [low, high), or -1."""
    cdef Py_ssize_t i = low
    while i < high:
        if _is_token_end(_unit(data, width, i)):
            return i
        i += 1
    return -1


cdef Py_ssize_t _head_cut(const uint8_t *data, Py_ssize_t size, Py_ssize_t share, Py_ssize_t slack) noexcept:
    """The head's end: see _native_preview._head_cut."""
    cdef Py_ssize_t cut = osp_boundary_at_or_before(data, size, share, 0, 1), newline, low
    if slack:
        low = max(share - slack, 1) - 1
        newline = _last_newline(data, 1, low, cut)
        if newline >= 0:
            return newline + 1
        newline = _last_mark(data, 1, low, cut)
        if newline >= 0:
            return newline + 1
    return cut


cdef Py_ssize_t _tail_cut(const uint8_t *data, Py_ssize_t size, Py_ssize_t share, Py_ssize_t slack) noexcept:
    """The tail's start: see _native_preview._tail_cut."""
    cdef Py_ssize_t low = size - share, newline
    cdef Py_ssize_t cut = osp_boundary_at_or_after(data, size, low, 1)
    if slack:
        newline = _first_newline(data, 1, max(cut - 1, 0), min(low + slack, size - 1))
        if newline >= 0:
            return newline + 1
        newline = _first_mark(data, 1, max(cut - 1, 0), min(low + slack, size - 1))
        if newline >= 0:
            return newline + 1
    return cut


cdef tuple _preview_bytes(const uint8_t *data, Py_ssize_t size, Py_ssize_t max_lines, Py_ssize_t max_bytes,
                          Py_ssize_t slack):
    cdef Py_ssize_t head_region = size, tail_region = 0, head_share, tail_share, head_end, tail_start
    if not _line_regions(data, size, 1, max_lines, &head_region, &tail_region):
        if size <= max_bytes:
            return size, size, size, size
    if head_region + size - tail_region <= max_bytes:
        return head_region, tail_region, head_region, tail_region
    head_share, tail_share = _shares(head_region, size - tail_region, max_bytes)
    head_end = _head_cut(data, size, head_share, slack if head_share < head_region else 0)
    tail_start = _tail_cut(data, size, tail_share, slack if size - tail_share > tail_region else 0)
    return head_end, tail_start, head_end, tail_start


cdef Py_ssize_t _capped_length(const void *data, int width, Py_ssize_t start, Py_ssize_t end,
                               Py_ssize_t cap) noexcept:
    """min(stored bytes of [start, end), cap), reading at most cap code points."""
    cdef Py_ssize_t n = min(end - start, cap)
    return min(osp_utf8_length(<const char *>data + start * width, n, width), cap)


cdef tuple _preview_text(object text, Py_ssize_t max_lines, Py_ssize_t max_bytes, Py_ssize_t slack):
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t size = utf8_length(text)
    cdef int width = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t head_region = length, tail_region = 0, cap = max_bytes + 1
    cdef Py_ssize_t head_size, tail_size, head_share, tail_share, head_index, tail_index
    cdef Py_ssize_t head_end, tail_start, newline, end, start, low, high
    cdef int attempt
    if not _line_regions(data, length, width, max_lines, &head_region, &tail_region):
        if size <= max_bytes:
            return size, size, length, length
    # Comparisons below are against at most max_bytes: lengths capped just
    # above it decide them exactly, at a cost bounded by the preview.
    head_size = _capped_length(data, width, 0, head_region, cap)
    tail_size = _capped_length(data, width, max(tail_region, length - cap), length, cap)
    if head_size + tail_size <= max_bytes:
        return head_size, size - tail_size, head_region, tail_region
    head_share, tail_share = _shares(head_size, tail_size, max_bytes)
    head_index = osp_prefix_fitting(data, width, 0, head_region, head_share)
    tail_index = osp_suffix_fitting(data, width, tail_region, length, tail_share)
    head_end = osp_utf8_length(data, head_index, width)
    tail_start = size - osp_utf8_length(<const char *>data + tail_index * width, length - tail_index, width)
    if slack and head_index < head_region:
        # See _native_preview._preview_text: a newline within `slack` bytes of the
        # share, else a token end there.
        low = max(head_index - slack - 1, 0)
        for attempt in range(2):
            newline = (_last_newline if attempt == 0 else _last_mark)(data, width, low, head_index)
            if newline >= 0:
                end = head_end - osp_utf8_length(<const char *>data + (newline + 1) * width,
                                                 head_index - newline - 1, width)
                if head_share - end <= slack:
                    head_index, head_end = newline + 1, end
                    break
    if slack and tail_index > tail_region:
        low = max(tail_index - 1, 0)
        high = min(tail_index + slack, length - 1)
        for attempt in range(2):
            newline = (_first_newline if attempt == 0 else _first_mark)(data, width, low, high)
            if newline >= 0:
                start = tail_start + osp_utf8_length(<const char *>data + tail_index * width,
                                                     newline + 1 - tail_index, width)
                if start - (size - tail_share) <= slack:
                    tail_index, tail_start = newline + 1, start
                    break
    return head_end, tail_start, head_index, tail_index


def preview_cuts(content, max_lines, max_bytes, line_slack=0, /):
    """Where the head+tail preview cuts ``content``; see _native.preview_cuts."""
    cdef Py_ssize_t c_lines = _check_int(max_lines, "max_lines", 1)
    cdef Py_ssize_t c_bytes = _check_int(max_bytes, "max_bytes", 1)
    cdef Py_ssize_t c_slack = _check_int(line_slack, "line_slack", 0)
    cdef const unsigned char[::1] buf
    if isinstance(content, str):
        return _preview_text(content, c_lines, c_bytes, c_slack)
    if isinstance(content, bytes):
        return _preview_bytes(<const uint8_t *>PyBytes_AS_STRING(content), PyBytes_GET_SIZE(content),
                              c_lines, c_bytes, c_slack)
    view = _byte_view(content)
    try:
        buf = view
        if buf.shape[0] == 0:
            return 0, 0, 0, 0
        return _preview_bytes(&buf[0], buf.shape[0], c_lines, c_bytes, c_slack)
    finally:
        buf = None
        view.release()


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
    cdef Py_ssize_t start = _check_int(value, "value", 0)
    cdef uint32_t crc
    cdef const unsigned char[::1] buf
    if isinstance(data, str):
        raise TypeError("data must be a bytes-like object, not str")
    if start > 0xFFFFFFFF:
        raise ValueError(f"value must be at most 4294967295, not {value}")
    crc = <uint32_t>start
    view = _byte_view(data)
    try:
        buf = view
        if buf.shape[0] >= NOGIL_BYTES:
            with nogil:
                crc = osp_crc32(crc, &buf[0], buf.shape[0])
        elif buf.shape[0]:
            crc = osp_crc32(crc, &buf[0], buf.shape[0])
        return crc
    finally:
        buf = None
        view.release()


cdef class StreamCap:
    """A streaming byte cap: retains at most ``max_bytes`` and counts everything.

    See _native.StreamCap for the contract.  Both buffers grow with what is
    fed, up to their share of ``max_bytes``; the tail is a ring once full.
    """

    cdef Py_ssize_t _max_bytes, _head_cap, _ring_cap
    cdef Py_ssize_t _head_len, _head_alloc, _ring_len, _ring_alloc, _ring_pos
    cdef Py_ssize_t _total_bytes, _newline_count
    cdef unsigned char *_head
    cdef unsigned char *_ring
    cdef str _keep

    def __cinit__(self, *args, **kwargs):
        self._head = NULL
        self._ring = NULL

    def __init__(self, max_bytes, *, keep="head"):
        self._max_bytes = _check_int(max_bytes, "max_bytes", 1)
        if not isinstance(keep, str):
            raise TypeError(f"keep must be a str, not {type(keep).__name__}")
        if keep not in _KEEP_MODES:
            raise ValueError(f"keep must be 'head' or 'head_tail', not {keep!r}")
        # The mode's own constant: a Cython str attribute refuses subclasses of str.
        self._keep = "head" if keep == "head" else "head_tail"
        self._head_cap = self._max_bytes if keep == "head" else self._max_bytes - self._max_bytes // 2
        self._ring_cap = self._max_bytes - self._head_cap

    def __dealloc__(self):
        free(self._head)
        free(self._ring)

    cdef int _reserve(self, unsigned char **buffer, Py_ssize_t *allocated, Py_ssize_t needed,
                      Py_ssize_t cap) except -1:
        """Grow a buffer geometrically to hold `needed` bytes, never past `cap`."""
        cdef Py_ssize_t size = allocated[0]
        cdef unsigned char *grown
        if needed <= size:
            return 0
        size = max(needed, min(max(size * 2, 4096), cap))
        grown = <unsigned char *>realloc(buffer[0], size)
        if grown == NULL:
            raise MemoryError()
        buffer[0] = grown
        allocated[0] = size
        return 0

    cdef int _feed(self, const unsigned char *data, Py_ssize_t size) except -1:
        cdef Py_ssize_t room = self._head_cap - self._head_len, take, first
        self._total_bytes += size
        self._newline_count += _newlines(data, size, 1, -1)
        if room > 0:
            take = min(room, size)
            self._reserve(&self._head, &self._head_alloc, self._head_len + take, self._head_cap)
            memcpy(self._head + self._head_len, data, take)
            self._head_len += take
            data += take
            size -= take
        if size == 0 or self._ring_cap == 0:
            return 0
        if size > self._ring_cap:
            data += size - self._ring_cap
            size = self._ring_cap
        if self._ring_len < self._ring_cap:
            # Still filling: append until full; only then does it wrap.
            take = min(size, self._ring_cap - self._ring_len)
            self._reserve(&self._ring, &self._ring_alloc, self._ring_len + take, self._ring_cap)
            memcpy(self._ring + self._ring_len, data, take)
            self._ring_len += take
            self._ring_pos = self._ring_len % self._ring_cap
            data += take
            size -= take
        if size:
            first = min(size, self._ring_cap - self._ring_pos)
            memcpy(self._ring + self._ring_pos, data, first)
            memcpy(self._ring, data + first, size - first)
            self._ring_pos = (self._ring_pos + size) % self._ring_cap
        return 0

    def feed(self, chunk, /):
        """Count ``chunk`` and retain what the cap allows.

        :raises TypeError: ``chunk`` is not a contiguous bytes-like object.
        """
        cdef const unsigned char[::1] buf
        if isinstance(chunk, str):
            raise TypeError("chunk must be a bytes-like object, not str")
        if isinstance(chunk, bytes):
            self._feed(<const unsigned char *>PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk))
            return
        view = _byte_view(chunk)
        try:
            buf = view
            if buf.shape[0]:
                self._feed(&buf[0], buf.shape[0])
        finally:
            buf = None
            view.release()

    @property
    def max_bytes(self):
        return self._max_bytes

    @property
    def keep(self):
        return self._keep

    @property
    def head(self):
        """The retained start of the stream."""
        return self._head[:self._head_len] if self._head_len else b""

    @property
    def tail(self):
        """The retained end of the stream (always empty for ``keep="head"``)."""
        if self._ring_len == 0:
            return b""
        if self._ring_len < self._ring_cap:
            return self._ring[:self._ring_len]
        return self._ring[self._ring_pos:self._ring_cap] + self._ring[:self._ring_pos]

    @property
    def total_bytes(self):
        return self._total_bytes

    @property
    def total_lines(self):
        """Lines in everything fed, counted as ``count_lines`` would."""
        return self._newline_count + 1

    @property
    def truncated(self):
        return self._total_bytes > self._head_len + self._ring_len

    def value(self):
        """The retained bytes: the head, then the tail."""
        return self.head + self.tail

    def __repr__(self):
        return (f"StreamCap(max_bytes={self._max_bytes}, keep={self._keep!r}, "
                f"total_bytes={self._total_bytes}, truncated={self.truncated})")


# ---------------------------------------------------------------- views
VIEW_ANSI = 1
VIEW_CR = 2


def view_bytes(buffer, flags, /):
    """What a reader is shown of ``buffer``, or None when it is the buffer itself; see _native.view_bytes."""
    cdef int c_flags
    cdef Py_ssize_t n, length
    cdef const unsigned char[::1] buf
    cdef uint8_t *out
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    c_flags = _check_flags(flags)
    view = _byte_view(buffer)
    try:
        buf = view
        n = buf.shape[0]
        if n == 0 or not osp_needs_view(&buf[0], n, c_flags):
            return None
        out = <uint8_t *>malloc(n)
        if out == NULL:
            raise MemoryError()
        try:
            if n >= NOGIL_BYTES:
                with nogil:
                    length = osp_view(&buf[0], n, c_flags, out)
            else:
                length = osp_view(&buf[0], n, c_flags, out)
            return out[:length]
        finally:
            free(out)
    finally:
        buf = None
        view.release()


def signal_lines(buffer, start, end, patterns, flags, limit, /):
    """Lines of ``buffer[start:end]`` whose view matches a signal pattern; see _native.signal_lines."""
    cdef Py_ssize_t c_start, c_end, c_limit, n, k
    cdef int c_flags, count, failed = 0
    cdef const unsigned char[::1] buf
    cdef osp_pattern *table = NULL
    cdef osp_scan scan
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    c_start = _check_int(start, "start", 0)
    c_end = _check_int(end, "end", 0)
    checked = _check_patterns(patterns)
    c_flags = _check_flags(flags)
    c_limit = _check_int(limit, "limit", 0)
    kinds = max([entry[0] for entry in checked], default=-1) + 1
    view = _byte_view(buffer)
    try:
        buf = view
        n = buf.shape[0]
        if c_end > n or c_start > c_end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {n}")
        if not checked or c_start == c_end:
            return [], [0] * kinds
        count = len(checked)
        table = <osp_pattern *>malloc(count * sizeof(osp_pattern))
        if table == NULL:
            raise MemoryError()
        for k in range(count):
            literal = checked[k][3]
            table[k].kind = checked[k][0]
            table[k].anchored = checked[k][1]
            table[k].caseless = checked[k][2]
            table[k].literal = <const uint8_t *>PyBytes_AS_STRING(literal)
            table[k].length = PyBytes_GET_SIZE(literal)
        if osp_scan_init(&scan, table, count, c_flags, c_limit) < 0:
            osp_scan_free(&scan)
            raise MemoryError()
        try:
            # The literals stay alive in `checked`, which this frame holds.
            with nogil:
                failed = osp_scan_region(&scan, &buf[c_start], c_end - c_start, c_flags)
            if failed < 0:
                raise MemoryError()
            hits = [(c_start + scan.hits[k].start, c_start + scan.hits[k].end, scan.hits[k].kind)
                    for k in range(scan.hit_count)]
            totals = [scan.totals[k] for k in range(kinds)]
            return hits, totals
        finally:
            osp_scan_free(&scan)
    finally:
        free(table)
        buf = None
        view.release()


# ---------------------------------------------------------------- outline
# The contract is _native.outline_lines / _native.JsonOutline; the loops here
# touch Python objects only when a run, a commit or a reported entry begins.
from libc.string cimport memchr, memcmp

from overspill._buffers import JSON_LABEL_KEYS

cdef enum:
    TOKEN_CAP = 255
    SUBJECT_CAP = 120
    DEPTH_CAP = 32
    KEY_CAP = 64
    KEYS_CAP = 12
    NESTING_CAP = 4096

# Bytes that end a line's leading token (a ':' ends it unless "::").
cdef bint _TOKEN_STOPS[256]
for _byte in range(256):
    _TOKEN_STOPS[_byte] = _byte in b" \t[(,;\"'=<>|{}"


cdef inline bint _is_section_header(const uint8_t *p, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    cdef bint slash = False
    if n < 2 or p[n - 1] != 58:
        return False
    for i in range(n - 1):
        if p[i] == 32 or p[i] == 9 or p[i] == 58:
            return False
        if p[i] == 47:
            slash = True
    return slash or p[0] == 46


cdef Py_ssize_t _part_ends(const uint8_t *p, Py_ssize_t n, Py_ssize_t *ends, Py_ssize_t cap) noexcept:
    """The ends of the first `cap` non-empty parts of p[0:n) in `ends`; returns min(parts, cap)."""
    cdef Py_ssize_t i = 0, start = 0, count = 0, width
    while i < n:
        if p[i] == 47:
            width = 1
        elif p[i] == 58 and i + 1 < n and p[i + 1] == 58:
            width = 2
        else:
            i += 1
            continue
        if i > start:
            if count == cap:
                return count
            ends[count] = i
            count += 1
        i += width
        start = i
    if n > start and count < cap:
        ends[count] = n
        count += 1
    return count


cdef inline bint _is_hex(uint8_t c) noexcept:
    return (48 <= c <= 57) or (97 <= c <= 102)


cdef Py_ssize_t _commit_digits(const uint8_t *p, Py_ssize_t n) noexcept:
    """Hex digits of a `commit <hash>` line (7 or more), else 0."""
    cdef Py_ssize_t end = 7
    if n < 7 or memcmp(p, b"commit ", 7) != 0:
        return 0
    while end < n and _is_hex(p[end]):
        end += 1
    if end - 7 < 7 or (end < n and p[end] != 32):
        return 0
    return end - 7


# Bytes osp_scan_token stops at (the token's stop bytes, ':' and '/') as
# nibble tables: each high nibble gets a bit of its own, so the test is exact.
cdef uint8_t _SPECIAL_LOW[16]
cdef uint8_t _SPECIAL_HIGH[16]


def _special_tables():
    special = [byte for byte in range(256) if _TOKEN_STOPS[byte] or byte in (58, 47)]
    highs = sorted({byte >> 4 for byte in special})
    assert len(highs) <= 8, "one bit per high nibble"
    low, high = [0] * 16, [0] * 16
    for byte in special:
        bit = 1 << highs.index(byte >> 4)
        high[byte >> 4] = bit
        low[byte & 15] |= bit
    return low, high


for _index, (_low, _high) in enumerate(zip(*_special_tables())):
    _SPECIAL_LOW[_index] = _low
    _SPECIAL_HIGH[_index] = _high


cdef inline Py_ssize_t _common_prefix(const uint8_t *a, const uint8_t *b, Py_ssize_t n) noexcept:
    """Bytes a and b share at their start (at most n), compared eight at a time."""
    cdef Py_ssize_t i = 0
    cdef uint64_t x, y
    while i + 8 <= n:
        memcpy(&x, a + i, 8)
        memcpy(&y, b + i, 8)
        if x != y:
            break
        i += 8
    while i < n and a[i] == b[i]:
        i += 1
    return i


def outline_lines(buffer, start, end, section, max_depth, max_runs, max_commits, /):
    """Runs of lines by path prefix, and commits; see _native.outline_lines."""
    cdef Py_ssize_t c_start, c_end, c_depth, c_runs, c_commits, n, position, stop, length, offset
    cdef Py_ssize_t lead = 0, lines = 0, keyed = 0, total = 0, d, token_length, parts, common, key_length
    cdef Py_ssize_t previous_length = 0, previous_parts = 0, digits, s_length, i
    cdef const unsigned char[::1] buf
    cdef const uint8_t *line
    cdef const uint8_t *token
    cdef const uint8_t *found
    cdef uint8_t section_copy[TOKEN_CAP]
    cdef uint8_t previous[TOKEN_CAP]
    cdef Py_ssize_t ends[DEPTH_CAP + 1]
    cdef Py_ssize_t previous_ends[DEPTH_CAP + 1]
    cdef Py_ssize_t run_count[DEPTH_CAP]
    cdef Py_ssize_t run_lines[DEPTH_CAP]
    cdef bint run_deeper[DEPTH_CAP]
    cdef bint any_keyed = False, deeper
    cdef int pathlike
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    c_start = _check_int(start, "start", 0)
    c_end = _check_int(end, "end", 0)
    if not isinstance(section, bytes):
        raise TypeError(f"section must be bytes, not {type(section).__name__}")
    c_depth = _check_int(max_depth, "max_depth", 1)
    c_runs = _check_int(max_runs, "max_runs", 1)
    c_commits = _check_int(max_commits, "max_commits", 0)
    if c_depth > DEPTH_CAP:
        raise ValueError(f"max_depth must be at most {DEPTH_CAP}, not {c_depth}")
    s_length = PyBytes_GET_SIZE(section)
    if s_length > TOKEN_CAP:
        raise ValueError(f"section must be at most {TOKEN_CAP} bytes, not {s_length}")
    memcpy(section_copy, PyBytes_AS_STRING(section), s_length)
    runs = [[] for _ in range(c_depth)]
    open_runs = [None] * c_depth  # [key, offset] of each depth's current run
    first = []
    last = []
    pending = None
    for d in range(c_depth):
        run_count[d] = 0
    view = _byte_view(buffer)
    try:
        buf = view
        n = buf.shape[0]
        if c_end > n or c_start > c_end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {n}")
        position = c_start
        while position < c_end:
            found = <const uint8_t *>memchr(&buf[position], NEWLINE, c_end - position)
            stop = c_end if found == NULL else found - &buf[0]
            line = &buf[position]
            length = stop - position
            if length and line[length - 1] == 13:
                length -= 1
            offset = position
            position = stop + 1
            lines += 1
            digits = _commit_digits(line, length)
            if digits:
                total += 1
                pending = [offset, line[7 : 7 + min(digits, 12)], None]
                if len(first) < c_commits:
                    first.append(pending)
                elif c_commits:
                    last.append(pending)
                    if len(last) > c_commits:
                        del last[0]
            elif pending is not None and length > 4 and memcmp(line, b"    ", 4) == 0:
                i = 4
                while i < length and (line[i] == 32 or line[i] == 9):
                    i += 1
                key_length = length
                while key_length > i and (line[key_length - 1] == 32 or line[key_length - 1] == 9):
                    key_length -= 1
                if key_length > i:
                    pending[2] = line[i : min(key_length, i + SUBJECT_CAP)]
                    pending = None
            if _is_section_header(line, length):
                s_length = min(length - 1, TOKEN_CAP)
                memcpy(section_copy, line, s_length)
                token = section_copy
                token_length = s_length
                parts = _part_ends(token, token_length, ends, c_depth + 1)
            else:
                token_length = osp_scan_token(line, length, n - offset, TOKEN_CAP, _SPECIAL_LOW, _SPECIAL_HIGH, ends,
                                              c_depth + 1, &parts, &pathlike)
                token = line
                if not pathlike:
                    token = section_copy
                    token_length = s_length
                    parts = _part_ends(token, token_length, ends, c_depth + 1)
            if token_length == 0:
                if not any_keyed:
                    lead += 1
                else:
                    for d in range(c_depth):
                        run_lines[d] += 1
                continue
            keyed += 1
            common = 0
            if any_keyed:
                common = _common_prefix(token, previous, min(token_length, previous_length))
            for d in range(c_depth):
                key_length = ends[min(d + 1, parts) - 1] if parts else token_length
                deeper = parts > d + 1
                if any_keyed:
                    i = previous_ends[min(d + 1, previous_parts) - 1] if previous_parts else previous_length
                    if i == key_length and key_length <= common:
                        run_lines[d] += 1
                        run_deeper[d] = run_deeper[d] or deeper
                        continue
                if run_count[d] < 0:
                    continue
                if run_count[d] > 0:
                    open_run = open_runs[d]
                    runs[d].append((open_run[0], open_run[1], run_lines[d], bool(run_deeper[d])))
                if run_count[d] >= c_runs:
                    run_count[d] = -1
                    runs[d] = None
                    continue
                run_count[d] += 1
                open_runs[d] = (token[:key_length], offset)
                run_lines[d] = 1
                run_deeper[d] = deeper
            any_keyed = True
            memcpy(previous, token, token_length)
            previous_length = token_length
            previous_parts = parts
            for d in range(parts):
                previous_ends[d] = ends[d]
    finally:
        buf = None
        view.release()
    for d in range(c_depth):
        if run_count[d] > 0:
            open_run = open_runs[d]
            runs[d].append((open_run[0], open_run[1], run_lines[d], bool(run_deeper[d])))
    commits = [tuple(commit) for commit in first + last]
    return runs, lead, lines, keyed, (<const uint8_t *>section_copy)[:s_length], commits, total


cdef enum:
    J_ROOT = 0
    J_OBJECT = 1
    J_ARRAY = 2

ctypedef struct _JFrame:
    int kind
    bint reportable
    bint expect_key
    bint member_in_range
    bint labelled
    bint key_is_label
    bint collect
    int label_depth
    Py_ssize_t index
    Py_ssize_t first_index
    Py_ssize_t last_index
    Py_ssize_t count
    Py_ssize_t first_offset
    Py_ssize_t item_index
    Py_ssize_t item_offset
    Py_ssize_t key_length
    uint8_t key[KEY_CAP]


# JSON_LABEL_KEYS as C strings (kept alive by _LABEL_KEYS), for a check per key without Python objects.
_LABEL_KEYS = tuple(sorted(JSON_LABEL_KEYS))
cdef const uint8_t *_LABEL_KEY_BYTES[16]
cdef Py_ssize_t _LABEL_KEY_LENGTHS[16]
cdef Py_ssize_t _LABEL_KEY_COUNT = len(_LABEL_KEYS)
assert _LABEL_KEY_COUNT <= 16
for _index, _key in enumerate(_LABEL_KEYS):
    _LABEL_KEY_BYTES[_index] = <const uint8_t *>PyBytes_AS_STRING(_key)
    _LABEL_KEY_LENGTHS[_index] = len(_key)


cdef inline bint _is_label_key(const uint8_t *key, Py_ssize_t length) noexcept:
    cdef Py_ssize_t k
    for k in range(_LABEL_KEY_COUNT):
        if _LABEL_KEY_LENGTHS[k] == length and memcmp(_LABEL_KEY_BYTES[k], key, length) == 0:
            return True
    return False


cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil


# '"' and '\\' as nibble tables for osp_set_mask32 (high nibbles 2 and 5: one bit each, exact).
cdef uint8_t _QUOTE_LOW[16]
cdef uint8_t _QUOTE_HIGH[16]
for _index in range(16):
    _QUOTE_LOW[_index] = (1 if _index == 0x2 else 0) | (2 if _index == 0xC else 0)
    _QUOTE_HIGH[_index] = 1 if _index == 0x2 else (2 if _index == 0x5 else 0)


cdef class JsonOutline:
    """A streaming scan of a JSON document for the structure of one part of it; see _native.JsonOutline.

    Frames are C structs (one per open container); the Python objects of a
    reported frame (its path, keys, labels) live in lists indexed by depth.
    """

    cdef Py_ssize_t _omit_start, _omit_end, _max_depth, _max_entries, _max_labels, _position
    cdef _JFrame *_frames
    cdef Py_ssize_t _depth, _allocated, _dropped
    cdef bint _valid, _is_key, _capturing
    cdef int _state
    cdef uint8_t _capture[KEY_CAP]
    cdef Py_ssize_t _capture_length
    cdef list _entries, _paths, _keys, _labels

    def __cinit__(self, *args, **kwargs):
        self._frames = NULL

    def __init__(self, omit_start, omit_end, max_depth, max_entries, max_labels):
        self._omit_start = _check_int(omit_start, "omit_start", 0)
        self._omit_end = _check_int(omit_end, "omit_end", 0)
        self._max_depth = _check_int(max_depth, "max_depth", 1)
        self._max_entries = _check_int(max_entries, "max_entries", 1)
        self._max_labels = _check_int(max_labels, "max_labels", 0)
        if self._omit_start > self._omit_end:
            raise ValueError("omit_start must not be after omit_end")
        if self._max_depth > DEPTH_CAP:
            raise ValueError(f"max_depth must be at most {DEPTH_CAP}, not {self._max_depth}")
        free(self._frames)
        self._allocated = 16
        self._frames = <_JFrame *>malloc(self._allocated * sizeof(_JFrame))
        if self._frames == NULL:
            raise MemoryError()
        self._depth = 0
        self._position = 0
        self._valid = True
        self._state = 0
        self._dropped = 0
        self._capture_length = 0
        self._is_key = False
        self._capturing = False
        self._entries = []
        self._paths = [()]
        self._keys = [[]]
        self._labels = [[]]
        self._init_frame(0, J_ROOT, True)

    def __dealloc__(self):
        free(self._frames)

    cdef void _init_frame(self, Py_ssize_t depth, int kind, bint reportable) noexcept:
        cdef _JFrame *frame = &self._frames[depth]
        frame.kind = kind
        frame.reportable = reportable
        frame.expect_key = kind == J_OBJECT
        frame.member_in_range = False
        frame.labelled = False
        frame.collect = False
        frame.label_depth = 0
        frame.index = 0
        frame.first_index = -1
        frame.last_index = -1
        frame.count = 0
        frame.first_offset = -1
        frame.item_index = -1
        frame.item_offset = -1
        frame.key_length = 0
        frame.key_is_label = False

    cdef bint _item(self, _JFrame *frame, Py_ssize_t offset) noexcept:
        cdef Py_ssize_t index = frame.index
        frame.index += 1
        if not (frame.reportable and self._omit_start <= offset < self._omit_end):
            return False
        if frame.count == 0:
            frame.first_index = index
            frame.first_offset = offset
        frame.last_index = index
        frame.count += 1
        return True

    cdef int _open(self, int kind, Py_ssize_t offset) except -1:
        cdef _JFrame *parent = &self._frames[self._depth]
        cdef Py_ssize_t index = parent.index, depth = self._depth + 1
        cdef bint omitted, reportable
        cdef _JFrame *grown
        cdef _JFrame *frame
        omitted = self._item(parent, offset) if parent.kind != J_OBJECT else parent.member_in_range
        if depth > NESTING_CAP:
            self._valid = False
            return 0
        if parent.kind == J_OBJECT:
            reportable = parent.reportable and depth <= self._max_depth
            path = self._paths[self._depth] + ((<const uint8_t *>parent.key)[:parent.key_length],) if reportable else None
        elif parent.kind == J_ROOT:
            reportable = index == 0 and depth <= self._max_depth
            path = ()
        else:
            reportable = False
            path = None
        if depth >= self._allocated:
            grown = <_JFrame *>realloc(self._frames, 2 * self._allocated * sizeof(_JFrame))
            if grown == NULL:
                raise MemoryError()
            self._frames = grown
            self._allocated *= 2
            parent = &self._frames[self._depth]
        self._init_frame(depth, kind, reportable)
        frame = &self._frames[depth]
        if kind == J_OBJECT:
            if parent.kind == J_ARRAY and parent.reportable and omitted:
                frame.label_depth = 1
                frame.item_index = index
                frame.item_offset = offset
                frame.collect = parent.count == 1
            elif parent.kind == J_OBJECT and parent.label_depth == 1:
                frame.label_depth = 2
        self._depth = depth
        while len(self._paths) <= depth:
            self._paths.append(None)
            self._keys.append(None)
            self._labels.append(None)
        self._paths[depth] = path
        self._keys[depth] = [] if reportable or frame.collect else None
        self._labels[depth] = [] if reportable else None
        return 0

    cdef int _emit(self, Py_ssize_t depth, Py_ssize_t end) except -1:
        cdef _JFrame *frame = &self._frames[depth]
        if not frame.reportable or frame.count == 0:
            return 0
        if len(self._entries) >= self._max_entries:
            self._dropped += 1
            return 0
        kind = ("root", "object", "array")[frame.kind]
        self._entries.append((None if frame.kind == J_ROOT else self._paths[depth], kind, frame.first_index,
                              frame.last_index, frame.count, frame.first_offset, min(end, self._omit_end),
                              tuple(self._keys[depth]), tuple(self._labels[depth])))
        return 0

    cdef int _scalar_done(self) except -1:
        cdef _JFrame *frame = &self._frames[self._depth]
        cdef Py_ssize_t item, owner
        if frame.kind != J_OBJECT or frame.label_depth == 0 or not frame.key_is_label:
            return 0
        item = self._depth if frame.label_depth == 1 else self._depth - 1
        if self._frames[item].labelled:
            return 0
        self._frames[item].labelled = True
        owner = item - 1
        labels = self._labels[owner]
        if len(labels) < self._max_labels:
            labels.append((self._frames[item].item_index, self._frames[item].item_offset,
                           (<const uint8_t *>self._capture)[:self._capture_length]))
        return 0

    cdef int _key_done(self) except -1:
        cdef _JFrame *frame = &self._frames[self._depth]
        memcpy(frame.key, self._capture, self._capture_length)
        frame.key_length = self._capture_length
        # Decided once per key, in C: a scalar's check is then a flag.
        frame.key_is_label = frame.label_depth != 0 and _is_label_key(frame.key, frame.key_length)
        if frame.member_in_range or frame.collect:
            text = (<const uint8_t *>self._capture)[:self._capture_length]
            if frame.member_in_range and len(self._keys[self._depth]) < KEYS_CAP:
                self._keys[self._depth].append(text)
            if frame.collect and len(self._keys[self._depth - 1]) < KEYS_CAP:
                self._keys[self._depth - 1].append(text)
        return 0

    cdef inline void _take(self, const uint8_t *data, Py_ssize_t count) noexcept:
        cdef Py_ssize_t room = KEY_CAP - self._capture_length
        if not self._capturing:  # only keys and the values of label keys are ever looked at
            return
        if count > room:
            count = room
        if count > 0:
            memcpy(self._capture + self._capture_length, data, count)
            self._capture_length += count

    cdef int _scan(self, const uint8_t *data, Py_ssize_t size, Py_ssize_t base) except -1:
        cdef Py_ssize_t i = 0, stop, near
        cdef uint32_t mask
        cdef const uint8_t *found
        cdef uint8_t byte
        cdef _JFrame *top
        while i < size:
            if self._state == 2:
                self._take(&data[i], 1)
                i += 1
                self._state = 1
                continue
            if self._state == 1:
                # The string's end or its next escape: a short string (most keys) byte by byte,
                # a longer one 32 bytes at a time.
                stop = i
                near = min(size, i + 16)
                while stop < near and data[stop] != 34 and data[stop] != 92:
                    stop += 1
                if stop == near:
                    while stop + 32 <= size:
                        mask = osp_set_mask32(&data[stop], _QUOTE_LOW, _QUOTE_HIGH)
                        if mask:
                            stop += __builtin_ctz(mask)
                            break
                        stop += 32
                    else:
                        while stop < size and data[stop] != 34 and data[stop] != 92:
                            stop += 1
                self._take(&data[i], stop - i)
                if stop == size:
                    return 0
                if data[stop] == 92:
                    self._take(&data[stop], 1)
                    self._state = 2
                    i = stop + 1
                    continue
                self._state = 0
                i = stop + 1
                if self._is_key:
                    self._key_done()
                else:
                    self._scalar_done()
                continue
            if self._state == 3:
                stop = i
                while stop < size and not _JSON_LITERAL_STOPS[data[stop]]:
                    stop += 1
                self._take(&data[i], stop - i)
                if stop == size:
                    return 0
                self._state = 0
                i = stop
                self._scalar_done()
                continue
            while i < size and (data[i] == 32 or data[i] == 10 or data[i] == 13 or data[i] == 9):
                i += 1
            if i == size:
                return 0
            byte = data[i]
            top = &self._frames[self._depth]
            if byte == 34:
                if top.kind == J_OBJECT and top.expect_key:
                    top.member_in_range = self._item(top, base + i)
                    top.expect_key = False
                    self._is_key = True
                else:
                    if top.kind != J_OBJECT:
                        self._item(top, base + i)
                    self._is_key = False
                self._capturing = self._is_key or (top.kind == J_OBJECT and top.key_is_label)
                self._capture_length = 0
                self._state = 1
                i += 1
            elif byte == 123 or byte == 91:
                if top.kind == J_OBJECT and top.expect_key:
                    self._valid = False
                    return 0
                self._open(J_OBJECT if byte == 123 else J_ARRAY, base + i)
                if not self._valid:
                    return 0
                i += 1
            elif byte == 125 or byte == 93:
                if top.kind == J_ROOT or top.kind != (J_OBJECT if byte == 125 else J_ARRAY):
                    self._valid = False
                    return 0
                self._depth -= 1
                self._emit(self._depth + 1, base + i + 1)
                i += 1
            elif byte == 44:
                if top.kind == J_OBJECT:
                    top.expect_key = True
                i += 1
            elif byte == 58:
                if top.kind != J_OBJECT or top.expect_key:
                    self._valid = False
                    return 0
                i += 1
            elif _JSON_LITERAL_STARTS[byte]:
                if top.kind == J_OBJECT:
                    if top.expect_key:
                        self._valid = False
                        return 0
                else:
                    self._item(top, base + i)
                self._capturing = top.kind == J_OBJECT and top.key_is_label
                self._capture_length = 0
                self._state = 3
            else:
                self._valid = False
                return 0
        return 0

    def feed(self, buffer, /):
        """Scan the next bytes of the document.

        :raises TypeError: ``buffer`` is not a contiguous bytes-like object.
        """
        cdef const unsigned char[::1] buf
        cdef Py_ssize_t size, take, base
        if isinstance(buffer, str):
            raise TypeError("buffer must be a bytes-like object, not str")
        view = _byte_view(buffer)
        try:
            buf = view
            size = buf.shape[0]
            base = self._position
            take = max(0, min(size, self._omit_end - base))
            self._position = base + size
            if self._valid and take:
                self._scan(&buf[0], take, base)
        finally:
            buf = None
            view.release()

    def result(self):
        """``(valid, records, entries, dropped)``; see _native.JsonOutline."""
        cdef Py_ssize_t depth
        saved = list(self._entries), self._dropped
        for depth in range(self._depth, -1, -1):
            self._emit(depth, self._omit_end)
        entries, dropped = self._entries, self._dropped
        self._entries, self._dropped = saved
        return self._valid, self._frames[0].index, entries, dropped


cdef uint8_t _JSON_LITERAL_STOPS[256]
cdef uint8_t _JSON_LITERAL_STARTS[256]
for _byte in range(256):
    _JSON_LITERAL_STOPS[_byte] = _byte in b" \t\r\n,]}:[{\""
    _JSON_LITERAL_STARTS[_byte] = _byte in b"-0123456789tfn"
