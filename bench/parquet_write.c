/*
** parquet_write.c — benchmark driver for P5 "parquet_write" (issue #13), run by bench/run.py.
**
** Reads a Parquet file with dk's reader into memory (all batches, kept), then times writing
** them with dk's writer (include/dk/parquet.h) to OUT with the given codec and threads, and
** prints one JSON line: {"seconds": <write wall>, "cpu_seconds": <write CPU>, "rows": N,
** "size": <bytes of OUT>, "fsync_s": <an fsync of OUT afterwards, as the peers' workers time>}.
**
** usage: bench_parquet_write IN OUT [--threads N] [--codec snappy|zstd|none] [--repeat N]
**                            [--columns a,b,...] [--keep]
** --columns writes only those top-level columns (profiling one column at a time); --keep
** leaves OUT in place.
**
** bench_parquet_write --spin [--threads N] is the run's control: a fixed amount of integer work
** split evenly over N threads that never wait for each other (no memory traffic, no locks), so
** its 1- vs 2-thread ratio is the most any program gets from a second thread on the machine as
** loaded during the run (on a shared box the scheduler's per-session groups can give a
** process one core's share whatever its thread count). With DK_BENCH_PERF_CTL=<fifo> the writes alone are profiled:
**   mkfifo /tmp/ctl; DK_BENCH_PERF_CTL=/tmp/ctl perf record -D -1 --control fifo:/tmp/ctl ...
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <pthread.h>

#include "dk/parquet.h"
#include "driver.h"

#define SPIN_STEPS 600000000ull /* about a second of one core (here) */

static void *spin(void *arg) {
  uint64_t n = *(const uint64_t *)arg, x = 88172645463325252ull;
  for (uint64_t i = 0; i < n; i++) { /* xorshift64: a dependent chain the compiler keeps */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  *(uint64_t *)arg = x;
  return NULL;
}

static int spin_main(int threads) {
  if (threads < 1 || threads > 64) threads = 1;
  pthread_t t[64];
  uint64_t work[64];
  double t0 = bench_wall(), c0 = bench_cpu();
  for (int i = 0; i < threads; i++) {
    work[i] = SPIN_STEPS / (uint64_t)threads;
    if (i > 0 && pthread_create(&t[i], NULL, spin, &work[i]) != 0) return 1;
  }
  spin(&work[0]);
  uint64_t sum = work[0];
  for (int i = 1; i < threads; i++) {
    pthread_join(t[i], NULL);
    sum ^= work[i];
  }
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"rows\": 0, \"check\": %llu}\n",
         bench_wall() - t0, bench_cpu() - c0, (unsigned long long)(sum & 0xff));
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--spin"))
    return spin_main(argc >= 4 && !strcmp(argv[2], "--threads") ? atoi(argv[3]) : 1);
  if (argc < 3) {
    fprintf(stderr, "usage: %s IN OUT [--threads N] [--codec C] [--repeat N]\n", argv[0]);
    return 2;
  }
  int threads = 1, repeat = 1, keep = 0;
  const char *columns = NULL;
  dk_parquet_codec codec = DK_PARQUET_SNAPPY;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--columns") && i + 1 < argc) columns = argv[++i];
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else if (!strcmp(argv[i], "--codec") && i + 1 < argc) {
      const char *c = argv[++i];
      codec = !strcmp(c, "zstd") ? DK_PARQUET_ZSTD : !strcmp(c, "none") ? DK_PARQUET_UNCOMPRESSED
                                                                        : DK_PARQUET_SNAPPY;
    }
  }
  dk_error err;
  dk_error_init(&err);
  dk_parquet_file *f = NULL;
  if (dk_parquet_open(&f, argv[1], NULL, &err) != DK_OK) return bench_fail(argv[0], "open", &err);
  const char *names[64];
  size_t n_names = 0;
  char *list = columns ? strdup(columns) : NULL;
  for (char *t = list ? strtok(list, ",") : NULL; t && n_names < 64; t = strtok(NULL, ","))
    names[n_names++] = t;
  dk_parquet_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
  ro.columns = n_names ? names : NULL;
  ro.n_columns = n_names;
  struct ArrowArrayStream s;
  if (dk_parquet_read(&s, f, &ro, &err) != DK_OK) return bench_fail(argv[0], "read", &err);
  struct ArrowSchema schema;
  if (s.get_schema(&s, &schema) != 0) return 1;
  size_t n = 0, cap = 256;
  struct ArrowArray *batches = calloc(cap, sizeof *batches);
  int64_t rows = 0;
  for (;;) {
    if (n == cap) batches = realloc(batches, (cap *= 2) * sizeof *batches);
    memset(&batches[n], 0, sizeof batches[n]);
    if (s.get_next(&s, &batches[n]) != 0) return 1;
    if (!batches[n].release) break;
    rows += batches[n].length;
    n++;
  }
  /* perf's control fifo (see the banner): events on for the writes only */
  const char *ctl = getenv("DK_BENCH_PERF_CTL");
  int ctl_fd = ctl ? open(ctl, O_WRONLY) : -1;
  if (ctl_fd >= 0 && write(ctl_fd, "enable\n", 7) != 7) return 1;
  double best = 1e30, best_cpu = 0;
  int64_t size = 0;
  for (int r = 0; r < repeat; r++) {
    dk_parquet_write_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
    o.codec = codec;
    o.threads = threads;
    double t0 = bench_wall(), c0 = bench_cpu();
    dk_parquet_writer *w = NULL;
    dk_parquet_write_result res = {DK_PARQUET_WRITE_RESULT_VERSION, 0, 0, 0};
    if (dk_parquet_writer_open(&w, NULL, argv[2], &schema, &o, &err) != DK_OK)
      return bench_fail(argv[0], "writer_open", &err);
    for (size_t i = 0; i < n; i++)
      if (dk_parquet_writer_write(w, &batches[i], &err) != DK_OK)
        return bench_fail(argv[0], "write", &err);
    if (dk_parquet_writer_close(w, &res, &err) != DK_OK) return bench_fail(argv[0], "close", &err);
    dk_parquet_writer_free(w);
    double dt = bench_wall() - t0, dc = bench_cpu() - c0;
    if (dt < best) best = dt, best_cpu = dc;
    size = res.file_size;
  }
  if (ctl_fd >= 0) {
    if (write(ctl_fd, "disable\n", 8) != 8) return 1;
    close(ctl_fd);
  }
  /* the same fsync the peers' workers time after their write (dk's commit did it already) */
  double f0 = bench_wall();
  int fd = open(argv[2], O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) return 1;
  close(fd);
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"rows\": %lld, \"size\": %lld, "
         "\"fsync_s\": %.6f}\n",
         best, best_cpu, (long long)rows, (long long)size, bench_wall() - f0);
  if (!keep) unlink(argv[2]);
  for (size_t i = 0; i < n; i++) batches[i].release(&batches[i]);
  free(batches);
  schema.release(&schema);
  s.release(&s);
  dk_parquet_file_free(f);
  free(list);
  return 0;
}
