/**
 * @file dk/scan.h
 * @brief Scans: the kernel decides which files, row groups and rows to read, and reads them
 *        into Arrow.
 *
 * Flow (the DataSource V2 shape):
 *   snapshot + options (columns, filter, limit, _metadata) --dk_scan_new--> dk_scan
 *   dk_scan: output schema, selected files (partition pruning + stats skipping), statistics,
 *            the residual filter the engine must still apply (NULL when the scan is exact)
 *   dk_scan --dk_scan_plan_splits--> splits (row-group aligned byte ranges, ~128 MB, next-fit
 *            packing); each split serializes to bytes for another process (a Spark executor)
 *   split bytes --dk_split_read--> ArrowArrayStream (executor side; needs no snapshot)
 *   dk_scan --dk_scan_read--> ArrowArrayStream of the whole scan (optionally multi-threaded)
 *
 * Output columns: the requested columns in request order (all: data columns in schema order,
 * then partition columns in partition order, as Spark orders them), then `_metadata` (a
 * non-nullable struct) when asked. A dotted request ("s.a.b") keeps only the named nested
 * fields of struct `s` (in schema order); several requests on one top-level column merge
 * into one output column at the first one's position.
 * Logical names are used throughout; column mapping (Parquet columns matched by physical
 * name, or by field_id in id mode), type widening (integer widths, integer -> decimal/double,
 * float -> double, decimal precision/scale, date -> timestamp_ntz, timestamp units),
 * deletion vectors and missing columns (schema evolution: nulls) are handled inside.
 * Variant columns come out as struct<metadata: binary, value: binary> whose field metadata
 * has ARROW:extension:name = "parquet.variant" (shredded variants are DK_UNSUPPORTED).
 *
 * Pushdown: partition predicates prune files exactly; the whole filter skips files by their
 * Delta statistics and row groups by Parquet statistics (integer, date and ASCII string
 * columns); the conjuncts that are not partition-only form the residual, applied in the
 * kernel unless keep_residual is set. LIMIT stops the reader exactly, and without a residual
 * drops files once numRecords minus DV cardinality of the earlier ones covers it.
 *
 * Thread-safety: a built dk_scan may be read from several threads (reading only updates the
 * atomic statistics counters); dk_scan_plan_splits must not race with other calls.
 */
#ifndef DK_SCAN_H
#define DK_SCAN_H

#include "dk/arrow.h"
#include "dk/common.h"
#include "dk/expr.h"
#include "dk/snapshot.h"

DK_BEGIN_DECL

typedef struct dk_scan dk_scan;

/** Bits of dk_scan_options.metadata_fields: which `_metadata` fields to produce. */
enum {
  DK_META_FILE_PATH = 1 << 0,          /**< string: full URI of the data file */
  DK_META_FILE_NAME = 1 << 1,          /**< string */
  DK_META_FILE_SIZE = 1 << 2,          /**< int64 */
  DK_META_FILE_BLOCK_START = 1 << 3,   /**< int64: split start */
  DK_META_FILE_BLOCK_LENGTH = 1 << 4,  /**< int64: split length */
  DK_META_FILE_MODIFICATION_TIME = 1 << 5, /**< timestamp[us, UTC] */
  DK_META_ROW_INDEX = 1 << 6,          /**< int64: row index within the file */
  DK_META_ROW_ID = 1 << 7,             /**< int64 (row tracking) */
  DK_META_ROW_COMMIT_VERSION = 1 << 8, /**< int64 (row tracking) */
  DK_META_ALL = 0x1ff
};

#define DK_SCAN_OPTIONS_VERSION 3
typedef struct dk_scan_options {
  unsigned version;              /**< DK_SCAN_OPTIONS_VERSION (1 to 3 are accepted) */
  const char *const *columns;    /**< logical names or dotted nested paths; NULL = all */
  size_t n_columns;              /**< entries in columns */
  const dk_expr *filter;         /**< unbound predicate over logical names; NULL = none */
  int64_t limit;                 /**< rows wanted; < 0 = no limit */
  unsigned metadata_fields;      /**< DK_META_* bits; 0 = no _metadata column */
  int keep_residual;             /**< 1: do NOT apply the residual filter in the kernel (the
                                      engine applies it); 0 (default): results are exact */
  int64_t split_target_bytes;    /**< split size target; 0 = 128 MiB */
  int64_t split_open_cost_bytes; /**< Spark's openCostInBytes; 0 = 4 MiB */
  int64_t batch_size;            /**< rows per batch; 0 = 65536 */
  int threads;                   /**< dk_scan_read reader threads (one file each at a time;
                                      batch order across files is then unspecified); 0 = 1;
                                      ignored with a LIMIT */
  /* version 2 */
  int skip_page_checksums;       /**< 1: do not verify Parquet page CRCs; 0 (default): a page
                                      whose header has a CRC is read only when it matches,
                                      else DK_CORRUPT naming the file and page (splits carry
                                      the choice) */
  /* version 3 */
  int64_t read_ahead_bytes;      /**< on an object store (reads are round trips), with
                                      threads > 1: each reader thread fetches the column
                                      chunks of the row group it decodes next, or the footer
                                      and first row group of its next file, while it decodes
                                      the current one, up to this many bytes of chunks ahead
                                      (a row group larger than that is fetched when it is
                                      decoded); memory read ahead is at most threads x 2 x
                                      this. 0 = 64 MiB; < 0 = no read-ahead */
} dk_scan_options;

/** Plans a scan: binds the filter against the snapshot's schema, prunes and skips files.
 *  @return DK_OK, DK_NOT_FOUND (unknown column), DK_INVALID (type error in the filter),
 *  DK_UNSUPPORTED, DK_CORRUPT (bad stats are ignored, not an error), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_scan_new(dk_scan **out, dk_snapshot *snap, const dk_scan_options *opts,
                             dk_error *err);
DK_API void dk_scan_free(dk_scan *scan);

/** The output schema (struct). Caller releases. */
DK_API DK_WARN_UNUSED dk_status dk_scan_schema(struct ArrowSchema *out, const dk_scan *scan, dk_error *err);

/** The residual filter (unbound; the conjuncts not decided by partition values), or NULL when
 *  the file selection decides the filter exactly (partition-only predicates). The engine must
 *  apply it when keep_residual = 1; otherwise dk already applied it. Borrowed. */
DK_API const dk_expr *dk_scan_residual(const dk_scan *scan);

/** What pushdown did; counters grow as reading proceeds (row groups, pages, rows). */
#define DK_SCAN_STATS_VERSION 1
typedef struct dk_scan_stats {
  unsigned version;                /**< set by the caller to DK_SCAN_STATS_VERSION (0 reads as
                                        1): dk fills the fields of that version and no more */
  int64_t files_total;             /**< active files in the snapshot */
  int64_t files_pruned_partition;  /**< removed by partition values */
  int64_t files_pruned_stats;      /**< removed by min/max/nullCount stats */
  int64_t files_pruned_limit;      /**< not needed because of LIMIT */
  int64_t files_selected;          /**< files to read */
  int64_t bytes_selected;          /**< their total size */
  int64_t rows_estimated;          /**< numRecords minus DV cardinality of selected files (-1 unknown) */
  int64_t row_groups_total;        /**< row groups seen by readers */
  int64_t row_groups_skipped;      /**< skipped by Parquet statistics */
  int64_t pages_skipped;           /**< skipped by the column index */
  int64_t rows_decoded;            /**< rows decoded */
  int64_t rows_deleted;            /**< removed by deletion vectors */
  int64_t rows_filtered;           /**< removed by the residual filter */
  int64_t rows_returned;           /**< rows handed out */
} dk_scan_stats;

DK_API void dk_scan_stats_get(dk_scan_stats *out, const dk_scan *scan);

/** One selected file, for `dk files --where` and engines that read files themselves. */
typedef struct dk_scan_file {
  dk_file_entry entry;          /**< borrowed from the snapshot; no stats (as dk_snapshot_file:
                                     read them with a dk_file_iter at entry.index) */
  int64_t num_records;          /**< from stats; -1 unknown */
} dk_scan_file;

DK_API int64_t dk_scan_num_files(const dk_scan *scan);
DK_API DK_WARN_UNUSED dk_status dk_scan_file_get(dk_scan_file *out, const dk_scan *scan, int64_t i,
                                  dk_error *err);

/** Why a file was left out of the scan. */
typedef enum dk_prune_reason {
  DK_PRUNED_PARTITION = 1, /**< its partition values fail the filter (exact) */
  DK_PRUNED_STATS = 2,     /**< its min/max/nullCount statistics show no row can match */
  DK_PRUNED_LIMIT = 3      /**< earlier files already hold LIMIT rows */
} dk_prune_reason;

/** Files left out of the scan (for `dk files --where`), in snapshot order. */
DK_API int64_t dk_scan_num_pruned_files(const dk_scan *scan);
DK_API DK_WARN_UNUSED dk_status dk_scan_pruned_file_get(dk_file_entry *out, dk_prune_reason *reason,
                                         const dk_scan *scan, int64_t i, dk_error *err);

/** Plans splits: each file is cut into byte ranges of at most split_target_bytes (a reader
 *  takes the row groups whose first page starts inside its range, so ranges need no footer
 *  reads and files with deletion vectors stay splittable), and the ranges are packed next-fit
 *  in file order as Spark's FilePartition does (a new split when the current one plus the
 *  range would exceed the target; each range also counts split_open_cost_bytes). Afterwards
 *  dk_scan_num_splits/dk_scan_split_serialize are valid. */
DK_API DK_WARN_UNUSED dk_status dk_scan_plan_splits(dk_scan *scan, dk_error *err);
DK_API int64_t dk_scan_num_splits(const dk_scan *scan);
/** Serialized split i (self-contained, versioned binary: table root, schema, column request,
 *  per file its path, byte range, partition values, DV descriptor and row-tracking values,
 *  the residual filter when the kernel applies it, the LIMIT as a per-split cap). `*out` is
 *  allocated; free with dk_free (dk/common.h). */
DK_API DK_WARN_UNUSED dk_status dk_scan_split_serialize(uint8_t **out, size_t *len, const dk_scan *scan,
                                         int64_t i, dk_error *err);
/** Reads one serialized split as a stream of batches in the scan's output schema, through
 *  the built-in local backend (dk_split_read_v2 with only `alloc` set). Malformed bytes are
 *  DK_CORRUPT (naming the byte offset). */
DK_API DK_WARN_UNUSED dk_status dk_split_read(struct ArrowArrayStream *out, const uint8_t *split, size_t len,
                               const dk_allocator *alloc, dk_error *err);

#define DK_SPLIT_READ_OPTIONS_VERSION 1
typedef struct dk_split_read_options {
  unsigned version;          /**< DK_SPLIT_READ_OPTIONS_VERSION */
  const dk_allocator *alloc; /**< NULL = libc */
  dk_storage *storage;       /**< the backend the split's files are read through (borrowed; it
                                  must outlive the stream), as dk_table_options.storage was
                                  for the table; NULL = the built-in local backend */
} dk_split_read_options;

/** dk_split_read with options. A split of a table whose root is a URI of another scheme
 *  (s3://...) needs opts->storage (else DK_UNSUPPORTED naming the scheme).
 *  @return DK_OK; DK_CORRUPT (malformed bytes); DK_UNSUPPORTED; DK_INVALID (a backend of
 *  version 0); DK_NOMEM. Reading fails as dk_scan_read does. */
DK_API DK_WARN_UNUSED dk_status dk_split_read_v2(struct ArrowArrayStream *out, const uint8_t *split,
                                  size_t len, const dk_split_read_options *opts,
                                  dk_error *err);

/** Reads the whole scan. The stream holds a reference to the scan. */
DK_API DK_WARN_UNUSED dk_status dk_scan_read(struct ArrowArrayStream *out, dk_scan *scan, dk_error *err);

DK_END_DECL

#endif /* DK_SCAN_H */
