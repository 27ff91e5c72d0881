/* test_util.c — dk_buf, dk_arena, dk_hmap, dk_error. */
#include "test.h"
#include "util/util.h"

DK_TEST(util__buf_grows) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_error err = {0};
  for (int i = 0; i < 10000; i++) CHECK_OK(dk__buf_printf(&b, &err, "%d,", i), &err);
  CHECK(b.len > 40000);
  CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
  dk__buf_dispose(&b);
}

DK_TEST(util__hmap_insert_remove) {
  dk_hmap m;
  dk__hmap_init(&m, NULL);
  dk_error err = {0};
  char key[32];
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(key, sizeof key, "k%d", i);
    uint64_t *v;
    bool ins;
    CHECK_OK(dk__hmap_upsert(&m, key, (size_t)n, &v, &ins, &err), &err);
    CHECK(ins);
    *v = (uint64_t)i;
  }
  CHECK_EQ_INT(m.count, 5000);
  for (int i = 0; i < 5000; i += 2) {
    int n = snprintf(key, sizeof key, "k%d", i);
    CHECK(dk__hmap_remove(&m, key, (size_t)n));
  }
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(key, sizeof key, "k%d", i);
    uint64_t *v = dk__hmap_get(&m, key, (size_t)n);
    if (i % 2) {
      CHECK(v && *v == (uint64_t)i);
    } else {
      CHECK(v == NULL);
    }
  }
  dk__hmap_dispose(&m);
}

DK_TEST(util__error_first_wins) {
  dk_error err;
  dk_error_init(&err);
  CHECK_EQ_INT(dk__error_set(&err, DK_CORRUPT, "bad page at offset %d", 42), DK_CORRUPT);
  dk__error_set(&err, DK_IO, "later");
  dk__error_prefix(&err, "file %s", "a.parquet");
  CHECK_EQ_INT(err.code, DK_CORRUPT);
  CHECK_EQ_STR(err.message, "file a.parquet: bad page at offset 42");
}

DK_TEST(util__arena_big_and_small) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1024);
  dk_error err = {0};
  char *a = dk__arena_alloc(&ar, 10, &err);
  char *big = dk__arena_alloc(&ar, 100000, &err);
  char *b = dk__arena_alloc(&ar, 10, &err);
  CHECK(a && big && b);
  memset(big, 1, 100000);
  CHECK(b == a + 16);
  dk__arena_dispose(&ar);
}

DK_TEST(util__arena_reset_keeps_one_chunk) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1024);
  dk_error err = {0};
  for (int i = 0; i < 100; i++) CHECK(dk__arena_alloc(&ar, 100, &err));
  CHECK(ar.total > 1024);
  dk__arena_reset(&ar);
  CHECK_EQ_INT(ar.total, 1024);
  char *a = dk__arena_alloc(&ar, 8, &err);
  char *b = dk__arena_alloc(&ar, 8, &err);
  CHECK(a && b == a + 8);
  dk__arena_dispose(&ar);
}
