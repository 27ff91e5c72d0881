/**
 * @file dk/snapshot.h
 * @brief Immutable snapshots of a Delta table (log replay) and their state: protocol,
 *  metadata, schema, files, tombstones, app transactions, domain metadata.
 *
 * A ::dk_snapshot is the reconciled state of the table at one version (PROTOCOL.md "Action
 * Reconciliation"): protocol, metadata, schema, the active files, app transactions, domain
 * metadata and tombstones. Snapshots are immutable and reference-counted; they may be read
 * from many threads at once. Tables are in dk/table.h, types and schemas in dk/schema.h,
 * history and commit ranges in dk/history.h.
 *
 * Strings returned by accessors are borrowed and live as long as the object they came from.
 */
#ifndef DK_SNAPSHOT_H
#define DK_SNAPSHOT_H

#include <stdint.h>

#include "dk/arrow.h"
#include "dk/common.h"
#include "dk/schema.h"
#include "dk/table.h"

DK_BEGIN_DECL

typedef struct dk_snapshot dk_snapshot;

/* ---- snapshot --------------------------------------------------------------------------- */

#define DK_SNAPSHOT_OPTIONS_VERSION 1
typedef struct dk_snapshot_options {
  unsigned version;       /**< DK_SNAPSHOT_OPTIONS_VERSION */
  int64_t at_version;     /**< >= 0: that version; -1: latest (unless by_timestamp) */
  int by_timestamp;       /**< non-zero: the latest version whose commit time <= timestamp_ms */
  int64_t timestamp_ms;   /**< ms since the epoch, UTC */
  /** Non-zero: protocol, metadata, schema, app transactions, domain metadata, file count and
   *  bytes only, taken from the version's checksum file (N.crc) when it has them, without
   *  replaying the file actions; such a snapshot has no file list (dk_snapshot_file fails,
   *  no tombstones). Without a usable N.crc the log is replayed as usual. */
  int metadata_only;
} dk_snapshot_options;

/** Loads a snapshot. NULL opts = latest version.
 *  @return DK_OK; DK_NOT_FOUND (no table / no such version); DK_OUT_OF_RANGE (version before
 *  the earliest recreatable one, timestamp before the first or after the last commit);
 *  DK_UNSUPPORTED (a reader feature or version dk lacks, named in the message);
 *  DK_CORRUPT (gaps in versions, malformed log or checkpoint, missing protocol/metadata). */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_open(dk_snapshot **out, dk_table *t,
                                  const dk_snapshot_options *opts, dk_error *err);
/** Incremental refresh: a snapshot at the latest version built from `old` by reading only the
 *  newer commits (returns a new reference to `old` itself when nothing changed). */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_update(dk_snapshot **out, dk_snapshot *old, dk_error *err);
/** Adds a reference; returns s. */
DK_API dk_snapshot *dk_snapshot_ref(dk_snapshot *s);
/** Drops a reference; accepts NULL. */
DK_API void dk_snapshot_free(dk_snapshot *s);

DK_API int64_t dk_snapshot_version(const dk_snapshot *s);
/** Commit time of the snapshot's version (inCommitTimestamp when enabled, else file mtime). */
DK_API int64_t dk_snapshot_timestamp(const dk_snapshot *s);
DK_API const char *dk_snapshot_table_root(const dk_snapshot *s);

/* ---- protocol and metadata -------------------------------------------------------------- */

typedef struct dk_protocol {
  int32_t min_reader_version;
  int32_t min_writer_version;
  size_t n_reader_features;            /**< 0 when readerFeatures is absent */
  const char *const *reader_features;
  size_t n_writer_features;
  const char *const *writer_features;
  int has_reader_features;             /**< readerFeatures present (reader version 3) */
  int has_writer_features;             /**< writerFeatures present (writer version 7) */
} dk_protocol;

typedef struct dk_metadata {
  const char *id;
  const char *name;                    /**< NULL when absent */
  const char *description;             /**< NULL when absent */
  const char *format_provider;         /**< "parquet" */
  const char *schema_string;           /**< the raw schemaString (NULL when absent: empty schema) */
  int64_t created_time;                /**< -1 when absent */
  size_t n_partition_columns;
  const char *const *partition_columns;
  size_t n_configuration;
  const char *const *config_keys;      /**< in log order */
  const char *const *config_values;
} dk_metadata;

DK_API const dk_protocol *dk_snapshot_protocol(const dk_snapshot *s);
DK_API const dk_metadata *dk_snapshot_metadata(const dk_snapshot *s);
/** A table property ("delta.enableDeletionVectors"), or NULL. */
DK_API const char *dk_snapshot_property(const dk_snapshot *s, const char *key);
/** Whether the protocol lists feature `name` as a reader or writer feature. */
DK_API int dk_snapshot_has_feature(const dk_snapshot *s, const char *name);

/* ---- schema (types and fields: dk/schema.h) ---------------------------------------------- */

/** The logical schema (a STRUCT type). */
DK_API const dk_type *dk_snapshot_schema(const dk_snapshot *s);
DK_API dk_column_mapping_mode dk_snapshot_column_mapping_mode(const dk_snapshot *s);
/** Exports the logical schema (physical = 0) or the physical one (physical names and
 *  "PARQUET:field_id" metadata under column mapping) as an Arrow schema. */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_arrow_schema(struct ArrowSchema *out, const dk_snapshot *s,
                                          int physical, dk_error *err);

/* ---- files ------------------------------------------------------------------------------ */

/** A deletion-vector descriptor (PROTOCOL.md "Deletion Vectors"). */
typedef struct dk_dv_descriptor {
  char storage_type;                  /**< 'u', 'i' or 'p' */
  const char *path_or_inline_dv;
  int32_t offset;                     /**< -1 when absent */
  int32_t size_in_bytes;
  int64_t cardinality;
} dk_dv_descriptor;

#define DK_FILE_ENTRY_VERSION 1
/** One active data file. Pointers are borrowed from the snapshot (see `stats` for its shorter
 *  lifetime). */
typedef struct dk_file_entry {
  unsigned version;                   /**< the struct version dk filled (DK_FILE_ENTRY_VERSION):
                                           dk_snapshot_file fills version 1 whatever the
                                           caller's; iterator entries are dk's own */
  const char *path;                   /**< URL-decoded; relative to the root unless absolute */
  int64_t size;
  int64_t modification_time;
  size_t n_partition_values;
  /** 2 * n_partition_values entries: key0, value0, key1, value1, ... Keys are as written in
   *  the log (physical names under column mapping); a NULL value is a null. */
  const char *const *partition_kv;
  /** The stats JSON text, or NULL when the file has none. Filled by dk_file_iter_next and
   *  valid until the next call on that iterator (or its free): stats are kept compressed in
   *  blocks and the iterator decodes one block at a time into its own buffer. dk_snapshot_file
   *  leaves it NULL (dk_snapshot_file_stats copies one file's stats). Every other field lives
   *  as long as the snapshot. */
  const char *stats;
  const char *tags_json;              /**< tags as a JSON object, or NULL */
  const dk_dv_descriptor *dv;         /**< NULL when the file has no deletion vector */
  int has_base_row_id;
  int64_t base_row_id;
  int has_default_row_commit_version;
  int64_t default_row_commit_version;
  int64_t index;                      /**< position in the snapshot's file list */
} dk_file_entry;

DK_API int64_t dk_snapshot_num_files(const dk_snapshot *s);
/** Whether the snapshot was built from N.crc without a file list (metadata_only). */
DK_API int dk_snapshot_has_file_list(const dk_snapshot *s);
DK_API int64_t dk_snapshot_total_bytes(const dk_snapshot *s);
/** Fills `out` with the metadata of active file `i` (0 <= i < dk_snapshot_num_files):
 *  every field but `stats`, which stays NULL.
 *  @return DK_OK, DK_INVALID (index out of range, metadata-only snapshot). */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_file(dk_file_entry *out, const dk_snapshot *s, int64_t i,
                                  dk_error *err);
/** Copies the stats JSON text of file `i` into buf (NUL-terminated when cap > 0, truncated
 *  when it does not fit) and sets *len to its length, or to -1 when the file has no stats.
 *  Each call decodes the file's stats block: to read many files' stats use a dk_file_iter.
 *  @return DK_OK, DK_INVALID, DK_CORRUPT (a stats block does not decode), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_file_stats(char *buf, size_t cap, int64_t *len,
                                        const dk_snapshot *s, int64_t i, dk_error *err);

/** A cursor over a snapshot's active files, with their stats. It owns its buffers (no state
 *  is shared with other iterators or threads) and keeps the snapshot alive; use it from one
 *  thread at a time. */
typedef struct dk_file_iter dk_file_iter;

#define DK_FILE_ITER_OPTIONS_VERSION 1
typedef struct dk_file_iter_options {
  unsigned version;     /**< DK_FILE_ITER_OPTIONS_VERSION */
  int skip_stats;       /**< non-zero: entries carry no stats (nothing is decoded) */
  int no_read_ahead;    /**< non-zero: never decode the next stats block ahead on the table's
                             threads (dk_table_options.threads; with 1 there is no read-ahead) */
} dk_file_iter_options;

/** Opens an iterator at the snapshot's first file. NULL opts = defaults.
 *  @return DK_OK, DK_INVALID (metadata-only snapshot, options version newer than this
 *  library's), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_snapshot_files_open(dk_file_iter **out, const dk_snapshot *s,
                                        const dk_file_iter_options *opts, dk_error *err);
/** The next file: *entry points at an entry the iterator owns, valid (stats included) until
 *  the next call on the iterator; NULL after the last file.
 *  @return DK_OK, DK_CORRUPT (a stats block does not decode), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_file_iter_next(const dk_file_entry **entry, dk_file_iter *it,
                                   dk_error *err);
/** Moves the iterator so that its next entry is file `i` (0 <= i <= dk_snapshot_num_files).
 *  @return DK_OK, DK_INVALID (out of range). */
DK_API DK_WARN_UNUSED dk_status dk_file_iter_seek(dk_file_iter *it, int64_t i, dk_error *err);
/** Frees the iterator (waiting for its read-ahead); accepts NULL. */
DK_API void dk_file_iter_free(dk_file_iter *it);

/** Writes the full path of file `f` (the table root joined with a relative path; absolute
 *  paths as they are) into buf, NUL-terminated when cap > 0; returns the length it needs. */
DK_API size_t dk_snapshot_file_path(char *buf, size_t cap, const dk_snapshot *s,
                                    const dk_file_entry *f);
/** The partition value of file `f` for logical partition column `column`; *is_null tells
 *  whether it is null or missing. Handles column-mapping physical names. */
DK_API const char *dk_file_partition_value(const dk_snapshot *s, const dk_file_entry *f,
                                           const char *column, int *is_null);

/** A removed file kept as a tombstone (for vacuum). */
typedef struct dk_tombstone {
  const char *path;
  int64_t deletion_timestamp;         /**< -1 when absent */
  int64_t size;                       /**< -1 when absent */
  int data_change;
} dk_tombstone;
DK_API int64_t dk_snapshot_num_tombstones(const dk_snapshot *s);
DK_API DK_WARN_UNUSED dk_status dk_snapshot_tombstone(dk_tombstone *out, const dk_snapshot *s, int64_t i,
                                       dk_error *err);

/** Latest `version` of app transaction `app_id`, or -1 when the table has none. */
DK_API int64_t dk_snapshot_txn_version(const dk_snapshot *s, const char *app_id);
DK_API size_t dk_snapshot_num_txns(const dk_snapshot *s);
/** App transaction i (out of range: NULL / -1). Any output may be NULL. */
DK_API void dk_snapshot_txn(const char **app_id, int64_t *version, int64_t *last_updated,
                            const dk_snapshot *s, size_t i);
/** The configuration text of (non-removed) domain `domain`, or NULL. */
DK_API const char *dk_snapshot_domain_metadata(const dk_snapshot *s, const char *domain);

DK_END_DECL

#endif /* DK_SNAPSHOT_H */
