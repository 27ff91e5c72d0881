/*
** json.c — Arrow values as JSON text: dk's row encoding (include/dk/arrow_json.h,
** dk_arrow_json_*). Reads buffers per the Arrow Columnar Format (validity, offsets, child
** arrays, array offsets honoured at every level). The CLI's CSV/TABLE/JSON-lines printer is
** tools/cli/print.c, on top of this encoder.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/json.h"
#include "dk/arrow_json.h"
#include "codec/json/json.h"


typedef struct pctx {
  dk_buf *b;
  dk_error *err;
} pctx;

/* Parsed types of a schema tree, built once per batch (no per-value format parsing). */
typedef struct dk_pplan pplan;
struct dk_pplan {
  dk_atype t;
  int64_t n_children;
  pplan *children;
};

static void plan_free(pplan *p) {
  for (int64_t i = 0; i < p->n_children; i++) plan_free(&p->children[i]);
  free(p->children);
}

static dk_status plan_build(pplan *p, const struct ArrowSchema *s, int depth, dk_error *err) {
  memset(p, 0, sizeof *p);
  if (depth > 200) return dk__error_set(err, DK_UNSUPPORTED, "schema nested too deeply to print");
  DK_RETURN_NOT_OK(dk__atype_parse(&p->t, s->format, err));
  if (s->n_children > 0) {
    p->children = calloc((size_t)s->n_children, sizeof *p->children);
    if (!p->children) return dk__error_set(err, DK_NOMEM, "out of memory");
    p->n_children = s->n_children;
    for (int64_t i = 0; i < s->n_children; i++)
      DK_RETURN_NOT_OK(plan_build(&p->children[i], s->children[i], depth + 1, err));
  }
  return DK_OK;
}

static dk_status put_i64(dk_buf *b, int64_t v, dk_error *err) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[n++] = '-';
  DK_RETURN_NOT_OK(dk__buf_reserve(b, (size_t)n, err));
  for (int i = 0; i < n; i++) b->data[b->len + (size_t)i] = tmp[n - 1 - i];
  b->len += (size_t)n;
  b->data[b->len] = 0;
  return DK_OK;
}

static bool is_valid(const struct ArrowArray *a, int64_t i) {
  const uint8_t *v = a->buffers && a->n_buffers > 0 ? a->buffers[0] : NULL;
  return !v || dk__bit_get(v, a->offset + i);
}

static dk_status put_escaped(dk_buf *b, const uint8_t *s, size_t n, int quote, dk_error *err) {
  static const char hex[] = "0123456789abcdef";
  if (quote) DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) continue;
    if (c >= 0x80) {
      /* validate one UTF-8 sequence; invalid bytes become U+FFFD */
      int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      if (c >= 0xf5) len = 0;
      int ok = len > 0 && i + (size_t)len <= n;
      for (int k = 1; ok && k < len; k++) ok = (s[i + (size_t)k] & 0xc0) == 0x80;
      if (ok && len == 3) {
        uint32_t cp = ((uint32_t)(c & 0x0f) << 12) | ((uint32_t)(s[i + 1] & 0x3f) << 6);
        ok = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
      }
      if (ok && len == 4) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3f) << 12);
        ok = cp >= 0x10000 && cp <= 0x10ffff;
      }
      if (ok) {
        i += (size_t)len - 1;
        continue;
      }
      DK_RETURN_NOT_OK(dk__buf_append(b, s + start, i - start, err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, "\xef\xbf\xbd", err));
      start = i + 1;
      continue;
    }
    if (!quote && c != '"' && c != '\\') continue; /* raw mode: only control chars escaped */
    DK_RETURN_NOT_OK(dk__buf_append(b, s + start, i - start, err));
    char e[8];
    size_t el = 2;
    e[0] = '\\';
    switch (c) {
      case '"': e[1] = '"'; break;
      case '\\': e[1] = '\\'; break;
      case '\n': e[1] = 'n'; break;
      case '\r': e[1] = 'r'; break;
      case '\t': e[1] = 't'; break;
      case '\b': e[1] = 'b'; break;
      case '\f': e[1] = 'f'; break;
      default:
        e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[c >> 4], e[5] = hex[c & 15];
        el = 6;
    }
    DK_RETURN_NOT_OK(dk__buf_append(b, e, el, err));
    start = i + 1;
  }
  DK_RETURN_NOT_OK(dk__buf_append(b, s + start, n - start, err));
  if (quote) DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
  return DK_OK;
}

static dk_status put_base64(dk_buf *b, const uint8_t *s, size_t n, dk_error *err) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  DK_RETURN_NOT_OK(dk__buf_reserve(b, (n + 2) / 3 * 4 + 2, err));
  char *o = b->data + b->len;
  *o++ = '"';
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = tbl[(v >> 6) & 63], *o++ = tbl[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = '=', *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = tbl[(v >> 6) & 63], *o++ = '=';
  }
  *o++ = '"';
  b->len = (size_t)(o - b->data);
  b->data[b->len] = 0;
  return DK_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

/* days since 1970-01-01 -> civil date (proleptic Gregorian) */
static void civil(int64_t days, int64_t *y, int *m, int *d) {
  days += 719468;
  int64_t era = floor_div(days, 146097);
  int64_t doe = days - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yy + (*m <= 2);
}

static dk_status put_date(dk_buf *b, int64_t days, dk_error *err) {
  int64_t y;
  int m, d;
  civil(days, &y, &m, &d);
  return dk__buf_printf(b, err, "%04lld-%02d-%02d", (long long)y, m, d);
}

static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};

static dk_status put_time_of_day(dk_buf *b, int64_t secs_of_day, int64_t frac, int unit,
                                 dk_error *err) {
  int h = (int)(secs_of_day / 3600), mi = (int)(secs_of_day / 60 % 60), s = (int)(secs_of_day % 60);
  if (unit == DK_TU_NANO) return dk__buf_printf(b, err, "%02d:%02d:%02d.%09lld", h, mi, s, (long long)frac);
  int64_t us = frac * (1000000 / per_sec[unit]);
  return dk__buf_printf(b, err, "%02d:%02d:%02d.%06lld", h, mi, s, (long long)us);
}

static dk_status put_decimal(dk_buf *b, const uint8_t *p, int scale, dk_error *err) {
  uint64_t lo, hi;
  memcpy(&lo, p, 8);
  memcpy(&hi, p + 8, 8);
  int neg = (int64_t)hi < 0;
  if (neg) { /* two's complement negate */
    lo = ~lo + 1;
    hi = ~hi + (lo == 0);
  }
  char digits[64];
  int n = 0;
  while (hi || lo) { /* divide 128-bit by 10 */
    uint64_t rem = hi % 10;
    hi /= 10;
    unsigned __int128 cur = ((unsigned __int128)rem << 64) | lo;
    lo = (uint64_t)(cur / 10);
    digits[n++] = (char)('0' + (int)(cur % 10));
  }
  while (n <= scale) digits[n++] = '0';
  char out[80];
  int o = 0;
  out[o++] = '"';
  if (neg) out[o++] = '-';
  for (int i = n - 1; i >= 0; i--) {
    out[o++] = digits[i];
    if (i == scale && scale > 0) out[o++] = '.';
  }
  out[o++] = '"';
  return dk__buf_append(b, out, (size_t)o, err);
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
  if (e == 0) {
    if (m == 0) bits = sign;
    else {
      float f = ldexpf((float)m, -24);
      return sign ? -f : f;
    }
  } else if (e == 31) {
    bits = sign | 0x7f800000u | (m << 13);
  } else {
    bits = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static dk_status put_value(pctx *c, const pplan *p, const struct ArrowSchema *s,
                           const struct ArrowArray *a, int64_t i, int depth);

/* Variant columns: a struct tagged parquet.variant with binary `metadata` and `value`. */
static bool is_variant(const struct ArrowSchema *s) {
  dk_str ext = dk__schema_metadata_get(s->metadata, "ARROW:extension:name");
  return ext.ptr && ext.len == 15 && !memcmp(ext.ptr, "parquet.variant", 15);
}

static dk_status put_variant(dk_buf *b, const struct ArrowSchema *s, const struct ArrowArray *a,
                             int64_t j, dk_error *err) {
  const struct ArrowArray *ma = NULL, *va = NULL;
  for (int64_t k = 0; k < s->n_children; k++) {
    const char *nm = s->children[k]->name ? s->children[k]->name : "";
    if (!strcmp(nm, "metadata") && !strcmp(s->children[k]->format, "z")) ma = a->children[k];
    if (!strcmp(nm, "value") && !strcmp(s->children[k]->format, "z")) va = a->children[k];
  }
  if (!ma || !va) return dk__error_set(err, DK_UNSUPPORTED, "variant column without binary metadata/value");
  int64_t mj = ma->offset + j, vj = va->offset + j;
  if (!is_valid(ma, j) || !is_valid(va, j)) return dk__buf_puts(b, "null", err);
  const int32_t *mo = ma->buffers[1], *vo = va->buffers[1];
  const uint8_t *md = ma->buffers[2], *vd = va->buffers[2];
  return dk__variant_to_json(b, md + mo[mj], (size_t)(mo[mj + 1] - mo[mj]), vd + vo[vj],
                            (size_t)(vo[vj + 1] - vo[vj]), err);
}

static dk_status put_value_typed(pctx *c, const pplan *p, const struct ArrowSchema *s,
                                 const struct ArrowArray *a, int64_t i, int depth) {
  const dk_atype *t = &p->t;
  dk_buf *b = c->b;
  dk_error *err = c->err;
  int64_t j = a->offset + i;
  const void *vals = a->n_buffers > 1 ? a->buffers[1] : NULL;
  switch (t->id) {
    case DK_AT_NA: return dk__buf_puts(b, "null", err);
    case DK_AT_BOOL: return dk__buf_puts(b, dk__bit_get(vals, j) ? "true" : "false", err);
    case DK_AT_INT8: return put_i64(b, ((const int8_t *)vals)[j], err);
    case DK_AT_INT16: return put_i64(b, ((const int16_t *)vals)[j], err);
    case DK_AT_INT32: return put_i64(b, ((const int32_t *)vals)[j], err);
    case DK_AT_INT64: return put_i64(b, ((const int64_t *)vals)[j], err);
    case DK_AT_UINT8: return put_i64(b, ((const uint8_t *)vals)[j], err);
    case DK_AT_UINT16: return put_i64(b, ((const uint16_t *)vals)[j], err);
    case DK_AT_UINT32: return put_i64(b, ((const uint32_t *)vals)[j], err);
    case DK_AT_UINT64:
      return dk__buf_printf(b, err, "%llu", (unsigned long long)((const uint64_t *)vals)[j]);
    case DK_AT_FLOAT16: return dk__json_write_float(b, half_to_float(((const uint16_t *)vals)[j]), err);
    case DK_AT_FLOAT: return dk__json_write_float(b, ((const float *)vals)[j], err);
    case DK_AT_DOUBLE: return dk__json_write_double(b, ((const double *)vals)[j], err);
    case DK_AT_DECIMAL128: return put_decimal(b, (const uint8_t *)vals + 16 * j, t->scale, err);
    case DK_AT_DATE32:
      DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
      DK_RETURN_NOT_OK(put_date(b, ((const int32_t *)vals)[j], err));
      return dk__buf_putc(b, '"', err);
    case DK_AT_TIME32:
    case DK_AT_TIME64: {
      int64_t v = t->id == DK_AT_TIME32 ? ((const int32_t *)vals)[j] : ((const int64_t *)vals)[j];
      int64_t ps = per_sec[t->unit];
      int64_t secs = floor_div(v, ps);
      DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
      DK_RETURN_NOT_OK(put_time_of_day(b, ((secs % 86400) + 86400) % 86400, v - secs * ps, (int)t->unit, err));
      return dk__buf_putc(b, '"', err);
    }
    case DK_AT_TIMESTAMP: {
      int64_t v = ((const int64_t *)vals)[j];
      int64_t ps = per_sec[t->unit];
      int64_t secs = floor_div(v, ps);
      int64_t days = floor_div(secs, 86400);
      DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
      DK_RETURN_NOT_OK(put_date(b, days, err));
      DK_RETURN_NOT_OK(dk__buf_putc(b, 'T', err));
      DK_RETURN_NOT_OK(put_time_of_day(b, secs - days * 86400, v - secs * ps, (int)t->unit, err));
      if (t->tz[0]) DK_RETURN_NOT_OK(dk__buf_putc(b, 'Z', err));
      return dk__buf_putc(b, '"', err);
    }
    case DK_AT_STRING:
    case DK_AT_BINARY: {
      const int32_t *o = vals;
      const uint8_t *d = a->buffers[2];
      if (t->id == DK_AT_STRING) return put_escaped(b, d + o[j], (size_t)(o[j + 1] - o[j]), 1, err);
      return put_base64(b, d + o[j], (size_t)(o[j + 1] - o[j]), err);
    }
    case DK_AT_FIXED_BINARY:
      return put_base64(b, (const uint8_t *)vals + (size_t)j * (size_t)t->byte_width,
                        (size_t)t->byte_width, err);
    case DK_AT_LIST: {
      const int32_t *o = vals;
      DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
      for (int64_t k = o[j]; k < o[j + 1]; k++) {
        if (k > o[j]) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        DK_RETURN_NOT_OK(put_value(c, &p->children[0], s->children[0], a->children[0], k, depth + 1));
      }
      return dk__buf_putc(b, ']', err);
    }
    case DK_AT_STRUCT: {
      if (is_variant(s)) return put_variant(b, s, a, j, err);
      DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
      for (int64_t k = 0; k < s->n_children; k++) {
        if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        const char *nm = s->children[k]->name ? s->children[k]->name : "";
        DK_RETURN_NOT_OK(put_escaped(b, (const uint8_t *)nm, strlen(nm), 1, err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
        DK_RETURN_NOT_OK(put_value(c, &p->children[k], s->children[k], a->children[k], j, depth + 1));
      }
      return dk__buf_putc(b, '}', err);
    }
    case DK_AT_MAP: {
      const int32_t *o = vals;
      const struct ArrowSchema *es = s->children[0];
      const struct ArrowArray *ea = a->children[0];
      const pplan *ep = &p->children[0];
      int obj = ep->children[0].t.id == DK_AT_STRING;
      DK_RETURN_NOT_OK(dk__buf_putc(b, obj ? '{' : '[', err));
      for (int64_t k = o[j]; k < o[j + 1]; k++) {
        if (k > o[j]) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        int64_t ek = ea->offset + k;
        if (!obj) DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
        DK_RETURN_NOT_OK(put_value(c, &ep->children[0], es->children[0], ea->children[0], ek, depth + 1));
        DK_RETURN_NOT_OK(dk__buf_putc(b, obj ? ':' : ',', err));
        DK_RETURN_NOT_OK(put_value(c, &ep->children[1], es->children[1], ea->children[1], ek, depth + 1));
        if (!obj) DK_RETURN_NOT_OK(dk__buf_putc(b, ']', err));
      }
      return dk__buf_putc(b, obj ? '}' : ']', err);
    }
    default: return dk__error_set(err, DK_UNSUPPORTED, "cannot print Arrow type '%s'", s->format);
  }
}

static dk_status put_value(pctx *c, const pplan *p, const struct ArrowSchema *s,
                           const struct ArrowArray *a, int64_t i, int depth) {
  if (!is_valid(a, i)) return dk__buf_puts(c->b, "null", c->err);
  return put_value_typed(c, p, s, a, i, depth);
}

/* ---- public encoder (dk/arrow_json.h): one parsed type tree per field, a reused buffer ---- */

struct dk_arrow_json {
  const dk_allocator *alloc;
  const struct ArrowSchema *schema; /* borrowed */
  pplan plan;
  dk_buf text;
};

dk_status dk_arrow_json_new(dk_arrow_json **out, const struct ArrowSchema *schema,
                            const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!schema || !schema->format, DK_INVALID, err, "arrow json: no schema");
  dk_arrow_json *e = dk__calloc(alloc, 1, sizeof *e);
  if (!e) return dk__error_set(err, DK_NOMEM, "out of memory");
  e->alloc = alloc;
  e->schema = schema;
  dk__buf_init(&e->text, alloc);
  dk_status st = plan_build(&e->plan, schema, 0, err);
  if (st) {
    dk_arrow_json_free(e);
    return st;
  }
  *out = e;
  return DK_OK;
}

dk_status dk_arrow_json_value(dk_str *out, dk_arrow_json *enc, const struct ArrowArray *array,
                              int64_t i, dk_error *err) {
  out->ptr = "";
  out->len = 0;
  DK_RETURN_IF(!array || i < 0 || i >= array->length, DK_INVALID, err,
               "arrow json: value %lld outside the array", (long long)i);
  dk__buf_clear(&enc->text);
  pctx c = {&enc->text, err};
  DK_RETURN_NOT_OK(put_value(&c, &enc->plan, enc->schema, array, i, 0));
  out->ptr = enc->text.data ? enc->text.data : "";
  out->len = enc->text.len;
  return DK_OK;
}

void dk_arrow_json_free(dk_arrow_json *enc) {
  if (!enc) return;
  plan_free(&enc->plan);
  dk__buf_dispose(&enc->text);
  dk__free(enc->alloc, enc);
}
