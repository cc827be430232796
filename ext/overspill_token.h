/* A line's leading token and its parts (osp_scan_token), bytes of a set found 32 at a time (osp_set_mask32). */
#ifndef OVERSPILL_TOKEN_H
#define OVERSPILL_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "overspill_simd.h"

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

/* Whether the text of a line from p[k] up to p[n] reaches a '/' before any
 * other byte of the set (lo/hi: the stop bytes, ':' and '/'; a space is a
 * stop byte): after a space in a path, the next word still belongs to it
 * ("./Program Files/x"). */
static inline int osp_path_goes_on(const uint8_t *p, ptrdiff_t k, ptrdiff_t n, const uint8_t *lo, const uint8_t *hi) {
    for (; k < n; k++)
        if (lo[p[k] & 15] & hi[p[k] >> 4]) return p[k] == '/';
    return 0;
}

/* Where a later word of p[k:limit) reaches a '/' that goes on a path a space
 * cut ("./Program Files (x86)/x"), else -1, as _native_outline._path_reaches:
 * the words before it are one space apart and hold no stop byte (a space
 * among them), ':' or '/', but a '(' closed in the same word ("(x86)"); a
 * word starting with '/' is a path of its own ("2024/01/01 GET /api"). */
static inline ptrdiff_t osp_path_reaches(const uint8_t *p, ptrdiff_t k, ptrdiff_t limit) {
    int opened = 0, word_start = 1;
    for (; k < limit; k++) {
        switch (p[k]) {
        case '/':
            return opened || word_start ? -1 : k;
        case ' ':
            if (opened || word_start) return -1;
            word_start = 1;
            continue;
        case '(':
            if (opened) return -1;
            opened = 1;
            break;
        case ')':
            opened = 0;
            break;
        case '\t': case '[': case ',': case ';': case '"': case '\'': case '=': case '<': case '>': case '|':
        case '{': case '}': case 0x1b: case ':':
            return -1;
        default:
            break;
        }
        word_start = 0;
    }
    return -1;
}

/* Whether a path's last part p[0:m), which a space ended, is a whole name
 * all the same: it holds a '.' past its first byte and before its last (a
 * file's extension: "tests/test_a.py ....F") or is all digits (a date's day:
 * "2009/11/10 23:00:00"); else the space may lie inside it ("./Program Files"). */
static inline int osp_whole_name(const uint8_t *p, ptrdiff_t m) {
    ptrdiff_t k;
    int digits = 1;
    for (k = 0; k < m; k++) {
        if (p[k] == '.' && k > 0 && k < m - 1) return 1;
        digits &= p[k] >= '0' && p[k] <= '9';
    }
    return digits;
}

/* The leading token of a line p[0:n) as overspill._native._leading_token
 * cuts it (up to a byte of `stops`' set: lo/hi hold the stop bytes, ':' and
 * '/'; "::" does not stop it, nor a space after a '/' when the next word
 * reaches a '/' (osp_path_goes_on) or, after a last part the space would cut,
 * a later one does (osp_path_reaches); at most cap bytes), in one pass that also
 * finds its parts (split at "/" and "::", empty ones skipped): the ends of
 * the first `room` parts go to ends, their count to *parts, and *separated
 * says whether it holds a separator.  *keys is the parts that may be keys:
 * all but a last one after a '/' that a space ended and that is no whole name
 * (osp_whole_name): no outline names a folder "./Program" for "./Program
 * Files".  p[0:avail) may be read (avail >= n), so the set's bytes are found
 * 32 at a time (SIMD) while the buffer lasts.  Returns the token's length. */
static ptrdiff_t osp_scan_token(const uint8_t *p, ptrdiff_t n, ptrdiff_t avail, ptrdiff_t cap, const uint8_t *lo,
                                const uint8_t *hi, ptrdiff_t *ends, ptrdiff_t room, ptrdiff_t *parts,
                                ptrdiff_t *keys, int *separated) {
    ptrdiff_t limit = n < cap ? n : cap, i = 0, start = 0, count = 0, base = 0, j, width = 0, length, reached = -1;
    uint32_t mask = 0;  /* the set's bytes in p[base:base + 32) not yet handled, when have */
    int have = 0, full = 0, found = 0, slash = 0;
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
        } else if (p[j] == ' ' && slash && (osp_path_goes_on(p, j + 1, n, lo, hi)
                   || (width == 1 && j > start && !osp_whole_name(p + start, j - start)
                       && (reached = osp_path_reaches(p, j + 1, limit)) >= 0))) {
            /* a space inside a folder's name: the token goes on (after a name the
             * space cut, past the words up to the '/' a later one reaches) */
            i = reached >= 0 ? reached : j + 1;
            reached = -1;
            if (have) {
                if (i - base >= 32) have = 0;
                else mask &= ~(uint32_t)0 << (i - base);
            }
            continue;
        } else {  /* a stop byte, or a lone ':' */
            i = j;
            break;
        }
        found = 1;
        slash |= width == 1;
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
    *parts = *keys = count;
    /* (width: the last separator's, 2 for "::": a test id's part has no space) */
    if (length < limit && p[length] == ' ' && count && ends[count - 1] == length && length > start && width == 1
        && !osp_whole_name(p + start, length - start))
        *keys = count - 1;
    *separated = found;
    return length;
}

#endif
