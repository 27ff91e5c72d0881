/*
** cmd_scan.c — `dk scan TABLE [--version N | --timestamp TS] [--columns a,b] [--where EXPR]
** [--limit N] [--with-metadata] [--format jsonl|csv|table] [--threads N] [--batch-size N]`:
** reads a table (or a time-travelled version of it) through dk_scan and prints its rows in
** the row encoding of src/arrow/print.h.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/print.h"
#include "cli.h"
#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/snapshot.h"

static void scan_usage(void) {
  fprintf(stderr,
          "usage: dk scan TABLE [--version N | --timestamp TS] [--columns a,b] [--where EXPR]\n"
          "               [--limit N] [--with-metadata] [--format jsonl|csv|table] [--threads N]\n");
}

static int scan_fail(const dk_error *err) {
  fprintf(stderr, "dk scan: %s: %s\n", dk_status_str(err->code), err->message);
  return 1;
}

int dk_cli_scan(int argc, char **argv) {
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  const char *columns = NULL, *where = NULL;
  int format = DK_PRINT_JSONL, nrest = 0;
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
      if (!strcmp(f, "jsonl")) format = DK_PRINT_JSONL;
      else if (!strcmp(f, "csv")) format = DK_PRINT_CSV;
      else if (!strcmp(f, "table")) format = DK_PRINT_TABLE;
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
    scan_usage();
    free(rest);
    return 2;
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
    rc = scan_fail(&err);
    goto done;
  }
  so.filter = filter;
  if (dk_scan_new(&scan, s, &so, &err)) {
    rc = scan_fail(&err);
    goto done;
  }
  struct ArrowArrayStream st;
  if (dk_scan_read(&st, scan, &err)) {
    rc = scan_fail(&err);
    goto done;
  }
  struct ArrowSchema sc;
  if (st.get_schema(&st, &sc)) {
    fprintf(stderr, "dk scan: %s\n", st.get_last_error(&st));
    st.release(&st);
    rc = 1;
    goto done;
  }
  dk_buf out;
  dk_buf_init(&out, NULL);
  int first = 1;
  for (;;) {
    struct ArrowArray a;
    if (st.get_next(&st, &a)) {
      const char *msg = st.get_last_error(&st);
      fprintf(stderr, "dk scan: %s\n", msg ? msg : "error");
      rc = 1;
      break;
    }
    if (!a.release) break;
    int fmt = format | (first ? 0 : DK_PRINT_NO_HEADER);
    first = 0;
    if (dk_arrow_print_batch(&out, &sc, &a, fmt, &err)) {
      rc = scan_fail(&err);
      a.release(&a);
      break;
    }
    a.release(&a);
    if (out.len && fwrite(out.data, 1, out.len, stdout) != out.len) {
      rc = 1;
      break;
    }
    dk_buf_clear(&out);
  }
  dk_buf_dispose(&out);
  sc.release(&sc);
  st.release(&st);
done:
  dk_scan_free(scan);
  dk_expr_free(filter);
  free(cols);
  free(colbuf);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}
