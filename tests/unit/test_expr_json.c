/* test_expr_json.c — TEMPORARY minimal JSON DOM reader for the expr tests (see the header). */
#include <stdlib.h>

#include "test_expr_json.h"

typedef struct tj {
  const char *s;
  size_t n, pos;
  dk_arena *ar;
  dk_error *err;
  int depth;
} tj;

static void ws(tj *p) {
  while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                           p->s[p->pos] == '\r'))
    p->pos++;
}

static dk_status bad(tj *p, const char *why) {
  return dk__error_set(p->err, DK_CORRUPT, "json: %s at offset %zu", why, p->pos);
}

static int hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if ((c | 32) >= 'a' && (c | 32) <= 'f') v |= (c | 32) - 'a' + 10;
    else return -1;
  }
  return v;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63));
    o[2] = (char)(0x80 | (cp & 63)); return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
  o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63)); return 4;
}

static dk_status str(tj *p, const char **out, uint32_t *len) {
  p->pos++; /* opening quote */
  size_t start = p->pos;
  while (p->pos < p->n && p->s[p->pos] != '"') p->pos += p->s[p->pos] == '\\' ? 2 : 1;
  if (p->pos >= p->n) return bad(p, "unterminated string");
  char *o = dk_arena_alloc(p->ar, p->pos - start + 1, p->err);
  if (!o) return DK_NOMEM;
  size_t k = 0;
  for (size_t i = start; i < p->pos; i++) {
    char c = p->s[i];
    if (c != '\\') { o[k++] = c; continue; }
    c = p->s[++i];
    switch (c) {
      case 'n': o[k++] = '\n'; break;
      case 't': o[k++] = '\t'; break;
      case 'r': o[k++] = '\r'; break;
      case 'b': o[k++] = '\b'; break;
      case 'f': o[k++] = '\f'; break;
      case 'u': {
        if (i + 4 >= p->pos) return bad(p, "short \\u escape");
        int cp = hex4(p->s + i + 1);
        if (cp < 0) return bad(p, "bad \\u escape");
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < p->pos && p->s[i + 1] == '\\' && p->s[i + 2] == 'u') {
          int lo = hex4(p->s + i + 3);
          if (lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          }
        }
        k += put_utf8(o + k, (unsigned)cp);
        break;
      }
      default: o[k++] = c; break;
    }
  }
  o[k] = 0;
  p->pos++;
  *out = o;
  *len = (uint32_t)k;
  return DK_OK;
}

static dk_status val(tj *p, dk_json_value *v);

static dk_status val(tj *p, dk_json_value *v) {
  ws(p);
  if (p->pos >= p->n) return bad(p, "unexpected end");
  if (++p->depth > DK_JSON_MAX_DEPTH) return bad(p, "too deep");
  char c = p->s[p->pos];
  memset(v, 0, sizeof *v);
  dk_status st = DK_OK;
  if (c == '{' || c == '[') {
    bool obj = c == '{';
    p->pos++;
    size_t cap = 8, n = 0;
    size_t esz = obj ? sizeof(dk_json_member) : sizeof(dk_json_value);
    char *items = malloc(cap * esz);
    ws(p);
    if (p->pos < p->n && p->s[p->pos] == (obj ? '}' : ']')) {
      p->pos++;
    } else {
      for (;;) {
        if (n == cap) { cap *= 2; items = realloc(items, cap * esz); }
        ws(p);
        if (obj) {
          dk_json_member *m = (dk_json_member *)(items + n * esz);
          if (p->pos >= p->n || p->s[p->pos] != '"') { st = bad(p, "expected key"); break; }
          if ((st = str(p, &m->key, &m->klen))) break;
          ws(p);
          if (p->pos >= p->n || p->s[p->pos] != ':') { st = bad(p, "expected ':'"); break; }
          p->pos++;
          if ((st = val(p, &m->value))) break;
        } else {
          if ((st = val(p, (dk_json_value *)(items + n * esz)))) break;
        }
        n++;
        ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->pos < p->n && p->s[p->pos] == (obj ? '}' : ']')) { p->pos++; break; }
        st = bad(p, "expected ',' or close");
        break;
      }
    }
    if (!st) {
      void *keep = dk_arena_alloc(p->ar, n * esz + 1, p->err);
      if (!keep) st = DK_NOMEM;
      else memcpy(keep, items, n * esz);
      v->type = obj ? DK_JSON_OBJECT : DK_JSON_ARRAY;
      v->len = (uint32_t)n;
      if (obj) v->u.members = keep; else v->u.items = keep;
    }
    free(items);
  } else if (c == '"') {
    v->type = DK_JSON_STRING;
    st = str(p, &v->u.str, &v->len);
  } else if (!strncmp(p->s + p->pos, "true", 4) || !strncmp(p->s + p->pos, "false", 5)) {
    v->type = DK_JSON_BOOL;
    v->u.b = c == 't';
    p->pos += v->u.b ? 4 : 5;
  } else if (!strncmp(p->s + p->pos, "null", 4)) {
    v->type = DK_JSON_NULL;
    p->pos += 4;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    size_t s0 = p->pos;
    while (p->pos < p->n && strchr("+-0123456789.eE", p->s[p->pos])) p->pos++;
    v->type = DK_JSON_NUMBER;
    v->len = (uint32_t)(p->pos - s0);
    v->u.num = dk_arena_strndup(p->ar, p->s + s0, p->pos - s0, p->err);
    if (!v->u.num) st = DK_NOMEM;
  } else {
    st = bad(p, "unexpected character");
  }
  p->depth--;
  return st;
}

dk_status tjson_parse(dk_json_value **out, dk_arena *ar, const char *text, size_t len,
                      dk_error *err) {
  tj p = {.s = text, .n = len, .ar = ar, .err = err};
  dk_json_value *v = dk_arena_alloc(ar, sizeof *v, err);
  if (!v) return DK_NOMEM;
  DK_RETURN_NOT_OK(val(&p, v));
  ws(&p);
  if (p.pos != p.n) return bad(&p, "trailing text");
  *out = v;
  return DK_OK;
}

const dk_json_value *tjson_get(const dk_json_value *obj, const char *key) {
  if (!obj || obj->type != DK_JSON_OBJECT) return NULL;
  const dk_json_value *r = NULL;
  for (uint32_t i = 0; i < obj->len; i++)
    if (!strcmp(obj->u.members[i].key, key)) r = &obj->u.members[i].value;
  return r;
}
