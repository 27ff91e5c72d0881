/*
** exec.h — the executor: the one place libdk starts threads (src/util/exec.c; not API).
**
** An executor belongs to a table (sized by dk_table_options.threads) or to a standalone
** reader (dk_parquet_read_options.threads), and every thread the library runs is one of its
** workers (libcurl's own name-resolver threads on S3 are libcurl's: storage/s3/s3.c): at most
** threads - 1 of them (the calling thread is the other one), started on first use, one at a
** time as work waits for a free worker, and joined when the executor is freed.
**
** Work is handed over as tasks that the caller owns (no allocation per task, so submitting
** cannot fail): dk__exec_submit queues one, dk__exec_join returns once it has run. A task
** that no worker has started yet when it is joined is taken back and run by the joining
** thread itself, so every job finishes even when no worker exists or all are busy with other
** jobs of the same executor. threads = 1 (or a NULL executor) therefore means no thread at
** all: each task runs inline, on the caller, when it is joined.
**
** Rules:
** - a task must not wait for another task or for its submitter (only the submitter joins);
** - every submitted task is joined before its memory goes and before the executor is freed;
** - submit and join may be called from any thread, several at once (one mutex inside);
**   each task is joined by one thread;
** - writes a task makes are visible to the thread that joined it.
**
** Typical use: a pipeline keeps a few tasks in flight (read and parse commit i + k while the
** caller applies commit i); a fan-out (dk__exec_fanout) runs one function on several
** threads that take work from a shared counter.
*/
#ifndef DK_UTIL_EXEC_H
#define DK_UTIL_EXEC_H

#include "util/util.h"

typedef struct dk__exec dk__exec;

typedef struct dk__task {
  void (*fn)(void *arg);
  void *arg;
  struct dk__task *prev, *next; /* queue links (internal) */
  int state;                    /* internal: DK__TASK_* */
} dk__task;

/* An executor for `threads` threads including the caller: 0 = automatic (the online CPUs,
 * at most 8), 1 = no worker thread ever. No thread starts here. */
dk_status dk__exec_new(dk__exec **out, int threads, const dk_allocator *alloc, dk_error *err);
/* Stops and joins the workers; accepts NULL. No task may be queued or running. */
void dk__exec_free(dk__exec *ex);
/* Threads a job may use at once, the caller included (1 for NULL). */
int dk__exec_threads(const dk__exec *ex);
/* Worker threads started so far (fewer than asked for when the system refused one). */
int dk__exec_workers(dk__exec *ex);

/* Queues fn(arg) as task t (caller-owned; t must stay put until joined). With a NULL or
 * one-thread executor the task only runs when joined. */
void dk__exec_submit(dk__exec *ex, dk__task *t, void (*fn)(void *arg), void *arg);
/* Returns once t has run: on a worker, or here when no worker had started it. */
void dk__exec_join(dk__exec *ex, dk__task *t);

/* Runs fn(arg) on up to n threads at once (the caller is one) and returns when every run has
 * returned; fn takes its work from shared state in arg (a counter). n <= 1 runs it once,
 * here. */
void dk__exec_fanout(dk__exec *ex, int n, void (*fn)(void *arg), void *arg);

#endif /* DK_UTIL_EXEC_H */
