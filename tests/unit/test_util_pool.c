/*
** test_util_pool.c — dk_pool, the recycling allocator of Parquet streams and scans
** (src/util/pool.c): exact properties of reuse, realloc, the cache bound, sharing and
** reference counting (ASan/LSan check that every block is returned exactly once).
*/
#include <string.h>

#include "test.h"
#include "util/util.h"

static void counters(dk_pool *p, int64_t *refs, int64_t *reused, size_t *cached) {
  dk__pool_counters(p, refs, reused, cached);
}

DK_TEST(util_pool__large_blocks_are_reused) {
  dk_error err;
  dk_error_init(&err);
  dk_pool *p = NULL;
  CHECK_OK(dk__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk__pool_allocator(p);
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
  dk__pool_release(p);
}

DK_TEST(util_pool__realloc_keeps_contents) {
  dk_error err;
  dk_error_init(&err);
  dk_pool *p = NULL;
  CHECK_OK(dk__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk__pool_allocator(p);
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
  dk__pool_release(p);
}

DK_TEST(util_pool__cache_is_bounded) {
  dk_error err;
  dk_error_init(&err);
  dk_pool *p = NULL;
  CHECK_OK(dk__pool_new(&p, NULL, (size_t)1 << 20, &err), &err);
  const dk_allocator *a = dk__pool_allocator(p);
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
  dk__pool_release(p);
}

DK_TEST(util_pool__blocks_outlive_the_creator) {
  dk_error err;
  dk_error_init(&err);
  dk_pool *p = NULL;
  CHECK_OK(dk__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk__pool_allocator(p);
  void *big = a->malloc(a->ctx, (size_t)2 << 20);
  void *small = a->malloc(a->ctx, 64);
  void *cached = a->malloc(a->ctx, (size_t)100 << 10);
  CHECK(big && small && cached);
  a->free(a->ctx, cached); /* cached while an owner holds the pool ... */
  int64_t refs, reused;
  size_t n_cached;
  counters(p, &refs, &reused, &n_cached);
  CHECK(n_cached >= (size_t)100 << 10);
  dk__pool_release(p); /* ... and freed when the last owner lets go */
  counters(p, &refs, &reused, &n_cached);
  CHECK_EQ_INT((int64_t)n_cached, 0);
  CHECK_EQ_INT(refs, 2);
  /* the pool lives on for its blocks; the last free destroys it (LSan: nothing leaks) */
  memset(big, 0, (size_t)2 << 20);
  void *again = a->malloc(a->ctx, (size_t)100 << 10); /* still allocates, caches nothing */
  CHECK(again != NULL);
  a->free(a->ctx, again);
  counters(p, &refs, &reused, &n_cached);
  CHECK_EQ_INT((int64_t)n_cached, 0);
  a->free(a->ctx, small);
  a->free(a->ctx, big);
}

DK_TEST(util_pool__share_reuses_a_pool_and_stacks_none) {
  dk_error err;
  dk_error_init(&err);
  dk_pool *p = NULL, *q = NULL, *r = NULL;
  CHECK_OK(dk__pool_new(&p, NULL, (size_t)8 << 20, &err), &err);
  const dk_allocator *a = dk__pool_allocator(p);
  /* a pool's own allocator: the same pool, one owner more */
  CHECK_OK(dk__pool_share(&q, a, (size_t)1 << 20, &err), &err);
  CHECK(q == p);
  /* libc (NULL): a new pool */
  CHECK_OK(dk__pool_share(&r, NULL, (size_t)1 << 20, &err), &err);
  CHECK(r != NULL && r != p);
  dk__pool_release(r);
  void *b = a->malloc(a->ctx, (size_t)200 << 10);
  CHECK(b != NULL);
  dk__pool_release(q); /* one owner left: still caches */
  a->free(a->ctx, b);
  int64_t refs, reused;
  size_t cached;
  counters(p, &refs, &reused, &cached);
  CHECK(cached >= (size_t)200 << 10);
  CHECK_EQ_INT(refs, 1);
  dk__pool_release(p);
}
