/*
** test_pq_write.c — the Parquet writer (src/codec/parquet/write/) from C: its RLE hybrid and
** Thrift encoders against dk's own decoders, a round trip through dk's reader, the Delta stats
** of a tiny file, and the failure paths (unsupported types, batch/schema mismatches, a storage
** writer that fails midway: nothing may appear under the file's name). The oracle matrix
** against pyarrow, DuckDB and Spark lives in tests/python and tests/interop.
*/
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "codec/parquet/encoding.h"
#include "codec/parquet/metadata.h"
#include "codec/parquet/write/pqw.h"
#include "dk/parquet.h"
#include "test.h"

/* ---- encoders vs decoders ---------------------------------------------------------------- */

DK_TEST(pq_write__rle_roundtrip) {
  dk_error err;
  dk_error_init(&err);
  uint32_t vals[5000], got[5000];
  srand(7);
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + rand() % 5000, bw = rand() % 21;
    uint32_t mask = bw ? (uint32_t)((1ull << bw) - 1) : 0;
    for (int i = 0; i < n; i++) {
      int mode = (i / 37 + trial) % 3; /* runs, noise, short runs */
      vals[i] = mode == 0 ? (uint32_t)(trial & mask) : mode == 1 ? ((uint32_t)rand() & mask)
                                                               : (uint32_t)((i / 3) & mask);
    }
    dk_buf b;
    dk__buf_init(&b, NULL);
    CHECK_OK(dk_pqw__rle_encode_u32(&b, vals, n, bw, &err), &err);
    dk_pq_rle d;
    dk_pq__rle_init(&d, (const uint8_t *)b.data, b.len, bw);
    CHECK_OK(dk_pq__rle_get(&d, got, n, &err), &err);
    CHECK(memcmp(vals, got, sizeof(uint32_t) * (size_t)n) == 0);
    dk__buf_dispose(&b);
  }
}

DK_TEST(pq_write__page_header_roundtrip) {
  dk_error err;
  dk_error_init(&err);
  for (int type = 0; type < 4; type++) {
    if (type == PQ_PAGE_INDEX) continue;
    pqw_page_header h = {type, 123456, 789, 20000, 17, 19000, PQ_ENC_RLE_DICT, 40, 12, 1};
    dk_buf b;
    dk__buf_init(&b, NULL);
    CHECK_OK(dk_pqw__page_header(&b, &h, &err), &err);
    pq_page_header p;
    size_t used = 0;
    CHECK_OK(dk_pq__parse_page_header(&p, (const uint8_t *)b.data, b.len, 0, &used, &err), &err);
    CHECK_EQ_INT(used, b.len);
    CHECK_EQ_INT(p.type, type);
    CHECK_EQ_INT(p.uncompressed_size, 123456);
    CHECK_EQ_INT(p.compressed_size, 789);
    CHECK_EQ_INT(p.num_values, 20000);
    if (type == PQ_PAGE_DATA_V2) {
      CHECK_EQ_INT(p.num_nulls, 17);
      CHECK_EQ_INT(p.num_rows, 19000);
      CHECK_EQ_INT(p.def_bytes, 40);
      CHECK_EQ_INT(p.rep_bytes, 12);
    }
    dk__buf_dispose(&b);
  }
}

/* ---- Arrow input built by hand --------------------------------------------------------- */

static void no_release(struct ArrowSchema *s) { s->release = NULL; }
static void no_release_a(struct ArrowArray *a) { a->release = NULL; }

typedef struct fixture {
  struct ArrowSchema sc, cs[3], *csp[3];
  struct ArrowArray batch, ca[3], *cap[3];
  const void *bb[1], *b0[2], *b1[3], *b2[2];
  int64_t ints[6];
  int32_t offs[7];
  double dbl[6];
  uint8_t valid0, valid2;
} fixture;

/* struct<a: int64 (nulls at 2), s: utf8 not null, d: double (null at 5)>, 6 rows */
static void fixture_init(fixture *f, const char *afmt) {
  memset(f, 0, sizeof *f);
  const char *names[3] = {"a", "s", "d"}, *fmts[3] = {afmt, "u", "g"};
  for (int i = 0; i < 3; i++) {
    f->cs[i] = (struct ArrowSchema){fmts[i], names[i], NULL, i == 1 ? 0 : ARROW_FLAG_NULLABLE,
                                    0, NULL, NULL, no_release, NULL};
    f->csp[i] = &f->cs[i];
  }
  f->sc = (struct ArrowSchema){"+s", "", NULL, 0, 3, f->csp, NULL, no_release, NULL};
  int64_t iv[6] = {5, -3, 0, 9000000000LL, 5, -3};
  memcpy(f->ints, iv, sizeof iv);
  const char *text = "xyzzyhelloworld";
  int32_t ov[7] = {0, 1, 3, 5, 10, 15, 15};
  memcpy(f->offs, ov, sizeof ov);
  double dv[6] = {1.5, -0.0, 2.5, -7.0, 0.0, 99};
  memcpy(f->dbl, dv, sizeof dv);
  f->valid0 = 0x3f & ~(1 << 2);
  f->valid2 = 0x3f & ~(1 << 5);
  f->b0[0] = &f->valid0, f->b0[1] = f->ints;
  f->b1[0] = NULL, f->b1[1] = f->offs, f->b1[2] = text;
  f->b2[0] = &f->valid2, f->b2[1] = f->dbl;
  f->ca[0] = (struct ArrowArray){6, 1, 0, 2, 0, f->b0, NULL, NULL, no_release_a, NULL};
  f->ca[1] = (struct ArrowArray){6, 0, 0, 3, 0, f->b1, NULL, NULL, no_release_a, NULL};
  f->ca[2] = (struct ArrowArray){6, 1, 0, 2, 0, f->b2, NULL, NULL, no_release_a, NULL};
  for (int i = 0; i < 3; i++) f->cap[i] = &f->ca[i];
  f->bb[0] = NULL;
  f->batch = (struct ArrowArray){6, 0, 0, 1, 3, f->bb, f->cap, NULL, no_release_a, NULL};
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

DK_TEST(pq_write__roundtrip_dk_reader) {
  dk_error err;
  dk_error_init(&err);
  fixture f;
  fixture_init(&f, "l");
  char path[4200];
  for (int v = 1; v <= 2; v++) {
    snprintf(path, sizeof path, "%s/rt%d.parquet", dk_test_tmpdir(), v);
    dk_parquet_write_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
    o.data_page_version = v;
    o.page_rows = 2;
    o.row_group_rows = 4;
    dk_parquet_writer *w = NULL;
    CHECK_OK(dk_parquet_writer_open(&w, NULL, path, &f.sc, &o, &err), &err);
    CHECK_OK(dk_parquet_writer_write(w, &f.batch, &err), &err);
    CHECK(!file_exists(path)); /* nothing visible before close */
    dk_parquet_write_result res;
    memset(&res, 0, sizeof res);
    res.version = DK_PARQUET_WRITE_RESULT_VERSION;
    CHECK_OK(dk_parquet_writer_close(w, &res, &err), &err);
    CHECK_EQ_INT(res.num_rows, 6);
    CHECK_EQ_INT(res.num_row_groups, 2);
    char *stats = NULL;
    CHECK_OK(dk_parquet_writer_delta_stats(&stats, w, NULL, &err), &err);
    CHECK_EQ_STR(stats, "{\"numRecords\":6,\"minValues\":{\"a\":-3,\"s\":\"\",\"d\":-7.0},"
                        "\"maxValues\":{\"a\":9000000000,\"s\":\"zy\",\"d\":2.5},"
                        "\"nullCount\":{\"a\":1,\"s\":0,\"d\":1}}");
    dk_free(stats);
    dk_parquet_writer_free(w);

    dk_parquet_file *pf = NULL;
    CHECK_OK(dk_parquet_open(&pf, path, NULL, &err), &err);
    CHECK_EQ_INT(dk_parquet_num_rows(pf), 6);
    CHECK_EQ_INT(dk_parquet_num_row_groups(pf), 2);
    dk_parquet_column_stats cst;
    CHECK_OK(dk_parquet_column_stats_get(&cst, pf, 1, 2, &err), &err);
    CHECK(cst.has_min_max && cst.min_len == 8);
    double mn;
    memcpy(&mn, cst.min, 8);
    CHECK(mn == -0.0 && signbit(mn)); /* a zero min is written as -0.0 */
    dk_parquet_page_index *pi = NULL;
    CHECK_OK(dk_parquet_page_index_read(&pi, pf, 0, 0, &err), &err);
    CHECK_EQ_INT(dk_parquet_page_index_num_pages(pi), 2);
    const dk_parquet_page *pg = dk_parquet_page_index_page(pi, 1);
    CHECK(pg && pg->first_row == 2 && pg->has_null_count && pg->null_count == 1);
    dk_parquet_page_index_free(pi);
    struct ArrowArrayStream st;
    CHECK_OK(dk_parquet_read(&st, pf, NULL, &err), &err);
    int64_t row = 0;
    for (;;) {
      struct ArrowArray b;
      CHECK(st.get_next(&st, &b) == 0);
      if (!b.release) break;
      const struct ArrowArray *a = b.children[0], *s = b.children[1];
      for (int64_t i = 0; i < b.length; i++, row++) {
        const uint8_t *va = a->buffers[0];
        int valid = !va || ((va[(a->offset + i) >> 3] >> ((a->offset + i) & 7)) & 1);
        CHECK_EQ_INT(valid, row != 2);
        if (valid) CHECK_EQ_INT(((const int64_t *)a->buffers[1])[a->offset + i], f.ints[row]);
        const int32_t *so = s->buffers[1];
        int32_t len = so[s->offset + i + 1] - so[s->offset + i];
        CHECK_EQ_INT(len, f.offs[row + 1] - f.offs[row]);
      }
      b.release(&b);
    }
    CHECK_EQ_INT(row, 6);
    st.release(&st);
    dk_parquet_file_free(pf);
  }
}

DK_TEST(pq_write__rejects_bad_input) {
  dk_error err;
  dk_error_init(&err);
  fixture f;
  char path[4200];
  snprintf(path, sizeof path, "%s/bad.parquet", dk_test_tmpdir());
  dk_parquet_writer *w = NULL;
  fixture_init(&f, "I"); /* uint32: Delta has no unsigned types */
  CHECK_STATUS(dk_parquet_writer_open(&w, NULL, path, &f.sc, NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "'a'") && strstr(err.message, "uint32"));
  CHECK(w == NULL && !file_exists(path));
  fixture_init(&f, "l");
  dk_error_init(&err);
  CHECK_OK(dk_parquet_writer_open(&w, NULL, path, &f.sc, NULL, &err), &err);
  f.ca[1].n_buffers = 2; /* a utf8 column without its data buffer */
  CHECK_STATUS(dk_parquet_writer_write(w, &f.batch, &err), DK_INVALID);
  CHECK(strstr(err.message, "column 's'"));
  CHECK_STATUS(dk_parquet_writer_close(w, NULL, &err), DK_INVALID); /* failed: only free */
  dk_parquet_writer_free(w);
  CHECK(!file_exists(path));
  /* a null in the non-nullable column */
  fixture_init(&f, "l");
  uint8_t v1 = 0x3e;
  f.b1[0] = &v1;
  f.ca[1].null_count = 1;
  dk_error_init(&err);
  CHECK_OK(dk_parquet_writer_open(&w, NULL, path, &f.sc, NULL, &err), &err);
  CHECK_STATUS(dk_parquet_writer_write(w, &f.batch, &err), DK_INVALID);
  CHECK(strstr(err.message, "not nullable"));
  dk_parquet_writer_free(w);
  CHECK(!file_exists(path));
  /* options from the future */
  dk_parquet_write_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_PARQUET_WRITE_OPTIONS_VERSION + 1;
  CHECK_STATUS(dk_parquet_writer_open(&w, NULL, path, &f.sc, &o, &err), DK_INVALID);
}

/* ---- a storage whose writer fails after a byte budget --------------------------------- */

typedef struct failing {
  dk_storage s;
  dk_storage *inner;
  int64_t budget;
} failing;

typedef struct fw {
  dk_storage_writer w;
  dk_storage_writer *inner;
  failing *f;
} fw;

static dk_status fw_write(dk_storage_writer *w, const void *p, size_t n, dk_error *err) {
  fw *x = (fw *)w;
  if ((int64_t)n > x->f->budget) return dk__error_set(err, DK_IO, "injected: disk full");
  x->f->budget -= (int64_t)n;
  return x->inner->write(x->inner, p, n, err);
}
static dk_status fw_commit(dk_storage_writer *w, int if_absent, dk_error *err) {
  fw *x = (fw *)w;
  dk_status st = x->inner->commit(x->inner, if_absent, err);
  free(x);
  return st;
}
static void fw_abort(dk_storage_writer *w) {
  fw *x = (fw *)w;
  if (!x) return;
  x->inner->abort(x->inner);
  free(x);
}
static dk_status failing_open_write(dk_storage *s, const char *path, dk_storage_writer **out,
                                    dk_error *err) {
  failing *f = (failing *)s;
  fw *x = calloc(1, sizeof *x);
  DK_RETURN_NOT_OK(f->inner->open_write(f->inner, path, &x->inner, err));
  x->f = f;
  x->w.write = fw_write;
  x->w.commit = fw_commit;
  x->w.abort = fw_abort;
  *out = &x->w;
  return DK_OK;
}

DK_TEST(pq_write__failing_sink_leaves_nothing) {
  dk_error err;
  dk_error_init(&err);
  dk_storage *local = NULL;
  CHECK_OK(dk_storage_local_new(&local, NULL, &err), &err);
  failing f;
  memset(&f, 0, sizeof f);
  f.s = *local;
  f.s.open_write = failing_open_write;
  f.inner = local;
  /* large enough that the sink reaches the backend mid-file */
  int64_t rows = 300000;
  int64_t *vals = malloc(sizeof *vals * (size_t)rows);
  for (int64_t i = 0; i < rows; i++) vals[i] = i * 7919;
  const void *bufs[2] = {NULL, vals}, *bb[1] = {NULL};
  struct ArrowSchema cs = {"l", "x", NULL, 0, 0, NULL, NULL, no_release, NULL}, *csp = &cs;
  struct ArrowSchema sc = {"+s", "", NULL, 0, 1, &csp, NULL, no_release, NULL};
  struct ArrowArray ca = {rows, 0, 0, 2, 0, bufs, NULL, NULL, no_release_a, NULL}, *cap = &ca;
  struct ArrowArray batch = {rows, 0, 0, 1, 1, bb, &cap, NULL, no_release_a, NULL};
  char path[4200];
  snprintf(path, sizeof path, "%s/fail.parquet", dk_test_tmpdir());
  dk_parquet_write_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  o.codec = DK_PARQUET_UNCOMPRESSED;
  o.no_dictionary = 1;
  o.row_group_rows = 50000;
  /* threads = 2: row groups go to the sink from a task while the next one is encoded, so the
  ** failure reaches the writer from that task; both thread counts write the same bytes */
  char *files[2] = {NULL, NULL};
  size_t sizes[2] = {0, 0};
  for (int threads = 1; threads <= 2; threads++) {
    o.threads = threads;
    for (int64_t budget = 100; budget < 4000000; budget *= 7) {
      f.budget = budget;
      dk_parquet_writer *w = NULL;
      dk_error_init(&err);
      dk_status st = dk_parquet_writer_open(&w, &f.s, path, &sc, &o, &err);
      if (st == DK_OK) st = dk_parquet_writer_write(w, &batch, &err);
      if (st == DK_OK) st = dk_parquet_writer_close(w, NULL, &err);
      dk_parquet_writer_free(w);
      CHECK_EQ_INT(st, DK_IO);
      CHECK(strstr(err.message, "disk full"));
      CHECK(!file_exists(path));
    }
    f.budget = INT64_MAX;
    dk_parquet_writer *w = NULL;
    CHECK_OK(dk_parquet_writer_open(&w, &f.s, path, &sc, &o, &err), &err);
    CHECK_OK(dk_parquet_writer_write(w, &batch, &err), &err);
    CHECK_OK(dk_parquet_writer_close(w, NULL, &err), &err);
    dk_parquet_writer_free(w);
    CHECK(file_exists(path));
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL);
    fseek(fp, 0, SEEK_END);
    sizes[threads - 1] = (size_t)ftell(fp);
    rewind(fp);
    files[threads - 1] = malloc(sizes[threads - 1]);
    CHECK(fread(files[threads - 1], 1, sizes[threads - 1], fp) == sizes[threads - 1]);
    fclose(fp);
    remove(path);
  }
  CHECK(sizes[0] == sizes[1] && memcmp(files[0], files[1], sizes[0]) == 0);
  free(files[0]);
  free(files[1]);
  free(vals);
  local->free(local);
}
