/* test_snapshot_schema.c — the physical Arrow schema a snapshot derives from its Delta schema
** (column-mapping physical names, field ids, nesting, types) must match the schema of the
** data files Spark wrote for the same table (read with dk's Parquet reader): an oracle we did
** not write. Also type names of every golden schema. */
#include <stdio.h>
#include <stdlib.h>

#include "dk/parquet.h"
#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

static long long field_id(const struct ArrowSchema *s) {
  const char *m = s->metadata;
  if (!m) return -1;
  int32_t n;
  memcpy(&n, m, 4);
  m += 4;
  for (int32_t i = 0; i < n; i++) {
    int32_t kl, vl;
    memcpy(&kl, m, 4);
    const char *k = m + 4;
    memcpy(&vl, k + kl, 4);
    const char *v = k + kl + 4;
    if (kl == 16 && !memcmp(k, "PARQUET:field_id", 16)) {
      char buf[32];
      snprintf(buf, sizeof buf, "%.*s", (int)vl, v);
      return atoll(buf);
    }
    m = v + vl;
  }
  return -1;
}

/* Compares a (derived) against f (the file's); returns the number of differences. */
static int compare(const struct ArrowSchema *a, const struct ArrowSchema *f, const char *path,
                   int check_names) {
  int d = 0;
  char here[1024];
  snprintf(here, sizeof here, "%s/%s", path, a->name);
  if (check_names && strcmp(a->name, f->name)) {
    fprintf(stderr, "  %s: name %s vs file %s\n", here, a->name, f->name);
    d++;
  }
  bool ts = !strncmp(a->format, "ts", 2) && !strncmp(f->format, "ts", 2);
  if (!ts && strcmp(a->format, f->format)) {
    fprintf(stderr, "  %s: format %s vs file %s\n", here, a->format, f->format);
    d++;
  }
  /* name-mode writers may omit field ids in the file; when the file has one it must match */
  if (field_id(f) >= 0 && field_id(a) != field_id(f)) {
    fprintf(stderr, "  %s: field id %lld vs file %lld\n", here, field_id(a), field_id(f));
    d++;
  }
  if (a->n_children != f->n_children) {
    fprintf(stderr, "  %s: %lld children vs file %lld\n", here, (long long)a->n_children,
            (long long)f->n_children);
    return d + 1;
  }
  /* list/map inner names differ between writers (element/list, entries/key_value) */
  bool inner = a->format[0] == '+' && (a->format[1] == 'l' || a->format[1] == 'm');
  for (int64_t i = 0; i < a->n_children; i++)
    d += compare(a->children[i], f->children[i], here, !inner && check_names);
  return d;
}

static const char *first_data_file(const dk_snapshot *s, char *buf, size_t cap) {
  dk_file_entry f;
  if (dk_snapshot_num_files(s) < 1 || dk_snapshot_file(&f, s, 0, NULL) != DK_OK) return NULL;
  snprintf(buf, cap, "%s/%s", dk_snapshot_table_root(s), f.path);
  return buf;
}

DK_TEST(snapshot__physical_schema_matches_data_files) {
  const char *tables[] = {"delta-golden/table-with-columnmapping-mode-id",
                          "delta-golden/table-with-columnmapping-mode-name",
                          "delta-golden/data-reader-primitives",
                          "delta-golden/data-reader-nested-struct",
                          "delta-golden/data-reader-map",
                          "delta-golden/data-reader-array-complex-objects",
                          "delta-kernel-defaults/data-reader-primitives-column-mapping-name"};
  for (size_t i = 0; i < DK_ARRAY_LEN(tables); i++) {
    char root[4096], file[8192];
    snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), tables[i]);
    dk_error err = {0};
    dk_table *t;
    dk_snapshot *s;
    CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
    CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
    CHECK(first_data_file(s, file, sizeof file) != NULL);
    dk_parquet_file *pf;
    CHECK_OK(dk_parquet_open(&pf, file, NULL, &err), &err);
    struct ArrowSchema fs, ds;
    CHECK_OK(dk_parquet_schema(&fs, pf, &err), &err);
    CHECK_OK(dk_snapshot_arrow_schema(&ds, s, 1, &err), &err);
    /* the file holds the non-partition columns, in schema order */
    int diffs = compare(&ds, &fs, tables[i], 0);
    if (diffs) fprintf(stderr, "  %s: %d differences\n", tables[i], diffs);
    fs.release(&fs);
    ds.release(&ds);
    dk_parquet_file_free(pf);
    dk_snapshot_free(s);
    dk_table_free(t);
    CHECK_EQ_INT(diffs, 0);
  }
}

DK_TEST(snapshot__type_names) {
  char root[4096];
  snprintf(root, sizeof root, "%s/delta-golden/table-with-columnmapping-mode-name",
           dk_test_data_dir());
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_column_mapping_mode(s), DK_COLUMN_MAPPING_NAME);
  const dk_type *sc = dk_snapshot_schema(s);
  char buf[256];
  const dk_field *f = dk_schema_find(sc, "array_of_map_of_arrays");
  CHECK(f != NULL);
  dk_type_to_string(buf, sizeof buf, f->type);
  CHECK_EQ_STR(buf, "array<map<integer,array<integer>>>");
  f = dk_schema_find(sc, "decimal");
  dk_type_to_string(buf, sizeof buf, f->type);
  CHECK_EQ_STR(buf, "decimal(10,2)");
  CHECK(f->column_mapping_id > 0);
  CHECK(strncmp(f->physical_name, "col-", 4) == 0);
  /* truncation keeps a NUL and reports the full length */
  char small[8];
  size_t need = dk_type_to_string(small, sizeof small, dk_schema_find(sc, "array_of_map_of_arrays")->type);
  CHECK_EQ_INT(need, strlen("array<map<integer,array<integer>>>"));
  CHECK_EQ_INT(strlen(small), 7);
  dk_snapshot_free(s);
  dk_table_free(t);
}
