/**
 * @file dk/parquet.h
 * @brief dk's native Parquet reader and writer: open a file, inspect its metadata, read it as
 *        Arrow; write Arrow batches to a new file with statistics and a page index.
 *
 * Thread-safety: a dk_parquet_file is immutable after open and may be read from several
 * threads at once; each stream is single-threaded. Streams keep their file alive (the file
 * is reference-counted), so dk_parquet_file_free may be called before a stream is released.
 */
#ifndef DK_PARQUET_H
#define DK_PARQUET_H

#include "dk/arrow.h"
#include "dk/common.h"
#include "dk/sys/storage.h"

DK_BEGIN_DECL

typedef struct dk_parquet_file dk_parquet_file;

#define DK_PARQUET_OPEN_OPTIONS_VERSION 2
typedef struct dk_parquet_open_options {
  unsigned version;            /**< DK_PARQUET_OPEN_OPTIONS_VERSION (1 and 2 are accepted) */
  int use_mmap;                /**< 1 = mmap the file, 0 = pread (default) */
  const dk_allocator *alloc;   /**< NULL = libc */
  int64_t file_size;           /**< if > 0, trusted size (saves a stat) */
  /* version 2 */
  int skip_page_checksums;     /**< 1: do not verify page CRCs; 0 (default): a page whose
                                    header has a CRC (parquet.thrift PageHeader.crc; Spark
                                    writes them) is read only when it matches, else
                                    DK_CORRUPT naming the file and the page's offset */
} dk_parquet_open_options;

/** Opens a local file and parses its footer. NULL opts = defaults.
 *  @return DK_OK, DK_NOT_FOUND, DK_IO, DK_CORRUPT (message names file and offset), DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_parquet_open(dk_parquet_file **out, const char *path,
                                 const dk_parquet_open_options *opts, dk_error *err);
/** Releases the caller's reference; accepts NULL. */
DK_API void dk_parquet_file_free(dk_parquet_file *f);

DK_API int64_t dk_parquet_num_rows(const dk_parquet_file *f);
DK_API int dk_parquet_num_row_groups(const dk_parquet_file *f);
/** Number of leaf columns. */
DK_API int dk_parquet_num_columns(const dk_parquet_file *f);

/** The file's schema as Arrow (caller releases). Logical types map as documented in
 *  docs/parquet.md: STRING/ENUM/JSON -> utf8, DECIMAL -> decimal128(p,s), DATE -> date32,
 *  TIMESTAMP/INT96 -> timestamp[us] (tz "UTC" when adjusted to UTC; NANOS keep timestamp[ns]),
 *  LIST -> list, MAP -> map, groups -> struct; Parquet field_id is exported as the field
 *  metadata key "PARQUET:field_id". */
DK_API DK_WARN_UNUSED dk_status dk_parquet_schema(struct ArrowSchema *out, const dk_parquet_file *f,
                                   dk_error *err);

/** Row-group facts (the split rule uses `start`). */
typedef struct dk_parquet_row_group_info {
  int64_t num_rows;            /**< rows in the group */
  int64_t start;               /**< byte offset of its first page (dictionary or data) */
  int64_t compressed_size;     /**< bytes on disk of all its column chunks */
  int64_t uncompressed_size;   /**< total_byte_size */
  int64_t first_row;           /**< index of its first row in the file */
} dk_parquet_row_group_info;

DK_API DK_WARN_UNUSED dk_status dk_parquet_row_group(dk_parquet_row_group_info *out, const dk_parquet_file *f,
                                      int row_group, dk_error *err);

/** Parquet physical types (parquet-format Type), as the footer numbers them. */
typedef enum dk_parquet_physical_type {
  DK_PARQUET_BOOLEAN = 0,
  DK_PARQUET_INT32 = 1,
  DK_PARQUET_INT64 = 2,
  DK_PARQUET_INT96 = 3,
  DK_PARQUET_FLOAT = 4,
  DK_PARQUET_DOUBLE = 5,
  DK_PARQUET_BYTE_ARRAY = 6,
  DK_PARQUET_FIXED_LEN_BYTE_ARRAY = 7
} dk_parquet_physical_type;

/** Column-chunk statistics of one leaf column in one row group (min/max as the physical
 *  type's plain bytes; absent -> has_* = 0). */
#define DK_PARQUET_COLUMN_STATS_VERSION 1
typedef struct dk_parquet_column_stats {
  unsigned version;            /**< set by the caller to DK_PARQUET_COLUMN_STATS_VERSION (0 reads
                                    as 1): dk fills the fields of that version and no more */
  int has_min_max;             /**< min/max present and exact enough to skip with */
  int has_null_count;          /**< null_count present */
  int64_t null_count;          /**< nulls in the chunk */
  int64_t num_values;          /**< values incl. nulls */
  const void *min;             /**< physical-type bytes of the min (borrowed from the file) */
  size_t min_len;              /**< bytes in min */
  const void *max;             /**< physical-type bytes of the max */
  size_t max_len;              /**< bytes in max */
  dk_parquet_physical_type physical_type; /**< the column's physical type */
  int timestamp_unit;          /**< INT64 TIMESTAMP columns: unit of min/max (1 millis, 2 micros,
                                    3 nanos); 0 for every other column (INT96 included) */
} dk_parquet_column_stats;

/** Leaf column index by dotted path ("a.b.c", list/map inner names omitted as pyarrow does,
 *  e.g. "l.element" or "m.key"/"m.value"), or -1. */
DK_API int dk_parquet_column_index(const dk_parquet_file *f, const char *dotted_path);
DK_API DK_WARN_UNUSED dk_status dk_parquet_column_stats_get(dk_parquet_column_stats *out,
                                             const dk_parquet_file *f, int row_group,
                                             int column, dk_error *err);

/** Writes a human-readable JSON description of the footer (row groups, columns, encodings,
 *  codecs, sizes, statistics) used by `dk parquet meta`. `*out` is malloc'd; free with
 *  dk_free. */
DK_API DK_WARN_UNUSED dk_status dk_parquet_meta_json(char **out, const dk_parquet_file *f, dk_error *err);

#define DK_PARQUET_READ_OPTIONS_VERSION 1
typedef struct dk_parquet_read_options {
  unsigned version;              /**< DK_PARQUET_READ_OPTIONS_VERSION */
  const char *const *columns;    /**< top-level names or dotted nested paths; NULL = all */
  size_t n_columns;              /**< entries in columns */
  const int32_t *field_ids;      /**< select top-level/nested fields by Parquet field_id instead */
  size_t n_field_ids;            /**< entries in field_ids */
  const int *row_groups;         /**< row groups to read, ascending; NULL = all */
  size_t n_row_groups;           /**< entries in row_groups */
  int64_t range_start;           /**< with range_end > 0: only row groups whose start lies in */
  int64_t range_end;             /**<   [range_start, range_end) (the split rule) */
  int64_t batch_size;            /**< rows per batch; 0 = 65536 */
  int threads;                   /**< decode threads; 0/1 = single-threaded */
  int64_t row_start;             /**< with row_end > 0 and exactly one row group selected: */
  int64_t row_end;               /**<   read only its rows [row_start, row_end); row_start > 0
                                      needs a page index (else DK_NOT_FOUND): each leaf starts
                                      at its page holding row_start (earlier data pages are not
                                      read; that page's rows before row_start are decoded and
                                      dropped) — page skipping */
} dk_parquet_read_options;

/* ---- page index (OffsetIndex + ColumnIndex) ---------------------------------------------- */

/** One data page of a column chunk per the file's page index. */
typedef struct dk_parquet_page {
  int64_t offset;              /**< file offset of the page header */
  int64_t compressed_size;     /**< bytes of the page (header included) */
  int64_t first_row;           /**< first row of the page within its row group */
  int64_t num_rows;            /**< rows of the page (to the next page or the group's end) */
  int has_min_max;             /**< ColumnIndex min/max present (not for null pages) */
  int null_page;               /**< ColumnIndex: every value of the page is null */
  int has_null_count;          /**< ColumnIndex null_counts present */
  int64_t null_count;
  const void *min, *max;       /**< physical-type bytes, owned by the page index */
  size_t min_len, max_len;
} dk_parquet_page;

/** The page index of one column chunk (opaque). */
typedef struct dk_parquet_page_index dk_parquet_page_index;

/** Reads and validates the page index of leaf `column` in `row_group`: DK_NOT_FOUND when the
 *  chunk has no OffsetIndex (a missing or inconsistent ColumnIndex only leaves has_min_max
 *  0), DK_CORRUPT (naming the file offset) when it is malformed or disagrees with the chunk. */
DK_API DK_WARN_UNUSED dk_status dk_parquet_page_index_read(dk_parquet_page_index **out,
                                            const dk_parquet_file *f, int row_group, int column,
                                            dk_error *err);
DK_API int64_t dk_parquet_page_index_num_pages(const dk_parquet_page_index *pi);
/** Page i (borrowed; NULL when out of range). */
DK_API const dk_parquet_page *dk_parquet_page_index_page(const dk_parquet_page_index *pi,
                                                         int64_t i);
/** Accepts NULL. */
DK_API void dk_parquet_page_index_free(dk_parquet_page_index *pi);

/** Reads the selected rows/columns as a stream of struct batches whose children are the
 *  selected columns (in the order requested, or file order for NULL). Missing requested
 *  columns are DK_NOT_FOUND. The stream holds a reference to the file. */
DK_API DK_WARN_UNUSED dk_status dk_parquet_read(struct ArrowArrayStream *out, dk_parquet_file *f,
                                 const dk_parquet_read_options *opts, dk_error *err);


/* ---- writer -------------------------------------------------------------------------------- */

/** A Parquet file being written (opaque). Thread-safety: one thread at a time. */
typedef struct dk_parquet_writer dk_parquet_writer;

/** Compression of the written pages. The zero value is Snappy (Spark's default). */
typedef enum dk_parquet_codec {
  DK_PARQUET_SNAPPY = 0,
  DK_PARQUET_UNCOMPRESSED = 1,
  DK_PARQUET_ZSTD = 2,
  DK_PARQUET_GZIP = 3,
  DK_PARQUET_LZ4_RAW = 4
} dk_parquet_codec;

#define DK_PARQUET_WRITE_OPTIONS_VERSION 1
/** Writer options; a zeroed struct (with version set) or NULL means every default. */
typedef struct dk_parquet_write_options {
  unsigned version;              /**< DK_PARQUET_WRITE_OPTIONS_VERSION */
  dk_parquet_codec codec;        /**< page compression (default Snappy) */
  int compression_level;         /**< 0 = the codec's default (zstd 1, gzip 6) */
  int64_t row_group_bytes;       /**< target bytes buffered per row group; 0 = 128 MiB */
  int64_t row_group_rows;        /**< at most this many rows per row group; 0 = no limit */
  int64_t page_bytes;            /**< target encoded bytes per data page; 0 = 1 MiB */
  int64_t page_rows;             /**< at most this many rows per data page; 0 = 20000 */
  int64_t dictionary_bytes;      /**< dictionary page limit, then PLAIN; 0 = 1 MiB */
  int no_dictionary;             /**< 1 = PLAIN only */
  int data_page_version;         /**< 0 or 1 = DataPage (v1, Spark's default); 2 = DataPageV2 */
  int no_statistics;             /**< 1 = no column statistics (and no ColumnIndex) */
  int no_page_index;             /**< 1 = no ColumnIndex/OffsetIndex */
  int threads;                   /**< encoding threads; 0/1 = the calling thread only */
  const char *const *metadata_keys;   /**< footer key_value_metadata (copied at open) */
  const char *const *metadata_values; /**< values (entries may be NULL) */
  size_t n_metadata;             /**< pairs */
  const char *created_by;        /**< NULL = "dk version X.Y.Z" */
  const dk_allocator *alloc;     /**< NULL = libc */
} dk_parquet_write_options;

/** Starts writing `path` on `storage` (NULL = the local filesystem) with the columns of
 *  `schema`, an Arrow struct schema (not consumed; its field names are the file's column
 *  names, field metadata "PARQUET:field_id" gives Parquet field ids). Nothing is visible
 *  under `path` until dk_parquet_writer_close succeeds.
 *  @return DK_OK, DK_UNSUPPORTED (an Arrow type Delta cannot store, naming the column),
 *          DK_INVALID (bad options or schema), DK_IO, DK_NOMEM. */
DK_API dk_status dk_parquet_writer_open(dk_parquet_writer **out, dk_storage *storage,
                                        const char *path, const struct ArrowSchema *schema,
                                        const dk_parquet_write_options *opts, dk_error *err);
/** Appends one batch: a struct array laid out as the writer's schema (not consumed; the
 *  caller still releases it). A batch that does not match the schema, or has a null in a
 *  non-nullable column, is DK_INVALID; after any failure the writer only accepts free. */
DK_API dk_status dk_parquet_writer_write(dk_parquet_writer *w, const struct ArrowArray *batch,
                                         dk_error *err);
/** Appends every batch of `stream` (read to its end, not released), whose schema must have
 *  the writer's column names and types. */
DK_API dk_status dk_parquet_writer_write_stream(dk_parquet_writer *w,
                                                struct ArrowArrayStream *stream, dk_error *err);

#define DK_PARQUET_WRITE_RESULT_VERSION 1
/** What close reports. */
typedef struct dk_parquet_write_result {
  unsigned version;              /**< set by the caller: DK_PARQUET_WRITE_RESULT_VERSION */
  int64_t num_rows;              /**< rows written */
  int64_t file_size;             /**< bytes of the file */
  int num_row_groups;            /**< row groups */
} dk_parquet_write_result;

/** Flushes the last row group, writes the page indexes and the footer, and publishes the file
 *  (the storage writer's commit). `out` may be NULL. On failure nothing is left under the
 *  file's name. The writer stays valid for the statistics calls below until freed. */
DK_API dk_status dk_parquet_writer_close(dk_parquet_writer *w, dk_parquet_write_result *out,
                                         dk_error *err);
/** Frees the writer; one that was not closed is aborted (nothing published). Accepts NULL. */
DK_API void dk_parquet_writer_free(dk_parquet_writer *w);

/** Statistics of one field of the written schema, in pre-order (a struct before its
 *  fields; lists and maps before their element / entries, key, value). Complete after close. */
typedef struct dk_parquet_field_stats {
  const char *name;              /**< the Arrow field name */
  const char *format;            /**< its Arrow format */
  int parent;                    /**< index of the enclosing field, -1 for a top-level column */
  int n_children;                /**< fields directly below */
  int in_list;                   /**< inside a list or map element (null_rows is -1) */
  int is_variant;                /**< a struct<metadata, value> tagged parquet.variant */
  int64_t null_rows;             /**< rows where this field or an enclosing one is null */
  int is_leaf;                   /**< a Parquet leaf column (the fields below are for leaves) */
  int physical_type;             /**< Parquet physical type (as dk_parquet_column_stats) */
  int32_t scale;                 /**< decimal scale (decimals only) */
  int64_t null_count;            /**< Parquet null_count: levels without a value */
  int64_t value_count;           /**< non-null values */
  int64_t nan_count;             /**< FLOAT/DOUBLE NaN values (excluded from min/max) */
  int has_min_max;               /**< some non-null, non-NaN value exists */
  const void *min, *max;         /**< PLAIN physical bytes, exact (untruncated); INT64
                                      timestamps are microseconds, decimal FLBA big-endian */
  size_t min_len, max_len;
} dk_parquet_field_stats;

DK_API int dk_parquet_writer_num_fields(const dk_parquet_writer *w);
/** Field i (0 <= i < dk_parquet_writer_num_fields); pointers live as long as the writer. */
DK_API dk_status dk_parquet_writer_field_stats(dk_parquet_field_stats *out,
                                               const dk_parquet_writer *w, int i, dk_error *err);

#define DK_DELTA_STATS_OPTIONS_VERSION 1
/** How the Delta statistics are chosen (the table's properties, as text; NULL = unset). */
typedef struct dk_delta_stats_options {
  unsigned version;                /**< DK_DELTA_STATS_OPTIONS_VERSION */
  const char *num_indexed_cols;    /**< delta.dataSkippingNumIndexedCols (default "32", -1 all) */
  const char *stats_columns;       /**< delta.dataSkippingStatsColumns: comma list of (dotted)
                                        column names; wins over num_indexed_cols */
  int string_prefix_length;        /**< delta.dataSkippingStringPrefixLength; 0 = 32 */
  int timestamp_max_ceil;          /**< 1: a timestamp max with sub-millisecond digits is rounded
                                        up to the next millisecond (a true upper bound); 0: cut
                                        to milliseconds as delta-spark does (its readers add 1 ms) */
  int tight_bounds;                /**< 1: add "tightBounds":true (tables with deletion vectors) */
} dk_delta_stats_options;

/** The Delta `add.stats` JSON of the written file (after close): numRecords, minValues,
 *  maxValues and nullCount nested like the schema, keyed by the file's column names (which
 *  are the Delta physical names), as delta-spark's StatisticsCollection computes them.
 *  `*out` is allocated; free with dk_free.
 *  @return DK_OK, DK_INVALID (writer not closed, bad options or an unknown stats column). */
DK_API dk_status dk_parquet_writer_delta_stats(char **out, const dk_parquet_writer *w,
                                               const dk_delta_stats_options *opts,
                                               dk_error *err);

DK_END_DECL

#endif /* DK_PARQUET_H */
