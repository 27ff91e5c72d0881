/*
** test_arrow_json.c — the public Arrow-to-JSON encoder (dk/arrow_json.h) on nested values Spark
** wrote (delta-golden data-reader-nested-struct, data-reader-array-complex-objects): for the
** struct, nested-list and list-of-struct columns dk's encoding and the corpus encoding
** (/work/shared/testdata manifest.json -> encoding) coincide, so every row encoded column by
** column must equal the expected file's row (as a multiset, compact JSON text). Then the API
** contract: bad index, unsupported format, NULL free.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json/json.h"
#include "dk/arrow_json.h"
#include "dk/parquet.h"
#include "test.h"

typedef struct lines {
  char **v;
  size_t n, cap;
} lines;

static int lines_add(lines *l, const char *s, size_t n) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    char **v = realloc(l->v, cap * sizeof *v);
    if (!v) return 0;
    l->v = v;
    l->cap = cap;
  }
  char *c = malloc(n + 1);
  if (!c) return 0;
  memcpy(c, s, n);
  c[n] = 0;
  l->v[l->n++] = c;
  return 1;
}

static void lines_free(lines *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rows of every data file of the table, `cols` encoded one by one, as {"c":v,...} lines. */
static int dk_rows(lines *out, const char *table, const char **cols, int ncols) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/delta-golden/%s", dk_test_data_dir(), table);
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  int ok = 1;
  while (ok && (de = readdir(d)) != NULL) {
    size_t nl = strlen(de->d_name);
    if (de->d_name[0] == '.' || nl < 8 || strcmp(de->d_name + nl - 8, ".parquet") != 0) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    dk_error err;
    dk_error_init(&err);
    dk_parquet_file *f = NULL;
    if (dk_parquet_open(&f, path, NULL, &err) != DK_OK) {
      ok = 0;
      break;
    }
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.columns = cols;
    ro.n_columns = (size_t)ncols;
    struct ArrowArrayStream st;
    struct ArrowSchema sc;
    memset(&sc, 0, sizeof sc);
    if (dk_parquet_read(&st, f, &ro, &err) != DK_OK || st.get_schema(&st, &sc) != 0 ||
        sc.n_children != ncols) {
      ok = 0;
    }
    dk_arrow_json *enc[8] = {0};
    for (int k = 0; ok && k < ncols; k++)
      if (dk_arrow_json_new(&enc[k], sc.children[k], NULL, &err) != DK_OK) ok = 0;
    dk_buf row;
    dk__buf_init(&row, NULL);
    while (ok) {
      struct ArrowArray a;
      if (st.get_next(&st, &a) != 0) {
        ok = 0;
        break;
      }
      if (!a.release) break;
      for (int64_t i = 0; ok && i < a.length; i++) {
        dk__buf_clear(&row);
        for (int k = 0; ok && k < ncols; k++) {
          dk_str v;
          if (dk_arrow_json_value(&v, enc[k], a.children[k], a.offset + i, &err) != DK_OK ||
              dk__buf_putc(&row, k ? ',' : '{', &err) != DK_OK ||
              dk__json_write_str(&row, cols[k], strlen(cols[k]), &err) != DK_OK ||
              dk__buf_putc(&row, ':', &err) != DK_OK || dk__buf_append(&row, v.ptr, v.len, &err) != DK_OK)
            ok = 0;
        }
        if (ok && (dk__buf_putc(&row, '}', &err) != DK_OK || !lines_add(out, row.data, row.len)))
          ok = 0;
      }
      a.release(&a);
    }
    dk__buf_dispose(&row);
    for (int k = 0; k < ncols; k++) dk_arrow_json_free(enc[k]);
    if (sc.release) sc.release(&sc);
    if (st.release) st.release(&st);
    dk_parquet_file_free(f);
  }
  closedir(d);
  return ok;
}

/* The expected file's rows restricted to `cols`, re-written compactly. */
static int expected_rows(lines *out, const char *table, const char **cols, int ncols) {
  char path[1024];
  snprintf(path, sizeof path, "%s/delta-golden/%s.expected.jsonl", dk_test_data_dir(), table);
  FILE *fp = fopen(path, "r");
  if (!fp) return 0;
  char line[65536];
  int ok = 1;
  dk_buf row;
  dk__buf_init(&row, NULL);
  while (ok && fgets(line, sizeof line, fp)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (!n) continue;
    dk_arena ar;
    dk__arena_init(&ar, NULL, 0);
    dk_error err;
    dk_error_init(&err);
    dk_json_value *v = NULL;
    if (dk__json_parse(&v, &ar, line, n, &err) != DK_OK) ok = 0;
    dk__buf_clear(&row);
    for (int k = 0; ok && k < ncols; k++) {
      const dk_json_value *m = dk__json_get(v, cols[k]);
      if (!m || dk__buf_putc(&row, k ? ',' : '{', &err) != DK_OK ||
          dk__json_write_str(&row, cols[k], strlen(cols[k]), &err) != DK_OK ||
          dk__buf_putc(&row, ':', &err) != DK_OK || dk__json_write_value(&row, m, &err) != DK_OK)
        ok = 0;
    }
    if (ok && (dk__buf_putc(&row, '}', &err) != DK_OK || !lines_add(out, row.data, row.len))) ok = 0;
    dk__arena_dispose(&ar);
  }
  dk__buf_dispose(&row);
  fclose(fp);
  return ok;
}

static void check_table(const char *table, const char **cols, int ncols, size_t want_rows) {
  lines got = {0}, want = {0};
  int ok_got = dk_rows(&got, table, cols, ncols);
  int ok_want = expected_rows(&want, table, cols, ncols);
  if (ok_got && ok_want && got.n == want.n) {
    qsort(got.v, got.n, sizeof *got.v, cmp_str);
    qsort(want.v, want.n, sizeof *want.v, cmp_str);
  }
  size_t diff = 0;
  for (size_t i = 0; ok_got && ok_want && i < got.n && i < want.n; i++)
    if (strcmp(got.v[i], want.v[i])) {
      if (!diff) fprintf(stderr, "%s: dk   %s\n%s: want %s\n", table, got.v[i], table, want.v[i]);
      diff++;
    }
  size_t ng = got.n, nw = want.n;
  lines_free(&got);
  lines_free(&want);
  CHECK(ok_got);
  CHECK(ok_want);
  CHECK_EQ_INT(ng, want_rows);
  CHECK_EQ_INT(nw, want_rows);
  CHECK_EQ_INT(diff, 0);
}

DK_TEST(arrow_json__nested_struct_equals_expected_rows) {
  const char *cols[] = {"a", "b"};
  check_table("data-reader-nested-struct", cols, 2, 10);
}

DK_TEST(arrow_json__nested_lists_equal_expected_rows) {
  /* list_of_maps is left out: dk writes string-keyed maps as objects, the corpus as pairs */
  const char *cols[] = {"i", "3d_int_list", "4d_int_list", "list_of_records"};
  check_table("data-reader-array-complex-objects", cols, 4, 10);
}

static void no_release(struct ArrowSchema *s) { (void)s; }

DK_TEST(arrow_json__contract) {
  dk_error err;
  dk_error_init(&err);
  dk_arrow_json *e = (dk_arrow_json *)1;
  struct ArrowSchema bad = {.format = "+w:4", .name = "x", .release = no_release};
  CHECK_STATUS(dk_arrow_json_new(&e, &bad, NULL, &err), DK_UNSUPPORTED);
  CHECK(e == NULL);
  dk_arrow_json_free(NULL);

  /* an int32 array [7, null, -3] at offset 1: values 1..2 of the buffers */
  static const int32_t vals[] = {99, 7, 0, -3};
  static const uint8_t valid[] = {0x0b}; /* bits 0, 1, 3 */
  const void *bufs[] = {valid, vals};
  struct ArrowArray a = {.length = 3, .offset = 1, .n_buffers = 2, .buffers = bufs};
  struct ArrowSchema s = {.format = "i", .name = "n", .release = no_release};
  CHECK_OK(dk_arrow_json_new(&e, &s, NULL, &err), &err);
  dk_str v;
  CHECK_OK(dk_arrow_json_value(&v, e, &a, 0, &err), &err);
  CHECK(v.len == 1 && !memcmp(v.ptr, "7", 1));
  CHECK_OK(dk_arrow_json_value(&v, e, &a, 1, &err), &err);
  CHECK(v.len == 4 && !memcmp(v.ptr, "null", 4));
  CHECK_OK(dk_arrow_json_value(&v, e, &a, 2, &err), &err);
  CHECK(v.len == 2 && !memcmp(v.ptr, "-3", 2));
  CHECK_STATUS(dk_arrow_json_value(&v, e, &a, 3, &err), DK_INVALID);
  CHECK_STATUS(dk_arrow_json_value(&v, e, &a, -1, &err), DK_INVALID);
  dk_arrow_json_free(e);
}
