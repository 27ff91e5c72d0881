/*
** lastcp.c — the checksum of the `_last_checkpoint` file, as PROTOCOL.md "JSON checksum"
** defines it and delta-spark (LastCheckpointInfo.treeNodeToChecksum) computes it: every
** scalar leaf becomes `path=value`, where the path joins the object keys (each a quoted,
** URL-encoded string) and array positions (bare numbers) along the way with `+`; strings are
** quoted and URL-encoded (octets outside a-z A-Z 0-9 - . _ ~ as %XX, uppercase), numbers are
** their source text, true/false/null themselves. The pairs, without the top-level "checksum",
** are sorted byte-wise and joined by `,`; the checksum is the hex MD5 of that text (libmd).
*/
#include <md5.h>
#include <stdlib.h>

#include "log/lastcp.h"

typedef struct canon {
  dk_buf path;            /* the current path */
  dk_buf pairs;           /* "path=value" NUL ... */
  size_t n_pairs;
} canon;

static dk_status put_encoded(dk_buf *b, const char *s, size_t n, dk_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '.' || c == '_' || c == '~') {
      DK_RETURN_NOT_OK(dk__buf_putc(b, (char)c, err));
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      DK_RETURN_NOT_OK(dk__buf_append(b, e, 3, err));
    }
  }
  return dk__buf_putc(b, '"', err);
}

static dk_status walk(canon *c, const dk_json_value *v, int depth, dk_error *err) {
  DK_RETURN_IF(depth > 64, DK_INVALID, err, "_last_checkpoint: nested too deeply");
  size_t mark = c->path.len;
  if (v->type == DK_JSON_OBJECT) {
    for (uint32_t i = 0; i < v->len; i++) {
      const dk_json_member *m = &v->u.members[i];
      for (uint32_t j = 0; j < i; j++)
        if (v->u.members[j].klen == m->klen && !memcmp(v->u.members[j].key, m->key, m->klen))
          return dk__error_set(err, DK_INVALID, "_last_checkpoint: duplicate key '%s'", m->key);
      if (mark) DK_RETURN_NOT_OK(dk__buf_putc(&c->path, '+', err));
      DK_RETURN_NOT_OK(put_encoded(&c->path, m->key, m->klen, err));
      DK_RETURN_NOT_OK(walk(c, &m->value, depth + 1, err));
      c->path.len = mark;
    }
    return DK_OK;
  }
  if (v->type == DK_JSON_ARRAY) {
    for (uint32_t i = 0; i < v->len; i++) {
      if (mark) DK_RETURN_NOT_OK(dk__buf_putc(&c->path, '+', err));
      DK_RETURN_NOT_OK(dk__buf_printf(&c->path, err, "%u", i));
      DK_RETURN_NOT_OK(walk(c, &v->u.items[i], depth + 1, err));
      c->path.len = mark;
    }
    return DK_OK;
  }
  if (depth == 1 && c->path.len == 10 && !memcmp(c->path.data, "\"checksum\"", 10))
    return DK_OK; /* the stored checksum itself */
  DK_RETURN_NOT_OK(dk__buf_append(&c->pairs, c->path.data ? c->path.data : "", c->path.len, err));
  DK_RETURN_NOT_OK(dk__buf_putc(&c->pairs, '=', err));
  switch (v->type) {
    case DK_JSON_STRING: DK_RETURN_NOT_OK(put_encoded(&c->pairs, v->u.str, v->len, err)); break;
    case DK_JSON_NUMBER: DK_RETURN_NOT_OK(dk__buf_append(&c->pairs, v->u.num, v->len, err)); break;
    case DK_JSON_BOOL: DK_RETURN_NOT_OK(dk__buf_puts(&c->pairs, v->u.b ? "true" : "false", err)); break;
    default: DK_RETURN_NOT_OK(dk__buf_puts(&c->pairs, "null", err)); break;
  }
  DK_RETURN_NOT_OK(dk__buf_putc(&c->pairs, 0, err));
  c->n_pairs++;
  return DK_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

dk_status dk_log__last_checkpoint_checksum(char out[33], const dk_json_value *root,
                                           const dk_allocator *alloc, dk_error *err) {
  out[0] = 0;
  canon c = {.n_pairs = 0};
  dk__buf_init(&c.path, alloc);
  dk__buf_init(&c.pairs, alloc);
  dk_buf text;
  dk__buf_init(&text, alloc);
  const char **v = NULL;
  dk_status st = walk(&c, root, 0, err);
  if (!st && c.n_pairs) {
    v = dk__malloc(alloc, c.n_pairs * sizeof *v);
    if (!v) st = dk__error_set(err, DK_NOMEM, "out of memory (_last_checkpoint checksum)");
  }
  if (!st) {
    size_t k = 0;
    for (size_t p = 0; p < c.pairs.len; p += strlen(c.pairs.data + p) + 1) v[k++] = c.pairs.data + p;
    /* the pairs are ASCII (keys and strings are encoded): byte order is Java's char order */
    if (k > 1) qsort(v, k, sizeof *v, cmp_str);
    for (size_t i = 0; i < k && !st; i++) {
      if (i) st = dk__buf_putc(&text, ',', err);
      if (!st) st = dk__buf_puts(&text, v[i], err);
    }
  }
  if (!st) MD5Data((const uint8_t *)(text.data ? text.data : ""), text.len, out);
  dk__free(alloc, v);
  dk__buf_dispose(&text);
  dk__buf_dispose(&c.path);
  dk__buf_dispose(&c.pairs);
  return st;
}
