/*
** storage_mem.h — an in-memory dk_storage (dk/sys/storage.h, version 2) with fault injection,
** for tests only. The shape is libgit2's fake ODB backend (tests/libgit2/odb/backend/
** backend_helpers.h: the real vtable first, then one call counter per method) plus SQLite's
** test_vfs (fail the Nth call, persistently or once).
**
**   dk_mem_storage *m;  dk_mem_new(&m);
**   dk_mem_load_dir(m, "/data/t", "/data/t", &err);     (a directory tree under a key prefix)
**   dk_table_options o = {DK_TABLE_OPTIONS_VERSION, NULL, dk_mem_storage_of(m), 1};
**   dk_mem_fail(m, DK_MEM_ANY, 7, DK_IO, 0);             (the 7th call of any operation fails)
**   ... m->calls[DK_MEM_READ], dk_mem_injected(m) ...
**   dk_mem_free(m);
**
** Keys are whatever strings dk hands over ("/abs/path" or "s3://bucket/key"); a "directory" is
** any key prefix ending before a '/'. Listing is sorted by name and can be paginated (pages of
** list_page entries, each page one counted DK_MEM_LIST_PAGE call, after list_delay_us). Files
** keep the mtime they were loaded with. Every operation is thread-safe (one mutex).
*/
#ifndef DK_TEST_STORAGE_MEM_H
#define DK_TEST_STORAGE_MEM_H

#include <stdint.h>

#include "dk/sys/storage.h"

typedef enum dk_mem_op {
  DK_MEM_LIST = 0,      /* list_from */
  DK_MEM_LIST_PAGE,     /* one page of a listing (list_page > 0), or the whole listing */
  DK_MEM_READ,          /* read */
  DK_MEM_READ_RANGE,    /* read_range */
  DK_MEM_STAT,          /* stat */
  DK_MEM_WRITE,         /* write */
  DK_MEM_PUT_IF_ABSENT, /* put_if_absent */
  DK_MEM_REMOVE,        /* remove */
  DK_MEM_OPEN_WRITE,    /* open_write */
  DK_MEM_WRITER_WRITE,  /* writer->write */
  DK_MEM_WRITER_COMMIT, /* writer->commit */
  DK_MEM_READ_RANGES,   /* read_ranges */
  DK_MEM_MAP,           /* map */
  DK_MEM_N_OPS,
  DK_MEM_ANY = -1       /* dk_mem_fail: count calls of every operation */
} dk_mem_op;

typedef struct dk_mem_storage {
  dk_storage base;               /* first: what dk is handed */
  int64_t calls[DK_MEM_N_OPS];   /* calls per operation (counted before any fault) */
  int64_t total_calls;           /* calls of every operation */
  /* fault injection (dk_mem_fail) */
  int fail_op;                   /* DK_MEM_ANY or one dk_mem_op */
  int64_t fail_at;               /* the fail_at-th counted call fails; 0 = never */
  int fail_persist;              /* and every counted call after it */
  dk_status fail_status;
  int64_t injected;              /* faults injected so far */
  /* short reads: the short_at-th read-type call (read, read_range, read_ranges, map) returns
  ** half of what was asked: read gives a truncated file, the range reads DK_CORRUPT */
  int64_t short_at;
  int64_t read_calls;
  /* listing */
  int list_page;                 /* > 0: entries per listing page */
  int list_delay_us;             /* sleep before each page */
  /* behaviour */
  int no_map;                    /* 1: map/unmap are NULL (an object store: reads are copies) */
  void *impl;                    /* private state */
} dk_mem_storage;

/* A new empty backend of `version` (1: only the version-1 operations are set; 2: all). */
dk_status dk_mem_new_version(dk_mem_storage **out, unsigned version, dk_error *err);
static inline dk_status dk_mem_new(dk_mem_storage **out, dk_error *err) {
  return dk_mem_new_version(out, DK_STORAGE_VERSION, err);
}
static inline dk_storage *dk_mem_storage_of(dk_mem_storage *m) { return &m->base; }
void dk_mem_free(dk_mem_storage *m);
/* Applies no_map (call after changing it). */
void dk_mem_apply(dk_mem_storage *m);

/* Copies every regular file under local_dir (recursively) to key prefix + relative path. */
dk_status dk_mem_load_dir(dk_mem_storage *m, const char *local_dir, const char *prefix,
                          dk_error *err);
/* Adds or replaces one file (the bytes are copied). */
dk_status dk_mem_put(dk_mem_storage *m, const char *key, const void *data, size_t len,
                     int64_t mtime_ms, dk_error *err);
/* The bytes of a file (borrowed until it is replaced or removed), or NULL. */
const uint8_t *dk_mem_get(dk_mem_storage *m, const char *key, size_t *len);
size_t dk_mem_num_files(dk_mem_storage *m);
/* Deletes every key starting with prefix; returns how many. */
size_t dk_mem_remove_prefix(dk_mem_storage *m, const char *prefix);

/* Arms a fault: the nth counted call (1-based) of op (or of any op) fails with st, and with
** persist every one after it too. nth = 0 disarms. Resets the counters. */
void dk_mem_fail(dk_mem_storage *m, int op, int64_t nth, dk_status st, int persist);
/* Arms a short read at the nth read-type call (0 = none). */
void dk_mem_short_read(dk_mem_storage *m, int64_t nth);
/* Zeroes every counter (faults stay armed). */
void dk_mem_reset_counters(dk_mem_storage *m);
const char *dk_mem_op_name(int op);

#endif /* DK_TEST_STORAGE_MEM_H */
