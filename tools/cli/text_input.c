/*
** text_input.c — CSV and JSON-lines files as Arrow streams, for `dk parquet write --from` and
** `dk write TABLE FILE...`.
**
** CSV is split by libcsv (Debian libcsv-dev: a small streaming RFC 4180 parser that handles
** quoted fields, embedded separators and newlines; splitting CSV correctly is all we need from a
** library); the first record names the columns. JSON lines go through dk's own JSON parser; the
** columns are every key seen. Types are ours. A first pass over the file infers each column's
** type (null, int64, double, boolean, date "yyyy-mm-dd", timestamp with a zone ->
** timestamp[us, UTC], without -> timestamp[us] (NTZ), else string; a column whose values
** disagree widens: int64 + double -> double, date + timestamp -> timestamp, anything else ->
** string); JSON objects and arrays are kept as their JSON text. When the caller gives a target
** schema (the table written to), a column it names (case-insensitively) takes its type instead:
** integers of any width (range-checked), float/double, boolean, date, timestamp, decimal
** (exact at the scale), string, binary; its columns the file lacks are all null (Delta appends
** a DataFrame without them so). The second pass streams the rows in batches of about
** 65536 (memory bounded by a batch, not the file). Empty CSV cells and JSON nulls are nulls
** (an empty CSV cell of a string column is an empty string when quoted).
*/
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/array.h"
#include "cli.h"
#include "codec/json/json.h"
#include "protocol/values.h"

#define BATCH_ROWS 65536

enum { T_NULL = 0, T_INT, T_DOUBLE, T_BOOL, T_DATE, T_TS, T_TSZ, T_STR, T_DEC, T_BIN };

typedef struct col {
  char *name;
  int type;
  int field;               /* CSV: its field in the header, -1 none (a target column) */
  dk_atype at;             /* the builder's type (from the target, or atype_of(type)) */
  dk_arr arr;
} col;

typedef struct text_in {
  char *path;
  int csv;
  FILE *f;
  col *cols;
  int n, cap;
  int n_built;             /* columns whose builders exist */
  int n_header;            /* CSV: the header's fields */
  int *field_col;          /* CSV: header field -> column */
  int pass;                /* 1 infer, 2 build */
  int eof;
  int64_t row, rows_in_batch;
  /* CSV */
  struct csv_parser p;
  int parser_live;
  int field;               /* field index within the current record */
  int header_done;
  /* JSON lines */
  char *line;
  size_t line_cap;
  dk_arena ar;
  dk_buf text;
  int *seen;
  struct ArrowSchema schema;
  dk_error *err;
  dk_status st;
} text_in;

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

/* The parse kind of a target column's Arrow type, or -1 when text cannot fill it. */
static int kind_of(const dk_atype *a) {
  switch (a->id) {
    case DK_AT_INT8: case DK_AT_INT16: case DK_AT_INT32: case DK_AT_INT64: return T_INT;
    case DK_AT_FLOAT: case DK_AT_DOUBLE: return T_DOUBLE;
    case DK_AT_BOOL: return T_BOOL;
    case DK_AT_DATE32: return T_DATE;
    case DK_AT_TIMESTAMP: return a->unit == DK_TU_MICRO ? (a->tz[0] ? T_TSZ : T_TS) : -1;
    case DK_AT_DECIMAL128: return T_DEC;
    case DK_AT_STRING: return T_STR;
    case DK_AT_BINARY: return T_BIN;
    default: return -1;
  }
}

static col *add_col(text_in *t, const char *name, size_t n) {
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    col *c = realloc(t->cols, sizeof *c * (size_t)cap);
    if (!c) return NULL;
    t->cols = c;
    t->cap = cap;
  }
  col *c = &t->cols[t->n++];
  memset(c, 0, sizeof *c);
  c->field = t->csv && !t->header_done ? t->n - 1 : -1;
  c->name = dk__strndup(NULL, name, n);
  return c->name ? c : NULL;
}

/* ---- pass 2: values into builders ------------------------------------------------------- */

static dk_status bad_value(text_in *t, const col *c, const char *s, size_t n) {
  return dk__error_set(t->err, DK_INVALID, "%s row %lld: column '%s': '%.*s' is not a valid %s",
                       t->path, (long long)t->row + 1, c->name, (int)(n > 80 ? 80 : n), s,
                       c->type == T_INT ? "integer of the column's width"
                       : c->type == T_DEC ? "decimal at the column's precision and scale"
                                          : "value of the column's type");
}

static dk_status put_text(text_in *t, col *c, const char *s, size_t n, int is_null) {
  dk_error *err = t->err;
  if (is_null || (n == 0 && c->type != T_STR && c->type != T_BIN))
    return dk__arr_append_null(&c->arr, err);
  char tmp[64];
  switch (c->type) {
    case T_INT: {
      if (n >= sizeof tmp) return bad_value(t, c, s, n);
      memcpy(tmp, s, n);
      tmp[n] = 0;
      char *end;
      long long v = strtoll(tmp, &end, 10);
      int bits = c->at.id == DK_AT_INT8 ? 8 : c->at.id == DK_AT_INT16 ? 16
                 : c->at.id == DK_AT_INT32 ? 32 : 64;
      if (*end || end == tmp || (bits < 64 && (v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1)))))
        return bad_value(t, c, s, n);
      return dk__arr_append_int(&c->arr, v, err);
    }
    case T_DOUBLE: {
      if (n >= sizeof tmp) return bad_value(t, c, s, n);
      memcpy(tmp, s, n);
      tmp[n] = 0;
      char *end;
      double v = strtod(tmp, &end);
      if (*end || end == tmp) return bad_value(t, c, s, n);
      return dk__arr_append_double(&c->arr, v, err);
    }
    case T_BOOL:
      if ((n == 4 && !strncasecmp(s, "true", 4)) || (n == 5 && !strncasecmp(s, "false", 5)))
        return dk__arr_append_bool(&c->arr, n == 4, err);
      return bad_value(t, c, s, n);
    case T_DATE: {
      int32_t d;
      if (dk__parse_date(&d, s, n, NULL)) return bad_value(t, c, s, n);
      return dk__arr_append_int(&c->arr, d, err);
    }
    case T_TS:
    case T_TSZ: {
      int64_t us;
      bool zone;
      if (n == 10) { /* a date in a timestamp column: midnight */
        int32_t d;
        if (dk__parse_date(&d, s, n, NULL)) return bad_value(t, c, s, n);
        return dk__arr_append_int(&c->arr, (int64_t)d * 86400000000LL, err);
      }
      if (dk__parse_timestamp(&us, &zone, s, n, NULL)) return bad_value(t, c, s, n);
      return dk__arr_append_int(&c->arr, us, err);
    }
    case T_DEC: {
      dk_i128 v;
      if (dk__parse_decimal(&v, s, n, c->at.scale, NULL) ||
          !dk__i128_fits_precision(v, c->at.precision))
        return bad_value(t, c, s, n);
      return dk__arr_append_bytes(&c->arr, &v, 16, err); /* little-endian (x86-64, arm64) */
    }
    case T_NULL: return dk__arr_append_null(&c->arr, err);
    default: return dk__arr_append_bytes(&c->arr, s, (int64_t)n, err);
  }
}

/* ---- CSV ----------------------------------------------------------------------------------- */

static void csv_cell(void *s, size_t n, void *data) {
  text_in *t = data;
  if (t->st != DK_OK) return;
  int i = t->field++;
  if (!t->header_done) { /* the header names the columns (pass 1; pass 2 skips it) */
    if (t->pass == 1 && !add_col(t, s ? s : "", s ? n : 0))
      t->st = dk__error_set(t->err, DK_NOMEM, "out of memory");
    return;
  }
  if (i >= t->n_header) {
    t->st = dk__error_set(t->err, DK_INVALID, "%s: CSV row %lld has more than the header's %d fields",
                          t->path, (long long)t->row + 2, t->n_header);
    return;
  }
  if (t->pass == 1) t->cols[i].type = merge(t->cols[i].type, infer_text(s, s ? n : 0, 1));
  else t->st = put_text(t, &t->cols[t->field_col[i]], s, n, s == NULL);
}

static void csv_row(int c, void *data) {
  (void)c;
  text_in *t = data;
  if (t->st != DK_OK) return;
  if (!t->header_done) {
    t->header_done = 1;
    if (t->pass == 1) t->n_header = t->n;
    t->field = 0;
    return;
  }
  for (; t->pass == 2 && t->field < t->n_header && t->st == DK_OK; t->field++) /* short rows */
    t->st = dk__arr_append_null(&t->cols[t->field_col[t->field]].arr, t->err);
  for (int i = 0; t->pass == 2 && i < t->n && t->st == DK_OK; i++)
    if (t->cols[i].field < 0) t->st = dk__arr_append_null(&t->cols[i].arr, t->err);
  t->field = 0;
  t->row++;
  t->rows_in_batch++;
}

/* Parses the next chunk of the file (all of it in pass 1); sets eof at the end. */
static dk_status csv_more(text_in *t) {
  char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, t->f);
  if (n > 0) {
    if (csv_parse(&t->p, buf, n, csv_cell, csv_row, t) != n && t->st == DK_OK)
      t->st = dk__error_set(t->err, DK_INVALID, "%s: CSV: %s", t->path,
                            csv_strerror(csv_error(&t->p)));
    return t->st;
  }
  if (ferror(t->f)) return t->st = dk__error_set(t->err, DK_IO, "%s: read error", t->path);
  if (t->st == DK_OK) csv_fini(&t->p, csv_cell, csv_row, t);
  t->eof = 1;
  return t->st;
}

/* ---- JSON lines ------------------------------------------------------------------------ */

static dk_status json_line(text_in *t, const char *line, size_t len) {
  dk__arena_reset(&t->ar);
  dk_json_value *v = NULL;
  if (dk__json_parse(&v, &t->ar, line, len, t->err) != DK_OK) {
    dk__error_prefix(t->err, "%s line %lld", t->path, (long long)t->row + 1);
    return t->st = t->err ? t->err->code : DK_INVALID;
  }
  if (v->type != DK_JSON_OBJECT)
    return t->st = dk__error_set(t->err, DK_INVALID, "%s line %lld: not a JSON object", t->path,
                                 (long long)t->row + 1);
  if (t->pass == 2) memset(t->seen, 0, sizeof *t->seen * (size_t)t->n);
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
        if (!add_col(t, mem->key, mem->klen))
          return t->st = dk__error_set(t->err, DK_NOMEM, "out of memory");
        ci = t->n - 1;
      }
      int ty = x->type == DK_JSON_NULL ? T_NULL : x->type == DK_JSON_BOOL ? T_BOOL
               : x->type == DK_JSON_NUMBER ? infer_text(x->u.num, x->len, 1)
               : x->type == DK_JSON_STRING ? infer_text(x->u.str, x->len, 0) : T_STR;
      if (x->type == DK_JSON_STRING && ty == T_NULL) ty = T_STR; /* "" */
      t->cols[ci].type = merge(t->cols[ci].type, ty);
      continue;
    }
    if (ci < 0 || t->seen[ci]) continue;
    t->seen[ci] = 1;
    col *c = &t->cols[ci];
    if (x->type == DK_JSON_NULL) {
      t->st = dk__arr_append_null(&c->arr, t->err);
    } else if (x->type == DK_JSON_STRING) {
      t->st = put_text(t, c, x->u.str, x->len, 0);
    } else if (x->type == DK_JSON_NUMBER && c->type != T_STR && c->type != T_BIN) {
      t->st = put_text(t, c, x->u.num, x->len, 0);
    } else if (x->type == DK_JSON_BOOL && c->type == T_BOOL) {
      t->st = dk__arr_append_bool(&c->arr, x->u.b, t->err);
    } else if (c->type == T_STR || c->type == T_BIN) { /* numbers, objects...: JSON text */
      dk__buf_clear(&t->text);
      t->st = dk__json_write_value(&t->text, x, t->err);
      if (t->st == DK_OK)
        t->st = dk__arr_append_bytes(&c->arr, t->text.data, (int64_t)t->text.len, t->err);
    } else {
      t->st = bad_value(t, c, "(a JSON value of another type)", 30);
    }
  }
  if (t->pass == 2)
    for (int i = 0; i < t->n && t->st == DK_OK; i++)
      if (!t->seen[i]) t->st = dk__arr_append_null(&t->cols[i].arr, t->err);
  t->row++;
  t->rows_in_batch++;
  return t->st;
}

static dk_status json_more(text_in *t) {
  ssize_t len = getline(&t->line, &t->line_cap, t->f);
  if (len < 0) {
    if (ferror(t->f)) return t->st = dk__error_set(t->err, DK_IO, "%s: read error", t->path);
    t->eof = 1;
    return DK_OK;
  }
  while (len > 0 && (t->line[len - 1] == '\n' || t->line[len - 1] == '\r')) len--;
  if (len == 0) return DK_OK;
  return json_line(t, t->line, (size_t)len);
}

/* ---- passes and the stream ----------------------------------------------------------------- */

static dk_status rewind_input(text_in *t) {
  if (t->parser_live) csv_free(&t->p);
  t->parser_live = 0;
  if (t->csv) {
    if (csv_init(&t->p, CSV_APPEND_NULL | CSV_EMPTY_IS_NULL) != 0)
      return t->st = dk__error_set(t->err, DK_NOMEM, "out of memory (CSV parser)");
    t->parser_live = 1;
  }
  rewind(t->f);
  t->eof = 0;
  t->row = 0;
  t->header_done = 0;
  t->field = 0;
  return DK_OK;
}

static dk_status read_more(text_in *t) { return t->csv ? csv_more(t) : json_more(t); }

static dk_status ts_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  return dk__schema_copy(out, &((text_in *)state)->schema, err);
}

static dk_status ts_next(void *state, struct ArrowArray *out, dk_error *err) {
  text_in *t = state;
  t->err = err;
  out->release = NULL;
  t->rows_in_batch = 0;
  while (t->st == DK_OK && !t->eof && t->rows_in_batch < BATCH_ROWS) (void)read_more(t);
  if (t->st) return t->st;
  if (!t->rows_in_batch) return DK_OK; /* the end */
  struct ArrowArray *kids = calloc((size_t)t->n, sizeof *kids);
  if (!kids) return t->st = dk__error_set(err, DK_NOMEM, "out of memory");
  dk_status st = DK_OK;
  int done = 0;
  for (; done < t->n && !st; done++) st = dk__arr_finish(&t->cols[done].arr, &kids[done], err);
  const void *bufs[1] = {NULL};
  if (!st) /* moves the children in */
    st = dk__array_wrap(out, t->rows_in_batch, 0, 0, 1, bufs, t->n, kids, NULL, NULL, NULL, err);
  else
    for (int i = 0; i < done; i++) dk__array_release(&kids[i]);
  free(kids);
  return t->st = st;
}

static void ts_release(void *state) {
  text_in *t = state;
  if (t->parser_live) csv_free(&t->p);
  if (t->f) fclose(t->f);
  for (int i = 0; i < t->n; i++) {
    if (i < t->n_built) dk__arr_reset(&t->cols[i].arr);
    free(t->cols[i].name);
  }
  free(t->cols);
  free(t->line);
  free(t->seen);
  free(t->field_col);
  free(t->path);
  dk__buf_dispose(&t->text);
  dk__arena_dispose(&t->ar);
  dk__schema_release(&t->schema);
  free(t);
}

/* The target's child named `name` (case-insensitive), or NULL. */
static const struct ArrowSchema *target_col(const struct ArrowSchema *target, const char *name) {
  for (int64_t i = 0; target && i < target->n_children; i++)
    if (target->children[i]->name && !strcasecmp(target->children[i]->name, name))
      return target->children[i];
  return NULL;
}

static dk_status start_build(text_in *t, const struct ArrowSchema *target) {
  dk_error *err = t->err;
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(&t->schema, &st, "", 0, t->n, err));
  for (int i = 0; i < t->n; i++) {
    col *c = &t->cols[i];
    const struct ArrowSchema *tc = target_col(target, c->name);
    const char *name = c->name;
    if (tc) {
      DK_RETURN_NOT_OK(dk__atype_parse(&c->at, tc->format, err));
      c->type = kind_of(&c->at);
      if (c->type < 0)
        return dk__error_set(err, DK_UNSUPPORTED,
                             "%s: column '%s' has the type %s, which CSV and JSON-lines input "
                             "cannot fill yet",
                             t->path, tc->name, tc->format);
      name = tc->name; /* the table's spelling */
    } else {
      if (c->type == T_NULL) c->type = T_STR; /* an all-null column: string */
      c->at = atype_of(c->type);
    }
    DK_RETURN_NOT_OK(dk__schema_init(t->schema.children[i], &c->at, name, ARROW_FLAG_NULLABLE,
                                     0, err));
    DK_RETURN_NOT_OK(dk__arr_init(&c->arr, &c->at, NULL, err));
    t->n_built++;
  }
  t->seen = calloc((size_t)t->n + 1, sizeof *t->seen);
  if (!t->field_col) { /* no target: the columns are the header's, in order */
    t->field_col = malloc(sizeof *t->field_col * (size_t)(t->n_header + 1));
    for (int k = 0; t->field_col && k < t->n_header; k++) t->field_col[k] = k;
  }
  return t->seen && t->field_col ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
}

/* The target's columns first, in its order (every file of a `dk write` then yields batches of
 * one schema), then the file's others; CSV fields map to their columns. */
static dk_status order_like(text_in *t, const struct ArrowSchema *target) {
  col *o = malloc(sizeof *o * (size_t)(t->n ? t->n : 1));
  int *taken = calloc((size_t)t->n + 1, sizeof *taken);
  t->field_col = malloc(sizeof *t->field_col * (size_t)(t->n_header + 1));
  if (!o || !taken || !t->field_col) {
    free(o);
    free(taken);
    return dk__error_set(t->err, DK_NOMEM, "out of memory");
  }
  int w = 0;
  for (int64_t i = 0; i < target->n_children; i++)
    for (int k = 0; k < t->n; k++)
      if (!taken[k] && target->children[i]->name &&
          !strcasecmp(target->children[i]->name, t->cols[k].name)) {
        taken[k] = 1;
        o[w++] = t->cols[k];
        break;
      }
  for (int k = 0; k < t->n; k++)
    if (!taken[k]) o[w++] = t->cols[k];
  for (int k = 0; k < t->n; k++)
    if (o[k].field >= 0) t->field_col[o[k].field] = k;
  memcpy(t->cols, o, sizeof *o * (size_t)t->n);
  free(o);
  free(taken);
  return DK_OK;
}

dk_status dk_cli_text_stream(struct ArrowArrayStream *out, const char *path, int csv,
                             const struct ArrowSchema *target, dk_error *err) {
  memset(out, 0, sizeof *out);
  text_in *t = calloc(1, sizeof *t);
  if (!t) return dk__error_set(err, DK_NOMEM, "out of memory");
  t->csv = csv;
  t->err = err;
  t->path = dk__strndup(NULL, path, strlen(path));
  dk__arena_init(&t->ar, NULL, 1 << 16);
  dk__buf_init(&t->text, NULL);
  dk_status st = DK_OK;
  t->f = fopen(path, "rb");
  if (!t->f) st = dk__error_set(err, DK_NOT_FOUND, "cannot open %s", path);
  t->pass = 1;
  if (!st) st = rewind_input(t);
  while (!st && !t->eof) st = read_more(t);
  if (!st && t->n == 0) st = dk__error_set(err, DK_INVALID, "%s: no columns", path);
  /* the target's columns the file lacks: nulls (as Delta appends a DataFrame without them) */
  int n_file = t->n;
  for (int64_t i = 0; !st && target && i < target->n_children; i++) {
    const char *nm = target->children[i]->name;
    int found = 0;
    for (int k = 0; k < n_file && !found; k++) found = nm && !strcasecmp(nm, t->cols[k].name);
    if (!found && nm && !add_col(t, nm, strlen(nm)))
      st = dk__error_set(err, DK_NOMEM, "out of memory");
  }
  if (!st && target) st = order_like(t, target);
  if (!st) st = start_build(t, target);
  if (!st) {
    t->pass = 2;
    st = rewind_input(t);
  }
  if (st) {
    ts_release(t);
    return st;
  }
  static const dk_stream_impl impl = {ts_schema, ts_next, ts_release};
  return dk__stream_init(out, &impl, t, NULL, err);
}
