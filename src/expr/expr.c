/*
** expr.c — dk_expr nodes: construction (constructors consume their children), reference
** counting, introspection, printing in the dk_expr_parse() grammar, and conjunct splitting.
**
** Semantics are Spark SQL's (see include/dk/expr.h); printing is designed so that
** parse(to_string(e)) builds a tree that prints identically.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "expr/expr_int.h"

/* ---- nodes ------------------------------------------------------------------------------ */

dk_status dk_expr__new_a(dk_expr **out, dk_expr_kind kind, size_t n_children,
                         const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  dk_expr *e = dk__calloc(alloc, 1, sizeof *e);
  if (!e) return dk__error_set(err, DK_NOMEM, "out of memory (expression)");
  e->refcount = 1;
  e->alloc = alloc;
  e->kind = kind;
  if (n_children) {
    e->children = dk__calloc(alloc, n_children, sizeof *e->children);
    if (!e->children) {
      dk__free(alloc, e);
      return dk__error_set(err, DK_NOMEM, "out of memory (expression)");
    }
  }
  e->n_children = n_children;
  *out = e;
  return DK_OK;
}

dk_status dk_expr__new(dk_expr **out, dk_expr_kind kind, size_t n_children, dk_error *err) {
  return dk_expr__new_a(out, kind, n_children, NULL, err);
}

static void colref_dispose(dk_colref *c, const dk_allocator *a) {
  for (int i = 0; i < c->depth; i++) {
    dk__free(a, c->names ? c->names[i] : NULL);
    dk__free(a, c->phys ? c->phys[i] : NULL);
  }
  dk__free(a, c->names);
  dk__free(a, c->phys);
  dk__free(a, c->idx);
  memset(c, 0, sizeof *c);
}

dk_expr *dk_expr_ref(dk_expr *e) {
  if (e) e->refcount++;
  return e;
}

void dk_expr_free(dk_expr *e) {
  if (!e || --e->refcount > 0) return;
  const dk_allocator *a = e->alloc;
  for (size_t i = 0; i < e->n_children; i++) dk_expr_free(e->children[i]);
  dk__free(a, e->children);
  colref_dispose(&e->col, a);
  dk__free(a, e->lit.bytes);
  dk__free(a, e);
}

dk_status dk_expr__lit_copy(dk_lit *dst, const dk_lit *src, dk_error *err) {
  return dk_expr__lit_copy_a(dst, src, NULL, err);
}

dk_status dk_expr__lit_copy_a(dk_lit *dst, const dk_lit *src, const dk_allocator *alloc,
                              dk_error *err) {
  *dst = *src;
  dst->bytes = NULL;
  if (src->type == DK_LIT_STRING || src->type == DK_LIT_BINARY) {
    dst->bytes = dk__malloc(alloc, src->len + 1);
    if (!dst->bytes) return dk__error_set(err, DK_NOMEM, "out of memory (literal)");
    if (src->len) memcpy(dst->bytes, src->bytes, src->len);
    dst->bytes[src->len] = 0;
  }
  return DK_OK;
}

dk_status dk_expr__new_literal(dk_expr **out, const dk_lit *lit, dk_error *err) {
  return dk_expr__new_literal_a(out, lit, NULL, err);
}

dk_status dk_expr__new_literal_a(dk_expr **out, const dk_lit *lit, const dk_allocator *alloc,
                                 dk_error *err) {
  DK_RETURN_NOT_OK(dk_expr__new_a(out, DK_EXPR_LITERAL, 0, alloc, err));
  dk_status st = dk_expr__lit_copy_a(&(*out)->lit, lit, alloc, err);
  if (st) {
    dk_expr_free(*out);
    *out = NULL;
  }
  return st;
}

/* Takes ownership of names[] (array and strings, allocated with alloc) even on failure. */
dk_status dk_expr__new_column_a(dk_expr **out, char **names, int depth,
                                const dk_allocator *alloc, dk_error *err) {
  dk_status st = dk_expr__new_a(out, DK_EXPR_COLUMN, 0, alloc, err);
  if (st) {
    for (int i = 0; i < depth; i++) dk__free(alloc, names[i]);
    dk__free(alloc, names);
    return st;
  }
  (*out)->col.depth = depth;
  (*out)->col.names = names;
  return DK_OK;
}

/* ---- public constructors ------------------------------------------------------------------ */

dk_status dk_expr_column(dk_expr **out, const char *const *path, size_t n, dk_error *err) {
  return dk_expr__column_a(out, path, n, NULL, err);
}

dk_status dk_expr__column_a(dk_expr **out, const char *const *path, size_t n,
                            const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(n == 0 || n > DK_EXPR_MAX_DEPTH || !path, DK_INVALID, err,
               "column path must have 1..%d names", DK_EXPR_MAX_DEPTH);
  char **names = dk__calloc(alloc, n, sizeof *names);
  dk_status st = names ? DK_OK : DK_NOMEM;
  for (size_t i = 0; !st && i < n; i++)
    if (!path[i] || !(names[i] = dk__strdup(alloc, path[i]))) st = path[i] ? DK_NOMEM : DK_INVALID;
  if (!st) st = dk_expr__new_a(out, DK_EXPR_COLUMN, 0, alloc, err);
  if (st) {
    for (size_t k = 0; names && k < n; k++) dk__free(alloc, names[k]);
    dk__free(alloc, names);
    return st == DK_NOMEM ? dk__error_set(err, DK_NOMEM, "out of memory (column)")
                          : dk__error_set(err, st, "bad column path");
  }
  (*out)->col.depth = (int)n;
  (*out)->col.names = names;
  return DK_OK;
}

static dk_status lit_simple(dk_expr **out, dk_lit_type t, int64_t i, double d, dk_error *err) {
  dk_lit l;
  memset(&l, 0, sizeof l);
  l.type = t;
  if (t == DK_LIT_FLOAT || t == DK_LIT_DOUBLE)
    l.v.d = d;
  else
    l.v.i = i;
  return dk_expr__new_literal(out, &l, err);
}

dk_status dk_expr_literal_null(dk_expr **out, dk_error *err) {
  return lit_simple(out, DK_LIT_NULL, 0, 0, err);
}
dk_status dk_expr_literal_bool(dk_expr **out, bool v, dk_error *err) {
  dk_lit l;
  memset(&l, 0, sizeof l);
  l.type = DK_LIT_BOOL;
  l.v.b = v;
  return dk_expr__new_literal(out, &l, err);
}
dk_status dk_expr_literal_int8(dk_expr **out, int8_t v, dk_error *err) {
  return lit_simple(out, DK_LIT_INT8, v, 0, err);
}
dk_status dk_expr_literal_int16(dk_expr **out, int16_t v, dk_error *err) {
  return lit_simple(out, DK_LIT_INT16, v, 0, err);
}
dk_status dk_expr_literal_int32(dk_expr **out, int32_t v, dk_error *err) {
  return lit_simple(out, DK_LIT_INT32, v, 0, err);
}
dk_status dk_expr_literal_int64(dk_expr **out, int64_t v, dk_error *err) {
  return lit_simple(out, DK_LIT_INT64, v, 0, err);
}
dk_status dk_expr_literal_float(dk_expr **out, float v, dk_error *err) {
  return lit_simple(out, DK_LIT_FLOAT, 0, (double)v, err);
}
dk_status dk_expr_literal_double(dk_expr **out, double v, dk_error *err) {
  return lit_simple(out, DK_LIT_DOUBLE, 0, v, err);
}
dk_status dk_expr_literal_date(dk_expr **out, int32_t days, dk_error *err) {
  return lit_simple(out, DK_LIT_DATE, days, 0, err);
}
dk_status dk_expr_literal_timestamp(dk_expr **out, int64_t micros_utc, dk_error *err) {
  return lit_simple(out, DK_LIT_TIMESTAMP, micros_utc, 0, err);
}
dk_status dk_expr_literal_timestamp_ntz(dk_expr **out, int64_t micros, dk_error *err) {
  return lit_simple(out, DK_LIT_TIMESTAMP_NTZ, micros, 0, err);
}

dk_status dk_expr_literal_decimal(dk_expr **out, int64_t hi, uint64_t lo, int precision,
                                  int scale, dk_error *err) {
  *out = NULL;
  dk_i128 v = (dk_i128)(((unsigned __int128)(uint64_t)hi << 64) | lo);
  DK_RETURN_IF(precision < 1 || precision > 38 || scale < 0 || scale > precision, DK_INVALID,
               err, "invalid decimal(%d,%d)", precision, scale);
  DK_RETURN_IF(!dk__i128_fits_precision(v, precision), DK_INVALID, err,
               "decimal literal does not fit decimal(%d,%d)", precision, scale);
  dk_lit l;
  memset(&l, 0, sizeof l);
  l.type = DK_LIT_DECIMAL;
  l.v.dec = v;
  l.precision = precision;
  l.scale = scale;
  return dk_expr__new_literal(out, &l, err);
}

dk_status dk_expr_literal_decimal_text(dk_expr **out, const char *text, int precision,
                                       int scale, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(precision < 1 || precision > 38 || scale < 0 || scale > precision, DK_INVALID,
               err, "invalid decimal(%d,%d)", precision, scale);
  DK_RETURN_IF(!text, DK_INVALID, err, "decimal text is NULL");
  dk_i128 v;
  DK_RETURN_NOT_OK(dk__parse_decimal(&v, text, strlen(text), scale, err));
  DK_RETURN_IF(!dk__i128_fits_precision(v, precision), DK_INVALID, err,
               "decimal '%s' does not fit decimal(%d,%d)", text, precision, scale);
  unsigned __int128 u = (unsigned __int128)v;
  return dk_expr_literal_decimal(out, (int64_t)(uint64_t)(u >> 64), (uint64_t)u, precision,
                                 scale, err);
}

dk_status dk_expr__lit_bytes_a(dk_expr **out, dk_lit_type t, const void *p, size_t len,
                               const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!p && len, DK_INVALID, err, "NULL bytes for a literal");
  if (t == DK_LIT_STRING) {
    DK_RETURN_IF(!dk__utf8_valid(p, len), DK_INVALID, err, "string literal is not valid UTF-8");
    DK_RETURN_IF(len && memchr(p, 0, len), DK_INVALID, err, "string literal contains NUL");
  }
  dk_lit l;
  memset(&l, 0, sizeof l);
  l.type = t;
  l.bytes = (char *)(uintptr_t)p;
  l.len = len;
  return dk_expr__new_literal_a(out, &l, alloc, err);
}

dk_status dk_expr_literal_string(dk_expr **out, const char *s, size_t len, dk_error *err) {
  return dk_expr__lit_bytes_a(out, DK_LIT_STRING, s, len, NULL, err);
}
dk_status dk_expr_literal_binary(dk_expr **out, const void *p, size_t len, dk_error *err) {
  return dk_expr__lit_bytes_a(out, DK_LIT_BINARY, p, len, NULL, err);
}

static dk_status node_with(dk_expr **out, dk_expr_kind kind, dk_expr *const *kids, size_t n,
                           dk_error *err) {
  *out = NULL;
  dk_status st = DK_OK;
  for (size_t i = 0; i < n; i++)
    if (!kids[i]) st = dk__error_set(err, DK_INVALID, "NULL child expression");
  if (!st) st = dk_expr__new_a(out, kind, n, kids[0]->alloc, err); /* n >= 1 */
  if (st) {
    for (size_t i = 0; i < n; i++) dk_expr_free(kids[i]);
    return st;
  }
  for (size_t i = 0; i < n; i++) (*out)->children[i] = kids[i];
  return DK_OK;
}

dk_status dk_expr_cmp(dk_expr **out, dk_cmp_op op, dk_expr *a, dk_expr *b, dk_error *err) {
  dk_expr *k[2] = {a, b};
  if (op < DK_CMP_EQ || op > DK_CMP_NULL_SAFE_EQ) {
    dk_expr_free(a);
    dk_expr_free(b);
    *out = NULL;
    return dk__error_set(err, DK_INVALID, "unknown comparison operator %d", (int)op);
  }
  DK_RETURN_NOT_OK(node_with(out, DK_EXPR_CMP, k, 2, err));
  (*out)->op = op;
  return DK_OK;
}

dk_status dk_expr_and(dk_expr **out, dk_expr *a, dk_expr *b, dk_error *err) {
  dk_expr *k[2] = {a, b};
  return node_with(out, DK_EXPR_AND, k, 2, err);
}
dk_status dk_expr_or(dk_expr **out, dk_expr *a, dk_expr *b, dk_error *err) {
  dk_expr *k[2] = {a, b};
  return node_with(out, DK_EXPR_OR, k, 2, err);
}

static dk_status junction_n(dk_expr **out, dk_expr_kind kind, dk_expr *const *items, size_t n,
                            dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(n == 0 || !items, DK_INVALID, err, "AND/OR needs at least one operand");
  if (n == 1) {
    DK_RETURN_IF(!items[0], DK_INVALID, err, "NULL child expression");
    *out = items[0];
    return DK_OK;
  }
  return node_with(out, kind, items, n, err);
}

dk_status dk_expr_and_n(dk_expr **out, dk_expr *const *items, size_t n, dk_error *err) {
  return junction_n(out, DK_EXPR_AND, items, n, err);
}
dk_status dk_expr_or_n(dk_expr **out, dk_expr *const *items, size_t n, dk_error *err) {
  return junction_n(out, DK_EXPR_OR, items, n, err);
}
dk_status dk_expr_not(dk_expr **out, dk_expr *a, dk_error *err) {
  return node_with(out, DK_EXPR_NOT, &a, 1, err);
}
dk_status dk_expr_is_null(dk_expr **out, dk_expr *a, bool negated, dk_error *err) {
  return node_with(out, negated ? DK_EXPR_IS_NOT_NULL : DK_EXPR_IS_NULL, &a, 1, err);
}

dk_status dk_expr_in(dk_expr **out, dk_expr *value, dk_expr *const *list, size_t n,
                     dk_error *err) {
  *out = NULL;
  dk_status st = DK_OK;
  if (n == 0 || !list) st = dk__error_set(err, DK_INVALID, "IN needs at least one item");
  if (!st && !value) st = dk__error_set(err, DK_INVALID, "NULL child expression");
  for (size_t i = 0; !st && i < n; i++)
    if (!list[i]) st = dk__error_set(err, DK_INVALID, "NULL child expression");
  if (!st) st = dk_expr__new_a(out, DK_EXPR_IN, n + 1, value->alloc, err);
  if (st) {
    dk_expr_free(value);
    for (size_t i = 0; list && i < n; i++) dk_expr_free(list[i]);
    return st;
  }
  (*out)->children[0] = value;
  for (size_t i = 0; i < n; i++) (*out)->children[i + 1] = list[i];
  return DK_OK;
}

dk_status dk_expr_starts_with(dk_expr **out, dk_expr *value, const char *prefix, size_t len,
                              dk_error *err) {
  *out = NULL;
  dk_expr *lit = NULL;
  dk_status st = value ? dk_expr__lit_bytes_a(&lit, DK_LIT_STRING, prefix, len, value->alloc, err)
                       : dk__error_set(err, DK_INVALID, "NULL child expression");
  if (st) {
    dk_expr_free(value);
    return st;
  }
  dk_expr *k[2] = {value, lit};
  return node_with(out, DK_EXPR_STARTS_WITH, k, 2, err);
}

dk_status dk_expr_like(dk_expr **out, dk_expr *value, const char *pattern, size_t len,
                       dk_error *err) {
  *out = NULL;
  if (!value || (!pattern && len)) {
    dk_expr_free(value);
    return dk__error_set(err, DK_INVALID, "NULL LIKE operand");
  }
  const dk_allocator *a = value->alloc;
  int16_t *codes = dk__malloc(a, (len ? len : 1) * sizeof *codes);
  char *lit = dk__malloc(a, len + 1);
  size_t m = 0;
  dk_status st = DK_OK;
  if (!codes || !lit) st = dk__error_set(err, DK_NOMEM, "out of memory (LIKE)");
  else if (!dk__like_compile(pattern, len, codes, &m))
    st = dk__error_set(err, DK_INVALID, "LIKE pattern: '\\' must precede '%%', '_' or '\\'");
  if (st) {
    dk__free(a, codes);
    dk__free(a, lit);
    dk_expr_free(value);
    return st;
  }
  size_t nlit = 0, nwild = 0;
  bool trailing_seq = m > 0 && codes[m - 1] == DK_LIKE_ANY_SEQ;
  for (size_t i = 0; i < m; i++) {
    if (codes[i] < 0) nwild++;
    else lit[nlit++] = (char)codes[i];
  }
  lit[nlit] = 0;
  dk__free(a, codes);
  if (nwild == 0) { /* no wildcard: equality */
    dk_expr *l = NULL;
    st = dk_expr__lit_bytes_a(&l, DK_LIT_STRING, lit, nlit, a, err);
    dk__free(a, lit);
    if (st) {
      dk_expr_free(value);
      return st;
    }
    return dk_expr_cmp(out, DK_CMP_EQ, value, l, err);
  }
  if (nwild == 1 && trailing_seq) { /* 'prefix%' */
    st = dk_expr_starts_with(out, value, lit, nlit, err);
    dk__free(a, lit);
    return st;
  }
  dk__free(a, lit);
  dk_expr *pl = NULL;
  st = dk_expr__lit_bytes_a(&pl, DK_LIT_STRING, pattern, len, a, err);
  if (st) {
    dk_expr_free(value);
    return st;
  }
  dk_expr *k[2] = {value, pl};
  return node_with(out, DK_EXPR_LIKE, k, 2, err);
}

/* ---- introspection ------------------------------------------------------------------------ */

dk_expr_kind dk_expr_get_kind(const dk_expr *e) { return e ? e->kind : (dk_expr_kind)0; }
size_t dk_expr_num_children(const dk_expr *e) { return e ? e->n_children : 0; }
const dk_expr *dk_expr_child(const dk_expr *e, size_t i) {
  return e && i < e->n_children ? e->children[i] : NULL;
}
dk_cmp_op dk_expr_get_cmp_op(const dk_expr *e) {
  return e && e->kind == DK_EXPR_CMP ? e->op : (dk_cmp_op)0;
}
size_t dk_expr_column_depth(const dk_expr *e) {
  return e && e->kind == DK_EXPR_COLUMN ? (size_t)e->col.depth : 0;
}
const char *dk_expr_column_name(const dk_expr *e, size_t i) {
  return e && e->kind == DK_EXPR_COLUMN && i < (size_t)e->col.depth ? e->col.names[i] : NULL;
}
dk_lit_type dk_expr_literal_type(const dk_expr *e) {
  return e && e->kind == DK_EXPR_LITERAL ? e->lit.type : DK_LIT_NULL;
}
bool dk_expr_is_bound(const dk_expr *e) { return e && e->bound; }

/* ---- printing ------------------------------------------------------------------------------ */

static const char *const reserved_words[] = {"AND", "OR", "NOT", "IS", "NULL",
                                             "IN",  "LIKE", "TRUE", "FALSE"};

bool dk_expr__ident_is_plain(const char *s, size_t n) {
  if (n == 0 || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z'))) return false;
  for (size_t i = 1; i < n; i++) {
    char c = s[i];
    if (!(c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')))
      return false;
  }
  for (size_t i = 0; i < DK_ARRAY_LEN(reserved_words); i++)
    if (strlen(reserved_words[i]) == n && !strncasecmp(reserved_words[i], s, n)) return false;
  return true;
}

static dk_status put_quoted(dk_buf *b, const char *s, size_t n, char q, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(b, q, err));
  for (size_t i = 0; i < n; i++) {
    if (s[i] == q) DK_RETURN_NOT_OK(dk__buf_putc(b, q, err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, s[i], err));
  }
  return dk__buf_putc(b, q, err);
}

/* Shortest "%.Ng" text that reads back as exactly d. */
static void format_double(char *buf, size_t cap, double d, bool is_float) {
  if (isnan(d)) {
    snprintf(buf, cap, "NaN");
    return;
  }
  if (isinf(d)) {
    snprintf(buf, cap, d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, cap, "%.*g", p, d);
    double back = strtod(buf, NULL);
    if (is_float ? (float)back == (float)d : back == d) {
      if (d == 0 && signbit(d) && buf[0] != '-') continue;
      return;
    }
  }
  snprintf(buf, cap, "%.17g", d);
}

static dk_status print_lit(dk_buf *b, const dk_lit *l, dk_error *err) {
  char tmp[96];
  switch (l->type) {
    case DK_LIT_NULL:
      return dk__buf_puts(b, "NULL", err);
    case DK_LIT_BOOL:
      return dk__buf_puts(b, l->v.b ? "TRUE" : "FALSE", err);
    case DK_LIT_INT8:
      return dk__buf_printf(b, err, "TINYINT '%lld'", (long long)l->v.i);
    case DK_LIT_INT16:
      return dk__buf_printf(b, err, "SMALLINT '%lld'", (long long)l->v.i);
    case DK_LIT_INT32:
      return dk__buf_printf(b, err, "INT '%lld'", (long long)l->v.i);
    case DK_LIT_INT64:
      return dk__buf_printf(b, err, "%lld", (long long)l->v.i);
    case DK_LIT_FLOAT:
      format_double(tmp, sizeof tmp, l->v.d, true);
      return dk__buf_printf(b, err, "FLOAT '%s'", tmp);
    case DK_LIT_DOUBLE:
      format_double(tmp, sizeof tmp, l->v.d, false);
      return dk__buf_printf(b, err, "DOUBLE '%s'", tmp);
    case DK_LIT_DECIMAL: {
      dk__format_decimal(tmp, sizeof tmp, l->v.dec, l->scale);
      int inferred = DK_MAX(dk__i128_digits(l->v.dec), l->scale);
      if (l->scale > 0 && inferred == l->precision) return dk__buf_puts(b, tmp, err);
      return dk__buf_printf(b, err, "DECIMAL(%d,%d) '%s'", l->precision, l->scale, tmp);
    }
    case DK_LIT_STRING:
      return put_quoted(b, l->bytes, l->len, '\'', err);
    case DK_LIT_BINARY: {
      DK_RETURN_NOT_OK(dk__buf_puts(b, "X'", err));
      for (size_t i = 0; i < l->len; i++)
        DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%02x", (unsigned char)l->bytes[i]));
      return dk__buf_putc(b, '\'', err);
    }
    case DK_LIT_DATE:
      dk__format_date(tmp, sizeof tmp, l->v.i);
      return dk__buf_printf(b, err, "DATE '%s'", tmp);
    case DK_LIT_TIMESTAMP:
    case DK_LIT_TIMESTAMP_NTZ:
      dk__format_timestamp(tmp, sizeof tmp, l->v.i);
      return dk__buf_printf(b, err, "%s '%s'",
                           l->type == DK_LIT_TIMESTAMP ? "TIMESTAMP" : "TIMESTAMP_NTZ", tmp);
  }
  return dk__error_set(err, DK_INTERNAL, "unknown literal type %d", (int)l->type);
}

static const char *op_text(dk_cmp_op op) {
  switch (op) {
    case DK_CMP_EQ: return "=";
    case DK_CMP_NE: return "!=";
    case DK_CMP_LT: return "<";
    case DK_CMP_LE: return "<=";
    case DK_CMP_GT: return ">";
    case DK_CMP_GE: return ">=";
    case DK_CMP_NULL_SAFE_EQ: return "<=>";
  }
  return "?";
}

static bool is_atom(const dk_expr *e) {
  return e->kind == DK_EXPR_COLUMN || e->kind == DK_EXPR_LITERAL ||
         e->kind == DK_EXPR_STARTS_WITH;
}

static dk_status print_expr(dk_buf *b, const dk_expr *e, int depth, dk_error *err);

static dk_status print_operand(dk_buf *b, const dk_expr *e, int depth, dk_error *err) {
  if (is_atom(e)) return print_expr(b, e, depth, err);
  DK_RETURN_NOT_OK(dk__buf_putc(b, '(', err));
  DK_RETURN_NOT_OK(print_expr(b, e, depth, err));
  return dk__buf_putc(b, ')', err);
}

static dk_status print_expr(dk_buf *b, const dk_expr *e, int depth, dk_error *err) {
  DK_RETURN_IF(depth > DK_EXPR_MAX_DEPTH * 2, DK_INVALID, err, "expression nests too deeply");
  switch (e->kind) {
    case DK_EXPR_COLUMN:
      for (int i = 0; i < e->col.depth; i++) {
        if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, '.', err));
        const char *n = e->col.names[i];
        if (dk_expr__ident_is_plain(n, strlen(n)))
          DK_RETURN_NOT_OK(dk__buf_puts(b, n, err));
        else
          DK_RETURN_NOT_OK(put_quoted(b, n, strlen(n), '`', err));
      }
      return DK_OK;
    case DK_EXPR_LITERAL:
      return print_lit(b, &e->lit, err);
    case DK_EXPR_CMP:
      DK_RETURN_NOT_OK(print_operand(b, e->children[0], depth + 1, err));
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, " %s ", op_text(e->op)));
      return print_operand(b, e->children[1], depth + 1, err);
    case DK_EXPR_AND:
    case DK_EXPR_OR:
      for (size_t i = 0; i < e->n_children; i++) {
        if (i) DK_RETURN_NOT_OK(dk__buf_puts(b, e->kind == DK_EXPR_AND ? " AND " : " OR ", err));
        const dk_expr *c = e->children[i];
        if (c->kind == DK_EXPR_AND || c->kind == DK_EXPR_OR)
          DK_RETURN_NOT_OK(print_operand(b, c, depth + 1, err));
        else
          DK_RETURN_NOT_OK(print_expr(b, c, depth + 1, err));
      }
      return DK_OK;
    case DK_EXPR_NOT:
      DK_RETURN_NOT_OK(dk__buf_puts(b, "NOT ", err));
      return print_operand(b, e->children[0], depth + 1, err);
    case DK_EXPR_IS_NULL:
    case DK_EXPR_IS_NOT_NULL:
      DK_RETURN_NOT_OK(print_operand(b, e->children[0], depth + 1, err));
      return dk__buf_puts(b, e->kind == DK_EXPR_IS_NULL ? " IS NULL" : " IS NOT NULL", err);
    case DK_EXPR_IN:
      DK_RETURN_NOT_OK(print_operand(b, e->children[0], depth + 1, err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, " IN (", err));
      for (size_t i = 1; i < e->n_children; i++) {
        if (i > 1) DK_RETURN_NOT_OK(dk__buf_puts(b, ", ", err));
        DK_RETURN_NOT_OK(print_operand(b, e->children[i], depth + 1, err));
      }
      return dk__buf_putc(b, ')', err);
    case DK_EXPR_LIKE:
      DK_RETURN_NOT_OK(print_operand(b, e->children[0], depth + 1, err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, " LIKE ", err));
      return print_operand(b, e->children[1], depth + 1, err);
    case DK_EXPR_STARTS_WITH:
      DK_RETURN_NOT_OK(dk__buf_puts(b, "STARTS_WITH(", err));
      DK_RETURN_NOT_OK(print_operand(b, e->children[0], depth + 1, err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, ", ", err));
      DK_RETURN_NOT_OK(print_operand(b, e->children[1], depth + 1, err));
      return dk__buf_putc(b, ')', err);
  }
  return dk__error_set(err, DK_INTERNAL, "unknown expression kind %d", (int)e->kind);
}

dk_status dk_expr_to_string(char **out, const dk_expr *e, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!e, DK_INVALID, err, "NULL expression");
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status st = print_expr(&b, e, 0, err);
  if (!st) st = dk__buf_reserve(&b, 1, err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *out = dk__buf_detach(&b);
  return DK_OK;
}

void dk_expr_string_free(char *s) { dk_free(s); }

/* ---- splitting ----------------------------------------------------------------------------- */

/* Deep copy without binding information (bound trees become plain trees again), every node
 * allocated with alloc. */
static dk_status unbind_copy(dk_expr **out, const dk_expr *e, const dk_allocator *alloc,
                             dk_error *err) {
  *out = NULL;
  if (e->kind == DK_EXPR_COLUMN)
    return dk_expr__column_a(out, (const char *const *)e->col.names, (size_t)e->col.depth, alloc,
                             err);
  if (e->kind == DK_EXPR_LITERAL) return dk_expr__new_literal_a(out, &e->lit, alloc, err);
  dk_expr *n;
  DK_RETURN_NOT_OK(dk_expr__new_a(&n, e->kind, e->n_children, alloc, err));
  n->op = e->op;
  for (size_t i = 0; i < e->n_children; i++) {
    dk_status st = unbind_copy(&n->children[i], e->children[i], alloc, err);
    if (st) {
      dk_expr_free(n);
      return st;
    }
  }
  *out = n;
  return DK_OK;
}

static bool name_in(const char *name, const char *const *cols, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (cols[i] && !strcasecmp(cols[i], name)) return true;
  return false;
}

bool dk_expr_references_only(const dk_expr *e, const char *const *columns, size_t n_columns) {
  if (!e) return true;
  if (e->kind == DK_EXPR_COLUMN) return name_in(e->col.names[0], columns, n_columns);
  for (size_t i = 0; i < e->n_children; i++)
    if (!dk_expr_references_only(e->children[i], columns, n_columns)) return false;
  return true;
}

typedef struct conj_list {
  const dk_expr **items;
  size_t n, cap;
  const dk_allocator *alloc; /* of the tree split, used for the list and the copies */
} conj_list;

static dk_status collect_conjuncts(conj_list *l, const dk_expr *e, dk_error *err) {
  if (e->kind == DK_EXPR_AND) {
    for (size_t i = 0; i < e->n_children; i++)
      DK_RETURN_NOT_OK(collect_conjuncts(l, e->children[i], err));
    return DK_OK;
  }
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 8;
    const dk_expr **p = dk__realloc(l->alloc, (void *)l->items, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (split)");
    l->items = p;
    l->cap = nc;
  }
  l->items[l->n++] = e;
  return DK_OK;
}

static dk_status build_conj(dk_expr **out, conj_list *l, bool want_only,
                            const char *const *cols, size_t ncols, dk_error *err) {
  *out = NULL;
  dk_expr **kids = dk__calloc(l->alloc, l->n ? l->n : 1, sizeof *kids);
  if (!kids) return dk__error_set(err, DK_NOMEM, "out of memory (split)");
  size_t k = 0;
  dk_status st = DK_OK;
  for (size_t i = 0; i < l->n && !st; i++) {
    if (dk_expr_references_only(l->items[i], cols, ncols) != want_only) continue;
    st = unbind_copy(&kids[k], l->items[i], l->alloc, err);
    if (!st) k++;
  }
  if (!st && k) {
    st = dk_expr_and_n(out, kids, k, err); /* consumes kids[] */
    k = 0;
  }
  for (size_t i = 0; i < k; i++) dk_expr_free(kids[i]);
  dk__free(l->alloc, kids);
  return st;
}

dk_status dk_expr_split(dk_expr **out_only, dk_expr **out_rest, const dk_expr *e,
                        const char *const *columns, size_t n_columns, dk_error *err) {
  *out_only = NULL;
  *out_rest = NULL;
  DK_RETURN_IF(!e, DK_INVALID, err, "NULL expression");
  conj_list l = {.alloc = e->alloc};
  dk_status st = collect_conjuncts(&l, e, err);
  if (!st) st = build_conj(out_only, &l, true, columns, n_columns, err);
  if (!st) st = build_conj(out_rest, &l, false, columns, n_columns, err);
  dk__free(l.alloc, (void *)l.items);
  if (st) {
    dk_expr_free(*out_only);
    dk_expr_free(*out_rest);
    *out_only = *out_rest = NULL;
  }
  return st;
}
