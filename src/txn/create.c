/*
** create.c — CREATE TABLE / CREATE OR REPLACE TABLE (delta-spark CreateDeltaTableCommand;
** PROTOCOL.md "Protocol Evolution", "Change Metadata"), and Spark's DDL column lists
** ("a long, b string not null, c struct<x: int>") as Delta schema strings (PROTOCOL.md
** "Schema Serialization Format").
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "txn/txn_int.h"

/* ---- DDL ---------------------------------------------------------------------------------- */

typedef struct ddl {
  const char *s;
  size_t pos;
  dk_buf *out;
  dk_error *err;
  int depth;
} ddl;

static void skip_ws(ddl *d) {
  while (isspace((unsigned char)d->s[d->pos])) d->pos++;
}

static dk_status bad(ddl *d, const char *what) {
  return dk__error_set(d->err, DK_INVALID, "schema: %s at offset %zu of \"%s\"", what, d->pos,
                       d->s);
}

static int eat(ddl *d, char c) {
  skip_ws(d);
  if (d->s[d->pos] == c) {
    d->pos++;
    return 1;
  }
  return 0;
}

/* An identifier or `quoted` name into buf. */
static dk_status ident(ddl *d, char *buf, size_t cap) {
  skip_ws(d);
  size_t n = 0;
  if (d->s[d->pos] == '`') {
    d->pos++;
    while (d->s[d->pos] && !(d->s[d->pos] == '`' && d->s[d->pos + 1] != '`')) {
      if (d->s[d->pos] == '`') d->pos++; /* `` is one backtick */
      if (n + 1 >= cap) return bad(d, "name too long");
      buf[n++] = d->s[d->pos++];
    }
    if (d->s[d->pos] != '`') return bad(d, "unterminated `name`");
    d->pos++;
  } else {
    while (isalnum((unsigned char)d->s[d->pos]) || d->s[d->pos] == '_' ||
           (unsigned char)d->s[d->pos] >= 0x80) {
      if (n + 1 >= cap) return bad(d, "name too long");
      buf[n++] = d->s[d->pos++];
    }
  }
  if (!n) return bad(d, "expected a name");
  buf[n] = 0;
  return DK_OK;
}

static int keyword(ddl *d, const char *kw) {
  skip_ws(d);
  size_t n = strlen(kw);
  if (!strncasecmp(d->s + d->pos, kw, n) && !isalnum((unsigned char)d->s[d->pos + n]) &&
      d->s[d->pos + n] != '_') {
    d->pos += n;
    return 1;
  }
  return 0;
}

static dk_status type(ddl *d);

/* [NOT NULL] [COMMENT 'text'] -> nullable flag and metadata JSON */
static dk_status field_tail(ddl *d, int *nullable, dk_buf *meta) {
  *nullable = 1;
  for (;;) {
    if (keyword(d, "not")) {
      if (!keyword(d, "null")) return bad(d, "expected NULL after NOT");
      *nullable = 0;
    } else if (keyword(d, "comment")) {
      skip_ws(d);
      char q = d->s[d->pos];
      if (q != '\'' && q != '"') return bad(d, "expected a quoted comment");
      size_t a = ++d->pos;
      while (d->s[d->pos] && d->s[d->pos] != q) d->pos++;
      if (d->s[d->pos] != q) return bad(d, "unterminated comment");
      DK_RETURN_NOT_OK(dk__buf_puts(meta, "{\"comment\":", d->err));
      DK_RETURN_NOT_OK(dk__json_write_str(meta, d->s + a, d->pos - a, d->err));
      DK_RETURN_NOT_OK(dk__buf_putc(meta, '}', d->err));
      d->pos++;
    } else {
      return DK_OK;
    }
  }
}

/* name [:] type [NOT NULL] [COMMENT '...'] as a Delta StructField */
static dk_status field(ddl *d) {
  char name[512];
  DK_RETURN_NOT_OK(ident(d, name, sizeof name));
  (void)eat(d, ':');
  DK_RETURN_NOT_OK(dk__buf_puts(d->out, "{\"name\":", d->err));
  DK_RETURN_NOT_OK(dk__json_write_str(d->out, name, strlen(name), d->err));
  DK_RETURN_NOT_OK(dk__buf_puts(d->out, ",\"type\":", d->err));
  DK_RETURN_NOT_OK(type(d));
  int nullable;
  dk_buf meta;
  dk__buf_init(&meta, NULL);
  dk_status st = field_tail(d, &nullable, &meta);
  if (!st)
    st = dk__buf_printf(d->out, d->err, ",\"nullable\":%s,\"metadata\":%s}",
                        nullable ? "true" : "false", meta.len ? meta.data : "{}");
  dk__buf_dispose(&meta);
  return st;
}

static dk_status type(ddl *d) {
  if (++d->depth > 64) return bad(d, "types nested too deeply");
  skip_ws(d);
  static const struct { const char *kw, *delta; } prim[] = {
      {"string", "string"},   {"varchar", "string"}, {"char", "string"},
      {"bigint", "long"},     {"long", "long"},      {"integer", "integer"},
      {"int", "integer"},     {"smallint", "short"}, {"short", "short"},
      {"tinyint", "byte"},    {"byte", "byte"},      {"float", "float"},
      {"real", "float"},      {"double", "double"},  {"boolean", "boolean"},
      {"bool", "boolean"},    {"binary", "binary"},  {"date", "date"},
      {"timestamp_ntz", "timestamp_ntz"},            {"timestamp_ltz", "timestamp"},
      {"timestamp", "timestamp"},                    {"variant", "variant"},
  };
  dk_status st = DK_OK;
  if (keyword(d, "decimal") || keyword(d, "numeric") || keyword(d, "dec")) {
    long p = 10, s = 0;
    if (eat(d, '(')) {
      skip_ws(d);
      p = strtol(d->s + d->pos, NULL, 10);
      while (isdigit((unsigned char)d->s[d->pos])) d->pos++;
      if (eat(d, ',')) {
        skip_ws(d);
        s = strtol(d->s + d->pos, NULL, 10);
        while (isdigit((unsigned char)d->s[d->pos])) d->pos++;
      }
      if (!eat(d, ')')) return bad(d, "expected ')' after decimal precision");
    }
    if (p < 1 || p > 38 || s < 0 || s > p) return bad(d, "decimal precision/scale out of range");
    st = dk__buf_printf(d->out, d->err, "\"decimal(%ld,%ld)\"", p, s);
  } else if (keyword(d, "array")) {
    if (!eat(d, '<')) return bad(d, "expected '<' after array");
    DK_RETURN_NOT_OK(dk__buf_puts(d->out, "{\"type\":\"array\",\"elementType\":", d->err));
    DK_RETURN_NOT_OK(type(d));
    if (!eat(d, '>')) return bad(d, "expected '>'");
    st = dk__buf_puts(d->out, ",\"containsNull\":true}", d->err);
  } else if (keyword(d, "map")) {
    if (!eat(d, '<')) return bad(d, "expected '<' after map");
    DK_RETURN_NOT_OK(dk__buf_puts(d->out, "{\"type\":\"map\",\"keyType\":", d->err));
    DK_RETURN_NOT_OK(type(d));
    if (!eat(d, ',')) return bad(d, "expected ',' in map<k, v>");
    DK_RETURN_NOT_OK(dk__buf_puts(d->out, ",\"valueType\":", d->err));
    DK_RETURN_NOT_OK(type(d));
    if (!eat(d, '>')) return bad(d, "expected '>'");
    st = dk__buf_puts(d->out, ",\"valueContainsNull\":true}", d->err);
  } else if (keyword(d, "struct")) {
    if (!eat(d, '<')) return bad(d, "expected '<' after struct");
    DK_RETURN_NOT_OK(dk__buf_puts(d->out, "{\"type\":\"struct\",\"fields\":[", d->err));
    if (!eat(d, '>')) {
      do {
        if (d->out->data[d->out->len - 1] == '}') DK_RETURN_NOT_OK(dk__buf_putc(d->out, ',', d->err));
        DK_RETURN_NOT_OK(field(d));
      } while (eat(d, ','));
      if (!eat(d, '>')) return bad(d, "expected '>'");
    }
    st = dk__buf_puts(d->out, "]}", d->err);
  } else {
    size_t i = 0;
    for (; i < DK_ARRAY_LEN(prim); i++)
      if (keyword(d, prim[i].kw)) break;
    if (i == DK_ARRAY_LEN(prim)) return bad(d, "unknown type");
    if (eat(d, '(')) { /* varchar(n), char(n) */
      while (d->s[d->pos] && d->s[d->pos] != ')') d->pos++;
      if (!eat(d, ')')) return bad(d, "expected ')'");
    }
    st = dk__buf_printf(d->out, d->err, "\"%s\"", prim[i].delta);
  }
  d->depth--;
  return st;
}

dk_status dk_schema_from_ddl(char **out, const char *text, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!text, DK_INVALID, err, "schema: NULL");
  dk_buf b;
  dk__buf_init(&b, NULL);
  ddl d = {.s = text, .out = &b, .err = err};
  dk_status st = dk__buf_puts(&b, "{\"type\":\"struct\",\"fields\":[", err);
  skip_ws(&d);
  if (!st && !d.s[d.pos]) st = bad(&d, "no columns");
  while (!st) {
    st = field(&d);
    if (st || !eat(&d, ',')) break;
    st = dk__buf_putc(&b, ',', err);
  }
  skip_ws(&d);
  if (!st && d.s[d.pos]) st = bad(&d, "unexpected text");
  if (!st) st = dk__buf_puts(&b, "]}", err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *out = dk__buf_detach(&b);
  return DK_OK;
}

/* ---- CREATE TABLE ------------------------------------------------------------------------- */

dk_status dk_table_create(dk_commit_result *out, dk_table *t, const dk_create_options *o,
                          dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
    out->committed_version = -1;
  }
  DK_RETURN_IF(!t || !o || !o->schema_string, DK_INVALID, err, "dk_table_create: no schema");
  DK_RETURN_IF(o->version > DK_CREATE_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_create_options version %u is newer than dk's", o->version);
  dk_snapshot *s = NULL;
  dk_error e2;
  dk_error_init(&e2);
  dk_status st = dk_snapshot_open(&s, t, NULL, &e2);
  if (st && st != DK_NOT_FOUND) {
    if (err) *err = e2;
    return st;
  }
  if (s && o->mode == DK_CREATE_IGNORE) {
    dk_snapshot_free(s);
    return DK_OK;
  }
  if (s && o->mode == DK_CREATE_ERROR_IF_EXISTS) {
    int64_t v = dk_snapshot_version(s);
    dk_snapshot_free(s);
    return dk__error_set(err, DK_INVALID,
                         "%s: a Delta table already exists (version %lld) "
                         "(DELTA_TABLE_ALREADY_EXISTS)",
                         t->root, (long long)v);
  }
  dk_buf params;
  dk__buf_init(&params, t->alloc);
  st = dk__buf_puts(&params, "{\"partitionBy\":", err);
  dk_buf cols;
  dk__buf_init(&cols, t->alloc);
  if (!st) st = dk__buf_putc(&cols, '[', err);
  for (size_t i = 0; !st && i < o->n_partition_columns; i++) {
    if (i) st = dk__buf_putc(&cols, ',', err);
    if (!st) st = dk__json_write_str(&cols, o->partition_columns[i],
                                     strlen(o->partition_columns[i]), err);
  }
  if (!st) st = dk__buf_putc(&cols, ']', err);
  if (!st) st = dk__json_write_str(&params, cols.data, cols.len, err);
  dk__buf_dispose(&cols);
  if (!st && o->description) {
    st = dk__buf_puts(&params, ",\"description\":", err);
    if (!st) st = dk__json_write_str(&params, o->description, strlen(o->description), err);
  }
  if (!st) st = dk__buf_puts(&params, ",\"properties\":", err);
  dk_buf props;
  dk__buf_init(&props, t->alloc);
  if (!st) st = dk__buf_putc(&props, '{', err);
  for (size_t i = 0; !st && i < o->n_properties; i++) {
    if (i) st = dk__buf_putc(&props, ',', err);
    if (!st) st = dk__json_write_str(&props, o->properties[2 * i], strlen(o->properties[2 * i]), err);
    if (!st) st = dk__buf_putc(&props, ':', err);
    if (!st) st = dk__json_write_str(&props, o->properties[2 * i + 1],
                                     strlen(o->properties[2 * i + 1]), err);
  }
  if (!st) st = dk__buf_putc(&props, '}', err);
  if (!st) st = dk__json_write_str(&params, props.data, props.len, err);
  dk__buf_dispose(&props);
  if (!st) st = dk__buf_puts(&params, s ? "}" : ",\"isManaged\":\"false\"}", err);
  dk_txn_options to = o->txn;
  if (!to.version) to.version = DK_TXN_OPTIONS_VERSION;
  to.operation = s ? "CREATE OR REPLACE TABLE" : "CREATE TABLE";
  to.operation_parameters = params.data;
  dk_txn *x = NULL;
  if (!st) st = s ? dk_txn_begin(&x, s, &to, err) : dk_txn_begin_create(&x, t, &to, err);
  if (!st && s) {
    dk_txn_read_whole_table(x);
    for (int64_t i = 0; !st && i < dk_snapshot_num_files(s); i++) st = dk_txn_remove_file(x, i, 1, err);
  }
  dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .name = o->name,
                        .description = o->description, .schema_string = o->schema_string,
                        .n_partition_columns = o->n_partition_columns,
                        .partition_columns = o->partition_columns,
                        .n_configuration = o->n_properties, .configuration = o->properties,
                        .created_time = -1};
  if (s && x) {
    /* a replaced table gets a new id; keep the protocol (never downgraded), upgraded when the
     * new properties need more */
    char id[37];
    dk_txn__uuid(id);
    m.id = id;
    dk_protocol need;
    txn_meta nm = {.n_conf = o->n_properties, .conf = (const char **)o->properties};
    const dk_type *schema = NULL;
    if (!st) st = dk_schema__parse(&schema, &x->ar, o->schema_string, strlen(o->schema_string), err);
    if (!st) st = dk_txn__derive_protocol(&need, &x->ar, &nm, schema, err);
    if (!st) {
      const dk_protocol *cur = dk_snapshot_protocol(s);
      int up = need.min_reader_version > cur->min_reader_version ||
               need.min_writer_version > cur->min_writer_version;
      for (size_t i = 0; !up && i < need.n_writer_features; i++)
        up = !dk_txn__protocol_supports(cur, need.writer_features[i]);
      if (up) {
        dk_protocol p;
        st = dk_txn__protocol_union(&p, &x->ar, cur, &need, err);
        if (!st) st = dk_txn_set_protocol(x, &p, err);
      }
    }
    if (!st) st = dk_txn_set_metadata(x, &m, err);
  } else if (!st) {
    st = dk_txn_set_metadata(x, &m, err);
  }
  if (!st) {
    st = dk_txn_commit(x, out, err);
    x = NULL;
  }
  dk_txn_abort(x);
  dk__buf_dispose(&params);
  dk_snapshot_free(s);
  return st;
}
