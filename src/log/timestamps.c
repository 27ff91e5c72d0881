/*
** timestamps.c — commit times: the version whose commit time is at or before a timestamp
** (time travel by timestamp).
**
** Follows PROTOCOL.md "In-Commit Timestamps": from delta.inCommitTimestampEnablementVersion
** on, a version's commit time is its commitInfo.inCommitTimestamp (monotonic, so it can be
** searched by bisection); before it, the commit file's modification time, made monotonic the
** way Delta does (a time not after its predecessor's becomes predecessor + 1 ms).
*/
#include <inttypes.h>

#include "log/commit.h"
#include "log/timestamps.h"

dk_status dk_log__version_at_timestamp(int64_t *out, const dk__log *lg, int64_t ts,
                                       int64_t ict_from, dk_error *err) {

  dk__segment seg;
  const dk__logfile **c = NULL;
  size_t n = 0;
  dk_status st = dk_log__list_all(&seg, lg->sto, lg->root, lg->alloc, err);
  if (st == DK_OK) st = dk_log__commit_list(&seg, &c, &n, lg->alloc, err);
  if (st == DK_OK && n == 0)
    st = dk__error_set(err, DK_NOT_FOUND, "%s: no commit files to time travel over", lg->root);
  if (st != DK_OK) goto done;

  size_t first_ict = n;
  if (ict_from >= 0)
    for (size_t i = 0; i < n; i++)
      if (c[i]->version >= ict_from) {
        first_ict = i;
        break;
      }
  if (first_ict < n) {
    int64_t t0;
    DK_CHECK_GOTO(dk_log__commit_ict(lg, c[first_ict], &t0, err));
    if (ts >= t0) {
      size_t lo = first_ict, hi = n - 1; /* invariant: ict(lo) <= ts */
      while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        int64_t tm;
        DK_CHECK_GOTO(dk_log__commit_ict(lg, c[mid], &tm, err));
        if (tm <= ts)
          lo = mid;
        else
          hi = mid - 1;
      }
      if (lo == n - 1) {
        int64_t tl;
        DK_CHECK_GOTO(dk_log__commit_ict(lg, c[n - 1], &tl, err));
        if (ts > tl) {
          st = dk__error_set(err, DK_OUT_OF_RANGE,
                             "timestamp %" PRId64 " is after the latest commit (version %" PRId64
                             " at %" PRId64 ")",
                             ts, c[n - 1]->version, tl);
          goto done;
        }
      }
      *out = c[lo]->version;
      goto done;
    }
  }
  /* file modification times, adjusted to be strictly increasing */
  int64_t prev = INT64_MIN, found = -1, last_ts = 0;
  for (size_t i = 0; i < first_ict; i++) {
    int64_t m = c[i]->mtime;
    if (prev != INT64_MIN && m <= prev) m = prev + 1;
    prev = m;
    if (i == 0 && ts < m) {
      st = dk__error_set(err, DK_OUT_OF_RANGE,
                         "timestamp %" PRId64 " is before the earliest available commit (version %" PRId64
                         " at %" PRId64 ")",
                         ts, c[0]->version, m);
      goto done;
    }
    if (m <= ts) found = (int64_t)i;
    last_ts = m;
  }
  if (found < 0) {
    st = dk__error_set(err, DK_OUT_OF_RANGE, "timestamp %" PRId64 " is before the first commit",
                       ts);
    goto done;
  }
  if (first_ict == n && (size_t)found == n - 1 && ts > last_ts) {
    st = dk__error_set(err, DK_OUT_OF_RANGE,
                       "timestamp %" PRId64 " is after the latest commit (version %" PRId64
                       " at %" PRId64 ")",
                       ts, c[n - 1]->version, last_ts);
    goto done;
  }
  *out = c[found]->version;
cleanup:
done:
  dk__free(lg->alloc, c);
  dk_log__segment_dispose(&seg);
  return st;
}

