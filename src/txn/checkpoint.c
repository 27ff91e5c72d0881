/*
** checkpoint.c — writing checkpoints and cleaning up the log (PROTOCOL.md "Checkpoints",
** "V2 Spec", "Last Checkpoint File", "Metadata Cleanup"; write-path.md §2; delta-spark
** Checkpoints.scala, MetadataCleanup.scala).
**
** A checkpoint is the reconciled state of one version: protocol, metadata, every app
** transaction, live domain metadata, every live file (dataChange=false) and the tombstones
** still inside delta.deletedFileRetentionDuration (without stats and tags). Tables with
** delta.checkpointPolicy=v2 get a V2 checkpoint whose top-level file is JSON
** (`<v>.checkpoint.<uuid>.json`, delta-spark's default format) with one checkpointMetadata
** action and the file actions inline; other tables a classic Parquet checkpoint written with
** dk's Parquet writer.
**
** The checkpoint file is published with put-if-absent under a new name (or the classic name),
** so a crash leaves no partial checkpoint; `_last_checkpoint` is written (atomically replaced)
** after it, with delta-spark's checksum (log/lastcp.c), and is only ever a hint.
**
** Cleanup keeps the newest checkpoint at or before the last commit older than the cutoff
** (now - delta.logRetentionDuration, truncated to UTC midnight) and everything after it; older
** commits, checkpoints, .crc and compaction files are deleted.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "arrow/array.h"
#include "dk/maintenance.h"
#include "dk/parquet.h"
#include "log/lastcp.h"
#include "log/paths.h"
#include "scan/scan_int.h"
#include "txn/txn_int.h"
#include "util/exec.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One add of the checkpoint, from a file entry with its stats. */
static dk_status put_add(dk_buf *b, const dk_file_entry *f, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"add\":{\"path\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_path(b, f->path, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"partitionValues\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_kv_map(b, f->partition_kv, f->n_partition_values, err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"size\":%lld,\"modificationTime\":%lld,"
                                  "\"dataChange\":false",
                                  (long long)f->size, (long long)f->modification_time));
  DK_RETURN_NOT_OK(dk_txn__put_file_fields(b, f->stats, f->tags_json, f->dv, f->has_base_row_id,
                                           f->base_row_id, f->has_default_row_commit_version,
                                           f->default_row_commit_version, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
  return DK_OK;
}

static dk_status put_file_actions(dk_buf *b, dk_snapshot *s, int64_t min_tomb_ts, int64_t *n_actions,
                                  int64_t *n_adds, dk_error *err) {
  dk_file_iter *it; /* the stats come through an iterator (dk_snapshot_file has none) */
  DK_RETURN_NOT_OK(dk_snapshot_files_open(&it, s, NULL, err));
  dk_status st = DK_OK;
  for (;;) {
    const dk_file_entry *f;
    st = dk_file_iter_next(&f, it, err);
    if (st != DK_OK || !f) break;
    st = put_add(b, f, err);
    if (st != DK_OK) break;
    (*n_actions)++;
    (*n_adds)++;
  }
  dk_file_iter_free(it);
  DK_RETURN_NOT_OK(st);
  for (size_t i = 0; i < s->tombs.n; i++) {
    const dk__tomb *tb = dk_snapshot__tomb_at(s, (int64_t)i);
    if (tb->deletion_timestamp >= 0 && tb->deletion_timestamp <= min_tomb_ts) continue;
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"remove\":{\"path\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_path(b, tb->path, err));
    if (tb->deletion_timestamp >= 0)
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"deletionTimestamp\":%lld",
                                      (long long)tb->deletion_timestamp));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"dataChange\":false", err));
    if (tb->size >= 0)
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"extendedFileMetadata\":true,\"size\":%lld",
                                      (long long)tb->size));
    if (tb->dv) {
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"deletionVector\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_dv(b, tb->dv, err));
    }
    DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
    (*n_actions)++;
  }
  return DK_OK;
}

static dk_status put_non_file_actions(dk_buf *b, dk_snapshot *s, dk_arena *ar, int64_t *n,
                                      dk_error *err) {
  DK_RETURN_NOT_OK(dk_txn__put_protocol(b, dk_snapshot_protocol(s), err));
  txn_meta m;
  DK_RETURN_NOT_OK(dk_txn__meta_from_snapshot(&m, ar, dk_snapshot_metadata(s), err));
  DK_RETURN_NOT_OK(dk_txn__put_metadata(b, &m, NULL, 0, err));
  *n += 2;
  for (size_t i = 0; i < dk_snapshot_num_txns(s); i++) {
    const char *app;
    int64_t v, lu;
    dk_snapshot_txn(&app, &v, &lu, s, i);
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"txn\":{\"appId\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, app, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"version\":%lld", (long long)v));
    if (lu >= 0) DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"lastUpdated\":%lld", (long long)lu));
    DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
    (*n)++;
  }
  for (size_t i = 0; i < s->st.n_domains; i++) {
    const dk__domain *d = &s->st.domains[i];
    if (d->removed) continue;
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"domainMetadata\":{\"domain\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, d->domain, err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"configuration\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, d->config ? d->config : "", err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"removed\":false}}\n", err));
    (*n)++;
  }
  return DK_OK;
}


/* ---- classic Parquet checkpoints ------------------------------------------------------------ */


#define NUL ARROW_FLAG_NULLABLE

static dk_status leaf(struct ArrowSchema *s, const char *name, dk_atype_id id, int64_t flags,
                      dk_error *err) {
  dk__schema_release(s);
  dk_atype t = dk__atype_make(id);
  return dk__schema_init(s, &t, name, flags, 0, err);
}

static dk_status node(struct ArrowSchema *s, const char *name, dk_atype_id id, int64_t n,
                      dk_error *err) {
  dk__schema_release(s);
  dk_atype t = dk__atype_make(id);
  return dk__schema_init(s, &t, name, NUL, n, err);
}

/* map<string, string> (keys required, values nullable) */
static dk_status str_map(struct ArrowSchema *s, const char *name, dk_error *err) {
  DK_RETURN_NOT_OK(node(s, name, DK_AT_MAP, 1, err));
  dk__schema_release(s->children[0]);
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(s->children[0], &st, "key_value", 0, 2, err));
  DK_RETURN_NOT_OK(leaf(s->children[0]->children[0], "key", DK_AT_STRING, 0, err));
  return leaf(s->children[0]->children[1], "value", DK_AT_STRING, NUL, err);
}

static dk_status str_list(struct ArrowSchema *s, const char *name, dk_error *err) {
  DK_RETURN_NOT_OK(node(s, name, DK_AT_LIST, 1, err));
  return leaf(s->children[0], "element", DK_AT_STRING, NUL, err);
}

static dk_status dv_struct(struct ArrowSchema *s, dk_error *err) {
  DK_RETURN_NOT_OK(node(s, "deletionVector", DK_AT_STRUCT, 5, err));
  DK_RETURN_NOT_OK(leaf(s->children[0], "storageType", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(s->children[1], "pathOrInlineDv", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(s->children[2], "offset", DK_AT_INT32, NUL, err));
  DK_RETURN_NOT_OK(leaf(s->children[3], "sizeInBytes", DK_AT_INT32, NUL, err));
  return leaf(s->children[4], "cardinality", DK_AT_INT64, NUL, err);
}

enum { C_TXN, C_ADD, C_REMOVE, C_META, C_PROTOCOL, C_DOMAIN, C_N };

/* The checkpoint schema delta-spark writes (without the optional *_parsed columns). */
static dk_status ck_schema(struct ArrowSchema *s, dk_error *err) {
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(s, &st, "", 0, C_N, err));
  struct ArrowSchema *c = s->children[C_TXN];
  DK_RETURN_NOT_OK(node(c, "txn", DK_AT_STRUCT, 3, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "appId", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[1], "version", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[2], "lastUpdated", DK_AT_INT64, NUL, err));
  c = s->children[C_ADD];
  DK_RETURN_NOT_OK(node(c, "add", DK_AT_STRUCT, 11, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "path", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(str_map(c->children[1], "partitionValues", err));
  DK_RETURN_NOT_OK(leaf(c->children[2], "size", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[3], "modificationTime", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[4], "dataChange", DK_AT_BOOL, NUL, err));
  DK_RETURN_NOT_OK(str_map(c->children[5], "tags", err));
  DK_RETURN_NOT_OK(dv_struct(c->children[6], err));
  DK_RETURN_NOT_OK(leaf(c->children[7], "baseRowId", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[8], "defaultRowCommitVersion", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[9], "clusteringProvider", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[10], "stats", DK_AT_STRING, NUL, err));
  c = s->children[C_REMOVE];
  DK_RETURN_NOT_OK(node(c, "remove", DK_AT_STRUCT, 9, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "path", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[1], "deletionTimestamp", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[2], "dataChange", DK_AT_BOOL, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[3], "extendedFileMetadata", DK_AT_BOOL, NUL, err));
  DK_RETURN_NOT_OK(str_map(c->children[4], "partitionValues", err));
  DK_RETURN_NOT_OK(leaf(c->children[5], "size", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(dv_struct(c->children[6], err));
  DK_RETURN_NOT_OK(leaf(c->children[7], "baseRowId", DK_AT_INT64, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[8], "defaultRowCommitVersion", DK_AT_INT64, NUL, err));
  c = s->children[C_META];
  DK_RETURN_NOT_OK(node(c, "metaData", DK_AT_STRUCT, 8, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "id", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[1], "name", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[2], "description", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(node(c->children[3], "format", DK_AT_STRUCT, 2, err));
  DK_RETURN_NOT_OK(leaf(c->children[3]->children[0], "provider", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(str_map(c->children[3]->children[1], "options", err));
  DK_RETURN_NOT_OK(leaf(c->children[4], "schemaString", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(str_list(c->children[5], "partitionColumns", err));
  DK_RETURN_NOT_OK(str_map(c->children[6], "configuration", err));
  DK_RETURN_NOT_OK(leaf(c->children[7], "createdTime", DK_AT_INT64, NUL, err));
  c = s->children[C_PROTOCOL];
  DK_RETURN_NOT_OK(node(c, "protocol", DK_AT_STRUCT, 4, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "minReaderVersion", DK_AT_INT32, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[1], "minWriterVersion", DK_AT_INT32, NUL, err));
  DK_RETURN_NOT_OK(str_list(c->children[2], "readerFeatures", err));
  DK_RETURN_NOT_OK(str_list(c->children[3], "writerFeatures", err));
  c = s->children[C_DOMAIN];
  DK_RETURN_NOT_OK(node(c, "domainMetadata", DK_AT_STRUCT, 3, err));
  DK_RETURN_NOT_OK(leaf(c->children[0], "domain", DK_AT_STRING, NUL, err));
  DK_RETURN_NOT_OK(leaf(c->children[1], "configuration", DK_AT_STRING, NUL, err));
  return leaf(c->children[2], "removed", DK_AT_BOOL, NUL, err);
}

static dk_status a_str(dk_arr *a, const char *s, dk_error *err) {
  return s ? dk__arr_append_bytes(a, s, (int64_t)strlen(s), err) : dk__arr_append_null(a, err);
}

static dk_status a_map(dk_arr *a, const char *const *kv, size_t n, dk_error *err) {
  dk_arr *e = &a->children[0];
  for (size_t i = 0; i < n; i++) {
    DK_RETURN_NOT_OK(a_str(&e->children[0], kv[2 * i] ? kv[2 * i] : "", err));
    DK_RETURN_NOT_OK(a_str(&e->children[1], kv[2 * i + 1], err));
    DK_RETURN_NOT_OK(dk__arr_finish_element(e, err));
  }
  return dk__arr_finish_element(a, err);
}

static dk_status a_list(dk_arr *a, const char *const *l, size_t n, dk_error *err) {
  for (size_t i = 0; i < n; i++) DK_RETURN_NOT_OK(a_str(&a->children[0], l[i], err));
  return dk__arr_finish_element(a, err);
}

static dk_status a_dv(dk_arr *a, const dk_dv_descriptor *dv, dk_error *err) {
  if (!dv) return dk__arr_append_null(a, err);
  char t[2] = {dv->storage_type, 0};
  DK_RETURN_NOT_OK(a_str(&a->children[0], t, err));
  DK_RETURN_NOT_OK(a_str(&a->children[1], dv->path_or_inline_dv, err));
  DK_RETURN_NOT_OK(dv->offset >= 0 ? dk__arr_append_int(&a->children[2], dv->offset, err)
                                   : dk__arr_append_null(&a->children[2], err));
  DK_RETURN_NOT_OK(dk__arr_append_int(&a->children[3], dv->size_in_bytes, err));
  DK_RETURN_NOT_OK(dk__arr_append_int(&a->children[4], dv->cardinality, err));
  return dk__arr_finish_element(a, err);
}

static dk_status a_opt_long(dk_arr *a, int has, int64_t v, dk_error *err) {
  return has ? dk__arr_append_int(a, v, err) : dk__arr_append_null(a, err);
}

/* Row r: every top-level column but `col` is null; the caller fills col's children. */
static dk_status begin_row(dk_arr *root, int col, dk_error *err) {
  for (int c = 0; c < C_N; c++)
    if (c != col) DK_RETURN_NOT_OK(dk__arr_append_null(&root->children[c], err));
  return DK_OK;
}

static dk_status end_row(dk_arr *root, int col, dk_error *err) {
  DK_RETURN_NOT_OK(dk__arr_finish_element(&root->children[col], err));
  return dk__arr_finish_element(root, err);
}

static dk_status flush_rows(dk_parquet_writer *w, dk_arr *root, dk_error *err) {
  if (root->length == 0) return DK_OK;
  struct ArrowArray b;
  DK_RETURN_NOT_OK(dk__arr_finish(root, &b, err));
  dk_status st = dk_parquet_writer_write(w, &b, err);
  b.release(&b);
  return st;
}

/* ---- the add rows, built in chunks on the table's executor ----------------------------------
** The live files are cut into chunks of CHUNK_ROWS; each chunk's add column is built by a task
** (its own file iterator, seeked to the chunk) while the calling thread writes the chunks
** before it, in order. The other top-level columns of an add row are null: one all-null array
** of each, built once, serves every chunk. */

#define CHUNK_ROWS 65536

typedef struct add_chunk {
  dk__task task;
  dk_snapshot *s;
  const struct ArrowSchema *schema; /* the add column's */
  int64_t i0, i1;                   /* files [i0, i1) */
  struct ArrowArray out;            /* the add column of those rows */
  dk_status st;
  dk_error err;
} add_chunk;

static dk_status build_adds(add_chunk *k, dk_error *err) {
  const dk_allocator *alloc = k->s->table->alloc;
  dk_arr a;
  DK_RETURN_NOT_OK(dk__arr_init_from_schema(&a, k->schema, alloc, err));
  dk_arena ar;
  dk__arena_init(&ar, alloc, 4096);
  dk_buf enc;
  dk__buf_init(&enc, alloc);
  dk_file_iter *it = NULL;
  dk_file_iter_options io = {.version = DK_FILE_ITER_OPTIONS_VERSION, .no_read_ahead = 1};
  dk_status st = dk_snapshot_files_open(&it, k->s, &io, err);
  if (!st) st = dk_file_iter_seek(it, k->i0, err);
  dk_arr *c = a.children;
  for (int64_t i = k->i0; !st && i < k->i1; i++) {
    const dk_file_entry *fp = NULL;
    st = dk_file_iter_next(&fp, it, err);
    if (!st && !fp) st = dk__error_set(err, DK_INTERNAL, "checkpoint: file %lld missing",
                                       (long long)i);
    if (st) break;
    const dk_file_entry f = *fp;
    dk__buf_clear(&enc);
    st = strstr(f.path, "://") ? dk__buf_puts(&enc, f.path, err)
                               : dk_txn__uri_encode_path(&enc, f.path, err);
    if (!st) st = a_str(&c[0], enc.data ? enc.data : "", err);
    if (!st) st = a_map(&c[1], f.partition_kv, f.n_partition_values, err);
    if (!st) st = dk__arr_append_int(&c[2], f.size, err);
    if (!st) st = dk__arr_append_int(&c[3], f.modification_time, err);
    if (!st) st = dk__arr_append_bool(&c[4], false, err);
    if (!st && !f.tags_json) st = dk__arr_append_null(&c[5], err);
    if (!st && f.tags_json) { /* the tags object as a map */
      dk_json_value *tv = NULL;
      st = dk__json_parse(&tv, &ar, f.tags_json, strlen(f.tags_json), err);
      size_t nkv = !st && tv->type == DK_JSON_OBJECT ? tv->len : 0;
      const char **kv = nkv ? dk__arena_alloc(&ar, 2 * nkv * sizeof *kv, err) : NULL;
      if (nkv && !kv) st = DK_NOMEM;
      for (size_t q = 0; !st && q < nkv; q++) {
        const dk_json_value *val = &tv->u.members[q].value;
        kv[2 * q] = tv->u.members[q].key;
        kv[2 * q + 1] = val->type == DK_JSON_STRING ? val->u.str : NULL;
      }
      if (!st) st = a_map(&c[5], kv, nkv, err);
    }
    if (!st) st = a_dv(&c[6], f.dv, err);
    if (!st) st = a_opt_long(&c[7], f.has_base_row_id, f.base_row_id, err);
    if (!st) st = a_opt_long(&c[8], f.has_default_row_commit_version, f.default_row_commit_version, err);
    if (!st) st = dk__arr_append_null(&c[9], err);
    if (!st) st = a_str(&c[10], f.stats, err);
    if (!st) st = dk__arr_finish_element(&a, err);
  }
  dk_file_iter_free(it);
  if (!st) st = dk__arr_finish(&a, &k->out, err);
  dk__arr_reset(&a);
  dk__buf_dispose(&enc);
  dk__arena_dispose(&ar);
  return st;
}

static void build_adds_task(void *arg) {
  add_chunk *k = arg;
  dk_error_init(&k->err);
  k->st = build_adds(k, &k->err);
}

/* Writes chunk k's rows: its add column beside the all-null columns (consumes k->out). */
static dk_status write_chunk(dk_parquet_writer *w, add_chunk *k, struct ArrowArray *nulls,
                             const dk_allocator *alloc, dk_error *err) {
  int64_t m = k->i1 - k->i0;
  struct ArrowArray kids[C_N];
  for (int c = 0; c < C_N; c++) {
    if (c == C_ADD) {
      kids[c] = k->out;
      k->out.release = NULL;
    } else {
      kids[c] = nulls[c];
      kids[c].length = m;
      kids[c].null_count = m;
      kids[c].release = dk__array_release_borrowed;
    }
  }
  const void *bufs[1] = {NULL};
  struct ArrowArray b;
  dk_status st = dk__array_wrap(&b, m, 0, 0, 1, bufs, C_N, kids, NULL, NULL, alloc, err);
  if (st) {
    for (int c = 0; c < C_N; c++)
      if (kids[c].release) kids[c].release(&kids[c]);
    return st;
  }
  st = dk_parquet_writer_write(w, &b, err);
  b.release(&b);
  return st;
}

static dk_status write_adds(dk_parquet_writer *w, dk_table *t, dk_snapshot *s,
                            const struct ArrowSchema *sch, dk_error *err) {
  int64_t n = (int64_t)s->files.n;
  if (n == 0) return DK_OK;
  struct ArrowArray nulls[C_N];
  memset(nulls, 0, sizeof nulls);
  dk_status st = DK_OK;
  for (int c = 0; c < C_N && !st; c++)
    if (c != C_ADD)
      st = dk_scan__null_array(&nulls[c], sch->children[c], DK_MIN(n, CHUNK_ROWS), t->alloc, err);
  int depth = DK_MAX(1, dk__exec_threads(t->exec)); /* chunks in flight */
  add_chunk *ks = st ? NULL : dk__calloc(t->alloc, (size_t)depth, sizeof *ks);
  if (!st && !ks) st = dk__error_set(err, DK_NOMEM, "out of memory (checkpoint)");
  int64_t n_chunks = (n + CHUNK_ROWS - 1) / CHUNK_ROWS, next = 0;
  for (; !st && next < n_chunks && next < depth; next++) {
    add_chunk *k = &ks[next];
    *k = (add_chunk){.s = s, .schema = sch->children[C_ADD], .i0 = next * CHUNK_ROWS,
                     .i1 = DK_MIN(n, (next + 1) * CHUNK_ROWS)};
    dk__exec_submit(t->exec, &k->task, build_adds_task, k);
  }
  int64_t submitted = next;
  for (int64_t ci = 0; ci < submitted; ci++) {
    add_chunk *k = &ks[ci % depth];
    dk__exec_join(t->exec, &k->task);
    if (!st && k->st) {
      *err = k->err;
      st = k->st;
    }
    if (!st) st = write_chunk(w, k, nulls, t->alloc, err);
    if (k->out.release) k->out.release(&k->out);
    if (!st && submitted < n_chunks) { /* the slot takes the next chunk */
      *k = (add_chunk){.s = s, .schema = sch->children[C_ADD], .i0 = submitted * CHUNK_ROWS,
                       .i1 = DK_MIN(n, (submitted + 1) * CHUNK_ROWS)};
      dk__exec_submit(t->exec, &k->task, build_adds_task, k);
      submitted++;
    }
  }
  dk__free(t->alloc, ks);
  for (int c = 0; c < C_N; c++)
    if (nulls[c].release) nulls[c].release(&nulls[c]);
  return st;
}

static dk_status write_classic(dk_table *t, dk_snapshot *s, int64_t min_tomb_ts,
                               const char *path, int64_t *n_actions, int64_t *n_adds,
                               int64_t *size, dk_error *err) {
  struct ArrowSchema sch;
  memset(&sch, 0, sizeof sch);
  dk_arr root;
  int have_root = 0;
  dk_parquet_writer *w = NULL;
  dk_arena ar;
  dk__arena_init(&ar, t->alloc, 4096);
  dk_status st = ck_schema(&sch, err);
  if (!st) st = dk__arr_init_from_schema(&root, &sch, t->alloc, err);
  have_root = !st;
  dk_parquet_write_options po = {.version = DK_PARQUET_WRITE_OPTIONS_VERSION, .alloc = t->alloc,
                                 .threads = dk__exec_threads(t->exec)};
  const char *codec = dk_snapshot_property(s, "delta.parquet.compression.codec");
  if (codec && !strcasecmp(codec, "zstd")) po.codec = DK_PARQUET_ZSTD;
  if (!st) st = dk_parquet_writer_open(&w, t->sto, path, &sch, &po, err);
  /* protocol, metadata, txns, domains */
  const dk_protocol *p = dk_snapshot_protocol(s);
  if (!st) st = begin_row(&root, C_PROTOCOL, err);
  if (!st) {
    dk_arr *c = root.children[C_PROTOCOL].children;
    st = dk__arr_append_int(&c[0], p->min_reader_version, err);
    if (!st) st = dk__arr_append_int(&c[1], p->min_writer_version, err);
    if (!st) st = p->min_reader_version >= 3 ? a_list(&c[2], p->reader_features, p->n_reader_features, err)
                                             : dk__arr_append_null(&c[2], err);
    if (!st) st = p->min_writer_version >= 7 ? a_list(&c[3], p->writer_features, p->n_writer_features, err)
                                             : dk__arr_append_null(&c[3], err);
    if (!st) st = end_row(&root, C_PROTOCOL, err);
  }
  txn_meta m;
  if (!st) st = dk_txn__meta_from_snapshot(&m, &ar, dk_snapshot_metadata(s), err);
  if (!st) st = begin_row(&root, C_META, err);
  if (!st) {
    dk_arr *c = root.children[C_META].children;
    st = a_str(&c[0], m.id, err);
    if (!st) st = a_str(&c[1], m.name, err);
    if (!st) st = a_str(&c[2], m.description, err);
    if (!st) st = a_str(&c[3].children[0], m.provider ? m.provider : "parquet", err);
    if (!st) st = a_map(&c[3].children[1], NULL, 0, err);
    if (!st) st = dk__arr_finish_element(&c[3], err);
    if (!st) st = a_str(&c[4], m.schema_string, err);
    if (!st) st = a_list(&c[5], m.part, m.n_part, err);
    if (!st) st = a_map(&c[6], m.conf, m.n_conf, err);
    if (!st) st = a_opt_long(&c[7], m.created_time >= 0, m.created_time, err);
    if (!st) st = end_row(&root, C_META, err);
  }
  *n_actions = 2;
  for (size_t i = 0; !st && i < dk_snapshot_num_txns(s); i++) {
    const char *app;
    int64_t v, lu;
    dk_snapshot_txn(&app, &v, &lu, s, i);
    dk_arr *c = root.children[C_TXN].children;
    st = begin_row(&root, C_TXN, err);
    if (!st) st = a_str(&c[0], app, err);
    if (!st) st = dk__arr_append_int(&c[1], v, err);
    if (!st) st = a_opt_long(&c[2], lu >= 0, lu, err);
    if (!st) st = end_row(&root, C_TXN, err);
    (*n_actions)++;
  }
  for (size_t i = 0; !st && i < s->st.n_domains; i++) {
    const dk__domain *d = &s->st.domains[i];
    if (d->removed) continue;
    dk_arr *c = root.children[C_DOMAIN].children;
    st = begin_row(&root, C_DOMAIN, err);
    if (!st) st = a_str(&c[0], d->domain, err);
    if (!st) st = a_str(&c[1], d->config ? d->config : "", err);
    if (!st) st = dk__arr_append_bool(&c[2], false, err);
    if (!st) st = end_row(&root, C_DOMAIN, err);
    (*n_actions)++;
  }
  if (!st) st = flush_rows(w, &root, err);
  if (!st) st = write_adds(w, t, s, &sch, err);
  if (!st) {
    *n_actions += (int64_t)s->files.n;
    *n_adds += (int64_t)s->files.n;
  }
  dk_buf enc;
  dk__buf_init(&enc, t->alloc);
  for (size_t i = 0; !st && i < s->tombs.n; i++) {
    const dk__tomb *tb = dk_snapshot__tomb_at(s, (int64_t)i);
    if (tb->deletion_timestamp >= 0 && tb->deletion_timestamp <= min_tomb_ts) continue;
    dk_arr *c = root.children[C_REMOVE].children;
    dk__buf_clear(&enc);
    st = dk_txn__uri_encode_path(&enc, tb->path, err);
    if (!st) st = begin_row(&root, C_REMOVE, err);
    if (!st) st = a_str(&c[0], enc.data ? enc.data : "", err);
    if (!st) st = a_opt_long(&c[1], tb->deletion_timestamp >= 0, tb->deletion_timestamp, err);
    if (!st) st = dk__arr_append_bool(&c[2], false, err);
    if (!st) st = tb->size >= 0 ? dk__arr_append_bool(&c[3], true, err) : dk__arr_append_null(&c[3], err);
    if (!st) st = dk__arr_append_null(&c[4], err);
    if (!st) st = a_opt_long(&c[5], tb->size >= 0, tb->size, err);
    if (!st) st = a_dv(&c[6], tb->dv, err);
    if (!st) st = dk__arr_append_null(&c[7], err);
    if (!st) st = dk__arr_append_null(&c[8], err);
    if (!st) st = end_row(&root, C_REMOVE, err);
    (*n_actions)++;
    if (!st && root.length >= 65536) st = flush_rows(w, &root, err);
  }
  dk__buf_dispose(&enc);
  if (!st) st = flush_rows(w, &root, err);
  dk_parquet_write_result r = {.version = DK_PARQUET_WRITE_RESULT_VERSION};
  if (!st) st = dk_parquet_writer_close(w, &r, err);
  if (!st) *size = r.file_size;
  dk_parquet_writer_free(w);
  if (have_root) dk__arr_reset(&root);
  if (sch.release) sch.release(&sch);
  dk__arena_dispose(&ar);
  return st;
}


/* Writes _last_checkpoint (atomically replaced), with the checksum delta-spark writes by
 * default (PROTOCOL.md "JSON checksum"). */
static dk_status write_last(dk_table *t, int64_t v, int64_t n_actions, int64_t size,
                            int64_t n_adds, dk_error *err) {
  dk_buf last, key;
  dk__buf_init(&last, t->alloc);
  dk__buf_init(&key, t->alloc);
  dk_arena ar;
  dk__arena_init(&ar, t->alloc, 1024);
  dk_json_value *j;
  char sum[33];
  dk_status st = dk__buf_printf(&last, err,
                                "{\"version\":%lld,\"size\":%lld,\"sizeInBytes\":%lld,"
                                "\"numOfAddFiles\":%lld}",
                                (long long)v, (long long)n_actions, (long long)size,
                                (long long)n_adds);
  if (!st) st = dk__json_parse(&j, &ar, last.data, last.len, err);
  if (!st) st = dk_log__last_checkpoint_checksum(sum, j, t->alloc, err);
  if (!st) {
    last.len--; /* the closing brace */
    st = dk__buf_printf(&last, err, ",\"checksum\":\"%s\"}", sum);
  }
  if (!st) st = dk_log__file_key(&key, t->root, DK_LOG__LAST_CHECKPOINT, err);
  if (!st) st = t->sto->write(t->sto, key.data, last.data, last.len, err);
  dk__arena_dispose(&ar);
  dk__buf_dispose(&last);
  dk__buf_dispose(&key);
  return st;
}

dk_status dk_table_checkpoint(dk_checkpoint_result *out, dk_table *t,
                              const dk_checkpoint_options *opts, dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
  }
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_checkpoint: NULL table");
  DK_RETURN_IF(opts && opts->version > DK_CHECKPOINT_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_checkpoint_options version %u is newer than dk's", opts->version);
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION,
                            .at_version = opts && opts->at_version >= 0 ? opts->at_version : -1};
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, &so, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(s), err);
  const char *policy = dk_snapshot_property(s, "delta.checkpointPolicy");
  int v2_ok = dk_snapshot_has_feature(s, "v2Checkpoint");
  dk_checkpoint_kind kind = opts && opts->kind ? opts->kind
                            : (v2_ok && policy && !strcmp(policy, "v2")) ? DK_CHECKPOINT_V2_JSON
                                                                         : DK_CHECKPOINT_CLASSIC;
  if (!st && kind != DK_CHECKPOINT_V2_JSON && kind != DK_CHECKPOINT_CLASSIC)
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "%s: V2 checkpoints with Parquet sidecars are not written yet "
                       "(V2 JSON checkpoints of v2Checkpoint tables are)", t->root);
  if (!st && kind == DK_CHECKPOINT_V2_JSON && !v2_ok)
    st = dk__error_set(err, DK_INVALID,
                       "%s: a V2 checkpoint needs the v2Checkpoint table feature", t->root);
  if (st) {
    dk_snapshot_free(s);
    return st;
  }
  int64_t v = dk_snapshot_version(s);
  int64_t now = opts && opts->now_ms > 0 ? opts->now_ms : wall_ms();
  int64_t retention = 7LL * 86400000;
  const char *rv = dk_snapshot_property(s, "delta.deletedFileRetentionDuration");
  if (rv && dk_txn__parse_interval_ms(&retention, rv, err) != DK_OK) {
    dk_snapshot_free(s);
    return err ? err->code : DK_INVALID;
  }
  dk_buf b, name, key;
  dk__buf_init(&b, t->alloc);
  dk__buf_init(&name, t->alloc);
  dk__buf_init(&key, t->alloc);
  dk_arena ar;
  dk__arena_init(&ar, t->alloc, 4096);
  int64_t n_actions = 0, n_adds = 0;
  char uuid[37];
  if (kind == DK_CHECKPOINT_CLASSIC) {
    int64_t size = 0;
    DK_CHECK_GOTO(dk_log__name_checkpoint(&name, v, err));
    DK_CHECK_GOTO(dk_log__file_key(&key, t->root, name.data, err));
    DK_CHECK_GOTO(write_classic(t, s, now - retention, key.data, &n_actions, &n_adds, &size, err));
    DK_CHECK_GOTO(write_last(t, v, n_actions, size, n_adds, err));
    if (out) {
      out->checkpoint_version = v;
      out->kind = kind;
      snprintf(out->file_name, sizeof out->file_name, "%s", name.data);
      out->num_actions = n_actions;
      out->num_add_files = n_adds;
      out->size_in_bytes = size;
    }
    goto cleanup;
  }
  DK_CHECK_GOTO(put_non_file_actions(&b, s, &ar, &n_actions, err));
  DK_CHECK_GOTO(dk__buf_printf(&b, err, "{\"checkpointMetadata\":{\"version\":%lld}}\n",
                               (long long)v));
  n_actions++;
  DK_CHECK_GOTO(put_file_actions(&b, s, now - retention, &n_actions, &n_adds, err));
  dk_txn__uuid(uuid);
  DK_CHECK_GOTO(dk_log__name_checkpoint_v2(&name, v, uuid, false, err));
  DK_CHECK_GOTO(dk_log__file_key(&key, t->root, name.data, err));
  DK_CHECK_GOTO(t->sto->put_if_absent(t->sto, key.data, b.data, b.len, err));
  /* _last_checkpoint, last */
  DK_CHECK_GOTO(write_last(t, v, n_actions, (int64_t)b.len, n_adds, err));
  if (out) {
    out->checkpoint_version = v;
    out->kind = kind;
    snprintf(out->file_name, sizeof out->file_name, "%s", name.data);
    out->num_actions = n_actions;
    out->num_add_files = n_adds;
    out->size_in_bytes = (int64_t)b.len;
  }
cleanup:
  dk__arena_dispose(&ar);
  dk__buf_dispose(&b);
  dk__buf_dispose(&name);
  dk__buf_dispose(&key);
  dk_snapshot_free(s);
  return st;
}

/* ---- metadata cleanup --------------------------------------------------------------------- */

dk_status dk_table_cleanup_metadata(int64_t *deleted, dk_table *t, const dk_cleanup_options *opts,
                                    dk_error *err) {
  if (deleted) *deleted = 0;
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_cleanup_metadata: NULL table");
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, NULL, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(s), err);
  int64_t retention = 30LL * 86400000;
  const char *rv = dk_snapshot_property(s, "delta.logRetentionDuration");
  if (!st && opts && opts->retention_ms > 0) retention = opts->retention_ms;
  else if (!st && rv) st = dk_txn__parse_interval_ms(&retention, rv, err);
  int enabled = !dk_snapshot_property(s, "delta.enableExpiredLogCleanup") ||
                strcmp(dk_snapshot_property(s, "delta.enableExpiredLogCleanup"), "false");
  dk_snapshot_free(s);
  if (st || !enabled) return st;
  int64_t now = opts && opts->now_ms > 0 ? opts->now_ms : wall_ms();
  int64_t cutoff = now - retention;
  cutoff -= ((cutoff % 86400000) + 86400000) % 86400000; /* truncated to UTC midnight */
  dk__segment seg;
  memset(&seg, 0, sizeof seg);
  DK_RETURN_NOT_OK(dk_log__list_all(&seg, t->sto, t->root, t->alloc, err));
  /* the last commit older than the cutoff, then the newest complete checkpoint at or before it */
  int64_t last_old = -1, keep = -1;
  for (size_t i = 0; i < seg.n_all; i++)
    if (seg.all[i].kind == DK__LF_COMMIT && seg.all[i].mtime <= cutoff &&
        seg.all[i].version > last_old)
      last_old = seg.all[i].version;
  for (size_t i = 0; i < seg.n_all; i++) {
    const dk__logfile *f = &seg.all[i];
    int cp = f->kind == DK__LF_CP_CLASSIC || f->kind == DK__LF_CP_V2_JSON ||
             f->kind == DK__LF_CP_V2_PARQUET;
    if (cp && f->version <= last_old && f->version > keep) keep = f->version;
  }
  int64_t n = 0;
  dk_buf key;
  dk__buf_init(&key, t->alloc);
  if (keep > 0) {
    for (size_t i = 0; i < seg.n_all && !st; i++) {
      const dk__logfile *f = &seg.all[i];
      int old = f->kind == DK__LF_COMPACTION ? f->version_hi < keep : f->version < keep;
      if (!old || f->mtime > cutoff) continue;
      n++;
      if (opts && opts->dry_run) continue;
      st = dk_log__file_key(&key, t->root, f->name, err);
      if (!st) st = t->sto->remove(t->sto, key.data, err);
      if (st == DK_NOT_FOUND) {
        if (err) dk_error_init(err);
        st = DK_OK;
      }
    }
  }
  dk__buf_dispose(&key);
  dk_log__segment_dispose(&seg);
  if (deleted) *deleted = n;
  return st;
}
