/*
** cmd_sql.c — `dk sql "SQL" [--format table|jsonl|csv] [--stats] [--allow-attach]
** [--storage-option KEY=VALUE]...`: runs SQL in an in-memory
** SQLite database with dk's connector (connectors/sqlite) registered. delta_scan('path'
** [, version]) calls are expanded into temp `delta` tables first. --stats prints, after each
** statement, what pushdown did (the sum of the dk_scan_stats of every scan the statement ran)
** on stderr: one line of text with `--format table`, one JSON object otherwise.
** ATTACH and VACUUM INTO (which create or open database files) are refused through SQLite's
** authorizer unless --allow-attach is given; extension loading from SQL is off. Storage
** options go to the connector (dk_sqlite_storage_option) for every s3:// table of the query.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dk_sqlite.h"
#include "print.h"

enum { FMT_TABLE, FMT_JSONL, FMT_CSV };

static void put_base64(FILE *f, const unsigned char *p, int n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  fputc('"', f);
  for (int k = 0; k < n; k += 3) {
    unsigned v = (unsigned)p[k] << 16 | (k + 1 < n ? (unsigned)p[k + 1] << 8 : 0) |
                 (k + 2 < n ? p[k + 2] : 0);
    fputc(t[v >> 18], f);
    fputc(t[(v >> 12) & 63], f);
    fputc(k + 1 < n ? t[(v >> 6) & 63] : '=', f);
    fputc(k + 2 < n ? t[v & 63] : '=', f);
  }
  fputc('"', f);
}

/* The authorizer of `dk sql` without --allow-attach: ATTACH (also what VACUUM INTO runs) opens
** or creates a database file, so a query passed to dk could write anywhere the user can. */
static int deny_attach(void *unused, int action, const char *a, const char *b, const char *c,
                       const char *d) {
  return action == SQLITE_ATTACH ? SQLITE_DENY : SQLITE_OK;
}

static void sql_error(sqlite3 *db) {
  if (sqlite3_errcode(db) == SQLITE_AUTH)
    fprintf(stderr, "dk sql: ATTACH and VACUUM INTO open or create database files and are "
                    "refused (--allow-attach allows them)\n");
  else
    fprintf(stderr, "dk sql: %s\n", sqlite3_errmsg(db));
}

/* Text of column i for table/csv output (sqlite3_malloc'ed). */
static char *cell_text(sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return sqlite3_mprintf("%s", "NULL");
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(st, i);
      /* SQLite's printf drops the sign of -0.0 */
      return d == 0 && signbit(d) ? sqlite3_mprintf("-0.0") : sqlite3_mprintf("%!.15g", d);
    }
    case SQLITE_BLOB: {
      int n = sqlite3_column_bytes(st, i);
      const unsigned char *p = sqlite3_column_blob(st, i);
      sqlite3_str *s = sqlite3_str_new(NULL);
      sqlite3_str_appendall(s, "x'");
      for (int k = 0; k < n; k++) sqlite3_str_appendf(s, "%02x", p[k]);
      sqlite3_str_appendall(s, "'");
      return sqlite3_str_finish(s);
    }
    default: return sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, i));
  }
}

static void print_jsonl_row(sqlite3_stmt *st) {
  int n = sqlite3_column_count(st);
  putchar('{');
  for (int i = 0; i < n; i++) {
    const char *name = sqlite3_column_name(st, i);
    if (i) putchar(',');
    cli_put_json_str(stdout, name, strlen(name));
    putchar(':');
    switch (sqlite3_column_type(st, i)) {
      case SQLITE_NULL: fputs("null", stdout); break;
      case SQLITE_INTEGER: printf("%lld", (long long)sqlite3_column_int64(st, i)); break;
      case SQLITE_FLOAT: {
        double d = sqlite3_column_double(st, i);
        char *t = d == 0 && signbit(d) ? sqlite3_mprintf("-0.0") : sqlite3_mprintf("%!.17g", d);
        fputs(t ? t : "null", stdout);
        sqlite3_free(t);
        break;
      }
      case SQLITE_BLOB:
        put_base64(stdout, sqlite3_column_blob(st, i), sqlite3_column_bytes(st, i));
        break;
      default:
        cli_put_json_str(stdout, (const char *)sqlite3_column_text(st, i),
                         (size_t)sqlite3_column_bytes(st, i));
    }
  }
  fputs("}\n", stdout);
}

static void put_csv(const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

/* Runs one prepared statement, printing its rows. */
static int run_stmt(sqlite3 *db, sqlite3_stmt *st, int fmt) {
  int ncol = sqlite3_column_count(st);
  char **cells = NULL;
  size_t nrows = 0, cap = 0;
  int rc;
  int header = fmt == FMT_CSV && ncol;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW || (rc == SQLITE_DONE && header)) {
    if (header) { /* printed once the statement ran without error */
      header = 0;
      for (int i = 0; i < ncol; i++) {
        if (i) putchar(',');
        put_csv(sqlite3_column_name(st, i));
      }
      putchar('\n');
      if (rc == SQLITE_DONE) break;
    }
    if (fmt == FMT_JSONL) {
      print_jsonl_row(st);
    } else if (fmt == FMT_CSV) {
      for (int i = 0; i < ncol; i++) {
        if (i) putchar(',');
        if (sqlite3_column_type(st, i) == SQLITE_NULL) continue;
        char *t = cell_text(st, i);
        put_csv(t ? t : "");
        sqlite3_free(t);
      }
      putchar('\n');
    } else {
      if ((nrows + 1) * (size_t)ncol > cap) {
        size_t nc = cap ? cap * 2 : (size_t)ncol * 64;
        while (nc < (nrows + 1) * (size_t)ncol) nc *= 2;
        char **c2 = realloc(cells, nc * sizeof *c2);
        if (!c2) {
          rc = SQLITE_NOMEM;
          break;
        }
        cells = c2;
        cap = nc;
      }
      for (int i = 0; i < ncol; i++) cells[nrows * (size_t)ncol + (size_t)i] = cell_text(st, i);
      nrows++;
    }
  }
  if (fmt == FMT_TABLE && ncol && rc == SQLITE_DONE) {
    size_t *w = calloc((size_t)ncol, sizeof *w);
    if (w) {
      for (int i = 0; i < ncol; i++) w[i] = strlen(sqlite3_column_name(st, i));
      for (size_t r = 0; r < nrows; r++)
        for (int i = 0; i < ncol; i++) {
          const char *t = cells[r * (size_t)ncol + (size_t)i];
          size_t l = t ? strlen(t) : 0;
          if (l > w[i]) w[i] = l;
        }
      for (int i = 0; i < ncol; i++)
        printf("%s%-*s", i ? " | " : "", (int)w[i], sqlite3_column_name(st, i));
      putchar('\n');
      for (int i = 0; i < ncol; i++) {
        printf("%s", i ? "-+-" : "");
        for (size_t k = 0; k < w[i]; k++) putchar('-');
      }
      putchar('\n');
      for (size_t r = 0; r < nrows; r++) {
        for (int i = 0; i < ncol; i++) {
          const char *t = cells[r * (size_t)ncol + (size_t)i];
          printf("%s%-*s", i ? " | " : "", (int)w[i], t ? t : "");
        }
        putchar('\n');
      }
      printf("(%zu row%s)\n", nrows, nrows == 1 ? "" : "s");
      free(w);
    }
  }
  for (size_t k = 0; k < nrows * (size_t)ncol; k++) sqlite3_free(cells[k]);
  free(cells);
  if (rc != SQLITE_DONE) {
    sql_error(db);
    return 1;
  }
  return 0;
}


int dk_cli_sql(int argc, char **argv) {
  const char *sql = NULL;
  int fmt = FMT_TABLE, want_stats = 0, allow_attach = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--format") && i + 1 < argc) {
      const char *f = argv[++i];
      if (!strcmp(f, "table")) fmt = FMT_TABLE;
      else if (!strcmp(f, "jsonl")) fmt = FMT_JSONL;
      else if (!strcmp(f, "csv")) fmt = FMT_CSV;
      else {
        fprintf(stderr, "dk sql: unknown format '%s' (table, jsonl, csv)\n", f);
        return 2;
      }
    } else if (!strcmp(argv[i], "--stats")) {
      want_stats = 1;
    } else if (!strcmp(argv[i], "--allow-attach")) {
      allow_attach = 1;
    } else if (!strcmp(argv[i], "--storage-option") && i + 1 < argc) {
      if (dk_cli_storage_option(argv[++i])) return 2;
    } else if (!sql && argv[i][0] != '-') {
      sql = argv[i];
    } else {
      return dk_cli_usage("sql");
    }
  }
  if (!sql) {
    return dk_cli_usage("sql");
  }
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
    fprintf(stderr, "dk sql: cannot open SQLite\n");
    sqlite3_close(db);
    return 1;
  }
  /* no extension loading from SQL, no writes to the schema tables */
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
  if (!allow_attach) sqlite3_set_authorizer(db, deny_attach, NULL);
  dk_sqlite_ctx *ctx = NULL;
  int rc = 0;
  char *expanded = NULL, *msg = NULL;
  if (dk_sqlite_register(db, &ctx) != SQLITE_OK) {
    fprintf(stderr, "dk sql: cannot register the delta modules: %s\n", sqlite3_errmsg(db));
    rc = 1;
    goto done;
  }
  const char *const *okeys, *const *ovalues;
  for (int i = 0, n = dk_cli_storage_options(&okeys, &ovalues); i < n; i++)
    if (dk_sqlite_storage_option(ctx, okeys[i], ovalues[i]) != SQLITE_OK) {
      fprintf(stderr, "dk sql: out of memory\n");
      rc = 1;
      goto done;
    }
  if (dk_sqlite_expand_sql(db, sql, &expanded, &msg) != SQLITE_OK) {
    fprintf(stderr, "dk sql: %s\n", msg ? msg : sqlite3_errmsg(db));
    rc = 1;
    goto done;
  }
  const char *p = expanded;
  while (p && *p) {
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    dk_sqlite_stats_reset(ctx);
    if (sqlite3_prepare_v2(db, p, -1, &st, &tail) != SQLITE_OK) {
      sql_error(db);
      rc = 1;
      break;
    }
    p = tail;
    if (!st) continue; /* whitespace or a comment */
    rc = run_stmt(db, st, fmt);
    sqlite3_finalize(st);
    fflush(stdout);
    if (want_stats) {
      dk_scan_stats s;
      char buf[1024];
      dk_sqlite_stats_get(&s, ctx);
      if (fmt == FMT_TABLE) {
        fprintf(stderr,
                "-- pushdown: %lld scan(s); files %lld total, %lld pruned by partition, %lld by "
                "stats, %lld by limit, %lld read; row groups %lld of %lld skipped, pages "
                "skipped %lld; rows decoded %lld, deleted %lld, filtered %lld, returned %lld\n",
                (long long)s.rows_estimated, (long long)s.files_total,
                (long long)s.files_pruned_partition, (long long)s.files_pruned_stats,
                (long long)s.files_pruned_limit, (long long)s.files_selected,
                (long long)s.row_groups_skipped, (long long)s.row_groups_total,
                (long long)s.pages_skipped, (long long)s.rows_decoded, (long long)s.rows_deleted,
                (long long)s.rows_filtered, (long long)s.rows_returned);
      } else {
        dk_sqlite_stats_json(buf, sizeof buf, &s);
        fprintf(stderr, "%s\n", buf);
      }
    }
    if (rc) break;
  }
done:
  sqlite3_free(expanded);
  sqlite3_free(msg);
  sqlite3_close(db);
  return rc;
}
