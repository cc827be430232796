/* CRC-32, zlib's values (osp_crc32): a byte table, PCLMUL and VPCLMULQDQ folding where the CPU has them. */
#ifndef OVERSPILL_CRC_H
#define OVERSPILL_CRC_H

#include <stddef.h>
#include <stdint.h>

#include "overspill_simd.h"

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
