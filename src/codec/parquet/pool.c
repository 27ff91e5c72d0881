/*
** pool.c — a recycling allocator for the buffers a Parquet read stream hands to Arrow.
**
** Each batch of dk_parquet_read gives its value/offset/validity buffers away (zero copy) and
** the consumer frees them before asking for the next batch. Straight through the C library,
** every batch then lands on freshly mapped pages (glibc returns the freed top of the heap to
** the kernel), and page faults cost as much as decoding. The pool keeps a bounded number of
** freed large blocks and hands them out again for requests of similar size, so a streaming
** consumer re-uses the same few megabytes. Small requests pass straight to the base allocator.
**
** Lifetime: the pool is reference-counted by its owner (the stream) and by every block it
** handed out, so buffers released after the stream still find their allocator. Once the
** owner lets go, the kept blocks are freed and nothing more is kept (a batch held long after
** its stream pins no cached memory). Thread-safe (decode threads allocate concurrently;
** consumers may release from any thread).
*/
#include <pthread.h>

#include "codec/parquet/reader.h"

#define POOL_MIN ((size_t)64 << 10)     /* requests below this are not recycled */
#define POOL_SLOTS 64                   /* freed blocks kept at most ... */
#define POOL_MAX_BYTES ((size_t)128 << 20) /* ... totalling at most this */
#define HDR 16                          /* block header: usable size (size_t), padded */

struct pq_pool {
  dk_allocator iface;                   /* what buffers remember; ctx = the pool */
  const dk_allocator *base;
  pthread_mutex_t mu;
  int64_t refs;                         /* the owner + live blocks */
  int closed;                           /* the owner has let go: keep nothing */
  size_t cached;                        /* bytes in slot[] */
  int n_slot;
  void *slot[POOL_SLOTS];               /* freed blocks (raw, header included) */
};

static size_t blk_size(const void *raw) {
  size_t s;
  memcpy(&s, raw, sizeof s);
  return s;
}

static void pool_destroy(pq_pool *p) {
  for (int i = 0; i < p->n_slot; i++) dk__free(p->base, p->slot[i]);
  pthread_mutex_destroy(&p->mu);
  dk__free(p->base, p);
}

static void pool_unref_locked(pq_pool *p, int *destroy) { *destroy = --p->refs == 0; }

static void *pool_malloc(void *ctx, size_t n) {
  pq_pool *p = ctx;
  if (n > SIZE_MAX - HDR - POOL_MIN) return NULL;
  void *raw = NULL;
  pthread_mutex_lock(&p->mu);
  if (n >= POOL_MIN) { /* best fit among the kept blocks: at least n, at most twice n */
    int best = -1;
    for (int i = 0; i < p->n_slot; i++) {
      size_t s = blk_size(p->slot[i]);
      if (s >= n && s / 2 <= n && (best < 0 || s < blk_size(p->slot[best]))) best = i;
    }
    if (best >= 0) {
      raw = p->slot[best];
      p->cached -= blk_size(raw);
      p->slot[best] = p->slot[--p->n_slot];
    }
  }
  p->refs++;
  pthread_mutex_unlock(&p->mu);
  if (!raw) {
    raw = dk__malloc(p->base, n + HDR);
    if (!raw) {
      int destroy;
      pthread_mutex_lock(&p->mu);
      pool_unref_locked(p, &destroy);
      pthread_mutex_unlock(&p->mu);
      if (destroy) pool_destroy(p);
      return NULL;
    }
    memcpy(raw, &n, sizeof n);
  }
  return (char *)raw + HDR;
}

static void pool_free(void *ctx, void *ptr) {
  if (!ptr) return;
  pq_pool *p = ctx;
  void *raw = (char *)ptr - HDR;
  size_t s = blk_size(raw);
  int destroy;
  pthread_mutex_lock(&p->mu);
  if (!p->closed && s >= POOL_MIN && p->n_slot < POOL_SLOTS && s <= POOL_MAX_BYTES - p->cached) {
    p->slot[p->n_slot++] = raw;
    p->cached += s;
    raw = NULL;
  }
  pool_unref_locked(p, &destroy);
  pthread_mutex_unlock(&p->mu);
  if (raw) dk__free(p->base, raw);
  if (destroy) pool_destroy(p);
}

static void *pool_realloc(void *ctx, void *ptr, size_t n) {
  if (!ptr) return pool_malloc(ctx, n);
  size_t s = blk_size((char *)ptr - HDR);
  if (n <= s) return ptr;
  void *q = pool_malloc(ctx, n);
  if (!q) return NULL;
  memcpy(q, ptr, s);
  pool_free(ctx, ptr);
  return q;
}

pq_pool *dk_pq__pool_new(const dk_allocator *base) {
  pq_pool *p = dk__calloc(base, 1, sizeof *p);
  if (!p) return NULL;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    dk__free(base, p);
    return NULL;
  }
  p->base = base;
  p->refs = 1;
  p->iface.ctx = p;
  p->iface.malloc = pool_malloc;
  p->iface.realloc = pool_realloc;
  p->iface.free = pool_free;
  return p;
}

const dk_allocator *dk_pq__pool_allocator(pq_pool *p) { return &p->iface; }

void dk_pq__pool_release(pq_pool *p) {
  if (!p) return;
  int destroy, n = 0;
  void *drop[POOL_SLOTS];
  const dk_allocator *base = p->base; /* p may go as soon as the lock is dropped */
  pthread_mutex_lock(&p->mu);
  p->closed = 1;
  n = p->n_slot;
  memcpy(drop, p->slot, sizeof(void *) * (size_t)n);
  p->n_slot = 0;
  p->cached = 0;
  pool_unref_locked(p, &destroy);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < n; i++) dk__free(base, drop[i]);
  if (destroy) pool_destroy(p);
}
