/*
** json_parse.c — strict JSON (RFC 8259) DOM parser into a dk_arena, plus lookups and
** conversions of json.h.
**
** Grammar: RFC 8259 sections 2-7 exactly: one value with optional surrounding whitespace
** (space, tab, LF, CR), no trailing garbage, no comments, no trailing commas, no leading '+'
** or zeros, no NaN/Infinity literals. Strings: raw bytes must be valid UTF-8 (RFC 3629:
** no overlong forms, no surrogates, nothing above U+10FFFF); raw control characters
** (< 0x20) are rejected; escapes are the eight of section 7 plus \uXXXX, where a high
** surrogate must be followed by \u low surrogate (the pair is decoded to one code point).
** A lone surrogate escape is DK_CORRUPT (never replaced by U+FFFD): Delta paths and keys
** must round-trip exactly, so we refuse text that has no UTF-8 form.
**
** Performance: containers are collected on a reusable scratch stack and copied into the
** arena once when they close; value parsers return the 16-byte value in registers (no allocation per value besides the arena bump). Strings are
** scanned 16 bytes at a time (SSE2, or 8 with SWAR elsewhere) for '"', '\\', control and
** non-ASCII bytes; escape-free runs are copied with memcpy.
*/
#include "codec/json/json.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>

#include "codec/json/json_internal.h"

#define INLINE_VALS 64
#define INLINE_MEMS 32
#define INLINE_SCRATCH 4096

typedef struct parser {
  const char *begin;
  const char *end;
  dk_arena *ar;
  dk_error *err;
  const dk_allocator *alloc;
  dk_status st; /* first failure of a value parser */
  /* scratch stacks of open containers' children; start in the inline arrays below and
   * move to the heap only for documents with many open items (no malloc per typical line) */
  dk_json_value *vals;
  size_t nvals, capvals;
  dk_json_member *mems;
  size_t nmems, capmems;
  /* scratch output for strings with escapes */
  char *sbuf;
  size_t scap;
  dk_json_value vals_inline[INLINE_VALS];
  dk_json_member mems_inline[INLINE_MEMS];
  char sbuf_inline[INLINE_SCRATCH];
} parser;

static dk_status fail(parser *ps, const char *at, const char *what) {
  size_t off = (size_t)(at - ps->begin);
  return dk__error_set(ps->err, DK_CORRUPT, "invalid JSON at byte offset %zu: %s", off, what);
}

/* ---- character scanning ---------------------------------------------------------------- */

/* Whitespace per RFC 8259 section 2. */
static inline const char *skip_ws(const char *p, const char *end) {
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (c > ' ') break;
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
    p++;
  }
  return p;
}

/* Validates one UTF-8 sequence starting at p (first byte >= 0x80). Returns its length, or 0. */
size_t dk__json_utf8_seq(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  size_t avail = (size_t)(end - p);
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
  if (c < 0xE0) {
    if (avail < 2 || (p[1] & 0xC0) != 0x80) return 0;
    return 2;
  }
  if (c < 0xF0) {
    if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
    if (c == 0xED && p[1] >= 0xA0) return 0; /* UTF-16 surrogate */
    return 3;
  }
  if (c < 0xF5) {
    if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
        (p[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
    return 4;
  }
  return 0;
}

static inline int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Reads 4 hex digits at p (caller checked 4 bytes are available); -1 when not hex. */
static inline long hex4(const char *p) {
  int a = hexval((unsigned char)p[0]), b = hexval((unsigned char)p[1]);
  int c = hexval((unsigned char)p[2]), d = hexval((unsigned char)p[3]);
  if ((a | b | c | d) < 0) return -1;
  return (long)((a << 12) | (b << 8) | (c << 4) | d);
}

static inline char *put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xC0 | (cp >> 6));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xE0 | (cp >> 12));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *o++ = (char)(0xF0 | (cp >> 18));
    *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  }
  return o;
}

/* ---- strings --------------------------------------------------------------------------- */

/* Grows the string scratch so that at least `need` bytes fit. */
static dk_status grow_scratch(parser *ps, size_t need) {
  size_t nc = ps->scap * 2;
  while (nc < need) nc *= 2;
  char *nb = dk__malloc(ps->alloc, nc);
  if (!nb) return dk__error_set(ps->err, DK_NOMEM, "out of memory (JSON string scratch)");
  memcpy(nb, ps->sbuf, ps->scap);
  if (ps->sbuf != ps->sbuf_inline) dk__free(ps->alloc, ps->sbuf);
  ps->sbuf = nb;
  ps->scap = nc;
  return DK_OK;
}

/* Slow path for a string holding escapes, decoded in one pass into the scratch buffer and
** then copied to the arena. `start` is the first content byte, `q` the first backslash;
** [start, q) is already validated. With SSE2, 16 input bytes are stored to the output
** unconditionally and the output advances by the clean prefix (the scratch keeps 16 bytes
** of slack), so runs between escapes cost no call. */
static dk_status parse_escaped(parser *ps, const char *start, const char *q, const char **pp,
                               const char **out, uint32_t *outlen) {
  const char *end = ps->end;
  size_t pre = (size_t)(q - start);
  if (pre + 32 > ps->scap) DK_RETURN_NOT_OK(grow_scratch(ps, pre + 32));
  memcpy(ps->sbuf, start, pre);
  size_t o = pre;
  const char *p = q;
#if defined(__SSE2__)
  const __m128i vq = _mm_set1_epi8('"');
  const __m128i vb = _mm_set1_epi8('\\');
  const __m128i vs = _mm_set1_epi8(0x20);
#endif
  for (;;) {
    if (DK_UNLIKELY(ps->scap - o < 32)) DK_RETURN_NOT_OK(grow_scratch(ps, o + 32));
    char *sb = ps->sbuf;
#if defined(__SSE2__)
    if (DK_LIKELY(end - p >= 16)) {
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
      _mm_storeu_si128((__m128i *)(void *)(sb + o), x);
      __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, vq), _mm_cmpeq_epi8(x, vb)),
                               _mm_cmplt_epi8(x, vs));
      unsigned mask = (unsigned)_mm_movemask_epi8(m);
      if (!mask) {
        p += 16;
        o += 16;
        continue;
      }
      unsigned k = (unsigned)__builtin_ctz(mask);
      p += k;
      o += k;
    } else
#endif
    {
      if (p >= end) return fail(ps, start - 1, "unterminated string");
      unsigned char c = (unsigned char)*p;
      if (c != '"' && c != '\\' && c >= 0x20 && c < 0x80) {
        sb[o++] = (char)c;
        p++;
        continue;
      }
    }
    unsigned char c = (unsigned char)*p;
    if (c == '"') break;
    if (c == '\\') {
      if (end - p < 2) return fail(ps, start - 1, "unterminated string");
      char x = p[1];
      switch (x) {
        case '"': sb[o++] = '"'; p += 2; break;
        case '\\': sb[o++] = '\\'; p += 2; break;
        case '/': sb[o++] = '/'; p += 2; break;
        case 'b': sb[o++] = '\b'; p += 2; break;
        case 'f': sb[o++] = '\f'; p += 2; break;
        case 'n': sb[o++] = '\n'; p += 2; break;
        case 'r': sb[o++] = '\r'; p += 2; break;
        case 't': sb[o++] = '\t'; p += 2; break;
        case 'u': {
          if (end - p < 6) return fail(ps, p, "truncated \\u escape");
          long cp = hex4(p + 2);
          if (cp < 0) return fail(ps, p, "bad hex digit in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
              return fail(ps, p, "lone high surrogate in \\u escape");
            long lo = hex4(p + 8);
            if (lo < 0) return fail(ps, p + 6, "bad hex digit in \\u escape");
            if (lo < 0xDC00 || lo > 0xDFFF)
              return fail(ps, p, "high surrogate not followed by a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 12;
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail(ps, p, "lone low surrogate in \\u escape");
          } else {
            p += 6;
          }
          o = (size_t)(put_utf8(sb + o, (uint32_t)cp) - sb);
          break;
        }
        default:
          return fail(ps, p, "invalid escape character");
      }
    } else if (c < 0x20) {
      return fail(ps, p, "control character in string");
    } else { /* c >= 0x80 */
      size_t k = dk__json_utf8_seq((const unsigned char *)p, (const unsigned char *)end);
      if (!k) return fail(ps, p, "invalid UTF-8 in string");
      memcpy(sb + o, p, k);
      o += k;
      p += k;
    }
  }
  if (o > UINT32_MAX - 1) return fail(ps, start - 1, "string longer than 4 GiB");
  char *dst = dk__arena_alloc(ps->ar, o + 1, ps->err);
  if (!dst) return DK_NOMEM;
  memcpy(dst, ps->sbuf, o);
  dst[o] = 0;
  *out = dst;
  *outlen = (uint32_t)o;
  *pp = p + 1;
  return DK_OK;
}

/* *pp points just after the opening quote; on success just after the closing quote. */
static inline dk_status parse_string(parser *ps, const char **pp, const char **out,
                                     uint32_t *outlen) {
  const char *start = *pp, *p = start, *end = ps->end;
  for (;;) {
    p = dk__json_find_special(p, end);
    if (DK_UNLIKELY(p >= end)) return fail(ps, start - 1, "unterminated string");
    unsigned char c = (unsigned char)*p;
    if (DK_LIKELY(c == '"')) break;
    if (c == '\\') return parse_escaped(ps, start, p, pp, out, outlen);
    if (c < 0x20) return fail(ps, p, "control character in string");
    size_t k = dk__json_utf8_seq((const unsigned char *)p, (const unsigned char *)end);
    if (!k) return fail(ps, p, "invalid UTF-8 in string");
    p += k;
  }
  size_t n = (size_t)(p - start);
  if (DK_UNLIKELY(n > UINT32_MAX - 1)) return fail(ps, start - 1, "string longer than 4 GiB");
  char *dst = dk__arena_alloc(ps->ar, n + 1, ps->err);
  if (!dst) return DK_NOMEM;
  memcpy(dst, start, n);
  dst[n] = 0;
  *out = dst;
  *outlen = (uint32_t)n;
  *pp = p + 1;
  return DK_OK;
}

/* ---- numbers --------------------------------------------------------------------------- */

static inline bool is_digit(unsigned char c) { return (unsigned)(c - '0') < 10; }

/* Value parsers return the 16-byte value by value (two registers on x86-64 / AArch64) so the
** caller stores it without a store-to-load forwarding stall; a failure sets ps->st and
** returns a NULL value, which callers check right after each call. */
static inline dk_json_value value_fail(parser *ps, dk_status st) {
  ps->st = st;
  dk_json_value v = {DK_JSON_NULL, 0, {.str = NULL}};
  return v;
}

static inline dk_json_value make_value(dk_json_type t, uint32_t len, const void *ptr) {
  dk_json_value v;
  v.type = t;
  v.len = len;
  v.u.str = ptr;
  return v;
}

static dk_json_value parse_number(parser *ps, const char **pp) {
  const char *start = *pp, *p = start, *end = ps->end;
  if (p < end && *p == '-') p++;
  if (p >= end || !is_digit((unsigned char)*p))
    return value_fail(ps, fail(ps, start, "invalid number"));
  if (*p == '0') {
    p++;
    if (p < end && is_digit((unsigned char)*p))
      return value_fail(ps, fail(ps, start, "leading zero in number"));
  } else {
    while (p < end && is_digit((unsigned char)*p)) p++;
  }
  if (p < end && *p == '.') {
    p++;
    if (p >= end || !is_digit((unsigned char)*p))
      return value_fail(ps, fail(ps, p, "digit expected after decimal point"));
    while (p < end && is_digit((unsigned char)*p)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || !is_digit((unsigned char)*p))
      return value_fail(ps, fail(ps, p, "digit expected in exponent"));
    while (p < end && is_digit((unsigned char)*p)) p++;
  }
  size_t n = (size_t)(p - start);
  if (n > UINT32_MAX - 1) return value_fail(ps, fail(ps, start, "number longer than 4 GiB"));
  char *dst = dk__arena_alloc(ps->ar, n + 1, ps->err);
  if (!dst) return value_fail(ps, DK_NOMEM);
  memcpy(dst, start, n);
  dst[n] = 0;
  *pp = p;
  return make_value(DK_JSON_NUMBER, (uint32_t)n, dst);
}

/* ---- values ---------------------------------------------------------------------------- */

static dk_status grow_vals(parser *ps) {
  size_t nc = ps->capvals * 2;
  dk_json_value *old = ps->vals == ps->vals_inline ? NULL : ps->vals;
  dk_json_value *nv = dk__realloc(ps->alloc, old, nc * sizeof *nv);
  if (!nv) return dk__error_set(ps->err, DK_NOMEM, "out of memory (JSON parse stack)");
  if (!old) memcpy(nv, ps->vals_inline, sizeof ps->vals_inline);
  ps->vals = nv;
  ps->capvals = nc;
  return DK_OK;
}

static dk_status grow_mems(parser *ps) {
  size_t nc = ps->capmems * 2;
  dk_json_member *old = ps->mems == ps->mems_inline ? NULL : ps->mems;
  dk_json_member *nm = dk__realloc(ps->alloc, old, nc * sizeof *nm);
  if (!nm) return dk__error_set(ps->err, DK_NOMEM, "out of memory (JSON parse stack)");
  if (!old) memcpy(nm, ps->mems_inline, sizeof ps->mems_inline);
  ps->mems = nm;
  ps->capmems = nc;
  return DK_OK;
}

static dk_json_value parse_value(parser *ps, const char **pp, int depth);

/* *pp is just after '['. Children are collected on ps->vals (which may move while a child
** parses, hence the index) and copied to the arena at ']'. */
static dk_json_value parse_array(parser *ps, const char **pp, int depth) {
  const char *open = *pp - 1, *p = skip_ws(*pp, ps->end), *end = ps->end;
  size_t base = ps->nvals;
  if (p < end && *p == ']') {
    p++;
  } else {
    for (;;) {
      dk_json_value child = parse_value(ps, &p, depth);
      if (DK_UNLIKELY(ps->st != DK_OK)) return child;
      if (DK_UNLIKELY(ps->nvals == ps->capvals)) {
        dk_status st = grow_vals(ps);
        if (st != DK_OK) return value_fail(ps, st);
      }
      ps->vals[ps->nvals++] = child;
      p = skip_ws(p, end);
      if (p >= end) return value_fail(ps, fail(ps, open, "unterminated array"));
      if (*p == ',') {
        p = skip_ws(p + 1, end);
        continue;
      }
      if (*p == ']') {
        p++;
        break;
      }
      return value_fail(ps, fail(ps, p, "expected ',' or ']' in array"));
    }
  }
  size_t n = ps->nvals - base;
  if (n > UINT32_MAX) return value_fail(ps, fail(ps, open, "array with more than 2^32 items"));
  dk_json_value *items = NULL;
  if (n) {
    items = dk__arena_alloc(ps->ar, n * sizeof *items, ps->err);
    if (!items) return value_fail(ps, DK_NOMEM);
    memcpy(items, ps->vals + base, n * sizeof *items);
  }
  ps->nvals = base;
  *pp = p;
  return make_value(DK_JSON_ARRAY, (uint32_t)n, items);
}

static dk_json_value parse_object(parser *ps, const char **pp, int depth) {
  const char *open = *pp - 1, *p = skip_ws(*pp, ps->end), *end = ps->end;
  size_t base = ps->nmems;
  if (p < end && *p == '}') {
    p++;
  } else {
    for (;;) {
      if (p >= end) return value_fail(ps, fail(ps, open, "unterminated object"));
      if (*p != '"') return value_fail(ps, fail(ps, p, "expected string key in object"));
      p++;
      const char *key;
      uint32_t klen;
      dk_status st = parse_string(ps, &p, &key, &klen);
      if (st != DK_OK) return value_fail(ps, st);
      p = skip_ws(p, end);
      if (p >= end || *p != ':')
        return value_fail(ps, fail(ps, p, "expected ':' after object key"));
      p = skip_ws(p + 1, end);
      dk_json_value child = parse_value(ps, &p, depth);
      if (DK_UNLIKELY(ps->st != DK_OK)) return child;
      if (DK_UNLIKELY(ps->nmems == ps->capmems)) {
        st = grow_mems(ps);
        if (st != DK_OK) return value_fail(ps, st);
      }
      dk_json_member *m = &ps->mems[ps->nmems++];
      m->key = key;
      m->klen = klen;
      m->value = child;
      p = skip_ws(p, end);
      if (p >= end) return value_fail(ps, fail(ps, open, "unterminated object"));
      if (*p == ',') {
        p = skip_ws(p + 1, end);
        continue;
      }
      if (*p == '}') {
        p++;
        break;
      }
      return value_fail(ps, fail(ps, p, "expected ',' or '}' in object"));
    }
  }
  size_t n = ps->nmems - base;
  if (n > UINT32_MAX)
    return value_fail(ps, fail(ps, open, "object with more than 2^32 members"));
  dk_json_member *mems = NULL;
  if (n) {
    mems = dk__arena_alloc(ps->ar, n * sizeof *mems, ps->err);
    if (!mems) return value_fail(ps, DK_NOMEM);
    memcpy(mems, ps->mems + base, n * sizeof *mems);
  }
  ps->nmems = base;
  *pp = p;
  return make_value(DK_JSON_OBJECT, (uint32_t)n, mems);
}

static dk_json_value parse_value(parser *ps, const char **pp, int depth) {
  const char *p = *pp, *end = ps->end;
  if (p >= end) return value_fail(ps, fail(ps, p, "unexpected end of input, value expected"));
  switch (*p) {
    case '"': {
      p++;
      const char *s;
      uint32_t n;
      dk_status st = parse_string(ps, &p, &s, &n);
      if (st != DK_OK) return value_fail(ps, st);
      *pp = p;
      return make_value(DK_JSON_STRING, n, s);
    }
    case '{':
      if (depth >= DK_JSON_MAX_DEPTH)
        return value_fail(ps, fail(ps, p, "nesting deeper than 256"));
      *pp = p + 1;
      return parse_object(ps, pp, depth + 1);
    case '[':
      if (depth >= DK_JSON_MAX_DEPTH)
        return value_fail(ps, fail(ps, p, "nesting deeper than 256"));
      *pp = p + 1;
      return parse_array(ps, pp, depth + 1);
    case 't':
      if (end - p < 4 || memcmp(p, "true", 4) != 0) break;
      *pp = p + 4;
      {
        dk_json_value v = {DK_JSON_BOOL, 0, {.b = true}};
        return v;
      }
    case 'f':
      if (end - p < 5 || memcmp(p, "false", 5) != 0) break;
      *pp = p + 5;
      {
        dk_json_value v = {DK_JSON_BOOL, 0, {.b = false}};
        return v;
      }
    case 'n':
      if (end - p < 4 || memcmp(p, "null", 4) != 0) break;
      *pp = p + 4;
      return make_value(DK_JSON_NULL, 0, NULL);
    default:
      if (*p == '-' || is_digit((unsigned char)*p)) return parse_number(ps, pp);
      break;
  }
  return value_fail(ps, fail(ps, p, "unexpected character, value expected"));
}

dk_status dk__json_parse(dk_json_value **out, dk_arena *ar, const char *text, size_t len,
                        dk_error *err) {
  *out = NULL;
  if (!text && len) return dk__error_set(err, DK_INVALID, "dk__json_parse: NULL text");
  if (!text) text = "";
  parser ps;
  ps.begin = text;
  ps.end = text + len;
  ps.ar = ar;
  ps.err = err;
  ps.alloc = ar->alloc;
  ps.st = DK_OK;
  ps.vals = ps.vals_inline;
  ps.nvals = 0;
  ps.capvals = INLINE_VALS;
  ps.mems = ps.mems_inline;
  ps.nmems = 0;
  ps.capmems = INLINE_MEMS;
  ps.sbuf = ps.sbuf_inline;
  ps.scap = INLINE_SCRATCH;
  dk_json_value *root = dk__arena_alloc(ar, sizeof *root, err);
  if (!root) return DK_NOMEM;
  const char *p = skip_ws(text, ps.end);
  *root = parse_value(&ps, &p, 0);
  dk_status st = ps.st;
  if (st == DK_OK) {
    p = skip_ws(p, ps.end);
    if (p != ps.end) st = fail(&ps, p, "trailing characters after the JSON value");
  }
  if (ps.vals != ps.vals_inline) dk__free(ps.alloc, ps.vals);
  if (ps.mems != ps.mems_inline) dk__free(ps.alloc, ps.mems);
  if (ps.sbuf != ps.sbuf_inline) dk__free(ps.alloc, ps.sbuf);
  if (st == DK_OK) *out = root;
  return st;
}

/* ---- lookups and conversions ----------------------------------------------------------- */

const dk_json_value *dk__json_getn(const dk_json_value *obj, const char *key, size_t klen) {
  if (!obj || obj->type != DK_JSON_OBJECT) return NULL;
  for (uint32_t i = obj->len; i-- > 0;) {
    const dk_json_member *m = &obj->u.members[i];
    if (m->klen == klen && memcmp(m->key, key, klen) == 0) return &m->value;
  }
  return NULL;
}

const dk_json_value *dk__json_get(const dk_json_value *obj, const char *key) {
  return dk__json_getn(obj, key, strlen(key));
}

bool dk__json_as_i64(const dk_json_value *v, int64_t *out) {
  if (!v || v->type != DK_JSON_NUMBER) return false;
  const char *p = v->u.num, *e = p + v->len;
  bool neg = false;
  if (p < e && *p == '-') {
    neg = true;
    p++;
  }
  if (p >= e) return false;
  uint64_t acc = 0;
  const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; p < e; p++) {
    unsigned d = (unsigned)(unsigned char)*p - '0';
    if (d > 9) return false; /* fraction or exponent: not an integer literal */
    if (acc > (limit - d) / 10) return false;
    acc = acc * 10 + d;
  }
  if (neg) {
    *out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
  } else {
    *out = (int64_t)acc;
  }
  return true;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void init_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

locale_t dk__json_c_locale(void) {
  pthread_once(&c_locale_once, init_c_locale);
  return c_locale;
}

double dk__json_strtod(const char *s, char **endp) {
  locale_t l = dk__json_c_locale();
  if (l) return strtod_l(s, endp, l);
  return strtod(s, endp);
}

bool dk__json_as_double(const dk_json_value *v, double *out) {
  if (!v || v->type != DK_JSON_NUMBER) return false;
  char *endp;
  errno = 0;
  double d = dk__json_strtod(v->u.num, &endp);
  if (endp != v->u.num + v->len) return false;
  /* overflow to +-HUGE_VAL does not fit; underflow to a (sub)normal or zero is the nearest
   * double and accepted */
  if (errno == ERANGE && (d > 1.0 || d < -1.0)) return false;
  *out = d;
  return true;
}

bool dk__json_as_bool(const dk_json_value *v, bool *out) {
  if (!v || v->type != DK_JSON_BOOL) return false;
  *out = v->u.b;
  return true;
}

const char *dk__json_as_str(const dk_json_value *v, size_t *len) {
  if (!v || v->type != DK_JSON_STRING) return NULL;
  if (len) *len = v->len;
  return v->u.str;
}
