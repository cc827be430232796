/* The SIMD dispatch (osp_simd_cap, osp_has_avx2) and the counting loops of each instruction set. */
/* overspill_count.h, overspill_token.h, overspill_utf8.h and overspill_crc.h build on it.
 *
 * Every function reads code units of one width (1, 2 or 4 bytes: bytes, or the
 * storage of a CPython str of that kind) and never writes.  On x86-64 the AVX2
 * path is chosen at run time; SSE2 is the x86-64 baseline, and every other
 * machine gets the portable scalar loop.  All paths return identical results.
 */
#ifndef OVERSPILL_SIMD_H
#define OVERSPILL_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The widest instruction set the dispatchers may use: 0 portable C, 1 SSE2
 * and PCLMUL, 2 AVX2, 3 AVX-512 with VPCLMULQDQ.  Lowered only by the tests,
 * so that every path runs on a machine that would pick the widest. */
static int osp_simd_cap = 3;

/* Counting happens in blocks so a bounded search ("stop after k newlines")
 * reads at most one block past the answer. */
#define OSP_BLOCK ((ptrdiff_t)4096)

static ptrdiff_t osp_count_scalar(const void *data, ptrdiff_t n, int width, uint32_t unit) {
    ptrdiff_t count = 0, i;
    if (width == 1) {
        const uint8_t *p = (const uint8_t *)data;
        for (i = 0; i < n; i++) count += (p[i] == unit);
    } else if (width == 2) {
        const uint16_t *p = (const uint16_t *)data;
        for (i = 0; i < n; i++) count += (p[i] == unit);
    } else {
        const uint32_t *p = (const uint32_t *)data;
        for (i = 0; i < n; i++) count += (p[i] == unit);
    }
    return count;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define OSP_X86 1

/* Bytes: compare 128 bytes per step and subtract the 0/-1 masks into byte
 * accumulators; every 255 steps (before a lane can overflow) fold them into
 * 64-bit sums with SAD.  This is the compare-and-accumulate loop that keeps up
 * with memory bandwidth; movemask+popcount per vector costs ~2x the uops. */
__attribute__((target("avx2")))
static ptrdiff_t osp_count_u8_avx2(const uint8_t *p, ptrdiff_t n, uint8_t byte) {
    const __m256i needle = _mm256_set1_epi8((char)byte);
    const __m256i zero = _mm256_setzero_si256();
    __m256i sums = _mm256_setzero_si256();
    ptrdiff_t i = 0;
    while (n - i >= 128) {
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        ptrdiff_t steps = (n - i) / 128;
        if (steps > 255) steps = 255;
        for (ptrdiff_t s = 0; s < steps; s++, i += 128) {
            a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i)), needle));
            a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 32)), needle));
            a2 = _mm256_sub_epi8(a2, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 64)), needle));
            a3 = _mm256_sub_epi8(a3, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 96)), needle));
        }
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(a0, zero));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(a1, zero));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(a2, zero));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(a3, zero));
    }
    ptrdiff_t count = _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
                      _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
    for (; n - i >= 32; i += 32) {
        __m256i eq = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i)), needle);
        count += __builtin_popcount((unsigned)_mm256_movemask_epi8(eq));
    }
    return count + osp_count_scalar(p + i, n - i, 1, byte);
}

/* Wider units: one compare per lane; movemask yields `width` bits per match. */
__attribute__((target("avx2,popcnt")))
static ptrdiff_t osp_count_wide_avx2(const void *data, ptrdiff_t n, int width, uint32_t unit) {
    const uint8_t *p = (const uint8_t *)data;
    const ptrdiff_t bytes = n * width;
    ptrdiff_t i = 0, bits = 0;
    if (width == 2) {
        const __m256i needle = _mm256_set1_epi16((short)unit);
        for (; bytes - i >= 64; i += 64) {
            __m256i e0 = _mm256_cmpeq_epi16(_mm256_loadu_si256((const __m256i *)(p + i)), needle);
            __m256i e1 = _mm256_cmpeq_epi16(_mm256_loadu_si256((const __m256i *)(p + i + 32)), needle);
            bits += __builtin_popcountll(((uint64_t)(unsigned)_mm256_movemask_epi8(e1) << 32) |
                                         (unsigned)_mm256_movemask_epi8(e0));
        }
    } else {
        const __m256i needle = _mm256_set1_epi32((int)unit);
        for (; bytes - i >= 64; i += 64) {
            __m256i e0 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(p + i)), needle);
            __m256i e1 = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(p + i + 32)), needle);
            bits += __builtin_popcountll(((uint64_t)(unsigned)_mm256_movemask_epi8(e1) << 32) |
                                         (unsigned)_mm256_movemask_epi8(e0));
        }
    }
    return bits / width + osp_count_scalar(p + i, (bytes - i) / width, width, unit);
}

/* SSE2 is always present on x86-64: the fallback when AVX2 is not. */
static ptrdiff_t osp_count_sse2(const void *data, ptrdiff_t n, int width, uint32_t unit) {
    const uint8_t *p = (const uint8_t *)data;
    const ptrdiff_t bytes = n * width;
    ptrdiff_t i = 0, bits = 0;
    __m128i needle = width == 1 ? _mm_set1_epi8((char)unit)
                   : width == 2 ? _mm_set1_epi16((short)unit) : _mm_set1_epi32((int)unit);
    for (; bytes - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i eq = width == 1 ? _mm_cmpeq_epi8(v, needle)
                   : width == 2 ? _mm_cmpeq_epi16(v, needle) : _mm_cmpeq_epi32(v, needle);
        unsigned mask = (unsigned)_mm_movemask_epi8(eq);
        while (mask) { bits++; mask &= mask - 1; }
    }
    return bits / width + osp_count_scalar(p + i, (bytes - i) / width, width, unit);
}

static int osp_has_avx2(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    }
    return cached && osp_simd_cap >= 2;
}
#endif

#endif
