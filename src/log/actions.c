/*
** actions.c — parsing Delta log actions and reconciling them into a replay state.
**
** Follows PROTOCOL.md "Actions" (metaData, protocol, add, remove, txn, domainMetadata,
** commitInfo, sidecar) and "Action Reconciliation": the latest protocol and metaData win,
** txn is kept per appId and domainMetadata per domain, and a file is identified by
** (path, deletionVector.uniqueId); a remove cancels the add with the same key and is kept as
** a tombstone. Paths are URIs: they are URL-decoded, "file:" URIs become local paths and
** absolute paths under the table root become relative, so both spellings meet.
** Actions are applied in log order (checkpoint first, then commits ascending). Unknown
** actions and unknown fields are ignored, as the protocol requires.
**
** Memory: file entries (64 bytes) live in one growable array and their paths in one arena;
** partition keys and values are interned; stats text is appended to 128 KiB blocks that are
** LZ4-compressed when full and decompressed on demand, one block per reading thread; the
** (path, DV id) index holds 8 bytes per file and exists only while replaying.
**
** Checkpoint rows are reconciled already ("Checkpoints"), so they are appended without being
** indexed (only their key hash is kept); the indexes hold the entries of the newer commits
** only, and at finish a checkpoint row whose key any commit touched is dropped — its last
** action is then in the commit indexes (an add in file_index, a remove in tomb_index) and
** wins. A bit filter over the commit keys answers the (common) untouched case from cache.
*/
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <lz4.h>

#include "log/paths.h"
#include "log/replay.h"

static void prefetch_quiesce(const void *owner);

dk_status dk_log__state_init(dk__state *st, const dk_allocator *alloc, const char *root,
                             dk_error *err) {
  memset(st, 0, sizeof *st);
  st->alloc = alloc;
  dk__arena_init(&st->arena, alloc, 1 << 20);
  dk__hmap_init(&st->intern, alloc);
  dk__hmap_init(&st->pv_intern, alloc);
  dk__hmap_init(&st->pv_text, alloc);
  dk__buf_init(&st->pv_key, alloc);
  dk__buf_init(&st->pv_views, alloc);
  dk__hmap_init(&st->txn_index, alloc);
  dk__hmap_init(&st->domain_index, alloc);
  dk__buf_init(&st->scratch, alloc);
  dk__buf_init(&st->sidecars, alloc);
  dk__buf_init(&st->pending, alloc);
  st->last_ict = -1;
  st->last_commit_info_ts = -1;
  st->cur_version = -1;
  st->metadata.created_time = -1;
  size_t rl = strlen(root);
  while (rl > 1 && root[rl - 1] == '/') rl--;
  st->root = dk__arena_strndup(&st->arena, root, rl, err);
  st->root_len = rl;
  return st->root ? DK_OK : DK_NOMEM;
}

void dk_log__state_dispose(dk__state *st) {
  if (!st) return;
  dk__free(st->alloc, st->files);
  dk__free(st->alloc, st->tombs);
  dk__free(st->alloc, st->txns);
  dk__free(st->alloc, st->domains);
  dk__hmap_dispose(&st->intern);
  dk__hmap_dispose(&st->pv_intern);
  dk__hmap_dispose(&st->pv_text);
  dk__buf_dispose(&st->pv_key);
  dk__buf_dispose(&st->pv_views);
  dk__free(st->alloc, st->pv_buf);
  dk__free(st->alloc, st->file_index.slots);
  dk__free(st->alloc, st->tomb_index.slots);
  dk__hmap_dispose(&st->txn_index);
  dk__hmap_dispose(&st->domain_index);
  dk__buf_dispose(&st->scratch);
  dk__buf_dispose(&st->sidecars);
  dk__buf_dispose(&st->pending);
  if (st->n_sblocks) prefetch_quiesce(st);
  for (size_t i = 0; i < st->n_sblocks; i++) {
    dk__free(st->alloc, st->sblocks[i]->data);
    dk__free(st->alloc, st->sblocks[i]);
  }
  dk__free(st->alloc, st->sblocks);
  dk__arena_dispose(&st->arena);
  memset(st, 0, sizeof *st);
}

/* Grows *arr (element size `es`) so that it holds at least n+1 elements. */
static dk_status grow(const dk_allocator *a, void **arr, size_t *cap, size_t n, size_t es,
                      dk_error *err) {
  if (n < *cap) return DK_OK;
  size_t nc = *cap ? *cap * 2 : 64;
  if (nc > SIZE_MAX / es) return dk__error_set(err, DK_NOMEM, "log: too many entries");
  void *p = dk__realloc(a, *arr, nc * es);
  if (!p) return dk__error_set(err, DK_NOMEM, "log: out of memory growing an array");
  *arr = p;
  *cap = nc;
  return DK_OK;
}

static const char *arena_str(dk__state *st, const char *s, size_t n, dk_error *err) {
  return dk__arena_strndup(&st->arena, s, n, err);
}

/* Interned copy of s (partition keys and values repeat across files). */
static const char *intern(dk__state *st, const char *s, size_t n, dk_error *err) {
  uint64_t *slot;
  bool ins;
  if (dk__hmap_upsert(&st->intern, s, n, &slot, &ins, err) != DK_OK) return NULL;
  if (ins) {
    const char *p = arena_str(st, s, n, err);
    if (!p) {
      dk__hmap_remove(&st->intern, s, n);
      return NULL;
    }
    *slot = (uint64_t)(uintptr_t)p;
  }
  return (const char *)(uintptr_t)*slot;
}

/* A reusable scratch array for building one partition-value tuple. */
static const char **pv_scratch(dk__state *st, size_t n, dk_error *err) {
  if (n > st->pv_cap) {
    size_t nc = n + 16;
    const char **p = dk__realloc(st->alloc, st->pv_buf, nc * sizeof *p);
    if (!p) {
      dk__error_set(err, DK_NOMEM, "log: out of memory");
      return NULL;
    }
    st->pv_buf = p;
    st->pv_cap = nc;
  }
  return st->pv_buf;
}

/* Interned copy of a partition-value tuple (files of one partition share one array). */
static const char **intern_pv(dk__state *st, const char **arr, size_t n, dk_error *err) {
  uint64_t *slot;
  bool ins;
  if (dk__hmap_upsert(&st->pv_intern, (const char *)arr, n * sizeof *arr, &slot, &ins, err) != DK_OK)
    return NULL;
  if (ins) {
    const char **p = dk__arena_alloc(&st->arena, n * sizeof *p, err);
    if (!p) {
      dk__hmap_remove(&st->pv_intern, (const char *)arr, n * sizeof *arr);
      return NULL;
    }
    memcpy(p, arr, n * sizeof *p);
    *slot = (uint64_t)(uintptr_t)p;
  }
  return (const char **)(uintptr_t)*slot;
}

/* The interned tuple of 2*n views (key, value; value.ptr NULL = null): one lookup of the
 * tuple's text (length-prefixed keys and values), interning each string only on a miss. */
static const char **intern_pv_text(dk__state *st, const dk_str *pv, size_t n, dk_error *err) {
  dk_buf *k = &st->pv_key;
  dk__buf_clear(k);
  for (size_t i = 0; i < 2 * n; i++) {
    uint32_t len = pv[i].ptr ? (uint32_t)pv[i].len : UINT32_MAX;
    if (pv[i].ptr && pv[i].len >= UINT32_MAX) {
      dk__error_set(err, DK_CORRUPT, "log: partition value too long");
      return NULL;
    }
    if (dk__buf_append(k, &len, 4, err) != DK_OK) return NULL;
    if (pv[i].ptr && dk__buf_append(k, pv[i].ptr, pv[i].len, err) != DK_OK) return NULL;
  }
  uint64_t *hit = dk__hmap_get(&st->pv_text, k->data, k->len);
  if (hit) return (const char **)(uintptr_t)*hit;
  const char **arr = pv_scratch(st, 2 * n, err);
  if (!arr) return NULL;
  for (size_t i = 0; i < n; i++) {
    arr[2 * i] = intern(st, pv[2 * i].ptr ? pv[2 * i].ptr : "", pv[2 * i].len, err);
    if (!arr[2 * i]) return NULL;
    arr[2 * i + 1] = NULL;
    if (pv[2 * i + 1].ptr) {
      arr[2 * i + 1] = intern(st, pv[2 * i + 1].ptr, pv[2 * i + 1].len, err);
      if (!arr[2 * i + 1]) return NULL;
    }
  }
  const char **t = intern_pv(st, arr, 2 * n, err);
  if (!t) return NULL;
  uint64_t *slot;
  bool ins;
  if (dk__hmap_upsert(&st->pv_text, k->data, k->len, &slot, &ins, err) != DK_OK) return NULL;
  *slot = (uint64_t)(uintptr_t)t;
  return t;
}

/* ---- compressed stats blocks ------------------------------------------------------------ */

#define SBLOCK_TARGET (128u * 1024u)

static uint64_t g_sblock_serial;

/* Stats text from commit files (and checkpoints read through Arrow) is kept uncompressed up
 * to this many bytes per state, and LZ4-compressed beyond: the few commits after a checkpoint
 * cost no compression, a long run of commits stays small. */
#define RAW_STATS_BUDGET ((size_t)32 << 20)

static dk_status sblock_seal(dk__state *st, dk_error *err) {
  dk__sblock *b = st->cur_sblock;
  if (!b) return DK_OK;
  size_t n = st->pending.len;
  void *dst = NULL;
  int cl = 0;
  if (st->raw_stats + n > RAW_STATS_BUDGET) {
    /* LZ4 rather than zstd: on Spark-style stats text it compresses ~1.6x and decompresses
    ** ~2.6x faster for a ratio of ~3.3 instead of ~5.8 (zstd was ~29% of the instructions of
    ** loading and listing a big table) */
    int cap = LZ4_compressBound((int)n);
    dst = dk__malloc(st->alloc, cap > 0 ? (size_t)cap : 1);
    if (!dst) return dk__error_set(err, DK_NOMEM, "log: out of memory compressing stats");
    /* acceleration 8: on Spark-style stats ~1.3x faster than the default for a ratio of ~2.9
    ** instead of ~3.3 (compressing was ~20% of loading and listing a 1M-file table) */
    cl = n ? LZ4_compress_fast(st->pending.data, dst, (int)n, cap, 8) : 0;
  }
  size_t c = cl > 0 ? (size_t)cl : 0;
  if (cl <= 0 || c >= n) {
    /* keep it raw */
    void *raw = dk__realloc(st->alloc, dst, n ? n : 1);
    if (!raw) {
      dk__free(st->alloc, dst);
      return dk__error_set(err, DK_NOMEM, "log: out of memory");
    }
    memcpy(raw, st->pending.data, n);
    b->data = raw;
    b->csize = (uint32_t)n;
    b->raw = 1;
    st->raw_stats += n;
  } else {
    void *shr = dk__realloc(st->alloc, dst, c);
    b->data = shr ? shr : dst;
    b->csize = (uint32_t)c;
  }
  b->usize = (uint32_t)n;
  st->cur_sblock = NULL;
  dk__buf_clear(&st->pending);
  return DK_OK;
}

static dk_status sblock_new(dk__state *st, dk__sblock **out, dk_error *err) {
  dk__sblock *b = dk__calloc(st->alloc, 1, sizeof *b);
  if (!b) return dk__error_set(err, DK_NOMEM, "log: out of memory");
  b->serial = __atomic_add_fetch(&g_sblock_serial, 1, __ATOMIC_RELAXED);
  dk_status s = dk_log__adopt_block(st, b, err);
  if (s != DK_OK) {
    dk__free(st->alloc, b);
    return s;
  }
  *out = b;
  return DK_OK;
}

dk_status dk_log__page_block_new(dk__sblock **out, const dk_allocator *alloc,
                                 const dk_pq__page *pg, const dk__sblock *dict, const char *src,
                                 dk_error *err) {
  *out = NULL;
  dk__sblock *b = dk__calloc(alloc, 1, sizeof *b);
  if (!b) return dk__error_set(err, DK_NOMEM, "log: out of memory");
  b->data = dk__malloc(alloc, pg->len ? pg->len : 1);
  if (!b->data) {
    dk__free(alloc, b);
    return dk__error_set(err, DK_NOMEM, "log: out of memory keeping a stats page");
  }
  if (pg->len) memcpy(b->data, pg->data, pg->len);
  b->serial = __atomic_add_fetch(&g_sblock_serial, 1, __ATOMIC_RELAXED);
  b->is_page = 1;
  b->page = *pg;
  b->page.data = b->data;
  b->csize = pg->len;
  b->dict = dict;
  b->src = src;
  *out = b;
  return DK_OK;
}

void dk_log__page_block_free(dk__sblock *b, const dk_allocator *alloc) {
  if (!b) return;
  dk__free(alloc, b->data);
  dk__free(alloc, b);
}

dk_status dk_log__adopt_block(dk__state *st, dk__sblock *b, dk_error *err) {
  if (st->n_sblocks == st->cap_sblocks) {
    size_t nc = st->cap_sblocks ? st->cap_sblocks * 2 : 16;
    dk__sblock **p = dk__realloc(st->alloc, st->sblocks, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "log: out of memory");
    st->sblocks = p;
    st->cap_sblocks = nc;
  }
  b->owner = st;
  st->sblocks[st->n_sblocks++] = b;
  return DK_OK;
}

/* Appends stats text (with a NUL) to the current block; fills f's stats position. */
static dk_status sblock_add(dk__state *st, dk__file *f, const char *text, size_t n,
                            dk_error *err) {
  if (n >= UINT32_MAX / 2) return dk__error_set(err, DK_CORRUPT, "log: stats text too large");
  if (st->cur_sblock && st->pending.len + n + 1 > SBLOCK_TARGET && st->pending.len)
    DK_RETURN_NOT_OK(sblock_seal(st, err));
  if (!st->cur_sblock) DK_RETURN_NOT_OK(sblock_new(st, &st->cur_sblock, err));
  f->sblk = st->cur_sblock;
  f->soff = (uint32_t)st->pending.len;
  f->slen = (uint32_t)n;
  DK_RETURN_NOT_OK(dk__buf_append(&st->pending, text, n, err));
  return dk__buf_putc(&st->pending, 0, err);
}

/* One decompressed block per thread. The buffer is registered with a pthread key so that
 * it is freed when the thread exits. A stats pointer handed out stays valid until the same
 * thread reads stats from another block. */
/* Decodes page block b into text / *offs (one entry per row of the page). */
static dk_status decode_page(const dk__sblock *b, dk_buf *text, dk_buf *scratch, uint32_t **offs,
                             size_t *offs_cap, dk_error *err) {
  const dk_pq__page *pg = &b->page;
  if (*offs_cap < (size_t)pg->num_values) {
    uint32_t *p = dk__realloc(NULL, *offs, (size_t)pg->num_values * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "out of memory decoding stats");
    *offs = p;
    *offs_cap = (size_t)pg->num_values;
  }
  dk_status s = dk_pq__page_decode_text(pg, b->dict ? &b->dict->page : NULL, scratch, text,
                                        *offs, err);
  if (s != DK_OK)
    dk__error_prefix(err, "checkpoint %s: add.stats page at offset %lld", b->src ? b->src : "?",
                     (long long)pg->offset);
  return s;
}

/* ---- reading ahead ------------------------------------------------------------------------
 * A thread reading stats page by page (the usual order of listing a snapshot) gets a helper
 * thread: when the thread decodes page b itself, the helper decodes b->next meanwhile, which
 * the thread then takes over instead of decoding it, and decodes the page after that itself
 * while the helper moves on. The two decode alternate pages. Every prefetcher is in a global
 * registry so that freeing a state first waits for a helper working on one of its blocks. */
typedef struct prefetch {
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const dk__sblock *job;  /* block being (or to be) decoded; NULL = idle */
  const void *job_owner;
  uint64_t done;          /* serial of the block decoded into text/offs, 0 = none */
  int quit;
  dk_buf text, scratch;
  uint32_t *offs;
  size_t offs_cap;
  struct prefetch *reg_next;
} prefetch;

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static prefetch *g_reg;

static void *prefetch_main(void *arg) {
  prefetch *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && !p->job) pthread_cond_wait(&p->cv, &p->mu);
    if (p->quit) break;
    const dk__sblock *b = p->job;
    p->done = 0;
    pthread_mutex_unlock(&p->mu);
    dk_error e;
    dk_error_init(&e);
    dk_status s = decode_page(b, &p->text, &p->scratch, &p->offs, &p->offs_cap, &e);
    pthread_mutex_lock(&p->mu);
    p->done = s == DK_OK ? b->serial : 0; /* a failure is reported when the reader decodes it */
    p->job = NULL;
    p->job_owner = NULL;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static prefetch *prefetch_new(void) {
  prefetch *p = dk__calloc(NULL, 1, sizeof *p);
  if (!p) return NULL;
  dk__buf_init(&p->text, NULL);
  dk__buf_init(&p->scratch, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (pthread_create(&p->tid, NULL, prefetch_main, p) != 0) {
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    dk__free(NULL, p);
    return NULL;
  }
  pthread_mutex_lock(&g_reg_mu);
  p->reg_next = g_reg;
  g_reg = p;
  pthread_mutex_unlock(&g_reg_mu);
  return p;
}

static void prefetch_free(prefetch *p) {
  if (!p) return;
  pthread_mutex_lock(&g_reg_mu);
  for (prefetch **q = &g_reg; *q; q = &(*q)->reg_next)
    if (*q == p) {
      *q = p->reg_next;
      break;
    }
  pthread_mutex_unlock(&g_reg_mu);
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->tid, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  dk__buf_dispose(&p->text);
  dk__buf_dispose(&p->scratch);
  dk__free(NULL, p->offs);
  dk__free(NULL, p);
}

/* Waits until no helper works on (or is about to start) a block of `owner`. */
static void prefetch_quiesce(const void *owner) {
  pthread_mutex_lock(&g_reg_mu);
  for (prefetch *p = g_reg; p; p = p->reg_next) {
    pthread_mutex_lock(&p->mu);
    while (p->job && p->job_owner == owner) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&g_reg_mu);
}

/* One decompressed block per thread. The buffer is registered with a pthread key so that
 * it is freed when the thread exits. A stats pointer handed out stays valid until the same
 * thread reads stats from another block. */
typedef struct stats_cache {
  uint64_t serial;
  char *buf;
  size_t cap;
  /* page blocks: the decoded page and each row's offset in it (UINT32_MAX = null) */
  dk_buf text, scratch;
  uint32_t *offs;
  size_t offs_cap;
  prefetch *pf;   /* the helper, started at the first page that has a next */
  int pf_failed;  /* it could not be started: decode everything here */
} stats_cache;

static _Thread_local stats_cache *t_cache;
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

/* Runs in the exiting thread (any pthread: ours, Python's, a JVM's). t_cache is cleared too,
 * so that a later TSD destructor of the same thread that reads stats allocates (and registers)
 * a fresh cache instead of using the freed one; glibc then runs this destructor again. */
static void cache_free(void *p) {
  stats_cache *c = p;
  if (!c) return;
  if (t_cache == c) t_cache = NULL;
  prefetch_free(c->pf);
  dk__free(NULL, c->buf);
  dk__buf_dispose(&c->text);
  dk__buf_dispose(&c->scratch);
  dk__free(NULL, c->offs);
  dk__free(NULL, c);
}

static void cache_key_init(void) { (void)pthread_key_create(&g_cache_key, cache_free); }

static stats_cache *cache_get(void) {
  if (DK_LIKELY(t_cache != NULL)) return t_cache;
  pthread_once(&g_cache_once, cache_key_init);
  stats_cache *c = dk__calloc(NULL, 1, sizeof *c);
  if (!c) return NULL;
  dk__buf_init(&c->text, NULL);
  dk__buf_init(&c->scratch, NULL);
  if (pthread_setspecific(g_cache_key, c) != 0) {
    dk__free(NULL, c);
    return NULL;
  }
  t_cache = c;
  return c;
}

/* Takes b over from the helper when it decoded (or is decoding) it: true when c now holds b. */
static bool prefetch_take(stats_cache *c, const dk__sblock *b) {
  prefetch *p = c->pf;
  if (!p) return false;
  bool took = false;
  pthread_mutex_lock(&p->mu);
  while (p->job == b) pthread_cond_wait(&p->cv, &p->mu);
  if (p->done == b->serial) {
    dk_buf t = c->text;
    c->text = p->text;
    p->text = t;
    uint32_t *o = c->offs;
    size_t oc = c->offs_cap;
    c->offs = p->offs;
    c->offs_cap = p->offs_cap;
    p->offs = o;
    p->offs_cap = oc;
    p->done = 0;
    took = true;
  }
  pthread_mutex_unlock(&p->mu);
  return took;
}

/* Hands b->next to the helper (started on first use) if it is idle. */
static void prefetch_next(stats_cache *c, const dk__sblock *b) {
  const dk__sblock *n = b->next;
  if (!n || c->pf_failed) return;
  if (!c->pf && !(c->pf = prefetch_new())) {
    c->pf_failed = 1;
    return;
  }
  prefetch *p = c->pf;
  pthread_mutex_lock(&p->mu);
  if (!p->job && p->done != n->serial) {
    p->job = n;
    p->job_owner = n->owner;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
}

/* Stats of row `row` of a page block, decoding the page into the cache when needed. */
static dk_status page_stats(const char **out, stats_cache *c, const dk__sblock *b, uint32_t row,
                            dk_error *err) {
  const dk_pq__page *pg = &b->page;
  *out = NULL;
  if (row >= (uint32_t)pg->num_values) return DK_OK;
  if (c->serial != b->serial) {
    c->serial = 0;
    if (!prefetch_take(c, b)) {
      prefetch_next(c, b);
      DK_RETURN_NOT_OK(decode_page(b, &c->text, &c->scratch, &c->offs, &c->offs_cap, err));
    }
    c->serial = b->serial;
  }
  uint32_t o = c->offs[row];
  if (o != UINT32_MAX) *out = c->text.data + o;
  return DK_OK;
}

const char *dk_log__file_stats(const dk__file *f) {
  const char *s = NULL;
  dk_error e;
  dk_error_init(&e);
  return dk_log__file_stats_err(&s, f, &e) == DK_OK ? s : NULL;
}

dk_status dk_log__file_stats_err(const char **out, const dk__file *f, dk_error *err) {
  const dk__sblock *b = f->sblk;
  *out = NULL;
  if (!b) return DK_OK;
  if (b->raw) {
    *out = (const char *)b->data + f->soff;
    return DK_OK;
  }
  stats_cache *c = cache_get();
  if (!c) return dk__error_set(err, DK_NOMEM, "out of memory for the stats cache");
  if (b->is_page) return page_stats(out, c, b, f->soff, err);
  if (c->serial != b->serial) {
    if (c->cap < b->usize) {
      char *p = dk__realloc(NULL, c->buf, b->usize);
      if (!p) return dk__error_set(err, DK_NOMEM, "out of memory decompressing stats");
      c->buf = p;
      c->cap = b->usize;
    }
    int r = LZ4_decompress_safe(b->data, c->buf, (int)b->csize, (int)c->cap);
    if (r < 0 || (uint32_t)r != b->usize) {
      c->serial = 0;
      return dk__error_set(err, DK_CORRUPT, "stats block does not decompress");
    }
    c->serial = b->serial;
  }
  *out = c->buf + f->soff;
  return DK_OK;
}

/* ---- field helpers ---------------------------------------------------------------------- */

/* Object lookup by a string literal without a strlen per call (the hot path of replay). */
#define JGET(o, lit) dk__json_getn((o), "" lit, sizeof(lit) - 1) /* literals only */

#define get_i64(o, k, out) dk__json_as_i64(JGET((o), k), (out))
#define get_str(o, k, n) dk__json_as_str(JGET((o), k), (n))

/* Reads a deletionVector descriptor; path_or_inline_dv stays borrowed from the JSON until copied.
 * Its unique id (storageType + pathOrInlineDv [+ "@" offset]) keys the file with its path. */
static dk_status dv_parse(dk_dv_descriptor *dv, dk__state *st, const dk_json_value *v,
                          const char *what, dk_error *err) {
  size_t tn, pn;
  const char *t = get_str(v, "storageType", &tn);
  const char *p = get_str(v, "pathOrInlineDv", &pn);
  if (!t || tn != 1 || !p)
    return dk__error_set(err, DK_CORRUPT, "log: %s has a malformed deletionVector", what);
  memset(dv, 0, sizeof *dv);
  dv->storage_type = t[0];
  if (dv->storage_type != 'u' && dv->storage_type != 'i' && dv->storage_type != 'p')
    return dk__error_set(err, DK_CORRUPT, "log: %s: unknown deletionVector storageType '%c'", what,
                         t[0]);
  dv->path_or_inline_dv = p; /* borrowed until copied */
  int64_t x;
  dv->offset = get_i64(v, "offset", &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
  dv->size_in_bytes = get_i64(v, "sizeInBytes", &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : 0;
  dv->cardinality = get_i64(v, "cardinality", &x) ? x : 0;
  return DK_OK;
}

/* ---- the (path, DV unique id) index ---------------------------------------------------- */

static bool dv_same(const dk_dv_descriptor *a, const dk_dv_descriptor *b) {
  if (!a || !b) return a == b;
  return a->storage_type == b->storage_type && a->offset == b->offset &&
         strcmp(a->path_or_inline_dv, b->path_or_inline_dv) == 0;
}

static uint64_t key_hash(const char *path, size_t plen, const dk_dv_descriptor *dv) {
  uint64_t h = dk__hash_bytes(path, plen);
  if (dv) {
    uint64_t d = dk__hash_bytes(dv->path_or_inline_dv, strlen(dv->path_or_inline_dv));
    h ^= (d + (uint64_t)(unsigned char)dv->storage_type * 0x9E3779B97F4A7C15ull +
          (uint64_t)(uint32_t)dv->offset) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
  }
  return h;
}

typedef struct key_ref {
  const char *path;
  size_t plen;
  const dk_dv_descriptor *dv;
  uint64_t hash;
} key_ref;

/* Entry i of the indexed array as a key (files or tombstones). */
typedef bool (*key_eq_fn)(const dk__state *st, size_t pos, const key_ref *k);

static bool file_eq(const dk__state *st, size_t pos, const key_ref *k) {
  const dk__file *f = &st->files[pos];
  return strncmp(f->path, k->path, k->plen) == 0 && f->path[k->plen] == 0 &&
         dv_same(dk__file_dv(f), k->dv);
}

static bool tomb_eq(const dk__state *st, size_t pos, const key_ref *k) {
  const dk__tomb *t = &st->tombs[pos];
  return strncmp(t->path, k->path, k->plen) == 0 && t->path[k->plen] == 0 && dv_same(t->dv, k->dv);
}

#define TAG(h) ((uint64_t)(uint32_t)(h))

/* Returns the slot holding k, or the empty slot where it would go; *found tells which. */
static size_t index_find(const dk__state *st, const dk__index *ix, const key_ref *k,
                         key_eq_fn eq, bool *found) {
  size_t mask = ix->cap - 1, i = (size_t)k->hash & mask;
  uint64_t tag = TAG(k->hash);
  for (;;) {
    uint64_t sl = ix->slots[i];
    if (!sl) {
      *found = false;
      return i;
    }
    if ((sl >> 32) == tag && eq(st, (size_t)(uint32_t)sl - 1, k)) {
      *found = true;
      return i;
    }
    i = (i + 1) & mask;
  }
}

static uint64_t entry_hash(const dk__state *st, const dk__index *ix, size_t pos) {
  if (ix == &st->file_index) {
    const dk__file *f = &st->files[pos];
    return key_hash(f->path, strlen(f->path), dk__file_dv(f));
  }
  const dk__tomb *t = &st->tombs[pos];
  return key_hash(t->path, strlen(t->path), t->dv);
}

static dk_status index_grow(dk__state *st, dk__index *ix, dk_error *err) {
  if (ix->cap && (ix->count + 1) * 4 < ix->cap * 3) return DK_OK;
  size_t nc = ix->cap ? ix->cap * 2 : 1024;
  if (nc > ((size_t)1 << 32)) return dk__error_set(err, DK_UNSUPPORTED, "log: too many files");
  uint64_t *ns = dk__calloc(st->alloc, nc, sizeof *ns);
  if (!ns) return dk__error_set(err, DK_NOMEM, "log: out of memory growing the file index");
  for (size_t i = 0; i < ix->cap; i++) {
    uint64_t sl = ix->slots[i];
    if (!sl) continue;
    size_t j = (size_t)(sl >> 32) & (nc - 1); /* the slot keeps the hash bits that place it */
    while (ns[j]) j = (j + 1) & (nc - 1);
    ns[j] = sl;
  }
  dk__free(st->alloc, ix->slots);
  ix->slots = ns;
  ix->cap = nc;
  return DK_OK;
}

static void index_remove_slot(dk__index *ix, size_t i) {
  size_t mask = ix->cap - 1;
  ix->slots[i] = 0;
  ix->count--;
  /* backward-shift the following cluster */
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    uint64_t sl = ix->slots[j];
    if (!sl) return;
    size_t home = (size_t)(sl >> 32) & mask;
    /* move sl to i if its home is not cyclically in (i, j] */
    bool move = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
    if (move) {
      ix->slots[i] = sl;
      ix->slots[j] = 0;
      i = j;
    }
  }
}

static uint64_t make_slot(uint64_t hash, size_t pos) { return (TAG(hash) << 32) | (uint64_t)(pos + 1); }

/* ---- add / remove ----------------------------------------------------------------------- */

static dk_status add_insert(dk__state *st, const dk__file *fp, size_t plen, dk_error *err);

dk_status dk_log__apply_add_in(dk__state *st, const dk__add_in *in, dk_error *err) {
  const char *path;
  size_t plen;
  if (!in->path.ptr || !in->path.len)
    return dk__error_set(err, DK_CORRUPT, "log: add action without a path (version %lld)",
                         (long long)st->cur_version);
  DK_RETURN_NOT_OK(dk_log__canonical_path(&path, &plen, &st->arena, st->root, st->root_len,
                                          in->path.ptr, in->path.len, err));
  dk__file f;
  memset(&f, 0, sizeof f);
  f.path = path;
  f.flags = DK__F_LIVE;
  if (in->size < 0)
    return dk__error_set(err, DK_CORRUPT, "log: add '%s' has no valid size (version %lld)", path,
                         (long long)st->cur_version);
  f.size = in->size;
  f.mtime = in->mtime;
  if (in->n_pv) {
    if (in->n_pv > DK__MAX_PV)
      return dk__error_set(err, DK_CORRUPT, "log: add '%s' has too many partition values", path);
    f.n_pv = (uint32_t)in->n_pv;
    f.pv = intern_pv_text(st, in->pv, in->n_pv, err);
    if (!f.pv) return DK_NOMEM;
  }
  if (in->tags_json.ptr || in->has_dv || in->has_brid || in->has_drcv) {
    dk__fextra *ex = dk__arena_alloc(&st->arena, sizeof *ex, err);
    if (!ex) return DK_NOMEM;
    memset(ex, 0, sizeof *ex);
    if (in->tags_json.ptr) {
      ex->tags = arena_str(st, in->tags_json.ptr, in->tags_json.len, err);
      if (!ex->tags) return DK_NOMEM;
    }
    if (in->has_dv) {
      dk_dv_descriptor *dv = dk__arena_alloc(&st->arena, sizeof *dv, err);
      if (!dv) return DK_NOMEM;
      if (in->dv_type != 'u' && in->dv_type != 'i' && in->dv_type != 'p')
        return dk__error_set(err, DK_CORRUPT, "log: add '%s': unknown deletionVector storageType", path);
      dv->storage_type = in->dv_type;
      dv->path_or_inline_dv = arena_str(st, in->dv_path.ptr ? in->dv_path.ptr : "", in->dv_path.len, err);
      if (!dv->path_or_inline_dv) return DK_NOMEM;
      dv->offset = in->dv_offset;
      dv->size_in_bytes = in->dv_size;
      dv->cardinality = in->dv_card;
      ex->dv = dv;
    }
    if (in->has_brid) {
      ex->base_row_id = in->brid;
      f.flags |= DK__F_BRID;
    }
    if (in->has_drcv) {
      ex->drcv = in->drcv;
      f.flags |= DK__F_DRCV;
    }
    f.extra = ex;
  }
  if (in->stats.ptr) DK_RETURN_NOT_OK(sblock_add(st, &f, in->stats.ptr, in->stats.len, err));
  return add_insert(st, &f, plen, err);
}

/* A commit's add action, as the columnar input dk_log__apply_add_in takes. */
static dk_status apply_add(dk__state *st, const dk_json_value *a, dk_error *err) {
  if (a->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "log: add action is not an object");
  dk__add_in in;
  memset(&in, 0, sizeof in);
  in.path.ptr = get_str(a, "path", &in.path.len);
  if (!get_i64(a, "size", &in.size)) in.size = -1;
  if (!get_i64(a, "modificationTime", &in.mtime)) in.mtime = 0;
  const dk_json_value *pv = JGET(a, "partitionValues");
  if (pv && pv->type == DK_JSON_OBJECT && pv->len) {
    if (pv->len > DK__MAX_PV)
      return dk__error_set(err, DK_CORRUPT, "log: add '%s' has too many partition values",
                           in.path.ptr ? in.path.ptr : "");
    dk__buf_clear(&st->pv_views);
    DK_RETURN_NOT_OK(dk__buf_reserve(&st->pv_views, 2 * (size_t)pv->len * sizeof(dk_str), err));
    dk_str *kv = (dk_str *)(void *)st->pv_views.data;
    for (uint32_t i = 0; i < pv->len; i++) {
      const dk_json_member *m = &pv->u.members[i];
      kv[2 * i].ptr = m->key;
      kv[2 * i].len = m->klen;
      kv[2 * i + 1].ptr = dk__json_as_str(&m->value, &kv[2 * i + 1].len);
      if (!kv[2 * i + 1].ptr && m->value.type != DK_JSON_NULL)
        return dk__error_set(err, DK_CORRUPT,
                             "log: add '%s': partition value of '%s' is not a string",
                             in.path.ptr ? in.path.ptr : "", m->key);
    }
    in.pv = kv;
    in.n_pv = pv->len;
  }
  in.stats.ptr = get_str(a, "stats", &in.stats.len);
  const dk_json_value *tags = JGET(a, "tags");
  if (tags && tags->type == DK_JSON_OBJECT) {
    dk__buf_clear(&st->scratch);
    DK_RETURN_NOT_OK(dk__json_write_value(&st->scratch, tags, err));
    in.tags_json.ptr = st->scratch.data ? st->scratch.data : "";
    in.tags_json.len = st->scratch.len;
  }
  const dk_json_value *dvv = JGET(a, "deletionVector");
  if (dvv && dvv->type == DK_JSON_OBJECT) {
    dk_dv_descriptor dv;
    DK_RETURN_NOT_OK(dv_parse(&dv, st, dvv, "add", err));
    in.has_dv = 1;
    in.dv_type = dv.storage_type;
    in.dv_path.ptr = dv.path_or_inline_dv;
    in.dv_path.len = strlen(dv.path_or_inline_dv);
    in.dv_offset = dv.offset;
    in.dv_size = dv.size_in_bytes;
    in.dv_card = dv.cardinality;
  }
  in.has_brid = get_i64(a, "baseRowId", &in.brid);
  in.has_drcv = get_i64(a, "defaultRowCommitVersion", &in.drcv);
  return dk_log__apply_add_in(st, &in, err);
}

dk_status dk_log__set_stats(dk__state *st, size_t pos, const char *text, size_t len,
                            dk_error *err) {
  if (pos >= st->n_files) return dk__error_set(err, DK_INTERNAL, "log: stats for a missing file");
  return sblock_add(st, &st->files[pos], text, len, err);
}

/* Inserts a built file entry under its (path, DV id) key; a newer add of the same key wins. */
static dk_status add_insert(dk__state *st, const dk__file *fp, size_t plen, dk_error *err) {
  const dk__file f = *fp;
  const char *path = f.path;
  dk_dv_descriptor *dvk = dk__file_dv(&f);
  if (st->n_files >= UINT32_MAX - 1)
    return dk__error_set(err, DK_UNSUPPORTED, "log: more than 4 billion file actions");
  if (st->defer) { /* a checkpoint row: reconciled already, no index (see dk__state) */
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->files, &st->cap_files, st->n_files,
                          sizeof *st->files, err));
    st->last_pos = st->n_files;
    st->files[st->n_files] = f;
    /* hashed now, while the path is in cache; reconcile_base filters on it */
    st->files[st->n_files].ktag = (uint32_t)TAG(key_hash(path, plen, dvk));
    st->files[st->n_files++].flags |= DK__F_KTAG;
    st->n_live++;
    return DK_OK;
  }
  key_ref k = {path, plen, dvk, key_hash(path, plen, dvk)};
  DK_RETURN_NOT_OK(index_grow(st, &st->file_index, err));
  bool found;
  size_t slot = index_find(st, &st->file_index, &k, file_eq, &found);
  if (found) {
    st->last_pos = (uint32_t)st->file_index.slots[slot] - 1;
    st->files[st->last_pos] = f; /* the newer add wins */
  } else {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->files, &st->cap_files, st->n_files,
                          sizeof *st->files, err));
    st->file_index.slots[slot] = make_slot(k.hash, st->n_files);
    st->file_index.count++;
    st->last_pos = st->n_files;
    st->files[st->n_files++] = f;
    st->n_live++;
  }
  /* a re-added file is no longer a tombstone */
  if (st->tomb_index.count) {
    size_t ts = index_find(st, &st->tomb_index, &k, tomb_eq, &found);
    if (found) {
      st->tombs[(uint32_t)st->tomb_index.slots[ts] - 1].live = 0;
      index_remove_slot(&st->tomb_index, ts);
    }
  }
  return DK_OK;
}

static dk_status apply_remove(dk__state *st, const dk_json_value *a, int flags, dk_error *err) {
  if (a->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "log: remove action is not an object");
  dk__remove_in in;
  memset(&in, 0, sizeof in);
  in.path.ptr = get_str(a, "path", &in.path.len);
  dk_dv_descriptor dv;
  const dk_json_value *dvv = JGET(a, "deletionVector");
  if (dvv && dvv->type == DK_JSON_OBJECT) {
    DK_RETURN_NOT_OK(dv_parse(&dv, st, dvv, "remove", err));
    in.dv = &dv;
  }
  if (!get_i64(a, "deletionTimestamp", &in.deletion_timestamp)) in.deletion_timestamp = -1;
  if (!get_i64(a, "size", &in.size)) in.size = -1;
  bool b;
  in.data_change = dk__json_as_bool(JGET(a, "dataChange"), &b) ? b : 1;
  return dk_log__apply_remove_in(st, &in, flags, err);
}

dk_status dk_log__apply_remove_in(dk__state *st, const dk__remove_in *in, int flags,
                                  dk_error *err) {
  if (!in->path.ptr || in->path.len == 0)
    return dk__error_set(err, DK_CORRUPT, "log: remove action without a path (version %lld)",
                         (long long)st->cur_version);
  const char *path;
  size_t plen;
  DK_RETURN_NOT_OK(dk_log__canonical_path(&path, &plen, &st->arena, st->root, st->root_len,
                                          in->path.ptr, in->path.len, err));
  const dk_dv_descriptor *dvp = in->dv;
  key_ref k = {path, plen, dvp, key_hash(path, plen, dvp)};
  bool found;
  if (!(flags & DK__FROM_CHECKPOINT) && st->file_index.count) {
    size_t slot = index_find(st, &st->file_index, &k, file_eq, &found);
    if (found) {
      st->files[(uint32_t)st->file_index.slots[slot] - 1].flags &= ~(uint32_t)DK__F_LIVE;
      st->n_live--;
      index_remove_slot(&st->file_index, slot);
    }
  }
  dk__tomb t;
  t.path = path;
  t.dv = NULL;
  if (dvp) {
    dk_dv_descriptor *d = dk__arena_alloc(&st->arena, sizeof *d, err);
    if (!d) return DK_NOMEM;
    *d = *dvp;
    d->path_or_inline_dv = arena_str(st, dvp->path_or_inline_dv, strlen(dvp->path_or_inline_dv), err);
    if (!d->path_or_inline_dv) return DK_NOMEM;
    t.dv = d;
    k.dv = d;
  }
  t.deletion_timestamp = in->deletion_timestamp;
  t.size = in->size;
  t.data_change = in->data_change;
  t.live = 1;
  if (st->defer && (flags & DK__FROM_CHECKPOINT)) { /* reconciled already: no index */
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->tombs, &st->cap_tombs, st->n_tombs,
                          sizeof *st->tombs, err));
    st->tombs[st->n_tombs++] = t;
    return DK_OK;
  }
  DK_RETURN_NOT_OK(index_grow(st, &st->tomb_index, err));
  size_t slot = index_find(st, &st->tomb_index, &k, tomb_eq, &found);
  if (found) {
    st->tombs[(uint32_t)st->tomb_index.slots[slot] - 1] = t;
  } else {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->tombs, &st->cap_tombs, st->n_tombs,
                          sizeof *st->tombs, err));
    st->tomb_index.slots[slot] = make_slot(k.hash, st->n_tombs);
    st->tomb_index.count++;
    st->tombs[st->n_tombs++] = t;
  }
  return DK_OK;
}

/* ---- protocol / metadata ---------------------------------------------------------------- */

static dk_status str_array(dk__state *st, const dk_json_value *v, const char *what,
                           const char *const **out, size_t *n, dk_error *err) {
  *out = NULL;
  *n = 0;
  if (!v || v->type == DK_JSON_NULL) return DK_OK;
  if (v->type != DK_JSON_ARRAY)
    return dk__error_set(err, DK_CORRUPT, "log: %s is not an array (version %lld)", what,
                         (long long)st->cur_version);
  if (!v->len) {
    static const char *const empty[1] = {NULL};
    *out = empty;
    return DK_OK;
  }
  const char **arr = dk__arena_alloc(&st->arena, sizeof *arr * v->len, err);
  if (!arr) return DK_NOMEM;
  for (uint32_t i = 0; i < v->len; i++) {
    size_t sn;
    const char *s = dk__json_as_str(&v->u.items[i], &sn);
    if (!s)
      return dk__error_set(err, DK_CORRUPT, "log: %s has a non-string entry (version %lld)", what,
                           (long long)st->cur_version);
    arr[i] = arena_str(st, s, sn, err);
    if (!arr[i]) return DK_NOMEM;
  }
  *out = arr;
  *n = v->len;
  return DK_OK;
}

static dk_status apply_protocol(dk__state *st, const dk_json_value *a, dk_error *err) {
  dk_protocol p;
  memset(&p, 0, sizeof p);
  int64_t r, w;
  if (!get_i64(a, "minReaderVersion", &r) || !get_i64(a, "minWriterVersion", &w) || r > INT32_MAX ||
      w > INT32_MAX || r < INT32_MIN || w < INT32_MIN)
    return dk__error_set(err, DK_CORRUPT,
                         "log: protocol action without valid minReaderVersion/minWriterVersion "
                         "(version %lld)",
                         (long long)st->cur_version);
  p.min_reader_version = (int32_t)r;
  p.min_writer_version = (int32_t)w;
  const dk_json_value *rf = JGET(a, "readerFeatures");
  const dk_json_value *wf = JGET(a, "writerFeatures");
  DK_RETURN_NOT_OK(str_array(st, rf, "readerFeatures", &p.reader_features, &p.n_reader_features, err));
  DK_RETURN_NOT_OK(str_array(st, wf, "writerFeatures", &p.writer_features, &p.n_writer_features, err));
  p.has_reader_features = rf && rf->type == DK_JSON_ARRAY;
  p.has_writer_features = wf && wf->type == DK_JSON_ARRAY;
  st->protocol = p;
  st->has_protocol = 1;
  return DK_OK;
}

static dk_status opt_str(dk__state *st, const dk_json_value *o, const char *k, const char **out,
                         dk_error *err) {
  size_t n;
  const char *s = dk__json_as_str(dk__json_get(o, k), &n);
  *out = NULL;
  if (!s) return DK_OK;
  *out = arena_str(st, s, n, err);
  return *out ? DK_OK : DK_NOMEM;
}

static dk_status apply_metadata(dk__state *st, const dk_json_value *a, dk_error *err) {
  dk_metadata m;
  memset(&m, 0, sizeof m);
  DK_RETURN_NOT_OK(opt_str(st, a, "id", &m.id, err));
  if (!m.id)
    return dk__error_set(err, DK_CORRUPT, "log: metaData action without an id (version %lld)",
                         (long long)st->cur_version);
  DK_RETURN_NOT_OK(opt_str(st, a, "name", &m.name, err));
  DK_RETURN_NOT_OK(opt_str(st, a, "description", &m.description, err));
  DK_RETURN_NOT_OK(opt_str(st, a, "schemaString", &m.schema_string, err));
  DK_RETURN_NOT_OK(opt_str(st, JGET(a, "format"), "provider", &m.format_provider, err));
  if (!m.format_provider) m.format_provider = "parquet";
  if (!get_i64(a, "createdTime", &m.created_time)) m.created_time = -1;
  DK_RETURN_NOT_OK(str_array(st, JGET(a, "partitionColumns"), "partitionColumns",
                             &m.partition_columns, &m.n_partition_columns, err));
  const dk_json_value *cfg = JGET(a, "configuration");
  if (cfg && cfg->type == DK_JSON_OBJECT && cfg->len) {
    const char **keys = dk__arena_alloc(&st->arena, sizeof *keys * cfg->len, err);
    const char **vals = dk__arena_alloc(&st->arena, sizeof *vals * cfg->len, err);
    if (!keys || !vals) return DK_NOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < cfg->len; i++) {
      const dk_json_member *mm = &cfg->u.members[i];
      size_t vn;
      const char *v = dk__json_as_str(&mm->value, &vn);
      if (!v) continue; /* null values: treated as unset */
      keys[n] = arena_str(st, mm->key, mm->klen, err);
      vals[n] = arena_str(st, v, vn, err);
      if (!keys[n] || !vals[n]) return DK_NOMEM;
      n++;
    }
    m.config_keys = keys;
    m.config_values = vals;
    m.n_configuration = n;
  }
  st->metadata = m;
  st->has_metadata = 1;
  return DK_OK;
}

/* ---- txn / domainMetadata / commitInfo / sidecar ---------------------------------------- */

static dk_status apply_txn(dk__state *st, const dk_json_value *a, dk_error *err) {
  size_t n;
  const char *app = get_str(a, "appId", &n);
  int64_t v;
  if (!app || !get_i64(a, "version", &v))
    return dk__error_set(err, DK_CORRUPT, "log: txn action without appId/version (version %lld)",
                         (long long)st->cur_version);
  uint64_t *slot;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&st->txn_index, app, n, &slot, &ins, err));
  if (ins) {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->txns, &st->cap_txns, st->n_txns,
                          sizeof *st->txns, err));
    *slot = st->n_txns++;
    st->txns[*slot].app_id = arena_str(st, app, n, err);
    if (!st->txns[*slot].app_id) return DK_NOMEM;
  }
  dk__txn *t = &st->txns[*slot];
  t->version = v;
  if (!get_i64(a, "lastUpdated", &t->last_updated)) t->last_updated = -1;
  return DK_OK;
}

static dk_status apply_domain(dk__state *st, const dk_json_value *a, dk_error *err) {
  size_t n, cn = 0;
  const char *dom = get_str(a, "domain", &n);
  const char *cfg = get_str(a, "configuration", &cn);
  if (!dom)
    return dk__error_set(err, DK_CORRUPT, "log: domainMetadata without a domain (version %lld)",
                         (long long)st->cur_version);
  bool removed = false;
  dk__json_as_bool(JGET(a, "removed"), &removed);
  uint64_t *slot;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&st->domain_index, dom, n, &slot, &ins, err));
  if (ins) {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->domains, &st->cap_domains, st->n_domains,
                          sizeof *st->domains, err));
    *slot = st->n_domains++;
    st->domains[*slot].domain = arena_str(st, dom, n, err);
    if (!st->domains[*slot].domain) return DK_NOMEM;
  }
  dk__domain *d = &st->domains[*slot];
  d->removed = removed;
  d->config = arena_str(st, cfg ? cfg : "", cfg ? cn : 0, err);
  return d->config ? DK_OK : DK_NOMEM;
}

dk_status dk_log__apply_action(dk__state *st, const dk_json_value *line, int flags,
                               dk_error *err) {
  if (!line || line->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "log: an action line is not a JSON object");
  for (uint32_t i = 0; i < line->len; i++) {
    const dk_json_member *m = &line->u.members[i];
    const dk_json_value *a = &m->value;
    const char *k = m->key;
    if (a->type == DK_JSON_NULL) continue;
    if (a->type != DK_JSON_OBJECT)
      return dk__error_set(err, DK_CORRUPT, "log: action '%s' is not an object (version %lld)", k,
                           (long long)st->cur_version);
    if (!strcmp(k, "add")) {
      DK_RETURN_NOT_OK(apply_add(st, a, err));
    } else if (!strcmp(k, "remove")) {
      DK_RETURN_NOT_OK(apply_remove(st, a, flags, err));
    } else if (!strcmp(k, "metaData")) {
      DK_RETURN_NOT_OK(apply_metadata(st, a, err));
    } else if (!strcmp(k, "protocol")) {
      DK_RETURN_NOT_OK(apply_protocol(st, a, err));
    } else if (!strcmp(k, "txn")) {
      DK_RETURN_NOT_OK(apply_txn(st, a, err));
    } else if (!strcmp(k, "domainMetadata")) {
      DK_RETURN_NOT_OK(apply_domain(st, a, err));
    } else if (!strcmp(k, "commitInfo")) {
      if (!(flags & DK__FROM_CHECKPOINT)) {
        int64_t x;
        st->last_ict = get_i64(a, "inCommitTimestamp", &x) ? x : -1;
        st->last_commit_info_ts = get_i64(a, "timestamp", &x) ? x : -1;
      }
    } else if (!strcmp(k, "sidecar")) {
      size_t n;
      const char *p = get_str(a, "path", &n);
      if (!p) return dk__error_set(err, DK_CORRUPT, "log: sidecar action without a path");
      DK_RETURN_NOT_OK(dk__buf_append(&st->sidecars, p, n + 1, err)); /* with its NUL */
    }
    /* cdc, checkpointMetadata and unknown actions do not change the snapshot */
  }
  return DK_OK;
}

dk_status dk_log__apply_json_file(dk__state *st, const char *text, size_t len, int flags,
                                  const char *name, dk_error *err) {
  dk_arena ar;
  dk__arena_init(&ar, st->alloc, 64 * 1024);
  dk_status s = DK_OK;
  size_t pos = 0, lineno = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    lineno++;
    size_t a = pos, b = end;
    while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
    if (a < b) {
      dk_json_value *v;
      s = dk__json_parse(&v, &ar, text + a, b - a, err);
      if (s == DK_OK) s = dk_log__apply_action(st, v, flags, err);
      if (s != DK_OK) {
        if (s == DK_CORRUPT || s == DK_UNSUPPORTED)
          dk__error_prefix(err, "%s: line %zu (byte offset %zu)", name, lineno, a);
        break;
      }
      /* keep the scratch arena small on big files */
      if (ar.total > (16u << 20)) {
        dk__arena_dispose(&ar);
        dk__arena_init(&ar, st->alloc, 64 * 1024);
      }
    }
    pos = end + 1;
  }
  dk__arena_dispose(&ar);
  return s;
}

void dk_log__state_begin_checkpoint(dk__state *st) {
  if (st->n_files || st->n_tombs || st->file_index.count || st->tomb_index.count) return;
  st->defer = 1;
}

void dk_log__state_end_checkpoint(dk__state *st) {
  if (!st->defer) return;
  st->defer = 0;
  st->n_base_files = st->n_files;
  st->n_base_tombs = st->n_tombs;
}

/* Whether a commit action touched key k: its last action is then an add (in file_index) or a
 * remove (in tomb_index); both indexes hold commit-born entries only. */
static bool touched_by_commit(const dk__state *st, const key_ref *k) {
  bool found = false;
  if (st->file_index.count) index_find(st, &st->file_index, k, file_eq, &found);
  if (!found && st->tomb_index.count) index_find(st, &st->tomb_index, k, tomb_eq, &found);
  return found;
}

/* A 2-hash bit filter over the keys of both commit indexes (from their 32-bit slot tags), so
 * that the ~all checkpoint rows no commit touched are answered from a table that stays in
 * cache instead of probing the (much larger) indexes. */
#define FILTER_BITS 22
static inline uint32_t filter_b1(uint32_t tag) { return tag & ((1u << FILTER_BITS) - 1); }
static inline uint32_t filter_b2(uint32_t tag) {
  return (tag * 0x9E3779B1u) >> (32 - FILTER_BITS);
}

static void filter_add_index(uint64_t *bits, const dk__index *ix) {
  for (size_t i = 0; i < ix->cap; i++) {
    uint64_t sl = ix->slots[i];
    if (!sl) continue;
    uint32_t tag = (uint32_t)(sl >> 32), a = filter_b1(tag), b = filter_b2(tag);
    bits[a >> 6] |= 1ull << (a & 63);
    bits[b >> 6] |= 1ull << (b & 63);
  }
}

static inline bool filter_maybe(const uint64_t *bits, uint64_t hash) {
  uint32_t tag = (uint32_t)TAG(hash), a = filter_b1(tag), b = filter_b2(tag);
  return ((bits[a >> 6] >> (a & 63)) & 1) && ((bits[b >> 6] >> (b & 63)) & 1);
}

/* Drops the checkpoint rows superseded by a commit action on the same key. */
static void reconcile_base(dk__state *st) {
  if (!st->file_index.count && !st->tomb_index.count) return;
  uint64_t *bits = dk__calloc(st->alloc, (1u << FILTER_BITS) / 64, sizeof *bits);
  if (bits) {
    filter_add_index(bits, &st->file_index);
    filter_add_index(bits, &st->tomb_index);
  }
  for (size_t i = 0; i < st->n_base_files; i++) {
    dk__file *f = &st->files[i];
    if (!(f->flags & DK__F_LIVE)) continue;
    if (bits && (f->flags & DK__F_KTAG) && !filter_maybe(bits, f->ktag)) continue;
    size_t n = strlen(f->path);
    key_ref k = {f->path, n, dk__file_dv(f), key_hash(f->path, n, dk__file_dv(f))};
    if (bits && !filter_maybe(bits, k.hash)) continue;
    if (touched_by_commit(st, &k)) f->flags &= ~(uint32_t)DK__F_LIVE;
  }
  for (size_t i = 0; i < st->n_base_tombs; i++) {
    dk__tomb *t = &st->tombs[i];
    if (!t->live) continue;
    size_t n = strlen(t->path);
    key_ref k = {t->path, n, t->dv, key_hash(t->path, n, t->dv)};
    if (bits && !filter_maybe(bits, k.hash)) continue;
    if (touched_by_commit(st, &k)) t->live = 0;
  }
  dk__free(st->alloc, bits);
}

dk_status dk_log__state_finish(dk__state *st, dk_error *err) {
  DK_RETURN_NOT_OK(sblock_seal(st, err));
  reconcile_base(st);
  st->defer = 0;
  st->n_base_files = st->n_base_tombs = 0;
  size_t k = 0;
  for (size_t i = 0; i < st->n_files; i++)
    if (st->files[i].flags & DK__F_LIVE) st->files[k++] = st->files[i];
  st->n_files = k;
  st->n_live = k;
  k = 0;
  for (size_t i = 0; i < st->n_tombs; i++)
    if (st->tombs[i].live) st->tombs[k++] = st->tombs[i];
  st->n_tombs = k;
  /* the indexes are only needed while replaying */
  dk__free(st->alloc, st->file_index.slots);
  dk__free(st->alloc, st->tomb_index.slots);
  memset(&st->file_index, 0, sizeof st->file_index);
  memset(&st->tomb_index, 0, sizeof st->tomb_index);
  /* give back the unused tail of the file array */
  if (st->cap_files > st->n_files + 1024) {
    void *p = dk__realloc(st->alloc, st->files, (st->n_files ? st->n_files : 1) * sizeof *st->files);
    if (p) {
      st->files = p;
      st->cap_files = st->n_files ? st->n_files : 1;
    }
  }
  return DK_OK;
}

static dk_status reindex(dk__state *st, dk__index *ix, size_t n, dk_error *err) {
  for (size_t i = 0; i < n; i++) {
    DK_RETURN_NOT_OK(index_grow(st, ix, err));
    uint64_t h = entry_hash(st, ix, i);
    size_t j = (size_t)h & (ix->cap - 1);
    while (ix->slots[j]) j = (j + 1) & (ix->cap - 1);
    ix->slots[j] = make_slot(h, i);
    ix->count++;
  }
  return DK_OK;
}

dk_status dk_log__state_reindex(dk__state *st, dk_error *err) {
  DK_RETURN_NOT_OK(reindex(st, &st->file_index, st->n_files, err));
  return reindex(st, &st->tomb_index, st->n_tombs, err);
}
