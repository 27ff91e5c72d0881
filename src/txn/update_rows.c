/*
** update_rows.c — UPDATE of rows an engine chose and computed (SQLite's xUpdate): the rows
** named by (data file, physical row index) go into deletion vectors (dk_txn_delete_rows) and
** the engine's new rows are written, as dk_txn_update writes an UPDATE's rows
** (delta-spark commands/UpdateCommand.scala with DMLWithDeletionVectorsHelper; PROTOCOL.md
** "Row Tracking", "Change Data Files"; write-path.md §1.8):
**   - with row tracking each new row replacing an old one carries the old row's row id in
**     the materialized row id column and a NULL row commit version (so this commit's); a
**     new row (INSERT) gets both fresh (NULL);
**   - with the change data feed on, the commit carries every change as change data: the
**     old rows as update_preimage (replaced) or delete (only gone), the new rows as
**     update_postimage or insert. The old rows (and their row ids) are read back from their
**     files: only those rows (dk_scan__file_open_rows).
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "scan/scan_int.h"
#include "txn/dml_int.h"

typedef struct urow {
  int64_t file, row; /* snapshot file index, physical row index */
  int64_t pos;       /* index in the caller's lists */
} urow;

static int urow_cmp(const void *a, const void *b) {
  const urow *x = a, *y = b;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

typedef struct batches {
  struct ArrowArray *v;
  size_t n, cap, next;
  const dk_allocator *alloc;
} batches;

static dk_status batches_push(batches *q, struct ArrowArray *a, dk_error *err) {
  if (q->n == q->cap) {
    size_t nc = q->cap ? 2 * q->cap : 8;
    struct ArrowArray *p = dk__realloc(q->alloc, q->v, nc * sizeof *p);
    if (!p) {
      a->release(a);
      return dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
    }
    q->v = p;
    q->cap = nc;
  }
  dk__array_move(a, &q->v[q->n++]);
  return DK_OK;
}

static void batches_dispose(batches *q) {
  for (size_t i = q->next; i < q->n; i++) dk__array_release(&q->v[i]);
  dk__free(q->alloc, q->v);
  memset(q, 0, sizeof *q);
}

/* A stream handing out q's batches (moved out) with schema sch. */
typedef struct qstream {
  batches *q;
  const struct ArrowSchema *sch;
  dk_error err;
} qstream;

static int q_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  qstream *u = s->private_data;
  return dk__schema_copy(out, u->sch, &u->err) ? EIO : 0;
}

static int q_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  qstream *u = s->private_data;
  memset(out, 0, sizeof *out);
  if (u->q->next < u->q->n) dk__array_move(&u->q->v[u->q->next++], out);
  return 0;
}

static const char *q_error(struct ArrowArrayStream *s) {
  return ((qstream *)s->private_data)->err.message;
}

static void q_release(struct ArrowArrayStream *s) { s->release = NULL; }

/* A struct of n rows over the first nt children of b (borrowed: b must outlive it, unless
** they are moved) and the arrays extra[0..ne) (taken). */
static dk_status with_columns(struct ArrowArray *out, struct ArrowArray *b, int64_t nt,
                              struct ArrowArray *extra, int64_t ne, const dk_allocator *al,
                              dk_error *err) {
  struct ArrowArray *kids = dk__calloc(al, (size_t)(nt + ne ? nt + ne : 1), sizeof *kids);
  if (!kids) {
    for (int64_t k = 0; k < ne; k++) dk__array_release(&extra[k]);
    return dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
  }
  for (int64_t c = 0; c < nt; c++) dk__array_move(b->children[c], &kids[c]);
  for (int64_t k = 0; k < ne; k++) dk__array_move(&extra[k], &kids[nt + k]);
  static const void *const no_buffers[1] = {NULL};
  dk_status st = dk__array_wrap(out, b->length, 0, 0, 1, no_buffers, nt + ne, kids, NULL, NULL,
                                al, err);
  dk__free(al, kids);
  return st;
}

/* A string column of n rows: type[i] for row i. */
static dk_status change_types(struct ArrowArray *out, const char *const *type, int64_t n,
                              const dk_allocator *al, dk_error *err) {
  dk_arr a;
  dk_atype str = dk__atype_make(DK_AT_STRING);
  DK_RETURN_NOT_OK(dk__arr_init(&a, &str, al, err));
  dk_status st = DK_OK;
  for (int64_t r = 0; r < n && !st; r++)
    st = dk__arr_append_bytes(&a, type[r], (int64_t)strlen(type[r]), err);
  if (!st) st = dk__arr_finish(&a, out, err);
  dk__arr_reset(&a);
  return st;
}

/* An INT64 column: v[pos[r]] for row r (pos[r] < 0 or v NULL: NULL). */
static dk_status ids_column(struct ArrowArray *out, const int64_t *v, const int64_t *pos,
                            int64_t n, const dk_allocator *al, dk_error *err) {
  dk_arr a;
  dk_atype i64 = dk__atype_make(DK_AT_INT64);
  DK_RETURN_NOT_OK(dk__arr_init(&a, &i64, al, err));
  dk_status st = DK_OK;
  for (int64_t r = 0; r < n && !st; r++)
    st = v && pos[r] >= 0 ? dk__arr_append_int(&a, v[pos[r]], err) : dk__arr_append_null(&a, err);
  if (!st) st = dk__arr_finish(&a, out, err);
  dk__arr_reset(&a);
  return st;
}

typedef struct uctx {
  dk_txn *x;
  const dk_allocator *alloc;
  int tracked, cdf;
  const char *rt[2];
  size_t n;
  urow *ur;                  /* the rows that go, sorted by file and row */
  uint8_t *replaced;         /* per caller position: a new row replaces it */
  int64_t *rid;              /* per caller position: its row id (row tracking) */
  struct ArrowSchema tbl;    /* the table's logical columns */
  struct ArrowSchema cdc;    /* tbl + _change_type */
  struct ArrowSchema wout;   /* tbl + the materialized row tracking columns */
  batches cq;                /* change data */
} uctx;

/* Reads the rows that go from their files: their row ids, and (change data feed) their
** values as update_preimage / delete rows. */
static dk_status read_old(uctx *u, dk_error *err) {
  const dk_allocator *al = u->alloc;
  dk_scan__file_reader_options ro = {
      .metadata_fields = u->tracked ? DK_META_ROW_ID : 0};
  dk_scan__file_reader *rd = NULL;
  DK_RETURN_NOT_OK(dk_scan__file_reader_new(&rd, u->x->snap, &ro, err));
  int64_t nt = u->tbl.n_children;
  int64_t *rows = dk__malloc(al, (u->n ? u->n : 1) * sizeof *rows);
  const char **types = dk__malloc(al, (u->n ? u->n : 1) * sizeof *types);
  dk_status st = rows && types ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
  for (size_t i = 0; i < u->n && !st;) {
    size_t j = i;
    while (j < u->n && u->ur[j].file == u->ur[i].file) j++;
    for (size_t k = i; k < j; k++) rows[k - i] = u->ur[k].row;
    dk_dv_builder *bld = NULL;
    dk_dv *sel = NULL;
    dk_scan__file *f = NULL;
    dk_file_entry fe;
    dk_buf bm;
    dk__buf_init(&bm, al);
    st = dk_snapshot_file(&fe, u->x->snap, u->ur[i].file, err);
    if (!st) st = dk_dv__builder_new(&bld, al, err);
    if (!st) st = dk_dv__builder_add(bld, rows, j - i, err);
    if (!st) st = dk_dv__builder_serialize(&bm, bld, err);
    if (!st) st = dk_dv__decode_bitmap(&sel, (const uint8_t *)bm.data, bm.len, al, err);
    if (!st) st = dk_scan__file_open_rows(&f, rd, &fe, sel, err);
    size_t k = i; /* the next row of ur the file's rows come in order of */
    while (!st) {
      struct ArrowArray b;
      st = dk_scan__file_next(&b, f, err);
      if (st || !b.release) break;
      if (k + (size_t)b.length > j) st = dk__error_set(err, DK_INVALID, "UPDATE: rows mismatch");
      const struct ArrowArray *meta = u->tracked ? b.children[b.n_children - 1] : NULL;
      for (int64_t r = 0; meta && r < b.length && !st; r++) {
        const struct ArrowArray *id = meta->children[0];
        int64_t at = id->offset + meta->offset + b.offset + r;
        u->rid[u->ur[k + (size_t)r].pos] = ((const int64_t *)id->buffers[1])[at];
      }
      for (int64_t r = 0; r < b.length && !st; r++)
        types[r] = u->replaced[u->ur[k + (size_t)r].pos] ? "update_preimage" : "delete";
      k += (size_t)b.length;
      struct ArrowArray ct, out;
      if (!st && u->cdf) {
        st = change_types(&ct, types, b.length, al, err);
        if (!st) st = with_columns(&out, &b, nt, &ct, 1, al, err);
        if (!st) st = batches_push(&u->cq, &out, err);
      }
      b.release(&b);
    }
    if (!st && k != j)
      st = dk__error_set(err, DK_INVALID,
                         "UPDATE: %zu of the rows named in data file '%s' are not in it (or "
                         "deleted already)", j - k, fe.path);
    dk_scan__file_close(f);
    dk_dv__free(sel);
    dk_dv__builder_free(bld);
    dk__buf_dispose(&bm);
    i = j;
  }
  dk__free(al, rows);
  dk__free(al, (void *)types);
  dk_scan__file_reader_free(rd);
  return st;
}

/* The schemas: the table's columns, + _change_type, + the row tracking columns. */
static dk_status schemas(uctx *u, dk_error *err) {
  DK_RETURN_NOT_OK(dk_snapshot_arrow_schema(&u->tbl, u->x->snap, 0, err));
  int64_t nt = u->tbl.n_children;
  dk_atype sty = dk__atype_make(DK_AT_STRUCT), str = dk__atype_make(DK_AT_STRING);
  dk_atype i64 = dk__atype_make(DK_AT_INT64);
  DK_RETURN_NOT_OK(dk__schema_init(&u->cdc, &sty, "", 0, nt + 1, err));
  DK_RETURN_NOT_OK(dk__schema_init(&u->wout, &sty, "", 0, nt + (u->tracked ? 2 : 0), err));
  for (int64_t c = 0; c < nt; c++) {
    DK_RETURN_NOT_OK(dk__schema_copy(u->cdc.children[c], u->tbl.children[c], err));
    DK_RETURN_NOT_OK(dk__schema_copy(u->wout.children[c], u->tbl.children[c], err));
  }
  DK_RETURN_NOT_OK(dk__schema_init(u->cdc.children[nt], &str, "_change_type",
                                   ARROW_FLAG_NULLABLE, 0, err));
  for (int k = 0; k < 2 && u->tracked; k++)
    DK_RETURN_NOT_OK(dk__schema_init(u->wout.children[nt + k], &i64, u->rt[k],
                                     ARROW_FLAG_NULLABLE, 0, err));
  return DK_OK;
}

/* The new rows: each batch written with the row tracking columns (row ids of the rows they
** replace) and, for the change data feed, queued as update_postimage / insert rows. */
static dk_status new_rows(uctx *u, batches *w, struct ArrowArrayStream *src,
                          const int64_t *replaces, size_t n_new, dk_error *err) {
  const dk_allocator *al = u->alloc;
  int64_t nt = u->tbl.n_children;
  struct ArrowSchema ss;
  memset(&ss, 0, sizeof ss);
  if (src->get_schema(src, &ss) != 0) {
    const char *m = src->get_last_error ? src->get_last_error(src) : NULL;
    return dk__error_set(err, DK_CALLBACK, "UPDATE: the new rows' get_schema failed: %s",
                         m ? m : "");
  }
  bool ok = ss.format && !strcmp(ss.format, "+s") && ss.n_children == nt;
  dk__schema_release(&ss);
  DK_RETURN_IF(!ok, DK_INVALID, err,
               "UPDATE: the new rows are not batches of the table's %lld columns",
               (long long)nt);
  size_t seen = 0;
  const char **types = NULL;
  dk_status st = DK_OK;
  for (;;) {
    struct ArrowArray b;
    memset(&b, 0, sizeof b);
    if (src->get_next(src, &b) != 0) {
      const char *m = src->get_last_error ? src->get_last_error(src) : NULL;
      st = dk__error_set(err, DK_CALLBACK, "UPDATE: the new rows' stream failed: %s", m ? m : "");
      break;
    }
    if (!b.release) break;
    int64_t m = b.length;
    if (seen + (size_t)m > n_new) {
      b.release(&b);
      st = dk__error_set(err, DK_INVALID, "UPDATE: more new rows than the %zu announced", n_new);
      break;
    }
    const int64_t *rep = replaces + seen;
    seen += (size_t)m;
    if (u->cdf) {
      const char **t2 = dk__realloc(al, (void *)types, (size_t)(m ? m : 1) * sizeof *types);
      if (!t2) {
        b.release(&b);
        st = dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
        break;
      }
      types = t2;
      for (int64_t r = 0; r < m; r++) types[r] = rep[r] >= 0 ? "update_postimage" : "insert";
      /* the change data row shares the batch's buffers: a copy of the columns */
      struct ArrowArray cp, ct, out;
      int64_t *ident = dk__malloc(al, (size_t)(m ? m : 1) * sizeof *ident);
      st = ident ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
      for (int64_t r = 0; r < m && !st; r++) ident[r] = r;
      if (!st) st = dk_scan__take(&cp, &u->tbl, &b, ident, m, al, err);
      dk__free(al, ident);
      if (!st) {
        st = change_types(&ct, types, m, al, err);
        if (!st) st = with_columns(&out, &cp, nt, &ct, 1, al, err);
        cp.release(&cp);
      }
      if (!st) st = batches_push(&u->cq, &out, err);
    }
    struct ArrowArray ex[2], out;
    memset(ex, 0, sizeof ex);
    if (!st && u->tracked) {
      st = ids_column(&ex[0], u->rid, rep, m, al, err);
      if (!st) st = ids_column(&ex[1], NULL, rep, m, al, err);
    }
    if (!st) st = with_columns(&out, &b, nt, ex, u->tracked ? 2 : 0, al, err);
    else dk__array_release(&ex[0]);
    b.release(&b);
    if (!st) st = batches_push(w, &out, err);
    if (st) break;
  }
  dk__free(al, (void *)types);
  if (!st && seen != n_new)
    st = dk__error_set(err, DK_INVALID, "UPDATE: %zu new rows for the %zu announced", seen, n_new);
  return st;
}

dk_status dk_txn_update_rows(dk_dml_metrics *out, dk_txn *x, const char *const *uris,
                             const int64_t *rows, size_t n, struct ArrowArrayStream *src,
                             const int64_t *replaces, size_t n_new, const dk_dml_options *o,
                             dk_error *err) {
  DK_RETURN_IF(!x || !x->snap, DK_INVALID, err, "UPDATE needs a transaction on an existing table");
  DK_RETURN_IF(n_new && (!src || !replaces), DK_INVALID, err, "UPDATE: no new rows given");
  dk_dml_metrics own = {.version = DK_DML_METRICS_VERSION}, *m = out ? out : &own;
  int64_t t0 = dk_txn__dml_now_ms();
  uctx u;
  memset(&u, 0, sizeof u);
  u.x = x;
  u.alloc = x->alloc;
  u.n = n;
  u.cq.alloc = x->alloc;
  u.rt[0] = dk_txn__row_tracking_col(x, 0);
  u.rt[1] = dk_txn__row_tracking_col(x, 1);
  u.tracked = u.rt[0] && u.rt[1];
  u.cdf = dk_txn__cdf_on(x);
  batches w = {.alloc = x->alloc};
  int64_t *nrec = NULL, *fidx = NULL;
  dk_status st = DK_OK;
  u.replaced = dk__calloc(x->alloc, n ? n : 1, 1);
  u.rid = dk__calloc(x->alloc, n ? n : 1, sizeof *u.rid);
  u.ur = dk__calloc(x->alloc, n ? n : 1, sizeof *u.ur);
  fidx = dk__calloc(x->alloc, n ? n : 1, sizeof *fidx);
  if (!u.replaced || !u.rid || !u.ur || !fidx)
    st = dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
  for (size_t i = 0; i < n_new && !st; i++) {
    if (replaces[i] < -1 || replaces[i] >= (int64_t)n)
      st = dk__error_set(err, DK_INVALID, "UPDATE: new row %zu replaces row %lld of %zu", i,
                         (long long)replaces[i], n);
    else if (replaces[i] >= 0 && u.replaced[replaces[i]]++)
      st = dk__error_set(err, DK_INVALID, "UPDATE: row %lld is replaced twice",
                         (long long)replaces[i]);
  }
  /* the rows that go: deletion vectors */
  if (!st) st = dk_txn_delete_rows(m, x, uris, rows, n, o, err);
  int64_t deleted = m->num_deleted_rows;
  if (!st) st = schemas(&u, err);
  /* a row named twice (an engine updating one row twice before it commits) is refused on
   * every table: its two new rows would both land, the row doubled */
  if (!st && n) {
    st = dk_txn__file_indexes(fidx, &nrec, x, uris, n, err);
    for (size_t i = 0; i < n && !st; i++) u.ur[i] = (urow){fidx[i], rows[i], (int64_t)i};
    if (!st) qsort(u.ur, n, sizeof *u.ur, urow_cmp);
    for (size_t i = 1; i < n && !st; i++)
      if (!urow_cmp(&u.ur[i - 1], &u.ur[i]))
        st = dk__error_set(err, DK_INVALID, "UPDATE: row %lld of data file '%s' is named twice",
                           (long long)rows[u.ur[i].pos], uris[u.ur[i].pos]);
    if (!st && (u.tracked || u.cdf)) st = read_old(&u, err);
  }
  if (!st && n_new) st = new_rows(&u, &w, src, replaces, n_new, err);
  dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
  if (!st && w.n) {
    qstream qs = {.q = &w, .sch = &u.wout};
    dk_error_init(&qs.err);
    struct ArrowArrayStream s = {.get_schema = q_schema, .get_next = q_next,
                                 .get_last_error = q_error, .release = q_release,
                                 .private_data = &qs};
    dk_write_options wo = {.version = DK_WRITE_OPTIONS_VERSION};
    st = dk_txn_write(&wr, x, &s, &wo, err);
  }
  dk_write_result cr = {.version = DK_WRITE_RESULT_VERSION};
  /* change data only when something was updated (a DV DELETE and an append have none) */
  bool any_update = false;
  for (size_t i = 0; i < n; i++) any_update |= u.replaced[i] != 0;
  if (!st && u.cdf && any_update && u.cq.n) {
    qstream qs = {.q = &u.cq, .sch = &u.cdc};
    dk_error_init(&qs.err);
    struct ArrowArrayStream s = {.get_schema = q_schema, .get_next = q_next,
                                 .get_last_error = q_error, .release = q_release,
                                 .private_data = &qs};
    st = dk_txn__write_cdc(&cr, x, &s, err);
  }
  if (!st) {
    int64_t upd = 0;
    for (size_t i = 0; i < n; i++) upd += u.replaced[i];
    m->num_updated_rows = upd;
    m->num_deleted_rows = deleted - upd;
    m->num_inserted_rows = (int64_t)n_new - upd;
    m->num_added_files = wr.files;
    m->num_added_bytes = wr.bytes;
    m->num_added_change_files = cr.files;
    m->change_file_bytes = cr.bytes;
    m->execution_time_ms = dk_txn__dml_now_ms() - t0;
    /* UpdateCommand's metrics beside the DELETE's of the DVs */
    if (upd) {
      st = dk_txn_set_metric(x, "numUpdatedRows", upd, err);
      if (!st) st = dk_txn_set_metric(x, "numAddedFiles", wr.files, err);
      if (!st) st = dk_txn_set_metric(x, "numAddedChangeFiles", cr.files, err);
      if (!st) st = dk_txn_set_metric(x, "numAddedBytes", wr.bytes, err);
      if (!st) st = dk_txn_set_metric(x, "numDeletedRows", deleted - upd, err);
    }
  }
  batches_dispose(&w);
  batches_dispose(&u.cq);
  dk__schema_release(&u.tbl);
  dk__schema_release(&u.cdc);
  dk__schema_release(&u.wout);
  dk__free(x->alloc, u.replaced);
  dk__free(x->alloc, u.rid);
  dk__free(x->alloc, u.ur);
  dk__free(x->alloc, fidx);
  dk__free(x->alloc, nrec);
  return st;
}
