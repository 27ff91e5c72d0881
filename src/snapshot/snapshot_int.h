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

/* ---- the chunked copy-on-write lists of files and tombstones (filelist.c) ---------------- */

#define DK_SNAPSHOT__CHUNK 1024      /* entries a chunk holds at most */
#define DK_SNAPSHOT__BLOOM_WORDS 256 /* a chunk's key filter: 16 bits an entry of a full one */

enum { DK__CL_FILES = 0, DK__CL_TOMBS = 1 }; /* what a list holds: dk__file or dk__tomb */

/* Memory holding entries, shared by the chunks cut from it. */
typedef struct dk__cblock {
  int refs;  /* atomic: the chunks pointing into it */
  void *mem; /* the entries (freed with the block) */
} dk__cblock;

/* Immutable once built; shared by the lists of every snapshot that has these entries. */
typedef struct dk__chunk {
  int refs;          /* atomic: the lists holding it */
  uint32_t n;        /* entries, 1..DK_SNAPSHOT__CHUNK */
  const void *e;     /* n entries (dk__file or dk__tomb) in blk->mem */
  dk__cblock *blk;   /* a reference */
  uint64_t bloom[DK_SNAPSHOT__BLOOM_WORDS]; /* 2-hash filter of the entries' key tags */
} dk__chunk;

typedef struct dk__clist {
  int kind;          /* DK__CL_* */
  dk__chunk **c;     /* nc chunk references */
  size_t *start;     /* start[i]: index of c[i]'s first entry; start[nc] == n */
  size_t nc, n;
} dk__clist;

/* A (path, DV id) key with the low 32 bits of its hash (log/replay.h dk_log__key_tag). */
typedef struct dk__key {
  const char *path;
  const dk_dv_descriptor *dv;
  uint32_t tag;
} dk__key;

void dk_snapshot__clist_init(dk__clist *l, int kind);
void dk_snapshot__clist_dispose(dk__clist *l, const dk_allocator *a);
/* Makes l the n entries of arr (a dk__malloc'd array it takes over, even on failure);
 * *bytes: the sum of their sizes (file lists). */
dk_status dk_snapshot__clist_adopt(dk__clist *l, int64_t *bytes, void *arr, size_t n,
                                   const dk_allocator *a, dk_error *err);
/* The lists of a snapshot refreshed from one with old_files and old_tombs (old_bytes in its
 * files), from the finished replay state of the new commits alone (its file and tombstone
 * arrays move into the lists, even on failure): the old entries whose keys the commits
 * touched are dropped, chunks none of them is in are shared, the old lists are not changed.
 * *bytes: the sizes of the new list's files. */
dk_status dk_snapshot__lists_refresh(dk__clist *files, dk__clist *tombs, int64_t *bytes,
                                     const dk__clist *old_files, const dk__clist *old_tombs,
                                     int64_t old_bytes, dk__state *st, const dk_allocator *a,
                                     dk_error *err);
/* Entry i (< l->n). */
const void *dk_snapshot__clist_at(const dk__clist *l, size_t i);

struct dk_snapshot {
  int refs; /* atomic */
  dk_table *table;
  dk_snapshot *base; /* older snapshot whose strings this one borrows (incremental refresh) */
  dk__state st;      /* replay state; its file and tombstone arrays move into the lists */
  dk__clist files;   /* the active files (the one list every reader goes through) */
  dk__clist tombs;   /* the tombstones */
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

/* File i / tombstone i of the snapshot (in range). */
static inline const dk__file *dk_snapshot__file_at(const dk_snapshot *s, int64_t i) {
  return (const dk__file *)dk_snapshot__clist_at(&s->files, (size_t)i);
}
static inline const dk__tomb *dk_snapshot__tomb_at(const dk_snapshot *s, int64_t i) {
  return (const dk__tomb *)dk_snapshot__clist_at(&s->tombs, (size_t)i);
}

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
