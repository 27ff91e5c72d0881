/* test_snapshot_prefetch.c — stats of a checkpoint kept as compressed Parquet pages, read
** through file iterators whose read-ahead decodes the next page on the table's executor
** (src/log/stats.c).
**
** Table: tests/unit/data/stats_pages_table (written by tests/python/gen_stats_pages_table.py:
** a checkpoint whose add.stats column lies in ~200 small pages over 3 row groups). Oracle:
** stats_pages_table.expected.jsonl, pyarrow's read of every add row: [path, stats length,
** FNV-1a 64 of the stats]. Checked: sequential, reverse and strided listing with read-ahead,
** the same with threads = 1 (no read-ahead), four threads listing one snapshot at once (an
** iterator each), and snapshots and iterators freed right after their first stats read (the
** free must wait for the read-ahead; under ASan a use after free would show). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "dk/snapshot.h"
#include "test.h"

#define MAX_FILES 2048

typedef struct expect {
  char path[160];
  size_t len;
  uint64_t fnv;
} expect;

static expect g_exp[MAX_FILES];
static int64_t g_n;

static const char *data_path(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "data/%s", name);
  return path;
}

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* Parses the oracle's lines ["path", len, "hex"] (paths hold no quotes or escapes). */
static int load_expected(void) {
  if (g_n) return 0;
  FILE *f = fopen(data_path("stats_pages_table.expected.jsonl"), "r");
  if (!f) return -1;
  char line[512];
  while (fgets(line, sizeof line, f) && g_n < MAX_FILES) {
    expect *e = &g_exp[g_n];
    char hex[17];
    unsigned long long len;
    if (sscanf(line, "[\"%159[^\"]\", %llu, \"%16[0-9a-f]\"]", e->path, &len, hex) != 3) break;
    e->len = (size_t)len;
    e->fnv = strtoull(hex, NULL, 16);
    g_n++;
  }
  fclose(f);
  return g_n > 0 ? 0 : -1;
}

static const expect *find(const char *path) {
  for (int64_t i = 0; i < g_n; i++)
    if (!strcmp(g_exp[i].path, path)) return &g_exp[i];
  return NULL;
}

static dk_snapshot *open_snapshot(dk_table **t, int threads) {
  dk_error err = {0};
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.threads = threads;
  dk_snapshot *s = NULL;
  *t = NULL;
  if (dk_table_open(t, data_path("stats_pages_table"), &to, &err) != DK_OK ||
      dk_snapshot_open(&s, *t, NULL, &err) != DK_OK) {
    dk_test_fail(__FILE__, __LINE__, "open: %s", err.message);
    dk_table_free(*t);
    *t = NULL;
    return NULL;
  }
  return s;
}

/* Checks file i's stats against the oracle; returns 0 when they agree. */
static int check_file(dk_file_iter *it, int64_t i) {
  dk_error err = {0};
  const dk_file_entry *f;
  if (dk_file_iter_seek(it, i, &err) != DK_OK || dk_file_iter_next(&f, it, &err) != DK_OK ||
      !f)
    return 1;
  const expect *e = find(f->path);
  if (!e || !f->stats) return 2;
  if (strlen(f->stats) != e->len || fnv1a64(f->stats) != e->fnv) return 3;
  return 0;
}

/* Lists every file in the order start, start + step, ... (mod n); returns mismatches. */
static int list_all(dk_snapshot *s, int64_t step, int64_t start) {
  int64_t n = dk_snapshot_num_files(s);
  int bad = 0;
  dk_file_iter *it;
  if (dk_snapshot_files_open(&it, s, NULL, NULL) != DK_OK) return 1;
  for (int64_t k = 0, i = start; k < n; k++, i = (i + step) % n) bad += check_file(it, i) != 0;
  dk_file_iter_free(it);
  return bad;
}

DK_TEST(snapshot_prefetch__orders) {
  CHECK(load_expected() == 0);
  CHECK_EQ_INT(g_n, 700);
  for (int threads = 0; threads <= 1; threads++) {
    dk_table *t;
    dk_snapshot *s = open_snapshot(&t, threads);
    if (!s) return;
    CHECK_EQ_INT(dk_snapshot_num_files(s), g_n);
    CHECK_EQ_INT(list_all(s, 1, 0), 0);                                   /* in order */
    CHECK_EQ_INT(list_all(s, dk_snapshot_num_files(s) - 1, g_n - 1), 0); /* backwards */
    CHECK_EQ_INT(list_all(s, 37, 5), 0);                                  /* jumping */
    CHECK_EQ_INT(list_all(s, 1, 350), 0); /* in order from the middle, twice round */
    dk_snapshot_free(s);
    dk_table_free(t);
  }
}

typedef struct reader {
  dk_snapshot *s;
  int64_t start;
  int bad;
} reader;

static void *read_all(void *arg) {
  reader *r = arg;
  for (int rep = 0; rep < 3; rep++) r->bad += list_all(r->s, 1, r->start);
  return NULL;
}

DK_TEST(snapshot_prefetch__threads) {
  CHECK(load_expected() == 0);
  dk_table *t;
  dk_snapshot *s = open_snapshot(&t, 0);
  if (!s) return;
  pthread_t tid[4];
  reader r[4];
  int started = 0;
  for (int i = 0; i < 4; i++) {
    r[i].s = s;
    r[i].start = i * 171;
    r[i].bad = 0;
    if (pthread_create(&tid[i], NULL, read_all, &r[i]) == 0) started++;
  }
  CHECK_EQ_INT(started, 4);
  for (int i = 0; i < started; i++) {
    pthread_join(tid[i], NULL);
    CHECK_EQ_INT(r[i].bad, 0);
  }
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(snapshot_prefetch__free_while_reading_ahead) {
  CHECK(load_expected() == 0);
  for (int rep = 0; rep < 60; rep++) {
    dk_table *t;
    dk_snapshot *s = open_snapshot(&t, 0);
    if (!s) return;
    /* the first read of a page starts the read-ahead of the next one; free at once, the
     * snapshot first on odd rounds (the iterator keeps it alive) */
    dk_file_iter *it;
    CHECK_OK(dk_snapshot_files_open(&it, s, NULL, NULL), NULL);
    CHECK_EQ_INT(check_file(it, (rep * 13) % g_n), 0);
    if (rep & 1) {
      dk_snapshot_free(s);
      dk_table_free(t);
      dk_file_iter_free(it);
    } else {
      dk_file_iter_free(it);
      dk_snapshot_free(s);
      dk_table_free(t);
    }
  }
}

/* The table's allocator reaches the iterator's stats buffers and the exported Arrow schema:
 * a counting allocator sees their allocations, and every block comes back. */
typedef struct counting {
  long live, total;
} counting;

static void *c_malloc(void *ctx, size_t n) {
  counting *c = ctx;
  void *p = malloc(n);
  if (p) __atomic_add_fetch(&c->live, 1, __ATOMIC_RELAXED), __atomic_add_fetch(&c->total, 1, __ATOMIC_RELAXED);
  return p;
}
static void *c_realloc(void *ctx, void *p, size_t n) {
  counting *c = ctx;
  void *q = realloc(p, n);
  if (q && !p) __atomic_add_fetch(&c->live, 1, __ATOMIC_RELAXED);
  if (q) __atomic_add_fetch(&c->total, 1, __ATOMIC_RELAXED);
  return q;
}
static void c_free(void *ctx, void *p) {
  counting *c = ctx;
  if (p) __atomic_sub_fetch(&c->live, 1, __ATOMIC_RELAXED);
  free(p);
}

DK_TEST(snapshot_prefetch__table_allocator_reaches_stats_and_schema) {
  CHECK(load_expected() == 0);
  counting c = {0, 0};
  dk_allocator a = {&c, c_malloc, c_realloc, c_free};
  dk_error err = {0};
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, &a, NULL, 0, 0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(dk_table_open(&t, data_path("stats_pages_table"), &to, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  long before = c.total;
  dk_file_iter *it;
  CHECK_OK(dk_snapshot_files_open(&it, s, NULL, &err), &err);
  int bad = 0;
  const dk_file_entry *f;
  while (dk_file_iter_next(&f, it, &err) == DK_OK && f) {
    const expect *e = find(f->path);
    bad += !e || !f->stats || strlen(f->stats) != e->len || fnv1a64(f->stats) != e->fnv;
  }
  CHECK_EQ_INT(bad, 0);
  dk_file_iter_free(it);
  CHECK(c.total > before); /* page decode buffers, through the table's allocator */
  before = c.total;
  struct ArrowSchema sc;
  CHECK_OK(dk_snapshot_arrow_schema(&sc, s, 0, &err), &err);
  CHECK(c.total > before);
  sc.release(&sc);
  dk_snapshot_free(s);
  dk_table_free(t);
  CHECK_EQ_INT(c.live, 0);
}
