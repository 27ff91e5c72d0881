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

#endif /* DK_STORAGE_LOCAL_H */
