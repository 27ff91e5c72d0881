/*
** json.h — Arrow values as JSON text, library-internal (not API): the Variant decoder the
** public encoder (dk/arrow_json.h, json.c) and dk_variant_json (variant_api.c) share.
*/
#ifndef DK_ARROW_JSON_INTERNAL_H
#define DK_ARROW_JSON_INTERNAL_H

#include "arrow/array.h"

/* Appends the JSON text of one Variant value (Parquet VariantEncoding.md): objects, arrays,
** strings, numbers (decimals with their scale), booleans, null; dates, timestamps, times and
** UUIDs as strings; binary as base64. DK_CORRUPT on malformed bytes. A struct column whose
** field metadata has ARROW:extension:name = "parquet.variant" (children `metadata` and
** `value`, both binary) is encoded this way. */
dk_status dk__variant_to_json(dk_buf *out, const uint8_t *metadata, size_t mlen,
                             const uint8_t *value, size_t vlen, dk_error *err);

#endif /* DK_ARROW_JSON_INTERNAL_H */
