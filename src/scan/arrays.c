/*
** arrays.c — Arrow array surgery for scans: row selection (deletion vectors, filters),
** all-null columns (schema evolution), type widening casts and the mapping of a data file's
** physical columns onto the logical schema (Delta PROTOCOL.md "Column Mapping": physical
** names in name mode, Parquet field ids in id mode; "Type Widening" for the casts).
*/
#include <stdlib.h>
#include <strings.h>

#include "scan/scan_int.h"

/* ---- all-null arrays ---------------------------------------------------------------------- */

dk_status dk_scan__null_array(struct ArrowArray *out, const struct ArrowSchema *schema, int64_t n,
                              const dk_allocator *alloc, dk_error *err) {
  dk_arr b;
  DK_RETURN_NOT_OK(dk__arr_init_from_schema(&b, schema, alloc, err));
  dk_status st = dk__arr_reserve(&b, n, err);
  if (!st) st = dk__arr_append_nulls(&b, n, err);
  if (!st) st = dk__arr_finish(&b, out, err);
  dk__arr_reset(&b);
  return st;
}

/* ---- take --------------------------------------------------------------------------------- */

/* Appends the validity of the selected rows to dst; returns the null count through *nulls. */
static dk_status take_validity(dk_arr *dst, const struct ArrowArray *src, const int64_t *idx,
                               int64_t m, int64_t *nulls, dk_error *err) {
  *nulls = 0;
  if (src->null_count == 0 || !src->buffers[0]) {
    if (dst->validity.data) DK_RETURN_NOT_OK(dk__arr_ensure_validity(dst, m, err));
    return DK_OK;
  }
  DK_RETURN_NOT_OK(dk__arr_ensure_validity(dst, m, err));
  const uint8_t *v = src->buffers[0];
  for (int64_t k = 0; k < m; k++) {
    if (!dk__bit_get(v, src->offset + idx[k])) {
      dk__bit_clear(dst->validity.data, dst->length + k);
      (*nulls)++;
    }
  }
  return DK_OK;
}

static dk_status take_into(dk_arr *dst, const struct ArrowArray *src, const int64_t *idx,
                           int64_t m, dk_error *err) {
  int64_t nulls;
  DK_RETURN_NOT_OK(dk__arr_reserve(dst, m, err));
  DK_RETURN_NOT_OK(take_validity(dst, src, idx, m, &nulls, err));
  const int64_t off = src->offset;
  switch (dst->type.id) {
    case DK_AT_NA:
      break;
    case DK_AT_BOOL: {
      const uint8_t *bits = src->buffers[1];
      for (int64_t k = 0; k < m; k++)
        if (dk__bit_get(bits, off + idx[k])) dk__bit_set(dst->values.data, dst->length + k);
        else dk__bit_clear(dst->values.data, dst->length + k);
      dst->values.len = (dst->length + m + 7) / 8;
      break;
    }
    case DK_AT_STRING:
    case DK_AT_BINARY: {
      const int32_t *o = src->buffers[1];
      const uint8_t *d = src->buffers[2];
      int64_t total = 0;
      for (int64_t k = 0; k < m; k++) total += o[off + idx[k] + 1] - o[off + idx[k]];
      DK_RETURN_NOT_OK(dk__abuf_reserve(&dst->data, dst->alloc, total, err));
      DK_RETURN_IF(dst->data.len + total > INT32_MAX, DK_UNSUPPORTED, err,
                   "scan: batch exceeds 2 GiB of string data; use a smaller batch size");
      int32_t *wo = (int32_t *)(dst->values.data + dst->values.len);
      for (int64_t k = 0; k < m; k++) {
        int64_t p = off + idx[k];
        int32_t len = o[p + 1] - o[p];
        if (len) memcpy(dst->data.data + dst->data.len, d + o[p], (size_t)len);
        dst->data.len += len;
        wo[k] = (int32_t)dst->data.len;
      }
      dst->values.len += 4 * m;
      break;
    }
    case DK_AT_STRUCT: {
      int64_t *cidx = dk__malloc(dst->alloc, (size_t)(m ? m : 1) * sizeof *cidx);
      DK_RETURN_IF(!cidx, DK_NOMEM, err, "out of memory (take)");
      for (int64_t k = 0; k < m; k++) cidx[k] = off + idx[k];
      dk_status st = DK_OK;
      for (int64_t c = 0; st == DK_OK && c < dst->n_children; c++)
        st = take_into(&dst->children[c], src->children[c], cidx, m, err);
      dk__free(dst->alloc, cidx);
      DK_RETURN_NOT_OK(st);
      break;
    }
    case DK_AT_LIST:
    case DK_AT_MAP: {
      const int32_t *o = src->buffers[1];
      int64_t total = 0;
      for (int64_t k = 0; k < m; k++) total += o[off + idx[k] + 1] - o[off + idx[k]];
      int64_t *cidx = dk__malloc(dst->alloc, (size_t)(total ? total : 1) * sizeof *cidx);
      DK_RETURN_IF(!cidx, DK_NOMEM, err, "out of memory (take)");
      int64_t base = dst->children[0].length, j = 0;
      DK_RETURN_IF(base + total > INT32_MAX, DK_UNSUPPORTED, err,
                   "scan: list batch exceeds 2^31 elements");
      int32_t *wo = (int32_t *)(dst->values.data + dst->values.len);
      for (int64_t k = 0; k < m; k++) {
        int64_t p = off + idx[k];
        for (int32_t e = o[p]; e < o[p + 1]; e++) cidx[j++] = e;
        wo[k] = (int32_t)(base + j);
      }
      dst->values.len += 4 * m;
      dk_status st = take_into(&dst->children[0], src->children[0], cidx, total, err);
      dk__free(dst->alloc, cidx);
      DK_RETURN_NOT_OK(st);
      break;
    }
    default: {
      int w = dk__atype_width(&dst->type);
      DK_RETURN_IF(w <= 0, DK_UNSUPPORTED, err, "scan: cannot select rows of Arrow type %d",
                   (int)dst->type.id);
      const uint8_t *v = src->buffers[1];
      uint8_t *wv = dst->values.data + dst->values.len;
      switch (w) {
        case 4:
          for (int64_t k = 0; k < m; k++) memcpy(wv + 4 * k, v + 4 * (off + idx[k]), 4);
          break;
        case 8:
          for (int64_t k = 0; k < m; k++) memcpy(wv + 8 * k, v + 8 * (off + idx[k]), 8);
          break;
        default:
          for (int64_t k = 0; k < m; k++)
            memcpy(wv + (int64_t)w * k, v + (int64_t)w * (off + idx[k]), (size_t)w);
      }
      dst->values.len += (int64_t)w * m;
    }
  }
  dk__arr_advance(dst, m, nulls);
  return DK_OK;
}

dk_status dk_scan__take(struct ArrowArray *out, const struct ArrowSchema *schema,
                        const struct ArrowArray *src, const int64_t *idx, int64_t m,
                        const dk_allocator *alloc, dk_error *err) {
  dk_arr b;
  DK_RETURN_NOT_OK(dk__arr_init_from_schema(&b, schema, alloc, err));
  dk_status st = take_into(&b, src, idx, m, err);
  if (!st) st = dk__arr_finish(&b, out, err);
  dk__arr_reset(&b);
  return st;
}

/* ---- casts -------------------------------------------------------------------------------- */

static bool is_int(dk_atype_id id) { return id >= DK_AT_INT8 && id <= DK_AT_INT64; }

static int64_t read_int(const uint8_t *v, int w, int64_t p) {
  switch (w) {
    case 1: return ((const int8_t *)v)[p];
    case 2: { int16_t x; memcpy(&x, v + 2 * p, 2); return x; }
    case 4: { int32_t x; memcpy(&x, v + 4 * p, 4); return x; }
    default: { int64_t x; memcpy(&x, v + 8 * p, 8); return x; }
  }
}

static __int128 pow10_i128(int n) {
  __int128 r = 1;
  while (n-- > 0) r *= 10;
  return r;
}

static int64_t unit_per_second(dk_time_unit u) {
  return u == DK_TU_SECOND ? 1 : u == DK_TU_MILLI ? 1000 : u == DK_TU_MICRO ? 1000000 : 1000000000;
}

/* Whether two Arrow types share one buffer layout (so a relabel is enough). */
static bool same_layout(const dk_atype *a, const dk_atype *b) {
  if (a->id == DK_AT_TIMESTAMP && b->id == DK_AT_TIMESTAMP) return a->unit == b->unit;
  if ((a->id == DK_AT_STRING || a->id == DK_AT_BINARY) &&
      (b->id == DK_AT_STRING || b->id == DK_AT_BINARY))
    return true;
  if (a->id == DK_AT_DECIMAL128 && b->id == DK_AT_DECIMAL128) return a->scale == b->scale;
  return a->id == b->id && a->byte_width == b->byte_width;
}

static dk_status cast_prim(struct ArrowArray *out, const dk_atype *tt, const dk_atype *st_,
                           struct ArrowArray *src, const dk_allocator *alloc, dk_error *err) {
  const int64_t n = src->length, off = src->offset;
  const uint8_t *v = src->buffers[1];
  dk_arr b;
  DK_RETURN_NOT_OK(dk__arr_init(&b, tt, alloc, err));
  dk_status st = dk__arr_reserve(&b, n, err);
  int64_t nulls = 0;
  if (!st && src->null_count != 0 && src->buffers[0]) {
    st = dk__arr_ensure_validity(&b, n, err);
    for (int64_t k = 0; !st && k < n; k++)
      if (!dk__bit_get(src->buffers[0], off + k)) {
        dk__bit_clear(b.validity.data, k);
        nulls++;
      }
  }
  if (st) goto done;
  const int sw = dk__atype_width(st_), tw = dk__atype_width(tt);
  uint8_t *w = b.values.data;
  if (is_int(st_->id) && is_int(tt->id)) {
    for (int64_t k = 0; k < n; k++) {
      int64_t x = read_int(v, sw, off + k);
      switch (tw) { /* narrower: an INT32 without its INT(8)/INT(16) annotation */
        case 1: { int8_t y = (int8_t)x; memcpy(w + k, &y, 1); break; }
        case 2: { int16_t y = (int16_t)x; memcpy(w + 2 * k, &y, 2); break; }
        case 4: { int32_t y = (int32_t)x; memcpy(w + 4 * k, &y, 4); break; }
        default: memcpy(w + 8 * k, &x, 8);
      }
    }
  } else if ((is_int(st_->id) || st_->id == DK_AT_FLOAT) &&
             (tt->id == DK_AT_DOUBLE || tt->id == DK_AT_FLOAT)) {
    for (int64_t k = 0; k < n; k++) {
      double x;
      if (st_->id == DK_AT_FLOAT) {
        float f;
        memcpy(&f, v + 4 * (off + k), 4);
        x = f;
      } else {
        x = (double)read_int(v, sw, off + k);
      }
      if (tt->id == DK_AT_DOUBLE) memcpy(w + 8 * k, &x, 8);
      else { float f = (float)x; memcpy(w + 4 * k, &f, 4); }
    }
  } else if (st_->id == DK_AT_DATE32 && tt->id == DK_AT_TIMESTAMP) {
    int64_t per_day = 86400 * unit_per_second(tt->unit);
    for (int64_t k = 0; k < n; k++) {
      int64_t x = read_int(v, 4, off + k) * per_day;
      memcpy(w + 8 * k, &x, 8);
    }
  } else if (st_->id == DK_AT_TIMESTAMP && tt->id == DK_AT_TIMESTAMP) {
    int64_t su = unit_per_second(st_->unit), tu = unit_per_second(tt->unit);
    for (int64_t k = 0; k < n; k++) {
      int64_t x = read_int(v, 8, off + k);
      if (su > tu) {
        int64_t d = su / tu, q = x / d;
        if (x % d < 0) q--; /* floor */
        x = q;
      } else {
        x *= tu / su;
      }
      memcpy(w + 8 * k, &x, 8);
    }
  } else if ((st_->id == DK_AT_DECIMAL128 || is_int(st_->id)) && tt->id == DK_AT_DECIMAL128 &&
             (is_int(st_->id) ? 0 : st_->scale) <= tt->scale) {
    __int128 mul = pow10_i128(tt->scale - (is_int(st_->id) ? 0 : st_->scale));
    for (int64_t k = 0; k < n; k++) {
      __int128 x;
      if (is_int(st_->id)) x = read_int(v, sw, off + k);
      else memcpy(&x, v + 16 * (off + k), 16);
      x *= mul;
      memcpy(w + 16 * k, &x, 16);
    }
  } else {
    st = dk__error_set(err, DK_UNSUPPORTED, "scan: cannot read Arrow type %d as type %d",
                       (int)st_->id, (int)tt->id);
    goto done;
  }
  b.values.len = (int64_t)tw * n;
  dk__arr_advance(&b, n, nulls);
  st = dk__arr_finish(&b, out, err);
done:
  dk__arr_reset(&b);
  dk__array_release(src);
  return st;
}

/* ---- conform ------------------------------------------------------------------------------ */

int64_t dk_scan__find_child(const struct ArrowSchema *s, const dk_field *f,
                            dk_column_mapping_mode mode) {
  if (mode == DK_COLUMN_MAPPING_ID && f->column_mapping_id >= 0) {
    for (int64_t i = 0; i < s->n_children; i++) {
      dk_str id = dk__schema_metadata_get(s->children[i]->metadata, "PARQUET:field_id");
      if (id.ptr && id.len < 24) {
        char buf[24];
        memcpy(buf, id.ptr, id.len);
        buf[id.len] = 0;
        if (strtoll(buf, NULL, 10) == f->column_mapping_id) return i;
      }
    }
  }
  const char *name = mode == DK_COLUMN_MAPPING_NONE ? f->name : f->physical_name;
  for (int64_t i = 0; i < s->n_children; i++)
    if (s->children[i]->name && !strcmp(s->children[i]->name, name)) return i;
  for (int64_t i = 0; i < s->n_children; i++)
    if (s->children[i]->name && !strcasecmp(s->children[i]->name, name)) return i;
  return -1;
}

typedef struct held_array {
  const dk_allocator *alloc;
  struct ArrowArray a;
} held_array;

static void held_release(void *p) {
  held_array *h = p;
  dk__array_release(&h->a);
  dk__free(h->alloc, h);
}

/* Re-wraps src's own buffers with new children (src is consumed, its remaining children are
** released with it). */
static dk_status rewrap(struct ArrowArray *out, struct ArrowArray *src, int64_t n_children,
                        struct ArrowArray *children, const dk_allocator *alloc, dk_error *err) {
  held_array *h = dk__calloc(alloc, 1, sizeof *h);
  if (!h) {
    for (int64_t i = 0; i < n_children; i++) dk__array_release(&children[i]);
    dk__array_release(src);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  h->alloc = alloc;
  dk__array_move(src, &h->a);
  return dk__array_wrap(out, h->a.length, h->a.null_count, h->a.offset, (int)h->a.n_buffers,
                       h->a.buffers, n_children, children, held_release, h, alloc, err);
}

static dk_status conform_rec(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                             dk_column_mapping_mode mode, const struct ArrowSchema *ss,
                             struct ArrowArray *src, const dk_allocator *alloc, dk_error *err);

/* Struct-like targets (structs, variants, map entries). fields == NULL: match by position. */
static dk_status conform_struct(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                                dk_column_mapping_mode mode, const struct ArrowSchema *ss,
                                struct ArrowArray *src, const dk_allocator *alloc, dk_error *err) {
  if (strcmp(ss->format, "+s") != 0) {
    dk__array_release(src);
    return dk__error_set(err, DK_UNSUPPORTED, "scan: column '%s' is not a struct in the data file",
                         ss->name ? ss->name : "");
  }
  int64_t nc = tgt->n_children;
  struct ArrowArray *ch = dk__calloc(alloc, (size_t)(nc ? nc : 1), sizeof *ch);
  if (!ch) {
    dk__array_release(src);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  dk_status st = DK_OK;
  int64_t i = 0;
  for (; st == DK_OK && i < nc; i++) {
    const dk_type *ct = NULL;
    int64_t j = -1;
    if (t && t->id == DK_TYPE_STRUCT) {
      ct = t->fields[i].type;
      j = dk_scan__find_child(ss, &t->fields[i], mode);
    } else if (t && t->id == DK_TYPE_MAP) { /* map entries */
      ct = i == 0 ? t->key : t->value;
      j = i < ss->n_children ? i : -1;
    } else { /* variant: metadata, value by name */
      for (int64_t k = 0; k < ss->n_children; k++)
        if (ss->children[k]->name && !strcmp(ss->children[k]->name, "typed_value")) {
          st = dk__error_set(err, DK_UNSUPPORTED, "scan: shredded variant column '%s' (typed_value) "
                             "is not supported", ss->name ? ss->name : "");
          break;
        }
      if (st) break;
      for (int64_t k = 0; k < ss->n_children; k++)
        if (ss->children[k]->name && !strcmp(ss->children[k]->name, tgt->children[i]->name)) j = k;
    }
    if (j < 0) {
      st = dk_scan__null_array(&ch[i], tgt->children[i], src->offset + src->length, alloc, err);
    } else {
      struct ArrowArray tmp;
      dk__array_move(src->children[j], &tmp);
      st = conform_rec(&ch[i], ct, tgt->children[i], mode, ss->children[j], &tmp, alloc, err);
    }
  }
  if (st) {
    for (int64_t k = 0; k < i - 1; k++) dk__array_release(&ch[k]);
    dk__free(alloc, ch);
    dk__array_release(src);
    return st;
  }
  st = rewrap(out, src, nc, ch, alloc, err);
  dk__free(alloc, ch);
  return st;
}

static dk_status conform_rec(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                             dk_column_mapping_mode mode, const struct ArrowSchema *ss,
                             struct ArrowArray *src, const dk_allocator *alloc, dk_error *err) {
  const char *tf = tgt->format;
  if (!strcmp(tf, "+s")) return conform_struct(out, t, tgt, mode, ss, src, alloc, err);
  if (!strcmp(tf, "+l") || !strcmp(tf, "+m")) {
    if (strcmp(ss->format, tf) != 0) {
      dk__array_release(src);
      return dk__error_set(err, DK_UNSUPPORTED,
                           "scan: column '%s' has type %s in the data file, expected %s",
                           ss->name ? ss->name : "", ss->format, tf);
    }
    struct ArrowArray child, tmp;
    dk__array_move(src->children[0], &tmp);
    dk_status st;
    if (tf[1] == 'l')
      st = conform_rec(&child, t ? t->element : NULL, tgt->children[0], mode, ss->children[0], &tmp,
                       alloc, err);
    else
      st = conform_struct(&child, t, tgt->children[0], mode, ss->children[0], &tmp, alloc, err);
    if (st) {
      dk__array_release(src);
      return st;
    }
    return rewrap(out, src, 1, &child, alloc, err);
  }
  if (!strcmp(tf, ss->format)) {
    dk__array_move(src, out);
    return DK_OK;
  }
  dk_atype ta, sa;
  dk_status st = dk__atype_parse(&ta, tf, err);
  if (!st) st = dk__atype_parse(&sa, ss->format, err);
  if (st) {
    dk__array_release(src);
    return st;
  }
  if (same_layout(&ta, &sa)) {
    dk__array_move(src, out);
    return DK_OK;
  }
  return cast_prim(out, &ta, &sa, src, alloc, err);
}

dk_status dk_scan__conform(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                           dk_column_mapping_mode mode, const struct ArrowSchema *src_schema,
                           struct ArrowArray *src, const dk_allocator *alloc, dk_error *err) {
  return conform_rec(out, t, tgt, mode, src_schema, src, alloc, err);
}

dk_status dk_scan__project(struct ArrowArray *out, const struct ArrowSchema *tgt,
                           const struct ArrowSchema *src_schema, struct ArrowArray *src,
                           const dk_allocator *alloc, dk_error *err) {
  if (strcmp(tgt->format, "+s") != 0 || strcmp(src_schema->format, "+s") != 0) {
    dk__array_move(src, out);
    return DK_OK;
  }
  int64_t nc = tgt->n_children;
  struct ArrowArray *ch = dk__calloc(alloc, (size_t)(nc ? nc : 1), sizeof *ch);
  if (!ch) {
    dk__array_release(src);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  dk_status st = DK_OK;
  int64_t i = 0;
  for (; st == DK_OK && i < nc; i++) {
    int64_t j = -1;
    for (int64_t k = 0; k < src_schema->n_children && k < src->n_children; k++)
      if (!strcmp(src_schema->children[k]->name, tgt->children[i]->name)) j = k;
    if (j < 0) {
      st = dk__error_set(err, DK_INTERNAL, "scan: projected field '%s' was not read",
                         tgt->children[i]->name);
      break;
    }
    struct ArrowArray tmp;
    dk__array_move(src->children[j], &tmp);
    st = dk_scan__project(&ch[i], tgt->children[i], src_schema->children[j], &tmp, alloc, err);
    if (st) break;
  }
  if (st) {
    for (int64_t k = 0; k < i; k++) dk__array_release(&ch[k]);
    dk__free(alloc, ch);
    dk__array_release(src);
    return st;
  }
  st = rewrap(out, src, nc, ch, alloc, err);
  dk__free(alloc, ch);
  return st;
}
