/*
** skip.c — conservative data skipping over Delta per-file statistics (Delta protocol,
** "Per-file Statistics"; Spark's string truncation in StatisticsCollection).
**
** can_skip(e, neg) answers "no row of the file can make e (or NOT e when neg) TRUE". NOT is
** pushed down: De Morgan for AND/OR, operator inversion for comparisons (NOT a < b is a >= b
** in three-valued logic: NULL stays NULL), IS NULL <-> IS NOT NULL. Comparison rules on a
** column with [min, max], nullCount and numRecords:
**   every row NULL (nullCount == numRecords) -> skip any comparison
**   col = v   skip if v < min or v > max        col != v  skip if min == max == v
**   col < v   skip if min >= v                  col <= v  skip if min > v
**   col > v   skip if max <= v                  col >= v  skip if max < v
**   IS NULL   skip if nullCount == 0            IS NOT NULL skip if nullCount == numRecords
** Bounds are widened where writers truncate: timestamps are stored at millisecond precision
** (both bounds widened by 999 us), and a string maximum of 32 or more UTF-16 units may be a
** truncated prefix P (older writers) or P plus a tie-breaker character (newer ones), so its
** upper bound is taken as "any string starting with P".
**
** The rules read statistics through a dk_stats_provider (skip.h); the Delta per-file stats
** provider (JSON, minValues/maxValues/nullCount keyed by physical names) is at the end. Float
** column bounds are taken at 32-bit precision: Spark writes a float's min/max as its shortest
** 32-bit text, which read as a double lies off the stored value.
*/
#include <math.h>
#include <stdlib.h>

#include "expr/expr_int.h"
#include "expr/skip.h"

typedef struct sctx {
  const dk_stats_provider *p;
  int64_t num_records;
  bool has_nr;
} sctx;

/* A statistic converted into a comparison domain. */
typedef struct sval {
  int64_t i;
  double d;
  dk_i128 dec;
  const char *s;
  size_t len;
  bool trunc; /* BYTES max: s[0..len) is a prefix P, the bound is "P followed by anything" */
} sval;

/* nullCount of a column; false when unknown. */
static bool null_count(const sctx *c, const dk_colref *col, int64_t *nc) {
  return c->p->null_count(c->p->ctx, col, nc);
}

static bool all_null(const sctx *c, const dk_colref *col) {
  int64_t nc;
  return c->has_nr && null_count(c, col, &nc) && nc == c->num_records;
}

static size_t utf16_prefix_bytes(const char *s, size_t n, int units, int *total_units) {
  size_t i = 0, cut = (size_t)-1;
  int u = 0;
  while (i < n) {
    unsigned char ch = (unsigned char)s[i];
    int len = ch < 0x80 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
    int w = len == 4 ? 2 : 1;
    if (cut == (size_t)-1 && u + w > units) cut = i;
    u += w;
    i += (size_t)len;
  }
  *total_units = u;
  return cut == (size_t)-1 ? n : cut;
}

static int64_t unit_factor(dk_time_unit u) { /* column units per microsecond, or divisor */
  switch (u) {
    case DK_TU_SECOND: return -1000000;
    case DK_TU_MILLI: return -1000;
    case DK_TU_NANO: return 1000;
    default: return 1;
  }
}

static dk_i128 floor_div128(dk_i128 a, dk_i128 b) {
  dk_i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

/* The min (is_max false) or max of column col in domain dom (the comparison's domain). */
static bool stat_value(const sctx *c, const dk_colref *col, dk_dom dom, bool is_max, sval *out) {
  memset(out, 0, sizeof *out);
  dk_stat_value v;
  memset(&v, 0, sizeof v);
  if (!c->p->value(c->p->ctx, col, is_max, &v)) return false;
  switch (dom) {
    case DK_DOM_I64:
      if (!(v.has & DK_STAT_INT)) return false;
      if (col->type.id == DK_AT_DATE32) {
        out->i = v.i;
        return true;
      }
      if (col->type.id == DK_AT_TIMESTAMP) {
        /* millisecond-truncated by writers (towards zero or -inf): widen by 999 us */
        dk_i128 b = (dk_i128)v.i + (is_max ? 999 : -999);
        int64_t f = unit_factor(col->type.unit);
        if (f > 1) b = b * f + (is_max ? f - 1 : 0);
        else if (f < 0) b = floor_div128(b, -f);
        if (b < INT64_MIN || b > INT64_MAX) return false;
        out->i = (int64_t)b;
        return true;
      }
      if (col->dom != DK_DOM_I64) return false;
      out->i = v.i;
      return true;
    case DK_DOM_F64:
      if (!(v.has & DK_STAT_DBL) || isnan(v.d)) return false;
      out->d = v.d;
      return true;
    case DK_DOM_DEC:
      if (!(v.has & DK_STAT_DEC)) return false;
      out->dec = v.dec;
      return true;
    case DK_DOM_BYTES: {
      if (!(v.has & DK_STAT_STR) || col->type.id != DK_AT_STRING) return false;
      out->s = v.s;
      out->len = v.len;
      if (is_max) {
        int units;
        size_t cut = utf16_prefix_bytes(v.s, v.len, DK_STATS_STRING_PREFIX, &units);
        if (units >= DK_STATS_STRING_PREFIX) {
          out->trunc = true;
          out->len = cut;
        }
      }
      return true;
    }
    case DK_DOM_BOOL:
      if (!(v.has & DK_STAT_BOOL)) return false;
      out->i = v.b;
      return true;
    default:
      return false;
  }
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c < 0 ? -1 : 1;
  return an < bn ? -1 : an > bn;
}

static bool starts_with(const char *s, size_t n, const char *p, size_t pn) {
  return n >= pn && (pn == 0 || !memcmp(s, p, pn));
}

/* Literal of a bound COL_LIT comparison as an sval. */
static void lit_sval(const dk_expr *e, sval *out) {
  memset(out, 0, sizeof *out);
  out->i = e->li;
  out->d = e->ld;
  out->dec = e->ldec;
  out->s = e->children[1]->lit.bytes;
  out->len = e->children[1]->lit.len;
}

/* Three-way compare stat vs literal in dom (stat not truncated). */
static int cmp_sval(dk_dom dom, const sval *a, const sval *b) {
  switch (dom) {
    case DK_DOM_I64: case DK_DOM_BOOL: return a->i < b->i ? -1 : a->i > b->i;
    case DK_DOM_F64: return a->d < b->d ? -1 : a->d > b->d;
    case DK_DOM_DEC: return a->dec < b->dec ? -1 : a->dec > b->dec;
    case DK_DOM_BYTES: return bytes_cmp(a->s, a->len, b->s, b->len);
    default: return 0;
  }
}

/* lit > upper bound of max (for a truncated string max: lit exceeds every string with the
** prefix) */
static bool lit_above_max(dk_dom dom, const sval *max, const sval *lit) {
  if (dom == DK_DOM_BYTES && max->trunc)
    return bytes_cmp(lit->s, lit->len, max->s, max->len) > 0 &&
           !starts_with(lit->s, lit->len, max->s, max->len);
  return cmp_sval(dom, lit, max) > 0;
}

static dk_cmp_op negate_op(dk_cmp_op op) {
  switch (op) {
    case DK_CMP_EQ: return DK_CMP_NE;
    case DK_CMP_NE: return DK_CMP_EQ;
    case DK_CMP_LT: return DK_CMP_GE;
    case DK_CMP_LE: return DK_CMP_GT;
    case DK_CMP_GT: return DK_CMP_LE;
    case DK_CMP_GE: return DK_CMP_LT;
    default: return op;
  }
}

/* Can no non-null row satisfy `col op lit`? (op is not NULL_SAFE_EQ) */
static bool cmp_skip(const sctx *c, const dk_expr *e, dk_cmp_op op) {
  const dk_colref *col = &e->children[0]->col;
  if (all_null(c, col)) return true;
  if (e->dom == DK_DOM_F64 && isnan(e->ld)) return false;
  /* NaN is above every value (and != it): a NaN row the max does not show satisfies these */
  if (e->dom == DK_DOM_F64 && c->p->float_max_excludes_nan &&
      (col->type.id == DK_AT_FLOAT || col->type.id == DK_AT_DOUBLE) &&
      (op == DK_CMP_GT || op == DK_CMP_GE || op == DK_CMP_NE))
    return false;
  sval lit, mn, mx;
  lit_sval(e, &lit);
  bool has_min = stat_value(c, col, e->dom, false, &mn);
  bool has_max = stat_value(c, col, e->dom, true, &mx);
  switch (op) {
    case DK_CMP_EQ:
      return (has_min && cmp_sval(e->dom, &mn, &lit) > 0) ||
             (has_max && lit_above_max(e->dom, &mx, &lit));
    case DK_CMP_NE:
      return has_min && has_max && !mx.trunc && cmp_sval(e->dom, &mn, &lit) == 0 &&
             cmp_sval(e->dom, &mx, &lit) == 0;
    case DK_CMP_LT:
      return has_min && cmp_sval(e->dom, &mn, &lit) >= 0;
    case DK_CMP_LE:
      return has_min && cmp_sval(e->dom, &mn, &lit) > 0;
    case DK_CMP_GT:
      /* max <= lit: with a truncated max only when lit is above every P-prefixed string */
      if (!has_max) return false;
      if (e->dom == DK_DOM_BYTES && mx.trunc) return lit_above_max(e->dom, &mx, &lit);
      return cmp_sval(e->dom, &mx, &lit) <= 0;
    case DK_CMP_GE:
      return has_max && lit_above_max(e->dom, &mx, &lit);
    default:
      return false;
  }
}

static bool can_skip(const sctx *c, const dk_expr *e, bool neg, int depth);

static bool skip_cmp(const sctx *c, const dk_expr *e, bool neg) {
  switch (e->ck) {
    case DK_CK_NULL:
      return true; /* NULL, and NOT NULL is NULL */
    case DK_CK_LIT_LIT:
      return !(e->cres ^ neg);
    case DK_CK_COL_COL:
    case DK_CK_VALUES:
      return false;
    case DK_CK_CONST: {
      const dk_colref *col = &e->children[0]->col;
      bool nonnull_true = (e->cres ^ neg) && !all_null(c, col);
      int64_t nc;
      bool null_true = e->op == DK_CMP_NULL_SAFE_EQ && neg &&
                       !(null_count(c, col, &nc) && nc == 0);
      return !nonnull_true && !null_true;
    }
    case DK_CK_COL_LIT:
      break;
  }
  if (e->op == DK_CMP_NULL_SAFE_EQ) {
    if (!neg) return cmp_skip(c, e, DK_CMP_EQ); /* NULL rows are FALSE */
    /* NOT (col <=> v) = col != v OR col IS NULL */
    int64_t nc;
    return cmp_skip(c, e, DK_CMP_NE) && null_count(c, &e->children[0]->col, &nc) && nc == 0;
  }
  return cmp_skip(c, e, neg ? negate_op(e->op) : e->op);
}

static bool skip_prefix(const sctx *c, const dk_colref *col, const dk_lit *p, bool neg) {
  if (all_null(c, col)) return true;
  if (col->type.id != DK_AT_STRING) return false;
  sval mn, mx;
  bool has_min = stat_value(c, col, DK_DOM_BYTES, false, &mn);
  bool has_max = stat_value(c, col, DK_DOM_BYTES, true, &mx);
  if (!neg) {
    /* matching values lie in [P, P followed by anything) */
    sval lp = {.s = p->bytes, .len = p->len};
    if (has_max && lit_above_max(DK_DOM_BYTES, &mx, &lp)) return true;
    if (has_min && bytes_cmp(mn.s, mn.len, p->bytes, p->len) > 0 &&
        !starts_with(mn.s, mn.len, p->bytes, p->len))
      return true;
    return false;
  }
  /* NOT STARTS_WITH can be TRUE only if some value lacks the prefix: skip when min and the
  ** max bound both carry it (everything between them then does too) */
  return has_min && has_max && starts_with(mn.s, mn.len, p->bytes, p->len) &&
         starts_with(mx.s, mx.len, p->bytes, p->len);
}

/* LIKE implies STARTS_WITH(its literal prefix); only the positive form can use that. */
static bool skip_like(const sctx *c, const dk_expr *e, bool neg) {
  const dk_colref *col = &e->children[0]->col;
  if (all_null(c, col)) return true;
  if (neg) return false;
  const dk_lit *p = &e->children[1]->lit;
  char buf[256];
  size_t k = 0;
  for (size_t i = 0; i < p->len && k < sizeof buf; i++) {
    char ch = p->bytes[i];
    if (ch == '%' || ch == '_') break;
    if (ch == '\\' && i + 1 < p->len) ch = p->bytes[++i];
    buf[k++] = ch;
  }
  if (k == 0) return false;
  dk_lit pre = {.type = DK_LIT_STRING, .bytes = buf, .len = k};
  return skip_prefix(c, col, &pre, false);
}

static bool can_skip(const sctx *c, const dk_expr *e, bool neg, int depth) {
  if (depth > DK_EXPR_MAX_DEPTH * 2) return false;
  switch (e->kind) {
    case DK_EXPR_LITERAL:
      if (e->lit.type == DK_LIT_NULL) return true;
      return e->lit.type == DK_LIT_BOOL && !(e->lit.v.b ^ neg);
    case DK_EXPR_COLUMN: { /* boolean column */
      if (all_null(c, &e->col)) return true;
      sval v;
      /* TRUE needs a true value (max == true); NOT needs a false one (min == false) */
      if (!neg) return stat_value(c, &e->col, DK_DOM_BOOL, true, &v) && !v.i;
      return stat_value(c, &e->col, DK_DOM_BOOL, false, &v) && v.i;
    }
    case DK_EXPR_AND:
    case DK_EXPR_OR: {
      bool any = (e->kind == DK_EXPR_AND) != neg; /* AND (or negated OR): any child skips */
      for (size_t i = 0; i < e->n_children; i++) {
        bool s = can_skip(c, e->children[i], neg, depth + 1);
        if (any && s) return true;
        if (!any && !s) return false;
      }
      return !any;
    }
    case DK_EXPR_NOT:
      return can_skip(c, e->children[0], !neg, depth + 1);
    case DK_EXPR_IS_NULL:
    case DK_EXPR_IS_NOT_NULL: {
      const dk_expr *ch = e->children[0];
      bool want_null = (e->kind == DK_EXPR_IS_NULL) != neg;
      if (ch->kind == DK_EXPR_LITERAL) return (ch->lit.type == DK_LIT_NULL) != want_null;
      if (ch->kind != DK_EXPR_COLUMN || ch->col.dom == DK_DOM_NONE) return false;
      int64_t nc;
      if (!null_count(c, &ch->col, &nc)) return false;
      if (want_null) return nc == 0;
      return c->has_nr && nc == c->num_records;
    }
    case DK_EXPR_CMP:
      return skip_cmp(c, e, neg);
    case DK_EXPR_STARTS_WITH:
      return skip_prefix(c, &e->children[0]->col, &e->children[1]->lit, neg);
    case DK_EXPR_LIKE:
      return skip_like(c, e, neg);
    default:
      return false;
  }
}

dk_skip_result dk_expr__skip_stats(const dk_expr *bound, const dk_stats_provider *stats) {
  if (!bound || !bound->bound) return DK_SKIP_MUST_READ;
  sctx c = {stats, 0, false};
  c.has_nr = stats->num_rows(stats->ctx, &c.num_records);
  return can_skip(&c, bound, false, 0) ? DK_SKIP_CAN_SKIP : DK_SKIP_MUST_READ;
}

static void skip_colrefs(const dk_expr *e, void (*fn)(void *, const dk_colref *), void *ctx,
                         int depth) {
  if (depth > DK_EXPR_MAX_DEPTH * 2) return; /* as can_skip */
  switch (e->kind) {
    case DK_EXPR_COLUMN:
      fn(ctx, &e->col);
      return;
    case DK_EXPR_AND:
    case DK_EXPR_OR:
    case DK_EXPR_NOT:
      for (size_t i = 0; i < e->n_children; i++) skip_colrefs(e->children[i], fn, ctx, depth + 1);
      return;
    case DK_EXPR_CMP:
      if (e->ck == DK_CK_COL_LIT || e->ck == DK_CK_CONST) fn(ctx, &e->children[0]->col);
      return;
    case DK_EXPR_IS_NULL:
    case DK_EXPR_IS_NOT_NULL:
      if (e->children[0]->kind == DK_EXPR_COLUMN && e->children[0]->col.dom != DK_DOM_NONE)
        fn(ctx, &e->children[0]->col);
      return;
    case DK_EXPR_STARTS_WITH:
    case DK_EXPR_LIKE:
      fn(ctx, &e->children[0]->col);
      return;
    default:
      return;
  }
}

void dk_expr__skip_colrefs(const dk_expr *e, void (*fn)(void *ctx, const dk_colref *col),
                           void *ctx) {
  if (e && e->bound) skip_colrefs(e, fn, ctx, 0);
}

bool dk_expr__colref_same_stats(const dk_colref *a, const dk_colref *b) {
  if (a->depth != b->depth || a->type.id != b->type.id || a->type.scale != b->type.scale ||
      a->dom != b->dom)
    return false;
  for (int i = 0; i < a->depth; i++)
    if (strcmp(a->phys[i], b->phys[i])) return false;
  return true;
}

dk_status dk_expr__colref_copy(const dk_colref **out, const dk_colref *src, dk_arena *ar,
                               dk_error *err) {
  *out = NULL;
  dk_colref *c = dk__arena_alloc(ar, sizeof *c, err);
  if (!c) return DK_NOMEM;
  memset(c, 0, sizeof *c);
  c->depth = src->depth;
  c->type = src->type;
  c->dom = src->dom;
  c->phys = dk__arena_alloc(ar, (size_t)(src->depth ? src->depth : 1) * sizeof(char *), err);
  if (!c->phys) return DK_NOMEM;
  for (int i = 0; i < src->depth; i++)
    if (!(c->phys[i] = dk__arena_strndup(ar, src->phys[i], strlen(src->phys[i]), err)))
      return DK_NOMEM;
  *out = c;
  return DK_OK;
}

unsigned dk_expr__colref_stat_reps(const dk_colref *col) {
  unsigned r = DK_STAT_INT | DK_STAT_DBL | DK_STAT_BOOL;
  if (col->dom == DK_DOM_DEC) r |= DK_STAT_DEC;
  if (col->type.id == DK_AT_STRING) r |= DK_STAT_STR;
  return r;
}

int dk_expr__colref_depth(const dk_colref *col) { return col->depth; }
const char *dk_expr__colref_phys(const dk_colref *col, int level) { return col->phys[level]; }

/* ---- the Delta per-file stats provider (parsed JSON) -------------------------------------- */

static const dk_json_value *member(const dk_json_value *obj, const char *key) {
  if (!obj || obj->type != DK_JSON_OBJECT) return NULL;
  const dk_json_value *r = NULL;
  for (uint32_t i = 0; i < obj->len; i++)
    if (!strcmp(obj->u.members[i].key, key)) r = &obj->u.members[i].value;
  return r;
}

static const dk_json_value *lookup(const dk_json_value *root, const char *section,
                                   const dk_colref *col) {
  const dk_json_value *v = member(root, section);
  for (int i = 0; v && i < col->depth; i++) v = member(v, col->phys[i]);
  return v;
}

/* A count (numRecords, nullCount): a non-negative integer that fits, else no statistic at
** all (strtoll's clamping would make two huge counts compare equal: "every row is null"). */
static bool json_i64(const dk_json_value *v, int64_t *out) {
  return dk__json_as_i64(v, out) && *out >= 0;
}

bool dk_expr__json_num_rows(const dk_json_value *root, int64_t *out) {
  return json_i64(member(root, "numRecords"), out);
}

bool dk_expr__json_null_count(const dk_json_value *root, const dk_colref *col, int64_t *out) {
  return json_i64(lookup(root, "nullCount", col), out);
}

/* A minValues/maxValues entry in every form it parses as for the column's type: dates and
** timestamps from their text, numbers as integer, double (32-bit for float columns) and
** decimal at the column's scale. */
bool dk_expr__json_value(const dk_json_value *root, const dk_colref *col, bool is_max,
                         dk_stat_value *out) {
  const dk_json_value *v = lookup(root, is_max ? "maxValues" : "minValues", col);
  if (!v) return false;
  dk_error e2;
  dk_error_init(&e2);
  switch (v->type) {
    case DK_JSON_STRING: {
      out->has = DK_STAT_STR;
      out->s = v->u.str;
      out->len = v->len;
      if (col->type.id == DK_AT_DATE32) {
        int32_t d;
        if (dk__parse_date(&d, v->u.str, v->len, &e2) == DK_OK) out->has |= DK_STAT_INT, out->i = d;
      } else if (col->type.id == DK_AT_TIMESTAMP) {
        bool zone;
        if (dk__parse_timestamp(&out->i, &zone, v->u.str, v->len, &e2) == DK_OK)
          out->has |= DK_STAT_INT;
      }
      return true;
    }
    case DK_JSON_NUMBER: {
      /* (integers only for integer columns, decimals only for decimal ones: the comparison
      ** domains that read them) */
      if (col->dom == DK_DOM_I64 && col->type.id != DK_AT_DATE32 &&
          col->type.id != DK_AT_TIMESTAMP && dk__json_as_i64(v, &out->i)) /* may be < 0 */
        out->has |= DK_STAT_INT;
      char *end;
      double d = strtod(v->u.num, &end);
      if (!*end && !isnan(d)) {
        out->has |= DK_STAT_DBL;
        out->d = col->type.id == DK_AT_FLOAT ? (double)(float)d : d;
      }
      if (col->dom == DK_DOM_DEC &&
          dk__parse_decimal(&out->dec, v->u.num, v->len, col->type.scale, &e2) == DK_OK)
        out->has |= DK_STAT_DEC;
      return out->has != 0;
    }
    case DK_JSON_BOOL:
      out->has = DK_STAT_BOOL;
      out->b = v->u.b;
      return true;
    default:
      return false;
  }
}

static bool json_num_rows(const void *ctx, int64_t *out) {
  return dk_expr__json_num_rows(ctx, out);
}
static bool json_null_count(const void *ctx, const dk_colref *col, int64_t *out) {
  return dk_expr__json_null_count(ctx, col, out);
}
static bool json_value(const void *ctx, const dk_colref *col, bool is_max, dk_stat_value *out) {
  return dk_expr__json_value(ctx, col, is_max, out);
}

dk_skip_result dk_expr__skip_eval(const dk_expr *bound, const dk_file_stats *stats) {
  const dk_json_value *root = stats && stats->root && stats->root->type == DK_JSON_OBJECT
                                  ? stats->root : NULL;
  dk_stats_provider p = {root, json_num_rows, json_null_count, json_value,
                         stats && root && stats->float_max_excludes_nan};
  return dk_expr__skip_stats(bound, &p);
}

bool dk_expr__has_columns(const dk_expr *e) {
  if (!e) return false;
  if (e->kind == DK_EXPR_COLUMN) return true;
  for (size_t i = 0; i < e->n_children; i++)
    if (dk_expr__has_columns(e->children[i])) return true;
  return false;
}
