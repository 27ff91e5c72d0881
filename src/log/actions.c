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
** partition keys and values are interned; stats text goes to the state's stats blocks
** (src/log/stats.c); the (path, DV id) index holds 8 bytes per file and exists only while
** replaying.
**
** Checkpoint rows are reconciled already ("Checkpoints"), so they are appended without being
** indexed (only their key hash is kept); the indexes hold the entries of the newer commits
** only, and at finish a checkpoint row whose key any commit touched is dropped — its last
** action is then in the commit indexes (an add in file_index, a remove in tomb_index) and
** wins. A bit filter over the commit keys answers the (common) untouched case from cache.
*/
#include <stdio.h>
#include <stdlib.h>

#include "log/paths.h"
#include "log/replay.h"

static dk_status state_init(dk__state *st, const dk_allocator *alloc, const char *root,
                           size_t arena_chunk, dk_error *err) {
  memset(st, 0, sizeof *st);
  st->alloc = alloc;
  dk__arena_init(&st->arena, alloc, arena_chunk);
  dk__hmap_init(&st->intern, alloc);
  dk__hmap_init(&st->pv_intern, alloc);
  dk__hmap_init(&st->pv_text, alloc);
  dk__buf_init(&st->pv_key, alloc);
  dk__hmap_init(&st->txn_index, alloc);
  dk__hmap_init(&st->domain_index, alloc);
  dk__buf_init(&st->scratch, alloc);
  dk__buf_init(&st->sidecars, alloc);
  dk__buf_init(&st->pending, alloc);
  dk__arena_init(&st->act_ar, alloc, 4096);
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

dk_status dk_log__state_init(dk__state *st, const dk_allocator *alloc, const char *root,
                             dk_error *err) {
  return state_init(st, alloc, root, 1 << 20, err);
}

dk_status dk_log__state_init_small(dk__state *st, const dk_allocator *alloc, const char *root,
                                   dk_error *err) {
  return state_init(st, alloc, root, 16 * 1024, err);
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
  dk__free(st->alloc, st->pv_buf);
  dk__free(st->alloc, st->file_index.slots);
  dk__free(st->alloc, st->tomb_index.slots);
  dk__hmap_dispose(&st->txn_index);
  dk__hmap_dispose(&st->domain_index);
  dk__buf_dispose(&st->scratch);
  dk__buf_dispose(&st->sidecars);
  dk__buf_dispose(&st->pending);
  dk_log__stats_dispose(st);
  dk__arena_dispose(&st->act_ar);
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

uint32_t dk_log__key_tag(const char *path, size_t plen, const dk_dv_descriptor *dv) {
  return (uint32_t)TAG(key_hash(path, plen, dv));
}

bool dk_log__dv_same(const dk_dv_descriptor *a, const dk_dv_descriptor *b) {
  return dv_same(a, b);
}

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

dk_status dk_log__apply_add_in(dk__state *st, const dk__add *in, dk_error *err) {
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
      /* the rows it deletes: without it the DV would pass for an empty one (read as
       * deleting nothing), so a missing or negative cardinality is corrupt */
      if (in->dv_card < 0)
        return dk__error_set(err, DK_CORRUPT,
                             "log: add '%s' (version %lld): deletionVector without a valid "
                             "cardinality", path, (long long)st->cur_version);
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
  if (in->stats.ptr) DK_RETURN_NOT_OK(dk_log__stats_add(st, &f, in->stats.ptr, in->stats.len, err));
  return add_insert(st, &f, plen, err);
}

dk_status dk_log__set_stats(dk__state *st, size_t pos, const char *text, size_t len,
                            dk_error *err) {
  if (pos >= st->n_files) return dk__error_set(err, DK_INTERNAL, "log: stats for a missing file");
  return dk_log__stats_add(st, &st->files[pos], text, len, err);
}

/* Inserts a built file entry under its (path, DV id) key; a newer add of the same key wins. */
static dk_status add_insert(dk__state *st, const dk__file *fp, size_t plen, dk_error *err) {
  dk__file f = *fp;
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
  f.ktag = (uint32_t)TAG(k.hash); /* kept: a refreshed snapshot finds the entry by it */
  f.flags |= DK__F_KTAG;
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

dk_status dk_log__apply_remove_in(dk__state *st, const dk__remove *in, int flags,
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
  t.ktag = (uint32_t)TAG(k.hash);
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

/* ---- protocol / metadata / txn / domainMetadata: copied into the state's arena ----------- */

static dk_status copy_strs(dk__state *st, const char *const *src, size_t n,
                           const char *const **out, dk_error *err) {
  *out = src; /* NULL (absent) or the static empty array */
  if (!n) return DK_OK;
  const char **arr = dk__arena_alloc(&st->arena, sizeof *arr * n, err);
  if (!arr) return DK_NOMEM;
  for (size_t i = 0; i < n; i++) {
    arr[i] = arena_str(st, src[i], strlen(src[i]), err);
    if (!arr[i]) return DK_NOMEM;
  }
  *out = arr;
  return DK_OK;
}

static dk_status opt_copy(dk__state *st, const char *s, const char **out, dk_error *err) {
  *out = NULL;
  if (!s) return DK_OK;
  *out = arena_str(st, s, strlen(s), err);
  return *out ? DK_OK : DK_NOMEM;
}

static dk_status set_protocol(dk__state *st, const dk_protocol *in, dk_error *err) {
  dk_protocol p = *in;
  DK_RETURN_NOT_OK(copy_strs(st, in->reader_features, in->n_reader_features,
                             &p.reader_features, err));
  DK_RETURN_NOT_OK(copy_strs(st, in->writer_features, in->n_writer_features,
                             &p.writer_features, err));
  st->protocol = p;
  st->has_protocol = 1;
  return DK_OK;
}

static dk_status set_metadata(dk__state *st, const dk_metadata *in, dk_error *err) {
  dk_metadata m = *in;
  DK_RETURN_NOT_OK(opt_copy(st, in->id, &m.id, err));
  DK_RETURN_NOT_OK(opt_copy(st, in->name, &m.name, err));
  DK_RETURN_NOT_OK(opt_copy(st, in->description, &m.description, err));
  DK_RETURN_NOT_OK(opt_copy(st, in->schema_string, &m.schema_string, err));
  DK_RETURN_NOT_OK(opt_copy(st, in->format_provider, &m.format_provider, err));
  DK_RETURN_NOT_OK(copy_strs(st, in->partition_columns, in->n_partition_columns,
                             &m.partition_columns, err));
  DK_RETURN_NOT_OK(copy_strs(st, in->config_keys, in->n_configuration, &m.config_keys, err));
  DK_RETURN_NOT_OK(copy_strs(st, in->config_values, in->n_configuration, &m.config_values, err));
  st->metadata = m;
  st->has_metadata = 1;
  return DK_OK;
}

static dk_status apply_txn(dk__state *st, const dk__txn_action *a, dk_error *err) {
  uint64_t *slot;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&st->txn_index, a->app_id.ptr, a->app_id.len, &slot, &ins, err));
  if (ins) {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->txns, &st->cap_txns, st->n_txns,
                          sizeof *st->txns, err));
    *slot = st->n_txns++;
    st->txns[*slot].app_id = arena_str(st, a->app_id.ptr, a->app_id.len, err);
    if (!st->txns[*slot].app_id) return DK_NOMEM;
  }
  dk__txn *t = &st->txns[*slot];
  t->version = a->version;
  t->last_updated = a->last_updated;
  return DK_OK;
}

static dk_status apply_domain(dk__state *st, const dk__domain_action *a, dk_error *err) {
  uint64_t *slot;
  bool ins;
  DK_RETURN_NOT_OK(dk__hmap_upsert(&st->domain_index, a->domain.ptr, a->domain.len, &slot, &ins, err));
  if (ins) {
    DK_RETURN_NOT_OK(grow(st->alloc, (void **)&st->domains, &st->cap_domains, st->n_domains,
                          sizeof *st->domains, err));
    *slot = st->n_domains++;
    st->domains[*slot].domain = arena_str(st, a->domain.ptr, a->domain.len, err);
    if (!st->domains[*slot].domain) return DK_NOMEM;
  }
  dk__domain *d = &st->domains[*slot];
  d->removed = a->removed;
  d->config = arena_str(st, a->configuration.ptr ? a->configuration.ptr : "",
                        a->configuration.len, err);
  return d->config ? DK_OK : DK_NOMEM;
}

dk_status dk_log__apply_action(dk__state *st, const dk_json_value *line, int flags,
                               dk_error *err) {
  if (!line || line->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "log: an action line is not a JSON object");
  for (uint32_t i = 0; i < line->len; i++) {
    const dk_json_member *m = &line->u.members[i];
    const dk_json_value *v = &m->value;
    if (v->type == DK_JSON_NULL) continue;
    if (v->type != DK_JSON_OBJECT)
      return dk__error_set(err, DK_CORRUPT, "log: action '%s' is not an object (version %lld)",
                           m->key, (long long)st->cur_version);
    dk_action_kind kind = dk_protocol__action_kind(m->key, m->klen);
    if (kind == DK_ACTION_COMMIT_INFO) { /* two fields: no need to parse it all */
      if (!(flags & DK__FROM_CHECKPOINT)) {
        int64_t x;
        st->last_ict = dk__json_as_i64(dk__json_getn(v, "inCommitTimestamp", 17), &x) ? x : -1;
        st->last_commit_info_ts = dk__json_as_i64(dk__json_getn(v, "timestamp", 9), &x) ? x : -1;
      }
      continue;
    }
    /* cdc, checkpointMetadata and unknown actions do not change the snapshot */
    if (kind == DK_ACTION_UNKNOWN || kind == DK_ACTION_CDC ||
        kind == DK_ACTION_CHECKPOINT_METADATA)
      continue;
    dk__arena_reset(&st->act_ar);
    dk__action a;
    DK_RETURN_NOT_OK(dk_protocol__action_parse(&a, m->key, v, &st->act_ar, err));
    switch (kind) {
      case DK_ACTION_ADD:
        if (a.u.add.n_pv > DK__MAX_PV)
          return dk__error_set(err, DK_CORRUPT, "log: add '%.*s' has too many partition values",
                               (int)a.u.add.path.len, a.u.add.path.ptr ? a.u.add.path.ptr : "");
        DK_RETURN_NOT_OK(dk_log__apply_add_in(st, &a.u.add, err));
        break;
      case DK_ACTION_REMOVE: DK_RETURN_NOT_OK(dk_log__apply_remove_in(st, &a.u.remove, flags, err)); break;
      case DK_ACTION_METADATA: DK_RETURN_NOT_OK(set_metadata(st, &a.u.metadata, err)); break;
      case DK_ACTION_PROTOCOL: DK_RETURN_NOT_OK(set_protocol(st, &a.u.protocol, err)); break;
      case DK_ACTION_TXN: DK_RETURN_NOT_OK(apply_txn(st, &a.u.txn, err)); break;
      case DK_ACTION_DOMAIN_METADATA: DK_RETURN_NOT_OK(apply_domain(st, &a.u.domain, err)); break;
      case DK_ACTION_SIDECAR: /* with its NUL */
        DK_RETURN_NOT_OK(dk__buf_append(&st->sidecars, a.u.sidecar.path.ptr,
                                        a.u.sidecar.path.len, err));
        DK_RETURN_NOT_OK(dk__buf_putc(&st->sidecars, 0, err));
        break;
      default: break;
    }
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

/* A checkpoint is reconciled, so it names each (path, DV) once; a damaged or hostile one
 * listing a file twice (in one part, across parts or in a sidecar named twice) must not
 * have it read twice. A bitmap of the rows' 32-bit key tags (16 bits a row) first finds the
 * rows whose tag (masked to the bitmap) another row shares: almost none in a sound
 * checkpoint, so one pass usually ends the check. Only those candidates are sorted by tag
 * (LSD radix sort, three 11-bit passes: stable, linear), and of rows with an equal key only
 * the last stays live, as a later add of the key would win. */
#define RADIX_BITS 11
#define RADIX_BUCKETS ((size_t)1 << RADIX_BITS)

static dk_status dedupe_base(dk__state *st, dk_error *err) {
  size_t n = st->n_files;
  if (n < 2) return DK_OK;
  unsigned lg = 12;
  while (lg < 27 && ((size_t)1 << lg) < 16 * n) lg++; /* at most 2 x 16 MiB */
  uint32_t mask = (uint32_t)((1u << lg) - 1);
  size_t words = ((size_t)mask >> 6) + 1;
  uint64_t *seen = dk__calloc(st->alloc, 2 * words, sizeof *seen);
  if (!seen) return dk__error_set(err, DK_NOMEM, "log: out of memory checking checkpoint rows");
  uint64_t *twice = seen + words;
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    uint32_t h = st->files[i].ktag & mask;
    uint64_t bit = 1ull << (h & 63);
    if (seen[h >> 6] & bit) {
      twice[h >> 6] |= bit;
      any = true;
    }
    seen[h >> 6] |= bit;
  }
  if (!any) {
    dk__free(st->alloc, seen);
    return DK_OK;
  }
  size_t m = 0; /* candidate rows: every row whose tag is marked twice */
  for (size_t i = 0; i < n; i++) {
    uint32_t h = st->files[i].ktag & mask;
    m += (twice[h >> 6] >> (h & 63)) & 1;
  }
  uint64_t *a = dk__malloc(st->alloc, 2 * m * sizeof *a);
  size_t *cnt = dk__malloc(st->alloc, RADIX_BUCKETS * sizeof *cnt);
  if (!a || !cnt) {
    dk__free(st->alloc, a);
    dk__free(st->alloc, cnt);
    dk__free(st->alloc, seen);
    return dk__error_set(err, DK_NOMEM, "log: out of memory checking checkpoint rows");
  }
  uint64_t *b = a + m;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) { /* candidates in row order */
    uint32_t h = st->files[i].ktag & mask;
    if ((twice[h >> 6] >> (h & 63)) & 1) a[k++] = (uint64_t)st->files[i].ktag << 32 | i;
  }
  dk__free(st->alloc, seen);
  for (int shift = 32; shift < 64; shift += RADIX_BITS) { /* stable: equal tags keep order */
    memset(cnt, 0, RADIX_BUCKETS * sizeof *cnt);
    for (size_t i = 0; i < m; i++) cnt[(a[i] >> shift) & (RADIX_BUCKETS - 1)]++;
    size_t sum = 0;
    for (size_t d = 0; d < RADIX_BUCKETS; d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < m; i++) b[cnt[(a[i] >> shift) & (RADIX_BUCKETS - 1)]++] = a[i];
    uint64_t *t = a;
    a = b;
    b = t;
  }
  for (size_t i = 0; i + 1 < m; i++) {
    if ((a[i] >> 32) != (a[i + 1] >> 32)) continue;
    size_t j = i + 1; /* a[i..j): one tag, positions ascending */
    while (j < m && (a[j] >> 32) == (a[i] >> 32)) j++;
    for (size_t x = i; x + 1 < j; x++) {
      dk__file *f = &st->files[(uint32_t)a[x]];
      for (size_t y = x + 1; y < j; y++) {
        const dk__file *g = &st->files[(uint32_t)a[y]];
        if (!(g->flags & DK__F_LIVE) || strcmp(f->path, g->path) != 0 ||
            !dv_same(dk__file_dv(f), dk__file_dv(g)))
          continue;
        f->flags &= ~(uint32_t)DK__F_LIVE; /* a later row of the same key follows */
        st->n_live--;
        break;
      }
    }
    i = j - 1;
  }
  dk__free(st->alloc, a < b ? a : b);
  dk__free(st->alloc, cnt);
  return DK_OK;
}

dk_status dk_log__state_end_checkpoint(dk__state *st, dk_error *err) {
  if (!st->defer) return DK_OK;
  DK_RETURN_NOT_OK(dedupe_base(st, err));
  st->defer = 0;
  st->n_base_files = st->n_files;
  st->n_base_tombs = st->n_tombs;
  return DK_OK;
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
#define FILTER_MAX_BITS 22
typedef struct key_filter {
  uint64_t *bits;
  unsigned lg; /* 2^lg bits: ~16 a key, at most 2^FILTER_MAX_BITS */
} key_filter;

static inline uint32_t filter_b1(const key_filter *kf, uint32_t tag) {
  return tag & ((1u << kf->lg) - 1);
}
static inline uint32_t filter_b2(const key_filter *kf, uint32_t tag) {
  return (tag * 0x9E3779B1u) >> (32 - kf->lg);
}

static void filter_add_index(key_filter *kf, const dk__index *ix) {
  for (size_t i = 0; i < ix->cap; i++) {
    uint64_t sl = ix->slots[i];
    if (!sl) continue;
    uint32_t tag = (uint32_t)(sl >> 32), a = filter_b1(kf, tag), b = filter_b2(kf, tag);
    kf->bits[a >> 6] |= 1ull << (a & 63);
    kf->bits[b >> 6] |= 1ull << (b & 63);
  }
}

static inline bool filter_maybe(const key_filter *kf, uint64_t hash) {
  uint32_t tag = (uint32_t)TAG(hash), a = filter_b1(kf, tag), b = filter_b2(kf, tag);
  return ((kf->bits[a >> 6] >> (a & 63)) & 1) && ((kf->bits[b >> 6] >> (b & 63)) & 1);
}

/* Drops the checkpoint rows superseded by a commit action on the same key. */
static void reconcile_base(dk__state *st) {
  size_t keys = st->file_index.count + st->tomb_index.count;
  if (!keys) return;
  /* sized to the commits' keys: a refresh by one small commit zeroes a few hundred bytes,
   * not the 512 KiB a whole log's worth of commits needs */
  key_filter kf = {NULL, 10};
  while (kf.lg < FILTER_MAX_BITS && ((size_t)1 << kf.lg) < keys * 16) kf.lg++;
  kf.bits = dk__calloc(st->alloc, ((size_t)1 << kf.lg) / 64, sizeof *kf.bits);
  const key_filter *f_or_null = kf.bits ? &kf : NULL;
  if (f_or_null) {
    filter_add_index(&kf, &st->file_index);
    filter_add_index(&kf, &st->tomb_index);
  }
  for (size_t i = 0; i < st->n_base_files; i++) {
    dk__file *f = &st->files[i];
    if (!(f->flags & DK__F_LIVE)) continue;
    if (f_or_null && (f->flags & DK__F_KTAG) && !filter_maybe(f_or_null, f->ktag)) continue;
    size_t n = strlen(f->path);
    key_ref k = {f->path, n, dk__file_dv(f), key_hash(f->path, n, dk__file_dv(f))};
    if (f_or_null && !filter_maybe(f_or_null, k.hash)) continue;
    if (touched_by_commit(st, &k)) f->flags &= ~(uint32_t)DK__F_LIVE;
  }
  for (size_t i = 0; i < st->n_base_tombs; i++) {
    dk__tomb *t = &st->tombs[i];
    if (!t->live) continue;
    size_t n = strlen(t->path);
    key_ref k = {t->path, n, t->dv, key_hash(t->path, n, t->dv)};
    if (f_or_null && !filter_maybe(f_or_null, k.hash)) continue;
    if (touched_by_commit(st, &k)) t->live = 0;
  }
  dk__free(st->alloc, kf.bits);
}

dk_status dk_log__state_finish(dk__state *st, dk_error *err) {
  DK_RETURN_NOT_OK(dk_log__stats_seal(st, err));
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
  /* the indexes and intern tables are only needed while replaying (a refreshed snapshot
   * keeps its predecessors' states, so what they hold on to adds up) */
  dk__hmap_dispose(&st->intern);
  dk__hmap_dispose(&st->pv_intern);
  dk__hmap_dispose(&st->pv_text);
  dk__hmap_init(&st->intern, st->alloc);
  dk__hmap_init(&st->pv_intern, st->alloc);
  dk__hmap_init(&st->pv_text, st->alloc);
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

