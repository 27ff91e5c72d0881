/*
** test_changes_read.c — the change data feed and streams over corpus tables, at the C API:
**   - the corpus CDF table (delta-golden/commit-info-containing-arbitrary-operationParams-
**     types): Spark's table_changes answers for it (tests/interop/cdf_oracle.py, restated:
**     (1, 1, insert, v0), (2, 2, insert, v1); [2, 1] DELTA_INVALID_CDC_RANGE, [3, 4]
**     DELTA_CDC_START_VERSION_AFTER_LATEST) and `_commit_timestamp` = the commit files'
**     mtimes made strictly increasing (os-level stat is the oracle);
**   - the file reader's pieces the feed is built on: keep-only deletion vectors (a file read
**     through its own DV as the rows to keep gives exactly the DV's cardinality, the count
**     the writer recorded), constant extra columns (values, filtering, pruning);
**   - every allocation failing in turn over dk_changes_new + read and dk_stream_open + next +
**     read: a clean DK_NOMEM (or a stream error with a message), nothing leaked
**     (DK_TEST_FAIL_AT=K runs only from failing allocation K on, to debug one).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dk/changes.h"
#include "scan/file_reader.h"
#include "fail_alloc.h"
#include "test.h"

static const char *corpus(char *buf, size_t cap, const char *rel) {
  snprintf(buf, cap, "%s/%s", dk_test_data_dir(), rel);
  return buf;
}
#define CDF_TABLE "delta-golden/commit-info-containing-arbitrary-operationParams-types"

static int64_t mtime_ms(const char *root, int64_t v) {
  char p[2048];
  snprintf(p, sizeof p, "%s/_delta_log/%020lld.json", root, (long long)v);
  struct stat st;
  if (stat(p, &st)) return -1;
  return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

/* Rows of a change stream as "id,month,type,version,ts" lines. */
static int collect(struct ArrowArrayStream *s, char out[][128], int cap) {
  struct ArrowSchema sc;
  if (s->get_schema(s, &sc)) return -1;
  int n = 0, ci = -1, cm = -1, ct = -1, cv = -1, cts = -1;
  for (int64_t i = 0; i < sc.n_children; i++) {
    const char *nm = sc.children[i]->name;
    if (!strcmp(nm, "id")) ci = (int)i;
    if (!strcmp(nm, "month")) cm = (int)i;
    if (!strcmp(nm, "_change_type")) ct = (int)i;
    if (!strcmp(nm, "_commit_version")) cv = (int)i;
    if (!strcmp(nm, "_commit_timestamp")) cts = (int)i;
  }
  sc.release(&sc);
  if (ci < 0 || cm < 0 || ct < 0 || cv < 0 || cts < 0) return -1;
  for (;;) {
    struct ArrowArray a;
    if (s->get_next(s, &a)) return -1;
    if (!a.release) break;
    for (int64_t r = 0; r < a.length && n < cap; r++, n++) {
      const struct ArrowArray *t = a.children[ct];
      const int32_t *off = t->buffers[1];
      snprintf(out[n], 128, "%d,%d,%.*s,%lld,%lld",
               ((const int32_t *)a.children[ci]->buffers[1])[r],
               ((const int32_t *)a.children[cm]->buffers[1])[r], (int)(off[r + 1] - off[r]),
               (const char *)t->buffers[2] + off[r],
               (long long)((const int64_t *)a.children[cv]->buffers[1])[r],
               (long long)((const int64_t *)a.children[cts]->buffers[1])[r]);
    }
    a.release(&a);
  }
  return n;
}

static int cmp_str(const void *a, const void *b) { return strcmp(a, b); }

DK_TEST(changes__corpus_cdf_table_as_spark) {
  char root[1024];
  corpus(root, sizeof root, CDF_TABLE);
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
  dk_changes_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHANGES_OPTIONS_VERSION;
  o.start_kind = DK_BOUND_VERSION;
  dk_changes *c;
  CHECK_OK(dk_changes_new(&c, t, &o, &err), &err);
  CHECK_EQ_INT(dk_changes_start_version(c), 0);
  CHECK_EQ_INT(dk_changes_end_version(c), 2);
  struct ArrowArrayStream s;
  CHECK_OK(dk_changes_read(&s, c, &err), &err);
  dk_changes_free(c); /* the stream keeps what it reads */
  char rows[8][128];
  int n = collect(&s, rows, 8);
  s.release(&s);
  CHECK_EQ_INT(n, 2);
  qsort(rows, (size_t)n, sizeof rows[0], cmp_str);
  int64_t t0 = mtime_ms(root, 0), t1 = mtime_ms(root, 1);
  if (t1 <= t0) t1 = t0 + 1; /* strictly increasing, as delta-spark's history */
  char want[2][128];
  snprintf(want[0], 128, "1,1,insert,0,%lld", (long long)t0 * 1000);
  snprintf(want[1], 128, "2,2,insert,1,%lld", (long long)t1 * 1000);
  CHECK_EQ_STR(rows[0], want[0]);
  CHECK_EQ_STR(rows[1], want[1]);
  /* Spark's errors */
  o.start = 2;
  o.end_kind = DK_BOUND_VERSION;
  o.end = 1;
  dk_error_init(&err);
  CHECK_EQ_INT(dk_changes_new(&c, t, &o, &err), DK_INVALID);
  CHECK(strstr(err.message, "DELTA_INVALID_CDC_RANGE"));
  o.start = 3;
  o.end = 4;
  dk_error_init(&err);
  CHECK_EQ_INT(dk_changes_new(&c, t, &o, &err), DK_OUT_OF_RANGE);
  CHECK(strstr(err.message, "DELTA_CDC_START_VERSION_AFTER_LATEST"));
  /* a filter on the metadata and partition columns prunes the change files unread */
  o.start = 0;
  o.end_kind = DK_BOUND_DEFAULT;
  dk_expr *f;
  CHECK_OK(dk_expr_parse(&f, "_commit_version = 1 AND month = 2", &err), &err);
  o.filter = f;
  CHECK_OK(dk_changes_new(&c, t, &o, &err), &err);
  CHECK_EQ_INT(dk_changes_num_files(c), 1);
  dk_change_file cf;
  CHECK_OK(dk_changes_file_get(&cf, c, 0, &err), &err);
  CHECK_EQ_INT(cf.commit_version, 1);
  CHECK_EQ_INT(cf.source, DK_CHANGE_ADDED);
  CHECK_EQ_STR(dk_change_source_type(cf.source), "insert");
  dk_changes_free(c);
  dk_expr_free(f);
  dk_table_free(t);
}

DK_TEST(changes__file_reader_keep_dv_and_constants) {
  char root[1024];
  corpus(root, sizeof root, "delta-golden/dv-partitioned-with-checkpoint");
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  dk_snapshot *snap;
  CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
  CHECK_OK(dk_snapshot_open(&snap, t, NULL, &err), &err);
  static const dk_type long_t = {.id = DK_TYPE_LONG};
  dk_field extra = {"_commit_version", &long_t, 1, "{}", -1, "_commit_version"};
  static const bool constant[1] = {true};
  dk_expr *pred;
  CHECK_OK(dk_expr_parse(&pred, "_commit_version = 7", &err), &err);
  dk_scan__file_reader_options ro;
  memset(&ro, 0, sizeof ro);
  ro.extra_columns = &extra;
  ro.n_extra_columns = 1;
  ro.extra_constant = constant;
  ro.predicate = pred;
  dk_scan__file_reader *r;
  CHECK_OK(dk_scan__file_reader_new(&r, snap, &ro, &err), &err);
  int with_dv = 0;
  for (int64_t i = 0; i < dk_snapshot_num_files(snap); i++) {
    dk_file_entry e;
    CHECK_OK(dk_snapshot_file(&e, snap, i, &err), &err);
    if (!e.dv) continue;
    const char *seven[1] = {"7"}, *six[1] = {"6"};
    bool pruned = true;
    CHECK_OK(dk_scan__file_prunes(&pruned, r, &e, seven, &err), &err);
    CHECK(!pruned);
    CHECK_OK(dk_scan__file_prunes(&pruned, r, &e, six, &err), &err);
    CHECK(pruned);
    /* the DV's rows as the rows to keep: its cardinality, each with the constant */
    dk_file_entry whole = e;
    whole.dv = NULL;
    dk_scan__file *f;
    CHECK_OK(dk_scan__file_open_selected(&f, r, &whole, e.dv, seven, &err), &err);
    int64_t rows = 0;
    for (;;) {
      struct ArrowArray a;
      CHECK_OK(dk_scan__file_next(&a, f, &err), &err);
      if (!a.release) break;
      const struct ArrowArray *cv = a.children[a.n_children - 1];
      for (int64_t k = 0; k < a.length; k++) CHECK_EQ_INT(((const int64_t *)cv->buffers[1])[k], 7);
      rows += a.length;
      a.release(&a);
    }
    dk_scan__file_close(f);
    CHECK_EQ_INT(rows, e.dv->cardinality);
    /* keep-only DV minus the same DV: nothing */
    CHECK_OK(dk_scan__file_open_selected(&f, r, &e, e.dv, seven, &err), &err);
    struct ArrowArray a;
    CHECK_OK(dk_scan__file_next(&a, f, &err), &err);
    CHECK(!a.release);
    dk_scan__file_close(f);
    with_dv++;
  }
  CHECK(with_dv > 0);
  dk_scan__file_reader_free(r);
  dk_expr_free(pred);
  dk_snapshot_free(snap);
  dk_table_free(t);
}

/* ---- allocation failures -------------------------------------------------------------- */

/* Rows read, -1 for a clean failure, -2 for an unclean one. */
static int64_t drain(struct ArrowArrayStream *s) {
  int64_t n = 0;
  for (;;) {
    struct ArrowArray a;
    if (s->get_next(s, &a)) {
      const char *m = s->get_last_error(s);
      n = m && m[0] ? -1 : -2;
      break;
    }
    if (!a.release) break;
    n += a.length;
    a.release(&a);
  }
  s->release(s);
  return n;
}

static int64_t run_changes(dk_table *t) {
  dk_error err;
  dk_error_init(&err);
  dk_changes_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHANGES_OPTIONS_VERSION;
  o.start_kind = DK_BOUND_VERSION;
  dk_changes *c = NULL;
  dk_status st = dk_changes_new(&c, t, &o, &err);
  if (st) return st == DK_NOMEM ? -1 : -2;
  struct ArrowArrayStream s;
  st = dk_changes_read(&s, c, &err);
  dk_changes_free(c);
  if (st) return st == DK_NOMEM ? -1 : -2;
  return drain(&s);
}

static int64_t run_stream(dk_table *t) {
  dk_error err;
  dk_error_init(&err);
  dk_stream_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_STREAM_OPTIONS_VERSION;
  o.available_now = 1;
  o.max_files = 1;
  o.change_data_feed = 1;
  dk_stream *s = NULL;
  dk_status st = dk_stream_open(&s, t, &o, &err);
  if (st) return st == DK_NOMEM ? -1 : -2;
  int64_t rows = 0;
  for (;;) {
    dk_stream_batch *b = NULL;
    st = dk_stream_next(&b, s, &err);
    if (st || !b) break;
    struct ArrowArrayStream as;
    st = dk_stream_batch_read(&as, b, &err);
    dk_stream_batch_free(b);
    if (st) break;
    int64_t n = drain(&as);
    if (n < 0) {
      rows = n;
      break;
    }
    rows += n;
  }
  dk_stream_free(s);
  if (st) return st == DK_NOMEM ? -1 : -2;
  return rows;
}

static void fail_loop(int64_t (*run)(dk_table *), const char *what, int threads) {
  char root[1024];
  corpus(root, sizeof root, CDF_TABLE);
  int64_t want = -3;
  long points = 0;
  const char *only = getenv("DK_TEST_FAIL_AT");
  for (long k = only ? atol(only) : -1;; k++) {
    dk_test_fail_alloc f = {.left = k < 0 ? 1L << 40 : k};
    dk_allocator a = dk_test_fail_allocator(&f);
    dk_table_options to;
    memset(&to, 0, sizeof to);
    to.version = DK_TABLE_OPTIONS_VERSION;
    to.alloc = &a;
    to.threads = threads;
    dk_table *t = NULL;
    dk_error err;
    dk_error_init(&err);
    if (dk_table_open(&t, root, &to, &err)) {
      CHECK_EQ_INT(err.code, DK_NOMEM);
      CHECK_EQ_INT(f.live, 0);
      continue;
    }
    int64_t got = run(t);
    dk_table_free(t);
    if (f.live) printf("  %s: leak at failing allocation %ld\n", what, k);
    if (only) return;
    CHECK_EQ_INT(f.live, 0);
    if (k < 0) {
      want = got;
      CHECK(want > 0);
      continue;
    }
    CHECK(got == -1 || got == want);
    points++;
    if (got == want) break;
  }
  printf("  %s (%d threads): %ld failing allocation points, all clean\n", what, threads,
         points);
}

DK_TEST(changes__allocation_failures_are_clean) {
  fail_loop(run_changes, "dk_changes_new + read", 1);
  fail_loop(run_changes, "dk_changes_new + read (files read ahead)", 2);
  fail_loop(run_stream, "dk_stream (change data feed, 1 file a batch)", 1);
}
