/*
** test_expr_json.h — TEMPORARY minimal JSON reader for the expr tests, building the DOM of
** src/codec/json/json.h in a dk_arena. It exists only until the real JSON codec is merged;
** then tests switch to dk_json_parse and this file goes away.
*/
#ifndef DK_TEST_EXPR_JSON_H
#define DK_TEST_EXPR_JSON_H
#include "codec/json/json.h"

/* Parses text[0..len) into *out (arena-owned). Returns DK_OK or DK_CORRUPT. */
dk_status tjson_parse(dk_json_value **out, dk_arena *ar, const char *text, size_t len,
                      dk_error *err);
/* Object member lookup (last duplicate wins); NULL if absent. */
const dk_json_value *tjson_get(const dk_json_value *obj, const char *key);
#endif
