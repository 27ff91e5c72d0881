/*
** changes_int.h — library-internal pieces of the change data feed and incremental reads
** (include/dk/changes.h): the indexed-file sequence a stream walks and its admission control.
*/
#ifndef DK_CHANGES_INT_H
#define DK_CHANGES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dk/changes.h"

/* One position of a stream's totally ordered file sequence (delta-spark IndexedFile): per
** commit (or initial snapshot) a BASE sentinel, its files indexed 0.., an END sentinel. */
typedef enum dk_changes__slot {
  DK_CHANGES__BASE = 1,
  DK_CHANGES__FILE = 2,
  DK_CHANGES__END = 3
} dk_changes__slot;

#define DK_CHANGES__INDEX_END (INT64_MAX - 100) /* in memory only, never serialized */

typedef struct dk_changes__indexed {
  int64_t version;
  int64_t index;   /* DK_STREAM_INDEX_BASE, 0.., or DK_CHANGES__INDEX_END */
  dk_changes__slot slot;
  int64_t size;    /* bytes of a FILE */
  int atomic;      /* change data feed: the FILE belongs to a commit admitted whole (it has
                      cdc files or deletion-vector files) */
} dk_changes__indexed;

/* Admission limits (delta-spark AdmissionLimits): max_files <= 0 and max_bytes <= 0 mean the
** defaults (1000 files; with only a byte limit, no file limit). */
typedef struct dk_changes__limits {
  int64_t max_files;
  int64_t max_bytes;
} dk_changes__limits;

/* How many entries of seq[0..n) (the positions after the stream's offset, in order) one
** batch takes: sentinels always pass; a file passes while budget remained before it (so a
** batch has at least one file and bytes may overshoot); the batch ends at the first file
** refused. A commit whose files are `atomic` is taken whole or not at all: whole when nothing
** was taken before it in the batch or when it fits the remaining budget (a refused one still
** spends the budget, so no later commit is taken); a commit taken whole that exhausts the
** budget ends the batch before its END sentinel. */
size_t dk_changes__admit(const dk_changes__indexed *seq, size_t n, const dk_changes__limits *lim);

/* The offset after taking `last` (delta-spark DeltaSource.buildOffsetFromIndexedFile): END
** moves to (version + 1, BASE); otherwise (version, index), inside the initial snapshot when
** the stream is in it and `last` is of the snapshot's version. */
void dk_changes__offset_after(dk_stream_offset *out, const dk_changes__indexed *last,
                              int in_initial_snapshot, int64_t snapshot_version);

#endif /* DK_CHANGES_INT_H */
