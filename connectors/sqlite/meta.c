/*
** meta.c — eponymous table-valued functions of the dk SQLite connector over a table's log:
**   delta_files('path' [, version])  one row per live file: path, partition values (JSON object
**                                    keyed by logical column name), size, modification time,
**                                    record count (stats numRecords), DV cardinality, stats JSON
**   delta_history('path')            one row per commit: version, timestamp, commitInfo JSON
** Arguments arrive as equality constraints on HIDDEN columns (https://sqlite.org/vtab.html,
** "Table-valued functions"); idxNum bit 0 = path given (argv[0]), bit 1 = version given (next).
*/
#include <stdio.h>
#include <string.h>

#include "dk/scan.h"
#include "dk/history.h"
#include "dk/snapshot.h"
#include "dk_sqlite.h"

enum { KIND_FILES = 1, KIND_HISTORY = 2 };

/* delta_files columns */
enum { F_PATH, F_PARTS, F_SIZE, F_MTIME, F_RECORDS, F_DVCARD, F_STATS, F_ARG_PATH, F_ARG_VERSION };
/* delta_history columns */
enum { H_VERSION, H_TIMESTAMP, H_COMMIT_INFO, H_ARG_PATH };

typedef struct meta_vtab {
  sqlite3_vtab base;
  int kind;
  dk_sqlite_ctx *ctx;
} meta_vtab;

typedef struct meta_cursor {
  sqlite3_vtab_cursor base;
  dk_table *table;
  dk_snapshot *snap;
  dk_scan *scan;
  dk_file_iter *files; /* the stats column, read in file order */
  dk_history *hist;
  int64_t i, n;
  sqlite3_int64 version;
  char *path;
  dks_buf buf;
} meta_cursor;

static int meta_connect_kind(sqlite3 *db, dk_sqlite_ctx *ctx, int kind, sqlite3_vtab **out) {
  const char *ddl =
      kind == KIND_FILES
          ? "CREATE TABLE x(path TEXT, partition_values TEXT, size INTEGER, "
            "modification_time TEXT, num_records INTEGER, dv_cardinality INTEGER, stats TEXT, "
            "table_path HIDDEN, version HIDDEN)"
          : "CREATE TABLE x(version INTEGER, timestamp TEXT, commit_info TEXT, table_path HIDDEN)";
  int rc = sqlite3_declare_vtab(db, ddl);
  if (rc) return rc;
  meta_vtab *t = sqlite3_malloc64(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->ctx = ctx;
  *out = &t->base;
  return SQLITE_OK;
}

static int files_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                         sqlite3_vtab **out, char **pzErr) {
  return meta_connect_kind(db, aux, KIND_FILES, out);
}

static int history_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                           sqlite3_vtab **out, char **pzErr) {
  return meta_connect_kind(db, aux, KIND_HISTORY, out);
}

static int meta_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static int meta_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  meta_vtab *t = (meta_vtab *)vt;
  int cpath = t->kind == KIND_FILES ? F_ARG_PATH : H_ARG_PATH;
  int cver = t->kind == KIND_FILES ? F_ARG_VERSION : -2;
  int ipath = -1, iver = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[i];
    if (k->iColumn != cpath && k->iColumn != cver) continue;
    if (!k->usable || k->op != SQLITE_INDEX_CONSTRAINT_EQ) return SQLITE_CONSTRAINT;
    if (k->iColumn == cpath) ipath = i;
    else iver = i;
  }
  int n = 0;
  info->idxNum = 0;
  if (ipath >= 0) {
    info->aConstraintUsage[ipath].argvIndex = ++n;
    info->aConstraintUsage[ipath].omit = 1;
    info->idxNum |= 1;
  }
  if (iver >= 0) {
    info->aConstraintUsage[iver].argvIndex = ++n;
    info->aConstraintUsage[iver].omit = 1;
    info->idxNum |= 2;
  }
  info->estimatedCost = ipath >= 0 ? 1000.0 : 1e12;
  info->estimatedRows = 1000;
  return SQLITE_OK;
}

static int meta_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  meta_cursor *c = sqlite3_malloc64(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void meta_reset(meta_cursor *c) {
  dk_file_iter_free(c->files);
  c->files = NULL;
  dk_scan_free(c->scan);
  dk_snapshot_free(c->snap);
  dk_history_free(c->hist);
  dk_table_free(c->table);
  sqlite3_free(c->path);
  c->scan = NULL;
  c->snap = NULL;
  c->hist = NULL;
  c->table = NULL;
  c->path = NULL;
  c->i = c->n = 0;
}

static int meta_close(sqlite3_vtab_cursor *cur) {
  meta_cursor *c = (meta_cursor *)cur;
  meta_reset(c);
  dks_buf_free(&c->buf);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int meta_fail(sqlite3_vtab *vt, const char *fn, const char *path, const dk_error *err) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s: '%s': %s: %s", fn, path, dk_status_str(err->code),
                                err->message);
  return SQLITE_ERROR;
}

static int meta_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                       sqlite3_value **argv) {
  meta_cursor *c = (meta_cursor *)cur;
  meta_vtab *t = (meta_vtab *)cur->pVtab;
  const char *fn = t->kind == KIND_FILES ? "delta_files" : "delta_history";
  meta_reset(c);
  if (!(idx_num & 1) || argc < 1 || sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("%s: the first argument must be the table path", fn);
    return SQLITE_ERROR;
  }
  c->path = sqlite3_mprintf("%s", sqlite3_value_text(argv[0]));
  if (!c->path) return SQLITE_NOMEM;
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION, .at_version = -1};
  if (idx_num & 2) {
    if (argc < 2 || sqlite3_value_type(argv[1]) != SQLITE_INTEGER ||
        sqlite3_value_int64(argv[1]) < 0) {
      sqlite3_free(cur->pVtab->zErrMsg);
      cur->pVtab->zErrMsg = sqlite3_mprintf("%s: version must be a non-negative integer", fn);
      return SQLITE_ERROR;
    }
    so.at_version = sqlite3_value_int64(argv[1]);
  }
  dk_error err;
  dk_error_init(&err);
  if (dks_table_open(&c->table, t->ctx, c->path, 0, NULL, NULL, &err)) return meta_fail(cur->pVtab, fn, c->path, &err);
  if (t->kind == KIND_HISTORY) {
    if (dk_history_open(&c->hist, c->table, 0, &err)) return meta_fail(cur->pVtab, fn, c->path, &err);
    c->n = (int64_t)dk_history_count(c->hist);
    return SQLITE_OK;
  }
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_SCAN_OPTIONS_VERSION;
  o.limit = -1;
  if (dk_snapshot_open(&c->snap, c->table, &so, &err) || dk_scan_new(&c->scan, c->snap, &o, &err) ||
      dk_snapshot_files_open(&c->files, c->snap, NULL, &err))
    return meta_fail(cur->pVtab, fn, c->path, &err);
  c->version = dk_snapshot_version(c->snap);
  c->n = dk_scan_num_files(c->scan);
  return SQLITE_OK;
}

static int meta_next(sqlite3_vtab_cursor *cur) {
  ((meta_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int meta_eof(sqlite3_vtab_cursor *cur) {
  meta_cursor *c = (meta_cursor *)cur;
  return c->i >= c->n;
}

static void json_str(dks_buf *b, const char *s) {
  dks_buf_put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      dks_buf_put(b, "\\", 1);
      dks_buf_put(b, s, 1);
    } else if (ch < 0x20) {
      char e[8];
      snprintf(e, sizeof e, "\\u%04x", ch);
      dks_buf_put(b, e, 6);
    } else {
      dks_buf_put(b, s, 1);
    }
  }
  dks_buf_put(b, "\"", 1);
}

static int meta_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  meta_cursor *c = (meta_cursor *)cur;
  meta_vtab *t = (meta_vtab *)cur->pVtab;
  char tmp[64];
  if (t->kind == KIND_HISTORY) {
    int64_t v, ts;
    const char *ci;
    dk_history_entry(&v, &ts, &ci, c->hist, (size_t)c->i);
    switch (col) {
      case H_VERSION: sqlite3_result_int64(ctx, v); break;
      case H_TIMESTAMP: {
        size_t n = dks_format_ts(tmp, ts * 1000, 1);
        /* milliseconds are what the log keeps: drop the last three zero digits */
        if (n > 4) memmove(tmp + n - 4, tmp + n - 1, 2), n -= 3;
        sqlite3_result_text(ctx, tmp, (int)n, SQLITE_TRANSIENT);
        break;
      }
      case H_COMMIT_INFO: sqlite3_result_text(ctx, ci, -1, SQLITE_TRANSIENT); break;
      case H_ARG_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
      default: sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
  }
  dk_scan_file f;
  dk_error err;
  dk_error_init(&err);
  if (dk_scan_file_get(&f, c->scan, c->i, &err)) {
    sqlite3_result_error(ctx, err.message, -1);
    return SQLITE_OK;
  }
  switch (col) {
    case F_PATH: sqlite3_result_text(ctx, f.entry.path, -1, SQLITE_TRANSIENT); break;
    case F_PARTS: {
      const dk_metadata *md = dk_snapshot_metadata(c->snap);
      c->buf.len = 0;
      c->buf.oom = 0;
      dks_buf_put(&c->buf, "{", 1);
      for (size_t k = 0; k < md->n_partition_columns; k++) {
        int is_null = 0;
        const char *v = dk_file_partition_value(c->snap, &f.entry, md->partition_columns[k], &is_null);
        if (k) dks_buf_put(&c->buf, ",", 1);
        json_str(&c->buf, md->partition_columns[k]);
        dks_buf_put(&c->buf, ":", 1);
        if (is_null || !v) dks_buf_put(&c->buf, "null", 4);
        else json_str(&c->buf, v);
      }
      dks_buf_put(&c->buf, "}", 1);
      if (c->buf.oom) sqlite3_result_error_nomem(ctx);
      else sqlite3_result_text(ctx, c->buf.p, (int)c->buf.len, SQLITE_TRANSIENT);
      break;
    }
    case F_SIZE: sqlite3_result_int64(ctx, f.entry.size); break;
    case F_MTIME: {
      size_t n = dks_format_ts(tmp, f.entry.modification_time * 1000, 1);
      if (n > 4) memmove(tmp + n - 4, tmp + n - 1, 2), n -= 3;
      sqlite3_result_text(ctx, tmp, (int)n, SQLITE_TRANSIENT);
      break;
    }
    case F_RECORDS:
      if (f.num_records >= 0) sqlite3_result_int64(ctx, f.num_records);
      else sqlite3_result_null(ctx);
      break;
    case F_DVCARD:
      if (f.entry.dv) sqlite3_result_int64(ctx, f.entry.dv->cardinality);
      else sqlite3_result_int(ctx, 0);
      break;
    case F_STATS: {
      const dk_file_entry *e;
      if (dk_file_iter_seek(c->files, f.entry.index, &err) ||
          dk_file_iter_next(&e, c->files, &err)) {
        sqlite3_result_error(ctx, err.message, -1);
      } else if (e && e->stats) {
        sqlite3_result_text(ctx, e->stats, -1, SQLITE_TRANSIENT);
      } else {
        sqlite3_result_null(ctx);
      }
      break;
    }
    case F_ARG_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
    case F_ARG_VERSION: sqlite3_result_int64(ctx, c->version); break;
    default: sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

static int meta_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
  *out = ((meta_cursor *)cur)->i;
  return SQLITE_OK;
}

static sqlite3_module files_module = {
    .xConnect = files_connect, .xBestIndex = meta_best_index, .xDisconnect = meta_disconnect,
    .xOpen = meta_open, .xClose = meta_close, .xFilter = meta_filter, .xNext = meta_next,
    .xEof = meta_eof, .xColumn = meta_column, .xRowid = meta_rowid,
};

static sqlite3_module history_module = {
    .xConnect = history_connect, .xBestIndex = meta_best_index, .xDisconnect = meta_disconnect,
    .xOpen = meta_open, .xClose = meta_close, .xFilter = meta_filter, .xNext = meta_next,
    .xEof = meta_eof, .xColumn = meta_column, .xRowid = meta_rowid,
};

int dks_register_meta(sqlite3 *db, dk_sqlite_ctx *ctx) {
  int rc = sqlite3_create_module(db, "delta_files", &files_module, ctx);
  if (!rc) rc = sqlite3_create_module(db, "delta_history", &history_module, ctx);
  return rc;
}
