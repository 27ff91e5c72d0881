/*
** values.c — Arrow values (Arrow C Data Interface, columnar) to SQLite values for the dk
** SQLite connector.
**
** Mapping (lossless): integers and booleans -> INTEGER (64-bit); float/double -> REAL (NaN and
** ±Infinity, which SQLite would turn into NULL or keep only as REAL overflow, become the TEXT
** 'NaN', 'Infinity', '-Infinity'); decimals -> exact TEXT with the column's scale; dates ->
** TEXT 'YYYY-MM-DD'; timestamps -> TEXT 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (timestamp_ntz without
** the 'Z'); strings -> TEXT; binary -> BLOB; struct/array/map -> JSON TEXT in dk's JSONL value
** encoding, produced by libdk's public encoder (dk/arrow_json.h: binary as base64, decimals and
** timestamps as strings, maps with string keys as objects and other maps as [key, value]
** pairs, variants as their JSON).
**
** Values are read in place from the batch buffers; nothing is allocated per row (the JSON
** encoder of a nested column is made once per scan and reuses its text buffer). Text and
** blobs are handed to SQLite with SQLITE_TRANSIENT (SQLite copies them into its register),
** because a SQLITE_STATIC pointer would be kept by aggregates and sorters past the batch's
** lifetime.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/parquet.h"
#include "dk/arrow_json.h"
#include "dk_sqlite.h"

void dks_buf_put(dks_buf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = sqlite3_realloc64(b->p, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = 0;
}

void dks_buf_free(dks_buf *b) {
  sqlite3_free(b->p);
  memset(b, 0, sizeof *b);
}

dks_kind dks_kind_of(const char *f, int *prec, int *scale) {
  if (prec) *prec = 0;
  if (scale) *scale = 0;
  if (!f || !*f) return DKS_OTHER;
  if (f[0] == '+') return DKS_NESTED;
  if (!strcmp(f, "n")) return DKS_NULL;
  if (!strcmp(f, "b")) return DKS_BOOL;
  if (!strcmp(f, "c") || !strcmp(f, "s") || !strcmp(f, "i") || !strcmp(f, "l") ||
      !strcmp(f, "C") || !strcmp(f, "S") || !strcmp(f, "I"))
    return DKS_INT;
  if (!strcmp(f, "f")) return DKS_FLOAT;
  if (!strcmp(f, "g")) return DKS_DOUBLE;
  if (!strcmp(f, "u") || !strcmp(f, "U")) return DKS_STRING;
  if (!strcmp(f, "z") || !strcmp(f, "Z")) return DKS_BINARY;
  if (!strcmp(f, "tdD")) return DKS_DATE;
  if (!strncmp(f, "d:", 2)) {
    int p = 0, s = 0;
    if (sscanf(f + 2, "%d,%d", &p, &s) != 2) return DKS_OTHER;
    if (prec) *prec = p;
    if (scale) *scale = s;
    return DKS_DECIMAL;
  }
  if (!strncmp(f, "ts", 2) && f[2] && f[3] == ':') return f[4] ? DKS_TIMESTAMP : DKS_TIMESTAMP_NTZ;
  return DKS_OTHER;
}

/* ---- dates and timestamps (proleptic Gregorian, days since 1970-01-01) ---------------------- */

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

size_t dks_format_date(char *buf, int64_t days) {
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  int n = snprintf(buf, 32, y >= 0 && y <= 9999 ? "%04lld-%02u-%02u" : "%+05lld-%02u-%02u",
                   (long long)y, m, d);
  return (size_t)n;
}

size_t dks_format_ts(char *buf, int64_t us, int utc) {
  int64_t days = us / 86400000000LL, rem = us % 86400000000LL;
  if (rem < 0) {
    rem += 86400000000LL;
    days--;
  }
  size_t n = dks_format_date(buf, days);
  int64_t secs = rem / 1000000;
  n += (size_t)snprintf(buf + n, 40, "T%02d:%02d:%02d.%06d%s", (int)(secs / 3600),
                        (int)(secs / 60 % 60), (int)(secs % 60), (int)(rem % 1000000),
                        utc ? "Z" : "");
  return n;
}

static int digits(const char *s, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

static int days_in_month(int y, int m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return dm[m - 1];
}

int dks_parse_date(const char *s, size_t n, int32_t *days) {
  int y = 0, m = 0, d = 0;
  if (n != 10 || s[4] != '-' || s[7] != '-') return 0;
  if (!digits(s, 4, &y) || !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d)) return 0;
  if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return 0;
  *days = (int32_t)days_from_civil(y, (unsigned)m, (unsigned)d);
  return 1;
}

int dks_parse_ts(const char *s, size_t n, int utc, int64_t *micros) {
  int32_t days;
  int hh = 0, mi = 0, ss = 0, us = 0;
  if (n != (utc ? 27u : 26u) || !dks_parse_date(s, 10, &days)) return 0;
  if (s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.') return 0;
  if (utc && s[26] != 'Z') return 0;
  if (!digits(s + 11, 2, &hh) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &ss) ||
      !digits(s + 20, 6, &us) || hh > 23 || mi > 59 || ss > 59)
    return 0;
  *micros = ((int64_t)days * 86400 + hh * 3600 + mi * 60 + ss) * 1000000LL + us;
  return 1;
}

/* ---- scalar readers ------------------------------------------------------------------------ */

static int is_valid(const struct ArrowArray *a, int64_t i) {
  const uint8_t *v = a->n_buffers > 0 ? (const uint8_t *)a->buffers[0] : NULL;
  return !v || (v[i >> 3] >> (i & 7)) & 1;
}

static int64_t ts_to_micros(const char *f, int64_t v) {
  switch (f[2]) {
    case 's': return v * 1000000;
    case 'm': return v * 1000;
    case 'n': return v >= 0 ? v / 1000 : -((-v + 999) / 1000);
    default: return v;
  }
}

static int64_t int_value(const char *f, const struct ArrowArray *a, int64_t i) {
  const void *d = a->buffers[1];
  switch (f[0]) {
    case 'c': return ((const int8_t *)d)[i];
    case 's': return ((const int16_t *)d)[i];
    case 'i': return ((const int32_t *)d)[i];
    case 'C': return ((const uint8_t *)d)[i];
    case 'S': return ((const uint16_t *)d)[i];
    case 'I': return ((const uint32_t *)d)[i];
    default: return ((const int64_t *)d)[i];
  }
}

/* Decimal128/256 (little-endian two's complement; only the low 128 bits are read) as text. */
static size_t format_decimal(char *buf, const uint8_t *p, int scale) {
  __extension__ typedef unsigned __int128 u128;
  uint64_t lo, hi;
  memcpy(&lo, p, 8);
  memcpy(&hi, p + 8, 8);
  u128 v = ((u128)hi << 64) | lo;
  int neg = (hi >> 63) & 1;
  if (neg) v = ~v + 1;
  char tmp[48];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + (int)(v % 10));
    v /= 10;
  } while (v);
  while (n <= scale) tmp[n++] = '0';
  size_t o = 0;
  if (neg) buf[o++] = '-';
  for (int k = n - 1; k >= 0; k--) {
    buf[o++] = tmp[k];
    if (k == scale && scale > 0) buf[o++] = '.';
  }
  buf[o] = 0;
  return o;
}

static void str_value(const char *f, const struct ArrowArray *a, int64_t i, const char **p,
                      size_t *n) {
  const char *data = (const char *)a->buffers[2];
  if (f[0] == 'U' || f[0] == 'Z') {
    const int64_t *off = (const int64_t *)a->buffers[1];
    *p = data ? data + off[i] : "";
    *n = (size_t)(off[i + 1] - off[i]);
  } else {
    const int32_t *off = (const int32_t *)a->buffers[1];
    *p = data ? data + off[i] : "";
    *n = (size_t)(off[i + 1] - off[i]);
  }
}

static const char *special_double(double d) {
  if (isnan(d)) return "NaN";
  if (isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return NULL;
}

/* ---- top-level values ----------------------------------------------------------------------- */

void dks_result(sqlite3_context *ctx, const struct ArrowSchema *s, const struct ArrowArray *a,
                int64_t row, dk_arrow_json **json) {
  int64_t i = row + a->offset;
  if (!is_valid(a, i)) {
    sqlite3_result_null(ctx);
    return;
  }
  const char *f = s->format;
  char tmp[64];
  int prec, scale;
  switch (dks_kind_of(f, &prec, &scale)) {
    case DKS_NULL: sqlite3_result_null(ctx); return;
    case DKS_BOOL: {
      const uint8_t *d = (const uint8_t *)a->buffers[1];
      sqlite3_result_int(ctx, (d[i >> 3] >> (i & 7)) & 1);
      return;
    }
    case DKS_INT: sqlite3_result_int64(ctx, int_value(f, a, i)); return;
    case DKS_FLOAT:
    case DKS_DOUBLE: {
      double d = f[0] == 'f' ? ((const float *)a->buffers[1])[i] : ((const double *)a->buffers[1])[i];
      const char *sp = special_double(d);
      if (sp) sqlite3_result_text(ctx, sp, -1, SQLITE_STATIC);
      else sqlite3_result_double(ctx, d);
      return;
    }
    case DKS_STRING: {
      const char *p;
      size_t n;
      str_value(f, a, i, &p, &n);
      sqlite3_result_text64(ctx, p, n, SQLITE_TRANSIENT, SQLITE_UTF8);
      return;
    }
    case DKS_BINARY: {
      const char *p;
      size_t n;
      str_value(f, a, i, &p, &n);
      sqlite3_result_blob64(ctx, p, n, SQLITE_TRANSIENT);
      return;
    }
    case DKS_DECIMAL: {
      int w = strstr(f, ",256") ? 32 : 16;
      size_t n = format_decimal(tmp, (const uint8_t *)a->buffers[1] + (size_t)i * (size_t)w, scale);
      sqlite3_result_text(ctx, tmp, (int)n, SQLITE_TRANSIENT);
      return;
    }
    case DKS_DATE: {
      size_t n = dks_format_date(tmp, ((const int32_t *)a->buffers[1])[i]);
      sqlite3_result_text(ctx, tmp, (int)n, SQLITE_TRANSIENT);
      return;
    }
    case DKS_TIMESTAMP:
    case DKS_TIMESTAMP_NTZ: {
      int64_t us = ts_to_micros(f, ((const int64_t *)a->buffers[1])[i]);
      size_t n = dks_format_ts(tmp, us, f[4] != 0);
      sqlite3_result_text(ctx, tmp, (int)n, SQLITE_TRANSIENT);
      return;
    }
    case DKS_NESTED: {
      dk_error err;
      dk_str text;
      dk_error_init(&err);
      if ((!*json && dk_arrow_json_new(json, s, NULL, &err) != DK_OK) ||
          dk_arrow_json_value(&text, *json, a, row, &err) != DK_OK) {
        if (err.code == DK_NOMEM) {
          sqlite3_result_error_nomem(ctx);
        } else {
          char *m = sqlite3_mprintf("delta: column %s: %s: %s", s->name ? s->name : "?",
                                    dk_status_str(err.code), err.message);
          sqlite3_result_error(ctx, m ? m : "delta: cannot encode a nested value", -1);
          sqlite3_free(m);
        }
        return;
      }
      sqlite3_result_text64(ctx, text.ptr, text.len, SQLITE_TRANSIENT, SQLITE_UTF8);
      return;
    }
    default:
      sqlite3_result_error(ctx, "delta: column of an Arrow type the SQLite connector cannot map", -1);
      return;
  }
}
