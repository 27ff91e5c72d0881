/*
** test_expr_eval.c — evaluator properties not covered by the DuckDB corpus: Kleene truth
** tables (checked against the lattice definition F < NULL < T: AND = min, OR = max,
** NOT = reverse), binding errors, timestamp units other than microseconds, sliced nested
** children, and the Arrow layout of the result.
*/
#include <stdlib.h>

#include "arrow/array.h"
#include "dk/expr.h"
#include "test.h"

static void field(struct ArrowSchema *s, const char *fmt, const char *name, int nkids) {
  dk_atype t;
  dk_error err = {0};
  if (dk__atype_parse(&t, fmt, &err) || dk__schema_init(s, &t, name, ARROW_FLAG_NULLABLE, nkids, &err))
    dk_test_fail(__FILE__, __LINE__, "schema: %s", err.message);
}

/* 0 = FALSE, 1 = NULL, 2 = TRUE */
static int tri_get(const struct ArrowArray *a, int64_t i) {
  const uint8_t *valid = a->buffers[0];
  if (valid && !dk__bit_get(valid, i)) return 1;
  return dk__bit_get(a->buffers[1], i) ? 2 : 0;
}

DK_TEST(expr__kleene_truth_tables) {
  dk_error err = {0};
  struct ArrowSchema s;
  field(&s, "+s", "", 2);
  field(s.children[0], "b", "p", 0);
  field(s.children[1], "b", "q", 0);
  dk_arr a;
  CHECK_OK(dk__arr_init_from_schema(&a, &s, NULL, &err), &err);
  for (int x = 0; x < 3; x++)
    for (int y = 0; y < 3; y++) {
      int v[2] = {x, y};
      for (int k = 0; k < 2; k++) {
        if (v[k] == 1) CHECK_OK(dk__arr_append_null(&a.children[k], &err), &err);
        else CHECK_OK(dk__arr_append_bool(&a.children[k], v[k] == 2, &err), &err);
      }
      CHECK_OK(dk__arr_finish_element(&a, &err), &err);
    }
  struct ArrowArray batch;
  CHECK_OK(dk__arr_finish(&a, &batch, &err), &err);
  dk__arr_reset(&a);
  const char *preds[] = {"p AND q", "p OR q", "NOT p", "p IS NULL", "p IS NOT NULL",
                         "NOT (p AND q)", "NOT p OR NOT q", "p <=> q", "p = q"};
  for (size_t k = 0; k < sizeof preds / sizeof preds[0]; k++) {
    dk_expr *e, *b;
    struct ArrowArray out;
    CHECK_OK(dk_expr_parse(&e, preds[k], &err), &err);
    CHECK_OK(dk_expr_bind(&b, e, &s, &err), &err);
    CHECK_OK(dk_expr_eval(&out, b, &s, &batch, &err), &err);
    CHECK_EQ_INT(out.length, 9);
    int nulls = 0;
    for (int i = 0; i < 9; i++) {
      int x = i / 3, y = i % 3, want;
      switch (k) {
        case 0: want = x < y ? x : y; break;
        case 1: want = x > y ? x : y; break;
        case 2: want = 2 - x; break;
        case 3: want = x == 1 ? 2 : 0; break;
        case 4: want = x == 1 ? 0 : 2; break;
        case 5: case 6: want = 2 - (x < y ? x : y); break; /* De Morgan holds in Kleene logic */
        case 7: want = x == y ? 2 : 0; break;
        default: want = (x == 1 || y == 1) ? 1 : (x == y ? 2 : 0); break;
      }
      nulls += want == 1;
      if (tri_get(&out, i) != want)
        dk_test_fail(__FILE__, __LINE__, "%s with p=%d q=%d: got %d want %d", preds[k], x, y,
                     tri_get(&out, i), want);
    }
    CHECK_EQ_INT(out.null_count, nulls);
    CHECK(nulls == 0 ? out.buffers[0] == NULL : out.buffers[0] != NULL);
    out.release(&out);
    dk_expr_free(e);
    dk_expr_free(b);
  }
  batch.release(&batch);
  dk__schema_release(&s);
}

static void expect_bind_error(const struct ArrowSchema *s, const char *text, dk_status want,
                              const char *needle, int line) {
  dk_error err = {0};
  dk_expr *e = NULL, *b = NULL;
  if (dk_expr_parse(&e, text, &err)) {
    dk_test_fail(__FILE__, line, "parse %s: %s", text, err.message);
    return;
  }
  dk_status st = dk_expr_bind(&b, e, s, &err);
  if (st != want || (needle && !strstr(err.message, needle)))
    dk_test_fail(__FILE__, line, "bind %s: %s (%s), want %s with \"%s\"", text, dk_status_str(st),
                 err.message, dk_status_str(want), needle ? needle : "");
  CHECK(b == NULL);
  dk_expr_free(e);
}

DK_TEST(expr__bind_errors) {
  struct ArrowSchema s;
  field(&s, "+s", "", 5);
  field(s.children[0], "i", "Id", 0);
  field(s.children[1], "u", "name", 0);
  field(s.children[2], "+s", "st", 1);
  field(s.children[2]->children[0], "tdD", "day", 0);
  field(s.children[3], "i", "dup", 0);
  field(s.children[4], "i", "DUP", 0);
  expect_bind_error(&s, "nope = 1", DK_NOT_FOUND, "'nope'", __LINE__);
  expect_bind_error(&s, "st.nope = 1", DK_NOT_FOUND, "'st.nope'", __LINE__);
  expect_bind_error(&s, "id.x = 1", DK_INVALID, "not a struct", __LINE__);
  expect_bind_error(&s, "name = 1", DK_INVALID, "column 'name'", __LINE__);
  expect_bind_error(&s, "id = 'abc'", DK_INVALID, "column 'Id'", __LINE__);
  expect_bind_error(&s, "st.day = 5", DK_INVALID, "column 'st.day'", __LINE__);
  expect_bind_error(&s, "st.day = '2024-02-30'", DK_INVALID, "st.day", __LINE__);
  expect_bind_error(&s, "id", DK_INVALID, "not a boolean", __LINE__);
  expect_bind_error(&s, "STARTS_WITH(id, 'a')", DK_INVALID, "'Id'", __LINE__);
  expect_bind_error(&s, "Dup = 1", DK_INVALID, "ambiguous", __LINE__);
  expect_bind_error(&s, "id = name", DK_INVALID, "INT and STRING do not match", __LINE__);
  expect_bind_error(&s, "st.day = id", DK_INVALID, "do not match", __LINE__);
  expect_bind_error(&s, "5", DK_INVALID, "not a predicate", __LINE__);
  /* dictionary-encoded columns are refused, not misread */
  struct ArrowSchema dict;
  field(&dict, "u", "", 0);
  s.children[0]->dictionary = &dict;
  expect_bind_error(&s, "id = 1", DK_UNSUPPORTED, "dictionary", __LINE__);
  s.children[0]->dictionary = NULL;
  dk__schema_release(&dict);
  /* exact-case match wins over the case-insensitive duplicate; case-insensitive otherwise */
  dk_error err = {0};
  dk_expr *e, *b;
  CHECK_OK(dk_expr_parse(&e, "dup = 1 AND ID = 2 AND ST.DAY > '2024-01-01'", &err), &err);
  CHECK_OK(dk_expr_bind(&b, e, &s, &err), &err);
  char *txt;
  CHECK_OK(dk_expr_to_string(&txt, b, &err), &err);
  CHECK_EQ_STR(txt, "dup = 1 AND Id = 2 AND st.day > DATE '2024-01-01'");
  dk_expr_string_free(txt);
  CHECK(dk_expr_is_bound(b) && !dk_expr_is_bound(e));
  /* evaluating an unbound tree is refused */
  struct ArrowArray out;
  struct ArrowArray empty = {0};
  CHECK_STATUS(dk_expr_eval(&out, e, &s, &empty, &err), DK_INVALID);
  dk_expr_free(e);
  dk_expr_free(b);
  dk__schema_release(&s);
}

/* t (unit from fmt) compared with TIMESTAMP literals: the expected answers are computed here
** by exact integer arithmetic on the literal's microseconds scaled to the unit. */
static void check_unit(const char *fmt, int64_t per_us_num, int64_t per_us_den) {
  dk_error err = {0};
  struct ArrowSchema s;
  field(&s, "+s", "", 1);
  field(s.children[0], fmt, "t", 0);
  dk_arr a;
  CHECK_OK(dk__arr_init_from_schema(&a, &s, NULL, &err), &err);
  /* values around 2024-01-01 00:00:00 UTC = 1704067200 s */
  const int64_t base_us = 1704067200LL * 1000000;
  int64_t vals[64];
  int n = 0;
  for (int64_t d = -3; d <= 3; d++) {
    int64_t steps[] = {0, 1, 999, 1000, 1000000};
    for (size_t k = 0; k < 5; k++) {
      __int128 us = (__int128)base_us + d * steps[k];
      vals[n] = (int64_t)(us * per_us_num / per_us_den - (us * per_us_num % per_us_den < 0));
      CHECK_OK(dk__arr_append_int(&a.children[0], vals[n], &err), &err);
      CHECK_OK(dk__arr_finish_element(&a, &err), &err);
      n++;
    }
  }
  struct ArrowArray batch;
  CHECK_OK(dk__arr_finish(&a, &batch, &err), &err);
  dk__arr_reset(&a);
  const char *lits[] = {"2024-01-01 00:00:00", "2024-01-01 00:00:00.000001",
                        "2023-12-31 23:59:59.999999", "2024-01-01 00:00:00.0005", "2024-01-01 00:00:01"};
  int64_t lit_us[] = {base_us, base_us + 1, base_us - 1, base_us + 500, base_us + 1000000};
  const char *ops[] = {"=", "!=", "<", "<=", ">", ">="};
  uint8_t mask[64];
  for (size_t l = 0; l < 5; l++)
    for (int o = 0; o < 6; o++) {
      char text[128];
      snprintf(text, sizeof text, "t %s TIMESTAMP '%s'", ops[o], lits[l]);
      dk_expr *e, *b;
      CHECK_OK(dk_expr_parse(&e, text, &err), &err);
      CHECK_OK(dk_expr_bind(&b, e, &s, &err), &err);
      CHECK_OK(dk_expr_eval_filter(mask, NULL, b, &s, &batch, &err), &err);
      for (int i = 0; i < n; i++) {
        /* compare v (in unit) with lit (us) exactly: v * den vs lit * num */
        __int128 lhs = (__int128)vals[i] * per_us_den, rhs = (__int128)lit_us[l] * per_us_num;
        int c = lhs < rhs ? -1 : lhs > rhs;
        bool want = o == 0 ? c == 0 : o == 1 ? c != 0 : o == 2 ? c < 0 : o == 3 ? c <= 0 : o == 4 ? c > 0 : c >= 0;
        if (mask[i] != want)
          dk_test_fail(__FILE__, __LINE__, "%s: %s row %d (v=%lld): got %d", fmt, text, i,
                       (long long)vals[i], mask[i]);
      }
      dk_expr_free(e);
      dk_expr_free(b);
    }
  batch.release(&batch);
  dk__schema_release(&s);
}

DK_TEST(expr__timestamp_units) {
  check_unit("tsn:UTC", 1000, 1);
  check_unit("tsu:UTC", 1, 1);
  check_unit("tsm:UTC", 1, 1000);
  check_unit("tss:UTC", 1, 1000000);
  check_unit("tsu:", 1, 1); /* timestamp_ntz column */
}

DK_TEST(expr__sliced_nested_children) {
  /* struct<x: int32> whose child array has its own offset and whose parent has one too:
  ** row i of the batch reads child element (batch.offset + st.offset + x.offset + i). */
  dk_error err = {0};
  struct ArrowSchema s;
  field(&s, "+s", "", 1);
  field(s.children[0], "+s", "st", 1);
  field(s.children[0]->children[0], "i", "x", 0);
  dk_arr a;
  CHECK_OK(dk__arr_init_from_schema(&a, &s, NULL, &err), &err);
  for (int i = 0; i < 40; i++) {
    dk_arr *st = &a.children[0];
    if (i % 5 == 4) {
      CHECK_OK(dk__arr_append_null(st, &err), &err);
    } else {
      if (i % 7 == 6) CHECK_OK(dk__arr_append_null(&st->children[0], &err), &err);
      else CHECK_OK(dk__arr_append_int(&st->children[0], i, &err), &err);
      CHECK_OK(dk__arr_finish_element(st, &err), &err);
    }
    CHECK_OK(dk__arr_finish_element(&a, &err), &err);
  }
  struct ArrowArray batch;
  CHECK_OK(dk__arr_finish(&a, &batch, &err), &err);
  dk__arr_reset(&a);
  /* view with offsets 3 (batch), 2 (struct), 1 (leaf): row i -> element i + 6 */
  struct ArrowArray leaf = *batch.children[0]->children[0], st = *batch.children[0], top = batch;
  struct ArrowArray *leafp = &leaf, *stp = &st;
  leaf.offset = 1;
  leaf.length = 39;
  st.offset = 2;
  st.length = 36;
  st.children = &leafp;
  /* struct validity: bit k = original row k (buffer index = st.offset + logical index) */
  uint8_t bits[8] = {0};
  for (int k = 0; k < 40; k++)
    if (k % 5 != 4) dk__bit_set(bits, k);
  const void *stbufs[1] = {bits};
  st.buffers = stbufs;
  st.null_count = -1;
  top.offset = 3;
  top.length = 30;
  top.children = &stp;
  dk_expr *e, *b;
  CHECK_OK(dk_expr_parse(&e, "st.x >= 20 OR st IS NULL", &err), &err);
  CHECK_OK(dk_expr_bind(&b, e, &s, &err), &err);
  struct ArrowArray out;
  CHECK_OK(dk_expr_eval(&out, b, &s, &top, &err), &err);
  for (int i = 0; i < 30; i++) {
    int row_st = i + 3 + 2;    /* struct element index == original row (built 1:1) */
    int row_x = row_st + 1;    /* leaf element: one further because leaf.offset = 1 */
    bool st_null = row_st % 5 == 4;
    /* the leaf slot for row_x was written by original row row_x (struct nulls also
    ** appended a null child), so its value is row_x unless that row was null */
    bool x_null = st_null || row_x % 5 == 4 || row_x % 7 == 6;
    int want = st_null ? 2 : x_null ? 1 : (row_x >= 20 ? 2 : 0);
    if (tri_get(&out, i) != want)
      dk_test_fail(__FILE__, __LINE__, "row %d: got %d want %d", i, tri_get(&out, i), want);
  }
  out.release(&out);
  dk_expr_free(e);
  dk_expr_free(b);
  batch.release(&batch);
  dk__schema_release(&s);
}

DK_TEST(expr__split_bound_tree) {
  /* a bound predicate splits into unbound partition and data parts, each re-bindable */
  dk_error err = {0};
  struct ArrowSchema s, ps;
  field(&s, "+s", "", 2);
  field(s.children[0], "tdD", "Day", 0);
  field(s.children[1], "i", "v", 0);
  field(&ps, "+s", "", 1);
  field(ps.children[0], "tdD", "day", 0);
  dk_expr *e, *b, *only, *rest, *pb;
  CHECK_OK(dk_expr_parse(&e, "day >= '2024-01-01' AND v IN (1, 2) AND day < DATE '2024-02-01'", &err), &err);
  CHECK_OK(dk_expr_bind(&b, e, &s, &err), &err);
  const char *parts[] = {"DAY"};
  CHECK_OK(dk_expr_split(&only, &rest, b, parts, 1, &err), &err);
  char *t1, *t2;
  CHECK_OK(dk_expr_to_string(&t1, only, &err), &err);
  CHECK_OK(dk_expr_to_string(&t2, rest, &err), &err);
  CHECK_EQ_STR(t1, "Day >= DATE '2024-01-01' AND Day < DATE '2024-02-01'");
  CHECK_EQ_STR(t2, "v = 1 OR v = 2");
  CHECK(!dk_expr_is_bound(only) && !dk_expr_is_bound(rest));
  CHECK_OK(dk_expr_bind(&pb, only, &ps, &err), &err);
  const char *vals[] = {"2024-01-15", "2023-12-31", NULL, "2024-02-01"};
  struct ArrowArray batch;
  CHECK_OK(dk_partition_batch(&batch, &ps, vals, 4, &err), &err);
  uint8_t mask[4];
  int64_t sel;
  CHECK_OK(dk_expr_eval_filter(mask, &sel, pb, &ps, &batch, &err), &err);
  CHECK(mask[0] == 1 && mask[1] == 0 && mask[2] == 0 && mask[3] == 0 && sel == 1);
  batch.release(&batch);
  dk_expr_string_free(t1);
  dk_expr_string_free(t2);
  dk_expr_free(e);
  dk_expr_free(b);
  dk_expr_free(only);
  dk_expr_free(rest);
  dk_expr_free(pb);
  dk__schema_release(&s);
  dk__schema_release(&ps);
}

DK_TEST(expr__refcount_and_sharing) {
  dk_error err = {0};
  dk_expr *e, *n1, *n2;
  CHECK_OK(dk_expr_parse(&e, "a = 1", &err), &err);
  CHECK_OK(dk_expr_not(&n1, dk_expr_ref(e), &err), &err);
  CHECK_OK(dk_expr_or(&n2, dk_expr_ref(e), n1, &err), &err);
  dk_expr_free(e);
  char *s;
  CHECK_OK(dk_expr_to_string(&s, n2, &err), &err);
  CHECK_EQ_STR(s, "a = 1 OR NOT (a = 1)");
  dk_expr_string_free(s);
  dk_expr_free(n2);
  dk_expr_free(NULL);
}
