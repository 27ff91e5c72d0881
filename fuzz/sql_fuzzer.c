/*
** sql_fuzzer.c — differential libFuzzer target for the SQLite connector's constraint
** translation (connectors/sqlite/vtab.c: xBestIndex constraints, IN lists, LIKE/GLOB
** prefixes, LIMIT/OFFSET, the `omit` exactness rules, then xFilter's dk predicates and scan).
**
** The input's first byte picks a corpus table (dv-partitioned-with-checkpoint: partitions,
** deletion vectors, stats, a checkpoint; data-reader-partition-values: every partition type,
** null partitions, nested columns); the rest is SQL text put after "SELECT count(*), total(
** length(quote(...))) FROM (SELECT * FROM <t> " and ")". The same statement runs over the
** `delta` virtual table and over a plain SQLite copy of its rows (CREATE TABLE AS SELECT, made
** once), and the answers must be equal: a constraint dk applies differently from SQLite (a
** pushed predicate that drops or keeps a row SQLite would not, a LIMIT/OFFSET pushed wrongly)
** is the bug, as are crashes, leaks and sanitizer reports. Statements whose answer SQLite does
** not fix (random(), rowids, which differ between the two tables, and interrupted or failing
** statements) are not compared. A progress handler bounds each statement.
**
** The corpus tables are found under DK_FUZZ_TESTDATA (the build's ../shared/testdata), so the
** target runs from any directory.
*/
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dk_sqlite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef DK_FUZZ_TESTDATA
#define DK_FUZZ_TESTDATA "../shared/testdata"
#endif

static const char *const TABLES[] = {"delta-golden/dv-partitioned-with-checkpoint",
                                     "delta-golden/data-reader-partition-values"};
#define NTABLES (sizeof TABLES / sizeof *TABLES)

static sqlite3 *g_db;
static int g_ncols[NTABLES];
static char g_cols[NTABLES][1024]; /* "quote(a)||quote(b)..." over the data columns */
static int g_steps;

static double g_t0; /* the statement's start (monotonic clock, seconds) */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Interrupts runaway statements: past 200 x 1000 VM instructions, or past two seconds. The
** second bound is for joins of delta tables with each other, where each of thousands of scan
** restarts (xFilter) costs a plan, file opens and a hand-off to the scan's threads but only a
** few VM instructions: on a loaded machine those hand-offs alone made one input run 29 s. An
** interrupted statement is not compared, so the clock's nondeterminism changes no verdict. */
static int progress(void *p) {
  (void)p;
  return ++g_steps > 200 || now_s() - g_t0 > 2.0;
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "sql_fuzzer: %s: %s\n", what, msg ? msg : "");
  abort();
}

static void setup(void) {
  if (g_db) return;
  if (sqlite3_open(":memory:", &g_db) != SQLITE_OK) die("open", NULL);
  if (dk_sqlite_register(g_db, NULL) != SQLITE_OK) die("register", sqlite3_errmsg(g_db));
  for (size_t i = 0; i < NTABLES; i++) {
    char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE d%d USING delta('%q/%q');"
                                "CREATE TABLE m%d AS SELECT * FROM d%d;",
                                (int)i, DK_FUZZ_TESTDATA, TABLES[i], (int)i, (int)i);
    char *e = NULL;
    if (sqlite3_exec(g_db, sql, NULL, NULL, &e) != SQLITE_OK) die(TABLES[i], e);
    sqlite3_free(sql);
    sqlite3_stmt *st;
    char q[64];
    snprintf(q, sizeof q, "SELECT name FROM pragma_table_info('m%d')", (int)i);
    if (sqlite3_prepare_v2(g_db, q, -1, &st, NULL) != SQLITE_OK) die("columns", NULL);
    size_t len = 0;
    g_cols[i][0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *n = (const char *)sqlite3_column_text(st, 0);
      int k = snprintf(g_cols[i] + len, sizeof g_cols[i] - len, "%squote(\"%s\")",
                       g_ncols[i] ? "||" : "", n);
      if (k < 0 || (size_t)k >= sizeof g_cols[i] - len) die("columns", "too long");
      len += (size_t)k;
      g_ncols[i]++;
    }
    sqlite3_finalize(st);
  }
  sqlite3_progress_handler(g_db, 1000, progress, NULL);
}

/* Runs sql and prints its rows into out: SQLITE_DONE when it ran to the end, -1 when it did
** not prepare, else the error code (*msg: its message, copied). */
static int run(const char *sql, char *out, size_t cap, char *msg, size_t mcap) {
  sqlite3_stmt *st = NULL;
  out[0] = 0;
  msg[0] = 0;
  g_steps = 0;
  g_t0 = now_s();
  if (sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) != SQLITE_OK || !st) {
    snprintf(msg, mcap, "%s", sqlite3_errmsg(g_db));
    sqlite3_finalize(st);
    return -1;
  }
  int rc;
  size_t len = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(st); c++) {
      const char *v = (const char *)sqlite3_column_text(st, c);
      int k = snprintf(out + len, cap - len, "%s|", v ? v : "NULL");
      if (k < 0 || (size_t)k >= cap - len) break;
      len += (size_t)k;
    }
  }
  if (rc != SQLITE_DONE) snprintf(msg, mcap, "%s", sqlite3_errmsg(g_db));
  sqlite3_finalize(st);
  return rc;
}

static int mentions(const char *s, const char *word) {
  for (const char *p = s; *p; p++) {
    size_t i = 0;
    while (word[i] && p[i] && (p[i] | 0x20) == word[i]) i++;
    if (!word[i]) return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  setup();
  size_t ti = data[0] % NTABLES;
  char *tail = malloc(size);
  if (!tail) return 0;
  memcpy(tail, data + 1, size - 1);
  tail[size - 1] = 0;
  /* answers SQLite itself does not fix, or that name what only one table has */
  static const char *const skip[] = {"random", "rowid", "oid", "changes", "last_insert",
                                     "sqlite_", "_file_", "_row_", "pragma", "load_ext",
                                     "d0", "d1", "m0", "m1", "delta", "zeroblob"};
  int compare = 1;
  for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
    if (mentions(tail, skip[i])) compare = 0;
  char *sql[2];
  for (int k = 0; k < 2; k++)
    sql[k] = sqlite3_mprintf("SELECT count(*), total(length(%s)) FROM (SELECT * FROM %c%d %s)",
                             g_cols[ti], k ? 'm' : 'd', (int)ti, tail);
  static char a[4096], b[4096], ea[512], eb[512];
  int rd = sql[0] ? run(sql[0], a, sizeof a, ea, sizeof ea) : -1;
  int rm = sql[1] ? run(sql[1], b, sizeof b, eb, sizeof eb) : -1;
  if (compare && rd == SQLITE_DONE && rm == SQLITE_DONE && strcmp(a, b) != 0) {
    fprintf(stderr, "sql_fuzzer: the delta table answers %s, SQLite's copy %s, for\n  %s\n", a,
            b, sql[0]);
    abort();
  }
  /* a statement SQLite answers over its copy must not fail over the delta table (but for
   * the progress bound, which the slower virtual table may reach first) */
  if (compare && rm == SQLITE_DONE && rd != SQLITE_DONE && rd != SQLITE_INTERRUPT) {
    fprintf(stderr, "sql_fuzzer: the delta table fails (%d: %s) where SQLite's copy answers %s, "
            "for\n  %s\n", rd, ea, b, sql[0]);
    abort();
  }
  sqlite3_free(sql[0]);
  sqlite3_free(sql[1]);
  free(tail);
  return 0;
}
