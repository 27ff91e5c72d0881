/*
** variant.c — renders Variant values (Parquet "VariantEncoding.md": a metadata dictionary
** plus a self-describing value) as JSON text, for the row printer. Every offset and length is
** checked against the bytes present; malformed input is DK_CORRUPT, never a crash.
*/
#include <inttypes.h>
#include <stdio.h>

#include "arrow/json.h"
#include "codec/json/json.h"

typedef struct vmeta {
  const uint8_t *p;
  size_t len;
  int osz;          /* offset size */
  uint64_t n;       /* dictionary size */
  size_t offs_at;   /* first offset */
  size_t strs_at;   /* first string byte */
} vmeta;

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static dk_status bad(dk_error *err, const char *what, size_t at) {
  return dk__error_set(err, DK_CORRUPT, "variant: %s at byte %zu", what, at);
}

static dk_status meta_open(vmeta *m, const uint8_t *p, size_t len, dk_error *err) {
  if (len < 1) return bad(err, "empty metadata", 0);
  if ((p[0] & 0x0f) != 1) return bad(err, "unsupported metadata version", 0);
  m->p = p;
  m->len = len;
  m->osz = ((p[0] >> 6) & 3) + 1;
  if (len < 1 + (size_t)m->osz) return bad(err, "truncated metadata", 1);
  m->n = le(p + 1, m->osz);
  if (m->n > len) return bad(err, "dictionary size larger than the metadata", 1);
  m->offs_at = 1 + (size_t)m->osz;
  if ((len - m->offs_at) / (size_t)m->osz < m->n + 1) return bad(err, "truncated offsets", m->offs_at);
  m->strs_at = m->offs_at + (size_t)(m->n + 1) * (size_t)m->osz;
  return DK_OK;
}

static dk_status meta_key(const vmeta *m, uint64_t id, const uint8_t **s, size_t *n, dk_error *err) {
  if (id >= m->n) return bad(err, "field id outside the dictionary", 0);
  uint64_t a = le(m->p + m->offs_at + id * (size_t)m->osz, m->osz);
  uint64_t b = le(m->p + m->offs_at + (id + 1) * (size_t)m->osz, m->osz);
  if (a > b || b > m->len - m->strs_at) return bad(err, "bad dictionary offset", m->offs_at);
  *s = m->p + m->strs_at + a;
  *n = (size_t)(b - a);
  return DK_OK;
}

static void civil(int64_t z, int64_t *y, unsigned *mo, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *mo = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*mo <= 2);
}

static dk_status put_ts(dk_buf *b, int64_t v, int64_t per_sec, int utc, dk_error *err) {
  int64_t sec = v / per_sec, frac = v % per_sec;
  if (frac < 0) {
    frac += per_sec;
    sec--;
  }
  int64_t days = sec / 86400, sod = sec % 86400;
  if (sod < 0) {
    sod += 86400;
    days--;
  }
  int64_t y;
  unsigned mo, d;
  civil(days, &y, &mo, &d);
  return dk__buf_printf(b, err, "\"%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%0*" PRId64 "%s\"", y, mo,
                       d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
                       per_sec == 1000000 ? 6 : 9, frac, utc ? "+00:00" : "");
}

static dk_status put_dec(dk_buf *b, const uint8_t *p, int w, int scale, dk_error *err) {
  __int128 v = 0;
  for (int i = w - 1; i >= 0; i--) v = (v << 8) | p[i];
  if (w < 16) { /* sign-extend */
    int shift = 128 - 8 * w;
    v = (__int128)((unsigned __int128)v << shift) >> shift;
  }
  char digits[64];
  int n = 0;
  int neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  do {
    digits[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u && n < 60);
  if (scale < 0 || scale > 38) return bad(err, "bad decimal scale", 0);
  while (n <= scale) digits[n++] = '0';
  if (neg) DK_RETURN_NOT_OK(dk__buf_putc(b, '-', err));
  for (int i = n - 1; i >= 0; i--) {
    DK_RETURN_NOT_OK(dk__buf_putc(b, digits[i], err));
    if (i == scale && scale > 0) DK_RETURN_NOT_OK(dk__buf_putc(b, '.', err));
  }
  return DK_OK;
}

static dk_status put_b64(dk_buf *b, const uint8_t *s, size_t n, dk_error *err) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
                 (i + 2 < n ? s[i + 2] : 0);
    char o[4] = {t[v >> 18], t[(v >> 12) & 63], i + 1 < n ? t[(v >> 6) & 63] : '=',
                 i + 2 < n ? t[v & 63] : '='};
    DK_RETURN_NOT_OK(dk__buf_append(b, o, 4, err));
  }
  return dk__buf_putc(b, '"', err);
}

static dk_status value_json(dk_buf *b, const vmeta *m, const uint8_t *p, size_t len, int depth,
                            dk_error *err) {
  if (depth > 128) return bad(err, "nested too deeply", 0);
  if (len < 1) return bad(err, "empty value", 0);
  int basic = p[0] & 3, hdr = p[0] >> 2;
  if (basic == 1) { /* short string */
    if ((size_t)hdr > len - 1) return bad(err, "truncated short string", 1);
    return dk__json_write_str(b, (const char *)p + 1, (size_t)hdr, err);
  }
  if (basic == 2 || basic == 3) {
    int osz = (hdr & 3) + 1;
    int isz = basic == 2 ? ((hdr >> 2) & 3) + 1 : 0;
    int large = basic == 2 ? (hdr >> 4) & 1 : (hdr >> 2) & 1;
    size_t at = 1, nsz = large ? 4 : 1;
    if (len - at < nsz) return bad(err, "truncated element count", at);
    uint64_t n = le(p + at, (int)nsz);
    at += nsz;
    if (n > len) return bad(err, "element count larger than the value", at);
    size_t ids_at = at;
    if ((len - at) / (isz ? (size_t)isz : 1) < (isz ? n : 0)) return bad(err, "truncated field ids", at);
    at += (size_t)n * (size_t)isz;
    size_t offs_at = at;
    if ((len - at) / (size_t)osz < n + 1) return bad(err, "truncated offsets", at);
    size_t data_at = at + (size_t)(n + 1) * (size_t)osz;
    size_t dlen = len - data_at;
    DK_RETURN_NOT_OK(dk__buf_putc(b, basic == 2 ? '{' : '[', err));
    for (uint64_t i = 0; i < n; i++) {
      if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
      if (basic == 2) {
        const uint8_t *ks = NULL;
        size_t kn = 0;
        DK_RETURN_NOT_OK(meta_key(m, le(p + ids_at + i * (size_t)isz, isz), &ks, &kn, err));
        DK_RETURN_NOT_OK(dk__json_write_str(b, (const char *)ks, kn, err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
      }
      uint64_t o = le(p + offs_at + i * (size_t)osz, osz);
      /* a child's size is not stored; it runs to the end of the data area at most */
      if (o >= dlen) return bad(err, "element offset outside the value", offs_at);
      DK_RETURN_NOT_OK(value_json(b, m, p + data_at + o, dlen - (size_t)o, depth + 1, err));
    }
    return dk__buf_putc(b, basic == 2 ? '}' : ']', err);
  }
  /* primitive */
  static const signed char size[21] = {0, 0, 0, 1, 2, 4, 8, 8, 5, 9, 17, 4, 8, 8, 4, -1, -1, 8, 8, 8, 16};
  if (hdr > 20) return bad(err, "unknown primitive type", 0);
  const uint8_t *v = p + 1;
  size_t vl = len - 1;
  if (size[hdr] >= 0 && vl < (size_t)size[hdr]) return bad(err, "truncated primitive", 1);
  switch (hdr) {
    case 0: return dk__buf_puts(b, "null", err);
    case 1: return dk__buf_puts(b, "true", err);
    case 2: return dk__buf_puts(b, "false", err);
    case 3: return dk__buf_printf(b, err, "%d", (int)(int8_t)v[0]);
    case 4: return dk__buf_printf(b, err, "%d", (int)(int16_t)le(v, 2));
    case 5: return dk__buf_printf(b, err, "%" PRId32, (int32_t)le(v, 4));
    case 6: return dk__buf_printf(b, err, "%" PRId64, (int64_t)le(v, 8));
    case 7: {
      uint64_t u = le(v, 8);
      double d;
      memcpy(&d, &u, 8);
      return dk__json_write_double(b, d, err);
    }
    case 8: return put_dec(b, v + 1, 4, v[0], err);
    case 9: return put_dec(b, v + 1, 8, v[0], err);
    case 10: return put_dec(b, v + 1, 16, v[0], err);
    case 11: {
      int64_t y;
      unsigned mo, d;
      civil((int32_t)le(v, 4), &y, &mo, &d);
      return dk__buf_printf(b, err, "\"%04" PRId64 "-%02u-%02u\"", y, mo, d);
    }
    case 12: return put_ts(b, (int64_t)le(v, 8), 1000000, 1, err);
    case 13: return put_ts(b, (int64_t)le(v, 8), 1000000, 0, err);
    case 14: {
      uint32_t u = (uint32_t)le(v, 4);
      float f;
      memcpy(&f, &u, 4);
      return dk__json_write_float(b, f, err);
    }
    case 15:
    case 16: {
      if (vl < 4) return bad(err, "truncated length", 1);
      uint64_t n = le(v, 4);
      if (n > vl - 4) return bad(err, "string/binary overruns the value", 1);
      if (hdr == 16) return dk__json_write_str(b, (const char *)v + 4, (size_t)n, err);
      return put_b64(b, v + 4, (size_t)n, err);
    }
    case 17: {
      int64_t us = (int64_t)le(v, 8);
      return dk__buf_printf(b, err, "\"%02d:%02d:%02d.%06d\"", (int)(us / 3600000000LL),
                           (int)(us / 60000000 % 60), (int)(us / 1000000 % 60), (int)(us % 1000000));
    }
    case 18: return put_ts(b, (int64_t)le(v, 8), 1000000000, 1, err);
    case 19: return put_ts(b, (int64_t)le(v, 8), 1000000000, 0, err);
    default: { /* 20: uuid, big endian */
      static const char hx[] = "0123456789abcdef";
      char o[38];
      int k = 0;
      o[k++] = '"';
      for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) o[k++] = '-';
        o[k++] = hx[v[i] >> 4];
        o[k++] = hx[v[i] & 15];
      }
      o[k++] = '"';
      return dk__buf_append(b, o, (size_t)k, err);
    }
  }
}

dk_status dk__variant_to_json(dk_buf *out, const uint8_t *metadata, size_t mlen,
                             const uint8_t *value, size_t vlen, dk_error *err) {
  vmeta m;
  DK_RETURN_NOT_OK(meta_open(&m, metadata, mlen, err));
  return value_json(out, &m, value, vlen, 0, err);
}
