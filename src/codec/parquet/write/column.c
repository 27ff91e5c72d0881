/*
** write/column.c — the column chunk writer: levels and values of one leaf become data pages
** (v1 or v2) with a dictionary page first, statistics per page and chunk, and the page index
** (apache/parquet-format: Encodings.md PLAIN, RLE_DICTIONARY and the RLE hybrid for levels;
** README "Data Pages"; PageIndex.md; parquet.thrift Statistics and ColumnOrder rules).
**
** Values are dictionary-encoded (dict.c) while that pays: the first page of a chunk that
** reaches its size target is tested as parquet-mr does (dictionary + indices must be smaller
** than the PLAIN values, or the page is re-encoded PLAIN and the chunk has no dictionary:
** high-cardinality columns stop hashing after one page), and once the dictionary's
** PLAIN size passes the limit the page open at that moment is closed as a dictionary page and
** the rest of the chunk is PLAIN (as parquet-cpp and parquet-mr fall back). Booleans are always
** PLAIN. Pages close at row boundaries (repetition level 0) once they reach the byte or row
** target, so the OffsetIndex can point readers at any page.
**
** Hot paths work on runs of values: fixed-width values come straight from the Arrow buffer
** when no conversion or gather is needed (else converted once into a staging buffer, or
** directly into the PLAIN page); min/max are typed loops; string min/max compare an 8-byte
** big-endian prefix before any memcmp; definition levels of a page without nulls are not
** materialized (one RLE run at close); a v1 page's levels and values are compressed as one
** body without being copied together first (dk_pq__compress_parts).
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

#define COL_BUFS(c)                                                                           \
  &(c)->def, &(c)->rep, &(c)->pg_plain, &(c)->pg_idx, &(c)->pg_uniq, &(c)->stage, &(c)->cbuf,  \
      &(c)->hdr, &(c)->lv, &(c)->body, &(c)->index_vals, &(c)->ch.dict, &(c)->ch.pages,        \
      &(c)->ch.entries, &(c)->sh_def, &(c)->sh_rep, &(c)->sh_idx

dk_status dk_pqw__col_init(pqw_col *c, const pqw_field *leaf, const pqw_opts *o,
                           const dk_allocator *alloc, dk_error *err) {
  memset(c, 0, sizeof *c);
  c->leaf = leaf;
  c->o = o;
  c->alloc = alloc;
  c->ptype = leaf->ptype;
  c->kind = stat_kind(leaf);
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
  dk_buf *bufs[] = {COL_BUFS(c)};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_init(bufs[i], alloc);
  pqw_bound *bs[] = {&c->pg_min, &c->pg_max, &c->ch_min, &c->ch_max, &c->f_min, &c->f_max};
  for (size_t i = 0; i < DK_ARRAY_LEN(bs); i++) bound_init(bs[i], alloc);
  dk_pqw__dict_init(&c->dict, c->ptype, c->width, alloc);
  c->dict_on = o->dictionary && c->ptype != PQ_BOOLEAN;
  c->ch_index_ok = 1;
  c->pg_no = 1;
  c->pg_def_full = 1;
  return dk_pq__compressor_init(&c->comp, o->codec, o->level, err);
}

void dk_pqw__col_dispose(pqw_col *c) {
  dk_buf *bufs[] = {COL_BUFS(c), &c->pg_min.v, &c->pg_max.v, &c->ch_min.v, &c->ch_max.v,
                    &c->f_min.v, &c->f_max.v};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_dispose(bufs[i]);
  dk_pqw__dict_dispose(&c->dict);
  dk__free(c->alloc, c->path);
  dk_pq__compressor_dispose(&c->comp);
  memset(c, 0, sizeof *c);
}

/* ---- values: conversion ------------------------------------------------------------------ */

static inline uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static dk_status decimal_overflow(const pqw_col *c, dk_error *err) {
  return dk__error_set(err, DK_INVALID, "column '%s': a decimal value exceeds precision %d",
                       c->leaf->name, (int)c->leaf->precision);
}

/* The physical values of Arrow slots idx[k] (or first + k) into dst, c->width bytes each. A
** decimal128 whose value does not fit the column's physical width (so exceeds its precision)
** would be cut silently: it is refused. */
static dk_status convert(const pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                         int64_t first, int64_t n, uint8_t *dst, dk_error *err) {
  const uint8_t *v = a->buffers[1];
#define SLOT(k) (idx ? idx[k] : first + (k))
  switch (c->leaf->conv) {
    case PQW_CV_COPY4:
      for (int64_t k = 0; k < n; k++) memcpy(dst + 4 * k, v + 4 * SLOT(k), 4);
      return DK_OK;
    case PQW_CV_COPY8:
      for (int64_t k = 0; k < n; k++) memcpy(dst + 8 * k, v + 8 * SLOT(k), 8);
      return DK_OK;
    case PQW_CV_I8:
      for (int64_t k = 0; k < n; k++) {
        int32_t x = ((const int8_t *)v)[SLOT(k)];
        memcpy(dst + 4 * k, &x, 4);
      }
      return DK_OK;
    case PQW_CV_I16:
      for (int64_t k = 0; k < n; k++) {
        int16_t s;
        memcpy(&s, v + 2 * SLOT(k), 2);
        int32_t x = s;
        memcpy(dst + 4 * k, &x, 4);
      }
      return DK_OK;
    case PQW_CV_TS_MUL: {
      uint64_t mul = (uint64_t)c->leaf->ts_mul;
      for (int64_t k = 0; k < n; k++) {
        uint64_t x = ld64(v + 8 * SLOT(k)) * mul;
        memcpy(dst + 8 * k, &x, 8);
      }
      return DK_OK;
    }
    case PQW_CV_DEC32: {
      uint64_t bad = 0;
      for (int64_t k = 0; k < n; k++) {
        const uint8_t *s = v + 16 * SLOT(k);
        uint64_t lo = ld64(s), hi = ld64(s + 8);
        int32_t x = (int32_t)(uint32_t)lo;
        bad |= (hi ^ (uint64_t)((int64_t)lo >> 63)) | (lo ^ (uint64_t)(int64_t)x);
        memcpy(dst + 4 * k, &x, 4); /* little-endian low bytes */
      }
      return bad ? decimal_overflow(c, err) : DK_OK;
    }
    case PQW_CV_DEC64: {
      uint64_t bad = 0;
      for (int64_t k = 0; k < n; k++) {
        const uint8_t *s = v + 16 * SLOT(k);
        uint64_t lo = ld64(s), hi = ld64(s + 8);
        bad |= hi ^ (uint64_t)((int64_t)lo >> 63);
        memcpy(dst + 8 * k, &lo, 8);
      }
      return bad ? decimal_overflow(c, err) : DK_OK;
    }
    case PQW_CV_DECFLBA: {
      int w = c->width; /* low w bytes kept, big-endian; the rest must be their sign extension */
      for (int64_t k = 0; k < n; k++) {
        const uint8_t *s = v + 16 * SLOT(k);
        uint8_t ext = (s[w - 1] & 0x80) ? 0xff : 0;
        for (int b = w; b < 16; b++)
          if (s[b] != ext) return decimal_overflow(c, err);
        for (int b = 0; b < w; b++) dst[(size_t)w * (size_t)k + (size_t)b] = s[w - 1 - b];
      }
      return DK_OK;
    }
    case PQW_CV_FIXED: {
      size_t w = (size_t)c->width;
      for (int64_t k = 0; k < n; k++) memcpy(dst + w * (size_t)k, v + w * (size_t)SLOT(k), w);
      return DK_OK;
    }
    default:
      return dk__error_set(err, DK_INTERNAL, "column '%s': no fixed-width conversion", c->leaf->name);
  }
#undef SLOT
}

/* Views of the BYTE_ARRAY values at Arrow slots idx[k] (or first + k); *total = their bytes,
** *end = the end of the one data buffer they lie in (NULL for string views). */
static void views(const pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                  int64_t first, int64_t n, pqw_sv *out, uint64_t *total, const uint8_t **end) {
  uint64_t t = 0;
  const uint8_t *data = a->buffers[2];
  *end = NULL;
  switch (c->leaf->conv) {
    case PQW_CV_BIN32: {
      const int32_t *o = a->buffers[1];
      *end = data + o[a->offset + a->length];
      if (!idx) {
        o += first;
        for (int64_t k = 0; k < n; k++) {
          uint32_t len = (uint32_t)(o[k + 1] - o[k]);
          out[k] = (pqw_sv){data + o[k], len};
          t += len;
        }
      } else {
        for (int64_t k = 0; k < n; k++) {
          int64_t i = idx[k];
          uint32_t len = (uint32_t)(o[i + 1] - o[i]);
          out[k] = (pqw_sv){data + o[i], len};
          t += len;
        }
      }
      break;
    }
    case PQW_CV_BIN64: {
      const int64_t *o = a->buffers[1];
      *end = data + o[a->offset + a->length];
      for (int64_t k = 0; k < n; k++) {
        int64_t i = idx ? idx[k] : first + k;
        uint32_t len = (uint32_t)(o[i + 1] - o[i]);
        out[k] = (pqw_sv){data + o[i], len};
        t += len;
      }
      break;
    }
    default: /* view: 16-byte views, inline up to 12 bytes, else buffer index + offset */
      for (int64_t k = 0; k < n; k++) {
        const uint8_t *v = (const uint8_t *)a->buffers[1] + 16 * (idx ? idx[k] : first + k);
        int32_t len, buf, off;
        memcpy(&len, v, 4);
        if (len <= 12) {
          out[k] = (pqw_sv){v + 4, (uint32_t)len};
        } else {
          memcpy(&buf, v + 8, 4);
          memcpy(&off, v + 12, 4);
          out[k] = (pqw_sv){(const uint8_t *)a->buffers[2 + buf] + off, (uint32_t)len};
        }
        t += (uint32_t)len;
      }
      break;
  }
  *total = t;
}

/* ---- values: statistics ------------------------------------------------------------------ */

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

/* Min/max of n integers of type T at v, merged into the page bounds (two independent
** chains, so the compares do not wait on each other). */
#define DEFINE_MINMAX_INT(NAME, T)                                                            \
  static inline T NAME##_at(const uint8_t *v, int64_t k) {                                    \
    T x;                                                                                      \
    memcpy(&x, v + sizeof(T) * (size_t)k, sizeof(T));                                         \
    return x;                                                                                 \
  }                                                                                           \
  static dk_status NAME(pqw_col *c, const uint8_t *v, int64_t n, dk_error *err) {             \
    T mn0, mx0;                                                                               \
    if (c->pg_min.set) {                                                                      \
      memcpy(&mn0, c->pg_min.v.data, sizeof(T));                                              \
      memcpy(&mx0, c->pg_max.v.data, sizeof(T));                                              \
    } else {                                                                                  \
      mn0 = mx0 = NAME##_at(v, 0);                                                            \
    }                                                                                         \
    T mn1 = mn0, mx1 = mx0;                                                                   \
    int64_t k = 0;                                                                            \
    for (; k + 2 <= n; k += 2) {                                                              \
      T x0 = NAME##_at(v, k), x1 = NAME##_at(v, k + 1);                                       \
      mn0 = x0 < mn0 ? x0 : mn0;                                                              \
      mx0 = x0 > mx0 ? x0 : mx0;                                                              \
      mn1 = x1 < mn1 ? x1 : mn1;                                                              \
      mx1 = x1 > mx1 ? x1 : mx1;                                                              \
    }                                                                                         \
    if (k < n) {                                                                              \
      T x0 = NAME##_at(v, k);                                                                 \
      mn0 = x0 < mn0 ? x0 : mn0;                                                              \
      mx0 = x0 > mx0 ? x0 : mx0;                                                              \
    }                                                                                         \
    mn0 = mn1 < mn0 ? mn1 : mn0;                                                              \
    mx0 = mx1 > mx0 ? mx1 : mx0;                                                              \
    DK_RETURN_NOT_OK(bound_set(&c->pg_min, &mn0, sizeof(T), err));                            \
    return bound_set(&c->pg_max, &mx0, sizeof(T), err);                                       \
  }

DEFINE_MINMAX_INT(minmax_i32, int32_t)
DEFINE_MINMAX_INT(minmax_i64, int64_t)

/* Floats: NaN counted and left out; of equal values (-0.0, +0.0) the first is kept (the
** chunk's zero bounds are fixed to -0.0 / +0.0 when written). */
#define DEFINE_MINMAX_FLT(NAME, T)                                                            \
  static dk_status NAME(pqw_col *c, const uint8_t *v, int64_t n, dk_error *err) {             \
    T mn = 0, mx = 0;                                                                         \
    int set = c->pg_min.set;                                                                  \
    if (set) {                                                                                \
      memcpy(&mn, c->pg_min.v.data, sizeof(T));                                               \
      memcpy(&mx, c->pg_max.v.data, sizeof(T));                                               \
    }                                                                                         \
    int64_t nans = 0;                                                                         \
    for (int64_t k = 0; k < n; k++) {                                                         \
      T x;                                                                                    \
      memcpy(&x, v + sizeof(T) * (size_t)k, sizeof(T));                                       \
      if (x != x) {                                                                           \
        nans++;                                                                               \
      } else if (!set) {                                                                      \
        mn = mx = x;                                                                          \
        set = 1;                                                                              \
      } else {                                                                                \
        mn = x < mn ? x : mn;                                                                 \
        mx = x > mx ? x : mx;                                                                 \
      }                                                                                       \
    }                                                                                         \
    c->pg_nans += nans;                                                                       \
    if (!set) return DK_OK;                                                                   \
    DK_RETURN_NOT_OK(bound_set(&c->pg_min, &mn, sizeof(T), err));                             \
    return bound_set(&c->pg_max, &mx, sizeof(T), err);                                        \
  }

DEFINE_MINMAX_FLT(minmax_f32, float)
DEFINE_MINMAX_FLT(minmax_f64, double)

static dk_status minmax_fixed(pqw_col *c, const uint8_t *v, int64_t n, dk_error *err) {
  switch (c->kind) {
    case SK_I32: return minmax_i32(c, v, n, err);
    case SK_I64: return minmax_i64(c, v, n, err);
    case SK_F32: return minmax_f32(c, v, n, err);
    case SK_F64: return minmax_f64(c, v, n, err);
    default: {
      size_t w = (size_t)c->width;
      for (int64_t k = 0; k < n; k++) DK_RETURN_NOT_OK(page_stat(c, c->kind, v + w * (size_t)k, w, err));
      return DK_OK;
    }
  }
}

/* The first 8 bytes of a string, zero-padded, as a big-endian number: strings whose keys
** differ compare as their keys do. Reads only p[0..n). */
static inline uint64_t sort_key(const uint8_t *p, size_t n) {
  uint64_t k;
  if (n >= 8) {
    k = ld64(p);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, p, 4);
    memcpy(&b, p + n - 4, 4);
    k = (uint64_t)a | ((uint64_t)b << (8 * (n - 4)));
  } else if (n) {
    k = (uint64_t)p[0] | ((uint64_t)p[n / 2] << (8 * (n / 2))) | ((uint64_t)p[n - 1] << (8 * (n - 1)));
  } else {
    k = 0;
  }
  return __builtin_bswap64(k);
}

/* Min/max of n byte strings (unsigned byte order), merged into the page bounds. */
static dk_status minmax_bytes(pqw_col *c, const pqw_sv *v, int64_t n, dk_error *err) {
  const uint8_t *mnp, *mxp;
  size_t mnn, mxn;
  int64_t k = 0;
  int new_min = !c->pg_min.set, new_max = new_min;
  if (c->pg_min.set) {
    mnp = (const uint8_t *)c->pg_min.v.data, mnn = c->pg_min.v.len;
    mxp = (const uint8_t *)c->pg_max.v.data, mxn = c->pg_max.v.len;
  } else {
    mnp = mxp = v[0].p;
    mnn = mxn = v[0].n;
    k = 1;
  }
  uint64_t kmn = sort_key(mnp, mnn), kmx = sort_key(mxp, mxn);
  for (; k < n; k++) {
    uint64_t key = sort_key(v[k].p, v[k].n);
    if (DK_UNLIKELY(key <= kmn) && (key < kmn || bytes_cmp(v[k].p, v[k].n, mnp, mnn) < 0)) {
      mnp = v[k].p, mnn = v[k].n, kmn = key, new_min = 1;
    } else if (DK_UNLIKELY(key >= kmx) &&
               (key > kmx || bytes_cmp(v[k].p, v[k].n, mxp, mxn) > 0)) {
      mxp = v[k].p, mxn = v[k].n, kmx = key, new_max = 1;
    }
  }
  if (new_min) DK_RETURN_NOT_OK(bound_set(&c->pg_min, mnp, mnn, err));
  if (new_max) DK_RETURN_NOT_OK(bound_set(&c->pg_max, mxp, mxn, err));
  return DK_OK;
}

/* ---- values: pages ----------------------------------------------------------------------- */

static dk_status put_bools(pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                           int64_t first, int64_t n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_plain, (size_t)n, err));
  uint8_t *dst = (uint8_t *)c->pg_plain.data + c->pg_plain.len;
  const uint8_t *bits = a->buffers[1];
  int ones = 0, zeros = 0;
  for (int64_t k = 0; k < n; k++) {
    uint8_t b = (uint8_t)dk__bit_get(bits, idx ? idx[k] : first + k);
    dst[k] = b;
    ones |= b;
    zeros |= !b;
  }
  c->pg_plain.len += (size_t)n;
  c->pg_plain_bytes += n;
  if (!c->o->statistics) return DK_OK;
  if (zeros) DK_RETURN_NOT_OK(page_stat(c, SK_BOOL, (const uint8_t *)"\0", 1, err));
  if (ones) DK_RETURN_NOT_OK(page_stat(c, SK_BOOL, (const uint8_t *)"\1", 1, err));
  return DK_OK;
}

static dk_status put_fixed(pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                           int64_t first, int64_t n, dk_error *err) {
  size_t w = (size_t)c->width, bytes = w * (size_t)n;
  int conv = c->leaf->conv;
  const uint8_t *src;
  int direct = !idx && (conv == PQW_CV_COPY4 || conv == PQW_CV_COPY8);
  if (direct) {
    src = (const uint8_t *)a->buffers[1] + w * (size_t)first;
  } else {
    /* PLAIN: converted in place at the page's end; dictionary: into the staging buffer */
    dk_buf *to = c->dict_on ? &c->stage : &c->pg_plain;
    if (c->dict_on) dk__buf_clear(&c->stage);
    DK_RETURN_NOT_OK(dk__buf_reserve(to, bytes, err));
    uint8_t *dst = (uint8_t *)to->data + to->len;
    DK_RETURN_NOT_OK(convert(c, a, idx, first, n, dst, err));
    src = dst;
  }
  if (c->o->statistics) DK_RETURN_NOT_OK(minmax_fixed(c, src, n, err));
  if (c->dict_on) {
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_idx, 4 * (size_t)n, err));
    uint32_t *ix = (uint32_t *)(void *)(c->pg_idx.data + c->pg_idx.len);
    DK_RETURN_NOT_OK(dk_pqw__dict_put_fixed(&c->dict, src, n, ix, err));
    c->pg_idx.len += 4 * (size_t)n;
  } else if (direct) {
    DK_RETURN_NOT_OK(dk__buf_append(&c->pg_plain, src, bytes, err));
  } else {
    c->pg_plain.len += bytes;
  }
  c->pg_plain_bytes += (int64_t)bytes;
  return DK_OK;
}

static dk_status put_bytes(pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                           int64_t first, int64_t n, dk_error *err) {
  dk__buf_clear(&c->stage);
  DK_RETURN_NOT_OK(dk__buf_reserve(&c->stage, sizeof(pqw_sv) * (size_t)n, err));
  pqw_sv *v = (pqw_sv *)(void *)c->stage.data;
  uint64_t total;
  const uint8_t *end;
  views(c, a, idx, first, n, v, &total, &end);
  int stats = c->o->statistics;
  if (c->dict_on) {
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_idx, 4 * (size_t)n, err));
    uint32_t *ix = (uint32_t *)(void *)(c->pg_idx.data + c->pg_idx.len);
    DK_RETURN_NOT_OK(dk_pqw__dict_put_bytes(&c->dict, v, n, end, ix, err));
    c->pg_idx.len += 4 * (size_t)n;
    if (stats) { /* entries this page uses for the first time: its min/max at close */
      uint32_t *stamp = (uint32_t *)(void *)c->dict.stamp.data;
      for (int64_t k = 0; k < n; k++) {
        if (stamp[ix[k]] == c->pg_no) continue;
        stamp[ix[k]] = c->pg_no;
        DK_RETURN_NOT_OK(dk__buf_append(&c->pg_uniq, &ix[k], 4, err));
      }
    }
  } else {
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->pg_plain, 4 * (size_t)n + total, err));
    uint8_t *dst = (uint8_t *)c->pg_plain.data + c->pg_plain.len;
    for (int64_t k = 0; k < n; k++) {
      uint32_t len = v[k].n;
      memcpy(dst, &len, 4);
      if (len) memcpy(dst + 4, v[k].p, len);
      dst += 4 + (size_t)len;
    }
    c->pg_plain.len += 4 * (size_t)n + total;
    if (stats) DK_RETURN_NOT_OK(minmax_bytes(c, v, n, err));
  }
  c->pg_plain_bytes += 4 * n + (int64_t)total;
  return DK_OK;
}

/* Appends n values (Arrow slots idx[k], or first + k) to the page: as dictionary indices or
** PLAIN, with statistics. */
static dk_status put_values(pqw_col *c, const struct ArrowArray *a, const int64_t *idx,
                            int64_t first, int64_t n, dk_error *err) {
  if (n == 0) return DK_OK;
  dk_status st = c->ptype == PQ_BOOLEAN ? put_bools(c, a, idx, first, n, err)
               : c->width ? put_fixed(c, a, idx, first, n, err)
                          : put_bytes(c, a, idx, first, n, err);
  c->pg_values += n;
  return st;
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
  return DK_OK;
}

/* parquet-mr's test on a chunk's first page: a dictionary pays only when it and the indices
** together are smaller than the PLAIN values. When it does not, the page is re-encoded PLAIN
** from its indices and the chunk goes on without a dictionary. */
static dk_status check_dictionary(pqw_col *c, dk_error *err) {
  c->dict_checked = 1;
  int bw = dk_pqw__bit_width(c->dict.n ? c->dict.n - 1 : 0);
  int64_t encoded = (c->pg_values * bw + 7) / 8 + (int64_t)c->dict.vals.len;
  if (encoded < c->pg_plain_bytes) return DK_OK;
  dk__buf_clear(&c->pg_plain);
  DK_RETURN_NOT_OK(dk_pqw__dict_plain(&c->dict, (const uint32_t *)(const void *)c->pg_idx.data,
                                      c->pg_values, &c->pg_plain, err));
  dk__buf_clear(&c->pg_idx);
  dk_pqw__dict_reset(&c->dict);
  c->dict_on = 0;
  return DK_OK;
}

/* The page's levels (repetition, then definition) into c->lv: v1 with their 4-byte lengths. */
static dk_status encode_levels(pqw_col *c, size_t *rep_bytes, size_t *def_bytes, dk_error *err) {
  int v2 = c->o->page_v2;
  dk__buf_clear(&c->lv);
  *rep_bytes = *def_bytes = 0;
  for (int pass = 0; pass < 2; pass++) {
    int16_t maxl = pass == 0 ? c->max_rep : c->max_def;
    if (maxl == 0) continue;
    size_t at = c->lv.len;
    if (!v2) DK_RETURN_NOT_OK(dk__buf_append(&c->lv, "\0\0\0\0", 4, err));
    int bw = dk_pqw__bit_width((uint64_t)maxl);
    if (pass == 1 && c->pg_def_full)
      DK_RETURN_NOT_OK(dk_pqw__rle_run(&c->lv, (uint32_t)maxl, c->pg_levels, bw, err));
    else
      DK_RETURN_NOT_OK(dk_pqw__rle_encode_u16(
          &c->lv, (const uint16_t *)(const void *)(pass == 0 ? c->rep : c->def).data,
          c->pg_levels, bw, err));
    size_t n = c->lv.len - at - (v2 ? 0 : 4);
    if (!v2) {
      uint32_t n32 = (uint32_t)n;
      memcpy(c->lv.data + at, &n32, 4);
    }
    if (pass == 0) *rep_bytes = n; else *def_bytes = n;
  }
  return DK_OK;
}

/* Closes the open page; `full`: it closed at its size target (the first such page of a chunk
** decides on the dictionary; one that filled the dictionary first falls back as it is). */
static dk_status close_page(pqw_col *c, int full, dk_error *err) {
  if (c->pg_uniq.len) DK_RETURN_NOT_OK(fold_uniq(c, err));
  c->pg_no++;
  if (c->pg_levels == 0) return DK_OK;
  const pqw_opts *o = c->o;
  if (c->dict_on && !c->dict_checked && full) DK_RETURN_NOT_OK(check_dictionary(c, err));
  /* under a dictionary even a page without values is RLE_DICTIONARY: readers (Spark's
  ** vectorized one) expect no PLAIN page before the fallback */
  int dict_page = c->dict_on;
  size_t rep_bytes, def_bytes;
  DK_RETURN_NOT_OK(encode_levels(c, &rep_bytes, &def_bytes, err));
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
  /* compress: v1 levels + values as one body, v2 values only (levels stay uncompressed) */
  dk_pq_part parts[2];
  int np = 0;
  size_t lv_len = o->page_v2 ? c->lv.len : 0;
  if (!o->page_v2 && c->lv.len) parts[np++] = (dk_pq_part){(const uint8_t *)c->lv.data, c->lv.len};
  parts[np++] = (dk_pq_part){(const uint8_t *)vals->data, vals->len};
  size_t uncompressed = lv_len + parts[0].len + (np > 1 ? parts[1].len : 0);
  if (uncompressed > INT32_MAX)
    return dk__error_set(err, DK_UNSUPPORTED, "column '%s': a page larger than 2 GiB", c->leaf->name);
  dk_buf *cb = &c->cbuf;
  dk__buf_clear(cb);
  DK_RETURN_NOT_OK(dk__buf_reserve(cb, lv_len + dk_pq__compress_parts_bound(&c->comp, parts, np), err));
  if (lv_len) memcpy(cb->data, c->lv.data, lv_len);
  size_t clen = 0;
  DK_RETURN_NOT_OK(dk_pq__compress_parts(&c->comp, parts, np, &c->stage, (uint8_t *)cb->data + lv_len,
                                         &clen, err));
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
  e.offset = (int64_t)c->ch.pages.len;
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
  DK_RETURN_NOT_OK(dk__buf_append(&c->ch.entries, &e, sizeof e, err));
  DK_RETURN_NOT_OK(dk__buf_reserve(&c->ch.pages, c->hdr.len + cb->len, err));
  memcpy(c->ch.pages.data + c->ch.pages.len, c->hdr.data, c->hdr.len);
  memcpy(c->ch.pages.data + c->ch.pages.len + c->hdr.len, cb->data, cb->len);
  c->ch.pages.len += c->hdr.len + cb->len;
  /* chunk accounting */
  c->ch_uncompressed += (int64_t)(c->hdr.len + uncompressed);
  c->ch_rows += c->pg_rows;
  c->ch_values += c->pg_levels;
  c->ch_nulls += c->pg_nulls;
  c->ch_nans += c->pg_nans;
  if (dict_page) c->ch_pages_dict++; else c->ch_pages_plain++;
  DK_RETURN_NOT_OK(bound_merge(c->kind, &c->ch_min, &c->ch_max, &c->pg_min, &c->pg_max, err));
  /* reset the page */
  dk__buf_clear(&c->def);
  dk__buf_clear(&c->rep);
  dk__buf_clear(&c->pg_plain);
  dk__buf_clear(&c->pg_idx);
  c->pg_min.set = c->pg_max.set = 0;
  c->pg_levels = c->pg_rows = c->pg_values = c->pg_nulls = c->pg_nans = c->pg_plain_bytes = 0;
  c->pg_def_full = 1;
  return DK_OK;
}

static int64_t page_estimate(const pqw_col *c) {
  int64_t v = c->dict_on ? (c->pg_values * dk_pqw__bit_width(c->dict.n) + 7) / 8
                         : (int64_t)c->pg_plain.len / (c->ptype == PQ_BOOLEAN ? 8 : 1);
  int lb = dk_pqw__bit_width((uint64_t)c->max_def) + dk_pqw__bit_width((uint64_t)c->max_rep);
  return v + (c->pg_levels * lb) / 8;
}

/* ---- write ------------------------------------------------------------------------------- */

/* Appends n definition levels to the page: def (NULL: all max_def) holding nv = max_def. A
** page keeps its levels unmaterialized while every one is max_def. */
static dk_status put_def(pqw_col *c, const uint16_t *def, int64_t n, int64_t nv, dk_error *err) {
  if (c->pg_def_full && nv == n) return DK_OK;
  if (c->pg_def_full) { /* the first level below max_def: the page's levels so far */
    c->pg_def_full = 0;
    dk__buf_clear(&c->def);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->def, 2 * (size_t)c->pg_levels, err));
    uint16_t *d = (uint16_t *)(void *)c->def.data;
    for (int64_t k = 0; k < c->pg_levels; k++) d[k] = (uint16_t)c->max_def;
    c->def.len = 2 * (size_t)c->pg_levels;
  }
  if (def) return dk__buf_append(&c->def, def, 2 * (size_t)n, err);
  DK_RETURN_NOT_OK(dk__buf_reserve(&c->def, 2 * (size_t)n, err));
  uint16_t *d = (uint16_t *)(void *)(c->def.data + c->def.len);
  for (int64_t k = 0; k < n; k++) d[k] = (uint16_t)c->max_def;
  c->def.len += 2 * (size_t)n;
  return DK_OK;
}

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
    int64_t n = end - pos, nv = n;
    if (in->def) {
      nv = 0;
      for (int64_t k = pos; k < end; k++) nv += in->def[k] == c->max_def;
    }
    if (c->max_def) DK_RETURN_NOT_OK(put_def(c, in->def ? in->def + pos : NULL, n, nv, err));
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
      DK_RETURN_NOT_OK(close_page(c, 0, err));
      c->dict_on = 0;
    } else if (c->pg_rows >= o->page_rows || page_estimate(c) >= o->page_bytes) {
      DK_RETURN_NOT_OK(close_page(c, 1, err));
    }
  }
  return DK_OK;
}

int64_t dk_pqw__col_buffered(const pqw_col *c) {
  return (int64_t)(c->ch.pages.len + c->dict.vals.len) + page_estimate(c);
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
  int n = (int)(c->ch.entries.len / sizeof(pqw_page_entry));
  const pqw_page_entry *pe = (const pqw_page_entry *)(const void *)c->ch.entries.data;
  int kind = c->kind;
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
  DK_RETURN_NOT_OK(close_page(c, 0, err));
  int kind = c->kind;
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
  /* the dictionary page, compressed (emitted before the data pages) */
  dk_buf *dp = &c->ch.dict;
  dk__buf_clear(dp);
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
    DK_RETURN_NOT_OK(dk_pqw__page_header(dp, &h, err));
    c->ch_uncompressed += (int64_t)(dp->len + n);
    DK_RETURN_NOT_OK(dk__buf_append(dp, c->cbuf.data, clen, err));
    m->n_dict_pages_plain = 1;
  }
  m->total_uncompressed = c->ch_uncompressed;
  m->total_compressed = (int64_t)(dp->len + c->ch.pages.len);
  return DK_OK;
}

void dk_pqw__chunk_out_init(pqw_chunk_out *o, const dk_allocator *alloc) {
  dk__buf_init(&o->dict, alloc);
  dk__buf_init(&o->pages, alloc);
  dk__buf_init(&o->entries, alloc);
}

void dk_pqw__chunk_out_dispose(pqw_chunk_out *o) {
  dk__buf_dispose(&o->dict);
  dk__buf_dispose(&o->pages);
  dk__buf_dispose(&o->entries);
}

/* Swaps the column's chunk buffers with *out and empties the column's. */
static void swap_out(pqw_col *c, pqw_chunk_out *out) {
  pqw_chunk_out t = *out;
  *out = c->ch;
  c->ch = t;
  dk__buf_clear(&c->ch.dict);
  dk__buf_clear(&c->ch.pages);
  dk__buf_clear(&c->ch.entries);
}

void dk_pqw__col_give_back(pqw_col *c, pqw_chunk_out *out) { swap_out(c, out); }

void dk_pqw__col_take(pqw_col *c, pqw_chunk_out *out) {
  swap_out(c, out);
  /* reset for the next row group */
  dk__buf_clear(&c->index_vals);
  dk_pqw__dict_reset(&c->dict);
  c->dict_on = c->o->dictionary && c->ptype != PQ_BOOLEAN;
  c->dict_checked = 0;
  c->ch_rows = c->ch_values = c->ch_uncompressed = c->ch_nulls = c->ch_nans = 0;
  c->ch_pages_dict = c->ch_pages_plain = 0;
  c->ch_min.set = c->ch_max.set = 0;
  c->ch_index_ok = 1;
}

dk_status dk_pqw__chunk_emit(const pqw_chunk_out *c, pqw_chunk_meta *m, int page_index,
                             dk__sink *sink, dk_error *err) {
  m->dict_offset = -1;
  if (c->dict.len) {
    m->dict_offset = sink->pos;
    DK_RETURN_NOT_OK(dk_io__sink_write(sink, c->dict.data, c->dict.len, err));
  }
  m->data_offset = sink->pos;
  DK_RETURN_NOT_OK(dk_io__sink_write(sink, c->pages.data, c->pages.len, err));
  if (!page_index) return DK_OK;
  int n = (int)(c->entries.len / sizeof(pqw_page_entry));
  const pqw_page_entry *pe = (const pqw_page_entry *)(const void *)c->entries.data;
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
  return w.st;
}
