/*
** vectors.h — the JSON-lines oracle vectors of tests/unit/data/ (tests only): a header line
** {"columns": [...], "rows": [[...], ...]} with the table an oracle evaluated, then one case
** per line. Written by tests/python/gen_expr_vectors.py (DuckDB: columns as {"name", "type"}
** objects) and tests/interop/gen_value_vectors.py (Spark: columns as [name, type] pairs).
**
**   dk_test_vectors v;
**   if (!dk_test_vectors_load(&v, "expr_vectors.jsonl", &err)) ...fail...
**   const dk_json_value *c;
**   while (dk_test_vectors_next(&v, &c, &err)) ...v.schema, v.batch, c...
**   dk_test_vectors_free(&v);
*/
#ifndef DK_TEST_VECTORS_H
#define DK_TEST_VECTORS_H

#include "arrow/array.h"
#include "codec/json/json.h"

typedef struct dk_test_vectors {
  char *text;
  size_t len;
  dk_arena ar;                   /* the header and every case */
  const dk_json_value *header;
  struct ArrowSchema schema;     /* the table as a struct of its columns ... */
  struct ArrowArray batch;       /* ... and its rows */
  int64_t n_rows;
  size_t pos;                    /* the next case line */
} dk_test_vectors;

/* The path of tests/unit/data/<name>. */
const char *dk_test_vectors_path(const char *name);
/* Loads tests/unit/data/<name>; 0 on failure (err says why; free v all the same). */
int dk_test_vectors_load(dk_test_vectors *v, const char *name, dk_error *err);
/* The next case; false at the end or when a line does not parse (err set). */
bool dk_test_vectors_next(dk_test_vectors *v, const dk_json_value **c, dk_error *err);
void dk_test_vectors_free(dk_test_vectors *v);

#endif /* DK_TEST_VECTORS_H */
