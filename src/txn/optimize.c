/*
** optimize.c — OPTIMIZE: bin-packing compaction (delta-spark commands/OptimizeTableCommand.scala
** OptimizeExecutor and OptimizeTableStrategy's CompactionStrategy; PROTOCOL.md "Add File" /
** "Remove File" with dataChange=false; write-path.md §4).
**
** As delta-spark does it: the files the partition predicate selects that are smaller than
** minFileSize, or whose deletion vector removes more than maxDeletedRowsRatio of their rows
** (or that have one and no numRecords), are grouped by partition, sorted by size and packed
** into bins of at most maxFileSize bytes; bins of one file are left alone. Each bin is read
** (deletion vectors applied) through the scan's file reader and written back as new files by
** dk_txn_write with dataChange=false, and every compacted file is removed with
** dataChange=false, in one commit (operation OPTIMIZE; all file actions without data change,
** so SnapshotIsolation). Only the compacted files and the predicate are recorded as read.
** When a concurrent commit gets in the way, delta-spark's commitAndRetry commits the same
** actions on the new version as long as every compacted file (path and DV) is still live and
** the partition columns are unchanged; dk does the same, else the conflict stands.
*/
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "dk/maintenance.h"
#include "scan/file_reader.h"
#include "txn/txn_int.h"

#define GiB (1LL << 30)

typedef struct cand {
  dk_file_entry e;   /* borrowed from the read snapshot */
  int64_t nrec;      /* numRecords, -1 unknown */
  uint64_t group;    /* partition, numbered in order of first appearance */
} cand;

typedef struct opt {
  dk_table *t;
  dk_optimize_options o;
  dk_snapshot *s;           /* the snapshot the bins were made on */
  cand *c;                  /* compacted files, bin by bin */
  size_t n;
  size_t *bin_end;          /* bin b is c[bin_end[b-1] .. bin_end[b]) */
  size_t n_bins;
  int64_t n_groups;
  int64_t considered;       /* files the predicate selected */
  dk_arena ar;              /* the new files' adds, kept for a retry */
  dk_file_entry *adds;
  size_t n_adds;
  dk_buf params;
  dk_error *err;
} opt;

/* ---- reading a bin as one Arrow stream ------------------------------------------------------ */

typedef struct bin_stream {
  dk_scan__file_reader *rd;
  const cand *c;
  size_t n, next;
  dk_scan__file *cur;
  dk_error failed;          /* the reader's own error (the stream reports DK_CALLBACK) */
} bin_stream;

static dk_status bs_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  return dk_scan__file_reader_schema(out, ((bin_stream *)state)->rd, err);
}

static dk_status bs_next(void *state, struct ArrowArray *out, dk_error *err) {
  bin_stream *b = state;
  dk_status st = DK_OK;
  for (;;) {
    if (!b->cur) {
      if (b->next == b->n) {
        out->release = NULL;
        return DK_OK;
      }
      st = dk_scan__file_open(&b->cur, b->rd, &b->c[b->next++].e, err);
      if (st) break;
    }
    st = dk_scan__file_next(out, b->cur, err);
    if (st || out->release) break;
    dk_scan__file_close(b->cur);
    b->cur = NULL;
  }
  if (st && err) b->failed = *err;
  return st;
}

static void bs_release(void *state) {
  bin_stream *b = state;
  if (b->cur) dk_scan__file_close(b->cur);
  b->cur = NULL;
}

/* ---- choosing the bins ---------------------------------------------------------------------- */

static int cmp_cand(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->e.size != b->e.size) return a->e.size < b->e.size ? -1 : 1;
  return a->e.index < b->e.index ? -1 : a->e.index > b->e.index;
}

static int compactable(const opt *p, const dk_scan_file *f) {
  if (f->entry.size < p->o.min_file_size) return 1;
  const dk_dv_descriptor *dv = f->entry.dv;
  if (!dv) return 0;
  if (f->num_records < 0) return 1; /* a DV and no numRecords: compact to get stats */
  return f->num_records > 0 &&
         (double)dv->cardinality / (double)f->num_records > p->o.max_deleted_rows_ratio;
}

static dk_status choose_bins(opt *p, const char *predicate) {
  dk_error *err = p->err;
  dk_expr *pred = NULL;
  const dk_metadata *md = dk_snapshot_metadata(p->s);
  if (predicate) {
    DK_RETURN_NOT_OK(dk_expr_parse(&pred, predicate, err));
    if (!dk_expr_references_only(pred, md->partition_columns, md->n_partition_columns)) {
      dk_expr_free(pred);
      return dk__error_set(err, DK_INVALID,
                           "OPTIMIZE %s WHERE %s: the predicate may reference only partition "
                           "columns (DELTA_NON_PARTITION_COLUMN_REFERENCE)",
                           p->t->root, predicate);
    }
  }
  dk_scan_options so = {.version = DK_SCAN_OPTIONS_VERSION, .filter = pred, .limit = -1,
                        .keep_residual = 1};
  dk_scan *scan = NULL;
  dk_status st = dk_scan_new(&scan, p->s, &so, err);
  dk_expr_free(pred);
  DK_RETURN_NOT_OK(st);
  int64_t nf = dk_scan_num_files(scan);
  p->considered = nf;
  p->c = dk__calloc(p->t->alloc, (size_t)(nf ? nf : 1), sizeof *p->c);
  p->bin_end = dk__calloc(p->t->alloc, (size_t)(nf ? nf : 1), sizeof *p->bin_end);
  dk_hmap groups;
  dk__hmap_init(&groups, p->t->alloc);
  dk_buf key;
  dk__buf_init(&key, p->t->alloc);
  if (!p->c || !p->bin_end) st = dk__error_set(err, DK_NOMEM, "out of memory (OPTIMIZE)");
  for (int64_t i = 0; i < nf && !st; i++) {
    dk_scan_file f;
    st = dk_scan_file_get(&f, scan, i, err);
    if (st || !compactable(p, &f)) continue;
    dk__buf_clear(&key);
    for (size_t k = 0; k < f.entry.n_partition_values && !st; k++) {
      const char *v = f.entry.partition_kv[2 * k + 1];
      st = v ? dk__buf_printf(&key, err, "v%s%c", v, 0) : dk__buf_append(&key, "n", 2, err);
    }
    uint64_t *slot;
    bool ins;
    if (!st) st = dk__hmap_upsert(&groups, key.data ? key.data : "", key.len, &slot, &ins, err);
    if (st) break;
    if (ins) *slot = (uint64_t)p->n_groups++;
    p->c[p->n++] = (cand){.e = f.entry, .nrec = f.num_records, .group = *slot};
  }
  dk__buf_dispose(&key);
  dk__hmap_dispose(&groups);
  dk_scan_free(scan);
  DK_RETURN_NOT_OK(st);
  qsort(p->c, p->n, sizeof *p->c, cmp_cand);
  /* pack each partition's files, smallest first; keep the bins of two or more files */
  size_t w = 0, start = 0;
  int64_t bin_size = 0;
  for (size_t i = 0; i <= p->n; i++) {
    int close = i == p->n || (i > start && (p->c[i].group != p->c[start].group ||
                                            bin_size + p->c[i].e.size > p->o.max_file_size));
    if (close) {
      if (i - start >= 2) {
        memmove(&p->c[w], &p->c[start], (i - start) * sizeof *p->c);
        w += i - start;
        p->bin_end[p->n_bins++] = w;
      }
      start = i;
      bin_size = 0;
    }
    if (i < p->n) bin_size += p->c[i].e.size;
  }
  p->n = w;
  /* partitions optimized: distinct groups among the bins */
  p->n_groups = 0;
  for (size_t b = 0; b < p->n_bins; b++) {
    size_t first = b ? p->bin_end[b - 1] : 0;
    if (!b || p->c[first].group != p->c[p->bin_end[b - 1] - 1].group) p->n_groups++;
  }
  return DK_OK;
}

/* ---- the commit ----------------------------------------------------------------------------- */

/* live: file key (path and DV) -> index, of every file of s. */
static dk_status live_files(dk_hmap *live, dk_buf *key, dk_snapshot *s, dk_error *err) {
  dk_status st = DK_OK;
  for (int64_t i = 0; i < dk_snapshot_num_files(s) && !st; i++) {
    dk_file_entry f;
    uint64_t *slot;
    bool ins;
    st = dk_snapshot_file(&f, s, i, err);
    if (!st) st = dk_txn__file_key(key, &f, err);
    if (!st) st = dk__hmap_upsert(live, key->data, key->len, &slot, &ins, err);
    if (!st) *slot = (uint64_t)i;
  }
  return st;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Records the read set, removes the compacted files of snapshot `s` (found by path and DV in
 * it: their indexes differ after a retry), sets delta-spark's metrics. */
static dk_status stage_rest(opt *p, dk_txn *x, dk_snapshot *s, dk_optimize_result *res,
                            dk_error *err) {
  if (p->o.predicate) {
    dk_expr *pr = NULL, *ponly = NULL, *rest = NULL;
    const dk_metadata *md = dk_snapshot_metadata(s);
    DK_RETURN_NOT_OK(dk_expr_parse(&pr, p->o.predicate, err));
    dk_status st = dk_expr_split(&ponly, &rest, pr, md->partition_columns,
                                 md->n_partition_columns, err);
    dk_expr_free(pr);
    dk_expr_free(rest);
    DK_RETURN_NOT_OK(st);
    DK_RETURN_NOT_OK(dk_txn__read_predicate(x, ponly, err));
  }
  dk_hmap live;
  dk__hmap_init(&live, p->t->alloc);
  dk_buf key;
  dk__buf_init(&key, p->t->alloc);
  dk_status st = live_files(&live, &key, s, err);
  int64_t removed_bytes = 0, dv_rows = 0, dv_bytes = 0, n_dv = 0;
  for (size_t i = 0; i < p->n && !st; i++) {
    const dk_file_entry *f = &p->c[i].e;
    st = dk_txn__file_key(&key, f, err);
    uint64_t *idx = st ? NULL : dk__hmap_get(&live, key.data, key.len);
    if (!st && !idx)
      st = dk__error_set(err, DK_CONFLICT, "file '%s' is no longer in the table", f->path);
    if (!st) st = dk_txn__read_path(x, f->path, err);
    if (!st) st = dk_txn_remove_file(x, (int64_t)*idx, 0, err);
    removed_bytes += f->size;
    if (f->dv) {
      n_dv++;
      dv_rows += f->dv->cardinality;
      dv_bytes += f->dv->size_in_bytes;
    }
  }
  dk__buf_dispose(&key);
  dk__hmap_dispose(&live);
  DK_RETURN_NOT_OK(st);
  int64_t *sz = dk__calloc(p->t->alloc, p->n_adds ? p->n_adds : 1, sizeof *sz);
  if (!sz) return dk__error_set(err, DK_NOMEM, "out of memory (OPTIMIZE)");
  int64_t added_bytes = 0;
  for (size_t i = 0; i < p->n_adds; i++) added_bytes += sz[i] = p->adds[i].size;
  qsort(sz, p->n_adds, sizeof *sz, cmp_i64);
  size_t na = p->n_adds;
  struct { const char *k; int64_t v; } m[] = {
      {"numRemovedFiles", (int64_t)p->n}, {"numRemovedBytes", removed_bytes},
      {"p25FileSize", na ? sz[na / 4] : 0}, {"numDeletionVectorsRemoved", n_dv},
      {"minFileSize", na ? sz[0] : 0}, {"numAddedFiles", (int64_t)na},
      {"maxFileSize", na ? sz[na - 1] : 0}, {"p75FileSize", na ? sz[na * 3 / 4] : 0},
      {"p50FileSize", na ? sz[na / 2] : 0}, {"numAddedBytes", added_bytes},
      {"numDeletionVectorRowsRemoved", dv_rows}, {"numDeletionVectorBytesRemoved", dv_bytes}};
  dk__free(p->t->alloc, sz);
  for (size_t i = 0; i < DK_ARRAY_LEN(m); i++)
    DK_RETURN_NOT_OK(dk_txn_set_metric(x, m[i].k, m[i].v, err));
  if (res) {
    res->files_added = (int64_t)na;
    res->files_removed = (int64_t)p->n;
    res->bytes_added = added_bytes;
    res->bytes_removed = removed_bytes;
  }
  return DK_OK;
}

static dk_status begin(opt *p, dk_txn **x, dk_snapshot *s, dk_error *err) {
  dk_txn_options to = p->o.txn;
  if (!to.version) to.version = DK_TXN_OPTIONS_VERSION;
  to.operation = "OPTIMIZE";
  to.operation_parameters = p->params.data;
  return dk_txn_begin(x, s, &to, err);
}

/* Copies the adds dk_txn_write staged (for a retry on a newer snapshot): the files are the
 * operation's from here on (a failed attempt leaves them for the next one). */
static dk_status keep_adds(opt *p, dk_txn *x, dk_error *err) {
  p->adds = dk__arena_alloc(&p->ar, (x->n_adds ? x->n_adds : 1) * sizeof *p->adds, err);
  if (!p->adds) return DK_NOMEM;
  for (size_t i = 0; i < x->n_adds; i++) {
    const txn_add *a = &x->adds[i];
    x->adds[i].own = 0;
    dk_file_entry *e = &p->adds[i];
    memset(e, 0, sizeof *e);
    e->path = dk__arena_strndup(&p->ar, a->path, strlen(a->path), err);
    e->size = a->size;
    e->modification_time = a->mtime;
    e->stats = a->stats ? dk__arena_strndup(&p->ar, a->stats, strlen(a->stats), err) : NULL;
    e->n_partition_values = a->n_pv;
    const char **kv = a->n_pv ? dk__arena_alloc(&p->ar, 2 * a->n_pv * sizeof *kv, err) : NULL;
    for (size_t k = 0; kv && k < 2 * a->n_pv; k++)
      kv[k] = a->pv[k] ? dk__arena_strndup(&p->ar, a->pv[k], strlen(a->pv[k]), err) : NULL;
    e->partition_kv = kv;
    if (!e->path || (a->stats && !e->stats) || (a->n_pv && !kv)) return DK_NOMEM;
  }
  p->n_adds = x->n_adds;
  return DK_OK;
}

static dk_status write_bins(opt *p, dk_txn *x, dk_error *err) {
  dk_scan__file_reader_options ro = {0};
  dk_scan__file_reader *rd = NULL;
  DK_RETURN_NOT_OK(dk_scan__file_reader_new(&rd, p->s, &ro, err));
  dk_status st = DK_OK;
  for (size_t b = 0; b < p->n_bins && !st; b++) {
    size_t first = b ? p->bin_end[b - 1] : 0;
    bin_stream bs = {.rd = rd, .c = p->c + first, .n = p->bin_end[b] - first};
    dk_error_init(&bs.failed);
    static const dk_stream_impl impl = {bs_schema, bs_next, bs_release};
    struct ArrowArrayStream in;
    st = dk__stream_init(&in, &impl, &bs, p->t->alloc, err);
    if (st) break;
    dk_write_options wo = {.version = DK_WRITE_OPTIONS_VERSION,
                           .target_file_size = p->o.max_file_size, .threads = p->o.threads,
                           .rearrange_only = 1};
    st = dk_txn_write(NULL, x, &in, &wo, err);
    if (st && bs.failed.code && err) *err = bs.failed; /* the reader's error, not the wrapper's */
    in.release(&in);
  }
  dk_scan__file_reader_free(rd);
  return st;
}

/* After a conflict: whether every compacted file is still live in s and the partition columns
 * are the same (delta-spark's commitAndRetry condition). */
static int still_valid(opt *p, dk_snapshot *s) {
  const dk_metadata *a = dk_snapshot_metadata(p->s), *b = dk_snapshot_metadata(s);
  if (a->n_partition_columns != b->n_partition_columns) return 0;
  for (size_t i = 0; i < a->n_partition_columns; i++)
    if (strcmp(a->partition_columns[i], b->partition_columns[i])) return 0;
  dk_hmap live;
  dk__hmap_init(&live, p->t->alloc);
  dk_buf key;
  dk__buf_init(&key, p->t->alloc);
  int ok = !live_files(&live, &key, s, NULL);
  for (size_t i = 0; i < p->n && ok; i++)
    ok = !dk_txn__file_key(&key, &p->c[i].e, NULL) && dk__hmap_get(&live, key.data, key.len);
  dk__buf_dispose(&key);
  dk__hmap_dispose(&live);
  return ok;
}

dk_status dk_table_optimize(dk_optimize_result *out, dk_table *t, const dk_optimize_options *opts,
                            dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
    out->committed_version = -1;
  }
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_optimize: NULL table");
  DK_RETURN_IF(opts && opts->version > DK_OPTIMIZE_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_optimize_options version %u is newer than dk's", opts->version);
  opt p = {.t = t, .err = err};
  if (opts) p.o = *opts;
  if (p.o.min_file_size <= 0) p.o.min_file_size = GiB;
  if (p.o.max_file_size <= 0) p.o.max_file_size = GiB;
  if (p.o.max_deleted_rows_ratio <= 0) p.o.max_deleted_rows_ratio = 0.05;
  if (p.o.max_attempts <= 0) p.o.max_attempts = 100;
  dk__arena_init(&p.ar, t->alloc, 0);
  dk__buf_init(&p.params, t->alloc);
  dk_txn *x = NULL;
  dk_snapshot *s2 = NULL;
  DK_RETURN_NOT_OK(dk_snapshot_open(&p.s, t, NULL, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(p.s), err);
  if (!st && dk_snapshot_property(p.s, "delta.enableRowTracking") &&
      !strcmp(dk_snapshot_property(p.s, "delta.enableRowTracking"), "true"))
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "OPTIMIZE %s: the table has row tracking enabled (delta.enableRowTracking); "
                       "dk cannot yet materialize the row ids and row commit versions the "
                       "rewritten files must keep",
                       t->root);
  if (!st) st = choose_bins(&p, p.o.predicate);
  if (st) goto cleanup;
  if (out) {
    out->bins = (int64_t)p.n_bins;
    out->partitions_optimized = p.n_groups;
    out->files_considered = p.considered;
  }
  if (!p.n_bins) goto cleanup; /* nothing to compact: no commit, as delta-spark */
  /* {"predicate":"[...]","zOrderBy":"[]","clusterBy":"[]","auto":false} */
  const char *one[1] = {p.o.predicate};
  DK_CHECK_GOTO(dk__buf_puts(&p.params, "{\"predicate\":", err));
  DK_CHECK_GOTO(dk_txn__put_json_list(&p.params, one, p.o.predicate ? 1 : 0, err));
  DK_CHECK_GOTO(dk__buf_puts(&p.params,
                             ",\"zOrderBy\":\"[]\",\"clusterBy\":\"[]\",\"auto\":false}", err));
  DK_CHECK_GOTO(begin(&p, &x, p.s, err));
  DK_CHECK_GOTO(write_bins(&p, x, err));
  DK_CHECK_GOTO(keep_adds(&p, x, err));
  DK_CHECK_GOTO(stage_rest(&p, x, p.s, out, err));
  for (int attempt = 1;; attempt++) {
    dk_commit_result cr = {.version = DK_COMMIT_RESULT_VERSION};
    st = dk_txn_commit(x, &cr, err);
    x = NULL;
    if (out) out->attempts = attempt;
    if (!st && out) out->committed_version = cr.committed_version;
    if (st != DK_CONFLICT || attempt >= p.o.max_attempts) break;
    /* commit the same files on the newest version while every compacted file is live */
    dk_error e2;
    dk_error_init(&e2);
    dk_snapshot_free(s2);
    s2 = NULL;
    if (dk_snapshot_open(&s2, t, NULL, &e2) || !still_valid(&p, s2)) break;
    if (begin(&p, &x, s2, &e2)) break;
    dk_status st2 = DK_OK;
    for (size_t i = 0; i < p.n_adds && !st2; i++) st2 = dk_txn__add_entry(x, &p.adds[i], 0, &e2);
    if (!st2) st2 = stage_rest(&p, x, s2, NULL, &e2);
    if (st2) {
      if (err) *err = e2;
      st = st2;
      break;
    }
  }
  if (st == DK_CONFLICT) /* no attempt landed: the compacted files are nobody's */
    for (size_t i = 0; i < p.n_adds; i++) dk_txn__remove_data_file(t, p.adds[i].path);
cleanup:
  dk_txn_abort(x);
  dk_snapshot_free(s2);
  dk_snapshot_free(p.s);
  dk__free(t->alloc, p.c);
  dk__free(t->alloc, p.bin_end);
  dk__arena_dispose(&p.ar);
  dk__buf_dispose(&p.params);
  return st;
}
