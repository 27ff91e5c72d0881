/* test_snapshot_cow.c — the chunked copy-on-write file list of refreshed snapshots
** (src/snapshot/filelist.c), on hand-built JSON logs of a few thousand files (several chunks
** of DK_SNAPSHOT__CHUNK entries): a refreshed snapshot leaves the one it came from unchanged
** (entry for entry, in order) while sharing its chunks; removes and re-adds of files in shared
** chunks, a commit emptying a whole chunk, a chain of refreshes past the refresh depth, every
** snapshot of the chain freed in shuffled order, and readers on other threads while the
** snapshot they read is refreshed and its successors freed. Oracles: the file and tombstone
** sets the test's own commits define (a model kept alongside), and a fresh replay of the same
** version (dk_snapshot_open), which never goes through the refresh path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

#define N0 2500 /* files of v0: chunks of 1024, 1024 and 452 */

static const char *PM =
    "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
    "{\"metaData\":{\"id\":\"t\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
    "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"id\\\","
    "\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}}]}\","
    "\"partitionColumns\":[],\"configuration\":{},\"createdTime\":1}}\n";

static int g_seq;

static char *cow_table(void) {
  static char dir[4096];
  snprintf(dir, sizeof dir, "%s/cow%d", dk_test_tmpdir(), ++g_seq);
  char log[4200];
  snprintf(log, sizeof log, "%s/_delta_log", dir);
  mkdir(dir, 0755);
  mkdir(log, 0755);
  return dir;
}

static void put_commit(const char *dir, int64_t v, const dk_buf *text) {
  char path[4300];
  snprintf(path, sizeof path, "%s/_delta_log/%020lld.json", dir, (long long)v);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(text->data, 1, text->len, f);
  fclose(f);
}

static void add(dk_buf *b, const char *path, int64_t size) {
  dk__buf_printf(b, NULL,
                 "{\"add\":{\"path\":\"%s\",\"partitionValues\":{},\"size\":%lld,"
                 "\"modificationTime\":5,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":%lld}\"}}\n",
                 path, (long long)size, (long long)size);
}

static void rm(dk_buf *b, const char *path) {
  dk__buf_printf(b, NULL,
                 "{\"remove\":{\"path\":\"%s\",\"deletionTimestamp\":9,\"dataChange\":true}}\n",
                 path);
}

/* The model: file name -> size (0: not live), tombstoned or not, over every name used. */
typedef struct model {
  char (*name)[24];
  int64_t *size;
  int *tomb;
  int n, cap;
} model;

static int model_name(model *m, const char *name) {
  for (int i = m->n - 1; i >= 0; i--)
    if (!strcmp(m->name[i], name)) return i;
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 4096;
    m->name = realloc(m->name, (size_t)m->cap * sizeof *m->name);
    m->size = realloc(m->size, (size_t)m->cap * sizeof *m->size);
    m->tomb = realloc(m->tomb, (size_t)m->cap * sizeof *m->tomb);
  }
  snprintf(m->name[m->n], sizeof m->name[0], "%s", name);
  m->size[m->n] = 0;
  m->tomb[m->n] = 0;
  return m->n++;
}

static void model_add(model *m, dk_buf *b, const char *name, int64_t size) {
  int i = model_name(m, name);
  m->size[i] = size;
  m->tomb[i] = 0;
  add(b, name, size);
}

static void model_rm(model *m, dk_buf *b, const char *name) {
  int i = model_name(m, name);
  m->size[i] = 0;
  m->tomb[i] = 1;
  rm(b, name);
}

static void model_free(model *m) {
  free(m->name);
  free(m->size);
  free(m->tomb);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "path:size" of the live files (sorted) then "|" and the tombstone paths (sorted). */
static char *model_text(const model *m) {
  char **v = malloc(((size_t)m->n + 1) * sizeof *v);
  char *buf = malloc((size_t)m->n * 48 + 16), *p = buf;
  int k = 0;
  for (int i = 0; i < m->n; i++)
    if (m->size[i]) {
      v[k++] = p;
      p += sprintf(p, "%s:%lld", m->name[i], (long long)m->size[i]) + 1;
    }
  qsort(v, (size_t)k, sizeof *v, cmp_str);
  int nf = k;
  for (int i = 0; i < m->n; i++)
    if (m->tomb[i]) v[k++] = m->name[i];
  qsort(v + nf, (size_t)(k - nf), sizeof *v, cmp_str);
  char *out = malloc((size_t)m->n * 48 + 16), *q = out;
  *q = 0;
  for (int i = 0; i < nf; i++) q += sprintf(q, "%s,", v[i]);
  q += sprintf(q, "|");
  for (int i = nf; i < k; i++) q += sprintf(q, "%s,", v[i]);
  free(v);
  free(buf);
  return out;
}

/* The same text from a snapshot (with ordered = 1: files in the snapshot's order, unsorted,
 * each with its stats; the exact listing a reader sees). */
static char *snap_text(const dk_snapshot *s, int ordered) {
  int64_t nf = dk_snapshot_num_files(s), nt = dk_snapshot_num_tombstones(s);
  const char **v = malloc((size_t)(nf + nt + 1) * sizeof *v);
  char *buf = malloc((size_t)(nf + nt) * 96 + 16), *p = buf;
  dk_error err = {0};
  for (int64_t i = 0; i < nf; i++) {
    dk_file_entry f;
    if (dk_snapshot_file(&f, s, i, &err) != DK_OK) break;
    v[i] = p;
    p += sprintf(p, "%s:%lld", f.path, (long long)f.size) + 1;
    if (ordered) {
      char st[64];
      int64_t len;
      if (dk_snapshot_file_stats(st, sizeof st, &len, s, i, &err) == DK_OK) {
        p--;
        p += sprintf(p, "%s", st) + 1;
      }
    }
  }
  if (!ordered) qsort(v, (size_t)nf, sizeof *v, cmp_str);
  for (int64_t i = 0; i < nt; i++) {
    dk_tombstone t;
    if (dk_snapshot_tombstone(&t, s, i, &err) != DK_OK) break;
    v[nf + i] = p;
    p += sprintf(p, "%s", t.path) + 1;
  }
  qsort(v + nf, (size_t)nt, sizeof *v, cmp_str);
  size_t cap = (size_t)(p - buf) + 16;
  char *out = malloc(cap), *q = out;
  *q = 0;
  for (int64_t i = 0; i < nf; i++) q += sprintf(q, "%s,", v[i]);
  q += sprintf(q, "|");
  for (int64_t i = 0; i < nt; i++) q += sprintf(q, "%s,", v[nf + i]);
  free(v);
  free(buf);
  return out;
}

/* Whether two listings are equal; on a difference prints where (listings are long). */
static int same_text(const char *got, const char *want) {
  size_t i = 0;
  while (got[i] && got[i] == want[i]) i++;
  if (got[i] == want[i]) return 1;
  size_t from = i > 40 ? i - 40 : 0;
  fprintf(stderr, "  listings differ at byte %zu: got \"%.80s\", want \"%.80s\"\n", i,
          got + from, want + from);
  return 0;
}

static int64_t model_bytes(const model *m) {
  int64_t b = 0;
  for (int i = 0; i < m->n; i++) b += m->size[i];
  return b;
}

/* v0: N0 files f00000.. of sizes 1..N0. */
static void write_v0(const char *dir, model *m) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk__buf_printf(&b, NULL, "%s", PM);
  char name[24];
  for (int i = 0; i < N0; i++) {
    snprintf(name, sizeof name, "f%05d.parquet", i);
    model_add(m, &b, name, i + 1);
  }
  put_commit(dir, 0, &b);
  dk__buf_dispose(&b);
}

/* Checks s against the model and against a fresh replay of its version. */
static void check_snapshot(dk_table *t, const dk_snapshot *s, const model *m) {
  dk_error err = {0};
  char *want = model_text(m), *got = snap_text(s, 0);
  CHECK(same_text(got, want));
  CHECK_EQ_INT(dk_snapshot_total_bytes(s), model_bytes(m));
  dk_snapshot *fresh;
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, dk_snapshot_version(s), 0, 0, 0};
  CHECK_OK(dk_snapshot_open(&fresh, t, &o, &err), &err);
  char *f = snap_text(fresh, 0);
  CHECK(same_text(got, f));
  CHECK_EQ_INT(dk_snapshot_total_bytes(s), dk_snapshot_total_bytes(fresh));
  dk_snapshot_free(fresh);
  free(f);
  free(want);
  free(got);
}

DK_TEST(snapshot__cow_old_unchanged_removes_in_shared_chunks) {
  char *dir = cow_table();
  model m = {0};
  write_v0(dir, &m);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot *old;
  CHECK_OK(dk_snapshot_open(&old, t, NULL, &err), &err);
  char *before = snap_text(old, 1);
  /* v1: removes in the first and second chunk, a re-add (new size) of a file of the second,
   * a removal of the very last entry, two new files */
  dk_buf b;
  dk__buf_init(&b, NULL);
  model_rm(&m, &b, "f00003.parquet");
  model_rm(&m, &b, "f01500.parquet");
  model_add(&m, &b, "f02000.parquet", 77777);
  model_rm(&m, &b, "f02499.parquet");
  model_add(&m, &b, "g1.parquet", 5);
  model_add(&m, &b, "g2.parquet", 6);
  put_commit(dir, 1, &b);
  dk__buf_dispose(&b);
  dk_snapshot *upd;
  CHECK_OK(dk_snapshot_update(&upd, old, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(upd), 1);
  CHECK_EQ_INT(dk_snapshot_num_files(upd), N0 - 3 + 2);
  char *after = snap_text(old, 1);
  CHECK(same_text(after, before)); /* the old snapshot: every entry, its order and stats */
  check_snapshot(t, upd, &m);
  /* the stats of a file in a shared chunk and of a new one */
  char st[64];
  int64_t len;
  dk_file_entry f;
  int seen = 0;
  for (int64_t i = 0; i < dk_snapshot_num_files(upd); i++) {
    CHECK_OK(dk_snapshot_file(&f, upd, i, &err), &err);
    if (!strcmp(f.path, "f01800.parquet") || !strcmp(f.path, "g2.parquet") ||
        !strcmp(f.path, "f02000.parquet")) {
      CHECK_OK(dk_snapshot_file_stats(st, sizeof st, &len, upd, i, &err), &err);
      char want[64];
      snprintf(want, sizeof want, "{\"numRecords\":%lld}", (long long)f.size);
      CHECK(same_text(st, want));
      seen++;
    }
  }
  CHECK_EQ_INT(seen, 3);
  /* the refreshed snapshot outlives the one it came from, and the other way round */
  dk_snapshot_free(old);
  char *again = snap_text(upd, 0), *want = model_text(&m);
  CHECK(same_text(again, want));
  free(again);
  free(want);
  dk_snapshot_free(upd);
  dk_table_free(t);
  free(before);
  free(after);
  model_free(&m);
}

DK_TEST(snapshot__cow_commit_empties_a_chunk) {
  char *dir = cow_table();
  model m = {0};
  write_v0(dir, &m);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot *old;
  CHECK_OK(dk_snapshot_open(&old, t, NULL, &err), &err);
  char *before = snap_text(old, 1);
  dk_buf b;
  dk__buf_init(&b, NULL);
  char name[24];
  for (int i = 1024; i < 2048; i++) { /* exactly the second chunk */
    snprintf(name, sizeof name, "f%05d.parquet", i);
    model_rm(&m, &b, name);
  }
  model_add(&m, &b, "f01024.parquet", 3); /* removed and re-added in one commit */
  put_commit(dir, 1, &b);
  dk__buf_dispose(&b);
  dk_snapshot *upd;
  CHECK_OK(dk_snapshot_update(&upd, old, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(upd), N0 - 1024 + 1);
  check_snapshot(t, upd, &m);
  /* and the next refresh removes everything else */
  dk__buf_init(&b, NULL);
  for (int i = 0; i < N0; i++) {
    snprintf(name, sizeof name, "f%05d.parquet", i);
    if (i < 1024 || i >= 2048 || i == 1024) model_rm(&m, &b, name);
  }
  put_commit(dir, 2, &b);
  dk__buf_dispose(&b);
  dk_snapshot *upd2;
  CHECK_OK(dk_snapshot_update(&upd2, upd, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(upd2), 0);
  check_snapshot(t, upd2, &m);
  char *after = snap_text(old, 1);
  CHECK(same_text(after, before));
  dk_snapshot_free(upd);
  dk_snapshot_free(old);
  dk_snapshot_free(upd2);
  dk_table_free(t);
  free(before);
  free(after);
  model_free(&m);
}

/* counting allocator: every byte a chain of snapshots takes is given back */
typedef struct cnt {
  int64_t live;
} cnt;
static void *c_malloc(void *ctx, size_t n) {
  int64_t *p = malloc(n + 16);
  if (!p) return NULL;
  p[0] = (int64_t)n;
  __atomic_add_fetch(&((cnt *)ctx)->live, (int64_t)n, __ATOMIC_RELAXED);
  return (char *)p + 16;
}
static void c_free(void *ctx, void *q) {
  if (!q) return;
  int64_t *p = (int64_t *)((char *)q - 16);
  __atomic_sub_fetch(&((cnt *)ctx)->live, p[0], __ATOMIC_RELAXED);
  free(p);
}
static void *c_realloc(void *ctx, void *q, size_t n) {
  if (!q) return c_malloc(ctx, n);
  int64_t *p = (int64_t *)((char *)q - 16);
  int64_t old = p[0];
  int64_t *r = realloc(p, n + 16);
  if (!r) return NULL;
  r[0] = (int64_t)n;
  __atomic_add_fetch(&((cnt *)ctx)->live, (int64_t)n - old, __ATOMIC_RELAXED);
  return (char *)r + 16;
}

#define STEPS 40 /* past DK_SNAPSHOT__MAX_REFRESH_DEPTH (32): the chain reloads once */

DK_TEST(snapshot__cow_chain_freed_in_any_order) {
  char *dir = cow_table();
  model m = {0};
  write_v0(dir, &m);
  cnt cc = {0};
  dk_allocator a = {&cc, c_malloc, c_realloc, c_free};
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, &a, NULL, 1, 0};
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, &to, &err), &err);
  dk_snapshot *chain[STEPS + 1];
  char *text[STEPS + 1];
  CHECK_OK(dk_snapshot_open(&chain[0], t, NULL, &err), &err);
  text[0] = model_text(&m);
  uint64_t rnd = 12345;
  char name[24];
  for (int v = 1; v <= STEPS; v++) {
    dk_buf b;
    dk__buf_init(&b, NULL);
    for (int k = 0; k < 3; k++) { /* three live files from anywhere in the list */
      int i;
      do {
        rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
        i = (int)((rnd >> 33) % (uint64_t)m.n);
      } while (!m.size[i]);
      snprintf(name, sizeof name, "%s", m.name[i]);
      model_rm(&m, &b, name);
    }
    snprintf(name, sizeof name, "n%03d-a.parquet", v);
    model_add(&m, &b, name, 1000 + v);
    snprintf(name, sizeof name, "n%03d-b.parquet", v);
    model_add(&m, &b, name, 2000 + v);
    if (v % 7 == 0) { /* a file of an earlier refresh's new chunk goes again */
      snprintf(name, sizeof name, "n%03d-a.parquet", v - 3);
      model_rm(&m, &b, name);
    }
    put_commit(dir, v, &b);
    dk__buf_dispose(&b);
    CHECK_OK(dk_snapshot_update(&chain[v], chain[v - 1], &err), &err);
    CHECK_EQ_INT(dk_snapshot_version(chain[v]), v);
    text[v] = model_text(&m);
    char *got = snap_text(chain[v], 0);
    CHECK(same_text(got, text[v]));
    free(got);
    if (v % 8 == 0 || v == STEPS) check_snapshot(t, chain[v], &m);
  }
  /* every snapshot of the chain still lists its own version */
  for (int v = 0; v <= STEPS; v++) {
    char *got = snap_text(chain[v], 0);
    CHECK(same_text(got, text[v]));
    free(got);
  }
  /* freed in a shuffled order, each survivor checked after every free */
  int order[STEPS + 1];
  for (int i = 0; i <= STEPS; i++) order[i] = i;
  for (int i = STEPS; i > 0; i--) {
    rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
    int j = (int)((rnd >> 33) % (uint64_t)(i + 1)), x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  for (int k = 0; k <= STEPS; k++) {
    dk_snapshot_free(chain[order[k]]);
    chain[order[k]] = NULL;
    if (k % 10 == 0)
      for (int v = 0; v <= STEPS; v++) {
        if (!chain[v]) continue;
        char *got = snap_text(chain[v], 0);
        CHECK(same_text(got, text[v]));
        free(got);
      }
  }
  dk_table_free(t);
  CHECK_EQ_INT(cc.live, 0);
  for (int v = 0; v <= STEPS; v++) free(text[v]);
  model_free(&m);
}

/* Readers on other threads list a snapshot (ordered, with stats, through dk_snapshot_file and
 * the file iterator) while the main thread refreshes it again and again and frees what it
 * made: every listing equals the one taken before any refresh. Run under TSan by
 * `make test-tsan`. */
typedef struct reader {
  const dk_snapshot *s;
  const char *want;
  int rounds, bad;
} reader;

static void *read_loop(void *arg) {
  reader *r = arg;
  for (int k = 0; k < r->rounds; k++) {
    char *got = snap_text(r->s, 1);
    if (strcmp(got, r->want)) r->bad++;
    free(got);
    dk_file_iter *it;
    dk_error err = {0};
    int64_t n = 0;
    if (dk_snapshot_files_open(&it, r->s, NULL, &err) != DK_OK) {
      r->bad++;
      continue;
    }
    const dk_file_entry *e;
    while (dk_file_iter_next(&e, it, &err) == DK_OK && e) n += e->stats != NULL;
    dk_file_iter_free(it);
    if (n != dk_snapshot_num_files(r->s)) r->bad++;
  }
  return NULL;
}

DK_TEST(snapshot__cow_readers_while_refreshing) {
  char *dir = cow_table();
  model m = {0};
  write_v0(dir, &m);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot *old;
  CHECK_OK(dk_snapshot_open(&old, t, NULL, &err), &err);
  char *want = snap_text(old, 1);
  reader rd[2] = {{old, want, 6, 0}, {old, want, 6, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, read_loop, &rd[i]);
  char name[24];
  for (int v = 1; v <= 6; v++) {
    dk_buf b;
    dk__buf_init(&b, NULL);
    snprintf(name, sizeof name, "f%05d.parquet", v * 300);
    model_rm(&m, &b, name);
    snprintf(name, sizeof name, "r%03d.parquet", v);
    model_add(&m, &b, name, v);
    put_commit(dir, v, &b);
    dk__buf_dispose(&b);
    /* from the read snapshot each time: new chains share its chunks, then go */
    dk_snapshot *u1, *u2;
    CHECK_OK(dk_snapshot_update(&u1, old, &err), &err);
    CHECK_OK(dk_snapshot_update(&u2, u1, &err), &err);
    CHECK(u2 == u1); /* nothing newer: the same snapshot */
    char *got = snap_text(u1, 0), *mt = model_text(&m);
    CHECK(same_text(got, mt));
    free(got);
    free(mt);
    dk_snapshot_free(u2);
    dk_snapshot_free(u1);
  }
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  CHECK_EQ_INT(rd[0].bad + rd[1].bad, 0);
  dk_snapshot_free(old);
  dk_table_free(t);
  free(want);
  model_free(&m);
}
