/*
** stream.c — dk_scan_read: the whole scan as one ArrowArrayStream, read file by file on the
** calling thread (on an object store with the next row group and file fetched ahead), or by
** reader tasks on the stream's executor (util/exec.h, one worker per
** reader thread) that take files (and byte ranges of big files) in turn and push batches into
** a bounded queue (file order is then not kept).
*/
#include <pthread.h>

#include "io/source.h"
#include "scan/scan_int.h"
#include "util/exec.h"

/* ---- single-threaded stream ---------------------------------------------------------------- */

/* Files are decoded in order on the calling thread. On an object store (and with no LIMIT,
** so that nothing fetched ahead goes unread) the stream reads ahead as the multi-threaded
** readers do, on an executor of its own whose two workers only wait on the network: while the
** caller decodes a file's row group, one task fetches the next row group's column chunks
** (dk_scan__task_arm) and another opens the next file (footer, deletion vector, first row
** group's chunks: dk_scan__task_prepare). Those tasks wait for nothing; only the caller joins
** them. */
typedef struct ss_item {
  scan_task task;
  task_reader fr;        /* fr.task points at task: an item never moves */
  dk_file_entry entry;
  int open;              /* fr holds an open file */
  int pending;           /* opening ahead: task submitted, not joined */
  dk__task job;
  dk_status st;
  dk_error err;
  struct scan_stream *s;
} ss_item;

typedef struct scan_stream {
  dk_scan *scan;
  dk_storage *sto;       /* the table's backend (borrowed) */
  int64_t next_file;
  ss_item slot[2];
  ss_item *cur, *nxt;    /* the file being decoded; the one opened ahead */
  int64_t remaining;
  dk__exec *ex;          /* read-ahead's executor, or NULL: none */
  int64_t read_ahead;    /* bytes of column chunks fetched ahead, or 0 */
} scan_stream;

static dk_status scan_stream_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  scan_stream *s = state;
  return dk_scan_schema(out, s->scan, err);
}

/* Opens x's file (its entry fetched by the caller, which also set x->open: fr is closed
** after a failure too); ahead: also its first row group, chunks included. */
static dk_status ss_open(ss_item *x, int ahead, dk_error *err) {
  scan_stream *s = x->s;
  dk_scan *scan = s->scan;
  dk_status st = dk_scan__task_open(&x->fr, &scan->plan, &scan->stats, s->sto, &x->task, err);
  if (!st && s->read_ahead > 0) st = dk_scan__task_read_ahead(&x->fr, s->ex, s->read_ahead, err);
  if (!st && ahead) st = dk_scan__task_prepare(&x->fr, err);
  if (st) dk__error_prefix(err, "%s", x->task.path);
  return st;
}

static void ss_open_task(void *arg) {
  ss_item *x = arg;
  x->st = ss_open(x, 1, &x->err);
}

/* Takes the next file of the scan into x as a task (ahead) or here; *none = 1 when no file is
** left. The entry is fetched here, on the caller: a task may not call into the snapshot. */
static dk_status ss_claim(scan_stream *s, ss_item *x, int ahead, int *none, dk_error *err) {
  dk_scan *scan = s->scan;
  *none = s->next_file >= scan->n_files;
  if (*none) return DK_OK;
  int64_t i = s->next_file++;
  DK_RETURN_NOT_OK(dk_snapshot_file(&x->entry, scan->snap, scan->files[i], err));
  x->entry.stats = NULL; /* valid on this thread only, and not needed to read */
  dk_scan__task_from_entry(&x->task, &x->entry, scan->pvals + i * (int64_t)scan->n_part_out);
  x->open = 1;
  if (!ahead) return ss_open(x, 0, err);
  dk_error_init(&x->err);
  x->pending = 1;
  dk__exec_submit(s->ex, &x->job, ss_open_task, x);
  return DK_OK;
}

/* Joins x's open if it is still running; its status. */
static dk_status ss_join(scan_stream *s, ss_item *x, dk_error *err) {
  if (!x->pending) return DK_OK;
  dk__exec_join(s->ex, &x->job);
  x->pending = 0;
  if (x->st) *err = x->err;
  return x->st;
}

static void ss_close(scan_stream *s, ss_item *x) {
  dk_error e;
  dk_error_init(&e);
  (void)ss_join(s, x, &e);
  if (x->open) dk_scan__task_close(&x->fr);
  x->open = 0;
}

static dk_status scan_stream_next(void *state, struct ArrowArray *out, dk_error *err) {
  scan_stream *s = state;
  out->release = NULL;
  for (;;) {
    if (s->remaining == 0) return DK_OK;
    ss_item *cur = s->cur;
    if (!cur->open) {
      int none;
      if (s->nxt->open) { /* opened ahead while the previous file was decoded */
        s->cur = s->nxt;
        s->nxt = cur;
        cur = s->cur;
        DK_RETURN_NOT_OK(ss_join(s, cur, err));
      } else {
        DK_RETURN_NOT_OK(ss_claim(s, cur, 0, &none, err));
        if (none) return DK_OK;
      }
      if (s->ex) {
        DK_RETURN_NOT_OK(ss_claim(s, s->nxt, 1, &none, err));
        dk_scan__task_arm(&cur->fr);
      }
    }
    dk_status st = dk_scan__task_next(&cur->fr, out, &s->remaining, err);
    if (st) {
      dk__error_prefix(err, "%s", cur->task.path);
      return st;
    }
    if (out->release) return DK_OK;
    ss_close(s, cur);
  }
}

static void scan_stream_release(void *state) {
  scan_stream *s = state;
  ss_close(s, s->cur);
  ss_close(s, s->nxt);
  dk__exec_free(s->ex);
  dk_scan *scan = s->scan;
  dk__free(scan->alloc, s);
  dk_scan_free(scan);
}

/* ---- multi-threaded whole-scan stream ------------------------------------------------------ */

/* Reader tasks take files in turn and push finished batches into a bounded queue; the
** consumer pops them (file order is not kept across readers). The executor has one worker per
** reader beside the consumer's thread, which only pops: the readers' waits for room in the
** queue end when it pops or when the stream is released (cancel), never on another task. */
typedef struct mt_stream {
  dk_scan *scan;
  int n_threads, submitted;
  dk__exec *ex;
  dk__task *tasks;
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  struct ArrowArray *q;
  int cap, head, count;
  int64_t next_file;  /* next work item */
  int64_t n_items;
  int64_t *items;     /* 3 per item: index into scan->files, range start, range end (0 = all) */
  dk_file_entry *entries; /* per scan file (metadata; no stats), fetched by the creating
                             thread */
  int running;     /* workers still producing */
  int64_t read_ahead; /* bytes each reader fetches ahead (scan->read_ahead on an object
                         store), or 0: none */
  int cancel;
  dk_error err;    /* first error */
} mt_stream;

static void mt_push(mt_stream *m, struct ArrowArray *a) {
  pthread_mutex_lock(&m->mu);
  while (m->count == m->cap && !m->cancel) pthread_cond_wait(&m->not_full, &m->mu);
  if (m->cancel) {
    pthread_mutex_unlock(&m->mu);
    dk__array_release(a);
    return;
  }
  dk__array_move(a, &m->q[(m->head + m->count) % m->cap]);
  m->count++;
  pthread_cond_signal(&m->not_empty);
  pthread_mutex_unlock(&m->mu);
}

/* One work item a reader has opened, perhaps ahead of time on another thread. */
typedef struct mt_item {
  mt_stream *m;
  int64_t it;        /* index into m->items */
  scan_task t;
  task_reader fr;    /* fr.task points at t: an item never moves */
  int pending;       /* opening ahead: task submitted, not joined */
  dk__task task;
  dk_status st;
  dk_error err;
} mt_item;

/* The next work item, or m->n_items when there is none (or the stream is cancelled). */
static int64_t mt_claim(mt_stream *m) {
  pthread_mutex_lock(&m->mu);
  int64_t it = m->cancel ? m->n_items : m->next_file++;
  pthread_mutex_unlock(&m->mu);
  return DK_MIN(it, m->n_items);
}

/* The next work item to open ahead of time, or m->n_items: only while at least one item is
** left for every reader, so that reading ahead never takes work an idle reader could do (two
** files and two readers: each reads one). */
static int64_t mt_claim_ahead(mt_stream *m) {
  pthread_mutex_lock(&m->mu);
  int64_t it = m->cancel || m->n_items - m->next_file < m->n_threads ? m->n_items : m->next_file++;
  pthread_mutex_unlock(&m->mu);
  return it;
}

/* Opens item x->it; ahead: also its first row group, chunks included (read-ahead). */
static dk_status mt_open(mt_item *x, int ahead, dk_error *err) {
  mt_stream *m = x->m;
  dk_scan *scan = m->scan;
  int64_t i = m->items[3 * x->it];
  dk_scan__task_from_entry(&x->t, &m->entries[i], scan->pvals + i * (int64_t)scan->n_part_out);
  x->t.range_start = m->items[3 * x->it + 1];
  x->t.range_end = m->items[3 * x->it + 2];
  dk_status st = dk_scan__task_open(&x->fr, &scan->plan, &scan->stats, scan->plan.sto, &x->t, err);
  if (!st && m->read_ahead > 0) st = dk_scan__task_read_ahead(&x->fr, m->ex, m->read_ahead, err);
  if (!st && ahead) st = dk_scan__task_prepare(&x->fr, err);
  if (st) dk__error_prefix(err, "%s", x->t.path);
  return st;
}

static void mt_open_task(void *arg) {
  mt_item *x = arg;
  x->st = mt_open(x, 1, &x->err);
}

/* A reader: takes items in turn and pushes their batches. With read-ahead, the next item is
** opened (footer, deletion vector, first row group's chunks) by a task on the executor while
** this one is decoded, and each item's row groups fetch the next one's chunks the same way
** (dk_scan__task_arm). Those tasks wait for nothing, so this task may join them. */
static void mt_worker(void *arg) {
  mt_stream *m = arg;
  dk_error err;
  dk_error_init(&err);
  mt_item slot[2];
  memset(slot, 0, sizeof slot);
  slot[0].m = slot[1].m = m;
  mt_item *cur = &slot[0], *nxt = &slot[1];
  dk_status st = DK_OK;
  cur->it = mt_claim(m);
  if (cur->it < m->n_items) st = mt_open(cur, 0, &err);
  while (!st && cur->it < m->n_items) {
    nxt->it = m->read_ahead > 0 ? mt_claim_ahead(m) : m->n_items;
    if (nxt->it < m->n_items) {
      dk_error_init(&nxt->err);
      nxt->pending = 1;
      dk__exec_submit(m->ex, &nxt->task, mt_open_task, nxt);
    }
    if (m->read_ahead > 0) dk_scan__task_arm(&cur->fr);
    int64_t remaining = -1;
    while (!st) {
      struct ArrowArray a;
      st = dk_scan__task_next(&cur->fr, &a, &remaining, &err);
      if (st || !a.release) break;
      mt_push(m, &a);
    }
    if (st) dk__error_prefix(&err, "%s", cur->t.path);
    dk_scan__task_close(&cur->fr);
    if (st) break;
    if (nxt->pending) {
      dk__exec_join(m->ex, &nxt->task);
      nxt->pending = 0;
      st = nxt->st;
      if (st) err = nxt->err;
      mt_item *x = cur;
      cur = nxt;
      nxt = x;
      pthread_mutex_lock(&m->mu);
      int cancel = m->cancel;
      pthread_mutex_unlock(&m->mu);
      if (cancel) break; /* released: the item opened ahead is not read */
    } else {
      cur->it = mt_claim(m);
      if (cur->it < m->n_items) st = mt_open(cur, 0, &err);
    }
  }
  dk_scan__task_close(&cur->fr); /* the failed open, if any */
  if (nxt->pending) dk__exec_join(m->ex, &nxt->task);
  dk_scan__task_close(&nxt->fr);
  pthread_mutex_lock(&m->mu);
  if (st && m->err.code == DK_OK) m->err = err;
  m->running--;
  pthread_cond_broadcast(&m->not_empty);
  pthread_mutex_unlock(&m->mu);
}

static dk_status mt_schema(void *state, struct ArrowSchema *out, dk_error *err) {
  mt_stream *m = state;
  return dk_scan_schema(out, m->scan, err);
}

static dk_status mt_next(void *state, struct ArrowArray *out, dk_error *err) {
  mt_stream *m = state;
  out->release = NULL;
  pthread_mutex_lock(&m->mu);
  while (m->count == 0 && m->running > 0 && m->err.code == DK_OK)
    pthread_cond_wait(&m->not_empty, &m->mu);
  dk_status st = DK_OK;
  if (m->err.code != DK_OK) {
    st = dk__error_set(err, m->err.code, "%s", m->err.message);
  } else if (m->count > 0) {
    dk__array_move(&m->q[m->head], out);
    m->head = (m->head + 1) % m->cap;
    m->count--;
    pthread_cond_signal(&m->not_full);
  }
  pthread_mutex_unlock(&m->mu);
  return st;
}

static void mt_release(void *state) {
  mt_stream *m = state;
  pthread_mutex_lock(&m->mu);
  m->cancel = 1;
  pthread_cond_broadcast(&m->not_full);
  pthread_mutex_unlock(&m->mu);
  for (int i = 0; i < m->submitted; i++) dk__exec_join(m->ex, &m->tasks[i]);
  dk__exec_free(m->ex);
  while (m->count > 0) {
    dk__array_release(&m->q[m->head]);
    m->head = (m->head + 1) % m->cap;
    m->count--;
  }
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->not_empty);
  pthread_cond_destroy(&m->not_full);
  dk_scan *scan = m->scan;
  dk__free(scan->alloc, m->q);
  dk__free(scan->alloc, m->tasks);
  dk__free(scan->alloc, m->items);
  dk__free(scan->alloc, m->entries);
  dk__free(scan->alloc, m);
  dk_scan_free(scan);
}

/* Work items for the reader threads: whole files, and files larger than MT_CHUNK (or the
** split target when smaller) cut into
** byte ranges (row groups by start offset) so one big file also spreads over the threads. */
#define MT_CHUNK ((int64_t)16 << 20)

static dk_status mt_items(int64_t **out, int64_t *n, const dk_scan *scan, dk_error *err) {
  int64_t cap = 0;
  const int64_t C = DK_MIN(MT_CHUNK, scan->split_target);
  *out = NULL;
  *n = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t i = 0; i < scan->n_files; i++) {
      dk_file_entry f;
      DK_RETURN_NOT_OK(dk_snapshot_file(&f, scan->snap, scan->files[i], err));
      int64_t k = f.size > C ? (f.size + C - 1) / C : 1;
      for (int64_t j = 0; j < k; j++) {
        if (pass == 0) {
          cap++;
          continue;
        }
        int64_t *it = &(*out)[3 * (*n)++];
        it[0] = i;
        it[1] = k > 1 ? j * C : 0;
        it[2] = k > 1 ? (j + 1 == k ? f.size + 1 : (j + 1) * C) : 0;
      }
    }
    if (pass == 0) {
      *out = dk__calloc(scan->alloc, (size_t)(cap ? cap : 1) * 3, sizeof **out);
      DK_RETURN_IF(!*out, DK_NOMEM, err, "out of memory (scan)");
    }
  }
  return DK_OK;
}

static dk_status mt_read(struct ArrowArrayStream *out, dk_scan *scan, int threads, int64_t *items,
                         int64_t n_items, dk_error *err) {
  mt_stream *m = dk__calloc(scan->alloc, 1, sizeof *m);
  if (!m) {
    dk__free(scan->alloc, items);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  __atomic_add_fetch(&scan->refs, 1, __ATOMIC_RELAXED);
  m->scan = scan;
  m->items = items;
  m->n_items = n_items;
  m->entries = dk__calloc(scan->alloc, (size_t)(scan->n_files ? scan->n_files : 1),
                          sizeof *m->entries);
  for (int64_t i = 0; m->entries && i < scan->n_files; i++) {
    dk_status est = dk_snapshot_file(&m->entries[i], scan->snap, scan->files[i], err);
    if (est) {
      m->n_threads = 0;
      pthread_mutex_init(&m->mu, NULL);
      pthread_cond_init(&m->not_empty, NULL);
      pthread_cond_init(&m->not_full, NULL);
      mt_release(m);
      return est;
    }
    m->entries[i].stats = NULL; /* not valid outside this thread */
  }
  m->n_threads = threads;
  m->cap = 2 * threads;
  m->q = dk__calloc(scan->alloc, (size_t)m->cap, sizeof *m->q);
  m->tasks = dk__calloc(scan->alloc, (size_t)threads, sizeof *m->tasks);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->not_empty, NULL);
  pthread_cond_init(&m->not_full, NULL);
  if (!m->q || !m->tasks || !m->entries) {
    mt_release(m);
    return dk__error_set(err, DK_NOMEM, "out of memory (scan)");
  }
  /* with read-ahead, up to two fetches per reader wait on the network at a time (its next
  ** item's open and its next row group's chunks): room for two more workers each */
  m->read_ahead = scan->read_ahead > 0 && dk_io__storage_remote(scan->plan.sto) ? scan->read_ahead : 0;
  dk_status est = dk__exec_new(&m->ex, 1 + threads * (m->read_ahead ? 3 : 1), scan->alloc, err);
  if (est) {
    mt_release(m);
    return est;
  }
  pthread_mutex_lock(&m->mu);
  m->running = threads;
  pthread_mutex_unlock(&m->mu);
  for (int i = 0; i < threads; i++) dk__exec_submit(m->ex, &m->tasks[m->submitted++], mt_worker, m);
  if (dk__exec_workers(m->ex) == 0) {
    /* no reader thread could start: the tasks would only run when released */
    mt_release(m);
    return dk__error_set(err, DK_IO, "scan: cannot start reader threads");
  }
  static const dk_stream_impl impl = {mt_schema, mt_next, mt_release};
  return dk__stream_init(out, &impl, m, scan->alloc, err);
}

dk_status dk_scan_read(struct ArrowArrayStream *out, dk_scan *scan, dk_error *err) {
  if (scan->threads > 1 && scan->plan.limit < 0 && scan->n_files > 0) {
    int64_t *items, n;
    DK_RETURN_NOT_OK(mt_items(&items, &n, scan, err));
    if (n > 1) return mt_read(out, scan, (int)DK_MIN(scan->threads, n), items, n, err);
    dk__free(scan->alloc, items);
  }
  scan_stream *s = dk__calloc(scan->alloc, 1, sizeof *s);
  DK_RETURN_IF(!s, DK_NOMEM, err, "out of memory (scan)");
  __atomic_add_fetch(&scan->refs, 1, __ATOMIC_RELAXED);
  s->scan = scan;
  s->remaining = scan->plan.limit;
  s->sto = scan->plan.sto;
  s->slot[0].s = s->slot[1].s = s;
  s->cur = &s->slot[0];
  s->nxt = &s->slot[1];
  /* read-ahead (see the single-threaded stream above): the caller and two fetching workers */
  if (scan->read_ahead > 0 && scan->plan.limit < 0 && dk_io__storage_remote(s->sto) &&
      scan->n_files > 0) {
    dk_status est = dk__exec_new(&s->ex, 3, scan->alloc, err);
    if (est) {
      scan_stream_release(s);
      return est;
    }
    s->read_ahead = scan->read_ahead;
  }
  static const dk_stream_impl impl = {scan_stream_schema, scan_stream_next, scan_stream_release};
  return dk__stream_init(out, &impl, s, scan->alloc, err);
}
