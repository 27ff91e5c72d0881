/*
** txn.c — optimistic transactions (PROTOCOL.md "Commit Protocol", "Actions"; write-path.md
** §1.1-1.2, §1.6-1.7, §3): a dk_txn stages actions on a read snapshot, records what it read,
** and commits them as `_delta_log/<v>.json` with put-if-absent.
**
** The commit file is built anew for every attempt, because what it holds depends on the
** version it lands at: commitInfo (timestamp, inCommitTimestamp = max(now, previous + 1)),
** row tracking (baseRowId above the high-water mark of the newest winner, the
** delta.rowTracking domain, defaultRowCommitVersion = the version) and the ICT enablement
** properties. Line order is delta-spark's: commitInfo, metaData, protocol, then txn, domain
** metadata, removes and adds.
**
** When the version exists, every winner from it to the newest is read and checked
** (conflict.c); a winner at the attempted version whose commitInfo.txnId is ours means an
** earlier attempt landed although its outcome was lost (delta-spark
** resolveAgainstWinningCommit). An attempt whose outcome is unknown (an I/O error from the
** committer) is resolved by reading the version back.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dk/maintenance.h"
#include "dk/scan.h"
#include "log/paths.h"
#include "txn/txn_int.h"

#define DEFAULT_MAX_ATTEMPTS 10000

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t txn_now(const dk_txn *t) { return t->now_ms > 0 ? t->now_ms : wall_ms(); }

const char *dk_conflict_kind_name(dk_conflict_kind k) {
  switch (k) {
    case DK_CONFLICT_CONCURRENT_APPEND: return "ConcurrentAppendException";
    case DK_CONFLICT_CONCURRENT_DELETE_READ: return "ConcurrentDeleteReadException";
    case DK_CONFLICT_CONCURRENT_DELETE_DELETE: return "ConcurrentDeleteDeleteException";
    case DK_CONFLICT_METADATA_CHANGED: return "MetadataChangedException";
    case DK_CONFLICT_PROTOCOL_CHANGED: return "ProtocolChangedException";
    case DK_CONFLICT_CONCURRENT_TRANSACTION: return "ConcurrentTransactionException";
    case DK_CONFLICT_MAX_RETRIES: return "DELTA_MAX_COMMIT_RETRIES_EXCEEDED";
    default: return "";
  }
}

/* ---- metadata values ---------------------------------------------------------------------- */

const char *dk_txn__meta_conf(const txn_meta *m, const char *key) {
  for (size_t i = m->n_conf; i-- > 0;)
    if (strcmp(m->conf[2 * i], key) == 0) return m->conf[2 * i + 1];
  return NULL;
}

int dk_txn__conf_true(const txn_meta *m, const char *key) {
  const char *v = dk_txn__meta_conf(m, key);
  return v && (strcmp(v, "true") == 0 || strcmp(v, "TRUE") == 0 || strcmp(v, "True") == 0);
}

static char *ar_dup(dk_arena *ar, const char *s, dk_error *err) {
  return s ? dk__arena_strndup(ar, s, strlen(s), err) : NULL;
}

static dk_status dup_list(const char ***out, dk_arena *ar, const char *const *src, size_t n,
                          dk_error *err) {
  *out = NULL;
  if (!n) return DK_OK;
  const char **l = dk__arena_alloc(ar, n * sizeof *l, err);
  if (!l) return DK_NOMEM;
  for (size_t i = 0; i < n; i++) {
    l[i] = src[i] ? ar_dup(&*ar, src[i], err) : NULL;
    if (src[i] && !l[i]) return DK_NOMEM;
  }
  *out = l;
  return DK_OK;
}

dk_status dk_txn__meta_from_snapshot(txn_meta *m, dk_arena *ar, const dk_metadata *md,
                                    dk_error *err) {
  memset(m, 0, sizeof *m);
  m->id = md->id;
  m->name = md->name;
  m->description = md->description;
  m->provider = md->format_provider ? md->format_provider : "parquet";
  m->schema_string = md->schema_string;
  m->created_time = md->created_time;
  m->n_part = md->n_partition_columns;
  DK_RETURN_NOT_OK(dup_list(&m->part, ar, md->partition_columns, md->n_partition_columns, err));
  m->n_conf = md->n_configuration;
  if (md->n_configuration) {
    const char **c = dk__arena_alloc(ar, 2 * md->n_configuration * sizeof *c, err);
    if (!c) return DK_NOMEM;
    for (size_t i = 0; i < md->n_configuration; i++) {
      c[2 * i] = md->config_keys[i];
      c[2 * i + 1] = md->config_values[i];
    }
    m->conf = c;
  }
  return DK_OK;
}

static dk_status protocol_copy(dk_protocol *dst, dk_arena *ar, const dk_protocol *src,
                               dk_error *err) {
  *dst = *src;
  const char **r = NULL, **w = NULL;
  DK_RETURN_NOT_OK(dup_list(&r, ar, src->reader_features, src->n_reader_features, err));
  DK_RETURN_NOT_OK(dup_list(&w, ar, src->writer_features, src->n_writer_features, err));
  dst->reader_features = r;
  dst->writer_features = w;
  return DK_OK;
}

/* ---- begin / abort ------------------------------------------------------------------------ */

static dk_status txn_new(dk_txn **out, dk_table *t, const dk_txn_options *opts,
                         dk_error *err) {
  *out = NULL;
  if (opts && opts->version > DK_TXN_OPTIONS_VERSION)
    return dk__error_set(err, DK_UNSUPPORTED, "dk_txn_options version %u is newer than dk's %u",
                         opts->version, DK_TXN_OPTIONS_VERSION);
  dk_txn *x = dk__calloc(t->alloc, 1, sizeof *x);
  if (!x) return dk__error_set(err, DK_NOMEM, "out of memory (transaction)");
  x->alloc = t->alloc;
  x->table = t;
  x->read_version = -1;
  x->read_hwm = -1;
  x->last_ict = -1;
  dk__arena_init(&x->ar, t->alloc, 16384);
  dk__hmap_init(&x->read_paths, t->alloc);
  dk__hmap_init(&x->read_apps, t->alloc);
  dk__hmap_init(&x->removed_paths, t->alloc);
  dk_txn__uuid(x->txn_id);
  x->max_attempts = opts && opts->max_attempts > 0 ? opts->max_attempts : DEFAULT_MAX_ATTEMPTS;
  x->isolation_opt = opts ? opts->isolation : DK_ISOLATION_TABLE;
  x->committer = opts ? opts->committer : NULL;
  x->now_ms = opts ? opts->now_ms : 0;
  x->no_auto_checkpoint = opts ? opts->no_auto_checkpoint : 0;
  char engine[64];
  snprintf(engine, sizeof engine, "dk/%d.%d.%d", DK_VERSION_MAJOR, DK_VERSION_MINOR,
           DK_VERSION_PATCH);
  x->operation = ar_dup(&x->ar, opts && opts->operation ? opts->operation : "WRITE", err);
  x->op_params = ar_dup(&x->ar, opts && opts->operation_parameters ? opts->operation_parameters
                                                                    : "{}", err);
  x->engine_info = ar_dup(&x->ar, opts && opts->engine_info ? opts->engine_info : engine, err);
  x->user_metadata = opts ? ar_dup(&x->ar, opts->user_metadata, err) : NULL;
  if (!x->operation || !x->op_params || !x->engine_info) {
    dk_txn_abort(x);
    return DK_NOMEM;
  }
  /* operation parameters must be a JSON object */
  dk_arena tmp;
  dk__arena_init(&tmp, t->alloc, 1024);
  dk_json_value *v = NULL;
  dk_status st = dk__json_parse(&v, &tmp, x->op_params, strlen(x->op_params), err);
  if (!st && v->type != DK_JSON_OBJECT)
    st = dk__error_set(err, DK_INVALID, "operation_parameters must be a JSON object");
  dk__arena_dispose(&tmp);
  if (st) {
    dk__error_prefix(err, "dk_txn_options.operation_parameters");
    dk_txn_abort(x);
    return st;
  }
  *out = x;
  return DK_OK;
}

static int64_t parse_hwm(const char *config) {
  if (!config) return -1;
  const char *p = strstr(config, "\"rowIdHighWaterMark\"");
  if (!p) return -1;
  p = strchr(p + 20, ':');
  return p ? strtoll(p + 1, NULL, 10) : -1;
}

dk_status dk_txn_begin(dk_txn **out, dk_snapshot *snap, const dk_txn_options *opts,
                       dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!snap, DK_INVALID, err, "dk_txn_begin: NULL snapshot");
  DK_RETURN_IF(!dk_snapshot_has_file_list(snap), DK_INVALID, err,
               "dk_txn_begin: a metadata-only snapshot has no file list to write against");
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(snap), err);
  if (st) {
    dk__error_prefix(err, "%s (version %lld)", snap->table->root, (long long)snap->version);
    return st;
  }
  dk_txn *x;
  DK_RETURN_NOT_OK(txn_new(&x, snap->table, opts, err));
  x->snap = dk_snapshot_ref(snap);
  x->read_version = snap->version;
  x->last_ict = snap->timestamp;
  x->read_hwm = parse_hwm(dk_snapshot_domain_metadata(snap, "delta.rowTracking"));
  if (dk_txn__meta_from_snapshot(&x->meta, &x->ar, dk_snapshot_metadata(snap), err) ||
      protocol_copy(&x->protocol, &x->ar, dk_snapshot_protocol(snap), err)) {
    dk_txn_abort(x);
    return err ? err->code : DK_NOMEM;
  }
  *out = x;
  return DK_OK;
}

dk_status dk_txn_begin_create(dk_txn **out, dk_table *t, const dk_txn_options *opts,
                              dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_txn_begin_create: NULL table");
  return txn_new(out, t, opts, err);
}

void dk_txn__own_last_add(dk_txn *x) {
  if (x->n_adds) x->adds[x->n_adds - 1].own = 1;
}

/* Deletes the data files this transaction wrote itself and never committed (best effort: a
 * file left behind is only an orphan VACUUM removes). */
static void discard_written(dk_txn *x) {
  if (x->writer) return;
  for (size_t i = 0; i < x->n_adds; i++) {
    const txn_add *a = &x->adds[i];
    if (a->own) dk_txn__remove_data_file(x->table, a->path);
  }
}

static void txn_free(dk_txn *x);

void dk_txn_abort(dk_txn *x) {
  if (!x) return;
  discard_written(x);
  txn_free(x);
}

static void txn_free(dk_txn *x) {
  for (size_t i = 0; i < x->n_preds; i++) dk_expr_free(x->preds[i].partition);
  dk__free(x->alloc, x->preds);
  dk__free(x->alloc, x->adds);
  dk__free(x->alloc, x->removes);
  dk__free(x->alloc, x->domains);
  dk__free(x->alloc, x->metric_k);
  dk__free(x->alloc, x->metric_v);
  dk__hmap_dispose(&x->read_paths);
  dk__hmap_dispose(&x->read_apps);
  dk__hmap_dispose(&x->removed_paths);
  dk__arena_dispose(&x->ar);
  dk_snapshot_free(x->snap);
  dk__free(x->alloc, x);
}

int64_t dk_txn_read_version(const dk_txn *x) { return x ? x->read_version : -1; }
dk_snapshot *dk_txn_snapshot(const dk_txn *x) { return x ? x->snap : NULL; }

/* ---- reads -------------------------------------------------------------------------------- */

static dk_status grow(void **p, size_t *cap, size_t n, size_t elem, const dk_allocator *a,
                      dk_error *err) {
  if (n < *cap) return DK_OK;
  size_t nc = *cap ? *cap * 2 : 8;
  void *q = dk__realloc(a, *p, nc * elem);
  if (!q) return dk__error_set(err, DK_NOMEM, "out of memory (transaction)");
  *p = q;
  *cap = nc;
  return DK_OK;
}

dk_status dk_txn__read_path(dk_txn *x, const char *path, dk_error *err) {
  uint64_t *v;
  bool ins;
  return dk__hmap_upsert(&x->read_paths, path, strlen(path), &v, &ins, err);
}

dk_status dk_txn__read_predicate(dk_txn *x, dk_expr *partition, dk_error *err) {
  dk_status st = grow((void **)&x->preds, &x->cap_preds, x->n_preds, sizeof *x->preds,
                      x->alloc, err);
  if (st) {
    dk_expr_free(partition);
    return st;
  }
  x->preds[x->n_preds++].partition = partition;
  return DK_OK;
}

dk_status dk_txn_read_files(dk_txn *x, const dk_expr *filter, int64_t **out_idx, int64_t *n,
                            dk_error *err) {
  if (out_idx) *out_idx = NULL;
  if (n) *n = 0;
  DK_RETURN_IF(!x || !x->snap, DK_INVALID, err, "dk_txn_read_files: no read snapshot");
  const dk_metadata *md = dk_snapshot_metadata(x->snap);
  dk_expr *ponly = NULL, *rest = NULL;
  if (filter)
    DK_RETURN_NOT_OK(dk_expr_split(&ponly, &rest, filter, md->partition_columns,
                                   md->n_partition_columns, err));
  dk_expr_free(rest);
  /* the files read are those the partition conjuncts select: delta-spark's txn.filterFiles
   * returns (and records as read) every file of the matching partitions for a data predicate
   * too (tests/interop/conflict_matrix.json: a concurrent delete of a file whose stats rule the
   * predicate out is still ConcurrentDeleteReadException) */
  dk_scan_options so = {.version = DK_SCAN_OPTIONS_VERSION, .filter = ponly, .limit = -1,
                        .keep_residual = 1};
  dk_scan *scan = NULL;
  dk_status st0 = DK_OK;
  if (filter) { /* the whole predicate must bind (unknown columns, type errors) */
    struct ArrowSchema sch;
    dk_expr *bound = NULL;
    st0 = dk_snapshot_arrow_schema(&sch, x->snap, 0, err);
    if (!st0) {
      st0 = dk_expr_bind(&bound, filter, &sch, err);
      sch.release(&sch);
      dk_expr_free(bound);
    }
  }
  if (!st0) st0 = dk_scan_new(&scan, x->snap, &so, err);
  if (st0) {
    dk_expr_free(ponly);
    return st0;
  }
  st0 = dk_txn__read_predicate(x, ponly, err); /* takes ponly */
  if (st0) {
    dk_scan_free(scan);
    return st0;
  }
  int64_t nf = dk_scan_num_files(scan), total = dk_snapshot_num_files(x->snap);
  int64_t *idx = NULL;
  dk_status st = DK_OK;
  /* the scan selects files in snapshot order: walk both lists together */
  if (out_idx) {
    idx = dk__malloc(NULL, (size_t)(nf ? nf : 1) * sizeof *idx); /* dk_free */
    if (!idx) st = dk__error_set(err, DK_NOMEM, "out of memory (transaction)");
  }
  int64_t j = 0;
  for (int64_t i = 0; i < nf && !st; i++) {
    dk_scan_file sf;
    st = dk_scan_file_get(&sf, scan, i, err);
    if (st) break;
    st = dk_txn__read_path(x, sf.entry.path, err);
    if (st || !idx) continue;
    for (; j < total; j++) {
      dk_file_entry fe;
      st = dk_snapshot_file(&fe, x->snap, j, err);
      if (st) break;
      if (fe.path == sf.entry.path || strcmp(fe.path, sf.entry.path) == 0) break;
    }
    if (!st && j == total)
      st = dk__error_set(err, DK_INTERNAL, "scan file '%s' not in the snapshot", sf.entry.path);
    if (!st) idx[i] = j++;
  }
  dk_scan_free(scan);
  if (st) {
    dk__free(NULL, idx);
    return st;
  }
  if (out_idx) *out_idx = idx;
  if (n) *n = nf;
  return DK_OK;
}

dk_status dk_txn_read_partitions(dk_txn *x, const char *const *values, int64_t n_rows,
                                 int64_t **out_idx, int64_t *n, dk_error *err) {
  if (out_idx) *out_idx = NULL;
  if (n) *n = 0;
  DK_RETURN_IF(!x || !x->snap, DK_INVALID, err, "dk_txn_read_partitions: no read snapshot");
  const dk_metadata *md = dk_snapshot_metadata(x->snap);
  size_t npc = md->n_partition_columns;
  DK_RETURN_IF(npc == 0, DK_INVALID, err,
               "dynamic partition overwrite needs a partitioned table (%s)", x->table->root);
  size_t old = x->n_dyn;
  const char **rows = dk__arena_alloc(&x->ar, (old + (size_t)n_rows) * npc * sizeof *rows + 1,
                                      err);
  if (!rows) return DK_NOMEM;
  if (old) memcpy(rows, x->dyn_parts, old * npc * sizeof *rows);
  for (size_t i = 0; i < (size_t)n_rows * npc; i++) {
    rows[old * npc + i] = values[i] ? ar_dup(&x->ar, values[i], err) : NULL;
    if (values[i] && !rows[old * npc + i]) return DK_NOMEM;
  }
  x->dyn_parts = rows;
  x->n_dyn = old + (size_t)n_rows;
  int64_t total = dk_snapshot_num_files(x->snap), cnt = 0;
  int64_t *idx = out_idx ? dk__malloc(NULL, (size_t)(total ? total : 1) * sizeof *idx) : NULL;
  if (out_idx && !idx) return dk__error_set(err, DK_NOMEM, "out of memory (transaction)");
  for (int64_t i = 0; i < total; i++) {
    dk_file_entry fe;
    dk_status st = dk_snapshot_file(&fe, x->snap, i, err);
    if (st) {
      dk__free(NULL, idx);
      return st;
    }
    for (int64_t r = 0; r < n_rows; r++) {
      size_t c = 0;
      for (; c < npc; c++) {
        int is_null = 0;
        const char *v = dk_file_partition_value(x->snap, &fe, md->partition_columns[c], &is_null);
        const char *w = values[(size_t)r * npc + c];
        if (w && !*w) w = NULL;
        if (is_null || (v && !*v)) v = NULL;
        if ((v == NULL) != (w == NULL) || (v && strcmp(v, w) != 0)) break;
      }
      if (c == npc) {
        if (idx) idx[cnt] = i;
        cnt++; /* a partition read, not a file read (delta-spark filterFiles(newFiles)) */
        break;
      }
    }
  }
  if (out_idx) *out_idx = idx;
  if (n) *n = cnt;
  return DK_OK;
}

void dk_txn_read_whole_table(dk_txn *x) {
  if (!x) return;
  x->read_whole = 1;
  (void)dk_txn__read_predicate(x, NULL, NULL);
}

int64_t dk_txn_app_version(dk_txn *x, const char *app_id) {
  if (!x || !app_id) return -1;
  uint64_t *v;
  bool ins;
  (void)dk__hmap_upsert(&x->read_apps, app_id, strlen(app_id), &v, &ins, NULL);
  return x->snap ? dk_snapshot_txn_version(x->snap, app_id) : -1;
}

/* ---- staging ------------------------------------------------------------------------------ */

static const char *physical_name(const dk_txn *x, const char *logical) {
  const dk_type *s = x->meta_schema ? x->meta_schema : x->snap ? dk_snapshot_schema(x->snap) : NULL;
  if (!s) return logical;
  const dk_field *f = dk_schema_find(s, logical);
  return f && f->physical_name ? f->physical_name : logical;
}

static int64_t stats_num_records(const char *stats) {
  if (!stats) return -1;
  const char *p = strstr(stats, "\"numRecords\"");
  if (!p) return -1;
  p = strchr(p + 12, ':');
  return p ? strtoll(p + 1, NULL, 10) : -1;
}

dk_status dk_txn_add_file(dk_txn *x, const dk_add_file *f, dk_error *err) {
  DK_RETURN_IF(!x || !f || !f->path || !*f->path, DK_INVALID, err, "dk_txn_add_file: no path");
  DK_RETURN_IF(f->version > DK_ADD_FILE_VERSION, DK_UNSUPPORTED, err,
               "dk_add_file version %u is newer than dk's", f->version);
  DK_RETURN_IF(f->size < 0, DK_INVALID, err, "add '%s': negative size", f->path);
  /* every partition column, and nothing else */
  for (size_t c = 0; c < x->meta.n_part; c++) {
    size_t k = 0;
    while (k < f->n_partition_values && strcasecmp(f->partition_kv[2 * k], x->meta.part[c]) != 0)
      k++;
    DK_RETURN_IF(k == f->n_partition_values, DK_INVALID, err,
                 "add '%s': partition column '%s' has no value (DELTA_INVALID_PARTITIONING_SCHEMA)",
                 f->path, x->meta.part[c]);
  }
  DK_RETURN_IF(f->n_partition_values != x->meta.n_part, DK_INVALID, err,
               "add '%s': %zu partition values for %zu partition columns "
               "(DELTA_INVALID_PARTITIONING_SCHEMA)",
               f->path, f->n_partition_values, x->meta.n_part);
  DK_RETURN_NOT_OK(grow((void **)&x->adds, &x->cap_adds, x->n_adds, sizeof *x->adds, x->alloc,
                        err));
  txn_add *a = &x->adds[x->n_adds];
  memset(a, 0, sizeof *a);
  a->path = ar_dup(&x->ar, f->path, err);
  a->n_pv = f->n_partition_values;
  a->pv = a->n_pv ? dk__arena_alloc(&x->ar, 2 * a->n_pv * sizeof *a->pv, err) : NULL;
  if (!a->path || (a->n_pv && !a->pv)) return DK_NOMEM;
  for (size_t c = 0; c < x->meta.n_part; c++) {
    size_t k = 0;
    while (strcasecmp(f->partition_kv[2 * k], x->meta.part[c]) != 0) k++;
    const char *v = f->partition_kv[2 * k + 1];
    a->pv[2 * c] = ar_dup(&x->ar, physical_name(x, x->meta.part[c]), err);
    a->pv[2 * c + 1] = v && *v ? ar_dup(&x->ar, v, err) : NULL; /* "" is null (Spark) */
    if (!a->pv[2 * c] || (v && *v && !a->pv[2 * c + 1])) return DK_NOMEM;
  }
  a->size = f->size;
  a->mtime = f->modification_time;
  a->data_change = f->data_change ? 1 : 0;
  a->stats = f->stats ? ar_dup(&x->ar, f->stats, err) : NULL;
  a->tags = f->tags_json ? ar_dup(&x->ar, f->tags_json, err) : NULL;
  a->clustering = f->clustering_provider ? ar_dup(&x->ar, f->clustering_provider, err) : NULL;
  a->num_records = stats_num_records(f->stats);
  a->base_row_id = -1;
  if (f->dv) {
    a->dv = dk__arena_alloc(&x->ar, sizeof *a->dv, err);
    if (!a->dv) return DK_NOMEM;
    *a->dv = *f->dv;
    a->dv->path_or_inline_dv = ar_dup(&x->ar, f->dv->path_or_inline_dv, err);
    if (!a->dv->path_or_inline_dv) return DK_NOMEM;
  }
  if ((f->stats && !a->stats) || (f->tags_json && !a->tags)) return DK_NOMEM;
  x->n_adds++;
  return DK_OK;
}

dk_status dk_txn__add_cdc(dk_txn *x, const dk_add_file *f, dk_error *err) {
  dk_add_file c = *f;
  c.stats = NULL;
  c.tags_json = NULL;
  c.dv = NULL;
  c.clustering_provider = NULL;
  c.data_change = 0;
  DK_RETURN_NOT_OK(dk_txn_add_file(x, &c, err));
  x->adds[x->n_adds - 1].cdc = 1;
  return DK_OK;
}

dk_status dk_txn__add_entry(dk_txn *x, const dk_file_entry *f, int data_change, dk_error *err) {
  DK_RETURN_NOT_OK(grow((void **)&x->adds, &x->cap_adds, x->n_adds, sizeof *x->adds, x->alloc,
                        err));
  txn_add *a = &x->adds[x->n_adds];
  memset(a, 0, sizeof *a);
  a->path = ar_dup(&x->ar, f->path, err);
  a->n_pv = f->n_partition_values;
  if (a->n_pv) {
    a->pv = dk__arena_alloc(&x->ar, 2 * a->n_pv * sizeof *a->pv, err);
    if (!a->pv) return DK_NOMEM;
    for (size_t k = 0; k < 2 * a->n_pv; k++) {
      a->pv[k] = f->partition_kv[k] ? ar_dup(&x->ar, f->partition_kv[k], err) : NULL;
      if (f->partition_kv[k] && !a->pv[k]) return DK_NOMEM;
    }
  }
  a->size = f->size;
  a->mtime = f->modification_time;
  a->data_change = data_change ? 1 : 0;
  a->stats = f->stats ? ar_dup(&x->ar, f->stats, err) : NULL;
  a->tags = f->tags_json ? ar_dup(&x->ar, f->tags_json, err) : NULL;
  a->num_records = stats_num_records(f->stats);
  a->base_row_id = f->has_base_row_id ? f->base_row_id : -1;
  a->fixed_row_id = f->has_base_row_id;
  a->drcv = f->has_default_row_commit_version ? f->default_row_commit_version : -1;
  if (f->dv) {
    a->dv = dk__arena_alloc(&x->ar, sizeof *a->dv, err);
    if (!a->dv) return DK_NOMEM;
    *a->dv = *f->dv;
    a->dv->path_or_inline_dv = ar_dup(&x->ar, f->dv->path_or_inline_dv, err);
    if (!a->dv->path_or_inline_dv) return DK_NOMEM;
  }
  if (!a->path || (f->stats && !a->stats) || (f->tags_json && !a->tags)) return DK_NOMEM;
  x->n_adds++;
  return DK_OK;
}

dk_status dk_txn_remove_file(dk_txn *x, int64_t i, int data_change, dk_error *err) {
  DK_RETURN_IF(!x || !x->snap, DK_INVALID, err, "dk_txn_remove_file: no read snapshot");
  DK_RETURN_IF(i < 0 || i >= dk_snapshot_num_files(x->snap), DK_INVALID, err,
               "dk_txn_remove_file: file %lld out of range", (long long)i);
  if (data_change && dk_txn__conf_true(&x->meta, "delta.appendOnly"))
    return dk__error_set(err, DK_UNSUPPORTED,
                         "%s: this table is configured to only allow appends "
                         "(delta.appendOnly=true); a remove with dataChange=true is refused",
                         x->table->root);
  dk_file_entry fe;
  DK_RETURN_NOT_OK(dk_snapshot_file(&fe, x->snap, i, err));
  uint64_t *v;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&x->removed_paths, fe.path, strlen(fe.path), &v, &ins, err));
  DK_RETURN_IF(!ins, DK_INVALID, err, "file '%s' removed twice (DELTA_DUPLICATE_ACTIONS_FOUND)",
               fe.path);
  DK_RETURN_NOT_OK(grow((void **)&x->removes, &x->cap_removes, x->n_removes,
                        sizeof *x->removes, x->alloc, err));
  x->removes[x->n_removes].idx = i;
  x->removes[x->n_removes++].data_change = data_change ? 1 : 0;
  return DK_OK;
}

/* delta-spark MaterializedRowTrackingColumn.updateMaterializedColumnName: on a table whose
 * protocol supports rowTracking, the new metadata names the columns row ids and row commit
 * versions would be materialized in — the table's current names, else fresh
 * "_row-id-col-<uuid>" ones (a name in the new metadata is never taken: it may come from
 * another table); without rowTracking the names are dropped. Spark resolves
 * _metadata.row_id through them. */
static dk_status materialize_row_tracking_names(dk_txn *x, dk_error *err) {
  static const char *const key[2] = {"delta.rowTracking.materializedRowIdColumnName",
                                     "delta.rowTracking.materializedRowCommitVersionColumnName"};
  static const char *const prefix[2] = {"_row-id-col-", "_row-commit-version-col-"};
  const char **conf = dk__arena_alloc(&x->ar, (2 * x->meta.n_conf + 4) * sizeof *conf, err);
  if (!conf) return DK_NOMEM;
  size_t n = 0;
  for (size_t i = 0; i < x->meta.n_conf; i++) {
    if (!strcmp(x->meta.conf[2 * i], key[0]) || !strcmp(x->meta.conf[2 * i], key[1])) continue;
    conf[2 * n] = x->meta.conf[2 * i];
    conf[2 * n + 1] = x->meta.conf[2 * i + 1];
    n++;
  }
  if (dk_txn__protocol_supports(&x->protocol, "rowTracking")) {
    for (int k = 0; k < 2; k++) {
      const char *cur = x->snap ? dk_snapshot_property(x->snap, key[k]) : NULL;
      char fresh[64];
      if (!cur) {
        char id[37];
        dk_txn__uuid(id);
        snprintf(fresh, sizeof fresh, "%s%s", prefix[k], id);
      }
      conf[2 * n] = key[k];
      conf[2 * n + 1] = ar_dup(&x->ar, cur ? cur : fresh, err);
      if (!conf[2 * n + 1]) return DK_NOMEM;
      n++;
    }
  }
  x->meta.conf = conf;
  x->meta.n_conf = n;
  return DK_OK;
}

dk_status dk_txn_set_metadata(dk_txn *x, const dk_metadata_spec *m, dk_error *err) {
  DK_RETURN_IF(!x || !m || !m->schema_string, DK_INVALID, err,
               "dk_txn_set_metadata: no schema");
  DK_RETURN_IF(m->version > DK_METADATA_SPEC_VERSION, DK_UNSUPPORTED, err,
               "dk_metadata_spec version %u is newer than dk's", m->version);
  DK_RETURN_IF(x->has_new_meta, DK_INVALID, err,
               "cannot change the metadata more than once in a transaction");
  /* column mapping: ids and physical names for the fields that have none */
  const char *schema_string = m->schema_string, *cm_mode = NULL;
  for (size_t i = 0; i < m->n_configuration; i++)
    if (m->configuration[2 * i] && !strcmp(m->configuration[2 * i], "delta.columnMapping.mode"))
      cm_mode = m->configuration[2 * i + 1];
  int64_t max_column_id;
  DK_RETURN_NOT_OK(dk_txn__assign_column_mapping(&schema_string, &max_column_id, x, cm_mode,
                                                 err));
  /* the schema must parse, and partition columns must be in it */
  const dk_type *schema = NULL;
  DK_RETURN_NOT_OK(dk_schema__parse(&schema, &x->ar, schema_string, strlen(schema_string),
                                    err));
  for (size_t i = 0; i < m->n_partition_columns; i++)
    DK_RETURN_IF(!dk_schema_find(schema, m->partition_columns[i]), DK_INVALID, err,
                 "partition column '%s' is not in the schema", m->partition_columns[i]);
  txn_meta nm = {0};
  char id[37];
  if (m->id) nm.id = ar_dup(&x->ar, m->id, err);
  else if (x->snap) nm.id = x->meta.id;
  else {
    dk_txn__uuid(id);
    nm.id = ar_dup(&x->ar, id, err);
  }
  nm.name = ar_dup(&x->ar, m->name, err);
  nm.description = ar_dup(&x->ar, m->description, err);
  nm.provider = "parquet";
  nm.schema_string = ar_dup(&x->ar, schema_string, err);
  nm.created_time = m->created_time >= 0 ? m->created_time
                                         : (x->snap ? x->meta.created_time : txn_now(x));
  nm.n_part = m->n_partition_columns;
  DK_RETURN_NOT_OK(dup_list(&nm.part, &x->ar, m->partition_columns, m->n_partition_columns, err));
  /* delta.minReaderVersion / minWriterVersion / delta.feature.* are consumed, not stored */
  const char **conf = dk__arena_alloc(&x->ar, 2 * (m->n_configuration + 1) * sizeof *conf, err);
  if (!conf) return DK_NOMEM;
  size_t nc = 0;
  for (size_t i = 0; i < m->n_configuration; i++) {
    const char *k = m->configuration[2 * i], *v = m->configuration[2 * i + 1];
    DK_RETURN_IF(!k || !v, DK_INVALID, err, "table property %zu has a NULL key or value", i);
    if (max_column_id >= 0 && !strcmp(k, "delta.columnMapping.maxColumnId")) continue;
    conf[2 * nc] = ar_dup(&x->ar, k, err);
    conf[2 * nc + 1] = ar_dup(&x->ar, v, err);
    if (!conf[2 * nc] || !conf[2 * nc + 1]) return DK_NOMEM;
    nc++;
  }
  if (max_column_id >= 0) {
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", (long long)max_column_id);
    conf[2 * nc] = "delta.columnMapping.maxColumnId";
    conf[2 * nc + 1] = ar_dup(&x->ar, buf, err);
    if (!conf[2 * nc + 1]) return DK_NOMEM;
    nc++;
  }
  nm.conf = conf;
  nm.n_conf = nc;
  if (!nm.id || !nm.schema_string) return DK_NOMEM;
  x->meta = nm;
  x->meta_schema = schema;
  x->has_new_meta = 1;
  /* a new table gets the protocol its properties need; an existing one is upgraded when a
   * property needs a feature its protocol lacks */
  if (!x->has_new_protocol) {
    dk_protocol need;
    DK_RETURN_NOT_OK(dk_txn__derive_protocol(&need, &x->ar, &nm, schema, err));
    if (!x->snap) {
      x->protocol = need;
      x->has_new_protocol = 1;
    } else {
      int upgrade = need.min_reader_version > x->protocol.min_reader_version ||
                    need.min_writer_version > x->protocol.min_writer_version;
      for (size_t i = 0; i < need.n_writer_features && !upgrade; i++)
        upgrade = !dk_txn__protocol_supports(&x->protocol, need.writer_features[i]);
      if (upgrade)
        return dk__error_set(err, DK_UNSUPPORTED,
                             "%s: the new metadata needs a protocol upgrade (writer version %d "
                             "or features); stage it with dk_txn_set_protocol",
                             x->table->root, (int)need.min_writer_version);
    }
  }
  /* strip the consumed properties */
  size_t w = 0;
  for (size_t i = 0; i < x->meta.n_conf; i++) {
    const char *k = x->meta.conf[2 * i];
    if (!strcmp(k, "delta.minReaderVersion") || !strcmp(k, "delta.minWriterVersion") ||
        !strncmp(k, "delta.feature.", 14))
      continue;
    conf[2 * w] = conf[2 * i];
    conf[2 * w + 1] = conf[2 * i + 1];
    w++;
  }
  x->meta.n_conf = w;
  return materialize_row_tracking_names(x, err);
}

dk_status dk_txn_set_protocol(dk_txn *x, const dk_protocol *p, dk_error *err) {
  DK_RETURN_IF(!x || !p, DK_INVALID, err, "dk_txn_set_protocol: NULL");
  DK_RETURN_NOT_OK(dk_txn__check_write_protocol(p, err));
  if (x->snap && dk_txn__protocol_removes_features(p, dk_snapshot_protocol(x->snap)))
    return dk__error_set(err, DK_INVALID,
                         "%s: the new protocol drops a feature of the table (DROP FEATURE is not "
                         "supported)",
                         x->table->root);
  DK_RETURN_NOT_OK(protocol_copy(&x->protocol, &x->ar, p, err));
  x->has_new_protocol = 1;
  return x->has_new_meta ? materialize_row_tracking_names(x, err) : DK_OK;
}

dk_status dk_txn_set_app_version(dk_txn *x, const char *app_id, int64_t version,
                                 dk_error *err) {
  DK_RETURN_IF(!x || !app_id || !*app_id, DK_INVALID, err, "dk_txn_set_app_version: no appId");
  DK_RETURN_IF(x->app_id && strcmp(x->app_id, app_id) != 0, DK_INVALID, err,
               "one app transaction per commit (have '%s', got '%s')", x->app_id, app_id);
  x->app_id = ar_dup(&x->ar, app_id, err);
  x->app_version = version;
  return x->app_id ? DK_OK : DK_NOMEM;
}

dk_status dk_txn_set_domain(dk_txn *x, const char *domain, const char *configuration,
                            int removed, dk_error *err) {
  DK_RETURN_IF(!x || !domain || !*domain, DK_INVALID, err, "dk_txn_set_domain: no domain");
  DK_RETURN_IF(!strncmp(domain, "delta.", 6), DK_INVALID, err,
               "domain '%s': system domains (delta.*) cannot be written by users", domain);
  DK_RETURN_IF(!dk_txn__protocol_supports(&x->protocol, "domainMetadata"), DK_UNSUPPORTED, err,
               "%s: domain metadata needs the domainMetadata table feature", x->table->root);
  for (size_t i = 0; i < x->n_domains; i++)
    DK_RETURN_IF(!strcmp(x->domains[i].domain, domain), DK_INVALID, err,
                 "domain '%s' set twice in one commit", domain);
  DK_RETURN_NOT_OK(grow((void **)&x->domains, &x->cap_domains, x->n_domains, sizeof *x->domains,
                        x->alloc, err));
  txn_domain *d = &x->domains[x->n_domains];
  d->domain = ar_dup(&x->ar, domain, err);
  d->config = ar_dup(&x->ar, configuration ? configuration : "", err);
  d->removed = removed ? 1 : 0;
  if (!d->domain || !d->config) return DK_NOMEM;
  x->n_domains++;
  return DK_OK;
}

dk_status dk_txn_set_metric(dk_txn *x, const char *name, int64_t value, dk_error *err) {
  DK_RETURN_IF(!x || !name, DK_INVALID, err, "dk_txn_set_metric: no name");
  for (size_t i = 0; i < x->n_metrics; i++)
    if (!strcmp(x->metric_k[i], name)) {
      x->metric_v[i] = value;
      return DK_OK;
    }
  size_t cap = x->cap_metrics;
  DK_RETURN_NOT_OK(grow((void **)&x->metric_k, &cap, x->n_metrics, sizeof *x->metric_k,
                        x->alloc, err));
  cap = x->cap_metrics;
  DK_RETURN_NOT_OK(grow((void **)&x->metric_v, &cap, x->n_metrics, sizeof *x->metric_v,
                        x->alloc, err));
  x->cap_metrics = cap;
  x->metric_k[x->n_metrics] = ar_dup(&x->ar, name, err);
  if (!x->metric_k[x->n_metrics]) return DK_NOMEM;
  x->metric_v[x->n_metrics++] = value;
  return DK_OK;
}

void dk_txn_clear_metrics(dk_txn *x) {
  if (x) x->n_metrics = 0; /* the names stay in the transaction's arena until it ends */
}

/* ---- serialization ------------------------------------------------------------------------ */

dk_status dk_txn__put_key(dk_buf *b, const char *k, dk_error *err) {
  DK_RETURN_NOT_OK(dk__json_write_str(b, k, strlen(k), err));
  return dk__buf_putc(b, ':', err);
}

dk_status dk_txn__put_str(dk_buf *b, const char *s, dk_error *err) {
  if (!s) return dk__buf_puts(b, "null", err);
  return dk__json_write_str(b, s, strlen(s), err);
}

dk_status dk_txn__put_kv_map(dk_buf *b, const char *const *kv, size_t n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
  for (size_t i = 0; i < n; i++) {
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(dk_txn__put_key(b, kv[2 * i], err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, kv[2 * i + 1], err));
  }
  return dk__buf_putc(b, '}', err);
}

dk_status dk_txn__put_json_list(dk_buf *b, const char *const *l, size_t n, dk_error *err) {
  dk_buf in;
  dk__buf_init(&in, b->alloc);
  dk_status st = dk__buf_putc(&in, '[', err);
  for (size_t i = 0; i < n && !st; i++) {
    if (i) st = dk__buf_putc(&in, ',', err);
    if (!st) st = dk_txn__put_str(&in, l[i], err);
  }
  if (!st) st = dk__buf_putc(&in, ']', err);
  if (!st) st = dk_txn__put_str(b, in.data, err);
  dk__buf_dispose(&in);
  return st;
}

/* A file's identity in a snapshot: its path and deletion vector (delta-spark's
 * UniqueFileActionTuple of pathAsUri and the DV's unique id). */
dk_status dk_txn__file_key(dk_buf *b, const dk_file_entry *f, dk_error *err) {
  dk__buf_clear(b);
  DK_RETURN_NOT_OK(dk__buf_puts(b, f->path, err));
  if (f->dv) {
    DK_RETURN_NOT_OK(dk__buf_putc(b, '\n', err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, f->dv->storage_type, err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, f->dv->path_or_inline_dv, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, "@%d", (int)f->dv->offset));
  }
  return DK_OK;
}

static dk_status put_str_list(dk_buf *b, const char *const *l, size_t n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
  for (size_t i = 0; i < n; i++) {
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, l[i], err));
  }
  return dk__buf_putc(b, ']', err);
}

dk_status dk_txn__put_dv(dk_buf *b, const dk_dv_descriptor *dv, dk_error *err) {
  char st[2] = {dv->storage_type, 0};
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"storageType\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, st, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"pathOrInlineDv\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, dv->path_or_inline_dv, err));
  if (dv->offset >= 0) DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"offset\":%d", (int)dv->offset));
  return dk__buf_printf(b, err, ",\"sizeInBytes\":%d,\"cardinality\":%lld}",
                        (int)dv->size_in_bytes, (long long)dv->cardinality);
}

dk_status dk_txn__put_path(dk_buf *b, const char *path, dk_error *err) {
  dk_buf enc;
  dk__buf_init(&enc, b->alloc);
  dk_status st;
  if (strstr(path, "://")) st = dk__buf_puts(&enc, path, err); /* absolute URI: as given */
  else st = dk_txn__uri_encode_path(&enc, path, err);
  if (!st) st = dk_txn__put_str(b, enc.data ? enc.data : "", err);
  dk__buf_dispose(&enc);
  return st;
}

dk_status dk_txn__put_file_fields(dk_buf *b, const char *stats, const char *tags_json,
                                  const dk_dv_descriptor *dv, int has_brid, int64_t brid,
                                  int has_drcv, int64_t drcv, dk_error *err) {
  if (stats) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"stats\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, stats, err));
  }
  if (tags_json) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"tags\":", err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, tags_json, err));
  }
  if (dv) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"deletionVector\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_dv(b, dv, err));
  }
  if (has_brid) DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"baseRowId\":%lld", (long long)brid));
  if (has_drcv)
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"defaultRowCommitVersion\":%lld", (long long)drcv));
  return DK_OK;
}

dk_status dk_txn__put_metadata(dk_buf *b, const txn_meta *m, const char *const *extra, size_t n_extra,
                              dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"metaData\":{\"id\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, m->id, err));
  if (m->name) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"name\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, m->name, err));
  }
  if (m->description) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"description\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, m->description, err));
  }
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"format\":{\"provider\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, m->provider ? m->provider : "parquet", err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"options\":{}},\"schemaString\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, m->schema_string, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"partitionColumns\":", err));
  DK_RETURN_NOT_OK(put_str_list(b, m->part, m->n_part, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"configuration\":{", err));
  size_t k = 0;
  for (size_t i = 0; i < m->n_conf; i++, k++) {
    if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(dk_txn__put_key(b, m->conf[2 * i], err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, m->conf[2 * i + 1], err));
  }
  for (size_t i = 0; i < n_extra; i++, k++) {
    if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(dk_txn__put_key(b, extra[2 * i], err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, extra[2 * i + 1], err));
  }
  DK_RETURN_NOT_OK(dk__buf_putc(b, '}', err));
  if (m->created_time >= 0)
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"createdTime\":%lld", (long long)m->created_time));
  return dk__buf_puts(b, "}}\n", err);
}

dk_status dk_txn__put_protocol(dk_buf *b, const dk_protocol *p, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, "{\"protocol\":{\"minReaderVersion\":%d,"
                                  "\"minWriterVersion\":%d",
                                  (int)p->min_reader_version, (int)p->min_writer_version));
  if (p->min_reader_version >= 3) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"readerFeatures\":", err));
    DK_RETURN_NOT_OK(put_str_list(b, p->reader_features, p->n_reader_features, err));
  }
  if (p->min_writer_version >= 7) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"writerFeatures\":", err));
    DK_RETURN_NOT_OK(put_str_list(b, p->writer_features, p->n_writer_features, err));
  }
  return dk__buf_puts(b, "}}\n", err);
}

int dk_txn__is_blind_append(const dk_txn *x) {
  return x->n_removes == 0 && x->n_preds == 0 && x->read_paths.count == 0 && x->n_dyn == 0;
}

const char *dk_txn__row_tracking_col(const dk_txn *x, int which) {
  if (!dk_txn__protocol_supports(&x->protocol, "rowTracking") ||
      !dk_txn__conf_true(&x->meta, "delta.enableRowTracking"))
    return NULL;
  return dk_txn__meta_conf(&x->meta, which ? "delta.rowTracking.materializedRowCommitVersionColumnName"
                                           : "delta.rowTracking.materializedRowIdColumnName");
}

static int row_tracking_on(const dk_txn *x) {
  return dk_txn__protocol_supports(&x->protocol, "rowTracking") &&
         !dk_txn__conf_true(&x->meta, "delta.rowTrackingSuspended");
}

static int ict_on(const dk_txn *x) {
  return dk_txn__conf_true(&x->meta, "delta.enableInCommitTimestamps");
}

static const char *iso_name(dk_isolation i) {
  switch (i) {
    case DK_ISOLATION_WRITE_SERIALIZABLE: return "WriteSerializable";
    case DK_ISOLATION_SNAPSHOT: return "SnapshotIsolation";
    default: return "Serializable";
  }
}

/* The commit file for attempt version v: *ts_out = commitInfo timestamp (ICT when on). */
/* One remove of a commit, with the removed file's extended metadata and stats. */
static dk_status put_remove(dk_buf *b, const dk_file_entry *f, int data_change, int64_t now,
                            dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"remove\":{\"path\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_path(b, f->path, err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err,
                                  ",\"deletionTimestamp\":%lld,\"dataChange\":%s,"
                                  "\"extendedFileMetadata\":true,\"partitionValues\":",
                                  (long long)now, data_change ? "true" : "false"));
  DK_RETURN_NOT_OK(dk_txn__put_kv_map(b, f->partition_kv, f->n_partition_values, err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"size\":%lld", (long long)f->size));
  DK_RETURN_NOT_OK(dk_txn__put_file_fields(b, f->stats, f->tags_json, f->dv, f->has_base_row_id,
                                           f->base_row_id, f->has_default_row_commit_version,
                                           f->default_row_commit_version, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
  return DK_OK;
}

static dk_status build_commit(dk_buf *b, dk_txn *x, int64_t v, int64_t now, int64_t *ts_out,
                              dk_error *err) {
  dk__buf_clear(b);
  int64_t ict = -1;
  if (ict_on(x)) ict = x->last_ict >= now ? x->last_ict + 1 : now;
  *ts_out = ict >= 0 ? ict : now;
  /* row tracking: base row ids above the newest high-water mark */
  int rt = row_tracking_on(x) && x->n_adds > 0, assigned = 0;
  int64_t hwm = x->read_hwm;
  if (rt) {
    for (size_t i = 0; i < x->n_adds; i++) {
      txn_add *a = &x->adds[i];
      if (a->fixed_row_id || a->cdc) continue;
      assigned = 1;
      if (a->num_records < 0)
        return dk__error_set(err, DK_INVALID,
                             "add '%s': row tracking needs stats.numRecords "
                             "(DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS)",
                             a->path);
      a->base_row_id = hwm + 1;
      hwm += a->num_records;
    }
  }
  /* commitInfo */
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"commitInfo\":{", err));
  if (ict >= 0) DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\"inCommitTimestamp\":%lld,", (long long)ict));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\"timestamp\":%lld,\"operation\":", (long long)now));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, x->operation, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"operationParameters\":", err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, x->op_params, err));
  if (x->read_version >= 0)
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"readVersion\":%lld", (long long)x->read_version));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"isolationLevel\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, iso_name(dk_txn__isolation(x)), err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"isBlindAppend\":%s",
                                  dk_txn__is_blind_append(x) ? "true" : "false"));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"operationMetrics\":{", err));
  for (size_t i = 0; i < x->n_metrics; i++) {
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(dk_txn__put_key(b, x->metric_k[i], err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\"%lld\"", (long long)x->metric_v[i]));
  }
  DK_RETURN_NOT_OK(dk__buf_putc(b, '}', err));
  if (x->commit_tags) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"tags\":", err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, x->commit_tags, err));
  }
  if (x->user_metadata) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"userMetadata\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, x->user_metadata, err));
  }
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"engineInfo\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, x->engine_info, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"txnId\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_str(b, x->txn_id, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
  /* metaData (with the ICT enablement properties on the commit that turns ICT on) */
  if (x->has_new_meta) {
    const char *extra[4];
    char vbuf[24], tbuf[24];
    size_t n_extra = 0;
    int was_on = x->snap && dk_snapshot_property(x->snap, "delta.enableInCommitTimestamps") &&
                 !strcmp(dk_snapshot_property(x->snap, "delta.enableInCommitTimestamps"), "true");
    if (ict >= 0 && !was_on && v > 0 &&
        !dk_txn__meta_conf(&x->meta, "delta.inCommitTimestampEnablementVersion")) {
      snprintf(vbuf, sizeof vbuf, "%lld", (long long)v);
      snprintf(tbuf, sizeof tbuf, "%lld", (long long)ict);
      extra[0] = "delta.inCommitTimestampEnablementVersion";
      extra[1] = vbuf;
      extra[2] = "delta.inCommitTimestampEnablementTimestamp";
      extra[3] = tbuf;
      n_extra = 2;
    }
    DK_RETURN_NOT_OK(dk_txn__put_metadata(b, &x->meta, extra, n_extra, err));
  }
  if (x->has_new_protocol) DK_RETURN_NOT_OK(dk_txn__put_protocol(b, &x->protocol, err));
  if (x->app_id) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"txn\":{\"appId\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, x->app_id, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"version\":%lld,\"lastUpdated\":%lld}}\n",
                                    (long long)x->app_version, (long long)now));
  }
  if (rt && assigned)
    DK_RETURN_NOT_OK(dk__buf_printf(
        b, err,
        "{\"domainMetadata\":{\"domain\":\"delta.rowTracking\",\"configuration\":"
        "\"{\\\"rowIdHighWaterMark\\\":%lld}\",\"removed\":false}}\n",
        (long long)hwm));
  for (size_t i = 0; i < x->n_domains; i++) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"domainMetadata\":{\"domain\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, x->domains[i].domain, err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"configuration\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, x->domains[i].config, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"removed\":%s}}\n",
                                    x->domains[i].removed ? "true" : "false"));
  }
  if (x->n_removes) { /* the stats come through an iterator (dk_snapshot_file has none) */
    dk_file_iter *it;
    DK_RETURN_NOT_OK(dk_snapshot_files_open(&it, x->snap, NULL, err));
    dk_status st = DK_OK;
    for (size_t i = 0; i < x->n_removes && st == DK_OK; i++) {
      const dk_file_entry *f = NULL;
      st = dk_file_iter_seek(it, x->removes[i].idx, err);
      if (st == DK_OK) st = dk_file_iter_next(&f, it, err);
      if (st == DK_OK) st = put_remove(b, f, x->removes[i].data_change, now, err);
    }
    dk_file_iter_free(it);
    DK_RETURN_NOT_OK(st);
  }

  for (size_t i = 0; i < x->n_adds; i++) {
    const txn_add *a = &x->adds[i];
    if (a->cdc) { /* PROTOCOL "Add CDC File" */
      DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"cdc\":{\"path\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_path(b, a->path, err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"partitionValues\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_kv_map(b, a->pv, a->n_pv, err));
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"size\":%lld,\"dataChange\":false}}\n",
                                      (long long)a->size));
      continue;
    }
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"add\":{\"path\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_path(b, a->path, err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"partitionValues\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_kv_map(b, a->pv, a->n_pv, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err,
                                    ",\"size\":%lld,\"modificationTime\":%lld,\"dataChange\":%s",
                                    (long long)a->size, (long long)a->mtime,
                                    a->data_change ? "true" : "false"));
    int has_rid = a->fixed_row_id || rt;
    int64_t drcv = a->fixed_row_id ? a->drcv : v;
    DK_RETURN_NOT_OK(dk_txn__put_file_fields(b, a->stats, a->tags, a->dv, has_rid, a->base_row_id,
                                             has_rid && drcv >= 0, drcv, err));
    if (a->clustering) {
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"clusteringProvider\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_str(b, a->clustering, err));
    }
    DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
  }
  return DK_OK;
}

/* ---- commit ------------------------------------------------------------------------------- */

static dk_status fs_commit(dk_committer *c, dk_storage *sto, const char *root, int64_t v,
                           const char *actions, size_t len, dk_error *err) {
  (void)c;
  dk_buf name, key;
  dk__buf_init(&name, NULL);
  dk__buf_init(&key, NULL);
  dk_status st = dk_log__name_commit(&name, v, err);
  if (!st) st = dk_log__file_key(&key, root, name.data, err);
  /* a winner is usually there already when writers race: finding it costs a stat, writing
   * (and syncing) a commit that cannot land costs far more */
  dk_file_info fi;
  if (!st && sto->stat(sto, key.data, &fi, NULL) == DK_OK)
    st = dk__error_set(err, DK_CONFLICT, "%s exists", key.data);
  else if (!st)
    st = sto->put_if_absent(sto, key.data, actions, len, err);
  dk__buf_dispose(&name);
  dk__buf_dispose(&key);
  return st;
}

static dk_committer filesystem_committer = {1, NULL, fs_commit};

/* After an attempt whose outcome is unknown: did version v land with our txnId? 1 yes,
 * 0 another commit has it, -1 it does not exist. */
static int landed(dk_txn *x, int64_t v) {
  dk_arena ar;
  dk__arena_init(&ar, x->alloc, 4096);
  txn_winner w;
  dk_status st = dk_txn__read_winner(&w, x, v, &ar, NULL);
  int r = st == DK_NOT_FOUND ? -1 : (!st && w.txn_id && !strcmp(w.txn_id, x->txn_id)) ? 1 : 0;
  dk__arena_dispose(&ar);
  return r;
}

dk_status dk_txn_commit(dk_txn *x, dk_commit_result *out, dk_error *err) {
  if (out) {
    unsigned ver = out->version;
    memset(out, 0, sizeof *out);
    out->version = ver;
    out->committed_version = -1;
  }
  if (!x) return dk__error_set(err, DK_INVALID, "dk_txn_commit: NULL transaction");
  dk_status st = DK_OK;
  int uncertain = 0; /* an attempt failed with its outcome unknown */
  dk_buf b;
  dk__buf_init(&b, x->alloc);
  if (!x->snap && !x->has_new_meta) {
    st = dk__error_set(err, DK_INVALID,
                       "%s: a new table needs metadata (DELTA_METADATA_ABSENT)", x->table->root);
    goto cleanup;
  }
  if (x->has_new_protocol) DK_CHECK_GOTO(dk_txn__check_write_protocol(&x->protocol, err));
  dk_committer *cm = x->committer ? x->committer : &filesystem_committer;
  int64_t v = x->read_version + 1;
  int attempts = 0;
  dk_arena war;
  dk__arena_init(&war, x->alloc, 16384);
  for (;;) {
    attempts++;
    int64_t ts = 0, now = txn_now(x);
    st = build_commit(&b, x, v, now, &ts, err);
    if (st) break;
    dk_error cerr;
    dk_error_init(&cerr);
    st = cm->commit(cm, x->table->sto, x->table->root, v, b.data, b.len, &cerr);
    int self = 0;
    if (st != DK_OK && st != DK_CONFLICT) {
      int l = landed(x, v);
      if (l == 1) self = 1; /* the write landed though its outcome was lost */
      else if (l == 0) st = DK_CONFLICT;
      else {
        if (err) *err = cerr;
        uncertain = 1; /* the attempt may still land (an object store's PUT in flight) */
        break;
      }
    }
    if (st == DK_OK || self) {
      st = DK_OK;
      if (out) {
        out->committed_version = v;
        out->attempts = attempts;
        out->commit_timestamp = ts;
        out->self_detected = self;
        memcpy(out->txn_id, x->txn_id, sizeof x->txn_id);
      }
      break;
    }
    /* version v exists: check every winner from v on, then try after the newest */
    dk_isolation iso = dk_txn__isolation(x);
    int64_t first = v;
    dk_conflict_kind kind = DK_CONFLICT_NONE;
    for (;; v++) {
      dk__arena_reset(&war);
      txn_winner w;
      st = dk_txn__read_winner(&w, x, v, &war, err);
      if (st == DK_NOT_FOUND) {
        st = DK_OK;
        break;
      }
      if (st) break;
      if (v == first && w.txn_id && !strcmp(w.txn_id, x->txn_id)) {
        /* our own earlier attempt (its success response was lost) */
        if (out) {
          out->committed_version = v;
          out->attempts = attempts;
          out->commit_timestamp = ts;
          out->self_detected = 1;
          memcpy(out->txn_id, x->txn_id, sizeof x->txn_id);
        }
        st = DK_OK;
        goto done;
      }
      st = dk_txn__check_winner(x, &w, iso, &kind, err);
      if (st) break;
    }
    if (st) {
      if (out && st == DK_CONFLICT) {
        out->conflict = kind;
        out->conflict_version = v;
        out->attempts = attempts;
      }
      break;
    }
    if (attempts >= x->max_attempts) {
      st = dk__error_set(err, DK_CONFLICT,
                         "DELTA_MAX_COMMIT_RETRIES_EXCEEDED: %s: gave up after %d attempts "
                         "(first attempted version %lld, last %lld)",
                         x->table->root, attempts, (long long)(x->read_version + 1),
                         (long long)(v - 1));
      if (out) {
        out->conflict = DK_CONFLICT_MAX_RETRIES;
        out->conflict_version = v - 1;
        out->attempts = attempts;
      }
      break;
    }
  }
done:
  dk__arena_dispose(&war);
  /* delta-spark's post-commit hook: a checkpoint every delta.checkpointInterval versions */
  if (!st && v > 0 && !x->no_auto_checkpoint) {
    const char *iv = dk_txn__meta_conf(&x->meta, "delta.checkpointInterval");
    long interval = iv ? strtol(iv, NULL, 10) : 10;
    if (interval > 0 && v % interval == 0) {
      dk_checkpoint_options co = {.version = DK_CHECKPOINT_OPTIONS_VERSION, .at_version = v,
                                  .now_ms = x->now_ms};
      dk_error cerr;
      dk_error_init(&cerr);
      int r = dk_table_checkpoint(NULL, x->table, &co, &cerr) == DK_OK ? 1 : -1;
      if (out) out->checkpoint = r;
    }
  }
cleanup:
  dk__buf_dispose(&b);
  /* a commit that failed for certain leaves no data file of its own behind (one whose outcome
   * is unknown keeps them: it may yet land and reference them) */
  if (st && !uncertain) discard_written(x);
  txn_free(x);
  return st;
}
