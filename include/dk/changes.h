/**
 * @file dk/changes.h
 * @brief Change data feed (the row changes of a version range) and incremental reads (a table
 *        consumed as a stream of micro-batches of files, by offset).
 *
 * Change data feed (PROTOCOL.md "Change Data Files"; delta-spark `CDCReader`):
 *   table + range (versions or timestamps) + columns/filter --dk_changes_new--> dk_changes
 *   dk_changes: the resolved range, the change files per commit (cdc files when a commit
 *               has them, otherwise its data-change add/remove files, and for a path removed
 *               and re-added with another deletion vector the rows the DVs differ by), the
 *               output schema
 *   dk_changes --dk_changes_read--> ArrowArrayStream of change rows: the table's columns (the
 *               end version's schema), then `_change_type` (string: insert, delete,
 *               update_preimage, update_postimage), `_commit_version` (int64) and
 *               `_commit_timestamp` (timestamp[us, UTC]; the in-commit timestamp where
 *               enabled, else the commit file's modification time).
 *
 * Incremental reads (delta-spark `DeltaSource`; the Delta V2 connector's micro-batch stream):
 *   table + start (initial snapshot, version, timestamp or latest) + admission limits +
 *   options --dk_stream_open--> dk_stream
 *   dk_stream --dk_stream_next--> dk_stream_batch: the files admitted after the current offset
 *               and the batch's end offset (NULL batch: nothing new yet; poll again)
 *   dk_stream_batch --dk_stream_batch_read--> ArrowArrayStream of the batch's rows
 *   offsets serialize to the JSON of Delta's DeltaSourceOffset, so a stream resumes from a
 *   saved offset (its own or one from a Spark checkpoint of the same table).
 *
 * Errors follow Spark's: a commit that removes data while the stream has none of
 * ignore_deletes / ignore_changes / skip_change_commits is DK_UNSUPPORTED naming the version
 * and the operation; a schema change that the stream's read schema cannot absorb is
 * DK_UNSUPPORTED naming the version; an offset of another table or malformed is DK_INVALID;
 * a start version whose commit is gone (log cleanup) is DK_OUT_OF_RANGE unless
 * allow_data_loss is set; change data that is not recorded (CDF off for part of the range)
 * is DK_UNSUPPORTED naming the version; a vacuumed or missing data/cdc file is DK_NOT_FOUND
 * naming the file and the version.
 *
 * Reading: every file goes through the library's file reader (column mapping, type widening,
 * deletion vectors, partition values); a projection and a filter over the output columns
 * (the metadata columns included) prune change files by partition values, statistics and
 * their commit version / timestamp / change type before any is opened, skip row groups and
 * pages, and filter rows.
 */
#ifndef DK_CHANGES_H
#define DK_CHANGES_H

#include <stdint.h>

#include "dk/arrow.h"
#include "dk/common.h"
#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "dk/table.h"

DK_BEGIN_DECL

/* ---- change files ---------------------------------------------------------------------- */

/** Where the rows of a change file come from (delta-spark CDCReader). */
typedef enum dk_change_source {
  DK_CHANGE_CDC = 1,         /**< a `cdc` file: `_change_type` is a column of the file */
  DK_CHANGE_ADDED = 2,       /**< an added file (`insert`), minus its DV's rows */
  DK_CHANGE_REMOVED = 3,     /**< a removed file (`delete`), minus its DV's rows */
  DK_CHANGE_DV_DELETED = 4,  /**< a path removed and re-added in one commit: the rows its new
                                  DV deletes and its old one did not (`delete`) */
  DK_CHANGE_DV_RESTORED = 5  /**< the same: rows its old DV deleted and its new one does not
                                  (`insert`, e.g. RESTORE) */
} dk_change_source;

/** `_change_type` of the rows a change file gives: "insert", "delete", or NULL for a cdc file
 *  (its rows carry their own: insert, delete, update_preimage, update_postimage). */
DK_API const char *dk_change_source_type(dk_change_source s);

/* ---- change data feed ------------------------------------------------------------------- */

typedef struct dk_changes dk_changes;

/** How one bound of a range is given. */
typedef enum dk_bound_kind {
  DK_BOUND_DEFAULT = 0,  /**< start: required (DK_INVALID); end: the latest version */
  DK_BOUND_VERSION = 1,  /**< a version number */
  DK_BOUND_TIMESTAMP = 2 /**< ms since the epoch (UTC): start = the first commit at or after
                              it, end = the last commit at or before it (Spark's rules) */
} dk_bound_kind;

#define DK_CHANGES_OPTIONS_VERSION 1
typedef struct dk_changes_options {
  unsigned version;            /**< DK_CHANGES_OPTIONS_VERSION */
  dk_bound_kind start_kind;
  int64_t start;               /**< version, or timestamp in ms */
  dk_bound_kind end_kind;
  int64_t end;
  const char *const *columns;  /**< logical names (dotted nested paths allowed) and the
                                    metadata columns `_change_type`, `_commit_version`,
                                    `_commit_timestamp`; NULL = all */
  size_t n_columns;
  const dk_expr *filter;       /**< unbound, over the output columns (any of them, requested
                                    or not) */
  int64_t batch_size;          /**< rows per batch at most; 0 = 65536 */
  unsigned metadata_fields;    /**< DK_META_* bits (dk/scan.h): a `_metadata` struct column
                                    of each row's change file (path, size, row index, ...)
                                    after the others; 0 = none */
} dk_changes_options;

/** Resolves the range, checks it (Spark's rules) and plans the change files of its commits.
 *  The read schema is the latest version's, or the end version's when column mapping is on
 *  (delta-spark's defaults).
 *  @return DK_OK; DK_INVALID (no start, start > end: DELTA_INVALID_CDC_RANGE; bad options);
 *  DK_OUT_OF_RANGE (a start version after the latest: DELTA_CDC_START_VERSION_AFTER_LATEST;
 *  a timestamp after the latest commit or an end timestamp before the first; a start version
 *  whose commit is no longer in the log); DK_NOT_FOUND (no table; an unknown column);
 *  DK_UNSUPPORTED (change data feed off at the start or turned off inside the range:
 *  DELTA_MISSING_CHANGE_DATA naming the version; a schema change in the range the read
 *  schema cannot read: DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE / _DATA_SCHEMA; a
 *  reader feature dk lacks); DK_CORRUPT (a commit missing inside the range; a path removed
 *  and re-added without deletion vectors); DK_IO; DK_NOMEM. Messages name the Delta error
 *  class. Two timestamps between the same two commits give an empty range, not an error. */
DK_API DK_WARN_UNUSED dk_status dk_changes_new(dk_changes **out, dk_table *t,
                                               const dk_changes_options *opts, dk_error *err);
/** Accepts NULL. Streams being read keep what they need alive. */
DK_API void dk_changes_free(dk_changes *c);

/** The resolved range ([start, end]; end = start - 1 for an empty range between two
 *  timestamps). */
DK_API int64_t dk_changes_start_version(const dk_changes *c);
DK_API int64_t dk_changes_end_version(const dk_changes *c);
/** The version whose schema the rows are read with. */
DK_API int64_t dk_changes_schema_version(const dk_changes *c);
/** The output schema (struct): the table's columns (the requested ones), then `_change_type`
 *  (utf8), `_commit_version` (int64), `_commit_timestamp` (timestamp[us, UTC]). */
DK_API DK_WARN_UNUSED dk_status dk_changes_schema(struct ArrowSchema *out, const dk_changes *c,
                                                  dk_error *err);

/** One change file: where its rows come from and the commit it belongs to. */
typedef struct dk_change_file {
  int64_t commit_version;
  int64_t commit_timestamp;    /**< ms since the epoch (the in-commit timestamp where enabled) */
  dk_change_source source;     /**< 0 for a stream's added file (not a change data feed) */
  dk_file_entry entry;         /**< the file (entry.dv: rows not read); borrowed */
  const dk_dv_descriptor *keep_dv; /**< DK_CHANGE_DV_DELETED / _RESTORED: only the rows this
                                        deletion vector deletes are read; else NULL */
} dk_change_file;

/** Change files left after pruning, commit by commit in version order. */
DK_API int64_t dk_changes_num_files(const dk_changes *c);
DK_API DK_WARN_UNUSED dk_status dk_changes_file_get(dk_change_file *out, const dk_changes *c,
                                                    int64_t i, dk_error *err);

/** Reads every change row, file by file in the order above. The stream holds what it needs
 *  (the handle may be freed before it). A vacuumed or missing data or cdc file is
 *  DK_NOT_FOUND naming the file and the version. */
DK_API DK_WARN_UNUSED dk_status dk_changes_read(struct ArrowArrayStream *out, dk_changes *c,
                                                dk_error *err);
/** Reads change files [first, first + n) only (engines that spread files over workers). */
DK_API DK_WARN_UNUSED dk_status dk_changes_read_files(struct ArrowArrayStream *out,
                                                      dk_changes *c, int64_t first, int64_t n,
                                                      dk_error *err);

/* ---- stream offsets ------------------------------------------------------------------- */

/** A position in the stream of a table's files: DeltaSourceOffset. */
typedef struct dk_stream_offset {
  int64_t version;          /**< reservoirVersion */
  int64_t index;            /**< position in the commit (or in the initial snapshot);
                                 DK_STREAM_INDEX_BASE before its first file */
  int is_initial_snapshot;  /**< the offset points into the initial snapshot of `version` */
} dk_stream_offset;

#define DK_STREAM_INDEX_BASE (-100)            /**< serialized as -1 (sourceVersion 1) */
#define DK_STREAM_INDEX_METADATA_CHANGE (-20)  /**< sourceVersion 3 */
#define DK_STREAM_INDEX_POST_METADATA_CHANGE (-19)

/* ---- offsets as JSON -------------------------------------------------------------------- */

/** Writes `o` as Delta's DeltaSourceOffset JSON for table `table_id` (metaData.id):
 *  {"sourceVersion":1,"reservoirId":"...","reservoirVersion":N,"index":I,
 *   "isStartingVersion":B} (index DK_STREAM_INDEX_BASE as -1; a metadata-change index
 *  makes sourceVersion 3). NUL-terminated when cap > 0; returns the length it needs. */
DK_API size_t dk_stream_offset_json(char *buf, size_t cap, const dk_stream_offset *o,
                                    const char *table_id);
/** Parses an offset. `table_id` (may be NULL) must equal its reservoirId.
 *  @return DK_OK; DK_INVALID (malformed JSON, missing or mistyped fields, unknown
 *  sourceVersion, index -1 in sourceVersion 3, an offset of another table). */
DK_API dk_status dk_stream_offset_parse(dk_stream_offset *out, const char *json, size_t len,
                                        const char *table_id, dk_error *err);
/** Orders two offsets of one table by (version, index): < 0, 0, > 0. */
DK_API int dk_stream_offset_compare(const dk_stream_offset *a, const dk_stream_offset *b);

/* ---- incremental reads ------------------------------------------------------------------ */

/** Where a new stream starts (a resume offset overrides it). */
typedef enum dk_stream_start {
  DK_STREAM_FROM_SNAPSHOT = 0,  /**< the latest snapshot's files, then every later commit */
  DK_STREAM_FROM_VERSION = 1,   /**< commits from `starting_version` on (no snapshot) */
  DK_STREAM_FROM_TIMESTAMP = 2, /**< commits from the first one at or after the timestamp */
  DK_STREAM_FROM_LATEST = 3     /**< only commits after the latest version */
} dk_stream_start;

#define DK_STREAM_OPTIONS_VERSION 1
typedef struct dk_stream_options {
  unsigned version;              /**< DK_STREAM_OPTIONS_VERSION */
  dk_stream_start start;
  int64_t starting_version;      /**< DK_STREAM_FROM_VERSION (>= 0) */
  int64_t starting_timestamp_ms; /**< DK_STREAM_FROM_TIMESTAMP */
  const char *resume_offset;     /**< JSON offset to continue after (dk_stream_offset_json
                                      or a Spark checkpoint's), or NULL */
  int64_t max_files;             /**< files per batch (> 0); 0 = 1000 unless max_bytes is set */
  int64_t max_bytes;             /**< soft byte limit per batch (a batch has at least one
                                      file); 0 = none */
  int available_now;             /**< fix the end at the latest version when the stream
                                      opens: batches stop there (Trigger.AvailableNow) */
  int ignore_deletes;            /**< allow commits that only remove files */
  int ignore_changes;            /**< allow commits that remove and add (rewritten files are
                                      handed out again) */
  int skip_change_commits;       /**< skip every commit that removes data */
  int allow_data_loss;           /**< failOnDataLoss=false (tolerated, as delta-spark does for
                                      a stream that starts at an explicit version: it
                                      still fails when that commit is gone) */
  const char *exclude_regex;     /**< a Java regex (PCRE2 compiles it), searched for in each
                                      file's path; files it is found in are left out of
                                      batches after admission (they still count towards the
                                      limits), as Spark's excludeRegex */
  int change_data_feed;          /**< batches of change rows (readChangeFeed) instead of the
                                      rows of added files */
  const char *const *columns;    /**< for reading batches (as dk_changes_options); NULL = all */
  size_t n_columns;
  const dk_expr *filter;         /**< for reading batches; prunes files by partition values */
  int64_t max_initial_snapshot_files; /**< 0 = 100000 (more is DK_UNSUPPORTED, as Spark's
                                           DELTA_STREAMING_INITIAL_SNAPSHOT_TOO_LARGE) */
  int64_t batch_size;            /**< rows per Arrow batch; 0 = 65536 */
} dk_stream_options;

typedef struct dk_stream dk_stream;
typedef struct dk_stream_batch dk_stream_batch;

/** Opens a stream: the table's latest snapshot is its read schema; resolves and validates the
 *  start (its snapshot's protocol and schema). Spark's rules: a start version after the
 *  latest or no longer in the log is DK_OUT_OF_RANGE (DELTA_VERSION_NOT_FOUND); a start
 *  timestamp after the latest commit is DK_OUT_OF_RANGE (DELTA_TIMESTAMP_GREATER_THAN_COMMIT);
 *  a bad option DK_INVALID (DELTA_ILLEGAL_OPTION); a malformed offset or one of another table
 *  DK_INVALID. */
DK_API DK_WARN_UNUSED dk_status dk_stream_open(dk_stream **out, dk_table *t,
                                               const dk_stream_options *opts, dk_error *err);
/** Accepts NULL. Batches keep what they need alive. */
DK_API void dk_stream_free(dk_stream *s);

/** The table id (metaData.id) offsets of this stream carry. Borrowed. */
DK_API const char *dk_stream_table_id(const dk_stream *s);
/** The output schema of batches (dk_changes_schema's shape in change-data-feed mode). */
DK_API DK_WARN_UNUSED dk_status dk_stream_schema(struct ArrowSchema *out, const dk_stream *s,
                                                 dk_error *err);
/** Where the stream is: after the last batch handed out, or its start before the first
 *  (version, DK_STREAM_INDEX_BASE, is_initial_snapshot). */
DK_API void dk_stream_offset_get(dk_stream_offset *out, const dk_stream *s);

/** The next micro-batch after the stream's offset within the admission limits, validating
 *  the commits it reads (a commit that removes data without ignore_deletes / ignore_changes /
 *  skip_change_commits is DK_UNSUPPORTED naming the version: DELTA_SOURCE_IGNORE_DELETE,
 *  DELTA_SOURCE_TABLE_IGNORE_CHANGES; a schema change the read schema cannot absorb is
 *  DK_UNSUPPORTED naming the version: DELTA_SCHEMA_CHANGED...,
 *  DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG). *out = NULL when nothing new
 *  is committed (or the available-now end was reached): the offset stays, poll again. A batch
 *  may hold no file (the offset moved over commits without data); it is still a batch. */
DK_API DK_WARN_UNUSED dk_status dk_stream_next(dk_stream_batch **out, dk_stream *s,
                                               dk_error *err);

/** Spark's MicroBatchStream.latestOffset: the offset the next batch after `start` (NULL: the
 *  stream's start) would end at within the limits (max_files / max_bytes <= 0: the stream's;
 *  both < 0: no limit). *has = 0 when nothing is there. The stream's offset does not move. */
DK_API DK_WARN_UNUSED dk_status dk_stream_latest_offset(dk_stream_offset *out, int *has,
                                                        dk_stream *s,
                                                        const dk_stream_offset *start,
                                                        int64_t max_files, int64_t max_bytes,
                                                        dk_error *err);
/** Spark's planInputPartitions: the batch of files after `start` (NULL: the stream's start)
 *  up to `end` inclusive, without limits. The stream's offset does not move. */
DK_API DK_WARN_UNUSED dk_status dk_stream_batch_between(dk_stream_batch **out, dk_stream *s,
                                                        const dk_stream_offset *start,
                                                        const dk_stream_offset *end,
                                                        dk_error *err);

DK_API void dk_stream_batch_free(dk_stream_batch *b);
DK_API void dk_stream_batch_start(dk_stream_offset *out, const dk_stream_batch *b);
DK_API void dk_stream_batch_end(dk_stream_offset *out, const dk_stream_batch *b);
DK_API int64_t dk_stream_batch_num_files(const dk_stream_batch *b);
/** File i of the batch (an added file, or a change file in change-data-feed mode). */
DK_API DK_WARN_UNUSED dk_status dk_stream_batch_file(dk_change_file *out,
                                                     const dk_stream_batch *b, int64_t i,
                                                     dk_error *err);
/** Reads the batch's rows (the batch may be freed before the stream is). */
DK_API DK_WARN_UNUSED dk_status dk_stream_batch_read(struct ArrowArrayStream *out,
                                                     dk_stream_batch *b, dk_error *err);
/** Reads the batch's files [first, first + n) only (engines that spread a batch over
 *  workers; each re-plans the same batch with dk_stream_batch_between). */
DK_API DK_WARN_UNUSED dk_status dk_stream_batch_read_files(struct ArrowArrayStream *out,
                                                           dk_stream_batch *b, int64_t first,
                                                           int64_t n, dk_error *err);

DK_END_DECL

#endif /* DK_CHANGES_H */
