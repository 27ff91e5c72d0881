/*
** colmap.c — column mapping ids and physical names for new metadata (PROTOCOL.md "Column
** Mapping"; delta-spark DeltaColumnMapping.assignColumnIdAndPhysicalName and
** verifyAndUpdateMetadataChange).
**
** When the new metadata's delta.columnMapping.mode is `name` or `id`, every StructField of the
** schema (nested ones too: struct fields, and those inside array elements and map keys/values)
** that has no `delta.columnMapping.id` gets the next id above delta.columnMapping.maxColumnId
** (the table's, or the highest id in the schema) and a `delta.columnMapping.physicalName`:
** "col-<uuid>" — except when an existing table moves from mode none to name, where the
** existing columns keep their names as physical names (the data files already use them), as
** delta-spark does. delta.columnMapping.maxColumnId is set to the highest id.
*/
#include <stdio.h>
#include <stdlib.h>

#include "txn/txn_int.h"

typedef struct cm {
  int64_t max_id;
  int keep_names;   /* none -> name on an existing table: physicalName = name */
  dk_error *err;
} cm;

static dk_status put_type(dk_buf *b, const dk_json_value *t, cm *c);

/* The highest delta.columnMapping.id in a schema (JSON tree). */
static void scan_ids(const dk_json_value *v, int64_t *max) {
  if (!v) return;
  if (v->type == DK_JSON_OBJECT) {
    for (uint32_t i = 0; i < v->len; i++) {
      const dk_json_member *m = &v->u.members[i];
      int64_t id;
      if (!strcmp(m->key, "delta.columnMapping.id") && dk__json_as_i64(&m->value, &id) &&
          id > *max)
        *max = id;
      scan_ids(&m->value, max);
    }
  } else if (v->type == DK_JSON_ARRAY) {
    for (uint32_t i = 0; i < v->len; i++) scan_ids(&v->u.items[i], max);
  }
}

static dk_status put_field(dk_buf *b, const dk_json_value *f, cm *c) {
  if (f->type != DK_JSON_OBJECT) return dk__json_write_value(b, f, c->err);
  const dk_json_value *md = dk__json_get(f, "metadata");
  const dk_json_value *name = dk__json_get(f, "name");
  int assign = !md || !dk__json_get(md, "delta.columnMapping.id");
  /* a field's id is taken before its nested fields' (pre-order, as delta-spark numbers) */
  int64_t id = assign ? ++c->max_id : -1;
  DK_RETURN_NOT_OK(dk__buf_putc(b, '{', c->err));
  int had_md = 0;
  for (uint32_t i = 0; i < f->len; i++) {
    const dk_json_member *m = &f->u.members[i];
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', c->err));
    DK_RETURN_NOT_OK(dk__json_write_str(b, m->key, m->klen, c->err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, ':', c->err));
    if (!strcmp(m->key, "type")) {
      DK_RETURN_NOT_OK(put_type(b, &m->value, c));
    } else if (!strcmp(m->key, "metadata") && m->value.type == DK_JSON_OBJECT && assign) {
      had_md = 1;
      DK_RETURN_NOT_OK(dk__buf_putc(b, '{', c->err));
      for (uint32_t k = 0; k < m->value.len; k++) {
        const dk_json_member *e = &m->value.u.members[k];
        if (!strcmp(e->key, "delta.columnMapping.physicalName")) continue; /* ours below */
        DK_RETURN_NOT_OK(dk__json_write_str(b, e->key, e->klen, c->err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ':', c->err));
        DK_RETURN_NOT_OK(dk__json_write_value(b, &e->value, c->err));
        DK_RETURN_NOT_OK(dk__buf_putc(b, ',', c->err));
      }
      char uuid[37];
      dk_txn__uuid(uuid);
      DK_RETURN_NOT_OK(dk__buf_printf(b, c->err, "\"delta.columnMapping.id\":%lld,"
                                      "\"delta.columnMapping.physicalName\":",
                                      (long long)id));
      if (c->keep_names && name && name->type == DK_JSON_STRING)
        DK_RETURN_NOT_OK(dk__json_write_str(b, name->u.str, name->len, c->err));
      else
        DK_RETURN_NOT_OK(dk__buf_printf(b, c->err, "\"col-%s\"", uuid));
      DK_RETURN_NOT_OK(dk__buf_putc(b, '}', c->err));
    } else {
      DK_RETURN_NOT_OK(dk__json_write_value(b, &m->value, c->err));
    }
  }
  if (assign && !had_md)
    return dk__error_set(c->err, DK_INVALID, "schema: a field has no \"metadata\" object");
  return dk__buf_putc(b, '}', c->err);
}

/* A data type: structs' fields are annotated, arrays and maps recurse. */
static dk_status put_type(dk_buf *b, const dk_json_value *t, cm *c) {
  if (t->type != DK_JSON_OBJECT) return dk__json_write_value(b, t, c->err);
  DK_RETURN_NOT_OK(dk__buf_putc(b, '{', c->err));
  for (uint32_t i = 0; i < t->len; i++) {
    const dk_json_member *m = &t->u.members[i];
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', c->err));
    DK_RETURN_NOT_OK(dk__json_write_str(b, m->key, m->klen, c->err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, ':', c->err));
    if (!strcmp(m->key, "fields") && m->value.type == DK_JSON_ARRAY) {
      DK_RETURN_NOT_OK(dk__buf_putc(b, '[', c->err));
      for (uint32_t k = 0; k < m->value.len; k++) {
        if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', c->err));
        DK_RETURN_NOT_OK(put_field(b, &m->value.u.items[k], c));
      }
      DK_RETURN_NOT_OK(dk__buf_putc(b, ']', c->err));
    } else if (!strcmp(m->key, "elementType") || !strcmp(m->key, "keyType") ||
               !strcmp(m->key, "valueType")) {
      DK_RETURN_NOT_OK(put_type(b, &m->value, c));
    } else {
      DK_RETURN_NOT_OK(dk__json_write_value(b, &m->value, c->err));
    }
  }
  return dk__buf_putc(b, '}', c->err);
}

dk_status dk_txn__assign_column_mapping(const char **schema_string, int64_t *max_column_id,
                                        dk_txn *x, const char *mode, dk_error *err) {
  *max_column_id = -1;
  if (!mode || (strcmp(mode, "name") && strcmp(mode, "id"))) return DK_OK;
  dk_arena ar;
  dk__arena_init(&ar, x->alloc, 0);
  dk_json_value *root = NULL;
  dk_status st = dk__json_parse(&root, &ar, *schema_string, strlen(*schema_string), err);
  cm c = {.max_id = 0, .err = err};
  if (!st) {
    const char *prev = x->snap ? dk_snapshot_property(x->snap, "delta.columnMapping.mode") : NULL;
    const char *maxp = x->snap ? dk_snapshot_property(x->snap, "delta.columnMapping.maxColumnId")
                               : NULL;
    c.keep_names = x->snap && (!prev || !strcmp(prev, "none"));
    if (maxp) c.max_id = strtoll(maxp, NULL, 10);
    scan_ids(root, &c.max_id);
  }
  dk_buf b;
  dk__buf_init(&b, x->alloc);
  if (!st) st = put_type(&b, root, &c);
  if (!st) {
    *schema_string = dk__arena_strndup(&x->ar, b.data, b.len, err);
    if (!*schema_string) st = DK_NOMEM;
    *max_column_id = c.max_id;
  }
  dk__buf_dispose(&b);
  dk__arena_dispose(&ar);
  return st;
}
