/*
** scan_p2p3.c — benchmark driver for P2/P3 "scan_p2p3" (issue #4), run by bench/run.py.
**
** Scans a Delta table with dk's C scan API (include/dk/scan.h): dk_table_open +
** dk_snapshot_open + dk_scan_new (all columns, optional filter text parsed by dk_expr_parse)
** + dk_scan_read with N reader threads, releasing every batch. Prints one JSON line:
**     {"seconds": <open + plan + read>, "cpu_seconds": ..., "plan_seconds": <to scan planned>,
**      "rows": <rows returned>, "batches": n, "files_total", "files_selected",
**      "bytes_selected", "files_pruned_stats", "row_groups_total", "row_groups_skipped",
**      "rows_decoded"}
** `--plan-only` stops after planning and adds "paths": [...] (the selected files' paths as
** the log has them), so the benchmark can compare the selection with what the statistics
** allow.
** `--repeat N` plans N scans with the filter on one snapshot (nothing read) and prints
**     {"seconds": <the N plans>, "cpu_seconds", "first_seconds": <the first plan>,
**      "open_seconds": <table + snapshot>, "files_selected", "files_pruned_stats",
**      "rss_snapshot_kib": <RSS growth of the open>, "rss_scans_kib": <RSS growth of the plans>}
** (the repeated-scan variant: what a service planning many queries on one snapshot pays).
**
** usage: bench_scan_p2p3 TABLE [--threads N] [--filter TEXT] [--batch-size N] [--plan-only]
**                              [--repeat N]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "driver.h"

typedef struct bench_args {
  const char *uri;
  const char *filter;
  int threads;
  int64_t batch_size;
  int plan_only;
  int repeat;
} bench_args;

static int fail(const char *what, const dk_error *err) {
  return bench_fail("bench_scan_p2p3", what, err);
}

static int parse_args(bench_args *a, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->threads = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      a->threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      a->filter = argv[++i];
    } else if (!strcmp(argv[i], "--batch-size") && i + 1 < argc) {
      a->batch_size = strtoll(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--plan-only")) {
      a->plan_only = 1;
    } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      a->repeat = atoi(argv[++i]);
    } else if (argv[i][0] != '-' && !a->uri) {
      a->uri = argv[i];
    } else {
      return -1;
    }
  }
  return a->uri && a->threads >= 1 ? 0 : -1;
}

/* Prints s as a JSON string (paths of a Delta log: escapes quotes, backslashes, controls). */
static void put_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      putchar('\\');
      putchar(c);
    } else if (c < 0x20) {
      printf("\\u%04x", c);
    } else {
      putchar(c);
    }
  }
  putchar('"');
}

static void print_stats(const dk_scan_stats *st) {
  printf("\"files_total\": %lld, \"files_selected\": %lld, \"bytes_selected\": %lld, "
         "\"files_pruned_stats\": %lld, \"row_groups_total\": %lld, "
         "\"row_groups_skipped\": %lld, \"rows_decoded\": %lld",
         (long long)st->files_total, (long long)st->files_selected,
         (long long)st->bytes_selected, (long long)st->files_pruned_stats,
         (long long)st->row_groups_total, (long long)st->row_groups_skipped,
         (long long)st->rows_decoded);
}

static int print_plan(const dk_scan *scan, double plan_seconds) {
  dk_error err;
  dk_error_init(&err);
  dk_scan_stats st;
  dk_scan_stats_get(&st, scan);
  printf("{\"plan_seconds\": %.6f, ", plan_seconds);
  print_stats(&st);
  printf(", \"paths\": [");
  int64_t n = dk_scan_num_files(scan);
  for (int64_t i = 0; i < n; i++) {
    dk_scan_file f;
    if (dk_scan_file_get(&f, scan, i, &err) != DK_OK) {
      printf("]}\n");
      return fail("file", &err);
    }
    if (i) printf(", ");
    put_json_string(f.entry.path);
  }
  printf("]}\n");
  return 0;
}

/* Resident set size in KiB (/proc/self/statm), 0 when unknown. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Opens the table, its latest snapshot and the filter; what it opened stays in the outputs
** for the caller to free, also on failure (the exit code). */
static int open_all(const bench_args *a, dk_table **t, dk_snapshot **s, dk_expr **filter) {
  dk_error err;
  dk_error_init(&err);
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  if (dk_table_open(t, a->uri, &to, &err) != DK_OK) return fail("table", &err);
  if (dk_snapshot_open(s, *t, NULL, &err) != DK_OK) return fail("snapshot", &err);
  if (a->filter && dk_expr_parse(filter, a->filter, &err) != DK_OK) return fail("filter", &err);
  return 0;
}

/* --repeat: N plans with the filter on one snapshot. */
static int run_repeat(const bench_args *a) {
  dk_error err;
  dk_error_init(&err);
  long r0 = rss_kib();
  double t0 = bench_wall();
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  dk_expr *filter = NULL;
  int rc = open_all(a, &t, &s, &filter);
  if (rc) goto done;
  long r1 = rss_kib();
  double t1 = bench_wall(), c1 = bench_cpu(), first = 0;
  dk_scan_stats st;
  memset(&st, 0, sizeof st);
  for (int i = 0; i < a->repeat; i++) {
    dk_scan_options so;
    memset(&so, 0, sizeof so);
    so.version = DK_SCAN_OPTIONS_VERSION;
    so.filter = filter;
    so.limit = -1;
    so.threads = a->threads;
    dk_scan *scan = NULL;
    if (dk_scan_new(&scan, s, &so, &err) != DK_OK) {
      rc = fail("scan", &err);
      goto done;
    }
    dk_scan_stats_get(&st, scan);
    dk_scan_free(scan);
    if (i == 0) first = bench_wall() - t1;
  }
  double t2 = bench_wall(), c2 = bench_cpu();
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"first_seconds\": %.6f, "
         "\"open_seconds\": %.6f, \"repeat\": %d, \"files_selected\": %lld, "
         "\"files_pruned_stats\": %lld, \"rss_snapshot_kib\": %ld, \"rss_scans_kib\": %ld}\n",
         t2 - t1, c2 - c1, first, t1 - t0, a->repeat, (long long)st.files_selected,
         (long long)st.files_pruned_stats, r1 - r0, rss_kib() - r1);
done:
  dk_expr_free(filter);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}

static int run(const bench_args *a) {
  if (a->repeat > 0) return run_repeat(a);
  dk_error err;
  dk_error_init(&err);
  double c0 = bench_cpu(), t0 = bench_wall();
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  dk_expr *filter = NULL;
  dk_scan *scan = NULL;
  int rc = open_all(a, &t, &s, &filter);
  if (rc) goto done;
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.filter = filter;
  so.limit = -1;
  so.batch_size = a->batch_size;
  so.threads = a->threads;
  if (dk_scan_new(&scan, s, &so, &err) != DK_OK) {
    rc = fail("scan", &err);
    goto done;
  }
  double t_plan = bench_wall();
  if (a->plan_only) {
    rc = print_plan(scan, t_plan - t0);
    goto done;
  }
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof stream);
  if (dk_scan_read(&stream, scan, &err) != DK_OK) {
    rc = fail("read", &err);
    goto done;
  }
  int64_t rows, batches;
  rc = bench_drain(&stream, "bench_scan_p2p3", &rows, &batches);
  stream.release(&stream);
  dk_scan_stats st;
  dk_scan_stats_get(&st, scan);
  dk_scan_free(scan);
  scan = NULL;
  dk_expr_free(filter);
  filter = NULL;
  dk_snapshot_free(s);
  s = NULL;
  dk_table_free(t);
  t = NULL;
  double t1 = bench_wall(), c1 = bench_cpu();
  if (rc == 0) {
    printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"plan_seconds\": %.6f, \"rows\": %lld, "
           "\"batches\": %lld, ",
           t1 - t0, c1 - c0, t_plan - t0, (long long)rows, (long long)batches);
    print_stats(&st);
    printf("}\n");
  }
done:
  dk_scan_free(scan);
  dk_expr_free(filter);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}

int main(int argc, char **argv) {
  bench_args a;
  if (parse_args(&a, argc, argv) != 0) {
    fprintf(stderr,
            "usage: %s TABLE [--threads N] [--filter TEXT] [--batch-size N] [--plan-only] "
            "[--repeat N]\n",
            argv[0]);
    return 2;
  }
  return run(&a);
}
