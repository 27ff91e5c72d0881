/*
** write.c — writing data into a transaction (delta-spark TransactionalWrite /
** DelayedCommitProtocol / WriteIntoDelta; PROTOCOL.md "Add File", "Partition Value
** Serialization"; write-path.md §1.9-1.10, §4).
**
** dk_txn_write takes an Arrow stream whose columns are the table's, splits each batch by the
** partition columns (rows of one partition go to that partition's open file, through the
** scan's take kernel), writes the data columns under their physical names (and field ids
** under column mapping) with dk's Parquet writer, rolls to a new file at the target size, and
** stages an add per file with the writer's Delta statistics. Directories are
** `escapePathName(col)=escapePathName(value)`, null as __HIVE_DEFAULT_PARTITION__; files are
** named part-<n:05d>-<uuid>.c000.<codec>.parquet as Spark names them. CHECK constraints and
** invariants are evaluated per batch with dk's expression evaluator (a row where one is
** FALSE or NULL fails the write, as Spark's); so is replaceWhere's predicate.
**
** dk_txn__write_cdc is the same for change data (delta-spark's CDC files: the data columns and
** `_change_type` under _change_data/, staged as cdc actions, no stats or constraints).
**
** dk_write_table is the DataFrameWriter on top: create (ErrorIfExists/Ignore), append,
** overwrite (all rows, a partition replaceWhere, or dynamic partition overwrite), mergeSchema /
** overwriteSchema, idempotent app transactions, one WRITE commit with Spark's
** operationParameters and metrics.
*/
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "arrow/array.h"
#include "dk/parquet.h"
#include "expr/expr.h"
#include "protocol/values.h"
#include "scan/scan_int.h"
#include "txn/txn_int.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One open data file (per partition). */
typedef struct wfile {
  dk_parquet_writer *w;
  char *rel;                  /* path relative to the root */
  const char **pv;            /* partition values (n_part, NULL = null), arena */
  int64_t est_bytes;          /* input bytes so far (roll estimate) */
  int finished;               /* closed (published) by finish_file, not yet staged */
  dk_parquet_write_result r;  /* finish_file's results */
  char *stats;
} wfile;

typedef struct wctx {
  dk_txn *x;
  const dk_allocator *alloc;
  const dk_type *schema;      /* logical table schema */
  struct ArrowSchema phys;    /* physical table schema (all columns) */
  struct ArrowSchema data;    /* physical data columns (the files' schema) */
  size_t n_cols;              /* table columns */
  int64_t *in_col;            /* table column -> stream column */
  int *is_part;               /* table column is a partition column */
  size_t n_part;
  int64_t *part_col;          /* partition column k -> table column */
  int64_t *data_col;          /* data column j -> table column */
  size_t n_data;
  dk_hmap groups;             /* partition key text -> partition index (parts_seen) + 1 */
  size_t *part_file;          /* partition index -> its open file, NO_FILE when none */
  dk__exec *ex;               /* partitioned writes: partitions' files written in parallel */
  int par;                    /* threads of that fan-out (1 = the caller only) */
  wfile *files;
  size_t n_files, cap_files;
  dk_buf done_paths;          /* closed files (to delete on failure): rel NUL ... */
  dk_parquet_write_options po;
  dk_delta_stats_options so;
  int64_t target;
  int64_t seq;
  char uuid[37];
  dk_expr **checks;           /* bound CHECK constraints / invariants / replaceWhere */
  char **check_names;
  size_t n_checks;
  const dk_write_options *o;
  dk_write_result *res;
  const char **parts_seen;    /* distinct partitions (rows of n_part), arena */
  size_t n_parts_seen, cap_parts_seen;
  int cdc;                    /* change data files (dk_txn__write_cdc) */
  /* stream columns written after the data columns, not table columns: the change data's
   * _change_type, or the materialized row tracking columns (row id, row commit version) */
  int64_t extra_col[2];
  size_t n_extra;
} wctx;

#define NO_FILE ((size_t)-1)

static const char *codec_ext(dk_parquet_codec c) {
  switch (c) {
    case DK_PARQUET_ZSTD: return "zstd.";
    case DK_PARQUET_GZIP: return "gz.";
    case DK_PARQUET_LZ4_RAW: return "lz4raw.";
    case DK_PARQUET_UNCOMPRESSED: return "";
    default: return "snappy.";
  }
}

/* Partition value text of row r of a column (Delta "Partition Value Serialization"). */
static dk_status part_text(char *buf, size_t cap, int *is_null, const struct ArrowSchema *s,
                           const struct ArrowArray *a, int64_t r, dk_error *err) {
  int64_t i = r + a->offset;
  const uint8_t *valid = a->null_count ? a->buffers[0] : NULL;
  *is_null = valid && !dk__bit_get(valid, i);
  if (*is_null) return DK_OK;
  const char *f = s->format;
  if (!strcmp(f, "u") || !strcmp(f, "U")) {
    int64_t lo, hi;
    if (f[0] == 'u') {
      lo = ((const int32_t *)a->buffers[1])[i];
      hi = ((const int32_t *)a->buffers[1])[i + 1];
    } else {
      lo = ((const int64_t *)a->buffers[1])[i];
      hi = ((const int64_t *)a->buffers[1])[i + 1];
    }
    if ((size_t)(hi - lo) >= cap)
      return dk__error_set(err, DK_INVALID, "partition value of '%s' longer than %zu bytes",
                           s->name, cap - 1);
    memcpy(buf, (const char *)a->buffers[2] + lo, (size_t)(hi - lo));
    buf[hi - lo] = 0;
    if (hi == lo) *is_null = 1; /* "" is null (Spark) */
    return DK_OK;
  }
  if (!strcmp(f, "b")) {
    snprintf(buf, cap, "%s", dk__bit_get(a->buffers[1], i) ? "true" : "false");
  } else if (!strcmp(f, "c")) {
    snprintf(buf, cap, "%d", (int)((const int8_t *)a->buffers[1])[i]);
  } else if (!strcmp(f, "s")) {
    snprintf(buf, cap, "%d", (int)((const int16_t *)a->buffers[1])[i]);
  } else if (!strcmp(f, "i")) {
    snprintf(buf, cap, "%d", (int)((const int32_t *)a->buffers[1])[i]);
  } else if (!strcmp(f, "l")) {
    snprintf(buf, cap, "%lld", (long long)((const int64_t *)a->buffers[1])[i]);
  } else if (!strcmp(f, "tdD")) {
    dk__format_date(buf, cap, ((const int32_t *)a->buffers[1])[i]);
  } else if (!strncmp(f, "tsu:", 4)) {
    int64_t us = ((const int64_t *)a->buffers[1])[i];
    int64_t days = us >= 0 ? us / 86400000000LL : -((-us + 86399999999LL) / 86400000000LL);
    int64_t rem = us - days * 86400000000LL, y;
    unsigned mo, d;
    dk__civil_from_days(days, &y, &mo, &d);
    int hh = (int)(rem / 3600000000LL), mi = (int)(rem / 60000000LL % 60),
        ss = (int)(rem / 1000000 % 60), fr = (int)(rem % 1000000);
    if (f[4]) /* timestamp (UTC): ISO-8601 with micros, as delta-spark writes it */
      snprintf(buf, cap, "%04lld-%02u-%02uT%02d:%02d:%02d.%06dZ", (long long)y, mo, d, hh, mi,
               ss, fr);
    else /* timestamp_ntz */
      snprintf(buf, cap, "%04lld-%02u-%02u %02d:%02d:%02d.%06d", (long long)y, mo, d, hh, mi,
               ss, fr);
  } else if (!strncmp(f, "d:", 2)) {
    int p = 0, sc = 0;
    sscanf(f + 2, "%d,%d", &p, &sc);
    dk_i128 v;
    memcpy(&v, (const uint8_t *)a->buffers[1] + 16 * i, 16);
    dk__format_decimal(buf, cap, v, sc);
  } else {
    return dk__error_set(err, DK_UNSUPPORTED,
                         "partition column '%s': Arrow type '%s' is not supported as a "
                         "partition value by dk's writer",
                         s->name, f);
  }
  return DK_OK;
}

static dk_status grow_files(wctx *c, dk_error *err) {
  if (c->n_files < c->cap_files) return DK_OK;
  size_t nc = c->cap_files ? c->cap_files * 2 : 8;
  wfile *q = dk__realloc(c->alloc, c->files, nc * sizeof *q);
  if (!q) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  c->files = q;
  c->cap_files = nc;
  return DK_OK;
}

static dk_status open_file(wctx *c, const char *const *pv, size_t *out, dk_error *err) {
  dk_buf rel;
  dk__buf_init(&rel, c->alloc);
  dk_status st = DK_OK;
  for (size_t k = 0; k < c->n_part && !st; k++) {
    st = dk_txn__escape_partition(&rel, c->x->meta.part[k], err);
    if (!st) st = dk__buf_putc(&rel, '=', err);
    if (!st) st = pv[k] ? dk_txn__escape_partition(&rel, pv[k], err)
                        : dk__buf_puts(&rel, "__HIVE_DEFAULT_PARTITION__", err);
    if (!st) st = dk__buf_putc(&rel, '/', err);
  }
  if (!st)
    st = dk__buf_printf(&rel, err, "%s-%05lld-%s.c000.%sparquet", c->cdc ? "cdc" : "part",
                        (long long)c->seq++, c->uuid, codec_ext(c->po.codec));
  if (!st && c->cdc) { /* change data files live under _change_data/ */
    dk_buf full_rel;
    dk__buf_init(&full_rel, c->alloc);
    st = dk__buf_printf(&full_rel, err, "_change_data/%s", rel.data);
    dk__buf_dispose(&rel);
    rel = full_rel;
  }
  char full[4200];
  if (!st) snprintf(full, sizeof full, "%s/%s", c->x->table->root, rel.data);
  if (!st) st = grow_files(c, err);
  if (st) {
    dk__buf_dispose(&rel);
    return st;
  }
  wfile *f = &c->files[c->n_files];
  memset(f, 0, sizeof *f);
  st = dk_parquet_writer_open(&f->w, c->x->table->sto, full, &c->data, &c->po, err);
  if (st) {
    dk__buf_dispose(&rel);
    return st;
  }
  f->rel = dk__buf_detach(&rel);
  f->pv = c->n_part ? dk__arena_alloc(&c->x->ar, c->n_part * sizeof *f->pv, err) : NULL;
  for (size_t k = 0; k < c->n_part; k++)
    f->pv[k] = pv[k] ? dk__arena_strndup(&c->x->ar, pv[k], strlen(pv[k]), err) : NULL;
  *out = c->n_files++;
  return DK_OK;
}

/* The stats of a file with the materialized row tracking columns: those columns' entries left
** out of minValues / maxValues / nullCount (they are not table columns: delta-spark collects
** statistics over the table's data columns only). */
static dk_status drop_extra_stats(wctx *c, char **stats, dk_error *err) {
  dk_arena ar;
  dk__arena_init(&ar, c->alloc, 4096);
  dk_json_value *v = NULL;
  dk_buf b;
  dk__buf_init(&b, c->alloc);
  dk_status st = dk__json_parse(&v, &ar, *stats, strlen(*stats), err);
  if (!st && v->type != DK_JSON_OBJECT) st = dk__error_set(err, DK_INTERNAL, "stats not an object");
  if (!st) st = dk__buf_putc(&b, '{', err);
  for (uint32_t i = 0; !st && i < v->len; i++) {
    const dk_json_value *m = &v->u.members[i].value;
    if (i) st = dk__buf_putc(&b, ',', err);
    if (!st) st = dk__json_write_str(&b, v->u.members[i].key, v->u.members[i].klen, err);
    if (!st) st = dk__buf_putc(&b, ':', err);
    if (st || m->type != DK_JSON_OBJECT) {
      if (!st) st = dk__json_write_value(&b, m, err);
      continue;
    }
    st = dk__buf_putc(&b, '{', err);
    int first = 1;
    for (uint32_t k = 0; !st && k < m->len; k++) {
      bool extra = false;
      for (size_t e = c->n_data; e < c->n_data + c->n_extra; e++) {
        const char *nm = c->data.children[e]->name;
        extra |= strlen(nm) == m->u.members[k].klen &&
                 !memcmp(nm, m->u.members[k].key, m->u.members[k].klen);
      }
      if (extra) continue;
      if (!first) st = dk__buf_putc(&b, ',', err);
      first = 0;
      if (!st) st = dk__json_write_str(&b, m->u.members[k].key, m->u.members[k].klen, err);
      if (!st) st = dk__buf_putc(&b, ':', err);
      if (!st) st = dk__json_write_value(&b, &m->u.members[k].value, err);
    }
    if (!st) st = dk__buf_putc(&b, '}', err);
  }
  if (!st) st = dk__buf_putc(&b, '}', err);
  char *out = st ? NULL : dk__malloc(NULL, b.len + 1); /* dk_free, as the writer's */
  if (!st && !out) st = dk__error_set(err, DK_NOMEM, "out of memory (stats)");
  if (!st) {
    memcpy(out, b.data, b.len + 1);
    dk_free(*stats);
    *stats = out;
  }
  dk__buf_dispose(&b);
  dk__arena_dispose(&ar);
  return st;
}

/* Closes file i (flush, footer, publish) and takes its statistics: the part of closing a
 * file that may run on any thread (files are independent). */
static dk_status finish_file(wctx *c, size_t i, dk_error *err) {
  wfile *f = &c->files[i];
  f->r.version = DK_PARQUET_WRITE_RESULT_VERSION;
  DK_RETURN_NOT_OK(dk_parquet_writer_close(f->w, &f->r, err));
  f->finished = 1;
  if (!c->cdc) DK_RETURN_NOT_OK(dk_parquet_writer_delta_stats(&f->stats, f->w, &c->so, err));
  if (!c->cdc && c->n_extra && f->stats) DK_RETURN_NOT_OK(drop_extra_stats(c, &f->stats, err));
  return DK_OK;
}

/* Stages the add of finished file i (on the transaction's thread). */
static dk_status stage_file(wctx *c, size_t i, dk_error *err) {
  wfile *f = &c->files[i];
  dk_status st = dk__buf_append(&c->done_paths, f->rel, strlen(f->rel) + 1, err);
  if (!st) {
    const char **kv = c->n_part ? dk__calloc(c->alloc, 2 * c->n_part, sizeof *kv) : NULL;
    for (size_t k = 0; kv && k < c->n_part; k++) {
      kv[2 * k] = c->x->meta.part[k];
      kv[2 * k + 1] = f->pv[k];
    }
    dk_add_file a = {.version = DK_ADD_FILE_VERSION, .path = f->rel,
                     .n_partition_values = c->n_part, .partition_kv = kv, .size = f->r.file_size,
                     .modification_time = wall_ms(),
                     .data_change = !(c->o && c->o->version >= 2 && c->o->rearrange_only),
                     .stats = f->stats};
    if (c->n_part && !kv) st = dk__error_set(err, DK_NOMEM, "out of memory (write)");
    else st = c->cdc ? dk_txn__add_cdc(c->x, &a, err) : dk_txn_add_file(c->x, &a, err);
    if (!st) dk_txn__own_last_add(c->x);
    dk__free(c->alloc, kv);
    if (!st && c->res) {
      c->res->files++;
      c->res->rows += f->r.num_rows;
      c->res->bytes += f->r.file_size;
      if (c->o && c->o->progress)
        c->o->progress(c->o->progress_payload, c->res->files, c->res->rows, c->res->bytes);
    }
  }
  f->finished = 0; /* in done_paths from here on (or the write failed and it is removed) */
  dk_free(f->stats);
  f->stats = NULL;
  dk_parquet_writer_free(f->w);
  f->w = NULL;
  dk__free(c->alloc, f->rel);
  f->rel = NULL;
  return st;
}

/* Closes file i and stages its add. */
static dk_status close_file(wctx *c, size_t i, dk_error *err) {
  dk_status st = finish_file(c, i, err);
  return st ? st : stage_file(c, i, err);
}

/* Evaluates the constraints on one batch (stream schema). */
static dk_status check_rows(wctx *c, const struct ArrowSchema *s, const struct ArrowArray *b,
                            dk_error *err) {
  if (!c->n_checks || b->length == 0) return DK_OK;
  uint8_t *mask = dk__malloc(c->alloc, (size_t)b->length);
  if (!mask) return dk__error_set(err, DK_NOMEM, "out of memory (constraint check)");
  dk_status st = DK_OK;
  for (size_t k = 0; k < c->n_checks && !st; k++) {
    int64_t sel = 0;
    st = dk_expr_eval_filter(mask, &sel, c->checks[k], s, b, err);
    if (!st && sel != b->length) {
      int64_t r = 0;
      while (r < b->length && mask[r]) r++;
      if (!strncmp(c->check_names[k], "replaceWhere:", 13))
        st = dk__error_set(err, DK_INVALID,
                           "Data written out does not match replaceWhere '%s': row %lld of the "
                           "batch does not satisfy it (DELTA_REPLACE_WHERE_MISMATCH)",
                           c->check_names[k] + 13, (long long)r);
      else
        st = dk__error_set(err, DK_INVALID,
                           "CHECK constraint %s violated by row %lld of the batch "
                           "(DELTA_VIOLATE_CONSTRAINT_WITH_VALUES)",
                           c->check_names[k], (long long)r);
    }
  }
  dk__free(c->alloc, mask);
  return st;
}

static dk_status add_check(wctx *c, const char *name, const dk_expr *e,
                           const struct ArrowSchema *s, dk_error *err) {
  dk_expr *b = NULL;
  DK_RETURN_NOT_OK(dk_expr_bind(&b, e, s, err));
  dk_expr **ne = dk__realloc(c->alloc, c->checks, (c->n_checks + 1) * sizeof *ne);
  char **nn = ne ? dk__realloc(c->alloc, c->check_names, (c->n_checks + 1) * sizeof *nn) : NULL;
  if (ne) c->checks = ne;
  if (nn) c->check_names = nn;
  char *nm = nn ? dk__strdup(c->alloc, name) : NULL;
  if (!nm) {
    dk_expr_free(b);
    return dk__error_set(err, DK_NOMEM, "out of memory (constraints)");
  }
  c->checks[c->n_checks] = b;
  c->check_names[c->n_checks++] = nm;
  return DK_OK;
}

/* CHECK constraints (delta.constraints.<name>) and column invariants of the table. */
static dk_status load_constraints(wctx *c, const struct ArrowSchema *s, dk_error *err) {
  const txn_meta *m = &c->x->meta;
  for (size_t i = 0; i < m->n_conf; i++) {
    const char *k = m->conf[2 * i];
    if (strncmp(k, "delta.constraints.", 18)) continue;
    dk_expr *e = NULL;
    dk_status st = dk_expr_parse(&e, m->conf[2 * i + 1], err);
    if (st) {
      dk__error_prefix(err, "CHECK constraint %s (%s) is beyond dk's expression grammar; the "
                            "write is refused",
                       k + 18, m->conf[2 * i + 1]);
      return DK_UNSUPPORTED;
    }
    char name[300];
    snprintf(name, sizeof name, "%s (%s)", k + 18, m->conf[2 * i + 1]);
    st = add_check(c, name, e, s, err);
    dk_expr_free(e);
    if (st) return st;
  }
  for (size_t i = 0; i < c->schema->n_fields; i++) {
    const dk_field *f = &c->schema->fields[i];
    const char *md = f->metadata_json ? f->metadata_json : "";
    if (strstr(md, "\"delta.identity."))
      return dk__error_set(err, DK_UNSUPPORTED,
                           "column '%s' is an identity column; dk does not assign identity "
                           "values yet, so the write is refused",
                           f->name);
    if (strstr(md, "\"delta.invariants\""))
      return dk__error_set(err, DK_UNSUPPORTED,
                           "column '%s' has a delta.invariants constraint; dk does not enforce "
                           "invariants yet, so the write is refused",
                           f->name);
  }
  return DK_OK;
}

static void wctx_dispose(wctx *c, int failed) {
  for (size_t i = 0; i < c->n_files; i++) {
    wfile *f = &c->files[i];
    if (f->finished && f->rel) /* published by a task, never staged: delete it */
      dk_txn__remove_data_file(c->x->table, f->rel);
    dk_parquet_writer_free(f->w); /* aborts the unfinished: nothing published */
    dk__free(c->alloc, f->rel);
    dk_free(f->stats);
  }
  dk__free(c->alloc, c->part_file);
  if (failed) /* files closed before the failure are referenced by nothing: delete them */
    for (size_t p = 0; p < c->done_paths.len;) {
      const char *rel = c->done_paths.data + p;
      dk_txn__remove_data_file(c->x->table, rel);
      p += strlen(rel) + 1;
    }
  dk__free(c->alloc, c->files);
  dk__buf_dispose(&c->done_paths);
  dk__hmap_dispose(&c->groups);
  for (size_t i = 0; i < c->n_checks; i++) {
    dk_expr_free(c->checks[i]);
    dk__free(c->alloc, c->check_names[i]);
  }
  dk__free(c->alloc, c->checks);
  dk__free(c->alloc, c->check_names);
  dk__free(c->alloc, c->in_col);
  dk__free(c->alloc, c->is_part);
  dk__free(c->alloc, c->part_col);
  dk__free(c->alloc, c->data_col);
  if (c->data.release) c->data.release(&c->data);
  if (c->phys.release) c->phys.release(&c->phys);
}

/* Resolves the stream's columns against the table's and builds the files' schema. */
static dk_status setup(wctx *c, const struct ArrowSchema *in, dk_error *err) {
  dk_txn *x = c->x;
  DK_RETURN_NOT_OK(dk_schema__parse(&c->schema, &x->ar, x->meta.schema_string,
                                    strlen(x->meta.schema_string), err));
  DK_RETURN_NOT_OK(dk_schema__to_arrow(&c->phys, c->schema, 1, c->alloc, err));
  c->n_cols = c->schema->n_fields;
  c->n_part = x->meta.n_part;
  c->in_col = dk__calloc(c->alloc, c->n_cols + 1, sizeof *c->in_col);
  c->is_part = dk__calloc(c->alloc, c->n_cols + 1, sizeof *c->is_part);
  c->part_col = dk__calloc(c->alloc, c->n_part + 1, sizeof *c->part_col);
  c->data_col = dk__calloc(c->alloc, c->n_cols + 1, sizeof *c->data_col);
  if (!c->in_col || !c->is_part || !c->part_col || !c->data_col)
    return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  for (size_t k = 0; k < c->n_part; k++) {
    const dk_field *f = dk_schema_find(c->schema, x->meta.part[k]);
    DK_RETURN_IF(!f, DK_CORRUPT, err, "partition column '%s' is not in the schema",
                 x->meta.part[k]);
    c->part_col[k] = f - c->schema->fields;
    c->is_part[c->part_col[k]] = 1;
  }
  /* every stream column is a table column (or an extra one), and every table column is in
   * the stream */
  const char *rt_id = c->cdc ? NULL : dk_txn__row_tracking_col(x, 0);
  const char *rt_cv = c->cdc ? NULL : dk_txn__row_tracking_col(x, 1);
  for (int64_t j = 0; j < in->n_children; j++) {
    const char *nm = in->children[j]->name ? in->children[j]->name : "";
    const char *fmt = in->children[j]->format;
    bool extra = c->cdc ? !strcmp(nm, "_change_type") && !strcmp(fmt, "u")
                        : ((rt_id && !strcmp(nm, rt_id)) || (rt_cv && !strcmp(nm, rt_cv))) &&
                              !strcmp(fmt, "l");
    if (extra) {
      DK_RETURN_IF(c->n_extra == DK_ARRAY_LEN(c->extra_col), DK_INVALID, err,
                   "column '%s' appears twice in the data", nm);
      c->extra_col[c->n_extra++] = j;
      continue;
    }
    if (!dk_schema_find(c->schema, nm))
      return dk__error_set(err, DK_INVALID,
                           "A schema mismatch detected when writing to the Delta table: column "
                           "'%s' of the data is not in the table's schema (write with "
                           "schema_mode merge to add it) (DELTA_METADATA_MISMATCH)",
                           nm);
  }
  for (size_t i = 0; i < c->n_cols; i++) {
    const dk_field *f = &c->schema->fields[i];
    int64_t j = 0;
    while (j < in->n_children && strcasecmp(in->children[j]->name, f->name)) j++;
    if (j == in->n_children)
      return dk__error_set(err, DK_INVALID, "%s column '%s' is missing from the data",
                           c->is_part[i] ? "partition" : "table", f->name);
    /* the data's Arrow type must be the table's */
    if (strcmp(in->children[j]->format, c->phys.children[i]->format) &&
        !(c->phys.children[i]->format[0] == 'u' && !strcmp(in->children[j]->format, "U")))
      return dk__error_set(err, DK_INVALID,
                           "A schema mismatch detected when writing to the Delta table: column "
                           "'%s' has Arrow type '%s' in the data and '%s' in the table",
                           f->name, in->children[j]->format, c->phys.children[i]->format);
    c->in_col[i] = j;
    if (!c->is_part[i]) c->data_col[c->n_data++] = (int64_t)i;
  }
  DK_RETURN_IF(c->cdc && c->n_extra != 1, DK_INTERNAL, err,
               "change data without a _change_type string column");
  /* the files' schema: the physical data columns, in table order, the data's types; then the
   * extra columns (change data: _change_type) */
  dk_atype sty = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(&c->data, &sty, "", 0, (int64_t)(c->n_data + c->n_extra),
                                   err));
  for (size_t d = 0; d < c->n_data + c->n_extra; d++) {
    const struct ArrowSchema *from = d < c->n_data ? c->phys.children[c->data_col[d]]
                                                   : in->children[c->extra_col[d - c->n_data]];
    dk__schema_release(c->data.children[d]);
    DK_RETURN_NOT_OK(dk__schema_copy(c->data.children[d], from, err));
  }
  return DK_OK;
}

/* The data columns of batch b (stream layout) as a struct array in the files' layout (the
 * children are moved out of b; b keeps its other children until released). */
static dk_status data_view(struct ArrowArray *out, wctx *c, struct ArrowArray *b,
                           dk_error *err) {
  size_t nk = c->n_data + c->n_extra;
  struct ArrowArray *kids = dk__calloc(c->alloc, nk + 1, sizeof *kids);
  if (!kids) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  for (size_t d = 0; d < nk; d++) {
    struct ArrowArray *src = b->children[d < c->n_data ? c->in_col[c->data_col[d]]
                                                        : c->extra_col[d - c->n_data]];
    kids[d] = *src;
    src->release = NULL;
  }
  const void *bufs[1] = {NULL};
  dk_status st = dk__array_wrap(out, b->length, 0, b->offset, 1, bufs, (int64_t)nk, kids,
                                NULL, NULL, c->alloc, err);
  dk__free(c->alloc, kids);
  return st;
}

/* Records a new distinct partition (values copied into the arena); *p is its index. */
static dk_status note_partition(wctx *c, const char *const *pv, size_t *p, dk_error *err) {
  if (c->n_parts_seen == c->cap_parts_seen) {
    size_t nc = c->cap_parts_seen ? c->cap_parts_seen * 2 : 16;
    const char **q = dk__arena_alloc(&c->x->ar, nc * (c->n_part ? c->n_part : 1) * sizeof *q, err);
    size_t *pf = dk__realloc(c->alloc, c->part_file, nc * sizeof *pf);
    if (!q || !pf) {
      if (pf) c->part_file = pf;
      return dk__error_set(err, DK_NOMEM, "out of memory (write)");
    }
    if (c->n_parts_seen) memcpy(q, c->parts_seen, c->n_parts_seen * c->n_part * sizeof *q);
    c->parts_seen = q;
    c->part_file = pf;
    c->cap_parts_seen = nc;
  }
  const char **row = c->parts_seen + c->n_parts_seen * c->n_part;
  for (size_t k = 0; k < c->n_part; k++) {
    row[k] = pv[k] ? dk__arena_strndup(&c->x->ar, pv[k], strlen(pv[k]), err) : NULL;
    if (pv[k] && !row[k]) return DK_NOMEM;
  }
  c->part_file[c->n_parts_seen] = NO_FILE;
  *p = c->n_parts_seen++;
  return DK_OK;
}

/* A slice borrows its parent's buffers: "releasing" it frees nothing. */
/* Bytes of a column's values (rough for nested types). */
static int64_t raw_bytes(const struct ArrowSchema *s, const struct ArrowArray *a) {
  const char *f = s->format;
  int64_t n = a->length;
  if ((f[0] == 'u' || f[0] == 'z') && !f[1] && a->n_buffers >= 3 && a->buffers[1]) {
    const int32_t *o = a->buffers[1];
    return 4 * n + (o[a->offset + n] - o[a->offset]);
  }
  if ((f[0] == 'U' || f[0] == 'Z') && !f[1] && a->n_buffers >= 3 && a->buffers[1]) {
    const int64_t *o = a->buffers[1];
    return 8 * n + (o[a->offset + n] - o[a->offset]);
  }
  if (!strcmp(f, "b")) return n / 8 + 1;
  if (!strcmp(f, "c")) return n;
  if (!strcmp(f, "s")) return 2 * n;
  if (!strcmp(f, "i") || !strcmp(f, "f") || !strncmp(f, "td", 2)) return 4 * n;
  if (!strncmp(f, "d:", 2)) return 16 * n;
  if (f[0] == '+') {
    int64_t t = 0;
    for (int64_t i = 0; i < a->n_children; i++) t += raw_bytes(s->children[i], a->children[i]);
    return t + n;
  }
  return 8 * n;
}

/* Writes rows of `arr` (the files' layout) into file *fi, rolling to a new file of the same
 * partition whenever the current one reaches the target size (*fi then names the new one). */
static dk_status write_rows(wctx *c, size_t *fi, const struct ArrowArray *arr, double row_bytes,
                            dk_error *err) {
  int64_t done = 0;
  while (done < arr->length) {
    wfile *f = &c->files[*fi];
    int64_t room = c->target - f->est_bytes;
    int64_t rows = row_bytes > 0 ? (int64_t)((double)room / row_bytes) : arr->length;
    if (rows < 1) rows = 1;
    if (rows > arr->length - done) rows = arr->length - done;
    struct ArrowArray sl = *arr; /* a borrowed slice: not released here */
    sl.offset = arr->offset + done;
    sl.length = rows;
    sl.null_count = arr->null_count ? -1 : 0;
    sl.release = dk__array_release_borrowed;
    DK_RETURN_NOT_OK(dk_parquet_writer_write(f->w, &sl, err));
    f->est_bytes += (int64_t)(row_bytes * (double)rows);
    done += rows;
    if (f->est_bytes >= c->target) {
      const char *pv[64];
      for (size_t k = 0; k < c->n_part; k++) pv[k] = f->pv[k];
      DK_RETURN_NOT_OK(close_file(c, *fi, err));
      if (done < arr->length) DK_RETURN_NOT_OK(open_file(c, pv, fi, err));
    }
  }
  return DK_OK;
}

/* ---- partitioned batches ----------------------------------------------------------------
** Rows are grouped by their partition values (a batch-local hash of the values' raw bytes, the
** partition's text built once per distinct value), then counting-sorted per window of rows;
** each partition's rows of a window are gathered (the take kernel) and written to its file by
** one task of the table's executor, the partitions' files in parallel (their Parquet writers
** then run single-threaded). Files are opened and staged on the calling thread; a task only
** writes and, when its file reached the target, closes it. */

#define WINDOW_ROWS (1 << 16)
#define MAX_SEGS 4 /* files a partition's task fills per round (bounds the files open) */

/* Bytes of a partition value's raw grouping key by its Arrow format: the value's own bytes
 * (fixed width), -1 / -2 for 32 / 64-bit offset strings, -3 for booleans, 0 for a type with
 * no raw form (part_text then names it). */
static int raw_width(const char *f) {
  if (!strcmp(f, "u")) return -1;
  if (!strcmp(f, "U")) return -2;
  if (!strcmp(f, "b")) return -3;
  if (!strcmp(f, "c")) return 1;
  if (!strcmp(f, "s")) return 2;
  if (!strcmp(f, "i") || !strcmp(f, "tdD")) return 4;
  if (!strcmp(f, "l") || !strncmp(f, "tsu:", 4)) return 8;
  if (!strncmp(f, "d:", 2)) return 16;
  return 0;
}

#define RAW_KEY_MAX 1030 /* per column: tag, length, at most 1024 bytes (part_text's limit) */

/* Row r's raw grouping key in kb (per column a null/value tag and the value's bytes); its
 * length, or 0 when a value has no raw form here (too long, or an unusual type). */
static size_t raw_key(uint8_t *kb, const wctx *c, const int *wd, const struct ArrowArray *b,
                      int64_t r) {
  size_t n = 0;
  for (size_t k = 0; k < c->n_part; k++) {
    const struct ArrowArray *a = b->children[c->in_col[c->part_col[k]]];
    int64_t i = r + b->offset + a->offset;
    const uint8_t *valid = a->null_count ? a->buffers[0] : NULL;
    if (valid && !dk__bit_get(valid, i)) {
      kb[n++] = 'N';
      continue;
    }
    kb[n++] = 'V';
    int w = wd[k];
    if (w == -1 || w == -2) {
      int64_t lo, hi;
      if (w == -1) {
        lo = ((const int32_t *)a->buffers[1])[i];
        hi = ((const int32_t *)a->buffers[1])[i + 1];
      } else {
        lo = ((const int64_t *)a->buffers[1])[i];
        hi = ((const int64_t *)a->buffers[1])[i + 1];
      }
      if (hi - lo > 1024) return 0;
      uint32_t len = (uint32_t)(hi - lo);
      memcpy(kb + n, &len, 4);
      memcpy(kb + n + 4, (const char *)a->buffers[2] + lo, len);
      n += 4 + len;
    } else if (w == -3) {
      kb[n++] = (uint8_t)dk__bit_get(a->buffers[1], i);
    } else if (w > 0) {
      memcpy(kb + n, (const uint8_t *)a->buffers[1] + (size_t)w * (size_t)i, (size_t)w);
      n += (size_t)w;
    } else {
      return 0;
    }
  }
  return n;
}

/* The partition of row r (its index in parts_seen), from the values' text: a partition new
 * to the write is recorded. */
static dk_status part_of_row(size_t *out, wctx *c, const struct ArrowSchema *in,
                             const struct ArrowArray *b, int64_t r, dk_buf *key,
                             dk_error *err) {
  const char *pv[64];
  char pvbuf[64][1024];
  dk__buf_clear(key);
  for (size_t k = 0; k < c->n_part; k++) {
    int64_t col = c->in_col[c->part_col[k]];
    int is_null;
    DK_RETURN_NOT_OK(part_text(pvbuf[k], sizeof pvbuf[k], &is_null, in->children[col],
                               b->children[col], r + b->offset, err));
    if (is_null && !c->schema->fields[c->part_col[k]].nullable)
      return dk__error_set(err, DK_INVALID,
                           "NULL value in the non-nullable partition column '%s' "
                           "(DELTA_NOT_NULL_CONSTRAINT_VIOLATED)",
                           c->schema->fields[c->part_col[k]].name);
    pv[k] = is_null ? NULL : pvbuf[k];
    DK_RETURN_NOT_OK(dk__buf_putc(key, is_null ? 'N' : 'V', err));
    if (!is_null) DK_RETURN_NOT_OK(dk__buf_append(key, pvbuf[k], strlen(pvbuf[k]), err));
    DK_RETURN_NOT_OK(dk__buf_putc(key, 0, err));
  }
  uint64_t *slot;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&c->groups, key->data, key->len, &slot, &ins, err));
  if (!ins) {
    *out = (size_t)(*slot - 1);
    return DK_OK;
  }
  *slot = 0; /* not a partition until recorded (a failure below leaves no dangling entry) */
  DK_RETURN_NOT_OK(note_partition(c, pv, out, err));
  *dk__hmap_get(&c->groups, key->data, key->len) = *out + 1;
  return DK_OK;
}

/* gid[r] = the partition of each row of b. */
static dk_status group_rows(int64_t *gid, wctx *c, const struct ArrowSchema *in,
                            const struct ArrowArray *b, dk_error *err) {
  DK_RETURN_IF(c->n_part > 64, DK_UNSUPPORTED, err, "more than 64 partition columns");
  int wd[64];
  for (size_t k = 0; k < c->n_part; k++)
    wd[k] = raw_width(in->children[c->in_col[c->part_col[k]]]->format);
  uint8_t *kb = dk__malloc(c->alloc, c->n_part * RAW_KEY_MAX);
  if (!kb) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  dk_hmap local; /* raw key -> partition + 1, this batch */
  dk__hmap_init(&local, c->alloc);
  dk_buf key;
  dk__buf_init(&key, c->alloc);
  dk_status st = DK_OK;
  for (int64_t r = 0; r < b->length && !st; r++) {
    size_t kl = raw_key(kb, c, wd, b, r);
    uint64_t *slot = NULL;
    bool ins = true;
    if (kl) st = dk__hmap_upsert(&local, (const char *)kb, kl, &slot, &ins, err);
    if (st) break;
    if (!ins) {
      gid[r] = (int64_t)(*slot - 1);
      continue;
    }
    if (slot) *slot = 0;
    size_t p;
    st = part_of_row(&p, c, in, b, r, &key, err);
    if (!st && kl) *dk__hmap_get(&local, (const char *)kb, kl) = p + 1;
    gid[r] = (int64_t)p;
  }
  dk__buf_dispose(&key);
  dk__hmap_dispose(&local);
  dk__free(c->alloc, kb);
  return st;
}

/* A run of one partition's rows that goes into one file. */
typedef struct wseg {
  size_t file;
  int64_t row0, rows;       /* within the job's rows */
  int close;                /* the file reached the target: close it after these rows */
} wseg;

/* One partition's rows of a round, written by one task. */
typedef struct wjob {
  const int64_t *idx;       /* the rows (window-sorted batch row numbers) */
  int64_t m;
  size_t seg0, n_seg;       /* its segments in the round's array */
  dk_status st;
  dk_error err;
} wjob;

typedef struct wround {
  wctx *c;
  const struct ArrowArray *view;
  wjob *jobs;
  size_t n_jobs;
  wseg *segs;
  atomic_size_t next;
} wround;

static dk_status run_job(wctx *c, const struct ArrowArray *view, const wjob *j,
                         const wseg *segs, dk_error *err) {
  struct ArrowArray part;
  DK_RETURN_NOT_OK(dk_scan__take(&part, &c->data, view, j->idx, j->m, c->alloc, err));
  dk_status st = DK_OK;
  for (size_t s = 0; s < j->n_seg && !st; s++) {
    const wseg *g = &segs[j->seg0 + s];
    struct ArrowArray sl = part; /* a borrowed slice: not released here */
    sl.offset = part.offset + g->row0;
    sl.length = g->rows;
    sl.null_count = part.null_count ? -1 : 0;
    sl.release = dk__array_release_borrowed;
    st = dk_parquet_writer_write(c->files[g->file].w, &sl, err);
    if (!st && g->close) st = finish_file(c, g->file, err);
  }
  part.release(&part);
  return st;
}

static void run_jobs(void *arg) {
  wround *rd = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&rd->next, 1);
    if (i >= rd->n_jobs) return;
    wjob *j = &rd->jobs[i];
    dk_error_init(&j->err);
    j->st = run_job(rd->c, rd->view, j, rd->segs, &j->err);
  }
}

/* Plans up to MAX_SEGS files' worth of partition p's rows (*left of them, from *done),
 * opening files as needed. */
static dk_status plan_part(wctx *c, size_t p, int64_t *done, int64_t left, double row_bytes,
                           wseg **segs, size_t *n_segs, size_t *cap_segs, dk_error *err) {
  int64_t taken = 0;
  for (int s = 0; s < MAX_SEGS && taken < left; s++) {
    size_t fi = c->part_file[p];
    if (fi == NO_FILE) {
      DK_RETURN_NOT_OK(open_file(c, c->parts_seen + p * c->n_part, &fi, err));
      c->part_file[p] = fi;
    }
    wfile *f = &c->files[fi];
    int64_t room = c->target - f->est_bytes;
    int64_t rows = row_bytes > 0 ? (int64_t)((double)room / row_bytes) : left;
    if (rows < 1) rows = 1;
    if (rows > left - taken) rows = left - taken;
    if (*n_segs == *cap_segs) {
      size_t nc = *cap_segs ? *cap_segs * 2 : 64;
      wseg *q = dk__realloc(c->alloc, *segs, nc * sizeof *q);
      if (!q) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
      *segs = q;
      *cap_segs = nc;
    }
    f->est_bytes += (int64_t)(row_bytes * (double)rows);
    int full = f->est_bytes >= c->target;
    (*segs)[(*n_segs)++] = (wseg){fi, taken, rows, full};
    if (full) c->part_file[p] = NO_FILE;
    taken += rows;
  }
  *done += taken;
  return DK_OK;
}

/* Writes the rows of each partition (cnt[p] rows at idx + start[p]; done[p] of them written)
 * in rounds of parallel tasks until every row is written. */
static dk_status write_window(wctx *c, const struct ArrowArray *view, const int64_t *idx,
                              const int64_t *start, const int64_t *cnt, int64_t *done,
                              double row_bytes, dk_error *err) {
  size_t np = c->n_parts_seen;
  wjob *jobs = dk__calloc(c->alloc, np, sizeof *jobs);
  if (!jobs) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  wseg *segs = NULL;
  size_t cap_segs = 0;
  dk_status st = DK_OK;
  for (;;) {
    size_t n_jobs = 0, n_segs = 0;
    for (size_t p = 0; p < np && !st; p++) {
      if (done[p] == cnt[p]) continue;
      wjob *j = &jobs[n_jobs++];
      int64_t d0 = done[p];
      j->seg0 = n_segs;
      st = plan_part(c, p, &done[p], cnt[p] - d0, row_bytes, &segs, &n_segs, &cap_segs, err);
      j->idx = idx + start[p] + d0;
      j->m = done[p] - d0;
      j->n_seg = n_segs - j->seg0;
    }
    if (st || n_jobs == 0) break;
    wround rd = {c, view, jobs, n_jobs, segs, 0};
    dk__exec_fanout(c->ex, (int)DK_MIN((size_t)c->par, n_jobs), run_jobs, &rd);
    for (size_t i = 0; i < n_jobs && !st; i++)
      if (jobs[i].st) {
        *err = jobs[i].err;
        st = jobs[i].st;
      }
    for (size_t i = 0; i < n_jobs && !st; i++)
      for (size_t s = 0; s < jobs[i].n_seg && !st; s++)
        if (segs[jobs[i].seg0 + s].close) st = stage_file(c, segs[jobs[i].seg0 + s].file, err);
    if (st) break;
  }
  dk__free(c->alloc, segs);
  dk__free(c->alloc, jobs);
  return st;
}

static dk_status write_partitioned(wctx *c, const struct ArrowSchema *in, struct ArrowArray *b,
                                   double row_bytes, dk_error *err) {
  int64_t n = b->length;
  int64_t *gid = dk__malloc(c->alloc, (size_t)n * sizeof *gid);
  int64_t *idx = dk__malloc(c->alloc, (size_t)DK_MIN(n, WINDOW_ROWS) * sizeof *idx);
  dk_status st = gid && idx ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (write)");
  if (!st) st = group_rows(gid, c, in, b, err);
  if (!st && !c->par) { /* decided once: several partitions write in parallel, one alone
                           spreads its columns over the writer's threads */
    int th = DK_MIN(c->po.threads, dk__exec_threads(c->ex));
    c->par = c->n_parts_seen > 1 && th > 1 ? th : 1;
    if (c->par > 1) c->po.threads = 1;
  }
  size_t np = c->n_parts_seen;
  int64_t *cnt = st ? NULL : dk__calloc(c->alloc, 3 * np, sizeof *cnt);
  if (!st && !cnt) st = dk__error_set(err, DK_NOMEM, "out of memory (write)");
  struct ArrowArray view;
  memset(&view, 0, sizeof view);
  if (!st) st = data_view(&view, c, b, err);
  for (int64_t w0 = 0; w0 < n && !st; w0 += WINDOW_ROWS) {
    int64_t w1 = DK_MIN(n, w0 + WINDOW_ROWS);
    int64_t *start = cnt + np, *pos = cnt + 2 * np;
    memset(cnt, 0, 3 * np * sizeof *cnt);
    for (int64_t r = w0; r < w1; r++) cnt[gid[r]]++;
    for (size_t p = 1; p < np; p++) start[p] = start[p - 1] + cnt[p - 1];
    memcpy(pos, start, np * sizeof *pos);
    for (int64_t r = w0; r < w1; r++) idx[pos[gid[r]]++] = r;
    memset(pos, 0, np * sizeof *pos); /* now: rows of each partition written */
    st = write_window(c, &view, idx, start, cnt, pos, row_bytes, err);
  }
  if (view.release) view.release(&view);
  dk__free(c->alloc, cnt);
  dk__free(c->alloc, gid);
  dk__free(c->alloc, idx);
  return st;
}

typedef struct wclose {
  wctx *c;
  const size_t *files;
  size_t n;
  dk_status *st;
  dk_error *err;
  atomic_size_t next;
} wclose;

static void run_closes(void *arg) {
  wclose *w = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&w->next, 1);
    if (i >= w->n) return;
    dk_error_init(&w->err[i]);
    w->st[i] = finish_file(w->c, w->files[i], &w->err[i]);
  }
}

/* Closes every open file (in parallel when partitions are written so) and stages them. */
static dk_status close_all(wctx *c, dk_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_files; i++) n += c->files[i].w && !c->files[i].finished;
  if (c->par <= 1 || n <= 1) {
    for (size_t i = 0; i < c->n_files; i++)
      if (c->files[i].w) DK_RETURN_NOT_OK(close_file(c, i, err));
    return DK_OK;
  }
  size_t *files = dk__calloc(c->alloc, n, sizeof *files);
  dk_status *sts = dk__calloc(c->alloc, n, sizeof *sts);
  dk_error *errs = dk__calloc(c->alloc, n, sizeof *errs);
  dk_status st = files && sts && errs ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (write)");
  if (!st) {
    size_t k = 0;
    for (size_t i = 0; i < c->n_files; i++)
      if (c->files[i].w && !c->files[i].finished) files[k++] = i;
    wclose w = {c, files, n, sts, errs, 0};
    dk__exec_fanout(c->ex, (int)DK_MIN((size_t)c->par, n), run_closes, &w);
    for (size_t i = 0; i < n && !st; i++)
      if (sts[i]) {
        *err = errs[i];
        st = sts[i];
      }
    for (size_t i = 0; i < n && !st; i++) st = stage_file(c, files[i], err);
  }
  dk__free(c->alloc, files);
  dk__free(c->alloc, sts);
  dk__free(c->alloc, errs);
  return st;
}

/* Routes one batch: whole into the single file (unpartitioned) or by partition. */
static dk_status write_batch(wctx *c, const struct ArrowSchema *in, struct ArrowArray *b,
                             dk_error *err) {
  if (b->length == 0) return DK_OK;
  DK_RETURN_NOT_OK(check_rows(c, in, b, err));
  int64_t bytes = 0; /* the batch's raw size: files roll by it (Parquet is smaller) */
  for (int64_t j = 0; j < b->n_children; j++) bytes += raw_bytes(in->children[j], b->children[j]);
  if (c->n_part == 0) {
    if (c->n_files == 0 || !c->files[c->n_files - 1].w) {
      size_t fi;
      DK_RETURN_NOT_OK(open_file(c, NULL, &fi, err));
      size_t p;
      if (c->n_parts_seen == 0) DK_RETURN_NOT_OK(note_partition(c, NULL, &p, err));
    }
    size_t fi = c->n_files - 1;
    struct ArrowArray view;
    DK_RETURN_NOT_OK(data_view(&view, c, b, err));
    dk_status st = write_rows(c, &fi, &view, (double)bytes / (double)b->length, err);
    view.release(&view);
    return st;
  }
  return write_partitioned(c, in, b, (double)bytes / (double)b->length, err);
}

/* ---- generated columns (PROTOCOL.md "Generated Columns"; delta-spark GeneratedColumn) -------
** A generated column the data leaves out is computed from its delta.generationExpression with
** dk's expression evaluator (cast to the column's type as Spark's store assignment does); one
** the data provides must equal it: a CHECK `col <=> (expr)` fails the rows that differ, as
** delta-spark's constraint does. An expression dk cannot parse or evaluate refuses the write. */

typedef struct gen_col {
  const char *name;
  dk_atype type;
  dk_expr *bound;           /* bound to the stream's schema */
} gen_col;

typedef struct gen_ctx {
  gen_col *cols;            /* the generated columns missing from the data */
  size_t n;
  struct ArrowSchema in2;   /* the stream's schema and those columns (n > 0) */
} gen_ctx;

static void gen_dispose(gen_ctx *g, const dk_allocator *al) {
  for (size_t i = 0; i < g->n; i++) dk_expr_free(g->cols[i].bound);
  dk__free(al, g->cols);
  if (g->in2.release) g->in2.release(&g->in2);
}

/* The generation expression of field f (arena text), or NULL. */
static const char *gen_expr(wctx *c, const dk_field *f, dk_error *err) {
  const char *md = f->metadata_json;
  if (!md || !strstr(md, "\"delta.generationExpression\"")) return NULL;
  dk_json_value *j;
  if (dk__json_parse(&j, &c->x->ar, md, strlen(md), err) != DK_OK) return NULL;
  const dk_json_value *v = dk__json_get(j, "delta.generationExpression");
  return v && v->type == DK_JSON_STRING ? v->u.str : NULL;
}

static dk_status gen_refuse(dk_error *err, const dk_field *f, const char *expr) {
  dk__error_prefix(err, "generated column '%s' (GENERATED ALWAYS AS (%s)): dk cannot evaluate "
                        "its expression, so the write is refused",
                   f->name, expr);
  if (err) err->code = DK_UNSUPPORTED;
  return DK_UNSUPPORTED;
}

static dk_status gen_setup(gen_ctx *g, wctx *c, const struct ArrowSchema *in, dk_error *err) {
  memset(g, 0, sizeof *g);
  const dk_txn *x = c->x;
  const dk_type *sch;
  DK_RETURN_NOT_OK(dk_schema__parse(&sch, &c->x->ar, x->meta.schema_string,
                                    strlen(x->meta.schema_string), err));
  struct ArrowSchema phys;
  DK_RETURN_NOT_OK(dk_schema__to_arrow(&phys, sch, 1, c->alloc, err));
  dk_status st = DK_OK;
  size_t cap = sch->n_fields;
  g->cols = dk__calloc(c->alloc, cap ? cap : 1, sizeof *g->cols);
  if (!g->cols) st = dk__error_set(err, DK_NOMEM, "out of memory (write)");
  for (size_t i = 0; !st && i < sch->n_fields; i++) {
    const dk_field *f = &sch->fields[i];
    dk_error_init(err);
    const char *e = gen_expr(c, f, err);
    if (!e) continue;
    int64_t j = 0;
    while (j < in->n_children && strcasecmp(in->children[j]->name, f->name)) j++;
    dk_expr *pe = NULL;
    if (j < in->n_children) { /* provided: must equal the expression */
      char *txt = dk__malloc(c->alloc, strlen(e) + strlen(f->name) + 16);
      if (!txt) st = dk__error_set(err, DK_NOMEM, "out of memory (write)");
      if (!st) {
        sprintf(txt, "`%s` <=> (%s)", f->name, e);
        st = dk_expr_parse(&pe, txt, err);
        if (st && st != DK_NOMEM) st = gen_refuse(err, f, e);
      }
      if (!st) {
        char name[600];
        snprintf(name, sizeof name, "Generated Column (%s)", txt);
        st = add_check(c, name, pe, in, err);
        if (st && st != DK_NOMEM) st = gen_refuse(err, f, e);
      }
      dk_expr_free(pe);
      dk__free(c->alloc, txt);
      continue;
    }
    gen_col *gc = &g->cols[g->n];
    gc->name = f->name;
    st = dk__atype_parse(&gc->type, phys.children[i]->format, err);
    if (!st && (gc->type.id == DK_AT_STRUCT || gc->type.id == DK_AT_LIST ||
                gc->type.id == DK_AT_MAP))
      st = gen_refuse(err, f, e);
    if (!st) st = dk_expr_parse(&pe, e, err);
    if (!st) st = dk_expr__bind_value(&gc->bound, pe, in, c->alloc, err);
    dk_expr_free(pe);
    if (st && st != DK_NOMEM) st = gen_refuse(err, f, e);
    if (!st) g->n++;
  }
  if (!st && g->n) { /* the stream's schema with the computed columns after its own */
    dk_atype sty = dk__atype_make(DK_AT_STRUCT);
    st = dk__schema_init(&g->in2, &sty, "", 0, in->n_children + (int64_t)g->n, err);
    for (int64_t j = 0; !st && j < in->n_children; j++) {
      dk__schema_release(g->in2.children[j]);
      st = dk__schema_copy(g->in2.children[j], in->children[j], err);
    }
    for (size_t k = 0; !st && k < g->n; k++) {
      dk__schema_release(g->in2.children[in->n_children + (int64_t)k]);
      st = dk__schema_init(g->in2.children[in->n_children + (int64_t)k], &g->cols[k].type,
                           g->cols[k].name, ARROW_FLAG_NULLABLE, 0, err);
    }
  }
  if (phys.release) phys.release(&phys);
  return st;
}

/* b with the computed columns appended (b2 borrows b's children; b still owns them). */
static dk_status gen_batch(struct ArrowArray *b2, const gen_ctx *g, const struct ArrowArray *b,
                           const dk_allocator *al, dk_error *err) {
  int64_t n0 = b->n_children, n = n0 + (int64_t)g->n;
  struct ArrowArray *kids = dk__calloc(al, (size_t)n, sizeof *kids);
  if (!kids) return dk__error_set(err, DK_NOMEM, "out of memory (write)");
  dk_status st = DK_OK;
  for (int64_t j = 0; j < n0; j++) {
    kids[j] = *b->children[j];
    kids[j].release = dk__array_release_borrowed;
    if (b->offset) { /* the struct's offset folded into the child */
      kids[j].offset += b->offset;
      kids[j].length = b->length;
      kids[j].null_count = -1;
    }
  }
  for (size_t k = 0; !st && k < g->n; k++)
    st = dk_expr__eval_value(&kids[n0 + (int64_t)k], g->cols[k].bound, &g->cols[k].type,
                             g->cols[k].name, b, al, err);
  const void *bufs[1] = {NULL};
  if (!st) st = dk__array_wrap(b2, b->length, 0, 0, 1, bufs, n, kids, NULL, NULL, al, err);
  if (st)
    for (int64_t j = 0; j < n; j++)
      if (kids[j].release) kids[j].release(&kids[j]);
  dk__free(al, kids);
  return st;
}

static dk_status write_stream(dk_write_result *out, dk_txn *x, struct ArrowArrayStream *data,
                              const dk_write_options *o, int cdc, dk_error *err);

dk_status dk_txn_write(dk_write_result *out, dk_txn *x, struct ArrowArrayStream *data,
                       const dk_write_options *o, dk_error *err) {
  return write_stream(out, x, data, o, 0, err);
}

dk_status dk_txn__write_cdc(dk_write_result *out, dk_txn *x, struct ArrowArrayStream *data,
                            dk_error *err) {
  return write_stream(out, x, data, NULL, 1, err);
}

static dk_status write_stream(dk_write_result *out, dk_txn *x, struct ArrowArrayStream *data,
                              const dk_write_options *o, int cdc, dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
  }
  DK_RETURN_IF(!x || !data || !data->get_schema, DK_INVALID, err, "dk_txn_write: no data");
  DK_RETURN_IF(!x->meta.schema_string, DK_INVALID, err,
               "dk_txn_write: the table has no schema yet (set the metadata first)");
  DK_RETURN_IF(o && o->version > DK_WRITE_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_write_options version %u is newer than dk's", o->version);
  wctx c;
  memset(&c, 0, sizeof c);
  c.x = x;
  c.alloc = x->alloc;
  c.o = o;
  c.res = out;
  c.cdc = cdc;
  dk__hmap_init(&c.groups, x->alloc);
  dk__buf_init(&c.done_paths, x->alloc);
  dk_txn__uuid(c.uuid);
  c.ex = x->table->exec;
  c.po.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  c.po.alloc = x->alloc;
  c.po.threads = o && o->threads > 0 ? o->threads : (int)DK_MIN(sysconf(_SC_NPROCESSORS_ONLN), 2);
  const char *codec = dk_txn__meta_conf(&x->meta, "delta.parquet.compression.codec");
  if (codec && !strcasecmp(codec, "zstd")) c.po.codec = DK_PARQUET_ZSTD;
  else if (codec && !strcasecmp(codec, "gzip")) c.po.codec = DK_PARQUET_GZIP;
  else if (codec && (!strcasecmp(codec, "uncompressed") || !strcasecmp(codec, "none")))
    c.po.codec = DK_PARQUET_UNCOMPRESSED;
  c.so.version = DK_DELTA_STATS_OPTIONS_VERSION;
  c.so.num_indexed_cols = dk_txn__meta_conf(&x->meta, "delta.dataSkippingNumIndexedCols");
  c.so.stats_columns = dk_txn__meta_conf(&x->meta, "delta.dataSkippingStatsColumns");
  c.so.tight_bounds = dk_txn__protocol_supports(&x->protocol, "deletionVectors");
  c.target = o && o->target_file_size > 0 ? o->target_file_size : 0;
  const char *tfs = dk_txn__meta_conf(&x->meta, "delta.targetFileSize");
  if (!c.target && tfs) c.target = strtoll(tfs, NULL, 10);
  if (c.target <= 0) c.target = 128LL << 20;
  gen_ctx g;
  memset(&g, 0, sizeof g);
  struct ArrowSchema in;
  memset(&in, 0, sizeof in);
  dk_status st = DK_OK;
  if (data->get_schema(data, &in) != 0) {
    const char *m = data->get_last_error ? data->get_last_error(data) : NULL;
    st = dk__error_set(err, DK_CALLBACK, "the data stream's get_schema failed: %s", m ? m : "");
    goto cleanup;
  }
  if (!cdc) DK_CHECK_GOTO(gen_setup(&g, &c, &in, err));
  const struct ArrowSchema *in2 = g.n ? &g.in2 : &in; /* the data with computed columns */
  DK_CHECK_GOTO(setup(&c, in2, err));
  if (!cdc) DK_CHECK_GOTO(load_constraints(&c, in2, err)); /* change data holds old rows too */
  if (o && o->replace_where) {
    char *txt = NULL;
    if (dk_expr_to_string(&txt, o->replace_where, NULL) != DK_OK) txt = NULL; /* name only */
    char name[600];
    snprintf(name, sizeof name, "replaceWhere:%s", txt ? txt : "");
    dk_expr_string_free(txt);
    DK_CHECK_GOTO(add_check(&c, name, o->replace_where, in2, err));
  }
  for (;;) {
    struct ArrowArray b;
    memset(&b, 0, sizeof b);
    if (data->get_next(data, &b) != 0) {
      const char *m = data->get_last_error ? data->get_last_error(data) : NULL;
      st = dk__error_set(err, DK_CALLBACK, "the data stream failed: %s", m ? m : "");
      break;
    }
    if (!b.release) break;
    if (g.n) {
      struct ArrowArray b2;
      st = gen_batch(&b2, &g, &b, c.alloc, err);
      if (!st) {
        st = write_batch(&c, in2, &b2, err);
        b2.release(&b2);
      }
    } else {
      st = write_batch(&c, &in, &b, err);
    }
    b.release(&b);
    if (st) break;
  }
  if (!st) st = close_all(&c, err);
  if (!st && out) {
    out->n_partitions = (int64_t)c.n_parts_seen;
    out->partitions = c.parts_seen;
  }
cleanup:
  if (in.release) in.release(&in);
  wctx_dispose(&c, st != DK_OK);
  gen_dispose(&g, c.alloc);
  return st;
}


/* ---- DataFrameWriter ---------------------------------------------------------------------- */

/* An Arrow type as a Delta type (JSON value), as delta-spark maps Spark's types. */
static dk_status delta_type_of(dk_buf *b, const struct ArrowSchema *s, dk_error *err) {
  const char *f = s->format;
  static const struct { const char *fmt, *delta; } prim[] = {
      {"b", "boolean"}, {"c", "byte"},    {"s", "short"},  {"i", "integer"}, {"l", "long"},
      {"f", "float"},   {"g", "double"},  {"u", "string"}, {"U", "string"},  {"vu", "string"},
      {"z", "binary"},  {"Z", "binary"},  {"vz", "binary"}, {"tdD", "date"}, {"tdm", "date"},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(prim); i++)
    if (!strcmp(f, prim[i].fmt)) return dk__buf_printf(b, err, "\"%s\"", prim[i].delta);
  if (!strncmp(f, "w:", 2)) return dk__buf_puts(b, "\"binary\"", err);
  if (!strncmp(f, "d:", 2)) {
    int p = 0, sc = 0;
    sscanf(f + 2, "%d,%d", &p, &sc);
    DK_RETURN_IF(p < 1 || p > 38, DK_UNSUPPORTED, err, "column '%s': decimal precision %d",
                 s->name, p);
    return dk__buf_printf(b, err, "\"decimal(%d,%d)\"", p, sc);
  }
  if (!strncmp(f, "ts", 2) && strlen(f) >= 4 && f[3] == ':')
    return dk__buf_puts(b, f[4] ? "\"timestamp\"" : "\"timestamp_ntz\"", err);
  if (!strcmp(f, "+l") || !strcmp(f, "+L")) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"type\":\"array\",\"elementType\":", err));
    DK_RETURN_NOT_OK(delta_type_of(b, s->children[0], err));
    return dk__buf_printf(b, err, ",\"containsNull\":%s}",
                          (s->children[0]->flags & ARROW_FLAG_NULLABLE) ? "true" : "false");
  }
  if (!strcmp(f, "+m")) {
    const struct ArrowSchema *e = s->children[0];
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"type\":\"map\",\"keyType\":", err));
    DK_RETURN_NOT_OK(delta_type_of(b, e->children[0], err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"valueType\":", err));
    DK_RETURN_NOT_OK(delta_type_of(b, e->children[1], err));
    return dk__buf_printf(b, err, ",\"valueContainsNull\":%s}",
                          (e->children[1]->flags & ARROW_FLAG_NULLABLE) ? "true" : "false");
  }
  if (!strcmp(f, "+s")) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"type\":\"struct\",\"fields\":[", err));
    for (int64_t i = 0; i < s->n_children; i++) {
      const struct ArrowSchema *c = s->children[i];
      if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"name\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_str(b, c->name ? c->name : "", err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"type\":", err));
      DK_RETURN_NOT_OK(delta_type_of(b, c, err));
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"nullable\":%s,\"metadata\":{}}",
                                      (c->flags & ARROW_FLAG_NULLABLE) ? "true" : "false"));
    }
    return dk__buf_puts(b, "]}", err);
  }
  return dk__error_set(err, DK_UNSUPPORTED, "column '%s': Arrow type '%s' has no Delta type",
                       s->name ? s->name : "", f);
}

dk_status dk_write_table(dk_commit_result *out, dk_table *t, struct ArrowArrayStream *data,
                         const dk_write_table_options *opts, dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
    out->committed_version = -1;
  }
  DK_RETURN_IF(!t || !data, DK_INVALID, err, "dk_write_table: no table or data");
  DK_RETURN_IF(opts && opts->version > DK_WRITE_TABLE_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_write_table_options version %u is newer than dk's", opts->version);
  dk_write_table_options o = {.version = DK_WRITE_TABLE_OPTIONS_VERSION};
  if (opts) o = *opts;
  int overwrite = o.mode == DK_WRITE_OVERWRITE;
  DK_RETURN_IF((o.predicate || o.dynamic_partition_overwrite) && !overwrite, DK_INVALID, err,
               "replaceWhere and dynamic partition overwrite need mode overwrite");
  DK_RETURN_IF(o.predicate && o.dynamic_partition_overwrite, DK_INVALID, err,
               "A 'replaceWhere' expression and 'partitionOverwriteMode'='dynamic' cannot both "
               "be set (DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE)");
  DK_RETURN_IF(o.schema_mode == DK_SCHEMA_OVERWRITE &&
                   (!overwrite || o.predicate || o.dynamic_partition_overwrite),
               DK_INVALID, err,
               "schema_mode overwrite needs a full overwrite (not replaceWhere or dynamic "
               "partition overwrite) (DELTA_OVERWRITE_SCHEMA_WITH_DYNAMIC_PARTITION_OVERWRITE)");
  dk_snapshot *s = NULL;
  dk_error e2;
  dk_error_init(&e2);
  dk_status st = dk_snapshot_open(&s, t, NULL, &e2);
  if (st && st != DK_NOT_FOUND) {
    if (err) *err = e2;
    return st;
  }
  st = DK_OK;
  if (s && o.mode == DK_WRITE_IGNORE) {
    dk_snapshot_free(s);
    return DK_OK;
  }
  if (s && o.mode == DK_WRITE_ERROR_IF_EXISTS) {
    dk_snapshot_free(s);
    return dk__error_set(err, DK_INVALID,
                         "Cannot write to already existent path %s without mode append or "
                         "overwrite (DELTA_PATH_EXISTS)",
                         t->root);
  }
  struct ArrowSchema in;
  memset(&in, 0, sizeof in);
  dk_buf params, schema;
  dk__buf_init(&params, t->alloc);
  dk__buf_init(&schema, t->alloc);
  dk_txn *x = NULL;
  dk_expr *pred = NULL;
  int64_t *idx = NULL, n_idx = 0, removed_bytes = 0;
  if (data->get_schema(data, &in) != 0) {
    st = dk__error_set(err, DK_CALLBACK, "the data stream's get_schema failed");
    goto cleanup;
  }
  const char *mode_name = o.mode == DK_WRITE_APPEND      ? "Append"
                          : o.mode == DK_WRITE_OVERWRITE ? "Overwrite"
                          : o.mode == DK_WRITE_IGNORE    ? "Ignore"
                                                         : "ErrorIfExists";
  /* partition columns: given, or the table's */
  const char *const *pcols = o.partition_by;
  size_t npc = o.n_partition_by;
  if (s && !npc && o.schema_mode != DK_SCHEMA_OVERWRITE) { /* overwriteSchema: as given */
    pcols = dk_snapshot_metadata(s)->partition_columns;
    npc = dk_snapshot_metadata(s)->n_partition_columns;
  }
  if (s && o.n_partition_by && o.schema_mode != DK_SCHEMA_OVERWRITE) {
    const dk_metadata *md = dk_snapshot_metadata(s);
    int same = md->n_partition_columns == o.n_partition_by;
    for (size_t i = 0; same && i < o.n_partition_by; i++)
      same = !strcasecmp(md->partition_columns[i], o.partition_by[i]);
    if (!same) {
      st = dk__error_set(err, DK_INVALID,
                         "%s: the partition columns given differ from the table's (change them "
                         "only with a full overwrite and schema_mode overwrite) "
                         "(DELTA_PARTITION_COLUMN_MISMATCH)",
                         t->root);
      goto cleanup;
    }
  }
  DK_CHECK_GOTO(dk__buf_printf(&params, err, "{\"mode\":\"%s\",\"partitionBy\":", mode_name));
  DK_CHECK_GOTO(dk_txn__put_json_list(&params, pcols, npc, err));
  if (o.predicate) {
    const char *one[1] = {o.predicate};
    DK_CHECK_GOTO(dk__buf_puts(&params, ",\"predicate\":", err));
    DK_CHECK_GOTO(dk_txn__put_json_list(&params, one, 1, err));
  }
  if (o.dynamic_partition_overwrite)
    DK_CHECK_GOTO(dk__buf_puts(&params, ",\"isDynamicPartitionOverwrite\":\"true\"", err));
  if (o.schema_mode == DK_SCHEMA_MERGE)
    DK_CHECK_GOTO(dk__buf_puts(&params, ",\"canMergeSchema\":\"true\"", err));
  if (o.schema_mode == DK_SCHEMA_OVERWRITE)
    DK_CHECK_GOTO(dk__buf_puts(&params, ",\"canOverwriteSchema\":\"true\"", err));
  DK_CHECK_GOTO(dk__buf_putc(&params, '}', err));
  dk_txn_options to = o.txn;
  if (!to.version) to.version = DK_TXN_OPTIONS_VERSION;
  to.operation = "WRITE";
  to.operation_parameters = params.data;
  int set_meta = !s || o.schema_mode == DK_SCHEMA_OVERWRITE;
  if (set_meta) {
    DK_CHECK_GOTO(delta_type_of(&schema, &in, err));
  } else if (o.schema_mode == DK_SCHEMA_MERGE) {
    /* mergeSchema: the data's columns the table lacks are appended (nullable) */
    const dk_type *ts = dk_snapshot_schema(s);
    const char *old = dk_snapshot_metadata(s)->schema_string;
    size_t ol = strlen(old);
    int added = 0;
    DK_CHECK_GOTO(dk__buf_append(&schema, old, ol >= 2 ? ol - 2 : ol, err));
    for (int64_t j = 0; j < in.n_children; j++) {
      const struct ArrowSchema *c = in.children[j];
      if (dk_schema_find(ts, c->name)) continue;
      DK_CHECK_GOTO(dk__buf_puts(&schema, ts->n_fields || added ? ",{\"name\":" : "{\"name\":", err));
      DK_CHECK_GOTO(dk_txn__put_str(&schema, c->name, err));
      DK_CHECK_GOTO(dk__buf_puts(&schema, ",\"type\":", err));
      DK_CHECK_GOTO(delta_type_of(&schema, c, err));
      DK_CHECK_GOTO(dk__buf_puts(&schema, ",\"nullable\":true,\"metadata\":{}}", err));
      added++;
    }
    DK_CHECK_GOTO(dk__buf_puts(&schema, "]}", err));
    set_meta = added > 0;
  }
  DK_CHECK_GOTO(s ? dk_txn_begin(&x, s, &to, err) : dk_txn_begin_create(&x, t, &to, err));
  if (set_meta) {
    const dk_metadata *md = s ? dk_snapshot_metadata(s) : NULL;
    const char **conf = NULL;
    size_t nconf = o.n_properties;
    const char *const *cv = o.properties;
    if (md && !o.n_properties) { /* keep the table's properties */
      conf = dk__calloc(t->alloc, 2 * md->n_configuration + 1, sizeof *conf);
      if (!conf) {
        st = dk__error_set(err, DK_NOMEM, "out of memory (write)");
        goto cleanup;
      }
      for (size_t i = 0; i < md->n_configuration; i++) {
        conf[2 * i] = md->config_keys[i];
        conf[2 * i + 1] = md->config_values[i];
      }
      nconf = md->n_configuration;
      cv = conf;
    }
    dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .schema_string = schema.data,
                          .n_partition_columns = npc, .partition_columns = pcols,
                          .n_configuration = nconf, .configuration = cv, .created_time = -1};
    st = dk_txn_set_metadata(x, &m, err);
    dk__free(t->alloc, conf);
    if (st) goto cleanup;
  }
  if (o.app_id) {
    if (dk_txn_app_version(x, o.app_id) >= o.app_version) goto cleanup; /* already written */
    DK_CHECK_GOTO(dk_txn_set_app_version(x, o.app_id, o.app_version, err));
  }
  dk_write_options wo = o.write;
  if (!wo.version) wo.version = DK_WRITE_OPTIONS_VERSION;
  if (overwrite && s && !o.dynamic_partition_overwrite) {
    if (o.predicate) {
      DK_CHECK_GOTO(dk_expr_parse(&pred, o.predicate, err));
      const dk_metadata *md = dk_snapshot_metadata(s);
      if (!dk_expr_references_only(pred, md->partition_columns, md->n_partition_columns)) {
        st = dk__error_set(err, DK_UNSUPPORTED,
                           "replaceWhere '%s' references data columns; dk replaces by partition "
                           "predicates only so far",
                           o.predicate);
        goto cleanup;
      }
      wo.replace_where = pred;
    }
    DK_CHECK_GOTO(dk_txn_read_files(x, pred, &idx, &n_idx, err));
    for (int64_t i = 0; i < n_idx; i++) {
      dk_file_entry f;
      DK_CHECK_GOTO(dk_snapshot_file(&f, s, idx[i], err));
      removed_bytes += f.size;
      DK_CHECK_GOTO(dk_txn_remove_file(x, idx[i], 1, err));
    }
  }
  dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
  DK_CHECK_GOTO(dk_txn_write(&wr, x, data, &wo, err));
  if (overwrite && s && o.dynamic_partition_overwrite && wr.n_partitions > 0) {
    DK_CHECK_GOTO(dk_txn_read_partitions(x, wr.partitions, wr.n_partitions, &idx, &n_idx, err));
    for (int64_t i = 0; i < n_idx; i++) {
      dk_file_entry f;
      DK_CHECK_GOTO(dk_snapshot_file(&f, s, idx[i], err));
      removed_bytes += f.size;
      DK_CHECK_GOTO(dk_txn_remove_file(x, idx[i], 1, err));
    }
  }
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numFiles", wr.files, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numOutputRows", wr.rows, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numOutputBytes", wr.bytes, err));
  if (overwrite && s) {
    DK_CHECK_GOTO(dk_txn_set_metric(x, "numRemovedFiles", n_idx, err));
    DK_CHECK_GOTO(dk_txn_set_metric(x, "numRemovedBytes", removed_bytes, err));
  }
  st = dk_txn_commit(x, out, err);
  x = NULL;
cleanup:
  dk_txn_abort(x);
  dk_expr_free(pred);
  dk_free(idx);
  if (in.release) in.release(&in);
  dk__buf_dispose(&params);
  dk__buf_dispose(&schema);
  dk_snapshot_free(s);
  return st;
}
