/*
** test_expr_alloc.c — expressions allocate through the caller's dk_allocator: dk_expr_parse_v2
** puts every node and every scratch block of the parser on its options' allocator (nothing
** on libc: a run with the allocator failing from the first call fails cleanly, and a counted
** run frees exactly what it took), dk_expr_split copies onto the allocator of the tree it
** splits, and composite constructors take their first child's. A fail-the-Nth-allocation
** loop (SQLite's malloc tests are the model, as in test_scan_alloc.c) over every construct
** of the grammar must end in DK_NOMEM with nothing live, or in the tree a libc parse prints.
*/
#include <stdlib.h>
#include <string.h>

#include "dk/expr.h"
#include "fail_alloc.h"
#include "test.h"

/* every construct of the grammar (include/dk/expr.h), nested and quoted columns included */
static const char *const TEXTS[] = {
    "a = 1",
    "`weird col`.`x``y` >= 'it''s' AND b.c.d < 2.5e3",
    "x IN (1, 2, 3, 40000000000000000000) OR y NOT IN ('a', 'b')",
    "d BETWEEN DATE'2020-01-01' AND DATE'2021-02-03' AND NOT (t NOT BETWEEN 1 AND 2)",
    "s LIKE 'abc' AND s LIKE 'pre%' AND s NOT LIKE '%mid_dle%' AND s LIKE 'a\\%b%'",
    "STARTS_WITH(s, 'pre') AND isnan(f) AND f <=> NULL AND g IS NOT NULL AND h IS NULL",
    "ts > TIMESTAMP'2020-01-01 00:00:00Z' AND ntz <= TIMESTAMP_NTZ'2020-01-01 10:00:00'",
    "dec = DECIMAL(10,2)'12.34' AND b = X'00ff' AND i = INT'7' AND l = BIGINT'-9' AND "
    "r = DOUBLE'1.5' AND by = TINYINT'1' AND sh = SMALLINT'2' AND fl = FLOAT'0.5' AND "
    "ok = TRUE AND no != FALSE",
};

static char *print_libc(const char *text) {
  dk_error err = {0};
  dk_expr *e = NULL;
  char *s = NULL;
  if (dk_expr_parse(&e, text, &err) || dk_expr_to_string(&s, e, &err)) {
    dk_test_fail(__FILE__, __LINE__, "parse(%s): %s", text, err.message);
    s = NULL;
  }
  dk_expr_free(e);
  return s;
}

DK_TEST(expr__parse_allocates_through_the_callers_allocator) {
  for (size_t k = 0; k < sizeof TEXTS / sizeof TEXTS[0]; k++) {
    const char *text = TEXTS[k];
    char *want = print_libc(text);
    CHECK(want != NULL);
    if (!want) continue;
    dk_test_fail_alloc f = {0};
    dk_allocator a = dk_test_fail_allocator(&f);
    dk_expr_parse_options o = {DK_EXPR_PARSE_OPTIONS_VERSION, &a};
    long needed = -1;
    for (long n = 0; n < 100000 && needed < 0; n++) {
      f = (dk_test_fail_alloc){.left = n};
      dk_error err = {0};
      dk_expr *e = NULL;
      dk_status st = dk_expr_parse_v2(&e, text, strlen(text), &o, &err);
      if (st == DK_OK) {
        needed = n;
        CHECK(f.live > 0); /* the tree lives on the caller's allocator */
        char *got = NULL;
        CHECK_OK(dk_expr_to_string(&got, e, &err), &err);
        if (got && strcmp(got, want) != 0)
          dk_test_fail(__FILE__, __LINE__, "%s: printed \"%s\", want \"%s\"", text, got, want);
        dk_free(got);
        dk_expr_free(e);
      } else {
        CHECK_STATUS(st, DK_NOMEM);
        CHECK(e == NULL);
        CHECK(err.message[0] != 0);
      }
      if (f.live != 0)
        dk_test_fail(__FILE__, __LINE__, "%s: failing allocation %ld leaves %ld blocks", text,
                     n, f.live);
    }
    CHECK(needed > 0); /* failing from the first call fails: nothing went around it */
    dk_free(want);
  }
}

DK_TEST(expr__split_and_composites_keep_the_trees_allocator) {
  dk_test_fail_alloc f = {.left = 1L << 40};
  dk_allocator a = dk_test_fail_allocator(&f);
  dk_expr_parse_options o = {DK_EXPR_PARSE_OPTIONS_VERSION, &a};
  const char *text = "p = 'x' AND a > 1 AND p IN ('y', 'z') AND b LIKE '%q%'";
  dk_error err = {0};
  dk_expr *e = NULL, *only = NULL, *rest = NULL, *both = NULL;
  CHECK_OK(dk_expr_parse_v2(&e, text, strlen(text), &o, &err), &err);
  long after_parse = f.live;
  const char *const cols[] = {"p"};
  CHECK_OK(dk_expr_split(&only, &rest, e, cols, 1, &err), &err);
  CHECK(f.live > after_parse); /* the copies are on the tree's allocator */
  long after_split = f.live;
  CHECK_OK(dk_expr_or(&both, dk_expr_ref(only), dk_expr_ref(rest), &err), &err);
  CHECK(f.live > after_split); /* the OR node took its first child's allocator */
  char *s = NULL;
  CHECK_OK(dk_expr_to_string(&s, both, &err), &err);
  CHECK_EQ_STR(s, "(p = 'x' AND p IN ('y', 'z')) OR (a > 1 AND b LIKE '%q%')");
  dk_free(s);
  dk_expr_free(both);
  dk_expr_free(only);
  dk_expr_free(rest);
  dk_expr_free(e);
  CHECK_EQ_INT(f.live, 0);
}

DK_TEST(expr__parse_options_version) {
  dk_error err = {0};
  dk_expr *e = NULL;
  dk_expr_parse_options o = {DK_EXPR_PARSE_OPTIONS_VERSION + 1, NULL};
  CHECK_STATUS(dk_expr_parse_v2(&e, "a = 1", 5, &o, &err), DK_INVALID);
  CHECK(strstr(err.message, "newer") != NULL);
  CHECK(e == NULL);
  o.version = 0;
  dk_error_init(&err);
  CHECK_OK(dk_expr_parse_v2(&e, "a = 1", 5, &o, &err), &err);
  dk_expr_free(e);
  CHECK_OK(dk_expr_parse_v2(&e, "a = 1", 5, NULL, &err), &err);
  dk_expr_free(e);
}
