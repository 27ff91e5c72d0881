/*
** write/writer.c — the Parquet file writer of dk/parquet.h (apache/parquet-format README
** "File Format": "PAR1", row groups of column chunks, the page index (PageIndex.md: every
** ColumnIndex, then every OffsetIndex, between the last row group and the footer), the
** FileMetaData, its length and "PAR1").
**
** Batches are cut into slices of at most SLICE_ROWS rows; each slice is shredded and encoded
** column by column (in parallel when threads > 1: columns are independent, handed out longest
** first by their cost in the previous slice). A row group is flushed once its buffered bytes
** reach the target or its rows the limit: its chunks are finished (in parallel) and then
** written to the sink — with threads > 1 by a background task on the executor while the next
** row group is encoded, so memory is bounded by two row groups, never by the file. Bytes go
** through the byte sink (io/sink.h), so the file appears under its name only at close.
*/
#include <stdio.h>
#include <time.h>

#include "arrow/array.h"
#include "codec/parquet/write/pqw.h"
#include "codec/parquet/write/writer.h"
#include "util/exec.h"

#define SLICE_ROWS 65536

struct dk_parquet_writer {
  const dk_allocator *alloc;
  dk_storage *storage;
  int own_storage;
  char *path;
  dk__sink sink;
  int sink_open;
  pqw_schema schema;
  pqw_opts o;
  pqw_col *cols;
  pqw_par *par;
  pqw_rg_meta *rgs;
  int n_rgs, cap_rgs;
  int64_t rg_rows, num_rows;
  int64_t rg_bytes_target, rg_rows_limit;
  int state;               /* 0 writing, 1 closed, 2 failed */
  dk_arena arena;          /* created_by, key/value copies */
  char *created_by;
  char **kv_keys, **kv_values;
  size_t n_kv;
  dk_parquet_write_result result;
  /* the slice being encoded (shared with the column tasks) */
  const struct ArrowArray *job_batch;
  int64_t job_row0, job_n;
  int job_kind;            /* 0 shred, 1 finish */
  pqw_chunk_meta *job_meta;
  dk_status *job_st;
  dk_error *job_err;
  int64_t *job_ns;         /* threads > 1: nanoseconds of each column's last task */
  int *job_order;          /* threads > 1: columns by job_ns, longest first */
  /* the row group on its way to the sink */
  pqw_chunk_out *outs;     /* each column's taken chunk */
  int emit_rg;             /* its index in rgs */
  int emit_busy;           /* submitted to the executor, not joined */
  dk__task emit_task;
  dk_status emit_st;
  dk_error emit_err;
};

static dk_status fail(dk_parquet_writer *w, dk_status st) {
  if (st != DK_OK) w->state = 2;
  return st;
}

/* ---- validation of a batch against the schema ------------------------------------------- */

static dk_status bad_batch(dk_error *err, const pqw_field *f, const char *why) {
  return dk__error_set(err, DK_INVALID, "Parquet writer: batch does not match the schema at column '%s': %s",
                       f ? f->name : "(batch)", why);
}

/* Checks arr (holding at least `need` slots from its offset) against field f. */
static dk_status check_array(const pqw_field *f, const struct ArrowArray *a, int64_t need,
                             dk_error *err) {
  if (!a || !a->release) return bad_batch(err, f, "released or missing child array");
  if (a->length < 0 || a->offset < 0 || a->length < need)
    return bad_batch(err, f, "child array shorter than its parent");
  int64_t slots = a->offset + a->length;
  if (a->dictionary) return bad_batch(err, f, "dictionary-encoded array");
  int nb, nc = 0;
  switch (f->kind) {
    case PQW_STRUCT: nb = 1, nc = f->n_children; break;
    case PQW_LIST: case PQW_MAP: nb = 2, nc = 1; break;
    default:
      switch (f->conv) {
        case PQW_CV_BIN32: case PQW_CV_BIN64: nb = 3; break;
        case PQW_CV_VIEW: nb = -1; break;
        default: nb = 2; break;
      }
  }
  if (nb >= 0 && a->n_buffers != nb) return bad_batch(err, f, "wrong number of buffers");
  if (nb < 0 && a->n_buffers < 3) return bad_batch(err, f, "string/binary view without its buffers");
  if (a->n_children != nc) return bad_batch(err, f, "wrong number of children");
  if (nc && !a->children) return bad_batch(err, f, "no children");
  if (a->n_buffers > 0 && !a->buffers) return bad_batch(err, f, "no buffers");
  if (a->null_count != 0 && a->n_buffers > 0 && !a->buffers[0] && a->null_count > 0)
    return bad_batch(err, f, "nulls without a validity bitmap");
  if (slots == 0) {
    for (int i = 0; i < nc; i++) DK_RETURN_NOT_OK(check_array(f->children[i], a->children[i], 0, err));
    return DK_OK;
  }
  if (f->kind != PQW_STRUCT && nb != 0 && !a->buffers[1]) return bad_batch(err, f, "missing values buffer");
  if (f->kind == PQW_STRUCT) {
    for (int i = 0; i < nc; i++) DK_RETURN_NOT_OK(check_array(f->children[i], a->children[i], slots, err));
    return DK_OK;
  }
  int wide = f->format[1] == 'L' || f->conv == PQW_CV_BIN64;
  if (f->kind == PQW_LIST || f->kind == PQW_MAP || f->conv == PQW_CV_BIN32 || f->conv == PQW_CV_BIN64) {
    /* offsets of the array's own slots must be non-decreasing (values under 2 GiB each) */
    int64_t hi, bad = 0;
    if (wide) {
      const int64_t *o = a->buffers[1];
      if (o[a->offset] < 0) return bad_batch(err, f, "negative offsets");
      for (int64_t i = a->offset + 1; i <= slots; i++)
        bad |= (o[i] < o[i - 1]) | (f->kind == PQW_PRIM && (uint64_t)o[i] - (uint64_t)o[i - 1] > INT32_MAX);
      hi = o[slots];
    } else { /* 32-bit offsets: a value cannot exceed 2 GiB */
      const int32_t *o = a->buffers[1];
      if (o[a->offset] < 0) return bad_batch(err, f, "negative offsets");
      for (int64_t i = a->offset + 1; i <= slots; i++) bad |= o[i] < o[i - 1];
      hi = o[slots];
    }
    if (bad) return bad_batch(err, f, "decreasing offsets or a value over 2 GiB");
    if (f->kind != PQW_PRIM) return check_array(f->children[0], a->children[0], hi, err);
    if (hi > 0 && !a->buffers[2]) return bad_batch(err, f, "missing data buffer");
    return DK_OK;
  }
  if (f->conv == PQW_CV_VIEW) {
    int64_t nvar = a->n_buffers - 3;
    const int64_t *sizes = a->buffers[a->n_buffers - 1];
    const uint8_t *v = a->buffers[1];
    for (int64_t i = a->offset; i < slots; i++) {
      if (a->null_count != 0 && a->buffers[0] && !dk__bit_get(a->buffers[0], i)) continue;
      int32_t n, b, off;
      memcpy(&n, v + 16 * i, 4);
      if (n < 0) return bad_batch(err, f, "negative view length");
      if (n <= 12) continue;
      memcpy(&b, v + 16 * i + 8, 4);
      memcpy(&off, v + 16 * i + 12, 4);
      if (b < 0 || b >= nvar || off < 0 || !a->buffers[2 + b] ||
          (sizes && (int64_t)off + n > sizes[b]))
        return bad_batch(err, f, "view outside its data buffer");
    }
  }
  return DK_OK;
}

static dk_status check_batch(const dk_parquet_writer *w, const struct ArrowArray *b,
                             dk_error *err) {
  if (!b || !b->release) return dk__error_set(err, DK_INVALID, "Parquet writer: released batch");
  const pqw_field *root = w->schema.root;
  if (b->n_children != root->n_children || (b->n_children && !b->children))
    return dk__error_set(err, DK_INVALID,
                         "Parquet writer: batch has %lld columns, the schema %d",
                         (long long)b->n_children, root->n_children);
  if (b->length < 0 || b->offset < 0) return bad_batch(err, NULL, "negative length or offset");
  if (b->null_count > 0 && b->n_buffers > 0 && b->buffers && b->buffers[0]) {
    for (int64_t i = 0; i < b->length; i++)
      if (!dk__bit_get(b->buffers[0], b->offset + i))
        return dk__error_set(err, DK_INVALID, "Parquet writer: batch row %lld is null", (long long)i);
  }
  /* a column of one leaf is checked by its own encoding task (in parallel, before it reads
  ** the column); columns of several leaves here, as their leaves' tasks share the arrays */
  for (int i = 0; i < root->n_children; i++) {
    if (!b->children[i]) return bad_batch(err, root->children[i], "missing child array");
    if (root->children[i]->n_leaves != 1)
      DK_RETURN_NOT_OK(check_array(root->children[i], b->children[i], b->offset + b->length, err));
  }
  return DK_OK;
}

/* ---- open -------------------------------------------------------------------------------- */

static int codec_of(dk_parquet_codec c) {
  switch (c) {
    case DK_PARQUET_SNAPPY: return DK_PQ_CODEC_SNAPPY;
    case DK_PARQUET_UNCOMPRESSED: return DK_PQ_CODEC_UNCOMPRESSED;
    case DK_PARQUET_ZSTD: return DK_PQ_CODEC_ZSTD;
    case DK_PARQUET_GZIP: return DK_PQ_CODEC_GZIP;
    case DK_PARQUET_LZ4_RAW: return DK_PQ_CODEC_LZ4_RAW;
    default: return -1;
  }
}

dk_status dk_parquet_writer_open(dk_parquet_writer **out, dk_storage *storage,
                                 const char *path, const struct ArrowSchema *schema,
                                 const dk_parquet_write_options *opts, dk_error *err) {
  DK_RETURN_IF(!out || !path, DK_INVALID, err, "Parquet writer: no output or path");
  *out = NULL;
  dk_parquet_write_options def;
  memset(&def, 0, sizeof def);
  def.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  if (!opts) opts = &def;
  DK_RETURN_IF(opts->version < 1 || opts->version > DK_PARQUET_WRITE_OPTIONS_VERSION, DK_INVALID, err,
               "Parquet writer: options version %u is not supported (1..%d)", opts->version,
               DK_PARQUET_WRITE_OPTIONS_VERSION);
  int codec = codec_of(opts->codec);
  DK_RETURN_IF(codec < 0, DK_INVALID, err, "Parquet writer: unknown codec %d", (int)opts->codec);
  DK_RETURN_IF(opts->data_page_version < 0 || opts->data_page_version > 2, DK_INVALID, err,
               "Parquet writer: data_page_version must be 1 or 2, not %d", opts->data_page_version);
  DK_RETURN_IF(opts->row_group_bytes < 0 || opts->row_group_rows < 0 || opts->page_bytes < 0 ||
                   opts->page_rows < 0 || opts->dictionary_bytes < 0 || opts->threads < 0,
               DK_INVALID, err, "Parquet writer: negative size option");
  DK_RETURN_IF(opts->page_rows > INT32_MAX || opts->page_bytes > ((int64_t)1 << 30), DK_INVALID, err,
               "Parquet writer: pages are limited to 2^31 rows and 1 GiB");
  const dk_allocator *alloc = opts->alloc;
  dk_parquet_writer *w = dk__calloc(alloc, 1, sizeof *w);
  if (!w) return dk__error_set(err, DK_NOMEM, "out of memory");
  w->alloc = alloc;
  dk__arena_init(&w->arena, alloc, 4096);
  dk_status st = DK_OK;
  w->o.codec = codec;
  w->o.level = opts->compression_level;
  w->o.page_bytes = opts->page_bytes ? opts->page_bytes : (int64_t)1 << 20;
  w->o.page_rows = opts->page_rows ? opts->page_rows : 20000;
  w->o.dict_bytes = opts->dictionary_bytes ? opts->dictionary_bytes : (int64_t)1 << 20;
  w->o.dictionary = !opts->no_dictionary;
  w->o.page_v2 = opts->data_page_version == 2;
  w->o.statistics = !opts->no_statistics;
  w->o.page_index = !opts->no_page_index;
  w->o.max_stat_bytes = 4096;
  w->o.index_trunc = 64;
  w->rg_bytes_target = opts->row_group_bytes ? opts->row_group_bytes : (int64_t)128 << 20;
  w->rg_rows_limit = opts->row_group_rows;
  DK_CHECK_GOTO(dk_pqw__schema_build(&w->schema, schema, alloc, err));
  w->path = dk__strdup(alloc, path);
  char cb[64];
  snprintf(cb, sizeof cb, "dk version %d.%d.%d", DK_VERSION_MAJOR, DK_VERSION_MINOR, DK_VERSION_PATCH);
  const char *created = opts->created_by ? opts->created_by : cb;
  w->created_by = dk__arena_strndup(&w->arena, created, strlen(created), err);
  if (!w->path || !w->created_by) {
    st = dk__error_set(err, DK_NOMEM, "out of memory");
    goto cleanup;
  }
  if (opts->n_metadata) {
    DK_RETURN_IF(!opts->metadata_keys || !opts->metadata_values, DK_INVALID, err,
                 "Parquet writer: n_metadata without keys/values");
    w->kv_keys = dk__arena_alloc(&w->arena, sizeof(char *) * opts->n_metadata, err);
    w->kv_values = dk__arena_alloc(&w->arena, sizeof(char *) * opts->n_metadata, err);
    if (!w->kv_keys || !w->kv_values) {
      st = DK_NOMEM;
      goto cleanup;
    }
    for (size_t i = 0; i < opts->n_metadata; i++) {
      const char *k = opts->metadata_keys[i], *v = opts->metadata_values[i];
      if (!k) {
        st = dk__error_set(err, DK_INVALID, "Parquet writer: metadata key %zu is NULL", i);
        goto cleanup;
      }
      w->kv_keys[i] = dk__arena_strndup(&w->arena, k, strlen(k), err);
      w->kv_values[i] = v ? dk__arena_strndup(&w->arena, v, strlen(v), err) : NULL;
      if (!w->kv_keys[i] || (v && !w->kv_values[i])) {
        st = DK_NOMEM;
        goto cleanup;
      }
    }
    w->n_kv = opts->n_metadata;
  }
  w->cols = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->cols);
  w->job_st = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->job_st);
  w->job_err = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->job_err);
  w->job_meta = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->job_meta);
  w->job_ns = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->job_ns);
  w->job_order = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->job_order);
  w->outs = dk__calloc(alloc, (size_t)w->schema.n_leaves, sizeof *w->outs);
  if (!w->cols || !w->job_st || !w->job_err || !w->job_meta || !w->job_ns || !w->job_order ||
      !w->outs) {
    st = dk__error_set(err, DK_NOMEM, "out of memory");
    goto cleanup;
  }
  for (int i = 0; i < w->schema.n_leaves; i++) {
    w->job_order[i] = i;
    dk_pqw__chunk_out_init(&w->outs[i], alloc);
    DK_CHECK_GOTO(dk_pqw__col_init(&w->cols[i], w->schema.leaves[i], &w->o, alloc, err));
  }
  if (opts->threads > 1) DK_CHECK_GOTO(dk_pqw__par_new(&w->par, opts->threads, alloc, err));
  w->result.version = DK_PARQUET_WRITE_RESULT_VERSION;
  if (!storage) {
    DK_CHECK_GOTO(dk_storage_local_new(&w->storage, alloc, err));
    w->own_storage = 1;
  } else {
    w->storage = storage;
  }
  DK_CHECK_GOTO(dk_io__sink_open(&w->sink, w->storage, path, alloc, err));
  w->sink_open = 1;
  DK_CHECK_GOTO(dk_io__sink_write(&w->sink, "PAR1", 4, err));
  *out = w;
  return DK_OK;
cleanup:
  dk_parquet_writer_free(w);
  return st;
}

/* ---- row groups -------------------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void task(void *ctx, int k) {
  dk_parquet_writer *w = ctx;
  int i = w->job_order[k];
  pqw_col *c = &w->cols[i];
  dk_error *e = &w->job_err[i];
  if (w->job_st[i] != DK_OK) return;
  int64_t t0 = w->par ? now_ns() : 0;
  if (w->job_kind == 0) {
    const pqw_field *top = c->path[0];
    const struct ArrowArray *col = w->job_batch->children[top->child_index];
    if (w->job_row0 == 0 && top->n_leaves == 1) {
      w->job_st[i] = check_array(top, col, w->job_batch->offset + w->job_batch->length, e);
      if (w->job_st[i] != DK_OK) return;
    }
    w->job_st[i] = dk_pqw__shred(c, col, w->job_batch->offset + w->job_row0, w->job_n,
                                 w->schema.fields, e);
  } else {
    w->job_st[i] = dk_pqw__col_finish(c, &w->job_meta[i], e);
  }
  if (w->par) w->job_ns[i] = now_ns() - t0;
}

static dk_status run_columns(dk_parquet_writer *w, int kind, dk_error *err) {
  int n = w->schema.n_leaves;
  for (int i = 0; i < n; i++) {
    w->job_st[i] = DK_OK;
    dk_error_init(&w->job_err[i]);
  }
  if (w->par) { /* longest first (the last slice's times), so no thread is left with the
                ** longest column at the end */
    int *o = w->job_order;
    for (int i = 1; i < n; i++)
      for (int j = i; j > 0 && w->job_ns[o[j]] > w->job_ns[o[j - 1]]; j--) {
        int t = o[j];
        o[j] = o[j - 1];
        o[j - 1] = t;
      }
  }
  w->job_kind = kind;
  dk_pqw__par_run(w->par, n, task, w);
  for (int i = 0; i < n; i++)
    if (w->job_st[i] != DK_OK) {
      if (err && !err->code) *err = w->job_err[i];
      return w->job_st[i];
    }
  return DK_OK;
}

/* Writes the taken chunks of row group emit_rg to the sink (a task when threads > 1). */
static void emit_run(void *arg) {
  dk_parquet_writer *w = arg;
  pqw_rg_meta *rg = &w->rgs[w->emit_rg];
  rg->file_offset = w->sink.pos;
  dk_error_init(&w->emit_err);
  w->emit_st = DK_OK;
  for (int i = 0; i < w->schema.n_leaves && w->emit_st == DK_OK; i++)
    w->emit_st = dk_pqw__chunk_emit(&w->outs[i], &rg->chunks[i], w->o.page_index, &w->sink,
                                    &w->emit_err);
}

/* Waits for the row group on its way to the sink; its failure is the writer's. */
static dk_status emit_join(dk_parquet_writer *w, dk_error *err) {
  if (!w->emit_busy) return DK_OK;
  dk__exec_join(dk_pqw__par_exec(w->par), &w->emit_task);
  w->emit_busy = 0;
  if (w->emit_st != DK_OK && err && !err->code) *err = w->emit_err;
  return w->emit_st;
}

static dk_status flush_row_group(dk_parquet_writer *w, dk_error *err) {
  if (w->rg_rows == 0) return DK_OK;
  DK_RETURN_NOT_OK(run_columns(w, 1, err));
  DK_RETURN_NOT_OK(emit_join(w, err)); /* the previous row group is out: its buffers are free */
  if (w->n_rgs == w->cap_rgs) {
    int cap = w->cap_rgs ? w->cap_rgs * 2 : 8;
    pqw_rg_meta *r = dk__realloc(w->alloc, w->rgs, sizeof *r * (size_t)cap);
    if (!r) return dk__error_set(err, DK_NOMEM, "out of memory");
    w->rgs = r;
    w->cap_rgs = cap;
  }
  int n = w->schema.n_leaves;
  pqw_rg_meta *rg = &w->rgs[w->n_rgs];
  memset(rg, 0, sizeof *rg);
  rg->chunks = dk__calloc(w->alloc, (size_t)n, sizeof *rg->chunks);
  if (!rg->chunks) return dk__error_set(err, DK_NOMEM, "out of memory");
  w->n_rgs++;
  rg->num_rows = w->rg_rows;
  for (int i = 0; i < n; i++) {
    rg->chunks[i] = w->job_meta[i];
    memset(&w->job_meta[i], 0, sizeof w->job_meta[i]);
    rg->total_byte_size += rg->chunks[i].total_uncompressed;
    rg->total_compressed += rg->chunks[i].total_compressed;
    dk_pqw__col_take(&w->cols[i], &w->outs[i]);
  }
  w->num_rows += w->rg_rows;
  w->rg_rows = 0;
  w->emit_rg = w->n_rgs - 1;
  if (dk__exec_threads(dk_pqw__par_exec(w->par)) > 1) {
    dk__exec_submit(dk_pqw__par_exec(w->par), &w->emit_task, emit_run, w);
    w->emit_busy = 1;
    return DK_OK;
  }
  emit_run(w);
  if (w->emit_st != DK_OK && err && !err->code) *err = w->emit_err;
  for (int i = 0; i < n; i++) dk_pqw__col_give_back(&w->cols[i], &w->outs[i]);
  return w->emit_st;
}

static int64_t buffered(const dk_parquet_writer *w) {
  int64_t b = 0;
  for (int i = 0; i < w->schema.n_leaves; i++) b += dk_pqw__col_buffered(&w->cols[i]);
  return b;
}

static dk_status check_state(const dk_parquet_writer *w, dk_error *err) {
  DK_RETURN_IF(!w, DK_INVALID, err, "Parquet writer: NULL writer");
  DK_RETURN_IF(w->state == 1, DK_INVALID, err, "Parquet writer: %s is already closed", w->path);
  DK_RETURN_IF(w->state == 2, DK_INVALID, err, "Parquet writer: %s failed earlier; only free is allowed",
               w->path);
  return DK_OK;
}

dk_status dk_parquet_writer_write(dk_parquet_writer *w, const struct ArrowArray *batch,
                                  dk_error *err) {
  DK_RETURN_NOT_OK(check_state(w, err));
  dk_status st = check_batch(w, batch, err);
  if (st != DK_OK) return fail(w, st);
  int64_t rg_bytes = w->rg_bytes_target, rg_rows = w->rg_rows_limit;
  int64_t pos = 0;
  while (pos < batch->length) {
    int64_t n = DK_MIN(batch->length - pos, (int64_t)SLICE_ROWS);
    if (rg_rows) n = DK_MIN(n, rg_rows - w->rg_rows);
    w->job_batch = batch;
    w->job_row0 = pos;
    w->job_n = n;
    st = run_columns(w, 0, err);
    if (st != DK_OK) {
      dk__error_prefix(err, "writing %s", w->path);
      return fail(w, st);
    }
    w->rg_rows += n;
    pos += n;
    if ((rg_rows && w->rg_rows >= rg_rows) || buffered(w) >= rg_bytes) {
      st = flush_row_group(w, err);
      if (st != DK_OK) return fail(w, st);
    }
  }
  return DK_OK;
}

static int same_schema(const struct ArrowSchema *a, const pqw_field *f) {
  if (!a || !a->format || strcmp(a->format, f->format)) return 0;
  if (f->depth >= 0 && strcmp(a->name ? a->name : "", f->name)) return 0;
  if (a->n_children != f->n_children) return 0;
  for (int i = 0; i < f->n_children; i++)
    if (!same_schema(a->children[i], f->children[i])) return 0;
  return 1;
}

dk_status dk_parquet_writer_write_stream(dk_parquet_writer *w, struct ArrowArrayStream *stream,
                                         dk_error *err) {
  DK_RETURN_NOT_OK(check_state(w, err));
  DK_RETURN_IF(!stream || !stream->release, DK_INVALID, err, "Parquet writer: released stream");
  struct ArrowSchema sc;
  memset(&sc, 0, sizeof sc);
  int rc = stream->get_schema(stream, &sc);
  if (rc != 0) {
    const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
    return fail(w, dk__error_set(err, DK_CALLBACK, "Parquet writer: the stream's get_schema failed (%d): %s",
                                 rc, m ? m : "no message"));
  }
  int same = same_schema(&sc, w->schema.root);
  if (sc.release) sc.release(&sc);
  if (!same)
    return fail(w, dk__error_set(err, DK_INVALID,
                                 "Parquet writer: the stream's schema differs from the writer's"));
  for (;;) {
    struct ArrowArray b;
    memset(&b, 0, sizeof b);
    rc = stream->get_next(stream, &b);
    if (rc != 0) {
      const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
      return fail(w, dk__error_set(err, DK_CALLBACK, "Parquet writer: the stream failed (%d): %s", rc,
                                   m ? m : "no message"));
    }
    if (!b.release) return DK_OK;
    dk_status st = dk_parquet_writer_write(w, &b, err);
    b.release(&b);
    if (st != DK_OK) return st;
  }
}

/* ---- close ------------------------------------------------------------------------------- */

static dk_status finish_file(dk_parquet_writer *w, dk_error *err) {
  DK_RETURN_NOT_OK(flush_row_group(w, err));
  DK_RETURN_NOT_OK(emit_join(w, err));
  int n = w->schema.n_leaves;
  /* page index: every ColumnIndex, then every OffsetIndex */
  for (int pass = 0; pass < 2; pass++)
    for (int r = 0; r < w->n_rgs; r++)
      for (int i = 0; i < n; i++) {
        pqw_chunk_meta *m = &w->rgs[r].chunks[i];
        dk_buf *b = pass == 0 ? &m->column_index : &m->offset_index;
        if (!b->len) continue;
        if (pass == 0) m->ci_offset = w->sink.pos; else m->oi_offset = w->sink.pos;
        DK_RETURN_NOT_OK(dk_io__sink_write(&w->sink, b->data, b->len, err));
      }
  dk_buf footer;
  dk__buf_init(&footer, w->alloc);
  pqw_footer_in in = {&w->schema, &w->o, w->rgs, w->n_rgs, w->num_rows, w->created_by,
                      (const char *const *)w->kv_keys, (const char *const *)w->kv_values, w->n_kv};
  dk_status st = dk_pqw__footer(&footer, &in, err);
  if (st == DK_OK && footer.len > UINT32_MAX) st = dk__error_set(err, DK_UNSUPPORTED, "footer larger than 4 GiB");
  if (st == DK_OK) st = dk_io__sink_write(&w->sink, footer.data, footer.len, err);
  uint8_t tail[8];
  uint32_t len = (uint32_t)footer.len;
  memcpy(tail, &len, 4);
  memcpy(tail + 4, "PAR1", 4);
  if (st == DK_OK) st = dk_io__sink_write(&w->sink, tail, 8, err);
  dk__buf_dispose(&footer);
  return st;
}

dk_status dk_parquet_writer_close(dk_parquet_writer *w, dk_parquet_write_result *out,
                                  dk_error *err) {
  DK_RETURN_NOT_OK(check_state(w, err));
  if (out)
    DK_RETURN_IF(out->version < 1, DK_INVALID, err, "Parquet writer: result version %u", out->version);
  dk_status st = finish_file(w, err);
  int64_t size = w->sink.pos;
  if (st == DK_OK) {
    w->sink_open = 0;
    st = dk_io__sink_commit(&w->sink, 0, err);
  }
  if (st != DK_OK) {
    dk__error_prefix(err, "writing %s", w->path);
    return fail(w, st);
  }
  w->state = 1;
  w->result.num_rows = w->num_rows;
  w->result.file_size = size;
  w->result.num_row_groups = w->n_rgs;
  if (out) {
    unsigned v = out->version;
    *out = w->result;
    out->version = v;
  }
  return DK_OK;
}

void dk_parquet_writer_free(dk_parquet_writer *w) {
  if (!w) return;
  const dk_allocator *a = w->alloc;
  if (w->emit_busy) dk__exec_join(dk_pqw__par_exec(w->par), &w->emit_task);
  if (w->sink_open) dk_io__sink_abort(&w->sink);
  dk_pqw__par_free(w->par);
  for (int r = 0; r < w->n_rgs; r++) {
    for (int i = 0; i < w->schema.n_leaves; i++) {
      pqw_chunk_meta *m = &w->rgs[r].chunks[i];
      dk__buf_dispose(&m->min);
      dk__buf_dispose(&m->max);
      dk__buf_dispose(&m->column_index);
      dk__buf_dispose(&m->offset_index);
    }
    dk__free(a, w->rgs[r].chunks);
  }
  dk__free(a, w->rgs);
  if (w->cols)
    for (int i = 0; i < w->schema.n_leaves; i++)
      if (w->cols[i].leaf) dk_pqw__col_dispose(&w->cols[i]);
  if (w->job_meta)
    for (int i = 0; i < w->schema.n_leaves; i++) {
      dk__buf_dispose(&w->job_meta[i].min);
      dk__buf_dispose(&w->job_meta[i].max);
      dk__buf_dispose(&w->job_meta[i].column_index);
      dk__buf_dispose(&w->job_meta[i].offset_index);
    }
  if (w->outs)
    for (int i = 0; i < w->schema.n_leaves; i++) dk_pqw__chunk_out_dispose(&w->outs[i]);
  dk__free(a, w->outs);
  dk__free(a, w->job_ns);
  dk__free(a, w->job_order);
  dk__free(a, w->cols);
  dk__free(a, w->job_st);
  dk__free(a, w->job_err);
  dk__free(a, w->job_meta);
  dk_pqw__schema_dispose(&w->schema);
  if (w->own_storage && w->storage) w->storage->free(w->storage);
  dk__arena_dispose(&w->arena);
  dk__free(a, w->path);
  dk__free(a, w);
}

/* ---- statistics -------------------------------------------------------------------------- */

int dk_parquet_writer_num_fields(const dk_parquet_writer *w) { return w ? w->schema.n_fields : 0; }

dk_status dk_parquet_writer_field_stats(dk_parquet_field_stats *out, const dk_parquet_writer *w,
                                        int i, dk_error *err) {
  DK_RETURN_IF(!w || !out || i < 0 || i >= w->schema.n_fields, DK_INVALID, err,
               "Parquet writer: no field %d", i);
  const pqw_field *f = w->schema.fields[i];
  memset(out, 0, sizeof *out);
  out->name = f->name;
  out->format = f->format;
  out->parent = f->parent && f->parent->depth >= 0 ? f->parent->index : -1;
  out->n_children = f->n_children;
  out->in_list = f->under_repeated;
  out->is_variant = f->is_variant;
  out->null_rows = f->under_repeated ? -1 : f->null_rows;
  if (f->leaf >= 0) {
    const pqw_col *c = &w->cols[f->leaf];
    out->is_leaf = 1;
    out->physical_type = f->ptype;
    out->scale = f->scale;
    out->null_count = c->f_nulls;
    out->value_count = c->f_values;
    out->nan_count = c->f_nans;
    out->has_min_max = c->f_min.set;
    if (c->f_min.set) {
      out->min = c->f_min.v.data;
      out->min_len = c->f_min.v.len;
      out->max = c->f_max.v.data;
      out->max_len = c->f_max.v.len;
    }
  }
  return DK_OK;
}

int dk_pqw__writer_closed(const dk_parquet_writer *w) { return w && w->state == 1; }
int64_t dk_pqw__writer_num_rows(const dk_parquet_writer *w) { return w ? w->num_rows : 0; }
