/* Signal patterns: the scan's tables (osp_scan_init), a literal's match at a position, a line's kind, hits kept. */
/* See overspill/_native_text.py, the readable specification (signal_lines); as in
 * overspill_text.h, nothing here touches Python objects, so callers may drop the GIL. */
#ifndef OVERSPILL_SIGNALS_H
#define OVERSPILL_SIGNALS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "overspill_hex.h"
#include "overspill_quoted.h"
#include "overspill_text.h"

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
    /* With distinct > 0, a hit is kept only when no hit kept before it has
     * its kind and the same key: its first `distinct` bytes with each number
     * made '0's (osp_signal_key: finer than removing the numbers, as signal
     * grouping does, so no line that starts a group is left out):
     * `base` is the region the hits' offsets are in, `seen` an
     * open-addressing table of the kept hits (hash, index in `hits`), and
     * `keys` room for two keys of `key_room` bytes each (grown to the
     * longest key met, never to `distinct` itself: a key is no longer than
     * its line, and any distinct is allowed). */
    ptrdiff_t distinct;
    const uint8_t *base;
    struct osp_seen { uint64_t hash; ptrdiff_t hit; } *seen;
    ptrdiff_t seen_room, seen_count;
    uint8_t *keys;
    ptrdiff_t key_room;
    ptrdiff_t last_start, last_end;  /* the last hit looked up in `seen` (its kind last_kind) */
    int last_kind;
    /* Lines of diff hunks and commit messages, never hits: the caller sets it
     * to the region and the state it starts in (osp_quoted_begin). */
    osp_quoted quoted;
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

/* Whether the line s[0:n) (a view) starts as an `ls -l` or `tar tv` entry:
 * a mode string (a type -dlcbpsD, nine permissions
 * [r-][w-][xsS-][r-][w-][xsS-][r-][w-][xtT-], an optional '.', '+' or '@'),
 * spaces, then ls's link count (a digit) or tar's owner/group, spaces and a
 * size (a digit).  Such a line is a listing entry, never a signal line: its
 * name (a folder called Error) and a symlink's target are names.  What follows
 * the mode string is required because "---------- " also opens failure
 * banners ("---------- ERROR: build failed ----------").
 * _listing_entry in overspill/_native_text.py. */
static int osp_listing_entry(const uint8_t *s, ptrdiff_t n) {
    static const char *const columns[10] = {"-dlcbpsD", "r-", "w-", "xsS-", "r-", "w-", "xsS-", "r-", "w-", "xtT-"};
    ptrdiff_t k, token;
    if (n < 12) return 0;
    for (k = 0; k < 10; k++)
        if (s[k] == 0 || !strchr(columns[k], s[k])) return 0;  /* (strchr finds the terminator too) */
    if (s[10] == '.' || s[10] == '+' || s[10] == '@') k = 11;
    if (s[k] != ' ') return 0;
    while (k < n && s[k] == ' ') k++;
    if (k < n && s[k] >= '0' && s[k] <= '9') return 1;  /* ls -l: the link count */
    token = k;  /* tar tv: owner/group (neither empty), spaces, the size */
    while (k < n && s[k] != ' ' && s[k] != '/') k++;
    if (k == token || k >= n || s[k] != '/') return 0;
    token = ++k;
    while (k < n && s[k] != ' ' && s[k] != '/') k++;
    if (k == token || k >= n || s[k] != ' ') return 0;
    while (k < n && s[k] == ' ') k++;
    return k < n && s[k] >= '0' && s[k] <= '9';
}

/* The lowest kind matched in the line s[0:n) (already a view), or kinds. */
static int osp_line_kind(const osp_scan *scan, const uint8_t *s, ptrdiff_t n) {
    int best = scan->kinds, k;
    ptrdiff_t i;
    if (osp_listing_entry(s, n)) return best;
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
    free(scan->seen);
    free(scan->keys);
}

/* 8 bytes (a little-endian load) with each ASCII digit made '0' (SWAR): a
 * byte is a digit when its high bit is clear and, XOR '0', it is below 10. */
static inline uint64_t osp_digits_zeroed(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t x = w ^ (0x30 * ones);
    uint64_t digit = ~(((x & (0x7f * ones)) + 0x76 * ones) | x) & (0x80 * ones);
    return w ^ (x & ((digit >> 7) * 0xff));
}

/* Whether c is a hex digit of either case. */
static inline int osp_hex_either(uint8_t c) {
    return osp_hex_value(c) >= 0 || (unsigned)(c - 'A') < 6;
}

/* Whether p[0:n) starts with runs of exactly 8, 4, 4, 4 and 12 uppercase hex
 * digits ([0-9A-F]) joined by '-' (36 bytes): an uppercase UUID. */
static int osp_upper_uuid(const uint8_t *p, ptrdiff_t n) {
    static const ptrdiff_t groups[5] = {8, 4, 4, 4, 12};
    ptrdiff_t at = 0, run;
    int k;
    for (k = 0; k < 5; k++) {
        if (k > 0 && (at >= n || p[at++] != '-')) return 0;
        /* One byte past the group is enough to see that the run is longer. */
        for (run = 0; run <= groups[k] && at + run < n
                      && ((unsigned)(p[at + run] - '0') < 10 || (unsigned)(p[at + run] - 'A') < 6); run++) {}
        if (run != groups[k]) return 0;
        at += run;
    }
    return 1;
}

/* The length of the hex digest at p[0:n), where a maximal run of lowercase
 * hex digits starts or an uppercase hex letter is, as overspill._buffers.NUMBERS
 * reads one (the same-shape rule's numbers): a UUID (runs of exactly 8, 4, 4,
 * 4 and 12 digits joined by '-', 36 bytes: lowercase; or uppercase when
 * `alone`, no hex digit of either case just before p, so that a longer run's
 * tail is never one), else the lowercase run when it has 7 or more digits; 0
 * for none. */
static ptrdiff_t osp_hex_digest(const uint8_t *p, ptrdiff_t n, int alone) {
    static const ptrdiff_t groups[5] = {8, 4, 4, 4, 12};
    ptrdiff_t run = osp_hex_run(p, n), at = 0;
    int k;
    if (run == 8) {
        for (k = 0; k < 5; k++) {
            if (k > 0 && (at >= n || p[at++] != '-')) break;
            if (osp_hex_run(p + at, n - at) != groups[k]) break;
            at += groups[k];
        }
        if (k == 5) return 36;
    }
    if (alone && osp_upper_uuid(p, n)) return 36;
    return run >= 7 ? run : 0;
}

/* A hit's key: s[0:n) (n <= distinct) into out, each number made '0's
 * (every ASCII digit, every byte of a hex digest: osp_hex_digest), so two
 * lines with one key differ only in their numbers' digits, at the same
 * places: they are near-duplicates.  When escape sequences are viewed away
 * and the line has one, only digits are made '0': a hex letter can end a
 * sequence, so a digest's letters are kept (a finer key, never a wrong one). */
static void osp_signal_key(const osp_scan *scan, const uint8_t *s, ptrdiff_t n, uint8_t *out) {
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {  /* digits, 8 bytes a step */
        uint64_t w;
        memcpy(&w, s + i, 8);
        w = osp_digits_zeroed(w);
        memcpy(out + i, &w, 8);
    }
    for (; i < n; i++) out[i] = (s[i] >= '0' && s[i] <= '9') ? (uint8_t)'0' : s[i];
    /* Most lines have no digest: one 16-byte-a-step look spares them the byte loop below. */
    if (!osp_hex_row7(s, n) || (scan->special[OSP_ESC] && memchr(s, OSP_ESC, (size_t)n))) return;
    for (i = 0; i < n;) {  /* digests, from the start of each run of hex digits */
        ptrdiff_t run, digest;
        /* An uppercase UUID needs no hex digit just before it (NUMBERS' lookbehind). */
        int alone = i == 0 || !osp_hex_either(s[i - 1]);
        if (osp_hex_value(s[i]) < 0) {
            /* An uppercase letter may start an uppercase UUID. */
            digest = alone && (unsigned)(s[i] - 'A') < 6 ? osp_hex_digest(s + i, n - i, 1) : 0;
            if (digest) memset(out + i, '0', (size_t)digest);
            i += digest ? digest : 1;
            continue;
        }
        /* Runs in words are short ("failed" has two): a byte loop, not osp_hex_run's 16-byte step.
         * Only a run of 8, or a digit alone (an uppercase UUID's start), may be a UUID. */
        run = osp_hex_run_scalar(s + i, n - i);
        digest = run == 8 || (alone && s[i] <= '9') ? osp_hex_digest(s + i, n - i, alone) : run >= 7 ? run : 0;
        if (digest) memset(out + i, '0', (size_t)digest);
        i += digest ? digest : run;
    }
}

/* The hash of a key of `length` bytes, with its kind. */
static inline uint64_t osp_key_hash(const uint8_t *key, ptrdiff_t length, int kind) {
    uint64_t hash = ((uint64_t)length << 8) ^ (uint64_t)(unsigned)kind;
    for (ptrdiff_t i = 0; i < length; i += 8) {
        uint64_t w = 0;
        memcpy(&w, key + i, (size_t)(length - i < 8 ? length - i : 8));
        hash = (hash ^ w) * 0x9E3779B97F4A7C15ULL;
        hash ^= hash >> 29;
    }
    return hash ? hash : 1;  /* 0 marks an empty slot */
}

/* 1 when a hit with this key was kept already, else 0 after noting it as
 * the hit about to be kept (index hit_count); -1 when memory ran out. */
static int osp_distinct_seen(osp_scan *scan, ptrdiff_t start, ptrdiff_t end, int kind) {
    ptrdiff_t length = end - start > scan->distinct ? scan->distinct : end - start;
    uint64_t hash;
    size_t mask, slot;
    if (length > scan->key_room) {
        /* Doubling (at most to `distinct`) keeps the reallocations few as
         * lines grow; the room is checked before 2 * room can overflow. */
        ptrdiff_t room = scan->key_room > PTRDIFF_MAX / 4 ? length : 2 * scan->key_room;
        uint8_t *grown;
        if (room < length) room = length;
        if (room > scan->distinct) room = scan->distinct;
        if (room > PTRDIFF_MAX / 2) return -1;
        grown = (uint8_t *)realloc(scan->keys, (size_t)(2 * room));
        if (!grown) return -1;
        scan->keys = grown;
        scan->key_room = room;
    }
    osp_signal_key(scan, scan->base + start, length, scan->keys);
    hash = osp_key_hash(scan->keys, length, kind);
    if (2 * (scan->seen_count + 1) > scan->seen_room) {  /* keep the table at most half full */
        ptrdiff_t room = scan->seen_room ? scan->seen_room * 2 : 256;
        struct osp_seen *grown = (struct osp_seen *)calloc((size_t)room, sizeof(struct osp_seen));
        if (!grown) return -1;
        for (ptrdiff_t k = 0; k < scan->seen_room; k++) {
            if (!scan->seen[k].hash) continue;
            for (slot = (size_t)scan->seen[k].hash & (size_t)(room - 1); grown[slot].hash; slot = (slot + 1) & (size_t)(room - 1)) {}
            grown[slot] = scan->seen[k];
        }
        free(scan->seen);
        scan->seen = grown;
        scan->seen_room = room;
    }
    mask = (size_t)(scan->seen_room - 1);
    for (slot = (size_t)hash & mask; scan->seen[slot].hash; slot = (slot + 1) & mask) {
        const osp_hit *kept = &scan->hits[scan->seen[slot].hit];
        if (scan->seen[slot].hash == hash && kept->kind == kind
            && (kept->end - kept->start > scan->distinct ? scan->distinct : kept->end - kept->start) == length) {
            osp_signal_key(scan, scan->base + kept->start, length, scan->keys + scan->key_room);
            if (memcmp(scan->keys, scan->keys + scan->key_room, (size_t)length) == 0) return 1;
        }
    }
    scan->seen[slot].hash = hash;
    scan->seen[slot].hit = scan->hit_count;
    scan->seen_count++;
    return 0;
}

static int osp_scan_record(osp_scan *scan, ptrdiff_t start, ptrdiff_t end, int kind) {
    if (osp_quoted_line(&scan->quoted, start, end)) return 0;  /* quoted text, not a diagnostic */
    scan->totals[kind]++;
    if (scan->kept[kind] >= scan->limit) return 0;
    if (scan->distinct > 0) {
        int seen;
        /* A repeat of the line just before (the common case in a long log) needs no hash. */
        if (scan->last_end - scan->last_start == end - start && scan->last_kind == kind
            && memcmp(scan->base + scan->last_start, scan->base + start,
                      (size_t)(end - start < scan->distinct ? end - start : scan->distinct)) == 0) return 0;
        scan->last_start = start;
        scan->last_end = end;
        scan->last_kind = kind;
        seen = osp_distinct_seen(scan, start, end, kind);
        if (seen) return seen < 0 ? -1 : 0;
    }
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

/* The kind of the line s[0:n), through its view when it has special bytes.
 * With ended, s[n] is the line's \n: it is viewed with the line, so that a \r
 * just before it stays as the line's ending (as in the view of the whole
 * region; viewed alone, a final \r would be a redraw), then left out. */
static int osp_view_line_kind(osp_scan *scan, const uint8_t *s, ptrdiff_t n, int ended, int flags) {
    ptrdiff_t room = ended ? n + 1 : n;
    if (room > scan->scratch_room) {
        uint8_t *grown = (uint8_t *)realloc(scan->scratch, (size_t)room);
        if (!grown) return -1;
        scan->scratch = grown;
        scan->scratch_room = room;
    }
    /* The view keeps every newline: the one viewed is its last byte. */
    return osp_line_kind(scan, scan->scratch, osp_view(s, room, flags, scan->scratch) - (ended ? 1 : 0));
}

#endif
