/*
** rowgroup.c — row-group and page-range selection inside one data file: the residual filter
** evaluated over a row group's Parquet column statistics, and over the page index (ColumnIndex
** / OffsetIndex, parquet-format PageIndex.md) to find the row ranges worth reading. The
** statistics reach the skipping rules of expr/skip.c (the ones files are skipped by) through
** a Parquet statistics provider: typed values read straight from the footer and page index.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "expr/skip.h"
#include "scan/scan_int.h"

/* ---- the Parquet statistics provider ------------------------------------------------------ */

/* The Parquet statistics of one top-level leaf column for a unit of rows (a row group, or the
** pages covering a fragment of one). */
typedef struct pq_col_stat {
  const char *key;     /* the column's stats key: logical name, or physical under mapping */
  const dk_type *type; /* its table type */
  const char *ff;      /* its Arrow format in the file */
  dk_parquet_column_stats cs;
} pq_col_stat;

typedef struct pq_stats {
  const pq_col_stat *cols;
  size_t n;
  int64_t num_rows;
} pq_stats;

/* Converts one Parquet min/max statistic (max when is_max) of a leaf whose Arrow type in the
** file is `ff` to the typed value of the column's table type t; false when it cannot:
** unsupported or mismatched types, odd bytes, unsigned integers, INT96 timestamps (no
** trustworthy order), NaN or infinite floats, values outside years 1..9999, non-ASCII strings
** (older writers ordered bytes as signed). Decimals are rescaled exactly to the table's scale
** (type widening); timestamps are exact micros (nanos floored, which the skipping rules'
** 999 us widening covers). */
static bool pq_value(dk_stat_value *out, const dk_type *t, const char *ff,
                     const dk_parquet_column_stats *cs, bool is_max) {
  const uint8_t *v = is_max ? cs->max : cs->min;
  size_t len = is_max ? cs->max_len : cs->min_len;
  int phys = cs->physical_type;
  int64_t x;
  memset(out, 0, sizeof *out);
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
      if (t->id == DK_TYPE_DATE && (x < -719162 || x > 2932896)) return false; /* 1..9999 */
      out->has = DK_STAT_INT | (t->id == DK_TYPE_DATE ? 0 : DK_STAT_DBL);
      out->i = x;
      out->d = (double)x;
      return true;
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
      if (!isfinite(d)) return false; /* NaN: no order; infinities: as Delta stats cannot hold */
      out->has = DK_STAT_DBL;
      out->d = d;
      return true;
    }
    case DK_TYPE_DECIMAL: {
      int prec, scale;
      char tail;
      if (sscanf(ff, "d:%d,%d%c", &prec, &scale, &tail) != 2 || scale < 0 || scale > 38)
        return false;
      dk_i128 u;
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
      char txt[64];
      dk__format_decimal(txt, sizeof txt, u, scale);
      out->d = strtod(txt, NULL);
      out->has = isnan(out->d) ? 0 : DK_STAT_DBL;
      /* at the table's scale, exactly (as its text parses) or not at all */
      if (dk__parse_decimal(&out->dec, txt, strlen(txt), t->scale, NULL) == DK_OK)
        out->has |= DK_STAT_DEC;
      return out->has != 0;
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
      out->has = DK_STAT_INT;
      out->i = us;
      return true;
    }
    case DK_TYPE_STRING:
      if (phys != 6) return false;
      for (size_t i = 0; i < len; i++)
        if (v[i] >= 0x80 || v[i] < 0x20) return false; /* keep to plain ASCII */
      out->has = DK_STAT_STR;
      out->s = (const char *)v;
      out->len = len;
      return true;
    default:
      return false;
  }
}

/* Min and max are used together or not at all (as a pair they bound the column). */
static bool pq_min_max(const pq_col_stat *c, dk_stat_value *mn, dk_stat_value *mx) {
  return c->cs.has_min_max && pq_value(mn, c->type, c->ff, &c->cs, false) &&
         pq_value(mx, c->type, c->ff, &c->cs, true);
}

/* The statistics of a top-level column (the last one of that key, as a JSON object's). */
static const pq_col_stat *pq_find(const pq_stats *p, const dk_colref *col) {
  if (dk_expr__colref_depth(col) != 1) return NULL;
  const char *name = dk_expr__colref_phys(col, 0);
  const pq_col_stat *r = NULL;
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->cols[i].key, name)) r = &p->cols[i];
  return r;
}

static bool pq_num_rows(const void *ctx, int64_t *out) {
  *out = ((const pq_stats *)ctx)->num_rows;
  return true;
}

static bool pq_null_count(const void *ctx, const dk_colref *col, int64_t *out) {
  const pq_col_stat *c = pq_find(ctx, col);
  if (!c || !c->cs.has_null_count) return false;
  *out = c->cs.null_count;
  return true;
}

static bool pq_stat(const void *ctx, const dk_colref *col, bool is_max, dk_stat_value *out) {
  const pq_col_stat *c = pq_find(ctx, col);
  dk_stat_value mn, mx;
  if (!c || !pq_min_max(c, &mn, &mx)) return false;
  *out = is_max ? mx : mn;
  return true;
}

/* Can no row of a unit (row group or page range) of num_rows rows with these statistics
** satisfy the residual filter? Units without any statistic are read. */
static bool pq_can_skip(const scan_plan *plan, const pq_col_stat *cols, size_t n,
                        int64_t num_rows) {
  int any = 0;
  for (size_t i = 0; i < n && !any; i++) {
    dk_stat_value mn, mx;
    any = cols[i].cs.has_null_count || pq_min_max(&cols[i], &mn, &mx);
  }
  if (!any) return false;
  pq_stats ps = {cols, n, num_rows};
  /* Parquet float/double min/max leave NaN out (NaN rows may exist above max) */
  dk_stats_provider p = {&ps, pq_num_rows, pq_null_count, pq_stat, true};
  return dk_expr__skip_stats(plan->residual_bound, &p) == DK_SKIP_CAN_SKIP;
}

static const char *stats_key(const scan_plan *plan, const dk_field *f) {
  return plan->mode == DK_COLUMN_MAPPING_NONE ? f->name : f->physical_name;
}

/* Row-group skipping: the residual filter evaluated over the row group's Parquet column
** statistics of the flat top-level columns read. */
bool dk_scan__rg_can_skip(task_reader *r, int rg, int64_t num_rows,
                          const struct ArrowSchema *fs) {
  const scan_plan *plan = r->plan;
  pq_col_stat *cols = dk__calloc(plan->alloc, plan->n_cols ? plan->n_cols : 1, sizeof *cols);
  if (!cols) return false; /* out of memory: read the row group */
  size_t n = 0;
  for (size_t c = 0; c < plan->n_cols; c++) {
    const dk_field *f = plan->cols[c].field;
    if (plan->cols[c].is_partition) continue;
    int64_t j = dk_scan__find_child(fs, f, plan->mode);
    if (j < 0 || fs->children[j]->n_children) continue;
    int col = dk_parquet_column_index(r->pf, fs->children[j]->name);
    if (col < 0 || dk_parquet_column_stats_get(&cols[n].cs, r->pf, rg, col, NULL) != DK_OK)
      continue;
    cols[n].key = stats_key(plan, f);
    cols[n].type = f->type;
    cols[n].ff = fs->children[j]->format;
    n++;
  }
  bool skip = pq_can_skip(plan, cols, n, num_rows);
  dk__free(plan->alloc, cols);
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
dk_status dk_scan__page_ranges(task_reader *r, int rg, int64_t num_rows,
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
  pq_col_stat *ent = NULL; /* the filter columns' statistics of the current fragment */
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
  ent = dk__calloc(a, nn, sizeof *ent);
  int64_t cap = 1, pos = 0;
  int nr = 0, any = 0;
  if (!fr || !ent) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (page index)");
    goto done;
  }
  while (pos < num_rows) {
    int64_t end = num_rows;
    size_t ne = 0;
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
      ent[ne++] = (pq_col_stat){pc[i].key, pc[i].field->type, pc[i].ff, ps};
    }
    bool skip = pq_can_skip(plan, ent, ne, end - pos);
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
  dk__free(a, ent);
  return st;
}
