/*
** pages.c — page-level access to a flat BYTE_ARRAY column (walks the pages of its column
** chunks as stored and decodes one stored page on demand) and a leaf reader that hands out
** levels and dense values per batch without Arrow assembly (see pages.h).
**
** Follows apache/parquet-format: README "Data Pages" / "Column chunks" (page layout: v1
** pages hold 4-byte-length-prefixed RLE def levels then values inside the compressed body;
** v2 pages hold uncompressed levels before the maybe-compressed values) and Encodings.md
** (PLAIN BYTE_ARRAY, RLE_DICTIONARY / PLAIN_DICTIONARY indices, RLE/bit-packed hybrid).
*/
#include "codec/parquet/pages.h"

#include "codec/parquet/reader.h"

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int level_width(int max_level) {
  int bw = 0;
  while ((1 << bw) <= max_level) bw++;
  return bw;
}

/* Makes chunk bytes [pos, pos + need) addressable at *p: a view of the mmap or of the whole
** chunk read ahead (whole != NULL), or read into win (valid until the next call). */
static dk_status chunk_get(const dk_parquet_file *f, int64_t start, const uint8_t *whole,
                           size_t pos, size_t need, dk_buf *win, const uint8_t **p,
                           dk_error *err) {
  if (whole) {
    *p = whole + pos;
    return DK_OK;
  }
  if (f->map) return dk_pq__file_read(f, start + (int64_t)pos, need, NULL, p, err);
  dk__buf_clear(win);
  DK_RETURN_NOT_OK(dk__buf_reserve(win, need ? need : 1, err));
  DK_RETURN_NOT_OK(dk_pq__file_read(f, start + (int64_t)pos, need, (uint8_t *)win->data, p, err));
  *p = (const uint8_t *)win->data;
  return DK_OK;
}

static dk_status walk_chunk(const dk_parquet_file *f, int g, int leaf, const char *dotted_path,
                            dk_buf *win, dk_pq__page_fn fn, void *ctx, int64_t *row_io,
                            dk_error *err) {
  const pq_node *ln = f->leaves[leaf];
  const pq_row_group *rg = &f->meta.row_groups[g];
  const pq_column_meta *cm = &rg->columns[leaf];
  int64_t row = *row_io;
  if (cm->type != PQ_BYTE_ARRAY)
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet footer: column chunk type of '%s'",
                         dotted_path);
  int64_t start, len;
  if (!dk_pq__chunk_range(f, g, leaf, &start, &len))
    return dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet footer: column chunk at offset %lld, %lld bytes, lies "
                         "outside the file (%lld bytes)",
                         (long long)start, (long long)len, (long long)f->size);
  size_t pos = 0, clen = (size_t)len;
  /* where every read is a round trip (an object store), the whole chunk comes in one read */
  const uint8_t *whole = NULL;
  if (f->src.coalesce && !f->map && clen) {
    dk__buf_clear(win);
    DK_RETURN_NOT_OK(dk__buf_reserve(win, clen, err));
    DK_RETURN_NOT_OK(dk_pq__file_read(f, start, clen, (uint8_t *)win->data, &whole, err));
  }
  int64_t rg_rows = 0;
  int have_dict = 0;
  while (pos < clen) {
    pq_page_header h;
    size_t hl = 0;
    int64_t off = start + (int64_t)pos;
    /* the header's size is unknown: parse from a probe that doubles until it fits */
    size_t left = clen - pos, probe = DK_MIN(left, (size_t)1024);
    for (;;) {
      const uint8_t *hp;
      DK_RETURN_NOT_OK(chunk_get(f, start, whole, pos, probe, win, &hp, err));
      dk_error pe;
      dk_error_init(&pe);
      dk_status hs = dk_pq__parse_page_header(&h, hp, probe, off, &hl, &pe);
      if (hs == DK_OK) break;
      if (probe == left || hs != DK_CORRUPT) {
        if (err) *err = pe;
        return hs;
      }
      probe = probe > left / 2 ? left : probe * 2;
    }
    if (h.compressed_size < 0 || (size_t)h.compressed_size > left - hl)
      return dk__error_set(err, DK_CORRUPT, "page at offset %lld: extends past the column chunk",
                           (long long)off);
    if (h.type != PQ_PAGE_DICT && h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2) {
      pos += hl + (size_t)h.compressed_size;
      continue;
    }
    const uint8_t *bp;
    DK_RETURN_NOT_OK(chunk_get(f, start, whole, pos + hl, (size_t)h.compressed_size, win, &bp, err));
    DK_RETURN_NOT_OK(dk_pq__page_check_crc(f, &h, bp, (size_t)h.compressed_size, off, err));
    dk_pq__page pg;
    memset(&pg, 0, sizeof pg);
    pg.data = bp;
    pg.len = (uint32_t)h.compressed_size;
    pg.usize = h.uncompressed_size;
    pg.codec = (uint8_t)cm->codec;
    pg.max_def = ln->max_def;
    pg.is_compressed = 1;
    pg.offset = off;
    pos += hl + (size_t)h.compressed_size;
    if (h.type == PQ_PAGE_DICT) {
      if (!h.has_dict || (h.encoding != PQ_ENC_PLAIN && h.encoding != PQ_ENC_PLAIN_DICT))
        return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: dictionary page layout",
                             (long long)off);
      pg.is_dict = 1;
      pg.num_values = h.num_values;
      pg.encoding = PQ_ENC_PLAIN;
      have_dict = 1;
      DK_RETURN_NOT_OK(fn(ctx, &pg, row, err));
      continue;
    }
    if ((h.type == PQ_PAGE_DATA && !h.has_data) || (h.type == PQ_PAGE_DATA_V2 && !h.has_v2))
      return dk__error_set(err, DK_CORRUPT, "page at offset %lld: data page without its header",
                           (long long)off);
    if (h.encoding != PQ_ENC_PLAIN && h.encoding != PQ_ENC_PLAIN_DICT &&
        h.encoding != PQ_ENC_RLE_DICT)
      return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: encoding %s", (long long)off,
                           dk_pq__encoding_name(h.encoding));
    if (h.num_values < 0 || h.num_values > rg->num_rows - rg_rows)
      return dk__error_set(err, DK_CORRUPT, "page at offset %lld: values past the row group's rows",
                           (long long)off);
    if (h.encoding != PQ_ENC_PLAIN && !have_dict)
      return dk__error_set(err, DK_CORRUPT,
                           "page at offset %lld: dictionary-encoded page without a dictionary",
                           (long long)off);
    pg.num_values = h.num_values;
    pg.encoding = (uint8_t)h.encoding;
    if (h.type == PQ_PAGE_DATA_V2) {
      if (h.rep_bytes != 0 || h.def_bytes < 0 || h.def_bytes > h.compressed_size ||
          h.def_bytes > h.uncompressed_size)
        return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: v2 level layout",
                             (long long)off);
      pg.v2 = 1;
      pg.def_bytes = h.def_bytes;
      pg.is_compressed = (uint8_t)(h.is_compressed != 0);
    } else if (ln->max_def > 0) {
      if (h.def_encoding != PQ_ENC_RLE)
        return dk__error_set(err, DK_UNSUPPORTED, "page at offset %lld: level encoding %s",
                             (long long)off, dk_pq__encoding_name(h.def_encoding));
      pg.def_encoding = PQ_ENC_RLE;
    }
    DK_RETURN_NOT_OK(fn(ctx, &pg, row + rg_rows, err));
    rg_rows += h.num_values;
  }
  if (rg_rows != rg->num_rows)
    return dk__error_set(err, DK_CORRUPT,
                         "column '%s' of row group %d: its pages' values do not match the row "
                         "group's %lld rows",
                         dotted_path, g, (long long)rg->num_rows);
  *row_io = row + rg_rows;
  return DK_OK;
}

dk_status dk_pq__walk_pages(dk_parquet_file *f, const char *dotted_path, dk_pq__page_fn fn,
                            void *ctx, dk_error *err) {
  int leaf = dk_parquet_column_index(f, dotted_path);
  if (leaf < 0 || leaf >= f->n_leaves)
    return dk__error_set(err, DK_UNSUPPORTED, "page walk: no column '%s'", dotted_path);
  const pq_node *ln = f->leaves[leaf];
  if (ln->el->type != PQ_BYTE_ARRAY || ln->max_rep != 0 || ln->max_def > 15)
    return dk__error_set(err, DK_UNSUPPORTED, "page walk: '%s' is not a flat BYTE_ARRAY column",
                         dotted_path);
  int64_t row = 0;
  dk_buf win; /* without an mmap: the page being handed to fn */
  dk__buf_init(&win, f->alloc);
  dk_status s = DK_OK;
  for (int g = 0; s == DK_OK && g < f->meta.n_row_groups; g++) {
    s = walk_chunk(f, g, leaf, dotted_path, &win, fn, ctx, &row, err);
  }
  dk__buf_dispose(&win);
  return s;
}


/* Decompresses src (len bytes) to exactly usize bytes in b (with one spare byte after
** them); a codec of UNCOMPRESSED or !compressed views src, or copies it into b when `copy`. */
static dk_status body(const dk_pq__page *pg, const uint8_t *src, size_t len, int64_t usize,
                      int compressed, int copy, dk_buf *b, const uint8_t **out, size_t *out_len,
                      dk_error *err) {
  if (!compressed || pg->codec == DK_PQ_CODEC_UNCOMPRESSED) {
    if (copy) {
      dk__buf_clear(b);
      DK_RETURN_NOT_OK(dk__buf_reserve(b, len + 1, err));
      if (len) memcpy(b->data, src, len);
      b->len = len;
      src = (const uint8_t *)b->data;
    }
    *out = src;
    *out_len = len;
    return DK_OK;
  }
  if (usize < 0 || usize > (int64_t)len * 4096 + (1 << 20) || usize > (1 << 30))
    return dk__error_set(err, DK_CORRUPT, "implausible decompressed page size for %zu bytes",
                         len);
  dk__buf_clear(b);
  DK_RETURN_NOT_OK(dk__buf_reserve(b, (size_t)usize + 1, err));
  DK_RETURN_NOT_OK(dk_pq__decompress(pg->codec, src, len, (uint8_t *)b->data, (size_t)usize, err));
  b->len = (size_t)usize;
  *out = (const uint8_t *)b->data;
  *out_len = (size_t)usize;
  return DK_OK;
}

dk_status dk_pq__page_decode_text(const dk_pq__page *pg, const dk_pq__page *dict,
                                  dk_buf *scratch, dk_buf *text, uint32_t *offs, dk_error *err) {
  dk__buf_clear(text);
  dk__buf_clear(scratch);
  int64_t n = pg->num_values;
  /* PLAIN pages are decoded in place in `text` (each value's NUL overwrites the first byte
  ** of the next value's length, read before); dictionary pages gather into it */
  int plain = pg->encoding == PQ_ENC_PLAIN;
  const uint8_t *lv = NULL, *vals;
  size_t lv_len = 0, vlen;
  dk_buf page;
  dk__buf_init(&page, scratch->alloc);
  dk_status s;
  if (pg->v2) {
    lv = pg->data;
    lv_len = (size_t)pg->def_bytes;
    s = body(pg, pg->data + lv_len, pg->len - lv_len, (int64_t)pg->usize - (int64_t)lv_len,
             pg->is_compressed, plain, plain ? text : &page, &vals, &vlen, err);
  } else {
    s = body(pg, pg->data, pg->len, pg->usize, 1, plain, plain ? text : &page, &vals, &vlen, err);
    if (s == DK_OK && pg->max_def > 0) {
      if (vlen < 4 || rd32(vals) > vlen - 4) {
        s = dk__error_set(err, DK_CORRUPT, "page: def level length exceeds the page");
      } else {
        lv = vals + 4;
        lv_len = rd32(vals);
        vals += 4 + lv_len;
        vlen -= 4 + lv_len;
      }
    }
  }
  /* def levels -> validity (as offs[i] = 0 / UINT32_MAX for now) */
  int64_t n_dense = n;
  if (s == DK_OK && pg->max_def > 0) {
    dk_pq_rle d;
    dk_pq__rle_init(&d, lv, lv_len, level_width(pg->max_def));
    s = dk_pq__rle_get(&d, offs, n, err);
    n_dense = 0;
    for (int64_t i = 0; s == DK_OK && i < n; i++) {
      bool ok = offs[i] == (uint32_t)pg->max_def;
      offs[i] = ok ? 0 : UINT32_MAX;
      n_dense += ok;
    }
  } else if (s == DK_OK) {
    for (int64_t i = 0; i < n; i++) offs[i] = 0;
  }
  if (s == DK_OK && plain) {
    uint64_t total;
    s = dk_pq__plain_byte_array_size(vals, vlen, n_dense, &total, err);
    if (s == DK_OK) {
      /* vals lies in text->data, which has a spare byte past the page */
      char *base = text->data;
      char *p = (char *)(uintptr_t)vals;
      uint32_t l = n_dense ? rd32((const uint8_t *)p) : 0; /* validated by _size */
      for (int64_t i = 0, k = 0; i < n; i++) {
        if (offs[i] == UINT32_MAX) continue;
        char *v = p + 4, *next = v + l;
        uint32_t nl = ++k < n_dense ? rd32((const uint8_t *)next) : 0;
        *next = 0;
        offs[i] = (uint32_t)(v - base);
        p = next;
        l = nl;
      }
    }
  } else if (s == DK_OK) {
    if (!dict) s = dk__error_set(err, DK_CORRUPT, "page: dictionary-encoded page without a dictionary");
    dk_buf dpage;
    dk__buf_init(&dpage, scratch->alloc);
    const uint8_t *dv = NULL;
    size_t dlen = 0;
    if (s == DK_OK)
      s = body(dict, dict->data, dict->len, dict->usize, 1, 0, &dpage, &dv, &dlen, err);
    int64_t dn = dict ? dict->num_values : 0;
    if (s == DK_OK && (dn < 0 || (uint64_t)dn > dlen / 4))
      s = dk__error_set(err, DK_CORRUPT, "dictionary's value count does not fit its %zu bytes", dlen);
    if (s == DK_OK) s = dk__buf_reserve(scratch, (size_t)(2 * dn + n_dense + 1) * 4, err);
    uint32_t *starts = (uint32_t *)scratch->data, *lens = starts + dn, *idx = lens + dn;
    if (s == DK_OK) s = dk_pq__plain_byte_array_index(dv, dlen, dn, starts, lens, err);
    if (s == DK_OK && n_dense > 0) {
      if (vlen < 1 || vals[0] > 32) {
        s = dk__error_set(err, DK_CORRUPT, "page: bad dictionary index bit width");
      } else {
        dk_pq_rle d;
        dk_pq__rle_init(&d, vals + 1, vlen - 1, vals[0]);
        s = dk_pq__rle_get_indices(&d, idx, n_dense, (uint32_t)dn, err);
      }
    }
    uint64_t total = 0;
    for (int64_t k = 0; s == DK_OK && k < n_dense; k++) total += lens[idx[k]] + 1u;
    if (s == DK_OK && total >= UINT32_MAX) s = dk__error_set(err, DK_CORRUPT, "page: values too large");
    if (s == DK_OK) s = dk__buf_reserve(text, (size_t)total + 1, err);
    if (s == DK_OK) {
      char *o = text->data;
      size_t at = 0;
      int64_t k = 0;
      for (int64_t i = 0; i < n; i++) {
        if (offs[i] == UINT32_MAX) continue;
        uint32_t j = idx[k++];
        memcpy(o + at, dv + starts[j], lens[j]);
        o[at + lens[j]] = 0;
        offs[i] = (uint32_t)at;
        at += lens[j] + 1;
      }
      text->len = at;
    }
    dk__buf_dispose(&dpage);
  }
  dk__buf_dispose(&page);
  return s;
}

/* ---- leaf reader ----------------------------------------------------------------------- */

static dk_status leaf_open_at(dk_pq__leaf **out, dk_parquet_file *f, int leaf, dk_error *err);

struct dk_pq__leaf {
  dk_parquet_file *f;
  int leaf;
  int rg;              /* current row group; -1 before the first */
  int64_t rg_left;     /* rows of it not read yet */
  int open;            /* col is open */
  pq_col col;
  pq_leaf_batch b[2];  /* alternate batches: a batch stays valid through the next read */
  int cur;
};

dk_status dk_pq__leaf_open(dk_pq__leaf **out, dk_parquet_file *f, const char *dotted_path,
                           dk_error *err) {
  *out = NULL;
  int leaf = dk_parquet_column_index(f, dotted_path);
  if (leaf < 0 || leaf >= f->n_leaves)
    return dk__error_set(err, DK_NOT_FOUND, "%s: no column '%s'", f->path, dotted_path);
  return leaf_open_at(out, f, leaf, err);
}

dk_status dk_pq__leaf_open_first(dk_pq__leaf **out, dk_parquet_file *f, const char *top,
                                 dk_error *err) {
  *out = NULL;
  for (int i = 0; i < f->n_leaves; i++) {
    const pq_node *p = f->leaves[i];
    while (p->parent && p->parent->parent) p = p->parent;
    if (p->parent && !strcmp(p->el->name, top)) return leaf_open_at(out, f, i, err);
  }
  return dk__error_set(err, DK_NOT_FOUND, "%s: no column '%s'", f->path, top);
}

dk_status dk_pq__leaf_open_map(dk_pq__leaf **key, dk_pq__leaf **value, dk_parquet_file *f,
                               const char *dotted_path, dk_error *err) {
  *key = *value = NULL;
  const pq_anode *n = f->aroot;
  for (const char *p = dotted_path; n && *p;) {
    const char *dot = strchr(p, '.');
    size_t l = dot ? (size_t)(dot - p) : strlen(p);
    const pq_anode *next = NULL;
    if (n->kind == PQ_AN_STRUCT)
      for (int i = 0; i < n->n_children && !next; i++)
        if (n->children[i]->name && strlen(n->children[i]->name) == l &&
            !memcmp(n->children[i]->name, p, l))
          next = n->children[i];
    n = next;
    p += l + (dot != NULL);
  }
  if (!n) return dk__error_set(err, DK_NOT_FOUND, "%s: no column '%s'", f->path, dotted_path);
  const pq_anode *e = n->kind == PQ_AN_MAP && n->n_children == 1 ? n->children[0] : NULL;
  if (!e || e->n_children != 2 || e->children[0]->kind != PQ_AN_LEAF ||
      e->children[1]->kind != PQ_AN_LEAF)
    return dk__error_set(err, DK_UNSUPPORTED, "%s: '%s' is not a map of two leaves", f->path,
                         dotted_path);
  dk_status s = leaf_open_at(key, f, e->children[0]->leaf, err);
  if (s == DK_OK) s = leaf_open_at(value, f, e->children[1]->leaf, err);
  if (s != DK_OK) {
    dk_pq__leaf_free(*key);
    *key = NULL;
  }
  return s;
}

static dk_status leaf_open_at(dk_pq__leaf **out, dk_parquet_file *f, int leaf, dk_error *err) {
  dk_pq__leaf *l = dk__malloc(f->alloc, sizeof *l);
  if (!l) return dk__error_set(err, DK_NOMEM, "out of memory");
  memset(l, 0, sizeof *l);
  l->f = f;
  l->leaf = leaf;
  l->rg = -1;
  dk_pq__leaf_batch_init(&l->b[0], f->alloc);
  dk_pq__leaf_batch_init(&l->b[1], f->alloc);
  *out = l;
  return DK_OK;
}

void dk_pq__leaf_free(dk_pq__leaf *l) {
  if (!l) return;
  if (l->open) dk_pq__col_close(&l->col);
  dk_pq__leaf_batch_dispose(&l->b[0]);
  dk_pq__leaf_batch_dispose(&l->b[1]);
  dk__free(l->f->alloc, l);
}

int dk_pq__leaf_type(const dk_pq__leaf *l) { return l->f->leaves[l->leaf]->el->type; }
int dk_pq__leaf_max_def(const dk_pq__leaf *l) { return l->f->leaves[l->leaf]->max_def; }
int dk_pq__leaf_max_rep(const dk_pq__leaf *l) { return l->f->leaves[l->leaf]->max_rep; }

int dk_pq__leaf_def_at(const dk_pq__leaf *l, int depth) {
  const pq_node *chain[128];
  int n = 0;
  for (const pq_node *p = l->f->leaves[l->leaf]; p && p->parent && n < 128; p = p->parent)
    chain[n++] = p;
  /* chain[n - 1] is the top-level field */
  if (depth < 0 || depth >= n) return -1;
  return chain[n - 1 - depth]->max_def;
}

dk_status dk_pq__leaf_read(dk_pq__leaf *l, int64_t rows, dk_pq__leaf_data *out, int64_t *got,
                           dk_error *err) {
  memset(out, 0, sizeof *out);
  *got = 0;
  while (l->rg_left == 0) {
    if (l->open) {
      dk_pq__col_close(&l->col);
      l->open = 0;
    }
    if (l->rg + 1 >= l->f->meta.n_row_groups) return DK_OK;
    l->rg++;
    l->rg_left = l->f->meta.row_groups[l->rg].num_rows;
    if (l->rg_left < 0)
      return dk__error_set(err, DK_CORRUPT, "%s: row group %d has a negative row count", l->f->path,
                           l->rg);
    if (l->rg_left == 0) continue;
    DK_RETURN_NOT_OK(dk_pq__col_open(&l->col, l->f, l->rg, l->leaf, l->f->alloc, err));
    l->open = 1;
  }
  int64_t n = DK_MIN(rows, l->rg_left);
  pq_leaf_batch *b = &l->b[l->cur ^= 1];
  DK_RETURN_NOT_OK(dk_pq__col_read(&l->col, n, b, err));
  l->rg_left -= n;
  const pq_node *ln = l->f->leaves[l->leaf];
  out->n_levels = ln->max_def == 0 && ln->max_rep == 0 ? n : b->n_levels;
  out->def = b->def.len ? (const uint32_t *)(const void *)b->def.data : NULL;
  out->rep = b->rep.len ? (const uint32_t *)(const void *)b->rep.data : NULL;
  if (out->def && b->def.len / 4 != (size_t)out->n_levels)
    return dk__error_set(err, DK_INTERNAL, "%s: level count mismatch", l->f->path);
  if (ln->max_rep > 0 && (!out->rep || b->rep.len / 4 != (size_t)out->n_levels))
    return dk__error_set(err, DK_INTERNAL, "%s: repetition level count mismatch", l->f->path);
  out->vals = b->vals.data;
  out->offs = b->offs.len ? (const int32_t *)(const void *)b->offs.data : NULL;
  out->data = b->data.data;
  out->n_dense = b->n_dense;
  *got = n;
  return DK_OK;
}
