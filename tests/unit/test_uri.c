/* test_uri.c — the path module's lower half (src/io/uri.c): percent-coding, URI splitting,
** table roots and the resolution of log paths to keys.
**
** Oracles: RFC 3986 (§2.1 percent-encoding, §3 the generic syntax, unreserved characters),
** RFC 8089 (file URIs: empty authority or "localhost"), and Python's urllib.parse.quote/unquote
** whose outputs for the vectors below were computed once and are written here as literals
** (quote(s, safe="/!$&'()*+,;=:@~") equals dk__pct_encode; unquote(quote(x)) == x). */
#include <limits.h>
#include <stdlib.h>

#include "dk/snapshot.h"
#include "io/uri.h"
#include "log/paths.h"
#include "storage_mem.h"
#include "test.h"

static const char *decode(dk_buf *b, const char *s, int flags, dk_status *st) {
  dk__buf_clear(b);
  *st = dk__pct_decode(b, s, strlen(s), flags, NULL);
  return b->data ? b->data : "";
}

DK_TEST(uri__percent_decode_vectors) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status st;
  /* urllib.parse.unquote */
  CHECK_EQ_STR(decode(&b, "a%20b", 0, &st), "a b");
  CHECK_EQ_STR(decode(&b, "%41%42%43", 0, &st), "ABC");
  CHECK_EQ_STR(decode(&b, "%e2%82%AC", 0, &st), "\xe2\x82\xac");
  CHECK_EQ_STR(decode(&b, "p=a%253Ab", 0, &st), "p=a%3Ab"); /* one level only */
  CHECK_EQ_STR(decode(&b, "plain", 0, &st), "plain");
  /* lenient: a bad escape stays as written (unquote does the same) */
  CHECK_EQ_STR(decode(&b, "100%", 0, &st), "100%");
  CHECK_EQ_STR(decode(&b, "a%2", 0, &st), "a%2");
  CHECK_EQ_STR(decode(&b, "a%zzb", 0, &st), "a%zzb");
  CHECK_EQ_STR(decode(&b, "%%41", 0, &st), "%A");
  /* %00 would cut a C string: lenient decoding keeps the NUL inside the length (which
   * dk_io__check_path_bytes refuses, so a path with it is corrupt, never a shorter path);
   * strict decoding refuses it */
  decode(&b, "a%00b", 0, &st);
  CHECK_EQ_INT(st, DK_OK);
  CHECK_EQ_INT(b.len, 3);
  CHECK(b.data[1] == 0 && b.data[2] == 'b');
  CHECK_EQ_INT(dk_io__check_path_bytes(b.data, b.len, "path", NULL), DK_CORRUPT);
  decode(&b, "a%00b", DK__PCT_STRICT, &st);
  CHECK_EQ_INT(st, DK_CORRUPT);
  decode(&b, "a%2", DK__PCT_STRICT, &st);
  CHECK_EQ_INT(st, DK_CORRUPT);
  decode(&b, "a%g0", DK__PCT_STRICT, &st);
  CHECK_EQ_INT(st, DK_CORRUPT);
  CHECK_EQ_STR(decode(&b, "x%2Fy%25", DK__PCT_STRICT, &st), "x/y%");
  CHECK_EQ_INT(st, DK_OK);
  /* the arena form agrees */
  char out[32];
  CHECK_EQ_INT(dk__pct_decode_into(out, "a%20b%", 6, 0), 4);
  CHECK_EQ_STR(out, "a b%");
  dk__buf_dispose(&b);
}

/* Every byte value at every position of paths of 1..19 bytes (the word-at-a-time test and
** the byte tail): refused exactly when it is below 0x20 or 0x7f, also beside bytes >= 0x80. */
DK_TEST(uri__check_path_bytes_every_byte) {
  char p[20];
  for (size_t n = 1; n < sizeof p; n++) {
    for (size_t at = 0; at < n; at++) {
      for (int c = 0; c < 256; c++) {
        for (size_t i = 0; i < n; i++) p[i] = (i % 3 == 0) ? (char)0xc3 : (i % 3 == 1) ? 'a' : '~';
        p[at] = (char)c;
        bool bad = c < 0x20 || c == 0x7f;
        dk_status st = dk_io__check_path_bytes(p, n, "path", NULL);
        if ((st == DK_CORRUPT) != bad) {
          CHECK_EQ_INT(st, bad ? DK_CORRUPT : DK_OK);
          return;
        }
      }
    }
  }
}

DK_TEST(uri__percent_encode_round_trip) {
  /* quote(s, safe="/!$&'()*+,;=:@~") */
  struct {
    const char *in, *out;
  } v[] = {
      {"/tmp/a b/c.parquet", "/tmp/a%20b/c.parquet"},
      {"p=100%/x", "p=100%25/x"},
      {"k=a:b,c/d", "k=a:b,c/d"},
      {"q?#[]\"<>\\^`{|}", "q%3F%23%5B%5D%22%3C%3E%5C%5E%60%7B%7C%7D"},
      {"\xc3\xa9t\xc3\xa9", "%C3%A9t%C3%A9"},
      {"-._~", "-._~"},
  };
  dk_buf e, d;
  dk__buf_init(&e, NULL);
  dk__buf_init(&d, NULL);
  for (size_t i = 0; i < DK_ARRAY_LEN(v); i++) {
    dk__buf_clear(&e);
    CHECK_OK(dk__pct_encode(&e, v[i].in, strlen(v[i].in), NULL), NULL);
    CHECK_EQ_STR(e.data, v[i].out);
    dk__buf_clear(&d);
    CHECK_OK(dk__pct_decode(&d, e.data, e.len, DK__PCT_STRICT, NULL), NULL);
    CHECK_EQ_STR(d.data, v[i].in);
  }
  /* every byte 1..255 survives encode + strict decode */
  char all[255];
  for (int i = 0; i < 255; i++) all[i] = (char)(i + 1);
  dk__buf_clear(&e);
  dk__buf_clear(&d);
  CHECK_OK(dk__pct_encode(&e, all, sizeof all, NULL), NULL);
  CHECK_OK(dk__pct_decode(&d, e.data, e.len, DK__PCT_STRICT, NULL), NULL);
  CHECK(d.len == sizeof all && !memcmp(d.data, all, sizeof all));
  dk__buf_dispose(&e);
  dk__buf_dispose(&d);
}

static void split(dk__uri *u, const char *s, bool *has) { *has = dk__uri_split(u, s, strlen(s)); }

#define CHECK_STR_N(dkstr, lit) CHECK((dkstr).len == strlen(lit) && !memcmp((dkstr).ptr, lit, (dkstr).len))

DK_TEST(uri__split_forms) {
  dk__uri u;
  bool has;
  split(&u, "s3://bucket/prefix/t", &has);
  CHECK(has);
  CHECK_STR_N(u.scheme, "s3");
  CHECK_STR_N(u.authority, "bucket");
  CHECK_STR_N(u.path, "/prefix/t");
  split(&u, "s3a://bucket", &has);
  CHECK(has);
  CHECK_STR_N(u.scheme, "s3a");
  CHECK_STR_N(u.authority, "bucket");
  CHECK_EQ_INT(u.path.len, 0);
  split(&u, "file:///tmp/x", &has);
  CHECK(has);
  CHECK_STR_N(u.scheme, "file");
  CHECK(u.authority.ptr && u.authority.len == 0);
  CHECK_STR_N(u.path, "/tmp/x");
  split(&u, "file:/tmp/x", &has);
  CHECK(has && !u.authority.ptr);
  CHECK_STR_N(u.path, "/tmp/x");
  split(&u, "FILE://localhost/tmp/x", &has);
  CHECK(has && dk__scheme_is(u.scheme, "file"));
  CHECK_STR_N(u.authority, "localhost");
  split(&u, "abfss://c@acct.dfs.core.windows.net/t", &has);
  CHECK(has);
  CHECK_STR_N(u.authority, "c@acct.dfs.core.windows.net");
  /* plain paths: no scheme */
  const char *plain[] = {"/abs/x", "rel/x", "a:b/c.parquet", "C:\\t", "x", "ts=2021-01-01 00:00:00/f",
                         "1a://b", ":x", ""};
  for (size_t i = 0; i < DK_ARRAY_LEN(plain); i++) {
    split(&u, plain[i], &has);
    CHECK(!has);
    CHECK(u.path.len == strlen(plain[i]));
  }
}

static dk_status canon(char **out, size_t *sl, const char *uri) {
  *out = NULL;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_io__root_canonical(out, sl, uri, NULL, &err);
  if (st && !err.message[0]) return DK_INTERNAL; /* an error must say why */
  return st;
}

DK_TEST(uri__table_roots) {
  struct {
    const char *in, *out;
    size_t scheme;
  } ok[] = {
      {"/data/t", "/data/t", 0},
      {"/data/t///", "/data/t", 0},
      {"/", "/", 0},
      {"rel/t/", "rel/t", 0},
      {"file:///data/t", "/data/t", 0},
      {"file:/data/t/", "/data/t", 0},
      {"file://localhost/data/t", "/data/t", 0},
      {"file:///data/a%20b", "/data/a b", 0},
      {"s3://bucket/prefix/t", "s3://bucket/prefix/t", 2},
      {"S3A://bucket/prefix/t/", "s3a://bucket/prefix/t", 3},
      {"s3://bucket", "s3://bucket", 2},
      {"s3://bucket/", "s3://bucket", 2},
      {"s3://bucket/my%20table", "s3://bucket/my table", 2},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(ok); i++) {
    char *c;
    size_t sl;
    CHECK_OK(canon(&c, &sl, ok[i].in), NULL);
    CHECK_EQ_STR(c, ok[i].out);
    CHECK_EQ_INT(sl, ok[i].scheme);
    dk__free(NULL, c);
  }
  char *c;
  size_t sl;
  CHECK_EQ_INT(canon(&c, &sl, ""), DK_INVALID);
  CHECK_EQ_INT(canon(&c, &sl, "file://otherhost/data/t"), DK_UNSUPPORTED);
  CHECK_EQ_INT(canon(&c, &sl, "file:rel"), DK_INVALID);
  CHECK_EQ_INT(canon(&c, &sl, "s3://bucket/a%zz"), DK_INVALID);
  CHECK(c == NULL);
}

typedef struct res {
  dk_status st;
  bool under;
  char key[256];
  char msg[256];
} res;

static res resolve_c(const char *root, const char *rel_dir, const char *path, int confine) {
  res r = {0};
  dk__root rt;
  dk_storage dummy = {.version = 2};
  dk_io__root_init(&rt, root, &dummy);
  rt.confine = confine;
  dk_buf key;
  dk__buf_init(&key, NULL);
  dk__loc loc;
  dk_error err;
  dk_error_init(&err);
  r.st = dk_io__resolve(&loc, &key, &rt, rel_dir, path, strlen(path), &err);
  r.under = loc.under_root;
  snprintf(r.key, sizeof r.key, "%s", key.data ? key.data : "");
  snprintf(r.msg, sizeof r.msg, "%s", err.message);
  dk__buf_dispose(&key);
  return r;
}

static res resolve(const char *root, const char *rel_dir, const char *path) {
  return resolve_c(root, rel_dir, path, 0);
}

/* Path confinement (issue 18, item 3): what dk_io__resolve refuses with r->confine set, and
 * what it still resolves. */
DK_TEST(uri__resolve_confined) {
  static const char *refused[] = {"../u/x.parquet", "a/../../u/x.parquet", "a/./x.parquet",
                                  "/data/other/x.parquet", "/data/tt/x.parquet",
                                  "file:///data/u/x.parquet", "file://localhost/x.parquet",
                                  "/data/t", "/data/t/", "/data/t/../t/x.parquet"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    res r = resolve_c("/data/t", NULL, refused[i], 1);
    CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
    CHECK(strstr(r.msg, "outside the table root /data/t") != NULL);
    CHECK_EQ_INT(resolve_c("/data/t", NULL, refused[i], 0).st, DK_OK);
  }
  static const char *allowed[] = {"x.parquet", "p=a b/x.parquet", "/data/t/x.parquet",
                                  "file:///data/t/p=1/x.parquet", "file:/data/t/x.parquet",
                                  "..x/y.parquet", "a..b.parquet"};
  for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++) {
    res r = resolve_c("/data/t", NULL, allowed[i], 1);
    CHECK_OK(r.st, NULL);
    CHECK(r.under);
  }
  /* sidecars: below _delta_log/_sidecars, not merely below the root */
  CHECK_OK(resolve_c("/data/t", "_delta_log/_sidecars", "s.parquet", 1).st, NULL);
  CHECK_OK(resolve_c("/data/t", "_delta_log/_sidecars", "/data/t/_delta_log/_sidecars/s.parquet",
                     1).st, NULL);
  res r = resolve_c("/data/t", "_delta_log/_sidecars", "../s.parquet", 1);
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  CHECK(strstr(r.msg, "/data/t/_delta_log/_sidecars") != NULL);
  CHECK_EQ_INT(resolve_c("/data/t", "_delta_log/_sidecars", "/data/t/x.parquet", 1).st,
               DK_UNSUPPORTED);
  CHECK_EQ_INT(resolve_c("/data/t", "_delta_log/_sidecars", "../s.parquet", 0).st, DK_OK);
  /* object stores: the same store outside the root's prefix */
  CHECK_OK(resolve_c("s3://b/pre/t", NULL, "s3a://b/pre/t/x.parquet", 1).st, NULL);
  CHECK_EQ_INT(resolve_c("s3://b/pre/t", NULL, "s3://b/pre/u/x.parquet", 1).st, DK_UNSUPPORTED);
  CHECK_EQ_INT(resolve_c("s3://b/pre/t", NULL, "s3://other/pre/t/x.parquet", 1).st,
               DK_UNSUPPORTED);
  /* control bytes are corrupt with or without confinement */
  for (int c = 0; c < 2; c++) {
    CHECK_EQ_INT(resolve_c("/data/t", NULL, "a\x01b", c).st, DK_CORRUPT);
    CHECK_EQ_INT(resolve_c("/data/t", NULL, "a\x7f", c).st, DK_CORRUPT);
  }
}

DK_TEST(uri__resolve_local_root) {
  res r = resolve("/data/t", NULL, "part-0.parquet");
  CHECK_OK(r.st, NULL);
  CHECK_EQ_STR(r.key, "/data/t/part-0.parquet");
  CHECK(r.under);
  r = resolve("/data/t", NULL, "p=a b/part 0.parquet"); /* decoded paths are used as they are */
  CHECK_EQ_STR(r.key, "/data/t/p=a b/part 0.parquet");
  r = resolve("/data/t", "_delta_log/_sidecars", "s1.parquet");
  CHECK_EQ_STR(r.key, "/data/t/_delta_log/_sidecars/s1.parquet");
  CHECK(r.under);
  r = resolve("/data/t", NULL, "/data/t/x.parquet");
  CHECK_EQ_STR(r.key, "/data/t/x.parquet");
  CHECK(r.under);
  r = resolve("/data/t", NULL, "/data/other/x.parquet");
  CHECK_OK(r.st, NULL);
  CHECK(!r.under);
  r = resolve("/data/t", NULL, "/data/tt/x.parquet"); /* a sibling sharing the prefix */
  CHECK(!r.under);
  r = resolve("/data/t", NULL, "../u/x.parquet");
  CHECK_OK(r.st, NULL);
  CHECK(!r.under);
  r = resolve("/data/t", NULL, "a/../../u/x.parquet");
  CHECK(!r.under);
  r = resolve("/", NULL, "x.parquet");
  CHECK_EQ_STR(r.key, "/x.parquet");
  CHECK(r.under);
  r = resolve("/data/t", NULL, "file:///data/t/x.parquet");
  CHECK_EQ_STR(r.key, "/data/t/x.parquet");
  CHECK(r.under);
  r = resolve("/data/t", NULL, "file:/elsewhere/x.parquet");
  CHECK_EQ_STR(r.key, "/elsewhere/x.parquet");
  r = resolve("/data/t", NULL, "file://localhost/x.parquet");
  CHECK_EQ_STR(r.key, "/x.parquet");
  r = resolve("/data/t", NULL, "file://otherhost/x.parquet");
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  CHECK(strstr(r.msg, "otherhost"));
  r = resolve("/data/t", NULL, "s3://bucket/x.parquet");
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  CHECK(strstr(r.msg, "'s3'"));
  r = resolve("/data/t", NULL, "");
  CHECK_EQ_INT(r.st, DK_CORRUPT);
}

DK_TEST(uri__resolve_object_store_root) {
  res r = resolve("s3://bucket/pre/t", NULL, "part-0.parquet");
  CHECK_OK(r.st, NULL);
  CHECK_EQ_STR(r.key, "s3://bucket/pre/t/part-0.parquet");
  CHECK(r.under);
  r = resolve("s3://bucket/pre/t", "_delta_log/_sidecars", "s.parquet");
  CHECK_EQ_STR(r.key, "s3://bucket/pre/t/_delta_log/_sidecars/s.parquet");
  r = resolve("s3://bucket/pre/t", NULL, "s3://bucket/pre/t/x.parquet");
  CHECK_EQ_STR(r.key, "s3://bucket/pre/t/x.parquet");
  CHECK(r.under);
  r = resolve("s3://bucket/pre/t", NULL, "s3a://other/x.parquet"); /* s3a is the same store */
  CHECK_OK(r.st, NULL);
  CHECK_EQ_STR(r.key, "s3a://other/x.parquet");
  CHECK(!r.under);
  /* a scheme-less absolute path is local (Delta qualifies it against the default filesystem) */
  r = resolve("s3://bucket/pre/t", NULL, "/pre/t/y.parquet");
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  r = resolve("s3://bucket/pre/t", NULL, "file:///tmp/x.parquet");
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  r = resolve("s3://bucket/pre/t", NULL, "gs://bucket/x.parquet");
  CHECK_EQ_INT(r.st, DK_UNSUPPORTED);
  CHECK(strstr(r.msg, "'gs'"));
  r = resolve("s3://bucket", NULL, "x.parquet");
  CHECK_EQ_STR(r.key, "s3://bucket/x.parquet");
  CHECK(r.under);
}

DK_TEST(uri__key_uri) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  CHECK_OK(dk_io__key_uri(&b, "/tmp/a b/p=1%/x.parquet", NULL), NULL);
  CHECK_EQ_STR(b.data, "file:///tmp/a%20b/p=1%25/x.parquet");
  dk__buf_clear(&b);
  CHECK_OK(dk_io__key_uri(&b, "s3://bucket/a b/x.parquet", NULL), NULL);
  CHECK_EQ_STR(b.data, "s3://bucket/a%20b/x.parquet");
  dk__buf_dispose(&b);
}

DK_TEST(uri__storage_check) {
  dk_error err;
  dk_error_init(&err);
  dk_storage s = {0};
  CHECK_EQ_INT(dk_io__storage_check(&s, "test", &err), DK_INVALID);
  CHECK(strstr(err.message, "version 0"));
  dk_storage *loc;
  CHECK_OK(dk_storage_local_new(&loc, NULL, NULL), NULL);
  CHECK_OK(dk_io__storage_check(loc, "test", NULL), NULL);
  dk_storage v1 = *loc;
  v1.version = 1;
  CHECK_OK(dk_io__storage_check(&v1, "test", NULL), NULL);
  CHECK(!DK_IO_HAS_V2(&v1, read_ranges) && DK_IO_HAS_V2(loc, read_ranges));
  v1.read = NULL;
  dk_error_init(&err);
  CHECK_EQ_INT(dk_io__storage_check(&v1, "test", &err), DK_INVALID);
  loc->free(loc);
}

/* ---- the corpus's special-character tables ------------------------------------------------ */

static void real_table(char *out, size_t cap, const char *rel) {
  char joined[PATH_MAX];
  snprintf(joined, sizeof joined, "%s/%s", dk_test_data_dir(), rel);
  char *r = realpath(joined, NULL);
  snprintf(out, cap, "%s", r ? r : joined);
  free(r);
}

/* Opens rel through a memory copy under its real path; the caller frees m, t, s. */
static dk_status open_mem(dk_mem_storage **m, dk_table **t, dk_snapshot **s, const char *root,
                          dk_error *err) {
  *t = NULL;
  *s = NULL;
  DK_RETURN_NOT_OK(dk_mem_new(m, err));
  DK_RETURN_NOT_OK(dk_mem_load_dir(*m, root, root, err));
  dk_table_options o = {DK_TABLE_OPTIONS_VERSION, NULL, dk_mem_storage_of(*m), 1, 0};
  DK_RETURN_NOT_OK(dk_table_open(t, root, &o, err));
  return dk_snapshot_open(s, *t, NULL, err);
}

DK_TEST(uri__corpus_escaped_partition_directories) {
  /* the log writes "_2=bar+%252521/part-...": one level of percent-decoding gives the
  ** directory Spark created on disk, "_2=bar+%2521" (Spark escaped '!' as %21 in the
  ** partition value, and the URI encoding escaped that '%') */
  char root[PATH_MAX];
  real_table(root, sizeof root, "delta-golden/data-reader-escaped-chars");
  dk_error err;
  dk_error_init(&err);
  dk_mem_storage *m;
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_mem(&m, &t, &s, root, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 3);
  dk__root r;
  dk_io__root_init(&r, dk_table_root(t), dk_mem_storage_of(m));
  dk_buf key, uri;
  dk__buf_init(&key, NULL);
  dk__buf_init(&uri, NULL);
  int found = 0;
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry f;
    CHECK_OK(dk_snapshot_file(&f, s, i, &err), &err);
    CHECK(!strncmp(f.path, "_2=bar+%252", 11));
    dk__loc loc;
    CHECK_OK(dk_log__data_key(&loc, &key, &r, f.path, &err), &err);
    CHECK(loc.under_root);
    found += dk_mem_get(m, key.data, NULL) != NULL; /* the file as stored */
    char via_api[PATH_MAX];
    dk_snapshot_file_path(via_api, sizeof via_api, s, &f);
    CHECK_EQ_STR(via_api, key.data);
    /* and back: the URI encodes the '%' again, so decoding it gives the key */
    dk__buf_clear(&uri);
    CHECK_OK(dk_io__key_uri(&uri, key.data, &err), &err);
    CHECK(strstr(uri.data, "_2=bar+%252"));
    dk_buf back;
    dk__buf_init(&back, NULL);
    CHECK_OK(dk__pct_decode(&back, uri.data + 7, uri.len - 7, DK__PCT_STRICT, &err), &err);
    CHECK_EQ_STR(back.data, key.data);
    dk__buf_dispose(&back);
  }
  CHECK_EQ_INT(found, 3);
  dk__buf_dispose(&key);
  dk__buf_dispose(&uri);
  dk_snapshot_free(s);
  dk_table_free(t);
  dk_mem_free(m);
}

DK_TEST(uri__corpus_special_characters_and_canonical_spellings) {
  /* log-replay-special-characters-a: add then remove of "special%20p@%23h" */
  char root[PATH_MAX];
  dk_error err;
  dk_error_init(&err);
  dk_mem_storage *m;
  dk_table *t;
  dk_snapshot *s;
  real_table(root, sizeof root, "delta-golden/log-replay-special-characters");
  CHECK_OK(open_mem(&m, &t, &s, root, &err), &err);
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry f;
    CHECK_OK(dk_snapshot_file(&f, s, i, &err), &err);
    CHECK(!strchr(f.path, '%')); /* decoded */
  }
  for (int64_t i = 0; i < dk_snapshot_num_tombstones(s); i++) {
    dk_tombstone tb;
    CHECK_OK(dk_snapshot_tombstone(&tb, s, i, &err), &err);
    CHECK(!strchr(tb.path, '%'));
  }
  dk_snapshot_free(s);
  dk_table_free(t);
  dk_mem_free(m);
  /* canonicalized-paths-special-a: "file:/some/unqualified/with%20space/p@%23h" added, the
  ** plain "/some/unqualified/with%20space/p@%23h" removed: the same file, so none is left */
  real_table(root, sizeof root, "delta-golden/canonicalized-paths-special-a");
  CHECK_OK(open_mem(&m, &t, &s, root, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 0);
  CHECK(dk_snapshot_num_tombstones(s) >= 1);
  dk_tombstone tb;
  CHECK_OK(dk_snapshot_tombstone(&tb, s, 0, &err), &err);
  CHECK_EQ_STR(tb.path, "/some/unqualified/with space/p@#h");
  dk_snapshot_free(s);
  dk_table_free(t);
  dk_mem_free(m);
  /* the arena decoder as replay uses it, on the spellings of these tables */
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  const char *cases[][3] = {
      {"/t", "file:/some/unqualified/with%20space/p@%23h", "/some/unqualified/with space/p@#h"},
      {"/t", "file:///t/special%20p@%23h", "special p@#h"},
      {"/t", "file://localhost/t/a", "a"},
      {"/t", "file://host/t/a", "file://host/t/a"}, /* kept: reading it is refused */
      {"s3://b/t", "s3://b/t/p%3D1/x.parquet", "p=1/x.parquet"},
      {"s3://b/t", "s3://b/other/x", "s3://b/other/x"},
      {"s3://b/t", "file:///x%20y", "/x y"}, /* local on any table: meets "/x y" */
      {"/t", "/tt/x", "/tt/x"},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(cases); i++) {
    const char *out;
    size_t ol;
    CHECK_OK(dk_log__canonical_path(&out, &ol, &ar, cases[i][0], strlen(cases[i][0]), cases[i][1],
                                    strlen(cases[i][1]), &err),
             &err);
    CHECK(ol == strlen(cases[i][2]) && !memcmp(out, cases[i][2], ol));
  }
  dk__arena_dispose(&ar);
}

DK_TEST(uri__log_file_names) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk__logfile lf;
  struct {
    dk_status (*fn)(dk_buf *, int64_t, dk_error *);
    int64_t v;
    const char *name;
    int kind;
  } simple[] = {
      {dk_log__name_commit, 0, "00000000000000000000.json", DK__LF_COMMIT},
      {dk_log__name_commit, 123456789012, "00000000123456789012.json", DK__LF_COMMIT},
      {dk_log__name_checkpoint, 10, "00000000000000000010.checkpoint.parquet", DK__LF_CP_CLASSIC},
      {dk_log__name_crc, 7, "00000000000000000007.crc", DK__LF_CRC},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(simple); i++) {
    dk__buf_clear(&b);
    CHECK_OK(simple[i].fn(&b, simple[i].v, NULL), NULL);
    CHECK_EQ_STR(b.data, simple[i].name);
    CHECK(dk_log__parse_name(b.data, &lf) && lf.kind == simple[i].kind && lf.version == simple[i].v);
  }
  /* the names of the corpus's multi-part and V2 checkpoints and sidecars */
  dk__buf_clear(&b);
  CHECK_OK(dk_log__name_checkpoint_part(&b, 1, 2, 2, NULL), NULL);
  CHECK_EQ_STR(b.data, "00000000000000000001.checkpoint.0000000002.0000000002.parquet");
  CHECK(dk_log__parse_name(b.data, &lf) && lf.kind == DK__LF_CP_MULTI && lf.part == 2 && lf.nparts == 2);
  dk__buf_clear(&b);
  CHECK_OK(dk_log__name_checkpoint_v2(&b, 2, "e8fa2696-9728-4e9c-b285-634743fdd4fb", true, NULL), NULL);
  CHECK_EQ_STR(b.data, "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet");
  CHECK(dk_log__parse_name(b.data, &lf) && lf.kind == DK__LF_CP_V2_PARQUET);
  dk__buf_clear(&b);
  CHECK_OK(dk_log__name_checkpoint_v2(&b, 2, "e8fa2696-9728-4e9c-b285-634743fdd4fb", false, NULL), NULL);
  CHECK(dk_log__parse_name(b.data, &lf) && lf.kind == DK__LF_CP_V2_JSON);
  dk__buf_clear(&b);
  CHECK_OK(dk_log__name_compaction(&b, 3, 7, NULL), NULL);
  CHECK_EQ_STR(b.data, "00000000000000000003.00000000000000000007.compacted.json");
  CHECK(dk_log__parse_name(b.data, &lf) && lf.kind == DK__LF_COMPACTION && lf.version_hi == 7);
  CHECK_EQ_INT(dk_log__name_compaction(&b, 7, 3, NULL), DK_INVALID);
  CHECK_EQ_INT(dk_log__name_checkpoint_part(&b, 1, 3, 2, NULL), DK_INVALID);
  CHECK_EQ_INT(dk_log__name_checkpoint_v2(&b, 1, "a.b", false, NULL), DK_INVALID);
  /* keys */
  CHECK_OK(dk_log__file_key(&b, "/data/t", DK_LOG__LAST_CHECKPOINT, NULL), NULL);
  CHECK_EQ_STR(b.data, "/data/t/_delta_log/_last_checkpoint");
  CHECK_OK(dk_log__dir_key(&b, "s3://bucket/t", NULL), NULL);
  CHECK_EQ_STR(b.data, "s3://bucket/t/_delta_log");
  CHECK_OK(dk_log__file_key(&b, "/", "00000000000000000000.json", NULL), NULL);
  CHECK_EQ_STR(b.data, "/_delta_log/00000000000000000000.json");
  dk__root r;
  dk_storage dummy = {.version = 2};
  dk_io__root_init(&r, "s3://bucket/t", &dummy);
  dk__loc loc;
  const char *side = "00000000000000000002.checkpoint.0000000001.0000000002.055454d8-329c-4e0e-864d-7f867075af33.parquet";
  CHECK_OK(dk_log__sidecar_key(&loc, &b, &r, side, strlen(side), NULL), NULL);
  CHECK_EQ_STR(b.data, "s3://bucket/t/_delta_log/_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.055454d8-329c-4e0e-864d-7f867075af33.parquet");
  CHECK(loc.under_root && loc.sto == &dummy);
  /* a very long root: no fixed buffer limits a key any more */
  char big[9000];
  memset(big, 'a', sizeof big - 1);
  big[0] = '/';
  big[sizeof big - 1] = 0;
  CHECK_OK(dk_log__file_key(&b, big, "00000000000000000000.json", NULL), NULL);
  CHECK_EQ_INT(b.len, sizeof big - 1 + strlen("/_delta_log/00000000000000000000.json"));
  dk__buf_dispose(&b);
}
