/*
** split.c — splits: the scan's files cut into row-group aligned byte ranges and packed next-fit
** into splits (as Spark's FilePartition.getFilePartitions does), each serialized into a
** self-contained byte string (the plan and its tasks) that dk_split_read reads anywhere,
** without the snapshot.
*/
#include <inttypes.h>
#include <stdlib.h>

#include "expr/expr.h"
#include "io/uri.h"
#include "protocol/schema.h"
#include "scan/scan_int.h"

/* ---- planning ------------------------------------------------------------------------------ */

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

/* The split wire format, its versioning and what the reader checks: docs/split-format.md. */
#define SPLIT_MAGIC "DKSPLIT1"
/* or'd into metadata_fields: page CRCs are not verified (dk_scan_options.skip_page_checksums) */
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
  dk_storage *sto;         /* plan.sto */
  int own_sto;             /* sto is a local backend made for this split */
  int64_t n_tasks, next;
  scan_task *tasks;
  int open;
  task_reader fr;
  int64_t remaining;
} split_stream;

static void split_stream_free(split_stream *s) {
  if (s->open) dk_scan__task_close(&s->fr);
  if (s->own_sto) s->sto->free(s->sto);
  dk_scan__plan_dispose(&s->plan);
  dk__pool_release(s->pool);
  dk__arena_dispose(&s->ar);
  dk__free(s->alloc, s);
}

/* A split whose parts do not fit together (a schema that does not parse, columns or a filter
** it lacks, a filter that does not parse or bind) is malformed: DK_CORRUPT, keeping the
** message of the part that failed. */
static dk_status as_corrupt(dk_status st, dk_error *err) {
  if (st == DK_OK || st == DK_NOMEM || st == DK_CORRUPT) return st;
  if (err) {
    err->code = DK_CORRUPT;
    dk__error_prefix(err, "split");
  }
  return DK_CORRUPT;
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
  DK_RETURN_NOT_OK(
      as_corrupt(dk_schema__parse(&schema, &s->ar, schema_text, strlen(schema_text), err), err));
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
  /* every column, partition columns as listed (even twice), or the request; then filter ones */
  n_cols = (n_req < 0 ? (int64_t)schema->n_fields + n_pc : n_req) + n_hidden + 1;
  p->cols = dk__calloc(p->alloc, (size_t)n_cols, sizeof *p->cols);
  DK_RETURN_IF(!p->cols, DK_NOMEM, err, "out of memory (split)");
  DK_RETURN_NOT_OK(as_corrupt(dk_scan__plan_add_columns(p, schema, req, n_req, err), err));
  p->n_out = p->n_cols;
  for (int64_t c = 0; c < n_hidden; c++) {
    const char *name;
    DK_RETURN_NOT_OK(get_str(&r, &name));
    const dk_field *f = name ? dk_schema_find(schema, name) : NULL;
    DK_RETURN_IF(!f, DK_CORRUPT, err, "split: column '%s' is not in the schema", name ? name : "");
    p->cols[p->n_cols].field = f;
    p->cols[p->n_cols++].is_partition = dk_scan__is_partition_col(p, f->name);
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
    DK_RETURN_NOT_OK(as_corrupt(dk_expr_parse(&p->residual, res_text, err), err));
    DK_RETURN_NOT_OK(as_corrupt(dk_scan__add_filter_columns(p, p->residual, schema, 0, err), err));
  }
  DK_RETURN_NOT_OK(dk_scan__plan_build_schema(p, schema, err));
  if (p->residual)
    DK_RETURN_NOT_OK(
        as_corrupt(dk_expr__bind(&p->residual_bound, p->residual, &p->read_schema, p->alloc, err),
                   err));
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
      dk_status st = dk_scan__task_open(&s->fr, &s->plan, NULL, s->sto, t, err);
      if (st) {
        dk_scan__task_close(&s->fr);
        return st;
      }
      s->open = 1;
    }
    dk_status st = dk_scan__task_next(&s->fr, out, &s->remaining, err);
    if (st) {
      dk__error_prefix(err, "%s", s->fr.task->path);
      return st;
    }
    if (out->release) return DK_OK;
    dk_scan__task_close(&s->fr);
    s->open = 0;
  }
}

static void split_stream_release(void *state) { split_stream_free(state); }

dk_status dk_split_read_v2(struct ArrowArrayStream *out, const uint8_t *split, size_t len,
                           const dk_split_read_options *opts, dk_error *err) {
  memset(out, 0, sizeof *out);
  DK_RETURN_IF(opts && opts->version > DK_SPLIT_READ_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_split_read: options version %u is newer than this dk (%d)", opts->version,
               DK_SPLIT_READ_OPTIONS_VERSION);
  const dk_allocator *alloc = opts ? opts->alloc : NULL;
  dk_storage *given = opts ? opts->storage : NULL;
  if (given) DK_RETURN_NOT_OK(dk_io__storage_check(given, "dk_split_read", err));
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
  if (!st && given) {
    s->sto = given;
  } else if (!st) {
    dk__uri u;
    if (dk__uri_split(&u, s->plan.root, strlen(s->plan.root)) && !dk__scheme_is(u.scheme, "file"))
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "dk_split_read: table '%s': no storage backend for scheme '%.*s' (local "
                         "paths are built in; pass one in dk_split_read_options.storage)",
                         s->plan.root, (int)u.scheme.len, u.scheme.ptr);
    if (!st) st = dk_storage_local_new(&s->sto, alloc, err);
    s->own_sto = !st;
  }
  s->plan.sto = s->sto;
  if (st) {
    split_stream_free(s);
    return st;
  }
  static const dk_stream_impl impl = {split_stream_schema, split_stream_next, split_stream_release};
  return dk__stream_init(out, &impl, s, alloc, err);
}

dk_status dk_split_read(struct ArrowArrayStream *out, const uint8_t *split, size_t len,
                        const dk_allocator *alloc, dk_error *err) {
  dk_split_read_options o = {DK_SPLIT_READ_OPTIONS_VERSION, alloc, NULL};
  return dk_split_read_v2(out, split, len, &o, err);
}
