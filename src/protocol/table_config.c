/*
** table_config.c — the delta.* table properties of a metaData action as typed values, with
** delta-spark's defaults (DeltaConfigs) and value syntax: booleans "true"/"false" in any
** case, integers in decimal, durations as "[interval] <n> <unit> [<n> <unit> ...]" with units
** from nanoseconds to weeks (months and years have no fixed length and are refused, as
** DeltaConfigs.isValidIntervalConfig does).
**
** Follows PROTOCOL.md "In-Commit Timestamps" (enablement version and timestamp), "Column
** Mapping" (mode, maxColumnId), "Deletion Vectors", "Change Data Files", "Append-only
** Tables", "Row Tracking", "V2 Checkpoint" (checkpointPolicy) and "Per-file Statistics"
** (dataSkippingNumIndexedCols / dataSkippingStatsColumns).
*/
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "protocol/table_config.h"

#define MS_PER_DAY ((int64_t)86400000)

const char *dk_protocol__property(const dk_metadata *m, const char *key) {
  const char *v = NULL;
  for (size_t i = 0; i < m->n_configuration; i++)
    if (!strcmp(m->config_keys[i], key)) v = m->config_values[i];
  return v;
}

static bool parse_bool(const char *s, bool *out) {
  if (!strcasecmp(s, "true")) *out = true;
  else if (!strcasecmp(s, "false")) *out = false;
  else return false;
  return true;
}

static bool parse_int(const char *s, int64_t lo, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo) return false;
  *out = v;
  return true;
}

/* Case-insensitive word at *p (advanced past it and the spaces after). */
static bool word(const char **p, char *buf, size_t cap) {
  size_t n = 0;
  while (**p && !isspace((unsigned char)**p)) {
    if (n + 1 >= cap) return false;
    buf[n++] = (char)tolower((unsigned char)**p);
    (*p)++;
  }
  buf[n] = 0;
  while (isspace((unsigned char)**p)) (*p)++;
  return n > 0;
}

bool dk_protocol__parse_interval_ms(const char *s, int64_t *out) {
  static const struct {
    const char *unit;
    int64_t num, den; /* milliseconds = n * num / den */
  } units[] = {{"nanosecond", 1, 1000000}, {"microsecond", 1, 1000}, {"millisecond", 1, 1},
               {"second", 1000, 1},        {"minute", 60000, 1},    {"hour", 3600000, 1},
               {"day", MS_PER_DAY, 1},     {"week", 7 * MS_PER_DAY, 1}};
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  char w[32];
  const char *save = p;
  if (!word(&p, w, sizeof w)) return false;
  if (strcmp(w, "interval")) p = save; /* the keyword is optional */
  int64_t total = 0;
  int pairs = 0;
  while (*p) {
    char num[32], unit[32];
    int64_t n;
    if (!word(&p, num, sizeof num) || !parse_int(num, 0, &n) || !word(&p, unit, sizeof unit))
      return false;
    size_t ul = strlen(unit);
    if (ul > 1 && unit[ul - 1] == 's') unit[ul - 1] = 0; /* plural */
    size_t k = 0;
    while (k < DK_ARRAY_LEN(units) && strcmp(units[k].unit, unit)) k++;
    if (k == DK_ARRAY_LEN(units)) return false; /* months, years, unknown units */
    if (n > INT64_MAX / units[k].num) return false;
    int64_t ms = n * units[k].num / units[k].den;
    if (total > INT64_MAX - ms) return false;
    total += ms;
    pairs++;
  }
  if (!pairs) return false;
  *out = total;
  return true;
}

typedef struct reader {
  const dk_metadata *m;
  dk__table_config *c;
} reader;

static void invalid(reader *r, const char *key, const char *v) {
  if (!r->c->invalid_key) {
    r->c->invalid_key = key;
    r->c->invalid_value = v;
  }
}

static void get_bool(reader *r, const char *key, bool *out) {
  const char *v = dk_protocol__property(r->m, key);
  if (v && !parse_bool(v, out)) invalid(r, key, v);
}

static void get_int(reader *r, const char *key, int64_t lo, int64_t *out) {
  const char *v = dk_protocol__property(r->m, key);
  int64_t x;
  if (!v) return;
  if (parse_int(v, lo, &x)) *out = x;
  else invalid(r, key, v);
}

static void get_interval(reader *r, const char *key, int64_t *out) {
  const char *v = dk_protocol__property(r->m, key);
  int64_t x;
  if (!v) return;
  if (dk_protocol__parse_interval_ms(v, &x)) *out = x;
  else invalid(r, key, v);
}

/* One of `names` (case-insensitive); its index in *out. */
static void get_enum(reader *r, const char *key, const char *const *names, int n, int *out) {
  const char *v = dk_protocol__property(r->m, key);
  if (!v) return;
  for (int i = 0; i < n; i++)
    if (!strcasecmp(v, names[i])) {
      *out = i;
      return;
    }
  invalid(r, key, v);
}

dk_status dk_protocol__config_read(dk__table_config *out, const dk_metadata *m, bool strict,
                                   dk_error *err) {
  memset(out, 0, sizeof *out);
  dk__table_config *c = out;
  c->checkpoint_interval = 10;
  c->checkpoint_stats_as_json = true;
  c->log_retention_ms = 30 * MS_PER_DAY;
  c->deleted_file_retention_ms = 7 * MS_PER_DAY;
  c->txn_retention_ms = -1;
  c->expired_log_cleanup = true;
  c->column_mapping_max_id = -1;
  c->stats_num_indexed_cols = 32;
  c->ict_enablement_version = -1;
  c->ict_enablement_timestamp = -1;
  c->random_prefix_length = 2;
  c->target_file_size = -1;
  reader r = {m, c};
  get_int(&r, "delta.checkpointInterval", 1, &c->checkpoint_interval);
  get_bool(&r, "delta.checkpoint.writeStatsAsJson", &c->checkpoint_stats_as_json);
  get_bool(&r, "delta.checkpoint.writeStatsAsStruct", &c->checkpoint_stats_as_struct);
  static const char *const policies[] = {"classic", "v2"};
  int pol = 0;
  get_enum(&r, "delta.checkpointPolicy", policies, 2, &pol);
  c->checkpoint_policy = (dk__checkpoint_policy)pol;
  get_interval(&r, "delta.logRetentionDuration", &c->log_retention_ms);
  get_interval(&r, "delta.deletedFileRetentionDuration", &c->deleted_file_retention_ms);
  get_interval(&r, "delta.setTransactionRetentionDuration", &c->txn_retention_ms);
  get_bool(&r, "delta.enableExpiredLogCleanup", &c->expired_log_cleanup);
  get_bool(&r, "delta.appendOnly", &c->append_only);
  get_bool(&r, "delta.enableDeletionVectors", &c->enable_deletion_vectors);
  get_bool(&r, "delta.enableChangeDataFeed", &c->enable_change_data_feed);
  get_bool(&r, "delta.enableTypeWidening", &c->enable_type_widening);
  /* the mode is matched exactly, as dk always has: "id" and "name" (anything else is none) */
  const char *cm = dk_protocol__property(m, "delta.columnMapping.mode");
  c->column_mapping_mode = DK_COLUMN_MAPPING_NONE;
  if (cm && !strcmp(cm, "id")) c->column_mapping_mode = DK_COLUMN_MAPPING_ID;
  else if (cm && !strcmp(cm, "name")) c->column_mapping_mode = DK_COLUMN_MAPPING_NAME;
  else if (cm && strcmp(cm, "none")) invalid(&r, "delta.columnMapping.mode", cm);
  get_int(&r, "delta.columnMapping.maxColumnId", 0, &c->column_mapping_max_id);
  get_int(&r, "delta.dataSkippingNumIndexedCols", -1, &c->stats_num_indexed_cols);
  c->stats_columns = dk_protocol__property(m, "delta.dataSkippingStatsColumns");
  get_bool(&r, "delta.enableInCommitTimestamps", &c->enable_ict);
  get_int(&r, "delta.inCommitTimestampEnablementVersion", 0, &c->ict_enablement_version);
  get_int(&r, "delta.inCommitTimestampEnablementTimestamp", INT64_MIN,
          &c->ict_enablement_timestamp);
  static const char *const levels[] = {"WriteSerializable", "Serializable", "SnapshotIsolation"};
  int lvl = 0;
  get_enum(&r, "delta.isolationLevel", levels, 3, &lvl);
  c->isolation_level = (dk__isolation_level)lvl;
  get_bool(&r, "delta.randomizeFilePrefixes", &c->randomize_file_prefixes);
  get_int(&r, "delta.randomPrefixLength", 1, &c->random_prefix_length);
  get_int(&r, "delta.targetFileSize", 1, &c->target_file_size);
  get_bool(&r, "delta.enableRowTracking", &c->enable_row_tracking);
  get_bool(&r, "delta.rowTrackingSuspended", &c->row_tracking_suspended);
  c->row_id_column = dk_protocol__property(m, "delta.rowTracking.materializedRowIdColumnName");
  c->row_commit_version_column =
      dk_protocol__property(m, "delta.rowTracking.materializedRowCommitVersionColumnName");
  if (strict && c->invalid_key)
    return dk__error_set(err, DK_CORRUPT, "table property %s has an invalid value '%s'",
                         c->invalid_key, c->invalid_value);
  return DK_OK;
}

int64_t dk_protocol__ict_from(const dk__table_config *c) {
  if (!c->enable_ict) return -1;
  return c->ict_enablement_version >= 0 ? c->ict_enablement_version : 0;
}
