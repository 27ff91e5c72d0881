/*
** test_scan_alloc.c — the table's dk_allocator reaches scans: a fail-the-Nth-allocation loop
** (SQLite's malloc tests and test_dv.c's loop are the model) over dk_scan_new + reading the
** scan, the library's single-file reader (src/scan/file_reader.h) and dk_split_read. Each run
** must end in a clean error (DK_NOMEM, or a stream error with a message) or in the correct
** row count (that of a run with no failure), with every block handed out by the allocator
** freed again (and ASan seeing no leak).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/scan.h"
#include "scan/file_reader.h"
#include "fail_alloc.h"
#include "test.h"

/* Helpers return the row count, -1 for a clean failure, or UNCLEAN. */
#define UNCLEAN (-2)

/* Rows of the stream, or -1 after a stream error (which must carry a message). */
static int64_t drain_or_fail(struct ArrowArrayStream *st) {
  int64_t n = 0;
  for (;;) {
    struct ArrowArray a;
    if (st->get_next(st, &a)) {
      const char *m = st->get_last_error(st);
      n = m && m[0] ? -1 : UNCLEAN;
      break;
    }
    if (!a.release) break;
    n += a.length;
    a.release(&a);
  }
  st->release(st);
  return n;
}

typedef struct fixture {
  dk_test_fail_alloc f;
  dk_allocator a;
  dk_table *t;
  dk_snapshot *s;
  dk_expr *filter;
  dk_scan_options so;
} fixture;

static const char *const COLS[] = {"col1", "col2", "part"};

static void fixture_open(fixture *x, dk_error *err) {
  memset(x, 0, sizeof *x);
  x->f.left = 1L << 40;
  x->a = dk_test_fail_allocator(&x->f);
  char root[1024];
  snprintf(root, sizeof root, "%s/delta-golden/dv-partitioned-with-checkpoint", dk_test_data_dir());
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.alloc = &x->a;
  to.threads = 1;
  CHECK_OK(dk_table_open(&x->t, root, &to, err), err);
  CHECK_OK(dk_snapshot_open(&x->s, x->t, NULL, err), err);
  CHECK_OK(dk_expr_parse(&x->filter, "col1 > 3 AND part >= 1", err), err);
  x->so.version = DK_SCAN_OPTIONS_VERSION;
  x->so.limit = -1;
  x->so.columns = COLS;
  x->so.n_columns = 3;
  x->so.filter = x->filter;
  x->so.metadata_fields = DK_META_FILE_PATH | DK_META_ROW_INDEX;
  x->so.batch_size = 3;
}

static void fixture_close(fixture *x) {
  dk_expr_free(x->filter);
  dk_snapshot_free(x->s);
  dk_table_free(x->t);
  CHECK_EQ_INT(x->f.live, 0);
}

/* One scan of snapshot snap: plan, read; the row count or -1 (clean failure). */
static int64_t scan_rows(fixture *x, dk_snapshot *snap) {
  dk_error err;
  dk_error_init(&err);
  dk_scan *scan = NULL;
  dk_status st = dk_scan_new(&scan, snap, &x->so, &err);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM && !scan ? -1 : UNCLEAN;
  struct ArrowArrayStream s;
  st = dk_scan_read(&s, scan, &err);
  dk_scan_free(scan);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM ? -1 : UNCLEAN;
  return drain_or_fail(&s);
}

/* The first scan of a snapshot (which builds the snapshot's columnar statistics, kept with it:
** each run opens its own snapshot). */
static int64_t run_scan(fixture *x) {
  dk_error err;
  dk_error_init(&err);
  dk_snapshot *snap = NULL;
  dk_status st = dk_snapshot_open(&snap, x->t, NULL, &err);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM && !snap ? -1 : UNCLEAN;
  int64_t n = scan_rows(x, snap);
  dk_snapshot_free(snap);
  return n;
}

/* A later scan of the fixture's snapshot (its statistics already built). */
static int64_t run_scan_again(fixture *x) { return scan_rows(x, x->s); }

/* The single-file reader over every file: matching rows by index, or -1. */
static int64_t run_file_reader(fixture *x) {
  dk_error err;
  dk_error_init(&err);
  dk_scan__file_reader_options o;
  memset(&o, 0, sizeof o);
  o.columns = COLS;
  o.n_columns = 0;
  o.predicate = x->filter;
  dk_scan__file_reader *r;
  dk_status st = dk_scan__file_reader_new(&r, x->s, &o, &err);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM ? -1 : UNCLEAN;
  int64_t total = 0;
  for (int64_t i = 0; st == DK_OK && i < dk_snapshot_num_files(x->s); i++) {
    dk_file_entry e;
    st = dk_snapshot_file(&e, x->s, i, &err);
    dk_scan__file *f;
    if (!st) st = dk_scan__file_open(&f, r, &e, &err);
    if (st) break;
    const int64_t *rows;
    int64_t n;
    st = dk_scan__file_rows(&rows, &n, f, &err);
    if (!st) total += n;
    dk_scan__file_close(f);
  }
  dk_scan__file_reader_free(r);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM ? -1 : UNCLEAN;
  return total;
}

/* Fails allocation N = 0, 1, ... until a run succeeds; every run frees what it took. */
static void fail_nth(fixture *x, int64_t (*run)(fixture *), const char *what) {
  long base = x->f.live;
  x->f.left = 1L << 40;
  int64_t want = run(x);
  CHECK(want > 0);
  CHECK_EQ_INT(x->f.live, base);
  long n;
  for (n = 0; n < 200000; n++) {
    x->f.left = n;
    int64_t got = run(x);
    x->f.left = 1L << 40;
    if (got == UNCLEAN) fprintf(stderr, "  %s: unclean failure at allocation %ld\n", what, n);
    CHECK(got != UNCLEAN);
    CHECK_EQ_INT(x->f.live, base);
    if (got >= 0) {
      CHECK_EQ_INT(got, want);
      break;
    }
  }
  CHECK(n > 0 && n < 200000);
  fprintf(stderr, "  %s: %ld failing allocation points, all clean\n", what, n);
}

DK_TEST(scan__allocation_failures) {
  dk_error err;
  dk_error_init(&err);
  fixture x;
  fixture_open(&x, &err);
  fail_nth(&x, run_scan, "dk_snapshot_open + dk_scan_new + read");
  CHECK(run_scan_again(&x) > 0); /* builds x.s's statistics, which stay with x.s */
  fail_nth(&x, run_scan_again, "dk_scan_new + read (statistics built)");
  fail_nth(&x, run_file_reader, "file reader rows");
  fixture_close(&x);
}

/* Splits of the scan, read with a failing allocator (dk_split_read's own). */
static uint8_t *g_split;
static size_t g_split_len;

static int64_t run_split(fixture *x) {
  dk_error err;
  dk_error_init(&err);
  struct ArrowArrayStream s;
  dk_status st = dk_split_read(&s, g_split, g_split_len, &x->a, &err);
  if (st) return st == DK_NOMEM && err.code == DK_NOMEM ? -1 : UNCLEAN;
  return drain_or_fail(&s);
}

DK_TEST(scan__split_read_allocation_failures) {
  dk_error err;
  dk_error_init(&err);
  fixture x;
  fixture_open(&x, &err);
  dk_scan *scan;
  CHECK_OK(dk_scan_new(&scan, x.s, &x.so, &err), &err);
  CHECK_OK(dk_scan_plan_splits(scan, &err), &err);
  CHECK(dk_scan_num_splits(scan) >= 1);
  CHECK_OK(dk_scan_split_serialize(&g_split, &g_split_len, scan, 0, &err), &err);
  dk_scan_free(scan);
  fail_nth(&x, run_split, "dk_split_read");
  dk_free(g_split);
  fixture_close(&x);
}
