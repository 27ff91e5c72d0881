/*
** parquet_fuzzer.c — libFuzzer target over the Parquet reader: the input is written to a
** memfd, opened (pread and mmap alternately), its metadata rendered, and every column read
** with a small batch size. Any crash, hang or sanitizer report is a bug; errors are fine.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arrow/array.h"
#include "dk/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("pq", 0);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  for (int mode = 0; mode < 2; mode++) {
    dk_error err;
    dk_error_init(&err);
    /* page CRCs off: mutated pages must reach the decoders, not stop at the checksum */
    dk_parquet_open_options oo = {.version = DK_PARQUET_OPEN_OPTIONS_VERSION, .use_mmap = mode,
                                  .skip_page_checksums = 1};
    dk_parquet_file *f = NULL;
    if (dk_parquet_open(&f, path, &oo, &err) != DK_OK) break;
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
  close(fd);
  return 0;
}
