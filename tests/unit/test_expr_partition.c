/*
** test_expr_partition.c — partition values of real Delta tables (written by Delta-Spark),
** parsed by dk, against the tables' expected rows (shared/testdata, see its README):
**   1. the set of typed partition tuples dk reads from the log's `add.partitionValues` equals
**      the set of partition-column tuples in the expected rows;
**   2. for every partition column and every value v it takes in the expected rows, the
**      predicate `col = v` (v built from the expected JSON, not from the log) selects exactly
**      the files whose tuple has v, and `col IS NULL` exactly those with null.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "dk/expr.h"
#include "expr/expr_int.h"
#include "test.h"
#include "codec/json/json.h"

#define MAXF 64
#define MAXC 16

typedef struct ptable {
  dk_arena ar;
  char *texts[32];
  int n_texts;
  int ncols;
  char cols[MAXC][64];
  char types[MAXC][32];
  int nfiles;
  const char *vals[MAXF][MAXC];
} ptable;

static int cmpstr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *json_text(dk_arena *ar, const dk_json_value *v) {
  if (!v || v->type == DK_JSON_NULL) return NULL;
  if (v->type == DK_JSON_STRING) return v->u.str;
  return v->u.num;
}

static int load_log(ptable *t, const char *root, dk_error *err) {
  memset(t, 0, sizeof *t);
  dk__arena_init(&t->ar, NULL, 1 << 16);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/_delta_log", root);
  DIR *d = opendir(dir);
  if (!d) return 0;
  char *names[64];
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d)) && nn < 64) {
    size_t l = strlen(de->d_name);
    if (l > 5 && !strcmp(de->d_name + l - 5, ".json") && de->d_name[0] != '.' &&
        strspn(de->d_name, "0123456789") == l - 5)
      names[nn++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)nn, sizeof *names, cmpstr);
  int ok = 1;
  for (int i = 0; i < nn; i++) {
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    free(names[i]);
    char *txt;
    size_t len;
    if (!ok || dk__read_file(NULL, path, &txt, &len, err)) {
      ok = 0;
      continue;
    }
    t->texts[t->n_texts++] = txt;
    for (size_t pos = 0; pos < len;) {
      const char *s = txt + pos, *nl = memchr(s, '\n', len - pos);
      size_t n = nl ? (size_t)(nl - s) : len - pos;
      pos += n + 1;
      if (!n) continue;
      dk_json_value *a;
      if (dk__json_parse(&a, &t->ar, s, n, err)) {
        ok = 0;
        break;
      }
      const dk_json_value *md = dk__json_get(a, "metaData"), *add = dk__json_get(a, "add");
      if (md) {
        const dk_json_value *pc = dk__json_get(md, "partitionColumns");
        const dk_json_value *ss = dk__json_get(md, "schemaString");
        dk_json_value *schema;
        if (dk__json_parse(&schema, &t->ar, ss->u.str, ss->len, err)) return 0;
        const dk_json_value *fields = dk__json_get(schema, "fields");
        t->ncols = (int)pc->len;
        for (uint32_t c = 0; c < pc->len && c < MAXC; c++) {
          snprintf(t->cols[c], sizeof t->cols[c], "%s", pc->u.items[c].u.str);
          for (uint32_t f = 0; f < fields->len; f++)
            if (!strcmp(dk__json_get(&fields->u.items[f], "name")->u.str, t->cols[c]))
              snprintf(t->types[c], sizeof t->types[c], "%s",
                       dk__json_get(&fields->u.items[f], "type")->u.str);
        }
      }
      if (add && t->nfiles < MAXF) {
        const dk_json_value *pv = dk__json_get(add, "partitionValues");
        for (int c = 0; c < t->ncols; c++) t->vals[t->nfiles][c] = json_text(&t->ar, dk__json_get(pv, t->cols[c]));
        t->nfiles++;
      }
    }
  }
  return ok;
}

static void free_log(ptable *t) {
  for (int i = 0; i < t->n_texts; i++) dk__free(NULL, t->texts[i]);
  dk__arena_dispose(&t->ar);
}

/* Canonical text of row r of a typed Arrow column (the expected-file encoding). */
static void canon_arrow(char *buf, size_t cap, const struct ArrowArray *a, const dk_atype *t, int64_t r) {
  const uint8_t *valid = a->buffers[0];
  if (valid && !dk__bit_get(valid, r)) {
    snprintf(buf, cap, "\001NULL");
    return;
  }
  const void *v = a->buffers[1];
  switch (t->id) {
    case DK_AT_INT8: snprintf(buf, cap, "%d", ((const int8_t *)v)[r]); break;
    case DK_AT_INT16: snprintf(buf, cap, "%d", ((const int16_t *)v)[r]); break;
    case DK_AT_INT32: snprintf(buf, cap, "%d", ((const int32_t *)v)[r]); break;
    case DK_AT_INT64: case DK_AT_TIMESTAMP:
      snprintf(buf, cap, "%lld", (long long)((const int64_t *)v)[r]);
      break;
    case DK_AT_FLOAT: snprintf(buf, cap, "%.9g", ((const float *)v)[r]); break;
    case DK_AT_DOUBLE: snprintf(buf, cap, "%.17g", ((const double *)v)[r]); break;
    case DK_AT_BOOL: snprintf(buf, cap, "%s", dk__bit_get(v, r) ? "true" : "false"); break;
    case DK_AT_DATE32: dk__format_date(buf, cap, ((const int32_t *)v)[r]); break;
    case DK_AT_DECIMAL128: {
      dk_i128 x;
      memcpy(&x, (const uint8_t *)v + 16 * r, 16);
      dk__format_decimal(buf, cap, x, t->scale);
      break;
    }
    case DK_AT_STRING: {
      const int32_t *o = v;
      snprintf(buf, cap, "%.*s", (int)(o[r + 1] - o[r]), (const char *)a->buffers[2] + o[r]);
      break;
    }
    default: snprintf(buf, cap, "?");
  }
}

/* Canonical text of an expected JSON value of type t. */
static void canon_json(char *buf, size_t cap, const dk_json_value *v, const dk_atype *t) {
  if (!v || v->type == DK_JSON_NULL) snprintf(buf, cap, "\001NULL");
  else if (v->type == DK_JSON_BOOL) snprintf(buf, cap, "%s", v->u.b ? "true" : "false");
  else if (v->type == DK_JSON_STRING) snprintf(buf, cap, "%s", v->u.str);
  else if (t->id == DK_AT_FLOAT) snprintf(buf, cap, "%.9g", (float)strtod(v->u.num, NULL));
  else if (t->id == DK_AT_DOUBLE) snprintf(buf, cap, "%.17g", strtod(v->u.num, NULL));
  else snprintf(buf, cap, "%lld", strtoll(v->u.num, NULL, 10));
}

/* Literal for `col = v` from an expected JSON value. */
static dk_status literal_from_json(dk_expr **out, const dk_json_value *v, const dk_atype *t, dk_error *err) {
  const char *s = v->type == DK_JSON_STRING ? v->u.str : v->u.num;
  switch (t->id) {
    case DK_AT_INT8: return dk_expr_literal_int8(out, (int8_t)strtol(s, NULL, 10), err);
    case DK_AT_INT16: return dk_expr_literal_int16(out, (int16_t)strtol(s, NULL, 10), err);
    case DK_AT_INT32: return dk_expr_literal_int32(out, (int32_t)strtol(s, NULL, 10), err);
    case DK_AT_INT64: return dk_expr_literal_int64(out, strtoll(s, NULL, 10), err);
    case DK_AT_FLOAT: return dk_expr_literal_float(out, strtof(s, NULL), err);
    case DK_AT_DOUBLE: return dk_expr_literal_double(out, strtod(s, NULL), err);
    case DK_AT_BOOL: return dk_expr_literal_bool(out, v->u.b, err);
    case DK_AT_TIMESTAMP: return dk_expr_literal_timestamp(out, strtoll(s, NULL, 10), err);
    case DK_AT_DECIMAL128: return dk_expr_literal_decimal_text(out, s, t->precision, t->scale, err);
    case DK_AT_STRING: return dk_expr_literal_string(out, s, v->len, err);
    case DK_AT_DATE32: {
      int32_t d;
      DK_RETURN_NOT_OK(dk__parse_date(&d, s, v->len, err));
      return dk_expr_literal_date(out, d, err);
    }
    default: return dk__error_set(err, DK_UNSUPPORTED, "test: type");
  }
}

static void check_table(const char *name) {
  dk_error err = {0};
  char root[1024], exp_path[1100];
  snprintf(root, sizeof root, "%s/delta-golden/%s", dk_test_data_dir(), name);
  snprintf(exp_path, sizeof exp_path, "%s.expected.jsonl", root);
  ptable t;
  if (!load_log(&t, root, &err) || t.ncols == 0 || t.nfiles == 0) {
    dk_test_fail(__FILE__, __LINE__, "%s: cannot read log: %s", name, err.message);
    free_log(&t);
    return;
  }
  /* schema of the partition columns */
  struct ArrowSchema schema;
  dk_atype types[MAXC], st = dk__atype_make(DK_AT_STRUCT);
  CHECK_OK(dk__schema_init(&schema, &st, "", 0, t.ncols, &err), &err);
  for (int c = 0; c < t.ncols; c++) {
    char fmt[64];
    CHECK_OK(dk__atype_from_delta(&types[c], t.types[c], &err), &err);
    CHECK_OK(dk__atype_format(&types[c], fmt, sizeof fmt, &err), &err);
    dk_atype parsed;
    CHECK_OK(dk__atype_parse(&parsed, fmt, &err), &err);
    CHECK_OK(dk__schema_init(schema.children[c], &parsed, t.cols[c], ARROW_FLAG_NULLABLE, 0, &err), &err);
  }
  const char *flat[MAXF * MAXC];
  for (int f = 0; f < t.nfiles; f++)
    for (int c = 0; c < t.ncols; c++) flat[f * t.ncols + c] = t.vals[f][c];
  struct ArrowArray batch;
  CHECK_OK(dk_partition_batch(&batch, &schema, flat, t.nfiles, &err), &err);
  CHECK_EQ_INT(batch.length, t.nfiles);

  /* 1. tuple sets */
  static char dk_tuples[MAXF][1024];
  for (int f = 0; f < t.nfiles; f++) {
    size_t k = 0;
    for (int c = 0; c < t.ncols; c++) {
      char v[256];
      canon_arrow(v, sizeof v, batch.children[c], &types[c], f);
      k += (size_t)snprintf(dk_tuples[f] + k, sizeof dk_tuples[f] - k, "%s|", v);
    }
  }
  char *txt;
  size_t len;
  CHECK_OK(dk__read_file(NULL, exp_path, &txt, &len, &err), &err);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1 << 16);
  const dk_json_value *rows[512];
  int nrows = 0;
  for (size_t pos = 0; pos < len && nrows < 512;) {
    const char *s = txt + pos, *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    pos += n + 1;
    if (!n) continue;
    dk_json_value *r;
    if (dk__json_parse(&r, &ar, s, n, &err)) break;
    rows[nrows++] = r;
  }
  CHECK(nrows > 0);
  int matched_files = 0;
  for (int r = 0; r < nrows; r++) {
    char tup[1024];
    size_t k = 0;
    for (int c = 0; c < t.ncols; c++) {
      char v[256];
      canon_json(v, sizeof v, dk__json_get(rows[r], t.cols[c]), &types[c]);
      k += (size_t)snprintf(tup + k, sizeof tup - k, "%s|", v);
    }
    bool found = false;
    for (int f = 0; f < t.nfiles; f++) found |= !strcmp(tup, dk_tuples[f]);
    if (!found) {
      dk_test_fail(__FILE__, __LINE__, "%s: expected partition tuple %s not produced by dk (first dk tuple %s)",
                   name, tup, dk_tuples[0]);
      goto done;
    }
  }
  for (int f = 0; f < t.nfiles; f++) {
    bool found = false;
    for (int r = 0; r < nrows && !found; r++) {
      char tup[1024];
      size_t k = 0;
      for (int c = 0; c < t.ncols; c++) {
        char v[256];
        canon_json(v, sizeof v, dk__json_get(rows[r], t.cols[c]), &types[c]);
        k += (size_t)snprintf(tup + k, sizeof tup - k, "%s|", v);
      }
      found = !strcmp(tup, dk_tuples[f]);
    }
    matched_files += found;
  }
  CHECK_EQ_INT(matched_files, t.nfiles);

  /* 2. col = v and col IS NULL select exactly the matching files */
  uint8_t mask[MAXF];
  for (int c = 0; c < t.ncols; c++) {
    for (int r = 0; r <= nrows; r++) {
      const dk_json_value *v = r < nrows ? dk__json_get(rows[r], t.cols[c]) : NULL;
      const char *path[] = {t.cols[c]};
      dk_expr *col, *lit = NULL, *pred, *bound;
      CHECK_OK(dk_expr_column(&col, path, 1, &err), &err);
      char want[256];
      if (!v || v->type == DK_JSON_NULL) {
        CHECK_OK(dk_expr_is_null(&pred, col, false, &err), &err);
        snprintf(want, sizeof want, "\001NULL");
      } else {
        CHECK_OK(literal_from_json(&lit, v, &types[c], &err), &err);
        CHECK_OK(dk_expr_cmp(&pred, DK_CMP_EQ, col, lit, &err), &err);
        canon_json(want, sizeof want, v, &types[c]);
      }
      CHECK_OK(dk_expr_bind(&bound, pred, &schema, &err), &err);
      CHECK_OK(dk_expr_eval_filter(mask, NULL, bound, &schema, &batch, &err), &err);
      for (int f = 0; f < t.nfiles; f++) {
        char got[256];
        canon_arrow(got, sizeof got, batch.children[c], &types[c], f);
        bool should = !strcmp(got, want);
        if (mask[f] != should) {
          char *s;
          if (dk_expr_to_string(&s, pred, &err) == DK_OK) {
            dk_test_fail(__FILE__, __LINE__, "%s: file %d: %s gave %d", name, f, s, mask[f]);
            dk_expr_string_free(s);
          }
          dk_expr_free(pred);
          dk_expr_free(bound);
          goto done;
        }
      }
      dk_expr_free(pred);
      dk_expr_free(bound);
    }
  }
done:
  dk__arena_dispose(&ar);
  dk__free(NULL, txt);
  dk__array_release(&batch);
  dk__schema_release(&schema);
  free_log(&t);
}

DK_TEST(expr__partition_values_real_tables) {
  check_table("data-reader-partition-values");
  check_table("kernel-timestamp-partition-col-ISO8601");
  check_table("data-reader-escaped-chars");
  check_table("basic-decimal-table");
  check_table("basic-decimal-table-legacy");
}

DK_TEST(expr__partition_value_parse) {
  /* each accepted serialization, checked against the value the protocol text defines */
  dk_error err = {0};
  struct {
    const char *text, *type, *printed;
  } cases[] = {
      {"2021-09-08 11:11:11", "timestamp", "TIMESTAMP '2021-09-08 11:11:11'"},
      {"2024-01-01T10:00:00.000000Z", "timestamp", "TIMESTAMP '2024-01-01 10:00:00'"},
      {"1970-01-01 00:00:00.123456", "timestamp_ntz", "TIMESTAMP_NTZ '1970-01-01 00:00:00.123456'"},
      {"1970-01-01", "date", "DATE '1970-01-01'"},
      {"-2342342.23423", "decimal(12,5)", "-2342342.23423"},
      {"234.00000", "decimal(12,5)", "DECIMAL(12,5) '234.00000'"},
      {"true", "boolean", "TRUE"},
      {"-128", "byte", "TINYINT '-128'"},
      {"9223372036854775807", "long", "9223372036854775807"},
      {"1.0", "double", "DOUBLE '1'"},
      {"bar+%21", "string", "'bar+%21'"},
      {"", "string", "NULL"},
      {NULL, "integer", "NULL"},
      {"__HIVE_DEFAULT_PARTITION__", "date", "NULL"},
      {"", "long", "NULL"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dk_expr *l;
    CHECK_OK(dk_partition_literal_parse(&l, cases[i].text, cases[i].type, &err), &err);
    char *s;
    CHECK_OK(dk_expr_to_string(&s, l, &err), &err);
    if (strcmp(s, cases[i].printed) != 0)
      dk_test_fail(__FILE__, __LINE__, "%s as %s: %s, want %s", cases[i].text, cases[i].type, s,
                   cases[i].printed);
    dk_expr_string_free(s);
    dk_expr_free(l);
  }
  dk_expr *l;
  CHECK_STATUS(dk_partition_literal_parse(&l, "128", "byte", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_literal_parse(&l, "2021-13-01", "date", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_literal_parse(&l, "1.234", "decimal(5,2)", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_literal_parse(&l, "yes", "boolean", &err), DK_CORRUPT);
  CHECK_STATUS(dk_partition_literal_parse(&l, "1", "interval", &err), DK_UNSUPPORTED);
}
