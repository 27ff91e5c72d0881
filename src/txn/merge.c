/*
** merge.c — MERGE INTO (delta-spark commands/MergeIntoCommand.scala, merge/ClassicMergeExecutor
** with deletion vectors; PROTOCOL.md "Deletion Vectors"; write-path.md §1.5, §4).
**
** 1. The source stream is materialized (its batches kept) and hashed on the merge keys: the
**    `t.a = s.b AND ...` equalities of the condition, both sides cast to the type Spark
**    compares them as (src/expr/value.c); a NULL key matches nothing.
** 2. The target files are read (the whole table is recorded as read, as delta-spark's
**    findTouchedFiles records it). Without NOT MATCHED BY SOURCE clauses the files are first
**    pruned by the source's keys: each key `t.col = s.x` of an integer, date, timestamp or
**    string type gives `col IN (the values of s.x)` when they are few, else
**    `col BETWEEN min(s.x) AND max(s.x)`, and a file whose partition values or statistics
**    rule that out is neither read nor rewritten (a source without a non-NULL key reads no
**    file); and each file is read on the table's executor, several at once, in two passes:
**    its key columns, looked up in the source's keys, then only the rows found, with only the
**    columns the clauses read (fast_*); the files are then joined in order. With NOT MATCHED
**    BY SOURCE every file is read whole (all columns + _metadata.row_index), one by one.
**    Per batch each row's key is looked up: matched rows are grouped by source batch and joined into batches `struct<t: target row, s: source row>`, on which the
**    clauses' conditions and values are evaluated as dk expressions (`t.id`, `s.v`); unmatched
**    target rows meet the NOT MATCHED BY SOURCE clauses with a NULL source side. The first
**    clause of a kind whose condition is TRUE applies: UPDATE writes the row with its new
**    values to a new file and marks the old one in the file's DV; DELETE only marks it.
**    A target row with two source matches is Spark's
**    DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE error (unless the only MATCHED
**    clause is an unconditional DELETE).
** 3. Source rows no target row matched meet the NOT MATCHED clauses (INSERT), with a NULL
**    target side.
** New rows reach dk_txn_write as one Arrow stream (partitioning, stats, constraints); the DVs
** are dml.c's (one DV file per commit, wide-bound stats, files with no row left removed).
** The commit is MERGE with Spark's operationParameters and operationMetrics.
**
** With the change data feed on, every change is also change data (update_preimage /
** update_postimage, delete, insert rows), kept in memory until the new files are written, then
** written as cdc files (MergeIntoCommand with CDC).
**
** Without deletion vectors (copy-on-write, as delta-spark's ClassicMergeExecutor rewrites), a
** target file any of whose rows was updated or deleted is removed and read again, batch by
** batch, for its other rows, which are written again (numTargetRowsCopied).
** With row tracking the written rows carry the materialized row id and row commit version
** columns: an updated or copied row keeps its row id, a copied row its commit version, an
** updated one takes this commit's (NULL); an inserted row gets fresh ones.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "arrow/array.h"
#include "expr/expr.h"
#include "scan/scan_int.h"
#include "txn/dml_int.h"
#include "util/exec.h"

#define MAX_KEYS 16
#define DUP_BIT (1ULL << 63)

typedef struct mclause {
  const dk_merge_clause *c;
  dk_expr *cond;          /* bound predicate over the joined schema, or NULL */
  dk_expr **vals;         /* UPDATE / INSERT: per target column, bound value */
} mclause;

struct mg;

/* One target file of the parallel read (see fast_*): read by a task of the table's executor. */
typedef struct mslot {
  struct mg *g;
  dk_file_entry fe;           /* the file (its stats left out: not needed to read it) */
  int64_t nrec;               /* physical rows: stats, else the footer (set by the task) */
  int busy;                   /* submitted, not joined */
  dk__task task;
  struct ArrowArray *b;       /* its rows whose key the source holds (table columns + _metadata) */
  size_t n, cap;
  dk_status st;
  dk_error err;
} mslot;

typedef struct mg {
  dml_ctx *c;
  dk_txn *x;
  const dk_merge_spec *sp;
  const char *ta, *sa;
  /* schemas */
  struct ArrowSchema src;     /* the source's */
  struct ArrowSchema tgt;     /* reader batches: table columns + _metadata */
  struct ArrowSchema out;     /* the table columns */
  struct ArrowSchema wout;    /* the written rows: table columns + row tracking columns */
  struct ArrowSchema joined;  /* struct<ta: tgt, sa: src> */
  struct ArrowSchema tonly, sonly;
  size_t n_cols;              /* table columns */
  size_t n_out;               /* written columns: n_cols + 2 with row tracking, else n_cols */
  dk_atype *types;            /* per written column */
  int cow;                    /* copy-on-write: a touched file's other rows are copied */
  /* keys */
  size_t n_keys;
  dk_expr *tkey[MAX_KEYS], *skey[MAX_KEYS];
  dk_atype ktype[MAX_KEYS];
  const char *kcol[MAX_KEYS]; /* the target column of key i (`t.col`), or NULL */
  /* clauses */
  mclause *cl;
  size_t n_cl;
  int has_matched, has_nmbs, has_nm, delete_only;
  /* the source */
  struct ArrowArray *sb;
  size_t n_sb, cap_sb;
  uint8_t **smatched;         /* per source batch, per row */
  dk_hmap keys;               /* key bytes -> (batch << 32 | row) + 1, DUP_BIT when repeated */
  /* a bit per hash of the source keys (top kbits_log2 bits of dk__hash_bytes): most target
   * rows that match nothing are told apart here, in a cache-sized bitmap, without probing
   * the hash map */
  uint64_t *kbits;
  unsigned kbits_log2;
  /* the target */
  dk_scan__file_reader *rd;
  dk_file_iter *it;
  int64_t *idx, n_idx, next;
  dk_scan__file *cur;
  int64_t cur_idx, cur_nrec, cur_size;
  int64_t *dv, n_dv, cap_dv;  /* rows of the current file that go */
  dk_scan__file *cp;          /* copy-on-write: the touched file read again for its other rows */
  dk_file_entry cp_fe;        /* its entry (dk_snapshot_file: lives with the snapshot) */
  int inserts_done;
  /* the parallel read (no NOT MATCHED BY SOURCE clause: only the target rows a source key
   * matches matter). Per file a task of the table's executor reads the key columns alone,
   * finds the rows whose key the source holds, then reads only those rows, with only the
   * columns the clauses use (the others null); the files are joined in order (fast_file), so
   * the result is the sequential one. */
  int fast;                   /* copy-on-write too: a touched file is then read again (g->cp) */
  dk_scan__file_reader *krd;  /* the key columns + _metadata.row_index */
  dk_scan__file_reader *brd;  /* the clauses' columns + the reader's _metadata (NULL: rd) */
  struct ArrowSchema konly;   /* struct<ta: krd's batch> */
  dk_expr *kkey[MAX_KEYS];    /* tkey bound to konly */
  int64_t *bsrc;              /* per table column: its child in brd's batches, -1 none */
  dk__exec *ex;
  mslot *slots;
  size_t n_slots;
  int64_t submitted, consumed;
  /* output queue */
  struct ArrowArray *q;
  size_t q_head, q_len, q_cap;
  /* change data (delta.enableChangeDataFeed): batches of the table's columns + _change_type */
  int cdf;
  struct ArrowSchema cdc_schema;
  struct ArrowArray *cq;
  size_t cq_len, cq_cap, cq_next;
  dk_buf kb;
  dk_error err;
  dk_status st;
  /* metrics */
  int64_t m_upd, m_nmbs_upd, m_del, m_nmbs_del, m_ins, m_src, m_copied;
} mg;

/* ---- small arrays ---------------------------------------------------------------------------- */

/* A struct array of n rows over children kids[0..nk), which it takes over (on failure too). */
static dk_status wrap_struct(struct ArrowArray *out, struct ArrowArray *kids, size_t nk,
                             int64_t n, const dk_allocator *al, dk_error *err) {
  static const void *const no_buffers[1] = {NULL};
  return dk__array_wrap(out, n, 0, 0, 1, no_buffers, (int64_t)nk, kids, NULL, NULL, al, err);
}

/* A struct array of n rows over children a (and b), which it takes over. */
static dk_status make_struct(struct ArrowArray *out, struct ArrowArray *a, struct ArrowArray *b,
                             int64_t n, const dk_allocator *al, dk_error *err) {
  struct ArrowArray kids[2];
  memset(kids, 0, sizeof kids);
  dk__array_move(a, &kids[0]);
  if (b) dk__array_move(b, &kids[1]);
  return wrap_struct(out, kids, b ? 2 : 1, n, al, err);
}

/* A borrowed view of batch b (released without freeing b). */
static struct ArrowArray borrow(const struct ArrowArray *b) {
  struct ArrowArray v = *b;
  v.release = dk__array_release_borrowed;
  return v;
}

static dk_status side_schema(struct ArrowSchema *out, const struct ArrowSchema *src,
                             const char *name, int64_t n, dk_error *err) {
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(out, &st, name, ARROW_FLAG_NULLABLE, n, err));
  for (int64_t i = 0; i < n; i++) {
    DK_RETURN_NOT_OK(dk__schema_copy(out->children[i], src->children[i], err));
  }
  return DK_OK;
}

static dk_status wrap_schema(struct ArrowSchema *out, const struct ArrowSchema *a,
                             const struct ArrowSchema *b, dk_error *err) {
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(out, &st, "", 0, b ? 2 : 1, err));
  DK_RETURN_NOT_OK(dk__schema_copy(out->children[0], a, err));
  if (b) {
    DK_RETURN_NOT_OK(dk__schema_copy(out->children[1], b, err));
  }
  return DK_OK;
}

/* ---- keys ------------------------------------------------------------------------------------ */

/* Bytes a key part of type t takes (strings: their length word; 0: not a key type). */
static size_t key_width(const dk_atype *t) {
  switch (t->id) {
    case DK_AT_BOOL: case DK_AT_INT8: return 1;
    case DK_AT_INT16: return 2;
    case DK_AT_INT32: case DK_AT_DATE32: case DK_AT_FLOAT: return 4;
    case DK_AT_INT64: case DK_AT_TIMESTAMP: case DK_AT_DOUBLE: return 8;
    case DK_AT_DECIMAL128: return 16;
    case DK_AT_STRING: case DK_AT_BINARY: return 4;
    default: return 0;
  }
}

/* Appends row r of a (type t, as dk_expr__eval_value builds it) to the key, into room reserved
** in k (key_width, plus the bytes of a string); false: NULL. */
static bool key_put(dk_buf *k, const struct ArrowArray *a, const dk_atype *t, int64_t r) {
  int64_t i = a->offset + r;
  const uint8_t *valid = a->null_count ? a->buffers[0] : NULL;
  if (valid && !dk__bit_get(valid, i)) return false;
  const uint8_t *v = a->buffers[1];
  char *out = k->data + k->len;
  size_t w = key_width(t);
  switch (t->id) {
    case DK_AT_BOOL: out[0] = (char)dk__bit_get(v, i); break;
    case DK_AT_FLOAT: {
      float f;
      memcpy(&f, v + 4 * i, 4);
      if (f == 0) f = 0; /* -0.0 = 0.0 */
      if (isnan(f)) f = NAN;
      memcpy(out, &f, 4);
      break;
    }
    case DK_AT_DOUBLE: {
      double d;
      memcpy(&d, v + 8 * i, 8);
      if (d == 0) d = 0;
      if (isnan(d)) d = NAN;
      memcpy(out, &d, 8);
      break;
    }
    case DK_AT_STRING:
    case DK_AT_BINARY: {
      const int32_t *o = a->buffers[1];
      uint32_t len = (uint32_t)(o[i + 1] - o[i]);
      memcpy(out, &len, 4);
      memcpy(out + 4, (const char *)a->buffers[2] + o[i], len);
      w += len;
      break;
    }
    default: memcpy(out, v + w * i, w); break;
  }
  k->len += w;
  return w > 0;
}

/* The keys of batch `b` (rows 0..n) wrapped as struct<side: b>: per row its key bytes in kb at
** koff[r] (length klen[r]; -1: a NULL key). */
typedef struct keys {
  int64_t *off, *len;
  dk_buf bytes;
} keys; /* off and len are allocated with bytes.alloc; nothing is held after a failure */

static void keys_dispose(keys *k) {
  dk__free(k->bytes.alloc, k->off);
  dk__free(k->bytes.alloc, k->len);
  dk__buf_dispose(&k->bytes);
  memset(k, 0, sizeof *k);
}

static dk_status eval_keys(mg *g, keys *k, dk_expr *const *bound, const struct ArrowSchema *ws,
                           const struct ArrowArray *b, int64_t n, dk_error *err) {
  (void)ws;
  struct ArrowArray view = borrow(b), w;
  DK_RETURN_NOT_OK(make_struct(&w, &view, NULL, n, g->c->alloc, err));
  struct ArrowArray ka[MAX_KEYS];
  memset(ka, 0, sizeof ka);
  dk_status st = DK_OK;
  for (size_t i = 0; i < g->n_keys && !st; i++)
    st = dk_expr__eval_value(&ka[i], bound[i], &g->ktype[i], "MERGE key", &w, g->c->alloc, err);
  dk__buf_init(&k->bytes, g->c->alloc);
  k->off = st ? NULL : dk__calloc(g->c->alloc, (size_t)(n ? n : 1), sizeof *k->off);
  k->len = st ? NULL : dk__calloc(g->c->alloc, (size_t)(n ? n : 1), sizeof *k->len);
  if (!st && (!k->off || !k->len)) st = dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  /* room for every row's key: the parts' widths and the strings' bytes */
  size_t need = 0;
  for (size_t i = 0; i < g->n_keys && !st; i++) {
    need += key_width(&g->ktype[i]) * (size_t)n;
    if ((g->ktype[i].id == DK_AT_STRING || g->ktype[i].id == DK_AT_BINARY) && n) {
      const int32_t *o = ka[i].buffers[1];
      need += (size_t)(o[ka[i].offset + n] - o[ka[i].offset]);
    }
  }
  if (!st) st = dk__buf_reserve(&k->bytes, need, err);
  for (int64_t r = 0; r < n && !st; r++) {
    size_t start = k->bytes.len;
    bool ok = true;
    for (size_t i = 0; i < g->n_keys && ok; i++) ok = key_put(&k->bytes, &ka[i], &g->ktype[i], r);
    k->off[r] = (int64_t)start;
    k->len[r] = ok ? (int64_t)(k->bytes.len - start) : -1;
    if (!ok) k->bytes.len = start;
  }
  for (size_t i = 0; i < g->n_keys; i++) dk__array_release(&ka[i]);
  w.release(&w);
  if (st) keys_dispose(k);
  return st;
}

/* ---- source ---------------------------------------------------------------------------------- */

static dk_status load_source(mg *g, dk_error *err) {
  struct ArrowArrayStream *s = g->sp->source;
  for (;;) {
    struct ArrowArray b;
    memset(&b, 0, sizeof b);
    if (s->get_next(s, &b) != 0) {
      const char *m = s->get_last_error ? s->get_last_error(s) : NULL;
      return dk__error_set(err, DK_CALLBACK, "MERGE: the source stream failed: %s", m ? m : "");
    }
    if (!b.release) break;
    if (b.length == 0) {
      b.release(&b);
      continue;
    }
    if (g->n_sb == g->cap_sb) {
      size_t nc = g->cap_sb ? 2 * g->cap_sb : 8;
      struct ArrowArray *q = dk__realloc(g->c->alloc, g->sb, nc * sizeof *q);
      uint8_t **m = dk__realloc(g->c->alloc, g->smatched, nc * sizeof *m);
      if (q) g->sb = q;
      if (m) g->smatched = m;
      if (!q || !m) {
        b.release(&b);
        return dk__error_set(err, DK_NOMEM, "out of memory (MERGE source)");
      }
      g->cap_sb = nc;
    }
    DK_RETURN_IF(g->n_sb >= 0x7fffffff, DK_UNSUPPORTED, err, "MERGE: too many source batches");
    g->smatched[g->n_sb] = dk__calloc(g->c->alloc, (size_t)b.length, 1);
    dk__array_move(&b, &g->sb[g->n_sb++]);
    if (!g->smatched[g->n_sb - 1]) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    g->m_src += g->sb[g->n_sb - 1].length;
  }
  g->kbits_log2 = 16; /* 32 bits a source row: under 1 in 30 misses passes */
  while (g->kbits_log2 < 27 && ((int64_t)1 << g->kbits_log2) < 32 * g->m_src) g->kbits_log2++;
  g->kbits = dk__calloc(g->c->alloc, ((size_t)1 << g->kbits_log2) / 64, sizeof *g->kbits);
  if (!g->kbits) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  for (size_t bi = 0; bi < g->n_sb; bi++) {
    keys k;
    memset(&k, 0, sizeof k);
    dk_status st = eval_keys(g, &k, g->skey, &g->sonly, &g->sb[bi], g->sb[bi].length, err);
    for (int64_t r = 0; r < g->sb[bi].length && !st; r++) {
      if (k.len[r] < 0) continue;
      uint64_t h = dk__hash_bytes(k.bytes.data + k.off[r], (size_t)k.len[r]) >>
                   (64 - g->kbits_log2);
      g->kbits[h >> 6] |= 1ULL << (h & 63);
      uint64_t *v;
      bool ins;
      st = dk__hmap_upsert(&g->keys, k.bytes.data + k.off[r], (size_t)k.len[r], &v, &ins, err);
      if (st) break;
      if (ins) *v = (((uint64_t)bi << 32) | (uint64_t)r) + 1;
      else *v |= DUP_BIT;
    }
    keys_dispose(&k);
    if (st) return st;
  }
  return DK_OK;
}

/* ---- clauses --------------------------------------------------------------------------------- */

static dk_status queue_push(mg *g, struct ArrowArray *a, dk_error *err) {
  if (g->q_head + g->q_len == g->q_cap) {
    if (g->q_head) {
      memmove(g->q, g->q + g->q_head, g->q_len * sizeof *g->q);
      g->q_head = 0;
    } else {
      size_t nc = g->q_cap ? 2 * g->q_cap : 8;
      struct ArrowArray *q = dk__realloc(g->c->alloc, g->q, nc * sizeof *q);
      if (!q) {
        a->release(a);
        return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
      }
      g->q = q;
      g->q_cap = nc;
    }
  }
  dk__array_move(a, &g->q[g->q_head + g->q_len++]);
  return DK_OK;
}

static dk_status note_dv(mg *g, int64_t row, dk_error *err) {
  if (g->n_dv == g->cap_dv) {
    size_t nc = g->cap_dv ? 2 * (size_t)g->cap_dv : 256;
    int64_t *p = dk__realloc(g->c->alloc, g->dv, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    g->dv = p;
    g->cap_dv = (int64_t)nc;
  }
  g->dv[g->n_dv++] = row;
  return DK_OK;
}

/* A struct of the first n children of `cols` (a struct array of m rows whose first n children
** are the table's columns, as g->out describes them) plus a constant _change_type: queued as
** change data. */
static dk_status queue_cdc(mg *g, const struct ArrowArray *cols, const char *type, int64_t m,
                           dk_error *err) {
  const dk_allocator *al = g->c->alloc;
  size_t n = g->n_cols;
  int64_t *ident = dk__malloc(al, (size_t)(m ? m : 1) * sizeof *ident);
  struct ArrowArray *kids = dk__calloc(al, n + 1, sizeof *kids);
  struct ArrowArray taken;
  memset(&taken, 0, sizeof taken);
  dk_status st = ident && kids ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
  for (int64_t r = 0; r < m && !st; r++) ident[r] = r;
  if (!st) st = dk_scan__take(&taken, &g->out, cols, ident, m, al, err);
  dk_arr a;
  dk_atype str = dk__atype_make(DK_AT_STRING);
  bool a_init = false;
  if (!st) st = dk__arr_init(&a, &str, al, err);
  if (!st) a_init = true;
  for (int64_t r = 0; r < m && !st; r++)
    st = dk__arr_append_bytes(&a, type, (int64_t)strlen(type), err);
  if (!st) st = dk__arr_finish(&a, &kids[n], err);
  if (a_init) dk__arr_reset(&a);
  dk__free(al, ident);
  if (st) {
    dk__array_release(&taken);
    dk__free(al, kids);
    return st;
  }
  /* the taken columns move into the new struct */
  for (size_t c = 0; c < n; c++) dk__array_move(taken.children[c], &kids[c]);
  taken.release(&taken);
  struct ArrowArray out;
  st = wrap_struct(&out, kids, n + 1, m, al, err);
  dk__free(al, kids);
  if (st) return st;
  if (g->cq_len == g->cq_cap) {
    size_t nc = g->cq_cap ? 2 * g->cq_cap : 8;
    struct ArrowArray *q = dk__realloc(g->c->alloc, g->cq, nc * sizeof *q);
    if (!q) {
      out.release(&out);
      return dk__error_set(err, DK_NOMEM, "out of memory (MERGE change data)");
    }
    g->cq = q;
    g->cq_cap = nc;
  }
  dk__array_move(&out, &g->cq[g->cq_len++]);
  return DK_OK;
}

/* The rows written for clause cl over joined batch j (rows sel[0..m)). */
static dk_status emit(mg *g, const mclause *cl, const struct ArrowArray *j, const int64_t *sel,
                      int64_t m, dk_error *err) {
  const dk_allocator *al = g->c->alloc;
  struct ArrowArray sub;
  DK_RETURN_NOT_OK(dk_scan__take(&sub, &g->joined, j, sel, m, al, err));
  size_t n = g->n_out;
  struct ArrowArray *kids = dk__calloc(al, n ? n : 1, sizeof *kids);
  dk_status st = kids ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  for (size_t c = 0; c < n && !st; c++)
    st = dk_expr__eval_value(&kids[c], cl->vals[c], &g->types[c], g->wout.children[c]->name,
                             &sub, al, err);
  sub.release(&sub);
  if (st) {
    for (size_t c = 0; kids && c < n; c++) dk__array_release(&kids[c]);
    dk__free(al, kids);
    return st;
  }
  struct ArrowArray out;
  st = wrap_struct(&out, kids, n, m, al, err);
  dk__free(al, kids);
  if (st) return st;
  if (g->cdf) {
    st = queue_cdc(g, &out,
                   cl->c->action == DK_MERGE_INSERT ? "insert" : "update_postimage", m, err);
    if (st) {
      out.release(&out);
      return st;
    }
  }
  return queue_push(g, &out, err);
}

/* Applies the clauses of kind `when` to joined batch j (m rows; trow[i]: the target row's
** physical index, -1 for source-only rows). */
static dk_status apply(mg *g, dk_merge_when when, const struct ArrowArray *j, const int64_t *trow,
                       int64_t m, dk_error *err) {
  if (m == 0) return DK_OK;
  uint8_t *left = dk__malloc(g->c->alloc, (size_t)m), *mask = dk__malloc(g->c->alloc, (size_t)m);
  int64_t *sel = dk__malloc(g->c->alloc, (size_t)m * sizeof *sel);
  dk_status st = left && mask && sel ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
  if (!st) memset(left, 1, (size_t)m);
  for (size_t k = 0; k < g->n_cl && !st; k++) {
    const mclause *cl = &g->cl[k];
    if (cl->c->when != when) continue;
    if (cl->cond) st = dk_expr_eval_filter(mask, NULL, cl->cond, &g->joined, j, err);
    else memset(mask, 1, (size_t)m);
    int64_t n = 0;
    for (int64_t r = 0; r < m && !st; r++)
      if (left[r] && mask[r]) {
        left[r] = 0;
        sel[n++] = r;
      }
    if (st || !n) continue;
    if (cl->c->action != DK_MERGE_INSERT)
      for (int64_t i = 0; i < n && !st; i++) st = note_dv(g, trow[sel[i]], err);
    if (!st && g->cdf && cl->c->action != DK_MERGE_INSERT) { /* the target rows as they were */
      struct ArrowArray tv;
      st = dk_scan__take(&tv, g->joined.children[0], j->children[0], sel, n, g->c->alloc, err);
      if (!st) {
        st = queue_cdc(g, &tv, cl->c->action == DK_MERGE_DELETE ? "delete" : "update_preimage",
                       n, err);
        tv.release(&tv);
      }
    }
    if (!st && cl->c->action != DK_MERGE_DELETE) st = emit(g, cl, j, sel, n, err);
    int64_t *cnt = cl->c->action == DK_MERGE_INSERT ? &g->m_ins
                   : cl->c->action == DK_MERGE_DELETE
                       ? (when == DK_MERGE_MATCHED ? &g->m_del : &g->m_nmbs_del)
                       : (when == DK_MERGE_MATCHED ? &g->m_upd : &g->m_nmbs_upd);
    *cnt += n;
  }
  dk__free(g->c->alloc, left);
  dk__free(g->c->alloc, mask);
  dk__free(g->c->alloc, sel);
  return st;
}

/* Joins target rows tsel of batch b with source rows ssel of source batch sbi (NULL: a NULL
** source side; tsel NULL: a NULL target side) into *out. */
static dk_status join(mg *g, struct ArrowArray *out, const struct ArrowArray *b,
                      const int64_t *tsel, const struct ArrowArray *s, const int64_t *ssel,
                      int64_t m, dk_error *err) {
  struct ArrowArray ta, sa;
  memset(&ta, 0, sizeof ta);
  memset(&sa, 0, sizeof sa);
  dk_status st = tsel ? dk_scan__take(&ta, g->joined.children[0], b, tsel, m, g->c->alloc, err)
                      : dk_scan__null_array(&ta, g->joined.children[0], m, g->c->alloc, err);
  if (!st)
    st = ssel ? dk_scan__take(&sa, g->joined.children[1], s, ssel, m, g->c->alloc, err)
              : dk_scan__null_array(&sa, g->joined.children[1], m, g->c->alloc, err);
  if (st) {
    dk__array_release(&ta);
    dk__array_release(&sa);
    return st;
  }
  return make_struct(out, &ta, &sa, m, g->c->alloc, err);
}

static int64_t row_index_at(const struct ArrowArray *b, int64_t r) {
  const struct ArrowArray *meta = b->children[b->n_children - 1];
  const struct ArrowArray *ri = meta->children[0];
  return ((const int64_t *)ri->buffers[1])[ri->offset + meta->offset + b->offset + r];
}

/* One target batch: lookups, the MATCHED clauses per source batch, NOT MATCHED BY SOURCE. */
static dk_status target_batch(mg *g, const struct ArrowArray *b, dk_error *err) {
  int64_t n = b->length;
  keys k;
  memset(&k, 0, sizeof k);
  DK_RETURN_NOT_OK(eval_keys(g, &k, g->tkey, &g->tonly, b, n, err));
  uint64_t *hit = dk__calloc(g->c->alloc, (size_t)(n ? n : 1), sizeof *hit);
  int64_t *tsel = dk__malloc(g->c->alloc, (size_t)(n ? n : 1) * sizeof *tsel);
  int64_t *ssel = dk__malloc(g->c->alloc, (size_t)(n ? n : 1) * sizeof *ssel);
  int64_t *trow = dk__malloc(g->c->alloc, (size_t)(n ? n : 1) * sizeof *trow);
  dk_status st = hit && tsel && ssel && trow ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
  int64_t n_hit = 0;
  for (int64_t r = 0; r < n && !st; r++) {
    if (k.len[r] < 0) continue;
    uint64_t h = dk__hash_bytes(k.bytes.data + k.off[r], (size_t)k.len[r]) >>
                 (64 - g->kbits_log2);
    if (!((g->kbits[h >> 6] >> (h & 63)) & 1)) continue;
    uint64_t *v = dk__hmap_get(&g->keys, k.bytes.data + k.off[r], (size_t)k.len[r]);
    if (!v) continue;
    if ((*v & DUP_BIT) && g->has_matched && !g->delete_only)
      st = dk__error_set(err, DK_INVALID,
                         "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] MERGE: a target "
                         "row (row %lld of a file) matches more than one source row; the MERGE "
                         "would update or delete it twice",
                         (long long)row_index_at(b, r));
    hit[r] = *v & ~DUP_BIT;
    n_hit++;
  }
  /* MATCHED, per source batch (hits sorted by source batch in one pass per batch seen) */
  for (size_t bi = 0; bi < g->n_sb && !st && n_hit; bi++) {
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++)
      if (hit[r] && ((hit[r] - 1) >> 32) == bi) {
        tsel[m] = r;
        ssel[m] = (int64_t)((hit[r] - 1) & 0xffffffffu);
        trow[m] = row_index_at(b, r);
        g->smatched[bi][ssel[m]] = 1;
        m++;
      }
    if (!m || !g->has_matched) continue;
    struct ArrowArray j;
    st = join(g, &j, b, tsel, &g->sb[bi], ssel, m, err);
    if (!st) {
      st = apply(g, DK_MERGE_MATCHED, &j, trow, m, err);
      j.release(&j);
    }
  }
  if (!st && g->has_nmbs) {
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++)
      if (!hit[r]) {
        tsel[m] = r;
        trow[m] = row_index_at(b, r);
        m++;
      }
    if (m) {
      struct ArrowArray j;
      st = join(g, &j, b, tsel, NULL, NULL, m, err);
      if (!st) {
        st = apply(g, DK_MERGE_NOT_MATCHED_BY_SOURCE, &j, trow, m, err);
        j.release(&j);
      }
    }
  }
  dk__free(g->c->alloc, hit);
  dk__free(g->c->alloc, tsel);
  dk__free(g->c->alloc, ssel);
  dk__free(g->c->alloc, trow);
  keys_dispose(&k);
  return st;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Copy-on-write: the rows of batch b (of the touched file read again) that no clause changed
** (g->dv, sorted), queued to be written again as they are (with their row tracking columns). */
static dk_status copy_rows(mg *g, const struct ArrowArray *b, dk_error *err) {
  int64_t n = b->length, m = 0;
  int64_t *sel = dk__malloc(g->c->alloc, (size_t)(n ? n : 1) * sizeof *sel);
  if (!sel) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  for (int64_t r = 0; r < n; r++) {
    int64_t ri = row_index_at(b, r);
    if (!bsearch(&ri, g->dv, (size_t)g->n_dv, sizeof *g->dv, cmp_i64)) sel[m++] = r;
  }
  struct ArrowArray taken;
  memset(&taken, 0, sizeof taken);
  dk_status st = m ? dk_scan__take(&taken, &g->tgt, b, sel, m, g->c->alloc, err) : DK_OK;
  dk__free(g->c->alloc, sel);
  if (st || !m) return st;
  g->m_copied += m;
  size_t nk = g->n_out;
  struct ArrowArray *kids = dk__calloc(g->c->alloc, nk ? nk : 1, sizeof *kids);
  if (!kids) {
    taken.release(&taken);
    return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  }
  /* the table's columns, then _metadata.row_id / row_commit_version, moved out of taken */
  struct ArrowArray *meta = taken.children[g->n_cols];
  for (size_t c = 0; c < nk; c++)
    dk__array_move(c < g->n_cols ? taken.children[c] : meta->children[c - g->n_cols + 1],
                   &kids[c]);
  taken.release(&taken);
  struct ArrowArray out;
  st = wrap_struct(&out, kids, nk, m, g->c->alloc, err);
  dk__free(g->c->alloc, kids);
  return st ? st : queue_push(g, &out, err);
}

/* The current target file's rows that go (g->dv) become a DV, or under copy-on-write its
** removal (its other rows were copied). */
static dk_status finish_target(mg *g, dk_error *err) {
  dk_status st = DK_OK;
  if (g->n_dv) {
    qsort(g->dv, (size_t)g->n_dv, sizeof *g->dv, cmp_i64);
    st = dk_txn__dml_touch(g->c, g->cur_idx, g->cur_nrec, g->cow ? NULL : g->dv, g->n_dv, err);
    g->c->m->num_removed_bytes += g->cur_size;
  }
  g->n_dv = 0;
  return st;
}

/* Finishes the current target file once its rows met the clauses. Under copy-on-write a file
** that lost or changed any row is read again (g->cp), and step copies its other rows batch by
** batch before finish_target: no more than a batch of the file is held. */
static dk_status close_target(mg *g, dk_error *err) {
  dk_scan__file_close(g->cur);
  g->cur = NULL;
  if (!g->cow || !g->n_dv) return finish_target(g, err);
  qsort(g->dv, (size_t)g->n_dv, sizeof *g->dv, cmp_i64);
  DK_RETURN_NOT_OK(dk_snapshot_file(&g->cp_fe, g->x->snap, g->cur_idx, err));
  return dk_scan__file_open(&g->cp, g->rd, &g->cp_fe, err);
}

/* The NOT MATCHED clauses over every source row no target row matched. */
static dk_status inserts(mg *g, dk_error *err) {
  dk_status st = DK_OK;
  for (size_t bi = 0; bi < g->n_sb && !st; bi++) {
    int64_t n = g->sb[bi].length, m = 0;
    int64_t *ssel = dk__malloc(g->c->alloc, (size_t)n * sizeof *ssel);
    int64_t *trow = dk__malloc(g->c->alloc, (size_t)n * sizeof *trow);
    if (!ssel || !trow) st = dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    for (int64_t r = 0; r < n && !st; r++)
      if (!g->smatched[bi][r]) {
        trow[m] = -1;
        ssel[m++] = r;
      }
    if (!st && m) {
      struct ArrowArray j;
      st = join(g, &j, NULL, NULL, &g->sb[bi], ssel, m, err);
      if (!st) {
        st = apply(g, DK_MERGE_NOT_MATCHED, &j, trow, m, err);
        j.release(&j);
      }
    }
    dk__free(g->c->alloc, ssel);
    dk__free(g->c->alloc, trow);
  }
  return st;
}

/* ---- the parallel read ----------------------------------------------------------------------- */

/* A batch of brd in the layout of rd's (the columns brd does not read as nulls); takes b. */
static dk_status fast_expand(mg *g, struct ArrowArray *out, struct ArrowArray *b, dk_error *err) {
  if (!g->bsrc) {
    dk__array_move(b, out);
    return DK_OK;
  }
  const dk_allocator *al = g->c->alloc;
  size_t n = g->n_cols + 1;
  int64_t m = b->length;
  struct ArrowArray *kids = dk__calloc(al, n, sizeof *kids);
  dk_status st = kids ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  for (size_t i = 0; i < g->n_cols && !st; i++) {
    if (g->bsrc[i] >= 0) dk__array_move(b->children[g->bsrc[i]], &kids[i]);
    else st = dk_scan__null_array(&kids[i], g->tgt.children[i], m, al, err);
  }
  if (!st) dk__array_move(b->children[b->n_children - 1], &kids[g->n_cols]); /* _metadata */
  b->release(b);
  if (st) {
    for (size_t i = 0; kids && i < n; i++) dk__array_release(&kids[i]);
    dk__free(al, kids);
    return st;
  }
  st = wrap_struct(out, kids, n, m, al, err);
  dk__free(al, kids);
  return st;
}

static dk_status slot_push(mslot *sl, struct ArrowArray *b, dk_error *err) {
  if (sl->n == sl->cap) {
    size_t nc = sl->cap ? 2 * sl->cap : 4;
    struct ArrowArray *p = dk__realloc(sl->g->c->alloc, sl->b, nc * sizeof *p);
    if (!p) {
      b->release(b);
      return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    }
    sl->b = p;
    sl->cap = nc;
  }
  dk__array_move(b, &sl->b[sl->n++]);
  return DK_OK;
}

/* Task: the rows of the slot's file whose key the source holds. The key columns are read
** first (the file's DV applied) and looked up; then only the rows found are read, with the
** columns the clauses use, into the slot's batches. Reads only what g fixed before the
** first task was submitted (the source's keys, readers, bound keys). */
static void fast_read(void *arg) {
  mslot *sl = arg;
  mg *g = sl->g;
  const dk_allocator *al = g->c->alloc;
  dk_error *err = &sl->err;
  dk_scan__file *f = NULL;
  dk_dv_builder *bld = NULL;
  dk_dv *sel = NULL;
  dk_buf rows, bm;
  dk__buf_init(&rows, al);
  dk__buf_init(&bm, al);
  dk_status st = dk_scan__file_open(&f, g->krd, &sl->fe, err);
  if (!st && sl->nrec < 0) sl->nrec = dk_scan__file_num_rows(f);
  while (!st) {
    struct ArrowArray b;
    st = dk_scan__file_next(&b, f, err);
    if (st || !b.release) break;
    keys k;
    memset(&k, 0, sizeof k);
    st = eval_keys(g, &k, g->kkey, &g->konly, &b, b.length, err);
    bool have = !st;
    if (!st) st = dk__buf_reserve(&rows, (size_t)b.length * sizeof(int64_t), err);
    for (int64_t r = 0; r < b.length && !st; r++) {
      if (k.len[r] < 0) continue;
      const char *kp = k.bytes.data + k.off[r];
      uint64_t h = dk__hash_bytes(kp, (size_t)k.len[r]) >> (64 - g->kbits_log2);
      if (!((g->kbits[h >> 6] >> (h & 63)) & 1)) continue;
      if (!dk__hmap_get(&g->keys, kp, (size_t)k.len[r])) continue;
      int64_t ri = row_index_at(&b, r);
      memcpy(rows.data + rows.len, &ri, sizeof ri);
      rows.len += sizeof ri;
    }
    if (have) keys_dispose(&k);
    b.release(&b);
  }
  dk_scan__file_close(f);
  f = NULL;
  size_t nh = rows.len / sizeof(int64_t);
  if (!st && nh) {
    st = dk_dv__builder_new(&bld, al, err);
    if (!st) st = dk_dv__builder_add(bld, (const int64_t *)(const void *)rows.data, nh, err);
    if (!st) st = dk_dv__builder_serialize(&bm, bld, err);
    if (!st) st = dk_dv__decode_bitmap(&sel, (const uint8_t *)bm.data, bm.len, al, err);
    if (!st) st = dk_scan__file_open_rows(&f, g->brd ? g->brd : g->rd, &sl->fe, sel, err);
  }
  while (!st && f) {
    struct ArrowArray b, e;
    st = dk_scan__file_next(&b, f, err);
    if (st || !b.release) break;
    st = fast_expand(g, &e, &b, err);
    if (!st) st = slot_push(sl, &e, err);
  }
  dk_scan__file_close(f);
  dk_dv__free(sel);
  dk_dv__builder_free(bld);
  dk__buf_dispose(&rows);
  dk__buf_dispose(&bm);
  sl->st = st;
}

/* Keeps up to n_slots files after the last one joined in flight. */
static dk_status fast_fill(mg *g, dk_error *err) {
  while (g->submitted < g->n_idx && g->submitted < g->consumed + (int64_t)g->n_slots) {
    mslot *sl = &g->slots[g->submitted % (int64_t)g->n_slots];
    const dk_file_entry *fe = NULL;
    DK_RETURN_NOT_OK(dk_file_iter_seek(g->it, g->idx[g->submitted], err));
    DK_RETURN_NOT_OK(dk_file_iter_next(&fe, g->it, err));
    sl->g = g;
    sl->fe = *fe;
    sl->fe.stats = NULL; /* the iterator's buffer; every other field lives with the snapshot */
    sl->nrec = dk_txn__stats_records(fe->stats);
    sl->st = DK_OK;
    dk_error_init(&sl->err);
    sl->busy = 1;
    dk__exec_submit(g->ex, &sl->task, fast_read, sl);
    g->submitted++;
  }
  return DK_OK;
}

/* The next file in order: joined, its rows met by the MATCHED clauses, finished. */
static dk_status fast_file(mg *g, dk_error *err) {
  DK_RETURN_NOT_OK(fast_fill(g, err));
  mslot *sl = &g->slots[g->consumed % (int64_t)g->n_slots];
  if (sl->busy) {
    dk__exec_join(g->ex, &sl->task);
    sl->busy = 0;
  }
  g->cur_idx = g->idx[g->consumed++];
  g->cur_nrec = sl->nrec;
  g->cur_size = sl->fe.size;
  dk_status st = sl->st;
  if (st) *err = sl->err;
  for (size_t i = 0; i < sl->n; i++) {
    if (!st) st = target_batch(g, &sl->b[i], err);
    dk__array_release(&sl->b[i]);
  }
  sl->n = 0;
  return st ? st : close_target(g, err);
}

/* Produces output until the queue has a batch or everything is done. */
static dk_status step(mg *g, dk_error *err) {
  while (!g->q_len) {
    if (g->cp) { /* copy-on-write: the touched file's other rows */
      struct ArrowArray b;
      DK_RETURN_NOT_OK(dk_scan__file_next(&b, g->cp, err));
      if (!b.release) {
        dk_scan__file_close(g->cp);
        g->cp = NULL;
        DK_RETURN_NOT_OK(finish_target(g, err));
        continue;
      }
      dk_status st = copy_rows(g, &b, err);
      b.release(&b);
      if (st) return st;
      continue;
    }
    if (g->fast && g->consumed < g->n_idx && (g->has_matched || g->has_nm)) {
      DK_RETURN_NOT_OK(fast_file(g, err));
      continue;
    }
    if (g->cur) {
      struct ArrowArray b;
      DK_RETURN_NOT_OK(dk_scan__file_next(&b, g->cur, err));
      if (!b.release) {
        DK_RETURN_NOT_OK(close_target(g, err));
        continue;
      }
      dk_status st = target_batch(g, &b, err);
      b.release(&b);
      if (st) return st;
      continue;
    }
    if (!g->fast && g->next < g->n_idx && (g->has_matched || g->has_nmbs || g->has_nm)) {
      const dk_file_entry *fe = NULL;
      g->cur_idx = g->idx[g->next++];
      DK_RETURN_NOT_OK(dk_file_iter_seek(g->it, g->cur_idx, err));
      DK_RETURN_NOT_OK(dk_file_iter_next(&fe, g->it, err));
      DK_RETURN_NOT_OK(dk_scan__file_open(&g->cur, g->rd, fe, err));
      g->cur_nrec = dk_txn__stats_records(fe->stats);
      g->cur_size = fe->size;
      if (g->cur_nrec < 0) g->cur_nrec = dk_scan__file_num_rows(g->cur);
      continue;
    }
    if (!g->inserts_done) {
      g->inserts_done = 1;
      if (g->has_nm) DK_RETURN_NOT_OK(inserts(g, err));
      continue;
    }
    return DK_OK; /* the end */
  }
  return DK_OK;
}

static int s_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  mg *g = s->private_data;
  return dk__schema_copy(out, &g->wout, &g->err) ? EIO : 0;
}

static int s_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  mg *g = s->private_data;
  memset(out, 0, sizeof *out);
  g->st = step(g, &g->err);
  if (g->st) return EIO;
  if (!g->q_len) return 0;
  dk__array_move(&g->q[g->q_head++], out);
  g->q_len--;
  if (!g->q_len) g->q_head = 0;
  return 0;
}

static const char *s_last_error(struct ArrowArrayStream *s) {
  mg *g = s->private_data;
  return g->err.message;
}

static void s_release(struct ArrowArrayStream *s) { s->release = NULL; }

static int c_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  mg *g = s->private_data;
  return dk__schema_copy(out, &g->cdc_schema, &g->err) ? EIO : 0;
}

static int c_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  mg *g = s->private_data;
  memset(out, 0, sizeof *out);
  if (g->cq_next < g->cq_len) dk__array_move(&g->cq[g->cq_next++], out);
  return 0;
}

/* ---- setup ----------------------------------------------------------------------------------- */

static void mg_dispose(mg *g) {
  for (size_t i = 0; i < g->n_slots; i++) { /* the tasks first: they read the rest */
    mslot *sl = &g->slots[i];
    if (sl->busy) dk__exec_join(g->ex, &sl->task);
    for (size_t j = 0; j < sl->n; j++) dk__array_release(&sl->b[j]);
    dk__free(g->c->alloc, sl->b);
  }
  dk__free(g->c->alloc, g->slots);
  dk_scan__file_reader_free(g->krd);
  dk_scan__file_reader_free(g->brd);
  dk__schema_release(&g->konly);
  for (size_t i = 0; i < MAX_KEYS; i++) dk_expr_free(g->kkey[i]);
  dk__free(g->c->alloc, g->bsrc);
  if (g->cur) dk_scan__file_close(g->cur);
  dk_file_iter_free(g->it);
  dk_scan__file_reader_free(g->rd);
  for (size_t i = 0; i < MAX_KEYS; i++) { /* a half-bound key too */
    dk_expr_free(g->tkey[i]);
    dk_expr_free(g->skey[i]);
  }
  for (size_t k = 0; k < g->n_cl; k++) {
    dk_expr_free(g->cl[k].cond);
    for (size_t c = 0; g->cl[k].vals && c < g->n_out; c++) dk_expr_free(g->cl[k].vals[c]);
    dk__free(g->c->alloc, g->cl[k].vals);
  }
  dk__free(g->c->alloc, g->cl);
  for (size_t i = 0; i < g->n_sb; i++) {
    dk__array_release(&g->sb[i]);
    dk__free(g->c->alloc, g->smatched[i]);
  }
  dk__free(g->c->alloc, g->sb);
  dk__free(g->c->alloc, g->smatched);
  for (size_t i = 0; i < g->q_len; i++) dk__array_release(&g->q[g->q_head + i]);
  dk__free(g->c->alloc, g->q);
  for (size_t i = g->cq_next; i < g->cq_len; i++) dk__array_release(&g->cq[i]);
  dk__free(g->c->alloc, g->cq);
  dk__schema_release(&g->cdc_schema);
  dk__free(g->c->alloc, g->dv);
  dk__free(g->c->alloc, g->types);
  dk__hmap_dispose(&g->keys);
  dk__free(g->c->alloc, g->kbits);
  dk__schema_release(&g->src);
  dk__schema_release(&g->tgt);
  dk__schema_release(&g->out);
  dk__schema_release(&g->wout);
  dk_scan__file_close(g->cp);
  dk__schema_release(&g->joined);
  dk__schema_release(&g->tonly);
  dk__schema_release(&g->sonly);
  dk_free(g->idx);
}

/* The merge keys: `ta.x = sa.y` conjuncts (either order). */
static dk_status find_keys(mg *g, const dk_expr *e, dk_expr **tk, dk_expr **sk, size_t *n,
                           dk_error *err) {
  if (dk_expr_get_kind(e) == DK_EXPR_AND) {
    for (size_t i = 0; i < dk_expr_num_children(e); i++)
      DK_RETURN_NOT_OK(find_keys(g, dk_expr_child(e, i), tk, sk, n, err));
    return DK_OK;
  }
  const dk_expr *a = dk_expr_get_kind(e) == DK_EXPR_CMP ? dk_expr_child(e, 0) : NULL;
  const dk_expr *b = a ? dk_expr_child(e, 1) : NULL;
  bool cols = a && dk_expr_get_cmp_op(e) == DK_CMP_EQ && dk_expr_get_kind(a) == DK_EXPR_COLUMN &&
              dk_expr_get_kind(b) == DK_EXPR_COLUMN && dk_expr_column_depth(a) >= 2 &&
              dk_expr_column_depth(b) >= 2;
  const char *na = cols ? dk_expr_column_name(a, 0) : "", *nb = cols ? dk_expr_column_name(b, 0) : "";
  bool at = !strcasecmp(na, g->ta), bs = !strcasecmp(nb, g->sa);
  bool as = !strcasecmp(na, g->sa), bt = !strcasecmp(nb, g->ta);
  if (!cols || !((at && bs) || (as && bt))) {
    char *txt = NULL;
    if (dk_expr_to_string(&txt, e, NULL) != DK_OK) txt = NULL; /* the message names it if it can */
    dk_status st = dk__error_set(err, DK_UNSUPPORTED,
                                 "MERGE: the condition must be equalities %s.<column> = "
                                 "%s.<column> joined by AND; not '%s'",
                                 g->ta, g->sa, txt ? txt : "?");
    dk_expr_string_free(txt);
    return st;
  }
  DK_RETURN_IF(*n >= MAX_KEYS, DK_UNSUPPORTED, err, "MERGE: more than %d key columns", MAX_KEYS);
  tk[*n] = dk_expr_ref((dk_expr *)(at ? a : b));
  sk[*n] = dk_expr_ref((dk_expr *)(at ? b : a));
  (*n)++;
  return DK_OK;
}

static dk_status bind_clause(mg *g, mclause *m, const dk_merge_clause *c, dk_error *err) {
  m->c = c;
  const char *kind = c->when == DK_MERGE_MATCHED ? "WHEN MATCHED"
                     : c->when == DK_MERGE_NOT_MATCHED ? "WHEN NOT MATCHED"
                                                         : "WHEN NOT MATCHED BY SOURCE";
  bool ok = c->when == DK_MERGE_NOT_MATCHED ? c->action == DK_MERGE_INSERT
                                            : (c->action == DK_MERGE_UPDATE ||
                                               c->action == DK_MERGE_DELETE);
  DK_RETURN_IF(!ok || c->when < DK_MERGE_MATCHED || c->when > DK_MERGE_NOT_MATCHED_BY_SOURCE,
               DK_INVALID, err, "MERGE: %s cannot %s", kind,
               c->action == DK_MERGE_INSERT ? "INSERT" : c->action == DK_MERGE_DELETE ? "DELETE"
                                                                                      : "UPDATE");
  if (c->condition) {
    dk_status st = dk_expr_bind(&m->cond, c->condition, &g->joined, err);
    if (st) return dk__error_prefix(err, "MERGE %s AND condition", kind), st;
  }
  if (c->action == DK_MERGE_DELETE) return DK_OK;
  m->vals = dk__calloc(g->c->alloc, g->n_out, sizeof *m->vals);
  if (!m->vals) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  const dk_expr **given = dk__calloc(g->c->alloc, g->n_cols ? g->n_cols : 1, sizeof *given);
  if (!given) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  dk_status st = DK_OK;
  for (size_t a = 0; a < c->n_set && !c->all && !st; a++) {
    const char *name = c->set[a].column;
    size_t j = g->n_cols;
    for (size_t i = 0; name && i < g->n_cols; i++) {
      const char *cn = g->out.children[i]->name;
      /* "t.col" or "col" */
      size_t tl = strlen(g->ta);
      const char *nm = !strncasecmp(name, g->ta, tl) && name[tl] == '.' ? name + tl + 1 : name;
      if (!strcasecmp(cn, nm)) j = i;
    }
    if (j == g->n_cols)
      st = dk__error_set(err, DK_NOT_FOUND, "MERGE %s: no column '%s' in the target table", kind,
                         name ? name : "?");
    else if (given[j])
      st = dk__error_set(err, DK_INVALID, "MERGE %s: column '%s' is assigned twice", kind, name);
    else
      given[j] = c->set[a].value;
  }
  for (size_t i = 0; i < g->n_cols && !st; i++) {
    const char *cn = g->out.children[i]->name;
    char tsql[64];
    dk_expr__type_sql(tsql, sizeof tsql, &g->types[i]);
    dk_expr *v = NULL, *e = NULL;
    if (c->all || given[i]) {
      if (given[i]) {
        v = dk_expr_ref((dk_expr *)given[i]);
      } else {
        const char *path[2] = {g->sa, cn};
        st = dk_expr_column(&v, path, 2, err);
      }
      if (!st) st = dk_expr_cast(&e, v, tsql, err);
    } else if (c->action == DK_MERGE_UPDATE) {
      const char *path[2] = {g->ta, cn};
      st = dk_expr_column(&e, path, 2, err);
    } else {
      st = dk_expr_literal_null(&e, err);
    }
    if (!st) st = dk_expr__bind_value(&m->vals[i], e, &g->joined, g->c->alloc, err);
    dk_expr_free(e);
    if (st) dk__error_prefix(err, "MERGE %s %s", kind, cn);
  }
  dk__free(g->c->alloc, given);
  /* row tracking: an updated row keeps its row id and takes this commit's row commit version
   * (NULL materialized); an inserted row gets both fresh (NULL) */
  for (size_t i = g->n_cols; i < g->n_out && !st; i++) {
    dk_expr *e = NULL;
    if (i == g->n_cols && c->action == DK_MERGE_UPDATE) {
      const char *path[3] = {g->ta, "_metadata", "row_id"};
      st = dk_expr_column(&e, path, 3, err);
    } else {
      st = dk_expr_literal_null(&e, err);
    }
    if (!st) st = dk_expr__bind_value(&m->vals[i], e, &g->joined, g->c->alloc, err);
    dk_expr_free(e);
  }
  return st;
}

/* The table column named `name` (case-insensitive), or n_cols. */
static size_t col_index(const mg *g, const char *name) {
  for (size_t i = 0; i < g->n_cols; i++)
    if (!strcasecmp(g->out.children[i]->name, name)) return i;
  return g->n_cols;
}

/* Marks the target columns e reads (`ta.col...`); *all when it reads something else of the
** target, or a column of neither side, so that every column must be read. */
static void mark_cols(const mg *g, const dk_expr *e, uint8_t *mark, bool *all) {
  if (!e) return;
  if (dk_expr_get_kind(e) == DK_EXPR_COLUMN) {
    size_t d = dk_expr_column_depth(e);
    const char *n0 = d ? dk_expr_column_name(e, 0) : "";
    if (d >= 2 && !strcasecmp(n0, g->sa)) return;
    if (d < 2 || strcasecmp(n0, g->ta)) {
      *all = true;
      return;
    }
    const char *n1 = dk_expr_column_name(e, 1);
    size_t i = col_index(g, n1);
    if (i < g->n_cols) mark[i] = 1;
    else if (strcasecmp(n1, "_metadata")) *all = true;
    return;
  }
  for (size_t i = 0; i < dk_expr_num_children(e); i++)
    mark_cols(g, dk_expr_child(e, i), mark, all);
}

/* Sets up the parallel read (g->fast) when it applies: no NOT MATCHED BY SOURCE clause (it
** needs every row; copy-on-write reads a touched file again for its other rows, either way).
** The first pass reads the keys' columns; the second the columns the MATCHED clauses read
** (conditions, values, the columns an UPDATE keeps) and the keys', or every column when the
** change data feed is on (preimages). */
static dk_status fast_setup(mg *g, dk_expr *const *tk, size_t nk, dk_error *err) {
  const dk_merge_spec *sp = g->sp;
  for (size_t k = 0; k < sp->n_clauses; k++)
    if (sp->clauses[k].when == DK_MERGE_NOT_MATCHED_BY_SOURCE) return DK_OK;
  const dk_allocator *al = g->c->alloc;
  size_t n = g->n_cols;
  uint8_t *need = dk__calloc(al, n ? 2 * n : 1, 1);
  const char **names = dk__calloc(al, n ? n : 1, sizeof *names);
  if (!need || !names) {
    dk__free(al, need);
    dk__free(al, (void *)names);
    return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  }
  uint8_t *iskey = need + n;
  bool kall = false, all = g->cdf != 0;
  for (size_t i = 0; i < nk; i++) mark_cols(g, tk[i], iskey, &kall);
  for (size_t k = 0; k < sp->n_clauses && !all; k++) {
    const dk_merge_clause *c = &sp->clauses[k];
    if (c->when != DK_MERGE_MATCHED) continue;
    mark_cols(g, c->condition, need, &all);
    if (c->action != DK_MERGE_UPDATE || c->all) continue;
    uint8_t *set = dk__calloc(al, n ? n : 1, 1);
    if (!set) {
      all = true; /* (no memory for the refinement: read everything) */
      break;
    }
    size_t tl = strlen(g->ta);
    for (size_t a = 0; a < c->n_set; a++) {
      const char *nm = c->set[a].column ? c->set[a].column : "";
      if (!strncasecmp(nm, g->ta, tl) && nm[tl] == '.') nm += tl + 1;
      size_t i = col_index(g, nm);
      if (i < n) set[i] = 1;
      mark_cols(g, c->set[a].value, need, &all);
    }
    for (size_t i = 0; i < n; i++) need[i] |= (uint8_t)!set[i]; /* kept as they are */
    dk__free(al, set);
  }
  size_t nkc = 0, nb = 0;
  for (size_t i = 0; i < n; i++) {
    need[i] |= iskey[i];
    /* a name with a dot would be taken for a nested path */
    if ((iskey[i] || need[i]) && strchr(g->out.children[i]->name, '.')) kall = true;
    nkc += iskey[i];
    nb += need[i];
  }
  if (nb == n) all = true;
  dk_status st = DK_OK;
  if (kall || !nkc) goto done; /* keys the first pass cannot read alone: the sequential read */
  for (size_t i = 0, j = 0; i < n; i++)
    if (iskey[i]) names[j++] = g->out.children[i]->name;
  dk_scan__file_reader_options ko = {.columns = names, .n_columns = nkc,
                                     .metadata_fields = DK_META_ROW_INDEX};
  st = dk_scan__file_reader_new(&g->krd, g->x->snap, &ko, err);
  struct ArrowSchema ksch, ks;
  memset(&ksch, 0, sizeof ksch);
  memset(&ks, 0, sizeof ks);
  if (!st) st = dk_scan__file_reader_schema(&ksch, g->krd, err);
  if (!st) st = side_schema(&ks, &ksch, g->ta, ksch.n_children, err);
  if (!st) st = wrap_schema(&g->konly, &ks, NULL, err);
  dk__schema_release(&ksch);
  dk__schema_release(&ks);
  for (size_t i = 0; i < nk && !st; i++)
    st = dk_expr__bind_value(&g->kkey[i], tk[i], &g->konly, al, err);
  if (!st && !all) {
    g->bsrc = dk__malloc(al, n * sizeof *g->bsrc);
    if (!g->bsrc) st = dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    for (size_t i = 0, j = 0; i < n && !st; i++) {
      g->bsrc[i] = need[i] ? (int64_t)j : -1;
      if (need[i]) names[j++] = g->out.children[i]->name;
    }
    bool tracked = g->n_out > g->n_cols;
    dk_scan__file_reader_options bo = {
        .columns = names, .n_columns = nb,
        .metadata_fields =
            DK_META_ROW_INDEX | (tracked ? DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION : 0)};
    if (!st) st = dk_scan__file_reader_new(&g->brd, g->x->snap, &bo, err);
  }
  if (!st) {
    g->ex = g->x->table->exec;
    int th = dk__exec_threads(g->ex);
    g->n_slots = th > 1 ? 2 * (size_t)th : 1;
    g->slots = dk__calloc(al, g->n_slots, sizeof *g->slots);
    if (!g->slots) {
      g->n_slots = 0;
      st = dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
    }
  }
  if (!st) g->fast = 1;
done:
  dk__free(al, need);
  dk__free(al, (void *)names);
  return st;
}

static dk_status setup(mg *g, dk_error *err) {
  dk_txn *x = g->x;
  const dk_merge_spec *sp = g->sp;
  dk__hmap_init(&g->keys, g->c->alloc);
  dk__buf_init(&g->kb, g->c->alloc);
  DK_RETURN_IF(!sp->source || !sp->source->get_schema || !sp->on, DK_INVALID, err,
               "MERGE needs a source stream and a condition");
  g->cow = !g->c->use_dvs;
  DK_RETURN_IF(!strcasecmp(g->ta, g->sa), DK_INVALID, err,
               "MERGE: the target and source aliases are both '%s'", g->ta);
  if (sp->source->get_schema(sp->source, &g->src) != 0) {
    const char *m = sp->source->get_last_error ? sp->source->get_last_error(sp->source) : NULL;
    return dk__error_set(err, DK_CALLBACK, "MERGE: the source's get_schema failed: %s",
                         m ? m : "");
  }
  DK_RETURN_IF(!g->src.format || strcmp(g->src.format, "+s"), DK_INVALID, err,
               "MERGE: the source stream is not a stream of struct batches");
  const char *rt[2] = {dk_txn__row_tracking_col(x, 0), dk_txn__row_tracking_col(x, 1)};
  bool tracked = rt[0] && rt[1];
  dk_scan__file_reader_options ro = {
      .metadata_fields =
          DK_META_ROW_INDEX | (tracked ? DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION : 0)};
  DK_RETURN_NOT_OK(dk_scan__file_reader_new(&g->rd, x->snap, &ro, err));
  DK_RETURN_NOT_OK(dk_scan__file_reader_schema(&g->tgt, g->rd, err));
  g->n_cols = (size_t)g->tgt.n_children - 1;
  g->n_out = g->n_cols + (tracked ? 2 : 0);
  g->types = dk__calloc(g->c->alloc, g->n_out ? g->n_out : 1, sizeof *g->types);
  if (!g->types) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  for (size_t i = 0; i < g->n_cols; i++)
    DK_RETURN_NOT_OK(dk__atype_parse(&g->types[i], g->tgt.children[i]->format, err));
  DK_RETURN_NOT_OK(side_schema(&g->out, &g->tgt, "", (int64_t)g->n_cols, err));
  /* the written rows: the table's columns, then the materialized row tracking columns */
  dk_atype wst = dk__atype_make(DK_AT_STRUCT);
  DK_RETURN_NOT_OK(dk__schema_init(&g->wout, &wst, "", 0, (int64_t)g->n_out, err));
  for (size_t i = 0; i < g->n_out; i++) {
    if (i < g->n_cols) {
      DK_RETURN_NOT_OK(dk__schema_copy(g->wout.children[i], g->tgt.children[i], err));
      continue;
    }
    g->types[i] = dk__atype_make(DK_AT_INT64);
    DK_RETURN_NOT_OK(dk__schema_init(g->wout.children[i], &g->types[i], rt[i - g->n_cols],
                                     ARROW_FLAG_NULLABLE, 0, err));
  }
  g->cdf = dk_txn__cdf_on(x);
  if (g->cdf) { /* the change data rows: the table's columns, then _change_type */
    dk_atype sty = dk__atype_make(DK_AT_STRUCT), str = dk__atype_make(DK_AT_STRING);
    DK_RETURN_NOT_OK(dk__schema_init(&g->cdc_schema, &sty, "", 0, (int64_t)g->n_cols + 1, err));
    for (size_t i = 0; i < g->n_cols; i++)
      DK_RETURN_NOT_OK(dk__schema_copy(g->cdc_schema.children[i], g->tgt.children[i], err));
    DK_RETURN_NOT_OK(dk__schema_init(g->cdc_schema.children[g->n_cols], &str, "_change_type",
                                     ARROW_FLAG_NULLABLE, 0, err));
  }
  struct ArrowSchema ts, ss;
  memset(&ts, 0, sizeof ts);
  memset(&ss, 0, sizeof ss);
  dk_status st = side_schema(&ts, &g->tgt, g->ta, g->tgt.n_children, err);
  if (!st) st = side_schema(&ss, &g->src, g->sa, g->src.n_children, err);
  if (!st) st = wrap_schema(&g->joined, &ts, &ss, err);
  if (!st) st = wrap_schema(&g->tonly, &ts, NULL, err);
  if (!st) st = wrap_schema(&g->sonly, &ss, NULL, err);
  dk__schema_release(&ts);
  dk__schema_release(&ss);
  if (st) return st;
  /* keys */
  dk_expr *tk[MAX_KEYS], *sk[MAX_KEYS];
  size_t nk = 0;
  st = find_keys(g, sp->on, tk, sk, &nk, err);
  for (size_t i = 0; i < nk; i++) {
    if (!st) st = dk_expr__bind_value(&g->tkey[i], tk[i], &g->tonly, g->c->alloc, err);
    if (!st) st = dk_expr__bind_value(&g->skey[i], sk[i], &g->sonly, g->c->alloc, err);
    if (!st) g->n_keys = i + 1;
    if (!st) st = dk_expr__value_type(&g->ktype[i], g->tkey[i], g->skey[i], err);
    g->kcol[i] = dk_expr_column_depth(tk[i]) == 2 ? dk_expr_column_name(tk[i], 1) : NULL;
    if (!st && g->ktype[i].id == DK_AT_TIMESTAMP) g->ktype[i].unit = DK_TU_MICRO;
  }
  if (st) dk__error_prefix(err, "MERGE condition");
  if (!st && !nk) st = dk__error_set(err, DK_UNSUPPORTED, "MERGE: the condition has no key equality");
  if (!st) st = fast_setup(g, tk, nk, err);
  for (size_t i = 0; i < nk; i++) {
    dk_expr_free(tk[i]);
    dk_expr_free(sk[i]);
  }
  if (st) return st;
  /* clauses */
  g->cl = dk__calloc(g->c->alloc, sp->n_clauses ? sp->n_clauses : 1, sizeof *g->cl);
  if (!g->cl) return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  int n_matched = 0;
  for (size_t k = 0; k < sp->n_clauses; k++) {
    g->n_cl = k + 1; /* disposed of even if half bound */
    DK_RETURN_NOT_OK(bind_clause(g, &g->cl[k], &sp->clauses[k], err));
    dk_merge_when w = sp->clauses[k].when;
    if (w == DK_MERGE_MATCHED) g->has_matched = 1, n_matched++;
    if (w == DK_MERGE_NOT_MATCHED) g->has_nm = 1;
    if (w == DK_MERGE_NOT_MATCHED_BY_SOURCE) g->has_nmbs = 1;
  }
  DK_RETURN_IF(!sp->n_clauses, DK_INVALID, err, "MERGE needs at least one WHEN clause");
  g->delete_only = n_matched == 1;
  for (size_t k = 0; k < sp->n_clauses && g->delete_only; k++)
    if (sp->clauses[k].when == DK_MERGE_MATCHED)
      g->delete_only = sp->clauses[k].action == DK_MERGE_DELETE && !sp->clauses[k].condition;
  return DK_OK;
}

/* ---- operation ------------------------------------------------------------------------------- */

static dk_status clause_params(dk_buf *b, const dk_merge_spec *sp, dk_merge_when w,
                               dk_error *err) {
  dk_buf arr;
  dk__buf_init(&arr, b->alloc);
  dk_status st = dk__buf_putc(&arr, '[', err);
  int first = 1;
  for (size_t k = 0; k < sp->n_clauses && !st; k++) {
    const dk_merge_clause *c = &sp->clauses[k];
    if (c->when != w) continue;
    if (!first) st = dk__buf_putc(&arr, ',', err);
    first = 0;
    if (!st) st = dk__buf_putc(&arr, '{', err);
    if (!st && c->condition) {
      char *t = NULL;
      st = dk_expr_to_string(&t, c->condition, err);
      if (!st) st = dk__buf_puts(&arr, "\"predicate\":", err);
      if (!st) st = dk__json_write_str(&arr, t, strlen(t), err);
      if (!st) st = dk__buf_putc(&arr, ',', err);
      dk_expr_string_free(t);
    }
    const char *act = c->action == DK_MERGE_DELETE ? "delete"
                      : c->action == DK_MERGE_INSERT ? (c->all ? "insertAll" : "insert")
                                                     : (c->all ? "updateAll" : "update");
    if (!st) st = dk__buf_printf(&arr, err, "\"actionType\":\"%s\"}", act);
  }
  if (!st) st = dk__buf_putc(&arr, ']', err);
  if (!st) st = dk__json_write_str(b, arr.data, arr.len, err);
  dk__buf_dispose(&arr);
  return st;
}

static dk_status set_params(dk_txn *x, const dk_merge_spec *sp, dk_error *err) {
  dk_buf p;
  dk__buf_init(&p, x->alloc);
  dk_status st = dk__buf_puts(&p, "{\"predicate\":", err);
  if (!st) st = dk_txn__predicate_param(&p, sp->on, err);
  if (!st) st = dk__buf_puts(&p, ",\"matchedPredicates\":", err);
  if (!st) st = clause_params(&p, sp, DK_MERGE_MATCHED, err);
  if (!st) st = dk__buf_puts(&p, ",\"notMatchedPredicates\":", err);
  if (!st) st = clause_params(&p, sp, DK_MERGE_NOT_MATCHED, err);
  if (!st) st = dk__buf_puts(&p, ",\"notMatchedBySourcePredicates\":", err);
  if (!st) st = clause_params(&p, sp, DK_MERGE_NOT_MATCHED_BY_SOURCE, err);
  if (!st) st = dk__buf_putc(&p, '}', err);
  if (!st) st = dk_txn__set_operation(x, "MERGE", p.data, err);
  dk__buf_dispose(&p);
  return st;
}

static dk_status merge_metrics(mg *g, dk_error *err) {
  dk_dml_metrics *m = g->c->m;
  m->execution_time_ms = dk_txn__dml_now_ms() - g->c->t0_ms;
  struct {
    const char *k;
    int64_t v;
  } kv[] = {
      {"numTargetRowsCopied", g->m_copied},
      {"numTargetRowsDeleted", m->num_deleted_rows},
      {"numTargetFilesAdded", m->num_added_files},
      {"numTargetBytesAdded", m->num_added_bytes},
      {"numTargetBytesRemoved", m->num_removed_bytes},
      {"numTargetDeletionVectorsAdded",
       m->num_deletion_vectors_added + m->num_deletion_vectors_updated},
      {"numTargetRowsMatchedUpdated", g->m_upd},
      {"executionTimeMs", m->execution_time_ms},
      {"materializeSourceTimeMs", 0},
      {"numTargetRowsInserted", m->num_inserted_rows},
      {"numTargetRowsMatchedDeleted", g->m_del},
      {"numTargetDeletionVectorsUpdated", m->num_deletion_vectors_updated},
      {"scanTimeMs", m->scan_time_ms},
      {"numTargetRowsUpdated", m->num_updated_rows},
      {"numOutputRows", m->num_updated_rows + m->num_inserted_rows + g->m_copied},
      {"numTargetDeletionVectorsRemoved",
       m->num_deletion_vectors_removed + m->num_deletion_vectors_updated},
      {"numTargetRowsNotMatchedBySourceUpdated", g->m_nmbs_upd},
      {"numTargetChangeFilesAdded", m->num_added_change_files},
      {"numSourceRows", m->num_source_rows},
      {"numTargetFilesRemoved", m->num_removed_files},
      {"numTargetRowsNotMatchedBySourceDeleted", g->m_nmbs_del},
      {"rewriteTimeMs", m->rewrite_time_ms},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(kv); i++)
    DK_RETURN_NOT_OK(dk_txn_set_metric(g->x, kv[i].k, kv[i].v, err));
  return DK_OK;
}

/* ---- target file pruning --------------------------------------------------------------------- */

/* A literal of key type t from value v (integers, dates, timestamps) or bytes p/len (strings). */
static dk_status key_literal(dk_expr **out, const dk_atype *t, int64_t v, const char *p,
                             size_t len, dk_error *err) {
  switch (t->id) {
    case DK_AT_INT8: return dk_expr_literal_int8(out, (int8_t)v, err);
    case DK_AT_INT16: return dk_expr_literal_int16(out, (int16_t)v, err);
    case DK_AT_INT32: return dk_expr_literal_int32(out, (int32_t)v, err);
    case DK_AT_INT64: return dk_expr_literal_int64(out, v, err);
    case DK_AT_DATE32: return dk_expr_literal_date(out, (int32_t)v, err);
    case DK_AT_TIMESTAMP:
      return t->tz[0] ? dk_expr_literal_timestamp(out, v, err)
                      : dk_expr_literal_timestamp_ntz(out, v, err);
    default: return dk_expr_literal_string(out, p, len, err);
  }
}

/* The value of row r of a (of key type t): integer kinds into *v, strings as p/len. */
static bool key_value(const struct ArrowArray *a, const dk_atype *t, int64_t r, int64_t *v,
                      const char **p, size_t *len) {
  int64_t i = a->offset + r;
  const uint8_t *valid = a->null_count ? a->buffers[0] : NULL;
  if (valid && !dk__bit_get(valid, i)) return false;
  switch (t->id) {
    case DK_AT_INT8: *v = ((const int8_t *)a->buffers[1])[i]; return true;
    case DK_AT_INT16: *v = ((const int16_t *)a->buffers[1])[i]; return true;
    case DK_AT_INT32: case DK_AT_DATE32: *v = ((const int32_t *)a->buffers[1])[i]; return true;
    case DK_AT_INT64: case DK_AT_TIMESTAMP: *v = ((const int64_t *)a->buffers[1])[i]; return true;
    default: {
      const int32_t *o = a->buffers[1];
      *p = (const char *)a->buffers[2] + o[i];
      *len = (size_t)(o[i + 1] - o[i]);
      return true;
    }
  }
}

static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* Source keys with at most this many distinct values prune as `col IN (v, ...)`: each value
** checked against a file's min/max, not only their range. */
#define KEY_SET_MAX 64

/* `lo <= col AND col <= hi` of key i over the source's values (its NULLs match nothing), or
** `col IN (...)` when they are at most KEY_SET_MAX distinct values, into *out; NULL when the
** key cannot prune (a computed target side, a type stats do not order the same way); *none
** set when the source has no value (nothing can match). */
static dk_status key_range(mg *g, size_t i, dk_expr **out, bool *none, dk_error *err) {
  *out = NULL;
  const dk_atype *t = &g->ktype[i];
  bool ok_type = t->id == DK_AT_INT8 || t->id == DK_AT_INT16 || t->id == DK_AT_INT32 ||
                 t->id == DK_AT_INT64 || t->id == DK_AT_DATE32 || t->id == DK_AT_TIMESTAMP ||
                 t->id == DK_AT_STRING;
  if (!g->kcol[i] || !ok_type) return DK_OK;
  bool any = false;
  int64_t lo = 0, hi = 0;
  dk_buf slo, shi;
  dk__buf_init(&slo, g->c->alloc);
  dk__buf_init(&shi, g->c->alloc);
  dk_hmap set; /* the distinct values, while there are at most KEY_SET_MAX */
  dk__hmap_init(&set, g->c->alloc);
  dk_expr *lits[KEY_SET_MAX];
  size_t n_lits = 0;
  bool many = false;
  dk_status st = DK_OK;
  for (size_t bi = 0; bi < g->n_sb && !st; bi++) {
    struct ArrowArray view = borrow(&g->sb[bi]), w, ka;
    memset(&ka, 0, sizeof ka);
    st = make_struct(&w, &view, NULL, g->sb[bi].length, g->c->alloc, err);
    if (st) break;
    st = dk_expr__eval_value(&ka, g->skey[i], t, "MERGE key", &w, g->c->alloc, err);
    for (int64_t r = 0; r < g->sb[bi].length && !st; r++) {
      int64_t v = 0;
      const char *p = NULL;
      size_t len = 0;
      if (!key_value(&ka, t, r, &v, &p, &len)) continue;
      if (!many) {
        uint64_t *slot;
        bool ins = false;
        st = t->id == DK_AT_STRING ? dk__hmap_upsert(&set, p, len, &slot, &ins, err)
                                   : dk__hmap_upsert(&set, (const char *)&v, sizeof v, &slot,
                                                     &ins, err);
        if (!st && ins && n_lits == KEY_SET_MAX) many = true;
        else if (!st && ins) st = key_literal(&lits[n_lits++], t, v, p ? p : "", len, err);
        if (st) break;
      }
      if (t->id != DK_AT_STRING) {
        lo = !any || v < lo ? v : lo;
        hi = !any || v > hi ? v : hi;
      } else {
        if (!any || bytes_cmp(p, len, slo.data, slo.len) < 0) {
          dk__buf_clear(&slo);
          st = dk__buf_append(&slo, p, len, err);
        }
        if (!st && (!any || bytes_cmp(p, len, shi.data, shi.len) > 0)) {
          dk__buf_clear(&shi);
          st = dk__buf_append(&shi, p, len, err);
        }
      }
      any = true;
    }
    dk__array_release(&ka);
    w.release(&w);
  }
  dk_expr *a = NULL, *b = NULL, *c1 = NULL, *c2 = NULL, *l = NULL, *h = NULL;
  const char *path[1] = {g->kcol[i]};
  if (!st && !any) *none = true;
  else if (!st && !many) {
    st = dk_expr_column(&a, path, 1, err);
    if (!st) st = dk_expr_in(out, a, lits, n_lits, err);
    else for (size_t k = 0; k < n_lits; k++) dk_expr_free(lits[k]);
    a = NULL;
    n_lits = 0;
  } else if (!st) {
    st = dk_expr_column(&a, path, 1, err);
    if (!st) st = dk_expr_column(&b, path, 1, err);
    if (!st) st = key_literal(&l, t, lo, slo.data ? slo.data : "", slo.len, err);
    if (!st) st = key_literal(&h, t, hi, shi.data ? shi.data : "", shi.len, err);
    if (!st) st = dk_expr_cmp(&c1, DK_CMP_GE, a, l, err), a = l = NULL;
    if (!st) st = dk_expr_cmp(&c2, DK_CMP_LE, b, h, err), b = h = NULL;
    if (!st) st = dk_expr_and(out, c1, c2, err), c1 = c2 = NULL;
  }
  if (st) {
    dk_expr_free(a), dk_expr_free(b), dk_expr_free(l), dk_expr_free(h);
    dk_expr_free(c1), dk_expr_free(c2);
  }
  for (size_t k = 0; k < n_lits; k++) dk_expr_free(lits[k]);
  dk__hmap_dispose(&set);
  dk__buf_dispose(&slo);
  dk__buf_dispose(&shi);
  return st;
}

/* The target files to read. The whole table is recorded as read (delta-spark's
** findTouchedFiles: txn.filterFiles() over the ON condition's target-only predicates, which
** dk's equality-only conditions never have), so conflicts are decided as Spark decides them.
** Without NOT MATCHED BY SOURCE clauses only the files whose partition values or statistics
** admit a row in the range of the source's keys are read: no other file can hold a match. */
static dk_status target_files(mg *g, dk_error *err) {
  dk_expr *pred = NULL;
  dk_status st = dk_txn_read_files(g->x, NULL, &g->idx, &g->n_idx, err);
  bool none = false;
  for (size_t i = 0; i < g->n_keys && !g->has_nmbs && !st; i++) {
    dk_expr *r = NULL;
    st = key_range(g, i, &r, &none, err);
    if (!st && r && pred) st = dk_expr_and(&pred, pred, r, err);
    else if (!st && r) pred = r;
  }
  if (!st && none) g->n_idx = 0;
  if (st || !pred || none) {
    dk_expr_free(pred);
    return st;
  }
  dk_scan__file_reader_options ro = {.predicate = pred};
  dk_scan__file_reader *rd = NULL;
  st = dk_scan__file_reader_new(&rd, g->x->snap, &ro, err);
  int64_t kept = 0;
  for (int64_t k = 0; k < g->n_idx && !st; k++) {
    const dk_file_entry *fe = NULL;
    bool prunes = false;
    st = dk_file_iter_seek(g->it, g->idx[k], err);
    if (!st) st = dk_file_iter_next(&fe, g->it, err);
    if (!st) st = dk_scan__file_prunes(&prunes, rd, fe, NULL, err);
    if (!st && !prunes) g->idx[kept++] = g->idx[k];
  }
  if (!st) g->n_idx = kept;
  dk_scan__file_reader_free(rd);
  dk_expr_free(pred);
  return st;
}

dk_status dk_txn_merge(dk_dml_metrics *out, dk_txn *x, const dk_merge_spec *sp,
                       const dk_dml_options *o, dk_error *err) {
  DK_RETURN_IF(!sp, DK_INVALID, err, "dk_txn_merge: no merge spec");
  DK_RETURN_IF(sp->version > DK_MERGE_SPEC_VERSION, DK_UNSUPPORTED, err,
               "dk_merge_spec version %u is newer than dk's %u", sp->version,
               DK_MERGE_SPEC_VERSION);
  dk_dml_metrics own = {.version = DK_DML_METRICS_VERSION};
  dml_ctx c;
  DK_RETURN_NOT_OK(dk_txn__dml_init(&c, x, o, out, &own, err));
  mg *g = dk__calloc(x->alloc, 1, sizeof *g);
  if (!g) {
    dk_txn__dml_dispose(&c);
    return dk__error_set(err, DK_NOMEM, "out of memory (MERGE)");
  }
  g->c = &c;
  g->x = x;
  g->sp = sp;
  g->ta = sp->target_alias ? sp->target_alias : "t";
  g->sa = sp->source_alias ? sp->source_alias : "s";
  dk_error_init(&g->err);
  dk_status st = setup(g, err);
  if (!st) st = load_source(g, err);
  c.m->num_files_before_skipping = dk_snapshot_num_files(x->snap);
  if (!st) st = dk_snapshot_files_open(&g->it, x->snap, NULL, err);
  if (!st) st = target_files(g, err);
  c.m->num_files_after_skipping = g->n_idx;
  if (!st) {
    struct ArrowArrayStream s = {.get_schema = s_get_schema,
                                 .get_next = s_get_next,
                                 .get_last_error = s_last_error,
                                 .release = s_release,
                                 .private_data = g};
    dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
    dk_write_options wo = {.version = DK_WRITE_OPTIONS_VERSION};
    st = dk_txn_write(&wr, x, &s, &wo, err);
    if (st && g->st) { /* the stream's own failure is the one to tell */
      dk_error_init(err);
      st = dk__error_set(err, g->st, "%s", g->err.message);
    }
    c.m->num_added_files = wr.files;
    c.m->num_added_bytes = wr.bytes;
  }
  if (!st && g->cdf && g->cq_len) {
    struct ArrowArrayStream cs = {.get_schema = c_get_schema,
                                  .get_next = c_get_next,
                                  .get_last_error = s_last_error,
                                  .release = s_release,
                                  .private_data = g};
    dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
    st = dk_txn__write_cdc(&wr, x, &cs, err);
    c.m->num_added_change_files = wr.files;
    c.m->change_file_bytes = wr.bytes;
  }
  c.m->scan_time_ms = dk_txn__dml_now_ms() - c.t0_ms;
  int64_t t1 = dk_txn__dml_now_ms();
  if (!st) st = dk_txn__dml_apply_dvs(&c, err);
  c.m->rewrite_time_ms = dk_txn__dml_now_ms() - t1;
  c.m->num_source_rows = g->m_src;
  c.m->num_updated_rows = g->m_upd + g->m_nmbs_upd;
  c.m->num_deleted_rows = g->m_del + g->m_nmbs_del;
  c.m->num_inserted_rows = g->m_ins;
  if (!st) st = set_params(x, sp, err);
  if (!st) st = merge_metrics(g, err);
  mg_dispose(g);
  dk__free(x->alloc, g);
  dk_txn__dml_dispose(&c);
  return st;
}

typedef struct merge_args {
  dk_dml_metrics *out;
  const dk_merge_spec *spec;
  const dk_dml_options *o;
} merge_args;

static dk_status merge_body(dk_txn *x, void *arg, dk_error *err) {
  merge_args *a = arg;
  return dk_txn_merge(a->out, x, a->spec, a->o, err);
}

dk_status dk_table_merge(dk_dml_metrics *out, dk_commit_result *commit, dk_table *t,
                         const dk_merge_spec *spec, const dk_dml_options *o,
                         const dk_txn_options *txn_opts, dk_error *err) {
  merge_args a = {out, spec, o};
  return dk_txn__dml_run(commit, t, "MERGE", txn_opts, merge_body, &a, err);
}
