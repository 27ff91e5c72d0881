/*
** values.h — Delta values to and from text (src/protocol/values.c; not API).
*/
#ifndef DK_PROTOCOL_VALUES_H
#define DK_PROTOCOL_VALUES_H

#include <stdbool.h>

#include "util/util.h"

typedef __int128 dk_i128;

/* Days since epoch for a proleptic Gregorian date. */
int64_t dk__days_from_civil(int64_t y, unsigned m, unsigned d);
void dk__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
/* "[+-]yyyy-m[m]-d[d]" (surrounding spaces allowed). */
dk_status dk__parse_date(int32_t *out, const char *s, size_t n, dk_error *err);
/* "yyyy-mm-dd[( |T)hh:mm[:ss[.f{1,9}]]][Z|z|(+|-)hh[:mm]| UTC]"; zone offsets are applied
** when *had_zone is set; sub-microsecond digits are truncated. */
dk_status dk__parse_timestamp(int64_t *out, bool *had_zone, const char *s, size_t n,
                              dk_error *err);
/* Formats days / micros into buf (>= 40 bytes): "2024-01-01", "2024-01-01 00:00:00[.ffffff]". */
void dk__format_date(char *buf, size_t cap, int64_t days);
void dk__format_timestamp(char *buf, size_t cap, int64_t micros);
/* Decimal text "[-+]digits[.digits][e[-+]digits]" into unscaled at `scale`; fails with
** DK_INVALID if not exact at that scale or more than 38 digits. */
dk_status dk__parse_decimal(dk_i128 *out, const char *s, size_t n, int scale, dk_error *err);
/* Decimal text into unscaled + inferred (precision, scale), Spark rules. */
dk_status dk__parse_decimal_infer(dk_i128 *out, int32_t *precision, int32_t *scale,
                                  const char *s, size_t n, dk_error *err);
void dk__format_decimal(char *buf, size_t cap, dk_i128 v, int scale);
int dk__i128_digits(dk_i128 v); /* decimal digits of |v| (0 -> 1) */
bool dk__i128_fits_precision(dk_i128 v, int precision);
dk_i128 dk__pow10(int k);       /* k in 0..38 */
bool dk__utf8_valid(const char *s, size_t n);

#endif /* DK_PROTOCOL_VALUES_H */
