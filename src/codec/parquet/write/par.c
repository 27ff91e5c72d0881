/*
** write/par.c — the writer's parallel-for: fn(ctx, i) for i in [0, n) on the caller's thread
** plus up to threads - 1 workers, items taken from a shared counter. It is the one place the
** writer makes threads, kept behind dk_pqw__par_* so it can move onto the library's shared
** executor (src/util/exec) without touching the writer.
*/
#include <pthread.h>
#include <stdatomic.h>

#include "codec/parquet/write/pqw.h"

struct pqw_par {
  const dk_allocator *alloc;
  int n_workers;
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  uint64_t gen;            /* job generation */
  int stop;
  int busy;                /* workers still inside the current job */
  void (*fn)(void *ctx, int i);
  void *ctx;
  int n;
  atomic_int next;
};

static void run_items(pqw_par *p) {
  for (;;) {
    int i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n) return;
    p->fn(p->ctx, i);
  }
}

static void *worker(void *arg) {
  pqw_par *p = arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->gen == seen) pthread_cond_wait(&p->cv_work, &p->mu);
    if (p->stop) break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    run_items(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->cv_done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

dk_status dk_pqw__par_new(pqw_par **out, int threads, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  pqw_par *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
  p->alloc = alloc;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv_work, NULL);
  pthread_cond_init(&p->cv_done, NULL);
  int nw = threads > 1 ? threads - 1 : 0;
  if (nw) {
    p->threads = dk__calloc(alloc, (size_t)nw, sizeof *p->threads);
    if (!p->threads) {
      dk_pqw__par_free(p);
      return dk__error_set(err, DK_NOMEM, "out of memory");
    }
    for (int i = 0; i < nw; i++) {
      if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
      p->n_workers++;
    }
  }
  *out = p;
  return DK_OK;
}

void dk_pqw__par_free(pqw_par *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv_work);
  pthread_cond_destroy(&p->cv_done);
  dk__free(p->alloc, p->threads);
  dk__free(p->alloc, p);
}

void dk_pqw__par_run(pqw_par *p, int n, void (*fn)(void *ctx, int i), void *ctx) {
  if (!p || p->n_workers == 0 || n <= 1) {
    for (int i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  atomic_store(&p->next, 0);
  p->busy = p->n_workers;
  p->gen++;
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  run_items(p);
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0) pthread_cond_wait(&p->cv_done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
