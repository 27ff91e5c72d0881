/**
 * @file dk/maintenance.h
 * @brief Table maintenance: VACUUM (delete files no version within the retention needs),
 *        RESTORE (a commit that makes the table equal to an older version), OPTIMIZE
 *        (compaction of small files), checkpoints and metadata cleanup (old log files past
 *        delta.logRetentionDuration).
 *
 * All of them check the table's writer protocol first (vacuumProtocolCheck asks exactly
 * that of VACUUM): a writer feature dk does not support is DK_UNSUPPORTED and nothing is
 * touched.
 */
#ifndef DK_MAINTENANCE_H
#define DK_MAINTENANCE_H

#include <stdint.h>

#include "dk/common.h"
#include "dk/snapshot.h"
#include "dk/txn.h"

DK_BEGIN_DECL

#define DK_VACUUM_OPTIONS_VERSION 1
typedef struct dk_vacuum_options {
  unsigned version;            /**< DK_VACUUM_OPTIONS_VERSION */
  double retention_hours;      /**< < 0 (or 0 with use_table_retention) = the table's
                                    delta.deletedFileRetentionDuration (default 7 days) */
  int use_table_retention;     /**< 1: ignore retention_hours */
  int dry_run;                 /**< 1: list what would be deleted, delete nothing */
  int skip_retention_check;    /**< 1: allow a retention shorter than the table's (delta-spark's
                                    retentionDurationCheck.enabled=false) */
  int64_t now_ms;              /**< clock; 0 = the wall clock */
  /** Called once per file deleted (or, in a dry run, to be deleted): its path relative to the
   *  root and its size. Return non-OK to stop (the status is returned). May be NULL. */
  dk_status (*on_file)(void *payload, const char *path, int64_t size);
  void *payload;
} dk_vacuum_options;

/** 1: files .. cutoff_ms. 2: appends dirs. */
#define DK_VACUUM_RESULT_VERSION 2
typedef struct dk_vacuum_result {
  unsigned version;            /**< DK_VACUUM_RESULT_VERSION (set by the caller) */
  int64_t files;               /**< files deleted (dry run: that would be) */
  int64_t bytes;               /**< their bytes */
  int64_t cutoff_ms;           /**< files older than this and unreferenced were eligible */
  int64_t dirs;                /**< (version 2) directories left empty and deleted */
} dk_vacuum_result;

/** VACUUM: deletes files under the table root that neither the latest snapshot's files nor
 *  its unexpired tombstones (nor their deletion-vector files) reference and that are older
 *  than the retention, with their Hadoop checksum files (".<name>.crc"), then the
 *  directories that are left empty (as delta-spark's VacuumCommand; a backend removes a
 *  directory only if it lists directories). Names starting with '_' or '.' are skipped
 *  (except `_change_data`, `_delta_index` and partition directories), so `_delta_log` is
 *  never touched; so is `metadata` on UniForm Iceberg tables.
 *  @return DK_OK; DK_INVALID (retention shorter than the table's without
 *  skip_retention_check); DK_UNSUPPORTED (writer protocol); DK_IO. */
DK_API DK_WARN_UNUSED dk_status dk_table_vacuum(dk_vacuum_result *out, dk_table *t,
                                 const dk_vacuum_options *opts, dk_error *err);

/** RESTORE TABLE ... TO VERSION AS OF `version`: one commit (operation RESTORE) that re-adds
 *  the files of that version the latest lacks (dataChange=true) and removes the ones it does
 *  not have, with that version's metadata (the protocol is never downgraded). Fails with
 *  DK_NOT_FOUND naming a data file of that version that no longer exists (vacuumed).
 *  `out` may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_table_restore(dk_commit_result *out, dk_table *t, int64_t version,
                                  const dk_txn_options *opts, dk_error *err);

/* ---- OPTIMIZE ----------------------------------------------------------------------------- */

#define DK_OPTIMIZE_OPTIONS_VERSION 1
typedef struct dk_optimize_options {
  unsigned version;              /**< DK_OPTIMIZE_OPTIONS_VERSION */
  /** OPTIMIZE ... WHERE: a predicate over partition columns only (SQL text), or NULL = the
   *  whole table. */
  const char *predicate;
  int64_t min_file_size;         /**< files smaller are compacted; 0 = 1 GiB (delta-spark's
                                      optimize.minFileSize) */
  int64_t max_file_size;         /**< bin (output file) size; 0 = 1 GiB (optimize.maxFileSize) */
  double max_deleted_rows_ratio; /**< a file whose deletion vector removes more than this share
                                      of its rows is compacted too; 0 = 0.05 */
  int threads;                   /**< Parquet encoding threads; 0 = the CPUs, at most 2 */
  int max_attempts;              /**< commits tried when concurrent commits get in the way
                                      while every compacted file is still live; 0 = 100 */
  dk_txn_options txn;            /**< commit options (operation is set by dk: OPTIMIZE) */
} dk_optimize_options;

#define DK_OPTIMIZE_RESULT_VERSION 1
typedef struct dk_optimize_result {
  unsigned version;              /**< DK_OPTIMIZE_RESULT_VERSION (set by the caller) */
  int64_t committed_version;     /**< -1 when there was nothing to compact (no commit) */
  int64_t files_added, files_removed;
  int64_t bytes_added, bytes_removed;
  int64_t partitions_optimized;
  int64_t bins;
  int64_t files_considered;      /**< files the predicate selected */
  int attempts;                  /**< commits tried */
} dk_optimize_result;

/** OPTIMIZE (bin-packing compaction, delta-spark OptimizeExecutor): in every partition the
 *  predicate selects, the files smaller than min_file_size (or with too many rows deleted by
 *  their deletion vector), smallest first, are packed into bins of at most max_file_size
 *  bytes; each bin of two or more files is rewritten as one new file (deletion vectors
 *  applied) and the commit (operation OPTIMIZE, SnapshotIsolation) adds the new files and
 *  removes the old ones, all with dataChange=false, with delta-spark's operationMetrics.
 *  A concurrent commit that removes a compacted file makes it fail (DK_CONFLICT,
 *  ConcurrentDeleteReadException); after any other concurrent commit it commits the same
 *  files again on the newer version, as delta-spark does. Tables with delta.enableRowTracking
 *  are refused (DK_UNSUPPORTED: the row ids would have to be materialized in the new files),
 *  as are those dk cannot write data into (generated or identity columns). `out` may be NULL.
 */
DK_API DK_WARN_UNUSED dk_status dk_table_optimize(dk_optimize_result *out, dk_table *t,
                                   const dk_optimize_options *opts, dk_error *err);

/* ---- checkpoints and log cleanup ------------------------------------------------------------ */

typedef enum dk_checkpoint_kind {
  DK_CHECKPOINT_CLASSIC = 1,     /**< <v>.checkpoint.parquet */
  DK_CHECKPOINT_V2_JSON = 2,     /**< <v>.checkpoint.<uuid>.json (v2Checkpoint tables) */
  DK_CHECKPOINT_V2_PARQUET = 3   /**< <v>.checkpoint.<uuid>.parquet + sidecars */
} dk_checkpoint_kind;

#define DK_CHECKPOINT_OPTIONS_VERSION 1
typedef struct dk_checkpoint_options {
  unsigned version;              /**< DK_CHECKPOINT_OPTIONS_VERSION */
  int64_t at_version;            /**< the version to checkpoint; < 0 = the latest */
  dk_checkpoint_kind kind;       /**< 0 = the table's: V2 when delta.checkpointPolicy=v2 (JSON
                                      top level with the actions inline), else classic */
  int64_t now_ms;                /**< clock (tombstone expiry); 0 = the wall clock */
} dk_checkpoint_options;

#define DK_CHECKPOINT_RESULT_VERSION 1
typedef struct dk_checkpoint_result {
  unsigned version;              /**< DK_CHECKPOINT_RESULT_VERSION (set by the caller) */
  int64_t checkpoint_version;
  dk_checkpoint_kind kind;
  char file_name[96];            /**< inside _delta_log */
  int64_t num_actions;           /**< actions written (`size` in _last_checkpoint) */
  int64_t num_add_files;
  int64_t size_in_bytes;
} dk_checkpoint_result;

/** Writes a checkpoint of a version (PROTOCOL.md "Checkpoints"): protocol, metadata, app
 *  transactions, live domains, every live file and the tombstones younger than
 *  delta.deletedFileRetentionDuration; then `_last_checkpoint` (written last). The checkpoint
 *  file is published atomically (nothing partial is ever visible under its name).
 *  @return DK_OK; DK_UNSUPPORTED (classic Parquet checkpoints need the Parquet writer in this
 *  build, or the writer protocol); DK_IO. */
DK_API DK_WARN_UNUSED dk_status dk_table_checkpoint(dk_checkpoint_result *out, dk_table *t,
                                     const dk_checkpoint_options *opts, dk_error *err);

#define DK_CLEANUP_OPTIONS_VERSION 1
typedef struct dk_cleanup_options {
  unsigned version;              /**< DK_CLEANUP_OPTIONS_VERSION */
  int64_t retention_ms;          /**< < 0 or 0 = delta.logRetentionDuration (30 days) */
  int64_t now_ms;                /**< clock; 0 = the wall clock */
  int dry_run;                   /**< 1: count, delete nothing */
} dk_cleanup_options;

/** Metadata cleanup (PROTOCOL.md "Metadata Cleanup", delta-spark MetadataCleanup): with the
 *  cutoff at now - delta.logRetentionDuration truncated to a UTC day, keeps the newest
 *  checkpoint at or before the last commit older than the cutoff and everything after it, and
 *  deletes older commits, checkpoints, checksum and compaction files. *deleted counts them.
 *  Without such a checkpoint nothing is deleted. */
DK_API DK_WARN_UNUSED dk_status dk_table_cleanup_metadata(int64_t *deleted, dk_table *t,
                                           const dk_cleanup_options *opts, dk_error *err);

DK_END_DECL

#endif /* DK_MAINTENANCE_H */
