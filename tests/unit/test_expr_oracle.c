/*
** test_expr_oracle.c — dk's evaluator and skipping against DuckDB's answers.
**
** tests/unit/data/expr_vectors.jsonl is written by tests/python/gen_expr_vectors.py: a random
** table, random predicates, and DuckDB's TRUE/FALSE/NULL for every row. We rebuild the table
** as an Arrow batch, evaluate each predicate with dk and demand the same answer on every row
** (also through a sliced batch with a non-zero offset). The table is cut into files with
** Delta-style statistics; every file dk_expr__skip_eval() prunes must have no TRUE row, and
** the scan's columnar statistics (src/scan/stats.c, built from the same stats texts) must
** prune exactly the files the JSON provider prunes.
*/
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "dk/expr.h"
#include "expr/expr_int.h"
#include "expr/skip.h"
#include "scan/scan_int.h"
#include "test.h"
#include "vectors.h"

#define VECTORS "expr_vectors.jsonl"

DK_TEST(expr__oracle_duckdb_eval) {
  dk_error err = {0};
  dk_test_vectors vx;
  if (!dk_test_vectors_load(&vx, VECTORS, &err)) {
    dk_test_fail(__FILE__, __LINE__, "loading %s: %s", dk_test_vectors_path(VECTORS), err.message);
    dk_test_vectors_free(&vx);
    return;
  }
  CHECK(vx.n_rows > 100);
  const dk_json_value *c;
  int cases = 0, failures = 0;
  uint8_t *mask = malloc((size_t)vx.n_rows);
  while (dk_test_vectors_next(&vx, &c, &err) && failures < 10) {
    const char *text = dk__json_get(c, "expr")->u.str;
    const char *want = dk__json_get(c, "result")->u.str;
    dk_expr *e = NULL, *b = NULL;
    struct ArrowArray out = {0};
    dk_error e2 = {0};
    if (dk_expr_parse(&e, text, &e2) || dk_expr_bind(&b, e, &vx.schema, &e2) ||
        dk_expr_eval(&out, b, &vx.schema, &vx.batch, &e2)) {
      dk_test_fail(__FILE__, __LINE__, "%s: %s", text, e2.message);
      failures++;
      goto next;
    }
    cases++;
    const uint8_t *valid = out.buffers[0], *bits = out.buffers[1];
    for (int64_t i = 0; i < vx.n_rows; i++) {
      char got = valid && !dk__bit_get(valid, i) ? 'N' : dk__bit_get(bits, i) ? 'T' : 'F';
      if (got != want[i]) {
        dk_test_fail(__FILE__, __LINE__, "%s: row %lld: dk %c, DuckDB %c", text, (long long)i,
                     got, want[i]);
        failures++;
        break;
      }
    }
    /* filter form and a sliced batch (offset 7) must agree */
    int64_t sel = -1;
    if (dk_expr_eval_filter(mask, &sel, b, &vx.schema, &vx.batch, &e2)) {
      dk_test_fail(__FILE__, __LINE__, "filter %s: %s", text, e2.message);
      failures++;
      goto next;
    }
    int64_t want_sel = 0;
    for (int64_t i = 0; i < vx.n_rows; i++) {
      want_sel += want[i] == 'T';
      if (mask[i] != (want[i] == 'T')) {
        dk_test_fail(__FILE__, __LINE__, "filter %s: row %lld", text, (long long)i);
        failures++;
        break;
      }
    }
    if (sel != want_sel) {
      dk_test_fail(__FILE__, __LINE__, "filter %s: selected %lld", text, (long long)sel);
      failures++;
    }
    struct ArrowArray sliced = vx.batch;
    sliced.offset = 7;
    sliced.length = vx.n_rows - 7;
    if (dk_expr_eval_filter(mask, NULL, b, &vx.schema, &sliced, &e2)) {
      dk_test_fail(__FILE__, __LINE__, "sliced %s: %s", text, e2.message);
      failures++;
      goto next;
    }
    for (int64_t i = 0; i < sliced.length; i++)
      if (mask[i] != (want[i + 7] == 'T')) {
        dk_test_fail(__FILE__, __LINE__, "sliced %s: row %lld", text, (long long)i + 7);
        failures++;
        break;
      }
  next:
    dk__array_release(&out);
    dk_expr_free(e);
    dk_expr_free(b);
  }
  free(mask);
  if (getenv("DK_TEST_VERBOSE")) fprintf(stderr, "    %d DuckDB cases agree\n", cases);
  if (!failures && cases < 1000)
    dk_test_fail(__FILE__, __LINE__, "only %d cases evaluated: %s", cases, err.message);
  dk_test_vectors_free(&vx);
}

DK_TEST(expr__oracle_skipping_is_sound) {
  dk_error err = {0};
  dk_test_vectors vx;
  if (!dk_test_vectors_load(&vx, VECTORS, &err)) {
    dk_test_fail(__FILE__, __LINE__, "loading %s: %s", dk_test_vectors_path(VECTORS), err.message);
    dk_test_vectors_free(&vx);
    return;
  }
  const dk_json_value *files = dk__json_get(vx.header, "files");
  uint32_t nf = files->len;
  dk_file_stats *fs = calloc(nf, sizeof *fs);
  const char **texts = calloc(nf, sizeof *texts);
  for (uint32_t f = 0; f < nf; f++) {
    const dk_json_value *s = dk__json_get(&files->u.items[f], "stats");
    if (s && s->type == DK_JSON_STRING) {
      texts[f] = s->u.str;
      dk_json_value *root;
      if (dk__json_parse(&root, &vx.ar, s->u.str, s->len, &err)) break;
      fs[f].root = root;
    }
  }
  const dk_json_value *c;
  long skipped = 0, skippable = 0, failures = 0, columnar = 0;
  while (dk_test_vectors_next(&vx, &c, &err) && failures < 10) {
    const char *text = dk__json_get(c, "expr")->u.str;
    const char *want = dk__json_get(c, "result")->u.str;
    dk_expr *e = NULL, *b = NULL;
    dk_error e2 = {0};
    if (dk_expr_parse(&e, text, &e2) || dk_expr_bind(&b, e, &vx.schema, &e2)) {
      dk_test_fail(__FILE__, __LINE__, "%s: %s", text, e2.message);
      failures++;
    }
    dk_scan__stats *tab = NULL;
    dk_scan__stats_eval ev;
    memset(&ev, 0, sizeof ev);
    if (b) {
      CHECK_OK(dk_scan__stats_build(&tab, texts, nf, b, NULL, &e2), &e2);
      CHECK_OK(dk_scan__stats_eval_init(&ev, tab, b, NULL, &e2), &e2);
    }
    for (uint32_t f = 0; b && tab && f < nf; f++) {
      /* a file without stats is read; with stats, both providers answer alike */
      dk_skip_result want_skip = texts[f] ? dk_expr__skip_eval(b, &fs[f]) : DK_SKIP_MUST_READ;
      if (dk_scan__stats_skip(&ev, f) != want_skip) {
        dk_test_fail(__FILE__, __LINE__, "columnar statistics differ on file %u: %s\n  stats %s",
                     f, text, texts[f] ? texts[f] : "(none)");
        failures++;
      }
      columnar++;
    }
    dk_scan__stats_eval_dispose(&ev);
    dk_scan__stats_free(tab);
    for (uint32_t f = 0; b && f < nf; f++) {
      int64_t s0 = strtoll(dk__json_get(&files->u.items[f], "start")->u.num, NULL, 10);
      int64_t s1 = strtoll(dk__json_get(&files->u.items[f], "end")->u.num, NULL, 10);
      bool any_true = false;
      for (int64_t i = s0; i < s1; i++) any_true |= want[i] == 'T';
      skippable += !any_true;
      if (dk_expr__skip_eval(b, &fs[f]) == DK_SKIP_CAN_SKIP) {
        skipped++;
        if (any_true) {
          dk_test_fail(__FILE__, __LINE__, "skipped file %u with matching rows: %s\n  stats %s",
                       f, text, dk__json_get(&files->u.items[f], "stats")->u.str);
          failures++;
        }
      }
    }
    dk_expr_free(e);
    dk_expr_free(b);
  }
  if (getenv("DK_TEST_VERBOSE"))
    fprintf(stderr, "    skipped %ld of %ld skippable files; %ld columnar answers equal\n",
            skipped, skippable, columnar);
  /* skipping must also be useful: a lower bound measured on this corpus, far from 0 */
  CHECK(skipped * 4 > skippable);
  CHECK(columnar > 1000);
  free(texts);
  free(fs);
  dk_test_vectors_free(&vx);
}
