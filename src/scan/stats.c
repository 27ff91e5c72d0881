/*
** stats.c — a snapshot's Delta per-file statistics (PROTOCOL.md "Per-file Statistics") parsed
** once and kept columnar, for every scan of the snapshot to skip files by.
**
** The first scan of a snapshot reads every file's stats text once and keeps, per file,
** numRecords (as LIMIT reads it, and as skipping reads it) and whether the stats parsed; and,
** per leaf column its filter skips by, the nullCount and the min and max in typed arrays: a
** DK_STAT_* mask per file (0: no statistic), an int64 slot (integers, dates, timestamps as
** written, booleans; or the bits of a double when the value is not an integer), an int128 for
** decimal columns (unscaled, at the column's scale) and offsets into one byte heap for string
** columns. The values are exactly what the JSON provider of expr/skip.c gives for the column
** (the arrays are filled through its getters: float statistics rounded to 32 bits, negative
** integers, timestamps as the text says, strings whole, so the evaluator's truncation and
** widening rules apply unchanged), and the one evaluator (dk_expr__skip_stats) reads them
** through a provider over the arrays: no parsing and no allocation per file.
**
** The table is kept with the snapshot (snapshot/access.h dk_snapshot__cache), built under the
** snapshot's lock and immutable once published, so scans on any thread share it. A later scan
** whose filter skips by a column the table lacks builds a table of the missing columns (one
** more pass over the stats text), which replaces the published one and keeps it.
*/
#include <stdlib.h>

#include "codec/json/json.h"
#include "expr/skip.h"
#include "scan/scan_int.h"
#include "snapshot/access.h"

typedef struct stats_col {
  const dk_colref *key;         /* physical path, type, domain (dk_expr__colref_copy) */
  int64_t *nulls;               /* nullCount, -1: none */
  uint8_t *has[2];              /* DK_STAT_* bits of the min [0] and the max [1], 0: none */
  int64_t *v[2];                /* INT or BOOL value, or the bits of a DBL-only double */
  dk_i128 *dec[2];              /* decimal columns */
  uint32_t *soff[2], *slen[2];  /* string columns: bytes at heap + soff */
  const char *heap;             /* the table's string heap (set once built) */
} stats_col;

struct dk_scan__stats {
  dk_snapshot__cache base;      /* first: the snapshot frees it through base.free */
  const dk_allocator *alloc;
  dk_scan__stats *prev;         /* the table this one replaced (its columns are not repeated) */
  int64_t n_files;
  int64_t *nrec;                /* dk_scan__num_records of each file */
  int64_t *nrows;               /* numRecords as skipping reads it (-1: none) */
  uint8_t *parsed;              /* 1: the file has stats and they parse (skipping applies) */
  int own_files;                /* nrec/nrows/parsed are this table's (else prev's) */
  size_t n_cols;
  stats_col *cols;
  dk_arena ar;                  /* the keys' names */
  dk_buf heap;                  /* string statistics */
};

static void stats_free(dk_snapshot__cache *c) {
  dk_scan__stats *t = (dk_scan__stats *)c;
  while (t) {
    dk_scan__stats *prev = t->prev;
    const dk_allocator *a = t->alloc;
    for (size_t k = 0; k < t->n_cols; k++) {
      stats_col *col = &t->cols[k];
      dk__free(a, col->nulls);
      for (int m = 0; m < 2; m++) {
        dk__free(a, col->has[m]);
        dk__free(a, col->v[m]);
        dk__free(a, col->dec[m]);
        dk__free(a, col->soff[m]);
        dk__free(a, col->slen[m]);
      }
    }
    if (t->own_files) {
      dk__free(a, t->nrec);
      dk__free(a, t->nrows);
      dk__free(a, t->parsed);
    }
    dk__free(a, t->cols);
    dk__arena_dispose(&t->ar);
    dk__buf_dispose(&t->heap);
    dk__free(a, t);
    t = prev;
  }
}

/* The column of t (or of the tables it replaced) keyed like ref, or NULL. */
static const stats_col *find_col(const dk_scan__stats *t, const dk_colref *ref) {
  for (; t; t = t->prev)
    for (size_t k = 0; k < t->n_cols; k++)
      if (dk_expr__colref_same_stats(t->cols[k].key, ref)) return &t->cols[k];
  return NULL;
}

/* ---- the columns a filter skips by ------------------------------------------------------ */

typedef struct refs {
  const dk_allocator *alloc;
  const dk_colref **v;
  size_t n, cap;
  int nomem;
} refs;

static void add_ref(void *ctx, const dk_colref *col) {
  refs *r = ctx;
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i] == col) return;
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 8;
    const dk_colref **v = dk__realloc(r->alloc, r->v, cap * sizeof *v);
    if (!v) {
      r->nomem = 1;
      return;
    }
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = col;
}

/* ---- building ------------------------------------------------------------------------------ */

static dk_status col_init(stats_col *c, const dk_colref *ref, dk_scan__stats *t, int64_t nf,
                          dk_error *err) {
  const dk_allocator *a = t->alloc;
  size_t n = (size_t)(nf ? nf : 1);
  DK_RETURN_NOT_OK(dk_expr__colref_copy(&c->key, ref, &t->ar, err));
  unsigned reps = dk_expr__colref_stat_reps(ref);
  c->nulls = dk__malloc(a, n * sizeof *c->nulls);
  if (!c->nulls) goto nomem;
  for (int m = 0; m < 2; m++) {
    c->has[m] = dk__calloc(a, n, 1);
    c->v[m] = dk__calloc(a, n, sizeof *c->v[m]);
    if (!c->has[m] || !c->v[m]) goto nomem;
    if ((reps & DK_STAT_DEC) && !(c->dec[m] = dk__calloc(a, n, sizeof *c->dec[m])))
      goto nomem;
    if ((reps & DK_STAT_STR) &&
        (!(c->soff[m] = dk__calloc(a, n, sizeof *c->soff[m])) ||
         !(c->slen[m] = dk__calloc(a, n, sizeof *c->slen[m]))))
      goto nomem;
  }
  return DK_OK;
nomem:
  return dk__error_set(err, DK_NOMEM, "out of memory (columnar file statistics)");
}

/* File i's statistics of column c from its parsed stats (root: an object, or NULL). */
static dk_status col_fill(stats_col *c, dk_buf *heap, int64_t i, const dk_json_value *root,
                          dk_error *err) {
  int64_t nc;
  c->nulls[i] = dk_expr__json_null_count(root, c->key, &nc) ? nc : -1;
  for (int m = 0; m < 2; m++) {
    dk_stat_value v;
    memset(&v, 0, sizeof v);
    if (!dk_expr__json_value(root, c->key, m == 1, &v)) continue;
    unsigned has = v.has;
    if (has & (DK_STAT_INT | DK_STAT_BOOL)) {
      c->v[m][i] = (has & DK_STAT_INT) ? v.i : v.b;
      /* an integer's double is its conversion (it is how strtod reads integer text; should
       * one ever differ, the double is dropped: less skipping, never a wrong skip) */
      if ((has & DK_STAT_DBL) && (double)v.i != v.d) has &= ~(unsigned)DK_STAT_DBL;
    } else if (has & DK_STAT_DBL) {
      memcpy(&c->v[m][i], &v.d, sizeof v.d);
    }
    if (has & DK_STAT_DEC) {
      if (c->dec[m]) c->dec[m][i] = v.dec;
      else has &= ~(unsigned)DK_STAT_DEC;
    }
    if (has & DK_STAT_STR) {
      /* only string columns compare string statistics (skip.c); past 4 GiB of them: none */
      if (c->soff[m] && heap->len <= UINT32_MAX && v.len <= UINT32_MAX - heap->len) {
        c->soff[m][i] = (uint32_t)heap->len;
        c->slen[m][i] = (uint32_t)v.len;
        DK_RETURN_NOT_OK(dk__buf_append(heap, v.s, v.len, err));
      } else {
        has &= ~(unsigned)DK_STAT_STR;
      }
    }
    c->has[m][i] = (uint8_t)has;
  }
  return DK_OK;
}

/* The stats text of each file in turn (NULL: none), valid until the next call. */
typedef dk_status (*next_stats_fn)(const char **text, void *ctx, dk_error *err);

/* A table of nf files for the columns want[0..n_want) (which prev lacks) and, without prev,
** the per-file counts: one pass over the stats texts `next` gives. */
static dk_status build(dk_scan__stats **out, const dk_allocator *alloc, int64_t nf,
                       next_stats_fn next, void *ctx, dk_scan__stats *prev,
                       const dk_colref *const *want, size_t n_want, dk_error *err) {
  *out = NULL;
  size_t n = (size_t)(nf ? nf : 1);
  dk_status st = DK_OK;
  dk_arena scratch;
  dk__arena_init(&scratch, alloc, 0);
  dk_scan__stats *t = dk__calloc(alloc, 1, sizeof *t);
  if (!t) return dk__error_set(err, DK_NOMEM, "out of memory (columnar file statistics)");
  t->base.free = stats_free;
  t->alloc = alloc;
  t->prev = prev;
  t->n_files = nf;
  dk__arena_init(&t->ar, alloc, 0);
  dk__buf_init(&t->heap, alloc);
  if (prev) {
    t->nrec = prev->nrec;
    t->nrows = prev->nrows;
    t->parsed = prev->parsed;
  } else {
    t->own_files = 1;
    t->nrec = dk__malloc(alloc, n * sizeof *t->nrec);
    t->nrows = dk__malloc(alloc, n * sizeof *t->nrows);
    t->parsed = dk__calloc(alloc, n, 1);
    if (!t->nrec || !t->nrows || !t->parsed) goto nomem;
  }
  if (n_want && !(t->cols = dk__calloc(alloc, n_want, sizeof *t->cols))) goto nomem;
  for (size_t k = 0; k < n_want; k++) {
    t->n_cols = k + 1; /* (freed with the table on failure) */
    DK_CHECK_GOTO(col_init(&t->cols[k], want[k], t, nf, err));
  }
  for (int64_t i = 0; i < nf; i++) {
    const char *text;
    DK_CHECK_GOTO(next(&text, ctx, err));
    if (!prev) {
      t->nrec[i] = dk_scan__num_records(text, &scratch);
      t->nrows[i] = -1;
    }
    if (!text || (prev && !t->parsed[i])) continue;
    dk__arena_reset(&scratch);
    dk_json_value *jv = NULL;
    if (dk__json_parse(&jv, &scratch, text, strlen(text), NULL) != DK_OK)
      continue; /* stats that do not parse are ignored (the file is read) */
    const dk_json_value *root = jv && jv->type == DK_JSON_OBJECT ? jv : NULL;
    if (!prev) {
      int64_t nr;
      t->parsed[i] = 1;
      if (dk_expr__json_num_rows(root, &nr)) t->nrows[i] = nr;
    }
    for (size_t k = 0; k < t->n_cols; k++)
      DK_CHECK_GOTO(col_fill(&t->cols[k], &t->heap, i, root, err));
  }
  /* files without parsed stats have no column statistics (nulls -1, has 0) */
  for (size_t k = 0; k < t->n_cols; k++) {
    for (int64_t i = 0; i < nf; i++)
      if (!t->parsed[i]) t->cols[k].nulls[i] = -1;
    t->cols[k].heap = t->heap.data;
  }
  dk__arena_dispose(&scratch);
  *out = t;
  return DK_OK;
nomem:
  st = dk__error_set(err, DK_NOMEM, "out of memory (columnar file statistics)");
cleanup:
  dk__arena_dispose(&scratch);
  t->prev = NULL; /* not this table's */
  stats_free(&t->base);
  return st;
}

static dk_status next_of_iter(const char **text, void *ctx, dk_error *err) {
  const dk_file_entry *fe; /* stats live until the next call on the iterator */
  DK_RETURN_NOT_OK(dk_file_iter_next(&fe, ctx, err));
  *text = fe ? fe->stats : NULL;
  return DK_OK;
}

/* build() over the snapshot's files. */
static dk_status build_snapshot(dk_scan__stats **out, const dk_snapshot *snap,
                                dk_scan__stats *prev, const dk_colref *const *want,
                                size_t n_want, dk_error *err) {
  dk_file_iter *fit = NULL;
  DK_RETURN_NOT_OK(dk_snapshot_files_open(&fit, snap, NULL, err));
  dk_status st = build(out, dk_snapshot__allocator(snap), dk_snapshot_num_files(snap),
                       next_of_iter, fit, prev, want, n_want, err);
  dk_file_iter_free(fit);
  return st;
}

typedef struct text_list {
  const char *const *v;
  int64_t i;
} text_list;

static dk_status next_of_list(const char **text, void *ctx, dk_error *err) {
  text_list *l = ctx;
  *text = l->v[l->i++];
  return DK_OK;
}

/* Keeps in r the references whose columns t lacks, each key once. */
static void keep_missing(refs *r, const dk_scan__stats *t) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++) {
    if (find_col(t, r->v[i])) continue;
    bool dup = false;
    for (size_t j = 0; j < n && !dup; j++) dup = dk_expr__colref_same_stats(r->v[j], r->v[i]);
    if (!dup) r->v[n++] = r->v[i];
  }
  r->n = n;
}

dk_status dk_scan__stats_get(const dk_scan__stats **out, const dk_snapshot *snap,
                             const dk_expr *bound, dk_error *err) {
  *out = NULL;
  refs r = {.alloc = dk_snapshot__allocator(snap)};
  dk_expr__skip_colrefs(bound, add_ref, &r);
  if (r.nomem) {
    dk__free(r.alloc, r.v);
    return dk__error_set(err, DK_NOMEM, "out of memory (columnar file statistics)");
  }
  dk_status st = DK_OK;
  dk_scan__stats *t = (dk_scan__stats *)dk_snapshot__cache_get(snap);
  keep_missing(&r, t);
  if (!t || r.n) {
    dk_snapshot__lock(snap);
    t = (dk_scan__stats *)dk_snapshot__cache_get(snap); /* another scan may have built them */
    keep_missing(&r, t);
    if (!t || r.n) {
      dk_scan__stats *nt = NULL;
      st = build_snapshot(&nt, snap, t, r.v, r.n, err);
      if (st == DK_OK) dk_snapshot__cache_set(snap, &nt->base);
      t = nt;
    }
    dk_snapshot__unlock(snap);
  }
  dk__free(r.alloc, r.v);
  *out = t;
  return st;
}

dk_status dk_scan__stats_build(dk_scan__stats **out, const char *const *texts, int64_t n,
                               const dk_expr *bound, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  refs r = {.alloc = alloc};
  dk_expr__skip_colrefs(bound, add_ref, &r);
  dk_status st;
  if (r.nomem) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (columnar file statistics)");
  } else {
    keep_missing(&r, NULL);
    text_list l = {texts, 0};
    st = build(out, alloc, n, next_of_list, &l, NULL, r.v, r.n, err);
  }
  dk__free(alloc, r.v);
  return st;
}

void dk_scan__stats_free(dk_scan__stats *t) {
  if (t) stats_free(&t->base);
}

int64_t dk_scan__stats_num_records(const dk_scan__stats *t, int64_t i) { return t->nrec[i]; }

/* ---- skipping over the arrays ---------------------------------------------------------------- */

dk_status dk_scan__stats_eval_init(dk_scan__stats_eval *ev, const dk_scan__stats *t,
                                   const dk_expr *bound, const dk_allocator *alloc,
                                   dk_error *err) {
  memset(ev, 0, sizeof *ev);
  ev->t = t;
  ev->bound = bound;
  ev->alloc = alloc;
  refs r = {.alloc = alloc};
  dk_expr__skip_colrefs(bound, add_ref, &r);
  ev->refs = r.v;
  ev->n = r.n;
  if (r.nomem || (r.n && !(ev->cols = dk__calloc(alloc, r.n, sizeof *ev->cols))))
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  for (size_t i = 0; i < r.n; i++) ev->cols[i] = find_col(t, r.v[i]);
  return DK_OK;
}

void dk_scan__stats_eval_dispose(dk_scan__stats_eval *ev) {
  dk__free(ev->alloc, ev->refs);
  dk__free(ev->alloc, ev->cols);
}

static const stats_col *eval_col(const dk_scan__stats_eval *ev, const dk_colref *ref) {
  for (size_t k = 0; k < ev->n; k++)
    if (ev->refs[k] == ref) return ev->cols[k];
  return NULL;
}

static bool arr_num_rows(const void *ctx, int64_t *out) {
  const dk_scan__stats_eval *ev = ctx;
  *out = ev->t->nrows[ev->i];
  return *out >= 0;
}

static bool arr_null_count(const void *ctx, const dk_colref *ref, int64_t *out) {
  const dk_scan__stats_eval *ev = ctx;
  const stats_col *c = eval_col(ev, ref);
  if (!c) return false;
  *out = c->nulls[ev->i];
  return *out >= 0;
}

static bool arr_value(const void *ctx, const dk_colref *ref, bool is_max, dk_stat_value *out) {
  const dk_scan__stats_eval *ev = ctx;
  const stats_col *c = eval_col(ev, ref);
  if (!c) return false;
  int m = is_max;
  int64_t i = ev->i;
  unsigned has = c->has[m][i];
  if (!has) return false;
  out->has = has;
  int64_t v = c->v[m][i];
  if (has & (DK_STAT_INT | DK_STAT_BOOL)) {
    out->i = v;
    out->b = v != 0;
    if (has & DK_STAT_DBL) out->d = (double)v;
  } else if (has & DK_STAT_DBL) {
    memcpy(&out->d, &v, sizeof out->d);
  }
  if (has & DK_STAT_DEC) out->dec = c->dec[m][i];
  if (has & DK_STAT_STR) {
    out->s = c->heap ? c->heap + c->soff[m][i] : ""; /* (no heap: every string is empty) */
    out->len = c->slen[m][i];
  }
  return true;
}

dk_skip_result dk_scan__stats_skip(dk_scan__stats_eval *ev, int64_t i) {
  if (!ev->t->parsed[i]) return DK_SKIP_MUST_READ;
  ev->i = i;
  dk_stats_provider p = {ev, arr_num_rows, arr_null_count, arr_value, false};
  return dk_expr__skip_stats(ev->bound, &p);
}
