/*
** partition.c — typed partition values: parsing the strings of add.partitionValues into
** typed scalars, following PROTOCOL.md "Partition Value Serialization" (numbers in decimal
** text, booleans "true"/"false", dates "YYYY-MM-DD", timestamps "YYYY-MM-DD HH:MM:SS[.f]"
** or ISO 8601 with 'T' and an optional zone; no zone means UTC; decimals; empty text and
** Hive's "__HIVE_DEFAULT_PARTITION__" are null).
*/
#include <errno.h>
#include <strings.h>
#include <stdlib.h>

#include "dk/snapshot.h"
#include "util/util.h"
#include "protocol/values.h"

static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* Dates, timestamps and decimals through src/protocol/values.c, as the expression module
** parses the same values for pruning: one reading of a partition value everywhere. */
static bool parse_date(const char *text, int64_t *days) {
  /* a date partition value written with a time part ("2021-01-01 00:00:00") keeps its date */
  size_t n = strcspn(text, " T");
  if (n == 0) n = strlen(text);
  int32_t d;
  dk_error e2 = {0};
  if (dk__parse_date(&d, text, n, &e2)) return false;
  *days = d;
  return true;
}

static bool parse_timestamp(const char *text, bool with_zone, int64_t *out) {
  bool zone;
  dk_error e2 = {0};
  return dk__parse_timestamp(out, &zone, text, strlen(text), &e2) == DK_OK && (with_zone || !zone);
}

static bool parse_decimal(const char *text, const dk_type *t, int64_t *hi, uint64_t *lo) {
  dk_i128 v;
  dk_error e2 = {0};
  if (dk__parse_decimal(&v, text, strlen(text), t->scale, &e2) ||
      !dk__i128_fits_precision(v, t->precision))
    return false;
  *hi = (int64_t)(v >> 64);
  *lo = (uint64_t)v;
  return true;
}

dk_status dk_partition_value_parse(dk_scalar *out, const dk_type *type, const char *text,
                                   dk_error *err) {
  memset(out, 0, sizeof *out);
  out->type = type->id;
  if (!text || !*text || !strcmp(text, "__HIVE_DEFAULT_PARTITION__")) {
    out->is_null = 1;
    return DK_OK;
  }
  bool ok = true;
  char *end;
  switch (type->id) {
    case DK_TYPE_STRING:
    case DK_TYPE_BINARY:
      out->str = text;
      out->len = strlen(text);
      break;
    case DK_TYPE_LONG: ok = parse_int(text, INT64_MIN, INT64_MAX, &out->i64); break;
    case DK_TYPE_INTEGER: ok = parse_int(text, INT32_MIN, INT32_MAX, &out->i64); break;
    case DK_TYPE_SHORT: ok = parse_int(text, INT16_MIN, INT16_MAX, &out->i64); break;
    case DK_TYPE_BYTE: ok = parse_int(text, INT8_MIN, INT8_MAX, &out->i64); break;
    case DK_TYPE_FLOAT:
    case DK_TYPE_DOUBLE:
      out->f64 = strtod(text, &end);
      ok = end != text && !*end;
      if (type->id == DK_TYPE_FLOAT) out->f64 = (double)(float)out->f64;
      break;
    case DK_TYPE_BOOLEAN:
      if (!strcasecmp(text, "true"))
        out->i64 = 1;
      else if (!strcasecmp(text, "false"))
        out->i64 = 0;
      else
        ok = false;
      break;
    case DK_TYPE_DATE: ok = parse_date(text, &out->i64); break;
    case DK_TYPE_TIMESTAMP: ok = parse_timestamp(text, true, &out->i64); break;
    case DK_TYPE_TIMESTAMP_NTZ: ok = parse_timestamp(text, false, &out->i64); break;
    case DK_TYPE_DECIMAL:
      ok = parse_decimal(text, type, &out->dec_hi, &out->dec_lo);
      break;
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "partition values of nested/variant types are not supported");
  }
  if (!ok)
    return dk__error_set(err, DK_CORRUPT, "partition value '%.100s' is not a valid %s", text,
                         type->id == DK_TYPE_DECIMAL ? "decimal for its precision/scale" : "value of its type");
  return DK_OK;
}
