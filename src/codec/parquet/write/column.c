/*
** write/column.c — the column chunk writer: levels and values of one leaf become data pages
** (v1 or v2) with a dictionary page first, statistics per page and chunk, and the page index
** (apache/parquet-format: Encodings.md PLAIN, RLE_DICTIONARY and the RLE hybrid for levels;
** README "Data Pages"; PageIndex.md; parquet.thrift Statistics and ColumnOrder rules).
**
** Values are dictionary-encoded until the dictionary's PLAIN size passes the limit; the page
** open at that moment is closed as a dictionary page and the rest of the chunk is PLAIN (as
** parquet-cpp and parquet-mr fall back). Booleans are always PLAIN. Pages close at row
** boundaries (repetition level 0) once they reach the byte or row target, so the OffsetIndex
** can point readers at any page.
**
** Sort orders (ColumnOrder TYPE_ORDER): signed for INT32/INT64 (ints, dates, timestamps,
** decimals), signed two's complement for decimal FIXED_LEN_BYTE_ARRAY, unsigned bytes for
** BYTE_ARRAY and other FIXED_LEN_BYTE_ARRAY, false < true for BOOLEAN; FLOAT/DOUBLE compare as
** numbers with NaN left out and counted, a zero min written as -0.0 and a zero max as +0.0.
** A chunk whose page has only NaN values gets no ColumnIndex (the spec forbids one).
*/
#include <math.h>

#include "arrow/array.h"
#include "codec/parquet/write/pqw.h"

#define LEVEL_CHUNK 4096   /* levels handed to the encoders at a time */

/* ---- typed bounds ------------------------------------------------------------------------ */

enum { SK_BOOL, SK_I32, SK_I64, SK_F32, SK_F64, SK_I128, SK_BYTES };

static int stat_kind(const pqw_field *f) {
  switch (f->ptype) {
    case PQ_BOOLEAN: return SK_BOOL;
    case PQ_INT32: return SK_I32;
    case PQ_INT64: return SK_I64;
    case PQ_FLOAT: return SK_F32;
    case PQ_DOUBLE: return SK_F64;
    case PQ_FLBA: return f->signed_flba ? SK_I128 : SK_BYTES;
    default: return SK_BYTES;
  }
}

/* Big-endian two's-complement bytes (1..16) as __int128. */
static __int128 be_i128(const uint8_t *p, size_t n) {
  __int128 v = (p[0] & 0x80) ? -1 : 0;
  for (size_t i = 0; i < n; i++) v = (__int128)(((unsigned __int128)v << 8) | p[i]);
  return v;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = memcmp(a, b, DK_MIN(an, bn));
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

/* Compares physical values a and b of the column's stat kind. */
static int val_cmp(int kind, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  switch (kind) {
    case SK_BOOL: return (int)a[0] - (int)b[0];
    case SK_I32: {
      int32_t x, y;
      memcpy(&x, a, 4), memcpy(&y, b, 4);
      return x < y ? -1 : x > y;
    }
    case SK_I64: {
      int64_t x, y;
      memcpy(&x, a, 8), memcpy(&y, b, 8);
      return x < y ? -1 : x > y;
    }
    case SK_F32: {
      float x, y;
      memcpy(&x, a, 4), memcpy(&y, b, 4);
      return x < y ? -1 : x > y;
    }
    case SK_F64: {
      double x, y;
      memcpy(&x, a, 8), memcpy(&y, b, 8);
      return x < y ? -1 : x > y;
    }
    case SK_I128: {
      __int128 x = be_i128(a, an), y = be_i128(b, bn);
      return x < y ? -1 : x > y;
    }
    default: return bytes_cmp(a, an, b, bn);
  }
}

static dk_status bound_set(pqw_bound *b, const void *p, size_t n, dk_error *err) {
  dk__buf_clear(&b->v);
  b->set = 1;
  return dk__buf_append(&b->v, p, n, err);
}

/* Widens [mn, mx] by the bound pair of a page or chunk. */
static dk_status bound_merge(int kind, pqw_bound *mn, pqw_bound *mx, const pqw_bound *pmn,
                             const pqw_bound *pmx, dk_error *err) {
  if (pmn->set && (!mn->set || val_cmp(kind, (const uint8_t *)pmn->v.data, pmn->v.len,
                                       (const uint8_t *)mn->v.data, mn->v.len) < 0))
    DK_RETURN_NOT_OK(bound_set(mn, pmn->v.data, pmn->v.len, err));
  if (pmx->set && (!mx->set || val_cmp(kind, (const uint8_t *)pmx->v.data, pmx->v.len,
                                       (const uint8_t *)mx->v.data, mx->v.len) > 0))
    DK_RETURN_NOT_OK(bound_set(mx, pmx->v.data, pmx->v.len, err));
  return DK_OK;
}

/* ---- init -------------------------------------------------------------------------------- */

static void bound_init(pqw_bound *b, const dk_allocator *a) {
  dk__buf_init(&b->v, a);
  b->set = 0;
}

dk_status dk_pqw__col_init(pqw_col *c, const pqw_field *leaf, const pqw_opts *o,
                           const dk_allocator *alloc, dk_error *err) {
  memset(c, 0, sizeof *c);
  c->leaf = leaf;
  c->o = o;
  c->alloc = alloc;
  c->ptype = leaf->ptype;
  switch (leaf->ptype) {
    case PQ_BOOLEAN: c->width = 1; break;
    case PQ_INT32: case PQ_FLOAT: c->width = 4; break;
    case PQ_INT64: case PQ_DOUBLE: c->width = 8; break;
    case PQ_FLBA: c->width = leaf->type_length; break;
    default: c->width = 0; break;
  }
  c->max_def = leaf->def;
  c->max_rep = leaf->rep;
  c->path_len = leaf->depth + 1;
  c->path = dk__calloc(alloc, (size_t)c->path_len, sizeof *c->path);
  if (!c->path) return dk__error_set(err, DK_NOMEM, "out of memory");
  for (const pqw_field *f = leaf; f && f->depth >= 0; f = f->parent) c->path[f->depth] = f;
  dk_buf *bufs[] = {&c->def, &c->rep, &c->pg_plain, &c->pg_idx, &c->body, &c->cbuf, &c->hdr,
                    &c->lv, &c->dict.vals, &c->dict.starts, &c->dict.stamp, &c->pg_uniq,
                    &c->pages, &c->index_vals, &c->page_entries, &c->sh_def, &c->sh_rep,
                    &c->sh_idx};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_init(bufs[i], alloc);
  pqw_bound *bs[] = {&c->pg_min, &c->pg_max, &c->ch_min, &c->ch_max, &c->f_min, &c->f_max};
  for (size_t i = 0; i < DK_ARRAY_LEN(bs); i++) bound_init(bs[i], alloc);
  c->dict_on = o->dictionary && c->ptype != PQ_BOOLEAN;
  c->ch_index_ok = 1;
  c->pg_no = 1;
  return dk_pq__compressor_init(&c->comp, o->codec, o->level, err);
}

void dk_pqw__col_dispose(pqw_col *c) {
  dk_buf *bufs[] = {&c->def, &c->rep, &c->pg_plain, &c->pg_idx, &c->body, &c->cbuf, &c->hdr,
                    &c->lv, &c->dict.vals, &c->dict.starts, &c->dict.stamp, &c->pg_uniq,
                    &c->pages, &c->index_vals, &c->page_entries, &c->sh_def, &c->sh_rep,
                    &c->sh_idx,
                    &c->pg_min.v, &c->pg_max.v, &c->ch_min.v, &c->ch_max.v, &c->f_min.v,
                    &c->f_max.v};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_dispose(bufs[i]);
  dk__free(c->alloc, c->dict.slots);
  dk__free(c->alloc, c->path);
  dk_pq__compressor_dispose(&c->comp);
  memset(c, 0, sizeof *c);
}

/* ---- dictionary -------------------------------------------------------------------------- */

static inline uint32_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (uint32_t)x;
}

static dk_status dict_grow(pqw_col *c, dk_error *err) {
  pqw_dict *d = &c->dict;
  size_t cap = d->cap ? d->cap * 2 : 1024;
  pqw_slot *slots = dk__calloc(c->alloc, cap, sizeof *slots);
  if (!slots) return dk__error_set(err, DK_NOMEM, "out of memory (dictionary)");
  for (size_t i = 0; i < d->cap; i++) {
    if (!d->slots[i].idx1) continue;
    size_t j = d->slots[i].hash & (cap - 1);
    while (slots[j].idx1) j = (j + 1) & (cap - 1);
    slots[j] = d->slots[i];
  }
  dk__free(c->alloc, d->slots);
  d->slots = slots;
  d->cap = cap;
  return DK_OK;
}

static void dict_reset(pqw_dict *d) {
  if (d->slots) memset(d->slots, 0, d->cap * sizeof *d->slots);
  d->n = 0;
  dk__buf_clear(&d->vals);
  dk__buf_clear(&d->starts);
  dk__buf_clear(&d->stamp);
}

static inline uint64_t prefix8(const uint8_t *p, size_t n) {
  uint64_t k = 0;
  memcpy(&k, p, n < 8 ? n : 8);
  return k;
}

/* Index of a fixed-width value (width bytes at p), inserting it. */
static inline dk_status dict_fixed(pqw_col *c, const uint8_t *p, uint32_t *out, dk_error *err) {
  pqw_dict *d = &c->dict;
  if (DK_UNLIKELY((size_t)(d->n + 1) * 2 > d->cap)) DK_RETURN_NOT_OK(dict_grow(c, err));
  size_t w = (size_t)c->width;
  uint64_t key = prefix8(p, w);
  uint32_t h = w <= 8 ? hash64(key) : (uint32_t)dk__hash_bytes(p, w);
  size_t mask = d->cap - 1, j = h & mask;
  for (;;) {
    const pqw_slot *s = &d->slots[j];
    if (!s->idx1) break;
    if (s->key == key && s->hash == h &&
        (w <= 8 || !memcmp(d->vals.data + (size_t)(s->idx1 - 1) * w, p, w))) {
      *out = s->idx1 - 1;
      return DK_OK;
    }
    j = (j + 1) & mask;
  }
  DK_RETURN_NOT_OK(dk__buf_append(&d->vals, p, w, err));
  d->slots[j] = (pqw_slot){key, h, ++d->n};
  *out = d->n - 1;
  return DK_OK;
}

static inline dk_status dict_bytes(pqw_col *c, const uint8_t *p, uint32_t n, uint32_t *out,
                                   dk_error *err) {
  pqw_dict *d = &c->dict;
  if (DK_UNLIKELY((size_t)(d->n + 1) * 2 > d->cap)) DK_RETURN_NOT_OK(dict_grow(c, err));
  uint64_t key = prefix8(p, n) ^ ((uint64_t)n << 56);
  uint32_t h = (uint32_t)dk__hash_bytes(p, n);
  size_t mask = d->cap - 1, j = h & mask;
  const uint32_t *starts = (const uint32_t *)(const void *)d->starts.data;
  for (;;) {
    const pqw_slot *s = &d->slots[j];
    if (!s->idx1) break;
    if (s->hash == h && s->key == key) {
      uint32_t st = starts[s->idx1 - 1], len;
      memcpy(&len, d->vals.data + st - 4, 4);
      if (len == n && (n <= 8 || !memcmp(d->vals.data + st, p, n))) {
        *out = s->idx1 - 1;
        return DK_OK;
      }
    }
    j = (j + 1) & mask;
  }
  if (d->vals.len + 4 + n > UINT32_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "dictionary larger than 4 GiB");
  DK_RETURN_NOT_OK(dk__buf_reserve(&d->vals, 4 + (size_t)n, err));
  memcpy(d->vals.data + d->vals.len, &n, 4);
  if (n) memcpy(d->vals.data + d->vals.len + 4, p, n);
  uint32_t st = (uint32_t)(d->vals.len + 4);
  d->vals.len += 4 + (size_t)n;
  DK_RETURN_NOT_OK(dk__buf_append(&d->starts, &st, 4, err));
  uint32_t zero = 0;
  DK_RETURN_NOT_OK(dk__buf_append(&d->stamp, &zero, 4, err));
  d->slots[j] = (pqw_slot){key, h, ++d->n};
  *out = d->n - 1;
  return DK_OK;
}

/* ---- values ------------------------------------------------------------------------------ */

/* The physical bytes of the fixed-width value at Arrow slot i into dst (c->width bytes). */
static inline void fixed_value(const pqw_col *c, const struct ArrowArray *a, int64_t i,
                               uint8_t *dst) {
  const uint8_t *v = a->buffers[1];
  switch (c->leaf->conv) {
    case PQW_CV_BOOL: dst[0] = dk__bit_get(v, i); return;
    case PQW_CV_I8: {
      int32_t x = ((const int8_t *)v)[i];
      memcpy(dst, &x, 4);
      return;
    }
    case PQW_CV_I16: {
      int32_t x = ((const int16_t *)(const void *)v)[i];
      memcpy(dst, &x, 4);
      return;
    }
    case PQW_CV_COPY4: memcpy(dst, v + 4 * i, 4); return;
    case PQW_CV_COPY8: memcpy(dst, v + 8 * i, 8); return;
    case PQW_CV_TS_MUL: {
      int64_t x;
      memcpy(&x, v + 8 * i, 8);
      x = (int64_t)((uint64_t)x * (uint64_t)c->leaf->ts_mul);
      memcpy(dst, &x, 8);
      return;
    }
    case PQW_CV_DEC32: memcpy(dst, v + 16 * i, 4); return; /* little-endian low bytes */
    case PQW_CV_DEC64: memcpy(dst, v + 16 * i, 8); return;
    case PQW_CV_DECFLBA: {
      const uint8_t *s = v + 16 * i;
      int w = c->width;
      for (int k = 0; k < w; k++) dst[k] = s[w - 1 - k]; /* low w bytes, big-endian */
      return;
    }
    case PQW_CV_FIXED: memcpy(dst, v + (size_t)c->width * (size_t)i, (size_t)c->width); return;
    default: return;
  }
}

/* Bytes of the BYTE_ARRAY value at Arrow slot i. */
static inline const uint8_t *bytes_value(const pqw_col *c, const struct ArrowArray *a, int64_t i,
                                         uint32_t *len) {
  switch (c->leaf->conv) {
    case PQW_CV_BIN32: {
      const int32_t *o = a->buffers[1];
      *len = (uint32_t)(o[i + 1] - o[i]);
      return (const uint8_t *)a->buffers[2] + o[i];
    }
    case PQW_CV_BIN64: {
      const int64_t *o = a->buffers[1];
      *len = (uint32_t)(o[i + 1] - o[i]);
      return (const uint8_t *)a->buffers[2] + o[i];
    }
    default: { /* view: 16-byte views, inline up to 12 bytes, else buffer index + offset */
      const uint8_t *v = (const uint8_t *)a->buffers[1] + 16 * i;
      int32_t n;
      memcpy(&n, v, 4);
      *len = (uint32_t)n;
      if (n <= 12) return v + 4;
      int32_t buf, off;
      memcpy(&buf, v + 8, 4);
      memcpy(&off, v + 12, 4);
      return (const uint8_t *)a->buffers[2 + buf] + off;
    }
  }
}

/* A decimal128 whose value does not fit the column's physical width (so exceeds its
** precision) would be cut silently: refuse it. */
static dk_status check_decimals(const pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                                int64_t first, int64_t n, dk_error *err) {
  const uint8_t *v = a->buffers[1];
  int keep = c->width; /* low bytes kept; the rest must be their sign extension */
  for (int64_t k = 0; k < n; k++) {
    const uint8_t *d = v + 16 * (idx ? idx[k] : first + k);
    uint8_t ext = (d[keep - 1] & 0x80) ? 0xff : 0;
    for (int b = keep; b < 16; b++)
      if (d[b] != ext)
        return dk__error_set(err, DK_INVALID,
                             "column '%s': a decimal value exceeds precision %d",
                             c->leaf->name, (int)c->leaf->precision);
  }
  return DK_OK;
}

/* Page statistics from one value (physical bytes). */
static inline dk_status page_stat(pqw_col *c, int kind, const uint8_t *p, size_t n,
                                  dk_error *err) {
  if (kind == SK_F32 || kind == SK_F64) {
    double d;
    if (kind == SK_F32) {
      float f;
      memcpy(&f, p, 4);
      d = f;
    } else {
      memcpy(&d, p, 8);
    }
    if (isnan(d)) {
      c->pg_nans++;
      return DK_OK;
    }
  }
  if (!c->pg_min.set) {
    DK_RETURN_NOT_OK(bound_set(&c->pg_min, p, n, err));
    return bound_set(&c->pg_max, p, n, err);
  }
  if (val_cmp(kind, p, n, (const uint8_t *)c->pg_min.v.data, c->pg_min.v.len) < 0)
    return bound_set(&c->pg_min, p, n, err);
  if (val_cmp(kind, p, n, (const uint8_t *)c->pg_max.v.data, c->pg_max.v.len) > 0)
    return bound_set(&c->pg_max, p, n, err);
  return DK_OK;
}

/* Fast page statistics for 4/8-byte integer kinds over a run of values. */
#define MINMAX_RUN(T, vals, n)                                                                \
  do {                                                                                        \
    T mn, mx;                                                                                 \
    if (c->pg_min.set) memcpy(&mn, c->pg_min.v.data, sizeof(T)), memcpy(&mx, c->pg_max.v.data, sizeof(T)); \
    else mn = mx = (vals)[0];                                                                 \
    for (int64_t k_ = 0; k_ < (n); k_++) {                                                    \
      T x_ = (vals)[k_];                                                                      \
      mn = x_ < mn ? x_ : mn;                                                                 \
      mx = x_ > mx ? x_ : mx;                                                                 \
    }                                                                                         \
    DK_RETURN_NOT_OK(bound_set(&c->pg_min, &mn, sizeof(T), err));                             \
    DK_RETURN_NOT_OK(bound_set(&c->pg_max, &mx, sizeof(T), err));                             \
  } while (0)

/* Appends n values (Arrow slots idx[k], or first + k) to the page: as dictionary indices or
** PLAIN, with statistics. */
static dk_status put_values(pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                            int64_t first, int64_t n, dk_error *err) {
  if (n == 0) return DK_OK;
  int kind = stat_kind(c->leaf);
  int stats = c->o->statistics;
  if (c->width) {
    size_t w = (size_t)c->width;
    /* physical values of the run, contiguous (PLAIN layout) */
    uint8_t *dst;
    size_t at = c->pg_plain.len;
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_plain, w * (size_t)n, err));
    dst = (uint8_t *)c->pg_plain.data + at;
    int conv = c->leaf->conv;
    if (!idx && (conv == PQW_CV_COPY4 || conv == PQW_CV_COPY8)) {
      memcpy(dst, (const uint8_t *)a->buffers[1] + w * (size_t)first, w * (size_t)n);
    } else if (conv == PQW_CV_COPY8 || conv == PQW_CV_COPY4) {
      const uint8_t *src = a->buffers[1];
      if (w == 8)
        for (int64_t k = 0; k < n; k++) memcpy(dst + 8 * k, src + 8 * idx[k], 8);
      else
        for (int64_t k = 0; k < n; k++) memcpy(dst + 4 * k, src + 4 * idx[k], 4);
    } else {
      if (conv == PQW_CV_DEC32 || conv == PQW_CV_DEC64 || conv == PQW_CV_DECFLBA)
        DK_RETURN_NOT_OK(check_decimals(c, a, idx, first, n, err));
      for (int64_t k = 0; k < n; k++) fixed_value(c, a, idx ? idx[k] : first + k, dst + w * (size_t)k);
    }
    if (stats) {
      if (kind == SK_I32) {
        MINMAX_RUN(int32_t, (const int32_t *)(const void *)dst, n);
      } else if (kind == SK_I64) {
        MINMAX_RUN(int64_t, (const int64_t *)(const void *)dst, n);
      } else {
        for (int64_t k = 0; k < n; k++) DK_RETURN_NOT_OK(page_stat(c, kind, dst + w * (size_t)k, w, err));
      }
    }
    if (c->dict_on) {
      /* indices replace the PLAIN bytes staged above */
      size_t ia = c->pg_idx.len;
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_idx, 4 * (size_t)n, err));
      uint32_t *ix = (uint32_t *)(void *)(c->pg_idx.data + ia);
      for (int64_t k = 0; k < n; k++) DK_RETURN_NOT_OK(dict_fixed(c, dst + w * (size_t)k, &ix[k], err));
      c->pg_idx.len += 4 * (size_t)n;
    } else {
      c->pg_plain.len += w * (size_t)n;
    }
  } else {
    if (c->dict_on) {
      size_t ia = c->pg_idx.len;
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_idx, 4 * (size_t)n, err));
      uint32_t *ix = (uint32_t *)(void *)(c->pg_idx.data + ia);
      for (int64_t k = 0; k < n; k++) {
        uint32_t len;
        const uint8_t *p = bytes_value(c, a, idx ? idx[k] : first + k, &len);
        DK_RETURN_NOT_OK(dict_bytes(c, p, len, &ix[k], err));
        uint32_t *stamp = (uint32_t *)(void *)c->dict.stamp.data;
        if (stats && stamp[ix[k]] != c->pg_no) { /* first use in this page */
          stamp[ix[k]] = c->pg_no;
          DK_RETURN_NOT_OK(dk__buf_append(&c->pg_uniq, &ix[k], 4, err));
        }
      }
      c->pg_idx.len += 4 * (size_t)n;
    } else {
      for (int64_t k = 0; k < n; k++) {
        uint32_t len;
        const uint8_t *p = bytes_value(c, a, idx ? idx[k] : first + k, &len);
        DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_plain, 4 + (size_t)len, err));
        memcpy(c->pg_plain.data + c->pg_plain.len, &len, 4);
        if (len) memcpy(c->pg_plain.data + c->pg_plain.len + 4, p, len);
        c->pg_plain.len += 4 + (size_t)len;
        if (stats) DK_RETURN_NOT_OK(page_stat(c, kind, p, len, err));
      }
    }
  }
  c->pg_values += n;
  return DK_OK;
}

/* ---- pages ------------------------------------------------------------------------------- */

/* Truncated page-index bounds (PageIndex.md allows shorter bounds that still bound the page):
** the min is cut to a prefix; the max is cut and its last byte (code point for strings)
** incremented. Values that cannot be shortened are kept whole. */
static size_t utf8_cut(const uint8_t *p, size_t n) {
  while (n > 0 && (p[n] & 0xc0) == 0x80) n--;
  return n;
}

static dk_status put_index_min(pqw_col *c, const pqw_bound *b, size_t *off, size_t *len,
                               dk_error *err) {
  size_t n = b->v.len, lim = c->o->index_trunc;
  if (lim && n > lim && c->ptype == PQ_BYTE_ARRAY) n = c->leaf->is_string ? utf8_cut((const uint8_t *)b->v.data, lim) : lim;
  *off = c->index_vals.len;
  *len = n;
  return dk__buf_append(&c->index_vals, b->v.data, n, err);
}

static size_t utf8_put(uint8_t *p, uint32_t cp) {
  if (cp < 0x80) return p[0] = (uint8_t)cp, 1;
  if (cp < 0x800) return p[0] = (uint8_t)(0xc0 | (cp >> 6)), p[1] = (uint8_t)(0x80 | (cp & 0x3f)), 2;
  if (cp < 0x10000) {
    p[0] = (uint8_t)(0xe0 | (cp >> 12));
    p[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    p[2] = (uint8_t)(0x80 | (cp & 0x3f));
    return 3;
  }
  p[0] = (uint8_t)(0xf0 | (cp >> 18));
  p[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
  p[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
  p[3] = (uint8_t)(0x80 | (cp & 0x3f));
  return 4;
}

static dk_status put_index_max(pqw_col *c, const pqw_bound *b, size_t *off, size_t *len,
                               dk_error *err) {
  const uint8_t *p = (const uint8_t *)b->v.data;
  size_t n = b->v.len, lim = c->o->index_trunc;
  *off = c->index_vals.len;
  if (lim && n > lim && c->ptype == PQ_BYTE_ARRAY) {
    uint8_t tmp[8];
    if (!c->leaf->is_string) {
      for (size_t k = lim; k > 0; k--) {
        if (p[k - 1] == 0xff) continue;
        DK_RETURN_NOT_OK(dk__buf_append(&c->index_vals, p, k - 1, err));
        tmp[0] = (uint8_t)(p[k - 1] + 1);
        *len = k;
        return dk__buf_append(&c->index_vals, tmp, 1, err);
      }
    } else {
      size_t k = utf8_cut(p, lim);
      while (k > 0) {
        size_t s = k - 1;
        while (s > 0 && (p[s] & 0xc0) == 0x80) s--;
        /* decode the code point at [s, k) */
        uint32_t cp = p[s];
        size_t cl = k - s;
        if (cl == 2) cp = ((p[s] & 0x1fu) << 6) | (p[s + 1] & 0x3fu);
        else if (cl == 3) cp = ((p[s] & 0x0fu) << 12) | ((p[s + 1] & 0x3fu) << 6) | (p[s + 2] & 0x3fu);
        else if (cl == 4) cp = ((p[s] & 0x07u) << 18) | ((p[s + 1] & 0x3fu) << 12) | ((p[s + 2] & 0x3fu) << 6) | (p[s + 3] & 0x3fu);
        if (cp < 0x10ffff) {
          cp++;
          if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xe000;
          DK_RETURN_NOT_OK(dk__buf_append(&c->index_vals, p, s, err));
          size_t e = utf8_put(tmp, cp);
          *len = s + e;
          return dk__buf_append(&c->index_vals, tmp, e, err);
        }
        k = s;
      }
    }
  }
  *len = n;
  return dk__buf_append(&c->index_vals, p, n, err);
}

/* Page min/max of a dictionary-encoded BYTE_ARRAY page from the entries it used. */
static dk_status fold_uniq(pqw_col *c, dk_error *err) {
  const uint32_t *u = (const uint32_t *)(const void *)c->pg_uniq.data;
  size_t n = c->pg_uniq.len / 4;
  const uint32_t *starts = (const uint32_t *)(const void *)c->dict.starts.data;
  for (size_t i = 0; i < n; i++) {
    uint32_t st = starts[u[i]], len;
    memcpy(&len, c->dict.vals.data + st - 4, 4);
    DK_RETURN_NOT_OK(page_stat(c, SK_BYTES, (const uint8_t *)c->dict.vals.data + st, len, err));
  }
  dk__buf_clear(&c->pg_uniq);
  c->pg_no++;
  return DK_OK;
}

static dk_status close_page(pqw_col *c, dk_error *err) {
  if (c->pg_uniq.len) DK_RETURN_NOT_OK(fold_uniq(c, err));
  if (c->pg_levels == 0) return DK_OK;
  const pqw_opts *o = c->o;
  /* under a dictionary even a page without values is RLE_DICTIONARY: readers (Spark's
  ** vectorized one) expect no PLAIN page before the fallback */
  int dict_page = c->dict_on;
  int kind = stat_kind(c->leaf);
  /* levels */
  dk__buf_clear(&c->lv);
  size_t rep_bytes = 0, def_bytes = 0;
  for (int pass = 0; pass < 2; pass++) {
    int16_t maxl = pass == 0 ? c->max_rep : c->max_def;
    if (maxl == 0) continue;
    dk_buf *lv = pass == 0 ? &c->rep : &c->def;
    size_t at = c->lv.len;
    if (!o->page_v2) DK_RETURN_NOT_OK(dk__buf_append(&c->lv, "\0\0\0\0", 4, err));
    DK_RETURN_NOT_OK(dk_pqw__rle_encode_u16(&c->lv, (const uint16_t *)(const void *)lv->data,
                                            c->pg_levels, dk_pqw__bit_width((uint64_t)maxl), err));
    size_t n = c->lv.len - at - (o->page_v2 ? 0 : 4);
    if (!o->page_v2) {
      uint32_t n32 = (uint32_t)n;
      memcpy(c->lv.data + at, &n32, 4);
    }
    if (pass == 0) rep_bytes = n; else def_bytes = n;
  }
  /* values */
  dk_buf *vals = &c->pg_plain;
  if (dict_page) {
    dk__buf_clear(&c->body);
    int bw = DK_MAX(1, dk_pqw__bit_width(c->dict.n ? c->dict.n - 1 : 0));
    uint8_t b = (uint8_t)bw;
    DK_RETURN_NOT_OK(dk__buf_append(&c->body, &b, 1, err));
    DK_RETURN_NOT_OK(dk_pqw__rle_encode_u32(&c->body, (const uint32_t *)(const void *)c->pg_idx.data,
                                            c->pg_values, bw, err));
    vals = &c->body;
  } else if (c->ptype == PQ_BOOLEAN) {
    /* bytes 0/1 -> bits, LSB first */
    size_t nb = (size_t)(c->pg_values + 7) / 8;
    dk__buf_clear(&c->body);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->body, nb, err));
    memset(c->body.data, 0, nb);
    const uint8_t *s = (const uint8_t *)c->pg_plain.data;
    for (int64_t k = 0; k < c->pg_values; k++) c->body.data[k >> 3] |= (char)(s[k] << (k & 7));
    c->body.len = nb;
    vals = &c->body;
  }
  /* compress: v1 levels + values together, v2 values only */
  dk_buf *cb = &c->cbuf;
  dk__buf_clear(cb);
  const uint8_t *src;
  size_t src_len;
  if (!o->page_v2 && c->lv.len) {
    /* one contiguous input: levels then values */
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->lv, vals->len, err));
    if (vals->len) memcpy(c->lv.data + c->lv.len, vals->data, vals->len);
    src = (const uint8_t *)c->lv.data;
    src_len = c->lv.len + vals->len;
  } else {
    src = (const uint8_t *)vals->data;
    src_len = vals->len;
  }
  size_t lv_len = o->page_v2 ? c->lv.len : 0;
  size_t uncompressed = lv_len + src_len;
  if (uncompressed > INT32_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "column '%s': a page larger than 2 GiB", c->leaf->name);
  DK_RETURN_NOT_OK(dk__buf_reserve(cb, lv_len + dk_pq__compress_bound(&c->comp, src_len), err));
  if (lv_len) memcpy(cb->data, c->lv.data, lv_len);
  size_t clen = 0;
  DK_RETURN_NOT_OK(dk_pq__compress(&c->comp, src, src_len, (uint8_t *)cb->data + lv_len, &clen, err));
  cb->len = lv_len + clen;
  if (cb->len > INT32_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "column '%s': a page larger than 2 GiB", c->leaf->name);
  /* header */
  pqw_page_header h;
  memset(&h, 0, sizeof h);
  h.type = o->page_v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA;
  h.uncompressed = (int32_t)uncompressed;
  h.compressed = (int32_t)cb->len;
  h.num_values = (int32_t)c->pg_levels;
  h.num_nulls = (int32_t)c->pg_nulls;
  h.num_rows = (int32_t)c->pg_rows;
  h.encoding = dict_page ? PQ_ENC_RLE_DICT : PQ_ENC_PLAIN;
  h.def_bytes = (int32_t)def_bytes;
  h.rep_bytes = (int32_t)rep_bytes;
  h.is_compressed = o->codec != DK_PQ_CODEC_UNCOMPRESSED;
  dk__buf_clear(&c->hdr);
  DK_RETURN_NOT_OK(dk_pqw__page_header(&c->hdr, &h, err));
  /* page entry */
  pqw_page_entry e;
  memset(&e, 0, sizeof e);
  e.offset = (int64_t)c->pages.len;
  e.size = (int32_t)(c->hdr.len + cb->len);
  e.first_row = c->ch_rows;
  e.null_count = c->pg_nulls;
  e.null_page = c->pg_values == 0;
  e.nan_only = c->pg_values > 0 && !c->pg_min.set;
  if (e.nan_only) c->ch_index_ok = 0;
  if (o->page_index && o->statistics && c->pg_min.set) {
    DK_RETURN_NOT_OK(put_index_min(c, &c->pg_min, &e.min_off, &e.min_len, err));
    DK_RETURN_NOT_OK(put_index_max(c, &c->pg_max, &e.max_off, &e.max_len, err));
  }
  DK_RETURN_NOT_OK(dk__buf_append(&c->page_entries, &e, sizeof e, err));
  DK_RETURN_NOT_OK(dk__buf_append(&c->pages, c->hdr.data, c->hdr.len, err));
  DK_RETURN_NOT_OK(dk__buf_append(&c->pages, cb->data, cb->len, err));
  /* chunk accounting */
  c->ch_uncompressed += (int64_t)(c->hdr.len + uncompressed);
  c->ch_rows += c->pg_rows;
  c->ch_values += c->pg_levels;
  c->ch_nulls += c->pg_nulls;
  c->ch_nans += c->pg_nans;
  if (dict_page) c->ch_pages_dict++; else c->ch_pages_plain++;
  DK_RETURN_NOT_OK(bound_merge(kind, &c->ch_min, &c->ch_max, &c->pg_min, &c->pg_max, err));
  /* reset the page */
  dk__buf_clear(&c->def);
  dk__buf_clear(&c->rep);
  dk__buf_clear(&c->pg_plain);
  dk__buf_clear(&c->pg_idx);
  c->pg_min.set = c->pg_max.set = 0;
  c->pg_levels = c->pg_rows = c->pg_values = c->pg_nulls = c->pg_nans = 0;
  return DK_OK;
}

static int64_t page_estimate(const pqw_col *c) {
  int64_t v = c->dict_on ? (c->pg_values * dk_pqw__bit_width(c->dict.n) + 7) / 8
                         : (int64_t)c->pg_plain.len / (c->ptype == PQ_BOOLEAN ? 8 : 1);
  int lb = dk_pqw__bit_width((uint64_t)c->max_def) + dk_pqw__bit_width((uint64_t)c->max_rep);
  return v + (c->pg_levels * lb) / 8;
}

/* ---- write ------------------------------------------------------------------------------- */

dk_status dk_pqw__col_write(pqw_col *c, const pqw_input *in, dk_error *err) {
  const pqw_opts *o = c->o;
  int64_t pos = 0, vpos = 0;
  while (pos < in->n_levels) {
    int64_t rows_left = o->page_rows - c->pg_rows;
    if (rows_left < 1) rows_left = 1;
    int64_t end, rows;
    if (!in->rep) {
      end = pos + DK_MIN(DK_MIN(in->n_levels - pos, (int64_t)LEVEL_CHUNK), rows_left);
      rows = end - pos;
    } else {
      /* whole rows only: the first row, then more while they fit */
      end = pos + 1;
      rows = 1;
      for (;;) {
        while (end < in->n_levels && in->rep[end] != 0) end++;
        if (end >= in->n_levels || rows >= rows_left || end - pos >= LEVEL_CHUNK) break;
        rows++;
        end++;
      }
    }
    int64_t n = end - pos, nv = 0;
    if (in->def) {
      for (int64_t k = pos; k < end; k++) nv += in->def[k] == c->max_def;
      DK_RETURN_NOT_OK(dk__buf_append(&c->def, in->def + pos, 2 * (size_t)n, err));
    } else {
      nv = n;
    }
    if (in->rep) DK_RETURN_NOT_OK(dk__buf_append(&c->rep, in->rep + pos, 2 * (size_t)n, err));
    if (vpos + nv > in->n_values)
      return dk__error_set(err, DK_INTERNAL, "column '%s': levels and values disagree", c->leaf->name);
    DK_RETURN_NOT_OK(put_values(c, in->arr, in->idx ? in->idx + vpos : NULL, in->first + vpos, nv, err));
    c->pg_levels += n;
    c->pg_rows += rows;
    c->pg_nulls += n - nv;
    vpos += nv;
    pos = end;
    if (c->dict_on && (int64_t)c->dict.vals.len > o->dict_bytes) {
      /* fall back to PLAIN: the open page is the last dictionary-encoded one */
      DK_RETURN_NOT_OK(close_page(c, err));
      c->dict_on = 0;
    } else if (c->pg_rows >= o->page_rows || page_estimate(c) >= o->page_bytes) {
      DK_RETURN_NOT_OK(close_page(c, err));
    }
  }
  return DK_OK;
}

int64_t dk_pqw__col_buffered(const pqw_col *c) {
  return (int64_t)(c->pages.len + c->dict.vals.len) + page_estimate(c);
}

/* ---- finish / emit ----------------------------------------------------------------------- */

/* Zero bounds of floating columns are written as -0.0 (min) and +0.0 (max). */
static void fix_zero(int kind, uint8_t *p, int is_max) {
  if (kind == SK_F32) {
    float f;
    memcpy(&f, p, 4);
    if (f == 0) f = is_max ? 0.0f : -0.0f, memcpy(p, &f, 4);
  } else if (kind == SK_F64) {
    double d;
    memcpy(&d, p, 8);
    if (d == 0) d = is_max ? 0.0 : -0.0, memcpy(p, &d, 8);
  }
}

static dk_status column_index(pqw_col *c, dk_buf *out, dk_error *err) {
  int n = (int)(c->page_entries.len / sizeof(pqw_page_entry));
  const pqw_page_entry *pe = (const pqw_page_entry *)(const void *)c->page_entries.data;
  int kind = stat_kind(c->leaf);
  /* boundary order over the non-null pages */
  int asc = 1, desc = 1;
  const pqw_page_entry *prev = NULL;
  const uint8_t *iv = (const uint8_t *)c->index_vals.data;
  for (int i = 0; i < n; i++) {
    if (pe[i].null_page) continue;
    if (prev) {
      int a = val_cmp(kind, iv + prev->min_off, prev->min_len, iv + pe[i].min_off, pe[i].min_len);
      int b = val_cmp(kind, iv + prev->max_off, prev->max_len, iv + pe[i].max_off, pe[i].max_len);
      if (a > 0 || b > 0) asc = 0;
      if (a < 0 || b < 0) desc = 0;
    }
    prev = &pe[i];
  }
  int order = asc ? 1 : desc ? 2 : 0; /* BoundaryOrder: UNORDERED 0, ASCENDING 1, DESCENDING 2 */
  dk_tpw w;
  dk_pqw__tp_init(&w, out, err);
  dk_pqw__tp_struct_begin(&w, 0);
  dk_pqw__tp_list(&w, 1, DK_TP_TRUE, (size_t)n);
  for (int i = 0; i < n; i++) dk_pqw__tp_elem_bool(&w, pe[i].null_page);
  uint8_t zbuf[8];
  for (int pass = 0; pass < 2; pass++) {
    dk_pqw__tp_list(&w, (int16_t)(2 + pass), DK_TP_BINARY, (size_t)n);
    for (int i = 0; i < n; i++) {
      if (pe[i].null_page) {
        dk_pqw__tp_elem_binary(&w, "", 0);
        continue;
      }
      size_t off = pass ? pe[i].max_off : pe[i].min_off, len = pass ? pe[i].max_len : pe[i].min_len;
      const uint8_t *p = iv + off;
      if ((kind == SK_F32 || kind == SK_F64) && len <= 8) {
        memcpy(zbuf, p, len);
        fix_zero(kind, zbuf, pass);
        p = zbuf;
      }
      dk_pqw__tp_elem_binary(&w, p, len);
    }
  }
  dk_pqw__tp_i32(&w, 4, order);
  dk_pqw__tp_list(&w, 5, DK_TP_I64, (size_t)n);
  for (int i = 0; i < n; i++) dk_pqw__tp_elem_i64(&w, pe[i].null_count);
  dk_pqw__tp_struct_end(&w);
  return w.st;
}

dk_status dk_pqw__col_finish(pqw_col *c, pqw_chunk_meta *m, dk_error *err) {
  DK_RETURN_NOT_OK(close_page(c, err));
  int kind = stat_kind(c->leaf);
  memset(m, 0, sizeof *m);
  dk__buf_init(&m->min, c->alloc);
  dk__buf_init(&m->max, c->alloc);
  dk__buf_init(&m->column_index, c->alloc);
  dk__buf_init(&m->offset_index, c->alloc);
  m->num_values = c->ch_values;
  m->n_pages_dict = c->ch_pages_dict;
  m->n_pages_plain = c->ch_pages_plain;
  m->null_count = c->ch_nulls;
  m->nan_count = c->ch_nans;
  m->float_nan_count = kind == SK_F32 || kind == SK_F64;
  m->has_stats = c->o->statistics;
  if (c->o->statistics && c->ch_min.set &&
      DK_MAX(c->ch_min.v.len, c->ch_max.v.len) <= c->o->max_stat_bytes) {
    m->has_minmax = 1;
    DK_RETURN_NOT_OK(dk__buf_append(&m->min, c->ch_min.v.data, c->ch_min.v.len, err));
    DK_RETURN_NOT_OK(dk__buf_append(&m->max, c->ch_max.v.data, c->ch_max.v.len, err));
    fix_zero(kind, (uint8_t *)m->min.data, 0);
    fix_zero(kind, (uint8_t *)m->max.data, 1);
  }
  if (c->o->page_index && c->o->statistics && c->ch_index_ok)
    DK_RETURN_NOT_OK(column_index(c, &m->column_index, err));
  /* file-level bounds and counts */
  DK_RETURN_NOT_OK(bound_merge(kind, &c->f_min, &c->f_max, &c->ch_min, &c->ch_max, err));
  c->f_nulls += c->ch_nulls;
  c->f_nans += c->ch_nans;
  c->f_values += c->ch_values - c->ch_nulls;
  /* the dictionary page, compressed, goes into body (emitted before the data pages) */
  dk__buf_clear(&c->body);
  if (c->ch_pages_dict) {
    dk__buf_clear(&c->cbuf);
    size_t n = c->dict.vals.len;
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->cbuf, dk_pq__compress_bound(&c->comp, n), err));
    size_t clen = 0;
    DK_RETURN_NOT_OK(dk_pq__compress(&c->comp, (const uint8_t *)c->dict.vals.data, n,
                                     (uint8_t *)c->cbuf.data, &clen, err));
    if (n > INT32_MAX || clen > INT32_MAX)
      return dk__error_set(err, DK_UNSUPPORTED, "column '%s': dictionary page larger than 2 GiB", c->leaf->name);
    pqw_page_header h;
    memset(&h, 0, sizeof h);
    h.type = PQ_PAGE_DICT;
    h.uncompressed = (int32_t)n;
    h.compressed = (int32_t)clen;
    h.num_values = (int32_t)c->dict.n;
    h.encoding = PQ_ENC_PLAIN;
    DK_RETURN_NOT_OK(dk_pqw__page_header(&c->body, &h, err));
    c->ch_uncompressed += (int64_t)(c->body.len + n);
    DK_RETURN_NOT_OK(dk__buf_append(&c->body, c->cbuf.data, clen, err));
    m->n_dict_pages_plain = 1;
  }
  m->total_uncompressed = c->ch_uncompressed;
  m->total_compressed = (int64_t)(c->body.len + c->pages.len);
  return DK_OK;
}

dk_status dk_pqw__col_emit(pqw_col *c, pqw_chunk_meta *m, dk__sink *sink, dk_error *err) {
  m->dict_offset = -1;
  if (c->body.len) {
    m->dict_offset = sink->pos;
    DK_RETURN_NOT_OK(dk_io__sink_write(sink, c->body.data, c->body.len, err));
  }
  m->data_offset = sink->pos;
  DK_RETURN_NOT_OK(dk_io__sink_write(sink, c->pages.data, c->pages.len, err));
  if (c->o->page_index) {
    int n = (int)(c->page_entries.len / sizeof(pqw_page_entry));
    const pqw_page_entry *pe = (const pqw_page_entry *)(const void *)c->page_entries.data;
    dk_tpw w;
    dk_pqw__tp_init(&w, &m->offset_index, err);
    dk_pqw__tp_struct_begin(&w, 0);
    dk_pqw__tp_list(&w, 1, DK_TP_STRUCT, (size_t)n);
    for (int i = 0; i < n; i++) {
      dk_pqw__tp_struct_begin(&w, 0);
      dk_pqw__tp_i64(&w, 1, m->data_offset + pe[i].offset);
      dk_pqw__tp_i32(&w, 2, pe[i].size);
      dk_pqw__tp_i64(&w, 3, pe[i].first_row);
      dk_pqw__tp_struct_end(&w);
    }
    dk_pqw__tp_struct_end(&w);
    DK_RETURN_NOT_OK(w.st);
  }
  /* reset for the next row group */
  dk__buf_clear(&c->pages);
  dk__buf_clear(&c->body);
  dk__buf_clear(&c->index_vals);
  dk__buf_clear(&c->page_entries);
  dict_reset(&c->dict);
  c->dict_on = c->o->dictionary && c->ptype != PQ_BOOLEAN;
  c->ch_rows = c->ch_values = c->ch_uncompressed = c->ch_nulls = c->ch_nans = 0;
  c->ch_pages_dict = c->ch_pages_plain = 0;
  c->ch_min.set = c->ch_max.set = 0;
  c->ch_index_ok = 1;
  return DK_OK;
}
