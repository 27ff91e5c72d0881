/*
** parquet_fuzzer.c — libFuzzer target over the Parquet reader: the input is opened through a
** byte source twice — over memory (reads are views, as with a mapped file) and over a
** dk_storage that cannot map (reads are copies, batched per row group, as from an object
** store) — its metadata rendered, and every column read with a small batch size. Any crash,
** hang or sanitizer report is a bug; errors are fine.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arrow/array.h"
#include "blob_storage.h"
#include "codec/parquet/open.h"
#include "dk/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  blob_storage bs;
  blob_storage_init(&bs, data, size);
  for (int mode = 0; mode < 2; mode++) {
    dk_error err;
    dk_error_init(&err);
    /* page CRCs off: mutated pages must reach the decoders, not stop at the checksum */
    dk_pq__open_opts oo = {.skip_page_crc = 1};
    dk_parquet_file *f = NULL;
    dk__source src;
    if (mode == 0) {
      dk_io__source_mem(&src, data, size, "fuzz.parquet");
      if (dk_pq__open_source(&f, &src, &oo, &err) != DK_OK) break;
    } else if (dk_pq__open_storage(&f, &bs.base, "fuzz.parquet", &oo, &err) != DK_OK) {
      break;
    }
    char *js = NULL;
    if (dk_parquet_meta_json(&js, f, &err) == DK_OK) dk_free(js);
    struct ArrowSchema sc;
    if (dk_parquet_schema(&sc, f, &err) == DK_OK) sc.release(&sc);
    int64_t second_page = -1;
    for (int c = 0; c < dk_parquet_num_columns(f) && c < 4; c++) {
      dk_parquet_column_stats cs;
      if (dk_parquet_column_stats_get(&cs, f, 0, c, &err) != DK_OK) dk_error_init(&err);
      dk_parquet_page_index *pi = NULL;
      if (dk_parquet_page_index_read(&pi, f, 0, c, &err) == DK_OK) {
        const dk_parquet_page *pg = dk_parquet_page_index_page(pi, 1);
        if (pg && c == 0) second_page = pg->first_row;
        dk_parquet_page_index_free(pi);
      }
    }
    if (second_page > 0) { /* page skipping: read row group 0 from its second page */
      dk_parquet_row_group_info info;
      int rg0 = 0;
      if (dk_parquet_row_group(&info, f, 0, &err) == DK_OK) {
        dk_parquet_read_options rr;
        memset(&rr, 0, sizeof rr);
        rr.version = DK_PARQUET_READ_OPTIONS_VERSION;
        rr.row_groups = &rg0;
        rr.n_row_groups = 1;
        rr.row_start = second_page;
        rr.row_end = info.num_rows;
        struct ArrowArrayStream rs;
        if (dk_parquet_read(&rs, f, &rr, &err) == DK_OK) {
          for (int guard = 0; guard < 100000; guard++) {
            struct ArrowArray a;
            if (rs.get_next(&rs, &a) != 0 || !a.release) break;
            a.release(&a);
          }
          rs.release(&rs);
        }
      }
    }
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.batch_size = mode ? 3 : 1000;
    struct ArrowArrayStream st;
    if (dk_parquet_read(&st, f, &ro, &err) == DK_OK) {
      for (int guard = 0; guard < 100000; guard++) {
        struct ArrowArray a;
        if (st.get_next(&st, &a) != 0 || !a.release) break;
        a.release(&a);
      }
      st.release(&st);
    }
    dk_parquet_file_free(f);
  }
  return 0;
}
