/*
** test_dv_write.c — writing deletion vectors (src/dv/write.c).
**
** Oracles: CRoaring 0.2.66 deserializing every 32-bit bucket we wrote (membership and
** cardinality, independent of our decoder); zlib's CRC-32 over the bitmap bytes of the file;
** the byte layout of PROTOCOL.md § Deletion Vector File Storage Format; the round trip through
** dk's validating decoder and dk_dv__load (which checks size, checksum and cardinality). The
** Spark side (Spark reads dk's DV files and validates their checksums) is in
** tests/spark/test_spark_dml.py.
*/
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <roaring/roaring.h>
#pragma GCC diagnostic pop

#include "dk/sys/storage.h"
#include "dv/dv.h"
#include "test.h"

static uint64_t st_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
  st_rng ^= st_rng >> 12;
  st_rng ^= st_rng << 25;
  st_rng ^= st_rng >> 27;
  return st_rng * 2685821657736338717ull;
}

static uint32_t rd32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t rd32be(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Checks serialized bytes against the expected sorted distinct rows with CRoaring. */
static int croaring_agrees(const uint8_t *p, size_t len, const int64_t *rows, size_t n) {
  if (len < 12 || rd32le(p) != DK_DV_MAGIC) return 0;
  uint64_t nb = rd32le(p + 4) | (uint64_t)rd32le(p + 8) << 32;
  size_t pos = 12, k = 0;
  for (uint64_t b = 0; b < nb; b++) {
    if (pos + 4 > len) return 0;
    uint32_t key = rd32le(p + pos);
    pos += 4;
    size_t sz = roaring_bitmap_portable_deserialize_size((const char *)p + pos, len - pos);
    if (!sz) return 0;
    roaring_bitmap_t *bm = roaring_bitmap_portable_deserialize_safe((const char *)p + pos, sz);
    if (!bm) return 0;
    pos += sz;
    uint64_t c = roaring_bitmap_get_cardinality(bm);
    uint32_t *vals = malloc((size_t)c * 4 + 4);
    roaring_bitmap_to_uint32_array(bm, vals);
    for (uint64_t i = 0; i < c; i++, k++) {
      if (k >= n || rows[k] != ((int64_t)key << 32 | vals[i])) {
        free(vals);
        roaring_bitmap_free(bm);
        return 0;
      }
    }
    free(vals);
    roaring_bitmap_free(bm);
  }
  return pos == len && k == n;
}

typedef struct collected {
  int64_t *v;
  size_t n;
} collected;

static dk_status collect(int64_t row, void *payload) {
  collected *c = payload;
  c->v[c->n++] = row;
  return DK_OK;
}

DK_TEST(dv_write__random_sets_round_trip) {
  dk_error err;
  dk_error_init(&err);
  for (int trial = 0; trial < 40; trial++) {
    size_t n = (size_t)(rnd() % 20000);
    int64_t *rows = malloc((n + 1) * sizeof *rows);
    int64_t span = trial % 4 == 0 ? 100 : trial % 4 == 1 ? 70000 : trial % 4 == 2 ? 8000000
                                                                                  : (int64_t)1 << 34;
    for (size_t i = 0; i < n; i++) rows[i] = (int64_t)(rnd() % (uint64_t)span);
    if (trial % 5 == 0 && n > 100) /* a dense run: becomes a run container */
      for (size_t i = 0; i < 100; i++) rows[i] = 5000 + (int64_t)i;
    dk_dv_builder *b;
    CHECK_OK(dk_dv__builder_new(&b, NULL, &err), &err);
    CHECK_OK(dk_dv__builder_add(b, rows, n, &err), &err);
    qsort(rows, n, sizeof *rows, cmp64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!m || rows[m - 1] != rows[i]) rows[m++] = rows[i];
    CHECK_EQ_INT(dk_dv__builder_cardinality(b), m);
    dk_buf out;
    dk__buf_init(&out, NULL);
    CHECK_OK(dk_dv__builder_serialize(&out, b, &err), &err);
    CHECK(croaring_agrees((const uint8_t *)out.data, out.len, rows, m));
    dk_dv *dv = NULL;
    CHECK_OK(dk_dv__decode_bitmap(&dv, (const uint8_t *)out.data, out.len, NULL, &err), &err);
    CHECK_EQ_INT(dk_dv__cardinality(dv), m);
    collected c = {malloc((m + 1) * sizeof(int64_t)), 0};
    CHECK_OK(dk_dv__foreach(dv, collect, &c), &err);
    CHECK_EQ_INT(c.n, m);
    CHECK(m == 0 || memcmp(c.v, rows, m * sizeof *rows) == 0);
    free(c.v);
    dk_dv__free(dv);
    dk__buf_dispose(&out);
    dk_dv__builder_free(b);
    free(rows);
  }
}

DK_TEST(dv_write__ranges_merge_and_bad_rows) {
  dk_error err;
  dk_error_init(&err);
  dk_dv_builder *b;
  CHECK_OK(dk_dv__builder_new(&b, NULL, &err), &err);
  /* a range across a 2^32 bucket boundary */
  int64_t first = ((int64_t)1 << 32) - 10;
  CHECK_OK(dk_dv__builder_add_range(b, first, 20, &err), &err);
  int64_t few[] = {3, 1, 3};
  CHECK_OK(dk_dv__builder_add(b, few, 3, &err), &err);
  CHECK_EQ_INT(dk_dv__builder_cardinality(b), 22);
  dk_buf out;
  dk__buf_init(&out, NULL);
  CHECK_OK(dk_dv__builder_serialize(&out, b, &err), &err);
  dk_dv *old = NULL;
  CHECK_OK(dk_dv__decode_bitmap(&old, (const uint8_t *)out.data, out.len, NULL, &err), &err);
  CHECK(dk_dv__contains(old, first + 19) && !dk_dv__contains(old, first + 20));
  CHECK(dk_dv__contains(old, 1) && dk_dv__contains(old, 3) && !dk_dv__contains(old, 2));
  /* merging: the new DV = old ∪ new rows */
  dk_dv_builder *b2;
  CHECK_OK(dk_dv__builder_new(&b2, NULL, &err), &err);
  int64_t more[] = {2, 3, 100};
  CHECK_OK(dk_dv__builder_add(b2, more, 3, &err), &err);
  CHECK_OK(dk_dv__builder_add_dv(b2, old, &err), &err);
  CHECK_EQ_INT(dk_dv__builder_cardinality(b2), 24);
  int64_t bad = -1;
  CHECK(dk_dv__builder_add(b2, &bad, 1, &err) == DK_INVALID);
  /* an empty builder serializes to the 12-byte empty bitmap */
  dk_dv_builder *e;
  CHECK_OK(dk_dv__builder_new(&e, NULL, &err), &err);
  dk_buf eb;
  dk__buf_init(&eb, NULL);
  CHECK_OK(dk_dv__builder_serialize(&eb, e, &err), &err);
  CHECK_EQ_INT(eb.len, 12);
  dk__buf_dispose(&eb);
  dk_dv__builder_free(e);
  dk_dv__free(old);
  dk__buf_dispose(&out);
  dk_dv__builder_free(b);
  dk_dv__builder_free(b2);
}

DK_TEST(dv_write__file_layout_and_load) {
  dk_error err;
  dk_error_init(&err);
  const char *root = dk_test_tmpdir();
  dk_storage *st;
  CHECK_OK(dk_storage_local_new(&st, NULL, &err), &err);
  dk_dv_file_writer w;
  CHECK_OK(dk_dv__file_writer_init(&w, "0b6f7d3c-6a11-4a2e-9d39-5ad1d3f0e7aa", "", NULL, &err),
           &err);
  CHECK_EQ_INT(w.id.len, 20);
  int32_t offs[3];
  int64_t sizes[3], cards[3] = {1, 500, 70000};
  dk_buf bms[3];
  for (int i = 0; i < 3; i++) {
    dk_dv_builder *b;
    CHECK_OK(dk_dv__builder_new(&b, NULL, &err), &err);
    CHECK_OK(dk_dv__builder_add_range(b, 7 * i, cards[i], &err), &err);
    dk__buf_init(&bms[i], NULL);
    CHECK_OK(dk_dv__builder_serialize(&bms[i], b, &err), &err);
    sizes[i] = (int64_t)bms[i].len;
    CHECK_OK(dk_dv__file_writer_add(&w, (const uint8_t *)bms[i].data, bms[i].len, &offs[i], &err),
             &err);
    dk_dv__builder_free(b);
  }
  CHECK_EQ_INT(offs[0], 1);
  CHECK_EQ_INT(offs[1], 1 + 8 + sizes[0]);
  CHECK_OK(dk_dv__file_writer_commit(&w, st, root, &err), &err);
  dk_buf path;
  dk__buf_init(&path, NULL);
  CHECK_OK(dk_dv__file_writer_path(&path, &w, root, &err), &err);
  /* the descriptor's resolved path is the file written */
  dk_dv_desc d;
  int64_t off1 = offs[1];
  CHECK_OK(dk_dv__descriptor_init(&d, (dk_str){"u", 1}, (dk_str){w.id.data, w.id.len}, &off1,
                                  sizes[1], cards[1], &err),
           &err);
  dk_buf rp;
  dk__buf_init(&rp, NULL);
  CHECK_OK(dk_dv__resolve_path(root, &d, &rp, &err), &err);
  CHECK_EQ_STR(rp.data, path.data);
  /* raw layout: version byte, big-endian size, bitmap, big-endian CRC-32 */
  uint8_t *bytes = NULL;
  size_t len = 0;
  CHECK_OK(st->read(st, path.data, &bytes, &len, &err), &err);
  CHECK_EQ_INT(bytes[0], 1);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(rd32be(bytes + offs[i]), sizes[i]);
    CHECK(memcmp(bytes + offs[i] + 4, bms[i].data, (size_t)sizes[i]) == 0);
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), bytes + offs[i] + 4, (uInt)sizes[i]);
    CHECK_EQ_INT(rd32be(bytes + offs[i] + 4 + sizes[i]), crc);
  }
  CHECK_EQ_INT(len, (size_t)offs[2] + 8 + (size_t)sizes[2]);
  st->free_buf(st, bytes);
  for (int i = 0; i < 3; i++) {
    int64_t o = offs[i];
    CHECK_OK(dk_dv__descriptor_init(&d, (dk_str){"u", 1}, (dk_str){w.id.data, w.id.len}, &o,
                                    sizes[i], cards[i], &err),
             &err);
    dk_dv *dv = NULL;
    CHECK_OK(dk_dv__load(&dv, st, root, &d, NULL, &err), &err);
    CHECK_EQ_INT(dk_dv__cardinality(dv), cards[i]);
    CHECK(dk_dv__contains(dv, 7 * i) && !dk_dv__contains(dv, 7 * i + cards[i]));
    dk_dv__free(dv);
    dk__buf_dispose(&bms[i]);
  }
  /* a second commit of the same name is refused (files are never overwritten) */
  CHECK(dk_dv__file_writer_commit(&w, st, root, &err) != DK_OK);
  /* inline: Z85 of the padded bitmap; loads back with its sizeInBytes */
  dk_dv_builder *b;
  CHECK_OK(dk_dv__builder_new(&b, NULL, &err), &err);
  int64_t r3[] = {0, 9, 65536 * 3 + 1};
  CHECK_OK(dk_dv__builder_add(b, r3, 3, &err), &err);
  dk_buf bm, text;
  dk__buf_init(&bm, NULL);
  dk__buf_init(&text, NULL);
  CHECK_OK(dk_dv__builder_serialize(&bm, b, &err), &err);
  CHECK_OK(dk_dv__inline_text(&text, (const uint8_t *)bm.data, bm.len, &err), &err);
  CHECK_OK(dk_dv__descriptor_init(&d, (dk_str){"i", 1}, (dk_str){text.data, text.len}, NULL,
                                  (int64_t)bm.len, 3, &err),
           &err);
  dk_dv *dv = NULL;
  CHECK_OK(dk_dv__load(&dv, NULL, NULL, &d, NULL, &err), &err);
  CHECK(dk_dv__contains(dv, 65536 * 3 + 1) && dk_dv__contains(dv, 9) && !dk_dv__contains(dv, 1));
  dk_dv__free(dv);
  dk_dv__builder_free(b);
  dk__buf_dispose(&bm);
  dk__buf_dispose(&text);
  /* a prefix directory */
  dk_dv_file_writer w2;
  CHECK_OK(dk_dv__file_writer_init(&w2, "0b6f7d3c-6a11-4a2e-9d39-5ad1d3f0e7ab", "ab", NULL, &err),
           &err);
  CHECK_EQ_INT(w2.id.len, 22);
  dk_dv__file_writer_dispose(&w2);
  CHECK(dk_dv__file_writer_init(&w2, "0b6f7d3c-6a11-4a2e-9d39-5ad1d3f0e7ab", "a/b", NULL, &err) ==
        DK_INVALID);
  dk_dv__file_writer_dispose(&w2);
  dk__buf_dispose(&rp);
  dk__buf_dispose(&path);
  dk_dv__file_writer_dispose(&w);
  st->free(st);
}
