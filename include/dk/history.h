/**
 * @file dk/history.h
 * @brief Table history (commitInfo per version) and commit ranges (the actions of a run of
 *  versions, for change data feed and streaming reads).
 *
 * History objects are single-owner; strings they return are borrowed and live as long as
 * the object.
 *
 * Commit times: a version's commit time is its commitInfo.inCommitTimestamp when in-commit
 * timestamps are on (PROTOCOL.md "In-Commit Timestamps"), else the modification time of its
 * commit file made strictly increasing over the table's commits (one that is not after its
 * predecessor's becomes the predecessor's + 1 ms), as delta-spark's history does. Time travel
 * by timestamp (dk_snapshot_options.by_timestamp) uses the same times. A history opened with a
 * limit of n makes the times increasing from the oldest of its n commits, as DESCRIBE HISTORY
 * LIMIT n does (it lists no older commit): where mtimes do not increase, a version's time can
 * differ with and without a limit, in delta-spark as here.
 */
#ifndef DK_HISTORY_H
#define DK_HISTORY_H

#include <stdint.h>

#include "dk/common.h"
#include "dk/snapshot.h"
#include "dk/table.h"

DK_BEGIN_DECL

typedef struct dk_history dk_history;

/** commitInfo of the newest `limit` versions (limit <= 0 = all), newest first.
 *  @return DK_OK, DK_NOT_FOUND (no commit), DK_CORRUPT, DK_IO, DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_history_open(dk_history **out, dk_table *t, int64_t limit, dk_error *err);
DK_API void dk_history_free(dk_history *h);
DK_API size_t dk_history_count(const dk_history *h);
/** Entry i: version, commit time (dk/history.h "Commit times") and the commitInfo object as
 *  JSON ("{}" if none); out of range: -1 / NULL. Any output may be NULL. */
DK_API void dk_history_entry(int64_t *version, int64_t *timestamp,
                             const char **commit_info_json, const dk_history *h, size_t i);

/* ---- commit ranges ----------------------------------------------------------------------- */

typedef enum dk_action_kind {
  DK_ACTION_ADD = 1,
  DK_ACTION_REMOVE,
  DK_ACTION_METADATA,
  DK_ACTION_PROTOCOL,
  DK_ACTION_TXN,
  DK_ACTION_CDC,
  DK_ACTION_COMMIT_INFO,
  DK_ACTION_DOMAIN_METADATA,
  DK_ACTION_CHECKPOINT_METADATA,
  DK_ACTION_SIDECAR,
  DK_ACTION_UNKNOWN
} dk_action_kind;

/** A file action of a commit: add, remove or cdc (PROTOCOL.md "Add File and Remove File",
 *  "Add CDC File"). Fields an action kind does not have are -1 / NULL / 0. */
typedef struct dk_action_file {
  const char *path;                   /**< URL-decoded; relative to the root unless absolute */
  size_t n_partition_values;
  const char *const *partition_kv;    /**< 2 * n_partition_values: key, value (NULL = null) */
  int has_partition_values;           /**< present in the action (a remove may omit them) */
  int64_t size;                       /**< -1 when absent (remove) */
  int64_t modification_time;          /**< add; else -1 */
  int64_t deletion_timestamp;         /**< remove; -1 when absent */
  int data_change;
  int extended_file_metadata;         /**< remove: -1 absent, else 0 / 1 */
  const char *stats;                  /**< the stats JSON text, or NULL */
  const char *tags_json;              /**< tags as a JSON object, or NULL */
  const dk_dv_descriptor *dv;         /**< NULL when the action has no deletion vector */
  int has_base_row_id;
  int64_t base_row_id;
  int has_default_row_commit_version;
  int64_t default_row_commit_version;
} dk_action_file;

/** txn (PROTOCOL.md "Transaction Identifiers"). */
typedef struct dk_action_txn {
  const char *app_id;
  int64_t version;
  int64_t last_updated;               /**< -1 when absent */
} dk_action_txn;

/** domainMetadata. */
typedef struct dk_action_domain {
  const char *domain;
  const char *configuration;
  int removed;
} dk_action_domain;

/** commitInfo: free-form; the fields dk reads, and the whole object as JSON. */
typedef struct dk_action_commit_info {
  int64_t timestamp;                  /**< -1 when absent */
  int64_t in_commit_timestamp;        /**< -1 when absent */
  const char *operation;              /**< NULL when absent */
  const char *json;                   /**< the object, compact */
} dk_action_commit_info;

/** One action of a commit range, typed: the pointer of its kind is set, the others NULL. */
typedef struct dk_action {
  dk_action_kind kind;
  int64_t version;                    /**< the commit's version */
  const char *path;                   /**< add / remove / cdc: file->path; else NULL */
  const dk_action_file *file;         /**< add, remove, cdc */
  const dk_metadata *metadata;        /**< metaData (dk/snapshot.h) */
  const dk_protocol *protocol;        /**< protocol (dk/snapshot.h) */
  const dk_action_txn *txn;
  const dk_action_domain *domain;
  const dk_action_commit_info *commit_info;
} dk_action;

typedef struct dk_commit_range dk_commit_range;
/** The actions of versions first..last (inclusive, from their JSON commits), in log order,
 *  typed. Actions dk does not know are listed with kind DK_ACTION_UNKNOWN.
 *  @return DK_OK; DK_INVALID (bad range); DK_NOT_FOUND (a version after the latest);
 *  DK_OUT_OF_RANGE (first is no longer in the log); DK_CORRUPT (a commit missing inside the
 *  range, or malformed). */
DK_API DK_WARN_UNUSED dk_status dk_commit_range_open(dk_commit_range **out, dk_table *t, int64_t first,
                                      int64_t last, dk_error *err);
DK_API void dk_commit_range_free(dk_commit_range *r);
DK_API size_t dk_commit_range_count(const dk_commit_range *r);
/** Action i, or NULL when out of range. */
DK_API const dk_action *dk_commit_range_action(const dk_commit_range *r, size_t i);
/** Commit time of version v in the range (or -1 when v is outside it). */
DK_API int64_t dk_commit_range_timestamp(const dk_commit_range *r, int64_t v);

DK_END_DECL

#endif /* DK_HISTORY_H */
