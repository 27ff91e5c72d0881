/* test_expr_parse.c — parser and printer: canonical forms, round trips, error positions. */
#include <stdlib.h>

#include "dk/expr.h"
#include "test.h"

/* parse(text) prints as want, and parse(want) prints as want again (fixed point). */
static int roundtrip(const char *text, const char *want) {
  dk_error err = {0};
  dk_expr *e = NULL, *e2 = NULL;
  char *s = NULL, *s2 = NULL;
  int ok = 0;
  if (dk_expr_parse(&e, text, &err)) {
    dk_test_fail(__FILE__, __LINE__, "parse(%s): %s", text, err.message);
    return 0;
  }
  if (dk_expr_to_string(&s, e, &err)) goto done;
  if (strcmp(s, want) != 0) {
    dk_test_fail(__FILE__, __LINE__, "parse(%s) printed \"%s\", want \"%s\"", text, s, want);
    goto done;
  }
  if (dk_expr_parse(&e2, s, &err) || dk_expr_to_string(&s2, e2, &err)) {
    dk_test_fail(__FILE__, __LINE__, "reparse(%s): %s", s, err.message);
    goto done;
  }
  if (strcmp(s, s2) != 0) {
    dk_test_fail(__FILE__, __LINE__, "not a fixed point: \"%s\" -> \"%s\"", s, s2);
    goto done;
  }
  ok = 1;
done:
  dk_expr_string_free(s);
  dk_expr_string_free(s2);
  dk_expr_free(e);
  dk_expr_free(e2);
  return ok;
}

#define RT(text, want) CHECK(roundtrip(text, want))

DK_TEST(expr__parse_canonical) {
  RT("a=1", "a = 1");
  RT("a == 1", "a = 1");
  RT("a <> 1", "a != 1");
  RT("a<=>NULL", "a <=> NULL");
  RT("x.y.z >= -5", "x.y.z >= -5");
  RT("`weird col`.`a``b` < 'it''s'", "`weird col`.`a``b` < 'it''s'");
  RT("`and` = TRUE", "`and` = TRUE");
  RT("a = 1 AND b = 2 AND c = 3", "a = 1 AND b = 2 AND c = 3");
  RT("a = 1 OR b = 2 AND c = 3", "a = 1 OR (b = 2 AND c = 3)");
  RT("(a = 1 OR b = 2) AND c = 3", "(a = 1 OR b = 2) AND c = 3");
  RT("NOT a = 1", "NOT (a = 1)");
  RT("not not flag", "NOT (NOT flag)");
  RT("a is null or b IS NOT NULL", "a IS NULL OR b IS NOT NULL");
  RT("a in (1, 2,3)", "a IN (1, 2, 3)");
  RT("a not in (1, NULL)", "NOT (a IN (1, NULL))");
  RT("s LIKE 'ab%'", "STARTS_WITH(s, 'ab')");
  RT("s NOT LIKE 'a\\%b%'", "NOT STARTS_WITH(s, 'a%b')");
  RT("s LIKE 'abc'", "s = 'abc'");
  RT("s LIKE '%x'", "s LIKE '%x'");
  RT("s like 'a_b%'", "s LIKE 'a_b%'");
  RT("s LIKE 'a%%'", "STARTS_WITH(s, 'a')");
  RT("s LIKE 'a\\_'", "s = 'a_'");
  RT("s NOT LIKE '_'", "NOT (s LIKE '_')");
  RT("starts_with(s, 'x')", "STARTS_WITH(s, 'x')");
  RT("price > 10.5", "price > 10.5");
  RT("price > 0.05", "price > 0.05");
  RT("d = 1e3", "d = DOUBLE '1e+03'");
  RT("d = DOUBLE 'NaN'", "d = DOUBLE 'NaN'");
  RT("d = 1.5E-1", "d = DOUBLE '0.15'");
  RT("d = DATE '2024-01-01'", "d = DATE '2024-01-01'");
  RT("t < TIMESTAMP '2024-01-01 00:00:00.5'", "t < TIMESTAMP '2024-01-01 00:00:00.500000'");
  RT("t < TIMESTAMP '2024-01-01T01:30:00+01:30'", "t < TIMESTAMP '2024-01-01 00:00:00'");
  RT("t < TIMESTAMP '2024-01-01T00:00:00Z'", "t < TIMESTAMP '2024-01-01 00:00:00'");
  RT("t = TIMESTAMP_NTZ '1969-12-31 23:59:59.999999'",
     "t = TIMESTAMP_NTZ '1969-12-31 23:59:59.999999'");
  RT("b = X'0a0B'", "b = X'0a0b'");
  RT("i = INT '7' and j = tinyint '-8' and k = SMALLINT '9'",
     "i = INT '7' AND j = TINYINT '-8' AND k = SMALLINT '9'");
  RT("x = DECIMAL(10,2) '3.5'", "x = DECIMAL(10,2) '3.50'");
  RT("x = 99999999999999999999", "x = DECIMAL(20,0) '99999999999999999999'");
  RT("x = -9223372036854775808", "x = -9223372036854775808");
  RT("f = FLOAT '0.1'", "f = FLOAT '0.1'");
  RT("date = 1", "date = 1");
  RT("(a) = (1)", "a = 1");
  RT("(a = 1) = FALSE", "(a = 1) = FALSE");
  RT("'x' = s", "'x' = s");
  RT("TRUE", "TRUE");
  /* Spark: `a BETWEEN lo AND hi` is defined as `a >= lo AND a <= hi` */
  RT("a BETWEEN 1 AND 5", "a >= 1 AND a <= 5");
  RT("a between -1.5 and b AND c = 2", "(a >= -1.5 AND a <= b) AND c = 2");
  RT("a NOT BETWEEN 'x' AND 'y' OR b", "NOT (a >= 'x' AND a <= 'y') OR b");
  RT("st.x BETWEEN DATE '2024-01-01' AND (y)", "st.x >= DATE '2024-01-01' AND st.x <= y");
  /* isnan(x): TRUE for NaN, FALSE otherwise (NULL included) = x <=> NaN */
  RT("isnan(d)", "d <=> DOUBLE 'NaN'");
  RT("NOT ISNAN(s.d) AND isnan(e)", "NOT (s.d <=> DOUBLE 'NaN') AND e <=> DOUBLE 'NaN'");
}

static void expect_error(const char *text, dk_status want, const char *needle, int line) {
  dk_error err = {0};
  dk_expr *e = NULL;
  dk_status st = dk_expr_parse(&e, text, &err);
  if (st != want) {
    dk_test_fail(__FILE__, line, "parse(%s) returned %s, want %s", text, dk_status_str(st),
                 dk_status_str(want));
  } else if (needle && !strstr(err.message, needle)) {
    dk_test_fail(__FILE__, line, "parse(%s) error \"%s\" lacks \"%s\"", text, err.message,
                 needle);
  }
  CHECK(e == NULL);
  dk_expr_free(e);
}

#define ERR(text, st, needle) expect_error(text, st, needle, __LINE__)

DK_TEST(expr__parse_errors) {
  ERR("", DK_INVALID, "offset 0");
  ERR("a =", DK_INVALID, "offset 3");
  ERR("a = 1 b", DK_INVALID, "offset 6");
  ERR("a = 'x", DK_INVALID, "unterminated");
  ERR("(a = 1", DK_INVALID, "offset 6");
  ERR("a = 1 = 2", DK_INVALID, "offset 6");
  ERR("a IN ()", DK_INVALID, "offset 6");
  ERR("a IS 1", DK_INVALID, "expected NULL");
  ERR("s LIKE 'a\\'", DK_INVALID, "offset 7");
  ERR("s LIKE 'a\\x%'", DK_INVALID, "LIKE");
  ERR("d = DATE '2024-02-30'", DK_INVALID, "DATE");
  ERR("t = TIMESTAMP_NTZ '2024-01-01 00:00:00Z'", DK_INVALID, "TIMESTAMP_NTZ");
  ERR("b = X'abc'", DK_INVALID, "even");
  ERR("a = 12abc", DK_INVALID, "malformed number");
  ERR("a = 1 AND", DK_INVALID, "offset 9");
  ERR("AND = 1", DK_INVALID, "keyword");
  ERR("i = INT '99999999999'", DK_INVALID, "INT");
  ERR("x = DECIMAL(3,1) '123.4'", DK_INVALID, NULL);
  ERR("a # 1", DK_INVALID, "offset 2");
  ERR("`` = 1", DK_INVALID, NULL);
  ERR("a BETWEEN 1", DK_INVALID, "AND in BETWEEN");
  ERR("a BETWEEN 1 OR 2", DK_INVALID, "offset 12");
  ERR("a BETWEEN 1 AND", DK_INVALID, "offset 15");
  ERR("a NOT 1", DK_INVALID, "BETWEEN");
  ERR("isnan(d", DK_INVALID, "offset 7");
  ERR("isnan()", DK_INVALID, "offset 6");
  ERR("BETWEEN = 1", DK_INVALID, "keyword");
  /* deep nesting is refused, not a stack overflow */
  char deep[4000];
  size_t k = 0;
  for (int i = 0; i < 1500; i++) deep[k++] = '(';
  deep[k++] = 'a';
  for (int i = 0; i < 1500; i++) deep[k++] = ')';
  deep[k] = 0;
  ERR(deep, DK_INVALID, "deep");
  k = 0;
  for (int i = 0; i < 900; i++) {
    memcpy(deep + k, "NOT ", 4);
    k += 4;
  }
  deep[k++] = 'a';
  deep[k] = 0;
  ERR(deep, DK_INVALID, "deep");
}

DK_TEST(expr__build_and_print) {
  dk_error err = {0};
  const char *path[] = {"a", "b"};
  dk_expr *col, *lit, *cmp, *col2, *isn, *conj;
  CHECK_OK(dk_expr_column(&col, path, 2, &err), &err);
  CHECK_OK(dk_expr_literal_decimal(&lit, 0, 1234, 6, 2, &err), &err);
  CHECK_OK(dk_expr_cmp(&cmp, DK_CMP_GE, col, lit, &err), &err);
  CHECK_OK(dk_expr_column(&col2, path, 1, &err), &err);
  CHECK_OK(dk_expr_is_null(&isn, col2, true, &err), &err);
  CHECK_OK(dk_expr_and(&conj, cmp, isn, &err), &err);
  char *s;
  CHECK_OK(dk_expr_to_string(&s, conj, &err), &err);
  CHECK_EQ_STR(s, "a.b >= DECIMAL(6,2) '12.34' AND a IS NOT NULL");
  dk_expr_string_free(s);
  CHECK(dk_expr_get_kind(conj) == DK_EXPR_AND);
  CHECK(dk_expr_num_children(conj) == 2);
  CHECK(dk_expr_get_cmp_op(dk_expr_child(conj, 0)) == DK_CMP_GE);
  CHECK_EQ_STR(dk_expr_column_name(dk_expr_child(dk_expr_child(conj, 0), 0), 1), "b");
  dk_expr_free(conj);
  /* constructors consume children even on failure */
  dk_expr *c3, *bad;
  CHECK_OK(dk_expr_column(&c3, path, 1, &err), &err);
  CHECK_STATUS(dk_expr_cmp(&bad, (dk_cmp_op)99, c3, NULL, &err), DK_INVALID);
  CHECK(bad == NULL);
  CHECK_STATUS(dk_expr_literal_string(&bad, "\xff", 1, &err), DK_INVALID);
  CHECK_STATUS(dk_expr_literal_decimal(&bad, 0, 1000, 3, 0, &err), DK_INVALID);
}

DK_TEST(expr__split) {
  dk_error err = {0};
  dk_expr *e, *only, *rest;
  CHECK_OK(dk_expr_parse(&e, "(P = 1 AND x > 2) AND (p = 2 OR q = 1) AND q IS NULL AND TRUE", &err), &err);
  const char *parts[] = {"p", "q"};
  CHECK_OK(dk_expr_split(&only, &rest, e, parts, 1, &err), &err);
  char *s1, *s2;
  CHECK_OK(dk_expr_to_string(&s1, only, &err), &err);
  CHECK_OK(dk_expr_to_string(&s2, rest, &err), &err);
  CHECK_EQ_STR(s1, "P = 1 AND TRUE");
  CHECK_EQ_STR(s2, "x > 2 AND (p = 2 OR q = 1) AND q IS NULL");
  dk_expr_string_free(s1);
  dk_expr_string_free(s2);
  dk_expr_free(only);
  dk_expr_free(rest);
  CHECK_OK(dk_expr_split(&only, &rest, e, parts, 2, &err), &err);
  CHECK(rest != NULL);
  CHECK_OK(dk_expr_to_string(&s2, rest, &err), &err);
  CHECK_EQ_STR(s2, "x > 2");
  dk_expr_string_free(s2);
  CHECK(dk_expr_references_only(only, parts, 2));
  CHECK(!dk_expr_references_only(rest, parts, 2));
  dk_expr_free(only);
  dk_expr_free(rest);
  dk_expr_free(e);
}
