/*
** plan.c — which files a commit's change rows come from (PROTOCOL.md "Change Data Files";
** delta-spark commands/cdc/CDCReader.scala changesToDF / getDeletedAndAddedRows /
** generateFileActionsWithInlineDv): cdc files when the commit has them, otherwise its
** data-change adds and removes, a path removed and re-added in the commit being read through
** the difference of its two deletion vectors.
*/
#include <inttypes.h>
#include <string.h>

#include "changes/changes_int.h"
#include "util/util.h"

/* The last data-change action of `kind` on path p, else NULL. */
static const dk_changes__action *last_on_path(const dk_changes__action *acts, size_t n,
                                              dk_changes__akind kind, const char *p) {
  const dk_changes__action *hit = NULL;
  for (size_t i = 0; i < n; i++)
    if (acts[i].kind == kind && acts[i].data_change && !strcmp(acts[i].entry.path, p))
      hit = &acts[i];
  return hit;
}

static dk_status push(dk_changes__planned **out, size_t *n, size_t *cap, int source,
                      const dk_changes__action *a, const dk_changes__action *b,
                      const dk_allocator *alloc, dk_error *err) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    dk_changes__planned *p = dk__realloc(alloc, *out, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "change data feed: out of memory");
    *out = p;
    *cap = nc;
  }
  (*out)[(*n)++] = (dk_changes__planned){source, a, b};
  return DK_OK;
}

dk_status dk_changes__plan_commit(dk_changes__planned **out, size_t *n,
                                  const dk_changes__action *acts, size_t n_acts, int noop_merge,
                                  int64_t version, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  dk_status st = DK_OK;
  int has_cdc = 0;
  for (size_t i = 0; i < n_acts; i++) has_cdc |= acts[i].kind == DK_CHANGES__CDC;
  if (has_cdc) {
    for (size_t i = 0; i < n_acts && st == DK_OK; i++)
      if (acts[i].kind == DK_CHANGES__CDC)
        st = push(out, n, &cap, DK_CHANGE_CDC, &acts[i], NULL, alloc, err);
    goto done;
  }
  if (noop_merge) goto done;
  /* Paths are few per commit compared with the work of reading them, and the quadratic
   * lookups below stay off the hot path; a commit rewriting many files is read file by
   * file anyway. */
  for (size_t i = 0; i < n_acts && st == DK_OK; i++) {
    const dk_changes__action *x = &acts[i];
    if (!x->data_change || x->kind == DK_CHANGES__CDC) continue;
    if (last_on_path(acts, n_acts, x->kind, x->entry.path) != x) continue; /* a later one wins */
    dk_changes__akind other = x->kind == DK_CHANGES__ADD ? DK_CHANGES__REMOVE : DK_CHANGES__ADD;
    const dk_changes__action *y = last_on_path(acts, n_acts, other, x->entry.path);
    if (!y) {
      st = push(out, n, &cap, x->kind == DK_CHANGES__ADD ? DK_CHANGE_ADDED : DK_CHANGE_REMOVED,
                x, NULL, alloc, err);
      continue;
    }
    if (x->kind == DK_CHANGES__ADD) continue; /* the pair is planned at its remove */
    const dk_changes__action *rm = x, *add = y;
    if (!rm->entry.dv && !add->entry.dv) {
      st = dk__error_set(err, DK_CORRUPT,
                         "change data feed: version %" PRId64 " removes and re-adds %s with "
                         "no deletion vector on either (the change is not recoverable)",
                         version, rm->entry.path);
      break;
    }
    /* rows the add's DV deletes and the remove's did not: deleted in this commit */
    if (add->entry.dv) st = push(out, n, &cap, DK_CHANGE_DV_DELETED, add, rm, alloc, err);
    /* rows the remove's DV deleted and the add's does not: restored (e.g. RESTORE) */
    if (st == DK_OK && rm->entry.dv)
      st = push(out, n, &cap, DK_CHANGE_DV_RESTORED, rm, add, alloc, err);
  }
done:
  if (st != DK_OK) {
    dk__free(alloc, *out);
    *out = NULL;
    *n = 0;
  }
  return st;
}
