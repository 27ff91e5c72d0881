/*
** table_config.h — a table's configuration (the delta.* properties of its metaData action)
** as typed values (src/protocol/table_config.c; not API). Readers and writers take every
** property from here, with Delta's defaults and parsing rules, instead of looking keys up
** ad hoc.
**
** Follows PROTOCOL.md "Table Features" and the sections of the features the properties
** control ("In-Commit Timestamps", "Column Mapping", "Deletion Vectors", "Change Data Files",
** "Append-only Tables", "Row Tracking", "V2 Checkpoint", "Per-file Statistics"), and
** delta-spark's DeltaConfigs for defaults and value syntax (booleans case-insensitive,
** durations as "interval <n> <unit>").
*/
#ifndef DK_PROTOCOL_TABLE_CONFIG_H
#define DK_PROTOCOL_TABLE_CONFIG_H

#include <stdbool.h>

#include "dk/snapshot.h"
#include "util/util.h"

typedef enum dk__isolation_level {
  DK__ISOLATION_WRITE_SERIALIZABLE = 0, /* delta-spark's default */
  DK__ISOLATION_SERIALIZABLE,
  DK__ISOLATION_SNAPSHOT
} dk__isolation_level;

typedef enum dk__checkpoint_policy {
  DK__CHECKPOINT_CLASSIC = 0,
  DK__CHECKPOINT_V2
} dk__checkpoint_policy;

typedef struct dk__table_config {
  int64_t checkpoint_interval;            /* delta.checkpointInterval (10) */
  bool checkpoint_stats_as_json;          /* delta.checkpoint.writeStatsAsJson (true) */
  bool checkpoint_stats_as_struct;        /* delta.checkpoint.writeStatsAsStruct (false) */
  dk__checkpoint_policy checkpoint_policy; /* delta.checkpointPolicy (classic) */
  int64_t log_retention_ms;               /* delta.logRetentionDuration (30 days) */
  int64_t deleted_file_retention_ms;      /* delta.deletedFileRetentionDuration (1 week) */
  int64_t txn_retention_ms;               /* delta.setTransactionRetentionDuration (-1: none) */
  bool expired_log_cleanup;               /* delta.enableExpiredLogCleanup (true) */
  bool append_only;                       /* delta.appendOnly */
  bool enable_deletion_vectors;           /* delta.enableDeletionVectors */
  bool enable_change_data_feed;           /* delta.enableChangeDataFeed */
  bool enable_type_widening;              /* delta.enableTypeWidening */
  dk_column_mapping_mode column_mapping_mode; /* delta.columnMapping.mode (none) */
  int64_t column_mapping_max_id;          /* delta.columnMapping.maxColumnId (-1: absent) */
  int64_t stats_num_indexed_cols;         /* delta.dataSkippingNumIndexedCols (32; -1 = all) */
  const char *stats_columns;              /* delta.dataSkippingStatsColumns, or NULL */
  bool enable_ict;                        /* delta.enableInCommitTimestamps */
  int64_t ict_enablement_version;         /* delta.inCommitTimestampEnablementVersion, or -1 */
  int64_t ict_enablement_timestamp;       /* delta.inCommitTimestampEnablementTimestamp, or -1 */
  dk__isolation_level isolation_level;    /* delta.isolationLevel */
  bool randomize_file_prefixes;           /* delta.randomizeFilePrefixes */
  int64_t random_prefix_length;           /* delta.randomPrefixLength (2) */
  int64_t target_file_size;               /* delta.targetFileSize (-1: unset) */
  bool enable_row_tracking;               /* delta.enableRowTracking */
  bool row_tracking_suspended;            /* delta.rowTrackingSuspended */
  const char *row_id_column;              /* delta.rowTracking.materializedRowIdColumnName */
  const char *row_commit_version_column;  /* ...materializedRowCommitVersionColumnName */
  /* the first delta.* property whose value does not parse (its default was used), or NULL */
  const char *invalid_key;
  const char *invalid_value;
} dk__table_config;

/* The configuration of metadata `m` (strings borrowed from it). A value that does not parse
 * takes the property's default and is named in invalid_key; with `strict` (writers) it is
 * DK_CORRUPT instead, naming the property and value. */
dk_status dk_protocol__config_read(dk__table_config *out, const dk_metadata *m, bool strict,
                                   dk_error *err);

/* The value of configuration key `key` (the last one when repeated), or NULL. */
const char *dk_protocol__property(const dk_metadata *m, const char *key);

/* The first version whose commit time is its commitInfo.inCommitTimestamp (the enablement
 * version, 0 when ICT was on from the start), or -1 when in-commit timestamps are off. */
int64_t dk_protocol__ict_from(const dk__table_config *c);

/* "interval <n> <unit>" (unit: nanosecond(s) .. week(s); months and years are refused, as a
 * month has no fixed length) in milliseconds. */
bool dk_protocol__parse_interval_ms(const char *s, int64_t *out);

#endif /* DK_PROTOCOL_TABLE_CONFIG_H */
