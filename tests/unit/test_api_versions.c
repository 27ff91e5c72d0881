/*
** test_api_versions.c — every *_open / *_new that takes a versioned options struct refuses
** one newer than this library's with DK_INVALID (house rule: reject only newer versions;
** 0 and the current version are accepted), and output structs say which version dk filled.
*/
#include <dirent.h>
#include <stdio.h>

#include "dk/parquet.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "test.h"

static char g_table[4096];

static const char *table_dir(void) {
  snprintf(g_table, sizeof g_table, "%s/delta-golden/basic-decimal-table", dk_test_data_dir());
  return g_table;
}

/* The first data file of the table (for the Parquet calls). */
static int first_parquet(char *out, size_t cap) {
  char part[4200];
  snprintf(part, sizeof part, "%s/part=0.00004", table_dir());
  DIR *d = opendir(part);
  if (!d) return -1;
  struct dirent *e;
  int rc = -1;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".parquet") && !strstr(e->d_name, ".crc")) {
      snprintf(out, cap, "%s/%s", part, e->d_name);
      rc = 0;
      break;
    }
  closedir(d);
  return rc;
}

DK_TEST(api__newer_options_versions_are_refused) {
  dk_error err;
  dk_table_options to = {DK_TABLE_OPTIONS_VERSION + 1, NULL, NULL, 0, 0};
  dk_table *t = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_table_open(&t, table_dir(), &to, &err), DK_INVALID);
  CHECK(strstr(err.message, "newer") != NULL);
  to.version = 0; /* "the first version" */
  CHECK_OK(dk_table_open(&t, table_dir(), &to, &err), &err);
  dk_snapshot_options so = {DK_SNAPSHOT_OPTIONS_VERSION + 1, -1, 0, 0, 0};
  dk_snapshot *s = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_snapshot_open(&s, t, &so, &err), DK_INVALID);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  CHECK_OK(dk_snapshot_open(&s, t, &so, &err), &err);
  dk_file_iter_options fo = {DK_FILE_ITER_OPTIONS_VERSION + 1, 0, 0};
  dk_file_iter *it = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_snapshot_files_open(&it, s, &fo, &err), DK_INVALID);
  dk_scan_options sco;
  memset(&sco, 0, sizeof sco);
  sco.version = DK_SCAN_OPTIONS_VERSION + 1;
  sco.limit = -1;
  dk_scan *sc = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_scan_new(&sc, s, &sco, &err), DK_INVALID);
  sco.version = DK_SCAN_OPTIONS_VERSION;
  CHECK_OK(dk_scan_new(&sc, s, &sco, &err), &err);
  dk_scan_stats st;
  memset(&st, 0, sizeof st);
  dk_scan_stats_get(&st, sc);
  CHECK_EQ_INT(st.version, DK_SCAN_STATS_VERSION);
  dk_scan_free(sc);
  dk_file_entry fe;
  CHECK_OK(dk_snapshot_file(&fe, s, 0, &err), &err);
  CHECK_EQ_INT(fe.version, DK_FILE_ENTRY_VERSION);
  CHECK(fe.stats == NULL);
  dk_snapshot_free(s);
  dk_table_free(t);

  char pq[4400];
  CHECK(first_parquet(pq, sizeof pq) == 0);
  dk_parquet_open_options po;
  memset(&po, 0, sizeof po);
  po.version = DK_PARQUET_OPEN_OPTIONS_VERSION + 1;
  dk_parquet_file *f = NULL;
  dk_error_init(&err);
  CHECK_STATUS(dk_parquet_open(&f, pq, &po, &err), DK_INVALID);
  CHECK_OK(dk_parquet_open(&f, pq, NULL, &err), &err);
  dk_parquet_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.version = DK_PARQUET_READ_OPTIONS_VERSION + 1;
  struct ArrowArrayStream stream;
  dk_error_init(&err);
  CHECK_STATUS(dk_parquet_read(&stream, f, &ro, &err), DK_INVALID);
  dk_parquet_column_stats cs;
  memset(&cs, 0, sizeof cs);
  CHECK_OK(dk_parquet_column_stats_get(&cs, f, 0, 0, &err), &err);
  CHECK_EQ_INT(cs.version, DK_PARQUET_COLUMN_STATS_VERSION);
  dk_parquet_file_free(f);
}
