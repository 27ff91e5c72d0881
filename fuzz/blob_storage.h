/*
** blob_storage.h — for fuzz targets: a read-only dk_storage (dk/sys/storage.h) whose one file
** is the fuzzer's input, whatever key is asked for. No map: readers see an object store
** (dk__source.coalesce), so the batched read paths are the ones fuzzed.
*/
#ifndef DK_FUZZ_BLOB_STORAGE_H
#define DK_FUZZ_BLOB_STORAGE_H

#include <string.h>

#include "dk/sys/storage.h"
#include "util/util.h"

typedef struct blob_storage {
  dk_storage base; /* first */
  const uint8_t *data;
  size_t size;
} blob_storage;

static dk_status blob_read_range(dk_storage *s, const char *path, int64_t off, void *buf,
                                 size_t len, dk_error *err) {
  const blob_storage *b = (const blob_storage *)s;
  if (off < 0 || (uint64_t)off > b->size || len > b->size - (size_t)off)
    return dk__error_set(err, DK_CORRUPT, "read %s: past the end", path);
  if (len) memcpy(buf, b->data + off, len);
  return DK_OK;
}

static dk_status blob_read_ranges(dk_storage *s, const char *path, const dk_byte_range *r,
                                  size_t n, dk_error *err) {
  for (size_t i = 0; i < n; i++)
    DK_RETURN_NOT_OK(blob_read_range(s, path, r[i].offset, r[i].buf, r[i].len, err));
  return DK_OK;
}

static dk_status blob_stat(dk_storage *s, const char *path, dk_file_info *out, dk_error *err) {
  (void)err;
  memset(out, 0, sizeof *out);
  out->path = path;
  out->size = (int64_t)((const blob_storage *)s)->size;
  return DK_OK;
}

static void blob_storage_init(blob_storage *bs, const uint8_t *data, size_t size) {
  memset(bs, 0, sizeof *bs);
  bs->base.version = DK_STORAGE_VERSION;
  bs->base.read_range = blob_read_range;
  bs->base.read_ranges = blob_read_ranges;
  bs->base.stat = blob_stat;
  bs->data = data;
  bs->size = size;
}

#endif /* DK_FUZZ_BLOB_STORAGE_H */
