/*
** schema.c — the Delta schema: parsing schemaString into a dk_type tree, type names, field
** lookup, and export as an Arrow C schema (logical or physical).
**
** Follows PROTOCOL.md "Schema Serialization Format" (primitive types incl. timestamp_ntz,
** decimal(p,s) and variant; struct/array/map; field metadata) and "Column Mapping" (field
** ids and physical names in field metadata).
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "protocol/schema.h"

static const struct {
  const char *name;
  dk_type_id id;
} primitive_names[] = {
    {"string", DK_TYPE_STRING},       {"long", DK_TYPE_LONG},
    {"integer", DK_TYPE_INTEGER},     {"short", DK_TYPE_SHORT},
    {"byte", DK_TYPE_BYTE},           {"float", DK_TYPE_FLOAT},
    {"double", DK_TYPE_DOUBLE},       {"boolean", DK_TYPE_BOOLEAN},
    {"binary", DK_TYPE_BINARY},       {"date", DK_TYPE_DATE},
    {"timestamp", DK_TYPE_TIMESTAMP}, {"timestamp_ntz", DK_TYPE_TIMESTAMP_NTZ},
    {"variant", DK_TYPE_VARIANT},
};

static dk_status parse_decimal(dk_type *t, const char *s, size_t n, dk_error *err) {
  /* "decimal" or "decimal(p,s)" with optional spaces */
  t->id = DK_TYPE_DECIMAL;
  t->precision = 10;
  t->scale = 0;
  if (n == 7) return DK_OK;
  const char *p = s + 7, *end = s + n;
  while (p < end && *p == ' ') p++;
  if (p >= end || *p != '(') goto bad;
  p++;
  long vals[2];
  for (int k = 0; k < 2; k++) {
    while (p < end && *p == ' ') p++;
    if (p >= end || !isdigit((unsigned char)*p)) goto bad;
    long v = 0;
    while (p < end && isdigit((unsigned char)*p) && v < 1000) v = v * 10 + (*p++ - '0');
    vals[k] = v;
    while (p < end && *p == ' ') p++;
    if (p >= end || *p != (k == 0 ? ',' : ')')) goto bad;
    p++;
  }
  if (p != end) goto bad;
  if (vals[0] < 1 || vals[0] > 38 || vals[1] > vals[0]) goto bad;
  t->precision = (int32_t)vals[0];
  t->scale = (int32_t)vals[1];
  return DK_OK;
bad:
  return dk__error_set(err, DK_CORRUPT, "schema: invalid decimal type '%.*s'", (int)DK_MIN(n, 64),
                       s);
}

static dk_status parse_field(dk_field *f, dk_arena *ar, const dk_json_value *v, dk_error *err);

dk_status dk_schema__from_json(const dk_type **out, dk_arena *ar, const dk_json_value *v,
                               dk_error *err) {
  dk_type *t = dk__arena_alloc(ar, sizeof *t, err);
  if (!t) return DK_NOMEM;
  memset(t, 0, sizeof *t);
  if (v && v->type == DK_JSON_STRING) {
    const char *s = v->u.str;
    size_t n = v->len;
    for (size_t i = 0; i < DK_ARRAY_LEN(primitive_names); i++) {
      if (strlen(primitive_names[i].name) == n && memcmp(primitive_names[i].name, s, n) == 0) {
        t->id = primitive_names[i].id;
        *out = t;
        return DK_OK;
      }
    }
    if (n >= 7 && memcmp(s, "decimal", 7) == 0) {
      DK_RETURN_NOT_OK(parse_decimal(t, s, n, err));
      *out = t;
      return DK_OK;
    }
    return dk__error_set(err, DK_UNSUPPORTED, "schema: unsupported data type '%.*s'",
                         (int)DK_MIN(n, 100), s);
  }
  if (!v || v->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "schema: a type must be a string or an object");
  size_t tn;
  const char *tt = dk__json_as_str(dk__json_get(v, "type"), &tn);
  if (!tt) return dk__error_set(err, DK_CORRUPT, "schema: complex type without \"type\"");
  bool b;
  if (strcmp(tt, "struct") == 0) {
    const dk_json_value *fs = dk__json_get(v, "fields");
    if (!fs || fs->type != DK_JSON_ARRAY)
      return dk__error_set(err, DK_CORRUPT, "schema: struct without \"fields\" array");
    t->id = DK_TYPE_STRUCT;
    t->n_fields = fs->len;
    dk_field *fields = NULL;
    if (fs->len) {
      fields = dk__arena_alloc(ar, sizeof *fields * fs->len, err);
      if (!fields) return DK_NOMEM;
      for (uint32_t i = 0; i < fs->len; i++)
        DK_RETURN_NOT_OK(parse_field(&fields[i], ar, &fs->u.items[i], err));
    }
    t->fields = fields;
  } else if (strcmp(tt, "array") == 0) {
    t->id = DK_TYPE_ARRAY;
    DK_RETURN_NOT_OK(dk_schema__from_json(&t->element, ar, dk__json_get(v, "elementType"), err));
    t->contains_null = dk__json_as_bool(dk__json_get(v, "containsNull"), &b) ? b : 1;
  } else if (strcmp(tt, "map") == 0) {
    t->id = DK_TYPE_MAP;
    DK_RETURN_NOT_OK(dk_schema__from_json(&t->key, ar, dk__json_get(v, "keyType"), err));
    DK_RETURN_NOT_OK(dk_schema__from_json(&t->value, ar, dk__json_get(v, "valueType"), err));
    t->value_contains_null = dk__json_as_bool(dk__json_get(v, "valueContainsNull"), &b) ? b : 1;
  } else {
    return dk__error_set(err, DK_UNSUPPORTED, "schema: unsupported complex type '%s'", tt);
  }
  *out = t;
  return DK_OK;
}

static dk_status parse_field(dk_field *f, dk_arena *ar, const dk_json_value *v, dk_error *err) {
  memset(f, 0, sizeof *f);
  if (!v || v->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "schema: a struct field must be an object");
  size_t n;
  const char *name = dk__json_as_str(dk__json_get(v, "name"), &n);
  if (!name) return dk__error_set(err, DK_CORRUPT, "schema: struct field without a name");
  f->name = dk__arena_strndup(ar, name, n, err);
  if (!f->name) return DK_NOMEM;
  DK_RETURN_NOT_OK(dk_schema__from_json(&f->type, ar, dk__json_get(v, "type"), err));
  bool b;
  f->nullable = dk__json_as_bool(dk__json_get(v, "nullable"), &b) ? b : 1;
  const dk_json_value *md = dk__json_get(v, "metadata");
  dk_buf buf;
  dk__buf_init(&buf, ar->alloc);
  dk_status st = md && md->type == DK_JSON_OBJECT ? dk__json_write_value(&buf, md, err)
                                                  : dk__buf_puts(&buf, "{}", err);
  if (st == DK_OK) {
    f->metadata_json = dk__arena_strndup(ar, buf.data, buf.len, err);
    if (!f->metadata_json) st = DK_NOMEM;
  }
  dk__buf_dispose(&buf);
  DK_RETURN_NOT_OK(st);
  int64_t id;
  f->column_mapping_id = dk__json_as_i64(dk__json_get(md, "delta.columnMapping.id"), &id) ? id : -1;
  const char *pn = dk__json_as_str(dk__json_get(md, "delta.columnMapping.physicalName"), &n);
  if (pn) {
    f->physical_name = dk__arena_strndup(ar, pn, n, err);
    if (!f->physical_name) return DK_NOMEM;
  } else {
    f->physical_name = f->name;
  }
  return DK_OK;
}

/* ---- unique field names ------------------------------------------------------------------ */

/* Columns resolve to Parquet leaves by name without regard to ASCII case (as Spark and
** delta-rs do), so two fields of one struct whose names (or physical names) differ only in
** case would map to one leaf: such a schema is corrupt, and is rejected when it is parsed. */
typedef struct name_ref {
  const char *name;
  size_t field;
} name_ref;

static int name_ref_cmp(const void *a, const void *b) {
  const name_ref *x = a, *y = b;
  int c = strcasecmp(x->name, y->name);
  return c ? c : (x->field > y->field) - (x->field < y->field);
}

/* DK_CORRUPT naming the first duplicate among the fields of t (path: the struct's dotted name,
** empty at the top level), then the same for every struct below t. */
static dk_status check_unique(const dk_type *t, dk_buf *path, dk_error *err);

static dk_status check_struct_unique(const dk_type *t, dk_buf *path, dk_error *err) {
  size_t n = t->n_fields;
  if (n < 2) return DK_OK;
  name_ref *refs = dk__malloc(path->alloc, sizeof *refs * n);
  if (!refs) return dk__error_set(err, DK_NOMEM, "schema: out of memory");
  dk_status st = DK_OK;
  for (int physical = 0; physical < 2 && st == DK_OK; physical++) {
    for (size_t i = 0; i < n; i++)
      refs[i] = (name_ref){physical ? t->fields[i].physical_name : t->fields[i].name, i};
    qsort(refs, n, sizeof *refs, name_ref_cmp);
    for (size_t i = 1; i < n; i++) {
      if (strcasecmp(refs[i - 1].name, refs[i].name)) continue;
      const dk_field *a = &t->fields[refs[i - 1].field], *b = &t->fields[refs[i].field];
      const char *at = path->len ? " in struct " : "", *in = path->len ? path->data : "";
      if (!physical)
        st = dk__error_set(err, DK_CORRUPT,
                           "schema: duplicate field name '%s'%s%s (field names must be unique, "
                           "ignoring case: '%s' and '%s')",
                           b->name, at, in, a->name, b->name);
      else
        st = dk__error_set(err, DK_CORRUPT,
                           "schema: fields '%s' and '%s'%s%s have the same physical name "
                           "(delta.columnMapping.physicalName, ignoring case)",
                           a->name, b->name, at, in);
      break;
    }
  }
  dk__free(path->alloc, refs);
  for (size_t i = 0; i < n && st == DK_OK; i++) {
    size_t keep = path->len;
    st = path->len ? dk__buf_puts(path, ".", err) : DK_OK;
    if (st == DK_OK) st = dk__buf_puts(path, t->fields[i].name, err);
    if (st == DK_OK) st = check_unique(t->fields[i].type, path, err);
    path->len = keep;
    if (path->data) path->data[keep] = 0;
  }
  return st;
}

static dk_status check_unique(const dk_type *t, dk_buf *path, dk_error *err) {
  switch (t->id) {
    case DK_TYPE_STRUCT: return check_struct_unique(t, path, err);
    case DK_TYPE_ARRAY: return check_unique(t->element, path, err);
    case DK_TYPE_MAP:
      DK_RETURN_NOT_OK(check_unique(t->key, path, err));
      return check_unique(t->value, path, err);
    default: return DK_OK;
  }
}

dk_status dk_schema__parse(const dk_type **out, dk_arena *ar, const char *text, size_t len,
                           dk_error *err) {
  dk_json_value *v;
  DK_RETURN_NOT_OK(dk__json_parse(&v, ar, text, len, err));
  const dk_type *t;
  DK_RETURN_NOT_OK(dk_schema__from_json(&t, ar, v, err));
  if (t->id != DK_TYPE_STRUCT)
    return dk__error_set(err, DK_CORRUPT, "schema: schemaString is not a struct type");
  dk_buf path;
  dk__buf_init(&path, ar->alloc); /* the allocator of every scratch block of the checks */
  dk_status st = check_unique(t, &path, err);
  dk__buf_dispose(&path);
  DK_RETURN_NOT_OK(st);
  *out = t;
  return DK_OK;
}

/* ---- type names ------------------------------------------------------------------------- */

typedef struct sink {
  char *buf;
  size_t cap, len;
} sink;

static void sink_put(sink *s, const char *p, size_t n) {
  if (s->len < s->cap) {
    size_t room = s->cap - s->len;
    memcpy(s->buf + s->len, p, DK_MIN(room, n));
  }
  s->len += n;
}

static void sink_str(sink *s, const char *p) { sink_put(s, p, strlen(p)); }

static void type_name(sink *s, const dk_type *t) {
  for (size_t i = 0; i < DK_ARRAY_LEN(primitive_names); i++)
    if (primitive_names[i].id == t->id) {
      sink_str(s, primitive_names[i].name);
      return;
    }
  char tmp[48];
  switch (t->id) {
    case DK_TYPE_DECIMAL:
      snprintf(tmp, sizeof tmp, "decimal(%d,%d)", (int)t->precision, (int)t->scale);
      sink_str(s, tmp);
      return;
    case DK_TYPE_ARRAY:
      sink_str(s, "array<");
      type_name(s, t->element);
      sink_str(s, ">");
      return;
    case DK_TYPE_MAP:
      sink_str(s, "map<");
      type_name(s, t->key);
      sink_str(s, ",");
      type_name(s, t->value);
      sink_str(s, ">");
      return;
    case DK_TYPE_STRUCT:
      sink_str(s, "struct<");
      for (size_t i = 0; i < t->n_fields; i++) {
        if (i) sink_str(s, ",");
        sink_str(s, t->fields[i].name);
        sink_str(s, ":");
        type_name(s, t->fields[i].type);
      }
      sink_str(s, ">");
      return;
    default:
      sink_str(s, "unknown");
  }
}

size_t dk_type_to_string(char *buf, size_t cap, const dk_type *t) {
  sink s = {buf, cap ? cap - 1 : 0, 0};
  if (t) type_name(&s, t);
  if (cap) buf[DK_MIN(s.len, cap - 1)] = 0;
  return s.len;
}

const dk_field *dk_schema_find(const dk_type *schema, const char *name) {
  if (!schema || schema->id != DK_TYPE_STRUCT || !name) return NULL;
  for (size_t i = 0; i < schema->n_fields; i++)
    if (strcmp(schema->fields[i].name, name) == 0) return &schema->fields[i];
  for (size_t i = 0; i < schema->n_fields; i++)
    if (strcasecmp(schema->fields[i].name, name) == 0) return &schema->fields[i];
  return NULL;
}

/* ---- Arrow export ----------------------------------------------------------------------- */

/* Each exported node owns one malloc'd block: the node's strings and children pointers. */
typedef struct arrow_node {
  char *format;
  char *name;
  char *metadata;
  struct ArrowSchema **children;
  const dk_allocator *alloc;  /* what every part of this node was allocated with */
} arrow_node;

static void arrow_release(struct ArrowSchema *sc) {
  if (!sc || !sc->release) return;
  arrow_node *n = sc->private_data;
  const dk_allocator *a = n ? n->alloc : NULL;
  for (int64_t i = 0; i < sc->n_children; i++) {
    struct ArrowSchema *c = sc->children[i];
    if (c->release) c->release(c);
    dk__free(a, c);
  }
  if (n) {
    dk__free(a, n->format);
    dk__free(a, n->name);
    dk__free(a, n->metadata);
    dk__free(a, n->children);
    dk__free(a, n);
  }
  sc->release = NULL;
}

static dk_status arrow_init(struct ArrowSchema *sc, const dk_allocator *alloc, const char *format,
                            const char *name, int nullable, int64_t field_id, int64_t n_children,
                            dk_error *err) {
  memset(sc, 0, sizeof *sc);
  arrow_node *n = dk__calloc(alloc, 1, sizeof *n);
  if (!n) return dk__error_set(err, DK_NOMEM, "out of memory exporting schema");
  n->alloc = alloc;
  sc->private_data = n;
  sc->release = arrow_release;
  n->format = dk__strdup(alloc, format);
  n->name = dk__strdup(alloc, name ? name : "");
  if (n_children) n->children = dk__calloc(alloc, (size_t)n_children, sizeof *n->children);
  if (!n->format || !n->name || (n_children && !n->children))
    return dk__error_set(err, DK_NOMEM, "out of memory exporting schema");
  if (field_id >= 0) {
    const char *key = "PARQUET:field_id";
    char val[24];
    int32_t kl = (int32_t)strlen(key), vl = (int32_t)snprintf(val, sizeof val, "%lld",
                                                               (long long)field_id);
    int32_t one = 1;
    n->metadata = dk__malloc(alloc, (size_t)(12 + kl + vl));
    if (!n->metadata) return dk__error_set(err, DK_NOMEM, "out of memory exporting schema");
    char *p = n->metadata;
    memcpy(p, &one, 4);
    memcpy(p + 4, &kl, 4);
    memcpy(p + 8, key, (size_t)kl);
    memcpy(p + 8 + kl, &vl, 4);
    memcpy(p + 12 + kl, val, (size_t)vl);
  }
  sc->format = n->format;
  sc->name = n->name;
  sc->metadata = n->metadata;
  sc->flags = nullable ? ARROW_FLAG_NULLABLE : 0;
  sc->children = n->children;
  return DK_OK;
}

static dk_status arrow_child(struct ArrowSchema *parent, int64_t i, struct ArrowSchema **out,
                             dk_error *err) {
  const dk_allocator *alloc = ((const arrow_node *)parent->private_data)->alloc;
  struct ArrowSchema *c = dk__calloc(alloc, 1, sizeof *c);
  if (!c) return dk__error_set(err, DK_NOMEM, "out of memory exporting schema");
  parent->children[i] = c;
  parent->n_children = i + 1;
  *out = c;
  return DK_OK;
}

static dk_status arrow_type(struct ArrowSchema *sc, const dk_allocator *alloc, const dk_type *t,
                            const char *name, int nullable, int64_t field_id, int physical,
                            dk_error *err) {
  const char *fmt = NULL;
  char dec[32];
  switch (t->id) {
    case DK_TYPE_STRING: fmt = "u"; break;
    case DK_TYPE_LONG: fmt = "l"; break;
    case DK_TYPE_INTEGER: fmt = "i"; break;
    case DK_TYPE_SHORT: fmt = "s"; break;
    case DK_TYPE_BYTE: fmt = "c"; break;
    case DK_TYPE_FLOAT: fmt = "f"; break;
    case DK_TYPE_DOUBLE: fmt = "g"; break;
    case DK_TYPE_BOOLEAN: fmt = "b"; break;
    case DK_TYPE_BINARY: fmt = "z"; break;
    case DK_TYPE_DATE: fmt = "tdD"; break;
    case DK_TYPE_TIMESTAMP: fmt = "tsu:UTC"; break;
    case DK_TYPE_TIMESTAMP_NTZ: fmt = "tsu:"; break;
    case DK_TYPE_DECIMAL:
      snprintf(dec, sizeof dec, "d:%d,%d", (int)t->precision, (int)t->scale);
      fmt = dec;
      break;
    default: break;
  }
  if (fmt) return arrow_init(sc, alloc, fmt, name, nullable, field_id, 0, err);
  struct ArrowSchema *c = NULL;
  switch (t->id) {
    case DK_TYPE_VARIANT:
      DK_RETURN_NOT_OK(arrow_init(sc, alloc, "+s", name, nullable, field_id, 2, err));
      DK_RETURN_NOT_OK(arrow_child(sc, 0, &c, err));
      DK_RETURN_NOT_OK(arrow_init(c, alloc, "z", "metadata", 0, -1, 0, err));
      DK_RETURN_NOT_OK(arrow_child(sc, 1, &c, err));
      return arrow_init(c, alloc, "z", "value", 0, -1, 0, err);
    case DK_TYPE_STRUCT:
      DK_RETURN_NOT_OK(arrow_init(sc, alloc, "+s", name, nullable, field_id, (int64_t)t->n_fields, err));
      for (size_t i = 0; i < t->n_fields; i++) {
        const dk_field *f = &t->fields[i];
        DK_RETURN_NOT_OK(arrow_child(sc, (int64_t)i, &c, err));
        DK_RETURN_NOT_OK(arrow_type(c, alloc, f->type, physical ? f->physical_name : f->name,
                                    f->nullable, physical ? f->column_mapping_id : -1, physical,
                                    err));
      }
      return DK_OK;
    case DK_TYPE_ARRAY:
      DK_RETURN_NOT_OK(arrow_init(sc, alloc, "+l", name, nullable, field_id, 1, err));
      DK_RETURN_NOT_OK(arrow_child(sc, 0, &c, err));
      return arrow_type(c, alloc, t->element, "element", t->contains_null, -1, physical, err);
    case DK_TYPE_MAP: {
      DK_RETURN_NOT_OK(arrow_init(sc, alloc, "+m", name, nullable, field_id, 1, err));
      DK_RETURN_NOT_OK(arrow_child(sc, 0, &c, err));
      DK_RETURN_NOT_OK(arrow_init(c, alloc, "+s", "entries", 0, -1, 2, err));
      struct ArrowSchema *kv = NULL;
      DK_RETURN_NOT_OK(arrow_child(c, 0, &kv, err));
      DK_RETURN_NOT_OK(arrow_type(kv, alloc, t->key, "key", 0, -1, physical, err));
      DK_RETURN_NOT_OK(arrow_child(c, 1, &kv, err));
      return arrow_type(kv, alloc, t->value, "value", t->value_contains_null, -1, physical, err);
    }
    default:
      return dk__error_set(err, DK_INTERNAL, "schema: cannot export type %d", (int)t->id);
  }
}

dk_status dk_schema__to_arrow(struct ArrowSchema *out, const dk_type *t, int physical,
                              const dk_allocator *alloc, dk_error *err) {
  dk_status st = arrow_type(out, alloc, t, "", 0, -1, physical, err);
  if (st != DK_OK && out->release) out->release(out);
  return st;
}
