/*
** write.c — writing deletion vectors: building a RoaringBitmapArray from row indexes,
** serializing it, and storing it inline or in a DV file as delta-spark does.
**
** Follows Delta PROTOCOL.md § "Deletion Vector Format" (little-endian magic 1681511377, then
** the 64-bit Roaring portable format: a uint64 bucket count, per bucket a uint32 key with the
** top bit clear and a 32-bit portable Roaring bitmap), § "Deletion Vector File Storage Format"
** (a version byte 1, then per DV a big-endian int32 size, the bitmap, a big-endian CRC-32 of
** the bitmap; `offset` is the position of the size) and § "Deletion Vector Descriptor Schema"
** ('u': random prefix + the Z85 text of the file's UUID, 'i': the Z85 text of the bitmap
** padded to 4 bytes). delta-spark's layout (storage/dv/DeletionVectorStore.scala,
** DMLWithDeletionVectorsHelper.scala): one `deletion_vector_<uuid>.bin` per writer holding the
** DVs of many data files, in the table root (or under a random prefix directory with
** delta.randomizeFilePrefixes), never overwritten.
**
** How it works: the 32-bit buckets are CRoaring bitmaps (Debian's libroaring; its portable
** serializer writes exactly the 32-bit part of the format, and run_optimize picks run
** containers where they are smaller, as the Java RoaringBitmap Delta uses does). The 64-bit
** framing around them is ours, because CRoaring 0.2.66 has no 64-bit bitmap. Decoding stays
** in bitmap.c (our validating decoder); the tests decode everything written here with both
** that decoder and CRoaring. CRoaring allocates with malloc: its 0.2 API has no allocator
** hook, so the bitmaps' memory does not go through the dk_allocator (the buffers we hand
** back do).
*/
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <roaring/roaring.h>
#pragma GCC diagnostic pop

#include "dv/dv.h"
#include "io/sink.h"

typedef struct dv_bucket {
  uint32_t key;            /* row >> 32 */
  roaring_bitmap_t *bm;
} dv_bucket;

struct dk_dv_builder {
  const dk_allocator *alloc;
  dv_bucket *b;            /* ascending key */
  size_t n, cap;
  uint32_t pend[1024];     /* rows of bucket pend_key not yet added */
  size_t n_pend;
  uint32_t pend_key;
};

dk_status dk_dv__builder_new(dk_dv_builder **out, const dk_allocator *alloc, dk_error *err) {
  *out = dk__calloc(alloc, 1, sizeof **out);
  if (!*out) return dk__error_set(err, DK_NOMEM, "out of memory (deletion vector)");
  (*out)->alloc = alloc;
  return DK_OK;
}

void dk_dv__builder_free(dk_dv_builder *b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) roaring_bitmap_free(b->b[i].bm);
  dk__free(b->alloc, b->b);
  dk__free(b->alloc, b);
}

static dk_status bucket_for(roaring_bitmap_t **out, dk_dv_builder *b, uint32_t key,
                            dk_error *err) {
  size_t lo = 0, hi = b->n;
  if (b->n && b->b[b->n - 1].key == key) { /* the common case: rows in order */
    *out = b->b[b->n - 1].bm;
    return DK_OK;
  }
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (b->b[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  if (lo < b->n && b->b[lo].key == key) {
    *out = b->b[lo].bm;
    return DK_OK;
  }
  if (b->n == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 4;
    dv_bucket *q = dk__realloc(b->alloc, b->b, nc * sizeof *q);
    if (!q) return dk__error_set(err, DK_NOMEM, "out of memory (deletion vector)");
    b->b = q;
    b->cap = nc;
  }
  roaring_bitmap_t *bm = roaring_bitmap_create();
  if (!bm) return dk__error_set(err, DK_NOMEM, "out of memory (deletion vector)");
  memmove(b->b + lo + 1, b->b + lo, (b->n - lo) * sizeof *b->b);
  b->b[lo].key = key;
  b->b[lo].bm = bm;
  b->n++;
  *out = bm;
  return DK_OK;
}

static dk_status flush_pending(dk_dv_builder *b, dk_error *err) {
  if (!b->n_pend) return DK_OK;
  roaring_bitmap_t *bm;
  DK_RETURN_NOT_OK(bucket_for(&bm, b, b->pend_key, err));
  roaring_bitmap_add_many(bm, b->n_pend, b->pend);
  b->n_pend = 0;
  return DK_OK;
}

static dk_status add_one(dk_dv_builder *b, int64_t row, dk_error *err) {
  DK_RETURN_IF(row < 0, DK_INVALID, err, "deletion vector: negative row index %lld",
               (long long)row);
  uint32_t key = (uint32_t)((uint64_t)row >> 32);
  DK_RETURN_IF(key & 0x80000000u, DK_INVALID, err,
               "deletion vector: row index %lld is beyond 2^63", (long long)row);
  if ((b->n_pend && key != b->pend_key) || b->n_pend == sizeof b->pend / sizeof *b->pend)
    DK_RETURN_NOT_OK(flush_pending(b, err));
  b->pend_key = key;
  b->pend[b->n_pend++] = (uint32_t)row;
  return DK_OK;
}

dk_status dk_dv__builder_add(dk_dv_builder *b, const int64_t *rows, size_t n, dk_error *err) {
  for (size_t i = 0; i < n; i++) DK_RETURN_NOT_OK(add_one(b, rows[i], err));
  return flush_pending(b, err);
}

dk_status dk_dv__builder_add_range(dk_dv_builder *b, int64_t first, int64_t n, dk_error *err) {
  DK_RETURN_IF(first < 0 || n < 0 || first > INT64_MAX - n, DK_INVALID, err,
               "deletion vector: bad row range");
  DK_RETURN_NOT_OK(flush_pending(b, err));
  for (int64_t r = first; r < first + n;) {
    uint32_t key = (uint32_t)((uint64_t)r >> 32);
    DK_RETURN_IF(key & 0x80000000u, DK_INVALID, err, "deletion vector: row beyond 2^63");
    int64_t end = DK_MIN(first + n, ((int64_t)key + 1) << 32);
    roaring_bitmap_t *bm;
    DK_RETURN_NOT_OK(bucket_for(&bm, b, key, err));
    roaring_bitmap_add_range(bm, (uint64_t)(uint32_t)r, (uint64_t)(end - ((int64_t)key << 32)));
    r = end;
  }
  return DK_OK;
}

static dk_status add_cb(int64_t row, void *payload) {
  return add_one(payload, row, NULL);
}

dk_status dk_dv__builder_add_dv(dk_dv_builder *b, const dk_dv *dv, dk_error *err) {
  DK_RETURN_NOT_OK(flush_pending(b, err));
  dk_status st = dk_dv__foreach(dv, add_cb, b);
  if (st) return dk__error_set(err, st, "deletion vector: merging an existing DV failed");
  return flush_pending(b, err);
}

uint64_t dk_dv__builder_cardinality(const dk_dv_builder *b) {
  uint64_t c = b->n_pend; /* never pending between calls; kept for safety */
  for (size_t i = 0; i < b->n; i++) c += roaring_bitmap_get_cardinality(b->b[i].bm);
  return c;
}

static void put32le(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

dk_status dk_dv__builder_serialize(dk_buf *out, dk_dv_builder *b, dk_error *err) {
  DK_RETURN_NOT_OK(flush_pending(b, err));
  size_t nb = 0, total = 12;
  for (size_t i = 0; i < b->n; i++) {
    if (roaring_bitmap_get_cardinality(b->b[i].bm) == 0) continue;
    roaring_bitmap_run_optimize(b->b[i].bm);
    total += 4 + roaring_bitmap_portable_size_in_bytes(b->b[i].bm);
    nb++;
  }
  DK_RETURN_NOT_OK(dk__buf_reserve(out, total, err));
  uint8_t *p = (uint8_t *)out->data + out->len;
  put32le(p, DK_DV_MAGIC);
  put32le(p + 4, (uint32_t)nb);
  put32le(p + 8, (uint32_t)((uint64_t)nb >> 32));
  size_t pos = 12;
  for (size_t i = 0; i < b->n; i++) {
    if (roaring_bitmap_get_cardinality(b->b[i].bm) == 0) continue;
    put32le(p + pos, b->b[i].key);
    pos += 4;
    pos += roaring_bitmap_portable_serialize(b->b[i].bm, (char *)p + pos);
  }
  DK_RETURN_IF(pos != total, DK_INTERNAL, err, "deletion vector: serialized %zu of %zu bytes",
               pos, total);
  out->len += total;
  out->data[out->len] = 0;
  return DK_OK;
}

/* ---- DV files ----------------------------------------------------------------------------- */

static void put32be(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static int hexv(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

dk_status dk_dv__file_writer_init(dk_dv_file_writer *w, const char *uuid, const char *prefix,
                                  const dk_allocator *alloc, dk_error *err) {
  memset(w, 0, sizeof *w);
  dk__buf_init(&w->bytes, alloc);
  dk__buf_init(&w->id, alloc);
  size_t k = 0;
  for (const char *s = uuid; *s && k < 16; s++) {
    if (*s == '-') continue;
    int h = hexv(s[0]), l = s[1] ? hexv(s[1]) : -1;
    DK_RETURN_IF(h < 0 || l < 0, DK_INVALID, err, "deletion vector file: bad UUID \"%s\"", uuid);
    w->uuid[k++] = (uint8_t)(h << 4 | l);
    s++;
  }
  DK_RETURN_IF(k != 16, DK_INVALID, err, "deletion vector file: bad UUID \"%s\"", uuid);
  memcpy(w->uuid_text, uuid, 36);
  w->uuid_text[36] = 0;
  if (prefix && *prefix) {
    for (const char *s = prefix; *s; s++)
      DK_RETURN_IF(*s == '/' || *s == '\\', DK_INVALID, err,
                   "deletion vector file: prefix \"%s\" is not a directory name", prefix);
    snprintf(w->prefix, sizeof w->prefix, "%s", prefix);
  }
  DK_RETURN_NOT_OK(dk__buf_puts(&w->id, w->prefix, err));
  return dk_dv__z85_encode(&w->id, w->uuid, 16, err);
}

dk_status dk_dv__file_writer_add(dk_dv_file_writer *w, const uint8_t *bitmap, size_t len,
                                 int32_t *offset, dk_error *err) {
  if (w->bytes.len == 0) DK_RETURN_NOT_OK(dk__buf_putc(&w->bytes, DK_DV_FILE_VERSION, err));
  DK_RETURN_IF(len > INT32_MAX || w->bytes.len + len + 8 > INT32_MAX, DK_INVALID, err,
               "deletion vector file: more than 2 GiB of deletion vectors in one file");
  *offset = (int32_t)w->bytes.len;
  uint8_t hdr[4], crc[4];
  put32be(hdr, (uint32_t)len);
  put32be(crc, (uint32_t)crc32(crc32(0L, Z_NULL, 0), bitmap, (uInt)len));
  DK_RETURN_NOT_OK(dk__buf_append(&w->bytes, hdr, 4, err));
  DK_RETURN_NOT_OK(dk__buf_append(&w->bytes, bitmap, len, err));
  DK_RETURN_NOT_OK(dk__buf_append(&w->bytes, crc, 4, err));
  w->n_dvs++;
  return DK_OK;
}

dk_status dk_dv__file_writer_path(dk_buf *out, const dk_dv_file_writer *w, const char *root,
                                  dk_error *err) {
  size_t n = strlen(root);
  while (n > 1 && root[n - 1] == '/') n--;
  DK_RETURN_NOT_OK(dk__buf_append(out, root, n, err));
  DK_RETURN_NOT_OK(dk__buf_putc(out, '/', err));
  if (w->prefix[0]) DK_RETURN_NOT_OK(dk__buf_printf(out, err, "%s/", w->prefix));
  return dk__buf_printf(out, err, "deletion_vector_%s.bin", w->uuid_text);
}

dk_status dk_dv__file_writer_commit(dk_dv_file_writer *w, dk_storage *st, const char *root,
                                    dk_error *err) {
  if (w->n_dvs == 0) return DK_OK; /* as Spark: no empty DV file */
  dk_buf path;
  dk__buf_init(&path, w->bytes.alloc);
  dk_status s = dk_dv__file_writer_path(&path, w, root, err);
  dk__sink sk;
  if (!s) s = dk_io__sink_open(&sk, st, path.data, w->bytes.alloc, err);
  if (!s) {
    s = dk_io__sink_write(&sk, w->bytes.data, w->bytes.len, err);
    if (!s) s = dk_io__sink_commit(&sk, 1, err);
    else dk_io__sink_abort(&sk);
  }
  if (s) dk__error_prefix(err, "writing deletion vector file %s", path.data ? path.data : "");
  else w->committed = 1;
  dk__buf_dispose(&path);
  return s;
}

void dk_dv__file_writer_dispose(dk_dv_file_writer *w) {
  dk__buf_dispose(&w->bytes);
  dk__buf_dispose(&w->id);
}

dk_status dk_dv__inline_text(dk_buf *out, const uint8_t *bitmap, size_t len, dk_error *err) {
  return dk_dv__z85_encode_padded(out, bitmap, len, err);
}
