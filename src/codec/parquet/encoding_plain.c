/*
** encoding_plain.c — PLAIN helpers (BOOLEAN bits, BYTE_ARRAY with 4-byte lengths, the index
** of a PLAIN BYTE_ARRAY dictionary page), BYTE_STREAM_SPLIT and dictionary gather
** (apache/parquet-format Encodings.md: "Plain (PLAIN = 0)", "Dictionary Encoding",
** "Byte Stream Split (BYTE_STREAM_SPLIT = 9)").
*/
#include "codec/parquet/encoding.h"

#if defined(__SSE2__)
#  include <emmintrin.h>
#endif

static inline uint32_t load_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4); /* little-endian host (checked in bitpack.c) */
  return v;
}

/* ---- BOOLEAN ----------------------------------------------------------------------------- */

/* Spreads the 8 bits of b (LSB first) to 8 bytes of 0/1. */
static inline uint64_t spread_bits(uint8_t b) {
  uint64_t x = ((uint64_t)b * 0x0101010101010101ull) & 0x8040201008040201ull;
  return ((x + 0x7f7f7f7f7f7f7f7full) >> 7) & 0x0101010101010101ull;
}

void dk_pq__plain_bool(const uint8_t *in, int64_t first_bit, uint8_t *out_bytes, int64_t n) {
  int64_t i = 0, bit = first_bit;
  for (; i < n && (bit & 7); i++, bit++) out_bytes[i] = (in[bit >> 3] >> (bit & 7)) & 1;
  const uint8_t *p = in + (bit >> 3);
  for (; i + 8 <= n; i += 8, p++) {
    uint64_t v = spread_bits(*p);
    memcpy(out_bytes + i, &v, 8);
  }
  for (int k = 0; i < n; i++, k++) out_bytes[i] = (*p >> k) & 1;
}

/* ---- BYTE_ARRAY -------------------------------------------------------------------------- */

dk_status dk_pq__plain_byte_array_size(const uint8_t *in, size_t len, int64_t n,
                                      uint64_t *total_out, dk_error *err) {
  size_t pos = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    DK_RETURN_IF(len - pos < 4, DK_CORRUPT, err,
                 "PLAIN BYTE_ARRAY: value %lld's length prefix at byte %zu runs past the end "
                 "(%zu bytes)", (long long)i, pos, len);
    uint32_t l = load_le32(in + pos);
    DK_RETURN_IF(l > len - pos - 4, DK_CORRUPT, err,
                 "PLAIN BYTE_ARRAY: value %lld at byte %zu has length %u but %zu bytes remain",
                 (long long)i, pos, l, len - pos - 4);
    pos += 4 + (size_t)l;
    total += l;
  }
  *total_out = total;
  return DK_OK;
}

size_t dk_pq__plain_byte_array_copy(const uint8_t *in, int64_t n, int32_t *offsets, uint8_t *dst) {
  int32_t end = n > 0 ? offsets[-1] : 0;
  size_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t l = load_le32(in + pos);
    memcpy(dst, in + pos + 4, l);
    dst += l;
    end += (int32_t)l;
    offsets[i] = end;
    pos += 4 + (size_t)l;
  }
  return pos;
}

dk_status dk_pq__plain_byte_array(const uint8_t *in, size_t len, int64_t n, dk_pq_bytes_out *o,
                                 size_t *consumed, dk_error *err) {
  /* pass 1: validate and total the lengths */
  uint64_t total = 0;
  DK_RETURN_NOT_OK(dk_pq__plain_byte_array_size(in, len, n, &total, err));
  int32_t base = n > 0 ? o->offsets[-1] : 0;
  DK_RETURN_IF(total > (uint64_t)(INT32_MAX - (base > 0 ? base : 0)), DK_CORRUPT, err,
               "PLAIN BYTE_ARRAY: values total %llu bytes, over the 2 GiB limit of a batch",
               (unsigned long long)total);
  DK_RETURN_NOT_OK(dk__buf_reserve(o->data, (size_t)total, err));
  /* pass 2: copy */
  size_t pos = dk_pq__plain_byte_array_copy(in, n, o->offsets,
                                           (uint8_t *)o->data->data + o->data->len);
  o->data->len += (size_t)total;
  o->data->data[o->data->len] = 0;
  o->offsets += n;
  if (consumed) *consumed = pos;
  return DK_OK;
}

dk_status dk_pq__plain_byte_array_index(const uint8_t *in, size_t len, int64_t n, uint32_t *starts,
                                       uint32_t *lengths, dk_error *err) {
  DK_RETURN_IF(len > UINT32_MAX, DK_UNSUPPORTED, err,
               "PLAIN BYTE_ARRAY dictionary page larger than 4 GiB");
  size_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    DK_RETURN_IF(len - pos < 4, DK_CORRUPT, err,
                 "PLAIN BYTE_ARRAY dictionary: entry %lld's length prefix at byte %zu runs past "
                 "the end (%zu bytes)", (long long)i, pos, len);
    uint32_t l = load_le32(in + pos);
    DK_RETURN_IF(l > len - pos - 4, DK_CORRUPT, err,
                 "PLAIN BYTE_ARRAY dictionary: entry %lld at byte %zu has length %u but %zu "
                 "bytes remain", (long long)i, pos, l, len - pos - 4);
    starts[i] = (uint32_t)(pos + 4);
    lengths[i] = l;
    pos += 4 + (size_t)l;
  }
  return DK_OK;
}

/* ---- BYTE_STREAM_SPLIT ------------------------------------------------------------------- */

dk_status dk_pq__byte_stream_split(const uint8_t *in, size_t len, int width, int64_t total,
                                  int64_t first, int64_t n, uint8_t *out, dk_error *err) {
  DK_RETURN_IF(width <= 0, DK_CORRUPT, err, "BYTE_STREAM_SPLIT: invalid value width %d", width);
  DK_RETURN_IF(total < 0 || first < 0 || n < 0 || first > total || n > total - first, DK_CORRUPT,
               err, "BYTE_STREAM_SPLIT: values [%lld, %lld) outside the page's %lld values",
               (long long)first, (long long)first + (long long)n, (long long)total);
  DK_RETURN_IF((uint64_t)total > (uint64_t)len / (uint64_t)width, DK_CORRUPT, err,
               "BYTE_STREAM_SPLIT: %lld values of %d bytes need more than the %zu bytes present",
               (long long)total, width, len);
  const size_t stride = (size_t)total;
  const uint8_t *s = in + first;
  int64_t i = 0;
  if (width == 4) {
    const uint8_t *s0 = s, *s1 = s + stride, *s2 = s + 2 * stride, *s3 = s + 3 * stride;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) { /* 16 values: a 4x16 byte transpose */
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s0 + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s1 + i));
      __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s2 + i));
      __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(s3 + i));
      __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
      __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
      __m128i *o = (__m128i *)(void *)(out + 4 * i);
      _mm_storeu_si128(o, _mm_unpacklo_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
      _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
#endif
    for (; i < n; i++) {
      uint32_t v = (uint32_t)s0[i] | ((uint32_t)s1[i] << 8) | ((uint32_t)s2[i] << 16) |
                   ((uint32_t)s3[i] << 24);
      memcpy(out + 4 * i, &v, 4);
    }
  } else if (width == 8) {
    const uint8_t *sp[8];
    for (int k = 0; k < 8; k++) sp[k] = s + (size_t)k * stride;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) { /* 16 values: an 8x16 byte transpose */
#  define BSS_LD(k) _mm_loadu_si128((const __m128i *)(const void *)(sp[k] + i))
      __m128i v0 = BSS_LD(0), v1 = BSS_LD(1), v2 = BSS_LD(2), v3 = BSS_LD(3);
      __m128i v4 = BSS_LD(4), v5 = BSS_LD(5), v6 = BSS_LD(6), v7 = BSS_LD(7);
#  undef BSS_LD
      __m128i p01l = _mm_unpacklo_epi8(v0, v1), p01h = _mm_unpackhi_epi8(v0, v1);
      __m128i p23l = _mm_unpacklo_epi8(v2, v3), p23h = _mm_unpackhi_epi8(v2, v3);
      __m128i p45l = _mm_unpacklo_epi8(v4, v5), p45h = _mm_unpackhi_epi8(v4, v5);
      __m128i p67l = _mm_unpacklo_epi8(v6, v7), p67h = _mm_unpackhi_epi8(v6, v7);
      __m128i *o = (__m128i *)(void *)(out + 8 * i);
      /* bytes 0-3 (q) and 4-7 (r) of values 0-3, then 4-7, 8-11, 12-15 */
      __m128i q = _mm_unpacklo_epi16(p01l, p23l), r = _mm_unpacklo_epi16(p45l, p67l);
      _mm_storeu_si128(o + 0, _mm_unpacklo_epi32(q, r));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi32(q, r));
      q = _mm_unpackhi_epi16(p01l, p23l);
      r = _mm_unpackhi_epi16(p45l, p67l);
      _mm_storeu_si128(o + 2, _mm_unpacklo_epi32(q, r));
      _mm_storeu_si128(o + 3, _mm_unpackhi_epi32(q, r));
      q = _mm_unpacklo_epi16(p01h, p23h);
      r = _mm_unpacklo_epi16(p45h, p67h);
      _mm_storeu_si128(o + 4, _mm_unpacklo_epi32(q, r));
      _mm_storeu_si128(o + 5, _mm_unpackhi_epi32(q, r));
      q = _mm_unpackhi_epi16(p01h, p23h);
      r = _mm_unpackhi_epi16(p45h, p67h);
      _mm_storeu_si128(o + 6, _mm_unpacklo_epi32(q, r));
      _mm_storeu_si128(o + 7, _mm_unpackhi_epi32(q, r));
    }
#endif
    for (; i < n; i++) {
      uint64_t v = (uint64_t)sp[0][i] | ((uint64_t)sp[1][i] << 8) | ((uint64_t)sp[2][i] << 16) |
                   ((uint64_t)sp[3][i] << 24) | ((uint64_t)sp[4][i] << 32) |
                   ((uint64_t)sp[5][i] << 40) | ((uint64_t)sp[6][i] << 48) |
                   ((uint64_t)sp[7][i] << 56);
      memcpy(out + 8 * i, &v, 8);
    }
  } else {
    const size_t w = (size_t)width;
#if defined(__SSE2__)
    /* any width: 16 values at a time, streams four at a time through a 4x16 transpose whose
    ** 4-byte words land at byte k of each value */
    for (; i + 16 <= n; i += 16) {
      uint8_t *o = out + (size_t)i * w;
      size_t k = 0;
      for (; k + 4 <= w; k += 4) {
        const uint8_t *sk = s + k * stride + i;
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)sk);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(sk + stride));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(sk + 2 * stride));
        __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(sk + 3 * stride));
        __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
        __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
        uint32_t words[16];
        __m128i *wv = (__m128i *)(void *)words;
        _mm_storeu_si128(wv, _mm_unpacklo_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(wv + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(wv + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_storeu_si128(wv + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
        for (size_t j = 0; j < 16; j++) memcpy(o + j * w + k, &words[j], 4);
      }
      for (; k < w; k++) {
        const uint8_t *sk = s + k * stride + i;
        for (size_t j = 0; j < 16; j++) o[j * w + k] = sk[j];
      }
    }
#endif
    /* (the rest) tiles of 64 values so the strided stores stay in L1 */
    for (; i < n; i += 64) {
      const int64_t m = n - i < 64 ? n - i : 64;
      uint8_t *tile = out + (size_t)i * w;
      for (size_t k = 0; k < w; k++) {
        const uint8_t *sk = s + k * stride + i;
        for (int64_t j = 0; j < m; j++) tile[(size_t)j * w + k] = sk[j];
      }
    }
  }
  return DK_OK;
}

/* ---- dictionary gather ------------------------------------------------------------------- */

#define GATHER(W)                                                        \
  for (int64_t i = 0; i < n; i++) memcpy(out + (size_t)i * (W), dict + (size_t)idx[i] * (W), (W))

void dk_pq__gather(const uint8_t *dict, int width, const uint32_t *idx, int64_t n, uint8_t *out) {
  switch (width) {
    case 1:
      for (int64_t i = 0; i < n; i++) out[i] = dict[idx[i]];
      break;
    case 2: GATHER(2); break;
    case 3: GATHER(3); break;
    case 4: GATHER(4); break;
    case 5: GATHER(5); break;
    case 6: GATHER(6); break;
    case 7: GATHER(7); break;
    case 8: GATHER(8); break;
    case 12: GATHER(12); break;
    case 16: GATHER(16); break;
    default: {
      const size_t w = (size_t)width;
      for (int64_t i = 0; i < n; i++) memcpy(out + (size_t)i * w, dict + (size_t)idx[i] * w, w);
    }
  }
}
