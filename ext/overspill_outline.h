/* The per-line scan of outline_lines (see overspill/_native_outline.py, the
 * readable specification).
 *
 * osp_outline_next runs over the lines of a region and returns to its caller
 * only at a line that needs Python objects: a commit, a pending commit's
 * subject, or a depth whose run ends.  Everything else (the line's key, runs
 * that go on, the counts) stays in the state struct, in C, so the common line
 * costs no call into Python.  Nothing here touches Python objects.
 */
#ifndef OVERSPILL_OUTLINE_H
#define OVERSPILL_OUTLINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "overspill_token.h"

#define OSP_TOKEN_CAP 255   /* bytes of a line's leading token kept (_native_outline.TOKEN_MAX) */
#define OSP_SUBJECT_CAP 120 /* bytes of a commit subject kept (SUBJECT_MAX) */
#define OSP_DEPTH_CAP 32    /* the most depths kept (OUTLINE_DEPTH_MAX); one bit each in `changed` */
#define OSP_BELOW_SLASH 1   /* a run's deeper lines go on with "/" (_buffers.OUTLINE_BELOW_SLASH) */
#define OSP_BELOW_PAIR 2    /* ... with "::" (_buffers.OUTLINE_BELOW_PAIR) */

typedef struct {
    /* Set by the caller before the first call. */
    const uint8_t *buf;   /* the buffer; the token scan may read up to buf + n */
    ptrdiff_t n, position, end;  /* the next line starts at position; the region ends at end */
    ptrdiff_t depth;      /* levels kept, 1 to OSP_DEPTH_CAP */
    const uint8_t *lo, *hi;  /* the token's stop bytes, ':' and '/' as nibble tables (osp_scan_token) */
    /* The line osp_outline_next stopped at. */
    ptrdiff_t offset;     /* where it starts in buf */
    ptrdiff_t digits;     /* hex digits when it is a commit line, else 0 */
    ptrdiff_t hash_start; /* where they start in buf, when it is */
    ptrdiff_t subject_start, subject_end;  /* the pending commit's subject in buf, else equal */
    int subject_cut;      /* it was longer than OSP_SUBJECT_CAP: "…" goes after it */
    uint64_t changed;     /* depths whose key changed there, while they still count runs */
    const uint8_t *token; /* its key: in buf or in section; token[:ends[min(d + 1, keys) - 1]] at depth d */
    ptrdiff_t token_length, parts, keys, ends[OSP_DEPTH_CAP + 1];  /* keys: the parts that may be keys */
    /* Counts, and state carried from line to line. */
    ptrdiff_t lines, keyed, lead, commits;
    int pending, any_keyed;  /* a commit waits for its subject; a keyed line was seen */
    int blank;            /* the previous line was empty (set by the caller for the first: OUTLINE_AFTER_BLANK) */
    int oneline;          /* git log --oneline lines are commits (set by the caller: OUTLINE_ONELINE) */
    ptrdiff_t run_count[OSP_DEPTH_CAP];  /* runs begun at each depth; -1 once past the caller's cap */
    ptrdiff_t run_lines[OSP_DEPTH_CAP];  /* lines of each depth's current run */
    ptrdiff_t unclaimed;  /* lines since the last keyed one: the runs' only if the deepest one goes on */
    ptrdiff_t name;       /* the last keyed line's keys when its token is whole, all of them keys, else 0 */
    const uint8_t *cut;   /* the token (in buf) of the last pending line whose last part a space cut, */
    ptrdiff_t cut_length; /* while its folder's lines may claim it (osp_outline_runs), else NULL */
    int run_deeper[OSP_DEPTH_CAP];       /* the separators after the key in its lines with more parts (OSP_BELOW_*) */
    ptrdiff_t section_length, previous_length, previous_parts, previous_keys, previous_ends[OSP_DEPTH_CAP + 1];
    uint8_t section[OSP_TOKEN_CAP], previous[OSP_TOKEN_CAP];  /* the current section; the last keyed token */
} osp_outline;

/* `/some/dir:` as ls -R heads a folder: no colon before the final colon,
 * and a '/' in it or a '.' first; a space or tab in it only right after an
 * empty line (after_blank) and after its first '/' (a log line ending in ':'
 * is no folder). */
static inline int osp_section_header(const uint8_t *p, ptrdiff_t n, int after_blank) {
    ptrdiff_t slash = -1, space = -1;
    if (n < 2 || p[n - 1] != ':') return 0;
    for (ptrdiff_t i = 0; i < n - 1; i++) {
        if (p[i] == ':') return 0;
        if (space < 0 && (p[i] == ' ' || p[i] == '\t')) space = i;
        if (slash < 0 && p[i] == '/') slash = i;
    }
    if (space >= 0) return after_blank && slash >= 0 && slash < space;
    return slash >= 0 || p[0] == '.';
}

/* The ends of the first `cap` non-empty parts of p[0:n) (split at "/" and
 * "::") in ends; returns how many. */
static ptrdiff_t osp_part_ends(const uint8_t *p, ptrdiff_t n, ptrdiff_t *ends, ptrdiff_t cap) {
    ptrdiff_t i = 0, start = 0, count = 0, width;
    while (i < n) {
        if (p[i] == '/') width = 1;
        else if (p[i] == ':' && i + 1 < n && p[i + 1] == ':') width = 2;
        else {
            i++;
            continue;
        }
        if (i > start) {
            if (count == cap) return count;
            ends[count++] = i;
        }
        i += width;
        start = i;
    }
    if (n > start && count < cap) ends[count++] = n;
    return count;
}

/* Where p[0:n) starts once its leading complete CSI escape sequences (ESC [
 * parameters intermediates final: colour) are skipped. */
static inline ptrdiff_t osp_skip_escapes(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0, j;
    while (i + 1 < n && p[i] == 0x1b && p[i + 1] == '[') {
        j = i + 2;
        while (j < n && p[j] >= 0x30 && p[j] <= 0x3f) j++;
        while (j < n && p[j] >= 0x20 && p[j] <= 0x2f) j++;
        if (j >= n || p[j] < 0x40 || p[j] > 0x7e) break;  /* cut short: not skipped */
        i = j + 1;
    }
    return i;
}

/* The end of a subject line[from:stop) kept: all of it when it fits
 * OSP_SUBJECT_CAP bytes; else a cut that leaves room for "…" (3 bytes), moved
 * back before a character (off up to 3 continuation bytes), and *cut is set. */
static inline ptrdiff_t osp_subject_end(const uint8_t *line, ptrdiff_t from, ptrdiff_t stop, int *cut) {
    ptrdiff_t end = from + OSP_SUBJECT_CAP - 3, back = 0;
    *cut = stop - from > OSP_SUBJECT_CAP;
    if (!*cut) return stop;
    while (back < 3 && line[end - back] >= 0x80 && line[end - back] < 0xC0) back++;
    return end - back;
}

/* A byte git log --graph draws before a commit's lines. */
static inline int osp_graph_glyph(uint8_t c) {
    return c == ' ' || c == '*' || c == '|' || c == '/' || c == '\\' || c == '_';
}

/* Where a commit may start in p[0:n): past the leading graph glyphs, spaces
 * and CSI escapes, when they hold a '*' or are escapes only; else -1. */
static inline ptrdiff_t osp_graph_prefix(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
    int star = 0, visible = 0;
    for (;;) {
        i += osp_skip_escapes(p + i, n - i);
        if (i >= n || !osp_graph_glyph(p[i])) break;
        star |= p[i] == '*';
        visible = 1;
        i++;
    }
    return star || !visible ? i : -1;
}

/* Hex digits (7 or more) of a commit line p[0:n) (see _native_outline._commit),
 * else 0: their start in *hash; a --oneline subject in p[*from:*to) (at most
 * OSP_SUBJECT_CAP bytes; else left as it was). */
static inline ptrdiff_t osp_commit(const uint8_t *p, ptrdiff_t n, int oneline, ptrdiff_t *hash, ptrdiff_t *from,
                                   ptrdiff_t *to, int *cut) {
    ptrdiff_t start = osp_graph_prefix(p, n), begin, end, stop, digits;
    int command;
    if (start < 0) return 0;
    command = n - start >= 7 && memcmp(p + start, "commit ", 7) == 0;
    if (!command && !oneline) return 0;
    begin = end = command ? start + 7 : start;
    while (end < n && ((p[end] >= '0' && p[end] <= '9') || (p[end] >= 'a' && p[end] <= 'f'))) end++;
    digits = end - begin;
    if (digits < 7) return 0;
    *hash = begin;
    if (command) return end == n || p[end] == ' ' || p[end] == 0x1b ? digits : 0;
    end += osp_skip_escapes(p + end, n - end);
    if (end + 1 >= n || p[end] != ' ' || p[end + 1] == ' ' || p[end + 1] == '\t' || p[end + 1] == '*') return 0;
    end++;
    end += osp_skip_escapes(p + end, n - end);
    stop = n;
    while (stop > end && (p[stop - 1] == ' ' || p[stop - 1] == '\t')) stop--;
    if (stop <= end) return 0;
    *from = end;
    *to = osp_subject_end(p, end, stop, cut);
    return digits;
}

/* A subject line: its leading run of graph glyphs, spaces and CSI escapes
 * holds four spaces in a row, and more follows them than spaces and tabs.
 * Its stripped text is line[*from:*to) (at most OSP_SUBJECT_CAP bytes);
 * returns whether it is one. */
static inline int osp_subject(const uint8_t *line, ptrdiff_t length, ptrdiff_t *from, ptrdiff_t *to, int *cut) {
    ptrdiff_t i = 0, spaces = 0, skipped, stop = length;
    while (i < length) {
        skipped = osp_skip_escapes(line + i, length - i);
        if (skipped) {
            i += skipped;
            spaces = 0;
            continue;
        }
        if (!osp_graph_glyph(line[i])) return 0;
        spaces = line[i] == ' ' ? spaces + 1 : 0;
        i++;
        if (spaces == 4) {
            while (i < length && (line[i] == ' ' || line[i] == '\t')) i++;
            while (stop > i && (line[stop - 1] == ' ' || line[stop - 1] == '\t')) stop--;
            if (stop <= i) return 0;
            *from = i;
            *to = osp_subject_end(line, i, stop, cut);
            return 1;
        }
    }
    return 0;
}

/* Bytes a and b share at their start (at most n), compared eight at a time. */
static inline ptrdiff_t osp_common_prefix(const uint8_t *a, const uint8_t *b, ptrdiff_t n) {
    ptrdiff_t i = 0;
    uint64_t x, y;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) break;
    }
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* The line's key into s->token, s->token_length, s->parts, s->keys and s->ends:
 * a section header's path (which becomes the section), else its own token when
 * that holds a separator and a part that may be a key (or none at all), else
 * the section.  avail bytes from line on may be read. */
static inline void osp_outline_key(osp_outline *s, const uint8_t *line, ptrdiff_t length, ptrdiff_t avail) {
    int separated;
    if (osp_section_header(line, length, s->blank)) {
        s->section_length = length - 1 < OSP_TOKEN_CAP ? length - 1 : OSP_TOKEN_CAP;
        memcpy(s->section, line, (size_t)s->section_length);
    } else {
        s->token_length = osp_scan_token(line, length, avail, OSP_TOKEN_CAP, s->lo, s->hi, s->ends, s->depth + 1,
                                         &s->parts, &s->keys, &separated);
        s->token = line;
        if (separated && (s->keys || !s->parts)) return;
    }
    s->token = s->section;
    s->token_length = s->section_length;
    s->parts = s->keys = osp_part_ends(s->section, s->section_length, s->ends, s->depth + 1);
}

/* What follows the line's key at depth d: the separator before its next part
 * (OSP_BELOW_SLASH, OSP_BELOW_PAIR), or 0 when the key is its whole token. */
static inline int osp_outline_below(const osp_outline *s, ptrdiff_t d) {
    if (s->parts <= d + 1) return 0;
    return s->token[s->ends[d]] == '/' ? OSP_BELOW_SLASH : OSP_BELOW_PAIR;
}

/* Whether the line's key at depth d is the previous keyed line's (common: the
 * bytes their tokens share). */
static inline int osp_outline_goes_on(const osp_outline *s, ptrdiff_t d, ptrdiff_t common) {
    const ptrdiff_t key = s->keys ? s->ends[(d + 1 < s->keys ? d + 1 : s->keys) - 1] : s->token_length;
    const ptrdiff_t before = s->previous_keys ? s->previous_ends[(d + 1 < s->previous_keys ? d + 1
                                                                                           : s->previous_keys) - 1]
                                              : s->previous_length;
    return s->any_keyed && before == key && key <= common;
}

/* A keyed line at each depth: its run goes on when the key is the previous
 * keyed line's, else the depth's bit is set in the result (unless the depth
 * no longer counts runs) for the caller to end the run and begin one.  The
 * lines pending since that one join the runs at every depth when the line goes
 * on at the deepest, else none (review R6: decided at each depth alone, a line
 * was a folder's and none of its files', and a depth's runs summed to more
 * than the next one's), but a cut name's its folder's lines claim (see below).
 * Then the line becomes the previous keyed line. */
static inline uint64_t osp_outline_runs(osp_outline *s) {
    const ptrdiff_t parts = s->parts, keys = s->keys, length = s->token_length;
    ptrdiff_t common = 0, d, claimed;
    uint64_t changed = 0, on = 0, folder;
    /* A pending line whose last part a space cut, after a name in its folder (or the
     * folder's own line), is its folder's: the next line with a key claims it unless
     * that line is the cut name going on (its token the cut one's and a space:
     * "./Program Files/x"), at every depth into the runs the line before began: its
     * folder's, and below the folder the name before's (red team A14: "setuptools/
     * command/launcher manifest.xml" was counted in no run; review R18: last in its
     * folder, or before a sibling folder's lines, it still was).  After a line in another
     * folder below its own, no run below its folder is its (review R6: "./app/read me
     * 0.txt" is no line of "./app/sub0/"): it waits as a line with no path does. */
    const int claims = s->cut && !(length > s->cut_length && memcmp(s->token, s->cut, (size_t)s->cut_length) == 0
                                   && s->token[s->cut_length] == ' ');
    s->cut = NULL;
    if (s->any_keyed) common = osp_common_prefix(s->token, s->previous, length < s->previous_length ? length
                                                                                                  : s->previous_length);
    for (d = 0; d < s->depth; d++) on |= (uint64_t)osp_outline_goes_on(s, d, common) << d;
    folder = ((uint64_t)1 << keys) - 1;  /* the depths of its keys (keys <= OSP_DEPTH_CAP + 1: no overflow) */
    if (0 < keys && keys < parts && keys < s->depth && (on & folder) == folder) {
        /* Its last part is no key (osp_scan_token) and its folder's run goes on: it is
         * pending as an unkeyed line is ("./Program Files" in find, before its folder's
         * lines; below the folder its run is unknown), and is not the previous keyed line. */
        if (claims) {
            s->unclaimed--;
            for (d = 0; d < s->depth; d++) s->run_lines[d]++;
        }
        s->unclaimed++;
        if (s->name && keys >= s->name - 1) {
            s->cut = s->token;  /* its own token: in buf, held for the whole scan */
            s->cut_length = length;
        }
        return 0;
    }
    claimed = (on >> (s->depth - 1)) & 1 ? s->unclaimed : claims;
    s->unclaimed = 0;
    s->name = 0 < parts && keys == parts && parts <= s->depth ? keys : 0;
    for (d = 0; d < s->depth; d++) {
        if ((on >> d) & 1) {
            s->run_lines[d] += claimed + 1;
            s->run_deeper[d] |= osp_outline_below(s, d);
        } else if (s->run_count[d] >= 0) {
            /* Below the folder a claimed line is in the run the line before began (the
             * part of the output it lies in), which the caller ends here. */
            s->run_lines[d] += claimed;
            changed |= (uint64_t)1 << d;
        }
    }
    s->any_keyed = 1;
    memcpy(s->previous, s->token, (size_t)length);
    s->previous_length = length;
    s->previous_parts = parts;
    s->previous_keys = keys;
    memcpy(s->previous_ends, s->ends, (size_t)parts * sizeof(ptrdiff_t));
    return changed;
}

/* Scans lines from s->position until one needs the caller (see the struct's
 * middle part; returns 1) or the region ends (returns 0). */
static int osp_outline_next(osp_outline *s) {
    const uint8_t *line, *found;
    ptrdiff_t stop, length, offset, digits, skip, hash, from = 0, to = 0;
    int cut;
    uint64_t changed;
    while (s->position < s->end) {
        offset = s->position;
        line = s->buf + offset;
        found = (const uint8_t *)memchr(line, '\n', (size_t)(s->end - offset));
        stop = found ? found - s->buf : s->end;
        length = stop - offset;
        if (length && line[length - 1] == '\r') length--;
        s->position = stop + 1;
        s->lines++;
        skip = osp_skip_escapes(line, length);  /* a reader is shown the line without them */
        from = to = hash = 0;
        cut = 0;
        digits = osp_commit(line, length, s->oneline, &hash, &from, &to, &cut);
        if (digits) {
            s->commits++;
            s->pending = to == from;  /* a --oneline commit has its subject */
        } else if (s->pending && osp_subject(line, length, &from, &to, &cut)) {
            s->pending = 0;
        }
        osp_outline_key(s, line + skip, length - skip, s->n - offset - skip);
        s->blank = length == skip;
        changed = 0;
        if (s->token_length) {
            s->keyed++;
            changed = osp_outline_runs(s);
        } else if (!s->any_keyed) {
            s->lead++;
        } else {  /* after a keyed line: pending until a keyed line says whose run it is in */
            s->unclaimed++;
        }
        if (digits || to > from || changed) {
            s->offset = offset;
            s->digits = digits;
            s->hash_start = offset + hash;
            s->subject_start = offset + from;
            s->subject_end = offset + to;
            s->subject_cut = cut;
            s->changed = changed;
            return 1;
        }
    }
    return 0;
}

#endif
