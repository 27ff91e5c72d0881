/*
** txn_int.h — the transaction module's shared definitions (not API): the staged state of a
** dk_txn, the summary of a winning commit, and the conflict checker between them
** (delta-spark OptimisticTransaction / ConflictChecker, write-path.md §3).
*/
#ifndef DK_TXN_INT_H
#define DK_TXN_INT_H

#include "dk/txn.h"
#include "codec/json/json.h"
#include "log/commit.h"
#include "log/replay.h"
#include "log/segment.h"
#include "protocol/protocol.h"
#include "protocol/schema.h"
#include "snapshot/snapshot_int.h"
#include "util/util.h"

/* Metadata as a value the checker can compare (strings in the owner's arena). */
typedef struct txn_meta {
  const char *id, *name, *description, *provider, *schema_string;
  size_t n_part;
  const char **part;
  size_t n_conf;
  const char **conf;               /* 2 * n_conf: key, value */
  int64_t created_time;
} txn_meta;

typedef struct txn_add {
  const char *path;                /* as in storage, relative or absolute (not URI-encoded) */
  const char **pv;                 /* 2 * n_pv: physical key, value (NULL = null) */
  size_t n_pv;
  int64_t size, mtime, num_records; /* num_records -1 = unknown */
  int data_change;
  const char *stats, *tags, *clustering;
  dk_dv_descriptor *dv;
  int64_t base_row_id;             /* assigned per attempt (row tracking), -1 = none */
  int fixed_row_id;                /* re-added entry: keeps base_row_id / drcv as they were */
  int64_t drcv;                    /* its defaultRowCommitVersion, -1 = none */
  int cdc;                         /* a `cdc` action (a change data file), not an add */
  int own;                         /* written by this transaction (dk_txn_write): deleted when
                                      it ends without a commit */
} txn_add;

typedef struct txn_remove {
  int64_t idx;                     /* file index in the read snapshot */
  int data_change;
} txn_remove;

typedef struct txn_domain {
  const char *domain, *config;
  int removed;
} txn_domain;

/* A read predicate: the partition conjuncts (NULL = matches every partition). */
typedef struct txn_pred {
  dk_expr *partition;
} txn_pred;

struct dk_txn {
  const dk_allocator *alloc;
  dk_table *table;
  dk_snapshot *snap;               /* NULL when creating */
  int64_t read_version;            /* -1 when creating */
  dk_arena ar;
  dk_error scratch;
  char txn_id[37];
  char *operation, *op_params, *engine_info, *user_metadata;
  int max_attempts;
  dk_isolation isolation_opt;
  dk_committer *committer;
  int64_t now_ms;
  int no_auto_checkpoint;
  int writer;                      /* dk_txn_begin_writer: its files belong to the driver */
  /* current protocol and metadata (the read snapshot's, adopted winners', or staged) */
  dk_protocol protocol;
  txn_meta meta;
  int has_new_meta, has_new_protocol;
  const dk_type *meta_schema;      /* meta's parsed schema when it is not the read snapshot's
                                      (staged metadata, writer transactions), else NULL */
  /* staged actions */
  txn_add *adds;
  size_t n_adds, cap_adds;
  txn_remove *removes;
  size_t n_removes, cap_removes;
  txn_domain *domains;
  size_t n_domains, cap_domains;
  const char *app_id;              /* one app transaction (NULL = none) */
  int64_t app_version;
  const char **metric_k;
  int64_t *metric_v;
  size_t n_metrics, cap_metrics;
  /* read set */
  txn_pred *preds;
  size_t n_preds, cap_preds;
  dk_hmap read_paths;              /* paths of files read (decoded) */
  dk_hmap read_apps;
  dk_hmap removed_paths;           /* paths this transaction removes */
  const char **dyn_parts;          /* dynamic partition overwrite: rows of values */
  size_t n_dyn;
  int read_whole;
  int64_t read_hwm;                /* row-id high-water mark at read (-1 = none) */
  int64_t last_ict;                /* ICT (or commit time) of the newest version seen */
  const char *commit_tags;         /* commitInfo.tags as a JSON object text, or NULL (arena) */
};

/* Deletes the data file at rel (relative to the root; best effort). */
void dk_txn__remove_data_file(dk_table *t, const char *rel);
/* Marks the newest staged add as a file this transaction wrote itself. */
void dk_txn__own_last_add(dk_txn *x);

/* One winning commit, parsed (arena-owned strings). */
typedef struct txn_winner {
  int64_t version;
  int64_t file_mtime;
  int has_commit_info;
  const char *txn_id, *operation;
  int is_blind_append;             /* -1 absent */
  int64_t ict;                     /* -1 absent */
  int has_meta;
  txn_meta meta;
  int identity_only;               /* commitInfo.tags delta.identity.highWaterMarkOnly */
  int has_protocol;
  dk_protocol protocol;
  const char **apps;
  size_t n_apps;
  const char **domains;
  size_t n_domains;
  int64_t hwm;                     /* delta.rowTracking high-water mark, -1 none */
  const dk_json_value **add_pv;    /* each add's partitionValues object (NULL = none) */
  const char **add_paths;
  size_t n_adds;
  const char **remove_paths;
  size_t n_removes;
} txn_winner;

/* Reads and parses version v (DK_NOT_FOUND when absent). */
dk_status dk_txn__read_winner(txn_winner *w, dk_txn *txn, int64_t v, dk_arena *ar,
                              dk_error *err);
/* Checks txn against one winner and rebases it; DK_CONFLICT with the Spark-named message. */
dk_status dk_txn__check_winner(dk_txn *txn, const txn_winner *w, dk_isolation iso,
                               dk_conflict_kind *kind, dk_error *err);
/* The isolation level a commit of the staged actions uses. */
dk_isolation dk_txn__isolation(const dk_txn *txn);
/* Whether the staged commit is a blind append (only adds, nothing read). */
int dk_txn__is_blind_append(const dk_txn *txn);

/* The read set, piecewise (OPTIMIZE records only the files it compacts): a file path as in the
 * log, and a predicate over partition columns (taken, also on failure; NULL = every
 * partition). */
dk_status dk_txn__read_path(dk_txn *x, const char *path, dk_error *err);
dk_status dk_txn__read_predicate(dk_txn *x, dk_expr *partition, dk_error *err);

/* Column mapping (colmap.c): with mode "name" or "id", gives every field of *schema_string
 * without one an id and physical name (*schema_string then points into x's arena) and sets
 * *max_column_id; else leaves both (-1). */
dk_status dk_txn__assign_column_mapping(const char **schema_string, int64_t *max_column_id,
                                        dk_txn *x, const char *mode, dk_error *err);

/* Stages a `cdc` action (a file under _change_data/; f's stats, tags, DV are ignored). */
dk_status dk_txn__add_cdc(dk_txn *x, const dk_add_file *f, dk_error *err);
/* Writes the batches of `data` (the table's columns plus a string column `_change_type`) as
** change data files under _change_data/ (partition directories as data files), named
** cdc-<n>-<uuid>.c000.<codec>.parquet, with the data columns and _change_type, and stages a
** cdc action per file (write.c). */
dk_status dk_txn__write_cdc(dk_write_result *out, dk_txn *x, struct ArrowArrayStream *data,
                            dk_error *err);
/* Stages an add of an existing entry as it is (physical partition keys, stats, DV, row ids). */
dk_status dk_txn__add_entry(dk_txn *x, const dk_file_entry *f, int data_change, dk_error *err);
dk_status dk_txn__parse_interval_ms(int64_t *out, const char *s, dk_error *err);

/* Metadata helpers (txn.c). */
const char *dk_txn__meta_conf(const txn_meta *m, const char *key);
int dk_txn__conf_true(const txn_meta *m, const char *key);
/* The column row ids (which 0) or row commit versions (1) are materialized in when DML keeps
** them (delta-spark RowTracking.isEnabled: the feature supported and delta.enableRowTracking
** on; the name from delta.rowTracking.materialized*ColumnName), else NULL. */
const char *dk_txn__row_tracking_col(const dk_txn *x, int which);

/* Writer-side protocol check (features.c): DK_UNSUPPORTED naming what dk cannot write. */
dk_status dk_txn__check_write_protocol(const dk_protocol *p, dk_error *err);
/* The protocol a new table with metadata m needs (properties, schema types). */
dk_status dk_txn__derive_protocol(dk_protocol *out, dk_arena *ar, const txn_meta *m,
                                  const dk_type *schema, dk_error *err);
int dk_txn__protocol_supports(const dk_protocol *p, const char *feature);
/* A protocol supporting every feature of a and b (table features when either needs them). */
dk_status dk_txn__protocol_union(dk_protocol *out, dk_arena *ar, const dk_protocol *a,
                                 const dk_protocol *b, dk_error *err);
/* delta-spark's protocol upgrade of an existing table for new metadata (ALTER TABLE): the
 * features metadata m and its schema need (as dk_txn__derive_protocol) and those legacy writer version writer_v
 * implies (delta.minWriterVersion; reader_v: delta.minReaderVersion; 0 = not asked) added
 * to cur's. *upgraded = 0 (and *out = *cur) when cur has them all; else the new protocol: table
 * features listing every feature cur had (implied ones spelled out), reader version 3 when a
 * reader-writer feature other than columnMapping needs readerFeatures (2 for columnMapping);
 * legacy versions asked for on a legacy table stay legacy. */
dk_status dk_txn__protocol_upgrade(dk_protocol *out, int *upgraded, dk_arena *ar,
                                   const dk_protocol *cur, const txn_meta *m,
                                   const dk_type *schema, int reader_v, int writer_v,
                                   dk_error *err);
/* Whether `next` drops a feature `prev` supports. */
int dk_txn__protocol_removes_features(const dk_protocol *next, const dk_protocol *prev);

/* JSON action serialization (txn.c), as delta-spark writes the fields. */
dk_status dk_txn__put_key(dk_buf *b, const char *k, dk_error *err);
dk_status dk_txn__put_str(dk_buf *b, const char *s, dk_error *err);
dk_status dk_txn__put_kv_map(dk_buf *b, const char *const *kv, size_t n, dk_error *err);
dk_status dk_txn__put_dv(dk_buf *b, const dk_dv_descriptor *dv, dk_error *err);
/* The optional fields of an add/remove: stats, tags, deletionVector, baseRowId,
 * defaultRowCommitVersion (each only when present). */
dk_status dk_txn__put_file_fields(dk_buf *b, const char *stats, const char *tags_json,
                                  const dk_dv_descriptor *dv, int has_brid, int64_t brid,
                                  int has_drcv, int64_t drcv, dk_error *err);
/* A JSON string holding a JSON list of strings ("[\"a\"]"), as operationParameters carry
 * lists. */
dk_status dk_txn__put_json_list(dk_buf *b, const char *const *l, size_t n, dk_error *err);
/* The key a file is the same file by in two snapshots: path and deletion vector. */
dk_status dk_txn__file_key(dk_buf *b, const dk_file_entry *f, dk_error *err);
/* A file path in the log's URI form (absolute URIs as they are). */
dk_status dk_txn__put_path(dk_buf *b, const char *path, dk_error *err);
/* {"metaData":{...}}\n with n_extra more configuration entries (2 * n: key, value). */
dk_status dk_txn__put_metadata(dk_buf *b, const txn_meta *m, const char *const *extra,
                               size_t n_extra, dk_error *err);
dk_status dk_txn__put_protocol(dk_buf *b, const dk_protocol *p, dk_error *err);
dk_status dk_txn__meta_from_snapshot(txn_meta *m, dk_arena *ar, const dk_metadata *md,
                                     dk_error *err);

/* Paths (paths.c): Hive-style partition directory escaping and the URI form used in the log. */
dk_status dk_txn__escape_partition(dk_buf *b, const char *s, dk_error *err);
dk_status dk_txn__uri_encode_path(dk_buf *b, const char *s, dk_error *err);
/* A random (version 4) UUID as 36 characters + NUL. */
void dk_txn__uuid(char out[37]);

#endif /* DK_TXN_INT_H */
