/*
** test_scan.c — dk_scan through the C API: row counts of real Delta tables against their
** expected files (written by Delta-Spark / the golden generators), whole-scan vs split reads,
** LIMIT, and corrupted split bytes (must fail cleanly, never crash).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/parquet.h"
#include "dk/scan.h"
#include "test.h"

static int64_t drain(struct ArrowArrayStream *st, int *ok) {
  int64_t n = 0;
  *ok = 1;
  for (;;) {
    struct ArrowArray a;
    if (st->get_next(st, &a)) {
      *ok = 0;
      break;
    }
    if (!a.release) break;
    n += a.length;
    a.release(&a);
  }
  st->release(st);
  return n;
}

static const char *const TABLES[] = {
    "delta-golden/dv-with-columnmapping",
    "delta-golden/dv-partitioned-with-checkpoint",
    "delta-kernel-defaults/basic-dv-no-checkpoint",
    "delta-golden/table-with-columnmapping-mode-id",
    "delta-golden/data-reader-partition-values",
    "delta-golden/basic-with-inserts-overwrite-restore",
    "delta-golden/type-widening",
    "delta-golden/log-replay-dv-key-cases",
};

typedef struct opened {
  dk_table *t;
  dk_snapshot *s;
} opened;

static void open_table(opened *o, const char *rel, dk_error *err) {
  char root[1024];
  snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), rel);
  CHECK_OK(dk_table_open(&o->t, root, NULL, err), err);
  CHECK_OK(dk_snapshot_open(&o->s, o->t, NULL, err), err);
}

static void close_table(opened *o) {
  dk_snapshot_free(o->s);
  dk_table_free(o->t);
}

DK_TEST(scan__row_counts_match_expected_files) {
  for (size_t i = 0; i < sizeof TABLES / sizeof *TABLES; i++) {
    dk_error err;
    dk_error_init(&err);
    char exp[1024];
    snprintf(exp, sizeof exp, "%s/%s.expected.jsonl", dk_test_data_dir(), TABLES[i]);
    int64_t want = dk_test_count_lines(exp);
    CHECK(want > 0);
    opened o;
    open_table(&o, TABLES[i], &err);
    dk_scan *scan;
    CHECK_OK(dk_scan_new(&scan, o.s, NULL, &err), &err);
    struct ArrowArrayStream st;
    CHECK_OK(dk_scan_read(&st, scan, &err), &err);
    int ok;
    CHECK_EQ_INT(drain(&st, &ok), want);
    CHECK(ok);
    dk_scan_stats stats;
    dk_scan_stats_get(&stats, scan);
    CHECK_EQ_INT(stats.rows_returned, want);
    CHECK_EQ_INT(stats.rows_decoded - stats.rows_deleted, want);
    CHECK_EQ_INT(stats.files_selected, dk_snapshot_num_files(o.s));
    /* the same rows through serialized splits (tiny target: one split per file) */
    CHECK_OK(dk_scan_plan_splits(scan, &err), &err);
    CHECK(dk_scan_num_splits(scan) >= 1);
    int64_t total = 0;
    for (int64_t k = 0; k < dk_scan_num_splits(scan); k++) {
      uint8_t *bytes;
      size_t len;
      CHECK_OK(dk_scan_split_serialize(&bytes, &len, scan, k, &err), &err);
      CHECK_OK(dk_split_read(&st, bytes, len, NULL, &err), &err);
      dk_free(bytes);
      total += drain(&st, &ok);
      CHECK(ok);
    }
    CHECK_EQ_INT(total, want);
    dk_scan_free(scan);
    close_table(&o);
  }
}

DK_TEST(scan__limit_and_projection) {
  dk_error err;
  dk_error_init(&err);
  opened o;
  open_table(&o, "delta-golden/dv-with-columnmapping", &err);
  const char *cols[] = {"part", "col2"};
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.columns = cols;
  so.n_columns = 2;
  for (int64_t lim = 0; lim <= 40; lim += 7) {
    so.limit = lim;
    dk_scan *scan;
    CHECK_OK(dk_scan_new(&scan, o.s, &so, &err), &err);
    struct ArrowSchema sc;
    CHECK_OK(dk_scan_schema(&sc, scan, &err), &err);
    CHECK_EQ_INT(sc.n_children, 2);
    CHECK_EQ_STR(sc.children[0]->name, "part");
    CHECK_EQ_STR(sc.children[1]->name, "col2");
    sc.release(&sc);
    struct ArrowArrayStream st;
    CHECK_OK(dk_scan_read(&st, scan, &err), &err);
    int ok;
    CHECK_EQ_INT(drain(&st, &ok), lim < 35 ? lim : 35); /* 35 expected rows */
    dk_scan_free(scan);
  }
  const char *bad[] = {"no_such_column"};
  so.columns = bad;
  so.n_columns = 1;
  dk_scan *scan = NULL;
  CHECK_STATUS(dk_scan_new(&scan, o.s, &so, &err), DK_NOT_FOUND);
  CHECK(scan == NULL);
  close_table(&o);
}

DK_TEST(scan__corrupted_splits_fail_cleanly) {
  dk_error err;
  dk_error_init(&err);
  opened o;
  open_table(&o, "delta-golden/dv-partitioned-with-checkpoint", &err);
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.limit = -1;
  so.metadata_fields = DK_META_FILE_PATH | DK_META_ROW_INDEX;
  dk_expr *f;
  CHECK_OK(dk_expr_parse(&f, "col1 > 3", &err), &err);
  so.filter = f;
  dk_scan *scan;
  CHECK_OK(dk_scan_new(&scan, o.s, &so, &err), &err);
  CHECK_OK(dk_scan_plan_splits(scan, &err), &err);
  uint8_t *bytes;
  size_t len;
  CHECK_OK(dk_scan_split_serialize(&bytes, &len, scan, 0, &err), &err);
  uint8_t *copy = malloc(len);
  CHECK(copy != NULL);
  /* every truncation is DK_CORRUPT */
  for (size_t n = 0; n < len; n++) {
    struct ArrowArrayStream st;
    dk_error_init(&err);
    CHECK_STATUS(dk_split_read(&st, bytes, n, NULL, &err), DK_CORRUPT);
  }
  /* byte flips: fail cleanly at open or while reading, or read some rows; never crash */
  for (size_t pos = 0; pos < len; pos++) {
    for (int v = 0; v < 3; v++) {
      memcpy(copy, bytes, len);
      copy[pos] = (uint8_t)(v == 0 ? copy[pos] ^ 0xff : v == 1 ? 0 : copy[pos] + 1);
      struct ArrowArrayStream st;
      dk_error_init(&err);
      if (dk_split_read(&st, copy, len, NULL, &err) == DK_OK) {
        int ok;
        (void)drain(&st, &ok);
      }
    }
  }
  free(copy);
  dk_free(bytes);
  dk_scan_free(scan);
  dk_expr_free(f);
  close_table(&o);
}

DK_TEST(scan__stream_outlives_scan_handle) {
  dk_error err;
  dk_error_init(&err);
  opened o;
  open_table(&o, "delta-golden/dv-with-columnmapping", &err);
  for (int threads = 1; threads <= 3; threads += 2) {
    dk_scan_options so;
    memset(&so, 0, sizeof so);
    so.version = DK_SCAN_OPTIONS_VERSION;
    so.limit = -1;
    so.threads = threads;
    dk_scan *scan;
    CHECK_OK(dk_scan_new(&scan, o.s, &so, &err), &err);
    struct ArrowArrayStream st;
    CHECK_OK(dk_scan_read(&st, scan, &err), &err);
    dk_scan_free(scan); /* the stream keeps its own reference */
    int ok;
    CHECK_EQ_INT(drain(&st, &ok), 35); /* rows of dv-with-columnmapping.expected.jsonl */
    CHECK(ok);
  }
  close_table(&o);
}

/* keep_residual = 1: dk prunes and skips but leaves the residual to the engine, which must
** get every row that can match (a superset of the filtered answer, here the exact count of
** expected rows with col1 > 20 plus rows of the same files that do not match). */
DK_TEST(scan__keep_residual_returns_a_superset) {
  dk_error err;
  dk_error_init(&err);
  opened o;
  open_table(&o, "delta-golden/dv-with-columnmapping", &err);
  dk_expr *f;
  CHECK_OK(dk_expr_parse(&f, "part = 1 AND col1 > 20", &err), &err);
  int64_t counts[2];
  for (int keep = 0; keep <= 1; keep++) {
    dk_scan_options so;
    memset(&so, 0, sizeof so);
    so.version = DK_SCAN_OPTIONS_VERSION;
    so.limit = -1;
    so.filter = f;
    so.keep_residual = keep;
    dk_scan *scan;
    CHECK_OK(dk_scan_new(&scan, o.s, &so, &err), &err);
    const dk_expr *res = dk_scan_residual(scan);
    CHECK(res != NULL);
    if (res) {
      char *txt = NULL;
      CHECK_OK(dk_expr_to_string(&txt, res, &err), &err);
      CHECK(txt && strstr(txt, "col1") && !strstr(txt, "part"));
      dk_expr_string_free(txt);
    }
    struct ArrowArrayStream st;
    CHECK_OK(dk_scan_read(&st, scan, &err), &err);
    int ok;
    counts[keep] = drain(&st, &ok);
    CHECK(ok);
    dk_scan_stats s;
    dk_scan_stats_get(&s, scan);
    CHECK(s.files_pruned_partition > 0);
    if (keep) CHECK_EQ_INT(s.rows_filtered, 0);
    dk_scan_free(scan);
  }
  /* expected rows with part = 1: col1 in {1, 11, 21, 31, 41} -> 3 have col1 > 20 */
  CHECK_EQ_INT(counts[0], 3);
  CHECK(counts[1] >= counts[0]);
  /* a partition-only filter is exact: no residual */
  dk_expr *pf;
  CHECK_OK(dk_expr_parse(&pf, "part = 1", &err), &err);
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.limit = -1;
  so.filter = pf;
  dk_scan *scan;
  CHECK_OK(dk_scan_new(&scan, o.s, &so, &err), &err);
  CHECK(dk_scan_residual(scan) == NULL);
  dk_scan_free(scan);
  dk_expr_free(pf);
  dk_expr_free(f);
  close_table(&o);
}
