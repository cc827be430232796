/* SIMD helpers for overspill's kernels.
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

/* ---- bytes of a set, by nibble tables ----
 * A byte b is in the set when lo[b & 15] & hi[b >> 4] is not 0 (exact when
 * each high nibble of the set has a bit of its own).  osp_set_mask32 gives
 * the set's bytes among p[0:32) as bits (p[0:32) must be readable). */
#ifdef OSP_X86
__attribute__((target("avx2")))
static uint32_t osp_set_mask32_avx2(const uint8_t *p, const uint8_t *lo, const uint8_t *hi) {
    const __m256i low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)lo));
    const __m256i high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)hi));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    __m256i hit = _mm256_and_si256(_mm256_shuffle_epi8(low, _mm256_and_si256(v, nibble)),
                                   _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)));
    return ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hit, _mm256_setzero_si256()));
}
#endif

static inline uint32_t osp_set_mask32(const uint8_t *p, const uint8_t *lo, const uint8_t *hi) {
    uint32_t mask = 0;
    int k;
#ifdef OSP_X86
    if (osp_has_avx2()) return osp_set_mask32_avx2(p, lo, hi);
#endif
    for (k = 0; k < 32; k++)
        if (lo[p[k] & 15] & hi[p[k] >> 4]) mask |= (uint32_t)1 << k;
    return mask;
}

/* The leading token of a line p[0:n) as overspill._native._leading_token
 * cuts it (up to a byte of `stops`' set: lo/hi hold the stop bytes, ':' and
 * '/'; "::" does not stop it; at most cap bytes), in one pass that also
 * finds its parts (split at "/" and "::", empty ones skipped): the ends of
 * the first `room` parts go to ends, their count to *parts, and *separated
 * says whether it holds a separator.  p[0:avail) may be read (avail >= n),
 * so the set's bytes are found 32 at a time (SIMD) while the buffer lasts.
 * Returns the token's length. */
static ptrdiff_t osp_scan_token(const uint8_t *p, ptrdiff_t n, ptrdiff_t avail, ptrdiff_t cap, const uint8_t *lo,
                                const uint8_t *hi, ptrdiff_t *ends, ptrdiff_t room, ptrdiff_t *parts,
                                int *separated) {
    ptrdiff_t limit = n < cap ? n : cap, i = 0, start = 0, count = 0, base = 0, j, width, length;
    uint32_t mask = 0;  /* the set's bytes in p[base:base + 32) not yet handled, when have */
    int have = 0, full = 0, found = 0;
    while (i < limit) {
        j = limit;
        while (i < limit) {
            if (!have) {
                if (i + 32 > avail) {
                    for (j = i; j < limit && !(lo[p[j] & 15] & hi[p[j] >> 4]); j++) {}
                    break;
                }
                base = i;
                mask = osp_set_mask32(p + i, lo, hi);
                have = 1;
            }
            if (mask) {
                j = base + __builtin_ctz(mask);
                break;
            }
            i = base + 32;
            have = 0;
        }
        if (j >= limit) {
            i = limit;
            break;
        }
        if (p[j] == '/') {
            width = 1;
        } else if (p[j] == ':' && j + 1 < n && p[j + 1] == ':') {
            if (j + 1 >= cap) {  /* the pair straddles the cap: plain bytes, and the token ends at the cap */
                i = cap;
                break;
            }
            width = 2;
        } else {  /* a stop byte, or a lone ':' */
            i = j;
            break;
        }
        found = 1;
        if (j > start && !full) {
            if (count == room) full = 1;
            else ends[count++] = j;
        }
        i = start = j + width;
        if (have) {
            if (i - base >= 32) have = 0;
            else mask &= ~(uint32_t)0 << (i - base);
        }
    }
    length = i < cap ? i : cap;
    if (length > start && count < room && !full) ends[count++] = length;
    *parts = count;
    *separated = found;
    return length;
}

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

/* ---- CRC-32 (zlib's reflected polynomial 0xEDB88320) ---- */

static uint32_t osp_crc_table[256];
static int osp_crc_table_ready = 0;

static void osp_crc_init(void) {
    if (osp_crc_table_ready) return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        osp_crc_table[n] = c;
    }
    osp_crc_table_ready = 1;
}

/* Byte at a time, on the pre-inverted register: for short heads and tails. */
static uint32_t osp_crc_bytes(uint32_t reg, const uint8_t *p, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) reg = osp_crc_table[(reg ^ p[i]) & 0xFF] ^ (reg >> 8);
    return reg;
}

#ifdef OSP_X86
/* Carry-less-multiply folding (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ", Intel 2009).  Each 128-bit lane is folded
 * forward by D bits as lo(x)*K(D+32) ^ hi(x)*K(D-32), where
 * K(n) = reflect64((x^n mod P(x)) << 32) << 1 for the reflected CRC-32
 * polynomial; benchmarks/crc_constants.py derives every constant below. */
#define OSP_K480 0x01c6e41596LL   /* fold by 512 bits: K(480), K(544) */
#define OSP_K544 0x0154442bd4LL
#define OSP_K96 0x00ccaa009eLL    /* fold by 128 bits: K(96), K(160) */
#define OSP_K160 0x01751997d0LL
#define OSP_K64 0x0163cd6124LL    /* 64 -> 32 bits */
#define OSP_K2016 0x01322d1430LL  /* fold by 2048 bits: K(2016), K(2080) */
#define OSP_K2080 0x011542778aLL
#define OSP_POLY 0x01db710641LL   /* P(x) reflected, and its Barrett quotient */
#define OSP_MU 0x01f7011641LL

#define OSP_FOLD(x, k, next) \
    x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x11), _mm_clmulepi64_si128(x, k, 0x00)), next)

/* Four lanes holding the state of the last 64 bytes: fold the rest of p
 * (n a multiple of 16) into them and reduce to the 32-bit register. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t osp_crc_finish(__m128i x1, __m128i x2, __m128i x3, __m128i x4, const uint8_t *p, ptrdiff_t n) {
    const __m128i fold4 = _mm_set_epi64x(OSP_K480, OSP_K544);
    const __m128i fold1 = _mm_set_epi64x(OSP_K96, OSP_K160);
    const __m128i fold64 = _mm_set_epi64x(0, OSP_K64);
    const __m128i barrett = _mm_set_epi64x(OSP_MU, OSP_POLY);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i t;
    for (; n >= 64; p += 64, n -= 64) {
        OSP_FOLD(x1, fold4, _mm_loadu_si128((const __m128i *)p));
        OSP_FOLD(x2, fold4, _mm_loadu_si128((const __m128i *)(p + 16)));
        OSP_FOLD(x3, fold4, _mm_loadu_si128((const __m128i *)(p + 32)));
        OSP_FOLD(x4, fold4, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    OSP_FOLD(x1, fold1, x2);
    OSP_FOLD(x1, fold1, x3);
    OSP_FOLD(x1, fold1, x4);
    for (; n >= 16; p += 16, n -= 16) {
        OSP_FOLD(x1, fold1, _mm_loadu_si128((const __m128i *)p));
    }
    /* 128 -> 64 bits. */
    t = _mm_clmulepi64_si128(x1, fold1, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
    t = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), fold64, 0x00), t);
    /* Barrett reduction to 32 bits. */
    t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x1, t), 1);
}

/* n a multiple of 16 and at least 64. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t osp_crc_fold(uint32_t reg, const uint8_t *p, ptrdiff_t n) {
    __m128i x1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)reg));
    return osp_crc_finish(x1, _mm_loadu_si128((const __m128i *)(p + 16)), _mm_loadu_si128((const __m128i *)(p + 32)),
                          _mm_loadu_si128((const __m128i *)(p + 48)), p + 64, n - 64);
}

#define OSP_FOLD512(z, k, next) \
    z = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x11), _mm512_clmulepi64_epi128(z, k, 0x00), next, 0x96)

/* Sixteen lanes in four 512-bit registers fold 256 bytes a step; they are
 * folded down to four lanes for osp_crc_finish.  n a multiple of 16, >= 256. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
static uint32_t osp_crc_fold512(uint32_t reg, const uint8_t *p, ptrdiff_t n) {
    const __m512i fold16 = _mm512_broadcast_i32x4(_mm_set_epi64x(OSP_K2016, OSP_K2080));
    const __m512i fold4 = _mm512_broadcast_i32x4(_mm_set_epi64x(OSP_K480, OSP_K544));
    __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),
                                  _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
    __m512i z1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i z2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i z3 = _mm512_loadu_si512((const void *)(p + 192));
    for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
        OSP_FOLD512(z0, fold16, _mm512_loadu_si512((const void *)p));
        OSP_FOLD512(z1, fold16, _mm512_loadu_si512((const void *)(p + 64)));
        OSP_FOLD512(z2, fold16, _mm512_loadu_si512((const void *)(p + 128)));
        OSP_FOLD512(z3, fold16, _mm512_loadu_si512((const void *)(p + 192)));
    }
    OSP_FOLD512(z0, fold4, z1);
    OSP_FOLD512(z0, fold4, z2);
    OSP_FOLD512(z0, fold4, z3);
    return osp_crc_finish(_mm512_extracti32x4_epi32(z0, 0), _mm512_extracti32x4_epi32(z0, 1),
                          _mm512_extracti32x4_epi32(z0, 2), _mm512_extracti32x4_epi32(z0, 3), p, n);
}
#undef OSP_FOLD512
#undef OSP_FOLD

static int osp_has_vpclmul512(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul");
    }
    return cached && osp_simd_cap >= 3;
}

static int osp_has_pclmul(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }
    return cached && osp_simd_cap >= 1;
}
#endif

/* zlib's crc32(crc, p, n): the same values, so either side reads the other's files. */
static uint32_t osp_crc32(uint32_t crc, const uint8_t *p, ptrdiff_t n) {
    uint32_t reg = ~crc;
    osp_crc_init();
#ifdef OSP_X86
    if (n >= 64 && osp_has_pclmul()) {
        ptrdiff_t folded = n & ~(ptrdiff_t)15;
        reg = n >= 256 && osp_has_vpclmul512() ? osp_crc_fold512(reg, p, folded) : osp_crc_fold(reg, p, folded);
        p += folded;
        n -= folded;
    }
#endif
    return ~osp_crc_bytes(reg, p, n);
}

#endif
