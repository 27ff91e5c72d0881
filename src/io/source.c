/*
** source.c — the byte source of io/source.h over a dk_storage (read_ranges of storage version
** 2, else read_range per range; map/unmap when asked and offered) or over memory.
*/
#include "io/source.h"

#include "io/uri.h"

typedef struct sto_source {
  dk_storage *sto;
  const dk_allocator *alloc;
  void *map_token;         /* from sto->map, or NULL */
  char key[];              /* NUL-terminated */
} sto_source;

static dk_status sto_read_ranges(dk__source *src, const dk_byte_range *r, size_t n,
                                 dk_error *err) {
  sto_source *p = src->private_data;
  dk_storage *s = p->sto;
  if (DK_IO_HAS_V2(s, read_ranges)) return s->read_ranges(s, p->key, r, n, err);
  for (size_t i = 0; i < n; i++)
    DK_RETURN_NOT_OK(s->read_range(s, p->key, r[i].offset, r[i].buf, r[i].len, err));
  return DK_OK;
}

static void sto_release(dk__source *src) {
  sto_source *p = src->private_data;
  if (p->map_token && DK_IO_HAS_V2(p->sto, unmap)) p->sto->unmap(p->sto, p->map_token);
  dk__free(p->alloc, p);
}

int dk_io__storage_remote(const dk_storage *sto) {
  return !(DK_IO_HAS_V2(sto, map) && DK_IO_HAS_V2(sto, unmap));
}

dk_status dk_io__source_open(dk__source *out, dk_storage *sto, const char *key,
                             const dk__source_opts *opts, dk_error *err) {
  memset(out, 0, sizeof *out);
  const dk_allocator *a = opts ? opts->alloc : NULL;
  size_t kl = strlen(key);
  sto_source *p = dk__malloc(a, sizeof *p + kl + 1);
  DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory (open %s)", key);
  p->sto = sto;
  p->alloc = a;
  p->map_token = NULL;
  memcpy(p->key, key, kl + 1);
  bool can_map = !dk_io__storage_remote(sto);
  dk_status st = DK_OK;
  if (opts && opts->map && can_map) {
    const void *addr = NULL;
    size_t len = 0;
    st = sto->map(sto, key, &addr, &len, &p->map_token, err);
    out->view = addr;
    out->size = (int64_t)len;
  } else if (opts && opts->size > 0) {
    out->size = opts->size;
  } else {
    dk_file_info fi;
    memset(&fi, 0, sizeof fi);
    st = sto->stat(sto, key, &fi, err);
    if (!st && fi.is_dir) st = dk__error_set(err, DK_IO, "open %s: is a directory", key);
    if (!st && fi.size < 0) st = dk__error_set(err, DK_IO, "open %s: negative size", key);
    out->size = fi.size;
  }
  if (st) {
    dk__free(a, p);
    memset(out, 0, sizeof *out);
    return st;
  }
  out->coalesce = !can_map;
  out->name = p->key;
  out->read_ranges = sto_read_ranges;
  out->release = sto_release;
  out->private_data = p;
  return DK_OK;
}

static dk_status mem_read_ranges(dk__source *src, const dk_byte_range *r, size_t n,
                                 dk_error *err) {
  (void)err;
  for (size_t i = 0; i < n; i++)
    if (r[i].len) memcpy(r[i].buf, src->view + r[i].offset, r[i].len);
  return DK_OK;
}

void dk_io__source_mem(dk__source *out, const void *data, size_t len, const char *name) {
  memset(out, 0, sizeof *out);
  out->size = (int64_t)len;
  out->view = data;
  out->name = name ? name : "(memory)";
  out->read_ranges = mem_read_ranges;
}

static dk_status check_range(const dk__source *src, int64_t off, size_t len, dk_error *err) {
  DK_RETURN_IF(off < 0 || off > src->size || (uint64_t)len > (uint64_t)(src->size - off),
               DK_CORRUPT, err, "read of %zu bytes at offset %lld past the end (%lld bytes)", len,
               (long long)off, (long long)src->size);
  return DK_OK;
}

dk_status dk_io__source_read(dk__source *src, int64_t off, size_t len, uint8_t *dst,
                             const uint8_t **view, dk_error *err) {
  DK_RETURN_NOT_OK(check_range(src, off, len, err));
  if (src->view) {
    *view = src->view + off;
    return DK_OK;
  }
  if (len) {
    dk_byte_range r = {off, len, dst};
    DK_RETURN_NOT_OK(src->read_ranges(src, &r, 1, err));
  }
  *view = dst;
  return DK_OK;
}

dk_status dk_io__source_read_ranges(dk__source *src, const dk_byte_range *r, size_t n,
                                    dk_error *err) {
  for (size_t i = 0; i < n; i++) DK_RETURN_NOT_OK(check_range(src, r[i].offset, r[i].len, err));
  if (src->view) return mem_read_ranges(src, r, n, err);
  return n ? src->read_ranges(src, r, n, err) : DK_OK;
}

void dk_io__source_release(dk__source *src) {
  if (!src) return;
  if (src->release) src->release(src);
  memset(src, 0, sizeof *src);
}
