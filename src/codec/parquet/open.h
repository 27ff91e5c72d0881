/*
** open.h — opening a Parquet file through a byte source (library-internal, not API): what the
** rest of libdk needs to read Parquet from any dk_storage backend without the reader's
** internals (reader.h). dk_parquet_open (dk/parquet.h) is the local-path wrapper.
*/
#ifndef DK_PARQUET_OPEN_H
#define DK_PARQUET_OPEN_H

#include "dk/parquet.h"
#include "io/source.h"

typedef struct dk_pq__open_opts {
  const dk_allocator *alloc; /* NULL = libc */
  int64_t size;              /* dk_pq__open_storage: > 0 = the file's size, trusted (no stat) */
  int map;                   /* dk_pq__open_storage: map the file when the backend can */
  int skip_page_crc;         /* do not verify page CRCs (dk_parquet_open_options v2) */
} dk_pq__open_opts;

/* Opens a Parquet file over a byte source, which moves into the file (released with it, also
** when opening fails). The source's backend must outlive the file and its streams. Errors of
** the footer name the source. o may be NULL (defaults). */
dk_status dk_pq__open_source(dk_parquet_file **out, dk__source *src, const dk_pq__open_opts *o,
                             dk_error *err);
/* dk_pq__open_source over dk_io__source_open(sto, key). */
dk_status dk_pq__open_storage(dk_parquet_file **out, dk_storage *sto, const char *key,
                              const dk_pq__open_opts *o, dk_error *err);

#endif /* DK_PARQUET_OPEN_H */
