/* test_log_corrupt.c — small hand-built logs in temp dirs: corrupt and truncated commits,
** unknown fields and actions, version gaps, _last_checkpoint fallbacks, JSON V2 checkpoints,
** bad Parquet checkpoints, time travel errors, timestamps (mtime and in-commit), incremental
** refresh and commit ranges. Oracles are exact properties: the same answer as a plain JSON
** replay of the same actions, or the error kind the protocol calls for. */
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "dk/history.h"
#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

static const char *P0 = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n";
static const char *M0 =
    "{\"metaData\":{\"id\":\"t1\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
    "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"id\\\","
    "\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},{\\\"name\\\":\\\"p\\\","
    "\\\"type\\\":\\\"string\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}}]}\","
    "\"partitionColumns\":[\"p\"],\"configuration\":{},\"createdTime\":1}}\n";

static int g_seq;

static char *mk_table(void) {
  static char dir[4096];
  snprintf(dir, sizeof dir, "%s/tbl%d", dk_test_tmpdir(), ++g_seq);
  char log[4200];
  snprintf(log, sizeof log, "%s/_delta_log", dir);
  mkdir(dir, 0755);
  mkdir(log, 0755);
  return dir;
}

static void put(const char *dir, const char *name, const char *text) {
  char path[4300];
  snprintf(path, sizeof path, "%s/_delta_log/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(text, 1, strlen(text), f);
  fclose(f);
}

static void set_mtime(const char *dir, const char *name, int64_t ms) {
  char path[4300];
  snprintf(path, sizeof path, "%s/_delta_log/%s", dir, name);
  struct timeval tv[2];
  tv[0].tv_sec = tv[1].tv_sec = (time_t)(ms / 1000);
  tv[0].tv_usec = tv[1].tv_usec = (suseconds_t)((ms % 1000) * 1000);
  utimes(path, tv);
}

static const char *commit_name(int64_t v) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%020lld.json", (long long)v);
  return buf;
}

static char *add_line(char *buf, size_t cap, const char *path, const char *p) {
  snprintf(buf, cap,
           "{\"add\":{\"path\":\"%s\",\"partitionValues\":{\"p\":\"%s\"},\"size\":10,"
           "\"modificationTime\":5,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":1}\"}}\n",
           path, p);
  return buf;
}

/* A 3-version table: v0 adds a, v1 adds b, v2 removes a and adds c. */
static char *basic_table(void) {
  char *dir = mk_table();
  char c0[4096], l[512];
  snprintf(c0, sizeof c0, "%s%s%s", P0, M0, add_line(l, sizeof l, "a.parquet", "x"));
  put(dir, commit_name(0), c0);
  put(dir, commit_name(1), add_line(l, sizeof l, "b.parquet", "y"));
  char c2[1024];
  snprintf(c2, sizeof c2,
           "{\"commitInfo\":{\"timestamp\":3,\"operation\":\"DELETE\"}}\n"
           "{\"remove\":{\"path\":\"a.parquet\",\"deletionTimestamp\":7,\"dataChange\":true}}\n%s",
           add_line(l, sizeof l, "c.parquet", "z"));
  put(dir, commit_name(2), c2);
  return dir;
}

static dk_status open_at(const char *dir, int64_t version, dk_snapshot **s, dk_table **t,
                         dk_error *err) {
  *s = NULL;
  DK_RETURN_NOT_OK(dk_table_open(t, dir, NULL, err));
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, version, 0, 0, 0};
  return dk_snapshot_open(s, *t, &o, err);
}

/* Sorted, comma-joined active paths. */
static void file_set(const dk_snapshot *s, char *out, size_t cap) {
  dk_test_snapshot_paths(s, ",", out, cap);
}

DK_TEST(log__basic_replay_and_versions) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 2);
  char fs[256];
  file_set(s, fs, sizeof fs);
  CHECK_EQ_STR(fs, "b.parquet,c.parquet");
  CHECK_EQ_INT(dk_snapshot_total_bytes(s), 20);
  CHECK_EQ_INT(dk_snapshot_num_tombstones(s), 1);
  dk_tombstone tb;
  CHECK_OK(dk_snapshot_tombstone(&tb, s, 0, &err), &err);
  CHECK_EQ_STR(tb.path, "a.parquet");
  CHECK_EQ_INT(tb.deletion_timestamp, 7);
  dk_file_entry f;
  CHECK_OK(dk_snapshot_file(&f, s, 0, &err), &err);
  int is_null;
  const char *pv = dk_file_partition_value(s, &f, "p", &is_null);
  CHECK(pv && !is_null);
  char stats[256];
  int64_t stats_len;
  CHECK_OK(dk_snapshot_file_stats(stats, sizeof stats, &stats_len, s, 0, &err), &err);
  CHECK(stats_len > 0 && strstr(stats, "numRecords"));
  dk_snapshot_free(s);
  /* time travel by version */
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, 0, 0, 0, 0};
  CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
  file_set(s, fs, sizeof fs);
  CHECK_EQ_STR(fs, "a.parquet");
  dk_snapshot_free(s);
  o.at_version = 3;
  CHECK_STATUS(dk_snapshot_open(&s, t, &o, &err), DK_NOT_FOUND);
  dk_table_free(t);
}

DK_TEST(log__truncated_line_is_corrupt) {
  char *dir = basic_table();
  put(dir, commit_name(1), "{\"add\":{\"path\":\"b.parquet\",\"partitionValues\":{\"p\":\"y\"},\"si");
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_STATUS(open_at(dir, -1, &s, &t, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "00000000000000000001.json") != NULL);
  CHECK(strstr(err.message, "byte offset") != NULL);
  dk_table_free(t);
}

DK_TEST(log__garbage_and_wrong_types_are_corrupt) {
  const char *bad[] = {
      "not json at all\n",
      "[1,2,3]\n",
      "{\"add\":5}\n",
      "{\"add\":{\"path\":7,\"size\":1}}\n",
      "{\"add\":{\"path\":\"x\",\"partitionValues\":{\"p\":3},\"size\":1}}\n",
      "{\"add\":{\"path\":\"x\"}}\n",
      "{\"protocol\":{\"minReaderVersion\":\"one\"}}\n",
      "{\"add\":{\"path\":\"x\",\"size\":1,\"deletionVector\":{\"storageType\":\"q\",\"pathOrInlineDv\":\"a\"}}}\n",
      "{\"txn\":{\"version\":1}}\n",
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(bad); i++) {
    char *dir = basic_table();
    put(dir, commit_name(1), bad[i]);
    dk_error err = {0};
    dk_table *t;
    dk_snapshot *s;
    dk_status st = open_at(dir, -1, &s, &t, &err);
    if (st != DK_CORRUPT) fprintf(stderr, "case %zu: %s %s\n", i, dk_status_str(st), err.message);
    CHECK_EQ_INT(st, DK_CORRUPT);
    CHECK(strstr(err.message, "00000000000000000001.json") != NULL);
    dk_table_free(t);
  }
}

DK_TEST(log__unknown_fields_and_actions_ignored) {
  char *dir = basic_table();
  put(dir, commit_name(3),
      "{\"futureAction\":{\"x\":[1,{\"y\":null}]}}\n"
      "{\"add\":{\"path\":\"d.parquet\",\"partitionValues\":{\"p\":null},\"size\":1,"
      "\"modificationTime\":1,\"dataChange\":true,\"newField\":{\"deep\":[1,2]},"
      "\"tags\":{\"k\":\"v\"},\"baseRowId\":40,\"defaultRowCommitVersion\":3}}\n"
      "{\"commitInfo\":{\"unknown\":true}}\n\n");
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  char fs[256];
  file_set(s, fs, sizeof fs);
  CHECK_EQ_STR(fs, "b.parquet,c.parquet,d.parquet");
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry f;
    CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, &err));
    if (strcmp(f.path, "d.parquet")) continue;
    CHECK(f.has_base_row_id && f.base_row_id == 40);
    CHECK(f.has_default_row_commit_version && f.default_row_commit_version == 3);
    CHECK_EQ_STR(f.tags_json, "{\"k\":\"v\"}");
    int is_null = 0;
    CHECK(dk_file_partition_value(s, &f, "p", &is_null) == NULL && is_null);
  }
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__gap_names_missing_versions) {
  char *dir = basic_table();
  put(dir, commit_name(5), "{\"commitInfo\":{}}\n");
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_STATUS(open_at(dir, -1, &s, &t, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "3, 4") != NULL);
  dk_table_free(t);
}

DK_TEST(log__missing_protocol_or_metadata) {
  char *dir = mk_table();
  put(dir, commit_name(0), M0);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_STATUS(open_at(dir, -1, &s, &t, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "protocol") != NULL);
  dk_table_free(t);
  dir = mk_table();
  put(dir, commit_name(0), P0);
  dk_error_init(&err);
  CHECK_STATUS(open_at(dir, -1, &s, &t, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "metaData") != NULL);
  dk_table_free(t);
}

DK_TEST(log__reader_features) {
  char *dir = mk_table();
  char c0[4096];
  snprintf(c0, sizeof c0, "%s%s",
           "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
           "\"readerFeatures\":[\"deletionVectors\",\"futureFeature\"],"
           "\"writerFeatures\":[\"deletionVectors\",\"futureFeature\"]}}\n",
           M0);
  put(dir, commit_name(0), c0);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_STATUS(open_at(dir, -1, &s, &t, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "futureFeature") != NULL);
  dk_table_free(t);
  /* writer-only unknown features do not block reads */
  snprintf(c0, sizeof c0, "%s%s",
           "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
           "\"readerFeatures\":[\"columnMapping\",\"v2Checkpoint\"],"
           "\"writerFeatures\":[\"columnMapping\",\"v2Checkpoint\",\"futureWriterOnly\"]}}\n",
           M0);
  put(dir, commit_name(0), c0);
  dk_error_init(&err);
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK(dk_snapshot_has_feature(s, "futureWriterOnly"));
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__last_checkpoint_hint_fallbacks) {
  const char *hints[] = {NULL, "", "{garbage", "{\"version\":1,\"size\":3}",
                         "{\"version\":99,\"size\":3}"};
  for (size_t i = 0; i < DK_ARRAY_LEN(hints); i++) {
    char *dir = basic_table();
    if (hints[i]) put(dir, "_last_checkpoint", hints[i]);
    dk_error err = {0};
    dk_table *t;
    dk_snapshot *s;
    CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
    CHECK_EQ_INT(dk_snapshot_version(s), 2);
    CHECK_EQ_INT(dk_snapshot_num_files(s), 2);
    dk_snapshot_free(s);
    dk_table_free(t);
  }
}

/* A V2 checkpoint in JSON form at version 2 holding the reconciled state. */
static void put_v2_checkpoint(const char *dir) {
  char cp[4096], l1[512], l2[512];
  snprintf(cp, sizeof cp,
           "{\"checkpointMetadata\":{\"version\":2}}\n%s%s%s%s"
           "{\"remove\":{\"path\":\"a.parquet\",\"deletionTimestamp\":7,\"dataChange\":true}}\n",
           P0, M0, add_line(l1, sizeof l1, "b.parquet", "y"),
           add_line(l2, sizeof l2, "c.parquet", "z"));
  put(dir, "00000000000000000002.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", cp);
  put(dir, "_last_checkpoint", "{\"version\":2,\"size\":5,\"v2Checkpoint\":{}}");
}

DK_TEST(log__v2_json_checkpoint_equals_json_replay) {
  char *dir = basic_table();
  char l[512];
  put(dir, commit_name(3), add_line(l, sizeof l, "d.parquet", "w"));
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  char want[256], got[256];
  file_set(s, want, sizeof want);
  dk_snapshot_free(s);
  dk_table_free(t);
  put_v2_checkpoint(dir);
  /* delete the commits at or below the checkpoint: the checkpoint must be used */
  char path[4300];
  for (int v = 0; v <= 2; v++) {
    snprintf(path, sizeof path, "%s/_delta_log/%s", dir, commit_name(v));
    unlink(path);
  }
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 3);
  file_set(s, got, sizeof got);
  CHECK_EQ_STR(got, want);
  CHECK_EQ_INT(dk_snapshot_num_tombstones(s), 1);
  dk_snapshot_free(s);
  /* versions before the checkpoint can no longer be recreated */
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, 1, 0, 0, 0};
  CHECK_STATUS(dk_snapshot_open(&s, t, &o, &err), DK_OUT_OF_RANGE);
  dk_table_free(t);
}

DK_TEST(log__v2_checkpoint_missing_sidecar_is_error) {
  char *dir = basic_table();
  char cp[4096];
  snprintf(cp, sizeof cp,
           "{\"checkpointMetadata\":{\"version\":2}}\n%s%s"
           "{\"sidecar\":{\"path\":\"00000000000000000002.checkpoint.0000000001.0000000001.abc.parquet\","
           "\"sizeInBytes\":10,\"modificationTime\":1}}\n",
           P0, M0);
  put(dir, "00000000000000000002.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", cp);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  dk_status st = open_at(dir, -1, &s, &t, &err);
  CHECK(st != DK_OK);
  CHECK(strstr(err.message, "abc.parquet") != NULL);
  dk_table_free(t);
}

DK_TEST(log__bad_parquet_checkpoint_is_error) {
  char *dir = basic_table();
  put(dir, "00000000000000000002.checkpoint.parquet", "PAR1 this is not parquet PAR1");
  put(dir, "_last_checkpoint", "{\"version\":2,\"size\":5}");
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  dk_status st = open_at(dir, -1, &s, &t, &err);
  CHECK(st != DK_OK);
  CHECK(strstr(err.message, "00000000000000000002.checkpoint.parquet") != NULL);
  dk_table_free(t);
}

DK_TEST(log__incomplete_multipart_checkpoint_ignored) {
  char *dir = basic_table();
  /* part 1 of 2 only: the set is incomplete and must not be used (JSON replay instead) */
  put(dir, "00000000000000000002.checkpoint.0000000001.0000000002.parquet", "garbage");
  put(dir, "_last_checkpoint", "{\"version\":2,\"size\":5,\"parts\":2}");
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 2);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__timestamp_travel_mtime) {
  char *dir = basic_table();
  set_mtime(dir, commit_name(0), 1000000);
  set_mtime(dir, commit_name(1), 2000000);
  set_mtime(dir, commit_name(2), 3000000);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 1, 2500000, 0};
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 1);
  CHECK_EQ_INT(dk_snapshot_timestamp(s), 2000000);
  dk_snapshot_free(s);
  o.timestamp_ms = 2000000;
  CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 1);
  dk_snapshot_free(s);
  o.timestamp_ms = 999999;
  CHECK_STATUS(dk_snapshot_open(&s, t, &o, &err), DK_OUT_OF_RANGE);
  dk_error_init(&err);
  o.timestamp_ms = 3000001;
  CHECK_STATUS(dk_snapshot_open(&s, t, &o, &err), DK_OUT_OF_RANGE);
  dk_table_free(t);
}

/* One commit-time rule (src/log/timestamps.c): with modification times that go backwards,
 * history and time travel both see them made strictly increasing (1000000, 1000001, 3000000),
 * so the version history reports at a time is the one time travel finds for that time. */
DK_TEST(log__history_and_time_travel_agree) {
  char *dir = basic_table();
  set_mtime(dir, commit_name(0), 1000000);
  set_mtime(dir, commit_name(1), 500000);
  set_mtime(dir, commit_name(2), 3000000);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_history *h;
  CHECK_OK(dk_history_open(&h, t, 0, &err), &err);
  CHECK_EQ_INT(dk_history_count(h), 3);
  static const int64_t want[3] = {3000000, 1000001, 1000000}; /* newest first */
  for (size_t i = 0; i < 3; i++) {
    int64_t v, ts;
    const char *ci;
    dk_history_entry(&v, &ts, &ci, h, i);
    CHECK_EQ_INT(v, 2 - (int64_t)i);
    CHECK_EQ_INT(ts, want[i]);
    dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 1, ts, 0};
    dk_snapshot *s;
    CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
    CHECK_EQ_INT(dk_snapshot_version(s), v);
    dk_snapshot_free(s);
  }
  dk_history_free(h);
  dk_table_free(t);
}

/* DESCRIBE HISTORY LIMIT n makes mtimes increasing over the n commits it lists (delta-spark's
 * answers on such tables: tests/spark/test_spark_history.py) */
DK_TEST(log__history_limit_monotonizes_its_window) {
  char *dir = basic_table();
  set_mtime(dir, commit_name(0), 1000000);
  set_mtime(dir, commit_name(1), 1000000);
  set_mtime(dir, commit_name(2), 500000);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  static const struct { int64_t limit, want[3]; } cases[] = {
      {0, {1000002, 1000001, 1000000}}, {3, {1000002, 1000001, 1000000}},
      {2, {1000001, 1000000}}, {1, {500000}}};
  for (size_t k = 0; k < DK_ARRAY_LEN(cases); k++) {
    dk_history *h;
    CHECK_OK(dk_history_open(&h, t, cases[k].limit, &err), &err);
    size_t n = cases[k].limit ? (size_t)cases[k].limit : 3;
    CHECK_EQ_INT(dk_history_count(h), n);
    for (size_t i = 0; i < n; i++) {
      int64_t v, ts;
      dk_history_entry(&v, &ts, NULL, h, i);
      CHECK_EQ_INT(v, 2 - (int64_t)i);
      CHECK_EQ_INT(ts, cases[k].want[i]);
    }
    dk_history_free(h);
  }
  dk_table_free(t);
}

DK_TEST(log__timestamp_travel_in_commit_timestamps) {
  char *dir = mk_table();
  char c0[4096], l[512];
  /* ICT enabled from version 1; file mtimes deliberately disagree with the ICT values */
  const char *m_ict =
      "{\"metaData\":{\"id\":\"t2\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
      "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[]}\",\"partitionColumns\":[],"
      "\"configuration\":{\"delta.enableInCommitTimestamps\":\"true\","
      "\"delta.inCommitTimestampEnablementVersion\":\"1\","
      "\"delta.inCommitTimestampEnablementTimestamp\":\"5000\"}}}\n";
  snprintf(c0, sizeof c0, "%s%s%s", P0, M0, add_line(l, sizeof l, "a", "x"));
  put(dir, commit_name(0), c0);
  snprintf(c0, sizeof c0, "{\"commitInfo\":{\"inCommitTimestamp\":5000}}\n%s", m_ict);
  put(dir, commit_name(1), c0);
  put(dir, commit_name(2), "{\"commitInfo\":{\"inCommitTimestamp\":6000}}\n");
  put(dir, commit_name(3), "{\"commitInfo\":{\"inCommitTimestamp\":7000}}\n");
  set_mtime(dir, commit_name(0), 1000);
  set_mtime(dir, commit_name(1), 900000);
  set_mtime(dir, commit_name(2), 800000);
  set_mtime(dir, commit_name(3), 700000);
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 3);
  CHECK_EQ_INT(dk_snapshot_timestamp(s), 7000);
  dk_snapshot_free(s);
  struct { int64_t ts, v; } cases[] = {{1000, 0}, {4999, 0}, {5000, 1}, {6500, 2}, {7000, 3}};
  for (size_t i = 0; i < DK_ARRAY_LEN(cases); i++) {
    dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 1, cases[i].ts, 0};
    CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
    CHECK_EQ_INT(dk_snapshot_version(s), cases[i].v);
    dk_snapshot_free(s);
  }
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 1, 7001, 0};
  CHECK_STATUS(dk_snapshot_open(&s, t, &o, &err), DK_OUT_OF_RANGE);
  dk_table_free(t);
}

DK_TEST(log__incremental_refresh_equals_fresh_load) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *old;
  CHECK_OK(open_at(dir, -1, &old, &t, &err), &err);
  dk_snapshot *same;
  CHECK_OK(dk_snapshot_update(&same, old, &err), &err);
  CHECK(same == old);
  dk_snapshot_free(same);
  char l[512], c[1024];
  snprintf(c, sizeof c,
           "{\"remove\":{\"path\":\"b.parquet\",\"deletionTimestamp\":9,\"dataChange\":true}}\n"
           "{\"txn\":{\"appId\":\"app\",\"version\":4,\"lastUpdated\":1}}\n%s",
           add_line(l, sizeof l, "e.parquet", "q"));
  put(dir, commit_name(3), c);
  put(dir, commit_name(4), add_line(l, sizeof l, "f.parquet", "q"));
  dk_snapshot *upd, *fresh;
  CHECK_OK(dk_snapshot_update(&upd, old, &err), &err);
  dk_snapshot_free(old); /* the refreshed snapshot must not depend on the caller's reference */
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 0, 0, 0};
  CHECK_OK(dk_snapshot_open(&fresh, t, &o, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(upd), 4);
  char a[256], b[256];
  file_set(upd, a, sizeof a);
  file_set(fresh, b, sizeof b);
  CHECK_EQ_STR(a, b);
  CHECK_EQ_STR(a, "c.parquet,e.parquet,f.parquet");
  CHECK_EQ_INT(dk_snapshot_num_tombstones(upd), dk_snapshot_num_tombstones(fresh));
  CHECK_EQ_INT(dk_snapshot_txn_version(upd, "app"), 4);
  CHECK_EQ_INT(dk_snapshot_total_bytes(upd), dk_snapshot_total_bytes(fresh));
  dk_snapshot_free(upd);
  dk_snapshot_free(fresh);
  dk_table_free(t);
}

/* A log rewritten under a cached snapshot (table deleted and re-created with fewer or as many
 * versions): the refresh notices that the commit file of the cached version changed and
 * loads afresh instead of answering with the old state. */
DK_TEST(log__refresh_after_log_rewritten) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *old;
  CHECK_OK(open_at(dir, -1, &old, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(old), 2);
  char l[512], c0[4096], path[4300];
  for (int v = 0; v <= 2; v++) {
    snprintf(path, sizeof path, "%s/_delta_log/%s", dir, commit_name(v));
    CHECK(remove(path) == 0);
  }
  snprintf(c0, sizeof c0, "%s%s%s", P0, M0, add_line(l, sizeof l, "new0.parquet", "x"));
  put(dir, commit_name(0), c0);
  put(dir, commit_name(1), add_line(l, sizeof l, "new1.parquet", "y"));
  dk_snapshot *upd;
  CHECK_OK(dk_snapshot_update(&upd, old, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(upd), 1);
  char a[256];
  file_set(upd, a, sizeof a);
  CHECK_EQ_STR(a, "new0.parquet,new1.parquet");
  dk_snapshot_free(upd);
  /* same version count, different content at the cached version */
  dk_snapshot *old2;
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 0, 0, 0};
  CHECK_OK(dk_snapshot_open(&old2, t, &o, &err), &err);
  put(dir, commit_name(1), "{\"remove\":{\"path\":\"new0.parquet\",\"dataChange\":true}}\n");
  CHECK_OK(dk_snapshot_update(&upd, old2, &err), &err);
  file_set(upd, a, sizeof a);
  CHECK_EQ_STR(a, "");
  dk_snapshot_free(upd);
  dk_snapshot_free(old2);
  dk_snapshot_free(old);
  dk_table_free(t);
}

/* Refreshing one commit at a time past the chain limit (a full load then) and across a
 * metadata change: every step equals a fresh load. */
DK_TEST(log__refresh_chain_and_metadata_change) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *cur;
  CHECK_OK(open_at(dir, -1, &cur, &t, &err), &err);
  char l[512], name[64];
  for (int v = 3; v < 40; v++) { /* 37 refreshes: past DK_SNAPSHOT__MAX_REFRESH_DEPTH */
    snprintf(name, sizeof name, "f%d.parquet", v);
    if (v == 7) {
      char c[4096];
      snprintf(c, sizeof c,
               "{\"metaData\":{\"id\":\"t\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
               "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":"
               "\\\"id\\\",\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},"
               "{\\\"name\\\":\\\"p\\\",\\\"type\\\":\\\"string\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},"
               "{\\\"name\\\":\\\"extra\\\",\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,"
               "\\\"metadata\\\":{}}]}\",\"partitionColumns\":[\"p\"],\"configuration\":{}}}\n%s",
               add_line(l, sizeof l, name, "q"));
      put(dir, commit_name(v), c);
    } else {
      put(dir, commit_name(v), add_line(l, sizeof l, name, "q"));
    }
    dk_snapshot *upd, *fresh;
    CHECK_OK(dk_snapshot_update(&upd, cur, &err), &err);
    dk_snapshot_free(cur);
    cur = upd;
    dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, -1, 0, 0, 0};
    CHECK_OK(dk_snapshot_open(&fresh, t, &o, &err), &err);
    CHECK_EQ_INT(dk_snapshot_version(cur), v);
    char a[2048], b[2048];
    file_set(cur, a, sizeof a);
    file_set(fresh, b, sizeof b);
    CHECK_EQ_STR(a, b);
    const dk_type *sa = dk_snapshot_schema(cur), *sb = dk_snapshot_schema(fresh);
    CHECK_EQ_INT((int64_t)sa->n_fields, (int64_t)sb->n_fields);
    CHECK_EQ_INT((int64_t)sa->n_fields, v >= 7 ? 3 : 2);
    dk_snapshot_free(fresh);
  }
  dk_snapshot_free(cur);
  dk_table_free(t);
}

/* Counting allocator: live bytes (size kept in a header). */
typedef struct count_ctx {
  int64_t live;
} count_ctx;
static void *cnt_malloc(void *ctx, size_t n) {
  int64_t *p = malloc(n + 16);
  if (!p) return NULL;
  p[0] = (int64_t)n;
  ((count_ctx *)ctx)->live += (int64_t)n;
  return (char *)p + 16;
}
static void cnt_free(void *ctx, void *q) {
  if (!q) return;
  int64_t *p = (int64_t *)((char *)q - 16);
  ((count_ctx *)ctx)->live -= p[0];
  free(p);
}
static void *cnt_realloc(void *ctx, void *q, size_t n) {
  if (!q) return cnt_malloc(ctx, n);
  int64_t *p = (int64_t *)((char *)q - 16);
  int64_t old = p[0];
  int64_t *r = realloc(p, n + 16);
  if (!r) return NULL;
  r[0] = (int64_t)n;
  ((count_ctx *)ctx)->live += (int64_t)n - old;
  return (char *)r + 16;
}

/* A long-lived handle refreshing after every commit and dropping the previous snapshot (what
 * dk.Table, the SQLite vtab and the Spark cache do) keeps one file list alive, not one per
 * refresh: a refresh shares the chunks of its predecessor's list that the commit does not
 * touch, so each step adds far less memory than a copy of the list. */
DK_TEST(log__refresh_chain_memory_bounded) {
  char *dir = basic_table();
  char l[512], name[64];
  /* a table with many files, so that file arrays dominate what a refresh keeps */
  for (int v = 3; v < 6; v++) {
    char *c = malloc(600 * 512);
    size_t n = 0;
    for (int i = 0; i < 600; i++) {
      snprintf(name, sizeof name, "big-%d-%d.parquet", v, i);
      n += (size_t)snprintf(c + n, 600 * 512 - n, "%s", add_line(l, sizeof l, name, "q"));
    }
    put(dir, commit_name(v), c);
    free(c);
  }
  count_ctx cc = {0};
  dk_allocator a = {&cc, cnt_malloc, cnt_realloc, cnt_free};
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION, &a, NULL, 1, 0};
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, &to, &err), &err);
  dk_snapshot *cur;
  CHECK_OK(dk_snapshot_open(&cur, t, NULL, &err), &err);
  int64_t grown_max = 0, prev = cc.live;
  for (int v = 6; v < 13; v++) {
    snprintf(name, sizeof name, "f%d.parquet", v);
    put(dir, commit_name(v), add_line(l, sizeof l, name, "q"));
    dk_snapshot *upd;
    CHECK_OK(dk_snapshot_update(&upd, cur, &err), &err);
    dk_snapshot_free(cur);
    if (cc.live - prev > grown_max) grown_max = cc.live - prev;
    prev = cc.live;
    cur = upd;
  }
  CHECK_EQ_INT(dk_snapshot_num_files(cur), 2 + 1800 + 7); /* b, c, the big commits, 7 steps */
  /* a copy of the list would be 1800+ entries of 48+ bytes a step */
  fprintf(stderr, "  refresh chain: at most %lld bytes kept a step\n", (long long)grown_max);
  CHECK(grown_max < 1800 * 48);
  dk_snapshot_free(cur);
  dk_table_free(t);
  CHECK_EQ_INT(cc.live, 0);
}

DK_TEST(log__commit_range_and_history) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  CHECK_OK(dk_table_open(&t, dir, NULL, &err), &err);
  dk_commit_range *r;
  CHECK_OK(dk_commit_range_open(&r, t, 1, 2, &err), &err);
  /* v1: add b; v2: commitInfo, remove a, add c */
  CHECK_EQ_INT(dk_commit_range_count(r), 4);
  CHECK_EQ_INT(dk_commit_range_action(r, 0)->kind, DK_ACTION_ADD);
  CHECK_EQ_INT(dk_commit_range_action(r, 0)->version, 1);
  CHECK_EQ_STR(dk_commit_range_action(r, 0)->path, "b.parquet");
  CHECK_EQ_INT(dk_commit_range_action(r, 1)->kind, DK_ACTION_COMMIT_INFO);
  CHECK_EQ_INT(dk_commit_range_action(r, 2)->kind, DK_ACTION_REMOVE);
  CHECK_EQ_STR(dk_commit_range_action(r, 2)->path, "a.parquet");
  dk_commit_range_free(r);
  CHECK_STATUS(dk_commit_range_open(&r, t, 1, 7, &err), DK_NOT_FOUND);
  dk_history *h;
  dk_error_init(&err);
  CHECK_OK(dk_history_open(&h, t, 2, &err), &err);
  CHECK_EQ_INT(dk_history_count(h), 2);
  int64_t v, ts;
  const char *ci;
  dk_history_entry(&v, &ts, &ci, h, 0);
  CHECK_EQ_INT(v, 2);
  CHECK_EQ_STR(ci, "{\"timestamp\":3,\"operation\":\"DELETE\"}");
  dk_history_entry(&v, &ts, &ci, h, 1);
  CHECK_EQ_INT(v, 1);
  CHECK_EQ_STR(ci, "{}");
  dk_history_free(h);
  dk_table_free(t);
}

DK_TEST(log__paths_decoded_and_canonical) {
  char *dir = basic_table();
  char c[2048];
  /* an absolute file: URI under the root, percent-encoded, removes the relative add */
  snprintf(c, sizeof c,
           "{\"add\":{\"path\":\"sp%%20ace%%23.parquet\",\"partitionValues\":{},\"size\":1,"
           "\"modificationTime\":1,\"dataChange\":true}}\n"
           "{\"remove\":{\"path\":\"file://%s/b.parquet\",\"dataChange\":true}}\n",
           dir);
  put(dir, commit_name(3), c);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  char fs[256];
  file_set(s, fs, sizeof fs);
  CHECK_EQ_STR(fs, "c.parquet,sp ace#.parquet");
  for (int64_t i = 0; i < dk_snapshot_num_files(s); i++) {
    dk_file_entry f;
    CHECK_OK(dk_snapshot_file(&f, s, i, &err), &err);
    char full[8192], want[8192];
    size_t need = dk_snapshot_file_path(full, sizeof full, s, &f);
    snprintf(want, sizeof want, "%s/%s", dk_snapshot_table_root(s), f.path);
    CHECK_EQ_STR(full, want);
    CHECK_EQ_INT(need, strlen(want));
  }
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__compaction_file_used_and_equivalent) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  char want[256], got[256];
  file_set(s, want, sizeof want);
  dk_snapshot_free(s);
  dk_table_free(t);
  /* 1.2 compacted: v1 add b + v2 remove a / add c, reconciled; the tombstone's
   * deletionTimestamp (99, not 7) shows which file was read */
  char c[2048], l1[512], l2[512];
  snprintf(c, sizeof c,
           "%s%s{\"remove\":{\"path\":\"a.parquet\",\"deletionTimestamp\":99,\"dataChange\":true}}\n",
           add_line(l1, sizeof l1, "b.parquet", "y"), add_line(l2, sizeof l2, "c.parquet", "z"));
  put(dir, "00000000000000000001.00000000000000000002.compacted.json", c);
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 2);
  file_set(s, got, sizeof got);
  CHECK_EQ_STR(got, want);
  dk_tombstone tb;
  CHECK_OK(dk_snapshot_tombstone(&tb, s, 0, &err), &err);
  CHECK_EQ_INT(tb.deletion_timestamp, 99);
  dk_snapshot_free(s);
  /* a compaction reaching past the requested version is not used */
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, 1, 0, 0, 0};
  CHECK_OK(dk_snapshot_open(&s, t, &o, &err), &err);
  file_set(s, got, sizeof got);
  CHECK_EQ_STR(got, "a.parquet,b.parquet");
  dk_snapshot_free(s);
  dk_table_free(t);
}

/* A compaction file that is not reconciled — every action of 0..2, newest first, so that a's
 * remove comes before its add — stands for the same snapshot as the commits (issue 12 item 7:
 * a was returned as live). */
DK_TEST(log__compaction_newest_first_unreconciled) {
  char *dir = basic_table();
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  char want[256], got[256];
  file_set(s, want, sizeof want);
  CHECK_EQ_STR(want, "b.parquet,c.parquet");
  dk_snapshot_free(s);
  dk_table_free(t);
  char c[4096], l1[512], l2[512], l3[512];
  snprintf(c, sizeof c,
           "%s{\"remove\":{\"path\":\"a.parquet\",\"deletionTimestamp\":7,\"dataChange\":true}}\n"
           "%s%s%s%s",
           add_line(l1, sizeof l1, "c.parquet", "z"), add_line(l2, sizeof l2, "b.parquet", "y"),
           add_line(l3, sizeof l3, "a.parquet", "x"), M0, P0);
  put(dir, "00000000000000000000.00000000000000000002.compacted.json", c);
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  file_set(s, got, sizeof got);
  CHECK_EQ_STR(got, want);
  CHECK_EQ_INT(dk_snapshot_num_tombstones(s), 1);
  dk_tombstone tb;
  CHECK_OK(dk_snapshot_tombstone(&tb, s, 0, &err), &err);
  CHECK_EQ_STR(tb.path, "a.parquet");
  dk_snapshot_free(s);
  dk_table_free(t);
}

typedef struct reader_arg {
  dk_snapshot *s;
  unsigned long long sum;
} reader_arg;

static void *read_all(void *p) {
  reader_arg *r = p;
  for (int round = 0; round < 3; round++) {
    dk_file_iter *it;
    if (dk_snapshot_files_open(&it, r->s, NULL, NULL) != DK_OK) return NULL;
    const dk_file_entry *f;
    while (dk_file_iter_next(&f, it, NULL) == DK_OK && f) {
      r->sum += dk__hash_bytes(f->path, strlen(f->path));
      if (f->stats) r->sum += dk__hash_bytes(f->stats, strlen(f->stats));
    }
    dk_file_iter_free(it);
  }
  return NULL;
}

DK_TEST(log__snapshot_shared_by_threads) {
  /* many files with stats, spread over several compressed stats blocks */
  char *dir = mk_table();
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk__buf_puts(&b, P0, NULL);
  dk__buf_puts(&b, M0, NULL);
  for (int i = 0; i < 5000; i++)
    dk__buf_printf(&b, NULL,
                  "{\"add\":{\"path\":\"f%d.parquet\",\"partitionValues\":{\"p\":\"%d\"},\"size\":%d,"
                  "\"modificationTime\":1,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":%d,"
                  "\\\"minValues\\\":{\\\"id\\\":%d},\\\"maxValues\\\":{\\\"id\\\":%d}}\"}}\n",
                  i, i % 7, i, i, i * 10, i * 10 + 9);
  put(dir, commit_name(0), b.data);
  dk__buf_dispose(&b);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(dir, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 5000);
  /* every stats text is the one written for its file */
  dk_file_iter *it;
  CHECK_OK(dk_snapshot_files_open(&it, s, NULL, &err), &err);
  for (int64_t i = 0; i < 5000; i += 499) {
    const dk_file_entry *f;
    CHECK_OK(dk_file_iter_seek(it, i, &err), &err);
    CHECK_OK(dk_file_iter_next(&f, it, &err), &err);
    CHECK(f != NULL);
    int n = atoi(f->path + 1);
    char want[128];
    snprintf(want, sizeof want, "{\"numRecords\":%d,\"minValues\":{\"id\":%d},\"maxValues\":{\"id\":%d}}",
             n, n * 10, n * 10 + 9);
    CHECK_EQ_STR(f->stats, want);
  }
  dk_file_iter_free(it);
  reader_arg a[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    a[i].s = s;
    a[i].sum = 0;
    CHECK(pthread_create(&th[i], NULL, read_all, &a[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  reader_arg one = {s, 0};
  read_all(&one);
  for (int i = 0; i < 4; i++) CHECK(a[i].sum == one.sum);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__relative_root_and_absolute_paths) {
  char *dir = basic_table();
  char c[2048];
  snprintf(c, sizeof c, "{\"remove\":{\"path\":\"%s/b.parquet\",\"dataChange\":true}}\n", dir);
  put(dir, commit_name(3), c);
  char cwd[4096];
  CHECK(getcwd(cwd, sizeof cwd) != NULL);
  CHECK(chdir(dir) == 0);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  dk_status st = open_at(".", -1, &s, &t, &err);
  CHECK(chdir(cwd) == 0);
  CHECK_OK(st, &err);
  char fs[256];
  file_set(s, fs, sizeof fs);
  CHECK_EQ_STR(fs, "c.parquet");
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__v2_sidecar_absolute_uri_and_commits_deleted) {
  /* the real V2 checkpoint of v2-checkpoint-json, copied; its first sidecar is rewritten as
   * an absolute file:// URI and commits 0..2 are deleted: same files as the original */
  char src[4096], dst[4096], cmd[9000];
  snprintf(src, sizeof src, "%s/delta-golden/v2-checkpoint-json", dk_test_data_dir());
  snprintf(dst, sizeof dst, "%s/v2abs", dk_test_tmpdir());
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", src, dst);
  CHECK(system(cmd) == 0);
  dk_error err = {0};
  dk_table *t;
  dk_snapshot *s;
  CHECK_OK(open_at(src, -1, &s, &t, &err), &err);
  char want[4096], got[4096];
  file_set(s, want, sizeof want);
  int64_t v = dk_snapshot_version(s);
  dk_snapshot_free(s);
  dk_table_free(t);
  const char *cp = "00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json";
  const char *side = "00000000000000000002.checkpoint.0000000001.0000000002.bd1885fd-6ec0-4370-b0f5-43b5162fd4de.parquet";
  char path[4300];
  snprintf(path, sizeof path, "%s/_delta_log/%s", dst, cp);
  char *text;
  size_t len;
  CHECK_OK(dk__read_file(NULL, path, &text, &len, &err), &err);
  char *at = strstr(text, side);
  CHECK(at != NULL);
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk__buf_append(&b, text, (size_t)(at - text), NULL);
  dk__buf_printf(&b, NULL, "file://%s/_delta_log/_sidecars/%s", dst, side);
  dk__buf_puts(&b, at + strlen(side), NULL);
  dk__free(NULL, text);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  fwrite(b.data, 1, b.len, f);
  fclose(f);
  dk__buf_dispose(&b);
  for (int k = 0; k <= 2; k++) {
    snprintf(path, sizeof path, "%s/_delta_log/%s", dst, commit_name(k));
    unlink(path);
  }
  CHECK_OK(open_at(dst, -1, &s, &t, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), v);
  file_set(s, got, sizeof got);
  CHECK_EQ_STR(got, want);
  CHECK(dk_snapshot_num_files(s) > 0);
  dk_snapshot_free(s);
  dk_table_free(t);
}
