/* test_changes_admit.c — admission control of incremental reads (src/changes/admit.c)
** against the batches Spark's Delta streaming source cut (tests/interop/cdf_oracle.py, table
** cdf_basic, Trigger.AvailableNow, maxFilesPerTrigger=1): the file sequence of that table is
** written out by hand from its log (v0 create; v1 2 files; v2 1 file; v3 UPDATE, v4 DELETE,
** v5 MERGE with 2 cdc files each; v6 OPTIMIZE; v7 overwrite: 2 adds + 1 remove inferred; v8
** delete all: 2 removes; v9 1 file), and the end offsets dk computes batch by batch must be
** the ones Spark recorded. */
#include <string.h>

#include "changes/changes_int.h"
#include "test.h"

#define B(v) {v, DK_STREAM_INDEX_BASE, DK_CHANGES__BASE, 0, 0}
#define E(v) {v, DK_CHANGES__INDEX_END, DK_CHANGES__END, 0, 0}
#define F(v, i, sz, atomic) {v, i, DK_CHANGES__FILE, sz, atomic}

/* Runs batches from (start_v, BASE) over seq until it is consumed; writes the end offsets. */
static size_t run_batches(dk_stream_offset *ends, size_t cap, const dk_changes__indexed *seq,
                          size_t n, const dk_changes__limits *lim) {
  size_t at = 0, k = 0;
  while (at < n && k < cap) {
    size_t took = dk_changes__admit(seq + at, n - at, lim);
    if (took == 0) break;
    at += took;
    dk_changes__offset_after(&ends[k++], &seq[at - 1], 0, -1);
  }
  return k;
}

static void check_ends(const dk_stream_offset *got, size_t n, const int64_t (*want)[2],
                       size_t nwant) {
  CHECK_EQ_INT((int64_t)n, (int64_t)nwant);
  for (size_t i = 0; i < n && i < nwant; i++) {
    CHECK_EQ_INT(got[i].version, want[i][0]);
    CHECK_EQ_INT(got[i].index, want[i][1] == -1 ? DK_STREAM_INDEX_BASE : want[i][1]);
  }
}

DK_TEST(changes__admit_files1_skip_change_commits_as_spark) {
  /* skipChangeCommits: v3, v4, v5, v7, v8 contribute no files; starts after (0, BASE) */
  const dk_changes__indexed seq[] = {
      E(0), B(1), F(1, 0, 100, 0), F(1, 1, 100, 0), E(1), B(2), F(2, 0, 100, 0), E(2),
      B(3), E(3), B(4), E(4), B(5), E(5), B(6), E(6), B(7), E(7), B(8), E(8),
      B(9), F(9, 0, 100, 0), E(9)};
  dk_changes__limits lim = {1, 0, 0};
  dk_stream_offset ends[16];
  size_t n = run_batches(ends, 16, seq, sizeof seq / sizeof *seq, &lim);
  static const int64_t spark[][2] = {{1, 0}, {2, -1}, {9, -1}, {10, -1}};
  check_ends(ends, n, spark, sizeof spark / sizeof *spark);
}

DK_TEST(changes__admit_cdf_files1_as_spark) {
  /* readChangeFeed: commits with cdc files (v3, v4, v5) are admitted whole */
  /* (a commit with cdc files lists only them: Spark's filterFiles drops its sentinels) */
  const dk_changes__indexed seq[] = {
      E(0), B(1), F(1, 0, 100, 0), F(1, 1, 100, 0), E(1), B(2), F(2, 0, 100, 0), E(2),
      F(3, 0, 50, 1), F(3, 1, 50, 1), F(4, 0, 50, 1), F(4, 1, 50, 1),
      F(5, 0, 50, 1), F(5, 1, 50, 1), B(6), E(6),
      B(7), F(7, 0, 80, 0), F(7, 1, 80, 0), F(7, 2, 300, 0), E(7),
      B(8), F(8, 0, 80, 0), F(8, 1, 80, 0), E(8), B(9), F(9, 0, 60, 0), E(9)};
  dk_changes__limits lim = {1, 0, 1};
  dk_stream_offset ends[32];
  size_t n = run_batches(ends, 32, seq, sizeof seq / sizeof *seq, &lim);
  static const int64_t spark[][2] = {{1, 0}, {2, -1}, {3, -1}, {3, 1},  {4, 1},  {5, 1},
                                     {7, 0}, {7, 1},  {8, -1}, {8, 0},  {9, -1}, {10, -1}};
  check_ends(ends, n, spark, sizeof spark / sizeof *spark);
}

DK_TEST(changes__admit_bytes_and_defaults) {
  const dk_changes__indexed seq[] = {B(1), F(1, 0, 40, 0), F(1, 1, 40, 0), F(1, 2, 40, 0),
                                     E(1), B(2), F(2, 0, 40, 0), E(2)};
  size_t n = sizeof seq / sizeof *seq;
  /* a byte limit is soft: a file is taken while budget remained before it */
  dk_changes__limits bytes = {0, 50, 0};
  CHECK_EQ_INT((int64_t)dk_changes__admit(seq, n, &bytes), 3); /* BASE, f0, f1 (overshoot) */
  dk_changes__limits one = {0, 1, 0};
  CHECK_EQ_INT((int64_t)dk_changes__admit(seq, n, &one), 2); /* at least one file */
  /* both limits: the tighter wins */
  dk_changes__limits both = {2, 1000, 0};
  CHECK_EQ_INT((int64_t)dk_changes__admit(seq, n, &both), 3);
  /* defaults (1000 files): everything, sentinels included */
  dk_changes__limits none = {0, 0, 0};
  CHECK_EQ_INT((int64_t)dk_changes__admit(seq, n, &none), (int64_t)n);
  /* an atomic commit larger than the budget is taken whole when it comes first, refused
   * (and the batch ends before it) when something was admitted already, a sentinel too */
  const dk_changes__indexed at[] = {B(1), F(1, 0, 10, 0), E(1), F(2, 0, 10, 1),
                                    F(2, 1, 10, 1), F(2, 2, 10, 1)};
  dk_changes__limits two = {2, 0, 1};
  CHECK_EQ_INT((int64_t)dk_changes__admit(at, 6, &two), 3);       /* up to v1's END */
  CHECK_EQ_INT((int64_t)dk_changes__admit(at + 3, 3, &two), 3);   /* v2 whole */
  const dk_changes__indexed sent[] = {E(1), F(2, 0, 10, 1), F(2, 1, 10, 1), F(2, 2, 10, 1)};
  CHECK_EQ_INT((int64_t)dk_changes__admit(sent, 4, &two), 1);     /* after a sentinel: refused */
  /* a DV commit's sentinels are part of it and count as files */
  const dk_changes__indexed dv[] = {{2, DK_STREAM_INDEX_BASE, DK_CHANGES__BASE, 0, 2},
                                    F(2, 0, 10, 2), F(2, 1, 10, 2),
                                    {2, DK_CHANGES__INDEX_END, DK_CHANGES__END, 0, 2},
                                    B(3), F(3, 0, 10, 0), E(3)};
  dk_changes__limits five = {5, 0, 1};
  CHECK_EQ_INT((int64_t)dk_changes__admit(dv, 7, &five), 7); /* 4 + v3: B, f (capacity), E */
  dk_changes__limits four = {4, 0, 1};
  CHECK_EQ_INT((int64_t)dk_changes__admit(dv, 7, &four), 4); /* no budget at v3's start */
  dk_stream_offset o;
  dk_changes__offset_after(&o, &at[5], 0, -1);
  CHECK_EQ_INT(o.version, 2);
  CHECK_EQ_INT(o.index, 2);
  dk_changes__offset_after(&o, &dv[3], 0, -1);
  CHECK_EQ_INT(o.version, 3);
  CHECK_EQ_INT(o.index, DK_STREAM_INDEX_BASE);
  /* inside an initial snapshot of version 5 */
  const dk_changes__indexed snap = F(5, 7, 1, 0);
  dk_changes__offset_after(&o, &snap, 1, 5);
  CHECK_EQ_INT(o.is_initial_snapshot, 1);
}
