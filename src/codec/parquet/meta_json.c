/*
** meta_json.c — dk_parquet_meta_json: a JSON rendering of a Parquet footer (row groups,
** column chunks, codecs, encodings, sizes, statistics) for `dk parquet meta`. Statistics
** are shown by physical type (numbers, booleans, UTF-8 strings, or hex for other bytes).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/parquet/reader.h"

static dk_status put_str(dk_buf *b, const char *s, size_t n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(b, '"', err));
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\\%c", c));
    else if (c < 0x20) DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\\u%04x", c));
    else DK_RETURN_NOT_OK(dk__buf_putc(b, (char)c, err));
  }
  return dk__buf_putc(b, '"', err);
}

static int valid_utf8(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    int len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (!len || i + (size_t)len > n) return 0;
    for (int k = 1; k < len; k++)
      if ((s[i + (size_t)k] & 0xc0) != 0x80) return 0;
    i += (size_t)len;
  }
  return 1;
}

static dk_status put_stat(dk_buf *b, int type, const uint8_t *p, uint32_t n, dk_error *err) {
  switch (type) {
    case PQ_BOOLEAN:
      if (n >= 1) return dk__buf_puts(b, p[0] ? "true" : "false", err);
      break;
    case PQ_INT32:
      if (n == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return dk__buf_printf(b, err, "%d", v);
      }
      break;
    case PQ_INT64:
      if (n == 8) {
        int64_t v;
        memcpy(&v, p, 8);
        return dk__buf_printf(b, err, "%lld", (long long)v);
      }
      break;
    case PQ_FLOAT:
    case PQ_DOUBLE:
      if (n == 4 || n == 8) {
        double d;
        if (n == 4) {
          float f;
          memcpy(&f, p, 4);
          d = f;
        } else {
          memcpy(&d, p, 8);
        }
        if (isfinite(d)) return dk__buf_printf(b, err, "%.17g", d);
        return put_str(b, isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity", strlen(isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity"), err);
      }
      break;
    case PQ_BYTE_ARRAY:
      if (valid_utf8(p, n)) return put_str(b, (const char *)p, n, err);
      break;
    default: break;
  }
  DK_RETURN_NOT_OK(dk__buf_puts(b, "\"0x", err));
  for (uint32_t i = 0; i < n; i++) DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%02x", p[i]));
  return dk__buf_putc(b, '"', err);
}

/* Page index of a column chunk (OffsetIndex + ColumnIndex) when the writer stored one. */
static dk_status put_page_index(dk_buf *b, const dk_parquet_file *f, const pq_column_meta *cm,
                                dk_error *err) {
  dk_arena ar;
  dk__arena_init(&ar, f->alloc, 4096);
  uint8_t *buf = NULL;
  dk_status st = DK_OK;
  if (cm->offset_index_offset >= 0 && cm->offset_index_length > 0) {
    size_t len = (size_t)cm->offset_index_length;
    const uint8_t *v;
    buf = dk__malloc(f->alloc, len);
    if (!buf) {
      st = dk__error_set(err, DK_NOMEM, "out of memory");
      goto cleanup;
    }
    pq_page_location *loc;
    int n;
    DK_CHECK_GOTO(dk_pq__file_read(f, cm->offset_index_offset, len, buf, &v, err));
    DK_CHECK_GOTO(dk_pq__parse_offset_index(&loc, &n, &ar, v, len, cm->offset_index_offset, err));
    DK_CHECK_GOTO(dk__buf_puts(b, ",\"pages\":[", err));
    for (int i = 0; i < n; i++)
      DK_CHECK_GOTO(dk__buf_printf(b, err, "%s{\"offset\":%lld,\"compressed_size\":%d,\"first_row\":%lld}",
                                  i ? "," : "", (long long)loc[i].offset, loc[i].compressed_size,
                                  (long long)loc[i].first_row));
    DK_CHECK_GOTO(dk__buf_putc(b, ']', err));
    dk__free(f->alloc, buf);
    buf = NULL;
  }
  if (cm->column_index_offset >= 0 && cm->column_index_length > 0) {
    size_t len = (size_t)cm->column_index_length;
    const uint8_t *v;
    buf = dk__malloc(f->alloc, len);
    if (!buf) {
      st = dk__error_set(err, DK_NOMEM, "out of memory");
      goto cleanup;
    }
    pq_column_index ci;
    DK_CHECK_GOTO(dk_pq__file_read(f, cm->column_index_offset, len, buf, &v, err));
    DK_CHECK_GOTO(dk_pq__parse_column_index(&ci, &ar, v, len, cm->column_index_offset, err));
    int null_pages = 0;
    int64_t nulls = 0;
    for (int i = 0; i < ci.n_pages; i++) {
      null_pages += ci.null_pages[i];
      if (ci.null_counts) nulls += ci.null_counts[i];
    }
    DK_CHECK_GOTO(dk__buf_printf(b, err, ",\"column_index\":{\"pages\":%d,\"null_pages\":%d", ci.n_pages, null_pages));
    if (ci.null_counts) DK_CHECK_GOTO(dk__buf_printf(b, err, ",\"null_count\":%lld", (long long)nulls));
    DK_CHECK_GOTO(dk__buf_putc(b, '}', err));
  }
cleanup:
  dk__free(f->alloc, buf);
  dk__arena_dispose(&ar);
  return st;
}

static dk_status build(dk_buf *b, const dk_parquet_file *f, dk_error *err) {
  const pq_file_meta *m = &f->meta;
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, "{\"version\":%d,\"num_rows\":%lld,\"created_by\":", m->version,
                                 (long long)m->num_rows));
  if (m->created_by) DK_RETURN_NOT_OK(put_str(b, m->created_by, strlen(m->created_by), err));
  else DK_RETURN_NOT_OK(dk__buf_puts(b, "null", err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"num_columns\":%d,\"key_value_metadata\":{", f->n_leaves));
  for (int i = 0; i < m->n_kv; i++) {
    if (i) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    DK_RETURN_NOT_OK(put_str(b, m->kv_keys[i], strlen(m->kv_keys[i]), err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
    DK_RETURN_NOT_OK(put_str(b, m->kv_values[i], strlen(m->kv_values[i]), err));
  }
  DK_RETURN_NOT_OK(dk__buf_puts(b, "},\"row_groups\":[", err));
  for (int r = 0; r < m->n_row_groups; r++) {
    const pq_row_group *rg = &m->row_groups[r];
    dk_parquet_row_group_info info;
    DK_RETURN_NOT_OK(dk_parquet_row_group(&info, f, r, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err,
                                   "%s{\"index\":%d,\"num_rows\":%lld,\"first_row\":%lld,\"start\":%lld,"
                                   "\"compressed_size\":%lld,\"total_byte_size\":%lld,\"columns\":[",
                                   r ? "," : "", r, (long long)rg->num_rows, (long long)rg->first_row,
                                   (long long)rg->start, (long long)info.compressed_size,
                                   (long long)rg->total_byte_size));
    for (int c = 0; c < rg->n_columns; c++) {
      const pq_column_meta *cm = &rg->columns[c];
      DK_RETURN_NOT_OK(dk__buf_puts(b, c ? ",{\"path\":\"" : "{\"path\":\"", err));
      for (int k = 0; k < cm->n_path; k++) {
        if (k) DK_RETURN_NOT_OK(dk__buf_putc(b, '.', err));
        size_t l = strlen(cm->path[k]);
        dk_buf tmp;
        dk__buf_init(&tmp, NULL);
        dk_status st = put_str(&tmp, cm->path[k], l, err);
        if (!st) st = dk__buf_append(b, tmp.data + 1, tmp.len - 2, err);
        dk__buf_dispose(&tmp);
        DK_RETURN_NOT_OK(st);
      }
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\",\"type\":\"%s\",\"codec\":\"%s\",\"encodings\":[",
                                     dk_pq__type_name(cm->type), dk_pq__codec_name(cm->codec)));
      for (int k = 0; k < cm->n_encodings; k++)
        DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%s\"%s\"", k ? "," : "", dk_pq__encoding_name(cm->encodings[k])));
      DK_RETURN_NOT_OK(dk__buf_printf(b, err,
                                     "],\"num_values\":%lld,\"compressed_size\":%lld,\"uncompressed_size\":%lld,"
                                     "\"data_page_offset\":%lld,\"dictionary_page_offset\":",
                                     (long long)cm->num_values, (long long)cm->total_compressed,
                                     (long long)cm->total_uncompressed, (long long)cm->data_page_offset));
      if (cm->dictionary_page_offset >= 0)
        DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%lld", (long long)cm->dictionary_page_offset));
      else
        DK_RETURN_NOT_OK(dk__buf_puts(b, "null", err));
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"statistics\":", err));
      if (!cm->has_stats) {
        DK_RETURN_NOT_OK(dk__buf_puts(b, "null", err));
      } else {
        const pq_stats *s = &cm->stats;
        DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
        int first = 1;
        if (s->has_null_count) {
          DK_RETURN_NOT_OK(dk__buf_printf(b, err, "\"null_count\":%lld", (long long)s->null_count));
          first = 0;
        }
        if (s->has_distinct) {
          DK_RETURN_NOT_OK(dk__buf_printf(b, err, "%s\"distinct_count\":%lld", first ? "" : ",",
                                         (long long)s->distinct_count));
          first = 0;
        }
        if (s->has_min) {
          DK_RETURN_NOT_OK(dk__buf_puts(b, first ? "\"min\":" : ",\"min\":", err));
          DK_RETURN_NOT_OK(put_stat(b, cm->type, s->min, s->min_len, err));
          first = 0;
        }
        if (s->has_max) {
          DK_RETURN_NOT_OK(dk__buf_puts(b, first ? "\"max\":" : ",\"max\":", err));
          DK_RETURN_NOT_OK(put_stat(b, cm->type, s->max, s->max_len, err));
        }
        DK_RETURN_NOT_OK(dk__buf_putc(b, '}', err));
      }
      DK_RETURN_NOT_OK(put_page_index(b, f, cm, err));
      DK_RETURN_NOT_OK(dk__buf_putc(b, '}', err));
    }
    DK_RETURN_NOT_OK(dk__buf_puts(b, "]}", err));
  }
  return dk__buf_puts(b, "]}", err);
}

dk_status dk_parquet_meta_json(char **out, const dk_parquet_file *f, dk_error *err) {
  *out = NULL;
  dk_buf b;
  dk__buf_init(&b, NULL); /* libc: the caller frees with dk_free */
  dk_status st = build(&b, f, err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *out = dk__buf_detach(&b);
  return DK_OK;
}
