/*
** pageindex.c — the Parquet page index of one column chunk: OffsetIndex (page locations and
** first row of every data page) and ColumnIndex (per-page null_pages, min_values,
** max_values, null_counts), parquet-format PageIndex.md / parquet.thrift. Both structures
** are read from the file (they live outside the footer), bounds-checked and kept with the
** handle; every offset, size and row number is validated against the chunk and row group.
*/
#include <stdio.h>

#include "codec/parquet/reader.h"
#include "codec/parquet/thrift.h"
#include "dk/parquet.h"

struct dk_parquet_page_index {
  const dk_allocator *alloc;
  uint8_t *bytes;          /* OffsetIndex then ColumnIndex bytes (min/max point into them) */
  int64_t n;
  dk_parquet_page *pages;
};

void dk_parquet_page_index_free(dk_parquet_page_index *pi) {
  if (!pi) return;
  dk__free(pi->alloc, pi->bytes);
  dk__free(pi->alloc, pi->pages);
  dk__free(pi->alloc, pi);
}

int64_t dk_parquet_page_index_num_pages(const dk_parquet_page_index *pi) { return pi ? pi->n : 0; }

const dk_parquet_page *dk_parquet_page_index_page(const dk_parquet_page_index *pi, int64_t i) {
  return pi && i >= 0 && i < pi->n ? &pi->pages[i] : NULL;
}

/* OffsetIndex { 1: list<PageLocation{1: i64 offset, 2: i32 compressed_page_size,
** 3: i64 first_row_index}> page_locations, 2: optional list<i64> unencoded_byte_array_... } */
static dk_status parse_offset_index(dk_tp *t, dk_parquet_page_index *pi, dk_error *err) {
  int seen = 0;
  dk_tp_struct s;
  DK_RETURN_NOT_OK(dk_tp_struct_begin(t, &s));
  for (;;) {
    int ft;
    int16_t id;
    DK_RETURN_NOT_OK(dk_tp_field(t, &s, &ft, &id));
    if (ft == DK_TP_STOP) break;
    if (id != 1 || seen) {
      DK_RETURN_NOT_OK(dk_tp_skip(t, ft));
      continue;
    }
    int et;
    uint32_t n;
    DK_RETURN_NOT_OK(dk_tp_list(t, ft, &et, &n));
    if (et != DK_TP_STRUCT) return dk_tp_fail(t, "page_locations are not structs");
    pi->pages = dk__calloc(pi->alloc, n ? n : 1, sizeof *pi->pages);
    if (!pi->pages) return dk__error_set(err, DK_NOMEM, "out of memory (page index)");
    pi->n = n;
    for (uint32_t k = 0; k < n; k++) {
      dk_parquet_page *pg = &pi->pages[k];
      int got = 0;
      dk_tp_struct s2;
      DK_RETURN_NOT_OK(dk_tp_struct_begin(t, &s2));
      for (;;) {
        int ft2;
        int16_t id2;
        DK_RETURN_NOT_OK(dk_tp_field(t, &s2, &ft2, &id2));
        if (ft2 == DK_TP_STOP) break;
        int32_t sz;
        switch (id2) {
          case 1: DK_RETURN_NOT_OK(dk_tp_i64(t, ft2, &pg->offset)); got |= 1; break;
          case 2: DK_RETURN_NOT_OK(dk_tp_i32(t, ft2, &sz)); pg->compressed_size = sz; got |= 2; break;
          case 3: DK_RETURN_NOT_OK(dk_tp_i64(t, ft2, &pg->first_row)); got |= 4; break;
          default: DK_RETURN_NOT_OK(dk_tp_skip(t, ft2));
        }
      }
      dk_tp_struct_end(t);
      if (got != 7) return dk_tp_fail(t, "PageLocation misses a required field");
    }
    seen = 1;
  }
  dk_tp_struct_end(t);
  if (!seen) return dk_tp_fail(t, "OffsetIndex without page_locations");
  return DK_OK;
}

/* ColumnIndex { 1: list<bool> null_pages, 2: list<binary> min_values, 3: list<binary>
** max_values, 4: BoundaryOrder, 5: optional list<i64> null_counts, ... }. A list whose length
** differs from the OffsetIndex's page count makes the whole ColumnIndex unusable. */
static dk_status parse_column_index(dk_tp *t, dk_parquet_page_index *pi, int *usable) {
  int got = 0;
  *usable = 0;
  dk_tp_struct s;
  DK_RETURN_NOT_OK(dk_tp_struct_begin(t, &s));
  for (;;) {
    int ft;
    int16_t id;
    DK_RETURN_NOT_OK(dk_tp_field(t, &s, &ft, &id));
    if (ft == DK_TP_STOP) break;
    if ((id < 1 || id > 3) && id != 5) {
      DK_RETURN_NOT_OK(dk_tp_skip(t, ft));
      continue;
    }
    int et;
    uint32_t n;
    DK_RETURN_NOT_OK(dk_tp_list(t, ft, &et, &n));
    if ((int64_t)n != pi->n) {
      for (uint32_t k = 0; k < n; k++) DK_RETURN_NOT_OK(dk_tp_skip(t, et));
      got |= 64; /* mismatch: unusable */
      continue;
    }
    for (uint32_t k = 0; k < n; k++) {
      dk_parquet_page *pg = &pi->pages[k];
      if (id == 1) {
        /* compact protocol: a bool inside a list is one byte, 1 for true (2 or 0 false) */
        if (et != DK_TP_TRUE && et != DK_TP_FALSE) return dk_tp_fail(t, "null_pages are not bools");
        int64_t b;
        DK_RETURN_NOT_OK(dk_tp_int(t, DK_TP_BYTE, &b));
        pg->null_page = b == 1;
      } else if (id == 5) {
        DK_RETURN_NOT_OK(dk_tp_i64(t, et, &pg->null_count));
        if (pg->null_count < 0) return dk_tp_fail(t, "negative null count");
        pg->has_null_count = 1;
      } else {
        const uint8_t *p;
        uint32_t len;
        DK_RETURN_NOT_OK(dk_tp_binary(t, et, &p, &len));
        if (id == 2) pg->min = p, pg->min_len = len;
        else pg->max = p, pg->max_len = len;
      }
    }
    got |= 1 << id;
  }
  dk_tp_struct_end(t);
  if ((got & 64) || (got & 14) != 14) {
    for (int64_t k = 0; k < pi->n; k++) {
      pi->pages[k].has_null_count = 0;
      pi->pages[k].null_page = 0;
    }
    return DK_OK;
  }
  for (int64_t k = 0; k < pi->n; k++) pi->pages[k].has_min_max = !pi->pages[k].null_page;
  *usable = 1;
  return DK_OK;
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
  pi->bytes = dk__malloc(f->alloc, (size_t)(ol + cl));
  dk_status st = pi->bytes ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (page index)");
  const uint8_t *v = NULL;
  if (!st) st = dk_pq__file_read(f, oo, (size_t)ol, pi->bytes, &v, err);
  if (!st && v != pi->bytes) memcpy(pi->bytes, v, (size_t)ol);
  if (!st && cl) st = dk_pq__file_read(f, co, (size_t)cl, pi->bytes + ol, &v, err);
  if (!st && cl && v != pi->bytes + ol) memcpy(pi->bytes + ol, v, (size_t)cl);
  dk_tp t;
  if (!st) {
    dk_tp_init(&t, pi->bytes, (size_t)ol, oo, "offset index", err);
    st = parse_offset_index(&t, pi, err);
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
  if (!st && cl) {
    int usable;
    dk_tp_init(&t, pi->bytes + ol, (size_t)cl, co, "column index", err);
    st = parse_column_index(&t, pi, &usable);
  }
  if (st) {
    dk_parquet_page_index_free(pi);
    return st;
  }
  *out = pi;
  return DK_OK;
}
