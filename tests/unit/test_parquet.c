/* test_parquet.c — Parquet reader: Thrift compact decoding against hand-encoded bytes (the
** Thrift compact protocol spec), error paths, and reads of Spark-written files checked against
** the Spark-derived expected rows in ../shared/testdata. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "arrow/json.h"
#include "codec/parquet/metadata.h"
#include "dk/parquet.h"
#include "test.h"

DK_TEST(parquet__thrift_fields_and_skip) {
  /* struct { 1: i32 = -3 (zigzag 5), 3: binary "ab", 4: map<i32,bool>{1:true},
  **          5: set<i16>{2}, 20 (long form): i64 = 300, 21: list<bool>[true,false],
  **          22: struct{1: double}, stop } */
  const uint8_t buf[] = {0x15, 0x05,                   /* id 1, I32, 5 -> -3 */
                         0x28, 0x02, 'a', 'b',         /* delta 2 -> id 3, BINARY */
                         0x1B, 0x01, 0x51, 0x02, 0x01, /* id 4 MAP, 1 entry, I32->BOOL, k=1, v=true */
                         0x1A, 0x14, 0x04,             /* id 5 SET, 1 x I16, 2 */
                         0x06, 0x28, 0xD8, 0x04,       /* long form: I64, id zigzag 40 -> 20, 300 */
                         0x19, 0x21, 0x01, 0x02,       /* id 21 LIST of 2 bools */
                         0x1C, 0x17, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x00, /* id 22 STRUCT{1: double 1.0} */
                         0x00};
  dk_error err = {0};
  dk_tp t;
  dk_pq__tp_init(&t, buf, sizeof buf, 100, "test", &err);
  dk_tp_struct s;
  CHECK_OK(dk_pq__tp_struct_begin(&t, &s), &err);
  int type;
  int16_t id;
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 1);
  int32_t v;
  CHECK_OK(dk_pq__tp_i32(&t, type, &v), &err);
  CHECK_EQ_INT(v, -3);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 3);
  const uint8_t *p;
  uint32_t n;
  CHECK_OK(dk_pq__tp_binary(&t, type, &p, &n), &err);
  CHECK_EQ_INT(n, 2);
  CHECK(p[0] == 'a' && p[1] == 'b');
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 4);
  CHECK_OK(dk_pq__tp_skip(&t, type), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 5);
  CHECK_OK(dk_pq__tp_skip(&t, type), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 20);
  int64_t v64;
  CHECK_OK(dk_pq__tp_i64(&t, type, &v64), &err);
  CHECK_EQ_INT(v64, 300);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 21);
  CHECK_OK(dk_pq__tp_skip(&t, type), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(id, 22);
  CHECK_OK(dk_pq__tp_skip(&t, type), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_EQ_INT(type, DK_TP_STOP);
  CHECK(t.p == t.end);
}

DK_TEST(parquet__thrift_errors) {
  dk_error err = {0};
  dk_tp t;
  /* truncated binary: claims 10 bytes, has 1 */
  const uint8_t b1[] = {0x18, 0x0A, 'x'};
  dk_pq__tp_init(&t, b1, sizeof b1, 1000, "footer", &err);
  dk_tp_struct s;
  int type;
  int16_t id;
  CHECK_OK(dk_pq__tp_struct_begin(&t, &s), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  CHECK_STATUS(dk_pq__tp_skip(&t, type), DK_CORRUPT);
  CHECK(strstr(err.message, "offset 1002") != NULL);
  /* varint of 11 bytes */
  dk_error_init(&err);
  const uint8_t b2[] = {0x16, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
  dk_pq__tp_init(&t, b2, sizeof b2, 0, "footer", &err);
  CHECK_OK(dk_pq__tp_struct_begin(&t, &s), &err);
  CHECK_OK(dk_pq__tp_field(&t, &s, &type, &id), &err);
  int64_t v;
  CHECK_STATUS(dk_pq__tp_i64(&t, type, &v), DK_CORRUPT);
  /* nesting deeper than the limit */
  dk_error_init(&err);
  uint8_t deep[200];
  memset(deep, 0x1C, sizeof deep);
  dk_pq__tp_init(&t, deep, sizeof deep, 0, "footer", &err);
  CHECK_STATUS(dk_pq__tp_skip(&t, DK_TP_STRUCT), DK_CORRUPT);
  CHECK(strstr(err.message, "deep") != NULL);
  /* list count larger than the bytes left */
  dk_error_init(&err);
  const uint8_t b3[] = {0xF5, 0xFF, 0xFF, 0x03};
  dk_pq__tp_init(&t, b3, sizeof b3, 0, "footer", &err);
  int et;
  uint32_t cnt;
  CHECK_STATUS(dk_pq__tp_list(&t, DK_TP_LIST, &et, &cnt), DK_CORRUPT);
}

static char *find_parquet(const char *dir, int which) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  struct dirent *e;
  char *names[16];
  int n = 0;
  while ((e = readdir(d)) && n < 16) {
    size_t l = strlen(e->d_name);
    if (l > 8 && !strcmp(e->d_name + l - 8, ".parquet")) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  /* sort for a stable order */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[i], names[j]) > 0) {
        char *x = names[i];
        names[i] = names[j];
        names[j] = x;
      }
  char *out = NULL;
  if (which < n) {
    out = malloc(strlen(dir) + strlen(names[which]) + 2);
    sprintf(out, "%s/%s", dir, names[which]);
  }
  for (int i = 0; i < n; i++) free(names[i]);
  return out;
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

/* Spark wrote data-reader-primitives; its expected rows list as_int 0..9 and null. */
DK_TEST(parquet__spark_primitives_match_expected) {
  char dir[1024], exp_path[1024];
  snprintf(dir, sizeof dir, "%s/delta-golden/data-reader-primitives", dk_test_data_dir());
  snprintf(exp_path, sizeof exp_path, "%s/delta-golden/data-reader-primitives.expected.jsonl",
           dk_test_data_dir());
  long long got[64], want[64];
  int ng = 0, nw = 0, nulls_got = 0, nulls_want = 0;
  dk_error err = {0};
  for (int which = 0; which < 8; which++) {
    char *path = find_parquet(dir, which);
    if (!path) break;
    dk_parquet_file *f = NULL;
    CHECK_OK(dk_parquet_open(&f, path, NULL, &err), &err);
    free(path);
    int col = dk_parquet_column_index(f, "as_long");
    CHECK(col >= 0);
    const char *cols[] = {"as_long", "as_string"};
    dk_parquet_read_options ro = {DK_PARQUET_READ_OPTIONS_VERSION, cols, 2, NULL, 0, NULL, 0, 0, 0, 3, 0, 0, 0};
    struct ArrowArrayStream st;
    CHECK_OK(dk_parquet_read(&st, f, &ro, &err), &err);
    for (;;) {
      struct ArrowArray a;
      CHECK_EQ_INT(st.get_next(&st, &a), 0);
      if (!a.release) break;
      const struct ArrowArray *l = a.children[0], *s = a.children[1];
      for (int64_t i = 0; i < a.length && ng < 64; i++) {
        const uint8_t *valid = l->buffers[0];
        if (valid && !dk__bit_get(valid, i)) {
          nulls_got++;
          CHECK(s->buffers[0] && !dk__bit_get(s->buffers[0], i));
          continue;
        }
        long long x = ((const int64_t *)l->buffers[1])[i];
        const int32_t *o = s->buffers[1];
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%lld", x);
        CHECK_EQ_INT(o[i + 1] - o[i], (long long)strlen(tmp)); /* Spark wrote as_string = as_long */
        CHECK(!memcmp((const char *)s->buffers[2] + o[i], tmp, strlen(tmp)));
        got[ng++] = x;
      }
      a.release(&a);
    }
    st.release(&st);
    dk_parquet_file_free(f);
  }
  FILE *fp = fopen(exp_path, "r");
  CHECK(fp != NULL);
  char line[4096];
  while (fgets(line, sizeof line, fp) && nw < 64) {
    const char *k = strstr(line, "\"as_long\":");
    CHECK(k != NULL);
    k += 10;
    if (!strncmp(k, "null", 4)) nulls_want++;
    else want[nw++] = strtoll(k, NULL, 10);
  }
  fclose(fp);
  CHECK_EQ_INT(ng, nw);
  CHECK_EQ_INT(nulls_got, nulls_want);
  qsort(got, (size_t)ng, sizeof got[0], cmp_ll);
  qsort(want, (size_t)nw, sizeof want[0], cmp_ll);
  for (int i = 0; i < ng; i++) CHECK_EQ_INT(got[i], want[i]);
}

/* Properties of the footer API on every Parquet file of one table: row groups add up to
** num_rows, and the split rule assigns each row group to exactly one of two halves. */
DK_TEST(parquet__row_groups_and_split_rule) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/delta-golden/data-reader-primitives", dk_test_data_dir());
  char *path = find_parquet(dir, 0);
  CHECK(path != NULL);
  dk_error err = {0};
  dk_parquet_file *f = NULL;
  CHECK_OK(dk_parquet_open(&f, path, NULL, &err), &err);
  free(path);
  int64_t sum = 0;
  for (int i = 0; i < dk_parquet_num_row_groups(f); i++) {
    dk_parquet_row_group_info info;
    CHECK_OK(dk_parquet_row_group(&info, f, i, &err), &err);
    CHECK_EQ_INT(info.first_row, sum);
    CHECK(info.start >= 4);
    sum += info.num_rows;
  }
  CHECK_EQ_INT(sum, dk_parquet_num_rows(f));
  dk_parquet_row_group_info info0;
  CHECK_OK(dk_parquet_row_group(&info0, f, 0, &err), &err);
  int64_t rows_by_half[2] = {0, 0};
  for (int half = 0; half < 2; half++) {
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.range_start = half ? info0.start + 1 : 0;
    ro.range_end = half ? INT64_MAX : info0.start + 1;
    struct ArrowArrayStream st;
    CHECK_OK(dk_parquet_read(&st, f, &ro, &err), &err);
    for (;;) {
      struct ArrowArray a;
      CHECK_EQ_INT(st.get_next(&st, &a), 0);
      if (!a.release) break;
      rows_by_half[half] += a.length;
      a.release(&a);
    }
    st.release(&st);
  }
  CHECK_EQ_INT(rows_by_half[0] + rows_by_half[1], dk_parquet_num_rows(f));
  CHECK_EQ_INT(rows_by_half[0], info0.num_rows);
  /* unknown column */
  const char *bad[] = {"no_such_column"};
  dk_parquet_read_options ro = {DK_PARQUET_READ_OPTIONS_VERSION, bad, 1, NULL, 0, NULL, 0, 0, 0, 0, 0, 0, 0};
  struct ArrowArrayStream st;
  CHECK_STATUS(dk_parquet_read(&st, f, &ro, &err), DK_NOT_FOUND);
  CHECK_STATUS(dk_parquet_row_group(&info0, f, 99, &err), DK_INVALID);
  dk_parquet_file_free(f);
}

DK_TEST(parquet__open_errors) {
  dk_error err = {0};
  dk_parquet_file *f = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/nope.parquet", dk_test_tmpdir());
  CHECK_STATUS(dk_parquet_open(&f, path, NULL, &err), DK_NOT_FOUND);
  snprintf(path, sizeof path, "%s/bad.parquet", dk_test_tmpdir());
  FILE *fp = fopen(path, "wb");
  CHECK(fp != NULL);
  fputs("PAR1 this is not parquet PAR1", fp);
  fclose(fp);
  dk_error_init(&err);
  CHECK_STATUS(dk_parquet_open(&f, path, NULL, &err), DK_CORRUPT);
  CHECK(strstr(err.message, path) != NULL);
  CHECK(strstr(err.message, "offset") != NULL);
  dk_parquet_file_free(NULL);
}

/* Spark wrote data-reader-map: map<int,int> a, ..., map<int, array<struct<val:int>>> f.
** Leaf lookup by Arrow-style and by full Parquet path, and the Arrow schema shape. */
DK_TEST(parquet__paths_and_schema_of_spark_maps) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/delta-golden/data-reader-map", dk_test_data_dir());
  char *path = find_parquet(dir, 0);
  CHECK(path != NULL);
  dk_error err = {0};
  dk_parquet_file *f = NULL;
  dk_parquet_open_options oo = {.version = DK_PARQUET_OPEN_OPTIONS_VERSION, .use_mmap = 1};
  CHECK_OK(dk_parquet_open(&f, path, &oo, &err), &err);
  free(path);
  /* leaves in file order: i, a.key, a.value, b.key, ... f.key, f.value.element.val */
  CHECK_EQ_INT(dk_parquet_column_index(f, "i"), 0);
  CHECK_EQ_INT(dk_parquet_column_index(f, "a.key"), 1);
  CHECK_EQ_INT(dk_parquet_column_index(f, "a.value"), 2);
  CHECK_EQ_INT(dk_parquet_column_index(f, "a.key_value.key"), 1);
  int last = dk_parquet_num_columns(f) - 1;
  CHECK_EQ_INT(dk_parquet_column_index(f, "f.value.element.val"), last);
  CHECK_EQ_INT(dk_parquet_column_index(f, "nope"), -1);
  struct ArrowSchema s;
  CHECK_OK(dk_parquet_schema(&s, f, &err), &err);
  CHECK_EQ_STR(s.format, "+s");
  CHECK_EQ_STR(s.children[1]->format, "+m");
  CHECK_EQ_STR(s.children[1]->children[0]->format, "+s");
  CHECK(!(s.children[1]->children[0]->flags & ARROW_FLAG_NULLABLE));
  CHECK(!(s.children[1]->children[0]->children[0]->flags & ARROW_FLAG_NULLABLE));
  s.release(&s);
  dk_parquet_file_free(f);
}
