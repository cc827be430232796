/* Views of text (ANSI escapes, redrawn lines), a page's text in one pass (osp_scan_plain), whether a str is shown as it is (osp_text_fits). */
/* See overspill/_native_text.py, the readable specification (view_bytes);
 * overspill_signals.h and overspill_signal_scan.h build the signal scan on it.
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

#include "overspill_count.h"
#include "overspill_utf8.h"

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

/* out[floor:pos) ends with the start of a character that a continuation byte
 * would go on with (a prefix of a well-formed UTF-8 sequence, as the decoder
 * takes it: E0 needs A0-BF next, ED 80-9F, F0 90-BF, F4 80-8F): it becomes one
 * byte 0xFF, which no byte goes on with; returns the new pos.  Called when a
 * removed escape sequence stood between that start and a continuation byte:
 * the raw bytes decode the start as one U+FFFD (the ESC ends it), and so does
 * 0xFF, so the view never joins the bytes either side of a sequence into a
 * character that is not in the output. */
static ptrdiff_t osp_split_character(uint8_t *out, ptrdiff_t floor, ptrdiff_t pos) {
    ptrdiff_t lead = pos - 1;
    while (lead >= floor && lead > pos - 4 && osp_is_continuation(out[lead])) lead--;
    if (lead < floor || pos - lead >= osp_sequence_length(out[lead])) return pos;
    if (pos - lead >= 2) {
        uint8_t b = out[lead], next = out[lead + 1];
        if ((b == 0xE0 && next < 0xA0) || (b == 0xED && next > 0x9F) || (b == 0xF0 && next < 0x90) ||
            (b == 0xF4 && next > 0x8F))
            return pos;
    }
    out[lead] = 0xFF;
    return lead + 1;
}

/* The view of in[0:n) into out (room for n bytes); returns its length.
 * Escapes are removed first (osp_split_character where one stood inside a
 * character); then each line keeps its last non-empty segment between lone
 * \r, and a \r just before \n stays as the line's ending. */
static ptrdiff_t osp_view(const uint8_t *in, ptrdiff_t n, int flags, uint8_t *out) {
    ptrdiff_t i = 0, pos = 0, line = 0, seg = 0;
    int pending = 0, ansi = flags & OSP_VIEW_ANSI, cr = flags & OSP_VIEW_CR;
    while (i < n) {
        uint8_t b = in[i];
        if (b == OSP_ESC && ansi) {
            i += osp_escape_length(in + i, n - i);
            /* (After a pending \r the next byte starts a segment of its own: nothing to join.) */
            if (i < n && osp_is_continuation(in[i]) && !pending) pos = osp_split_character(out, seg, pos);
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

#endif
