/*
** codec.h — the Parquet CompressionCodec values (apache/parquet-format parquet.thrift,
** Compression.md) and the page (de)compression entry points shared by the reader and the
** writer (library-internal, not API). decompress lives in compress.c (read side), compress in
** write/compress.c, so neither side links the other's code.
*/
#ifndef DK_PARQUET_CODEC_H
#define DK_PARQUET_CODEC_H

#include "util/util.h"

enum {
  DK_PQ_CODEC_UNCOMPRESSED = 0,
  DK_PQ_CODEC_SNAPPY = 1,
  DK_PQ_CODEC_GZIP = 2,
  DK_PQ_CODEC_LZO = 3,     /* unsupported */
  DK_PQ_CODEC_BROTLI = 4,
  DK_PQ_CODEC_LZ4 = 5,     /* Hadoop framing (and the raw-block fallback other readers accept) */
  DK_PQ_CODEC_ZSTD = 6,
  DK_PQ_CODEC_LZ4_RAW = 7
};

/* Decompresses src[0..src_len) into exactly dst_len bytes at dst. A stream that produces
** fewer or more bytes than dst_len is DK_CORRUPT; LZO/unknown codecs are DK_UNSUPPORTED. */
dk_status dk_pq__decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                           size_t dst_len, dk_error *err);

/* Name for messages ("SNAPPY", ...). */
const char *dk_pq__codec_name(int codec);

/* ---- compression (write/compress.c) ------------------------------------------------------ */

/* A reusable compressor for one codec (keeps the library contexts between pages). */
typedef struct dk_pq_compressor {
  int codec;
  int level;               /* 0 = the codec's default */
  void *zstd;              /* ZSTD_CCtx */
  void *deflate;           /* struct libdeflate_compressor */
} dk_pq_compressor;

/* codec: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW (others DK_UNSUPPORTED). */
dk_status dk_pq__compressor_init(dk_pq_compressor *c, int codec, int level, dk_error *err);
void dk_pq__compressor_dispose(dk_pq_compressor *c);
/* Upper bound of the compressed size of n bytes. */
size_t dk_pq__compress_bound(const dk_pq_compressor *c, size_t n);
/* Compresses src[0..n) into dst (room for dk_pq__compress_bound(n)); *out_len = bytes. */
dk_status dk_pq__compress(dk_pq_compressor *c, const uint8_t *src, size_t n, uint8_t *dst,
                          size_t *out_len, dk_error *err);

/* One piece of a page body. */
typedef struct dk_pq_part {
  const uint8_t *p;
  size_t len;
} dk_pq_part;

/* Upper bound of dk_pq__compress_parts's output for these parts. */
size_t dk_pq__compress_parts_bound(const dk_pq_compressor *c, const dk_pq_part *parts, int n);
/* Compresses the concatenation of parts[0..n) (a page's levels and values) into dst, as
** dk_pq__compress of the joined bytes would, without joining them where the codec allows:
** SNAPPY compresses each part alone and joins the element streams under one length (snappy's
** copies only point back into bytes already produced, so streams compressed separately
** decode as the concatenation); ZSTD streams the parts into one frame; GZIP and LZ4_RAW copy
** them into `scratch` first. */
dk_status dk_pq__compress_parts(dk_pq_compressor *c, const dk_pq_part *parts, int n,
                                dk_buf *scratch, uint8_t *dst, size_t *out_len, dk_error *err);

#endif /* DK_PARQUET_CODEC_H */
