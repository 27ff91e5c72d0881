/*
** dk_sqlite.h — dk's SQLite connector: virtual-table modules over Delta tables.
**
** Modules registered by dk_sqlite_register():
**   delta          CREATE VIRTUAL TABLE t USING delta('path' [, version=N] [, timestamp='...']
**                  [, threads=N] [, batch_size=N] [, aws_...='...'])
**                  (path: a local path or an s3://bucket/prefix URI; aws_* and dk_s3_* are
**                  storage options, see storage.c)
**   delta_scan     eponymous; columns depend on the table, so it is usable only through
**                  dk_sqlite_expand_sql() (what `dk sql` does), which turns each
**                  delta_scan('path' [, version]) into a temp `delta` table
**   delta_changes  CREATE VIRTUAL TABLE c USING delta_changes('path', start=V [, end=W]
**                  | start_timestamp='...' [, end_timestamp='...'] [, batch_size=N]): the
**                  change data feed of the range (the table's columns, _change_type,
**                  _commit_version, _commit_timestamp); without an end each statement reads
**                  to the latest version; dk_sqlite_expand_sql() turns delta_changes('path',
**                  start [, end]) into one
**   delta_files    eponymous table-valued function delta_files('path' [, version])
**   delta_history  eponymous table-valued function delta_history('path')
**   delta_stats()  SQL function: the pushdown counters of the scans finished so far as JSON
**                  (delta_stats(1) also resets them); run it as its own statement
**
** The connector uses only dk's public API (include/dk). Its own declarations live here; the
** loadable extension (dk_sqlite.so, entry point sqlite3_dksqlite_init) and the dk CLI compile
** the same sources.
*/
#ifndef DK_SQLITE_H
#define DK_SQLITE_H

#ifdef DK_SQLITE_LOADABLE
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#else
#include <sqlite3.h>
#endif

#include "dk/arrow_json.h"
#include "dk/scan.h"

typedef struct dk_sqlite_ctx dk_sqlite_ctx;

/** Registers the modules and functions on db. *out_ctx (may be NULL) receives the per-db
 *  context (owned by db; freed when db closes). Returns an SQLite result code. */
int dk_sqlite_register(sqlite3 *db, dk_sqlite_ctx **out_ctx);

/** Sum of the dk_scan_stats of every scan finished (cursor re-filtered or closed) since the
 *  last reset; rows_estimated holds the number of those scans instead of an estimate. */
void dk_sqlite_stats_get(dk_scan_stats *out, const dk_sqlite_ctx *ctx);
void dk_sqlite_stats_reset(dk_sqlite_ctx *ctx);
/** Adds a storage option (dk_s3_options_set's names: aws_endpoint_url, aws_access_key_id,
 *  aws_allow_http, ...) for the s3:// tables of the connection opened after it (storage.c);
 *  `key` and `value` are copied. Returns an SQLite result code. */
int dk_sqlite_storage_option(dk_sqlite_ctx *ctx, const char *key, const char *value);
/** The counters as one JSON object ("scans" is rows_estimated, see above). */
void dk_sqlite_stats_json(char *buf, size_t cap, const dk_scan_stats *s);

/** Rewrites every `delta_scan(args)` (`delta_changes(args)`) call whose arguments are
 *  literals into a reference to a temp `delta` (`delta_changes`) table created with the same
 *  arguments. *out is sqlite3_malloc'ed (the SQL
 *  unchanged when there is nothing to rewrite). Returns SQLITE_OK or an error code with
 *  *errmsg (sqlite3_malloc'ed). */
int dk_sqlite_expand_sql(sqlite3 *db, const char *sql, char **out, char **errmsg);

#ifdef DK_SQLITE_LOADABLE
/** Entry point of dk_sqlite.so, found by SQLite's default naming (ext.c). */
int sqlite3_dksqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);
#endif

/* ---- internal to the connector ---------------------------------------------------------- */

/** The S3 backends and storage options of a connection (storage.c). */
typedef struct dks_storage dks_storage;
void dks_storage_free(dks_storage *s);

/** The per-connection context (vtab.c creates it, the `delta` module's destructor frees it). */
struct dk_sqlite_ctx {
  dk_scan_stats acc;
  dks_storage *storage; /* NULL until an option is set or an s3:// table is opened */
};

/** 1 when a table argument names a storage option (aws_..., dk_s3_...). */
int dks_is_storage_option(const char *key);
/** Opens the table at path: a local path on dk's built-in backend, an s3:// or s3a:// URI on
 *  the connection's backend for its bucket with the connection's storage options followed by
 *  n more (a table's own; refused on a local path); confine: dk_table_options.confine_paths. */
dk_status dks_table_open(dk_table **out, dk_sqlite_ctx *ctx, const char *path, int n,
                         const char *const *keys, const char *const *values, int confine,
                         dk_error *err);

/* values.c */

/** A growable byte buffer on sqlite3_malloc. */
typedef struct dks_buf {
  char *p;
  size_t len, cap;
  int oom;
} dks_buf;
void dks_buf_put(dks_buf *b, const void *p, size_t n);
void dks_buf_free(dks_buf *b);

/** Value kinds of top-level columns (derived from the Arrow format). */
typedef enum dks_kind {
  DKS_OTHER = 0, DKS_NULL, DKS_BOOL, DKS_INT, DKS_FLOAT, DKS_DOUBLE, DKS_STRING, DKS_BINARY,
  DKS_DECIMAL, DKS_DATE, DKS_TIMESTAMP, DKS_TIMESTAMP_NTZ, DKS_NESTED
} dks_kind;
dks_kind dks_kind_of(const char *format, int *prec, int *scale);

/** Registers delta_files and delta_history (meta.c). */
int dks_register_meta(sqlite3 *db, dk_sqlite_ctx *ctx);

/** Sets the SQLite result to value `row` (the index into a, before a->offset is applied) of
 *  array a with schema s. Nested values become JSON text through *json, the column's encoder
 *  (created on first use for schema s; the caller frees it with dk_arrow_json_free when s
 *  goes away). */
void dks_result(sqlite3_context *ctx, const struct ArrowSchema *s, const struct ArrowArray *a,
                int64_t row, dk_arrow_json **json);

/** ISO-8601 text: date "YYYY-MM-DD"; timestamp "YYYY-MM-DDTHH:MM:SS.ffffff" + "Z" when utc. */
size_t dks_format_date(char *buf, int64_t days);
size_t dks_format_ts(char *buf, int64_t micros, int utc);
/** Parses exactly the text dks_format_date / dks_format_ts produce (4-digit years); 1 = ok. */
int dks_parse_date(const char *s, size_t n, int32_t *days);
int dks_parse_ts(const char *s, size_t n, int utc, int64_t *micros);

#endif
