/*
** json_internal.h — helpers shared by json_parse.c and json_write.c (not API).
*/
#ifndef DK_CODEC_JSON_INTERNAL_H
#define DK_CODEC_JSON_INTERNAL_H

#include <locale.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or values
 * above U+10FFFF), 1 for ASCII, 0 when invalid or truncated before end. */
size_t dk__json_utf8_seq(const unsigned char *p, const unsigned char *end);
/* The "C" locale (created once, thread-safe); (locale_t)0 if it could not be created. */
locale_t dk__json_c_locale(void);
/* strtod in the "C" locale, whatever the process locale is. */
double dk__json_strtod(const char *s, char **endp);

#endif
