/* test_snapshot_partition.c — typed partition values. For every `read` case of the golden
** manifest with partition columns, the set of typed partition tuples of the active files must
** equal the set of partition-column projections of the expected rows (.expected*.jsonl, the
** oracle), rendered in the manifest's value encoding. Plus exact parses of edge cases. */
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

static void civil(int64_t z, int *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yy + (*m <= 2));
}

static void render(dk_buf *b, const dk_scalar *v, const dk_type *t) {
  if (v->is_null) {
    dk__buf_puts(b, "null", NULL);
    return;
  }
  switch (t->id) {
    case DK_TYPE_STRING: dk__json_write_str(b, v->str, v->len, NULL); break;
    case DK_TYPE_BINARY:
      dk__buf_putc(b, '"', NULL);
      for (size_t i = 0; i < v->len; i++) dk__buf_printf(b, NULL, "%02x", (unsigned char)v->str[i]);
      dk__buf_putc(b, '"', NULL);
      break;
    case DK_TYPE_FLOAT:
    case DK_TYPE_DOUBLE: dk__json_write_double(b, v->f64, NULL); break;
    case DK_TYPE_BOOLEAN: dk__buf_puts(b, v->i64 ? "true" : "false", NULL); break;
    case DK_TYPE_DATE: {
      int y, m, d;
      civil(v->i64, &y, &m, &d);
      dk__buf_printf(b, NULL, "\"%04d-%02d-%02d\"", y, m, d);
      break;
    }
    case DK_TYPE_DECIMAL: {
      __int128 x = (__int128)(((unsigned __int128)(uint64_t)v->dec_hi << 64) | v->dec_lo);
      int neg = x < 0;
      unsigned __int128 u = neg ? (unsigned __int128)(-x) : (unsigned __int128)x;
      char tmp[64];
      int n = 0;
      do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
      } while (u);
      while (n <= t->scale) tmp[n++] = '0';
      dk__buf_printf(b, NULL, "\"%s", neg ? "-" : "");
      for (int i = n - 1; i >= 0; i--) {
        dk__buf_putc(b, tmp[i], NULL);
        if (i == t->scale && t->scale > 0) dk__buf_putc(b, '.', NULL);
      }
      dk__buf_putc(b, '"', NULL);
      break;
    }
    default: dk__buf_printf(b, NULL, "%lld", (long long)v->i64);
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and dedups a list of strings in place; returns the new count. */
static size_t uniq(char **v, size_t n) {
  qsort(v, n, sizeof *v, cmp_str);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k && !strcmp(v[k - 1], v[i])) {
      free(v[i]);
      continue;
    }
    v[k++] = v[i];
  }
  return k;
}

DK_TEST(snapshot__typed_partition_values_match_expected_rows) {
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", dk_test_data_dir());
  char *text;
  size_t len;
  dk_error err = {0};
  CHECK_OK(dk__read_file(NULL, path, &text, &len, &err), &err);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1 << 16);
  dk_json_value *man;
  CHECK_OK(dk__json_parse(&man, &ar, text, len, &err), &err);
  const dk_json_value *cases = dk__json_get(man, "cases");
  int checked = 0, failures = 0;
  for (uint32_t ci = 0; ci < cases->len; ci++) {
    const dk_json_value *c = &cases->u.items[ci];
    size_t n;
    const char *kind = dk__json_as_str(dk__json_get(c, "kind"), &n);
    const dk_json_value *pcs = dk__json_get(c, "partition_columns");
    if (!kind || strcmp(kind, "read") || !pcs || pcs->type != DK_JSON_ARRAY || !pcs->len) continue;
    /* a projected case only holds some columns: compare the partition columns it has */
    const dk_json_value *proj = dk__json_get(c, "columns");
    if (proj && proj->type == DK_JSON_ARRAY) {
      dk_json_value *sel = dk__arena_alloc(&ar, sizeof *sel, &err);
      dk_json_value *items = dk__arena_alloc(&ar, sizeof *items * pcs->len, &err);
      uint32_t k = 0;
      for (uint32_t i = 0; i < pcs->len; i++)
        for (uint32_t j = 0; j < proj->len; j++)
          if (!strcmp(pcs->u.items[i].u.str, proj->u.items[j].u.str)) items[k++] = pcs->u.items[i];
      sel->type = DK_JSON_ARRAY;
      sel->len = k;
      sel->u.items = items;
      pcs = sel;
      if (!k) continue;
    }
    const char *table = dk__json_as_str(dk__json_get(c, "table"), &n);
    const char *expf = dk__json_as_str(dk__json_get(c, "expected"), &n);
    const char *id = dk__json_as_str(dk__json_get(c, "id"), &n);
    int64_t version = -1;
    dk__json_as_i64(dk__json_get(c, "version"), &version);
    char root[4096];
    snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), table);
    dk_table *t = NULL;
    dk_snapshot *s = NULL;
    dk_error_init(&err);
    dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, version, 0, 0, 0};
    if (dk_table_open(&t, root, NULL, &err) != DK_OK || dk_snapshot_open(&s, t, &o, &err) != DK_OK) {
      fprintf(stderr, "  %s: open failed: %s\n", id, err.message);
      failures++;
      dk_table_free(t);
      continue;
    }
    const dk_type *schema = dk_snapshot_schema(s);
    /* typed tuples from the files */
    int64_t nf = dk_snapshot_num_files(s);
    char **mine = calloc((size_t)nf + 1, sizeof *mine);
    dk_buf b;
    dk__buf_init(&b, NULL);
    bool bad = false;
    for (int64_t i = 0; i < nf && !bad; i++) {
      dk_file_entry f;
      CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, &err));
      dk__buf_clear(&b);
      dk__buf_putc(&b, '{', NULL);
      for (uint32_t k = 0; k < pcs->len; k++) {
        const char *col = pcs->u.items[k].u.str;
        const dk_field *fd = dk_schema_find(schema, col);
        int is_null;
        const char *raw = dk_file_partition_value(s, &f, col, &is_null);
        dk_scalar v;
        if (!fd || dk_partition_value_parse(&v, fd->type, raw, &err) != DK_OK) {
          fprintf(stderr, "  %s: cannot parse partition value of %s: %s\n", id, col, err.message);
          bad = true;
          break;
        }
        if (k) dk__buf_putc(&b, ',', NULL);
        dk__json_write_str(&b, col, strlen(col), NULL);
        dk__buf_putc(&b, ':', NULL);
        render(&b, &v, fd->type);
      }
      dk__buf_putc(&b, '}', NULL);
      mine[i] = strdup(b.data);
    }
    size_t nm = bad ? 0 : uniq(mine, (size_t)nf);
    /* projections of the expected rows */
    snprintf(path, sizeof path, "%s/%s", dk_test_data_dir(), expf);
    char *rows;
    size_t rl;
    size_t ne = 0, cap = 64;
    char **exp = calloc(cap, sizeof *exp);
    if (!bad && dk__read_file(NULL, path, &rows, &rl, &err) == DK_OK) {
      dk_arena rar;
      dk__arena_init(&rar, NULL, 1 << 16);
      for (char *line = rows; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        dk_json_value *row;
        if (ll && dk__json_parse(&row, &rar, line, ll, &err) == DK_OK) {
          dk__buf_clear(&b);
          dk__buf_putc(&b, '{', NULL);
          for (uint32_t k = 0; k < pcs->len; k++) {
            const char *col = pcs->u.items[k].u.str;
            if (k) dk__buf_putc(&b, ',', NULL);
            dk__json_write_str(&b, col, strlen(col), NULL);
            dk__buf_putc(&b, ':', NULL);
            const dk_json_value *v = dk__json_get(row, col);
            if (v)
              dk__json_write_value(&b, v, NULL);
            else
              dk__buf_puts(&b, "null", NULL);
          }
          dk__buf_putc(&b, '}', NULL);
          if (ne == cap) exp = realloc(exp, (cap *= 2) * sizeof *exp);
          exp[ne++] = strdup(b.data);
        }
        line = nl ? nl + 1 : NULL;
      }
      dk__arena_dispose(&rar);
      dk__free(NULL, rows);
    }
    ne = uniq(exp, ne);
    if (!bad) {
      bool same = nm == ne;
      for (size_t i = 0; same && i < nm; i++) same = !strcmp(mine[i], exp[i]);
      if (!same) {
        fprintf(stderr, "  %s: partition tuples differ (%zu vs %zu expected)\n", id, nm, ne);
        for (size_t i = 0; i < nm && i < 3; i++) fprintf(stderr, "    mine: %s\n", mine[i]);
        for (size_t i = 0; i < ne && i < 3; i++) fprintf(stderr, "    exp:  %s\n", exp[i]);
        failures++;
      }
      checked++;
    } else {
      failures++;
    }
    for (size_t i = 0; i < nm; i++) free(mine[i]);
    for (size_t i = 0; i < ne; i++) free(exp[i]);
    free(mine);
    free(exp);
    dk__buf_dispose(&b);
    dk_snapshot_free(s);
    dk_table_free(t);
  }
  fprintf(stderr, "  typed partition values: %d partitioned read cases checked\n", checked);
  dk__arena_dispose(&ar);
  dk__free(NULL, text);
  CHECK(checked >= 15);
  CHECK_EQ_INT(failures, 0);
}

DK_TEST(snapshot__partition_value_parse_edges) {
  dk_type ts = {.id = DK_TYPE_TIMESTAMP}, ntz = {.id = DK_TYPE_TIMESTAMP_NTZ},
          dec = {.id = DK_TYPE_DECIMAL, .precision = 5, .scale = 2},
          i8 = {.id = DK_TYPE_BYTE}, dt = {.id = DK_TYPE_DATE};
  dk_scalar v;
  dk_error err = {0};
  /* 2021-09-08 11:11:11 UTC = 1631099471 s (README of the test corpus) */
  CHECK_OK(dk_partition_value_parse(&v, &ts, "2021-09-08 11:11:11", &err), &err);
  CHECK_EQ_INT(v.i64, 1631099471000000LL);
  CHECK_OK(dk_partition_value_parse(&v, &ts, "2021-09-08T12:11:11.5+01:00", &err), &err);
  CHECK_EQ_INT(v.i64, 1631099471500000LL);
  CHECK_OK(dk_partition_value_parse(&v, &ntz, "1970-01-01 00:00:00.000001", &err), &err);
  CHECK_EQ_INT(v.i64, 1);
  CHECK_OK(dk_partition_value_parse(&v, &dt, "1969-12-31", &err), &err);
  CHECK_EQ_INT(v.i64, -1);
  CHECK_OK(dk_partition_value_parse(&v, &dec, "-123.4", &err), &err);
  CHECK_EQ_INT(v.dec_hi, -1);
  CHECK_EQ_INT((int64_t)v.dec_lo, -12340);
  CHECK_STATUS(dk_partition_value_parse(&v, &dec, "1234.5", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_value_parse(&v, &i8, "128", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_value_parse(&v, &ts, "2021-13-08 11:11:11", &err), DK_CORRUPT);
  CHECK_OK(dk_partition_value_parse(&v, &i8, NULL, &err), &err);
  CHECK(v.is_null);
}
