/*
** txn_append.c — benchmark driver for P7 (bench/txn_p7.py): one writer process doing N small
** blind appends to a Delta table through dk_txn, racing the others. Each append writes a copy
** of a small Parquet file (TEMPLATE) under a new name through the table's storage and commits
** it; the snapshot is refreshed incrementally (dk_snapshot_update) before each transaction.
**
**   bench_txn_append ROOT WRITER N TEMPLATE  ->  {"commits": N, "attempts": A, "seconds": S}
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/snapshot.h"
#include "dk/txn.h"
#include "driver.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s ROOT WRITER N TEMPLATE.parquet\n", argv[0]);
    return 2;
  }
  const char *root = argv[1], *writer = argv[2], *tmpl = argv[4];
  long n = atol(argv[3]);
  FILE *f = fopen(tmpl, "rb");
  if (!f) {
    perror(tmpl);
    return 1;
  }
  static char data[1 << 20];
  size_t len = fread(data, 1, sizeof data, f);
  fclose(f);
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  if (dk_table_open(&t, root, NULL, &err)) return bench_fail(argv[0], "open", &err);
  dk_storage *sto;
  if (dk_storage_local_new(&sto, NULL, &err)) return bench_fail(argv[0], "storage", &err);
  dk_snapshot *s = NULL;
  if (dk_snapshot_open(&s, t, NULL, &err)) return bench_fail(argv[0], "snapshot", &err);
  long attempts = 0;
  double t0 = bench_wall();
  for (long i = 0; i < n; i++) {
    char rel[256], full[4096];
    snprintf(rel, sizeof rel, "part-%05ld-w%s.c000.snappy.parquet", i, writer);
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (sto->write(sto, full, data, len, &err)) return bench_fail(argv[0], "write", &err);
    dk_snapshot *s2;
    if (dk_snapshot_update(&s2, s, &err)) return bench_fail(argv[0], "update", &err);
    dk_snapshot_free(s);
    s = s2;
    dk_txn_options o = {.version = DK_TXN_OPTIONS_VERSION,
                        .operation_parameters = "{\"mode\":\"Append\",\"partitionBy\":\"[]\"}"};
    dk_txn *x;
    if (dk_txn_begin(&x, s, &o, &err)) return bench_fail(argv[0], "begin", &err);
    dk_add_file a = {.version = DK_ADD_FILE_VERSION, .path = rel, .size = (int64_t)len,
                     .modification_time = 1, .data_change = 1, .stats = "{\"numRecords\":1}"};
    if (dk_txn_add_file(x, &a, &err)) return bench_fail(argv[0], "add", &err);
    dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
    if (dk_txn_commit(x, &r, &err)) return bench_fail(argv[0], "commit", &err);
    attempts += r.attempts;
  }
  double secs = bench_wall() - t0;
  printf("{\"commits\": %ld, \"attempts\": %ld, \"seconds\": %.6f}\n", n, attempts, secs);
  dk_snapshot_free(s);
  sto->free(sto);
  dk_table_free(t);
  return 0;
}
