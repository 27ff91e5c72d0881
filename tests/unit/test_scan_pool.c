/*
** test_scan_pool.c — batches of a real Delta table, allocated from the scan's recycling pool
** (src/util/pool.c), that outlive their scan, snapshot and table (rows checked against the
** table's expected file; ASan/LSan check that every block is returned exactly once).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/scan.h"
#include "scan/scan_int.h"
#include "test.h"


/* Batches kept after the scan, its stream, snapshot and table are gone: their buffers come
** from the scan's pool, which must outlive all of them. */
DK_TEST(scan_pool__batches_outlive_scan_snapshot_and_table) {
  static const char *const tables[] = {"delta-golden/dv-partitioned-with-checkpoint",
                                       "delta-golden/basic-with-inserts-overwrite-restore"};
  for (size_t ti = 0; ti < sizeof tables / sizeof *tables; ti++) {
    for (int threads = 1; threads <= 2; threads++) {
      dk_error err;
      dk_error_init(&err);
      char root[1024], exp[1100];
      snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), tables[ti]);
      snprintf(exp, sizeof exp, "%s.expected.jsonl", root);
      int64_t want = dk_test_count_lines(exp);
      CHECK(want > 0);
      dk_table *t = NULL;
      dk_snapshot *s = NULL;
      dk_scan *scan = NULL;
      CHECK_OK(dk_table_open(&t, root, NULL, &err), &err);
      CHECK_OK(dk_snapshot_open(&s, t, NULL, &err), &err);
      dk_scan_options so;
      memset(&so, 0, sizeof so);
      so.version = DK_SCAN_OPTIONS_VERSION;
      so.limit = -1;
      so.threads = threads;
      so.batch_size = 7; /* many batches */
      CHECK_OK(dk_scan_new(&scan, s, &so, &err), &err);
      struct ArrowArrayStream st;
      CHECK_OK(dk_scan_read(&st, scan, &err), &err);
      enum { MAX = 4096 };
      struct ArrowArray *kept = calloc(MAX, sizeof *kept);
      CHECK(kept != NULL);
      int n = 0;
      int64_t rows = 0;
      for (; n < MAX; n++) {
        CHECK_EQ_INT(st.get_next(&st, &kept[n]), 0);
        if (!kept[n].release) break;
        rows += kept[n].length;
      }
      CHECK(n < MAX);
      st.release(&st);
      dk_scan_free(scan);
      dk_snapshot_free(s);
      dk_table_free(t);
      CHECK_EQ_INT(rows, want);
      for (int i = 0; i < n; i++) kept[i].release(&kept[i]);
      free(kept);
    }
  }
}
