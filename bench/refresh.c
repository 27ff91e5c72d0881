/*
** refresh.c — benchmark driver for P11b "refresh" (issue #19), run by bench/run.py.
**
** A query after one new commit on a big table. The driver loads the latest snapshot (the
** cached state a long-lived table handle holds), then publishes COMMIT as the next version
** (a copy of the file into _delta_log, as a writer's commit appears), and times getting the
** up-to-date snapshot ("seconds"; a pass over its files' paths and sizes follows, reported as
** "pass_seconds", the same work for every variant):
**   default   dk_snapshot_update (lists only the commits after the cached version)
**   --full    dk_snapshot_open (what a reader without a cache pays: checkpoint + commits)
** The published commit is removed before exit (the table is the benchmark's own copy).
** Prints {"seconds", "cpu_seconds", "pass_seconds", "rows" (active files), "version"}.
**
** usage: bench_refresh TABLE COMMIT [--full]
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dk/snapshot.h"
#include "driver.h"

static int fail(const char *what, const dk_error *err) {
  return bench_fail("bench_refresh", what, err);
}

static int copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  char buf[1 << 16];
  size_t n;
  int rc = in && out ? 0 : -1;
  while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) rc = -1;
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = -1;
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--full"))) {
    fprintf(stderr, "usage: %s TABLE COMMIT [--full]\n", argv[0]);
    return 2;
  }
  const char *root = argv[1], *commit = argv[2];
  int full = argc == 4;
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_snapshot *old = NULL, *s = NULL;
  if (dk_table_open(&t, root, NULL, &err) != DK_OK) return fail("table", &err);
  if (dk_snapshot_open(&old, t, NULL, &err) != DK_OK) return fail("snapshot", &err);
  char next[4200];
  snprintf(next, sizeof next, "%s/_delta_log/%020" PRId64 ".json", root,
           dk_snapshot_version(old) + 1);
  if (copy_file(commit, next) != 0) {
    fprintf(stderr, "bench_refresh: cannot publish %s as %s\n", commit, next);
    return 1;
  }
  double c0 = bench_cpu(), t0 = bench_wall();
  dk_status st = full ? dk_snapshot_open(&s, t, NULL, &err) : dk_snapshot_update(&s, old, &err);
  double c_loaded = bench_cpu(), t_loaded = bench_wall();
  int64_t n = 0, bytes = 0, paths = 0;
  if (st == DK_OK) {
    n = dk_snapshot_num_files(s);
    for (int64_t i = 0; i < n && st == DK_OK; i++) {
      dk_file_entry f;
      st = dk_snapshot_file(&f, s, i, &err);
      if (st == DK_OK) {
        bytes += f.size;
        paths += f.path[0] != 0;
      }
    }
  }
  double t1 = bench_wall(), c1 = bench_cpu();
  unlink(next);
  if (st != DK_OK) return fail(full ? "full load" : "refresh", &err);
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"pass_seconds\": %.6f, "
         "\"pass_cpu_seconds\": %.6f, \"rows\": %" PRId64 ", \"version\": %" PRId64
         ", \"bytes\": %" PRId64 ", \"with_path\": %" PRId64 "}\n",
         t_loaded - t0, c_loaded - c0, t1 - t_loaded, c1 - c_loaded, n, dk_snapshot_version(s),
         bytes, paths);
  dk_snapshot_free(s);
  dk_snapshot_free(old);
  dk_table_free(t);
  return 0;
}
