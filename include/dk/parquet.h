/**
 * @file dk/parquet.h
 * @brief dk's native Parquet reader: open a file, inspect its metadata, read it as Arrow.
 *
 * Thread-safety: a dk_parquet_file is immutable after open and may be read from several
 * threads at once; each stream is single-threaded. Streams keep their file alive (the file
 * is reference-counted), so dk_parquet_file_free may be called before a stream is released.
 */
#ifndef DK_PARQUET_H
#define DK_PARQUET_H

#include "dk/arrow.h"
#include "dk/common.h"

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

DK_END_DECL

#endif /* DK_PARQUET_H */
