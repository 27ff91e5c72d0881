/*
** write/compress.c — page compression for the Parquet writer (apache/parquet-format
** Compression.md): UNCOMPRESSED, SNAPPY (raw snappy blocks), GZIP (RFC 1952 members, via
** libdeflate), ZSTD (one frame per page, content size recorded) and LZ4_RAW (one LZ4 block,
** no framing). The deprecated Hadoop-framed LZ4 and LZO are not written. Each compressor
** keeps its library context across pages.
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
