/*
** scan.c — dk_scan: plans a scan of a snapshot (output columns, selected files) and reads it
** into Arrow batches: data files through dk's Parquet reader, columns mapped from physical to
** logical (PROTOCOL.md "Column Mapping"), missing columns as nulls, widened types, partition
** columns materialised from partitionValues ("Partition Value Serialization"), deletion
** vectors applied ("Deletion Vectors"), `_metadata` and row tracking ("Row Tracking"), LIMIT.
** Output order: data columns, partition columns, then `_metadata`.
*/
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "dk/parquet.h"
#include "codec/json/json.h"
#include "dv/dv.h"
#include "expr/skip.h"
#include "log/log.h"
#include "scan/scan_int.h"

/* ---- plan ----------------------------------------------------------------------------------- */

typedef struct scan_col {
  const dk_field *field; /* logical field of the table schema (or a pruned copy): what is read */
  const dk_field *out_field; /* output field when narrower than `field` (a nested projection
                              * whose filter reads more of the struct), else NULL */
  int is_partition;
  int pruned;            /* field is a pruned copy (nested projection) */
  const char **fpaths;   /* nested paths the filter added (relative to the column; arena) */
  size_t n_fpaths;
} scan_col;

/* Everything a reader needs besides the file list (shared by whole-scan and split reads). */
typedef struct scan_plan {
  const dk_allocator *alloc;
  char *root;                 /* table root path */
  dk_column_mapping_mode mode;
  size_t n_cols;              /* columns read: the n_out output ones, then filter-only ones */
  size_t n_out;
  scan_col *cols;
  struct ArrowSchema out_schema;  /* "+s": cols[0..n_out), [_metadata] */
  struct ArrowSchema read_schema; /* "+s": cols[0..n_cols) (the residual is bound to it) */
  dk_expr *residual;              /* unbound conjuncts not decided by partition values */
  dk_expr *residual_bound;        /* bound to read_schema; NULL when the engine applies it */
  unsigned meta;
  int skip_page_crc;          /* dk_scan_options.skip_page_checksums */
  int64_t limit;
  int64_t batch_size;
  const char *row_id_col;     /* materialised row-id column (physical name) or NULL */
  const char *row_cv_col;     /* materialised row-commit-version column or NULL */
  dk_arena ar;                /* pruned field types, copies of names */
  int64_t n_req;              /* requested column names (-1: all columns) */
  const char **req;
  size_t n_pcols;             /* the table's partition columns */
  const char **pcols;
} scan_plan;

/* One file to read (or a byte range of it). */
typedef struct scan_task {
  const char *path;           /* as in the log (relative or absolute URI) */
  int64_t size, mtime;
  const char *const *pvals;   /* one text per partition output column (NULL = null) */
  const dk_dv_descriptor *dv; /* NULL: none */
  int has_base_row_id;
  int64_t base_row_id;
  int has_default_rcv;
  int64_t default_rcv;
  int64_t range_start, range_end; /* range_end == 0: the whole file */
} scan_task;

struct dk_scan {
  int refs; /* atomic: the handle plus one per open stream */
  const dk_allocator *alloc;
  dk_snapshot *snap;
  scan_plan plan;
  int64_t n_files;
  int64_t *files;   /* indices into the snapshot's active files */
  const char **pvals; /* n_files * n_partition_out texts */
  size_t n_part_out;
  int64_t n_pruned;
  int64_t *pruned;    /* 2 per pruned file: snapshot index, dk_prune_reason */
  int64_t n_pieces, n_splits;
  int64_t *pieces;    /* 3 per piece: index into files, range start, range end */
  int64_t *splits;    /* 2 per split: first piece, number of pieces */
  int64_t split_target, open_cost;
  int threads;
  dk_scan_stats stats;
  dk_pool *pool; /* plan->alloc: everything reading allocates recycles through it */
};

/* Bytes of freed large blocks a scan keeps for reuse (about the buffers of a few batches
** and files in flight). */
#define SCAN_POOL_CACHE ((size_t)32 << 20)

static void stat_add(int64_t *p, int64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

static void plan_dispose(scan_plan *p) {
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
static dk_status plan_build_schema(scan_plan *p, const dk_type *schema, dk_error *err) {
  (void)schema;
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  int64_t n = (int64_t)p->n_out + (p->meta ? 1 : 0);
  dk_status s = dk__schema_init(&p->out_schema, &st, "", 0, n, err);
  if (!s) s = dk__schema_init(&p->read_schema, &st, "", 0, (int64_t)p->n_cols, err);
  for (size_t i = 0; s == DK_OK && i < p->n_cols; i++) {
    /* export the (possibly pruned) field through a one-field struct */
    dk_type one;
    memset(&one, 0, sizeof one);
    one.id = DK_TYPE_STRUCT;
    one.n_fields = 1;
    one.fields = p->cols[i].field;
    struct ArrowSchema col;
    s = dk_schema__to_arrow(&col, &one, 0, err);
    if (s) break;
    dk__schema_release(p->read_schema.children[i]);
    s = dk__schema_copy(p->read_schema.children[i], col.children[0], err);
    if (!s && p->mode != DK_COLUMN_MAPPING_NONE)
      s = add_physical_names(p->read_schema.children[i], p->cols[i].field, err);
    if (!s && i < p->n_out && p->cols[i].out_field) {
      dk__schema_release(&col);
      one.fields = p->cols[i].out_field;
      s = dk_schema__to_arrow(&col, &one, 0, err);
      if (s) break;
    }
    if (!s && i < p->n_out) {
      const dk_field *of = p->cols[i].out_field ? p->cols[i].out_field : p->cols[i].field;
      dk__schema_release(p->out_schema.children[i]);
      s = dk__schema_copy(p->out_schema.children[i], col.children[0], err);
      if (!s) s = tag_variants(p->out_schema.children[i], of->type, err);
    }
    dk__schema_release(&col);
  }
  if (s == DK_OK && p->meta) {
    struct ArrowSchema *m = p->out_schema.children[p->n_out];
    dk__schema_release(m);
    int nm = 0;
    for (int b = 0; b < 9; b++) nm += (p->meta >> b) & 1;
    s = dk__schema_init(m, &st, "_metadata", 0, nm, err);
    int k = 0;
    for (int b = 0; s == DK_OK && b < 9; b++) {
      if (!((p->meta >> b) & 1)) continue;
      dk_atype t = dk__atype_make(b <= 1 ? DK_AT_STRING : DK_AT_INT64);
      if (b == 5) t = dk__atype_timestamp(DK_TU_MICRO, "UTC");
      dk__schema_release(m->children[k]);
      s = dk__schema_init(m->children[k], &t, meta_names[b], 0, 0, err);
      k++;
    }
  }
  return s;
}

/* ---- options -------------------------------------------------------------------------------- */

static int is_partition_col(const scan_plan *p, const char *name) {
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
static dk_status plan_add_columns(scan_plan *p, const dk_type *schema, const char *const *names,
                                  int64_t n, dk_error *err) {
  p->n_req = n;
  if (n < 0) {
    for (size_t i = 0; i < schema->n_fields; i++)
      if (!is_partition_col(p, schema->fields[i].name)) {
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
    p->cols[p->n_cols++].is_partition = is_partition_col(p, f->name);
  }
  return DK_OK;
}

static int64_t stats_num_records(const char *stats) {
  if (!stats) return -1;
  const char *p = strstr(stats, "\"numRecords\"");
  if (!p) return -1;
  p += 12;
  while (*p == ' ' || *p == ':') p++;
  char *end;
  long long v = strtoll(p, &end, 10);
  return end == p || v < 0 ? -1 : (int64_t)v;
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
static dk_status add_filter_columns(scan_plan *p, const dk_expr *e, const dk_type *schema,
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
    p->cols[p->n_cols++].is_partition = is_partition_col(p, f->name);
    return DK_OK;
  }
  for (size_t i = 0; i < dk_expr_num_children(e); i++)
    DK_RETURN_NOT_OK(add_filter_columns(p, dk_expr_child(e, i), schema, add, err));
  return DK_OK;
}

/* The whole logical schema (with physical names for stats lookups) for binding filters. */
static dk_status build_full_schema(struct ArrowSchema *out, const scan_plan *p,
                                   const dk_type *schema, dk_error *err) {
  struct ArrowSchema logical;
  DK_RETURN_NOT_OK(dk_schema__to_arrow(&logical, schema, 0, err));
  dk_status st = dk__schema_copy(out, &logical, err);
  dk__schema_release(&logical);
  for (size_t i = 0; st == DK_OK && p->mode != DK_COLUMN_MAPPING_NONE && i < schema->n_fields; i++)
    st = add_physical_names(out->children[i], &schema->fields[i], err);
  return st;
}


dk_status dk_scan_new(dk_scan **out, dk_snapshot *snap, const dk_scan_options *opts,
                      dk_error *err) {
  *out = NULL;
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.limit = -1;
  if (opts) {
    DK_RETURN_IF(opts->version < 1 || opts->version > DK_SCAN_OPTIONS_VERSION, DK_INVALID, err,
                 "scan: unknown options version %u", opts->version);
    memcpy(&o, opts, opts->version == 1 ? offsetof(dk_scan_options, skip_page_checksums)
                                        : sizeof o);
  }
  DK_RETURN_IF(o.metadata_fields & ~(unsigned)DK_META_ALL, DK_INVALID, err,
               "scan: unknown _metadata field bits 0x%x", o.metadata_fields);
  const dk_allocator *alloc = NULL;
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
  dk_arena ar;
  dk__arena_init(&ar, alloc, 0);
  uint8_t *pmask = NULL;
  const char **pv_all = NULL;

  s->alloc = alloc;
  s->snap = dk_snapshot_ref(snap);
  scan_plan *p = &s->plan;
  p->alloc = dk__pool_allocator(s->pool);
  dk__arena_init(&p->ar, p->alloc, 0);
  p->mode = dk_snapshot_column_mapping_mode(snap);
  p->meta = o.metadata_fields;
  p->skip_page_crc = o.skip_page_checksums != 0;
  p->limit = o.limit;
  p->batch_size = o.batch_size > 0 ? o.batch_size : 65536;
  s->threads = o.threads;
  s->split_target = o.split_target_bytes > 0 ? o.split_target_bytes : (int64_t)128 << 20;
  s->open_cost = o.split_open_cost_bytes > 0 ? o.split_open_cost_bytes : (int64_t)4 << 20;
  dk_status st = DK_OK;
  const dk_type *schema = dk_snapshot_schema(snap);
  const dk_metadata *md = dk_snapshot_metadata(snap);
  {
    /* absolute root: _metadata.file_path and splits must not depend on the cwd */
    char *abs = realpath(dk_snapshot_table_root(snap), NULL);
    p->root = dk__strdup(p->alloc, abs ? abs : dk_snapshot_table_root(snap));
    free(abs);
  }
  size_t ncap = (o.columns ? o.n_columns : schema->n_fields) + schema->n_fields;
  p->cols = dk__calloc(p->alloc, ncap ? ncap : 1, sizeof *p->cols);
  if (!p->root || !p->cols) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    goto cleanup;
  }
  if ((p->meta & (DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION)) &&
      !dk_snapshot_has_feature(snap, "rowTracking")) {
    st = dk__error_set(err, DK_INVALID,
                       "scan: _metadata.row_id/row_commit_version need row tracking (table "
                       "feature rowTracking)");
    goto cleanup;
  }
  p->row_id_col = dk_snapshot_property(snap, "delta.rowTracking.materializedRowIdColumnName");
  p->row_cv_col =
      dk_snapshot_property(snap, "delta.rowTracking.materializedRowCommitVersionColumnName");
  p->n_pcols = md->n_partition_columns;
  p->pcols = (const char **)md->partition_columns;
  DK_CHECK_GOTO(plan_add_columns(p, schema, o.columns, o.columns ? (int64_t)o.n_columns : -1, err));
  p->n_out = p->n_cols;
  if (o.filter && !o.keep_residual) DK_CHECK_GOTO(add_filter_columns(p, o.filter, schema, 1, err));
  for (size_t i = 0; i < p->n_cols; i++) {
    s->n_part_out += (size_t)p->cols[i].is_partition;
  }
  DK_CHECK_GOTO(plan_build_schema(p, schema, err));

  /* filter: partition pruning (exact), stats skipping, residual */
  if (o.filter) {
    DK_CHECK_GOTO(build_full_schema(&full, p, schema, err));
    DK_CHECK_GOTO(dk_expr_bind(&bound_full, o.filter, &full, err));
    DK_CHECK_GOTO(dk_expr_split(&ponly, &p->residual, o.filter, md->partition_columns,
                                md->n_partition_columns, err));
    if (p->residual && !o.keep_residual)
      DK_CHECK_GOTO(dk_expr_bind(&p->residual_bound, p->residual, &p->read_schema, err));
    if (ponly) {
      dk_atype sty = dk__atype_make(DK_AT_STRUCT);
      DK_CHECK_GOTO(dk__schema_init(&pschema, &sty, "", 0, (int64_t)md->n_partition_columns, err));
      for (size_t k = 0; k < md->n_partition_columns; k++) {
        const dk_field *f = dk_schema_find(schema, md->partition_columns[k]);
        if (!f) {
          st = dk__error_set(err, DK_CORRUPT, "%s: partition column '%s' is not in the schema",
                             p->root, md->partition_columns[k]);
          goto cleanup;
        }
        dk__schema_release(pschema.children[k]);
        DK_CHECK_GOTO(dk__schema_copy(pschema.children[k], full.children[f - schema->fields], err));
      }
      DK_CHECK_GOTO(dk_expr_bind(&pbound, ponly, &pschema, err));
    }
  }
  int64_t nf = dk_snapshot_num_files(snap);
  s->files = dk__calloc(alloc, (size_t)(nf ? nf : 1), sizeof *s->files);
  s->pvals = dk__calloc(alloc, (size_t)(nf ? nf : 1) * (s->n_part_out ? s->n_part_out : 1),
                        sizeof *s->pvals);
  s->pruned = dk__calloc(alloc, (size_t)(nf ? nf : 1) * 2, sizeof *s->pruned);
  if (!s->files || !s->pvals || !s->pruned) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    goto cleanup;
  }
  s->stats.files_total = nf;
  if (pbound && nf > 0) {
    size_t npc = md->n_partition_columns;
    pv_all = dk__calloc(alloc, (size_t)nf * npc, sizeof *pv_all);
    pmask = dk__malloc(alloc, (size_t)nf);
    if (!pv_all || !pmask) {
      st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
      goto cleanup;
    }
    for (int64_t i = 0; i < nf; i++) {
      dk_file_entry f;
      DK_CHECK_GOTO(dk_snapshot_file(&f, snap, i, err));
      for (size_t k = 0; k < npc; k++) {
        int is_null = 0;
        const char *v = dk_file_partition_value(snap, &f, md->partition_columns[k], &is_null);
        pv_all[(size_t)i * npc + k] = is_null ? NULL : v;
      }
    }
    struct ArrowArray pb;
    DK_CHECK_GOTO(dk_partition_batch(&pb, &pschema, pv_all, nf, err));
    st = dk_expr_eval_filter(pmask, NULL, pbound, &pschema, &pb, err);
    dk__array_release(&pb);
    if (st) goto cleanup;
  }
  int use_stats = bound_full && dk_expr__has_columns(bound_full);
  int64_t est = 0, need = o.limit;
  int limit_push = o.limit >= 0 && !p->residual;
  for (int64_t i = 0; i < nf; i++) {
    dk_file_entry f;
    DK_CHECK_GOTO(dk_snapshot_file(&f, snap, i, err));
    if (pmask && !pmask[i]) {
      s->stats.files_pruned_partition++;
      s->pruned[2 * s->n_pruned] = i;
      s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_PARTITION;
      continue;
    }
    int64_t nrec = stats_num_records(f.stats);
    if (use_stats && f.stats) {
      dk__arena_reset(&ar);
      dk_json_value *jv = NULL;
      if (dk__json_parse(&jv, &ar, f.stats, strlen(f.stats), NULL) == DK_OK) {
        dk_file_stats fs = {.root = jv};
        if (dk_expr__skip_eval(bound_full, &fs) == DK_SKIP_CAN_SKIP) {
          s->stats.files_pruned_stats++;
          s->pruned[2 * s->n_pruned] = i;
          s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_STATS;
          continue;
        }
      }
    }
    if (limit_push && need <= 0) {
      s->stats.files_pruned_limit++;
      s->pruned[2 * s->n_pruned] = i;
      s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_LIMIT;
      continue;
    }
    int64_t live = nrec >= 0 ? nrec - (f.dv ? f.dv->cardinality : 0) : -1;
    if (limit_push) {
      if (live < 0) limit_push = 0; /* unknown row count: read on */
      else need -= live;
    }
    if (est >= 0) est = live >= 0 ? est + live : -1;
    size_t k = 0;
    for (size_t c = 0; c < p->n_cols; c++) {
      if (!p->cols[c].is_partition) continue;
      int is_null = 0;
      const char *v = dk_file_partition_value(snap, &f, p->cols[c].field->name, &is_null);
      s->pvals[s->n_files * (int64_t)s->n_part_out + (int64_t)k++] = is_null ? NULL : v;
    }
    s->files[s->n_files++] = i;
    s->stats.bytes_selected += f.size;
  }
  s->stats.files_selected = s->n_files;
  s->stats.rows_estimated = est;
  st = DK_OK;
cleanup:
  dk__schema_release(&full);
  dk__schema_release(&pschema);
  dk_expr_free(bound_full);
  dk_expr_free(ponly);
  dk_expr_free(pbound);
  dk__arena_dispose(&ar);
  dk__free(alloc, pmask);
  dk__free(alloc, pv_all);
  if (st == DK_OK) {
    *out = s;
    return DK_OK;
  }
  dk_scan_free(s);
  return st;
}

void dk_scan_free(dk_scan *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  plan_dispose(&s->plan);
  dk__pool_release(s->pool); /* lives on while batches still hold blocks */
  dk__free(s->alloc, s->files);
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
  dk_scan_stats *s = (dk_scan_stats *)&scan->stats;
  int64_t *src = (int64_t *)s, *dst = (int64_t *)out;
  for (size_t i = 0; i < sizeof *s / sizeof(int64_t); i++)
    dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

int64_t dk_scan_num_files(const dk_scan *scan) { return scan->n_files; }


dk_status dk_scan_file_get(dk_scan_file *out, const dk_scan *scan, int64_t i, dk_error *err) {
  DK_RETURN_IF(i < 0 || i >= scan->n_files, DK_INVALID, err, "scan: file %" PRId64 " out of range",
               i);
  DK_RETURN_NOT_OK(dk_snapshot_file(&out->entry, scan->snap, scan->files[i], err));
  out->num_records = stats_num_records(out->entry.stats);
  return DK_OK;
}

int64_t dk_scan_num_pruned_files(const dk_scan *scan) { return scan->n_pruned; }

dk_status dk_scan_pruned_file_get(dk_file_entry *out, dk_prune_reason *reason,
                                  const dk_scan *scan, int64_t i, dk_error *err) {
  DK_RETURN_IF(i < 0 || i >= scan->n_pruned, DK_INVALID, err,
               "scan: pruned file %" PRId64 " out of range", i);
  *reason = (dk_prune_reason)scan->pruned[2 * i + 1];
  return dk_snapshot_file(out, scan->snap, scan->pruned[2 * i], err);
}

/* ---- reading one file ---------------------------------------------------------------------- */

typedef struct file_reader {
  const scan_plan *plan;
  dk_scan_stats *stats;  /* may be NULL */
  dk_storage *sto;
  const scan_task *task;
  char *full_path;       /* local path */
  char *uri;             /* file:// URI for _metadata.file_path */
  dk_parquet_file *pf;
  dk_dv *dv;
  int n_rg, rg;          /* row groups; next one to open */
  int64_t rg_first_row;  /* row index of the current row group's first row */
  int64_t next_row;      /* row index of the next batch's first row */
  int64_t rg_end_row;    /* row index after the current row group */
  int64_t want;          /* rows still wanted by a LIMIT when the row group opens (-1: all) */
  struct ArrowArrayStream stream; /* current row group's stream */
  int has_stream;
  int in_rg;             /* a row group is open (with or without a stream) */
  struct ArrowSchema read_schema; /* schema of the stream's batches */
  int64_t *col_src;      /* per output data column: child of the batch, or -1 */
  int64_t row_id_src, row_cv_src; /* children holding materialised row tracking, or -1 */
  dk_scalar *pscalars;   /* partition values, per partition output column */
  int64_t *idx;          /* selection scratch */
  uint8_t *keep, *mask;
  int64_t scratch_cap;
  int64_t *ranges;       /* page skipping: row ranges of row group range_rg still to read */
  int n_ranges, range_pos, range_rg;
} file_reader;

static void file_reader_close(file_reader *r) {
  const dk_allocator *a = r->plan->alloc;
  if (r->has_stream && r->stream.release) r->stream.release(&r->stream);
  r->has_stream = 0;
  dk__schema_release(&r->read_schema);
  dk_parquet_file_free(r->pf);
  dk_dv__free(r->dv);
  dk__free(a, r->full_path);
  dk__free(a, r->uri);
  dk__free(a, r->col_src);
  dk__free(a, r->pscalars);
  dk__free(a, r->idx);
  dk__free(a, r->keep);
  dk__free(a, r->mask);
  dk__free(a, r->ranges);
  memset(r, 0, sizeof *r);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Resolves a log path against the root: absolute URIs (file:/x, file:///x) become local paths
** (percent-decoded); relative paths are already decoded by the log reader. */
static dk_status resolve_path(char **out, const char *root, const char *path,
                              const dk_allocator *a, dk_error *err) {
  dk_buf b;
  dk__buf_init(&b, a);
  dk_status st = DK_OK;
  if (!strncmp(path, "file:", 5)) {
    const char *p = path + 5;
    if (!strncmp(p, "//localhost/", 12)) p += 11;
    else if (!strncmp(p, "///", 3)) p += 2;
    for (; *p && !st; p++) {
      if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
        st = dk__buf_putc(&b, (char)(hexval(p[1]) * 16 + hexval(p[2])), err);
        p += 2;
      } else {
        st = dk__buf_putc(&b, *p, err);
      }
    }
  } else if (path[0] == '/') {
    st = dk__buf_puts(&b, path, err);
  } else if (strstr(path, "://")) {
    st = dk__error_set(err, DK_UNSUPPORTED, "scan: data file '%s' is not on the local file system",
                       path);
  } else {
    st = dk__buf_printf(&b, err, "%s/%s", root, path);
  }
  if (!st) st = dk__buf_putc(&b, 0, err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *out = dk__strdup(a, (const char *)b.data);
  dk__buf_dispose(&b);
  DK_RETURN_IF(!*out, DK_NOMEM, err, "out of memory (scan)");
  return DK_OK;
}

static dk_status file_reader_open(file_reader *r, const scan_plan *plan, dk_scan_stats *stats,
                                  dk_storage *sto, const scan_task *t, dk_error *err) {
  memset(r, 0, sizeof *r);
  r->plan = plan;
  r->stats = stats;
  r->sto = sto;
  r->task = t;
  const dk_allocator *a = plan->alloc;
  r->row_id_src = r->row_cv_src = -1;
  DK_RETURN_NOT_OK(resolve_path(&r->full_path, plan->root, t->path, a, err));
  if (plan->meta & (DK_META_FILE_PATH | DK_META_FILE_NAME)) {
    dk_buf b;
    dk__buf_init(&b, a);
    /* file URI, percent-encoding what is not unreserved or '/' (RFC 3986) */
    dk_status st = dk__buf_puts(&b, "file://", err);
    for (const unsigned char *q = (const unsigned char *)r->full_path; !st && *q; q++) {
      unsigned char ch = *q;
      if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          strchr("-._~/!$&'()*+,;=:@", ch))
        st = dk__buf_putc(&b, (char)ch, err);
      else
        st = dk__buf_printf(&b, err, "%%%02X", ch);
    }
    if (!st) st = dk__buf_putc(&b, 0, err);
    if (!st) r->uri = dk__strdup(a, (const char *)b.data);
    dk__buf_dispose(&b);
    DK_RETURN_NOT_OK(st);
    DK_RETURN_IF(!r->uri, DK_NOMEM, err, "out of memory (scan)");
  }
  dk_parquet_open_options po;
  memset(&po, 0, sizeof po);
  po.version = DK_PARQUET_OPEN_OPTIONS_VERSION;
  po.alloc = a;
  po.file_size = t->size > 0 ? t->size : 0;
  po.skip_page_checksums = plan->skip_page_crc;
  DK_RETURN_NOT_OK(dk_parquet_open(&r->pf, r->full_path, &po, err));
  r->n_rg = dk_parquet_num_row_groups(r->pf);
  if (t->dv) {
    dk_dv_desc d;
    int64_t off = t->dv->offset;
    const char *pth = t->dv->path_or_inline_dv;
    char stype = t->dv->storage_type;
    DK_RETURN_NOT_OK(dk_dv__descriptor_init(&d, (dk_str){&stype, 1}, (dk_str){pth, strlen(pth)},
                                           off >= 0 ? &off : NULL, t->dv->size_in_bytes,
                                           t->dv->cardinality, err));
    DK_RETURN_NOT_OK(dk_dv__load(&r->dv, sto, plan->root, &d, a, err));
  }
  size_t np = 0;
  for (size_t c = 0; c < plan->n_cols; c++) np += (size_t)plan->cols[c].is_partition;
  r->pscalars = dk__calloc(a, np ? np : 1, sizeof *r->pscalars);
  r->col_src = dk__calloc(a, plan->n_cols ? plan->n_cols : 1, sizeof *r->col_src);
  DK_RETURN_IF(!r->pscalars || !r->col_src, DK_NOMEM, err, "out of memory (scan)");
  for (size_t c = 0, k = 0; c < plan->n_cols; c++) {
    r->col_src[c] = -1;
    if (!plan->cols[c].is_partition) continue;
    dk_status st = dk_partition_value_parse(&r->pscalars[k], plan->cols[c].field->type,
                                            t->pvals ? t->pvals[k] : NULL, err);
    if (st) {
      dk__error_prefix(err, "%s: partition column '%s'", t->path, plan->cols[c].field->name);
      return st;
    }
    k++;
  }
  return DK_OK;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int)(yy + (*m <= 2));
}

/* Appends one Parquet min/max statistic (max when is_max) of a leaf whose Arrow type in the
** file is `ff` as the JSON value Delta stats would hold for the column's table type t; false
** when it cannot: unsupported or mismatched types, odd bytes, unsigned integers, INT96
** timestamps (no trustworthy order), NaN or infinite floats, values outside years 1..9999.
** Decimals keep the file's scale (the skipping rules rescale to the table's); timestamps are
** exact (micros; nanos floored, which the skipping rules' 999 us widening covers). */
static bool stat_json(dk_buf *b, const dk_type *t, const char *ff, const dk_parquet_column_stats *cs,
                      int is_max) {
  const uint8_t *v = is_max ? cs->max : cs->min;
  size_t len = is_max ? cs->max_len : cs->min_len;
  int phys = cs->physical_type;
  int64_t x;
  switch (t->id) {
    case DK_TYPE_BYTE:
    case DK_TYPE_SHORT:
    case DK_TYPE_INTEGER:
    case DK_TYPE_LONG:
    case DK_TYPE_DATE:
      if (strcmp(ff, "c") && strcmp(ff, "s") && strcmp(ff, "i") && strcmp(ff, "l") &&
          strcmp(ff, "tdD"))
        return false; /* unsigned, or not an integer in the file */
      if ((t->id == DK_TYPE_DATE) != !strcmp(ff, "tdD")) return false;
      if (phys == 1 && len == 4) {
        int32_t y;
        memcpy(&y, v, 4);
        x = y;
      } else if (phys == 2 && len == 8 && t->id == DK_TYPE_LONG) {
        memcpy(&x, v, 8);
      } else {
        return false;
      }
      if (t->id == DK_TYPE_DATE) {
        int yr;
        unsigned mo, dd;
        if (x < -719162 || x > 2932896) return false; /* years 1..9999 */
        civil_from_days(x, &yr, &mo, &dd);
        return dk__buf_printf(b, NULL, "\"%04d-%02u-%02u\"", yr, mo, dd) == DK_OK;
      }
      return dk__buf_printf(b, NULL, "%" PRId64, x) == DK_OK;
    case DK_TYPE_FLOAT:
    case DK_TYPE_DOUBLE: {
      double d;
      if (phys == 4 && len == 4 && !strcmp(ff, "f")) {
        float fv;
        memcpy(&fv, v, 4);
        d = fv;
      } else if (phys == 5 && len == 8 && !strcmp(ff, "g") && t->id == DK_TYPE_DOUBLE) {
        memcpy(&d, v, 8);
      } else {
        return false;
      }
      if (!isfinite(d)) return false; /* NaN: no order; infinities: not JSON numbers */
      return dk__buf_printf(b, NULL, "%.17g", d) == DK_OK;
    }
    case DK_TYPE_DECIMAL: {
      int prec, scale;
      char tail;
      if (sscanf(ff, "d:%d,%d%c", &prec, &scale, &tail) != 2 || scale < 0 || scale > 38)
        return false;
      __int128 u;
      if (phys == 1 && len == 4) {
        int32_t y;
        memcpy(&y, v, 4);
        u = y;
      } else if (phys == 2 && len == 8) {
        int64_t y;
        memcpy(&y, v, 8);
        u = y;
      } else if ((phys == 6 || phys == 7) && len >= 1 && len <= 16) {
        u = (int8_t)v[0]; /* big-endian two's complement, sign-extended */
        for (size_t i = 1; i < len; i++) u = u * 256 + v[i];
      } else {
        return false;
      }
      char digits[48], txt[64];
      unsigned __int128 m = u < 0 ? (unsigned __int128)0 - (unsigned __int128)u : (unsigned __int128)u;
      int nd = 0;
      do {
        digits[nd++] = (char)('0' + (int)(m % 10));
        m /= 10;
      } while (m);
      while (nd <= scale) digits[nd++] = '0';
      size_t k = 0;
      if (u < 0) txt[k++] = '-';
      for (int i = nd - 1; i >= 0; i--) {
        txt[k++] = digits[i];
        if (i == scale && scale > 0) txt[k++] = '.';
      }
      txt[k] = 0;
      return dk__buf_puts(b, txt, NULL) == DK_OK;
    }
    case DK_TYPE_TIMESTAMP:
    case DK_TYPE_TIMESTAMP_NTZ: {
      if (phys != 2 || len != 8 || strncmp(ff, "ts", 2) != 0) return false;
      memcpy(&x, v, 8);
      int64_t us;
      switch (cs->timestamp_unit) {
        case 1:
          if (x < INT64_MIN / 1000 || x > INT64_MAX / 1000) return false;
          us = x * 1000;
          break;
        case 2: us = x; break;
        case 3: us = x / 1000 - (x % 1000 < 0); break; /* floor */
        default: return false; /* INT96 or unknown: no skipping */
      }
      if (us < INT64_C(-62135596800000000) || us > INT64_C(253402300799999999)) return false;
      int64_t days = us / 86400000000 - (us % 86400000000 < 0);
      int64_t rem = us - days * 86400000000;
      int yr;
      unsigned mo, dd;
      civil_from_days(days, &yr, &mo, &dd);
      return dk__buf_printf(b, NULL, "\"%04d-%02u-%02uT%02d:%02d:%02d.%06d%s\"", yr, mo, dd,
                           (int)(rem / 3600000000), (int)(rem / 60000000 % 60),
                           (int)(rem / 1000000 % 60), (int)(rem % 1000000),
                           t->id == DK_TYPE_TIMESTAMP ? "Z" : "") == DK_OK;
    }
    case DK_TYPE_STRING: {
      if (phys != 6) return false;
      for (size_t i = 0; i < len; i++)
        if (v[i] >= 0x80 || v[i] < 0x20) return false; /* keep to plain ASCII */
      return dk__json_write_str(b, (const char *)v, len, NULL) == DK_OK;
    }
    default:
      return false;
  }
}

/* Delta-style stats JSON assembled from Parquet statistics (of a row group or of pages). */
typedef struct stats_acc {
  dk_buf mn, mx, nc;
  int n_mm, n_nc;
} stats_acc;

static void stats_acc_init(stats_acc *a, const dk_allocator *alloc) {
  memset(a, 0, sizeof *a);
  dk__buf_init(&a->mn, alloc);
  dk__buf_init(&a->mx, alloc);
  dk__buf_init(&a->nc, alloc);
}

static void stats_acc_dispose(stats_acc *a) {
  dk__buf_dispose(&a->mn);
  dk__buf_dispose(&a->mx);
  dk__buf_dispose(&a->nc);
}

static void stats_acc_add(stats_acc *a, const dk_field *f, const char *ff, const char *key,
                          const dk_parquet_column_stats *cs) {
  if (cs->has_null_count) {
    dk__buf_puts(&a->nc, a->n_nc++ ? "," : "", NULL);
    dk__json_write_str(&a->nc, key, strlen(key), NULL);
    dk__buf_printf(&a->nc, NULL, ":%" PRId64, cs->null_count);
  }
  if (cs->has_min_max) {
    size_t l1 = a->mn.len, l2 = a->mx.len;
    dk__buf_puts(&a->mn, a->n_mm ? "," : "", NULL);
    dk__json_write_str(&a->mn, key, strlen(key), NULL);
    dk__buf_putc(&a->mn, ':', NULL);
    dk__buf_puts(&a->mx, a->n_mm ? "," : "", NULL);
    dk__json_write_str(&a->mx, key, strlen(key), NULL);
    dk__buf_putc(&a->mx, ':', NULL);
    if (stat_json(&a->mn, f->type, ff, cs, 0) && stat_json(&a->mx, f->type, ff, cs, 1)) {
      a->n_mm++;
    } else {
      a->mn.len = l1;
      a->mx.len = l2;
    }
  }
}

/* Can no row of a unit (row group or page range) of num_rows rows with these statistics
** satisfy the residual filter? */
static bool stats_acc_can_skip(const stats_acc *a, const scan_plan *plan, int64_t num_rows) {
  if (!a->n_mm && !a->n_nc) return false;
  dk_buf all;
  dk__buf_init(&all, plan->alloc);
  dk__buf_printf(&all, NULL, "{\"numRecords\":%" PRId64 ",\"minValues\":{%.*s},\"maxValues\":{%.*s},"
                "\"nullCount\":{%.*s}}", num_rows, (int)a->mn.len, (const char *)a->mn.data,
                (int)a->mx.len, (const char *)a->mx.data, (int)a->nc.len, (const char *)a->nc.data);
  bool skip = false;
  dk_arena ar;
  dk__arena_init(&ar, plan->alloc, 0);
  dk_json_value *jv = NULL;
  if (all.data && dk__json_parse(&jv, &ar, (const char *)all.data, all.len, NULL) == DK_OK) {
    /* Parquet float/double min/max leave NaN out (NaN rows may exist above max) */
    dk_file_stats st = {.root = jv, .float_max_excludes_nan = true};
    skip = dk_expr__skip_eval(plan->residual_bound, &st) == DK_SKIP_CAN_SKIP;
  }
  dk__arena_dispose(&ar);
  dk__buf_dispose(&all);
  return skip;
}

static const char *stats_key(const scan_plan *plan, const dk_field *f) {
  return plan->mode == DK_COLUMN_MAPPING_NONE ? f->name : f->physical_name;
}

/* Row-group skipping: the residual filter evaluated over the row group's Parquet column
** statistics (viewed as Delta-style stats so the file-skipping rules apply unchanged). */
static bool rg_can_skip(file_reader *r, int rg, int64_t num_rows, const struct ArrowSchema *fs) {
  const scan_plan *plan = r->plan;
  stats_acc a;
  stats_acc_init(&a, plan->alloc);
  for (size_t c = 0; c < plan->n_cols; c++) {
    const dk_field *f = plan->cols[c].field;
    if (plan->cols[c].is_partition) continue;
    int64_t j = dk_scan__find_child(fs, f, plan->mode);
    if (j < 0 || fs->children[j]->n_children) continue;
    int col = dk_parquet_column_index(r->pf, fs->children[j]->name);
    dk_parquet_column_stats cs;
    if (col < 0 || dk_parquet_column_stats_get(&cs, r->pf, rg, col, NULL) != DK_OK) continue;
    stats_acc_add(&a, f, fs->children[j]->format, stats_key(plan, f), &cs);
  }
  bool skip = stats_acc_can_skip(&a, plan, num_rows);
  stats_acc_dispose(&a);
  return skip;
}

/* ---- page skipping (Parquet page index) ------------------------------------------------------ */

typedef struct pg_col {
  const dk_field *field;        /* filter column stored in this leaf, or NULL */
  const char *ff, *key;
  dk_parquet_column_stats cs;   /* chunk facts: physical type, timestamp unit */
  dk_parquet_page_index *pi;
  int64_t cur;                  /* page of the current fragment */
} pg_col;

/* Row ranges of row group rg still to read after page skipping: the residual is evaluated
** on every fragment between page boundaries of the filter columns (ColumnIndex min/max/null
** counts of the covering pages); the fragments it cannot rule out are kept, merged into
** ranges. Each range is then read by its own stream, which starts every column at its page
** holding the range's first row (dk_parquet_read row_start), so pages wholly inside skipped
** rows are never read. Only flat top-level columns take part; *n_out is -1 when nothing can
** be skipped (or the file has no page index): read the whole group. Otherwise
** out[0..2 * *n_out) are [start, end) pairs (none: every row skipped). */
static dk_status page_ranges(file_reader *r, int rg, int64_t num_rows, const struct ArrowSchema *fs,
                             const char *const *names, size_t nn, int64_t **out, int *n_out,
                             int64_t *pages_skipped, dk_error *err) {
  const scan_plan *plan = r->plan;
  const dk_allocator *a = plan->alloc;
  *out = NULL;
  *n_out = -1;
  *pages_skipped = 0;
  if (!plan->residual_bound || nn == 0) return DK_OK;
  pg_col *pc = dk__calloc(a, nn, sizeof *pc);
  DK_RETURN_IF(!pc, DK_NOMEM, err, "out of memory (page index)");
  dk_status st = DK_OK;
  int usable = 1, n_filter = 0;
  int64_t *fr = NULL;
  for (size_t i = 0; usable && !st && i < nn; i++) {
    int64_t j = -1;
    for (int64_t k = 0; k < fs->n_children; k++)
      if (!strcmp(fs->children[k]->name, names[i])) j = k;
    int leaf = j >= 0 && !fs->children[j]->n_children ? dk_parquet_column_index(r->pf, names[i]) : -1;
    if (leaf < 0) {
      usable = 0;
      break;
    }
    st = dk_parquet_page_index_read(&pc[i].pi, r->pf, rg, leaf, err);
    if (st == DK_NOT_FOUND) {
      st = DK_OK;
      usable = 0;
      break;
    }
    if (!st) st = dk_parquet_column_stats_get(&pc[i].cs, r->pf, rg, leaf, err);
    pc[i].ff = fs->children[j]->format;
  }
  for (size_t c = 0; usable && !st && c < plan->n_cols; c++) {
    if (plan->cols[c].is_partition) continue;
    int64_t j = dk_scan__find_child(fs, plan->cols[c].field, plan->mode);
    for (size_t i = 0; j >= 0 && i < nn; i++)
      if (!pc[i].field && !strcmp(fs->children[j]->name, names[i])) {
        pc[i].field = plan->cols[c].field;
        pc[i].key = stats_key(plan, plan->cols[c].field);
        n_filter++;
      }
  }
  if (!usable || st || !n_filter) goto done;
  /* fragments between the filter columns' page boundaries; fr collects the kept ranges */
  fr = dk__malloc(a, 2 * sizeof *fr);
  int64_t cap = 1, pos = 0;
  int nr = 0, any = 0;
  if (!fr) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
    goto done;
  }
  while (pos < num_rows) {
    int64_t end = num_rows;
    stats_acc acc;
    stats_acc_init(&acc, a);
    for (size_t i = 0; i < nn; i++) {
      if (!pc[i].field) continue;
      int64_t np = dk_parquet_page_index_num_pages(pc[i].pi);
      while (pc[i].cur + 1 < np && dk_parquet_page_index_page(pc[i].pi, pc[i].cur + 1)->first_row <= pos)
        pc[i].cur++;
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, pc[i].cur);
      end = DK_MIN(end, pg->first_row + pg->num_rows);
    }
    for (size_t i = 0; i < nn; i++) {
      if (!pc[i].field) continue;
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, pc[i].cur);
      dk_parquet_column_stats ps = pc[i].cs;
      ps.has_min_max = pg->has_min_max;
      ps.min = pg->min, ps.min_len = pg->min_len;
      ps.max = pg->max, ps.max_len = pg->max_len;
      /* null counts are per page: exact for a whole page, else only "none" or "all" carry */
      int whole = pg->first_row == pos && pg->first_row + pg->num_rows == end;
      ps.has_null_count = 0;
      if (pg->null_page) ps.has_null_count = 1, ps.null_count = end - pos;
      else if (pg->has_null_count && (whole || pg->null_count == 0))
        ps.has_null_count = 1, ps.null_count = pg->null_count;
      stats_acc_add(&acc, pc[i].field, pc[i].ff, pc[i].key, &ps);
    }
    bool skip = stats_acc_can_skip(&acc, plan, end - pos);
    stats_acc_dispose(&acc);
    if (skip) {
      any = 1;
    } else if (nr && fr[2 * nr - 1] == pos) {
      fr[2 * nr - 1] = end;
    } else {
      if (nr == cap) {
        int64_t *nf = dk__realloc(a, fr, (size_t)(4 * cap) * sizeof *fr);
        if (!nf) {
          st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
          goto done;
        }
        fr = nf;
        cap *= 2;
      }
      fr[2 * nr] = pos;
      fr[2 * nr + 1] = end;
      nr++;
    }
    pos = end;
  }
  if (!any) goto done;
  /* pages of the columns read that lie wholly outside the kept ranges are never read */
  for (size_t i = 0; i < nn; i++) {
    int k2 = 0;
    for (int64_t k = 0; k < dk_parquet_page_index_num_pages(pc[i].pi); k++) {
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, k);
      int64_t f0 = pg->first_row, f1 = pg->first_row + pg->num_rows;
      while (k2 < nr && fr[2 * k2 + 1] <= f0) k2++;
      *pages_skipped += !(k2 < nr && fr[2 * k2] < f1);
    }
  }
  *out = fr; /* nr == 0: every row skipped */
  *n_out = nr;
  fr = NULL;
done:
  for (size_t i = 0; i < nn; i++) dk_parquet_page_index_free(pc[i].pi);
  dk__free(a, pc);
  dk__free(a, fr);
  return st;
}

typedef struct path_list {
  const char **v;
  size_t n, cap;
} path_list;

static dk_status path_push(path_list *l, const char *p, const dk_allocator *a, dk_error *err) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 16;
    const char **nv = dk__realloc(a, (void *)l->v, nc * sizeof *nv);
    DK_RETURN_IF(!nv, DK_NOMEM, err, "out of memory (scan)");
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = p;
  return DK_OK;
}

/* Dotted physical paths of the file's columns that a pruned struct type needs (nested
** projection pushed into the Parquet reader). */
static dk_status add_leaf_paths(path_list *l, dk_arena *ar, const struct ArrowSchema *fs,
                                const dk_type *t, dk_column_mapping_mode mode, const char *prefix,
                                const dk_allocator *a, dk_error *err) {
  for (size_t i = 0; i < t->n_fields; i++) {
    int64_t j = dk_scan__find_child(fs, &t->fields[i], mode);
    if (j < 0) continue;
    size_t pl = strlen(prefix), cl = strlen(fs->children[j]->name);
    char *path = dk__arena_alloc(ar, pl + cl + 2, err);
    if (!path) return DK_NOMEM;
    memcpy(path, prefix, pl);
    path[pl] = '.';
    memcpy(path + pl + 1, fs->children[j]->name, cl + 1);
    if (t->fields[i].type->id == DK_TYPE_STRUCT && !strcmp(fs->children[j]->format, "+s")) {
      size_t before = l->n;
      DK_RETURN_NOT_OK(add_leaf_paths(l, ar, fs->children[j], t->fields[i].type, mode, path, a, err));
      if (l->n > before) continue;
    }
    DK_RETURN_NOT_OK(path_push(l, path, a, err));
  }
  return DK_OK;
}

/* Opens the stream of the next row group in the task's range; *done = 1 when none is left. */
static dk_status open_next_rg(file_reader *r, int *done, dk_error *err) {
  const scan_plan *plan = r->plan;
  const scan_task *t = r->task;
  *done = 0;
  for (;;) {
    if (r->has_stream) {
      r->stream.release(&r->stream);
      r->has_stream = 0;
    }
    int rg, is_range = 0;
    int64_t rs = 0, re = 0;
    dk_parquet_row_group_info info;
    struct ArrowSchema fs;
    if (r->range_pos < r->n_ranges) {
      /* the next row range left by page skipping */
      rg = r->range_rg;
      rs = r->ranges[2 * r->range_pos];
      re = r->ranges[2 * r->range_pos + 1];
      r->range_pos++;
      is_range = 1;
      DK_RETURN_NOT_OK(dk_parquet_row_group(&info, r->pf, rg, err));
      r->rg_first_row = info.first_row;
      r->next_row = info.first_row + rs;
      DK_RETURN_NOT_OK(dk_parquet_schema(&fs, r->pf, err));
    } else {
      if (r->rg >= r->n_rg) {
        *done = 1;
        return DK_OK;
      }
      rg = r->rg++;
      DK_RETURN_NOT_OK(dk_parquet_row_group(&info, r->pf, rg, err));
      if (t->range_end > 0 && (info.start < t->range_start || info.start >= t->range_end)) continue;
      if (r->stats) stat_add(&r->stats->row_groups_total, 1);
      r->rg_first_row = r->next_row = info.first_row;
      if (info.num_rows == 0) continue;
      if (r->dv && dk_dv__range_cardinality(r->dv, info.first_row, info.num_rows) ==
                       (uint64_t)info.num_rows) {
        continue;
      }
      /* columns to read: those of the file that the output needs */
      DK_RETURN_NOT_OK(dk_parquet_schema(&fs, r->pf, err));
      if (plan->residual_bound && rg_can_skip(r, rg, info.num_rows, &fs)) {
        if (r->stats) stat_add(&r->stats->row_groups_skipped, 1);
        dk__schema_release(&fs);
        continue;
      }
    }
    path_list pl = {NULL, 0, 0};
    dk_arena par;
    dk__arena_init(&par, plan->alloc, 0);
    const char **names = NULL;
    size_t nn = 0, ntop = 0;
    dk_status pst = DK_OK;
    for (size_t c = 0; pst == DK_OK && c < plan->n_cols; c++) {
      r->col_src[c] = -1;
      if (plan->cols[c].is_partition) continue;
      int64_t j = dk_scan__find_child(&fs, plan->cols[c].field, plan->mode);
      if (j < 0) continue;
      size_t before = pl.n;
      if (plan->cols[c].pruned && !strcmp(fs.children[j]->format, "+s"))
        pst = add_leaf_paths(&pl, &par, fs.children[j], plan->cols[c].field->type, plan->mode,
                             fs.children[j]->name, plan->alloc, err);
      if (!pst && pl.n == before) pst = path_push(&pl, fs.children[j]->name, plan->alloc, err);
      r->col_src[c] = (int64_t)ntop++;
    }
    if (!pst) pst = path_push(&pl, NULL, plan->alloc, err); /* room for row tracking */
    if (!pst) pst = path_push(&pl, NULL, plan->alloc, err);
    if (pst) {
      dk__free(plan->alloc, pl.v);
      dk__arena_dispose(&par);
      dk__schema_release(&fs);
      return pst;
    }
    names = pl.v;
    nn = pl.n - 2;
    r->row_id_src = r->row_cv_src = -1;
    if ((plan->meta & DK_META_ROW_ID) && plan->row_id_col) {
      for (int64_t j = 0; j < fs.n_children; j++)
        if (!strcmp(fs.children[j]->name, plan->row_id_col)) {
          r->row_id_src = (int64_t)ntop++;
          names[nn++] = fs.children[j]->name;
        }
    }
    if ((plan->meta & DK_META_ROW_COMMIT_VERSION) && plan->row_cv_col) {
      for (int64_t j = 0; j < fs.n_children; j++)
        if (!strcmp(fs.children[j]->name, plan->row_cv_col)) {
          r->row_cv_src = (int64_t)ntop++;
          names[nn++] = fs.children[j]->name;
        }
    }
    if (!is_range && plan->residual_bound && nn > 0) {
      int64_t *rr = NULL, pskip = 0;
      int nr = -1;
      dk_status rst = page_ranges(r, rg, info.num_rows, &fs, names, nn, &rr, &nr, &pskip, err);
      if (rst || nr >= 0) {
        dk__free(plan->alloc, names);
        dk__arena_dispose(&par);
        dk__schema_release(&fs);
        DK_RETURN_NOT_OK(rst);
        if (r->stats) stat_add(&r->stats->pages_skipped, pskip);
        dk__free(plan->alloc, r->ranges);
        r->ranges = rr;
        r->n_ranges = nr;
        r->range_pos = 0;
        r->range_rg = rg;
        continue; /* open the first range left (none: every row was skipped) */
      }
    }
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    if (is_range) {
      ro.row_start = rs;
      ro.row_end = re;
    }
    ro.columns = names;
    ro.n_columns = nn;
    ro.row_groups = &rg;
    ro.n_row_groups = 1;
    ro.batch_size = plan->batch_size;
    if (r->want > 0 && !r->dv && !plan->residual_bound) ro.batch_size = DK_MIN(ro.batch_size, r->want);
    dk_status st = DK_OK;
    if (nn == 0) {
      /* nothing to decode: rows only */
      st = DK_OK;
    } else {
      st = dk_parquet_read(&r->stream, r->pf, &ro, err);
      if (!st) r->has_stream = 1;
    }
    dk__free(plan->alloc, names);
    dk__arena_dispose(&par);
    dk__schema_release(&fs);
    DK_RETURN_NOT_OK(st);
    if (!r->has_stream) {
      /* no file columns needed: emit the row group's rows as one batch per batch_size */
      r->has_stream = 0;
    } else if (!r->read_schema.release) {
      int rc = r->stream.get_schema(&r->stream, &r->read_schema);
      if (rc) return dk__error_set(err, DK_IO, "%s: %s", r->full_path,
                                   r->stream.get_last_error(&r->stream));
    }
    r->rg_end_row = info.first_row + (is_range ? re : info.num_rows);
    r->in_rg = 1;
    return DK_OK;
  }
}

/* A constant array of m copies of a partition value. */
static dk_status constant_array(struct ArrowArray *out, const struct ArrowSchema *s,
                                const dk_scalar *v, int64_t m, const dk_allocator *a,
                                dk_error *err) {
  if (v->is_null) return dk_scan__null_array(out, s, m, a, err);
  dk_arr b;
  DK_RETURN_NOT_OK(dk__arr_init_from_schema(&b, s, a, err));
  dk_status st = dk__arr_reserve(&b, m, err);
  uint8_t val[16];
  int w = dk__atype_width(&b.type);
  memset(val, 0, sizeof val);
  switch (v->type) {
    case DK_TYPE_DECIMAL:
      memcpy(val, &v->dec_lo, 8);
      memcpy(val + 8, &v->dec_hi, 8);
      break;
    case DK_TYPE_FLOAT: {
      float f = (float)v->f64;
      memcpy(val, &f, 4);
      break;
    }
    case DK_TYPE_DOUBLE: memcpy(val, &v->f64, 8); break;
    default: {
      int64_t x = v->i64; /* integers, date, timestamps: little-endian truncation */
      memcpy(val, &x, 8);
      if (w == 1) { int8_t y = (int8_t)x; memcpy(val, &y, 1); }
      else if (w == 2) { int16_t y = (int16_t)x; memcpy(val, &y, 2); }
      else if (w == 4) { int32_t y = (int32_t)x; memcpy(val, &y, 4); }
    }
  }
  if (st) {
    /* fall through to cleanup */
  } else if (v->type == DK_TYPE_STRING || v->type == DK_TYPE_BINARY) {
    int64_t len = (int64_t)v->len;
    if (len * m > INT32_MAX) {
      st = dk__error_set(err, DK_UNSUPPORTED, "scan: partition value too long for one batch");
    } else {
      st = dk__abuf_reserve(&b.data, a, len * m, err);
      int32_t *o = (int32_t *)(b.values.data + b.values.len);
      for (int64_t k = 0; !st && k < m; k++) {
        if (len) memcpy(b.data.data + b.data.len, v->str, (size_t)len);
        b.data.len += len;
        o[k] = (int32_t)b.data.len;
      }
      if (!st) {
        b.values.len += 4 * m;
        dk__arr_advance(&b, m, 0);
      }
    }
  } else if (v->type == DK_TYPE_BOOLEAN) {
    if (v->i64) memset(b.values.data, 0xff, (size_t)((m + 7) / 8));
    b.values.len = (m + 7) / 8;
    dk__arr_advance(&b, m, 0);
  } else if (w > 0) {
    for (int64_t k = 0; k < m; k++) memcpy(b.values.data + (int64_t)w * k, val, (size_t)w);
    b.values.len = (int64_t)w * m;
    dk__arr_advance(&b, m, 0);
  } else {
    st = dk__error_set(err, DK_UNSUPPORTED, "scan: cannot materialise partition type %d",
                       (int)v->type);
  }
  if (!st) st = dk__arr_finish(&b, out, err);
  dk__arr_reset(&b);
  return st;
}

/* Reads row `pos` of an int64-like column (any integer width); *valid = 0 for nulls. */
static int64_t column_int(const struct ArrowArray *c, const struct ArrowSchema *s, int64_t pos,
                          int *valid) {
  int64_t p = c->offset + pos;
  if (c->null_count != 0 && c->buffers[0] && !dk__bit_get(c->buffers[0], p)) {
    *valid = 0;
    return 0;
  }
  *valid = 1;
  switch (s->format[0]) {
    case 'c': return ((const int8_t *)c->buffers[1])[p];
    case 's': return ((const int16_t *)c->buffers[1])[p];
    case 'i': return ((const int32_t *)c->buffers[1])[p];
    default: return ((const int64_t *)c->buffers[1])[p];
  }
}

/* The _metadata struct for m output rows; rows[k] = physical row index in the file of row k,
** pos[k] = its position in the decoded batch b. */
static dk_status metadata_array(struct ArrowArray *out, file_reader *r, const struct ArrowArray *b,
                                const int64_t *rows, const int64_t *pos, int64_t m,
                                dk_error *err) {
  const scan_plan *plan = r->plan;
  const scan_task *t = r->task;
  const dk_allocator *a = plan->alloc;
  const struct ArrowSchema *ms = plan->out_schema.children[plan->n_out];
  dk_arr sb;
  DK_RETURN_NOT_OK(dk__arr_init_from_schema(&sb, ms, a, err));
  dk_status st = DK_OK;
  int k = 0;
  const char *fname = r->uri ? strrchr(r->uri, '/') : NULL; /* last segment of the URI */
  fname = fname ? fname + 1 : t->path;
  for (int bit = 0; st == DK_OK && bit < 9; bit++) {
    if (!((plan->meta >> bit) & 1)) continue;
    dk_arr *c = &sb.children[k++];
    st = dk__arr_reserve(c, m, err);
    for (int64_t i = 0; st == DK_OK && i < m; i++) {
      int valid = 0;
      int64_t v = 0;
      switch (1u << bit) {
        case DK_META_FILE_PATH: st = dk__arr_append_bytes(c, r->uri, (int64_t)strlen(r->uri), err); continue;
        case DK_META_FILE_NAME: st = dk__arr_append_bytes(c, fname, (int64_t)strlen(fname), err); continue;
        case DK_META_FILE_SIZE: v = t->size; break;
        case DK_META_FILE_BLOCK_START: v = t->range_end > 0 ? t->range_start : 0; break;
        case DK_META_FILE_BLOCK_LENGTH:
          v = t->range_end > 0 ? DK_MIN(t->range_end, t->size) - t->range_start : t->size;
          break;
        case DK_META_FILE_MODIFICATION_TIME: v = t->mtime * 1000; break;
        case DK_META_ROW_INDEX: v = rows[i]; break;
        case DK_META_ROW_ID:
          if (r->row_id_src >= 0)
            v = column_int(b->children[r->row_id_src], r->read_schema.children[r->row_id_src],
                           b->offset + pos[i], &valid);
          if (!valid) {
            if (!t->has_base_row_id) {
              st = dk__error_set(err, DK_CORRUPT, "%s: row tracking is enabled but the file has "
                                 "no baseRowId", t->path);
              continue;
            }
            v = t->base_row_id + rows[i];
          }
          break;
        default: /* DK_META_ROW_COMMIT_VERSION */
          if (r->row_cv_src >= 0)
            v = column_int(b->children[r->row_cv_src], r->read_schema.children[r->row_cv_src],
                           b->offset + pos[i], &valid);
          if (!valid) {
            if (!t->has_default_rcv) {
              st = dk__error_set(err, DK_CORRUPT, "%s: row tracking is enabled but the file has "
                                 "no defaultRowCommitVersion", t->path);
              continue;
            }
            v = t->default_rcv;
          }
          break;
      }
      st = dk__arr_append_int(c, v, err);
    }
  }
  if (!st) {
    dk__arr_advance(&sb, m, 0);
    st = dk__arr_finish(&sb, out, err);
  }
  dk__arr_reset(&sb);
  return st;
}

static void noop_release(struct ArrowArray *a) { a->release = NULL; }

static dk_status ensure_scratch(file_reader *r, int64_t n, dk_error *err) {
  if (n <= r->scratch_cap) return DK_OK;
  const dk_allocator *a = r->plan->alloc;
  dk__free(a, r->idx);
  dk__free(a, r->keep);
  dk__free(a, r->mask);
  r->idx = dk__malloc(a, (size_t)n * sizeof *r->idx);
  r->keep = dk__malloc(a, (size_t)n);
  r->mask = dk__malloc(a, (size_t)n);
  r->scratch_cap = r->idx && r->keep && r->mask ? n : 0;
  DK_RETURN_IF(!r->scratch_cap, DK_NOMEM, err, "out of memory (scan selection)");
  return DK_OK;
}

/* Produces the next non-empty output batch of the file; out->release == NULL at its end.
** *remaining: rows still wanted (< 0: no limit); decremented. */
static dk_status file_reader_next(file_reader *r, struct ArrowArray *out, int64_t *remaining,
                                  dk_error *err) {
  const scan_plan *plan = r->plan;
  const dk_allocator *a = plan->alloc;
  out->release = NULL;
  for (;;) {
    if (*remaining == 0) return DK_OK;
    if (!r->in_rg) {
      int done;
      r->want = *remaining;
      DK_RETURN_NOT_OK(open_next_rg(r, &done, err));
      if (done) return DK_OK;
    }
    struct ArrowArray b;
    memset(&b, 0, sizeof b);
    int64_t n;
    if (r->has_stream) {
      int rc = r->stream.get_next(&r->stream, &b);
      if (rc) {
        const char *m = r->stream.get_last_error(&r->stream);
        return dk__error_set(err, rc == ENOMEM ? DK_NOMEM : DK_CORRUPT, "%s", m ? m : "read error");
      }
      if (!b.release) {
        r->in_rg = 0;
        continue;
      }
      n = b.length;
    } else {
      n = DK_MIN(plan->batch_size, r->rg_end_row - r->next_row);
      if (n <= 0) {
        r->in_rg = 0;
        continue;
      }
    }
    int64_t first = r->next_row;
    r->next_row += n;
    if (r->stats) stat_add(&r->stats->rows_decoded, n);
    dk_status st = ensure_scratch(r, n, err);
    if (st) {
      dk__array_release(&b);
      return st;
    }
    /* every column the batch needs, n rows each (partition and missing columns only when
    ** the residual filter reads them; otherwise they are built after selection) */
    const int64_t nc = (int64_t)plan->n_cols;
    const int64_t nch = (int64_t)plan->n_out + (plan->meta ? 1 : 0);
    struct ArrowArray *full = dk__calloc(a, (size_t)(nc ? nc : 1), sizeof *full);
    struct ArrowArray *ch = dk__calloc(a, (size_t)(nch ? nch : 1), sizeof *ch);
    if (!full || !ch) {
      dk__free(a, full);
      dk__free(a, ch);
      dk__array_release(&b);
      return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    }
    const int filtering = plan->residual_bound != NULL;
    for (int64_t c = 0, pk = 0; st == DK_OK && c < nc; c++) {
      const struct ArrowSchema *ts = plan->read_schema.children[c];
      if (plan->cols[c].is_partition) {
        if (filtering) st = constant_array(&full[c], ts, &r->pscalars[pk], n, a, err);
        pk++;
        continue;
      }
      int64_t j = r->col_src[c];
      if (j < 0) {
        if (filtering) st = dk_scan__null_array(&full[c], ts, n, a, err);
        continue;
      }
      struct ArrowArray src;
      dk__array_move(b.children[j], &src);
      st = dk_scan__conform(&full[c], plan->cols[c].field->type, ts, plan->mode,
                            r->read_schema.children[j], &src, a, err);
    }
    /* selection: deletion vector, then the residual filter */
    int have_keep = 0;
    if (st == DK_OK && r->dv && dk_dv__range_cardinality(r->dv, first, n) > 0) {
      memset(r->keep, 1, (size_t)n);
      uint64_t del = dk_dv__fill_selection(r->dv, first, n, r->keep);
      if (r->stats) stat_add(&r->stats->rows_deleted, (int64_t)del);
      have_keep = 1;
    }
    if (st == DK_OK && filtering) {
      struct ArrowArray **ptrs = dk__calloc(a, (size_t)(nc ? nc : 1), sizeof *ptrs);
      if (!ptrs) st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
      for (int64_t c = 0; ptrs && c < nc; c++) ptrs[c] = &full[c];
      struct ArrowArray view;
      memset(&view, 0, sizeof view);
      const void *vb[1] = {NULL};
      view.length = n;
      view.n_buffers = 1;
      view.buffers = vb;
      view.n_children = nc;
      view.children = ptrs;
      view.release = noop_release;
      int64_t sel = 0;
      if (!st)
        st = dk_expr_eval_filter(r->mask, &sel, plan->residual_bound, &plan->read_schema, &view,
                                 err);
      dk__free(a, ptrs);
      if (!st) {
        int64_t before = have_keep ? 0 : n, after = 0;
        if (have_keep) {
          for (int64_t k = 0; k < n; k++) before += r->keep[k];
          for (int64_t k = 0; k < n; k++) r->keep[k] &= r->mask[k];
        } else {
          memcpy(r->keep, r->mask, (size_t)n);
        }
        for (int64_t k = 0; k < n; k++) after += r->keep[k];
        if (r->stats) stat_add(&r->stats->rows_filtered, before - after);
        have_keep = 1;
      }
    }
    int64_t m = 0;
    if (have_keep) {
      for (int64_t k = 0; k < n; k++) {
        r->idx[m] = k;
        m += r->keep[k];
      }
    } else {
      for (int64_t k = 0; k < n; k++) r->idx[k] = k;
      m = n;
    }
    const int dense = m == n && b.offset == 0;
    if (*remaining >= 0 && m > *remaining) m = *remaining;
    int64_t c = 0;
    if (st == DK_OK && m > 0) {
      for (int64_t pk = 0; st == DK_OK && c < (int64_t)plan->n_out; c++) {
        const struct ArrowSchema *ts = plan->out_schema.children[c];
        int part = plan->cols[c].is_partition;
        if (!full[c].release) {
          if (part) st = constant_array(&ch[c], ts, &r->pscalars[pk], m, a, err);
          else st = dk_scan__null_array(&ch[c], ts, m, a, err);
        } else if (plan->cols[c].out_field) {
          /* read wider for the filter: select rows, then drop the fields not projected */
          const struct ArrowSchema *rs = plan->read_schema.children[c];
          struct ArrowArray sel;
          if (dense) dk__array_move(&full[c], &sel);
          else st = dk_scan__take(&sel, rs, &full[c], r->idx, m, a, err);
          if (!st) st = dk_scan__project(&ch[c], ts, rs, &sel, a, err);
        } else if (dense) {
          dk__array_move(&full[c], &ch[c]);
        } else {
          st = dk_scan__take(&ch[c], ts, &full[c], r->idx, m, a, err);
        }
        pk += part;
      }
    }
    for (int64_t k = 0; k < nc; k++) dk__array_release(&full[k]);
    dk__free(a, full);
    if (st == DK_OK && m == 0) {
      dk__free(a, ch);
      dk__array_release(&b);
      continue;
    }
    if (st == DK_OK && plan->meta) {
      int64_t *rows = dk__malloc(a, (size_t)m * sizeof *rows);
      if (!rows) st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
      for (int64_t k = 0; st == DK_OK && k < m; k++) rows[k] = first + r->idx[k];
      if (!st) st = metadata_array(&ch[c], r, &b, rows, r->idx, m, err);
      if (!st) c++;
      dk__free(a, rows);
    }
    dk__array_release(&b);
    if (st) {
      for (int64_t k = 0; k < c; k++) dk__array_release(&ch[k]);
      dk__free(a, ch);
      return st;
    }
    const void *nullbuf[1] = {NULL};
    st = dk__array_wrap(out, m, 0, 0, 1, nullbuf, nch, ch, NULL, NULL, a, err);
    dk__free(a, ch);
    DK_RETURN_NOT_OK(st);
    if (*remaining > 0) *remaining -= m;
    if (r->stats) stat_add(&r->stats->rows_returned, m);
    return DK_OK;
  }
}

/* ---- whole-scan stream --------------------------------------------------------------------- */

typedef struct scan_stream {
  dk_scan *scan;
  dk_storage *sto;
  int64_t next_file;
  int open;
  file_reader fr;
  scan_task task;
  dk_file_entry entry;
  int64_t remaining;
} scan_stream;

static void task_from_entry(scan_task *t, const dk_file_entry *f, const char *const *pvals) {
  memset(t, 0, sizeof *t);
  t->path = f->path;
  t->size = f->size;
  t->mtime = f->modification_time;
  t->pvals = pvals;
  t->dv = f->dv;
  t->has_base_row_id = f->has_base_row_id;
  t->base_row_id = f->base_row_id;
  t->has_default_rcv = f->has_default_row_commit_version;
  t->default_rcv = f->default_row_commit_version;
}

static dk_status scan_stream_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  scan_stream *s = state;
  return dk_scan_schema(out, s->scan, err);
}

static dk_status scan_stream_next(void *state, struct ArrowArray *out, dk_error *err) {
  scan_stream *s = state;
  dk_scan *scan = s->scan;
  out->release = NULL;
  for (;;) {
    if (s->remaining == 0) return DK_OK;
    if (!s->open) {
      if (s->next_file >= scan->n_files) return DK_OK;
      int64_t i = s->next_file++;
      DK_RETURN_NOT_OK(dk_snapshot_file(&s->entry, scan->snap, scan->files[i], err));
      task_from_entry(&s->task, &s->entry, scan->pvals + i * (int64_t)scan->n_part_out);
      dk_status st = file_reader_open(&s->fr, &scan->plan, &scan->stats, s->sto, &s->task, err);
      if (st) {
        file_reader_close(&s->fr);
        return st;
      }
      s->open = 1;
    }
    dk_status st = file_reader_next(&s->fr, out, &s->remaining, err);
    if (st) {
      dk__error_prefix(err, "%s", s->task.path);
      return st;
    }
    if (out->release) return DK_OK;
    file_reader_close(&s->fr);
    s->open = 0;
  }
}

static void scan_stream_release(void *state) {
  scan_stream *s = state;
  if (s->open) file_reader_close(&s->fr);
  if (s->sto) s->sto->free(s->sto);
  dk_scan *scan = s->scan;
  dk__free(scan->alloc, s);
  dk_scan_free(scan);
}

/* ---- multi-threaded whole-scan stream ------------------------------------------------------ */

/* Workers take files in turn and push finished batches into a bounded queue; the consumer
** pops them (file order is not kept across workers). */
typedef struct mt_stream {
  dk_scan *scan;
  int n_threads, started;
  pthread_t *tids;
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  struct ArrowArray *q;
  int cap, head, count;
  int64_t next_file;  /* next work item */
  int64_t n_items;
  int64_t *items;     /* 3 per item: index into scan->files, range start, range end (0 = all) */
  dk_file_entry *entries; /* per scan file, fetched by the creating thread (the log keeps
                             decompressed stats in a thread-local cache, which worker
                             threads must not touch: it would leak at their exit) */
  int running;     /* workers still producing */
  int cancel;
  dk_error err;    /* first error */
} mt_stream;

static void mt_push(mt_stream *m, struct ArrowArray *a) {
  pthread_mutex_lock(&m->mu);
  while (m->count == m->cap && !m->cancel) pthread_cond_wait(&m->not_full, &m->mu);
  if (m->cancel) {
    pthread_mutex_unlock(&m->mu);
    dk__array_release(a);
    return;
  }
  dk__array_move(a, &m->q[(m->head + m->count) % m->cap]);
  m->count++;
  pthread_cond_signal(&m->not_empty);
  pthread_mutex_unlock(&m->mu);
}

static void *mt_worker(void *arg) {
  mt_stream *m = arg;
  dk_scan *scan = m->scan;
  dk_error err;
  dk_error_init(&err);
  dk_storage *sto = NULL;
  dk_status st = dk_storage_local_new(&sto, scan->alloc, &err);
  while (!st) {
    pthread_mutex_lock(&m->mu);
    int64_t it = m->cancel ? m->n_items : m->next_file++;
    pthread_mutex_unlock(&m->mu);
    if (it >= m->n_items) break;
    int64_t i = m->items[3 * it];
    scan_task t;
    file_reader fr;
    task_from_entry(&t, &m->entries[i], scan->pvals + i * (int64_t)scan->n_part_out);
    t.range_start = m->items[3 * it + 1];
    t.range_end = m->items[3 * it + 2];
    st = file_reader_open(&fr, &scan->plan, &scan->stats, sto, &t, &err);
    int64_t remaining = -1;
    while (!st) {
      struct ArrowArray a;
      st = file_reader_next(&fr, &a, &remaining, &err);
      if (st || !a.release) break;
      mt_push(m, &a);
    }
    if (st) dk__error_prefix(&err, "%s", t.path);
    file_reader_close(&fr);
  }
  if (sto) sto->free(sto);
  pthread_mutex_lock(&m->mu);
  if (st && m->err.code == DK_OK) m->err = err;
  m->running--;
  pthread_cond_broadcast(&m->not_empty);
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

static dk_status mt_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  mt_stream *m = state;
  return dk_scan_schema(out, m->scan, err);
}

static dk_status mt_next(void *state, struct ArrowArray *out, dk_error *err) {
  mt_stream *m = state;
  out->release = NULL;
  pthread_mutex_lock(&m->mu);
  while (m->count == 0 && m->running > 0 && m->err.code == DK_OK)
    pthread_cond_wait(&m->not_empty, &m->mu);
  dk_status st = DK_OK;
  if (m->err.code != DK_OK) {
    st = dk__error_set(err, m->err.code, "%s", m->err.message);
  } else if (m->count > 0) {
    dk__array_move(&m->q[m->head], out);
    m->head = (m->head + 1) % m->cap;
    m->count--;
    pthread_cond_signal(&m->not_full);
  }
  pthread_mutex_unlock(&m->mu);
  return st;
}

static void mt_release(void *state) {
  mt_stream *m = state;
  pthread_mutex_lock(&m->mu);
  m->cancel = 1;
  pthread_cond_broadcast(&m->not_full);
  pthread_mutex_unlock(&m->mu);
  for (int i = 0; i < m->started; i++) pthread_join(m->tids[i], NULL);
  while (m->count > 0) {
    dk__array_release(&m->q[m->head]);
    m->head = (m->head + 1) % m->cap;
    m->count--;
  }
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->not_empty);
  pthread_cond_destroy(&m->not_full);
  dk_scan *scan = m->scan;
  dk__free(scan->alloc, m->q);
  dk__free(scan->alloc, m->tids);
  dk__free(scan->alloc, m->items);
  dk__free(scan->alloc, m->entries);
  dk__free(scan->alloc, m);
  dk_scan_free(scan);
}

/* Work items for the reader threads: whole files, and files larger than MT_CHUNK (or the
** split target when smaller) cut into
** byte ranges (row groups by start offset) so one big file also spreads over the threads. */
#define MT_CHUNK ((int64_t)16 << 20)

static dk_status mt_items(int64_t **out, int64_t *n, const dk_scan *scan, dk_error *err) {
  int64_t cap = 0;
  const int64_t C = DK_MIN(MT_CHUNK, scan->split_target);
  *out = NULL;
  *n = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t i = 0; i < scan->n_files; i++) {
      dk_file_entry f;
      DK_RETURN_NOT_OK(dk_snapshot_file(&f, scan->snap, scan->files[i], err));
      int64_t k = f.size > C ? (f.size + C - 1) / C : 1;
      for (int64_t j = 0; j < k; j++) {
        if (pass == 0) {
          cap++;
          continue;
        }
        int64_t *it = &(*out)[3 * (*n)++];
        it[0] = i;
        it[1] = k > 1 ? j * C : 0;
        it[2] = k > 1 ? (j + 1 == k ? f.size + 1 : (j + 1) * C) : 0;
      }
    }
    if (pass == 0) {
      *out = dk__calloc(scan->alloc, (size_t)(cap ? cap : 1) * 3, sizeof **out);
      DK_RETURN_IF(!*out, DK_NOMEM, err, "out of memory (scan)");
    }
  }
  return DK_OK;
}

static dk_status mt_read(struct ArrowArrayStream *out, dk_scan *scan, int threads, int64_t *items,
                         int64_t n_items, dk_error *err) {
  mt_stream *m = dk__calloc(scan->alloc, 1, sizeof *m);
  if (!m) {
    dk__free(scan->alloc, items);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  __atomic_add_fetch(&scan->refs, 1, __ATOMIC_RELAXED);
  m->scan = scan;
  m->items = items;
  m->n_items = n_items;
  m->entries = dk__calloc(scan->alloc, (size_t)(scan->n_files ? scan->n_files : 1),
                          sizeof *m->entries);
  for (int64_t i = 0; m->entries && i < scan->n_files; i++) {
    dk_status est = dk_snapshot_file(&m->entries[i], scan->snap, scan->files[i], err);
    if (est) {
      m->n_threads = 0;
      pthread_mutex_init(&m->mu, NULL);
      pthread_cond_init(&m->not_empty, NULL);
      pthread_cond_init(&m->not_full, NULL);
      mt_release(m);
      return est;
    }
    m->entries[i].stats = NULL; /* not valid outside this thread */
  }
  m->n_threads = threads;
  m->cap = 2 * threads;
  m->q = dk__calloc(scan->alloc, (size_t)m->cap, sizeof *m->q);
  m->tids = dk__calloc(scan->alloc, (size_t)threads, sizeof *m->tids);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->not_empty, NULL);
  pthread_cond_init(&m->not_full, NULL);
  if (!m->q || !m->tids || !m->entries) {
    mt_release(m);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < threads; i++) {
    m->running++;
    if (pthread_create(&m->tids[m->started], NULL, mt_worker, m) == 0) m->started++;
    else m->running--;
  }
  int started = m->started;
  pthread_mutex_unlock(&m->mu);
  if (!started) {
    mt_release(m);
    return dk__error_set(err, DK_IO, "scan: cannot start reader threads");
  }
  static const dk_stream_impl impl = {mt_schema, mt_next, mt_release};
  return dk__stream_init(out, &impl, m, scan->alloc, err);
}

dk_status dk_scan_read(struct ArrowArrayStream *out, dk_scan *scan, dk_error *err) {
  if (scan->threads > 1 && scan->plan.limit < 0 && scan->n_files > 0) {
    int64_t *items, n;
    DK_RETURN_NOT_OK(mt_items(&items, &n, scan, err));
    if (n > 1) return mt_read(out, scan, (int)DK_MIN(scan->threads, n), items, n, err);
    dk__free(scan->alloc, items);
  }
  scan_stream *s = dk__calloc(scan->alloc, 1, sizeof *s);
  DK_RETURN_IF(!s, DK_NOMEM, err, "out of memory (scan)");
  __atomic_add_fetch(&scan->refs, 1, __ATOMIC_RELAXED);
  s->scan = scan;
  s->remaining = scan->plan.limit;
  dk_status st = dk_storage_local_new(&s->sto, scan->alloc, err);
  if (st) {
    dk__free(scan->alloc, s);
    dk_scan_free(scan);
    return st;
  }
  static const dk_stream_impl impl = {scan_stream_schema, scan_stream_next, scan_stream_release};
  return dk__stream_init(out, &impl, s, scan->alloc, err);
}

/* ---- splits ------------------------------------------------------------------------------- */

dk_status dk_scan_plan_splits(dk_scan *scan, dk_error *err) {
  if (scan->splits) return DK_OK;
  const int64_t T = scan->split_target;
  int64_t np = 0;
  for (int64_t i = 0; i < scan->n_files; i++) {
    dk_file_entry f;
    DK_RETURN_NOT_OK(dk_snapshot_file(&f, scan->snap, scan->files[i], err));
    np += f.size > T ? (f.size + T - 1) / T : 1;
  }
  scan->pieces = dk__calloc(scan->alloc, (size_t)(np ? np : 1) * 3, sizeof *scan->pieces);
  scan->splits = dk__calloc(scan->alloc, (size_t)(np ? np : 1) * 2, sizeof *scan->splits);
  DK_RETURN_IF(!scan->pieces || !scan->splits, DK_NOMEM, err, "out of memory (splits)");
  /* byte ranges of at most T bytes (a reader takes the row groups that start inside its
  ** range), packed next-fit in file order like Spark's FilePartition.getFilePartitions */
  int64_t cur = 0;
  scan->n_pieces = scan->n_splits = 0;
  for (int64_t i = 0; i < scan->n_files; i++) {
    dk_file_entry f;
    DK_RETURN_NOT_OK(dk_snapshot_file(&f, scan->snap, scan->files[i], err));
    int64_t start = 0;
    do {
      int64_t len = DK_MIN(T, f.size - start);
      if (len < 0) len = 0;
      if (scan->n_splits == 0 || cur + len > T) {
        scan->splits[2 * scan->n_splits] = scan->n_pieces;
        scan->splits[2 * scan->n_splits + 1] = 0;
        scan->n_splits++;
        cur = 0;
      }
      int64_t *pc = &scan->pieces[3 * scan->n_pieces++];
      pc[0] = i;
      pc[1] = start;
      pc[2] = f.size > T ? start + len : 0; /* 0: the whole file */
      scan->splits[2 * (scan->n_splits - 1) + 1]++;
      cur += len + scan->open_cost;
      start += len;
    } while (start < f.size);
  }
  return DK_OK;
}

int64_t dk_scan_num_splits(const dk_scan *scan) { return scan->n_splits; }

/* Split wire format (little endian): "DKSPLIT1", then strings as u32 length + bytes
** (0xffffffff = NULL) and integers as i64:
**   root, schemaString, mode, n_cols, {name, is_partition} * n_cols, n_out,
**   meta (| SPLIT_SKIP_CRC when page checksums are not verified), limit,
**   batch_size, residual text (NULL = none), row-id column, row-commit-version column,
**   n_part, n_pieces, per piece: path, size, mtime, n_part partition texts, has_dv
**   [storage type, path, offset, size, cardinality], has_base_row_id, base_row_id,
**   has_default_rcv, default_rcv, range_start, range_end. */
#define SPLIT_MAGIC "DKSPLIT1"
#define SPLIT_SKIP_CRC ((int64_t)1 << 32)

static dk_status put_i64(dk_buf *b, int64_t v, dk_error *err) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++) x[i] = (uint8_t)((uint64_t)v >> (8 * i));
  return dk__buf_append(b, x, 8, err);
}

static dk_status put_str(dk_buf *b, const char *s, dk_error *err) {
  uint32_t n = s ? (uint32_t)strlen(s) : 0xffffffffu;
  uint8_t x[4];
  for (int i = 0; i < 4; i++) x[i] = (uint8_t)(n >> (8 * i));
  DK_RETURN_NOT_OK(dk__buf_append(b, x, 4, err));
  return s ? dk__buf_append(b, s, n, err) : DK_OK;
}

dk_status dk_scan_split_serialize(uint8_t **out, size_t *len, const dk_scan *scan, int64_t i,
                                  dk_error *err) {
  *out = NULL;
  *len = 0;
  DK_RETURN_IF(i < 0 || i >= scan->n_splits, DK_INVALID, err,
               "scan: split %" PRId64 " out of range (plan splits first)", i);
  const scan_plan *p = &scan->plan;
  const dk_metadata *md = dk_snapshot_metadata(scan->snap);
  dk_buf b;
  dk__buf_init(&b, NULL);
  char *res = NULL;
  dk_status st = dk__buf_append(&b, SPLIT_MAGIC, 8, err);
  if (!st) st = put_str(&b, p->root, err);
  if (!st) st = put_str(&b, md->schema_string ? md->schema_string
                                              : "{\"type\":\"struct\",\"fields\":[]}", err);
  if (!st) st = put_i64(&b, p->mode, err);
  if (!st) st = put_i64(&b, (int64_t)p->n_pcols, err);
  for (size_t c = 0; !st && c < p->n_pcols; c++) st = put_str(&b, p->pcols[c], err);
  if (!st) st = put_i64(&b, p->n_req, err);
  for (int64_t c = 0; !st && c < p->n_req; c++) st = put_str(&b, p->req[c], err);
  if (!st) st = put_i64(&b, (int64_t)(p->n_cols - p->n_out), err);
  for (size_t c = p->n_out; !st && c < p->n_cols; c++) st = put_str(&b, p->cols[c].field->name, err);
  if (!st) st = put_i64(&b, p->meta | (p->skip_page_crc ? SPLIT_SKIP_CRC : 0), err);
  if (!st) st = put_i64(&b, p->limit, err);
  if (!st) st = put_i64(&b, p->batch_size, err);
  if (!st && p->residual_bound) st = dk_expr_to_string(&res, p->residual, err);
  if (!st) st = put_str(&b, res, err);
  if (!st) st = put_str(&b, p->row_id_col, err);
  if (!st) st = put_str(&b, p->row_cv_col, err);
  if (!st) st = put_i64(&b, (int64_t)scan->n_part_out, err);
  int64_t first = scan->splits[2 * i], n = scan->splits[2 * i + 1];
  if (!st) st = put_i64(&b, n, err);
  for (int64_t k = first; !st && k < first + n; k++) {
    const int64_t *pc = &scan->pieces[3 * k];
    dk_file_entry f;
    st = dk_snapshot_file(&f, scan->snap, scan->files[pc[0]], err);
    if (!st) st = put_str(&b, f.path, err);
    if (!st) st = put_i64(&b, f.size, err);
    if (!st) st = put_i64(&b, f.modification_time, err);
    for (size_t q = 0; !st && q < scan->n_part_out; q++)
      st = put_str(&b, scan->pvals[pc[0] * (int64_t)scan->n_part_out + (int64_t)q], err);
    if (!st) st = put_i64(&b, f.dv != NULL, err);
    if (!st && f.dv) {
      char ty[2] = {f.dv->storage_type, 0};
      st = put_str(&b, ty, err);
      if (!st) st = put_str(&b, f.dv->path_or_inline_dv, err);
      if (!st) st = put_i64(&b, f.dv->offset, err);
      if (!st) st = put_i64(&b, f.dv->size_in_bytes, err);
      if (!st) st = put_i64(&b, f.dv->cardinality, err);
    }
    if (!st) st = put_i64(&b, f.has_base_row_id, err);
    if (!st) st = put_i64(&b, f.base_row_id, err);
    if (!st) st = put_i64(&b, f.has_default_row_commit_version, err);
    if (!st) st = put_i64(&b, f.default_row_commit_version, err);
    if (!st) st = put_i64(&b, pc[1], err);
    if (!st) st = put_i64(&b, pc[2], err);
  }
  if (res) dk_expr_string_free(res);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *out = malloc(b.len ? b.len : 1);
  if (!*out) {
    dk__buf_dispose(&b);
    return dk__error_set(err, DK_NOMEM, "out of memory (split)");
  }
  memcpy(*out, b.data, b.len);
  *len = b.len;
  dk__buf_dispose(&b);
  return DK_OK;
}

/* ---- reading a serialized split -------------------------------------------------------------- */

typedef struct rd {
  const uint8_t *p;
  size_t len, pos;
  dk_arena *ar;
  dk_error *err;
} rd;

static dk_status get_i64(rd *r, int64_t *v) {
  if (r->len - r->pos < 8)
    return dk__error_set(r->err, DK_CORRUPT, "split: truncated at byte %zu", r->pos);
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
  r->pos += 8;
  *v = (int64_t)x;
  return DK_OK;
}

static dk_status get_count(rd *r, int64_t *v, int64_t max) {
  DK_RETURN_NOT_OK(get_i64(r, v));
  if (*v < 0 || *v > max)
    return dk__error_set(r->err, DK_CORRUPT, "split: count %" PRId64 " out of range at byte %zu",
                         *v, r->pos - 8);
  return DK_OK;
}

static dk_status get_str(rd *r, const char **out) {
  if (r->len - r->pos < 4)
    return dk__error_set(r->err, DK_CORRUPT, "split: truncated at byte %zu", r->pos);
  uint32_t n = 0;
  for (int i = 0; i < 4; i++) n |= (uint32_t)r->p[r->pos + (size_t)i] << (8 * i);
  r->pos += 4;
  if (n == 0xffffffffu) {
    *out = NULL;
    return DK_OK;
  }
  if (r->len - r->pos < n)
    return dk__error_set(r->err, DK_CORRUPT, "split: string of %u bytes overruns the split at byte %zu",
                         n, r->pos - 4);
  char *s = dk__arena_alloc(r->ar, (size_t)n + 1, r->err);
  if (!s) return DK_NOMEM;
  memcpy(s, r->p + r->pos, n);
  s[n] = 0;
  r->pos += n;
  *out = s;
  return DK_OK;
}

typedef struct split_stream {
  const dk_allocator *alloc;
  dk_pool *pool; /* plan.alloc, as in dk_scan */
  dk_arena ar;
  scan_plan plan;
  dk_storage *sto;
  int64_t n_tasks, next;
  scan_task *tasks;
  int open;
  file_reader fr;
  int64_t remaining;
} split_stream;

static void split_stream_free(split_stream *s) {
  if (s->open) file_reader_close(&s->fr);
  if (s->sto) s->sto->free(s->sto);
  plan_dispose(&s->plan);
  dk__pool_release(s->pool);
  dk__arena_dispose(&s->ar);
  dk__free(s->alloc, s);
}

static dk_status split_parse(split_stream *s, const uint8_t *bytes, size_t len, dk_error *err) {
  rd r = {bytes, len, 0, &s->ar, err};
  scan_plan *p = &s->plan;
  DK_RETURN_IF(len < 8 || memcmp(bytes, SPLIT_MAGIC, 8) != 0, DK_CORRUPT, err,
               "split: bad magic (not a dk split)");
  r.pos = 8;
  const char *root, *schema_text, *res_text;
  int64_t v, n_cols;
  DK_RETURN_NOT_OK(get_str(&r, &root));
  DK_RETURN_NOT_OK(get_str(&r, &schema_text));
  DK_RETURN_IF(!root || !schema_text, DK_CORRUPT, err, "split: missing root or schema");
  p->root = dk__strdup(p->alloc, root);
  DK_RETURN_IF(!p->root, DK_NOMEM, err, "out of memory (split)");
  const dk_type *schema;
  DK_RETURN_NOT_OK(dk_schema__parse(&schema, &s->ar, schema_text, strlen(schema_text), err));
  DK_RETURN_NOT_OK(get_count(&r, &v, 2));
  p->mode = (dk_column_mapping_mode)v;
  int64_t n_pc, n_req, n_hidden;
  DK_RETURN_NOT_OK(get_count(&r, &n_pc, (int64_t)schema->n_fields));
  p->pcols = dk__arena_alloc(&p->ar, (size_t)(n_pc ? n_pc : 1) * sizeof *p->pcols, err);
  if (!p->pcols) return DK_NOMEM;
  for (int64_t c = 0; c < n_pc; c++) {
    DK_RETURN_NOT_OK(get_str(&r, &p->pcols[c]));
    DK_RETURN_IF(!p->pcols[c], DK_CORRUPT, err, "split: null partition column name");
  }
  p->n_pcols = (size_t)n_pc;
  DK_RETURN_NOT_OK(get_i64(&r, &n_req));
  DK_RETURN_IF(n_req < -1 || n_req > (int64_t)(len / 4), DK_CORRUPT, err,
               "split: bad column count %" PRId64, n_req);
  const char **req = dk__arena_alloc(&p->ar, (size_t)(n_req > 0 ? n_req : 1) * sizeof *req, err);
  if (!req) return DK_NOMEM;
  for (int64_t c = 0; c < n_req; c++) {
    DK_RETURN_NOT_OK(get_str(&r, &req[c]));
    DK_RETURN_IF(!req[c], DK_CORRUPT, err, "split: null column name");
  }
  DK_RETURN_NOT_OK(get_count(&r, &n_hidden, (int64_t)schema->n_fields));
  n_cols = (n_req < 0 ? (int64_t)schema->n_fields : n_req) + n_hidden + 1;
  p->cols = dk__calloc(p->alloc, (size_t)n_cols, sizeof *p->cols);
  DK_RETURN_IF(!p->cols, DK_NOMEM, err, "out of memory (split)");
  dk_status cst = plan_add_columns(p, schema, req, n_req, err);
  if (cst) return cst == DK_NOT_FOUND ? dk__error_set(err, DK_CORRUPT, "split: bad columns") : cst;
  p->n_out = p->n_cols;
  for (int64_t c = 0; c < n_hidden; c++) {
    const char *name;
    DK_RETURN_NOT_OK(get_str(&r, &name));
    const dk_field *f = name ? dk_schema_find(schema, name) : NULL;
    DK_RETURN_IF(!f, DK_CORRUPT, err, "split: column '%s' is not in the schema", name ? name : "");
    p->cols[p->n_cols].field = f;
    p->cols[p->n_cols++].is_partition = is_partition_col(p, f->name);
  }
  size_t n_part = 0;
  for (size_t c = 0; c < p->n_cols; c++) n_part += (size_t)p->cols[c].is_partition;
  DK_RETURN_NOT_OK(get_i64(&r, &v));
  DK_RETURN_IF(v & ~(int64_t)(DK_META_ALL | SPLIT_SKIP_CRC), DK_CORRUPT, err,
               "split: unknown _metadata field bits");
  p->meta = (unsigned)(v & DK_META_ALL);
  p->skip_page_crc = (v & SPLIT_SKIP_CRC) != 0;
  DK_RETURN_NOT_OK(get_i64(&r, &p->limit));
  DK_RETURN_NOT_OK(get_count(&r, &p->batch_size, (int64_t)1 << 30));
  if (p->batch_size == 0) p->batch_size = 65536;
  DK_RETURN_NOT_OK(get_str(&r, &res_text));
  DK_RETURN_NOT_OK(get_str(&r, &p->row_id_col));
  DK_RETURN_NOT_OK(get_str(&r, &p->row_cv_col));
  if (res_text) {
    DK_RETURN_NOT_OK(dk_expr_parse(&p->residual, res_text, err));
    DK_RETURN_NOT_OK(add_filter_columns(p, p->residual, schema, 0, err));
  }
  DK_RETURN_NOT_OK(plan_build_schema(p, schema, err));
  if (p->residual)
    DK_RETURN_NOT_OK(dk_expr_bind(&p->residual_bound, p->residual, &p->read_schema, err));
  DK_RETURN_NOT_OK(get_count(&r, &v, (int64_t)n_part));
  DK_RETURN_IF((size_t)v != n_part, DK_CORRUPT, err, "split: partition column count mismatch");
  int64_t nt;
  DK_RETURN_NOT_OK(get_count(&r, &nt, (int64_t)(len / 64 + 1)));
  s->tasks = dk__arena_alloc(&s->ar, (size_t)(nt ? nt : 1) * sizeof *s->tasks, err);
  if (!s->tasks) return DK_NOMEM;
  memset(s->tasks, 0, (size_t)(nt ? nt : 1) * sizeof *s->tasks);
  for (int64_t k = 0; k < nt; k++) {
    scan_task *t = &s->tasks[k];
    DK_RETURN_NOT_OK(get_str(&r, &t->path));
    DK_RETURN_IF(!t->path, DK_CORRUPT, err, "split: file %" PRId64 " has no path", k);
    DK_RETURN_NOT_OK(get_i64(&r, &t->size));
    DK_RETURN_NOT_OK(get_i64(&r, &t->mtime));
    const char **pv = dk__arena_alloc(&s->ar, (n_part ? n_part : 1) * sizeof *pv, err);
    if (!pv) return DK_NOMEM;
    for (size_t q = 0; q < n_part; q++) DK_RETURN_NOT_OK(get_str(&r, &pv[q]));
    t->pvals = pv;
    DK_RETURN_NOT_OK(get_count(&r, &v, 1));
    if (v) {
      dk_dv_descriptor *d = dk__arena_alloc(&s->ar, sizeof *d, err);
      if (!d) return DK_NOMEM;
      const char *ty;
      DK_RETURN_NOT_OK(get_str(&r, &ty));
      DK_RETURN_NOT_OK(get_str(&r, &d->path_or_inline_dv));
      DK_RETURN_IF(!ty || strlen(ty) != 1 || !d->path_or_inline_dv, DK_CORRUPT, err,
                   "split: bad deletion vector of file %" PRId64, k);
      d->storage_type = ty[0];
      DK_RETURN_NOT_OK(get_i64(&r, &v));
      DK_RETURN_IF(v < -1 || v > INT32_MAX, DK_CORRUPT, err, "split: bad DV offset");
      d->offset = (int32_t)v;
      DK_RETURN_NOT_OK(get_count(&r, &v, INT32_MAX));
      d->size_in_bytes = (int32_t)v;
      DK_RETURN_NOT_OK(get_count(&r, &d->cardinality, INT64_MAX));
      t->dv = d;
    }
    DK_RETURN_NOT_OK(get_count(&r, &v, 1));
    t->has_base_row_id = (int)v;
    DK_RETURN_NOT_OK(get_i64(&r, &t->base_row_id));
    DK_RETURN_NOT_OK(get_count(&r, &v, 1));
    t->has_default_rcv = (int)v;
    DK_RETURN_NOT_OK(get_i64(&r, &t->default_rcv));
    DK_RETURN_NOT_OK(get_count(&r, &t->range_start, INT64_MAX));
    DK_RETURN_NOT_OK(get_count(&r, &t->range_end, INT64_MAX));
  }
  DK_RETURN_IF(r.pos != len, DK_CORRUPT, err, "split: %zu trailing bytes", len - r.pos);
  s->n_tasks = nt;
  s->remaining = p->limit;
  return DK_OK;
}

static dk_status split_stream_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  split_stream *s = state;
  return dk__schema_copy(out, &s->plan.out_schema, err);
}

static dk_status split_stream_next(void *state, struct ArrowArray *out, dk_error *err) {
  split_stream *s = state;
  out->release = NULL;
  for (;;) {
    if (s->remaining == 0) return DK_OK;
    if (!s->open) {
      if (s->next >= s->n_tasks) return DK_OK;
      const scan_task *t = &s->tasks[s->next++];
      dk_status st = file_reader_open(&s->fr, &s->plan, NULL, s->sto, t, err);
      if (st) {
        file_reader_close(&s->fr);
        return st;
      }
      s->open = 1;
    }
    dk_status st = file_reader_next(&s->fr, out, &s->remaining, err);
    if (st) {
      dk__error_prefix(err, "%s", s->fr.task->path);
      return st;
    }
    if (out->release) return DK_OK;
    file_reader_close(&s->fr);
    s->open = 0;
  }
}

static void split_stream_release(void *state) { split_stream_free(state); }

dk_status dk_split_read(struct ArrowArrayStream *out, const uint8_t *split, size_t len,
                        const dk_allocator *alloc, dk_error *err) {
  split_stream *s = dk__calloc(alloc, 1, sizeof *s);
  DK_RETURN_IF(!s, DK_NOMEM, err, "out of memory (split)");
  s->alloc = alloc;
  if (dk__pool_new(&s->pool, alloc, SCAN_POOL_CACHE, err) != DK_OK) {
    dk__free(alloc, s);
    return DK_NOMEM;
  }
  s->plan.alloc = dk__pool_allocator(s->pool);
  dk__arena_init(&s->ar, alloc, 0);
  dk__arena_init(&s->plan.ar, s->plan.alloc, 0);
  dk_status st = split_parse(s, split, len, err);
  if (!st) st = dk_storage_local_new(&s->sto, alloc, err);
  if (st) {
    split_stream_free(s);
    return st;
  }
  static const dk_stream_impl impl = {split_stream_schema, split_stream_next, split_stream_release};
  return dk__stream_init(out, &impl, s, alloc, err);
}
