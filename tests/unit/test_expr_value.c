/*
** test_expr_value.c — value expressions (src/expr/value.c) against Spark SQL.
**
** Oracle: tests/unit/data/value_vectors.jsonl, written by tests/interop/gen_value_vectors.py:
** Spark 4.2 (ANSI mode on) evaluated ~900 random arithmetic / CASE / CAST / function
** expressions over a 40-row table and recorded each result's type and values, or that it
** failed. dk parses each expression, binds it to the same table and must give the same type
** and the same value in every row (or fail too). Plus round trips of the printer and errors.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "codec/json/json.h"
#include "expr/expr.h"
#include "expr/expr_int.h"
#include "test.h"
#include "vectors.h"

#define VECTORS "value_vectors.jsonl"

static void spark_type(char *buf, size_t cap, const dk_atype *t) {
  switch (t->id) {
    case DK_AT_BOOL: snprintf(buf, cap, "boolean"); break;
    case DK_AT_INT8: snprintf(buf, cap, "tinyint"); break;
    case DK_AT_INT16: snprintf(buf, cap, "smallint"); break;
    case DK_AT_INT32: snprintf(buf, cap, "int"); break;
    case DK_AT_INT64: snprintf(buf, cap, "bigint"); break;
    case DK_AT_FLOAT: snprintf(buf, cap, "float"); break;
    case DK_AT_DOUBLE: snprintf(buf, cap, "double"); break;
    case DK_AT_DECIMAL128: snprintf(buf, cap, "decimal(%d,%d)", t->precision, t->scale); break;
    case DK_AT_STRING: snprintf(buf, cap, "string"); break;
    case DK_AT_DATE32: snprintf(buf, cap, "date"); break;
    case DK_AT_TIMESTAMP: snprintf(buf, cap, "timestamp"); break;
    case DK_AT_NA: snprintf(buf, cap, "void"); break;
    default: snprintf(buf, cap, "?"); break;
  }
}

/* Row r of an evaluated array as the generator's JSON text (numbers, "decimal", ...). */
static void cell(char *buf, size_t cap, const struct ArrowArray *a, const dk_atype *t, int64_t r) {
  const uint8_t *valid = a->null_count ? a->buffers[0] : NULL;
  if (valid && !dk__bit_get(valid, r + a->offset)) {
    snprintf(buf, cap, "null");
    return;
  }
  const void *b = a->buffers[1];
  int64_t i = r + a->offset;
  switch (t->id) {
    case DK_AT_BOOL: snprintf(buf, cap, "%s", dk__bit_get(b, i) ? "true" : "false"); break;
    case DK_AT_INT8: snprintf(buf, cap, "%d", ((const int8_t *)b)[i]); break;
    case DK_AT_INT16: snprintf(buf, cap, "%d", ((const int16_t *)b)[i]); break;
    case DK_AT_INT32: snprintf(buf, cap, "%d", ((const int32_t *)b)[i]); break;
    case DK_AT_INT64: case DK_AT_TIMESTAMP:
      snprintf(buf, cap, "%lld", (long long)((const int64_t *)b)[i]);
      break;
    case DK_AT_DATE32: {
      char d[32];
      dk__format_date(d, sizeof d, ((const int32_t *)b)[i]);
      snprintf(buf, cap, "\"%s\"", d);
      break;
    }
    case DK_AT_FLOAT: case DK_AT_DOUBLE: {
      double d = t->id == DK_AT_FLOAT ? ((const float *)b)[i] : ((const double *)b)[i];
      if (isnan(d)) snprintf(buf, cap, "\"NaN\"");
      else if (isinf(d)) snprintf(buf, cap, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
      else snprintf(buf, cap, "%.17g", d);
      break;
    }
    case DK_AT_DECIMAL128: {
      __int128 v;
      memcpy(&v, (const uint8_t *)b + 16 * i, 16);
      char d[64];
      dk__format_decimal(d, sizeof d, v, t->scale);
      snprintf(buf, cap, "\"%s\"", d);
      break;
    }
    case DK_AT_STRING: {
      const int32_t *o = b;
      snprintf(buf, cap, "\"%.*s\"", (int)(o[i + 1] - o[i]), (const char *)a->buffers[2] + o[i]);
      break;
    }
    default: snprintf(buf, cap, "?"); break;
  }
}

static void want_cell(char *buf, size_t cap, const dk_json_value *v, const dk_atype *t) {
  if (v->type == DK_JSON_NULL) snprintf(buf, cap, "null");
  else if (v->type == DK_JSON_BOOL) snprintf(buf, cap, "%s", v->u.b ? "true" : "false");
  else if (v->type == DK_JSON_NUMBER) snprintf(buf, cap, "%s", v->u.num);
  else if ((t->id == DK_AT_FLOAT || t->id == DK_AT_DOUBLE) && strcmp(v->u.str, "NaN") &&
           strcmp(v->u.str, "Infinity") && strcmp(v->u.str, "-Infinity")) {
    double d = strtod(v->u.str, NULL);
    if (t->id == DK_AT_FLOAT) d = (float)d;
    snprintf(buf, cap, "%.17g", d);
  } else snprintf(buf, cap, "\"%s\"", v->u.str);
}

DK_TEST(expr_value__spark_vectors) {
  dk_error err;
  dk_error_init(&err);
  dk_test_vectors vx;
  CHECK(dk_test_vectors_load(&vx, VECTORS, &err));
  int cases = 0, ok_cases = 0, err_cases = 0, bad = 0;
  const dk_json_value *c;
  while (dk_test_vectors_next(&vx, &c, &err)) {
    const char *text = dk__json_get(c, "expr")->u.str;
    const dk_json_value *want_err = dk__json_get(c, "error");
    cases++;
    dk_expr *e = NULL, *bound = NULL;
    struct ArrowArray out;
    memset(&out, 0, sizeof out);
    dk_error e2;
    dk_error_init(&e2);
    dk_status st = dk_expr_parse(&e, text, &e2);
    if (!st) st = dk_expr__bind_value(&bound, e, &vx.schema, NULL, &e2);
    if (!st) st = dk_expr__eval_value(&out, bound, NULL, NULL, &vx.batch, NULL, &e2);
    if (want_err) {
      if (st == DK_OK) {
        if (bad++ < 15)
          printf("  %s: Spark fails (%s), dk does not\n", text, want_err->u.str);
      } else {
        err_cases++;
      }
    } else if (st) {
      if (bad++ < 15) printf("  %s: dk fails: %s\n", text, e2.message);
    } else {
      char got_t[64];
      spark_type(got_t, sizeof got_t, &bound->vtype);
      const char *wt = dk__json_get(c, "type")->u.str;
      const dk_json_value *vals = dk__json_get(c, "values");
      if (strcmp(got_t, wt)) {
        if (bad++ < 15) printf("  %s: type %s, Spark %s\n", text, got_t, wt);
      } else {
        int mism = 0;
        for (uint32_t r = 0; r < vals->len && !mism; r++) {
          char g[512], w[512];
          cell(g, sizeof g, &out, &bound->vtype, r);
          want_cell(w, sizeof w, &vals->u.items[r], &bound->vtype);
          if (strcmp(g, w)) {
            mism = 1;
            if (bad++ < 15) printf("  %s: row %u: dk %s, Spark %s\n", text, r, g, w);
          }
        }
        if (!mism) ok_cases++;
      }
    }
    if (out.release) out.release(&out);
    dk_expr_free(bound);
    dk_expr_free(e);
  }
  printf("  value vectors: %d cases, %d equal to Spark, %d failing as in Spark, %d differ\n",
         cases, ok_cases, err_cases, bad);
  CHECK(cases > 500);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(err.code, DK_OK); /* every case line parsed */
  dk_test_vectors_free(&vx);
}

DK_TEST(expr_value__print_round_trip_and_errors) {
  dk_error err;
  dk_error_init(&err);
  static const char *const texts[] = {
      "a + 1 > b * 2", "CASE WHEN x > 1 THEN 'big' WHEN x IS NULL THEN NULL ELSE 'small' END",
      "coalesce(s, '') = ''", "CAST(a AS DECIMAL(10,2)) + 1.5", "a - -1", "-a", "a || 'x'",
      "CASE k WHEN 1 THEN 'one' ELSE 'other' END = 'one'", "upper(trim(s)) LIKE 'AB%'",
      "round(d, 2) <= 3", "if(a > 0, a, 0) % 3 = 1", "(a + 1) * (b - 1) / 2"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    dk_expr *e = NULL, *e2 = NULL;
    char *p1 = NULL, *p2 = NULL;
    CHECK_OK(dk_expr_parse(&e, texts[i], &err), &err);
    CHECK_OK(dk_expr_to_string(&p1, e, &err), &err);
    CHECK_OK(dk_expr_parse(&e2, p1, &err), &err);
    CHECK_OK(dk_expr_to_string(&p2, e2, &err), &err);
    CHECK_EQ_STR(p1, p2);
    dk_free(p1);
    dk_free(p2);
    dk_expr_free(e);
    dk_expr_free(e2);
  }
  static const char *const bad[] = {"foo(a)", "abs(a, b)", "CAST(a AS nope)", "CASE WHEN a END",
                                    "a +", "a || ", "CASE a WHEN 1 THEN 2"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    dk_expr *e = NULL;
    CHECK(dk_expr_parse(&e, bad[i], &err) == DK_INVALID);
    CHECK(e == NULL);
  }
}
