/*
** dml.c — row-level DELETE, and the machinery UPDATE and MERGE share: touched files turned into
** deletion vectors or removals (delta-spark commands/DeleteCommand.scala,
** DMLWithDeletionVectorsHelper.scala; PROTOCOL.md "Deletion Vectors", "Add File and Remove
** File"; write-path.md §1.5, §4).
**
** DELETE, as delta-spark decides it:
**   1. no predicate, or one on partition columns only: the matching files are removed without
**      reading them (txn.filterFiles records the partition predicate); numDeletedRows comes from
**      their stats (numRecords minus DV cardinality) when every file has them;
**   2. otherwise the files the statistics cannot rule out are read (predicate columns only,
**      through the scan's single-file reader, which applies the file's current DV) and the
**      physical indexes of the matching rows collected. With deletion vectors writable
**      (feature + delta.enableDeletionVectors) each touched file gets remove(path, oldDV) +
**      add(path, oldDV ∪ matched) with its stats copied at tightBounds:false, one DV file per
**      commit holding every new DV; a file whose every row is gone is just removed. Without
**      DVs the touched files are rewritten with the rows the predicate does not make TRUE
**      (copy-on-write; dml_rewrite.c).
** The commit's operation is DELETE with {"predicate": "[\"<sql>\"]"} and DeleteCommand's
** operationMetrics as DeltaOperations.Delete.transformMetrics leaves them. Nothing matched: no
** commit (Spark's commitIfNeeded).
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "io/uri.h"
#include "log/paths.h"
#include "txn/dml_int.h"

int64_t dk_txn__dml_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dk_txn__dv_writable(const dk_txn *x) {
  return dk_txn__protocol_supports(&x->protocol, "deletionVectors") &&
         dk_txn__conf_true(&x->meta, "delta.enableDeletionVectors");
}

dk_status dk_txn__dml_init(dml_ctx *c, dk_txn *x, const dk_dml_options *o, dk_dml_metrics *m,
                           dk_dml_metrics *own, dk_error *err) {
  memset(c, 0, sizeof *c);
  DK_RETURN_IF(!x || !x->snap, DK_INVALID, err, "DML needs a transaction on an existing table");
  DK_RETURN_IF(o && o->version > DK_DML_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_dml_options version %u is newer than dk's %u", o->version,
               DK_DML_OPTIONS_VERSION);
  DK_RETURN_IF(m && m->version > DK_DML_METRICS_VERSION, DK_UNSUPPORTED, err,
               "dk_dml_metrics version %u is newer than dk's %u", m->version,
               DK_DML_METRICS_VERSION);
  c->x = x;
  c->alloc = x->alloc;
  if (o) c->o = *o;
  c->m = m ? m : own;
  unsigned v = c->m->version;
  memset(c->m, 0, sizeof *c->m);
  c->m->version = v ? v : DK_DML_METRICS_VERSION;
  c->use_dvs = c->o.deletion_vectors != DK_DML_DV_NEVER && dk_txn__dv_writable(x);
  c->t0_ms = dk_txn__dml_now_ms();
  dk__buf_init(&c->scratch, x->alloc);
  return DK_OK;
}

void dk_txn__dml_dispose(dml_ctx *c) {
  for (size_t i = 0; i < c->n_files; i++) dk_dv__builder_free(c->files[i].rows);
  dk__free(c->alloc, c->files);
  dk__buf_dispose(&c->scratch);
  memset(c, 0, sizeof *c);
}

dk_status dk_txn__dml_touch(dml_ctx *c, int64_t idx, int64_t num_records, const int64_t *rows,
                            int64_t n, dk_error *err) {
  if (c->n_files == c->cap_files) {
    size_t nc = c->cap_files ? 2 * c->cap_files : 16;
    dml_file *q = dk__realloc(c->alloc, c->files, nc * sizeof *q);
    if (!q) return dk__error_set(err, DK_NOMEM, "out of memory (DML)");
    c->files = q;
    c->cap_files = nc;
  }
  dml_file *f = &c->files[c->n_files];
  memset(f, 0, sizeof *f);
  f->idx = idx;
  f->num_records = num_records;
  f->n_new = n;
  if (rows) {
    DK_RETURN_NOT_OK(dk_dv__builder_new(&f->rows, c->alloc, err));
    c->n_files++; /* owned from here (dispose frees it) */
    return dk_dv__builder_add(f->rows, rows, (size_t)n, err);
  }
  c->n_files++;
  return DK_OK;
}

/* ---- stats with wide bounds ------------------------------------------------------------------ */

static int64_t stats_i64(const dk_json_value *o, const char *key) {
  int64_t v;
  const dk_json_value *j = dk__json_get(o, key);
  return j && dk__json_as_i64(j, &v) ? v : -1;
}

/* nullCount with every count equal to the logical row count raised to the physical one. */
static dk_status put_null_counts(dk_buf *b, const dk_json_value *v, int64_t logical,
                                 int64_t physical, dk_error *err) {
  if (v->type == DK_JSON_OBJECT) {
    DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
    for (uint32_t i = 0; i < v->len; i++) {
      if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
      DK_RETURN_NOT_OK(dk__json_write_str(b, v->u.members[i].key, v->u.members[i].klen, err));
      DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
      DK_RETURN_NOT_OK(put_null_counts(b, &v->u.members[i].value, logical, physical, err));
    }
    return dk__buf_putc(b, '}', err);
  }
  int64_t n;
  if (dk__json_as_i64(v, &n) && n == logical)
    return dk__buf_printf(b, err, "%lld", (long long)physical);
  return dk__json_write_value(b, v, err);
}

dk_status dk_txn__wide_stats(dk_buf *out, const char *stats, int64_t num_records,
                             int64_t old_card, dk_error *err) {
  dk__buf_clear(out);
  dk_arena ar;
  dk__arena_init(&ar, out->alloc, 4096);
  dk_json_value *v = NULL;
  dk_status st = DK_OK;
  if (stats && dk__json_parse(&v, &ar, stats, strlen(stats), NULL) != DK_OK) v = NULL;
  if (v && v->type != DK_JSON_OBJECT) v = NULL;
  int64_t nr = v ? stats_i64(v, "numRecords") : -1;
  if (nr < 0) nr = num_records;
  bool tight = false;
  const dk_json_value *tb = v ? dk__json_get(v, "tightBounds") : NULL;
  if (tb) (void)dk__json_as_bool(tb, &tight);
  st = dk__buf_printf(out, err, "{\"numRecords\":%lld", (long long)nr);
  static const char *const keep[] = {"minValues", "maxValues"};
  for (size_t k = 0; k < 2 && v && !st; k++) {
    const dk_json_value *j = dk__json_get(v, keep[k]);
    if (!j || dk__json_is_null(j)) continue;
    st = dk__buf_printf(out, err, ",\"%s\":", keep[k]);
    if (!st) st = dk__json_write_value(out, j, err);
  }
  const dk_json_value *nc = v ? dk__json_get(v, "nullCount") : NULL;
  if (!st && nc && !dk__json_is_null(nc)) {
    st = dk__buf_puts(out, ",\"nullCount\":", err);
    if (!st && tight) st = put_null_counts(out, nc, nr - old_card, nr, err);
    else if (!st) st = dk__json_write_value(out, nc, err);
  }
  if (!st) st = dk__buf_puts(out, ",\"tightBounds\":false}", err);
  dk__arena_dispose(&ar);
  return st;
}

/* ---- DVs ------------------------------------------------------------------------------------- */

static dk_status load_dv(dk_dv **out, const dk_txn *x, const dk_dv_descriptor *d, dk_error *err) {
  char stype[2] = {d->storage_type, 0};
  int64_t off = d->offset;
  dk_dv_desc desc;
  DK_RETURN_NOT_OK(dk_dv__descriptor_init(&desc, (dk_str){stype, 1},
                                          (dk_str){d->path_or_inline_dv,
                                                   strlen(d->path_or_inline_dv)},
                                          d->offset >= 0 ? &off : NULL, d->size_in_bytes,
                                          d->cardinality, err));
  return dk_dv__load(out, x->table->sto, x->table->root, &desc, x->alloc, err);
}

static const char prefix_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* delta.randomizeFilePrefixes: a random directory of delta.randomPrefixLength characters. */
static void dv_prefix(char *out, size_t cap, const dk_txn *x) {
  out[0] = 0;
  if (!dk_txn__conf_true(&x->meta, "delta.randomizeFilePrefixes")) return;
  const char *l = dk_txn__meta_conf(&x->meta, "delta.randomPrefixLength");
  long n = l ? strtol(l, NULL, 10) : 2;
  if (n < 1) n = 2;
  if ((size_t)n >= cap) n = (long)cap - 1;
  char uuid[37];
  dk_txn__uuid(uuid); /* 122 random bits: enough for a short prefix */
  for (long i = 0; i < n; i++)
    out[i] = prefix_chars[((unsigned char)uuid[(i * 5) % 36] * 31u + (unsigned)i * 7u) %
                          (sizeof prefix_chars - 1)];
  out[n] = 0;
}

/* DV files roll at delta-spark's packing target (deletionVectors.packing.targetSize). */
#define DV_PACKING_TARGET (2u << 20)

typedef struct staged_dv {
  size_t file;                /* index in c->files */
  dk_dv_descriptor d;
  int writer;                 /* which DV file (-1: inline) */
  char *stats;
} staged_dv;

dk_status dk_txn__dml_apply_dvs(dml_ctx *c, dk_error *err) {
  dk_txn *x = c->x;
  dk_status st = DK_OK;
  dk_file_iter *it = NULL;
  dk_dv_file_writer *writers = NULL;
  size_t n_writers = 0;
  staged_dv *sd = NULL;
  size_t n_sd = 0;
  dk_buf bm, stats;
  dk__buf_init(&bm, c->alloc);
  dk__buf_init(&stats, c->alloc);
  if (!c->n_files) return DK_OK;
  writers = dk__calloc(c->alloc, c->n_files, sizeof *writers);
  sd = dk__calloc(c->alloc, c->n_files, sizeof *sd);
  if (!writers || !sd) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (DML)");
    goto cleanup;
  }
  DK_CHECK_GOTO(dk_snapshot_files_open(&it, x->snap, NULL, err));
  char prefix[64];
  dv_prefix(prefix, sizeof prefix, x);
  for (size_t i = 0; i < c->n_files; i++) {
    dml_file *f = &c->files[i];
    const dk_file_entry *fe = NULL;
    DK_CHECK_GOTO(dk_file_iter_seek(it, f->idx, err));
    DK_CHECK_GOTO(dk_file_iter_next(&fe, it, err));
    int64_t old_card = fe->dv ? fe->dv->cardinality : 0;
    if (!f->rows || (f->num_records >= 0 && old_card + f->n_new >= f->num_records)) {
      /* every row is gone: the file is only removed */
      DK_CHECK_GOTO(dk_txn_remove_file(x, f->idx, 1, err));
      c->m->num_removed_files++;
      if (fe->dv) c->m->num_deletion_vectors_removed++;
      continue;
    }
    dk_dv *old = NULL;
    if (fe->dv) {
      DK_CHECK_GOTO(load_dv(&old, x, fe->dv, err));
      st = dk_dv__builder_add_dv(f->rows, old, err);
      dk_dv__free(old);
      if (st) goto cleanup;
    }
    dk__buf_clear(&bm);
    DK_CHECK_GOTO(dk_dv__builder_serialize(&bm, f->rows, err));
    staged_dv *s = &sd[n_sd++];
    s->file = i;
    s->d.cardinality = (int64_t)dk_dv__builder_cardinality(f->rows);
    s->d.size_in_bytes = (int32_t)bm.len;
    DK_CHECK_GOTO(dk_txn__wide_stats(&stats, fe->stats, f->num_records, old_card, err));
    s->stats = dk__arena_alloc(&x->ar, stats.len + 1, err);
    if (!s->stats) {
      st = DK_NOMEM;
      goto cleanup;
    }
    memcpy(s->stats, stats.data, stats.len + 1);
    if (c->o.dv_inline_max_bytes > 0 && bm.len <= (size_t)c->o.dv_inline_max_bytes) {
      dk__buf_clear(&c->scratch);
      DK_CHECK_GOTO(dk_dv__inline_text(&c->scratch, (const uint8_t *)bm.data, bm.len, err));
      s->d.storage_type = 'i';
      s->d.offset = -1;
      s->writer = -1;
      char *t = dk__arena_alloc(&x->ar, c->scratch.len + 1, err);
      if (!t) {
        st = DK_NOMEM;
        goto cleanup;
      }
      memcpy(t, c->scratch.data, c->scratch.len + 1);
      s->d.path_or_inline_dv = t;
      continue;
    }
    if (!n_writers || writers[n_writers - 1].bytes.len + bm.len > DV_PACKING_TARGET) {
      if (n_writers && writers[n_writers - 1].n_dvs == 0) n_writers--; /* reuse an empty one */
      char uuid[37];
      dk_txn__uuid(uuid);
      DK_CHECK_GOTO(dk_dv__file_writer_init(&writers[n_writers++], uuid, prefix, c->alloc, err));
    }
    dk_dv_file_writer *w = &writers[n_writers - 1];
    int32_t off;
    DK_CHECK_GOTO(dk_dv__file_writer_add(w, (const uint8_t *)bm.data, bm.len, &off, err));
    s->d.storage_type = 'u';
    s->d.offset = off;
    s->d.path_or_inline_dv = w->id.data; /* copied into the transaction by add_entry */
    s->writer = (int)(n_writers - 1);
  }
  /* the DV files first, then the actions that point at them */
  for (size_t k = 0; k < n_writers; k++) {
    DK_CHECK_GOTO(dk_dv__file_writer_commit(&writers[k], x->table->sto, x->table->root, err));
    if (writers[k].n_dvs) {
      c->m->num_dv_files++;
      c->m->dv_bytes += (int64_t)writers[k].bytes.len;
    }
  }
  for (size_t k = 0; k < n_sd; k++) {
    dml_file *f = &c->files[sd[k].file];
    const dk_file_entry *fe = NULL;
    DK_CHECK_GOTO(dk_file_iter_seek(it, f->idx, err));
    DK_CHECK_GOTO(dk_file_iter_next(&fe, it, err));
    dk_file_entry ne = *fe;
    if (fe->dv) c->m->num_deletion_vectors_updated++;
    else c->m->num_deletion_vectors_added++;
    ne.dv = &sd[k].d;
    ne.stats = sd[k].stats;
    DK_CHECK_GOTO(dk_txn_remove_file(x, f->idx, 1, err));
    DK_CHECK_GOTO(dk_txn__add_entry(x, &ne, 1, err));
  }
cleanup:
  for (size_t k = 0; k < n_writers; k++) dk_dv__file_writer_dispose(&writers[k]);
  dk__free(c->alloc, writers);
  dk__free(c->alloc, sd);
  dk_file_iter_free(it);
  dk__buf_dispose(&bm);
  dk__buf_dispose(&stats);
  return st;
}

/* ---- operation ------------------------------------------------------------------------------- */

dk_status dk_txn__set_operation(dk_txn *x, const char *op, const char *params, dk_error *err) {
  char *o = dk__arena_alloc(&x->ar, strlen(op) + 1, err);
  char *p = dk__arena_alloc(&x->ar, strlen(params) + 1, err);
  if (!o || !p) return DK_NOMEM;
  memcpy(o, op, strlen(op) + 1);
  memcpy(p, params, strlen(params) + 1);
  x->operation = o;
  x->op_params = p;
  /* RowTracking.addPreservedRowTrackingTagIfNotSet: DML keeps row ids where row tracking is on */
  if (dk_txn__protocol_supports(&x->protocol, "rowTracking") &&
      dk_txn__conf_true(&x->meta, "delta.enableRowTracking"))
    x->commit_tags = "{\"delta.rowTracking.preserved\":\"true\"}";
  return DK_OK;
}

dk_status dk_txn__predicate_param(dk_buf *b, const dk_expr *pred, dk_error *err) {
  dk_buf arr;
  dk__buf_init(&arr, b->alloc);
  dk_status st = dk__buf_putc(&arr, '[', err);
  char *sql = NULL;
  if (!st && pred) st = dk_expr_to_string(&sql, pred, err);
  if (!st) st = dk__json_write_str(&arr, sql ? sql : "true", sql ? strlen(sql) : 4, err);
  dk_free(sql);
  if (!st) st = dk__buf_putc(&arr, ']', err);
  if (!st) st = dk__json_write_str(b, arr.data, arr.len, err);
  dk__buf_dispose(&arr);
  return st;
}

dk_status dk_txn__set_predicate_operation(dk_txn *x, const char *op, const dk_expr *pred,
                                          dk_error *err) {
  dk_buf params;
  dk__buf_init(&params, x->alloc);
  dk_status st = dk__buf_puts(&params, "{\"predicate\":", err);
  if (!st) st = dk_txn__predicate_param(&params, pred, err);
  if (!st) st = dk__buf_putc(&params, '}', err);
  if (!st) st = dk_txn__set_operation(x, op, params.data, err);
  dk__buf_dispose(&params);
  return st;
}

/* ---- DELETE ---------------------------------------------------------------------------------- */

static int64_t num_logical(const dk_file_entry *f) {
  if (!f->stats) return -1;
  const char *p = strstr(f->stats, "\"numRecords\"");
  if (!p || !(p = strchr(p + 12, ':'))) return -1;
  int64_t n = strtoll(p + 1, NULL, 10);
  return n - (f->dv ? f->dv->cardinality : 0);
}

/* Case 1: remove whole files (no predicate, or partition columns only). */
static dk_status delete_files(dml_ctx *c, const dk_expr *pred, dk_error *err) {
  int64_t *idx = NULL, n = 0;
  DK_RETURN_NOT_OK(dk_txn_read_files(c->x, pred, &idx, &n, err));
  dk_file_iter *it = NULL;
  dk_status st = dk_snapshot_files_open(&it, c->x->snap, NULL, err);
  int64_t deleted = 0;
  for (int64_t k = 0; k < n && !st; k++) {
    const dk_file_entry *fe = NULL;
    st = dk_file_iter_seek(it, idx[k], err);
    if (!st) st = dk_file_iter_next(&fe, it, err);
    if (st) break;
    int64_t nl = num_logical(fe);
    deleted = deleted < 0 || nl < 0 ? -1 : deleted + nl;
    c->m->num_removed_bytes += fe->size;
    if (fe->dv) c->m->num_deletion_vectors_removed++;
    st = dk_txn_remove_file(c->x, idx[k], 1, err);
  }
  dk_file_iter_free(it);
  dk_free(idx);
  c->m->num_removed_files = n;
  c->m->num_files_after_skipping = n;
  c->m->num_deleted_rows = n ? deleted : 0;
  return st;
}

/* Case 2: find the matching rows of every candidate file; DVs, or the files rewritten. */
static dk_status delete_rows(dml_ctx *c, const dk_expr *pred, dk_error *err) {
  dk_status st = dk_txn__dml_match(c, pred, &c->m->num_deleted_rows, err);
  c->m->scan_time_ms = dk_txn__dml_now_ms() - c->t0_ms;
  if (st || !c->n_files) return st;
  int64_t t1 = dk_txn__dml_now_ms();
  if (!c->use_dvs) { /* copy-on-write: the rows the predicate does not make TRUE stay */
    dk_expr *f = NULL, *keep = NULL, *coalesce = NULL;
    dk_expr *args[2] = {dk_expr_ref((dk_expr *)pred), NULL};
    st = dk_expr_literal_bool(&f, false, err);
    args[1] = f;
    if (st) dk_expr_free(args[0]);
    else st = dk_expr_function(&coalesce, "coalesce", args, 2, err);
    if (!st) st = dk_expr_not(&keep, coalesce, err);
    dml_rewrite r = {.keep = keep, .what = "DELETE"};
    /* with the change data feed on, the deleted rows are change data (a DV DELETE has none:
     * readers take them from the DVs) */
    dml_rewrite cd = {.keep = pred, .what = "DELETE", .change_type = "delete"};
    if (!st && dk_txn__cdf_on(c->x)) st = dk_txn__dml_rewrite(c, &cd, err);
    if (!st) st = dk_txn__dml_rewrite(c, &r, err);
    dk_expr_free(keep);
    c->m->num_copied_rows = c->touched_live - c->m->num_deleted_rows;
    dk_txn__dml_remove_touched(c);
  }
  if (!st) st = dk_txn__dml_apply_dvs(c, err);
  c->m->rewrite_time_ms = dk_txn__dml_now_ms() - t1;
  return st;
}

static dk_status delete_metrics(dml_ctx *c, dk_error *err) {
  dk_txn *x = c->x;
  dk_dml_metrics *m = c->m;
  m->execution_time_ms = dk_txn__dml_now_ms() - c->t0_ms;
  /* DeltaOperations.Delete.transformMetrics: row metrics go when whole files went without
   * them; DV metrics count an updated DV as added and removed */
  int rows_known = !(m->num_deleted_rows <= 0 && m->num_removed_files != 0);
  struct {
    const char *k;
    int64_t v;
    int show;
  } kv[] = {
      {"numAddedFiles", m->num_added_files, rows_known},
      {"numRemovedFiles", m->num_removed_files, 1},
      {"numDeletionVectorsAdded", m->num_deletion_vectors_added + m->num_deletion_vectors_updated, 1},
      {"numDeletionVectorsRemoved",
       m->num_deletion_vectors_removed + m->num_deletion_vectors_updated, 1},
      {"numDeletionVectorsUpdated", m->num_deletion_vectors_updated, 1},
      {"numAddedChangeFiles", m->num_added_change_files, 1},
      {"numDeletedRows", m->num_deleted_rows, rows_known},
      {"numCopiedRows", m->num_copied_rows, rows_known},
      {"executionTimeMs", m->execution_time_ms, 1},
      {"scanTimeMs", m->scan_time_ms, 1},
      {"rewriteTimeMs", m->rewrite_time_ms, 1},
      {"numRemovedBytes", m->num_removed_bytes, 1},
      {"numAddedBytes", m->num_added_bytes, 1},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(kv); i++)
    if (kv[i].show) DK_RETURN_NOT_OK(dk_txn_set_metric(x, kv[i].k, kv[i].v, err));
  return DK_OK;
}

dk_status dk_txn_delete(dk_dml_metrics *out, dk_txn *x, const dk_expr *pred,
                        const dk_dml_options *o, dk_error *err) {
  dk_dml_metrics own = {.version = DK_DML_METRICS_VERSION};
  dml_ctx c;
  DK_RETURN_NOT_OK(dk_txn__dml_init(&c, x, o, out, &own, err));
  const dk_metadata *md = dk_snapshot_metadata(x->snap);
  dk_status st = DK_OK;
  dk_expr *ponly = NULL, *rest = NULL;
  if (pred) {
    /* a bad predicate fails before anything is read or staged */
    struct ArrowSchema sch;
    st = dk_snapshot_arrow_schema(&sch, x->snap, 0, err);
    if (!st) {
      dk_expr *bound = NULL;
      st = dk_expr_bind(&bound, pred, &sch, err);
      dk_expr_free(bound);
      sch.release(&sch);
    }
    if (!st)
      st = dk_expr_split(&ponly, &rest, pred, md->partition_columns, md->n_partition_columns,
                         err);
  }
  c.m->num_files_before_skipping = dk_snapshot_num_files(x->snap);
  if (!st && (!pred || !rest)) st = delete_files(&c, pred, err);
  else if (!st) st = delete_rows(&c, pred, err);
  dk_expr_free(ponly);
  dk_expr_free(rest);
  if (!st) st = dk_txn__set_predicate_operation(x, "DELETE", pred, err);
  if (!st) st = delete_metrics(&c, err);
  dk_txn__dml_dispose(&c);
  return st;
}

/* ---- DELETE of rows by (file, row index) ---------------------------------------------------- */

typedef struct frow {
  int64_t file, row;  /* snapshot file index, physical row index */
} frow;

static int frow_cmp(const void *a, const void *b) {
  const frow *x = a, *y = b;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

dk_status dk_txn__file_indexes(int64_t *idx, int64_t **nrec_out, dk_txn *x,
                               const char *const *uris, size_t n, dk_error *err) {
  *nrec_out = NULL;
  if (!n) return DK_OK;
  /* the URIs of the snapshot's files, as the scan names them */
  dk_hmap by_uri;
  dk__hmap_init(&by_uri, x->alloc);
  dk__root root;
  dk_io__root_init(&root, dk_snapshot_table_root(x->snap), x->table->sto);
  dk_buf key, uri;
  dk__buf_init(&key, x->alloc);
  dk__buf_init(&uri, x->alloc);
  dk_file_iter *it = NULL;
  int64_t nf = dk_snapshot_num_files(x->snap);
  int64_t *nrec = dk__calloc(x->alloc, (size_t)(nf ? nf : 1), sizeof *nrec);
  dk_status st = nrec ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (DML)");
  if (!st) st = dk_snapshot_files_open(&it, x->snap, NULL, err);
  for (int64_t i = 0; i < nf && !st; i++) {
    const dk_file_entry *fe = NULL;
    dk__loc loc;
    st = dk_file_iter_next(&fe, it, err);
    if (!st && !fe) break;
    if (!st) st = dk_log__data_key(&loc, &key, &root, fe->path, err);
    if (!st) {
      dk__buf_clear(&uri);
      st = dk_io__key_uri(&uri, key.data, err);
    }
    uint64_t *v;
    bool ins;
    if (!st) st = dk__hmap_upsert(&by_uri, uri.data, uri.len, &v, &ins, err);
    if (!st) *v = (uint64_t)i;
    if (!st) nrec[i] = dk_txn__stats_records(fe->stats);
  }
  for (size_t i = 0; i < n && !st; i++) {
    uint64_t *v = uris[i] ? dk__hmap_get(&by_uri, uris[i], strlen(uris[i])) : NULL;
    if (!v)
      st = dk__error_set(err, DK_NOT_FOUND, "data file '%s' is not in version %lld of the table",
                         uris[i] ? uris[i] : "(null)", (long long)x->read_version);
    else
      idx[i] = (int64_t)*v;
  }
  dk_file_iter_free(it);
  dk__buf_dispose(&key);
  dk__buf_dispose(&uri);
  dk__hmap_dispose(&by_uri);
  if (st) dk__free(x->alloc, nrec);
  else *nrec_out = nrec;
  return st;
}

dk_status dk_txn_delete_rows(dk_dml_metrics *out, dk_txn *x, const char *const *uris,
                             const int64_t *rows, size_t n, const dk_dml_options *o,
                             dk_error *err) {
  dk_dml_metrics own = {.version = DK_DML_METRICS_VERSION};
  dml_ctx c;
  DK_RETURN_NOT_OK(dk_txn__dml_init(&c, x, o, out, &own, err));
  dk_status st = DK_OK;
  if (!c.use_dvs)
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "DELETE of rows on %s: the table does not allow deletion vectors "
                       "(delta.enableDeletionVectors)",
                       x->table->root);
  frow *fr = NULL;
  int64_t *nrec = NULL, *fidx = NULL;
  int64_t nf = dk_snapshot_num_files(x->snap);
  if (!st && n) {
    fr = dk__calloc(x->alloc, n, sizeof *fr);
    fidx = dk__calloc(x->alloc, n, sizeof *fidx);
    if (!fr || !fidx) st = dk__error_set(err, DK_NOMEM, "out of memory (DELETE)");
  }
  if (!st) st = dk_txn__file_indexes(fidx, &nrec, x, uris, n, err);
  if (st && st != DK_NOMEM) dk__error_prefix(err, "DELETE");
  for (size_t i = 0; i < n && !st; i++) {
    if (rows[i] < 0 || (nrec[fidx[i]] >= 0 && rows[i] >= nrec[fidx[i]]))
      st = dk__error_set(err, DK_INVALID, "DELETE: row %lld is not in data file '%s'",
                         (long long)rows[i], uris[i]);
    else
      fr[i] = (frow){fidx[i], rows[i]};
  }
  if (!st && n) {
    /* every file of the table is recorded as read: rows were chosen by the engine */
    int64_t *all = NULL, na = 0;
    st = dk_txn_read_files(x, NULL, &all, &na, err);
    dk_free(all);
    qsort(fr, n, sizeof *fr, frow_cmp);
  }
  int64_t *buf = !st && n ? dk__calloc(x->alloc, n, sizeof *buf) : NULL;
  if (!st && n && !buf) st = dk__error_set(err, DK_NOMEM, "out of memory (DELETE)");
  c.m->num_files_before_skipping = nf;
  for (size_t i = 0; i < n && !st;) {
    size_t j = i, m = 0;
    while (j < n && fr[j].file == fr[i].file) {
      if (!m || buf[m - 1] != fr[j].row) buf[m++] = fr[j].row;
      j++;
    }
    st = dk_txn__dml_touch(&c, fr[i].file, nrec[fr[i].file], buf, (int64_t)m, err);
    c.m->num_deleted_rows += (int64_t)m;
    c.m->num_files_after_skipping++;
    i = j;
  }
  if (!st) st = dk_txn__dml_apply_dvs(&c, err);
  /* DELETE, unless the transaction was begun as another operation (SQLite's UPDATE: these
   * deletes and new rows written next) */
  if (!st && (!x->operation || !strcmp(x->operation, "WRITE")))
    st = dk_txn__set_operation(x, "DELETE", "{\"predicate\":\"[]\"}", err);
  if (!st) st = delete_metrics(&c, err);
  dk__free(x->alloc, buf);
  dk__free(x->alloc, fr);
  dk__free(x->alloc, fidx);
  dk__free(x->alloc, nrec);
  dk_txn__dml_dispose(&c);
  return st;
}

dk_status dk_txn__dml_run(dk_commit_result *commit, dk_table *t, const char *operation,
                          const dk_txn_options *txn_opts, dml_body body, void *arg,
                          dk_error *err) {
  dk_txn__commit_reset(commit);
  DK_RETURN_IF(!t, DK_INVALID, err, "%s: NULL table", operation);
  dk_snapshot *snap = NULL;
  dk_txn *x = NULL;
  dk_txn_options to = {.version = DK_TXN_OPTIONS_VERSION};
  if (txn_opts) to = *txn_opts;
  to.operation = operation;
  dk_status st = dk_snapshot_open(&snap, t, NULL, err);
  if (!st) st = dk_txn_begin(&x, snap, &to, err);
  if (!st) st = body(x, arg, err);
  if (!st && x->n_adds == 0 && x->n_removes == 0) dk_txn_abort(x); /* nothing changed */
  else if (!st) st = dk_txn_commit(x, commit, err);
  else if (x) dk_txn_abort(x);
  dk_snapshot_free(snap);
  return st;
}

typedef struct delete_args {
  dk_dml_metrics *out;
  const dk_expr *pred;
  const dk_dml_options *o;
} delete_args;

static dk_status delete_body(dk_txn *x, void *arg, dk_error *err) {
  delete_args *a = arg;
  return dk_txn_delete(a->out, x, a->pred, a->o, err);
}

dk_status dk_table_delete(dk_dml_metrics *out, dk_commit_result *commit, dk_table *t,
                          const char *predicate, const dk_dml_options *o,
                          const dk_txn_options *txn_opts, dk_error *err) {
  dk_txn__commit_reset(commit);
  dk_expr *pred = NULL;
  if (predicate) DK_RETURN_NOT_OK(dk_expr_parse(&pred, predicate, err));
  delete_args a = {out, pred, o};
  dk_status st = dk_txn__dml_run(commit, t, "DELETE", txn_opts, delete_body, &a, err);
  dk_expr_free(pred);
  return st;
}
