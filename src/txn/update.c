/*
** update.c — row-level UPDATE (delta-spark commands/UpdateCommand.scala with
** DMLWithDeletionVectorsHelper.scala; PROTOCOL.md "Deletion Vectors", "Add File and Remove
** File"; write-path.md §1.5, §4).
**
** As delta-spark decides it:
**   1. the files the statistics cannot rule out are read for the physical indexes of the rows
**      the predicate makes TRUE (txn.filterFiles records the read); files without such rows
**      are left alone;
**   2. with deletion vectors writable (feature + delta.enableDeletionVectors; delta-spark's
**      update.deletionVectors.persistent, on by default) the matched rows are marked in a DV of
**      their file (remove + add of the path, merged DV, wide-bound stats, as DELETE) and only
**      the updated rows are written to new files (numCopiedRows 0); a file whose every row
**      was updated is just removed;
**   3. without them every touched file is rewritten: each column assigned becomes
**      `CASE WHEN predicate THEN CAST(value AS type) ELSE column END` over all its rows.
** The matching and the new files are dml_rewrite.c's (through dk_txn_write: partitioning,
** stats, constraints, column mapping). Assignments are dk value expressions
** (src/expr/value.c, Spark's ANSI typing), stored with an ANSI cast to the column's type
** (overflow is an error naming the column). The commit is
** UPDATE with {"predicate": "[\"<sql>\"]"} and UpdateCommand's operationMetrics. Nothing
** matched: no commit.
**
** With the change data feed on, the updated rows' old and new values are written as change data
** (update_preimage / update_postimage cdc files), as UpdateCommand.shouldOutputCdc.
**
** With row tracking on, the written rows keep their row ids (materialized in the column
** delta.rowTracking.materializedRowIdColumnName names) and the updated ones get this commit's
** row commit version (dml_rewrite.c), as delta-spark's UPDATE does.
*/
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "txn/dml_int.h"

static dk_status update_metrics(dml_ctx *c, dk_error *err) {
  dk_dml_metrics *m = c->m;
  m->execution_time_ms = dk_txn__dml_now_ms() - c->t0_ms;
  struct {
    const char *k;
    int64_t v;
  } kv[] = {
      /* every touched file has a remove (a DV update is remove + add of the path) */
      {"numRemovedFiles", (int64_t)c->n_files},
      {"numRemovedBytes", m->num_removed_bytes},
      {"numCopiedRows", m->num_copied_rows},
      {"numDeletionVectorsAdded", m->num_deletion_vectors_added + m->num_deletion_vectors_updated},
      {"numDeletionVectorsRemoved",
       m->num_deletion_vectors_removed + m->num_deletion_vectors_updated},
      {"numAddedChangeFiles", m->num_added_change_files},
      {"executionTimeMs", m->execution_time_ms},
      {"numDeletionVectorsUpdated", m->num_deletion_vectors_updated},
      {"scanTimeMs", m->scan_time_ms},
      {"numAddedFiles", m->num_added_files},
      {"numUpdatedRows", m->num_updated_rows},
      {"numAddedBytes", m->num_added_bytes},
      {"rewriteTimeMs", m->rewrite_time_ms},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(kv); i++)
    DK_RETURN_NOT_OK(dk_txn_set_metric(c->x, kv[i].k, kv[i].v, err));
  return DK_OK;
}

dk_status dk_txn_update(dk_dml_metrics *out, dk_txn *x, const dk_dml_assignment *set,
                        size_t n_set, const dk_expr *pred, const dk_dml_options *o,
                        dk_error *err) {
  dk_dml_metrics own = {.version = DK_DML_METRICS_VERSION};
  dml_ctx c;
  DK_RETURN_NOT_OK(dk_txn__dml_init(&c, x, o, out, &own, err));
  dk_status st = DK_OK;
  if (n_set == 0 || !set)
    st = dk__error_set(err, DK_INVALID, "UPDATE needs at least one assignment");
  /* with DVs only the matched rows are written, updated; without, every row of the touched
   * files, updated where the predicate holds */
  dml_rewrite r = {.keep = c.use_dvs ? pred : NULL, .set = set, .n_set = n_set,
                   .when = c.use_dvs ? NULL : pred, .what = "UPDATE"};
  /* every input is checked before anything is read or staged */
  if (!st && pred) {
    struct ArrowSchema sch;
    st = dk_snapshot_arrow_schema(&sch, x->snap, 0, err);
    if (!st) {
      dk_expr *bound = NULL;
      st = dk_expr_bind(&bound, pred, &sch, err);
      dk_expr_free(bound);
      sch.release(&sch);
    }
  }
  if (!st) st = dk_txn__dml_rewrite_check(&c, &r, err);
  c.m->num_files_before_skipping = dk_snapshot_num_files(x->snap);
  if (!st) st = dk_txn__dml_match(&c, pred, &c.m->num_updated_rows, err);
  c.m->scan_time_ms = dk_txn__dml_now_ms() - c.t0_ms;
  int64_t t1 = dk_txn__dml_now_ms();
  if (!st && dk_txn__cdf_on(x)) { /* the change data: old and new values of the rows updated */
    dml_rewrite pre = {.keep = pred, .what = "UPDATE", .change_type = "update_preimage"};
    dml_rewrite post = {.keep = pred, .set = set, .n_set = n_set, .what = "UPDATE",
                        .change_type = "update_postimage"};
    st = dk_txn__dml_rewrite(&c, &pre, err);
    if (!st) st = dk_txn__dml_rewrite(&c, &post, err);
  }
  if (!st) st = dk_txn__dml_rewrite(&c, &r, err);
  if (!st && !c.use_dvs) {
    c.m->num_copied_rows = c.touched_live - c.m->num_updated_rows;
    dk_txn__dml_remove_touched(&c);
  }
  if (!st) st = dk_txn__dml_apply_dvs(&c, err);
  c.m->rewrite_time_ms = dk_txn__dml_now_ms() - t1;
  if (!st) st = dk_txn__set_predicate_operation(x, "UPDATE", pred, err);
  if (!st) st = update_metrics(&c, err);
  dk_txn__dml_dispose(&c);
  return st;
}

typedef struct update_args {
  dk_dml_metrics *out;
  const dk_dml_assignment *set;
  size_t n_set;
  const dk_expr *pred;
  const dk_dml_options *o;
} update_args;

static dk_status update_body(dk_txn *x, void *arg, dk_error *err) {
  update_args *a = arg;
  return dk_txn_update(a->out, x, a->set, a->n_set, a->pred, a->o, err);
}

dk_status dk_table_update(dk_dml_metrics *out, dk_commit_result *commit, dk_table *t,
                          const char *const *set, size_t n_set, const char *predicate,
                          const dk_dml_options *o, const dk_txn_options *txn_opts,
                          dk_error *err) {
  dk_txn__commit_reset(commit);
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_update: NULL table");
  DK_RETURN_IF(!set || !n_set, DK_INVALID, err, "UPDATE needs at least one assignment");
  dk_expr *pred = NULL;
  dk_dml_assignment *as = dk__calloc(NULL, n_set, sizeof *as);
  if (!as) return dk__error_set(err, DK_NOMEM, "out of memory (UPDATE)");
  dk_status st = predicate ? dk_expr_parse(&pred, predicate, err) : DK_OK;
  for (size_t i = 0; i < n_set && !st; i++) {
    as[i].column = set[2 * i];
    dk_expr *v = NULL;
    st = set[2 * i + 1] ? dk_expr_parse(&v, set[2 * i + 1], err)
                        : dk__error_set(err, DK_INVALID, "UPDATE: no value for '%s'",
                                        set[2 * i] ? set[2 * i] : "?");
    if (st && set[2 * i]) dk__error_prefix(err, "UPDATE %s", set[2 * i]);
    as[i].value = v;
  }
  update_args a = {out, as, n_set, pred, o};
  if (!st) st = dk_txn__dml_run(commit, t, "UPDATE", txn_opts, update_body, &a, err);
  for (size_t i = 0; i < n_set; i++) dk_expr_free((dk_expr *)as[i].value);
  dk__free(NULL, as);
  dk_expr_free(pred);
  return st;
}
