/*
** load.c — loading a deletion vector from its descriptor: inline (Z85) or from a DV file.
**
** Follows Delta PROTOCOL.md § "Deletion Vector File Storage Format": a DV file starts with
** a version byte (1); the DV at `offset` is a 4-byte big-endian dataSize, dataSize bytes
** of RoaringBitmapArray, and the big-endian CRC-32 of those bytes. Inline DVs
** (§ Deletion Vector Descriptor Schema) are the Z85 text of the bitmap bytes, padded to a
** multiple of 4; sizeInBytes says how many decoded bytes are real.
**
** How it works: one read_range call per DV ([offset, offset + 8 + size), extended down to
** byte 0 when offset is 1 so the version byte comes free). Sizes above 1 MiB are first
** checked against the file's size so a lying descriptor cannot make us allocate gigabytes.
** Every check failure is DK_CORRUPT naming the file and offset, and what did not match, never
** a value read from the file (an error message must not turn dk into an oracle of the bytes of
** whatever file a descriptor points at).
*/
#include <stdio.h>
#include <zlib.h>

#include "dv/dv.h"
#include "io/uri.h"

/* Reads above this size are checked against st->stat first. */
#define DV_STAT_THRESHOLD (1u << 20)

static inline uint32_t rd32be(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

dk_status dk_dv__decode_file_range(dk_dv **out, const uint8_t *bytes, size_t len,
                                  int64_t expected_size, const char *name, int64_t file_offset,
                                  const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(len < 4, DK_CORRUPT, err,
               "DV file %s offset %lld: truncated, %zu bytes where the 4-byte size should be",
               name, (long long)file_offset, len);
  uint32_t size = rd32be(bytes);
  DK_RETURN_IF((int64_t)size != expected_size, DK_CORRUPT, err,
               "DV file %s offset %lld: the stored size does not match sizeInBytes %lld", name,
               (long long)file_offset, (long long)expected_size);
  DK_RETURN_IF(len - 4 < (size_t)size + 4, DK_CORRUPT, err,
               "DV file %s offset %lld: truncated, %zu bytes for a %lld-byte DV and checksum",
               name, (long long)file_offset, len - 4, (long long)expected_size);
  uint32_t stored = rd32be(bytes + 4 + size);
  uint32_t actual = (uint32_t)crc32(crc32(0L, Z_NULL, 0), bytes + 4, (uInt)size);
  DK_RETURN_IF(stored != actual, DK_CORRUPT, err,
               "DV file %s offset %lld: checksum mismatch (the stored CRC-32 does not match the "
               "DV's bytes)",
               name, (long long)file_offset);
  dk_status st = dk_dv__decode_bitmap(out, bytes + 4, size, alloc, err);
  if (st != DK_OK)
    dk__error_prefix(err, "DV file %s offset %lld (bitmap at +4)", name,
                     (long long)file_offset);
  return st;
}

static dk_status dv_check_cardinality(const dk_dv *dv, const dk_dv_desc *d,
                                      const char *where, dk_error *err) {
  DK_RETURN_IF(dk_dv__cardinality(dv) != (uint64_t)d->cardinality, DK_CORRUPT, err,
               "%s: the number of rows in the DV does not match its descriptor's cardinality "
               "%lld",
               where, (long long)d->cardinality);
  return DK_OK;
}

static dk_status dv_load_inline(dk_dv **out, const dk_dv_desc *d,
                                const dk_allocator *alloc, dk_error *err) {
  dk_buf raw;
  dk__buf_init(&raw, alloc);
  dk_status st = dk_dv__z85_decode(&raw, d->path_or_inline.ptr, d->path_or_inline.len, err);
  if (st != DK_OK) {
    dk__error_prefix(err, "inline DV");
    goto cleanup;
  }
  /* Writers pad to 4 bytes: the text decodes to sizeInBytes rounded up to a multiple of 4. */
  if (raw.len < (size_t)d->size_in_bytes || raw.len - (size_t)d->size_in_bytes >= 4) {
    st = dk__error_set(err, DK_CORRUPT, "inline DV: %zu decoded bytes for sizeInBytes %d",
                       raw.len, (int)d->size_in_bytes);
    goto cleanup;
  }
  DK_CHECK_GOTO(dk_dv__decode_bitmap(out, (const uint8_t *)raw.data, (size_t)d->size_in_bytes,
                                    alloc, err));
  st = dv_check_cardinality(*out, d, "inline DV", err);
cleanup:
  dk__buf_dispose(&raw);
  if (st != DK_OK && *out) {
    dk_dv__free(*out);
    *out = NULL;
  }
  return st;
}

static dk_status dv_load_file(dk_dv **out, dk_storage *st, const char *table_root,
                              const dk_dv_desc *d, const dk_allocator *alloc,
                              dk_error *err) {
  dk_buf path, where;
  dk__buf_init(&path, alloc);
  dk__buf_init(&where, alloc);
  uint8_t *bytes = NULL;
  dk_status s = dk_dv__resolve_path(table_root, d, &where, err);
  if (s != DK_OK) goto cleanup;
  if (!st || !st->read_range) {
    s = dk__error_set(err, DK_INVALID, "DV file %s: no storage to read it with", where.data);
    goto cleanup;
  }
  if (table_root) { /* the key on the table's backend (a URI scheme it does not serve fails) */
    dk__root root;
    dk_io__root_init(&root, table_root, st);
    dk__loc loc;
    s = dk_io__resolve(&loc, &path, &root, NULL, where.data, where.len, err);
    if (s != DK_OK) {
      dk__error_prefix(err, "DV file");
      goto cleanup;
    }
  } else {
    s = dk__buf_append(&path, where.data, where.len, err);
    if (s != DK_OK) goto cleanup;
  }
  int64_t offset = d->offset;
  uint64_t want = (uint64_t)d->size_in_bytes + 8;      /* size, bitmap, checksum */
  int with_version = offset == 1;                      /* read byte 0 too, at no cost */
  int64_t start = with_version ? 0 : offset;
  size_t n = (size_t)want + (with_version ? 1 : 0);
  if (want > DV_STAT_THRESHOLD && st->stat) {
    dk_file_info info;
    memset(&info, 0, sizeof info);
    s = st->stat(st, path.data, &info, err);
    if (s != DK_OK) {
      dk__error_prefix(err, "DV file %s", path.data);
      goto cleanup;
    }
    if (offset > info.size || want > (uint64_t)(info.size - offset)) {
      s = dk__error_set(err, DK_CORRUPT,
                        "DV file %s offset %lld: a %d-byte DV does not fit in the %lld-byte "
                        "file",
                        path.data, (long long)offset, (int)d->size_in_bytes,
                        (long long)info.size);
      goto cleanup;
    }
  }
  bytes = dk__malloc(alloc, n);
  if (!bytes) {
    s = dk__error_set(err, DK_NOMEM, "DV file %s: out of memory for %zu bytes", path.data, n);
    goto cleanup;
  }
  s = st->read_range(st, path.data, start, bytes, n, err);
  if (s != DK_OK) {
    dk__error_prefix(err, "DV file %s offset %lld", path.data, (long long)offset);
    goto cleanup;
  }
  if (with_version && bytes[0] != DK_DV_FILE_VERSION) {
    s = dk__error_set(err, DK_CORRUPT, "DV file %s: unknown format version (expected %d)",
                      path.data, DK_DV_FILE_VERSION);
    goto cleanup;
  }
  s = dk_dv__decode_file_range(out, bytes + with_version, n - (size_t)with_version,
                              d->size_in_bytes, path.data, offset, alloc, err);
  if (s != DK_OK) goto cleanup;
  dk__buf_clear(&where);
  s = dk__buf_printf(&where, err, "DV file %s offset %lld", path.data, (long long)offset);
  if (s == DK_OK) s = dv_check_cardinality(*out, d, where.data, err);
cleanup:
  if (s != DK_OK && *out) {
    dk_dv__free(*out);
    *out = NULL;
  }
  dk__free(alloc, bytes);
  dk__buf_dispose(&path);
  dk__buf_dispose(&where);
  return s;
}

dk_status dk_dv__load(dk_dv **out, dk_storage *st, const char *table_root,
                     const dk_dv_desc *d, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  /* An empty DV deletes nothing: like Delta's readers, do not read it. */
  if (d->cardinality == 0) return dk_dv__new_empty(out, alloc, err);
  if (d->storage_type == DK_DV_STORAGE_INLINE) return dv_load_inline(out, d, alloc, err);
  return dv_load_file(out, st, table_root, d, alloc, err);
}
