/*
** test_scan_variant.c — Variant values written by Spark (delta-golden/spark-variant-checkpoint)
** rendered as JSON: every row's `v` must equal {"key": id}, the generator's formula restated
** in the table's info.txt and expected file; then every truncation and byte flip of those
** bytes must fail cleanly or render, never crash.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/json.h"
#include "dk/parquet.h"
#include "test.h"

static const struct ArrowArray *child(const struct ArrowSchema *s, const struct ArrowArray *a,
                                      const char *name, const struct ArrowSchema **cs) {
  for (int64_t i = 0; i < s->n_children; i++)
    if (!strcmp(s->children[i]->name, name)) {
      if (cs) *cs = s->children[i];
      return a->children[i];
    }
  return NULL;
}

static void bin(const struct ArrowArray *a, int64_t i, const uint8_t **p, size_t *n) {
  const int32_t *o = a->buffers[1];
  *p = (const uint8_t *)a->buffers[2] + o[a->offset + i];
  *n = (size_t)(o[a->offset + i + 1] - o[a->offset + i]);
}

DK_TEST(scan__variant_json_from_spark_files) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/delta-golden/spark-variant-checkpoint", dk_test_data_dir());
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  if (!d) return;
  struct dirent *de;
  int64_t rows = 0;
  while ((de = readdir(d)) != NULL) {
    size_t nl = strlen(de->d_name);
    if (de->d_name[0] == '.' || nl < 8 || strcmp(de->d_name + nl - 8, ".parquet") != 0) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    dk_error err;
    dk_error_init(&err);
    dk_parquet_file *f;
    CHECK_OK(dk_parquet_open(&f, path, NULL, &err), &err);
    const char *cols[] = {"id", "v"};
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.columns = cols;
    ro.n_columns = 2;
    struct ArrowArrayStream st;
    CHECK_OK(dk_parquet_read(&st, f, &ro, &err), &err);
    struct ArrowSchema sc;
    CHECK(st.get_schema(&st, &sc) == 0);
    for (;;) {
      struct ArrowArray a;
      CHECK(st.get_next(&st, &a) == 0);
      if (!a.release) break;
      const struct ArrowSchema *vs = NULL;
      const struct ArrowArray *ids = child(&sc, &a, "id", NULL);
      const struct ArrowArray *v = child(&sc, &a, "v", &vs);
      CHECK(ids && v && vs);
      if (!ids || !v || !vs) break;
      const struct ArrowArray *meta = child(vs, v, "metadata", NULL);
      const struct ArrowArray *val = child(vs, v, "value", NULL);
      CHECK(meta && val);
      if (!meta || !val) break;
      for (int64_t i = 0; i < a.length; i++) {
        const uint8_t *mp, *vp;
        size_t mn, vn;
        bin(meta, i, &mp, &mn);
        bin(val, i, &vp, &vn);
        dk_buf b;
        dk__buf_init(&b, NULL);
        CHECK_OK(dk__variant_to_json(&b, mp, mn, vp, vn, &err), &err);
        char want[64];
        snprintf(want, sizeof want, "{\"key\":%lld",
                 (long long)((const int64_t *)ids->buffers[1])[ids->offset + i]);
        dk__buf_putc(&b, 0, NULL);
        CHECK(!strncmp((const char *)b.data, want, strlen(want)) && b.data[strlen(want)] == '}');
        /* robustness: every truncation of value and metadata, and byte flips */
        for (size_t k = 0; k < vn; k++) {
          dk__buf_clear(&b);
          (void)dk__variant_to_json(&b, mp, mn, vp, k, NULL);
        }
        for (size_t k = 0; k < mn; k++) {
          dk__buf_clear(&b);
          (void)dk__variant_to_json(&b, mp, k, vp, vn, NULL);
        }
        uint8_t vc[256], mc[256];
        if (vn <= sizeof vc && mn <= sizeof mc) {
          for (size_t k = 0; k < vn + mn; k++) {
            memcpy(vc, vp, vn);
            memcpy(mc, mp, mn);
            if (k < vn) vc[k] ^= 0xff;
            else mc[k - vn] ^= 0xff;
            dk__buf_clear(&b);
            (void)dk__variant_to_json(&b, mc, mn, vc, vn, NULL);
          }
        }
        dk__buf_dispose(&b);
        rows++;
      }
      a.release(&a);
    }
    sc.release(&sc);
    st.release(&st);
    dk_parquet_file_free(f);
  }
  closedir(d);
  CHECK(rows >= 100);
}
