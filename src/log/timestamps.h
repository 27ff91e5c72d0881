/*
** timestamps.h — commit times of versions (src/log/timestamps.c; not API): the one rule that
** history, commit ranges and time travel by timestamp share.
**
** The commit time of version v is its commitInfo.inCommitTimestamp when in-commit timestamps
** are on at v, else its commit file's modification time made strictly increasing over the
** commits listed, from the oldest (a time not after its predecessor's becomes the
** predecessor's + 1 ms, as delta-spark's DeltaHistoryManager does). What is listed follows
** delta-spark: the whole log for time travel and history; only the n newest commits for
** history with a limit of n (DESCRIBE HISTORY LIMIT n); for a commit range a..b (change data
** feed) the commits from DK__MONOTONIZE_LOOKBACK before a on (CDCReaderBase). Snapshots
** report the unadjusted modification time of their version's commit (as delta-spark's
** Snapshot does): it needs no listing of older commits. The answers differ only where mtimes
** do not increase.
**
** Follows PROTOCOL.md "In-Commit Timestamps".
*/
#ifndef DK_LOG_TIMESTAMPS_H
#define DK_LOG_TIMESTAMPS_H

#include "log/segment.h"

/* ict_from values besides a version: */
#define DK__ICT_OFF ((int64_t)-1)        /* in-commit timestamps are off */
#define DK__ICT_FROM_COMMITS ((int64_t)-2) /* unknown: a commit's ICT is used when it has one */
/* `ict` argument of dk_log__commit_time when the caller has not read the commitInfo */
#define DK__ICT_UNREAD INT64_MIN

/* The commits of a table, listed once, with their adjusted modification times. */
typedef struct dk__commit_times {
  dk__segment listing;       /* every file of _delta_log (owned) */
  const dk__logfile **c;     /* its commit files, ascending (pointers into listing) */
  size_t n;
  int64_t *mtime;            /* c[i]'s modification time, adjusted to increase strictly */
  int64_t ict_from;          /* first version whose time is its ICT, or DK__ICT_* */
  const dk_allocator *alloc;
} dk__commit_times;

/* Lists `lg`'s log. DK_NOT_FOUND when it has no commit file. */
dk_status dk_log__commit_times_open(dk__commit_times *ct, const dk__log *lg, int64_t ict_from,
                                    dk_error *err);
void dk_log__commit_times_dispose(dk__commit_times *ct);
/* Commits before a range that delta-spark lists to make its times increasing (its
 * DeltaHistoryManager.POTENTIALLY_UNMONOTONIZED_TIMESTAMPS): commit ranges use it. */
#define DK__MONOTONIZE_LOOKBACK 100

/* Recomputes the adjusted modification times of ct->c[from..] as if c[from] were the oldest
 * commit listed (c[from] keeps its own mtime): delta-spark monotonizes over the commits it
 * lists, and DESCRIBE HISTORY LIMIT n lists only the newest n. Earlier entries are left as
 * they were. */
void dk_log__commit_times_monotonize(dk__commit_times *ct, size_t from);
/* The index of version v among ct->c, or ct->n when it has no commit file. */
size_t dk_log__commit_index(const dk__commit_times *ct, int64_t v);
/* The commit time of ct->c[i]. `ict` is its inCommitTimestamp when the caller has read its
 * commitInfo (-1: it has none), or DK__ICT_UNREAD to have it read when the rule needs it.
 * DK_CORRUPT when ICT is on at the version but the commit has none. */
dk_status dk_log__commit_time(int64_t *out, const dk__log *lg, const dk__commit_times *ct,
                              size_t i, int64_t ict, dk_error *err);
/* The latest version whose commit time <= ts (DK_OUT_OF_RANGE before the first commit or
 * after the latest one); ct->ict_from must be known (a version or DK__ICT_OFF). */
dk_status dk_log__version_at_timestamp(int64_t *out, const dk__log *lg,
                                       const dk__commit_times *ct, int64_t ts, dk_error *err);

#endif /* DK_LOG_TIMESTAMPS_H */
