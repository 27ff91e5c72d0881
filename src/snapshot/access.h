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

#endif /* DK_SNAPSHOT_ACCESS_H */
