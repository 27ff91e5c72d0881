/*
** changes_int.h — library-internal pieces of the change data feed and incremental reads
** (include/dk/changes.h): the indexed-file sequence a stream walks and its admission control.
*/
#ifndef DK_CHANGES_INT_H
#define DK_CHANGES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dk/changes.h"
#include "dk/snapshot.h"

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

/* ---- change data feed: one commit's change files (delta-spark CDCReader.changesToDF) ---- */

typedef enum dk_changes__akind {
  DK_CHANGES__ADD = 1,
  DK_CHANGES__REMOVE = 2,
  DK_CHANGES__CDC = 3
} dk_changes__akind;

/* What the planner needs of one file action of a commit (the typed commit ranges give them;
** `entry` is what the file reader reads). */
typedef struct dk_changes__action {
  dk_changes__akind kind;
  int data_change;
  dk_file_entry entry; /* path (decoded), size, partition values, DV, row tracking */
} dk_changes__action;

/* One change file the commit contributes, in log order. For a DV difference (DV_DELETED,
** DV_RESTORED) the rows are those `a`'s DV deletes and `b`'s DV (if any) does not: a = the
** add and b = the remove for DV_DELETED, a = the remove and b = the add for DV_RESTORED. */
typedef struct dk_changes__planned {
  int source;                     /* dk_change_source (DK_CHANGE_*) */
  const dk_changes__action *a;
  const dk_changes__action *b;    /* the other DV of a DV difference, else NULL */
} dk_changes__planned;

/* Plans the change files of commit `version`: its cdc actions when it has any (only those);
** otherwise nothing for a MERGE that changed no row (`noop_merge`: commitInfo metrics
** numTargetRows{Inserted,Updated,Deleted} all "0"); otherwise its dataChange adds (inserts)
** and removes (deletes), a path both removed and added being read through the difference of
** their DVs (neither having one is DK_CORRUPT, as delta-spark refuses it). A path added or
** removed twice keeps its last action, as delta-spark's maps do. *out (allocated with alloc,
** may be NULL when *n is 0) points into `acts`. */
dk_status dk_changes__plan_commit(dk_changes__planned **out, size_t *n,
                                  const dk_changes__action *acts, size_t n_acts, int noop_merge,
                                  int64_t version, const dk_allocator *alloc, dk_error *err);

#endif /* DK_CHANGES_INT_H */
