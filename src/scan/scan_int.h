/*
** scan_int.h — library-internal pieces of the scan module (not API), shared by its files:
**   plan.c        options, columns, schemas, filter binding (dk_scan_new)
**   select.c      partition pruning, stats skipping, LIMIT: the file list
**   stats.c       a snapshot's per-file statistics parsed once, kept columnar with it
**   file_reader.c one task (a file or a byte range of it) read into output batches; and the
**                 single-file reader the rest of the library uses (file_reader.h)
**   rowgroup.c    row-group and page-range selection inside a file
**   stream.c      single and multi-threaded ArrowArrayStream of a whole scan
**   split.c       split planning, the split wire format, reading a split
**   arrays.c      Arrow array surgery used while reading (row selection, casts for type
**                 widening, all-null columns, mapping a file's physical columns onto the
**                 table's logical schema)
*/
#ifndef DK_SCAN_INT_H
#define DK_SCAN_INT_H

#include "arrow/array.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "dk/parquet.h"
#include "dk/sys/storage.h"
#include "dv/dv.h"
#include "expr/skip.h"
#include "util/exec.h"
#include "util/util.h"

typedef struct scan_col {
  const dk_field *field; /* logical field of the table schema (or a pruned copy): what is read */
  const dk_field *out_field; /* output field when narrower than `field` (a nested projection
                              * whose filter reads more of the struct), else NULL */
  int is_partition;
  int pruned;            /* field is a pruned copy (nested projection) */
  const char **fpaths;   /* nested paths the filter added (relative to the column; arena) */
  size_t n_fpaths;
} scan_col;

/* Everything a reader needs besides the file list (shared by whole-scan and split reads). */
typedef struct scan_plan {
  const dk_allocator *alloc;
  char *root;                 /* table root (canonical: local path or whole URI) */
  dk_storage *sto;            /* the backend every file is read through (borrowed: the table's,
                                 or the split reader's) */
  dk_column_mapping_mode mode;
  size_t n_cols;              /* columns read: the n_out output ones, then filter-only ones */
  size_t n_out;
  scan_col *cols;
  struct ArrowSchema out_schema;  /* "+s": cols[0..n_out), [_metadata] */
  struct ArrowSchema read_schema; /* "+s": cols[0..n_cols) (the residual is bound to it) */
  dk_expr *residual;              /* unbound conjuncts not decided by partition values */
  dk_expr *residual_bound;        /* bound to read_schema; NULL when the engine applies it */
  unsigned meta;
  int skip_page_crc;          /* dk_scan_options.skip_page_checksums */
  int confine;                /* the table's path confinement (dk_table_options.confine_paths) */
  int64_t limit;
  int64_t batch_size;
  const char *row_id_col;     /* materialised row-id column (physical name) or NULL */
  const char *row_cv_col;     /* materialised row-commit-version column or NULL */
  dk_arena ar;                /* pruned field types, copies of names */
  int64_t n_req;              /* requested column names (-1: all columns) */
  const char **req;
  size_t n_pcols;             /* the table's partition columns (and constant extra columns) */
  const char **pcols;
} scan_plan;

/* One file to read (or a byte range of it). */
typedef struct scan_task {
  const char *path;           /* as in the log (relative or absolute URI) */
  int64_t size, mtime;
  const char *const *pvals;   /* one text per partition output column (NULL = null) */
  const dk_dv_descriptor *dv; /* NULL: none */
  const dk_dv_descriptor *keep_dv; /* non-NULL: only the rows this DV deletes are read (and
                                    * of them, those `dv` does not delete): a change data
                                    * feed's DV difference */
  int has_base_row_id;
  int64_t base_row_id;
  int has_default_rcv;
  int64_t default_rcv;
  int64_t range_start, range_end; /* range_end == 0: the whole file */
} scan_task;

struct dk_scan {
  int refs; /* atomic: the handle plus one per open stream */
  const dk_allocator *alloc;
  dk_snapshot *snap;
  scan_plan plan;
  int64_t n_files;
  int64_t *files;   /* indices into the snapshot's active files */
  int64_t *nrec;    /* numRecords of each selected file from its stats (-1 unknown) */
  const char **pvals; /* n_files * n_partition_out texts */
  size_t n_part_out;
  int64_t n_pruned;
  int64_t *pruned;    /* 2 per pruned file: snapshot index, dk_prune_reason */
  int64_t n_pieces, n_splits;
  int64_t *pieces;    /* 3 per piece: index into files, range start, range end */
  int64_t *splits;    /* 2 per split: first piece, number of pieces */
  int64_t split_target, open_cost;
  int threads;
  int64_t read_ahead; /* dk_scan_options.read_ahead_bytes resolved: bytes, or -1 (none) */
  dk_scan_stats stats;
  dk_pool *pool; /* plan->alloc: everything reading allocates recycles through it */
};

/* Bytes of freed large blocks a scan keeps for reuse (about the buffers of a few batches
** and files in flight). */
#define SCAN_POOL_CACHE ((size_t)32 << 20)
/* Default bytes of column chunks each reader thread fetches ahead on an object store
** (dk_scan_options.read_ahead_bytes). */
#define SCAN_READ_AHEAD ((int64_t)64 << 20)

static inline void dk_scan__stat_add(int64_t *p, int64_t v) {
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* ---- plan (plan.c) -------------------------------------------------------------------------- */

/* Fills a plan for reading the snapshot's files with allocator alloc: table root, column
** mapping, partition and row-tracking columns, the requested columns (names or dotted nested
** paths; n_columns < 0: every column), the top-level columns `filter` reads as filter-only
** columns (NULL: none), `_metadata` fields `meta`, and both schemas. limit -1, batch size 65536;
** no residual. On failure the caller disposes of the plan. */
dk_status dk_scan__plan_init(scan_plan *p, const dk_allocator *alloc, const dk_snapshot *snap,
                             const char *const *columns, int64_t n_columns,
                             const dk_expr *filter, unsigned meta, dk_error *err);
/* The same over `schema` (a STRUCT) instead of the snapshot's, with `pcols` as the columns
** whose values come from per-file texts (the partition columns, and the file reader's
** constant extra columns); both must outlive the plan. */
dk_status dk_scan__plan_init_ex(scan_plan *p, const dk_allocator *alloc, const dk_snapshot *snap,
                                const dk_type *schema, const char *const *pcols, size_t n_pcols,
                                const char *const *columns, int64_t n_columns,
                                const dk_expr *filter, unsigned meta, dk_error *err);
void dk_scan__plan_dispose(scan_plan *p);
/* Builds out_schema and read_schema from the plan's columns. */
dk_status dk_scan__plan_build_schema(scan_plan *p, const dk_type *schema, dk_error *err);
int dk_scan__is_partition_col(const scan_plan *p, const char *name);
/* Resolves the requested columns (names or dotted nested paths; n < 0: every column, data
** columns then partition columns) into plan->cols, remembering the request for splits. */
dk_status dk_scan__plan_add_columns(scan_plan *p, const dk_type *schema, const char *const *names,
                                    int64_t n, dk_error *err);
/* Appends (as filter-only columns) the top-level columns the filter reads that the output
** lacks; widens nested projections whose filter reads fields they drop (add = 0: only that,
** for a plan rebuilt from a split, whose filter-only columns are already listed). */
dk_status dk_scan__add_filter_columns(scan_plan *p, const dk_expr *e, const dk_type *schema,
                                      int add, dk_error *err);

/* ---- file selection (select.c) -------------------------------------------------------------- */

/* numRecords of a stats JSON text: the top-level member, a non-negative integer that fits
** in 64 bits (anything else, or no stats: -1). ar is scratch for stats that do not start
** with it (parsed whole). */
int64_t dk_scan__num_records(const char *stats, dk_arena *ar);
/* ---- a snapshot's file statistics, columnar (stats.c) ---------------------------------------- */

typedef struct dk_scan__stats dk_scan__stats;
struct stats_col;

/* The snapshot's columnar statistics, holding every column `bound` (may be NULL) skips by:
** built on the first call (one pass over the stats text) and extended by a call that needs
** columns it lacks; borrowed from the snapshot (valid while it lives). Any thread. */
dk_status dk_scan__stats_get(const dk_scan__stats **out, const dk_snapshot *snap,
                             const dk_expr *bound, dk_error *err);
/* A table of its own (not the snapshot's) over the stats texts[0..n) (NULL: none), holding
** the columns bound skips by; freed with dk_scan__stats_free. (Tests compare it with the JSON
** provider of expr/skip.c.) */
dk_status dk_scan__stats_build(dk_scan__stats **out, const char *const *texts, int64_t n,
                               const dk_expr *bound, const dk_allocator *alloc, dk_error *err);
void dk_scan__stats_free(dk_scan__stats *t);
/* File i's numRecords as dk_scan__num_records() reads it (-1: none). */
int64_t dk_scan__stats_num_records(const dk_scan__stats *t, int64_t i);

/* Skipping by a table of dk_scan__stats_get(bound): the references resolved once, then each
** file evaluated without allocating. */
typedef struct dk_scan__stats_eval {
  const dk_scan__stats *t;
  const dk_expr *bound;
  const dk_allocator *alloc;
  const dk_colref **refs;            /* the references skipping reads ... */
  const struct stats_col **cols;     /* ... and their columns (NULL: none) */
  size_t n;
  int64_t i;                         /* the file being evaluated */
} dk_scan__stats_eval;
dk_status dk_scan__stats_eval_init(dk_scan__stats_eval *ev, const dk_scan__stats *t,
                                   const dk_expr *bound, const dk_allocator *alloc,
                                   dk_error *err);
void dk_scan__stats_eval_dispose(dk_scan__stats_eval *ev);
/* Whether file i can be skipped (MUST_READ when it has no stats or they do not parse). */
dk_skip_result dk_scan__stats_skip(dk_scan__stats_eval *ev, int64_t i);

/* Fills s->files / pvals / pruned and the selection statistics: pbound (over pschema, the
** partition columns) prunes, bound_full (over the whole logical schema) skips by stats,
** limit (< 0: none) stops once enough rows are known to be selected. */
dk_status dk_scan__select(dk_scan *s, const dk_expr *bound_full, const dk_expr *pbound,
                          const struct ArrowSchema *pschema, int64_t limit, dk_error *err);

/* ---- reading one file (file_reader.c) ------------------------------------------------------- */

typedef struct task_reader {
  const scan_plan *plan;
  dk_scan_stats *stats;  /* may be NULL */
  dk_storage *sto;
  const scan_task *task;
  char *full_path;       /* the file's key on sto (log/paths.h dk_log__data_key) */
  char *uri;             /* its URI (file://..., s3://...) for _metadata.file_path */
  dk_parquet_file *pf;
  dk_dv *dv;
  dk_dv *keep_dv;        /* scan_task.keep_dv loaded (or a caller's set of rows), or NULL */
  int keep_borrowed;     /* keep_dv is the caller's (dk_scan__file_open_rows): not freed here */
  int n_rg, rg;          /* row groups; next one to open */
  int64_t rg_first_row;  /* row index of the current row group's first row */
  int64_t next_row;      /* row index of the next batch's first row */
  int64_t rg_end_row;    /* row index after the current row group */
  int64_t want;          /* rows still wanted by a LIMIT when the row group opens (-1: all) */
  struct ArrowArrayStream stream; /* current row group's stream */
  int has_stream;
  int in_rg;             /* a row group is open (with or without a stream) */
  struct ArrowSchema read_schema; /* schema of the stream's batches */
  int64_t *col_src;      /* per output data column: child of the batch, or -1 */
  int64_t row_id_src, row_cv_src; /* children holding materialised row tracking, or -1 */
  dk_scalar *pscalars;   /* partition values, per partition output column */
  int64_t *idx;          /* selection scratch */
  uint8_t *keep, *mask;
  int64_t scratch_cap;
  int64_t *ranges;       /* page skipping: row ranges of row group range_rg still to read */
  int n_ranges, range_pos, range_rg;
  dk_buf *rows_out;      /* row-index mode: selected physical row indexes (int64) go here and
                          * task_next returns no batches */
  struct dk_pq__ahead *ahead; /* read-ahead slot (codec/parquet/open.h), or NULL */
  int prefetch_now;      /* open_next_rg fetches the chunks of the group it opens at once */
  int armed;             /* after opening a whole row group, read the next one ahead */
  int cur_whole;         /* the open row group is read whole (not a page range) */
} task_reader;

dk_status dk_scan__task_open(task_reader *r, const scan_plan *plan, dk_scan_stats *stats,
                             dk_storage *sto, const scan_task *t, dk_error *err);
/* Produces the next non-empty output batch of the file; out->release == NULL at its end.
** *remaining: rows still wanted (< 0: no limit); decremented. */
dk_status dk_scan__task_next(task_reader *r, struct ArrowArray *out, int64_t *remaining,
                             dk_error *err);
void dk_scan__task_close(task_reader *r);
/* Read-ahead on an object store (see stream.c): gives the open reader a slot fetching on ex,
** at most max bytes of column chunks ahead. Then dk_scan__task_prepare opens the first row
** group to read and fetches its chunks (run ahead of time, on another thread, while the
** previous file is decoded), and dk_scan__task_arm makes every row group opened from then on
** start the fetch of the next one (only when which one is next is certain: no residual filter,
** no DV difference). */
dk_status dk_scan__task_read_ahead(task_reader *r, dk__exec *ex, int64_t max,
                                   dk_error *err);
dk_status dk_scan__task_prepare(task_reader *r, dk_error *err);
void dk_scan__task_arm(task_reader *r);
/* A whole-file task of a log entry; pvals: one text per partition column of the plan. */
void dk_scan__task_from_entry(scan_task *t, const dk_file_entry *f, const char *const *pvals);

/* ---- row groups and pages (rowgroup.c) ------------------------------------------------------ */

/* Row-group skipping: the residual filter evaluated over the row group's Parquet column
** statistics (viewed as Delta-style stats so the file-skipping rules apply unchanged). */
bool dk_scan__rg_can_skip(task_reader *r, int rg, int64_t num_rows,
                          const struct ArrowSchema *fs);
/* Row ranges of row group rg still to read after page skipping (see rowgroup.c); *n_out is -1
** when nothing can be skipped, else out[0..2 * *n_out) are [start, end) pairs. */
dk_status dk_scan__page_ranges(task_reader *r, int rg, int64_t num_rows,
                               const struct ArrowSchema *fs, const char *const *names, size_t nn,
                               int64_t **out, int *n_out, int64_t *pages_skipped, dk_error *err);

/* ---- Arrow array surgery (arrays.c) --------------------------------------------------------- */
/* An all-null array of n rows of the type described by `schema` (nested types included). */
dk_status dk_scan__null_array(struct ArrowArray *out, const struct ArrowSchema *schema, int64_t n,
                              const dk_allocator *alloc, dk_error *err);

/* A new array holding rows idx[0..m) (logical indices, ascending or not) of src, whose type
** is `schema`. src is left untouched. */
dk_status dk_scan__take(struct ArrowArray *out, const struct ArrowSchema *schema,
                        const struct ArrowArray *src, const int64_t *idx, int64_t m,
                        const dk_allocator *alloc, dk_error *err);

/* Maps `src` (described by src_schema, read from a data file; consumed) onto the logical type
** `t` whose Arrow form is `tgt`: struct fields are found by name, physical name or field id
** (per `mode`), fields missing from the file become nulls, and primitive values are widened
** (integer widths, integer -> float/double/decimal, float -> double, decimal scale/precision,
** date -> timestamp_ntz, timestamp units). Other mismatches are DK_UNSUPPORTED. */
dk_status dk_scan__conform(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                           dk_column_mapping_mode mode, const struct ArrowSchema *src_schema,
                           struct ArrowArray *src, const dk_allocator *alloc, dk_error *err);

/* Keeps, of src (a struct array of schema src_schema; consumed), the fields that the struct
** schema tgt names (a subset, matched by name, recursively into nested structs): the output
** of a nested projection whose filter read more fields. Non-struct arrays are moved. */
dk_status dk_scan__project(struct ArrowArray *out, const struct ArrowSchema *tgt,
                           const struct ArrowSchema *src_schema, struct ArrowArray *src,
                           const dk_allocator *alloc, dk_error *err);

/* Finds the child of a struct schema that stores logical field f (-1 when absent). */
int64_t dk_scan__find_child(const struct ArrowSchema *src_schema, const dk_field *f,
                            dk_column_mapping_mode mode);


#endif /* DK_SCAN_INT_H */
