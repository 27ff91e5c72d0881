/*
** column.c — reads one column chunk: page headers, decompression, dictionary pages, data
** pages v1 and v2 (apache/parquet-format README "Data Pages", "Column chunks"), the level
** streams and every value encoding of Encodings.md, producing per batch the def/rep levels
** and the dense (non-null) physical values. Memory is bounded by the batch, never by counts
** claimed in the file.
*/
#include <stdio.h>

#include "codec/parquet/reader.h"

#define LA_CHUNK 4096 /* levels decoded ahead at a time */
#define DICT_SLACK 16 /* readable bytes after a BYTE_ARRAY dictionary page (see load_dict) */

static uint32_t le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static dk_status col_fail(pq_col *c, dk_error *err, const char *fmt, ...) DK_PRINTF(3, 4);
static dk_status col_fail(pq_col *c, dk_error *err, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dk__error_set(err, DK_CORRUPT, "corrupt page at offset %lld: %s", (long long)c->page_off,
                       msg);
}

static int phys_width(const pq_node *leaf) {
  switch (leaf->el->type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32:
    case PQ_FLOAT: return 4;
    case PQ_INT64:
    case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FLBA: return leaf->el->type_length;
    default: return 0;
  }
}

void dk_pq__leaf_batch_init(pq_leaf_batch *b, const dk_allocator *a) {
  memset(b, 0, sizeof *b);
  dk__buf_init(&b->def, a);
  dk__buf_init(&b->rep, a);
  b->alloc = a;
  dk__buf_init(&b->offs, a);
}

void dk_pq__leaf_batch_dispose(pq_leaf_batch *b) {
  dk__buf_dispose(&b->def);
  dk__buf_dispose(&b->rep);
  dk__abuf_free(&b->vals, b->alloc);
  dk__buf_dispose(&b->offs);
  dk__abuf_free(&b->data, b->alloc);
}

bool dk_pq__chunk_range(const dk_parquet_file *f, int row_group, int leaf, int64_t *start,
                        int64_t *len) {
  const pq_column_meta *cm = &f->meta.row_groups[row_group].columns[leaf];
  int64_t s = cm->data_page_offset;
  if (cm->dictionary_page_offset > 0 && cm->dictionary_page_offset < s) s = cm->dictionary_page_offset;
  *start = s;
  *len = cm->total_compressed;
  return !(s < 4 || *len < 0 || s > f->size - 8 || *len > f->size - 8 - s);
}

dk_status dk_pq__col_open(pq_col *c, const dk_parquet_file *f, int row_group, int leaf,
                          const dk_allocator *alloc, dk_error *err) {
  memset(c, 0, sizeof *c);
  c->f = f;
  c->alloc = alloc;
  c->leaf = f->leaves[leaf];
  c->cm = &f->meta.row_groups[row_group].columns[leaf];
  c->type = c->leaf->el->type;
  c->width = phys_width(c->leaf);
  c->max_def = c->leaf->max_def;
  c->max_rep = c->leaf->max_rep;
  dk_buf *bufs[] = {&c->dict_page, &c->dict_vals, &c->page, &c->mat_offs, &c->mat_data,
                    &c->la_def, &c->la_rep, &c->idx, &c->scratch};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_init(bufs[i], alloc);
  const pq_column_meta *cm = c->cm;
  if (cm->type != c->type)
    return dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet footer: column chunk type %s differs from schema type %s",
                         dk_pq__type_name(cm->type), dk_pq__type_name(c->type));
  int64_t start, len;
  bool inside = dk_pq__chunk_range(f, row_group, leaf, &start, &len);
  c->page_off = start;
  if (!inside)
    return dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet footer: column chunk at offset %lld, %lld bytes, lies "
                         "outside the file (%lld bytes)",
                         (long long)start, (long long)len, (long long)f->size);
  c->chunk_off = start;
  c->chunk_len = (size_t)len;
  if (f->map) return dk_pq__file_read(f, start, c->chunk_len, NULL, &c->chunk, err);
  /* without an mmap the chunk is read page by page (win_get): memory is bounded by the
  ** largest page, not by the chunk */
  return DK_OK;
}

/* Makes chunk bytes [pos, pos + need) addressable and points *p at them. need must not pass
** the chunk's end. Without an mmap the bytes come into the window, read from the file in
** pieces of at least WIN_MIN bytes; pointers into the window stay valid until the next call. */
#define WIN_MIN ((size_t)1 << 20)

static dk_status win_get(pq_col *c, size_t need, const uint8_t **p, dk_error *err) {
  if (!c->owned && c->chunk) {
    *p = c->chunk + c->pos;
    return DK_OK;
  }
  if (c->owned && c->pos >= c->win_lo && c->pos - c->win_lo <= c->win_len &&
      need <= c->win_len - (c->pos - c->win_lo)) {
    *p = c->owned + (c->pos - c->win_lo);
    return DK_OK;
  }
  size_t left = c->chunk_len - c->pos;
  /* where every read is a round trip (an object store), the rest of the chunk comes at once */
  size_t want = c->f->src.coalesce ? left : DK_MIN(DK_MAX(need, WIN_MIN), left);
  if (want > c->win_cap || !c->owned) {
    size_t cap = DK_MAX(want, c->win_cap);
    dk__free(c->alloc, c->owned);
    c->win_cap = c->win_len = 0;
    c->owned = dk__malloc(c->alloc, cap ? cap : 1);
    if (!c->owned) return dk__error_set(err, DK_NOMEM, "out of memory (column chunk window)");
    c->win_cap = cap;
  }
  const uint8_t *view = NULL;
  c->win_len = 0;
  DK_RETURN_NOT_OK(dk_pq__file_read(c->f, c->chunk_off + (int64_t)c->pos, want, c->owned, &view, err));
  c->win_lo = c->pos;
  c->win_len = want;
  *p = c->owned;
  return DK_OK;
}

void dk_pq__col_give_chunk(pq_col *c, uint8_t *bytes) {
  if (c->owned || c->chunk) { /* mapped, or already reading: not needed */
    dk__free(c->alloc, bytes);
    return;
  }
  c->chunk_buf = bytes;
  c->chunk = bytes;
}

void dk_pq__col_close(pq_col *c) {
  if (!c->f) return;
  dk__free(c->alloc, c->owned);
  dk__free(c->alloc, c->chunk_buf);
  dk_buf *bufs[] = {&c->dict_page, &c->dict_vals, &c->page, &c->mat_offs, &c->mat_data,
                    &c->la_def, &c->la_rep, &c->idx, &c->scratch};
  for (size_t i = 0; i < DK_ARRAY_LEN(bufs); i++) dk__buf_dispose(bufs[i]);
  memset(c, 0, sizeof *c);
}

/* Decompresses (or views) a page body; out and out_len receive the decoded bytes. */
static dk_status page_body(pq_col *c, dk_buf *dst, const uint8_t *src, size_t src_len,
                           int64_t raw_len, int compressed, const uint8_t **out, size_t *out_len,
                           dk_error *err) {
  if (!compressed || c->cm->codec == DK_PQ_CODEC_UNCOMPRESSED) {
    if ((int64_t)src_len != raw_len && c->cm->codec == DK_PQ_CODEC_UNCOMPRESSED && compressed)
      return col_fail(c, err, "uncompressed page does not match its header's size");
    *out = src;
    *out_len = src_len;
    return DK_OK;
  }
  if (raw_len < 0 || raw_len > (int64_t)src_len * 4096 + (1 << 20) || raw_len > (1 << 30))
    return col_fail(c, err, "implausible decompressed size for %zu compressed bytes",
                    src_len);
  dk__buf_clear(dst);
  DK_RETURN_NOT_OK(dk__buf_reserve(dst, (size_t)raw_len, err));
  dk_status st = dk_pq__decompress(c->cm->codec, src, src_len, (uint8_t *)dst->data,
                                  (size_t)raw_len, err);
  if (st) {
    dk__error_prefix(err, "page at offset %lld", (long long)c->page_off);
    return st;
  }
  dst->len = (size_t)raw_len;
  *out = (const uint8_t *)dst->data;
  *out_len = (size_t)raw_len;
  return DK_OK;
}

static dk_status load_dict(pq_col *c, const pq_page_header *h, const uint8_t *body, size_t blen,
                           dk_error *err) {
  if (c->has_dict) return col_fail(c, err, "second dictionary page in a column chunk");
  if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICT)
    return col_fail(c, err, "dictionary page encoding %s", dk_pq__encoding_name(h->encoding));
  const uint8_t *p;
  size_t n;
  DK_RETURN_NOT_OK(page_body(c, &c->dict_page, body, blen, h->uncompressed_size, 1, &p, &n, err));
  int64_t cnt = h->num_values;
  dk__buf_clear(&c->dict_vals);
  if (c->type == PQ_BYTE_ARRAY) {
    if ((uint64_t)cnt > n / 4) return col_fail(c, err, "dictionary's value count does not fit its %zu bytes", n);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->dict_vals, (size_t)cnt * 8, err));
    uint32_t *starts = (uint32_t *)c->dict_vals.data, *lens = starts + cnt;
    dk_status st = dk_pq__plain_byte_array_index(p, n, cnt, starts, lens, err);
    if (st) return dk__error_prefix(err, "dictionary page at offset %lld", (long long)c->page_off), st;
    if (p != (const uint8_t *)c->dict_page.data) {
      /* an uncompressed page is a view into the chunk window: keep a copy */
      dk__buf_clear(&c->dict_page);
      DK_RETURN_NOT_OK(dk__buf_append(&c->dict_page, p, n, err));
    }
    /* DICT_SLACK zero bytes after the page let the gather copy short values in one
    ** fixed-size move */
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->dict_page, DICT_SLACK, err));
    memset(c->dict_page.data + c->dict_page.len, 0, DICT_SLACK);
    c->dict_page_ptr = (const uint8_t *)c->dict_page.data;
  } else if (c->type == PQ_BOOLEAN) {
    if ((uint64_t)cnt > n * 8) return col_fail(c, err, "dictionary's value count does not fit its %zu bytes", n);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->dict_vals, (size_t)cnt, err));
    dk_pq__plain_bool(p, 0, (uint8_t *)c->dict_vals.data, cnt);
  } else {
    if ((uint64_t)cnt > n / (size_t)c->width)
      return col_fail(c, err, "dictionary's value count does not fit its %zu bytes", n);
    DK_RETURN_NOT_OK(dk__buf_append(&c->dict_vals, p, (size_t)cnt * (size_t)c->width, err));
  }
  if (cnt > UINT32_MAX) return col_fail(c, err, "dictionary too large");
  c->dict_n = (uint32_t)cnt;
  c->has_dict = 1;
  return DK_OK;
}

/* Sets up the value decoder of a data page over c->vp..c->vend. */
static dk_status init_values(pq_col *c, int encoding, int64_t page_values, dk_error *err) {
  c->encoding = encoding;
  size_t len = (size_t)(c->vend - c->vp);
  switch (encoding) {
    case PQ_ENC_PLAIN: c->bool_bit = 0; return DK_OK;
    case PQ_ENC_PLAIN_DICT:
    case PQ_ENC_RLE_DICT: {
      if (!c->has_dict) return col_fail(c, err, "dictionary-encoded page without a dictionary");
      int bw = 0;
      if (len > 0) {
        bw = *c->vp++;
        len--;
      }
      if (bw > 32) return col_fail(c, err, "dictionary index bit width above 32");
      dk_pq__rle_init(&c->val_rle, c->vp, len, bw);
      return DK_OK;
    }
    case PQ_ENC_RLE: {
      if (c->type != PQ_BOOLEAN) return col_fail(c, err, "RLE values on a non-boolean column");
      if (len < 4) return col_fail(c, err, "RLE boolean values without a length");
      uint32_t l = le32(c->vp);
      if (l > len - 4) return col_fail(c, err, "RLE boolean length exceeds the page");
      dk_pq__rle_init(&c->val_rle, c->vp + 4, l, 1);
      return DK_OK;
    }
    case PQ_ENC_DELTA_BINARY_PACKED: {
      if (c->type != PQ_INT32 && c->type != PQ_INT64)
        return col_fail(c, err, "DELTA_BINARY_PACKED on a %s column", dk_pq__type_name(c->type));
      dk_status st = dk_pq__delta_init(&c->delta, c->vp, len, err);
      if (st) dk__error_prefix(err, "page at offset %lld", (long long)c->page_off);
      return st;
    }
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY: {
      if (c->type != PQ_BYTE_ARRAY && !(encoding == PQ_ENC_DELTA_BYTE_ARRAY && c->type == PQ_FLBA))
        return col_fail(c, err, "%s on a %s column", dk_pq__encoding_name(encoding),
                        dk_pq__type_name(c->type));
      /* the first DELTA_BINARY_PACKED header declares the number of values */
      dk_pq_delta d;
      dk_status st = dk_pq__delta_init(&d, c->vp, len, err);
      if (st) return dk__error_prefix(err, "page at offset %lld", (long long)c->page_off), st;
      int64_t n = dk_pq__delta_total(&d);
      if (n < 0 || n > page_values || (uint64_t)n > (uint64_t)len * 32 + 1024)
        return col_fail(c, err, "%s's value count does not fit a page of %lld values",
                        dk_pq__encoding_name(encoding), (long long)page_values);
      dk__buf_clear(&c->mat_offs);
      dk__buf_clear(&c->mat_data);
      if (c->type == PQ_FLBA) {
        DK_RETURN_NOT_OK(dk__buf_reserve(&c->mat_data, (size_t)n * (size_t)c->width, err));
        st = dk_pq__delta_byte_array_fixed(c->vp, len, n, c->width, (uint8_t *)c->mat_data.data,
                                          &c->scratch, err);
        c->mat_data.len = (size_t)n * (size_t)c->width;
      } else {
        DK_RETURN_NOT_OK(dk__buf_reserve(&c->mat_offs, (size_t)(n + 1) * 4, err));
        int32_t *offs = (int32_t *)c->mat_offs.data;
        offs[0] = 0;
        dk_pq_bytes_out o = {offs + 1, &c->mat_data};
        st = encoding == PQ_ENC_DELTA_BYTE_ARRAY
                 ? dk_pq__delta_byte_array(c->vp, len, n, &o, &c->scratch, err)
                 : dk_pq__delta_length_byte_array(c->vp, len, n, &o, &c->scratch, err);
        c->mat_offs.len = (size_t)(n + 1) * 4;
      }
      if (st) return dk__error_prefix(err, "page at offset %lld", (long long)c->page_off), st;
      c->mat_n = n;
      c->mat_next = 0;
      return DK_OK;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT:
      if (c->width <= 0 || c->type == PQ_BOOLEAN)
        return col_fail(c, err, "BYTE_STREAM_SPLIT on a %s column", dk_pq__type_name(c->type));
      if (len % (size_t)c->width) return col_fail(c, err, "BYTE_STREAM_SPLIT length not a multiple of the width");
      c->bss_total = (int64_t)(len / (size_t)c->width);
      c->bss_next = 0;
      return DK_OK;
    default:
      return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: unsupported encoding %s",
                           (long long)c->page_off, dk_pq__encoding_name(encoding));
  }
}

/* v1 level stream: 4-byte length then RLE/bit-packed hybrid, or (deprecated) BIT_PACKED:
** MSB-first packed levels without a length. */
static dk_status v1_levels(pq_col *c, int enc, int max_level, int64_t num_values, const uint8_t **p,
                           const uint8_t *end, dk_pq_rle *dec, int *msb, const uint8_t **bp,
                           size_t *bp_len, int *bw_out, dk_error *err) {
  int bw = 0;
  while ((1 << bw) <= max_level) bw++;
  *bw_out = bw;
  *msb = 0;
  if (enc == PQ_ENC_BIT_PACKED) {
    uint64_t need = ((uint64_t)num_values * (uint64_t)bw + 7) / 8;
    if (need > (uint64_t)(end - *p)) return col_fail(c, err, "BIT_PACKED levels exceed the page");
    *msb = 1;
    *bp = *p;
    *bp_len = (size_t)need;
    *p += need;
    return DK_OK;
  }
  if (enc != PQ_ENC_RLE)
    return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: level encoding %s",
                         (long long)c->page_off, dk_pq__encoding_name(enc));
  if (end - *p < 4) return col_fail(c, err, "truncated level length");
  uint32_t l = le32(*p);
  if (l > (size_t)(end - *p) - 4) return col_fail(c, err, "level data length exceeds the page");
  dk_pq__rle_init(dec, *p + 4, l, bw);
  *p += 4 + l;
  return DK_OK;
}

static int bit_width_of(int max_level) {
  int bw = 0;
  while ((1 << bw) <= max_level) bw++;
  return bw;
}

/* Advances to the next data page. *eof = 1 when the chunk has none left. */
static dk_status next_data_page(pq_col *c, int *eof, dk_error *err) {
  *eof = 0;
  for (;;) {
    if (c->pos >= c->chunk_len) {
      *eof = 1;
      return DK_OK;
    }
    pq_page_header h;
    size_t hl;
    c->page_off = c->chunk_off + (int64_t)c->pos;
    /* the header's size is unknown: parse from a probe that doubles until the header fits
    ** (or the probe reaches the chunk's end, whose error then stands) */
    size_t left = c->chunk_len - c->pos, probe = DK_MIN(left, (size_t)64 << 10);
    for (;;) {
      const uint8_t *hp;
      DK_RETURN_NOT_OK(win_get(c, probe, &hp, err));
      dk_error pe; /* a short probe's error must not leak into err */
      dk_error_init(&pe);
      dk_status hs = dk_pq__parse_page_header(&h, hp, probe, c->page_off, &hl, &pe);
      if (hs == DK_OK) break;
      if (probe == left || hs != DK_CORRUPT) {
        if (err) *err = pe;
        return hs;
      }
      probe = probe > left / 2 ? left : probe * 2;
    }
    if ((size_t)h.compressed_size > left - hl)
      return col_fail(c, err, "page extends past the column chunk");
    if (c->skip_to > c->page_off && h.type != PQ_PAGE_DICT) {
      /* page skipping: jump over the data pages before the first selected one */
      if (c->skip_to >= c->chunk_off + (int64_t)c->chunk_len)
        return col_fail(c, err, "page to skip to lies past the column chunk");
      c->pos = (size_t)(c->skip_to - c->chunk_off);
      continue;
    }
    size_t blen = (size_t)h.compressed_size;
    const uint8_t *hdr;
    DK_RETURN_NOT_OK(win_get(c, hl + blen, &hdr, err));
    const uint8_t *body = hdr + hl;
    c->pos += hl + blen;
    DK_RETURN_NOT_OK(dk_pq__page_check_crc(c->f, &h, body, blen, c->page_off, err));
    if (h.type == PQ_PAGE_DICT) {
      if (!h.has_dict) return col_fail(c, err, "dictionary page without its header");
      DK_RETURN_NOT_OK(load_dict(c, &h, body, blen, err));
      continue;
    }
    if (h.type == PQ_PAGE_DATA) {
      if (!h.has_data) return col_fail(c, err, "data page without its header");
      const uint8_t *p;
      size_t n;
      DK_RETURN_NOT_OK(page_body(c, &c->page, body, blen, h.uncompressed_size, 1, &p, &n, err));
      const uint8_t *end = p + n;
      c->page_lv_pos = 0;
      if (c->max_rep > 0)
        DK_RETURN_NOT_OK(v1_levels(c, h.rep_encoding, c->max_rep, h.num_values, &p, end, &c->rep_dec,
                                   &c->rep_msb, &c->rep_bp, &c->rep_bp_len, &c->rep_bw, err));
      if (c->max_def > 0)
        DK_RETURN_NOT_OK(v1_levels(c, h.def_encoding, c->max_def, h.num_values, &p, end, &c->def_dec,
                                   &c->def_msb, &c->def_bp, &c->def_bp_len, &c->def_bw, err));
      c->vp = p;
      c->vend = end;
      c->page_left = h.num_values;
      DK_RETURN_NOT_OK(init_values(c, h.encoding, h.num_values, err));
      if (h.num_values == 0) continue;
      return DK_OK;
    }
    if (h.type == PQ_PAGE_DATA_V2) {
      if (!h.has_v2) return col_fail(c, err, "data page v2 without its header");
      if ((int64_t)h.rep_bytes + h.def_bytes > (int64_t)blen)
        return col_fail(c, err, "level lengths exceed the page");
      const uint8_t *lv = body;
      c->def_msb = c->rep_msb = 0;
      c->page_lv_pos = 0;
      if (c->max_rep > 0) dk_pq__rle_init(&c->rep_dec, lv, (size_t)h.rep_bytes, bit_width_of(c->max_rep));
      if (c->max_def > 0)
        dk_pq__rle_init(&c->def_dec, lv + h.rep_bytes, (size_t)h.def_bytes, bit_width_of(c->max_def));
      size_t skip = (size_t)h.rep_bytes + (size_t)h.def_bytes;
      const uint8_t *p;
      size_t n;
      DK_RETURN_NOT_OK(page_body(c, &c->page, body + skip, blen - skip,
                                 (int64_t)h.uncompressed_size - (int64_t)skip, h.is_compressed,
                                 &p, &n, err));
      c->vp = p;
      c->vend = p + n;
      c->page_left = h.num_values;
      DK_RETURN_NOT_OK(init_values(c, h.encoding, h.num_values, err));
      if (h.num_values == 0) continue;
      return DK_OK;
    }
    /* index pages and unknown page types are skipped */
  }
}

/* Appends n dense values of the current page to b. */
static dk_status decode_values(pq_col *c, int64_t n, pq_leaf_batch *b, dk_error *err) {
  if (n == 0) return DK_OK;
  dk_status st = DK_OK;
  size_t avail = (size_t)(c->vend - c->vp);
  if (c->type == PQ_BYTE_ARRAY) {
    DK_RETURN_NOT_OK(dk__buf_reserve(&b->offs, (size_t)n * 4, err));
    int32_t *offs = (int32_t *)b->offs.data + b->n_dense + 1;
    switch (c->encoding) {
      case PQ_ENC_PLAIN: {
        /* validate and total first, so the output grows exactly by the values' bytes */
        uint64_t total = 0;
        st = dk_pq__plain_byte_array_size(c->vp, avail, n, &total, err);
        if (st) break;
        if (total > (uint64_t)(INT32_MAX - offs[-1]))
          return dk__error_set(err, DK_UNSUPPORTED, "batch exceeds 2 GiB of strings; use smaller batches");
        DK_RETURN_NOT_OK(dk__abuf_reserve(&b->data, b->alloc, (int64_t)total + 1, err));
        c->vp += dk_pq__plain_byte_array_copy(c->vp, n, offs, b->data.data + b->data.len);
        b->data.len += (int64_t)total;
        break;
      }
      case PQ_ENC_PLAIN_DICT:
      case PQ_ENC_RLE_DICT: {
        DK_RETURN_NOT_OK(dk__buf_reserve(&c->idx, (size_t)n * 4, err));
        uint32_t *idx = (uint32_t *)c->idx.data;
        st = dk_pq__rle_get_indices(&c->val_rle, idx, n, c->dict_n, err);
        if (st) break;
        const uint32_t *starts = (const uint32_t *)c->dict_vals.data, *lens = starts + c->dict_n;
        uint64_t total = 0;
        for (int64_t i = 0; i < n; i++) total += lens[idx[i]];
        int32_t base = offs[-1];
        if (total > (uint64_t)(INT32_MAX - base))
          return dk__error_set(err, DK_UNSUPPORTED, "batch exceeds 2 GiB of strings; use smaller batches");
        DK_RETURN_NOT_OK(dk__abuf_reserve(&b->data, b->alloc, (int64_t)total + DICT_SLACK, err));
        uint8_t *dst = b->data.data + b->data.len;
        const uint8_t *dict = c->dict_page_ptr;
        int32_t end = base;
        for (int64_t i = 0; i < n; i++) {
          uint32_t k = idx[i], l = lens[k];
          /* short values: one fixed move (source and destination both have DICT_SLACK bytes
          ** of room past any value) */
          if (DK_LIKELY(l <= DICT_SLACK)) memcpy(dst, dict + starts[k], DICT_SLACK);
          else memcpy(dst, dict + starts[k], l);
          dst += l;
          end += (int32_t)l;
          offs[i] = end;
        }
        b->data.len += (int64_t)total;
        break;
      }
      case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
      case PQ_ENC_DELTA_BYTE_ARRAY: {
        if (n > c->mat_n - c->mat_next) return col_fail(c, err, "page holds fewer values than its levels need");
        const int32_t *mo = (const int32_t *)c->mat_offs.data + c->mat_next;
        int32_t from = mo[0], to = mo[n];
        int32_t base = offs[-1];
        if ((int64_t)to - from > (int64_t)INT32_MAX - base)
          return dk__error_set(err, DK_UNSUPPORTED, "batch exceeds 2 GiB of strings; use smaller batches");
        if (to > from)
          DK_RETURN_NOT_OK(dk__abuf_append(&b->data, b->alloc, c->mat_data.data + from, to - from, err));
        for (int64_t i = 0; i < n; i++) offs[i] = base + (mo[i + 1] - from);
        c->mat_next += n;
        break;
      }
      default: return col_fail(c, err, "encoding %s on a BYTE_ARRAY column", dk_pq__encoding_name(c->encoding));
    }
    if (st) return dk__error_prefix(err, "page at offset %lld", (long long)c->page_off), st;
    b->offs.len += (size_t)n * 4;
    b->n_dense += n;
    return DK_OK;
  }
  size_t w = (size_t)c->width;
  DK_RETURN_NOT_OK(dk__abuf_reserve(&b->vals, b->alloc, (int64_t)((size_t)n * w), err));
  uint8_t *out = b->vals.data + b->vals.len;
  switch (c->encoding) {
    case PQ_ENC_PLAIN:
      if (c->type == PQ_BOOLEAN) {
        if ((uint64_t)c->bool_bit + (uint64_t)n > (uint64_t)avail * 8)
          return col_fail(c, err, "page holds fewer booleans than its levels need");
        dk_pq__plain_bool(c->vp, c->bool_bit, out, n);
        c->bool_bit += n;
      } else {
        if ((uint64_t)n * w > avail) return col_fail(c, err, "page holds fewer values than its levels need");
        memcpy(out, c->vp, (size_t)n * w);
        c->vp += (size_t)n * w;
      }
      break;
    case PQ_ENC_PLAIN_DICT:
    case PQ_ENC_RLE_DICT: {
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->idx, (size_t)n * 4, err));
      uint32_t *idx = (uint32_t *)c->idx.data;
      st = dk_pq__rle_get_indices(&c->val_rle, idx, n, c->dict_n, err);
      if (!st) dk_pq__gather((const uint8_t *)c->dict_vals.data, (int)w, idx, n, out);
      break;
    }
    case PQ_ENC_RLE: {
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->idx, (size_t)n * 4, err));
      uint32_t *idx = (uint32_t *)c->idx.data;
      st = dk_pq__rle_get(&c->val_rle, idx, n, err);
      if (!st)
        for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)(idx[i] & 1);
      break;
    }
    case PQ_ENC_DELTA_BINARY_PACKED:
      st = c->type == PQ_INT32 ? dk_pq__delta_get32(&c->delta, (int32_t *)(void *)out, n, err)
                               : dk_pq__delta_get64(&c->delta, (int64_t *)(void *)out, n, err);
      break;
    case PQ_ENC_DELTA_BYTE_ARRAY:
      if (n > c->mat_n - c->mat_next) return col_fail(c, err, "page holds fewer values than its levels need");
      memcpy(out, c->mat_data.data + (size_t)c->mat_next * w, (size_t)n * w);
      c->mat_next += n;
      break;
    case PQ_ENC_BYTE_STREAM_SPLIT:
      if (n > c->bss_total - c->bss_next) return col_fail(c, err, "page holds fewer values than its levels need");
      st = dk_pq__byte_stream_split(c->vp, avail, (int)w, c->bss_total, c->bss_next, n, out, err);
      c->bss_next += n;
      break;
    default: return col_fail(c, err, "unexpected encoding %s", dk_pq__encoding_name(c->encoding));
  }
  if (st) return dk__error_prefix(err, "page at offset %lld", (long long)c->page_off), st;
  b->vals.len += (int64_t)((size_t)n * w);
  b->n_dense += n;
  return DK_OK;
}

static void batch_clear(pq_leaf_batch *b, int byte_array) {
  dk__buf_clear(&b->def);
  dk__buf_clear(&b->rep);
  b->vals.len = 0;
  dk__buf_clear(&b->offs);
  b->data.len = 0;
  b->n_levels = 0;
  b->n_dense = 0;
  /* failures are ignored here: the decoder's own reserve reports them */
  if (!b->vals.data && b->hint_vals > 0) (void)dk__abuf_reserve(&b->vals, b->alloc, b->hint_vals, NULL);
  if (!b->data.data && b->hint_data > 0)
    (void)dk__abuf_reserve(&b->data, b->alloc, b->hint_data + b->hint_data / 8 + 64, NULL);
  if (byte_array) {
    int32_t zero = 0;
    /* cannot fail after the first batch; checked by the caller through reserve below */
    (void)dk__buf_append(&b->offs, &zero, 4, NULL);
  }
}

/* Next n levels of a stream; BIT_PACKED streams are addressed from the page's level position
** (LA_CHUNK is a multiple of 8, so every chunk starts on a byte). */
static dk_status level_get(pq_col *c, dk_pq_rle *dec, int msb, const uint8_t *bp, size_t bp_len,
                           int bw, uint32_t *out, int64_t n, dk_error *err) {
  if (!msb) return dk_pq__rle_get(dec, out, n, err);
  size_t at = (size_t)(((uint64_t)c->page_lv_pos * (uint64_t)bw) / 8);
  if (at > bp_len) return col_fail(c, err, "BIT_PACKED levels exhausted");
  size_t used;
  return dk_pq__bitpacked_msb(bp + at, bp_len - at, bw, out, n, &used, err);
}

static dk_status refill(pq_col *c, dk_error *err) {
  int64_t n = DK_MIN(c->page_left, LA_CHUNK);
  c->la_pos = 0;
  c->la_n = 0;
  dk__buf_clear(&c->la_def);
  dk__buf_clear(&c->la_rep);
  DK_RETURN_NOT_OK(dk__buf_reserve(&c->la_def, (size_t)n * 4, err));
  dk_status st = level_get(c, &c->def_dec, c->def_msb, c->def_bp, c->def_bp_len, c->def_bw,
                           (uint32_t *)c->la_def.data, n, err);
  if (!st && c->max_rep > 0) {
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->la_rep, (size_t)n * 4, err));
    st = level_get(c, &c->rep_dec, c->rep_msb, c->rep_bp, c->rep_bp_len, c->rep_bw,
                   (uint32_t *)c->la_rep.data, n, err);
  }
  c->page_lv_pos += n;
  if (st) return dk__error_prefix(err, "levels of page at offset %lld", (long long)c->page_off), st;
  const uint32_t *d = (const uint32_t *)c->la_def.data;
  for (int64_t i = 0; i < n; i++)
    if (d[i] > (uint32_t)c->max_def) return col_fail(c, err, "definition level above the maximum %d", c->max_def);
  if (c->max_rep > 0) {
    const uint32_t *r = (const uint32_t *)c->la_rep.data;
    for (int64_t i = 0; i < n; i++)
      if (r[i] > (uint32_t)c->max_rep) return col_fail(c, err, "repetition level above the maximum %d", c->max_rep);
  }
  c->page_left -= n;
  c->la_n = n;
  return DK_OK;
}

/* Makes b->def explicit before levels other than "all defined" are appended: while b->def
** is empty every level so far was max_def (see flat_levels); write those out, then make room
** for `extra` more. */
static dk_status def_materialize(pq_leaf_batch *b, uint32_t md, int64_t extra, dk_error *err) {
  if (b->def.len == 0 && b->n_levels > 0) {
    DK_RETURN_NOT_OK(dk__buf_reserve(&b->def, (size_t)(b->n_levels + extra) * 4, err));
    uint32_t *d = (uint32_t *)(void *)b->def.data;
    for (int64_t i = 0; i < b->n_levels; i++) d[i] = md;
    b->def.len = (size_t)b->n_levels * 4;
    return DK_OK;
  }
  return dk__buf_reserve(&b->def, (size_t)extra * 4, err);
}

/* Flat nullable leaf (max_rep == 0, max_def > 0): appends the definition levels of the next
** n slots of the current page to b and sets *dense_out to how many equal max_def. RLE runs
** are taken whole: while a batch has seen only max_def levels, b->def stays empty (the
** assembly reads an empty def buffer as "every slot valid"), so the common all-valid page
** costs one run header, not a level per value. */
static dk_status flat_levels(pq_col *c, int64_t n, pq_leaf_batch *b, int64_t *dense_out,
                             dk_error *err) {
  const uint32_t md = (uint32_t)c->max_def;
  /* a bw-bit level can only exceed max_def when max_def < 2^bw - 1 */
  const int bw = bit_width_of(c->max_def);
  const int check = bw >= 32 || md < ((1u << bw) - 1);
  int64_t dense = 0;
  dk_status st = DK_OK;
  dk_pq_rle *d = &c->def_dec;
  while (n > 0) {
    int64_t k;
    uint32_t *out;
    if (c->def_msb) {
      k = n;
      DK_RETURN_NOT_OK(def_materialize(b, md, k, err));
      out = (uint32_t *)(void *)(b->def.data + b->def.len);
      /* deprecated BIT_PACKED (MSB first): from any bit position, as segments need not
      ** start on a byte */
      const uint64_t bw64 = (uint64_t)c->def_bw, first = (uint64_t)c->page_lv_pos * bw64;
      if ((first + (uint64_t)k * bw64 + 7) / 8 > c->def_bp_len)
        return col_fail(c, err, "BIT_PACKED levels exhausted");
      for (int64_t i = 0; i < k; i++) {
        uint32_t v = 0;
        for (uint64_t bit = first + (uint64_t)i * bw64, e = bit + bw64; bit < e; bit++)
          v = (v << 1) | ((c->def_bp[bit >> 3] >> (7 - (bit & 7))) & 1u);
        out[i] = v;
      }
      c->page_lv_pos += k;
    } else {
      if (d->rle_left <= 0 && d->bp_left <= 0) {
        st = dk_pq__rle_next(d, err);
        if (st) break;
      }
      if (d->rle_left > 0) {
        k = DK_MIN(d->rle_left, n);
        const uint32_t v = d->rle_value;
        if (v > md) return col_fail(c, err, "definition level above the maximum %d", c->max_def);
        if (v != md || b->def.len > 0) {
          DK_RETURN_NOT_OK(def_materialize(b, md, k, err));
          out = (uint32_t *)(void *)(b->def.data + b->def.len);
          for (int64_t i = 0; i < k; i++) out[i] = v;
          b->def.len += (size_t)k * 4;
        }
        if (v == md) dense += k;
        d->rle_left -= k;
        b->n_levels += k;
        n -= k;
        continue;
      }
      k = DK_MIN(d->bp_left, n);
      DK_RETURN_NOT_OK(def_materialize(b, md, k, err));
      out = (uint32_t *)(void *)(b->def.data + b->def.len);
      st = dk_pq__rle_get(d, out, k, err);
    }
    if (st) break;
    uint32_t bad = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < k; i++) {
      bad |= check & (out[i] > md);
      cnt += out[i] == md;
    }
    if (bad) return col_fail(c, err, "definition level above the maximum %d", c->max_def);
    dense += cnt;
    b->def.len += (size_t)k * 4;
    b->n_levels += k;
    n -= k;
  }
  if (st) return dk__error_prefix(err, "levels of page at offset %lld", (long long)c->page_off), st;
  *dense_out = dense;
  return DK_OK;
}

dk_status dk_pq__col_read(pq_col *c, int64_t rows, pq_leaf_batch *b, dk_error *err) {
  batch_clear(b, c->type == PQ_BYTE_ARRAY);
  if (c->type == PQ_BYTE_ARRAY && b->offs.len != 4) return dk__error_set(err, DK_NOMEM, "out of memory");
  int eof = 0;
  if (c->max_rep == 0) { /* flat: levels (if nullable) straight into b, values per page segment */
    int64_t left = rows;
    while (left > 0) {
      if (c->page_left == 0) {
        DK_RETURN_NOT_OK(next_data_page(c, &eof, err));
        if (eof) break;
      }
      int64_t take = DK_MIN(c->page_left, left), dense = take;
      if (c->max_def > 0) DK_RETURN_NOT_OK(flat_levels(c, take, b, &dense, err));
      DK_RETURN_NOT_OK(decode_values(c, dense, b, err));
      c->page_left -= take;
      left -= take;
    }
    if (left > 0)
      return dk__error_set(err, DK_CORRUPT,
                           "corrupt column chunk at offset %lld: it ends %lld rows short of its row group",
                           (long long)c->chunk_off, (long long)left);
    if (c->max_def == 0) b->n_levels = rows;
    b->hint_vals = b->vals.len;
    b->hint_data = b->data.len;
    return DK_OK;
  }
  int64_t started = 0; /* repeated: rows start where rep == 0 */
  for (;;) {
    if (c->la_pos == c->la_n) {
      if (c->page_left == 0) {
        DK_RETURN_NOT_OK(next_data_page(c, &eof, err));
        if (eof) break;
      }
      DK_RETURN_NOT_OK(refill(c, err));
    }
    const uint32_t *def = (const uint32_t *)c->la_def.data;
    const uint32_t *rep = (const uint32_t *)c->la_rep.data;
    int64_t i = c->la_pos, j = i, end = c->la_n;
    while (j < end) {
      if (rep[j] == 0) {
        if (started == rows) break;
        started++;
      } else if (started == 0) {
        return col_fail(c, err, "the first level of a row has a non-zero repetition level");
      }
      j++;
    }
    int64_t seg = j - i;
    if (seg == 0) break;
    DK_RETURN_NOT_OK(dk__buf_append(&b->def, def + i, (size_t)seg * 4, err));
    DK_RETURN_NOT_OK(dk__buf_append(&b->rep, rep + i, (size_t)seg * 4, err));
    int64_t dense = 0;
    uint32_t md = (uint32_t)c->max_def;
    for (int64_t k = i; k < j; k++) dense += def[k] == md;
    DK_RETURN_NOT_OK(decode_values(c, dense, b, err));
    b->n_levels += seg;
    c->la_pos = j;
    if (j < end) break;
  }
  if (started < rows)
    return dk__error_set(err, DK_CORRUPT,
                         "corrupt column chunk at offset %lld: it ends %lld rows short of its row group",
                         (long long)c->chunk_off, (long long)(rows - started));
  b->hint_vals = b->vals.len;
  b->hint_data = b->data.len;
  return DK_OK;
}
