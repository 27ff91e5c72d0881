/*
** test_protocol_config.c — typed table properties (src/protocol/table_config.c). Oracles:
** delta-spark's DeltaConfigs defaults (checkpointInterval 10, logRetentionDuration 30 days,
** deletedFileRetentionDuration 1 week, dataSkippingNumIndexedCols 32, isolation level
** WriteSerializable, randomPrefixLength 2), the interval cases of delta-kernel-rs'
** table_properties/deserialize.rs tests, and every table of the shared corpus, whose
** properties (written by Delta-Spark) must all parse.
*/
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "dk/snapshot.h"
#include "protocol/table_config.h"
#include "test.h"

static dk_metadata meta(const char *const *kv, size_t n) {
  dk_metadata m;
  memset(&m, 0, sizeof m);
  static const char *keys[32], *vals[32];
  for (size_t i = 0; i < n; i++) {
    keys[i] = kv[2 * i];
    vals[i] = kv[2 * i + 1];
  }
  m.n_configuration = n;
  m.config_keys = keys;
  m.config_values = vals;
  return m;
}

DK_TEST(protocol_config__defaults) {
  dk_metadata m = meta(NULL, 0);
  dk__table_config c;
  CHECK_OK(dk_protocol__config_read(&c, &m, true, NULL), NULL);
  CHECK_EQ_INT(c.checkpoint_interval, 10);
  CHECK_EQ_INT(c.log_retention_ms, 30LL * 86400000);
  CHECK_EQ_INT(c.deleted_file_retention_ms, 7LL * 86400000);
  CHECK_EQ_INT(c.txn_retention_ms, -1);
  CHECK_EQ_INT(c.stats_num_indexed_cols, 32);
  CHECK(c.stats_columns == NULL);
  CHECK(c.checkpoint_stats_as_json && !c.checkpoint_stats_as_struct);
  CHECK_EQ_INT(c.checkpoint_policy, DK__CHECKPOINT_CLASSIC);
  CHECK_EQ_INT(c.isolation_level, DK__ISOLATION_WRITE_SERIALIZABLE);
  CHECK(!c.append_only && !c.enable_deletion_vectors && !c.enable_change_data_feed);
  CHECK_EQ_INT(c.column_mapping_mode, DK_COLUMN_MAPPING_NONE);
  CHECK_EQ_INT(c.random_prefix_length, 2);
  CHECK_EQ_INT(dk_protocol__ict_from(&c), -1);
  CHECK(c.invalid_key == NULL);
}

DK_TEST(protocol_config__values) {
  static const char *const kv[] = {
      "delta.checkpointInterval", "2",           "delta.appendOnly", "TRUE",
      "delta.enableDeletionVectors", "true",     "delta.enableChangeDataFeed", "false",
      "delta.columnMapping.mode", "name",        "delta.columnMapping.maxColumnId", "53",
      "delta.dataSkippingNumIndexedCols", "-1",  "delta.dataSkippingStatsColumns", "a,b.c",
      "delta.logRetentionDuration", "interval 2 days", "delta.deletedFileRetentionDuration",
      "1 hour",                                  "delta.isolationLevel", "Serializable",
      "delta.checkpointPolicy", "v2",            "delta.enableInCommitTimestamps", "true",
      "delta.inCommitTimestampEnablementVersion", "7",
      "delta.inCommitTimestampEnablementTimestamp", "1700000000000",
      "delta.enableRowTracking", "true",         "delta.randomizeFilePrefixes", "true"};
  dk_metadata m = meta(kv, DK_ARRAY_LEN(kv) / 2);
  dk__table_config c;
  CHECK_OK(dk_protocol__config_read(&c, &m, true, NULL), NULL);
  CHECK_EQ_INT(c.checkpoint_interval, 2);
  CHECK(c.append_only && c.enable_deletion_vectors && !c.enable_change_data_feed);
  CHECK_EQ_INT(c.column_mapping_mode, DK_COLUMN_MAPPING_NAME);
  CHECK_EQ_INT(c.column_mapping_max_id, 53);
  CHECK_EQ_INT(c.stats_num_indexed_cols, -1);
  CHECK_EQ_STR(c.stats_columns, "a,b.c");
  CHECK_EQ_INT(c.log_retention_ms, 2LL * 86400000);
  CHECK_EQ_INT(c.deleted_file_retention_ms, 3600000);
  CHECK_EQ_INT(c.isolation_level, DK__ISOLATION_SERIALIZABLE);
  CHECK_EQ_INT(c.checkpoint_policy, DK__CHECKPOINT_V2);
  CHECK_EQ_INT(dk_protocol__ict_from(&c), 7);
  CHECK_EQ_INT(c.ict_enablement_timestamp, 1700000000000LL);
  CHECK(c.enable_row_tracking && c.randomize_file_prefixes);
}

DK_TEST(protocol_config__intervals) {
  static const struct {
    const char *text;
    int64_t ms; /* -1: refused */
  } cases[] = {
      {"interval 123 nanosecond", 0},      {"interval 123000000 nanoseconds", 123},
      {"interval 123 microsecond", 0},     {"interval 123000 microseconds", 123},
      {"interval 123 millisecond", 123},   {"interval 123 milliseconds", 123},
      {"interval 123 second", 123000},     {"interval 123 minutes", 7380000},
      {"interval 123 hour", 442800000},    {"interval 123 days", 10627200000LL},
      {"interval 1 week", 604800000},      {"INTERVAL 2 Weeks", 1209600000},
      {"30 days", 2592000000LL},           {"interval 1 day 12 hours", 129600000},
      {"interval 1 month", -1},            {"interval 1 year", -1},
      {"interval -1 day", -1},             {"interval", -1},
      {"interval 5", -1},                  {"interval five days", -1},
      {"", -1},                            {"interval 1 fortnight", -1},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(cases); i++) {
    int64_t ms = -1;
    bool ok = dk_protocol__parse_interval_ms(cases[i].text, &ms);
    if (cases[i].ms < 0) {
      if (ok) dk_test_fail(__FILE__, __LINE__, "'%s' parsed", cases[i].text);
      CHECK(!ok);
    } else {
      if (!ok || ms != cases[i].ms)
        dk_test_fail(__FILE__, __LINE__, "'%s': %lld", cases[i].text, (long long)ms);
      CHECK(ok && ms == cases[i].ms);
    }
  }
}

DK_TEST(protocol_config__invalid_values) {
  static const char *const kv[] = {"delta.checkpointInterval", "0", "delta.appendOnly", "yes"};
  dk_metadata m = meta(kv, 2);
  dk__table_config c;
  CHECK_OK(dk_protocol__config_read(&c, &m, false, NULL), NULL);
  CHECK_EQ_INT(c.checkpoint_interval, 10); /* the default */
  CHECK(!c.append_only);
  CHECK_EQ_STR(c.invalid_key, "delta.checkpointInterval");
  dk_error err;
  dk_error_init(&err);
  CHECK_STATUS(dk_protocol__config_read(&c, &m, true, &err), DK_CORRUPT);
  CHECK(strstr(err.message, "delta.checkpointInterval") && strstr(err.message, "'0'"));
  /* a repeated key: the last one wins */
  static const char *const rep[] = {"delta.appendOnly", "false", "delta.appendOnly", "true"};
  m = meta(rep, 2);
  CHECK_OK(dk_protocol__config_read(&c, &m, true, NULL), NULL);
  CHECK(c.append_only);
}

/* Every table of the corpus: its properties, as Delta-Spark wrote them, parse. */
static int walk(const char *dir, int depth, int *tables, char *bad, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) || !S_ISDIR(sb.st_mode)) continue;
    if (!strcmp(e->d_name, "_delta_log")) {
      dk_table *t;
      dk_snapshot *s;
      if (dk_table_open(&t, dir, NULL, NULL) != DK_OK) continue;
      if (dk_snapshot_open(&s, t, NULL, NULL) == DK_OK) {
        dk__table_config c;
        dk_error err;
        dk_error_init(&err);
        if (dk_protocol__config_read(&c, dk_snapshot_metadata(s), true, &err) != DK_OK &&
            strlen(bad) + strlen(err.message) + 3 < cap) {
          strcat(bad, dir);
          strcat(bad, ": ");
          strcat(bad, err.message);
        }
        (*tables)++;
        dk_snapshot_free(s);
      }
      dk_table_free(t);
    } else if (depth < 4) {
      walk(path, depth + 1, tables, bad, cap);
    }
  }
  closedir(d);
  return 0;
}

DK_TEST(protocol_config__corpus_properties_parse) {
  int tables = 0;
  char bad[4096] = "";
  walk(dk_test_data_dir(), 0, &tables, bad, sizeof bad);
  CHECK(tables > 50);
  CHECK_EQ_STR(bad, "");
}
