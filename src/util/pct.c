/*
** pct.c — percent-decoding (RFC 3986 §2.1), the one decoder of the library: log paths
** (src/log/paths.c, src/io/uri.c: PROTOCOL.md "Add File and Remove File" paths are
** percent-encoded URIs) and S3 listing keys (src/storage/s3, ListObjectsV2 with
** encoding-type=url, where a space may also come as '+'). It sits in util because io and
** storage, which both decode, are siblings that do not include each other.
*/
#include <string.h>

#include "util/util.h"

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int dk__pct_escape_at(const char *s, size_t n, size_t i) {
  if (i + 2 >= n) return -1;
  int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
  if (h < 0 || l < 0) return -1;
  return h << 4 | l;
}

size_t dk__pct_decode_into(char *dst, const char *s, size_t n, int flags) {
  const char *pct = memchr(s, '%', n);
  if (!pct && !(flags & DK__PCT_PLUS_SPACE)) { /* the common case: nothing to decode */
    if (dst != s) memcpy(dst, s, n);
    dst[n] = 0;
    return n;
  }
  size_t k = pct ? (size_t)(pct - s) : 0;
  if (dst != s) memcpy(dst, s, k);
  for (size_t i = k; i < n; i++) { /* (writes never pass reads: dst may be s) */
    int c = s[i] == '%' ? dk__pct_escape_at(s, n, i) : -1;
    if (c >= 0) {
      dst[k++] = (char)c;
      i += 2;
    } else if (s[i] == '+' && (flags & DK__PCT_PLUS_SPACE)) {
      dst[k++] = ' ';
    } else {
      dst[k++] = s[i];
    }
  }
  dst[k] = 0;
  return k;
}
