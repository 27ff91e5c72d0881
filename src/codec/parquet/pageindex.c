/*
** pageindex.c — the Parquet page index of one column chunk: OffsetIndex (page locations and
** first row of every data page) and ColumnIndex (per-page null_pages, min_values,
** max_values, null_counts), parquet-format PageIndex.md / parquet.thrift, parsed by
** metadata.c (dk_pq__parse_offset_index / dk_pq__parse_column_index). Both structures
** are read from the file (they live outside the footer), bounds-checked and kept with the
** handle; every offset, size and row number is validated against the chunk and row group.
*/
#include <stdio.h>

#include "codec/parquet/reader.h"
#include "dk/parquet.h"

struct dk_parquet_page_index {
  const dk_allocator *alloc;
  uint8_t *bytes;          /* OffsetIndex then ColumnIndex bytes (min/max point into them) */
  dk_arena ar;             /* parsed lists */
  int64_t n;
  dk_parquet_page *pages;
};

void dk_parquet_page_index_free(dk_parquet_page_index *pi) {
  if (!pi) return;
  dk__arena_dispose(&pi->ar);
  dk__free(pi->alloc, pi->bytes);
  dk__free(pi->alloc, pi->pages);
  dk__free(pi->alloc, pi);
}

int64_t dk_parquet_page_index_num_pages(const dk_parquet_page_index *pi) { return pi ? pi->n : 0; }

const dk_parquet_page *dk_parquet_page_index_page(const dk_parquet_page_index *pi, int64_t i) {
  return pi && i >= 0 && i < pi->n ? &pi->pages[i] : NULL;
}

dk_status dk_parquet_page_index_read(dk_parquet_page_index **out, const dk_parquet_file *f,
                                     int row_group, int column, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(row_group < 0 || row_group >= f->meta.n_row_groups || column < 0 ||
               column >= f->n_leaves, DK_INVALID, err, "%s: row group %d / column %d out of range",
               f->path, row_group, column);
  const pq_row_group *rg = &f->meta.row_groups[row_group];
  const pq_column_meta *cm = &rg->columns[column];
  if (cm->offset_index_offset < 0 || cm->offset_index_length <= 0)
    return dk__error_set(err, DK_NOT_FOUND, "%s: column chunk %d of row group %d has no page index",
                         f->path, column, row_group);
  int64_t oo = cm->offset_index_offset, ol = cm->offset_index_length;
  int has_ci = cm->column_index_offset >= 0 && cm->column_index_length > 0;
  int64_t co = has_ci ? cm->column_index_offset : 0, cl = has_ci ? cm->column_index_length : 0;
  DK_RETURN_IF(oo > f->size || ol > f->size - oo || co > f->size || cl > f->size - co, DK_CORRUPT,
               err, "corrupt Parquet file %s at offset %lld: page index outside the file", f->path,
               (long long)(oo > f->size || ol > f->size - oo ? oo : co));
  dk_parquet_page_index *pi = dk__calloc(f->alloc, 1, sizeof *pi);
  DK_RETURN_IF(!pi, DK_NOMEM, err, "out of memory (page index)");
  pi->alloc = f->alloc;
  dk__arena_init(&pi->ar, f->alloc, 0);
  pi->bytes = dk__malloc(f->alloc, (size_t)(ol + cl));
  dk_status st = pi->bytes ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (page index)");
  /* both structures in one batched read (an object store issues them together) */
  dk_byte_range r[2] = {{oo, (size_t)ol, pi->bytes}, {co, (size_t)cl, pi->bytes + ol}};
  if (!st) st = dk_io__source_read_ranges((dk__source *)&f->src, r, cl ? 2 : 1, err);
  /* the parsers of metadata.c (also behind `dk parquet meta`) */
  pq_page_location *loc = NULL;
  int nloc = 0;
  if (!st) st = dk_pq__parse_offset_index(&loc, &nloc, &pi->ar, pi->bytes, (size_t)ol, oo, err);
  if (st == DK_CORRUPT) dk__error_prefix(err, "%s", f->path);
  if (!st) {
    pi->n = nloc;
    pi->pages = dk__calloc(f->alloc, nloc ? (size_t)nloc : 1, sizeof *pi->pages);
    if (!pi->pages) st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
  }
  for (int k = 0; !st && k < nloc; k++) {
    pi->pages[k].offset = loc[k].offset;
    pi->pages[k].compressed_size = loc[k].compressed_size;
    pi->pages[k].first_row = loc[k].first_row;
  }
  /* page locations: inside the chunk, ascending; rows start at 0, strictly ascending */
  int64_t cstart = cm->data_page_offset, chunk_start = cm->data_page_offset;
  if (cm->dictionary_page_offset > 0 && cm->dictionary_page_offset < chunk_start)
    chunk_start = cm->dictionary_page_offset;
  int64_t cend = chunk_start + cm->total_compressed;
  for (int64_t k = 0; !st && k < pi->n; k++) {
    const dk_parquet_page *pg = &pi->pages[k];
    int bad = pg->offset < cstart || pg->offset >= cend || pg->compressed_size <= 0 ||
              pg->first_row < 0 || pg->first_row >= rg->num_rows ||
              (k == 0 ? pg->first_row != 0
                      : pg->first_row <= pi->pages[k - 1].first_row ||
                            pg->offset <= pi->pages[k - 1].offset);
    if (bad)
      st = dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet file %s at offset %lld: page location %lld of column "
                         "chunk %d (row group %d) is out of order or outside the chunk",
                         f->path, (long long)oo, (long long)k, column, row_group);
  }
  if (!st && pi->n == 0)
    st = dk__error_set(err, DK_CORRUPT, "corrupt Parquet file %s at offset %lld: empty offset index",
                       f->path, (long long)oo);
  for (int64_t k = 0; !st && k < pi->n; k++)
    pi->pages[k].num_rows = (k + 1 < pi->n ? pi->pages[k + 1].first_row : rg->num_rows) -
                            pi->pages[k].first_row;
  pq_column_index ci;
  if (!st && cl) st = dk_pq__parse_column_index(&ci, &pi->ar, pi->bytes + ol, (size_t)cl, co, err);
  if (!st && cl && ci.n_pages == pi->n) { /* else the ColumnIndex is not used */
    for (int64_t k = 0; k < pi->n; k++) {
      dk_parquet_page *pg = &pi->pages[k];
      pg->null_page = ci.null_pages[k];
      pg->has_min_max = !pg->null_page;
      pg->min = ci.mins[k], pg->min_len = ci.min_lens[k];
      pg->max = ci.maxs[k], pg->max_len = ci.max_lens[k];
      if (ci.null_counts && ci.null_counts[k] >= 0) {
        pg->has_null_count = 1;
        pg->null_count = ci.null_counts[k];
      }
    }
  }
  if (st == DK_CORRUPT && cl && err && !strstr(err->message, f->path))
    dk__error_prefix(err, "%s", f->path);
  if (st) {
    dk_parquet_page_index_free(pi);
    return st;
  }
  *out = pi;
  return DK_OK;
}
