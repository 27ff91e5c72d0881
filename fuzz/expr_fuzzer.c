/*
** expr_fuzzer.c — predicate parser fuzz target: parse, print, re-parse, print again; the two
** printed forms must be identical (the printer's round-trip property, include/dk/expr.h).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dk_error err;
  dk_error_init(&err);
  dk_expr *e = NULL, *e2 = NULL;
  char *s1 = NULL, *s2 = NULL;
  if (dk_expr_parsen(&e, (const char *)data, size, &err) != DK_OK) return 0;
  if (dk_expr_to_string(&s1, e, &err) != DK_OK) abort();
  dk_error_init(&err);
  if (dk_expr_parse(&e2, s1, &err) != DK_OK) {
    fprintf(stderr, "printed form does not parse: %s\n  %s\n", s1, err.message);
    abort();
  }
  if (dk_expr_to_string(&s2, e2, &err) != DK_OK) abort();
  if (strcmp(s1, s2) != 0) {
    fprintf(stderr, "round trip differs:\n  %s\n  %s\n", s1, s2);
    abort();
  }
  dk_expr_string_free(s1);
  dk_expr_string_free(s2);
  dk_expr_free(e);
  dk_expr_free(e2);
  return 0;
}
