/*
** expr_fuzzer.c — predicate fuzz target (include/dk/expr.h, src/expr).
**
** For each input that parses:
**  1. print, re-parse, print again: the two printed forms must be identical;
**  2. bind against a fixed 10-column schema; when binding succeeds, evaluate over a fixed
**     5-row batch: dk_expr_eval and dk_expr_eval_filter must agree, and NOT p must be the
**     three-valued negation of p;
**  3. data skipping with statistics that exactly describe that batch must never skip when
**     some row is TRUE (soundness), for p and for NOT p.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/array.h"
#include "dk/expr.h"
#include "expr/skip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ArrowSchema g_schema;
static struct ArrowArray g_batch;
static dk_file_stats g_stats;
static int g_ready;

static void die(const char *what, const dk_error *err) {
  fprintf(stderr, "expr_fuzzer: %s: %s\n", what, err ? err->message : "");
  abort();
}

static void field(struct ArrowSchema *s, const char *fmt, const char *name, int nkids) {
  dk_atype t;
  dk_error err = {0};
  if (dk__atype_parse(&t, fmt, &err) || dk__schema_init(s, &t, name, ARROW_FLAG_NULLABLE, nkids, &err))
    die("schema", &err);
}

/* ---- a tiny hand-built stats DOM --------------------------------------------------------- */

static dk_json_value jnum(const char *t) {
  dk_json_value v = {.type = DK_JSON_NUMBER, .len = (uint32_t)strlen(t)};
  v.u.num = t;
  return v;
}
static dk_json_value jstr(const char *t) {
  dk_json_value v = {.type = DK_JSON_STRING, .len = (uint32_t)strlen(t)};
  v.u.str = t;
  return v;
}
static dk_json_value jbool(bool b) {
  dk_json_value v = {.type = DK_JSON_BOOL};
  v.u.b = b;
  return v;
}
static dk_json_value jobj(int n, const char *const *keys, const dk_json_value *vals) {
  dk_json_member *m = calloc((size_t)n, sizeof *m);
  for (int i = 0; i < n; i++) {
    m[i].key = keys[i];
    m[i].klen = (uint32_t)strlen(keys[i]);
    m[i].value = vals[i];
  }
  dk_json_value v = {.type = DK_JSON_OBJECT, .len = (uint32_t)n};
  v.u.members = m;
  return v;
}

static const char *const COLS[] = {"i", "l", "s", "d", "dt", "ts", "dec", "b", "st"};

static void build_stats(void) {
  const char *sk[] = {"x", "y"};
  dk_json_value st_min[2] = {jnum("1"), jstr("a")}, st_max[2] = {jnum("7"), jstr("z")},
                st_nc[2] = {jnum("2"), jnum("2")};
  dk_json_value mins[9] = {jnum("1"), jnum("-3"), jstr("apple"), jnum("-2.0"), jstr("2024-01-01"),
                           jstr("2024-01-01T00:00:00.000Z"), jnum("-1.00"), jbool(false),
                           jobj(2, sk, st_min)};
  dk_json_value maxs[9] = {jnum("5"), jnum("10"), jstr("melon"), jnum("2.5"), jstr("2024-01-31"),
                           jstr("2024-01-01T00:00:01.500Z"), jnum("9.99"), jbool(true),
                           jobj(2, sk, st_max)};
  dk_json_value ncs[9] = {jnum("2"), jnum("1"), jnum("2"), jnum("1"), jnum("2"),
                          jnum("2"), jnum("1"), jnum("2"), jobj(2, sk, st_nc)};
  const char *rk[] = {"numRecords", "minValues", "maxValues", "nullCount"};
  dk_json_value rv[4] = {jnum("5"), jobj(9, COLS, mins), jobj(9, COLS, maxs), jobj(9, COLS, ncs)};
  static dk_json_value root;
  root = jobj(4, rk, rv);
  g_stats.root = &root;
}

static void setup(void) {
  dk_error err = {0};
  field(&g_schema, "+s", "", 10);
  const char *fmts[] = {"i", "l", "u", "g", "tdD", "tsu:UTC", "d:10,2", "b", "+s", "z"};
  const char *names[] = {"i", "l", "s", "d", "dt", "ts", "dec", "b", "st", "bin"};
  for (int c = 0; c < 10; c++) field(g_schema.children[c], fmts[c], names[c], c == 8 ? 2 : 0);
  field(g_schema.children[8]->children[0], "i", "x", 0);
  field(g_schema.children[8]->children[1], "u", "y", 0);
  dk_arr a;
  if (dk__arr_init_from_schema(&a, &g_schema, NULL, &err)) die("arr", &err);
  /* rows (NULL-marked by has[]): see build_stats for the matching statistics */
  const int64_t iv[5] = {1, 5, 0, 3, 0}, lv[5] = {10, -3, 0, 7, 0};
  const char *sv[5] = {"apple", "melon", NULL, "banana", NULL};
  const double dv[5] = {1.5, -2.0, 0, 0.0, 2.5};
  const int64_t dtv[5] = {19723, 19753, 0, 19730, 0};
  const int64_t tsv[5] = {1704067200000000LL, 1704067201500000LL, 0, 1704067200500000LL, 0};
  const int64_t decv[5] = {150, 999, 0, -100, 0};
  const int bv[5] = {1, 0, -1, 1, -1};
  const int has_i[5] = {1, 1, 0, 1, 0}, has_l[5] = {1, 1, 0, 1, 1}, has_d[5] = {1, 1, 0, 1, 1};
  const int has_dt[5] = {1, 1, 0, 1, 0}, has_dec[5] = {1, 1, 0, 1, 1};
  const int st_null[5] = {0, 0, 1, 0, 0};
  const int64_t xv[5] = {1, 7, 0, -1, 3};
  const char *yv[5] = {"a", "z", NULL, "m", NULL};
  const char *binv[5] = {"\x01", "\x02", NULL, NULL, "\x03"};
  dk_status st = DK_OK;
  for (int r = 0; r < 5 && !st; r++) {
    dk_arr *k = a.children;
    st = has_i[r] ? dk__arr_append_int(&k[0], iv[r], &err) : dk__arr_append_null(&k[0], &err);
    if (!st) st = has_l[r] ? dk__arr_append_int(&k[1], lv[r], &err) : dk__arr_append_null(&k[1], &err);
    if (!st) st = sv[r] ? dk__arr_append_bytes(&k[2], sv[r], (int64_t)strlen(sv[r]), &err) : dk__arr_append_null(&k[2], &err);
    if (!st) st = has_d[r] ? dk__arr_append_double(&k[3], dv[r], &err) : dk__arr_append_null(&k[3], &err);
    if (!st) st = has_dt[r] ? dk__arr_append_int(&k[4], dtv[r], &err) : dk__arr_append_null(&k[4], &err);
    if (!st) st = has_dt[r] ? dk__arr_append_int(&k[5], tsv[r], &err) : dk__arr_append_null(&k[5], &err);
    if (!st) {
      __int128 u = decv[r];
      uint8_t b16[16];
      memcpy(b16, &u, 16);
      st = has_dec[r] ? dk__arr_append_bytes(&k[6], b16, 16, &err) : dk__arr_append_null(&k[6], &err);
    }
    if (!st) st = bv[r] >= 0 ? dk__arr_append_bool(&k[7], bv[r], &err) : dk__arr_append_null(&k[7], &err);
    if (!st) {
      if (st_null[r]) {
        st = dk__arr_append_null(&k[8], &err);
      } else {
        dk_arr *sc = k[8].children;
        st = r == 3 ? dk__arr_append_null(&sc[0], &err) : dk__arr_append_int(&sc[0], xv[r], &err);
        if (!st) st = yv[r] ? dk__arr_append_bytes(&sc[1], yv[r], 1, &err) : dk__arr_append_null(&sc[1], &err);
        if (!st) st = dk__arr_finish_element(&k[8], &err);
      }
    }
    if (!st) st = binv[r] ? dk__arr_append_bytes(&k[9], binv[r], 1, &err) : dk__arr_append_null(&k[9], &err);
    if (!st) st = dk__arr_finish_element(&a, &err);
  }
  if (st || dk__arr_finish(&a, &g_batch, &err)) die("batch", &err);
  dk__arr_reset(&a);
  build_stats();
  g_ready = 1;
}

/* 0 FALSE, 1 NULL, 2 TRUE */
static int tri(const struct ArrowArray *a, int64_t i) {
  const uint8_t *v = a->buffers[0];
  if (v && !dk__bit_get(v, i)) return 1;
  return dk__bit_get(a->buffers[1], i) ? 2 : 0;
}

static void check_semantics(const dk_expr *e) {
  dk_error err = {0};
  dk_expr *b = NULL, *neg = NULL, *bneg = NULL;
  if (dk_expr_bind(&b, e, &g_schema, &err) != DK_OK) return;
  struct ArrowArray out, nout;
  if (dk_expr_eval(&out, b, &g_schema, &g_batch, &err)) die("eval of a bound predicate", &err);
  uint8_t mask[5];
  int64_t sel;
  if (dk_expr_eval_filter(mask, &sel, b, &g_schema, &g_batch, &err)) die("filter", &err);
  int any_true = 0, any_false = 0;
  for (int i = 0; i < 5; i++) {
    if (mask[i] != (tri(&out, i) == 2)) die("filter and eval disagree", NULL);
    any_true |= tri(&out, i) == 2;
    any_false |= tri(&out, i) == 0;
  }
  if (dk_expr_not(&neg, dk_expr_ref((dk_expr *)e), &err) || dk_expr_bind(&bneg, neg, &g_schema, &err) ||
      dk_expr_eval(&nout, bneg, &g_schema, &g_batch, &err))
    die("NOT of a bound predicate", &err);
  for (int i = 0; i < 5; i++)
    if (tri(&nout, i) != 2 - tri(&out, i)) die("NOT p is not the negation of p", NULL);
  if (any_true && dk_expr__skip_eval(b, &g_stats) == DK_SKIP_CAN_SKIP) {
    char *s = NULL;
    if (dk_expr_to_string(&s, e, &err) != DK_OK) s = NULL;
    fprintf(stderr, "unsound skip: %s\n", s ? s : "?");
    abort();
  }
  if (any_false && dk_expr__skip_eval(bneg, &g_stats) == DK_SKIP_CAN_SKIP) {
    char *s = NULL;
    if (dk_expr_to_string(&s, neg, &err) != DK_OK) s = NULL;
    fprintf(stderr, "unsound skip: %s\n", s ? s : "?");
    abort();
  }
  out.release(&out);
  nout.release(&nout);
  dk_expr_free(b);
  dk_expr_free(neg);
  dk_expr_free(bneg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_ready) setup();
  dk_error err;
  dk_error_init(&err);
  dk_expr *e = NULL, *e2 = NULL;
  char *s1 = NULL, *s2 = NULL;
  if (dk_expr_parsen(&e, (const char *)data, size, &err) != DK_OK) return 0;
  if (dk_expr_to_string(&s1, e, &err) != DK_OK) abort();
  dk_error_init(&err);
  if (dk_expr_parse(&e2, s1, &err) != DK_OK) {
    fprintf(stderr, "printed form does not parse: %s\n  %s\n", s1, err.message);
    abort();
  }
  if (dk_expr_to_string(&s2, e2, &err) != DK_OK) abort();
  if (strcmp(s1, s2) != 0) {
    fprintf(stderr, "round trip differs:\n  %s\n  %s\n", s1, s2);
    abort();
  }
  check_semantics(e);
  dk_expr_string_free(s1);
  dk_expr_string_free(s2);
  dk_expr_free(e);
  dk_expr_free(e2);
  return 0;
}
