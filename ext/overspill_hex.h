/* Lowercase hex digits, as record_json writes a record's checksums: the length of
 * a run of them (osp_hex_run) and their bytes (osp_hex_decode).
 *
 * A cold read parses its record first, and a record holds 8 digits per 16 KiB
 * of payload (512 for 1 MiB, 32,768 for 64 MiB).  A byte-at-a-time loop that
 * branches on digit-or-letter mispredicts on about every other digit; these
 * take 16 digits per step (SSE2, the x86-64 baseline) and go branch-free in the
 * portable loop.  Both paths give identical results (the tests force each).
 */
#ifndef OVERSPILL_HEX_H
#define OVERSPILL_HEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "overspill_simd.h"

/* The value of a lowercase hex digit ('0'-'9', 'a'-'f'), or -1 for any other byte. */
static inline int osp_hex_value(uint8_t c) {
    unsigned digit = (unsigned)c - '0', letter = (unsigned)c - 'a';
    return digit < 10 ? (int)digit : letter < 6 ? (int)letter + 10 : -1;
}

static ptrdiff_t osp_hex_run_scalar(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
    while (i < n && osp_hex_value(p[i]) >= 0) i++;
    return i;
}

/* Digits 2k and 2k+1 of p (already known to be lowercase hex) into out[k], for k < pairs. */
static void osp_hex_decode_scalar(const uint8_t *p, ptrdiff_t pairs, uint8_t *out) {
    for (ptrdiff_t k = 0; k < pairs; k++) {
        /* For a lowercase hex digit c: (c & 15) + 9 * (c >> 6) is its value, without a branch. */
        uint8_t high = p[2 * k], low = p[2 * k + 1];
        out[k] = (uint8_t)((((high & 15) + 9 * (high >> 6)) << 4) | ((low & 15) + 9 * (low >> 6)));
    }
}

#ifdef OSP_X86
/* Per byte of v: 0xFF where it is a lowercase hex digit. */
static inline __m128i osp_hex_digits16(__m128i v, __m128i *value) {
    const __m128i digit = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    const __m128i letter = _mm_sub_epi8(v, _mm_set1_epi8('a'));
    /* unsigned x <= k exactly when min(x, k) == x */
    const __m128i is_digit = _mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit);
    const __m128i is_letter = _mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(5)), letter);
    *value = _mm_or_si128(_mm_and_si128(is_digit, digit),
                          _mm_and_si128(is_letter, _mm_add_epi8(letter, _mm_set1_epi8(10))));
    return _mm_or_si128(is_digit, is_letter);
}

static ptrdiff_t osp_hex_run_sse2(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
    __m128i value;
    for (; i + 16 <= n; i += 16) {
        const __m128i digits = _mm_loadu_si128((const __m128i *)(p + i));
        unsigned mask = (unsigned)_mm_movemask_epi8(osp_hex_digits16(digits, &value));
        if (mask != 0xFFFFu) return i + __builtin_ctz(~mask);
    }
    return i + osp_hex_run_scalar(p + i, n - i);
}

/* Whether p[0:n) has 7 hex digits of either case in a row, 16 bytes a step
 * (each byte OR 0x20 first: uppercase letters fold onto lowercase ones, and
 * bytes 0x10-0x19 onto digits, a superset that only costs a closer look):
 * each block's digit bits go after the last 6 of the block before, so a row
 * across two blocks is seen; past n, zeros (no digit) are read. */
static int osp_hex_row7_sse2(const uint8_t *p, ptrdiff_t n) {
    uint32_t carry = 0, bits;
    uint8_t tail[16];
    __m128i value, block;
    for (ptrdiff_t i = 0; i < n; i += 16) {
        if (n - i >= 16) {
            block = _mm_loadu_si128((const __m128i *)(p + i));
        } else {
            memset(tail, 0, sizeof tail);
            memcpy(tail, p + i, (size_t)(n - i));
            block = _mm_loadu_si128((const __m128i *)tail);
        }
        block = _mm_or_si128(block, _mm_set1_epi8(0x20));
        bits = carry | ((uint32_t)_mm_movemask_epi8(osp_hex_digits16(block, &value)) << 6);
        if (bits & bits >> 1 & bits >> 2 & bits >> 3 & bits >> 4 & bits >> 5 & bits >> 6) return 1;
        carry = bits >> 16;
    }
    return 0;
}

static void osp_hex_decode_sse2(const uint8_t *p, ptrdiff_t pairs, uint8_t *out) {
    ptrdiff_t k = 0;
    __m128i value;
    for (; k + 8 <= pairs; k += 8) {
        osp_hex_digits16(_mm_loadu_si128((const __m128i *)(p + 2 * k)), &value);
        /* Each 16-bit lane holds a pair: the high digit's value in its low byte. */
        const __m128i high = _mm_and_si128(value, _mm_set1_epi16(0x00FF));
        const __m128i low = _mm_srli_epi16(value, 8);
        const __m128i bytes = _mm_packus_epi16(_mm_or_si128(_mm_slli_epi16(high, 4), low), _mm_setzero_si128());
        _mm_storel_epi64((__m128i *)(out + k), bytes);
    }
    osp_hex_decode_scalar(p + 2 * k, pairs - k, out + k);
}
#endif

/* How many bytes from p (at most n) are lowercase hex digits before any other byte. */
static ptrdiff_t osp_hex_run(const uint8_t *p, ptrdiff_t n) {
#ifdef OSP_X86
    if (osp_simd_cap >= 1) return osp_hex_run_sse2(p, n);
#endif
    return osp_hex_run_scalar(p, n);
}

/* Whether p[0:n) may have 7 hex digits of either case in a row: none, and
 * it has no hex digest nor UUID (an uppercase UUID's last group has 12), so
 * a key needs no closer look.  Each byte OR 0x20, as the SSE2 path. */
static int osp_hex_row7(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0, run = 0;
#ifdef OSP_X86
    if (osp_simd_cap >= 1) return osp_hex_row7_sse2(p, n);
#endif
    for (; i < n; i++)
        if ((run = osp_hex_value((uint8_t)(p[i] | 0x20)) >= 0 ? run + 1 : 0) >= 7) return 1;
    return 0;
}

/* out[k] = the byte of digits 2k, 2k+1 for k < pairs; every digit must be lowercase hex (osp_hex_run). */
static void osp_hex_decode(const uint8_t *p, ptrdiff_t pairs, uint8_t *out) {
#ifdef OSP_X86
    if (osp_simd_cap >= 1) {
        osp_hex_decode_sse2(p, pairs, out);
        return;
    }
#endif
    osp_hex_decode_scalar(p, pairs, out);
}

#endif
