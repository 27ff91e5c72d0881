/*
** write/compress.c — page compression for the Parquet writer (apache/parquet-format
** Compression.md): UNCOMPRESSED, SNAPPY (raw snappy blocks), GZIP (RFC 1952 members, via
** libdeflate), ZSTD (one frame per page, content size recorded) and LZ4_RAW (one LZ4 block,
** no framing). The deprecated Hadoop-framed LZ4 and LZO are not written. Each compressor
** keeps its library context across pages. A page body given in parts (levels, values) is
** compressed without first being copied together where the codec's format allows it
** (dk_pq__compress_parts; snappy's format: google/snappy format_description.txt).
*/
#include "codec/parquet/codec.h"

#include <limits.h>

#include <libdeflate.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zstd.h>

dk_status dk_pq__compressor_init(dk_pq_compressor *c, int codec, int level, dk_error *err) {
  memset(c, 0, sizeof *c);
  c->codec = codec;
  c->level = level;
  switch (codec) {
    case DK_PQ_CODEC_UNCOMPRESSED:
    case DK_PQ_CODEC_SNAPPY:
    case DK_PQ_CODEC_LZ4_RAW: return DK_OK;
    case DK_PQ_CODEC_ZSTD:
      if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
        return dk__error_set(err, DK_INVALID, "ZSTD compression level %d outside %d..%d", level,
                             ZSTD_minCLevel(), ZSTD_maxCLevel());
      c->zstd = ZSTD_createCCtx();
      if (!c->zstd) return dk__error_set(err, DK_NOMEM, "ZSTD: cannot create a context");
      if (!level) c->level = 1; /* Arrow's default (parquet-mr uses 3) */
      return DK_OK;
    case DK_PQ_CODEC_GZIP:
      if (level < 0 || level > 12)
        return dk__error_set(err, DK_INVALID, "GZIP compression level %d outside 1..12", level);
      c->deflate = libdeflate_alloc_compressor(level ? level : 6);
      if (!c->deflate) return dk__error_set(err, DK_NOMEM, "GZIP: cannot create a compressor");
      return DK_OK;
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "cannot write compression codec %s",
                           dk_pq__codec_name(codec));
  }
}

void dk_pq__compressor_dispose(dk_pq_compressor *c) {
  if (c->zstd) ZSTD_freeCCtx(c->zstd);
  if (c->deflate) libdeflate_free_compressor(c->deflate);
  c->zstd = c->deflate = NULL;
}

size_t dk_pq__compress_bound(const dk_pq_compressor *c, size_t n) {
  switch (c->codec) {
    case DK_PQ_CODEC_SNAPPY: return snappy_max_compressed_length(n);
    case DK_PQ_CODEC_ZSTD: return ZSTD_compressBound(n);
    case DK_PQ_CODEC_GZIP: return libdeflate_gzip_compress_bound(c->deflate, n);
    case DK_PQ_CODEC_LZ4_RAW: return n > (size_t)LZ4_MAX_INPUT_SIZE ? n : (size_t)LZ4_compressBound((int)n);
    default: return n;
  }
}

dk_status dk_pq__compress(dk_pq_compressor *c, const uint8_t *src, size_t n, uint8_t *dst,
                          size_t *out_len, dk_error *err) {
  size_t cap = dk_pq__compress_bound(c, n);
  switch (c->codec) {
    case DK_PQ_CODEC_UNCOMPRESSED:
      if (n) memcpy(dst, src, n);
      *out_len = n;
      return DK_OK;
    case DK_PQ_CODEC_SNAPPY: {
      size_t len = cap;
      if (snappy_compress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK)
        return dk__error_set(err, DK_INTERNAL, "SNAPPY: compression failed");
      *out_len = len;
      return DK_OK;
    }
    case DK_PQ_CODEC_ZSTD: {
      size_t r = ZSTD_compressCCtx(c->zstd, dst, cap, src, n, c->level);
      if (ZSTD_isError(r)) return dk__error_set(err, DK_INTERNAL, "ZSTD: %s", ZSTD_getErrorName(r));
      *out_len = r;
      return DK_OK;
    }
    case DK_PQ_CODEC_GZIP: {
      size_t r = libdeflate_gzip_compress(c->deflate, src, n, dst, cap);
      if (!r) return dk__error_set(err, DK_INTERNAL, "GZIP: compression failed");
      *out_len = r;
      return DK_OK;
    }
    case DK_PQ_CODEC_LZ4_RAW: {
      if (n > (size_t)LZ4_MAX_INPUT_SIZE)
        return dk__error_set(err, DK_UNSUPPORTED, "LZ4_RAW: page larger than %d bytes",
                             LZ4_MAX_INPUT_SIZE);
      int r = LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)DK_MIN(cap, (size_t)INT_MAX));
      if (r <= 0 && n) return dk__error_set(err, DK_INTERNAL, "LZ4_RAW: compression failed");
      *out_len = (size_t)r;
      return DK_OK;
    }
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "cannot write compression codec %s",
                           dk_pq__codec_name(c->codec));
  }
}

/* ---- page bodies in parts ---------------------------------------------------------------- */

static size_t varint_len(size_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

size_t dk_pq__compress_parts_bound(const dk_pq_compressor *c, const dk_pq_part *parts, int n) {
  size_t total = 0, sum = 0;
  for (int i = 0; i < n; i++) {
    total += parts[i].len;
    sum += dk_pq__compress_bound(c, parts[i].len);
  }
  size_t whole = dk_pq__compress_bound(c, total);
  return (c->codec == DK_PQ_CODEC_SNAPPY ? sum + 5 : whole);
}

/* Snappy: the stream is the varint of the uncompressed length, then elements. Each part is
** compressed so that its own length varint lands just before where its elements belong (over
** bytes already written, saved and put back), so the elements of all parts follow each other
** after one varint of the total. */
static dk_status snappy_parts(const dk_pq_part *parts, int n, uint8_t *dst, size_t *out_len,
                              dk_error *err) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].len;
  if (total > UINT32_MAX) return dk__error_set(err, DK_UNSUPPORTED, "SNAPPY: page larger than 4 GiB");
  uint8_t *o = dst;
  size_t v = total;
  while (v >= 0x80) *o++ = (uint8_t)(v | 0x80), v >>= 7;
  *o++ = (uint8_t)v;
  for (int i = 0; i < n; i++) {
    if (!parts[i].len) continue;
    size_t h = varint_len(parts[i].len); /* <= the total's varint, so o - h >= dst */
    uint8_t save[8];
    memcpy(save, o - h, h);
    size_t len = snappy_max_compressed_length(parts[i].len);
    if (snappy_compress((const char *)parts[i].p, parts[i].len, (char *)(o - h), &len) != SNAPPY_OK)
      return dk__error_set(err, DK_INTERNAL, "SNAPPY: compression failed");
    memcpy(o - h, save, h);
    o += len - h;
  }
  *out_len = (size_t)(o - dst);
  return DK_OK;
}

static dk_status zstd_parts(dk_pq_compressor *c, const dk_pq_part *parts, int n, uint8_t *dst,
                            size_t cap, size_t *out_len, dk_error *err) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].len;
  ZSTD_CCtx *z = c->zstd;
  size_t r = ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, c->level);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setPledgedSrcSize(z, total);
  ZSTD_outBuffer out = {dst, cap, 0};
  for (int i = 0; i < n && !ZSTD_isError(r); i++) {
    ZSTD_inBuffer in = {parts[i].p, parts[i].len, 0};
    ZSTD_EndDirective end = i + 1 == n ? ZSTD_e_end : ZSTD_e_continue;
    do {
      r = ZSTD_compressStream2(z, &out, &in, end);
    } while (!ZSTD_isError(r) && (end == ZSTD_e_end ? r != 0 : in.pos < in.size));
  }
  if (ZSTD_isError(r)) return dk__error_set(err, DK_INTERNAL, "ZSTD: %s", ZSTD_getErrorName(r));
  *out_len = out.pos;
  return DK_OK;
}

dk_status dk_pq__compress_parts(dk_pq_compressor *c, const dk_pq_part *parts, int n,
                                dk_buf *scratch, uint8_t *dst, size_t *out_len, dk_error *err) {
  if (n == 1) return dk_pq__compress(c, parts[0].p, parts[0].len, dst, out_len, err);
  switch (c->codec) {
    case DK_PQ_CODEC_SNAPPY: return snappy_parts(parts, n, dst, out_len, err);
    case DK_PQ_CODEC_ZSTD:
      return zstd_parts(c, parts, n, dst, dk_pq__compress_parts_bound(c, parts, n), out_len, err);
    case DK_PQ_CODEC_UNCOMPRESSED: {
      size_t at = 0;
      for (int i = 0; i < n; i++) {
        if (parts[i].len) memcpy(dst + at, parts[i].p, parts[i].len);
        at += parts[i].len;
      }
      *out_len = at;
      return DK_OK;
    }
    default: {
      dk__buf_clear(scratch);
      for (int i = 0; i < n; i++) DK_RETURN_NOT_OK(dk__buf_append(scratch, parts[i].p, parts[i].len, err));
      return dk_pq__compress(c, (const uint8_t *)scratch->data, scratch->len, dst, out_len, err);
    }
  }
}
