/*
** write/encode.c — the RLE / bit-packed hybrid encoder of apache/parquet-format Encodings.md
** ("Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"), used for definition and repetition
** levels and for RLE_DICTIONARY indices (whose one-byte bit-width prefix the caller writes).
**
** Runs of 8 or more equal values become RLE runs; everything else is bit-packed in groups of
** 8 values, LSB first, the last group zero-padded. A bit-packed stretch ends at the first group
** boundary where a run of 8 or more starts, so long runs are never bit-packed. The packing
** has a straight-line body for each bit width (1..32).
*/
#include "codec/parquet/write/pqw.h"

static size_t varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* Packs 8 values of w bits (LSB first) into w bytes at p; w is a constant where inlined. */
static inline __attribute__((always_inline)) void pack8(uint8_t *p, const uint32_t x[8], int w) {
  uint64_t acc = 0;
  int bits = 0;
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    acc |= (uint64_t)x[i] << bits;
    bits += w;
    if (bits >= 32) {
      uint32_t lo = (uint32_t)acc;
      memcpy(p, &lo, 4);
      p += 4;
      acc >>= 32;
      bits -= 32;
    }
  }
#pragma GCC unroll 4
  for (; bits > 0; bits -= 8) {
    *p++ = (uint8_t)acc;
    acc >>= 8;
  }
}

#define PACK_WIDTHS(X)                                                                        \
  X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)      \
  X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)    \
  X(32)

#define DEFINE_RLE(NAME, T)                                                                   \
  static inline int64_t NAME##_run(const T *v, int64_t i, int64_t n) {                        \
    int64_t j = i + 1;                                                                        \
    while (j < n && v[j] == v[i]) j++;                                                        \
    return j - i;                                                                             \
  }                                                                                           \
  /* Bit-packs v[0..n) (n > 0) in groups of 8 values, the last one zero-padded. */            \
  static uint8_t *NAME##_pack(uint8_t *p, const T *v, int64_t n, int w) {                     \
    int64_t full = n / 8, rest = n - 8 * full;                                                \
    uint32_t x[8];                                                                            \
    switch (w) {                                                                              \
      PACK_WIDTHS(NAME##_CASE)                                                                \
      default: break;                                                                         \
    }                                                                                         \
    if (rest) {                                                                               \
      for (int i = 0; i < 8; i++) x[i] = i < rest ? (uint32_t)v[8 * full + i] : 0;            \
      pack8(p, x, w);                                                                         \
      p += w;                                                                                 \
    }                                                                                         \
    return p;                                                                                 \
  }                                                                                           \
  static dk_status NAME(dk_buf *out, const T *v, int64_t n, int w, dk_error *err) {           \
    /* worst case: all bit-packed (w bytes per 8 values) + headers */                         \
    size_t need = (size_t)((n + 7) / 8) * (size_t)(w + 1) + 32;                               \
    DK_RETURN_NOT_OK(dk__buf_reserve(out, need, err));                                        \
    uint8_t *p = (uint8_t *)out->data + out->len, *p0 = p;                                    \
    size_t vbytes = (size_t)(w + 7) / 8;                                                      \
    int64_t i = 0;                                                                            \
    while (i < n) {                                                                           \
      int64_t run = NAME##_run(v, i, n);                                                      \
      if (run >= 8 || i + run == n) {                                                         \
        p += varint(p, (uint64_t)run << 1);                                                   \
        uint64_t x = (uint64_t)v[i];                                                          \
        for (size_t b = 0; b < vbytes; b++) *p++ = (uint8_t)(x >> (8 * b));                  \
        i += run;                                                                             \
        continue;                                                                             \
      }                                                                                       \
      /* bit-packed groups from i until a group boundary starts a long run (or the end) */   \
      int64_t j = i;                                                                          \
      do {                                                                                    \
        j += 8;                                                                               \
      } while (j < n && NAME##_run(v, j, DK_MIN(n, j + 8)) < 8);                              \
      if (j > n) j = n;                                                                       \
      int64_t groups = (j - i + 7) / 8;                                                       \
      p += varint(p, ((uint64_t)groups << 1) | 1);                                            \
      if (w) p = NAME##_pack(p, v + i, j - i, w);                                             \
      i = j;                                                                                  \
    }                                                                                         \
    out->len += (size_t)(p - p0);                                                             \
    return DK_OK;                                                                             \
  }

#define rle16_CASE(W)                                                                         \
  case W:                                                                                     \
    for (int64_t g = 0; g < full; g++, p += W) {                                              \
      for (int i = 0; i < 8; i++) x[i] = v[8 * g + i];                                        \
      pack8(p, x, W);                                                                         \
    }                                                                                         \
    break;
#define rle32_CASE(W)                                                                         \
  case W:                                                                                     \
    for (int64_t g = 0; g < full; g++, p += W) pack8(p, v + 8 * g, W);                        \
    break;

DEFINE_RLE(rle16, uint16_t)
DEFINE_RLE(rle32, uint32_t)

dk_status dk_pqw__rle_run(dk_buf *out, uint32_t v, int64_t n, int bit_width, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_reserve(out, 16, err));
  uint8_t *p = (uint8_t *)out->data + out->len, *p0 = p;
  p += varint(p, (uint64_t)n << 1);
  for (int b = 0; b < (bit_width + 7) / 8; b++) *p++ = (uint8_t)(v >> (8 * b));
  out->len += (size_t)(p - p0);
  return DK_OK;
}

dk_status dk_pqw__rle_encode_u16(dk_buf *out, const uint16_t *v, int64_t n, int bit_width,
                                 dk_error *err) {
  return rle16(out, v, n, bit_width, err);
}

dk_status dk_pqw__rle_encode_u32(dk_buf *out, const uint32_t *v, int64_t n, int bit_width,
                                 dk_error *err) {
  return rle32(out, v, n, bit_width, err);
}
