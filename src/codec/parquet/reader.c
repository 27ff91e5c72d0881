/*
** reader.c — the public Parquet reader (include/dk/parquet.h): open a local file (pread or
** mmap), parse its footer (parquet-format README "File format": magic, FileMetaData, footer
** length), expose schema/row-group/statistics facts, and stream selected columns and row
** groups as Arrow struct batches.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>

#include "codec/parquet/reader.h"

/* ---- file --------------------------------------------------------------------------------- */

void dk_pq__file_ref(dk_parquet_file *f) { __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED); }

void dk_parquet_file_free(dk_parquet_file *f) {
  if (!f) return;
  if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  if (f->map) munmap(f->map, (size_t)f->size);
  if (f->fd >= 0) close(f->fd);
  dk__free(f->alloc, f->footer);
  dk__free(f->alloc, f->path);
  dk__arena_dispose(&f->arena);
  dk__free(f->alloc, f);
}

dk_status dk_pq__file_read(const dk_parquet_file *f, int64_t off, size_t len, uint8_t *dst,
                           const uint8_t **view, dk_error *err) {
  if (off < 0 || off > f->size || (int64_t)len > f->size - off)
    return dk__error_set(err, DK_CORRUPT, "read of %zu bytes at offset %lld past the end (%lld bytes)",
                         len, (long long)off, (long long)f->size);
  if (f->map) {
    *view = f->map + off;
    return DK_OK;
  }
  size_t done = 0;
  while (done < len) {
    ssize_t r = pread(f->fd, dst + done, len - done, (off_t)(off + (int64_t)done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return dk__error_set(err, DK_IO, "read at offset %lld failed: %s", (long long)off, strerror(errno));
    if (r == 0) return dk__error_set(err, DK_CORRUPT, "file shrank while reading at offset %lld", (long long)off);
    done += (size_t)r;
  }
  *view = dst;
  return DK_OK;
}

static dk_status parse_footer(dk_parquet_file *f, dk_error *err) {
  uint8_t tail[8], head[4];
  const uint8_t *v;
  if (f->size < 12)
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset 0: %lld bytes is too small", (long long)f->size);
  DK_RETURN_NOT_OK(dk_pq__file_read(f, 0, 4, head, &v, err));
  if (memcmp(v, "PAR1", 4))
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset 0: bad magic (not a Parquet file)");
  DK_RETURN_NOT_OK(dk_pq__file_read(f, f->size - 8, 8, tail, &v, err));
  if (!memcmp(v + 4, "PARE", 4))
    return dk__error_set(err, DK_UNSUPPORTED, "encrypted Parquet footers are not supported");
  if (memcmp(v + 4, "PAR1", 4))
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet file at offset %lld: bad trailing magic",
                         (long long)(f->size - 4));
  uint32_t flen;
  memcpy(&flen, v, 4);
  if ((int64_t)flen > f->size - 12)
    return dk__error_set(err, DK_CORRUPT,
                         "corrupt Parquet file at offset %lld: footer length %u exceeds the file (%lld bytes)",
                         (long long)(f->size - 8), flen, (long long)f->size);
  int64_t foff = f->size - 8 - flen;
  f->footer = dk__malloc(f->alloc, flen ? flen : 1);
  if (!f->footer) return dk__error_set(err, DK_NOMEM, "out of memory (footer)");
  DK_RETURN_NOT_OK(dk_pq__file_read(f, foff, flen, f->footer, &v, err));
  if (v != f->footer) memcpy(f->footer, v, flen);
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

dk_status dk_parquet_open(dk_parquet_file **out, const char *path,
                          const dk_parquet_open_options *opts, dk_error *err) {
  *out = NULL;
  DK_CHECK_OPTIONS_VERSION(opts, DK_PARQUET_OPEN_OPTIONS_VERSION, "dk_parquet_open", err);
  const dk_allocator *a = opts ? opts->alloc : NULL;
  dk_parquet_file *f = dk__calloc(a, 1, sizeof *f);
  if (!f) return dk__error_set(err, DK_NOMEM, "out of memory");
  f->alloc = a;
  f->skip_page_crc = opts && opts->version >= 2 && opts->skip_page_checksums;
  f->refs = 1;
  f->fd = -1;
  dk__arena_init(&f->arena, a, 16384);
  dk_status st = DK_OK;
  f->path = dk__strdup(a, path);
  if (!f->path) {
    st = dk__error_set(err, DK_NOMEM, "out of memory");
    goto cleanup;
  }
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    st = dk__error_set(err, errno == ENOENT ? DK_NOT_FOUND : DK_IO, "cannot open: %s", strerror(errno));
    goto cleanup;
  }
  if (opts && opts->file_size > 0) {
    f->size = opts->file_size;
  } else {
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) {
      st = dk__error_set(err, DK_IO, "cannot stat: %s", strerror(errno));
      goto cleanup;
    }
    if (S_ISDIR(sb.st_mode)) {
      st = dk__error_set(err, DK_IO, "is a directory");
      goto cleanup;
    }
    f->size = sb.st_size;
  }
  if (opts && opts->use_mmap && f->size > 0) {
    void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (m == MAP_FAILED) {
      st = dk__error_set(err, DK_IO, "mmap failed: %s", strerror(errno));
      goto cleanup;
    }
    f->map = m;
  }
  DK_CHECK_GOTO(parse_footer(f, err));
  *out = f;
  return DK_OK;
cleanup:
  dk__error_prefix(err, "%s", path);
  dk_parquet_file_free(f);
  return st;
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
