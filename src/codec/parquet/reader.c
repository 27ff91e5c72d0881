/*
** reader.c — the public Parquet reader (include/dk/parquet.h): open a file through a byte
** source (io/source.h: any dk_storage backend, or memory), parse its footer (parquet-format
** README "File format": magic, FileMetaData, footer length), expose schema/row-group/statistics
** facts, and stream selected columns and row groups as Arrow struct batches. dk_parquet_open
** opens a local path through the local backend; nothing here touches the filesystem.
*/
#include <stdio.h>
#include <stdlib.h>

#include <libdeflate.h>

#include "codec/parquet/reader.h"

/* Bytes read from the end of the file at open, with the 4-byte head in the same batch: the
** footer of most files fits, so opening costs one (batched) read. */
#define FOOTER_READ ((size_t)64 << 10)

/* ---- file --------------------------------------------------------------------------------- */

void dk_pq__file_ref(dk_parquet_file *f) { __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED); }

void dk_parquet_file_free(dk_parquet_file *f) {
  if (!f) return;
  if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  dk_io__source_release(&f->src);
  if (f->own_sto) f->own_sto->free(f->own_sto);
  dk__free(f->alloc, f->footer);
  dk__free(f->alloc, f->path);
  dk__arena_dispose(&f->arena);
  dk__free(f->alloc, f);
}

dk_status dk_pq__file_read(const dk_parquet_file *f, int64_t off, size_t len, uint8_t *dst,
                           const uint8_t **view, dk_error *err) {
  /* the source is only read, never changed: reads from several threads are fine */
  return dk_io__source_read((dk__source *)&f->src, off, len, dst, view, err);
}

/* Reads the head magic and the tail (footer length, magic and as much of the footer as
** FOOTER_READ holds) in one batch; a longer footer costs a second read. f->footer receives the
** footer's flen bytes. */
static dk_status read_footer(dk_parquet_file *f, uint32_t *flen_out, int64_t *foff_out,
                             dk_error *err) {
  int64_t size = f->size;
  size_t tail = (size_t)DK_MIN((int64_t)FOOTER_READ, size - 4);
  uint8_t head[4];
  uint8_t *buf = dk__malloc(f->alloc, tail);
  DK_RETURN_IF(!buf, DK_NOMEM, err, "out of memory (footer)");
  dk_byte_range r[2] = {{0, 4, head}, {size - (int64_t)tail, tail, buf}};
  dk_status st = dk_io__source_read_ranges(&f->src, r, 2, err);
  if (!st && memcmp(head, "PAR1", 4))
    st = dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset 0: bad magic (not a Parquet file)");
  const uint8_t *t8 = buf + tail - 8;
  if (!st && !memcmp(t8 + 4, "PARE", 4))
    st = dk__error_set(err, DK_UNSUPPORTED, "encrypted Parquet footers are not supported");
  if (!st && memcmp(t8 + 4, "PAR1", 4))
    st = dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset %lld: bad trailing magic",
                       (long long)(size - 4));
  uint32_t flen = 0;
  if (!st) {
    memcpy(&flen, t8, 4);
    if ((int64_t)flen > size - 12)
      st = dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet file at offset %lld: footer length %u exceeds the file (%lld bytes)",
                         (long long)(size - 8), flen, (long long)size);
  }
  if (st) {
    dk__free(f->alloc, buf);
    return st;
  }
  int64_t foff = size - 8 - flen;
  if ((size_t)flen + 8 <= tail) { /* the footer is in the tail: move it to the front */
    memmove(buf, t8 - flen, flen);
    f->footer = buf;
  } else { /* read the part before the tail */
    f->footer = dk__malloc(f->alloc, flen);
    if (!f->footer) {
      dk__free(f->alloc, buf);
      return dk__error_set(err, DK_NOMEM, "out of memory (footer of %u bytes)", flen);
    }
    size_t have = tail - 8, missing = flen - have;
    memcpy(f->footer + missing, buf, have);
    dk__free(f->alloc, buf);
    dk_byte_range rest = {foff, missing, f->footer};
    DK_RETURN_NOT_OK(dk_io__source_read_ranges(&f->src, &rest, 1, err));
  }
  *flen_out = flen;
  *foff_out = foff;
  return DK_OK;
}

static dk_status parse_footer(dk_parquet_file *f, dk_error *err) {
  if (f->size < 12)
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset 0: %lld bytes is too small", (long long)f->size);
  uint32_t flen = 0;
  int64_t foff = 0;
  DK_RETURN_NOT_OK(read_footer(f, &flen, &foff, err));
  DK_RETURN_NOT_OK(dk_pq__parse_file_meta(&f->meta, &f->arena, f->footer, flen, foff, err));
  DK_RETURN_NOT_OK(dk_pq__build_schema(&f->root, &f->leaves, &f->n_leaves, &f->arena,
                                       f->meta.schema, f->meta.n_schema, err));
  int64_t first = 0;
  for (int i = 0; i < f->meta.n_row_groups; i++) {
    pq_row_group *rg = &f->meta.row_groups[i];
    if (rg->n_columns != f->n_leaves)
      return dk__error_set(err, DK_CORRUPT,
                           "corrupt Parquet footer: row group %d has %d column chunks for %d leaf columns",
                           i, rg->n_columns, f->n_leaves);
    rg->first_row = first;
    if (rg->num_rows > INT64_MAX - first) return dk__error_set(err, DK_CORRUPT, "corrupt Parquet footer: row counts overflow");
    first += rg->num_rows;
    if (rg->n_columns > 0) {
      const pq_column_meta *cm = &rg->columns[0];
      rg->start = cm->data_page_offset;
      if (cm->dictionary_page_offset > 0 && cm->dictionary_page_offset < rg->start)
        rg->start = cm->dictionary_page_offset;
    } else {
      rg->start = rg->file_offset;
    }
  }
  return dk_pq__build_anodes(f, err);
}

dk_status dk_pq__open_source(dk_parquet_file **out, dk__source *src, const dk_pq__open_opts *o,
                             dk_error *err) {
  *out = NULL;
  const dk_allocator *alloc = o ? o->alloc : NULL;
  dk_parquet_file *f = dk__calloc(alloc, 1, sizeof *f);
  if (!f) {
    dk_io__source_release(src);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  f->alloc = alloc;
  f->skip_page_crc = o && o->skip_page_crc;
  f->refs = 1;
  f->src = *src; /* moved */
  memset(src, 0, sizeof *src);
  f->map = f->src.view;
  f->size = f->src.size;
  dk__arena_init(&f->arena, alloc, 16384);
  dk_status st = DK_OK;
  f->path = dk__strdup(alloc, f->src.name ? f->src.name : "");
  if (!f->path) {
    st = dk__error_set(err, DK_NOMEM, "out of memory");
    goto cleanup;
  }
  st = parse_footer(f, err);
  if (st) {
    dk__error_prefix(err, "%s", f->path);
    goto cleanup;
  }
  *out = f;
  return DK_OK;
cleanup:
  dk_parquet_file_free(f);
  return st;
}

dk_status dk_pq__open_storage(dk_parquet_file **out, dk_storage *sto, const char *key,
                              const dk_pq__open_opts *o, dk_error *err) {
  *out = NULL;
  dk__source src;
  dk__source_opts so = {o ? o->size : 0, o ? o->map : 0, o ? o->alloc : NULL};
  DK_RETURN_NOT_OK(dk_io__source_open(&src, sto, key, &so, err));
  return dk_pq__open_source(out, &src, o, err);
}

dk_status dk_parquet_open(dk_parquet_file **out, const char *path,
                          const dk_parquet_open_options *opts, dk_error *err) {
  *out = NULL;
  DK_CHECK_OPTIONS_VERSION(opts, DK_PARQUET_OPEN_OPTIONS_VERSION, "dk_parquet_open", err);
  dk_pq__open_opts o = {0};
  if (opts) {
    o.alloc = opts->alloc;
    o.size = opts->file_size;
    o.map = opts->use_mmap;
    o.skip_page_crc = opts->version >= 2 && opts->skip_page_checksums;
  }
  dk_storage *sto = NULL;
  DK_RETURN_NOT_OK(dk_storage_local_new(&sto, o.alloc, err));
  dk_status st = dk_pq__open_storage(out, sto, path, &o, err);
  if (st) {
    sto->free(sto);
    return st;
  }
  (*out)->own_sto = sto;
  return DK_OK;
}

dk_status dk_pq__page_check_crc(const dk_parquet_file *f, const pq_page_header *h,
                                const uint8_t *body, size_t len, int64_t page_off,
                                dk_error *err) {
  if (!h->has_crc || f->skip_page_crc) return DK_OK;
  if (libdeflate_crc32(0, body, len) == h->crc) return DK_OK;
  return dk__error_set(err, DK_CORRUPT,
                       "corrupt page at offset %lld: checksum mismatch (the CRC-32 in the page "
                       "header does not match the page)",
                       (long long)page_off);
}

int64_t dk_parquet_num_rows(const dk_parquet_file *f) { return f->meta.num_rows; }
int dk_parquet_num_row_groups(const dk_parquet_file *f) { return f->meta.n_row_groups; }
int dk_parquet_num_columns(const dk_parquet_file *f) { return f->n_leaves; }

dk_status dk_parquet_schema(struct ArrowSchema *out, const dk_parquet_file *f, dk_error *err) {
  return dk_pq__anode_schema(out, f->aroot, err);
}

dk_status dk_parquet_row_group(dk_parquet_row_group_info *out, const dk_parquet_file *f,
                               int row_group, dk_error *err) {
  if (row_group < 0 || row_group >= f->meta.n_row_groups)
    return dk__error_set(err, DK_INVALID, "%s: row group %d out of range (%d)", f->path, row_group,
                         f->meta.n_row_groups);
  const pq_row_group *rg = &f->meta.row_groups[row_group];
  out->num_rows = rg->num_rows;
  out->start = rg->start;
  int64_t cs = 0;
  for (int i = 0; i < rg->n_columns; i++) cs += rg->columns[i].total_compressed;
  out->compressed_size = rg->total_compressed_size > 0 ? rg->total_compressed_size : cs;
  out->uncompressed_size = rg->total_byte_size;
  out->first_row = rg->first_row;
  return DK_OK;
}

/* ---- paths ------------------------------------------------------------------------------ */

/* Appends the Arrow-style dotted path of each leaf below n (MAP "entries" omitted). */
static int find_leaf_path(const pq_anode *n, const char *path, size_t plen, size_t pos, int top) {
  if (!top && n->name && !(n->kind == PQ_AN_STRUCT && !strcmp(n->name, "entries") && n->pq &&
                           n->pq->el->repetition == PQ_REPEATED)) {
    size_t l = strlen(n->name);
    if (pos > 0) {
      if (pos >= plen || path[pos] != '.') return -1;
      pos++;
    }
    if (plen - pos < l || memcmp(path + pos, n->name, l)) return -1;
    pos += l;
  }
  if (n->kind == PQ_AN_LEAF) return pos == plen ? n->leaf : -1;
  for (int i = 0; i < n->n_children; i++) {
    int r = find_leaf_path(n->children[i], path, plen, pos, 0);
    if (r >= 0) return r;
  }
  return -1;
}

int dk_parquet_column_index(const dk_parquet_file *f, const char *dotted_path) {
  size_t plen = strlen(dotted_path);
  int r = find_leaf_path(f->aroot, dotted_path, plen, 0, 1);
  if (r >= 0) return r;
  /* the full Parquet path (path_in_schema) */
  for (int i = 0; i < f->n_leaves; i++) {
    char buf[1024];
    size_t n = 0;
    const pq_node *chain[128];
    int depth = 0;
    for (const pq_node *p = f->leaves[i]; p && p->parent && depth < 128; p = p->parent) chain[depth++] = p;
    for (int d = depth - 1; d >= 0; d--)
      n += (size_t)snprintf(buf + DK_MIN(n, sizeof buf - 1), sizeof buf - DK_MIN(n, sizeof buf - 1),
                            "%s%s", d == depth - 1 ? "" : ".", chain[d]->el->name);
    if (n < sizeof buf && !strcmp(buf, dotted_path)) return i;
  }
  return -1;
}

dk_status dk_parquet_column_stats_get(dk_parquet_column_stats *out, const dk_parquet_file *f,
                                      int row_group, int column, dk_error *err) {
  memset(out, 0, sizeof *out);
  if (row_group < 0 || row_group >= f->meta.n_row_groups || column < 0 || column >= f->n_leaves)
    return dk__error_set(err, DK_INVALID, "%s: row group %d / column %d out of range", f->path,
                         row_group, column);
  const pq_column_meta *cm = &f->meta.row_groups[row_group].columns[column];
  out->version = DK_PARQUET_COLUMN_STATS_VERSION;
  out->num_values = cm->num_values;
  out->physical_type = (dk_parquet_physical_type)cm->type;
  const pq_schema_el *el = f->leaves[column]->el;
  if (cm->type == PQ_INT64 && el->logical.kind == PQ_LT_TIMESTAMP)
    out->timestamp_unit = el->logical.unit;
  else if (cm->type == PQ_INT64 && el->logical.kind == PQ_LT_NONE &&
           (el->converted == PQ_CT_TIMESTAMP_MILLIS || el->converted == PQ_CT_TIMESTAMP_MICROS))
    out->timestamp_unit = el->converted == PQ_CT_TIMESTAMP_MILLIS ? PQ_UNIT_MILLIS : PQ_UNIT_MICROS;
  if (!cm->has_stats) return DK_OK;
  const pq_stats *s = &cm->stats;
  out->has_null_count = s->has_null_count;
  out->null_count = s->null_count;
  /* legacy min/max used signed byte order: only trustworthy for numeric types */
  int t = cm->type;
  int legacy_ok = t == PQ_INT32 || t == PQ_INT64 || t == PQ_FLOAT || t == PQ_DOUBLE || t == PQ_BOOLEAN;
  if (s->has_min && s->has_max && (!s->legacy || legacy_ok)) {
    out->has_min_max = 1;
    out->min = s->min, out->min_len = s->min_len;
    out->max = s->max, out->max_len = s->max_len;
  }
  return DK_OK;
}
