# C declarations of the ext/overspill_*.h headers (overspill_outline.h has its own, in
# _speedups_outline.pxi), cimported by _speedups.pyx.  Cython includes the headers in
# the order of these blocks: the order their code had as one file, so that the compiled
# functions keep their layout (a hot loop's speed can follow its address).
from libc.stdint cimport int64_t, uint8_t, uint32_t

cdef extern from "overspill_simd.h" nogil:
    int osp_simd_cap

cdef extern from "overspill_token.h" nogil:
    uint32_t osp_set_mask32(const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
    Py_ssize_t osp_scan_token(const uint8_t *p, Py_ssize_t n, Py_ssize_t avail, Py_ssize_t cap, const uint8_t *lo,
                              const uint8_t *hi, Py_ssize_t *ends, Py_ssize_t room, Py_ssize_t *parts,
                              Py_ssize_t *keys, int *separated)

cdef extern from "overspill_count.h" nogil:
    Py_ssize_t osp_count_upto(const void *data, Py_ssize_t n, int width, uint32_t unit, Py_ssize_t limit)
    Py_ssize_t osp_find_nth(const void *data, Py_ssize_t n, int width, uint32_t unit, Py_ssize_t k)
    Py_ssize_t osp_rfind_nth(const void *data, Py_ssize_t n, int width, uint32_t unit, Py_ssize_t k)

cdef extern from "overspill_utf8.h" nogil:
    Py_ssize_t osp_utf8_length(const void *data, Py_ssize_t n, int width)
    Py_ssize_t osp_boundary_at_or_after(const uint8_t *b, Py_ssize_t n, Py_ssize_t pos, int final)
    Py_ssize_t osp_boundary_at_or_before(const uint8_t *b, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t floor, int final)
    void osp_page(const uint8_t *b, Py_ssize_t n, Py_ssize_t offset, Py_ssize_t limit, int final,
                  Py_ssize_t *start_out, Py_ssize_t *end_out)
    Py_ssize_t osp_prefix_fitting(const void *data, int width, Py_ssize_t start, Py_ssize_t end, Py_ssize_t budget)
    Py_ssize_t osp_suffix_fitting(const void *data, int width, Py_ssize_t start, Py_ssize_t end, Py_ssize_t budget)

cdef extern from "overspill_crc.h" nogil:
    uint32_t osp_crc32(uint32_t crc, const uint8_t *p, Py_ssize_t n)
    void osp_crc_init()

cdef extern from "overspill_text.h" nogil:
    int osp_needs_view(const uint8_t *p, Py_ssize_t n, int flags)
    int osp_scan_plain(const uint8_t *p, Py_ssize_t n, int flags, uint8_t *out)
    enum:
        OSP_PLAIN_VIEW
        OSP_PLAIN_WIDE
    int osp_text_fits(const void *data, Py_ssize_t n, int width, Py_ssize_t max_lines, Py_ssize_t max_bytes,
                      int flags)
    Py_ssize_t osp_view(const uint8_t *p, Py_ssize_t n, int flags, uint8_t *out)

cdef extern from "overspill_quoted.h" nogil:
    ctypedef struct osp_quoted:
        int phase
        int64_t old_left
        int64_t new_left
        int midline
    void osp_quoted_begin(osp_quoted *q, const uint8_t *s, Py_ssize_t n, int phase, int64_t old_left,
                          int64_t new_left, int midline)
    void osp_quoted_finish(osp_quoted *q)

cdef extern from "overspill_signals.h" nogil:
    ctypedef struct osp_pattern:
        int kind
        int anchored
        int caseless
        const uint8_t *literal
        Py_ssize_t length
    ctypedef struct osp_hit:
        Py_ssize_t start
        Py_ssize_t end
        int kind
    ctypedef struct osp_scan:
        int kinds
        Py_ssize_t *totals
        osp_hit *hits
        Py_ssize_t hit_count
        Py_ssize_t distinct
        osp_quoted quoted
    int osp_scan_init(osp_scan *scan, const osp_pattern *patterns, int count, int flags, Py_ssize_t limit)
    void osp_scan_free(osp_scan *scan)

cdef extern from "overspill_signal_scan.h" nogil:
    int osp_scan_region(osp_scan *scan, const uint8_t *s, Py_ssize_t n, int flags)
