/*
** local.h — what libdk needs of the local filesystem beyond the dk_storage vtable (not API).
*/
#ifndef DK_STORAGE_LOCAL_H
#define DK_STORAGE_LOCAL_H

#include "util/util.h"

/* The absolute form of a local path with symlinks resolved (realpath(3)), allocated with a;
** NULL when it cannot be resolved (it does not exist) or on memory failure. A table opened on
** the built-in local backend takes its root this way, so that absolute paths in its log can be
** recognised as lying under it and nothing depends on the working directory later. */
char *dk_storage__local_realpath(const char *path, const dk_allocator *a);

/* Reads a whole local file (a configuration file, not table data) into *out, NUL-terminated,
** allocated with a. ENOENT is DK_NOT_FOUND. */
dk_status dk_storage__read_local_file(const dk_allocator *a, const char *path, char **out,
                                      size_t *len, dk_error *err);

#endif /* DK_STORAGE_LOCAL_H */
