/*
** open.h — opening a Parquet file through a byte source (library-internal, not API): what the
** rest of libdk needs to read Parquet from any dk_storage backend without the reader's
** internals (reader.h). dk_parquet_open (dk/parquet.h) is the local-path wrapper.
*/
#ifndef DK_PARQUET_OPEN_H
#define DK_PARQUET_OPEN_H

#include "dk/parquet.h"
#include "io/source.h"

/* Opens a Parquet file over a byte source, which moves into the file (released with it, also
** when opening fails). The source's backend must outlive the file and its streams. Errors of
** the footer name the source. */
dk_status dk_pq__open_source(dk_parquet_file **out, dk__source *src, const dk_allocator *alloc,
                             dk_error *err);
/* dk_pq__open_source over dk_io__source_open(sto, key) (size > 0: trusted; map: map the file
** when the backend can). */
dk_status dk_pq__open_storage(dk_parquet_file **out, dk_storage *sto, const char *key,
                              int64_t size, int map, const dk_allocator *alloc,
                              dk_error *err);

#endif /* DK_PARQUET_OPEN_H */
