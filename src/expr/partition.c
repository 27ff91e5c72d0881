/*
** partition.c — Delta partition values (serialized strings, Delta protocol "Partition Value
** Serialization") as typed literals and as Arrow batches with one row per file, so that a
** predicate bound to the partition schema prunes files exactly with the ordinary evaluator.
*/
#include "expr/expr_int.h"

dk_status dk_partition_literal_parse(dk_expr **out_literal, const char *text,
                                   const char *delta_type, dk_error *err) {
  *out_literal = NULL;
  DK_RETURN_IF(!delta_type, DK_INVALID, err, "NULL partition column type");
  dk_atype t;
  DK_RETURN_NOT_OK(dk__atype_from_delta(&t, delta_type, err));
  dk_lit l;
  DK_RETURN_NOT_OK(dk__lit_from_text(&l, text, text ? strlen(text) : 0, &t, NULL, err));
  dk_status st = dk_expr__new_literal(out_literal, &l, err);
  dk__free(NULL, l.bytes);
  return st;
}

static dk_status append_lit(dk_arr *a, const dk_lit *l, dk_error *err) {
  if (l->type == DK_LIT_NULL) return dk__arr_append_null(a, err);
  switch (a->type.id) {
    case DK_AT_BOOL:
      return dk__arr_append_bool(a, l->v.b, err);
    case DK_AT_FLOAT:
    case DK_AT_DOUBLE:
      return dk__arr_append_double(a, l->v.d, err);
    case DK_AT_DECIMAL128: {
      uint8_t b[16];
      memcpy(b, &l->v.dec, 16); /* little-endian hosts, as the Arrow buffers */
      return dk__arr_append_bytes(a, b, 16, err);
    }
    case DK_AT_TIMESTAMP: {
      int64_t v = l->v.i;
      switch (a->type.unit) {
        case DK_TU_SECOND: v = v / 1000000 - (v % 1000000 < 0); break;
        case DK_TU_MILLI: v = v / 1000 - (v % 1000 < 0); break;
        case DK_TU_NANO:
          DK_RETURN_IF(v > INT64_MAX / 1000 || v < INT64_MIN / 1000, DK_CORRUPT, err,
                       "partition timestamp out of range for nanoseconds");
          v *= 1000;
          break;
        default: break;
      }
      return dk__arr_append_int(a, v, err);
    }
    case DK_AT_STRING:
    case DK_AT_BINARY:
      return dk__arr_append_bytes(a, l->bytes, (int64_t)l->len, err);
    default:
      return dk__arr_append_int(a, l->v.i, err);
  }
}

dk_status dk_partition_batch(struct ArrowArray *out, const struct ArrowSchema *schema,
                             const char *const *values, int64_t n_rows, dk_error *err) {
  memset(out, 0, sizeof *out);
  DK_RETURN_IF(!schema || !schema->format || strcmp(schema->format, "+s") != 0, DK_INVALID, err,
               "partition schema must be a struct ('+s')");
  DK_RETURN_IF(n_rows < 0 || (n_rows > 0 && schema->n_children > 0 && !values), DK_INVALID, err,
               "bad partition value rows");
  int64_t nc = schema->n_children;
  dk_atype *types = dk__calloc(NULL, (size_t)(nc ? nc : 1), sizeof *types);
  if (!types) return dk__error_set(err, DK_NOMEM, "out of memory (partition batch)");
  dk_arr a;
  dk_status st = DK_OK;
  bool init = false;
  for (int64_t c = 0; c < nc && !st; c++) {
    st = dk__atype_parse(&types[c], schema->children[c]->format, err);
    if (!st && (types[c].id == DK_AT_LIST || types[c].id == DK_AT_STRUCT ||
                types[c].id == DK_AT_MAP))
      st = dk__error_set(err, DK_UNSUPPORTED, "partition column '%s' has a nested type",
                         schema->children[c]->name);
  }
  if (!st) st = dk__arr_init_from_schema(&a, schema, NULL, err);
  if (!st) init = true;
  for (int64_t r = 0; r < n_rows && !st; r++) {
    for (int64_t c = 0; c < nc && !st; c++) {
      const char *txt = values[r * nc + c];
      dk_lit l;
      st = dk__lit_from_text(&l, txt, txt ? strlen(txt) : 0, &types[c], NULL, err);
      if (!st) st = append_lit(&a.children[c], &l, err);
      if (!st && l.type == DK_LIT_NULL && !(schema->children[c]->flags & ARROW_FLAG_NULLABLE))
        st = dk__error_set(err, DK_CORRUPT, "null partition value for non-nullable column '%s'",
                           schema->children[c]->name);
      dk__free(NULL, l.bytes);
      if (st) dk__error_prefix(err, "partition column '%s'", schema->children[c]->name);
    }
    if (!st) st = dk__arr_finish_element(&a, err);
  }
  if (!st) st = dk__arr_finish(&a, out, err);
  if (init) dk__arr_reset(&a);
  dk__free(NULL, types);
  return st;
}
