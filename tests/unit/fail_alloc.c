/*
** fail_alloc.c — the counting, failing dk_allocator of fail_alloc.h (tests only).
*/
#include <stdlib.h>

#include "fail_alloc.h"

static void *fa_malloc(void *ctx, size_t n) {
  dk_test_fail_alloc *f = ctx;
  __atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
  if (__atomic_fetch_sub(&f->left, 1, __ATOMIC_RELAXED) <= 0) return NULL;
  __atomic_add_fetch(&f->live, 1, __ATOMIC_RELAXED);
  return malloc(n);
}

static void *fa_realloc(void *ctx, void *p, size_t n) {
  dk_test_fail_alloc *f = ctx;
  __atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
  if (__atomic_fetch_sub(&f->left, 1, __ATOMIC_RELAXED) <= 0) return NULL;
  if (!p) __atomic_add_fetch(&f->live, 1, __ATOMIC_RELAXED);
  return realloc(p, n);
}

static void fa_free(void *ctx, void *p) {
  dk_test_fail_alloc *f = ctx;
  if (p) __atomic_sub_fetch(&f->live, 1, __ATOMIC_RELAXED);
  free(p);
}

dk_allocator dk_test_fail_allocator(dk_test_fail_alloc *f) {
  return (dk_allocator){f, fa_malloc, fa_realloc, fa_free};
}
