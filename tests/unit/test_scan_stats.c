/*
** test_scan_stats.c — the snapshot's columnar file statistics (src/scan/stats.c) shared by
** scans on several threads: four threads plan scans with filters on different columns on one
** fresh snapshot at once (so the first builds the table and later ones extend it while others
** read it), and every plan must select the files a scan of a snapshot of its own selects.
** make test-tsan runs it under ThreadSanitizer.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dk/scan.h"
#include "test.h"

static const char *const FILTERS[] = {
    "col1 >= 10 AND col1 < 15", "col2 = 'foo3'", "col2 > 'foo5' OR col1 < 3",
    "col1 = 4", "col1 IS NULL", "NOT (col2 < 'foo2') AND part = 1", "col2 LIKE 'foo1%'",
    "col1 > 100"};
#define N_FILTERS (sizeof FILTERS / sizeof FILTERS[0])
#define N_THREADS 4
#define ROUNDS 12

typedef struct plan {
  int64_t selected, pruned_stats;
  uint64_t hash; /* of the selected files' indexes in the snapshot */
} plan;

static dk_status plan_of(plan *out, dk_snapshot *s, const char *filter, dk_error *err) {
  memset(out, 0, sizeof *out);
  dk_expr *f = NULL;
  dk_status st = dk_expr_parse(&f, filter, err);
  if (st) return st;
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.filter = f;
  so.limit = -1;
  dk_scan *scan = NULL;
  st = dk_scan_new(&scan, s, &so, err);
  dk_expr_free(f);
  if (st) return st;
  dk_scan_stats ss;
  dk_scan_stats_get(&ss, scan);
  out->selected = ss.files_selected;
  out->pruned_stats = ss.files_pruned_stats;
  out->hash = 1469598103934665603ull;
  for (int64_t i = 0; i < dk_scan_num_files(scan) && !st; i++) {
    dk_scan_file sf;
    st = dk_scan_file_get(&sf, scan, i, err);
    for (const char *p = sf.entry.path; !st && *p; p++)
      out->hash = (out->hash ^ (unsigned char)*p) * 1099511628211ull;
  }
  dk_scan_free(scan);
  return st;
}

typedef struct worker {
  dk_snapshot *snap;
  int id;
  const plan *want;
  int mismatches, failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int r = 0; r < ROUNDS; r++) {
    size_t k = (size_t)(w->id * 3 + r) % N_FILTERS;
    plan got;
    dk_error err;
    dk_error_init(&err);
    if (plan_of(&got, w->snap, FILTERS[k], &err) != DK_OK) {
      w->failures++;
      continue;
    }
    if (got.selected != w->want[k].selected || got.pruned_stats != w->want[k].pruned_stats ||
        got.hash != w->want[k].hash)
      w->mismatches++;
  }
  return NULL;
}

DK_TEST(scan__stats_shared_by_threads) {
  dk_error err;
  dk_error_init(&err);
  char root[1024];
  snprintf(root, sizeof root, "%s/delta-golden/dv-partitioned-with-checkpoint",
           dk_test_data_dir());
  dk_table *t = NULL;
  CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
  plan want[N_FILTERS];
  int64_t pruned = 0;
  for (size_t k = 0; k < N_FILTERS; k++) { /* each on a snapshot of its own */
    dk_snapshot *s = NULL;
    CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
    CHECK_OK(plan_of(&want[k], s, FILTERS[k], &err), &err);
    pruned += want[k].pruned_stats;
    dk_snapshot_free(s);
  }
  CHECK(pruned > 0); /* the filters do skip files by their statistics */
  dk_snapshot *shared = NULL;
  CHECK_OK(dk_snapshot_open(&shared, t, NULL, &err), &err);
  worker w[N_THREADS];
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    w[i] = (worker){shared, i, want, 0, 0};
    CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
  }
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(w[i].failures, 0);
    CHECK_EQ_INT(w[i].mismatches, 0);
  }
  /* and again on the shared snapshot, every statistic built by now */
  for (size_t k = 0; k < N_FILTERS; k++) {
    plan got;
    CHECK_OK(plan_of(&got, shared, FILTERS[k], &err), &err);
    CHECK_EQ_INT(got.selected, want[k].selected);
    CHECK(got.hash == want[k].hash);
  }
  dk_snapshot_free(shared);
  dk_table_free(t);
}
