/*
** test_sqlite.c — the SQLite connector in-process (connectors/sqlite): ISO date/timestamp
** text round trips, delta_scan expansion, reading a golden table against its expected file
** (written by Delta-Spark), pushdown counters, and bad input as SQLite errors.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk_sqlite.h"
#include "test.h"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (p) p[n] = 0;
  fclose(f);
  return p;
}

DK_TEST(sqlite__iso_text_round_trips) {
  char buf[64];
  /* the epoch is day 0 by definition; every day in 0001..9999 round-trips */
  CHECK_EQ_INT((int)dks_format_date(buf, 0), 10);
  CHECK(!strcmp(buf, "1970-01-01"));
  for (int64_t d = -719162; d <= 2932896; d += 37) {
    int32_t back;
    size_t n = dks_format_date(buf, d);
    CHECK(dks_parse_date(buf, n, &back));
    CHECK_EQ_INT(back, d);
  }
  for (int64_t us = -62135596800000000LL; us < 253402300799000000LL; us += 86399999937LL) {
    int64_t back;
    size_t n = dks_format_ts(buf, us, 1);
    CHECK(dks_parse_ts(buf, n, 1, &back));
    CHECK_EQ_INT(back, us);
    n = dks_format_ts(buf, us, 0);
    CHECK(dks_parse_ts(buf, n, 0, &back));
    CHECK(!dks_parse_ts(buf, n, 1, &back));
  }
  int32_t d;
  CHECK(!dks_parse_date("2023-02-29", 10, &d));
  CHECK(dks_parse_date("2024-02-29", 10, &d));
}

DK_TEST(sqlite__expand_leaves_literals_and_comments) {
  sqlite3 *db;
  CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
  CHECK(dk_sqlite_register(db, NULL) == SQLITE_OK);
  const char *sql = "SELECT 'delta_scan(''x'')', \"delta_scan\" -- delta_scan('y')\n/* delta_scan('z') */";
  char *out = NULL, *msg = NULL;
  CHECK(dk_sqlite_expand_sql(db, sql, &out, &msg) == SQLITE_OK);
  CHECK(out && !strcmp(out, sql));
  sqlite3_free(out);
  /* a call whose path does not exist is an error naming the path, not a crash */
  CHECK(dk_sqlite_expand_sql(db, "select * from DELTA_SCAN ('/no/such/dir')", &out, &msg) != SQLITE_OK);
  CHECK(msg && strstr(msg, "/no/such/dir"));
  sqlite3_free(msg);
  sqlite3_close(db);
}

DK_TEST(sqlite__golden_decimal_table_and_stats) {
  char root[1024], exp_path[1100];
  snprintf(root, sizeof root, "%s/delta-golden/basic-decimal-table", dk_test_data_dir());
  snprintf(exp_path, sizeof exp_path, "%s.expected.jsonl", root);
  char *expected = slurp(exp_path);
  CHECK(expected);
  sqlite3 *db;
  dk_sqlite_ctx *ctx = NULL;
  CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
  CHECK(dk_sqlite_register(db, &ctx) == SQLITE_OK);
  char *ddl = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING delta(%Q)", root);
  CHECK(sqlite3_exec(db, ddl, NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_free(ddl);
  sqlite3_stmt *st;
  CHECK(sqlite3_prepare_v2(db, "SELECT part, col1, col2, col3 FROM t", -1, &st, NULL) == SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    char line[512];
    snprintf(line, sizeof line, "{\"part\":\"%s\",\"col1\":\"%s\",\"col2\":\"%s\",\"col3\":\"%s\"}",
             sqlite3_column_text(st, 0), sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
             sqlite3_column_text(st, 3));
    CHECK(strstr(expected, line));
    rows++;
  }
  sqlite3_finalize(st);
  int lines = 0;
  for (const char *p = expected; *p; p++) lines += *p == '\n';
  CHECK_EQ_INT(rows, lines);
  dk_scan_stats s;
  dk_sqlite_stats_get(&s, ctx);
  CHECK_EQ_INT(s.rows_returned, lines);
  CHECK_EQ_INT(s.files_total, s.files_selected);
  /* an equality on the partition column prunes every other file (one file per value) */
  dk_sqlite_stats_reset(ctx);
  CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE part = '0.00004'", -1, &st, NULL) ==
        SQLITE_OK);
  CHECK(sqlite3_step(st) == SQLITE_ROW);
  CHECK_EQ_INT(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  dk_sqlite_stats_get(&s, ctx);
  CHECK_EQ_INT(s.files_pruned_partition, s.files_total - 1);
  free(expected);
  sqlite3_close(db);
}

DK_TEST(sqlite__bad_input_is_an_error) {
  sqlite3 *db;
  CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
  CHECK(dk_sqlite_register(db, NULL) == SQLITE_OK);
  char *msg = NULL;
  CHECK(sqlite3_exec(db, "CREATE VIRTUAL TABLE a USING delta('/no/such/table')", NULL, NULL,
                     &msg) == SQLITE_ERROR);
  CHECK(msg && strstr(msg, "not found"));
  sqlite3_free(msg);
  msg = NULL;
  CHECK(sqlite3_exec(db, "CREATE VIRTUAL TABLE b USING delta('/tmp', 'x'='y')", NULL, NULL,
                     &msg) == SQLITE_ERROR);
  CHECK(msg && strstr(msg, "bad option"));
  sqlite3_free(msg);
  msg = NULL;
  CHECK(sqlite3_exec(db, "SELECT * FROM delta_files(NULL)", NULL, NULL, &msg) == SQLITE_ERROR);
  sqlite3_free(msg);
  sqlite3_close(db);
}
