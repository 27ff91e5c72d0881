/**
 * @file dk/history.h
 * @brief Table history (commitInfo per version) and commit ranges (the actions of a run of
 *  versions, for change data feed and streaming reads).
 *
 * History objects are single-owner; strings they return are borrowed and live as long as
 * the object.
 */
#ifndef DK_HISTORY_H
#define DK_HISTORY_H

#include <stdint.h>

#include "dk/common.h"
#include "dk/table.h"

DK_BEGIN_DECL

typedef struct dk_history dk_history;

/** commitInfo of the newest `limit` versions (limit <= 0 = all), newest first. */
DK_API dk_status dk_history_open(dk_history **out, dk_table *t, int64_t limit, dk_error *err);
DK_API void dk_history_free(dk_history *h);
DK_API size_t dk_history_count(const dk_history *h);
/** Entry i: version, commit timestamp, and the commitInfo object as JSON ("{}" if none);
 *  out of range: -1 / NULL. */
DK_API void dk_history_entry(const dk_history *h, size_t i, int64_t *version,
                             int64_t *timestamp, const char **commit_info_json);

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

typedef struct dk_action {
  dk_action_kind kind;
  int64_t version;
  const char *path;          /**< decoded path for add/remove/cdc, else NULL */
  const char *json;          /**< the action's body (the value under its key) as JSON */
} dk_action;

typedef struct dk_commit_range dk_commit_range;
/** The actions of versions first..last (inclusive, from the JSON commits), in log order. */
DK_API dk_status dk_log_commit_range(dk_commit_range **out, dk_table *t, int64_t first,
                                     int64_t last, dk_error *err);
DK_API void dk_commit_range_free(dk_commit_range *r);
DK_API size_t dk_commit_range_count(const dk_commit_range *r);
/** Action i, or NULL when out of range. */
DK_API const dk_action *dk_commit_range_action(const dk_commit_range *r, size_t i);
/** Commit time of version v in the range (or -1 when v is outside it). */
DK_API int64_t dk_commit_range_timestamp(const dk_commit_range *r, int64_t v);

DK_END_DECL

#endif /* DK_HISTORY_H */
