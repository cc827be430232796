/* Views and signal scanning for overspill's kernels (see overspill/_native_text.py,
 * the readable specification: view_bytes and signal_lines).
 *
 * Everything here reads bytes and writes only into buffers it is given or
 * allocates itself; nothing touches Python objects, so callers may drop the
 * GIL around it.
 */
#ifndef OVERSPILL_TEXT_H
#define OVERSPILL_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "overspill_simd.h"

#define OSP_VIEW_ANSI 1
#define OSP_VIEW_CR 2
#define OSP_ESC 0x1b

/* Length of the escape sequence that starts at p[0] == ESC (at least 1):
 * CSI (ESC [ params intermediates final?), OSC (ESC ] text up to BEL or
 * ESC \, never past a newline or another ESC), or ESC intermediates final?. */
static ptrdiff_t osp_escape_length(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t j = 1;
    if (j < n && p[j] == '[') {
        j++;
        while (j < n && p[j] >= 0x30 && p[j] <= 0x3f) j++;
        while (j < n && p[j] >= 0x20 && p[j] <= 0x2f) j++;
        if (j < n && p[j] >= 0x40 && p[j] <= 0x7e) j++;
        return j;
    }
    if (j < n && p[j] == ']') {
        j++;
        while (j < n && p[j] != 0x07 && p[j] != OSP_ESC && p[j] != '\n') j++;
        if (j < n && p[j] == 0x07) j++;
        else if (j + 1 < n && p[j] == OSP_ESC && p[j + 1] == '\\') j += 2;
        return j;
    }
    while (j < n && p[j] >= 0x20 && p[j] <= 0x2f) j++;
    if (j < n && p[j] >= 0x30 && p[j] <= 0x7e) j++;
    return j;
}

/* Whether the view of p[0:n) differs from it: an ESC (with ANSI) or a lone
 * \r, one not followed by \n (with CR). */
static int osp_needs_view(const uint8_t *p, ptrdiff_t n, int flags) {
    if ((flags & OSP_VIEW_ANSI) && n && memchr(p, OSP_ESC, (size_t)n)) return 1;
    if (flags & OSP_VIEW_CR) {
        const uint8_t *q = p, *end = p + n;
        while (q < end && (q = (const uint8_t *)memchr(q, '\r', (size_t)(end - q))) != NULL) {
            if (q + 1 >= end || q[1] != '\n') return 1;
            q += 2;
        }
    }
    return 0;
}

/* ---- a page's text in one pass (osp_scan_plain) ----
 * The result's bits: the view of p[0:n) differs from it (an ESC with ANSI, a
 * lone \r with CR: osp_needs_view), and p[0:n) holds a byte >= 0x80.  While
 * neither is seen, p is copied to out (when out is not NULL): a result of 0
 * means out holds p[0:n), the text as it is shown.  The scan stops at the
 * first sign of a view (the caller takes the general path); past the first
 * non-ASCII byte it only looks for one. */
#define OSP_PLAIN_VIEW 1
#define OSP_PLAIN_WIDE 2

/* Whether the \r at p[at] is lone: not followed by \n inside p[0:n). */
static inline int osp_lone_cr(const uint8_t *p, ptrdiff_t n, ptrdiff_t at) {
    return at + 1 >= n || p[at + 1] != '\n';
}

static int osp_scan_plain_scalar(const uint8_t *p, ptrdiff_t n, int flags, uint8_t *out, ptrdiff_t i, int state) {
    const int ansi = flags & OSP_VIEW_ANSI, redraw = flags & OSP_VIEW_CR;
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    /* Eight bytes a step: a word has a byte equal to c when haszero(w ^ c*ones). */
    for (; n - i >= 8; i += 8) {
        uint64_t w, e, r;
        memcpy(&w, p + i, 8);
        if (!state && out) memcpy(out + i, &w, 8);
        if (w & highs) state |= OSP_PLAIN_WIDE;
        e = w ^ (ones * OSP_ESC);
        r = w ^ (ones * '\r');
        if ((ansi && ((e - ones) & ~e & highs)) || (redraw && ((r - ones) & ~r & highs))) {
            /* A candidate (the word trick can flag a neighbour of a real hit): decide byte by byte. */
            for (ptrdiff_t j = i; j < i + 8; j++) {
                if (ansi && p[j] == OSP_ESC) return state | OSP_PLAIN_VIEW;
                if (redraw && p[j] == '\r' && osp_lone_cr(p, n, j)) return state | OSP_PLAIN_VIEW;
            }
        }
    }
    for (; i < n; i++) {
        uint8_t b = p[i];
        if (!state && out) out[i] = b;
        if (b >= 0x80) state |= OSP_PLAIN_WIDE;
        if (ansi && b == OSP_ESC) return state | OSP_PLAIN_VIEW;
        if (redraw && b == '\r' && osp_lone_cr(p, n, i)) return state | OSP_PLAIN_VIEW;
    }
    return state;
}

#if defined(OSP_X86)
/* The close look at one 128-byte step of osp_scan_plain_avx2 that has
 * something other than plain ASCII in it: the state after it. */
__attribute__((target("avx2"), noinline))
static int osp_scan_plain_step(const uint8_t *p, ptrdiff_t n, int flags, ptrdiff_t i, int state) {
    const __m256i esc = _mm256_set1_epi8(OSP_ESC), cr = _mm256_set1_epi8('\r');
    for (ptrdiff_t at = i; at < i + 128; at += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + at));
        unsigned found;
        if (_mm256_movemask_epi8(v)) state |= OSP_PLAIN_WIDE;
        if ((flags & OSP_VIEW_ANSI) && _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, esc))) return state | OSP_PLAIN_VIEW;
        if (!(flags & OSP_VIEW_CR)) continue;
        for (found = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, cr)); found; found &= found - 1)
            if (osp_lone_cr(p, n, at + __builtin_ctz(found))) return state | OSP_PLAIN_VIEW;
    }
    return state;
}

/* 128 bytes a step: one test of all four vectors for anything that is not
 * plain ASCII (a high bit, an ESC, a \r); only a step that has one is looked
 * at closely.  Text with no view to apply is copied at memcpy's pace. */
__attribute__((target("avx2")))
static int osp_scan_plain_avx2(const uint8_t *p, ptrdiff_t n, int flags, uint8_t *out) {
    const __m256i esc = _mm256_set1_epi8(OSP_ESC), cr = _mm256_set1_epi8('\r');
    /* Masks that switch a test off: ANDed with its vector, or ORed into a high-bit test. */
    const __m256i ansi = _mm256_set1_epi8((flags & OSP_VIEW_ANSI) ? -1 : 0);
    const __m256i redraw = _mm256_set1_epi8((flags & OSP_VIEW_CR) ? -1 : 0);
    __m256i ascii = _mm256_set1_epi8(-1);
    int state = 0;
    ptrdiff_t i = 0;
    for (; n - i >= 128; i += 128) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(p + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        const __m256i c = _mm256_loadu_si256((const __m256i *)(p + i + 64));
        const __m256i d = _mm256_loadu_si256((const __m256i *)(p + i + 96));
        __m256i any, escapes, returns;
        if (!state && out) {
            _mm256_storeu_si256((__m256i *)(out + i), a);
            _mm256_storeu_si256((__m256i *)(out + i + 32), b);
            _mm256_storeu_si256((__m256i *)(out + i + 64), c);
            _mm256_storeu_si256((__m256i *)(out + i + 96), d);
        }
        any = _mm256_and_si256(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)), ascii);
        escapes = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, esc), _mm256_cmpeq_epi8(b, esc)),
                                  _mm256_or_si256(_mm256_cmpeq_epi8(c, esc), _mm256_cmpeq_epi8(d, esc)));
        returns = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, cr), _mm256_cmpeq_epi8(b, cr)),
                                  _mm256_or_si256(_mm256_cmpeq_epi8(c, cr), _mm256_cmpeq_epi8(d, cr)));
        any = _mm256_or_si256(any, _mm256_or_si256(_mm256_and_si256(escapes, ansi), _mm256_and_si256(returns, redraw)));
        if (!_mm256_movemask_epi8(any)) continue;
        state = osp_scan_plain_step(p, n, flags, i, state);
        if (state & OSP_PLAIN_VIEW) return state;
        if (state & OSP_PLAIN_WIDE) ascii = _mm256_setzero_si256();  /* known now: look for views only */
    }
    return osp_scan_plain_scalar(p, n, flags, out, i, state);
}
#endif

static int osp_scan_plain(const uint8_t *p, ptrdiff_t n, int flags, uint8_t *out) {
#if defined(OSP_X86)
    if (osp_has_avx2()) return osp_scan_plain_avx2(p, n, flags, out);
#endif
    return osp_scan_plain_scalar(p, n, flags, out, 0, 0);
}

/* Whether the lone \r test fails anywhere in the str data[0:n): a \r whose
 * next code unit is not \n. */
static int osp_text_lone_cr(const void *data, ptrdiff_t n, int width) {
    for (ptrdiff_t i = 0; i < n; i++)
        if (osp_unit(data, width, i) == '\r' && (i + 1 >= n || osp_unit(data, width, i + 1) != '\n')) return 1;
    return 0;
}

#if defined(OSP_X86)
/* The one pass of osp_text_fits over a 1-byte-kind str: newlines, bytes that
 * take two in UTF-8, ESC and \r, 32 bytes a step. */
__attribute__((target("avx2,popcnt")))
static int osp_text_fits_avx2(const uint8_t *p, ptrdiff_t n, ptrdiff_t max_lines, ptrdiff_t max_bytes, int flags) {
    const __m256i newline = _mm256_set1_epi8('\n'), esc = _mm256_set1_epi8(OSP_ESC), cr = _mm256_set1_epi8('\r');
    const int ansi = flags & OSP_VIEW_ANSI, redraw = flags & OSP_VIEW_CR;
    ptrdiff_t newlines = 0, high = 0, i = 0;
    for (; n - i >= 32; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
        unsigned returns = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, cr));
        if (ansi && _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, esc))) return 0;
        if (redraw) {
            for (; returns; returns &= returns - 1) {
                ptrdiff_t at = i + __builtin_ctz(returns);
                if (at + 1 >= n || p[at + 1] != '\n') return 0;
            }
        }
        newlines += __builtin_popcount((unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, newline)));
        high += __builtin_popcount((unsigned)_mm256_movemask_epi8(v));
    }
    for (; i < n; i++) {
        uint8_t b = p[i];
        if (ansi && b == OSP_ESC) return 0;
        if (redraw && b == '\r' && (i + 1 >= n || p[i + 1] != '\n')) return 0;
        newlines += b == '\n';
        high += b >> 7;
    }
    return newlines < max_lines && n + high <= max_bytes;
}
#endif

/* Whether a str (n code units of the given width) is shown as it is: its own
 * view for flags (no ESC with ANSI, no lone \r with CR), fewer than max_lines
 * newlines and at most max_bytes bytes in its stored form (osp_utf8_length).
 * The check almost every tool output takes, so one pass where it can be. */
static int osp_text_fits(const void *data, ptrdiff_t n, int width, ptrdiff_t max_lines, ptrdiff_t max_bytes,
                         int flags) {
    if (n > max_bytes) return 0;  /* every code point takes at least one byte */
#if defined(OSP_X86)
    if (width == 1 && osp_has_avx2()) return osp_text_fits_avx2((const uint8_t *)data, n, max_lines, max_bytes, flags);
#endif
    if ((flags & OSP_VIEW_ANSI) && osp_count(data, n, width, OSP_ESC)) return 0;
    if ((flags & OSP_VIEW_CR) && osp_count(data, n, width, '\r') && osp_text_lone_cr(data, n, width)) return 0;
    if (osp_count_upto(data, n, width, '\n', max_lines) >= max_lines) return 0;
    return osp_utf8_length(data, n, width) <= max_bytes;
}

/* A line's segment between lone \r: keep it if non-empty (it replaces what
 * was kept), else keep the earlier one.  out[line:seg) is what is kept,
 * out[seg:pos) the segment just ended; returns the new pos (= new seg). */
static ptrdiff_t osp_end_segment(uint8_t *out, ptrdiff_t line, ptrdiff_t seg, ptrdiff_t pos) {
    if (pos > seg) {
        memmove(out + line, out + seg, (size_t)(pos - seg));
        return line + (pos - seg);
    }
    return seg;
}

/* The view of in[0:n) into out (room for n bytes); returns its length.
 * Escapes are removed first; then each line keeps its last non-empty segment
 * between lone \r, and a \r just before \n stays as the line's ending. */
static ptrdiff_t osp_view(const uint8_t *in, ptrdiff_t n, int flags, uint8_t *out) {
    ptrdiff_t i = 0, pos = 0, line = 0, seg = 0;
    int pending = 0, ansi = flags & OSP_VIEW_ANSI, cr = flags & OSP_VIEW_CR;
    while (i < n) {
        uint8_t b = in[i];
        if (b == OSP_ESC && ansi) {
            i += osp_escape_length(in + i, n - i);
            continue;
        }
        i++;
        if (cr && b == '\r') {
            if (pending) seg = pos = osp_end_segment(out, line, seg, pos);
            pending = 1;
            continue;
        }
        if (cr && b == '\n') {
            pos = osp_end_segment(out, line, seg, pos);
            if (pending) out[pos++] = '\r';
            out[pos++] = '\n';
            line = seg = pos;
            pending = 0;
            continue;
        }
        if (pending) {
            seg = pos = osp_end_segment(out, line, seg, pos);
            pending = 0;
        }
        out[pos++] = b;
    }
    if (cr) {
        if (pending) seg = pos = osp_end_segment(out, line, seg, pos);
        pos = osp_end_segment(out, line, seg, pos);
    }
    return pos;
}

/* ---------------------------------------------------------------- signals */

typedef struct {
    int kind;
    int anchored;
    int caseless;
    const uint8_t *literal;
    ptrdiff_t length;
} osp_pattern;

typedef struct {
    ptrdiff_t start, end;
    int kind;
} osp_hit;

typedef struct {
    const osp_pattern *patterns;
    int count;
    int kinds;
    int min_kind;
    uint64_t first[256];       /* unanchored patterns that may start with a byte */
    uint8_t special[256];      /* bytes that change a line's view */
    uint64_t pairs[1024];      /* folded first two bytes of any pattern (65536 bits) */
    uint64_t anchored_first[256]; /* anchored patterns by first byte */
    int pair_count;            /* distinct first-two-byte pairs, each byte OR 0x20, for SIMD */
    uint8_t pair_first[64], pair_second[64];
    /* The SIMD filter's tables: pair q is in bucket q % 8; a byte b (OR 0x20)
     * may be a pair's first byte only if first_low[b & 15] & first_high[b >> 4]
     * has its bucket's bit (likewise second_*), so their AND over both bytes
     * passes every pair, and some others that the exact table then drops. */
    uint8_t first_low[16], first_high[16], second_low[16], second_high[16];
    /* Every pattern starts with a word byte, so a match needs a word boundary
     * before it (anchored ones a newline, which is one too). */
    int word_starts;
    ptrdiff_t limit;           /* hits kept per kind */
    ptrdiff_t *totals;         /* per kind */
    ptrdiff_t *kept;           /* per kind */
    osp_hit *hits;
    ptrdiff_t hit_count, hit_room;
    uint8_t *scratch;
    ptrdiff_t scratch_room;
} osp_scan;

static inline int osp_is_word(uint8_t b) {
    return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
}
static inline uint8_t osp_fold(uint8_t b) { return (b >= 'A' && b <= 'Z') ? (uint8_t)(b + 32) : b; }

static inline int osp_is_lower(uint8_t b) { return b >= 'a' && b <= 'z'; }
static inline int osp_is_upper(uint8_t b) { return b >= 'A' && b <= 'Z'; }

/* Where a match of a literal that starts with a word byte may begin, at i > 0
 * of s[0:n): not inside a word, except where a capitalised word starts in
 * camel case: after a lowercase letter ("ValueError") or, as an acronym ends,
 * after an uppercase one when a lowercase letter follows ("HTTPError"). */
static inline int osp_start_boundary(const uint8_t *s, ptrdiff_t n, ptrdiff_t i) {
    uint8_t a = s[i - 1], b = s[i];
    if (!(osp_is_word(a) && osp_is_word(b))) return 1;
    if (!osp_is_upper(b)) return 0;
    return osp_is_lower(a) || (osp_is_upper(a) && i + 1 < n && osp_is_lower(s[i + 1]));
}

/* Whether the match s[i:e) is a whole quoted object key: right after '"'
 * and right before '"', spaces or tabs, then ':' ("summary": in a JSON
 * document is a field's name; "level":"error" and "error: boom" are not
 * keys).  No newline is skipped, so a line's verdict is its own. */
static inline int osp_is_key(const uint8_t *s, ptrdiff_t n, ptrdiff_t i, ptrdiff_t e) {
    if (i == 0 || s[i - 1] != '"' || e >= n || s[e] != '"') return 0;
    for (e++; e < n && (s[e] == ' ' || s[e] == '\t'); e++) {}
    return e < n && s[e] == ':';
}

/* Whether the match s[i:e) of a signal literal is part of a name (a path, a
 * file, an identifier, a hyphenated word, an object key) rather than a
 * diagnostic: right after "/", "\\", "_", "::" or "word-", or right before
 * "_", "/", "(", "::", ".x" or "-x" (x a word byte); each such edge counts
 * only when the literal's byte there is a word byte.  Or the whole of a
 * quoted object key (osp_is_key).  A newline is none of these bytes, so
 * lines read together or apart get the same verdict. */
static inline int osp_in_name(const uint8_t *s, ptrdiff_t n, ptrdiff_t i, ptrdiff_t e, int start_word, int end_word) {
    if (osp_is_key(s, n, i, e)) return 1;
    if (start_word && i > 0) {
        uint8_t a = s[i - 1];
        if (a == '/' || a == '\\' || a == '_') return 1;
        if (i > 1 && ((a == '-' && osp_is_word(s[i - 2])) || (a == ':' && s[i - 2] == ':'))) return 1;
    }
    if (end_word && e < n) {
        uint8_t z = s[e];
        if (z == '_' || z == '/' || z == '(') return 1;
        if (e + 1 < n && (((z == '.' || z == '-') && osp_is_word(s[e + 1])) || (z == ':' && s[e + 1] == ':'))) return 1;
    }
    return 0;
}

static int osp_literal_at(const uint8_t *s, ptrdiff_t n, ptrdiff_t i, const osp_pattern *p) {
    ptrdiff_t k, len = p->length;
    int start_word, end_word;
    if (i + len > n) return 0;
    if (p->caseless) {
        for (k = 0; k < len; k++) if (osp_fold(s[i + k]) != osp_fold(p->literal[k])) return 0;
    } else if (memcmp(s + i, p->literal, (size_t)len) != 0) {
        return 0;
    }
    if (p->anchored) return 1;
    start_word = osp_is_word(p->literal[0]);
    end_word = osp_is_word(p->literal[len - 1]);
    if (start_word && i > 0 && !osp_start_boundary(s, n, i)) return 0;
    /* At the end, no camel case: "ErrorHandler" is a name. */
    if (end_word && i + len < n && osp_is_word(s[i + len])) return 0;
    return !osp_in_name(s, n, i, i + len, start_word, end_word);
}

/* The lowest kind matched in the line s[0:n) (already a view), or kinds. */
static int osp_line_kind(const osp_scan *scan, const uint8_t *s, ptrdiff_t n) {
    int best = scan->kinds, k;
    ptrdiff_t i;
    for (k = 0; k < scan->count; k++) {
        const osp_pattern *p = &scan->patterns[k];
        if (p->anchored && p->kind < best && osp_literal_at(s, n, 0, p)) best = p->kind;
    }
    for (i = 0; i < n && best > scan->min_kind; i++) {
        uint64_t mask = scan->first[s[i]];
        while (mask) {
            int index = __builtin_ctzll(mask);
            const osp_pattern *p = &scan->patterns[index];
            mask &= mask - 1;
            if (p->kind < best && osp_literal_at(s, n, i, p)) best = p->kind;
        }
    }
    return best;
}

static int osp_scan_init(osp_scan *scan, const osp_pattern *patterns, int count, int flags, ptrdiff_t limit) {
    int k, kinds = 0, min_kind = 1 << 30;
    memset(scan, 0, sizeof(*scan));
    scan->patterns = patterns;
    scan->count = count;
    scan->limit = limit;
    for (k = 0; k < count; k++) {
        const osp_pattern *p = &patterns[k];
        if (p->kind + 1 > kinds) kinds = p->kind + 1;
        if (p->kind < min_kind) min_kind = p->kind;
        uint8_t b = p->literal[0];
        uint64_t *table = p->anchored ? scan->anchored_first : scan->first;
        table[b] |= (uint64_t)1 << k;
        if (p->caseless) {
            if (b >= 'a' && b <= 'z') table[b - 32] |= (uint64_t)1 << k;
            if (b >= 'A' && b <= 'Z') table[b + 32] |= (uint64_t)1 << k;
        }
        /* The pair filter works on folded bytes: a superset of every match. */
        if (p->length == 1) {
            for (int second = 0; second < 256; second++) {
                unsigned index = ((unsigned)osp_fold(b) << 8) | (unsigned)second;
                scan->pairs[index >> 6] |= (uint64_t)1 << (index & 63);
            }
        } else {
            unsigned index = ((unsigned)osp_fold(b) << 8) | (unsigned)osp_fold(p->literal[1]);
            scan->pairs[index >> 6] |= (uint64_t)1 << (index & 63);
        }
        /* The SIMD filter compares bytes OR 0x20 (fold(x) | 0x20 == x | 0x20,
         * so it passes every position the exact pair table passes). */
        if (scan->pair_count >= 0) {
            uint8_t first = (uint8_t)(b | 0x20), second = (uint8_t)(p->length > 1 ? (p->literal[1] | 0x20) : 0);
            int seen = 0;
            if (p->length == 1) {
                scan->pair_count = -1;  /* any second byte: no pair filter */
            } else {
                for (int q = 0; q < scan->pair_count; q++)
                    seen |= scan->pair_first[q] == first && scan->pair_second[q] == second;
                if (!seen) {
                    scan->pair_first[scan->pair_count] = first;
                    scan->pair_second[scan->pair_count] = second;
                    scan->pair_count++;
                }
            }
        }
    }
    scan->word_starts = count > 0;
    for (k = 0; k < count; k++) scan->word_starts &= osp_is_word(patterns[k].literal[0]);
    for (k = 0; k < scan->pair_count; k++) {
        uint8_t bit = (uint8_t)(1u << (k & 7)), first = scan->pair_first[k], second = scan->pair_second[k];
        scan->first_low[first & 15] |= bit;
        scan->first_high[first >> 4] |= bit;
        scan->second_low[second & 15] |= bit;
        scan->second_high[second >> 4] |= bit;
    }
    scan->kinds = kinds;
    scan->min_kind = min_kind;
    if (flags & OSP_VIEW_ANSI) scan->special[OSP_ESC] = 1;
    if (flags & OSP_VIEW_CR) scan->special['\r'] = 1;
    scan->totals = (ptrdiff_t *)calloc((size_t)(kinds + 1), sizeof(ptrdiff_t));
    scan->kept = (ptrdiff_t *)calloc((size_t)(kinds + 1), sizeof(ptrdiff_t));
    return (scan->totals && scan->kept) ? 0 : -1;
}

static void osp_scan_free(osp_scan *scan) {
    free(scan->totals);
    free(scan->kept);
    free(scan->hits);
    free(scan->scratch);
}

static int osp_scan_record(osp_scan *scan, ptrdiff_t start, ptrdiff_t end, int kind) {
    scan->totals[kind]++;
    if (scan->kept[kind] >= scan->limit) return 0;
    if (scan->hit_count == scan->hit_room) {
        ptrdiff_t room = scan->hit_room ? scan->hit_room * 2 : 64;
        osp_hit *grown = (osp_hit *)realloc(scan->hits, (size_t)room * sizeof(osp_hit));
        if (!grown) return -1;
        scan->hits = grown;
        scan->hit_room = room;
    }
    scan->hits[scan->hit_count].start = start;
    scan->hits[scan->hit_count].end = end;
    scan->hits[scan->hit_count].kind = kind;
    scan->hit_count++;
    scan->kept[kind]++;
    return 0;
}

/* The kind of the line s[0:n), through its view when it has special bytes. */
static int osp_view_line_kind(osp_scan *scan, const uint8_t *s, ptrdiff_t n, int flags) {
    if (n > scan->scratch_room) {
        uint8_t *grown = (uint8_t *)realloc(scan->scratch, (size_t)n);
        if (!grown) return -1;
        scan->scratch = grown;
        scan->scratch_room = n;
    }
    return osp_line_kind(scan, scan->scratch, osp_view(s, n, flags, scan->scratch));
}

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
    while (position < n) {
        ptrdiff_t dirty = next_escape < next_return ? next_escape : next_return;
        ptrdiff_t line, end;
        int kind;
        if (dirty >= n) return osp_scan_clean(scan, s, position, n);
        line = dirty;
        while (line > position && s[line - 1] != '\n') line--;
        if (osp_scan_clean(scan, s, position, line) < 0) return -1;
        end = osp_line_end(s, dirty, n);
        kind = osp_view_line_kind(scan, s + line, end - line, flags);
        if (kind < 0) return -1;
        if (kind < scan->kinds && osp_scan_record(scan, line, end, kind) < 0) return -1;
        position = end + 1;
        if (next_escape < position) next_escape = osp_next_byte(s, position, n, OSP_ESC, ansi);
        if (next_return < position) next_return = osp_next_byte(s, position, n, '\r', cr);
    }
    return 0;
}

#endif
