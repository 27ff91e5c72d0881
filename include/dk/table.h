/**
 * @file dk/table.h
 * @brief Delta tables: a table root, the storage used to reach it, and its options.
 *
 * A ::dk_table names a table root and the storage used to reach it; snapshots
 * (dk/snapshot.h) and history (dk/history.h) are read from it. A table may be used from
 * several threads at once; it lives until dk_table_free and the last snapshot of it is freed.
 */
#ifndef DK_TABLE_H
#define DK_TABLE_H

#include "dk/common.h"
#include "dk/sys/storage.h"

DK_BEGIN_DECL

typedef struct dk_table dk_table;

#define DK_TABLE_OPTIONS_VERSION 1
typedef struct dk_table_options {
  unsigned version;          /**< DK_TABLE_OPTIONS_VERSION */
  const dk_allocator *alloc; /**< NULL = libc */
  dk_storage *storage;       /**< NULL = a local-filesystem backend owned by the table;
                                  otherwise borrowed and must outlive the table */
  int threads;               /**< size of the table's executor, the threads dk runs for it
                                  (the caller's included): parsing commits and decoding a
                                  checkpoint beside applying it, file iterators' stats
                                  read-ahead; 0 = automatic (the online CPUs, at most 8),
                                  1 = no thread at all. Threads start on first use. */
} dk_table_options;

/** Opens a table by its root: a local path (absolute or relative), a `file:` URI
 *  (`file:///abs`, `file:/abs`, `file://localhost/abs`; percent-encoded), or a URI of another
 *  scheme (`s3://bucket/prefix`, `s3a://...`), which needs a backend in opts->storage and is
 *  kept whole (see dk/sys/storage.h for the keys that backend receives). No I/O beyond a
 *  check that a local root exists.
 *  @return DK_OK; DK_INVALID (bad URI, a backend of version 0 or lacking a read operation);
 *  DK_UNSUPPORTED (a URI scheme with no backend given, naming the scheme; a file URI naming
 *  another host; options newer than this dk); DK_NOT_FOUND (a local root that does not
 *  exist); DK_NOMEM. */
DK_API DK_WARN_UNUSED dk_status dk_table_open(dk_table **out, const char *uri, const dk_table_options *opts,
                               dk_error *err);
DK_API void dk_table_free(dk_table *t);
/** The table root without trailing slash: an absolute local path for a local table opened on
 *  the built-in backend (symlinks resolved), else the path or URI as given, percent-decoded,
 *  with a lowercase scheme ("s3://bucket/prefix"). */
DK_API const char *dk_table_root(const dk_table *t);

DK_END_DECL

#endif /* DK_TABLE_H */
