/*
** encoding_rle.c — the RLE / bit-packing hybrid decoder (apache/parquet-format Encodings.md,
** "Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"), used for repetition and definition
** levels, dictionary indices and v2 BOOLEAN pages.
**
**   run            := bit-packed-run | rle-run
**   header         := ULEB128 varint
**   bit-packed-run := header with LSB 1 (header >> 1 = groups of 8), then groups*bit_width bytes
**   rle-run        := header with LSB 0 (header >> 1 = count), then the value in
**                     ceil(bit_width / 8) little-endian bytes
**
** A bit-packed run whose bytes are cut short by the end of the input is accepted for the
** values its bytes fully hold (the last run is padded to a group of 8, and some writers omit
** trailing padding); asking for more values than the stream holds is DK_CORRUPT.
**
** Also the deprecated BIT_PACKED (= 4) level encoding ("Bit-packed (Deprecated)"): values
** packed MSB first, without a header.
*/
#include "codec/parquet/encoding.h"

void dk_pq__rle_init(dk_pq_rle *d, const uint8_t *p, size_t len, int bit_width) {
  memset(d, 0, sizeof *d);
  d->start = d->p = p;
  d->end = p + len;
  d->bit_width = bit_width;
}

static dk_status rle_next_run(dk_pq_rle *d, dk_error *err) {
  const uint8_t *p = d->p;
  uint64_t header = 0;
  int shift = 0;
  for (;;) {
    DK_RETURN_IF(p >= d->end, DK_CORRUPT, err,
                 "RLE/bit-packed hybrid: stream of %zu bytes ends inside the run header at "
                 "byte %zu", (size_t)(d->end - d->start), (size_t)(d->p - d->start));
    uint8_t b = *p++;
    header |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
    DK_RETURN_IF(shift > 35, DK_CORRUPT, err,
                 "RLE/bit-packed hybrid: run header varint at byte %zu is longer than 5 bytes",
                 (size_t)(d->p - d->start));
  }
  DK_RETURN_IF(header > 0xffffffffu, DK_CORRUPT, err,
               "RLE/bit-packed hybrid: run header at byte %zu exceeds 32 bits",
               (size_t)(d->p - d->start));
  const int bw = d->bit_width;
  const size_t left = (size_t)(d->end - p);
  if (header & 1) {
    uint64_t groups = header >> 1;
    uint64_t bytes = groups * (uint64_t)bw;
    uint64_t values = groups * 8;
    if (bytes > left) {
      /* cut short: keep the values the available bytes hold completely */
      bytes = left;
      values = bw ? ((uint64_t)left * 8) / (uint64_t)bw : values;
    }
    d->bp = p;
    d->bp_left = (int64_t)values;
    d->bp_pos = 0;
    d->rle_left = 0;
    d->p = p + bytes;
  } else {
    size_t vbytes = ((size_t)bw + 7) / 8;
    DK_RETURN_IF(vbytes > left, DK_CORRUPT, err,
                 "RLE/bit-packed hybrid: RLE run value at byte %zu needs %zu bytes, %zu left",
                 (size_t)(p - d->start), vbytes, left);
    uint32_t v = 0;
    for (size_t i = 0; i < vbytes; i++) v |= (uint32_t)p[i] << (8 * i);
    DK_RETURN_IF(bw < 32 && (v >> bw) != 0, DK_CORRUPT, err,
                 "RLE/bit-packed hybrid: RLE run value at byte %zu does not fit bit width %d",
                 (size_t)(p - d->start), bw);
    d->rle_value = v;
    d->rle_left = (int64_t)(header >> 1);
    d->bp_left = 0;
    d->p = p + vbytes;
  }
  return DK_OK;
}

dk_status dk_pq__rle_next(dk_pq_rle *d, dk_error *err) {
  DK_RETURN_IF(d->bit_width < 0 || d->bit_width > 32, DK_CORRUPT, err,
               "RLE/bit-packed hybrid: bit width out of range 0..32");
  while (d->rle_left <= 0 && d->bp_left <= 0) {
    if (DK_UNLIKELY(d->p >= d->end))
      return dk__error_set(err, DK_CORRUPT,
                           "RLE/bit-packed hybrid: stream of %zu bytes exhausted with values "
                           "still expected", (size_t)(d->end - d->start));
    DK_RETURN_NOT_OK(rle_next_run(d, err));
  }
  return DK_OK;
}

/* Copies k values of the current bit-packed run, starting at bp_pos, into out. */
static void rle_take_packed(dk_pq_rle *d, uint32_t *out, int64_t k) {
  const int bw = d->bit_width;
  int64_t pos = d->bp_pos;
  int64_t off = pos & 7;
  if (off) {
    uint32_t tmp[8];
    int64_t m = DK_MIN(8 - off, k);
    const uint8_t *src = d->bp + (pos >> 3) * bw;
    dk_pq__unpack32_avail(src, (size_t)(d->end - src), bw, tmp, off + m);
    memcpy(out, tmp + off, (size_t)m * sizeof(uint32_t));
    out += m;
    pos += m;
    k -= m;
  }
  if (k > 0) {
    const uint8_t *src = d->bp + (pos >> 3) * bw;
    dk_pq__unpack32_avail(src, (size_t)(d->end - src), bw, out, k);
    pos += k;
  }
  d->bp_left -= pos - d->bp_pos;
  d->bp_pos = pos;
}

dk_status dk_pq__rle_get(dk_pq_rle *d, uint32_t *out, int64_t n, dk_error *err) {
  DK_RETURN_IF(d->bit_width < 0 || d->bit_width > 32, DK_CORRUPT, err,
               "RLE/bit-packed hybrid: bit width out of range 0..32");
  while (n > 0) {
    if (d->rle_left > 0) {
      int64_t k = DK_MIN(d->rle_left, n);
      const uint32_t v = d->rle_value;
      for (int64_t i = 0; i < k; i++) out[i] = v;
      d->rle_left -= k;
      out += k;
      n -= k;
    } else if (d->bp_left > 0) {
      int64_t k = DK_MIN(d->bp_left, n);
      rle_take_packed(d, out, k);
      out += k;
      n -= k;
    } else {
      if (DK_UNLIKELY(d->p >= d->end))
        return dk__error_set(err, DK_CORRUPT,
                             "RLE/bit-packed hybrid: stream of %zu bytes exhausted with %lld "
                             "values still expected",
                             (size_t)(d->end - d->start), (long long)n);
      DK_RETURN_NOT_OK(rle_next_run(d, err));
    }
  }
  return DK_OK;
}

dk_status dk_pq__rle_get_indices(dk_pq_rle *d, uint32_t *out, int64_t n, uint32_t dict_len,
                                dk_error *err) {
  const int bw = d->bit_width;
  DK_RETURN_IF(d->bit_width < 0 || d->bit_width > 32, DK_CORRUPT, err,
               "RLE/bit-packed hybrid: bit width out of range 0..32");
  while (n > 0) {
    if (d->rle_left > 0) {
      int64_t k = DK_MIN(d->rle_left, n);
      const uint32_t v = d->rle_value;
      DK_RETURN_IF(v >= dict_len, DK_CORRUPT, err,
                   "dictionary index out of range (dictionary has %u entries)", dict_len);
      for (int64_t i = 0; i < k; i++) out[i] = v;
      d->rle_left -= k;
      out += k;
      n -= k;
    } else if (d->bp_left > 0) {
      int64_t k = DK_MIN(d->bp_left, n);
      rle_take_packed(d, out, k);
      if (bw >= 32 || dict_len < (1u << bw)) { /* else no bw-bit value can be out of range */
        uint32_t bad = 0;
        for (int64_t i = 0; i < k; i++) bad |= out[i] >= dict_len;
        if (DK_UNLIKELY(bad))
          return dk__error_set(err, DK_CORRUPT,
                               "dictionary index out of range (dictionary has %u entries)",
                               dict_len);
      }
      out += k;
      n -= k;
    } else {
      if (DK_UNLIKELY(d->p >= d->end))
        return dk__error_set(err, DK_CORRUPT,
                             "RLE/bit-packed hybrid: stream of %zu bytes exhausted with %lld "
                             "dictionary indices still expected",
                             (size_t)(d->end - d->start), (long long)n);
      DK_RETURN_NOT_OK(rle_next_run(d, err));
    }
  }
  return DK_OK;
}

dk_status dk_pq__bitpacked_msb(const uint8_t *in, size_t len, int bit_width, uint32_t *out,
                              int64_t n, size_t *consumed, dk_error *err) {
  DK_RETURN_IF(bit_width < 0 || bit_width > 32 || n < 0, DK_CORRUPT, err,
               "BIT_PACKED: bit width %d out of range 0..32", bit_width);
  const uint64_t bits = (uint64_t)n * (uint64_t)bit_width;
  DK_RETURN_IF((bits + 7) / 8 > len, DK_CORRUPT, err,
               "BIT_PACKED: %lld values of %d bits need %llu bytes, %zu present", (long long)n,
               bit_width, (unsigned long long)((bits + 7) / 8), len);
  uint64_t bit = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t v = 0;
    for (int j = 0; j < bit_width; j++, bit++)
      v = (v << 1) | ((in[bit >> 3] >> (7 - (bit & 7))) & 1u);
    out[i] = v;
  }
  if (consumed) *consumed = (size_t)((bits + 7) / 8);
  return DK_OK;
}
