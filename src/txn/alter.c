/*
** alter.c — ALTER TABLE as one metadata commit (delta-spark's AlterTableSetPropertiesDelta-
** Command, ...UnsetProperties..., ...AddColumns..., ...ChangeColumn... (rename) and
** ...DropColumns...; PROTOCOL.md "Change Metadata", "Column Mapping", "Protocol Evolution").
**
** How it works: the table's schemaString is parsed into a JSON tree, the change is applied
** to the tree (fields inserted, renamed or removed inside the struct their path names), and
** the tree is written back; properties are checked against delta-spark's DeltaConfigs
** (known delta.* keys in their canonical case, values that parse) and merged into the
** table's configuration. The protocol the new metadata needs is compared with the table's
** and, when a feature is missing, upgraded in the same commit (dk_txn__protocol_upgrade).
** Column-mapping ids and physical names of new columns come from dk_txn_set_metadata. The
** operation and its parameters are delta-spark's, so DESCRIBE HISTORY reads the same.
*/
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "txn/txn_int.h"

/* ---- properties ---------------------------------------------------------------------------- */

typedef enum prop_kind { P_ANY = 0, P_BOOL, P_POS_INT, P_INT, P_GE_M1, P_INTERVAL, P_CM_MODE,
                         P_CHECKPOINT_POLICY, P_ISOLATION } prop_kind;

/* delta-spark's DeltaConfigs keys and how their values parse. */
static const struct { const char *key; prop_kind kind; } known[] = {
    {"delta.appendOnly", P_BOOL},
    {"delta.checkpointInterval", P_POS_INT},
    {"delta.logRetentionDuration", P_INTERVAL},
    {"delta.sampleRetentionDuration", P_INTERVAL},
    {"delta.checkpointRetentionDuration", P_INTERVAL},
    {"delta.deletedFileRetentionDuration", P_INTERVAL},
    {"delta.setTransactionRetentionDuration", P_INTERVAL},
    {"delta.enableExpiredLogCleanup", P_BOOL},
    {"delta.enableFullRetentionRollback", P_BOOL},
    {"delta.compatibility.symlinkFormatManifest.enabled", P_BOOL},
    {"delta.dataSkippingNumIndexedCols", P_GE_M1},
    {"delta.dataSkippingStatsColumns", P_ANY},
    {"delta.isolationLevel", P_ISOLATION},
    {"delta.checkpoint.writeStatsAsJson", P_BOOL},
    {"delta.checkpoint.writeStatsAsStruct", P_BOOL},
    {"delta.columnMapping.mode", P_CM_MODE},
    {"delta.columnMapping.maxColumnId", P_INT},
    {"delta.enableChangeDataFeed", P_BOOL},
    {"delta.enableDeletionVectors", P_BOOL},
    {"delta.enableRowTracking", P_BOOL},
    {"delta.rowTrackingSuspended", P_BOOL},
    {"delta.enableInCommitTimestamps", P_BOOL},
    {"delta.inCommitTimestampEnablementVersion", P_INT},
    {"delta.inCommitTimestampEnablementTimestamp", P_INT},
    {"delta.checkpointPolicy", P_CHECKPOINT_POLICY},
    {"delta.randomizeFilePrefixes", P_BOOL},
    {"delta.randomPrefixLength", P_POS_INT},
    {"delta.targetFileSize", P_POS_INT},
    {"delta.tuneFileSizesForRewrites", P_BOOL},
    {"delta.autoOptimize.optimizeWrite", P_BOOL},
    {"delta.autoOptimize.autoCompact", P_BOOL},
    {"delta.enableTypeWidening", P_BOOL},
    {"delta.universalFormat.enabledFormats", P_ANY},
    {"delta.enableIcebergCompatV1", P_BOOL},
    {"delta.enableIcebergCompatV2", P_BOOL},
    {"delta.enableVariantShredding", P_BOOL},
    {"delta.parquet.compression.codec", P_ANY},
    {"delta.minReaderVersion", P_POS_INT},
    {"delta.minWriterVersion", P_POS_INT},
    {"delta.rowTracking.materializedRowIdColumnName", P_ANY},
    {"delta.rowTracking.materializedRowCommitVersionColumnName", P_ANY},
};

static int parse_int(const char *v, int64_t *out) {
  char *end;
  if (!*v) return 0;
  long long x = strtoll(v, &end, 10);
  if (*end) return 0;
  *out = x;
  return 1;
}

/* Why value v is not valid for a key of kind k, or NULL (DeltaConfigs' help messages, which
 * delta-spark reports as "requirement failed: <key> <help>"). */
static const char *bad_value(prop_kind k, const char *v) {
  int64_t n, ms;
  dk_error e;
  dk_error_init(&e);
  switch (k) {
    case P_BOOL:
      return strcasecmp(v, "true") && strcasecmp(v, "false") ? "needs to be a boolean." : NULL;
    case P_POS_INT: return parse_int(v, &n) && n > 0 ? NULL : "needs to be a positive integer.";
    case P_INT: return parse_int(v, &n) ? NULL : "needs to be a long.";
    case P_GE_M1:
      return parse_int(v, &n) && n >= -1 ? NULL : "needs to be larger than or equal to -1.";
    case P_INTERVAL:
      return dk_txn__parse_interval_ms(&ms, v, &e) == DK_OK && ms >= 0
                 ? NULL
                 : "needs to be provided as a calendar interval such as '2 weeks'. Months and "
                   "years are not accepted. You may specify '365 days' for a year instead.";
    case P_CM_MODE:
      return strcasecmp(v, "none") && strcasecmp(v, "name") && strcasecmp(v, "id")
                 ? "needs to be one of: none, name, id." : NULL;
    case P_CHECKPOINT_POLICY:
      return strcmp(v, "classic") && strcmp(v, "v2") ? "needs to be one of: classic, v2." : NULL;
    case P_ISOLATION:
      return strcmp(v, "Serializable") ? "must be Serializable" : NULL;
    default: return NULL;
  }
}

/* The canonical spelling of key (a known delta.* key in DeltaConfigs' case, or key itself)
 * in *out; DK_INVALID for an unknown delta.* key. *kind: how its value parses. */
static dk_status canonical_key(const char **out, prop_kind *kind, const char *key,
                               dk_error *err) {
  *out = key;
  *kind = P_ANY;
  if (strncasecmp(key, "delta.", 6) != 0) return DK_OK;
  if (!strncasecmp(key + 6, "feature.", 8) || !strncasecmp(key + 6, "constraints.", 12))
    return DK_OK;
  for (size_t i = 0; i < DK_ARRAY_LEN(known); i++)
    if (!strcasecmp(key, known[i].key)) {
      *out = known[i].key;
      *kind = known[i].kind;
      return DK_OK;
    }
  return dk__error_set(err, DK_INVALID,
                       "[DELTA_UNKNOWN_CONFIGURATION] Unknown configuration was specified: %s",
                       key);
}

/* ---- schema tree --------------------------------------------------------------------------- */

static dk_json_value *member(dk_json_value *obj, const char *key) {
  if (!obj || obj->type != DK_JSON_OBJECT) return NULL;
  for (uint32_t i = 0; i < obj->len; i++)
    if (!strcmp(obj->u.members[i].key, key)) return &obj->u.members[i].value;
  return NULL;
}

/* The "fields" array of a struct type value, or NULL. */
static dk_json_value *struct_fields(dk_json_value *type) {
  dk_json_value *t = member(type, "type");
  if (!t || t->type != DK_JSON_STRING || strcmp(t->u.str, "struct")) return NULL;
  dk_json_value *f = member(type, "fields");
  return f && f->type == DK_JSON_ARRAY ? f : NULL;
}

static const char *field_name(dk_json_value *f) {
  dk_json_value *n = member(f, "name");
  return n && n->type == DK_JSON_STRING ? n->u.str : "";
}

/* Index of the field named `name` (exactly, else case-insensitively: Spark's resolution) in
 * a fields array, or -1. */
static long find_field(dk_json_value *fields, const char *name) {
  for (uint32_t i = 0; i < fields->len; i++)
    if (!strcmp(field_name(&fields->u.items[i]), name)) return (long)i;
  for (uint32_t i = 0; i < fields->len; i++)
    if (!strcasecmp(field_name(&fields->u.items[i]), name)) return (long)i;
  return -1;
}

/* The fields array of the struct that path[0..n) names (n = 0: the top level), or NULL. */
static dk_json_value *parent_fields(dk_json_value *root, const char *const *path, size_t n) {
  dk_json_value *fields = struct_fields(root);
  for (size_t i = 0; fields && i < n; i++) {
    long k = find_field(fields, path[i]);
    if (k < 0) return NULL;
    fields = struct_fields(member(&fields->u.items[k], "type"));
  }
  return fields;
}

/* A column path as Spark prints it (UnresolvedAttribute.name: parts with a dot or backtick
 * quoted in backticks), with the last part replaced by `last` when it is not NULL. */
static dk_status put_path(dk_buf *b, const char *const *path, size_t n, const char *last,
                          dk_error *err) {
  for (size_t i = 0; i < n; i++) {
    const char *p = i + 1 == n && last ? last : path[i];
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, '.', err));
    if (strchr(p, '.') || strchr(p, '`')) {
      DK_RETURN_NOT_OK(dk__buf_putc(b, '`', err));
      for (const char *c = p; *c; c++) {
        if (*c == '`') DK_RETURN_NOT_OK(dk__buf_putc(b, '`', err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, *c, err));
      }
      DK_RETURN_NOT_OK(dk__buf_putc(b, '`', err));
    } else {
      DK_RETURN_NOT_OK(dk__buf_puts(b, p, err));
    }
  }
  return DK_OK;
}

/* The alteration being built: the tree, configuration, partition columns and the
 * operationParameters JSON. */
typedef struct alter {
  dk_arena ar;
  dk_json_value *schema;
  const char **conf;      /* 2 * n_conf */
  size_t n_conf;
  const char **part;
  size_t n_part;
  int reader_v, writer_v; /* delta.minReaderVersion / minWriterVersion asked for (0: not) */
  dk_buf params;
  const char *root;       /* the table, for messages */
  const char *cm_mode;    /* the table's delta.columnMapping.mode (NULL = none) */
} alter;

static dk_status put_param(alter *a, const char *key, const char *json_text, size_t len,
                           dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(&a->params, a->params.len ? ',' : '{', err));
  DK_RETURN_NOT_OK(dk__json_write_str(&a->params, key, strlen(key), err));
  DK_RETURN_NOT_OK(dk__buf_putc(&a->params, ':', err));
  return dk__json_write_str(&a->params, json_text, len, err);
}

static dk_status set_conf(alter *a, const char *k, const char *v, dk_error *err) {
  for (size_t i = 0; i < a->n_conf; i++)
    if (!strcmp(a->conf[2 * i], k)) {
      a->conf[2 * i + 1] = v;
      return DK_OK;
    }
  const char **c = dk__arena_alloc(&a->ar, 2 * (a->n_conf + 1) * sizeof *c, err);
  if (!c) return DK_NOMEM;
  if (a->n_conf) memcpy(c, a->conf, 2 * a->n_conf * sizeof *c);
  c[2 * a->n_conf] = k;
  c[2 * a->n_conf + 1] = v;
  a->conf = c;
  a->n_conf++;
  return DK_OK;
}

static dk_status alter_set(alter *a, const dk_alter_options *o, dk_error *err) {
  dk_buf js;
  dk__buf_init(&js, NULL);
  dk_status st = dk__buf_putc(&js, '{', err);
  for (size_t i = 0; !st && i < o->n_properties; i++) {
    const char *k = o->properties[2 * i], *v = o->properties[2 * i + 1];
    prop_kind kind;
    if (!k || !v) {
      st = dk__error_set(err, DK_INVALID, "table property %zu has a NULL key or value", i);
      break;
    }
    st = canonical_key(&k, &kind, k, err);
    const char *why = st ? NULL : bad_value(kind, v);
    if (why) {
      st = dk__error_set(err, DK_INVALID, "requirement failed: %s %s (got '%s')", k, why, v);
      break;
    }
    if (!st && !strcmp(k, "delta.columnMapping.mode")) {
      const char *cur = a->cm_mode ? a->cm_mode : "none";
      if (strcasecmp(cur, v) && !(!strcasecmp(cur, "none") && !strcasecmp(v, "name")))
        st = dk__error_set(err, DK_UNSUPPORTED,
                           "[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] Changing column "
                           "mapping mode from '%s' to '%s' is not supported.",
                           cur, v);
    }
    int64_t n = 0;
    if (!st && !strcmp(k, "delta.minReaderVersion") && parse_int(v, &n)) a->reader_v = (int)n;
    if (!st && !strcmp(k, "delta.minWriterVersion") && parse_int(v, &n)) a->writer_v = (int)n;
    if (!st && (a->reader_v > 3 || a->writer_v > 7))
      st = dk__error_set(err, DK_UNSUPPORTED, "%s: protocol version %s = %s is not supported",
                         a->root, k, v);
    if (!st && i) st = dk__buf_putc(&js, ',', err);
    if (!st && !strncasecmp(k, "delta.feature.", 14)) {
      /* delta-spark records feature keys lower-cased (the feature itself keeps its name) */
      st = dk__buf_putc(&js, '"', err);
      for (const char *c = k; !st && *c; c++)
        st = dk__buf_putc(&js, (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c), err);
      if (!st) st = dk__buf_putc(&js, '"', err);
    } else if (!st) {
      st = dk__json_write_str(&js, k, strlen(k), err);
    }
    if (!st) st = dk__buf_putc(&js, ':', err);
    if (!st) st = dk__json_write_str(&js, v, strlen(v), err);
    if (!st) st = set_conf(a, k, v, err);
  }
  if (!st) st = dk__buf_putc(&js, '}', err);
  if (!st) st = put_param(a, "properties", js.data, js.len, err);
  dk__buf_dispose(&js);
  return st;
}

static dk_status alter_unset(alter *a, const dk_alter_options *o, dk_error *err) {
  const char **keys = dk__arena_alloc(&a->ar, (o->n_properties + 1) * sizeof *keys, err);
  if (!keys) return DK_NOMEM;
  for (size_t i = 0; i < o->n_properties; i++) {
    prop_kind kind;
    DK_RETURN_IF(!o->properties[i], DK_INVALID, err, "UNSET TBLPROPERTIES: a NULL key");
    keys[i] = o->properties[i];
    if (canonical_key(&keys[i], &kind, o->properties[i], err) != DK_OK)
      keys[i] = o->properties[i]; /* an unknown key is not set: nothing to remove */
    size_t w = 0;
    for (size_t k = 0; k < a->n_conf; k++) {
      if (!strcmp(a->conf[2 * k], keys[i])) continue;
      a->conf[2 * w] = a->conf[2 * k];
      a->conf[2 * w + 1] = a->conf[2 * k + 1];
      w++;
    }
    a->n_conf = w;
  }
  /* dk_txn__put_json_list writes the list as the JSON string parameters take */
  dk_status st = dk__buf_putc(&a->params, a->params.len ? ',' : '{', err);
  if (!st) st = dk__buf_puts(&a->params, "\"properties\":", err);
  if (!st) st = dk_txn__put_json_list(&a->params, o->properties, o->n_properties, err);
  if (!st) st = put_param(a, "ifExists", "true", 4, err);
  return st;
}

/* Inserts value v at position pos of array arr (a new items array in the arena). */
static dk_status insert_item(alter *a, dk_json_value *arr, uint32_t pos, const dk_json_value *v,
                             dk_error *err) {
  dk_json_value *items = dk__arena_alloc(&a->ar, (arr->len + 1) * sizeof *items, err);
  if (!items) return DK_NOMEM;
  if (pos) memcpy(items, arr->u.items, pos * sizeof *items);
  items[pos] = *v;
  if (arr->len > pos) memcpy(items + pos + 1, arr->u.items + pos, (arr->len - pos) * sizeof *items);
  arr->u.items = items;
  arr->len++;
  return DK_OK;
}

/* The typeName of a Delta type JSON value (delta-spark's AddColumns parameter "type"). */
static const char *type_name(const dk_json_value *t) {
  if (t->type == DK_JSON_STRING) return t->u.str;
  dk_json_value *n = member((dk_json_value *)t, "type");
  return n && n->type == DK_JSON_STRING ? n->u.str : "";
}

static dk_status alter_add(alter *a, const dk_alter_options *o, dk_error *err) {
  dk_buf js, f;
  dk__buf_init(&js, NULL);
  dk__buf_init(&f, NULL);
  dk_status st = dk__buf_putc(&js, '[', err);
  for (size_t i = 0; !st && i < o->n_columns; i++) {
    const dk_alter_column *c = &o->columns[i];
    if (!c->n_path || !c->path || !c->type_json) {
      st = dk__error_set(err, DK_INVALID, "ADD COLUMNS: column %zu has no path or type", i);
      break;
    }
    if (!c->nullable) {
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "[DELTA_OPERATION_NOT_ALLOWED] Operation not allowed: `NOT NULL in "
                         "ALTER TABLE ADD COLUMNS` is not supported for Delta tables");
      break;
    }
    const char *name = c->path[c->n_path - 1];
    dk_json_value *fields = parent_fields(a->schema, c->path, c->n_path - 1);
    if (!fields) {
      st = dk__error_set(err, DK_INVALID, "ADD COLUMNS %s: the parent is not a struct column",
                         name);
      break;
    }
    if (find_field(fields, name) >= 0) {
      st = dk__error_set(err, DK_INVALID,
                         "[FIELD_ALREADY_EXISTS] Cannot add column, because `%s` already exists",
                         name);
      break;
    }
    /* the field as delta-spark writes it: name, type, nullable, metadata {comment} */
    f.len = 0;
    st = dk__buf_puts(&f, "{\"name\":", err);
    if (!st) st = dk__json_write_str(&f, name, strlen(name), err);
    if (!st) st = dk__buf_puts(&f, ",\"type\":", err);
    if (!st) st = dk__buf_puts(&f, c->type_json, err);
    if (!st) st = dk__buf_puts(&f, ",\"nullable\":true,\"metadata\":{", err);
    if (!st && c->comment) {
      st = dk__buf_puts(&f, "\"comment\":", err);
      if (!st) st = dk__json_write_str(&f, c->comment, strlen(c->comment), err);
    }
    if (!st) st = dk__buf_puts(&f, "}}", err);
    dk_json_value *fv = NULL;
    if (!st) st = dk__json_parse(&fv, &a->ar, f.data, f.len, err);
    if (st) break;
    uint32_t pos = fields->len;
    if (c->after && !*c->after) pos = 0;
    else if (c->after) {
      long k = find_field(fields, c->after);
      if (k < 0) {
        st = dk__error_set(err, DK_INVALID, "ADD COLUMNS %s AFTER %s: no column %s", name,
                           c->after, c->after);
        break;
      }
      pos = (uint32_t)k + 1;
    }
    st = insert_item(a, fields, pos, fv, err);
    /* operationParameters: {"column":{name (the path), type (typeName), nullable, metadata}
     * [,"position":"FIRST" | "AFTER x"]} */
    if (!st && i) st = dk__buf_putc(&js, ',', err);
    if (!st) st = dk__buf_puts(&js, "{\"column\":{\"name\":", err);
    dk_buf pb;
    dk__buf_init(&pb, NULL);
    if (!st) st = put_path(&pb, c->path, c->n_path, NULL, err);
    if (!st) st = dk__json_write_str(&js, pb.data, pb.len, err);
    dk__buf_dispose(&pb);
    const char *tn = type_name(member(fv, "type"));
    if (!st) st = dk__buf_puts(&js, ",\"type\":", err);
    if (!st) st = dk__json_write_str(&js, tn, strlen(tn), err);
    if (!st) st = dk__buf_puts(&js, ",\"nullable\":true,\"metadata\":", err);
    if (!st) st = dk__json_write_value(&js, member(fv, "metadata"), err);
    if (!st) st = dk__buf_putc(&js, '}', err);
    if (!st && c->after) {
      st = dk__buf_puts(&js, ",\"position\":", err);
      if (!st && !*c->after) st = dk__buf_puts(&js, "\"FIRST\"", err);
      else if (!st) {
        dk_buf ps;
        dk__buf_init(&ps, NULL);
        st = dk__buf_printf(&ps, err, "AFTER %s", c->after);
        if (!st) st = dk__json_write_str(&js, ps.data, ps.len, err);
        dk__buf_dispose(&ps);
      }
    }
    if (!st) st = dk__buf_putc(&js, '}', err);
  }
  if (!st) st = dk__buf_putc(&js, ']', err);
  if (!st) st = put_param(a, "columns", js.data, js.len, err);
  dk__buf_dispose(&js);
  dk__buf_dispose(&f);
  return st;
}

/* RENAME and DROP need column mapping (delta-spark's messages). */
static dk_status need_column_mapping(const alter *a, const char *what, const char *cls,
                                     dk_error *err) {
  if (a->cm_mode && strcasecmp(a->cm_mode, "none")) return DK_OK;
  return dk__error_set(err, DK_UNSUPPORTED,
                       "[%s] %s is not supported for your Delta table. Please enable Column "
                       "Mapping on your Delta table with mapping mode 'name'.",
                       cls, what);
}

static dk_status alter_rename(alter *a, const dk_alter_options *o, dk_error *err) {
  DK_RETURN_NOT_OK(need_column_mapping(a, "Column rename", "DELTA_UNSUPPORTED_RENAME_COLUMN",
                                       err));
  DK_RETURN_IF(o->n_columns != 1 || !o->columns[0].n_path || !o->columns[0].new_name ||
                   !*o->columns[0].new_name,
               DK_INVALID, err, "RENAME COLUMN: one column and a new name");
  const dk_alter_column *c = &o->columns[0];
  dk_json_value *fields = parent_fields(a->schema, c->path, c->n_path - 1);
  long k = fields ? find_field(fields, c->path[c->n_path - 1]) : -1;
  DK_RETURN_IF(k < 0, DK_INVALID, err, "RENAME COLUMN: no column %s", c->path[c->n_path - 1]);
  long other = find_field(fields, c->new_name);
  DK_RETURN_IF(other >= 0 && other != k, DK_INVALID, err,
               "[FIELD_ALREADY_EXISTS] Cannot rename column, because `%s` already exists",
               c->new_name);
  dk_json_value *name = member(&fields->u.items[k], "name");
  const char *old = name->u.str;
  const char *nn = dk__arena_strndup(&a->ar, c->new_name, strlen(c->new_name), err);
  if (!nn) return DK_NOMEM;
  if (c->n_path == 1)
    for (size_t i = 0; i < a->n_part; i++)
      if (!strcmp(a->part[i], old)) a->part[i] = nn;
  name->u.str = nn;
  name->len = (uint32_t)strlen(nn);
  dk_buf p;
  dk__buf_init(&p, NULL);
  dk_status st = put_path(&p, c->path, c->n_path, NULL, err);
  if (!st) st = put_param(a, "oldColumnPath", p.data, p.len, err);
  p.len = 0;
  if (!st) st = put_path(&p, c->path, c->n_path, nn, err);
  if (!st) st = put_param(a, "newColumnPath", p.data, p.len, err);
  dk__buf_dispose(&p);
  return st;
}

static dk_status alter_drop(alter *a, const dk_alter_options *o, dk_error *err) {
  DK_RETURN_NOT_OK(need_column_mapping(a, "DROP COLUMN", "DELTA_UNSUPPORTED_DROP_COLUMN", err));
  /* partition columns first: delta-spark names them all */
  dk_buf parts;
  dk__buf_init(&parts, NULL);
  dk_status st = DK_OK;
  for (size_t i = 0; !st && i < o->n_columns; i++) {
    const dk_alter_column *c = &o->columns[i];
    if (c->n_path != 1) continue;
    for (size_t k = 0; !st && k < a->n_part; k++)
      if (!strcasecmp(a->part[k], c->path[0])) {
        if (parts.len) st = dk__buf_puts(&parts, ", ", err);
        if (!st) st = dk__buf_puts(&parts, a->part[k], err);
      }
  }
  if (!st && parts.len)
    st = dk__error_set(err, DK_INVALID,
                       "[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] Dropping partition columns "
                       "(%s) is not allowed.",
                       parts.data);
  dk__buf_dispose(&parts);
  DK_RETURN_NOT_OK(st);
  dk_buf js;
  dk__buf_init(&js, NULL);
  st = dk__buf_putc(&js, '[', err);
  int n = 0;
  for (size_t i = 0; !st && i < o->n_columns; i++) {
    const dk_alter_column *c = &o->columns[i];
    if (!c->n_path) {
      st = dk__error_set(err, DK_INVALID, "DROP COLUMNS: column %zu has no path", i);
      break;
    }
    dk_json_value *fields = parent_fields(a->schema, c->path, c->n_path - 1);
    long k = fields ? find_field(fields, c->path[c->n_path - 1]) : -1;
    if (k < 0) {
      if (o->if_exists) continue;
      dk_buf p;
      dk__buf_init(&p, NULL);
      st = put_path(&p, c->path, c->n_path, NULL, err);
      if (!st)
        st = dk__error_set(err, DK_INVALID, "[DELTA_COLUMN_NOT_FOUND] Unable to find the column "
                           "`%s`", p.data);
      dk__buf_dispose(&p);
      break;
    }
    if (fields->len == 1) {
      st = dk__error_set(err, DK_INVALID,
                         "[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] Cannot drop column from a "
                         "schema with a single column.");
      break;
    }
    memmove(fields->u.items + k, fields->u.items + k + 1,
            (fields->len - (uint32_t)k - 1) * sizeof *fields->u.items);
    fields->len--;
    dk_buf p;
    dk__buf_init(&p, NULL);
    st = put_path(&p, c->path, c->n_path, NULL, err);
    if (!st && n++) st = dk__buf_putc(&js, ',', err);
    if (!st) st = dk__json_write_str(&js, p.data, p.len, err);
    dk__buf_dispose(&p);
  }
  if (!st) st = dk__buf_putc(&js, ']', err);
  if (!st) st = put_param(a, "columns", js.data, js.len, err);
  dk__buf_dispose(&js);
  return st;
}

static const char *op_name(dk_alter_kind k) {
  switch (k) {
    case DK_ALTER_SET_PROPERTIES: return "SET TBLPROPERTIES";
    case DK_ALTER_UNSET_PROPERTIES: return "UNSET TBLPROPERTIES";
    case DK_ALTER_ADD_COLUMNS: return "ADD COLUMNS";
    case DK_ALTER_RENAME_COLUMN: return "RENAME COLUMN";
    case DK_ALTER_DROP_COLUMNS: return "DROP COLUMNS";
    default: return NULL;
  }
}

/* Builds the alteration of snapshot s into a (its tree, configuration, partitions, params). */
static dk_status alter_build(alter *a, dk_snapshot *s, const dk_alter_options *o,
                             dk_error *err) {
  const dk_metadata *md = dk_snapshot_metadata(s);
  txn_meta cur;
  DK_RETURN_NOT_OK(dk_txn__meta_from_snapshot(&cur, &a->ar, md, err));
  DK_RETURN_NOT_OK(dk__json_parse(&a->schema, &a->ar, cur.schema_string,
                                  strlen(cur.schema_string), err));
  DK_RETURN_IF(!struct_fields(a->schema), DK_CORRUPT, err, "%s: the schema is not a struct",
               a->root);
  a->n_conf = cur.n_conf;
  a->conf = dk__arena_alloc(&a->ar, (2 * cur.n_conf + 1) * sizeof *a->conf, err);
  a->n_part = cur.n_part;
  a->part = dk__arena_alloc(&a->ar, (cur.n_part + 1) * sizeof *a->part, err);
  if (!a->conf || !a->part) return DK_NOMEM;
  if (cur.n_conf) memcpy(a->conf, cur.conf, 2 * cur.n_conf * sizeof *a->conf);
  if (cur.n_part) memcpy(a->part, cur.part, cur.n_part * sizeof *a->part);
  a->cm_mode = dk_txn__meta_conf(&cur, "delta.columnMapping.mode");
  switch (o->kind) {
    case DK_ALTER_SET_PROPERTIES: return alter_set(a, o, err);
    case DK_ALTER_UNSET_PROPERTIES: return alter_unset(a, o, err);
    case DK_ALTER_ADD_COLUMNS: return alter_add(a, o, err);
    case DK_ALTER_RENAME_COLUMN: return alter_rename(a, o, err);
    case DK_ALTER_DROP_COLUMNS: return alter_drop(a, o, err);
    default: return dk__error_set(err, DK_INVALID, "dk_table_alter: unknown kind %d", o->kind);
  }
}

dk_status dk_table_alter(dk_commit_result *out, dk_snapshot *snap, const dk_alter_options *o,
                         dk_error *err) {
  DK_RETURN_IF(!snap || !o, DK_INVALID, err, "dk_table_alter: NULL");
  DK_RETURN_IF(o->version > DK_ALTER_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_alter_options version %u is newer than dk's", o->version);
  DK_RETURN_IF(!op_name(o->kind), DK_INVALID, err, "dk_table_alter: unknown kind %d", o->kind);
  alter a;
  memset(&a, 0, sizeof a);
  dk__arena_init(&a.ar, NULL, 0);
  dk__buf_init(&a.params, NULL);
  a.root = dk_snapshot_table_root(snap);
  dk_status st = alter_build(&a, snap, o, err);
  if (!st) st = dk__buf_putc(&a.params, a.params.len ? '}' : '{', err);
  if (!st && a.params.len == 1) st = dk__buf_putc(&a.params, '}', err);
  dk_buf schema;
  dk__buf_init(&schema, NULL);
  if (!st) st = dk__json_write_value(&schema, a.schema, err);
  if (!st) st = dk__buf_putc(&schema, 0, err);
  dk_txn_options to = o->txn;
  if (!to.version) to.version = DK_TXN_OPTIONS_VERSION;
  to.operation = op_name(o->kind);
  to.operation_parameters = a.params.data;
  dk_txn *x = NULL;
  if (!st) st = dk_txn_begin(&x, snap, &to, err);
  /* the protocol the new metadata needs, upgraded from the table's in this commit */
  if (!st) {
    const dk_type *type = NULL;
    txn_meta nm = {.n_conf = a.n_conf, .conf = a.conf};
    dk_protocol next;
    int up = 0;
    st = dk_schema__parse(&type, &x->ar, schema.data, schema.len - 1, err);
    if (!st)
      st = dk_txn__protocol_upgrade(&next, &up, &x->ar, dk_snapshot_protocol(snap), &nm, type,
                                    a.reader_v, a.writer_v, err);
    /* existing files would have no row ids: delta-spark backfills them in commits of their
     * own (ROW TRACKING BACKFILL), which dk does not do */
    if (!st && up && dk_txn__protocol_supports(&next, "rowTracking") &&
        !dk_txn__protocol_supports(dk_snapshot_protocol(snap), "rowTracking") &&
        dk_snapshot_num_files(snap) > 0)
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "%s: enabling row tracking on a table with files needs a row id "
                         "backfill (delta-spark's ROW TRACKING BACKFILL), which dk does not do",
                         a.root);
    if (!st && up) st = dk_txn_set_protocol(x, &next, err);
  }
  if (!st) {
    const dk_metadata *md = dk_snapshot_metadata(snap);
    dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .name = md->name,
                          .description = md->description, .schema_string = schema.data,
                          .n_partition_columns = a.n_part, .partition_columns = a.part,
                          .n_configuration = a.n_conf, .configuration = a.conf,
                          .created_time = -1};
    st = dk_txn_set_metadata(x, &m, err);
  }
  if (!st) {
    st = dk_txn_commit(x, out, err);
    x = NULL;
  }
  dk_txn_abort(x);
  dk__buf_dispose(&schema);
  dk__buf_dispose(&a.params);
  dk__arena_dispose(&a.ar);
  return st;
}
