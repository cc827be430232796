/* UTF-8: stored-form sizes of str data (osp_utf8_length, the fitting walks) and page boundaries of byte buffers. */
#ifndef OVERSPILL_UTF8_H
#define OVERSPILL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "overspill_count.h"

/* Bytes >= 0x80 in p[0:n): the extra bytes a Latin-1 str needs in UTF-8. */
static ptrdiff_t osp_count_high_scalar(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t count = 0;
    for (ptrdiff_t i = 0; i < n; i++) count += p[i] >> 7;
    return count;
}

#ifdef OSP_X86
__attribute__((target("avx2,popcnt")))
static ptrdiff_t osp_count_high_avx2(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0, count = 0;
    for (; n - i >= 64; i += 64) {
        unsigned lo = (unsigned)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)(p + i)));
        unsigned hi = (unsigned)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 32)));
        count += __builtin_popcountll(((uint64_t)hi << 32) | lo);
    }
    return count + osp_count_high_scalar(p + i, n - i);
}
#endif

/* Bytes of the stored form (UTF-8, surrogateescape, other lone surrogates as
 * U+FFFD) of n code units of a str of the given kind.  The wide kinds sum
 * into 32-bit block totals, a branch-free loop that -O3 vectorises. */
static ptrdiff_t osp_utf8_length(const void *data, ptrdiff_t n, int width) {
    ptrdiff_t total = n;
    if (width == 1) {
#ifdef OSP_X86
        if (osp_has_avx2()) return total + osp_count_high_avx2((const uint8_t *)data, n);
#endif
        return total + osp_count_high_scalar((const uint8_t *)data, n);
    }
    for (ptrdiff_t start = 0; start < n; start += 1 << 20) {
        ptrdiff_t end = n - start < (1 << 20) ? n : start + (1 << 20);
        uint32_t extra = 0;
        if (width == 2) {
            const uint16_t *p = (const uint16_t *)data;
            for (ptrdiff_t i = start; i < end; i++) {
                uint32_t c = p[i];
                extra += (c >= 0x80) + (c >= 0x800) - 2 * ((c & 0xFF80) == 0xDC80);
            }
        } else {
            const uint32_t *p = (const uint32_t *)data;
            for (ptrdiff_t i = start; i < end; i++) {
                uint32_t c = p[i];
                extra += (c >= 0x80) + (c >= 0x800) + (c >= 0x10000) - 2 * ((c & 0xFFFFFF80) == 0xDC80);
            }
        }
        total += extra;
    }
    return total;
}

/* Stored-form bytes of one code point (see osp_utf8_length). */
static inline int osp_utf8_width(uint32_t c) {
    if (c < 0x80) return 1;
    if (c < 0x800) return 2;
    if ((c & 0xFFFFFF80) == 0xDC80) return 1;
    if (c < 0x10000) return 3;
    return 4;
}

/* ---- UTF-8 boundaries of byte buffers (see overspill/_native_bytes.py) ---- */

static inline int osp_is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

/* Bytes announced by a well-formed lead byte; 0 for any other byte. */
static inline int osp_sequence_length(uint8_t b) {
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

/* Whether a page may start or end at pos (0 <= pos <= n).  With final == 0
 * the buffer is a prefix of the file: its end is no boundary and a sequence cut
 * off by it is assumed to go on. */
static int osp_is_boundary(const uint8_t *b, ptrdiff_t n, ptrdiff_t pos, int final) {
    if (pos >= n) return final;
    if (pos == 0 || !osp_is_continuation(b[pos])) return 1;
    for (ptrdiff_t lead = pos - 1; lead >= 0 && lead >= pos - 3; lead--) {
        if (osp_is_continuation(b[lead])) continue;
        ptrdiff_t end = lead + osp_sequence_length(b[lead]);
        if (end <= pos) return 1;
        ptrdiff_t known = end < n ? end : n;
        for (ptrdiff_t r = pos + 1; r < known; r++)
            if (!osp_is_continuation(b[r])) return 1;
        return end > n && final;
    }
    return 1;
}

/* A run of non-boundaries is at most 3 long, so both walks take O(1) steps. */
static ptrdiff_t osp_boundary_at_or_after(const uint8_t *b, ptrdiff_t n, ptrdiff_t pos, int final) {
    while (pos < n && !osp_is_boundary(b, n, pos, final)) pos++;
    return pos;
}

static ptrdiff_t osp_boundary_at_or_before(const uint8_t *b, ptrdiff_t n, ptrdiff_t pos, ptrdiff_t floor, int final) {
    while (pos > floor && !osp_is_boundary(b, n, pos, final)) pos--;
    return pos;
}

static void osp_page(const uint8_t *b, ptrdiff_t n, ptrdiff_t offset, ptrdiff_t limit, int final,
                     ptrdiff_t *start_out, ptrdiff_t *end_out) {
    ptrdiff_t start = osp_boundary_at_or_after(b, n, offset < n ? offset : n, final);
    ptrdiff_t end = osp_boundary_at_or_before(b, n, limit < n - start ? start + limit : n, start, final);
    if (end == start && start < n) {
        /* Not even one character fits in the limit: the page is that character. */
        end = osp_boundary_at_or_after(b, n, start + 1, final);
        if (end == n && !final) end = start;
    }
    *start_out = start;
    *end_out = end;
}

/* ---- stored-form sizes of str slices, for bounded preview cuts ---- */


/* Code points measured at once by the fitting walks below: whole blocks go
 * through the vectorised osp_utf8_length, only the last one code point by
 * code point. */
#define OSP_FIT_BLOCK ((ptrdiff_t)256)

/* Largest i in [start, end] whose slice [start, i) fits in budget bytes. */
static ptrdiff_t osp_prefix_fitting(const void *data, int width, ptrdiff_t start, ptrdiff_t end, ptrdiff_t budget) {
    const uint8_t *p = (const uint8_t *)data;
    ptrdiff_t used = 0, i = start;
    while (end - i >= OSP_FIT_BLOCK) {
        ptrdiff_t block = osp_utf8_length(p + i * width, OSP_FIT_BLOCK, width);
        if (used + block > budget) break;
        used += block;
        i += OSP_FIT_BLOCK;
    }
    for (; i < end; i++) {
        int w = osp_utf8_width(osp_unit(data, width, i));
        if (used + w > budget) break;
        used += w;
    }
    return i;
}

/* Smallest j in [start, end] whose slice [j, end) fits in budget bytes. */
static ptrdiff_t osp_suffix_fitting(const void *data, int width, ptrdiff_t start, ptrdiff_t end, ptrdiff_t budget) {
    const uint8_t *p = (const uint8_t *)data;
    ptrdiff_t used = 0, j = end;
    while (j - start >= OSP_FIT_BLOCK) {
        ptrdiff_t block = osp_utf8_length(p + (j - OSP_FIT_BLOCK) * width, OSP_FIT_BLOCK, width);
        if (used + block > budget) break;
        used += block;
        j -= OSP_FIT_BLOCK;
    }
    for (; j > start; j--) {
        int w = osp_utf8_width(osp_unit(data, width, j - 1));
        if (used + w > budget) break;
        used += w;
    }
    return j;
}

#endif
