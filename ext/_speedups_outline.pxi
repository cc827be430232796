# Included by _speedups.pyx: the outline of lines (the twin's overspill/_native_outline.py)
# and the limits the JSON outline shares.
# The contract is _native.outline_lines / _native.JsonOutline.  The per-line
# scan is C (overspill_outline.h); this file checks the arguments and builds
# the Python objects, only when a run, a commit or a reported entry begins.
from libc.string cimport memcmp, memset

cdef extern from "overspill_outline.h" nogil:
    enum:
        TOKEN_CAP "OSP_TOKEN_CAP"
        DEPTH_CAP "OSP_DEPTH_CAP"
    ctypedef struct osp_outline:
        const uint8_t *buf
        Py_ssize_t n, position, end, depth
        const uint8_t *lo
        const uint8_t *hi
        Py_ssize_t offset, digits, hash_start, subject_start, subject_end
        int subject_cut
        uint64_t changed
        const uint8_t *token
        Py_ssize_t token_length, parts, keys
        Py_ssize_t ends[DEPTH_CAP + 1]
        Py_ssize_t lines, keyed, lead, commits
        Py_ssize_t run_count[DEPTH_CAP]
        Py_ssize_t run_lines[DEPTH_CAP]
        Py_ssize_t unclaimed
        int run_deeper[DEPTH_CAP]
        int blank
        int oneline
        Py_ssize_t section_length
        uint8_t section[TOKEN_CAP]
    int osp_outline_next(osp_outline *s)
    int osp_outline_below(const osp_outline *s, Py_ssize_t d)
    enum:
        BELOW_SLASH "OSP_BELOW_SLASH"
        BELOW_PAIR "OSP_BELOW_PAIR"

from overspill._buffers import (JSON_KEY_MAX, JSON_LABEL_KEYS, OUTLINE_AFTER_BLANK, OUTLINE_BELOW_PAIR,
                                OUTLINE_BELOW_SLASH, OUTLINE_ONELINE, check_outline_flags)

# What ends a subject cut at SUBJECT_MAX bytes (the twin's _ELLIPSIS).
_ELLIPSIS = "…".encode()

cdef enum:
    KEY_CAP = 65  # JSON_KEY_MAX + 1: bytes of a JSON key or label kept (one more than shown: a cut is known)
    KEYS_CAP = 12
    NESTING_CAP = 4096

assert KEY_CAP == JSON_KEY_MAX + 1
assert (BELOW_SLASH, BELOW_PAIR) == (OUTLINE_BELOW_SLASH, OUTLINE_BELOW_PAIR)

# Bytes that end a line's leading token (a ':' ends it unless "::"; ESC: a colour change).
cdef bint _TOKEN_STOPS[256]
for _byte in range(256):
    _TOKEN_STOPS[_byte] = _byte in b" \t[(,;\"'=<>|{}\x1b"


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


def outline_lines(buffer, start, end, section, max_depth, max_runs, max_commits, flags=0, /):
    """Runs of lines by path prefix, and commits; see _native.outline_lines."""
    cdef osp_outline scan
    cdef Py_ssize_t kept[2]  # max_runs, max_commits
    cdef Py_buffer buf
    if isinstance(buffer, str):
        raise TypeError("buffer must be a bytes-like object, not str")
    _bytes_of(buffer, &buf)
    try:
        _outline_arguments(&scan, start, end, section, max_depth, max_runs, max_commits, kept)
        flags = check_outline_flags(flags)
        scan.blank = (flags & OUTLINE_AFTER_BLANK) != 0
        scan.oneline = (flags & OUTLINE_ONELINE) != 0
        runs = [[] for _ in range(scan.depth)]
        open_runs = [None] * scan.depth  # (key, offset) of each depth's current run
        commits = _OutlineCommits(kept[1])
        scan.n = buf.len
        if scan.end > scan.n or scan.position > scan.end:
            raise ValueError(f"start and end must satisfy 0 <= start <= end <= {scan.n}")
        if scan.n:
            scan.buf = <const unsigned char *>buf.buf
        while osp_outline_next(&scan):
            if scan.digits or scan.subject_end > scan.subject_start:
                commits.line(&scan)
            if scan.changed:
                _outline_runs(&scan, runs, open_runs, kept[0])
    finally:
        PyBuffer_Release(&buf)
    for d in range(scan.depth):
        if scan.run_count[d] > 0:
            _end_run(&scan, runs, open_runs, d)
    return (runs, scan.lead, scan.lines, scan.keyed, (<const uint8_t *>scan.section)[:scan.section_length],
            commits.kept(), scan.commits, scan.unclaimed)


cdef int _outline_arguments(osp_outline *s, start, end, section, max_depth, max_runs, max_commits,
                            Py_ssize_t *kept) except -1:
    """outline_lines' arguments after its buffer, each checked alone in order (as the twin's
    _outline_arguments), into a zeroed *s; kept: max_runs, max_commits."""
    memset(s, 0, sizeof(osp_outline))
    s.position = _check_int(start, "start", 0)
    s.end = _check_int(end, "end", 0)
    if not isinstance(section, bytes):
        raise TypeError(f"section must be bytes, not {type(section).__name__}")
    s.section_length = PyBytes_GET_SIZE(section)
    if s.section_length > TOKEN_CAP:
        raise ValueError(f"section must be at most {TOKEN_CAP} bytes, not {s.section_length}")
    memcpy(s.section, PyBytes_AS_STRING(section), s.section_length)
    s.depth = _check_int(max_depth, "max_depth", 1)
    if s.depth > DEPTH_CAP:
        raise ValueError(f"max_depth must be at most {DEPTH_CAP}, not {s.depth}")
    kept[0] = _check_int(max_runs, "max_runs", 1)
    kept[1] = _check_int(max_commits, "max_commits", 0)
    s.lo = _SPECIAL_LOW
    s.hi = _SPECIAL_HIGH
    return 0


cdef int _outline_runs(osp_outline *s, list runs, list open_runs, Py_ssize_t max_runs) except -1:
    """At each depth osp_outline_next flagged, the run ends and one begins at the line at s.offset."""
    cdef Py_ssize_t d, key_length
    for d in range(s.depth):
        if not (s.changed >> d) & 1:
            continue
        if s.run_count[d] > 0:
            _end_run(s, runs, open_runs, d)
        if s.run_count[d] >= max_runs:
            s.run_count[d] = -1  # this depth has too many runs: it is None
            runs[d] = None
            continue
        s.run_count[d] += 1
        key_length = s.ends[min(d + 1, s.keys) - 1] if s.keys else s.token_length
        open_runs[d] = (s.token[:key_length], s.offset)
        s.run_lines[d] = 1
        s.run_deeper[d] = osp_outline_below(s, d)
    return 0


cdef int _end_run(osp_outline *s, list runs, list open_runs, Py_ssize_t d) except -1:
    key, offset = open_runs[d]
    runs[d].append((key, offset, s.run_lines[d], s.run_deeper[d]))
    return 0


cdef class _OutlineCommits:
    """The first and the last `limit` commits of outline_lines, each with its subject once found."""
    cdef list first, last
    cdef object pending  # the latest commit still without a subject
    cdef Py_ssize_t limit

    def __cinit__(self, Py_ssize_t limit):
        self.first = []
        self.last = []
        self.limit = limit

    cdef int line(self, osp_outline *s) except -1:
        """The line at s.offset: a commit (with its subject, on one line), or the pending commit's subject."""
        if s.digits:
            self.pending = [s.offset, s.buf[s.hash_start : s.hash_start + min(s.digits, 12)], None]
            if len(self.first) < self.limit:
                self.first.append(self.pending)
            elif self.limit:
                self.last.append(self.pending)
                if len(self.last) > self.limit:
                    del self.last[0]
        if s.subject_end > s.subject_start:
            self.pending[2] = s.buf[s.subject_start : s.subject_end] + (_ELLIPSIS if s.subject_cut else b"")
            self.pending = None
        return 0

    cdef list kept(self):
        return [tuple(commit) for commit in self.first + self.last]
