/*
** pages.h — page-level access to one flat BYTE_ARRAY column (library-internal, not API):
** walk the pages of a column chunk as stored (compressed) and decode one such page later,
** on demand. Used by the log to keep a checkpoint's add.stats pages compressed in memory.
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

#endif /* DK_PARQUET_PAGES_H */
