/*
** parquet_decode.c — benchmark driver for P0 "parquet_decode" (issue #2), run by bench/run.py.
**
** Opens one Parquet file with dk's reader (include/dk/parquet.h), reads every column of every
** row group to Arrow batches with the given number of decode threads, releases each batch,
** and prints one JSON line on stdout:
**     {"seconds": <open + read wall time>, "rows": <rows seen>, "batches": <n>}
** `--decompress-only` instead times decompress_all() below (page decompression without
** decoding, a lower bound for the reader) and prints {"seconds", "bytes"}.
**
** While dk's reader is not part of the build (no src/codec/parquet/reader.h), the driver still
** builds and prints
** {"status": "pending", ...} with exit code 3, which bench/run.py reports as "pending".
**
** usage: bench_parquet_decode FILE [--threads N] [--batch-size N] [--mmap] [--decompress-only]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dk/parquet.h"
#include "driver.h"

#if defined(__has_include)
#  if __has_include("codec/parquet/reader.h")
#    include "codec/parquet/reader.h"
#    define BENCH_HAVE_READER 1
#  endif
#endif
#ifndef BENCH_HAVE_READER
#  define BENCH_HAVE_READER 0
#endif

#define EXIT_PENDING 3

typedef struct bench_args {
  const char *path;
  int threads;
  int64_t batch_size;
  int use_mmap;
  int decompress_only;
} bench_args;

static int pending(const char *why) {
  printf("{\"status\": \"pending\", \"reason\": \"%s\"}\n", why);
  return EXIT_PENDING;
}

static int parse_args(bench_args *a, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->threads = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      a->threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--batch-size") && i + 1 < argc) {
      a->batch_size = strtoll(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--mmap")) {
      a->use_mmap = 1;
    } else if (!strcmp(argv[i], "--decompress-only")) {
      a->decompress_only = 1;
    } else if (argv[i][0] != '-' && !a->path) {
      a->path = argv[i];
    } else {
      return -1;
    }
  }
  return a->path && a->threads >= 1 ? 0 : -1;
}

#if BENCH_HAVE_READER

static int fail(const char *what, const dk_error *err) {
  return bench_fail("bench_parquet_decode", what, err);
}

static int run_decode(const bench_args *a) {
  dk_error err;
  dk_error_init(&err);
  double c0 = bench_cpu(), t0 = bench_wall();
  dk_parquet_open_options oo = {.version = DK_PARQUET_OPEN_OPTIONS_VERSION, .use_mmap = a->use_mmap};
  dk_parquet_file *f = NULL;
  if (dk_parquet_open(&f, a->path, &oo, &err) != DK_OK) return fail("open", &err);
  dk_parquet_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
  ro.batch_size = a->batch_size;
  ro.threads = a->threads;
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof stream);
  if (dk_parquet_read(&stream, f, &ro, &err) != DK_OK) {
    dk_parquet_file_free(f);
    return fail("read", &err);
  }
  int64_t rows, batches;
  int rc = bench_drain(&stream, "bench_parquet_decode", &rows, &batches);
  stream.release(&stream);
  dk_parquet_file_free(f);
  double t1 = bench_wall(), c1 = bench_cpu();
  if (rc) return rc;
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"rows\": %lld, \"batches\": %lld}\n",
         t1 - t0, c1 - c0, (long long)rows, (long long)batches);
  return 0;
}

/* The "merely decompress" baseline (issue #2: the reader should stay within 2x of the time to
** read and decompress the same pages): reads every column chunk of every row group, walks its
** pages (parquet.thrift PageHeader) and decompresses each page body into a reused buffer,
** decoding nothing. Same I/O path as the reader (dk_pq__file_read), so the ratio isolates
** decoding + assembly. */
static dk_status decompress_all(dk_parquet_file *f, int64_t *bytes_out, dk_error *err) {
  *bytes_out = 0;
  dk_status st = DK_OK;
  uint8_t *chunk = NULL, *out = NULL;
  size_t chunk_cap = 0, out_cap = 0;
  for (int g = 0; st == DK_OK && g < f->meta.n_row_groups; g++) {
    const pq_row_group *rg = &f->meta.row_groups[g];
    for (int c = 0; st == DK_OK && c < rg->n_columns; c++) {
      const pq_column_meta *cm = &rg->columns[c];
      int64_t start = cm->dictionary_page_offset >= 0 && cm->dictionary_page_offset < cm->data_page_offset
                          ? cm->dictionary_page_offset
                          : cm->data_page_offset;
      int64_t len = cm->total_compressed;
      if (start < 0 || len < 0 || start > f->size || len > f->size - start) {
        st = dk__error_set(err, DK_CORRUPT, "%s: column chunk out of bounds", f->path);
        break;
      }
      if ((size_t)len > chunk_cap) {
        uint8_t *p = dk__realloc(f->alloc, chunk, (size_t)len);
        if (!p) {
          st = dk__error_set(err, DK_NOMEM, "out of memory");
          break;
        }
        chunk = p;
        chunk_cap = (size_t)len;
      }
      const uint8_t *view = NULL;
      st = dk_pq__file_read(f, start, (size_t)len, chunk, &view, err);
      if (st) break;
      const uint8_t *p = view ? view : chunk;
      size_t pos = 0;
      while (st == DK_OK && pos < (size_t)len) {
        pq_page_header h;
        size_t hn = 0;
        st = dk_pq__parse_page_header(&h, p + pos, (size_t)len - pos, start + (int64_t)pos, &hn, err);
        if (st) break;
        pos += hn;
        if (h.compressed_size < 0 || h.uncompressed_size < 0 ||
            (size_t)h.compressed_size > (size_t)len - pos) {
          st = dk__error_set(err, DK_CORRUPT, "%s: page at %lld overruns its chunk", f->path,
                             (long long)(start + (int64_t)pos));
          break;
        }
        const uint8_t *body = p + pos;
        size_t clen = (size_t)h.compressed_size, ulen = (size_t)h.uncompressed_size;
        if (h.has_v2) { /* levels are stored uncompressed before the values */
          size_t lv = (size_t)h.def_bytes + (size_t)h.rep_bytes;
          if (lv > clen || lv > ulen) {
            st = dk__error_set(err, DK_CORRUPT, "%s: bad v2 level sizes", f->path);
            break;
          }
          body += lv;
          clen -= lv;
          ulen -= lv;
        }
        if (!h.has_v2 || h.is_compressed) {
          if (ulen > out_cap) {
            uint8_t *q = dk__realloc(f->alloc, out, ulen);
            if (!q) {
              st = dk__error_set(err, DK_NOMEM, "out of memory");
              break;
            }
            out = q;
            out_cap = ulen;
          }
          st = dk_pq__decompress(cm->codec, body, clen, out, ulen, err);
        }
        *bytes_out += h.uncompressed_size;
        pos += (size_t)h.compressed_size;
      }
    }
  }
  dk__free(f->alloc, chunk);
  dk__free(f->alloc, out);
  return st;
}

static int run_decompress(const bench_args *a) {
  dk_error err;
  dk_error_init(&err);
  double c0 = bench_cpu(), t0 = bench_wall();
  dk_parquet_open_options oo = {.version = DK_PARQUET_OPEN_OPTIONS_VERSION, .use_mmap = a->use_mmap};
  dk_parquet_file *f = NULL;
  if (dk_parquet_open(&f, a->path, &oo, &err) != DK_OK) return fail("open", &err);
  int64_t bytes = 0;
  dk_status st = decompress_all(f, &bytes, &err);
  dk_parquet_file_free(f);
  double t1 = bench_wall(), c1 = bench_cpu();
  if (st != DK_OK) return fail("decompress", &err);
  printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"bytes\": %lld}\n", t1 - t0, c1 - c0,
         (long long)bytes);
  return 0;
}

#endif /* BENCH_HAVE_READER */

int main(int argc, char **argv) {
  bench_args a;
  if (parse_args(&a, argc, argv) != 0) {
    fprintf(stderr,
            "usage: %s FILE [--threads N] [--batch-size N] [--mmap] [--decompress-only]\n",
            argv[0]);
    return 2;
  }
  (void)pending; /* unused when every mode is built */
#if BENCH_HAVE_READER
  return a.decompress_only ? run_decompress(&a) : run_decode(&a);
#else
  return pending(a.decompress_only ? "n/a: dk's Parquet reader is not in this build"
                                   : "dk's Parquet reader is not in this build");
#endif
}
