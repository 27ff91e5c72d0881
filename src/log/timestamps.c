/*
** timestamps.c — commit times of versions (see timestamps.h for the rule): the listing of a
** table's commits with their adjusted modification times, the commit time of one version,
** and the version at a timestamp (time travel), by bisection over in-commit timestamps
** (monotonic by the protocol) and a scan of the adjusted modification times before them.
**
** Follows PROTOCOL.md "In-Commit Timestamps".
*/
#include <inttypes.h>

#include "log/commit.h"
#include "log/timestamps.h"

dk_status dk_log__commit_times_open(dk__commit_times *ct, const dk__log *lg, int64_t ict_from,
                                    dk_error *err) {
  memset(ct, 0, sizeof *ct);
  ct->alloc = lg->alloc;
  ct->ict_from = ict_from;
  DK_RETURN_NOT_OK(dk_log__list_all(&ct->listing, lg->sto, lg->root, lg->alloc, err));
  DK_RETURN_NOT_OK(dk_log__commit_list(&ct->listing, &ct->c, &ct->n, lg->alloc, err));
  if (!ct->n)
    return dk__error_set(err, DK_NOT_FOUND, "not a Delta table: %s/_delta_log has no commits",
                         lg->root);
  ct->mtime = dk__malloc(lg->alloc, ct->n * sizeof *ct->mtime);
  if (!ct->mtime) return dk__error_set(err, DK_NOMEM, "out of memory");
  dk_log__commit_times_monotonize(ct, 0);
  return DK_OK;
}

void dk_log__commit_times_monotonize(dk__commit_times *ct, size_t from) {
  for (size_t i = from; i < ct->n; i++) {
    int64_t m = ct->c[i]->mtime;
    if (i > from && m <= ct->mtime[i - 1]) m = ct->mtime[i - 1] + 1;
    ct->mtime[i] = m;
  }
}

void dk_log__commit_times_dispose(dk__commit_times *ct) {
  dk__free(ct->alloc, ct->mtime);
  dk__free(ct->alloc, ct->c);
  dk_log__segment_dispose(&ct->listing);
  memset(ct, 0, sizeof *ct);
}

size_t dk_log__commit_index(const dk__commit_times *ct, int64_t v) {
  size_t lo = 0, hi = ct->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ct->c[mid]->version < v) lo = mid + 1;
    else hi = mid;
  }
  return lo < ct->n && ct->c[lo]->version == v ? lo : ct->n;
}

dk_status dk_log__commit_time(int64_t *out, const dk__log *lg, const dk__commit_times *ct,
                              size_t i, int64_t ict, dk_error *err) {
  const dk__logfile *lf = ct->c[i];
  bool on = ct->ict_from >= 0 && lf->version >= ct->ict_from;
  if (on || ct->ict_from == DK__ICT_FROM_COMMITS) {
    if (ict == DK__ICT_UNREAD) {
      if (on) return dk_log__commit_ict(lg, lf, out, err);
      dk_arena ar;
      dk__arena_init(&ar, lg->alloc, 16 * 1024);
      const dk_json_value *ci;
      dk_status st = dk_log__commit_info(&ci, lg, lf, &ar, err);
      if (st == DK_OK && !dk__json_as_i64(dk__json_get(ci, "inCommitTimestamp"), &ict)) ict = -1;
      dk__arena_dispose(&ar);
      DK_RETURN_NOT_OK(st);
    }
    if (ict >= 0) {
      *out = ict;
      return DK_OK;
    }
    if (on)
      return dk__error_set(err, DK_CORRUPT,
                           "%s/_delta_log/%s: in-commit timestamps are enabled but the commit "
                           "has no commitInfo.inCommitTimestamp",
                           lg->root, lf->name);
  }
  *out = ct->mtime[i];
  return DK_OK;
}

dk_status dk_log__version_at_timestamp(int64_t *out, const dk__log *lg,
                                       const dk__commit_times *ct, int64_t ts, dk_error *err) {
  const dk__logfile *const *c = ct->c;
  size_t n = ct->n;
  size_t first_ict = n;
  if (ct->ict_from >= 0)
    for (size_t i = 0; i < n; i++)
      if (c[i]->version >= ct->ict_from) {
        first_ict = i;
        break;
      }
  if (first_ict < n) {
    int64_t t0;
    DK_RETURN_NOT_OK(dk_log__commit_time(&t0, lg, ct, first_ict, DK__ICT_UNREAD, err));
    if (ts >= t0) {
      size_t lo = first_ict, hi = n - 1; /* invariant: time(lo) <= ts */
      while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        int64_t tm;
        DK_RETURN_NOT_OK(dk_log__commit_time(&tm, lg, ct, mid, DK__ICT_UNREAD, err));
        if (tm <= ts)
          lo = mid;
        else
          hi = mid - 1;
      }
      if (lo == n - 1) {
        int64_t tl;
        DK_RETURN_NOT_OK(dk_log__commit_time(&tl, lg, ct, n - 1, DK__ICT_UNREAD, err));
        if (ts > tl)
          return dk__error_set(err, DK_OUT_OF_RANGE,
                               "timestamp %" PRId64 " is after the latest commit (version %" PRId64
                               " at %" PRId64 ")",
                               ts, c[n - 1]->version, tl);
      }
      *out = c[lo]->version;
      return DK_OK;
    }
  }
  /* before in-commit timestamps: the adjusted modification times */
  if (first_ict > 0 && ts < ct->mtime[0])
    return dk__error_set(err, DK_OUT_OF_RANGE,
                         "timestamp %" PRId64 " is before the earliest available commit (version %" PRId64
                         " at %" PRId64 ")",
                         ts, c[0]->version, ct->mtime[0]);
  int64_t found = -1;
  for (size_t i = 0; i < first_ict; i++)
    if (ct->mtime[i] <= ts) found = (int64_t)i;
  if (found < 0)
    return dk__error_set(err, DK_OUT_OF_RANGE, "timestamp %" PRId64 " is before the first commit",
                         ts);
  if (first_ict == n && (size_t)found == n - 1 && ts > ct->mtime[n - 1])
    return dk__error_set(err, DK_OUT_OF_RANGE,
                         "timestamp %" PRId64 " is after the latest commit (version %" PRId64
                         " at %" PRId64 ")",
                         ts, c[n - 1]->version, ct->mtime[n - 1]);
  *out = c[found]->version;
  return DK_OK;
}
