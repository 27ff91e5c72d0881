/*
** write/encode.c — the RLE / bit-packed hybrid encoder of apache/parquet-format Encodings.md
** ("Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"), used for definition and repetition
** levels and for RLE_DICTIONARY indices (whose one-byte bit-width prefix the caller writes).
**
** Runs of 8 or more equal values become RLE runs; everything else is bit-packed in groups of
** 8 values, LSB first, the last group zero-padded. A bit-packed stretch ends at the first group
** boundary where a run of 8 or more starts, so long runs are never bit-packed.
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

#define DEFINE_RLE(NAME, T)                                                                   \
  static inline int64_t NAME##_run(const T *v, int64_t i, int64_t n) {                        \
    int64_t j = i + 1;                                                                        \
    while (j < n && v[j] == v[i]) j++;                                                        \
    return j - i;                                                                             \
  }                                                                                           \
  /* Packs 8 values (or fewer, zero-padded) of w bits into w bytes at p. */                   \
  static inline void NAME##_pack8(uint8_t *p, const T *v, int64_t k, int w) {                 \
    uint64_t acc = 0;                                                                         \
    int bits = 0;                                                                             \
    size_t o = 0;                                                                             \
    for (int64_t i = 0; i < 8; i++) {                                                         \
      uint64_t x = i < k ? (uint64_t)v[i] : 0;                                                \
      acc |= x << bits;                                                                       \
      bits += w;                                                                              \
      while (bits >= 8) {                                                                     \
        p[o++] = (uint8_t)acc;                                                                \
        acc >>= 8;                                                                            \
        bits -= 8;                                                                            \
      }                                                                                       \
    }                                                                                         \
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
      if (w == 0) {                                                                           \
        i = j;                                                                                \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t g = 0; g < groups; g++) {                                                  \
        NAME##_pack8(p, v + i, DK_MIN(8, j - i), w);                                          \
        p += w;                                                                               \
        i += 8;                                                                               \
      }                                                                                       \
      i = j;                                                                                  \
    }                                                                                         \
    out->len += (size_t)(p - p0);                                                             \
    return DK_OK;                                                                             \
  }

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
