/*
** partition.c — typed partition values: parsing the strings of add.partitionValues into
** typed scalars, following PROTOCOL.md "Partition Value Serialization" (numbers in decimal
** text, booleans "true"/"false", dates "YYYY-MM-DD", timestamps "YYYY-MM-DD HH:MM:SS[.f]"
** or ISO 8601 with 'T' and an optional zone; no zone means UTC; decimals in plain notation).
*/
#include <errno.h>
#include <strings.h>
#include <stdlib.h>

#include "log/log.h"

static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool digits_n(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return true;
}

static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static bool parse_date(const char **p, int64_t *days) {
  const char *s = *p;
  bool neg = *s == '-';
  if (neg) s++;
  int y = 0, m, d, nd = 0;
  while (*s >= '0' && *s <= '9' && nd < 6) {
    y = y * 10 + (*s++ - '0');
    nd++;
  }
  if (nd < 4 || *s++ != '-' || !digits_n(&s, 2, &m) || *s++ != '-' || !digits_n(&s, 2, &d))
    return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  *days = days_from_civil(neg ? -y : y, m, d);
  *p = s;
  return true;
}

/* Microseconds since the epoch; with_zone accepts a trailing Z or +HH:MM. */
static bool parse_timestamp(const char *s, bool with_zone, int64_t *out) {
  int64_t days;
  if (!parse_date(&s, &days)) return false;
  int h = 0, mi = 0, se = 0;
  int64_t us = 0;
  if (*s == ' ' || *s == 'T') {
    s++;
    if (!digits_n(&s, 2, &h) || *s++ != ':' || !digits_n(&s, 2, &mi)) return false;
    if (*s == ':') {
      s++;
      if (!digits_n(&s, 2, &se)) return false;
    }
    if (*s == '.') {
      s++;
      int nd = 0;
      while (*s >= '0' && *s <= '9') {
        if (nd < 6) us = us * 10 + (*s - '0');
        nd++;
        s++;
      }
      if (!nd) return false;
      for (; nd < 6; nd++) us *= 10;
    }
  }
  if (h > 23 || mi > 59 || se > 60) return false;
  int64_t off = 0;
  if (*s == 'Z' && with_zone) {
    s++;
  } else if ((*s == '+' || *s == '-') && with_zone) {
    int sign = *s++ == '-' ? -1 : 1, oh, om = 0;
    if (!digits_n(&s, 2, &oh)) return false;
    if (*s == ':') s++;
    if (*s) {
      if (!digits_n(&s, 2, &om)) return false;
    }
    off = sign * (oh * 3600 + om * 60);
  }
  if (*s) return false;
  *out = ((days * 24 + h) * 60 + mi) * 60000000LL + se * 1000000LL + us - off * 1000000LL;
  return true;
}

static bool parse_decimal(const char *s, int scale, int precision, int64_t *hi, uint64_t *lo) {
  bool neg = false;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  __int128 v = 0;
  int nd = 0, frac = -1;
  const __int128 limit = (__int128)1 << 126;
  for (; *s; s++) {
    if (*s == '.') {
      if (frac >= 0) return false;
      frac = 0;
      continue;
    }
    if (*s == 'e' || *s == 'E') return false; /* plain notation only */
    if (*s < '0' || *s > '9') return false;
    if (frac >= 0) {
      if (frac >= scale) {
        if (*s != '0') return false; /* more fractional digits than the scale */
        continue;
      }
      frac++;
    }
    v = v * 10 + (*s - '0');
    if (v > limit) return false;
    nd++;
  }
  if (!nd) return false;
  for (int f = frac < 0 ? 0 : frac; f < scale; f++) v *= 10;
  __int128 maxv = 1;
  for (int i = 0; i < precision; i++) maxv *= 10;
  if (v >= maxv) return false;
  if (neg) v = -v;
  *hi = (int64_t)(v >> 64);
  *lo = (uint64_t)v;
  return true;
}

dk_status dk_partition_value_parse(dk_scalar *out, const dk_type *type, const char *text,
                                   dk_error *err) {
  memset(out, 0, sizeof *out);
  out->type = type->id;
  if (!text || !*text) {
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
    case DK_TYPE_DATE: {
      const char *p = text;
      ok = parse_date(&p, &out->i64) && (!*p || *p == ' ' || *p == 'T');
      break;
    }
    case DK_TYPE_TIMESTAMP: ok = parse_timestamp(text, true, &out->i64); break;
    case DK_TYPE_TIMESTAMP_NTZ: ok = parse_timestamp(text, false, &out->i64); break;
    case DK_TYPE_DECIMAL:
      ok = parse_decimal(text, type->scale, type->precision, &out->dec_hi, &out->dec_lo);
      break;
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "partition values of nested/variant types are not supported");
  }
  if (!ok)
    return dk__error_set(err, DK_CORRUPT, "partition value '%.100s' is not a valid %s", text,
                         type->id == DK_TYPE_DECIMAL ? "decimal for its precision/scale" : "value of its type");
  return DK_OK;
}
