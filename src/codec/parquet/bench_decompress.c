/*
** bench_decompress.c — the "merely decompress" baseline of the Parquet benchmark (issue #2:
** the reader should stay within 2x of the time to read and decompress the same pages).
**
** Reads every column chunk of every row group, walks its pages (parquet.thrift PageHeader),
** and decompresses each page body into a reused buffer, decoding nothing. Same I/O path as
** the reader (dk_pq__file_read), so the ratio isolates decoding + assembly.
*/
#include "codec/parquet/reader.h"

dk_status dk_pq__bench_decompress_all(dk_parquet_file *f, int64_t *bytes_out, dk_error *err) {
  *bytes_out = 0;
  dk_status st = DK_OK;
  uint8_t *chunk = NULL, *out = NULL;
  size_t chunk_cap = 0, out_cap = 0;
  for (int g = 0; st == DK_OK && g < f->meta.n_row_groups; g++) {
    const pq_row_group *rg = &f->meta.row_groups[g];
    for (int c = 0; st == DK_OK && c < rg->n_columns; c++) {
      const pq_column_meta *cm = &rg->columns[c];
      int64_t start = cm->dictionary_page_offset >= 0 && cm->dictionary_page_offset < cm->data_page_offset
                          ? cm->dictionary_page_offset
                          : cm->data_page_offset;
      int64_t len = cm->total_compressed;
      if (start < 0 || len < 0 || start > f->size || len > f->size - start) {
        st = dk__error_set(err, DK_CORRUPT, "%s: column chunk out of bounds", f->path);
        break;
      }
      if ((size_t)len > chunk_cap) {
        uint8_t *p = dk__realloc(f->alloc, chunk, (size_t)len);
        if (!p) {
          st = dk__error_set(err, DK_NOMEM, "out of memory");
          break;
        }
        chunk = p;
        chunk_cap = (size_t)len;
      }
      const uint8_t *view = NULL;
      st = dk_pq__file_read(f, start, (size_t)len, chunk, &view, err);
      if (st) break;
      const uint8_t *p = view ? view : chunk;
      size_t pos = 0;
      while (st == DK_OK && pos < (size_t)len) {
        pq_page_header h;
        size_t hn = 0;
        st = dk_pq__parse_page_header(&h, p + pos, (size_t)len - pos, start + (int64_t)pos, &hn, err);
        if (st) break;
        pos += hn;
        if (h.compressed_size < 0 || h.uncompressed_size < 0 ||
            (size_t)h.compressed_size > (size_t)len - pos) {
          st = dk__error_set(err, DK_CORRUPT, "%s: page at %lld overruns its chunk", f->path,
                             (long long)(start + (int64_t)pos));
          break;
        }
        const uint8_t *body = p + pos;
        size_t clen = (size_t)h.compressed_size, ulen = (size_t)h.uncompressed_size;
        if (h.has_v2) { /* levels are stored uncompressed before the values */
          size_t lv = (size_t)h.def_bytes + (size_t)h.rep_bytes;
          if (lv > clen || lv > ulen) {
            st = dk__error_set(err, DK_CORRUPT, "%s: bad v2 level sizes", f->path);
            break;
          }
          body += lv;
          clen -= lv;
          ulen -= lv;
        }
        if (!h.has_v2 || h.is_compressed) {
          if (ulen > out_cap) {
            uint8_t *q = dk__realloc(f->alloc, out, ulen);
            if (!q) {
              st = dk__error_set(err, DK_NOMEM, "out of memory");
              break;
            }
            out = q;
            out_cap = ulen;
          }
          st = dk_pq__decompress(cm->codec, body, clen, out, ulen, err);
        }
        *bytes_out += h.uncompressed_size;
        pos += (size_t)h.compressed_size;
      }
    }
  }
  dk__free(f->alloc, chunk);
  dk__free(f->alloc, out);
  return st;
}
