/*
** write/schema.c — maps an Arrow schema (C Data Interface format strings) to the Parquet
** schema the writer emits, following apache/parquet-format LogicalTypes.md and the choices
** Spark makes for Delta's types (ParquetSchemaConverter, writeLegacyFormat = false):
**
**   boolean -> BOOLEAN              int8/int16 -> INT32 + INTEGER(8|16, signed)
**   int32 -> INT32                  int64 -> INT64         float/double -> FLOAT/DOUBLE
**   decimal128(p,s) -> DECIMAL on INT32 (p <= 9), INT64 (p <= 18), else FIXED_LEN_BYTE_ARRAY
**                      of the fewest bytes that hold p digits
**   date32 -> INT32 DATE            timestamp[s|ms|us] -> INT64 TIMESTAMP(MICROS), adjusted
**                                   to UTC when the Arrow type has a zone (NTZ otherwise)
**   utf8/large_utf8/utf8_view -> BYTE_ARRAY STRING   binary (all three) -> BYTE_ARRAY
**   fixed_size_binary(n) -> FIXED_LEN_BYTE_ARRAY(n)
**   list/large_list -> 3-level LIST (group (LIST) { repeated group list { element } })
**   map -> MAP (group (MAP) { repeated group key_value { required key; value } })
**   struct -> group; a variant (struct<metadata, value> tagged parquet.variant) -> its group
**
** The Parquet field_id comes from the field metadata key "PARQUET:field_id".
*/
#include <errno.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "codec/parquet/write/pqw.h"

typedef struct sctx {
  pqw_schema *s;
  dk_error *err;
  int n_leaves;
  int n_fields;
  int required_next;  /* the next field built is required whatever its flag (map entries, keys) */
} sctx;

/* A readable name for the Arrow formats messages mention. */
static const char *type_name(const char *fmt) {
  static const struct { const char *f, *n; } t[] = {
      {"C", "uint8"}, {"S", "uint16"}, {"I", "uint32"}, {"L", "uint64"}, {"e", "float16"},
      {"n", "null"}, {"tsn:", "timestamp[ns]"}, {"+ud:", "dense union"}, {"+us:", "sparse union"},
      {"+w:", "fixed_size_list"}, {"+vl", "list_view"}, {"+vL", "large_list_view"},
      {"+r", "run_end_encoded"}, {"tt", "time"}, {"tD", "duration"}, {"ti", "interval"}};
  for (size_t i = 0; i < DK_ARRAY_LEN(t); i++) {
    size_t n = strlen(t[i].f);
    if (!strncmp(fmt, t[i].f, n) && (t[i].f[n - 1] == ':' || n <= 2 || !fmt[n])) return t[i].n;
  }
  return fmt;
}

static dk_status unsupported(sctx *c, const char *name, const char *fmt, const char *why) {
  return dk__error_set(c->err, DK_UNSUPPORTED,
                       "Parquet writer: column '%s' has Arrow type %s ('%s'), which %s", name,
                       type_name(fmt), fmt, why);
}

/* Bytes of the two's-complement big-endian FLBA that holds any p-digit decimal (Spark's
** Decimal.minBytesForPrecision). */
static int32_t min_bytes_for_precision(int32_t p) {
  int32_t n = 1;
  for (;;) {
    /* 2^(8n-1) > 10^p ? */
    long double lim = 1;
    for (int i = 0; i < 8 * n - 1; i++) lim *= 2;
    long double ten = 1;
    for (int i = 0; i < p; i++) ten *= 10;
    if (lim >= ten) return n;
    n++;
  }
}

static int parse_decimal_fmt(const char *f, int32_t *p, int32_t *s, int *bits) {
  char *end;
  errno = 0;
  long pp = strtol(f + 2, &end, 10);
  if (*end != ',') return 0;
  long ss = strtol(end + 1, &end, 10);
  long bw = 128;
  if (*end == ',') bw = strtol(end + 1, &end, 10);
  if (*end || errno) return 0;
  *p = (int32_t)pp, *s = (int32_t)ss, *bits = (int)bw;
  return 1;
}

static dk_status leaf_type(sctx *c, pqw_field *f, const struct ArrowSchema *a) {
  const char *fmt = a->format;
  f->kind = PQW_PRIM;
  f->logical = PQ_LT_NONE;
  if (!strcmp(fmt, "b")) {
    f->ptype = PQ_BOOLEAN, f->conv = PQW_CV_BOOL;
  } else if (!strcmp(fmt, "c") || !strcmp(fmt, "s")) {
    f->ptype = PQ_INT32, f->conv = fmt[0] == 'c' ? PQW_CV_I8 : PQW_CV_I16;
    f->logical = PQ_LT_INTEGER, f->int_bits = fmt[0] == 'c' ? 8 : 16;
  } else if (!strcmp(fmt, "i")) {
    f->ptype = PQ_INT32, f->conv = PQW_CV_COPY4;
  } else if (!strcmp(fmt, "l")) {
    f->ptype = PQ_INT64, f->conv = PQW_CV_COPY8;
  } else if (!strcmp(fmt, "f")) {
    f->ptype = PQ_FLOAT, f->conv = PQW_CV_COPY4;
  } else if (!strcmp(fmt, "g")) {
    f->ptype = PQ_DOUBLE, f->conv = PQW_CV_COPY8;
  } else if (!strcmp(fmt, "tdD")) {
    f->ptype = PQ_INT32, f->conv = PQW_CV_COPY4, f->logical = PQ_LT_DATE;
  } else if (fmt[0] == 't' && fmt[1] == 's' && fmt[2] && fmt[3] == ':') {
    f->ptype = PQ_INT64, f->logical = PQ_LT_TIMESTAMP;
    f->ts_utc = fmt[4] != 0;
    switch (fmt[2]) {
      case 's': f->conv = PQW_CV_TS_MUL, f->ts_mul = 1000000; break;
      case 'm': f->conv = PQW_CV_TS_MUL, f->ts_mul = 1000; break;
      case 'u': f->conv = PQW_CV_COPY8; break;
      case 'n':
        return unsupported(c, f->name, fmt,
                           "Delta cannot store (timestamps are microseconds; cast to "
                           "timestamp[us] first)");
      default: return unsupported(c, f->name, fmt, "is not a known timestamp unit");
    }
  } else if (fmt[0] == 'd' && fmt[1] == ':') {
    int32_t p, s;
    int bits;
    if (!parse_decimal_fmt(fmt, &p, &s, &bits))
      return unsupported(c, f->name, fmt, "is not a valid decimal format");
    if (bits != 128) return unsupported(c, f->name, fmt, "is wider than decimal128");
    if (p < 1 || p > 38 || s < 0 || s > p)
      return unsupported(c, f->name, fmt, "has a precision/scale Delta cannot store (1..38, 0..p)");
    f->logical = PQ_LT_DECIMAL, f->precision = p, f->scale = s;
    if (p <= 9) {
      f->ptype = PQ_INT32, f->conv = PQW_CV_DEC32;
    } else if (p <= 18) {
      f->ptype = PQ_INT64, f->conv = PQW_CV_DEC64;
    } else {
      f->ptype = PQ_FLBA, f->conv = PQW_CV_DECFLBA, f->type_length = min_bytes_for_precision(p);
      f->signed_flba = 1;
    }
  } else if (!strcmp(fmt, "u") || !strcmp(fmt, "U") || !strcmp(fmt, "vu")) {
    f->ptype = PQ_BYTE_ARRAY, f->logical = PQ_LT_STRING, f->is_string = 1;
    f->conv = fmt[0] == 'v' ? PQW_CV_VIEW : fmt[0] == 'u' ? PQW_CV_BIN32 : PQW_CV_BIN64;
  } else if (!strcmp(fmt, "z") || !strcmp(fmt, "Z") || !strcmp(fmt, "vz")) {
    f->ptype = PQ_BYTE_ARRAY;
    f->conv = fmt[0] == 'v' ? PQW_CV_VIEW : fmt[0] == 'z' ? PQW_CV_BIN32 : PQW_CV_BIN64;
  } else if (fmt[0] == 'w' && fmt[1] == ':') {
    char *end;
    long w = strtol(fmt + 2, &end, 10);
    if (*end || w < 1 || w > INT32_MAX)
      return unsupported(c, f->name, fmt, "is not a valid fixed-size binary format");
    f->ptype = PQ_FLBA, f->conv = PQW_CV_FIXED, f->type_length = (int32_t)w;
  } else {
    const char *why = "Delta cannot store";
    if (strchr("CSILe", fmt[0]) && !fmt[1]) why = "Delta cannot store (no unsigned or half-float types)";
    else if (!strcmp(fmt, "n")) why = "Delta cannot store (a column of type null)";
    else if (fmt[0] == 't' && (fmt[1] == 't' || fmt[1] == 'D' || fmt[1] == 'i'))
      why = "Delta cannot store (time, duration and interval types)";
    return unsupported(c, f->name, fmt, why);
  }
  f->leaf = c->n_leaves++;
  return DK_OK;
}

static dk_status field_id(sctx *c, pqw_field *f, const struct ArrowSchema *a) {
  dk_str v = dk__schema_metadata_get(a->metadata, "PARQUET:field_id");
  if (!v.ptr) return DK_OK;
  char tmp[24];
  if (v.len == 0 || v.len >= sizeof tmp) goto bad;
  memcpy(tmp, v.ptr, v.len);
  tmp[v.len] = 0;
  char *end;
  errno = 0;
  long long id = strtoll(tmp, &end, 10);
  if (*end || errno || id < INT32_MIN || id > INT32_MAX) goto bad;
  f->has_field_id = 1;
  f->field_id = (int32_t)id;
  return DK_OK;
bad:
  return dk__error_set(c->err, DK_INVALID, "Parquet writer: column '%s': PARQUET:field_id '%.*s' is not an int32",
                       f->name, (int)DK_MIN(v.len, 64), v.ptr);
}

static int is_variant(const struct ArrowSchema *a) {
  dk_str e = dk__schema_metadata_get(a->metadata, "ARROW:extension:name");
  if (!e.ptr) return 0;
  return (e.len == 15 && !memcmp(e.ptr, "parquet.variant", 15)) ||
         (e.len == 21 && !memcmp(e.ptr, "arrow.parquet.variant", 21));
}

static dk_status build(sctx *c, pqw_field **out, const struct ArrowSchema *a, pqw_field *parent,
                       int depth, int16_t def, int16_t rep, int under_rep);

static dk_status children(sctx *c, pqw_field *f, const struct ArrowSchema *a, int depth,
                          int16_t def, int16_t rep, int under_rep) {
  f->n_children = (int)a->n_children;
  f->children = dk__arena_alloc(&c->s->arena, sizeof(pqw_field *) * (size_t)(a->n_children + 1), c->err);
  if (!f->children) return DK_NOMEM;
  for (int i = 0; i < f->n_children; i++) {
    DK_RETURN_NOT_OK(build(c, &f->children[i], a->children[i], f, depth, def, rep, under_rep));
    f->children[i]->child_index = i;
  }
  return DK_OK;
}

static dk_status build(sctx *c, pqw_field **out, const struct ArrowSchema *a, pqw_field *parent,
                       int depth, int16_t def, int16_t rep, int under_rep) {
  if (!a || !a->format)
    return dk__error_set(c->err, DK_INVALID, "Parquet writer: schema has a released child");
  pqw_field *f = dk__arena_alloc(&c->s->arena, sizeof *f, c->err);
  if (!f) return DK_NOMEM;
  memset(f, 0, sizeof *f);
  *out = f;
  f->parent = parent;
  f->depth = depth;
  f->leaf = -1;
  f->index = c->n_fields++;
  f->first_leaf = c->n_leaves;
  f->name = dk__arena_strndup(&c->s->arena, a->name ? a->name : "", a->name ? strlen(a->name) : 0, c->err);
  f->format = dk__arena_strndup(&c->s->arena, a->format, strlen(a->format), c->err);
  if (!f->name || !f->format) return DK_NOMEM;
  if (a->dictionary)
    return unsupported(c, f->name, a->format, "is dictionary-encoded (decode it first)");
  f->nullable = (a->flags & ARROW_FLAG_NULLABLE) != 0 && !c->required_next;
  int keys_required = c->required_next == 2;
  c->required_next = 0;
  DK_RETURN_NOT_OK(field_id(c, f, a));
  f->def = (int16_t)(def + (f->nullable ? 1 : 0));
  f->rep = rep;
  f->under_repeated = under_rep;
  const char *fmt = a->format;
  if (!strcmp(fmt, "+s")) {
    f->kind = PQW_STRUCT;
    if (a->n_children == 0)
      return unsupported(c, f->name, fmt, "Parquet cannot store (a struct with no fields)");
    f->is_variant = is_variant(a);
    if (keys_required) c->required_next = 1;
    DK_RETURN_NOT_OK(children(c, f, a, depth + 1, f->def, rep, under_rep));
  } else if (!strcmp(fmt, "+l") || !strcmp(fmt, "+L") || !strcmp(fmt, "+m")) {
    f->kind = fmt[1] == 'm' ? PQW_MAP : PQW_LIST;
    if (a->n_children != 1) return unsupported(c, f->name, fmt, "has no element/entries child");
    if (f->kind == PQW_MAP) {
      const struct ArrowSchema *e = a->children[0];
      if (!e || !e->format || strcmp(e->format, "+s") || e->n_children != 2)
        return unsupported(c, f->name, fmt, "has no struct<key, value> entries");
    }
    /* the repeated group adds one definition and one repetition level; a map's entries struct
    ** is that group (never null) and its keys are required */
    if (f->kind == PQW_MAP) c->required_next = 2;
    DK_RETURN_NOT_OK(children(c, f, a, depth + 1, (int16_t)(f->def + 1), (int16_t)(rep + 1), 1));
  } else if (fmt[0] == '+') {
    return unsupported(c, f->name, fmt, "Delta cannot store (unions, fixed-size and view lists, run-end encoding)");
  } else {
    DK_RETURN_NOT_OK(leaf_type(c, f, a));
  }
  f->n_leaves = c->n_leaves - f->first_leaf;
  return DK_OK;
}

static void collect(pqw_schema *s, pqw_field *f, int *nf) {
  if (f != s->root) s->fields[(*nf)++] = f;
  if (f->leaf >= 0) s->leaves[f->leaf] = f;
  for (int i = 0; i < f->n_children; i++) collect(s, f->children[i], nf);
}

dk_status dk_pqw__schema_build(pqw_schema *out, const struct ArrowSchema *schema,
                               const dk_allocator *alloc, dk_error *err) {
  memset(out, 0, sizeof *out);
  dk__arena_init(&out->arena, alloc, 16384);
  if (!schema || !schema->release || !schema->format || strcmp(schema->format, "+s"))
    return dk__error_set(err, DK_INVALID,
                         "Parquet writer: the schema must be a struct of columns (format '+s'), not '%s'",
                         schema && schema->format ? schema->format : "(released)");
  if (schema->n_children == 0)
    return dk__error_set(err, DK_INVALID, "Parquet writer: the schema has no columns");
  sctx c = {out, err, 0, 0, 0};
  pqw_field *root = dk__arena_alloc(&out->arena, sizeof *root, err);
  if (!root) return DK_NOMEM;
  memset(root, 0, sizeof *root);
  root->kind = PQW_STRUCT;
  root->leaf = -1;
  root->depth = -1;
  root->name = (char *)"schema";
  root->format = (char *)"+s";
  out->root = root;
  DK_RETURN_NOT_OK(children(&c, root, schema, 0, 0, 0, 0));
  root->n_leaves = c.n_leaves;
  out->n_fields = c.n_fields;
  out->n_leaves = c.n_leaves;
  out->fields = dk__arena_alloc(&out->arena, sizeof(pqw_field *) * (size_t)(c.n_fields + 1), err);
  out->leaves = dk__arena_alloc(&out->arena, sizeof(pqw_field *) * (size_t)(c.n_leaves + 1), err);
  if (!out->fields || !out->leaves) return DK_NOMEM;
  int nf = 0;
  collect(out, root, &nf);
  /* duplicate names among siblings would make an unreadable schema */
  for (int i = 0; i < c.n_fields; i++) {
    const pqw_field *f = out->fields[i];
    const pqw_field *p = f->parent;
    for (int j = 0; j < f->child_index; j++)
      if (!strcmp(p->children[j]->name, f->name))
        return dk__error_set(err, DK_INVALID, "Parquet writer: duplicate column name '%s'", f->name);
  }
  return DK_OK;
}

void dk_pqw__schema_dispose(pqw_schema *s) { dk__arena_dispose(&s->arena); }
