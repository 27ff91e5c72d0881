/*
** eval.c — vectorized three-valued evaluation of bound predicates over Arrow struct batches
** (Arrow columnar format: validity bitmaps LSB-first, offsets, struct child alignment).
**
** Every predicate node produces two byte vectors over the batch rows: `val` (1 = TRUE) and
** `ok` (1 = not NULL), with the invariant val[i] == 0 whenever ok[i] == 0, which makes the
** Kleene connectives branch-free byte arithmetic:
**   AND: val = v1 & v2;  ok = (ok1 & ok2) | (ok1 & !v1) | (ok2 & !v2)
**   OR:  val = v1 | v2;  ok = (ok1 & ok2) | v1 | v2
**   NOT: val = ok & !v
** Column-vs-literal comparisons run as one tight loop per (physical type, operator), with no
** per-row calls through pointers. Doubles order as Spark does: NaN above everything and equal
** to itself, -0.0 == 0.0. Strings and binaries compare bytewise (UTF-8 code point order).
*/
#include <math.h>
#include <stdlib.h>

#include "expr/expr_int.h"

typedef struct tv {
  uint8_t *val;
  uint8_t *ok;
} tv;

typedef dk_expr__ectx ectx;
typedef dk_expr__colview colview;

static uint8_t *scratch(ectx *c, dk_error *err) {
  return dk__arena_alloc(&c->ar, (size_t)(c->n ? c->n : 1), err);
}

static dk_status new_tv(ectx *c, tv *t) {
  t->val = scratch(c, c->err);
  t->ok = t->val ? scratch(c, c->err) : NULL;
  return t->ok ? DK_OK : DK_NOMEM;
}

dk_status dk_expr__resolve(ectx *c, const dk_colref *col, colview *cv) {
  const struct ArrowArray *arr = c->batch;
  int64_t o = arr->offset, n = c->n;
  uint8_t *ok = NULL;
  for (int lvl = 0; lvl < col->depth; lvl++) {
    int32_t k = col->idx[lvl];
    DK_RETURN_IF(k < 0 || k >= arr->n_children || !arr->children || !arr->children[k],
                 DK_INVALID, c->err, "batch does not match the bound schema (column %s)",
                 col->names[lvl]);
    arr = arr->children[k];
    DK_RETURN_IF(arr->length < o + n || arr->offset < 0, DK_INVALID, c->err,
                 "batch column %s is shorter than the batch", col->names[lvl]);
    o += arr->offset;
    const uint8_t *bits = arr->n_buffers > 0 && arr->buffers ? arr->buffers[0] : NULL;
    if (bits && arr->null_count != 0) {
      if (!ok) {
        ok = scratch(c, c->err);
        if (!ok) return DK_NOMEM;
        for (int64_t i = 0; i < n; i++) ok[i] = dk__bit_get(bits, o + i);
      } else {
        for (int64_t i = 0; i < n; i++) ok[i] &= dk__bit_get(bits, o + i);
      }
    }
  }
  int need = col->dom == DK_DOM_BYTES ? 3 : col->dom == DK_DOM_NONE ? 1 : 2;
  DK_RETURN_IF(arr->n_buffers < need || !arr->buffers || (need > 1 && n > 0 && !arr->buffers[1]),
               DK_INVALID, c->err, "batch column %s has missing buffers",
               col->names[col->depth - 1]);
  cv->leaf = arr;
  cv->off = o;
  cv->ok = ok;
  return DK_OK;
}

static void fill_ok(uint8_t *ok, const colview *cv, int64_t n) {
  if (cv->ok) memcpy(ok, cv->ok, (size_t)n);
  else memset(ok, 1, (size_t)n);
}

/* val &= ok (restore the invariant after a loop that ignored validity) */
static void mask_val(uint8_t *val, const uint8_t *ok, int64_t n) {
  for (int64_t i = 0; i < n; i++) val[i] &= ok[i];
}

/* ---- typed loops ----------------------------------------------------------------------- */

#define CMP_LOOP(T, CONV, LIT)                                                      \
  do {                                                                              \
    const T *v_ = (const T *)cv->leaf->buffers[1] + cv->off;                        \
    switch (op) {                                                                   \
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ:                                     \
        { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) == (LIT); } break;         \
      case DK_CMP_NE: { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) != (LIT); } break; \
      case DK_CMP_LT: { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) < (LIT); } break;  \
      case DK_CMP_LE: { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) <= (LIT); } break; \
      case DK_CMP_GT: { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) > (LIT); } break;  \
      case DK_CMP_GE: { for (int64_t i = 0; i < n; i++) r[i] = CONV(v_[i]) >= (LIT); } break; \
    }                                                                               \
  } while (0)

#define ID(x) (x)
#define TO_I64(x) ((int64_t)(x))
#define TO_F64(x) ((double)(x))

static void cmp_int_width(uint8_t *r, const colview *cv, int w, bool is_unsigned,
                          dk_cmp_op op, int64_t lit, int64_t n) {
  if (is_unsigned) {
    switch (w) {
      case 1: CMP_LOOP(uint8_t, TO_I64, lit); break;
      case 2: CMP_LOOP(uint16_t, TO_I64, lit); break;
      default: CMP_LOOP(uint32_t, TO_I64, lit); break;
    }
    return;
  }
  switch (w) {
    case 1: CMP_LOOP(int8_t, TO_I64, lit); break;
    case 2: CMP_LOOP(int16_t, TO_I64, lit); break;
    case 4: CMP_LOOP(int32_t, TO_I64, lit); break;
    default: CMP_LOOP(int64_t, ID, lit); break;
  }
}

/* Doubles with Spark's NaN ordering; `lit` is not NaN here. */
#define FCMP_LOOP(T)                                                                 \
  do {                                                                               \
    const T *v_ = (const T *)cv->leaf->buffers[1] + cv->off;                         \
    switch (op) {                                                                    \
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ:                                      \
        { for (int64_t i = 0; i < n; i++) r[i] = (double)v_[i] == lit; } break;          \
      case DK_CMP_NE: { for (int64_t i = 0; i < n; i++) r[i] = !((double)v_[i] == lit); } break; \
      case DK_CMP_LT: { for (int64_t i = 0; i < n; i++) r[i] = (double)v_[i] < lit; } break;    \
      case DK_CMP_LE: { for (int64_t i = 0; i < n; i++) r[i] = (double)v_[i] <= lit; } break;   \
      case DK_CMP_GT: { for (int64_t i = 0; i < n; i++) r[i] = !((double)v_[i] <= lit); } break; \
      case DK_CMP_GE: { for (int64_t i = 0; i < n; i++) r[i] = !((double)v_[i] < lit); } break;  \
    }                                                                                \
  } while (0)

static inline dk_i128 load_dec(const uint8_t *p) {
  dk_i128 v;
  memcpy(&v, p, 16);
  return v;
}

static double dec_to_double(dk_i128 v, int scale) {
  char buf[64];
  dk__format_decimal(buf, sizeof buf, v, scale);
  return strtod(buf, NULL);
}

/* Fills tmp[] with the column converted to double (ints, decimals, floats). */
static void column_as_double(double *tmp, const colview *cv, const dk_atype *t, int64_t n) {
  const void *b = cv->leaf->buffers[1];
  int64_t o = cv->off;
  switch (t->id) {
    case DK_AT_INT8: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const int8_t *)b)[o + i]; } break;
    case DK_AT_INT16: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const int16_t *)b)[o + i]; } break;
    case DK_AT_INT32: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const int32_t *)b)[o + i]; } break;
    case DK_AT_INT64: { for (int64_t i = 0; i < n; i++) tmp[i] = (double)((const int64_t *)b)[o + i]; } break;
    case DK_AT_UINT8: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const uint8_t *)b)[o + i]; } break;
    case DK_AT_UINT16: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const uint16_t *)b)[o + i]; } break;
    case DK_AT_UINT32: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const uint32_t *)b)[o + i]; } break;
    case DK_AT_FLOAT: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const float *)b)[o + i]; } break;
    case DK_AT_DOUBLE: { for (int64_t i = 0; i < n; i++) tmp[i] = ((const double *)b)[o + i]; } break;
    case DK_AT_DECIMAL128:
      for (int64_t i = 0; i < n; i++)
        tmp[i] = cv->ok && !cv->ok[i] ? 0 : dec_to_double(load_dec((const uint8_t *)b + 16 * (o + i)), t->scale);
      break;
    default:
      for (int64_t i = 0; i < n; i++) tmp[i] = 0;
  }
}

static void cmp_f64(uint8_t *r, const colview *cv, const dk_atype *t, dk_cmp_op op, double lit,
                    int64_t n, double *tmp) {
  if (isnan(lit)) {
    const double *v_;
    if (t->id == DK_AT_DOUBLE) {
      v_ = (const double *)cv->leaf->buffers[1] + cv->off;
    } else {
      column_as_double(tmp, cv, t, n);
      v_ = tmp;
    }
    for (int64_t i = 0; i < n; i++) {
      bool isn = isnan(v_[i]);
      switch (op) {
        case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ: case DK_CMP_GE: r[i] = isn; break;
        case DK_CMP_NE: case DK_CMP_LT: r[i] = !isn; break;
        case DK_CMP_LE: r[i] = 1; break;
        case DK_CMP_GT: r[i] = 0; break;
      }
    }
    return;
  }
  if (t->id == DK_AT_DOUBLE) {
    FCMP_LOOP(double);
  } else if (t->id == DK_AT_FLOAT) {
    FCMP_LOOP(float);
  } else {
    column_as_double(tmp, cv, t, n);
    const double *v_ = tmp;
    switch (op) {
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ: { for (int64_t i = 0; i < n; i++) r[i] = v_[i] == lit; } break;
      case DK_CMP_NE: { for (int64_t i = 0; i < n; i++) r[i] = !(v_[i] == lit); } break;
      case DK_CMP_LT: { for (int64_t i = 0; i < n; i++) r[i] = v_[i] < lit; } break;
      case DK_CMP_LE: { for (int64_t i = 0; i < n; i++) r[i] = v_[i] <= lit; } break;
      case DK_CMP_GT: { for (int64_t i = 0; i < n; i++) r[i] = !(v_[i] <= lit); } break;
      case DK_CMP_GE: { for (int64_t i = 0; i < n; i++) r[i] = !(v_[i] < lit); } break;
    }
  }
}

static void cmp_dec(uint8_t *r, const colview *cv, dk_cmp_op op, dk_i128 lit, int64_t n) {
  const uint8_t *b = (const uint8_t *)cv->leaf->buffers[1] + 16 * cv->off;
  for (int64_t i = 0; i < n; i++) {
    dk_i128 v = load_dec(b + 16 * i);
    int c = v < lit ? -1 : v > lit;
    switch (op) {
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ: r[i] = c == 0; break;
      case DK_CMP_NE: r[i] = c != 0; break;
      case DK_CMP_LT: r[i] = c < 0; break;
      case DK_CMP_LE: r[i] = c <= 0; break;
      case DK_CMP_GT: r[i] = c > 0; break;
      case DK_CMP_GE: r[i] = c >= 0; break;
    }
  }
}

static inline int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c < 0 ? -1 : 1;
  return an < bn ? -1 : an > bn;
}

static void cmp_bytes(uint8_t *r, const colview *cv, dk_cmp_op op, const uint8_t *lit,
                      size_t ln, int64_t n) {
  const int32_t *offs = (const int32_t *)cv->leaf->buffers[1] + cv->off;
  const uint8_t *data = cv->leaf->buffers[2];
  if (op == DK_CMP_EQ || op == DK_CMP_NULL_SAFE_EQ || op == DK_CMP_NE) {
    uint8_t want = op != DK_CMP_NE;
    for (int64_t i = 0; i < n; i++) {
      size_t len = (size_t)(offs[i + 1] - offs[i]);
      r[i] = (uint8_t)((len == ln && (ln == 0 || !memcmp(data + offs[i], lit, ln))) == want);
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    int c = bytes_cmp(data + offs[i], (size_t)(offs[i + 1] - offs[i]), lit, ln);
    switch (op) {
      case DK_CMP_LT: r[i] = c < 0; break;
      case DK_CMP_LE: r[i] = c <= 0; break;
      case DK_CMP_GT: r[i] = c > 0; break;
      default: r[i] = c >= 0; break;
    }
  }
}

static void cmp_bool(uint8_t *r, const colview *cv, dk_cmp_op op, int lit, int64_t n) {
  const uint8_t *bits = cv->leaf->buffers[1];
  for (int64_t i = 0; i < n; i++) {
    int v = dk__bit_get(bits, cv->off + i);
    int c = v - lit;
    switch (op) {
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ: r[i] = c == 0; break;
      case DK_CMP_NE: r[i] = c != 0; break;
      case DK_CMP_LT: r[i] = c < 0; break;
      case DK_CMP_LE: r[i] = c <= 0; break;
      case DK_CMP_GT: r[i] = c > 0; break;
      case DK_CMP_GE: r[i] = c >= 0; break;
    }
  }
}

/* ---- generic per-row values (column vs column) --------------------------------------------- */

static int64_t get_i64(const colview *cv, const dk_atype *t, int64_t i) {
  const void *b = cv->leaf->buffers[1];
  int64_t k = cv->off + i;
  switch (dk__atype_width(t)) {
    case 1: return t->id == DK_AT_UINT8 ? (int64_t)((const uint8_t *)b)[k] : (int64_t)((const int8_t *)b)[k];
    case 2: return t->id == DK_AT_UINT16 ? (int64_t)((const uint16_t *)b)[k] : (int64_t)((const int16_t *)b)[k];
    case 4: return t->id == DK_AT_UINT32 ? (int64_t)((const uint32_t *)b)[k] : (int64_t)((const int32_t *)b)[k];
    default: return ((const int64_t *)b)[k];
  }
}

static double get_f64(const colview *cv, const dk_atype *t, int64_t i) {
  const void *b = cv->leaf->buffers[1];
  return t->id == DK_AT_FLOAT ? ((const float *)b)[cv->off + i] : ((const double *)b)[cv->off + i];
}

static int f64_cmp(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na && nb ? 0 : na ? 1 : -1;
  return a < b ? -1 : a > b;
}

static dk_status eval_col_col(ectx *c, const dk_expr *e, tv *out) {
  const dk_colref *ca = &e->children[0]->col, *cb = &e->children[1]->col;
  colview a, b;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, ca, &a));
  DK_RETURN_NOT_OK(dk_expr__resolve(c, cb, &b));
  int64_t n = c->n;
  for (int64_t i = 0; i < n; i++) {
    bool oka = !a.ok || a.ok[i], okb = !b.ok || b.ok[i];
    int cmp = 0;
    if (oka && okb) {
      switch (e->dom) {
        case DK_DOM_I64: {
          int64_t x = get_i64(&a, &ca->type, i), y = get_i64(&b, &cb->type, i);
          cmp = x < y ? -1 : x > y;
          break;
        }
        case DK_DOM_F64:
          cmp = f64_cmp(get_f64(&a, &ca->type, i), get_f64(&b, &cb->type, i));
          break;
        case DK_DOM_DEC: {
          dk_i128 x = load_dec((const uint8_t *)a.leaf->buffers[1] + 16 * (a.off + i));
          dk_i128 y = load_dec((const uint8_t *)b.leaf->buffers[1] + 16 * (b.off + i));
          cmp = x < y ? -1 : x > y;
          break;
        }
        case DK_DOM_BYTES: {
          const int32_t *oa = (const int32_t *)a.leaf->buffers[1] + a.off;
          const int32_t *ob = (const int32_t *)b.leaf->buffers[1] + b.off;
          cmp = bytes_cmp((const uint8_t *)a.leaf->buffers[2] + oa[i], (size_t)(oa[i + 1] - oa[i]),
                          (const uint8_t *)b.leaf->buffers[2] + ob[i], (size_t)(ob[i + 1] - ob[i]));
          break;
        }
        case DK_DOM_BOOL:
          cmp = (int)dk__bit_get(a.leaf->buffers[1], a.off + i) -
                (int)dk__bit_get(b.leaf->buffers[1], b.off + i);
          break;
        default:
          break;
      }
    }
    bool res;
    switch (e->op) {
      case DK_CMP_EQ: res = cmp == 0; break;
      case DK_CMP_NE: res = cmp != 0; break;
      case DK_CMP_LT: res = cmp < 0; break;
      case DK_CMP_LE: res = cmp <= 0; break;
      case DK_CMP_GT: res = cmp > 0; break;
      case DK_CMP_GE: res = cmp >= 0; break;
      default: /* null-safe */
        res = (oka && okb) ? cmp == 0 : (!oka && !okb);
        out->val[i] = res;
        out->ok[i] = 1;
        continue;
    }
    out->ok[i] = oka && okb;
    out->val[i] = out->ok[i] && res;
  }
  return DK_OK;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static dk_status eval_cmp(ectx *c, const dk_expr *e, tv *out) {
  int64_t n = c->n;
  switch (e->ck) {
    case DK_CK_NULL:
      memset(out->val, 0, (size_t)n);
      memset(out->ok, 0, (size_t)n);
      return DK_OK;
    case DK_CK_LIT_LIT:
      memset(out->val, e->cres, (size_t)n);
      memset(out->ok, 1, (size_t)n);
      return DK_OK;
    case DK_CK_COL_COL:
      return eval_col_col(c, e, out);
    case DK_CK_VALUES:
      return dk_expr__eval_value_pred(c, e, out->val, out->ok, 0);
    case DK_CK_CONST: {
      colview cv;
      DK_RETURN_NOT_OK(dk_expr__resolve(c, &e->children[0]->col, &cv));
      if (e->op == DK_CMP_NULL_SAFE_EQ) {
        memset(out->ok, 1, (size_t)n);
        if (cv.ok && e->cres) memcpy(out->val, cv.ok, (size_t)n);
        else memset(out->val, e->cres, (size_t)n);
        return DK_OK;
      }
      fill_ok(out->ok, &cv, n);
      memset(out->val, e->cres, (size_t)n);
      mask_val(out->val, out->ok, n);
      return DK_OK;
    }
    case DK_CK_COL_LIT:
      break;
  }
  const dk_colref *col = &e->children[0]->col;
  colview cv;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, col, &cv));
  uint8_t *r = out->val;
  dk_cmp_op op = e->op;
  switch (e->dom) {
    case DK_DOM_I64: {
      dk_atype_id id = col->type.id;
      bool uns = id == DK_AT_UINT8 || id == DK_AT_UINT16 || id == DK_AT_UINT32;
      cmp_int_width(r, &cv, dk__atype_width(&col->type), uns, op, e->li, n);
      break;
    }
    case DK_DOM_F64: {
      double *tmp = NULL;
      /* doubles are compared in place; floats too, except against NaN (isnan on widened) */
      if (col->type.id != DK_AT_DOUBLE && (col->type.id != DK_AT_FLOAT || isnan(e->ld))) {
        tmp = dk__arena_alloc(&c->ar, sizeof(double) * (size_t)(n ? n : 1), c->err);
        if (!tmp) return DK_NOMEM;
      }
      cmp_f64(r, &cv, &col->type, op, e->ld, n, tmp);
      break;
    }
    case DK_DOM_DEC:
      cmp_dec(r, &cv, op, e->ldec, n);
      break;
    case DK_DOM_BYTES: {
      const dk_lit *l = &e->children[1]->lit;
      cmp_bytes(r, &cv, op, (const uint8_t *)l->bytes, l->len, n);
      break;
    }
    case DK_DOM_BOOL:
      cmp_bool(r, &cv, op, (int)e->li, n);
      break;
    default:
      return dk__error_set(c->err, DK_INTERNAL, "comparison without a domain");
  }
  if (op == DK_CMP_NULL_SAFE_EQ) {
    if (cv.ok) mask_val(r, cv.ok, n);
    memset(out->ok, 1, (size_t)n);
  } else {
    fill_ok(out->ok, &cv, n);
    if (cv.ok) mask_val(r, out->ok, n);
  }
  return DK_OK;
}

static dk_status eval_pred(ectx *c, const dk_expr *e, tv *out, int depth);

static dk_status eval_starts_with(ectx *c, const dk_expr *e, tv *out) {
  colview cv;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, &e->children[0]->col, &cv));
  const dk_lit *p = &e->children[1]->lit;
  const int32_t *offs = (const int32_t *)cv.leaf->buffers[1] + cv.off;
  const uint8_t *data = cv.leaf->buffers[2];
  size_t pl = p->len;
  for (int64_t i = 0; i < c->n; i++)
    out->val[i] = (size_t)(offs[i + 1] - offs[i]) >= pl &&
                  (pl == 0 || !memcmp(data + offs[i], p->bytes, pl));
  fill_ok(out->ok, &cv, c->n);
  if (cv.ok) mask_val(out->val, out->ok, c->n);
  return DK_OK;
}

/* ---- LIKE ------------------------------------------------------------------------------ */

bool dk__like_compile(const char *pat, size_t len, int16_t *out, size_t *n_out) {
  size_t m = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)pat[i];
    if (ch == '\\') {
      if (i + 1 >= len) return false;
      unsigned char nx = (unsigned char)pat[++i];
      if (nx != '%' && nx != '_' && nx != '\\') return false;
      out[m++] = nx;
    } else if (ch == '%') {
      if (m == 0 || out[m - 1] != DK_LIKE_ANY_SEQ) out[m++] = DK_LIKE_ANY_SEQ; /* %% == % */
    } else if (ch == '_') {
      out[m++] = DK_LIKE_ANY_ONE;
    } else {
      out[m++] = ch;
    }
  }
  *n_out = m;
  return true;
}

static size_t cp_len(const uint8_t *s, size_t n) {
  unsigned ch = s[0];
  size_t l = ch < 0x80 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
  return l <= n ? l : n;
}

/* Greedy matching with backtracking to the last '%' (linear for patterns with one '%'). */
bool dk__like_match(const uint8_t *s, size_t n, const int16_t *pat, size_t m) {
  size_t si = 0, pi = 0, star_p = (size_t)-1, star_s = 0;
  while (si < n) {
    if (pi < m && pat[pi] == DK_LIKE_ANY_ONE) {
      si += cp_len(s + si, n - si);
      pi++;
    } else if (pi < m && pat[pi] >= 0 && (uint8_t)pat[pi] == s[si]) {
      si++;
      pi++;
    } else if (pi < m && pat[pi] == DK_LIKE_ANY_SEQ) {
      star_p = pi++;
      star_s = si;
    } else if (star_p != (size_t)-1) {
      star_s += cp_len(s + star_s, n - star_s);
      si = star_s;
      pi = star_p + 1;
    } else {
      return false;
    }
  }
  while (pi < m && pat[pi] == DK_LIKE_ANY_SEQ) pi++;
  return pi == m;
}

static dk_status eval_like(ectx *c, const dk_expr *e, tv *out) {
  colview cv;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, &e->children[0]->col, &cv));
  const dk_lit *p = &e->children[1]->lit;
  int16_t *codes = dk__arena_alloc(&c->ar, (p->len ? p->len : 1) * sizeof *codes, c->err);
  if (!codes) return DK_NOMEM;
  size_t m;
  if (!dk__like_compile(p->bytes, p->len, codes, &m))
    return dk__error_set(c->err, DK_INVALID, "invalid LIKE pattern");
  const int32_t *offs = (const int32_t *)cv.leaf->buffers[1] + cv.off;
  const uint8_t *data = cv.leaf->buffers[2];
  for (int64_t i = 0; i < c->n; i++)
    out->val[i] = dk__like_match(data + offs[i], (size_t)(offs[i + 1] - offs[i]), codes, m);
  fill_ok(out->ok, &cv, c->n);
  if (cv.ok) mask_val(out->val, out->ok, c->n);
  return DK_OK;
}

/* ---- IN lists ------------------------------------------------------------------------------ */

static bool same_column(const dk_colref *a, const dk_colref *b) {
  if (a->depth != b->depth) return false;
  for (int i = 0; i < a->depth; i++)
    if (a->idx[i] != b->idx[i]) return false;
  return true;
}

/* `col = a OR col = b OR ...` on one integer or string column (what bind makes of IN). */
static bool is_in_list(const dk_expr *e) {
  const dk_colref *first = NULL;
  for (size_t i = 0; i < e->n_children; i++) {
    const dk_expr *k = e->children[i];
    if (k->kind != DK_EXPR_CMP || k->ck != DK_CK_COL_LIT || k->op != DK_CMP_EQ) return false;
    const dk_colref *col = &k->children[0]->col;
    if (k->dom != col->dom || (k->dom != DK_DOM_I64 && k->dom != DK_DOM_BYTES)) return false;
    if (first && !same_column(first, col)) return false;
    first = col;
  }
  return first != NULL;
}

static dk_status eval_in_list(ectx *c, const dk_expr *e, tv *out) {
  const dk_colref *col = &e->children[0]->children[0]->col;
  colview cv;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, col, &cv));
  int64_t n = c->n;
  size_t k = e->n_children;
  uint8_t *r = out->val;
  if (col->dom == DK_DOM_I64) {
    int64_t *vals = dk__arena_alloc(&c->ar, sizeof(int64_t) * (size_t)(n ? n : 1), c->err);
    int64_t *lits = dk__arena_alloc(&c->ar, sizeof(int64_t) * k, c->err);
    if (!vals || !lits) return DK_NOMEM;
    for (size_t j = 0; j < k; j++) lits[j] = e->children[j]->li;
    for (int64_t i = 0; i < n; i++) vals[i] = get_i64(&cv, &col->type, i);
    for (int64_t i = 0; i < n; i++) {
      uint8_t hit = 0;
      for (size_t j = 0; j < k; j++) hit |= vals[i] == lits[j];
      r[i] = hit;
    }
  } else {
    const int32_t *offs = (const int32_t *)cv.leaf->buffers[1] + cv.off;
    const uint8_t *data = cv.leaf->buffers[2];
    for (int64_t i = 0; i < n; i++) {
      size_t len = (size_t)(offs[i + 1] - offs[i]);
      uint8_t hit = 0;
      for (size_t j = 0; j < k && !hit; j++) {
        const dk_lit *l = &e->children[j]->children[1]->lit;
        hit = l->len == len && (len == 0 || !memcmp(data + offs[i], l->bytes, len));
      }
      r[i] = hit;
    }
  }
  fill_ok(out->ok, &cv, n);
  if (cv.ok) mask_val(r, out->ok, n);
  return DK_OK;
}

dk_status dk_expr__eval_pred(ectx *c, const dk_expr *e, uint8_t *val, uint8_t *ok, int depth) {
  tv t = {val, ok};
  return eval_pred(c, e, &t, depth);
}

static dk_status eval_pred(ectx *c, const dk_expr *e, tv *out, int depth) {
  int64_t n = c->n;
  DK_RETURN_IF(depth > DK_EXPR_MAX_DEPTH * 2, DK_INVALID, c->err, "expression nests too deeply");
  if (dk_expr__is_value_kind(e->kind)) /* a boolean value expression */
    return dk_expr__eval_value_pred(c, e, out->val, out->ok, depth + 1);
  switch (e->kind) {
    case DK_EXPR_LITERAL:
      memset(out->val, e->lit.type == DK_LIT_BOOL && e->lit.v.b, (size_t)n);
      memset(out->ok, e->lit.type != DK_LIT_NULL, (size_t)n);
      return DK_OK;
    case DK_EXPR_COLUMN: { /* boolean column */
      colview cv;
      DK_RETURN_NOT_OK(dk_expr__resolve(c, &e->col, &cv));
      const uint8_t *bits = cv.leaf->buffers[1];
      for (int64_t i = 0; i < n; i++) out->val[i] = dk__bit_get(bits, cv.off + i);
      fill_ok(out->ok, &cv, n);
      if (cv.ok) mask_val(out->val, out->ok, n);
      return DK_OK;
    }
    case DK_EXPR_CMP:
      return eval_cmp(c, e, out);
    case DK_EXPR_STARTS_WITH:
      return eval_starts_with(c, e, out);
    case DK_EXPR_LIKE:
      return eval_like(c, e, out);
    case DK_EXPR_NOT:
      DK_RETURN_NOT_OK(eval_pred(c, e->children[0], out, depth + 1));
      for (int64_t i = 0; i < n; i++) out->val[i] = out->ok[i] & !out->val[i];
      return DK_OK;
    case DK_EXPR_AND:
    case DK_EXPR_OR: {
      if (e->kind == DK_EXPR_OR && is_in_list(e)) return eval_in_list(c, e, out);
      DK_RETURN_NOT_OK(eval_pred(c, e->children[0], out, depth + 1));
      tv t;
      DK_RETURN_NOT_OK(new_tv(c, &t));
      bool is_and = e->kind == DK_EXPR_AND;
      for (size_t k = 1; k < e->n_children; k++) {
        DK_RETURN_NOT_OK(eval_pred(c, e->children[k], &t, depth + 1));
        uint8_t *v = out->val, *o = out->ok;
        const uint8_t *v2 = t.val, *o2 = t.ok;
        if (is_and) {
          for (int64_t i = 0; i < n; i++) {
            uint8_t ok = (uint8_t)((o[i] & o2[i]) | (o[i] & !v[i]) | (o2[i] & !v2[i]));
            v[i] = v[i] & v2[i];
            o[i] = ok;
          }
        } else {
          for (int64_t i = 0; i < n; i++) {
            uint8_t ok = (uint8_t)((o[i] & o2[i]) | v[i] | v2[i]);
            v[i] = v[i] | v2[i];
            o[i] = ok;
          }
        }
      }
      return DK_OK;
    }
    case DK_EXPR_IS_NULL:
    case DK_EXPR_IS_NOT_NULL: {
      const dk_expr *ch = e->children[0];
      uint8_t want_null = e->kind == DK_EXPR_IS_NULL;
      if (ch->kind == DK_EXPR_COLUMN) {
        colview cv;
        DK_RETURN_NOT_OK(dk_expr__resolve(c, &ch->col, &cv));
        if (cv.ok)
          for (int64_t i = 0; i < n; i++) out->val[i] = (uint8_t)(cv.ok[i] ^ want_null);
        else
          memset(out->val, !want_null, (size_t)n);
      } else if (ch->kind == DK_EXPR_LITERAL) {
        memset(out->val, (ch->lit.type == DK_LIT_NULL) == want_null, (size_t)n);
      } else if (dk_expr__is_value_kind(ch->kind)) {
        dk_vv v;
        DK_RETURN_NOT_OK(dk_expr__eval_val(&v, c, ch, depth + 1));
        for (int64_t i = 0; i < n; i++) out->val[i] = (uint8_t)(v.ok[i] ^ want_null);
      } else {
        tv t;
        DK_RETURN_NOT_OK(new_tv(c, &t));
        DK_RETURN_NOT_OK(eval_pred(c, ch, &t, depth + 1));
        for (int64_t i = 0; i < n; i++) out->val[i] = (uint8_t)(t.ok[i] ^ want_null);
      }
      memset(out->ok, 1, (size_t)n);
      return DK_OK;
    }
    default:
      return dk__error_set(c->err, DK_INTERNAL, "cannot evaluate expression kind %d", (int)e->kind);
  }
}

static dk_status eval_root(ectx *c, tv *t, const dk_expr *bound,
                           const struct ArrowSchema *schema, const struct ArrowArray *batch,
                           dk_error *err) {
  DK_RETURN_IF(!bound || !batch, DK_INVALID, err, "NULL expression or batch");
  DK_RETURN_IF(!bound->bound, DK_INVALID, err, "expression is not bound (call dk_expr_bind)");
  DK_RETURN_IF(!batch->release || batch->length < 0 || batch->offset < 0, DK_INVALID, err,
               "invalid batch");
  DK_RETURN_IF(schema && schema->n_children != batch->n_children, DK_INVALID, err,
               "batch has %lld columns, schema %lld", (long long)batch->n_children,
               (long long)schema->n_children);
  dk__arena_init(&c->ar, bound->alloc, 64 * 1024);
  c->n = batch->length;
  c->batch = batch;
  c->err = err;
  DK_RETURN_NOT_OK(new_tv(c, t));
  return eval_pred(c, bound, t, 0);
}

dk_status dk_expr_eval(struct ArrowArray *out_bool, const dk_expr *bound,
                       const struct ArrowSchema *schema, const struct ArrowArray *batch,
                       dk_error *err) {
  memset(out_bool, 0, sizeof *out_bool);
  ectx c;
  memset(&c, 0, sizeof c);
  tv t = {0};
  dk_status st = eval_root(&c, &t, bound, schema, batch, err);
  dk_arr a;
  bool a_init = false;
  if (st) goto done;
  dk_atype bt = dk__atype_make(DK_AT_BOOL);
  DK_CHECK_GOTO(dk__arr_init(&a, &bt, NULL, err));
  a_init = true;
  int64_t n = c.n, nulls = 0;
  DK_CHECK_GOTO(dk__arr_reserve(&a, n, err));
  for (int64_t i = 0; i < n; i++) nulls += !t.ok[i];
  if (nulls) DK_CHECK_GOTO(dk__arr_ensure_validity(&a, n, err));
  for (int64_t i = 0; i < n; i++) {
    if (t.val[i]) dk__bit_set(a.values.data, i);
    if (!t.ok[i]) dk__bit_clear(a.validity.data, i);
  }
  a.values.len = (n + 7) / 8;
  dk__arr_advance(&a, n, nulls);
  st = dk__arr_finish(&a, out_bool, err);
cleanup:
done:
  if (a_init) dk__arr_reset(&a);
  dk__arena_dispose(&c.ar);
  return st;
}

dk_status dk_expr_eval_filter(uint8_t *out_mask, int64_t *out_selected, const dk_expr *bound,
                              const struct ArrowSchema *schema, const struct ArrowArray *batch,
                              dk_error *err) {
  ectx c;
  memset(&c, 0, sizeof c);
  tv t = {0};
  dk_status st = eval_root(&c, &t, bound, schema, batch, err);
  if (!st) {
    int64_t sel = 0;
    for (int64_t i = 0; i < c.n; i++) {
      out_mask[i] = t.val[i]; /* invariant: val == 0 where NULL */
      sel += t.val[i];
    }
    if (out_selected) *out_selected = sel;
  }
  dk__arena_dispose(&c.ar);
  return st;
}
