/*
** cmd_rows.c — hidden `dk _rows TABLE [--where EXPR] [--no-dv] [--batches] [--version N]`:
** for every active file, the physical row indexes that the library's single-file reader
** (src/scan/file_reader.h, the piece change data feed and DML build on) selects, one JSON
** line per file: {"path": ..., "rows": [...]}. Rows deleted by the file's deletion vector
** are left out unless --no-dv; --where keeps the rows the predicate makes TRUE. Default: the
** row-index mode (dk_scan__file_rows); --batches reads batches of `_metadata.row_index`
** instead. Used by tests/python/test_scan_file_reader.py.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "codec/json/json.h"
#include "dk/expr.h"
#include "dk/snapshot.h"
#include "scan/file_reader.h"

/* Appends the row_index column of a `_metadata`-only batch. */
static dk_status batch_rows(dk_buf *b, const struct ArrowArray *a, int *first, dk_error *err) {
  const struct ArrowArray *ri = a->children[0]->children[0];
  const int64_t *v = (const int64_t *)ri->buffers[1];
  for (int64_t i = 0; i < ri->length; i++) {
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%s%" PRId64, *first ? "" : ",", v[ri->offset + i]));
    *first = 0;
  }
  return DK_OK;
}

static dk_status file_rows(dk_buf *b, const dk_scan__file_reader *r, const dk_file_entry *e,
                           int batches, dk_error *err) {
  dk_scan__file *f;
  DK_RETURN_NOT_OK(dk_scan__file_open(&f, r, e, err));
  dk_status st = dk__buf_puts(b, "{\"path\":", err);
  if (!st) st = dk__json_write_str(b, e->path, strlen(e->path), err);
  if (!st) st = dk__buf_puts(b, ",\"rows\":[", err);
  int first = 1;
  if (!st && batches) {
    for (;;) {
      struct ArrowArray a;
      st = dk_scan__file_next(&a, f, err);
      if (st || !a.release) break;
      st = batch_rows(b, &a, &first, err);
      a.release(&a);
      if (st) break;
    }
  } else if (!st) {
    const int64_t *rows;
    int64_t n;
    st = dk_scan__file_rows(&rows, &n, f, err);
    for (int64_t i = 0; !st && i < n; i++)
      st = dk__buf_printf(b, err, "%s%" PRId64, i ? "," : "", rows[i]);
  }
  if (!st) st = dk__buf_puts(b, "]}\n", err);
  dk_scan__file_close(f);
  return st;
}

int dk_cli_rows(int argc, char **argv) {
  const char *uri = NULL, *where = NULL;
  int no_dv = 0, batches = 0;
  dk_snapshot_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  so.at_version = -1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--where") && i + 1 < argc) where = argv[++i];
    else if (!strcmp(argv[i], "--version") && i + 1 < argc) so.at_version = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--no-dv")) no_dv = 1;
    else if (!strcmp(argv[i], "--batches")) batches = 1;
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else uri = NULL, i = argc;
  }
  if (!uri) {
    fprintf(stderr, "usage: dk _rows TABLE [--where EXPR] [--no-dv] [--batches] [--version N]\n");
    return 2;
  }
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &so, &t, &s)) return 1;
  dk_error err;
  dk_error_init(&err);
  dk_expr *pred = NULL;
  dk_scan__file_reader *r = NULL;
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status st = where ? dk_expr_parse(&pred, where, &err) : DK_OK;
  static const char *const none[1] = {NULL};
  dk_scan__file_reader_options ro;
  memset(&ro, 0, sizeof ro);
  ro.columns = none; /* no output columns */
  ro.predicate = pred;
  ro.metadata_fields = batches ? DK_META_ROW_INDEX : 0;
  if (!st) st = dk_scan__file_reader_new(&r, s, &ro, &err);
  int64_t n = dk_snapshot_num_files(s);
  for (int64_t i = 0; !st && i < n; i++) {
    dk_file_entry e;
    st = dk_snapshot_file(&e, s, i, &err);
    if (!st && no_dv) e.dv = NULL;
    if (!st) st = file_rows(&b, r, &e, batches, &err);
    if (!st && b.len > (1 << 20)) {
      fwrite(b.data, 1, b.len, stdout);
      b.len = 0;
    }
  }
  if (!st) fwrite(b.data, 1, b.len, stdout);
  dk__buf_dispose(&b);
  dk_scan__file_reader_free(r);
  dk_expr_free(pred);
  dk_snapshot_free(s);
  dk_table_free(t);
  if (st) {
    fprintf(stderr, "dk _rows: %s: %s\n", dk_status_str(err.code), err.message);
    return 1;
  }
  return 0;
}
