/*
** pages.h — page- and leaf-level access to columns (library-internal, not API):
** - walk the pages of a flat BYTE_ARRAY column chunk as stored (compressed) and decode one
**   such page later, on demand. Used by the log to keep a checkpoint's add.stats pages
**   compressed in memory;
** - read one leaf's levels and dense values batch by batch without assembling Arrow arrays.
**   Used by the log to apply a checkpoint's add and remove rows straight from the columns.
*/
#ifndef DK_PARQUET_PAGES_H
#define DK_PARQUET_PAGES_H

#include "dk/parquet.h"
#include "util/util.h"

/* One page as stored in the file (header parsed, body still compressed). */
typedef struct dk_pq__page {
  const uint8_t *data;       /* body bytes (v2: levels, then the maybe-compressed values) */
  uint32_t len;              /* compressed_size */
  int32_t usize;             /* uncompressed_size of the header */
  int32_t num_values;        /* levels (= rows: the column is flat) */
  int32_t def_bytes;         /* v2: def level bytes before the values */
  uint8_t codec, v2, is_compressed, is_dict, encoding, def_encoding;
  int16_t max_def;
  int64_t offset;            /* file offset of the page header (for messages) */
} dk_pq__page;

/* Called for each dictionary or data page of the column, in file order; first_row is the
** row (over the whole file) of the page's first value (dictionary pages: of the chunk). */
typedef dk_status (*dk_pq__page_fn)(void *ctx, const dk_pq__page *pg, int64_t first_row,
                                    dk_error *err);

/* Walks the pages of the leaf at `dotted_path` in every row group. The page bytes handed to
** fn are valid only during the call. DK_UNSUPPORTED (before any call) when the leaf is not
** a flat (no repetition) BYTE_ARRAY column, and (at the page) for
** an encoding other than PLAIN or dictionary, v1 def levels other than RLE, or a repetition
** level: the caller then reads the column the ordinary way. */
dk_status dk_pq__walk_pages(dk_parquet_file *f, const char *dotted_path, dk_pq__page_fn fn,
                            void *ctx, dk_error *err);

/* Decodes a data page from dk_pq__walk_pages (and its chunk's dictionary page, NULL when
** the page is PLAIN): for each of its num_values rows, offs[row] is the offset in `text` of
** the row's value followed by a NUL, or UINT32_MAX when the value is null. `text` is
** cleared first; `scratch` is working memory. Malformed pages are DK_CORRUPT. */
dk_status dk_pq__page_decode_text(const dk_pq__page *pg, const dk_pq__page *dict,
                                  dk_buf *scratch, dk_buf *text, uint32_t *offs, dk_error *err);

/* ---- leaf reader ----------------------------------------------------------------------- */

typedef struct dk_pq__leaf dk_pq__leaf;

/* One batch of a leaf: Dremel levels and the dense (non-null) physical values. */
typedef struct dk_pq__leaf_data {
  const uint32_t *def;  /* n_levels levels, or NULL when every level is max_def */
  const uint32_t *rep;  /* n_levels levels, or NULL when max_rep is 0 */
  int64_t n_levels, n_dense;
  const uint8_t *vals;  /* fixed width: n_dense values (INT32/INT64 little-endian, bool: 1 byte) */
  const int32_t *offs;  /* BYTE_ARRAY: n_dense + 1 offsets into data */
  const uint8_t *data;
} dk_pq__leaf_data;

/* Opens the leaf at `dotted_path` (Arrow or Parquet path) for reading every row group in
** order. DK_NOT_FOUND when the file has no such leaf. */
dk_status dk_pq__leaf_open(dk_pq__leaf **out, dk_parquet_file *f, const char *dotted_path,
                           dk_error *err);
/* Opens the key and value leaves of the map field at `dotted_path` (struct field names from
** the top level, e.g. "add.partitionValues"), found by position: Parquet's backward-
** compatibility rules let the repeated group and its two fields have other names than
** key_value / key / value. DK_NOT_FOUND when there is no such field; DK_UNSUPPORTED when it
** is not a map whose key and value are leaves. */
dk_status dk_pq__leaf_open_map(dk_pq__leaf **key, dk_pq__leaf **value, dk_parquet_file *f,
                               const char *dotted_path, dk_error *err);
/* Opens the first leaf under the top-level field `top`; DK_NOT_FOUND when there is none. */
dk_status dk_pq__leaf_open_first(dk_pq__leaf **out, dk_parquet_file *f, const char *top,
                                 dk_error *err);
void dk_pq__leaf_free(dk_pq__leaf *l);
/* The leaf's physical type (PQ_* of metadata.h) and its maximum levels. */
int dk_pq__leaf_type(const dk_pq__leaf *l);
int dk_pq__leaf_max_def(const dk_pq__leaf *l);
int dk_pq__leaf_max_rep(const dk_pq__leaf *l);
/* The definition level at which the leaf's ancestor `depth` levels below the root (0: the
** top-level field) is non-null; -1 when the leaf is not that deep. */
int dk_pq__leaf_def_at(const dk_pq__leaf *l, int depth);
/* Decodes the next rows: at most `rows`, never past the end of the current row group, so
** leaves of one file read with the same `rows` stay aligned. *got is the number of rows
** (0 at the end of the file). What `out` points to stays valid through the next call (two
** batches alternate), so one thread may decode a batch while another uses the previous one. */
dk_status dk_pq__leaf_read(dk_pq__leaf *l, int64_t rows, dk_pq__leaf_data *out, int64_t *got,
                           dk_error *err);

#endif /* DK_PARQUET_PAGES_H */
