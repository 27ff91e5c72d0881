/*
** descriptor.c — DeletionVectorDescriptor: validation, uniqueId and the DV file's path.
**
** Follows Delta PROTOCOL.md § "Deletion Vector Descriptor Schema" and its § "Derived
** Fields": uniqueId is storageType + pathOrInlineDv, plus "@" + offset when the offset is
** present; a 'u' DV lives at <table>/<random prefix>/deletion_vector_<uuid>.bin where the
** UUID is the Z85 decoding of the last 20 characters and the prefix is whatever precedes
** them; a 'p' DV names its file by an absolute path/URI (the format of `add.path`).
*/
#include "dv/dv.h"
#include "io/uri.h"

dk_status dk_dv__descriptor_init(dk_dv_desc *out, dk_str storage_type, dk_str path,
                                const int64_t *offset, int64_t size_in_bytes,
                                int64_t cardinality, dk_error *err) {
  memset(out, 0, sizeof *out);
  char t = storage_type.len == 1 ? storage_type.ptr[0] : 0;
  DK_RETURN_IF(t != 'u' && t != 'i' && t != 'p', DK_CORRUPT, err,
               "deletionVector.storageType \"%.*s\" is not one of u, i, p",
               (int)DK_MIN(storage_type.len, 16), storage_type.ptr ? storage_type.ptr : "");
  DK_RETURN_IF(t == 'i' && offset, DK_CORRUPT, err,
               "deletionVector: an inline DV must not have an offset");
  DK_RETURN_IF(offset && *offset < 0, DK_CORRUPT, err,
               "deletionVector.offset %lld is negative", (long long)*offset);
  DK_RETURN_IF(size_in_bytes < 0 || size_in_bytes > INT32_MAX, DK_CORRUPT, err,
               "deletionVector.sizeInBytes %lld is not a non-negative Int",
               (long long)size_in_bytes);
  DK_RETURN_IF(cardinality < 0, DK_CORRUPT, err, "deletionVector.cardinality %lld is negative",
               (long long)cardinality);
  DK_RETURN_IF(t == 'u' && path.len < DK_DV_UUID_Z85_LEN, DK_CORRUPT, err,
               "deletionVector.pathOrInlineDv has %zu characters; a 'u' DV needs at least %d",
               path.len, DK_DV_UUID_Z85_LEN);
  DK_RETURN_IF(t == 'p' && path.len == 0, DK_CORRUPT, err,
               "deletionVector.pathOrInlineDv is empty for a 'p' DV");
  out->storage_type = (dk_dv_storage_type)t;
  out->path_or_inline = path;
  out->has_offset = offset != NULL;
  out->offset = offset ? *offset : 0;
  out->size_in_bytes = (int32_t)size_in_bytes;
  out->cardinality = cardinality;
  return DK_OK;
}

dk_status dk_dv__unique_id(dk_buf *out, const dk_dv_desc *d, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(out, (char)d->storage_type, err));
  DK_RETURN_NOT_OK(dk__buf_append(out, d->path_or_inline.ptr, d->path_or_inline.len, err));
  if (d->has_offset) DK_RETURN_NOT_OK(dk__buf_printf(out, err, "@%lld", (long long)d->offset));
  return DK_OK;
}

static dk_status dv_append_root(dk_buf *out, const char *table_root, dk_error *err) {
  size_t n = strlen(table_root);
  while (n > 1 && table_root[n - 1] == '/') n--;
  DK_RETURN_NOT_OK(dk__buf_append(out, table_root, n, err));
  if (!(n == 1 && table_root[0] == '/')) DK_RETURN_NOT_OK(dk__buf_putc(out, '/', err));
  return DK_OK;
}

static dk_status dv_resolve_uuid(const char *table_root, const dk_dv_desc *d,
                                 dk_buf *out, dk_error *err) {
  const char *s = d->path_or_inline.ptr;
  size_t plen = d->path_or_inline.len - DK_DV_UUID_Z85_LEN;
  /* The random prefix is a directory name: refuse anything that would leave the table. */
  for (size_t i = 0; i < plen; i++)
    DK_RETURN_IF(s[i] == '/' || s[i] == '\\' || s[i] == 0, DK_CORRUPT, err,
                 "deletionVector: random prefix \"%.*s\" is not a plain directory name",
                 (int)DK_MIN(plen, 64), s);
  DK_RETURN_IF((plen == 1 && s[0] == '.') || (plen == 2 && s[0] == '.' && s[1] == '.'),
               DK_CORRUPT, err, "deletionVector: random prefix \"%.*s\" is not allowed",
               (int)plen, s);
  DK_RETURN_IF(!table_root, DK_INVALID, err, "deletionVector: a 'u' DV needs the table root");
  uint8_t uuid[16];
  dk_buf raw;
  dk__buf_init(&raw, out->alloc);
  dk_status st = dk_dv__z85_decode(&raw, s + plen, DK_DV_UUID_Z85_LEN, err);
  if (st != DK_OK) {
    dk__buf_dispose(&raw);
    dk__error_prefix(err, "deletionVector UUID \"%.*s\"", (int)DK_DV_UUID_Z85_LEN, s + plen);
    return st;
  }
  memcpy(uuid, raw.data, 16);
  dk__buf_dispose(&raw);
  DK_RETURN_NOT_OK(dv_append_root(out, table_root, err));
  if (plen) {
    DK_RETURN_NOT_OK(dk__buf_append(out, s, plen, err));
    DK_RETURN_NOT_OK(dk__buf_putc(out, '/', err));
  }
  DK_RETURN_NOT_OK(dk__buf_puts(out, "deletion_vector_", err));
  static const char hex[] = "0123456789abcdef";
  char text[37];
  size_t k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text[k++] = '-';
    text[k++] = hex[uuid[i] >> 4];
    text[k++] = hex[uuid[i] & 15];
  }
  DK_RETURN_NOT_OK(dk__buf_append(out, text, 36, err));
  return dk__buf_puts(out, ".bin", err);
}

dk_status dk_dv__resolve_path(const char *table_root, const dk_dv_desc *d, dk_buf *out,
                             dk_error *err) {
  switch (d->storage_type) {
    case DK_DV_STORAGE_UUID: return dv_resolve_uuid(table_root, d, out, err);
    case DK_DV_STORAGE_PATH: {
      const char *s = d->path_or_inline.ptr;
      size_t n = d->path_or_inline.len;
      dk__uri u;
      if (dk__uri_split(&u, s, n) && dk__scheme_is(u.scheme, "file")) {
        /* file://authority/path: only an empty authority or localhost is local */
        DK_RETURN_IF(u.authority.ptr && u.authority.len &&
                         !(u.authority.len == 9 && !memcmp(u.authority.ptr, "localhost", 9)),
                     DK_UNSUPPORTED, err,
                     "deletionVector path \"%.*s\": file URI with a remote host",
                     (int)DK_MIN(n, 256), s);
        DK_RETURN_IF(u.path.len == 0 || u.path.ptr[0] != '/', DK_CORRUPT, err,
                     "deletionVector path \"%.*s\" is not absolute", (int)DK_MIN(n, 256), s);
        s = u.path.ptr, n = u.path.len;
      }
      dk_status st = dk__pct_decode(out, s, n, DK__PCT_STRICT, err);
      if (st) dk__error_prefix(err, "deletionVector path");
      return st;
    }
    case DK_DV_STORAGE_INLINE:
      return dk__error_set(err, DK_INVALID, "deletionVector: an inline DV has no file path");
  }
  return dk__error_set(err, DK_INVALID, "deletionVector: bad storage type");
}
