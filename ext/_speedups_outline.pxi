# Included by _speedups.pyx: the outline of lines (the twin's overspill/_native_outline.py)
# and the limits the JSON outline shares.
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
