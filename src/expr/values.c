/*
** values.c — expression literals from text: partition values and stats strings as typed
** dk_lit values of an Arrow type (Delta type names become Arrow types in value.c, beside the
** SQL ones). The text forms themselves (dates, timestamps, decimals) are parsed by
** src/protocol/values.c.
**
** Follows the Delta protocol, "Partition Value Serialization" (empty string = null,
** "true"/"false", numeric text) and Hive's `__HIVE_DEFAULT_PARTITION__` for null.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "expr/expr_int.h"

/* ---- typed values from text -------------------------------------------------------------- */

static bool parse_i64(const char *s, size_t n, int64_t *out) {
  char tmp[32];
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *end;
  errno = 0;
  long long v = strtoll(tmp, &end, 10);
  if (errno || *end || end == tmp || isspace((unsigned char)tmp[0])) return false;
  *out = v;
  return true;
}

static bool parse_f64(const char *s, size_t n, double *out) {
  char tmp[64];
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  if (!strcmp(tmp, "NaN")) {
    *out = NAN;
    return true;
  }
  if (!strcmp(tmp, "Infinity") || !strcmp(tmp, "+Infinity") || !strcmp(tmp, "inf")) {
    *out = INFINITY;
    return true;
  }
  if (!strcmp(tmp, "-Infinity") || !strcmp(tmp, "-inf")) {
    *out = -INFINITY;
    return true;
  }
  for (size_t i = 0; i < n; i++)
    if (!(isdigit((unsigned char)tmp[i]) || strchr("+-.eE", tmp[i]))) return false;
  char *end;
  double v = strtod(tmp, &end);
  if (*end || end == tmp) return false;
  *out = v;
  return true;
}

dk_status dk__lit_from_text(dk_lit *out, const char *text, size_t n, const dk_atype *t,
                            const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  if (!text || n == 0 ||
      (n == 26 && !memcmp(text, "__HIVE_DEFAULT_PARTITION__", 26))) {
    out->type = DK_LIT_NULL;
    return DK_OK;
  }
  int64_t iv;
  switch (t->id) {
    case DK_AT_BOOL:
      out->type = DK_LIT_BOOL;
      if (n == 4 && !strncasecmp(text, "true", 4)) out->v.b = true;
      else if (n == 5 && !strncasecmp(text, "false", 5)) out->v.b = false;
      else goto bad;
      return DK_OK;
    case DK_AT_INT8:
    case DK_AT_INT16:
    case DK_AT_INT32:
    case DK_AT_INT64: {
      static const int64_t lo[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
      static const int64_t hi[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
      static const dk_lit_type ty[] = {DK_LIT_INT8, DK_LIT_INT16, DK_LIT_INT32, DK_LIT_INT64};
      int k = t->id - DK_AT_INT8;
      if (!parse_i64(text, n, &iv) || iv < lo[k] || iv > hi[k]) goto bad;
      out->type = ty[k];
      out->v.i = iv;
      return DK_OK;
    }
    case DK_AT_FLOAT:
    case DK_AT_DOUBLE:
      if (!parse_f64(text, n, &out->v.d)) goto bad;
      out->type = t->id == DK_AT_FLOAT ? DK_LIT_FLOAT : DK_LIT_DOUBLE;
      if (t->id == DK_AT_FLOAT) out->v.d = (double)(float)out->v.d;
      return DK_OK;
    case DK_AT_DECIMAL128: {
      dk_error e2 = {0};
      if (dk__parse_decimal(&out->v.dec, text, n, t->scale, &e2) != DK_OK ||
          !dk__i128_fits_precision(out->v.dec, t->precision))
        goto bad;
      out->type = DK_LIT_DECIMAL;
      out->precision = t->precision;
      out->scale = t->scale;
      return DK_OK;
    }
    case DK_AT_DATE32: {
      int32_t d;
      dk_error e2 = {0};
      if (dk__parse_date(&d, text, n, &e2) != DK_OK) goto bad;
      out->type = DK_LIT_DATE;
      out->v.i = d;
      return DK_OK;
    }
    case DK_AT_TIMESTAMP: {
      bool zone;
      dk_error e2 = {0};
      if (dk__parse_timestamp(&iv, &zone, text, n, &e2) != DK_OK) goto bad;
      out->type = t->tz[0] ? DK_LIT_TIMESTAMP : DK_LIT_TIMESTAMP_NTZ;
      out->v.i = iv;
      return DK_OK;
    }
    case DK_AT_STRING:
      if (!dk__utf8_valid(text, n)) goto bad;
      out->type = DK_LIT_STRING;
      break;
    case DK_AT_BINARY:
      out->type = DK_LIT_BINARY;
      break;
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "partition values of this type are not supported");
  }
  out->bytes = dk__strndup(alloc, text, n);
  if (!out->bytes) return dk__error_set(err, DK_NOMEM, "out of memory (literal)");
  out->len = n;
  return DK_OK;
bad:
  return dk__error_set(err, DK_CORRUPT, "malformed partition value '%.*s'", (int)DK_MIN(n, 64),
                       text);
}
