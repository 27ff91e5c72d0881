/**
 * @file dk/sys/storage.h
 * @brief The storage backend vtable: how dk lists, reads and writes a table's files.
 *
 * dk ships a local-filesystem implementation (dk_storage_local_new); an object store backend
 * implements the same table. Every byte dk reads or writes goes through one of these.
 *
 * Versions: `version` comes first and operations are only ever appended. dk refuses a backend
 * whose version is 0 (an unset struct), calls no version-2 operation of a version-1 backend,
 * and uses a backend newer than DK_STORAGE_VERSION as a DK_STORAGE_VERSION one.
 *
 * Paths (keys): a table whose root is a local path or file URI hands the backend absolute
 * local paths ("/data/t/_delta_log/00000000000000000000.json"). A table whose root is a URI
 * of another scheme ("s3://bucket/t") hands it whole URIs: "scheme://authority/path", where
 * the path is the object's key as stored, not percent-encoded
 * ("s3://bucket/t/p=a b/part-0.parquet"); list_from gets directories in the same form
 * ("s3://bucket/t/_delta_log") and must report listed paths in it. A backend serves the
 * scheme of the table it was given to (s3, s3a and s3n count as one). Error messages should
 * name the path.
 */
#ifndef DK_SYS_STORAGE_H
#define DK_SYS_STORAGE_H

#include "dk/common.h"

DK_BEGIN_DECL

/** 1: list_from .. free. 2: appends open_write, read_ranges, map/unmap (each may be NULL in a
 *  version-2 backend that cannot offer it; dk then falls back to the version-1 operations). */
#define DK_STORAGE_VERSION 2

/** One listed file. `path` is borrowed for the duration of the callback. */
typedef struct dk_file_info {
  const char *path;      /**< full path */
  int64_t size;          /**< bytes */
  int64_t mtime_ms;      /**< modification time, ms since epoch */
  int is_dir;            /**< non-zero for a directory (local backend only) */
} dk_file_info;

/** Returns DK_OK to continue, anything else stops listing and is returned by list_from. */
typedef dk_status (*dk_list_cb)(const dk_file_info *info, void *payload);

/** A file being written in pieces (version 2). Nothing is visible under the final name until
 *  commit succeeds; abort, or a commit that fails, leaves nothing under that name. The caller
 *  ends every writer with exactly one commit or abort, which also frees it. */
typedef struct dk_storage_writer dk_storage_writer;
struct dk_storage_writer {
  void *ctx; /**< backend state */
  /** Appends len bytes. After a failure only abort may follow. */
  dk_status (*write)(dk_storage_writer *w, const void *data, size_t len, dk_error *err);
  /** Makes the bytes visible under the final name and frees w. if_absent = 1: only if no file
   *  has that name (DK_CONFLICT otherwise, nothing written); 0: replaces it. */
  dk_status (*commit)(dk_storage_writer *w, int if_absent, dk_error *err);
  /** Discards everything written and frees w. Accepts NULL. */
  void (*abort)(dk_storage_writer *w);
};

/** One range of a batched read (version 2): `len` bytes at `offset` into `buf`. */
typedef struct dk_byte_range {
  int64_t offset; /**< first byte */
  size_t len;     /**< bytes to read */
  void *buf;      /**< destination, len bytes */
} dk_byte_range;

typedef struct dk_storage dk_storage;
struct dk_storage {
  unsigned version; /**< DK_STORAGE_VERSION */
  void *ctx;        /**< backend state */
  /** Lists the entries of directory `dir` whose name is >= `start_name` (NULL = all),
   *  in lexicographic order of name. DK_NOT_FOUND when dir does not exist. */
  dk_status (*list_from)(dk_storage *s, const char *dir, const char *start_name,
                         dk_list_cb cb, void *payload, dk_error *err);
  /** Reads a whole file into *out; the caller releases it with s->free_buf. */
  dk_status (*read)(dk_storage *s, const char *path, uint8_t **out, size_t *len, dk_error *err);
  /** Reads `len` bytes at `offset` into buf; short file is DK_CORRUPT. */
  dk_status (*read_range)(dk_storage *s, const char *path, int64_t offset, void *buf,
                          size_t len, dk_error *err);
  /** Size and mtime of one file (DK_NOT_FOUND when absent). */
  dk_status (*stat)(dk_storage *s, const char *path, dk_file_info *out, dk_error *err);
  /** Writes (replaces) a whole file; atomic where the backend can make it so. */
  dk_status (*write)(dk_storage *s, const char *path, const void *data, size_t len,
                     dk_error *err);
  /** Creates the file only if absent; DK_CONFLICT when it exists (the commit primitive). */
  dk_status (*put_if_absent)(dk_storage *s, const char *path, const void *data, size_t len,
                             dk_error *err);
  /** Deletes a file (DK_NOT_FOUND when absent). */
  dk_status (*remove)(dk_storage *s, const char *path, dk_error *err);
  /** Frees a buffer returned by read. */
  void (*free_buf)(dk_storage *s, void *p);
  /** Frees the backend. */
  void (*free)(dk_storage *s);
  /* ---- version 2 ---- */
  /** Starts writing `path` in pieces (memory bounded by the caller's buffers, not the file). */
  dk_status (*open_write)(dk_storage *s, const char *path, dk_storage_writer **out,
                          dk_error *err);
  /** Reads n ranges of one file; a backend may issue them concurrently and coalesce
   *  neighbours. A range past the end is DK_CORRUPT, as for read_range. */
  dk_status (*read_ranges)(dk_storage *s, const char *path, const dk_byte_range *ranges,
                           size_t n, dk_error *err);
  /** Optional (NULL = not mappable): maps a whole file read-only. The mapping stays valid until
   *  unmap(token). An empty file maps to addr = NULL, len = 0. */
  dk_status (*map)(dk_storage *s, const char *path, const void **addr, size_t *len,
                   void **token, dk_error *err);
  /** Releases a mapping made by map. Accepts NULL. */
  void (*unmap)(dk_storage *s, void *token);
};

/** The local-filesystem backend. Free with s->free(s). */
DK_API DK_WARN_UNUSED dk_status dk_storage_local_new(dk_storage **out, const dk_allocator *alloc,
                                      dk_error *err);

DK_END_DECL

#endif /* DK_SYS_STORAGE_H */
