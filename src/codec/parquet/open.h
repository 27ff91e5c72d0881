/*
** open.h — opening a Parquet file through a byte source (library-internal, not API): what the
** rest of libdk needs to read Parquet from any dk_storage backend without the reader's
** internals (reader.h). dk_parquet_open (dk/parquet.h) is the local-path wrapper.
*/
#ifndef DK_PARQUET_OPEN_H
#define DK_PARQUET_OPEN_H

#include "dk/parquet.h"
#include "io/source.h"
#include "util/exec.h"

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

/* ---- read-ahead (object stores) ---------------------------------------------------------
** Where every read is a round trip (a coalescing source, io/source.h), a reader can fetch the
** column chunks of the row group it will decode next while it decodes the current one. A
** dk_pq__ahead is a slot for one such fetch: a stream created with it (dk_pq__read_ex) records
** the file and the leaves it reads; dk_pq__ahead_start then fetches those leaves' chunks of
** another row group of that file, in one batched read_ranges, as a task on the executor; the
** stream that later reads that row group with the same slot takes the buffers (no copy),
** joining the task first if it is still running. At most one row group is held per slot, and
** only when its chunks total at most `max` bytes: the memory read ahead is bounded by
** max x slots. The fetch task waits for nothing, so the thread that owns the slot may join it
** from inside another task. A slot is used by one thread at a time. */
typedef struct dk_pq__ahead dk_pq__ahead;

/* A slot fetching on ex (NULL: the slot only records; nothing is read ahead). */
dk_status dk_pq__ahead_new(dk_pq__ahead **out, dk__exec *ex, int64_t max, const dk_allocator *a,
                           dk_error *err);
/* Joins a fetch still running and frees what the slot holds; accepts NULL. */
void dk_pq__ahead_free(dk_pq__ahead *a);
/* Starts fetching row group rg of f for the leaves the slot's last stream recorded; does
** nothing unless that stream read f over a coalescing, unmapped source, when another row group
** is already in flight or held (it is dropped first unless it is rg), when the chunks exceed
** the slot's max, or when memory is short (read-ahead is only ever a hint). */
void dk_pq__ahead_start(dk_pq__ahead *a, dk_parquet_file *f, int rg);

/* dk_parquet_read with a read-ahead slot (may be NULL; it must outlive the stream), and with
** prefetch_now set, the first row group's chunks fetched before returning (coalescing sources
** only; at most the slot's max bytes, or the reader's usual bound without a slot) — so a
** stream opened ahead of time holds its bytes before its first batch is asked for. */
dk_status dk_pq__read_ex(struct ArrowArrayStream *out, dk_parquet_file *f,
                         const dk_parquet_read_options *opts, dk_pq__ahead *ahead,
                         int prefetch_now, dk_error *err);

#endif /* DK_PARQUET_OPEN_H */
