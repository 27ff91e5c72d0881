/*
** value.c — value expressions: arithmetic, CASE, CAST and functions, typed and evaluated as
** Spark SQL does with ANSI mode on (Spark 4's default): the assignments of UPDATE and MERGE,
** and the operands of comparisons that are not a plain column or literal (`a + 1 > b`).
**
** Typing (bind): Spark's rules for the types dk has. Integer literals are INT when they fit,
** else BIGINT; two integers give the wider type; FLOAT with FLOAT stays FLOAT, FLOAT with an
** integer or decimal becomes DOUBLE (AnsiTypeCoercion), DOUBLE wins over everything; decimals follow DecimalPrecision (add/sub: scale max(s1, s2), precision
** max(p1 - s1, p2 - s2) + scale + 1; mul: p1 + p2 + 1, s1 + s2; div: scale max(6, s1 + p2 + 1),
** precision p1 - s1 + s2 + scale; mod: min(p1 - s1, p2 - s2) + max(s1, s2)), adjusted to 38
** digits keeping at least min(scale, 6) (allowPrecisionLoss); an integer column meets a decimal
** as decimal(3|5|10|20, 0), an integer literal in arithmetic as decimal(digits, 0); decimals
** meeting in CASE/COALESCE/... widen keeping integral digits first (Spark 4); `/` of integers or floats
** is DOUBLE; date +/- int is a date; CASE/COALESCE/IF/GREATEST take the common type of their
** results; `||` and concat() turn other operands into strings.
**
** Evaluation: columnar over a batch (struct dk_vv: one typed vector + validity per node, in
** the evaluation arena). Every node receives the rows whose value is needed (`live`): a CASE
** branch only for the rows that take it, COALESCE's later arguments only where the earlier ones
** are NULL. Errors (ANSI: integer and decimal overflow, division by zero, invalid casts) are
** raised only for live rows, so `CASE WHEN b = 0 THEN NULL ELSE a / b END` works as in Spark.
** Strings are UTF-8; length/substring count code points; upper/lower map ASCII letters and,
** through towupper_l/towlower_l in the C.UTF-8 locale when the system has it, other letters
** one code point at a time; of Java's one-to-many upper-case mappings only those of Latin
** text are done (ß -> SS, the ligatures U+FB00..FB06), not the Greek/Armenian ones.
*/
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <wctype.h>

#include "expr/expr.h"
#include "expr/expr_int.h"

/* ---- functions ------------------------------------------------------------------------------- */

static const struct {
  const char *name;
  dk_fn fn;
  int lo, hi; /* argument counts; hi < 0: no limit */
} fns[] = {
    {"coalesce", DK_FN_COALESCE, 1, -1}, {"if", DK_FN_IF, 3, 3},
    {"nullif", DK_FN_NULLIF, 2, 2},      {"ifnull", DK_FN_IFNULL, 2, 2},
    {"nvl", DK_FN_IFNULL, 2, 2},         {"abs", DK_FN_ABS, 1, 1},
    {"negative", DK_FN_NEGATE, 1, 1},    {"upper", DK_FN_UPPER, 1, 1},
    {"ucase", DK_FN_UPPER, 1, 1},        {"lower", DK_FN_LOWER, 1, 1},
    {"lcase", DK_FN_LOWER, 1, 1},        {"length", DK_FN_LENGTH, 1, 1},
    {"char_length", DK_FN_LENGTH, 1, 1}, {"substring", DK_FN_SUBSTRING, 2, 3},
    {"substr", DK_FN_SUBSTRING, 2, 3},   {"trim", DK_FN_TRIM, 1, 1},
    {"ltrim", DK_FN_LTRIM, 1, 1},        {"rtrim", DK_FN_RTRIM, 1, 1},
    {"concat", DK_FN_CONCAT, 1, -1},     {"round", DK_FN_ROUND, 1, 2},
    {"floor", DK_FN_FLOOR, 1, 1},        {"ceil", DK_FN_CEIL, 1, 1},
    {"ceiling", DK_FN_CEIL, 1, 1},       {"greatest", DK_FN_GREATEST, 2, -1},
    {"least", DK_FN_LEAST, 2, -1},       {"date_add", DK_FN_DATE_ADD, 2, 2},
    {"date_sub", DK_FN_DATE_SUB, 2, 2},
};

dk_fn dk_expr__fn_lookup(const char *name, size_t len, int *lo, int *hi) {
  for (size_t i = 0; i < DK_ARRAY_LEN(fns); i++)
    if (strlen(fns[i].name) == len && !strncasecmp(fns[i].name, name, len)) {
      *lo = fns[i].lo;
      *hi = fns[i].hi;
      return fns[i].fn;
    }
  return DK_FN_NONE;
}

const char *dk_expr__fn_name(dk_fn f) {
  for (size_t i = 0; i < DK_ARRAY_LEN(fns); i++)
    if (fns[i].fn == f) return fns[i].name;
  return "?";
}

bool dk_expr__is_value_kind(dk_expr_kind k) {
  return k == DK_EXPR_ARITH || k == DK_EXPR_CASE || k == DK_EXPR_CALL || k == DK_EXPR_CAST;
}

/* ---- type names --------------------------------------------------------------------------- */

/* The one parser of type names: SQL's (CAST, dk_expr_cast) and Delta's primitive ones (a
** partition column's type), case and spaces ignored. 0: parsed; 1: an unknown name; 2: a
** decimal whose precision or scale is out of range. */
static int type_parse(dk_atype *out, const char *name, size_t len) {
  static const struct {
    const char *n;
    dk_atype_id id;
  } simple[] = {{"boolean", DK_AT_BOOL},  {"bool", DK_AT_BOOL},      {"tinyint", DK_AT_INT8},
                {"byte", DK_AT_INT8},     {"smallint", DK_AT_INT16}, {"short", DK_AT_INT16},
                {"int", DK_AT_INT32},     {"integer", DK_AT_INT32},  {"bigint", DK_AT_INT64},
                {"long", DK_AT_INT64},    {"float", DK_AT_FLOAT},    {"real", DK_AT_FLOAT},
                {"double", DK_AT_DOUBLE}, {"string", DK_AT_STRING},  {"varchar", DK_AT_STRING},
                {"text", DK_AT_STRING},   {"binary", DK_AT_BINARY},  {"date", DK_AT_DATE32}};
  char buf[64];
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < sizeof buf; i++)
    if (name[i] != ' ') buf[k++] = (char)(name[i] | (name[i] >= 'A' && name[i] <= 'Z' ? 32 : 0));
  buf[k] = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(simple); i++)
    if (!strcmp(buf, simple[i].n)) {
      *out = dk__atype_make(simple[i].id);
      return 0;
    }
  if (!strcmp(buf, "timestamp")) {
    *out = dk__atype_timestamp(DK_TU_MICRO, "UTC");
    return 0;
  }
  if (!strcmp(buf, "timestamp_ntz")) {
    *out = dk__atype_timestamp(DK_TU_MICRO, NULL);
    return 0;
  }
  int p = 10, s = 0, used = -1;
  if (!strcmp(buf, "decimal") || !strcmp(buf, "numeric") ||
      (sscanf(buf, "decimal(%d,%d)%n", &p, &s, &used) == 2 && used > 0 && !buf[used]) ||
      (sscanf(buf, "numeric(%d,%d)%n", &p, &s, &used) == 2 && used > 0 && !buf[used]) ||
      (sscanf(buf, "decimal(%d)%n", &p, &used) == 1 && used > 0 && !buf[used] && (s = 0, 1))) {
    if (p < 1 || p > 38 || s < 0 || s > p) return 2;
    *out = dk__atype_decimal(p, s);
    return 0;
  }
  return 1;
}

dk_status dk_expr__type_from_name(dk_atype *out, const char *name, size_t len, dk_error *err) {
  switch (type_parse(out, name, len)) {
    case 0: return DK_OK;
    case 2: return dk__error_set(err, DK_INVALID, "invalid type '%.*s'", (int)len, name);
    default: return dk__error_set(err, DK_INVALID, "unknown type '%.*s'", (int)len, name);
  }
}

dk_status dk__atype_from_delta(dk_atype *out, const char *name, dk_error *err) {
  switch (type_parse(out, name, strlen(name))) {
    case 0: return DK_OK;
    case 2: return dk__error_set(err, DK_INVALID, "invalid decimal type '%s'", name);
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "unsupported partition column type '%s'", name);
  }
}

void dk_expr__type_sql(char *buf, size_t cap, const dk_atype *t) {
  switch (t->id) {
    case DK_AT_NA: snprintf(buf, cap, "void"); break;
    case DK_AT_BOOL: snprintf(buf, cap, "BOOLEAN"); break;
    case DK_AT_INT8: snprintf(buf, cap, "TINYINT"); break;
    case DK_AT_INT16: case DK_AT_UINT8: snprintf(buf, cap, "SMALLINT"); break;
    case DK_AT_INT32: case DK_AT_UINT16: snprintf(buf, cap, "INT"); break;
    case DK_AT_INT64: case DK_AT_UINT32: snprintf(buf, cap, "BIGINT"); break;
    case DK_AT_FLOAT: snprintf(buf, cap, "FLOAT"); break;
    case DK_AT_DOUBLE: snprintf(buf, cap, "DOUBLE"); break;
    case DK_AT_DECIMAL128: snprintf(buf, cap, "DECIMAL(%d,%d)", t->precision, t->scale); break;
    case DK_AT_STRING: snprintf(buf, cap, "STRING"); break;
    case DK_AT_BINARY: snprintf(buf, cap, "BINARY"); break;
    case DK_AT_DATE32: snprintf(buf, cap, "DATE"); break;
    case DK_AT_TIMESTAMP: snprintf(buf, cap, t->tz[0] ? "TIMESTAMP" : "TIMESTAMP_NTZ"); break;
    default: snprintf(buf, cap, "?"); break;
  }
}

/* ---- type classes ------------------------------------------------------------------------- */

static bool t_int(const dk_atype *t) {
  switch (t->id) {
    case DK_AT_INT8: case DK_AT_INT16: case DK_AT_INT32: case DK_AT_INT64:
    case DK_AT_UINT8: case DK_AT_UINT16: case DK_AT_UINT32:
      return true;
    default:
      return false;
  }
}
static bool t_flt(const dk_atype *t) { return t->id == DK_AT_FLOAT || t->id == DK_AT_DOUBLE; }
static bool t_dec(const dk_atype *t) { return t->id == DK_AT_DECIMAL128; }
static bool t_num(const dk_atype *t) { return t_int(t) || t_flt(t) || t_dec(t); }
static bool t_str(const dk_atype *t) { return t->id == DK_AT_STRING; }
static bool t_bytes(const dk_atype *t) { return t->id == DK_AT_STRING || t->id == DK_AT_BINARY; }
static bool t_i64(const dk_atype *t) {
  return t_int(t) || t->id == DK_AT_BOOL || t->id == DK_AT_DATE32 || t->id == DK_AT_TIMESTAMP;
}

/* Signed integer rank (uints as the next wider signed type). */
static int int_rank(const dk_atype *t) {
  switch (t->id) {
    case DK_AT_INT8: return 1;
    case DK_AT_INT16: case DK_AT_UINT8: return 2;
    case DK_AT_INT32: case DK_AT_UINT16: return 3;
    default: return 4;
  }
}
static dk_atype int_of_rank(int r) {
  static const dk_atype_id ids[] = {DK_AT_INT8, DK_AT_INT8, DK_AT_INT16, DK_AT_INT32, DK_AT_INT64};
  return dk__atype_make(ids[r]);
}
static void int_bounds(int rank, int64_t *lo, int64_t *hi) {
  static const int64_t l[] = {0, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
  static const int64_t h[] = {0, INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
  *lo = l[rank];
  *hi = h[rank];
}

static dk_atype dec_adjust(int p, int s) {
  if (p <= 38) return dk__atype_decimal(p, s);
  int int_digits = p - s, min_scale = DK_MIN(s, 6);
  int scale = DK_MAX(38 - int_digits, min_scale);
  return dk__atype_decimal(38, scale);
}

/* The decimal an integer operand becomes: decimal(3|5|10|20, 0) by its width; an integer
** literal in arithmetic just its digits (Spark's DecimalPrecision literal rule), elsewhere
** (CASE, COALESCE, comparisons' common type) by its width too. */
static dk_atype dec_of(const dk_expr *e, bool lit_digits) {
  const dk_atype *t = &e->vtype;
  if (t_dec(t)) return *t;
  if (lit_digits && e->kind == DK_EXPR_LITERAL && t_int(t)) {
    int d = dk__i128_digits(e->lit.v.i);
    return dk__atype_decimal(d, 0);
  }
  static const int prec[] = {0, 3, 5, 10, 20};
  return dk__atype_decimal(prec[int_rank(t)], 0);
}

static dk_status no_common(dk_expr__binder *b, const char *what, const dk_atype *x,
                           const dk_atype *y) {
  char a[64], c[64];
  dk_expr__type_sql(a, sizeof a, x);
  dk_expr__type_sql(c, sizeof c, y);
  return dk__error_set(b->err, DK_INVALID, "%s: types %s and %s do not match", what, a, c);
}

/* The type two values meet in (Spark's findWiderTypeForTwo, dk's types). */
static dk_status common_type(dk_expr__binder *b, dk_atype *out, const dk_expr *x,
                             const dk_expr *y, const char *what) {
  const dk_atype *a = &x->vtype, *c = &y->vtype;
  if (a->id == DK_AT_NA) return *out = *c, DK_OK;
  if (c->id == DK_AT_NA) return *out = *a, DK_OK;
  if (t_int(a) && t_int(c)) return *out = int_of_rank(DK_MAX(int_rank(a), int_rank(c))), DK_OK;
  if (t_num(a) && t_num(c)) {
    /* ANSI (AnsiTypeCoercion): FLOAT meets only FLOAT as FLOAT; with an integer or a decimal
    ** it becomes DOUBLE (no precision lost to a float) */
    if (a->id == DK_AT_FLOAT && c->id == DK_AT_FLOAT) return *out = *a, DK_OK;
    if (t_flt(a) || t_flt(c)) return *out = dk__atype_make(DK_AT_DOUBLE), DK_OK;
    /* widerDecimalType, bounded keeping the integral digits first (Spark 4) */
    dk_atype da = dec_of(x, false), dc = dec_of(y, false);
    int s = DK_MAX(da.scale, dc.scale);
    int ip = DK_MAX(da.precision - da.scale, dc.precision - dc.scale);
    if (ip + s > 38) s = DK_MAX(0, s - (ip + s - 38));
    *out = dk__atype_decimal(DK_MIN(ip + s, 38), s);
    return DK_OK;
  }
  if (a->id == c->id && a->id != DK_AT_TIMESTAMP) return *out = *a, DK_OK;
  if (a->id == DK_AT_TIMESTAMP && c->id == DK_AT_TIMESTAMP) {
    if (!a->tz[0] != !c->tz[0]) return no_common(b, what, a, c);
    return *out = *a, DK_OK;
  }
  if ((a->id == DK_AT_DATE32 && c->id == DK_AT_TIMESTAMP) ||
      (c->id == DK_AT_DATE32 && a->id == DK_AT_TIMESTAMP))
    return *out = a->id == DK_AT_TIMESTAMP ? *a : *c, DK_OK;
  return no_common(b, what, a, c);
}

/* ---- binding ------------------------------------------------------------------------------- */

static dk_status new_node(dk_expr__binder *b, dk_expr **out, const dk_expr *e, size_t nk) {
  DK_RETURN_NOT_OK(dk_expr__new_a(out, e->kind, nk, b->alloc, b->err));
  dk_expr *n = *out;
  n->bound = true;
  n->is_value = true;
  n->op = e->op;
  n->aop = e->aop;
  n->fn = e->fn;
  n->has_else = e->has_else;
  if (e->kind == DK_EXPR_CAST) n->vtype = e->vtype;
  return DK_OK;
}

static dk_status lit_type(dk_atype *t, const dk_lit *l) {
  switch (l->type) {
    case DK_LIT_NULL: *t = dk__atype_make(DK_AT_NA); break;
    case DK_LIT_BOOL: *t = dk__atype_make(DK_AT_BOOL); break;
    case DK_LIT_INT8: *t = dk__atype_make(DK_AT_INT8); break;
    case DK_LIT_INT16: *t = dk__atype_make(DK_AT_INT16); break;
    case DK_LIT_INT32: *t = dk__atype_make(DK_AT_INT32); break;
    case DK_LIT_INT64:
      *t = dk__atype_make(l->v.i >= INT32_MIN && l->v.i <= INT32_MAX ? DK_AT_INT32 : DK_AT_INT64);
      break;
    case DK_LIT_FLOAT: *t = dk__atype_make(DK_AT_FLOAT); break;
    case DK_LIT_DOUBLE: *t = dk__atype_make(DK_AT_DOUBLE); break;
    case DK_LIT_DECIMAL: *t = dk__atype_decimal(l->precision, l->scale); break;
    case DK_LIT_STRING: *t = dk__atype_make(DK_AT_STRING); break;
    case DK_LIT_BINARY: *t = dk__atype_make(DK_AT_BINARY); break;
    case DK_LIT_DATE: *t = dk__atype_make(DK_AT_DATE32); break;
    case DK_LIT_TIMESTAMP: *t = dk__atype_timestamp(DK_TU_MICRO, "UTC"); break;
    case DK_LIT_TIMESTAMP_NTZ: *t = dk__atype_timestamp(DK_TU_MICRO, NULL); break;
  }
  return DK_OK;
}

static bool supported_scalar(const dk_atype *t) {
  return t_num(t) || t_bytes(t) || t->id == DK_AT_BOOL || t->id == DK_AT_DATE32 ||
         t->id == DK_AT_TIMESTAMP;
}

static dk_status need(dk_expr__binder *b, bool ok, const char *what, const dk_atype *t) {
  if (ok) return DK_OK;
  char tn[64];
  dk_expr__type_sql(tn, sizeof tn, t);
  return dk__error_set(b->err, DK_INVALID, "%s does not take a %s", what, tn);
}

static dk_status type_arith(dk_expr__binder *b, dk_expr *n) {
  const dk_expr *x = n->children[0], *y = n->children[1];
  const dk_atype *a = &x->vtype, *c = &y->vtype;
  static const char *const names[] = {"", "+", "-", "*", "/", "%", "||"};
  char what[16];
  snprintf(what, sizeof what, "operator %s", names[n->aop]);
  if (n->aop == DK_ARITH_CONCAT) {
    bool bin = a->id == DK_AT_BINARY && c->id == DK_AT_BINARY;
    DK_RETURN_NOT_OK(need(b, supported_scalar(a) || a->id == DK_AT_NA, what, a));
    DK_RETURN_NOT_OK(need(b, supported_scalar(c) || c->id == DK_AT_NA, what, c));
    n->vtype = dk__atype_make(bin ? DK_AT_BINARY : DK_AT_STRING);
    return DK_OK;
  }
  if (a->id == DK_AT_NA && c->id == DK_AT_NA) {
    n->vtype = dk__atype_make(n->aop == DK_ARITH_DIV ? DK_AT_DOUBLE : DK_AT_NA);
    return DK_OK;
  }
  /* date +/- days */
  if ((n->aop == DK_ARITH_ADD || n->aop == DK_ARITH_SUB) &&
      ((a->id == DK_AT_DATE32 && (t_int(c) || c->id == DK_AT_NA)) ||
       (n->aop == DK_ARITH_ADD && c->id == DK_AT_DATE32 && t_int(a)))) {
    n->vtype = dk__atype_make(DK_AT_DATE32);
    return DK_OK;
  }
  DK_RETURN_NOT_OK(need(b, t_num(a) || a->id == DK_AT_NA, what, a));
  DK_RETURN_NOT_OK(need(b, t_num(c) || c->id == DK_AT_NA, what, c));
  dk_atype t;
  DK_RETURN_NOT_OK(common_type(b, &t, x, y, what));
  if (t_int(&t) || t_flt(&t)) {
    n->vtype = n->aop == DK_ARITH_DIV ? dk__atype_make(DK_AT_DOUBLE) : t;
    return DK_OK;
  }
  dk_atype da = dec_of(a->id == DK_AT_NA ? y : x, true), dc = dec_of(c->id == DK_AT_NA ? x : y, true);
  int p1 = da.precision, s1 = da.scale, p2 = dc.precision, s2 = dc.scale;
  switch (n->aop) {
    case DK_ARITH_ADD:
    case DK_ARITH_SUB: {
      int s = DK_MAX(s1, s2);
      n->vtype = dec_adjust(DK_MAX(p1 - s1, p2 - s2) + s + 1, s);
      break;
    }
    case DK_ARITH_MUL:
      n->vtype = dec_adjust(p1 + p2 + 1, s1 + s2);
      break;
    case DK_ARITH_DIV: {
      int s = DK_MAX(6, s1 + p2 + 1);
      n->vtype = dec_adjust(p1 - s1 + s2 + s, s);
      break;
    }
    default: { /* MOD */
      int s = DK_MAX(s1, s2);
      n->vtype = dk__atype_decimal(DK_MIN(DK_MIN(p1 - s1, p2 - s2) + s, 38), s);
      break;
    }
  }
  return DK_OK;
}

/* Common type of children [from, to) stepping by step (CASE results, COALESCE, ...). */
static dk_status common_of(dk_expr__binder *b, dk_atype *out, dk_expr *n, size_t from,
                           size_t to, size_t step, const char *what) {
  dk_expr acc;
  memset(&acc, 0, sizeof acc);
  acc.vtype = dk__atype_make(DK_AT_NA);
  acc.kind = DK_EXPR_COLUMN; /* not a literal: integer literals widen as columns do here */
  for (size_t i = from; i < to; i += step) {
    const dk_expr *c = n->children[i];
    dk_atype t;
    DK_RETURN_NOT_OK(common_type(b, &t, &acc, c, what)); /* literals keep their own digits */
    acc.vtype = t;
  }
  *out = acc.vtype;
  return DK_OK;
}

static dk_status type_call(dk_expr__binder *b, dk_expr *n) {
  const char *name = dk_expr__fn_name(n->fn);
  dk_expr **k = n->children;
  size_t nk = n->n_children;
  const dk_atype *a = nk ? &k[0]->vtype : NULL;
  switch (n->fn) {
    case DK_FN_COALESCE:
    case DK_FN_IFNULL:
    case DK_FN_GREATEST:
    case DK_FN_LEAST:
      DK_RETURN_NOT_OK(common_of(b, &n->vtype, n, 0, nk, 1, name));
      if (n->fn == DK_FN_GREATEST || n->fn == DK_FN_LEAST)
        DK_RETURN_NOT_OK(need(b, n->vtype.id != DK_AT_BINARY, name, &n->vtype));
      return DK_OK;
    case DK_FN_IF:
      DK_RETURN_NOT_OK(need(b, a->id == DK_AT_BOOL || a->id == DK_AT_NA, "if() condition", a));
      return common_of(b, &n->vtype, n, 1, 3, 1, name);
    case DK_FN_NULLIF: {
      dk_atype t;
      DK_RETURN_NOT_OK(common_type(b, &t, k[0], k[1], name));
      n->vtype = *a;
      return DK_OK;
    }
    case DK_FN_ABS:
    case DK_FN_NEGATE:
      DK_RETURN_NOT_OK(need(b, t_num(a) || a->id == DK_AT_NA, name, a));
      n->vtype = a->id == DK_AT_NA ? dk__atype_make(DK_AT_NA) : *a;
      if (t_int(a)) n->vtype = int_of_rank(int_rank(a));
      return DK_OK;
    case DK_FN_UPPER:
    case DK_FN_LOWER:
    case DK_FN_TRIM:
    case DK_FN_LTRIM:
    case DK_FN_RTRIM:
      DK_RETURN_NOT_OK(need(b, t_str(a) || a->id == DK_AT_NA, name, a));
      n->vtype = dk__atype_make(DK_AT_STRING);
      return DK_OK;
    case DK_FN_LENGTH:
      DK_RETURN_NOT_OK(need(b, t_bytes(a) || a->id == DK_AT_NA, name, a));
      n->vtype = dk__atype_make(DK_AT_INT32);
      return DK_OK;
    case DK_FN_SUBSTRING:
      DK_RETURN_NOT_OK(need(b, t_bytes(a) || a->id == DK_AT_NA, name, a));
      for (size_t i = 1; i < nk; i++)
        DK_RETURN_NOT_OK(need(b, t_int(&k[i]->vtype) || k[i]->vtype.id == DK_AT_NA,
                              "substring position/length", &k[i]->vtype));
      n->vtype = a->id == DK_AT_BINARY ? *a : dk__atype_make(DK_AT_STRING);
      return DK_OK;
    case DK_FN_CONCAT: {
      bool bin = true;
      for (size_t i = 0; i < nk; i++) {
        DK_RETURN_NOT_OK(need(b, supported_scalar(&k[i]->vtype) || k[i]->vtype.id == DK_AT_NA,
                              name, &k[i]->vtype));
        bin = bin && k[i]->vtype.id == DK_AT_BINARY;
      }
      n->vtype = dk__atype_make(bin ? DK_AT_BINARY : DK_AT_STRING);
      return DK_OK;
    }
    case DK_FN_ROUND: {
      DK_RETURN_NOT_OK(need(b, t_num(a) || a->id == DK_AT_NA, name, a));
      int64_t d = 0;
      if (nk == 2) {
        const dk_expr *s = k[1];
        DK_RETURN_IF(s->kind != DK_EXPR_LITERAL || !t_int(&s->vtype), DK_INVALID, b->err,
                     "round(): the scale must be an integer literal");
        d = s->lit.v.i;
        DK_RETURN_IF(d < -38 || d > 38, DK_INVALID, b->err, "round(): scale %lld out of range",
                     (long long)d);
      }
      if (t_dec(a)) {
        int ns = d < 0 ? 0 : (int)DK_MIN(a->scale, d);
        n->vtype = dk__atype_decimal(DK_MIN(a->precision - a->scale + 1 + ns, 38), ns);
      } else {
        n->vtype = a->id == DK_AT_NA ? dk__atype_make(DK_AT_DOUBLE) : *a;
      }
      return DK_OK;
    }
    case DK_FN_FLOOR:
    case DK_FN_CEIL:
      DK_RETURN_NOT_OK(need(b, t_num(a) || a->id == DK_AT_NA, name, a));
      if (t_dec(a) && a->scale > 0) n->vtype = dk__atype_decimal(DK_MIN(a->precision - a->scale + 1, 38), 0);
      else if (t_dec(a)) n->vtype = *a;
      else n->vtype = dk__atype_make(DK_AT_INT64);
      return DK_OK;
    case DK_FN_DATE_ADD:
    case DK_FN_DATE_SUB:
      DK_RETURN_NOT_OK(need(b, a->id == DK_AT_DATE32 || a->id == DK_AT_TIMESTAMP || t_str(a) ||
                                   a->id == DK_AT_NA, name, a));
      DK_RETURN_NOT_OK(need(b, t_int(&k[1]->vtype) || k[1]->vtype.id == DK_AT_NA,
                            "date_add/date_sub days", &k[1]->vtype));
      n->vtype = dk__atype_make(DK_AT_DATE32);
      return DK_OK;
    default:
      return dk__error_set(b->err, DK_INTERNAL, "function without a type");
  }
}

static bool castable(const dk_atype *from, const dk_atype *to) {
  if (from->id == DK_AT_NA || from->id == to->id) return true;
  if (t_str(to)) return supported_scalar(from);
  if (t_str(from)) return supported_scalar(to);
  if (t_num(to)) return t_num(from) || from->id == DK_AT_BOOL;
  if (to->id == DK_AT_BOOL) return t_num(from);
  if (to->id == DK_AT_BINARY) return t_str(from);
  if (to->id == DK_AT_DATE32) return from->id == DK_AT_TIMESTAMP;
  if (to->id == DK_AT_TIMESTAMP) return from->id == DK_AT_DATE32 || from->id == DK_AT_TIMESTAMP;
  return false;
}

dk_status dk_expr__bind_val(dk_expr__binder *b, dk_expr **out, const dk_expr *e, int depth) {
  *out = NULL;
  DK_RETURN_IF(depth > DK_EXPR_MAX_DEPTH * 2, DK_INVALID, b->err, "expression nests too deeply");
  dk_status st = DK_OK;
  if (e->kind == DK_EXPR_COLUMN) {
    DK_RETURN_NOT_OK(dk_expr__bind_column(b, out, e));
    (*out)->vtype = (*out)->col.type;
    (*out)->is_value = true;
    if (!supported_scalar(&(*out)->vtype)) {
      char tn[64];
      if (dk__atype_format(&(*out)->vtype, tn, sizeof tn, NULL)) snprintf(tn, sizeof tn, "?");
      st = dk__error_set(b->err, DK_UNSUPPORTED,
                         "column '%s' of Arrow type %s cannot be used in an expression",
                         e->col.names[e->col.depth - 1], tn);
      dk_expr_free(*out);
      *out = NULL;
    }
    return st;
  }
  if (e->kind == DK_EXPR_LITERAL) {
    DK_RETURN_NOT_OK(dk_expr__new_literal_a(out, &e->lit, b->alloc, b->err));
    (*out)->bound = true;
    (*out)->is_value = true;
    return lit_type(&(*out)->vtype, &e->lit);
  }
  if (!dk_expr__is_value_kind(e->kind)) { /* a predicate as a BOOL value */
    DK_RETURN_NOT_OK(dk_expr__bind_pred(b, out, e, depth + 1));
    if (!dk_expr__is_value_kind((*out)->kind)) (*out)->vtype = dk__atype_make(DK_AT_BOOL);
    (*out)->is_value = true;
    return DK_OK;
  }
  dk_expr *n;
  DK_RETURN_NOT_OK(new_node(b, &n, e, e->n_children));
  size_t pairs = e->kind == DK_EXPR_CASE ? (e->n_children - e->has_else) / 2 : 0;
  for (size_t i = 0; i < e->n_children && !st; i++) {
    bool is_cond = (e->kind == DK_EXPR_CASE && i < 2 * pairs && i % 2 == 0) ||
                   (e->kind == DK_EXPR_CALL && e->fn == DK_FN_IF && i == 0);
    if (is_cond) st = dk_expr__bind_pred(b, &n->children[i], e->children[i], depth + 1);
    else st = dk_expr__bind_val(b, &n->children[i], e->children[i], depth + 1);
    if (!st && is_cond && !n->children[i]->is_value) n->children[i]->vtype = dk__atype_make(DK_AT_BOOL);
  }
  if (!st) {
    switch (e->kind) {
      case DK_EXPR_ARITH:
        st = type_arith(b, n);
        break;
      case DK_EXPR_CASE:
        st = common_of(b, &n->vtype, n, 1, 2 * pairs, 2, "CASE");
        if (!st && e->has_else) {
          dk_expr acc;
          memset(&acc, 0, sizeof acc);
          acc.kind = DK_EXPR_COLUMN;
          acc.vtype = n->vtype;
          st = common_type(b, &n->vtype, &acc, n->children[e->n_children - 1], "CASE");
        }
        break;
      case DK_EXPR_CALL:
        st = type_call(b, n);
        break;
      case DK_EXPR_CAST:
        if (!castable(&n->children[0]->vtype, &n->vtype)) {
          char a[64], c[64];
          dk_expr__type_sql(a, sizeof a, &n->children[0]->vtype);
          dk_expr__type_sql(c, sizeof c, &n->vtype);
          st = dk__error_set(b->err, DK_INVALID, "cannot cast %s to %s", a, c);
        }
        break;
      default:
        break;
    }
  }
  if (st) {
    dk_expr_free(n);
    return st;
  }
  *out = n;
  return DK_OK;
}

dk_status dk_expr__bind_cmp_values(dk_expr__binder *b, dk_expr **out, dk_cmp_op op,
                                   const dk_expr *x, const dk_expr *y, int depth) {
  dk_expr *n;
  DK_RETURN_NOT_OK(dk_expr__new_a(&n, DK_EXPR_CMP, 2, b->alloc, b->err));
  n->bound = true;
  n->op = op;
  n->ck = DK_CK_VALUES;
  dk_status st = dk_expr__bind_val(b, &n->children[0], x, depth + 1);
  if (!st) st = dk_expr__bind_val(b, &n->children[1], y, depth + 1);
  const dk_atype *a = st ? NULL : &n->children[0]->vtype, *c = st ? NULL : &n->children[1]->vtype;
  if (!st && t_str(a) && (c->id == DK_AT_DATE32 || c->id == DK_AT_TIMESTAMP)) n->ctype = *c;
  else if (!st && t_str(c) && (a->id == DK_AT_DATE32 || a->id == DK_AT_TIMESTAMP)) n->ctype = *a;
  else if (!st) st = common_type(b, &n->ctype, n->children[0], n->children[1], "comparison");
  if (st) {
    dk_expr_free(n);
    return st;
  }
  *out = n;
  return DK_OK;
}

/* ---- vectors ------------------------------------------------------------------------------- */

typedef dk_expr__ectx ectx;

/* Zeroed arena memory aligned for dk_i128 (the arena aligns to 8 only). */
static void *zalloc(ectx *c, size_t n) {
  uint8_t *p = dk__arena_alloc(&c->ar, (n ? n : 1) + 15, c->err);
  if (!p) return NULL;
  p += (16 - ((uintptr_t)p & 15)) & 15;
  memset(p, 0, n ? n : 1);
  return p;
}

static dk_status vv_init(dk_vv *v, ectx *c, const dk_atype *t) {
  memset(v, 0, sizeof *v);
  v->t = *t;
  v->n = c->n;
  size_t n = (size_t)c->n;
  v->ok = zalloc(c, n);
  if (!v->ok) return DK_NOMEM;
  if (t_i64(t)) v->i = zalloc(c, n * sizeof *v->i);
  else if (t_flt(t)) v->d = zalloc(c, n * sizeof *v->d);
  else if (t_dec(t)) v->q = zalloc(c, n * sizeof *v->q);
  else if (t_bytes(t)) v->off = zalloc(c, (n + 1) * sizeof *v->off);
  else return DK_OK; /* NA */
  return v->i || v->d || v->q || v->off ? DK_OK : DK_NOMEM;
}

static inline bool live_at(const uint8_t *live, int64_t r) { return !live || live[r]; }

static dk_status row_error(ectx *c, const char *cls, const char *what) {
  return dk__error_set(c->err, DK_INVALID, "[%s] %s", cls, what);
}

/* String builder for computed string vectors: bytes in the arena, grown by doubling. */
typedef struct sbuild {
  ectx *c;
  char *p;
  size_t len, cap;
} sbuild;

static dk_status sb_reserve(sbuild *s, size_t extra) {
  if (s->len + extra <= s->cap) return DK_OK;
  size_t nc = s->cap ? s->cap * 2 : 256;
  while (nc < s->len + extra) nc *= 2;
  char *q = dk__arena_alloc(&s->c->ar, nc, s->c->err);
  if (!q) return DK_NOMEM;
  if (s->len) memcpy(q, s->p, s->len);
  s->p = q;
  s->cap = nc;
  return DK_OK;
}

static dk_status sb_put(sbuild *s, const void *p, size_t n) {
  DK_RETURN_NOT_OK(sb_reserve(s, n));
  if (n) memcpy(s->p + s->len, p, n);
  s->len += n;
  return DK_OK;
}

static const char *vv_str(const dk_vv *v, int64_t r, size_t *len) {
  *len = (size_t)(v->off[r + 1] - v->off[r]);
  return v->data + v->off[r];
}

/* ---- loading columns and literals ----------------------------------------------------------- */

static dk_status load_column(dk_vv *v, ectx *c, const dk_expr *e) {
  dk_expr__colview cv;
  DK_RETURN_NOT_OK(dk_expr__resolve(c, &e->col, &cv));
  dk_atype t = e->col.type;
  if (t.id == DK_AT_TIMESTAMP) t.unit = DK_TU_MICRO;
  if (t_int(&t)) t = int_of_rank(int_rank(&t));
  if (t_bytes(&t)) { /* borrow the column's bytes */
    memset(v, 0, sizeof *v);
    v->t = t;
    v->n = c->n;
    v->ok = zalloc(c, (size_t)c->n);
    v->off = zalloc(c, ((size_t)c->n + 1) * sizeof *v->off);
    if (!v->ok || !v->off) return DK_NOMEM;
  } else {
    DK_RETURN_NOT_OK(vv_init(v, c, &t));
  }
  const struct ArrowArray *a = cv.leaf;
  int64_t o = cv.off, n = c->n;
  const void *buf = a->buffers[1];
  for (int64_t r = 0; r < n; r++) v->ok[r] = !cv.ok || cv.ok[r];
  const dk_atype *ct = &e->col.type;
  switch (ct->id) {
    case DK_AT_BOOL:
      for (int64_t r = 0; r < n; r++) v->i[r] = dk__bit_get(buf, o + r);
      break;
    case DK_AT_INT8: for (int64_t r = 0; r < n; r++) v->i[r] = ((const int8_t *)buf)[o + r]; break;
    case DK_AT_INT16: for (int64_t r = 0; r < n; r++) v->i[r] = ((const int16_t *)buf)[o + r]; break;
    case DK_AT_INT32: case DK_AT_DATE32:
      for (int64_t r = 0; r < n; r++) v->i[r] = ((const int32_t *)buf)[o + r];
      break;
    case DK_AT_INT64: for (int64_t r = 0; r < n; r++) v->i[r] = ((const int64_t *)buf)[o + r]; break;
    case DK_AT_UINT8: for (int64_t r = 0; r < n; r++) v->i[r] = ((const uint8_t *)buf)[o + r]; break;
    case DK_AT_UINT16: for (int64_t r = 0; r < n; r++) v->i[r] = ((const uint16_t *)buf)[o + r]; break;
    case DK_AT_UINT32: for (int64_t r = 0; r < n; r++) v->i[r] = ((const uint32_t *)buf)[o + r]; break;
    case DK_AT_TIMESTAMP: {
      int64_t mul = 1, div = 1;
      switch (ct->unit) {
        case DK_TU_SECOND: mul = 1000000; break;
        case DK_TU_MILLI: mul = 1000; break;
        case DK_TU_NANO: div = 1000; break;
        default: break;
      }
      for (int64_t r = 0; r < n; r++) {
        int64_t x = ((const int64_t *)buf)[o + r];
        v->i[r] = div > 1 ? (x >= 0 ? x / div : -((-x + div - 1) / div)) : x * mul;
      }
      break;
    }
    case DK_AT_FLOAT: for (int64_t r = 0; r < n; r++) v->d[r] = ((const float *)buf)[o + r]; break;
    case DK_AT_DOUBLE: for (int64_t r = 0; r < n; r++) v->d[r] = ((const double *)buf)[o + r]; break;
    case DK_AT_DECIMAL128:
      for (int64_t r = 0; r < n; r++) memcpy(&v->q[r], (const uint8_t *)buf + 16 * (o + r), 16);
      break;
    case DK_AT_STRING:
    case DK_AT_BINARY: {
      const int32_t *offs = buf;
      for (int64_t r = 0; r <= n; r++) v->off[r] = offs[o + r];
      v->data = (char *)a->buffers[2];
      break;
    }
    default:
      return dk__error_set(c->err, DK_UNSUPPORTED, "column type not supported in expressions");
  }
  return DK_OK;
}

static dk_status load_literal(dk_vv *v, ectx *c, const dk_expr *e) {
  DK_RETURN_NOT_OK(vv_init(v, c, &e->vtype));
  const dk_lit *l = &e->lit;
  int64_t n = c->n;
  if (l->type == DK_LIT_NULL) return DK_OK;
  memset(v->ok, 1, (size_t)n);
  if (v->i) {
    int64_t x = l->type == DK_LIT_BOOL ? l->v.b : l->v.i;
    for (int64_t r = 0; r < n; r++) v->i[r] = x;
  } else if (v->d) {
    for (int64_t r = 0; r < n; r++) v->d[r] = l->v.d;
  } else if (v->q) {
    for (int64_t r = 0; r < n; r++) v->q[r] = l->v.dec;
  } else if (v->off) {
    v->data = l->bytes; /* every row points at the literal's bytes */
    for (int64_t r = 0; r <= n; r++) v->off[r] = 0;
    if (n > 0) {
      /* offsets must grow: store each row as [0, len) of the same bytes via a copy */
      sbuild sb = {c, NULL, 0, 0};
      DK_RETURN_NOT_OK(sb_reserve(&sb, l->len * (size_t)n));
      for (int64_t r = 0; r < n; r++) {
        DK_RETURN_NOT_OK(sb_put(&sb, l->bytes, l->len));
        v->off[r + 1] = (int64_t)sb.len;
      }
      v->data = sb.p;
    }
  }
  return DK_OK;
}

/* ---- decimal helpers ----------------------------------------------------------------------- */

/* Rescales with HALF_UP rounding; false on int128 overflow. */
static bool dec_rescale(dk_i128 *out, dk_i128 v, int from, int to) {
  if (to == from) return *out = v, true;
  if (to > from) {
    int k = to - from;
    if (k > 38) return v == 0 ? (*out = 0, true) : false;
    return !__builtin_mul_overflow(v, dk__pow10(k), out);
  }
  int k = from - to;
  if (k > 38) return *out = 0, true;
  dk_i128 d = dk__pow10(k), q = v / d, r = v % d;
  dk_i128 ar = r < 0 ? -r : r;
  if (2 * ar >= d) q += v < 0 ? -1 : 1;
  *out = q;
  return true;
}

/* trunc(x * 10^k / y) when x * 10^k does not fit 128 bits (Spark divides BigDecimals): the
** product in 256 bits (4 limbs), then binary long division; false when the quotient does not
** fit 127 bits. y != 0. */
static bool div_pow10(dk_i128 *out, dk_i128 x, int k, dk_i128 y) {
  bool neg = (x < 0) != (y < 0);
  unsigned __int128 ux = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
  unsigned __int128 uy = y < 0 ? -(unsigned __int128)y : (unsigned __int128)y;
  uint64_t w[4] = {(uint64_t)ux, (uint64_t)(ux >> 64), 0, 0};
  for (int i = 0; i < k; i++) {
    unsigned __int128 carry = 0;
    for (int j = 0; j < 4; j++) {
      unsigned __int128 t = (unsigned __int128)w[j] * 10 + carry;
      w[j] = (uint64_t)t;
      carry = t >> 64;
    }
    if (carry) return false;
  }
  unsigned __int128 rem = 0, q = 0;
  for (int bit = 255; bit >= 0; bit--) {
    bool top = rem >> 127;
    rem = (rem << 1) | ((w[bit / 64] >> (bit % 64)) & 1);
    bool ge = top || rem >= uy;
    if (ge) rem -= uy;
    if (q >> 127) return false;
    q = (q << 1) | ge;
  }
  if (q >> 127) return false;
  *out = neg ? -(dk_i128)q : (dk_i128)q;
  return true;
}

static double dec_to_double(dk_i128 v, int scale) {
  char buf[64];
  dk__format_decimal(buf, sizeof buf, v, scale);
  return strtod(buf, NULL);
}

/* Shortest decimal text of a double (reads back exactly), as Java's Double.toString digits. */
static void shortest(char *buf, size_t cap, double d) {
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, cap, "%.*g", p, d);
    if (strtod(buf, NULL) == d) return;
  }
  snprintf(buf, cap, "%.17g", d);
}

/* A double as a decimal of scale s (HALF_UP on its shortest decimal text); false when it does
** not fit 38 digits or is not finite. */
static bool double_to_dec(dk_i128 *out, double d, int s) {
  if (!isfinite(d)) return false;
  char buf[64];
  shortest(buf, sizeof buf, d);
  dk_i128 v;
  int32_t p0, s0;
  dk_error e2;
  dk_error_init(&e2);
  if (dk__parse_decimal_infer(&v, &p0, &s0, buf, strlen(buf), &e2) != DK_OK) {
    /* exponent forms: go through a fixed-point rendering */
    snprintf(buf, sizeof buf, "%.*f", DK_MIN(s + 1, 38), d);
    if (strlen(buf) > 45 || dk__parse_decimal_infer(&v, &p0, &s0, buf, strlen(buf), &e2) != DK_OK)
      return false;
  }
  return dec_rescale(out, v, s0, s);
}

/* ---- casts (ANSI) --------------------------------------------------------------------------- */

static void fmt_double_java(char *buf, size_t cap, double d, bool is_float) {
  if (isnan(d)) {
    snprintf(buf, cap, "NaN");
    return;
  }
  if (isinf(d)) {
    snprintf(buf, cap, d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  if (d == 0) {
    snprintf(buf, cap, signbit(d) ? "-0.0" : "0.0");
    return;
  }
  char digs[40];
  int p;
  for (p = 1; p <= 17; p++) { /* shortest round trip, as Java's digits */
    snprintf(digs, sizeof digs, "%.*e", p - 1, d);
    double back = strtod(digs, NULL);
    if (is_float ? (float)back == (float)d : back == d) break;
  }
  /* digs = [-]D.DDDDe[+-]XX */
  const char *s = digs;
  bool neg = *s == '-';
  if (neg) s++;
  char mant[24];
  size_t m = 0;
  for (; *s && *s != 'e'; s++)
    if (*s != '.') mant[m++] = *s;
  mant[m] = 0;
  int ex = atoi(s + 1);
  while (m > 1 && mant[m - 1] == '0') mant[--m] = 0;
  size_t k = 0;
  if (neg) buf[k++] = '-';
  double ad = fabs(d);
  if (ad >= 1e-3 && ad < 1e7) {
    if (ex < 0) {
      k += (size_t)snprintf(buf + k, cap - k, "0.");
      for (int i = 0; i < -ex - 1; i++) buf[k++] = '0';
      k += (size_t)snprintf(buf + k, cap - k, "%s", mant);
    } else {
      for (int i = 0; i <= ex; i++) buf[k++] = i < (int)m ? mant[i] : '0';
      buf[k++] = '.';
      if ((int)m > ex + 1) k += (size_t)snprintf(buf + k, cap - k, "%s", mant + ex + 1);
      else buf[k++] = '0';
    }
    buf[k] = 0;
  } else {
    buf[k++] = mant[0];
    buf[k++] = '.';
    k += (size_t)snprintf(buf + k, cap - k, "%s", m > 1 ? mant + 1 : "0");
    snprintf(buf + k, cap - k, "E%d", ex);
  }
}

static dk_status cast_to_string(dk_vv *out, ectx *c, const dk_vv *in, const uint8_t *live) {
  dk_atype st = dk__atype_make(DK_AT_STRING);
  DK_RETURN_NOT_OK(vv_init(out, c, &st));
  sbuild sb = {c, NULL, 0, 0};
  char tmp[96];
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = in->ok[r] && live_at(live, r);
    if (out->ok[r]) {
      const char *p = tmp;
      size_t len;
      const dk_atype *t = &in->t;
      if (t_bytes(t)) {
        p = vv_str(in, r, &len);
      } else {
        if (t->id == DK_AT_BOOL) snprintf(tmp, sizeof tmp, "%s", in->i[r] ? "true" : "false");
        else if (t_int(t)) snprintf(tmp, sizeof tmp, "%lld", (long long)in->i[r]);
        else if (t_flt(t)) fmt_double_java(tmp, sizeof tmp, in->d[r], t->id == DK_AT_FLOAT);
        else if (t_dec(t)) dk__format_decimal(tmp, sizeof tmp, in->q[r], t->scale);
        else if (t->id == DK_AT_DATE32) dk__format_date(tmp, sizeof tmp, in->i[r]);
        else if (t->id == DK_AT_TIMESTAMP) {
          /* Spark: yyyy-MM-dd HH:mm:ss[.ffffff] (fraction without trailing zeros), session
          ** time zone UTC */
          int64_t us = in->i[r], secs = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
          int64_t frac = us - secs * 1000000;
          dk__format_date(tmp, sizeof tmp, secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400));
          int64_t sod = secs - (secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400)) * 86400;
          size_t l = strlen(tmp);
          l += (size_t)snprintf(tmp + l, sizeof tmp - l, " %02d:%02d:%02d", (int)(sod / 3600),
                                (int)(sod / 60 % 60), (int)(sod % 60));
          if (frac) {
            char f[8];
            snprintf(f, sizeof f, "%06lld", (long long)frac);
            int fl = 6;
            while (fl > 0 && f[fl - 1] == '0') f[--fl] = 0;
            snprintf(tmp + l, sizeof tmp - l, ".%s", f);
          }
        }
        len = strlen(tmp);
      }
      DK_RETURN_NOT_OK(sb_put(&sb, p, len));
    }
    out->off[r + 1] = (int64_t)sb.len;
  }
  out->data = sb.p;
  return DK_OK;
}

static dk_status vv_cast(dk_vv *out, ectx *c, const dk_vv *in, const dk_atype *to,
                         const uint8_t *live);

/* Parses strings into the target type (ANSI: an unparsable value is an error). */
static dk_status cast_from_string(dk_vv *out, ectx *c, const dk_vv *in, const dk_atype *to,
                                  const uint8_t *live) {
  DK_RETURN_NOT_OK(vv_init(out, c, to));
  char tn[64];
  dk_expr__type_sql(tn, sizeof tn, to);
  for (int64_t r = 0; r < c->n; r++) {
    if (!in->ok[r] || !live_at(live, r)) continue;
    size_t len;
    const char *s = vv_str(in, r, &len);
    while (len && (*s == ' ' || *s == '\t' || *s == '\n')) s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n')) len--;
    dk_error e2;
    dk_error_init(&e2);
    dk_status st = DK_OK;
    if (to->id == DK_AT_BOOL) {
      if (len == 4 && !strncasecmp(s, "true", 4)) out->i[r] = 1;
      else if (len == 5 && !strncasecmp(s, "false", 5)) out->i[r] = 0;
      else st = DK_INVALID;
    } else if (to->id == DK_AT_DATE32) {
      int32_t d;
      st = dk__parse_date(&d, s, len, &e2);
      out->i[r] = d;
    } else if (to->id == DK_AT_TIMESTAMP) {
      bool zone;
      st = dk__parse_timestamp(&out->i[r], &zone, s, len, &e2);
    } else if (to->id == DK_AT_BINARY) {
      return dk__error_set(c->err, DK_INTERNAL, "string to binary goes through bytes");
    } else if (t_num(to)) {
      dk_i128 q;
      int32_t p0, s0;
      if (t_flt(to)) {
        char buf[128];
        if (len >= sizeof buf) st = DK_INVALID;
        else {
          memcpy(buf, s, len);
          buf[len] = 0;
          char *end;
          double d = strtod(buf, &end);
          if (end == buf || *end) st = DK_INVALID;
          out->d[r] = to->id == DK_AT_FLOAT ? (double)(float)d : d;
        }
      } else if ((st = dk__parse_decimal_infer(&q, &p0, &s0, s, len, &e2)) == DK_OK) {
        if (t_dec(to)) {
          if (!dec_rescale(&out->q[r], q, s0, to->scale) ||
              !dk__i128_fits_precision(out->q[r], to->precision))
            return row_error(c, "NUMERIC_VALUE_OUT_OF_RANGE", "string does not fit the decimal");
        } else {
          dk_i128 w = s0 > 0 ? q / dk__pow10(s0) : q; /* Spark truncates the fraction */
          int64_t lo, hi;
          int_bounds(int_rank(to), &lo, &hi);
          if (w < lo || w > hi) return row_error(c, "CAST_OVERFLOW", "string value out of range");
          out->i[r] = (int64_t)w;
        }
      }
    }
    if (st)
      return dk__error_set(c->err, DK_INVALID, "[CAST_INVALID_INPUT] the string '%.*s' cannot be "
                           "cast to %s", (int)DK_MIN(len, 64), s, tn);
    out->ok[r] = 1;
  }
  return DK_OK;
}

static dk_status vv_cast(dk_vv *out, ectx *c, const dk_vv *in, const dk_atype *to,
                         const uint8_t *live) {
  const dk_atype *f = &in->t;
  int64_t n = c->n;
  if (f->id == to->id && (!t_dec(to) || (f->precision == to->precision && f->scale == to->scale)) &&
      !(to->id == DK_AT_FLOAT && f->id != DK_AT_FLOAT)) {
    *out = *in;
    out->t = *to;
    return DK_OK;
  }
  if (f->id == DK_AT_NA) return vv_init(out, c, to);
  if (t_str(to)) return cast_to_string(out, c, in, live);
  if (t_str(f) && to->id == DK_AT_BINARY) {
    *out = *in;
    out->t = *to;
    return DK_OK;
  }
  if (t_str(f)) return cast_from_string(out, c, in, to, live);
  DK_RETURN_NOT_OK(vv_init(out, c, to));
  char tn[64];
  dk_expr__type_sql(tn, sizeof tn, to);
  for (int64_t r = 0; r < n; r++) {
    out->ok[r] = in->ok[r];
    if (!in->ok[r]) continue;
    bool chk = live_at(live, r);
    if (t_int(to) || to->id == DK_AT_BOOL) {
      int64_t v = 0;
      bool fits = true;
      if (t_i64(f)) {
        v = in->i[r];
      } else if (t_flt(f)) {
        double d = in->d[r];
        fits = isfinite(d) && d > -9223372036854775808.0 - 1 && d < 9223372036854775808.0;
        v = fits ? (int64_t)d : 0; /* truncation toward zero */
      } else if (t_dec(f)) {
        dk_i128 w = in->q[r] / dk__pow10(f->scale);
        fits = w >= INT64_MIN && w <= INT64_MAX;
        v = fits ? (int64_t)w : 0;
      }
      if (to->id == DK_AT_BOOL) {
        out->i[r] = t_flt(f) ? in->d[r] != 0 : t_dec(f) ? in->q[r] != 0 : v != 0;
        continue;
      }
      int64_t lo, hi;
      int_bounds(int_rank(to), &lo, &hi);
      if (chk && (!fits || v < lo || v > hi))
        return dk__error_set(c->err, DK_INVALID, "[CAST_OVERFLOW] a value does not fit %s", tn);
      out->i[r] = v;
    } else if (t_flt(to)) {
      double d = t_i64(f) ? (double)in->i[r] : t_dec(f) ? dec_to_double(in->q[r], f->scale) : in->d[r];
      out->d[r] = to->id == DK_AT_FLOAT ? (double)(float)d : d;
    } else if (t_dec(to)) {
      dk_i128 q = 0;
      bool ok = true;
      if (t_i64(f)) ok = dec_rescale(&q, in->i[r], 0, to->scale);
      else if (t_dec(f)) ok = dec_rescale(&q, in->q[r], f->scale, to->scale);
      else if (!isfinite(in->d[r])) { /* Spark: NaN and infinities become NULL */
        out->ok[r] = 0;
        continue;
      } else ok = double_to_dec(&q, in->d[r], to->scale);
      if (chk && (!ok || !dk__i128_fits_precision(q, to->precision)))
        return dk__error_set(c->err, DK_INVALID,
                             "[NUMERIC_VALUE_OUT_OF_RANGE] a value does not fit %s", tn);
      out->q[r] = q;
    } else if (to->id == DK_AT_DATE32 && f->id == DK_AT_TIMESTAMP) {
      int64_t us = in->i[r];
      out->i[r] = us >= 0 ? us / 86400000000LL : -((-us + 86400000000LL - 1) / 86400000000LL);
    } else if (to->id == DK_AT_TIMESTAMP && f->id == DK_AT_DATE32) {
      out->i[r] = in->i[r] * 86400000000LL;
    } else if (to->id == DK_AT_TIMESTAMP && f->id == DK_AT_TIMESTAMP) {
      out->i[r] = in->i[r];
    } else {
      char fn_[64];
      dk_expr__type_sql(fn_, sizeof fn_, f);
      return dk__error_set(c->err, DK_INVALID, "cannot cast %s to %s", fn_, tn);
    }
  }
  return DK_OK;
}

/* ---- evaluation ----------------------------------------------------------------------------- */

static dk_status eval_at(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live, int depth);

/* Evaluates child i cast to type t. */
static dk_status eval_as(dk_vv *out, ectx *c, const dk_expr *e, const dk_atype *t,
                         const uint8_t *live, int depth) {
  dk_vv v;
  DK_RETURN_NOT_OK(eval_at(&v, c, e, live, depth + 1));
  return vv_cast(out, c, &v, t, live);
}

/* rows of `live` where mask is set (a new live mask) */
static uint8_t *live_and(ectx *c, const uint8_t *live, const uint8_t *mask, bool want) {
  uint8_t *m = zalloc(c, (size_t)c->n);
  if (!m) return NULL;
  for (int64_t r = 0; r < c->n; r++) m[r] = live_at(live, r) && (mask[r] != 0) == want;
  return m;
}

static dk_status arith_int(dk_vv *out, ectx *c, const dk_expr *e, const dk_vv *a, const dk_vv *b,
                           const uint8_t *live) {
  int64_t lo, hi;
  int_bounds(int_rank(&out->t), &lo, &hi);
  static const char *const sym[] = {"", "+", "-", "*", "/", "%"};
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = a->ok[r] && b->ok[r];
    if (!out->ok[r]) continue;
    int64_t x = a->i[r], y = b->i[r], z = 0;
    bool ovf = false;
    switch (e->aop) {
      case DK_ARITH_ADD: ovf = __builtin_add_overflow(x, y, &z); break;
      case DK_ARITH_SUB: ovf = __builtin_sub_overflow(x, y, &z); break;
      case DK_ARITH_MUL: ovf = __builtin_mul_overflow(x, y, &z); break;
      default: /* MOD */
        if (y == 0) {
          if (live_at(live, r)) return row_error(c, "DIVIDE_BY_ZERO", "division by zero (%)");
          out->ok[r] = 0;
          continue;
        }
        z = y == -1 ? 0 : x % y;
        break;
    }
    if ((ovf || z < lo || z > hi) && live_at(live, r))
      return dk__error_set(c->err, DK_INVALID, "[ARITHMETIC_OVERFLOW] integer overflow in %lld %s %lld",
                           (long long)x, sym[e->aop], (long long)y);
    out->i[r] = z;
  }
  return DK_OK;
}

static dk_status arith_dec(dk_vv *out, ectx *c, const dk_expr *e, const dk_vv *a, const dk_vv *b,
                           const uint8_t *live) {
  int s1 = a->t.scale, s2 = b->t.scale, rs = out->t.scale;
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = a->ok[r] && b->ok[r];
    if (!out->ok[r]) continue;
    dk_i128 x = a->q[r], y = b->q[r], z = 0;
    bool ok = true;
    int zs = rs;
    switch (e->aop) {
      case DK_ARITH_ADD:
      case DK_ARITH_SUB: {
        int s = DK_MAX(s1, s2);
        dk_i128 xs, ys;
        ok = dec_rescale(&xs, x, s1, s) && dec_rescale(&ys, y, s2, s);
        if (ok) ok = !(e->aop == DK_ARITH_ADD ? __builtin_add_overflow(xs, ys, &z)
                                              : __builtin_sub_overflow(xs, ys, &z));
        zs = s;
        break;
      }
      case DK_ARITH_MUL:
        ok = !__builtin_mul_overflow(x, y, &z);
        zs = s1 + s2;
        break;
      case DK_ARITH_DIV:
      case DK_ARITH_MOD: {
        if (y == 0) {
          if (live_at(live, r)) return row_error(c, "DIVIDE_BY_ZERO", "division by zero");
          out->ok[r] = 0;
          continue;
        }
        if (e->aop == DK_ARITH_MOD) {
          int s = DK_MAX(s1, s2);
          dk_i128 xs, ys;
          ok = dec_rescale(&xs, x, s1, s) && dec_rescale(&ys, y, s2, s);
          if (ok) z = xs % ys;
          zs = s;
          break;
        }
        /* x / y at scale rs: round(x * 10^(rs - s1 + s2 + 1) / y / 10) */
        int k = rs - s1 + s2 + 1;
        dk_i128 num, q;
        if (k >= 0) {
          ok = dec_rescale(&num, x, 0, k) ? (q = num / y, true) : div_pow10(&q, x, k, y);
        } else {
          ok = dec_rescale(&num, x, -k, 0);
          q = ok ? num / y : 0;
        }
        if (ok) {
          dk_i128 q10 = q / 10, d = q % 10;
          if (d < 0) d = -d;
          z = q10 + (d >= 5 ? (q < 0 ? -1 : 1) : 0);
          zs = rs;
        }
        break;
      }
      default:
        break;
    }
    if (ok) ok = dec_rescale(&z, z, zs, rs) && dk__i128_fits_precision(z, out->t.precision);
    if (!ok && live_at(live, r))
      return row_error(c, "NUMERIC_VALUE_OUT_OF_RANGE", "decimal result out of range");
    out->q[r] = ok ? z : 0;
  }
  return DK_OK;
}

static dk_status eval_arith(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live, int depth) {
  const dk_expr *x = e->children[0], *y = e->children[1];
  DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
  if (e->vtype.id == DK_AT_NA) return DK_OK;
  dk_vv a, b;
  if (e->aop == DK_ARITH_CONCAT) {
    DK_RETURN_NOT_OK(eval_as(&a, c, x, &e->vtype, live, depth));
    DK_RETURN_NOT_OK(eval_as(&b, c, y, &e->vtype, live, depth));
    sbuild sb = {c, NULL, 0, 0};
    for (int64_t r = 0; r < c->n; r++) {
      out->ok[r] = a.ok[r] && b.ok[r];
      if (out->ok[r]) {
        size_t la, lb;
        const char *pa = vv_str(&a, r, &la), *pb = vv_str(&b, r, &lb);
        DK_RETURN_NOT_OK(sb_put(&sb, pa, la));
        DK_RETURN_NOT_OK(sb_put(&sb, pb, lb));
      }
      out->off[r + 1] = (int64_t)sb.len;
    }
    out->data = sb.p;
    return DK_OK;
  }
  if (e->vtype.id == DK_AT_DATE32) { /* date +/- days */
    bool date_first = x->vtype.id == DK_AT_DATE32;
    dk_atype it = dk__atype_make(DK_AT_INT64), dt = dk__atype_make(DK_AT_DATE32);
    DK_RETURN_NOT_OK(eval_as(&a, c, date_first ? x : y, &dt, live, depth));
    DK_RETURN_NOT_OK(eval_as(&b, c, date_first ? y : x, &it, live, depth));
    for (int64_t r = 0; r < c->n; r++) {
      out->ok[r] = a.ok[r] && b.ok[r];
      int64_t d = e->aop == DK_ARITH_SUB ? a.i[r] - b.i[r] : a.i[r] + b.i[r];
      if (out->ok[r] && (d < INT32_MIN || d > INT32_MAX) && live_at(live, r))
        return row_error(c, "DATETIME_OVERFLOW", "date out of range");
      out->i[r] = d;
    }
    return DK_OK;
  }
  /* the operand type: the result type, except for decimal and double division */
  dk_atype ot = e->vtype;
  if (t_dec(&e->vtype)) {
    DK_RETURN_NOT_OK(eval_at(&a, c, x, live, depth + 1));
    DK_RETURN_NOT_OK(eval_at(&b, c, y, live, depth + 1));
    dk_atype da = dec_of(x, true), db = dec_of(y, true);
    if (x->vtype.id == DK_AT_NA) da = db;
    if (y->vtype.id == DK_AT_NA) db = da;
    dk_vv ac, bc;
    DK_RETURN_NOT_OK(vv_cast(&ac, c, &a, &da, live));
    DK_RETURN_NOT_OK(vv_cast(&bc, c, &b, &db, live));
    return arith_dec(out, c, e, &ac, &bc, live);
  }
  if (e->aop == DK_ARITH_DIV) ot = dk__atype_make(DK_AT_DOUBLE);
  DK_RETURN_NOT_OK(eval_as(&a, c, x, &ot, live, depth));
  DK_RETURN_NOT_OK(eval_as(&b, c, y, &ot, live, depth));
  if (t_int(&ot)) return arith_int(out, c, e, &a, &b, live);
  bool is_f = e->vtype.id == DK_AT_FLOAT;
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = a.ok[r] && b.ok[r];
    if (!out->ok[r]) continue;
    double p = a.d[r], q = b.d[r], z;
    switch (e->aop) {
      case DK_ARITH_ADD: z = p + q; break;
      case DK_ARITH_SUB: z = p - q; break;
      case DK_ARITH_MUL: z = p * q; break;
      default:
        if (q == 0) {
          if (live_at(live, r)) return row_error(c, "DIVIDE_BY_ZERO", "division by zero");
          out->ok[r] = 0;
          continue;
        }
        z = e->aop == DK_ARITH_DIV ? p / q : fmod(p, q);
        break;
    }
    out->d[r] = is_f ? (double)(float)z : z;
  }
  return DK_OK;
}

/* Three-way compare of row r of two vectors of one type (doubles: NaN greatest). */
static int vv_cmp(const dk_vv *a, const dk_vv *b, int64_t r) {
  const dk_atype *t = &a->t;
  if (t_i64(t)) return a->i[r] < b->i[r] ? -1 : a->i[r] > b->i[r];
  if (t_flt(t)) {
    double x = a->d[r], y = b->d[r];
    bool nx = isnan(x), ny = isnan(y);
    if (nx || ny) return nx && ny ? 0 : nx ? 1 : -1;
    return x < y ? -1 : x > y;
  }
  if (t_dec(t)) return a->q[r] < b->q[r] ? -1 : a->q[r] > b->q[r];
  size_t la, lb;
  const char *pa = vv_str(a, r, &la), *pb = vv_str(b, r, &lb);
  int cm = memcmp(pa, pb, DK_MIN(la, lb));
  if (cm) return cm < 0 ? -1 : 1;
  return la < lb ? -1 : la > lb;
}

/* Copies row r of src (same type) into dst at row r (strings: appended to sb). */
static dk_status vv_copy_row(dk_vv *dst, const dk_vv *src, int64_t r, sbuild *sb) {
  dst->ok[r] = src->ok[r];
  if (!src->ok[r]) return DK_OK;
  if (dst->i) dst->i[r] = src->i[r];
  else if (dst->d) dst->d[r] = src->d[r];
  else if (dst->q) dst->q[r] = src->q[r];
  else if (dst->off) {
    size_t l;
    const char *p = vv_str(src, r, &l);
    return sb_put(sb, p, l);
  }
  return DK_OK;
}

/* CASE and the choosing functions: out = the first alternative chosen per row. */
static dk_status eval_case(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live, int depth) {
  DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
  size_t pairs = (e->n_children - e->has_else) / 2;
  uint8_t *pending = live_and(c, live, out->ok, false); /* rows not decided yet (all) */
  uint8_t *choice = zalloc(c, (size_t)c->n);            /* 1 + branch index, 0 = ELSE/NULL */
  uint8_t *val = zalloc(c, (size_t)c->n), *ok = zalloc(c, (size_t)c->n);
  if (!pending || !choice || !val || !ok) return DK_NOMEM;
  DK_RETURN_IF(pairs > 250, DK_UNSUPPORTED, c->err, "CASE with more than 250 branches");
  dk_vv *res = zalloc(c, (pairs + 1) * sizeof *res);
  if (!res) return DK_NOMEM;
  for (size_t i = 0; i < pairs; i++) {
    DK_RETURN_NOT_OK(dk_expr__eval_pred(c, e->children[2 * i], val, ok, depth + 1));
    uint8_t *take = zalloc(c, (size_t)c->n);
    if (!take) return DK_NOMEM;
    for (int64_t r = 0; r < c->n; r++) {
      take[r] = pending[r] && val[r];
      if (take[r]) {
        choice[r] = (uint8_t)(i + 1);
        pending[r] = 0;
      }
    }
    DK_RETURN_NOT_OK(eval_as(&res[i], c, e->children[2 * i + 1], &e->vtype, take, depth));
  }
  if (e->has_else)
    DK_RETURN_NOT_OK(eval_as(&res[pairs], c, e->children[e->n_children - 1], &e->vtype, pending,
                             depth));
  sbuild sb = {c, NULL, 0, 0};
  for (int64_t r = 0; r < c->n; r++) {
    size_t k = choice[r] ? choice[r] - 1u : pairs;
    if (choice[r] || e->has_else) DK_RETURN_NOT_OK(vv_copy_row(out, &res[k], r, &sb));
    if (out->off) out->off[r + 1] = (int64_t)sb.len;
  }
  if (out->off) out->data = sb.p;
  return DK_OK;
}

static dk_status eval_coalesce(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live,
                               int depth, size_t from) {
  DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
  size_t nk = e->n_children - from;
  dk_vv *v = zalloc(c, nk * sizeof *v);
  uint8_t *pending = zalloc(c, (size_t)c->n);
  uint8_t *which = zalloc(c, (size_t)c->n);
  if (!v || !pending || !which) return DK_NOMEM;
  for (int64_t r = 0; r < c->n; r++) pending[r] = live_at(live, r);
  for (size_t i = 0; i < nk; i++) {
    uint8_t *lv = zalloc(c, (size_t)c->n);
    if (!lv) return DK_NOMEM;
    memcpy(lv, pending, (size_t)c->n);
    DK_RETURN_NOT_OK(eval_as(&v[i], c, e->children[from + i], &e->vtype, lv, depth));
    for (int64_t r = 0; r < c->n; r++)
      if (pending[r] && v[i].ok[r]) {
        pending[r] = 0;
        which[r] = (uint8_t)(i + 1);
      }
  }
  sbuild sb = {c, NULL, 0, 0};
  for (int64_t r = 0; r < c->n; r++) {
    if (which[r]) DK_RETURN_NOT_OK(vv_copy_row(out, &v[which[r] - 1], r, &sb));
    if (out->off) out->off[r + 1] = (int64_t)sb.len;
  }
  if (out->off) out->data = sb.p;
  return DK_OK;
}

static size_t utf8_len(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

/* Byte offset of code point `cp` in s[0..n) (n when past the end). */
static size_t utf8_at(const char *s, size_t n, size_t cp) {
  size_t i = 0;
  for (size_t k = 0; i < n && k < cp; k++) {
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static locale_t utf8_locale(void) {
  static locale_t loc;
  static int tried;
  if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t expect = (locale_t)0;
    if (l && !__atomic_compare_exchange_n(&loc, &expect, l, false, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE))
      freelocale(l);
    __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
}

static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c0 = s[0];
  size_t l = c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4;
  if (l > n) l = n;
  uint32_t v = l == 1 ? c0 : l == 2 ? c0 & 0x1F : l == 3 ? c0 & 0x0F : c0 & 0x07;
  for (size_t i = 1; i < l; i++) v = v << 6 | (s[i] & 0x3F);
  *cp = v;
  return l;
}

static size_t utf8_encode(char *o, uint32_t v) {
  if (v < 0x80) return o[0] = (char)v, 1;
  if (v < 0x800) return o[0] = (char)(0xC0 | v >> 6), o[1] = (char)(0x80 | (v & 0x3F)), 2;
  if (v < 0x10000) {
    o[0] = (char)(0xE0 | v >> 12);
    o[1] = (char)(0x80 | ((v >> 6) & 0x3F));
    o[2] = (char)(0x80 | (v & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | v >> 18);
  o[1] = (char)(0x80 | ((v >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((v >> 6) & 0x3F));
  o[3] = (char)(0x80 | (v & 0x3F));
  return 4;
}

static dk_status eval_string_fn(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live,
                                int depth) {
  dk_vv a;
  DK_RETURN_NOT_OK(eval_at(&a, c, e->children[0], live, depth + 1));
  DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
  if (a.t.id == DK_AT_NA) return DK_OK;
  dk_vv pos, len;
  bool has_len = e->fn == DK_FN_SUBSTRING && e->n_children == 3;
  dk_atype lt = dk__atype_make(DK_AT_INT64);
  if (e->fn == DK_FN_SUBSTRING) {
    DK_RETURN_NOT_OK(eval_as(&pos, c, e->children[1], &lt, live, depth));
    if (has_len) DK_RETURN_NOT_OK(eval_as(&len, c, e->children[2], &lt, live, depth));
  }
  locale_t loc = e->fn == DK_FN_UPPER || e->fn == DK_FN_LOWER ? utf8_locale() : (locale_t)0;
  sbuild sb = {c, NULL, 0, 0};
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = a.ok[r] && (e->fn != DK_FN_SUBSTRING || (pos.ok[r] && (!has_len || len.ok[r])));
    if (out->ok[r]) {
      size_t n;
      const char *s = vv_str(&a, r, &n);
      switch (e->fn) {
        case DK_FN_LENGTH:
          out->i[r] = (int64_t)(a.t.id == DK_AT_BINARY ? n : utf8_len(s, n));
          break;
        case DK_FN_TRIM:
        case DK_FN_LTRIM:
        case DK_FN_RTRIM: {
          size_t b0 = 0, b1 = n;
          if (e->fn != DK_FN_RTRIM) while (b0 < b1 && s[b0] == ' ') b0++;
          if (e->fn != DK_FN_LTRIM) while (b1 > b0 && s[b1 - 1] == ' ') b1--;
          DK_RETURN_NOT_OK(sb_put(&sb, s + b0, b1 - b0));
          break;
        }
        case DK_FN_UPPER:
        case DK_FN_LOWER: {
          bool up = e->fn == DK_FN_UPPER;
          DK_RETURN_NOT_OK(sb_reserve(&sb, 4 * n));
          for (size_t i = 0; i < n;) {
            unsigned char ch = (unsigned char)s[i];
            if (ch < 0x80) {
              sb.p[sb.len++] = (char)(up ? (ch >= 'a' && ch <= 'z' ? ch - 32 : ch)
                                         : (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch));
              i++;
              continue;
            }
            uint32_t cp;
            size_t l = utf8_decode((const unsigned char *)s + i, n - i, &cp);
            /* Java's one-to-many upper-case mappings of Latin text: sharp s, ligatures */
            static const char *const lig[] = {"FF", "FI", "FL", "FFI", "FFL", "ST", "ST"};
            const char *many = !up ? NULL : cp == 0xDF ? "SS"
                             : cp >= 0xFB00 && cp <= 0xFB06 ? lig[cp - 0xFB00] : NULL;
            if (many) { /* never longer than the 2-3 bytes it replaces */
              size_t ml = strlen(many);
              memcpy(sb.p + sb.len, many, ml);
              sb.len += ml;
              i += l;
              continue;
            }
            uint32_t m = cp;
            if (loc) m = (uint32_t)(up ? towupper_l((wint_t)cp, loc) : towlower_l((wint_t)cp, loc));
            if (m == cp || m > 0x10FFFF) memcpy(sb.p + sb.len, s + i, l), sb.len += l;
            else sb.len += utf8_encode(sb.p + sb.len, m);
            i += l;
          }
          break;
        }
        default: { /* SUBSTRING, Spark's UTF8String.substringSQL */
          bool bin = a.t.id == DK_AT_BINARY;
          int64_t total = (int64_t)(bin ? n : utf8_len(s, n)), p = pos.i[r];
          int64_t l = has_len ? len.i[r] : INT64_MAX;
          int64_t start = p > 0 ? p - 1 : p < 0 ? total + p : 0;
          int64_t end = l == INT64_MAX ? total : (start > INT64_MAX - l ? INT64_MAX : start + l);
          if (start < 0) start = 0;
          if (end > total) end = total;
          if (start < end) {
            size_t b0 = bin ? (size_t)start : utf8_at(s, n, (size_t)start);
            size_t b1 = bin ? (size_t)end : utf8_at(s, n, (size_t)end);
            DK_RETURN_NOT_OK(sb_put(&sb, s + b0, b1 - b0));
          }
          break;
        }
      }
    }
    if (out->off) out->off[r + 1] = (int64_t)sb.len;
  }
  if (out->off) out->data = sb.p;
  return DK_OK;
}

static dk_status eval_numeric_fn(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live,
                                 int depth) {
  dk_vv a;
  DK_RETURN_NOT_OK(eval_at(&a, c, e->children[0], live, depth + 1));
  DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
  if (a.t.id == DK_AT_NA) return DK_OK;
  int64_t d = e->fn == DK_FN_ROUND && e->n_children == 2 ? e->children[1]->lit.v.i : 0;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (t_int(&e->vtype)) int_bounds(int_rank(&e->vtype), &lo, &hi);
  for (int64_t r = 0; r < c->n; r++) {
    out->ok[r] = a.ok[r];
    if (!a.ok[r]) continue;
    bool chk = live_at(live, r);
    const dk_atype *t = &a.t;
    switch (e->fn) {
      case DK_FN_ABS:
      case DK_FN_NEGATE:
        if (t_int(t)) {
          int64_t x = a.i[r], z = e->fn == DK_FN_ABS && x >= 0 ? x : -x;
          if ((x == INT64_MIN || z < lo || z > hi) && chk)
            return row_error(c, "ARITHMETIC_OVERFLOW", "integer overflow in abs/negation");
          out->i[r] = z;
        } else if (t_flt(t)) {
          out->d[r] = e->fn == DK_FN_ABS ? fabs(a.d[r]) : -a.d[r];
        } else {
          out->q[r] = e->fn == DK_FN_ABS && a.q[r] >= 0 ? a.q[r] : -a.q[r];
        }
        break;
      case DK_FN_ROUND:
        if (t_int(t)) {
          dk_i128 z = a.i[r];
          if (d < 0) {
            dk_i128 p = dk__pow10((int)DK_MIN(-d, 38));
            if (!dec_rescale(&z, z, (int)-d, 0)) z = 0;
            z *= p;
          }
          if ((z < lo || z > hi) && chk) return row_error(c, "ARITHMETIC_OVERFLOW", "round overflows");
          out->i[r] = (int64_t)z;
        } else if (t_flt(t)) {
          double x = a.d[r];
          dk_i128 q;
          int sc = (int)DK_MAX(d, 0);
          if (!isfinite(x) || !double_to_dec(&q, x, sc)) {
            out->d[r] = x;
          } else {
            if (d < 0) {
              if (!dec_rescale(&q, q, (int)-d, 0)) q = 0;
              out->d[r] = dec_to_double(q, 0) * pow(10, (double)-d);
            } else {
              out->d[r] = dec_to_double(q, sc);
            }
            if (e->vtype.id == DK_AT_FLOAT) out->d[r] = (double)(float)out->d[r];
          }
        } else {
          dk_i128 q;
          if (d < 0) {
            bool ok = dec_rescale(&q, a.q[r], t->scale - (int)d, 0);
            q = ok ? q * dk__pow10((int)-d) : 0;
          } else if (!dec_rescale(&q, a.q[r], t->scale, e->vtype.scale)) {
            q = 0;
          }
          if (!dk__i128_fits_precision(q, e->vtype.precision) && chk)
            return row_error(c, "NUMERIC_VALUE_OUT_OF_RANGE", "round overflows");
          out->q[r] = q;
        }
        break;
      default: /* FLOOR, CEIL */
        if (t_dec(&e->vtype)) {
          dk_i128 p = dk__pow10(t->scale), q = a.q[r] / p, rem = a.q[r] % p;
          if (rem != 0 && (e->fn == DK_FN_FLOOR) == (a.q[r] < 0)) q += e->fn == DK_FN_FLOOR ? -1 : 1;
          out->q[r] = q;
        } else if (t_int(t)) {
          out->i[r] = a.i[r];
        } else {
          /* Spark: (long) Math.floor/ceil, Java's saturating cast (NaN is 0) */
          double x = e->fn == DK_FN_FLOOR ? floor(a.d[r]) : ceil(a.d[r]);
          out->i[r] = isnan(x) ? 0 : x >= 9223372036854775808.0 ? INT64_MAX
                    : x < -9223372036854775808.0 ? INT64_MIN : (int64_t)x;
        }
        break;
    }
  }
  return DK_OK;
}

static dk_status eval_call(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live, int depth) {
  switch (e->fn) {
    case DK_FN_COALESCE:
    case DK_FN_IFNULL:
      return eval_coalesce(out, c, e, live, depth, 0);
    case DK_FN_IF: { /* as CASE WHEN c THEN a ELSE b END */
      DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
      uint8_t *val = zalloc(c, (size_t)c->n), *ok = zalloc(c, (size_t)c->n);
      if (!val || !ok) return DK_NOMEM;
      DK_RETURN_NOT_OK(dk_expr__eval_pred(c, e->children[0], val, ok, depth + 1));
      uint8_t *lt = live_and(c, live, val, true), *lf = live_and(c, live, val, false);
      if (!lt || !lf) return DK_NOMEM;
      dk_vv a, b;
      DK_RETURN_NOT_OK(eval_as(&a, c, e->children[1], &e->vtype, lt, depth));
      DK_RETURN_NOT_OK(eval_as(&b, c, e->children[2], &e->vtype, lf, depth));
      sbuild sb = {c, NULL, 0, 0};
      for (int64_t r = 0; r < c->n; r++) {
        DK_RETURN_NOT_OK(vv_copy_row(out, val[r] ? &a : &b, r, &sb));
        if (out->off) out->off[r + 1] = (int64_t)sb.len;
      }
      if (out->off) out->data = sb.p;
      return DK_OK;
    }
    case DK_FN_NULLIF: {
      dk_expr__binder dummy = {NULL, NULL, NULL};
      dk_atype ct;
      DK_RETURN_NOT_OK(common_type(&dummy, &ct, e->children[0], e->children[1], "nullif"));
      dk_vv a, b, a0;
      DK_RETURN_NOT_OK(eval_at(&a0, c, e->children[0], live, depth + 1));
      DK_RETURN_NOT_OK(vv_cast(&a, c, &a0, &ct, live));
      DK_RETURN_NOT_OK(eval_as(&b, c, e->children[1], &ct, live, depth));
      DK_RETURN_NOT_OK(vv_cast(out, c, &a0, &e->vtype, live));
      uint8_t *ok = zalloc(c, (size_t)c->n);
      if (!ok) return DK_NOMEM;
      for (int64_t r = 0; r < c->n; r++)
        ok[r] = out->ok[r] && !(a.ok[r] && b.ok[r] && ct.id != DK_AT_NA && vv_cmp(&a, &b, r) == 0);
      out->ok = ok;
      return DK_OK;
    }
    case DK_FN_GREATEST:
    case DK_FN_LEAST: {
      DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
      int64_t *best = zalloc(c, (size_t)c->n * sizeof *best);
      dk_vv *v = zalloc(c, e->n_children * sizeof *v);
      if (!best || !v) return DK_NOMEM;
      for (int64_t r = 0; r < c->n; r++) best[r] = -1;
      for (size_t i = 0; i < e->n_children; i++) {
        DK_RETURN_NOT_OK(eval_as(&v[i], c, e->children[i], &e->vtype, live, depth));
        for (int64_t r = 0; r < c->n; r++) {
          if (!v[i].ok[r]) continue;
          if (best[r] < 0) {
            best[r] = (int64_t)i;
            continue;
          }
          int cm = vv_cmp(&v[i], &v[best[r]], r);
          if (e->fn == DK_FN_GREATEST ? cm > 0 : cm < 0) best[r] = (int64_t)i;
        }
      }
      sbuild sb = {c, NULL, 0, 0};
      for (int64_t r = 0; r < c->n; r++) {
        if (best[r] >= 0) DK_RETURN_NOT_OK(vv_copy_row(out, &v[best[r]], r, &sb));
        if (out->off) out->off[r + 1] = (int64_t)sb.len;
      }
      if (out->off) out->data = sb.p;
      return DK_OK;
    }
    case DK_FN_CONCAT: {
      DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
      dk_vv *v = zalloc(c, e->n_children * sizeof *v);
      if (!v) return DK_NOMEM;
      for (size_t i = 0; i < e->n_children; i++)
        DK_RETURN_NOT_OK(eval_as(&v[i], c, e->children[i], &e->vtype, live, depth));
      sbuild sb = {c, NULL, 0, 0};
      for (int64_t r = 0; r < c->n; r++) {
        bool ok = true;
        for (size_t i = 0; i < e->n_children; i++) ok = ok && v[i].ok[r];
        out->ok[r] = ok;
        for (size_t i = 0; ok && i < e->n_children; i++) {
          size_t l;
          const char *p = vv_str(&v[i], r, &l);
          DK_RETURN_NOT_OK(sb_put(&sb, p, l));
        }
        out->off[r + 1] = (int64_t)sb.len;
      }
      out->data = sb.p;
      return DK_OK;
    }
    case DK_FN_DATE_ADD:
    case DK_FN_DATE_SUB: {
      DK_RETURN_NOT_OK(vv_init(out, c, &e->vtype));
      dk_atype dt = dk__atype_make(DK_AT_DATE32), it = dk__atype_make(DK_AT_INT64);
      dk_vv a, b;
      DK_RETURN_NOT_OK(eval_as(&a, c, e->children[0], &dt, live, depth));
      DK_RETURN_NOT_OK(eval_as(&b, c, e->children[1], &it, live, depth));
      for (int64_t r = 0; r < c->n; r++) {
        out->ok[r] = a.ok[r] && b.ok[r];
        int64_t v = e->fn == DK_FN_DATE_ADD ? a.i[r] + b.i[r] : a.i[r] - b.i[r];
        if (out->ok[r] && (v < INT32_MIN || v > INT32_MAX) && live_at(live, r))
          return row_error(c, "DATETIME_OVERFLOW", "date out of range");
        out->i[r] = v;
      }
      return DK_OK;
    }
    case DK_FN_ABS:
    case DK_FN_NEGATE:
    case DK_FN_ROUND:
    case DK_FN_FLOOR:
    case DK_FN_CEIL:
      return eval_numeric_fn(out, c, e, live, depth);
    default:
      return eval_string_fn(out, c, e, live, depth);
  }
}

static dk_status eval_at(dk_vv *out, ectx *c, const dk_expr *e, const uint8_t *live, int depth) {
  DK_RETURN_IF(depth > DK_EXPR_MAX_DEPTH * 4, DK_INVALID, c->err, "expression nests too deeply");
  switch (e->kind) {
    case DK_EXPR_COLUMN:
      return load_column(out, c, e);
    case DK_EXPR_LITERAL:
      return load_literal(out, c, e);
    case DK_EXPR_ARITH:
      return eval_arith(out, c, e, live, depth);
    case DK_EXPR_CASE:
      return eval_case(out, c, e, live, depth);
    case DK_EXPR_CALL:
      return eval_call(out, c, e, live, depth);
    case DK_EXPR_CAST: {
      dk_vv v;
      DK_RETURN_NOT_OK(eval_at(&v, c, e->children[0], live, depth + 1));
      return vv_cast(out, c, &v, &e->vtype, live);
    }
    default: { /* a predicate: BOOL */
      dk_atype bt = dk__atype_make(DK_AT_BOOL);
      DK_RETURN_NOT_OK(vv_init(out, c, &bt));
      uint8_t *val = zalloc(c, (size_t)c->n);
      if (!val) return DK_NOMEM;
      DK_RETURN_NOT_OK(dk_expr__eval_pred(c, e, val, out->ok, depth + 1));
      for (int64_t r = 0; r < c->n; r++) out->i[r] = val[r];
      return DK_OK;
    }
  }
}

dk_status dk_expr__eval_val(dk_vv *out, ectx *c, const dk_expr *e, int depth) {
  return eval_at(out, c, e, NULL, depth);
}

dk_status dk_expr__eval_value_pred(ectx *c, const dk_expr *e, uint8_t *val, uint8_t *ok,
                                   int depth) {
  int64_t n = c->n;
  if (e->kind != DK_EXPR_CMP) { /* a BOOL value */
    dk_vv v;
    DK_RETURN_NOT_OK(eval_at(&v, c, e, NULL, depth + 1));
    for (int64_t r = 0; r < n; r++) {
      ok[r] = v.ok[r];
      val[r] = v.ok[r] && v.i && v.i[r];
    }
    return DK_OK;
  }
  dk_vv a, b;
  DK_RETURN_NOT_OK(eval_as(&a, c, e->children[0], &e->ctype, NULL, depth));
  DK_RETURN_NOT_OK(eval_as(&b, c, e->children[1], &e->ctype, NULL, depth));
  bool na = e->ctype.id == DK_AT_NA;
  for (int64_t r = 0; r < n; r++) {
    bool oa = a.ok[r] && !na, ob = b.ok[r] && !na;
    if (e->op == DK_CMP_NULL_SAFE_EQ) {
      ok[r] = 1;
      val[r] = oa && ob ? vv_cmp(&a, &b, r) == 0 : (!oa && !ob);
      continue;
    }
    ok[r] = oa && ob;
    if (!ok[r]) {
      val[r] = 0;
      continue;
    }
    int cm = vv_cmp(&a, &b, r);
    switch (e->op) {
      case DK_CMP_EQ: val[r] = cm == 0; break;
      case DK_CMP_NE: val[r] = cm != 0; break;
      case DK_CMP_LT: val[r] = cm < 0; break;
      case DK_CMP_LE: val[r] = cm <= 0; break;
      case DK_CMP_GT: val[r] = cm > 0; break;
      default: val[r] = cm >= 0; break;
    }
  }
  return DK_OK;
}

/* ---- to Arrow ------------------------------------------------------------------------------- */

dk_status dk_expr__value_type(dk_atype *out, const dk_expr *a, const dk_expr *b, dk_error *err) {
  DK_RETURN_IF(!a || !a->bound || (b && !b->bound), DK_INVALID, err,
               "the type of a value needs bound expressions");
  if (!b) return *out = a->vtype, DK_OK;
  dk_expr__binder bd = {.err = err};
  return common_type(&bd, out, a, b, "comparison");
}

dk_status dk_expr__bind_value(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                              const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!e || !schema || !schema->format || strcmp(schema->format, "+s") != 0,
               DK_INVALID, err, "binding a value needs an expression and a struct schema");
  dk_expr__binder b = {.schema = schema, .alloc = alloc, .err = err};
  return dk_expr__bind_val(&b, out, e, 0);
}

dk_status dk_expr__eval_value(struct ArrowArray *out, const dk_expr *bound, const dk_atype *as,
                              const char *target, const struct ArrowArray *batch,
                              const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  DK_RETURN_IF(!bound || !bound->bound || !batch || !batch->release, DK_INVALID, err,
               "evaluating a value needs a bound expression and a batch");
  ectx c;
  memset(&c, 0, sizeof c);
  dk__arena_init(&c.ar, alloc, 64 * 1024);
  c.n = batch->length;
  c.batch = batch;
  c.err = err;
  dk_atype t = as ? *as : bound->vtype;
  if (t.id == DK_AT_NA) t = dk__atype_make(DK_AT_INT32);
  dk_atype vt = t; /* the vector type (timestamps in microseconds, ints by rank) */
  if (vt.id == DK_AT_TIMESTAMP) vt.unit = DK_TU_MICRO;
  dk_vv v0, v;
  dk_arr a;
  bool a_init = false;
  dk_status st = eval_at(&v0, &c, bound, NULL, 0);
  if (!st) st = vv_cast(&v, &c, &v0, &vt, NULL);
  if (!st) st = dk__arr_init(&a, &t, alloc, err);
  if (!st) a_init = true;
  if (!st) st = dk__arr_reserve(&a, c.n, err);
  int64_t mul = 1, div = 1;
  if (t.id == DK_AT_TIMESTAMP && t.unit == DK_TU_NANO) mul = 1000;
  if (t.id == DK_AT_TIMESTAMP && t.unit == DK_TU_MILLI) div = 1000;
  if (t.id == DK_AT_TIMESTAMP && t.unit == DK_TU_SECOND) div = 1000000;
  for (int64_t r = 0; r < c.n && !st; r++) {
    if (!v.ok[r]) {
      st = dk__arr_append_null(&a, err);
      continue;
    }
    if (t.id == DK_AT_BOOL) st = dk__arr_append_bool(&a, v.i[r] != 0, err);
    else if (t.id == DK_AT_TIMESTAMP) {
      int64_t x = v.i[r];
      if (mul > 1 && (x > INT64_MAX / mul || x < INT64_MIN / mul))
        st = dk__error_set(err, DK_INVALID, "[DATETIME_OVERFLOW] %s: timestamp out of range",
                           target ? target : "value");
      else
        st = dk__arr_append_int(&a, div > 1 ? (x >= 0 ? x / div : -((-x + div - 1) / div)) : x * mul,
                                err);
    } else if (v.i) st = dk__arr_append_int(&a, v.i[r], err);
    else if (v.d) st = dk__arr_append_double(&a, v.d[r], err);
    else if (v.q) st = dk__arr_append_bytes(&a, &v.q[r], 16, err);
    else if (v.off) {
      size_t l;
      const char *p = vv_str(&v, r, &l);
      st = dk__arr_append_bytes(&a, p, (int64_t)l, err);
    } else {
      st = dk__arr_append_null(&a, err);
    }
  }
  if (!st) st = dk__arr_finish(&a, out, err);
  if (a_init) dk__arr_reset(&a);
  dk__arena_dispose(&c.ar);
  if (st && target && err && !strstr(err->message, target))
    dk__error_prefix(err, "%s", target);
  return st;
}
