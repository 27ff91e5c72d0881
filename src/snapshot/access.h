/*
** access.h — what the modules above the snapshot (scan, changes, txn) may know of a snapshot
** beyond the public API (library-internal): the allocator of its table, which everything they
** allocate for it goes through, and the storage backend its files are read through.
*/
#ifndef DK_SNAPSHOT_ACCESS_H
#define DK_SNAPSHOT_ACCESS_H

#include "dk/snapshot.h"

/* dk_table_options.alloc of the snapshot's table (NULL: libc). */
const dk_allocator *dk_snapshot__allocator(const dk_snapshot *s);
/* The backend the snapshot's files are read through: the table's (dk_table_options.storage,
** or its built-in local one), borrowed for as long as the snapshot lives. */
dk_storage *dk_snapshot__storage(const dk_snapshot *s);
/* dk_table_options.confine_paths of the snapshot's table (io/uri.h dk__root.confine). */
int dk_snapshot__confine(const dk_snapshot *s);
/* The table's executor (util/exec.h; dk_table_options.threads), borrowed likewise. */
struct dk__exec *dk_snapshot__exec(const dk_snapshot *s);

/* A cache a module above keeps with a snapshot (the scan's columnar file statistics,
** scan/stats.c): built under the snapshot's lock, immutable once published, freed (free) with
** the snapshot. A newer cache may replace the published one; it then owns the one it
** replaces (readers may still hold it), and frees it in its own free. */
typedef struct dk_snapshot__cache {
  void (*free)(struct dk_snapshot__cache *c);
} dk_snapshot__cache;
/* The published cache, or NULL (any thread; what it points to never changes). */
dk_snapshot__cache *dk_snapshot__cache_get(const dk_snapshot *s);
/* The snapshot's lock, held while a cache is built and published. */
void dk_snapshot__lock(const dk_snapshot *s);
void dk_snapshot__unlock(const dk_snapshot *s);
/* Publishes c (under the lock). */
void dk_snapshot__cache_set(const dk_snapshot *s, dk_snapshot__cache *c);

#endif /* DK_SNAPSHOT_ACCESS_H */
