/*
** print_stream.c — prints an ArrowArrayStream to stdout with the CLI's row printer (print.h);
** shared by `dk scan` and `dk parquet cat`.
*/
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "print.h"

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
  cli_printer *p = NULL;
  int rc = 0;
  if (format >= 0 && cli_printer_new(&p, &sc, format, stdout, &err)) {
    fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
    rc = 1;
  }
  while (!rc && (limit < 0 || count < limit)) {
    struct ArrowArray a;
    if (st->get_next(st, &a)) {
      const char *msg = st->get_last_error(st);
      fflush(stdout);
      fprintf(stderr, "dk %s: %s\n", cmd, msg ? msg : "error");
      rc = 1;
      break;
    }
    if (!a.release) break;
    if (limit >= 0 && a.length > limit - count) a.length = limit - count; /* print a prefix */
    count += a.length;
    if (p && cli_printer_add(p, &a, &err)) {
      fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
      rc = 1;
    }
    a.release(&a);
  }
  if (p && !rc && cli_printer_finish(p, &err)) {
    fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err.code), err.message);
    rc = 1;
  }
  cli_printer_free(p);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    if (!rc) fprintf(stderr, "dk %s: cannot write the output\n", cmd);
    rc = 1;
  }
  sc.release(&sc);
  if (rows) *rows = count;
  return rc;
}
