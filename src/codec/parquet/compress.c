/*
** compress.c — page decompression for the Parquet CompressionCodec values
** (apache/parquet-format Compression.md): UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD, LZ4_RAW
** and the deprecated LZ4 (Hadoop framing, with the fallbacks other readers accept).
**
** Every codec must produce exactly dst_len bytes (the page header's uncompressed size);
** anything else is DK_CORRUPT. Sizes handed to the libraries are bounded by the buffers.
*/
#include "codec/parquet/encoding.h"

#include <limits.h>

#include <brotli/decode.h>
#include <libdeflate.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

const char *dk_pq__codec_name(int codec) {
  switch (codec) {
    case DK_PQ_CODEC_UNCOMPRESSED: return "UNCOMPRESSED";
    case DK_PQ_CODEC_SNAPPY: return "SNAPPY";
    case DK_PQ_CODEC_GZIP: return "GZIP";
    case DK_PQ_CODEC_LZO: return "LZO";
    case DK_PQ_CODEC_BROTLI: return "BROTLI";
    case DK_PQ_CODEC_LZ4: return "LZ4";
    case DK_PQ_CODEC_ZSTD: return "ZSTD";
    case DK_PQ_CODEC_LZ4_RAW: return "LZ4_RAW";
    default: return "UNKNOWN";
  }
}

static dk_status size_mismatch(dk_error *err, const char *codec, size_t got, size_t want) {
  return dk__error_set(err, DK_CORRUPT,
                       "%s: decompressed %zu bytes but the page header says %zu", codec, got,
                       want);
}

/* ---- SNAPPY ------------------------------------------------------------------------------ */

static dk_status dec_snappy(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                            dk_error *err) {
  size_t ulen = 0;
  if (snappy_uncompressed_length((const char *)src, src_len, &ulen) != SNAPPY_OK)
    return dk__error_set(err, DK_CORRUPT, "SNAPPY: invalid stream header");
  if (ulen != dst_len) return size_mismatch(err, "SNAPPY", ulen, dst_len);
  size_t out_len = dst_len;
  if (snappy_uncompress((const char *)src, src_len, (char *)dst, &out_len) != SNAPPY_OK)
    return dk__error_set(err, DK_CORRUPT, "SNAPPY: invalid compressed data");
  if (out_len != dst_len) return size_mismatch(err, "SNAPPY", out_len, dst_len);
  return DK_OK;
}

/* ---- GZIP -------------------------------------------------------------------------------- */

/* zlib fallback for anything libdeflate's gzip/zlib paths do not take (auto-detects the
** gzip or zlib wrapper, and continues over concatenated gzip members). */
static dk_status dec_zlib_inflate(const uint8_t *src, size_t src_len, uint8_t *dst,
                                  size_t dst_len, dk_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    return dk__error_set(err, DK_NOMEM, "GZIP: cannot initialise zlib");
  size_t in_done = 0, out_done = 0;
  dk_status st = DK_OK;
  for (;;) {
    size_t in_chunk = DK_MIN(src_len - in_done, (size_t)UINT_MAX);
    size_t out_chunk = DK_MIN(dst_len - out_done, (size_t)UINT_MAX);
    zs.next_in = (Bytef *)(uintptr_t)(src + in_done);
    zs.avail_in = (uInt)in_chunk;
    zs.next_out = dst + out_done;
    zs.avail_out = (uInt)out_chunk;
    int rc = inflate(&zs, Z_NO_FLUSH);
    in_done += in_chunk - zs.avail_in;
    out_done += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      /* another gzip member may follow */
      if (in_done < src_len && out_done < dst_len && inflateReset(&zs) == Z_OK) continue;
      break;
    }
    if (rc == Z_OK && (in_chunk - zs.avail_in || out_chunk - zs.avail_out)) continue;
    if (rc == Z_BUF_ERROR && out_done == dst_len) {
      st = dk__error_set(err, DK_CORRUPT, "GZIP: stream decompresses to more than %zu bytes",
                         dst_len);
    } else {
      st = dk__error_set(err, DK_CORRUPT, "GZIP: invalid deflate stream (%s)",
                         zs.msg ? zs.msg : "truncated");
    }
    break;
  }
  inflateEnd(&zs);
  if (st == DK_OK && out_done != dst_len) st = size_mismatch(err, "GZIP", out_done, dst_len);
  return st;
}

static dk_status dec_gzip(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                          dk_error *err) {
  bool is_gzip = src_len >= 2 && src[0] == 0x1f && src[1] == 0x8b;
  bool is_zlib = src_len >= 2 && (src[0] & 0x0f) == 8 && ((src[0] << 8) | src[1]) % 31 == 0;
  if (!is_gzip && !is_zlib) return dec_zlib_inflate(src, src_len, dst, dst_len, err);
  struct libdeflate_decompressor *dec = libdeflate_alloc_decompressor();
  if (!dec) return dk__error_set(err, DK_NOMEM, "GZIP: cannot allocate a decompressor");
  enum libdeflate_result r;
  size_t out_done = 0;
  if (is_gzip) {
    size_t in_done = 0;
    do { /* one or more gzip members */
      size_t in_used = 0, out_got = 0;
      r = libdeflate_gzip_decompress_ex(dec, src + in_done, src_len - in_done, dst + out_done,
                                        dst_len - out_done, &in_used, &out_got);
      if (r != LIBDEFLATE_SUCCESS) break;
      in_done += in_used;
      out_done += out_got;
    } while (in_done + 2 <= src_len && src[in_done] == 0x1f && src[in_done + 1] == 0x8b);
    if (r == LIBDEFLATE_SUCCESS && in_done != src_len) {
      libdeflate_free_decompressor(dec);
      return dk__error_set(err, DK_CORRUPT, "GZIP: %zu trailing bytes after the gzip stream",
                           src_len - in_done);
    }
  } else {
    r = libdeflate_zlib_decompress(dec, src, src_len, dst, dst_len, &out_done);
  }
  libdeflate_free_decompressor(dec);
  if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
    return dk__error_set(err, DK_CORRUPT, "GZIP: stream decompresses to more than %zu bytes",
                         dst_len);
  if (r != LIBDEFLATE_SUCCESS)
    return dk__error_set(err, DK_CORRUPT, "GZIP: invalid %s stream",
                         is_gzip ? "gzip" : "zlib");
  if (out_done != dst_len) return size_mismatch(err, "GZIP", out_done, dst_len);
  return DK_OK;
}

/* ---- BROTLI ------------------------------------------------------------------------------ */

static dk_status dec_brotli(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                            dk_error *err) {
  size_t out_len = dst_len;
  BrotliDecoderResult r = BrotliDecoderDecompress(src_len, src, &out_len, dst);
  if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
    return dk__error_set(err, DK_CORRUPT, "BROTLI: stream decompresses to more than %zu bytes",
                         dst_len);
  if (r != BROTLI_DECODER_RESULT_SUCCESS)
    return dk__error_set(err, DK_CORRUPT, "BROTLI: invalid or truncated stream");
  if (out_len != dst_len) return size_mismatch(err, "BROTLI", out_len, dst_len);
  return DK_OK;
}

/* ---- ZSTD -------------------------------------------------------------------------------- */

static dk_status dec_zstd(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                          dk_error *err) {
  size_t r = ZSTD_decompress(dst, dst_len, src, src_len);
  if (ZSTD_isError(r))
    return dk__error_set(err, DK_CORRUPT, "ZSTD: %s", ZSTD_getErrorName(r));
  if (r != dst_len) return size_mismatch(err, "ZSTD", r, dst_len);
  return DK_OK;
}

/* ---- LZ4 --------------------------------------------------------------------------------- */

static dk_status dec_lz4_raw(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                             dk_error *err) {
  if (src_len > INT_MAX || dst_len > INT_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "LZ4_RAW: page larger than 2 GiB");
  int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
  if (r < 0) return dk__error_set(err, DK_CORRUPT, "LZ4_RAW: invalid or truncated block");
  if ((size_t)r != dst_len) return size_mismatch(err, "LZ4_RAW", (size_t)r, dst_len);
  return DK_OK;
}

static uint32_t load_be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Hadoop's LZ4 codec: blocks of [BE32 uncompressed size] then one or more
** [BE32 compressed size][LZ4 block] chunks that together produce that size (Hadoop splits a
** block larger than its buffer; Arrow and parquet-mr write one chunk per block).
** Returns false (without recording an error) when the input does not parse that way. */
static bool try_lz4_hadoop(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len) {
  size_t in = 0, out = 0;
  if (src_len < 8) return false;
  while (in < src_len) {
    if (src_len - in < 8) return false;
    uint32_t ulen = load_be32(src + in);
    in += 4;
    if (ulen > dst_len - out || ulen > INT_MAX) return false;
    size_t block_end = out + ulen;
    do {
      if (src_len - in < 4) return false;
      uint32_t clen = load_be32(src + in);
      in += 4;
      if (clen > src_len - in || clen > INT_MAX) return false;
      int r = LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)clen,
                                  (int)(block_end - out));
      if (r < 0 || (r == 0 && ulen != 0)) return false;
      in += clen;
      out += (size_t)r;
    } while (out < block_end);
  }
  return out == dst_len;
}

/* The LZ4 frame format (magic 0x184D2204), which some old writers used for this codec. */
static dk_status dec_lz4_frame(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                               dk_error *err) {
  LZ4F_dctx *ctx = NULL;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION)))
    return dk__error_set(err, DK_NOMEM, "LZ4: cannot create a frame decoder");
  size_t in = 0, out = 0;
  dk_status st = DK_OK;
  for (;;) {
    size_t in_sz = src_len - in, out_sz = dst_len - out;
    size_t hint = LZ4F_decompress(ctx, dst + out, &out_sz, src + in, &in_sz, NULL);
    if (LZ4F_isError(hint)) {
      st = dk__error_set(err, DK_CORRUPT, "LZ4: invalid frame (%s)", LZ4F_getErrorName(hint));
      break;
    }
    in += in_sz;
    out += out_sz;
    if (hint == 0) {
      if (in < src_len) continue; /* another frame follows */
      break;
    }
    if (in_sz == 0 && out_sz == 0) {
      st = dk__error_set(err, DK_CORRUPT,
                         in >= src_len ? "LZ4: truncated frame"
                                       : "LZ4: frame decompresses to more bytes than expected");
      break;
    }
  }
  LZ4F_freeDecompressionContext(ctx);
  if (st == DK_OK && out != dst_len) st = size_mismatch(err, "LZ4", out, dst_len);
  return st;
}

static dk_status dec_lz4_hadoop(const uint8_t *src, size_t src_len, uint8_t *dst,
                                size_t dst_len, dk_error *err) {
  if (try_lz4_hadoop(src, src_len, dst, dst_len)) return DK_OK;
  if (src_len >= 4 && src[0] == 0x04 && src[1] == 0x22 && src[2] == 0x4d && src[3] == 0x18)
    return dec_lz4_frame(src, src_len, dst, dst_len, err);
  dk_status st = dec_lz4_raw(src, src_len, dst, dst_len, err);
  if (st != DK_OK && err && err->code == DK_CORRUPT)
    dk__error_prefix(err, "LZ4 (neither Hadoop framing nor a raw block)");
  return st;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

dk_status dk_pq__decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                           size_t dst_len, dk_error *err) {
  if (src_len == 0 && dst_len == 0 && codec >= 0 && codec <= 7 && codec != DK_PQ_CODEC_LZO)
    return DK_OK; /* an empty page */
  switch (codec) {
    case DK_PQ_CODEC_UNCOMPRESSED:
      if (src_len != dst_len) return size_mismatch(err, "UNCOMPRESSED", src_len, dst_len);
      if (dst_len) memcpy(dst, src, dst_len);
      return DK_OK;
    case DK_PQ_CODEC_SNAPPY: return dec_snappy(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_GZIP: return dec_gzip(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_BROTLI: return dec_brotli(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_ZSTD: return dec_zstd(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_LZ4_RAW: return dec_lz4_raw(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_LZ4: return dec_lz4_hadoop(src, src_len, dst, dst_len, err);
    case DK_PQ_CODEC_LZO:
      return dk__error_set(err, DK_UNSUPPORTED, "compression codec LZO is not supported");
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "unknown compression codec");
  }
}
