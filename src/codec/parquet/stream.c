/*
** stream.c — dk_parquet_read: projection (by name, nested path, or field_id), row-group and
** byte-range selection (row groups whose first page lies in [start, end)), and an
** ArrowArrayStream that decodes one batch at a time, column by column.
*/
#include <pthread.h>
#include <stdio.h>

#include "codec/parquet/reader.h"
#include "util/exec.h"

/* bytes of freed output buffers a stream keeps for its next batches (util.h dk_pool) */
#define STREAM_POOL_CACHE ((size_t)128 << 20)

typedef struct pq_stream {
  dk_parquet_file *f;
  const dk_allocator *alloc;
  dk_pool *pool;           /* recycles the output buffers of released batches (util.h) */
  const dk_allocator *out_alloc; /* the pool's allocator: builder and leaf batches */
  dk_arena arena;
  pq_anode *root;          /* projected tree */
  int *rgs;
  int n_rgs, rg_pos;
  int64_t rows_left;
  int64_t batch;
  int *sel;                /* selected leaf columns (file leaf index) */
  int n_sel;
  int *order;              /* column tasks, largest chunk first (threads > 1) */
  pq_col *cols;
  pq_leaf_batch *batches;
  pq_leaf_batch **lb;      /* by file leaf index */
  int cols_open;
  int cur_rg;
  dk_arr builder;
  int builder_ready;
  int threads;             /* decode threads (1 = inline) */
  dk__exec *exec;          /* the stream's executor when threads > 1 */
  int need_open;           /* columns of the current row group not opened yet */
  int64_t batch_rows;      /* rows of the batch being decoded */
  int64_t row_start, row_end; /* row_end > 0: rows [row_start, row_end) of the one row group */
  int64_t *skip_to;        /* per selected leaf: first page to decode (row_start > 0), or NULL */
  int64_t *discard;        /* per selected leaf: rows of that page before row_start */
  uint8_t **pre;           /* per selected leaf: its chunk read ahead, until its column opens */
  int pre_rg;              /* row group whose chunks `pre` already holds (prefetch_now), or -1 */
  dk_pq__ahead *ahead;     /* read-ahead slot (open.h; the caller's), or NULL */
} pq_stream;

/* Where reads are round trips (dk__source.coalesce), the selected chunks of a row group are
** read in one batch when they total at most this; beyond it each column reads its own. */
#define PREFETCH_MAX ((int64_t)256 << 20)

/* ---- read-ahead slot (open.h) ----------------------------------------------------------- */

struct dk_pq__ahead {
  dk__exec *ex;
  int64_t max;
  const dk_allocator *alloc;   /* the slot itself */
  dk_parquet_file *f;          /* the file the leaves belong to (referenced), or NULL */
  int *leaves;                 /* recorded by the last stream: its selected leaves */
  int n_leaves, cap_leaves;
  const dk_allocator *buf_alloc; /* that stream's buffer allocator: owns the fetched chunks */
  int rg;                      /* row group fetched or being fetched; -1: none */
  int pending;                 /* task submitted and not joined */
  dk__task task;
  uint8_t **bufs;              /* per recorded leaf: its chunk (NULL: empty or none) */
  dk_byte_range *r;            /* the fetch's ranges (shortened by the read) */
  size_t n;
  dk_status st;
  dk_error err;
};

static void ahead_join(dk_pq__ahead *a) {
  if (a->pending) dk__exec_join(a->ex, &a->task);
  a->pending = 0;
}

/* Drops the fetched row group (joining its fetch first). */
static void ahead_drop(dk_pq__ahead *a) {
  ahead_join(a);
  for (int i = 0; a->bufs && i < a->n_leaves; i++) {
    dk__free(a->buf_alloc, a->bufs[i]);
    a->bufs[i] = NULL;
  }
  a->rg = -1;
}

dk_status dk_pq__ahead_new(dk_pq__ahead **out, dk__exec *ex, int64_t max, const dk_allocator *al,
                           dk_error *err) {
  dk_pq__ahead *a = dk__calloc(al, 1, sizeof *a);
  DK_RETURN_IF(!a, DK_NOMEM, err, "out of memory (read-ahead)");
  a->ex = ex;
  a->max = max;
  a->alloc = al;
  a->rg = -1;
  dk_error_init(&a->err);
  *out = a;
  return DK_OK;
}

void dk_pq__ahead_free(dk_pq__ahead *a) {
  if (!a) return;
  ahead_drop(a);
  dk_parquet_file_free(a->f);
  dk__free(a->alloc, a->leaves);
  dk__free(a->alloc, a->bufs);
  dk__free(a->alloc, a->r);
  dk__free(a->alloc, a);
}

/* A stream records its file and leaves; a fetch for other leaves (or another file) is
** dropped. Fails only for memory, and then leaves the slot empty (no read-ahead). */
static void ahead_record(dk_pq__ahead *a, dk_parquet_file *f, const int *sel, int n,
                         const dk_allocator *buf_alloc) {
  if (a->f == f && a->n_leaves == n && a->buf_alloc == buf_alloc &&
      (n == 0 || !memcmp(a->leaves, sel, sizeof *sel * (size_t)n)))
    return;
  ahead_drop(a);
  dk_parquet_file_free(a->f);
  a->f = NULL;
  a->n_leaves = 0;
  if (n > a->cap_leaves) {
    int *l = dk__realloc(a->alloc, a->leaves, sizeof *l * (size_t)n);
    if (l) a->leaves = l;
    uint8_t **b = dk__realloc(a->alloc, a->bufs, sizeof *b * (size_t)n);
    if (b) a->bufs = b;
    dk_byte_range *r = dk__realloc(a->alloc, a->r, sizeof *r * (size_t)n);
    if (r) a->r = r;
    if (!l || !b || !r) return;
    a->cap_leaves = n;
  }
  memcpy(a->leaves, sel, sizeof *sel * (size_t)n);
  memset(a->bufs, 0, sizeof *a->bufs * (size_t)n);
  a->n_leaves = n;
  a->buf_alloc = buf_alloc;
  dk_pq__file_ref(f);
  a->f = f;
}

static void ahead_task(void *arg) {
  dk_pq__ahead *a = arg;
  a->st = dk_pq__file_read_ranges(a->f, a->r, a->n, &a->err);
}

void dk_pq__ahead_start(dk_pq__ahead *a, dk_parquet_file *f, int rg) {
  if (!a || !a->ex || a->f != f || a->n_leaves == 0 || !f->src.coalesce || f->map) return;
  if (a->rg == rg) return;
  if (rg < 0 || rg >= f->meta.n_row_groups) return;
  ahead_drop(a);
  int64_t total = 0;
  for (int i = 0; i < a->n_leaves; i++) {
    int64_t start, len;
    if (dk_pq__chunk_range(f, rg, a->leaves[i], &start, &len)) total += len;
  }
  if (total == 0 || total > a->max) return;
  a->n = 0;
  for (int i = 0; i < a->n_leaves; i++) {
    int64_t start, len;
    if (!dk_pq__chunk_range(f, rg, a->leaves[i], &start, &len) || len == 0) continue;
    a->bufs[i] = dk__malloc(a->buf_alloc, (size_t)len);
    if (!a->bufs[i]) {
      ahead_drop(a);
      return;
    }
    a->r[a->n++] = (dk_byte_range){start, (size_t)len, a->bufs[i]};
  }
  a->rg = rg;
  a->st = DK_OK;
  dk_error_init(&a->err);
  a->pending = 1;
  dk__exec_submit(a->ex, &a->task, ahead_task, a);
}

/* Takes the slot's chunks of row group rg into s->pre when it holds them (fetched without
** error): 1, else 0 (the caller reads them itself; a failed fetch is simply read again). */
static int ahead_take(pq_stream *s, int rg) {
  dk_pq__ahead *a = s->ahead;
  if (!a || a->rg != rg || a->f != s->f || a->buf_alloc != s->out_alloc || a->n_leaves != s->n_sel)
    return 0;
  ahead_join(a);
  if (a->st != DK_OK) {
    ahead_drop(a);
    return 0;
  }
  for (int i = 0; i < s->n_sel; i++) {
    s->pre[i] = a->bufs[i];
    a->bufs[i] = NULL;
  }
  a->rg = -1;
  return 1;
}

/* ---- parallel decode: tasks are columns (open + read), then top-level fields (assembly) --- */

typedef struct pq_job {
  pq_stream *s;
  int phase;               /* 0 = read columns, 1 = assemble fields */
  int n_tasks;
  int next;                /* atomic task counter */
  dk_status status;        /* first failure */
  dk_error err;
  pthread_mutex_t mu;
} pq_job;

static dk_status col_task(pq_stream *s, int i, dk_error *err) {
  if (s->need_open) {
    DK_RETURN_NOT_OK(dk_pq__col_open(&s->cols[i], s->f, s->cur_rg, s->sel[i], s->out_alloc, err));
    if (s->pre && s->pre[i]) {
      dk_pq__col_give_chunk(&s->cols[i], s->pre[i]);
      s->pre[i] = NULL;
    }
    if (s->skip_to) {
      s->cols[i].skip_to = s->skip_to[i];
      /* rows of the first page before row_start: decoded and dropped (the next read clears
      ** the batch) */
      if (s->discard[i] > 0)
        DK_RETURN_NOT_OK(dk_pq__col_read(&s->cols[i], s->discard[i], &s->batches[i], err));
    }
  }
  dk_status st = dk_pq__col_read(&s->cols[i], s->batch_rows, &s->batches[i], err);
  if (st) {
    const pq_column_meta *cm = s->cols[i].cm;
    char path[512];
    size_t pl = 0;
    path[0] = 0;
    for (int k = 0; k < cm->n_path && pl < sizeof path - 1; k++)
      pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s%s", k ? "." : "", cm->path[k]);
    dk__error_prefix(err, "column '%s' (row group %d)", path, s->cur_rg);
  }
  return st;
}

static void job_worker(void *arg) {
  pq_job *j = arg;
  dk_error err;
  dk_error_init(&err);
  for (;;) {
    int i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    if (i >= j->n_tasks) break;
    dk_status st = j->phase == 0
                       ? col_task(j->s, j->s->order[i], &err)
                       : dk_pq__assemble_field(&j->s->builder.children[i], j->s->root->children[i],
                                               j->s->lb, j->s->batch_rows, &err);
    if (st) {
      pthread_mutex_lock(&j->mu);
      if (j->status == DK_OK) {
        j->status = st;
        j->err = err;
      }
      pthread_mutex_unlock(&j->mu);
      __atomic_store_n(&j->next, j->n_tasks, __ATOMIC_RELAXED);
      break;
    }
  }
}

/* Runs n tasks of a phase on up to s->threads threads of the stream's executor (the caller
 * is one of them). */
static dk_status run_phase(pq_stream *s, int phase, int n, dk_error *err) {
  pq_job j;
  memset(&j, 0, sizeof j);
  j.s = s;
  j.phase = phase;
  j.n_tasks = n;
  pthread_mutex_init(&j.mu, NULL);
  dk__exec_fanout(s->exec, DK_MIN(s->threads, n), job_worker, &j);
  pthread_mutex_destroy(&j.mu);
  if (j.status) {
    if (err) *err = j.err;
    return j.status;
  }
  return DK_OK;
}

/* ---- projection ------------------------------------------------------------------------ */

static pq_anode *copy_partial(pq_stream *s, const pq_anode *orig, dk_error *err) {
  pq_anode *c = dk__arena_alloc(&s->arena, sizeof *c, err);
  if (!c) return NULL;
  *c = *orig;
  c->n_children = 0;
  c->children = dk__arena_alloc(&s->arena, sizeof(pq_anode *) * (size_t)(orig->n_children + 1), err);
  return c->children ? c : NULL;
}

/* Merges the chain root..target into the projected tree; target and lists/maps are taken whole. */
static dk_status merge_chain(pq_stream *s, const pq_anode *const *chain, int len, dk_error *err) {
  pq_anode *parent = s->root;
  for (int t = 1; t < len; t++) {
    const pq_anode *orig = chain[t];
    /* structs and lists are pruned to the selected fields; maps and leaves are taken whole */
    int whole = t == len - 1 || orig->kind == PQ_AN_MAP || orig->kind == PQ_AN_LEAF;
    int found = -1;
    for (int i = 0; i < parent->n_children; i++)
      if (parent->children[i] == orig || parent->children[i]->src == orig) found = i;
    if (found >= 0) {
      pq_anode *ch = parent->children[found];
      if (ch == orig) return DK_OK; /* already whole */
      if (whole) {
        parent->children[found] = (pq_anode *)orig;
        return DK_OK;
      }
      parent = ch;
      continue;
    }
    if (whole) {
      parent->children[parent->n_children++] = (pq_anode *)orig;
      return DK_OK;
    }
    pq_anode *c = copy_partial(s, orig, err);
    if (!c) return DK_NOMEM;
    c->src = orig;
    parent->children[parent->n_children++] = c;
    parent = c;
  }
  return DK_OK;
}

static int child_pos(const pq_anode *parent_src, const pq_anode *child) {
  const pq_anode *orig = child->src ? child->src : child;
  for (int i = 0; i < parent_src->n_children; i++)
    if (parent_src->children[i] == orig) return i;
  return 0;
}

/* Nested pruned structs keep file order (top level keeps request order); each pruned node
** takes its levels from its first remaining leaf. */
static void fix_pruned(pq_anode *n, int top) {
  if (n->kind == PQ_AN_LEAF || !n->src) return;
  for (int i = 0; i < n->n_children; i++) fix_pruned(n->children[i], 0);
  if (!top)
    for (int i = 1; i < n->n_children; i++) /* insertion sort: a handful of fields */
      for (int j = i; j > 0 && child_pos(n->src, n->children[j - 1]) > child_pos(n->src, n->children[j]); j--) {
        pq_anode *x = n->children[j];
        n->children[j] = n->children[j - 1];
        n->children[j - 1] = x;
      }
  if (n->n_children > 0) n->leaf = n->children[0]->leaf;
}

/* Resolves a dotted path (or an exact top-level name) to a chain of nodes. */
static int resolve_path(const pq_anode *root, const char *path, const pq_anode **chain, int max) {
  int len = 0;
  chain[len++] = root;
  for (int i = 0; i < root->n_children; i++)
    if (!strcmp(root->children[i]->name, path)) {
      chain[len++] = root->children[i];
      return len;
    }
  const pq_anode *cur = root;
  const char *p = path;
  while (*p) {
    const char *dot = strchr(p, '.');
    size_t l = dot ? (size_t)(dot - p) : strlen(p);
    const pq_anode *next = NULL;
    if (cur->kind == PQ_AN_STRUCT) {
      for (int i = 0; i < cur->n_children; i++)
        if (strlen(cur->children[i]->name) == l && !memcmp(cur->children[i]->name, p, l))
          next = cur->children[i];
    } else if (cur->kind == PQ_AN_LIST) {
      /* "l.element.x" or "l.x": step into the element, naming it or not */
      const pq_anode *el = cur->children[0];
      if (len >= max) return 0;
      chain[len++] = el;
      cur = el;
      if (strlen(el->name) == l && !memcmp(el->name, p, l)) {
        p = dot ? dot + 1 : p + l;
        if (!dot) return len;
      }
      continue;
    } else if (cur->kind == PQ_AN_MAP) {
      return len; /* inside a map: the whole map is selected */
    } else {
      return 0; /* a path below a leaf */
    }
    if (!next || len >= max) return 0;
    chain[len++] = next;
    cur = next;
    p = dot ? dot + 1 : p + l;
  }
  return len;
}

static int resolve_field_id(const pq_anode *n, int32_t id, const pq_anode **chain, int depth, int max) {
  if (depth >= max) return 0;
  chain[depth] = n;
  if (depth > 0 && n->has_field_id && n->field_id == id) return depth + 1;
  for (int i = 0; i < n->n_children; i++) {
    int r = resolve_field_id(n->children[i], id, chain, depth + 1, max);
    if (r) return r;
  }
  return 0;
}

static void collect_leaves(const pq_anode *n, uint8_t *mark) {
  if (n->kind == PQ_AN_LEAF) mark[n->leaf] = 1;
  for (int i = 0; i < n->n_children; i++) collect_leaves(n->children[i], mark);
}

/* ---- stream callbacks -------------------------------------------------------------------- */

static void close_cols(pq_stream *s) {
  if (s->pre)
    for (int i = 0; i < s->n_sel; i++) {
      if (s->pre_rg >= 0 && s->rg_pos < s->n_rgs && s->rgs[s->rg_pos] == s->pre_rg)
        break; /* the next row group's chunks, fetched at open (prefetch_now): kept */
      dk__free(s->out_alloc, s->pre[i]);
      s->pre[i] = NULL;
    }
  if (!s->cols_open) return;
  for (int i = 0; i < s->n_sel; i++) dk_pq__col_close(&s->cols[i]);
  s->cols_open = 0;
}

/* Reads the chunks of the selected leaves in row group rg in one batch (see PREFETCH_MAX); a
** chunk the footer places outside the file is left to dk_pq__col_open to report. */
static dk_status ensure_pre(pq_stream *s, dk_error *err) {
  if (!s->pre) {
    s->pre = dk__arena_alloc(&s->arena, sizeof *s->pre * (size_t)(s->n_sel + 1), err);
    if (!s->pre) return DK_NOMEM;
    memset(s->pre, 0, sizeof *s->pre * (size_t)(s->n_sel + 1));
  }
  return DK_OK;
}

static dk_status prefetch_chunks(pq_stream *s, int rg, int64_t max, dk_error *err) {
  DK_RETURN_NOT_OK(ensure_pre(s, err));
  if (ahead_take(s, rg)) return DK_OK; /* read ahead while the previous one was decoded */
  int64_t total = 0;
  for (int i = 0; i < s->n_sel; i++) {
    int64_t start, len;
    if (dk_pq__chunk_range(s->f, rg, s->sel[i], &start, &len)) total += len;
  }
  if (total > max || total == 0) return DK_OK;
  dk_byte_range *r = dk__malloc(s->alloc, sizeof *r * (size_t)s->n_sel);
  DK_RETURN_IF(!r, DK_NOMEM, err, "out of memory (column chunks)");
  size_t n = 0;
  dk_status st = DK_OK;
  for (int i = 0; i < s->n_sel && !st; i++) {
    int64_t start, len;
    if (!dk_pq__chunk_range(s->f, rg, s->sel[i], &start, &len) || len == 0) continue;
    s->pre[i] = dk__malloc(s->out_alloc, (size_t)len);
    if (!s->pre[i]) st = dk__error_set(err, DK_NOMEM, "out of memory (column chunks)");
    else r[n++] = (dk_byte_range){start, (size_t)len, s->pre[i]};
  }
  if (!st) st = dk_pq__file_read_ranges(s->f, r, n, err);
  dk__free(s->alloc, r);
  return st;
}

static dk_status stream_schema(void *st, struct ArrowSchema *out, dk_error *err) {
  pq_stream *s = st;
  return dk_pq__anode_schema(out, s->root, err);
}

static dk_status stream_next_inner(pq_stream *s, struct ArrowArray *out, dk_error *err) {
  while (s->rows_left == 0) {
    close_cols(s);
    if (s->rg_pos >= s->n_rgs) return DK_OK; /* end: out->release stays NULL */
    int rg = s->rgs[s->rg_pos++];
    s->cur_rg = rg;
    s->cols_open = 1; /* col_close accepts never-opened (zeroed) columns */
    for (int i = 0; i < s->n_sel; i++) memset(&s->cols[i], 0, sizeof s->cols[i]);
    s->need_open = 1;
    s->rows_left = s->row_end > 0 ? s->row_end - s->row_start : s->f->meta.row_groups[rg].num_rows;
    if (s->f->src.coalesce && !s->f->map && s->pre_rg != rg)
      DK_RETURN_NOT_OK(prefetch_chunks(s, rg, PREFETCH_MAX, err));
    s->pre_rg = -1;
    /* threads take column tasks in this order: largest first, so one big column (long
    ** strings) does not start last and leave the other threads idle at the batch's end */
    const pq_column_meta *cm = s->f->meta.row_groups[rg].columns;
    for (int i = 0; i < s->n_sel; i++) {
      int k = i;
      for (; k > 0 && cm[s->sel[s->order[k - 1]]].total_uncompressed <
                          cm[s->sel[i]].total_uncompressed; k--)
        s->order[k] = s->order[k - 1];
      s->order[k] = i;
    }
  }
  int64_t n = DK_MIN(s->batch, s->rows_left);
  s->batch_rows = n;
  if (s->threads > 1) {
    DK_RETURN_NOT_OK(run_phase(s, 0, s->n_sel, err));
    s->need_open = 0;
    DK_RETURN_NOT_OK(run_phase(s, 1, s->root->n_children, err));
    dk__arr_advance(&s->builder, n, 0);
  } else {
    for (int i = 0; i < s->n_sel; i++) DK_RETURN_NOT_OK(col_task(s, i, err));
    s->need_open = 0;
    DK_RETURN_NOT_OK(dk_pq__assemble(&s->builder, s->root, s->lb, n, err));
  }
  DK_RETURN_NOT_OK(dk__arr_finish(&s->builder, out, err));
  s->rows_left -= n;
  return DK_OK;
}

static dk_status stream_next(void *st, struct ArrowArray *out, dk_error *err) {
  pq_stream *s = st;
  dk_status r = stream_next_inner(s, out, err);
  if (r) {
    dk__error_prefix(err, "%s", s->f->path);
    /* a failed batch leaves the builder in an unknown state: rebuild it */
    dk__arr_reset(&s->builder);
    s->builder_ready = 0;
    s->rows_left = 0;
    s->rg_pos = s->n_rgs;
    close_cols(s);
  }
  return r;
}

static void stream_free(void *st) {
  pq_stream *s = st;
  if (!s) return;
  s->pre_rg = -1; /* chunks fetched at open and never read go too */
  close_cols(s);
  if (s->batches)
    for (int i = 0; i < s->n_sel; i++) dk_pq__leaf_batch_dispose(&s->batches[i]);
  if (s->builder_ready) dk__arr_reset(&s->builder);
  dk__pool_release(s->pool);
  dk__exec_free(s->exec);
  dk_parquet_file_free(s->f);
  const dk_allocator *a = s->alloc;
  dk__arena_dispose(&s->arena);
  dk__free(a, s);
}

static dk_status build_builder(pq_stream *s, dk_error *err) {
  struct ArrowSchema sc;
  DK_RETURN_NOT_OK(dk_pq__anode_schema(&sc, s->root, err));
  dk_status st = dk__arr_init_from_schema(&s->builder, &sc, s->out_alloc, err);
  dk__schema_release(&sc);
  if (st == DK_OK) s->builder_ready = 1;
  return st;
}

dk_status dk_parquet_read(struct ArrowArrayStream *out, dk_parquet_file *f,
                          const dk_parquet_read_options *opts, dk_error *err) {
  return dk_pq__read_ex(out, f, opts, NULL, 0, err);
}

dk_status dk_pq__read_ex(struct ArrowArrayStream *out, dk_parquet_file *f,
                         const dk_parquet_read_options *opts, dk_pq__ahead *ahead,
                         int prefetch_now, dk_error *err) {
  memset(out, 0, sizeof *out);
  DK_CHECK_OPTIONS_VERSION(opts, DK_PARQUET_READ_OPTIONS_VERSION, "dk_parquet_read", err);
  dk_parquet_read_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  if (o.batch_size < 0) return dk__error_set(err, DK_INVALID, "negative batch size");
  pq_stream *s = dk__calloc(f->alloc, 1, sizeof *s);
  if (!s) return dk__error_set(err, DK_NOMEM, "out of memory");
  s->alloc = f->alloc;
  s->f = f;
  s->pre_rg = -1;
  s->ahead = ahead;
  dk_pq__file_ref(f);
  dk__arena_init(&s->arena, f->alloc, 4096);
  s->batch = o.batch_size > 0 ? o.batch_size : 65536;
  s->threads = o.threads > 1 ? DK_MIN(o.threads, 64) : 1;
  dk_status st = DK_OK;
  if (s->threads > 1) DK_CHECK_GOTO(dk__exec_new(&s->exec, s->threads, f->alloc, err));
  /* inside a scan, f->alloc is the scan's pool already: share it instead of stacking one */
  DK_CHECK_GOTO(dk__pool_share(&s->pool, f->alloc, STREAM_POOL_CACHE, err));
  s->out_alloc = dk__pool_allocator(s->pool);

  /* projection */
  if (o.n_columns == 0 && o.n_field_ids == 0) {
    s->root = f->aroot;
  } else {
    s->root = copy_partial(s, f->aroot, err);
    if (!s->root) DK_CHECK_GOTO(DK_NOMEM);
    s->root->src = f->aroot;
    const pq_anode *chain[130];
    for (size_t i = 0; i < o.n_columns; i++) {
      int len = resolve_path(f->aroot, o.columns[i], chain, 128);
      if (len < 2) {
        st = dk__error_set(err, DK_NOT_FOUND, "%s: column '%s' not found", f->path, o.columns[i]);
        goto cleanup;
      }
      DK_CHECK_GOTO(merge_chain(s, chain, len, err));
    }
    for (size_t i = 0; i < o.n_field_ids; i++) {
      int len = resolve_field_id(f->aroot, o.field_ids[i], chain, 0, 128);
      if (len < 2) {
        st = dk__error_set(err, DK_NOT_FOUND, "%s: field_id %d not found", f->path, (int)o.field_ids[i]);
        goto cleanup;
      }
      DK_CHECK_GOTO(merge_chain(s, chain, len, err));
    }
    fix_pruned(s->root, 1);
  }

  /* row groups */
  int nrg = f->meta.n_row_groups;
  s->rgs = dk__arena_alloc(&s->arena, sizeof(int) * (size_t)(nrg + 1), err);
  if (!s->rgs) DK_CHECK_GOTO(DK_NOMEM);
  for (int i = 0; i < nrg; i++) {
    if (o.row_groups) {
      int want = 0;
      for (size_t k = 0; k < o.n_row_groups; k++) {
        if (o.row_groups[k] < 0 || o.row_groups[k] >= nrg) {
          st = dk__error_set(err, DK_INVALID, "%s: row group %d out of range (%d)", f->path,
                             o.row_groups[k], nrg);
          goto cleanup;
        }
        want |= o.row_groups[k] == i;
      }
      if (!want) continue;
    }
    if (o.range_end > 0) {
      int64_t start = f->meta.row_groups[i].start;
      if (start < o.range_start || start >= o.range_end) continue;
    }
    if (f->meta.row_groups[i].num_rows == 0) continue; /* nothing to decode */
    s->rgs[s->n_rgs++] = i;
  }

  /* selected leaves */
  {
    uint8_t *mark = dk__arena_alloc(&s->arena, (size_t)f->n_leaves + 1, err);
    s->lb = dk__arena_alloc(&s->arena, sizeof(pq_leaf_batch *) * (size_t)(f->n_leaves + 1), err);
    s->sel = dk__arena_alloc(&s->arena, sizeof(int) * (size_t)(f->n_leaves + 1), err);
    s->cols = dk__arena_alloc(&s->arena, sizeof(pq_col) * (size_t)(f->n_leaves + 1), err);
    s->batches = dk__arena_alloc(&s->arena, sizeof(pq_leaf_batch) * (size_t)(f->n_leaves + 1), err);
    s->order = dk__arena_alloc(&s->arena, sizeof(int) * (size_t)(f->n_leaves + 1), err);
    if (!mark || !s->lb || !s->sel || !s->cols || !s->batches || !s->order) DK_CHECK_GOTO(DK_NOMEM);
    memset(mark, 0, (size_t)f->n_leaves + 1);
    memset(s->lb, 0, sizeof(pq_leaf_batch *) * (size_t)(f->n_leaves + 1));
    memset(s->cols, 0, sizeof(pq_col) * (size_t)(f->n_leaves + 1));
    collect_leaves(s->root, mark);
    for (int i = 0; i < f->n_leaves; i++)
      if (mark[i]) {
        dk_pq__leaf_batch_init(&s->batches[s->n_sel], s->out_alloc);
        s->lb[i] = &s->batches[s->n_sel];
        s->sel[s->n_sel++] = i;
      }
  }
  /* row selection within the one row group: each leaf starts at its page holding row_start */
  if (o.row_end > 0) {
    if (s->n_rgs > 1 || o.row_start < 0 || o.row_start >= o.row_end ||
        (s->n_rgs == 1 && o.row_end > f->meta.row_groups[s->rgs[0]].num_rows)) {
      st = dk__error_set(err, DK_INVALID, "%s: rows [%lld, %lld) need exactly one row group "
                         "holding them", f->path, (long long)o.row_start, (long long)o.row_end);
      goto cleanup;
    }
    s->row_start = o.row_start;
    s->row_end = o.row_end;
    if (o.row_start > 0 && s->n_rgs == 1) {
      s->skip_to = dk__arena_alloc(&s->arena, sizeof(int64_t) * (size_t)(s->n_sel + 1), err);
      s->discard = dk__arena_alloc(&s->arena, sizeof(int64_t) * (size_t)(s->n_sel + 1), err);
      if (!s->skip_to || !s->discard) DK_CHECK_GOTO(DK_NOMEM);
      for (int i = 0; i < s->n_sel; i++) {
        dk_parquet_page_index *pi = NULL;
        DK_CHECK_GOTO(dk_parquet_page_index_read(&pi, f, s->rgs[0], s->sel[i], err));
        s->skip_to[i] = 0;
        s->discard[i] = o.row_start;
        for (int64_t k = 0; k < dk_parquet_page_index_num_pages(pi); k++) {
          const dk_parquet_page *pg = dk_parquet_page_index_page(pi, k);
          if (pg->first_row > o.row_start) break;
          s->skip_to[i] = pg->offset;
          s->discard[i] = o.row_start - pg->first_row;
        }
        dk_parquet_page_index_free(pi);
      }
    }
  }
  DK_CHECK_GOTO(build_builder(s, err));
  if (ahead) ahead_record(ahead, f, s->sel, s->n_sel, s->out_alloc);
  if (ahead && s->n_rgs > 0 && ahead->rg == s->rgs[0]) {
    /* the slot holds this row group, read ahead: take it now, so the slot is free to fetch
    ** the next one while this one is decoded */
    DK_CHECK_GOTO(ensure_pre(s, err));
    if (ahead_take(s, s->rgs[0])) s->pre_rg = s->rgs[0];
  }
  if (prefetch_now && s->pre_rg < 0 && s->n_rgs > 0 && f->src.coalesce && !f->map) {
    DK_CHECK_GOTO(prefetch_chunks(s, s->rgs[0], ahead ? ahead->max : PREFETCH_MAX, err));
    for (int i = 0; i < s->n_sel; i++)
      if (s->pre[i]) s->pre_rg = s->rgs[0]; /* else too big: each column reads its own */
  }

  static const dk_stream_impl impl = {stream_schema, stream_next, stream_free};
  return dk__stream_init(out, &impl, s, f->alloc, err); /* releases s on failure */
cleanup:
  stream_free(s);
  return st;
}
