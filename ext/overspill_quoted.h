/* Quoted lines: the lines of a unified diff's hunks and git log's commit
 * messages, which a signal scan never reports (see overspill/_native_text.py,
 * _Quoted, the readable specification).  A "+ raise ValueError(...)" in a
 * hunk or "failed before the fix" in a message is text quoted from a file or
 * a person, not a diagnostic of the run that printed it.
 *
 * The state is walked forward once over a region's lines, only as far as a
 * line the scan asks about (osp_quoted_line, in increasing order) and then to
 * the region's end (osp_quoted_finish): O(bytes), nothing allocated.  Outside
 * a hunk or a commit, whole runs of lines are skipped by searching for the
 * next line that could start one.  The state comes in from the caller (what
 * the lines before the region left: text.SignalCollector walks a preview's
 * head, then carries it from block to block); a hunk that began before what
 * the caller walked is not known, and its remaining lines are judged like any
 * others.  Nothing here touches Python objects. */
#ifndef OVERSPILL_QUOTED_H
#define OVERSPILL_QUOTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "overspill_outline.h"  /* osp_commit: the outline's commit line, the one rule for it */
#include "overspill_simd.h"

/* The phases (_buffers.QUOTED_*): between hunks and commits; in a hunk (its
 * header's counts still to come); after a commit line, in its header lines;
 * in its message. */
#define OSP_QUOTED_OUTSIDE 0
#define OSP_QUOTED_HUNK 1
#define OSP_QUOTED_HEADER 2
#define OSP_QUOTED_MESSAGE 3
/* Where a region starts (_buffers.MIDLINE_*): at a line's start, or inside a
 * line (a head, a scan block or a band cut it) that is not quoted, or that is.
 * The rest of a line keeps the verdict of its start and is never stepped as a
 * line of its own: a hunk line's rest would end the hunk. */
#define OSP_MIDLINE_NONE 0
#define OSP_MIDLINE_SHOWN 1
#define OSP_MIDLINE_QUOTED 2
#define OSP_HUNK_DIGITS 18  /* a hunk header's number holds at most this many digits (_buffers.HUNK_COUNT_MAX) */

typedef struct {
    int phase;
    int64_t old_left, new_left;  /* in a hunk: its old and new lines still to come */
    /* At begin: where the region starts (OSP_MIDLINE_*; the phase and counts are those after
     * the line it starts inside).  After osp_quoted_finish: where the next region starts. */
    int midline;
    int last;  /* the verdict of the last line walked */
    const uint8_t *s;
    ptrdiff_t n;
    ptrdiff_t at;  /* the next line to walk starts here (past n: none) */
    /* The first line at or after `at` that starts "@@", "co" or ESC "[" (n: none);
     * a value below `at` is stale and searched again from `at`. */
    ptrdiff_t next_lead;
} osp_quoted;

static inline void osp_quoted_begin(osp_quoted *q, const uint8_t *s, ptrdiff_t n, int phase, int64_t old_left,
                                    int64_t new_left, int midline) {
    q->phase = phase;
    q->midline = midline;
    q->last = midline == OSP_MIDLINE_QUOTED;
    /* The counts mean something in a hunk only. */
    q->old_left = phase == OSP_QUOTED_HUNK ? old_left : 0;
    q->new_left = phase == OSP_QUOTED_HUNK ? new_left : 0;
    q->s = s;
    q->n = n;
    q->at = 0;
    q->next_lead = -1;
}

/* Whether the line at s[i:n) may be a hunk header or a commit line: it starts "@@" or "co",
 * or ESC "[" (git's --color=always puts an SGR escape before each). */
static inline int osp_quoted_lead(const uint8_t *s, ptrdiff_t i, ptrdiff_t n) {
    return i + 1 < n && ((s[i] == '@' && s[i + 1] == '@') || (s[i] == 'c' && s[i + 1] == 'o') ||
                         (s[i] == 0x1b && s[i + 1] == '['));
}

#if defined(OSP_X86)
/* osp_quoted_next 32 positions a step from i >= 1 (it reads s[i - 1]): the
 * first position after a newline with a lead, or where it stopped (fewer than
 * 33 bytes left).  A search for either needle alone (memmem) ran at a fraction
 * of the signal scan's own speed. */
__attribute__((target("avx2")))
static ptrdiff_t osp_quoted_next_avx2(const uint8_t *s, ptrdiff_t i, ptrdiff_t n) {
    const __m256i newline = _mm256_set1_epi8('\n'), at = _mm256_set1_epi8('@');
    const __m256i c = _mm256_set1_epi8('c'), o = _mm256_set1_epi8('o');
    const __m256i escape = _mm256_set1_epi8(0x1b), bracket = _mm256_set1_epi8('[');
    for (; i + 33 <= n; i += 32) {
        __m256i before = _mm256_loadu_si256((const __m256i *)(s + i - 1));
        __m256i here = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i next = _mm256_loadu_si256((const __m256i *)(s + i + 1));
        __m256i lead = _mm256_or_si256(_mm256_and_si256(_mm256_cmpeq_epi8(here, at), _mm256_cmpeq_epi8(next, at)),
                                       _mm256_and_si256(_mm256_cmpeq_epi8(here, c), _mm256_cmpeq_epi8(next, o)));
        lead = _mm256_or_si256(lead, _mm256_and_si256(_mm256_cmpeq_epi8(here, escape),
                                                      _mm256_cmpeq_epi8(next, bracket)));
        unsigned mask = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(before, newline), lead));
        if (mask) return i + __builtin_ctz(mask);
    }
    return i;
}
#endif

/* The first line start p >= from (itself a line start) with a lead; n when none. */
static inline ptrdiff_t osp_quoted_next(const uint8_t *s, ptrdiff_t from, ptrdiff_t n) {
    ptrdiff_t i;
    if (from >= n) return n;
    if (osp_quoted_lead(s, from, n)) return from;
    i = from + 1;
#if defined(OSP_X86)
    if (osp_has_avx2()) i = osp_quoted_next_avx2(s, i, n);
#endif
    while (i < n) {  /* positions before i are settled: on from the next newline at or after i - 1 */
        const uint8_t *newline = (const uint8_t *)memchr(s + i - 1, '\n', (size_t)(n - i + 1));
        if (!newline) return n;
        i = newline - s + 1;
        if (osp_quoted_lead(s, i, n)) return i;
        i++;
    }
    return n;
}

/* A number of 1 to OSP_HUNK_DIGITS digits at p[*i:n), into *value; 0 when none. */
static inline int osp_hunk_number(const uint8_t *p, ptrdiff_t n, ptrdiff_t *i, int64_t *value) {
    ptrdiff_t start = *i;
    int64_t v = 0;
    while (*i < n && p[*i] >= '0' && p[*i] <= '9' && *i - start < OSP_HUNK_DIGITS) v = v * 10 + (p[(*i)++] - '0');
    if (*i == start || (*i < n && p[*i] >= '0' && p[*i] <= '9')) return 0;
    *value = v;
    return 1;
}

/* Whether p[0:n) is a hunk header "@@ -a[,b] +c[,d] @@..."; its counts b and
 * d (a missing one is 1) into *old_lines and *new_lines. */
static inline int osp_hunk_header(const uint8_t *p, ptrdiff_t n, int64_t *old_lines, int64_t *new_lines) {
    ptrdiff_t i = 4;
    int64_t start;
    if (n < 4 || memcmp(p, "@@ -", 4) != 0 || !osp_hunk_number(p, n, &i, &start)) return 0;
    *old_lines = 1;
    if (i < n && p[i] == ',' && (++i, !osp_hunk_number(p, n, &i, old_lines))) return 0;
    if (n - i < 2 || p[i] != ' ' || p[i + 1] != '+') return 0;
    i += 2;
    if (!osp_hunk_number(p, n, &i, &start)) return 0;
    *new_lines = 1;
    if (i < n && p[i] == ',' && (++i, !osp_hunk_number(p, n, &i, new_lines))) return 0;
    return n - i >= 3 && memcmp(p + i, " @@", 3) == 0;
}

/* A commit's header line (Author:, Date:, Merge:, CommitDate:, Reflog message: ...):
 * a letter, letters and spaces, then ':'. */
static inline int osp_commit_header_line(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
    if (n == 0 || !((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z')) return 0;
    while (i < n && (((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z') || p[i] == ' ')) i++;
    return i < n && p[i] == ':';
}

/* The line p[0:n) after the state: whether it is quoted; the state moves past it. */
static inline int osp_quoted_step(osp_quoted *q, const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t hash = 0, from = 0, to = 0, skip;
    int cut = 0;
    int64_t old_lines, new_lines;
    /* A line is read as a reader is shown it: a pty's "\r" before its newline is its end, and
     * its leading colour escapes (git's --color=always) are skipped (the outline's rule). */
    if (n > 0 && p[n - 1] == '\r') n--;
    skip = osp_skip_escapes(p, n);
    p += skip;
    n -= skip;
    if (q->phase == OSP_QUOTED_HUNK) {
        uint8_t first = n ? p[0] : 0;
        if (first == '\\') return 1;  /* "\ No newline at end of file", also after the last line */
        if (first == ' ' && q->old_left > 0 && q->new_left > 0) { q->old_left--; q->new_left--; return 1; }
        if (first == '-' && q->old_left > 0) { q->old_left--; return 1; }
        if (first == '+' && q->new_left > 0) { q->new_left--; return 1; }
        /* Past its counts, or a line no hunk holds (a malformed diff): the hunk has ended. */
    } else if (q->phase == OSP_QUOTED_HEADER) {
        if (n == 0) { q->phase = OSP_QUOTED_MESSAGE; return 0; }
        if (osp_commit_header_line(p, n)) return 0;
    } else if (q->phase == OSP_QUOTED_MESSAGE) {
        /* git indents each line of a message by four spaces; blank lines stay in it. */
        if (n == 0) return 0;
        if (n >= 4 && memcmp(p, "    ", 4) == 0) return 1;
    }
    q->phase = OSP_QUOTED_OUTSIDE;
    q->old_left = q->new_left = 0;
    if (osp_hunk_header(p, n, &old_lines, &new_lines)) {
        /* The header's text after "@@" is a line of the file (git's function context): quoted too. */
        q->phase = OSP_QUOTED_HUNK;
        q->old_left = old_lines;
        q->new_left = new_lines;
        return 1;
    }
    if (n >= 7 && memcmp(p, "commit ", 7) == 0 && osp_commit(p, n, 0, &hash, &from, &to, &cut)) q->phase = OSP_QUOTED_HEADER;
    return 0;
}

/* Walk the lines before `to` (a line start, or n). */
static inline void osp_quoted_walk(osp_quoted *q, ptrdiff_t to) {
    if (to > q->n) to = q->n;  /* (a line start never is: a region not begun has none) */
    while (q->at < to) {
        const uint8_t *newline;
        ptrdiff_t end;
        if (q->at == 0 && q->midline != OSP_MIDLINE_NONE) {
            /* The rest of a line begun before the region: its verdict is the one it came with. */
            newline = (const uint8_t *)memchr(q->s, '\n', (size_t)q->n);
            q->at = newline ? newline - q->s + 1 : q->n + 1;
            continue;
        }
        if (q->phase == OSP_QUOTED_OUTSIDE) {
            /* Only a hunk header or a commit line changes the state here: on to the next line
             * that may be one. */
            if (q->next_lead < q->at) q->next_lead = osp_quoted_next(q->s, q->at, q->n);
            if (q->next_lead > q->at) q->last = 0;  /* the lines skipped: outside, none quoted */
            q->at = q->next_lead;
            if (q->at >= to) { q->at = to; return; }
        }
        newline = (const uint8_t *)memchr(q->s + q->at, '\n', (size_t)(q->n - q->at));
        end = newline ? newline - q->s : q->n;
        q->last = osp_quoted_step(q, q->s + q->at, end - q->at);
        q->at = end + 1;
    }
}

/* Whether the line s[start:end) is quoted; lines are asked about in increasing order. */
static inline int osp_quoted_line(osp_quoted *q, ptrdiff_t start, ptrdiff_t end) {
    osp_quoted_walk(q, start);
    if (start == 0 && q->midline != OSP_MIDLINE_NONE) {
        q->at = end + 1;  /* the rest of a line begun before the region */
        return q->last;
    }
    if (q->at > start) return 0;  /* (asked twice: never, as the scan records each line once) */
    q->last = osp_quoted_step(q, q->s + start, end - start);
    q->at = end + 1;
    return q->last;
}

/* The state at the region's end: every line walked (a final empty one, after
 * a last newline, is the next region's first line); a region that ends inside
 * a line leaves the next one to start inside it, with its verdict. */
static inline void osp_quoted_finish(osp_quoted *q) {
    osp_quoted_walk(q, q->n);
    if (q->n > 0)
        q->midline = q->s[q->n - 1] == '\n' ? OSP_MIDLINE_NONE : q->last ? OSP_MIDLINE_QUOTED : OSP_MIDLINE_SHOWN;
}

#endif
