/*
** array.c — Arrow C Data Interface producer: types, schemas, array builders, export.
**
** Follows the Arrow "C Data Interface" and "Columnar Format" specifications. Exports are
** zero-copy: dk__arr_finish moves the builder's aligned buffers into the ArrowArray's
** private block, and the release callback frees them (recursively for children).
*/
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"

/* ---- types ------------------------------------------------------------------------------ */

dk_atype dk__atype_decimal(int32_t precision, int32_t scale) {
  dk_atype t = dk__atype_make(DK_AT_DECIMAL128);
  t.precision = precision;
  t.scale = scale;
  return t;
}

dk_atype dk__atype_timestamp(dk_time_unit unit, const char *tz) {
  dk_atype t = dk__atype_make(DK_AT_TIMESTAMP);
  t.unit = unit;
  if (tz) snprintf(t.tz, sizeof t.tz, "%s", tz);
  return t;
}

int dk__atype_width(const dk_atype *t) {
  switch (t->id) {
    case DK_AT_INT8:
    case DK_AT_UINT8: return 1;
    case DK_AT_INT16:
    case DK_AT_UINT16:
    case DK_AT_FLOAT16: return 2;
    case DK_AT_INT32:
    case DK_AT_UINT32:
    case DK_AT_FLOAT:
    case DK_AT_DATE32:
    case DK_AT_TIME32: return 4;
    case DK_AT_INT64:
    case DK_AT_UINT64:
    case DK_AT_DOUBLE:
    case DK_AT_TIME64:
    case DK_AT_TIMESTAMP: return 8;
    case DK_AT_DECIMAL128: return 16;
    case DK_AT_FIXED_BINARY: return t->byte_width;
    default: return 0;
  }
}

static bool atype_has_offsets(dk_atype_id id) {
  return id == DK_AT_STRING || id == DK_AT_BINARY || id == DK_AT_LIST || id == DK_AT_MAP;
}

static const char unit_char[] = {'s', 'm', 'u', 'n'};

dk_status dk__atype_format(const dk_atype *t, char *buf, size_t cap, dk_error *err) {
  const char *f = NULL;
  switch (t->id) {
    case DK_AT_NA: f = "n"; break;
    case DK_AT_BOOL: f = "b"; break;
    case DK_AT_INT8: f = "c"; break;
    case DK_AT_INT16: f = "s"; break;
    case DK_AT_INT32: f = "i"; break;
    case DK_AT_INT64: f = "l"; break;
    case DK_AT_UINT8: f = "C"; break;
    case DK_AT_UINT16: f = "S"; break;
    case DK_AT_UINT32: f = "I"; break;
    case DK_AT_UINT64: f = "L"; break;
    case DK_AT_FLOAT16: f = "e"; break;
    case DK_AT_FLOAT: f = "f"; break;
    case DK_AT_DOUBLE: f = "g"; break;
    case DK_AT_DATE32: f = "tdD"; break;
    case DK_AT_STRING: f = "u"; break;
    case DK_AT_BINARY: f = "z"; break;
    case DK_AT_LIST: f = "+l"; break;
    case DK_AT_STRUCT: f = "+s"; break;
    case DK_AT_MAP: f = "+m"; break;
    case DK_AT_DECIMAL128:
      snprintf(buf, cap, "d:%d,%d", (int)t->precision, (int)t->scale);
      return DK_OK;
    case DK_AT_FIXED_BINARY:
      snprintf(buf, cap, "w:%d", (int)t->byte_width);
      return DK_OK;
    case DK_AT_TIME32:
    case DK_AT_TIME64:
      snprintf(buf, cap, "tt%c", unit_char[t->unit & 3]);
      return DK_OK;
    case DK_AT_TIMESTAMP:
      snprintf(buf, cap, "ts%c:%s", unit_char[t->unit & 3], t->tz);
      return DK_OK;
  }
  if (!f) return dk__error_set(err, DK_INTERNAL, "unknown arrow type id %d", (int)t->id);
  snprintf(buf, cap, "%s", f);
  return DK_OK;
}

static int unit_from_char(char c) {
  switch (c) {
    case 's': return DK_TU_SECOND;
    case 'm': return DK_TU_MILLI;
    case 'u': return DK_TU_MICRO;
    case 'n': return DK_TU_NANO;
    default: return -1;
  }
}

dk_status dk__atype_parse(dk_atype *out, const char *f, dk_error *err) {
  memset(out, 0, sizeof *out);
  static const struct {
    const char *f;
    dk_atype_id id;
  } simple[] = {{"n", DK_AT_NA},      {"b", DK_AT_BOOL},     {"c", DK_AT_INT8},
                {"s", DK_AT_INT16},   {"i", DK_AT_INT32},    {"l", DK_AT_INT64},
                {"C", DK_AT_UINT8},   {"S", DK_AT_UINT16},   {"I", DK_AT_UINT32},
                {"L", DK_AT_UINT64},  {"e", DK_AT_FLOAT16},  {"f", DK_AT_FLOAT},
                {"g", DK_AT_DOUBLE},  {"tdD", DK_AT_DATE32}, {"u", DK_AT_STRING},
                {"z", DK_AT_BINARY},  {"+l", DK_AT_LIST},    {"+s", DK_AT_STRUCT},
                {"+m", DK_AT_MAP}};
  for (size_t i = 0; i < DK_ARRAY_LEN(simple); i++) {
    if (!strcmp(f, simple[i].f)) {
      out->id = simple[i].id;
      return DK_OK;
    }
  }
  if (f[0] == 'd' && f[1] == ':') {
    int p, s, bits = 128;
    int n = sscanf(f + 2, "%d,%d,%d", &p, &s, &bits);
    if (n >= 2 && bits == 128) {
      *out = dk__atype_decimal(p, s);
      return DK_OK;
    }
  } else if (f[0] == 'w' && f[1] == ':') {
    out->id = DK_AT_FIXED_BINARY;
    out->byte_width = atoi(f + 2);
    if (out->byte_width > 0) return DK_OK;
  } else if (f[0] == 't' && f[1] == 't' && unit_from_char(f[2]) >= 0 && !f[3]) {
    out->unit = (dk_time_unit)unit_from_char(f[2]);
    out->id = out->unit <= DK_TU_MILLI ? DK_AT_TIME32 : DK_AT_TIME64;
    return DK_OK;
  } else if (f[0] == 't' && f[1] == 's' && unit_from_char(f[2]) >= 0 && f[3] == ':') {
    *out = dk__atype_timestamp((dk_time_unit)unit_from_char(f[2]), f + 4);
    return DK_OK;
  }
  return dk__error_set(err, DK_UNSUPPORTED, "unsupported Arrow format '%s'", f);
}

/* ---- schemas ---------------------------------------------------------------------------- */

typedef struct schema_private {
  const dk_allocator *alloc;
  char *format;
  char *name;
  char *metadata;
  struct ArrowSchema **child_ptrs;
  struct ArrowSchema *children;
} schema_private;

static void schema_release(struct ArrowSchema *s) {
  if (!s || !s->release) return;
  schema_private *p = s->private_data;
  for (int64_t i = 0; i < s->n_children; i++) dk__schema_release(s->children[i]);
  if (s->dictionary) {
    dk__schema_release(s->dictionary);
  }
  const dk_allocator *a = p->alloc;
  dk__free(a, p->format);
  dk__free(a, p->name);
  dk__free(a, p->metadata);
  dk__free(a, p->child_ptrs);
  dk__free(a, p->children);
  dk__free(a, p);
  s->release = NULL;
}

dk_status dk__schema_init(struct ArrowSchema *out, const dk_atype *t, const char *name,
                         int64_t flags, int64_t n_children, dk_error *err) {
  return dk__schema_init_a(out, t, name, flags, n_children, NULL, err);
}

dk_status dk__schema_init_a(struct ArrowSchema *out, const dk_atype *t, const char *name,
                           int64_t flags, int64_t n_children, const dk_allocator *alloc,
                           dk_error *err) {
  memset(out, 0, sizeof *out);
  char fmt[64];
  DK_RETURN_NOT_OK(dk__atype_format(t, fmt, sizeof fmt, err));
  schema_private *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (schema)");
  p->alloc = alloc;
  p->format = dk__strdup(alloc, fmt);
  p->name = name ? dk__strdup(alloc, name) : NULL;
  if (n_children > 0) {
    p->child_ptrs = dk__calloc(alloc, (size_t)n_children, sizeof *p->child_ptrs);
    p->children = dk__calloc(alloc, (size_t)n_children, sizeof *p->children);
  }
  out->private_data = p;
  out->release = schema_release;
  out->n_children = 0;
  if (!p->format || (name && !p->name) || (n_children > 0 && (!p->child_ptrs || !p->children))) {
    schema_release(out);
    return dk__error_set(err, DK_NOMEM, "out of memory (schema)");
  }
  for (int64_t i = 0; i < n_children; i++) p->child_ptrs[i] = &p->children[i];
  out->format = p->format;
  out->name = p->name;
  out->flags = flags;
  out->n_children = n_children;
  out->children = p->child_ptrs;
  return DK_OK;
}

dk_status dk__schema_set_metadata(struct ArrowSchema *s, const char *const *keys,
                                 const char *const *values, int n, dk_error *err) {
  schema_private *p = s->private_data;
  dk_buf b;
  dk__buf_init(&b, p->alloc);
  int32_t n32 = n;
  dk_status st = dk__buf_append(&b, &n32, 4, err);
  for (int i = 0; i < n && st == DK_OK; i++) {
    int32_t kl = (int32_t)strlen(keys[i]), vl = (int32_t)strlen(values[i]);
    st = dk__buf_append(&b, &kl, 4, err);
    if (!st) st = dk__buf_append(&b, keys[i], (size_t)kl, err);
    if (!st) st = dk__buf_append(&b, &vl, 4, err);
    if (!st) st = dk__buf_append(&b, values[i], (size_t)vl, err);
  }
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  dk__free(p->alloc, p->metadata);
  p->metadata = dk__buf_detach(&b);
  s->metadata = p->metadata;
  return DK_OK;
}

dk_str dk__schema_metadata_get(const char *md, const char *key) {
  dk_str none = {NULL, 0};
  if (!md) return none;
  int32_t n;
  memcpy(&n, md, 4);
  const char *p = md + 4;
  size_t klen = strlen(key);
  for (int32_t i = 0; i < n; i++) {
    int32_t kl, vl;
    memcpy(&kl, p, 4);
    p += 4;
    const char *k = p;
    p += kl;
    memcpy(&vl, p, 4);
    p += 4;
    if ((size_t)kl == klen && memcmp(k, key, klen) == 0) return (dk_str){p, (size_t)vl};
    p += vl;
  }
  return none;
}

static size_t metadata_size(const char *md) {
  if (!md) return 0;
  int32_t n;
  memcpy(&n, md, 4);
  const char *p = md + 4;
  for (int32_t i = 0; i < n; i++) {
    int32_t l;
    memcpy(&l, p, 4);
    p += 4 + l;
    memcpy(&l, p, 4);
    p += 4 + l;
  }
  return (size_t)(p - md);
}

dk_status dk__schema_copy(struct ArrowSchema *out, const struct ArrowSchema *src, dk_error *err) {
  return dk__schema_copy_a(out, src, NULL, err);
}

dk_status dk__schema_copy_a(struct ArrowSchema *out, const struct ArrowSchema *src,
                           const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  /* copy the format verbatim, even when we cannot parse it */
  schema_private *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (schema copy)");
  p->alloc = alloc;
  p->format = dk__strdup(alloc, src->format);
  p->name = src->name ? dk__strdup(alloc, src->name) : NULL;
  size_t mdlen = metadata_size(src->metadata);
  if (mdlen) {
    p->metadata = dk__malloc(alloc, mdlen);
    if (p->metadata) memcpy(p->metadata, src->metadata, mdlen);
  }
  int64_t nc = src->n_children;
  if (nc > 0) {
    p->child_ptrs = dk__calloc(alloc, (size_t)nc, sizeof *p->child_ptrs);
    p->children = dk__calloc(alloc, (size_t)nc, sizeof *p->children);
  }
  out->private_data = p;
  out->release = schema_release;
  if (!p->format || (src->name && !p->name) || (mdlen && !p->metadata) ||
      (nc > 0 && (!p->child_ptrs || !p->children))) {
    schema_release(out);
    return dk__error_set(err, DK_NOMEM, "out of memory (schema copy)");
  }
  out->format = p->format;
  out->name = p->name;
  out->metadata = p->metadata;
  out->flags = src->flags;
  out->children = p->child_ptrs;
  for (int64_t i = 0; i < nc; i++) {
    p->child_ptrs[i] = &p->children[i];
    dk_status st = dk__schema_copy_a(&p->children[i], src->children[i], alloc, err);
    out->n_children = i + (st == DK_OK);
    if (st) {
      schema_release(out);
      return st;
    }
  }
  out->n_children = nc;
  return DK_OK;
}

/* ---- buffers ---------------------------------------------------------------------------- */

dk_status dk__abuf_reserve(dk_abuf *b, const dk_allocator *a, int64_t extra, dk_error *err) {
  if (DK_LIKELY(b->len + extra <= b->cap && b->data)) return DK_OK;
  if (extra < 0 || extra > INT64_MAX / 4 - b->len)
    return dk__error_set(err, DK_NOMEM, "arrow buffer too large");
  int64_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra) cap *= 2;
  cap = (cap + 63) & ~(int64_t)63;
  uint8_t *p = dk__aligned_alloc(a, (size_t)cap);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (arrow buffer of %lld bytes)", (long long)cap);
  if (b->len) memcpy(p, b->data, (size_t)b->len);
  dk__aligned_free(a, b->data);
  b->data = p;
  b->cap = cap;
  return DK_OK;
}

dk_status dk__abuf_append(dk_abuf *b, const dk_allocator *a, const void *p, int64_t n,
                         dk_error *err) {
  DK_RETURN_NOT_OK(dk__abuf_reserve(b, a, n, err));
  if (n) memcpy(b->data + b->len, p, (size_t)n);
  b->len += n;
  return DK_OK;
}

void dk__abuf_free(dk_abuf *b, const dk_allocator *a) {
  dk__aligned_free(a, b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- builders --------------------------------------------------------------------------- */

static dk_status arr_start_offsets(dk_arr *a, dk_error *err) {
  if (!atype_has_offsets(a->type.id)) return DK_OK;
  int32_t zero = 0;
  a->values.len = 0;
  return dk__abuf_append(&a->values, a->alloc, &zero, 4, err);
}

dk_status dk__arr_init(dk_arr *a, const dk_atype *t, const dk_allocator *alloc, dk_error *err) {
  memset(a, 0, sizeof *a);
  a->alloc = alloc;
  a->type = *t;
  return arr_start_offsets(a, err);
}

dk_status dk__arr_set_children(dk_arr *a, int64_t n, dk_error *err) {
  a->children = dk__calloc(a->alloc, (size_t)(n ? n : 1), sizeof *a->children);
  if (!a->children) return dk__error_set(err, DK_NOMEM, "out of memory (array children)");
  a->n_children = n;
  return DK_OK;
}

dk_status dk__arr_init_from_schema(dk_arr *a, const struct ArrowSchema *schema,
                                  const dk_allocator *alloc, dk_error *err) {
  dk_atype t;
  memset(a, 0, sizeof *a);
  DK_RETURN_NOT_OK(dk__atype_parse(&t, schema->format, err));
  DK_RETURN_NOT_OK(dk__arr_init(a, &t, alloc, err));
  if (schema->n_children > 0) {
    dk_status st = dk__arr_set_children(a, schema->n_children, err);
    for (int64_t i = 0; st == DK_OK && i < schema->n_children; i++)
      st = dk__arr_init_from_schema(&a->children[i], schema->children[i], alloc, err);
    if (st) {
      dk__arr_reset(a);
      return st;
    }
  }
  return DK_OK;
}

void dk__arr_reset(dk_arr *a) {
  for (int64_t i = 0; i < a->n_children; i++) dk__arr_reset(&a->children[i]);
  dk__free(a->alloc, a->children);
  dk__abuf_free(&a->validity, a->alloc);
  dk__abuf_free(&a->values, a->alloc);
  dk__abuf_free(&a->data, a->alloc);
  memset(a, 0, sizeof *a);
}

dk_status dk__arr_ensure_validity(dk_arr *a, int64_t extra, dk_error *err) {
  int64_t need = (a->length + extra + 7) / 8;
  if (!a->validity.data) {
    DK_RETURN_NOT_OK(dk__abuf_reserve(&a->validity, a->alloc, need + 8, err));
    memset(a->validity.data, 0xff, (size_t)a->validity.cap);
    a->validity.len = (a->length + 7) / 8;
    return DK_OK;
  }
  if (need > a->validity.cap) {
    int64_t old = a->validity.cap;
    DK_RETURN_NOT_OK(dk__abuf_reserve(&a->validity, a->alloc, need - a->validity.len + 8, err));
    memset(a->validity.data + old, 0xff, (size_t)(a->validity.cap - old));
  }
  return DK_OK;
}

dk_status dk__arr_reserve(dk_arr *a, int64_t n, dk_error *err) {
  int w = dk__atype_width(&a->type);
  if (a->type.id == DK_AT_BOOL) {
    int64_t need = (a->length + n + 7) / 8 + 8;
    if (need > a->values.cap) {
      int64_t old = a->values.cap;
      DK_RETURN_NOT_OK(dk__abuf_reserve(&a->values, a->alloc, need - a->values.len, err));
      memset(a->values.data + old, 0, (size_t)(a->values.cap - old));
    }
  } else if (atype_has_offsets(a->type.id)) {
    DK_RETURN_NOT_OK(dk__abuf_reserve(&a->values, a->alloc, 4 * n, err));
  } else if (w > 0) {
    DK_RETURN_NOT_OK(dk__abuf_reserve(&a->values, a->alloc, (int64_t)w * n, err));
  }
  if (a->validity.data) DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, n, err));
  return DK_OK;
}

/* Called once per appended slot: bumps length, tracks validity. */
static inline dk_status arr_slot(dk_arr *a, bool valid, dk_error *err) {
  if (!valid) {
    DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, 1, err));
    dk__bit_clear(a->validity.data, a->length);
    a->null_count++;
  } else if (a->validity.data) {
    DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, 1, err));
    dk__bit_set(a->validity.data, a->length);
  }
  a->length++;
  if (a->validity.data) a->validity.len = (a->length + 7) / 8;
  return DK_OK;
}

static dk_status arr_push_offset(dk_arr *a, int64_t end, dk_error *err) {
  if (end > INT32_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "array exceeds 2 GiB of offsets; use smaller batches");
  int32_t e = (int32_t)end;
  return dk__abuf_append(&a->values, a->alloc, &e, 4, err);
}

static int64_t arr_child_len(const dk_arr *a) {
  return a->n_children > 0 ? a->children[0].length : 0;
}

dk_status dk__arr_append_null(dk_arr *a, dk_error *err) {
  int w = dk__atype_width(&a->type);
  if (a->type.id == DK_AT_BOOL) {
    DK_RETURN_NOT_OK(dk__arr_reserve(a, 1, err));
  } else if (a->type.id == DK_AT_STRING || a->type.id == DK_AT_BINARY) {
    DK_RETURN_NOT_OK(arr_push_offset(a, a->data.len, err));
  } else if (a->type.id == DK_AT_LIST || a->type.id == DK_AT_MAP) {
    DK_RETURN_NOT_OK(arr_push_offset(a, arr_child_len(a), err));
  } else if (a->type.id == DK_AT_STRUCT) {
    /* struct children must stay aligned: append nulls to every child */
    for (int64_t i = 0; i < a->n_children; i++)
      DK_RETURN_NOT_OK(dk__arr_append_null(&a->children[i], err));
  } else if (w > 0) {
    DK_RETURN_NOT_OK(dk__abuf_reserve(&a->values, a->alloc, w, err));
    memset(a->values.data + a->values.len, 0, (size_t)w);
    a->values.len += w;
  }
  return arr_slot(a, false, err);
}

dk_status dk__arr_append_nulls(dk_arr *a, int64_t n, dk_error *err) {
  for (int64_t i = 0; i < n; i++) DK_RETURN_NOT_OK(dk__arr_append_null(a, err));
  return DK_OK;
}

dk_status dk__arr_append_int(dk_arr *a, int64_t v, dk_error *err) {
  int w = dk__atype_width(&a->type);
  DK_RETURN_NOT_OK(dk__abuf_reserve(&a->values, a->alloc, 8, err));
  uint8_t *p = a->values.data + a->values.len;
  switch (w) {
    case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case 8: memcpy(p, &v, 8); break;
    default:
      return dk__error_set(err, DK_INTERNAL, "append_int on a non-integer array");
  }
  a->values.len += w;
  return arr_slot(a, true, err);
}

dk_status dk__arr_append_uint(dk_arr *a, uint64_t v, dk_error *err) {
  return dk__arr_append_int(a, (int64_t)v, err);
}

dk_status dk__arr_append_double(dk_arr *a, double v, dk_error *err) {
  if (a->type.id == DK_AT_FLOAT) {
    float f = (float)v;
    DK_RETURN_NOT_OK(dk__abuf_append(&a->values, a->alloc, &f, 4, err));
  } else if (a->type.id == DK_AT_DOUBLE) {
    DK_RETURN_NOT_OK(dk__abuf_append(&a->values, a->alloc, &v, 8, err));
  } else {
    return dk__error_set(err, DK_INTERNAL, "append_double on a non-float array");
  }
  return arr_slot(a, true, err);
}

dk_status dk__arr_append_bool(dk_arr *a, bool v, dk_error *err) {
  DK_RETURN_NOT_OK(dk__arr_reserve(a, 1, err));
  if (v) dk__bit_set(a->values.data, a->length);
  return arr_slot(a, true, err);
}

dk_status dk__arr_append_bytes(dk_arr *a, const void *p, int64_t n, dk_error *err) {
  if (a->type.id == DK_AT_STRING || a->type.id == DK_AT_BINARY) {
    DK_RETURN_NOT_OK(dk__abuf_append(&a->data, a->alloc, p, n, err));
    DK_RETURN_NOT_OK(arr_push_offset(a, a->data.len, err));
  } else {
    int w = dk__atype_width(&a->type);
    if (w != n)
      return dk__error_set(err, DK_INTERNAL, "append_bytes: %lld bytes into a %d-byte type",
                           (long long)n, w);
    DK_RETURN_NOT_OK(dk__abuf_append(&a->values, a->alloc, p, n, err));
  }
  return arr_slot(a, true, err);
}

dk_status dk__arr_finish_element(dk_arr *a, dk_error *err) {
  if (a->type.id == DK_AT_LIST || a->type.id == DK_AT_MAP)
    DK_RETURN_NOT_OK(arr_push_offset(a, arr_child_len(a), err));
  return arr_slot(a, true, err);
}

void dk__arr_advance(dk_arr *a, int64_t n, int64_t nulls) {
  a->length += n;
  a->null_count += nulls;
  if (a->validity.data) a->validity.len = (a->length + 7) / 8;
}

/* ---- export ----------------------------------------------------------------------------- */

typedef struct array_private {
  const dk_allocator *alloc;
  void *owned[3];                 /* aligned buffers we free */
  const void *buffer_ptrs[3];
  struct ArrowArray **child_ptrs;
  struct ArrowArray *children;
  void (*release_owner)(void *);  /* dk__array_wrap: foreign owner */
  void *owner;
} array_private;

static void array_release(struct ArrowArray *arr) {
  if (!arr || !arr->release) return;
  array_private *p = arr->private_data;
  for (int64_t i = 0; i < arr->n_children; i++) dk__array_release(arr->children[i]);
  if (arr->dictionary) dk__array_release(arr->dictionary);
  for (int i = 0; i < 3; i++) dk__aligned_free(p->alloc, p->owned[i]);
  if (p->release_owner) p->release_owner(p->owner);
  dk__free(p->alloc, p->child_ptrs);
  dk__free(p->alloc, p->children);
  dk__free(p->alloc, p);
  arr->release = NULL;
}

static array_private *array_private_new(const dk_allocator *alloc, int64_t n_children) {
  array_private *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) return NULL;
  p->alloc = alloc;
  if (n_children > 0) {
    p->child_ptrs = dk__calloc(alloc, (size_t)n_children, sizeof *p->child_ptrs);
    p->children = dk__calloc(alloc, (size_t)n_children, sizeof *p->children);
    if (!p->child_ptrs || !p->children) {
      dk__free(alloc, p->child_ptrs);
      dk__free(alloc, p->children);
      dk__free(alloc, p);
      return NULL;
    }
    for (int64_t i = 0; i < n_children; i++) p->child_ptrs[i] = &p->children[i];
  }
  return p;
}

dk_status dk__arr_finish(dk_arr *a, struct ArrowArray *out, dk_error *err) {
  memset(out, 0, sizeof *out);
  array_private *p = array_private_new(a->alloc, a->n_children);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (array export)");
  out->private_data = p;
  out->release = array_release;
  out->length = a->length;
  out->null_count = a->null_count;
  out->offset = 0;
  out->buffers = p->buffer_ptrs;
  out->children = p->child_ptrs;

  /* Children first, so a failure leaves a consistent, releasable parent. */
  for (int64_t i = 0; i < a->n_children; i++) {
    dk_status st = dk__arr_finish(&a->children[i], &p->children[i], err);
    if (st) {
      out->n_children = i;
      array_release(out);
      return st;
    }
  }
  out->n_children = a->n_children;

  /* validity */
  if (a->null_count > 0) {
    p->owned[0] = a->validity.data;
    p->buffer_ptrs[0] = a->validity.data;
  } else {
    dk__aligned_free(a->alloc, a->validity.data);
  }
  a->validity = (dk_abuf){0};

  int nb = 1;
  switch (a->type.id) {
    case DK_AT_NA: nb = 0; break;
    case DK_AT_STRUCT: nb = 1; break;
    case DK_AT_STRING:
    case DK_AT_BINARY: nb = 3; break;
    default: nb = 2; break;
  }
  out->n_buffers = nb;
  dk_status st = DK_OK;
  if (nb >= 2) {
    if (!a->values.data) st = dk__abuf_reserve(&a->values, a->alloc, 8, err);
    p->owned[1] = a->values.data;
    p->buffer_ptrs[1] = a->values.data;
    a->values = (dk_abuf){0};
  }
  if (nb == 3 && !st) {
    if (!a->data.data) st = dk__abuf_reserve(&a->data, a->alloc, 8, err);
    p->owned[2] = a->data.data;
    p->buffer_ptrs[2] = a->data.data;
    a->data = (dk_abuf){0};
  }
  a->length = 0;
  a->null_count = 0;
  if (!st) st = arr_start_offsets(a, err);
  if (st) array_release(out); /* a failed finish leaves nothing for the caller to release */
  return st;
}

dk_status dk__array_wrap(struct ArrowArray *out, int64_t length, int64_t null_count,
                        int64_t offset, int n_buffers, const void *const *buffers,
                        int64_t n_children, struct ArrowArray *children,
                        void (*release_owner)(void *owner), void *owner,
                        const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  array_private *p = n_buffers > 3 ? NULL : array_private_new(alloc, n_children);
  if (!p) { /* the children and the owner were handed over: release them */
    for (int64_t i = 0; i < n_children; i++) dk__array_release(&children[i]);
    if (release_owner) release_owner(owner);
    if (n_buffers > 3) return dk__error_set(err, DK_INTERNAL, "too many buffers");
    return dk__error_set(err, DK_NOMEM, "out of memory (array wrap)");
  }
  for (int i = 0; i < n_buffers; i++) p->buffer_ptrs[i] = buffers[i];
  for (int64_t i = 0; i < n_children; i++) dk__array_move(&children[i], &p->children[i]);
  p->release_owner = release_owner;
  p->owner = owner;
  out->length = length;
  out->null_count = null_count;
  out->offset = offset;
  out->n_buffers = n_buffers;
  out->n_children = n_children;
  out->buffers = p->buffer_ptrs;
  out->children = p->child_ptrs;
  out->private_data = p;
  out->release = array_release;
  return DK_OK;
}

/* ---- streams ---------------------------------------------------------------------------- */

typedef struct stream_private {
  dk_stream_impl impl;
  void *state;
  const dk_allocator *alloc;
  dk_error err;
} stream_private;

int dk__status_to_errno(dk_status s) {
  switch (s) {
    case DK_OK: return 0;
    case DK_NOMEM: return 12;       /* ENOMEM */
    case DK_INVALID: return 22;     /* EINVAL */
    case DK_NOT_FOUND: return 2;    /* ENOENT */
    case DK_UNSUPPORTED: return 95; /* ENOTSUP */
    case DK_CANCELLED: return 125;  /* ECANCELED */
    default: return 5;              /* EIO */
  }
}

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  stream_private *p = s->private_data;
  dk_error_init(&p->err);
  return dk__status_to_errno(p->impl.get_schema(p->state, out, &p->err));
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  stream_private *p = s->private_data;
  dk_error_init(&p->err);
  memset(out, 0, sizeof *out);
  return dk__status_to_errno(p->impl.get_next(p->state, out, &p->err));
}

static const char *stream_last_error(struct ArrowArrayStream *s) {
  stream_private *p = s->private_data;
  return p->err.code ? p->err.message : NULL;
}

dk_status dk__stream_status(const struct ArrowArrayStream *s, int rc) {
  if (rc == 0) return DK_OK;
  if (s->get_next == stream_get_next) {
    const stream_private *p = s->private_data;
    if (p->err.code != DK_OK) return p->err.code;
  }
  switch (rc) {
    case 12: return DK_NOMEM;
    case 22: return DK_INVALID;
    case 2: return DK_NOT_FOUND;
    case 95: return DK_UNSUPPORTED;
    case 125: return DK_CANCELLED;
    default: return DK_IO;
  }
}

static void stream_release(struct ArrowArrayStream *s) {
  if (!s || !s->release) return;
  stream_private *p = s->private_data;
  if (p->impl.release) p->impl.release(p->state);
  dk__free(p->alloc, p);
  s->release = NULL;
}

dk_status dk__stream_init(struct ArrowArrayStream *out, const dk_stream_impl *impl, void *state,
                         const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  stream_private *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) {
    if (impl->release) impl->release(state);
    return dk__error_set(err, DK_NOMEM, "out of memory (stream)");
  }
  p->impl = *impl;
  p->state = state;
  p->alloc = alloc;
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_last_error;
  out->release = stream_release;
  out->private_data = p;
  return DK_OK;
}

typedef struct batches_state {
  struct ArrowSchema schema;
  struct ArrowArray *batches;
  int64_t n, next;
  const dk_allocator *alloc;
} batches_state;

static dk_status batches_schema(void *st, struct ArrowSchema *out, dk_error *err) {
  batches_state *b = st;
  return dk__schema_copy(out, &b->schema, err);
}

static dk_status batches_next(void *st, struct ArrowArray *out, dk_error *err) {
  batches_state *b = st;
  (void)err;
  if (b->next < b->n) dk__array_move(&b->batches[b->next++], out);
  return DK_OK;
}

static void batches_release(void *st) {
  batches_state *b = st;
  for (int64_t i = b->next; i < b->n; i++) dk__array_release(&b->batches[i]);
  dk__free(b->alloc, b->batches);
  dk__schema_release(&b->schema);
  dk__free(b->alloc, b);
}

dk_status dk__stream_from_batches(struct ArrowArrayStream *out, struct ArrowSchema *schema,
                                 struct ArrowArray *batches, int64_t n_batches,
                                 const dk_allocator *alloc, dk_error *err) {
  batches_state *b = dk__calloc(alloc, 1, sizeof *b);
  struct ArrowArray *copy = dk__calloc(alloc, (size_t)(n_batches ? n_batches : 1), sizeof *copy);
  if (!b || !copy) {
    dk__free(alloc, b);
    dk__free(alloc, copy);
    return dk__error_set(err, DK_NOMEM, "out of memory (stream)");
  }
  dk__schema_move(schema, &b->schema);
  for (int64_t i = 0; i < n_batches; i++) dk__array_move(&batches[i], &copy[i]);
  b->batches = copy;
  b->n = n_batches;
  b->alloc = alloc;
  static const dk_stream_impl impl = {batches_schema, batches_next, batches_release};
  return dk__stream_init(out, &impl, b, alloc, err);
}
