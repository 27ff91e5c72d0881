/*
** write/par.c — the writer's parallel-for over columns: fn(ctx, i) for i in [0, n) on the
** library's executor (util/exec.h, a fan-out whose threads take items from a shared counter).
** The executor belongs to the writer (sized by dk_parquet_write_options.threads).
*/
#include <stdatomic.h>

#include "codec/parquet/write/pqw.h"
#include "util/exec.h"

struct pqw_par {
  const dk_allocator *alloc;
  dk__exec *ex;
};

typedef struct job {
  void (*fn)(void *ctx, int i);
  void *ctx;
  int n;
  atomic_int next;
} job;

static void run_items(void *arg) {
  job *j = arg;
  for (;;) {
    int i = atomic_fetch_add(&j->next, 1);
    if (i >= j->n) return;
    j->fn(j->ctx, i);
  }
}

dk_status dk_pqw__par_new(pqw_par **out, int threads, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  pqw_par *p = dk__calloc(alloc, 1, sizeof *p);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
  p->alloc = alloc;
  dk_status st = dk__exec_new(&p->ex, threads, alloc, err);
  if (st != DK_OK) {
    dk__free(alloc, p);
    return st;
  }
  *out = p;
  return DK_OK;
}

void dk_pqw__par_free(pqw_par *p) {
  if (!p) return;
  dk__exec_free(p->ex);
  dk__free(p->alloc, p);
}

dk__exec *dk_pqw__par_exec(pqw_par *p) { return p ? p->ex : NULL; }

void dk_pqw__par_run(pqw_par *p, int n, void (*fn)(void *ctx, int i), void *ctx) {
  job j = {fn, ctx, n, 0};
  int threads = p ? dk__exec_threads(p->ex) : 1;
  if (threads <= 1 || n <= 1) {
    run_items(&j);
    return;
  }
  dk__exec_fanout(p->ex, DK_MIN(threads, n), run_items, &j);
}
