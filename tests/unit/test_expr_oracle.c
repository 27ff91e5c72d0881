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
#include "codec/json/json.h"

typedef struct vectors {
  char *text;
  size_t len;
  dk_arena ar;
  const dk_json_value *header;
  struct ArrowSchema schema;
  struct ArrowArray batch;
  int64_t n_rows;
} vectors;

static const char *vectors_path(void) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "data/expr_vectors.jsonl");
  return path;
}

static const char *fmt_of(const char *type) {
  static const char *const map[][2] = {
      {"int16", "s"}, {"int32", "i"}, {"int64", "l"}, {"double", "g"}, {"string", "u"},
      {"date", "tdD"}, {"timestamp", "tsu:UTC"}, {"decimal(10,2)", "d:10,2"}, {"bool", "b"},
      {"binary", "z"}, {"struct", "+s"}, {"decimal(38,10)", "d:38,10"}, {"timestamp_ntz", "tsu:"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i][0], type)) return map[i][1];
  return NULL;
}

static int hexv(char c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static dk_status append_value(dk_arr *a, const dk_json_value *v, dk_error *err) {
  if (v->type == DK_JSON_NULL) return dk__arr_append_null(a, err);
  switch (a->type.id) {
    case DK_AT_INT16: case DK_AT_INT32: case DK_AT_INT64: case DK_AT_DATE32: case DK_AT_TIMESTAMP:
      return dk__arr_append_int(a, strtoll(v->u.num, NULL, 10), err);
    case DK_AT_DOUBLE:
      return dk__arr_append_double(a, strtod(v->type == DK_JSON_STRING ? v->u.str : v->u.num, NULL), err);
    case DK_AT_STRING:
      return dk__arr_append_bytes(a, v->u.str, v->len, err);
    case DK_AT_BINARY: {
      uint8_t buf[64];
      size_t n = v->len / 2;
      for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(hexv(v->u.str[2 * i]) * 16 + hexv(v->u.str[2 * i + 1]));
      return dk__arr_append_bytes(a, buf, (int64_t)n, err);
    }
    case DK_AT_BOOL:
      return dk__arr_append_bool(a, v->u.b, err);
    case DK_AT_DECIMAL128: {
      __int128 u;
      DK_RETURN_NOT_OK(dk__parse_decimal(&u, v->u.str, v->len, a->type.scale, err));
      uint8_t b[16];
      memcpy(b, &u, 16);
      return dk__arr_append_bytes(a, b, 16, err);
    }
    case DK_AT_STRUCT: {
      for (int64_t i = 0; i < a->n_children; i++) {
        const char *key = i == 0 ? "x" : "y";
        DK_RETURN_NOT_OK(append_value(&a->children[i], dk__json_get(v, key), err));
      }
      return dk__arr_finish_element(a, err);
    }
    default:
      return dk__error_set(err, DK_INTERNAL, "test: unsupported column type");
  }
}

static int load_vectors(vectors *vx, dk_error *err) {
  memset(vx, 0, sizeof *vx);
  if (dk__read_file(NULL, vectors_path(), &vx->text, &vx->len, err)) return 0;
  dk__arena_init(&vx->ar, NULL, 1 << 20);
  const char *nl = memchr(vx->text, '\n', vx->len);
  dk_json_value *h;
  if (!nl || dk__json_parse(&h, &vx->ar, vx->text, (size_t)(nl - vx->text), err)) return 0;
  vx->header = h;
  const dk_json_value *cols = dk__json_get(h, "columns"), *rows = dk__json_get(h, "rows");
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  if (dk__schema_init(&vx->schema, &st, "", 0, cols->len, err)) return 0;
  for (uint32_t i = 0; i < cols->len; i++) {
    const dk_json_value *c = &cols->u.items[i];
    const char *name = dk__json_get(c, "name")->u.str;
    const char *f = fmt_of(dk__json_get(c, "type")->u.str);
    dk_atype t;
    if (!f || dk__atype_parse(&t, f, err)) return 0;
    bool is_struct = t.id == DK_AT_STRUCT;
    if (dk__schema_init(vx->schema.children[i], &t, name, ARROW_FLAG_NULLABLE, is_struct ? 2 : 0, err))
      return 0;
    if (is_struct) {
      dk_atype ti = dk__atype_make(DK_AT_INT32), tu = dk__atype_make(DK_AT_STRING);
      if (dk__schema_init(vx->schema.children[i]->children[0], &ti, "x", ARROW_FLAG_NULLABLE, 0, err) ||
          dk__schema_init(vx->schema.children[i]->children[1], &tu, "y", ARROW_FLAG_NULLABLE, 0, err))
        return 0;
    }
  }
  dk_arr a;
  if (dk__arr_init_from_schema(&a, &vx->schema, NULL, err)) return 0;
  for (uint32_t r = 0; r < rows->len; r++) {
    const dk_json_value *row = &rows->u.items[r];
    for (uint32_t c = 0; c < row->len; c++)
      if (append_value(&a.children[c], &row->u.items[c], err)) return 0;
    if (dk__arr_finish_element(&a, err)) return 0;
  }
  vx->n_rows = rows->len;
  dk_status st2 = dk__arr_finish(&a, &vx->batch, err);
  dk__arr_reset(&a);
  return st2 == DK_OK;
}

static void free_vectors(vectors *vx) {
  dk__array_release(&vx->batch);
  dk__schema_release(&vx->schema);
  dk__arena_dispose(&vx->ar);
  dk__free(NULL, vx->text);
}

/* Iterates the case lines: returns false at the end. */
static bool next_case(vectors *vx, size_t *pos, const dk_json_value **c, dk_error *err) {
  while (*pos < vx->len) {
    const char *s = vx->text + *pos;
    const char *nl = memchr(s, '\n', vx->len - *pos);
    size_t n = nl ? (size_t)(nl - s) : vx->len - *pos;
    *pos += n + 1;
    if (n == 0) continue;
    dk_json_value *v;
    if (dk__json_parse(&v, &vx->ar, s, n, err)) return false;
    *c = v;
    return true;
  }
  return false;
}

DK_TEST(expr__oracle_duckdb_eval) {
  dk_error err = {0};
  vectors vx;
  if (!load_vectors(&vx, &err)) {
    dk_test_fail(__FILE__, __LINE__, "loading %s: %s", vectors_path(), err.message);
    free_vectors(&vx);
    return;
  }
  CHECK(vx.n_rows > 100);
  size_t pos = (size_t)((const char *)memchr(vx.text, '\n', vx.len) - vx.text) + 1;
  const dk_json_value *c;
  int cases = 0, failures = 0;
  uint8_t *mask = malloc((size_t)vx.n_rows);
  while (next_case(&vx, &pos, &c, &err) && failures < 10) {
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
  free_vectors(&vx);
}

DK_TEST(expr__oracle_skipping_is_sound) {
  dk_error err = {0};
  vectors vx;
  if (!load_vectors(&vx, &err)) {
    dk_test_fail(__FILE__, __LINE__, "loading %s: %s", vectors_path(), err.message);
    free_vectors(&vx);
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
  size_t pos = (size_t)((const char *)memchr(vx.text, '\n', vx.len) - vx.text) + 1;
  const dk_json_value *c;
  long skipped = 0, skippable = 0, failures = 0, columnar = 0;
  while (next_case(&vx, &pos, &c, &err) && failures < 10) {
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
  free_vectors(&vx);
}
