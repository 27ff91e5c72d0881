/*
** snapshot_int.h — library-internal definitions shared by the snapshot module's files
** (not API): the table and snapshot structs and the loader used by history and commit ranges.
*/
#ifndef DK_SNAPSHOT_INT_H
#define DK_SNAPSHOT_INT_H

#include "io/uri.h"
#include "log/checkpoint.h"
#include "log/commit.h"
#include "log/replay.h"
#include "log/segment.h"
#include "log/timestamps.h"

struct dk_table {
  const dk_allocator *alloc;
  dk_storage *sto;
  int own_sto;
  char *root;        /* canonical root (io/uri.h dk__root.uri): local path or whole URI */
  dk__exec *exec; /* every thread the table's readers use */
  int refs; /* atomic: the handle plus one per snapshot */
};

/* The table's root and backend for resolving paths (io/uri.h). */
static inline dk__root dk_snapshot__root(const dk_table *t) {
  dk__root r;
  dk_io__root_init(&r, t->root, t->sto);
  return r;
}

/* The backend a snapshot's files are read through (the table's). */
static inline dk_storage *dk_snapshot__storage(const dk_snapshot *s);

/* The table's log for the readers of src/log/. */
static inline dk__log dk_snapshot__log(const dk_table *t) {
  dk__log lg = {t->sto, t->root, t->alloc, t->exec};
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
  dk_column_mapping_mode cm_mode;
  int from_crc;          /* built from N.crc: no file list */
  int64_t crc_num_files;
};

static inline dk_storage *dk_snapshot__storage(const dk_snapshot *s) { return s->table->sto; }

dk_status dk_snapshot__load(dk_snapshot **out, dk_table *t, int64_t version, int metadata_only,
                            dk_error *err);
/* First version whose commit time is the inCommitTimestamp, or -1 when ICT is disabled. */
int64_t dk_snapshot__ict_enablement(const dk_metadata *m);
#endif /* DK_SNAPSHOT_INT_H */
