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
 * Status: the offsets below are implemented; the change-data-feed and stream handles are
 * specified in docs/changes-api.md and land here once the typed commit ranges and the
 * library file reader they build on are on main (issue #19).
 */
#ifndef DK_CHANGES_H
#define DK_CHANGES_H

#include <stdint.h>

#include "dk/common.h"

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

DK_END_DECL

#endif /* DK_CHANGES_H */
