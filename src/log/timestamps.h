/*
** timestamps.h — commit times of versions (src/log/timestamps.c; not API).
**
** Follows PROTOCOL.md "In-Commit Timestamps".
*/
#ifndef DK_LOG_TIMESTAMPS_H
#define DK_LOG_TIMESTAMPS_H

#include "log/segment.h"

/* The latest version whose commit time <= ts (DK_OUT_OF_RANGE outside the history);
 * `ict_from` is the first version whose commit time is its inCommitTimestamp (-1: none). */
dk_status dk_log__version_at_timestamp(int64_t *out, const dk__log *lg, int64_t ts,
                                       int64_t ict_from, dk_error *err);

#endif /* DK_LOG_TIMESTAMPS_H */
