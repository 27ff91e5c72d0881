/*
** dml_int.h — shared machinery of the row-level DML commands (not API): the set of touched
** data files with the rows each loses, turned into deletion vectors (remove + add of the path
** with the merged DV, stats with wide bounds) or into file removals, as delta-spark's
** DMLWithDeletionVectorsHelper does; the operation parameters and metrics of the commit.
*/
#ifndef DK_TXN_DML_INT_H
#define DK_TXN_DML_INT_H

#include "dk/dml.h"
#include "dv/dv.h"
#include "scan/file_reader.h"
#include "txn/txn_int.h"

/* A data file of the read snapshot that loses rows. */
typedef struct dml_file {
  int64_t idx;            /* index in the read snapshot */
  int64_t num_records;    /* physical rows (stats, else the footer) */
  int64_t old_card;       /* rows its current DV deletes */
  dk_dv_builder *rows;    /* rows newly removed (physical indexes); NULL = every live row */
  int64_t n_new;          /* how many */
} dml_file;

typedef struct dml_ctx {
  dk_txn *x;
  const dk_allocator *alloc;
  dk_dml_options o;
  dk_dml_metrics *m;
  int use_dvs;            /* the table allows DVs and the options do not refuse them */
  dml_file *files;
  size_t n_files, cap_files;
  int64_t t0_ms;
  dk_buf scratch;
  int64_t touched_live;   /* live rows of the touched files (dk_txn__dml_match) */
} dml_ctx;

int64_t dk_txn__dml_now_ms(void);
/* numRecords of a stats JSON text (-1: none). */
int64_t dk_txn__stats_records(const char *stats);
dk_status dk_txn__dml_init(dml_ctx *c, dk_txn *x, const dk_dml_options *o, dk_dml_metrics *m,
                           dk_dml_metrics *own, dk_error *err);
void dk_txn__dml_dispose(dml_ctx *c);
/* Whether the read snapshot's table allows writing deletion vectors (delta-spark's
** DeletionVectorUtils.deletionVectorsWritable). */
int dk_txn__dv_writable(const dk_txn *x);
/* Records that file idx (with physical row count num_records, -1 unknown) loses `rows`
** (physical indexes, ascending, not deleted already). */
dk_status dk_txn__dml_touch(dml_ctx *c, int64_t idx, int64_t num_records, const int64_t *rows,
                            int64_t n, dk_error *err);
/* Reads the candidate files of `pred` (recorded as read: txn.filterFiles) for the physical
** indexes of the rows it makes TRUE and touches each file with any; *matched receives their
** number. A file whose partition values or statistics rule pred out is not opened (an IN
** list is checked value by value against min/max). Fills num_files_after_skipping (the
** files opened) and touched_live. */
dk_status dk_txn__dml_match(dml_ctx *c, const dk_expr *pred, int64_t *matched, dk_error *err);

/* What dk_txn__dml_rewrite writes of the touched files. */
typedef struct dml_rewrite {
  const dk_expr *keep;          /* the rows written (NULL: every live row) */
  const dk_dml_assignment *set; /* new values of these columns (none: rows as they are) */
  size_t n_set;
  const dk_expr *when;          /* the values apply where this is TRUE (NULL: every row) */
  const char *what;             /* statement name for messages ("UPDATE") */
  const char *change_type;      /* non-NULL: change data rows of this _change_type
                                   ("update_preimage", ...) written as cdc files instead */
} dml_rewrite;
/* Whether the table's change data feed is on (delta.enableChangeDataFeed). */
int dk_txn__cdf_on(const dk_txn *x);
/* Checks r's expressions against the table's columns (nothing read): call before matching. */
dk_status dk_txn__dml_rewrite_check(dml_ctx *c, const dml_rewrite *r, dk_error *err);
/* Writes the selected rows of every touched file, with the assigned columns' values (stored
** with an ANSI cast to the column type), as new data files through dk_txn_write (pulled file by
** file: one batch in memory). Fills num_added_files / num_added_bytes. */
dk_status dk_txn__dml_rewrite(dml_ctx *c, const dml_rewrite *r, dk_error *err);
/* Turns every touched file into a removal (copy-on-write: its rows were rewritten). */
void dk_txn__dml_remove_touched(dml_ctx *c);

/* Writes the DVs of every touched file (one DV file, or inline) and stages the removes and
** adds; files whose every row is gone are only removed. Fills the DV metrics. */
dk_status dk_txn__dml_apply_dvs(dml_ctx *c, dk_error *err);
/* The stats JSON of a file given a (new) DV: tightBounds false, all-null columns' nullCount
** made physical (delta-spark updateStatsToWideBounds). */
dk_status dk_txn__wide_stats(dk_buf *out, const char *stats, int64_t num_records,
                             int64_t old_card, dk_error *err);
/* Sets the commit's operation and parameters (a JSON object text). */
dk_status dk_txn__set_operation(dk_txn *x, const char *op, const char *params, dk_error *err);
/* Appends `"[\"<sql>\"]"` (a JSON string holding a JSON array of the predicate's text, or
** ["true"] for none) to b: the predicate parameter as Spark writes it. */
dk_status dk_txn__predicate_param(dk_buf *b, const dk_expr *pred, dk_error *err);
/* Sets the commit's operation with {"predicate": <dk_txn__predicate_param>} as its parameters
** (DELETE, UPDATE). */
dk_status dk_txn__set_predicate_operation(dk_txn *x, const char *op, const dk_expr *pred,
                                          dk_error *err);

/* A commit result as "nothing committed" (its version kept). */
static inline void dk_txn__commit_reset(dk_commit_result *commit) {
  if (!commit) return;
  unsigned v = commit->version;
  memset(commit, 0, sizeof *commit);
  commit->version = v;
  commit->committed_version = -1;
}

/* Resolves each of uris[0..n) (a data file's URI, as a scan's _metadata.file_path gives it)
** to its index in the read snapshot into idx[0..n); *nrec gets every file's numRecords (-1
** unknown), a new array of dk_snapshot_num_files entries (x's allocator). DK_NOT_FOUND names
** a URI that is no active file. */
dk_status dk_txn__file_indexes(int64_t *idx, int64_t **nrec, dk_txn *x, const char *const *uris,
                               size_t n, dk_error *err);

/* The body of a DML statement on a transaction begun for it. */
typedef dk_status (*dml_body)(dk_txn *x, void *arg, dk_error *err);
/* The runner of dk_table_delete/update/merge: resets `commit`, opens the latest snapshot of t,
** begins a transaction as `operation` (txn_opts otherwise), runs body, and commits when it
** staged anything (nothing matched: no commit, as Spark's commitIfNeeded); any failure aborts. */
dk_status dk_txn__dml_run(dk_commit_result *commit, dk_table *t, const char *operation,
                          const dk_txn_options *txn_opts, dml_body body, void *arg,
                          dk_error *err);

#endif /* DK_TXN_DML_INT_H */
