/*
** write/dict.c — the column writer's dictionaries (apache/parquet-format Encodings.md
** "Dictionary Encoding": the PLAIN-encoded dictionary page body and the index of each value),
** one open-addressing hash table per value width:
**
**   4-byte values (INT32, FLOAT, DATE)   8-byte slots {value, index + 1}
**   8-byte values (INT64, DOUBLE, ...)   16-byte slots {value, index + 1}
**   other FIXED_LEN_BYTE_ARRAY widths    24-byte slots {first 8 bytes, hash, index + 1}
**   BYTE_ARRAY                           24-byte slots {first 16 bytes, hash and length,
**                                        index + 1}: strings up to 16 bytes are told apart in
**                                        the slot alone
**
** Fixed-width values are keyed by their bit pattern (NaN payloads and -0.0 stay distinct, so
** the dictionary round-trips exactly) and hashed by one multiplication; the hashes of a block
** of values are computed first (columnar), and slots are prefetched ahead of the probes when
** the table outgrows the caches. Tables stay at most half full, so most lookups touch one
** slot. A string's words are loaded whole and masked where the input buffer has 32 bytes to
** spare (else loaded without reading past its end; both give the same words), and hashed by
** one formula per length class, so short strings cost one multiplication.
**
** Hand-written: a dictionary needs the index of every value in insertion order next to a
** PLAIN image of the entries, which no packaged hash table gives without a second copy.
*/
#include "codec/parquet/write/pqw.h"

#define BLOCK 256          /* values whose hashes are computed before their probes */
#define PREFETCH_AHEAD 8   /* probes ahead that a slot is prefetched */
#define PREFETCH_BYTES ((size_t)256 << 10) /* tables above this size are prefetched */

typedef struct slot4 {
  uint32_t key, idx1;
} slot4;

typedef struct slot8 {
  uint64_t key;
  uint32_t idx1, pad;
} slot8;

typedef struct slotb {
  uint64_t a, b;           /* bytes 0..7 and 8..15, zero-padded (FLBA: a only) */
  uint32_t tag;            /* hash; BYTE_ARRAY: its low byte replaced by min(length, 255) */
  uint32_t idx1;
} slotb;

static size_t slot_size(const pqw_dict *d) {
  return d->kind == PQW_DICT_4 ? sizeof(slot4) : d->kind == PQW_DICT_8 ? sizeof(slot8)
                                                                      : sizeof(slotb);
}

void dk_pqw__dict_init(pqw_dict *d, int ptype, int width, const dk_allocator *alloc) {
  memset(d, 0, sizeof *d);
  d->alloc = alloc;
  d->width = width;
  d->kind = ptype == PQ_BYTE_ARRAY ? PQW_DICT_BYTES : width == 4 ? PQW_DICT_4
          : width == 8 ? PQW_DICT_8 : PQW_DICT_FIXED;
  dk__buf_init(&d->vals, alloc);
  dk__buf_init(&d->starts, alloc);
  dk__buf_init(&d->stamp, alloc);
}

void dk_pqw__dict_dispose(pqw_dict *d) {
  dk__free(d->alloc, d->slots);
  dk__buf_dispose(&d->vals);
  dk__buf_dispose(&d->starts);
  dk__buf_dispose(&d->stamp);
  d->slots = NULL;
  d->cap = 0;
}

void dk_pqw__dict_reset(pqw_dict *d) {
  if (d->slots) memset(d->slots, 0, d->cap * slot_size(d));
  d->n = 0;
  dk__buf_clear(&d->vals);
  dk__buf_clear(&d->starts);
  dk__buf_clear(&d->stamp);
}

/* ---- hashing ----------------------------------------------------------------------------- */

/* Slot of a fixed-width key: the top bits of a Fibonacci multiplication. */
static inline size_t home(uint64_t key, int bits) {
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

static inline uint64_t mix(uint64_t a, uint64_t b) {
  unsigned __int128 r = (unsigned __int128)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint32_t ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* The first min(n, 8) bytes at p as a little-endian word, zero-padded, reading only p[0..n). */
static inline uint64_t prefix8(const uint8_t *p, size_t n) {
  if (n >= 8) return ld64(p);
  if (n >= 4) return (uint64_t)ld32(p) | ((uint64_t)ld32(p + n - 4) << (8 * (n - 4)));
  if (n == 0) return 0;
  return (uint64_t)p[0] | ((uint64_t)p[n / 2] << (8 * (n / 2))) | ((uint64_t)p[n - 1] << (8 * (n - 1)));
}

/* 32-bit hash of p[0..n) (never 0) with pre = prefix8(p, n). */
static inline uint32_t hash_bytes(const uint8_t *p, size_t n, uint64_t pre) {
  const uint64_t k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
  uint64_t h = 0xa0761d6478bd642full ^ (uint64_t)n;
  if (n <= 8) {
    h = mix(pre ^ k1, h ^ k2);
  } else if (n <= 16) {
    h = mix(ld64(p) ^ k1, ld64(p + n - 8) ^ h);
  } else {
    size_t i = 0;
    for (; i + 16 < n; i += 16) h = mix(ld64(p + i) ^ k1, ld64(p + i + 8) ^ h);
    h = mix(ld64(p + n - 16) ^ k2, ld64(p + n - 8) ^ h);
  }
  h = mix(h ^ k1, k2);
  uint32_t r = (uint32_t)(h ^ (h >> 32));
  return r ? r : 1;
}

/* ---- growth ------------------------------------------------------------------------------ */

static dk_status grow(pqw_dict *d, dk_error *err) {
  int bits = d->cap ? d->bits + 1 : 10;
  size_t cap = (size_t)1 << bits, mask = cap - 1;
  void *ns = dk__calloc(d->alloc, cap, slot_size(d));
  if (!ns) return dk__error_set(err, DK_NOMEM, "out of memory (dictionary of %u entries)", d->n);
  if (d->kind == PQW_DICT_4) {
    slot4 *o = d->slots, *s = ns;
    for (size_t i = 0; i < d->cap; i++) {
      if (!o[i].idx1) continue;
      size_t j = home(o[i].key, bits);
      while (s[j].idx1) j = (j + 1) & mask;
      s[j] = o[i];
    }
  } else if (d->kind == PQW_DICT_8) {
    slot8 *o = d->slots, *s = ns;
    for (size_t i = 0; i < d->cap; i++) {
      if (!o[i].idx1) continue;
      size_t j = home(o[i].key, bits);
      while (s[j].idx1) j = (j + 1) & mask;
      s[j] = o[i];
    }
  } else {
    slotb *o = d->slots, *s = ns;
    for (size_t i = 0; i < d->cap; i++) {
      if (!o[i].idx1) continue;
      size_t j = home(o[i].tag, bits);
      while (s[j].idx1) j = (j + 1) & mask;
      s[j] = o[i];
    }
  }
  dk__free(d->alloc, d->slots);
  d->slots = ns;
  d->cap = cap;
  d->bits = bits;
  return DK_OK;
}

/* Room for `more` new entries at most half full. */
static inline dk_status room(pqw_dict *d, int64_t more, dk_error *err) {
  while ((size_t)(d->n + (size_t)more) * 2 > d->cap) DK_RETURN_NOT_OK(grow(d, err));
  return DK_OK;
}

/* ---- fixed width ------------------------------------------------------------------------- */

/* Index of key with home slot j, inserted when new (the table has room). */
#define DEFINE_PROBE(NAME, SLOT, T)                                                            \
  static inline dk_status NAME##_probe(pqw_dict *d, SLOT *s, size_t mask, size_t j, T key,      \
                                       uint32_t *out, dk_error *err) {                         \
    for (;;) {                                                                                 \
      if (DK_LIKELY(s[j].key == key && s[j].idx1)) {                                           \
        *out = s[j].idx1 - 1;                                                                  \
        return DK_OK;                                                                          \
      }                                                                                        \
      if (!s[j].idx1) {                                                                        \
        DK_RETURN_NOT_OK(dk__buf_append(&d->vals, &key, sizeof key, err));                     \
        s[j].key = key;                                                                        \
        s[j].idx1 = ++d->n;                                                                    \
        *out = d->n - 1;                                                                       \
        return DK_OK;                                                                          \
      }                                                                                        \
      j = (j + 1) & mask;                                                                      \
    }                                                                                          \
  }

/* Small tables (in cache) are probed value by value; large ones get the homes of a block
** first and their slots prefetched ahead of the probes. */
#define DEFINE_PUT(NAME, SLOT, T)                                                             \
  DEFINE_PROBE(NAME, SLOT, T)                                                                 \
  static dk_status NAME(pqw_dict *d, const uint8_t *v, int64_t n, uint32_t *out,              \
                        dk_error *err) {                                                      \
    size_t hs[BLOCK];                                                                         \
    for (int64_t b = 0; b < n; b += BLOCK) {                                                  \
      int64_t m = DK_MIN((int64_t)BLOCK, n - b);                                              \
      DK_RETURN_NOT_OK(room(d, m, err));                                                      \
      SLOT *s = d->slots;                                                                     \
      size_t mask = d->cap - 1;                                                               \
      int bits = d->bits;                                                                     \
      const uint8_t *x = v + sizeof(T) * (size_t)b;                                           \
      if (d->cap * sizeof(SLOT) <= PREFETCH_BYTES) {                                          \
        for (int64_t k = 0; k < m; k++) {                                                     \
          T key;                                                                              \
          memcpy(&key, x + sizeof(T) * (size_t)k, sizeof key);                                \
          DK_RETURN_NOT_OK(NAME##_probe(d, s, mask, home(key, bits), key, &out[b + k], err)); \
        }                                                                                     \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t k = 0; k < m; k++) {                                                       \
        T key;                                                                                \
        memcpy(&key, x + sizeof(T) * (size_t)k, sizeof key);                                  \
        hs[k] = home(key, bits);                                                              \
      }                                                                                       \
      for (int64_t k = 0; k < m; k++) {                                                       \
        if (k + PREFETCH_AHEAD < m) __builtin_prefetch(&s[hs[k + PREFETCH_AHEAD]]);           \
        T key;                                                                                \
        memcpy(&key, x + sizeof(T) * (size_t)k, sizeof key);                                  \
        DK_RETURN_NOT_OK(NAME##_probe(d, s, mask, hs[k], key, &out[b + k], err));             \
      }                                                                                       \
    }                                                                                         \
    return DK_OK;                                                                             \
  }

DEFINE_PUT(put4, slot4, uint32_t)
DEFINE_PUT(put8, slot8, uint64_t)

/* Other widths (FIXED_LEN_BYTE_ARRAY): hashed bytes, compared in full. */
static dk_status put_fixed(pqw_dict *d, const uint8_t *v, int64_t n, uint32_t *out,
                           dk_error *err) {
  size_t w = (size_t)d->width;
  for (int64_t k = 0; k < n; k++) {
    DK_RETURN_NOT_OK(room(d, 1, err));
    slotb *s = d->slots;
    size_t mask = d->cap - 1;
    const uint8_t *p = v + w * (size_t)k;
    uint64_t pre = prefix8(p, w);
    uint32_t h = hash_bytes(p, w, pre);
    size_t j = home(h, d->bits);
    for (;;) {
      if (!s[j].idx1) {
        DK_RETURN_NOT_OK(dk__buf_append(&d->vals, p, w, err));
        s[j] = (slotb){pre, 0, h, ++d->n};
        out[k] = d->n - 1;
        break;
      }
      if (s[j].tag == h && s[j].a == pre &&
          !memcmp(d->vals.data + (size_t)(s[j].idx1 - 1) * w, p, w)) {
        out[k] = s[j].idx1 - 1;
        break;
      }
      j = (j + 1) & mask;
    }
  }
  return DK_OK;
}

dk_status dk_pqw__dict_put_fixed(pqw_dict *d, const uint8_t *v, int64_t n, uint32_t *out,
                                 dk_error *err) {
  switch (d->kind) {
    case PQW_DICT_4: return put4(d, v, n, out, err);
    case PQW_DICT_8: return put8(d, v, n, out, err);
    default: return put_fixed(d, v, n, out, err);
  }
}

/* ---- byte arrays ------------------------------------------------------------------------- */

/* Masks of a word's first 0..8 bytes. */
static const uint64_t lomask[9] = {0, 0xff, 0xffff, 0xffffff, 0xffffffffull, 0xffffffffffull,
                                   0xffffffffffffull, 0xffffffffffffffull, ~0ull};

static inline uint64_t masked(const uint8_t *p, uint32_t have) {
  return ld64(p) & lomask[have < 8 ? have : 8];
}

/* A string's slot words (bytes 0..7, 8..15) and tag: a hash, its low byte the length
** (capped at 255). One formula per length class (<= 8, <= 32, longer), each fed with the
** string's words zero-padded; `wide`: 32 bytes may be read at p. */
static inline void str_key(const uint8_t *p, uint32_t n, int wide, uint64_t *a, uint64_t *b,
                           uint32_t *tag) {
  const uint64_t k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull,
                 k3 = 0xa0761d6478bd642full, k4 = 0x589965cc75374cc3ull;
  uint64_t h;
  if (n <= 8) {
    uint64_t w0 = wide ? masked(p, n) : prefix8(p, n);
    *a = w0, *b = 0;
    h = (w0 ^ k1) * (k2 ^ n);
  } else if (n <= 32) {
    uint64_t w[4];
    if (DK_LIKELY(wide)) {
      w[0] = ld64(p);
      w[1] = masked(p + 8, n - 8);
      w[2] = masked(p + 16, n > 16 ? n - 16 : 0);
      w[3] = masked(p + 24, n > 24 ? n - 24 : 0);
    } else {
      for (uint32_t i = 0; i < 4; i++) w[i] = n > 8 * i ? prefix8(p + 8 * i, n - 8 * i) : 0;
    }
    *a = w[0], *b = w[1];
    h = mix(w[0] ^ k1, w[1] ^ k2 ^ n) ^ mix(w[2] ^ k3, w[3] ^ k4);
  } else {
    *a = ld64(p), *b = ld64(p + 8);
    h = k3 ^ n;
    for (size_t i = 0; i + 16 < n; i += 16) h = mix(ld64(p + i) ^ k1, ld64(p + i + 8) ^ h);
    h = mix(ld64(p + n - 16) ^ k2, ld64(p + n - 8) ^ h);
    h = mix(h ^ k4, k1);
  }
  *tag = ((uint32_t)(h ^ (h >> 32)) & ~0xffu) | (n < 255 ? n : 255);
}

/* Whether dictionary entry e (n bytes, its first 16 known equal) equals p[0..n). */
static inline int same_rest(const uint8_t *e, const uint8_t *p, uint32_t n) {
  if (n <= 16) return 1;
  if (n <= 24) return ld64(e + n - 8) == ld64(p + n - 8);
  if (n <= 32) return ld64(e + 16) == ld64(p + 16) && ld64(e + n - 8) == ld64(p + n - 8);
  return !memcmp(e + 16, p + 16, n - 16);
}

/* Index of string p[0..len) with slot words a, b and tag, inserted when new (the table has
** room). */
static inline dk_status bytes_probe(pqw_dict *d, slotb *s, size_t mask, size_t j,
                                    const uint8_t *p, uint32_t len, uint64_t a, uint64_t b,
                                    uint32_t tag, uint32_t *out, dk_error *err) {
  for (;;) {
    if (s[j].tag == tag && s[j].a == a && s[j].b == b && s[j].idx1) {
      if (len <= 16) {
        *out = s[j].idx1 - 1;
        return DK_OK;
      }
      uint32_t st, elen;
      memcpy(&st, d->starts.data + 4 * (size_t)(s[j].idx1 - 1), 4);
      memcpy(&elen, d->vals.data + st - 4, 4);
      if (elen == len && same_rest((const uint8_t *)d->vals.data + st, p, len)) {
        *out = s[j].idx1 - 1;
        return DK_OK;
      }
    } else if (!s[j].idx1) {
      if (d->vals.len + 4 + len > UINT32_MAX)
        return dk__error_set(err, DK_UNSUPPORTED, "dictionary larger than 4 GiB");
      DK_RETURN_NOT_OK(dk__buf_reserve(&d->vals, 4 + (size_t)len, err));
      DK_RETURN_NOT_OK(dk__buf_reserve(&d->starts, 4, err));
      DK_RETURN_NOT_OK(dk__buf_reserve(&d->stamp, 4, err));
      char *dst = d->vals.data + d->vals.len;
      memcpy(dst, &len, 4);
      if (len) memcpy(dst + 4, p, len);
      uint32_t st = (uint32_t)(d->vals.len + 4), zero = 0;
      d->vals.len += 4 + (size_t)len;
      memcpy(d->starts.data + d->starts.len, &st, 4);
      d->starts.len += 4;
      memcpy(d->stamp.data + d->stamp.len, &zero, 4);
      d->stamp.len += 4;
      s[j] = (slotb){a, b, tag, ++d->n};
      *out = d->n - 1;
      return DK_OK;
    }
    j = (j + 1) & mask;
  }
}

dk_status dk_pqw__dict_put_bytes(pqw_dict *d, const pqw_sv *v, int64_t n, const uint8_t *end,
                                 uint32_t *out, dk_error *err) {
  uint32_t tags[BLOCK];
  uint64_t wa[BLOCK], wb[BLOCK];
  for (int64_t b = 0; b < n; b += BLOCK) {
    int64_t m = DK_MIN((int64_t)BLOCK, n - b);
    DK_RETURN_NOT_OK(room(d, m, err));
    const pqw_sv *x = v + b;
    slotb *s = d->slots;
    size_t mask = d->cap - 1;
    int bits = d->bits, pf = d->cap * sizeof(slotb) > PREFETCH_BYTES;
    for (int64_t k = 0; k < m; k++)
      str_key(x[k].p, x[k].n, end && end - x[k].p >= 32, &wa[k], &wb[k], &tags[k]);
    for (int64_t k = 0; k < m; k++) {
      if (pf && k + PREFETCH_AHEAD < m) __builtin_prefetch(&s[home(tags[k + PREFETCH_AHEAD], bits)]);
      DK_RETURN_NOT_OK(bytes_probe(d, s, mask, home(tags[k], bits), x[k].p, x[k].n, wa[k], wb[k],
                                   tags[k], &out[b + k], err));
    }
  }
  return DK_OK;
}

/* ---- PLAIN values of entries ------------------------------------------------------------- */

dk_status dk_pqw__dict_plain(const pqw_dict *d, const uint32_t *idx, int64_t n, dk_buf *out,
                             dk_error *err) {
  if (d->kind != PQW_DICT_BYTES) {
    size_t w = (size_t)d->width;
    DK_RETURN_NOT_OK(dk__buf_reserve(out, w * (size_t)n, err));
    uint8_t *dst = (uint8_t *)out->data + out->len;
    const uint8_t *src = (const uint8_t *)d->vals.data;
    if (w == 4)
      for (int64_t k = 0; k < n; k++) memcpy(dst + 4 * k, src + 4 * (size_t)idx[k], 4);
    else if (w == 8)
      for (int64_t k = 0; k < n; k++) memcpy(dst + 8 * k, src + 8 * (size_t)idx[k], 8);
    else
      for (int64_t k = 0; k < n; k++) memcpy(dst + w * (size_t)k, src + w * (size_t)idx[k], w);
    out->len += w * (size_t)n;
    return DK_OK;
  }
  const uint32_t *starts = (const uint32_t *)(const void *)d->starts.data;
  for (int64_t k = 0; k < n; k++) {
    uint32_t st = starts[idx[k]], len;
    memcpy(&len, d->vals.data + st - 4, 4);
    DK_RETURN_NOT_OK(dk__buf_append(out, d->vals.data + st - 4, 4 + (size_t)len, err));
  }
  return DK_OK;
}
