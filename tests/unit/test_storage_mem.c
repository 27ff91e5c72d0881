/* test_storage_mem.c — the in-memory test backend (storage_mem.c) and the byte source /
** Parquet reader over it.
**
** Oracles: the local backend (src/storage/local.c) over the same files — listings, stats and
** bytes must agree; the Parquet reader over memory must give the very batches it gives over
** the local file (compared as dk's JSON row text); call counters are checked against the
** read pattern the reader documents (footer head + tail in one read_ranges call, page index
** in one, a row group's chunks in one when the backend cannot map). */
#include <stdlib.h>

#include "codec/parquet/reader.h"
#include "dk/arrow_json.h"
#include "dk/parquet.h"
#include "io/source.h"
#include "storage_mem.h"
#include "test.h"

typedef struct names {
  char v[256][160];
  int dir[256];
  int64_t size[256];
  int n;
} names;

static dk_status collect(const dk_file_info *info, void *payload) {
  names *l = payload;
  if (l->n >= 256) return DK_INTERNAL;
  snprintf(l->v[l->n], sizeof l->v[0], "%s", info->path);
  l->dir[l->n] = info->is_dir;
  l->size[l->n] = info->size;
  l->n++;
  return DK_OK;
}

DK_TEST(storage_mem__basic_ops) {
  dk_error err;
  dk_error_init(&err);
  dk_mem_storage *m;
  CHECK_OK(dk_mem_new(&m, &err), &err);
  dk_storage *s = dk_mem_storage_of(m);
  CHECK_OK(dk_mem_put(m, "/t/_delta_log/00000000000000000000.json", "{}\n", 3, 1000, &err), &err);
  CHECK_OK(dk_mem_put(m, "/t/_delta_log/00000000000000000001.json", "{}\n{}\n", 6, 2000, &err), &err);
  CHECK_OK(dk_mem_put(m, "/t/_delta_log/_sidecars/a.parquet", "x", 1, 3000, &err), &err);
  CHECK_OK(dk_mem_put(m, "/t/a.b", "1", 1, 0, &err), &err);
  CHECK_OK(dk_mem_put(m, "/t/a/x", "22", 2, 0, &err), &err);
  names l = {0};
  CHECK_OK(s->list_from(s, "/t", NULL, collect, &l, &err), &err);
  /* strcmp order of the names: "_delta_log" < "a" < "a.b" */
  CHECK_EQ_INT(l.n, 3);
  CHECK_EQ_STR(l.v[0], "/t/_delta_log");
  CHECK_EQ_STR(l.v[1], "/t/a");
  CHECK_EQ_STR(l.v[2], "/t/a.b");
  CHECK(l.dir[0] && l.dir[1] && !l.dir[2]);
  memset(&l, 0, sizeof l);
  CHECK_OK(s->list_from(s, "/t/_delta_log/", "00000000000000000001", collect, &l, &err), &err);
  CHECK_EQ_INT(l.n, 2);
  CHECK_EQ_STR(l.v[0], "/t/_delta_log/00000000000000000001.json");
  CHECK_EQ_INT(l.size[0], 6);
  CHECK_EQ_STR(l.v[1], "/t/_delta_log/_sidecars");
  CHECK_STATUS(s->list_from(s, "/nope", NULL, collect, &l, &err), DK_NOT_FOUND);
  dk_file_info fi;
  CHECK_OK(s->stat(s, "/t/_delta_log/00000000000000000001.json", &fi, &err), &err);
  CHECK(fi.size == 6 && fi.mtime_ms == 2000 && !fi.is_dir);
  CHECK_OK(s->stat(s, "/t/_delta_log", &fi, &err), &err);
  CHECK(fi.is_dir);
  CHECK_OK(s->stat(s, "/t/", &fi, &err), &err);
  CHECK(fi.is_dir);
  dk_error_init(&err);
  CHECK_STATUS(s->stat(s, "/t/_delta", &fi, &err), DK_NOT_FOUND);
  uint8_t *data;
  size_t len;
  CHECK_OK(s->read(s, "/t/_delta_log/00000000000000000001.json", &data, &len, &err), &err);
  CHECK(len == 6 && !memcmp(data, "{}\n{}\n", 6));
  s->free_buf(s, data);
  char buf[4];
  CHECK_OK(s->read_range(s, "/t/a/x", 1, buf, 1, &err), &err);
  CHECK(buf[0] == '2');
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, "/t/a/x", 1, buf, 2, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(s->put_if_absent(s, "/t/a/x", "3", 1, &err), DK_CONFLICT);
  CHECK_OK(s->put_if_absent(s, "/t/a/y", "3", 1, &err), &err);
  CHECK_OK(s->remove(s, "/t/a/y", &err), &err);
  dk_error_init(&err);
  CHECK_STATUS(s->remove(s, "/t/a/y", &err), DK_NOT_FOUND);
  /* streamed writes: nothing visible before commit */
  dk_storage_writer *w;
  CHECK_OK(s->open_write(s, "/t/w", &w, &err), &err);
  CHECK_OK(w->write(w, "ab", 2, &err), &err);
  CHECK(dk_mem_get(m, "/t/w", NULL) == NULL);
  CHECK_OK(w->write(w, "c", 1, &err), &err);
  CHECK_OK(w->commit(w, 1, &err), &err);
  CHECK(dk_mem_get(m, "/t/w", &len) && len == 3);
  CHECK_OK(s->open_write(s, "/t/w2", &w, &err), &err);
  w->abort(w);
  CHECK(dk_mem_get(m, "/t/w2", NULL) == NULL);
  /* a mapping outlives the file it maps */
  const void *addr;
  void *tok;
  CHECK_OK(s->map(s, "/t/a/x", &addr, &len, &tok, &err), &err);
  CHECK_OK(s->write(s, "/t/a/x", "zzz", 3, &err), &err);
  CHECK(len == 2 && !memcmp(addr, "22", 2));
  s->unmap(s, tok);
  CHECK(m->calls[DK_MEM_LIST] == 3 && m->calls[DK_MEM_READ] == 1 && m->calls[DK_MEM_MAP] == 1);
  s->free(s);
}

DK_TEST(storage_mem__faults_and_paging) {
  dk_error err;
  dk_error_init(&err);
  dk_mem_storage *m;
  CHECK_OK(dk_mem_new(&m, &err), &err);
  dk_storage *s = dk_mem_storage_of(m);
  char key[64];
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof key, "/d/f%02d", i);
    CHECK_OK(dk_mem_put(m, key, "abcdef", 6, i, &err), &err);
  }
  /* the 3rd read-type call of read_range fails, once */
  dk_mem_fail(m, DK_MEM_READ_RANGE, 3, DK_IO, 0);
  char b[6];
  for (int i = 1; i <= 5; i++) {
    dk_error_init(&err);
    dk_status st = s->read_range(s, "/d/f00", 0, b, 6, &err);
    CHECK_EQ_INT(st, i == 3 ? DK_IO : DK_OK);
    if (st) CHECK(strstr(err.message, "injected"));
  }
  CHECK_EQ_INT(m->injected, 1);
  /* persistent: every stat from the 2nd on */
  dk_mem_fail(m, DK_MEM_STAT, 2, DK_NOT_FOUND, 1);
  dk_file_info fi;
  CHECK_OK(s->stat(s, "/d/f01", &fi, NULL), NULL);
  CHECK_STATUS(s->stat(s, "/d/f01", &fi, NULL), DK_NOT_FOUND);
  CHECK_STATUS(s->stat(s, "/d/f01", &fi, NULL), DK_NOT_FOUND);
  CHECK_EQ_INT(m->injected, 2);
  /* paginated listing: pages of 3 entries, each one counted call; the 3rd page fails after
  ** six entries were delivered */
  dk_mem_fail(m, DK_MEM_LIST_PAGE, 3, DK_IO, 0);
  m->list_page = 3;
  names l = {0};
  dk_error_init(&err);
  CHECK_STATUS(s->list_from(s, "/d", NULL, collect, &l, &err), DK_IO);
  CHECK_EQ_INT(l.n, 6);
  dk_mem_fail(m, DK_MEM_ANY, 0, DK_OK, 0);
  memset(&l, 0, sizeof l);
  CHECK_OK(s->list_from(s, "/d", "f05", collect, &l, &err), &err);
  CHECK_EQ_INT(l.n, 5);
  CHECK_EQ_INT(m->calls[DK_MEM_LIST_PAGE], 2);
  /* short reads: a truncated whole-file read, a short range read */
  dk_mem_short_read(m, 1);
  uint8_t *data;
  size_t len;
  CHECK_OK(s->read(s, "/d/f02", &data, &len, &err), &err);
  CHECK_EQ_INT(len, 3);
  s->free_buf(s, data);
  dk_mem_short_read(m, 2);
  CHECK_OK(s->read_range(s, "/d/f02", 0, b, 6, NULL), NULL);
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, "/d/f02", 0, b, 6, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "short read"));
  /* a version-1 backend has no v2 operations */
  dk_mem_storage *v1;
  CHECK_OK(dk_mem_new_version(&v1, 1, &err), &err);
  CHECK(v1->base.version == 1 && !v1->base.read_ranges && !v1->base.map && !v1->base.open_write);
  dk_mem_free(v1);
  dk_mem_free(m);
}

/* Every row of every batch of f as dk's JSON text, one line each. */
static dk_status rows_text(dk_buf *out, dk_parquet_file *f, dk_error *err) {
  struct ArrowArrayStream st;
  dk_parquet_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
  ro.batch_size = 1000;
  DK_RETURN_NOT_OK(dk_parquet_read(&st, f, &ro, err));
  struct ArrowSchema sc;
  dk_status s = st.get_schema(&st, &sc) ? DK_INTERNAL : DK_OK;
  dk_arrow_json *enc = NULL;
  if (!s) s = dk_arrow_json_new(&enc, &sc, NULL, err);
  while (!s) {
    struct ArrowArray a;
    if (st.get_next(&st, &a)) {
      s = dk__error_set(err, DK_IO, "%s", st.get_last_error(&st));
      break;
    }
    if (!a.release) break;
    for (int64_t i = 0; !s && i < a.length; i++) {
      dk_str t;
      s = dk_arrow_json_value(&t, enc, &a, i, err);
      if (!s) s = dk__buf_append(out, t.ptr, t.len, err);
      if (!s) s = dk__buf_putc(out, '\n', err);
    }
    a.release(&a);
  }
  dk_arrow_json_free(enc);
  if (sc.release) sc.release(&sc);
  st.release(&st);
  return s;
}

/* Files under the repository root (3 row groups, a 18 KiB footer; 2 row groups with a page
** index) and one of the corpus (a 2.3 MiB chunk). */
static const char *const PQ_FILES[] = {
    "@tests/unit/data/stats_pages_table/_delta_log/00000000000000000100.checkpoint.parquet",
    "@fuzz/corpora/parquet/page_index.parquet",
    "delta-golden/parquet-decimal-type/part-00000-8c8ffc0f-9259-478b-9b1b-ea6d37ce5889-c000.snappy.parquet",
};

static void file_path(char *out, size_t cap, const char *name) {
  if (name[0] != '@') {
    snprintf(out, cap, "%s/%s", dk_test_data_dir(), name);
    return;
  }
  snprintf(out, cap, "%s", __FILE__); /* .../tests/unit/test_storage_mem.c */
  char *t = strstr(out, "tests/unit/");
  snprintf(t ? t : out, cap - (size_t)(t ? t - out : 0), "%s", name + 1);
}

DK_TEST(storage_mem__parquet_over_memory_equals_local) {
  dk_error err;
  dk_error_init(&err);
  for (size_t k = 0; k < DK_ARRAY_LEN(PQ_FILES); k++) {
    char path[1024];
    file_path(path, sizeof path, PQ_FILES[k]);
    dk_parquet_file *lf;
    if (dk_parquet_open(&lf, path, NULL, &err) != DK_OK) {
      fprintf(stderr, "  skipped %s: %s\n", PQ_FILES[k], err.message);
      dk_error_init(&err);
      continue;
    }
    dk_buf want;
    dk__buf_init(&want, NULL);
    CHECK_OK(rows_text(&want, lf, &err), &err);
    dk_parquet_file_free(lf);
    CHECK(want.len > 0);
    dk_mem_storage *m;
    CHECK_OK(dk_mem_new(&m, &err), &err);
    size_t len;
    const char *slash = strrchr(path, '/');
    *(char *)slash = 0;
    CHECK_OK(dk_mem_load_dir(m, path, "s3://b/d", &err), &err);
    char key[1024];
    snprintf(key, sizeof key, "s3://b/d/%s", slash + 1);
    CHECK(dk_mem_get(m, key, &len));
    /* three ways: mapped (views), copied with map offered but unused, and an object store
    ** without map (reads coalesced) */
    for (int mode = 0; mode < 3; mode++) {
      m->no_map = mode == 2;
      dk_mem_apply(m);
      dk_mem_reset_counters(m);
      dk_parquet_file *f;
      dk_pq__open_opts po = {.size = mode == 1 ? (int64_t)len : 0, .map = mode == 0};
      CHECK_OK(dk_pq__open_storage(&f, dk_mem_storage_of(m), key, &po, &err), &err);
      /* opening: one map, or one stat (unless the size is given) and one batched read */
      if (mode == 0) CHECK(m->calls[DK_MEM_MAP] == 1 && m->calls[DK_MEM_READ_RANGES] == 0);
      if (mode >= 1) CHECK_EQ_INT(m->calls[DK_MEM_READ_RANGES], 1); /* footers < 64 KiB */
      CHECK_EQ_INT(m->calls[DK_MEM_STAT], mode == 2 ? 1 : 0);
      dk_buf got;
      dk__buf_init(&got, NULL);
      dk_mem_reset_counters(m);
      CHECK_OK(rows_text(&got, f, &err), &err);
      CHECK(got.len == want.len && !memcmp(got.data, want.data, got.len));
      /* coalesced: one read_ranges per row group, none per page */
      if (mode == 2) CHECK_EQ_INT(m->calls[DK_MEM_READ_RANGES], dk_parquet_num_row_groups(f));
      CHECK_EQ_INT(m->calls[DK_MEM_READ_RANGE], 0);
      dk__buf_dispose(&got);
      dk_parquet_file_free(f);
    }
    /* a missing key and a directory */
    dk_parquet_file *f = NULL;
    dk_error_init(&err);
    CHECK_STATUS(dk_pq__open_storage(&f, dk_mem_storage_of(m), "s3://b/d/none", NULL, &err),
                 DK_NOT_FOUND);
    dk_error_init(&err);
    CHECK_STATUS(dk_pq__open_storage(&f, dk_mem_storage_of(m), "s3://b", NULL, &err), DK_IO);
    CHECK(f == NULL);
    dk__buf_dispose(&want);
    dk_mem_free(m);
  }
}

DK_TEST(storage_mem__source_over_memory) {
  static const uint8_t bytes[] = "0123456789";
  dk__source src;
  dk_io__source_mem(&src, bytes, 10, "mem");
  const uint8_t *v;
  uint8_t dst[4];
  CHECK_OK(dk_io__source_read(&src, 2, 3, dst, &v, NULL), NULL);
  CHECK(v == bytes + 2);
  dk_error err;
  dk_error_init(&err);
  CHECK_STATUS(dk_io__source_read(&src, 8, 3, dst, &v, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "past the end"));
  dk_byte_range r[2] = {{0, 2, dst}, {8, 2, dst + 2}};
  CHECK_OK(dk_io__source_read_ranges(&src, r, 2, NULL), NULL);
  CHECK(!memcmp(dst, "0189", 4));
  dk_io__source_release(&src);
  dk_io__source_release(&src); /* idempotent */
}

/* A footer longer than the first batched read (tests/python/gen_wide_footer.py): two reads, and
** every value as the generator wrote it (column k, row r = k * 10 + r). */
DK_TEST(storage_mem__long_footer_two_reads) {
  dk_error err;
  dk_error_init(&err);
  char path[1024];
  file_path(path, sizeof path, "@tests/unit/data/wide_footer.parquet");
  dk_mem_storage *m;
  CHECK_OK(dk_mem_new(&m, &err), &err);
  char *slash = strrchr(path, '/');
  *slash = 0;
  CHECK_OK(dk_mem_load_dir(m, path, "/w", &err), &err);
  m->no_map = 1;
  dk_mem_apply(m);
  dk_parquet_file *f;
  CHECK_OK(dk_pq__open_storage(&f, dk_mem_storage_of(m), "/w/wide_footer.parquet", NULL, &err),
           &err);
  CHECK_EQ_INT(m->calls[DK_MEM_READ_RANGES], 2);
  CHECK_EQ_INT(dk_parquet_num_columns(f), 400);
  dk_buf got;
  dk__buf_init(&got, NULL);
  CHECK_OK(rows_text(&got, f, &err), &err);
  dk_buf want;
  dk__buf_init(&want, NULL);
  for (int r = 0; r < 3; r++) {
    for (int k = 0; k < 400; k++)
      dk__buf_printf(&want, NULL, "%s\"c%d\":%d", k ? "," : "{", k, k * 10 + r);
    dk__buf_puts(&want, "}\n", NULL);
  }
  CHECK_EQ_STR(got.data, want.data);
  dk__buf_dispose(&got);
  dk__buf_dispose(&want);
  dk_parquet_file_free(f);
  dk_mem_free(m);
}
