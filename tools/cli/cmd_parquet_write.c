/*
** cmd_parquet_write.c — `dk parquet write OUT --from IN`: writes a Parquet file with dk's writer
** (dk/parquet.h) from a Parquet, CSV or JSON-lines file, and prints what it wrote (rows, bytes,
** row groups and the file's Delta add.stats).
**
** CSV is split by libcsv (Debian libcsv-dev: a small streaming RFC 4180 parser that handles
** quoted fields, embedded separators and newlines; splitting CSV correctly is all we need from a
** library). JSON lines go through dk's own JSON parser. Types are ours: a first pass over the
** input infers each column's type (null, int64, double, boolean, date "yyyy-mm-dd", timestamp
** with a zone -> timestamp[us, UTC], without -> timestamp[us] (NTZ), else string; a column whose
** values disagree widens: int64 + double -> double, date + timestamp -> timestamp, anything
** else -> string); JSON objects and arrays are kept as their JSON text. A second pass converts
** the rows in batches of 65536.
*/
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/array.h"
#include "cli.h"
#include "codec/json/json.h"
#include "dk/parquet.h"
#include "protocol/values.h"

#define BATCH_ROWS 65536

enum { T_NULL = 0, T_INT, T_DOUBLE, T_BOOL, T_DATE, T_TS, T_TSZ, T_STR };

typedef struct col {
  char *name;
  int type;
  dk_arr arr;
} col;

typedef struct table {
  col *cols;
  int n, cap;
  int pass;                /* 1 infer, 2 build */
  int64_t row, rows_in_batch;
  /* CSV state */
  int field;               /* field index within the current record */
  int header_done;
  char **cells;            /* pass 2: the record's cells */
  size_t *cell_len;
  int *cell_set;
  dk_parquet_writer *w;
  struct ArrowSchema schema;
  dk_error *err;
  dk_status st;
} table;

static int merge(int a, int b) {
  if (a == T_NULL) return b;
  if (b == T_NULL || a == b) return a;
  if ((a == T_INT && b == T_DOUBLE) || (a == T_DOUBLE && b == T_INT)) return T_DOUBLE;
  if ((a == T_DATE && (b == T_TS || b == T_TSZ)) || (b == T_DATE && (a == T_TS || a == T_TSZ)))
    return a == T_DATE ? b : a;
  return T_STR;
}

/* The type of one text cell (CSV; JSON strings use only the date/timestamp part). */
static int infer_text(const char *s, size_t n, int numbers) {
  if (n == 0) return T_NULL;
  if (numbers) {
    char *end;
    char tmp[64];
    if (n < sizeof tmp) {
      memcpy(tmp, s, n);
      tmp[n] = 0;
      strtoll(tmp, &end, 10);
      if (*end == 0 && (tmp[0] == '-' || tmp[0] == '+' || (tmp[0] >= '0' && tmp[0] <= '9')))
        return T_INT;
      strtod(tmp, &end);
      if (*end == 0 && strpbrk(tmp, "0123456789")) return T_DOUBLE;
    }
    if ((n == 4 && !strncmp(s, "true", 4)) || (n == 5 && !strncmp(s, "false", 5))) return T_BOOL;
  }
  int32_t d;
  if (n == 10 && dk__parse_date(&d, s, n, NULL) == DK_OK) return T_DATE;
  int64_t us;
  bool zone = false;
  if (n >= 16 && (s[10] == 'T' || s[10] == ' ') && dk__parse_timestamp(&us, &zone, s, n, NULL) == DK_OK)
    return zone ? T_TSZ : T_TS;
  return T_STR;
}

static col *add_col(table *t, const char *name, size_t n) {
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    col *c = realloc(t->cols, sizeof *c * (size_t)cap);
    if (!c) return NULL;
    t->cols = c;
    t->cap = cap;
  }
  col *c = &t->cols[t->n++];
  memset(c, 0, sizeof *c);
  c->name = dk__strndup(NULL, name, n);
  return c;
}

/* ---- pass 2: values into builders ------------------------------------------------------- */

static dk_status put_text(table *t, col *c, const char *s, size_t n, int is_null) {
  dk_error *err = t->err;
  if (is_null || (n == 0 && c->type != T_STR)) return dk__arr_append_null(&c->arr, err);
  char tmp[64];
  switch (c->type) {
    case T_INT:
    case T_DOUBLE:
      if (n >= sizeof tmp) break;
      memcpy(tmp, s, n);
      tmp[n] = 0;
      return c->type == T_INT ? dk__arr_append_int(&c->arr, strtoll(tmp, NULL, 10), err)
                              : dk__arr_append_double(&c->arr, strtod(tmp, NULL), err);
    case T_BOOL: return dk__arr_append_bool(&c->arr, n == 4, err);
    case T_DATE: {
      int32_t d;
      DK_RETURN_NOT_OK(dk__parse_date(&d, s, n, err));
      return dk__arr_append_int(&c->arr, d, err);
    }
    case T_TS:
    case T_TSZ: {
      int64_t us;
      bool zone;
      if (n == 10) { /* a date in a timestamp column: midnight */
        int32_t d;
        DK_RETURN_NOT_OK(dk__parse_date(&d, s, n, err));
        return dk__arr_append_int(&c->arr, (int64_t)d * 86400000000LL, err);
      }
      DK_RETURN_NOT_OK(dk__parse_timestamp(&us, &zone, s, n, err));
      return dk__arr_append_int(&c->arr, us, err);
    }
    case T_NULL: return dk__arr_append_null(&c->arr, err);
    default: return dk__arr_append_bytes(&c->arr, s, (int64_t)n, err);
  }
  return dk__error_set(err, DK_INVALID, "column '%s': value too long for its type", c->name);
}

static dk_atype atype_of(int t) {
  switch (t) {
    case T_INT: return dk__atype_make(DK_AT_INT64);
    case T_DOUBLE: return dk__atype_make(DK_AT_DOUBLE);
    case T_BOOL: return dk__atype_make(DK_AT_BOOL);
    case T_DATE: return dk__atype_make(DK_AT_DATE32);
    case T_TS: return dk__atype_timestamp(DK_TU_MICRO, NULL);
    case T_TSZ: return dk__atype_timestamp(DK_TU_MICRO, "UTC");
    default: return dk__atype_make(DK_AT_STRING);
  }
}

static dk_status start_build(table *t, dk_parquet_write_options *o, const char *out) {
  dk_error *err = t->err;
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(&t->schema, &st, "", 0, t->n, err));
  for (int i = 0; i < t->n; i++) {
    if (t->cols[i].type == T_NULL) t->cols[i].type = T_STR; /* an all-null column: string */
    dk_atype at = atype_of(t->cols[i].type);
    DK_RETURN_NOT_OK(dk__schema_init(t->schema.children[i], &at, t->cols[i].name,
                                     ARROW_FLAG_NULLABLE, 0, err));
    DK_RETURN_NOT_OK(dk__arr_init(&t->cols[i].arr, &at, NULL, err));
  }
  return dk_parquet_writer_open(&t->w, NULL, out, &t->schema, o, err);
}

/* The batch struct lives on the stack; its children are released by flush_batch itself. */
static void borrowed(struct ArrowArray *a) { a->release = NULL; }

static dk_status flush_batch(table *t) {
  if (t->rows_in_batch == 0) return DK_OK;
  dk_error *err = t->err;
  struct ArrowArray kids[256], *kp[256];
  struct ArrowArray *children = t->n <= 256 ? kids : calloc((size_t)t->n, sizeof *children);
  struct ArrowArray **cp = t->n <= 256 ? kp : calloc((size_t)t->n, sizeof *cp);
  dk_status st = DK_OK;
  if (!children || !cp) return dk__error_set(err, DK_NOMEM, "out of memory");
  int done = 0;
  for (; done < t->n && st == DK_OK; done++) {
    st = dk__arr_finish(&t->cols[done].arr, &children[done], err);
    cp[done] = &children[done];
  }
  if (st == DK_OK) {
    const void *bufs[1] = {NULL};
    struct ArrowArray batch = {t->rows_in_batch, 0, 0, 1, t->n, bufs, cp, NULL, borrowed, NULL};
    st = dk_parquet_writer_write(t->w, &batch, err);
  }
  for (int i = 0; i < done; i++) dk__array_release(&children[i]);
  if (children != kids) free(children);
  if (cp != kp) free(cp);
  t->rows_in_batch = 0;
  return st;
}

static dk_status end_row(table *t) {
  t->row++;
  if (t->pass == 2 && ++t->rows_in_batch == BATCH_ROWS) return flush_batch(t);
  return DK_OK;
}

/* ---- CSV ----------------------------------------------------------------------------------- */

static void csv_cell(void *s, size_t n, void *data) {
  table *t = data;
  if (t->st != DK_OK) return;
  int i = t->field++;
  if (!t->header_done) { /* the header names the columns (pass 1; pass 2 skips it) */
    if (t->pass == 1 && !add_col(t, s ? s : "", s ? n : 0))
      t->st = dk__error_set(t->err, DK_NOMEM, "out of memory");
    return;
  }
  if (i >= t->n) {
    t->st = dk__error_set(t->err, DK_INVALID, "CSV row %lld has more than the header's %d fields",
                          (long long)t->row + 2, t->n);
    return;
  }
  if (t->pass == 1) t->cols[i].type = merge(t->cols[i].type, infer_text(s, s ? n : 0, 1));
  else t->st = put_text(t, &t->cols[i], s, n, s == NULL);
}

static void csv_row(int c, void *data) {
  (void)c;
  table *t = data;
  if (t->st != DK_OK) return;
  if (!t->header_done) {
    t->header_done = 1;
    t->field = 0;
    return;
  }
  for (; t->pass == 2 && t->field < t->n && t->st == DK_OK; t->field++)
    t->st = dk__arr_append_null(&t->cols[t->field].arr, t->err); /* short rows: nulls */
  t->field = 0;
  if (t->st == DK_OK) t->st = end_row(t);
}

static dk_status csv_pass(table *t, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return dk__error_set(t->err, DK_NOT_FOUND, "cannot open %s", path);
  struct csv_parser p;
  csv_init(&p, CSV_APPEND_NULL | CSV_EMPTY_IS_NULL);
  char buf[1 << 16];
  size_t n;
  t->header_done = 0;
  t->field = 0;
  t->row = 0;
  while (t->st == DK_OK && (n = fread(buf, 1, sizeof buf, f)) > 0)
    if (csv_parse(&p, buf, n, csv_cell, csv_row, t) != n && t->st == DK_OK)
      t->st = dk__error_set(t->err, DK_INVALID, "%s: CSV: %s", path, csv_strerror(csv_error(&p)));
  if (t->st == DK_OK) csv_fini(&p, csv_cell, csv_row, t);
  csv_free(&p);
  fclose(f);
  return t->st;
}

/* ---- JSON lines ------------------------------------------------------------------------ */

static dk_status json_pass(table *t, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return dk__error_set(t->err, DK_NOT_FOUND, "cannot open %s", path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1 << 16);
  dk_buf text;
  dk__buf_init(&text, NULL);
  int *seen = NULL;
  t->row = 0;
  while (t->st == DK_OK && (len = getline(&line, &cap, f)) >= 0) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    if (len == 0) continue;
    dk__arena_reset(&ar);
    dk_json_value *v = NULL;
    t->st = dk__json_parse(&v, &ar, line, (size_t)len, t->err);
    if (t->st != DK_OK) {
      dk__error_prefix(t->err, "%s line %lld", path, (long long)t->row + 1);
      break;
    }
    if (v->type != DK_JSON_OBJECT) {
      t->st = dk__error_set(t->err, DK_INVALID, "%s line %lld: not a JSON object", path, (long long)t->row + 1);
      break;
    }
    if (t->pass == 2) {
      free(seen);
      seen = calloc((size_t)t->n + 1, sizeof *seen);
    }
    for (uint32_t m = 0; m < v->len && t->st == DK_OK; m++) {
      const dk_json_member *mem = &v->u.members[m];
      int ci = -1;
      for (int i = 0; i < t->n; i++)
        if (strlen(t->cols[i].name) == mem->klen && !memcmp(t->cols[i].name, mem->key, mem->klen)) {
          ci = i;
          break;
        }
      const dk_json_value *x = &mem->value;
      if (t->pass == 1) {
        if (ci < 0) {
          if (!add_col(t, mem->key, mem->klen)) t->st = dk__error_set(t->err, DK_NOMEM, "out of memory");
          ci = t->n - 1;
        }
        int ty = x->type == DK_JSON_NULL ? T_NULL : x->type == DK_JSON_BOOL ? T_BOOL
                 : x->type == DK_JSON_NUMBER ? infer_text(x->u.num, x->len, 1)
                 : x->type == DK_JSON_STRING ? infer_text(x->u.str, x->len, 0) : T_STR;
        if (x->type == DK_JSON_STRING && ty == T_NULL) ty = T_STR; /* "" */
        if (t->st == DK_OK) t->cols[ci].type = merge(t->cols[ci].type, ty);
        continue;
      }
      if (ci < 0 || seen[ci]) continue;
      seen[ci] = 1;
      col *c = &t->cols[ci];
      if (x->type == DK_JSON_NULL) {
        t->st = dk__arr_append_null(&c->arr, t->err);
      } else if (x->type == DK_JSON_STRING) {
        t->st = put_text(t, c, x->u.str, x->len, 0);
      } else if (x->type == DK_JSON_NUMBER && c->type != T_STR) {
        t->st = put_text(t, c, x->u.num, x->len, 0);
      } else if (x->type == DK_JSON_BOOL && c->type == T_BOOL) {
        t->st = dk__arr_append_bool(&c->arr, x->u.b, t->err);
      } else { /* numbers, bools, objects and arrays in a string column: their JSON text */
        dk__buf_clear(&text);
        t->st = dk__json_write_value(&text, x, t->err);
        if (t->st == DK_OK) t->st = dk__arr_append_bytes(&c->arr, text.data, (int64_t)text.len, t->err);
      }
    }
    if (t->pass == 2)
      for (int i = 0; i < t->n && t->st == DK_OK; i++)
        if (!seen[i]) t->st = dk__arr_append_null(&t->cols[i].arr, t->err);
    if (t->st == DK_OK) t->st = end_row(t);
  }
  free(seen);
  free(line);
  dk__buf_dispose(&text);
  dk__arena_dispose(&ar);
  fclose(f);
  return t->st;
}

/* ---- the command ----------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcasecmp(s + a - b, suf);
}

int dk_cli_parquet_write(int argc, char **argv) {
  const char *out = argc > 0 ? argv[0] : NULL, *in = NULL, *fmt = NULL;
  dk_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--from") && i + 1 < argc) in = argv[++i];
    else if (!strcmp(argv[i], "--format") && i + 1 < argc) fmt = argv[++i];
    else if (!strcmp(argv[i], "--compression") && i + 1 < argc) {
      const char *c = argv[++i];
      if (!strcmp(c, "snappy")) o.codec = DK_PARQUET_SNAPPY;
      else if (!strcmp(c, "zstd")) o.codec = DK_PARQUET_ZSTD;
      else if (!strcmp(c, "gzip")) o.codec = DK_PARQUET_GZIP;
      else if (!strcmp(c, "lz4_raw") || !strcmp(c, "lz4")) o.codec = DK_PARQUET_LZ4_RAW;
      else if (!strcmp(c, "none") || !strcmp(c, "uncompressed")) o.codec = DK_PARQUET_UNCOMPRESSED;
      else {
        fprintf(stderr, "dk parquet write: unknown compression '%s' (snappy, zstd, gzip, lz4_raw, none)\n", c);
        return 2;
      }
    } else if (!strcmp(argv[i], "--row-group-size") && i + 1 < argc) o.row_group_rows = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--page-version") && i + 1 < argc) o.data_page_version = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-dictionary")) o.no_dictionary = 1;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) o.threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "dk parquet write: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!out || !in) {
    fprintf(stderr, "usage: dk parquet write OUT --from IN [--format parquet|csv|jsonl] "
                    "[--compression snappy|zstd|gzip|lz4_raw|none] [--row-group-size ROWS] "
                    "[--page-version 1|2] [--no-dictionary] [--threads N]\n");
    return 2;
  }
  if (!fmt) fmt = ends_with(in, ".csv") ? "csv" : (ends_with(in, ".jsonl") || ends_with(in, ".json") ||
                                                   ends_with(in, ".ndjson")) ? "jsonl" : "parquet";
  dk_error err;
  dk_error_init(&err);
  dk_status st = DK_OK;
  table t;
  memset(&t, 0, sizeof t);
  t.err = &err;
  if (!strcmp(fmt, "parquet")) {
    dk_parquet_file *f = NULL;
    struct ArrowArrayStream s;
    s.release = NULL;
    st = dk_parquet_open(&f, in, NULL, &err);
    if (st == DK_OK) st = dk_parquet_read(&s, f, NULL, &err);
    if (st == DK_OK && s.get_schema(&s, &t.schema) != 0)
      st = dk__error_set(&err, DK_CALLBACK, "%s: %s", in, s.get_last_error(&s));
    if (st == DK_OK) st = dk_parquet_writer_open(&t.w, NULL, out, &t.schema, &o, &err);
    if (st == DK_OK) st = dk_parquet_writer_write_stream(t.w, &s, &err);
    if (s.release) s.release(&s);
    dk_parquet_file_free(f);
  } else if (!strcmp(fmt, "csv") || !strcmp(fmt, "jsonl")) {
    int csv = fmt[0] == 'c';
    t.pass = 1;
    st = csv ? csv_pass(&t, in) : json_pass(&t, in);
    if (st == DK_OK && t.n == 0) st = dk__error_set(&err, DK_INVALID, "%s: no columns", in);
    if (st == DK_OK) st = start_build(&t, &o, out);
    if (st == DK_OK) {
      t.pass = 2;
      st = csv ? csv_pass(&t, in) : json_pass(&t, in);
    }
    if (st == DK_OK) st = flush_batch(&t);
  } else {
    fprintf(stderr, "dk parquet write: unknown --format '%s' (parquet, csv, jsonl)\n", fmt);
    return 2;
  }
  dk_parquet_write_result res;
  memset(&res, 0, sizeof res);
  res.version = DK_PARQUET_WRITE_RESULT_VERSION;
  char *stats = NULL;
  if (st == DK_OK) st = dk_parquet_writer_close(t.w, &res, &err);
  if (st == DK_OK) st = dk_parquet_writer_delta_stats(&stats, t.w, NULL, &err);
  if (st == DK_OK)
    printf("{\"rows\":%lld,\"bytes\":%lld,\"row_groups\":%d,\"stats\":%s}\n", (long long)res.num_rows,
           (long long)res.file_size, res.num_row_groups, stats);
  dk_free(stats);
  dk_parquet_writer_free(t.w);
  for (int i = 0; i < t.n; i++) {
    if (t.pass) dk__arr_reset(&t.cols[i].arr);
    free(t.cols[i].name);
  }
  free(t.cols);
  dk__schema_release(&t.schema);
  if (st != DK_OK) {
    fprintf(stderr, "dk parquet write: %s: %s\n", dk_status_str(err.code), err.message);
    return 1;
  }
  return 0;
}
