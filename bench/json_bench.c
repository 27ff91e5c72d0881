/*
** json_bench.c — throughput of the JSON parser (src/codec/json) on Delta commit lines.
**
** Collects every line of every _delta_log JSON commit of the shared corpus (listed and
** read through the local storage backend), builds a large newline-delimited buffer by
** repeating them (like a long checkpoint-less log), and parses it line by line into an
** arena that is recycled every 4096 lines, as log replay would. Reports MB/s for all
** actions and for "add" lines only, plus writer throughput (re-serialising the DOM).
** glibc is told not to trim/unmap freed memory (mallopt) so that recycled arena chunks
** do not page-fault again (set DK_BENCH_DEFAULT_MALLOC=1 to measure without that).
**
** Usage: bench_json_bench [testdata_dir] [megabytes]   (defaults: $DK_TESTDATA or
**        ../shared/testdata, 256 MB)
*/
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/json/json.h"
#include "dk/sys/storage.h"
#include "util/util.h"

typedef struct ctx {
  dk_storage *s;
  dk_buf all;   /* every commit line, '\n'-terminated */
  dk_buf adds;  /* only {"add":...} lines */
  int tables;
  int files;
} ctx;

static dk_status on_log_file(const dk_file_info *fi, void *payload) {
  ctx *c = payload;
  size_t n = strlen(fi->path);
  if (n < 5 || strcmp(fi->path + n - 5, ".json") != 0 || fi->is_dir) return DK_OK;
  if (strstr(fi->path, ".checkpoint.")) return DK_OK;
  uint8_t *data;
  size_t len;
  dk_error err = {0};
  if (c->s->read(c->s, fi->path, &data, &len, &err) != DK_OK) return DK_OK;
  const char *p = (const char *)data, *end = p + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    if (e > p) {
      dk__buf_append(&c->all, p, (size_t)(e - p), &err);
      dk__buf_putc(&c->all, '\n', &err);
      if (e - p > 7 && memcmp(p, "{\"add\":", 7) == 0) {
        dk__buf_append(&c->adds, p, (size_t)(e - p), &err);
        dk__buf_putc(&c->adds, '\n', &err);
      }
    }
    p = e + 1;
  }
  c->s->free_buf(c->s, data);
  c->files++;
  return DK_OK;
}

static dk_status on_table(const dk_file_info *fi, void *payload) {
  ctx *c = payload;
  if (!fi->is_dir) return DK_OK;
  char log[4096];
  snprintf(log, sizeof log, "%s/_delta_log", fi->path);
  dk_error err = {0};
  if (c->s->list_from(c->s, log, NULL, on_log_file, c, &err) == DK_OK) c->tables++;
  return DK_OK;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the build machine is shared */
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *repeat(const dk_buf *src, size_t target, size_t *len) {
  size_t reps = src->len ? (target + src->len - 1) / src->len : 0;
  char *big = malloc(reps * src->len + 1);
  for (size_t i = 0; i < reps; i++) memcpy(big + i * src->len, src->data, src->len);
  *len = reps * src->len;
  return big;
}

/* Parses every line; optionally writes each DOM back. Returns seconds, or -1 on error. */
static double run(const char *buf, size_t len, dk_buf *out, size_t *lines) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_error err = {0};
  const char *p = buf, *end = buf + len;
  size_t n = 0;
  double t0 = now();
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    dk_json_value *v;
    if (dk__json_parse(&v, &ar, p, (size_t)(e - p), &err) != DK_OK) {
      fprintf(stderr, "parse error: %s\n", err.message);
      return -1;
    }
    if (out) {
      dk__buf_clear(out);
      if (dk__json_write_value(out, v, &err) != DK_OK) return -1;
    }
    if (++n % 4096 == 0) {
      dk__arena_dispose(&ar);
      dk__arena_init(&ar, NULL, 0);
    }
    p = e + 1;
  }
  double t = now() - t0;
  dk__arena_dispose(&ar);
  *lines = n;
  return t;
}

int main(int argc, char **argv) {
  const char *data = argc > 1 ? argv[1] : getenv("DK_TESTDATA");
  if (!data) data = "../shared/testdata";
  size_t mb = argc > 2 ? (size_t)atol(argv[2]) : 256;
  /* keep freed arena chunks in the process (as a long-running engine would) instead of
   * returning them to the kernel after every recycle: otherwise page faults dominate */
  if (!getenv("DK_BENCH_DEFAULT_MALLOC")) {
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
  }
  ctx c = {0};
  dk_error err = {0};
  if (dk_storage_local_new(&c.s, NULL, &err) != DK_OK) return 1;
  dk__buf_init(&c.all, NULL);
  dk__buf_init(&c.adds, NULL);
  char root[4096];
  snprintf(root, sizeof root, "%s/delta-golden", data);
  if (c.s->list_from(c.s, root, NULL, on_table, &c, &err) != DK_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  printf("corpus: %d tables, %d commit files, %zu bytes of lines (%zu bytes of add lines)\n",
         c.tables, c.files, c.all.len, c.adds.len);
  const dk_buf *srcs[2] = {&c.all, &c.adds};
  const char *names[2] = {"all actions", "add lines"};
  for (int k = 0; k < 2; k++) {
    size_t len;
    char *big = repeat(srcs[k], mb << 20, &len);
    size_t lines;
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      double t = run(big, len, NULL, &lines);
      if (t < 0) return 1;
      if (t < best) best = t;
    }
    printf("parse %-12s %7.1f MB in %6.3f s: %7.1f MB/s, %5.2f M lines/s\n", names[k],
           (double)len / 1e6, best, (double)len / 1e6 / best, (double)lines / 1e6 / best);
    dk_buf out;
    dk__buf_init(&out, NULL);
    double t = run(big, len, &out, &lines);
    printf("parse+write %-6s %7.1f MB in %6.3f s: %7.1f MB/s\n", names[k], (double)len / 1e6, t,
           (double)len / 1e6 / t);
    dk__buf_dispose(&out);
    free(big);
  }
  dk__buf_dispose(&c.all);
  dk__buf_dispose(&c.adds);
  c.s->free(c.s);
  return 0;
}
