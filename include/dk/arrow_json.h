/**
 * @file dk/arrow_json.h
 * @brief Arrow values (C Data Interface) as JSON text: dk's row encoding, for engines that
 *        hand nested values over as text (SQLite, CLIs).
 *
 * The encoding is the one every dk command prints rows with (`dk scan`, `dk parquet cat`,
 * `dk sql`): integers as numbers; float/double as the shortest round-trip decimal (NaN and
 * ±Infinity as the strings "NaN", "Infinity", "-Infinity"); decimals as strings with exactly
 * the type's scale; strings with JSON escapes (invalid UTF-8 as U+FFFD); binary as base64;
 * dates "YYYY-MM-DD"; timestamps "YYYY-MM-DDTHH:MM:SS.ffffffZ" (no `Z` without a time zone,
 * nanoseconds keep 9 digits); lists as arrays; structs as objects; maps as objects when keys
 * are strings, else arrays of [key, value]; variant columns (struct tagged
 * ARROW:extension:name = "parquet.variant") as their decoded JSON (dk/variant.h); null as
 * null. Types: the Arrow formats dk's scans produce (n b c s i l C S I L e f g d:P,S tdD
 * tt[smun] ts[smun]:TZ u z w:N +l +s +m).
 *
 * Thread-safety: an encoder is used by one thread at a time.
 */
#ifndef DK_ARROW_JSON_H
#define DK_ARROW_JSON_H

#include "dk/arrow.h"
#include "dk/common.h"

DK_BEGIN_DECL

/** Encoder for the values of one Arrow field; holds the parsed type tree and a reused text
 *  buffer, so encoding allocates nothing per value once the buffer has grown. */
typedef struct dk_arrow_json dk_arrow_json;

/** Creates an encoder for values of `schema` (borrowed: it must outlive the encoder).
 *  @return DK_OK; DK_UNSUPPORTED for an Arrow format outside the list above (nothing is
 *  allocated then and *out is NULL); DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_arrow_json_new(dk_arrow_json **out, const struct ArrowSchema *schema,
                                   const dk_allocator *alloc, dk_error *err);

/** Encodes value `i` of `array` (an array of the encoder's schema; `i` is relative to
 *  array->offset, which is applied like every child's offset) as JSON text. `*out` is
 *  borrowed: valid until the next call on `enc` or dk_arrow_json_free, not NUL-terminated.
 *  @return DK_OK, DK_NOMEM, DK_INVALID (i outside the array), DK_CORRUPT (a variant value
 *  with malformed bytes). */
DK_API DK_WARN_UNUSED dk_status dk_arrow_json_value(dk_str *out, dk_arrow_json *enc,
                                     const struct ArrowArray *array, int64_t i, dk_error *err);

/** Frees the encoder; NULL is a no-op. */
DK_API void dk_arrow_json_free(dk_arrow_json *enc);

DK_END_DECL

#endif /* DK_ARROW_JSON_H */
