/* test_txn_alter.c — dk_table_alter: the metadata, protocol and commitInfo each ALTER TABLE
 * kind writes. The expected schemas, protocols and operationParameters are the ones
 * delta-spark 4.4 wrote for the same statements on the same table (ALTER TABLE on a
 * (1,2) table partitioned by p, read back from its _delta_log); tests/spark/test_spark_ddl.py
 * compares the two writers side by side in one SparkSession. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dk/history.h"
#include "dk/snapshot.h"
#include "dk/txn.h"
#include "test.h"

static const char *SCHEMA =
    "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,"
    "\"metadata\":{}},{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"x\","
    "\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{}},"
    "{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}";

static dk_table *new_table(const char *name, dk_error *err) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", dk_test_tmpdir(), name);
  mkdir(dir, 0777);
  dk_table *t = NULL;
  if (dk_table_open(&t, dir, NULL, err)) return NULL;
  const char *parts[] = {"p"};
  dk_create_options o = {.version = DK_CREATE_OPTIONS_VERSION, .schema_string = SCHEMA,
                         .n_partition_columns = 1, .partition_columns = parts};
  if (dk_table_create(NULL, t, &o, err)) {
    dk_table_free(t);
    return NULL;
  }
  return t;
}

/* Runs one ALTER on the latest snapshot. */
static dk_status alter(dk_table *t, dk_alter_options *o, dk_error *err) {
  dk_snapshot *s = NULL;
  dk_status st = dk_snapshot_open(&s, t, NULL, err);
  if (st) return st;
  o->version = DK_ALTER_OPTIONS_VERSION;
  st = dk_table_alter(NULL, s, o, err);
  dk_snapshot_free(s);
  return st;
}

/* The newest commitInfo's operation and operationParameters, as JSON text. */
static int last_commit_has(dk_table *t, const char *needle) {
  dk_history *h = NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_history_open(&h, t, 1, &err)) return 0;
  const char *ci = NULL;
  dk_history_entry(NULL, NULL, &ci, h, 0);
  int ok = ci && strstr(ci, needle) != NULL;
  if (!ok) fprintf(stderr, "commitInfo %s lacks %s\n", ci ? ci : "(none)", needle);
  dk_history_free(h);
  return ok;
}

static int has_feature(const dk_protocol *p, const char *f, int reader) {
  size_t n = reader ? p->n_reader_features : p->n_writer_features;
  const char *const *l = reader ? p->reader_features : p->writer_features;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(l[i], f)) return 1;
  return 0;
}

DK_TEST(txn_alter__properties_and_protocol_upgrades) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t = new_table("alter_props", &err);
  CHECK(t);
  /* known keys take DeltaConfigs' case; other keys pass through */
  const char *set1[] = {"delta.APPENDONLY", "true", "foo", "bar"};
  dk_alter_options o = {.kind = DK_ALTER_SET_PROPERTIES, .n_properties = 2, .properties = set1};
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK(last_commit_has(t, "\"operation\":\"SET TBLPROPERTIES\""));
  CHECK(last_commit_has(t, "{\\\"delta.appendOnly\\\":\\\"true\\\",\\\"foo\\\":\\\"bar\\\"}"));
  dk_snapshot *s = NULL;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.appendOnly"), "true");
  CHECK_EQ_INT(dk_snapshot_protocol(s)->min_writer_version, 2);
  dk_snapshot_free(s);
  /* unknown delta.* keys and bad values are refused, nothing committed */
  const char *bad1[] = {"delta.nosuch", "1"};
  o.properties = bad1;
  o.n_properties = 1;
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &o, &err), DK_INVALID);
  CHECK(strstr(err.message, "DELTA_UNKNOWN_CONFIGURATION") != NULL);
  const char *bad2[] = {"delta.appendOnly", "maybe"};
  o.properties = bad2;
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &o, &err), DK_INVALID);
  const char *bad3[] = {"delta.checkpointInterval", "0"};
  o.properties = bad3;
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &o, &err), DK_INVALID);
  /* UNSET: ifExists is always recorded */
  const char *unset[] = {"foo", "nosuch"};
  dk_alter_options u = {.kind = DK_ALTER_UNSET_PROPERTIES, .n_properties = 2,
                        .properties = unset};
  CHECK_OK(alter(t, &u, &err), &err);
  CHECK(last_commit_has(t, "\"ifExists\":\"true\""));
  CHECK(last_commit_has(t, "\"properties\":\"[\\\"foo\\\",\\\"nosuch\\\"]\""));
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK(dk_snapshot_property(s, "foo") == NULL);
  dk_snapshot_free(s);
  /* CDF on (1,2): table features with the implied ones, as delta-spark 4.4 writes */
  const char *cdf[] = {"delta.enableChangeDataFeed", "true"};
  o.properties = cdf;
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  const dk_protocol *p = dk_snapshot_protocol(s);
  CHECK_EQ_INT(p->min_reader_version, 1);
  CHECK_EQ_INT(p->min_writer_version, 7);
  CHECK_EQ_INT(p->n_writer_features, 3);
  CHECK(has_feature(p, "changeDataFeed", 0) && has_feature(p, "appendOnly", 0) &&
        has_feature(p, "invariants", 0));
  dk_snapshot_free(s);
  /* deletion vectors: reader 3 with readerFeatures */
  const char *dv[] = {"delta.enableDeletionVectors", "true"};
  o.properties = dv;
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  p = dk_snapshot_protocol(s);
  CHECK_EQ_INT(p->min_reader_version, 3);
  CHECK_EQ_INT(p->n_reader_features, 1);
  CHECK(has_feature(p, "deletionVectors", 1) && has_feature(p, "deletionVectors", 0));
  dk_snapshot_free(s);
  /* column mapping with explicit (2,5): the features those versions imply are listed */
  const char *cm[] = {"delta.columnMapping.mode", "name", "delta.minReaderVersion", "2",
                      "delta.minWriterVersion", "5"};
  o.properties = cm;
  o.n_properties = 3;
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  p = dk_snapshot_protocol(s);
  CHECK_EQ_INT(p->min_reader_version, 3);
  CHECK_EQ_INT(p->n_reader_features, 2);
  CHECK_EQ_INT(p->n_writer_features, 7);
  CHECK(has_feature(p, "columnMapping", 1) && has_feature(p, "generatedColumns", 0) &&
        has_feature(p, "checkConstraints", 0));
  CHECK(dk_snapshot_property(s, "delta.minReaderVersion") == NULL);
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.columnMapping.maxColumnId"), "4");
  /* existing columns keep their names as physical names */
  CHECK(strstr(dk_snapshot_metadata(s)->schema_string, "\"delta.columnMapping.physicalName\":\"id\"") !=
        NULL);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(txn_alter__columns) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t = new_table("alter_cols", &err);
  CHECK(t);
  /* ADD COLUMNS: last, nested, FIRST, AFTER; the parameters name the path and typeName */
  const char *pc[] = {"c"}, *psy[] = {"s", "y"}, *pf[] = {"f"}, *pg[] = {"g"};
  dk_alter_column add[] = {
      {.n_path = 1, .path = pc, .type_json = "\"integer\"", .nullable = 1, .comment = "cc"},
      {.n_path = 2, .path = psy, .type_json = "\"string\"", .nullable = 1},
      {.n_path = 1, .path = pf, .type_json = "{\"type\":\"map\",\"keyType\":\"string\","
                                              "\"valueType\":\"integer\","
                                              "\"valueContainsNull\":true}",
       .nullable = 1, .after = ""},
      {.n_path = 1, .path = pg, .type_json = "\"integer\"", .nullable = 1, .after = "id"}};
  dk_alter_options o = {.kind = DK_ALTER_ADD_COLUMNS, .n_columns = 4, .columns = add};
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK(last_commit_has(t, "\"operation\":\"ADD COLUMNS\""));
  CHECK(last_commit_has(t, "{\\\"column\\\":{\\\"name\\\":\\\"c\\\",\\\"type\\\":\\\"integer\\\","
                           "\\\"nullable\\\":true,\\\"metadata\\\":{\\\"comment\\\":\\\"cc\\\"}}}"));
  CHECK(last_commit_has(t, "\\\"name\\\":\\\"s.y\\\""));
  CHECK(last_commit_has(t, "\\\"type\\\":\\\"map\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},"
                           "\\\"position\\\":\\\"FIRST\\\"}"));
  CHECK(last_commit_has(t, "\\\"position\\\":\\\"AFTER id\\\""));
  dk_snapshot *s = NULL;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  const char *ss = dk_snapshot_metadata(s)->schema_string;
  /* field order: f, id, g, s{x, y}, p, c */
  const char *order[] = {"\"f\"", "\"id\"", "\"g\"", "\"x\"", "\"y\"", "\"p\"", "\"c\""};
  const char *at = ss;
  for (size_t i = 0; i < 7; i++) {
    const char *n = strstr(at, order[i]);
    CHECK(n != NULL);
    at = n;
  }
  dk_snapshot_free(s);
  /* NOT NULL is refused; RENAME and DROP need column mapping */
  const char *ph[] = {"h"};
  dk_alter_column nn = {.n_path = 1, .path = ph, .type_json = "\"long\"", .nullable = 0};
  o.columns = &nn;
  o.n_columns = 1;
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &o, &err), DK_UNSUPPORTED);
  dk_alter_column ren = {.n_path = 1, .path = pc, .new_name = "c2"};
  dk_alter_options r = {.kind = DK_ALTER_RENAME_COLUMN, .n_columns = 1, .columns = &ren};
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &r, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "[DELTA_UNSUPPORTED_RENAME_COLUMN] Column rename is not supported "
                            "for your Delta table.") != NULL);
  dk_alter_options d = {.kind = DK_ALTER_DROP_COLUMNS, .n_columns = 1, .columns = &ren};
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &d, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "[DELTA_UNSUPPORTED_DROP_COLUMN]") != NULL);
  /* with column mapping */
  const char *cm[] = {"delta.columnMapping.mode", "name"};
  dk_alter_options sp = {.kind = DK_ALTER_SET_PROPERTIES, .n_properties = 1, .properties = cm};
  CHECK_OK(alter(t, &sp, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_protocol(s)->min_reader_version, 2);
  CHECK_EQ_INT(dk_snapshot_protocol(s)->min_writer_version, 7);
  dk_snapshot_free(s);
  CHECK_OK(alter(t, &r, &err), &err);
  CHECK(last_commit_has(t, "\"oldColumnPath\":\"c\""));
  CHECK(last_commit_has(t, "\"newColumnPath\":\"c2\""));
  const char *psx[] = {"s", "x"}, *pp[] = {"p"};
  dk_alter_column ren2 = {.n_path = 2, .path = psx, .new_name = "x2"};
  r.columns = &ren2;
  CHECK_OK(alter(t, &r, &err), &err);
  CHECK(last_commit_has(t, "\"newColumnPath\":\"s.x2\""));
  /* a renamed partition column stays the partition column */
  dk_alter_column ren3 = {.n_path = 1, .path = pp, .new_name = "p2"};
  r.columns = &ren3;
  CHECK_OK(alter(t, &r, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_EQ_INT(dk_snapshot_metadata(s)->n_partition_columns, 1);
  CHECK_EQ_STR(dk_snapshot_metadata(s)->partition_columns[0], "p2");
  CHECK(strstr(dk_snapshot_metadata(s)->schema_string, "\"delta.columnMapping.physicalName\":\"p\"") !=
        NULL);
  dk_snapshot_free(s);
  /* DROP: partition columns refused; IF EXISTS skips missing ones */
  const char *pp2[] = {"p2"}, *pno[] = {"nosuch"};
  dk_alter_column dp = {.n_path = 1, .path = pp2};
  d.columns = &dp;
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &d, &err), DK_INVALID);
  CHECK(strstr(err.message, "Dropping partition columns (p2) is not allowed.") != NULL);
  dk_alter_column drops[] = {{.n_path = 2, .path = psy}, {.n_path = 1, .path = pno}};
  d.columns = drops;
  d.n_columns = 2;
  d.if_exists = 1;
  CHECK_OK(alter(t, &d, &err), &err);
  CHECK(last_commit_has(t, "\"columns\":\"[\\\"s.y\\\"]\""));
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK(strstr(dk_snapshot_metadata(s)->schema_string, "\"y\"") == NULL);
  /* the highest column id stays (ids are never reused) */
  CHECK_EQ_STR(dk_snapshot_property(s, "delta.columnMapping.maxColumnId"), "8");
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(txn_alter__row_tracking_needs_backfill) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t = new_table("alter_rt", &err);
  CHECK(t);
  const char *rt[] = {"delta.enableRowTracking", "true"};
  dk_alter_options o = {.kind = DK_ALTER_SET_PROPERTIES, .n_properties = 1, .properties = rt};
  /* a table with a file: refused (its rows would have no ids) */
  dk_snapshot *s = NULL;
  dk_txn *x = NULL;
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  CHECK_OK(dk_txn_begin(&x, s, NULL, &err), &err);
  const char *kv[] = {"p", "a"};
  dk_add_file f = {.version = DK_ADD_FILE_VERSION, .path = "p=a/f.parquet",
                   .n_partition_values = 1, .partition_kv = kv, .size = 10,
                   .modification_time = 1, .data_change = 1, .stats = "{\"numRecords\":1}"};
  CHECK_OK(dk_txn_add_file(x, &f, &err), &err);
  CHECK_OK(dk_txn_commit(x, NULL, &err), &err);
  dk_snapshot_free(s);
  dk_error_init(&err);
  CHECK_EQ_INT(alter(t, &o, &err), DK_UNSUPPORTED);
  CHECK(strstr(err.message, "ROW TRACKING BACKFILL") != NULL);
  dk_table_free(t);
  /* an empty table: the feature and its domainMetadata dependency are added */
  t = new_table("alter_rt_empty", &err);
  CHECK(t);
  CHECK_OK(alter(t, &o, &err), &err);
  CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
  const dk_protocol *p = dk_snapshot_protocol(s);
  CHECK(has_feature(p, "rowTracking", 0) && has_feature(p, "domainMetadata", 0));
  CHECK_EQ_INT(p->min_reader_version, 1);
  dk_snapshot_free(s);
  dk_table_free(t);
}
