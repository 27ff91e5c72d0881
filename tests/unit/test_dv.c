/*
** test_dv.c — deletion vectors: Z85, descriptors, the RoaringBitmapArray decoder, loading.
**
** Oracles: the ZeroMQ RFC 32 test vector; the examples of Delta PROTOCOL.md § Deletion
** Vector Descriptor Schema (unique ids, the resolved path, the rows of the inline example);
** the real DV files and commit logs of the Delta tables in the shared test data (file names,
** descriptor cardinalities); and CRoaring 0.2.66 decoding the same bytes (membership,
** cardinalities) — including bitmaps that CRoaring itself serialized.
*/
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <roaring/roaring.h>
#pragma GCC diagnostic pop

#include "dv/dv.h"
#include "fail_alloc.h"
#include "test.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static dk_str S(const char *s) { return (dk_str){s, strlen(s)}; }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static dk_status stdio_read_range(dk_storage *s, const char *path, int64_t offset, void *buf,
                                  size_t len, dk_error *err) {
  (void)s;
  FILE *f = fopen(path, "rb");
  if (!f) return dk__error_set(err, DK_NOT_FOUND, "%s: %s", path, strerror(errno));
  size_t got = 0;
  if (fseeko(f, (off_t)offset, SEEK_SET) == 0) got = fread(buf, 1, len, f);
  fclose(f);
  if (got != len) return dk__error_set(err, DK_CORRUPT, "%s: short read", path);
  return DK_OK;
}

static dk_status stdio_stat(dk_storage *s, const char *path, dk_file_info *out,
                            dk_error *err) {
  (void)s;
  struct stat sb;
  if (stat(path, &sb) != 0) return dk__error_set(err, DK_NOT_FOUND, "%s", path);
  out->path = path;
  out->size = sb.st_size;
  return DK_OK;
}

static dk_storage g_stdio = {.version = DK_STORAGE_VERSION, .read_range = stdio_read_range,
                             .stat = stdio_stat};

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseeko(f, 0, SEEK_END);
  long n = (long)ftello(f);
  fseeko(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n + 1);
  *len = fread(p, 1, (size_t)n, f);
  fclose(f);
  return p;
}

static int spit(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(p, 1, n, f);
  fclose(f);
  return w == n ? 0 : -1;
}

/* Rows of a DV, collected with dk_dv__foreach. */
typedef struct rows {
  int64_t v[1 << 16];
  size_t n;
} rows;

static dk_status collect(int64_t row, void *payload) {
  rows *r = payload;
  if (r->n < DK_ARRAY_LEN(r->v)) r->v[r->n++] = row;
  return DK_OK;
}

/* Wraps 32-bit portable Roaring bitmaps (one per key) into Delta's portable framing. */
static size_t frame_portable(uint8_t *out, const uint32_t *keys, roaring_bitmap_t **bms,
                             int n) {
  size_t pos = 0;
  uint32_t magic = DK_DV_MAGIC;
  uint64_t nb = (uint64_t)n;
  memcpy(out, &magic, 4); /* the host is little endian, as the format */
  memcpy(out + 4, &nb, 8);
  pos = 12;
  for (int i = 0; i < n; i++) {
    memcpy(out + pos, &keys[i], 4);
    pos += 4;
    pos += roaring_bitmap_portable_serialize(bms[i], (char *)out + pos);
  }
  return pos;
}

/* Checks a decoded DV against CRoaring bitmaps (keys[i] -> bms[i]): cardinality, every member,
 * random non-members, range cardinalities and the selection fillers on random ranges. */
static int check_against_roaring(const dk_dv *dv, const uint32_t *keys, roaring_bitmap_t **bms,
                                 int n, int trials) {
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += roaring_bitmap_get_cardinality(bms[i]);
  if (dk_dv__cardinality(dv) != total) return 0;
  static rows got;
  got.n = 0;
  if (dk_dv__foreach(dv, collect, &got) != DK_OK || got.n != DK_MIN(total, DK_ARRAY_LEN(got.v)))
    return 0;
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    uint64_t c = roaring_bitmap_get_cardinality(bms[i]);
    uint32_t *vals = malloc((c ? c : 1) * sizeof *vals);
    roaring_bitmap_to_uint32_array(bms[i], vals);
    for (uint64_t j = 0; j < c; j++) {
      int64_t row = (int64_t)((uint64_t)keys[i] << 32 | vals[j]);
      if (!dk_dv__contains(dv, row)) {
        free(vals);
        return 0;
      }
      if (k < got.n && got.v[k++] != row) {
        free(vals);
        return 0;
      }
    }
    free(vals);
  }
  /* Random rows and ranges around each bucket. */
  static uint8_t keep[200000], bits[200000 / 8 + 1];
  for (int t = 0; t < trials; t++) {
    int i = (int)(rng() % (uint64_t)n);
    uint32_t low = (uint32_t)(rng() % (t % 2 ? 256 : 1u << 18));
    int64_t first = (int64_t)((uint64_t)keys[i] << 32 | low);
    int64_t len = (int64_t)(rng() % (t % 4 ? 5000 : 200000));
    memset(keep, 1, (size_t)len);
    memset(bits, 0xFF, sizeof bits);
    uint64_t marked = dk_dv__fill_selection(dv, first, len, keep);
    uint64_t marked_bits = dk_dv__fill_selection_bits(dv, first, len, bits);
    uint64_t want = 0;
    for (int64_t r = 0; r < len; r++) {
      int in = roaring_bitmap_contains(bms[i], (uint32_t)(low + (uint64_t)r));
      want += (uint64_t)in;
      if (keep[r] != !in) return 0;
      if (((bits[r >> 3] >> (r & 7)) & 1) != !in) return 0;
      if (dk_dv__contains(dv, first + r) != in) return 0;
    }
    if (marked != want || marked_bits != want) return 0;
    if (dk_dv__range_cardinality(dv, first, len) != want) return 0;
    /* Bits past the range stay set. */
    for (int64_t r = len; r < (int64_t)sizeof bits * 8; r++)
      if (!((bits[r >> 3] >> (r & 7)) & 1)) return 0;
  }
  return 1;
}

/* ---- Z85 --------------------------------------------------------------------------------- */

DK_TEST(dv__z85_rfc32_vector) {
  /* ZeroMQ RFC 32: these 8 bytes encode to "HelloWorld". */
  static const uint8_t hello[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
  dk_error err;
  dk_error_init(&err);
  dk_buf b;
  dk__buf_init(&b, NULL);
  CHECK_OK(dk_dv__z85_encode(&b, hello, 8, &err), &err);
  CHECK_EQ_STR(b.data, "HelloWorld");
  dk__buf_clear(&b);
  CHECK_OK(dk_dv__z85_decode(&b, "HelloWorld", 10, &err), &err);
  CHECK_EQ_INT(b.len, 8);
  CHECK(memcmp(b.data, hello, 8) == 0);
  dk__buf_dispose(&b);
}

DK_TEST(dv__z85_round_trip_and_rejects) {
  static const char alphabet[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  dk_error err;
  dk_buf b, t;
  dk__buf_init(&b, NULL);
  dk__buf_init(&t, NULL);
  /* Round trip of random lengths (multiples of 4) and of padded odd lengths. */
  for (int iter = 0; iter < 500; iter++) {
    uint8_t data[64];
    size_t n = (size_t)(rng() % 17) * 4;
    for (size_t i = 0; i < n; i++) data[i] = (uint8_t)rng();
    dk__buf_clear(&t);
    dk__buf_clear(&b);
    dk_error_init(&err);
    CHECK_OK(dk_dv__z85_encode(&t, data, n, &err), &err);
    CHECK_EQ_INT(t.len, n / 4 * 5);
    CHECK_OK(dk_dv__z85_decode(&b, t.data, t.len, &err), &err);
    CHECK_EQ_INT(b.len, n);
    CHECK(n == 0 || memcmp(b.data, data, n) == 0);
    size_t odd = n ? n - 1 - (size_t)(rng() % 3) : 0;
    dk__buf_clear(&t);
    dk__buf_clear(&b);
    CHECK_OK(dk_dv__z85_encode_padded(&t, data, odd, &err), &err);
    CHECK_OK(dk_dv__z85_decode(&b, t.data, t.len, &err), &err);
    CHECK_EQ_INT(b.len, (odd + 3) / 4 * 4);
    CHECK(odd == 0 || memcmp(b.data, data, odd) == 0);
    for (size_t i = odd; i < b.len; i++) CHECK_EQ_INT(b.data[i], 0);
  }
  /* Each digit decodes to its position in the alphabet; other bytes are rejected. */
  for (int c = 0; c < 256; c++) {
    char txt[5] = {'0', '0', '0', '0', (char)c};
    const char *pos = c ? memchr(alphabet, c, 85) : NULL;
    dk__buf_clear(&b);
    dk_error_init(&err);
    dk_status st = dk_dv__z85_decode(&b, txt, 5, &err);
    if (pos) {
      CHECK_OK(st, &err);
      CHECK_EQ_INT((uint8_t)b.data[3], pos - alphabet);
    } else {
      CHECK_STATUS(st, DK_CORRUPT);
    }
  }
  /* 85^5 > 2^32: "%nSc0" is 2^32 - 1, the largest legal group; "%nSc1" is 2^32. */
  dk__buf_clear(&b);
  dk_error_init(&err);
  CHECK_OK(dk_dv__z85_decode(&b, "%nSc0", 5, &err), &err);
  CHECK(b.len == 4 && memcmp(b.data, "\xff\xff\xff\xff", 4) == 0);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__z85_decode(&b, "%nSc1", 5, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__z85_decode(&b, "#####", 5, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__z85_decode(&b, "Hello", 4, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__z85_encode(&t, (const uint8_t *)"abc", 3, &err), DK_INVALID);
  dk__buf_dispose(&b);
  dk__buf_dispose(&t);
}

/* ---- descriptors ------------------------------------------------------------------------- */

DK_TEST(dv__descriptor_protocol_examples) {
  dk_error err;
  dk_error_init(&err);
  dk_dv_desc d;
  dk_buf b;
  dk__buf_init(&b, NULL);
  /* Example 1: relative path with random prefix "ab". */
  int64_t off = 4;
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("ab^-aqEH.-t@S}K{vb[*k^"), &off, 40, 6, &err),
           &err);
  CHECK_OK(dk_dv__resolve_path("s3://mytable/", &d, &b, &err), &err);
  CHECK_EQ_STR(b.data, "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin");
  dk__buf_clear(&b);
  CHECK_OK(dk_dv__unique_id(&b, &d, &err), &err);
  CHECK_EQ_STR(b.data, "uab^-aqEH.-t@S}K{vb[*k^@4");
  /* Example 2: absolute path. */
  const char *abs = "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin";
  CHECK_OK(dk_dv__descriptor_init(&d, S("p"), S(abs), &off, 40, 6, &err), &err);
  dk__buf_clear(&b);
  CHECK_OK(dk_dv__resolve_path("/ignored", &d, &b, &err), &err);
  CHECK_EQ_STR(b.data, abs);
  /* Example 3: inline, no offset, so no "@" in the unique id; no file path. */
  const char *inl = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";
  CHECK_OK(dk_dv__descriptor_init(&d, S("i"), S(inl), NULL, 40, 6, &err), &err);
  dk__buf_clear(&b);
  CHECK_OK(dk_dv__unique_id(&b, &d, &err), &err);
  CHECK(b.len == 51 && b.data[0] == 'i' && !strcmp(b.data + 1, inl));
  dk__buf_clear(&b);
  CHECK_STATUS(dk_dv__resolve_path("/t", &d, &b, &err), DK_INVALID);
  dk__buf_dispose(&b);
}

DK_TEST(dv__descriptor_validation_and_paths) {
  dk_error err;
  dk_dv_desc d;
  int64_t off = 1, neg = -1;
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("x"), S("abc"), &off, 4, 1, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("uu"), S("IjB3V2d3#qUP%s94R0WF"), &off, 4, 1, &err),
               DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("i"), S("00000"), &off, 4, 1, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &neg, 4, 1, &err),
               DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0W"), &off, 4, 1, &err),
               DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, -1, 1, &err),
               DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(
      dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, 1ll << 31, 1, &err),
      DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, 4, -2, &err),
               DK_CORRUPT);
  /* A prefix that would leave the table directory. */
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("../IjB3V2d3#qUP%s94R0WF"), &off, 4, 1, &err),
           &err);
  CHECK_STATUS(dk_dv__resolve_path("/t", &d, &b, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("..IjB3V2d3#qUP%s94R0WF"), &off, 4, 1, &err),
           &err);
  CHECK_STATUS(dk_dv__resolve_path("/t", &d, &b, &err), DK_CORRUPT);
  /* A UUID that is not Z85. */
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0W\""), &off, 4, 1, &err),
           &err);
  CHECK_STATUS(dk_dv__resolve_path("/t", &d, &b, &err), DK_CORRUPT);
  /* No offset: the unique id has no "@". */
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), NULL, 4, 1, &err),
           &err);
  dk__buf_clear(&b);
  CHECK_OK(dk_dv__unique_id(&b, &d, &err), &err);
  CHECK_EQ_STR(b.data, "uIjB3V2d3#qUP%s94R0WF");
  /* file: URIs become local paths, percent-decoded. */
  const char *uris[][2] = {
      {"file:///tmp/t%20x/dv.bin", "/tmp/t x/dv.bin"},
      {"file:/tmp/t/dv.bin", "/tmp/t/dv.bin"},
      {"file://localhost/tmp/dv.bin", "/tmp/dv.bin"},
      {"/abs/a%25b.bin", "/abs/a%b.bin"},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(uris); i++) {
    dk_error_init(&err);
    CHECK_OK(dk_dv__descriptor_init(&d, S("p"), S(uris[i][0]), &off, 4, 1, &err), &err);
    dk__buf_clear(&b);
    CHECK_OK(dk_dv__resolve_path("/t", &d, &b, &err), &err);
    CHECK_EQ_STR(b.data, uris[i][1]);
  }
  const char *bad[] = {"file://host/tmp/dv.bin", "/abs/a%2", "/abs/a%zz", "/abs/%00"};
  for (size_t i = 0; i < DK_ARRAY_LEN(bad); i++) {
    dk_error_init(&err);
    CHECK_OK(dk_dv__descriptor_init(&d, S("p"), S(bad[i]), &off, 4, 1, &err), &err);
    dk__buf_clear(&b);
    CHECK(dk_dv__resolve_path("/t", &d, &b, &err) != DK_OK);
  }
  dk__buf_dispose(&b);
}

/* ---- the inline example of the protocol ---------------------------------------------------- */

DK_TEST(dv__inline_protocol_example) {
  dk_error err;
  dk_error_init(&err);
  dk_dv_desc d;
  const char *inl = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";
  CHECK_OK(dk_dv__descriptor_init(&d, S("i"), S(inl), NULL, 40, 6, &err), &err);
  dk_dv *dv = NULL;
  CHECK_OK(dk_dv__load(&dv, NULL, NULL, &d, NULL, &err), &err);
  static const int64_t want[] = {3, 4, 7, 11, 18, 29}; /* as PROTOCOL.md states */
  static rows got;
  got.n = 0;
  CHECK_OK(dk_dv__foreach(dv, collect, &got), &err);
  CHECK_EQ_INT(got.n, 6);
  for (int i = 0; i < 6; i++) CHECK_EQ_INT(got.v[i], want[i]);
  CHECK_EQ_INT(dk_dv__cardinality(dv), 6);
  uint8_t keep[40];
  memset(keep, 1, sizeof keep);
  CHECK_EQ_INT(dk_dv__fill_selection(dv, 0, 40, keep), 6);
  for (int r = 0; r < 40; r++) {
    int del = r == 3 || r == 4 || r == 7 || r == 11 || r == 18 || r == 29;
    CHECK_EQ_INT(keep[r], !del);
    CHECK_EQ_INT(dk_dv__contains(dv, r), del);
  }
  CHECK_EQ_INT(dk_dv__range_cardinality(dv, 4, 10), 3); /* 4, 7, 11 */
  dk_dv__free(dv);
  /* A lying cardinality or size is corrupt. */
  CHECK_OK(dk_dv__descriptor_init(&d, S("i"), S(inl), NULL, 40, 5, &err), &err);
  CHECK_STATUS(dk_dv__load(&dv, NULL, NULL, &d, NULL, &err), DK_CORRUPT);
  CHECK(dv == NULL);
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("i"), S(inl), NULL, 36, 6, &err), &err);
  CHECK_STATUS(dk_dv__load(&dv, NULL, NULL, &d, NULL, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_OK(dk_dv__descriptor_init(&d, S("i"), S(inl), NULL, 41, 6, &err), &err);
  CHECK_STATUS(dk_dv__load(&dv, NULL, NULL, &d, NULL, &err), DK_CORRUPT);
}

/* ---- synthetic bitmaps, checked against CRoaring -------------------------------------------- */

DK_TEST(dv__decoder_matches_croaring) {
  uint8_t *buf = malloc(1 << 22);
  for (int round = 0; round < 12; round++) {
    uint32_t keys[4];
    roaring_bitmap_t *bms[4];
    int n = 1 + round % 4;
    uint32_t key = (uint32_t)(rng() % 3);
    for (int i = 0; i < n; i++) {
      keys[i] = key;
      key += 1 + (uint32_t)(rng() % 3);
      if (round == 11 && i == n - 1) keys[i] = 0x7FFFFFFF; /* largest legal bucket */
      bms[i] = roaring_bitmap_create();
      /* Sparse values (array containers), a dense block (bitset) and ranges (runs). */
      for (int j = 0; j < 300; j++) roaring_bitmap_add(bms[i], (uint32_t)(rng() % (1u << 20)));
      uint32_t dense = (uint32_t)(rng() % 8) << 16;
      for (int j = 0; j < 9000; j++) roaring_bitmap_add(bms[i], dense + (uint32_t)(rng() % 65536));
      uint32_t a = (uint32_t)(rng() % (1u << 19));
      roaring_bitmap_add_range(bms[i], a, a + 1 + rng() % 150000);
      roaring_bitmap_add(bms[i], 0xFFFFFFFFu);
      if (round % 2) roaring_bitmap_run_optimize(bms[i]);
    }
    size_t len = frame_portable(buf, keys, bms, n);
    dk_error err;
    dk_error_init(&err);
    dk_dv *dv = NULL;
    CHECK_OK(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), &err);
    int ok = check_against_roaring(dv, keys, bms, n, 60);
    dk_dv__free(dv);
    for (int i = 0; i < n; i++) roaring_bitmap_free(bms[i]);
    CHECK(ok);
  }
  free(buf);
}

DK_TEST(dv__decoder_rejects_corruption) {
  uint8_t *buf = malloc(1 << 20);
  roaring_bitmap_t *bm = roaring_bitmap_create();
  for (uint32_t v = 0; v < 100; v++) roaring_bitmap_add(bm, v * 7);
  for (uint32_t v = 0; v < 5000; v++) roaring_bitmap_add(bm, (1u << 16) + v * 3);
  roaring_bitmap_add_range(bm, 5u << 16, (5u << 16) + 1000);
  roaring_bitmap_run_optimize(bm);
  uint32_t key = 2;
  size_t len = frame_portable(buf, &key, &bm, 1);
  dk_error err;
  dk_dv *dv = NULL;
  /* Every truncation is corrupt, never a crash. */
  for (size_t cut = 0; cut < len; cut++) {
    dk_error_init(&err);
    CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, cut, NULL, &err), DK_CORRUPT);
    CHECK(dv == NULL);
  }
  /* Trailing bytes are corrupt. */
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len + 1, NULL, &err), DK_CORRUPT);
  /* Single-byte damage anywhere either still decodes or is corrupt; never anything else. */
  uint8_t *copy = malloc(len);
  for (size_t i = 0; i < len; i++) {
    for (int v = 0; v < 3; v++) {
      memcpy(copy, buf, len);
      copy[i] = (uint8_t)(v == 0 ? copy[i] ^ 0xFF : v == 1 ? copy[i] + 1 : 0x80);
      dk_error_init(&err);
      dk_status st = dk_dv__decode_bitmap(&dv, copy, len, NULL, &err);
      CHECK(st == DK_OK || st == DK_CORRUPT);
      if (st == DK_OK) {
        (void)dk_dv__range_cardinality(dv, 0, INT64_MAX);
        dk_dv__free(dv);
      }
    }
  }
  free(copy);
  /* Named causes. */
  memcpy(buf, "\x00\x00\x00\x00", 4);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "magic") != NULL);
  /* A bucket key with the top bit set. */
  uint32_t big = 0x80000000u;
  len = frame_portable(buf, &big, &bm, 1);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "top bit") != NULL);
  /* Bucket keys out of order. */
  uint32_t keys2[2] = {3, 3};
  roaring_bitmap_t *bms2[2] = {bm, bm};
  len = frame_portable(buf, keys2, bms2, 2);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  /* A huge bucket count. */
  len = frame_portable(buf, &key, &bm, 1);
  buf[11] = 0x7F;
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  roaring_bitmap_free(bm);
  /* An array container whose values are not ascending: {5, 9} serialized, then swapped. */
  bm = roaring_bitmap_create();
  roaring_bitmap_add(bm, 5);
  roaring_bitmap_add(bm, 9);
  key = 0;
  len = frame_portable(buf, &key, &bm, 1);
  dk_error_init(&err);
  CHECK_OK(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), &err);
  dk_dv__free(dv);
  CHECK(buf[len - 4] == 5 && buf[len - 2] == 9);
  buf[len - 4] = 9, buf[len - 2] = 5;
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "ascending") != NULL);
  /* A header cardinality that lies (2 -> 3) makes the array overrun into nothing. */
  len = frame_portable(buf, &key, &bm, 1);
  buf[16 + 4 + 4 + 2] = 2;
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  roaring_bitmap_free(bm);
  /* A bitset container whose popcount disagrees with its header. */
  bm = roaring_bitmap_create();
  for (uint32_t v = 0; v < 5000; v++) roaring_bitmap_add(bm, v * 2);
  len = frame_portable(buf, &key, &bm, 1);
  buf[len - 1] ^= 0x80; /* the last word's top bit: row 65535 */
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "bitset") != NULL);
  roaring_bitmap_free(bm);
  /* Runs that overlap, and a run that leaves 16 bits. */
  bm = roaring_bitmap_create();
  roaring_bitmap_add_range(bm, 10, 20);
  roaring_bitmap_add_range(bm, 30, 40);
  roaring_bitmap_run_optimize(bm);
  len = frame_portable(buf, &key, &bm, 1);
  /* Layout: 16 framing bytes, cookie 4, run flags 1, header 4, nruns 2, runs 2x4. */
  CHECK_EQ_INT(len, 16 + 4 + 1 + 4 + 2 + 8);
  CHECK(buf[27] == 10 && buf[31] == 30);
  buf[31] = 15; /* second run starts inside the first */
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  buf[31] = 0xF8, buf[32] = 0xFF; /* second run starts at 65528 and has 10 rows */
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, len, NULL, &err), DK_CORRUPT);
  roaring_bitmap_free(bm);
  free(buf);
}

/* ---- the real tables ---------------------------------------------------------------------- */

static const char *const dv_tables[] = {
    "delta-kernel-defaults/basic-dv-no-checkpoint",
    "delta-kernel-defaults/basic-dv-with-checkpoint",
    "delta-golden/dv-partitioned-with-checkpoint",
    "delta-golden/dv-with-columnmapping",
    "delta-golden/log-replay-dv-key-cases",
};

typedef struct found_dv {
  char type[2];
  char path[128];
  int64_t offset, size, card;
  int has_offset;
} found_dv;

/* Test-only extraction of the deletionVector objects of compact commit lines. */
static int str_field(const char *obj, const char *end, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = strstr(obj, pat);
  if (!p || p > end) return 0;
  p += strlen(pat);
  size_t n = 0;
  while (p < end && *p != '"' && n + 1 < cap) out[n++] = *p++;
  out[n] = 0;
  return 1;
}

static int int_field(const char *obj, const char *end, const char *key, int64_t *out) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(obj, pat);
  if (!p || p > end) return 0;
  *out = strtoll(p + strlen(pat), NULL, 10);
  return 1;
}

static size_t find_dvs(const char *table, found_dv *out, size_t cap) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s/_delta_log", dk_test_data_dir(), table);
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 5, ".json") || e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len;
    char *text = (char *)slurp(path, &len);
    if (!text) continue;
    text[len] = 0;
    for (const char *p = text; (p = strstr(p, "\"deletionVector\":{")) && n < cap; p++) {
      const char *end = strchr(p, '}');
      found_dv *f = &out[n];
      memset(f, 0, sizeof *f);
      if (!str_field(p, end, "storageType", f->type, sizeof f->type) ||
          !str_field(p, end, "pathOrInlineDv", f->path, sizeof f->path) ||
          !int_field(p, end, "sizeInBytes", &f->size) ||
          !int_field(p, end, "cardinality", &f->card))
        continue;
      f->has_offset = int_field(p, end, "offset", &f->offset);
      n++;
    }
    free(text);
  }
  if (d) closedir(d);
  return n;
}

DK_TEST(dv__real_tables_load_and_match_croaring) {
  static found_dv dvs[256];
  size_t total = 0;
  for (size_t t = 0; t < DK_ARRAY_LEN(dv_tables); t++) {
    char root[4096];
    snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), dv_tables[t]);
    size_t n = find_dvs(dv_tables[t], dvs, DK_ARRAY_LEN(dvs));
    CHECK(n > 0);
    total += n;
    for (size_t i = 0; i < n; i++) {
      dk_error err;
      dk_error_init(&err);
      dk_dv_desc d;
      CHECK_OK(dk_dv__descriptor_init(&d, S(dvs[i].type), S(dvs[i].path),
                                     dvs[i].has_offset ? &dvs[i].offset : NULL, dvs[i].size,
                                     dvs[i].card, &err),
               &err);
      /* The resolved name is a file the writer created. */
      dk_buf path;
      dk__buf_init(&path, NULL);
      CHECK_OK(dk_dv__resolve_path(root, &d, &path, &err), &err);
      struct stat sb;
      CHECK(stat(path.data, &sb) == 0);
      dk_dv *dv = NULL;
      CHECK_OK(dk_dv__load(&dv, &g_stdio, root, &d, NULL, &err), &err);
      CHECK_EQ_INT(dk_dv__cardinality(dv), dvs[i].card);
      /* CRoaring on the same bytes: [size][magic][nbuckets]{[key][bitmap32]}... */
      size_t flen;
      uint8_t *file = slurp(path.data, &flen);
      CHECK(file && (size_t)dvs[i].offset + 8 + (size_t)dvs[i].size <= flen);
      const uint8_t *bm = file + dvs[i].offset + 4;
      uint32_t magic;
      uint64_t nb;
      memcpy(&magic, bm, 4);
      memcpy(&nb, bm + 4, 8);
      CHECK_EQ_INT(magic, DK_DV_MAGIC);
      CHECK(nb <= 4);
      size_t pos = 12;
      uint32_t keys[4];
      roaring_bitmap_t *bms[4];
      for (uint64_t b = 0; b < nb; b++) {
        memcpy(&keys[b], bm + pos, 4);
        pos += 4;
        bms[b] = roaring_bitmap_portable_deserialize_safe((const char *)bm + pos,
                                                          (size_t)dvs[i].size - pos);
        CHECK(bms[b] != NULL);
        pos += roaring_bitmap_portable_size_in_bytes(bms[b]);
      }
      CHECK_EQ_INT(pos, dvs[i].size);
      int ok = check_against_roaring(dv, keys, bms, (int)nb, 8);
      for (uint64_t b = 0; b < nb; b++) roaring_bitmap_free(bms[b]);
      /* The same bytes as an inline DV (Z85, padded as Delta writers pad) load identically. */
      dk_buf z;
      dk__buf_init(&z, NULL);
      CHECK_OK(dk_dv__z85_encode_padded(&z, bm, (size_t)dvs[i].size, &err), &err);
      dk_dv_desc di;
      CHECK_OK(dk_dv__descriptor_init(&di, S("i"), (dk_str){z.data, z.len}, NULL, dvs[i].size,
                                     dvs[i].card, &err),
               &err);
      dk_dv *dv2 = NULL;
      CHECK_OK(dk_dv__load(&dv2, NULL, NULL, &di, NULL, &err), &err);
      static rows r1, r2;
      r1.n = r2.n = 0;
      CHECK_OK(dk_dv__foreach(dv, collect, &r1), &err);
      CHECK_OK(dk_dv__foreach(dv2, collect, &r2), &err);
      CHECK(r1.n == r2.n && memcmp(r1.v, r2.v, r1.n * sizeof r1.v[0]) == 0);
      dk_dv__free(dv2);
      dk__buf_dispose(&z);
      free(file);
      dk_dv__free(dv);
      dk__buf_dispose(&path);
      CHECK(ok);
    }
  }
  CHECK(total >= 60);
}

/* ---- corrupt DV files ------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether msg shows v in decimal or hex, or its 4 bytes as text in either byte order. */
static int echoes(const char *msg, uint32_t v) {
  char f[4][16];
  snprintf(f[0], sizeof f[0], "%u", v);
  snprintf(f[1], sizeof f[1], "%x", v);
  snprintf(f[2], sizeof f[2], "%X", v);
  snprintf(f[3], sizeof f[3], "%d", (int32_t)v);
  for (int i = 0; i < 4; i++)
    if (strstr(msg, f[i])) return 1;
  char be[5] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v, 0};
  char le[5] = {(char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24), 0};
  return (strlen(be) == 4 && strstr(msg, be)) || (strlen(le) == 4 && strstr(msg, le));
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

DK_TEST(dv__corrupt_files) {
  /* The real DV of basic-dv-no-checkpoint, copied into a scratch table and damaged. */
  const char *name = "deletion_vector_899cef78-06b3-4c14-b024-03860e62cd40.bin";
  char src[4096], root[4096], dst[8192];
  snprintf(src, sizeof src, "%s/delta-kernel-defaults/basic-dv-no-checkpoint/%s",
           dk_test_data_dir(), name);
  snprintf(root, sizeof root, "%s/dvcorrupt", dk_test_tmpdir());
  mkdir(root, 0777);
  snprintf(dst, sizeof dst, "%s/%s", root, name);
  size_t len;
  uint8_t *orig = slurp(src, &len);
  CHECK(orig && len == 45);
  uint8_t *b = malloc(len + 16);
  dk_dv_desc d;
  dk_error err;
  dk_error_init(&err);
  int64_t off = 1;
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, 36, 2, &err),
           &err);
  dk_dv *dv = NULL;
#define EXPECT_CORRUPT(desc, word)                                    \
  do {                                                                \
    dk_error_init(&err);                                              \
    CHECK_STATUS(dk_dv__load(&dv, &g_stdio, root, desc, NULL, &err), DK_CORRUPT); \
    CHECK(dv == NULL);                                                \
    if (!strstr(err.message, word)) {                                 \
      dk_test_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", err.message, word); \
      return;                                                         \
    }                                                                 \
  } while (0)

  /* Intact copy loads. */
  CHECK(spit(dst, orig, len) == 0);
  CHECK_OK(dk_dv__load(&dv, &g_stdio, root, &d, NULL, &err), &err);
  dk_dv__free(dv);
  dv = NULL;
  /* Bad checksum: one bitmap byte flipped; the message names file and offset, and neither
  ** the stored nor the computed CRC (a message must never echo bytes of the file). */
  memcpy(b, orig, len);
  b[20] ^= 1;
  CHECK(spit(dst, b, len) == 0);
  EXPECT_CORRUPT(&d, "checksum");
  CHECK(strstr(err.message, name) && strstr(err.message, "offset 1"));
  CHECK(!echoes(err.message, be32(orig + 41)));
  CHECK(!echoes(err.message, (uint32_t)crc32(0, b + 5, 36)));
  /* Truncated file. */
  CHECK(spit(dst, orig, len - 3) == 0);
  EXPECT_CORRUPT(&d, name);
  CHECK(spit(dst, orig, 3) == 0);
  EXPECT_CORRUPT(&d, name);
  /* Wrong magic with a matching checksum. */
  memcpy(b, orig, len);
  b[5] ^= 0x55;
  put_be32(b + 41, (uint32_t)crc32(0, b + 5, 36));
  CHECK(spit(dst, b, len) == 0);
  EXPECT_CORRUPT(&d, "magic");
  CHECK(!echoes(err.message, le32(b + 5)));
  /* Stored size disagrees with the descriptor ("lying size"), either side. */
  memcpy(b, orig, len);
  put_be32(b + 1, 0x41424344u);
  CHECK(spit(dst, b, len) == 0);
  EXPECT_CORRUPT(&d, "sizeInBytes");
  CHECK(!echoes(err.message, 0x41424344u));
  CHECK(spit(dst, orig, len) == 0);
  dk_dv_desc d2 = d;
  d2.size_in_bytes = 35;
  EXPECT_CORRUPT(&d2, "sizeInBytes");
  d2.size_in_bytes = 1 << 30; /* larger than the file: refused before allocating 1 GiB */
  EXPECT_CORRUPT(&d2, "does not fit");
  /* Cardinality lie. */
  d2 = d;
  d2.cardinality = 3;
  EXPECT_CORRUPT(&d2, "cardinality");
  /* Wrong version byte. */
  memcpy(b, orig, len);
  b[0] = 2;
  CHECK(spit(dst, b, len) == 0);
  EXPECT_CORRUPT(&d, "version");
  /* Offset past the end. */
  CHECK(spit(dst, orig, len) == 0);
  d2 = d;
  d2.offset = 100;
  EXPECT_CORRUPT(&d2, name);
  /* Missing file is not found, not corrupt. */
  remove(dst);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__load(&dv, &g_stdio, root, &d, NULL, &err), DK_NOT_FOUND);
  /* Every truncation of the range decoder's input is corrupt. */
  for (size_t cut = 0; cut < len - 1; cut++) {
    dk_error_init(&err);
    CHECK_STATUS(dk_dv__decode_file_range(&dv, orig + 1, cut, 36, "x", 1, NULL, &err),
                 DK_CORRUPT);
  }
  free(b);
  free(orig);
#undef EXPECT_CORRUPT
}

/* ---- the native framing, allocation failures, empty DVs ------------------------------------ */

DK_TEST(dv__native_framing_little_endian) {
  /* Delta-Spark's "native" RoaringBitmapArray: LE magic 1681511376, int32 count, then per
   * bitmap (bucket = its index) an int32 size and the portable 32-bit bitmap. */
  roaring_bitmap_t *bms[3];
  uint32_t keys[3] = {0, 1, 2};
  for (int i = 0; i < 3; i++) {
    bms[i] = roaring_bitmap_create();
    for (int j = 0; j < 50 * (i + 1); j++) roaring_bitmap_add(bms[i], (uint32_t)(rng() % 200000));
    roaring_bitmap_add_range(bms[i], 1000, 9000);
    roaring_bitmap_run_optimize(bms[i]);
  }
  uint8_t *buf = malloc(1 << 20);
  uint32_t magic = DK_DV_MAGIC_NATIVE, count = 3;
  memcpy(buf, &magic, 4);
  memcpy(buf + 4, &count, 4);
  size_t pos = 8;
  for (int i = 0; i < 3; i++) {
    uint32_t size = (uint32_t)roaring_bitmap_portable_size_in_bytes(bms[i]);
    memcpy(buf + pos, &size, 4);
    pos += 4 + roaring_bitmap_portable_serialize(bms[i], (char *)buf + pos + 4);
  }
  dk_error err;
  dk_error_init(&err);
  dk_dv *dv = NULL;
  CHECK_OK(dk_dv__decode_bitmap(&dv, buf, pos, NULL, &err), &err);
  int ok = check_against_roaring(dv, keys, bms, 3, 30);
  dk_dv__free(dv);
  /* A size field that disagrees with the bitmap is corrupt. */
  uint32_t wrong = (uint32_t)roaring_bitmap_portable_size_in_bytes(bms[0]) + 1;
  memcpy(buf + 8, &wrong, 4);
  dk_error_init(&err);
  CHECK_STATUS(dk_dv__decode_bitmap(&dv, buf, pos, NULL, &err), DK_CORRUPT);
  for (int i = 0; i < 3; i++) roaring_bitmap_free(bms[i]);
  free(buf);
  CHECK(ok);
}

DK_TEST(dv__allocation_failures) {
  char root[4096];
  snprintf(root, sizeof root, "%s/delta-kernel-defaults/basic-dv-no-checkpoint",
           dk_test_data_dir());
  const char *inl = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";
  dk_dv_desc dfile, dinl;
  dk_error err;
  dk_error_init(&err);
  int64_t off = 1;
  CHECK_OK(dk_dv__descriptor_init(&dfile, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, 36, 2, &err),
           &err);
  CHECK_OK(dk_dv__descriptor_init(&dinl, S("i"), S(inl), NULL, 40, 6, &err), &err);
  const dk_dv_desc *ds[2] = {&dfile, &dinl};
  for (int which = 0; which < 2; which++) {
    int n;
    for (n = 0; n < 100; n++) {
      dk_test_fail_alloc f = {.left = n};
      dk_allocator a = dk_test_fail_allocator(&f);
      dk_dv *dv = NULL;
      dk_error_init(&err);
      dk_status st = dk_dv__load(&dv, &g_stdio, root, ds[which], &a, &err);
      if (st == DK_OK) {
        CHECK_EQ_INT(dk_dv__cardinality(dv), ds[which]->cardinality);
        dk_dv__free(dv);
        CHECK_EQ_INT(f.live, 0);
        break;
      }
      CHECK_STATUS(st, DK_NOMEM);
      CHECK(dv == NULL);
      CHECK_EQ_INT(f.live, 0);
    }
    CHECK(n > 0 && n < 100);
  }
}

DK_TEST(dv__empty_descriptor_reads_nothing) {
  dk_error err;
  dk_error_init(&err);
  dk_dv_desc d;
  int64_t off = 1;
  CHECK_OK(dk_dv__descriptor_init(&d, S("u"), S("IjB3V2d3#qUP%s94R0WF"), &off, 36, 0, &err), &err);
  dk_dv *dv = NULL;
  /* No storage at all: nothing may be read. */
  CHECK_OK(dk_dv__load(&dv, NULL, "/nonexistent", &d, NULL, &err), &err);
  CHECK_EQ_INT(dk_dv__cardinality(dv), 0);
  CHECK(!dk_dv__contains(dv, 0));
  uint8_t keep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_EQ_INT(dk_dv__fill_selection(dv, 0, 8, keep), 0);
  for (int i = 0; i < 8; i++) CHECK_EQ_INT(keep[i], 1);
  dk_dv__free(dv);
}
