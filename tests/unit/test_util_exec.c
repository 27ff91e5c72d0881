/*
** test_util_exec.c — the executor (src/util/exec.c): threads = 1 and a NULL executor start
** no thread (every task runs on the joining thread, when joined), a sized executor never runs
** more threads than its size, joins take back tasks no worker started, concurrent submitters
** share one executor, fan-outs run on several threads. make test-tsan runs these under
** ThreadSanitizer.
*/
#include <pthread.h>
#include <sched.h>

#include "test.h"
#include "util/exec.h"

#define MAX_SEEN 16

typedef struct seen {
  pthread_mutex_t mu;
  pthread_t ids[MAX_SEEN];
  int n;         /* distinct threads that ran a task */
  int runs;      /* tasks run */
  int running, max_running;
} seen;

static void seen_init(seen *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
}

static void seen_note(seen *s) {
  pthread_mutex_lock(&s->mu);
  pthread_t me = pthread_self();
  int k = 0;
  while (k < s->n && !pthread_equal(s->ids[k], me)) k++;
  if (k == s->n && s->n < MAX_SEEN) s->ids[s->n++] = me;
  s->runs++;
  if (++s->running > s->max_running) s->max_running = s->running;
  pthread_mutex_unlock(&s->mu);
  for (volatile int i = 0; i < 20000; i++) {
  }
  pthread_mutex_lock(&s->mu);
  s->running--;
  pthread_mutex_unlock(&s->mu);
}

static void task_note(void *arg) { seen_note(arg); }

DK_TEST(util_exec__one_thread_runs_inline_when_joined) {
  dk_error err;
  dk_error_init(&err);
  dk__exec *ex;
  CHECK_OK(dk__exec_new(&ex, 1, NULL, &err), &err);
  CHECK_EQ_INT(dk__exec_threads(ex), 1);
  seen s;
  seen_init(&s);
  dk__task t[8];
  for (int i = 0; i < 8; i++) dk__exec_submit(ex, &t[i], task_note, &s);
  CHECK_EQ_INT(s.runs, 0); /* nothing ran: there is no thread to run it */
  for (int i = 0; i < 8; i++) dk__exec_join(ex, &t[i]);
  CHECK_EQ_INT(s.runs, 8);
  CHECK_EQ_INT(s.n, 1);
  CHECK(pthread_equal(s.ids[0], pthread_self()));
  /* a joined task can be submitted again; a second join is a no-op */
  dk__exec_submit(ex, &t[0], task_note, &s);
  dk__exec_join(ex, &t[0]);
  dk__exec_join(ex, &t[0]);
  CHECK_EQ_INT(s.runs, 9);
  dk__exec_free(ex);
  pthread_mutex_destroy(&s.mu);
}

DK_TEST(util_exec__null_executor_runs_inline) {
  seen s;
  seen_init(&s);
  dk__task t;
  dk__exec_submit(NULL, &t, task_note, &s);
  CHECK_EQ_INT(s.runs, 0);
  dk__exec_join(NULL, &t);
  CHECK_EQ_INT(s.runs, 1);
  CHECK_EQ_INT(dk__exec_threads(NULL), 1);
  dk__exec_fanout(NULL, 8, task_note, &s);
  CHECK_EQ_INT(s.runs, 2);
  dk__exec_free(NULL);
  pthread_mutex_destroy(&s.mu);
}

DK_TEST(util_exec__sized_executor_bounds_its_threads) {
  dk_error err;
  dk_error_init(&err);
  dk__exec *ex;
  CHECK_OK(dk__exec_new(&ex, 3, NULL, &err), &err);
  CHECK_EQ_INT(dk__exec_threads(ex), 3);
  seen s;
  seen_init(&s);
  dk__task t[200];
  for (int i = 0; i < 200; i++) dk__exec_submit(ex, &t[i], task_note, &s);
  for (int i = 0; i < 200; i++) dk__exec_join(ex, &t[i]);
  CHECK_EQ_INT(s.runs, 200);
  /* two workers plus the joining thread */
  CHECK(s.n >= 1 && s.n <= 3);
  CHECK(s.max_running <= 3);
  dk__exec_free(ex);
  pthread_mutex_destroy(&s.mu);
}

/* The pipeline shape of log replay: k tasks in flight, joined in order, each refilled. */
typedef struct slot {
  int in, out;
} slot;

static void task_square(void *arg) {
  slot *s = arg;
  s->out = s->in * s->in;
}

DK_TEST(util_exec__pipeline_in_order) {
  dk_error err;
  dk_error_init(&err);
  for (int threads = 1; threads <= 4; threads++) {
    dk__exec *ex;
    CHECK_OK(dk__exec_new(&ex, threads, NULL, &err), &err);
    enum { N = 500, RING = 4 };
    slot sl[RING];
    dk__task t[RING];
    long long sum = 0;
    for (int i = 0; i < RING; i++) {
      sl[i].in = i;
      dk__exec_submit(ex, &t[i], task_square, &sl[i]);
    }
    for (int i = 0; i < N; i++) {
      dk__exec_join(ex, &t[i % RING]);
      CHECK_EQ_INT(sl[i % RING].out, (long long)i * i);
      sum += sl[i % RING].out;
      if (i + RING < N) {
        sl[i % RING].in = i + RING;
        dk__exec_submit(ex, &t[i % RING], task_square, &sl[i % RING]);
      }
    }
    CHECK_EQ_INT(sum, (long long)(N - 1) * N * (2 * N - 1) / 6);
    dk__exec_free(ex);
  }
}

/* Several threads submitting to one executor at once (several snapshots of one table). */
typedef struct submitter {
  dk__exec *ex;
  seen *s;
} submitter;

static void *submit_many(void *arg) {
  submitter *sb = arg;
  dk__task t[50];
  for (int i = 0; i < 50; i++) dk__exec_submit(sb->ex, &t[i], task_note, sb->s);
  for (int i = 49; i >= 0; i--) dk__exec_join(sb->ex, &t[i]); /* any order */
  return NULL;
}

DK_TEST(util_exec__concurrent_submitters) {
  dk_error err;
  dk_error_init(&err);
  dk__exec *ex;
  CHECK_OK(dk__exec_new(&ex, 2, NULL, &err), &err);
  seen s;
  seen_init(&s);
  submitter sb = {ex, &s};
  pthread_t th[4];
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, submit_many, &sb) == 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_EQ_INT(s.runs, 200);
  /* one worker beside the four submitters */
  CHECK(s.n <= 5);
  dk__exec_free(ex);
  pthread_mutex_destroy(&s.mu);
}

typedef struct counter {
  int next, n;
  int done[1000];
  seen s;
} counter;

static void fan_body(void *arg) {
  counter *c = arg;
  for (;;) {
    int i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
    if (i >= c->n) break;
    c->done[i]++;
    if (i % 50 == 0) seen_note(&c->s);
  }
}

DK_TEST(util_exec__fanout_does_every_item_once) {
  dk_error err;
  dk_error_init(&err);
  for (int threads = 1; threads <= 4; threads += 3) {
    dk__exec *ex;
    CHECK_OK(dk__exec_new(&ex, threads, NULL, &err), &err);
    static counter c;
    memset(&c, 0, sizeof c);
    seen_init(&c.s);
    c.n = 1000;
    dk__exec_fanout(ex, 16, fan_body, &c);
    for (int i = 0; i < 1000; i++) CHECK_EQ_INT(c.done[i], 1);
    CHECK(c.s.n <= threads);
    dk__exec_free(ex);
    pthread_mutex_destroy(&c.s.mu);
  }
}

DK_TEST(util_exec__automatic_size) {
  dk_error err;
  dk_error_init(&err);
  dk__exec *ex;
  CHECK_OK(dk__exec_new(&ex, 0, NULL, &err), &err);
  CHECK(dk__exec_threads(ex) >= 1 && dk__exec_threads(ex) <= 8);
  dk__exec_free(ex); /* never used: no thread was started */
}
