/*
** vtab.c — the `delta` SQLite virtual table: SQLite's virtual-table contract (xBestIndex
** constraints, colUsed, LIMIT/OFFSET) mapped onto a dk scan (dk/scan.h), the way a
** DataSource V2 connector maps Spark's pushdown. Structure after SQLite's
** ext/misc/templatevtab.c (https://sqlite.org/vtab.html).
**
** Pushdown plan (xBestIndex -> xFilter)
**   idxNum bits:
**     bit 0 (1)  at least one WHERE constraint is passed to xFilter as a dk predicate
**     bit 1 (2)  a LIMIT value is among xFilter's arguments
**     bit 2 (4)  an OFFSET value is among xFilter's arguments
**   idxStr: "<colUsed as hex>:" then one entry per xFilter argument, in argv order:
**     "<column index>,<SQLite operator>,<flags>;" with flags bit 0 = IN list processed
**     all at once (sqlite3_vtab_in), bit 1 = constraint omitted (dk filters exactly).
**     LIMIT/OFFSET entries use column -1 and operators 73/74.
**   argv[k] is the right-hand value of entry k (an IN handle for IN entries).
**
** Exactness (when `omit` is set): dk's semantics must equal SQLite's for the value as SQLite
** sees it. That holds for comparisons of integer/boolean columns with INTEGER values,
** float/double columns with numbers, string columns with TEXT under BINARY collation, binary
** with BLOB, date/timestamp columns with TEXT in exactly the ISO form the connector returns
** (and range comparisons of timestamps with a 'YYYY-MM-DD' date, which sort before that day),
** decimal equality with TEXT in the exact form returned, and IS [NOT] NULL on any
** column. Such a constraint is omitted only when its value is a literal visible at plan time;
** others (joins, parameters, IN lists) are pushed for pruning and re-checked by SQLite. Values
** of another type are not pushed. LIKE (case-insensitive in SQLite) and GLOB with a literal
** prefix push a range/prefix for pruning and are always re-checked. LIMIT (+OFFSET) is pushed
** only when every WHERE constraint is omitted and there is no ORDER BY.
**
** Writes (xUpdate, one Delta commit per SQLite transaction, at xSync; ROLLBACK drops them):
** INSERT rows are appended (dk_write_table); DELETE and UPDATE name rows by rowid =
** (file ordinal << 40) | row index, which become deletion-vector bits (dk_txn_delete_rows),
** UPDATE's new rows written in the same commit. Changes are not visible to reads inside the
** SQLite transaction that makes them.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dk/changes.h"
#include "dk/dml.h"
#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "dk/sys/storage_s3.h"
#include "dk/txn.h"
#include "dk_sqlite.h"

#define F_IN 1
#define F_OMIT 2

static void stats_add(dk_scan_stats *a, const dk_scan_stats *b) {
  a->files_total += b->files_total;
  a->files_pruned_partition += b->files_pruned_partition;
  a->files_pruned_stats += b->files_pruned_stats;
  a->files_pruned_limit += b->files_pruned_limit;
  a->files_selected += b->files_selected;
  a->bytes_selected += b->bytes_selected;
  a->rows_estimated += b->rows_estimated > 0 ? b->rows_estimated : 0;
  a->row_groups_total += b->row_groups_total;
  a->row_groups_skipped += b->row_groups_skipped;
  a->pages_skipped += b->pages_skipped;
  a->rows_decoded += b->rows_decoded;
  a->rows_deleted += b->rows_deleted;
  a->rows_filtered += b->rows_filtered;
  a->rows_returned += b->rows_returned;
}

void dk_sqlite_stats_get(dk_scan_stats *out, const dk_sqlite_ctx *ctx) { *out = ctx->acc; }
void dk_sqlite_stats_reset(dk_sqlite_ctx *ctx) { memset(&ctx->acc, 0, sizeof ctx->acc); }

void dk_sqlite_stats_json(char *buf, size_t cap, const dk_scan_stats *s) {
  snprintf(buf, cap,
           "{\"scans\":%lld,\"files_total\":%lld,\"files_pruned_partition\":%lld,"
           "\"files_pruned_stats\":%lld,\"files_pruned_limit\":%lld,\"files_selected\":%lld,"
           "\"bytes_selected\":%lld,\"row_groups_total\":%lld,\"row_groups_skipped\":%lld,"
           "\"pages_skipped\":%lld,\"rows_decoded\":%lld,\"rows_deleted\":%lld,"
           "\"rows_filtered\":%lld,\"rows_returned\":%lld}",
           (long long)s->rows_estimated, (long long)s->files_total,
           (long long)s->files_pruned_partition, (long long)s->files_pruned_stats,
           (long long)s->files_pruned_limit, (long long)s->files_selected,
           (long long)s->bytes_selected, (long long)s->row_groups_total,
           (long long)s->row_groups_skipped, (long long)s->pages_skipped,
           (long long)s->rows_decoded, (long long)s->rows_deleted, (long long)s->rows_filtered,
           (long long)s->rows_returned);
}

/* ---- hidden metadata columns ------------------------------------------------------------- */

static const struct {
  const char *column, *field, *decl;
  unsigned bit;
} META[] = {
    {"_file_path", "file_path", "TEXT", DK_META_FILE_PATH},
    {"_file_name", "file_name", "TEXT", DK_META_FILE_NAME},
    {"_file_size", "file_size", "INTEGER", DK_META_FILE_SIZE},
    {"_file_modification_time", "file_modification_time", "TEXT", DK_META_FILE_MODIFICATION_TIME},
    {"_row_index", "row_index", "INTEGER", DK_META_ROW_INDEX},
    {"_row_id", "row_id", "INTEGER", DK_META_ROW_ID},
    {"_row_commit_version", "row_commit_version", "INTEGER", DK_META_ROW_COMMIT_VERSION},
};
#define N_META ((int)(sizeof META / sizeof META[0]))

/* ---- the table ----------------------------------------------------------------------------- */

typedef struct dks_col {
  char *name;
  char *fmt; /* Arrow format of a data column (for INSERT) */
  dks_kind kind;
  int prec, scale;
  int meta; /* -1 for data columns, else index into META */
} dks_col;

typedef struct dks_vtab {
  sqlite3_vtab base;
  dk_sqlite_ctx *ctx;
  dk_table *table;
  dk_snapshot *snap;
  int ncol, ndata;
  dks_col *cols;
  unsigned meta_avail;
  int64_t rows_total, bytes_total;
  int threads;
  int64_t batch_size;
  int no_confine; /* confine_paths=0: dk_table_options.confine_paths off (on by default) */
  /* no version/timestamp given: the snapshot follows the table, refreshed incrementally
   * (dk_snapshot_update) when a statement opens the first cursor on this table, so each
   * statement sees every commit finished before it and one version throughout */
  int follow_latest;
  int open_cursors;
  char *path;
  /* rowids: (file ordinal << 40) | row index in the file, once SQLite asked for one (see
   * delta_rowid); file URIs -> ordinals, open addressing on a power-of-two table */
  int want_identity;
  char **paths;
  int64_t npaths;
  int64_t *slots; /* nslots entries: ordinal + 1, 0 = empty */
  int64_t nslots;
  /* delta_changes: the change data feed of a version range instead of a snapshot's rows
   * (t->snap is NULL); without an end the range follows the table, as the snapshot does */
  int changes;
  dk_changes_options copts;
  /* INSERT: rows of this SQLite transaction (ndata values each), committed at xSync */
  sqlite3_value **pending;
  int64_t *replaces;  /* per pending row: the index in gone of the row it replaces (UPDATE), -1 */
  int64_t npending, cappending;
  /* DELETE / UPDATE: rowids of the rows that go (UPDATE's new rows are in pending) */
  int64_t *gone;
  int64_t ngone, capgone;
  int nupdates;
} dks_vtab;

typedef struct dks_cursor {
  sqlite3_vtab_cursor base;
  dk_scan *scan;
  struct ArrowArrayStream stream;
  struct ArrowSchema schema;
  struct ArrowArray batch;
  int64_t row;
  int64_t rowid;
  int eof;
  int *child;     /* per vtab column: index in the batch's children, -1 = NULL */
  int *meta_sub;  /* per vtab column (meta): index inside the _metadata struct */
  dk_arrow_json **json; /* per vtab column: JSON encoder of a nested column (lazy) */
  /* the running scan's request, kept for a restart with identity columns (delta_rowid) */
  const char **names;
  size_t nnames;
  dk_expr *filter;
  int64_t limit;
  unsigned meta;
  int id_child, id_path, id_row; /* _metadata child and its file_path/row_index, or -1 */
  int id_ver, id_type;           /* delta_changes: children of _commit_version, _change_type */
  dk_changes *changes;           /* delta_changes: the running feed */
  int64_t id_ord;                /* ordinal of the file of the last rowid, -1 = none */
  const char *id_last;           /* its URI in the vtab's table */
} dks_cursor;

static int set_dk_error(sqlite3_vtab *vt, const char *what, const dk_error *err) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("delta: %s%s%s: %s", what ? what : "", what ? ": " : "",
                                dk_status_str(err->code), err->message);
  return err->code == DK_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
}

static void pending_clear(dks_vtab *t) {
  for (int64_t i = 0; i < t->npending * t->ndata; i++) sqlite3_value_free(t->pending[i]);
  sqlite3_free(t->pending);
  sqlite3_free(t->replaces);
  t->pending = NULL;
  t->replaces = NULL;
  t->npending = t->cappending = 0;
  sqlite3_free(t->gone);
  t->gone = NULL;
  t->ngone = t->capgone = 0;
  t->nupdates = 0;
}

static void vtab_free(dks_vtab *t) {
  if (!t) return;
  pending_clear(t);
  for (int i = 0; i < t->ncol; i++) {
    sqlite3_free(t->cols[i].name);
    sqlite3_free(t->cols[i].fmt);
  }
  sqlite3_free(t->cols);
  for (int64_t i = 0; i < t->npaths; i++) sqlite3_free(t->paths[i]);
  sqlite3_free(t->paths);
  sqlite3_free(t->slots);
  sqlite3_free(t->path);
  dk_snapshot_free(t->snap);
  dk_table_free(t->table);
  sqlite3_free(t);
}

/* Strips one level of SQL quoting ('..', "..", [..], `..`) into a new string. */
static char *unquote(const char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  while (n && isspace((unsigned char)*s)) s++, n--;
  char q = n >= 2 ? s[0] : 0;
  char e = q == '[' ? ']' : q;
  if ((q == '\'' || q == '"' || q == '`' || q == '[') && s[n - 1] == e) {
    char *o = sqlite3_malloc64(n);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
      o[k++] = s[i];
      if (s[i] == e && q != '[' && s[i + 1] == e && i + 2 < n) i++;
    }
    o[k] = 0;
    return o;
  }
  return sqlite3_mprintf("%.*s", (int)n, s);
}

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno) return 0;
  *out = v;
  return 1;
}

/* Timestamp option: integer milliseconds, or 'YYYY-MM-DD[( |T)HH:MM:SS[.fff]][Z]' (UTC). */
static int parse_when(const char *s, int64_t *ms) {
  if (parse_i64(s, ms)) return 1;
  size_t n = strlen(s);
  int32_t days;
  if (n < 10 || !dks_parse_date(s, 10, &days)) return 0;
  int64_t t = (int64_t)days * 86400000LL;
  if (n == 10) {
    *ms = t;
    return 1;
  }
  int hh, mi, ss, used = 0;
  if ((s[10] != ' ' && s[10] != 'T') ||
      sscanf(s + 11, "%2d:%2d:%2d%n", &hh, &mi, &ss, &used) != 3 || hh > 23 || mi > 59 || ss > 59)
    return 0;
  t += (hh * 3600 + mi * 60 + ss) * 1000LL;
  const char *p = s + 11 + used;
  if (*p == '.') {
    int scale = 100;
    for (p++; isdigit((unsigned char)*p); p++, scale /= 10) t += (*p - '0') * scale;
  }
  if (*p == 'Z') p++;
  if (*p) return 0;
  *ms = t;
  return 1;
}

/* schema='a long, b string' [, partition_by='b']: creates the table at path unless one is
 * there (so reconnecting to a saved database finds it): CREATE TABLE IF NOT EXISTS. */
static int create_table(dk_sqlite_ctx *ctx, const char *path, int nopt, const char *const *keys,
                        const char *const *values, const char *schema, const char *parts,
                        char **pzErr) {
  if (!dk_storage_s3_is_uri(path)) { /* object stores have no directories to make */
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return SQLITE_ERROR;
    for (char *c = dir + 1; *c; c++)
      if (*c == '/') {
        *c = 0;
        (void)mkdir(dir, 0777);
        *c = '/';
      }
    (void)mkdir(dir, 0777);
  }
  dk_error err;
  dk_error_init(&err);
  char *json = NULL;
  dk_table *t = NULL;
  const char *cols[64];
  size_t n = 0;
  char *pb = parts ? sqlite3_mprintf("%s", parts) : NULL;
  for (char *tok = pb ? strtok(pb, ", ") : NULL; tok && n < 64; tok = strtok(NULL, ", "))
    cols[n++] = tok;
  dk_create_options o = {.version = DK_CREATE_OPTIONS_VERSION, .n_partition_columns = n,
                         .partition_columns = cols, .mode = DK_CREATE_IGNORE};
  int rc = SQLITE_OK;
  if (dk_schema_from_ddl(&json, schema, &err) ||
      dks_table_open(&t, ctx, path, nopt, keys, values, 1, &err) ||
      (o.schema_string = json, dk_table_create(NULL, t, &o, &err))) {
    *pzErr = sqlite3_mprintf("delta: creating '%s': %s: %s", path, dk_status_str(err.code),
                             err.message);
    rc = SQLITE_ERROR;
  }
  dk_table_free(t);
  dk_free(json);
  sqlite3_free(pb);
  return rc;
}

/* The delta_changes output schema of the vtab's range. */
static int changes_schema(dks_vtab *t, const char *path, struct ArrowSchema *sc, char **pzErr) {
  dk_error err;
  dk_error_init(&err);
  dk_changes *ch = NULL;
  if (dk_changes_new(&ch, t->table, &t->copts, &err) || dk_changes_schema(sc, ch, &err)) {
    *pzErr = sqlite3_mprintf("delta_changes: '%s': %s: %s", path, dk_status_str(err.code),
                             err.message);
    dk_changes_free(ch);
    return SQLITE_ERROR;
  }
  for (int64_t i = 0; i < dk_changes_num_files(ch); i++) {
    dk_change_file f;
    if (!dk_changes_file_get(&f, ch, i, &err)) t->bytes_total += f.entry.size > 0 ? f.entry.size : 0;
  }
  t->rows_total = t->bytes_total / 16 + 1;
  dk_changes_free(ch);
  return SQLITE_OK;
}

static int connect_impl(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **out, char **pzErr, int changes);

#define MAX_TABLE_OPTS 32

static void free_pairs(char **keys, char **values, int n) {
  for (int i = 0; i < n; i++) sqlite3_free(keys[i]), sqlite3_free(values[i]);
}

/* xCreate/xConnect: argv[3] is the path, the rest `key=value` options or a bare version. */
static int delta_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                         sqlite3_vtab **out, char **pzErr) {
  return connect_impl(db, aux, argc, argv, out, pzErr, 0);
}

static int connect_impl(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **out, char **pzErr, int changes) {
  dk_sqlite_ctx *ctx = aux;
  if (argc < 4 && changes) {
    *pzErr = sqlite3_mprintf(
        "delta_changes: usage: CREATE VIRTUAL TABLE c USING delta_changes('path', start=V "
        "[, end=W] | start_timestamp='...' [, end_timestamp='...'] [, batch_size=N])");
    return SQLITE_ERROR;
  }
  if (argc < 4) {
    *pzErr = sqlite3_mprintf(
        "delta: usage: CREATE VIRTUAL TABLE t USING delta('path' [, version=N] "
        "[, timestamp='...'] [, threads=N] [, batch_size=N]); for delta_scan('path') use "
        "`dk sql` (SQLite fixes a table-valued function's columns before it sees the path)");
    return SQLITE_ERROR;
  }
  dks_vtab *t = sqlite3_malloc64(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->ctx = ctx;
  t->changes = changes;
  t->copts.version = DK_CHANGES_OPTIONS_VERSION;
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION, .at_version = -1};
  char *path = unquote(argv[3]);
  char *create_schema = NULL, *create_parts = NULL; /* schema=/partition_by=: create the table */
  char *okeys[MAX_TABLE_OPTS], *ovalues[MAX_TABLE_OPTS]; /* aws_...=: storage options */
  int nopt = 0;
  int rc = SQLITE_ERROR;
  dk_error err;
  dk_error_init(&err);
  dk_scan *scan = NULL;
  struct ArrowSchema sc = {0};
  sqlite3_str *ddl = NULL;
  if (!path) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  const char *arg = argv[3];
  while (isspace((unsigned char)*arg)) arg++;
  if (!path[0] || (!strchr("'\"`[", *arg) && !sqlite3_stricmp(path, "null"))) {
    *pzErr = sqlite3_mprintf("delta: the first argument must be the table path ('path'), not %s",
                             path[0] ? "NULL" : "empty");
    goto fail;
  }
  for (int i = 4; i < argc; i++) {
    const char *a = argv[i];
    const char *eq = strchr(a, '=');
    char *key = eq ? sqlite3_mprintf("%.*s", (int)(eq - a), a) : NULL;
    char *val = unquote(eq ? eq + 1 : a);
    int ok = 1;
    if (key) {
      char *k2 = unquote(key);
      sqlite3_free(key);
      key = k2;
    }
    int64_t v;
    if (!val || (eq && !key)) {
      ok = -1;
    } else if (changes) {
      /* start=V, end=W (or positional), start_timestamp=, end_timestamp=, batch_size= */
      int is_start = key ? !sqlite3_stricmp(key, "start") : i == 4;
      int is_end = key ? !sqlite3_stricmp(key, "end") : i == 5;
      if ((is_start || is_end) && parse_i64(val, &v) && v >= 0) {
        if (is_start) t->copts.start_kind = DK_BOUND_VERSION, t->copts.start = v;
        else t->copts.end_kind = DK_BOUND_VERSION, t->copts.end = v;
      } else if (key && !sqlite3_stricmp(key, "start_timestamp") && parse_when(val, &v)) {
        t->copts.start_kind = DK_BOUND_TIMESTAMP;
        t->copts.start = v;
      } else if (key && !sqlite3_stricmp(key, "end_timestamp") && parse_when(val, &v)) {
        t->copts.end_kind = DK_BOUND_TIMESTAMP;
        t->copts.end = v;
      } else if (key && !sqlite3_stricmp(key, "batch_size") && parse_i64(val, &v) && v > 0 &&
                 v <= (1 << 24)) {
        t->batch_size = v;
      } else {
        ok = 0;
      }
    } else if (!key && i == 4 && parse_i64(val, &v) && v >= 0) {
      so.at_version = v;
    } else if (key && !sqlite3_stricmp(key, "version") && parse_i64(val, &v) && v >= 0) {
      so.at_version = v;
    } else if (key && !sqlite3_stricmp(key, "timestamp") && parse_when(val, &v)) {
      so.by_timestamp = 1;
      so.timestamp_ms = v;
    } else if (key && !sqlite3_stricmp(key, "threads") && parse_i64(val, &v) && v >= 0 &&
               v <= 256) {
      t->threads = (int)v;
    } else if (key && !sqlite3_stricmp(key, "batch_size") && parse_i64(val, &v) && v > 0 &&
               v <= (1 << 24)) {
      t->batch_size = v;
    } else if (key && !sqlite3_stricmp(key, "confine_paths") && parse_i64(val, &v) &&
               (v == 0 || v == 1)) {
      t->no_confine = v == 0;
    } else if (key && !sqlite3_stricmp(key, "schema") && !create_schema) {
      create_schema = val;
      val = NULL;
    } else if (key && !sqlite3_stricmp(key, "partition_by") && !create_parts) {
      create_parts = val;
      val = NULL;
    } else if (key && dks_is_storage_option(key) && nopt < MAX_TABLE_OPTS) {
      okeys[nopt] = key;
      ovalues[nopt++] = val;
      key = val = NULL;
    } else {
      ok = 0;
    }
    if (ok == 0 && changes) {
      *pzErr = sqlite3_mprintf("delta_changes: bad option '%s' (expected start=V, end=W, "
                               "start_timestamp='YYYY-MM-DD HH:MM:SS' or milliseconds, "
                               "end_timestamp=..., batch_size=N)",
                               a);
      ok = -2;
    }
    if (ok <= 0) {
      *pzErr = ok < 0 ? *pzErr
                      : sqlite3_mprintf(
                            "delta: bad option '%s' (expected version=N, timestamp='YYYY-MM-DD "
                            "HH:MM:SS' or milliseconds, threads=N, batch_size=N, "
                            "confine_paths=0|1, schema='a long, b string', partition_by='b', "
                            "or a storage option aws_...='...')",
                            a);
      sqlite3_free(key);
      sqlite3_free(val);
      rc = ok == -1 ? SQLITE_NOMEM : SQLITE_ERROR;
      goto fail;
    }
    sqlite3_free(key);
    sqlite3_free(val);
  }
  if (so.by_timestamp && so.at_version >= 0) {
    *pzErr = sqlite3_mprintf("delta: give version or timestamp, not both");
    goto fail;
  }
  if (create_schema && create_table(ctx, path, nopt, (const char *const *)okeys,
                                    (const char *const *)ovalues, create_schema, create_parts,
                                    pzErr) != SQLITE_OK)
    goto fail;
  if (changes && t->copts.start_kind == DK_BOUND_DEFAULT) {
    *pzErr = sqlite3_mprintf("delta_changes: start=V or start_timestamp=... is required");
    goto fail;
  }
  t->follow_latest = so.at_version < 0 && !so.by_timestamp && !changes;
  t->meta_avail = DK_META_FILE_PATH | DK_META_FILE_NAME | DK_META_FILE_SIZE |
                  DK_META_FILE_MODIFICATION_TIME | DK_META_ROW_INDEX;
  if (changes) {
    if (dks_table_open(&t->table, ctx, path, nopt, (const char *const *)okeys,
                       (const char *const *)ovalues, !t->no_confine, &err)) {
      *pzErr = sqlite3_mprintf("delta_changes: '%s': %s: %s", path, dk_status_str(err.code),
                               err.message);
      goto fail;
    }
    if (changes_schema(t, path, &sc, pzErr)) goto fail;
  } else {
    if (dks_table_open(&t->table, ctx, path, nopt, (const char *const *)okeys,
                       (const char *const *)ovalues, !t->no_confine, &err) ||
        dk_snapshot_open(&t->snap, t->table, &so, &err)) {
      *pzErr = sqlite3_mprintf("delta: '%s': %s: %s", path, dk_status_str(err.code), err.message);
      goto fail;
    }
    dk_scan_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_SCAN_OPTIONS_VERSION;
    o.limit = -1;
    if (dk_scan_new(&scan, t->snap, &o, &err) || dk_scan_schema(&sc, scan, &err)) {
      *pzErr = sqlite3_mprintf("delta: '%s': %s: %s", path, dk_status_str(err.code), err.message);
      goto fail;
    }
    dk_scan_stats st;
    dk_scan_stats_get(&st, scan);
    t->rows_total = st.rows_estimated >= 0 ? st.rows_estimated : st.bytes_selected / 16;
    t->bytes_total = st.bytes_selected;
    if (dk_snapshot_has_feature(t->snap, "rowTracking"))
      t->meta_avail |= DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION;
  }
  t->cols = sqlite3_malloc64(sizeof *t->cols * (size_t)(sc.n_children + N_META));
  if (!t->cols) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  ddl = sqlite3_str_new(db);
  sqlite3_str_appendall(ddl, "CREATE TABLE x(");
  for (int64_t i = 0; i < sc.n_children; i++) {
    dks_col *c = &t->cols[t->ncol];
    c->name = sqlite3_mprintf("%s", sc.children[i]->name);
    c->fmt = sqlite3_mprintf("%s", sc.children[i]->format);
    c->kind = dks_kind_of(sc.children[i]->format, &c->prec, &c->scale);
    c->meta = -1;
    t->ncol++;
    if (!c->name) {
      rc = SQLITE_NOMEM;
      goto fail;
    }
    const char *decl = "TEXT";
    switch (c->kind) {
      case DKS_BOOL:
      case DKS_INT: decl = "INTEGER"; break;
      case DKS_FLOAT:
      case DKS_DOUBLE: decl = "REAL"; break;
      case DKS_BINARY: decl = "BLOB"; break;
      case DKS_NULL: decl = ""; break;
      default: break;
    }
    sqlite3_str_appendf(ddl, "%s\"%w\" %s", i ? ", " : "", c->name, decl);
  }
  t->ndata = t->ncol;
  for (int m = 0; m < N_META; m++) {
    int clash = 0;
    for (int i = 0; i < t->ndata; i++) clash |= !sqlite3_stricmp(t->cols[i].name, META[m].column);
    if (clash) continue;
    dks_col *c = &t->cols[t->ncol++];
    c->name = sqlite3_mprintf("%s", META[m].column);
    c->fmt = NULL;
    c->kind = DKS_OTHER;
    c->meta = m;
    if (!c->name) {
      rc = SQLITE_NOMEM;
      goto fail;
    }
    sqlite3_str_appendf(ddl, "%s\"%w\" %s HIDDEN", t->ncol > 1 ? ", " : "", c->name, META[m].decl);
  }
  sqlite3_str_appendall(ddl, ")");
  char *sql = sqlite3_str_finish(ddl);
  ddl = NULL;
  if (!sql) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  rc = sqlite3_declare_vtab(db, sql);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("delta: cannot declare the table: %s", sqlite3_errmsg(db));
    goto fail;
  }
  sc.release(&sc);
  dk_scan_free(scan);
  t->path = path;
  sqlite3_free(create_schema);
  sqlite3_free(create_parts);
  free_pairs(okeys, ovalues, nopt);
  *out = &t->base;
  return SQLITE_OK;
fail:
  sqlite3_free(create_schema);
  sqlite3_free(create_parts);
  free_pairs(okeys, ovalues, nopt);
  if (ddl) sqlite3_free(sqlite3_str_finish(ddl));
  if (sc.release) sc.release(&sc);
  dk_scan_free(scan);
  sqlite3_free(path);
  vtab_free(t);
  return rc;
}

static int delta_disconnect(sqlite3_vtab *vt) {
  vtab_free((dks_vtab *)vt);
  return SQLITE_OK;
}

/* ---- constraints -> dk predicates ----------------------------------------------------------- */

enum { PUSH_NO = 0, PUSH_INEXACT = 1, PUSH_EXACT = 2 };

/* Builds the dk literal for value v against column c; *exact tells whether dk's comparison
** then agrees with SQLite's. Returns PUSH_NO (with *lit NULL) when the value is not pushable. */
/* An integral REAL (2.0) as the INTEGER SQLite compares it equal to: SQLite may hand the same
** literal to xBestIndex as INTEGER 2 (affinity applied) and to xFilter as REAL 2.0, and a
** constraint omitted at plan time must translate at filter time too (sql_fuzzer found
** "col1 > 2." failing with "constraint lost"). */
static int integral_value(sqlite3_value *v, int t) {
  if (t != SQLITE_FLOAT) return t;
  double d = sqlite3_value_double(v);
  return d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
                 d == (double)(sqlite3_int64)d
             ? SQLITE_INTEGER
             : t;
}

static int make_literal(dk_expr **lit, const dks_col *c, sqlite3_value *v, dk_error *err) {
  *lit = NULL;
  int t = sqlite3_value_type(v);
  if (c->kind == DKS_INT || c->kind == DKS_BOOL) t = integral_value(v, t);
  switch (c->kind) {
    case DKS_INT:
      if (t != SQLITE_INTEGER) return PUSH_NO;
      return dk_expr_literal_int64(lit, sqlite3_value_int64(v), err) ? PUSH_NO : PUSH_EXACT;
    case DKS_BOOL: {
      if (t != SQLITE_INTEGER) return PUSH_NO;
      sqlite3_int64 x = sqlite3_value_int64(v);
      if (x != 0 && x != 1) return PUSH_NO;
      return dk_expr_literal_bool(lit, x == 1, err) ? PUSH_NO : PUSH_EXACT;
    }
    case DKS_DOUBLE:
      if (t == SQLITE_INTEGER) {
        sqlite3_int64 x = sqlite3_value_int64(v);
        if (x > (1LL << 53) || x < -(1LL << 53)) return PUSH_NO;
        return dk_expr_literal_double(lit, (double)x, err) ? PUSH_NO : PUSH_EXACT;
      }
      if (t != SQLITE_FLOAT) return PUSH_NO;
      return dk_expr_literal_double(lit, sqlite3_value_double(v), err) ? PUSH_NO : PUSH_EXACT;
    case DKS_FLOAT:
      /* float columns: SQLite compares the widened value; dk may compare in float. */
      if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) return PUSH_NO;
      return PUSH_NO;
    case DKS_STRING:
      if (t != SQLITE_TEXT) return PUSH_NO;
      return dk_expr_literal_string(lit, (const char *)sqlite3_value_text(v),
                                    (size_t)sqlite3_value_bytes(v), err)
                 ? PUSH_NO
                 : PUSH_EXACT;
    case DKS_BINARY:
      if (t != SQLITE_BLOB) return PUSH_NO;
      return dk_expr_literal_binary(lit, sqlite3_value_blob(v), (size_t)sqlite3_value_bytes(v), err)
                 ? PUSH_NO
                 : PUSH_EXACT;
    case DKS_DATE: {
      int32_t d;
      if (t != SQLITE_TEXT ||
          !dks_parse_date((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &d))
        return PUSH_NO;
      return dk_expr_literal_date(lit, d, err) ? PUSH_NO : PUSH_EXACT;
    }
    case DKS_TIMESTAMP:
    case DKS_TIMESTAMP_NTZ: {
      int64_t us;
      int utc = c->kind == DKS_TIMESTAMP;
      if (t != SQLITE_TEXT ||
          !dks_parse_ts((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), utc, &us))
        return PUSH_NO;
      dk_status s = utc ? dk_expr_literal_timestamp(lit, us, err)
                        : dk_expr_literal_timestamp_ntz(lit, us, err);
      return s ? PUSH_NO : PUSH_EXACT;
    }
    case DKS_DECIMAL: {
      if (t != SQLITE_TEXT) return PUSH_NO;
      const char *s = (const char *)sqlite3_value_text(v);
      /* only the exact text the connector returns (same scale) compares equal in SQLite */
      const char *dot = strchr(s, '.');
      size_t frac = dot ? strlen(dot + 1) : 0;
      if ((int)frac != c->scale || (c->scale == 0 && dot)) return PUSH_NO;
      return dk_expr_literal_decimal_text(lit, s, c->prec, c->scale, err) ? PUSH_NO : PUSH_EXACT;
    }
    default:
      return PUSH_NO;
  }
}

static dk_expr *column_ref(const dks_col *c, dk_error *err) {
  dk_expr *e = NULL;
  const char *p[1] = {c->name};
  if (dk_expr_column(&e, p, 1, err)) return NULL;
  return e;
}

/* The successor of a byte string for an exclusive upper bound: increments the last byte
** below 0xff (dropping trailing 0xff). Returns 0 when there is none. */
static int successor(char *s, size_t *n) {
  while (*n && (unsigned char)s[*n - 1] == 0xff) (*n)--;
  if (!*n) return 0;
  s[*n - 1] = (char)((unsigned char)s[*n - 1] + 1);
  return 1;
}

/* LIKE 'prefix...' (ASCII case-insensitive) / GLOB 'prefix...' -> range on the prefix. */
static int pattern_pred(dk_expr **out, const dks_col *c, int op, sqlite3_value *v, dk_error *err) {
  *out = NULL;
  if (c->kind != DKS_STRING || sqlite3_value_type(v) != SQLITE_TEXT) return PUSH_NO;
  const char *p = (const char *)sqlite3_value_text(v);
  size_t n = 0;
  if (op == SQLITE_INDEX_CONSTRAINT_GLOB) {
    while (p[n] && !strchr("*?[", p[n])) n++;
  } else {
    while (p[n] && p[n] != '%' && p[n] != '_') n++;
  }
  if (!n) return PUSH_NO;
  char *lo = sqlite3_malloc64(n + 1), *hi = sqlite3_malloc64(n + 1);
  if (!lo || !hi) {
    sqlite3_free(lo);
    sqlite3_free(hi);
    return PUSH_NO;
  }
  for (size_t i = 0; i < n; i++) {
    int ci = op == SQLITE_INDEX_CONSTRAINT_LIKE && (unsigned char)p[i] < 0x80;
    lo[i] = ci ? (char)toupper((unsigned char)p[i]) : p[i];
    hi[i] = ci ? (char)tolower((unsigned char)p[i]) : p[i];
  }
  int rc = PUSH_NO;
  if (!memcmp(lo, hi, n)) {
    dk_expr *col = column_ref(c, err);
    if (col && !dk_expr_starts_with(out, col, lo, n, err)) rc = PUSH_INEXACT;
  } else {
    size_t hn = n;
    dk_expr *a = NULL, *b = NULL, *la = NULL, *lb = NULL, *ca = column_ref(c, err);
    if (ca && !dk_expr_literal_string(&la, lo, n, err) &&
        !dk_expr_cmp(&a, DK_CMP_GE, ca, la, err)) {
      ca = NULL;
      la = NULL;
      if (successor(hi, &hn)) {
        dk_expr *cb = column_ref(c, err);
        if (cb && !dk_expr_literal_string(&lb, hi, hn, err) &&
            !dk_expr_cmp(&b, DK_CMP_LT, cb, lb, err)) {
          if (!dk_expr_and(out, a, b, err)) rc = PUSH_INEXACT;
          a = NULL;
        } else {
          dk_expr_free(cb);
          dk_expr_free(lb);
        }
      }
      if (a) {
        *out = a;
        rc = PUSH_INEXACT;
      }
    } else {
      dk_expr_free(ca);
      dk_expr_free(la);
    }
  }
  sqlite3_free(lo);
  sqlite3_free(hi);
  return rc;
}

/* One constraint with value v (NULL for ISNULL/ISNOTNULL) as a dk predicate. */
static int constraint_pred(dk_expr **out, const dks_col *c, int op, sqlite3_value *v,
                           dk_error *err) {
  *out = NULL;
  if (op == SQLITE_INDEX_CONSTRAINT_ISNULL || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL) {
    dk_expr *col = column_ref(c, err);
    if (!col) return PUSH_NO;
    return dk_expr_is_null(out, col, op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL, err) ? PUSH_NO
                                                                                    : PUSH_EXACT;
  }
  if (!v) return PUSH_NO;
  if (op == SQLITE_INDEX_CONSTRAINT_LIKE || op == SQLITE_INDEX_CONSTRAINT_GLOB)
    return pattern_pred(out, c, op, v, err);
  if (sqlite3_value_type(v) == SQLITE_NULL) {
    /* x IS NULL written as `IS`; other comparisons with NULL are never true (not pushed) */
    if (op == SQLITE_INDEX_CONSTRAINT_IS || op == SQLITE_INDEX_CONSTRAINT_ISNOT)
      return constraint_pred(out, c,
                             op == SQLITE_INDEX_CONSTRAINT_IS ? SQLITE_INDEX_CONSTRAINT_ISNULL
                                                              : SQLITE_INDEX_CONSTRAINT_ISNOTNULL,
                             NULL, err);
    return PUSH_NO;
  }
  dk_cmp_op cop;
  int negate = 0;
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: cop = DK_CMP_EQ; break;
    case SQLITE_INDEX_CONSTRAINT_NE: cop = DK_CMP_NE; break;
    case SQLITE_INDEX_CONSTRAINT_LT: cop = DK_CMP_LT; break;
    case SQLITE_INDEX_CONSTRAINT_LE: cop = DK_CMP_LE; break;
    case SQLITE_INDEX_CONSTRAINT_GT: cop = DK_CMP_GT; break;
    case SQLITE_INDEX_CONSTRAINT_GE: cop = DK_CMP_GE; break;
    case SQLITE_INDEX_CONSTRAINT_IS: cop = DK_CMP_NULL_SAFE_EQ; break;
    case SQLITE_INDEX_CONSTRAINT_ISNOT: cop = DK_CMP_NULL_SAFE_EQ; negate = 1; break;
    default: return PUSH_NO;
  }
  if ((c->kind == DKS_TIMESTAMP || c->kind == DKS_TIMESTAMP_NTZ) &&
      sqlite3_value_type(v) == SQLITE_TEXT && sqlite3_value_bytes(v) == 10 &&
      (cop == DK_CMP_LT || cop == DK_CMP_LE || cop == DK_CMP_GT || cop == DK_CMP_GE)) {
    /* 'YYYY-MM-DD' against the text 'YYYY-MM-DDTHH:MM:SS.ffffff[Z]': every value of that day
    ** sorts after the date, so > and >= mean >= midnight, < and <= mean < midnight. */
    int32_t days;
    if (!dks_parse_date((const char *)sqlite3_value_text(v), 10, &days)) return PUSH_NO;
    int64_t us = (int64_t)days * 86400000000LL;
    dk_expr *lit = NULL, *col, *e = NULL;
    if (c->kind == DKS_TIMESTAMP ? dk_expr_literal_timestamp(&lit, us, err)
                                 : dk_expr_literal_timestamp_ntz(&lit, us, err))
      return PUSH_NO;
    if (!(col = column_ref(c, err))) {
      dk_expr_free(lit);
      return PUSH_NO;
    }
    if (dk_expr_cmp(&e, cop == DK_CMP_GT || cop == DK_CMP_GE ? DK_CMP_GE : DK_CMP_LT, col, lit, err))
      return PUSH_NO;
    *out = e;
    return PUSH_EXACT;
  }
  if (c->kind == DKS_DECIMAL && cop != DK_CMP_EQ && cop != DK_CMP_NE &&
      cop != DK_CMP_NULL_SAFE_EQ)
    return PUSH_NO; /* SQLite orders the TEXT, dk the numbers */
  dk_expr *lit;
  int how = make_literal(&lit, c, v, err);
  if (how == PUSH_NO) return PUSH_NO;
  dk_expr *col = column_ref(c, err), *e = NULL;
  if (!col) {
    dk_expr_free(lit);
    return PUSH_NO;
  }
  if (dk_expr_cmp(&e, cop, col, lit, err)) return PUSH_NO;
  if (negate && dk_expr_not(&e, e, err)) return PUSH_NO;
  *out = e;
  return how;
}

static int op_pushable(int op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
    case SQLITE_INDEX_CONSTRAINT_NE:
    case SQLITE_INDEX_CONSTRAINT_LT:
    case SQLITE_INDEX_CONSTRAINT_LE:
    case SQLITE_INDEX_CONSTRAINT_GT:
    case SQLITE_INDEX_CONSTRAINT_GE:
    case SQLITE_INDEX_CONSTRAINT_IS:
    case SQLITE_INDEX_CONSTRAINT_ISNOT:
    case SQLITE_INDEX_CONSTRAINT_ISNULL:
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL:
    case SQLITE_INDEX_CONSTRAINT_LIKE:
    case SQLITE_INDEX_CONSTRAINT_GLOB:
      return 1;
    default:
      return 0;
  }
}

static int kind_pushable(dks_kind k) {
  return k == DKS_INT || k == DKS_BOOL || k == DKS_DOUBLE || k == DKS_STRING || k == DKS_BINARY ||
         k == DKS_DATE || k == DKS_TIMESTAMP || k == DKS_TIMESTAMP_NTZ || k == DKS_DECIMAL;
}

static int delta_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  dks_vtab *t = (dks_vtab *)vt;
  sqlite3_str *plan = sqlite3_str_new(NULL);
  sqlite3_str_appendf(plan, "%llx:", (unsigned long long)info->colUsed);
  int nargv = 0, all_omitted = 1, idx_num = 0, ilimit = -1, ioffset = -1;
  double rows = (double)(t->rows_total > 0 ? t->rows_total : 1);
  dk_error err;
  dk_error_init(&err);
  dk_expr *known[64];
  size_t nknown = 0;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[i];
    if (k->op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      if (k->usable) ilimit = i;
      continue;
    }
    if (k->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (k->usable) ioffset = i;
      continue;
    }
    if (!k->usable || k->iColumn < 0 || k->iColumn >= t->ndata || !op_pushable(k->op) ||
        !kind_pushable(t->cols[k->iColumn].kind)) {
      all_omitted = 0;
      continue;
    }
    const dks_col *c = &t->cols[k->iColumn];
    if ((c->kind == DKS_STRING || c->kind == DKS_BINARY) &&
        k->op != SQLITE_INDEX_CONSTRAINT_ISNULL && k->op != SQLITE_INDEX_CONSTRAINT_ISNOTNULL &&
        k->op != SQLITE_INDEX_CONSTRAINT_LIKE && k->op != SQLITE_INDEX_CONSTRAINT_GLOB) {
      const char *coll = sqlite3_vtab_collation(info, i);
      if (coll && sqlite3_stricmp(coll, "BINARY")) {
        all_omitted = 0;
        continue;
      }
    }
    int flags = 0;
    sqlite3_value *rhs = NULL;
    int has_rhs = k->op == SQLITE_INDEX_CONSTRAINT_ISNULL ||
                  k->op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL ||
                  sqlite3_vtab_rhs_value(info, i, &rhs) == SQLITE_OK;
    if (k->op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(info, i, -1)) {
      sqlite3_vtab_in(info, i, 1);
      flags |= F_IN;
      has_rhs = 0;
      rows = rows / 4 + 1;
    }
    if (has_rhs) {
      dk_expr *e = NULL;
      int how = constraint_pred(&e, c, k->op, rhs, &err);
      if (how == PUSH_NO) { /* e.g. a value of another type: leave it to SQLite */
        all_omitted = 0;
        continue;
      }
      if (how == PUSH_EXACT) flags |= F_OMIT;
      if (nknown < 64) known[nknown++] = e;
      else dk_expr_free(e);
    } else if (!(flags & F_IN)) {
      rows = k->op == SQLITE_INDEX_CONSTRAINT_EQ ? rows / 10 + 1 : rows / 3 + 1;
    }
    if (!(flags & F_OMIT)) all_omitted = 0;
    info->aConstraintUsage[i].argvIndex = ++nargv;
    info->aConstraintUsage[i].omit = (flags & F_OMIT) != 0;
    sqlite3_str_appendf(plan, "%d,%d,%d;", k->iColumn, k->op, flags);
    idx_num |= 1;
  }
  double bytes = (double)t->bytes_total;
  if (nknown && !t->changes) {
    /* plan the scan of the literal constraints to estimate rows from file statistics */
    dk_expr *f = NULL;
    if (!dk_expr_and_n(&f, known, nknown, &err)) {
      dk_scan_options o;
      memset(&o, 0, sizeof o);
      o.version = DK_SCAN_OPTIONS_VERSION;
      o.limit = -1;
      o.filter = f;
      o.columns = (const char *const *)&t->cols[0].name;
      o.n_columns = 0;
      dk_scan *s = NULL;
      if (!dk_scan_new(&s, t->snap, &o, &err)) {
        dk_scan_stats st;
        dk_scan_stats_get(&st, s);
        double frac = t->rows_total > 0 && st.rows_estimated >= 0
                          ? (double)st.rows_estimated / (double)t->rows_total
                          : 1.0;
        rows *= frac;
        /* each pushed predicate also filters rows inside the selected files */
        for (size_t i = 0; i < nknown; i++) rows = rows / 2 + 1;
        bytes = (double)st.bytes_selected;
        dk_scan_free(s);
      }
      dk_expr_free(f);
    }
  }
  /* SQLite offers LIMIT with an ORDER BY on this table's columns too; using it is only
  ** right when the scan delivers that order, which a dk scan does not promise. */
  for (size_t i = 0; t->changes && i < nknown; i++) { /* no estimate from statistics */
    rows = rows / 2 + 1;
    dk_expr_free(known[i]);
  }
  if (all_omitted && ilimit >= 0 && info->nOrderBy == 0 && !t->changes) {
    info->aConstraintUsage[ilimit].argvIndex = ++nargv;
    sqlite3_str_appendf(plan, "-1,%d,0;", SQLITE_INDEX_CONSTRAINT_LIMIT);
    idx_num |= 2;
    sqlite3_value *lv = NULL;
    if (sqlite3_vtab_rhs_value(info, ilimit, &lv) == SQLITE_OK &&
        sqlite3_value_type(lv) == SQLITE_INTEGER && sqlite3_value_int64(lv) >= 0 &&
        (double)sqlite3_value_int64(lv) < rows)
      rows = (double)sqlite3_value_int64(lv);
    if (ioffset >= 0) {
      info->aConstraintUsage[ioffset].argvIndex = ++nargv;
      sqlite3_str_appendf(plan, "-1,%d,0;", SQLITE_INDEX_CONSTRAINT_OFFSET);
      idx_num |= 4;
    }
  }
  int nused = 0;
  for (int i = 0; i < 64; i++) nused += (int)((info->colUsed >> i) & 1);
  if (rows < 1) rows = 1;
  info->estimatedRows = (sqlite3_int64)rows;
  info->estimatedCost = 100.0 + bytes / 1e5 + rows * (1.0 + 0.2 * nused);
  info->idxNum = idx_num;
  char *s = sqlite3_str_finish(plan);
  if (!s) return SQLITE_NOMEM;
  info->idxStr = s;
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

/* ---- cursor -------------------------------------------------------------------------------- */

/* Brings t->snap up to the table's latest version. The declared columns are fixed for the
** life of the virtual table (SQLite's contract), so a schema change that drops a declared
** column or changes its kind is an error naming the version; new columns stay hidden until
** the table is re-created. */
static int refresh_snapshot(dks_vtab *t) {
  dk_error err;
  dk_error_init(&err);
  dk_snapshot *s;
  if (dk_snapshot_update(&s, t->snap, &err)) return set_dk_error(&t->base, t->path, &err);
  if (s == t->snap) {
    dk_snapshot_free(s);
    return SQLITE_OK;
  }
  const dk_metadata *a = dk_snapshot_metadata(t->snap), *b = dk_snapshot_metadata(s);
  if (!a->schema_string || !b->schema_string || strcmp(a->schema_string, b->schema_string)) {
    struct ArrowSchema sc;
    if (dk_snapshot_arrow_schema(&sc, s, 0, &err)) {
      dk_snapshot_free(s);
      return set_dk_error(&t->base, t->path, &err);
    }
    const char *bad = NULL;
    for (int i = 0; i < t->ndata && !bad; i++) {
      int found = 0, prec, scale;
      for (int64_t k = 0; k < sc.n_children && !found; k++)
        found = !strcmp(sc.children[k]->name, t->cols[i].name) &&
                dks_kind_of(sc.children[k]->format, &prec, &scale) == t->cols[i].kind;
      if (!found) bad = t->cols[i].name;
    }
    if (bad) {
      sqlite3_free(t->base.zErrMsg);
      t->base.zErrMsg = sqlite3_mprintf(
          "delta: '%s': column \"%s\" was dropped, renamed or changed type at version %lld; "
          "re-create the virtual table to read the new schema",
          t->path, bad, (long long)dk_snapshot_version(s));
      sc.release(&sc);
      dk_snapshot_free(s);
      return SQLITE_ERROR;
    }
    sc.release(&sc);
  }
  dk_snapshot_free(t->snap);
  t->snap = s;
  return SQLITE_OK;
}

static int delta_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  dks_vtab *t = (dks_vtab *)vt;
  if (t->follow_latest && t->open_cursors == 0) {
    int rc = refresh_snapshot(t);
    if (rc != SQLITE_OK) return rc;
  }
  dks_cursor *c = sqlite3_malloc64(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->child = sqlite3_malloc64(sizeof(int) * (size_t)t->ncol * 2);
  if (!c->child) {
    sqlite3_free(c);
    return SQLITE_NOMEM;
  }
  c->meta_sub = c->child + t->ncol;
  c->json = sqlite3_malloc64(sizeof *c->json * (size_t)(t->ncol ? t->ncol : 1));
  if (!c->json) {
    sqlite3_free(c->child);
    sqlite3_free(c);
    return SQLITE_NOMEM;
  }
  memset(c->json, 0, sizeof *c->json * (size_t)(t->ncol ? t->ncol : 1));
  c->eof = 1;
  t->open_cursors++;
  *out = &c->base;
  return SQLITE_OK;
}

static void cursor_finish(dks_cursor *c) {
  dks_vtab *t = (dks_vtab *)c->base.pVtab;
  for (int i = 0; c->json && i < t->ncol; i++) { /* they borrow c->schema */
    dk_arrow_json_free(c->json[i]);
    c->json[i] = NULL;
  }
  if (c->batch.release) c->batch.release(&c->batch);
  if (c->stream.release) c->stream.release(&c->stream);
  if (c->schema.release) c->schema.release(&c->schema);
  memset(&c->batch, 0, sizeof c->batch);
  memset(&c->stream, 0, sizeof c->stream);
  memset(&c->schema, 0, sizeof c->schema);
  dk_changes_free(c->changes);
  c->changes = NULL;
  if (c->scan) {
    dk_scan_stats st;
    dk_scan_stats_get(&st, c->scan);
    st.rows_estimated = 1; /* counts scans in the accumulated stats */
    stats_add(&t->ctx->acc, &st);
    dk_scan_free(c->scan);
    c->scan = NULL;
  }
  c->eof = 1;
}

/* Ends the scan and forgets its request. */
static void cursor_reset(dks_cursor *c) {
  cursor_finish(c);
  dk_expr_free(c->filter);
  c->filter = NULL;
  sqlite3_free(c->names);
  c->names = NULL;
  c->nnames = 0;
}

static int delta_close(sqlite3_vtab_cursor *cur) {
  dks_cursor *c = (dks_cursor *)cur;
  ((dks_vtab *)cur->pVtab)->open_cursors--;
  cursor_reset(c);
  sqlite3_free(c->json);
  sqlite3_free(c->child);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Advances to a batch with rows (or EOF). */
static int next_batch(dks_cursor *c) {
  for (;;) {
    if (c->batch.release) c->batch.release(&c->batch);
    memset(&c->batch, 0, sizeof c->batch);
    if (c->stream.get_next(&c->stream, &c->batch)) {
      const char *m = c->stream.get_last_error(&c->stream);
      sqlite3_free(c->base.pVtab->zErrMsg);
      c->base.pVtab->zErrMsg = sqlite3_mprintf("delta: %s", m ? m : "read failed");
      c->eof = 1;
      return SQLITE_ERROR;
    }
    if (!c->batch.release) {
      c->eof = 1;
      return SQLITE_OK;
    }
    if (c->batch.length > 0) {
      c->row = 0;
      return SQLITE_OK;
    }
  }
}

/* Plans and opens the scan of the cursor's request; `identity` adds the _metadata fields
** rowids are made of (file_path, row_index). */
static int start_scan(dks_cursor *c, int identity) {
  dks_vtab *t = (dks_vtab *)c->base.pVtab;
  dk_error err;
  dk_error_init(&err);
  unsigned meta = c->meta | (identity ? DK_META_FILE_PATH | DK_META_ROW_INDEX : 0u);
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_SCAN_OPTIONS_VERSION;
  o.columns = c->names;
  o.n_columns = c->nnames;
  o.limit = c->limit;
  o.metadata_fields = meta;
  o.threads = t->threads;
  o.batch_size = t->batch_size;
  o.filter = c->filter;
  c->id_child = c->id_path = c->id_row = c->id_ver = c->id_type = -1;
  c->id_ord = -1;
  c->id_last = NULL;
  if (t->changes) {
    /* the change file and row a rowid names: its path, version and change type, and the
    ** row index (a path may be read twice in a range, inserts and deletes) */
    const char *idn[2] = {"_commit_version", "_change_type"};
    int *idc[2] = {&c->id_ver, &c->id_type};
    for (int k = 0; identity && k < 2; k++) {
      for (size_t j = 0; j < c->nnames && *idc[k] < 0; j++)
        if (!strcmp(c->names[j], idn[k])) *idc[k] = (int)j;
      if (*idc[k] < 0) {
        c->names[c->nnames] = idn[k];
        *idc[k] = (int)c->nnames++;
      }
    }
    dk_changes_options co = t->copts;
    co.columns = c->names;
    co.n_columns = c->nnames;
    co.filter = c->filter;
    co.metadata_fields = meta;
    co.batch_size = t->batch_size;
    if (dk_changes_new(&c->changes, t->table, &co, &err) ||
        dk_changes_read(&c->stream, c->changes, &err))
      return set_dk_error(c->base.pVtab, NULL, &err);
  } else if (dk_scan_new(&c->scan, t->snap, &o, &err) ||
             dk_scan_read(&c->stream, c->scan, &err)) {
    return set_dk_error(c->base.pVtab, NULL, &err);
  }
  if (c->stream.get_schema(&c->stream, &c->schema)) {
    const char *m = c->stream.get_last_error(&c->stream);
    sqlite3_free(c->base.pVtab->zErrMsg);
    c->base.pVtab->zErrMsg = sqlite3_mprintf("delta: %s", m ? m : "no schema");
    return SQLITE_ERROR;
  }
  if (meta) {
    int mi = (int)c->schema.n_children - 1;
    const struct ArrowSchema *ms = c->schema.children[mi];
    for (int i = 0; i < t->ncol; i++) {
      if (t->cols[i].meta < 0 || !(META[t->cols[i].meta].bit & meta)) continue;
      for (int64_t k = 0; k < ms->n_children; k++)
        if (!strcmp(ms->children[k]->name, META[t->cols[i].meta].field)) {
          c->child[i] = mi;
          c->meta_sub[i] = (int)k;
        }
    }
    for (int64_t k = 0; identity && k < ms->n_children; k++) {
      if (!strcmp(ms->children[k]->name, "file_path") && !strcmp(ms->children[k]->format, "u"))
        c->id_path = (int)k;
      if (!strcmp(ms->children[k]->name, "row_index") && !strcmp(ms->children[k]->format, "l"))
        c->id_row = (int)k;
    }
    if (c->id_path >= 0 && c->id_row >= 0) c->id_child = mi;
  }
  c->eof = 0;
  return next_batch(c);
}

static int delta_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                        sqlite3_value **argv) {
  dks_cursor *c = (dks_cursor *)cur;
  dks_vtab *t = (dks_vtab *)cur->pVtab;
  cursor_reset(c);
  c->rowid = 0;
  dk_error err;
  dk_error_init(&err);
  unsigned long long used = strtoull(idx_str ? idx_str : "0", NULL, 16);
  const char *p = idx_str ? strchr(idx_str, ':') : NULL;
  p = p ? p + 1 : "";
  dk_expr *preds[128];
  size_t np = 0;
  int64_t limit = -1, offset = 0;
  int rc = SQLITE_OK;
  for (int k = 0; k < argc && *p; k++) {
    int col, op, flags, n = 0;
    if (sscanf(p, "%d,%d,%d;%n", &col, &op, &flags, &n) != 3 || n <= 0) break;
    p += n;
    if (op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      if (sqlite3_value_type(argv[k]) == SQLITE_INTEGER) limit = sqlite3_value_int64(argv[k]);
      continue;
    }
    if (op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (sqlite3_value_type(argv[k]) == SQLITE_INTEGER && sqlite3_value_int64(argv[k]) > 0)
        offset = sqlite3_value_int64(argv[k]);
      continue;
    }
    if (col < 0 || col >= t->ndata || np >= 128) continue;
    const dks_col *cc = &t->cols[col];
    dk_expr *e = NULL;
    if (flags & F_IN) {
      dk_expr *items[1024];
      size_t ni = 0;
      int ok = 1;
      sqlite3_value *v = NULL;
      for (int r = sqlite3_vtab_in_first(argv[k], &v); ok && r == SQLITE_OK && v;
           r = sqlite3_vtab_in_next(argv[k], &v)) {
        if (sqlite3_value_type(v) == SQLITE_NULL) continue;
        if (ni == 1024) {
          ok = 0;
          break;
        }
        if (make_literal(&items[ni], cc, v, &err) == PUSH_NO) ok = 0;
        else ni++;
      }
      if (ok && ni) {
        dk_expr *col_e = column_ref(cc, &err);
        if (col_e && !dk_expr_in(&e, col_e, items, ni, &err)) preds[np++] = e;
      } else {
        for (size_t i = 0; i < ni; i++) dk_expr_free(items[i]);
      }
      continue;
    }
    int how = constraint_pred(&e, cc, op, argv[k], &err);
    if (how == PUSH_NO && (flags & F_OMIT)) {
      sqlite3_free(cur->pVtab->zErrMsg);
      cur->pVtab->zErrMsg = sqlite3_mprintf("delta: internal: constraint on %s lost", cc->name);
      rc = SQLITE_ERROR;
      goto out;
    }
    if (e) preds[np++] = e;
  }
  (void)idx_num;
  /* projection from colUsed (bit 63 stands for every column >= 63) */
  const char **names = sqlite3_malloc64(sizeof(char *) * (size_t)(t->ndata + 3));
  if (!names) {
    rc = SQLITE_NOMEM;
    goto out;
  }
  size_t nn = 0;
  unsigned meta = 0;
  for (int i = 0; i < t->ncol; i++) {
    int u = i < 63 ? (int)((used >> i) & 1) : (int)((used >> 63) & 1);
    c->child[i] = -1;
    c->meta_sub[i] = -1;
    if (!u) continue;
    if (t->cols[i].meta < 0) {
      c->child[i] = (int)nn;
      names[nn++] = t->cols[i].name;
    } else if (META[t->cols[i].meta].bit & t->meta_avail) {
      meta |= META[t->cols[i].meta].bit;
    }
  }
  dk_expr *filter = NULL;
  if (np && dk_expr_and_n(&filter, preds, np, &err)) {
    np = 0;
    sqlite3_free(names);
    rc = set_dk_error(cur->pVtab, NULL, &err);
    goto out;
  }
  np = 0;
  c->names = names;
  c->nnames = nn;
  c->filter = filter;
  /* rows dk must produce: LIMIT + OFFSET, or all when that sum does not fit (no overflow) */
  c->limit = limit >= 0 && limit <= INT64_MAX - offset ? limit + offset : -1;
  c->meta = meta;
  rc = start_scan(c, t->want_identity || t->threads > 1);
out:
  for (size_t i = 0; i < np; i++) dk_expr_free(preds[i]);
  if (rc != SQLITE_OK) cursor_reset(c);
  return rc;
}

static int delta_next(sqlite3_vtab_cursor *cur) {
  dks_cursor *c = (dks_cursor *)cur;
  c->rowid++;
  if (++c->row < c->batch.length) return SQLITE_OK;
  return next_batch(c);
}

static int delta_eof(sqlite3_vtab_cursor *cur) { return ((dks_cursor *)cur)->eof; }

static int delta_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  dks_cursor *c = (dks_cursor *)cur;
  dks_vtab *t = (dks_vtab *)cur->pVtab;
  if (i < 0 || i >= t->ncol || c->child[i] < 0 || c->eof) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  int ch = c->child[i];
  if (ch >= c->batch.n_children || ch >= c->schema.n_children) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const struct ArrowSchema *s = c->schema.children[ch];
  const struct ArrowArray *a = c->batch.children[ch];
  int64_t row = c->batch.offset + c->row;
  if (c->meta_sub[i] >= 0) {
    int64_t r = row + a->offset;
    const uint8_t *v = a->n_buffers > 0 ? (const uint8_t *)a->buffers[0] : NULL;
    if (v && !((v[r >> 3] >> (r & 7)) & 1)) {
      sqlite3_result_null(ctx);
      return SQLITE_OK;
    }
    int k = c->meta_sub[i];
    if (k >= s->n_children || k >= a->n_children) {
      sqlite3_result_null(ctx);
      return SQLITE_OK;
    }
    dks_result(ctx, s->children[k], a->children[k], r, &c->json[i]);
    return SQLITE_OK;
  }
  dks_result(ctx, s, a, row, &c->json[i]);
  return SQLITE_OK;
}

static uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)p[k]) * 1099511628211ULL;
  return h;
}

/* Ordinal of file URI p[0..n) in the vtab's table (added when new; *stored = its copy);
** -1 when out of memory. */
static int64_t file_ordinal(dks_vtab *t, const char *p, size_t n, const char **stored) {
  if (t->npaths * 2 >= t->nslots) { /* grow to keep the load at most 1/2, and rehash */
    int64_t ns = t->nslots ? t->nslots * 2 : 64;
    int64_t *sl = sqlite3_malloc64(sizeof *sl * (size_t)ns);
    char **ps = sqlite3_realloc64(t->paths, sizeof *ps * (size_t)(ns / 2));
    if (ps) t->paths = ps;
    if (!sl || !ps) {
      sqlite3_free(sl);
      return -1;
    }
    memset(sl, 0, sizeof *sl * (size_t)ns);
    for (int64_t i = 0; i < t->npaths; i++) {
      int64_t j = (int64_t)(fnv1a(t->paths[i], strlen(t->paths[i])) & (uint64_t)(ns - 1));
      while (sl[j]) j = (j + 1) & (ns - 1);
      sl[j] = i + 1;
    }
    sqlite3_free(t->slots);
    t->slots = sl;
    t->nslots = ns;
  }
  int64_t j = (int64_t)(fnv1a(p, n) & (uint64_t)(t->nslots - 1));
  while (t->slots[j]) {
    const char *q = t->paths[t->slots[j] - 1];
    if (strlen(q) == n && !memcmp(q, p, n)) {
      *stored = q;
      return t->slots[j] - 1;
    }
    j = (j + 1) & (t->nslots - 1);
  }
  char *copy = sqlite3_malloc64(n + 1);
  if (!copy) return -1;
  memcpy(copy, p, n);
  copy[n] = 0;
  t->paths[t->npaths] = copy;
  t->slots[j] = t->npaths + 1;
  *stored = copy;
  return t->npaths++;
}

/* SQLite's multi-index OR plan runs one scan per OR term on this cursor and skips rows whose
** rowid it has already returned, so a rowid must name the row: (file ordinal << 40) | row
** index in the file, ordinals stable for the vtab. The identity fields cost a string per row,
** so scans request them only once SQLite has asked this vtab for a rowid (or with threads > 1);
** the first ask restarts the running scan with them and skips to the same row (one reader
** thread reads in a fixed order). */
static int delta_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
  dks_cursor *c = (dks_cursor *)cur;
  dks_vtab *t = (dks_vtab *)cur->pVtab;
  *out = 0;
  if (c->eof) return SQLITE_OK;
  if (c->id_child < 0) {
    int64_t pos = c->rowid; /* rows of this scan before the current one */
    t->want_identity = 1;
    cursor_finish(c);
    int rc = start_scan(c, 1);
    for (int64_t k = 0; rc == SQLITE_OK && k < pos && !c->eof; k++)
      if (++c->row >= c->batch.length) rc = next_batch(c);
    if (rc != SQLITE_OK) return rc;
    if (c->eof || c->id_child < 0) {
      sqlite3_free(cur->pVtab->zErrMsg);
      cur->pVtab->zErrMsg = sqlite3_mprintf("delta: internal: cannot re-read a row for its rowid");
      return SQLITE_ERROR;
    }
  }
  const struct ArrowArray *m = c->batch.children[c->id_child];
  const struct ArrowArray *pa = m->children[c->id_path], *ra = m->children[c->id_row];
  int64_t r = c->batch.offset + c->row + m->offset;
  const int32_t *po = pa->buffers[1];
  const char *p = (const char *)pa->buffers[2] + po[r + pa->offset];
  size_t n = (size_t)(po[r + pa->offset + 1] - po[r + pa->offset]);
  if (t->changes) { /* the file of a change row: path, version and change type */
    char key[4096];
    const struct ArrowArray *va = c->batch.children[c->id_ver], *ta = c->batch.children[c->id_type];
    int64_t rr = c->batch.offset + c->row;
    const int32_t *to = ta->buffers[1];
    int64_t tv = rr + ta->offset, vv = rr + va->offset;
    int kn = snprintf(key, sizeof key, "%.*s\x1f%lld\x1f%.*s", (int)n, p,
                      (long long)((const int64_t *)va->buffers[1])[vv],
                      (int)(to[tv + 1] - to[tv]), (const char *)ta->buffers[2] + to[tv]);
    if (kn < 0 || kn >= (int)sizeof key) kn = (int)sizeof key - 1;
    if (!c->id_last || strlen(c->id_last) != (size_t)kn || memcmp(c->id_last, key, (size_t)kn)) {
      c->id_ord = file_ordinal(t, key, (size_t)kn, &c->id_last);
      if (c->id_ord < 0) {
        c->id_last = NULL;
        return SQLITE_NOMEM;
      }
    }
  } else if (!c->id_last || strlen(c->id_last) != n || memcmp(c->id_last, p, n)) {
    c->id_ord = file_ordinal(t, p, n, &c->id_last);
    if (c->id_ord < 0) {
      c->id_last = NULL;
      return SQLITE_NOMEM;
    }
  }
  int64_t row_index = ((const int64_t *)ra->buffers[1])[r + ra->offset];
  *out = (sqlite3_int64)(((uint64_t)c->id_ord << 40) | (uint64_t)row_index);
  return SQLITE_OK;
}


/* ---- INSERT: one Delta commit per SQLite transaction -------------------------------------- */

/* An Arrow column built from SQLite values (buffers malloc'd, freed by release). */
typedef struct ins_col {
  uint8_t *valid;
  void *vals;
  char *data;
} ins_col;

static void ins_release(struct ArrowArray *a) {
  if (!a->release) return;
  for (int64_t i = 0; i < a->n_children; i++)
    if (a->children[i]->release) a->children[i]->release(a->children[i]);
  for (int64_t i = 0; i < a->n_buffers; i++) free((void *)a->buffers[i]);
  free(a->buffers);
  free(a->children ? a->children[0] : NULL);
  free(a->children);
  a->release = NULL;
}

/* Builds column j (format fmt) of n rows from vals[r * stride + j]. */
static int ins_build(struct ArrowArray *out, const char *fmt, const char *name,
                     sqlite3_value **vals, int64_t n, int stride, int j, char **zerr) {
  memset(out, 0, sizeof *out);
  int w = 0, is_str = 0, is_bool = 0, is_date = 0, is_ts = 0;
  if (!strcmp(fmt, "l") || !strcmp(fmt, "g")) w = 8;
  else if (!strcmp(fmt, "i") || !strcmp(fmt, "f")) w = 4;
  else if (!strcmp(fmt, "s")) w = 2;
  else if (!strcmp(fmt, "c")) w = 1;
  else if (!strcmp(fmt, "tdD")) { w = 4; is_date = 1; }
  else if (!strncmp(fmt, "tsu:", 4)) { w = 8; is_ts = 1; }
  else if (!strcmp(fmt, "b")) is_bool = 1;
  else if (!strcmp(fmt, "u") || !strcmp(fmt, "z")) is_str = 1;
  else {
    *zerr = sqlite3_mprintf("delta: INSERT into column '%s' (Arrow type %s) is not supported yet",
                            name, fmt);
    return SQLITE_ERROR;
  }
  uint8_t *valid = calloc((size_t)(n + 7) / 8 + 1, 1);
  void *v = is_bool ? calloc((size_t)(n + 7) / 8 + 1, 1)
            : is_str ? calloc((size_t)n + 1, sizeof(int32_t))
                     : calloc((size_t)(n ? n : 1), (size_t)w);
  size_t cap = 256, len = 0;
  char *data = is_str ? malloc(cap) : NULL;
  const void **bufs = calloc(3, sizeof *bufs);
  if (!valid || !v || (is_str && !data) || !bufs) goto nomem;
  int64_t nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    sqlite3_value *x = vals[r * stride + j];
    int ty = sqlite3_value_type(x);
    if (ty == SQLITE_NULL) {
      nulls++;
      if (is_str) ((int32_t *)v)[r + 1] = (int32_t)len;
      continue;
    }
    valid[r >> 3] |= (uint8_t)(1u << (r & 7));
    if (is_str) {
      const void *p = !strcmp(fmt, "u") ? (const void *)sqlite3_value_text(x) : sqlite3_value_blob(x);
      size_t m = (size_t)sqlite3_value_bytes(x);
      if (len + m > cap) {
        while (len + m > cap) cap *= 2;
        char *d2 = realloc(data, cap);
        if (!d2) goto nomem;
        data = d2;
      }
      if (m) memcpy(data + len, p, m);
      len += m;
      ((int32_t *)v)[r + 1] = (int32_t)len;
    } else if (is_bool) {
      if (sqlite3_value_int64(x)) ((uint8_t *)v)[r >> 3] |= (uint8_t)(1u << (r & 7));
    } else if (!strcmp(fmt, "g") || !strcmp(fmt, "f")) {
      double d = sqlite3_value_double(x);
      if (w == 8) ((double *)v)[r] = d;
      else ((float *)v)[r] = (float)d;
    } else {
      int64_t iv;
      if (ty == SQLITE_INTEGER) iv = sqlite3_value_int64(x);
      else if (is_date && ty == SQLITE_TEXT) {
        int32_t days;
        const char *tx = (const char *)sqlite3_value_text(x);
        if (!dks_parse_date(tx, strlen(tx), &days)) goto badval;
        iv = days;
      } else if (is_ts && ty == SQLITE_TEXT) {
        int64_t ms;
        if (!parse_when((const char *)sqlite3_value_text(x), &ms)) goto badval;
        iv = ms * 1000;
      } else {
        goto badval;
      }
      switch (w) {
        case 8: ((int64_t *)v)[r] = iv; break;
        case 4: ((int32_t *)v)[r] = (int32_t)iv; break;
        case 2: ((int16_t *)v)[r] = (int16_t)iv; break;
        default: ((int8_t *)v)[r] = (int8_t)iv; break;
      }
    }
  }
  bufs[0] = valid;
  bufs[1] = v;
  bufs[2] = data;
  out->length = n;
  out->null_count = nulls;
  out->n_buffers = is_str ? 3 : 2;
  out->buffers = bufs;
  out->release = ins_release;
  if (!is_str) free(data);
  return SQLITE_OK;
badval:
  *zerr = sqlite3_mprintf("delta: INSERT: a value of column '%s' does not fit its type %s", name,
                          fmt);
  free(valid);
  free(v);
  free(data);
  free(bufs);
  return SQLITE_ERROR;
nomem:
  free(valid);
  free(v);
  free(data);
  free(bufs);
  return SQLITE_NOMEM;
}

typedef struct ins_stream {
  dks_vtab *t;
  int done;
  char err[512];
} ins_stream;

static int ins_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  ins_stream *is = s->private_data;
  dk_error err;
  dk_error_init(&err);
  if (dk_snapshot_arrow_schema(out, is->t->snap, 0, &err) != DK_OK) {
    snprintf(is->err, sizeof is->err, "%s", err.message);
    return EINVAL;
  }
  return 0;
}

static int ins_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  ins_stream *is = s->private_data;
  dks_vtab *t = is->t;
  memset(out, 0, sizeof *out);
  if (is->done) return 0;
  is->done = 1;
  /* the table's columns in schema order = the vtab's data columns re-ordered by name */
  struct ArrowSchema sc;
  if (ins_schema(s, &sc)) return EINVAL;
  struct ArrowArray **kids = calloc((size_t)sc.n_children + 1, sizeof *kids);
  struct ArrowArray *store = calloc((size_t)sc.n_children + 1, sizeof *store);
  int rc = (!kids || !store) ? ENOMEM : 0;
  for (int64_t i = 0; i < sc.n_children && !rc; i++) {
    int j = 0;
    while (j < t->ndata && sqlite3_stricmp(t->cols[j].name, sc.children[i]->name)) j++;
    char *zerr = NULL;
    if (j == t->ndata) {
      snprintf(is->err, sizeof is->err, "column '%s' is not in the virtual table",
               sc.children[i]->name);
      rc = EINVAL;
      break;
    }
    if (ins_build(&store[i], sc.children[i]->format, sc.children[i]->name, t->pending,
                  t->npending, t->ndata, j, &zerr) != SQLITE_OK) {
      snprintf(is->err, sizeof is->err, "%s", zerr ? zerr : "out of memory");
      sqlite3_free(zerr);
      rc = EINVAL;
      break;
    }
    kids[i] = &store[i];
  }
  if (rc) {
    for (int64_t i = 0; store && i < sc.n_children; i++)
      if (store[i].release) store[i].release(&store[i]);
    free(store);
    free(kids);
    sc.release(&sc);
    return rc;
  }
  const void **bufs = calloc(1, sizeof *bufs);
  out->length = t->npending;
  out->n_buffers = 1;
  out->buffers = bufs;
  out->n_children = sc.n_children;
  out->children = kids; /* kids[0] == store: freed by ins_release */
  out->release = ins_release;
  if (!sc.n_children) free(store);
  sc.release(&sc);
  return 0;
}

static const char *ins_error(struct ArrowArrayStream *s) {
  return ((ins_stream *)s->private_data)->err;
}

static void ins_stream_release(struct ArrowArrayStream *s) { s->release = NULL; }

static int vt_fail(sqlite3_vtab *vt, const char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("delta: %s", msg);
  return SQLITE_ERROR;
}

/* xUpdate: INSERT (argv[0] NULL) collects the new row; DELETE (argc 1) and UPDATE collect the
** old row's rowid ((file ordinal << 40) | row index: a deletion vector bit) and, for UPDATE, the
** new row. Everything is one Delta commit at xSync. */
static int delta_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  dks_vtab *t = (dks_vtab *)vt;
  (void)rowid;
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) { /* DELETE or UPDATE of a row */
    if (argc > 1 && sqlite3_value_int64(argv[1]) != sqlite3_value_int64(argv[0]))
      return vt_fail(vt, "UPDATE cannot change a row's rowid (the row's place in its file)");
    int64_t id = sqlite3_value_int64(argv[0]);
    if ((id >> 40) >= t->npaths || id < 0)
      return vt_fail(vt, "internal: a rowid that names no file of the table");
    if (t->ngone == t->capgone) {
      int64_t nc = t->capgone ? 2 * t->capgone : 256;
      int64_t *g = sqlite3_realloc64(t->gone, (sqlite3_uint64)nc * sizeof *g);
      if (!g) return SQLITE_NOMEM;
      t->gone = g;
      t->capgone = nc;
    }
    t->gone[t->ngone++] = id;
    if (argc == 1) return SQLITE_OK;
    t->nupdates++;
  }
  if (t->npending == t->cappending) {
    int64_t nc = t->cappending ? t->cappending * 2 : 64;
    sqlite3_value **p = sqlite3_realloc64(t->pending, (sqlite3_uint64)(nc * t->ndata) * sizeof *p);
    if (p) t->pending = p;
    int64_t *r = sqlite3_realloc64(t->replaces, (sqlite3_uint64)nc * sizeof *r);
    if (r) t->replaces = r;
    if (!p || !r) return SQLITE_NOMEM;
    t->cappending = nc;
  }
  /* an UPDATE's new row replaces the row just noted as gone */
  t->replaces[t->npending] = sqlite3_value_type(argv[0]) != SQLITE_NULL ? t->ngone - 1 : -1;
  for (int j = 0; j < t->ndata; j++) {
    sqlite3_value *v = sqlite3_value_dup(argv[2 + j]);
    if (!v) {
      for (int k = 0; k < j; k++) sqlite3_value_free(t->pending[t->npending * t->ndata + k]);
      return SQLITE_NOMEM;
    }
    t->pending[t->npending * t->ndata + j] = v;
  }
  t->npending++;
  return SQLITE_OK;
}

static int delta_begin(sqlite3_vtab *vt) {
  pending_clear((dks_vtab *)vt);
  return SQLITE_OK;
}

/* xSync: the commit itself, so a failure makes SQLite roll the transaction back. */
/* DELETE / UPDATE (and INSERTs of the same transaction): one commit on the snapshot the rows
** were read from: DVs for the rows that go, new files for the new rows. */
static int sync_dml(dks_vtab *t) {
  sqlite3_vtab *vt = &t->base;
  dk_error err;
  dk_error_init(&err);
  const char **uris = sqlite3_malloc64((sqlite3_uint64)t->ngone * sizeof *uris);
  int64_t *rows = sqlite3_malloc64((sqlite3_uint64)t->ngone * sizeof *rows);
  if (!uris || !rows) {
    sqlite3_free(uris);
    sqlite3_free(rows);
    return SQLITE_NOMEM;
  }
  for (int64_t i = 0; i < t->ngone; i++) {
    uris[i] = t->paths[t->gone[i] >> 40];
    rows[i] = t->gone[i] & ((1LL << 40) - 1);
  }
  dk_txn_options to = {.version = DK_TXN_OPTIONS_VERSION,
                       .operation = t->nupdates ? "UPDATE" : NULL, /* NULL: dk's DELETE */
                       .operation_parameters = t->nupdates ? "{\"predicate\":\"[]\"}" : NULL};
  dk_txn *x = NULL;
  dk_status st = dk_txn_begin(&x, t->snap, &to, &err);
  ins_stream is = {.t = t};
  struct ArrowArrayStream ds = {.get_schema = ins_schema, .get_next = ins_next,
                                .get_last_error = ins_error, .release = ins_stream_release,
                                .private_data = &is};
  if (!st && t->nupdates) {
    /* libdk's UPDATE of rows: row ids kept (row tracking), change data (its feed on) */
    st = dk_txn_update_rows(NULL, x, uris, rows, (size_t)t->ngone, &ds, t->replaces,
                            (size_t)t->npending, NULL, &err);
    if (st && is.err[0] && err.code == DK_CALLBACK) /* the values' own failure */
      snprintf(err.message, sizeof err.message, "%s", is.err);
  } else {
    if (!st) st = dk_txn_delete_rows(NULL, x, uris, rows, (size_t)t->ngone, NULL, &err);
    if (!st && t->npending) {
      dk_write_result wr = {.version = DK_WRITE_RESULT_VERSION};
      st = dk_txn_write(&wr, x, &ds, NULL, &err);
    }
  }
  sqlite3_free(uris);
  sqlite3_free(rows);
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  if (!st) {
    st = dk_txn_commit(x, &r, &err);
  } else {
    dk_txn_abort(x);
  }
  if (st) {
    sqlite3_free(vt->zErrMsg);
    vt->zErrMsg = sqlite3_mprintf("delta: %s: %s: %s", t->nupdates ? "UPDATE" : "DELETE",
                                  dk_status_str(err.code), err.message);
    return err.code == DK_CONFLICT ? SQLITE_BUSY : SQLITE_ERROR;
  }
  return SQLITE_OK;
}

static int delta_sync(sqlite3_vtab *vt) {
  dks_vtab *t = (dks_vtab *)vt;
  if (t->ngone) {
    int rc = sync_dml(t);
    if (rc != SQLITE_OK) return rc;
    pending_clear(t);
    dk_error err;
    dk_error_init(&err);
    dk_snapshot *s2 = NULL;
    if (dk_snapshot_update(&s2, t->snap, &err) == DK_OK) {
      dk_snapshot_free(t->snap);
      t->snap = s2;
    }
    return SQLITE_OK;
  }
  if (!t->npending) return SQLITE_OK;
  ins_stream is = {.t = t};
  struct ArrowArrayStream st = {.get_schema = ins_schema, .get_next = ins_next,
                                .get_last_error = ins_error, .release = ins_stream_release,
                                .private_data = &is};
  dk_write_table_options o = {.version = DK_WRITE_TABLE_OPTIONS_VERSION, .mode = DK_WRITE_APPEND};
  o.txn.version = DK_TXN_OPTIONS_VERSION;
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  dk_error err;
  dk_error_init(&err);
  if (dk_write_table(&r, t->table, &st, &o, &err) != DK_OK) {
    sqlite3_free(vt->zErrMsg);
    vt->zErrMsg = sqlite3_mprintf("delta: INSERT: %s: %s", dk_status_str(err.code), err.message);
    return err.code == DK_CONFLICT ? SQLITE_BUSY : SQLITE_ERROR;
  }
  pending_clear(t);
  dk_snapshot *s2 = NULL;
  if (dk_snapshot_update(&s2, t->snap, &err) == DK_OK) {
    dk_snapshot_free(t->snap);
    t->snap = s2;
  }
  return SQLITE_OK;
}

static int delta_commit(sqlite3_vtab *vt) {
  pending_clear((dks_vtab *)vt);
  return SQLITE_OK;
}

static int delta_rollback(sqlite3_vtab *vt) {
  pending_clear((dks_vtab *)vt);
  return SQLITE_OK;
}

static sqlite3_module delta_module = {
    .iVersion = 0,
    .xCreate = delta_connect,
    .xConnect = delta_connect,
    .xBestIndex = delta_best_index,
    .xDisconnect = delta_disconnect,
    .xDestroy = delta_disconnect,
    .xOpen = delta_open,
    .xClose = delta_close,
    .xFilter = delta_filter,
    .xNext = delta_next,
    .xEof = delta_eof,
    .xColumn = delta_column,
    .xRowid = delta_rowid,
    .xUpdate = delta_update,
    .xBegin = delta_begin,
    .xSync = delta_sync,
    .xCommit = delta_commit,
    .xRollback = delta_rollback,
};

/* delta_scan as an eponymous table only explains how to use it. */
static int scan_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **out, char **pzErr) {
  if (argc > 3) return delta_connect(db, aux, argc, argv, out, pzErr);
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(hint TEXT, path HIDDEN, version HIDDEN)");
  if (rc) return rc;
  sqlite3_vtab *v = sqlite3_malloc64(sizeof *v);
  if (!v) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  *out = v;
  return SQLITE_OK;
}

static int scan_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf(
      "delta_scan('path') works in `dk sql` (which expands it); in plain SQLite use "
      "CREATE VIRTUAL TABLE t USING delta('path' [, version=N]) — SQLite fixes a "
      "table-valued function's columns before it sees the path");
  return SQLITE_ERROR;
}

static int scan_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static sqlite3_module delta_scan_module = {
    .iVersion = 0,
    .xCreate = NULL,
    .xConnect = scan_connect,
    .xBestIndex = scan_best_index,
    .xDisconnect = scan_disconnect,
    .xDestroy = scan_disconnect,
    .xOpen = delta_open,
    .xClose = delta_close,
    .xFilter = delta_filter,
    .xNext = delta_next,
    .xEof = delta_eof,
    .xColumn = delta_column,
    .xRowid = delta_rowid,
};

/* delta_changes: CREATE VIRTUAL TABLE c USING delta_changes('path', start=V [, end=W]); as an
** eponymous table (no arguments) it only explains that (`dk sql` expands delta_changes(...)). */
static int changes_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                           sqlite3_vtab **out, char **pzErr) {
  if (argc > 3) return connect_impl(db, aux, argc, argv, out, pzErr, 1);
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(hint TEXT, path HIDDEN, start HIDDEN)");
  if (rc) return rc;
  dks_vtab *t = sqlite3_malloc64(sizeof *t); /* no columns: the hint table */
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  *out = &t->base;
  return SQLITE_OK;
}

static int changes_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  if (((dks_vtab *)vt)->cols) return delta_best_index(vt, info);
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf(
      "delta_changes('path', start, end) works in `dk sql` (which expands it); in plain SQLite "
      "use CREATE VIRTUAL TABLE c USING delta_changes('path', start=V [, end=W])");
  return SQLITE_ERROR;
}

static int changes_disconnect(sqlite3_vtab *vt) { return delta_disconnect(vt); }

static sqlite3_module delta_changes_module = {
    .iVersion = 0,
    .xCreate = changes_connect,
    .xConnect = changes_connect,
    .xBestIndex = changes_best_index,
    .xDisconnect = changes_disconnect,
    .xDestroy = changes_disconnect,
    .xOpen = delta_open,
    .xClose = delta_close,
    .xFilter = delta_filter,
    .xNext = delta_next,
    .xEof = delta_eof,
    .xColumn = delta_column,
    .xRowid = delta_rowid,
};

/* ---- registration -------------------------------------------------------------------------- */

static void stats_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dk_sqlite_ctx *x = sqlite3_user_data(ctx);
  char buf[1024];
  dk_sqlite_stats_json(buf, sizeof buf, &x->acc);
  sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
  if (argc > 0 && sqlite3_value_int(argv[0])) dk_sqlite_stats_reset(x);
}

/* The `delta` module's destructor: SQLite runs it when the connection closes, after the last
 * table of the module is gone. */
static void ctx_free(void *p) {
  dk_sqlite_ctx *ctx = p;
  dks_storage_free(ctx->storage);
  sqlite3_free(ctx);
}

int dk_sqlite_register(sqlite3 *db, dk_sqlite_ctx **out_ctx) {
  dk_sqlite_ctx *ctx = sqlite3_malloc64(sizeof *ctx);
  if (!ctx) return SQLITE_NOMEM;
  memset(ctx, 0, sizeof *ctx);
  int rc = sqlite3_create_module_v2(db, "delta", &delta_module, ctx, ctx_free);
  if (rc) return rc;
  rc = sqlite3_create_module_v2(db, "delta_scan", &delta_scan_module, ctx, NULL);
  if (!rc) rc = sqlite3_create_module_v2(db, "delta_changes", &delta_changes_module, ctx, NULL);
  if (!rc) rc = sqlite3_create_function(db, "delta_stats", 0, SQLITE_UTF8, ctx, stats_fn, 0, 0);
  if (!rc) rc = sqlite3_create_function(db, "delta_stats", 1, SQLITE_UTF8, ctx, stats_fn, 0, 0);
  if (!rc) rc = dks_register_meta(db, ctx);
  if (out_ctx) *out_ctx = ctx;
  return rc;
}
