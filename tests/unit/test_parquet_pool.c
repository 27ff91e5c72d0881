/* test_parquet_pool.c — the Parquet read stream's recycling buffer pool (src/codec/parquet/
** pool.c): exact properties of reuse, size matching, realloc and lifetime (blocks outliving
** the owner's reference; ASan/LSan check that nothing leaks or is used after free). */
#include <stdlib.h>

#include "codec/parquet/reader.h"
#include "test.h"

DK_TEST(parquet_pool__reuses_large_blocks) {
  pq_pool *p = dk_pq__pool_new(NULL);
  CHECK(p != NULL);
  const dk_allocator *a = dk_pq__pool_allocator(p);
  uint8_t *x = dk__malloc(a, (size_t)1 << 20);
  CHECK(x != NULL);
  memset(x, 0xab, (size_t)1 << 20);
  dk__free(a, x);
  /* a request of similar size gets the kept block back */
  uint8_t *y = dk__malloc(a, ((size_t)1 << 20) - 4096);
  CHECK(y == x);
  /* a request more than twice smaller or larger than every kept block does not */
  dk__free(a, y);
  uint8_t *big = dk__malloc(a, (size_t)4 << 20);
  CHECK(big != NULL && big != x);
  uint8_t *small = dk__malloc(a, (size_t)100 << 10);
  CHECK(small != NULL && small != x);
  memset(big, 1, (size_t)4 << 20);
  memset(small, 2, (size_t)100 << 10);
  dk__free(a, big);
  dk__free(a, small);
  dk_pq__pool_release(p);
}

DK_TEST(parquet_pool__realloc_keeps_contents) {
  pq_pool *p = dk_pq__pool_new(NULL);
  const dk_allocator *a = dk_pq__pool_allocator(p);
  uint8_t *q = dk__malloc(a, 10);
  for (int i = 0; i < 10; i++) q[i] = (uint8_t)i;
  q = dk__realloc(a, q, (size_t)300 << 10); /* small -> large */
  CHECK(q != NULL);
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(q[i], i);
  q[(300 << 10) - 1] = 7;
  uint8_t *r = dk__realloc(a, q, 20); /* shrinking keeps the block */
  CHECK(r == q);
  r = dk__realloc(a, r, (size_t)1 << 20);
  CHECK(r != NULL);
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(r[i], i);
  dk__free(a, r);
  dk__free(a, NULL);
  dk_pq__pool_release(p);
}

DK_TEST(parquet_pool__blocks_outlive_the_owner) {
  pq_pool *p = dk_pq__pool_new(NULL);
  const dk_allocator *a = dk_pq__pool_allocator(p);
  uint8_t *kept = dk__malloc(a, (size_t)512 << 10);
  uint8_t *tiny = dk__malloc(a, 16);
  uint8_t *cached = dk__malloc(a, (size_t)256 << 10);
  dk__free(a, cached); /* kept by the pool ... */
  dk_pq__pool_release(p); /* ... and freed when the owner lets go */
  /* the owner is gone; the live blocks and their allocator must still work */
  memset(kept, 3, (size_t)512 << 10);
  memset(tiny, 4, 16);
  dk__free(a, tiny);
  dk__free(a, kept); /* the last block: the pool goes (LSan: no leak) */
  dk_pq__pool_release(NULL);
}
