/*
** admit.c — admission control of incremental reads: which of the next positions of a
** stream's file sequence one micro-batch takes (delta-spark DeltaSource AdmissionLimits and
** DeltaSourceCDCSupport's per-commit admission; ../shared/reference/spark-v2-connector-spec.md
** §7.3-7.5), and the offset a batch ends at.
*/
#include <string.h>

#include "changes/changes_int.h"

#define DEFAULT_MAX_FILES 1000
#define NO_FILE_LIMIT (INT32_MAX - 8) /* Spark's Int.MaxValue - 8 with only a byte limit */

void dk_changes__admission_init(dk_changes__admission *a, const dk_changes__limits *lim) {
  memset(a, 0, sizeof *a);
  a->lim = *lim;
  a->files = lim->max_files > 0 ? lim->max_files
                                : (lim->max_bytes > 0 ? NO_FILE_LIMIT : DEFAULT_MAX_FILES);
  a->bytes = lim->max_bytes > 0 ? lim->max_bytes : INT64_MAX;
}

bool dk_changes__admission_has_capacity(const dk_changes__admission *a) {
  return a->files > 0 && a->bytes > 0;
}

void dk_changes__admit_more(dk_changes__admission *a, const dk_changes__indexed *seq, size_t n) {
  size_t i = a->taken;
  while (!a->stopped && i < n) {
    const dk_changes__indexed *e = &seq[i];
    /* a change data feed stream starts a commit only with budget left */
    if (a->lim.cdf && i > 0 && e->version != seq[i - 1].version &&
        !dk_changes__admission_has_capacity(a)) {
      a->stopped = true;
      break;
    }
    if (e->atomic) {
      /* the commit's positions (files; for DV commits its sentinels too) */
      size_t j = i;
      int64_t count = 0, bytes = 0;
      while (j < n && seq[j].version == e->version && seq[j].atomic) {
        count++;
        if (seq[j].slot == DK_CHANGES__FILE) bytes += seq[j].size;
        j++;
      }
      bool ok = !a->processed || (a->files - count >= 0 && a->bytes - bytes >= 0);
      a->processed = true;
      a->files -= count;
      a->bytes -= bytes;
      if (!ok) {
        a->stopped = true;
        break;
      }
      i = j;
      continue;
    }
    a->processed = true;
    if (e->slot == DK_CHANGES__FILE) {
      bool ok = dk_changes__admission_has_capacity(a);
      a->files -= 1;
      a->bytes -= e->size;
      if (!ok) {
        a->stopped = true;
        break;
      }
    }
    i++;
  }
  a->taken = i;
}

size_t dk_changes__admit(const dk_changes__indexed *seq, size_t n, const dk_changes__limits *lim) {
  dk_changes__admission a;
  dk_changes__admission_init(&a, lim);
  dk_changes__admit_more(&a, seq, n);
  return a.taken;
}

void dk_changes__offset_after(dk_stream_offset *out, const dk_changes__indexed *last,
                              int in_initial_snapshot, int64_t snapshot_version) {
  if (last->index == DK_CHANGES__INDEX_END) {
    out->version = last->version + 1;
    out->index = DK_STREAM_INDEX_BASE;
    out->is_initial_snapshot = 0;
    return;
  }
  out->version = last->version;
  out->index = last->index;
  out->is_initial_snapshot = in_initial_snapshot && last->version == snapshot_version;
}
