/* test_json_golden.c — the JSON parser on every line of every real Delta commit file of the
** shared corpus, against CPython's json module.
**
** Oracle: tests/unit/data/golden_json_canon.txt, written by
** tests/python/gen_golden_json_canon.py from CPython's json.loads of the same bytes: per line
** the length and FNV-1a 64 hash of a canonical re-serialisation (rules in that script). Here
** the same canonical text is built from dk's DOM (strings through dk__json_write_str, integers
** through dk__json_as_i64, other numbers through dk__json_as_double + dk__json_write_double) and
** compared. */
#include <stdlib.h>

#include "codec/json/json.h"
#include "test.h"

static dk_status canon(dk_buf *b, const dk_json_value *v, dk_error *err) {
  switch (v->type) {
    case DK_JSON_NUMBER: {
      int64_t i;
      double d;
      if (dk__json_as_i64(v, &i)) return dk__buf_printf(b, err, "%" PRId64, i);
      if (!strpbrk(v->u.num, ".eE")) return dk__buf_append(b, v->u.num, v->len, err);
      if (!dk__json_as_double(v, &d)) return DK_INTERNAL;
      return dk__json_write_double(b, d, err);
    }
    case DK_JSON_ARRAY:
      DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
      for (uint32_t k = 0; k < v->len; k++) {
        if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        DK_RETURN_NOT_OK(canon(b, &v->u.items[k], err));
      }
      return dk__buf_putc(b, ']', err);
    case DK_JSON_OBJECT:
      DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
      for (uint32_t k = 0; k < v->len; k++) {
        if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
        DK_RETURN_NOT_OK(dk__json_write_str(b, v->u.members[k].key, v->u.members[k].klen, err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
        DK_RETURN_NOT_OK(canon(b, &v->u.members[k].value, err));
      }
      return dk__buf_putc(b, '}', err);
    default:
      return dk__json_write_value(b, v, err);
  }
}

static uint64_t fnv1a64(const char *p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

DK_TEST(json_golden__commit_lines_match_cpython) {
  char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *slash = strrchr(path, '/');
  CHECK(slash != NULL);
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "data/golden_json_canon.txt");
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_buf out;
  dk__buf_init(&out, NULL);
  char cur[2048] = "", line[2200];
  char *text = NULL;
  size_t tlen = 0;
  int checked = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    char rel[2048];
    int lineno;
    size_t want_len;
    unsigned long long want_hash;
    if (sscanf(line, "%2047s %d %zu %llx", rel, &lineno, &want_len, &want_hash) != 4) continue;
    dk_error err = {0};
    if (strcmp(rel, cur) != 0) {
      free(text);
      text = NULL;
      char full[4200];
      snprintf(full, sizeof full, "%s/%s", dk_test_data_dir(), rel);
      CHECK_OK(dk__read_file(NULL, full, &text, &tlen, &err), &err);
      snprintf(cur, sizeof cur, "%s", rel);
    }
    /* find line number `lineno` (1-based, split on '\n') */
    const char *p = text, *end = text + tlen;
    for (int k = 1; k < lineno && p; k++) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : NULL;
    }
    CHECK(p != NULL);
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    dk_json_value *v;
    dk_status st = dk__json_parse(&v, &ar, p, n, &err);
    if (st != DK_OK) {
      if (bad++ < 5) dk_test_fail(__FILE__, __LINE__, "%s:%d: %s", rel, lineno, err.message);
      continue;
    }
    dk__buf_clear(&out);
    CHECK_OK(canon(&out, v, &err), &err);
    if (out.len != want_len || fnv1a64(out.data, out.len) != (uint64_t)want_hash) {
      if (bad++ < 5)
        dk_test_fail(__FILE__, __LINE__, "%s:%d: canonical text differs from CPython's: %.300s",
                     rel, lineno, out.data);
    }
    checked++;
  }
  fclose(f);
  free(text);
  dk__buf_dispose(&out);
  dk__arena_dispose(&ar);
  CHECK_EQ_INT(bad, 0);
  CHECK(checked > 1000);
}
