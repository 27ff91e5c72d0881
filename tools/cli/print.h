/*
** print.h — the row printer of the dk CLI: Arrow record batches as JSON lines, CSV or an
** aligned table, on top of the public value encoder dk_arrow_json (include/dk/arrow_json.h).
**
** JSON lines: one object per row, field names as keys, values in dk's row encoding.
** CSV: a header line then one line per row (RFC 4180 quoting); strings as their text; dates,
** times, timestamps, decimals and binary (base64) unquoted; nested values as JSON text; null
** as an empty field. TABLE: the same cells (null as "null") aligned in columns separated by
** " | ", under a header and a rule; rows are held back up to CLI_PRINT_TABLE_MAX_ROWS at a time
** to align them (column widths only grow).
*/
#ifndef DK_CLI_PRINT_H
#define DK_CLI_PRINT_H

#include <stdio.h>

#include "dk/arrow.h"
#include "dk/common.h"

enum {
  CLI_PRINT_JSONL = 0,
  CLI_PRINT_CSV = 1,
  CLI_PRINT_TABLE = 2,
  CLI_PRINT_NO_HEADER = 0x100 /* or'd into the format: omit the CSV/TABLE header */
};

#define CLI_PRINT_TABLE_MAX_ROWS 10000

typedef struct cli_printer cli_printer;

/* A printer of batches of the struct schema `schema` (borrowed) to `out`. DK_INVALID for a
** schema that is not a struct or an unknown format, DK_UNSUPPORTED for a column type the
** encoder does not know. */
dk_status cli_printer_new(cli_printer **p, const struct ArrowSchema *schema, int format,
                          FILE *out, dk_error *err);
/* Prints (TABLE: holds) the rows of one batch of the schema. */
dk_status cli_printer_add(cli_printer *p, const struct ArrowArray *batch, dk_error *err);
/* Flushes held rows; a CSV header alone when there were no rows. */
dk_status cli_printer_finish(cli_printer *p, dk_error *err);
void cli_printer_free(cli_printer *p);

/* Writes s[0..n) as a JSON string: quotes, backslashes and control bytes escaped, other bytes
** as they are. */
void cli_put_json_str(FILE *f, const char *s, size_t n);

#endif /* DK_CLI_PRINT_H */
