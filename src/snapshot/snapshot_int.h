/*
** snapshot_int.h — library-internal definitions shared by the snapshot module's files
** (not API): the table and snapshot structs and the loader used by history and commit ranges.
*/
#ifndef DK_SNAPSHOT_INT_H
#define DK_SNAPSHOT_INT_H

#include <pthread.h>

#include "io/uri.h"
#include "log/checkpoint.h"
#include "log/commit.h"
#include "log/replay.h"
#include "log/segment.h"
#include "log/timestamps.h"
#include "protocol/table_config.h"

struct dk_table {
  const dk_allocator *alloc;
  dk_storage *sto;
  int own_sto;
  int confine;       /* dk_table_options.confine_paths */
  char *root;        /* canonical root (io/uri.h dk__root.uri): local path or whole URI */
  dk__exec *exec; /* every thread the table's readers use */
  int refs; /* atomic: the handle plus one per snapshot */
};

/* The table's root and backend for resolving paths (io/uri.h). */
static inline dk__root dk_snapshot__root(const dk_table *t) {
  dk__root r;
  dk_io__root_init(&r, t->root, t->sto);
  r.confine = t->confine;
  return r;
}

/* The table's log for the readers of src/log/. */
static inline dk__log dk_snapshot__log(const dk_table *t) {
  dk__log lg = {t->sto, t->root, t->alloc, t->exec, t->confine};
  return lg;
}

struct dk_snapshot {
  int refs; /* atomic */
  dk_table *table;
  dk_snapshot *base; /* older snapshot whose strings this one borrows (incremental refresh) */
  dk__state st;
  int64_t version;
  int64_t timestamp;
  int64_t total_bytes;
  const dk_type *schema;
  dk__table_config config;   /* the delta.* properties (strings in st's arena) */
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
  /* the cache of the modules above (access.h dk_snapshot__cache), published under mu */
  pthread_mutex_t mu;
  struct dk_snapshot__cache *cache; /* atomic pointer */
};

/* Fills `out` with the metadata of file i (no stats); i must be in range. */
void dk_snapshot__fill_entry(dk_file_entry *out, const dk_snapshot *s, int64_t i);
/* DK_INVALID for a metadata-only snapshot or an index outside [0, n) ([0, n] with end_ok). */
dk_status dk_snapshot__check_file_index(const dk_snapshot *s, int64_t i, bool end_ok,
                                        dk_error *err);
/* Incremental refreshes after which dk_snapshot_update does a full load instead. A refresh
 * keeps its predecessors' strings, stats blocks and small per-state tables alive (their file
 * arrays go once only successors refer to them), so the chain is bounded; a full load every
 * 32 commits costs little next to 32 refreshes. */
#define DK_SNAPSHOT__MAX_REFRESH_DEPTH 32

dk_status dk_snapshot__load(dk_snapshot **out, dk_table *t, int64_t version, int metadata_only,
                            dk_error *err);
#endif /* DK_SNAPSHOT_INT_H */
