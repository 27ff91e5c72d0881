/*
** s3_tool.c — a test driver over the S3 backend's vtable (dk/sys/storage_s3.h), used by
** tests/python/test_s3_*.py against a real S3 server: one operation per run, its outcome
** printed as one JSON line. Public API only.
**
**   dk_s3_tool [-o key=value]... [--cancel-after MS] CMD ARGS...
**     ls DIR [START]                 list_from
**     get PATH OUT                   read (bytes to the file OUT)
**     range PATH OFF LEN OUT         read_range
**     ranges PATH OUT OFF:LEN...     read_ranges (the ranges' bytes to OUT in argument order)
**     stat PATH                      stat
**     put PATH IN                    write
**     pia PATH IN                    put_if_absent
**     rm PATH                        remove
**     stream PATH IN CHUNK MODE      open_write, IN written CHUNK bytes at a time, then
**                                    MODE = commit | commit-if-absent | abort
**     race PATH N                    N threads put_if_absent PATH at once ("thread <i>\n")
** Options are dk_s3_options_set names (bucket=... among them).
** Output: {"status": "ok" | dk_status_str, "error": message, ...results, "stats": {...}}.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dk/sys/storage_s3.h"

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  for (size_t r; b && (r = fread(b + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) b = realloc(b, cap *= 2);
  }
  fclose(f);
  *len = n;
  return b;
}

static int spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok ? 0 : -1;
}

static double g_cancel_at;
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
static int cancel_hook(void *ctx) {
  (void)ctx;
  return g_cancel_at > 0 && now_s() >= g_cancel_at;
}

static FILE *out;
static int first_field = 1;
static void field(const char *name) {
  fprintf(out, "%s\"%s\": ", first_field ? "" : ", ", name);
  first_field = 0;
}

static dk_status list_cb(const dk_file_info *fi, void *payload) {
  int *count = payload;
  fprintf(out, "%s{\"path\": ", (*count)++ ? ", " : "");
  json_str(out, fi->path);
  fprintf(out, ", \"size\": %lld, \"mtime_ms\": %lld, \"dir\": %d}", (long long)fi->size,
          (long long)fi->mtime_ms, fi->is_dir);
  return DK_OK;
}

typedef struct race_arg {
  dk_storage *s;
  const char *path;
  int i;
  pthread_barrier_t *bar;
  dk_status st;
  dk_error err;
} race_arg;

static void *race_main(void *p) {
  race_arg *a = p;
  char body[64];
  int n = snprintf(body, sizeof body, "thread %d\n", a->i);
  pthread_barrier_wait(a->bar);
  a->st = a->s->put_if_absent(a->s, a->path, body, (size_t)n, &a->err);
  return NULL;
}

static int usage(void) {
  fprintf(stderr, "usage: dk_s3_tool [-o key=value]... [--cancel-after MS] CMD ARGS...\n");
  return 2;
}

int main(int argc, char **argv) {
  out = stdout;
  dk_s3_options o = {.version = DK_S3_OPTIONS_VERSION};
  dk_error err = {0};
  int i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      char *kv = argv[++i], *eq = strchr(kv, '=');
      if (!eq) return usage();
      *eq = 0;
      if (dk_s3_options_set(&o, kv, eq + 1, &err) != DK_OK) {
        printf("{\"status\": \"%s\", \"error\": ", dk_status_str(err.code));
        json_str(stdout, err.message);
        printf("}\n");
        return 0;
      }
    } else if (!strcmp(argv[i], "--cancel-after") && i + 1 < argc) {
      g_cancel_at = now_s() + atof(argv[++i]) / 1000.0;
      o.cancel = cancel_hook;
    } else {
      break;
    }
  }
  if (i >= argc) return usage();
  const char *cmd = argv[i++];
  int nargs = argc - i;
  char **a = argv + i;
  dk_storage *s = NULL;
  dk_status st = dk_storage_s3_new(&s, &o, NULL, &err);
  fprintf(out, "{");
  double t0 = now_s();
  if (st == DK_OK) {
    if (!strcmp(cmd, "ls") && nargs >= 1) {
      field("entries");
      fprintf(out, "[");
      int count = 0;
      st = s->list_from(s, a[0], nargs > 1 ? a[1] : NULL, list_cb, &count, &err);
      fprintf(out, "]");
    } else if (!strcmp(cmd, "get") && nargs == 2) {
      uint8_t *data = NULL;
      size_t len = 0;
      st = s->read(s, a[0], &data, &len, &err);
      if (st == DK_OK) {
        spit(a[1], data, len);
        field("len");
        fprintf(out, "%zu", len);
      }
      if (data) s->free_buf(s, data);
    } else if (!strcmp(cmd, "range") && nargs == 4) {
      size_t len = strtoull(a[2], NULL, 10);
      char *buf = malloc(len ? len : 1);
      st = s->read_range(s, a[0], strtoll(a[1], NULL, 10), buf, len, &err);
      if (st == DK_OK) spit(a[3], buf, len);
      free(buf);
    } else if (!strcmp(cmd, "ranges") && nargs >= 2) {
      size_t n = (size_t)nargs - 2, total = 0;
      dk_byte_range *r = calloc(n ? n : 1, sizeof *r);
      for (size_t k = 0; k < n; k++) {
        r[k].offset = strtoll(a[2 + k], NULL, 10);
        const char *colon = strchr(a[2 + k], ':');
        r[k].len = colon ? strtoull(colon + 1, NULL, 10) : 0;
        total += r[k].len;
      }
      char *buf = malloc(total ? total : 1);
      for (size_t k = 0, off = 0; k < n; off += r[k].len, k++) r[k].buf = buf + off;
      st = s->read_ranges(s, a[0], r, n, &err);
      if (st == DK_OK) spit(a[1], buf, total);
      free(buf);
      free(r);
    } else if (!strcmp(cmd, "stat") && nargs == 1) {
      dk_file_info fi;
      st = s->stat(s, a[0], &fi, &err);
      if (st == DK_OK) {
        field("size");
        fprintf(out, "%lld, \"mtime_ms\": %lld, \"dir\": %d", (long long)fi.size,
                (long long)fi.mtime_ms, fi.is_dir);
      }
    } else if ((!strcmp(cmd, "put") || !strcmp(cmd, "pia")) && nargs == 2) {
      size_t len = 0;
      char *data = slurp(a[1], &len);
      if (!data) return fprintf(stderr, "cannot read %s\n", a[1]), 2;
      st = cmd[1] == 'u' ? s->write(s, a[0], data, len, &err)
                         : s->put_if_absent(s, a[0], data, len, &err);
      free(data);
    } else if (!strcmp(cmd, "rm") && nargs == 1) {
      st = s->remove(s, a[0], &err);
    } else if (!strcmp(cmd, "stream") && nargs == 4) {
      size_t len = 0, chunk = strtoull(a[2], NULL, 10);
      char *data = slurp(a[1], &len);
      if (!data || !chunk) return fprintf(stderr, "cannot read %s\n", a[1]), 2;
      dk_storage_writer *w = NULL;
      st = s->open_write(s, a[0], &w, &err);
      for (size_t off = 0; st == DK_OK && off < len; off += chunk)
        st = w->write(w, data + off, len - off < chunk ? len - off : chunk, &err);
      if (w) {
        if (st != DK_OK || !strcmp(a[3], "abort")) w->abort(w);
        else st = w->commit(w, !strcmp(a[3], "commit-if-absent"), &err);
      }
      free(data);
    } else if (!strcmp(cmd, "race") && nargs == 2) {
      int n = atoi(a[1]);
      if (n < 1 || n > 64) return usage();
      race_arg ra[64];
      pthread_t th[64];
      pthread_barrier_t bar;
      pthread_barrier_init(&bar, NULL, (unsigned)n);
      for (int k = 0; k < n; k++) {
        ra[k] = (race_arg){.s = s, .path = a[0], .i = k, .bar = &bar};
        pthread_create(&th[k], NULL, race_main, &ra[k]);
      }
      field("results");
      fprintf(out, "[");
      for (int k = 0; k < n; k++) {
        pthread_join(th[k], NULL);
        fprintf(out, "%s{\"thread\": %d, \"status\": \"%s\", \"error\": ", k ? ", " : "", k,
                ra[k].st == DK_OK ? "ok" : dk_status_str(ra[k].st));
        json_str(out, ra[k].err.message);
        fprintf(out, "}");
      }
      fprintf(out, "]");
      pthread_barrier_destroy(&bar);
    } else {
      s->free(s);
      fprintf(out, "}\n");
      return usage();
    }
  }
  field("status");
  fprintf(out, "\"%s\"", st == DK_OK ? "ok" : dk_status_str(st));
  if (st != DK_OK) {
    field("error");
    json_str(out, err.message);
  }
  field("seconds");
  fprintf(out, "%.3f", now_s() - t0);
  if (s) {
    dk_s3_stats ss = {.version = DK_S3_STATS_VERSION};
    if (dk_storage_s3_stats(s, &ss, NULL) == DK_OK) {
      field("stats");
      fprintf(out,
              "{\"requests\": %lld, \"retries\": %lld, \"gets\": %lld, \"rx\": %lld, "
              "\"tx\": %lld}",
              (long long)ss.requests, (long long)ss.retries, (long long)ss.get_requests,
              (long long)ss.bytes_received, (long long)ss.bytes_sent);
    }
    s->free(s);
  }
  fprintf(out, "}\n");
  return 0;
}
