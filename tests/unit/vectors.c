/*
** vectors.c — loading the JSON-lines oracle vectors of vectors.h (tests only): the header's
** table rebuilt as an Arrow batch, and the case lines one by one.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/values.h"
#include "test.h"
#include "vectors.h"

const char *dk_test_vectors_path(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "data/%s", name);
  return path;
}

/* Arrow format strings of the generators' type names (Spark's and DuckDB/pyarrow's). */
static const char *fmt_of(const char *type) {
  static const char *const map[][2] = {
      {"tinyint", "c"},  {"smallint", "s"}, {"int16", "s"},   {"int", "i"},
      {"int32", "i"},    {"bigint", "l"},   {"int64", "l"},   {"float", "f"},
      {"double", "g"},   {"string", "u"},   {"binary", "z"},  {"date", "tdD"},
      {"timestamp", "tsu:UTC"}, {"timestamp_ntz", "tsu:"},    {"boolean", "b"},
      {"bool", "b"},     {"decimal(5,0)", "d:5,0"}, {"decimal(10,2)", "d:10,2"},
      {"decimal(38,10)", "d:38,10"}, {"struct", "+s"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i][0], type)) return map[i][1];
  return NULL;
}

static int hexv(char c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static dk_status append_value(dk_arr *a, const dk_json_value *v, dk_error *err) {
  if (!v || v->type == DK_JSON_NULL) return dk__arr_append_null(a, err);
  switch (a->type.id) {
    case DK_AT_INT8: case DK_AT_INT16: case DK_AT_INT32: case DK_AT_INT64: case DK_AT_TIMESTAMP:
      return dk__arr_append_int(a, strtoll(v->u.num, NULL, 10), err);
    case DK_AT_DATE32: { /* days, or the date's text */
      if (v->type != DK_JSON_STRING) return dk__arr_append_int(a, strtoll(v->u.num, NULL, 10), err);
      int32_t d;
      DK_RETURN_NOT_OK(dk__parse_date(&d, v->u.str, v->len, err));
      return dk__arr_append_int(a, d, err);
    }
    case DK_AT_FLOAT:
    case DK_AT_DOUBLE:
      return dk__arr_append_double(a, strtod(v->type == DK_JSON_STRING ? v->u.str : v->u.num, NULL),
                                   err);
    case DK_AT_STRING:
      return dk__arr_append_bytes(a, v->u.str, v->len, err);
    case DK_AT_BINARY: { /* hex */
      uint8_t buf[64];
      size_t n = v->len / 2 < sizeof buf ? v->len / 2 : sizeof buf;
      for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(hexv(v->u.str[2 * i]) * 16 + hexv(v->u.str[2 * i + 1]));
      return dk__arr_append_bytes(a, buf, (int64_t)n, err);
    }
    case DK_AT_BOOL:
      return dk__arr_append_bool(a, v->u.b, err);
    case DK_AT_DECIMAL128: {
      dk_i128 u;
      DK_RETURN_NOT_OK(dk__parse_decimal(&u, v->u.str, v->len, a->type.scale, err));
      uint8_t b[16];
      memcpy(b, &u, 16);
      return dk__arr_append_bytes(a, b, 16, err);
    }
    case DK_AT_STRUCT: /* {"x": int, "y": string} */
      for (int64_t i = 0; i < a->n_children; i++)
        DK_RETURN_NOT_OK(append_value(&a->children[i], dk__json_get(v, i == 0 ? "x" : "y"), err));
      return dk__arr_finish_element(a, err);
    default:
      return dk__error_set(err, DK_INTERNAL, "test vectors: unsupported column type");
  }
}

int dk_test_vectors_load(dk_test_vectors *v, const char *name, dk_error *err) {
  memset(v, 0, sizeof *v);
  dk__arena_init(&v->ar, NULL, 1 << 20);
  if (dk__read_file(NULL, dk_test_vectors_path(name), &v->text, &v->len, err)) return 0;
  const char *nl = memchr(v->text, '\n', v->len);
  dk_json_value *h;
  if (!nl || dk__json_parse(&h, &v->ar, v->text, (size_t)(nl - v->text), err)) return 0;
  v->header = h;
  v->pos = (size_t)(nl - v->text) + 1;
  const dk_json_value *cols = dk__json_get(h, "columns"), *rows = dk__json_get(h, "rows");
  dk_atype sty = dk__atype_make(DK_AT_STRUCT);
  if (dk__schema_init(&v->schema, &sty, "", 0, cols->len, err)) return 0;
  for (uint32_t i = 0; i < cols->len; i++) {
    const dk_json_value *c = &cols->u.items[i];
    bool pair = c->type == DK_JSON_ARRAY;
    const char *cname = pair ? c->u.items[0].u.str : dk__json_get(c, "name")->u.str;
    const char *f = fmt_of(pair ? c->u.items[1].u.str : dk__json_get(c, "type")->u.str);
    dk_atype t;
    if (!f) {
      dk__error_set(err, DK_INTERNAL, "test vectors: column %s has an unknown type", cname);
      return 0;
    }
    if (dk__atype_parse(&t, f, err)) return 0;
    bool is_struct = t.id == DK_AT_STRUCT;
    if (dk__schema_init(v->schema.children[i], &t, cname, ARROW_FLAG_NULLABLE, is_struct ? 2 : 0,
                        err))
      return 0;
    if (is_struct) {
      dk_atype ti = dk__atype_make(DK_AT_INT32), tu = dk__atype_make(DK_AT_STRING);
      if (dk__schema_init(v->schema.children[i]->children[0], &ti, "x", ARROW_FLAG_NULLABLE, 0,
                          err) ||
          dk__schema_init(v->schema.children[i]->children[1], &tu, "y", ARROW_FLAG_NULLABLE, 0,
                          err))
        return 0;
    }
  }
  dk_arr a;
  if (dk__arr_init_from_schema(&a, &v->schema, NULL, err)) return 0;
  dk_status st = DK_OK;
  for (uint32_t r = 0; r < rows->len && !st; r++) {
    const dk_json_value *row = &rows->u.items[r];
    for (uint32_t c = 0; c < row->len && !st; c++)
      st = append_value(&a.children[c], &row->u.items[c], err);
    if (!st) st = dk__arr_finish_element(&a, err);
  }
  v->n_rows = rows->len;
  if (!st) st = dk__arr_finish(&a, &v->batch, err);
  dk__arr_reset(&a);
  return st == DK_OK;
}

bool dk_test_vectors_next(dk_test_vectors *v, const dk_json_value **c, dk_error *err) {
  while (v->pos < v->len) {
    const char *s = v->text + v->pos;
    const char *nl = memchr(s, '\n', v->len - v->pos);
    size_t n = nl ? (size_t)(nl - s) : v->len - v->pos;
    v->pos += n + 1;
    if (n == 0) continue;
    dk_json_value *j;
    if (dk__json_parse(&j, &v->ar, s, n, err)) return false;
    *c = j;
    return true;
  }
  return false;
}

void dk_test_vectors_free(dk_test_vectors *v) {
  dk__array_release(&v->batch);
  dk__schema_release(&v->schema);
  dk__arena_dispose(&v->ar);
  dk__free(NULL, v->text);
}
