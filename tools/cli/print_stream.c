/*
** print_stream.c — prints an ArrowArrayStream to stdout in the row encoding of
** src/arrow/print.h; shared by `dk scan` and `dk parquet cat`.
*/
#include <stdio.h>
#include <string.h>

#include "arrow/print.h"
#include "cli.h"

int dk_cli_print_stream(struct ArrowArrayStream *st, int format, int64_t limit, const char *cmd,
                        int64_t *rows) {
  int64_t count = 0;
  if (rows) *rows = 0;
  struct ArrowSchema sc;
  if (st->get_schema(st, &sc)) {
    const char *msg = st->get_last_error(st);
    fprintf(stderr, "dk %s: %s\n", cmd, msg ? msg : "error");
    return 1;
  }
  dk_error err;
  dk_error_init(&err);
  dk_printer p;
  dk_buf out;
  dk__buf_init(&out, NULL);
  int rc = 0;
  if (format >= 0 && dk__printer_init(&p, &sc, format, NULL, &err)) {
    fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
    rc = 1;
  }
  while (!rc && (limit < 0 || count < limit)) {
    struct ArrowArray a;
    if (st->get_next(st, &a)) {
      const char *msg = st->get_last_error(st);
      fprintf(stderr, "dk %s: %s\n", cmd, msg ? msg : "error");
      rc = 1;
      break;
    }
    if (!a.release) break;
    if (limit >= 0 && a.length > limit - count) a.length = limit - count; /* print a prefix */
    count += a.length;
    if (format >= 0 && dk__printer_add(&p, &out, &a, &err)) {
      fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
      rc = 1;
    }
    a.release(&a);
    if (!rc && out.len && fwrite(out.data, 1, out.len, stdout) != out.len) rc = 1;
    dk__buf_clear(&out);
  }
  if (format >= 0) {
    if (!rc && dk__printer_finish(&p, &out, &err)) {
      fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
      rc = 1;
    }
    if (!rc && out.len && fwrite(out.data, 1, out.len, stdout) != out.len) rc = 1;
    dk__printer_dispose(&p);
  }
  dk__buf_dispose(&out);
  sc.release(&sc);
  if (rows) *rows = count;
  return rc;
}
