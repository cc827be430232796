# Included by _speedups.pyx: the views and the signal scan (the twin's overspill/_native_text.py).

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


cdef object _decoded(const uint8_t *p, Py_ssize_t n):
    """``str(p[0:n], "utf-8", "replace")``.  All-ASCII bytes (most tool output)
    are copied into a new str: CPython's decoder makes two passes over input
    that is not word-aligned, as a page in a map mostly is."""
    cdef object text
    if osp_utf8_length(p, n, 1) == n:  # no byte >= 0x80
        text = PyUnicode_New(n, 127)
        if n:
            memcpy(PyUnicode_DATA(text), p, <size_t>n)
        return text
    return PyUnicode_DecodeUTF8(<const char *>p, n, "replace")


def view_text(buffer, flags, /):
    """What a reader is shown of ``buffer``, decoded; see _native.view_text."""
    cdef int c_flags
    cdef Py_ssize_t n, length
    cdef const unsigned char[::1] buf
    cdef uint8_t *out = NULL
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    c_flags = _check_flags(flags)
    view = _byte_view(buffer)
    try:
        buf = view
        n = buf.shape[0]
        if n == 0:
            return ""
        if not osp_needs_view(&buf[0], n, c_flags):
            return _decoded(&buf[0], n)
        out = <uint8_t *>malloc(n)
        if out == NULL:
            raise MemoryError()
        length = osp_view(&buf[0], n, c_flags, out)
        return _decoded(out, length)
    finally:
        free(out)
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
