/*
** snapshot_int.h — library-internal definitions shared by the snapshot module's files
** (not API): the table and snapshot structs and the loaders used by time travel, history
** and commit ranges.
*/
#ifndef DK_SNAPSHOT_INT_H
#define DK_SNAPSHOT_INT_H

#include "log/log.h"

struct dk_table {
  const dk_allocator *alloc;
  dk_storage *sto;
  int own_sto;
  char *root;
  int threads;
  int refs; /* atomic: the handle plus one per snapshot */
};

struct dk_snapshot {
  int refs; /* atomic */
  dk_table *table;
  dk_snapshot *base; /* older snapshot whose strings this one borrows (incremental refresh) */
  dk__state st;
  int64_t version;
  int64_t timestamp;
  int64_t total_bytes;
  const dk_type *schema;
  dk_column_mapping_mode cm_mode;
  int from_crc;          /* built from N.crc: no file list */
  int64_t crc_num_files;
  /* size and mtime of the commit file of `version` as listed (tip_size < 0: none, e.g. a
   * checkpoint-only version); dk_snapshot_update re-checks them to notice a rewritten log */
  int64_t tip_size, tip_mtime;
  int depth;             /* incremental refreshes since the last full load (length of base) */
  /* refreshed snapshots whose `base` this is (atomic): once only they hold it, its file and
   * tombstone arrays are released (they keep only its strings and stats blocks alive) */
  int child_refs;
  int arrays_released;   /* atomic flag: release once */
};

/* Incremental refreshes after which dk_snapshot_update does a full load instead. A refresh
 * keeps its predecessors' strings, stats blocks and small per-state tables alive (their file
 * arrays go once only successors refer to them), so the chain is bounded; a full load every
 * 32 commits costs little next to 32 refreshes. */
#define DK_SNAPSHOT__MAX_REFRESH_DEPTH 32

/* Parses the action lines (newline-delimited JSON) of text[0..len) in order, calling fn for
 * each until it returns false; blank lines are skipped. complete_only: text is a prefix of a
 * file, and a last line without its newline is left alone. On a line that does not parse,
 * *bad_line / *bad_off (1-based line, byte offset) name it for the caller's message. */
typedef bool (*dk__line_fn)(const dk_json_value *line, void *payload);
dk_status dk_snapshot__scan_lines(const char *text, size_t len, bool complete_only, dk_arena *ar,
                                  dk__line_fn fn, void *payload, size_t *bad_line,
                                  size_t *bad_off, dk_error *err);
dk_status dk_snapshot__read_log_file(dk_table *t, const char *name, uint8_t **data, size_t *len,
                                     dk_error *err);
dk_status dk_snapshot__apply_commits(dk_table *t, dk__state *st, const dk__logfile *commits,
                                     size_t n, dk_error *err);
dk_status dk_snapshot__load(dk_snapshot **out, dk_table *t, int64_t version, int metadata_only,
                            dk_error *err);
/* First version whose commit time is the inCommitTimestamp, or -1 when ICT is disabled. */
int64_t dk_snapshot__ict_enablement(const dk_metadata *m);
/* commitInfo.inCommitTimestamp of one commit file (DK_NOT_FOUND when it has none). */
dk_status dk_snapshot__commit_ict(dk_table *t, const dk__logfile *lf, int64_t *out,
                                  dk_error *err);
/* The latest version whose commit time <= ts (DK_OUT_OF_RANGE outside the history);
 * `latest` is the table's latest snapshot (its metadata says where ICT starts). */
dk_status dk_snapshot__version_at_timestamp(int64_t *out, dk_table *t, int64_t ts,
                                            const dk_snapshot *latest, dk_error *err);

#endif /* DK_SNAPSHOT_INT_H */
