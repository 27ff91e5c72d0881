/* test_json.c — JSON parser: RFC 8259 grammar accept/reject cases, escapes, UTF-8 (RFC 3629),
** number exactness, depth limit, error offsets, lookups.
**
** Oracles: the grammar of RFC 8259 (sections 2-7) and the UTF-8 definition of RFC 3629
** section 4 decide each accept/reject case; int64 limits come from <stdint.h>; code points
** are checked against their UTF-8 encoding as defined by RFC 3629 (byte patterns). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "test.h"

static dk_status parse_n(dk_arena *ar, const char *s, size_t n, dk_json_value **v,
                         dk_error *err) {
  dk_error_init(err);
  return dk__json_parse(v, ar, s, n, err);
}

static dk_status parse_s(dk_arena *ar, const char *s, dk_json_value **v, dk_error *err) {
  return parse_n(ar, s, strlen(s), v, err);
}

/* RFC 8259 valid texts */
static const char *const k_accept[] = {
    "0", "-0", "1", "-1", "123", "0.5", "-0.0", "1e5", "1E5", "1e+5", "1e-5", "1.25E-10",
    "12345678901234567890123456789", "true", "false", "null", "\"\"", "\"a\"",
    "[]", "{}", "[[]]", "[{}]", "{\"a\":[]}", " \t\r\n1 \t\r\n", "[1,2,3]",
    "{\"a\":1,\"b\":2}", "{\"a\":1,\"a\":2}", "[ 1 , 2 ]", "{ \"k\" : \"v\" }",
    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\"", "\"\\u00e9\"", "\"\\uD83D\\uDE00\"",
    "\"\\u0000\"", "\"\x7f\"", "\"\xc3\xa9\"", "\"\xe2\x82\xac\"", "\"\xf0\x9f\x98\x80\"",
    "\"\xef\xbf\xbf\"", "\"\xf4\x8f\xbf\xbf\"", "\"\xed\x9f\xbf\"", "\"\xee\x80\x80\"",
    "[null,true,false,\"x\",1.5,{},[]]", "1e400", "-1e-400",
    "\"0123456789abcdef0123456789abcdef\\n0123456789abcdef0123456789abcdef\"",
};

/* invalid by RFC 8259 / RFC 3629 */
static const char *const k_reject[] = {
    "", " ", "+1", "01", "-01", "00", "1.", ".5", "-", "1e", "1e+", "1.e5", "0x10", "NaN",
    "Infinity", "-Infinity", "tru", "nul", "falsey", "True", "[", "]", "[1,]", "[,1]",
    "[1 2]", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}", "{'a':1}", "{1:1}",
    "\"abc", "\"\\\"", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\uD800\"",
    "\"\\uD800x\"", "\"\\uD800\\u0041\"", "\"\\uDC00\"", "\"\\uDBFF\\uDBFF\"",
    "\"\t\"", "\"\n\"", "\"\x01\"", "\"\x1f\"", "\"\x80\"", "\"\xbf\"", "\"\xc0\x80\"",
    "\"\xc1\xbf\"", "\"\xc3\"", "\"\xc3x\"", "\"\xe0\x80\x80\"", "\"\xe0\x9f\xbf\"",
    "\"\xed\xa0\x80\"", "\"\xed\xbf\xbf\"", "\"\xe2\x82\"", "\"\xf0\x80\x80\x80\"",
    "\"\xf0\x8f\xbf\xbf\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xff\"",
    "\"\xfe\"", "1 2", "{} x", "[]]", "\"a\"\"b\"", "/*c*/1", "1//c", "[1]\x0c",
    "\xef\xbb\xbf" "1", "'a'", "[\"a\",]", "\"\xf0\x9f\x98\"", "-a", "1.5e",
};

DK_TEST(json__rfc8259_accept) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  for (size_t i = 0; i < DK_ARRAY_LEN(k_accept); i++) {
    dk_json_value *v;
    dk_error err;
    dk_status st = parse_s(&ar, k_accept[i], &v, &err);
    if (st != DK_OK) {
      dk_test_fail(__FILE__, __LINE__, "case %zu <%s> rejected: %s", i, k_accept[i],
                   err.message);
      break;
    }
  }
  dk__arena_dispose(&ar);
}

DK_TEST(json__rfc8259_reject) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  for (size_t i = 0; i < DK_ARRAY_LEN(k_reject); i++) {
    dk_json_value *v;
    dk_error err;
    dk_status st = parse_s(&ar, k_reject[i], &v, &err);
    if (st != DK_CORRUPT || v != NULL || strstr(err.message, "byte offset") == NULL) {
      dk_test_fail(__FILE__, __LINE__, "case %zu <%s> gave %s", i, k_reject[i],
                   dk_status_str(st));
      break;
    }
  }
  dk__arena_dispose(&ar);
}

DK_TEST(json__embedded_nul_and_truncation) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  /* a raw NUL byte is a control character: rejected */
  CHECK_STATUS(parse_n(&ar, "\"a\0b\"", 5, &v, &err), DK_CORRUPT);
  /* the length bounds the input: "[1]" followed by bytes outside the given length */
  CHECK_OK(parse_n(&ar, "[1]xyz", 3, &v, &err), &err);
  CHECK_EQ_INT(v->type, DK_JSON_ARRAY);
  /* every proper prefix of a valid document is invalid */
  const char *doc = "{\"a\":[1,-2.5e3,\"x\\u00e9\\n\",true,null,{\"b\":false}]}";
  for (size_t n = 0; n < strlen(doc); n++)
    CHECK_STATUS(parse_n(&ar, doc, n, &v, &err), DK_CORRUPT);
  CHECK_OK(parse_n(&ar, doc, strlen(doc), &v, &err), &err);
  dk__arena_dispose(&ar);
}

DK_TEST(json__error_offset) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  CHECK_STATUS(parse_s(&ar, "[1, 2, x]", &v, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "byte offset 7") != NULL);
  CHECK_STATUS(parse_s(&ar, "{\"k\": \"\xc3\x28\"}", &v, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "byte offset 7") != NULL);
  CHECK(strstr(err.message, "UTF-8") != NULL);
  CHECK_STATUS(parse_s(&ar, "{} }", &v, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "byte offset 3") != NULL);
  dk__arena_dispose(&ar);
}

DK_TEST(json__structure_and_lookup) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  CHECK_OK(parse_s(&ar, "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"},\"a\":\"last\"}",
                   &v, &err),
           &err);
  CHECK_EQ_INT(v->type, DK_JSON_OBJECT);
  CHECK_EQ_INT(v->len, 4);
  CHECK_EQ_STR(v->u.members[0].key, "a");
  CHECK_EQ_STR(v->u.members[3].key, "a");
  size_t n;
  CHECK_EQ_STR(dk__json_as_str(dk__json_get(v, "a"), &n), "last");
  CHECK_EQ_INT(n, 4);
  const dk_json_value *b = dk__json_get(v, "b");
  CHECK(b && b->type == DK_JSON_ARRAY && b->len == 3);
  bool bv = false;
  CHECK(dk__json_as_bool(&b->u.items[0], &bv) && bv);
  CHECK(dk__json_as_bool(&b->u.items[1], &bv) && !bv);
  CHECK(dk__json_is_null(&b->u.items[2]));
  CHECK(!dk__json_as_bool(&b->u.items[2], &bv));
  CHECK_EQ_STR(dk__json_as_str(dk__json_get(dk__json_get(v, "c"), "d"), NULL), "e");
  CHECK(dk__json_get(v, "zz") == NULL);
  CHECK(dk__json_getn(v, "ab", 1) == dk__json_get(v, "a"));
  CHECK(dk__json_get(b, "a") == NULL);
  CHECK(dk__json_get(NULL, "a") == NULL);
  CHECK(dk__json_is_null(NULL));
  /* empty containers */
  CHECK_OK(parse_s(&ar, "[{},[]]", &v, &err), &err);
  CHECK_EQ_INT(v->u.items[0].type, DK_JSON_OBJECT);
  CHECK_EQ_INT(v->u.items[0].len, 0);
  CHECK_EQ_INT(v->u.items[1].type, DK_JSON_ARRAY);
  CHECK_EQ_INT(v->u.items[1].len, 0);
  dk__arena_dispose(&ar);
}

DK_TEST(json__escapes_decode) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  CHECK_OK(parse_s(&ar, "\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"", &v, &err), &err);
  CHECK_EQ_STR(v->u.str, "a\"b\\c/d\be\ff\ng\rh\ti");
  CHECK_EQ_INT(v->len, 17);
  /* \u escapes: UTF-8 byte patterns of RFC 3629 section 3 */
  CHECK_OK(parse_s(&ar, "\"\\u0041\\u00E9\\u20ac\\uFFFF\\uD83D\\uDE00\\uDBFF\\uDFFF\"", &v, &err),
           &err);
  CHECK_EQ_STR(v->u.str, "A\xc3\xa9\xe2\x82\xac\xef\xbf\xbf\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
  /* \u0000 yields an embedded NUL; len counts it */
  CHECK_OK(parse_s(&ar, "\"x\\u0000y\"", &v, &err), &err);
  CHECK_EQ_INT(v->len, 3);
  CHECK(memcmp(v->u.str, "x\0y", 4) == 0);
  /* escapes in keys */
  CHECK_OK(parse_s(&ar, "{\"k\\u0065y\":1}", &v, &err), &err);
  CHECK(dk__json_get(v, "key") != NULL);
  /* long strings crossing the 16-byte scan blocks at every alignment */
  char buf[200], want[200];
  for (int pos = 0; pos < 40; pos++) {
    int n = 0, w = 0;
    buf[n++] = '"';
    for (int i = 0; i < pos; i++) buf[n++] = want[w++] = (char)('a' + i % 26);
    buf[n++] = '\\';
    buf[n++] = 'n';
    want[w++] = '\n';
    memcpy(buf + n, "\xc3\xa9", 2);
    memcpy(want + w, "\xc3\xa9", 2);
    n += 2;
    w += 2;
    for (int i = 0; i < 37; i++) buf[n++] = want[w++] = (char)('A' + i % 26);
    buf[n++] = '"';
    want[w] = 0;
    CHECK_OK(parse_n(&ar, buf, (size_t)n, &v, &err), &err);
    CHECK_EQ_INT(v->len, w);
    CHECK_EQ_STR(v->u.str, want);
    /* same with a control character at that position: rejected at that offset */
    buf[1 + pos] = '\x02';
    CHECK_STATUS(parse_n(&ar, buf, (size_t)n, &v, &err), DK_CORRUPT);
    char off[64];
    snprintf(off, sizeof off, "byte offset %d:", 1 + pos);
    CHECK(strstr(err.message, off) != NULL);
  }
  dk__arena_dispose(&ar);
}

DK_TEST(json__number_text_exact) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  const char *nums[] = {"0", "-0", "1.50", "1E+05", "-12345678901234567890.000000001e-7"};
  for (size_t i = 0; i < DK_ARRAY_LEN(nums); i++) {
    CHECK_OK(parse_s(&ar, nums[i], &v, &err), &err);
    CHECK_EQ_INT(v->type, DK_JSON_NUMBER);
    CHECK_EQ_STR(v->u.num, nums[i]);
    CHECK_EQ_INT(v->len, strlen(nums[i]));
  }
  dk__arena_dispose(&ar);
}

DK_TEST(json__as_i64) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  int64_t x;
  char buf[64];
  /* limits from <stdint.h> printed with PRId64 */
  snprintf(buf, sizeof buf, "%" PRId64, INT64_MAX);
  CHECK_OK(parse_s(&ar, buf, &v, &err), &err);
  CHECK(dk__json_as_i64(v, &x) && x == INT64_MAX);
  snprintf(buf, sizeof buf, "%" PRId64, INT64_MIN);
  CHECK_OK(parse_s(&ar, buf, &v, &err), &err);
  CHECK(dk__json_as_i64(v, &x) && x == INT64_MIN);
  CHECK_OK(parse_s(&ar, "9223372036854775808", &v, &err), &err); /* 2^63 */
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "-9223372036854775809", &v, &err), &err); /* -2^63 - 1 */
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "18446744073709551616", &v, &err), &err); /* 2^64 */
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "99999999999999999999999", &v, &err), &err);
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "-0", &v, &err), &err);
  CHECK(dk__json_as_i64(v, &x) && x == 0);
  CHECK_OK(parse_s(&ar, "1.0", &v, &err), &err);
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "1e3", &v, &err), &err);
  CHECK(!dk__json_as_i64(v, &x));
  CHECK_OK(parse_s(&ar, "\"5\"", &v, &err), &err);
  CHECK(!dk__json_as_i64(v, &x));
  /* every power of ten and its neighbours within int64 */
  int64_t p = 1;
  for (int i = 0; i < 19; i++) {
    if (i) p *= 10;
    int64_t cand[] = {p, p - 1, -p, -p + 1, p + 1};
    for (size_t j = 0; j < DK_ARRAY_LEN(cand); j++) {
      snprintf(buf, sizeof buf, "%" PRId64, cand[j]);
      CHECK_OK(parse_s(&ar, buf, &v, &err), &err);
      CHECK(dk__json_as_i64(v, &x) && x == cand[j]);
    }
  }
  dk__arena_dispose(&ar);
}

DK_TEST(json__as_double) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  double d;
  /* oracle: the C library's strtod of the same text */
  const char *nums[] = {"0", "-0", "0.1", "1e-320", "2.2250738585072014e-308",
                        "1.7976931348623157e308",
                        "123456789012345678901234567890", "-3.5E+2"};
  for (size_t i = 0; i < DK_ARRAY_LEN(nums); i++) {
    CHECK_OK(parse_s(&ar, nums[i], &v, &err), &err);
    CHECK(dk__json_as_double(v, &d));
    double want = strtod(nums[i], NULL);
    CHECK(memcmp(&d, &want, sizeof d) == 0);
  }
  CHECK_OK(parse_s(&ar, "1e400", &v, &err), &err);
  CHECK(!dk__json_as_double(v, &d));
  CHECK_OK(parse_s(&ar, "-1e400", &v, &err), &err);
  CHECK(!dk__json_as_double(v, &d));
  CHECK_OK(parse_s(&ar, "1e-400", &v, &err), &err);
  CHECK(dk__json_as_double(v, &d) && d == 0.0);
  CHECK_OK(parse_s(&ar, "true", &v, &err), &err);
  CHECK(!dk__json_as_double(v, &d));
  dk__arena_dispose(&ar);
}

static char *nest(int depth, size_t *n) {
  char *s = malloc((size_t)depth * 2 + 1);
  for (int i = 0; i < depth; i++) {
    s[i] = '[';
    s[2 * depth - 1 - i] = ']';
  }
  *n = (size_t)depth * 2;
  return s;
}

DK_TEST(json__depth_limit) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *v;
  dk_error err;
  size_t n;
  char *s = nest(DK_JSON_MAX_DEPTH, &n);
  CHECK_OK(parse_n(&ar, s, n, &v, &err), &err);
  free(s);
  s = nest(DK_JSON_MAX_DEPTH + 1, &n);
  CHECK_STATUS(parse_n(&ar, s, n, &v, &err), DK_CORRUPT);
  free(s);
  /* a million open brackets: rejected quickly, no deep recursion */
  n = 1000000;
  s = malloc(n);
  memset(s, '[', n);
  CHECK_STATUS(parse_n(&ar, s, n, &v, &err), DK_CORRUPT);
  memset(s, '{', n);
  CHECK_STATUS(parse_n(&ar, s, n, &v, &err), DK_CORRUPT);
  free(s);
  /* objects count as levels too */
  char obj[4096];
  size_t k = 0;
  for (int i = 0; i < DK_JSON_MAX_DEPTH; i++)
    k += (size_t)snprintf(obj + k, sizeof obj - k, "{\"a\":");
  k += (size_t)snprintf(obj + k, sizeof obj - k, "1");
  for (int i = 0; i < DK_JSON_MAX_DEPTH; i++) obj[k++] = '}';
  CHECK_OK(parse_n(&ar, obj, k, &v, &err), &err);
  dk__arena_dispose(&ar);
}

DK_TEST(json__large_array_items) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_error err = {0};
  CHECK_OK(dk__buf_putc(&b, '[', &err), &err);
  for (int i = 0; i < 100000; i++)
    CHECK_OK(dk__buf_printf(&b, &err, "%s[%d,{\"k\":%d}]", i ? "," : "", i, -i), &err);
  CHECK_OK(dk__buf_putc(&b, ']', &err), &err);
  dk_json_value *v;
  CHECK_OK(parse_n(&ar, b.data, b.len, &v, &err), &err);
  CHECK_EQ_INT(v->len, 100000);
  for (uint32_t i = 0; i < v->len; i += 997) {
    int64_t x;
    CHECK(dk__json_as_i64(&v->u.items[i].u.items[0], &x) && x == (int64_t)i);
    CHECK(dk__json_as_i64(dk__json_get(&v->u.items[i].u.items[1], "k"), &x) && x == -(int64_t)i);
  }
  dk__buf_dispose(&b);
  dk__arena_dispose(&ar);
}

/* long strings with escapes at pseudo-random places (exercises scratch growth beyond the
 * inline buffer and the 16-byte store path); expected bytes follow RFC 8259 section 7 */
DK_TEST(json__long_escaped_strings) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_buf raw, want;
  dk__buf_init(&raw, NULL);
  dk__buf_init(&want, NULL);
  dk_error err = {0};
  uint32_t seed = 7;
  const size_t sizes[] = {15, 16, 17, 100, 4095, 4096, 4097, 70000, 300000};
  for (size_t si = 0; si < DK_ARRAY_LEN(sizes); si++) {
    dk__buf_clear(&raw);
    dk__buf_clear(&want);
    CHECK_OK(dk__buf_putc(&raw, '"', &err), &err);
    CHECK_OK(dk__buf_puts(&raw, "\\t", &err), &err); /* escape first: slow path from byte 0 */
    CHECK_OK(dk__buf_putc(&want, '\t', &err), &err);
    while (want.len < sizes[si]) {
      seed = seed * 1103515245u + 12345u;
      unsigned r = (seed >> 16) % 40;
      if (r == 0) {
        CHECK_OK(dk__buf_puts(&raw, "\\\"", &err), &err);
        CHECK_OK(dk__buf_putc(&want, '"', &err), &err);
      } else if (r == 1) {
        CHECK_OK(dk__buf_puts(&raw, "\\u20AC", &err), &err);
        CHECK_OK(dk__buf_puts(&want, "\xe2\x82\xac", &err), &err);
      } else if (r == 2) {
        CHECK_OK(dk__buf_puts(&raw, "\xc3\xa9", &err), &err);
        CHECK_OK(dk__buf_puts(&want, "\xc3\xa9", &err), &err);
      } else if (r == 3) {
        CHECK_OK(dk__buf_puts(&raw, "\\\\", &err), &err);
        CHECK_OK(dk__buf_putc(&want, '\\', &err), &err);
      } else {
        char c = (char)('a' + (seed >> 8) % 26);
        CHECK_OK(dk__buf_putc(&raw, c, &err), &err);
        CHECK_OK(dk__buf_putc(&want, c, &err), &err);
      }
    }
    CHECK_OK(dk__buf_putc(&raw, '"', &err), &err);
    dk_json_value *v;
    CHECK_OK(parse_n(&ar, raw.data, raw.len, &v, &err), &err);
    CHECK_EQ_INT(v->type, DK_JSON_STRING);
    CHECK_EQ_INT(v->len, want.len);
    CHECK(memcmp(v->u.str, want.data, want.len) == 0);
    CHECK_EQ_INT(v->u.str[v->len], 0);
    /* same text without its closing quote: unterminated */
    CHECK_STATUS(parse_n(&ar, raw.data, raw.len - 1, &v, &err), DK_CORRUPT);
    CHECK(strstr(err.message, "unterminated") != NULL);
  }
  dk__buf_dispose(&raw);
  dk__buf_dispose(&want);
  dk__arena_dispose(&ar);
}

typedef struct counting_alloc {
  long live, calls;
} counting_alloc;
static void *ca_malloc(void *ctx, size_t n) {
  counting_alloc *c = ctx;
  c->live++;
  c->calls++;
  return malloc(n);
}
static void *ca_realloc(void *ctx, void *p, size_t n) {
  counting_alloc *c = ctx;
  c->calls++;
  if (!p) c->live++;
  return realloc(p, n);
}
static void ca_free(void *ctx, void *p) {
  counting_alloc *c = ctx;
  if (p) c->live--;
  free(p);
}

/* DOM parsing allocates only arena chunks (no malloc per value) and frees all it takes */
DK_TEST(json__allocations_are_per_chunk) {
  counting_alloc cnt = {0, 0};
  dk_allocator al = {&cnt, ca_malloc, ca_realloc, ca_free};
  dk_arena ar;
  dk__arena_init(&ar, &al, 1 << 20);
  const char *line =
      "{\"add\":{\"path\":\"part-00000-1.c000.snappy.parquet\",\"partitionValues\":{\"p\":\"1\"},"
      "\"size\":1234,\"modificationTime\":1600000000000,\"dataChange\":true,"
      "\"stats\":\"{\\\"numRecords\\\":10,\\\"minValues\\\":{\\\"a\\\":1},"
      "\\\"maxValues\\\":{\\\"a\\\":9},\\\"nullCount\\\":{\\\"a\\\":0}}\"}}";
  dk_error err = {0};
  for (int i = 0; i < 1000; i++) {
    dk_json_value *v;
    CHECK_OK(dk__json_parse(&v, &ar, line, strlen(line), &err), &err);
  }
  CHECK(cnt.calls <= 2); /* 1000 lines of ~300 bytes fit one or two 1 MiB chunks */
  /* deep/wide documents spill the parse stacks to the heap and free them again */
  dk_buf b;
  dk__buf_init(&b, NULL);
  CHECK_OK(dk__buf_putc(&b, '{', &err), &err);
  for (int i = 0; i < 5000; i++)
    CHECK_OK(dk__buf_printf(&b, &err, "%s\"k%d\":[%d,%d]", i ? "," : "", i, i, -i), &err);
  CHECK_OK(dk__buf_putc(&b, '}', &err), &err);
  dk_json_value *v;
  CHECK_OK(dk__json_parse(&v, &ar, b.data, b.len, &err), &err);
  CHECK_EQ_INT(v->len, 5000);
  int64_t x;
  CHECK(dk__json_as_i64(&dk__json_get(v, "k4321")->u.items[1], &x) && x == -4321);
  dk__buf_dispose(&b);
  dk__arena_dispose(&ar);
  CHECK_EQ_INT(cnt.live, 0);
}
