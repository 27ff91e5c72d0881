/*
** json_write.c — JSON writer of json.h: escaped strings, compact values, and doubles/floats
** printed exactly like Python's repr(float).
**
** Strings (RFC 8259 section 7): '"' and '\\' get a backslash, the controls \b \f \n \r \t
** their short escapes, other bytes < 0x20 become \u00xx (lowercase hex, as Python's json
** module writes them); everything else, including valid non-ASCII UTF-8, passes through.
** Invalid UTF-8 input is DK_INVALID (we never write text a strict reader would reject).
**
** Doubles (the rule of Python's float_repr, "repr" style of PyOS_double_to_string):
**   1. digits = the shortest decimal that converts back to the same double; among several
**      of that length the one nearest the value. Found by printing with %.{p}e and checking
**      with strtod (C locale); for normal doubles p = 15 (trailing zeros stripped; with
**      <= 15 digits the correctly rounded 15-digit text is the shortest one), else 16, else
**      17; when the 16-digit rounding fails (only possible at a power of two, whose lower
**      rounding interval is half as wide) its neighbour on the other side is also tried.
**      Subnormals search p = 1..17 in order.
**   2. with decpt = position of the decimal point relative to the digits (value = 0.DIGITS
**      x 10^decpt): exponent form when decpt <= -4 or decpt > 16, else positional.
**      Positional always has a fraction ("1.0", "100.0", "0.001"); exponent form is
**      "d[.ddd]e[+-]XX" with at least two exponent digits ("1e+16", "1.5e-07").
**   3. -0.0 prints "-0.0"; NaN/+Inf/-Inf (not JSON numbers) print as the JSON strings
**      "NaN", "Infinity", "-Infinity".
** Floats are widened to double and printed by the same rule (the value of
** repr(float(numpy.float32(x))), e.g. 0.23399999737739563 for 0.234f).
*/
#include "codec/json/json.h"

#include <math.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json_internal.h"

/* ---- strings --------------------------------------------------------------------------- */

dk_status dk__json_write_str(dk_buf *b, const char *s, size_t n, dk_error *err) {
  static const char hex[] = "0123456789abcdef";
  DK_RETURN_NOT_OK(dk__buf_reserve(b, n + 2, err));
  b->data[b->len++] = '"';
  const char *p = s, *end = s + n;
  while (p < end) {
    const char *q = dk__json_find_special(p, end);
    if (q > p) DK_RETURN_NOT_OK(dk__buf_append(b, p, (size_t)(q - p), err));
    if (q >= end) break;
    unsigned char c = (unsigned char)*q;
    char esc[6];
    size_t elen = 2;
    esc[0] = '\\';
    switch (c) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case '\b': esc[1] = 'b'; break;
      case '\f': esc[1] = 'f'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      default:
        if (c < 0x20) {
          esc[1] = 'u';
          esc[2] = '0';
          esc[3] = '0';
          esc[4] = hex[c >> 4];
          esc[5] = hex[c & 15];
          elen = 6;
        } else {
          size_t k = dk__json_utf8_seq((const unsigned char *)q, (const unsigned char *)end);
          if (!k)
            return dk__error_set(err, DK_INVALID,
                                 "JSON writer: invalid UTF-8 at byte %zu of a string",
                                 (size_t)(q - s));
          DK_RETURN_NOT_OK(dk__buf_append(b, q, k, err));
          p = q + k;
          continue;
        }
    }
    DK_RETURN_NOT_OK(dk__buf_append(b, esc, elen, err));
    p = q + 1;
  }
  return dk__buf_putc(b, '"', err);
}

/* ---- values ---------------------------------------------------------------------------- */

static dk_status write_value(dk_buf *b, const dk_json_value *v, int depth, dk_error *err) {
  if (depth > DK_JSON_MAX_DEPTH)
    return dk__error_set(err, DK_INVALID, "JSON writer: nesting deeper than %d",
                         DK_JSON_MAX_DEPTH);
  switch (v->type) {
    case DK_JSON_NULL: return dk__buf_append(b, "null", 4, err);
    case DK_JSON_BOOL: return v->u.b ? dk__buf_append(b, "true", 4, err)
                                     : dk__buf_append(b, "false", 5, err);
    case DK_JSON_NUMBER: return dk__buf_append(b, v->u.num, v->len, err);
    case DK_JSON_STRING: return dk__json_write_str(b, v->u.str, v->len, err);
    case DK_JSON_ARRAY:
      DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
      for (uint32_t i = 0; i < v->len; i++) {
        if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        DK_RETURN_NOT_OK(write_value(b, &v->u.items[i], depth + 1, err));
      }
      return dk__buf_putc(b, ']', err);
    case DK_JSON_OBJECT:
      DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
      for (uint32_t i = 0; i < v->len; i++) {
        const dk_json_member *m = &v->u.members[i];
        if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        DK_RETURN_NOT_OK(dk__json_write_str(b, m->key, m->klen, err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
        DK_RETURN_NOT_OK(write_value(b, &m->value, depth + 1, err));
      }
      return dk__buf_putc(b, '}', err);
  }
  return dk__error_set(err, DK_INVALID, "JSON writer: bad value type %d", (int)v->type);
}

dk_status dk__json_write_value(dk_buf *b, const dk_json_value *v, dk_error *err) {
  if (!v) return dk__buf_append(b, "null", 4, err);
  return write_value(b, v, 0, err);
}

/* ---- doubles --------------------------------------------------------------------------- */

/* A decimal: value = 0.digits x 10^decpt, ndig significant digits (no trailing zeros). */
typedef struct decimal {
  char digits[24];
  int ndig;
  int decpt;
} decimal;

/* Correctly rounded p-digit decimal of x (> 0) via printf %.*e. */
static void round_digits(double x, int p, decimal *d) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", p - 1, x);
  const char *s = buf;
  int n = 0;
  /* digits up to 'e'; skip the locale's decimal point, whatever it is */
  for (; *s && *s != 'e' && *s != 'E'; s++)
    if (*s >= '0' && *s <= '9' && n < (int)sizeof d->digits - 1) d->digits[n++] = *s;
  int e = (*s == 'e' || *s == 'E') ? atoi(s + 1) : 0;
  while (n > 1 && d->digits[n - 1] == '0') n--;
  d->digits[n] = 0;
  d->ndig = n;
  d->decpt = e + 1;
}

/* The double nearest to the decimal (C locale). */
static double decimal_value(const decimal *d) {
  char buf[64];
  snprintf(buf, sizeof buf, "%se%d", d->digits, d->decpt - d->ndig);
  return dk__json_strtod(buf, NULL);
}

static bool same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Steps a p-digit decimal by one unit in its last place (up or down) and strips zeros. */
static void step_decimal(decimal *d, int p, bool up) {
  char t[24];
  int n = d->ndig;
  memcpy(t, d->digits, (size_t)n);
  for (; n < p; n++) t[n] = '0'; /* back to p digits */
  int exp = d->decpt;
  int i = p - 1;
  if (up) {
    while (i >= 0 && t[i] == '9') t[i--] = '0';
    if (i >= 0) {
      t[i]++;
    } else { /* 99..9 -> 100..0 with one more power of ten */
      t[0] = '1';
      exp++;
    }
  } else {
    while (i >= 0 && t[i] == '0') t[i--] = '9';
    t[i]--; /* t[0] >= '1', so i >= 0 here */
    if (t[0] == '0') { /* 100..0 -> 099..9: renormalise to p nines one decade lower */
      memset(t, '9', (size_t)p);
      exp--;
    }
  }
  while (p > 1 && t[p - 1] == '0') p--;
  memcpy(d->digits, t, (size_t)p);
  d->digits[p] = 0;
  d->ndig = p;
  d->decpt = exp;
}

/* Tries p digits: the correctly rounded decimal, then (if asked) its other-side neighbour. */
static bool try_digits(double x, int p, bool neighbour, decimal *d) {
  round_digits(x, p, d);
  double y = decimal_value(d);
  if (same_double(y, x)) return true;
  if (!neighbour) return false;
  decimal nb = *d;
  step_decimal(&nb, p, y < x);
  if (same_double(decimal_value(&nb), x)) {
    *d = nb;
    return true;
  }
  return false;
}

static void shortest(double x, decimal *d) {
  if (x < DBL_MIN) { /* subnormal: precision varies, search upwards */
    for (int p = 1; p < 17; p++)
      if (try_digits(x, p, false, d)) return;
    round_digits(x, 17, d);
    return;
  }
  if (try_digits(x, 15, false, d)) return;
  if (try_digits(x, 16, true, d)) return;
  round_digits(x, 17, d);
}

/* Formats |x| (finite, non-zero) per Python repr into out; returns the length. */
static size_t format_repr(const decimal *d, bool neg, char *out) {
  char *o = out;
  if (neg) *o++ = '-';
  int n = d->ndig, decpt = d->decpt;
  if (decpt <= -4 || decpt > 16) {
    *o++ = d->digits[0];
    if (n > 1) {
      *o++ = '.';
      memcpy(o, d->digits + 1, (size_t)(n - 1));
      o += n - 1;
    }
    int e = decpt - 1;
    *o++ = 'e';
    *o++ = e < 0 ? '-' : '+';
    if (e < 0) e = -e;
    if (e >= 100) *o++ = (char)('0' + e / 100);
    *o++ = (char)('0' + (e / 10) % 10);
    *o++ = (char)('0' + e % 10);
  } else if (decpt <= 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -decpt; i++) *o++ = '0';
    memcpy(o, d->digits, (size_t)n);
    o += n;
  } else if (decpt < n) {
    memcpy(o, d->digits, (size_t)decpt);
    o += decpt;
    *o++ = '.';
    memcpy(o, d->digits + decpt, (size_t)(n - decpt));
    o += n - decpt;
  } else {
    memcpy(o, d->digits, (size_t)n);
    o += n;
    for (int i = n; i < decpt; i++) *o++ = '0';
    *o++ = '.';
    *o++ = '0';
  }
  return (size_t)(o - out);
}

/* Python repr text of a double (or a JSON string literal for NaN/Inf) into out[64]. */
static size_t double_repr(double x, char *out) {
  if (isnan(x)) {
    memcpy(out, "\"NaN\"", 5);
    return 5;
  }
  if (isinf(x)) {
    if (x > 0) {
      memcpy(out, "\"Infinity\"", 10);
      return 10;
    }
    memcpy(out, "\"-Infinity\"", 11);
    return 11;
  }
  bool neg = signbit(x) != 0;
  if (x == 0) {
    if (neg) {
      memcpy(out, "-0.0", 4);
      return 4;
    }
    memcpy(out, "0.0", 3);
    return 3;
  }
  if (fabs(x) < 9007199254740992.0 && x == (double)(int64_t)x) {
    /* integral and below 2^53: every integer here is a distinct double, so the integer's own
     * digits are the shortest round-trip text, and with < 17 digits Python prints "N.0" */
    int n = snprintf(out, 64, "%" PRId64 ".0", (int64_t)x);
    return (size_t)n;
  }
  decimal d;
  shortest(fabs(x), &d);
  return format_repr(&d, neg, out);
}

dk_status dk__json_write_double(dk_buf *b, double d, dk_error *err) {
  char tmp[64];
  size_t n = double_repr(d, tmp);
  return dk__buf_append(b, tmp, n, err);
}

static bool same_float(double a, float f) {
  float g = (float)a;
  return memcmp(&g, &f, sizeof f) == 0;
}

/* Shortest decimal that reads back as f through float32 rounding (at most 9 digits). */
static void shortest_float(float f, decimal *d) {
  double x = (double)f;
  for (int p = 1; p < 9; p++) {
    round_digits(x, p, d);
    double y = decimal_value(d);
    if (same_float(y, f)) return;
    decimal nb = *d;
    step_decimal(&nb, p, y < x);
    if (same_float(decimal_value(&nb), f)) {
      *d = nb;
      return;
    }
  }
  round_digits(x, 9, d);
}

dk_status dk__json_write_float(dk_buf *b, float f, dk_error *err) {
  double x = (double)f;
  if (!isfinite(x) || x == 0 || (fabs(x) < 16777216.0 && x == (double)(int64_t)x))
    return dk__json_write_double(b, x, err); /* same text for these */
  char tmp[64];
  decimal d;
  shortest_float(fabsf(f), &d);
  size_t n = format_repr(&d, signbit(x) != 0, tmp);
  return dk__buf_append(b, tmp, n, err);
}
