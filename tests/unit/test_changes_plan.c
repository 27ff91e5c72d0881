/* test_changes_plan.c — a commit's change files (src/changes/plan.c) for the commit shapes of
** the CDF oracle's tables (tests/interop/cdf_oracle.py): copy-on-write UPDATE with cdc files
** (cdf_basic v3), DELETE with deletion vectors and no cdc (cdf_dv v2: a path re-added with a
** DV), a second DELETE on it (DV over DV), RESTORE (the DV dropped again), overwrite (removes
** and adds of other paths), OPTIMIZE (dataChange=false), a MERGE that changed nothing, and a
** path re-added with no DV on either side (refused, as delta-spark refuses it). */
#include <string.h>

#include "changes/changes_int.h"
#include "test.h"
#include "util/util.h"

static const dk_dv_descriptor DV1_ = {'i', "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", -1, 34, 2};
static const dk_dv_descriptor DV2_ = {'i', "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{M", -1, 34, 3};

#define DV1 (&DV1_)
#define DV2 (&DV2_)

static dk_changes__action act(dk_changes__akind k, const char *path, int dc,
                              const dk_dv_descriptor *dv) {
  dk_changes__action a;
  memset(&a, 0, sizeof a);
  a.kind = k;
  a.data_change = dc;
  a.entry.path = path;
  a.entry.size = 100;
  a.entry.dv = dv;
  return a;
}

/* Plans one commit; (size_t)-1 when planning failed. */
static size_t plan(dk_changes__planned **p, const dk_changes__action *acts, size_t n,
                   int noop) {
  dk_error err = {0};
  size_t k = 0;
  if (dk_changes__plan_commit(p, &k, acts, n, noop, 7, NULL, &err) != DK_OK) return (size_t)-1;
  return k;
}

DK_TEST(changes__plan_cdc_files_win) {
  const dk_changes__action a[] = {
      act(DK_CHANGES__REMOVE, "f1.parquet", 1, NULL), act(DK_CHANGES__ADD, "f2.parquet", 1, NULL),
      act(DK_CHANGES__CDC, "_change_data/c1.parquet", 0, NULL),
      act(DK_CHANGES__CDC, "_change_data/c2.parquet", 0, NULL)};
  dk_changes__planned *p;
  size_t n = plan(&p, a, 4, 0);
  CHECK_EQ_INT((int64_t)n, 2);
  CHECK_EQ_INT(p[0].source, DK_CHANGE_CDC);
  CHECK_EQ_STR(p[0].a->entry.path, "_change_data/c1.parquet");
  CHECK_EQ_STR(p[1].a->entry.path, "_change_data/c2.parquet");
  dk__free(NULL, p);
  /* cdc files are read even for a MERGE whose metrics say it changed nothing */
  n = plan(&p, a, 4, 1);
  CHECK_EQ_INT((int64_t)n, 2);
  dk__free(NULL, p);
}

DK_TEST(changes__plan_inferred_and_dv_differences) {
  dk_changes__planned *p;
  /* overwrite: other paths removed and added */
  const dk_changes__action ow[] = {act(DK_CHANGES__REMOVE, "old.parquet", 1, DV1),
                                   act(DK_CHANGES__ADD, "new1.parquet", 1, NULL),
                                   act(DK_CHANGES__ADD, "new2.parquet", 1, NULL)};
  size_t n = plan(&p, ow, 3, 0);
  CHECK_EQ_INT((int64_t)n, 3);
  CHECK_EQ_INT(p[0].source, DK_CHANGE_REMOVED);
  CHECK(p[0].a->entry.dv == DV1); /* the removed file's live rows only */
  CHECK_EQ_INT(p[1].source, DK_CHANGE_ADDED);
  CHECK_EQ_INT(p[2].source, DK_CHANGE_ADDED);
  dk__free(NULL, p);
  /* DELETE with DVs: remove without DV, add with DV -> the DV's rows are deleted */
  const dk_changes__action d1[] = {act(DK_CHANGES__REMOVE, "f.parquet", 1, NULL),
                                   act(DK_CHANGES__ADD, "f.parquet", 1, DV1)};
  n = plan(&p, d1, 2, 0);
  CHECK_EQ_INT((int64_t)n, 1);
  CHECK_EQ_INT(p[0].source, DK_CHANGE_DV_DELETED);
  CHECK(p[0].a->entry.dv == DV1 && p[0].b->entry.dv == NULL);
  dk__free(NULL, p);
  /* a second DELETE: DV1 -> DV2, both differences */
  const dk_changes__action d2[] = {act(DK_CHANGES__REMOVE, "f.parquet", 1, DV1),
                                   act(DK_CHANGES__ADD, "f.parquet", 1, DV2)};
  n = plan(&p, d2, 2, 0);
  CHECK_EQ_INT((int64_t)n, 2);
  CHECK_EQ_INT(p[0].source, DK_CHANGE_DV_DELETED);
  CHECK(p[0].a->entry.dv == DV2 && p[0].b->entry.dv == DV1);
  CHECK_EQ_INT(p[1].source, DK_CHANGE_DV_RESTORED);
  CHECK(p[1].a->entry.dv == DV1 && p[1].b->entry.dv == DV2);
  dk__free(NULL, p);
  /* RESTORE: remove with DV, add without -> the DV's rows come back */
  const dk_changes__action rs[] = {act(DK_CHANGES__REMOVE, "f.parquet", 1, DV2),
                                   act(DK_CHANGES__ADD, "f.parquet", 1, NULL)};
  n = plan(&p, rs, 2, 0);
  CHECK_EQ_INT((int64_t)n, 1);
  CHECK_EQ_INT(p[0].source, DK_CHANGE_DV_RESTORED);
  dk__free(NULL, p);
}

DK_TEST(changes__plan_no_change_and_refusals) {
  dk_changes__planned *p;
  /* OPTIMIZE: dataChange=false everywhere */
  const dk_changes__action opt[] = {act(DK_CHANGES__REMOVE, "a.parquet", 0, NULL),
                                    act(DK_CHANGES__ADD, "b.parquet", 0, NULL)};
  CHECK_EQ_INT((int64_t)plan(&p, opt, 2, 0), 0);
  dk__free(NULL, p);
  /* a no-op MERGE's rewritten files are not change data */
  const dk_changes__action nm[] = {act(DK_CHANGES__REMOVE, "a.parquet", 1, NULL),
                                   act(DK_CHANGES__ADD, "b.parquet", 1, NULL)};
  CHECK_EQ_INT((int64_t)plan(&p, nm, 2, 1), 0);
  dk__free(NULL, p);
  /* the last of two adds of one path is the one read */
  const dk_changes__action twice[] = {act(DK_CHANGES__ADD, "a.parquet", 1, NULL),
                                      act(DK_CHANGES__ADD, "a.parquet", 1, DV1)};
  CHECK_EQ_INT((int64_t)plan(&p, twice, 2, 0), 1);
  CHECK(p[0].a == &twice[1]);
  dk__free(NULL, p);
  /* removed and re-added with no DV on either side */
  const dk_changes__action bad[] = {act(DK_CHANGES__REMOVE, "a.parquet", 1, NULL),
                                    act(DK_CHANGES__ADD, "a.parquet", 1, NULL)};
  dk_error err = {0};
  size_t n = 9;
  CHECK_STATUS(dk_changes__plan_commit(&p, &n, bad, 2, 0, 7, NULL, &err), DK_CORRUPT);
  CHECK(p == NULL && n == 0);
  CHECK(strstr(err.message, "version 7") && strstr(err.message, "a.parquet"));
}
