/*
** admit.c — admission control of incremental reads: which of the next positions of a
** stream's file sequence one micro-batch takes (delta-spark DeltaSource AdmissionLimits and
** DeltaSourceCDCSupport's per-commit admission; ../shared/reference/spark-v2-connector-spec.md
** §7.3-7.5), and the offset a batch ends at.
*/
#include "changes/changes_int.h"

#define DEFAULT_MAX_FILES 1000
#define NO_FILE_LIMIT (INT32_MAX - 8) /* Spark's Int.MaxValue - 8 with only a byte limit */

typedef struct budget {
  int64_t files, bytes;
} budget;

static int has_capacity(const budget *b) { return b->files > 0 && b->bytes > 0; }

static void spend(budget *b, int64_t size) {
  b->files -= 1;
  b->bytes -= size;
}

size_t dk_changes__admit(const dk_changes__indexed *seq, size_t n, const dk_changes__limits *lim) {
  budget b;
  b.files = lim->max_files > 0 ? lim->max_files
                               : (lim->max_bytes > 0 ? NO_FILE_LIMIT : DEFAULT_MAX_FILES);
  b.bytes = lim->max_bytes > 0 ? lim->max_bytes : INT64_MAX;
  int taken_any = 0;
  size_t i = 0;
  while (i < n) {
    const dk_changes__indexed *e = &seq[i];
    if (e->slot != DK_CHANGES__FILE) {
      i++;
      continue;
    }
    if (!e->atomic) {
      int ok = has_capacity(&b);
      spend(&b, e->size);
      if (!ok) break;
      taken_any = 1;
      i++;
      continue;
    }
    /* an atomic commit: its files up to its END (or the end of what was listed) */
    size_t j = i;
    int64_t files = 0, bytes = 0;
    while (j < n && seq[j].slot == DK_CHANGES__FILE && seq[j].version == e->version) {
      files++;
      bytes += seq[j].size;
      j++;
    }
    int fits = files <= b.files && bytes <= b.bytes;
    int ok = has_capacity(&b) && (!taken_any || fits);
    b.files -= files;
    b.bytes -= bytes;
    if (!ok) break;
    taken_any = 1;
    i = j;
    if (!has_capacity(&b)) break; /* its END waits for the next batch, as Spark's does */
  }
  return i;
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
