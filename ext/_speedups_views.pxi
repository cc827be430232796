# Included by _speedups.pyx: the views and the signal scan (the twin's overspill/_native_text.py).

VIEW_ANSI = 1
VIEW_CR = 2


def view_bytes(buffer, flags, /):
    """What a reader is shown of ``buffer``, or None when it is the buffer itself; see _native.view_bytes."""
    cdef int c_flags
    cdef Py_ssize_t n, length
    cdef Py_buffer buf
    cdef const uint8_t *p
    cdef uint8_t *out
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &buf)
    try:
        c_flags = _check_flags(flags)
        p = <const uint8_t *>buf.buf
        n = buf.len
        if n == 0 or not osp_needs_view(p, n, c_flags):
            return None
        out = <uint8_t *>malloc(n)
        if out == NULL:
            raise MemoryError()
        try:
            if n >= NOGIL_BYTES:
                with nogil:
                    length = osp_view(p, n, c_flags, out)
            else:
                length = osp_view(p, n, c_flags, out)
            return out[:length]
        finally:
            free(out)
    finally:
        PyBuffer_Release(&buf)


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


cdef object _shown_text(const uint8_t *p, Py_ssize_t n, int flags):
    """The view of ``p[0:n)`` decoded (``view_text``).  One pass copies text
    that is ASCII and its own view (most tool output) straight into a new str;
    other text is viewed and decoded as ``_decoded`` does."""
    cdef object text
    cdef int state
    cdef Py_ssize_t length
    cdef uint8_t *out
    if n == 0:
        return ""
    text = PyUnicode_New(n, 127)
    out = <uint8_t *>PyUnicode_DATA(text)
    if n >= NOGIL_BYTES:
        # The new str is this frame's alone until it is returned.
        with nogil:
            state = osp_scan_plain(p, n, flags, out)
    else:
        state = osp_scan_plain(p, n, flags, out)
    if state == 0:
        return text
    if not state & OSP_PLAIN_VIEW:
        return PyUnicode_DecodeUTF8(<const char *>p, n, "replace")
    out = <uint8_t *>malloc(n)
    if out == NULL:
        raise MemoryError()
    try:
        length = osp_view(p, n, flags, out)
        return _decoded(out, length)
    finally:
        free(out)


def view_text(buffer, flags, /):
    """What a reader is shown of ``buffer``, decoded; see _native.view_text."""
    cdef int c_flags
    cdef Py_buffer buf
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &buf)
    try:
        c_flags = _check_flags(flags)
        if buf.len == 0:
            return ""
        return _shown_text(<const uint8_t *>buf.buf, buf.len, c_flags)
    finally:
        PyBuffer_Release(&buf)


cdef bint _escape_within(const uint8_t *p, Py_ssize_t floor, Py_ssize_t position, Py_ssize_t reach) noexcept:
    """Whether ``position`` may split an escape sequence (``page_text``'s rule 3): an ESC lies in
    ``p[max(floor, position - reach):position]``, or those bytes are all ``reach`` of them and hold
    none of ESC, newline and BEL (a sequence longer than ``reach``, an OSC string, may be under way)."""
    cdef Py_ssize_t low = max(floor, position - reach)
    if position > low and memchr(p + low, 0x1b, <size_t>(position - low)) != NULL:
        return True
    return (reach > 0 and position - reach >= floor and memchr(p + low, 0x0a, <size_t>reach) == NULL
            and memchr(p + low, 0x07, <size_t>reach) == NULL)


cdef int _flags_of(object flags) except -1:
    """``_check_flags`` with the common case (an int from 0 to 3) checked here."""
    if type(flags) is int and 0 <= flags <= 3:
        return flags
    return _check_flags(flags)


def page_text(buffer, low, high, offset, limit, flags, reach, checksums, chunk, /):
    """A verified page of a payload and its text in one call; see _native.page_text."""
    cdef Py_ssize_t c_low, c_high, c_offset, c_limit, c_reach, c_chunk, size
    cdef int c_flags
    cdef const uint8_t *p
    # Raw buffers, not typed memoryviews: their set-up costs more than a small page's scan.
    cdef Py_buffer data
    cdef Py_buffer sums
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &data)
    try:
        c_low = _check_int(low, "low", 0)
        c_high = _check_int(high, "high", 0)
        c_offset = _check_int(offset, "offset", 0)
        c_limit = _check_int(limit, "limit", 1)
        c_flags = _flags_of(flags)
        c_reach = _check_int(reach, "reach", 0)
        if checksums is None:
            c_chunk = _check_int(chunk, "chunk", 1)
            p = <const uint8_t *>data.buf
            size = data.len
            if not c_low <= c_offset <= c_high <= size or c_low == c_high:
                raise ValueError(f"low, offset and high must satisfy low <= offset <= high <= {size} and "
                                 f"low < high, not {low}, {offset}, {high}")
            return _copied_page(p, size, c_low, c_high, c_offset, c_limit, c_flags, c_reach, NULL, c_chunk)
        if isinstance(checksums, str):
            raise TypeError("checksums must be a bytes-like object, not str")
        _bytes_of(checksums, &sums)
        try:
            c_chunk = _check_int(chunk, "chunk", 1)
            p = <const uint8_t *>data.buf
            size = data.len
            if not c_low <= c_offset <= c_high <= size or c_low == c_high:
                raise ValueError(f"low, offset and high must satisfy low <= offset <= high <= {size} and "
                                 f"low < high, not {low}, {offset}, {high}")
            if (c_high - 1) // c_chunk + 1 > sums.len // 4:  # (4 * chunks > len, without the product)
                raise ValueError(f"{sums.len // 4} checksums do not cover the chunks of [{c_low}, {c_high})")
            # Checked above: every chunk starts inside the buffer and every index has its 4 bytes.
            return _copied_page(p, size, c_low, c_high, c_offset, c_limit, c_flags, c_reach,
                                <const uint8_t *>sums.buf, c_chunk)
        finally:
            PyBuffer_Release(&sums)
    finally:
        PyBuffer_Release(&data)


cdef object _copied_page(const uint8_t *p, Py_ssize_t size, Py_ssize_t low, Py_ssize_t high, Py_ssize_t offset,
                         Py_ssize_t limit, int flags, Py_ssize_t reach, const uint8_t *sums, Py_ssize_t chunk):
    """``page_text`` of a whole payload ``p[0:size)`` (a map another process may change while it
    is read): the window ``[low, high)`` copied out first, its chunks checked over the copy inside
    it and ``p`` outside it, and the page found and decoded from the copy, so the text is of the
    bytes checked.  The caller checked the arguments as ``_window_page``'s."""
    cdef Py_ssize_t failed, length = high - low
    cdef uint8_t *window = <uint8_t *>malloc(<size_t>length)
    if window == NULL:
        raise MemoryError()
    try:
        if length >= NOGIL_BYTES:
            with nogil:
                memcpy(window, p + low, <size_t>length)
                failed = _first_bad_copied(p, size, 0, window, low, high, chunk, sums) if sums != NULL else -1
        else:
            memcpy(window, p + low, <size_t>length)
            failed = _first_bad_copied(p, size, 0, window, low, high, chunk, sums) if sums != NULL else -1
        if failed >= 0:
            return failed
        return _page_in(window, low, low, high, offset, limit, flags, reach, high == size)
    finally:
        free(window)


cdef object _window_page(const uint8_t *window, Py_ssize_t length, Py_ssize_t base, Py_ssize_t low, Py_ssize_t high,
                         Py_ssize_t offset, Py_ssize_t limit, int flags, Py_ssize_t reach, const uint8_t *sums,
                         Py_ssize_t chunk):
    """``page_text``'s rule over ``length`` bytes that start at payload offset ``base``
    (0 for a whole payload, a chunk boundary for ``read_page``'s window): every
    position, in and out, a payload offset; ``sums`` the payload's checksums
    (from its first chunk), or NULL for none.  The caller checked
    ``base <= low <= offset <= high <= base + length``, ``low < high``, and that
    ``sums`` covers the chunks of ``[low, high)``."""
    cdef Py_ssize_t failed
    if sums != NULL:
        if high - low >= NOGIL_BYTES:
            with nogil:
                failed = _first_bad_chunk(window, length, base, low // chunk, (high - 1) // chunk, chunk, sums)
        else:
            failed = _first_bad_chunk(window, length, base, low // chunk, (high - 1) // chunk, chunk, sums)
        if failed >= 0:
            return failed
    return _page_in(window, base, low, high, offset, limit, flags, reach, high - base == length)


cdef object _page_in(const uint8_t *window, Py_ssize_t base, Py_ssize_t low, Py_ssize_t high, Py_ssize_t offset,
                     Py_ssize_t limit, int flags, Py_ssize_t reach, bint final):
    """``page_text``'s steps 2 and 3 over ``window``, whose bytes start at payload offset ``base``
    and hold ``[low, high)`` (checked); ``final``: ``high`` is the payload's end."""
    cdef Py_ssize_t start = 0, end = 0
    # Window positions from here (the page rule reads the bytes around the page alone).
    low -= base
    high -= base
    osp_page(window + low, high - low, offset - base - low, limit, final, &start, &end)
    start += low
    end += low
    if flags & VIEW_ANSI and (_escape_within(window, low, start, reach) or _escape_within(window, low, end, reach)
                              or flags & VIEW_CR and end < high and window[end] == 0x1b):
        # (An ESC just past the end may stand between a line's \r and its \n: the caller looks past it.)
        return start + base, end + base, None
    if flags & VIEW_CR and end < high and window[end] == 0x0a:
        # The page ends a line but for its \n: a \r before it is the line's ending (viewed alone, a
        # final \r is a redraw), so the page's text is the view of it and that \n, less the \n.
        return start + base, end + base, _shown_text(window + start, end + 1 - start, flags)[:-1]
    return start + base, end + base, _shown_text(window + start, end - start, flags)


def signal_lines(buffer, start, end, patterns, flags, limit, distinct=0, state=None, /):
    """Lines of ``buffer[start:end]`` whose view matches a signal pattern; see _native.signal_lines."""
    cdef Py_ssize_t c_start, c_end, c_limit, c_distinct, n, k
    cdef int c_flags, count, failed = 0
    cdef Py_buffer buf
    cdef osp_pattern *table = NULL
    cdef osp_scan scan
    cdef osp_quoted quoted
    cdef bint report = state is not None
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &buf)
    try:
        c_start = _check_int(start, "start", 0)
        c_end = _check_int(end, "end", 0)
        checked = _check_patterns(patterns)
        c_flags = _check_flags(flags)
        c_limit = _check_int(limit, "limit", 0)
        c_distinct = _check_int(distinct, "distinct", 0)
        begun = _check_signal_state(state)
        kinds = max([entry[0] for entry in checked], default=-1) + 1
        n = buf.len
        if c_end > n or c_start > c_end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {n}")
        if begun is None:
            begun = (0, 0, 0, 0)
        if not checked or c_start == c_end:
            if report and c_start < c_end:
                # No pattern: the state is only walked to the region's end.
                osp_quoted_begin(&quoted, <const uint8_t *>buf.buf + c_start, c_end - c_start, begun[0], begun[1],
                                 begun[2], begun[3])
                with nogil:
                    osp_quoted_finish(&quoted)
                state[:] = [quoted.phase, quoted.old_left, quoted.new_left, quoted.midline]
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
        scan.distinct = c_distinct
        osp_quoted_begin(&scan.quoted, <const uint8_t *>buf.buf + c_start, c_end - c_start, begun[0], begun[1],
                         begun[2], begun[3])
        try:
            # The literals stay alive in `checked`, which this frame holds.
            with nogil:
                failed = osp_scan_region(&scan, <const uint8_t *>buf.buf + c_start, c_end - c_start, c_flags)
                if failed >= 0 and report:
                    osp_quoted_finish(&scan.quoted)
            if failed < 0:
                raise MemoryError()
            hits = [(c_start + scan.hits[k].start, c_start + scan.hits[k].end, scan.hits[k].kind)
                    for k in range(scan.hit_count)]
            totals = [scan.totals[k] for k in range(kinds)]
            if report:
                state[:] = [scan.quoted.phase, scan.quoted.old_left, scan.quoted.new_left, scan.quoted.midline]
            return hits, totals
        finally:
            osp_scan_free(&scan)
    finally:
        free(table)
        PyBuffer_Release(&buf)
