/*
** driver.h — what the C benchmark drivers (bench/<name>.c, run by bench/run.py) share: clocks, the
** error line, and draining an Arrow stream. Header-only, static functions.
*/
#ifndef DK_BENCH_DRIVER_H
#define DK_BENCH_DRIVER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dk/arrow.h"
#include "dk/common.h"

/* Seconds on a clock: CLOCK_MONOTONIC (wall) or CLOCK_PROCESS_CPUTIME_ID (user+sys CPU of
** every thread of the process). */
static inline double bench_clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double bench_wall(void) { return bench_clock(CLOCK_MONOTONIC); }
static inline double bench_cpu(void) { return bench_clock(CLOCK_PROCESS_CPUTIME_ID); }

/* Prints "<prog>: <what>: <status>: <message>" to stderr; returns the exit code 1. */
static inline int bench_fail(const char *prog, const char *what, const dk_error *err) {
  fprintf(stderr, "%s: %s: %s: %s\n", prog, what, dk_status_str(err->code), err->message);
  return 1;
}

/* Reads every batch of a stream and drops it, counting rows and batches; the stream is left
** for the caller to release. Returns 0, or 1 after printing the stream's error. */
static inline int bench_drain(struct ArrowArrayStream *stream, const char *prog, int64_t *rows,
                              int64_t *batches) {
  *rows = *batches = 0;
  for (;;) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    int e = stream->get_next(stream, &batch);
    if (e != 0) {
      const char *msg = stream->get_last_error ? stream->get_last_error(stream) : NULL;
      fprintf(stderr, "%s: get_next: errno %d: %s\n", prog, e, msg ? msg : "");
      return 1;
    }
    if (!batch.release) return 0; /* end of stream */
    *rows += batch.length;
    (*batches)++;
    batch.release(&batch);
  }
}

#endif /* DK_BENCH_DRIVER_H */
