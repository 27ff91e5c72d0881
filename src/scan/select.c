/*
** select.c — the file list of a scan: partition pruning (the partition-only conjuncts of the
** filter evaluated over every file's partitionValues, PROTOCOL.md "Partition Value
** Serialization"), stats skipping (the whole filter over each file's "Per-file Statistics",
** expr/skip.c over the snapshot's columnar statistics, scan/stats.c), LIMIT pushdown (files past the limit by numRecords minus DV cardinality), the
** row estimate, and the pruned files with their reasons.
*/
#include <inttypes.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "expr/skip.h"
#include "scan/scan_int.h"

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

int64_t dk_scan__num_records(const char *stats, dk_arena *ar) {
  if (!stats) return -1;
  const char *p = skip_ws(stats);
  if (*p != '{') return -1;
  p = skip_ws(p + 1);
  if (!strncmp(p, "\"numRecords\"", 12)) { /* the first member, as Delta writers put it */
    p = skip_ws(p + 12);
    if (*p != ':') return -1;
    p = skip_ws(p + 1);
    uint64_t v = 0;
    const char *d = p;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10) return -1; /* out of range */
      v = v * 10 + (uint64_t)(*p - '0');
    }
    p = skip_ws(p);
    /* only a plain non-negative integer counts (not 1.5, 1e3, -1, "7") */
    if (p == d || (*p != ',' && *p != '}')) return -1;
    return (int64_t)v;
  }
  /* elsewhere in the object: found by key at the top level, never inside minValues */
  dk__arena_reset(ar);
  dk_json_value *jv = NULL;
  int64_t v;
  if (dk__json_parse(&jv, ar, stats, strlen(stats), NULL) != DK_OK ||
      !dk__json_as_i64(dk__json_get(jv, "numRecords"), &v) || v < 0)
    return -1;
  return v;
}

dk_status dk_scan__select(dk_scan *s, const dk_expr *bound_full, const dk_expr *pbound,
                          const struct ArrowSchema *pschema, int64_t limit, dk_error *err) {
  dk_snapshot *snap = s->snap;
  const dk_allocator *alloc = s->alloc;
  scan_plan *p = &s->plan;
  const dk_metadata *md = dk_snapshot_metadata(snap);
  dk_status st = DK_OK;
  dk_scan__stats_eval ev;
  memset(&ev, 0, sizeof ev);
  uint8_t *pmask = NULL;
  const char **pv_all = NULL;
  dk_file_iter *fit = NULL;
  int64_t nf = dk_snapshot_num_files(snap);
  s->files = dk__calloc(alloc, (size_t)(nf ? nf : 1), sizeof *s->files);
  s->pvals = dk__calloc(alloc, (size_t)(nf ? nf : 1) * (s->n_part_out ? s->n_part_out : 1),
                        sizeof *s->pvals);
  s->pruned = dk__calloc(alloc, (size_t)(nf ? nf : 1) * 2, sizeof *s->pruned);
  s->nrec = dk__calloc(alloc, (size_t)(nf ? nf : 1), sizeof *s->nrec);
  if (!s->files || !s->pvals || !s->pruned || !s->nrec) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
    goto cleanup;
  }
  s->stats.files_total = nf;
  if (pbound && nf > 0) {
    size_t npc = md->n_partition_columns;
    pv_all = dk__calloc(alloc, (size_t)nf * npc, sizeof *pv_all);
    pmask = dk__malloc(alloc, (size_t)nf);
    if (!pv_all || !pmask) {
      st = dk__error_set(err, DK_NOMEM, "out of memory (scan)");
      goto cleanup;
    }
    for (int64_t i = 0; i < nf; i++) {
      dk_file_entry f;
      DK_CHECK_GOTO(dk_snapshot_file(&f, snap, i, err));
      for (size_t k = 0; k < npc; k++) {
        int is_null = 0;
        const char *v = dk_file_partition_value(snap, &f, md->partition_columns[k], &is_null);
        pv_all[(size_t)i * npc + k] = is_null ? NULL : v;
      }
    }
    struct ArrowArray pb;
    DK_CHECK_GOTO(dk_partition_batch(&pb, pschema, pv_all, nf, err));
    st = dk_expr_eval_filter(pmask, NULL, pbound, pschema, &pb, err);
    dk__array_release(&pb);
    if (st) goto cleanup;
  }
  int use_stats = bound_full && dk_expr__has_columns(bound_full);
  int64_t est = 0, need = limit;
  int limit_push = limit >= 0 && !p->residual;
  /* numRecords and the statistics of the filter's columns, parsed once per snapshot */
  const dk_scan__stats *tab = NULL;
  DK_CHECK_GOTO(dk_scan__stats_get(&tab, snap, use_stats ? bound_full : NULL, err));
  if (use_stats) DK_CHECK_GOTO(dk_scan__stats_eval_init(&ev, tab, bound_full, alloc, err));
  dk_file_iter_options fo = {.version = DK_FILE_ITER_OPTIONS_VERSION, .skip_stats = 1};
  DK_CHECK_GOTO(dk_snapshot_files_open(&fit, snap, &fo, err));
  for (int64_t i = 0; i < nf; i++) {
    const dk_file_entry *fe;
    DK_CHECK_GOTO(dk_file_iter_next(&fe, fit, err));
    dk_file_entry f = *fe;
    if (pmask && !pmask[i]) {
      s->stats.files_pruned_partition++;
      s->pruned[2 * s->n_pruned] = i;
      s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_PARTITION;
      continue;
    }
    int64_t nrec = dk_scan__stats_num_records(tab, i);
    if (use_stats && dk_scan__stats_skip(&ev, i) == DK_SKIP_CAN_SKIP) {
      s->stats.files_pruned_stats++;
      s->pruned[2 * s->n_pruned] = i;
      s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_STATS;
      continue;
    }
    if (limit_push && need <= 0) {
      s->stats.files_pruned_limit++;
      s->pruned[2 * s->n_pruned] = i;
      s->pruned[2 * s->n_pruned++ + 1] = DK_PRUNED_LIMIT;
      continue;
    }
    /* rows left after the DV: unknown (-1) without numRecords, or when the DV claims more
     * rows than the file has (inconsistent statistics must not shorten a LIMIT) */
    int64_t card = f.dv ? f.dv->cardinality : 0;
    int64_t live = nrec >= 0 && card >= 0 && card <= nrec ? nrec - card : -1;
    if (limit_push) {
      if (live < 0) limit_push = 0; /* unknown row count: read on */
      else need -= live;        /* need > 0 here and live >= 0: no overflow */
    }
    if (est >= 0 && (live < 0 || __builtin_add_overflow(est, live, &est))) est = -1;
    size_t k = 0;
    for (size_t c = 0; c < p->n_cols; c++) {
      if (!p->cols[c].is_partition) continue;
      int is_null = 0;
      const char *v = dk_file_partition_value(snap, &f, p->cols[c].field->name, &is_null);
      s->pvals[s->n_files * (int64_t)s->n_part_out + (int64_t)k++] = is_null ? NULL : v;
    }
    s->nrec[s->n_files] = nrec;
    s->files[s->n_files++] = i;
    s->stats.bytes_selected += f.size;
  }
  s->stats.files_selected = s->n_files;
  s->stats.rows_estimated = est;
  st = DK_OK;
cleanup:
  dk_scan__stats_eval_dispose(&ev);
  dk__free(alloc, pmask);
  dk__free(alloc, pv_all);
  dk_file_iter_free(fit);
  return st;
}


dk_status dk_scan_file_get(dk_scan_file *out, const dk_scan *scan, int64_t i, dk_error *err) {
  DK_RETURN_IF(i < 0 || i >= scan->n_files, DK_INVALID, err, "scan: file %" PRId64 " out of range",
               i);
  DK_RETURN_NOT_OK(dk_snapshot_file(&out->entry, scan->snap, scan->files[i], err));
  out->num_records = scan->nrec[i];
  return DK_OK;
}

int64_t dk_scan_num_pruned_files(const dk_scan *scan) { return scan->n_pruned; }

dk_status dk_scan_pruned_file_get(dk_file_entry *out, dk_prune_reason *reason,
                                  const dk_scan *scan, int64_t i, dk_error *err) {
  DK_RETURN_IF(i < 0 || i >= scan->n_pruned, DK_INVALID, err,
               "scan: pruned file %" PRId64 " out of range", i);
  *reason = (dk_prune_reason)scan->pruned[2 * i + 1];
  return dk_snapshot_file(out, scan->snap, scan->pruned[2 * i], err);
}
