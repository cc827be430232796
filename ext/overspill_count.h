/* Counting code units (osp_count: the widest loop the CPU has), bounded counts and the k-th unit from either end. */
#ifndef OVERSPILL_COUNT_H
#define OVERSPILL_COUNT_H

#include <stddef.h>
#include <stdint.h>

#include "overspill_simd.h"

/* Number of `unit` code units in data[0:n). */
static ptrdiff_t osp_count(const void *data, ptrdiff_t n, int width, uint32_t unit) {
#ifdef OSP_X86
    if (osp_has_avx2())
        return width == 1 ? osp_count_u8_avx2((const uint8_t *)data, n, (uint8_t)unit)
                          : osp_count_wide_avx2(data, n, width, unit);
    if (osp_simd_cap >= 1) return osp_count_sse2(data, n, width, unit);
    return osp_count_scalar(data, n, width, unit);
#else
    return osp_count_scalar(data, n, width, unit);
#endif
}

static inline uint32_t osp_unit(const void *data, int width, ptrdiff_t i) {
    return width == 1 ? ((const uint8_t *)data)[i]
         : width == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
}

/* Newlines in data[0:n), but stop counting at the first block boundary after
 * `limit` are seen (limit < 0: count all).  The result is exact when below
 * `limit`; at or above it, only "at least limit" is promised. */
static ptrdiff_t osp_count_upto(const void *data, ptrdiff_t n, int width, uint32_t unit, ptrdiff_t limit) {
    if (limit < 0) return osp_count(data, n, width, unit);
    const uint8_t *p = (const uint8_t *)data;
    ptrdiff_t found = 0, block = 16 * OSP_BLOCK / width;
    for (ptrdiff_t i = 0; i < n && found < limit; i += block) {
        ptrdiff_t len = n - i < block ? n - i : block;
        found += osp_count(p + i * width, len, width, unit);
    }
    return found;
}

/* Index of the k-th (k >= 1) `unit` from the start of data[0:n), or -1. */
static ptrdiff_t osp_find_nth(const void *data, ptrdiff_t n, int width, uint32_t unit, ptrdiff_t k) {
    const uint8_t *p = (const uint8_t *)data;
    ptrdiff_t block = OSP_BLOCK / width;
    for (ptrdiff_t i = 0; i < n; i += block) {
        ptrdiff_t len = n - i < block ? n - i : block;
        ptrdiff_t c = osp_count(p + i * width, len, width, unit);
        if (c < k) { k -= c; continue; }
        for (ptrdiff_t j = i; j < i + len; j++)
            if (osp_unit(data, width, j) == unit && --k == 0) return j;
    }
    return -1;
}

/* Index of the k-th (k >= 1) `unit` counting back from the end, or -1. */
static ptrdiff_t osp_rfind_nth(const void *data, ptrdiff_t n, int width, uint32_t unit, ptrdiff_t k) {
    const uint8_t *p = (const uint8_t *)data;
    ptrdiff_t block = OSP_BLOCK / width;
    for (ptrdiff_t end = n; end > 0; end -= block) {
        ptrdiff_t start = end > block ? end - block : 0;
        ptrdiff_t c = osp_count(p + start * width, end - start, width, unit);
        if (c < k) { k -= c; continue; }
        for (ptrdiff_t j = end - 1; j >= start; j--)
            if (osp_unit(data, width, j) == unit && --k == 0) return j;
    }
    return -1;
}

#endif
