/* test_txn_handoff.c — a transaction written by other processes: the writer state round
 * trip, writer transactions staging adds keyed by physical partition names (column mapping),
 * the adds handed back and committed once, and the refusals (corrupt state, bad partition
 * values, a writer committing). The Spark connector's suite checks the same path end to end
 * against delta-spark. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dk/txn.h"
#include "test.h"
#include "util/util.h"

/* p is column-mapped: its physical name differs from its logical one */
static const char *CM_SCHEMA =
    "{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"long\",\"nullable\":true,"
    "\"metadata\":{\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-x\"}},"
    "{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":"
    "{\"delta.columnMapping.id\":2,\"delta.columnMapping.physicalName\":\"col-p\"}}]}";

static char g_hdir[1024];

static const char *hdir(const char *name) {
  snprintf(g_hdir, sizeof g_hdir, "%s/%s", dk_test_tmpdir(), name);
  mkdir(g_hdir, 0777);
  return g_hdir;
}

/* What an executor does: a writer transaction from the state, two files staged, exported. */
static dk_status executor(char **adds, size_t *len, dk_table *t, const char *state, size_t slen,
                          const char *part, dk_error *err) {
  dk_txn *w;
  DK_RETURN_NOT_OK(dk_txn_begin_writer(&w, t, state, slen, NULL, err));
  dk_status st = DK_OK;
  for (int i = 0; i < 2 && !st; i++) {
    char path[64];
    snprintf(path, sizeof path, "p=%s/part-%05d.parquet", part, i);
    const char *kv[] = {"p", part};
    dk_add_file f = {.version = DK_ADD_FILE_VERSION, .path = path, .n_partition_values = 1,
                     .partition_kv = kv, .size = 10 + i, .modification_time = 7,
                     .data_change = 1, .stats = "{\"numRecords\":3}"};
    st = dk_txn_add_file(w, &f, err);
  }
  if (!st) st = dk_txn_staged_adds(adds, len, w, err);
  /* a writer transaction never commits */
  if (!st) {
    dk_error e2;
    dk_error_init(&e2);
    if (dk_txn_commit(w, NULL, &e2) != DK_INVALID)
      st = dk__error_set(err, DK_INTERNAL, "writer committed");
  } else {
    dk_txn_abort(w);
  }
  return st;
}

DK_TEST(txn__handoff_round_trip) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, hdir("handoff"), NULL, &err), &err);
  const char *pcols[] = {"p"};
  const char *conf[] = {"delta.columnMapping.mode", "name", "delta.columnMapping.maxColumnId",
                        "2"};
  dk_create_options co = {.version = DK_CREATE_OPTIONS_VERSION, .schema_string = CM_SCHEMA,
                          .n_partition_columns = 1, .partition_columns = pcols,
                          .n_properties = 2, .properties = conf};
  CHECK_OK(dk_table_create(NULL, t, &co, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  dk_txn *x;
  CHECK_OK(dk_txn_begin(&x, s, NULL, &err), &err);
  char *state = NULL;
  size_t slen = 0;
  CHECK_OK(dk_txn_writer_state(&state, &slen, x, &err), &err);
  CHECK(strstr(state, "col-p") != NULL && strlen(state) == slen);
  char *a1 = NULL, *a2 = NULL;
  size_t l1 = 0, l2 = 0;
  CHECK_OK(executor(&a1, &l1, t, state, slen, "a", &err), &err);
  CHECK_OK(executor(&a2, &l2, t, state, slen, "b%c", &err), &err);
  /* physical partition keys, the stored (not URI-encoded) path */
  CHECK(strstr(a1, "\"partitionValues\":{\"col-p\":\"a\"}") != NULL);
  CHECK(strstr(a2, "\"path\":\"p=b%c/part-00001.parquet\"") != NULL);
  int64_t n = 0;
  CHECK_OK(dk_txn_add_staged(x, a1, l1, &n, &err), &err);
  CHECK_EQ_INT(n, 2);
  CHECK_OK(dk_txn_add_staged(x, a2, l2, &n, &err), &err);
  CHECK_EQ_INT(n, 2);
  /* all or nothing: a bad line after a good one stages neither */
  char bad[4096];
  snprintf(bad, sizeof bad, "%s{\"add\":{\"path\":\"q\",\"partitionValues\":{\"p\":\"a\"},"
                            "\"size\":1,\"modificationTime\":1,\"dataChange\":true}}\n", a1);
  dk_error_init(&err);
  CHECK_STATUS(dk_txn_add_staged(x, bad, strlen(bad), &n, &err), DK_INVALID);
  CHECK(strstr(err.message, "DELTA_INVALID_PARTITIONING_SCHEMA") != NULL);
  dk_error_init(&err);
  CHECK_STATUS(dk_txn_add_staged(x, "{\"remove\":{\"path\":\"q\"}}", 24, &n, &err), DK_CORRUPT);
  dk_error_init(&err);
  CHECK_OK(dk_txn_commit(x, NULL, &err), &err);
  dk_snapshot_free(s);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 1);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 4);
  int seen_b = 0;
  for (int64_t i = 0; i < 4; i++) {
    dk_file_entry f;
    CHECK_OK(dk_snapshot_file(&f, s, i, &err), &err);
    CHECK_EQ_STR(f.partition_kv[0], "col-p");
    if (!strcmp(f.partition_kv[1], "b%c")) {
      seen_b++;
      CHECK(!strncmp(f.path, "p=b%c/", 6)); /* decoded back from the log's URI form */
    }
  }
  CHECK_EQ_INT(seen_b, 2);
  dk_snapshot_free(s);
  /* not a writer state */
  dk_txn *w = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_txn_begin_writer(&w, t, "{\"protocol\":{\"minReaderVersion\":1,"
                                          "\"minWriterVersion\":2}}\n", 55, NULL, &err),
               DK_CORRUPT);
  CHECK(w == NULL);
  dk_error_init(&err);
  CHECK_STATUS(dk_txn_begin_writer(&w, t, "garbage", 7, NULL, &err), DK_CORRUPT);
  dk_free(state);
  dk_free(a1);
  dk_free(a2);
  dk_table_free(t);
}

DK_TEST(txn__handoff_new_table) {
  /* a CTAS: the writer state of a create transaction carries its staged metadata */
  dk_error err;
  dk_error_init(&err);
  dk_table *t;
  CHECK_OK(dk_table_open(&t, hdir("handoff_new"), NULL, &err), &err);
  dk_txn *x;
  CHECK_OK(dk_txn_begin_create(&x, t, NULL, &err), &err);
  char *state = NULL;
  size_t slen;
  CHECK_STATUS(dk_txn_writer_state(&state, &slen, x, &err), DK_INVALID);
  const char *pcols[] = {"p"};
  dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .schema_string = CM_SCHEMA,
                        .n_partition_columns = 1, .partition_columns = pcols,
                        .created_time = -1};
  dk_error_init(&err);
  CHECK_OK(dk_txn_set_metadata(x, &m, &err), &err);
  CHECK_OK(dk_txn_writer_state(&state, &slen, x, &err), &err);
  char *adds = NULL;
  size_t alen;
  CHECK_OK(executor(&adds, &alen, t, state, slen, "z", &err), &err);
  /* the staged metadata's physical names key the partition values */
  CHECK(strstr(adds, "\"col-p\":\"z\"") != NULL);
  CHECK_OK(dk_txn_add_staged(x, adds, alen, NULL, &err), &err);
  CHECK_OK(dk_txn_commit(x, NULL, &err), &err);
  dk_snapshot *s;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_version(s), 0);
  CHECK_EQ_INT(dk_snapshot_num_files(s), 2);
  dk_snapshot_free(s);
  dk_free(state);
  dk_free(adds);
  dk_table_free(t);
}
