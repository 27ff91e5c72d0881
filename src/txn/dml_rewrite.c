/*
** dml_rewrite.c — the data half the row-level commands share (delta-spark
** DMLWithDeletionVectorsHelper.findTouchedFiles, UpdateCommand/DeleteCommand rewriteFiles):
**   - matching: the candidate files of a predicate (txn.filterFiles records the read) are read
**     for the physical indexes of the rows it makes TRUE; each file with any is "touched";
**   - rewriting: rows of the touched files (those a `keep` predicate selects), with assigned
**     columns replaced by their values, written as new data files through dk_txn_write, which
**     partitions, rolls files, writes stats and checks constraints. The rows reach it as an
**     Arrow stream pulled file by file, so memory holds one batch; a batch's untouched columns
**     are passed through without copies.
** Values are dk value expressions (src/expr/value.c) stored with an ANSI cast to the column's
** type; with `when` they apply only where it is TRUE (`CASE WHEN when THEN CAST(v AS t) ELSE
** col END`, the copy-on-write form of UPDATE).
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "arrow/array.h"
#include "expr/expr.h"
#include "txn/dml_int.h"

int64_t dk_txn__stats_records(const char *stats) {
  if (!stats) return -1;
  const char *p = strstr(stats, "\"numRecords\"");
  if (!p || !(p = strchr(p + 12, ':'))) return -1;
  return strtoll(p + 1, NULL, 10);
}

/* ---- matching -------------------------------------------------------------------------------- */

dk_status dk_txn__dml_match(dml_ctx *c, const dk_expr *pred, int64_t *matched, dk_error *err) {
  dk_txn *x = c->x;
  *matched = 0;
  int64_t *idx = NULL, n = 0;
  DK_RETURN_NOT_OK(dk_txn_read_files(x, pred, &idx, &n, err)); /* all recorded as read */
  int64_t opened = 0;
  static const char *const none[1] = {NULL};
  dk_scan__file_reader_options ro = {.columns = none, .n_columns = 0, .predicate = pred};
  dk_scan__file_reader *rd = NULL;
  dk_file_iter *it = NULL;
  dk_status st = dk_scan__file_reader_new(&rd, x->snap, &ro, err);
  if (!st) st = dk_snapshot_files_open(&it, x->snap, NULL, err);
  for (int64_t k = 0; k < n && !st; k++) {
    const dk_file_entry *fe = NULL;
    st = dk_file_iter_seek(it, idx[k], err);
    if (!st) st = dk_file_iter_next(&fe, it, err);
    if (st) break;
    /* a file whose partition values or statistics rule the predicate out is not opened (an
     * IN list is checked value by value against the min/max: it binds as ORed equalities) */
    bool prunes = false;
    st = dk_scan__file_prunes(&prunes, rd, fe, NULL, err);
    if (st) break;
    if (prunes) continue;
    opened++;
    int64_t nrec = dk_txn__stats_records(fe->stats);
    dk_scan__file *f = NULL;
    st = dk_scan__file_open(&f, rd, fe, err);
    if (st) break;
    if (nrec < 0) nrec = dk_scan__file_num_rows(f);
    const int64_t *rows = NULL;
    int64_t m = 0;
    st = dk_scan__file_rows(&rows, &m, f, err);
    if (!st && m > 0) {
      st = dk_txn__dml_touch(c, idx[k], nrec, rows, m, err);
      *matched += m;
      c->touched_live += nrec - (fe->dv ? fe->dv->cardinality : 0);
      c->m->num_removed_bytes += fe->size;
    }
    dk_scan__file_close(f);
  }
  c->m->num_files_after_skipping = opened;
  dk_file_iter_free(it);
  dk_scan__file_reader_free(rd);
  dk_free(idx);
  return st;
}

void dk_txn__dml_remove_touched(dml_ctx *c) {
  for (size_t i = 0; i < c->n_files; i++) {
    dk_dv__builder_free(c->files[i].rows);
    c->files[i].rows = NULL;
  }
}

/* ---- the stream of rows to write ------------------------------------------------------------- */

typedef struct rw {
  dml_ctx *c;
  dk_scan__file_reader *rd;       /* every column, the keep predicate */
  struct ArrowSchema schema;      /* rd's batches (the table's logical columns [+ _metadata]) */
  int64_t nt;                     /* table columns */
  dk_expr **bound;                /* per column: its new value (NULL: kept) */
  /* columns after the table's: the _change_type literal, or the materialized row id and row
   * commit version (row tracking); bound values */
  dk_expr *extra[2];
  dk_atype extra_type[2];
  int64_t n_extra;
  struct ArrowSchema out_schema;  /* the stream's: table columns + extra */
  dk_atype *types;                /* per column */
  size_t next;                    /* next touched file */
  dk_file_iter *it;
  dk_scan__file *cur;             /* the file being read */
  dk_error err;                   /* the stream's failure */
  dk_status st;
} rw;

typedef struct held {
  struct ArrowArray in;           /* the batch read (owns the buffers passed through) */
  struct ArrowArray *kids;        /* the output's children (evaluated, or borrowed from in) */
  struct ArrowArray **kp;
  int64_t n;
  const dk_allocator *alloc;
} held;

static void held_release(struct ArrowArray *a) {
  held *h = a->private_data;
  for (int64_t j = 0; j < h->n; j++)
    if (h->kids[j].release) h->kids[j].release(&h->kids[j]);
  if (h->in.release) h->in.release(&h->in);
  const dk_allocator *al = h->alloc;
  dk__free(al, h->kids);
  dk__free(al, h->kp);
  dk__free(al, h);
  a->release = NULL;
}

/* The output batch: in's columns, the assigned ones replaced by their values. Consumes in. */
static dk_status build_batch(rw *u, struct ArrowArray *out, struct ArrowArray *in,
                             dk_error *err) {
  const dk_allocator *al = u->c->alloc;
  int64_t nt = u->nt, n = nt + u->n_extra;
  size_t nn = (size_t)(n ? n : 1);
  held *h = dk__calloc(al, 1, sizeof *h);
  struct ArrowArray *kids = h ? dk__calloc(al, nn, sizeof *kids) : NULL;
  struct ArrowArray **kp = kids ? dk__calloc(al, nn, sizeof *kp) : NULL;
  if (!kp) {
    dk__free(al, kids);
    dk__free(al, h);
    in->release(in);
    return dk__error_set(err, DK_NOMEM, "out of memory (DML rewrite)");
  }
  h->in = *in;
  in->release = NULL;
  h->kids = kids;
  h->kp = kp;
  h->n = n;
  h->alloc = al;
  static const void *no_buffers[1] = {NULL};
  memset(out, 0, sizeof *out);
  out->length = h->in.length;
  out->n_buffers = 1;
  out->n_children = n;
  out->children = kp;
  out->buffers = no_buffers;
  out->private_data = h;
  out->release = held_release;
  for (int64_t j = 0; j < n; j++) {
    kp[j] = &kids[j];
    if (j >= nt || u->bound[j]) {
      dk_status st = j >= nt ? dk_expr__eval_value(&kids[j], u->extra[j - nt],
                                                   &u->extra_type[j - nt],
                                                   u->out_schema.children[j]->name, &h->in, al, err)
                             : dk_expr__eval_value(&kids[j], u->bound[j], &u->types[j],
                                                   u->schema.children[j]->name, &h->in, al, err);
      if (st) {
        out->release(out);
        return st;
      }
      continue;
    }
    kids[j] = *h->in.children[j];
    kids[j].release = dk__array_release_borrowed;
    if (h->in.offset) { /* the struct's offset folded into the child */
      kids[j].offset += h->in.offset;
      kids[j].length = h->in.length;
      kids[j].null_count = -1;
    }
  }
  return DK_OK;
}

static int s_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  rw *u = s->private_data;
  return dk__schema_copy(out, &u->out_schema, &u->err) ? EIO : 0;
}

static int s_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  rw *u = s->private_data;
  dml_ctx *c = u->c;
  memset(out, 0, sizeof *out);
  for (;;) {
    if (!u->cur) {
      if (u->next >= c->n_files) return 0; /* the end */
      const dk_file_entry *fe = NULL;
      u->st = dk_file_iter_seek(u->it, c->files[u->next++].idx, &u->err);
      if (!u->st) u->st = dk_file_iter_next(&fe, u->it, &u->err);
      if (!u->st) u->st = dk_scan__file_open(&u->cur, u->rd, fe, &u->err);
      if (u->st) return EIO;
    }
    struct ArrowArray b;
    u->st = dk_scan__file_next(&b, u->cur, &u->err);
    if (u->st) return EIO;
    if (!b.release) {
      dk_scan__file_close(u->cur);
      u->cur = NULL;
      continue;
    }
    u->st = build_batch(u, out, &b, &u->err);
    return u->st ? EIO : 0;
  }
}

static const char *s_last_error(struct ArrowArrayStream *s) {
  rw *u = s->private_data;
  return u->err.message;
}

static void s_release(struct ArrowArrayStream *s) { s->release = NULL; }

/* ---- setup ----------------------------------------------------------------------------------- */

static void rw_dispose(rw *u) {
  if (u->cur) dk_scan__file_close(u->cur);
  dk_file_iter_free(u->it);
  dk_scan__file_reader_free(u->rd);
  for (int64_t j = 0; u->bound && j < u->nt; j++) dk_expr_free(u->bound[j]);
  dk__free(u->c->alloc, u->bound);
  dk__free(u->c->alloc, u->types);
  for (int64_t j = 0; j < u->n_extra; j++) dk_expr_free(u->extra[j]);
  dk__schema_release(&u->schema);
  dk__schema_release(&u->out_schema);
}

/* Binds every assignment against the table's columns: u->bound[j] for column j. */
static dk_status bind_assignments(rw *u, const dml_rewrite *r, dk_error *err) {
  const struct ArrowSchema *s = &u->schema;
  size_t n = (size_t)u->nt;
  const char *what = r->what ? r->what : "DML";
  u->bound = dk__calloc(u->c->alloc, n ? n : 1, sizeof *u->bound);
  u->types = dk__calloc(u->c->alloc, n ? n : 1, sizeof *u->types);
  if (!u->bound || !u->types) return dk__error_set(err, DK_NOMEM, "out of memory (%s)", what);
  for (size_t i = 0; i < n; i++)
    DK_RETURN_NOT_OK(dk__atype_parse(&u->types[i], s->children[i]->format, err));
  for (size_t a = 0; a < r->n_set; a++) {
    const char *name = r->set[a].column;
    DK_RETURN_IF(!name || !r->set[a].value, DK_INVALID, err, "%s: assignment %zu has no %s",
                 what, a + 1, name ? "value" : "column");
    size_t j = n;
    for (size_t i = 0; i < n; i++)
      if (!strcasecmp(s->children[i]->name, name)) j = i;
    DK_RETURN_IF(j == n, DK_NOT_FOUND, err,
                 "%s: no column '%s' in the table (nested fields cannot be assigned yet)", what,
                 name);
    DK_RETURN_IF(u->bound[j], DK_INVALID, err, "%s: column '%s' is assigned twice", what, name);
    char tsql[64];
    dk_expr__type_sql(tsql, sizeof tsql, &u->types[j]);
    DK_RETURN_IF(!strcmp(tsql, "?"), DK_UNSUPPORTED, err,
                 "%s: column '%s' of Arrow type %s cannot be assigned", what, name,
                 s->children[j]->format);
    dk_expr *v = NULL, *e = NULL, *col = NULL;
    dk_status st = dk_expr_cast(&v, dk_expr_ref((dk_expr *)r->set[a].value), tsql, err);
    if (!st && r->when) {
      const char *path[1] = {s->children[j]->name};
      st = dk_expr_column(&col, path, 1, err);
      dk_expr *cond = dk_expr_ref((dk_expr *)r->when);
      if (!st) st = dk_expr_case(&e, &cond, &v, 1, col, err);
      else dk_expr_free(cond), dk_expr_free(v);
    } else {
      e = v;
    }
    if (!st) st = dk_expr__bind_value(&u->bound[j], e, s, u->c->alloc, err);
    dk_expr_free(e);
    if (st) {
      dk__error_prefix(err, "%s %s", what, s->children[j]->name);
      return st;
    }
  }
  return DK_OK;
}

/* The row tracking columns of the rewritten rows (delta-spark RowTracking with
** MaterializedRowId/MaterializedRowCommitVersion): every row keeps its row id; a row keeps its
** row commit version only when it is copied unchanged (no assignment, or `when` not TRUE),
** else NULL, so that it takes the new file's defaultRowCommitVersion (this commit). */
static dk_status bind_row_tracking(rw *u, const dml_rewrite *r, const char *const name[2],
                                   dk_error *err) {
  const char *id_path[2] = {"_metadata", "row_id"};
  const char *cv_path[2] = {"_metadata", "row_commit_version"};
  dk_expr *e[2] = {NULL, NULL};
  dk_status st = dk_expr_column(&e[0], id_path, 2, err);
  if (!st && !r->n_set) {
    st = dk_expr_column(&e[1], cv_path, 2, err);
  } else if (!st && r->when) {
    dk_expr *lit = NULL, *null = NULL, *cv = NULL, *cond = dk_expr_ref((dk_expr *)r->when);
    st = dk_expr_literal_null(&lit, err);
    if (!st) st = dk_expr_cast(&null, lit, "bigint", err); /* consumes lit */
    if (!st) st = dk_expr_column(&cv, cv_path, 2, err);
    if (!st) st = dk_expr_case(&e[1], &cond, &null, 1, cv, err);
    else dk_expr_free(cond), dk_expr_free(null), dk_expr_free(cv);
  } else if (!st) {
    st = dk_expr_literal_null(&e[1], err);
  }
  for (int k = 0; k < 2; k++) {
    u->extra_type[k] = dk__atype_make(DK_AT_INT64);
    if (!st) st = dk_expr__bind_value(&u->extra[k], e[k], &u->schema, u->c->alloc, err);
    if (!st) u->n_extra = k + 1;
    dk_expr_free(e[k]);
    if (!st) st = dk__schema_init(u->out_schema.children[u->nt + k], &u->extra_type[k], name[k],
                                  ARROW_FLAG_NULLABLE, 0, err);
  }
  return st;
}

static dk_status rw_setup(rw *u, dml_ctx *c, const dml_rewrite *r, dk_error *err) {
  memset(u, 0, sizeof *u);
  u->c = c;
  dk_error_init(&u->err);
  /* change data has no row tracking columns; rewritten data rows carry them */
  const char *rt[2] = {NULL, NULL};
  if (!r->change_type) {
    rt[0] = dk_txn__row_tracking_col(c->x, 0);
    rt[1] = dk_txn__row_tracking_col(c->x, 1);
  }
  bool tracked = rt[0] && rt[1];
  dk_scan__file_reader_options ro = {
      .predicate = r->keep,
      .metadata_fields = tracked ? DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION : 0};
  DK_RETURN_NOT_OK(dk_scan__file_reader_new(&u->rd, c->x->snap, &ro, err));
  DK_RETURN_NOT_OK(dk_scan__file_reader_schema(&u->schema, u->rd, err));
  u->nt = u->schema.n_children - (tracked ? 1 : 0);
  DK_RETURN_NOT_OK(bind_assignments(u, r, err));
  /* the stream's schema: the table's columns, then _change_type for change data or the row
   * tracking columns */
  int64_t n = u->nt, ne = r->change_type ? 1 : tracked ? 2 : 0;
  dk_atype sty = dk__atype_make(DK_AT_STRUCT), str = dk__atype_make(DK_AT_STRING);
  DK_RETURN_NOT_OK(dk__schema_init(&u->out_schema, &sty, "", 0, n + ne, err));
  for (int64_t j = 0; j < n; j++)
    DK_RETURN_NOT_OK(dk__schema_copy(u->out_schema.children[j], u->schema.children[j], err));
  if (tracked) return bind_row_tracking(u, r, rt, err);
  if (r->change_type) {
    DK_RETURN_NOT_OK(dk__schema_init(u->out_schema.children[n], &str, "_change_type",
                                     ARROW_FLAG_NULLABLE, 0, err));
    dk_expr *lit = NULL;
    DK_RETURN_NOT_OK(dk_expr_literal_string(&lit, r->change_type, strlen(r->change_type), err));
    u->extra_type[0] = str;
    dk_status st = dk_expr__bind_value(&u->extra[0], lit, &u->schema, c->alloc, err);
    dk_expr_free(lit);
    if (st) return st;
    u->n_extra = 1;
  }
  return DK_OK;
}

int dk_txn__cdf_on(const dk_txn *x) {
  return dk_txn__conf_true(&x->meta, "delta.enableChangeDataFeed");
}

dk_status dk_txn__dml_rewrite_check(dml_ctx *c, const dml_rewrite *r, dk_error *err) {
  rw u;
  dk_status st = rw_setup(&u, c, r, err);
  rw_dispose(&u);
  return st;
}

dk_status dk_txn__dml_rewrite(dml_ctx *c, const dml_rewrite *r, dk_error *err) {
  if (!c->n_files) return DK_OK;
  rw u;
  dk_status st = rw_setup(&u, c, r, err);
  if (!st) st = dk_snapshot_files_open(&u.it, c->x->snap, NULL, err);
  if (!st) {
    struct ArrowArrayStream s = {.get_schema = s_get_schema,
                                 .get_next = s_get_next,
                                 .get_last_error = s_last_error,
                                 .release = s_release,
                                 .private_data = &u};
    dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
    dk_write_options wo = {.version = DK_WRITE_OPTIONS_VERSION};
    st = r->change_type ? dk_txn__write_cdc(&wr, c->x, &s, err)
                        : dk_txn_write(&wr, c->x, &s, &wo, err);
    if (st && u.st) { /* the stream's own failure is the one to tell */
      dk_error_init(err);
      st = dk__error_set(err, u.st, "%s", u.err.message);
    }
    if (r->change_type) {
      c->m->num_added_change_files += wr.files;
      c->m->change_file_bytes += wr.bytes;
    } else {
      c->m->num_added_files += wr.files;
      c->m->num_added_bytes += wr.bytes;
    }
  }
  rw_dispose(&u);
  return st;
}
