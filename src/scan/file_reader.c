/*
** file_reader.c — reads one scan task (one data file, or the row groups starting inside a
** byte range of it) into batches of the scan's output schema: the file's physical columns
** mapped onto the logical schema (PROTOCOL.md "Column Mapping"), missing columns as nulls,
** widened types ("Type Widening"), partition columns materialised from partitionValues
** ("Partition Value Serialization"), the deletion vector applied ("Deletion Vectors"), the
** residual filter, `_metadata` and row tracking ("Row Tracking"), LIMIT. Which row groups
** and row ranges are read is decided by rowgroup.c. The end of the file holds the reader of
** single files that the rest of the library uses (file_reader.h).
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "codec/parquet/open.h"
#include "io/uri.h"
#include "log/paths.h"
#include "scan/file_reader.h"
#include "codec/json/json.h"
#include "expr/expr.h"
#include "expr/skip.h"
#include "scan/scan_int.h"
#include "snapshot/access.h"

void dk_scan__task_close(task_reader *r) {
  if (!r->plan) return; /* never opened */
  const dk_allocator *a = r->plan->alloc;
  if (r->has_stream && r->stream.release) r->stream.release(&r->stream);
  r->has_stream = 0;
  dk__schema_release(&r->read_schema);
  dk_parquet_file_free(r->pf);
  dk_dv__free(r->dv);
  if (!r->keep_borrowed) dk_dv__free(r->keep_dv);
  dk__free(a, r->full_path);
  dk__free(a, r->uri);
  dk__free(a, r->col_src);
  dk__free(a, r->pscalars);
  dk__free(a, r->idx);
  dk__free(a, r->keep);
  dk__free(a, r->mask);
  dk__free(a, r->ranges);
  dk_pq__ahead_free(r->ahead); /* after the stream that used it */
  memset(r, 0, sizeof *r);
}

static dk_status load_dv(dk_dv **out, const dk_dv_descriptor *dv, dk_storage *sto,
                         const scan_plan *plan, const dk_allocator *a, dk_error *err) {
  dk_dv_desc d;
  int64_t off = dv->offset;
  const char *pth = dv->path_or_inline_dv;
  char stype = dv->storage_type;
  DK_RETURN_NOT_OK(dk_dv__descriptor_init(&d, (dk_str){&stype, 1}, (dk_str){pth, strlen(pth)},
                                         off >= 0 ? &off : NULL, dv->size_in_bytes,
                                         dv->cardinality, err));
  dk__root root;
  dk_io__root_init(&root, plan->root, sto);
  root.confine = plan->confine;
  return dk_dv__load_in(out, &root, &d, a, err);
}

dk_status dk_scan__task_open(task_reader *r, const scan_plan *plan, dk_scan_stats *stats,
                             dk_storage *sto, const scan_task *t, dk_error *err) {
  memset(r, 0, sizeof *r);
  r->plan = plan;
  r->stats = stats;
  r->sto = sto;
  r->task = t;
  const dk_allocator *a = plan->alloc;
  r->row_id_src = r->row_cv_src = -1;
  {
    /* the file's key on the backend (log/paths.h), and its URI for _metadata */
    dk__root root;
    dk_io__root_init(&root, plan->root, sto);
    root.confine = plan->confine;
    dk__loc loc;
    dk_buf b;
    dk__buf_init(&b, a);
    dk_status st = dk_log__data_key(&loc, &b, &root, t->path, err);
    if (!st) r->full_path = dk__buf_detach(&b);
    if (!st && !r->full_path) st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    if (!st && (plan->meta & (DK_META_FILE_PATH | DK_META_FILE_NAME))) {
      st = dk_io__key_uri(&b, r->full_path, err);
      if (!st) r->uri = dk__buf_detach(&b);
      if (!st && !r->uri) st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    }
    dk__buf_dispose(&b);
    if (st) {
      dk__error_prefix(err, "scan: data file");
      return st;
    }
  }
  dk_pq__open_opts po = {.alloc = a, .size = t->size > 0 ? t->size : 0,
                         .skip_page_crc = plan->skip_page_crc,
                         .map = 1 /* local files: views of an mmap, no copies */};
  DK_RETURN_NOT_OK(dk_pq__open_storage(&r->pf, sto, r->full_path, &po, err));
  r->n_rg = dk_parquet_num_row_groups(r->pf);
  if (t->dv) DK_RETURN_NOT_OK(load_dv(&r->dv, t->dv, sto, plan, a, err));
  if (t->keep_dv) DK_RETURN_NOT_OK(load_dv(&r->keep_dv, t->keep_dv, sto, plan, a, err));
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

/* The span [lo, hi) of a row group's rows that keep_dv selects and dv does not delete
** (relative to the row group); lo == hi when there is none. */
typedef struct keep_span {
  const dk_dv *dv;
  int64_t first, end, lo, hi;
} keep_span;

static dk_status keep_span_row(int64_t row, void *payload) {
  keep_span *k = payload;
  if (row < k->first || row >= k->end || (k->dv && dk_dv__contains(k->dv, row))) return DK_OK;
  if (k->lo == k->hi) k->lo = row - k->first;
  k->hi = row - k->first + 1;
  return DK_OK;
}

/* Opens the stream of the next row group in the task's range; *done = 1 when none is left. */
/* The row group open_next_rg opens next, when that is certain without reading anything: no
** residual filter (row-group and page skipping look at the group's own statistics, and a
** read-ahead must not fetch bytes the reader then skips), no DV difference, no page ranges
** left; -1 otherwise. The same tests as open_next_rg's, in the same order. */
static int next_rg_known(const task_reader *r) {
  const scan_task *t = r->task;
  if (r->plan->residual_bound || r->keep_dv || r->range_pos < r->n_ranges) return -1;
  for (int rg = r->rg; rg < r->n_rg; rg++) {
    dk_parquet_row_group_info info;
    dk_error e;
    dk_error_init(&e);
    if (dk_parquet_row_group(&info, r->pf, rg, &e)) return -1;
    if (t->range_end > 0 && (info.start < t->range_start || info.start >= t->range_end)) continue;
    if (info.num_rows == 0) continue;
    if (r->dv && dk_dv__range_cardinality(r->dv, info.first_row, info.num_rows) ==
                     (uint64_t)info.num_rows)
      continue;
    return rg;
  }
  return -1;
}

dk_status dk_scan__task_read_ahead(task_reader *r, dk__exec *ex, int64_t max, dk_error *err) {
  return dk_pq__ahead_new(&r->ahead, ex, max, r->plan->alloc, err);
}

void dk_scan__task_arm(task_reader *r) {
  r->armed = 1;
  if (r->in_rg && r->has_stream && r->cur_whole) dk_pq__ahead_start(r->ahead, r->pf, next_rg_known(r));
}

static dk_status open_next_rg(task_reader *r, int *done, dk_error *err);

dk_status dk_scan__task_prepare(task_reader *r, dk_error *err) {
  int done;
  r->want = -1;
  r->prefetch_now = 1;
  dk_status st = open_next_rg(r, &done, err);
  r->prefetch_now = 0;
  return st;
}

static dk_status open_next_rg(task_reader *r, int *done, dk_error *err) {
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
      if (r->stats) dk_scan__stat_add(&r->stats->row_groups_total, 1);
      r->rg_first_row = r->next_row = info.first_row;
      if (info.num_rows == 0) continue;
      if (r->dv && dk_dv__range_cardinality(r->dv, info.first_row, info.num_rows) ==
                       (uint64_t)info.num_rows) {
        continue;
      }
      if (r->keep_dv && dk_dv__range_cardinality(r->keep_dv, info.first_row, info.num_rows) == 0)
        continue;
      /* columns to read: those of the file that the output needs */
      DK_RETURN_NOT_OK(dk_parquet_schema(&fs, r->pf, err));
      if (plan->residual_bound && dk_scan__rg_can_skip(r, rg, info.num_rows, &fs)) {
        if (r->stats) dk_scan__stat_add(&r->stats->row_groups_skipped, 1);
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
      dk_status rst = dk_scan__page_ranges(r, rg, info.num_rows, &fs, names, nn, &rr, &nr, &pskip, err);
      if (rst || nr >= 0) {
        dk__free(plan->alloc, names);
        dk__arena_dispose(&par);
        dk__schema_release(&fs);
        DK_RETURN_NOT_OK(rst);
        if (r->stats) dk_scan__stat_add(&r->stats->pages_skipped, pskip);
        dk__free(plan->alloc, r->ranges);
        r->ranges = rr;
        r->n_ranges = nr;
        r->range_pos = 0;
        r->range_rg = rg;
        continue; /* open the first range left (none: every row was skipped) */
      }
    }
    if (!is_range && r->keep_dv && nn > 0) {
      /* a DV difference (change data feed): read only the span of pages holding its rows */
      keep_span k = {r->dv, info.first_row, info.first_row + info.num_rows, 0, 0};
      (void)dk_dv__foreach(r->keep_dv, keep_span_row, &k);
      bool span = k.lo > 0 || k.hi < info.num_rows;
      if (span) {
        /* a span read starts each column at a page: it needs the file's page index (without
         * one the whole group is read and the selection keeps the rows) */
        dk_parquet_page_index *pi = NULL;
        dk_error pe;
        dk_error_init(&pe);
        dk_status ps = dk_parquet_page_index_read(&pi, r->pf, rg, 0, &pe);
        dk_parquet_page_index_free(pi);
        if (ps == DK_NOT_FOUND) span = false;
        else if (ps) {
          dk__free(plan->alloc, names);
          dk__arena_dispose(&par);
          dk__schema_release(&fs);
          *err = pe;
          return ps;
        }
      }
      if (span) {
        int64_t *rr = dk__malloc(plan->alloc, 2 * sizeof *rr);
        dk__free(plan->alloc, names);
        dk__arena_dispose(&par);
        dk__schema_release(&fs);
        DK_RETURN_IF(!rr, DK_NOMEM, err, "out of memory (scan)");
        rr[0] = k.lo;
        rr[1] = k.hi;
        dk__free(plan->alloc, r->ranges);
        r->ranges = rr;
        r->n_ranges = k.lo < k.hi ? 1 : 0;
        r->range_pos = 0;
        r->range_rg = rg;
        continue; /* open that span (none: no row is kept) */
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
    if (r->want > 0 && !r->dv && !r->keep_dv && !plan->residual_bound) ro.batch_size = DK_MIN(ro.batch_size, r->want);
    dk_status st = DK_OK;
    if (nn == 0) {
      /* nothing to decode: rows only */
      st = DK_OK;
    } else {
      st = dk_pq__read_ex(&r->stream, r->pf, &ro, r->ahead, r->prefetch_now, err);
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
    if (r->has_stream && r->read_schema.n_children != (int64_t)ntop)
      /* two columns of the table schema map to one column of the file (duplicate names) */
      return dk__error_set(err, DK_CORRUPT, "%s: %" PRId64 " columns of the file for %zu columns "
                           "of the table schema", r->full_path, r->read_schema.n_children, ntop);
    r->rg_end_row = info.first_row + (is_range ? re : info.num_rows);
    r->in_rg = 1;
    r->cur_whole = !is_range;
    if (r->armed && r->has_stream && !is_range)
      dk_pq__ahead_start(r->ahead, r->pf, next_rg_known(r));
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
static dk_status metadata_array(struct ArrowArray *out, task_reader *r, const struct ArrowArray *b,
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
          v = t->size;
          if (t->range_end > 0 &&
              __builtin_sub_overflow(DK_MIN(t->range_end, t->size), t->range_start, &v))
            st = dk__error_set(err, DK_CORRUPT, "%s: size %" PRId64 " out of range", t->path,
                               t->size);
          break;
        case DK_META_FILE_MODIFICATION_TIME:
          if (__builtin_mul_overflow(t->mtime, 1000, &v))
            st = dk__error_set(err, DK_CORRUPT, "%s: modificationTime %" PRId64 " out of range",
                               t->path, t->mtime);
          break;
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
            if (__builtin_add_overflow(t->base_row_id, rows[i], &v))
              st = dk__error_set(err, DK_CORRUPT, "%s: baseRowId %" PRId64 " out of range",
                                 t->path, t->base_row_id);
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
      if (!st) st = dk__arr_append_int(c, v, err);
    }
  }
  if (!st) {
    dk__arr_advance(&sb, m, 0);
    st = dk__arr_finish(&sb, out, err);
  }
  dk__arr_reset(&sb);
  return st;
}

static dk_status ensure_scratch(task_reader *r, int64_t n, dk_error *err) {
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
dk_status dk_scan__task_next(task_reader *r, struct ArrowArray *out, int64_t *remaining,
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
        /* storage failures and memory stay what they are; anything else was the file's fault */
        dk_status why = dk__stream_status(&r->stream, rc);
        return dk__error_set(err, why == DK_IO || why == DK_NOMEM ? why : DK_CORRUPT, "%s",
                             m ? m : "read error");
      }
      if (!b.release) {
        r->in_rg = 0;
        continue;
      }
      if (b.n_children != r->read_schema.n_children) {
        dk__array_release(&b);
        return dk__error_set(err, DK_CORRUPT, "%s: a batch of %" PRId64 " columns for %" PRId64,
                             r->full_path, b.n_children, r->read_schema.n_children);
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
    if (r->stats) dk_scan__stat_add(&r->stats->rows_decoded, n);
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
    if (st == DK_OK && r->keep_dv) {
      /* only the rows keep_dv deletes: keep = NOT (mask after keep_dv cleared its rows) */
      memset(r->mask, 1, (size_t)n);
      dk_dv__fill_selection(r->keep_dv, first, n, r->mask);
      for (int64_t k = 0; k < n; k++) r->keep[k] = (uint8_t)!r->mask[k];
      have_keep = 1;
    }
    if (st == DK_OK && r->dv && dk_dv__range_cardinality(r->dv, first, n) > 0) {
      if (!have_keep) memset(r->keep, 1, (size_t)n);
      uint64_t del = dk_dv__fill_selection(r->dv, first, n, r->keep);
      if (r->stats) dk_scan__stat_add(&r->stats->rows_deleted, (int64_t)del);
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
      view.release = dk__array_release_borrowed;
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
        if (r->stats) dk_scan__stat_add(&r->stats->rows_filtered, before - after);
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
    if (r->rows_out) {
      /* row-index mode: the selected rows' physical indexes instead of a batch */
      if (st == DK_OK) st = dk__buf_reserve(r->rows_out, (size_t)m * sizeof(int64_t), err);
      if (st == DK_OK) {
        int64_t *o = (int64_t *)(r->rows_out->data + r->rows_out->len);
        for (int64_t k = 0; k < m; k++) o[k] = first + r->idx[k];
        r->rows_out->len += (size_t)m * sizeof(int64_t);
      }
      for (int64_t k = 0; k < nc; k++) dk__array_release(&full[k]);
      dk__free(a, full);
      dk__free(a, ch);
      dk__array_release(&b);
      DK_RETURN_NOT_OK(st);
      if (*remaining > 0) *remaining -= m;
      if (r->stats) dk_scan__stat_add(&r->stats->rows_returned, m);
      continue;
    }
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
    if (st) /* the columns were not moved into out */
      for (int64_t k = 0; k < nch; k++) dk__array_release(&ch[k]);
    dk__free(a, ch);
    DK_RETURN_NOT_OK(st);
    if (*remaining > 0) *remaining -= m;
    if (r->stats) dk_scan__stat_add(&r->stats->rows_returned, m);
    return DK_OK;
  }
}

void dk_scan__task_from_entry(scan_task *t, const dk_file_entry *f, const char *const *pvals) {
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

/* ---- single files for the library (file_reader.h) ------------------------------------------ */

struct dk_scan__file_reader {
  const dk_allocator *alloc;
  dk_snapshot *snap;
  dk_pool *pool; /* plan.alloc */
  dk_storage *sto; /* plan.sto: the table's backend (borrowed; snap keeps the table) */
  scan_plan plan;
  size_t n_part; /* partition columns of the plan (output and filter-only) */
  /* with extra columns: the table's fields then the extras, and the per-file-text columns
  ** (the partition columns then the constant extras) */
  dk_arena ar;
  dk_type schema;
  const char **pcols;
  size_t n_table_pcols;
  /* partition pruning: the predicate's partition-only conjuncts bound to pschema (the plan's
  ** partition columns, in plan order), or NULL */
  dk_expr *pbound;
  struct ArrowSchema pschema;
};

struct dk_scan__file {
  const dk_scan__file_reader *r;
  scan_task task;
  task_reader tr;
  const char **pvals;
  int64_t remaining;
  dk_buf rows;
};

void dk_scan__file_reader_free(dk_scan__file_reader *r) {
  if (!r) return;
  dk_expr_free(r->pbound);
  dk__schema_release(&r->pschema);
  dk_scan__plan_dispose(&r->plan);
  dk__arena_dispose(&r->ar);
  dk__pool_release(r->pool);
  dk_snapshot_free(r->snap);
  dk__free(r->alloc, r);
}

static size_t n_constant_extras(const dk_scan__file_reader_options *o) {
  size_t n = 0;
  for (size_t i = 0; o->extra_constant && i < o->n_extra_columns; i++) n += o->extra_constant[i];
  return n;
}

/* The table schema with the extra columns appended, and the per-file-text columns. */
static dk_status extend_schema(dk_scan__file_reader *r, const dk_snapshot *snap,
                               const dk_scan__file_reader_options *o, dk_error *err) {
  const dk_type *t = dk_snapshot_schema(snap);
  const dk_metadata *md = dk_snapshot_metadata(snap);
  size_t nf = t->n_fields + o->n_extra_columns, np = md->n_partition_columns;
  dk_field *f = dk__arena_alloc(&r->ar, (nf ? nf : 1) * sizeof *f, err);
  r->pcols = dk__arena_alloc(&r->ar, (np + o->n_extra_columns + 1) * sizeof *r->pcols, err);
  if (!f || !r->pcols) return DK_NOMEM;
  if (t->n_fields) memcpy(f, t->fields, t->n_fields * sizeof *f);
  for (size_t i = 0; i < np; i++) r->pcols[i] = md->partition_columns[i];
  r->n_table_pcols = np;
  for (size_t i = 0, k = np; i < o->n_extra_columns; i++) {
    DK_RETURN_IF(dk_schema_find(t, o->extra_columns[i].name), DK_INVALID, err,
                 "file reader: extra column '%s' is a column of the table",
                 o->extra_columns[i].name);
    f[t->n_fields + i] = o->extra_columns[i];
    if (o->extra_constant && o->extra_constant[i]) r->pcols[k++] = o->extra_columns[i].name;
  }
  r->schema = *t;
  r->schema.fields = f;
  r->schema.n_fields = nf;
  return DK_OK;
}

/* The predicate's partition-only conjuncts, bound to the plan's partition columns. */
static dk_status bind_partition_filter(dk_scan__file_reader *r, const dk_expr *pred,
                                       dk_error *err) {
  const scan_plan *p = &r->plan;
  dk_expr *ponly = NULL, *rest = NULL;
  DK_RETURN_NOT_OK(dk_expr_split(&ponly, &rest, pred, p->pcols, p->n_pcols, err));
  dk_expr_free(rest);
  if (!ponly) return DK_OK;
  dk_atype sty = dk__atype_make(DK_AT_STRUCT);
  dk_status st = dk__schema_init_a(&r->pschema, &sty, "", 0, (int64_t)r->n_part, p->alloc, err);
  for (size_t c = 0, k = 0; !st && c < p->n_cols; c++) {
    if (!p->cols[c].is_partition) continue;
    dk__schema_release(r->pschema.children[k]);
    st = dk__schema_copy_a(r->pschema.children[k++], p->read_schema.children[c], p->alloc, err);
  }
  if (!st) st = dk_expr__bind(&r->pbound, ponly, &r->pschema, p->alloc, err);
  dk_expr_free(ponly);
  return st;
}

dk_status dk_scan__file_reader_new(dk_scan__file_reader **out, dk_snapshot *snap,
                                   const dk_scan__file_reader_options *o, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(o->metadata_fields & ~(unsigned)DK_META_ALL, DK_INVALID, err,
               "scan: unknown _metadata field bits 0x%x", o->metadata_fields);
  const dk_allocator *alloc = dk_snapshot__allocator(snap);
  dk_scan__file_reader *r = dk__calloc(alloc, 1, sizeof *r);
  DK_RETURN_IF(!r, DK_NOMEM, err, "out of memory (file reader)");
  r->alloc = alloc;
  r->snap = dk_snapshot_ref(snap);
  dk__arena_init(&r->ar, alloc, 0);
  dk_status st = dk__pool_new(&r->pool, alloc, SCAN_POOL_CACHE, err);
  scan_plan *p = &r->plan;
  if (!st) st = extend_schema(r, snap, o, err);
  if (!st)
    st = dk_scan__plan_init_ex(p, dk__pool_allocator(r->pool), snap, &r->schema, r->pcols,
                               r->n_table_pcols + n_constant_extras(o), o->columns,
                               o->columns ? (int64_t)o->n_columns : -1, o->predicate,
                               o->metadata_fields, err);
  if (!st && o->batch_size > 0) p->batch_size = o->batch_size;
  if (!st && o->predicate)
    st = dk_expr__bind(&p->residual_bound, o->predicate, &p->read_schema, p->alloc, err);
  if (!st) r->sto = p->sto;
  for (size_t c = 0; !st && c < p->n_cols; c++) r->n_part += (size_t)p->cols[c].is_partition;
  if (!st && o->predicate && r->n_part) st = bind_partition_filter(r, o->predicate, err);
  if (st) {
    dk_scan__file_reader_free(r);
    return st;
  }
  *out = r;
  return DK_OK;
}

dk_status dk_scan__file_reader_schema(struct ArrowSchema *out, const dk_scan__file_reader *r,
                                      dk_error *err) {
  return dk__schema_copy(out, &r->plan.out_schema, err);
}

void dk_scan__file_close(dk_scan__file *f) {
  if (!f) return;
  const dk_allocator *a = f->r->plan.alloc;
  dk_scan__task_close(&f->tr);
  dk__buf_dispose(&f->rows);
  dk__free(a, f->pvals);
  dk__free(a, f);
}

/* The partition value texts of e for the plan's partition columns, in plan order. */
static void partition_texts(const char **out, const dk_scan__file_reader *r,
                            const dk_file_entry *e, const char *const *constants) {
  const scan_plan *p = &r->plan;
  for (size_t c = 0, k = 0; c < p->n_cols; c++) {
    if (!p->cols[c].is_partition) continue;
    const char *name = p->cols[c].field->name, *v = NULL;
    size_t j = r->n_table_pcols;
    while (j < p->n_pcols && strcasecmp(p->pcols[j], name) != 0) j++;
    if (j < p->n_pcols) {
      v = constants ? constants[j - r->n_table_pcols] : NULL;
    } else {
      int is_null = 0;
      v = dk_file_partition_value(r->snap, e, name, &is_null);
      if (is_null) v = NULL;
    }
    out[k++] = v;
  }
}

dk_status dk_scan__file_prunes(bool *out, const dk_scan__file_reader *r, const dk_file_entry *e,
                               const char *const *constants, dk_error *err) {
  *out = false;
  const scan_plan *p = &r->plan;
  if (r->pbound) {
    const char **pv = dk__calloc(p->alloc, r->n_part, sizeof *pv);
    DK_RETURN_IF(!pv, DK_NOMEM, err, "out of memory (file reader)");
    partition_texts(pv, r, e, constants);
    struct ArrowArray pb;
    dk_status st = dk_partition_batch(&pb, &r->pschema, pv, 1, err);
    uint8_t keep = 1;
    if (!st) {
      st = dk_expr_eval_filter(&keep, NULL, r->pbound, &r->pschema, &pb, err);
      dk__array_release(&pb);
    }
    dk__free(p->alloc, pv);
    if (st) {
      dk__error_prefix(err, "%s: partition values", e->path);
      return st;
    }
    if (!keep) {
      *out = true;
      return DK_OK;
    }
  }
  if (p->residual_bound && e->stats && dk_expr__has_columns(p->residual_bound)) {
    dk_arena ar;
    dk__arena_init(&ar, p->alloc, 0);
    dk_json_value *jv = NULL;
    if (dk__json_parse(&jv, &ar, e->stats, strlen(e->stats), NULL) == DK_OK) {
      dk_file_stats fs = {.root = jv};
      *out = dk_expr__skip_eval(p->residual_bound, &fs) == DK_SKIP_CAN_SKIP;
    }
    dk__arena_dispose(&ar); /* stats that do not parse are ignored, as a scan ignores them */
  }
  return DK_OK;
}

dk_status dk_scan__file_open(dk_scan__file **out, const dk_scan__file_reader *r,
                             const dk_file_entry *e, dk_error *err) {
  return dk_scan__file_open_selected(out, r, e, NULL, NULL, err);
}

dk_status dk_scan__file_open_selected(dk_scan__file **out, const dk_scan__file_reader *r,
                                      const dk_file_entry *e, const dk_dv_descriptor *keep_dv,
                                      const char *const *constants, dk_error *err) {
  *out = NULL;
  const scan_plan *p = &r->plan;
  dk_scan__file *f = dk__calloc(p->alloc, 1, sizeof *f);
  DK_RETURN_IF(!f, DK_NOMEM, err, "out of memory (file reader)");
  f->r = r;
  f->remaining = -1;
  dk__buf_init(&f->rows, p->alloc);
  f->pvals = dk__calloc(p->alloc, r->n_part ? r->n_part : 1, sizeof *f->pvals);
  if (!f->pvals) {
    dk_scan__file_close(f);
    return dk__error_set(err, DK_NOMEM, "out of memory (file reader)");
  }
  partition_texts(f->pvals, r, e, constants);
  dk_scan__task_from_entry(&f->task, e, f->pvals);
  f->task.keep_dv = keep_dv;
  dk_status st = dk_scan__task_open(&f->tr, p, NULL, r->sto, &f->task, err);
  if (st) {
    dk_scan__file_close(f);
    return st;
  }
  *out = f;
  return DK_OK;
}

dk_status dk_scan__file_open_rows(dk_scan__file **out, const dk_scan__file_reader *r,
                                  const dk_file_entry *e, const dk_dv *rows, dk_error *err) {
  DK_RETURN_NOT_OK(dk_scan__file_open_selected(out, r, e, NULL, NULL, err));
  /* the task is open (its footer and DV read); no row group is chosen yet */
  (*out)->tr.keep_dv = (dk_dv *)rows;
  (*out)->tr.keep_borrowed = 1;
  return DK_OK;
}

dk_status dk_scan__file_next(struct ArrowArray *out, dk_scan__file *f, dk_error *err) {
  dk_status st = dk_scan__task_next(&f->tr, out, &f->remaining, err);
  if (st) dk__error_prefix(err, "%s", f->task.path);
  return st;
}

dk_status dk_scan__file_rows(const int64_t **rows, int64_t *n, dk_scan__file *f, dk_error *err) {
  *rows = NULL;
  *n = 0;
  f->rows.len = 0;
  f->tr.rows_out = &f->rows;
  struct ArrowArray none;
  dk_status st = dk_scan__task_next(&f->tr, &none, &f->remaining, err);
  f->tr.rows_out = NULL;
  if (st) {
    dk__error_prefix(err, "%s", f->task.path);
    return st;
  }
  *rows = (const int64_t *)f->rows.data;
  *n = (int64_t)(f->rows.len / sizeof(int64_t));
  return DK_OK;
}

int64_t dk_scan__file_num_rows(const dk_scan__file *f) { return dk_parquet_num_rows(f->tr.pf); }
