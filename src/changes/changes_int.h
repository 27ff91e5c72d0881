/*
** changes_int.h — library-internal pieces of the change data feed and incremental reads
** (include/dk/changes.h): the indexed-file sequence a stream walks and its admission control.
*/
#ifndef DK_CHANGES_INT_H
#define DK_CHANGES_INT_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "dk/changes.h"
#include "dk/history.h"
#include "dk/snapshot.h"
#include "util/util.h"

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
  int atomic;      /* change data feed: the commit is admitted whole or not at all:
                      DK_CHANGES__ATOMIC_CDC (its cdc files; the commit has no sentinels in
                      the sequence) or DK_CHANGES__ATOMIC_DV (files with deletion vectors:
                      its sentinels are part of the whole and count as files, as Spark's) */
} dk_changes__indexed;

#define DK_CHANGES__ATOMIC_CDC 1
#define DK_CHANGES__ATOMIC_DV 2

/* Admission limits (delta-spark AdmissionLimits): max_files <= 0 and max_bytes <= 0 mean the
** defaults (1000 files; with only a byte limit, no file limit). `cdf`: a change data feed
** stream, which reads a commit only while budget remains at its start
** (DeltaSourceCDCSupport.getFileChangesForCDC). */
typedef struct dk_changes__limits {
  int64_t max_files;
  int64_t max_bytes;
  int cdf;
} dk_changes__limits;

/* Admission of one batch as its positions are listed (delta-spark's takeWhile(admit) over the
** positions after the stream's offset): sentinels always pass; a file passes while budget
** remained before it (so a batch has at least one file and bytes may overshoot); the batch
** ends at the first position refused. An atomic commit is taken whole when nothing was
** admitted before it in the batch (sentinels included) or when it fits the remaining budget;
** a refused one ends the batch. */
typedef struct dk_changes__admission {
  dk_changes__limits lim;
  int64_t files, bytes; /* budget left */
  bool processed;       /* something was admitted (Spark's commitProcessedInBatch) */
  size_t taken;         /* positions admitted so far */
  bool stopped;         /* a position was refused: the batch is seq[0..taken) */
} dk_changes__admission;

void dk_changes__admission_init(dk_changes__admission *a, const dk_changes__limits *lim);
/* Admits seq[a->taken..n) (a commit's positions are appended whole before a call). */
void dk_changes__admit_more(dk_changes__admission *a, const dk_changes__indexed *seq, size_t n);
/* Whether budget is left (a change data feed stream reads no further commit otherwise). */
bool dk_changes__admission_has_capacity(const dk_changes__admission *a);
/* The positions of seq[0..n) one batch takes (the above in one call). */
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

/* ---- schema compatibility (compat.c) ---------------------------------------------------- */

/* A metaData action as the checks read it. */
typedef struct dk_changes__meta {
  const dk_metadata *md;
  const dk_type *schema;       /* parsed schemaString */
  dk_column_mapping_mode mode;
  bool cdf;                    /* delta.enableChangeDataFeed (or its legacy alias) */
} dk_changes__meta;

dk_status dk_changes__meta_of(dk_changes__meta *out, const dk_metadata *md, dk_arena *ar,
                              dk_error *err);
/* delta-spark SchemaUtils.isReadCompatible(existing, read, forbidTightenNullability), case
** sensitive, without type widening: every existing column is in `read`, common columns keep
** their name and type, and nullability does not tighten (forbid_tighten: read may not be
** non-null where existing is nullable) or relax (otherwise). */
bool dk_changes__read_compatible(const dk_type *existing, const dk_type *read,
                                 bool forbid_tighten);
/* Same partition columns, in order. */
bool dk_changes__same_partitioning(const dk_metadata *a, const dk_metadata *b);
/* delta-spark DeltaColumnMapping.hasNoColumnMappingSchemaChanges(newer, older): no physical
** column of `older` dropped or renamed in `newer` and the same partitioning (both under
** column mapping; an older table without it counts its logical names as physical); reading
** across a column-mapping downgrade is a change; neither under column mapping is none. */
dk_status dk_changes__no_cm_schema_changes(bool *out, const dk_changes__meta *newer,
                                           const dk_changes__meta *older,
                                           const dk_allocator *alloc, dk_error *err);

/* delta-spark CDCReader.shouldSkipFileActionsInCommit: a MERGE whose metrics say it inserted,
** updated and deleted no row (changes.c). */
bool dk_changes__is_noop_merge(const dk_action_commit_info *ci, const dk_allocator *alloc);

/* ---- change files and their reading (read.c) --------------------------------------------- */

/* Entries of file actions (and copies that outlive what they came from). */
void dk_changes__entry_of_action(dk_file_entry *out, const dk_action_file *f);
dk_status dk_changes__entry_copy(dk_file_entry *out, const dk_file_entry *in, bool with_stats,
                                 dk_arena *ar, dk_error *err);
const dk_dv_descriptor *dk_changes__dv_copy(const dk_dv_descriptor *dv, dk_arena *ar,
                                            dk_error *err);

/* The reader of change files (or a stream's added files) into output batches: the requested
** table columns, then (cdf) the metadata columns; immutable once built, shared by the streams
** reading through it (reference-counted). */
typedef struct dk_changes__reader dk_changes__reader;

dk_status dk_changes__reader_new(dk_changes__reader **out, dk_snapshot *read_schema,
                                 const char *const *columns, size_t n_columns,
                                 const dk_expr *filter, bool cdf, int64_t batch_size,
                                 unsigned metadata_fields, dk_error *err);
dk_changes__reader *dk_changes__reader_ref(dk_changes__reader *r);
void dk_changes__reader_free(dk_changes__reader *r);
dk_status dk_changes__reader_schema(struct ArrowSchema *out, const dk_changes__reader *r,
                                    dk_error *err);
/* Whether the filter rules change file f out (partition values, stats when f->entry.stats is
** set, its commit version / timestamp / change type). */
dk_status dk_changes__reader_prunes(bool *out, const dk_changes__reader *r,
                                    const dk_change_file *f, dk_error *err);

/* A list of change files that owns copies of their entries (a feed's plan, a stream batch). */
typedef struct dk_changes__files {
  const dk_allocator *alloc;
  dk_change_file *v;
  size_t n, cap;
  dk_arena ar; /* the entries' strings and DVs */
} dk_changes__files;

void dk_changes__files_init(dk_changes__files *l, const dk_allocator *alloc);
void dk_changes__files_dispose(dk_changes__files *l);
/* Appends a copy of f (entry without stats, keep DV); what names the owner in errors. */
dk_status dk_changes__files_push(dk_changes__files *l, const dk_change_file *f,
                                 const char *what, dk_error *err);
/* *out = file i (borrowed), DK_INVALID when out of range. */
dk_status dk_changes__files_get(dk_change_file *out, const dk_changes__files *l, int64_t i,
                                const char *what, dk_error *err);
/* dk_changes__read of files [first, first + n) after a range check; takes one reference of
** *refs, which release(owner) gives back when the stream is released. */
dk_status dk_changes__files_read(struct ArrowArrayStream *out, dk_changes__reader *r,
                                 const dk_changes__files *l, int64_t first, int64_t n,
                                 int *refs, void (*release)(void *owner), void *owner,
                                 const char *what, dk_error *err);

/* The files a stream reads (borrowed; they and `owner` stay alive while the stream does:
** release(owner) runs when it is released). */
dk_status dk_changes__read(struct ArrowArrayStream *out, dk_changes__reader *r,
                           const dk_change_file *files, size_t n, void (*release)(void *owner),
                           void *owner, dk_error *err);

/* ---- range checks shared by the feed and streams (changes.c) ------------------------------ */

/* The change file a planned entry reads (entries borrowed from the plan's actions). */
dk_status dk_changes__file_of_planned(dk_change_file *out, const dk_changes__planned *p,
                                      int64_t version, int64_t timestamp);

/* The version of the first commit at or after `ts` (delta-spark
** DeltaSource.getStartingVersionFromTimestamp): the latest + 1 when ts is after every commit. */
dk_status dk_changes__version_from_timestamp(int64_t *out, int64_t *latest, dk_table *t,
                                             const dk_snapshot *latest_snap, int64_t ts,
                                             dk_error *err);

#endif /* DK_CHANGES_INT_H */
