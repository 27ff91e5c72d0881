/* test_storage.c — the local storage backend (dk_storage_local_new).
**
** Oracles: exact properties checked against the C library / kernel: listing order equals
** strcmp order of the names we created and matches readdir's set, sizes and mtimes equal
** what stat(2) reports, bytes read equal bytes written, put_if_absent admits exactly one
** winner among racing threads, and the real _delta_log folders of the shared corpus list
** completely and in order. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dk/sys/storage.h"
#include "test.h"
#include "util/util.h"

typedef struct listed {
  char names[64][128];
  int64_t sizes[64];
  int64_t mtimes[64];
  int dirs[64];
  int n;
  int stop_after; /* 0 = never */
} listed;

static dk_status collect(const dk_file_info *info, void *payload) {
  listed *l = payload;
  if (l->n >= 64) return DK_INTERNAL;
  snprintf(l->names[l->n], sizeof l->names[0], "%s", info->path);
  l->sizes[l->n] = info->size;
  l->mtimes[l->n] = info->mtime_ms;
  l->dirs[l->n] = info->is_dir;
  l->n++;
  if (l->stop_after && l->n == l->stop_after) return DK_CANCELLED;
  return DK_OK;
}

static void put_file(const char *dir, const char *name, const char *content) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (f) {
    fputs(content, f);
    fclose(f);
  }
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

DK_TEST(storage__list_sorted_and_from) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  CHECK_EQ_INT(s->version, DK_STORAGE_VERSION);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/log", dk_test_tmpdir());
  CHECK(mkdir(dir, 0777) == 0);
  /* created in scrambled order; names chosen so that numeric and byte order differ */
  const char *names[] = {"00000000000000000010.json", "_last_checkpoint",
                         "00000000000000000002.json", "00000000000000000002.checkpoint.parquet",
                         "00000000000000000001.json", "Zeta", "alpha", "\xc3\xa9t\xc3\xa9",
                         "00000000000000000009.crc"};
  const size_t nn = DK_ARRAY_LEN(names);
  for (size_t i = 0; i < nn; i++) put_file(dir, names[i], names[i]);
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/_sub", dir);
  CHECK(mkdir(sub, 0777) == 0);
  const char *sorted[16];
  for (size_t i = 0; i < nn; i++) sorted[i] = names[i];
  sorted[nn] = "_sub";
  qsort(sorted, nn + 1, sizeof sorted[0], cmp_str);

  listed l = {0};
  CHECK_OK(s->list_from(s, dir, NULL, collect, &l, &err), &err);
  CHECK_EQ_INT(l.n, (int)nn + 1);
  CHECK_EQ_INT(l.n, count_entries(dir));
  for (int i = 0; i < l.n; i++) {
    char want[4300];
    snprintf(want, sizeof want, "%s/%s", dir, sorted[i]);
    CHECK_EQ_STR(l.names[i], want);
    struct stat sb;
    CHECK(stat(want, &sb) == 0);
    CHECK_EQ_INT(l.dirs[i], S_ISDIR(sb.st_mode) ? 1 : 0);
    CHECK_EQ_INT(l.mtimes[i], (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000);
    if (!l.dirs[i]) CHECK_EQ_INT(l.sizes[i], (int64_t)strlen(sorted[i]));
  }
  /* from a start name: exactly the names >= it, in order (start itself included) */
  const char *starts[] = {"00000000000000000002.json", "00000000000000000003", "", "zzz", "_"};
  for (size_t k = 0; k < DK_ARRAY_LEN(starts); k++) {
    listed f = {0};
    CHECK_OK(s->list_from(s, dir, starts[k], collect, &f, &err), &err);
    int j = 0;
    for (size_t i = 0; i <= nn; i++) {
      if (strcmp(sorted[i], starts[k]) < 0) continue;
      const char *base = strrchr(f.names[j], '/') + 1;
      CHECK_EQ_STR(base, sorted[i]);
      j++;
    }
    CHECK_EQ_INT(f.n, j);
  }
  /* a trailing slash on dir does not double the separator */
  char dirslash[4200];
  snprintf(dirslash, sizeof dirslash, "%s/", dir);
  listed t = {0};
  CHECK_OK(s->list_from(s, dirslash, "zzz", collect, &t, &err), &err);
  char want[4300];
  snprintf(want, sizeof want, "%s/%s", dir, sorted[nn]);
  CHECK_EQ_INT(t.n, 1);
  CHECK_EQ_STR(t.names[0], want);
  /* the callback's status stops the listing and is returned */
  listed c = {.stop_after = 3};
  CHECK_STATUS(s->list_from(s, dir, NULL, collect, &c, &err), DK_CANCELLED);
  CHECK_EQ_INT(c.n, 3);
  /* missing directory */
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/nope", dir);
  dk_error_init(&err);
  CHECK_STATUS(s->list_from(s, missing, NULL, collect, &c, &err), DK_NOT_FOUND);
  CHECK(strstr(err.message, missing) != NULL);
  s->free(s);
}

typedef struct golden_list {
  char prev[1024];
  int n;
  int bad;
} golden_list;

static dk_status check_order(const dk_file_info *info, void *payload) {
  golden_list *g = payload;
  const char *base = strrchr(info->path, '/') + 1;
  if (g->n && strcmp(g->prev, base) >= 0) g->bad++;
  snprintf(g->prev, sizeof g->prev, "%s", base);
  struct stat sb;
  if (stat(info->path, &sb) != 0 || sb.st_size != info->size) g->bad++;
  g->n++;
  return DK_OK;
}

DK_TEST(storage__list_golden_delta_logs) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  char root[4096];
  snprintf(root, sizeof root, "%s/delta-golden", dk_test_data_dir());
  DIR *d = opendir(root);
  CHECK(d != NULL);
  struct dirent *e;
  int tables = 0;
  while ((e = readdir(d))) {
    char log[4400];
    snprintf(log, sizeof log, "%s/%s/_delta_log", root, e->d_name);
    struct stat sb;
    if (e->d_name[0] == '.' || stat(log, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    golden_list g = {{0}, 0, 0};
    CHECK_OK(s->list_from(s, log, NULL, check_order, &g, &err), &err);
    CHECK_EQ_INT(g.bad, 0);
    CHECK_EQ_INT(g.n, count_entries(log));
    tables++;
  }
  closedir(d);
  CHECK(tables > 50);
  s->free(s);
}

DK_TEST(storage__read_and_ranges) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  const char *dir = dk_test_tmpdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/data.bin", dir);
  /* 1 MiB + 17 bytes of a known pattern */
  size_t n = (1u << 20) + 17;
  uint8_t *want = malloc(n);
  for (size_t i = 0; i < n; i++) want[i] = (uint8_t)(i * 131 + (i >> 11));
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(want, 1, n, f) == n);
  fclose(f);
  uint8_t *got;
  size_t len;
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK_EQ_INT(len, n);
  CHECK(memcmp(got, want, n) == 0);
  s->free_buf(s, got);
  /* ranges: start, middle, tail, empty, exact end */
  uint8_t buf[70000];
  int64_t offs[] = {0, 1, 4095, 65536, (int64_t)n - 70000, (int64_t)n - 1, (int64_t)n};
  size_t lens[] = {1, 70000, 4097, 0, 70000, 1, 0};
  for (size_t i = 0; i < DK_ARRAY_LEN(offs); i++) {
    CHECK_OK(s->read_range(s, path, offs[i], buf, lens[i], &err), &err);
    CHECK(memcmp(buf, want + offs[i], lens[i]) == 0);
  }
  /* past the end: corrupt, message names the path */
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, path, (int64_t)n - 10, buf, 11, &err), DK_CORRUPT);
  CHECK(strstr(err.message, path) != NULL);
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, path, (int64_t)n + 5, buf, 1, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, path, -1, buf, 1, &err), DK_INVALID);
  /* stat agrees with stat(2) */
  dk_file_info info;
  CHECK_OK(s->stat(s, path, &info, &err), &err);
  struct stat sb;
  CHECK(stat(path, &sb) == 0);
  CHECK_EQ_INT(info.size, (int64_t)n);
  CHECK_EQ_INT(info.mtime_ms, (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000);
  CHECK_EQ_INT(info.is_dir, 0);
  CHECK_OK(s->stat(s, dir, &info, &err), &err);
  CHECK_EQ_INT(info.is_dir, 1);
  /* empty file */
  snprintf(path, sizeof path, "%s/empty", dir);
  put_file(dir, "empty", "");
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK_EQ_INT(len, 0);
  CHECK(got != NULL);
  s->free_buf(s, got);
  /* missing files and directories */
  snprintf(path, sizeof path, "%s/missing.json", dir);
  dk_error_init(&err);
  CHECK_STATUS(s->read(s, path, &got, &len, &err), DK_NOT_FOUND);
  CHECK(strstr(err.message, path) != NULL);
  CHECK(got == NULL);
  dk_error_init(&err);
  CHECK_STATUS(s->read_range(s, path, 0, buf, 1, &err), DK_NOT_FOUND);
  dk_error_init(&err);
  CHECK_STATUS(s->stat(s, path, &info, &err), DK_NOT_FOUND);
  dk_error_init(&err);
  CHECK_STATUS(s->read(s, dir, &got, &len, &err), DK_IO);
  free(want);
  s->free(s);
}

DK_TEST(storage__write_replace_and_parents) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/new/table/_delta_log", dk_test_tmpdir());
  snprintf(path, sizeof path, "%s/_last_checkpoint", dir);
  CHECK_OK(s->write(s, path, "{\"version\":1}", 13, &err), &err);
  uint8_t *got;
  size_t len;
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK(len == 13 && memcmp(got, "{\"version\":1}", 13) == 0);
  s->free_buf(s, got);
  CHECK_OK(s->write(s, path, "{\"version\":22}", 14, &err), &err);
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK(len == 14 && memcmp(got, "{\"version\":22}", 14) == 0);
  s->free_buf(s, got);
  CHECK_OK(s->write(s, path, "", 0, &err), &err);
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK_EQ_INT(len, 0);
  s->free_buf(s, got);
  /* no temp files left behind */
  CHECK_EQ_INT(count_entries(dir), 1);
  /* the created file honours the umask like any open(0666) */
  mode_t um = umask(022);
  umask(um);
  struct stat sb;
  CHECK(stat(path, &sb) == 0);
  CHECK_EQ_INT(sb.st_mode & 0777, 0666 & ~um);
  /* remove */
  CHECK_OK(s->remove(s, path, &err), &err);
  dk_error_init(&err);
  CHECK_STATUS(s->remove(s, path, &err), DK_NOT_FOUND);
  CHECK_EQ_INT(count_entries(dir), 0);
  s->free(s);
}

DK_TEST(storage__put_if_absent_conflict) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/t/_delta_log", dk_test_tmpdir());
  snprintf(path, sizeof path, "%s/00000000000000000000.json", dir);
  CHECK_OK(s->put_if_absent(s, path, "first\n", 6, &err), &err);
  dk_error_init(&err);
  CHECK_STATUS(s->put_if_absent(s, path, "second\n", 7, &err), DK_CONFLICT);
  CHECK(strstr(err.message, path) != NULL);
  uint8_t *got;
  size_t len;
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  CHECK(len == 6 && memcmp(got, "first\n", 6) == 0);
  s->free_buf(s, got);
  CHECK_EQ_INT(count_entries(dir), 1); /* temp files removed on both paths */
  s->free(s);
}

typedef struct racer {
  dk_storage *s;
  const char *path;
  int id;
  dk_status st;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  char content[32];
  int n = snprintf(content, sizeof content, "writer %d\n", r->id);
  dk_error err = {0};
  r->st = r->s->put_if_absent(r->s, r->path, content, (size_t)n, &err);
  return NULL;
}

DK_TEST(storage__put_if_absent_race_one_winner) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  const char *dir = dk_test_tmpdir();
  for (int round = 0; round < 20; round++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%020d.json", dir, round);
    racer r[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
      r[i] = (racer){s, path, i, DK_INTERNAL};
      CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
    }
    int winners = 0, winner = -1;
    for (int i = 0; i < 8; i++) {
      pthread_join(th[i], NULL);
      if (r[i].st == DK_OK) {
        winners++;
        winner = i;
      } else {
        CHECK_EQ_INT(r[i].st, DK_CONFLICT);
      }
    }
    CHECK_EQ_INT(winners, 1);
    uint8_t *got;
    size_t len;
    CHECK_OK(s->read(s, path, &got, &len, &err), &err);
    char want[32];
    snprintf(want, sizeof want, "writer %d\n", winner);
    CHECK(len == strlen(want) && memcmp(got, want, len) == 0);
    s->free_buf(s, got);
  }
  CHECK_EQ_INT(count_entries(dir), 20);
  s->free(s);
}

/* every allocation goes through the given allocator and is returned */
typedef struct counting {
  long live;
  long total;
} counting;
static void *c_malloc(void *ctx, size_t n) {
  counting *c = ctx;
  c->live++;
  c->total++;
  return malloc(n);
}
static void *c_realloc(void *ctx, void *p, size_t n) {
  counting *c = ctx;
  if (!p) {
    c->live++;
    c->total++;
  }
  return realloc(p, n);
}
static void c_free(void *ctx, void *p) {
  counting *c = ctx;
  if (p) c->live--;
  free(p);
}

DK_TEST(storage__custom_allocator_balanced) {
  counting cnt = {0, 0};
  dk_allocator al = {&cnt, c_malloc, c_realloc, c_free};
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, &al, &err), &err);
  const char *dir = dk_test_tmpdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/x/y.json", dir);
  CHECK_OK(s->write(s, path, "abc", 3, &err), &err);
  snprintf(path, sizeof path, "%s/x/z.json", dir);
  CHECK_OK(s->put_if_absent(s, path, "abc", 3, &err), &err);
  uint8_t *got;
  size_t len;
  CHECK_OK(s->read(s, path, &got, &len, &err), &err);
  s->free_buf(s, got);
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/x", dir);
  listed l = {0};
  CHECK_OK(s->list_from(s, sub, NULL, collect, &l, &err), &err);
  CHECK_EQ_INT(l.n, 2);
  s->free(s);
  CHECK(cnt.total > 0);
  CHECK_EQ_INT(cnt.live, 0);
}

/* ---- version 2: streamed writes, batched ranges, map; the io sink over them ------------- */

#include "io/sink.h"

DK_TEST(storage__open_write_commit_abort) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  CHECK(s->version >= 2 && s->open_write && s->read_ranges && s->map && s->unmap);
  char dir[4096], path[4200], got[64];
  snprintf(dir, sizeof dir, "%s/w2/a/b", dk_test_tmpdir());
  snprintf(path, sizeof path, "%s/f.bin", dir);
  /* aborted: nothing under the final name, no temp file left in the (created) directory */
  dk_storage_writer *w;
  CHECK_OK(s->open_write(s, path, &w, &err), &err);
  CHECK_OK(w->write(w, "hello ", 6, &err), &err);
  w->abort(w);
  CHECK(access(path, F_OK) != 0);
  CHECK_EQ_INT(count_entries(dir), 0);
  /* committed in pieces: the bytes are the concatenation */
  CHECK_OK(s->open_write(s, path, &w, &err), &err);
  CHECK_OK(w->write(w, "hello ", 6, &err), &err);
  CHECK(access(path, F_OK) != 0); /* invisible before commit */
  CHECK_OK(w->write(w, "world", 5, &err), &err);
  CHECK_OK(w->commit(w, 1, &err), &err);
  CHECK_OK(s->read_range(s, path, 0, got, 11, &err), &err);
  CHECK(memcmp(got, "hello world", 11) == 0);
  CHECK_EQ_INT(count_entries(dir), 1);
  /* if_absent on an existing name: DK_CONFLICT, old content kept, temp removed */
  CHECK_OK(s->open_write(s, path, &w, &err), &err);
  CHECK_OK(w->write(w, "XX", 2, &err), &err);
  dk_error e2 = {0};
  CHECK_STATUS(w->commit(w, 1, &e2), DK_CONFLICT);
  CHECK_OK(s->read_range(s, path, 0, got, 11, &err), &err);
  CHECK(memcmp(got, "hello world", 11) == 0);
  CHECK_EQ_INT(count_entries(dir), 1);
  /* replace */
  CHECK_OK(s->open_write(s, path, &w, &err), &err);
  CHECK_OK(w->write(w, "XY", 2, &err), &err);
  CHECK_OK(w->commit(w, 0, &err), &err);
  dk_file_info fi;
  CHECK_OK(s->stat(s, path, &fi, &err), &err);
  CHECK_EQ_INT(fi.size, 2);
  s->free(s);
}

DK_TEST(storage__read_ranges_and_map) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  char path[4200];
  snprintf(path, sizeof path, "%s/ranges.bin", dk_test_tmpdir());
  uint8_t data[5000];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
  CHECK_OK(s->write(s, path, data, sizeof data, &err), &err);
  uint8_t a[10], b[100], c[1];
  dk_byte_range r[3] = {{4990, 10, a}, {0, 100, b}, {2500, 1, c}};
  CHECK_OK(s->read_ranges(s, path, r, 3, &err), &err);
  CHECK(memcmp(a, data + 4990, 10) == 0 && memcmp(b, data, 100) == 0 && c[0] == data[2500]);
  dk_byte_range past = {4995, 10, a};
  dk_error e2 = {0};
  CHECK_STATUS(s->read_ranges(s, path, &past, 1, &e2), DK_CORRUPT);
  const void *addr;
  size_t len;
  void *tok;
  CHECK_OK(s->map(s, path, &addr, &len, &tok, &err), &err);
  CHECK_EQ_INT(len, sizeof data);
  CHECK(memcmp(addr, data, sizeof data) == 0);
  s->unmap(s, tok);
  char empty[4200];
  snprintf(empty, sizeof empty, "%s/empty.bin", dk_test_tmpdir());
  CHECK_OK(s->write(s, empty, "", 0, &err), &err);
  CHECK_OK(s->map(s, empty, &addr, &len, &tok, &err), &err);
  CHECK(addr == NULL && len == 0);
  s->unmap(s, tok);
  dk_error e3 = {0};
  CHECK_STATUS(s->map(s, dk_test_tmpdir(), &addr, &len, &tok, &e3), DK_IO); /* a directory */
  s->free(s);
}

DK_TEST(storage__sink_chunks_and_v1_fallback) {
  dk_error err = {0};
  dk_storage *s;
  CHECK_OK(dk_storage_local_new(&s, NULL, &err), &err);
  char path[4200];
  snprintf(path, sizeof path, "%s/sink.bin", dk_test_tmpdir());
  /* 3 MiB in pieces of every size from 1 byte to 2 MiB: the file equals the stream */
  size_t total = 3u << 20;
  uint8_t *data = malloc(total);
  CHECK(data);
  for (size_t i = 0; i < total; i++) data[i] = (uint8_t)(i ^ (i >> 9));
  for (int v1 = 0; v1 < 2; v1++) {
    dk_storage old = *s; /* the same backend presented as version 1 */
    old.version = 1;
    dk__sink k;
    CHECK_OK(dk_io__sink_open(&k, v1 ? &old : s, path, NULL, &err), &err);
    size_t off = 0, step = 1;
    while (off < total) {
      size_t n = DK_MIN(step, total - off);
      CHECK_OK(dk_io__sink_write(&k, data + off, n, &err), &err);
      off += n;
      CHECK_EQ_INT(k.pos, (int64_t)off);
      step = step >= (2u << 20) ? 1 : step * 3 + 1;
    }
    CHECK_OK(dk_io__sink_commit(&k, 0, &err), &err);
    dk_io__sink_abort(&k); /* after commit: a no-op */
    uint8_t *back = malloc(total);
    CHECK(back);
    CHECK_OK(s->read_range(s, path, 0, back, total, &err), &err);
    int same = memcmp(back, data, total) == 0;
    free(back);
    CHECK(same);
  }
  free(data);
  s->free(s);
}
