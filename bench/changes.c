/*
** changes.c — benchmark driver for P11 "cdf_p11" (issue #19), run by bench/run.py: the change
** data feed of versions START..END of a table, read to the end (every batch dropped as it
** comes): dk_changes_new (range checks, commit actions, change-file planning) + dk_changes_read.
** THREADS (default: automatic) is the table's executor size: with more than one, files after
** the current one are read ahead on it. Prints {"seconds", "cpu_seconds", "rows", "files"}.
**
** usage: bench_changes TABLE START END [THREADS]
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/changes.h"
#include "driver.h"

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s TABLE START END [THREADS]\n", argv[0]);
    return 2;
  }
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.threads = argc == 5 ? atoi(argv[4]) : 0;
  if (dk_table_open(&t, argv[1], &to, &err) != DK_OK)
    return bench_fail("bench_changes", "table", &err);
  dk_changes_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHANGES_OPTIONS_VERSION;
  o.start_kind = o.end_kind = DK_BOUND_VERSION;
  o.start = atoll(argv[2]);
  o.end = atoll(argv[3]);
  double c0 = bench_cpu(), t0 = bench_wall();
  dk_changes *c = NULL;
  if (dk_changes_new(&c, t, &o, &err) != DK_OK) return bench_fail("bench_changes", "plan", &err);
  struct ArrowArrayStream s;
  if (dk_changes_read(&s, c, &err) != DK_OK) return bench_fail("bench_changes", "read", &err);
  int64_t rows, batches;
  int rc = bench_drain(&s, "bench_changes", &rows, &batches);
  s.release(&s);
  double t1 = bench_wall(), c1 = bench_cpu();
  if (rc) return rc;
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"rows\": %" PRId64 ", \"files\": %" PRId64
         "}\n",
         t1 - t0, c1 - c0, rows, dk_changes_num_files(c));
  dk_changes_free(c);
  dk_table_free(t);
  return 0;
}
