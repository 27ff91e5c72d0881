/*
** pool.c — the recycling allocator of a scan (library-internal, see scan_int.h).
**
** Not a spec section: an implementation device for dk/scan.h's "hot paths allocate nothing
** per value/row" at the scale of whole files. A scan reads file after file; every file
** allocates the same large buffers again (page windows, decompressed pages, dictionaries,
** the output batch's Arrow buffers) and frees them when the file or batch is done. Through
** the C library those large blocks go back to the kernel (mmap'd chunks, heap trimming) and
** come back as fresh zero pages, so a profile of a 100-file scan spends about a quarter of
** its CPU time in page faults. The pool keeps freed large blocks (>= POOL_MIN) in size
** classes (eight per power of two) and hands them out again, up to a bound of cached bytes.
**
** Every block carries a 16-byte header (its capacity and class), so free/realloc need no
** size. The pool is reference-counted: one reference for its owner (the scan) and one per
** live block, because Arrow batches (and exported schemas) allocated from it may outlive the
** scan; whoever drops the last reference frees the cached blocks and the pool.
** Thread-safe: the free lists are under a mutex, the counts are atomic.
*/
#include <pthread.h>
#include <string.h>

#include "scan/scan_int.h"
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

struct dk_scan_pool {
  dk_allocator iface; /* ctx = this pool */
  const dk_allocator *parent;
  pthread_mutex_t mu;
  void *free_list[POOL_CLASSES]; /* singly linked through each cached block's first word */
  size_t cached_bytes, max_cached;
  int64_t refs;   /* atomic: owner + live blocks */
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

static void pool_destroy(dk_scan_pool *p) {
  for (int c = 0; c < POOL_CLASSES; c++) {
    void *b = p->free_list[c];
    while (b) {
      void *next;
      memcpy(&next, b, sizeof next);
      dk__free(p->parent, (char *)b - POOL_HDR);
      b = next;
    }
  }
  pthread_mutex_destroy(&p->mu);
  dk__free(p->parent, p);
}

static void pool_unref(dk_scan_pool *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) pool_destroy(p);
}

static void *pool_malloc(void *ctx, size_t n) {
  dk_scan_pool *p = ctx;
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
  dk_scan_pool *p = ctx;
  if (!ptr) return;
  char *raw = (char *)ptr - POOL_HDR;
  pool_hdr h;
  memcpy(&h, raw, sizeof h);
  int cached = 0;
  if (h.cls != POOL_DIRECT) {
    pthread_mutex_lock(&p->mu);
    if (p->cached_bytes + h.cap <= p->max_cached) {
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
  dk_scan_pool *p = ctx;
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
  /* grow through the parent, which can extend in place or move pages (mremap) instead of
  ** copying; the block keeps a class size so it can be cached later */
  size_t cap;
  uint32_t cls = class_of(n, &cap);
  char *nr = dk__realloc(p->parent, raw, cap + POOL_HDR);
  if (!nr) return NULL;
  h.cap = cap;
  h.cls = cls;
  memcpy(nr, &h, sizeof h);
  return nr + POOL_HDR;
}

dk_status dk_scan__pool_new(dk_scan_pool **out, const dk_allocator *parent, size_t max_cached,
                            dk_error *err) {
  dk_scan_pool *p = dk__calloc(parent, 1, sizeof *p);
  *out = NULL;
  DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory (scan pool)");
  p->iface.ctx = p;
  p->iface.malloc = pool_malloc;
  p->iface.realloc = pool_realloc;
  p->iface.free = pool_free;
  p->parent = parent;
  p->max_cached = max_cached;
  p->refs = 1;
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  return DK_OK;
}

const dk_allocator *dk_scan__pool_allocator(dk_scan_pool *p) { return &p->iface; }

void dk_scan__pool_release(dk_scan_pool *p) {
  if (p) pool_unref(p);
}

void dk_scan__pool_counters(const dk_scan_pool *p, int64_t *live_refs, int64_t *reused,
                            size_t *cached_bytes) {
  dk_scan_pool *q = (dk_scan_pool *)p;
  *live_refs = __atomic_load_n(&q->refs, __ATOMIC_RELAXED);
  *reused = __atomic_load_n(&q->reused, __ATOMIC_RELAXED);
  pthread_mutex_lock(&q->mu);
  *cached_bytes = q->cached_bytes;
  pthread_mutex_unlock(&q->mu);
}
