/*
** compat.c — whether data written under one table schema may be read with another, as the
** change data feed and streaming reads decide it (delta-spark schema/SchemaUtils.scala
** isReadCompatible, DeltaColumnMapping.hasNoColumnMappingSchemaChanges; PROTOCOL.md "Column
** Mapping"): no column dropped, no type changed, no nullability made stricter where the data
** may hold nulls, and under column mapping no physical column dropped or renamed.
*/
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "changes/changes_int.h"
#include "protocol/schema.h"
#include "protocol/table_config.h"

dk_status dk_changes__meta_of(dk_changes__meta *out, const dk_metadata *md, dk_arena *ar,
                              dk_error *err) {
  memset(out, 0, sizeof *out);
  out->md = md;
  dk__table_config cfg;
  DK_RETURN_NOT_OK(dk_protocol__config_read(&cfg, md, false, err));
  out->mode = cfg.column_mapping_mode;
  out->cdf = cfg.enable_change_data_feed;
  if (!out->cdf) {
    /* the feature's legacy property (delta-spark DeltaConfigs.CHANGE_DATA_FEED's alias) */
    const char *v = dk_protocol__property(md, "delta.enableChangeDataCapture");
    out->cdf = v && !strcasecmp(v, "true");
  }
  const char *s = md->schema_string ? md->schema_string : "{\"type\":\"struct\",\"fields\":[]}";
  return dk_schema__parse(&out->schema, ar, s, strlen(s), err);
}

static bool nullability_ok(int existing_nullable, int read_nullable, bool forbid_tighten) {
  return forbid_tighten ? (read_nullable || !existing_nullable)
                        : (existing_nullable || !read_nullable);
}

static bool type_compatible(const dk_type *e, const dk_type *n, bool forbid_tighten) {
  if (e->id == DK_TYPE_STRUCT && n->id == DK_TYPE_STRUCT)
    return dk_changes__read_compatible(e, n, forbid_tighten);
  if (e->id == DK_TYPE_ARRAY && n->id == DK_TYPE_ARRAY)
    return nullability_ok(e->contains_null, n->contains_null, forbid_tighten) &&
           type_compatible(e->element, n->element, forbid_tighten);
  if (e->id == DK_TYPE_MAP && n->id == DK_TYPE_MAP)
    return nullability_ok(e->value_contains_null, n->value_contains_null, forbid_tighten) &&
           type_compatible(e->key, n->key, forbid_tighten) &&
           type_compatible(e->value, n->value, forbid_tighten);
  if (e->id != n->id) return false;
  if (e->id == DK_TYPE_DECIMAL) return e->precision == n->precision && e->scale == n->scale;
  return e->id != DK_TYPE_STRUCT && e->id != DK_TYPE_ARRAY && e->id != DK_TYPE_MAP;
}

static const dk_field *find_ci(const dk_type *t, const char *name) {
  for (size_t i = 0; i < t->n_fields; i++)
    if (!strcasecmp(t->fields[i].name, name)) return &t->fields[i];
  return NULL;
}

bool dk_changes__read_compatible(const dk_type *existing, const dk_type *read,
                                 bool forbid_tighten) {
  /* every existing column is still there (case-insensitively) */
  for (size_t i = 0; i < existing->n_fields; i++)
    if (!find_ci(read, existing->fields[i].name)) return false;
  for (size_t i = 0; i < read->n_fields; i++) {
    const dk_field *nf = &read->fields[i];
    const dk_field *ef = find_ci(existing, nf->name);
    if (!ef) continue; /* a new column: fine, older data has none */
    if (strcmp(ef->name, nf->name) != 0) return false;
    if (!nullability_ok(ef->nullable, nf->nullable, forbid_tighten)) return false;
    if (!type_compatible(ef->type, nf->type, forbid_tighten)) return false;
  }
  return true;
}

/* ---- column mapping: physical paths ----------------------------------------------------- */

typedef struct phys_entry {
  char path[512];      /* physical names from the top, separated by '\x1f' (truncated paths
                          compare as distinct only by their prefix: schemas that deep are
                          beyond what Delta writers produce) */
  const char *logical; /* the field's logical name */
} phys_entry;

typedef struct phys_map {
  phys_entry *e;
  size_t n, cap;
  const dk_allocator *alloc;
  bool nomem;
} phys_map;

static void phys_add(phys_map *m, const char *prefix, const char *name, const char *logical) {
  if (m->nomem) return;
  if (m->n == m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 32;
    phys_entry *ne = dk__realloc(m->alloc, m->e, nc * sizeof *ne);
    if (!ne) {
      m->nomem = true;
      return;
    }
    m->e = ne;
    m->cap = nc;
  }
  phys_entry *p = &m->e[m->n++];
  if (*prefix)
    snprintf(p->path, sizeof p->path, "%s\x1f%s", prefix, name);
  else
    snprintf(p->path, sizeof p->path, "%s", name);
  p->logical = logical;
}

/* delta-spark's getPhysicalNameFieldMap: every field, nested ones included (array elements
** and map keys/values under their implicit names); `as_logical`: physical names are the
** logical ones (a table before column mapping was enabled on it). */
static void phys_collect(phys_map *m, const dk_type *t, const char *prefix, bool as_logical) {
  if (m->nomem) return;
  char here[512];
  switch (t->id) {
    case DK_TYPE_STRUCT:
      for (size_t i = 0; i < t->n_fields; i++) {
        const dk_field *f = &t->fields[i];
        const char *pn = as_logical || !f->physical_name ? f->name : f->physical_name;
        phys_add(m, prefix, pn, f->name);
        if (m->nomem) return;
        snprintf(here, sizeof here, "%s", m->e[m->n - 1].path);
        phys_collect(m, f->type, here, as_logical);
      }
      break;
    case DK_TYPE_ARRAY:
      snprintf(here, sizeof here, "%s%s%s", prefix, *prefix ? "\x1f" : "", "element");
      phys_collect(m, t->element, here, as_logical);
      break;
    case DK_TYPE_MAP:
      snprintf(here, sizeof here, "%s%s%s", prefix, *prefix ? "\x1f" : "", "key");
      phys_collect(m, t->key, here, as_logical);
      snprintf(here, sizeof here, "%s%s%s", prefix, *prefix ? "\x1f" : "", "value");
      phys_collect(m, t->value, here, as_logical);
      break;
    default:
      break;
  }
}

static const phys_entry *phys_find(const phys_map *m, const char *path) {
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->e[i].path, path)) return &m->e[i];
  return NULL;
}

bool dk_changes__same_partitioning(const dk_metadata *a, const dk_metadata *b) {
  if (a->n_partition_columns != b->n_partition_columns) return false;
  for (size_t i = 0; i < a->n_partition_columns; i++)
    if (strcmp(a->partition_columns[i], b->partition_columns[i]) != 0) return false;
  return true;
}

dk_status dk_changes__no_cm_schema_changes(bool *out, const dk_changes__meta *newer,
                                           const dk_changes__meta *older,
                                           const dk_allocator *alloc, dk_error *err) {
  *out = true;
  if (newer->mode == DK_COLUMN_MAPPING_NONE) {
    *out = older->mode == DK_COLUMN_MAPPING_NONE; /* reading across a downgrade: refused */
    return DK_OK;
  }
  if (older->mode != DK_COLUMN_MAPPING_NONE && older->mode != newer->mode) {
    *out = false; /* delta-spark requires one mode ("changing mode is not supported") */
    return DK_OK;
  }
  if (!dk_changes__same_partitioning(newer->md, older->md)) {
    *out = false;
    return DK_OK;
  }
  phys_map nm = {NULL, 0, 0, alloc, false}, om = {NULL, 0, 0, alloc, false};
  phys_collect(&nm, newer->schema, "", false);
  /* an upgrade in between: the older schema's physical names are its logical names */
  phys_collect(&om, older->schema, "", older->mode == DK_COLUMN_MAPPING_NONE);
  dk_status st = DK_OK;
  if (nm.nomem || om.nomem) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (schema compatibility)");
  } else {
    for (size_t i = 0; i < om.n && *out; i++) {
      const phys_entry *hit = phys_find(&nm, om.e[i].path);
      if (!hit) *out = false;                                      /* dropped */
      else if (strcmp(hit->logical, om.e[i].logical) != 0) *out = false; /* renamed */
    }
  }
  dk__free(alloc, nm.e);
  dk__free(alloc, om.e);
  return st;
}
