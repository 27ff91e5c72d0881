/*
** sink.h — the internal byte sink: a buffered, position-tracking writer over a
** dk_storage_writer (storage version 2), or over memory. Everything libdk writes in pieces
** (Parquet data files, checkpoints, DV files) goes through one, so any backend works and
** nothing is visible under the final name before dk_io__sink_commit. Not API.
**
**   dk__sink s;
**   DK_RETURN_NOT_OK(dk_io__sink_open(&s, storage, "/t/part-0.parquet", alloc, err));
**   ... dk_io__sink_write(&s, p, n, err) ...           (s.pos = bytes accepted so far)
**   st = dk_io__sink_commit(&s, 0, err);              (or dk_io__sink_abort(&s) on failure)
**
** A sink is ended by exactly one commit or abort; both release everything it holds. Writes
** are gathered in a buffer of `chunk` bytes (default 1 MiB) before reaching the backend, so
** small writes (page headers, Thrift footers) cost no system call each.
*/
#ifndef DK_IO_SINK_H
#define DK_IO_SINK_H

#include "dk/sys/storage.h"
#include "util/util.h"

typedef struct dk__sink {
  dk_storage_writer *w;      /* NULL: a memory sink (bytes stay in buf) */
  dk_buf buf;                /* pending bytes (memory sink: all of them) */
  size_t chunk;              /* flush threshold */
  int64_t pos;               /* bytes accepted so far (= the file offset of the next byte) */
  dk_status failed;          /* first failure; later writes return it again */
} dk__sink;

/* Opens path on storage for writing. Falls back to one whole-file write at commit when the
** backend predates version 2 (then the file is held in memory). */
dk_status dk_io__sink_open(dk__sink *s, dk_storage *storage, const char *path,
                           const dk_allocator *alloc, dk_error *err);
/* A sink that keeps every byte in s->buf (tests, small files assembled before a put). */
void dk_io__sink_mem(dk__sink *s, const dk_allocator *alloc);
dk_status dk_io__sink_write(dk__sink *s, const void *p, size_t n, dk_error *err);
/* Flushes and publishes (if_absent: DK_CONFLICT when the name exists). A memory sink keeps
** its bytes in s->buf for the caller (release with dk_io__sink_abort). */
dk_status dk_io__sink_commit(dk__sink *s, int if_absent, dk_error *err);
/* Discards everything; accepts a sink that was already committed or aborted. */
void dk_io__sink_abort(dk__sink *s);

#endif /* DK_IO_SINK_H */
