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

/* Appends the rows of `batch` (a struct array described by `schema`) to out. */
dk_status dk_arrow_print_batch(dk_buf *out, const struct ArrowSchema *schema,
                               const struct ArrowArray *batch, int format, dk_error *err);

/* Appends one value (row i of array under schema) as JSON. */
dk_status dk_arrow_print_json_value(dk_buf *out, const struct ArrowSchema *schema,
                                    const struct ArrowArray *array, int64_t i, dk_error *err);

/* Appends the JSON text of one Variant value (Parquet VariantEncoding.md): objects, arrays,
** strings, numbers (decimals with their scale), booleans, null; dates, timestamps, times and
** UUIDs as strings; binary as base64. DK_CORRUPT on malformed bytes. A struct column whose
** field metadata has ARROW:extension:name = "parquet.variant" (children `metadata` and
** `value`, both binary) is printed this way. */
dk_status dk_variant_to_json(dk_buf *out, const uint8_t *metadata, size_t mlen,
                             const uint8_t *value, size_t vlen, dk_error *err);

#endif /* DK_ARROW_PRINT_H */
