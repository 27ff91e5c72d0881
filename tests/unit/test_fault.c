/* test_fault.c — the seam between libdk and its storage, tested from the outside with the
** in-memory backend of storage_mem.c (SQLite's VFS fault tests and libgit2's fake ODB
** backends are the models):
**
**   1. golden equivalence: every case of the corpus manifest (../shared/testdata/manifest.json)
**      answers the same through the memory backend as through the local one — the same keys
**      (the table's real path), and the table put under "s3://golden/<case>" (the object-store
**      URI form: whole URIs as keys, no mapping, coalesced reads). An answer is the status of
**      open + snapshot, and the snapshot (version, timestamp, protocol, metadata, every active
**      file with its stats, partition values, DV and row tracking, tombstones, app txns) plus,
**      for read cases, every row of a full scan as dk's JSON text (a multiset). The oracle is
**      the local backend, itself checked against the manifest's expected answers by
**      test_log_golden.c and tests/python.
**   2. fail-every-call: for N = 1, 2, ... the Nth storage call (of any operation) fails, over
**      table open + snapshot load, a scan, and reading every split; each run must end in a
**      clean error (status != OK, message set) or the correct answer, with no leak (ASan's
**      LeakSanitizer over the whole run, and the counting allocator here) and no hang; the
**      loop ends at the first N past the last call. The same with short reads.
**   3. fail-Nth-allocation: the same operations with an allocator failing its Nth call.
*/
#include <stdlib.h>

#include "arrow/array.h"
#include "codec/json/json.h"
#include "dk/arrow_json.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "storage_mem.h"
#include "test.h"
#include "util/util.h"

enum { A_SNAPSHOT = 1, A_SCAN = 2, A_SPLITS = 4, A_META_ONLY = 8 };

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends every row of stream st as a JSON line, the lines sorted (rows are a multiset). */
static dk_status drain_rows(dk_buf *out, struct ArrowArrayStream *st, const dk_allocator *a,
                            dk_error *err) {
  struct ArrowSchema sc;
  memset(&sc, 0, sizeof sc);
  if (st->get_schema(st, &sc))
    return dk__error_set(err, DK_IO, "get_schema: %s", st->get_last_error(st));
  dk_arrow_json *enc = NULL;
  dk_status s = dk_arrow_json_new(&enc, &sc, a, err);
  dk_buf text, offs;
  dk__buf_init(&text, NULL);
  dk__buf_init(&offs, NULL);
  while (!s) {
    struct ArrowArray arr;
    memset(&arr, 0, sizeof arr);
    int rc = st->get_next(st, &arr);
    if (rc) { /* the Arrow stream speaks errno */
      const char *m = st->get_last_error(st);
      s = dk__error_set(err, dk__stream_status(st, rc), "get_next: %s", m ? m : "(no message)");
      break;
    }
    if (!arr.release) break;
    for (int64_t i = 0; !s && i < arr.length; i++) {
      dk_str t;
      size_t at = text.len;
      s = dk_arrow_json_value(&t, enc, &arr, i, err);
      if (!s) s = dk__buf_append(&text, t.ptr, t.len, err);
      if (!s) s = dk__buf_putc(&text, 0, err);
      if (!s) s = dk__buf_append(&offs, &at, sizeof at, err);
    }
    arr.release(&arr);
  }
  if (!s) {
    size_t n = offs.len / sizeof(size_t);
    const char **lines = malloc((n ? n : 1) * sizeof *lines);
    for (size_t i = 0; i < n; i++) lines[i] = text.data + ((size_t *)(void *)offs.data)[i];
    qsort(lines, n, sizeof *lines, cmp_line);
    for (size_t i = 0; !s && i < n; i++) s = dk__buf_printf(out, err, "%s\n", lines[i]);
    free(lines);
  }
  dk__buf_dispose(&text);
  dk__buf_dispose(&offs);
  dk_arrow_json_free(enc);
  if (sc.release) sc.release(&sc);
  return s;
}

static void put_strs(dk_buf *b, const char *what, const char *const *v, size_t n) {
  dk__buf_printf(b, NULL, "%s:", what);
  for (size_t i = 0; i < n; i++) dk__buf_printf(b, NULL, " %s", v[i] ? v[i] : "(null)");
  dk__buf_putc(b, '\n', NULL);
}

/* with_files = 0: what a metadata-only snapshot answers, the same whether it came from N.crc
** or (the checksum file unusable) from a full replay. */
static dk_status snapshot_text(dk_buf *b, const dk_snapshot *s, int with_files, dk_error *err) {
  dk__buf_printf(b, NULL, "version %lld ts %lld files %lld bytes %lld\n",
                 (long long)dk_snapshot_version(s), (long long)dk_snapshot_timestamp(s),
                 (long long)dk_snapshot_num_files(s), (long long)dk_snapshot_total_bytes(s));
  const dk_protocol *p = dk_snapshot_protocol(s);
  dk__buf_printf(b, NULL, "protocol %d/%d\n", (int)p->min_reader_version, (int)p->min_writer_version);
  put_strs(b, "reader features", p->reader_features, p->n_reader_features);
  put_strs(b, "writer features", p->writer_features, p->n_writer_features);
  const dk_metadata *m = dk_snapshot_metadata(s);
  dk__buf_printf(b, NULL, "metadata %s %s %s %lld\n%s\n", m->id ? m->id : "-", m->name ? m->name : "-",
                 m->format_provider ? m->format_provider : "-", (long long)m->created_time,
                 m->schema_string ? m->schema_string : "-");
  put_strs(b, "partition columns", m->partition_columns, m->n_partition_columns);
  for (size_t i = 0; i < m->n_configuration; i++)
    dk__buf_printf(b, NULL, "conf %s=%s\n", m->config_keys[i], m->config_values[i]);
  if (with_files && dk_snapshot_has_file_list(s)) {
    dk_file_iter *it;
    DK_RETURN_NOT_OK(dk_snapshot_files_open(&it, s, NULL, err));
    for (;;) {
      const dk_file_entry *fe;
      dk_status fs = dk_file_iter_next(&fe, it, err);
      if (fs != DK_OK || !fe) {
        dk_file_iter_free(it);
        DK_RETURN_NOT_OK(fs);
        break;
      }
      dk_file_entry f = *fe;
      dk__buf_printf(b, NULL, "file %s %lld %lld", f.path, (long long)f.size,
                     (long long)f.modification_time);
      for (size_t k = 0; k < f.n_partition_values; k++)
        dk__buf_printf(b, NULL, " %s=%s", f.partition_kv[2 * k],
                       f.partition_kv[2 * k + 1] ? f.partition_kv[2 * k + 1] : "(null)");
      if (f.dv)
        dk__buf_printf(b, NULL, " dv:%c:%s:%d:%d:%lld", f.dv->storage_type, f.dv->path_or_inline_dv,
                       (int)f.dv->offset, (int)f.dv->size_in_bytes, (long long)f.dv->cardinality);
      if (f.has_base_row_id) dk__buf_printf(b, NULL, " brid %lld", (long long)f.base_row_id);
      if (f.has_default_row_commit_version)
        dk__buf_printf(b, NULL, " drcv %lld", (long long)f.default_row_commit_version);
      dk__buf_printf(b, NULL, " tags %s stats %s\n", f.tags_json ? f.tags_json : "-",
                     f.stats ? f.stats : "-");
    }
    for (int64_t i = 0; i < dk_snapshot_num_tombstones(s); i++) {
      dk_tombstone t;
      DK_RETURN_NOT_OK(dk_snapshot_tombstone(&t, s, i, err));
      dk__buf_printf(b, NULL, "tomb %s %lld %lld %d\n", t.path, (long long)t.deletion_timestamp,
                     (long long)t.size, t.data_change);
    }
  }
  for (size_t i = 0; i < dk_snapshot_num_txns(s); i++) {
    const char *app;
    int64_t v, lu;
    dk_snapshot_txn(&app, &v, &lu, s, i);
    dk__buf_printf(b, NULL, "txn %s %lld %lld\n", app, (long long)v, (long long)lu);
  }
  return b->data || !b->len ? DK_OK : DK_NOMEM;
}

/* The answer of one case: open + snapshot (+ scan rows, + every split's rows) as text. The
** text is only meaningful when DK_OK is returned. */
static dk_status answer(dk_buf *out, const char *root, dk_storage *sto, const dk_allocator *a,
                        int64_t version, int what, dk_error *err) {
  dk__buf_clear(out);
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, a, sto, 1, 0};
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  dk_scan *scan = NULL;
  dk_status st = dk_table_open(&t, root, &to, err);
  if (!st) {
    dk_snapshot_options so = {DK_SNAPSHOT_OPTIONS_VERSION, version, 0, 0, !!(what & A_META_ONLY)};
    st = dk_snapshot_open(&s, t, &so, err);
  }
  if (!st) st = snapshot_text(out, s, !(what & A_META_ONLY), err);
  if (!st && (what & (A_SCAN | A_SPLITS))) {
    dk_scan_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_SCAN_OPTIONS_VERSION;
    o.limit = -1;
    o.split_target_bytes = 4096; /* several splits even for small files */
    o.split_open_cost_bytes = 1;
    st = dk_scan_new(&scan, s, &o, err);
  }
  if (!st && (what & A_SCAN)) {
    struct ArrowArrayStream rs;
    memset(&rs, 0, sizeof rs);
    st = dk_scan_read(&rs, scan, err);
    if (!st) {
      dk__buf_puts(out, "-- scan\n", NULL);
      st = drain_rows(out, &rs, a, err);
      rs.release(&rs);
    }
  }
  if (!st && (what & A_SPLITS)) {
    st = dk_scan_plan_splits(scan, err);
    dk_buf rows;
    dk__buf_init(&rows, NULL);
    for (int64_t i = 0; !st && i < dk_scan_num_splits(scan); i++) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      st = dk_scan_split_serialize(&bytes, &len, scan, i, err);
      if (st) break;
      dk_split_read_options ro = {DK_SPLIT_READ_OPTIONS_VERSION, a, sto};
      struct ArrowArrayStream rs;
      memset(&rs, 0, sizeof rs);
      st = dk_split_read_v2(&rs, bytes, len, &ro, err);
      dk_free(bytes);
      if (!st) {
        dk__buf_printf(&rows, NULL, "-- split %lld\n", (long long)i);
        st = drain_rows(&rows, &rs, a, err);
        rs.release(&rs);
      }
    }
    if (!st) st = dk__buf_append(out, rows.data ? rows.data : "", rows.len, err);
    dk__buf_dispose(&rows);
  }
  dk_scan_free(scan);
  dk_snapshot_free(s);
  dk_table_free(t);
  if (st && err && !err->message[0]) return DK_INTERNAL; /* an error must say why */
  return st;
}

/* ---- the manifest ------------------------------------------------------------------------- */

typedef struct gcase {
  char id[256];
  char table[512]; /* absolute, symlinks resolved */
  char rel[256];   /* as in the manifest */
  char kind[32];
  int64_t version;
} gcase;

static int load_cases(gcase **out) {
  *out = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.json", dk_test_data_dir());
  char *text;
  size_t len;
  if (dk__read_file(NULL, path, &text, &len, NULL) != DK_OK) return -1;
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_json_value *root;
  int n = -1;
  if (dk__json_parse(&root, &ar, text, len, NULL) == DK_OK) {
    const dk_json_value *cases = dk__json_get(root, "cases");
    n = 0;
    *out = calloc(cases ? cases->len + 1 : 1, sizeof **out);
    for (uint32_t i = 0; cases && i < cases->len; i++) {
      const dk_json_value *c = &cases->u.items[i];
      size_t l;
      const char *id = dk__json_as_str(dk__json_get(c, "id"), &l);
      const char *tb = dk__json_as_str(dk__json_get(c, "table"), &l);
      const char *kd = dk__json_as_str(dk__json_get(c, "kind"), &l);
      if (!id || !tb || !kd) continue;
      gcase *g = &(*out)[n];
      snprintf(g->id, sizeof g->id, "%s", id);
      snprintf(g->rel, sizeof g->rel, "%.*s", (int)strcspn(tb, "\""), tb);
      snprintf(g->kind, sizeof g->kind, "%.*s", (int)strcspn(kd, "\""), kd);
      const char *tbl = dk__json_as_str(dk__json_get(c, "table"), &l);
      char joined[1024];
      snprintf(joined, sizeof joined, "%s/%.*s", dk_test_data_dir(), (int)l, tbl);
      char *real = realpath(joined, NULL);
      snprintf(g->table, sizeof g->table, "%s", real ? real : joined);
      free(real);
      g->version = -1;
      dk__json_as_i64(dk__json_get(c, "version"), &g->version);
      n++;
    }
  }
  dk__arena_dispose(&ar);
  free(text);
  return n;
}

/* Whether a local answer names a file or tombstone by an absolute local path. */
static bool has_absolute_path(const char *answer) {
  static const char *const tags[] = {"\nfile ", "\ntomb "};
  for (size_t k = 0; k < 2; k++)
    for (const char *p = answer; (p = strstr(p, tags[k])); p += 6)
      if (p[6] == '/' || !strncmp(p + 6, "file:", 5)) return true;
  return false;
}

DK_TEST(fault__golden_tables_through_memory_backend) {
  gcase *cases;
  int n = load_cases(&cases);
  CHECK(n > 100);
  int compared = 0, s3_compared = 0, s3_refused = 0, failures = 0;
  dk_buf want, got;
  dk__buf_init(&want, NULL);
  dk__buf_init(&got, NULL);
  for (int i = 0; i < n; i++) {
    const gcase *g = &cases[i];
    /* 1M-row summary cases: the snapshot only (their rows are checked by the Python suite) */
    int what = !strcmp(g->kind, "read") ? A_SNAPSHOT | A_SCAN : A_SNAPSHOT;
    dk_error e1, e2;
    dk_error_init(&e1);
    dk_status s_local = answer(&want, g->table, NULL, NULL, g->version, what, &e1);
    dk_mem_storage *m;
    CHECK_OK(dk_mem_new(&m, NULL), NULL);
    dk_error le;
    dk_error_init(&le);
    /* not-a-table cases may be absent folders: then both must fail alike */
    (void)dk_mem_load_dir(m, g->table, g->table, &le);
    dk_error_init(&e2);
    dk_status s_mem = answer(&got, g->table, dk_mem_storage_of(m), NULL, g->version, what, &e2);
    if (s_local != s_mem || (s_local == DK_OK && strcmp(want.data, got.data))) {
      fprintf(stderr, "  %s: local %s (%s) vs memory %s (%s)%s\n", g->id, dk_status_str(s_local),
              e1.message, dk_status_str(s_mem), e2.message,
              s_local == s_mem ? ": answers differ" : "");
      failures++;
    }
    compared++;
    /* the same table as an object-store URI */
    char uri[600];
    snprintf(uri, sizeof uri, "s3://golden/%s", g->rel);
    dk_mem_storage *m3;
    CHECK_OK(dk_mem_new(&m3, NULL), NULL);
    m3->no_map = 1;
    dk_mem_apply(m3);
    dk_error_init(&le);
    (void)dk_mem_load_dir(m3, g->table, uri, &le);
    dk_error_init(&e2);
    dk_status s_s3 = answer(&got, uri, dk_mem_storage_of(m3), NULL, g->version, what, &e2);
    bool same = s_local == s_s3 && (s_local != DK_OK || !strcmp(want.data, got.data));
    if (!same && s_local == DK_OK && s_s3 == DK_UNSUPPORTED && has_absolute_path(want.data)) {
      /* a local absolute path in the log: no backend of an s3 table serves it */
      s3_refused++;
    } else if (!same && !(s_local == DK_NOT_FOUND && s_s3 == DK_NOT_FOUND)) {
      fprintf(stderr, "  %s: local %s (%s) vs %s %s (%s)%s\n", g->id, dk_status_str(s_local),
              e1.message, uri, dk_status_str(s_s3), e2.message,
              s_local == s_s3 ? ": answers differ" : "");
      failures++;
    } else {
      s3_compared++;
    }
    dk_mem_free(m);
    dk_mem_free(m3);
  }
  fprintf(stderr, "  memory backend: %d cases equal to local; as s3:// URIs: %d equal, %d refused "
          "(local absolute paths in the log)\n", compared - failures, s3_compared, s3_refused);
  dk__buf_dispose(&want);
  dk__buf_dispose(&got);
  free(cases);
  CHECK_EQ_INT(failures, 0);
}

/* ---- fault loops -------------------------------------------------------------------------- */

/* The tables the loops run over: the ways a snapshot is built and a scan reads. */
typedef struct ftable {
  const char *rel;   /* under the corpus */
  int64_t version;   /* -1 = latest */
  int what;          /* A_* */
  int extra;         /* 1: add a compaction file of commits 1..2 */
} ftable;

static const ftable FTABLES[] = {
    /* classic checkpoint + _last_checkpoint, commits after it */
    {"delta-golden/basic-with-inserts-deletes-checkpoint", -1, A_SCAN | A_SPLITS, 0},
    /* multi-part checkpoint */
    {"delta-golden/multi-part-checkpoint", -1, A_SNAPSHOT, 0},
    /* V2 checkpoint (Parquet top level) with sidecars in _delta_log/_sidecars */
    {"delta-golden/v2-checkpoint-parquet", -1, A_SCAN, 0},
    /* V2 checkpoint, JSON top level */
    {"delta-golden/v2-checkpoint-json", -1, A_SNAPSHOT, 0},
    /* deletion vectors (files beside the data) and a checkpoint */
    {"delta-kernel-defaults/basic-dv-with-checkpoint", -1, A_SCAN | A_SPLITS, 0},
    /* partition values and paths with special characters */
    {"delta-golden/log-replay-special-characters-a", -1, A_SNAPSHOT, 0},
    {"delta-golden/data-reader-partition-values", -1, A_SCAN, 0},
    /* version checksum files (metadata-only snapshot from N.crc) */
    {"delta-golden/commit-info-containing-arbitrary-operationParams-types", -1, A_META_ONLY, 0},
    /* a log compaction file standing for commits 1..2, time travel */
    {"delta-golden/snapshot-data3", 2, A_SCAN, 1},
};

/* Puts table t into a fresh memory backend under key prefix `prefix`. */
static dk_mem_storage *load_table(const ftable *t, const char *prefix, char *local,
                                  size_t cap) {
  char joined[1024];
  snprintf(joined, sizeof joined, "%s/%s", dk_test_data_dir(), t->rel);
  char *real = realpath(joined, NULL);
  snprintf(local, cap, "%s", real ? real : joined);
  free(real);
  dk_mem_storage *m;
  if (dk_mem_new(&m, NULL) != DK_OK) return NULL;
  if (dk_mem_load_dir(m, local, prefix ? prefix : local, NULL) != DK_OK) {
    dk_mem_free(m);
    return NULL;
  }
  if (t->extra) { /* x.y.compacted.json: the actions of commits 1 and 2, in order */
    const char *base = prefix ? prefix : local;
    char k1[1200], k2[1200], kc[1200];
    snprintf(k1, sizeof k1, "%s/_delta_log/00000000000000000001.json", base);
    snprintf(k2, sizeof k2, "%s/_delta_log/00000000000000000002.json", base);
    snprintf(kc, sizeof kc, "%s/_delta_log/00000000000000000001.00000000000000000002.compacted.json", base);
    size_t l1, l2;
    const uint8_t *c1 = dk_mem_get(m, k1, &l1), *c2 = dk_mem_get(m, k2, &l2);
    dk_buf b;
    dk__buf_init(&b, NULL);
    if (c1 && c2) {
      dk__buf_append(&b, c1, l1, NULL);
      if (l1 && c1[l1 - 1] != '\n') dk__buf_putc(&b, '\n', NULL);
      dk__buf_append(&b, c2, l2, NULL);
      dk_mem_put(m, kc, b.data, b.len, 0, NULL);
    }
    dk__buf_dispose(&b);
  }
  return m;
}

typedef struct loop_stats {
  int64_t runs, errors, absorbed; /* runs with a fault; of them: errors, correct answers */
} loop_stats;

/* One faulted run: a clean error or the reference answer. Returns false (reported) if not. */
static bool check_run(const char *what, const char *id, int64_t n, dk_status st,
                      const dk_error *err, const dk_buf *got, const dk_buf *want,
                      loop_stats *ls) {
  ls->runs++;
  if (st == DK_OK) {
    if (strcmp(got->data ? got->data : "", want->data ? want->data : "")) {
      fprintf(stderr, "  %s %s #%lld: succeeded with a different answer\n", what, id, (long long)n);
      return false;
    }
    ls->absorbed++;
    return true;
  }
  ls->errors++;
  if (st == DK_INTERNAL || !err->message[0] || err->code != st) {
    fprintf(stderr, "  %s %s #%lld: unclean error %s (err %s: '%s')\n", what, id, (long long)n,
            dk_status_str(st), dk_status_str(err->code), err->message);
    return false;
  }
  return true;
}

#define LOOP_MAX 100000 /* a loop that never ends is a bug (a call that always recurs) */

typedef enum fault_kind {
  F_CALL,      /* the Nth storage call fails */
  F_FROM_CALL, /* the Nth and every later call fail (a backend that stays broken) */
  F_SHORT      /* the Nth read returns half of what was asked */
} fault_kind;

static const char *const FAULT_NAMES[] = {"fail-call", "fail-from-call", "short-read"};

/* For N = 1.. arms fault N and runs the table's operations, until a run ends before the Nth
** call (or read). as_uri: the table under an s3:// root on a backend that cannot map. */
static bool fault_loop(const ftable *t, bool as_uri, fault_kind kind, dk_status inject,
                       loop_stats *ls) {
  char local[1024], uri[600];
  snprintf(uri, sizeof uri, "s3://faults/%s", t->rel);
  dk_mem_storage *m = load_table(t, as_uri ? uri : NULL, local, sizeof local);
  if (!m) return false;
  m->no_map = as_uri;
  dk_mem_apply(m);
  const char *root = as_uri ? uri : local;
  dk_buf want, got;
  dk__buf_init(&want, NULL);
  dk__buf_init(&got, NULL);
  dk_error err;
  dk_error_init(&err);
  bool ok = answer(&want, root, dk_mem_storage_of(m), NULL, t->version, t->what, &err) == DK_OK;
  if (!ok) fprintf(stderr, "  %s: reference run failed: %s\n", t->rel, err.message);
  int64_t n = 1;
  for (; ok && n < LOOP_MAX; n++) {
    if (kind == F_SHORT) dk_mem_short_read(m, n);
    else dk_mem_fail(m, DK_MEM_ANY, n, inject, kind == F_FROM_CALL);
    dk_error_init(&err);
    dk_status st = answer(&got, root, dk_mem_storage_of(m), NULL, t->version, t->what, &err);
    if (kind == F_SHORT ? m->read_calls < n : m->injected == 0) { /* past the last call */
      ok = st == DK_OK && !strcmp(got.data, want.data);
      if (!ok) fprintf(stderr, "  %s: run without a fault differs\n", t->rel);
      break;
    }
    ok = check_run(FAULT_NAMES[kind], t->rel, n, st, &err, &got, &want, ls);
  }
  if (n >= LOOP_MAX) ok = false;
  dk__buf_dispose(&want);
  dk__buf_dispose(&got);
  dk_mem_free(m);
  return ok;
}

DK_TEST(fault__fail_every_storage_call) {
  loop_stats ls = {0};
  int bad = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(FTABLES); i++) {
    const ftable *t = &FTABLES[i];
    /* the local key form with a mappable backend, the URI form without mapping (coalesced
    ** reads), a missing file instead of an I/O error, and a backend that stays broken */
    bad += !fault_loop(t, false, F_CALL, DK_IO, &ls);
    bad += !fault_loop(t, true, F_CALL, DK_IO, &ls);
    bad += !fault_loop(t, false, F_CALL, DK_NOT_FOUND, &ls);
    bad += !fault_loop(t, true, F_FROM_CALL, DK_IO, &ls);
  }
  fprintf(stderr, "  storage faults: %lld faulted runs over %zu tables: %lld clean errors, %lld "
          "correct answers (the fault was absorbed: hints, checksum files)\n",
          (long long)ls.runs, DK_ARRAY_LEN(FTABLES), (long long)ls.errors, (long long)ls.absorbed);
  CHECK_EQ_INT(bad, 0);
  CHECK(ls.errors > 0);
}

DK_TEST(fault__short_reads) {
  loop_stats ls = {0};
  int bad = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(FTABLES); i++) {
    bad += !fault_loop(&FTABLES[i], false, F_SHORT, DK_OK, &ls);
    bad += !fault_loop(&FTABLES[i], true, F_SHORT, DK_OK, &ls);
  }
  fprintf(stderr, "  short reads: %lld runs: %lld clean errors, %lld correct answers\n",
          (long long)ls.runs, (long long)ls.errors, (long long)ls.absorbed);
  CHECK_EQ_INT(bad, 0);
}

/* ---- allocation failures ------------------------------------------------------------------ */

typedef struct fail_alloc {
  int64_t n, fail_at; /* calls so far; the fail_at-th call fails (0 = none) */
  int64_t failed;
  int64_t live;       /* blocks not yet freed */
} fail_alloc;

static bool fa_fail(fail_alloc *f) {
  f->n++;
  if (f->fail_at && f->n == f->fail_at) {
    f->failed++;
    return true;
  }
  return false;
}
static void *fa_malloc(void *ctx, size_t n) {
  fail_alloc *f = ctx;
  if (fa_fail(f)) return NULL;
  void *p = malloc(n);
  if (p) __atomic_add_fetch(&f->live, 1, __ATOMIC_RELAXED);
  return p;
}
static void *fa_realloc(void *ctx, void *p, size_t n) {
  fail_alloc *f = ctx;
  if (fa_fail(f)) return NULL;
  void *q = realloc(p, n);
  if (q && !p) __atomic_add_fetch(&f->live, 1, __ATOMIC_RELAXED);
  return q;
}
static void fa_free(void *ctx, void *p) {
  fail_alloc *f = ctx;
  if (p) __atomic_sub_fetch(&f->live, 1, __ATOMIC_RELAXED);
  free(p);
}

DK_TEST(fault__fail_every_allocation) {
  loop_stats ls = {0};
  int bad = 0;
  int64_t total = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(FTABLES); i++) {
    const ftable *t = &FTABLES[i];
    char local[1024];
    dk_mem_storage *m = load_table(t, NULL, local, sizeof local);
    CHECK(m != NULL);
    dk_buf want, got;
    dk__buf_init(&want, NULL);
    dk__buf_init(&got, NULL);
    dk_error err;
    dk_error_init(&err);
    fail_alloc f = {0};
    dk_allocator a = {&f, fa_malloc, fa_realloc, fa_free};
    CHECK_OK(answer(&want, local, dk_mem_storage_of(m), &a, t->version, t->what, &err), &err);
    CHECK_EQ_INT(f.live, 0);
    int64_t n = 1;
    for (; n < LOOP_MAX; n++) {
      memset(&f, 0, sizeof f);
      f.fail_at = n;
      dk_error_init(&err);
      dk_status st = answer(&got, local, dk_mem_storage_of(m), &a, t->version, t->what, &err);
      if (f.live != 0) {
        fprintf(stderr, "  alloc %s #%lld: %lld blocks not freed\n", t->rel, (long long)n,
                (long long)f.live);
        bad++;
      }
      if (!f.failed) {
        if (st != DK_OK || strcmp(got.data, want.data)) bad++;
        break;
      }
      bad += !check_run("fail-alloc", t->rel, n, st, &err, &got, &want, &ls);
      if (st != DK_OK && st != DK_NOMEM) {
        fprintf(stderr, "  alloc %s #%lld: %s instead of DK_NOMEM: %s\n", t->rel, (long long)n,
                dk_status_str(st), err.message);
        bad++;
      }
    }
    total += n - 1;
    dk__buf_dispose(&want);
    dk__buf_dispose(&got);
    dk_mem_free(m);
  }
  fprintf(stderr, "  allocation faults: %lld runs (one per allocator call reached): %lld clean "
          "DK_NOMEM, %lld correct answers\n", (long long)total, (long long)ls.errors,
          (long long)ls.absorbed);
  CHECK_EQ_INT(bad, 0);
}

/* ---- table roots as URIs, absolute data-file URIs, backend versions ----------------------- */

#define T124 "delta-golden/124-decimal-decode-bug"
#define F124 "part-00001-5419c9a2-bb44-454f-a109-6e6c6f000a24-c000.snappy.parquet"

/* T124 under key prefix `root`, plus commit 1: F124 moved to the absolute location `abs`
** (the bytes copied there), written in the log as `logged`. */
static dk_mem_storage *moved_table(const char *root, const char *abs, const char *logged) {
  char local[1024];
  ftable t = {T124, -1, 0, 0};
  dk_mem_storage *m = load_table(&t, root, local, sizeof local);
  if (!m) return NULL;
  char k[1200], c1[1400];
  snprintf(k, sizeof k, "%s/" F124, root);
  size_t len;
  const uint8_t *bytes = dk_mem_get(m, k, &len);
  if (bytes) dk_mem_put(m, abs, bytes, len, 0, NULL);
  int n = snprintf(c1, sizeof c1,
                   "{\"remove\":{\"path\":\"" F124 "\",\"deletionTimestamp\":1,\"dataChange\":true}}\n"
                   "{\"add\":{\"path\":\"%s\",\"partitionValues\":{},\"size\":%zu,"
                   "\"modificationTime\":0,\"dataChange\":true}}\n", logged, len);
  snprintf(k, sizeof k, "%s/_delta_log/00000000000000000001.json", root);
  dk_mem_put(m, k, c1, (size_t)n, 0, NULL);
  return m;
}

/* Status of a scan of the table at root (with _metadata.file_path when paths is not NULL:
** the file paths it gives, one per line). */
static dk_status scan_status(const char *root, dk_storage *sto, dk_buf *paths, dk_error *err) {
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, NULL, sto, 1, 0};
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  dk_scan *scan = NULL;
  dk_status st = dk_table_open(&t, root, &to, err);
  if (!st) st = dk_snapshot_open(&s, t, NULL, err);
  if (!st) {
    dk_scan_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_SCAN_OPTIONS_VERSION;
    o.limit = -1;
    o.metadata_fields = paths ? DK_META_FILE_PATH : 0;
    st = dk_scan_new(&scan, s, &o, err);
  }
  if (!st) {
    struct ArrowArrayStream rs;
    st = dk_scan_read(&rs, scan, err);
    dk_buf rows;
    dk__buf_init(&rows, NULL);
    if (!st) {
      st = drain_rows(&rows, &rs, NULL, err);
      rs.release(&rs);
    }
    if (!st && paths) { /* {"large_decimal":...,"_metadata":{"file_path":"..."}} */
      for (const char *p = rows.data; p && (p = strstr(p, "\"file_path\":\"")); p += 13) {
        const char *q = strchr(p + 13, '"');
        dk__buf_append(paths, p + 13, (size_t)(q - p - 13), NULL);
        dk__buf_putc(paths, '\n', NULL);
      }
    }
    dk__buf_dispose(&rows);
  }
  dk_scan_free(scan);
  dk_snapshot_free(s);
  dk_table_free(t);
  return st;
}

DK_TEST(fault__uri_roots_and_absolute_data_uris) {
  dk_error err;
  dk_buf paths;
  dk__buf_init(&paths, NULL);
  /* an s3:// root without a backend names the scheme */
  dk_table *t = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_table_open(&t, "s3://bucket/t", NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "'s3'"));
  dk_error_init(&err);
  CHECK_STATUS(dk_table_open(&t, "file://elsewhere/t", NULL, &err), DK_UNSUPPORTED);
  /* an uninitialised backend is refused when it is adopted */
  dk_storage zero = {0};
  dk_table_options zo = {DK_TABLE_OPTIONS_VERSION, NULL, &zero, 1, 0};
  dk_error_init(&err);
  CHECK_STATUS(dk_table_open(&t, "/t", &zo, &err), DK_INVALID);
  CHECK(t == NULL);

  /* s3 table, a data file moved to another key of the same store (absolute URI in the log):
  ** read through the table's backend; _metadata.file_path is its URI */
  dk_mem_storage *m = moved_table("s3://b/t", "s3://b/moved/f 1.parquet", "s3://b/moved/f%201.parquet");
  CHECK(m != NULL);
  m->no_map = 1;
  dk_mem_apply(m);
  dk_error_init(&err);
  CHECK_OK(scan_status("s3://b/t", dk_mem_storage_of(m), &paths, &err), &err);
  CHECK_EQ_STR(paths.data, "s3://b/moved/f%201.parquet\n"); /* (part-00000 has no rows) */
  dk_mem_free(m);

  /* a local table whose log names an s3:// file: the snapshot loads, reading it is
  ** DK_UNSUPPORTED naming the scheme (no backend for it) */
  m = moved_table("/mem/t", "s3://b/x.parquet", "s3://b/x.parquet");
  dk_error_init(&err);
  CHECK_STATUS(scan_status("/mem/t", dk_mem_storage_of(m), NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "'s3'"));
  dk_mem_free(m);
  /* file://otherhost/... is refused; file:///... and file://localhost/... are local */
  m = moved_table("/mem/t", "/mem/x.parquet", "file://otherhost/mem/x.parquet");
  dk_error_init(&err);
  CHECK_STATUS(scan_status("/mem/t", dk_mem_storage_of(m), NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "otherhost"));
  dk_mem_free(m);
  m = moved_table("/mem/t", "/mem/x y.parquet", "file://localhost/mem/x%20y.parquet");
  dk__buf_clear(&paths);
  CHECK_OK(scan_status("file:///mem/t", dk_mem_storage_of(m), &paths, &err), &err);
  CHECK(strstr(paths.data, "file:///mem/x%20y.parquet\n"));
  dk_mem_free(m);
  /* an s3 table whose log names a local file */
  m = moved_table("s3://b/t", "/mem/x.parquet", "file:///mem/x.parquet");
  dk_error_init(&err);
  CHECK_STATUS(scan_status("s3://b/t", dk_mem_storage_of(m), NULL, &err), DK_UNSUPPORTED);
  dk_mem_free(m);
  dk__buf_dispose(&paths);
}

DK_TEST(fault__splits_of_an_object_store_table) {
  char local[1024];
  ftable ft = {"delta-kernel-defaults/basic-dv-with-checkpoint", -1, A_SCAN, 0};
  dk_mem_storage *m = load_table(&ft, "s3://b/dv", local, sizeof local);
  CHECK(m != NULL);
  dk_error err;
  dk_error_init(&err);
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, NULL, dk_mem_storage_of(m), 1, 0};
  dk_table *t;
  dk_snapshot *s;
  dk_scan *scan;
  CHECK_OK(dk_table_open(&t, "s3://b/dv", &to, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_SCAN_OPTIONS_VERSION;
  o.limit = -1;
  CHECK_OK(dk_scan_new(&scan, s, &o, &err), &err);
  CHECK_OK(dk_scan_plan_splits(scan, &err), &err);
  CHECK(dk_scan_num_splits(scan) >= 1);
  uint8_t *bytes;
  size_t len;
  CHECK_OK(dk_scan_split_serialize(&bytes, &len, scan, 0, &err), &err);
  /* an executor without the backend: the scheme is named */
  struct ArrowArrayStream rs;
  dk_error_init(&err);
  CHECK_STATUS(dk_split_read(&rs, bytes, len, NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "'s3'"));
  /* with it: every read goes through it */
  dk_mem_reset_counters(m);
  dk_split_read_options ro = {DK_SPLIT_READ_OPTIONS_VERSION, NULL, dk_mem_storage_of(m)};
  CHECK_OK(dk_split_read_v2(&rs, bytes, len, &ro, &err), &err);
  dk_buf rows;
  dk__buf_init(&rows, NULL);
  CHECK_OK(drain_rows(&rows, &rs, NULL, &err), &err);
  rs.release(&rs);
  CHECK(rows.len > 0);
  /* data files are mapped when the backend offers map, footers and DVs read by ranges */
  CHECK(m->calls[DK_MEM_MAP] > 0 || m->calls[DK_MEM_READ_RANGES] > 0);
  /* a newer options version is refused */
  ro.version = DK_SPLIT_READ_OPTIONS_VERSION + 1;
  dk_error_init(&err);
  CHECK_STATUS(dk_split_read_v2(&rs, bytes, len, &ro, &err), DK_UNSUPPORTED);
  dk__buf_dispose(&rows);
  dk_free(bytes);
  dk_scan_free(scan);
  dk_snapshot_free(s);
  dk_table_free(t);
  dk_mem_free(m);
}

DK_TEST(fault__version_1_backend_gets_no_version_2_calls) {
  /* a backend that says version 1 but happens to have the v2 slots filled: dk must not call
  ** them (a real v1 struct is shorter and those slots are not there) */
  char local[1024];
  ftable ft = {"delta-kernel-defaults/basic-dv-with-checkpoint", -1, A_SCAN | A_SPLITS, 0};
  dk_mem_storage *m = load_table(&ft, NULL, local, sizeof local);
  CHECK(m != NULL);
  dk_buf want, got;
  dk__buf_init(&want, NULL);
  dk__buf_init(&got, NULL);
  dk_error err;
  dk_error_init(&err);
  CHECK_OK(answer(&want, local, dk_mem_storage_of(m), NULL, -1, ft.what, &err), &err);
  m->base.version = 1;
  dk_mem_reset_counters(m);
  CHECK_OK(answer(&got, local, dk_mem_storage_of(m), NULL, -1, ft.what, &err), &err);
  CHECK_EQ_STR(got.data, want.data);
  CHECK_EQ_INT(m->calls[DK_MEM_READ_RANGES] + m->calls[DK_MEM_MAP] + m->calls[DK_MEM_OPEN_WRITE], 0);
  CHECK(m->calls[DK_MEM_READ_RANGE] > 0);
  dk__buf_dispose(&want);
  dk__buf_dispose(&got);
  dk_mem_free(m);
}

DK_TEST(fault__paginated_slow_listing) {
  /* many log files, listed 2 at a time with a delay per page (an object store's
  ** ListObjectsV2): the same answer, and every page was asked for */
  char local[1024];
  ftable ft = {"delta-kernel-defaults/kernel-pagination-all-jsons", -1, A_SNAPSHOT, 0};
  dk_mem_storage *m = load_table(&ft, NULL, local, sizeof local);
  CHECK(m != NULL);
  dk_buf want, got;
  dk__buf_init(&want, NULL);
  dk__buf_init(&got, NULL);
  dk_error err;
  dk_error_init(&err);
  CHECK_OK(answer(&want, local, dk_mem_storage_of(m), NULL, -1, ft.what, &err), &err);
  m->list_page = 2;
  m->list_delay_us = 200;
  dk_mem_reset_counters(m);
  CHECK_OK(answer(&got, local, dk_mem_storage_of(m), NULL, -1, ft.what, &err), &err);
  CHECK_EQ_STR(got.data, want.data);
  CHECK(m->calls[DK_MEM_LIST_PAGE] > m->calls[DK_MEM_LIST]);
  dk__buf_dispose(&want);
  dk__buf_dispose(&got);
  dk_mem_free(m);
}
