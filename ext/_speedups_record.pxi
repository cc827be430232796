# Included by _speedups.pyx: the fields of a record as overspill writes it (the twin's
# overspill/_native_record.py), read in one pass for a cold read.

from libc.string cimport memcmp as _record_memcmp

cdef extern from "overspill_hex.h":
    Py_ssize_t osp_hex_run(const uint8_t *p, Py_ssize_t n) noexcept nogil
    void osp_hex_decode(const uint8_t *p, Py_ssize_t pairs, uint8_t *out) noexcept nogil

cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char *data, Py_ssize_t size, const char *errors)
    object PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)
    char *PyBytes_AsString(object data) except NULL


cdef inline Py_ssize_t _record_literal(const uint8_t *p, Py_ssize_t at, Py_ssize_t n, bytes literal) noexcept:
    """Past ``literal`` when the bytes at ``at`` are it, else -1 (also for ``at`` -1)."""
    cdef Py_ssize_t k = PyBytes_GET_SIZE(literal)
    if at < 0 or n - at < k or _record_memcmp(p + at, PyBytes_AS_STRING(literal), k) != 0:
        return -1
    return at + k


cdef inline Py_ssize_t _record_plain(const uint8_t *p, Py_ssize_t at, Py_ssize_t n) noexcept:
    """The closing quote of a string of printable ASCII without a backslash from ``at``, else -1."""
    if at < 0:
        return -1
    while at < n:
        if p[at] == 34:  # "
            return at
        if p[at] < 0x20 or p[at] > 0x7E or p[at] == 92:  # a control character, DEL or beyond, a backslash
            return -1
        at += 1
    return -1


cdef inline Py_ssize_t _record_whole(const uint8_t *p, Py_ssize_t at, Py_ssize_t n, long long *value) noexcept:
    """Past a whole number at ``at`` (no sign, no leading zero, at most 18 digits: below
    RECORD_NUMBER_LIMIT), its value in ``value``; else -1."""
    cdef Py_ssize_t start = at
    cdef long long number = 0
    if at < 0:
        return -1
    while at < n and at - start < 19 and 48 <= p[at] <= 57:
        number = number * 10 + (p[at] - 48)
        at += 1
    if at == start or at - start > 18 or (p[start] == 48 and at - start > 1):
        return -1
    value[0] = number
    return at



def record_fields(data, resource_id, /):
    """``(session, call, mime, name, size, created, checksums, chunk, capture, lines)``
    when ``data`` is exactly what ``record_json`` writes for a finished output of
    ``resource_id``; None for anything else.  See the twin."""
    cdef Py_ssize_t n, k, at, s0, s1, c0, c1, m0, m1, a0 = -1, a1 = -1, h0, h1
    cdef long long size, created, chunk, second, total = 0, stored = 0, lines = -1
    cdef const uint8_t *p
    cdef const uint8_t *rid
    cdef Py_ssize_t rid_length
    cdef bint has_capture = False
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    if not isinstance(resource_id, str):
        raise TypeError(f"resource_id must be a str, not {type(resource_id).__name__}")
    if not PyUnicode_IS_ASCII(resource_id):
        return None
    rid = <const uint8_t *>PyUnicode_DATA(resource_id)
    rid_length = PyUnicode_GET_LENGTH(resource_id)
    for k in range(rid_length):
        if rid[k] < 0x20 or rid[k] > 0x7E or rid[k] == 34 or rid[k] == 92:
            return None
    p = <const uint8_t *>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    at = _record_literal(p, 0, n, b'{"version":1,"id":"')
    if at < 0 or n - at < rid_length or _record_memcmp(p + at, rid, rid_length) != 0:
        return None
    at = _record_literal(p, at + rid_length, n, b'","uri":"tool-output://')
    if at < 0 or n - at < rid_length or _record_memcmp(p + at, rid, rid_length) != 0:
        return None
    s0 = _record_literal(p, at + rid_length, n, b'","sessionID":"')
    s1 = _record_plain(p, s0, n)
    c0 = _record_literal(p, s1, n, b'","toolCallID":"')
    c1 = _record_plain(p, c0, n)
    m0 = _record_literal(p, c1, n, b'","mime":"')
    m1 = _record_plain(p, m0, n)
    at = _record_literal(p, m1, n, b'","')
    if _record_literal(p, at, n, b'name":"') >= 0:
        a0 = at + 7
        a1 = _record_plain(p, a0, n)
        at = _record_literal(p, a1, n, b'","')
    at = _record_whole(p, _record_literal(p, at, n, b'size":'), n, &size)
    at = _record_whole(p, _record_literal(p, at, n, b',"created":'), n, &created)
    at = _record_whole(p, _record_literal(p, at, n, b',"checksums":{"algorithm":"crc32","chunk":'), n, &chunk)
    h0 = _record_literal(p, at, n, b',"values":"')
    if h0 < 0:
        return None
    h1 = h0 + osp_hex_run(p + h0, n - h0)  # lowercase only, as record_json writes it
    at = _record_whole(p, _record_literal(p, h1, n, b'"},"chunk":'), n, &second)
    if at < 0 or second != chunk or chunk < 1:
        return None
    if _record_literal(p, at, n, b',"capture":{"total":') >= 0:
        has_capture = True
        at = _record_whole(p, at + 20, n, &total)
        at = _record_literal(p, _record_whole(p, _record_literal(p, at, n, b',"stored":'), n, &stored), n, b'}')
    if _record_literal(p, at, n, b',"lines":') >= 0:
        at = _record_whole(p, at + 9, n, &lines)
    if _record_literal(p, at, n, b'}') != n:
        return None
    # The checksums cover the size; a capture's stored part is the size.
    if (h1 - h0) != 8 * ((size + chunk - 1) // chunk) or (has_capture and (stored != size or total < stored)):
        return None
    checksums = PyBytes_FromStringAndSize(NULL, (h1 - h0) // 2)
    osp_hex_decode(p + h0, (h1 - h0) // 2, <uint8_t *>PyBytes_AsString(checksums))
    return (PyUnicode_DecodeASCII(<const char *>p + s0, s1 - s0, NULL),
            PyUnicode_DecodeASCII(<const char *>p + c0, c1 - c0, NULL),
            PyUnicode_DecodeASCII(<const char *>p + m0, m1 - m0, NULL),
            None if a0 < 0 else PyUnicode_DecodeASCII(<const char *>p + a0, a1 - a0, NULL),
            size, created, checksums, chunk, (total, stored) if has_capture else None,
            None if lines < 0 else lines)
