/*
** plan.c — dk_scan_new and the scan handle: options, the output and read columns (requested
** names and dotted nested paths, partition columns, filter-only columns, nested projections
** widened for the filter), the output and read Arrow schemas (physical names for column
** mapping, PROTOCOL.md "Column Mapping"; variant extension tags; the `_metadata` struct), and
** the filter bound three ways: against the whole logical schema (stats skipping), against
** the partition columns (pruning), and the residual against the read schema. File selection
** is select.c. Output order: data columns, partition columns, then `_metadata`.
*/
#include <stdlib.h>
#include <strings.h>

#include "expr/expr.h"
#include "protocol/schema.h"
#include "scan/scan_int.h"
#include "snapshot/access.h"

void dk_scan__plan_dispose(scan_plan *p) {
  dk__free(p->alloc, p->root);
  dk__free(p->alloc, p->cols);
  dk__schema_release(&p->out_schema);
  dk__schema_release(&p->read_schema);
  dk_expr_free(p->residual);
  dk_expr_free(p->residual_bound);
  dk__arena_dispose(&p->ar);
  memset(p, 0, sizeof *p);
}

static const char *const meta_names[] = {"file_path", "file_name", "file_size", "file_block_start",
                                         "file_block_length", "file_modification_time",
                                         "row_index", "row_id", "row_commit_version"};

/* Tags a (copied) field schema and its nested struct fields with their physical names, which
** the stats-skipping rules look up (expr's bind contract). */
static dk_status add_physical_names(struct ArrowSchema *sc, const dk_field *f, dk_error *err) {
  const char *k[1] = {"delta.columnMapping.physicalName"};
  const char *v[1] = {f->physical_name};
  DK_RETURN_NOT_OK(dk__schema_set_metadata(sc, k, v, 1, err));
  if (f->type->id == DK_TYPE_STRUCT && (size_t)sc->n_children == f->type->n_fields)
    for (size_t i = 0; i < f->type->n_fields; i++)
      DK_RETURN_NOT_OK(add_physical_names(sc->children[i], &f->type->fields[i], err));
  return DK_OK;
}

/* Marks variant columns (struct<metadata, value>) with the parquet.variant extension name. */
static dk_status tag_variants(struct ArrowSchema *sc, const dk_type *t, dk_error *err) {
  switch (t->id) {
    case DK_TYPE_VARIANT: {
      const char *k[1] = {"ARROW:extension:name"}, *v[1] = {"parquet.variant"};
      return dk__schema_set_metadata(sc, k, v, 1, err);
    }
    case DK_TYPE_STRUCT:
      for (size_t i = 0; i < t->n_fields && (int64_t)i < sc->n_children; i++)
        DK_RETURN_NOT_OK(tag_variants(sc->children[i], t->fields[i].type, err));
      return DK_OK;
    case DK_TYPE_ARRAY:
      return sc->n_children ? tag_variants(sc->children[0], t->element, err) : DK_OK;
    case DK_TYPE_MAP:
      if (sc->n_children && sc->children[0]->n_children == 2) {
        DK_RETURN_NOT_OK(tag_variants(sc->children[0]->children[0], t->key, err));
        return tag_variants(sc->children[0]->children[1], t->value, err);
      }
      return DK_OK;
    default:
      return DK_OK;
  }
}

/* Builds the output schema from the logical Arrow schema of the table. */
dk_status dk_scan__plan_build_schema(scan_plan *p, const dk_type *schema, dk_error *err) {
  (void)schema;
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  int64_t n = (int64_t)p->n_out + (p->meta ? 1 : 0);
  dk_status s = dk__schema_init_a(&p->out_schema, &st, "", 0, n, p->alloc, err);
  if (!s) s = dk__schema_init_a(&p->read_schema, &st, "", 0, (int64_t)p->n_cols, p->alloc, err);
  for (size_t i = 0; s == DK_OK && i < p->n_cols; i++) {
    /* export the (possibly pruned) field through a one-field struct */
    dk_type one;
    memset(&one, 0, sizeof one);
    one.id = DK_TYPE_STRUCT;
    one.n_fields = 1;
    one.fields = p->cols[i].field;
    struct ArrowSchema col;
    s = dk_schema__to_arrow(&col, &one, 0, p->alloc, err);
    if (s) break;
    dk__schema_release(p->read_schema.children[i]);
    s = dk__schema_copy_a(p->read_schema.children[i], col.children[0], p->alloc, err);
    if (!s && p->mode != DK_COLUMN_MAPPING_NONE)
      s = add_physical_names(p->read_schema.children[i], p->cols[i].field, err);
    if (!s && i < p->n_out && p->cols[i].out_field) {
      dk__schema_release(&col);
      one.fields = p->cols[i].out_field;
      s = dk_schema__to_arrow(&col, &one, 0, p->alloc, err);
      if (s) break;
    }
    if (!s && i < p->n_out) {
      const dk_field *of = p->cols[i].out_field ? p->cols[i].out_field : p->cols[i].field;
      dk__schema_release(p->out_schema.children[i]);
      s = dk__schema_copy_a(p->out_schema.children[i], col.children[0], p->alloc, err);
      if (!s) s = tag_variants(p->out_schema.children[i], of->type, err);
    }
    dk__schema_release(&col);
  }
  if (s == DK_OK && p->meta) {
    struct ArrowSchema *m = p->out_schema.children[p->n_out];
    dk__schema_release(m);
    int nm = 0;
    for (int b = 0; b < 9; b++) nm += (p->meta >> b) & 1;
    s = dk__schema_init_a(m, &st, "_metadata", 0, nm, p->alloc, err);
    int k = 0;
    for (int b = 0; s == DK_OK && b < 9; b++) {
      if (!((p->meta >> b) & 1)) continue;
      dk_atype t = dk__atype_make(b <= 1 ? DK_AT_STRING : DK_AT_INT64);
      if (b == 5) t = dk__atype_timestamp(DK_TU_MICRO, "UTC");
      dk__schema_release(m->children[k]);
      s = dk__schema_init_a(m->children[k], &t, meta_names[b], 0, 0, p->alloc, err);
      k++;
    }
  }
  return s;
}

/* ---- options -------------------------------------------------------------------------------- */

int dk_scan__is_partition_col(const scan_plan *p, const char *name) {
  for (size_t i = 0; i < p->n_pcols; i++)
    if (!strcasecmp(p->pcols[i], name)) return 1;
  return 0;
}

/* Keeps, of struct type t, the fields that paths[0..n) (dotted, relative to t) name: a path
** that ends at a field keeps it whole, a longer one prunes inside it. Field order stays the
** schema's (as Spark's nested column pruning does). */
static dk_status prune_struct(const dk_type **out, const dk_type *t, const char *const *paths,
                              size_t n, dk_arena *ar, dk_error *err) {
  dk_type *nt = dk__arena_alloc(ar, sizeof *nt, err);
  dk_field *nf = dk__arena_alloc(ar, (t->n_fields ? t->n_fields : 1) * sizeof *nf, err);
  const char **sub = dk__arena_alloc(ar, (n ? n : 1) * sizeof *sub, err);
  char *used = dk__arena_alloc(ar, n ? n : 1, err);
  if (!nt || !nf || !sub || !used) return DK_NOMEM;
  memset(used, 0, n ? n : 1);
  *nt = *t;
  nt->n_fields = 0;
  nt->fields = nf;
  for (size_t i = 0; i < t->n_fields; i++) {
    const dk_field *f = &t->fields[i];
    size_t fl = strlen(f->name), ns = 0;
    int whole = 0;
    for (size_t k = 0; k < n; k++) {
      if (strncasecmp(paths[k], f->name, fl) != 0) continue;
      if (paths[k][fl] == 0) whole = 1, used[k] = 1;
      else if (paths[k][fl] == '.') sub[ns++] = paths[k] + fl + 1, used[k] = 1;
    }
    if (!whole && !ns) continue;
    nf[nt->n_fields] = *f;
    if (!whole) {
      if (f->type->id != DK_TYPE_STRUCT)
        return dk__error_set(err, DK_NOT_FOUND, "scan: '%s' is not a struct (cannot select '%s')",
                             f->name, sub[0]);
      DK_RETURN_NOT_OK(prune_struct(&nf[nt->n_fields].type, f->type, sub, ns, ar, err));
    }
    nt->n_fields++;
  }
  for (size_t k = 0; k < n; k++)
    if (!used[k]) return dk__error_set(err, DK_NOT_FOUND, "scan: no column '%s'", paths[k]);
  *out = nt;
  return DK_OK;
}

/* Resolves the requested columns (names or dotted nested paths; n < 0: every column, data
** columns then partition columns) into plan->cols, remembering the request for splits. */
dk_status dk_scan__plan_add_columns(scan_plan *p, const dk_type *schema, const char *const *names,
                                    int64_t n, dk_error *err) {
  p->n_req = n;
  if (n < 0) {
    for (size_t i = 0; i < schema->n_fields; i++)
      if (!dk_scan__is_partition_col(p, schema->fields[i].name)) {
        p->cols[p->n_cols].field = &schema->fields[i];
        p->cols[p->n_cols++].is_partition = 0;
      }
    for (size_t k = 0; k < p->n_pcols; k++) {
      const dk_field *f = dk_schema_find(schema, p->pcols[k]);
      if (!f)
        return dk__error_set(err, DK_CORRUPT, "%s: partition column '%s' is not in the schema",
                             p->root, p->pcols[k]);
      p->cols[p->n_cols].field = f;
      p->cols[p->n_cols++].is_partition = 1;
    }
    return DK_OK;
  }
  p->req = dk__arena_alloc(&p->ar, (size_t)(n ? n : 1) * sizeof *p->req, err);
  if (!p->req) return DK_NOMEM;
  for (int64_t i = 0; i < n; i++) {
    p->req[i] = dk__arena_alloc(&p->ar, strlen(names[i]) + 1, err);
    if (!p->req[i]) return DK_NOMEM;
    memcpy((char *)p->req[i], names[i], strlen(names[i]) + 1);
  }
  for (int64_t i = 0; i < n; i++) {
    const char *name = names[i];
    const char *dot = strchr(name, '.');
    size_t tl = dot ? (size_t)(dot - name) : strlen(name);
    char top[256];
    DK_RETURN_IF(tl >= sizeof top, DK_NOT_FOUND, err, "scan: no column '%s'", name);
    memcpy(top, name, tl);
    top[tl] = 0;
    const dk_field *f = dk_schema_find(schema, top);
    DK_RETURN_IF(!f, DK_NOT_FOUND, err, "scan: no column '%s' in the table schema", name);
    int dup = 0;
    for (size_t c = 0; c < p->n_cols; c++)
      if (!strcmp(p->cols[c].field->name, f->name)) dup = 1;
    if (dup) continue; /* handled with its first mention */
    /* every request on this top-level column */
    const char **paths = dk__arena_alloc(&p->ar, (size_t)n * sizeof *paths, err);
    if (!paths) return DK_NOMEM;
    size_t np = 0;
    int whole = 0;
    for (int64_t k = i; k < n; k++) {
      const char *d2 = strchr(names[k], '.');
      size_t l2 = d2 ? (size_t)(d2 - names[k]) : strlen(names[k]);
      if (l2 != tl || strncasecmp(names[k], top, tl) != 0) continue;
      if (!d2) whole = 1;
      else paths[np++] = d2 + 1;
    }
    if (whole || !np) {
      p->cols[p->n_cols].field = f;
    } else {
      DK_RETURN_IF(f->type->id != DK_TYPE_STRUCT, DK_NOT_FOUND, err,
                   "scan: '%s' is not a struct (cannot select '%s')", f->name, name);
      dk_field *nf = dk__arena_alloc(&p->ar, sizeof *nf, err);
      if (!nf) return DK_NOMEM;
      *nf = *f;
      DK_RETURN_NOT_OK(prune_struct(&nf->type, f->type, paths, np, &p->ar, err));
      p->cols[p->n_cols].field = nf;
      p->cols[p->n_cols].pruned = 1;
    }
    p->cols[p->n_cols++].is_partition = dk_scan__is_partition_col(p, f->name);
  }
  return DK_OK;
}

/* Filter column paths deeper than this widen a nested projection to the whole column. */
#define DK_EXPR_PATH_MAX 64

/* True when the (possibly pruned) type t keeps the nested field names[0..n) (case-insensitive;
** a field kept whole keeps everything below it). */
static int type_keeps_path(const dk_type *t, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (t->id != DK_TYPE_STRUCT) return 1;
    const dk_field *f = NULL;
    for (size_t k = 0; k < t->n_fields && !f; k++)
      if (!strcasecmp(t->fields[k].name, names[i])) f = &t->fields[k];
    if (!f) return 0;
    t = f->type;
  }
  return 1;
}

/* Column c is a nested projection of top-level field f and the filter reads `col` (a column
** reference into f): widens what is read to the projected paths plus every filter path, and
** keeps the narrower projection as the output field (the extra fields are dropped after the
** filter ran). */
static dk_status widen_pruned_col(scan_plan *p, scan_col *c, const dk_field *f, const dk_expr *col,
                                  dk_error *err) {
  size_t depth = dk_expr_column_depth(col);
  const char *names[DK_EXPR_PATH_MAX];
  int whole = depth < 2 || depth > DK_EXPR_PATH_MAX;
  for (size_t i = 1; !whole && i < depth; i++) {
    names[i - 1] = dk_expr_column_name(col, i);
    if (strchr(names[i - 1], '.')) whole = 1; /* not expressible as a dotted path: read it all */
  }
  if (!whole && type_keeps_path(c->field->type, names, depth - 1)) return DK_OK;
  if (!c->out_field) c->out_field = c->field;
  if (whole) {
    c->field = f;
    c->pruned = 0;
    return DK_OK;
  }
  /* the new path, dotted */
  size_t len = 0;
  for (size_t i = 0; i + 1 < depth; i++) len += strlen(names[i]) + 1;
  char *path = dk__arena_alloc(&p->ar, len, err);
  if (!path) return DK_NOMEM;
  path[0] = 0;
  for (size_t i = 0, o = 0; i + 1 < depth; i++) {
    size_t l = strlen(names[i]);
    memcpy(path + o, names[i], l);
    o += l;
    path[o++] = i + 2 < depth ? '.' : 0;
  }
  const char **fp = dk__arena_alloc(&p->ar, (c->n_fpaths + 1) * sizeof *fp, err);
  if (!fp) return DK_NOMEM;
  if (c->n_fpaths) memcpy(fp, c->fpaths, c->n_fpaths * sizeof *fp);
  fp[c->n_fpaths] = path;
  c->fpaths = fp;
  c->n_fpaths++;
  /* every projected path of this column, then the filter's */
  size_t nr = p->n_req > 0 ? (size_t)p->n_req : 0, fl = strlen(f->name), np = 0;
  const char **paths = dk__arena_alloc(&p->ar, (nr + c->n_fpaths) * sizeof *paths, err);
  if (!paths) return DK_NOMEM;
  for (size_t k = 0; k < nr; k++)
    if (!strncasecmp(p->req[k], f->name, fl) && p->req[k][fl] == '.') paths[np++] = p->req[k] + fl + 1;
  for (size_t k = 0; k < c->n_fpaths; k++) paths[np++] = c->fpaths[k];
  dk_field *nf = dk__arena_alloc(&p->ar, sizeof *nf, err);
  if (!nf) return DK_NOMEM;
  *nf = *f;
  DK_RETURN_NOT_OK(prune_struct(&nf->type, f->type, paths, np, &p->ar, err));
  c->field = nf;
  c->pruned = 1;
  return DK_OK;
}

/* Appends (as filter-only columns) the top-level columns the filter reads that the output
** lacks; widens nested projections whose filter reads fields they drop (add = 0: only that,
** for a plan rebuilt from a split, whose filter-only columns are already listed). */
dk_status dk_scan__add_filter_columns(scan_plan *p, const dk_expr *e, const dk_type *schema,
                                      int add, dk_error *err) {
  if (dk_expr_get_kind(e) == DK_EXPR_COLUMN) {
    const char *name = dk_expr_column_name(e, 0);
    const dk_field *f = dk_schema_find(schema, name);
    if (!f) return dk__error_set(err, DK_NOT_FOUND, "scan: filter column '%s' is not in the schema",
                                 name);
    for (size_t i = 0; i < p->n_cols; i++) {
      if (p->cols[i].field == f) return DK_OK;
      if (!strcmp(p->cols[i].field->name, f->name))
        return widen_pruned_col(p, &p->cols[i], f, e, err);
    }
    if (!add) return DK_OK;
    p->cols[p->n_cols].field = f;
    p->cols[p->n_cols++].is_partition = dk_scan__is_partition_col(p, f->name);
    return DK_OK;
  }
  for (size_t i = 0; i < dk_expr_num_children(e); i++)
    DK_RETURN_NOT_OK(dk_scan__add_filter_columns(p, dk_expr_child(e, i), schema, add, err));
  return DK_OK;
}

/* The whole logical schema (with physical names for stats lookups) for binding filters. */
static dk_status build_full_schema(struct ArrowSchema *out, const scan_plan *p,
                                   const dk_type *schema, dk_error *err) {
  struct ArrowSchema logical;
  DK_RETURN_NOT_OK(dk_schema__to_arrow(&logical, schema, 0, p->alloc, err));
  dk_status st = dk__schema_copy_a(out, &logical, p->alloc, err);
  dk__schema_release(&logical);
  for (size_t i = 0; st == DK_OK && p->mode != DK_COLUMN_MAPPING_NONE && i < schema->n_fields; i++)
    st = add_physical_names(out->children[i], &schema->fields[i], err);
  return st;
}

dk_status dk_scan__plan_init(scan_plan *p, const dk_allocator *alloc, const dk_snapshot *snap,
                             const char *const *columns, int64_t n_columns,
                             const dk_expr *filter, unsigned meta, dk_error *err) {
  const dk_metadata *md = dk_snapshot_metadata(snap);
  return dk_scan__plan_init_ex(p, alloc, snap, dk_snapshot_schema(snap), md->partition_columns,
                               md->n_partition_columns, columns, n_columns, filter, meta, err);
}

dk_status dk_scan__plan_init_ex(scan_plan *p, const dk_allocator *alloc, const dk_snapshot *snap,
                                const dk_type *schema, const char *const *pcols, size_t n_pcols,
                                const char *const *columns, int64_t n_columns,
                                const dk_expr *filter, unsigned meta, dk_error *err) {
  p->alloc = alloc;
  dk__arena_init(&p->ar, p->alloc, 0);
  p->mode = dk_snapshot_column_mapping_mode(snap);
  p->meta = meta;
  p->limit = -1;
  p->batch_size = 65536;
  /* the table's root (absolute for a local table on the built-in backend: _metadata.file_path
   * and splits do not depend on the cwd) and its backend */
  p->root = dk__strdup(p->alloc, dk_snapshot_table_root(snap));
  p->sto = dk_snapshot__storage(snap);
  p->confine = dk_snapshot__confine(snap);
  /* the request (every column: data columns and each listed partition column), then at most
  ** every top-level column again as filter-only columns */
  size_t ncap = (n_columns >= 0 ? (size_t)n_columns : schema->n_fields + n_pcols) +
                schema->n_fields;
  p->cols = dk__calloc(p->alloc, ncap ? ncap : 1, sizeof *p->cols);
  DK_RETURN_IF(!p->root || !p->cols, DK_NOMEM, err, "out of memory (scan)");
  DK_RETURN_IF((p->meta & (DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION)) &&
                   !dk_snapshot_has_feature(snap, "rowTracking"),
               DK_INVALID, err,
               "scan: _metadata.row_id/row_commit_version need row tracking (table "
               "feature rowTracking)");
  p->row_id_col = dk_snapshot_property(snap, "delta.rowTracking.materializedRowIdColumnName");
  p->row_cv_col =
      dk_snapshot_property(snap, "delta.rowTracking.materializedRowCommitVersionColumnName");
  p->n_pcols = n_pcols;
  p->pcols = (const char **)pcols;
  DK_RETURN_NOT_OK(dk_scan__plan_add_columns(p, schema, columns, n_columns, err));
  p->n_out = p->n_cols;
  if (filter) DK_RETURN_NOT_OK(dk_scan__add_filter_columns(p, filter, schema, 1, err));
  return dk_scan__plan_build_schema(p, schema, err);
}

dk_status dk_scan_new(dk_scan **out, dk_snapshot *snap, const dk_scan_options *opts,
                      dk_error *err) {
  *out = NULL;
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.limit = -1;
  if (opts) {
    DK_CHECK_OPTIONS_VERSION(opts, DK_SCAN_OPTIONS_VERSION, "dk_scan_new", err);
    memcpy(&o, opts, opts->version <= 1   ? offsetof(dk_scan_options, skip_page_checksums)
                     : opts->version == 2 ? offsetof(dk_scan_options, read_ahead_bytes)
                                          : sizeof o);
  }
  DK_RETURN_IF(o.metadata_fields & ~(unsigned)DK_META_ALL, DK_INVALID, err,
               "scan: unknown _metadata field bits 0x%x", o.metadata_fields);
  const dk_allocator *alloc = dk_snapshot__allocator(snap);
  dk_scan *s = dk__calloc(alloc, 1, sizeof *s);
  DK_RETURN_IF(!s, DK_NOMEM, err, "out of memory (scan)");
  if (dk__pool_new(&s->pool, alloc, SCAN_POOL_CACHE, err) != DK_OK) {
    dk__free(alloc, s);
    return DK_NOMEM;
  }
  s->refs = 1;
  struct ArrowSchema full, pschema;
  full.release = pschema.release = NULL;
  dk_expr *bound_full = NULL, *ponly = NULL, *pbound = NULL;

  s->alloc = alloc;
  s->snap = dk_snapshot_ref(snap);
  scan_plan *p = &s->plan;
  s->threads = o.threads;
  s->read_ahead = o.read_ahead_bytes < 0 ? -1
                  : o.read_ahead_bytes > 0 ? o.read_ahead_bytes : SCAN_READ_AHEAD;
  s->split_target = o.split_target_bytes > 0 ? o.split_target_bytes : (int64_t)128 << 20;
  s->open_cost = o.split_open_cost_bytes > 0 ? o.split_open_cost_bytes : (int64_t)4 << 20;
  dk_status st = DK_OK;
  const dk_type *schema = dk_snapshot_schema(snap);
  const dk_metadata *md = dk_snapshot_metadata(snap);
  DK_CHECK_GOTO(dk_scan__plan_init(p, dk__pool_allocator(s->pool), snap, o.columns,
                                   o.columns ? (int64_t)o.n_columns : -1,
                                   o.keep_residual ? NULL : o.filter, o.metadata_fields, err));
  p->limit = o.limit;
  p->skip_page_crc = o.skip_page_checksums != 0;
  p->batch_size = o.batch_size > 0 ? o.batch_size : 65536;
  for (size_t i = 0; i < p->n_cols; i++) {
    s->n_part_out += (size_t)p->cols[i].is_partition;
  }

  /* filter: partition pruning (exact), stats skipping, residual */
  if (o.filter) {
    DK_CHECK_GOTO(build_full_schema(&full, p, schema, err));
    DK_CHECK_GOTO(dk_expr__bind(&bound_full, o.filter, &full, p->alloc, err));
    DK_CHECK_GOTO(dk_expr_split(&ponly, &p->residual, o.filter, md->partition_columns,
                                md->n_partition_columns, err));
    if (p->residual && !o.keep_residual)
      DK_CHECK_GOTO(dk_expr__bind(&p->residual_bound, p->residual, &p->read_schema, p->alloc, err));
    if (ponly) {
      dk_atype sty = dk__atype_make(DK_AT_STRUCT);
      DK_CHECK_GOTO(dk__schema_init_a(&pschema, &sty, "", 0, (int64_t)md->n_partition_columns,
                                      p->alloc, err));
      for (size_t k = 0; k < md->n_partition_columns; k++) {
        const dk_field *f = dk_schema_find(schema, md->partition_columns[k]);
        if (!f) {
          st = dk__error_set(err, DK_CORRUPT, "%s: partition column '%s' is not in the schema",
                             p->root, md->partition_columns[k]);
          goto cleanup;
        }
        dk__schema_release(pschema.children[k]);
        DK_CHECK_GOTO(dk__schema_copy_a(pschema.children[k], full.children[f - schema->fields],
                                        p->alloc, err));
      }
      DK_CHECK_GOTO(dk_expr__bind(&pbound, ponly, &pschema, p->alloc, err));
    }
  }
  DK_CHECK_GOTO(dk_scan__select(s, bound_full, pbound, &pschema, o.limit, err));
  st = DK_OK;
cleanup:
  dk__schema_release(&full);
  dk__schema_release(&pschema);
  dk_expr_free(bound_full);
  dk_expr_free(ponly);
  dk_expr_free(pbound);
  if (st == DK_OK) {
    *out = s;
    return DK_OK;
  }
  dk_scan_free(s);
  return st;
}

void dk_scan_free(dk_scan *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  dk_scan__plan_dispose(&s->plan);
  dk__pool_release(s->pool); /* lives on while batches still hold blocks */
  dk__free(s->alloc, s->files);
  dk__free(s->alloc, s->nrec);
  dk__free(s->alloc, s->pvals);
  dk__free(s->alloc, s->pruned);
  dk__free(s->alloc, s->pieces);
  dk__free(s->alloc, s->splits);
  dk_snapshot_free(s->snap);
  dk__free(s->alloc, s);
}

dk_status dk_scan_schema(struct ArrowSchema *out, const dk_scan *scan, dk_error *err) {
  return dk__schema_copy(out, &scan->plan.out_schema, err);
}

const dk_expr *dk_scan_residual(const dk_scan *scan) {
  return scan->plan.residual;
}

void dk_scan_stats_get(dk_scan_stats *out, const dk_scan *scan) {
  /* version 1 is the only one so far: every counter, loaded one by one (they move) */
  const int64_t *src = &scan->stats.files_total;
  int64_t *dst = &out->files_total;
  size_t n = (sizeof *out - offsetof(dk_scan_stats, files_total)) / sizeof(int64_t);
  for (size_t i = 0; i < n; i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
  out->version = DK_SCAN_STATS_VERSION;
}

int64_t dk_scan_num_files(const dk_scan *scan) { return scan->n_files; }
