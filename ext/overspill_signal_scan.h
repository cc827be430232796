/* Scanning a region for signal lines (osp_scan_region): the pair filter over clean lines (SIMD), views of the rest. */
#ifndef OVERSPILL_SIGNAL_SCAN_H
#define OVERSPILL_SIGNAL_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "overspill_signals.h"

static inline ptrdiff_t osp_line_end(const uint8_t *s, ptrdiff_t from, ptrdiff_t n) {
    const uint8_t *newline = from < n ? (const uint8_t *)memchr(s + from, '\n', (size_t)(n - from)) : NULL;
    return newline ? newline - s : n;
}

static inline int osp_exact_candidate(const osp_scan *scan, const uint8_t *s, ptrdiff_t i, ptrdiff_t b) {
    if (i + 1 < b) {
        unsigned index = ((unsigned)osp_fold(s[i]) << 8) | (unsigned)osp_fold(s[i + 1]);
        return (int)((scan->pairs[index >> 6] >> (index & 63)) & 1);
    }
    return scan->first[s[i]] || scan->anchored_first[s[i]];
}

/* What a clean-region scan knows of the line it is in. */
typedef struct {
    ptrdiff_t origin;     /* where the region starts (a line start) */
    ptrdiff_t known;      /* a line start at or before every candidate still to come */
    ptrdiff_t start, end; /* the current line [start, end); end < 0 when there is none */
    ptrdiff_t skip;       /* candidates before this are settled */
    int best;
} osp_line_state;

static inline int osp_finish_line(osp_scan *scan, osp_line_state *st) {
    if (st->end >= 0 && st->best < scan->kinds && osp_scan_record(scan, st->start, st->end, st->best) < 0) return -1;
    st->end = -1;
    return 0;
}

/* Whether a pattern matches at pos of the region s[origin:b) (origin a line
 * start).  The verdict is the one osp_line_kind gives in pos's line: no
 * literal holds a newline, and a newline is no word byte, so the line's edges
 * add nothing to the region's.  Most filter hits are pairs inside words, and
 * this settles them before their line is looked for. */
static inline int osp_match_at(const osp_scan *scan, const uint8_t *s, ptrdiff_t origin, ptrdiff_t pos, ptrdiff_t b) {
    uint64_t mask;
    const uint8_t *region = s + origin;
    ptrdiff_t n = b - origin, i = pos - origin;
    for (mask = scan->first[s[pos]]; mask; mask &= mask - 1)
        if (osp_literal_at(region, n, i, &scan->patterns[__builtin_ctzll(mask)])) return 1;
    if (i == 0 || s[pos - 1] == '\n')
        for (mask = scan->anchored_first[s[pos]]; mask; mask &= mask - 1)
            if (osp_literal_at(region, n, i, &scan->patterns[__builtin_ctzll(mask)])) return 1;
    return 0;
}

/* A position the pair filter passed: if the exact pair table agrees, check
 * the patterns there, in the line that holds it.  -1 when memory ran out. */
static inline int osp_candidate(osp_scan *scan, osp_line_state *st, const uint8_t *s, ptrdiff_t pos, ptrdiff_t b) {
    uint64_t mask;
    const uint8_t *text;
    ptrdiff_t length, j;
    if (pos < st->skip || !osp_exact_candidate(scan, s, pos, b) || !osp_match_at(scan, s, st->origin, pos, b)) return 0;
    if (st->end < 0 || pos > st->end) {
        ptrdiff_t line = pos;
        if (osp_finish_line(scan, st) < 0) return -1;
        while (line > st->known && s[line - 1] != '\n') line--;
        st->start = line;
        st->end = osp_line_end(s, pos, b);
        st->known = st->end + 1;
        st->best = scan->kinds;
        if (osp_listing_entry(s + st->start, st->end - st->start)) {
            st->skip = st->end + 1;  /* a listing entry: no signal line, whatever else it holds */
            return 0;
        }
    }
    text = s + st->start;
    length = st->end - st->start;
    j = pos - st->start;
    if (j == 0) {
        for (mask = scan->anchored_first[s[pos]]; mask; mask &= mask - 1) {
            const osp_pattern *p = &scan->patterns[__builtin_ctzll(mask)];
            if (p->kind < st->best && osp_literal_at(text, length, 0, p)) st->best = p->kind;
        }
    }
    for (mask = scan->first[s[pos]]; mask; mask &= mask - 1) {
        const osp_pattern *p = &scan->patterns[__builtin_ctzll(mask)];
        if (p->kind < st->best && osp_literal_at(text, length, j, p)) st->best = p->kind;
    }
    if (st->best <= scan->min_kind) st->skip = st->end + 1;  /* nothing lower left to find in this line */
    return 0;
}

#if defined(OSP_X86)
/* Bytes of v (unsigned) in [low, low + span]. */
__attribute__((target("avx2")))
static inline __m256i osp_in_range(__m256i v, char low, char span) {
    __m256i shifted = _mm256_sub_epi8(v, _mm256_set1_epi8(low));
    return _mm256_cmpeq_epi8(_mm256_min_epu8(shifted, _mm256_set1_epi8(span)), shifted);
}

/* Bucket bits of the bytes of v (already OR 0x20) by two nibble tables. */
__attribute__((target("avx2")))
static inline __m256i osp_buckets(__m256i v, __m256i low, __m256i high) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    return _mm256_and_si256(_mm256_shuffle_epi8(low, _mm256_and_si256(v, nibble)),
                            _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)));
}

/* The pair filter 32 bytes at a time: a position passes when its two bytes
 * (OR 0x20) may form a pattern's pair (nibble tables, 8 buckets) and, when
 * every pattern starts with a word byte, a word boundary lies before it.
 * What passes goes to osp_candidate.  Starts at i > origin (it reads s[i - 1]);
 * returns where it stopped (fewer than 33 bytes left), or -1 when memory ran out. */
__attribute__((target("avx2")))
static ptrdiff_t osp_scan_clean_avx2(osp_scan *scan, osp_line_state *st, const uint8_t *s, ptrdiff_t i, ptrdiff_t b) {
    const __m256i lower = _mm256_set1_epi8(0x20);
    const __m256i first_low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)scan->first_low));
    const __m256i first_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)scan->first_high));
    const __m256i second_low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)scan->second_low));
    const __m256i second_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)scan->second_high));
    const __m256i zero = _mm256_setzero_si256();
    const int word_starts = scan->word_starts;
    for (; i + 33 <= b; i += 32) {
        __m256i here = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i x = _mm256_or_si256(here, lower);
        __m256i y = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(s + i + 1)), lower);
        __m256i pairs = _mm256_and_si256(osp_buckets(x, first_low, first_high), osp_buckets(y, second_low, second_high));
        unsigned mask = ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(pairs, zero));
        if (mask && word_starts) {
            /* osp_start_boundary for a word byte here: before is no word
             * byte, or an uppercase letter here follows a lowercase one, or
             * an uppercase one with a lowercase letter next. */
            __m256i before = _mm256_loadu_si256((const __m256i *)(s + i - 1));
            __m256i next = _mm256_loadu_si256((const __m256i *)(s + i + 1));
            __m256i letter = osp_in_range(_mm256_or_si256(before, lower), 'a', 25);
            __m256i word = _mm256_or_si256(letter, osp_in_range(before, '0', 9));
            __m256i upper_before = osp_in_range(before, 'A', 25);
            __m256i after_lower = _mm256_andnot_si256(upper_before, letter);
            __m256i after_acronym = _mm256_and_si256(upper_before, osp_in_range(next, 'a', 25));
            __m256i case_step = _mm256_and_si256(_mm256_or_si256(after_lower, after_acronym), osp_in_range(here, 'A', 25));
            mask &= ~(unsigned)_mm256_movemask_epi8(_mm256_andnot_si256(case_step, word));
        }
        if (mask && i + 32 <= st->skip) continue;  /* all in a settled line */
        for (; mask; mask &= mask - 1)
            if (osp_candidate(scan, st, s, i + __builtin_ctz(mask), b) < 0) return -1;
    }
    return i;
}
#endif

/* Whole lines s[a:b) that are their own view (a at a line start): a pair
 * filter over the folded bytes (SIMD when it can) finds the few positions
 * worth checking, and only those are looked at. */
static int osp_scan_clean(osp_scan *scan, const uint8_t *s, ptrdiff_t a, ptrdiff_t b) {
    osp_line_state st = {a, a, 0, -1, a, 0};
    ptrdiff_t i = a;
#if defined(OSP_X86)
    if (scan->pair_count > 0 && osp_has_avx2() && i < b) {
        if (osp_candidate(scan, &st, s, i, b) < 0) return -1;
        i = osp_scan_clean_avx2(scan, &st, s, i + 1, b);
        if (i < 0) return -1;
    }
#endif
    for (; i < b; i++)
        if (osp_candidate(scan, &st, s, i, b) < 0) return -1;
    return osp_finish_line(scan, &st);
}

static inline ptrdiff_t osp_next_byte(const uint8_t *s, ptrdiff_t from, ptrdiff_t n, uint8_t byte, int wanted) {
    const uint8_t *found;
    if (!wanted || from >= n) return n;
    found = (const uint8_t *)memchr(s + from, byte, (size_t)(n - from));
    return found ? found - s : n;
}

/* Scan the region s[0:n) (offsets recorded relative to s): runs of clean
 * lines through the pair filter, and each line holding an ESC or \r through
 * its view.  Returns 0, or -1 when memory ran out. */
static int osp_scan_region(osp_scan *scan, const uint8_t *s, ptrdiff_t n, int flags) {
    ptrdiff_t position = 0;
    int ansi = scan->special[OSP_ESC], cr = scan->special['\r'];
    ptrdiff_t next_escape = osp_next_byte(s, 0, n, OSP_ESC, ansi);
    ptrdiff_t next_return = osp_next_byte(s, 0, n, '\r', cr);
    scan->base = s;
    while (position < n) {
        ptrdiff_t dirty = next_escape < next_return ? next_escape : next_return;
        ptrdiff_t line, end;
        int kind;
        if (dirty >= n) return osp_scan_clean(scan, s, position, n);
        line = dirty;
        while (line > position && s[line - 1] != '\n') line--;
        if (osp_scan_clean(scan, s, position, line) < 0) return -1;
        end = osp_line_end(s, dirty, n);
        kind = osp_view_line_kind(scan, s + line, end - line, end < n, flags);
        if (kind < 0) return -1;
        if (kind < scan->kinds && osp_scan_record(scan, line, end, kind) < 0) return -1;
        position = end + 1;
        if (next_escape < position) next_escape = osp_next_byte(s, position, n, OSP_ESC, ansi);
        if (next_return < position) next_return = osp_next_byte(s, position, n, '\r', cr);
    }
    return 0;
}

#endif
