/*
** alloc.c — the only place that calls the C library allocator.
**
** Every object remembers the dk_allocator it was created with (NULL = libc) and frees
** through it, so an embedder's allocator never sees memory it did not hand out.
*/
#include <stdlib.h>

#include "util/util.h"

void *dk__malloc(const dk_allocator *a, size_t n) {
  if (n == 0) n = 1;
  return a ? a->malloc(a->ctx, n) : malloc(n);
}

void *dk__calloc(const dk_allocator *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  size_t n = count * size;
  if (!a) return calloc(n ? n : 1, 1);
  void *p = dk__malloc(a, n);
  if (p) memset(p, 0, n ? n : 1);
  return p;
}

void *dk__realloc(const dk_allocator *a, void *p, size_t n) {
  if (n == 0) n = 1;
  return a ? a->realloc(a->ctx, p, n) : realloc(p, n);
}

void dk__free(const dk_allocator *a, void *p) {
  if (!p) return;
  if (a)
    a->free(a->ctx, p);
  else
    free(p);
}

char *dk__strndup(const dk_allocator *a, const char *s, size_t n) {
  char *p = dk__malloc(a, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *dk__strdup(const dk_allocator *a, const char *s) { return dk__strndup(a, s, strlen(s)); }

/* Aligned blocks store the original pointer just before the aligned address. */
void *dk__aligned_alloc(const dk_allocator *a, size_t n) {
  if (n > SIZE_MAX - 64 - sizeof(void *)) return NULL;
  char *raw = dk__malloc(a, n + 64 + sizeof(void *));
  if (!raw) return NULL;
  uintptr_t base = (uintptr_t)(raw + sizeof(void *));
  uintptr_t aligned = (base + 63) & ~(uintptr_t)63;
  ((void **)aligned)[-1] = raw;
  return (void *)aligned;
}

void dk__aligned_free(const dk_allocator *a, void *p) {
  if (!p) return;
  dk__free(a, ((void **)p)[-1]);
}

void dk_free(void *p) { free(p); }
