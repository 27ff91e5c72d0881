/*
** cmd_scan.c — `dk scan TABLE [--version N | --timestamp TS] [--columns a,b] [--where EXPR]
** [--limit N] [--with-metadata] [--format jsonl|csv|table] [--threads N] [--batch-size N]`:
** reads a table (or a time-travelled version of it) through dk_scan and prints its rows in
** the row encoding of tools/cli/print.h.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"
#include "codec/json/json.h"
#include "cli.h"
#include "dk/expr.h"
#include "dk/parquet.h"
#include "dk/scan.h"
#include "dk/snapshot.h"

static int scan_fail(const dk_error *err) {
  fprintf(stderr, "dk scan: %s: %s\n", dk_status_str(err->code), err->message);
  return 1;
}

/* The pushdown counters as one JSON line on stderr. */
static void print_stats(const dk_scan *scan) {
  dk_scan_stats s;
  dk_scan_stats_get(&s, scan);
  fprintf(stderr,
          "{\"files_total\":%" PRId64 ",\"files_pruned_partition\":%" PRId64
          ",\"files_pruned_stats\":%" PRId64 ",\"files_pruned_limit\":%" PRId64
          ",\"files_selected\":%" PRId64 ",\"bytes_selected\":%" PRId64
          ",\"rows_estimated\":%" PRId64 ",\"row_groups_total\":%" PRId64
          ",\"row_groups_skipped\":%" PRId64 ",\"pages_skipped\":%" PRId64
          ",\"rows_decoded\":%" PRId64 ",\"rows_deleted\":%" PRId64
          ",\"rows_filtered\":%" PRId64 ",\"rows_returned\":%" PRId64 "}\n",
          s.files_total, s.files_pruned_partition, s.files_pruned_stats, s.files_pruned_limit,
          s.files_selected, s.bytes_selected, s.rows_estimated, s.row_groups_total,
          s.row_groups_skipped, s.pages_skipped, s.rows_decoded, s.rows_deleted, s.rows_filtered,
          s.rows_returned);
}

/* Test path: plan splits, serialize each, read each back through dk_split_read; with dump_dir
** each split's bytes are also written to DIR/split-N.bin (fuzz seeds, docs/split-format.md). */
static int print_via_splits(dk_scan *scan, int format, const char *dump_dir) {
  dk_error err;
  dk_error_init(&err);
  if (dk_scan_plan_splits(scan, &err)) return scan_fail(&err);
  int first = 1;
  for (int64_t i = 0; i < dk_scan_num_splits(scan); i++) {
    uint8_t *bytes;
    size_t len;
    if (dk_scan_split_serialize(&bytes, &len, scan, i, &err)) return scan_fail(&err);
    if (dump_dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/split-%" PRId64 ".bin", dump_dir, i);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(bytes, 1, len, f) != len) {
        fprintf(stderr, "dk scan: cannot write %s\n", path);
        if (f) fclose(f);
        dk_free(bytes);
        return 1;
      }
      fclose(f);
    }
    struct ArrowArrayStream st;
    dk_status s = dk_split_read(&st, bytes, len, NULL, &err);
    dk_free(bytes);
    if (s) return scan_fail(&err);
    int rc = dk_cli_print_stream(&st, format | (first ? 0 : CLI_PRINT_NO_HEADER), -1, "scan", NULL);
    first = 0;
    st.release(&st);
    if (rc) return rc;
  }
  fprintf(stderr, "splits: %" PRId64 "\n", dk_scan_num_splits(scan));
  return 0;
}

int dk_cli_scan(int argc, char **argv) {
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  const char *columns = NULL, *where = NULL;
  int format = CLI_PRINT_JSONL, nrest = 0, want_stats = 0, via_splits = 0;
  const char *dump_dir = NULL;
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.limit = -1;
  if (!rest) return 1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--columns") && i + 1 < argc) {
      columns = argv[++i];
    } else if (!strcmp(a, "--where") && i + 1 < argc) {
      where = argv[++i];
    } else if (!strcmp(a, "--limit") && i + 1 < argc) {
      char *end;
      so.limit = strtoll(argv[++i], &end, 10);
      if (*end || so.limit < 0) {
        fprintf(stderr, "dk scan: bad --limit '%s'\n", argv[i]);
        free(rest);
        return 2;
      }
    } else if (!strcmp(a, "--via-splits")) {
      via_splits = 1;
    } else if (!strcmp(a, "--no-page-checksums")) {
      so.skip_page_checksums = 1;
    } else if (!strcmp(a, "--dump-splits") && i + 1 < argc) {
      via_splits = 1;
      dump_dir = argv[++i];
    } else if (!strcmp(a, "--split-size") && i + 1 < argc) {
      so.split_target_bytes = atoll(argv[++i]);
    } else if (!strcmp(a, "--stats")) {
      want_stats = 1;
    } else if (!strcmp(a, "--with-metadata")) {
      so.metadata_fields = DK_META_FILE_PATH | DK_META_FILE_NAME | DK_META_FILE_SIZE |
                           DK_META_FILE_BLOCK_START | DK_META_FILE_BLOCK_LENGTH |
                           DK_META_FILE_MODIFICATION_TIME | DK_META_ROW_INDEX;
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      so.threads = atoi(argv[++i]);
    } else if (!strcmp(a, "--batch-size") && i + 1 < argc) {
      so.batch_size = atoll(argv[++i]);
    } else if (!strcmp(a, "--format") && i + 1 < argc) {
      const char *f = argv[++i];
      if (!strcmp(f, "jsonl")) format = CLI_PRINT_JSONL;
      else if (!strcmp(f, "csv")) format = CLI_PRINT_CSV;
      else if (!strcmp(f, "table")) format = CLI_PRINT_TABLE;
      else {
        fprintf(stderr, "dk scan: unknown format '%s'\n", f);
        free(rest);
        return 2;
      }
    } else {
      rest[nrest++] = argv[i];
    }
  }
  const char *uri;
  dk_snapshot_options o;
  int json;
  if (dk_cli_snapshot_args(nrest, rest, &uri, &o, &json, NULL) || json) {
    free(rest);
    return dk_cli_usage("scan");
  }
  free(rest);
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &o, &t, &s)) return 1;
  if (so.metadata_fields && dk_snapshot_has_feature(s, "rowTracking"))
    so.metadata_fields |= DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION;
  dk_error err;
  dk_error_init(&err);
  int rc = 0;
  char *colbuf = NULL;
  const char **cols = NULL;
  dk_expr *filter = NULL;
  dk_scan *scan = NULL;
  if (columns) {
    colbuf = strdup(columns);
    cols = calloc(strlen(columns) + 1, sizeof *cols);
    if (!colbuf || !cols) {
      rc = 1;
      goto done;
    }
    size_t n = 0;
    for (char *p = strtok(colbuf, ","); p; p = strtok(NULL, ",")) cols[n++] = p;
    so.columns = cols;
    so.n_columns = n;
  }
  if (where && dk_expr_parse(&filter, where, &err)) {
    scan_fail(&err);
    rc = 2; /* a malformed --where is a usage error */
    goto done;
  }
  so.filter = filter;
  if (dk_scan_new(&scan, s, &so, &err)) {
    rc = scan_fail(&err);
    goto done;
  }
  if (via_splits) {
    rc = print_via_splits(scan, format, dump_dir);
    goto done;
  }
  struct ArrowArrayStream st;
  if (dk_scan_read(&st, scan, &err)) {
    rc = scan_fail(&err);
    goto done;
  }
  rc = dk_cli_print_stream(&st, format, -1, "scan", NULL);
  st.release(&st);
  if (want_stats) print_stats(scan);
done:
  dk_scan_free(scan);
  dk_expr_free(filter);
  free(cols);
  free(colbuf);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}

/* `dk files TABLE [--version N | --timestamp TS] --where EXPR [--json]`: the files a scan
** with that filter reads, and those it skips with the reason. */
int dk_cli_files_where(int argc, char **argv) {
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  const char *where = NULL;
  int nrest = 0;
  if (!rest) return 1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--where") && i + 1 < argc) where = argv[++i];
    else rest[nrest++] = argv[i];
  }
  const char *uri;
  dk_snapshot_options o;
  int json;
  int bad = dk_cli_snapshot_args(nrest, rest, &uri, &o, &json, NULL);
  free(rest);
  if (bad || !where) {
    return dk_cli_usage("files");
  }
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &o, &t, &s)) return 1;
  dk_error err;
  dk_error_init(&err);
  dk_expr *filter = NULL;
  dk_scan *scan = NULL;
  int rc = 0;
  dk_scan_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SCAN_OPTIONS_VERSION;
  so.limit = -1;
  so.keep_residual = 1;
  if (dk_expr_parse(&filter, where, &err)) {
    scan_fail(&err);
    rc = 2; /* a malformed --where is a usage error */
    goto done;
  }
  so.filter = filter;
  if (dk_scan_new(&scan, s, &so, &err)) {
    rc = scan_fail(&err);
    goto done;
  }
  static const char *const why[] = {"", "partition", "stats", "limit"};
  dk_buf b;
  dk__buf_init(&b, NULL);
  if (json) dk__buf_puts(&b, "{\"files\":[", NULL);
  for (int64_t i = 0; i < dk_scan_num_files(scan); i++) {
    dk_scan_file f;
    if (dk_scan_file_get(&f, scan, i, &err)) break;
    if (json) {
      if (i) dk__buf_putc(&b, ',', NULL);
      dk__buf_puts(&b, "{\"path\":", NULL);
      dk__json_write_str(&b, f.entry.path, strlen(f.entry.path), NULL);
      dk__buf_printf(&b, NULL, ",\"size\":%" PRId64 ",\"num_records\":%" PRId64 "}", f.entry.size,
                    f.num_records);
    } else {
      dk__buf_printf(&b, NULL, "read\t%s\t%" PRId64 "\n", f.entry.path, f.entry.size);
    }
  }
  if (json) dk__buf_puts(&b, "],\"skipped\":[", NULL);
  for (int64_t i = 0; i < dk_scan_num_pruned_files(scan); i++) {
    dk_file_entry f;
    dk_prune_reason r;
    if (dk_scan_pruned_file_get(&f, &r, scan, i, &err)) break;
    if (json) {
      if (i) dk__buf_putc(&b, ',', NULL);
      dk__buf_puts(&b, "{\"path\":", NULL);
      dk__json_write_str(&b, f.path, strlen(f.path), NULL);
      dk__buf_printf(&b, NULL, ",\"size\":%" PRId64 ",\"reason\":\"%s\"}", f.size, why[r]);
    } else {
      dk__buf_printf(&b, NULL, "skip:%s\t%s\t%" PRId64 "\n", why[r], f.path, f.size);
    }
  }
  if (json) {
    const dk_expr *res = dk_scan_residual(scan);
    char *txt = NULL;
    dk__buf_puts(&b, "],\"residual\":", NULL);
    if (res && dk_expr_to_string(&txt, res, NULL) == DK_OK) {
      dk__json_write_str(&b, txt, strlen(txt), NULL);
      dk_expr_string_free(txt);
    } else {
      dk__buf_puts(&b, "null", NULL);
    }
    dk__buf_puts(&b, "}\n", NULL);
  }
  fwrite(b.data, 1, b.len, stdout);
  dk__buf_dispose(&b);
  if (err.code) rc = scan_fail(&err);
done:
  dk_scan_free(scan);
  dk_expr_free(filter);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}
