/*
** rowgroup.c — row-group and page-range selection inside one data file: the residual filter
** evaluated over a row group's Parquet column statistics, and over the page index (ColumnIndex
** / OffsetIndex, parquet-format PageIndex.md) to find the row ranges worth reading. The
** statistics are viewed as Delta-style per-file stats (PROTOCOL.md "Per-file Statistics") so
** the file-skipping rules of expr/skip.c apply unchanged.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "codec/json/json.h"
#include "expr/skip.h"
#include "scan/scan_int.h"

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int)(yy + (*m <= 2));
}

/* Appends one Parquet min/max statistic (max when is_max) of a leaf whose Arrow type in the
** file is `ff` as the JSON value Delta stats would hold for the column's table type t; false
** when it cannot: unsupported or mismatched types, odd bytes, unsigned integers, INT96
** timestamps (no trustworthy order), NaN or infinite floats, values outside years 1..9999.
** Decimals keep the file's scale (the skipping rules rescale to the table's); timestamps are
** exact (micros; nanos floored, which the skipping rules' 999 us widening covers). */
static bool stat_json(dk_buf *b, const dk_type *t, const char *ff, const dk_parquet_column_stats *cs,
                      int is_max) {
  const uint8_t *v = is_max ? cs->max : cs->min;
  size_t len = is_max ? cs->max_len : cs->min_len;
  int phys = cs->physical_type;
  int64_t x;
  switch (t->id) {
    case DK_TYPE_BYTE:
    case DK_TYPE_SHORT:
    case DK_TYPE_INTEGER:
    case DK_TYPE_LONG:
    case DK_TYPE_DATE:
      if (strcmp(ff, "c") && strcmp(ff, "s") && strcmp(ff, "i") && strcmp(ff, "l") &&
          strcmp(ff, "tdD"))
        return false; /* unsigned, or not an integer in the file */
      if ((t->id == DK_TYPE_DATE) != !strcmp(ff, "tdD")) return false;
      if (phys == 1 && len == 4) {
        int32_t y;
        memcpy(&y, v, 4);
        x = y;
      } else if (phys == 2 && len == 8 && t->id == DK_TYPE_LONG) {
        memcpy(&x, v, 8);
      } else {
        return false;
      }
      if (t->id == DK_TYPE_DATE) {
        int yr;
        unsigned mo, dd;
        if (x < -719162 || x > 2932896) return false; /* years 1..9999 */
        civil_from_days(x, &yr, &mo, &dd);
        return dk__buf_printf(b, NULL, "\"%04d-%02u-%02u\"", yr, mo, dd) == DK_OK;
      }
      return dk__buf_printf(b, NULL, "%" PRId64, x) == DK_OK;
    case DK_TYPE_FLOAT:
    case DK_TYPE_DOUBLE: {
      double d;
      if (phys == 4 && len == 4 && !strcmp(ff, "f")) {
        float fv;
        memcpy(&fv, v, 4);
        d = fv;
      } else if (phys == 5 && len == 8 && !strcmp(ff, "g") && t->id == DK_TYPE_DOUBLE) {
        memcpy(&d, v, 8);
      } else {
        return false;
      }
      if (!isfinite(d)) return false; /* NaN: no order; infinities: not JSON numbers */
      return dk__buf_printf(b, NULL, "%.17g", d) == DK_OK;
    }
    case DK_TYPE_DECIMAL: {
      int prec, scale;
      char tail;
      if (sscanf(ff, "d:%d,%d%c", &prec, &scale, &tail) != 2 || scale < 0 || scale > 38)
        return false;
      __int128 u;
      if (phys == 1 && len == 4) {
        int32_t y;
        memcpy(&y, v, 4);
        u = y;
      } else if (phys == 2 && len == 8) {
        int64_t y;
        memcpy(&y, v, 8);
        u = y;
      } else if ((phys == 6 || phys == 7) && len >= 1 && len <= 16) {
        u = (int8_t)v[0]; /* big-endian two's complement, sign-extended */
        for (size_t i = 1; i < len; i++) u = u * 256 + v[i];
      } else {
        return false;
      }
      char digits[48], txt[64];
      unsigned __int128 m = u < 0 ? (unsigned __int128)0 - (unsigned __int128)u : (unsigned __int128)u;
      int nd = 0;
      do {
        digits[nd++] = (char)('0' + (int)(m % 10));
        m /= 10;
      } while (m);
      while (nd <= scale) digits[nd++] = '0';
      size_t k = 0;
      if (u < 0) txt[k++] = '-';
      for (int i = nd - 1; i >= 0; i--) {
        txt[k++] = digits[i];
        if (i == scale && scale > 0) txt[k++] = '.';
      }
      txt[k] = 0;
      return dk__buf_puts(b, txt, NULL) == DK_OK;
    }
    case DK_TYPE_TIMESTAMP:
    case DK_TYPE_TIMESTAMP_NTZ: {
      if (phys != 2 || len != 8 || strncmp(ff, "ts", 2) != 0) return false;
      memcpy(&x, v, 8);
      int64_t us;
      switch (cs->timestamp_unit) {
        case 1:
          if (x < INT64_MIN / 1000 || x > INT64_MAX / 1000) return false;
          us = x * 1000;
          break;
        case 2: us = x; break;
        case 3: us = x / 1000 - (x % 1000 < 0); break; /* floor */
        default: return false; /* INT96 or unknown: no skipping */
      }
      if (us < INT64_C(-62135596800000000) || us > INT64_C(253402300799999999)) return false;
      int64_t days = us / 86400000000 - (us % 86400000000 < 0);
      int64_t rem = us - days * 86400000000;
      int yr;
      unsigned mo, dd;
      civil_from_days(days, &yr, &mo, &dd);
      return dk__buf_printf(b, NULL, "\"%04d-%02u-%02uT%02d:%02d:%02d.%06d%s\"", yr, mo, dd,
                           (int)(rem / 3600000000), (int)(rem / 60000000 % 60),
                           (int)(rem / 1000000 % 60), (int)(rem % 1000000),
                           t->id == DK_TYPE_TIMESTAMP ? "Z" : "") == DK_OK;
    }
    case DK_TYPE_STRING: {
      if (phys != 6) return false;
      for (size_t i = 0; i < len; i++)
        if (v[i] >= 0x80 || v[i] < 0x20) return false; /* keep to plain ASCII */
      return dk__json_write_str(b, (const char *)v, len, NULL) == DK_OK;
    }
    default:
      return false;
  }
}

/* Delta-style stats JSON assembled from Parquet statistics (of a row group or of pages). */
typedef struct stats_acc {
  dk_buf mn, mx, nc;
  int n_mm, n_nc;
} stats_acc;

static void stats_acc_init(stats_acc *a, const dk_allocator *alloc) {
  memset(a, 0, sizeof *a);
  dk__buf_init(&a->mn, alloc);
  dk__buf_init(&a->mx, alloc);
  dk__buf_init(&a->nc, alloc);
}

static void stats_acc_dispose(stats_acc *a) {
  dk__buf_dispose(&a->mn);
  dk__buf_dispose(&a->mx);
  dk__buf_dispose(&a->nc);
}

static void stats_acc_add(stats_acc *a, const dk_field *f, const char *ff, const char *key,
                          const dk_parquet_column_stats *cs) {
  if (cs->has_null_count) {
    dk__buf_puts(&a->nc, a->n_nc++ ? "," : "", NULL);
    dk__json_write_str(&a->nc, key, strlen(key), NULL);
    dk__buf_printf(&a->nc, NULL, ":%" PRId64, cs->null_count);
  }
  if (cs->has_min_max) {
    size_t l1 = a->mn.len, l2 = a->mx.len;
    dk__buf_puts(&a->mn, a->n_mm ? "," : "", NULL);
    dk__json_write_str(&a->mn, key, strlen(key), NULL);
    dk__buf_putc(&a->mn, ':', NULL);
    dk__buf_puts(&a->mx, a->n_mm ? "," : "", NULL);
    dk__json_write_str(&a->mx, key, strlen(key), NULL);
    dk__buf_putc(&a->mx, ':', NULL);
    if (stat_json(&a->mn, f->type, ff, cs, 0) && stat_json(&a->mx, f->type, ff, cs, 1)) {
      a->n_mm++;
    } else {
      a->mn.len = l1;
      a->mx.len = l2;
    }
  }
}

/* Can no row of a unit (row group or page range) of num_rows rows with these statistics
** satisfy the residual filter? */
static bool stats_acc_can_skip(const stats_acc *a, const scan_plan *plan, int64_t num_rows) {
  if (!a->n_mm && !a->n_nc) return false;
  dk_buf all;
  dk__buf_init(&all, plan->alloc);
  dk__buf_printf(&all, NULL, "{\"numRecords\":%" PRId64 ",\"minValues\":{%.*s},\"maxValues\":{%.*s},"
                "\"nullCount\":{%.*s}}", num_rows, (int)a->mn.len, (const char *)a->mn.data,
                (int)a->mx.len, (const char *)a->mx.data, (int)a->nc.len, (const char *)a->nc.data);
  bool skip = false;
  dk_arena ar;
  dk__arena_init(&ar, plan->alloc, 0);
  dk_json_value *jv = NULL;
  if (all.data && dk__json_parse(&jv, &ar, (const char *)all.data, all.len, NULL) == DK_OK) {
    /* Parquet float/double min/max leave NaN out (NaN rows may exist above max) */
    dk_file_stats st = {.root = jv, .float_max_excludes_nan = true};
    skip = dk_expr__skip_eval(plan->residual_bound, &st) == DK_SKIP_CAN_SKIP;
  }
  dk__arena_dispose(&ar);
  dk__buf_dispose(&all);
  return skip;
}

static const char *stats_key(const scan_plan *plan, const dk_field *f) {
  return plan->mode == DK_COLUMN_MAPPING_NONE ? f->name : f->physical_name;
}

/* Row-group skipping: the residual filter evaluated over the row group's Parquet column
** statistics (viewed as Delta-style stats so the file-skipping rules apply unchanged). */
bool dk_scan__rg_can_skip(file_reader *r, int rg, int64_t num_rows,
                          const struct ArrowSchema *fs) {
  const scan_plan *plan = r->plan;
  stats_acc a;
  stats_acc_init(&a, plan->alloc);
  for (size_t c = 0; c < plan->n_cols; c++) {
    const dk_field *f = plan->cols[c].field;
    if (plan->cols[c].is_partition) continue;
    int64_t j = dk_scan__find_child(fs, f, plan->mode);
    if (j < 0 || fs->children[j]->n_children) continue;
    int col = dk_parquet_column_index(r->pf, fs->children[j]->name);
    dk_parquet_column_stats cs;
    if (col < 0 || dk_parquet_column_stats_get(&cs, r->pf, rg, col, NULL) != DK_OK) continue;
    stats_acc_add(&a, f, fs->children[j]->format, stats_key(plan, f), &cs);
  }
  bool skip = stats_acc_can_skip(&a, plan, num_rows);
  stats_acc_dispose(&a);
  return skip;
}

/* ---- page skipping (Parquet page index) ------------------------------------------------------ */

typedef struct pg_col {
  const dk_field *field;        /* filter column stored in this leaf, or NULL */
  const char *ff, *key;
  dk_parquet_column_stats cs;   /* chunk facts: physical type, timestamp unit */
  dk_parquet_page_index *pi;
  int64_t cur;                  /* page of the current fragment */
} pg_col;

/* Row ranges of row group rg still to read after page skipping: the residual is evaluated
** on every fragment between page boundaries of the filter columns (ColumnIndex min/max/null
** counts of the covering pages); the fragments it cannot rule out are kept, merged into
** ranges. Each range is then read by its own stream, which starts every column at its page
** holding the range's first row (dk_parquet_read row_start), so pages wholly inside skipped
** rows are never read. Only flat top-level columns take part; *n_out is -1 when nothing can
** be skipped (or the file has no page index): read the whole group. Otherwise
** out[0..2 * *n_out) are [start, end) pairs (none: every row skipped). */
dk_status dk_scan__page_ranges(file_reader *r, int rg, int64_t num_rows,
                               const struct ArrowSchema *fs, const char *const *names, size_t nn,
                               int64_t **out, int *n_out, int64_t *pages_skipped, dk_error *err) {
  const scan_plan *plan = r->plan;
  const dk_allocator *a = plan->alloc;
  *out = NULL;
  *n_out = -1;
  *pages_skipped = 0;
  if (!plan->residual_bound || nn == 0) return DK_OK;
  pg_col *pc = dk__calloc(a, nn, sizeof *pc);
  DK_RETURN_IF(!pc, DK_NOMEM, err, "out of memory (page index)");
  dk_status st = DK_OK;
  int usable = 1, n_filter = 0;
  int64_t *fr = NULL;
  for (size_t i = 0; usable && !st && i < nn; i++) {
    int64_t j = -1;
    for (int64_t k = 0; k < fs->n_children; k++)
      if (!strcmp(fs->children[k]->name, names[i])) j = k;
    int leaf = j >= 0 && !fs->children[j]->n_children ? dk_parquet_column_index(r->pf, names[i]) : -1;
    if (leaf < 0) {
      usable = 0;
      break;
    }
    st = dk_parquet_page_index_read(&pc[i].pi, r->pf, rg, leaf, err);
    if (st == DK_NOT_FOUND) {
      st = DK_OK;
      usable = 0;
      break;
    }
    if (!st) st = dk_parquet_column_stats_get(&pc[i].cs, r->pf, rg, leaf, err);
    pc[i].ff = fs->children[j]->format;
  }
  for (size_t c = 0; usable && !st && c < plan->n_cols; c++) {
    if (plan->cols[c].is_partition) continue;
    int64_t j = dk_scan__find_child(fs, plan->cols[c].field, plan->mode);
    for (size_t i = 0; j >= 0 && i < nn; i++)
      if (!pc[i].field && !strcmp(fs->children[j]->name, names[i])) {
        pc[i].field = plan->cols[c].field;
        pc[i].key = stats_key(plan, plan->cols[c].field);
        n_filter++;
      }
  }
  if (!usable || st || !n_filter) goto done;
  /* fragments between the filter columns' page boundaries; fr collects the kept ranges */
  fr = dk__malloc(a, 2 * sizeof *fr);
  int64_t cap = 1, pos = 0;
  int nr = 0, any = 0;
  if (!fr) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
    goto done;
  }
  while (pos < num_rows) {
    int64_t end = num_rows;
    stats_acc acc;
    stats_acc_init(&acc, a);
    for (size_t i = 0; i < nn; i++) {
      if (!pc[i].field) continue;
      int64_t np = dk_parquet_page_index_num_pages(pc[i].pi);
      while (pc[i].cur + 1 < np && dk_parquet_page_index_page(pc[i].pi, pc[i].cur + 1)->first_row <= pos)
        pc[i].cur++;
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, pc[i].cur);
      end = DK_MIN(end, pg->first_row + pg->num_rows);
    }
    for (size_t i = 0; i < nn; i++) {
      if (!pc[i].field) continue;
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, pc[i].cur);
      dk_parquet_column_stats ps = pc[i].cs;
      ps.has_min_max = pg->has_min_max;
      ps.min = pg->min, ps.min_len = pg->min_len;
      ps.max = pg->max, ps.max_len = pg->max_len;
      /* null counts are per page: exact for a whole page, else only "none" or "all" carry */
      int whole = pg->first_row == pos && pg->first_row + pg->num_rows == end;
      ps.has_null_count = 0;
      if (pg->null_page) ps.has_null_count = 1, ps.null_count = end - pos;
      else if (pg->has_null_count && (whole || pg->null_count == 0))
        ps.has_null_count = 1, ps.null_count = pg->null_count;
      stats_acc_add(&acc, pc[i].field, pc[i].ff, pc[i].key, &ps);
    }
    bool skip = stats_acc_can_skip(&acc, plan, end - pos);
    stats_acc_dispose(&acc);
    if (skip) {
      any = 1;
    } else if (nr && fr[2 * nr - 1] == pos) {
      fr[2 * nr - 1] = end;
    } else {
      if (nr == cap) {
        int64_t *nf = dk__realloc(a, fr, (size_t)(4 * cap) * sizeof *fr);
        if (!nf) {
          st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
          goto done;
        }
        fr = nf;
        cap *= 2;
      }
      fr[2 * nr] = pos;
      fr[2 * nr + 1] = end;
      nr++;
    }
    pos = end;
  }
  if (!any) goto done;
  /* pages of the columns read that lie wholly outside the kept ranges are never read */
  for (size_t i = 0; i < nn; i++) {
    int k2 = 0;
    for (int64_t k = 0; k < dk_parquet_page_index_num_pages(pc[i].pi); k++) {
      const dk_parquet_page *pg = dk_parquet_page_index_page(pc[i].pi, k);
      int64_t f0 = pg->first_row, f1 = pg->first_row + pg->num_rows;
      while (k2 < nr && fr[2 * k2 + 1] <= f0) k2++;
      *pages_skipped += !(k2 < nr && fr[2 * k2] < f1);
    }
  }
  *out = fr; /* nr == 0: every row skipped */
  *n_out = nr;
  fr = NULL;
done:
  for (size_t i = 0; i < nn; i++) dk_parquet_page_index_free(pc[i].pi);
  dk__free(a, pc);
  dk__free(a, fr);
  return st;
}
