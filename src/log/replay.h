/*
** replay.h — the replay state (not API): what "Action Reconciliation" builds from a
** checkpoint and commits (src/log/actions.c), the action views that feed it, and the stats
** blocks that keep file statistics compactly.
**
** Follows PROTOCOL.md "Actions", "Action Reconciliation", "Checkpoints", "Deletion Vectors",
** "Row Tracking" and "In-Commit Timestamps".
*/
#ifndef DK_LOG_REPLAY_H
#define DK_LOG_REPLAY_H

#include "codec/json/json.h"
#include "codec/parquet/pages.h"
#include "dk/snapshot.h"
#include "util/exec.h"
#include "util/util.h"

enum { DK__F_LIVE = 1, DK__F_BRID = 2, DK__F_DRCV = 4, DK__F_KTAG = 8 /* ktag is set */ };
#define DK__MAX_PV 0xFFFFFFu /* partition values per file (24 bits) */

/* Stats text is stored LZ4-compressed in blocks of about 128 KiB (stats are the bulk of a
 * big table's log); a reader decompresses one block at a time into a per-thread cache. */
typedef struct dk__sblock {
  uint64_t serial;           /* process-unique id (cache key) */
  void *data;                /* compressed bytes (or raw when compression did not pay) */
  uint32_t csize, usize;     /* compressed / uncompressed sizes */
  int raw;                   /* data is uncompressed */
  /* page blocks: a Parquet page of a checkpoint's add.stats kept as stored (data owns its
   * bytes; page.data points at them); a file's soff is then its row in the page and slen 0 */
  int is_page;
  dk_pq__page page;
  const struct dk__sblock *dict; /* the chunk's dictionary page block, or NULL */
  const char *src;               /* page blocks: the checkpoint file (for messages) */
  const struct dk__sblock *next; /* page blocks: the chunk's next data page, decoded ahead on a
                                    helper thread while this one is read; NULL = none */
  const void *owner;             /* the state that frees it */
} dk__sblock;

/* Fields most files lack, allocated in the arena only when present. */
typedef struct dk__fextra {
  dk_dv_descriptor *dv;      /* NULL when the file has no deletion vector */
  const char *tags;          /* JSON object text or NULL */
  int64_t base_row_id, drcv;
} dk__fextra;

typedef struct dk__file {
  const char *path;          /* decoded (arena) */
  const char **pv;           /* 2*n_pv interned pointers: key, value (NULL = null) */
  dk__fextra *extra;         /* NULL when there is no DV, tag or row-tracking field */
  dk__sblock *sblk;          /* stats block, NULL when there are no stats */
  int64_t size, mtime;
  uint32_t soff, slen;       /* stats position in the block's uncompressed bytes */
  uint32_t n_pv : 24;        /* <= DK__MAX_PV */
  uint32_t flags : 8;        /* DK__F_* */
  uint32_t ktag;             /* checkpoint rows: low 32 bits of the (path, DV id) key hash */
} dk__file;

static inline dk_dv_descriptor *dk__file_dv(const dk__file *f) {
  return f->extra ? f->extra->dv : NULL;
}

/* Decompresses (or finds in this thread's cache) the stats of f; NULL when it has none. */
const char *dk_log__file_stats(const dk__file *f);
/* The same, reporting why stats could not be had: DK_CORRUPT naming the checkpoint file and
 * page offset when a kept add.stats page does not decode, DK_NOMEM. */
dk_status dk_log__file_stats_err(const char **out, const dk__file *f, dk_error *err);

typedef struct dk__tomb {
  const char *path;
  const dk_dv_descriptor *dv; /* arena or NULL */
  int64_t deletion_timestamp, size;
  int data_change, live;
} dk__tomb;

typedef struct dk__txn {
  const char *app_id;
  int64_t version, last_updated;
} dk__txn;

typedef struct dk__domain {
  const char *domain;
  const char *config;
  int removed;
} dk__domain;

/* Compact open-addressing index from a (path, DV id) key to an array position: one 64-bit
 * slot per entry (32-bit hash tag | position + 1); keys are compared against the array, so no
 * key is stored twice. Linear probing with backward-shift deletion. */
typedef struct dk__index {
  uint64_t *slots;
  size_t cap; /* power of two, or 0 */
  size_t count;
} dk__index;

typedef struct dk__state {
  const dk_allocator *alloc;
  dk_arena arena;            /* strings, DV descriptors, partition-value arrays */
  dk_hmap intern;            /* partition keys/values -> arena pointer */
  dk_hmap pv_intern;         /* partition-value tuples (arrays of interned pointers) */
  dk_hmap pv_text;           /* the same tuples keyed by their text (columnar adds) */
  dk_buf pv_key;             /* scratch: one tuple's text key */
  dk_buf pv_views;           /* scratch: one JSON add's partition values as dk_str views */
  const char **pv_buf;       /* scratch tuple */
  size_t pv_cap;
  dk__file *files;
  size_t n_files, cap_files, n_live;
  dk__index file_index;      /* (path, dv id) -> position in files */
  dk__tomb *tombs;
  size_t n_tombs, cap_tombs;
  dk__index tomb_index;      /* (path, dv id) -> position in tombs */
  dk__txn *txns;
  size_t n_txns, cap_txns;
  dk_hmap txn_index;
  dk__domain *domains;
  size_t n_domains, cap_domains;
  dk_hmap domain_index;
  int has_protocol, has_metadata;
  dk_protocol protocol;
  dk_metadata metadata;
  const char *root;          /* table root, for canonicalising absolute paths */
  dk__exec *exec;            /* the table's executor (NULL: checkpoint decoding runs inline) */
  size_t root_len;
  int64_t last_ict;          /* inCommitTimestamp of the last commit applied, or -1 */
  int64_t last_commit_info_ts; /* commitInfo.timestamp of the last commit applied, or -1 */
  int64_t cur_version;       /* version being applied */
  dk_buf scratch;            /* tags JSON text */
  dk_buf sidecars;           /* sidecar file names seen (NUL-separated) */
  dk__sblock **sblocks;      /* sealed stats blocks (owned) */
  size_t n_sblocks, cap_sblocks;
  dk__sblock *cur_sblock;    /* block being filled from `pending` */
  dk_buf pending;            /* uncompressed stats of the current block */
  size_t raw_stats;          /* bytes of stats blocks kept uncompressed */
  size_t last_pos;           /* position of the entry the last add went to */
  /* Checkpoint rows are already reconciled (PROTOCOL.md "Checkpoints"), so they are appended
   * without indexing (`defer`); files[0..n_base_files) and tombs[0..n_base_tombs) are those
   * rows. Commits are reconciled among themselves through the indexes, and at finish a base
   * row whose key a commit touched is dropped (the newer action wins). */
  int defer;
  size_t n_base_files, n_base_tombs;
} dk__state;

/* Flags for dk_log__apply_action. */
enum { DK__FROM_CHECKPOINT = 1 };

dk_status dk_log__state_init(dk__state *st, const dk_allocator *alloc, const char *root,
                             dk_error *err);
void dk_log__state_dispose(dk__state *st);
/* Applies one action object (a whole log line) to the state. */
dk_status dk_log__apply_action(dk__state *st, const dk_json_value *line, int flags,
                               dk_error *err);
/* An add action as views (Parquet checkpoint columns, or a commit's parsed JSON): borrowed,
 * no NULs needed. */
typedef struct dk__add_in {
  dk_str path;               /* as written (URL-encoded) */
  size_t n_pv;
  const dk_str *pv;          /* 2*n_pv: key, value (value.ptr NULL = null) */
  int64_t size, mtime;
  dk_str stats;              /* ptr NULL = none */
  dk_str tags_json;          /* ptr NULL = none */
  int has_dv;
  char dv_type;
  dk_str dv_path;
  int32_t dv_offset, dv_size; /* offset -1 = absent */
  int64_t dv_card;
  int has_brid, has_drcv;
  int64_t brid, drcv;
} dk__add_in;
/* Applies an add; st->last_pos is then the position of its entry in st->files. */
dk_status dk_log__apply_add_in(dk__state *st, const dk__add_in *in, dk_error *err);
/* A remove action from a columnar source. */
typedef struct dk__remove_in {
  dk_str path;                   /* as written (URL-encoded) */
  const dk_dv_descriptor *dv;    /* NULL = none; path_or_inline_dv NUL-terminated, borrowed */
  int64_t deletion_timestamp;    /* -1 = absent */
  int64_t size;                  /* -1 = absent */
  int data_change;
} dk__remove_in;
/* Applies a remove (flags: DK__FROM_CHECKPOINT or 0). */
dk_status dk_log__apply_remove_in(dk__state *st, const dk__remove_in *in, int flags,
                                  dk_error *err);
/* A stats block holding a copy of a stored Parquet page of add.stats (dict: the chunk's
 * dictionary page block or NULL), not yet owned by any state: thread-safe as far as alloc is.
 * dk_log__adopt_block makes st its owner; until then dk_log__page_block_free frees it. */
dk_status dk_log__page_block_new(dk__sblock **out, const dk_allocator *alloc,
                                 const dk_pq__page *pg, const dk__sblock *dict, const char *src,
                                 dk_error *err);
void dk_log__page_block_free(dk__sblock *b, const dk_allocator *alloc);
dk_status dk_log__adopt_block(dk__state *st, dk__sblock *b, dk_error *err);
/* Attaches stats text to the entry at `pos` (second pass over a Parquet checkpoint). */
dk_status dk_log__set_stats(dk__state *st, size_t pos, const char *text, size_t len,
                            dk_error *err);

/* Brackets the application of a checkpoint (all parts and sidecars) to an empty state: its
 * rows are appended without per-row index inserts (see dk__state.defer). No-op on a state
 * that already holds files or tombstones. */
void dk_log__state_begin_checkpoint(dk__state *st);
void dk_log__state_end_checkpoint(dk__state *st);

/* Parses the newline-delimited actions of one file and applies them. `name` is for errors. */
dk_status dk_log__apply_json_file(dk__state *st, const char *text, size_t len, int flags,
                                  const char *name, dk_error *err);
/* Drops dead entries (order of the live ones is kept), seals the last stats block and frees
 * the replay-only indexes. */
dk_status dk_log__state_finish(dk__state *st, dk_error *err);
/* Rebuilds the indexes of a finished state (for incremental refresh). */
dk_status dk_log__state_reindex(dk__state *st, dk_error *err);

#endif /* DK_LOG_REPLAY_H */
