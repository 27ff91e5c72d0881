/*
** pool.c — dk_pool, the recycling allocator behind Parquet read streams and scans (see
** util.h).
**
** Not a spec section: an implementation device for "hot paths allocate nothing per
** value/row" at the scale of batches and files. A reader allocates the same large buffers
** for every batch and file (page windows, decompressed pages, dictionaries, the output
** batch's Arrow buffers) and frees them when the consumer releases the batch. Through the C
** library those large blocks go back to the kernel (mmap'd chunks, heap trimming) and come
** back as fresh zero pages: page faults cost about as much as decoding (a quarter of a
** 100-file scan's CPU). The pool keeps freed large blocks (>= POOL_MIN) in size classes
** (eight per power of two) and hands them out again, up to a bound of cached bytes.
**
** Every block carries a 16-byte header (its capacity and class), so free/realloc need no
** size. The pool is reference-counted: one reference per owner (a scan, and each Parquet
** stream that shares the scan's pool) and one per live block, because Arrow batches (and
** exported schemas) allocated from it may outlive their owners. When the last owner lets go
** the cached blocks are freed and nothing more is cached (a batch held long after its scan
** pins no cached memory); the last reference of all frees the pool.
** Thread-safe: the free lists are under a mutex, the counts are atomic.
*/
#include <pthread.h>
#include <string.h>

#include "util/util.h"

#define POOL_MIN ((size_t)64 << 10)       /* smaller blocks go straight to the parent */
#define POOL_MAX ((size_t)256 << 20)      /* larger blocks too */
#define POOL_HDR 16                       /* keeps the parent's 16-byte alignment */
#define POOL_DIRECT 0xffffffffu           /* class of a block not managed by the free lists */
#define POOL_STEPS 8                      /* classes per power of two: <= 12.5% slack */
#define POOL_CLASSES (13 * POOL_STEPS)    /* 64 KiB .. 256 MiB */

typedef struct pool_hdr {
  uint64_t cap; /* usable bytes after the header */
  uint32_t cls; /* size class, or POOL_DIRECT */
  uint32_t pad;
} pool_hdr;

struct dk_pool {
  dk_allocator iface; /* ctx = this pool */
  const dk_allocator *parent;
  pthread_mutex_t mu;
  void *free_list[POOL_CLASSES]; /* singly linked through each cached block's first word */
  size_t cached_bytes, max_cached;
  int64_t refs;   /* atomic: owners + live blocks */
  int64_t owners; /* atomic: owners; at 0 nothing is cached any more */
  int64_t reused; /* atomic: allocations served from the free lists */
};

/* The smallest class whose size holds n (n in [POOL_MIN, POOL_MAX]); classes are
** 2^e * {8,9,...,15}/8 from POOL_MIN up. */
static uint32_t class_of(size_t n, size_t *size) {
  uint32_t cls = 0;
  for (size_t base = POOL_MIN;; base <<= 1) {
    for (size_t q = POOL_STEPS; q < 2 * POOL_STEPS; q++, cls++) {
      size_t s = base / POOL_STEPS * q;
      if (s >= n) {
        *size = s;
        return cls;
      }
    }
  }
}

/* Frees every cached block (caller holds the lock or is the last reference). */
static void drop_cache(dk_pool *p) {
  for (int c = 0; c < POOL_CLASSES; c++) {
    void *b = p->free_list[c];
    while (b) {
      void *next;
      memcpy(&next, b, sizeof next);
      dk__free(p->parent, (char *)b - POOL_HDR);
      b = next;
    }
    p->free_list[c] = NULL;
  }
  p->cached_bytes = 0;
}

static void pool_destroy(dk_pool *p) {
  drop_cache(p);
  pthread_mutex_destroy(&p->mu);
  dk__free(p->parent, p);
}

static void pool_unref(dk_pool *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) pool_destroy(p);
}

static void *pool_malloc(void *ctx, size_t n) {
  dk_pool *p = ctx;
  if (n > SIZE_MAX - POOL_HDR) return NULL;
  size_t cap = n;
  uint32_t cls = POOL_DIRECT;
  char *raw = NULL;
  if (n >= POOL_MIN && n <= POOL_MAX) {
    cls = class_of(n, &cap);
    pthread_mutex_lock(&p->mu);
    void *b = p->free_list[cls];
    if (b) {
      memcpy(&p->free_list[cls], b, sizeof b);
      p->cached_bytes -= cap;
      raw = (char *)b - POOL_HDR;
    }
    pthread_mutex_unlock(&p->mu);
    if (raw) __atomic_add_fetch(&p->reused, 1, __ATOMIC_RELAXED);
  }
  if (!raw) raw = dk__malloc(p->parent, cap + POOL_HDR);
  if (!raw) return NULL;
  pool_hdr h = {cap, cls, 0};
  memcpy(raw, &h, sizeof h);
  __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
  return raw + POOL_HDR;
}

static void pool_free(void *ctx, void *ptr) {
  dk_pool *p = ctx;
  if (!ptr) return;
  char *raw = (char *)ptr - POOL_HDR;
  pool_hdr h;
  memcpy(&h, raw, sizeof h);
  int cached = 0;
  if (h.cls != POOL_DIRECT) {
    pthread_mutex_lock(&p->mu);
    if (__atomic_load_n(&p->owners, __ATOMIC_ACQUIRE) > 0 &&
        p->cached_bytes + h.cap <= p->max_cached) {
      memcpy(ptr, &p->free_list[h.cls], sizeof ptr);
      p->free_list[h.cls] = ptr;
      p->cached_bytes += h.cap;
      cached = 1;
    }
    pthread_mutex_unlock(&p->mu);
  }
  if (!cached) dk__free(p->parent, raw);
  pool_unref(p);
}

static void *pool_realloc(void *ctx, void *ptr, size_t n) {
  dk_pool *p = ctx;
  if (!ptr) return pool_malloc(ctx, n);
  char *raw = (char *)ptr - POOL_HDR;
  pool_hdr h;
  memcpy(&h, raw, sizeof h);
  if (n <= h.cap) return ptr;
  if (h.cls == POOL_DIRECT && n < POOL_MIN) {
    /* small stays small: let the parent grow it in place when it can */
    if (n > SIZE_MAX - POOL_HDR) return NULL;
    char *nr = dk__realloc(p->parent, raw, n + POOL_HDR);
    if (!nr) return NULL;
    h.cap = n;
    memcpy(nr, &h, sizeof h);
    return nr + POOL_HDR;
  }
  if (n > POOL_MAX) {
    void *np = pool_malloc(ctx, n);
    if (!np) return NULL;
    memcpy(np, ptr, (size_t)h.cap);
    pool_free(ctx, ptr);
    return np;
  }
  size_t cap;
  uint32_t cls = class_of(n, &cap);
  /* a cached block of the new class: copy into it (its pages are already mapped) */
  pthread_mutex_lock(&p->mu);
  void *b = p->free_list[cls];
  if (b) {
    memcpy(&p->free_list[cls], b, sizeof b);
    p->cached_bytes -= cap;
  }
  pthread_mutex_unlock(&p->mu);
  if (b) {
    __atomic_add_fetch(&p->reused, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    pool_hdr nh = {cap, cls, 0};
    memcpy((char *)b - POOL_HDR, &nh, sizeof nh);
    memcpy(b, ptr, (size_t)h.cap);
    pool_free(ctx, ptr);
    return b;
  }
  /* else grow through the parent, which can extend in place or move pages (mremap) instead
  ** of copying; the block keeps a class size so it can be cached later */
  char *nr = dk__realloc(p->parent, raw, cap + POOL_HDR);
  if (!nr) return NULL;
  h.cap = cap;
  h.cls = cls;
  memcpy(nr, &h, sizeof h);
  return nr + POOL_HDR;
}

dk_status dk__pool_new(dk_pool **out, const dk_allocator *parent, size_t max_cached,
                      dk_error *err) {
  dk_pool *p = dk__calloc(parent, 1, sizeof *p);
  *out = NULL;
  DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory (buffer pool)");
  p->iface.ctx = p;
  p->iface.malloc = pool_malloc;
  p->iface.realloc = pool_realloc;
  p->iface.free = pool_free;
  p->parent = parent;
  p->max_cached = max_cached;
  p->refs = 1;
  p->owners = 1;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    dk__free(parent, p);
    return dk__error_set(err, DK_NOMEM, "cannot create a mutex (buffer pool)");
  }
  *out = p;
  return DK_OK;
}

dk_status dk__pool_share(dk_pool **out, const dk_allocator *a, size_t max_cached,
                        dk_error *err) {
  if (a && a->malloc == pool_malloc) {
    dk_pool *p = a->ctx;
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->owners, 1, __ATOMIC_RELAXED);
    *out = p;
    return DK_OK;
  }
  return dk__pool_new(out, a, max_cached, err);
}

const dk_allocator *dk__pool_allocator(dk_pool *p) { return &p->iface; }

void dk__pool_release(dk_pool *p) {
  if (!p) return;
  if (__atomic_sub_fetch(&p->owners, 1, __ATOMIC_ACQ_REL) == 0) {
    pthread_mutex_lock(&p->mu);
    drop_cache(p);
    pthread_mutex_unlock(&p->mu);
  }
  pool_unref(p);
}

void dk__pool_counters(const dk_pool *p, int64_t *live_refs, int64_t *reused,
                      size_t *cached_bytes) {
  dk_pool *q = (dk_pool *)p;
  *live_refs = __atomic_load_n(&q->refs, __ATOMIC_RELAXED);
  *reused = __atomic_load_n(&q->reused, __ATOMIC_RELAXED);
  pthread_mutex_lock(&q->mu);
  *cached_bytes = q->cached_bytes;
  pthread_mutex_unlock(&q->mu);
}
