/*
** exec.c — the executor (see exec.h): a queue of caller-owned tasks, worker threads started
** on demand up to the executor's size, and joins that run a not-yet-started task on the
** joining thread.
**
** One mutex guards the queue and every task's state; workers wait on `work`, joiners on
** `done` (broadcast when any task finishes: joins are few and short-lived, so one condition
** serves them all). Workers block the asynchronous signals, so that a process's signal
** handlers (Python's, a JVM's) keep running on the threads that expect them.
*/
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "util/exec.h"

enum {
  DK__TASK_IDLE = 0, /* not submitted, or joined */
  DK__TASK_DEFERRED, /* submitted to no worker: runs when joined */
  DK__TASK_QUEUED,   /* in the queue */
  DK__TASK_RUNNING,  /* taken by a worker */
  DK__TASK_DONE      /* run by a worker, not joined yet */
};

#define MAX_AUTO_THREADS 8

struct dk__exec {
  const dk_allocator *alloc;
  int threads;              /* the size asked for, caller included (never changes) */
  int max_workers;          /* threads - 1, lowered when a thread cannot be started (mu) */
  pthread_mutex_t mu;
  pthread_cond_t work;      /* a task was queued, or quit */
  pthread_cond_t done;      /* a task run by a worker finished */
  dk__task *head, *tail;    /* queued tasks, oldest first */
  int n_workers, n_idle;
  int quit;
  pthread_t *tids;          /* max_workers entries */
};

dk_status dk__exec_new(dk__exec **out, int threads, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  if (threads <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    threads = c > 0 ? (int)DK_MIN(c, MAX_AUTO_THREADS) : 1;
  }
  dk__exec *ex = dk__calloc(alloc, 1, sizeof *ex);
  if (!ex) return dk__error_set(err, DK_NOMEM, "out of memory (executor)");
  ex->alloc = alloc;
  ex->threads = threads;
  ex->max_workers = threads - 1;
  if (ex->max_workers > 0) {
    ex->tids = dk__calloc(alloc, (size_t)ex->max_workers, sizeof *ex->tids);
    if (!ex->tids) {
      dk__free(alloc, ex);
      return dk__error_set(err, DK_NOMEM, "out of memory (executor)");
    }
  }
  pthread_mutex_init(&ex->mu, NULL);
  pthread_cond_init(&ex->work, NULL);
  pthread_cond_init(&ex->done, NULL);
  *out = ex;
  return DK_OK;
}

void dk__exec_free(dk__exec *ex) {
  if (!ex) return;
  pthread_mutex_lock(&ex->mu);
  DK_DCHECK(!ex->head);
  ex->quit = 1;
  pthread_cond_broadcast(&ex->work);
  pthread_mutex_unlock(&ex->mu);
  for (int i = 0; i < ex->n_workers; i++) pthread_join(ex->tids[i], NULL);
  pthread_mutex_destroy(&ex->mu);
  pthread_cond_destroy(&ex->work);
  pthread_cond_destroy(&ex->done);
  dk__free(ex->alloc, ex->tids);
  dk__free(ex->alloc, ex);
}

int dk__exec_threads(const dk__exec *ex) { return ex ? ex->threads : 1; }

int dk__exec_workers(dk__exec *ex) {
  if (!ex) return 0;
  pthread_mutex_lock(&ex->mu);
  int n = ex->n_workers;
  pthread_mutex_unlock(&ex->mu);
  return n;
}

static void *worker_main(void *arg) {
  dk__exec *ex = arg;
  pthread_mutex_lock(&ex->mu);
  for (;;) {
    while (!ex->quit && !ex->head) {
      ex->n_idle++;
      pthread_cond_wait(&ex->work, &ex->mu);
      ex->n_idle--;
    }
    if (ex->quit) break;
    dk__task *t = ex->head;
    ex->head = t->next;
    if (ex->head) ex->head->prev = NULL;
    else ex->tail = NULL;
    t->state = DK__TASK_RUNNING;
    pthread_mutex_unlock(&ex->mu);
    t->fn(t->arg);
    pthread_mutex_lock(&ex->mu);
    t->state = DK__TASK_DONE;
    pthread_cond_broadcast(&ex->done);
  }
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

/* Starts one more worker (called with mu held). A failure only caps the executor's size:
 * queued tasks still run, on their joiners. */
static void spawn_worker(dk__exec *ex) {
  sigset_t all, old;
  sigfillset(&all);
  /* synchronous signals cannot be blocked meaningfully */
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  if (pthread_create(&ex->tids[ex->n_workers], NULL, worker_main, ex) == 0)
    ex->n_workers++;
  else
    ex->max_workers = ex->n_workers;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void dk__exec_submit(dk__exec *ex, dk__task *t, void (*fn)(void *arg), void *arg) {
  t->fn = fn;
  t->arg = arg;
  t->prev = t->next = NULL;
  if (!ex || ex->threads == 1) {
    t->state = DK__TASK_DEFERRED;
    return;
  }
  pthread_mutex_lock(&ex->mu);
  if (ex->max_workers == 0) { /* no worker could be started */
    t->state = DK__TASK_DEFERRED;
    pthread_mutex_unlock(&ex->mu);
    return;
  }
  t->state = DK__TASK_QUEUED;
  t->prev = ex->tail;
  if (ex->tail) ex->tail->next = t;
  else ex->head = t;
  ex->tail = t;
  if (ex->n_idle > 0)
    pthread_cond_signal(&ex->work);
  else if (ex->n_workers < ex->max_workers)
    spawn_worker(ex);
  pthread_mutex_unlock(&ex->mu);
}

void dk__exec_join(dk__exec *ex, dk__task *t) {
  if (!ex || ex->threads == 1) { /* only this thread ever sees t */
    if (t->state == DK__TASK_DEFERRED) {
      t->state = DK__TASK_IDLE;
      t->fn(t->arg);
    }
    return;
  }
  pthread_mutex_lock(&ex->mu);
  if (t->state == DK__TASK_IDLE) { /* never submitted */
    pthread_mutex_unlock(&ex->mu);
    return;
  }
  if (t->state == DK__TASK_DEFERRED) {
    t->state = DK__TASK_IDLE;
    pthread_mutex_unlock(&ex->mu);
    t->fn(t->arg);
    return;
  }
  if (t->state == DK__TASK_QUEUED) { /* no worker took it: run it here */
    if (t->prev) t->prev->next = t->next;
    else ex->head = t->next;
    if (t->next) t->next->prev = t->prev;
    else ex->tail = t->prev;
    t->state = DK__TASK_IDLE;
    pthread_mutex_unlock(&ex->mu);
    t->fn(t->arg);
    return;
  }
  while (t->state != DK__TASK_DONE) pthread_cond_wait(&ex->done, &ex->mu);
  t->state = DK__TASK_IDLE;
  pthread_mutex_unlock(&ex->mu);
}

#define MAX_FANOUT 64

void dk__exec_fanout(dk__exec *ex, int n, void (*fn)(void *arg), void *arg) {
  n = DK_MIN(n, dk__exec_threads(ex));
  int k = DK_MIN(n - 1, MAX_FANOUT - 1);
  dk__task ts[MAX_FANOUT - 1];
  for (int i = 0; i < k; i++) dk__exec_submit(ex, &ts[i], fn, arg);
  fn(arg);
  for (int i = 0; i < k; i++) dk__exec_join(ex, &ts[i]);
}
