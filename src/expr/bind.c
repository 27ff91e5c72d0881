/*
** bind.c — dk_expr_bind(): resolves column paths against an Arrow struct schema (Spark's
** case-insensitive resolution) and type-checks comparisons with Spark-like implicit
** coercions, producing a tree the evaluator and the statistics checker use without further
** type reasoning.
**
** Every comparison ends up as one of (see dk_cmpk in expr_int.h):
**   column op literal  — the literal converted EXACTLY into the column's physical domain
**                        (int64 for integers/dates/timestamps in the column's unit, int128 at
**                        the column's scale for decimals, double, bytes, bool). A literal that
**                        falls between two representable values or outside the domain turns
**                        the operator into an equivalent one (x < 10.5 -> x <= 10 on an int
**                        column) or into a constant (x = 10.5 is FALSE for every non-null x).
**   column op column   — same domain only.
**   constant           — NULL literal operands, or two literals (folded).
** `value IN (a, b, ...)` becomes `value = a OR value = b OR ...` (identical three-valued
** semantics), `x <=> NULL` becomes `x IS NULL`.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "expr/expr_int.h"

dk_dom dk_expr__dom_of(const dk_atype *t) {
  switch (t->id) {
    case DK_AT_INT8: case DK_AT_INT16: case DK_AT_INT32: case DK_AT_INT64:
    case DK_AT_UINT8: case DK_AT_UINT16: case DK_AT_UINT32:
    case DK_AT_DATE32: case DK_AT_TIMESTAMP: case DK_AT_TIME32: case DK_AT_TIME64:
      return DK_DOM_I64;
    case DK_AT_FLOAT: case DK_AT_DOUBLE:
      return DK_DOM_F64;
    case DK_AT_DECIMAL128:
      return DK_DOM_DEC;
    case DK_AT_STRING: case DK_AT_BINARY:
      return DK_DOM_BYTES;
    case DK_AT_BOOL:
      return DK_DOM_BOOL;
    default:
      return DK_DOM_NONE;
  }
}

dk_cmp_op dk_expr__flip(dk_cmp_op op) {
  switch (op) {
    case DK_CMP_LT: return DK_CMP_GT;
    case DK_CMP_LE: return DK_CMP_GE;
    case DK_CMP_GT: return DK_CMP_LT;
    case DK_CMP_GE: return DK_CMP_LE;
    default: return op;
  }
}

typedef struct binder {
  const struct ArrowSchema *schema;
  const dk_allocator *alloc; /* of every node of the bound tree */
  dk_error *err;
} binder;

/* Printable column name for messages. */
static void col_label(char *buf, size_t cap, const dk_colref *c) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < c->depth && k + 1 < cap; i++) {
    int w = snprintf(buf + k, cap - k, "%s%s", i ? "." : "", c->names[i]);
    if (w < 0) break;
    k += (size_t)w;
  }
}

static const char *type_label(const dk_atype *t, char *buf, size_t cap) {
  if (dk__atype_format(t, buf, cap, NULL) != DK_OK) snprintf(buf, cap, "?");
  return buf;
}

/* ---- columns ---------------------------------------------------------------------------- */

static dk_status bind_column(binder *b, dk_expr **out, const dk_expr *e) {
  const dk_colref *c = &e->col;
  char label[256];
  col_label(label, sizeof label, c);
  dk_expr *n;
  DK_RETURN_NOT_OK(
      dk_expr__column_a(&n, (const char *const *)c->names, (size_t)c->depth, b->alloc, b->err));
  dk_colref *r = &n->col;
  r->idx = dk__calloc(b->alloc, (size_t)c->depth, sizeof *r->idx);
  r->phys = dk__calloc(b->alloc, (size_t)c->depth, sizeof *r->phys);
  dk_status st = DK_OK;
  if (!r->idx || !r->phys) {
    st = dk__error_set(b->err, DK_NOMEM, "out of memory (bind)");
    goto fail;
  }
  const struct ArrowSchema *s = b->schema;
  for (int lvl = 0; lvl < c->depth; lvl++) {
    if (strcmp(s->format, "+s") != 0) {
      st = dk__error_set(b->err, DK_INVALID, "column '%s': '%s' is not a struct", label,
                         c->names[lvl - 1]);
      goto fail;
    }
    int64_t found = -1;
    for (int64_t i = 0; i < s->n_children; i++) {
      const char *fname = s->children[i]->name ? s->children[i]->name : "";
      if (!strcmp(fname, c->names[lvl])) {
        found = i; /* exact match wins */
        break;
      }
      if (!strcasecmp(fname, c->names[lvl])) {
        if (found >= 0) {
          st = dk__error_set(b->err, DK_INVALID, "column '%s' is ambiguous", label);
          goto fail;
        }
        found = i;
      }
    }
    if (found < 0) {
      st = dk__error_set(b->err, DK_NOT_FOUND, "column '%s' not found", label);
      goto fail;
    }
    s = s->children[found];
    r->idx[lvl] = (int32_t)found;
    dk__free(b->alloc, r->names[lvl]);
    r->names[lvl] = dk__strdup(b->alloc, s->name ? s->name : "");
    dk_str phys = dk__schema_metadata_get(s->metadata, "delta.columnMapping.physicalName");
    r->phys[lvl] = phys.ptr && phys.len ? dk__strndup(b->alloc, phys.ptr, phys.len)
                                        : dk__strdup(b->alloc, s->name ? s->name : "");
    if (!r->names[lvl] || !r->phys[lvl]) {
      st = dk__error_set(b->err, DK_NOMEM, "out of memory (bind)");
      goto fail;
    }
  }
  if (s->dictionary) {
    st = dk__error_set(b->err, DK_UNSUPPORTED,
                       "column '%s' is dictionary-encoded; decode it before filtering", label);
    goto fail;
  }
  if (dk__atype_parse(&r->type, s->format, NULL) != DK_OK) {
    st = dk__error_set(b->err, DK_UNSUPPORTED, "column '%s' has unsupported type '%s'", label,
                       s->format);
    goto fail;
  }
  r->dom = dk_expr__dom_of(&r->type);
  n->bound = true;
  *out = n;
  return DK_OK;
fail:
  dk_expr_free(n);
  return st;
}

/* ---- literal helpers ---------------------------------------------------------------------- */

static bool lit_is_int(dk_lit_type t) { return t >= DK_LIT_INT8 && t <= DK_LIT_INT64; }
static bool lit_is_numeric(dk_lit_type t) {
  return lit_is_int(t) || t == DK_LIT_FLOAT || t == DK_LIT_DOUBLE || t == DK_LIT_DECIMAL;
}

static double lit_to_double(const dk_lit *l) {
  if (l->type == DK_LIT_FLOAT || l->type == DK_LIT_DOUBLE) return l->v.d;
  if (lit_is_int(l->type)) return (double)l->v.i;
  char buf[64];
  dk__format_decimal(buf, sizeof buf, l->v.dec, l->scale);
  return strtod(buf, NULL); /* correctly rounded */
}

/* Exact value as (unscaled, scale) for ints and decimals. */
static void lit_to_dec(const dk_lit *l, dk_i128 *v, int *scale) {
  if (lit_is_int(l->type)) {
    *v = l->v.i;
    *scale = 0;
  } else {
    *v = l->v.dec;
    *scale = l->scale;
  }
}

static dk_i128 floor_div(dk_i128 a, dk_i128 b, bool *exact) {
  dk_i128 q = a / b, r = a % b;
  *exact = r == 0;
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1;
  return q;
}

/* Rescales unscaled v at scale `from` to scale `to`: floor + exactness; *range = false when
** the magnitude exceeds 38 digits (then *sign tells the direction). */
static dk_i128 rescale(dk_i128 v, int from, int to, bool *exact, bool *in_range) {
  *exact = true;
  *in_range = true;
  if (to >= from) {
    int k = to - from;
    if (v != 0 && (k > 38 || dk__i128_digits(v) + k > 38)) {
      *in_range = false;
      return 0;
    }
    return v * dk__pow10(k);
  }
  int k = from - to;
  if (k > 38) {
    *exact = v == 0;
    return v < 0 ? -1 : 0;
  }
  return floor_div(v, dk__pow10(k), exact);
}

/* Applies the floor/exactness/range outcome for an integer-valued domain to node n. `lo`/`hi`
** bound the domain. */
static void set_int_domain(dk_expr *n, dk_i128 f, bool exact, bool in_range, int sign,
                           dk_i128 lo, dk_i128 hi, bool is_dec) {
  dk_cmp_op op = n->op;
  int side = 0; /* +1: literal above every value; -1: below */
  if (!in_range) side = sign;
  else if (f > hi || (f == hi && !exact)) side = 1;
  else if (f < lo) side = -1;
  if (side != 0) {
    n->ck = DK_CK_CONST;
    switch (op) {
      case DK_CMP_LT: case DK_CMP_LE: n->cres = side > 0; break;
      case DK_CMP_GT: case DK_CMP_GE: n->cres = side < 0; break;
      case DK_CMP_NE: n->cres = true; break;
      default: n->cres = false; break; /* EQ, NULL_SAFE_EQ */
    }
    return;
  }
  if (!exact) {
    switch (op) {
      case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ:
        n->ck = DK_CK_CONST;
        n->cres = false;
        return;
      case DK_CMP_NE:
        n->ck = DK_CK_CONST;
        n->cres = true;
        return;
      case DK_CMP_LT: case DK_CMP_LE: n->op = DK_CMP_LE; break;
      case DK_CMP_GT: case DK_CMP_GE: n->op = DK_CMP_GT; break;
    }
  }
  n->ck = DK_CK_COL_LIT;
  if (is_dec) n->ldec = f;
  else n->li = (int64_t)f;
}

static int64_t unit_per_second(dk_time_unit u) {
  switch (u) {
    case DK_TU_SECOND: return 1;
    case DK_TU_MILLI: return 1000;
    case DK_TU_MICRO: return 1000000;
    default: return 1000000000;
  }
}

/* ---- comparisons ---------------------------------------------------------------------------- */

static dk_status type_error(binder *b, const dk_colref *c, const dk_lit *l) {
  char label[256], tl[64];
  static const char *const names[] = {"NULL",  "boolean", "tinyint", "smallint", "int",
                                      "bigint", "float", "double", "decimal", "string",
                                      "binary", "date", "timestamp", "timestamp_ntz"};
  col_label(label, sizeof label, c);
  return dk__error_set(b->err, DK_INVALID, "column '%s' of type %s cannot be compared with a %s literal",
                       label, type_label(&c->type, tl, sizeof tl),
                       (unsigned)l->type < DK_ARRAY_LEN(names) ? names[l->type] : "?");
}

/* Parses a string literal for a non-string column (Spark casts the string to the column's
** type); replaces *l (owned copy) on success. */
static dk_status coerce_string_lit(binder *b, const dk_colref *c, dk_lit *l) {
  dk_lit nl;
  memset(&nl, 0, sizeof nl);
  dk_error e2;
  dk_error_init(&e2);
  dk_status st = DK_OK;
  char label[256];
  col_label(label, sizeof label, c);
  switch (c->dom) {
    case DK_DOM_I64:
      if (c->type.id == DK_AT_DATE32) {
        int32_t d;
        st = dk__parse_date(&d, l->bytes, l->len, &e2);
        nl.type = DK_LIT_DATE;
        nl.v.i = d;
      } else if (c->type.id == DK_AT_TIMESTAMP) {
        bool zone;
        st = dk__parse_timestamp(&nl.v.i, &zone, l->bytes, l->len, &e2);
        nl.type = c->type.tz[0] ? DK_LIT_TIMESTAMP : DK_LIT_TIMESTAMP_NTZ;
      } else {
        st = dk__parse_decimal_infer(&nl.v.dec, &nl.precision, &nl.scale, l->bytes, l->len, &e2);
        nl.type = DK_LIT_DECIMAL;
      }
      break;
    case DK_DOM_DEC:
      st = dk__parse_decimal_infer(&nl.v.dec, &nl.precision, &nl.scale, l->bytes, l->len, &e2);
      nl.type = DK_LIT_DECIMAL;
      break;
    case DK_DOM_F64: {
      dk_atype dt = dk__atype_make(DK_AT_DOUBLE);
      st = l->len ? dk__lit_from_text(&nl, l->bytes, l->len, &dt, b->alloc, &e2) : DK_INVALID;
      if (!st && nl.type != DK_LIT_DOUBLE) st = DK_INVALID;
      break;
    }
    case DK_DOM_BOOL:
      if (l->len == 4 && !strncasecmp(l->bytes, "true", 4)) nl.v.b = true;
      else if (!(l->len == 5 && !strncasecmp(l->bytes, "false", 5))) st = DK_INVALID;
      nl.type = DK_LIT_BOOL;
      break;
    default:
      return type_error(b, c, l);
  }
  if (st)
    return dk__error_set(b->err, DK_INVALID, "column '%s': cannot convert '%.*s' to its type",
                         label, (int)DK_MIN(l->len, 64), l->bytes);
  dk__free(b->alloc, l->bytes);
  *l = nl;
  return DK_OK;
}

/* n: a fresh CMP node with children [bound column, literal copy]; converts the literal into
** the column domain and sets ck/op/li/ld/ldec. */
static dk_status coerce_col_lit(binder *b, dk_expr *n) {
  const dk_colref *c = &n->children[0]->col;
  dk_lit *l = &n->children[1]->lit;
  n->dom = c->dom;
  if (l->type == DK_LIT_STRING && c->dom != DK_DOM_BYTES)
    DK_RETURN_NOT_OK(coerce_string_lit(b, c, l));
  switch (c->dom) {
    case DK_DOM_I64: {
      dk_i128 lo = INT64_MIN, hi = INT64_MAX;
      if (c->type.id == DK_AT_DATE32) {
        if (l->type == DK_LIT_DATE) {
          set_int_domain(n, l->v.i, true, true, 0, lo, hi, false);
        } else if (l->type == DK_LIT_TIMESTAMP || l->type == DK_LIT_TIMESTAMP_NTZ) {
          bool exact;
          dk_i128 f = floor_div(l->v.i, (dk_i128)86400 * 1000000, &exact);
          set_int_domain(n, f, exact, true, 0, lo, hi, false);
        } else {
          return type_error(b, c, l);
        }
        return DK_OK;
      }
      if (c->type.id == DK_AT_TIMESTAMP) {
        dk_i128 us;
        if (l->type == DK_LIT_TIMESTAMP || l->type == DK_LIT_TIMESTAMP_NTZ) us = l->v.i;
        else if (l->type == DK_LIT_DATE) us = (dk_i128)l->v.i * 86400 * 1000000;
        else return type_error(b, c, l);
        int64_t ups = unit_per_second(c->type.unit);
        bool exact = true, in_range = true;
        dk_i128 f;
        if (ups >= 1000000) f = us * (ups / 1000000);
        else f = floor_div(us, 1000000 / ups, &exact);
        set_int_domain(n, f, exact, in_range, 0, lo, hi, false);
        return DK_OK;
      }
      if (c->type.id == DK_AT_TIME32 || c->type.id == DK_AT_TIME64) return type_error(b, c, l);
      /* integer columns */
      if (l->type == DK_LIT_FLOAT || l->type == DK_LIT_DOUBLE) {
        n->dom = DK_DOM_F64; /* Spark: int vs double compares as double */
        n->ck = DK_CK_COL_LIT;
        n->ld = l->v.d;
        return DK_OK;
      }
      if (!lit_is_int(l->type) && l->type != DK_LIT_DECIMAL) return type_error(b, c, l);
      dk_i128 v;
      int sc;
      bool exact, in_range;
      lit_to_dec(l, &v, &sc);
      dk_i128 f = rescale(v, sc, 0, &exact, &in_range);
      set_int_domain(n, f, exact, in_range, v < 0 ? -1 : 1, lo, hi, false);
      return DK_OK;
    }
    case DK_DOM_F64:
      if (!lit_is_numeric(l->type)) return type_error(b, c, l);
      n->ck = DK_CK_COL_LIT;
      n->ld = lit_to_double(l);
      return DK_OK;
    case DK_DOM_DEC: {
      if (l->type == DK_LIT_FLOAT || l->type == DK_LIT_DOUBLE) {
        n->dom = DK_DOM_F64; /* Spark: decimal vs double compares as double */
        n->ck = DK_CK_COL_LIT;
        n->ld = l->v.d;
        return DK_OK;
      }
      if (!lit_is_int(l->type) && l->type != DK_LIT_DECIMAL) return type_error(b, c, l);
      dk_i128 v;
      int sc;
      bool exact, in_range;
      lit_to_dec(l, &v, &sc);
      dk_i128 f = rescale(v, sc, c->type.scale, &exact, &in_range);
      dk_i128 lim = dk__pow10(c->type.precision) - 1;
      set_int_domain(n, f, exact, in_range, v < 0 ? -1 : 1, -lim, lim, true);
      return DK_OK;
    }
    case DK_DOM_BYTES:
      if (l->type != DK_LIT_STRING && l->type != DK_LIT_BINARY) return type_error(b, c, l);
      n->ck = DK_CK_COL_LIT;
      return DK_OK;
    case DK_DOM_BOOL:
      if (l->type != DK_LIT_BOOL) return type_error(b, c, l);
      n->ck = DK_CK_COL_LIT;
      n->li = l->v.b;
      return DK_OK;
    default:
      return type_error(b, c, l);
  }
}

/* Three-way compare of two literals (for folding); DK_INVALID on incomparable types. */
static dk_status lit_cmp(binder *b, const dk_lit *x, const dk_lit *y, int *out) {
  if (lit_is_numeric(x->type) && lit_is_numeric(y->type)) {
    if (x->type == DK_LIT_FLOAT || x->type == DK_LIT_DOUBLE || y->type == DK_LIT_FLOAT ||
        y->type == DK_LIT_DOUBLE) {
      double a = lit_to_double(x), c = lit_to_double(y);
      if (isnan(a) || isnan(c)) *out = isnan(a) && isnan(c) ? 0 : isnan(a) ? 1 : -1;
      else *out = a < c ? -1 : a > c;
      return DK_OK;
    }
    dk_i128 a, c;
    int sa, sc;
    bool ex, ra, rc;
    lit_to_dec(x, &a, &sa);
    lit_to_dec(y, &c, &sc);
    int s = DK_MAX(sa, sc);
    a = rescale(a, sa, s, &ex, &ra);
    c = rescale(c, sc, s, &ex, &rc);
    if (!ra || !rc) return dk__error_set(b->err, DK_UNSUPPORTED, "decimal literals too large to compare");
    *out = a < c ? -1 : a > c;
    return DK_OK;
  }
  bool xb = x->type == DK_LIT_STRING || x->type == DK_LIT_BINARY;
  bool yb = y->type == DK_LIT_STRING || y->type == DK_LIT_BINARY;
  if (xb && yb) {
    int r = memcmp(x->bytes, y->bytes, DK_MIN(x->len, y->len));
    *out = r ? (r < 0 ? -1 : 1) : (x->len < y->len ? -1 : x->len > y->len);
    return DK_OK;
  }
  if (x->type == DK_LIT_BOOL && y->type == DK_LIT_BOOL) {
    *out = (int)x->v.b - (int)y->v.b;
    return DK_OK;
  }
  bool xt = x->type == DK_LIT_DATE || x->type == DK_LIT_TIMESTAMP || x->type == DK_LIT_TIMESTAMP_NTZ;
  bool yt = y->type == DK_LIT_DATE || y->type == DK_LIT_TIMESTAMP || y->type == DK_LIT_TIMESTAMP_NTZ;
  if (xt && yt) {
    dk_i128 a = x->type == DK_LIT_DATE ? (dk_i128)x->v.i * 86400000000LL : x->v.i;
    dk_i128 c = y->type == DK_LIT_DATE ? (dk_i128)y->v.i * 86400000000LL : y->v.i;
    *out = a < c ? -1 : a > c;
    return DK_OK;
  }
  return dk__error_set(b->err, DK_INVALID, "cannot compare literals of different types");
}

static bool op_holds(dk_cmp_op op, int c) {
  switch (op) {
    case DK_CMP_EQ: case DK_CMP_NULL_SAFE_EQ: return c == 0;
    case DK_CMP_NE: return c != 0;
    case DK_CMP_LT: return c < 0;
    case DK_CMP_LE: return c <= 0;
    case DK_CMP_GT: return c > 0;
    case DK_CMP_GE: return c >= 0;
  }
  return false;
}

static dk_status bind_pred(binder *b, dk_expr **out, const dk_expr *e, int depth);

static bool is_value(const dk_expr *e) {
  return e->kind == DK_EXPR_COLUMN || e->kind == DK_EXPR_LITERAL;
}

static dk_status bind_value(binder *b, dk_expr **out, const dk_expr *e) {
  if (e->kind == DK_EXPR_COLUMN) return bind_column(b, out, e);
  DK_RETURN_NOT_OK(dk_expr__new_literal_a(out, &e->lit, b->alloc, b->err));
  (*out)->bound = true;
  return DK_OK;
}

static dk_status new_bound(binder *b, dk_expr **out, dk_expr_kind k, size_t nkids) {
  DK_RETURN_NOT_OK(dk_expr__new_a(out, k, nkids, b->alloc, b->err));
  (*out)->bound = true;
  return DK_OK;
}

static dk_status bind_cmp(binder *b, dk_expr **out, dk_cmp_op op, const dk_expr *x,
                          const dk_expr *y, int depth) {
  *out = NULL;
  /* predicate = TRUE/FALSE (and !=): rewrite to the predicate or its negation */
  if (!is_value(x) || !is_value(y)) {
    const dk_expr *p = is_value(x) ? y : x, *v = is_value(x) ? x : y;
    if (v->kind == DK_EXPR_LITERAL && v->lit.type == DK_LIT_BOOL &&
        (op == DK_CMP_EQ || op == DK_CMP_NE) && is_value(x) != is_value(y)) {
      dk_expr *bp;
      DK_RETURN_NOT_OK(bind_pred(b, &bp, p, depth + 1));
      if ((op == DK_CMP_EQ) == v->lit.v.b) {
        *out = bp;
        return DK_OK;
      }
      dk_status st = new_bound(b, out, DK_EXPR_NOT, 1);
      if (st) {
        dk_expr_free(bp);
        return st;
      }
      (*out)->children[0] = bp;
      return DK_OK;
    }
    return dk__error_set(b->err, DK_UNSUPPORTED,
                         "comparisons of predicates are supported only against TRUE/FALSE");
  }
  bool xnull = x->kind == DK_EXPR_LITERAL && x->lit.type == DK_LIT_NULL;
  bool ynull = y->kind == DK_EXPR_LITERAL && y->lit.type == DK_LIT_NULL;
  if (op == DK_CMP_NULL_SAFE_EQ && (xnull || ynull)) {
    if (xnull && ynull) {
      dk_lit t = {.type = DK_LIT_BOOL, .v.b = true};
      DK_RETURN_NOT_OK(dk_expr__new_literal_a(out, &t, b->alloc, b->err));
      (*out)->bound = true;
      return DK_OK;
    }
    dk_expr *v;
    DK_RETURN_NOT_OK(bind_value(b, &v, xnull ? y : x));
    dk_status st = new_bound(b, out, DK_EXPR_IS_NULL, 1);
    if (st) {
      dk_expr_free(v);
      return st;
    }
    (*out)->children[0] = v;
    return DK_OK;
  }
  /* column on the left */
  if (x->kind == DK_EXPR_LITERAL && y->kind == DK_EXPR_COLUMN) {
    const dk_expr *t = x;
    x = y;
    y = t;
    op = dk_expr__flip(op);
    bool tb = xnull;
    xnull = ynull;
    ynull = tb;
  }
  dk_expr *n;
  DK_RETURN_NOT_OK(new_bound(b, &n, DK_EXPR_CMP, 2));
  n->op = op;
  dk_status st = bind_value(b, &n->children[0], x);
  if (!st) st = bind_value(b, &n->children[1], y);
  if (st) goto fail;
  dk_expr *l = n->children[0], *r = n->children[1];
  if (xnull || ynull) {
    n->ck = DK_CK_NULL;
  } else if (l->kind == DK_EXPR_COLUMN && r->kind == DK_EXPR_LITERAL) {
    st = coerce_col_lit(b, n);
  } else if (l->kind == DK_EXPR_COLUMN && r->kind == DK_EXPR_COLUMN) {
    const dk_colref *a = &l->col, *c = &r->col;
    bool same = a->dom == c->dom && a->dom != DK_DOM_NONE;
    if (same && a->dom == DK_DOM_I64) {
      bool ai = a->type.id != DK_AT_DATE32 && a->type.id != DK_AT_TIMESTAMP;
      bool ci = c->type.id != DK_AT_DATE32 && c->type.id != DK_AT_TIMESTAMP;
      same = (ai && ci) || (a->type.id == c->type.id &&
                            (a->type.id != DK_AT_TIMESTAMP || a->type.unit == c->type.unit));
    }
    if (same && a->dom == DK_DOM_DEC) same = a->type.scale == c->type.scale;
    if (!same) {
      char la[256], lc[256];
      col_label(la, sizeof la, a);
      col_label(lc, sizeof lc, c);
      st = dk__error_set(b->err, DK_UNSUPPORTED, "cannot compare column '%s' with column '%s' "
                         "(different types)", la, lc);
      goto fail;
    }
    n->ck = DK_CK_COL_COL;
    n->dom = a->dom;
  } else {
    int c = 0;
    st = lit_cmp(b, &l->lit, &r->lit, &c);
    n->ck = DK_CK_LIT_LIT;
    n->cres = op_holds(op, c);
  }
  if (st) goto fail;
  *out = n;
  return DK_OK;
fail:
  dk_expr_free(n);
  return st;
}

/* ---- predicates ----------------------------------------------------------------------------- */

static dk_status bind_pred(binder *b, dk_expr **out, const dk_expr *e, int depth) {
  *out = NULL;
  DK_RETURN_IF(depth > DK_EXPR_MAX_DEPTH * 2, DK_INVALID, b->err, "expression nests too deeply");
  dk_status st = DK_OK;
  dk_expr *n = NULL;
  switch (e->kind) {
    case DK_EXPR_COLUMN: {
      DK_RETURN_NOT_OK(bind_column(b, &n, e));
      if (n->col.dom != DK_DOM_BOOL) {
        char label[256], tl[64];
        col_label(label, sizeof label, &n->col);
        st = dk__error_set(b->err, DK_INVALID, "column '%s' of type %s is not a boolean predicate",
                           label, type_label(&n->col.type, tl, sizeof tl));
        dk_expr_free(n);
        return st;
      }
      *out = n;
      return DK_OK;
    }
    case DK_EXPR_LITERAL:
      DK_RETURN_IF(e->lit.type != DK_LIT_BOOL && e->lit.type != DK_LIT_NULL, DK_INVALID, b->err,
                   "a non-boolean literal is not a predicate");
      return bind_value(b, out, e);
    case DK_EXPR_CMP:
      return bind_cmp(b, out, e->op, e->children[0], e->children[1], depth);
    case DK_EXPR_AND:
    case DK_EXPR_OR:
    case DK_EXPR_NOT:
      DK_RETURN_NOT_OK(new_bound(b, &n, e->kind, e->n_children));
      for (size_t i = 0; i < e->n_children && !st; i++)
        st = bind_pred(b, &n->children[i], e->children[i], depth + 1);
      break;
    case DK_EXPR_IS_NULL:
    case DK_EXPR_IS_NOT_NULL:
      DK_RETURN_NOT_OK(new_bound(b, &n, e->kind, 1));
      if (is_value(e->children[0])) st = bind_value(b, &n->children[0], e->children[0]);
      else st = bind_pred(b, &n->children[0], e->children[0], depth + 1);
      break;
    case DK_EXPR_IN: {
      size_t k = e->n_children - 1;
      DK_RETURN_NOT_OK(new_bound(b, &n, k == 1 ? DK_EXPR_AND : DK_EXPR_OR, k));
      for (size_t i = 0; i < k && !st; i++)
        st = bind_cmp(b, &n->children[i], DK_CMP_EQ, e->children[0], e->children[i + 1], depth);
      if (!st && k == 1) { /* single item: just the comparison */
        dk_expr *c = n->children[0];
        n->children[0] = NULL;
        n->n_children = 0;
        dk_expr_free(n);
        *out = c;
        return DK_OK;
      }
      break;
    }
    case DK_EXPR_STARTS_WITH:
    case DK_EXPR_LIKE: {
      const dk_expr *v = e->children[0];
      if (v->kind == DK_EXPR_LITERAL) {
        dk_lit r = {.type = DK_LIT_NULL};
        if (v->lit.type == DK_LIT_STRING || v->lit.type == DK_LIT_BINARY) {
          const dk_lit *pl = &e->children[1]->lit;
          r.type = DK_LIT_BOOL;
          if (e->kind == DK_EXPR_STARTS_WITH) {
            r.v.b = v->lit.len >= pl->len && !memcmp(v->lit.bytes, pl->bytes, pl->len);
          } else {
            int16_t *codes = dk__malloc(b->alloc, (pl->len ? pl->len : 1) * sizeof *codes);
            size_t m;
            if (!codes) return dk__error_set(b->err, DK_NOMEM, "out of memory (bind)");
            bool okp = dk__like_compile(pl->bytes, pl->len, codes, &m);
            r.v.b = okp && dk__like_match((const uint8_t *)v->lit.bytes, v->lit.len, codes, m);
            dk__free(b->alloc, codes);
            if (!okp) return dk__error_set(b->err, DK_INVALID, "invalid LIKE pattern");
          }
        } else if (v->lit.type != DK_LIT_NULL) {
          return dk__error_set(b->err, DK_INVALID, "STARTS_WITH needs a string value");
        }
        DK_RETURN_NOT_OK(dk_expr__new_literal_a(out, &r, b->alloc, b->err));
        (*out)->bound = true;
        return DK_OK;
      }
      if (v->kind != DK_EXPR_COLUMN)
        return dk__error_set(b->err, DK_UNSUPPORTED, "STARTS_WITH needs a column or literal");
      DK_RETURN_NOT_OK(new_bound(b, &n, e->kind, 2));
      st = bind_column(b, &n->children[0], v);
      if (!st && n->children[0]->col.dom != DK_DOM_BYTES) {
        char label[256];
        col_label(label, sizeof label, &n->children[0]->col);
        st = dk__error_set(b->err, DK_INVALID, "column '%s' is not a string (STARTS_WITH/LIKE)",
                           label);
      }
      if (!st) st = bind_value(b, &n->children[1], e->children[1]);
      break;
    }
    default:
      return dk__error_set(b->err, DK_INTERNAL, "unknown expression kind %d", (int)e->kind);
  }
  if (st) {
    dk_expr_free(n);
    return st;
  }
  *out = n;
  return DK_OK;
}

dk_status dk_expr_bind(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                       dk_error *err) {
  return dk_expr__bind(out, e, schema, NULL, err);
}

dk_status dk_expr__bind(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                        const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!e || !schema || !schema->format, DK_INVALID, err, "NULL expression or schema");
  DK_RETURN_IF(strcmp(schema->format, "+s") != 0, DK_INVALID, err,
               "bind needs a struct schema (format '+s'), got '%s'", schema->format);
  binder b = {.schema = schema, .alloc = alloc, .err = err};
  return bind_pred(&b, out, e, 0);
}
