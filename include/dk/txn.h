/**
 * @file dk/txn.h
 * @brief Transactions: stage actions on a snapshot and commit them as the next version, with
 *        Delta's optimistic concurrency control (conflict checks, rebase, bounded retries).
 *
 * A ::dk_txn starts on a snapshot (its read version) or on an empty table location (a new
 * table). The engine records what it read (predicates, files, app transaction versions) and
 * stages what it writes (files added and removed, metadata, protocol, app transactions, domain
 * metadata). dk_txn_commit() writes `_delta_log/<v>.json` with put-if-absent through the
 * table's dk_storage (or through a ::dk_committer). When another writer won version v, dk reads
 * every winning commit and checks it against this transaction exactly as delta-spark's
 * ConflictChecker does (write-path.md §3); when nothing conflicts it rebases (winner metadata
 * adopted, row ids reassigned above the winner's high-water mark, in-commit timestamp advanced)
 * and tries again at the next version. A conflict is DK_CONFLICT with a message that starts
 * with delta-spark's exception name and names the winning version:
 *   "ConcurrentAppendException: ... committed at version 12 ... partition [p=a] ..."
 * dk_txn_conflict() tells which kind it was.
 *
 * Before anything is committed the table's protocol is checked: a writer feature dk does not
 * honour is DK_UNSUPPORTED naming the feature, and nothing is written.
 *
 * A transaction is single-owner: one thread at a time. dk_txn_commit and dk_txn_abort both
 * consume the handle (it must not be used afterwards).
 */
#ifndef DK_TXN_H
#define DK_TXN_H

#include <stdint.h>

#include "dk/common.h"
#include "dk/expr.h"
#include "dk/snapshot.h"

DK_BEGIN_DECL

typedef struct dk_txn dk_txn;

/** Isolation level (delta.isolationLevel; OSS Delta accepts only Serializable). */
typedef enum dk_isolation {
  DK_ISOLATION_TABLE = 0,            /**< the table's delta.isolationLevel (default Serializable) */
  DK_ISOLATION_SERIALIZABLE = 1,
  DK_ISOLATION_WRITE_SERIALIZABLE = 2,
  DK_ISOLATION_SNAPSHOT = 3          /**< chosen automatically for dataChange=false commits */
} dk_isolation;

/** What kind of conflict made a commit fail (delta-spark's exception classes). */
typedef enum dk_conflict_kind {
  DK_CONFLICT_NONE = 0,
  DK_CONFLICT_CONCURRENT_APPEND = 1,       /**< ConcurrentAppendException */
  DK_CONFLICT_CONCURRENT_DELETE_READ = 2,  /**< ConcurrentDeleteReadException */
  DK_CONFLICT_CONCURRENT_DELETE_DELETE = 3,/**< ConcurrentDeleteDeleteException */
  DK_CONFLICT_METADATA_CHANGED = 4,        /**< MetadataChangedException */
  DK_CONFLICT_PROTOCOL_CHANGED = 5,        /**< ProtocolChangedException */
  DK_CONFLICT_CONCURRENT_TRANSACTION = 6,  /**< ConcurrentTransactionException (appId, domain) */
  DK_CONFLICT_MAX_RETRIES = 7              /**< DELTA_MAX_COMMIT_RETRIES_EXCEEDED */
} dk_conflict_kind;

/** delta-spark's name of a conflict kind ("ConcurrentAppendException"); "" for NONE. */
DK_API const char *dk_conflict_kind_name(dk_conflict_kind k);

/** The commit seam (after kernel-rs's Committer): how a version is published. NULL in the
 *  options = the filesystem committer (put-if-absent of `_delta_log/<v>.json`). A catalog
 *  committer implements the same call. */
typedef struct dk_committer dk_committer;
struct dk_committer {
  unsigned version; /**< 1 */
  void *ctx;
  /** Publishes `len` bytes of newline-delimited actions as `version` of the table at `root`.
   *  DK_OK: published. DK_CONFLICT: that version already exists (nothing written). Any other
   *  status: failed, or the outcome is unknown; dk then reads the version back and compares
   *  commitInfo.txnId to decide. */
  dk_status (*commit)(dk_committer *c, dk_storage *storage, const char *root, int64_t version,
                      const char *actions, size_t len, dk_error *err);
};

#define DK_TXN_OPTIONS_VERSION 1
typedef struct dk_txn_options {
  unsigned version;               /**< DK_TXN_OPTIONS_VERSION */
  const char *operation;          /**< commitInfo.operation; NULL = "WRITE" */
  /** commitInfo.operationParameters as a JSON object whose values are strings, written as
   *  given ("{\"mode\":\"Append\",\"partitionBy\":\"[]\"}"); NULL = {} */
  const char *operation_parameters;
  const char *engine_info;        /**< NULL = "dk/<version>" */
  const char *user_metadata;      /**< commitInfo.userMetadata, or NULL */
  int max_attempts;               /**< commit attempts before DK_CONFLICT (max retries);
                                       0 = 10000 (each attempt after a winner that does not
                                       conflict; delta-spark's limit is 10,000,000) */
  dk_isolation isolation;         /**< 0 = the table's level */
  dk_committer *committer;        /**< NULL = put-if-absent through the table's storage */
  int64_t now_ms;                 /**< clock for commitInfo.timestamp and deletionTimestamp;
                                       0 = the wall clock (tests pin it) */
  int no_auto_checkpoint;         /**< 1: no checkpoint after committing version v with
                                       v % delta.checkpointInterval (10) == 0 */
} dk_txn_options;

/** Starts a transaction on snapshot `snap` (its version is the read version). The snapshot
 *  is referenced, not consumed.
 *  @return DK_OK; DK_UNSUPPORTED when the table's protocol has a writer feature or version dk
 *  does not honour (named); DK_INVALID for bad options. */
DK_API DK_WARN_UNUSED dk_status dk_txn_begin(dk_txn **out, dk_snapshot *snap, const dk_txn_options *opts,
                              dk_error *err);
/** Starts a transaction that creates the table (version 0) at the table's location; it must
 *  stage metadata (dk_txn_set_metadata) and may stage a protocol (else one is derived from
 *  the metadata's properties). Committing fails with DK_CONFLICT
 *  (ProtocolChangedException, as delta-spark) if version 0 exists by then. */
DK_API DK_WARN_UNUSED dk_status dk_txn_begin_create(dk_txn **out, dk_table *t, const dk_txn_options *opts,
                                     dk_error *err);
/** Discards the transaction (nothing was committed). Accepts NULL. Files the engine wrote
 *  for it are not deleted (VACUUM removes unreferenced files). */
DK_API void dk_txn_abort(dk_txn *txn);

/** The read version (-1 for a transaction that creates the table). */
DK_API int64_t dk_txn_read_version(const dk_txn *txn);
/** The read snapshot (borrowed; NULL when creating). */
DK_API dk_snapshot *dk_txn_snapshot(const dk_txn *txn);

/* ---- what the transaction read ---------------------------------------------------------- */

/** Records a read of the files matching `filter` (unbound, logical names; NULL = all files)
 *  and returns them: *out_idx receives indexes into the read snapshot's file list (allocated,
 *  free with dk_free), *n their number: every file of the partitions the partition conjuncts
 *  select, as delta-spark's txn.filterFiles returns them (data conjuncts do not narrow the
 *  read set; tests/interop/conflict_matrix.json). Either output may be NULL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_read_files(dk_txn *txn, const dk_expr *filter, int64_t **out_idx,
                                   int64_t *n, dk_error *err);
/** Records a read of the partitions given as rows of serialized partition values
 *  (values[row * n_partition_columns + col], logical partition-column order, NULL = null):
 *  dynamic partition overwrite (delta-spark txn.filterFiles(newFiles)): concurrent adds in
 *  those partitions conflict; the files themselves are not recorded as read (so a concurrent
 *  removal of one is ConcurrentDeleteDeleteException when this transaction removes it, as in
 *  delta-spark). Returns the indexes of the snapshot's files in those partitions. */
DK_API DK_WARN_UNUSED dk_status dk_txn_read_partitions(dk_txn *txn, const char *const *values, int64_t n_rows,
                                        int64_t **out_idx, int64_t *n, dk_error *err);
/** Marks the whole table as read (any concurrent change conflicts). */
DK_API void dk_txn_read_whole_table(dk_txn *txn);
/** The app transaction version of `app_id` in the read snapshot (-1 = none), recorded as read:
 *  a concurrent commit of the same appId conflicts (ConcurrentTransactionException). */
DK_API int64_t dk_txn_app_version(dk_txn *txn, const char *app_id);

/* ---- what the transaction writes -------------------------------------------------------- */

/** A data file to add (the engine wrote it, or dk's writer did). Strings are copied. */
#define DK_ADD_FILE_VERSION 1
typedef struct dk_add_file {
  unsigned version;                 /**< DK_ADD_FILE_VERSION */
  const char *path;                 /**< relative to the table root as it is in storage (the
                                         Hive-escaped directories, not URI-encoded), or an
                                         absolute URI */
  size_t n_partition_values;
  /** 2 * n entries: logical partition column name, serialized value (NULL = null). Every
   *  partition column of the table must be present. */
  const char *const *partition_kv;
  int64_t size;
  int64_t modification_time;        /**< ms since the epoch */
  int data_change;                  /**< 1 for new data; 0 for rearrangement (OPTIMIZE) */
  const char *stats;                /**< stats JSON, or NULL */
  const char *tags_json;            /**< JSON object, or NULL */
  const dk_dv_descriptor *dv;       /**< NULL = none */
  const char *clustering_provider;  /**< NULL = none */
} dk_add_file;

DK_API DK_WARN_UNUSED dk_status dk_txn_add_file(dk_txn *txn, const dk_add_file *f, dk_error *err);
/** Removes active file i of the read snapshot (a `remove` with deletionTimestamp, dataChange,
 *  extendedFileMetadata, partitionValues, size, stats, tags, DV and row-tracking fields). */
DK_API DK_WARN_UNUSED dk_status dk_txn_remove_file(dk_txn *txn, int64_t i, int data_change, dk_error *err);

/** New table metadata. schema_string is a Delta schema JSON; configuration is given as
 *  n_configuration key/value pairs and replaces the table's. id NULL = keep the read
 *  snapshot's (a new UUID for a new table); created_time < 0 = keep / now. */
#define DK_METADATA_SPEC_VERSION 1
typedef struct dk_metadata_spec {
  unsigned version;                  /**< DK_METADATA_SPEC_VERSION */
  const char *id;
  const char *name;
  const char *description;
  const char *schema_string;
  size_t n_partition_columns;
  const char *const *partition_columns;
  size_t n_configuration;
  const char *const *configuration;  /**< 2 * n entries: key, value */
  int64_t created_time;
} dk_metadata_spec;

DK_API DK_WARN_UNUSED dk_status dk_txn_set_metadata(dk_txn *txn, const dk_metadata_spec *m, dk_error *err);
/** A new protocol (must not remove features of the read protocol). */
DK_API DK_WARN_UNUSED dk_status dk_txn_set_protocol(dk_txn *txn, const dk_protocol *p, dk_error *err);
/** Sets app transaction (app_id, version) for idempotent writes (one per appId). */
DK_API DK_WARN_UNUSED dk_status dk_txn_set_app_version(dk_txn *txn, const char *app_id, int64_t version,
                                        dk_error *err);
/** Sets (removed = 0) or removes (removed = 1) domain metadata. Users may not write `delta.*`
 *  domains (DK_INVALID); the table must support domainMetadata. */
DK_API DK_WARN_UNUSED dk_status dk_txn_set_domain(dk_txn *txn, const char *domain, const char *configuration,
                                   int removed, dk_error *err);
/** Adds one operationMetrics entry (name, value as text: "12"). */
DK_API DK_WARN_UNUSED dk_status dk_txn_set_metric(dk_txn *txn, const char *name, int64_t value, dk_error *err);
/** Drops every operationMetrics entry staged so far (an engine that stages rows through
 *  dk_txn_delete_rows as part of its own UPDATE or MERGE records that statement's metrics
 *  instead of DELETE's). */
DK_API void dk_txn_clear_metrics(dk_txn *txn);

/* ---- commit ----------------------------------------------------------------------------- */

#define DK_COMMIT_RESULT_VERSION 1
typedef struct dk_commit_result {
  unsigned version;              /**< DK_COMMIT_RESULT_VERSION (set by the caller) */
  int64_t committed_version;     /**< the version written */
  int attempts;                  /**< 1 when the first attempt landed */
  int64_t commit_timestamp;      /**< commitInfo.timestamp (ICT when enabled) */
  int self_detected;             /**< 1: an attempt whose outcome was unknown had landed */
  char txn_id[40];               /**< commitInfo.txnId */
  dk_conflict_kind conflict;     /**< on DK_CONFLICT: which one */
  int64_t conflict_version;      /**< on DK_CONFLICT: the winning version */
  int checkpoint;                /**< post-commit checkpoint: 0 none due, 1 written, -1 due but
                                      not written (the commit itself succeeded) */
} dk_commit_result;

/** Commits; consumes txn (also on failure). `out` may be NULL. DK_CONFLICT: a concurrent
 *  commit conflicts (out->conflict / conflict_version tell which); the table is unchanged by
 *  this transaction. */
DK_API DK_WARN_UNUSED dk_status dk_txn_commit(dk_txn *txn, dk_commit_result *out, dk_error *err);


/* ---- writes done elsewhere (distributed engines) ---------------------------------------- */

/* A driver begins the transaction and ships dk_txn_writer_state's bytes to its workers; each
 * worker starts a writer transaction from them (dk_txn_begin_writer), writes its data files
 * through it (dk_txn_write: the same directories, file names and statistics as a local
 * write), and returns dk_txn_staged_adds' text; the driver stages every worker's adds with
 * dk_txn_add_staged and commits once. */

/** The table metadata and protocol the transaction writes with (including staged metadata
 *  changes), as bytes for writer transactions elsewhere. *out is allocated (dk_free).
 *  @return DK_OK; DK_INVALID when a new table has no metadata staged yet. */
DK_API DK_WARN_UNUSED dk_status dk_txn_writer_state(char **out, size_t *len, const dk_txn *txn,
                                                    dk_error *err);
/** Starts a writer transaction on table `t` from dk_txn_writer_state's bytes. It stages adds
 *  (dk_txn_add_file, dk_txn_write) for export with dk_txn_staged_adds; it reads nothing and
 *  cannot commit (dk_txn_commit is DK_INVALID; free it with dk_txn_abort).
 *  @return DK_OK; DK_CORRUPT for bytes that are not a writer state; DK_UNSUPPORTED when the
 *  protocol has a writer feature dk does not honour. */
DK_API DK_WARN_UNUSED dk_status dk_txn_begin_writer(dk_txn **out, dk_table *t, const char *state,
                                                    size_t len, const dk_txn_options *opts,
                                                    dk_error *err);
/** The adds staged so far, one `{"add":{...}}` JSON object a line (the log's fields; the path
 *  as stored, not URI-encoded). *out is allocated (dk_free); *len excludes the NUL. */
DK_API DK_WARN_UNUSED dk_status dk_txn_staged_adds(char **out, size_t *len, const dk_txn *txn,
                                                   dk_error *err);
/** Stages the adds of dk_txn_staged_adds' text (of a writer transaction begun from this
 *  transaction's state): their partition values must name exactly the table's partition
 *  columns (physical names). Returns the number staged in *n (may be NULL).
 *  @return DK_OK; DK_CORRUPT for text that is not such adds; DK_INVALID for partition values
 *  that do not fit the table. */
DK_API DK_WARN_UNUSED dk_status dk_txn_add_staged(dk_txn *txn, const char *adds, size_t len,
                                                  int64_t *n, dk_error *err);

/* ---- creating tables -------------------------------------------------------------------- */

/** Converts a column list in Spark's DDL form ("a long, b string not null, c decimal(10,2),
 *  d array<int>, e struct<x: int, y: string>, f map<string, long>", types case-insensitive,
 *  names optionally `quoted`) into a Delta schemaString. *out is allocated; free with dk_free.
 *  @return DK_OK or DK_INVALID naming the offset. */
DK_API DK_WARN_UNUSED dk_status dk_schema_from_ddl(char **out, const char *ddl, dk_error *err);

typedef enum dk_create_mode {
  DK_CREATE_ERROR_IF_EXISTS = 0, /**< DK_INVALID when a table exists (Spark's ErrorIfExists) */
  DK_CREATE_IGNORE = 1,          /**< do nothing when a table exists (CREATE IF NOT EXISTS) */
  DK_CREATE_OR_REPLACE = 2       /**< replace an existing table: every file removed, new
                                      metadata (the protocol is never downgraded) */
} dk_create_mode;

#define DK_CREATE_OPTIONS_VERSION 1
typedef struct dk_create_options {
  unsigned version;                 /**< DK_CREATE_OPTIONS_VERSION */
  const char *schema_string;        /**< Delta schema JSON (or use dk_schema_from_ddl) */
  size_t n_partition_columns;
  const char *const *partition_columns;
  size_t n_properties;
  const char *const *properties;    /**< 2 * n: key, value (delta.* table properties) */
  const char *name, *description;
  dk_create_mode mode;
  dk_txn_options txn;               /**< commit options (operation is set by dk) */
} dk_create_options;

/** CREATE TABLE (operation "CREATE TABLE" / "CREATE OR REPLACE TABLE"): version 0 with the
 *  protocol the properties and types need, or with DK_CREATE_OR_REPLACE a commit on the
 *  existing table. out->committed_version is -1 when DK_CREATE_IGNORE found a table. */
DK_API DK_WARN_UNUSED dk_status dk_table_create(dk_commit_result *out, dk_table *t, const dk_create_options *o,
                                 dk_error *err);

/* ---- ALTER TABLE ------------------------------------------------------------------------ */

/** What an ALTER TABLE statement changes (one kind a commit, as delta-spark's
 *  AlterTable*DeltaCommand). */
typedef enum dk_alter_kind {
  DK_ALTER_SET_PROPERTIES = 1,   /**< SET TBLPROPERTIES: properties = 2 * n key, value */
  DK_ALTER_UNSET_PROPERTIES = 2, /**< UNSET TBLPROPERTIES: properties = n keys */
  DK_ALTER_ADD_COLUMNS = 3,      /**< ADD COLUMNS: columns (path = parent fields, new name) */
  DK_ALTER_RENAME_COLUMN = 4,    /**< RENAME COLUMN: one column and its new_name */
  DK_ALTER_DROP_COLUMNS = 5      /**< DROP COLUMN(S): columns (path of each) */
} dk_alter_kind;

/** A column of an ALTER TABLE. Strings are borrowed for the call. */
typedef struct dk_alter_column {
  size_t n_path;
  const char *const *path;  /**< field names from the top level (nested: "s", "x") */
  const char *type_json;    /**< ADD: the Delta type as in a schemaString ("\"long\"",
                                 {"type":"struct",...}) */
  int nullable;             /**< ADD: must be 1 (NOT NULL is refused, as delta-spark) */
  const char *comment;      /**< ADD: or NULL */
  const char *after;        /**< ADD: NULL = last; "" = FIRST; else the sibling it follows */
  const char *new_name;     /**< RENAME: the field's new name (same parent) */
} dk_alter_column;

#define DK_ALTER_OPTIONS_VERSION 1
typedef struct dk_alter_options {
  unsigned version;                /**< DK_ALTER_OPTIONS_VERSION */
  dk_alter_kind kind;
  size_t n_properties;             /**< SET: pairs; UNSET: keys */
  const char *const *properties;
  size_t n_columns;
  const dk_alter_column *columns;
  int if_exists;                   /**< DROP: columns that do not exist are skipped */
  dk_txn_options txn;              /**< commit options (operation and parameters set by dk) */
} dk_alter_options;

/** ALTER TABLE on the table of snapshot `snap` (its version is the read version): one
 *  metadata commit as delta-spark writes it (operation "SET TBLPROPERTIES", "UNSET
 *  TBLPROPERTIES", "ADD COLUMNS", "RENAME COLUMN", "DROP COLUMNS" with delta-spark's
 *  operationParameters). delta.* keys are checked as delta-spark's DeltaConfigs does (unknown
 *  keys are DELTA_UNKNOWN_CONFIGURATION, values must parse; keys take their canonical case);
 *  a property that needs a table feature upgrades the protocol in the same commit (to table
 *  features, listing the features the old versions implied; delta.minReaderVersion /
 *  delta.minWriterVersion ask for those versions' features). RENAME and DROP need column
 *  mapping (DELTA_UNSUPPORTED_RENAME_COLUMN / DELTA_UNSUPPORTED_DROP_COLUMN otherwise);
 *  partition columns cannot be dropped; new columns get column-mapping ids and physical names.
 *  @return DK_OK; DK_INVALID (bad property, unknown column, ...); DK_UNSUPPORTED (needs
 *  column mapping); DK_CONFLICT (a concurrent metadata change). */
DK_API DK_WARN_UNUSED dk_status dk_table_alter(dk_commit_result *out, dk_snapshot *snap,
                                               const dk_alter_options *o, dk_error *err);

/* ---- writing data ----------------------------------------------------------------------- */

/** Progress of a write (files closed so far, rows and bytes written). */
typedef void (*dk_write_progress_fn)(void *payload, int64_t files, int64_t rows, int64_t bytes);

/** 1: target_file_size .. progress_payload. 2: appends rearrange_only. */
#define DK_WRITE_OPTIONS_VERSION 2
typedef struct dk_write_options {
  unsigned version;               /**< DK_WRITE_OPTIONS_VERSION */
  int64_t target_file_size;       /**< Parquet bytes per data file before a new file starts;
                                       0 = delta.targetFileSize, else 128 MiB */
  const dk_expr *replace_where;   /**< every new row must satisfy it (replaceWhere's
                                       constraint check: DELTA_REPLACE_WHERE_MISMATCH) */
  int threads;                    /**< Parquet encoding threads; 0 = the CPUs, at most 2 */
  dk_write_progress_fn progress;  /**< called after each file; may be NULL */
  void *progress_payload;
  int rearrange_only;             /**< (version 2) 1: the rows are already in the table (OPTIMIZE,
                                       Spark's dataChange=false write option): the adds have
                                       dataChange=false */
} dk_write_options;

#define DK_WRITE_RESULT_VERSION 1
typedef struct dk_write_result {
  unsigned version;               /**< DK_WRITE_RESULT_VERSION (set by the caller) */
  int64_t files, rows, bytes;     /**< data files added, rows and bytes in them */
  /** Distinct partitions written: n_partitions rows of n_partition_columns serialized values
   *  (NULL = null), valid until the transaction ends. */
  int64_t n_partitions;
  const char *const *partitions;
} dk_write_result;

/** Writes every batch of `data` (not released) as new Parquet data files of the transaction's
 *  table and stages their adds: rows are split by the table's partition columns into
 *  Hive-style directories (delta-spark's escaping, __HIVE_DEFAULT_PARTITION__ for null), files
 *  roll at the target size, each add carries delta-spark's statistics. The stream's columns
 *  must be the table's (by name, case-insensitive; the table's Arrow types); CHECK constraints
 *  and invariants are evaluated on every row (a violation is DK_INVALID naming it); tables with
 *  generated or identity columns are refused (DK_UNSUPPORTED). On failure no file written so
 *  far stays referenced and the transaction should be aborted. */
DK_API DK_WARN_UNUSED dk_status dk_txn_write(dk_write_result *out, dk_txn *txn, struct ArrowArrayStream *data,
                              const dk_write_options *opts, dk_error *err);

typedef enum dk_write_mode {
  DK_WRITE_ERROR_IF_EXISTS = 0,   /**< a new table; an existing one is DK_INVALID */
  DK_WRITE_APPEND = 1,
  DK_WRITE_OVERWRITE = 2,         /**< all rows, or those matching `predicate` (replaceWhere),
                                       or the partitions written (dynamic) */
  DK_WRITE_IGNORE = 3             /**< nothing when the table exists */
} dk_write_mode;

typedef enum dk_schema_mode {
  DK_SCHEMA_STRICT = 0,           /**< the data must have the table's columns */
  DK_SCHEMA_MERGE = 1,            /**< mergeSchema: new columns are added to the table */
  DK_SCHEMA_OVERWRITE = 2         /**< overwriteSchema (with a full overwrite only) */
} dk_schema_mode;

#define DK_WRITE_TABLE_OPTIONS_VERSION 1
typedef struct dk_write_table_options {
  unsigned version;               /**< DK_WRITE_TABLE_OPTIONS_VERSION */
  dk_write_mode mode;
  size_t n_partition_by;          /**< new tables (and overwriteSchema) */
  const char *const *partition_by;
  const char *predicate;          /**< replaceWhere, with DK_WRITE_OVERWRITE (partition
                                       columns only in this version) */
  int dynamic_partition_overwrite;/**< with DK_WRITE_OVERWRITE: replace the partitions written */
  dk_schema_mode schema_mode;
  size_t n_properties;            /**< new tables: 2 * n key/value table properties */
  const char *const *properties;
  const char *app_id;             /**< idempotent write: skipped when the table's txn version of
                                       app_id is >= app_version */
  int64_t app_version;
  dk_write_options write;         /**< file size, threads, progress */
  dk_txn_options txn;             /**< commit options (operation set by dk: WRITE) */
} dk_write_table_options;

/** A whole write as delta-spark's DataFrameWriter does it: one WRITE commit (creating the
 *  table when there is none). out->committed_version is -1 when nothing was written
 *  (DK_WRITE_IGNORE on an existing table, or an idempotent write already applied). */
DK_API DK_WARN_UNUSED dk_status dk_write_table(dk_commit_result *out, dk_table *t, struct ArrowArrayStream *data,
                                const dk_write_table_options *opts, dk_error *err);

DK_END_DECL

#endif /* DK_TXN_H */
