/*
** json_fuzzer.c — fuzz target for the JSON codec (src/codec/json).
**
** The input is parsed as one JSON text and, like a Delta commit file (newline-delimited
** JSON), line by line. Whatever parses is written back with dk__json_write_value, parsed
** again and compared structurally with the first tree; writing the second tree must give
** the same bytes (a fixed point). Numbers that convert to double are re-printed with
** dk__json_write_double and must read back bit-identical. Any mismatch aborts.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what) {
  fprintf(stderr, "json_fuzzer: %s\n", what);
  abort();
}

static int same(const dk_json_value *a, const dk_json_value *b) {
  if (a->type != b->type || a->len != b->len) return 0;
  switch (a->type) {
    case DK_JSON_NULL: return 1;
    case DK_JSON_BOOL: return a->u.b == b->u.b;
    case DK_JSON_NUMBER: return memcmp(a->u.num, b->u.num, a->len + 1) == 0;
    case DK_JSON_STRING: return memcmp(a->u.str, b->u.str, a->len + 1) == 0;
    case DK_JSON_ARRAY:
      for (uint32_t i = 0; i < a->len; i++)
        if (!same(&a->u.items[i], &b->u.items[i])) return 0;
      return 1;
    case DK_JSON_OBJECT:
      for (uint32_t i = 0; i < a->len; i++) {
        const dk_json_member *x = &a->u.members[i], *y = &b->u.members[i];
        if (x->klen != y->klen || memcmp(x->key, y->key, x->klen + 1) != 0) return 0;
        if (!same(&x->value, &y->value)) return 0;
      }
      return 1;
  }
  return 0;
}

static void check_numbers(const dk_json_value *v, dk_buf *tmp) {
  switch (v->type) {
    case DK_JSON_NUMBER: {
      int64_t i;
      double d;
      if (dk__json_as_i64(v, &i)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)i);
        /* same integer, modulo "-0" */
        if (strcmp(buf, v->u.num) != 0 && !(i == 0 && strcmp(v->u.num, "-0") == 0))
          die("as_i64 text mismatch");
      }
      if (dk__json_as_double(v, &d)) {
        dk_error err = {0};
        dk__buf_clear(tmp);
        if (dk__json_write_double(tmp, d, &err) != DK_OK) die("write_double failed");
        double back = strtod(tmp->data, NULL);
        if (memcmp(&back, &d, sizeof d) != 0) die("double does not round-trip");
      }
      break;
    }
    case DK_JSON_ARRAY:
      for (uint32_t k = 0; k < v->len; k++) check_numbers(&v->u.items[k], tmp);
      break;
    case DK_JSON_OBJECT:
      for (uint32_t k = 0; k < v->len; k++) check_numbers(&v->u.members[k].value, tmp);
      break;
    default:
      break;
  }
}

static void one(const char *text, size_t len) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 256); /* small chunks: exercise chunk boundaries */
  dk_error err = {0};
  dk_json_value *v = NULL;
  dk_status st = dk__json_parse(&v, &ar, text, len, &err);
  if (st != DK_OK) {
    if (st != DK_CORRUPT || v != NULL || !strstr(err.message, "byte offset"))
      die("parse failure without a DK_CORRUPT offset message");
    dk__arena_dispose(&ar);
    return;
  }
  dk_buf b1, b2;
  dk__buf_init(&b1, NULL);
  dk__buf_init(&b2, NULL);
  if (dk__json_write_value(&b1, v, &err) != DK_OK) die("write of a parsed value failed");
  dk_json_value *v2 = NULL;
  if (dk__json_parse(&v2, &ar, b1.data, b1.len, &err) != DK_OK) die("re-parse failed");
  if (!same(v, v2)) die("re-parsed tree differs");
  if (dk__json_write_value(&b2, v2, &err) != DK_OK) die("second write failed");
  if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) die("writer not a fixed point");
  dk__buf_clear(&b2);
  check_numbers(v, &b2);
  dk__buf_dispose(&b1);
  dk__buf_dispose(&b2);
  dk__arena_dispose(&ar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  one(text, size);
  /* newline-delimited, as in Delta commit files */
  const char *p = text, *end = text + size;
  int lines = 0;
  while (p < end && lines < 1000) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
      if (p != text) one(p, (size_t)(end - p));
      break;
    }
    one(p, (size_t)(nl - p));
    p = nl + 1;
    lines++;
  }
  return 0;
}
