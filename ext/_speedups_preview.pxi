# The preview's cuts (preview_cuts and its helpers): where head and tail end,
# by lines, bytes and line slack; the same-shape-run rule is overspill._runs.
# Included by _speedups.pyx at the place this code had there, so the compiled
# module's layout (which the outline scan's speed is sensitive to) is unchanged.


cdef inline Py_ssize_t _saturated_sum(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """a + b for a, b >= 0, or PY_SSIZE_T_MAX where that would overflow: the twin's
    ints never do, so a slack near sys.maxsize must reach as far here as there."""
    return PY_SSIZE_T_MAX if a > PY_SSIZE_T_MAX - b else a + b


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
    cdef Py_ssize_t low = size - share, newline, stop
    cdef Py_ssize_t cut = osp_boundary_at_or_after(data, size, low, 1)
    if slack:
        stop = min(_saturated_sum(low, slack), size - 1)
        newline = _first_newline(data, 1, max(cut - 1, 0), stop)
        if newline >= 0:
            return newline + 1
        newline = _first_mark(data, 1, max(cut - 1, 0), stop)
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
    # max_bytes may be PY_SSIZE_T_MAX ("lines only"): one past it would wrap to a negative cap.
    cdef Py_ssize_t head_region = length, tail_region = 0
    cdef Py_ssize_t cap = max_bytes + 1 if max_bytes < PY_SSIZE_T_MAX else max_bytes
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
        high = min(_saturated_sum(tail_index, slack), length - 1)
        for attempt in range(2):
            newline = (_first_newline if attempt == 0 else _first_mark)(data, width, low, high)
            if newline >= 0:
                start = tail_start + osp_utf8_length(<const char *>data + tail_index * width,
                                                     newline + 1 - tail_index, width)
                if start - (size - tail_share) <= slack:
                    tail_index, tail_start = newline + 1, start
                    break
    return head_end, tail_start, head_index, tail_index


def preview_cuts(content, max_lines, max_bytes, line_slack=0, runs=0, /):
    """Where the head+tail preview cuts ``content``; see _native.preview_cuts."""
    cdef Py_ssize_t c_lines, c_bytes, c_slack, c_runs
    cdef Py_buffer buf
    cdef bint held = not isinstance(content, str) and not isinstance(content, bytes)
    if held:
        _bytes_of(content, &buf)
    try:
        c_lines = _check_int(max_lines, "max_lines", 1)
        c_bytes = _check_int(max_bytes, "max_bytes", 1)
        c_slack = _check_int(line_slack, "line_slack", 0)
        c_runs = _check_int(runs, "runs", 0)
        if isinstance(content, str):
            cuts = _preview_text(content, c_lines, c_bytes, c_slack)
        elif not held:
            cuts = _preview_bytes(<const uint8_t *>PyBytes_AS_STRING(content), PyBytes_GET_SIZE(content),
                                  c_lines, c_bytes, c_slack)
        elif buf.len == 0:
            cuts = 0, 0, 0, 0
        else:
            cuts = _preview_bytes(<const uint8_t *>buf.buf, buf.len, c_lines, c_bytes, c_slack)
    finally:
        if held:
            PyBuffer_Release(&buf)
    if c_runs and cuts[0] < cuts[1]:
        # The run rule has one home, shared with the twin (imported only when it trims);
        # only a line's shape is computed here, in one pass instead of a regex substitution.
        from overspill._runs import trim_cuts
        return trim_cuts(content, cuts, c_lines, c_runs, utf8_length, _line_shape)
    return cuts


cdef inline bint _is_hex(Py_UCS4 c):
    return (48 <= c <= 57) or (97 <= c <= 102)


cdef inline Py_ssize_t _hex_run(str line, Py_ssize_t i, Py_ssize_t n):
    """How many characters of ``line`` from ``i`` (before ``n``) are lowercase hex digits."""
    cdef Py_ssize_t j = i
    while j < n and _is_hex(line[j]):
        j += 1
    return j - i


cdef inline bint _is_upper_hex(Py_UCS4 c):
    return (48 <= c <= 57) or (65 <= c <= 70)


cdef bint _upper_uuid(str line, Py_ssize_t i, Py_ssize_t n):
    """Whether ``line[i:n]`` starts with runs of exactly 8, 4, 4, 4 and 12
    uppercase hex digits joined by ``-`` (osp_upper_uuid on bytes)."""
    cdef Py_ssize_t at = i, k, run
    cdef Py_ssize_t groups[5]
    groups[:] = [8, 4, 4, 4, 12]
    for k in range(5):
        if k > 0:
            if at >= n or line[at] != u"-":
                return False
            at += 1
        run = 0
        # One character past the group is enough to see that the run is longer.
        while run <= groups[k] and at + run < n and _is_upper_hex(line[at + run]):
            run += 1
        if run != groups[k]:
            return False
        at += run
    return True


cdef Py_ssize_t _hex_digest(str line, Py_ssize_t i, Py_ssize_t n, bint alone):
    """The length of the hex digest where a maximal run of lowercase hex digits
    starts at ``i`` or an uppercase hex letter is, as ``_buffers.NUMBERS`` reads
    one (osp_hex_digest on bytes): a UUID (runs of exactly 8, 4, 4, 4 and 12
    digits joined by ``-``: lowercase; or uppercase when ``alone``, no hex digit
    of either case just before ``i``), else the lowercase run when it has 7 or
    more digits; 0 for none."""
    cdef Py_ssize_t run = _hex_run(line, i, n), at = i, k
    cdef Py_ssize_t groups[5]
    if run == 8:
        groups[:] = [8, 4, 4, 4, 12]
        for k in range(5):
            if k > 0:
                if at >= n or line[at] != u"-":
                    break
                at += 1
            if _hex_run(line, at, n) != groups[k]:
                break
            at += groups[k]
        else:
            return 36
    if alone and _upper_uuid(line, i, n):
        return 36
    return run if run >= 7 else 0


def _line_shape(str line):
    """``overspill._runs``'s shape of ``line``: each hex digest (a UUID, in
    lowercase or uppercase, or a maximal run of ``[0-9a-f]`` of 7 or more
    characters) as one ``#``, in a
    shorter run each run of digits as one ``#`` (what
    ``_buffers.NUMBERS.sub("#", line)`` gives)."""
    cdef Py_ssize_t n = len(line), i = 0, j, k, m = 0
    cdef Py_UCS4 c
    cdef bint alone
    cdef Py_UCS4 *out = <Py_UCS4 *>malloc((n + 1) * sizeof(Py_UCS4))
    if out == NULL:
        raise MemoryError()
    try:
        while i < n:
            c = line[i]
            # An uppercase UUID needs no hex digit just before it (NUMBERS' lookbehind).
            alone = i == 0 or not (_is_hex(line[i - 1]) or 65 <= line[i - 1] <= 70)
            if not _is_hex(c):
                # An uppercase letter may start an uppercase UUID.
                k = _hex_digest(line, i, n, True) if alone and 65 <= c <= 70 else 0
                if k:
                    out[m] = 35  # "#"
                    m += 1
                    i += k
                    continue
                out[m] = c
                m += 1
                i += 1
                continue
            k = _hex_digest(line, i, n, alone)
            if k:
                out[m] = 35  # "#"
                m += 1
                i += k
                continue
            j = i + _hex_run(line, i, n)
            k = i
            while k < j:
                c = line[k]
                if 48 <= c <= 57:
                    while k < j and 48 <= line[k] <= 57:
                        k += 1
                    out[m] = 35
                else:
                    out[m] = c
                    k += 1
                m += 1
            i = j
        return PyUnicode_FromKindAndData(4, out, m)
    finally:
        free(out)

