/*
** values.c — Delta values to and from text, shared by the snapshot (typed partition values),
** the expression module (literals, stats) and printers: dates (proleptic Gregorian days),
** timestamps (microseconds, UTC), decimals (unscaled int128) and UTF-8 validation.
**
** Follows the Delta protocol, "Partition Value Serialization": `{year}-{month}-{day}`,
** `{y}-{m}-{d} {h}:{m}:{s}[.{micros}]` or ISO-8601 adjusted to UTC, decimals in plain (or
** scientific) notation. Date arithmetic uses the days-from-civil construction over 400-year
** eras.
*/
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "protocol/values.h"

/* ---- calendar -------------------------------------------------------------------------- */

int64_t dk__days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                   /* [0, 399] */
  int64_t mp = m > 2 ? (int64_t)m - 3 : (int64_t)m + 9;          /* March-based month */
  int64_t doy = (153 * mp + 2) / 5 + (int64_t)d - 1;              /* [0, 365] */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
  return era * 146097 + doe - 719468;
}

void dk__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Reads 1..maxd digits; returns count (0 = none). */
static int read_digits(const char *s, size_t n, size_t *pos, int maxd, int64_t *out) {
  int k = 0;
  int64_t v = 0;
  while (*pos < n && k < maxd && s[*pos] >= '0' && s[*pos] <= '9') {
    v = v * 10 + (s[*pos] - '0');
    (*pos)++;
    k++;
  }
  *out = v;
  return k;
}

/* Parses "[+-]yyyy-m[m]-d[d]" at *pos; validates ranges. */
static bool parse_ymd(const char *s, size_t n, size_t *pos, int64_t *days) {
  int64_t y, m, d;
  bool neg = false;
  if (*pos < n && (s[*pos] == '-' || s[*pos] == '+')) {
    neg = s[*pos] == '-';
    (*pos)++;
  }
  if (read_digits(s, n, pos, 7, &y) < 4) return false;
  if (neg) y = -y;
  if (*pos >= n || s[*pos] != '-') return false;
  (*pos)++;
  if (read_digits(s, n, pos, 2, &m) < 1) return false;
  if (*pos >= n || s[*pos] != '-') return false;
  (*pos)++;
  if (read_digits(s, n, pos, 2, &d) < 1) return false;
  if (m < 1 || m > 12 || d < 1 || d > (int64_t)days_in_month(y, (unsigned)m)) return false;
  *days = dk__days_from_civil(y, (unsigned)m, (unsigned)d);
  return true;
}

dk_status dk__parse_date(int32_t *out, const char *s, size_t n, dk_error *err) {
  size_t pos = 0;
  int64_t days;
  while (pos < n && s[pos] == ' ') pos++;
  size_t end = n;
  while (end > pos && s[end - 1] == ' ') end--;
  if (!parse_ymd(s, end, &pos, &days) || pos != end || days < INT32_MIN || days > INT32_MAX)
    return dk__error_set(err, DK_INVALID, "invalid date '%.*s' (want yyyy-mm-dd)",
                         (int)DK_MIN(n, 64), s);
  *out = (int32_t)days;
  return DK_OK;
}

dk_status dk__parse_timestamp(int64_t *out, bool *had_zone, const char *s, size_t n,
                              dk_error *err) {
  size_t pos = 0;
  int64_t days, hh = 0, mi = 0, ss = 0, frac = 0, off = 0;
  *had_zone = false;
  while (pos < n && s[pos] == ' ') pos++;
  while (n > pos && s[n - 1] == ' ') n--;
  if (!parse_ymd(s, n, &pos, &days)) goto bad;
  if (pos < n && (s[pos] == ' ' || s[pos] == 'T' || s[pos] == 't')) {
    pos++;
    if (read_digits(s, n, &pos, 2, &hh) < 1) goto bad;
    if (pos >= n || s[pos] != ':') goto bad;
    pos++;
    if (read_digits(s, n, &pos, 2, &mi) < 1) goto bad;
    if (pos < n && s[pos] == ':') {
      pos++;
      if (read_digits(s, n, &pos, 2, &ss) < 1) goto bad;
      if (pos < n && s[pos] == '.') {
        pos++;
        int k = 0;
        while (pos < n && s[pos] >= '0' && s[pos] <= '9') {
          if (k < 6) frac = frac * 10 + (s[pos] - '0');
          k++;
          pos++;
        }
        if (k == 0 || k > 9) goto bad;
        for (; k < 6; k++) frac *= 10;
      }
    }
    if (hh > 23 || mi > 59 || ss > 59) goto bad;
    /* zone */
    if (pos < n) {
      if (s[pos] == ' ' && n - pos == 4 && !memcmp(s + pos, " UTC", 4)) {
        pos = n;
        *had_zone = true;
      } else if (s[pos] == 'Z' || s[pos] == 'z') {
        pos++;
        *had_zone = true;
      } else if (s[pos] == '+' || s[pos] == '-') {
        int sign = s[pos] == '-' ? -1 : 1;
        int64_t oh, om = 0;
        pos++;
        if (read_digits(s, n, &pos, 2, &oh) != 2) goto bad;
        if (pos < n && s[pos] == ':') pos++;
        if (pos < n && read_digits(s, n, &pos, 2, &om) != 2) goto bad;
        if (oh > 18 || om > 59) goto bad;
        off = sign * (oh * 3600 + om * 60);
        *had_zone = true;
      }
    }
  }
  if (pos != n) goto bad;
  {
    dk_i128 us = ((dk_i128)(days * 86400 + hh * 3600 + mi * 60 + ss) - off) * 1000000 + frac;
    if (us < INT64_MIN || us > INT64_MAX) goto bad;
    *out = (int64_t)us;
  }
  return DK_OK;
bad:
  return dk__error_set(err, DK_INVALID,
                       "invalid timestamp '%.*s' (want yyyy-mm-dd[ hh:mm:ss[.ffffff]][Z|+hh:mm])",
                       (int)DK_MIN(n, 64), s);
}

void dk__format_date(char *buf, size_t cap, int64_t days) {
  int64_t y;
  unsigned m, d;
  dk__civil_from_days(days, &y, &m, &d);
  if (y >= 0 && y <= 9999)
    snprintf(buf, cap, "%04d-%02u-%02u", (int)y, m, d);
  else
    snprintf(buf, cap, "%s%04lld-%02u-%02u", y < 0 ? "-" : "+", (long long)(y < 0 ? -y : y), m,
             d);
}

void dk__format_timestamp(char *buf, size_t cap, int64_t micros) {
  int64_t secs = micros / 1000000, us = micros % 1000000;
  if (us < 0) {
    us += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400, sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  char date[48];
  dk__format_date(date, sizeof date, days);
  if (us)
    snprintf(buf, cap, "%s %02d:%02d:%02d.%06d", date, (int)(sod / 3600), (int)(sod / 60 % 60),
             (int)(sod % 60), (int)us);
  else
    snprintf(buf, cap, "%s %02d:%02d:%02d", date, (int)(sod / 3600), (int)(sod / 60 % 60),
             (int)(sod % 60));
}

/* ---- decimals --------------------------------------------------------------------------- */

dk_i128 dk__pow10(int k) {
  dk_i128 p = 1;
  for (int i = 0; i < k; i++) p *= 10;
  return p;
}

int dk__i128_digits(dk_i128 v) {
  unsigned __int128 u = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  int k = 1;
  while (u >= 10) {
    u /= 10;
    k++;
  }
  return k;
}

bool dk__i128_fits_precision(dk_i128 v, int precision) {
  return precision >= 1 && precision <= 38 && dk__i128_digits(v) <= precision;
}

/* Splits decimal text into mantissa digits (<= 38 significant), fraction digit count and
** exponent. Returns false on syntax error or too many digits. */
static bool split_decimal(const char *s, size_t n, dk_i128 *mant, int *frac_digits,
                          int64_t *exp10) {
  size_t pos = 0;
  bool neg = false, any = false;
  int sig = 0, fd = 0;
  dk_i128 m = 0;
  if (pos < n && (s[pos] == '-' || s[pos] == '+')) neg = s[pos++] == '-';
  while (pos < n && isdigit((unsigned char)s[pos])) {
    any = true;
    if (m != 0 || s[pos] != '0') sig++;
    if (sig > 38) return false;
    m = m * 10 + (s[pos++] - '0');
  }
  if (pos < n && s[pos] == '.') {
    pos++;
    while (pos < n && isdigit((unsigned char)s[pos])) {
      any = true;
      if (m != 0 || s[pos] != '0') sig++;
      if (sig > 38) return false;
      m = m * 10 + (s[pos++] - '0');
      fd++;
      if (fd > 400) return false;
    }
  }
  if (!any) return false;
  int64_t e = 0;
  if (pos < n && (s[pos] == 'e' || s[pos] == 'E')) {
    pos++;
    bool eneg = false;
    if (pos < n && (s[pos] == '-' || s[pos] == '+')) eneg = s[pos++] == '-';
    int64_t ev;
    int k = read_digits(s, n, &pos, 4, &ev);
    if (k == 0) return false;
    e = eneg ? -ev : ev;
  }
  if (pos != n) return false;
  *mant = neg ? -m : m;
  *frac_digits = fd;
  *exp10 = e;
  return true;
}

dk_status dk__parse_decimal(dk_i128 *out, const char *s, size_t n, int scale, dk_error *err) {
  dk_i128 m;
  int fd;
  int64_t e;
  if (!split_decimal(s, n, &m, &fd, &e))
    return dk__error_set(err, DK_INVALID, "invalid decimal '%.*s'", (int)DK_MIN(n, 64), s);
  int64_t shift = (int64_t)scale + e - fd; /* value = m * 10^(e - fd); unscaled = m*10^shift */
  if (m == 0) {
    *out = 0;
    return DK_OK;
  }
  if (shift >= 0) {
    if (shift > 38 || dk__i128_digits(m) + shift > 38)
      return dk__error_set(err, DK_INVALID, "decimal '%.*s' exceeds 38 digits at scale %d",
                           (int)DK_MIN(n, 64), s, scale);
    *out = m * dk__pow10((int)shift);
  } else {
    if (-shift > 38)
      return dk__error_set(err, DK_INVALID, "decimal '%.*s' is not exact at scale %d",
                           (int)DK_MIN(n, 64), s, scale);
    dk_i128 p = dk__pow10((int)-shift);
    if (m % p != 0)
      return dk__error_set(err, DK_INVALID, "decimal '%.*s' is not exact at scale %d",
                           (int)DK_MIN(n, 64), s, scale);
    *out = m / p;
  }
  return DK_OK;
}

dk_status dk__parse_decimal_infer(dk_i128 *out, int32_t *precision, int32_t *scale,
                                  const char *s, size_t n, dk_error *err) {
  dk_i128 m;
  int fd;
  int64_t e;
  if (!split_decimal(s, n, &m, &fd, &e))
    return dk__error_set(err, DK_INVALID, "invalid decimal '%.*s'", (int)DK_MIN(n, 64), s);
  int64_t sc = fd - e;
  if (sc < 0) {
    if (m != 0 && dk__i128_digits(m) - sc > 38)
      return dk__error_set(err, DK_INVALID, "decimal '%.*s' exceeds 38 digits",
                           (int)DK_MIN(n, 64), s);
    m *= dk__pow10((int)-sc);
    sc = 0;
  }
  if (sc > 38)
    return dk__error_set(err, DK_INVALID, "decimal '%.*s' has more than 38 fraction digits",
                         (int)DK_MIN(n, 64), s);
  int p = dk__i128_digits(m);
  if (p < sc) p = (int)sc;
  if (p > 38)
    return dk__error_set(err, DK_INVALID, "decimal '%.*s' exceeds 38 digits", (int)DK_MIN(n, 64),
                         s);
  *out = m;
  *precision = p;
  *scale = (int32_t)sc;
  return DK_OK;
}

void dk__format_decimal(char *buf, size_t cap, dk_i128 v, int scale) {
  char digits[48];
  int nd = 0;
  unsigned __int128 u = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  do {
    digits[nd++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  while (nd <= scale) digits[nd++] = '0';
  char tmp[96];
  size_t k = 0;
  if (v < 0) tmp[k++] = '-';
  for (int i = nd - 1; i >= 0; i--) {
    tmp[k++] = digits[i];
    if (i == scale && scale > 0) tmp[k++] = '.';
  }
  tmp[k] = 0;
  snprintf(buf, cap, "%s", tmp);
}

/* ---- UTF-8 ------------------------------------------------------------------------------ */

bool dk__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int len;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < (size_t)len) return false;
    for (int k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += (size_t)len;
  }
  return true;
}
