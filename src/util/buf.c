/*
** buf.c — dk_buf (growable byte buffer), dk_arena (bump allocator), dk_hmap (hash map).
** (Files are read through dk_storage only: src/storage/.)
**
** None of these allocate per appended byte or per inserted key: buffers double, arenas
** carve from chunks, the hash map copies keys into its own arena.
*/
#include <stdio.h>

#include "util/util.h"

/* ---- dk_buf ---------------------------------------------------------------------------- */

void dk__buf_init(dk_buf *b, const dk_allocator *a) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->alloc = a;
}

void dk__buf_dispose(dk_buf *b) {
  dk__free(b->alloc, b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

dk_status dk__buf_reserve(dk_buf *b, size_t extra, dk_error *err) {
  if (b->len + extra <= b->cap && b->data) return DK_OK;
  if (extra > SIZE_MAX / 2 - b->len) return dk__error_set(err, DK_NOMEM, "buffer too large");
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra) cap *= 2;
  char *p = dk__realloc(b->alloc, b->data, cap + 1);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory growing a buffer to %zu bytes", cap);
  b->data = p;
  b->cap = cap;
  b->data[b->len] = 0;
  return DK_OK;
}

dk_status dk__buf_append(dk_buf *b, const void *p, size_t n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_reserve(b, n, err));
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
  return DK_OK;
}

dk_status dk__buf_puts(dk_buf *b, const char *s, dk_error *err) {
  return dk__buf_append(b, s, strlen(s), err);
}

dk_status dk__buf_putc(dk_buf *b, char c, dk_error *err) {
  if (DK_UNLIKELY(b->len + 1 > b->cap || !b->data)) DK_RETURN_NOT_OK(dk__buf_reserve(b, 1, err));
  b->data[b->len++] = c;
  b->data[b->len] = 0;
  return DK_OK;
}

dk_status dk__buf_printf(dk_buf *b, dk_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return dk__error_set(err, DK_INTERNAL, "formatting failed");
  if ((size_t)n < sizeof small) return dk__buf_append(b, small, (size_t)n, err);
  DK_RETURN_NOT_OK(dk__buf_reserve(b, (size_t)n, err));
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return DK_OK;
}

char *dk__buf_detach(dk_buf *b) {
  char *p = b->data;
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

/* ---- dk_arena -------------------------------------------------------------------------- */

struct dk_arena_chunk {
  dk_arena_chunk *next; /* older chunk */
  size_t size;          /* usable bytes */
  size_t used;          /* bytes handed out */
  _Alignas(16) unsigned char data[];
};

void dk__arena_init(dk_arena *ar, const dk_allocator *a, size_t chunk_size) {
  ar->head = NULL;
  ar->chunk_size = chunk_size ? chunk_size : 64 * 1024;
  ar->alloc = a;
  ar->total = 0;
}

void dk__arena_dispose(dk_arena *ar) {
  dk_arena_chunk *c = ar->head;
  while (c) {
    dk_arena_chunk *next = c->next;
    dk__free(ar->alloc, c);
    c = next;
  }
  ar->head = NULL;
  ar->total = 0;
}

void dk__arena_reset(dk_arena *ar) {
  dk_arena_chunk *c = ar->head;
  if (!c) return;
  dk_arena_chunk *rest = c->next;
  while (rest) {
    dk_arena_chunk *next = rest->next;
    ar->total -= rest->size;
    dk__free(ar->alloc, rest);
    rest = next;
  }
  c->next = NULL;
  c->used = 0;
}

void *dk__arena_alloc(dk_arena *ar, size_t n, dk_error *err) {
  n = (n + 7) & ~(size_t)7;
  dk_arena_chunk *c = ar->head;
  if (DK_LIKELY(c && c->size - c->used >= n)) {
    void *p = c->data + c->used;
    c->used += n;
    return p;
  }
  size_t size = n > ar->chunk_size / 4 ? n : ar->chunk_size;
  if (size > SIZE_MAX - sizeof(dk_arena_chunk)) {
    dk__error_set(err, DK_NOMEM, "arena allocation of %zu bytes too large", n);
    return NULL;
  }
  dk_arena_chunk *nc = dk__malloc(ar->alloc, sizeof(dk_arena_chunk) + size);
  if (!nc) {
    dk__error_set(err, DK_NOMEM, "out of memory (arena chunk of %zu bytes)", size);
    return NULL;
  }
  nc->size = size;
  nc->used = n;
  ar->total += size;
  if (c && size != ar->chunk_size) {
    /* a big one-off block goes behind the current chunk so the current one keeps filling */
    nc->next = c->next;
    c->next = nc;
  } else {
    nc->next = c;
    ar->head = nc;
  }
  return nc->data;
}

char *dk__arena_strndup(dk_arena *ar, const char *s, size_t n, dk_error *err) {
  char *p = dk__arena_alloc(ar, n + 1, err);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

/* ---- hashing --------------------------------------------------------------------------- */

/* A small, fast 64-bit hash (wyhash-style multiply-mix written from the idea, not the code). */
static inline uint64_t hash_mix(uint64_t a, uint64_t b) {
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t load64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

uint64_t dk__hash_bytes(const void *data, size_t n) {
  const unsigned char *p = data;
  const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull,
                 k2 = 0x8ebc6af09c88c6e3ull;
  uint64_t h = k0 ^ (uint64_t)n;
  while (n >= 16) {
    h = hash_mix(load64(p) ^ k1, load64(p + 8) ^ h);
    p += 16;
    n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = load64(p);
    b = load64(p + n - 8);
  } else if (n > 0) {
    unsigned char tmp[8] = {0};
    memcpy(tmp, p, n);
    a = load64(tmp);
  }
  h = hash_mix(a ^ k1, b ^ h ^ k2);
  h = hash_mix(h ^ k0, k2);
  return h ? h : 1; /* 0 marks an empty slot */
}

/* ---- dk_hmap --------------------------------------------------------------------------- */

void dk__hmap_init(dk_hmap *m, const dk_allocator *a) {
  m->slots = NULL;
  m->cap = m->count = 0;
  m->alloc = a;
  dk__arena_init(&m->keys, a, 256 * 1024);
}

void dk__hmap_dispose(dk_hmap *m) {
  dk__free(m->alloc, m->slots);
  m->slots = NULL;
  m->cap = m->count = 0;
  dk__arena_dispose(&m->keys);
}

static dk_status hmap_grow(dk_hmap *m, dk_error *err) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  dk_hmap_slot *ns = dk__calloc(m->alloc, ncap, sizeof *ns);
  if (!ns) return dk__error_set(err, DK_NOMEM, "out of memory growing a hash map to %zu", ncap);
  for (size_t i = 0; i < m->cap; i++) {
    dk_hmap_slot *s = &m->slots[i];
    if (!s->hash) continue;
    size_t j = s->hash & (ncap - 1);
    while (ns[j].hash) j = (j + 1) & (ncap - 1);
    ns[j] = *s;
  }
  dk__free(m->alloc, m->slots);
  m->slots = ns;
  m->cap = ncap;
  return DK_OK;
}

uint64_t *dk__hmap_get(const dk_hmap *m, const char *key, size_t klen) {
  if (!m->cap) return NULL;
  uint64_t h = dk__hash_bytes(key, klen);
  size_t j = h & (m->cap - 1);
  for (;;) {
    dk_hmap_slot *s = &m->slots[j];
    if (!s->hash) return NULL;
    if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0) return &s->value;
    j = (j + 1) & (m->cap - 1);
  }
}

dk_status dk__hmap_upsert(dk_hmap *m, const char *key, size_t klen, uint64_t **value_out,
                         bool *inserted, dk_error *err) {
  if ((m->count + 1) * 4 > m->cap * 3) DK_RETURN_NOT_OK(hmap_grow(m, err));
  uint64_t h = dk__hash_bytes(key, klen);
  size_t j = h & (m->cap - 1);
  for (;;) {
    dk_hmap_slot *s = &m->slots[j];
    if (!s->hash) {
      char *k = dk__arena_strndup(&m->keys, key, klen, err);
      if (!k) return DK_NOMEM;
      s->hash = h;
      s->key = k;
      s->klen = klen;
      s->value = 0;
      m->count++;
      *value_out = &s->value;
      if (inserted) *inserted = true;
      return DK_OK;
    }
    if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0) {
      *value_out = &s->value;
      if (inserted) *inserted = false;
      return DK_OK;
    }
    j = (j + 1) & (m->cap - 1);
  }
}

bool dk__hmap_remove(dk_hmap *m, const char *key, size_t klen) {
  if (!m->cap) return false;
  uint64_t h = dk__hash_bytes(key, klen);
  size_t mask = m->cap - 1, j = h & mask;
  for (;;) {
    dk_hmap_slot *s = &m->slots[j];
    if (!s->hash) return false;
    if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0) break;
    j = (j + 1) & mask;
  }
  /* backward-shift deletion keeps probe chains intact without tombstones */
  size_t i = j;
  for (;;) {
    m->slots[i].hash = 0;
    size_t k = i;
    for (;;) {
      k = (k + 1) & mask;
      if (!m->slots[k].hash) {
        m->count--;
        return true;
      }
      size_t home = m->slots[k].hash & mask;
      bool movable = (i <= k) ? (home <= i || home > k) : (home <= i && home > k);
      if (movable) break;
    }
    m->slots[i] = m->slots[k];
    i = k;
  }
}
