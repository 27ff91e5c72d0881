/*
** print.h — renders Arrow record batches as text (library-internal, not API): the row
** encoding shared by every dk command that prints rows.
**
** JSON lines: one object per row, field names as keys; integers as numbers; float/double
** shortest round-trip; decimals as strings with exact scale; strings; binary as base64;
** dates YYYY-MM-DD; timestamps ISO-8601 `YYYY-MM-DDTHH:MM:SS.ffffffZ` (no `Z` without a
** time zone; nanosecond timestamps keep 9 digits); lists as arrays; structs as objects; maps
** as objects when keys are strings, else arrays of [key, value].
** CSV: a header line then one line per row (RFC 4180 quoting); nested values as JSON text.
** TABLE: aligned columns separated by " | " with a header and a rule.
*/
#ifndef DK_ARROW_PRINT_H
#define DK_ARROW_PRINT_H

#include "arrow/array.h"

enum {
  DK_PRINT_JSONL = 0,
  DK_PRINT_CSV = 1,
  DK_PRINT_TABLE = 2,
  DK_PRINT_NO_HEADER = 0x100 /* or'd into the format: omit the CSV/TABLE header */
};

/* TABLE output is aligned over up to this many rows at a time (column widths only grow). */
#define DK_PRINT_TABLE_MAX_ROWS 10000

struct dk_pplan;

/* Prints a stream of batches of one schema: init, add each batch (text is appended to out;
** TABLE rows are held back to align them), finish (flushes; a CSV header alone when there were
** no rows), dispose. */
typedef struct dk_printer {
  const struct ArrowSchema *schema;
  int format, header;
  const dk_allocator *alloc;
  struct dk_pplan *plan;
  size_t *widths;    /* TABLE column widths */
  dk_buf cells;      /* TABLE: rendered cells of held rows; CSV: scratch */
  dk_buf ends;       /* TABLE: size_t end offset of each held cell in cells */
  int64_t rows;      /* TABLE rows held */
} dk_printer;

dk_status dk__printer_init(dk_printer *p, const struct ArrowSchema *schema, int format,
                          const dk_allocator *alloc, dk_error *err);
dk_status dk__printer_add(dk_printer *p, dk_buf *out, const struct ArrowArray *batch,
                         dk_error *err);
dk_status dk__printer_finish(dk_printer *p, dk_buf *out, dk_error *err);
void dk__printer_dispose(dk_printer *p);

/* Appends the rows of `batch` (a struct array described by `schema`) to out: one batch,
** printed on its own (init + add + finish). */
dk_status dk__arrow_print_batch(dk_buf *out, const struct ArrowSchema *schema,
                               const struct ArrowArray *batch, int format, dk_error *err);

/* Appends one value (row i of array under schema) as JSON. */
dk_status dk__arrow_print_json_value(dk_buf *out, const struct ArrowSchema *schema,
                                    const struct ArrowArray *array, int64_t i, dk_error *err);

/* Appends the JSON text of one Variant value (Parquet VariantEncoding.md): objects, arrays,
** strings, numbers (decimals with their scale), booleans, null; dates, timestamps, times and
** UUIDs as strings; binary as base64. DK_CORRUPT on malformed bytes. A struct column whose
** field metadata has ARROW:extension:name = "parquet.variant" (children `metadata` and
** `value`, both binary) is printed this way. */
dk_status dk__variant_to_json(dk_buf *out, const uint8_t *metadata, size_t mlen,
                             const uint8_t *value, size_t vlen, dk_error *err);

#endif /* DK_ARROW_PRINT_H */
