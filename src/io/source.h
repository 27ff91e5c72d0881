/*
** source.h — the internal byte source: random-access reads of one file through a dk_storage
** (or of bytes in memory). Everything libdk reads by range (Parquet data files, checkpoints,
** sidecars) goes through one, so any backend works. Not API. The shape is nanoarrow's
** ArrowIpcInputStream: a few operations, private data, release.
**
**   dk__source src;
**   DK_RETURN_NOT_OK(dk_io__source_open(&src, storage, key, &(dk__source_opts){0}, err));
**   const uint8_t *p;
**   st = dk_io__source_read(&src, off, len, buf, &p, err);  (p = buf, or a view of the map)
**   dk_io__source_release(&src);
**
** read_ranges goes to the backend's batched read (storage version 2) when it has one, so an
** object store can issue the ranges together; with a mapping, reads are views and cost no
** copy. `coalesce` tells readers whether batching pays: it is set when the backend cannot map
** (a remote store, where every read is a round trip), clear for a local or in-memory file.
** A source is used by one thread at a time unless the backend is thread-safe (the local
** backend is: each read opens the file on its own).
*/
#ifndef DK_IO_SOURCE_H
#define DK_IO_SOURCE_H

#include "dk/sys/storage.h"
#include "util/util.h"

typedef struct dk__source dk__source;
struct dk__source {
  int64_t size;            /* bytes in the file */
  const uint8_t *view;     /* the whole file when mapped (or in memory), else NULL */
  int coalesce;            /* non-zero: reads are round trips; batch them (see banner) */
  const char *name;        /* the key, for messages (owned by the source) */
  /* Reads n ranges (each inside [0, size), checked by the caller). */
  dk_status (*read_ranges)(dk__source *src, const dk_byte_range *r, size_t n, dk_error *err);
  void (*release)(dk__source *src); /* NULL once released */
  void *private_data;
};

typedef struct dk__source_opts {
  int64_t size;            /* > 0: trusted size (saves a stat) */
  int map;                 /* 1: map the file when the backend can (reads become views) */
  const dk_allocator *alloc;
} dk__source_opts;

/* Opens key on sto. A missing file is DK_NOT_FOUND, a directory DK_IO (messages name the key).
** Without a trusted size the backend's stat gives it. */
dk_status dk_io__source_open(dk__source *out, dk_storage *sto, const char *key,
                             const dk__source_opts *opts, dk_error *err);
/* A source over len bytes at data (borrowed; they must outlive the source). */
void dk_io__source_mem(dk__source *out, const void *data, size_t len, const char *name);
/* Reads len bytes at off: *view points at them, in dst (len bytes) or in the mapping. A range
** outside the file is DK_CORRUPT naming the offset. */
dk_status dk_io__source_read(dk__source *src, int64_t off, size_t len, uint8_t *dst,
                             const uint8_t **view, dk_error *err);
/* Reads n ranges in one batch (bounds checked; copies from the mapping when mapped). */
dk_status dk_io__source_read_ranges(dk__source *src, const dk_byte_range *r, size_t n,
                                    dk_error *err);
/* Whether sources on sto coalesce (their reads are round trips: the backend cannot map). */
int dk_io__storage_remote(const dk_storage *sto);
/* Releases what the source holds; accepts a released or zeroed source. */
void dk_io__source_release(dk__source *src);

#endif /* DK_IO_SOURCE_H */
