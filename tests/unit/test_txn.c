/* test_txn.c — transactions: create, append, the commit file's shape, conflict checks and
 * rebase for pairs that start on one snapshot, lost-response self-detection, writer-feature
 * refusal. (The full pair matrix is checked against delta-spark in
 * tests/python/test_txn_conflict_matrix.py.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dk/history.h"
#include "dk/txn.h"
#include "test.h"
#include "util/util.h"

static const char *SCHEMA =
    "{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"long\",\"nullable\":true,"
    "\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}";

static char g_dir[1024];

static const char *new_table_dir(const char *name) {
  snprintf(g_dir, sizeof g_dir, "%s/%s", dk_test_tmpdir(), name);
  mkdir(g_dir, 0777);
  return g_dir;
}

static dk_status create_part_table(dk_table *t, const char *const *conf, size_t n_conf,
                                   dk_error *err) {
  dk_txn *x;
  DK_RETURN_NOT_OK(dk_txn_begin_create(&x, t, NULL, err));
  const char *pcols[] = {"p"};
  dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .schema_string = SCHEMA,
                        .n_partition_columns = 1, .partition_columns = pcols,
                        .n_configuration = n_conf, .configuration = conf, .created_time = -1};
  dk_status st = dk_txn_set_metadata(x, &m, err);
  if (st) {
    dk_txn_abort(x);
    return st;
  }
  return dk_txn_commit(x, NULL, err);
}

static dk_status stage_add(dk_txn *x, const char *part, int n, dk_error *err) {
  char path[128];
  static int seq;
  snprintf(path, sizeof path, "p=%s/part-%05d.parquet", part, seq++);
  const char *kv[] = {"p", part};
  char stats[64];
  snprintf(stats, sizeof stats, "{\"numRecords\":%d}", n);
  dk_add_file f = {.version = DK_ADD_FILE_VERSION, .path = path, .n_partition_values = 1,
                   .partition_kv = kv, .size = 100, .modification_time = 1, .data_change = 1,
                   .stats = stats};
  return dk_txn_add_file(x, &f, err);
}

static dk_status begin_latest(dk_txn **x, dk_table *t, dk_snapshot **snap, dk_error *err) {
  DK_RETURN_NOT_OK(dk_snapshot_open(snap, t, NULL, err));
  return dk_txn_begin(x, *snap, NULL, err);
}

static dk_status append_one(dk_table *t, const char *part, dk_error *err) {
  dk_snapshot *s;
  dk_txn *x;
  DK_RETURN_NOT_OK(begin_latest(&x, t, &s, err));
  dk_snapshot_free(s);
  dk_status st = stage_add(x, part, 2, err);
  if (st) {
    dk_txn_abort(x);
    return st;
  }
  return dk_txn_commit(x, NULL, err);
}

DK_TEST(txn__create_and_append) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, new_table_dir("create"), NULL, &err), &err);
  CHECK_OK(create_part_table(t, NULL, 0, &err), &err);
  CHECK_OK(append_one(t, "a", &err), &err);
  CHECK_OK(append_one(t, "b", &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 2);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 2);
  CHECK_EQ_INT(dk_snapshot_protocol(s)->min_writer_version, 2);
  dk_history *h;
  CHECK_OK(dk_history_open(&h, t, 0, &err), &err);
  int64_t v, ts;
  const char *ci;
  dk_history_entry(&v, &ts, &ci, h, 0);
  CHECK(strstr(ci, "\"isBlindAppend\":true") != NULL);
  CHECK(strstr(ci, "\"readVersion\":1") != NULL);
  CHECK(strstr(ci, "\"engineInfo\":\"dk/") != NULL);
  CHECK(strstr(ci, "\"isolationLevel\":\"Serializable\"") != NULL);
  dk_history_free(h);
  dk_snapshot_free(s);
  /* creating again: version 0 exists -> ProtocolChangedException */
  dk_error_init(&err);
  CHECK_STATUS(create_part_table(t, NULL, 0, &err), DK_CONFLICT);
  CHECK(strstr(err.message, "ProtocolChangedException") != NULL);
  dk_table_free(t);
}

/* Two transactions on one snapshot; the first commits, the second's outcome is returned. */
typedef dk_status (*stage_fn)(dk_txn *x, dk_error *err);

static dk_status st_append_a(dk_txn *x, dk_error *err) { return stage_add(x, "a", 1, err); }
static dk_status st_append_b(dk_txn *x, dk_error *err) { return stage_add(x, "b", 1, err); }
static dk_status st_replace_where(dk_txn *x, const char *pred, const char *part, dk_error *err) {
  dk_expr *e;
  DK_RETURN_NOT_OK(dk_expr_parse(&e, pred, err));
  int64_t *idx, n;
  dk_status st = dk_txn_read_files(x, e, &idx, &n, err);
  dk_expr_free(e);
  DK_RETURN_NOT_OK(st);
  for (int64_t i = 0; i < n && !st; i++) st = dk_txn_remove_file(x, idx[i], 1, err);
  dk_free(idx);
  if (!st && part) st = stage_add(x, part, 1, err);
  return st;
}
static dk_status st_rw_a(dk_txn *x, dk_error *err) { return st_replace_where(x, "p = 'a'", "a", err); }
static dk_status st_rw_b(dk_txn *x, dk_error *err) { return st_replace_where(x, "p = 'b'", "b", err); }
static dk_status st_overwrite(dk_txn *x, dk_error *err) { return st_replace_where(x, "true", "a", err); }
static dk_status st_delete_a(dk_txn *x, dk_error *err) { return st_replace_where(x, "p = 'a'", NULL, err); }

static dk_status race(const char *name, stage_fn winner, stage_fn loser, dk_commit_result *res,
                     dk_error *err) {
  dk_table *t;
  DK_RETURN_NOT_OK(dk_table_open(&t, new_table_dir(name), NULL, err));
  dk_status st = create_part_table(t, NULL, 0, err);
  if (!st) st = append_one(t, "a", err);
  if (!st) st = append_one(t, "b", err);
  dk_snapshot *s = NULL;
  dk_txn *w = NULL, *l = NULL;
  if (!st) st = dk_snapshot_open(&s, t, NULL, err);
  if (!st) st = dk_txn_begin(&w, s, NULL, err);
  if (!st) st = dk_txn_begin(&l, s, NULL, err);
  if (!st) st = winner(w, err);
  if (!st) st = loser(l, err);
  if (!st) {
    st = dk_txn_commit(w, NULL, err);
    w = NULL;
  }
  if (!st) {
    res->version = DK_COMMIT_RESULT_VERSION;
    st = dk_txn_commit(l, res, err);
    l = NULL;
  }
  dk_txn_abort(w);
  dk_txn_abort(l);
  dk_snapshot_free(s);
  dk_table_free(t);
  return st;
}

DK_TEST(txn__conflict_pairs) {
  dk_error err;
  dk_commit_result r;
  dk_error_init(&err);
  CHECK_OK(race("r1", st_append_a, st_append_a, &r, &err), &err);
  CHECK_EQ_INT(r.committed_version, 4);
  CHECK_EQ_INT(r.attempts, 2);
  dk_error_init(&err);
  CHECK_OK(race("r2", st_append_a, st_rw_b, &r, &err), &err);
  dk_error_init(&err);
  CHECK_STATUS(race("r3", st_append_a, st_rw_a, &r, &err), DK_CONFLICT);
  CHECK_EQ_INT(r.conflict, DK_CONFLICT_CONCURRENT_APPEND);
  CHECK_EQ_INT(r.conflict_version, 3);
  CHECK(strstr(err.message, "ConcurrentAppendException") && strstr(err.message, "[p=a]") &&
        strstr(err.message, "version 3"));
  dk_error_init(&err);
  CHECK_STATUS(race("r4", st_delete_a, st_rw_a, &r, &err), DK_CONFLICT);
  CHECK_EQ_INT(r.conflict, DK_CONFLICT_CONCURRENT_DELETE_READ);
  dk_error_init(&err);
  CHECK_STATUS(race("r5", st_append_b, st_overwrite, &r, &err), DK_CONFLICT);
  CHECK_EQ_INT(r.conflict, DK_CONFLICT_CONCURRENT_APPEND);
  dk_error_init(&err);
  CHECK_OK(race("r6", st_rw_b, st_append_a, &r, &err), &err);
}

/* A committer whose write lands but reports an I/O error (a lost response). */
static dk_status lossy_commit(dk_committer *c, dk_storage *sto, const char *root, int64_t v,
                              const char *actions, size_t len, dk_error *err) {
  char path[2048];
  snprintf(path, sizeof path, "%s/_delta_log/%020lld.json", root, (long long)v);
  int *calls = c->ctx;
  (*calls)++;
  dk_status st = sto->put_if_absent(sto, path, actions, len, err);
  if (st) return st;
  return dk__error_set(err, DK_IO, "connection reset (simulated)");
}

DK_TEST(txn__lost_response_self_detected) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, new_table_dir("lossy"), NULL, &err), &err);
  CHECK_OK(create_part_table(t, NULL, 0, &err), &err);
  int calls = 0;
  dk_committer c = {1, &calls, lossy_commit};
  dk_txn_options o = {.version = DK_TXN_OPTIONS_VERSION, .committer = &c};
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  dk_txn *x;
  CHECK_OK(dk_txn_begin(&x, s, &o, &err), &err);
  CHECK_OK(stage_add(x, "a", 1, &err), &err);
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  CHECK_OK(dk_txn_commit(x, &r, &err), &err);
  CHECK_EQ_INT(r.committed_version, 1);
  CHECK_EQ_INT(r.self_detected, 1);
  CHECK_EQ_INT(calls, 1);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 1);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 1);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(txn__writer_features) {
  dk_error err;
  dk_error_init(&err);
  const char *dir = new_table_dir("feat");
  char p[2048];
  snprintf(p, sizeof p, "%s/_delta_log", dir);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/_delta_log/00000000000000000000.json", dir);
  FILE *f = fopen(p, "w");
  CHECK(f != NULL);
  fprintf(f, "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":7,"
             "\"writerFeatures\":[\"appendOnly\",\"futureFeature\"]}}\n"
             "{\"metaData\":{\"id\":\"x\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
             "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[]}\","
             "\"partitionColumns\":[],\"configuration\":{},\"createdTime\":1}}\n");
  fclose(f);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  dk_txn *x = NULL;
  CHECK_STATUS(dk_txn_begin(&x, s, NULL, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "futureFeature") != NULL);
  CHECK(x == NULL);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(txn__append_only_and_bad_input) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, new_table_dir("ao"), NULL, &err), &err);
  const char *conf[] = {"delta.appendOnly", "true"};
  CHECK_OK(create_part_table(t, conf, 1, &err), &err);
  CHECK_OK(append_one(t, "a", &err), &err);
  dk_snapshot *s;
  dk_txn *x;
  CHECK_OK(begin_latest(&x, t, &s, &err), &err);
  CHECK_STATUS(dk_txn_remove_file(x, 0, 1, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "delta.appendOnly") != NULL);
  dk_error_init(&err);
  CHECK_OK(dk_txn_remove_file(x, 0, 0, &err), &err); /* rearrangement is allowed */
  /* a partition column missing */
  dk_add_file f = {.version = DK_ADD_FILE_VERSION, .path = "x.parquet", .size = 1};
  dk_error_init(&err);
  CHECK_STATUS(dk_txn_add_file(x, &f, &err), DK_INVALID);
  CHECK(strstr(err.message, "DELTA_INVALID_PARTITIONING_SCHEMA") != NULL);
  dk_txn_abort(x);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 1);
  CHECK(!strcmp(dk_snapshot_property(s, "delta.appendOnly"), "true"));
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(txn__row_tracking_rebase) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, new_table_dir("rt"), NULL, &err), &err);
  const char *conf[] = {"delta.enableRowTracking", "true"};
  CHECK_OK(create_part_table(t, conf, 1, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK(dk_snapshot_has_feature(s, "rowTracking"));
  CHECK(dk_snapshot_has_feature(s, "domainMetadata"));
  /* the materialized column names delta-spark resolves _metadata.row_id through */
  const char *rid = dk_snapshot_property(s, "delta.rowTracking.materializedRowIdColumnName");
  const char *rcv =
      dk_snapshot_property(s, "delta.rowTracking.materializedRowCommitVersionColumnName");
  CHECK(rid && !strncmp(rid, "_row-id-col-", 12) && strlen(rid) == 12 + 36);
  CHECK(rcv && !strncmp(rcv, "_row-commit-version-col-", 24));
  dk_txn *w, *l;
  CHECK_OK(dk_txn_begin(&w, s, NULL, &err), &err);
  CHECK_OK(dk_txn_begin(&l, s, NULL, &err), &err);
  CHECK_OK(stage_add(w, "a", 5, &err), &err);
  CHECK_OK(stage_add(l, "b", 3, &err), &err);
  CHECK_OK(dk_txn_commit(w, NULL, &err), &err);
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  CHECK_OK(dk_txn_commit(l, &r, &err), &err);
  CHECK_EQ_INT(r.committed_version, 2);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_STR(dk_snapshot_domain_metadata(s, "delta.rowTracking"), "{\"rowIdHighWaterMark\":7}");
  /* a metadata change keeps the names (a name in the new metadata is not taken) */
  char keep_rid[64];
  snprintf(keep_rid, sizeof keep_rid, "%s",
           dk_snapshot_property(s, "delta.rowTracking.materializedRowIdColumnName"));
  CHECK_OK(dk_txn_begin(&w, s, NULL, &err), &err);
  const char *conf2[] = {"delta.enableRowTracking", "true",
                         "delta.rowTracking.materializedRowIdColumnName", "other"};
  const dk_metadata *md = dk_snapshot_metadata(s);
  dk_metadata_spec ms = {.version = DK_METADATA_SPEC_VERSION, .schema_string = md->schema_string,
                         .n_partition_columns = md->n_partition_columns,
                         .partition_columns = md->partition_columns, .n_configuration = 2,
                         .configuration = conf2, .created_time = -1};
  CHECK_OK(dk_txn_set_metadata(w, &ms, &err), &err);
  CHECK_OK(dk_txn_commit(w, NULL, &err), &err);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.rowTracking.materializedRowIdColumnName"), keep_rid);
  int seen = 0;
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry fe;
    CHECK_OK(dk_snapshot_file(&fe, s, i, &err), &err);
    CHECK(fe.has_base_row_id && fe.has_default_row_commit_version);
    if (fe.default_row_commit_version == 2) {
      CHECK_EQ_INT(fe.base_row_id, 5);
      seen++;
    } else {
      CHECK_EQ_INT(fe.base_row_id, 0);
    }
  }
  CHECK_EQ_INT(seen, 1);
  dk_snapshot_free(s);
  dk_table_free(t);
}

#include "dk/maintenance.h"

static void touch(const char *root, const char *rel) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  char *slash = strrchr(p, '/');
  *slash = 0;
  mkdir(p, 0777);
  *slash = '/';
  FILE *f = fopen(p, "w");
  if (f) {
    fputs("0123456789", f);
    fclose(f);
  }
}

static dk_status count_file(void *payload, const char *path, int64_t size) {
  (void)size;
  dk_buf *b = payload;
  dk__buf_puts(b, path, NULL);
  return dk__buf_putc(b, ';', NULL);
}

DK_TEST(txn__vacuum_and_restore) {
  dk_error err;
  dk_error_init(&err);
  const char *dir = new_table_dir("vac");
  char root[1024];
  snprintf(root, sizeof root, "%s", dir);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
  CHECK_OK(create_part_table(t, NULL, 0, &err), &err);
  /* v1: two files in a; v2: replaceWhere p = 'a' (both removed, one added) */
  dk_snapshot *s;
  dk_txn *x;
  CHECK_OK(begin_latest(&x, t, &s, &err), &err);
  dk_snapshot_free(s);
  const char *kv[] = {"p", "a"};
  const char *names[] = {"p=a/f1.parquet", "p=a/f2.parquet", "p=a/f3.parquet"};
  for (int i = 0; i < 3; i++) touch(root, names[i]);
  touch(root, "orphan.parquet");
  touch(root, "_hidden/keep.parquet");
  for (int i = 0; i < 2; i++) {
    dk_add_file f = {.version = DK_ADD_FILE_VERSION, .path = names[i], .n_partition_values = 1,
                     .partition_kv = kv, .size = 10, .data_change = 1,
                     .stats = "{\"numRecords\":1}"};
    CHECK_OK(dk_txn_add_file(x, &f, &err), &err);
  }
  CHECK_OK(dk_txn_commit(x, NULL, &err), &err);
  CHECK_OK(begin_latest(&x, t, &s, &err), &err);
  dk_snapshot_free(s);
  CHECK_OK(st_rw_a(x, &err), &err); /* removes f1, f2; adds a synthetic file */
  CHECK_OK(dk_txn_commit(x, NULL, &err), &err);
  /* default retention (7 days): nothing is old enough */
  dk_vacuum_result r = {.version = DK_VACUUM_RESULT_VERSION};
  dk_vacuum_options vo = {.version = DK_VACUUM_OPTIONS_VERSION, .retention_hours = -1,
                          .dry_run = 1};
  CHECK_OK(dk_table_vacuum(&r, t, &vo, &err), &err);
  CHECK_EQ_INT(r.files, 0);
  /* retention 0 without the check disabled: refused */
  vo.retention_hours = 0;
  CHECK_STATUS(dk_table_vacuum(&r, t, &vo, &err), DK_INVALID);
  CHECK(strstr(err.message, "deletedFileRetentionDuration") != NULL);
  /* retention 0, check off, clock an hour ahead: f1 and f2 are expired tombstones only if
   * their deletion time is before the cutoff — they are (cutoff = now) — so they, f3 (never
   * added) and the orphan go; the hidden directory stays */
  dk_error_init(&err);
  dk_buf seen;
  dk__buf_init(&seen, NULL);
  vo.skip_retention_check = 1;
  vo.now_ms = (int64_t)time(NULL) * 1000 + 3600 * 1000;
  vo.on_file = count_file;
  vo.payload = &seen;
  CHECK_OK(dk_table_vacuum(&r, t, &vo, &err), &err);
  CHECK_EQ_INT(r.files, 4);
  CHECK(strstr(seen.data, "orphan.parquet") && strstr(seen.data, "p=a/f1.parquet") &&
        !strstr(seen.data, "_hidden"));
  dk__buf_dispose(&seen);
  /* restore to version 1 (before the replaceWhere) while the files are still there */
  dk_commit_result cr = {.version = DK_COMMIT_RESULT_VERSION};
  CHECK_OK(dk_table_restore(&cr, t, 1, NULL, &err), &err);
  CHECK_EQ_INT(cr.committed_version, 3);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  char paths[512];
  dk_test_snapshot_paths(s, ",", paths, sizeof paths);
  CHECK_EQ_STR(paths, "p=a/f1.parquet,p=a/f2.parquet");
  dk_snapshot_free(s);
  /* now really vacuum: the restored files are live again, only the orphan, f3 and the
   * replaceWhere's synthetic add (never written) ... the orphan and f3 go */
  vo.dry_run = 0;
  vo.on_file = NULL;
  /* a directory VACUUM empties goes too (with the Hadoop checksum of its file), as with
   * delta-spark; one holding only a hidden file stays */
  touch(root, "p=z/gone.parquet");
  touch(root, "p=z/.gone.parquet.crc");
  touch(root, "p=y/.keep");
  char p[2048];
  struct stat sb;
  snprintf(p, sizeof p, "%s/p=z/q=1", root);
  CHECK(mkdir(p, 0777) == 0);
  CHECK_OK(dk_table_vacuum(&r, t, &vo, &err), &err);
  CHECK_EQ_INT(r.files, 3);
  CHECK_EQ_INT(r.dirs, 2);
  snprintf(p, sizeof p, "%s/p=z", root);
  CHECK(stat(p, &sb) != 0);
  snprintf(p, sizeof p, "%s/p=y/.keep", root);
  CHECK(stat(p, &sb) == 0);
  snprintf(p, sizeof p, "%s/p=a/f1.parquet", root);
  CHECK(stat(p, &sb) == 0);
  snprintf(p, sizeof p, "%s/orphan.parquet", root);
  CHECK(stat(p, &sb) != 0);
  snprintf(p, sizeof p, "%s/_delta_log/00000000000000000000.json", root);
  CHECK(stat(p, &sb) == 0);
  dk_table_free(t);
}

DK_TEST(txn__schema_from_ddl) {
  dk_error err;
  dk_error_init(&err);
  char *s = NULL;
  CHECK_OK(dk_schema_from_ddl(&s, "a long, `b c` STRING not null comment 'x', "
                                  "d decimal(10,2), e array<int>, f map<string, bigint>, "
                                  "g struct<x: int, y: timestamp_ntz>", &err), &err);
  CHECK_EQ_STR(s, "{\"type\":\"struct\",\"fields\":["
                  "{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},"
                  "{\"name\":\"b c\",\"type\":\"string\",\"nullable\":false,\"metadata\":{\"comment\":\"x\"}},"
                  "{\"name\":\"d\",\"type\":\"decimal(10,2)\",\"nullable\":true,\"metadata\":{}},"
                  "{\"name\":\"e\",\"type\":{\"type\":\"array\",\"elementType\":\"integer\",\"containsNull\":true},\"nullable\":true,\"metadata\":{}},"
                  "{\"name\":\"f\",\"type\":{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"long\",\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{}},"
                  "{\"name\":\"g\",\"type\":{\"type\":\"struct\",\"fields\":["
                  "{\"name\":\"x\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}},"
                  "{\"name\":\"y\",\"type\":\"timestamp_ntz\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{}}]}");
  dk_free(s);
  s = NULL;
  CHECK_STATUS(dk_schema_from_ddl(&s, "a lonk", &err), DK_INVALID);
  CHECK(strstr(err.message, "unknown type") != NULL);
  dk_error_init(&err);
  CHECK_STATUS(dk_schema_from_ddl(&s, "a decimal(40,2)", &err), DK_INVALID);
  dk_error_init(&err);
  CHECK_STATUS(dk_schema_from_ddl(&s, "", &err), DK_INVALID);
}

/* ---- OPTIMIZE ----------------------------------------------------------------------------- */

#include "arrow/array.h"
#include "dk/scan.h"
#include "dk/table.h"

/* Appends rows (x = first .. first + n - 1, p = part) with dk_write_table: one new file. */
static dk_status write_rows(dk_table *t, const char *part, int64_t first, int n, dk_error *err) {
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, NULL, err));
  struct ArrowSchema sch;
  dk_status st = dk_snapshot_arrow_schema(&sch, s, 0, err);
  dk_snapshot_free(s);
  DK_RETURN_NOT_OK(st);
  dk_arr a;
  st = dk__arr_init_from_schema(&a, &sch, NULL, err);
  for (int i = 0; !st && i < n; i++) {
    st = dk__arr_append_int(&a.children[0], first + i, err);
    if (!st) st = dk__arr_append_bytes(&a.children[1], part, (int64_t)strlen(part), err);
    if (!st) st = dk__arr_finish_element(&a, err);
  }
  struct ArrowArray batch;
  memset(&batch, 0, sizeof batch);
  if (!st) st = dk__arr_finish(&a, &batch, err);
  dk__arr_reset(&a);
  struct ArrowArrayStream in;
  memset(&in, 0, sizeof in);
  if (!st) st = dk__stream_from_batches(&in, &sch, &batch, 1, NULL, err);
  else sch.release(&sch);
  dk_write_table_options o = {.version = DK_WRITE_TABLE_OPTIONS_VERSION, .mode = DK_WRITE_APPEND};
  if (!st) st = dk_write_table(NULL, t, &in, &o, err);
  if (in.release) in.release(&in);
  return st;
}

/* The latest version: its rows (count, sum of x) and the files of partition `part`. */
static void table_rows(dk_table *t, const char *part, int64_t *rows, int64_t *sum,
                       int64_t *files) {
  dk_error err;
  dk_error_init(&err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  *files = 0;
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry f;
    CHECK_OK(dk_snapshot_file(&f, s, i, &err), &err);
    if (f.partition_kv[1] && !strcmp(f.partition_kv[1], part)) (*files)++;
  }
  dk_scan *sc;
  dk_scan_options so = {.version = DK_SCAN_OPTIONS_VERSION, .limit = -1};
  CHECK_OK(dk_scan_new(&sc, s, &so, &err), &err);
  struct ArrowArrayStream st;
  CHECK_OK(dk_scan_read(&st, sc, &err), &err);
  *rows = *sum = 0;
  for (;;) {
    struct ArrowArray b;
    CHECK(st.get_next(&st, &b) == 0);
    if (!b.release) break;
    const int64_t *x = (const int64_t *)b.children[0]->buffers[1] + b.children[0]->offset;
    for (int64_t i = 0; i < b.length; i++) *sum += x[i];
    *rows += b.length;
    b.release(&b);
  }
  st.release(&st);
  dk_scan_free(sc);
  dk_snapshot_free(s);
}

static void optimize_fixture(dk_table **t, const char *name, dk_error *err) {
  CHECK_OK(dk_table_open(t, new_table_dir(name), NULL, err), err);
  CHECK_OK(create_part_table(*t, NULL, 0, err), err);
  for (int i = 0; i < 3; i++) CHECK_OK(write_rows(*t, "a", 10 * i, 10, err), err); /* 0..29 */
  CHECK_OK(write_rows(*t, "b", 100, 5, err), err);                                   /* alone */
  for (int i = 0; i < 2; i++) CHECK_OK(write_rows(*t, "c", 200 + 10 * i, 10, err), err);
} /* versions 0..6 */

DK_TEST(txn__optimize_compacts_small_files) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  optimize_fixture(&t, "opt", &err);
  if (!t) return;
  char root[1024];
  snprintf(root, sizeof root, "%s", g_dir);
  int64_t rows0, sum0, fa;
  table_rows(t, "a", &rows0, &sum0, &fa);
  CHECK_EQ_INT(fa, 3);
  /* only partition a */
  dk_optimize_options o = {.version = DK_OPTIMIZE_OPTIONS_VERSION, .predicate = "p = 'a'"};
  dk_optimize_result r = {.version = DK_OPTIMIZE_RESULT_VERSION};
  CHECK_OK(dk_table_optimize(&r, t, &o, &err), &err);
  CHECK_EQ_INT(r.committed_version, 7);
  CHECK_EQ_INT(r.files_removed, 3);
  CHECK_EQ_INT(r.files_added, 1);
  CHECK_EQ_INT(r.files_considered, 3);
  CHECK_EQ_INT(r.partitions_optimized, 1);
  int64_t rows, sum, f;
  table_rows(t, "a", &rows, &sum, &f);
  CHECK_EQ_INT(rows, rows0);
  CHECK_EQ_INT(sum, sum0);
  CHECK_EQ_INT(f, 1);
  table_rows(t, "c", &rows, &sum, &f);
  CHECK_EQ_INT(f, 2);
  /* the commit: OPTIMIZE, SnapshotIsolation, every file action without data change */
  char p[2048];
  snprintf(p, sizeof p, "%s/_delta_log/%020d.json", root, 7);
  FILE *fp = fopen(p, "rb");
  CHECK(fp != NULL);
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[n] = 0;
  CHECK(strstr(buf, "\"operation\":\"OPTIMIZE\"") != NULL);
  CHECK(strstr(buf, "\"operationParameters\":{\"predicate\":\"[\\\"p = 'a'\\\"]\",\"zOrderBy\":"
                    "\"[]\",\"clusterBy\":\"[]\",\"auto\":false}") != NULL);
  CHECK(strstr(buf, "\"isolationLevel\":\"SnapshotIsolation\"") != NULL);
  CHECK(strstr(buf, "\"numRemovedFiles\":\"3\"") && strstr(buf, "\"numAddedFiles\":\"1\""));
  CHECK(strstr(buf, "\"dataChange\":true") == NULL);
  CHECK(strstr(buf, "\"dataChange\":false") != NULL);
  /* the whole table: c is compacted, b (one file) is left alone; then nothing is left to do */
  o.predicate = NULL;
  CHECK_OK(dk_table_optimize(&r, t, &o, &err), &err);
  CHECK_EQ_INT(r.committed_version, 8);
  CHECK_EQ_INT(r.files_removed, 2);
  table_rows(t, "c", &rows, &sum, &f);
  CHECK_EQ_INT(f, 1);
  CHECK_EQ_INT(rows, 55);
  CHECK_EQ_INT(sum, sum0);
  CHECK_OK(dk_table_optimize(&r, t, &o, &err), &err);
  CHECK_EQ_INT(r.committed_version, -1);
  /* files at least min_file_size are not compacted; a data-column predicate is refused */
  o.predicate = "x > 1";
  CHECK_STATUS(dk_table_optimize(&r, t, &o, &err), DK_INVALID);
  CHECK(strstr(err.message, "partition columns") != NULL);
  dk_table_free(t);
}

/* A committer that lets a concurrent commit win first. */
typedef struct inject {
  dk_committer c;
  int mode; /* 1: delete a compacted file, 2: append to its partition, 3: metadata change */
  int done;
  dk_status st;
} inject;

static dk_status inject_commit(dk_committer *c, dk_storage *sto, const char *root, int64_t v,
                               const char *actions, size_t len, dk_error *err) {
  inject *in = c->ctx;
  if (!in->done) {
    in->done = 1;
    dk_error e2;
    dk_error_init(&e2);
    dk_table *t2;
    in->st = dk_table_open(&t2, root, NULL, &e2);
    if (!in->st && in->mode == 2) in->st = write_rows(t2, "a", 1000, 1, &e2);
    if (!in->st && in->mode != 2) {
      dk_snapshot *s;
      dk_txn *x;
      in->st = begin_latest(&x, t2, &s, &e2);
      if (!in->st && in->mode == 1) {
        for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
          dk_file_entry f;
          in->st = dk_snapshot_file(&f, s, i, &e2);
          if (in->st || strcmp(f.partition_kv[1], "a")) continue;
          in->st = dk_txn_remove_file(x, i, 1, &e2);
          break;
        }
      } else if (!in->st) {
        const dk_metadata *md = dk_snapshot_metadata(s);
        const char *conf[] = {"user.owner", "someone"};
        dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION,
                              .schema_string = md->schema_string, .n_partition_columns = 1,
                              .partition_columns = md->partition_columns, .n_configuration = 1,
                              .configuration = conf, .created_time = -1};
        in->st = dk_txn_set_metadata(x, &m, &e2);
      }
      if (!in->st) in->st = dk_txn_commit(x, NULL, &e2);
      else dk_txn_abort(x);
      dk_snapshot_free(s);
    }
    dk_table_free(t2);
  }
  char path[2048];
  snprintf(path, sizeof path, "%s/_delta_log/%020lld.json", root, (long long)v);
  return sto->put_if_absent(sto, path, actions, len, err);
}

DK_TEST(txn__optimize_conflicts_as_delta_spark) {
  for (int mode = 1; mode <= 3; mode++) {
    dk_error err;
    dk_error_init(&err);
    char name[16];
    snprintf(name, sizeof name, "optc%d", mode);
    dk_table *t = NULL;
    optimize_fixture(&t, name, &err);
    if (!t) return;
    int64_t rows0, sum0, f;
    table_rows(t, "a", &rows0, &sum0, &f);
    inject in = {.c = {.version = 1, .commit = inject_commit}, .mode = mode};
    in.c.ctx = &in;
    dk_optimize_options o = {.version = DK_OPTIMIZE_OPTIONS_VERSION, .predicate = "p = 'a'",
                             .txn = {.version = DK_TXN_OPTIONS_VERSION, .committer = &in.c}};
    dk_optimize_result r = {.version = DK_OPTIMIZE_RESULT_VERSION};
    dk_status st = dk_table_optimize(&r, t, &o, &err);
    CHECK_OK(in.st, NULL);
    int64_t rows, sum;
    table_rows(t, "a", &rows, &sum, &f);
    if (mode == 1) { /* the compacted file is gone: the conflict stands, nothing committed */
      CHECK_STATUS(st, DK_CONFLICT);
      CHECK(!strncmp(err.message, "ConcurrentDeleteReadException", 29));
      CHECK_EQ_INT(f, 2);
      CHECK_EQ_INT(rows, rows0 - 10);
    } else { /* rebased (append) or committed again on the newer version (metadata) */
      CHECK_OK(st, &err);
      CHECK_EQ_INT(r.committed_version, 8);
      CHECK_EQ_INT(r.attempts, mode == 2 ? 1 : 2);
      CHECK_EQ_INT(f, mode == 2 ? 2 : 1);
      CHECK_EQ_INT(rows, rows0 + (mode == 2));
      CHECK_EQ_INT(sum, sum0 + (mode == 2 ? 1000 : 0));
    }
    dk_table_free(t);
  }
}

/* ---- a full disk ---------------------------------------------------------------------------- */

#include "storage_mem.h"

typedef struct count_alloc {
  int64_t live;          /* blocks not yet freed */
  int64_t n, fail_at;    /* calls so far; the fail_at-th fails (0 = none) */
  int64_t failed;
} count_alloc;
static bool ca_fail(count_alloc *c) {
  if (++c->n != c->fail_at) return false;
  c->failed++;
  return true;
}
static void *ca_malloc(void *ctx, size_t n) {
  if (ca_fail(ctx)) return NULL;
  void *p = malloc(n);
  if (p) ((count_alloc *)ctx)->live++;
  return p;
}
static void *ca_realloc(void *ctx, void *p, size_t n) {
  if (ca_fail(ctx)) return NULL;
  void *q = realloc(p, n);
  if (q && !p) ((count_alloc *)ctx)->live++;
  return q;
}
static void ca_free(void *ctx, void *p) {
  if (p) ((count_alloc *)ctx)->live--;
  free(p);
}

/* The table's latest version and its files, as text. */
static dk_status table_state(dk_buf *out, dk_table *t, dk_error *err) {
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, NULL, err));
  char paths[4096];
  dk_test_snapshot_paths(s, ",", paths, sizeof paths);
  dk__buf_clear(out);
  dk_status st = dk__buf_printf(out, err, "v%lld %s", (long long)dk_snapshot_version(s), paths);
  dk_snapshot_free(s);
  return st;
}

/* A write (dk_write_table: snapshot, Parquet data files through open_write, the commit) whose
 * Nth storage call fails — once, or from then on (the disk stays full) — for every N: a clean
 * error and the table exactly as it was (no version, no file), or the write done; no memory
 * left allocated either way. */
DK_TEST(txn__full_disk_leaves_the_table_unchanged) {
  dk_error err;
  dk_error_init(&err);
  const char *local = new_table_dir("fulldisk");
  char tmpl[1024];
  snprintf(tmpl, sizeof tmpl, "%s", local);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, tmpl, NULL, &err), &err);
  CHECK_OK(create_part_table(t, NULL, 0, &err), &err);
  CHECK_OK(write_rows(t, "a", 0, 5, &err), &err);
  dk_table_free(t);
  const char *root = "s3://full/t";
  dk_buf before, after;
  dk__buf_init(&before, NULL);
  dk__buf_init(&after, NULL);
  int64_t runs = 0, errors = 0;
  for (int persist = 0; persist <= 1; persist++) {
    for (int64_t n = 1; n < 10000; n++) {
      dk_mem_storage *m;
      CHECK_OK(dk_mem_new(&m, &err), &err);
      CHECK_OK(dk_mem_load_dir(m, tmpl, root, &err), &err);
      size_t files0 = dk_mem_num_files(m);
      count_alloc ca = {0};
      dk_allocator a = {&ca, ca_malloc, ca_realloc, ca_free};
      dk_table_options to = {.version = DK_TABLE_OPTIONS_VERSION, .alloc = &a,
                             .storage = dk_mem_storage_of(m), .threads = 1};
      CHECK_OK(dk_table_open(&t, root, &to, &err), &err);
      CHECK_OK(table_state(&before, t, &err), &err);
      dk_mem_fail(m, DK_MEM_ANY, n, DK_IO, persist);
      dk_error_init(&err);
      dk_status st = write_rows(t, "b", 100, 3, &err);
      int faulted = m->injected > 0;
      dk_mem_fail(m, DK_MEM_ANY, 0, DK_OK, 0);
      dk_table_free(t);
      /* a fresh handle sees what is stored */
      dk_error e2;
      dk_error_init(&e2);
      CHECK_OK(dk_table_open(&t, root, &to, &e2), &e2);
      CHECK_OK(table_state(&after, t, &e2), &e2);
      dk_table_free(t);
      CHECK_EQ_INT(ca.live, 0);
      if (st == DK_OK) {
        CHECK(strncmp(after.data, "v2 ", 3) == 0);
      } else {
        errors++;
        CHECK(st != DK_INTERNAL && err.message[0]);
        CHECK_EQ_STR(after.data, before.data);
        size_t len;
        CHECK(!dk_mem_get(m, "s3://full/t/_delta_log/00000000000000000002.json", &len));
        /* at most the write's one data file is left (VACUUM's: a commit whose outcome was
         * unknown must not lose its files); a failure while writing it deletes it */
        CHECK(dk_mem_num_files(m) <= files0 + 1);
      }
      dk_mem_free(m);
      if (!faulted) { /* past the write's last storage call */
        CHECK_OK(st, &err);
        break;
      }
      runs++;
    }
  }
  fprintf(stderr, "  full disk: %lld faulted writes, %lld clean errors with the table unchanged\n",
          (long long)runs, (long long)errors);
  CHECK(errors > 0);
  dk__buf_dispose(&before);
  dk__buf_dispose(&after);
}

/* ---- column mapping ids and physical names ---------------------------------------------------- */

DK_TEST(txn__column_mapping_assigns_ids_and_physical_names) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, new_table_dir("cmap"), NULL, &err), &err);
  /* a new table in name mode: every field, nested ones too, gets an id and a col-<uuid> name */
  const char *conf[] = {"delta.columnMapping.mode", "name"};
  CHECK_OK(create_part_table(t, conf, 1, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.columnMapping.maxColumnId"), "2");
  const dk_field *x = dk_schema_find(dk_snapshot_schema(s), "x");
  const dk_field *p = dk_schema_find(dk_snapshot_schema(s), "p");
  CHECK(x && x->physical_name && !strncmp(x->physical_name, "col-", 4));
  CHECK(p && p->physical_name && strcmp(x->physical_name, p->physical_name));
  /* partition values are keyed by the physical name */
  dk_txn *w;
  CHECK_OK(dk_txn_begin(&w, s, NULL, &err), &err);
  CHECK_OK(stage_add(w, "a", 1, &err), &err);
  CHECK_OK(dk_txn_commit(w, NULL, &err), &err);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  dk_file_entry f;
  CHECK_OK(dk_snapshot_file(&f, s, 0, &err), &err);
  /* p pointed into the freed snapshot: look the field up again in the new one */
  p = dk_schema_find(dk_snapshot_schema(s), "p");
  CHECK(p && p->physical_name);
  CHECK_EQ_STR(f.partition_kv[0], p->physical_name);
  dk_snapshot_free(s);
  dk_table_free(t);
  /* an existing table moving from none to name: the columns keep their names as physical
   * names (its files already use them); maxColumnId counts them */
  CHECK_OK(dk_table_open(&t, new_table_dir("cmap2"), NULL, &err), &err);
  CHECK_OK(create_part_table(t, NULL, 0, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_OK(dk_txn_begin(&w, s, NULL, &err), &err);
  dk_protocol pr = {.min_reader_version = 2, .min_writer_version = 5};
  CHECK_OK(dk_txn_set_protocol(w, &pr, &err), &err);
  const dk_metadata *md = dk_snapshot_metadata(s);
  dk_metadata_spec ms = {.version = DK_METADATA_SPEC_VERSION, .schema_string = md->schema_string,
                         .n_partition_columns = 1, .partition_columns = md->partition_columns,
                         .n_configuration = 1, .configuration = conf, .created_time = -1};
  CHECK_OK(dk_txn_set_metadata(w, &ms, &err), &err);
  CHECK_OK(dk_txn_commit(w, NULL, &err), &err);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.columnMapping.maxColumnId"), "2");
  CHECK_EQ_STR(dk_schema_find(dk_snapshot_schema(s), "x")->physical_name, "x");
  dk_snapshot_free(s);
  dk_table_free(t);
}

/* ---- MERGE memory ----------------------------------------------------------------------------- */

#include "dk/dml.h"

/* A MERGE (update of a matched row, insert of an unmatched one, on a DV table) with a table
 * whose allocator fails its Nth call, for every N: DK_NOMEM and the table unchanged, or the
 * merge done; nothing left allocated either way. Its scratch (source batches, key hash,
 * joined batches, output queue) goes through the table's allocator. */
DK_TEST(txn__merge_fails_every_allocation_cleanly) {
  dk_error err;
  dk_error_init(&err);
  const char *local = new_table_dir("mergealloc");
  char tmpl[1024];
  snprintf(tmpl, sizeof tmpl, "%s", local);
  dk_table *t;
  const char *conf[] = {"delta.enableDeletionVectors", "true"};
  CHECK_OK(dk_table_open(&t, tmpl, NULL, &err), &err);
  CHECK_OK(create_part_table(t, conf, 1, &err), &err);
  CHECK_OK(write_rows(t, "a", 0, 10, &err), &err);
  dk_table_free(t);
  const char *root = "s3://merge/t";
  dk_expr *on = NULL, *val = NULL;
  CHECK_OK(dk_expr_parse(&on, "t.x = s.x", &err), &err);
  CHECK_OK(dk_expr_parse(&val, "s.x + 1000", &err), &err);
  dk_dml_assignment set = {"x", val};
  dk_merge_clause cl[2] = {{.when = DK_MERGE_MATCHED, .action = DK_MERGE_UPDATE, .set = &set,
                            .n_set = 1},
                           {.when = DK_MERGE_NOT_MATCHED, .action = DK_MERGE_INSERT, .all = 1}};
  dk_buf before, after;
  dk__buf_init(&before, NULL);
  dk__buf_init(&after, NULL);
  int64_t runs = 0, errors = 0, calls = 0;
  for (int64_t n = 0; n < 100000; n++) {
    dk_mem_storage *m;
    CHECK_OK(dk_mem_new(&m, &err), &err);
    CHECK_OK(dk_mem_load_dir(m, tmpl, root, &err), &err);
    count_alloc ca = {0};
    dk_allocator a = {&ca, ca_malloc, ca_realloc, ca_free};
    dk_table_options to = {.version = DK_TABLE_OPTIONS_VERSION, .alloc = &a,
                           .storage = dk_mem_storage_of(m), .threads = 1};
    CHECK_OK(dk_table_open(&t, root, &to, &err), &err);
    CHECK_OK(table_state(&before, t, &err), &err);
    /* the source: x = 3 (matches), 50 (new), p = "a" */
    struct ArrowSchema sch;
    dk_snapshot *s;
    CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
    CHECK_OK(dk_snapshot_arrow_schema(&sch, s, 0, &err), &err);
    dk_snapshot_free(s);
    dk_arr arr;
    CHECK_OK(dk__arr_init_from_schema(&arr, &sch, NULL, &err), &err);
    for (int i = 0; i < 2; i++) {
      CHECK_OK(dk__arr_append_int(&arr.children[0], i ? 50 : 3, &err), &err);
      CHECK_OK(dk__arr_append_bytes(&arr.children[1], "a", 1, &err), &err);
      CHECK_OK(dk__arr_finish_element(&arr, &err), &err);
    }
    struct ArrowArray batch;
    CHECK_OK(dk__arr_finish(&arr, &batch, &err), &err);
    dk__arr_reset(&arr);
    struct ArrowArrayStream src;
    CHECK_OK(dk__stream_from_batches(&src, &sch, &batch, 1, NULL, &err), &err);
    dk_merge_spec sp = {.version = DK_MERGE_SPEC_VERSION, .source = &src, .on = on,
                        .clauses = cl, .n_clauses = 2};
    ca.n = 0;
    ca.fail_at = n;
    dk_error_init(&err);
    dk_status st = dk_table_merge(NULL, NULL, t, &sp, NULL, NULL, &err);
    int faulted = ca.failed > 0;
    calls = ca.n;
    ca.fail_at = 0;
    src.release(&src);
    dk_error e2;
    dk_error_init(&e2);
    CHECK_OK(table_state(&after, t, &e2), &e2);
    dk_table_free(t);
    if (ca.live)
      fprintf(stderr, "  alloc #%lld: %lld blocks not freed (%s)\n", (long long)n,
              (long long)ca.live, st ? err.message : "ok");
    CHECK_EQ_INT(ca.live, 0);
    if (st == DK_OK) {
      CHECK(strncmp(after.data, "v2 ", 3) == 0);
    } else {
      errors++;
      if (st != DK_NOMEM) fprintf(stderr, "  alloc #%lld: %s\n", (long long)n, err.message);
      CHECK_EQ_INT(st, DK_NOMEM);
      CHECK_EQ_STR(after.data, before.data);
    }
    dk_mem_free(m);
    if (n > 0 && !faulted) break; /* past the merge's last allocation */
    runs += n > 0;
  }
  fprintf(stderr, "  MERGE: %lld allocations, each failed once: %lld clean DK_NOMEM\n",
          (long long)calls, (long long)errors);
  CHECK(errors > 0 && calls > 100);
  dk_expr_free(on);
  dk_expr_free(val);
  dk__buf_dispose(&before);
  dk__buf_dispose(&after);
}
