/*
** json.h — library-internal JSON codec (not API): a DOM parser into a dk_arena and a writer.
**
** Parsing never calls malloc per value: every node, string and number text lives in the
** arena passed in, and is freed when the arena is disposed. Numbers keep their exact source
** text (int64 and decimal values must round-trip); helpers convert on demand. Strings are
** unescaped and validated as UTF-8. Nesting deeper than DK_JSON_MAX_DEPTH is DK_CORRUPT.
** Object members keep source order; duplicate keys are kept (dk__json_get returns the last).
** Strictness: RFC 8259 grammar only; raw strings must be valid UTF-8 (RFC 3629); a \u escape
** of a lone (unpaired) surrogate is DK_CORRUPT, never replaced. Errors name the byte offset.
** Empty arrays/objects have items/members == NULL. dk__json_as_i64 accepts only integer
** literals (no fraction or exponent) within int64.
*/
#ifndef DK_CODEC_JSON_H
#define DK_CODEC_JSON_H

#include "util/util.h"

#define DK_JSON_MAX_DEPTH 256

typedef enum dk_json_type {
  DK_JSON_NULL = 0,
  DK_JSON_BOOL,
  DK_JSON_NUMBER,
  DK_JSON_STRING,
  DK_JSON_ARRAY,
  DK_JSON_OBJECT
} dk_json_type;

typedef struct dk_json_value dk_json_value;
typedef struct dk_json_member dk_json_member;

struct dk_json_value {
  dk_json_type type;
  uint32_t len;                /* STRING/NUMBER: bytes of text; ARRAY: items; OBJECT: members */
  union {
    bool b;                    /* BOOL */
    const char *str;           /* STRING: unescaped UTF-8, NUL-terminated (may contain NULs) */
    const char *num;           /* NUMBER: exact source text, NUL-terminated */
    dk_json_value *items;      /* ARRAY */
    dk_json_member *members;   /* OBJECT */
  } u;
};

struct dk_json_member {
  const char *key;             /* unescaped, NUL-terminated */
  uint32_t klen;
  dk_json_value value;
};

/* Parses exactly one JSON value (surrounding whitespace allowed) from text[0..len). */
dk_status dk__json_parse(dk_json_value **out, dk_arena *ar, const char *text, size_t len,
                        dk_error *err);

/* Object lookup by key (last duplicate wins); NULL when absent or when obj is not an object. */
const dk_json_value *dk__json_get(const dk_json_value *obj, const char *key);
const dk_json_value *dk__json_getn(const dk_json_value *obj, const char *key, size_t klen);

/* Conversions; return false when the value has another type or does not fit exactly. */
bool dk__json_as_i64(const dk_json_value *v, int64_t *out);
bool dk__json_as_double(const dk_json_value *v, double *out);
bool dk__json_as_bool(const dk_json_value *v, bool *out);
/* STRING -> view (len = v->len); NULL for other types. */
const char *dk__json_as_str(const dk_json_value *v, size_t *len);
static inline bool dk__json_is_null(const dk_json_value *v) {
  return !v || v->type == DK_JSON_NULL;
}

/* ---- writer ---------------------------------------------------------------------------- */

/* Appends s as a quoted JSON string: '"' '\\' and control characters escaped (short forms
 * \b \f \n \r \t, else \u00xx), valid UTF-8 passed through; invalid UTF-8 is DK_INVALID. */
dk_status dk__json_write_str(dk_buf *b, const char *s, size_t n, dk_error *err);
/* Appends a value (compact form). */
dk_status dk__json_write_value(dk_buf *b, const dk_json_value *v, dk_error *err);
/* Appends a double exactly as Python's repr(float) prints it: the shortest decimal that
 * round-trips (the nearest one among the shortest); positional when x = d.ddd * 10^e with
 * -4 <= e < 16, always with a fraction ("1.0", "0.001", "123.5"), otherwise exponent form
 * with a sign and at least two digits ("1e+16", "1.5e-07"); "-0.0" for negative zero.
 * NaN/+Inf/-Inf are not JSON numbers: they are written as the JSON strings "NaN",
 * "Infinity", "-Infinity". Output is locale-independent. */
dk_status dk__json_write_double(dk_buf *b, double d, dk_error *err);
/* A float prints as the shortest decimal that reads back as the same float32 (through
 * strtof), in the double rule's notation: 0.234f -> 0.234, as Spark, DuckDB and Arrow print
 * FLOAT values. (The shared corpus's expected files widen floats to double; test harnesses
 * convert.) NaN/Inf and integral values print as for doubles. */
dk_status dk__json_write_float(dk_buf *b, float f, dk_error *err);

#endif /* DK_CODEC_JSON_H */
