/*
** access.h — what the modules above the snapshot (scan, changes, txn) may know of a snapshot
** beyond the public API (library-internal): the allocator of its table, which everything they
** allocate for it goes through.
*/
#ifndef DK_SNAPSHOT_ACCESS_H
#define DK_SNAPSHOT_ACCESS_H

#include "dk/snapshot.h"

/* dk_table_options.alloc of the snapshot's table (NULL: libc). */
const dk_allocator *dk_snapshot__allocator(const dk_snapshot *s);

#endif /* DK_SNAPSHOT_ACCESS_H */
