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
#include "protocol/actions.h"
#include "util/exec.h"
#include "util/util.h"

enum { DK__F_LIVE = 1, DK__F_BRID = 2, DK__F_DRCV = 4, DK__F_KTAG = 8 /* ktag is set */ };
#define DK__MAX_PV 0xFFFFFFu /* partition values per file (24 bits) */

/* Stats text is stored in blocks of about 128 KiB (stats are the bulk of a big table's log),
 * LZ4-compressed beyond a raw budget, or kept as a checkpoint's stored add.stats pages;
 * src/log/stats.c builds them and reads them through a dk__stats_reader. */
typedef struct dk__sblock {
  void *data;                /* compressed bytes (or raw when compression did not pay) */
  uint32_t csize, usize;     /* compressed / uncompressed sizes */
  int raw;                   /* data is uncompressed */
  /* page blocks: a Parquet page of a checkpoint's add.stats kept as stored (data owns its
   * bytes; page.data points at them); a file's soff is then its row in the page and slen 0 */
  int is_page;
  dk_pq__page page;
  const struct dk__sblock *dict; /* the chunk's dictionary page block, or NULL */
  const char *src;               /* page blocks: the checkpoint file (for messages) */
  const struct dk__sblock *next; /* page blocks: the chunk's next data page (what a reader
                                    listing files in order wants after this one), or NULL */
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
  uint32_t ktag;             /* low 32 bits of the (path, DV id) key hash (with DK__F_KTAG) */
} dk__file;

static inline dk_dv_descriptor *dk__file_dv(const dk__file *f) {
  return f->extra ? f->extra->dv : NULL;
}

/* ---- reading stats (src/log/stats.c) ---------------------------------------------------- */

typedef struct dk__stats_buf {   /* one decoded block */
  const dk__sblock *blk;         /* the block held, NULL = none */
  char *buf;                     /* LZ4 blocks: the uncompressed text */
  size_t cap;
  dk_buf text, scratch;          /* page blocks: the page's values, NUL-terminated */
  uint32_t *offs;                /* page blocks: each row's offset in text (UINT32_MAX = null) */
  size_t offs_cap;
} dk__stats_buf;

/* A reader of a state's stats, owned by one caller (not thread-safe). The stats it returns
 * live until its next call. With an executor of several threads it decodes the next page of
 * a checkpoint chunk there while the current one is read. */
typedef struct dk__stats_reader {
  const dk_allocator *alloc;
  dk__exec *exec;                /* NULL: no read-ahead */
  dk__stats_buf cur, ahead;
  const dk__sblock *ahead_blk;   /* block being decoded into `ahead` by `task`, or NULL */
  dk__task task;
} dk__stats_reader;

void dk_log__stats_reader_init(dk__stats_reader *r, const dk_allocator *alloc, dk__exec *exec);
void dk_log__stats_reader_dispose(dk__stats_reader *r);
/* The stats text of f (NULL when it has none), valid until the next call on r. DK_CORRUPT
 * names the checkpoint file and page offset when a kept add.stats page does not decode. */
dk_status dk_log__stats_get(const char **out, dk__stats_reader *r, const dk__file *f,
                            dk_error *err);

typedef struct dk__tomb {
  const char *path;
  const dk_dv_descriptor *dv; /* arena or NULL */
  int64_t deletion_timestamp, size;
  int data_change, live;
  uint32_t ktag;              /* low 32 bits of the (path, DV id) key hash */
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
  dk_arena act_ar;           /* scratch: the parse of one JSON action (reset per action) */
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
/* The same for a state that takes a few commits (an incremental refresh): its arena grows in
 * 16 KiB chunks, not 1 MiB ones (a chain of refreshed snapshots keeps every one). */
dk_status dk_log__state_init_small(dk__state *st, const dk_allocator *alloc, const char *root,
                                   dk_error *err);
void dk_log__state_dispose(dk__state *st);
/* Applies one action object (a whole log line) to the state. */
dk_status dk_log__apply_action(dk__state *st, const dk_json_value *line, int flags,
                               dk_error *err);
/* Applies an add; st->last_pos is then the position of its entry in st->files. */
dk_status dk_log__apply_add_in(dk__state *st, const dk__add *in, dk_error *err);
/* Applies a remove (flags: DK__FROM_CHECKPOINT or 0). */
dk_status dk_log__apply_remove_in(dk__state *st, const dk__remove *in, int flags,
                                  dk_error *err);
/* A stats block holding a copy of a stored Parquet page of add.stats (dict: the chunk's
 * dictionary page block or NULL), not yet owned by any state: thread-safe as far as alloc is.
 * dk_log__adopt_block makes st its owner; until then dk_log__page_block_free frees it. */
dk_status dk_log__page_block_new(dk__sblock **out, const dk_allocator *alloc,
                                 const dk_pq__page *pg, const dk__sblock *dict, const char *src,
                                 dk_error *err);
void dk_log__page_block_free(dk__sblock *b, const dk_allocator *alloc);
dk_status dk_log__adopt_block(dk__state *st, dk__sblock *b, dk_error *err);
/* Appends stats text to the state's current stats block and points f at it. */
dk_status dk_log__stats_add(dk__state *st, dk__file *f, const char *text, size_t n,
                            dk_error *err);
/* Seals the current stats block (compressing it once past the raw budget). */
dk_status dk_log__stats_seal(dk__state *st, dk_error *err);
/* Frees the state's stats blocks. */
void dk_log__stats_dispose(dk__state *st);
/* Attaches stats text to the entry at `pos` (second pass over a Parquet checkpoint). */
dk_status dk_log__set_stats(dk__state *st, size_t pos, const char *text, size_t len,
                            dk_error *err);

/* Brackets the application of a checkpoint (all parts and sidecars) to an empty state: its
 * rows are appended without per-row index inserts (see dk__state.defer). No-op on a state
 * that already holds files or tombstones. End keeps one row of a (path, DV) key the
 * checkpoint lists more than once (the last), so that no file is read twice. */
void dk_log__state_begin_checkpoint(dk__state *st);
dk_status dk_log__state_end_checkpoint(dk__state *st, dk_error *err);

/* Parses the newline-delimited actions of one file and applies them. `name` is for errors. */
dk_status dk_log__apply_json_file(dk__state *st, const char *text, size_t len, int flags,
                                  const char *name, dk_error *err);
/* Drops dead entries (order of the live ones is kept), seals the last stats block and frees
 * the replay-only indexes. */
dk_status dk_log__state_finish(dk__state *st, dk_error *err);
/* The low 32 bits of the hash of a (path, DV id) key (dk__file.ktag, dk__tomb.ktag). */
uint32_t dk_log__key_tag(const char *path, size_t plen, const dk_dv_descriptor *dv);
/* Whether two DV descriptors name the same DV (NULL: none), as keys compare them. */
bool dk_log__dv_same(const dk_dv_descriptor *a, const dk_dv_descriptor *b);

#endif /* DK_LOG_REPLAY_H */
