/*
** filelist.c — a snapshot's active files and tombstones as a chunked, copy-on-write list
** (dk__clist, snapshot_int.h), so that an incremental refresh (dk_snapshot_update) costs
** what the new commits touch, not the size of the table.
**
** Follows PROTOCOL.md "Action Reconciliation": a file or tombstone is identified by
** (path, deletionVector.uniqueId); a newer action on a key replaces the older entry.
**
** How it works: a list is an array of chunks (at most DK_SNAPSHOT__CHUNK entries each) with
** the index of each chunk's first entry. A chunk is immutable and reference-counted by the
** lists holding it; its entries live in a reference-counted block, which a full load's chunks
** share (they are slices of the replay's one array: nothing is copied). Each chunk keeps a
** 2-hash bit filter of its entries' 32-bit key tags (dk__file.ktag, dk__tomb.ktag). A refresh
** makes a new list from the old one: every key the new commits touched (their live adds and
** tombstones) is tested against each chunk's filter; a chunk no key may be in is shared as
** is; one with a match is copied without the matched entries; the commits' own entries are
** appended as new chunks. The old list, and every reader of it on any thread, is untouched.
*/
#include <stdlib.h>

#include "snapshot/snapshot_int.h"

#define BLOOM_BITS (DK_SNAPSHOT__BLOOM_WORDS * 64u)

static inline uint32_t bloom_b1(uint32_t tag) { return tag & (BLOOM_BITS - 1); }
static inline uint32_t bloom_b2(uint32_t tag) { return (tag * 0x9E3779B1u) >> 18; }

static inline void bloom_add(uint64_t *b, uint32_t tag) {
  uint32_t x = bloom_b1(tag), y = bloom_b2(tag);
  b[x >> 6] |= 1ull << (x & 63);
  b[y >> 6] |= 1ull << (y & 63);
}

static inline bool bloom_maybe(const uint64_t *b, uint32_t tag) {
  uint32_t x = bloom_b1(tag), y = bloom_b2(tag);
  return ((b[x >> 6] >> (x & 63)) & 1) && ((b[y >> 6] >> (y & 63)) & 1);
}

/* ---- entries of either kind -------------------------------------------------------------- */

static inline size_t elem_size(int kind) {
  return kind == DK__CL_FILES ? sizeof(dk__file) : sizeof(dk__tomb);
}

static inline const void *elem(const dk__chunk *c, int kind, size_t i) {
  return (const char *)c->e + i * elem_size(kind);
}

/* The key of an entry. Entries built by replay carry their tag; any other is hashed here. */
static void elem_key(dk__key *k, int kind, const void *e) {
  if (kind == DK__CL_FILES) {
    const dk__file *f = e;
    k->path = f->path;
    k->dv = dk__file_dv(f);
    k->tag = (f->flags & DK__F_KTAG) ? f->ktag
                                     : dk_log__key_tag(f->path, strlen(f->path), k->dv);
  } else {
    const dk__tomb *t = e;
    k->path = t->path;
    k->dv = t->dv;
    k->tag = t->ktag;
  }
}

static inline int64_t elem_bytes(int kind, const void *e) {
  return kind == DK__CL_FILES ? ((const dk__file *)e)->size : 0;
}

static bool key_eq(const dk__key *a, const dk__key *b) {
  return a->tag == b->tag && strcmp(a->path, b->path) == 0 && dk_log__dv_same(a->dv, b->dv);
}

/* ---- blocks and chunks ------------------------------------------------------------------- */

static void block_unref(dk__cblock *b, const dk_allocator *a) {
  if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  dk__free(a, b->mem);
  dk__free(a, b);
}

static void chunk_unref(dk__chunk *c, const dk_allocator *a) {
  if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  block_unref(c->blk, a);
  dk__free(a, c);
}

/* A chunk of entries [0, n) of blk->mem + off (a reference to blk is taken), with its filter
 * built from the entries (bloom NULL) or copied (a superset: a chunk cut from another). */
static dk__chunk *chunk_new(dk__cblock *blk, size_t off, size_t n, int kind,
                            const uint64_t *bloom, int64_t *bytes, const dk_allocator *a) {
  dk__chunk *c = dk__malloc(a, sizeof *c);
  if (!c) return NULL;
  c->refs = 1;
  c->n = (uint32_t)n;
  c->e = (const char *)blk->mem + off * elem_size(kind);
  c->blk = blk;
  __atomic_add_fetch(&blk->refs, 1, __ATOMIC_ACQ_REL);
  if (bloom) {
    memcpy(c->bloom, bloom, sizeof c->bloom);
  } else {
    memset(c->bloom, 0, sizeof c->bloom);
    for (size_t i = 0; i < n; i++) {
      dk__key k;
      const void *e = elem(c, kind, i);
      elem_key(&k, kind, e);
      bloom_add(c->bloom, k.tag);
      *bytes += elem_bytes(kind, e); /* (the one pass over a full load's entries) */
    }
  }
  return c;
}

static dk__cblock *block_new(void *mem, const dk_allocator *a) {
  dk__cblock *b = dk__malloc(a, sizeof *b);
  if (!b) return NULL;
  b->refs = 1; /* the caller's, dropped once its chunks hold theirs */
  b->mem = mem;
  return b;
}

/* ---- lists ------------------------------------------------------------------------------- */

void dk_snapshot__clist_init(dk__clist *l, int kind) {
  memset(l, 0, sizeof *l);
  l->kind = kind;
}

void dk_snapshot__clist_dispose(dk__clist *l, const dk_allocator *a) {
  for (size_t i = 0; i < l->nc; i++) chunk_unref(l->c[i], a);
  dk__free(a, l->c);
  dk__free(a, l->start);
  dk_snapshot__clist_init(l, l->kind);
}

static dk_status list_reserve(dk__clist *l, size_t nc, const dk_allocator *a, dk_error *err) {
  l->c = dk__malloc(a, (nc ? nc : 1) * sizeof *l->c);
  l->start = dk__malloc(a, (nc + 1) * sizeof *l->start);
  if (!l->c || !l->start) return dk__error_set(err, DK_NOMEM, "out of memory (file list)");
  l->start[0] = 0;
  return DK_OK;
}

static void list_push(dk__clist *l, dk__chunk *c) {
  l->c[l->nc++] = c;
  l->n += c->n;
  l->start[l->nc] = l->n;
}

/* Appends the chunks of mem[0, n) (owned by a new block; freed here on failure), adding the
 * sizes of its files to *bytes. */
static dk_status push_block(dk__clist *l, void *mem, size_t n, int64_t *bytes,
                            const dk_allocator *a, dk_error *err) {
  if (!n) {
    dk__free(a, mem);
    return DK_OK;
  }
  dk__cblock *b = block_new(mem, a);
  if (!b) {
    dk__free(a, mem);
    return dk__error_set(err, DK_NOMEM, "out of memory (file list)");
  }
  dk_status st = DK_OK;
  for (size_t off = 0; off < n; off += DK_SNAPSHOT__CHUNK) {
    size_t k = DK_MIN((size_t)DK_SNAPSHOT__CHUNK, n - off);
    dk__chunk *c = chunk_new(b, off, k, l->kind, NULL, bytes, a);
    if (!c) {
      st = dk__error_set(err, DK_NOMEM, "out of memory (file list)");
      break;
    }
    list_push(l, c);
  }
  block_unref(b, a);
  return st;
}

static size_t chunks_for(size_t n) {
  return (n + DK_SNAPSHOT__CHUNK - 1) / DK_SNAPSHOT__CHUNK;
}

dk_status dk_snapshot__clist_adopt(dk__clist *l, int64_t *bytes, void *arr, size_t n,
                                   const dk_allocator *a, dk_error *err) {
  *bytes = 0;
  dk_snapshot__clist_dispose(l, a);
  dk_status st = list_reserve(l, chunks_for(n), a, err);
  if (st == DK_OK) return push_block(l, arr, n, bytes, a, err);
  dk__free(a, arr);
  return st;
}

static int cmp_key_tag(const void *x, const void *y) {
  uint32_t a = ((const dk__key *)x)->tag, b = ((const dk__key *)y)->tag;
  return a < b ? -1 : a > b;
}

/* Index in the sorted cand[0, m) of the first key with this tag, or m. */
static size_t cand_find(const dk__key *const *cand, size_t m, uint32_t tag) {
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cand[mid]->tag < tag) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The chunk c without the entries whose key is one of cand[0, m) (sorted by tag): *out is c
 * itself (a new reference) when none is, NULL when all are. */
static dk_status chunk_without(dk__chunk **out, int64_t *bytes, dk__chunk *c, int kind,
                               const dk__key *const *cand, size_t m, const dk_allocator *a,
                               dk_error *err) {
  *out = NULL;
  uint64_t drop[DK_SNAPSHOT__CHUNK / 64];
  memset(drop, 0, sizeof drop);
  size_t n_drop = 0;
  for (size_t i = 0; i < c->n; i++) {
    dk__key k;
    elem_key(&k, kind, elem(c, kind, i));
    for (size_t j = cand_find(cand, m, k.tag); j < m && cand[j]->tag == k.tag; j++) {
      if (!key_eq(&k, cand[j])) continue;
      drop[i >> 6] |= 1ull << (i & 63);
      n_drop++;
      *bytes += elem_bytes(kind, elem(c, kind, i));
      break;
    }
  }
  if (!n_drop) {
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
    *out = c;
    return DK_OK;
  }
  if (n_drop == c->n) return DK_OK;
  size_t es = elem_size(kind), keep = c->n - n_drop;
  char *mem = dk__malloc(a, keep * es);
  dk__cblock *b = mem ? block_new(mem, a) : NULL;
  if (!b) {
    dk__free(a, mem);
    return dk__error_set(err, DK_NOMEM, "out of memory (file list)");
  }
  size_t k = 0;
  for (size_t i = 0; i < c->n; i++)
    if (!((drop[i >> 6] >> (i & 63)) & 1)) memcpy(mem + es * k++, elem(c, kind, i), es);
  *out = chunk_new(b, 0, keep, kind, c->bloom, NULL, a);
  block_unref(b, a);
  return *out ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (file list)");
}

static dk_status clist_update(dk__clist *out, int64_t *removed_bytes, int64_t *added_bytes,
                             const dk__clist *old, dk__key *keys, size_t n_keys, void *add,
                             size_t n_add, const dk_allocator *a, dk_error *err) {
  *removed_bytes = *added_bytes = 0;
  dk_snapshot__clist_dispose(out, a);
  dk_status st = list_reserve(out, old->nc + chunks_for(n_add), a, err);
  const dk__key **cand = NULL;
  if (st == DK_OK && n_keys) {
    qsort(keys, n_keys, sizeof *keys, cmp_key_tag);
    cand = dk__malloc(a, n_keys * sizeof *cand);
    if (!cand) st = dk__error_set(err, DK_NOMEM, "out of memory (file list)");
  }
  for (size_t i = 0; st == DK_OK && i < old->nc; i++) {
    dk__chunk *c = old->c[i];
    size_t m = 0; /* the keys the chunk's filter may hold, in tag order */
    for (size_t j = 0; j < n_keys; j++)
      if (bloom_maybe(c->bloom, keys[j].tag)) cand[m++] = &keys[j];
    dk__chunk *nc = c;
    if (m) {
      st = chunk_without(&nc, removed_bytes, c, old->kind, cand, m, a, err);
    } else {
      __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
    }
    if (st == DK_OK && nc) list_push(out, nc);
  }
  dk__free(a, (void *)cand);
  if (st == DK_OK) return push_block(out, add, n_add, added_bytes, a, err);
  dk__free(a, add);
  dk_snapshot__clist_dispose(out, a);
  return st;
}

const void *dk_snapshot__clist_at(const dk__clist *l, size_t i) {
  /* chunks are full but for a few cut by refreshes: start with the chunk a full list has i in */
  size_t g = i / DK_SNAPSHOT__CHUNK;
  if (g >= l->nc) g = l->nc - 1;
  if (l->start[g] > i) {
    if (g && l->start[g - 1] <= i) {
      g--;
    } else {
      size_t lo = 0, hi = g; /* the last chunk starting at or before i */
      while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (l->start[mid] <= i) lo = mid;
        else hi = mid - 1;
      }
      g = lo;
    }
  } else if (l->start[g + 1] <= i) {
    if (l->start[g + 2] > i) {
      g++;
    } else {
      size_t lo = g + 2, hi = l->nc - 1;
      while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (l->start[mid] <= i) lo = mid;
        else hi = mid - 1;
      }
      g = lo;
    }
  }
  return elem(l->c[g], l->kind, i - l->start[g]);
}

dk_status dk_snapshot__lists_refresh(dk__clist *files, dk__clist *tombs, int64_t *bytes,
                                     const dk__clist *old_files, const dk__clist *old_tombs,
                                     int64_t old_bytes, dk__state *st, const dk_allocator *a,
                                     dk_error *err) {
  *bytes = old_bytes;
  /* the keys the commits touched: each one's last action is a live add or a tombstone */
  size_t nk = st->n_files + st->n_tombs;
  dk__key *keys = nk ? dk__malloc(a, nk * sizeof *keys) : NULL;
  if (nk && !keys) return dk__error_set(err, DK_NOMEM, "out of memory (file list)");
  for (size_t i = 0; i < st->n_files; i++) elem_key(&keys[i], DK__CL_FILES, &st->files[i]);
  for (size_t i = 0; i < st->n_tombs; i++)
    elem_key(&keys[st->n_files + i], DK__CL_TOMBS, &st->tombs[i]);
  void *add = st->files, *rm = st->tombs;
  size_t n_add = st->n_files, n_rm = st->n_tombs;
  st->files = NULL; /* the lists own them from here */
  st->tombs = NULL;
  st->n_files = st->n_live = st->n_tombs = st->cap_files = st->cap_tombs = 0;
  int64_t removed, added, ignored[2];
  dk_status s = clist_update(files, &removed, &added, old_files, keys, nk, add, n_add, a, err);
  if (s == DK_OK) {
    *bytes += added - removed;
    s = clist_update(tombs, &ignored[0], &ignored[1], old_tombs, keys, nk, rm, n_rm, a, err);
  } else {
    dk__free(a, rm);
  }
  dk__free(a, keys);
  return s;
}
