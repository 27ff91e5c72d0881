/**
 * @file dk/variant.h
 * @brief Delta/Parquet VARIANT values rendered as JSON text.
 *
 * Scans return a variant column as a struct<metadata: binary, value: binary> whose field
 * metadata carries ARROW:extension:name = "parquet.variant". Engines that want text (SQLite,
 * CLIs) turn one value into JSON with dk_variant_json.
 */
#ifndef DK_VARIANT_H
#define DK_VARIANT_H

#include "dk/common.h"

DK_BEGIN_DECL

/** Renders one variant (its metadata and value bytes) as JSON: objects, arrays, numbers,
 *  strings; decimals as numbers with exact digits; dates/timestamps as ISO-8601 strings;
 *  binary as base64. `*out` is NUL-terminated, allocated; free with dk_free.
 *  @return DK_OK, DK_CORRUPT (malformed bytes), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_variant_json(char **out, size_t *len, const uint8_t *metadata, size_t mlen,
                                 const uint8_t *value, size_t vlen, dk_error *err);

DK_END_DECL

#endif /* DK_VARIANT_H */
