/*
** bitmap.c — decoding of a serialized RoaringBitmapArray and the row queries on it.
**
** Follows Delta PROTOCOL.md § "Deletion Vector Format": a little-endian magic number
** (1681511377), then a 64-bit bitmap in the Roaring "portable" format of the
** RoaringFormatSpec (§ "Extension for 64-bit implementations"): a uint64 bucket count, then
** per bucket a uint32 key (the high 32 bits of its rows; Delta requires the top bit clear)
** and a standard 32-bit portable Roaring bitmap (cookie, container headers, optional offset
** header, then array, bitset or run containers). All integers are little endian.
** Like Delta's own readers we also accept the older "native" framing (magic 1681511376,
** int32 bitmap count, per bitmap an int32 size), in both byte orders (see dv_parse_native).
**
** How it works: our own decoder instead of CRoaring 0.2.66, because (a) corrupt input must
** be rejected, and that library's "_safe" deserializer only checks lengths (it trusts
** header cardinalities, array order and run bounds, which later operations rely on);
** (b) all memory must come from the caller's dk_allocator; (c) the scan hot path wants
** direct access to containers. One parser runs twice over the bytes: a counting pass that
** validates everything and sizes three arrays (containers, bitset words, 16-bit values),
** and a filling pass into exactly-sized allocations. Containers are kept with a 48-bit key
** (row >> 16), so a query binary-searches the container and then works within 64K rows.
** The tests compare this decoder with CRoaring on every real DV (an independent oracle).
** Error messages say where and what did not match, never a value read from the bytes.
*/
#include "dv/dv.h"

enum { DV_ARRAY = 1, DV_BITSET = 2, DV_RUN = 3 };

#define DV_SERIAL_COOKIE_NO_RUN 12346u
#define DV_SERIAL_COOKIE 12347u
#define DV_NO_OFFSET_THRESHOLD 4u
#define DV_ARRAY_MAX 4096u
#define DV_BITSET_WORDS 1024u

typedef struct dv_container {
  uint64_t key;  /* row >> 16 of every row in the container */
  uint32_t card; /* rows in the container, 1..65536 */
  uint32_t n;    /* ARRAY: values; RUN: runs (pairs in vals); BITSET: 1024 words */
  size_t off;    /* BITSET: first word in dv->words; ARRAY/RUN: first value in dv->vals */
  uint8_t type;  /* DV_ARRAY, DV_BITSET or DV_RUN */
} dv_container;

struct dk_dv {
  const dk_allocator *alloc; /* allocator of this object and its arrays */
  uint64_t cardinality;      /* total deleted rows */
  size_t ncont;              /* number of containers */
  dv_container *conts;       /* containers in ascending key order */
  uint64_t *words;           /* bitset containers' words, 1024 each */
  uint16_t *vals;            /* array values, and run (start, length - 1) pairs */
};

/* ---- byte reading ----------------------------------------------------------------------- */

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

typedef struct dv_parser {
  const uint8_t *p; /* bytes of the serialized RoaringBitmapArray */
  size_t len;       /* their length */
  size_t pos;       /* next byte to read */
  dk_error *err;    /* where messages go */
  size_t ncont;     /* containers seen */
  size_t nwords;    /* bitset words seen */
  size_t nvals;     /* 16-bit values seen */
  uint64_t card;    /* rows seen */
  dk_dv *dv;        /* NULL in the counting pass; the arrays to fill otherwise */
} dv_parser;

/* DK_CORRUPT unless n more bytes are available. */
static dk_status dv_need(dv_parser *ps, size_t n, const char *what) {
  DK_RETURN_IF(n > ps->len - ps->pos, DK_CORRUPT, ps->err,
               "deletion vector truncated at byte %zu: %s needs %zu bytes, %zu left", ps->pos,
               what, n, ps->len - ps->pos);
  return DK_OK;
}

static dk_status dv_parse_container(dv_parser *ps, uint64_t key, uint32_t card, int is_run,
                                    size_t at) {
  dk_error *err = ps->err;
  dv_container c = {key, card, 0, 0, 0};
  if (is_run) {
    DK_RETURN_NOT_OK(dv_need(ps, 2, "run count"));
    uint32_t nruns = rd16(ps->p + ps->pos);
    ps->pos += 2;
    DK_RETURN_NOT_OK(dv_need(ps, (size_t)nruns * 4, "runs"));
    const uint8_t *r = ps->p + ps->pos;
    uint64_t sum = 0;
    int64_t prev_end = -1; /* last row of the previous run */
    for (uint32_t i = 0; i < nruns; i++) {
      uint32_t start = rd16(r + 4 * i), lenm1 = rd16(r + 4 * i + 2);
      DK_RETURN_IF(start + lenm1 > 0xFFFF, DK_CORRUPT, err,
                   "deletion vector byte %zu: run %u leaves 16 bits", ps->pos + 4 * i, i);
      DK_RETURN_IF((int64_t)start <= prev_end, DK_CORRUPT, err,
                   "deletion vector byte %zu: run %u does not start after the previous run",
                   ps->pos + 4 * i, i);
      prev_end = (int64_t)start + lenm1;
      sum += lenm1 + 1;
    }
    DK_RETURN_IF(sum != card, DK_CORRUPT, err,
                 "deletion vector byte %zu: the rows of a run container do not match the "
                 "cardinality of its header",
                 at);
    c.type = DV_RUN;
    c.n = nruns;
    c.off = ps->nvals;
    if (ps->dv) {
      uint16_t *dst = ps->dv->vals + ps->nvals;
      for (size_t i = 0; i < (size_t)nruns * 2; i++) dst[i] = rd16(r + 2 * i);
    }
    ps->nvals += (size_t)nruns * 2;
    ps->pos += (size_t)nruns * 4;
  } else if (card <= DV_ARRAY_MAX) {
    DK_RETURN_NOT_OK(dv_need(ps, (size_t)card * 2, "array container"));
    const uint8_t *a = ps->p + ps->pos;
    int32_t prev = -1;
    for (uint32_t i = 0; i < card; i++) {
      int32_t v = rd16(a + 2 * i);
      DK_RETURN_IF(v <= prev, DK_CORRUPT, err,
                   "deletion vector byte %zu: array values not strictly ascending",
                   ps->pos + 2 * i);
      prev = v;
    }
    c.type = DV_ARRAY;
    c.n = card;
    c.off = ps->nvals;
    if (ps->dv) {
      uint16_t *dst = ps->dv->vals + ps->nvals;
      for (uint32_t i = 0; i < card; i++) dst[i] = rd16(a + 2 * i);
    }
    ps->nvals += card;
    ps->pos += (size_t)card * 2;
  } else {
    DK_RETURN_NOT_OK(dv_need(ps, DV_BITSET_WORDS * 8, "bitset container"));
    const uint8_t *b = ps->p + ps->pos;
    uint64_t pop = 0;
    for (uint32_t i = 0; i < DV_BITSET_WORDS; i++) {
      uint64_t w = rd64(b + 8 * i);
      pop += (uint64_t)__builtin_popcountll(w);
      if (ps->dv) ps->dv->words[ps->nwords + i] = w;
    }
    DK_RETURN_IF(pop != card, DK_CORRUPT, err,
                 "deletion vector byte %zu: the rows of a bitset container do not match the "
                 "cardinality of its header",
                 at);
    c.type = DV_BITSET;
    c.n = DV_BITSET_WORDS;
    c.off = ps->nwords;
    ps->nwords += DV_BITSET_WORDS;
    ps->pos += DV_BITSET_WORDS * 8;
  }
  if (ps->dv) ps->dv->conts[ps->ncont] = c;
  ps->ncont++;
  ps->card += card;
  return DK_OK;
}

/* One 32-bit portable Roaring bitmap whose rows share the high 32 bits `high`. */
static dk_status dv_parse_bitmap32(dv_parser *ps, uint32_t high) {
  dk_error *err = ps->err;
  size_t start = ps->pos;
  DK_RETURN_NOT_OK(dv_need(ps, 4, "roaring cookie"));
  uint32_t cookie = rd32(ps->p + ps->pos);
  ps->pos += 4;
  uint32_t n;
  const uint8_t *runflags = NULL;
  if ((cookie & 0xFFFF) == DV_SERIAL_COOKIE) {
    n = (cookie >> 16) + 1;
    DK_RETURN_NOT_OK(dv_need(ps, (n + 7) / 8, "run flags"));
    runflags = ps->p + ps->pos;
    ps->pos += (n + 7) / 8;
  } else if (cookie == DV_SERIAL_COOKIE_NO_RUN) {
    DK_RETURN_NOT_OK(dv_need(ps, 4, "container count"));
    n = rd32(ps->p + ps->pos);
    ps->pos += 4;
    DK_RETURN_IF(n > 65536, DK_CORRUPT, err,
                 "deletion vector byte %zu: more than 65536 containers in one 32-bit bitmap",
                 ps->pos - 4);
  } else {
    return dk__error_set(err, DK_CORRUPT, "deletion vector byte %zu: unknown roaring cookie",
                         start);
  }
  DK_RETURN_NOT_OK(dv_need(ps, (size_t)n * 4, "container headers"));
  const uint8_t *hdr = ps->p + ps->pos;
  ps->pos += (size_t)n * 4;
  const uint8_t *offsets = NULL;
  if (!runflags || n >= DV_NO_OFFSET_THRESHOLD) {
    DK_RETURN_NOT_OK(dv_need(ps, (size_t)n * 4, "offset header"));
    offsets = ps->p + ps->pos;
    ps->pos += (size_t)n * 4;
  }
  int32_t prev_key = -1;
  for (uint32_t i = 0; i < n; i++) {
    int32_t key16 = rd16(hdr + 4 * i);
    uint32_t card = (uint32_t)rd16(hdr + 4 * i + 2) + 1;
    DK_RETURN_IF(key16 <= prev_key, DK_CORRUPT, err,
                 "deletion vector byte %zu: container keys not strictly ascending",
                 (size_t)(hdr - ps->p) + 4 * i);
    prev_key = key16;
    if (offsets) {
      uint32_t off = rd32(offsets + 4 * i);
      DK_RETURN_IF(off != ps->pos - start, DK_CORRUPT, err,
                   "deletion vector byte %zu: the offset header does not match where "
                   "container %u starts",
                   (size_t)(offsets - ps->p) + 4 * i, i);
    }
    int is_run = runflags && (runflags[i / 8] >> (i % 8) & 1);
    DK_RETURN_NOT_OK(dv_parse_container(ps, (uint64_t)high << 16 | (uint32_t)key16, card,
                                        is_run, (size_t)(hdr - ps->p) + 4 * i));
  }
  return DK_OK;
}

static inline uint32_t rd32be(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The "native" RoaringBitmapArray format (magic 1681511376) that Delta readers also accept:
 * an int32 bitmap count, then per bitmap i (whose rows have high 32 bits i) an int32 byte
 * size and a 32-bit portable bitmap. Delta-Spark writes it little endian; the PROTOCOL.md
 * inline example (§ Deletion Vector Descriptor Schema, Example 3) has big-endian framing. */
static dk_status dv_parse_native(dv_parser *ps, int big_endian) {
  dk_error *err = ps->err;
  DK_RETURN_NOT_OK(dv_need(ps, 4, "bitmap count"));
  const uint8_t *q = ps->p + ps->pos;
  uint32_t count = big_endian ? rd32be(q) : rd32(q);
  ps->pos += 4;
  /* Each bitmap takes at least 12 bytes (size, cookie, container count). */
  DK_RETURN_IF(count > INT32_MAX || count > (ps->len - ps->pos) / 12, DK_CORRUPT, err,
               "deletion vector byte 4: the bitmap count does not fit in the %zu bytes left",
               ps->len - ps->pos);
  for (uint32_t i = 0; i < count; i++) {
    DK_RETURN_NOT_OK(dv_need(ps, 4, "bitmap size"));
    q = ps->p + ps->pos;
    uint32_t size = big_endian ? rd32be(q) : rd32(q);
    ps->pos += 4;
    size_t start = ps->pos;
    DK_RETURN_NOT_OK(dv_parse_bitmap32(ps, i));
    DK_RETURN_IF(ps->pos - start != size, DK_CORRUPT, err,
                 "deletion vector byte %zu: bitmap %u does not match its size field",
                 start - 4, i);
  }
  return DK_OK;
}

/* The portable format of PROTOCOL.md § Deletion Vector Format (magic 1681511377). */
static dk_status dv_parse_portable(dv_parser *ps) {
  dk_error *err = ps->err;
  DK_RETURN_NOT_OK(dv_need(ps, 8, "bucket count"));
  uint64_t nbuckets = rd64(ps->p + ps->pos);
  ps->pos += 8;
  /* Each bucket takes at least 12 bytes (key, cookie, container count). */
  DK_RETURN_IF(nbuckets > (ps->len - ps->pos) / 12, DK_CORRUPT, err,
               "deletion vector byte 4: the bucket count does not fit in the %zu bytes left",
               ps->len - ps->pos);
  int64_t prev = -1;
  for (uint64_t b = 0; b < nbuckets; b++) {
    DK_RETURN_NOT_OK(dv_need(ps, 4, "bucket key"));
    uint32_t key = rd32(ps->p + ps->pos);
    DK_RETURN_IF(key & 0x80000000u, DK_CORRUPT, err,
                 "deletion vector byte %zu: bucket key has its top bit set", ps->pos);
    DK_RETURN_IF((int64_t)key <= prev, DK_CORRUPT, err,
                 "deletion vector byte %zu: bucket keys not strictly ascending", ps->pos);
    prev = key;
    ps->pos += 4;
    DK_RETURN_NOT_OK(dv_parse_bitmap32(ps, key));
  }
  return DK_OK;
}

static dk_status dv_parse(dv_parser *ps) {
  dk_error *err = ps->err;
  ps->pos = 0;
  ps->ncont = ps->nwords = ps->nvals = 0;
  ps->card = 0;
  DK_RETURN_NOT_OK(dv_need(ps, 4, "magic number"));
  uint32_t magic = rd32(ps->p);
  ps->pos = 4;
  if (magic == DK_DV_MAGIC) {
    DK_RETURN_NOT_OK(dv_parse_portable(ps));
  } else if (magic == DK_DV_MAGIC_NATIVE || rd32be(ps->p) == DK_DV_MAGIC_NATIVE) {
    DK_RETURN_NOT_OK(dv_parse_native(ps, magic != DK_DV_MAGIC_NATIVE));
  } else {
    return dk__error_set(err, DK_CORRUPT,
                         "deletion vector byte 0: not the magic number of a RoaringBitmapArray "
                         "(%u)",
                         DK_DV_MAGIC);
  }
  DK_RETURN_IF(ps->pos != ps->len, DK_CORRUPT, err,
               "deletion vector byte %zu: %zu trailing bytes after the bitmap", ps->pos,
               ps->len - ps->pos);
  return DK_OK;
}

void dk_dv__free(dk_dv *dv) {
  if (!dv) return;
  const dk_allocator *a = dv->alloc;
  dk__free(a, dv->conts);
  dk__free(a, dv->words);
  dk__free(a, dv->vals);
  dk__free(a, dv);
}

dk_status dk_dv__decode_bitmap(dk_dv **out, const uint8_t *bytes, size_t len,
                              const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  dv_parser ps = {.p = bytes, .len = len, .err = err};
  DK_RETURN_NOT_OK(dv_parse(&ps));
  dk_dv *dv = dk__calloc(alloc, 1, sizeof *dv);
  DK_RETURN_IF(!dv, DK_NOMEM, err, "deletion vector: out of memory");
  dv->alloc = alloc;
  dv->ncont = ps.ncont;
  dv->cardinality = ps.card;
  if (ps.ncont) dv->conts = dk__malloc(alloc, ps.ncont * sizeof *dv->conts);
  if (ps.nwords) dv->words = dk__malloc(alloc, ps.nwords * sizeof *dv->words);
  if (ps.nvals) dv->vals = dk__malloc(alloc, ps.nvals * sizeof *dv->vals);
  if ((ps.ncont && !dv->conts) || (ps.nwords && !dv->words) || (ps.nvals && !dv->vals)) {
    dk_dv__free(dv);
    return dk__error_set(err, DK_NOMEM, "deletion vector: out of memory");
  }
  ps.dv = dv;
  dk_status st = dv_parse(&ps);
  if (st != DK_OK) { /* cannot happen: the same bytes passed the counting pass */
    dk_dv__free(dv);
    return st;
  }
  *out = dv;
  return DK_OK;
}

dk_status dk_dv__new_empty(dk_dv **out, const dk_allocator *alloc, dk_error *err) {
  *out = dk__calloc(alloc, 1, sizeof **out);
  DK_RETURN_IF(!*out, DK_NOMEM, err, "deletion vector: out of memory");
  (*out)->alloc = alloc;
  return DK_OK;
}

/* ---- queries ---------------------------------------------------------------------------- */

uint64_t dk_dv__cardinality(const dk_dv *dv) { return dv ? dv->cardinality : 0; }

/* Index of the first container whose key is >= key (ncont when none). */
static size_t dv_lower_bound(const dk_dv *dv, uint64_t key) {
  size_t lo = 0, hi = dv->ncont;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (dv->conts[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Index of the first of n sorted values that is >= v (stride 1 or 2). */
static uint32_t dv_lower_bound16(const uint16_t *vals, uint32_t n, uint32_t stride,
                                 uint32_t v) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (vals[(size_t)mid * stride] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

bool dk_dv__contains(const dk_dv *dv, int64_t row_index) {
  if (!dv || row_index < 0) return false;
  uint64_t key = (uint64_t)row_index >> 16;
  uint32_t low = (uint32_t)row_index & 0xFFFF;
  size_t i = dv_lower_bound(dv, key);
  if (i == dv->ncont || dv->conts[i].key != key) return false;
  const dv_container *c = &dv->conts[i];
  switch (c->type) {
    case DV_BITSET: return dv->words[c->off + low / 64] >> (low % 64) & 1;
    case DV_ARRAY: {
      uint32_t j = dv_lower_bound16(dv->vals + c->off, c->n, 1, low);
      return j < c->n && dv->vals[c->off + j] == low;
    }
    default: {
      /* The first run starting after `low`; the run before it may cover `low`. */
      uint32_t j = dv_lower_bound16(dv->vals + c->off, c->n, 2, low + 1);
      if (j == 0) return false;
      const uint16_t *r = dv->vals + c->off + 2 * (size_t)(j - 1);
      return low <= (uint32_t)r[0] + r[1];
    }
  }
}

enum { DV_MARK_NONE, DV_MARK_BYTES, DV_MARK_BITS };

/* Marks rows [a, b) of the caller's range (relative to first_row) as deleted. */
static inline void dv_mark(int mode, uint8_t *keep, uint64_t a, uint64_t b) {
  if (mode == DV_MARK_BYTES) {
    memset(keep + a, 0, (size_t)(b - a));
  } else if (mode == DV_MARK_BITS) {
    while (a < b && (a & 7)) {
      keep[a >> 3] &= (uint8_t) ~(1u << (a & 7));
      a++;
    }
    if (b - a >= 8) {
      memset(keep + (a >> 3), 0, (size_t)((b - a) >> 3));
      a += (b - a) & ~(uint64_t)7;
    }
    while (a < b) {
      keep[a >> 3] &= (uint8_t) ~(1u << (a & 7));
      a++;
    }
  }
}

static inline void dv_mark1(int mode, uint8_t *keep, uint64_t a) {
  if (mode == DV_MARK_BYTES) keep[a] = 0;
  else if (mode == DV_MARK_BITS) keep[a >> 3] &= (uint8_t) ~(1u << (a & 7));
}

/* Walks the deleted rows of [first_row, first_row + n) container by container. */
static uint64_t dv_visit_range(const dk_dv *dv, int64_t first_row, int64_t n, int mode,
                               uint8_t *keep) {
  if (!dv || first_row < 0 || n <= 0 || dv->ncont == 0) return 0;
  uint64_t first = (uint64_t)first_row;
  uint64_t end = n > INT64_MAX - first_row ? (uint64_t)INT64_MAX : first + (uint64_t)n;
  uint64_t count = 0;
  for (size_t i = dv_lower_bound(dv, first >> 16); i < dv->ncont; i++) {
    const dv_container *c = &dv->conts[i];
    uint64_t base = c->key << 16;
    if (base >= end) break;
    /* The part [lo, hi) of this container's 64K rows inside the range. */
    uint32_t lo = first > base ? (uint32_t)(first - base) : 0;
    uint32_t hi = end - base < 65536 ? (uint32_t)(end - base) : 65536;
    uint64_t rel = base - first; /* wraps when base < first; only sums with v >= lo */
    if (lo == 0 && hi == 65536 && mode == DV_MARK_NONE) {
      count += c->card;
      continue;
    }
    if (c->type == DV_ARRAY) {
      const uint16_t *v = dv->vals + c->off;
      for (uint32_t j = dv_lower_bound16(v, c->n, 1, lo); j < c->n && v[j] < hi; j++) {
        dv_mark1(mode, keep, rel + v[j]);
        count++;
      }
    } else if (c->type == DV_RUN) {
      const uint16_t *r = dv->vals + c->off;
      /* Start from the run before the first run starting at or after lo. */
      uint32_t j = dv_lower_bound16(r, c->n, 2, lo);
      if (j > 0) j--;
      for (; j < c->n && r[2 * j] < hi; j++) {
        uint32_t a = r[2 * j], b = (uint32_t)r[2 * j] + r[2 * j + 1] + 1;
        if (a < lo) a = lo;
        if (b > hi) b = hi;
        if (a >= b) continue;
        dv_mark(mode, keep, rel + a, rel + b);
        count += b - a;
      }
    } else {
      const uint64_t *w = dv->words + c->off;
      for (uint32_t k = lo / 64; k <= (hi - 1) / 64; k++) {
        uint64_t word = w[k];
        if (k == lo / 64) word &= ~0ull << (lo % 64);
        if (k == (hi - 1) / 64 && hi % 64) word &= ~(~0ull << (hi % 64));
        if (mode == DV_MARK_NONE) {
          count += (uint64_t)__builtin_popcountll(word);
          continue;
        }
        while (word) {
          dv_mark1(mode, keep, rel + k * 64u + (uint32_t)__builtin_ctzll(word));
          word &= word - 1;
          count++;
        }
      }
    }
  }
  return count;
}

uint64_t dk_dv__range_cardinality(const dk_dv *dv, int64_t first_row, int64_t n) {
  return dv_visit_range(dv, first_row, n, DV_MARK_NONE, NULL);
}

uint64_t dk_dv__fill_selection(const dk_dv *dv, int64_t first_row, int64_t n, uint8_t *keep) {
  return dv_visit_range(dv, first_row, n, DV_MARK_BYTES, keep);
}

uint64_t dk_dv__fill_selection_bits(const dk_dv *dv, int64_t first_row, int64_t n,
                                   uint8_t *keep_bits) {
  return dv_visit_range(dv, first_row, n, DV_MARK_BITS, keep_bits);
}

dk_status dk_dv__foreach(const dk_dv *dv, dk_status (*cb)(int64_t row, void *payload),
                        void *payload) {
  if (!dv) return DK_OK;
  for (size_t i = 0; i < dv->ncont; i++) {
    const dv_container *c = &dv->conts[i];
    int64_t base = (int64_t)(c->key << 16);
    if (c->type == DV_ARRAY) {
      for (uint32_t j = 0; j < c->n; j++)
        DK_RETURN_NOT_OK(cb(base + dv->vals[c->off + j], payload));
    } else if (c->type == DV_RUN) {
      for (uint32_t j = 0; j < c->n; j++) {
        uint32_t a = dv->vals[c->off + 2 * j], len = dv->vals[c->off + 2 * j + 1];
        for (uint32_t v = a; v <= a + len; v++) DK_RETURN_NOT_OK(cb(base + v, payload));
      }
    } else {
      for (uint32_t k = 0; k < DV_BITSET_WORDS; k++) {
        uint64_t word = dv->words[c->off + k];
        while (word) {
          DK_RETURN_NOT_OK(cb(base + k * 64 + __builtin_ctzll(word), payload));
          word &= word - 1;
        }
      }
    }
  }
  return DK_OK;
}
