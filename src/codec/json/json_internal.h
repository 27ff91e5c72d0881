/*
** json_internal.h — helpers shared by json_parse.c and json_write.c (not API).
*/
#ifndef DK_CODEC_JSON_INTERNAL_H
#define DK_CODEC_JSON_INTERNAL_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#  include <emmintrin.h>
#endif

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or values
 * above U+10FFFF), 1 for ASCII, 0 when invalid or truncated before end. */
size_t dk__json_utf8_seq(const unsigned char *p, const unsigned char *end);
/* The "C" locale (created once, thread-safe); (locale_t)0 if it could not be created. */
locale_t dk__json_c_locale(void);
/* strtod in the "C" locale, whatever the process locale is. */
double dk__json_strtod(const char *s, char **endp);

/* First byte in [p, end) that is '"', '\\', < 0x20 or >= 0x80; end if none.
 * 16 bytes per step with SSE2, 8 with SWAR on other little-endian targets. */
static inline const char *dk__json_find_special(const char *p, const char *end) {
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8('"');
  const __m128i bs = _mm_set1_epi8('\\');
  const __m128i sp = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them and controls */
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
                             _mm_cmplt_epi8(x, sp));
    unsigned mask = (unsigned)_mm_movemask_epi8(m);
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t xq = x ^ (ones * '"'), xb = x ^ (ones * '\\');
    uint64_t m = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((x - ones * 0x20) & ~x) | x;
    m &= highs;
    /* borrows only create false hits above a true hit, so the lowest one is exact */
    if (m) return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
    p++;
  }
  return end;
}

#endif /* DK_CODEC_JSON_INTERNAL_H */
