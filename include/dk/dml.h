/**
 * @file dk/dml.h
 * @brief Row-level DML on a Delta table: DELETE, UPDATE and MERGE, as
 *        delta-spark's DeleteCommand / UpdateCommand / MergeIntoCommand write them.
 *
 * Merge-on-read first: when the table allows deletion vectors (protocol feature
 * `deletionVectors` and `delta.enableDeletionVectors=true`), the rows a DELETE removes are
 * marked in a deletion vector of their data file (a `remove` of the file and an `add` of the
 * same path with the new DV; stats copied with `tightBounds:false`), so a DELETE of 1% of a
 * table writes kilobytes. Files whose every row goes are removed. Otherwise the touched files
 * are rewritten without the deleted rows (copy-on-write), as Spark does. A predicate on
 * partition columns only removes whole files without reading any data.
 *
 * Two levels: dk_txn_delete stages the changes into a transaction (recording what it read, so
 * the conflict checker decides as delta-spark does against concurrent writers; the caller
 * commits), dk_table_delete runs one DELETE commit on the table's latest version.
 */
#ifndef DK_DML_H
#define DK_DML_H

#include <stdint.h>

#include "dk/common.h"
#include "dk/expr.h"
#include "dk/txn.h"

DK_BEGIN_DECL

/** How row-level changes are written. */
typedef enum dk_dml_dv_mode {
  DK_DML_DV_TABLE = 0,  /**< deletion vectors when the table allows them (delta-spark) */
  DK_DML_DV_NEVER = 1   /**< always copy-on-write */
} dk_dml_dv_mode;

#define DK_DML_OPTIONS_VERSION 1
typedef struct dk_dml_options {
  unsigned version;             /**< DK_DML_OPTIONS_VERSION */
  dk_dml_dv_mode deletion_vectors;
  /** Serialized DVs of at most this many bytes are stored inline in the log (storage type
   *  'i'); 0 = never (delta-spark always writes DV files). */
  int32_t dv_inline_max_bytes;
  int64_t now_ms;               /**< deletionTimestamp clock; 0 = the wall clock */
} dk_dml_options;

/** What a DML statement did (delta-spark's SQL metrics of the same names). */
#define DK_DML_METRICS_VERSION 1
typedef struct dk_dml_metrics {
  unsigned version;                  /**< DK_DML_METRICS_VERSION (set by the caller) */
  int64_t num_deleted_rows;          /**< -1: unknown (whole files removed without stats) */
  int64_t num_updated_rows;
  int64_t num_inserted_rows;
  int64_t num_copied_rows;           /**< unchanged rows rewritten (copy-on-write) */
  int64_t num_source_rows;           /**< MERGE */
  int64_t num_added_files;           /**< new data files */
  int64_t num_removed_files;         /**< files removed entirely (not just given a new DV) */
  int64_t num_added_bytes, num_removed_bytes;
  int64_t num_deletion_vectors_added;   /**< files that had no DV and got one */
  int64_t num_deletion_vectors_removed; /**< files whose DV went (file removed or rewritten) */
  int64_t num_deletion_vectors_updated; /**< files whose DV was replaced by a larger one */
  int64_t num_added_change_files, change_file_bytes;
  int64_t num_files_before_skipping, num_files_after_skipping;
  int64_t num_dv_files, dv_bytes;    /**< DV files written and their bytes */
  int64_t scan_time_ms, rewrite_time_ms, execution_time_ms;
} dk_dml_metrics;

/** DELETE FROM table [WHERE predicate] staged into txn (read version's files), with the
 *  operation set to "DELETE" with Spark's operationParameters and operationMetrics.
 *  predicate: unbound, logical names (NULL = every row). Errors: DK_NOT_FOUND / DK_INVALID
 *  for a bad predicate (nothing staged), DK_UNSUPPORTED for an append-only table, I/O and
 *  corruption errors of the files read. out may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_delete(dk_dml_metrics *out, dk_txn *txn,
                                              const dk_expr *predicate,
                                              const dk_dml_options *opts, dk_error *err);

/** Deletes rows named by (data file, physical row index): `file_uris[i]` as a scan's
 *  `_metadata.file_path` gives it, `row_indexes[i]` as its `_metadata.row_index` (an embedded
 *  engine's rowids: SQLite's DELETE), staged into txn as a DELETE commit's deletion vectors
 *  (files left with no row are removed); the commit's operation is DELETE unless the
 *  transaction was begun as another. The table must allow deletion vectors
 *  (DK_UNSUPPORTED otherwise); a file that is not active in the read snapshot is DK_NOT_FOUND;
 *  repeated rows count once. out may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_delete_rows(dk_dml_metrics *out, dk_txn *txn,
                                                   const char *const *file_uris,
                                                   const int64_t *row_indexes, size_t n,
                                                   const dk_dml_options *opts, dk_error *err);

/** UPDATE of rows an engine chose and computed (SQLite's xUpdate): the rows named as
 *  dk_txn_delete_rows names them go (deletion vectors, as it stages them), and the n_new rows
 *  of `new_rows` (batches of the table's logical columns, in schema order) are written, new
 *  row i replacing row replaces[i] of the lists (-1: a new row, an INSERT). As dk_txn_update
 *  writes an UPDATE: with row tracking a replacing row keeps the old row's row id and takes
 *  this commit's row commit version (an inserted one gets fresh ones); with the change data
 *  feed on and any row replaced, the commit carries every change as change data
 *  (update_preimage / update_postimage, delete for a row only gone, insert). The old rows
 *  are read back from their files for that (only those rows). A row named or replaced twice
 *  is DK_INVALID. The stream is read to its end, not released. out may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_update_rows(dk_dml_metrics *out, dk_txn *txn,
                                                   const char *const *file_uris,
                                                   const int64_t *row_indexes, size_t n,
                                                   struct ArrowArrayStream *new_rows,
                                                   const int64_t *replaces, size_t n_new,
                                                   const dk_dml_options *opts, dk_error *err);

/** One DELETE commit on the table's latest version. predicate: text in dk_expr_parse's
 *  grammar, or NULL. commit may be NULL; commit->committed_version is -1 when no row matched
 *  (nothing is committed, as Spark). txn_opts may be NULL (operation is set by dk). */
DK_API DK_WARN_UNUSED dk_status dk_table_delete(dk_dml_metrics *out, dk_commit_result *commit,
                                                dk_table *t, const char *predicate,
                                                const dk_dml_options *opts,
                                                const dk_txn_options *txn_opts, dk_error *err);

/** One assignment of UPDATE (and MERGE's UPDATE SET): `column = value`. */
typedef struct dk_dml_assignment {
  const char *column;     /**< a top-level column, by logical name (case-insensitive) */
  const dk_expr *value;   /**< unbound value expression over the table's columns (dk/expr.h:
                               arithmetic, CASE, CAST, functions; Spark's ANSI typing) */
} dk_dml_assignment;

/** UPDATE table SET assignments [WHERE predicate] staged into txn, as delta-spark's
 *  UpdateCommand: with deletion vectors the updated rows are marked deleted in their files'
 *  DVs and written, updated, to new files; without them the touched files are rewritten.
 *  Values are stored with an ANSI cast to the column's type (overflow and invalid input are
 *  DK_INVALID naming the column). Errors: DK_NOT_FOUND (unknown column), DK_INVALID (a bad
 *  predicate or value, a column assigned twice). With the change data feed on, the rows'
 *  old and new values are written as change data (update_preimage / update_postimage). With
 *  row tracking the written rows keep their row ids and the updated ones take this commit's
 *  row commit version (materialized columns, as delta-spark). out may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_update(dk_dml_metrics *out, dk_txn *txn,
                                              const dk_dml_assignment *set, size_t n_set,
                                              const dk_expr *predicate,
                                              const dk_dml_options *opts, dk_error *err);

/** One UPDATE commit on the table's latest version. set: 2 * n_set strings, column name then
 *  value expression text; predicate text or NULL. commit->committed_version is -1 when no
 *  row matched (nothing committed). */
DK_API DK_WARN_UNUSED dk_status dk_table_update(dk_dml_metrics *out, dk_commit_result *commit,
                                                dk_table *t, const char *const *set,
                                                size_t n_set, const char *predicate,
                                                const dk_dml_options *opts,
                                                const dk_txn_options *txn_opts, dk_error *err);

/* ---- MERGE ------------------------------------------------------------------------------- */

/** Which rows a MERGE clause is for. */
typedef enum dk_merge_when {
  DK_MERGE_MATCHED = 1,               /**< WHEN MATCHED: a target row with a source row */
  DK_MERGE_NOT_MATCHED = 2,           /**< WHEN NOT MATCHED [BY TARGET]: a source row alone */
  DK_MERGE_NOT_MATCHED_BY_SOURCE = 3  /**< WHEN NOT MATCHED BY SOURCE: a target row alone */
} dk_merge_when;

typedef enum dk_merge_action {
  DK_MERGE_UPDATE = 1,  /**< MATCHED / NOT MATCHED BY SOURCE */
  DK_MERGE_DELETE = 2,  /**< MATCHED / NOT MATCHED BY SOURCE */
  DK_MERGE_INSERT = 3   /**< NOT MATCHED */
} dk_merge_action;

/** One WHEN clause. Expressions name columns through the aliases (`t.id`, `s.value`); in
 *  NOT MATCHED clauses only source columns have values. The first clause of a kind whose
 *  condition is TRUE applies to a row (Spark's order). */
typedef struct dk_merge_clause {
  dk_merge_when when;
  dk_merge_action action;
  const dk_expr *condition;       /**< the AND condition, or NULL */
  const dk_dml_assignment *set;   /**< UPDATE SET / INSERT (columns) VALUES: target column =
                                       value; target columns not named keep their value
                                       (UPDATE) or are NULL (INSERT) */
  size_t n_set;
  int all;                        /**< UPDATE SET * / INSERT *: every target column from the
                                       source column of its name (set ignored) */
} dk_merge_clause;

#define DK_MERGE_SPEC_VERSION 1
typedef struct dk_merge_spec {
  unsigned version;                  /**< DK_MERGE_SPEC_VERSION */
  struct ArrowArrayStream *source;   /**< read to its end (not released) */
  /** The merge condition: equalities `t.a = s.b` joined by AND (the hash join's keys; a NULL
   *  key matches nothing). */
  const dk_expr *on;
  const char *target_alias;          /**< NULL = "t" */
  const char *source_alias;          /**< NULL = "s" */
  const dk_merge_clause *clauses;
  size_t n_clauses;
} dk_merge_spec;

/** MERGE INTO table USING source ON ... WHEN ... staged into txn, as delta-spark's
 *  MergeIntoCommand: the source is materialized and hashed on its keys, every target file
 *  that can hold a match is read and joined (without NOT MATCHED BY SOURCE clauses the files
 *  are pruned by the source keys' values, checked against each file's min/max when they are
 *  few, else by their range, and read several at once on the table's threads: the key
 *  columns first, then only the matched rows with the columns the clauses use; the whole
 *  table counts as read for conflicts, as in Spark). With deletion vectors updated and
 *  deleted target rows are marked in their files' DVs; without them a touched file is
 *  rewritten (copy-on-write: read again batch by batch for the rows it keeps). Updated and
 *  inserted rows are written to new files. A target row matched by more than one source row
 *  is DK_INVALID ([DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE], as Spark) unless
 *  the only MATCHED clause is an unconditional DELETE. With the change data feed on every
 *  change is also written as change data; with row tracking rewritten rows keep their row ids.
 *  Scratch memory comes from the table's allocator. out may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_merge(dk_dml_metrics *out, dk_txn *txn,
                                             const dk_merge_spec *spec,
                                             const dk_dml_options *opts, dk_error *err);

/** One MERGE commit on the table's latest version (committed_version -1: nothing changed). */
DK_API DK_WARN_UNUSED dk_status dk_table_merge(dk_dml_metrics *out, dk_commit_result *commit,
                                               dk_table *t, const dk_merge_spec *spec,
                                               const dk_dml_options *opts,
                                               const dk_txn_options *txn_opts, dk_error *err);

DK_END_DECL

#endif /* DK_DML_H */
