/*
** test_scan_pool.c — the scan's recycling allocator (src/scan/pool.c): exact properties of
** reuse, realloc, the cache bound and reference counting, and batches of a real Delta table
** that outlive their scan, snapshot and table (rows checked against the table's expected
** file; ASan/LSan check that every block is returned exactly once).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/scan.h"
#include "scan/scan_int.h"
#include "test.h"

static void counters(dk_scan_pool *p, int64_t *refs, int64_t *reused, size_t *cached) {
  dk_scan__pool_counters(p, refs, reused, cached);
}

DK_TEST(scan_pool__large_blocks_are_reused) {
  dk_error err;
  dk_error_init(&err);
  dk_scan_pool *p = NULL;
  CHECK_OK(dk_scan__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk_scan__pool_allocator(p);
  int64_t refs, reused;
  size_t cached;
  char *b1 = a->malloc(a->ctx, (size_t)1 << 20);
  CHECK(b1 != NULL);
  memset(b1, 0x5a, (size_t)1 << 20);
  counters(p, &refs, &reused, &cached);
  CHECK_EQ_INT(refs, 2);
  a->free(a->ctx, b1);
  counters(p, &refs, &reused, &cached);
  CHECK_EQ_INT(refs, 1);
  CHECK(cached >= (size_t)1 << 20);
  /* a slightly smaller request of the same size class gets the same block back */
  char *b2 = a->malloc(a->ctx, ((size_t)1 << 20) - 100);
  CHECK(b2 == b1);
  counters(p, &refs, &reused, &cached);
  CHECK_EQ_INT(reused, 1);
  CHECK_EQ_INT((int64_t)cached, 0);
  /* small blocks are not cached */
  char *s = a->malloc(a->ctx, 100);
  CHECK(s != NULL);
  memset(s, 1, 100);
  a->free(a->ctx, s);
  counters(p, &refs, &reused, &cached);
  CHECK_EQ_INT((int64_t)cached, 0);
  CHECK_EQ_INT(refs, 2);
  a->free(a->ctx, b2);
  dk_scan__pool_release(p);
}

DK_TEST(scan_pool__realloc_keeps_contents) {
  dk_error err;
  dk_error_init(&err);
  dk_scan_pool *p = NULL;
  CHECK_OK(dk_scan__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk_scan__pool_allocator(p);
  /* grow from small (parent) through pooled sizes; every byte written so far must survive */
  size_t sizes[] = {16, 1000, 70000, 300000, 5000000, 200};
  unsigned char *b = NULL;
  size_t have = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    unsigned char *nb = a->realloc(a->ctx, b, sizes[k]);
    CHECK(nb != NULL);
    size_t keep = have < sizes[k] ? have : sizes[k];
    for (size_t i = 0; i < keep; i++)
      if (nb[i] != (unsigned char)(i * 7 + 3)) {
        CHECK(!"realloc lost a byte");
        break;
      }
    for (size_t i = 0; i < sizes[k]; i++) nb[i] = (unsigned char)(i * 7 + 3);
    b = nb;
    have = sizes[k];
  }
  a->free(a->ctx, b);
  int64_t refs, reused;
  size_t cached;
  counters(p, &refs, &reused, &cached);
  CHECK_EQ_INT(refs, 1);
  dk_scan__pool_release(p);
}

DK_TEST(scan_pool__cache_is_bounded) {
  dk_error err;
  dk_error_init(&err);
  dk_scan_pool *p = NULL;
  CHECK_OK(dk_scan__pool_new(&p, NULL, (size_t)1 << 20, &err), &err);
  const dk_allocator *a = dk_scan__pool_allocator(p);
  void *b[4];
  for (int i = 0; i < 4; i++) {
    b[i] = a->malloc(a->ctx, (size_t)400 << 10);
    CHECK(b[i] != NULL);
  }
  for (int i = 0; i < 4; i++) a->free(a->ctx, b[i]);
  int64_t refs, reused;
  size_t cached;
  counters(p, &refs, &reused, &cached);
  CHECK(cached <= (size_t)1 << 20);
  CHECK(cached >= (size_t)400 << 10);
  CHECK_EQ_INT(refs, 1);
  dk_scan__pool_release(p);
}

DK_TEST(scan_pool__blocks_outlive_the_creator) {
  dk_error err;
  dk_error_init(&err);
  dk_scan_pool *p = NULL;
  CHECK_OK(dk_scan__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk_scan__pool_allocator(p);
  void *big = a->malloc(a->ctx, (size_t)2 << 20);
  void *small = a->malloc(a->ctx, 64);
  void *cached = a->malloc(a->ctx, (size_t)100 << 10);
  CHECK(big && small && cached);
  a->free(a->ctx, cached); /* sits in the cache until the pool goes */
  dk_scan__pool_release(p);
  /* the pool lives on for its blocks; the last free destroys it (LSan: nothing leaks) */
  memset(big, 0, (size_t)2 << 20);
  a->free(a->ctx, small);
  a->free(a->ctx, big);
}

static int64_t count_lines(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  int64_t n = 0;
  int c, last = '\n';
  while ((c = fgetc(f)) != EOF) {
    if (c == '\n') n++;
    last = c;
  }
  if (last != '\n') n++;
  fclose(f);
  return n;
}

/* Batches kept after the scan, its stream, snapshot and table are gone: their buffers come
** from the scan's pool, which must outlive all of them. */
DK_TEST(scan_pool__batches_outlive_scan_snapshot_and_table) {
  static const char *const tables[] = {"delta-golden/dv-partitioned-with-checkpoint",
                                       "delta-golden/basic-with-inserts-overwrite-restore"};
  for (size_t ti = 0; ti < sizeof tables / sizeof *tables; ti++) {
    for (int threads = 1; threads <= 2; threads++) {
      dk_error err;
      dk_error_init(&err);
      char root[1024], exp[1100];
      snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), tables[ti]);
      snprintf(exp, sizeof exp, "%s.expected.jsonl", root);
      int64_t want = count_lines(exp);
      CHECK(want > 0);
      dk_table *t = NULL;
      dk_snapshot *s = NULL;
      dk_scan *scan = NULL;
      CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
      CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
      dk_scan_options so;
      memset(&so, 0, sizeof so);
      so.version = DK_SCAN_OPTIONS_VERSION;
      so.limit = -1;
      so.threads = threads;
      so.batch_size = 7; /* many batches */
      CHECK_OK(dk_scan_new(&scan, s, &so, &err), &err);
      struct ArrowArrayStream st;
      CHECK_OK(dk_scan_read(&st, scan, &err), &err);
      enum { MAX = 4096 };
      struct ArrowArray *kept = calloc(MAX, sizeof *kept);
      CHECK(kept != NULL);
      int n = 0;
      int64_t rows = 0;
      for (; n < MAX; n++) {
        CHECK_EQ_INT(st.get_next(&st, &kept[n]), 0);
        if (!kept[n].release) break;
        rows += kept[n].length;
      }
      CHECK(n < MAX);
      st.release(&st);
      dk_scan_free(scan);
      dk_snapshot_free(s);
      dk_table_free(t);
      CHECK_EQ_INT(rows, want);
      for (int i = 0; i < n; i++) kept[i].release(&kept[i]);
      free(kept);
    }
  }
}
